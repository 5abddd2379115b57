//! Write-back driven through the core (no FUSE): commits, unchanged saves, errors, pending
//! sets, conflicts, new and deleted assets, --ro. SEMANTICS.md, "Writing inside asset
//! directories".

mod writeback_common;

use std::ffi::OsStr;
use std::path::Path;
use tafs::fs::{Caller, NewNode};
use tafs::fs::{Core, FsOps, MountOptions};
use writeback_common::{cp_onto, edit_png, ino, parse, payloads, read, sample_bytes};

struct Fixture {
    game: tempfile::TempDir,
    state: tempfile::TempDir,
    core: Core,
}

fn fixture() -> Fixture {
    let game = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(game.path().join("anims")).unwrap();
    std::fs::write(game.path().join("anims/fx.gaf"), sample_bytes()).unwrap();
    let state = tempfile::tempdir().unwrap();
    let core = Core::new(game.path(), opts(state.path()), None).unwrap();
    Fixture { game, state, core }
}

fn opts(state: &Path) -> MountOptions {
    MountOptions {
        state_dir: Some(state.to_path_buf()),
        ..MountOptions::default()
    }
}

fn parent_and_name(path: &str) -> (&str, &str) {
    path.rsplit_once('/').unwrap()
}

/// rsync/sed style: create a temp name, write, close, rename over.
fn replace_via_temp(core: &Core, path: &str, tmp: &str, bytes: &[u8]) -> Result<(), i32> {
    let (dir, name) = parent_and_name(path);
    let d = ino(core, dir);
    let (_, o) = core
        .create(
            Caller::root(),
            NewNode::new(d, OsStr::new(tmp), 0o100600, 0),
            libc::O_WRONLY | libc::O_EXCL,
        )
        .map_err(|e| e.errno())?;
    core.write(Caller::root(), o.fh, 0, bytes).unwrap();
    core.flush(Caller::root(), o.fh).unwrap(); // a temp name never commits
    core.release(Caller::root(), o.fh).unwrap();
    core.rename(Caller::root(), d, OsStr::new(tmp), d, OsStr::new(name), 0)
        .map_err(|e| e.errno())
}

fn status(core: &Core, asset: &str) -> String {
    String::from_utf8(read(core, &format!("{asset}/.tafs-status"))).unwrap()
}

fn history_len(f: &Fixture) -> usize {
    let abs = std::path::absolute(f.game.path().join("anims/fx.gaf")).unwrap();
    tafs::fs::stage::history_of(&tafs::fs::stage::history_dir(f.state.path(), &abs)).len()
}

#[test]
fn editing_a_frame_commits_exactly_that_frame() {
    let f = fixture();
    let bin = f.game.path().join("anims/fx.gaf");
    let before = parse(&bin);
    let png = read(&f.core, "anims/fx.gaf/pulse/2.png");
    let (edited, pos) = edit_png(&png, 0xB3);
    cp_onto(&f.core, "anims/fx.gaf/pulse/2.png", &edited).unwrap();
    let after = parse(&bin);
    // the edited pixel, and only it, changed in frame 2 of pulse
    let p0 = before.sequences[0].frames[2].frame.flatten().unwrap();
    let p1 = after.sequences[0].frames[2].frame.flatten().unwrap();
    assert_eq!(p1.indices[pos], 0xB3);
    let diff: Vec<usize> = (0..p0.indices.len())
        .filter(|&i| p0.indices[i] != p1.indices[i] || p0.opaque[i] != p1.opaque[i])
        .collect();
    assert_eq!(diff, vec![pos]);
    // every other frame keeps its stored bytes
    let (a, b) = (payloads(&before), payloads(&after));
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(&b) {
        if x.0 != "pulse/2" {
            assert_eq!(x, y, "{}", x.0);
        }
    }
    // the file reads back as written; the old binary is in the history
    assert_eq!(read(&f.core, "anims/fx.gaf/pulse/2.png"), edited);
    assert_eq!(history_len(&f), 1);
    assert!(status(&f.core, "anims/fx.gaf").contains(": clean"));
}

