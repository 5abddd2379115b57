//! The archive writer (HPIPack's layouts).
//!
//! Version 1: header, directory (each node's entry array followed, entry by entry, by the
//! entry's name and its file record or whole sub-tree), member data in directory order,
//! trailer. Everything after the header and before the trailer is under the outer cipher.
//! Version 2: header, member data from 0x20 in directory order, name block, directory
//! block, trailer.

use super::*;
use crate::formats::bytes::PutLe;
use rayon::prelude::*;
use std::collections::HashSet;

/// How to write an archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteOptions {
    /// Format version.
    pub version: Version,
    /// Method for [`Member::Data`] members (stored members keep theirs).
    pub method: Method,
    /// Version 1 header key (0 = no outer cipher; at most 0xFF).
    pub key: u32,
    /// Bytes appended after everything (plain text).
    pub trailer: Vec<u8>,
    /// Version 1: bytes appended to the directory before the first member.
    pub dir_padding: Vec<u8>,
    /// Version 2 header word at 0x1C.
    pub last78: u32,
    /// Version 2 directory or name blocks to emit verbatim when the block to write decodes
    /// to the same bytes (so an unchanged archive is reproduced byte for byte).
    pub reuse_blocks: Vec<KeptBlock>,
    /// Accept two entries of one folder whose names differ only in letter case (or not at
    /// all): an archive that already holds such names is rewritten with them. Off, such a
    /// tree is refused (the game could reach only one of them).
    pub keep_duplicate_names: bool,
}

impl WriteOptions {
    /// Version 1, zlib, key 0, Cavedog's trailer: HPIPack's default.
    pub fn v1() -> Self {
        WriteOptions {
            version: Version::V1,
            method: Method::Zlib,
            key: 0,
            trailer: TRAILER_V1.to_vec(),
            dir_padding: Vec::new(),
            last78: 0,
            reuse_blocks: Vec::new(),
            keep_duplicate_names: false,
        }
    }

    /// Version 2, zlib.
    pub fn v2() -> Self {
        WriteOptions {
            version: Version::V2,
            trailer: TRAILER_V2.to_vec(),
            ..WriteOptions::v1()
        }
    }

    /// The options that reproduce `a` (version, key, trailer, directory padding, blocks);
    /// new members use the method of its first compressed member (zlib if none).
    pub fn like(a: &Archive) -> Self {
        let method = a
            .files()
            .map(|(_, f)| f.method)
            .find(|&m| m != Method::None)
            .unwrap_or(Method::Zlib);
        WriteOptions {
            version: a.version,
            method,
            key: a.key,
            trailer: a.trailer.clone(),
            dir_padding: a.dir_padding.clone(),
            last78: a.last78,
            reuse_blocks: a.blocks.clone(),
            keep_duplicate_names: a.has_duplicate_names(),
        }
    }
}

/// Deepest tree the writer accepts.
const MAX_WRITE_DEPTH: usize = 256;

/// A member ready to be placed: its stored bytes (v1: table + chunks; plain, before the
/// outer cipher) and its record values.
struct Placed {
    bytes: Vec<u8>,
    method: Method,
    size: u32,
    csize: u32,
    date: u32,
    checksum: u32,
}

/// Writes an archive holding `tree`.
pub fn write(tree: &[Node], opts: &WriteOptions) -> Result<Vec<u8>, HpiError> {
    if opts.version == Version::V1 && opts.key > 0xFF {
        return Err(HpiError::unwritable(
            "v1 header",
            format!(
                "key {:#x} is over 0xFF (readers disagree on such keys)",
                opts.key
            ),
        ));
    }
    check_tree(tree, 0, opts.keep_duplicate_names)?;
    let mut members: Vec<&Member> = Vec::new();
    match opts.version {
        Version::V1 => collect(tree, &mut members),
        Version::V2 => v2_order(tree, &mut members),
    }
    let placed: Vec<Placed> = members
        .par_iter()
        .map(|m| place(m, opts))
        .collect::<Result<_, _>>()?;
    match opts.version {
        Version::V1 => write_v1(tree, &placed, opts),
        Version::V2 => write_v2(tree, &placed, opts),
    }
}

