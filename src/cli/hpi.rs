//! `tafs hpi …`: list, info, extract, pack.
//!
//! `list` and `info` read the archive's header and directory only; `extract` then reads each
//! member's chunks by range and writes them out chunk by chunk (never the whole archive in
//! memory).

use super::{err, CliError};
use crate::formats::hpi::{
    self, Archive, EntryKind, HpiLimits, Member, Method, Node, NodeKind, Source, Version,
    WriteOptions,
};
use crate::view::archive::FileSource;
use crate::view::safe_component;
use rayon::prelude::*;
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Archives at least this large (decompressed) get a progress bar on a terminal.
const PROGRESS_BYTES: u64 = 16 << 20;

/// `tafs hpi` subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum HpiCmd {
    /// List folders and files with sizes, compression and ratio (no decompression).
    /// Every byte of a member name outside printable ASCII is printed `\xNN` and a backslash
    /// `\\`, so control characters in a name never reach the terminal; `--raw` prints the
    /// names' bytes as stored.
    List {
        /// The archive (.hpi .ufo .ccx .gp3 .gpf).
        archive: PathBuf,
        /// Print member names as their raw bytes, unescaped.
        #[arg(long)]
        raw: bool,
    },
    /// Header facts: version, key, counts, sizes, trailer.
    Info {
        /// The archive.
        archive: PathBuf,
    },
    /// Extract members into a folder (names sanitised; nothing is written outside it).
    Extract {
        /// The archive.
        archive: PathBuf,
        /// Only paths matching this pattern (case-insensitive; `*` and `?` wildcards; a
        /// folder path selects everything under it).
        pattern: Option<String>,
        /// Target folder (created).
        #[arg(short, long)]
        target: PathBuf,
    },
    /// Pack a folder into an archive (written atomically).
    Pack {
        /// The folder whose contents become the archive's root.
        dir: PathBuf,
        /// The archive to write.
        #[arg(short, long)]
        target: PathBuf,
        /// Archive version: v1 (TA) or v2 (TA: Kingdoms).
        #[arg(long, value_enum, default_value_t = FormatArg::V1)]
        format: FormatArg,
        /// Compression of the members.
        #[arg(long, value_enum, default_value_t = MethodArg::Zlib)]
        method: MethodArg,
        /// Version 1 header key, 0..=255, decimal or 0x-hex (0 = no outer cipher; TA's
        /// own LZ77 archives use 0x7D).
        #[arg(long, default_value = "0", value_parser = parse_key)]
        key: u32,
    },
}

/// `--format`.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum FormatArg {
    /// Total Annihilation.
    V1,
    /// TA: Kingdoms.
    V2,
}

/// `--method`.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum MethodArg {
    /// zlib (HPIPack's default; needs TA 3.x / Core Contingency).
    Zlib,
    /// TA's LZ77.
    Lz77,
    /// Stored raw.
    None,
}

fn parse_key(s: &str) -> Result<u32, String> {
    let v = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u32::from_str_radix(h, 16),
        None => s.parse(),
    }
    .map_err(|e| format!("{s}: {e}"))?;
    if v > 0xFF {
        return Err(format!(
            "{s}: keys above 0xFF are read differently by different tools"
        ));
    }
    Ok(v)
}

/// Runs a `tafs hpi` subcommand.
pub fn run(cmd: HpiCmd) -> Result<i32, CliError> {
    match cmd {
        HpiCmd::List { archive, raw } => list(&archive, raw),
        HpiCmd::Info { archive } => info(&archive),
        HpiCmd::Extract {
            archive,
            pattern,
            target,
        } => extract(&archive, pattern.as_deref(), &target),
        HpiCmd::Pack {
            dir,
            target,
            format,
            method,
            key,
        } => pack(&dir, &target, format, method, key),
    }
}

/// Opens the archive file and reads its directory (only the bytes the directory needs).
fn open(path: &Path) -> Result<(FileSource, Archive), CliError> {
    let src =
        FileSource::open(path).map_err(|e| CliError::Msg(format!("{}: {e}", path.display())))?;
    let a = hpi::parse_from(&src, &HpiLimits::default())
        .map_err(|e| CliError::Msg(format!("{}: {e}", path.display())))?;
    Ok((src, a))
}

/// A member path for a terminal: printable ASCII kept, a backslash doubled, every other byte
/// (control characters, DEL, bytes of other code pages) written `\xNN`.
pub fn escape_name(raw: &[u8]) -> String {
    let mut s = String::with_capacity(raw.len());
    for &b in raw {
        match b {
            b'\\' => s.push_str("\\\\"),
            0x20..=0x7e => s.push(b as char),
            _ => s.push_str(&format!("\\x{b:02x}")),
        }
    }
    s
}