#[test]
fn unchanged_save_does_not_touch_the_binary() {
    let f = fixture();
    let bin = f.game.path().join("anims/fx.gaf");
    let m0 = std::fs::metadata(&bin).unwrap();
    let csv = read(&f.core, "anims/fx.gaf/pulse/frames.csv");
    replace_via_temp(
        &f.core,
        "anims/fx.gaf/pulse/frames.csv",
        ".frames.csv.Ab12",
        &csv,
    )
    .unwrap();
    let png = read(&f.core, "anims/fx.gaf/turret/0.png");
    cp_onto(&f.core, "anims/fx.gaf/turret/0.png", &png).unwrap();
    let m1 = std::fs::metadata(&bin).unwrap();
    use std::os::unix::fs::MetadataExt;
    assert_eq!(
        (m0.ino(), m0.mtime_nsec(), m0.mtime()),
        (m1.ino(), m1.mtime_nsec(), m1.mtime())
    );
    assert_eq!(history_len(&f), 0);
}

#[test]
fn bad_png_fails_the_save_keeps_bytes_and_fixing_commits() {
    let f = fixture();
    let bin = f.game.path().join("anims/fx.gaf");
    let orig = std::fs::read(&bin).unwrap();
    let e = cp_onto(&f.core, "anims/fx.gaf/panel/0.png", b"not a png").unwrap_err();
    assert_eq!(e, libc::EIO);
    assert_eq!(std::fs::read(&bin).unwrap(), orig);
    assert_eq!(read(&f.core, "anims/fx.gaf/panel/0.png"), b"not a png");
    let st = status(&f.core, "anims/fx.gaf");
    assert!(st.contains("error") && st.contains("panel/0.png"), "{st}");
    let root = String::from_utf8(read(&f.core, ".tafs-status")).unwrap();
    assert!(root.contains("anims/fx.gaf: error"), "{root}");
    // fixing it commits
    let good = {
        let fresh = Core::new(f.game.path(), MountOptions::default(), None).unwrap();
        read(&fresh, "anims/fx.gaf/panel/0.png")
    };
    let (edited, _) = edit_png(&good, 0x20);
    cp_onto(&f.core, "anims/fx.gaf/panel/0.png", &edited).unwrap();
    assert_ne!(std::fs::read(&bin).unwrap(), orig);
    assert!(status(&f.core, "anims/fx.gaf").contains(": clean"));
}

#[test]
fn frames_listed_without_images_are_pending_until_complete() {
    let f = fixture();
    let bin = f.game.path().join("anims/fx.gaf");
    let orig = std::fs::read(&bin).unwrap();
    let csv = String::from_utf8(read(&f.core, "anims/fx.gaf/panel/frames.csv")).unwrap();
    let mut lines: Vec<&str> = csv.lines().collect();
    let row1 = lines[1].replacen('0', "1", 1);
    lines.push(&row1);
    let new_csv = lines.join("\n") + "\n";
    // frames.csv lists frame 1, whose PNG is not there yet: pending, not an error
    replace_via_temp(
        &f.core,
        "anims/fx.gaf/panel/frames.csv",
        "sedXy12ab",
        new_csv.as_bytes(),
    )
    .unwrap();
    assert_eq!(std::fs::read(&bin).unwrap(), orig);
    let st = status(&f.core, "anims/fx.gaf");
    assert!(st.contains("pending") && st.contains("panel/1.png"), "{st}");
    // the PNG arrives: commit
    let png = read(&f.core, "anims/fx.gaf/panel/0.png");
    let d = ino(&f.core, "anims/fx.gaf/panel");
    let (_, o) = f
        .core
        .create(
            Caller::root(),
            NewNode::new(d, OsStr::new("1.png"), 0o100644, 0),
            libc::O_WRONLY,
        )
        .unwrap();
    f.core.write(Caller::root(), o.fh, 0, &png).unwrap();
    f.core.flush(Caller::root(), o.fh).unwrap();
    f.core.release(Caller::root(), o.fh).unwrap();
    let g = parse(&bin);
    assert_eq!(g.sequences[1].frames.len(), 2);
}

