//! Archive commits stream (SEMANTICS.md, "Archives"): through a real mount of the built
//! binary, a `cp` onto one small member of a self-made archive of about 100 MiB of hardly
//! compressible members keeps the daemon's peak RSS far below the archive's size (the
//! archive is read by range and the new one written range by range into the temporary
//! file), gives an archive whose members are the packed folder's files with the edit, whose
//! other members keep their stored bytes (compared range by range with the original), and
//! whose old version is in the history; a save that changes nothing does not rewrite it. A
//! full folder fails the save with `ENOSPC`, and a commit killed after its rename is
//! recognised at the next start from the archive's record, read by range. A merged view
//! writing into such an archive (`--into`) reads it by range too: its start, `.tafs-status`
//! and `tafs diff`.

mod common;
mod mount_common;
mod writeback_common;

use common::{noise, tafs_ok};
use mount_common::{fuse_available, sh, UnmountGuard};
use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Command;
use tafs::formats::hpi;

/// Members of 2 MiB; `noise` compresses to about half, so the archive is about 100 MiB.
const MEMBERS: u32 = 98;
const MEMBER: usize = 2 << 20;
/// `--cache-size` of the mount, MiB.
const CACHE_MIB: u64 = 16;
/// What the daemon may take beyond its cache, MiB (the archive alone is 96 MiB and more).
const SLACK_MIB: u64 = 64;

/// Mounts `game` on `mnt` with write-back (`--daemon`); returns the serving process's pid.
fn mount(game: &Path, mnt: &Path, state: &Path) -> i32 {
    let cache = format!("{CACHE_MIB}M");
    // every save commits at once (what each commit costs is measured; a failed one fails
    // its save)
    let args = [
        "--ttl",
        "0",
        "--operation-gap",
        "0",
        "--archive-commit-delay",
        "0",
        "--cache-size",
        &cache,
    ];
    let state = state.to_str().unwrap();
    mount_common::daemon_pid(game, mnt, &[&args[..], &["--state-dir", state]].concat())
}

/// Peak resident set of process `pid` so far (`VmHWM`), MiB.
fn peak_rss_mib(pid: i32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no VmHWM in {status}"));
    kb / 1024
}

/// Every member of the archive `data` by path: its record (stored range, method, size).
fn records(data: &[u8]) -> BTreeMap<String, hpi::FileInfo> {
    let a = hpi::parse(data, &hpi::HpiLimits::default()).unwrap();
    a.files().map(|(i, f)| (a.path_str(i), *f)).collect()
}

/// The stored bytes of member `f` (offset and length from its record).
fn stored<'a>(data: &'a [u8], f: &hpi::FileInfo) -> &'a [u8] {
    let at = f.offset as usize;
    &data[at..at + f.stored_len as usize]
}

/// Identity of a file as a change shows in it.
fn ident(p: &Path) -> (u64, i64, i64, i64, i64, u64) {
    let m = std::fs::metadata(p).unwrap();
    (
        m.ino(),
        m.mtime(),
        m.mtime_nsec(),
        m.ctime(),
        m.ctime_nsec(),
        m.size(),
    )
}

fn history(state: &Path) -> Vec<std::path::PathBuf> {
    let mut v = Vec::new();
    for d in std::fs::read_dir(state.join("history"))
        .into_iter()
        .flatten()
    {
        for e in std::fs::read_dir(d.unwrap().path()).unwrap() {
            v.push(e.unwrap().path());
        }
    }
    v
}

/// `MEMBERS` sounds of `MEMBER` bytes of noise in `src/sounds`, packed into `arch` (about
/// 100 MiB).
fn pack_sounds(src: &Path, arch: &Path, extra: impl FnOnce(&Path)) {
    std::fs::create_dir_all(src.join("sounds")).unwrap();
    for i in 0..MEMBERS {
        let p = src.join(format!("sounds/s{i:03}.wav"));
        std::fs::write(p, noise(MEMBER, i + 1)).unwrap();
    }
    extra(src);
    tafs_ok(&[
        "hpi",
        "pack",
        src.to_str().unwrap(),
        "-t",
        arch.to_str().unwrap(),
    ]);
}

