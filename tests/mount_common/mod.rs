//! Helpers shared by the mount tests: a fake view format (so the file system is tested
//! independently of the codecs), a guard that always unmounts, and a writable mount of a
//! temporary game folder holding one binary ([`GameMount`]).
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tafs::view::{AssetKind, Entry, View, ViewError, ViewOptions};

/// A view decoded from a text "binary": the first line is `FAKE`, every other line is
/// `path=content` (a file; its folders are implied) or `path*N=content` (content repeated
/// N times). A line `sleep=MS` makes decoding take that long. Anything else fails to decode.
pub struct FakeView {
    entries: Vec<Entry>,
    files: Vec<(String, Vec<u8>)>,
}

impl FakeView {
    pub fn parse(data: &[u8]) -> Result<FakeView, ViewError> {
        let text =
            std::str::from_utf8(data).map_err(|_| ViewError::invalid("fake", "not UTF-8"))?;
        let mut lines = text.lines();
        if lines.next() != Some("FAKE") {
            return Err(ViewError::invalid("fake", "missing FAKE header"));
        }
        let mut entries: Vec<Entry> = Vec::new();
        let mut files = Vec::new();
        for line in lines {
            let (key, content) = line
                .split_once('=')
                .ok_or_else(|| ViewError::invalid("fake", format!("bad line {line:?}")))?;
            if key == "sleep" {
                let ms: u64 = content
                    .parse()
                    .map_err(|_| ViewError::invalid("fake", "sleep"))?;
                std::thread::sleep(Duration::from_millis(ms));
                continue;
            }
            let (path, n) = match key.split_once('*') {
                Some((p, n)) => (
                    p,
                    n.parse::<usize>()
                        .map_err(|_| ViewError::invalid("fake", "count"))?,
                ),
                None => (key, 1),
            };
            let parts: Vec<&str> = path.split('/').collect();
            for i in 1..parts.len() {
                let d = parts[..i].join("/");
                if !entries.iter().any(|e| e.path == d) {
                    entries.push(Entry::dir(d));
                }
            }
            entries.push(Entry::file(path));
            files.push((path.to_string(), content.repeat(n).into_bytes()));
        }
        Ok(FakeView { entries, files })
    }
}

impl View for FakeView {
    fn entries(&self) -> &[Entry] {
        &self.entries
    }
    fn render(&self, path: &str, out: &mut dyn Write) -> Result<(), ViewError> {
        let (_, b) = self
            .files
            .iter()
            .find(|(p, _)| p == path)
            .ok_or_else(|| ViewError::NotFound(path.to_string()))?;
        out.write_all(b).map_err(|e| ViewError::Io {
            path: path.into(),
            source: e,
        })
    }
}

/// The opener the tests mount with.
pub fn fake_opener() -> tafs::fs::Opener {
    Arc::new(
        |_kind: AssetKind, data: &tafs::view::SharedBytes, _o: &ViewOptions| {
            Ok(Box::new(FakeView::parse(data)?) as Box<dyn View>)
        },
    )
}

/// Writes a file, creating folders.
pub fn put(path: &Path, bytes: impl AsRef<[u8]>) {
    if let Some(p) = path.parent() {
        std::fs::create_dir_all(p).unwrap();
    }
    std::fs::write(path, bytes).unwrap();
}