#[test]
fn conflict_when_binary_changes_behind_staged_edits() {
    let f = fixture();
    let bin = f.game.path().join("anims/fx.gaf");
    // a pending edit (frames.csv naming a frame that is not there)
    let csv = read(&f.core, "anims/fx.gaf/panel/frames.csv");
    let mut c = csv.clone();
    let row = String::from_utf8(csv.clone())
        .unwrap()
        .lines()
        .nth(1)
        .unwrap()
        .replacen('0', "1", 1);
    c.extend_from_slice(row.as_bytes());
    c.push(b'\n');
    replace_via_temp(&f.core, "anims/fx.gaf/panel/frames.csv", ".x.tmp", &c).unwrap();
    // someone else rewrites the binary
    let mut other = tafs::sample::animated_gaf();
    other.sequences.truncate(2);
    let other = tafs::formats::gaf::write(&other).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(&bin, &other).unwrap();
    // the next save is refused with ESTALE; nothing merged, staged bytes kept
    let png = read(&f.core, "anims/fx.gaf/panel/0.png");
    let d = ino(&f.core, "anims/fx.gaf/panel");
    let (_, o) = f
        .core
        .create(
            Caller::root(),
            NewNode::new(d, OsStr::new("1.png"), 0o100644, 0),
            libc::O_WRONLY,
        )
        .unwrap();
    f.core.write(Caller::root(), o.fh, 0, &png).unwrap();
    assert_eq!(
        f.core.flush(Caller::root(), o.fh).unwrap_err().errno(),
        libc::ESTALE
    );
    f.core.release(Caller::root(), o.fh).unwrap();
    assert_eq!(std::fs::read(&bin).unwrap(), other);
    assert_eq!(read(&f.core, "anims/fx.gaf/panel/frames.csv"), c);
    assert!(status(&f.core, "anims/fx.gaf").contains("conflict"));
}

#[test]
fn staged_files_survive_a_new_core() {
    let f = fixture();
    let png = read(&f.core, "anims/fx.gaf/pulse/0.png");
    let (edited, _) = edit_png(&png, 0xB1);
    cp_onto(&f.core, "anims/fx.gaf/pulse/0.png", &edited).unwrap();
    let a0 = f
        .core
        .getattr(
            Caller::root(),
            ino(&f.core, "anims/fx.gaf/pulse/0.png"),
            None,
        )
        .unwrap();
    drop(f.core);
    let core = Core::new(f.game.path(), opts(f.state.path()), None).unwrap();
    assert_eq!(read(&core, "anims/fx.gaf/pulse/0.png"), edited);
    let a1 = core
        .getattr(Caller::root(), ino(&core, "anims/fx.gaf/pulse/0.png"), None)
        .unwrap();
    assert_eq!((a0.mtime, a0.perm, a0.size), (a1.mtime, a1.perm, a1.size));
}

#[test]
fn read_only_and_no_state_dir_refuse_writes() {
    let f = fixture();
    for o in [
        MountOptions {
            read_only: true,
            ..opts(f.state.path())
        },
        MountOptions::default(),
    ] {
        let core = Core::new(f.game.path(), o, None).unwrap();
        let i = ino(&core, "anims/fx.gaf/pulse/0.png");
        assert_eq!(
            core.open(Caller::root(), i, libc::O_WRONLY)
                .unwrap_err()
                .errno(),
            libc::EROFS
        );
        let d = ino(&core, "anims/fx.gaf");
        let e = core
            .mkdir(Caller::root(), NewNode::new(d, OsStr::new("x"), 0o755, 0))
            .unwrap_err();
        assert_eq!(e.errno(), libc::EROFS);
    }
}

