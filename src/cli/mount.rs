//! `tafs mount` / `tafs umount`.

use super::{demo, runfile, CliError};
use crate::fs::fuse::{mount, mount_merged, MountConfig};
use crate::fs::merged::Target;
use crate::fs::MountOptions;
use crate::sys;
use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Arguments of `tafs mount`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  tafs mount ~/ta ~/ta-mnt\n  tafs mount --demo /tmp/tafs-demo\n  tafs mount --merged ~/ta ~/ta-game\n  tafs mount --merged --priority mymod.ufo,loose ~/ta ~/ta-game\n  tafs mount --merged --into mods/mymod.ufo ~/ta ~/ta-game   (edit the game, every change lands in the mod)"
)]
pub struct MountArgs {
    /// GAME_DIR MOUNTPOINT (with --demo: only MOUNTPOINT).
    #[arg(value_name = "PATHS", num_args = 1..=2, required = true)]
    pub paths: Vec<PathBuf>,
    /// Mount a sample game folder the crate writes itself (in a temporary folder).
    #[arg(long)]
    pub demo: bool,
    /// Detach: return once the mount is live (or failed), serve in the background.
    #[arg(short, long)]
    pub daemon: bool,
    /// Log file of the background process (default: logs are discarded).
    #[arg(long, value_name = "FILE", requires = "daemon")]
    pub log: Option<PathBuf>,
    /// Refuse every write (EROFS).
    #[arg(long)]
    pub ro: bool,
    /// Mount options: allow_other, allow_root, ro, rw, [no]atime, [no]exec, [a]sync, dirsync; anything else goes to the kernel as is
    #[arg(short = 'o', value_name = "OPT[,OPT…]", value_delimiter = ',')]
    pub options: Vec<String>,
    /// Owner shown for every file.
    #[arg(long)]
    pub uid: Option<u32>,
    /// Group shown for every file.
    #[arg(long)]
    pub gid: Option<u32>,
    /// Memory for generated files (e.g. 256M, 1G).
    #[arg(long, default_value = "256M", value_parser = parse_size)]
    pub cache_size: u64,
    /// Largest archive member the mount decompresses (bigger ones are listed, and answer EIO).
    #[arg(long, default_value = "64M", value_parser = parse_size)]
    pub max_member_size: u64,
    /// Seconds the kernel may cache names and attributes when GAME_DIR is not watched
    /// (while it is, the kernel caches until a change is seen).
    #[arg(long, default_value_t = 1.0)]
    pub ttl: f64,
    /// Do not watch GAME_DIR (inotify): poll it, every request checking the binary and the
    /// kernel caching for --ttl only.
    #[arg(long)]
    pub no_watch: bool,
    /// Threads serving requests (at least 2).
    #[arg(long, default_value_t = 4)]
    pub threads: usize,
    /// Where write-back keeps staged files and history (default: $XDG_STATE_HOME/tafs or
    /// ~/.local/state/tafs).
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// Saves of one asset less than this many seconds apart are one operation, whose
    /// commits keep one version in the history (the binary before the operation).
    #[arg(long, value_name = "SECONDS", default_value_t = 2.0)]
    pub operation_gap: f64,
    /// An archive's plain-member saves, deletions and folders commit together once no such
    /// save came for this many seconds (at the latest 5 s after the first; 0: each at once);
    /// an fsync commits at once.
    #[arg(long, value_name = "SECONDS", default_value_t = 0.25)]
    pub archive_commit_delay: f64,
    /// Show the game as the game sees it (read-only unless --into): loose files and the members of every
    /// archive at the top of GAME_DIR overlaid, folders merged ignoring case.
    #[arg(long)]
    pub merged: bool,
    /// With --merged: which source wins, highest first: `loose`, extensions (gp3 gpf ccx ufo
    /// hpi) and archive names, comma-separated; put in front of the default
    /// loose,gp3,gpf,ccx,ufo,hpi (archives of one rank: by name, A first).
    #[arg(long, value_name = "LIST", requires = "merged")]
    pub priority: Option<String>,
    /// With --merged: make the view writable, every change landing in TARGET (a folder, or an
    /// archive .hpi .ufo .ccx .gp3 .gpf; created when missing), which wins over every other
    /// source. A relative TARGET is relative to GAME_DIR.
    #[arg(
        long,
        value_name = "TARGET",
        requires = "merged",
        conflicts_with = "ro"
    )]
    pub into: Option<PathBuf>,
}

