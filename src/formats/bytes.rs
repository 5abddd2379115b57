//! A bounds-checked little-endian reader shared by every codec.

use std::fmt;

/// Reading `len` bytes at `offset` would pass the end of the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutOfBounds {
    /// Where the read started.
    pub offset: u64,
    /// How many bytes were wanted.
    pub len: u64,
    /// Length of the whole input.
    pub input_len: u64,
}

impl fmt::Display for OutOfBounds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} bytes at offset {:#x} pass the end of the {}-byte file",
            self.len, self.offset, self.input_len
        )
    }
}

impl std::error::Error for OutOfBounds {}

/// Random-access view of an input: every read names its absolute offset and is checked.
#[derive(Debug, Clone, Copy)]
pub struct Bytes<'a> {
    data: &'a [u8],
}

impl<'a> Bytes<'a> {
    /// Wraps a byte slice.
    pub fn new(data: &'a [u8]) -> Self {
        Bytes { data }
    }

    /// Length of the input.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// True when the input is empty.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// The whole input.
    pub fn data(&self) -> &'a [u8] {
        self.data
    }

    /// `len` bytes starting at `offset`.
    pub fn slice(&self, offset: u64, len: u64) -> Result<&'a [u8], OutOfBounds> {
        let oob = OutOfBounds {
            offset,
            len,
            input_len: self.data.len() as u64,
        };
        let start = usize::try_from(offset).map_err(|_| oob)?;
        let n = usize::try_from(len).map_err(|_| oob)?;
        let end = start.checked_add(n).ok_or(oob)?;
        self.data.get(start..end).ok_or(oob)
    }

    /// Fixed-size array at `offset`.
    pub fn array<const N: usize>(&self, offset: u64) -> Result<[u8; N], OutOfBounds> {
        let s = self.slice(offset, N as u64)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    /// Byte at `offset`.
    pub fn u8(&self, offset: u64) -> Result<u8, OutOfBounds> {
        Ok(self.array::<1>(offset)?[0])
    }

    /// Little-endian u16 at `offset`.
    pub fn u16(&self, offset: u64) -> Result<u16, OutOfBounds> {
        Ok(u16::from_le_bytes(self.array(offset)?))
    }

    /// Little-endian i16 at `offset`.
    pub fn i16(&self, offset: u64) -> Result<i16, OutOfBounds> {
        Ok(i16::from_le_bytes(self.array(offset)?))
    }

    /// Little-endian u32 at `offset`.
    pub fn u32(&self, offset: u64) -> Result<u32, OutOfBounds> {
        Ok(u32::from_le_bytes(self.array(offset)?))
    }
}

/// Little-endian writer helpers over a growing buffer.
pub trait PutLe {
    /// Appends a u16.
    fn put_u16(&mut self, v: u16);
    /// Appends an i16.
    fn put_i16(&mut self, v: i16);
    /// Appends a u32.
    fn put_u32(&mut self, v: u32);
}

impl PutLe for Vec<u8> {
    fn put_u16(&mut self, v: u16) {
        self.extend_from_slice(&v.to_le_bytes());
    }
    fn put_i16(&mut self, v: i16) {
        self.extend_from_slice(&v.to_le_bytes());
    }
    fn put_u32(&mut self, v: u32) {
        self.extend_from_slice(&v.to_le_bytes());
    }
}

/// A zeroed buffer of `len` bytes for a writer to fill. One of 4 MiB or more is asked to be
/// backed by transparent huge pages (`MADV_HUGEPAGE`, where the kernel leaves that to the
/// program): a big fresh allocation is untouched memory, and writing a 16 MB binary into it
/// took one page fault per 4 KiB page, 4,096 faults costing ~12 ms on a virtual machine,
/// against a few for 2 MiB pages. Only a hint: where it is refused the buffer is the same.
pub fn zeroed(len: usize) -> Vec<u8> {
    const HUGE: usize = 2 << 20;
    let v = vec![0u8; len];
    if len >= 2 * HUGE {
        let start = v.as_ptr() as usize;
        let first = start.next_multiple_of(HUGE);
        let end = (start + len) & !(HUGE - 1);
        if end > first {
            // SAFETY: [first, end) lies within the buffer's allocation (whole 2 MiB pages
            // inside it); MADV_HUGEPAGE changes how its pages are backed, never their
            // contents (zero, as allocated), and a refusal is ignored.
            unsafe {
                libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_HUGEPAGE);
            }
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_are_checked() {
        let b = Bytes::new(&[1, 2, 3, 4, 5]);
        assert_eq!(b.u32(0).unwrap(), 0x0403_0201);
        assert_eq!(b.u16(3).unwrap(), 0x0504);
        assert!(b.u32(2).is_err());
        assert!(b.slice(u64::MAX, 2).is_err());
        assert!(b.slice(1, u64::MAX).is_err());
        assert_eq!(b.slice(5, 0).unwrap(), &[] as &[u8]);
        assert!(b.slice(6, 0).is_err());
    }

    #[test]
    fn zeroed_buffers_are_zero_and_of_their_length() {
        for len in [0, 1, 4095, (4 << 20) + 3, 9 << 20] {
            let v = zeroed(len);
            assert_eq!(v.len(), len);
            assert!(v.iter().all(|&b| b == 0));
        }
    }
}
