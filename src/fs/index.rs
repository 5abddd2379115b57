//! The persisted index: what listing an asset directory needs, kept in the state folder across
//! mounts so a remount of an unchanged game folder lists without decoding or rendering.
//!
//! One file per game folder (`STATE/index/<key of the folder>`) holds, for every asset whose
//! view was decoded, a [`Record`]: the binary's content identity (size and CRC-32 of its
//! bytes), a hash of the options that shape its view ([`options_hash`]: palette, textures,
//! asset path, limits, frame format) and the view's entries in view order (names, which are
//! folders, the sizes of the generated files rendered so far). Modes and times are not kept:
//! they follow from the binary's own `lstat` and the path, as for a decoded view.
//!
//! The file starts with a magic, the stamp of the program that wrote it ([`program_stamp`]:
//! its version, the format version and its executable's size and mtime) and the hash of the
//! game folder's path; it ends with a CRC-32 of everything before. A file of another program,
//! another folder, a bad checksum or anything malformed is ignored whole ([`decode`]); reads
//! are bounded ([`MAX_FILE_BYTES`]) and every count is checked against the bytes left before
//! anything is allocated for it.

use crate::formats::bytes::{Bytes, OutOfBounds};
use crate::view::ViewOptions;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Largest index file read (a larger one is ignored).
pub(in crate::fs) const MAX_FILE_BYTES: u64 = 64 << 20;

/// Start of every index file.
const MAGIC: &[u8; 8] = b"TAFSIDX\x01";

/// Changes whenever what a record means changes.
const FORMAT_VERSION: u32 = 1;

/// Longest path kept (a longer one is not indexed).
const MAX_PATH: usize = 4096;

/// Why an index file is ignored.
#[derive(Debug, thiserror::Error)]
pub(in crate::fs) enum IndexError {
    #[error("index: {0}")]
    Truncated(#[from] OutOfBounds),
    #[error("index at offset {offset:#x}: {what}")]
    Invalid { offset: u64, what: &'static str },
    #[error("index: {0}")]
    Io(#[from] std::io::Error),
}

fn invalid(offset: u64, what: &'static str) -> IndexError {
    IndexError::Invalid { offset, what }
}

/// What identifies the view of a binary: its content and the options shaping it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::fs) struct Key {
    /// Size of the binary.
    pub size: u64,
    /// CRC-32 of the binary's bytes.
    pub crc: u32,
    /// [`options_hash`] of its view options.
    pub options: u64,
}

/// One path of a view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::fs) struct Item {
    /// Path in the view, `/`-separated.
    pub path: String,
    /// A folder.
    pub dir: bool,
    /// Size of a file once rendered.
    pub size: Option<u64>,
}

/// What the index keeps of one asset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::fs) struct Record {
    pub key: Key,
    /// The view's entries in view order (a folder before what it holds).
    pub items: Vec<Item>,
}

/// The index of one game folder: records by path relative to it.
pub(in crate::fs) type Records = HashMap<String, Record>;

/// Where the index of game folder `game_abs` lives in state folder `state`.
pub(in crate::fs) fn path_in(state: &Path, game_abs: &Path) -> PathBuf {
    state.join("index").join(crate::fs::stage::key_of(game_abs))
}

/// A hash of `game_abs`, recorded so an index copied to another folder's name is ignored.
pub(in crate::fs) fn folder_hash(game_abs: &Path) -> u64 {
    fnv(FNV0, game_abs.as_os_str().as_encoded_bytes())
}

const FNV0: u64 = 0xcbf2_9ce4_8422_2325;

