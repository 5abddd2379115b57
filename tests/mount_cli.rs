//! `tafs mount` as users run it: the built binary, real GAFs, daemon mode, signals, stale
//! mounts, errors. Every asset directory must equal `tafs gaf dump` of its binary.

mod common;
mod mount_common;

use common::tafs;
use mount_common::{fuse_available, is_mounted, put, sh, UnmountGuard};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const TAFS: &str = env!("CARGO_BIN_EXE_tafs");

fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A daemon mount, unmounted on drop.
struct Daemon {
    mnt: PathBuf,
    pid: i32,
    _guard: UnmountGuard,
}

impl Daemon {
    fn start(game: &Path, mnt: &Path, extra: &[&str]) -> Daemon {
        let guard = UnmountGuard(mnt.to_path_buf());
        // --daemon returns only once the mount is live
        let pid = mount_common::daemon_pid(game, mnt, extra);
        Daemon {
            mnt: mnt.to_path_buf(),
            pid,
            _guard: guard,
        }
    }
}

/// `tafs gaf dump` / `tafs tnt unpack` of every asset under `game` compared with the mount.
fn diff_every_asset(game: &Path, mnt: &Path) -> usize {
    let out = tempfile::tempdir().unwrap();
    let assets = common::files_with_ext(game, &[".gaf", ".taf", ".tnt"]);
    let mut n = 0;
    for g in &assets {
        let rel = g.strip_prefix(game).unwrap();
        let target = out.path().join(rel);
        let is_map = g.to_string_lossy().to_ascii_lowercase().ends_with(".tnt");
        let o = tafs(&[
            if is_map { "tnt" } else { "gaf" },
            if is_map { "unpack" } else { "dump" },
            g.to_str().unwrap(),
            "-t",
            target.to_str().unwrap(),
        ]);
        let m = mnt.join(rel);
        if !o.status.success() {
            // not decodable: the mount shows the plain file
            assert!(
                m.is_file(),
                "{}: dump failed and the mount does not show the file",
                rel.display()
            );
            assert_eq!(std::fs::read(&m).unwrap(), std::fs::read(g).unwrap());
            continue;
        }
        sh(&format!("diff -r '{}' '{}'", target.display(), m.display()));
        n += 1;
    }
    n
}

fn sample_game() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    tafs::cli::demo::write_demo(d.path()).unwrap();
    let g = tafs::formats::gaf::write(&tafs::sample::animated_gaf()).unwrap();
    put(&d.path().join("anims/UPPER.GAF"), &g);
    let mut bad = g.clone();
    bad.truncate(40);
    put(&d.path().join("anims/corrupt.gaf"), &bad);
    d
}

#[test]
fn daemon_mount_equals_dump_and_sigterm_unmounts() {
    if !fuse_available() {
        return;
    }
    let game = sample_game();
    let dir = tempfile::tempdir().unwrap();
    let d = Daemon::start(game.path(), &dir.path().join("mnt"), &[]);
    // every .gaf/.taf/.tnt of the demo folder (its truecolor .taf included)
    assert_eq!(diff_every_asset(game.path(), &d.mnt), 5);
    let m = d.mnt.display();
    assert_eq!(
        sh(&format!("stat -c %F {m}/anims/corrupt.gaf")).trim(),
        "regular file"
    );
    assert_eq!(
        sh(&format!("stat -c %F {m}/anims/UPPER.GAF")).trim(),
        "directory"
    );
    let ls = sh(&format!("ls -lR {m}"));
    assert!(ls.contains("animated.png"));
    let grep = sh(&format!("grep -rl pulse {m} | sort"));
    assert!(grep.contains("anims/demo.gaf/metadata.json"), "{grep}");
    // tar of the mount has the sizes stat reports
    let tar = sh(&format!("tar cf - -C {m} anims | wc -c"));
    assert!(tar.trim().parse::<u64>().unwrap() > 10_000);
    // SIGTERM unmounts and ends the daemon
    // SAFETY: sending a signal to the daemon this test started.
    assert_eq!(unsafe { libc::kill(d.pid, libc::SIGTERM) }, 0);
    wait_for("unmount after SIGTERM", || !is_mounted(&d.mnt));
    wait_for("daemon exit", || {
        !Path::new(&format!("/proc/{}/status", d.pid)).exists()
            || std::fs::read_to_string(format!("/proc/{}/status", d.pid))
                .unwrap_or_default()
                .contains("zombie")
    });
}

