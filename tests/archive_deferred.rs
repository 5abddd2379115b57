//! Archive commits put off while saves keep coming (the mount's default
//! `--archive-commit-delay`), through a real mount with real tools: an `rsync -a` of a tree
//! of plain files into an archive is one repack, not one per file; `tar x`, `unzip -o` and
//! `cp -a` of the same tree over its members (`tar` and `unzip` delete each file before
//! writing it) leave the archive untouched; a deletion alone lands on its own; an `fsync`
//! commits at once; an unmount writes what is still put off; `git clone` and `git checkout`
//! leave the checked-out files in the archive; `mv` of a GAF's folder or of a plain folder
//! into an archive and back keeps every byte (SEMANTICS.md, "Writing inside archives").

mod common;
mod mount_common;
mod writeback_common;

use common::tafs_ok as ok;
use mount_common::{fuse_available, sh};
use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tafs::formats::hpi;

/// Every file member: path → bytes.
fn members(archive: &Path) -> BTreeMap<String, Vec<u8>> {
    let bytes = std::fs::read(archive).unwrap();
    let lim = hpi::HpiLimits::default();
    let a = hpi::parse(&bytes, &lim).unwrap();
    a.files()
        .map(|(i, f)| (a.path_str(i), a.read(&bytes, f, &lim).unwrap()))
        .collect()
}

/// The archive file's identity: inode, mtime.
fn ident(archive: &Path) -> (u64, i64, i64) {
    let m = std::fs::metadata(archive).unwrap();
    (m.ino(), m.mtime(), m.mtime_nsec())
}