fn check_tree(nodes: &[Node], depth: usize, duplicates: bool) -> Result<(), HpiError> {
    if depth > MAX_WRITE_DEPTH {
        return Err(HpiError::unwritable(
            "directory",
            format!("folders nested deeper than {MAX_WRITE_DEPTH}"),
        ));
    }
    let mut seen = HashSet::new();
    for n in nodes {
        let shown = String::from_utf8_lossy(&n.name);
        if n.name.is_empty()
            || n.name == b"."
            || n.name == b".."
            || n.name.iter().any(|&c| c == 0 || c == b'/' || c == b'\\')
        {
            return Err(HpiError::unwritable(
                "directory",
                format!("invalid name {shown:?}"),
            ));
        }
        if !seen.insert(n.name.to_ascii_lowercase()) && !duplicates {
            return Err(HpiError::unwritable(
                "directory",
                format!("{shown:?} appears twice in one folder (names are case-insensitive)"),
            ));
        }
        if let NodeKind::Dir(kids) = &n.kind {
            check_tree(kids, depth + 1, duplicates)?;
        }
    }
    Ok(())
}

/// v1 members in data order: depth-first, entries in order.
fn collect<'a>(nodes: &'a [Node], out: &mut Vec<&'a Member>) {
    for n in nodes {
        match &n.kind {
            NodeKind::File(m) => out.push(m),
            NodeKind::Dir(kids) => collect(kids, out),
        }
    }
}

fn size_u32(len: usize, what: &str) -> Result<u32, HpiError> {
    u32::try_from(len).map_err(|_| HpiError::unwritable(what, format!("{len} bytes is over 4 GiB")))
}

fn place(m: &Member, opts: &WriteOptions) -> Result<Placed, HpiError> {
    match (m, opts.version) {
        (Member::Data { bytes, date }, Version::V1) => {
            let size = size_u32(bytes.len(), "member")?;
            if opts.method == Method::None {
                return Ok(Placed {
                    bytes: bytes.clone(),
                    method: Method::None,
                    size,
                    csize: 0,
                    date: *date,
                    checksum: 0,
                });
            }
            let chunks: Vec<Vec<u8>> = bytes
                .chunks(CHUNK_SIZE as usize)
                .map(|c| sqsh::encode(c, opts.method, true))
                .collect::<Result<_, _>>()?;
            Ok(Placed {
                bytes: v1_member(&chunks)?,
                method: opts.method,
                size,
                csize: 0,
                date: *date,
                checksum: 0,
            })
        }
        (Member::Data { bytes, date }, Version::V2) => {
            let size = size_u32(bytes.len(), "member")?;
            let (stored, csize) = if opts.method == Method::None || bytes.is_empty() {
                (bytes.clone(), 0)
            } else {
                let c = sqsh::encode(bytes, opts.method, false)?;
                let n = size_u32(c.len(), "member")?;
                (c, n)
            };
            Ok(Placed {
                bytes: stored,
                method: opts.method,
                size,
                csize,
                date: *date,
                checksum: v2_checksum(bytes),
            })
        }
        (Member::Stored(s), v) if s.version == v => {
            let (bytes, csize) = match v {
                Version::V1 if s.chunked => (v1_member(&s.chunks)?, 0),
                Version::V1 => (s.chunks.concat(), 0),
                Version::V2 => {
                    let b = s.chunks.concat();
                    let csize = if s.chunked {
                        size_u32(b.len(), "member")?
                    } else {
                        0
                    };
                    (b, csize)
                }
            };
            Ok(Placed {
                bytes,
                method: s.method,
                size: s.size,
                csize,
                date: s.date,
                checksum: s.checksum,
            })
        }
        (Member::Stored(_), _) => Err(HpiError::unwritable(
            "member",
            "stored bytes of another archive version cannot be reused; decode the member first",
        )),
    }
}