/// FNV-1a over `data` from state `h` (stable across runs and builds).
fn fnv(mut h: u64, data: &[u8]) -> u64 {
    for b in data {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The program that writes and trusts an index: its version, the format version, and the
/// size and mtime of its executable (another build of the program renders differently
/// perhaps: its index is not trusted).
pub(in crate::fs) fn program_stamp() -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut h = fnv(FNV0, env!("CARGO_PKG_VERSION").as_bytes());
    h = fnv(h, &FORMAT_VERSION.to_le_bytes());
    if let Some(m) = std::env::current_exe()
        .ok()
        .and_then(|p| std::fs::metadata(p).ok())
    {
        h = fnv(h, &m.len().to_le_bytes());
        h = fnv(h, &m.mtime().to_le_bytes());
        h = fnv(h, &m.mtime_nsec().to_le_bytes());
    }
    h
}

/// A hash of everything in `o` that decides a view's names and bytes.
pub(in crate::fs) fn options_hash(o: &ViewOptions) -> u64 {
    let mut h = FNV0;
    for c in &o.palette.colors {
        h = fnv(h, c);
    }
    h = fnv(h, o.palette_source.as_bytes());
    h = fnv(h, &[0xff]);
    h = fnv(h, o.asset_path.as_deref().unwrap_or("\0none").as_bytes());
    h = fnv(
        h,
        format!("{:?}{:?}{:?}", o.limits, o.frame_format, o.model_limits).as_bytes(),
    );
    if let Some(t) = &o.textures {
        h = fnv(h, &textures_hash(t).to_le_bytes());
    }
    h
}

/// The hash of a set of textures, remembered for the last few sets (kept alive by the memo,
/// so an address is never reused while remembered).
fn textures_hash(t: &std::sync::Arc<crate::view::model3d::Textures>) -> u64 {
    use crate::view::model3d::Textures;
    use std::sync::{Arc, Mutex};
    type Memo = Mutex<Vec<(Arc<Textures>, u64)>>;
    static MEMO: Memo = Mutex::new(Vec::new());
    let memo: &Memo = &MEMO;
    if let Some(h) = crate::fs::shared::lock(memo)
        .iter()
        .find(|(k, _)| Arc::ptr_eq(k, t))
        .map(|(_, h)| *h)
    {
        return h;
    }
    let h = t.content_hash();
    let mut m = crate::fs::shared::lock(memo);
    if m.len() >= 4 {
        m.remove(0);
    }
    m.push((t.clone(), h));
    h
}

/// The bytes of an index holding `records`.
pub(in crate::fs) fn encode(program: u64, folder: u64, records: &[(&str, &Record)]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&program.to_le_bytes());
    out.extend_from_slice(&folder.to_le_bytes());
    let n = records
        .iter()
        .filter(|(p, r)| p.len() <= MAX_PATH && r.items.iter().all(|i| i.path.len() <= MAX_PATH))
        .count();
    out.extend_from_slice(&(n as u32).to_le_bytes());
    let put_str = |out: &mut Vec<u8>, s: &str| {
        out.extend_from_slice(&(s.len() as u16).to_le_bytes());
        out.extend_from_slice(s.as_bytes());
    };
    for (path, r) in records {
        if path.len() > MAX_PATH || r.items.iter().any(|i| i.path.len() > MAX_PATH) {
            continue;
        }
        put_str(&mut out, path);
        out.extend_from_slice(&r.key.size.to_le_bytes());
        out.extend_from_slice(&r.key.crc.to_le_bytes());
        out.extend_from_slice(&r.key.options.to_le_bytes());
        out.extend_from_slice(&(r.items.len() as u32).to_le_bytes());
        for i in &r.items {
            match (i.dir, i.size) {
                (true, _) => out.push(0),
                (false, None) => out.push(1),
                (false, Some(s)) => {
                    out.push(2);
                    out.extend_from_slice(&s.to_le_bytes());
                }
            }
            put_str(&mut out, &i.path);
        }
    }
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// A sequential reader over [`Bytes`].
struct Reader<'a> {
    b: Bytes<'a>,
    pos: u64,
}