fn list(path: &Path, raw: bool) -> Result<i32, CliError> {
    let (_, a) = open(path)?;
    let mut out = std::io::stdout().lock();
    let name = |i: usize| -> Vec<u8> {
        let p = a.path(i);
        if raw {
            p
        } else {
            escape_name(&p).into_bytes()
        }
    };
    writeln!(
        out,
        "{:>10} {:>10} {:>6} {:>6}  path",
        "size", "stored", "method", "ratio"
    )?;
    let (mut size, mut stored) = (0u64, 0u64);
    for (i, e) in a.entries.iter().enumerate() {
        match &e.kind {
            EntryKind::Dir => {
                write!(out, "{:>10} {:>10} {:>6} {:>6}  ", "-", "-", "dir", "")?;
                out.write_all(&name(i))?;
                out.write_all(b"/\n")?;
            }
            EntryKind::File(f) => {
                size += u64::from(f.size);
                stored += f.stored_len;
                write!(
                    out,
                    "{:>10} {:>10} {:>6} {:>6}  ",
                    f.size,
                    f.stored_len,
                    f.method.name(),
                    format!("{:.2}", f.ratio()),
                )?;
                out.write_all(&name(i))?;
                out.write_all(b"\n")?;
            }
        }
    }
    let ratio = if stored == 0 {
        0.0
    } else {
        size as f64 / stored as f64
    };
    writeln!(
        out,
        "{size:>10} {stored:>10} {:>6} {:>6}  {} files",
        "",
        format!("{ratio:.2}"),
        a.files().count()
    )?;
    Ok(0)
}

fn info(path: &Path) -> Result<i32, CliError> {
    let (src, a) = open(path)?;
    let mut out = std::io::stdout().lock();
    let files = a.files().count();
    let mut methods: HashMap<&str, usize> = HashMap::new();
    for (_, f) in a.files() {
        *methods.entry(f.method.name()).or_default() += 1;
    }
    let mut methods: Vec<String> = methods
        .into_iter()
        .map(|(m, n)| format!("{m} {n}"))
        .collect();
    methods.sort();
    let stored: u64 = a.files().map(|(_, f)| f.stored_len).sum();
    writeln!(out, "file:       {}", path.display())?;
    writeln!(out, "bytes:      {}", src.len())?;
    match a.version {
        Version::V1 => {
            writeln!(out, "version:    1 (Total Annihilation)")?;
            writeln!(
                out,
                "key:        {:#04x}{}",
                a.key,
                if a.key == 0 { " (no outer cipher)" } else { "" }
            )?;
            if !a.dir_padding.is_empty() {
                writeln!(out, "dir pad:    {} bytes", a.dir_padding.len())?;
            }
        }
        Version::V2 => {
            writeln!(out, "version:    2 (TA: Kingdoms)")?;
            writeln!(out, "last78:     {:#x}", a.last78)?;
        }
    }
    writeln!(out, "folders:    {}", a.entries.len() - files)?;
    writeln!(out, "files:      {files} ({})", methods.join(", "))?;
    writeln!(
        out,
        "size:       {} bytes decompressed, {stored} stored",
        a.total_size()
    )?;
    writeln!(out, "trailer:    {:?}", String::from_utf8_lossy(&a.trailer))?;
    Ok(0)
}

/// Case-insensitive wildcard match (`*` any run, `?` one byte) over whole paths.
fn glob(pat: &[u8], s: &[u8]) -> bool {
    let (mut p, mut i) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while i < s.len() {
        if p < pat.len() && (pat[p] == b'?' || pat[p].eq_ignore_ascii_case(&s[i])) {
            p += 1;
            i += 1;
        } else if p < pat.len() && pat[p] == b'*' {
            star = Some(p);
            mark = i;
            p += 1;
        } else if let Some(sp) = star {
            p = sp + 1;
            mark += 1;
            i = mark;
        } else {
            return false;
        }
    }
    pat[p..].iter().all(|&c| c == b'*')
}

/// Whether the entry at `path` is selected: it matches, or a folder above it matches.
fn selected(pattern: Option<&str>, a: &Archive, index: usize) -> bool {
    let Some(pat) = pattern else { return true };
    let pat = pat.trim_matches('/').as_bytes();
    let mut cur = Some(index);
    while let Some(i) = cur {
        if glob(pat, &a.path(i)) {
            return true;
        }
        cur = a.entries[i].parent;
    }
    false
}