/// Waits (at most 10 s) until the archive at `dir` is clean (nothing put off, no commit
/// under way); its status then.
fn settled(dir: &Path) -> String {
    let t0 = Instant::now();
    loop {
        let s = std::fs::read_to_string(dir.join(".tafs-status")).unwrap_or_default();
        if s.lines().next().is_some_and(|l| l.ends_with(": clean")) {
            return s;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "not clean after 10 s: {s}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Versions of `archive` in the history of state folder `state`.
fn versions(state: &Path, archive: &Path) -> usize {
    let out = ok(&[
        "history",
        "--state-dir",
        state.to_str().unwrap(),
        archive.to_str().unwrap(),
    ]);
    out.lines().filter(|l| !l.trim().is_empty()).count()
}

/// The game folder (made), state folder and mount point in `work`.
fn folders(work: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let game = work.join("game");
    std::fs::create_dir_all(&game).unwrap();
    (game, work.join("state"), work.join("mnt"))
}

/// `game/x.hpi` packed by `tafs hpi pack` from `gamedata/side.tdf` and `more` files, in a
/// folder of `work`.
fn pack_into(work: &Path, game: &Path, more: &[(&str, &[u8])]) -> PathBuf {
    let packed = work.join("packed");
    mount_common::put(&packed.join("gamedata/side.tdf"), b"[SIDE0]{name=ARM;}");
    for (rel, b) in more {
        mount_common::put(&packed.join(rel), b);
    }
    let arch = game.join("x.hpi");
    ok(&[
        "hpi",
        "pack",
        packed.to_str().unwrap(),
        "-t",
        arch.to_str().unwrap(),
    ]);
    arch
}

/// A work folder with the game folder holding `x.hpi` ([`pack_into`]), the state folder and
/// the mount point: (work, game, state, mnt, archive); `None` without FUSE.
fn fixture() -> Option<(tempfile::TempDir, PathBuf, PathBuf, PathBuf, PathBuf)> {
    if !fuse_available() {
        return None;
    }
    let work = tempfile::tempdir().unwrap();
    let (game, state, mnt) = folders(work.path());
    let arch = pack_into(work.path(), &game, &[]);
    Some((work, game, state, mnt, arch))
}

#[test]
fn whole_folder_tools_into_an_archive_commit_together_and_repeat_as_no_ops() {
    let Some((work, game, state, mnt, arch)) = fixture() else {
        return;
    };
    let w = work.path();
    // a mod tree: 20 scripts, a sub-folder, a file at the top
    let src = w.join("mod");
    let mut files = vec![("readme2.txt".to_string(), b"readme\n".to_vec())];
    for i in 0..20 {
        files.push((
            format!("scripts/s{i}.txt"),
            format!("script {i}\n").into_bytes(),
        ));
    }
    files.push(("scripts/sub/c.txt".into(), b"three\n".to_vec()));
    for (rel, b) in &files {
        mount_common::put(&src.join(rel), b);
    }
    sh(&format!(
        "find {} -exec touch -h -d 2001-02-03T04:05:06 {{}} +",
        src.display()
    ));
    sh(&format!(
        "cd {0} && tar cf {1}/mod.tar . && zip -qr {1}/mod.zip .",
        src.display(),
        w.display()
    ));
    let m = mount_common::mount(
        &game,
        &mnt,
        &[
            "--ttl",
            "0",
            "--operation-gap",
            "0",
            "--state-dir",
            state.to_str().unwrap(),
        ],
    );
    let mx = m.mnt.join("x.hpi");
    let has_the_tree = |why: &str| {
        let got = members(&arch);
        for (rel, b) in &files {
            assert_eq!(got.get(rel.as_str()), Some(b), "{rel} after {why}");
        }
        assert!(got.contains_key("gamedata/side.tdf"), "{why}");
    };

    // rsync -a of 22 files: one repack (one version in the history; each commit would keep
    // one, --operation-gap 0)
    sh(&format!("rsync -a {}/ {}/", src.display(), mx.display()));
    let status = settled(&mx);
    has_the_tree("rsync -a");
    let n = versions(&state, &arch);
    assert!(n <= 2, "rsync -a of 22 files made {n} commits: {status}");
    let after_rsync = ident(&arch);
    assert_eq!(
        sh(&format!("rsync -ai {}/ {}/", src.display(), mx.display())),
        ""
    );

    // tar x, unzip -o and cp -a of the same tree over its members, each twice: the archive
    // is not written
    for (tool, cmd) in [
        (
            "tar x",
            format!("tar xf {}/mod.tar -C {}", w.display(), mx.display()),
        ),
        (
            "unzip -o",
            format!("unzip -qo {}/mod.zip -d {}", w.display(), mx.display()),
        ),
        (
            "cp -a",
            format!("cp -a {}/. {}/", src.display(), mx.display()),
        ),
    ] {
        for run in 1..=2 {
            sh(&cmd);
            settled(&mx);
            has_the_tree(tool);
            assert_eq!(
                ident(&arch),
                after_rsync,
                "{tool} (run {run}) wrote the archive"
            );
        }
    }
    assert_eq!(versions(&state, &arch), n, "versions made by the repeats");

    // a deletion alone lands
    sh(&format!("rm {}/scripts/s0.txt", mx.display()));
    settled(&mx);
    assert!(!members(&arch).contains_key("scripts/s0.txt"));

    // an fsync commits at once (checked before the delay has passed)
    let p = mx.join("scripts/synced.txt");
    let t0 = Instant::now();
    sh(&format!(
        "python3 -c \"import os; f = open('{}', 'wb'); f.write(b'synced'); f.flush(); \
         os.fsync(f.fileno())\"",
        p.display()
    ));
    let got = members(&arch).get("scripts/synced.txt").cloned();
    if t0.elapsed() < Duration::from_millis(200) {
        assert_eq!(got.as_deref(), Some(&b"synced"[..]), "fsync did not commit");
    }
    settled(&mx);

    // what is put off when the mount ends is written
    std::fs::write(mx.join("scripts/last.txt"), b"last\n").unwrap();
    drop(m);
    assert_eq!(
        members(&arch).get("scripts/last.txt").map(Vec::as_slice),
        Some(&b"last\n"[..]),
        "the unmount dropped a save put off"
    );
}

/// A commit put off that fails (the game folder full) fails no call: `cp` succeeds, the
/// error is in `.tafs-status`, the archive stays as it was and the saved file stays staged;
/// an `fsync` then fails with the error, and with room again succeeds and commits.
#[test]
fn a_commit_put_off_that_fails_is_in_the_status_and_fails_the_fsync() {
    if !fuse_available() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    let (game, state, mnt) = folders(w);
    let Some(_fs) = mount_common::small_tmpfs(&game, "1200k") else {
        return;
    };
    // incompressible, so the archive is as large as it
    let mut x: u32 = 7;
    let noise: Vec<u8> = (0..600_000)
        .map(|_| {
            x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (x >> 24) as u8
        })
        .collect();
    let arch = pack_into(w, &game, &[("gamedata/big.bin", &noise)]);
    let orig = std::fs::read(&arch).unwrap();
    let m = mount_common::mount(
        &game,
        &mnt,
        &["--ttl", "0", "--state-dir", state.to_str().unwrap()],
    );
    let mx = m.mnt.join("x.hpi");
    let _ = std::process::Command::new("dd")
        .arg("if=/dev/zero")
        .arg(format!("of={}", game.join("fill").display()))
        .args(["bs=1k", "count=4000"])
        .output();
    std::fs::write(w.join("side.tdf"), b"[SIDE0]{name=CORE;}").unwrap();
    sh(&format!(
        "cp {} {}/gamedata/side.tdf",
        w.join("side.tdf").display(),
        mx.display()
    ));
    let t0 = Instant::now();
    let status = loop {
        let s = std::fs::read_to_string(mx.join(".tafs-status")).unwrap_or_default();
        if s.contains("No space left") {
            break s;
        }
        assert!(t0.elapsed() < Duration::from_secs(10), "no error: {s}");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(
        status.contains("uncommitted: gamedata/side.tdf"),
        "{status}"
    );
    assert!(std::fs::read(&arch).unwrap() == orig, "the archive changed");
    assert_eq!(
        std::fs::read(mx.join("gamedata/side.tdf")).unwrap(),
        b"[SIDE0]{name=CORE;}",
        "the save is shown"
    );
    let fsync = format!(
        "python3 -c \"import os; f = os.open('{}/gamedata/side.tdf', os.O_WRONLY); \
         os.fsync(f)\"",
        mx.display()
    );
    let o = std::process::Command::new("sh")
        .args(["-c", &fsync])
        .output()
        .unwrap();
    assert!(!o.status.success(), "fsync succeeded on a full folder");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("No space left"), "{err}");
    std::fs::remove_file(game.join("fill")).unwrap();
    sh(&fsync);
    assert_eq!(
        members(&arch).get("gamedata/side.tdf").map(Vec::as_slice),
        Some(&b"[SIDE0]{name=CORE;}"[..])
    );
    drop(m);
}

/// A daemon killed while a commit was put off leaves the save staged and uncommitted; the
/// next mount of the game folder commits it after the delay, without another save.
#[test]
fn saves_a_killed_daemon_put_off_commit_at_the_next_mount() {
    let Some((_work, game, state, mnt, arch)) = fixture() else {
        return;
    };
    let _guard = mount_common::UnmountGuard(mnt.clone());
    let st = state.to_str().unwrap();
    let pid = mount_common::daemon_pid(
        &game,
        &mnt,
        &[
            "--ttl",
            "0",
            "--archive-commit-delay",
            "60",
            "--state-dir",
            st,
        ],
    );
    std::fs::write(mnt.join("x.hpi/gamedata/new.txt"), b"new\n").unwrap();
    // SAFETY: killing the daemon this test started.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    let t0 = Instant::now();
    while std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit_once(") ")
            .is_some_and(|(_, r)| !r.starts_with('Z'))
    }) {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "the daemon lives on"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = std::process::Command::new("umount")
        .arg("-l")
        .arg(&mnt)
        .status();
    assert!(
        !members(&arch).contains_key("gamedata/new.txt"),
        "committed before the kill"
    );
    let m = mount_common::mount(&game, &mnt, &["--ttl", "0", "--state-dir", st]);
    let t0 = Instant::now();
    while members(&arch).get("gamedata/new.txt").map(Vec::as_slice) != Some(&b"new\n"[..]) {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "the save left by the killed daemon was not committed"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    settled(&m.mnt.join("x.hpi"));
    drop(m);
}

/// Member files of `archive` under `prefix/`, by their path below it.
fn members_under(archive: &Path, prefix: &str) -> BTreeMap<String, Vec<u8>> {
    members(archive)
        .into_iter()
        .filter_map(|(p, b)| Some((p.strip_prefix(prefix)?.to_string(), b)))
        .collect()
}

/// The member files of a checked-out work tree at `dir`: the files whose path has no
/// component starting with `.` and whose name has an extension (what an archive takes;
/// SEMANTICS.md, "Writing inside archives").
fn member_files_of(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let out = sh(&format!(
        "cd '{}' && find . -type f -not -path '*/.*' -name '*.*'",
        dir.display()
    ));
    out.lines()
        .map(|l| {
            let rel = l.trim_start_matches("./").to_string();
            let b = std::fs::read(dir.join(&rel)).unwrap();
            (rel, b)
        })
        .collect()
}

/// `git clone` of a mod repository into an archive and `git checkout` between its branches
/// (files changed, deleted, added, a folder moved) end with the archive holding the
/// checked-out files; `.git` and the dot-files stay staged (shown, never members); the work
/// tree stays clean across a remount, and a repeated checkout writes nothing.
#[test]
fn git_clone_and_checkout_in_an_archive_leave_the_checked_out_files() {
    let Some((work, game, state, mnt, arch)) = fixture() else {
        return;
    };
    let w = work.path();
    let repo = w.join("repo");
    let git = |dir: &Path, args: &str| {
        sh(&format!(
            "cd '{}' && git -c user.email=t@t -c user.name=t {args}",
            dir.display()
        ))
    };
    for (rel, b) in [
        ("scripts/armcom.bos", &b"piece base;\n"[..]),
        ("units/armcom.fbi", b"[UNITINFO]{Name=Commander;}\n"),
        ("gamedata/extra.tdf", b"[EXTRA]{}\n"),
        ("README", b"a mod\n"),
        (".gitignore", b"*.bak\n"),
    ] {
        mount_common::put(&repo.join(rel), b);
    }
    git(&repo, "init -q -b main && git add -A && git commit -qm one");
    git(&repo, "checkout -q -b edit");
    std::fs::write(repo.join("scripts/armcom.bos"), b"piece base, turret;\n").unwrap();
    std::fs::write(repo.join("scripts/new.bos"), b"piece new;\n").unwrap();
    git(
        &repo,
        "rm -q units/armcom.fbi && git mv gamedata tables && git add -A && git commit -qm two \
         && git checkout -q main",
    );
    let main_tree = member_files_of(&repo);
    git(&repo, "checkout -q edit");
    let edit_tree = member_files_of(&repo);
    git(&repo, "checkout -q main");
    assert_ne!(main_tree, edit_tree);

    let st = state.to_str().unwrap();
    let opts = ["--ttl", "0", "--operation-gap", "0", "--state-dir", st];
    let m = mount_common::mount(&game, &mnt, &opts);
    let mx = m.mnt.join("x.hpi");
    let wt = mx.join("mod");
    sh(&format!(
        "git clone -q '{}' '{}'",
        repo.display(),
        wt.display()
    ));
    settled(&mx);
    assert_eq!(members_under(&arch, "mod/"), main_tree, "after git clone");
    assert!(members(&arch).contains_key("gamedata/side.tdf"));
    assert_eq!(git(&wt, "status --porcelain"), "");
    // the staged-only files are there for git and the user
    assert!(wt.join(".git/HEAD").is_file() && wt.join("README").is_file());

    git(&wt, "checkout -q edit");
    settled(&mx);
    assert_eq!(
        members_under(&arch, "mod/"),
        edit_tree,
        "after git checkout edit"
    );
    assert_eq!(git(&wt, "status --porcelain"), "");
    drop(m);

    // a new mount: the work tree is as git left it
    let m = mount_common::mount(&game, &mnt, &opts);
    let mx = m.mnt.join("x.hpi");
    let wt = mx.join("mod");
    assert_eq!(git(&wt, "status --porcelain"), "", "after a remount");
    assert_eq!(git(&wt, "fsck --no-progress --no-dangling 2>&1"), "");
    git(&wt, "checkout -q main");
    settled(&mx);
    assert_eq!(
        members_under(&arch, "mod/"),
        main_tree,
        "after git checkout main"
    );
    assert_eq!(git(&wt, "status --porcelain"), "");
    let before = ident(&arch);
    let n = versions(&state, &arch);
    git(&wt, "checkout -q main && git checkout -q -f main");
    settled(&mx);
    assert_eq!(
        ident(&arch),
        before,
        "a repeated checkout wrote the archive"
    );
    assert_eq!(versions(&state, &arch), n);
    drop(m);
}

/// `mv` of asset folders (a GAF, the corpus's `abboom.gaf` when present) and of a plain
/// folder into an archive, and back out: renaming across the archive's boundary is `EXDEV`,
/// so `mv` copies and deletes; each ends with the same bytes on the other side (the GAF
/// member is the loose binary byte for byte, and back), nothing left behind.
#[test]
fn mv_of_folders_into_an_archive_and_back_keeps_every_byte() {
    let Some((_work, game, state, mnt, arch)) = fixture() else {
        return;
    };
    let stock = members(&arch);
    let mut gafs = vec![("fx.gaf", writeback_common::sample_bytes())];
    match common::corpus() {
        Some(c) => gafs.push((
            "abboom.gaf",
            std::fs::read(c.join("game/anims/abboom.gaf")).unwrap(),
        )),
        None => eprintln!("corpus absent: the sample GAF only"),
    }
    for (n, b) in &gafs {
        mount_common::put(&game.join("anims").join(n), b);
    }
    mount_common::put(&game.join("units/armcom.fbi"), b"[UNITINFO]{}\n");
    let m = mount_common::mount(
        &game,
        &mnt,
        &["--ttl", "0", "--state-dir", state.to_str().unwrap()],
    );
    let mx = m.mnt.join("x.hpi");
    std::fs::create_dir(mx.join("anims")).unwrap();
    for (n, b) in &gafs {
        sh(&format!(
            "mv '{}' '{}/'",
            m.mnt.join("anims").join(n).display(),
            mx.join("anims").display()
        ));
        settled(&mx);
        assert_eq!(
            members(&arch).get(&format!("anims/{n}")),
            Some(b),
            "{n} moved into the archive"
        );
        assert!(!game.join("anims").join(n).exists(), "{n} left behind");
    }
    sh(&format!(
        "mv '{}' '{}/'",
        m.mnt.join("units").display(),
        mx.display()
    ));
    settled(&mx);
    assert_eq!(
        members(&arch).get("units/armcom.fbi").map(Vec::as_slice),
        Some(&b"[UNITINFO]{}\n"[..])
    );
    assert!(!game.join("units").exists());

    // and back out
    for (n, b) in &gafs {
        sh(&format!(
            "mv '{}' '{}/'",
            mx.join("anims").join(n).display(),
            m.mnt.join("anims").display()
        ));
        assert_eq!(
            &std::fs::read(game.join("anims").join(n)).unwrap(),
            b,
            "{n} moved out of the archive"
        );
    }
    sh(&format!(
        "mv '{}' '{}/'",
        mx.join("units").display(),
        m.mnt.display()
    ));
    assert_eq!(
        std::fs::read(game.join("units/armcom.fbi")).unwrap(),
        b"[UNITINFO]{}\n"
    );
    std::fs::remove_dir(mx.join("anims")).unwrap();
    settled(&mx);
    assert_eq!(
        members(&arch),
        stock,
        "the archive after everything moved out"
    );
    drop(m);
}
