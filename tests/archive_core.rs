//! Archives driven through the file system core (no FUSE): GAF/TNT members are decoded only
//! when something inside them, or the folder listing them, is asked for; write-back into
//! archives repacks them keeping unchanged members' stored bytes.

mod mount_common;
mod writeback_common;

use mount_common::put;
use std::ffi::OsStr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tafs::formats::hpi;
use tafs::fs::core::ROOT;
use tafs::fs::{Caller, NewNode};
use tafs::fs::{Core, FileKind, FsOps, MountOptions};
use writeback_common::{ino, read};

fn gaf() -> Vec<u8> {
    tafs::formats::gaf::write(&tafs::sample::animated_gaf()).unwrap()
}

const TDF: &[u8] = b"[SIDE0]\r\n{\r\nname=ARM;\r\n}\r\n";

/// `anims/` with five GAFs, `units/` with two, `gamedata/side.tdf`.
fn archive() -> Vec<u8> {
    let g = gaf();
    let files = |names: &[&str]| -> Vec<hpi::Node> {
        names
            .iter()
            .map(|n| hpi::Node::file(n.as_bytes().to_vec(), g.clone()))
            .collect()
    };
    let tree = vec![
        hpi::Node::dir(
            b"anims".to_vec(),
            files(&["a.gaf", "b.gaf", "c.gaf", "d.gaf", "e.gaf"]),
        ),
        hpi::Node::dir(b"units".to_vec(), files(&["u1.gaf", "u2.gaf"])),
        hpi::Node::dir(
            b"gamedata".to_vec(),
            vec![hpi::Node::file(b"side.tdf".to_vec(), TDF.to_vec())],
        ),
    ];
    hpi::write(&tree, &hpi::WriteOptions::v1()).unwrap()
}

/// Options whose opener counts the binaries it decodes.
fn counting() -> (MountOptions, Arc<AtomicUsize>) {
    let n = Arc::new(AtomicUsize::new(0));
    let c = n.clone();
    let opts = MountOptions {
        opener: Arc::new(move |kind, bytes, o| {
            c.fetch_add(1, Ordering::SeqCst);
            tafs::view::open_shared(kind, bytes, o)
        }),
        ..MountOptions::default()
    };
    (opts, n)
}

fn names(core: &Core, ino: u64) -> Vec<(String, FileKind)> {
    let fh = core.opendir(Caller::root(), ino).unwrap();
    let v = core
        .readdir(Caller::root(), fh, 0)
        .unwrap()
        .into_iter()
        .map(|(_, it)| (it.name.to_string_lossy().into_owned(), it.kind))
        .filter(|(n, _)| n != "." && n != "..")
        .collect();
    core.releasedir(Caller::root(), fh).unwrap();
    v
}

#[test]
fn members_are_decoded_only_when_needed() {
    let game = tempfile::tempdir().unwrap();
    put(&game.path().join("data.hpi"), archive());
    let (opts, decoded) = counting();
    let core = Core::new(game.path(), opts, None).unwrap();
    let n = || decoded.load(Ordering::SeqCst);

    // looking up and listing the archive root decodes no member
    let arch = core
        .lookup(Caller::root(), ROOT, OsStr::new("data.hpi"))
        .unwrap();
    assert_eq!(arch.kind, FileKind::Dir);
    let root = names(&core, arch.ino);
    assert_eq!(
        root,
        [
            ("anims".to_string(), FileKind::Dir),
            ("units".to_string(), FileKind::Dir),
            ("gamedata".to_string(), FileKind::Dir)
        ]
    );
    let anims = core
        .lookup(Caller::root(), arch.ino, OsStr::new("anims"))
        .unwrap();
    let units = core
        .lookup(Caller::root(), arch.ino, OsStr::new("units"))
        .unwrap();
    core.getattr(Caller::root(), anims.ino, None).unwrap();
    // a plain member is read without decoding anything
    let gd = core
        .lookup(Caller::root(), arch.ino, OsStr::new("gamedata"))
        .unwrap();
    let tdf = core
        .lookup(Caller::root(), gd.ino, OsStr::new("side.tdf"))
        .unwrap();
    assert_eq!(tdf.size, TDF.len() as u64);
    let o = core.open(Caller::root(), tdf.ino, libc::O_RDONLY).unwrap();
    assert_eq!(core.read(Caller::root(), o.fh, 0, 4096).unwrap(), TDF);
    core.release(Caller::root(), o.fh).unwrap();
    assert_eq!(n(), 0, "nothing inside a GAF member was asked for");

    // listing anims/ decodes its five GAFs (to know they are folders), not units/'s
    let listed = names(&core, anims.ino);
    assert_eq!(listed.len(), 5);
    assert!(
        listed.iter().all(|(_, k)| *k == FileKind::Dir),
        "{listed:?}"
    );
    assert_eq!(n(), 5);
    // listing it again decodes nothing more
    names(&core, anims.ino);
    assert_eq!(n(), 5);

    // looking one GAF of units/ up decodes that one only
    let u1 = core
        .lookup(Caller::root(), units.ino, OsStr::new("u1.gaf"))
        .unwrap();
    assert_eq!(u1.kind, FileKind::Dir);
    assert_eq!(n(), 6);
    let inside = names(&core, u1.ino);
    assert!(
        inside.iter().any(|(x, _)| x == "metadata.json"),
        "{inside:?}"
    );
    assert_eq!(n(), 6);
}

