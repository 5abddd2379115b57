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
use std::borrow::Cow;
use std::collections::HashSet;
use std::io::{Seek, SeekFrom, Write};

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

/// Members are prepared (compressed, fetched) in windows of about this many input bytes,
/// in parallel, and written in order: a writer holds one window, not the archive.
const WINDOW: u64 = 16 << 20;

/// The record values of a placed member.
#[derive(Debug, Clone, Copy)]
struct Meta {
    method: Method,
    size: u32,
    csize: u32,
    date: u32,
    checksum: u32,
}

/// A member's stored bytes (v1: table + chunks; plain, before the outer cipher), ready to
/// be written.
enum Payload<'a> {
    Owned(Vec<u8>),
    Borrowed(&'a [u8]),
    InPlace(&'a InPlace),
}

/// A member ready to be written.
struct Placed<'a> {
    meta: Meta,
    payload: Payload<'a>,
}

impl Placed<'_> {
    fn len(&self) -> u64 {
        match &self.payload {
            Payload::Owned(b) => b.len() as u64,
            Payload::Borrowed(b) => b.len() as u64,
            Payload::InPlace(p) => p.len,
        }
    }
}

/// Writes an archive holding `tree` into memory (see [`write_to`]; a tree with
/// [`Member::InPlace`] members needs `write_to` and their source).
pub fn write(tree: &[Node], opts: &WriteOptions) -> Result<Vec<u8>, HpiError> {
    let mut c = std::io::Cursor::new(Vec::new());
    write_to(tree, opts, None, &mut c)?;
    Ok(c.into_inner())
}

/// Writes an archive holding `tree` to `out`, from its start: members are prepared in
/// bounded windows and written in order, [`Member::InPlace`] members copied from `src` (the
/// archive they come from) range by range, then the directory is written where it belongs.
/// Returns the archive's length. On error `out` holds a partial archive: write to a
/// temporary file and rename it on success.
pub fn write_to<W: Write + Seek>(
    tree: &[Node],
    opts: &WriteOptions,
    src: Option<&dyn Source>,
    out: &mut W,
) -> Result<u64, HpiError> {
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
    let mut w = Sink { out, pos: 0 };
    match opts.version {
        Version::V1 => write_v1(tree, &members, opts, src, &mut w),
        Version::V2 => write_v2(tree, &members, opts, src, &mut w),
    }
}

/// The output and the position written next.
struct Sink<'a, W> {
    out: &'a mut W,
    pos: u64,
}

impl<W: Write + Seek> Sink<'_, W> {
    fn io(&self, what: &str, e: std::io::Error) -> HpiError {
        HpiError::Io {
            structure: what.into(),
            offset: self.pos,
            message: e.to_string(),
        }
    }

    /// The current position as a 32-bit archive offset.
    fn offset(&self) -> Result<u32, HpiError> {
        u32::try_from(self.pos).map_err(|_| {
            HpiError::unwritable("archive", format!("{} bytes is over 4 GiB", self.pos))
        })
    }

    /// Writes `data` at the current position under the outer cipher `okey`.
    fn put(&mut self, data: &[u8], okey: Option<u8>, what: &str) -> Result<(), HpiError> {
        if okey.is_none() {
            self.out.write_all(data).map_err(|e| self.io(what, e))?;
            self.pos += data.len() as u64;
            return Ok(());
        }
        let mut buf = Vec::with_capacity(COPY_BLOCK.min(data.len()));
        for part in data.chunks(COPY_BLOCK) {
            buf.clear();
            buf.extend_from_slice(part);
            outer_xor(&mut buf, self.pos, okey);
            self.out.write_all(&buf).map_err(|e| self.io(what, e))?;
            self.pos += part.len() as u64;
        }
        Ok(())
    }

    /// Copies a member's stored range from `src`, its outer cipher exchanged for `okey`.
    fn copy(
        &mut self,
        p: &InPlace,
        src: Option<&dyn Source>,
        okey: Option<u8>,
    ) -> Result<(), HpiError> {
        let src = src.ok_or_else(|| {
            HpiError::unwritable("member", "stored range given without the archive it is in")
        })?;
        let from = match p.version {
            Version::V1 => outer_key(p.key),
            Version::V2 => None,
        };
        let mut buf = vec![0u8; COPY_BLOCK.min(p.len as usize)];
        let mut done = 0u64;
        while done < p.len {
            let n = (p.len - done).min(COPY_BLOCK as u64) as usize;
            let b = &mut buf[..n];
            let at = p.offset + done;
            src.read_at(at, b).map_err(|e| HpiError::Io {
                structure: "member data".into(),
                offset: at,
                message: e.to_string(),
            })?;
            outer_xor(b, at, from);
            outer_xor(b, self.pos, okey);
            self.out.write_all(b).map_err(|e| self.io("member", e))?;
            self.pos += n as u64;
            done += n as u64;
        }
        Ok(())
    }

    fn write(
        &mut self,
        p: &Placed,
        src: Option<&dyn Source>,
        okey: Option<u8>,
    ) -> Result<(), HpiError> {
        match &p.payload {
            Payload::Owned(b) => self.put(b, okey, "member"),
            Payload::Borrowed(b) => self.put(b, okey, "member"),
            Payload::InPlace(ip) => self.copy(ip, src, okey),
        }
    }

    /// Writes `data` at absolute offset `at`, then returns to the end.
    fn patch(&mut self, at: u64, data: &[u8], what: &str) -> Result<(), HpiError> {
        let end = self.pos;
        self.out
            .seek(SeekFrom::Start(at))
            .and_then(|_| self.out.write_all(data))
            .and_then(|_| self.out.seek(SeekFrom::Start(end)))
            .map_err(|e| self.io(what, e))?;
        Ok(())
    }
}