#[test]
fn delete_asset_keeps_history_and_new_asset_commits_once_complete() {
    let f = fixture();
    let bin = f.game.path().join("anims/fx.gaf");
    let orig = std::fs::read(&bin).unwrap();
    // dump of the original (from the core, before deleting)
    let fresh = Core::new(f.game.path(), MountOptions::default(), None).unwrap();
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    {
        let v = tafs::view::open(
            tafs::view::AssetKind::Gaf,
            &orig,
            &tafs::fs::core::view_options_for(f.game.path(), "anims/fx.gaf"),
        )
        .unwrap();
        for e in v.entries() {
            if e.kind == tafs::view::EntryKind::File {
                files.push((
                    e.path.clone(),
                    read(&fresh, &format!("anims/fx.gaf/{}", e.path)),
                ));
            }
        }
    }
    // rm -r: files (metadata.json first, as listed), folders, then the asset directory
    let anims = ino(&f.core, "anims");
    let root = ino(&f.core, "anims/fx.gaf");
    let mut dirs: Vec<String> = Vec::new();
    for (p, _) in &files {
        let (d, n) = p.rsplit_once('/').unwrap_or(("", p));
        let di = if d.is_empty() {
            root
        } else {
            ino(&f.core, &format!("anims/fx.gaf/{d}"))
        };
        f.core.unlink(Caller::root(), di, OsStr::new(n)).unwrap();
        if !d.is_empty() && !dirs.contains(&d.to_string()) {
            dirs.push(d.to_string());
        }
    }
    dirs.sort_by_key(|d| std::cmp::Reverse(d.len()));
    for d in &dirs {
        let (pd, n) = d.rsplit_once('/').unwrap_or(("", d));
        let pi = if pd.is_empty() {
            root
        } else {
            ino(&f.core, &format!("anims/fx.gaf/{pd}"))
        };
        f.core.rmdir(Caller::root(), pi, OsStr::new(n)).unwrap();
    }
    assert_eq!(
        std::fs::read(&bin).unwrap(),
        orig,
        "no commit while removing"
    );
    f.core
        .rmdir(Caller::root(), anims, OsStr::new("fx.gaf"))
        .unwrap();
    assert!(!bin.exists());
    assert_eq!(history_len(&f), 1);
    let abs = std::path::absolute(&bin).unwrap();
    let kept = tafs::fs::stage::history_of(&tafs::fs::stage::history_dir(f.state.path(), &abs));
    assert!(
        std::fs::read(&kept[0]).unwrap() == orig,
        "the history keeps the deleted binary"
    );

    // mkdir new.gaf + copy the dump in, file by file: the binary appears once complete
    let a = f
        .core
        .mkdir(
            Caller::root(),
            NewNode::new(anims, OsStr::new("new.gaf"), 0o755, 0),
        )
        .unwrap();
    let newbin = f.game.path().join("anims/new.gaf");
    for (i, (p, b)) in files.iter().enumerate() {
        let _ = i;
        let (d, n) = p.rsplit_once('/').unwrap_or(("", p));
        let mut di = a.ino;
        for c in d.split('/').filter(|c| !c.is_empty()) {
            di = match f.core.lookup(Caller::root(), di, OsStr::new(c)) {
                Ok(x) => x.ino,
                Err(_) => {
                    f.core
                        .mkdir(Caller::root(), NewNode::new(di, OsStr::new(c), 0o755, 0))
                        .unwrap()
                        .ino
                }
            };
        }
        let (_, o) = f
            .core
            .create(
                Caller::root(),
                NewNode::new(di, OsStr::new(n), 0o100644, 0),
                libc::O_WRONLY,
            )
            .unwrap();
        f.core.write(Caller::root(), o.fh, 0, b).unwrap();
        f.core.flush(Caller::root(), o.fh).unwrap();
        f.core.release(Caller::root(), o.fh).unwrap();
        // (a composite's .layers folder is optional in the layout: once every other file is
        // there the set is complete, and the layers arriving later commit once more)
        let rest_is_layers = files[i + 1..]
            .iter()
            .all(|(q, _)| q.contains(".layers/") || q.ends_with("animated.png"));
        if !rest_is_layers {
            assert!(!newbin.exists(), "committed early after {p}");
        }
    }
    // equals `tafs gaf build` of the dump with the original as base: here, the original
    assert_eq!(std::fs::read(&newbin).unwrap(), orig);
}

#[test]
fn folders_keep_their_inodes_across_a_commit_files_do_not() {
    let f = fixture();
    let root = ino(&f.core, "anims/fx.gaf");
    let pulse = ino(&f.core, "anims/fx.gaf/pulse");
    let panel = ino(&f.core, "anims/fx.gaf/panel");
    let frame = ino(&f.core, "anims/fx.gaf/panel/0.png");
    let mtime = |p: &str| {
        f.core
            .getattr(Caller::root(), ino(&f.core, p), None)
            .unwrap()
            .mtime
    };
    let frame_t = mtime("anims/fx.gaf/panel/0.png");
    let panel_t = mtime("anims/fx.gaf/panel");
    let preview_t = mtime("anims/fx.gaf/pulse/animated.png");
    let preview = read(&f.core, "anims/fx.gaf/pulse/animated.png");
    let png = read(&f.core, "anims/fx.gaf/pulse/2.png");
    let (edited, _) = edit_png(&png, 0xB3);
    // the new binary must get another mtime than the one the files showed
    std::thread::sleep(std::time::Duration::from_millis(20));
    cp_onto(&f.core, "anims/fx.gaf/pulse/2.png", &edited).unwrap();
    assert_eq!(history_len(&f), 1, "the save did not commit");
    // generated files whose bytes did not change keep their mtime (a second rsync finds
    // them as it left them); one that changed (the preview of the edited sequence) takes
    // the new binary's
    let bin_t = std::fs::metadata(f.game.path().join("anims/fx.gaf"))
        .unwrap()
        .modified()
        .unwrap();
    assert_ne!(bin_t, frame_t);
    assert_eq!(mtime("anims/fx.gaf/panel/0.png"), frame_t);
    assert_eq!(mtime("anims/fx.gaf/panel"), panel_t);
    assert_ne!(read(&f.core, "anims/fx.gaf/pulse/animated.png"), preview);
    let preview_now = mtime("anims/fx.gaf/pulse/animated.png");
    assert_ne!(preview_now, preview_t);
    assert_eq!(preview_now, bin_t);
    // the asset directory and its folders answer with the same inodes (rsync keeps working
    // in a sibling folder it looked up before the commit) ...
    assert_eq!(ino(&f.core, "anims/fx.gaf"), root);
    assert_eq!(ino(&f.core, "anims/fx.gaf/pulse"), pulse);
    assert_eq!(
        f.core.getattr(Caller::root(), panel, None).unwrap().ino,
        panel
    );
    let (_, o) = f
        .core
        .create(
            Caller::root(),
            NewNode::new(panel, OsStr::new(".0.png.XyZ123"), 0o100600, 0),
            libc::O_WRONLY | libc::O_EXCL,
        )
        .unwrap();
    f.core.release(Caller::root(), o.fh).unwrap();
    let dh = f.core.opendir(Caller::root(), panel).unwrap();
    let names: Vec<String> = f
        .core
        .readdir(Caller::root(), dh, 0)
        .unwrap()
        .into_iter()
        .map(|(_, it)| it.name.to_string_lossy().into_owned())
        .collect();
    f.core.releasedir(Caller::root(), dh).unwrap();
    assert!(names.iter().any(|n| n == ".0.png.XyZ123"), "{names:?}");
    // ... while a generated file of the old version is stale and gets a new inode (an inode
    // is one version's file: a reader holding it never gets another version's bytes)
    assert_eq!(
        f.core
            .getattr(Caller::root(), frame, None)
            .unwrap_err()
            .errno(),
        libc::ESTALE
    );
    assert_ne!(ino(&f.core, "anims/fx.gaf/panel/0.png"), frame);
}