// ---------------------------------------------------------------------------------------
// Write-back into archives

struct Fixture {
    game: tempfile::TempDir,
    state: tempfile::TempDir,
    core: Core,
}

fn fixture(bytes: Vec<u8>) -> Fixture {
    let game = tempfile::tempdir().unwrap();
    put(&game.path().join("data.hpi"), bytes);
    let state = tempfile::tempdir().unwrap();
    let opts = MountOptions {
        state_dir: Some(state.path().to_path_buf()),
        // every call here is an operation of its own: each commit keeps a version
        operation_gap: std::time::Duration::ZERO,
        ..MountOptions::default()
    };
    let core = Core::new(game.path(), opts, None).unwrap();
    Fixture { game, state, core }
}

impl Fixture {
    fn archive(&self) -> Vec<u8> {
        std::fs::read(self.game.path().join("data.hpi")).unwrap()
    }
    fn history(&self) -> usize {
        let abs = std::path::absolute(self.game.path().join("data.hpi")).unwrap();
        tafs::fs::stage::history_of(&tafs::fs::stage::history_dir(self.state.path(), &abs)).len()
    }
}

/// cp onto an existing file: open O_WRONLY|O_TRUNC, write, close.
fn cp_onto(core: &Core, path: &str, bytes: &[u8]) -> Result<(), i32> {
    let o = core
        .open(
            Caller::root(),
            ino(core, path),
            libc::O_WRONLY | libc::O_TRUNC,
        )
        .map_err(|e| e.errno())?;
    core.write(Caller::root(), o.fh, 0, bytes)
        .map_err(|e| e.errno())?;
    let r = core.flush(Caller::root(), o.fh).map_err(|e| e.errno());
    core.release(Caller::root(), o.fh).unwrap();
    r
}

/// echo > new file: create, write, close.
fn create(core: &Core, path: &str, bytes: &[u8]) -> Result<(), i32> {
    let (dir, name) = path.rsplit_once('/').unwrap();
    let (_, o) = core
        .create(
            Caller::root(),
            NewNode::new(ino(core, dir), OsStr::new(name), 0o100644, 0o022),
            libc::O_WRONLY,
        )
        .map_err(|e| e.errno())?;
    core.write(Caller::root(), o.fh, 0, bytes)
        .map_err(|e| e.errno())?;
    let r = core.flush(Caller::root(), o.fh).map_err(|e| e.errno());
    core.release(Caller::root(), o.fh).unwrap();
    r
}

/// Every file member: shown path → (decompressed bytes, stored bytes).
fn members(bytes: &[u8]) -> std::collections::BTreeMap<String, (Vec<u8>, hpi::StoredMember)> {
    let a = hpi::parse(bytes, &hpi::HpiLimits::default()).unwrap();
    a.files()
        .map(|(i, f)| {
            (
                a.path_str(i),
                (
                    a.read(bytes, f, &hpi::HpiLimits::default()).unwrap(),
                    a.stored_member(bytes, f).unwrap(),
                ),
            )
        })
        .collect()
}