impl Reader<'_> {
    fn take(&mut self, n: u64) -> Result<&[u8], OutOfBounds> {
        let s = self.b.slice(self.pos, n)?;
        self.pos += n;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8, OutOfBounds> {
        let v = self.b.u8(self.pos)?;
        self.pos += 1;
        Ok(v)
    }
    fn u16(&mut self) -> Result<u16, OutOfBounds> {
        let v = self.b.u16(self.pos)?;
        self.pos += 2;
        Ok(v)
    }
    fn u32(&mut self) -> Result<u32, OutOfBounds> {
        let v = self.b.u32(self.pos)?;
        self.pos += 4;
        Ok(v)
    }
    fn u64(&mut self) -> Result<u64, OutOfBounds> {
        let v = u64::from_le_bytes(self.b.array(self.pos)?);
        self.pos += 8;
        Ok(v)
    }
    fn left(&self) -> u64 {
        (self.b.len() as u64).saturating_sub(self.pos)
    }
    /// A path: relative, `/`-separated, no empty, `.` or `..` component, no NUL.
    fn path(&mut self) -> Result<String, IndexError> {
        let at = self.pos;
        let n = self.u16()?;
        let s = std::str::from_utf8(self.take(u64::from(n))?)
            .map_err(|_| invalid(at, "path not UTF-8"))?;
        let bad = s.is_empty()
            || s.contains('\0')
            || s.split('/').any(|c| c.is_empty() || c == "." || c == "..");
        if bad {
            return Err(invalid(at, "not a relative path"));
        }
        Ok(s.to_string())
    }
}

/// The records of an index file's bytes, when written by `program` for folder `folder` and
/// intact (checksum), else why not.
pub(in crate::fs) fn decode(
    bytes: &[u8],
    program: u64,
    folder: u64,
) -> Result<Records, IndexError> {
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(invalid(0, "larger than an index may be"));
    }
    let body_len = bytes
        .len()
        .checked_sub(4)
        .ok_or_else(|| invalid(0, "shorter than its checksum"))?;
    let (body, tail) = bytes.split_at(body_len);
    if crc32fast::hash(body).to_le_bytes() != tail {
        return Err(invalid(body_len as u64, "checksum mismatch"));
    }
    let mut r = Reader {
        b: Bytes::new(body),
        pos: 0,
    };
    if r.take(8)? != MAGIC {
        return Err(invalid(0, "not a tafs index"));
    }
    if r.u64()? != program {
        return Err(invalid(8, "written by another program"));
    }
    if r.u64()? != folder {
        return Err(invalid(16, "of another game folder"));
    }
    let n = r.u32()?;
    // each record takes at least 2 + 8 + 4 + 8 + 4 bytes
    if u64::from(n) > r.left() / 26 {
        return Err(invalid(24, "more records than bytes"));
    }
    let mut out = Records::with_capacity(n as usize);
    for _ in 0..n {
        let path = r.path()?;
        let key = Key {
            size: r.u64()?,
            crc: r.u32()?,
            options: r.u64()?,
        };
        let at = r.pos;
        let k = r.u32()?;
        // each item takes at least 1 + 2 + 1 bytes
        if u64::from(k) > r.left() / 4 {
            return Err(invalid(at, "more items than bytes"));
        }
        let mut items = Vec::with_capacity(k as usize);
        for _ in 0..k {
            let at = r.pos;
            let (dir, size) = match r.u8()? {
                0 => (true, None),
                1 => (false, None),
                2 => (false, Some(r.u64()?)),
                _ => return Err(invalid(at, "unknown item kind")),
            };
            items.push(Item {
                path: r.path()?,
                dir,
                size,
            });
        }
        out.insert(path, Record { key, items });
    }
    if r.left() != 0 {
        return Err(invalid(r.pos, "bytes after the last record"));
    }
    Ok(out)
}

/// The records of the index file at `path` (none when it is missing or ignored; the log says
/// why it was ignored).
pub(in crate::fs) fn load(path: &Path, program: u64, folder: u64) -> Records {
    let read = || -> Result<Records, IndexError> {
        let f = std::fs::File::open(path)?;
        let bytes = crate::game::read_bounded(f, MAX_FILE_BYTES)
            .ok_or_else(|| invalid(0, "unreadable or larger than an index may be"))?;
        decode(&bytes, program, folder)
    };
    match read() {
        Ok(r) => {
            log::info!("{}: {} assets indexed", path.display(), r.len());
            r
        }
        Err(IndexError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => Records::new(),
        Err(e) => {
            log::warn!("{}: ignored ({e})", path.display());
            Records::new()
        }
    }
}

/// Writes the index file `path` atomically (a reader sees the old file or the new one).
pub(in crate::fs) fn save(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d)?;
    }
    crate::atomic::write_unsynced(path, bytes)
}