/// A process killed after renaming the new binary into place but before recording it: the
/// next start recognises its own commit (no conflict); without that record it would be a
/// change made outside.
#[test]
fn commit_interrupted_after_the_rename_is_recognised_at_start() {
    use tafs::fs::stage::{key_of, Ident, StageMeta, Written};
    for recorded in [true, false] {
        let f = fixture();
        let bin = f.game.path().join("anims/fx.gaf");
        let old = Ident::of(&std::fs::metadata(&bin).unwrap());
        let png = read(&f.core, "anims/fx.gaf/pulse/0.png");
        let (edited, _) = edit_png(&png, 0xB1);
        cp_onto(&f.core, "anims/fx.gaf/pulse/0.png", &edited).unwrap();
        drop(f.core);
        let new_bytes = std::fs::read(&bin).unwrap();
        // asset.json as it is between the rename and the record of the commit
        let abs = std::path::absolute(&bin).unwrap();
        let json = f
            .state
            .path()
            .join("assets")
            .join(key_of(&abs))
            .join("asset.json");
        let mut meta: StageMeta = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        meta.base = Some(old.clone());
        meta.dirty.insert("pulse/0.png".into());
        meta.committing = recorded.then(|| Written::of(&new_bytes));
        std::fs::write(&json, serde_json::to_vec(&meta).unwrap()).unwrap();

        let core = Core::new(f.game.path(), opts(f.state.path()), None).unwrap();
        let st = status(&core, "anims/fx.gaf");
        if recorded {
            assert!(st.contains(": clean"), "{st}");
            assert_eq!(read(&core, "anims/fx.gaf/pulse/0.png"), edited);
            // and the next save commits
            let (again, _) = edit_png(&png, 0xB2);
            cp_onto(&core, "anims/fx.gaf/pulse/0.png", &again).unwrap();
            assert_ne!(std::fs::read(&bin).unwrap(), new_bytes);
        } else {
            assert!(st.contains("conflict"), "{st}");
        }
    }
}