/// A v1 member's plain stored bytes: the chunk size table, then the chunks.
fn v1_member(chunks: &[Vec<u8>]) -> Result<Vec<u8>, HpiError> {
    let mut out = Vec::with_capacity(4 * chunks.len() + chunks.iter().map(Vec::len).sum::<usize>());
    for c in chunks {
        out.put_u32(size_u32(c.len(), "chunk")?);
    }
    for c in chunks {
        out.extend_from_slice(c);
    }
    Ok(out)
}

/// Lays out a v1 node at the end of `dir`; file records are recorded for patching.
fn v1_node(nodes: &[Node], dir: &mut Vec<u8>, records: &mut Vec<usize>) -> Result<(), HpiError> {
    let node_at = dir.len();
    dir.put_u32(size_u32(nodes.len(), "directory node")?);
    dir.put_u32(size_u32(node_at + 8, "directory")?);
    let list_at = dir.len();
    dir.resize(list_at + 9 * nodes.len(), 0);
    for (i, n) in nodes.iter().enumerate() {
        let name_at = size_u32(dir.len(), "directory")?;
        dir.extend_from_slice(&n.name);
        dir.push(0);
        let target = size_u32(dir.len(), "directory")?;
        let e = list_at + 9 * i;
        dir[e..e + 4].copy_from_slice(&name_at.to_le_bytes());
        dir[e + 4..e + 8].copy_from_slice(&target.to_le_bytes());
        match &n.kind {
            NodeKind::File(_) => {
                dir[e + 8] = 0;
                records.push(dir.len());
                dir.resize(dir.len() + 9, 0);
            }
            NodeKind::Dir(kids) => {
                dir[e + 8] = 1;
                v1_node(kids, dir, records)?;
            }
        }
    }
    Ok(())
}

fn write_v1(tree: &[Node], placed: &[Placed], opts: &WriteOptions) -> Result<Vec<u8>, HpiError> {
    let mut out = Vec::new();
    out.put_u32(MAGIC);
    out.put_u32(VERSION_1);
    out.put_u32(0); // directory end, patched
    out.put_u32(opts.key);
    out.put_u32(V1_HEADER_LEN);
    let mut records = Vec::new();
    v1_node(tree, &mut out, &mut records)?;
    out.extend_from_slice(&opts.dir_padding);
    let dir_end = size_u32(out.len(), "directory")?;
    out[8..12].copy_from_slice(&dir_end.to_le_bytes());
    for (&r, p) in records.iter().zip(placed) {
        let offset = size_u32(out.len(), "archive")?;
        out[r..r + 4].copy_from_slice(&offset.to_le_bytes());
        out[r + 4..r + 8].copy_from_slice(&p.size.to_le_bytes());
        out[r + 8] = p.method.code();
        out.extend_from_slice(&p.bytes);
    }
    size_u32(out.len(), "archive")?;
    let body = V1_HEADER_LEN as usize;
    outer_xor(
        &mut out[body..],
        u64::from(V1_HEADER_LEN),
        outer_key(opts.key),
    );
    out.extend_from_slice(&opts.trailer);
    Ok(out)
}