/// Arguments of `tafs which`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  tafs which ~/ta units/armcom.fbi\n  tafs which --all ~/ta anims/cursors.gaf\n  tafs which --all ~/ta-game/units/armcom.fbi   (a path in a --merged mount)"
)]
pub struct WhichArgs {
    /// GAME_DIR PATH (PATH in the merged view, any letter case), or one path inside a
    /// `tafs mount --merged` mount.
    #[arg(value_name = "PATHS", num_args = 1..=2, required = true)]
    pub paths: Vec<PathBuf>,
    /// Print every source holding the path, highest priority first (the first wins, the
    /// others are shadowed).
    #[arg(short, long)]
    pub all: bool,
    /// Priority list, as for `tafs mount --merged` (with GAME_DIR only).
    #[arg(long, value_name = "LIST")]
    pub priority: Option<String>,
    /// The mod of `tafs mount --merged --into TARGET` (with GAME_DIR only; relative to it):
    /// TARGET is the first source, and no source below it.
    #[arg(long, value_name = "TARGET")]
    pub into: Option<PathBuf>,
}

/// Runs `tafs which`.
pub fn which(a: WhichArgs) -> Result<i32, CliError> {
    use crate::fs::merged::{scan_excluding, SOURCES_XATTR, SOURCE_XATTR};
    let lines: Vec<String> = match a.paths.as_slice() {
        [p] => {
            if a.priority.is_some() || a.into.is_some() {
                return super::err(
                    "--priority and --into need GAME_DIR (a mount has its own order and mod)",
                );
            }
            let name = if a.all { SOURCES_XATTR } else { SOURCE_XATTR };
            let v = sys::getxattr(p, name).map_err(|e| {
                msg(format!(
                    "{}: {name}: {e} (is it a path in a `tafs mount --merged` mount?)",
                    p.display()
                ))
            })?;
            String::from_utf8_lossy(&v)
                .lines()
                .map(str::to_string)
                .collect()
        }
        [game, path] => {
            let priority = parse_priority(a.priority.as_deref())?;
            let gerr = |e: crate::fs::FsError| msg(format!("{}: {e}", game.display()));
            let target = match &a.into {
                Some(t) => Some(target_of(&game.join(t))?),
                None => None,
            };
            let exclude = match &target {
                Some(t) => crate::fs::merged::exclude_of(game, t).map_err(gerr)?,
                None => None,
            };
            let snap = scan_excluding(game, &priority, exclude.as_deref()).map_err(gerr)?;
            let path = path.to_string_lossy().replace('\\', "/");
            let top = target
                .as_ref()
                .and_then(|t| crate::fs::merged::mod_source(t, &path));
            // Inside an exploded GAF/TNT: the binary's sources.
            let mut node = None;
            let mut prefix = String::new();
            for comp in path.split('/').filter(|c| !c.is_empty() && *c != ".") {
                prefix = if prefix.is_empty() {
                    comp.to_string()
                } else {
                    format!("{prefix}/{comp}")
                };
                match snap.index.find_any(&prefix) {
                    Some(n) => node = Some(n),
                    None if node.is_some_and(|n| !snap.index.is_dir(n)) => break,
                    None if top.is_some() => {
                        node = None;
                        break;
                    }
                    None => {
                        return super::err(format!("{path}: in no source of {}", game.display()))
                    }
                }
            }
            if let (Some(t), None) = (&top, node) {
                // only the mod has it
                outln!("{t}");
                return Ok(0);
            }
            let n = node.unwrap_or(crate::view::merged::ROOT_NODE);
            if let Some(h) = snap.index.hidden_by(n) {
                let by = snap.sources_of(h).into_iter().next().unwrap_or_default();
                eprintln!("tafs: {path}: not in the merged view: hidden by the file {by}");
                if !a.all {
                    return Ok(1);
                }
            }
            top.into_iter().chain(snap.sources_of(n)).collect()
        }
        _ => return super::err("which needs GAME_DIR PATH, or one path in a merged mount"),
    };
    let shown = if a.all {
        &lines[..]
    } else {
        &lines[..lines.len().min(1)]
    };
    for l in shown {
        outln!("{l}");
    }
    Ok(0)
}