#[test]
fn commit_killed_after_keeping_the_binary_resumes_at_start() {
    use tafs::fs::stage::{history_dir, history_of, key_of, Ident, StageMeta, Written};
    let f = fixture();
    let bin = f.game.path().join("anims/fx.gaf");
    let png = read(&f.core, "anims/fx.gaf/pulse/0.png");
    let (edited, _) = edit_png(&png, 0xB1);
    cp_onto(&f.core, "anims/fx.gaf/pulse/0.png", &edited).unwrap();
    drop(f.core);
    let committed = std::fs::read(&bin).unwrap();
    let abs = std::path::absolute(&bin).unwrap();
    let hist = history_dir(f.state.path(), &abs);
    assert_eq!(history_of(&hist).len(), 1);
    // the next save, killed after the binary was linked into the history and before the
    // rename: the staged file is dirty, the record names bytes never written, and the link
    // changed the binary's ctime
    let dir = f.state.path().join("assets").join(key_of(&abs));
    let (again, _) = edit_png(&png, 0xB2);
    std::fs::write(dir.join("files/pulse/0.png"), &again).unwrap();
    let json = dir.join("asset.json");
    let mut meta: StageMeta = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    meta.base = Some(Ident::of(&std::fs::metadata(&bin).unwrap()));
    meta.dirty.insert("pulse/0.png".into());
    meta.committing = Some(Written::of(b"never written"));
    std::fs::write(&json, serde_json::to_vec(&meta).unwrap()).unwrap();
    std::fs::hard_link(&bin, hist.join("99999999999999999999-fx.gaf")).unwrap();

    let core = Core::new(f.game.path(), opts(f.state.path()), None).unwrap();
    let st = status(&core, "anims/fx.gaf");
    assert!(
        !st.contains("conflict"),
        "taken for a change made outside: {st}"
    );
    // the link of the commit that did not happen is gone; the binary has one link again
    assert_eq!(history_of(&hist).len(), 1);
    use std::os::unix::fs::MetadataExt;
    assert_eq!(std::fs::metadata(&bin).unwrap().nlink(), 1);
    assert_eq!(std::fs::read(&bin).unwrap(), committed);
    // the staged edit commits at the next save, keeping the binary it replaces
    cp_onto(&core, "anims/fx.gaf/pulse/0.png", &again).unwrap();
    assert_ne!(std::fs::read(&bin).unwrap(), committed);
    let h = history_of(&hist);
    assert_eq!(h.len(), 2);
    assert_eq!(std::fs::read(&h[1]).unwrap(), committed);
}

#[test]
fn xattr_writes_answer_enotsup() {
    let f = fixture();
    for p in ["anims/fx.gaf/pulse/0.png", "anims/fx.gaf/pulse", "anims"] {
        let i = ino(&f.core, p);
        for n in [
            "system.posix_acl_access",
            "system.posix_acl_default",
            "user.x",
        ] {
            let e = f
                .core
                .setxattr(Caller::root(), i, OsStr::new(n))
                .unwrap_err();
            assert_eq!(e.errno(), libc::ENOTSUP, "{p} {n}");
        }
    }
}

/// The names a listing of folder `path` gives.
fn listed(core: &Core, path: &str) -> Vec<String> {
    let dh = core.opendir(Caller::root(), ino(core, path)).unwrap();
    let names = core
        .readdir(Caller::root(), dh, 0)
        .unwrap()
        .into_iter()
        .map(|(_, it)| it.name.to_string_lossy().into_owned())
        .collect();
    core.releasedir(Caller::root(), dh).unwrap();
    names
}

/// Listings take the new assets (made with `mkdir`) from what the state folder's records
/// said when the mount last wrote one: one made or removed through the mount shows at once,
/// a record written there by hand only once the state folder is read again (a remount).
#[test]
fn listings_read_the_state_folder_again_only_after_the_mount_wrote_to_it() {
    let f = fixture();
    let anims = ino(&f.core, "anims");
    assert!(!listed(&f.core, "anims").contains(&"made.gaf".to_string()));
    f.core
        .mkdir(
            Caller::root(),
            NewNode::new(anims, OsStr::new("made.gaf"), 0o755, 0),
        )
        .unwrap();
    assert!(listed(&f.core, "anims").contains(&"made.gaf".to_string()));
    // a new asset's record written by hand, as the mount writes one
    let abs = std::path::absolute(f.game.path().join("anims/hand.gaf")).unwrap();
    // (written by hand, not with `save`, which is the mount's own write)
    let mut by_hand = tafs::fs::stage::Stage::load(f.state.path(), &abs);
    by_hand.meta.new_asset = true;
    std::fs::create_dir_all(&by_hand.files).unwrap();
    std::fs::write(
        by_hand.dir.join("asset.json"),
        serde_json::to_vec(&by_hand.meta).unwrap(),
    )
    .unwrap();
    let names = listed(&f.core, "anims");
    assert!(!names.contains(&"hand.gaf".to_string()), "{names:?}");

    // the mount's own next write reads the records again
    f.core
        .rmdir(Caller::root(), anims, OsStr::new("made.gaf"))
        .unwrap();
    let names = listed(&f.core, "anims");
    assert!(!names.contains(&"made.gaf".to_string()), "{names:?}");
    assert!(names.contains(&"hand.gaf".to_string()), "{names:?}");
    // and a remount reads them all
    let again = Core::new(f.game.path(), opts(f.state.path()), None).unwrap();
    assert!(listed(&again, "anims").contains(&"hand.gaf".to_string()));
}