/// Bytes copied or ciphered per write.
const COPY_BLOCK: usize = 64 << 10;

/// Bytes a member takes in memory while it is prepared (for the windows).
fn weight(m: &Member) -> u64 {
    match m {
        Member::Data { bytes, .. } => bytes.len() as u64,
        Member::Stored(s) => s.chunks.iter().map(|c| c.len() as u64).sum(),
        Member::InPlace(_) => 0,
        Member::Deferred(d) => d.len,
    }
}

/// Prepares `members` window by window (in parallel within a window) and hands each, in
/// order, to `put`.
fn placed_in_order<'a>(
    members: &[&'a Member],
    opts: &WriteOptions,
    mut put: impl FnMut(Placed<'a>) -> Result<(), HpiError>,
) -> Result<(), HpiError> {
    let mut i = 0;
    while i < members.len() {
        let mut j = i;
        let mut load = 0u64;
        while j < members.len() && (j == i || load + weight(members[j]) <= WINDOW) {
            load += weight(members[j]);
            j += 1;
        }
        let window: Vec<Placed<'a>> = members[i..j]
            .par_iter()
            .map(|m| place(m, opts))
            .collect::<Result<_, _>>()?;
        for p in window {
            put(p)?;
        }
        i = j;
    }
    Ok(())
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

fn place<'a>(m: &'a Member, opts: &WriteOptions) -> Result<Placed<'a>, HpiError> {
    match m {
        Member::Data { bytes, date } => encode(Cow::Borrowed(bytes), *date, opts),
        Member::Deferred(d) => {
            let bytes = (d.fetch)().map_err(|e| HpiError::Io {
                structure: format!("member {}", d.what),
                offset: 0,
                message: e.to_string(),
            })?;
            encode(Cow::Owned(bytes), d.date, opts)
        }
        Member::Stored(s) if s.version == opts.version => {
            let (bytes, csize) = match s.version {
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
                meta: Meta {
                    method: s.method,
                    size: s.size,
                    csize,
                    date: s.date,
                    checksum: s.checksum,
                },
                payload: Payload::Owned(bytes),
            })
        }
        Member::InPlace(p) if p.version == opts.version => {
            let len = usize::try_from(p.len).unwrap_or(usize::MAX);
            let csize = match p.version {
                Version::V2 if p.chunked => size_u32(len, "member")?,
                _ => 0,
            };
            Ok(Placed {
                meta: Meta {
                    method: p.method,
                    size: p.size,
                    csize,
                    date: p.date,
                    checksum: p.checksum,
                },
                payload: Payload::InPlace(p),
            })
        }
        Member::Stored(_) | Member::InPlace(_) => Err(HpiError::unwritable(
            "member",
            "stored bytes of another archive version cannot be reused; decode the member first",
        )),
    }
}

