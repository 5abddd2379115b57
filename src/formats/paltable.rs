//! Palette lookup tables: `.ALP` (blending), `.SHD` (shading) and `.LHT` (lighting).
//!
//! None has a header: every byte is a palette index. A table is rows of 256 entries, the
//! columns being the 256 source colours; `.ALP` has 256 rows (65,536 bytes; entry `[a][b]`
//! is the colour nearest the half-and-half blend of `a` and `b`), `.SHD` and `.LHT` 32 rows
//! (8,192 bytes; row = shade or light level). The game uses a table only when its size is
//! exact, so any other size is refused. Tables are stored as they are read, so writing one
//! back gives the same bytes.

use super::Limits;

/// Entries per row (one per source colour).
pub const COLUMNS: usize = 256;

/// Which lookup table a file is; decided by its extension, or by its size where that says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TableKind {
    /// `.ALP`: 256 × 256, the blend of two colours.
    Alpha,
    /// `.SHD`: 32 × 256, a colour at a shade level.
    Shade,
    /// `.LHT`: 32 × 256, a colour at a light level.
    Light,
}

impl TableKind {
    /// The kind of a file name's extension (`alp`, `shd`, `lht`, any letter case).
    pub fn from_name(name: &str) -> Option<TableKind> {
        let ext = name.rsplit_once('.')?.1.to_ascii_lowercase();
        TableKind::from_word(&ext)
    }

    /// The kind of a word: `alp`/`alpha`, `shd`/`shade`, `lht`/`light`.
    pub fn from_word(w: &str) -> Option<TableKind> {
        match w
            .trim()
            .trim_start_matches('.')
            .to_ascii_lowercase()
            .as_str()
        {
            "alp" | "alpha" => Some(TableKind::Alpha),
            "shd" | "shade" => Some(TableKind::Shade),
            "lht" | "light" => Some(TableKind::Light),
            _ => None,
        }
    }

    /// Rows of the table.
    pub fn rows(self) -> usize {
        match self {
            TableKind::Alpha => 256,
            TableKind::Shade | TableKind::Light => 32,
        }
    }

    /// Bytes of the file.
    pub fn bytes(self) -> usize {
        self.rows() * COLUMNS
    }

    /// The extension, lower case.
    pub fn ext(self) -> &'static str {
        match self {
            TableKind::Alpha => "alp",
            TableKind::Shade => "shd",
            TableKind::Light => "lht",
        }
    }

    /// What a row and an entry mean.
    pub fn meaning(self) -> &'static str {
        match self {
            TableKind::Alpha => {
                "row a, column b: the colour drawn for a blended half-and-half with b"
            }
            TableKind::Shade => "row = shade level, column c: colour c at that level",
            TableKind::Light => "row = light level, column c: colour c at that level",
        }
    }
}

/// A lookup table: `rows × 256` palette indices, row-major.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PalTable {
    /// 256 (`.ALP`) or 32 (`.SHD`, `.LHT`).
    pub rows: usize,
    /// The entries, row-major.
    pub cells: Vec<u8>,
}

impl PalTable {
    /// The entry at `row`, `col`, if inside the table.
    pub fn get(&self, row: usize, col: usize) -> Option<u8> {
        if col >= COLUMNS {
            return None;
        }
        self.cells
            .get(row.checked_mul(COLUMNS)?.checked_add(col)?)
            .copied()
    }
}

/// Why a table does not read or write.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PalTableError {
    /// The file's size is none a table of its kind has.
    #[error("lookup table: {len} bytes at offset 0, {}", expected_text(*.kind))]
    Size {
        /// The kind asked for (none: told by size).
        kind: Option<TableKind>,
        /// The file's size.
        len: usize,
    },
    /// A model whose entries are not `rows × 256`.
    #[error("lookup table: {cells} entries for {rows} rows of 256")]
    Shape {
        /// Rows.
        rows: usize,
        /// Entries.
        cells: usize,
    },
}

fn expected_text(kind: Option<TableKind>) -> String {
    match kind {
        Some(k) => format!(
            "a .{} table is exactly {} bytes ({} rows of 256)",
            k.ext(),
            k.bytes(),
            k.rows()
        ),
        None => "a table is exactly 65,536 bytes (.alp) or 8,192 bytes (.shd, .lht)".into(),
    }
}

/// Reads a table. With `kind` its size must be that kind's; without, 65,536 bytes read as
/// 256 rows and 8,192 as 32. The sizes are fixed, so nothing is allocated beyond the
/// input's 64 KiB at most; `limits` is taken for the uniform reader signature.
pub fn parse(
    data: &[u8],
    kind: Option<TableKind>,
    _limits: &Limits,
) -> Result<PalTable, PalTableError> {
    let rows = match kind {
        Some(k) if data.len() == k.bytes() => k.rows(),
        None if data.len() == TableKind::Alpha.bytes() => 256,
        None if data.len() == TableKind::Shade.bytes() => 32,
        _ => {
            return Err(PalTableError::Size {
                kind,
                len: data.len(),
            })
        }
    };
    Ok(PalTable {
        rows,
        cells: data.to_vec(),
    })
}

/// The bytes of `t`.
pub fn write(t: &PalTable) -> Result<Vec<u8>, PalTableError> {
    if !(t.rows == 256 || t.rows == 32) || t.cells.len() != t.rows * COLUMNS {
        return Err(PalTableError::Shape {
            rows: t.rows,
            cells: t.cells.len(),
        });
    }
    Ok(t.cells.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_decide_and_kinds_check() {
        let lim = Limits::default();
        let alp: Vec<u8> = (0..65536u32).map(|i| (i % 251) as u8).collect();
        let t = parse(&alp, None, &lim).unwrap();
        assert_eq!((t.rows, t.get(1, 0)), (256, Some(5)));
        assert_eq!(write(&t).unwrap(), alp);
        assert_eq!(parse(&alp, Some(TableKind::Alpha), &lim).unwrap(), t);
        let e = parse(&alp, Some(TableKind::Shade), &lim).unwrap_err();
        assert!(e.to_string().contains("8192 bytes"), "{e}");
        let shd = vec![7u8; 8192];
        assert_eq!(parse(&shd, None, &lim).unwrap().rows, 32);
        assert_eq!(parse(&shd, Some(TableKind::Light), &lim).unwrap().rows, 32);
        for len in [0usize, 1, 8191, 8193, 65535, 65537] {
            let e = parse(&vec![0u8; len], None, &lim).unwrap_err();
            assert_eq!(e, PalTableError::Size { kind: None, len });
        }
        assert!(t.get(256, 0).is_none() && t.get(0, 256).is_none());
        assert!(t.get(usize::MAX, 1).is_none());
        let bad = PalTable {
            rows: 32,
            cells: vec![0; 100],
        };
        assert!(write(&bad).is_err());
    }

    #[test]
    fn kinds_by_name() {
        assert_eq!(TableKind::from_name("PALETTE.ALP"), Some(TableKind::Alpha));
        assert_eq!(TableKind::from_name("x.shd"), Some(TableKind::Shade));
        assert_eq!(TableKind::from_name("a.b.Lht"), Some(TableKind::Light));
        assert_eq!(TableKind::from_name("palette.pal"), None);
        assert_eq!(TableKind::from_name("alp"), None);
        assert_eq!(TableKind::from_word("light"), Some(TableKind::Light));
    }
}