/// The first write inside a generated folder copies it into the staging area; that copy is
/// no change of the folder it sits in, which keeps the time it showed, as on any file
/// system (rsync sets a folder's time once its own entries are done, possibly before it has
/// written into every subfolder: a second rsync must find the time it set).
#[test]
fn writing_inside_a_folder_keeps_the_times_of_the_folders_above_it() {
    use std::time::{Duration, UNIX_EPOCH};
    let f = fixture();
    let when = UNIX_EPOCH + Duration::from_secs(981_173_106);
    let set = |p: &str| writeback_common::touch(&f.core, p, when);
    let mtime = |p: &str| {
        f.core
            .getattr(Caller::root(), ino(&f.core, p), None)
            .unwrap()
            .mtime
    };
    // saved again as it is, rsync's way (a temporary name renamed over it)
    let resave = |p: &str| {
        let bytes = read(&f.core, p);
        replace_via_temp(&f.core, p, ".resaved.AbC", &bytes).unwrap();
    };
    // nothing staged yet: the asset directory's copy is made with the time it showed
    let shown = mtime("anims/fx.gaf");
    let panel = mtime("anims/fx.gaf/panel");
    std::thread::sleep(Duration::from_millis(20));
    resave("anims/fx.gaf/panel/0.png");
    assert_eq!(mtime("anims/fx.gaf"), shown);
    // the folder written in changes as any does (a name created and renamed in it)
    assert!(mtime("anims/fx.gaf/panel") > panel);
    assert_eq!(set("anims/fx.gaf"), when);
    // a folder not staged yet, and one inside another not staged yet
    resave("anims/fx.gaf/pulse/0.png");
    assert_eq!(mtime("anims/fx.gaf"), when);
    resave("anims/fx.gaf/turret/0.layers/0.png");
    assert_eq!(mtime("anims/fx.gaf"), when);
    // a folder set after its subfolder was copied keeps its time too
    assert_eq!(set("anims/fx.gaf/turret"), when);
    resave("anims/fx.gaf/turret/1.layers/1.png");
    assert_eq!(mtime("anims/fx.gaf/turret"), when);
    assert_eq!(mtime("anims/fx.gaf"), when);
}

/// The files under folder `dir` of `asset` as the core shows them (paths relative to
/// `dir`), sorted by path (the order rsync sends them in), and its folders.
fn folder_files(core: &Core, asset: &str, dir: &str) -> (Vec<(String, Vec<u8>)>, Vec<String>) {
    let (mut files, mut dirs) = (Vec::new(), Vec::new());
    let mut stack = vec![String::new()];
    while let Some(sub) = stack.pop() {
        let at = if sub.is_empty() {
            dir.to_string()
        } else {
            format!("{dir}/{sub}")
        };
        let dh = core
            .opendir(Caller::root(), ino(core, &format!("{asset}/{at}")))
            .unwrap();
        let items = core.readdir(Caller::root(), dh, 0).unwrap();
        core.releasedir(Caller::root(), dh).unwrap();
        for (_, it) in items {
            let n = it.name.to_string_lossy().into_owned();
            if n == "." || n == ".." {
                continue;
            }
            let p = if sub.is_empty() {
                n
            } else {
                format!("{sub}/{n}")
            };
            if it.kind == tafs::fs::FileKind::Dir {
                dirs.push(p.clone());
                stack.push(p);
            } else {
                let b = read(core, &format!("{asset}/{dir}/{p}"));
                files.push((p, b));
            }
        }
    }
    files.sort();
    dirs.sort();
    (files, dirs)
}

/// The inode of `path` in `core`, if it is there.
fn try_ino(core: &Core, path: &str) -> Option<u64> {
    let mut i = tafs::fs::core::ROOT;
    for c in path.split('/') {
        i = core.lookup(Caller::root(), i, OsStr::new(c)).ok()?.ino;
    }
    Some(i)
}

