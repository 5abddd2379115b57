//! HPI archives: Total Annihilation (version 1: `.hpi .ufo .ccx .gp3 .gpf`) and
//! TA: Kingdoms (version 2).
//!
//! [`parse`] reads only the header and the directory (and, for version 1, each file's chunk
//! size table, to know its stored length): listing never decompresses a member.
//! [`parse_from`] does the same from a [`Source`] (the caller's "bytes at this offset"), so
//! the rest of the archive is never read. [`Archive::read`] decompresses one member,
//! verifying every SQSH chunk's checksum and size; [`Archive::read_to`] reads the member's
//! chunks from a [`Source`] one at a time and writes each as soon as it is verified. [`write()`] builds an archive from a [`Node`] tree; members taken from an existing
//! archive with [`Archive::to_tree`] keep their stored chunk bytes verbatim, so a repack
//! recompresses only what changed.
//!
//! Budgets ([`HpiLimits`]) bound entries, depth, name lengths, member sizes and compression
//! ratios; a directory loop, a lying chunk or a zip-bomb-like chunk is an [`HpiError`].

pub mod lz77;
mod read;
mod source;
pub mod sqsh;
#[cfg(test)]
mod tests;
mod write;

pub use read::{parse, parse_from};
pub use source::{InMemory, Source};
pub use write::{write, write_to, WriteOptions};

/// `HAPI` at offset 0.
pub const MAGIC: u32 = 0x4950_4148;
/// Version word of TA archives.
pub const VERSION_1: u32 = 0x0001_0000;
/// Version word of TA: Kingdoms archives.
pub const VERSION_2: u32 = 0x0002_0000;
/// Version word of TA saved games (`BANK`), which are not archives tafs can read.
pub const VERSION_BANK: u32 = 0x4B4E_4142;
/// Size of the version 1 header.
pub const V1_HEADER_LEN: u32 = 20;
/// Size of the version 2 header.
pub const V2_HEADER_LEN: u32 = 32;
/// Decompressed size of every version 1 chunk but a file's last.
pub const CHUNK_SIZE: u32 = 65_536;
/// The trailer Cavedog's tools append (plain text, after the data).
pub const TRAILER_V1: &[u8] = b"Copyright 1998 Cavedog Entertainment";
/// The trailer tafs appends to version 2 archives.
pub const TRAILER_V2: &[u8] = b"Total Annihilation: Kingdoms Copyright 1999 Cavedog Entertainment";

/// Archive format version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Version {
    /// Total Annihilation: XOR-ciphered directory tree, members split in 64 KiB chunks.
    V1,
    /// TA: Kingdoms: compressed directory and name blocks, one chunk per member.
    V2,
}

/// How a member (or a chunk) is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    /// Raw bytes.
    None,
    /// TA's LZ77 variant ([`lz77`]).
    Lz77,
    /// A zlib (RFC 1950) stream.
    Zlib,
}

impl Method {
    /// The byte used in file records and SQSH headers.
    pub fn code(self) -> u8 {
        match self {
            Method::None => 0,
            Method::Lz77 => 1,
            Method::Zlib => 2,
        }
    }

    /// The method for a record or chunk byte, if known.
    pub fn from_code(c: u8) -> Option<Method> {
        match c {
            0 => Some(Method::None),
            1 => Some(Method::Lz77),
            2 => Some(Method::Zlib),
            _ => None,
        }
    }

    /// Lower-case name (`none`, `lz77`, `zlib`).
    pub fn name(self) -> &'static str {
        match self {
            Method::None => "none",
            Method::Lz77 => "lz77",
            Method::Zlib => "zlib",
        }
    }
}

/// Budgets applied while reading untrusted archives. Defaults are far above anything
/// shipped (the largest stock archive is a few hundred MB with a few thousand members).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HpiLimits {
    /// Directory entries (files and folders) in one archive.
    pub max_entries: usize,
    /// Nesting depth of folders (1 = a folder in the root).
    pub max_depth: usize,
    /// Bytes of one name.
    pub max_name_len: usize,
    /// Decompressed bytes of one member (also of a version 2 directory or name block).
    pub max_member_size: u64,
    /// Decompressed bytes per stored byte, for a chunk and for a whole member. zlib cannot
    /// exceed about 1032, TA's LZ77 about 8; a larger claim is a lie or a bomb.
    pub max_ratio: u64,
}