#[test]
fn a_one_member_commit_into_a_big_archive_streams() {
    if !fuse_available() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    let [src, game, state, mnt] = ["src", "game", "state", "mnt"].map(|d| w.join(d));
    std::fs::create_dir_all(&game).unwrap();
    let side = b"[SIDE0]\r\n{\r\nname=ARM;\r\n}\r\n".to_vec();
    let arch = game.join("x.hpi");
    pack_sounds(&src, &arch, |src| {
        std::fs::create_dir_all(src.join("gamedata")).unwrap();
        std::fs::write(src.join("gamedata/side.tdf"), &side).unwrap();
    });
    let orig = std::fs::read(&arch).unwrap();
    assert!(
        orig.len() >= 96 << 20,
        "the archive is {} bytes, under 96 MiB",
        orig.len()
    );
    let before = records(&orig);
    let orig_ino = std::fs::metadata(&arch).unwrap().ino();

    let _guard = UnmountGuard(mnt.clone());
    let pid = mount(&game, &mnt, &state);
    let mx = mnt.join("x.hpi");
    assert_eq!(
        std::fs::read(mx.join("gamedata/side.tdf")).unwrap(),
        side,
        "the member as packed"
    );
    let listed = sh(&format!("ls {}", mx.join("sounds").display()));
    assert_eq!(listed.lines().count(), MEMBERS as usize);

    // one small member edited with cp
    let edited = b"[SIDE0]\r\n{\r\nname=CORE;\r\ncommander=CORCOM;\r\n}\r\n".to_vec();
    std::fs::write(w.join("side.tdf"), &edited).unwrap();
    sh(&format!(
        "cp {} {}",
        w.join("side.tdf").display(),
        mx.join("gamedata/side.tdf").display()
    ));
    let status = status_with(&mx, "committed");
    assert!(status.contains("committed"), "{status}");
    let peak = peak_rss_mib(pid);
    println!("daemon peak RSS after the commit: {peak} MiB");
    assert!(
        peak < SLACK_MIB + CACHE_MIB,
        "a one-member commit into a {} MiB archive peaked at {peak} MiB",
        orig.len() >> 20
    );

    // the new archive: the packed folder with the edit; every other member's stored bytes
    // as they were (the one edited member is compressed anew)
    let new = std::fs::read(&arch).unwrap();
    let after = records(&new);
    assert_eq!(
        before.keys().collect::<Vec<_>>(),
        after.keys().collect::<Vec<_>>()
    );
    let a = hpi::parse(&new, &hpi::HpiLimits::default()).unwrap();
    for (i, f) in a.files() {
        let path = a.path_str(i);
        let want = if path == "gamedata/side.tdf" {
            edited.clone()
        } else {
            std::fs::read(src.join(&path)).unwrap()
        };
        assert!(
            hpi::read_member(&new, &a, f).unwrap() == want,
            "{path} is not the packed file"
        );
    }
    for (path, old) in &before {
        let now = &after[path];
        if path == "gamedata/side.tdf" {
            assert_eq!(now.size as usize, edited.len());
            continue;
        }
        assert_eq!(
            (now.size, now.method, now.chunked, now.stored_len),
            (old.size, old.method, old.chunked, old.stored_len),
            "{path}"
        );
        assert!(
            stored(&new, now) == stored(&orig, old),
            "{path}: stored bytes differ"
        );
    }
    // the old version is in the history (a hard link of the replaced file: no copy)
    let h = history(&state);
    assert_eq!(h.len(), 1, "{h:?}");
    assert_eq!(std::fs::metadata(&h[0]).unwrap().ino(), orig_ino);
    assert!(std::fs::read(&h[0]).unwrap() == orig);
    // no temporary file is left beside it
    let names: Vec<String> = std::fs::read_dir(&game)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["x.hpi"]);

    // saves that change nothing: the archive is not written again
    let id = ident(&arch);
    sh(&format!(
        "cp {} {}",
        w.join("side.tdf").display(),
        mx.join("gamedata/side.tdf").display()
    ));
    let status = status_with(&mx, "clean");
    assert!(status.contains("clean"), "{status}");
    // a big member copied onto itself: compared as it is decompressed
    sh(&format!(
        "cp {} {}",
        src.join("sounds/s050.wav").display(),
        mx.join("sounds/s050.wav").display()
    ));
    let status = status_with(&mx, "clean");
    assert!(status.contains("clean"), "{status}");
    assert_eq!(ident(&arch), id, "an unchanged save rewrote the archive");
    assert_eq!(history(&state).len(), 1);
    let peak = peak_rss_mib(pid);
    println!("daemon peak RSS after the unchanged saves: {peak} MiB");
    assert!(peak < SLACK_MIB + CACHE_MIB, "peaked at {peak} MiB");

    tafs_ok(&["umount", mnt.to_str().unwrap()]);
}

