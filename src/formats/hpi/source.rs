//! Where the reader gets an archive's bytes: [`Source`] answers "these bytes at this offset",
//! so the codec reads the header, the directory and one member's chunks by range and never
//! needs the whole archive in memory. The codec itself does no file I/O: the caller supplies
//! the source (bytes in memory here; a file read by `pread` in `view::archive`).

use super::HpiError;

/// Random access to an archive's bytes.
pub trait Source {
    /// Length of the archive in bytes.
    fn len(&self) -> u64;

    /// True for an empty archive.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Fills `buf` with the bytes starting at `offset`. The reader only asks for ranges
    /// inside `0..len()`.
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()>;
}

/// An archive held in memory.
#[derive(Debug, Clone, Copy)]
pub struct InMemory<'a>(pub &'a [u8]);

impl Source for InMemory<'_> {
    fn len(&self) -> u64 {
        self.0.len() as u64
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
        read_slice(self.0, offset, buf)
    }
}

impl Source for Vec<u8> {
    fn len(&self) -> u64 {
        self.as_slice().len() as u64
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
        read_slice(self, offset, buf)
    }
}

fn read_slice(data: &[u8], offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
    let src = usize::try_from(offset)
        .ok()
        .and_then(|o| data.get(o..)?.get(..buf.len()))
        .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::UnexpectedEof))?;
    buf.copy_from_slice(src);
    Ok(())
}

/// Reads `len` bytes at `offset` of `src`, refusing (before allocating) a range that reaches
/// past the end: the error names `structure` and the offset.
pub(super) fn fetch(
    src: &dyn Source,
    structure: &str,
    offset: u64,
    len: u64,
) -> Result<Vec<u8>, HpiError> {
    let total = src.len();
    if offset.checked_add(len).map_or(true, |end| end > total) {
        return Err(HpiError::Truncated {
            structure: structure.to_string(),
            offset,
            len,
            input_len: total,
        });
    }
    let n = usize::try_from(len).map_err(|_| HpiError::Truncated {
        structure: structure.to_string(),
        offset,
        len,
        input_len: total,
    })?;
    let mut buf = vec![0u8; n];
    src.read_at(offset, &mut buf).map_err(|e| HpiError::Io {
        structure: structure.to_string(),
        offset,
        message: e.to_string(),
    })?;
    Ok(buf)
}