impl Default for HpiLimits {
    fn default() -> Self {
        HpiLimits {
            max_entries: 1 << 20,
            max_depth: 64,
            max_name_len: 4096,
            max_member_size: 1 << 30,
            max_ratio: 2048,
        }
    }
}

/// A parsed archive: header fields, the directory as a flat list, the trailer. Member data
/// stays in the caller's bytes; [`Archive::read`] decodes one member on demand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Archive {
    /// Format version.
    pub version: Version,
    /// Version 1 header key (0 = no outer cipher); 0 for version 2.
    pub key: u32,
    /// Every folder and file, depth-first in directory order, parents before children.
    /// Version 2 lists a folder's sub-folders before its files (the format keeps them apart).
    pub entries: Vec<Entry>,
    /// Bytes after the last structure the header and directory reach (kept for rewrites).
    pub trailer: Vec<u8>,
    /// Version 1: deciphered bytes between the last directory structure and the first
    /// member (HPIPack leaves one zero byte per empty folder).
    pub dir_padding: Vec<u8>,
    /// Version 2 header word at 0x1C ("Last78"), kept as found.
    pub last78: u32,
    /// Version 2 directory and name blocks as stored, with their decoded bytes, so that an
    /// unchanged directory can be written back byte for byte ([`WriteOptions::reuse_blocks`]).
    pub blocks: Vec<KeptBlock>,
}

/// One directory entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The raw name bytes (case kept; no `/`, never empty, `.` or `..`).
    pub name: Vec<u8>,
    /// Index of the containing folder in [`Archive::entries`]; `None` = the root.
    pub parent: Option<usize>,
    /// 0 for an entry of the root folder.
    pub depth: usize,
    /// Folder or file.
    pub kind: EntryKind,
}

/// Folder or file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryKind {
    /// A folder.
    Dir,
    /// A file.
    File(FileInfo),
}

/// Where a member is and how it is stored; everything listing needs, no decompression.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileInfo {
    /// Absolute offset of the member's data (v1: its chunk size table).
    pub offset: u32,
    /// Decompressed size.
    pub size: u32,
    /// Bytes the member occupies in the archive (v1: size table and chunks).
    pub stored_len: u64,
    /// How it is stored (v1: the record's flag; v2: its chunk's method, or none if raw).
    pub method: Method,
    /// True when the data is in SQSH chunks (v1: compressed members; v2: CompressedSize ≠ 0);
    /// false for raw bytes.
    pub chunked: bool,
    /// Version 2 modification time (Unix seconds); 0 in version 1.
    pub date: u32,
    /// Version 2 checksum of the decompressed bytes ([`v2_checksum`]); 0 in version 1.
    pub checksum: u32,
}

impl FileInfo {
    /// Decompressed bytes per stored byte (0 for an empty member).
    pub fn ratio(&self) -> f64 {
        if self.stored_len == 0 {
            0.0
        } else {
            f64::from(self.size) / self.stored_len as f64
        }
    }
}

/// A version 2 directory or name block: its bytes as stored and as decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptBlock {
    /// The decoded block.
    pub plain: Vec<u8>,
    /// The block as stored (an SQSH chunk or raw).
    pub stored: Vec<u8>,
}

/// A member's stored bytes, independent of its position in an archive (the version 1
/// outer cipher removed), so it can be written into another archive verbatim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredMember {
    /// Version of the archive it came from (v1 chunks are ≤ 64 KiB, v2 has one chunk).
    pub version: Version,
    /// The file record's method.
    pub method: Method,
    /// SQSH chunks (true) or raw bytes (false).
    pub chunked: bool,
    /// Decompressed size.
    pub size: u32,
    /// v1 compressed: each SQSH chunk (header and payload). v1 raw: one element, the bytes.
    /// v2: one element, the SQSH chunk or the raw bytes.
    pub chunks: Vec<Vec<u8>>,
    /// Version 2 date, 0 otherwise.
    pub date: u32,
    /// Version 2 checksum, 0 otherwise.
    pub checksum: u32,
}

