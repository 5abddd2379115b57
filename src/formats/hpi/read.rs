//! The checked archive reader: header, directory, member decoding, each reading only the
//! ranges it needs from a [`Source`].

use super::source::fetch;
use super::*;
use crate::formats::bytes::Bytes;
use std::collections::HashSet;
use std::io::Write;

fn trunc(structure: &str, offset: u64, len: u64, input_len: usize) -> HpiError {
    HpiError::Truncated {
        structure: structure.to_string(),
        offset,
        len,
        input_len: input_len as u64,
    }
}

fn u32_at(b: &Bytes<'_>, structure: &str, offset: u64) -> Result<u32, HpiError> {
    b.u32(offset)
        .map_err(|e| trunc(structure, e.offset, e.len, b.len()))
}

/// Reads an archive's header and directory. Members are not decompressed.
pub fn parse(data: &[u8], limits: &HpiLimits) -> Result<Archive, HpiError> {
    parse_from(&InMemory(data), limits)
}

/// Reads an archive's header and directory from `src`, reading only them: the header, the
/// directory (v1: deciphered), each member's chunk size table (v1) or first chunk header
/// (v2), and the trailer. Members are not decompressed.
pub fn parse_from(src: &dyn Source, limits: &HpiLimits) -> Result<Archive, HpiError> {
    let head = fetch(src, "header", 0, src.len().min(u64::from(V2_HEADER_LEN)))?;
    let b = Bytes::new(&head);
    let marker = u32_at(&b, "header", 0)?;
    if marker != MAGIC {
        return Err(HpiError::NotHpi { marker });
    }
    match u32_at(&b, "header", 4)? {
        VERSION_1 => parse_v1(src, &head, limits),
        VERSION_2 => parse_v2(src, &head, limits),
        VERSION_BANK => Err(HpiError::Bank),
        version => Err(HpiError::UnknownVersion { version }),
    }
}

/// A NUL-terminated name at `at` in `buf`, checked.
fn name_at(buf: &[u8], at: u64, structure: &str, limits: &HpiLimits) -> Result<Vec<u8>, HpiError> {
    let start = usize::try_from(at).unwrap_or(usize::MAX);
    let rest = buf
        .get(start..)
        .filter(|r| !r.is_empty())
        .ok_or_else(|| trunc(structure, at, 1, buf.len()))?;
    let end = rest
        .iter()
        .take(limits.max_name_len.saturating_add(1))
        .position(|&c| c == 0)
        .ok_or_else(|| {
            if rest.len() > limits.max_name_len {
                HpiError::limit(
                    structure,
                    at,
                    format!("name longer than {} bytes", limits.max_name_len),
                )
            } else {
                HpiError::malformed(structure, at, "name has no terminating NUL")
            }
        })?;
    let name = rest[..end].to_vec();
    if name.is_empty()
        || name == b"."
        || name == b".."
        || name.iter().any(|&c| c == b'/' || c == b'\\')
    {
        return Err(HpiError::malformed(
            structure,
            at,
            format!("unsafe name {:?}", String::from_utf8_lossy(&name)),
        ));
    }
    Ok(name)
}

struct Frame {
    count: u64,
    list: u64,
    next: u64,
    parent: Option<usize>,
}