/// Builds the v2 name and directory blocks (HPIPack's layout). Root record at 0; visiting a
/// folder appends its sub-folder record array and its file record array to the directory
/// block and the names of its sub-folders then of its files to the name block; then its
/// sub-folders are visited in order.
fn v2_blocks(
    tree: &[Node],
    offsets: &[u32],
    placed: &[Placed],
) -> Result<(Vec<u8>, Vec<u8>), HpiError> {
    let mut names = vec![0u8];
    let mut dir = vec![0u8; 20];
    let mut next_file = 0usize;
    fn fill(
        rec: usize,
        nodes: &[Node],
        dir: &mut Vec<u8>,
        names: &mut Vec<u8>,
        offsets: &[u32],
        placed: &[Placed],
        next_file: &mut usize,
    ) -> Result<(), HpiError> {
        let subs: Vec<&Node> = nodes
            .iter()
            .filter(|n| matches!(n.kind, NodeKind::Dir(_)))
            .collect();
        let files: Vec<&Node> = nodes
            .iter()
            .filter(|n| matches!(n.kind, NodeKind::File(_)))
            .collect();
        let sub_at = dir.len();
        dir.resize(sub_at + 20 * subs.len(), 0);
        let file_at = dir.len();
        dir.resize(file_at + 24 * files.len(), 0);
        let put = |dir: &mut Vec<u8>, at: usize, v: u32| {
            dir[at..at + 4].copy_from_slice(&v.to_le_bytes())
        };
        put(dir, rec + 4, size_u32(sub_at, "directory block")?);
        put(dir, rec + 8, size_u32(subs.len(), "directory block")?);
        put(dir, rec + 12, size_u32(file_at, "directory block")?);
        put(dir, rec + 16, size_u32(files.len(), "directory block")?);
        for (i, s) in subs.iter().enumerate() {
            put(dir, sub_at + 20 * i, size_u32(names.len(), "name block")?);
            names.extend_from_slice(&s.name);
            names.push(0);
        }
        for (i, f) in files.iter().enumerate() {
            let r = file_at + 24 * i;
            put(dir, r, size_u32(names.len(), "name block")?);
            names.extend_from_slice(&f.name);
            names.push(0);
            let k = *next_file;
            *next_file += 1;
            let (Some(&off), Some(p)) = (offsets.get(k), placed.get(k)) else {
                return Err(HpiError::unwritable(
                    "directory block",
                    "member count mismatch",
                ));
            };
            put(dir, r + 4, off);
            put(dir, r + 8, p.size);
            put(dir, r + 12, p.csize);
            put(dir, r + 16, p.date);
            put(dir, r + 20, p.checksum);
        }
        for (i, s) in subs.iter().enumerate() {
            if let NodeKind::Dir(kids) = &s.kind {
                fill(
                    sub_at + 20 * i,
                    kids,
                    dir,
                    names,
                    offsets,
                    placed,
                    next_file,
                )?;
            }
        }
        Ok(())
    }
    fill(
        0,
        tree,
        &mut dir,
        &mut names,
        offsets,
        placed,
        &mut next_file,
    )?;
    Ok((names, dir))
}

/// v2 members in data order: a folder's files, then its sub-folders' (matching
/// [`v2_blocks`]).
fn v2_order<'a>(nodes: &'a [Node], out: &mut Vec<&'a Member>) {
    for n in nodes {
        if let NodeKind::File(m) = &n.kind {
            out.push(m);
        }
    }
    for n in nodes {
        if let NodeKind::Dir(kids) = &n.kind {
            v2_order(kids, out);
        }
    }
}

fn v2_block(plain: Vec<u8>, reuse: &[KeptBlock]) -> Result<Vec<u8>, HpiError> {
    if let Some(k) = reuse.iter().find(|k| k.plain == plain) {
        return Ok(k.stored.clone());
    }
    sqsh::encode(&plain, Method::Zlib, true)
}

fn write_v2(tree: &[Node], placed: &[Placed], opts: &WriteOptions) -> Result<Vec<u8>, HpiError> {
    let mut out = vec![0u8; V2_HEADER_LEN as usize];
    let mut offsets = Vec::with_capacity(placed.len());
    for p in placed {
        offsets.push(size_u32(out.len(), "archive")?);
        out.extend_from_slice(&p.bytes);
    }
    let (names, dir) = v2_blocks(tree, &offsets, placed)?;
    let names = v2_block(names, &opts.reuse_blocks)?;
    let dir = v2_block(dir, &opts.reuse_blocks)?;
    let name_off = size_u32(out.len(), "archive")?;
    out.extend_from_slice(&names);
    let dir_off = size_u32(out.len(), "archive")?;
    out.extend_from_slice(&dir);
    size_u32(out.len(), "archive")?;
    let mut h = Vec::with_capacity(V2_HEADER_LEN as usize);
    h.put_u32(MAGIC);
    h.put_u32(VERSION_2);
    h.put_u32(dir_off);
    h.put_u32(size_u32(dir.len(), "directory block")?);
    h.put_u32(name_off);
    h.put_u32(size_u32(names.len(), "name block")?);
    h.put_u32(V2_HEADER_LEN);
    h.put_u32(opts.last78);
    out[..V2_HEADER_LEN as usize].copy_from_slice(&h);
    out.extend_from_slice(&opts.trailer);
    Ok(out)
}