#[test]
fn frame_edit_in_an_archive_member_repacks_only_that_member() {
    let f = fixture(archive());
    let before = members(&f.archive());
    let png = read(&f.core, "data.hpi/anims/b.gaf/pulse/2.png");
    let (edited, pos) = writeback_common::edit_png(&png, 0xB3);
    cp_onto(&f.core, "data.hpi/anims/b.gaf/pulse/2.png", &edited).unwrap();
    let after = members(&f.archive());
    assert_eq!(
        before.keys().collect::<Vec<_>>(),
        after.keys().collect::<Vec<_>>()
    );
    for (path, (bytes, stored)) in &before {
        if path != "anims/b.gaf" {
            assert_eq!(&after[path].1, stored, "{path}: stored bytes kept");
            assert_eq!(&after[path].0, bytes);
        }
    }
    // b.gaf: frame 2 of pulse has the one edited pixel
    let g0 = tafs::formats::gaf::parse(&before["anims/b.gaf"].0, &Default::default()).unwrap();
    let g1 = tafs::formats::gaf::parse(&after["anims/b.gaf"].0, &Default::default()).unwrap();
    let p0 = g0.sequences[0].frames[2].frame.flatten().unwrap();
    let p1 = g1.sequences[0].frames[2].frame.flatten().unwrap();
    assert_eq!(p1.indices[pos], 0xB3);
    let diff: Vec<usize> = (0..p0.indices.len())
        .filter(|&i| p0.indices[i] != p1.indices[i] || p0.opaque[i] != p1.opaque[i])
        .collect();
    assert_eq!(diff, vec![pos]);
    assert_eq!(f.history(), 1);
    let st = String::from_utf8(read(&f.core, "data.hpi/.tafs-status")).unwrap();
    assert!(st.contains("data.hpi: clean"), "{st}");
    // the archive keeps its format: v1, key 0, zlib for the new member
    let a = hpi::parse(&f.archive(), &hpi::HpiLimits::default()).unwrap();
    assert_eq!((a.version, a.key), (hpi::Version::V1, 0));
    // other members of the archive still show their views, the edit reads back
    assert_eq!(read(&f.core, "data.hpi/anims/b.gaf/pulse/2.png"), edited);
    assert_eq!(read(&f.core, "data.hpi/gamedata/side.tdf"), TDF);
}

