//! SQSH chunks: a 19-byte header (`SQSH`, version 2, method, encrypt flag, compressed and
//! decompressed sizes, checksum of the payload as stored) and the payload.

use super::{lz77, HpiError, HpiLimits, Method};
use flate2::read::ZlibDecoder;
use flate2::write::ZlibEncoder;
use std::io::{Read, Write};

/// `SQSH` as a little-endian u32.
pub const MARKER: u32 = 0x4853_5153;
/// Header length.
pub const HEADER_LEN: usize = 19;
/// The version byte every known chunk has.
pub const CHUNK_VERSION: u8 = 2;

/// A chunk header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkHeader {
    /// Byte 4 (always 2 in known files).
    pub version: u8,
    /// Byte 5.
    pub method: Method,
    /// Byte 6: non-zero = inner transform applied to the payload.
    pub encrypt: u8,
    /// Payload length.
    pub compressed: u32,
    /// Decoded length.
    pub decompressed: u32,
    /// Σ payload bytes as stored, mod 2³².
    pub checksum: u32,
}

/// True when `b` starts with the SQSH marker.
pub fn is_sqsh(b: &[u8]) -> bool {
    b.len() >= 4 && b[..4] == MARKER.to_le_bytes()
}

fn le32(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(a)
}

/// Reads the header of the chunk at the start of `chunk` (`at` = its absolute offset, for
/// messages).
pub fn header(chunk: &[u8], at: u64, what: &str) -> Result<ChunkHeader, HpiError> {
    if chunk.len() < HEADER_LEN {
        return Err(HpiError::Truncated {
            structure: format!("{what} SQSH header"),
            offset: at,
            len: HEADER_LEN as u64,
            input_len: chunk.len() as u64,
        });
    }
    if !is_sqsh(chunk) {
        return Err(HpiError::malformed(what, at, "no SQSH marker"));
    }
    let method = Method::from_code(chunk[5]).ok_or_else(|| {
        HpiError::malformed(
            format!("{what} SQSH header"),
            at + 5,
            format!("unknown method {}", chunk[5]),
        )
    })?;
    Ok(ChunkHeader {
        version: chunk[4],
        method,
        encrypt: chunk[6],
        compressed: le32(chunk, 7),
        decompressed: le32(chunk, 11),
        checksum: le32(chunk, 15),
    })
}

/// Σ bytes mod 2³².
pub fn checksum(payload: &[u8]) -> u32 {
    payload
        .iter()
        .fold(0u32, |s, &b| s.wrapping_add(u32::from(b)))
}

/// Decodes one chunk (outer cipher already removed). `chunk` may extend past the payload
/// (only `compressed` bytes after the header are used). `expected` is the size the caller
/// requires, if it knows one. Verifies the checksum, the ratio budget and the exact size.
pub fn decode(
    chunk: &[u8],
    at: u64,
    what: &str,
    expected: Option<u32>,
    limits: &HpiLimits,
) -> Result<Vec<u8>, HpiError> {
    let h = header(chunk, at, what)?;
    let payload_at = at + HEADER_LEN as u64;
    let payload = chunk
        .get(HEADER_LEN..HEADER_LEN + h.compressed as usize)
        .ok_or_else(|| HpiError::Truncated {
            structure: format!("{what} payload"),
            offset: payload_at,
            len: u64::from(h.compressed),
            input_len: chunk.len().saturating_sub(HEADER_LEN) as u64,
        })?;
    if let Some(e) = expected {
        if e != h.decompressed {
            return Err(HpiError::malformed(
                format!("{what} SQSH header"),
                at + 11,
                format!("decompressed size {} but {} expected", h.decompressed, e),
            ));
        }
    }
    let size = u64::from(h.decompressed);
    if size > limits.max_member_size {
        return Err(HpiError::limit(
            what,
            at,
            format!(
                "chunk of {size} bytes (max_member_size {})",
                limits.max_member_size
            ),
        ));
    }
    if size
        > u64::from(h.compressed)
            .max(1)
            .saturating_mul(limits.max_ratio)
    {
        return Err(HpiError::limit(
            what,
            at,
            format!(
                "{size} bytes from a {}-byte payload (max_ratio {})",
                h.compressed, limits.max_ratio
            ),
        ));
    }
    let sum = checksum(payload);
    if sum != h.checksum {
        return Err(HpiError::Checksum {
            structure: format!("{what} SQSH chunk"),
            offset: at,
            expected: h.checksum,
            found: sum,
        });
    }
    let mut plain = payload.to_vec();
    if h.encrypt != 0 {
        inner_decode(&mut plain);
    }
    let bad = |m: String| HpiError::malformed(format!("{what} payload"), payload_at, m);
    let out = match h.method {
        Method::None => plain,
        Method::Lz77 => {
            lz77::decode(&plain, size as usize)
                .map_err(|e| bad(e.to_string()))?
                .0
        }
        Method::Zlib => {
            let mut out = Vec::with_capacity(size as usize);
            ZlibDecoder::new(plain.as_slice())
                .take(size + 1)
                .read_to_end(&mut out)
                .map_err(|e| bad(format!("zlib: {e}")))?;
            out
        }
    };
    if out.len() as u64 != size {
        return Err(bad(format!(
            "decodes to {} bytes, header says {size}",
            out.len()
        )));
    }
    Ok(out)
}

/// Removes the inner transform: `plain = ((stored − i) mod 256) XOR (i mod 256)`.
pub fn inner_decode(b: &mut [u8]) {
    for (i, x) in b.iter_mut().enumerate() {
        let i = i as u8;
        *x = x.wrapping_sub(i) ^ i;
    }
}

/// Applies the inner transform: `stored = ((plain XOR i) + i) mod 256`.
pub fn inner_encode(b: &mut [u8]) {
    for (i, x) in b.iter_mut().enumerate() {
        let i = i as u8;
        *x = (*x ^ i).wrapping_add(i);
    }
}

/// Compresses `data` into one chunk (header and payload).
pub fn encode(data: &[u8], method: Method, encrypt: bool) -> Result<Vec<u8>, HpiError> {
    let too_big = || {
        HpiError::unwritable(
            "SQSH chunk",
            format!("{} bytes do not fit a chunk", data.len()),
        )
    };
    let decompressed = u32::try_from(data.len()).map_err(|_| too_big())?;
    let mut payload = match method {
        Method::None => data.to_vec(),
        Method::Lz77 => lz77::encode(data),
        Method::Zlib => {
            let mut z = ZlibEncoder::new(Vec::new(), flate2::Compression::default());
            z.write_all(data)
                .and_then(|_| z.finish())
                .map_err(|e| HpiError::unwritable("SQSH chunk", format!("zlib: {e}")))?
        }
    };
    if encrypt {
        inner_encode(&mut payload);
    }
    let compressed = u32::try_from(payload.len()).map_err(|_| too_big())?;
    let mut out = Vec::with_capacity(HEADER_LEN + payload.len());
    out.extend_from_slice(&MARKER.to_le_bytes());
    out.push(CHUNK_VERSION);
    out.push(method.code());
    out.push(u8::from(encrypt));
    out.extend_from_slice(&compressed.to_le_bytes());
    out.extend_from_slice(&decompressed.to_le_bytes());
    out.extend_from_slice(&checksum(&payload).to_le_bytes());
    out.extend_from_slice(&payload);
    Ok(out)
}