/// A tree to write: a folder's entries in the order they are written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// Raw name bytes (case kept).
    pub name: Vec<u8>,
    /// Folder or file.
    pub kind: NodeKind,
}

/// Folder or file of a [`Node`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeKind {
    /// A folder and its entries.
    Dir(Vec<Node>),
    /// A file.
    File(Member),
}

/// A member to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Member {
    /// New content, compressed with [`WriteOptions::method`]; `date` is used by version 2.
    Data {
        /// The bytes.
        bytes: Vec<u8>,
        /// Unix modification time (version 2).
        date: u32,
    },
    /// Stored bytes from an archive of the same version, written verbatim.
    Stored(StoredMember),
    /// Stored bytes still in the archive they come from, copied range by range from the
    /// source given to [`write_to`] when the member is written (never held whole).
    InPlace(InPlace),
    /// New content fetched only when the member is written (the files of a folder being
    /// packed), so the writer holds a bounded window of members at a time.
    Deferred(Deferred),
}

/// A member's stored range in the archive a tree is written from ([`Member::InPlace`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InPlace {
    /// Version of that archive.
    pub version: Version,
    /// The record's method.
    pub method: Method,
    /// SQSH chunks (true) or raw bytes (false).
    pub chunked: bool,
    /// Decompressed size.
    pub size: u32,
    /// Where the stored bytes start in the source (v1: the chunk size table).
    pub offset: u64,
    /// How many stored bytes.
    pub len: u64,
    /// The source's version 1 header key (its outer cipher is removed while copying).
    pub key: u32,
    /// Version 2 date, 0 otherwise.
    pub date: u32,
    /// Version 2 checksum, 0 otherwise.
    pub checksum: u32,
}

/// Fetches a deferred member's bytes.
pub type Fetch = std::sync::Arc<dyn Fn() -> std::io::Result<Vec<u8>> + Send + Sync>;

/// New content of a [`Member::Deferred`].
#[derive(Clone)]
pub struct Deferred {
    /// What the member is called in errors.
    pub what: String,
    /// Unix modification time (version 2).
    pub date: u32,
    /// Expected length (how much memory the member takes while it is prepared).
    pub len: u64,
    /// Supplies the bytes (called once, when the member is written).
    pub fetch: Fetch,
}

impl std::fmt::Debug for Deferred {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Deferred")
            .field("what", &self.what)
            .finish()
    }
}

impl PartialEq for Deferred {
    fn eq(&self, o: &Self) -> bool {
        self.what == o.what && self.date == o.date && std::sync::Arc::ptr_eq(&self.fetch, &o.fetch)
    }
}

impl Eq for Deferred {}

impl Node {
    /// A file node with new content.
    pub fn file(name: impl Into<Vec<u8>>, bytes: impl Into<Vec<u8>>) -> Node {
        Node {
            name: name.into(),
            kind: NodeKind::File(Member::Data {
                bytes: bytes.into(),
                date: 0,
            }),
        }
    }

    /// A folder node.
    pub fn dir(name: impl Into<Vec<u8>>, entries: Vec<Node>) -> Node {
        Node {
            name: name.into(),
            kind: NodeKind::Dir(entries),
        }
    }
}