/// The mod at `path` as `tafs mount --merged --into` takes it (without creating it).
fn target_of(path: &Path) -> Result<Target, CliError> {
    let abs = std::path::absolute(path)?;
    let archive = abs
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(crate::view::archive::is_archive_name);
    match std::fs::metadata(&abs) {
        Ok(m) if m.is_dir() => Ok(Target::Folder(abs)),
        Ok(m) if m.is_file() && archive => Ok(Target::Archive(abs)),
        Ok(_) => super::err(format!(
            "--into {}: not a folder or an archive",
            abs.display()
        )),
        Err(e) => super::err(format!("--into {}: {e}", abs.display())),
    }
}

fn parse_priority(s: Option<&str>) -> Result<crate::view::merged::Priority, CliError> {
    match s {
        Some(s) => s.parse().map_err(|e| msg(format!("--priority: {e}"))),
        None => Ok(Default::default()),
    }
}

/// Arguments of `tafs status`.
#[derive(clap::Args, Debug)]
pub struct StatusArgs {
    /// The mountpoint (or an asset directory in it).
    pub path: PathBuf,
}

/// Arguments of `tafs diff`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Each line: M (differs from the stock file it shadows), = (the same bytes) or A (new), the path in the mod, and the source it shadows."
)]
pub struct DiffArgs {
    /// The mountpoint of a `tafs mount --merged --into TARGET` mount.
    pub path: PathBuf,
}

/// Runs `tafs diff`: lists the files of the mod compared with what they shadow.
pub fn diff(a: DiffArgs) -> Result<i32, CliError> {
    let p = a.path.join(crate::fs::merged::MOD_DIFF_NAME);
    let text = std::fs::read_to_string(&p).map_err(|e| {
        msg(format!(
            "{}: {e} (is it a `tafs mount --merged --into` mount?)",
            p.display()
        ))
    })?;
    outp!("{text}");
    Ok(0)
}

/// Arguments of `tafs history`.
#[derive(clap::Args, Debug)]
pub struct HistoryArgs {
    /// The binary in the game folder (not in the mount), e.g. ~/ta/anims/fx.gaf.
    pub binary: PathBuf,
    /// The state directory the mount used.
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
}

/// Arguments of `tafs restore`.
#[derive(clap::Args, Debug)]
pub struct RestoreArgs {
    /// The binary in the game folder (not in the mount), e.g. ~/ta/anims/fx.gaf.
    pub binary: PathBuf,
    /// Version to restore: its number in `tafs history` (1 = the newest, the default).
    #[arg(value_name = "VERSION", conflicts_with = "original")]
    pub number: Option<usize>,
    /// Restore the original: the oldest version kept, the binary as it was before its first
    /// commit (never evicted from the history).
    #[arg(long)]
    pub original: bool,
    /// The state directory the mount used.
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
}

/// Runs `tafs status`: prints the status file of the mount or asset directory (and, at a
/// mount root, what the balance tables' saves did).
pub fn status(a: StatusArgs) -> Result<i32, CliError> {
    let p = a.path.join(".tafs-status");
    let text = std::fs::read_to_string(&p).map_err(|e| {
        msg(format!(
            "{}: {e} (is it a tafs mount with write-back?)",
            p.display()
        ))
    })?;
    outp!("{text}");
    // the saves of the balance tables (at the mount root only)
    let tables = a.path.join(crate::fs::tables::DIR_NAME).join("status");
    if let Ok(t) = std::fs::read_to_string(tables) {
        if !t.is_empty() {
            outp!("tables:\n{t}");
        }
    }
    let bad = text
        .lines()
        .any(|l| l.ends_with(": error") || l.ends_with(": conflict"));
    Ok(if bad { 1 } else { 0 })
}

fn history_list(
    binary: &Path,
    state_dir: Option<&Path>,
) -> Result<(PathBuf, PathBuf, Vec<PathBuf>), CliError> {
    let state = state_dir.map_or_else(crate::fs::stage::default_state_dir, Path::to_path_buf);
    let abs = std::path::absolute(binary)?;
    let v = crate::fs::stage::history_of(&crate::fs::stage::history_dir(&state, &abs));
    Ok((state, abs, v))
}