#[test]
fn a_full_folder_fails_the_save_with_enospc_and_leaves_the_archive() {
    if !fuse_available() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    let [src, game, state, mnt] = ["src", "game", "state", "mnt"].map(|d| w.join(d));
    std::fs::create_dir_all(src.join("gamedata")).unwrap();
    std::fs::create_dir_all(&game).unwrap();
    // a small file system of its own for the game folder (root only)
    let Some(_u) = mount_common::small_tmpfs(&game, "1200k") else {
        return;
    };
    std::fs::write(src.join("gamedata/big.bin"), noise(600_000, 7)).unwrap();
    std::fs::write(src.join("gamedata/side.tdf"), b"[SIDE0]{name=ARM;}").unwrap();
    let arch = game.join("x.hpi");
    tafs_ok(&[
        "hpi",
        "pack",
        src.to_str().unwrap(),
        "-t",
        arch.to_str().unwrap(),
    ]);
    let orig = std::fs::read(&arch).unwrap();
    let _guard = UnmountGuard(mnt.clone());
    let _pid = mount(&game, &mnt, &state);
    let mx = mnt.join("x.hpi");
    // what is left of the folder is less than the archive: its new version cannot be written
    let _ = Command::new("dd")
        .arg("if=/dev/zero")
        .arg(format!("of={}", game.join("fill").display()))
        .args(["bs=1k", "count=4000"])
        .output();
    std::fs::write(w.join("side.tdf"), b"[SIDE0]{name=CORE;}").unwrap();
    let o = Command::new("cp")
        .arg(w.join("side.tdf"))
        .arg(mx.join("gamedata/side.tdf"))
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("No space left on device"), "{err}");
    let status = status_with(&mx, "No space left");
    assert!(status.contains("No space left"), "{status}");
    assert!(std::fs::read(&arch).unwrap() == orig, "the archive changed");
    let mut names: Vec<String> = std::fs::read_dir(&game)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["fill", "x.hpi"], "a temporary file was left");
    // with room again, the next save commits
    std::fs::remove_file(game.join("fill")).unwrap();
    sh(&format!(
        "cp {} {}",
        w.join("side.tdf").display(),
        mx.join("gamedata/side.tdf").display()
    ));
    let status = status_with(&mx, "committed");
    assert!(status.contains("committed"), "{status}");
    let new = std::fs::read(&arch).unwrap();
    let a = hpi::parse(&new, &hpi::HpiLimits::default()).unwrap();
    let i = a.find(b"gamedata/side.tdf").unwrap();
    let hpi::EntryKind::File(f) = &a.entries[i].kind else {
        panic!("side.tdf is a folder")
    };
    assert_eq!(
        hpi::read_member(&new, &a, f).unwrap(),
        b"[SIDE0]{name=CORE;}"
    );
    tafs_ok(&["umount", mnt.to_str().unwrap()]);
}

/// A process killed after renaming the new archive into place but before recording it: the
/// next start recognises its own commit from the record (size and CRC of the archive, read by
/// range); without the record it is a change made outside (a conflict).
#[test]
fn an_archive_commit_interrupted_after_the_rename_is_recognised_at_start() {
    use tafs::fs::stage::{key_of, Ident, StageMeta, Written};
    use tafs::fs::{Core, MountOptions};
    use writeback_common::{cp_onto, read};
    for recorded in [true, false] {
        let game = tempfile::tempdir().unwrap();
        let state = tempfile::tempdir().unwrap();
        let tree = vec![
            hpi::Node::dir(
                "gamedata",
                vec![hpi::Node::file("side.tdf", b"[SIDE0]{name=ARM;}".to_vec())],
            ),
            hpi::Node::file("big.bin", noise(300_000, 5)),
        ];
        let bin = game.path().join("x.hpi");
        std::fs::write(&bin, hpi::write(&tree, &hpi::WriteOptions::v1()).unwrap()).unwrap();
        let opts = || MountOptions {
            state_dir: Some(state.path().to_path_buf()),
            ..MountOptions::default()
        };
        let core = Core::new(game.path(), opts(), None).unwrap();
        let old = Ident::of(&std::fs::metadata(&bin).unwrap());
        cp_onto(&core, "x.hpi/gamedata/side.tdf", b"[SIDE0]{name=CORE;}").unwrap();
        drop(core);
        let new_bytes = std::fs::read(&bin).unwrap();
        assert_ne!(Ident::of(&std::fs::metadata(&bin).unwrap()), old);
        // asset.json as it is between the rename and the record of the commit
        let abs = std::path::absolute(&bin).unwrap();
        let json = state
            .path()
            .join("assets")
            .join(key_of(&abs))
            .join("asset.json");
        let mut meta: StageMeta = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        meta.base = Some(old);
        meta.dirty.insert("gamedata/side.tdf".into());
        meta.committing = recorded.then(|| Written::of(&new_bytes));
        std::fs::write(&json, serde_json::to_vec(&meta).unwrap()).unwrap();

        let core = Core::new(game.path(), opts(), None).unwrap();
        let st = String::from_utf8(read(&core, "x.hpi/.tafs-status")).unwrap();
        if recorded {
            assert!(st.contains("interrupted commit was completed"), "{st}");
            assert_eq!(
                read(&core, "x.hpi/gamedata/side.tdf"),
                b"[SIDE0]{name=CORE;}"
            );
            // and the next save commits
            cp_onto(&core, "x.hpi/gamedata/side.tdf", b"[SIDE0]{name=ARM2;}").unwrap();
            assert_ne!(std::fs::read(&bin).unwrap(), new_bytes);
        } else {
            assert!(st.contains("conflict"), "{st}");
        }
    }
}