/// Where each entry goes: sanitised components; exact collisions after sanitising get a
/// `~N` suffix. Returns the relative paths and the warnings to print.
pub fn plan_paths(a: &Archive) -> (Vec<PathBuf>, Vec<String>) {
    let mut rel: Vec<PathBuf> = Vec::with_capacity(a.entries.len());
    let mut warnings = Vec::new();
    let mut exact: HashMap<PathBuf, usize> = HashMap::new();
    let mut folded: HashMap<String, usize> = HashMap::new();
    for (i, e) in a.entries.iter().enumerate() {
        let base = e
            .parent
            .and_then(|p| rel.get(p).cloned())
            .unwrap_or_default();
        let name = safe_component(&e.name);
        if name.as_bytes() != e.name.as_slice() {
            warnings.push(format!("{}: written as {name}", a.path_str(i)));
        }
        let mut p = base.join(&name);
        if let Some(&j) = exact.get(&p) {
            let mut n = 2;
            while exact.contains_key(&p) {
                p = base.join(format!("{name}~{n}"));
                n += 1;
            }
            warnings.push(format!(
                "{}: same name as {} after sanitising; written as {}",
                a.path_str(i),
                a.path_str(j),
                p.display()
            ));
        }
        exact.insert(p.clone(), i);
        let key = p.to_string_lossy().to_lowercase();
        if let Some(&j) = folded.get(&key) {
            warnings.push(format!(
                "{} and {} differ only in case (they collide on case-insensitive file systems)",
                a.path_str(j),
                a.path_str(i)
            ));
        } else {
            folded.insert(key, i);
        }
        rel.push(p);
    }
    (rel, warnings)
}

/// Creates `dir` (and its parents under `root`), refusing to pass through symlinks.
fn make_dir(root: &Path, rel: &Path) -> Result<(), CliError> {
    let mut p = root.to_path_buf();
    for c in rel.components() {
        p.push(c);
        match std::fs::create_dir(&p) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let m = std::fs::symlink_metadata(&p)?;
                if !m.is_dir() || m.file_type().is_symlink() {
                    return err(format!("{}: exists and is not a folder", p.display()));
                }
            }
            Err(e) => return err(format!("{}: {e}", p.display())),
        }
    }
    Ok(())
}

fn extract(path: &Path, pattern: Option<&str>, target: &Path) -> Result<i32, CliError> {
    let (src, a) = open(path)?;
    let (rel, warnings) = plan_paths(&a);
    for w in &warnings {
        eprintln!("warning: {w}");
    }
    std::fs::create_dir_all(target)
        .map_err(|e| CliError::Msg(format!("{}: {e}", target.display())))?;
    let chosen: Vec<usize> = (0..a.entries.len())
        .filter(|&i| selected(pattern, &a, i))
        .collect();
    if pattern.is_some() && chosen.is_empty() {
        return err(format!(
            "{}: nothing matches {:?}",
            path.display(),
            pattern.unwrap_or_default()
        ));
    }
    // Folders first (parents precede children), then files in parallel.
    for &i in &chosen {
        match a.entries[i].kind {
            EntryKind::Dir => make_dir(target, &rel[i])?,
            EntryKind::File(_) => {
                if let Some(parent) = rel[i].parent() {
                    make_dir(target, parent)?;
                }
            }
        }
    }
    let files: Vec<(usize, &hpi::FileInfo)> = chosen
        .iter()
        .filter_map(|&i| match &a.entries[i].kind {
            EntryKind::File(f) => Some((i, f)),
            EntryKind::Dir => None,
        })
        .collect();
    let bar = super::progress::bytes(
        files.iter().map(|(_, f)| u64::from(f.size)).sum(),
        PROGRESS_BYTES,
    );
    let limits = HpiLimits::default();
    let failures: Vec<String> = files
        .par_iter()
        .filter_map(|&(i, f)| {
            let p = target.join(&rel[i]);
            let r = write_member(&p, |out| a.read_to(&src, f, &limits, out));
            bar.inc(u64::from(f.size));
            r.err().map(|e| format!("{}: {e}", a.path_str(i)))
        })
        .collect();
    bar.finish_and_clear();
    for f in &failures {
        eprintln!("error: {f}");
    }
    if failures.is_empty() {
        Ok(0)
    } else {
        err(format!(
            "{} of {} members failed",
            failures.len(),
            files.len()
        ))
    }
}