/// Why the kept version `bytes` of `binary` would not be a working binary (it does not
/// decode as what the binary's name says it is); `None` when it decodes.
/// Why the version of `binary` kept at `path` does not decode, if it does not: an archive's
/// directory is read by range, other binaries whole (their codecs' limits bound them).
fn version_file_broken(binary: &Path, path: &Path) -> Option<String> {
    let name = binary.file_name()?.to_str()?;
    if crate::view::archive::is_archive_name(name) {
        let limits = crate::formats::hpi::HpiLimits::default();
        return match crate::view::archive::FileSource::open(path) {
            Ok(src) => crate::formats::hpi::parse_from(&src, &limits)
                .err()
                .map(|e| e.to_string()),
            Err(e) => Some(e.to_string()),
        };
    }
    match std::fs::read(path) {
        Ok(b) => version_broken(binary, &b),
        Err(e) => Some(e.to_string()),
    }
}

fn version_broken(binary: &Path, bytes: &[u8]) -> Option<String> {
    let name = binary.file_name()?.to_str()?;
    if crate::view::archive::is_archive_name(name) {
        let limits = crate::formats::hpi::HpiLimits::default();
        return crate::formats::hpi::parse(bytes, &limits)
            .err()
            .map(|e| e.to_string());
    }
    let kind = crate::view::AssetKind::from_name(name)?;
    crate::view::open(kind, bytes, &crate::view::ViewOptions::default())
        .err()
        .map(|e| e.to_string())
}

/// Runs `tafs history`: lists the kept versions of a binary, newest first; a version that
/// does not decode is marked so (`tafs restore` refuses it).
pub fn history(a: HistoryArgs) -> Result<i32, CliError> {
    let (_, abs, v) = history_list(&a.binary, a.state_dir.as_deref())?;
    for (i, p) in v.iter().rev().enumerate() {
        let len = std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
        let broken = version_file_broken(&abs, p);
        let original = if i + 1 == v.len() { "\toriginal" } else { "" };
        match broken {
            None => outln!("{}\t{len} bytes\t{}{original}", i + 1, p.display()),
            Some(e) => outln!(
                "{}\t{len} bytes\t{}{original}\tbroken: {e}",
                i + 1,
                p.display()
            ),
        }
    }
    Ok(0)
}

/// Runs `tafs restore`: puts a kept version back (atomically; the current one is kept too).
pub fn restore(a: RestoreArgs) -> Result<i32, CliError> {
    let (state, abs, v) = history_list(&a.binary, a.state_dir.as_deref())?;
    let n = if a.original {
        v.len().max(1)
    } else {
        a.number.unwrap_or(1)
    };
    let Some(p) = v.iter().rev().nth(n.saturating_sub(1)).filter(|_| n > 0) else {
        return super::err(format!("{}: no version {n} in the history", abs.display()));
    };
    if let Some(e) = version_file_broken(&abs, p) {
        return super::err(format!(
            "{}: version {n} ({}) does not decode, not restored: {e}",
            abs.display(),
            p.display()
        ));
    }
    // both copied file to file, never whole into memory (archives can be large)
    let mut version = std::fs::File::open(p)?;
    let cur = std::fs::metadata(&abs).ok();
    if let Some(m) = &cur {
        // the version being replaced goes to the history too (restoring can be undone)
        let current = std::fs::File::open(&abs)?;
        crate::fs::stage::Stage::load(&state, &abs)
            .push_history_file(&current, Some((abs.as_path(), m)))?;
    }
    crate::atomic::write_seekable(&abs, cur.as_ref(), |w| {
        std::io::copy(&mut version, w).map(|_| ())
    })?;
    outln!("restored {} from {}", abs.display(), p.display());
    Ok(0)
}

/// Arguments of `tafs umount`.
#[derive(clap::Args, Debug)]
pub struct UmountArgs {
    /// The mountpoint.
    pub mountpoint: PathBuf,
    /// Detach now even if busy; the mount goes away when no longer used.
    #[arg(short, long)]
    pub lazy: bool,
}