/// `rm -r` of folder `path` through the core, deepest first; a name already gone (a removal
/// that commits can take the rest of a sequence folder with it) is skipped.
fn rm_r(core: &Core, path: &str) {
    let Some(d) = try_ino(core, path) else {
        return;
    };
    let dh = core.opendir(Caller::root(), d).unwrap();
    let items = core.readdir(Caller::root(), dh, 0).unwrap();
    core.releasedir(Caller::root(), dh).unwrap();
    for (_, it) in items {
        let n = it.name.to_string_lossy().into_owned();
        if n == "." || n == ".." {
            continue;
        }
        if it.kind == tafs::fs::FileKind::Dir {
            rm_r(core, &format!("{path}/{n}"));
        } else if let Some(d) = try_ino(core, path) {
            let _ = core.unlink(Caller::root(), d, OsStr::new(&n));
        }
    }
    let (parent, n) = parent_and_name(path);
    if let Some(p) = try_ino(core, parent) {
        let _ = core.rmdir(Caller::root(), p, OsStr::new(n));
    }
    assert!(try_ino(core, path).is_none(), "{path} removed");
}

/// `rsync -a --delete` of a tree whose last sequence folder was renamed, driven through the
/// core in the two orders its commits can run in: the folder's `sequence.csv` (the old
/// folder's row, old name and index) landing after the commit that already built the renamed
/// sequence (which then builds the same binary again), or before it. Either way the folder's
/// `sequence.csv` then shows the binary's row, as `tafs gaf dump` writes it.
#[test]
fn a_copied_sequence_csv_shows_the_binarys_row_whichever_commit_comes_first() {
    // (without the copy's metadata.json: a commit made the one rsync sent outdated before
    // the folder arrived, so neither it nor the binary knows the old name any more)
    for (sequence_csv_first, with_metadata) in [(false, true), (true, true), (false, false)] {
        let f = fixture();
        let asset = "anims/fx.gaf";
        let bin = f.game.path().join(asset);
        let names = |g: &tafs::formats::gaf::Gaf| -> Vec<String> {
            g.sequences.iter().map(|s| s.name_str()).collect()
        };
        let before = names(&parse(&bin));
        let last = before.last().unwrap().clone();
        let (copied, dirs) = folder_files(&f.core, asset, &last);
        let meta = read(&f.core, &format!("{asset}/metadata.json"));
        // rsync deletes the old folder first (commits), sends metadata.json (listing the old
        // folder), then the new folder
        rm_r(&f.core, &format!("{asset}/{last}"));
        if with_metadata {
            replace_via_temp(
                &f.core,
                &format!("{asset}/metadata.json"),
                ".metadata.json.tmp1",
                &meta,
            )
            .unwrap();
        }
        for d in ["renamed".to_string()]
            .into_iter()
            .chain(dirs.iter().map(|d| format!("renamed/{d}")))
        {
            let (pd, n) = d.rsplit_once('/').map_or(("", d.as_str()), |x| x);
            let pi = ino(&f.core, format!("{asset}/{pd}").trim_end_matches('/'));
            f.core
                .mkdir(Caller::root(), NewNode::new(pi, OsStr::new(n), 0o755, 0))
                .unwrap();
        }
        let mut order: Vec<&(String, Vec<u8>)> = copied.iter().collect();
        if sequence_csv_first {
            order.sort_by_key(|(n, _)| n != "sequence.csv");
        }
        for (p, b) in order {
            let n = p.rsplit('/').next().unwrap();
            replace_via_temp(
                &f.core,
                &format!("{asset}/renamed/{p}"),
                &format!(".{n}.tmp1"),
                b,
            )
            .unwrap();
        }
        let mut want = before.clone();
        *want.last_mut().unwrap() = "renamed".into();
        assert_eq!(
            names(&parse(&bin)),
            want,
            "sequence.csv first: {sequence_csv_first}, metadata.json: {with_metadata}"
        );
        // the row the dump of the binary has: the folder's name, the sequence's index
        let v = tafs::view::open(
            tafs::view::AssetKind::Gaf,
            &std::fs::read(&bin).unwrap(),
            &tafs::fs::core::view_options_for(f.game.path(), asset),
        )
        .unwrap();
        let dumped = v.render_vec("renamed/sequence.csv").unwrap();
        let shown = read(&f.core, &format!("{asset}/renamed/sequence.csv"));
        assert_eq!(
            String::from_utf8_lossy(&shown),
            String::from_utf8_lossy(&dumped),
            "sequence.csv first: {sequence_csv_first}, metadata.json: {with_metadata}"
        );
        // and once the folder is listed (no longer being filled) too
        let _ = folder_files(&f.core, asset, "renamed");
        let shown = read(&f.core, &format!("{asset}/renamed/sequence.csv"));
        assert_eq!(
            shown, dumped,
            "sequence.csv first: {sequence_csv_first}, metadata.json: {with_metadata}"
        );
    }
}