#[test]
fn plain_members_added_replaced_deleted_and_folders_made() {
    let f = fixture(archive());
    // replace a plain member
    cp_onto(&f.core, "data.hpi/gamedata/side.tdf", b"[X]{}").unwrap();
    assert_eq!(members(&f.archive())["gamedata/side.tdf"].0, b"[X]{}");
    assert_eq!(read(&f.core, "data.hpi/gamedata/side.tdf"), b"[X]{}");
    // a new member in a new folder
    create(&f.core, "data.hpi/gamedata/new.txt", b"hello\n").unwrap();
    assert_eq!(members(&f.archive())["gamedata/new.txt"].0, b"hello\n");
    let gd = ino(&f.core, "data.hpi");
    f.core
        .mkdir(
            Caller::root(),
            NewNode::new(gd, OsStr::new("scripts"), 0o755, 0o022),
        )
        .unwrap();
    let a = hpi::parse(&f.archive(), &hpi::HpiLimits::default()).unwrap();
    assert!(a.find(b"scripts").is_some(), "empty folder written");
    // a temporary name does not commit, a rename onto a member name does
    let gdi = ino(&f.core, "data.hpi/gamedata");
    let (_, o) = f
        .core
        .create(
            Caller::root(),
            NewNode::new(gdi, OsStr::new("tmpab12cd34"), 0o100600, 0),
            libc::O_WRONLY,
        )
        .unwrap();
    f.core.write(Caller::root(), o.fh, 0, b"v2").unwrap();
    f.core.flush(Caller::root(), o.fh).unwrap();
    f.core.release(Caller::root(), o.fh).unwrap();
    assert!(!members(&f.archive()).contains_key("gamedata/tmpab12cd34"));
    f.core
        .rename(
            Caller::root(),
            gdi,
            OsStr::new("tmpab12cd34"),
            gdi,
            OsStr::new("side.tdf"),
            0,
        )
        .unwrap();
    let m = members(&f.archive());
    assert_eq!(m["gamedata/side.tdf"].0, b"v2");
    assert!(!m.contains_key("gamedata/tmpab12cd34"));
    // write, fsync (commits), write more, close: the archive has everything
    let (_, o) = f
        .core
        .create(
            Caller::root(),
            NewNode::new(gdi, OsStr::new("log.txt"), 0o100644, 0),
            libc::O_WRONLY,
        )
        .unwrap();
    f.core.write(Caller::root(), o.fh, 0, b"one ").unwrap();
    f.core.fsync(Caller::root(), o.fh, false).unwrap();
    assert_eq!(members(&f.archive())["gamedata/log.txt"].0, b"one ");
    f.core.write(Caller::root(), o.fh, 4, b"two").unwrap();
    f.core.flush(Caller::root(), o.fh).unwrap();
    f.core.release(Caller::root(), o.fh).unwrap();
    assert_eq!(members(&f.archive())["gamedata/log.txt"].0, b"one two");
    assert_eq!(read(&f.core, "data.hpi/gamedata/log.txt"), b"one two");
    // a GAF written in as a binary shows as its exploded view once closed
    create(&f.core, "data.hpi/gamedata/copy.gaf", &gaf()).unwrap();
    assert_eq!(members(&f.archive())["gamedata/copy.gaf"].0, gaf());
    let c = f
        .core
        .lookup(Caller::root(), gdi, OsStr::new("copy.gaf"))
        .unwrap();
    assert_eq!(c.kind, FileKind::Dir);
    assert!(!read(&f.core, "data.hpi/gamedata/copy.gaf/metadata.json").is_empty());
    // delete a member
    f.core
        .unlink(Caller::root(), gdi, OsStr::new("new.txt"))
        .unwrap();
    assert!(!members(&f.archive()).contains_key("gamedata/new.txt"));
    // a name differing only in case from a sibling: EEXIST
    let e = create(&f.core, "data.hpi/gamedata/SIDE.TDF", b"x").unwrap_err();
    assert_eq!(e, libc::EEXIST);
    let e = f
        .core
        .mkdir(
            Caller::root(),
            NewNode::new(gd, OsStr::new("Anims"), 0o755, 0),
        )
        .unwrap_err();
    assert_eq!(e.errno(), libc::EEXIST);
    // rename across the archive's boundary: EXDEV
    let e = f
        .core
        .rename(
            Caller::root(),
            gdi,
            OsStr::new("side.tdf"),
            ROOT,
            OsStr::new("side.tdf"),
            0,
        )
        .unwrap_err();
    assert_eq!(e.errno(), libc::EXDEV);
    // the unchanged GAFs kept their stored bytes through all of this
    let orig = members(&archive());
    let now = members(&f.archive());
    for k in orig.keys().filter(|k| k.ends_with(".gaf")) {
        assert_eq!(orig[k].1, now[k].1, "{k}");
    }
    assert!(f.history() >= 5);
}

#[test]
fn bad_png_in_an_archive_member_fails_and_leaves_the_archive() {
    let f = fixture(archive());
    let orig = f.archive();
    let e = cp_onto(&f.core, "data.hpi/anims/a.gaf/panel/0.png", b"not a png").unwrap_err();
    assert_eq!(e, libc::EIO);
    assert_eq!(f.archive(), orig);
    let st = String::from_utf8(read(&f.core, "data.hpi/.tafs-status")).unwrap();
    assert!(
        st.contains("error") && st.contains("anims/a.gaf") && st.contains("panel/0.png"),
        "{st}"
    );
    let root = String::from_utf8(read(&f.core, ".tafs-status")).unwrap();
    assert!(root.contains("data.hpi: error"), "{root}");
    // fixing it commits
    let good = {
        let fresh = Core::new(f.game.path(), MountOptions::default(), None).unwrap();
        read(&fresh, "data.hpi/anims/a.gaf/panel/0.png")
    };
    let (edited, _) = writeback_common::edit_png(&good, 0x20);
    cp_onto(&f.core, "data.hpi/anims/a.gaf/panel/0.png", &edited).unwrap();
    assert_ne!(f.archive(), orig);
    let st = String::from_utf8(read(&f.core, "data.hpi/.tafs-status")).unwrap();
    assert!(st.contains("data.hpi: clean"), "{st}");
}