/// Parses `256M`, `1G`, `64k`, `1000`: binary units, also when spelled `MB` or `MiB`.
pub fn parse_size(s: &str) -> Result<u64, String> {
    parse_size::Config::new()
        .with_binary()
        .parse_size(s.trim())
        .map_err(|e| format!("{:?}: expected a size like 256M or 1G ({e})", s.trim()))
}

fn msg(s: impl Into<String>) -> CliError {
    CliError::Msg(s.into())
}

/// Clears a stale mount ("Transport endpoint is not connected") at `mnt`: a FUSE mount
/// whose daemon is gone (killed, OOM-killed). `stat` alone does not tell: the kernel may
/// answer it from the root's attributes it still caches; `statfs` always asks the daemon.
fn clear_stale(mnt: &Path) -> Result<(), CliError> {
    let dead = |e: std::io::Error| e.raw_os_error() == Some(libc::ENOTCONN);
    let stale =
        std::fs::metadata(mnt).err().is_some_and(dead) || sys::statvfs(mnt).err().is_some_and(dead);
    if stale {
        log::warn!("{}: clearing a stale mount", mnt.display());
        sys::umount(mnt, true).map_err(|e| {
            msg(format!(
                "{}: stale mount, cannot clear it: {e}",
                mnt.display()
            ))
        })?;
    }
    Ok(())
}

fn check_mountpoint(mnt: &Path) -> Result<(), CliError> {
    clear_stale(mnt)?;
    let meta =
        std::fs::metadata(mnt).map_err(|e| msg(format!("mountpoint {}: {e}", mnt.display())))?;
    if !meta.is_dir() {
        return Err(msg(format!(
            "mountpoint {}: not a directory",
            mnt.display()
        )));
    }
    let mut rd =
        std::fs::read_dir(mnt).map_err(|e| msg(format!("mountpoint {}: {e}", mnt.display())))?;
    if rd.next().is_some() {
        return Err(msg(format!(
            "mountpoint {}: not empty (mounting would hide its files)",
            mnt.display()
        )));
    }
    Ok(())
}

/// Runs `tafs mount`.
pub fn run(a: MountArgs) -> Result<i32, CliError> {
    crate::fs::return_big_buffers();
    let merged = match a.merged {
        true => Some(parse_priority(a.priority.as_deref())?),
        false => None,
    };
    let (game_arg, mnt) = match (a.demo, a.paths.as_slice()) {
        (true, [m]) => (None, m.clone()),
        (false, [g, m]) => (Some(g.clone()), m.clone()),
        (true, _) => return super::err("mount --demo takes only the MOUNTPOINT"),
        (false, _) => {
            return super::err("mount needs GAME_DIR and MOUNTPOINT (or --demo MOUNTPOINT)")
        }
    };
    if !Path::new("/dev/fuse").exists() {
        return super::err("/dev/fuse is missing: load the fuse module (modprobe fuse) or, in a container, pass the device (--device /dev/fuse)");
    }
    if let Some(g) = &game_arg {
        match std::fs::metadata(g) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => return super::err(format!("game folder {}: not a directory", g.display())),
            Err(e) => return super::err(format!("game folder {}: {e}", g.display())),
        }
    }
    check_mountpoint(&mnt)?;
    let mnt = std::path::absolute(&mnt)?;
    if !a.ttl.is_finite() || a.ttl < 0.0 || a.ttl > 3600.0 {
        return super::err("--ttl: expected seconds between 0 and 3600");
    }

    // The demo folder is owned by the serving process, which removes it when done.
    let (game_dir, demo_dir) = match game_arg {
        Some(g) => (std::path::absolute(g)?, None),
        None => {
            let d = tempfile::Builder::new()
                .prefix("tafs-demo-")
                .tempdir()?
                .keep();
            demo::write_demo(&d)?;
            (d.clone(), Some(d))
        }
    };

    let mut cfg = MountConfig {
        threads: a.threads.max(2),
        fsname: format!("tafs:{}", game_dir.display()),
        ..MountConfig::default()
    };
    for o in a.options.iter().filter(|o| !o.is_empty()) {
        match o.as_str() {
            "allow_other" => cfg.allow_other = true,
            "allow_root" => cfg.allow_root = true,
            // (the mount's mode: --ro, -o ro, --merged without --into, checked below)
            "ro" | "rw" => {}
            other => cfg.extra.push(other.to_string()),
        }
    }
    let into = match &a.into {
        Some(t) => {
            if a.options.iter().any(|o| o == "ro") {
                return super::err("--into makes the view writable: it cannot be mounted ro");
            }
            // made ready by the serving process (after a fork: creating an archive starts
            // threads)
            Some(game_dir.join(t))
        }
        None => None,
    };
    let opts = MountOptions {
        read_only: a.ro
            || a.options.iter().any(|o| o == "ro")
            || (merged.is_some() && into.is_none()),
        cache_size: a.cache_size,
        archive_limits: crate::formats::hpi::HpiLimits {
            max_member_size: a.max_member_size,
            ..MountOptions::default().archive_limits
        },
        ttl: Duration::from_secs_f64(a.ttl),
        watch: !a.no_watch,
        uid: a.uid,
        gid: a.gid,
        operation_gap: Duration::try_from_secs_f64(a.operation_gap)
            .map_err(|e| msg(format!("--operation-gap {}: {e}", a.operation_gap)))?,
        archive_commit_delay: Duration::try_from_secs_f64(a.archive_commit_delay).map_err(|e| {
            msg(format!(
                "--archive-commit-delay {}: {e}",
                a.archive_commit_delay
            ))
        })?,
        state_dir: Some(match a.state_dir {
            Some(d) => std::path::absolute(d)?,
            None => crate::fs::stage::default_state_dir(),
        }),
        ..MountOptions::default()
    };
    if opts.read_only && a.options.iter().any(|o| o == "rw") {
        return super::err(
            "-o rw: this mount is read-only (--ro, -o ro, or --merged without --into)",
        );
    }

    let mut status: Option<std::fs::File> = None;
    if a.daemon {
        match daemonize(a.log.as_deref())? {
            Fork::Parent(code) => return Ok(code),
            Fork::Child(w) => status = Some(w),
        }
    }
    let result = serve(
        &game_dir,
        &mnt,
        opts,
        merged.map(|p| (p, into)),
        &cfg,
        status,
        demo_dir.is_some(),
    );
    if let Some(d) = demo_dir {
        let _ = std::fs::remove_dir_all(d);
    }
    result
}