fn parse_v1(src: &dyn Source, head: &[u8], limits: &HpiLimits) -> Result<Archive, HpiError> {
    let b = Bytes::new(head);
    let dir_end = u64::from(u32_at(&b, "v1 header", 8)?);
    let key = u32_at(&b, "v1 header", 12)?;
    let start = u64::from(u32_at(&b, "v1 header", 16)?);
    if dir_end < u64::from(V1_HEADER_LEN) || dir_end > src.len() {
        return Err(HpiError::malformed(
            "v1 header",
            8,
            format!(
                "directory end {dir_end:#x} outside the {}-byte file",
                src.len()
            ),
        ));
    }
    let okey = outer_key(key);
    // The deciphered directory, indexed by absolute offset.
    let mut dir = fetch(src, "v1 directory", 0, dir_end)?;
    outer_xor(
        &mut dir[V1_HEADER_LEN as usize..],
        u64::from(V1_HEADER_LEN),
        okey,
    );
    let db = Bytes::new(&dir);
    let du32 = |structure: &str, at: u64| u32_at(&db, structure, at);

    let mut entries: Vec<Entry> = Vec::new();
    let mut seen = HashSet::new();
    let mut stack: Vec<Frame> = Vec::new();
    let open =
        |node: u64, parent: Option<usize>, seen: &mut HashSet<u64>| -> Result<Frame, HpiError> {
            if node < u64::from(V1_HEADER_LEN) || !seen.insert(node) {
                return Err(HpiError::malformed(
                    "v1 directory node",
                    node,
                    "directory loop or shared folder",
                ));
            }
            let count = u64::from(du32("v1 directory node", node)?);
            let list = u64::from(du32("v1 directory node", node + 4)?);
            if count > limits.max_entries as u64 {
                return Err(HpiError::limit(
                    "v1 directory node",
                    node,
                    format!("{count} entries (max_entries {})", limits.max_entries),
                ));
            }
            db.slice(list, count * 9)
                .map_err(|e| trunc("v1 entry list", e.offset, e.len, dir.len()))?;
            Ok(Frame {
                count,
                list,
                next: 0,
                parent,
            })
        };
    stack.push(open(start, None, &mut seen)?);
    let mut data_end = dir_end;
    // Furthest directory byte any structure reaches; what follows up to dir_end is padding.
    let mut reach = start + 8;
    while let Some(top) = stack.last_mut() {
        if top.next == top.count {
            stack.pop();
            continue;
        }
        let at = top.list + top.next * 9;
        top.next += 1;
        reach = reach.max(at + 9);
        let parent = top.parent;
        let name_off = u64::from(du32("v1 entry", at)?);
        let target = u64::from(du32("v1 entry", at + 4)?);
        let flag = db
            .u8(at + 8)
            .map_err(|e| trunc("v1 entry", e.offset, 1, dir.len()))?;
        let name = name_at(&dir, name_off, "v1 entry name", limits)?;
        reach = reach.max(name_off + name.len() as u64 + 1);
        if entries.len() >= limits.max_entries {
            return Err(HpiError::limit(
                "v1 entry",
                at,
                format!("more than {} entries", limits.max_entries),
            ));
        }
        let depth = stack.len() - 1;
        let kind = match flag {
            1 => {
                if stack.len() >= limits.max_depth {
                    return Err(HpiError::limit(
                        "v1 entry",
                        at,
                        format!("folders nested deeper than {}", limits.max_depth),
                    ));
                }
                EntryKind::Dir
            }
            0 => {
                let offset = du32("v1 file record", target)?;
                reach = reach.max(target + 9);
                let size = du32("v1 file record", target + 4)?;
                let flag = db
                    .u8(target + 8)
                    .map_err(|e| trunc("v1 file record", e.offset, 1, dir.len()))?;
                let method = Method::from_code(flag).ok_or_else(|| {
                    HpiError::malformed(
                        "v1 file record",
                        target + 8,
                        format!("unknown compression {flag}"),
                    )
                })?;
                let stored_len = v1_stored_len(src, okey, offset, size, method)?;
                data_end = data_end.max(u64::from(offset) + stored_len);
                EntryKind::File(FileInfo {
                    offset,
                    size,
                    stored_len,
                    method,
                    chunked: method != Method::None,
                    date: 0,
                    checksum: 0,
                })
            }
            f => {
                return Err(HpiError::malformed(
                    "v1 entry",
                    at + 8,
                    format!("unknown flag {f}"),
                ))
            }
        };
        let is_dir = kind == EntryKind::Dir;
        entries.push(Entry {
            name,
            parent,
            depth,
            kind,
        });
        if is_dir {
            let idx = entries.len() - 1;
            let frame = open(target, Some(idx), &mut seen)?;
            reach = reach.max(target + 8);
            stack.push(frame);
        }
    }
    let trailer = fetch(src, "trailer", data_end, src.len().saturating_sub(data_end))?;
    Ok(Archive {
        version: Version::V1,
        key,
        entries,
        trailer,
        dir_padding: dir.get(reach as usize..).unwrap_or_default().to_vec(),
        last78: 0,
        blocks: Vec::new(),
    })
}

