//! tafs as a system daemon: mounted by the real `mount -t fuse.tafs` and an /etc/fstab line
//! (through `mount.fuse3`, in the test's own mount namespace), and systemd's readiness
//! protocol heard on a real `NOTIFY_SOCKET` datagram socket.

mod mount_common;

use mount_common::{fuse_available, is_mounted, UnmountGuard};
use std::os::unix::net::UnixDatagram;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

const TAFS: &str = env!("CARGO_BIN_EXE_tafs");

fn demo(dir: &Path) {
    let out = Command::new(TAFS).arg("demo").arg(dir).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The next datagram, as text (panics after 60 s).
fn recv(sock: &UnixDatagram) -> String {
    let mut buf = vec![0u8; 4096];
    let n = sock.recv(&mut buf).expect("a notification within 60 s");
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

/// Runs `tafs mount` in the foreground with `NOTIFY_SOCKET=name`, the test listening on
/// `sock`: READY=1 comes once the mount answers, STOPPING=1 on SIGTERM, then it unmounts.
fn readiness(name: &str, sock: &UnixDatagram, dir: &Path) {
    sock.set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let (game, mnt, state) = (dir.join("game"), dir.join("mnt"), dir.join("state"));
    demo(&game);
    std::fs::create_dir(&mnt).unwrap();
    let _guard = UnmountGuard(mnt.clone());
    let mut child = Command::new(TAFS)
        .arg("mount")
        .arg("--state-dir")
        .arg(&state)
        .arg(&game)
        .arg(&mnt)
        .env("NOTIFY_SOCKET", name)
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let ready = recv(sock);
    let lines: Vec<&str> = ready.lines().collect();
    assert!(lines.contains(&"READY=1"), "{ready}");
    assert!(
        lines.contains(&format!("MAINPID={}", child.id()).as_str()),
        "{ready}"
    );
    assert!(
        lines.contains(
            &format!(
                "STATUS=serving {} on {}: nothing staged",
                game.display(),
                mnt.display()
            )
            .as_str()
        ),
        "{ready}"
    );
    // ready means served: the view is there
    assert!(is_mounted(&mnt));
    assert!(mnt.join("anims/demo.gaf/pulse").is_dir());
    // SAFETY: signalling the child this test started.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let stopping = recv(sock);
    assert!(stopping.lines().any(|l| l == "STOPPING=1"), "{stopping}");
    assert!(
        stopping.contains("STATUS=signal 15: unmounting"),
        "{stopping}"
    );
    let done = recv(sock);
    assert_eq!(done, format!("STATUS={}: unmounted", mnt.display()));
    assert!(child.wait().unwrap().success());
    assert!(!is_mounted(&mnt));
}

#[test]
fn notify_socket_path_hears_ready_and_stopping() {
    if !fuse_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notify");
    let sock = UnixDatagram::bind(&path).unwrap();
    readiness(path.to_str().unwrap(), &sock, dir.path());
}

#[test]
fn notify_socket_abstract_hears_ready_and_stopping() {
    use std::os::linux::net::SocketAddrExt;
    if !fuse_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let name = format!("tafs-test-notify-{}", std::process::id());
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    let sock = UnixDatagram::bind_addr(&addr).unwrap();
    readiness(&format!("@{name}"), &sock, dir.path());
}

/// `STATUS=` follows what `tafs status` says: a save that fails is announced with the asset
/// named, and its repair with the status back to nothing staged.
#[test]
fn notify_status_follows_a_failed_and_a_repaired_save() {
    if !fuse_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notify");
    let sock = UnixDatagram::bind(&path).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let (game, mnt, state) = (
        dir.path().join("game"),
        dir.path().join("mnt"),
        dir.path().join("state"),
    );
    demo(&game);
    std::fs::create_dir(&mnt).unwrap();
    let _guard = UnmountGuard(mnt.clone());
    let mut child = Command::new(TAFS)
        .arg("mount")
        .arg("--state-dir")
        .arg(&state)
        .arg(&game)
        .arg(&mnt)
        .env("NOTIFY_SOCKET", &path)
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let ready = recv(&sock);
    assert!(ready.contains(": nothing staged"), "{ready}");
    let frame = mnt.join("anims/demo.gaf/pulse/0.png");
    let good = std::fs::read(&frame).unwrap();
    // a save that fails: the asset is named in the next STATUS=
    let bad = dir.path().join("bad.png");
    std::fs::write(&bad, b"this is not a PNG").unwrap();
    let cp = Command::new("cp").arg(&bad).arg(&frame).status().unwrap();
    assert!(!cp.success(), "cp of a bad PNG succeeded");
    let head = format!("STATUS=serving {} on {}: ", game.display(), mnt.display());
    let failed = recv(&sock);
    assert_eq!(failed, format!("{head}1 error: anims/demo.gaf"));
    // repaired: back to nothing staged (or clean), never an error again
    std::fs::write(&frame, &good).unwrap();
    let repaired = recv(&sock);
    assert!(
        repaired.starts_with(&head) && !repaired.contains("error"),
        "{repaired}"
    );
    // SAFETY: signalling the child this test started.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let stopping = recv(&sock);
    assert!(stopping.lines().any(|l| l == "STOPPING=1"), "{stopping}");
    assert!(child.wait().unwrap().success());
}

/// Whether this test can make its own mount namespace and run mount(8) in it.
fn mount_namespace_available() -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let ok = root
        && Command::new("unshare")
            .args(["-m", "--propagation", "private", "true"])
            .status()
            .is_ok_and(|s| s.success())
        && Path::new("/sbin/mount.fuse3").exists();
    if !ok {
        println!("SKIPPED: needs root, unshare -m and mount.fuse3 (fuse3) to test mount(8)");
    }
    ok
}

/// Runs `script` with `sh -e` in a new private mount namespace in which `tafs` is the
/// built binary on mount(8)'s PATH (a folder holding a link to it, bound on /usr/local/bin
/// in that namespace only) and /etc/fstab is `fstab`.
fn in_namespace(dir: &Path, fstab: &str, script: &str) -> std::process::Output {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let _ = std::os::unix::fs::symlink(TAFS, bin.join("tafs"));
    std::fs::write(dir.join("fstab"), fstab).unwrap();
    let setup = format!(
        "mount --bind '{}' /usr/local/bin && mount --bind '{}' /etc/fstab\n",
        bin.display(),
        dir.join("fstab").display()
    );
    Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-ec"])
        .arg(setup + script)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn mount_t_fuse_tafs_and_an_fstab_line_mount_and_umount() {
    if !fuse_available() || !mount_namespace_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    let game = dir.path().join("game");
    demo(&game);
    std::fs::create_dir(dir.path().join("mnt")).unwrap();
    let fstab = format!(
        "# the test's own fstab\n{d}/game {d}/mnt fuse.tafs ro,noauto,nofail,_netdev,user,x-systemd.automount,state_dir={d}/state,ttl=0,cache_size=64M 0 0\n"
    );
    let out = in_namespace(
        dir.path(),
        &fstab,
        &format!(
            "mount -t fuse.tafs -o state_dir={d}/state,noatime,_netdev,nofail {d}/game {d}/mnt
findmnt -n -o FSTYPE,OPTIONS {d}/mnt > {d}/t.findmnt
ls {d}/mnt/anims/demo.gaf > {d}/t.ls
echo x > {d}/mnt/anims/demo.gaf/new.txt && echo written > {d}/t.write || true
umount {d}/mnt
mount {d}/mnt
findmnt -n -o FSTYPE,OPTIONS {d}/mnt > {d}/f.findmnt
ls {d}/mnt/anims/demo.gaf > {d}/f.ls
touch {d}/mnt/anims/demo.gaf/new.txt 2> {d}/f.write || true
umount {d}/mnt
findmnt {d}/mnt > {d}/after || echo gone > {d}/after
"
        ),
    );
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let read = |n: &str| std::fs::read_to_string(dir.path().join(n)).unwrap_or_default();
    let expected = Command::new(TAFS)
        .args(["gaf", "dump"])
        .arg(game.join("anims/demo.gaf"))
        .arg("-t")
        .arg(dir.path().join("dump"))
        .output()
        .unwrap();
    assert!(expected.status.success());
    let mut dumped: Vec<String> = std::fs::read_dir(dir.path().join("dump"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    dumped.sort();
    // `mount -t fuse.tafs`: writable, noatime passed on to the kernel (the type reads
    // `fuse` when fuser mounts by itself, as root)
    let m = read("t.findmnt");
    assert!(
        m.starts_with("fuse") && m.contains("rw,") && m.contains("noatime"),
        "{m}"
    );
    assert_eq!(read("t.ls").lines().collect::<Vec<_>>(), dumped);
    assert_eq!(read("t.write"), "written\n");
    // the fstab line: read-only, mount(8)'s `user` as nosuid,nodev,noexec
    let f = read("f.findmnt");
    assert!(
        f.starts_with("fuse") && f.contains("ro,") && f.contains("noexec"),
        "{f}"
    );
    assert_eq!(
        read("f.ls")
            .lines()
            .filter(|l| *l != "new.txt")
            .collect::<Vec<_>>(),
        dumped
    );
    assert!(
        read("f.write").contains("Read-only file system"),
        "{}",
        read("f.write")
    );
    assert_eq!(read("after"), "gone\n");
}

#[test]
fn mount_t_fuse_tafs_names_an_unknown_option() {
    if !fuse_available() || !mount_namespace_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    demo(&dir.path().join("game"));
    std::fs::create_dir(dir.path().join("mnt")).unwrap();
    let out = in_namespace(
        dir.path(),
        "",
        &format!("mount -t fuse.tafs -o ro,colour=blue {d}/game {d}/mnt"),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("-o colour=blue: unknown mount option"),
        "{err}"
    );
    assert!(!is_mounted(&dir.path().join("mnt")));
}

#[test]
fn sigterm_finishes_a_deferred_archive_commit() {
    if !fuse_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (game, mnt, state) = (
        dir.path().join("game"),
        dir.path().join("mnt"),
        dir.path().join("state"),
    );
    let src = dir.path().join("src");
    std::fs::create_dir_all(src.join("units")).unwrap();
    std::fs::write(src.join("units/a.fbi"), "[UNITINFO]{Name=A;}").unwrap();
    std::fs::create_dir_all(&game).unwrap();
    let out = Command::new(TAFS)
        .args(["hpi", "pack"])
        .arg(&src)
        .arg("-t")
        .arg(game.join("mod.ufo"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::create_dir(&mnt).unwrap();
    let _guard = UnmountGuard(mnt.clone());
    let path = dir.path().join("notify");
    let sock = UnixDatagram::bind(&path).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    // the commit is put off for 5 s at most: the signal comes well before
    let mut child = Command::new(TAFS)
        .args(["mount", "--archive-commit-delay", "30", "--state-dir"])
        .arg(&state)
        .arg(&game)
        .arg(&mnt)
        .env("NOTIFY_SOCKET", &path)
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    assert!(recv(&sock).contains("READY=1"));
    std::fs::write(mnt.join("mod.ufo/units/b.fbi"), "[UNITINFO]{Name=B;}").unwrap();
    let listed = || {
        let out = Command::new(TAFS)
            .args(["hpi", "list"])
            .arg(game.join("mod.ufo"))
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert!(!listed().contains("b.fbi"), "committed before the signal");
    // SAFETY: signalling the child this test started.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    assert!(recv(&sock).contains("STOPPING=1"));
    assert!(child.wait().unwrap().success());
    assert!(!is_mounted(&mnt));
    let list = listed();
    assert!(list.contains("b.fbi") && list.contains("a.fbi"), "{list}");
}

/// `mount -t tafs` runs `/sbin/mount.tafs`, a link to tafs (what the install section of the
/// docs asks for: cargo cannot name a binary `mount.tafs`): in the test's namespace a folder
/// holding only that link is bound on /usr/sbin.
#[test]
fn mount_t_tafs_runs_a_mount_tafs_link() {
    if !fuse_available() || !mount_namespace_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    demo(&dir.path().join("game"));
    std::fs::create_dir(dir.path().join("mnt")).unwrap();
    let sbin = dir.path().join("sbin");
    std::fs::create_dir(&sbin).unwrap();
    std::os::unix::fs::symlink(TAFS, sbin.join("mount.tafs")).unwrap();
    let out = in_namespace(
        dir.path(),
        "",
        &format!(
            "mount --bind {d}/sbin /usr/sbin
mount -t tafs -o ro,state_dir={d}/state {d}/game {d}/mnt
ls {d}/mnt/anims/demo.gaf > {d}/ls
umount {d}/mnt
findmnt {d}/mnt > {d}/after || echo gone > {d}/after"
        ),
    );
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let read = |n: &str| std::fs::read_to_string(dir.path().join(n)).unwrap_or_default();
    assert!(
        read("ls").lines().any(|l| l == "metadata.json"),
        "{}",
        read("ls")
    );
    assert_eq!(read("after"), "gone\n");
}