#[test]
fn corpus_game_mount_equals_dump() {
    if !fuse_available() {
        return;
    }
    let Some(corpus) = common::corpus() else {
        return;
    };
    let game = corpus.join("game");
    let dir = tempfile::tempdir().unwrap();
    // --ro: the corpus is never written
    let d = Daemon::start(&game, &dir.path().join("mnt"), &["--ro"]);
    let n = diff_every_asset(&game, &d.mnt);
    // the 9 GAFs of corpus/game and maps/example.tnt
    assert_eq!(n, 10, "corpus assets compared");
    let m = d.mnt.display();
    sh(&format!(
        "ls -lR {m} >/dev/null && find {m} >/dev/null && cp -r {m} {}/copy",
        dir.path().display()
    ));
    // other files pass through unchanged
    sh(&format!(
        "diff {m}/gamedata/sidedata.tdf {}/gamedata/sidedata.tdf",
        game.display()
    ));
    let e = std::fs::write(d.mnt.join("gamedata/x.tdf"), b"x").unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EROFS));
    let o = tafs(&["umount", m.to_string().as_str()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    wait_for("unmount", || !is_mounted(&d.mnt));
}

#[test]
fn stale_mount_is_recovered() {
    if !fuse_available() {
        return;
    }
    let game = sample_game();
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("mnt");
    let d = Daemon::start(game.path(), &mnt, &[]);
    // SAFETY: killing the daemon this test started.
    unsafe { libc::kill(d.pid, libc::SIGKILL) };
    wait_for("stale mount", || {
        std::fs::metadata(&mnt).err().and_then(|e| e.raw_os_error()) == Some(libc::ENOTCONN)
    });
    let d2 = Daemon::start(game.path(), &mnt, &[]);
    assert!(d2.mnt.join("anims/demo.gaf/pulse/0.png").is_file());
    let o = tafs(&["umount", mnt.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    wait_for("unmount", || !is_mounted(&mnt));
}

/// A daemon killed while the kernel still caches the root's attributes (`stat` of the
/// mountpoint succeeds, nothing else does): the next mount clears it and mounts.
#[test]
fn stale_mount_with_cached_root_attributes_is_recovered() {
    if !fuse_available() {
        return;
    }
    let game = sample_game();
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("mnt");
    let d = Daemon::start(game.path(), &mnt, &[]);
    assert!(std::fs::metadata(&mnt).unwrap().is_dir());
    // SAFETY: killing the daemon this test started.
    unsafe { libc::kill(d.pid, libc::SIGKILL) };
    // gone, or a zombie (its descriptors, the FUSE connection among them, are closed)
    let stat = format!("/proc/{}/stat", d.pid);
    wait_for("the daemon to exit", || {
        std::fs::read_to_string(&stat).map_or(true, |s| {
            s.rsplit(')')
                .next()
                .and_then(|r| r.split_whitespace().next())
                == Some("Z")
        })
    });
    assert!(
        std::fs::metadata(&mnt).is_ok(),
        "the kernel no longer answers stat from its cache: this test needs it to"
    );
    let d2 = Daemon::start(game.path(), &mnt, &[]);
    assert!(d2.mnt.join("anims/demo.gaf/pulse/0.png").is_file());
    let o = tafs(&["umount", mnt.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    wait_for("unmount", || !is_mounted(&mnt));
}

#[test]
fn foreground_mount_stops_on_sigint() {
    if !fuse_available() {
        return;
    }
    let game = sample_game();
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let _guard = UnmountGuard(mnt.clone());
    let mut child = Command::new(TAFS)
        .args([
            "mount",
            "-v",
            game.path().to_str().unwrap(),
            mnt.to_str().unwrap(),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("mount", || is_mounted(&mnt));
    assert!(mnt.join("anims/demo.gaf/metadata.json").is_file());
    // SAFETY: signalling the child this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let t = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "foreground mount did not stop"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success());
    assert!(!is_mounted(&mnt));
    let mut log = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut log).unwrap();
    assert!(log.contains("mounted on"), "{log}");
}

#[test]
fn clear_errors_not_panics() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("game")).unwrap();
    std::fs::create_dir(d.join("full")).unwrap();
    std::fs::write(d.join("full/x"), b"x").unwrap();
    let s = |p: &str| d.join(p).to_str().unwrap().to_string();
    for (args, want) in [
        (vec![s("missing"), s("full")], "game folder"),
        (vec![s("game"), s("full")], "not empty"),
        (vec![s("game"), s("nope")], "mountpoint"),
        (vec![s("game")], "MOUNTPOINT"),
    ] {
        let mut a = vec!["mount"];
        a.extend(args.iter().map(String::as_str));
        let o = tafs(&a);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{a:?}: {err}");
        assert!(err.contains(want), "{a:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    let o = tafs(&["umount", d.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not a mountpoint"));
}

/// `-o` takes the flags of mount(8) as flags (the kernel refuses them as data: EINVAL), and
/// refuses what a root daemon must not serve (`suid`, `dev`) or a read-only mount cannot be.
#[test]
fn mount_flags_of_dash_o_reach_the_kernel() {
    if !fuse_available() {
        return;
    }
    let game = sample_game();
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let state = dir.path().join("state");
    let (g, m, st) = (
        game.path().to_str().unwrap(),
        mnt.to_str().unwrap(),
        state.to_str().unwrap(),
    );
    for (opts, extra, want) in [
        ("suid", None, "nosuid,nodev"),
        ("nodev,dev", None, "nosuid,nodev"),
        ("relatime", None, "not supported"),
        ("rw", Some("--ro"), "read-only"),
    ] {
        let mut a = vec!["mount", "-d", "-o", opts, "--state-dir", st];
        a.extend(extra);
        a.extend([g, m]);
        let o = tafs(&a);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{a:?}: {err}");
        assert!(err.contains(want), "{a:?}: {err}");
    }
    let d = Daemon::start(
        game.path(),
        &mnt,
        &["-o", "noatime,noexec,rw", "--state-dir", st],
    );
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
    let line = mounts
        .lines()
        .find(|l| l.split(' ').nth(1) == Some(m))
        .unwrap_or_else(|| panic!("{m} not in /proc/self/mounts"));
    let flags: Vec<&str> = line.split(' ').nth(3).unwrap().split(',').collect();
    for f in ["rw", "noatime", "noexec", "nosuid", "nodev"] {
        assert!(flags.contains(&f), "{f} missing: {line}");
    }
    drop(d);
}

#[test]
fn a_second_mount_of_the_same_game_folder_and_state_is_refused() {
    if !fuse_available() {
        return;
    }
    let (game, dir, _d) = mounted_with("notes.txt", b"one");
    let state = dir.path().join("state");
    let s = state.to_str().unwrap();
    let m2 = dir.path().join("m2");
    std::fs::create_dir(&m2).unwrap();
    let _guard = UnmountGuard(m2.clone());
    let o = tafs(&[
        "mount",
        "-d",
        "--state-dir",
        s,
        game.path().to_str().unwrap(),
        m2.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && !is_mounted(&m2),
        "second mount went live: {err}"
    );
    assert!(err.contains("in use by the mount of"), "{err}");
    // read-only mounts stage nothing and may share it
    let m3 = dir.path().join("m3");
    let _d3 = Daemon::start(game.path(), &m3, &["--state-dir", s, "--ro"]);
}

/// A `--ro` mount beside a writable one of the same game folder (what the README suggests
/// for whole-tree scans) shows each commit of the writable one once the binary is replaced:
/// `sed -i` of a CSV cell in the writable mount, then the same CSV in the read-only one.
#[test]
fn a_read_only_mount_beside_a_writable_one_shows_its_commits() {
    if !fuse_available() {
        return;
    }
    let (game, dir, rw) = mounted_with("notes.txt", b"one");
    let state = dir.path().join("state");
    let s = state.to_str().unwrap();
    let ro = Daemon::start(
        game.path(),
        &dir.path().join("ro"),
        &["--state-dir", s, "--ro"],
    );
    let csv = |m: &Path| m.join("anims/UPPER.GAF/pulse/frames.csv");
    let before = std::fs::read_to_string(csv(&ro.mnt)).unwrap();
    assert_eq!(before, std::fs::read_to_string(csv(&rw.mnt)).unwrap());
    // origin_x of the first frame, one more
    sh(&format!(
        "sed -i '2s/^0,11,11,5,/0,11,11,6,/' {}",
        csv(&rw.mnt).display()
    ));
    let after = std::fs::read_to_string(csv(&rw.mnt)).unwrap();
    assert_ne!(after, before, "the sed edit changed nothing");
    assert!(
        after.lines().nth(1).unwrap().starts_with("0,11,11,6,"),
        "{after}"
    );
    wait_for("the commit in the read-only mount", || {
        std::fs::read_to_string(csv(&ro.mnt)).is_ok_and(|t| t == after)
    });
    assert_eq!(diff_every_asset(game.path(), &ro.mnt), 5);
}

/// A foreground `tafs mount -v ARGS GAME MNT`, its log in `log`; stopped with SIGINT.
fn foreground(game: &Path, mnt: &Path, args: &[&str], log: &Path) -> std::process::Child {
    std::fs::create_dir_all(mnt).unwrap();
    let mut a = vec!["mount", "-v"];
    a.extend_from_slice(args);
    a.push(game.to_str().unwrap());
    a.push(mnt.to_str().unwrap());
    let child = Command::new(TAFS)
        .args(&a)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .unwrap();
    wait_for("mount", || is_mounted(mnt));
    child
}

/// A read-only mount that only its owner reaches lets the kernel open files itself once
/// the watch is authoritative (no OPEN/RELEASE/FLUSH round trips): every file still reads
/// as `tafs gaf dump` writes it, direct changes in the game folder still show (pages of a
/// changed file dropped), and the status file is never stale. A writable mount and a
/// read-only one with `-o allow_other` keep their opens; the merged view (read-only, its
/// inodes versioned) leaves them to the kernel too.
#[test]
fn read_only_mount_leaves_opens_to_the_kernel() {
    if !fuse_available() {
        return;
    }
    const LINE: &str = "files open without a round trip";
    for (args, open_less) in [
        (&["--ro"][..], true),
        (&[][..], false),
        (&["--ro", "-o", "allow_other"][..], false),
        // (read-only with versioned inodes: a changed source is another inode)
        (&["--merged"][..], true),
    ] {
        let game = sample_game();
        put(&game.path().join("notes.txt"), "one");
        let dir = tempfile::tempdir().unwrap();
        let mnt = dir.path().join("mnt");
        let log = dir.path().join("log");
        let state = dir.path().join("state");
        let mut a = args.to_vec();
        a.extend(["--state-dir", state.to_str().unwrap()]);
        let _guard = UnmountGuard(mnt.clone());
        let mut child = foreground(game.path(), &mnt, &a, &log);
        // (the watch is authoritative before the mount goes live)
        let m = mnt.display();
        // read everything twice (the second time from the kernel's pages where kept)
        for _ in 0..2 {
            sh(&format!("tar cf - -C {m} . | wc -c"));
        }
        assert_eq!(diff_every_asset(game.path(), &mnt), 5, "{args:?}");
        // direct changes show although the kernel opened the files itself
        assert_eq!(
            std::fs::read_to_string(mnt.join("notes.txt")).unwrap(),
            "one"
        );
        std::fs::write(game.path().join("notes.txt"), "two").unwrap();
        wait_for("a rewritten file", || {
            std::fs::read_to_string(mnt.join("notes.txt")).is_ok_and(|s| s == "two")
        });
        let gaf = game.path().join("anims/UPPER.GAF");
        let frame = mnt.join("anims/UPPER.GAF/metadata.json");
        let before = std::fs::read(&frame).unwrap();
        let tex = tafs::formats::gaf::write(&tafs::sample::texture_gaf()).unwrap();
        mount_common::replace(&gaf, &tex);
        wait_for("a replaced binary", || {
            std::fs::read(&frame).is_ok_and(|b| b != before)
        });
        assert_eq!(diff_every_asset(game.path(), &mnt), 5, "{args:?}");
        // unmount, then the log says whether opens were left to the kernel
        // SAFETY: signalling the child this test started.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        assert!(child.wait().unwrap().success());
        let text = std::fs::read_to_string(&log).unwrap();
        assert_eq!(text.contains(LINE), open_less, "{args:?}:\n{text}");
    }
}

/// The sample game with `data` at `rel`, mounted writable: the game folder, the folder of
/// the mountpoint and state, the daemon.
fn mounted_with(rel: &str, data: &[u8]) -> (tempfile::TempDir, tempfile::TempDir, Daemon) {
    let game = sample_game();
    put(&game.path().join(rel), data);
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let d = Daemon::start(
        game.path(),
        &dir.path().join("mnt"),
        &["--state-dir", state.to_str().unwrap()],
    );
    (game, dir, d)
}

/// Pass-through files are handed to the kernel (FUSE passthrough): once open, reading and
/// writing them needs no daemon at all (checked with the daemon stopped). Opens of one inode
/// stay of one kind: a file created through the mount and still open is opened again
/// through the daemon, never refused for mixing the two.
#[test]
fn pass_through_files_are_read_and_written_by_the_kernel() {
    use std::io::Write;
    if !fuse_available() {
        return;
    }
    let data: Vec<u8> = (0..1 << 20).map(|i: u32| (i % 251) as u8).collect();
    let (game, _dir, d) = mounted_with("music/track.bin", &data);
    let path = d.mnt.join("music/track.bin");
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
        .unwrap();
    let r = std::fs::File::open(&path).unwrap();
    let data_len = data.len();
    // (the first write of an inode asks the daemon for `security.capability`, once)
    std::os::unix::fs::FileExt::write_all_at(&f, &data[100..101], 100).unwrap();
    // with the daemon stopped, both descriptors still read and write (nothing was cached:
    // the file was never read through the mount)
    // SAFETY: stopping and continuing the daemon this test started.
    unsafe { libc::kill(d.pid, libc::SIGSTOP) };
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        // (plain reads and writes: no fstat, whose attributes may be the daemon's to give)
        use std::os::unix::fs::FileExt;
        let mut got = vec![0; data_len];
        let mut n = 0;
        while n < got.len() {
            match r.read_at(&mut got[n..], n as u64).unwrap() {
                0 => break,
                k => n += k,
            }
        }
        got.truncate(n);
        f.write_all_at(b"EDITED", 0).unwrap();
        let _ = tx.send(got);
    });
    let got = rx.recv_timeout(Duration::from_secs(5));
    unsafe { libc::kill(d.pid, libc::SIGCONT) };
    let got = got.expect("I/O of an open pass-through file waited for the daemon");
    assert!(got == data, "read through the kernel differs");
    let on_disk = std::fs::read(game.path().join("music/track.bin")).unwrap();
    assert_eq!(&on_disk[..6], b"EDITED");
    assert_eq!(&on_disk[6..], &data[6..]);
    // a file created through the mount and still open: a second open works
    let new = d.mnt.join("music/new.txt");
    let mut w = std::fs::File::create(&new).unwrap();
    w.write_all(b"first ").unwrap();
    let mut a = std::fs::OpenOptions::new().append(true).open(&new).unwrap();
    a.write_all(b"second").unwrap();
    drop(a);
    drop(w);
    assert_eq!(std::fs::read(&new).unwrap(), b"first second");
    // and opened again once closed: handed to the kernel, appends land at the end
    let mut a = std::fs::OpenOptions::new().append(true).open(&new).unwrap();
    a.write_all(b"!").unwrap();
    drop(a);
    assert_eq!(
        std::fs::read(game.path().join("music/new.txt")).unwrap(),
        b"first second!"
    );
}

/// Opens and closes of one pass-through file racing on several threads (each open of an
/// inode joins the backing file of its other opens, or makes one when it has none) all read
/// the file's bytes, and writes through some land.
#[test]
fn racing_opens_of_one_pass_through_file_read_its_bytes() {
    use std::os::unix::fs::FileExt;
    if !fuse_available() {
        return;
    }
    let data: Vec<u8> = (0..64 << 10).map(|i: u32| (i % 253) as u8).collect();
    let (game, _dir, d) = mounted_with("music/race.bin", &data);
    let path = d.mnt.join("music/race.bin");
    std::thread::scope(|s| {
        for t in 0..4u8 {
            let (path, data) = (&path, &data);
            s.spawn(move || {
                for i in 0..150 {
                    let f = std::fs::OpenOptions::new()
                        .read(true)
                        .write(t == 0 && i % 10 == 0)
                        .open(path)
                        .unwrap();
                    let mut got = vec![0; data.len()];
                    f.read_exact_at(&mut got, 0).unwrap();
                    assert!(got == *data, "thread {t}, open {i}: other bytes");
                    if t == 0 && i % 10 == 0 {
                        // the same bytes again: every reader still reads the original
                        f.write_all_at(&data[..16], 0).unwrap();
                    }
                }
            });
        }
    });
    assert!(std::fs::read(game.path().join("music/race.bin")).unwrap() == data);
}

/// What tools ask of a descriptor besides reads and writes gets the answers of a disk file
/// the mount cannot do more for, and no warning in the log: `isatty` (an ioctl, with every
/// Python `open`) is false and the ioctl `ENOTTY`; `SEEK_DATA`/`SEEK_HOLE` see one data
/// extent; `posix_fallocate` works by writing, `fallocate(1)` says "Operation not
/// supported", `lsattr` too; `cp` inside the mount (`copy_file_range`) copies generated and
/// plain files.
#[test]
fn ioctl_lseek_fallocate_and_in_mount_copies_answer_quietly() {
    if !fuse_available() {
        return;
    }
    let game = sample_game();
    put(&game.path().join("notes.txt"), "plain bytes");
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("mnt");
    let log = dir.path().join("log");
    let state = dir.path().join("state");
    let _guard = UnmountGuard(mnt.clone());
    let mut child = foreground(
        game.path(),
        &mnt,
        &["--state-dir", state.to_str().unwrap()],
        &log,
    );
    let m = mnt.display();
    let script = format!(
        r#"
import errno, fcntl, glob, os, termios
m = '{m}'
paths = [sorted(glob.glob(m + '/anims/UPPER.GAF/*/0.png'))[0],
         m + '/anims/UPPER.GAF/metadata.json', m + '/notes.txt']
for p, flags in [(p, f) for p in paths for f in (os.O_RDONLY, os.O_RDWR)]:
    fd = os.open(p, flags)
    size = os.fstat(fd).st_size
    assert size > 0, p
    assert not os.isatty(fd), p
    try:
        fcntl.ioctl(fd, termios.TCGETS, bytes(64))
        raise SystemExit(p + ': TCGETS answered')
    except OSError as e:
        assert e.errno == errno.ENOTTY, (p, e)
    assert os.lseek(fd, 0, os.SEEK_DATA) == 0, p
    assert os.lseek(fd, 0, os.SEEK_HOLE) == size, p
    os.close(fd)
fd = os.open(m + '/made.bin', os.O_CREAT | os.O_RDWR, 0o644)
os.posix_fallocate(fd, 0, 10000)
assert os.fstat(fd).st_size == 10000
os.close(fd)
print('ok')
"#
    );
    let out = Command::new("python3").arg("-c").arg(&script).output();
    let out = out.expect("python3 is needed (apt-get install -y python3)");
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // (the kernel turns the ioctl's ENOTTY into EOPNOTSUPP for file flags)
    for (tool, pkg, args) in [
        ("fallocate", "util-linux", &["-l", "4096", "falloc.bin"][..]),
        ("lsattr", "e2fsprogs", &["notes.txt"][..]),
    ] {
        let out = Command::new(tool)
            .args(args)
            .current_dir(&mnt)
            .output()
            .unwrap_or_else(|e| panic!("{tool}: {e} (apt-get install -y {pkg})"));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{tool}");
        assert!(err.contains("Operation not supported"), "{tool}: {err}");
    }
    sh(&format!(
        "cp {m}/notes.txt {m}/notes2.txt && cp {m}/anims/UPPER.GAF/metadata.json {m}/meta.json"
    ));
    assert_eq!(
        std::fs::read(mnt.join("notes2.txt")).unwrap(),
        b"plain bytes"
    );
    assert_eq!(
        std::fs::read(mnt.join("meta.json")).unwrap(),
        std::fs::read(mnt.join("anims/UPPER.GAF/metadata.json")).unwrap()
    );
    assert_eq!(
        std::fs::read(game.path().join("meta.json")).unwrap(),
        std::fs::read(mnt.join("meta.json")).unwrap()
    );
    // SAFETY: signalling the child this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    assert!(child.wait().unwrap().success());
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        !text.contains("Not Implemented") && !text.contains("WARN"),
        "the log warns:\n{text}"
    );
}