/// Writes one extracted member with `fill` (which writes it chunk by chunk), refusing to
/// write through an existing symlink; a member that fails is not left half written.
fn write_member(
    p: &Path,
    fill: impl FnOnce(&mut dyn Write) -> Result<u64, hpi::HpiError>,
) -> Result<(), String> {
    let io = |e: std::io::Error| format!("{}: {e}", p.display());
    if let Ok(m) = std::fs::symlink_metadata(p) {
        if m.file_type().is_symlink() || m.is_dir() {
            return Err(io(std::io::Error::other(
                "exists and is not a regular file",
            )));
        }
    }
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::fs::File::create(p).map_err(io)?);
    let r = fill(&mut out)
        .map_err(|e| e.to_string())
        .and_then(|_| out.flush().map_err(io));
    drop(out);
    if r.is_err() {
        let _ = std::fs::remove_file(p);
    }
    r
}

/// Reads a folder into a tree: entries sorted by name bytes; symlinks skipped.
fn read_tree(dir: &Path, depth: usize, total: &mut u64) -> Result<Vec<Node>, CliError> {
    use std::os::unix::ffi::OsStrExt;
    if depth > 64 {
        return err(format!("{}: folders nested deeper than 64", dir.display()));
    }
    let rd =
        std::fs::read_dir(dir).map_err(|e| CliError::Msg(format!("{}: {e}", dir.display())))?;
    let mut items = Vec::new();
    for e in rd {
        let e = e?;
        items.push((e.file_name().as_bytes().to_vec(), e.path()));
    }
    items.sort();
    let mut out = Vec::with_capacity(items.len());
    for (name, p) in items {
        let m = std::fs::symlink_metadata(&p)?;
        if m.file_type().is_symlink() {
            eprintln!("warning: {}: symlink skipped", p.display());
        } else if m.is_dir() {
            out.push(Node::dir(name, read_tree(&p, depth + 1, total)?));
        } else if m.is_file() {
            let len = m.len();
            *total += len;
            let date = m
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| u32::try_from(d.as_secs()).unwrap_or(u32::MAX));
            // read when the writer reaches it, so packing holds a window of files, not all
            let what = p.display().to_string();
            let fetch: hpi::Fetch = std::sync::Arc::new(move || std::fs::read(&p));
            out.push(Node {
                name,
                kind: NodeKind::File(Member::Deferred(hpi::Deferred {
                    what,
                    date,
                    len,
                    fetch,
                })),
            });
        }
    }
    Ok(out)
}

fn pack(
    dir: &Path,
    target: &Path,
    format: FormatArg,
    method: MethodArg,
    key: u32,
) -> Result<i32, CliError> {
    let mut total = 0;
    let tree = read_tree(dir, 0, &mut total)?;
    let mut opts = match format {
        FormatArg::V1 => WriteOptions::v1(),
        FormatArg::V2 => WriteOptions::v2(),
    };
    opts.method = match method {
        MethodArg::Zlib => Method::Zlib,
        MethodArg::Lz77 => Method::Lz77,
        MethodArg::None => Method::None,
    };
    opts.key = key;
    if opts.version == Version::V2 && key != 0 {
        return err("--key applies to version 1 archives only");
    }
    if opts.version == Version::V2 && opts.method == Method::Lz77 {
        eprintln!("warning: LZ77 in a version 2 archive is not known to be read by TA: Kingdoms");
    }
    let bar = super::progress::bytes(total, PROGRESS_BYTES);
    if !bar.is_hidden() {
        bar.set_message("compressing");
        bar.enable_steady_tick(std::time::Duration::from_millis(200));
    }
    crate::atomic::replace_seekable(target, |w| {
        hpi::write_to(&tree, &opts, None, w)
            .map(drop)
            .map_err(|e| CliError::Msg(format!("{}: {e}", dir.display())))
    })
    .map_err(|e| match e {
        CliError::Io(io) => CliError::Msg(format!("{}: {io}", target.display())),
        e => e,
    })?;
    bar.finish_and_clear();
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_matches() {
        assert!(glob(b"maps/*.tnt", b"MAPS/Example.TNT"));
        assert!(glob(b"*", b"a/b/c"));
        assert!(glob(b"a?c", b"abc"));
        assert!(!glob(b"a?c", b"ac"));
        assert!(!glob(b"maps/*.tnt", b"maps/x.ota"));
        assert!(glob(b"*x*y", b"axbxcy"));
    }

    #[test]
    fn keys() {
        assert_eq!(parse_key("0x7D"), Ok(0x7D));
        assert_eq!(parse_key("175"), Ok(0xAF));
        assert!(parse_key("256").is_err());
    }
}