/// Number of chunks of a v1 member.
fn chunk_count(size: u32) -> u64 {
    u64::from(size).div_ceil(u64::from(CHUNK_SIZE))
}

/// Reads (and deciphers) a v1 member's chunk size table.
fn v1_table(
    src: &dyn Source,
    okey: Option<u8>,
    offset: u32,
    size: u32,
) -> Result<Vec<u32>, HpiError> {
    let n = chunk_count(size);
    let at = u64::from(offset);
    let mut t = fetch(src, "v1 chunk size table", at, n * 4)?;
    outer_xor(&mut t, at, okey);
    Ok(t.chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

fn v1_stored_len(
    src: &dyn Source,
    okey: Option<u8>,
    offset: u32,
    size: u32,
    method: Method,
) -> Result<u64, HpiError> {
    let len = match method {
        Method::None => u64::from(size),
        _ => {
            let t = v1_table(src, okey, offset, size)?;
            t.iter().map(|&c| u64::from(c)).sum::<u64>() + 4 * t.len() as u64
        }
    };
    let end = u64::from(offset) + len;
    if end > src.len() {
        return Err(HpiError::Truncated {
            structure: "v1 member data".into(),
            offset: u64::from(offset),
            len,
            input_len: src.len(),
        });
    }
    Ok(len)
}

/// The stored range of a member.
pub(super) fn member_bytes(src: &dyn Source, f: &FileInfo) -> Result<Vec<u8>, HpiError> {
    fetch(src, "member data", u64::from(f.offset), f.stored_len)
}

/// The member's stored range lies in `src` and its size is within the limits.
fn check_member(src: &dyn Source, f: &FileInfo, limits: &HpiLimits) -> Result<(), HpiError> {
    let at = u64::from(f.offset);
    if at + f.stored_len > src.len() {
        return Err(HpiError::Truncated {
            structure: "member data".into(),
            offset: at,
            len: f.stored_len,
            input_len: src.len(),
        });
    }
    if u64::from(f.size) > limits.max_member_size {
        return Err(HpiError::limit(
            "member",
            at,
            format!(
                "{} bytes (max_member_size {})",
                f.size, limits.max_member_size
            ),
        ));
    }
    if u64::from(f.size) > f.stored_len.max(1).saturating_mul(limits.max_ratio) {
        return Err(HpiError::limit(
            "member",
            at,
            format!(
                "{} bytes from {} stored (max_ratio {})",
                f.size, f.stored_len, limits.max_ratio
            ),
        ));
    }
    Ok(())
}

/// `stored` (a member's stored bytes) placed at the member's offset, as a [`Source`].
struct Placed<'a> {
    base: u64,
    stored: &'a [u8],
}

impl Source for Placed<'_> {
    fn len(&self) -> u64 {
        self.base + self.stored.len() as u64
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
        let rel = offset
            .checked_sub(self.base)
            .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::UnexpectedEof))?;
        InMemory(self.stored).read_at(rel, buf)
    }
}

pub(super) fn decode_member(
    a: &Archive,
    stored: &[u8],
    f: &FileInfo,
    limits: &HpiLimits,
) -> Result<Vec<u8>, HpiError> {
    let at = u64::from(f.offset);
    if stored.len() as u64 != f.stored_len {
        return Err(trunc("member data", at, f.stored_len, stored.len()));
    }
    read_member(a, &Placed { base: at, stored }, f, limits)
}