#[test]
fn read_only_mounts_and_no_state_dir_keep_archives_read_only() {
    let game = tempfile::tempdir().unwrap();
    put(&game.path().join("data.hpi"), archive());
    let state = tempfile::tempdir().unwrap();
    for opts in [
        MountOptions::default(),
        MountOptions {
            read_only: true,
            state_dir: Some(state.path().to_path_buf()),
            ..MountOptions::default()
        },
    ] {
        let core = Core::new(game.path(), opts, None).unwrap();
        let e = cp_onto(&core, "data.hpi/gamedata/side.tdf", b"x").unwrap_err();
        assert_eq!(e, libc::EROFS);
        let e = create(&core, "data.hpi/gamedata/n.txt", b"x").unwrap_err();
        assert_eq!(e, libc::EROFS);
    }
    assert_eq!(
        std::fs::read(game.path().join("data.hpi")).unwrap(),
        archive()
    );
}

#[test]
fn members_and_folders_move_inside_an_archive_with_their_stored_bytes() {
    let f = fixture(archive());
    let orig = members(&archive());
    let arch = ino(&f.core, "data.hpi");
    let anims = ino(&f.core, "data.hpi/anims");
    // an edit inside the member (committed; its staged file stays and moves along)
    let png = read(&f.core, "data.hpi/anims/a.gaf/pulse/2.png");
    let (edited, _) = writeback_common::edit_png(&png, 0x55);
    cp_onto(&f.core, "data.hpi/anims/a.gaf/pulse/2.png", &edited).unwrap();
    let edited_member = members(&f.archive())["anims/a.gaf"].clone();
    f.core
        .rename(
            Caller::root(),
            anims,
            OsStr::new("a.gaf"),
            anims,
            OsStr::new("z.gaf"),
            0,
        )
        .unwrap();
    let m = members(&f.archive());
    assert!(!m.contains_key("anims/a.gaf"));
    assert_eq!(m["anims/z.gaf"].1, edited_member.1, "moved verbatim");
    assert_eq!(
        f.core
            .lookup(Caller::root(), anims, OsStr::new("z.gaf"))
            .unwrap()
            .kind,
        FileKind::Dir
    );
    // the staged (clean) edit moved along and still reads back
    assert_eq!(read(&f.core, "data.hpi/anims/z.gaf/pulse/2.png"), edited);
    // a folder with GAF members into a new folder
    let more = f
        .core
        .mkdir(
            Caller::root(),
            NewNode::new(arch, OsStr::new("more"), 0o755, 0o022),
        )
        .unwrap();
    f.core
        .rename(
            Caller::root(),
            arch,
            OsStr::new("units"),
            more.ino,
            OsStr::new("units2"),
            0,
        )
        .unwrap();
    let m = members(&f.archive());
    assert!(!m.keys().any(|k| k.starts_with("units/")), "{:?}", m.keys());
    assert_eq!(m["more/units2/u1.gaf"].1, orig["units/u1.gaf"].1);
    assert_eq!(m["more/units2/u2.gaf"].1, orig["units/u2.gaf"].1);
    assert!(!read(&f.core, "data.hpi/more/units2/u1.gaf/metadata.json").is_empty());
    // onto an existing name: EEXIST; into a member: EXDEV
    let e = f
        .core
        .rename(
            Caller::root(),
            anims,
            OsStr::new("b.gaf"),
            anims,
            OsStr::new("c.gaf"),
            0,
        )
        .unwrap_err();
    assert_eq!(e.errno(), libc::EEXIST);
    let c = ino(&f.core, "data.hpi/anims/c.gaf");
    let e = f
        .core
        .rename(
            Caller::root(),
            anims,
            OsStr::new("b.gaf"),
            c,
            OsStr::new("b.gaf"),
            0,
        )
        .unwrap_err();
    assert_eq!(e.errno(), libc::EXDEV);
}

/// A member's folders keep the times set on them when a write inside a subfolder copies
/// that subfolder into the staging area and commits (as in a loose asset directory).
#[test]
fn a_member_folder_keeps_its_time_across_a_commit_inside_it() {
    use std::time::{Duration, UNIX_EPOCH};
    let f = fixture(archive());
    let when = UNIX_EPOCH + Duration::from_secs(981_173_106);
    let member = "data.hpi/anims/b.gaf";
    assert_eq!(writeback_common::touch(&f.core, member, when), when);
    let png = read(&f.core, "data.hpi/anims/b.gaf/pulse/2.png");
    let (edited, _) = writeback_common::edit_png(&png, 0xB3);
    cp_onto(&f.core, "data.hpi/anims/b.gaf/pulse/2.png", &edited).unwrap();
    assert_eq!(f.history(), 1, "the edit committed");
    let mtime = f
        .core
        .getattr(Caller::root(), ino(&f.core, member), None)
        .unwrap()
        .mtime;
    assert_eq!(mtime, when);
}

