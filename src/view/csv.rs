//! Small pieces the views' CSV and JSON files share: the CSV error of a cell, and the hex
//! form of raw bytes kept in metadata.json.

use super::ViewError;

/// A [`ViewError::Csv`] at `row` (1-based line), `column` of `file`.
pub fn csv_err(
    file: &str,
    row: u64,
    column: impl Into<String>,
    msg: impl Into<String>,
) -> ViewError {
    ViewError::Csv {
        file: file.to_string(),
        row,
        column: column.into(),
        msg: msg.into(),
    }
}

/// Lower-case hex of `b`.
pub fn hex(b: &[u8]) -> String {
    // (encode_to_slice: table lookups, not a char iterator collected into a String; the
    // output is exactly twice the input, so it cannot fail, and the digits are ASCII)
    let mut out = vec![0u8; b.len() * 2];
    let _ = hex::encode_to_slice(b, &mut out);
    String::from_utf8(out).unwrap_or_default()
}

/// The bytes of a hex string (either letter case); `None` if it is not an even number of
/// hex digits.
pub fn unhex(s: &str) -> Option<Vec<u8>> {
    hex::decode(s).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trip() {
        let b = [0u8, 1, 0xAB, 0xFF];
        assert_eq!(hex(&b), "0001abff");
        assert_eq!(unhex("0001abff").unwrap(), b);
        assert_eq!(unhex("0001ABFF").unwrap(), b);
        assert!(unhex("0g").is_none());
        assert!(unhex("abc").is_none());
        assert!(unhex("+f").is_none());
    }
}