/// Decompresses member `f` into memory (its size is checked against the limits first).
pub(super) fn read_member(
    a: &Archive,
    src: &dyn Source,
    f: &FileInfo,
    limits: &HpiLimits,
) -> Result<Vec<u8>, HpiError> {
    check_member(src, f, limits)?;
    let mut out = Vec::with_capacity(f.size as usize);
    read_member_to(a, src, f, limits, &mut out)?;
    Ok(out)
}

fn emit(out: &mut dyn Write, bytes: &[u8], at: u64) -> Result<(), HpiError> {
    out.write_all(bytes).map_err(|e| HpiError::Io {
        structure: "member output".into(),
        offset: at,
        message: e.to_string(),
    })
}

/// Decompresses member `f`, reading from `src` only its own bytes, one chunk at a time:
/// each chunk's checksum, method and size are verified before its bytes go to `out`. A
/// version 2 member (one chunk) is verified whole before anything is written. Returns the
/// bytes written (the member's size).
pub(super) fn read_member_to(
    a: &Archive,
    src: &dyn Source,
    f: &FileInfo,
    limits: &HpiLimits,
    out: &mut dyn Write,
) -> Result<u64, HpiError> {
    check_member(src, f, limits)?;
    let at = u64::from(f.offset);
    match a.version {
        Version::V1 => {
            let okey = outer_key(a.key);
            let end = at + f.stored_len;
            if !f.chunked {
                let mut pos = at;
                while pos < end {
                    let n = (end - pos).min(u64::from(CHUNK_SIZE));
                    let mut b = fetch(src, "member data", pos, n)?;
                    outer_xor(&mut b, pos, okey);
                    emit(out, &b, pos)?;
                    pos += n;
                }
                return Ok(f.stored_len);
            }
            let n = chunk_count(f.size);
            if f.stored_len < 4 * n {
                return Err(HpiError::Truncated {
                    structure: "v1 chunk size table".into(),
                    offset: at,
                    len: 4 * n,
                    input_len: f.stored_len,
                });
            }
            let table = v1_table(src, okey, f.offset, f.size)?;
            let mut rest = f.stored_len - 4 * n;
            for (i, &len) in table.iter().enumerate() {
                let len = u64::from(len);
                if len < sqsh::HEADER_LEN as u64 || len > rest {
                    return Err(HpiError::malformed(
                        "v1 chunk size table",
                        at + 4 * i as u64,
                        format!("chunk length {len}"),
                    ));
                }
                rest -= len;
            }
            let mut pos = at + 4 * n;
            let mut done = 0u64;
            for (i, &len) in table.iter().enumerate() {
                let want = (u64::from(f.size) - done).min(u64::from(CHUNK_SIZE)) as u32;
                let mut c = fetch(src, "member data", pos, u64::from(len))?;
                outer_xor(&mut c, pos, okey);
                let part =
                    sqsh::decode(&c, pos, &format!("chunk {i} of member"), Some(want), limits)?;
                let h = sqsh::header(&c, pos, "chunk")?;
                if h.method != f.method {
                    return Err(HpiError::malformed(
                        "SQSH header",
                        pos + 5,
                        format!(
                            "chunk method {} but the file record says {}",
                            h.method.name(),
                            f.method.name()
                        ),
                    ));
                }
                emit(out, &part, pos)?;
                done += part.len() as u64;
                pos += u64::from(len);
            }
            Ok(done)
        }
        Version::V2 => {
            let stored = member_bytes(src, f)?;
            let plain = if stored.is_empty() {
                Vec::new()
            } else if f.chunked {
                sqsh::decode(&stored, at, "member", Some(f.size), limits)?
            } else {
                stored
            };
            let sum = v2_checksum(&plain);
            if sum != f.checksum {
                return Err(HpiError::Checksum {
                    structure: "v2 member".into(),
                    offset: at,
                    expected: f.checksum,
                    found: sum,
                });
            }
            emit(out, &plain, at)?;
            Ok(plain.len() as u64)
        }
    }
}