enum Fork {
    Parent(i32),
    Child(std::fs::File),
}

/// How often a mount under systemd (`NOTIFY_SOCKET`) looks whether its status changed.
const STATUS_EVERY: Duration = Duration::from_secs(2);

/// Forks (before any thread exists). The parent waits for the child to report that the
/// mount is live ("ok") or why it failed, and returns the exit code; the child gets the
/// write end of that report pipe, a new session, and stdio on /dev/null (stderr on `log`).
fn daemonize(log: Option<&Path>) -> Result<Fork, CliError> {
    use nix::unistd::{dup2_stderr, dup2_stdin, dup2_stdout, ForkResult};
    let log_file = match log {
        Some(p) => Some(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .map_err(|e| msg(format!("{}: {e}", p.display())))?,
        ),
        None => None,
    };
    let null = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")?;
    let (r, w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(std::io::Error::from)?;
    // SAFETY: the process is single-threaded here (no thread is started before this point),
    // so the child may keep running Rust code.
    match unsafe { nix::unistd::fork() }.map_err(std::io::Error::from)? {
        ForkResult::Parent { child } => {
            drop(w);
            let mut report = String::new();
            let _ = std::fs::File::from(r).read_to_string(&mut report);
            Ok(Fork::Parent(match report.strip_prefix("ok") {
                Some(_) => {
                    outln!("tafs: mounted (pid {child})");
                    0
                }
                None if report.is_empty() => {
                    eprintln!("tafs: the background process exited before mounting");
                    1
                }
                None => {
                    eprintln!("tafs: {}", report.trim_end());
                    1
                }
            }))
        }
        ForkResult::Child => {
            drop(r);
            // a new session: the terminal's hang-up and Ctrl-C no longer reach the daemon
            let _ = nix::unistd::setsid();
            let _ = dup2_stdin(&null);
            let _ = dup2_stdout(&null);
            let _ = dup2_stderr(log_file.as_ref().map_or(null.as_fd(), |f| f.as_fd()));
            Ok(Fork::Child(std::fs::File::from(w)))
        }
    }
}

/// Blocks SIGINT, SIGTERM and SIGHUP in this thread and every thread started after it, so
/// that only the thread waiting in [`SigSet::wait`] receives them.
fn block_signals() -> Result<nix::sys::signal::SigSet, CliError> {
    use nix::sys::signal::{SigSet, Signal};
    let mut set = SigSet::empty();
    for s in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
        set.add(s);
    }
    set.thread_block().map_err(std::io::Error::from)?;
    Ok(set)
}