/// The archive's `.tafs-status` once it contains `word` (a commit may end after the `close`
/// that made it returned; at most 10 s, then as it is).
fn status_with(mx: &Path, word: &str) -> String {
    let t = std::time::Instant::now();
    loop {
        let s = std::fs::read_to_string(mx.join(".tafs-status")).unwrap_or_default();
        if s.contains(word) || t.elapsed() > std::time::Duration::from_secs(10) {
            return s;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn a_big_archive_mod_is_read_by_range_by_the_merged_view() {
    // `--merged --into BIG.ufo`: the mount start, `.tafs-status`, `tafs diff` (which
    // compares every member of the mod with what it shadows) and a one-member save read
    // the mod archive by range, never whole
    if !fuse_available() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    let [src, game, state, mnt] = ["src", "game", "state", "mnt"].map(|d| w.join(d));
    std::fs::create_dir_all(game.join("sounds")).unwrap();
    std::fs::create_dir_all(game.join("gamedata")).unwrap();
    // the stock game: one sound the mod holds unchanged, one it changes, one it lacks
    std::fs::write(game.join("sounds/s000.wav"), noise(MEMBER, 1)).unwrap();
    std::fs::write(game.join("sounds/s001.wav"), noise(MEMBER, 1000)).unwrap();
    std::fs::write(game.join("sounds/stock.wav"), b"stock").unwrap();
    let side = b"[SIDE0]\r\n{\r\nname=ARM;\r\n}\r\n".to_vec();
    std::fs::write(game.join("gamedata/side.tdf"), &side).unwrap();
    let arch = w.join("big.ufo");
    pack_sounds(&src, &arch, |_| {});
    let size_mib = std::fs::metadata(&arch).unwrap().len() >> 20;
    assert!(size_mib >= 96, "the archive is {size_mib} MiB, under 96");

    let _guard = UnmountGuard(mnt.clone());
    let cache = format!("{CACHE_MIB}M");
    let pid = mount_common::daemon_pid(
        &game,
        &mnt,
        &[
            "--merged",
            "--into",
            arch.to_str().unwrap(),
            "--ttl",
            "0",
            "--cache-size",
            &cache,
            "--state-dir",
            state.to_str().unwrap(),
        ],
    );
    let status = std::fs::read_to_string(mnt.join(".tafs-status")).unwrap();
    assert!(
        status.contains(&format!("{} files, 2 override stock files", MEMBERS)),
        "{status}"
    );
    let diff = tafs_ok(&["diff", mnt.to_str().unwrap()]);
    assert!(diff.contains("=\tsounds/s000.wav\t"), "{diff}");
    assert!(diff.contains("M\tsounds/s001.wav\t"), "{diff}");
    assert!(diff.contains("A\tsounds/s002.wav\n"), "{diff}");
    assert_eq!(diff.lines().count(), MEMBERS as usize, "{diff}");
    // a stock file copied into the mod with an edit
    let edited = b"[SIDE0]\r\n{\r\nname=CORE;\r\n}\r\n".to_vec();
    std::fs::write(mnt.join("gamedata/side.tdf"), &edited).unwrap();
    assert_eq!(
        std::fs::read(mnt.join("gamedata/side.tdf")).unwrap(),
        edited
    );
    let diff = tafs_ok(&["diff", mnt.to_str().unwrap()]);
    assert!(diff.contains("M\tgamedata/side.tdf\t"), "{diff}");
    let peak = peak_rss_mib(pid);
    println!("daemon peak RSS: {peak} MiB (mod archive {size_mib} MiB)");
    assert!(
        peak < SLACK_MIB + CACHE_MIB,
        "a merged view of a {size_mib} MiB mod archive peaked at {peak} MiB"
    );
    // the archive holds the edit beside every packed member
    let a = std::fs::read(&arch).unwrap();
    let recs = records(&a);
    assert_eq!(recs.len(), MEMBERS as usize + 1);
    let parsed = hpi::parse(&a, &hpi::HpiLimits::default()).unwrap();
    let (_, f) = parsed
        .files()
        .find(|(i, _)| parsed.path_str(*i) == "gamedata/side.tdf")
        .unwrap();
    assert_eq!(hpi::read_member(&a, &parsed, f).unwrap(), edited);
}