pub(super) fn stored_member(
    a: &Archive,
    stored: &[u8],
    f: &FileInfo,
) -> Result<StoredMember, HpiError> {
    let at = u64::from(f.offset);
    if stored.len() as u64 != f.stored_len {
        return Err(trunc("member data", at, f.stored_len, stored.len()));
    }
    let mut plain = stored.to_vec();
    let chunks = match a.version {
        Version::V1 => {
            outer_xor(&mut plain, at, outer_key(a.key));
            if !f.chunked {
                vec![plain]
            } else {
                let n = chunk_count(f.size) as usize;
                if plain.len() < 4 * n {
                    return Err(trunc("v1 chunk size table", at, 4 * n as u64, plain.len()));
                }
                let (table, mut rest) = plain.split_at(4 * n);
                let mut chunks = Vec::with_capacity(n);
                for (i, c) in table.chunks_exact(4).enumerate() {
                    let len = u32::from_le_bytes([c[0], c[1], c[2], c[3]]) as usize;
                    if len < sqsh::HEADER_LEN || len > rest.len() {
                        return Err(HpiError::malformed(
                            "v1 chunk size table",
                            at + 4 * i as u64,
                            format!("chunk length {len}"),
                        ));
                    }
                    let (c, r) = rest.split_at(len);
                    chunks.push(c.to_vec());
                    rest = r;
                }
                chunks
            }
        }
        Version::V2 => {
            if plain.is_empty() {
                Vec::new()
            } else {
                vec![plain]
            }
        }
    };
    Ok(StoredMember {
        version: a.version,
        method: f.method,
        chunked: f.chunked,
        size: f.size,
        chunks,
        date: f.date,
        checksum: f.checksum,
    })
}

/// Reads a v2 directory or name block (an SQSH chunk or raw bytes).
fn v2_block(
    src: &dyn Source,
    off: u32,
    size: u32,
    what: &str,
    limits: &HpiLimits,
) -> Result<KeptBlock, HpiError> {
    let stored = fetch(src, what, u64::from(off), u64::from(size))?;
    let plain = if sqsh::is_sqsh(&stored) {
        let h = sqsh::header(&stored, u64::from(off), what)?;
        if u64::from(h.compressed) + sqsh::HEADER_LEN as u64 != u64::from(size) {
            return Err(HpiError::malformed(
                what,
                u64::from(off),
                format!("block size {size} but chunk holds {} + 19", h.compressed),
            ));
        }
        sqsh::decode(&stored, u64::from(off), what, None, limits)?
    } else {
        stored.clone()
    };
    Ok(KeptBlock { plain, stored })
}

struct DirFrame {
    sub: u64,
    sub_count: u64,
    file: u64,
    file_count: u64,
    next: u64,
    parent: Option<usize>,
}