/// New content compressed with the options' method.
fn encode<'a>(
    bytes: Cow<'a, [u8]>,
    date: u32,
    opts: &WriteOptions,
) -> Result<Placed<'a>, HpiError> {
    let size = size_u32(bytes.len(), "member")?;
    let raw = |bytes: Cow<'a, [u8]>| match bytes {
        Cow::Borrowed(b) => Payload::Borrowed(b),
        Cow::Owned(b) => Payload::Owned(b),
    };
    let meta = |method, csize, checksum| Meta {
        method,
        size,
        csize,
        date,
        checksum,
    };
    match opts.version {
        Version::V1 => {
            if opts.method == Method::None {
                return Ok(Placed {
                    meta: meta(Method::None, 0, 0),
                    payload: raw(bytes),
                });
            }
            let chunks: Vec<Vec<u8>> = bytes
                .par_chunks(CHUNK_SIZE as usize)
                .map(|c| sqsh::encode(c, opts.method, true))
                .collect::<Result<_, _>>()?;
            Ok(Placed {
                meta: meta(opts.method, 0, 0),
                payload: Payload::Owned(v1_member(&chunks)?),
            })
        }
        Version::V2 => {
            let checksum = v2_checksum(&bytes);
            if opts.method == Method::None || bytes.is_empty() {
                return Ok(Placed {
                    meta: meta(opts.method, 0, checksum),
                    payload: raw(bytes),
                });
            }
            let c = sqsh::encode(&bytes, opts.method, false)?;
            let n = size_u32(c.len(), "member")?;
            Ok(Placed {
                meta: meta(opts.method, n, checksum),
                payload: Payload::Owned(c),
            })
        }
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

fn write_v1<W: Write + Seek>(
    tree: &[Node],
    members: &[&Member],
    opts: &WriteOptions,
    src: Option<&dyn Source>,
    w: &mut Sink<'_, W>,
) -> Result<u64, HpiError> {
    let mut head = Vec::new();
    head.put_u32(MAGIC);
    head.put_u32(VERSION_1);
    head.put_u32(0); // directory end, patched
    head.put_u32(opts.key);
    head.put_u32(V1_HEADER_LEN);
    let mut records = Vec::new();
    v1_node(tree, &mut head, &mut records)?;
    head.extend_from_slice(&opts.dir_padding);
    let dir_end = size_u32(head.len(), "directory")?;
    head[8..12].copy_from_slice(&dir_end.to_le_bytes());
    // the directory is written once every member's place is known
    w.put(&vec![0u8; head.len()], None, "directory")?;
    let okey = outer_key(opts.key);
    let mut next = records.iter();
    placed_in_order(members, opts, |p| {
        let offset = w.offset()?;
        let &r = next
            .next()
            .ok_or_else(|| HpiError::unwritable("directory", "member count mismatch"))?;
        head[r..r + 4].copy_from_slice(&offset.to_le_bytes());
        head[r + 4..r + 8].copy_from_slice(&p.meta.size.to_le_bytes());
        head[r + 8] = p.meta.method.code();
        if w.pos + p.len() > u64::from(u32::MAX) {
            return Err(HpiError::unwritable("archive", "archive would pass 4 GiB"));
        }
        w.write(&p, src, okey)
    })?;
    w.put(&opts.trailer, None, "trailer")?;
    let body = V1_HEADER_LEN as usize;
    outer_xor(&mut head[body..], u64::from(V1_HEADER_LEN), okey);
    w.patch(0, &head, "directory")?;
    Ok(w.pos)
}

/// Builds the v2 name and directory blocks (HPIPack's layout). Root record at 0; visiting a
/// folder appends its sub-folder record array and its file record array to the directory
/// block and the names of its sub-folders then of its files to the name block; then its
/// sub-folders are visited in order.
fn v2_blocks(
    tree: &[Node],
    offsets: &[u32],
    placed: &[Meta],
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
        placed: &[Meta],
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

fn write_v2<W: Write + Seek>(
    tree: &[Node],
    members: &[&Member],
    opts: &WriteOptions,
    src: Option<&dyn Source>,
    w: &mut Sink<'_, W>,
) -> Result<u64, HpiError> {
    w.put(&[0u8; V2_HEADER_LEN as usize], None, "header")?;
    let mut offsets = Vec::with_capacity(members.len());
    let mut metas = Vec::with_capacity(members.len());
    placed_in_order(members, opts, |p| {
        offsets.push(w.offset()?);
        metas.push(p.meta);
        if w.pos + p.len() > u64::from(u32::MAX) {
            return Err(HpiError::unwritable("archive", "archive would pass 4 GiB"));
        }
        w.write(&p, src, None)
    })?;
    let (names, dir) = v2_blocks(tree, &offsets, &metas)?;
    let names = v2_block(names, &opts.reuse_blocks)?;
    let dir = v2_block(dir, &opts.reuse_blocks)?;
    let name_off = w.offset()?;
    w.put(&names, None, "name block")?;
    let dir_off = w.offset()?;
    w.put(&dir, None, "directory block")?;
    w.offset()?;
    let mut h = Vec::with_capacity(V2_HEADER_LEN as usize);
    h.put_u32(MAGIC);
    h.put_u32(VERSION_2);
    h.put_u32(dir_off);
    h.put_u32(size_u32(dir.len(), "directory block")?);
    h.put_u32(name_off);
    h.put_u32(size_u32(names.len(), "name block")?);
    h.put_u32(V2_HEADER_LEN);
    h.put_u32(opts.last78);
    w.put(&opts.trailer, None, "trailer")?;
    w.patch(0, &h, "header")?;
    Ok(w.pos)
}