/// What reading or writing an archive can fail with; each names the structure and offset.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HpiError {
    /// Not an HPI archive.
    #[error("hpi: header at offset 0: not an HPI archive (marker {marker:#010x})")]
    NotHpi {
        /// The first word.
        marker: u32,
    },
    /// A TA saved game.
    #[error("hpi: header at offset 4: BANK (TA saved game) archives are unsupported")]
    Bank,
    /// An unknown version word.
    #[error("hpi: header at offset 4: unsupported version {version:#010x}")]
    UnknownVersion {
        /// The version word.
        version: u32,
    },
    /// A structure reaches past the end of its input.
    #[error("hpi: {structure} at offset {offset:#x}: {len} bytes needed, input has {input_len}")]
    Truncated {
        /// What was being read.
        structure: String,
        /// Its offset.
        offset: u64,
        /// Bytes it needs.
        len: u64,
        /// Length of the input.
        input_len: u64,
    },
    /// A structure holds an impossible value.
    #[error("hpi: {structure} at offset {offset:#x}: {message}")]
    Malformed {
        /// What was being read.
        structure: String,
        /// Its offset.
        offset: u64,
        /// What is wrong.
        message: String,
    },
    /// A chunk's checksum does not match its payload.
    #[error("hpi: {structure} at offset {offset:#x}: checksum {found:#010x}, header says {expected:#010x}")]
    Checksum {
        /// What was checked.
        structure: String,
        /// Its offset.
        offset: u64,
        /// The stored checksum.
        expected: u32,
        /// The computed one.
        found: u32,
    },
    /// A budget of [`HpiLimits`] was exceeded.
    #[error("hpi: {structure} at offset {offset:#x}: over the limit: {message}")]
    Limit {
        /// What was being read.
        structure: String,
        /// Its offset.
        offset: u64,
        /// Which budget.
        message: String,
    },
    /// The source could not supply a range, or the output could not take a member's bytes.
    #[error("hpi: {structure} at offset {offset:#x}: {message}")]
    Io {
        /// What was being read or written.
        structure: String,
        /// Its offset in the archive.
        offset: u64,
        /// The I/O error.
        message: String,
    },
    /// The tree cannot be written (a value the format cannot hold).
    #[error("hpi: cannot write {structure}: {message}")]
    Unwritable {
        /// What was being written.
        structure: String,
        /// Why not.
        message: String,
    },
}

impl HpiError {
    pub(crate) fn malformed(
        structure: impl Into<String>,
        offset: u64,
        m: impl Into<String>,
    ) -> Self {
        HpiError::Malformed {
            structure: structure.into(),
            offset,
            message: m.into(),
        }
    }

    pub(crate) fn limit(structure: impl Into<String>, offset: u64, m: impl Into<String>) -> Self {
        HpiError::Limit {
            structure: structure.into(),
            offset,
            message: m.into(),
        }
    }

    pub(crate) fn unwritable(structure: impl Into<String>, m: impl Into<String>) -> Self {
        HpiError::Unwritable {
            structure: structure.into(),
            message: m.into(),
        }
    }
}

/// The version 1 outer cipher byte for a header key (8-bit rotate left by 2 of its low
/// byte); `None` when the key is 0 (no cipher).
pub fn outer_key(header_key: u32) -> Option<u8> {
    if header_key == 0 {
        None
    } else {
        Some((header_key as u8).rotate_left(2))
    }
}

/// Applies (or removes: it is its own inverse) the version 1 outer cipher to `buf`, whose
/// first byte sits at absolute offset `at`.
pub fn outer_xor(buf: &mut [u8], at: u64, key: Option<u8>) {
    if let Some(k) = key {
        for (i, b) in buf.iter_mut().enumerate() {
            *b ^= k ^ (at.wrapping_add(i as u64) as u8);
        }
    }
}

/// The version 2 per-file checksum over decompressed bytes: `c0 | c1<<8 | c2<<16 | c3<<24`
/// with c0 = Σb, c1 = XOR b, c2 = Σ(b XOR i), c3 = XOR (b + i), i the index mod 256, all
/// mod 256.
pub fn v2_checksum(data: &[u8]) -> u32 {
    let (mut c0, mut c1, mut c2, mut c3) = (0u8, 0u8, 0u8, 0u8);
    for (i, &b) in data.iter().enumerate() {
        let i = i as u8;
        c0 = c0.wrapping_add(b);
        c1 ^= b;
        c2 = c2.wrapping_add(b ^ i);
        c3 ^= b.wrapping_add(i);
    }
    u32::from(c0) | u32::from(c1) << 8 | u32::from(c2) << 16 | u32::from(c3) << 24
}