/// Plain members and folders written into an archive keep the times and permission bits
/// they showed when their staged copies leave the staging area (an archive stores neither),
/// as `cp -a` and `rsync -a` set them: across later commits, a folder rename and a new
/// mount; a deleted member's record goes with it; an archive replaced outside the mount
/// shows its own time and mode again.
#[test]
fn plain_members_keep_the_times_and_modes_they_were_given_across_commits() {
    use std::os::unix::fs::MetadataExt;
    use std::time::{Duration, UNIX_EPOCH};
    use tafs::fs::SetAttr;
    let f = fixture(archive());
    let when = UNIX_EPOCH + Duration::from_secs(981_173_106);
    let shown = |core: &Core, p: &str| {
        let a = core.getattr(Caller::root(), ino(core, p), None).unwrap();
        (a.mtime, a.perm)
    };
    let chmod = |core: &Core, p: &str, mode: u32| {
        let set = SetAttr {
            mode: Some(mode),
            ..Default::default()
        };
        core.setattr(Caller::root(), ino(core, p), set, None)
            .unwrap();
    };
    let staged = |f: &Fixture| -> Vec<String> {
        let mut v: Vec<String> = walk(f.state.path())
            .into_iter()
            .filter_map(|p| {
                let s = p.to_string_lossy().into_owned();
                s.split_once("/files/").map(|(_, r)| r.to_string())
            })
            .collect();
        v.sort();
        v
    };
    // as cp -a does: a folder and a file made, written and closed (each commits), then the
    // file's mode and times, then the folder's times
    let arch = ino(&f.core, "data.hpi");
    f.core
        .mkdir(
            Caller::root(),
            NewNode::new(arch, OsStr::new("scripts"), 0o750, 0),
        )
        .unwrap();
    create(&f.core, "data.hpi/scripts/run.cob", b"cob").unwrap();
    chmod(&f.core, "data.hpi/scripts/run.cob", 0o750);
    writeback_common::touch(&f.core, "data.hpi/scripts/run.cob", when);
    writeback_common::touch(&f.core, "data.hpi/scripts", when);
    assert_eq!(shown(&f.core, "data.hpi/scripts/run.cob"), (when, 0o750));
    // a later commit elsewhere takes them out of the staging area
    cp_onto(&f.core, "data.hpi/gamedata/side.tdf", b"[X]{}").unwrap();
    assert_eq!(members(&f.archive())["scripts/run.cob"].0, b"cob");
    assert_eq!(staged(&f), Vec::<String>::new(), "still staged");
    assert_eq!(shown(&f.core, "data.hpi/scripts/run.cob"), (when, 0o750));
    assert_eq!(shown(&f.core, "data.hpi/scripts"), (when, 0o750));
    // the member that commit wrote shows the time it was written with
    let side = shown(&f.core, "data.hpi/gamedata/side.tdf");
    assert_eq!(side.1, 0o644);
    // more commits, and a new mount
    create(&f.core, "data.hpi/gamedata/other.txt", b"x").unwrap();
    assert_eq!(shown(&f.core, "data.hpi/scripts/run.cob"), (when, 0o750));
    assert_eq!(shown(&f.core, "data.hpi/gamedata/side.tdf"), side);
    let opts = f.core.options().clone();
    let Fixture { game, state, core } = f;
    drop(core);
    let core = Core::new(game.path(), opts, None).unwrap();
    let f = Fixture { game, state, core };
    assert_eq!(shown(&f.core, "data.hpi/scripts/run.cob"), (when, 0o750));
    assert_eq!(shown(&f.core, "data.hpi/scripts"), (when, 0o750));
    // a folder renamed takes its members' records along (and keeps its own time)
    let arch = ino(&f.core, "data.hpi");
    f.core
        .rename(
            Caller::root(),
            arch,
            OsStr::new("scripts"),
            arch,
            OsStr::new("cob"),
            0,
        )
        .unwrap();
    assert!(members(&f.archive()).contains_key("cob/run.cob"));
    assert_eq!(shown(&f.core, "data.hpi/cob/run.cob"), (when, 0o750));
    assert_eq!(shown(&f.core, "data.hpi/cob"), (when, 0o750));
    // deleted, then made again: a new file with its own time
    let cob = ino(&f.core, "data.hpi/cob");
    f.core
        .unlink(Caller::root(), cob, OsStr::new("run.cob"))
        .unwrap();
    create(&f.core, "data.hpi/cob/run.cob", b"cob2").unwrap();
    let again = shown(&f.core, "data.hpi/cob/run.cob");
    assert_ne!(again.0, when);
    assert_eq!(again.1, 0o644);
    // the archive replaced outside the mount (same bytes, another file): its time and mode
    let path = f.game.path().join("data.hpi");
    let tmp = f.game.path().join("new.tmp");
    std::fs::write(&tmp, f.archive()).unwrap();
    std::fs::rename(&tmp, &path).unwrap();
    let m = std::fs::metadata(&path).unwrap();
    let archive_time = UNIX_EPOCH + Duration::new(m.mtime() as u64, m.mtime_nsec() as u32);
    assert_eq!(
        shown(&f.core, "data.hpi/gamedata/other.txt"),
        (archive_time, 0o644)
    );
    assert_eq!(shown(&f.core, "data.hpi/cob"), (archive_time, 0o755));
}