/// Mounts and serves until unmounted or signalled.
fn serve(
    game_dir: &Path,
    mnt: &Path,
    opts: MountOptions,
    merged: Option<(crate::view::merged::Priority, Option<PathBuf>)>,
    cfg: &MountConfig,
    mut status: Option<std::fs::File>,
    demo: bool,
) -> Result<i32, CliError> {
    let merged = match merged {
        Some((p, Some(t))) => match crate::fs::merged::prepare_target(&t) {
            Ok(target) => Some((p, Some(target))),
            Err(e) => {
                let text = format!("--into {}: {e}", t.display());
                if let Some(mut w) = status.take() {
                    let _ = writeln!(w, "{text}");
                }
                return Err(msg(text));
            }
        },
        Some((p, None)) => Some((p, None)),
        None => None,
    };
    // One mount at a time edits a game folder's staged files (see `statelock`); a mod is
    // written through a normal core serving its folder (an archive's: the one holding it).
    let staged = match &merged {
        None => Some(game_dir.to_path_buf()),
        Some((_, Some(Target::Folder(d)))) => Some(d.clone()),
        Some((_, Some(Target::Archive(f)))) => f.parent().map(Path::to_path_buf),
        Some((_, None)) => None,
    };
    let _state_lock = match (&opts.state_dir, staged.filter(|_| !opts.read_only)) {
        (Some(state), Some(dir)) => match super::statelock::lock(state, &dir) {
            Ok(l) => Some(l),
            Err(text) => {
                if let Some(mut w) = status.take() {
                    let _ = writeln!(w, "{text}");
                }
                return Err(msg(text));
            }
        },
        _ => None,
    };
    // Every thread started from here on inherits the blocked signals; one thread waits for them.
    let set = block_signals()?;
    let mounted = match merged {
        Some((p, Some(t))) => crate::fs::fuse::mount_overlay(game_dir, t, mnt, opts, p, cfg),
        Some((p, None)) => mount_merged(game_dir, mnt, opts, p, cfg),
        None => mount(game_dir, mnt, opts, cfg),
    };
    let mounted = match mounted {
        Ok(m) => m,
        Err(e) => {
            let text = format!("mount {} on {}: {e}", game_dir.display(), mnt.display());
            if let Some(mut w) = status.take() {
                let _ = writeln!(w, "{text}");
            }
            return Err(msg(text));
        }
    };
    let mut session = mounted.session;
    let mut unmounter = session.unmount_callable();
    let mnt_owned = mnt.to_path_buf();
    std::thread::Builder::new()
        .name("tafs-signals".into())
        .spawn(move || loop {
            let Ok(sig) = set.wait() else {
                continue;
            };
            let sig = sig as i32;
            log::info!("signal {sig}: unmounting {}", mnt_owned.display());
            super::notify::notify(&format!(
                "STOPPING=1\nSTATUS=signal {sig}: unmounting {}",
                mnt_owned.display()
            ));
            if let Err(e) = unmounter.unmount() {
                log::warn!("unmount failed ({e}); detaching lazily");
                let _ = sys::umount(&mnt_owned, true);
            }
        })?;
    log::info!("{} mounted on {}", game_dir.display(), mnt.display());
    let serving = Arc::new(AtomicBool::new(true));
    if let Some(n) = super::notify::Notifier::from_env() {
        // READY=1 once the mount answers: a stat of its root blocks until `session.run`
        // below serves it; then STATUS= again whenever what `tafs status` says changes
        let (game, mnt) = (game_dir.to_path_buf(), mnt.to_path_buf());
        let serving = serving.clone();
        std::thread::Builder::new()
            .name("tafs-notify".into())
            .spawn(move || {
                let state = match std::fs::metadata(&mnt) {
                    Ok(_) => "READY=1",
                    Err(e) => {
                        log::warn!("{}: {e}", mnt.display());
                        "READY=1\nERRNO=5"
                    }
                };
                let head = format!("serving {} on {}", game.display(), mnt.display());
                let status = |summary: &Option<String>| match summary {
                    Some(s) => format!("STATUS={head}: {s}"),
                    None => format!("STATUS={head}"),
                };
                let mut last = super::notify::status_summary(&mnt);
                n.send(&format!(
                    "{state}\nMAINPID={}\n{}",
                    std::process::id(),
                    status(&last)
                ));
                while last.is_some() {
                    std::thread::sleep(STATUS_EVERY);
                    if !serving.load(Ordering::Acquire) {
                        break;
                    }
                    let now = super::notify::status_summary(&mnt);
                    if now.is_some() && now != last {
                        n.send(&status(&now));
                    }
                    last = now;
                }
            })?;
    }
    // before the parent hears "ok": `tafs umount` right after `mount -d` finds it
    runfile::write(mnt);
    if let Some(mut w) = status.take() {
        let _ = w.write_all(b"ok\n");
    } else {
        eprintln!(
            "tafs: {} mounted on {} (Ctrl-C or `tafs umount {}` to stop)",
            game_dir.display(),
            mnt.display(),
            mnt.display()
        );
        if demo {
            eprint!("{}", demo::hints(mnt));
        }
    }
    let r = session.run();
    serving.store(false, Ordering::Release);
    runfile::remove(mnt);
    let _ = mounted.invalidator.join();
    log::info!("{}: unmounted", mnt.display());
    super::notify::notify(&format!("STATUS={}: unmounted", mnt.display()));
    r.map(|()| 0)
        .map_err(|e| msg(format!("serving {}: {e}", mnt.display())))
}