impl Archive {
    /// The entry's path from the root, components joined by `/` (raw bytes).
    pub fn path(&self, index: usize) -> Vec<u8> {
        let mut parts: Vec<&[u8]> = Vec::new();
        let mut cur = Some(index);
        // Parents precede children, so this walk ends; the bound guards a hand-made model.
        while let Some(i) = cur {
            let Some(e) = self.entries.get(i) else { break };
            parts.push(&e.name);
            if parts.len() > self.entries.len() {
                break;
            }
            cur = e.parent;
        }
        parts.reverse();
        parts.join(&b'/')
    }

    /// The entry's path, lossily decoded.
    pub fn path_str(&self, index: usize) -> String {
        String::from_utf8_lossy(&self.path(index)).into_owned()
    }

    /// Indices of the entries directly in folder `parent` (`None` = root), in order.
    pub fn children(&self, parent: Option<usize>) -> impl Iterator<Item = usize> + '_ {
        self.entries
            .iter()
            .enumerate()
            .filter(move |(_, e)| e.parent == parent)
            .map(|(i, _)| i)
    }

    /// Every file with its index, in directory order.
    pub fn files(&self) -> impl Iterator<Item = (usize, &FileInfo)> + '_ {
        self.entries
            .iter()
            .enumerate()
            .filter_map(|(i, e)| match &e.kind {
                EntryKind::File(f) => Some((i, f)),
                EntryKind::Dir => None,
            })
    }

    /// Whether one folder holds two entries whose names differ only in letter case (or not
    /// at all).
    pub fn has_duplicate_names(&self) -> bool {
        let mut seen = std::collections::HashSet::new();
        self.entries
            .iter()
            .any(|e| !seen.insert((e.parent, e.name.to_ascii_lowercase())))
    }

    /// The index of the entry at `path` (components compared case-insensitively, as the
    /// game's readers do).
    pub fn find(&self, path: &[u8]) -> Option<usize> {
        let want: Vec<&[u8]> = path
            .split(|&b| b == b'/')
            .filter(|c| !c.is_empty())
            .collect();
        let mut parent = None;
        let mut found = None;
        for comp in want {
            let i = self
                .children(parent)
                .find(|&i| self.entries[i].name.eq_ignore_ascii_case(comp))?;
            found = Some(i);
            parent = Some(i);
        }
        found
    }

    /// Decompresses one member, reading only its chunks out of `data` (the whole archive).
    pub fn read(
        &self,
        data: &[u8],
        file: &FileInfo,
        limits: &HpiLimits,
    ) -> Result<Vec<u8>, HpiError> {
        read::read_member(self, &InMemory(data), file, limits)
    }

    /// Decompresses one member, reading only its bytes from `src`.
    pub fn read_from(
        &self,
        src: &dyn Source,
        file: &FileInfo,
        limits: &HpiLimits,
    ) -> Result<Vec<u8>, HpiError> {
        read::read_member(self, src, file, limits)
    }

    /// Decompresses one member into `out` chunk by chunk, reading only its bytes from `src`
    /// (memory: one chunk at a time for version 1; the member's one chunk for version 2).
    /// Each chunk is verified before its bytes are written; on an error `out` may hold the
    /// chunks before it. Returns the bytes written.
    pub fn read_to(
        &self,
        src: &dyn Source,
        file: &FileInfo,
        limits: &HpiLimits,
        out: &mut dyn std::io::Write,
    ) -> Result<u64, HpiError> {
        read::read_member_to(self, src, file, limits, out)
    }

    /// Decompresses one member from its stored bytes alone: `stored` is
    /// `archive[file.offset .. file.offset + file.stored_len]` (so a caller can read just
    /// that range from a file).
    pub fn decode_member(
        &self,
        stored: &[u8],
        file: &FileInfo,
        limits: &HpiLimits,
    ) -> Result<Vec<u8>, HpiError> {
        read::decode_member(self, stored, file, limits)
    }

    /// A member's stored bytes with the outer cipher removed, for [`Member::Stored`].
    pub fn stored_member(&self, data: &[u8], file: &FileInfo) -> Result<StoredMember, HpiError> {
        self.stored_member_from(&InMemory(data), file)
    }

    /// [`Self::stored_member`] reading only the member's bytes from `src`.
    pub fn stored_member_from(
        &self,
        src: &dyn Source,
        file: &FileInfo,
    ) -> Result<StoredMember, HpiError> {
        let stored = read::member_bytes(src, file)?;
        read::stored_member(self, &stored, file)
    }

    /// A member's stored range, to be copied from this archive's bytes when a tree holding
    /// it is written ([`Member::InPlace`]).
    pub fn in_place(&self, file: &FileInfo) -> InPlace {
        InPlace {
            version: self.version,
            method: file.method,
            chunked: file.chunked,
            size: file.size,
            offset: u64::from(file.offset),
            len: file.stored_len,
            key: self.key,
            date: file.date,
            checksum: file.checksum,
        }
    }

    /// The archive as a [`Node`] tree whose files are [`Member::InPlace`]: written with
    /// [`write_to`] from this archive's bytes, every member keeps its stored bytes and none is
    /// held in memory whole.
    pub fn to_tree_in_place(&self) -> Result<Vec<Node>, HpiError> {
        self.tree_with(|f| Ok(Member::InPlace(self.in_place(f))))
    }

    /// The archive as a [`Node`] tree whose files are [`Member::Stored`]: written back with
    /// [`write()`], every member keeps its stored bytes. Replace nodes to repack with changes.
    pub fn to_tree(&self, data: &[u8]) -> Result<Vec<Node>, HpiError> {
        self.to_tree_from(&InMemory(data))
    }

    /// [`Self::to_tree`] reading each member's stored bytes from `src`.
    pub fn to_tree_from(&self, src: &dyn Source) -> Result<Vec<Node>, HpiError> {
        self.tree_with(|f| Ok(Member::Stored(self.stored_member_from(src, f)?)))
    }

    /// The archive as a [`Node`] tree, each file's member made by `member`.
    fn tree_with(
        &self,
        member: impl Fn(&FileInfo) -> Result<Member, HpiError>,
    ) -> Result<Vec<Node>, HpiError> {
        // Build children lists first (entries are parents-first), then assemble bottom-up.
        let n = self.entries.len();
        let mut kids: Vec<Vec<usize>> = vec![Vec::new(); n];
        let mut roots = Vec::new();
        for (i, e) in self.entries.iter().enumerate() {
            match e.parent {
                Some(p) if p < i => kids[p].push(i),
                Some(_) => {
                    return Err(HpiError::malformed(
                        "directory model",
                        0,
                        "child before parent",
                    ))
                }
                None => roots.push(i),
            }
        }
        let mut built: Vec<Option<Node>> = vec![None; n];
        for i in (0..n).rev() {
            let e = &self.entries[i];
            let kind = match &e.kind {
                EntryKind::File(f) => NodeKind::File(member(f)?),
                EntryKind::Dir => {
                    NodeKind::Dir(kids[i].iter().filter_map(|&k| built[k].take()).collect())
                }
            };
            built[i] = Some(Node {
                name: e.name.clone(),
                kind,
            });
        }
        Ok(roots.iter().filter_map(|&r| built[r].take()).collect())
    }

    /// Total decompressed size of every member.
    pub fn total_size(&self) -> u64 {
        self.files().map(|(_, f)| u64::from(f.size)).sum()
    }
}

/// Reads one member of an archive with default limits ([`Archive::read`]).
pub fn read_member(data: &[u8], archive: &Archive, file: &FileInfo) -> Result<Vec<u8>, HpiError> {
    archive.read(data, file, &HpiLimits::default())
}