/// Writes `records` to the index file `path` unless they encode to what was written last
/// (`last`: the checksum of that); a failure is logged, the mount goes on without.
pub(in crate::fs) fn save_if_new(
    path: &Path,
    program: u64,
    folder: u64,
    records: &Records,
    last: &std::sync::Mutex<Option<u32>>,
) {
    let mut all: Vec<(&str, &Record)> = records.iter().map(|(p, r)| (p.as_str(), r)).collect();
    all.sort_by(|a, b| a.0.cmp(b.0));
    let bytes = encode(program, folder, &all);
    let crc = crc32fast::hash(&bytes);
    let mut last = crate::fs::shared::lock(last);
    if *last == Some(crc) {
        return;
    }
    match save(path, &bytes) {
        Ok(()) => {
            *last = Some(crc);
            log::info!("{}: {} assets indexed", path.display(), all.len());
        }
        Err(e) => log::warn!("{}: index not written: {e}", path.display()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Records {
        let mut r = Records::new();
        r.insert(
            "anims/x.gaf".into(),
            Record {
                key: Key {
                    size: 1234,
                    crc: 0xdead_beef,
                    options: 42,
                },
                items: vec![
                    Item {
                        path: "metadata.json".into(),
                        dir: false,
                        size: Some(99),
                    },
                    Item {
                        path: "seq".into(),
                        dir: true,
                        size: None,
                    },
                    Item {
                        path: "seq/0.png".into(),
                        dir: false,
                        size: None,
                    },
                ],
            },
        );
        r
    }

    fn bytes_of(r: &Records) -> Vec<u8> {
        let v: Vec<(&str, &Record)> = r.iter().map(|(p, r)| (p.as_str(), r)).collect();
        encode(7, 9, &v)
    }

    #[test]
    fn an_index_reads_back_as_written() {
        let r = sample();
        assert_eq!(decode(&bytes_of(&r), 7, 9).unwrap(), r);
    }

    #[test]
    fn a_foreign_truncated_or_edited_index_is_ignored() {
        let b = bytes_of(&sample());
        assert!(decode(&b, 8, 9).is_err(), "another program");
        assert!(decode(&b, 7, 10).is_err(), "another folder");
        for n in 0..b.len() {
            assert!(decode(&b[..n], 7, 9).is_err(), "truncated to {n}");
        }
        for i in 0..b.len() {
            let mut e = b.clone();
            e[i] ^= 0x10;
            assert!(decode(&e, 7, 9).is_err(), "byte {i} changed");
        }
    }

    #[test]
    fn counts_beyond_the_bytes_are_refused_before_allocating() {
        // a well-formed header, a checksum that matches, and a huge count
        let mut b = Vec::new();
        b.extend_from_slice(MAGIC);
        b.extend_from_slice(&7u64.to_le_bytes());
        b.extend_from_slice(&9u64.to_le_bytes());
        b.extend_from_slice(&u32::MAX.to_le_bytes());
        let crc = crc32fast::hash(&b);
        b.extend_from_slice(&crc.to_le_bytes());
        assert!(matches!(
            decode(&b, 7, 9),
            Err(IndexError::Invalid { offset: 24, .. })
        ));
    }

    #[test]
    fn paths_that_climb_or_are_absolute_are_refused() {
        for bad in ["../x", "/x", "a//b", "a/./b", "", "a\0b"] {
            let mut r = sample();
            r.get_mut("anims/x.gaf").unwrap().items[0].path = bad.into();
            assert!(decode(&bytes_of(&r), 7, 9).is_err(), "{bad:?}");
        }
    }
}