/// Asks the process serving `mnt` to unmount (SIGTERM) and waits for it to end; `None` when
/// no trustworthy run file names a process that really serves `mnt` (see [`runfile`]).
fn stop_server(mnt: &Path) -> Option<bool> {
    let r = runfile::read(mnt)?;
    if !runfile::serves(&r, mnt) {
        log::info!(
            "run file of {} names pid {}, which does not serve it; unmounting directly",
            mnt.display(),
            r.pid
        );
        return None;
    }
    let pid = r.pid;
    // asking the verified tafs process to unmount
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGTERM,
    )
    .ok()?;
    let t = std::time::Instant::now();
    while t.elapsed() < Duration::from_secs(10) {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        if status.is_empty() || status.contains("zombie") {
            return Some(true);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Some(false)
}

/// Runs `tafs umount`.
pub fn umount(a: UmountArgs) -> Result<i32, CliError> {
    let mnt = &a.mountpoint;
    if !a.lazy {
        match stop_server(mnt) {
            Some(true) => return Ok(0),
            Some(false) => log::warn!("the serving process did not stop; unmounting directly"),
            None => {}
        }
    }
    match sys::umount(mnt, a.lazy) {
        Ok(()) => Ok(0),
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => {
            // Not root: the setuid helpers of fuse3/fuse can unmount user mounts.
            for tool in ["fusermount3", "fusermount"] {
                let mut c = std::process::Command::new(tool);
                c.arg("-u");
                if a.lazy {
                    c.arg("-z");
                }
                if let Ok(s) = c.arg(mnt).status() {
                    return Ok(if s.success() { 0 } else { 1 });
                }
            }
            super::err(format!("umount {}: {e}", mnt.display()))
        }
        Err(e) if e.raw_os_error() == Some(libc::EBUSY) => super::err(format!(
            "umount {}: busy (a process uses it); `tafs umount --lazy` detaches it now",
            mnt.display()
        )),
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
            super::err(format!("umount {}: not a mountpoint", mnt.display()))
        }
        Err(e) => super::err(format!("umount {}: {e}", mnt.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("256M"), Ok(256 << 20));
        assert_eq!(parse_size("1g"), Ok(1 << 30));
        assert_eq!(parse_size("64KiB"), Ok(64 << 10));
        assert_eq!(parse_size("1000"), Ok(1000));
        assert_eq!(parse_size("2MB"), Ok(2 << 20));
        assert!(parse_size("lots").is_err());
        assert!(parse_size("99999999999T").is_err());
    }
}
