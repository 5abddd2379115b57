//! The root daemon against a hostile local user: a second real user (`useradd`, `runuser`)
//! plants folders, symlinks and pid files where the daemon keeps its run files.

mod mount_common;

use mount_common::{fuse_available, is_mounted, UnmountGuard};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const TAFS: &str = env!("CARGO_BIN_EXE_tafs");
const EVIL: &str = "tafs-evil";

/// A second local user (created when missing). Needs root, `useradd` and `runuser`.
fn second_user() -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        println!("SKIPPED: the second-user tests need root (useradd, runuser)");
        return false;
    }
    let exists = Command::new("id")
        .arg(EVIL)
        .output()
        .is_ok_and(|o| o.status.success());
    if !exists {
        let o = Command::new("useradd")
            .args(["--no-create-home", "--shell", "/usr/sbin/nologin", EVIL])
            .output()
            .expect("useradd is missing: apt-get install -y passwd");
        // a parallel test may have made it in between
        let again = Command::new("id")
            .arg(EVIL)
            .output()
            .is_ok_and(|o| o.status.success());
        assert!(
            again,
            "useradd {EVIL}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    true
}

/// Runs `ARGS` as the second user, asserting success.
fn as_evil(args: &[&str]) {
    let o = Command::new("runuser")
        .args(["-u", EVIL, "--"])
        .args(args)
        .output()
        .expect("runuser is missing: apt-get install -y util-linux");
    assert!(
        o.status.success(),
        "runuser {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

fn tafs_env(args: &[&str], xdg: &Path) -> std::process::Output {
    Command::new(TAFS)
        .args(args)
        .env("XDG_RUNTIME_DIR", xdg)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// A temp folder others may enter (the second user must reach the run folder's parent), with
/// a game folder and a mountpoint in it.
fn setup() -> (tempfile::TempDir, PathBuf, PathBuf, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    std::fs::set_permissions(t.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let game = t.path().join("game");
    std::fs::create_dir(&game).unwrap();
    std::fs::write(game.join("readme.txt"), b"hello").unwrap();
    let mnt = t.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let xdg = t.path().join("xdg");
    std::fs::create_dir(&xdg).unwrap();
    // like /tmp: anyone may create entries
    std::fs::set_permissions(&xdg, std::fs::Permissions::from_mode(0o1777)).unwrap();
    (t, game, mnt, xdg)
}

fn mount(game: &Path, mnt: &Path, xdg: &Path) -> UnmountGuard {
    let guard = UnmountGuard(mnt.to_path_buf());
    let o = tafs_env(
        &["mount", "-d", game.to_str().unwrap(), mnt.to_str().unwrap()],
        xdg,
    );
    assert!(
        o.status.success(),
        "mount: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(is_mounted(mnt));
    guard
}

fn umount(mnt: &Path, xdg: &Path) {
    let o = tafs_env(&["umount", mnt.to_str().unwrap()], xdg);
    assert!(
        o.status.success(),
        "umount: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    for _ in 0..250 {
        if !is_mounted(mnt) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    panic!("{} still mounted after tafs umount", mnt.display());
}

#[test]
fn run_folder_made_by_another_user_is_not_used() {
    if !fuse_available() || !second_user() {
        return;
    }
    let (_t, game, mnt, xdg) = setup();
    // the second user makes the run folder first, open to everyone
    let planted = xdg.join("tafs");
    as_evil(&["mkdir", "-m", "0777", planted.to_str().unwrap()]);
    let _g = mount(&game, &mnt, &xdg);
    let inside: Vec<_> = std::fs::read_dir(&planted).unwrap().collect();
    assert!(
        inside.is_empty(),
        "the daemon wrote into a folder another user owns: {inside:?}"
    );
    // umount still works (directly, without a run file)
    umount(&mnt, &xdg);
}

#[test]
fn symlinked_run_folder_is_never_followed() {
    if !fuse_available() || !second_user() {
        return;
    }
    let (t, game, mnt, xdg) = setup();
    let victim = t.path().join("victim");
    std::fs::create_dir(&victim).unwrap();
    std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o700)).unwrap();
    as_evil(&[
        "ln",
        "-s",
        victim.to_str().unwrap(),
        xdg.join("tafs").to_str().unwrap(),
    ]);
    let _g = mount(&game, &mnt, &xdg);
    let inside: Vec<_> = std::fs::read_dir(&victim).unwrap().collect();
    assert!(
        inside.is_empty(),
        "the daemon wrote through a planted symlink: {inside:?}"
    );
    umount(&mnt, &xdg);
}

/// Field 22 of /proc/PID/stat.
fn start_time(pid: u32) -> String {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let rest = &s[s.rfind(')').unwrap() + 1..];
    rest.split_whitespace().nth(19).unwrap().to_string()
}

#[test]
fn umount_never_signals_a_process_that_does_not_serve_the_mount() {
    if !fuse_available() {
        return;
    }
    let (t, game, mnt, _) = setup();
    let xdg = t.path().join("own-xdg");
    std::fs::create_dir(&xdg).unwrap();
    std::fs::set_permissions(&xdg, std::fs::Permissions::from_mode(0o700)).unwrap();
    let _g = mount(&game, &mnt, &xdg);
    let files: Vec<PathBuf> = std::fs::read_dir(xdg.join("tafs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "one run file for the mount: {files:?}");
    let text = std::fs::read_to_string(&files[0]).unwrap();
    assert!(text.ends_with(&format!("{}\n", mnt.display())), "{text}");
    // replace the recorded pid by an unrelated process of the same user, start time included
    let mut bystander = Command::new("sleep").arg("60").spawn().unwrap();
    let pid = bystander.id();
    std::fs::write(
        &files[0],
        format!("{pid}\n{}\n{}\n", start_time(pid), mnt.display()),
    )
    .unwrap();
    umount(&mnt, &xdg);
    std::thread::sleep(std::time::Duration::from_millis(100));
    let alive = bystander.try_wait().unwrap().is_none();
    let _ = bystander.kill();
    let _ = bystander.wait();
    assert!(
        alive,
        "tafs umount signalled a process that does not serve the mount"
    );
}

#[test]
fn umount_stops_the_daemon_through_its_run_file() {
    if !fuse_available() {
        return;
    }
    let (t, game, mnt, _) = setup();
    let xdg = t.path().join("own-xdg");
    std::fs::create_dir(&xdg).unwrap();
    std::fs::set_permissions(&xdg, std::fs::Permissions::from_mode(0o700)).unwrap();
    let _g = mount(&game, &mnt, &xdg);
    let run = xdg.join("tafs");
    let mode = std::fs::symlink_metadata(&run)
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700, "the run folder is private");
    let file = std::fs::read_dir(&run)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let pid: u32 = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(Path::new(&format!("/proc/{pid}")).exists());
    umount(&mnt, &xdg);
    // the daemon itself ended (asked through its run file) and removed the file
    for _ in 0..250 {
        let st = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        if st.is_empty() || st.contains("zombie") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let st = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    assert!(
        st.is_empty() || st.contains("zombie"),
        "daemon {pid} still runs"
    );
    assert!(!file.exists(), "run file left behind");
}