/// Every path under `dir`.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(p.clone());
            }
            out.push(p);
        }
    }
    out
}

/// With a committer running, saves of plain members commit together once no save came for
/// the delay (one version for three files), a deletion followed by the same file written
/// again commits nothing, and the end of the mount makes a commit put off.
#[test]
fn saves_of_plain_members_commit_together_after_the_delay() {
    use std::time::{Duration, Instant};
    let f = fixture(archive());
    let opts = MountOptions {
        archive_commit_delay: Duration::from_millis(300),
        ..f.core.options().clone()
    };
    let Fixture { game, state, core } = f;
    drop(core);
    let path = game.path().join("data.hpi");
    let history = || {
        let abs = std::path::absolute(&path).unwrap();
        tafs::fs::stage::history_of(&tafs::fs::stage::history_dir(state.path(), &abs)).len()
    };
    let core = Arc::new(Core::new(game.path(), opts.clone(), None).unwrap());
    Core::start_committer(&core).unwrap();
    let before = std::fs::read(&path).unwrap();
    let t0 = Instant::now();
    for n in ["a.txt", "b.txt", "c.txt"] {
        create(&core, &format!("data.hpi/gamedata/{n}"), n.as_bytes()).unwrap();
    }
    if t0.elapsed() < Duration::from_millis(80) {
        assert_eq!(
            std::fs::read(&path).unwrap(),
            before,
            "committed before the delay"
        );
    }
    // the mount shows them meanwhile
    assert_eq!(read(&core, "data.hpi/gamedata/b.txt"), b"b.txt");
    let wait = |what: &str, done: &dyn Fn() -> bool| {
        let t = Instant::now();
        while !done() {
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "{what}: not after 10 s"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    wait("three files committed", &|| {
        members(&std::fs::read(&path).unwrap()).contains_key("gamedata/c.txt")
    });
    let m = members(&std::fs::read(&path).unwrap());
    for n in ["a.txt", "b.txt", "c.txt"] {
        assert_eq!(m[&format!("gamedata/{n}")].0, n.as_bytes());
    }
    assert_eq!(history(), 1, "one commit for the three saves");
    // deleted and written again as it was (tar x): nothing is written
    let id = |p: &std::path::Path| {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(p).unwrap();
        (m.ino(), m.mtime(), m.mtime_nsec())
    };
    let was = id(&path);
    core.unlink(
        Caller::root(),
        ino(&core, "data.hpi/gamedata"),
        OsStr::new("b.txt"),
    )
    .unwrap();
    create(&core, "data.hpi/gamedata/b.txt", b"b.txt").unwrap();
    wait("the archive clean", &|| {
        let s = read(&core, "data.hpi/.tafs-status");
        String::from_utf8_lossy(&s)
            .lines()
            .next()
            .is_some_and(|l| l.ends_with(": clean"))
    });
    assert_eq!(id(&path), was, "the archive was written");
    assert_eq!(history(), 1);
    // put off when the core goes: written then
    create(&core, "data.hpi/gamedata/d.txt", b"d").unwrap();
    core.finish();
    drop(core);
    assert_eq!(
        members(&std::fs::read(&path).unwrap())["gamedata/d.txt"].0,
        b"d"
    );
}