/// Replaces a file atomically (write a temp file, rename over), as tools do.
pub fn replace(path: &Path, bytes: impl AsRef<[u8]>) {
    let tmp = path.with_extension("tmp-replace");
    std::fs::write(&tmp, bytes).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

/// Whether real FUSE mounts can be tested here.
pub fn fuse_available() -> bool {
    if Path::new("/dev/fuse").exists() {
        true
    } else {
        println!("SKIPPED: /dev/fuse is missing, FUSE mount tests cannot run here");
        false
    }
}

/// Whether `p` is a mountpoint right now.
pub fn is_mounted(p: &Path) -> bool {
    let Ok(canon) = p.canonicalize() else {
        return false;
    };
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap_or_default()
        .lines()
        .any(|l| l.split(' ').nth(4) == Some(canon.to_str().unwrap_or("")))
}

/// Unmounts `mnt` when dropped (lazily, so even a busy or dead mount goes away).
pub struct UnmountGuard(pub PathBuf);

impl Drop for UnmountGuard {
    fn drop(&mut self) {
        for _ in 0..50 {
            if !is_mounted(&self.0) {
                return;
            }
            let _ = std::process::Command::new("umount")
                .arg("-l")
                .arg(&self.0)
                .status();
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// A FUSE mount of `game` served in this process (`tafs::fs::fuse::mount` on a background
/// session), unmounted on drop.
pub struct Mnt {
    pub game: tempfile::TempDir,
    pub mnt: PathBuf,
    bg: Option<fuser::BackgroundSession>,
    ops: std::sync::Weak<dyn tafs::fs::FsOps>,
    _guard: UnmountGuard,
    _dir: tempfile::TempDir,
}

impl Mnt {
    /// Mounts `game` with `opts` as given on a fresh mount point.
    pub fn serve(game: tempfile::TempDir, opts: tafs::fs::MountOptions) -> Mnt {
        let dir = tempfile::tempdir().unwrap();
        let mnt = dir.path().join("mnt");
        std::fs::create_dir(&mnt).unwrap();
        let guard = UnmountGuard(mnt.clone());
        let m = tafs::fs::fuse::mount(
            game.path(),
            &mnt,
            opts,
            &tafs::fs::fuse::MountConfig::default(),
        )
        .unwrap();
        let ops = m.ops.clone();
        let bg = m.session.spawn().unwrap();
        Mnt {
            game,
            mnt,
            bg: Some(bg),
            ops,
            _guard: guard,
            _dir: dir,
        }
    }
    /// Inodes the served core holds.
    pub fn inodes(&self) -> usize {
        self.ops.upgrade().expect("served while mounted").inodes()
    }
    pub fn game(&self) -> &Path {
        self.game.path()
    }
}

impl Drop for Mnt {
    fn drop(&mut self) {
        if let Some(bg) = self.bg.take() {
            let _ = bg.umount_and_join();
        }
    }
}

/// Runs a shell command, returns stdout; panics with stderr on failure.
pub fn sh(cmd: &str) -> String {
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "`{cmd}` failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A daemon mount of the built binary (`tafs mount -d ARGS… GAME MNT`, `MNT` made if
/// missing): `tafs umount`ed on drop, lazily unmounted if that did not work.
pub struct Mount {
    /// The mount point.
    pub mnt: PathBuf,
    _guard: UnmountGuard,
}

/// Mounts `game` on `mnt` with the options `args`; panics with the CLI's message on failure.
pub fn mount(game: &Path, mnt: &Path, args: &[&str]) -> Mount {
    let guard = UnmountGuard(mnt.to_path_buf());
    daemon_pid(game, mnt, args);
    Mount {
        mnt: mnt.to_path_buf(),
        _guard: guard,
    }
}

/// Mounts `game` on `mnt` for a test that reads back what it saves: `--ttl 0`, history in
/// `state` (`--state-dir`), then the options `extra`.
pub fn mount_state(game: &Path, mnt: &Path, state: &Path, extra: &[&str]) -> Mount {
    let mut all = vec!["--ttl", "0"];
    all.extend_from_slice(extra);
    all.extend(["--state-dir", state.to_str().unwrap()]);
    mount(game, mnt, &all)
}

/// Mount options of tests that look at the archive in the game folder right after each
/// save: TTL 0, archive commits at once, state folder `state`.
#[allow(dead_code)]
pub fn committing_at_once(state: &Path) -> [&str; 6] {
    [
        "--ttl",
        "0",
        "--archive-commit-delay",
        "0",
        "--state-dir",
        state.to_str().unwrap(),
    ]
}

/// `tafs mount -d ARGS… GAME MNT` (`MNT` made if missing), live when it returns: the pid of
/// the serving process. Nothing unmounts it (see [`mount`] for a guarded one).
#[allow(dead_code)]
pub fn daemon_pid(game: &Path, mnt: &Path, args: &[&str]) -> i32 {
    // (fails harmlessly on a stale mount point, which the mount clears)
    let _ = std::fs::create_dir_all(mnt);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tafs"))
        .args(["mount", "-d"])
        .args(args)
        .arg(game)
        .arg(mnt)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "tafs mount {args:?}: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(is_mounted(mnt));
    text.split("pid ")
        .nth(1)
        .and_then(|s| s.trim_end().trim_end_matches(')').parse().ok())
        .unwrap_or_else(|| panic!("no pid in {text:?}"))
}

/// A tmpfs of `size` (e.g. `1200k`) mounted on folder `dir` (root only), lazily unmounted on
/// drop; `None` (and a line saying the test is skipped) where it cannot be mounted.
#[allow(dead_code)]
pub fn small_tmpfs(dir: &Path, size: &str) -> Option<TmpfsGuard> {
    let ok = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
        .arg(dir)
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        println!("skipped: cannot mount a tmpfs");
        return None;
    }
    Some(TmpfsGuard(dir.to_path_buf()))
}

/// See [`small_tmpfs`].
pub struct TmpfsGuard(PathBuf);

impl Drop for TmpfsGuard {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.0)
            .status();
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = std::process::Command::new(env!("CARGO_BIN_EXE_tafs"))
            .arg("umount")
            .arg(&self.mnt)
            .stdin(std::process::Stdio::null())
            .output();
    }
}

/// A temporary folder holding a game folder `game/` with one binary at `rel`, mounted
/// writable at `mnt/` (`--ttl 0`, history in `state/`).
pub struct GameMount {
    // unmounted before the folder is removed
    _m: Mount,
    /// The temporary folder.
    pub dir: tempfile::TempDir,
    /// The game folder.
    pub game: PathBuf,
    /// The state folder (`--state-dir`).
    pub state: PathBuf,
    /// The mount point.
    pub mnt: PathBuf,
    /// The binary, relative to the game folder.
    pub rel: String,
}

impl GameMount {
    /// Makes the game folder, has `fill(dir, binary)` write the binary (its folder made, `dir`
    /// the temporary folder) and mounts it with the mount options `args` too; `None` (saying
    /// so) without FUSE.
    pub fn new(rel: &str, args: &[&str], fill: impl FnOnce(&Path, &Path)) -> Option<GameMount> {
        if !fuse_available() {
            println!("skipped: no FUSE");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let game = dir.path().join("game");
        let bin = game.join(rel);
        std::fs::create_dir_all(bin.parent().unwrap()).unwrap();
        fill(dir.path(), &bin);
        let state = dir.path().join("state");
        let mnt = dir.path().join("mnt");
        let m = mount_state(&game, &mnt, &state, args);
        Some(GameMount {
            _m: m,
            dir,
            game,
            state,
            mnt,
            rel: rel.to_string(),
        })
    }
    /// The binary in the game folder.
    pub fn bin(&self) -> PathBuf {
        self.game.join(&self.rel)
    }
    /// The binary's directory in the mount.
    pub fn asset(&self) -> PathBuf {
        self.mnt.join(&self.rel)
    }
    /// `name` in the temporary folder.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
    /// The asset directory's `.tafs-status` (empty if there is none).
    pub fn status(&self) -> String {
        std::fs::read_to_string(self.asset().join(".tafs-status")).unwrap_or_default()
    }
}

/// The second local user of the hostile-user tests.
pub const SECOND_USER: &str = "tafs-evil";

/// Makes [`SECOND_USER`] when missing; false (with a SKIPPED line) when not root. Once per
/// test process, every test waiting for it: the tests of a file run in parallel, and one that
/// found the user in `/etc/passwd` while another's `useradd` was still writing the shadow and
/// group files ran its steps as a user the system did not fully know yet. Done once the user
/// can run a command (`runuser`).
pub fn second_user() -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        println!("SKIPPED: the second-user tests need root (useradd, runuser)");
        return false;
    }
    static MADE: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    MADE.get_or_init(make_second_user);
    true
}

fn make_second_user() {
    let have = || {
        std::process::Command::new("id")
            .arg(SECOND_USER)
            .output()
            .is_ok_and(|o| o.status.success())
    };
    let usable = || {
        std::process::Command::new("runuser")
            .args(["-u", SECOND_USER, "--", "true"])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    let mut last = String::new();
    // another process (a test file run at the same time) may hold the passwd lock
    for _ in 0..50 {
        if have() && usable() {
            return;
        }
        if !have() {
            let o = std::process::Command::new("useradd")
                .args([
                    "--no-create-home",
                    "--shell",
                    "/usr/sbin/nologin",
                    SECOND_USER,
                ])
                .output()
                .expect("useradd is missing: apt-get install -y passwd");
            last = String::from_utf8_lossy(&o.stderr).into_owned();
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    panic!("useradd {SECOND_USER}: the user is not usable: {last}");
}

/// Runs `args` as [`SECOND_USER`]; whether it succeeded (its stderr printed when not).
pub fn as_second_user(args: &[&str]) -> bool {
    let o = std::process::Command::new("runuser")
        .args(["-u", SECOND_USER, "--"])
        .args(args)
        .output()
        .expect("runuser is missing: apt-get install -y util-linux");
    if !o.status.success() {
        println!("runuser {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    }
    o.status.success()
}

/// The peak resident memory (`VmHWM`, KiB) so far of the `tafs mount` daemon serving `mnt`
/// (found by its command line naming the mount point).
#[allow(dead_code)]
pub fn daemon_peak_kib(mnt: &Path) -> u64 {
    let want = mnt.to_str().unwrap().as_bytes();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        if e.file_name().to_string_lossy().parse::<u32>().is_err() {
            continue;
        }
        let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let args: Vec<&[u8]> = cmd.split(|&b| b == 0).collect();
        if !(args.contains(&&b"mount"[..]) && args.contains(&want)) {
            continue;
        }
        let Ok(status) = std::fs::read_to_string(e.path().join("status")) else {
            continue;
        };
        if let Some(kib) = status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        {
            return kib;
        }
    }
    panic!("no daemon serves {}", mnt.display());
}