fn parse_v2(src: &dyn Source, head: &[u8], limits: &HpiLimits) -> Result<Archive, HpiError> {
    let b = Bytes::new(head);
    let h = |at: u64| u32_at(&b, "v2 header", at);
    let (dir_off, dir_size, name_off, name_size, data_start, last78) =
        (h(8)?, h(12)?, h(16)?, h(20)?, h(24)?, h(28)?);
    let dir = v2_block(src, dir_off, dir_size, "v2 directory block", limits)?;
    let names = v2_block(src, name_off, name_size, "v2 name block", limits)?;
    let db = Bytes::new(&dir.plain);
    let du32 = |structure: &str, at: u64| u32_at(&db, structure, at);
    let mut end = (u64::from(dir_off) + u64::from(dir_size))
        .max(u64::from(name_off) + u64::from(name_size))
        .max(u64::from(V2_HEADER_LEN))
        .max(u64::from(data_start).min(src.len()));

    let mut seen = HashSet::new();
    let mut entries: Vec<Entry> = Vec::new();
    let open =
        |rec: u64, parent: Option<usize>, seen: &mut HashSet<u64>| -> Result<DirFrame, HpiError> {
            if !seen.insert(rec) {
                return Err(HpiError::malformed(
                    "v2 directory record",
                    rec,
                    "directory loop or shared folder",
                ));
            }
            let sub = u64::from(du32("v2 directory record", rec + 4)?);
            let sub_count = u64::from(du32("v2 directory record", rec + 8)?);
            let file = u64::from(du32("v2 directory record", rec + 12)?);
            let file_count = u64::from(du32("v2 directory record", rec + 16)?);
            if sub_count.saturating_add(file_count) > limits.max_entries as u64 {
                return Err(HpiError::limit(
                    "v2 directory record",
                    rec,
                    format!(
                        "{} entries (max_entries {})",
                        sub_count + file_count,
                        limits.max_entries
                    ),
                ));
            }
            db.slice(sub, sub_count * 20)
                .map_err(|e| trunc("v2 sub-folder records", e.offset, e.len, db.len()))?;
            db.slice(file, file_count * 24)
                .map_err(|e| trunc("v2 file records", e.offset, e.len, db.len()))?;
            Ok(DirFrame {
                sub,
                sub_count,
                file,
                file_count,
                next: 0,
                parent,
            })
        };
    let mut stack = vec![open(0, None, &mut seen)?];
    while let Some(top) = stack.last_mut() {
        if top.next == top.sub_count + top.file_count {
            stack.pop();
            continue;
        }
        let i = top.next;
        top.next += 1;
        let (parent, sub, sub_count, file) = (top.parent, top.sub, top.sub_count, top.file);
        let depth = stack.len() - 1;
        if entries.len() >= limits.max_entries {
            return Err(HpiError::limit(
                "v2 directory",
                0,
                format!("more than {} entries", limits.max_entries),
            ));
        }
        if i < sub_count {
            let rec = sub + 20 * i;
            let name = name_at(
                &names.plain,
                u64::from(du32("v2 directory record", rec)?),
                "v2 folder name",
                limits,
            )?;
            if stack.len() >= limits.max_depth {
                return Err(HpiError::limit(
                    "v2 directory record",
                    rec,
                    format!("folders nested deeper than {}", limits.max_depth),
                ));
            }
            entries.push(Entry {
                name,
                parent,
                depth,
                kind: EntryKind::Dir,
            });
            let idx = entries.len() - 1;
            let f = open(rec, Some(idx), &mut seen)?;
            stack.push(f);
        } else {
            let rec = file + 24 * (i - sub_count);
            let r = |k: u64| du32("v2 file record", rec + 4 * k);
            let name = name_at(&names.plain, u64::from(r(0)?), "v2 file name", limits)?;
            let (offset, size, csize, date, checksum) = (r(1)?, r(2)?, r(3)?, r(4)?, r(5)?);
            let stored_len = u64::from(if csize == 0 { size } else { csize });
            if u64::from(offset) + stored_len > src.len() {
                return Err(HpiError::Truncated {
                    structure: "v2 member data".into(),
                    offset: u64::from(offset),
                    len: stored_len,
                    input_len: src.len(),
                });
            }
            let method = if csize == 0 {
                Method::None
            } else {
                let head_len = stored_len.min(sqsh::HEADER_LEN as u64);
                let h = fetch(src, "v2 member", u64::from(offset), head_len)?;
                sqsh::header(&h, u64::from(offset), "v2 member")?.method
            };
            end = end.max(u64::from(offset) + stored_len);
            entries.push(Entry {
                name,
                parent,
                depth,
                kind: EntryKind::File(FileInfo {
                    offset,
                    size,
                    stored_len,
                    method,
                    chunked: csize != 0,
                    date,
                    checksum,
                }),
            });
        }
    }
    let end = end.min(src.len());
    let trailer = fetch(src, "trailer", end, src.len() - end)?;
    Ok(Archive {
        version: Version::V2,
        key: 0,
        entries,
        trailer,
        dir_padding: Vec::new(),
        last78,
        blocks: vec![dir, names],
    })
}
