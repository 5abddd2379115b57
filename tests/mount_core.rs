//! The file system core driven directly (no FUSE): asset directories, pass-through,
//! change detection, invalidation requests, read-only rules, cache bounds.

mod mount_common;

use mount_common::{fake_opener, put, replace, FakeView};
use std::ffi::OsStr;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::sync::mpsc::{self, Receiver};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tafs::fs::core::ROOT;
use tafs::fs::{Caller, NewNode};
use tafs::fs::{Core, FileKind, FsOps, Inval, MountOptions, SetAttr, SetTime};

const GAF: &str =
    "FAKE\nmetadata.json={\"v\":1}\nfire/0.png=AAAA\nfire/1.png=BBBBBB\nsmoke/0.png=C\n";

/// `name` looked up in folder `parent` of `core`, as root (it must be there).
fn look(core: &Core, parent: u64, name: &str) -> tafs::fs::Attr {
    core.lookup(Caller::root(), parent, OsStr::new(name))
        .unwrap()
}

/// `path` (names joined by `/`) looked up from folder `parent` one name at a time, as the
/// kernel does: the last name's attributes.
fn walk(core: &Core, parent: u64, path: &str) -> tafs::fs::Attr {
    path.split('/')
        .fold(None, |at: Option<tafs::fs::Attr>, name| {
            Some(look(core, at.map_or(parent, |a| a.ino), name))
        })
        .unwrap()
}

fn core_with(game: &std::path::Path, opts: MountOptions) -> (Core, Receiver<Inval>) {
    let (tx, rx) = mpsc::channel();
    (Core::new(game, opts, Some(tx)).unwrap(), rx)
}

fn opts() -> MountOptions {
    MountOptions {
        opener: fake_opener(),
        ..MountOptions::default()
    }
}

fn game() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    put(&d.path().join("anims/fire.gaf"), GAF);
    put(&d.path().join("anims/BROKEN.GAF"), "not a gaf");
    put(&d.path().join("maps/m.tnt"), "FAKE\nmap.png*1000=x\n");
    put(&d.path().join("units.tdf"), "[A]{}\n");
    d
}

fn names(core: &Core, ino: u64) -> Vec<(String, FileKind)> {
    let fh = core.opendir(Caller::root(), ino).unwrap();
    let v = core
        .readdir(Caller::root(), fh, 0)
        .unwrap()
        .into_iter()
        .map(|(_, it)| (it.name.to_string_lossy().into_owned(), it.kind))
        .collect();
    core.releasedir(Caller::root(), fh).unwrap();
    v
}

fn read_all(core: &Core, ino: u64) -> Vec<u8> {
    let o = core.open(Caller::root(), ino, libc::O_RDONLY).unwrap();
    let mut out = Vec::new();
    loop {
        let chunk = core
            .read(Caller::root(), o.fh, out.len() as u64, 3)
            .unwrap();
        if chunk.is_empty() {
            break;
        }
        out.extend(chunk);
    }
    core.release(Caller::root(), o.fh).unwrap();
    out
}

#[test]
fn assets_are_directories_others_pass_through() {
    let g = game();
    let (core, _rx) = core_with(g.path(), opts());
    let anims = look(&core, ROOT, "anims");
    assert_eq!(anims.kind, FileKind::Dir);
    let listing = names(&core, anims.ino);
    assert_eq!(
        listing,
        [
            (".".to_string(), FileKind::Dir),
            ("..".to_string(), FileKind::Dir),
            ("BROKEN.GAF".to_string(), FileKind::File),
            ("fire.gaf".to_string(), FileKind::Dir),
        ]
    );
    let fire = look(&core, anims.ino, "fire.gaf");
    assert_eq!(fire.kind, FileKind::Dir);
    // 2 + the sub-folders fire and smoke
    assert_eq!(fire.nlink, 4);
    let broken = look(&core, anims.ino, "BROKEN.GAF");
    assert_eq!(broken.kind, FileKind::File);
    assert_eq!(broken.size, "not a gaf".len() as u64);
    // the real anims folder has nlink 2; fire.gaf adds one sub-directory. Before the
    // folder was listed, BROKEN.GAF was not known to be broken and counted too.
    assert_eq!(anims.nlink, 4);
    assert_eq!(
        core.getattr(Caller::root(), anims.ino, None).unwrap().nlink,
        3
    );

    let inner = names(&core, fire.ino);
    let inner: Vec<&str> = inner.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(inner, [".", "..", "metadata.json", "fire", "smoke"]);

    let tdf = look(&core, ROOT, "units.tdf");
    assert_eq!(tdf.kind, FileKind::File);
    assert_eq!(read_all(&core, tdf.ino), b"[A]{}\n");
}

#[test]
fn generated_files_have_exact_sizes_binary_times_and_stable_inodes() {
    let g = game();
    let (core, _rx) = core_with(g.path(), opts());
    let bin = g.path().join("anims/fire.gaf");
    let when = UNIX_EPOCH + Duration::from_secs(1_000_000_000);
    std::fs::File::options()
        .write(true)
        .open(&bin)
        .unwrap()
        .set_modified(when)
        .unwrap();
    let anims = look(&core, ROOT, "anims");
    let fire = look(&core, anims.ino, "fire.gaf");
    let dir = look(&core, fire.ino, "fire");
    let one = look(&core, dir.ino, "1.png");
    assert_eq!(one.size, 6);
    assert_eq!(one.mtime, when);
    assert_eq!(fire.mtime, when);
    assert_eq!(one.nlink, 1);
    assert_eq!(dir.nlink, 2);
    // permissions follow the binary: rw-r--r-- file gives rw-r--r-- files, rwxr-xr-x dirs
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o640)).unwrap();
    let one = core.getattr(Caller::root(), one.ino, None);
    // chmod changed the ctime: the binary counts as changed, the old inode is stale
    assert_eq!(one.unwrap_err().errno(), libc::ESTALE);
    let fire2 = look(&core, anims.ino, "fire.gaf");
    assert_eq!(fire2.ino, fire.ino, "the asset directory keeps its inode");
    assert_eq!(fire2.perm, 0o750);
    let dir2 = look(&core, fire.ino, "fire");
    let one2 = look(&core, dir2.ino, "1.png");
    assert_eq!(one2.perm, 0o640);
    // stable while unchanged
    assert_eq!(look(&core, dir2.ino, "1.png").ino, one2.ino);
    assert_eq!(
        core.getattr(Caller::root(), one2.ino, None).unwrap().size,
        6
    );
    assert_eq!(read_all(&core, one2.ino), b"BBBBBB");
    let meta = look(&core, fire.ino, "metadata.json");
    assert_eq!(read_all(&core, meta.ino), b"{\"v\":1}");
    assert_eq!(
        core.lookup(Caller::root(), fire.ino, OsStr::new("nope"))
            .unwrap_err()
            .errno(),
        libc::ENOENT
    );
}

#[test]
fn readdirplus_gives_sizes() {
    let g = game();
    let (core, _rx) = core_with(g.path(), opts());
    let m = walk(&core, ROOT, "maps/m.tnt");
    let fh = core.opendir(Caller::root(), m.ino).unwrap();
    let items = core.readdirplus(Caller::root(), fh, 0).unwrap();
    let png = items.iter().find(|(_, it)| it.name == "map.png").unwrap();
    assert_eq!(png.1.attr.unwrap().size, 1000);
    // offsets continue after the given one
    let rest = core.readdirplus(Caller::root(), fh, 2).unwrap();
    assert_eq!(rest.len(), 1);
    assert_eq!(rest[0].0, 3);
    core.releasedir(Caller::root(), fh).unwrap();
}

#[test]
fn replaced_binary_gives_new_inodes_and_invalidations() {
    let g = game();
    let (core, rx) = core_with(g.path(), opts());
    let anims = look(&core, ROOT, "anims");
    let fire = look(&core, anims.ino, "fire.gaf");
    let meta = look(&core, fire.ino, "metadata.json");
    let open = core.open(Caller::root(), meta.ino, libc::O_RDONLY).unwrap();
    assert!(open.keep_cache, "a view inode always has the same bytes");

    replace(
        &g.path().join("anims/fire.gaf"),
        "FAKE\nmetadata.json={\"v\":22}\n",
    );
    // the old inode is stale: it opens no more, stat (fstat of a descriptor still open)
    // answers the version that descriptor reads, and ESTALE once none is open
    assert_eq!(
        core.open(Caller::root(), meta.ino, libc::O_RDONLY)
            .unwrap_err()
            .errno(),
        libc::ESTALE
    );
    assert_eq!(
        core.getattr(Caller::root(), meta.ino, None).unwrap().size,
        7
    );
    assert_eq!(
        core.read(Caller::root(), open.fh, 0, 100).unwrap(),
        b"{\"v\":1}"
    );
    core.release(Caller::root(), open.fh).unwrap();
    assert_eq!(
        core.getattr(Caller::root(), meta.ino, None)
            .unwrap_err()
            .errno(),
        libc::ESTALE
    );
    let new = look(&core, fire.ino, "metadata.json");
    assert_ne!(new.ino, meta.ino);
    assert_eq!(new.size, 8);
    assert_eq!(read_all(&core, new.ino), b"{\"v\":22}");
    assert_eq!(
        core.lookup(Caller::root(), fire.ino, OsStr::new("fire"))
            .unwrap_err()
            .errno(),
        libc::ENOENT
    );
    let msgs: Vec<Inval> = rx.try_iter().collect();
    assert!(
        msgs.contains(&Inval::Entry {
            parent: fire.ino,
            name: "metadata.json".into()
        }),
        "{msgs:?}"
    );
    assert!(msgs.contains(&Inval::Inode { ino: meta.ino }), "{msgs:?}");
    assert!(msgs.contains(&Inval::Inode { ino: fire.ino }), "{msgs:?}");

    std::fs::remove_file(g.path().join("anims/fire.gaf")).unwrap();
    assert_eq!(
        core.getattr(Caller::root(), fire.ino, None)
            .unwrap_err()
            .errno(),
        libc::ESTALE
    );
    assert_eq!(
        core.lookup(Caller::root(), anims.ino, OsStr::new("fire.gaf"))
            .unwrap_err()
            .errno(),
        libc::ENOENT
    );
}

#[test]
fn broken_asset_becomes_directory_when_fixed() {
    let g = game();
    let (core, _rx) = core_with(g.path(), opts());
    let anims = look(&core, ROOT, "anims");
    let b = look(&core, anims.ino, "BROKEN.GAF");
    assert_eq!(b.kind, FileKind::File);
    assert_eq!(read_all(&core, b.ino), b"not a gaf");
    replace(&g.path().join("anims/BROKEN.GAF"), "FAKE\na=1\n");
    let b2 = look(&core, anims.ino, "BROKEN.GAF");
    assert_eq!(b2.kind, FileKind::Dir);
    assert_ne!(b2.ino, b.ino);
}

#[test]
fn writes_in_asset_directories_are_refused_with_erofs() {
    let g = game();
    let (core, _rx) = core_with(g.path(), opts());
    let anims = look(&core, ROOT, "anims");
    let fire = look(&core, anims.ino, "fire.gaf");
    let meta = look(&core, fire.ino, "metadata.json");
    let erofs = |r: Result<(), tafs::fs::FsError>| assert_eq!(r.unwrap_err().errno(), libc::EROFS);
    erofs(
        core.create(
            Caller::root(),
            NewNode::new(fire.ino, OsStr::new("x"), 0o644, 0),
            libc::O_WRONLY,
        )
        .map(|_| ()),
    );
    erofs(
        core.mkdir(
            Caller::root(),
            NewNode::new(fire.ino, OsStr::new("d"), 0o755, 0),
        )
        .map(|_| ()),
    );
    erofs(core.unlink(Caller::root(), fire.ino, OsStr::new("metadata.json")));
    erofs(core.rename(
        Caller::root(),
        fire.ino,
        OsStr::new("metadata.json"),
        ROOT,
        OsStr::new("m"),
        0,
    ));
    erofs(
        core.open(Caller::root(), meta.ino, libc::O_WRONLY)
            .map(|_| ()),
    );
    erofs(
        core.open(Caller::root(), meta.ino, libc::O_RDONLY | libc::O_TRUNC)
            .map(|_| ()),
    );
    erofs(
        core.setattr(
            Caller::root(),
            meta.ino,
            SetAttr {
                mode: Some(0o600),
                ..Default::default()
            },
            None,
        )
        .map(|_| ()),
    );
    erofs(core.rmdir(Caller::root(), anims.ino, OsStr::new("fire.gaf")));
    erofs(core.access(Caller::root(), meta.ino, libc::W_OK));
    core.access(Caller::root(), meta.ino, libc::R_OK).unwrap();
    assert!(g.path().join("anims/fire.gaf").is_file());
}

#[test]
fn pass_through_operations_reach_the_game_folder() {
    let g = game();
    let (core, _rx) = core_with(g.path(), opts());
    let p = g.path();
    let (a, o) = core
        .create(
            Caller::root(),
            NewNode::new(ROOT, OsStr::new("new.tdf"), 0o644, 0o022),
            libc::O_WRONLY,
        )
        .unwrap();
    assert_eq!(a.kind, FileKind::File);
    assert_eq!(
        core.write(Caller::root(), o.fh, 0, b"hello world").unwrap(),
        11
    );
    core.flush(Caller::root(), o.fh).unwrap();
    core.fsync(Caller::root(), o.fh, false).unwrap();
    core.release(Caller::root(), o.fh).unwrap();
    assert_eq!(std::fs::read(p.join("new.tdf")).unwrap(), b"hello world");

    let a = core
        .setattr(
            Caller::root(),
            a.ino,
            SetAttr {
                mode: Some(0o600),
                ..Default::default()
            },
            None,
        )
        .unwrap();
    assert_eq!(a.perm, 0o600);
    assert_eq!(
        std::fs::metadata(p.join("new.tdf")).unwrap().mode() & 0o777,
        0o600
    );
    let t = UNIX_EPOCH + Duration::from_secs(1_234_567_890);
    core.setattr(
        Caller::root(),
        a.ino,
        SetAttr {
            mtime: Some(SetTime::At(t)),
            ..Default::default()
        },
        None,
    )
    .unwrap();
    assert_eq!(
        std::fs::metadata(p.join("new.tdf"))
            .unwrap()
            .modified()
            .unwrap(),
        t
    );
    core.setattr(
        Caller::root(),
        a.ino,
        SetAttr {
            size: Some(5),
            ..Default::default()
        },
        None,
    )
    .unwrap();
    assert_eq!(std::fs::read(p.join("new.tdf")).unwrap(), b"hello");

    core.rename(
        Caller::root(),
        ROOT,
        OsStr::new("new.tdf"),
        ROOT,
        OsStr::new("renamed.tdf"),
        0,
    )
    .unwrap();
    assert!(!p.join("new.tdf").exists());
    // the inode followed the rename
    assert_eq!(look(&core, ROOT, "renamed.tdf").ino, a.ino);
    assert_eq!(core.getattr(Caller::root(), a.ino, None).unwrap().size, 5);

    let d = core
        .mkdir(
            Caller::root(),
            NewNode::new(ROOT, OsStr::new("dir"), 0o755, 0),
        )
        .unwrap();
    core.symlink(
        Caller::root(),
        d.ino,
        OsStr::new("ln"),
        std::path::Path::new("../renamed.tdf"),
    )
    .unwrap();
    let ln = look(&core, d.ino, "ln");
    assert_eq!(ln.kind, FileKind::Symlink);
    assert_eq!(
        core.readlink(Caller::root(), ln.ino).unwrap(),
        b"../renamed.tdf"
    );
    core.link(Caller::root(), a.ino, d.ino, OsStr::new("hard.tdf"))
        .unwrap();
    assert_eq!(std::fs::metadata(p.join("renamed.tdf")).unwrap().nlink(), 2);
    assert_eq!(
        core.rmdir(Caller::root(), ROOT, OsStr::new("dir"))
            .unwrap_err()
            .errno(),
        libc::ENOTEMPTY
    );
    core.unlink(Caller::root(), d.ino, OsStr::new("ln"))
        .unwrap();
    core.unlink(Caller::root(), d.ino, OsStr::new("hard.tdf"))
        .unwrap();
    core.rmdir(Caller::root(), ROOT, OsStr::new("dir")).unwrap();
    assert!(!p.join("dir").exists());
    core.unlink(Caller::root(), ROOT, OsStr::new("renamed.tdf"))
        .unwrap();
    assert_eq!(
        core.getattr(Caller::root(), a.ino, None)
            .unwrap_err()
            .errno(),
        libc::ESTALE
    );
    assert!(core.statfs(Caller::root()).unwrap().bsize > 0);
    // an asset directory can be renamed as a whole: it renames the binary
    let anims = look(&core, ROOT, "anims");
    core.rename(
        Caller::root(),
        anims.ino,
        OsStr::new("fire.gaf"),
        anims.ino,
        OsStr::new("hot.gaf"),
        0,
    )
    .unwrap();
    assert!(p.join("anims/hot.gaf").is_file());
    assert_eq!(look(&core, anims.ino, "hot.gaf").kind, FileKind::Dir);
}

#[test]
fn read_only_mount_refuses_everything() {
    let g = game();
    let (core, _rx) = core_with(
        g.path(),
        MountOptions {
            read_only: true,
            ..opts()
        },
    );
    let tdf = look(&core, ROOT, "units.tdf");
    assert_eq!(tdf.perm & 0o222, 0);
    for r in [
        core.create(
            Caller::root(),
            NewNode::new(ROOT, OsStr::new("x"), 0o644, 0),
            libc::O_WRONLY,
        )
        .map(|_| ()),
        core.open(Caller::root(), tdf.ino, libc::O_RDWR).map(|_| ()),
        core.unlink(Caller::root(), ROOT, OsStr::new("units.tdf")),
        core.mkdir(
            Caller::root(),
            NewNode::new(ROOT, OsStr::new("d"), 0o755, 0),
        )
        .map(|_| ()),
        core.setattr(
            Caller::root(),
            tdf.ino,
            SetAttr {
                mode: Some(0o600),
                ..Default::default()
            },
            None,
        )
        .map(|_| ()),
    ] {
        assert_eq!(r.unwrap_err().errno(), libc::EROFS);
    }
    assert_eq!(read_all(&core, tdf.ino), b"[A]{}\n");
}

#[test]
fn cache_stays_within_budget_and_content_survives_eviction() {
    let g = tempfile::tempdir().unwrap();
    let mut text = String::from("FAKE\n");
    for i in 0..20 {
        text.push_str(&format!("f{i}*100={}\n", (b'a' + i as u8) as char));
    }
    put(&g.path().join("a.gaf"), &text);
    let (core, _rx) = core_with(
        g.path(),
        MountOptions {
            cache_size: 350,
            max_views: 1,
            ..opts()
        },
    );
    let a = look(&core, ROOT, "a.gaf");
    for round in 0..2 {
        for i in 0..20u8 {
            let f = core
                .lookup(Caller::root(), a.ino, OsStr::new(&format!("f{i}")))
                .unwrap();
            assert_eq!(f.size, 100);
            assert_eq!(read_all(&core, f.ino), vec![b'a' + i; 100], "round {round}");
            assert!(core.cached_bytes() <= 350);
        }
    }
}

#[test]
fn decoding_one_asset_does_not_block_others() {
    let g = game();
    put(&g.path().join("slow.gaf"), "FAKE\nsleep=1500\na=1\n");
    let (core, _rx) = core_with(g.path(), opts());
    let core = Arc::new(core);
    let c2 = core.clone();
    let slow = std::thread::spawn(move || look(&c2, ROOT, "slow.gaf"));
    std::thread::sleep(Duration::from_millis(100));
    let t = Instant::now();
    let fire = walk(&core, ROOT, "anims/fire.gaf");
    core.getattr(Caller::root(), ROOT, None).unwrap();
    assert_eq!(fire.kind, FileKind::Dir);
    assert!(
        t.elapsed() < Duration::from_millis(1000),
        "blocked for {:?}",
        t.elapsed()
    );
    assert_eq!(slow.join().unwrap().kind, FileKind::Dir);
}

#[test]
fn fake_view_is_what_the_tests_think() {
    // The helper itself: guards the expectations above.
    let v = FakeView::parse(b"FAKE\nx/y=ab\nz*3=c\n").unwrap();
    use tafs::view::View;
    assert_eq!(v.entries().len(), 3);
    assert_eq!(v.render_vec("z").unwrap(), b"ccc");
    assert!(FakeView::parse(b"nope").is_err());
    let _ = SystemTime::now();
}

/// fstat of a pass-through file unlinked (or renamed over) while open answers from the open
/// file, as a local file system does; ESTALE only once nothing holds it open.
#[test]
fn unlinked_open_file_keeps_answering_stat() {
    let g = game();
    let (core, _rx) = core_with(g.path(), opts());
    let (a, o) = core
        .create(
            Caller::root(),
            NewNode::new(ROOT, OsStr::new("f.txt"), 0o644, 0),
            libc::O_RDWR,
        )
        .unwrap();
    assert_eq!(core.write(Caller::root(), o.fh, 0, b"hello").unwrap(), 5);
    core.unlink(Caller::root(), ROOT, OsStr::new("f.txt"))
        .unwrap();
    let st = core.getattr(Caller::root(), a.ino, None).unwrap();
    assert_eq!((st.size, st.kind), (5, FileKind::File));
    // replaced by a rename of another file over its name: still the open file's attributes
    let (_, o2) = core
        .create(
            Caller::root(),
            NewNode::new(ROOT, OsStr::new("g.txt"), 0o644, 0),
            libc::O_RDWR,
        )
        .unwrap();
    let (b, o3) = core
        .create(
            Caller::root(),
            NewNode::new(ROOT, OsStr::new("h.txt"), 0o644, 0),
            libc::O_RDWR,
        )
        .unwrap();
    assert_eq!(
        core.write(Caller::root(), o3.fh, 0, b"0123456789").unwrap(),
        10
    );
    core.rename(
        Caller::root(),
        ROOT,
        OsStr::new("g.txt"),
        ROOT,
        OsStr::new("h.txt"),
        0,
    )
    .unwrap();
    assert_eq!(core.getattr(Caller::root(), b.ino, None).unwrap().size, 10);
    for fh in [o.fh, o2.fh, o3.fh] {
        core.release(Caller::root(), fh).unwrap();
    }
    assert_eq!(
        core.getattr(Caller::root(), a.ino, None)
            .unwrap_err()
            .errno(),
        libc::ESTALE
    );
}

#[test]
fn forgotten_inodes_leave_the_table() {
    let g = game();
    for i in 0..40 {
        put(&g.path().join(format!("many/f{i}.txt")), "x");
    }
    let (core, _rx) = core_with(g.path(), opts());
    let start = core.inode_count();
    let many = look(&core, ROOT, "many");
    let mut looked = Vec::new();
    for i in 0..40 {
        looked.push(
            core.lookup(Caller::root(), many.ino, OsStr::new(&format!("f{i}.txt")))
                .unwrap(),
        );
    }
    // twice for one of them: the kernel counts both replies
    let again = look(&core, many.ino, "f0.txt");
    assert_eq!(again.ino, looked[0].ino);
    // an asset directory and its view: folder, files, through readdirplus as well
    let anims = look(&core, ROOT, "anims");
    let fire = look(&core, anims.ino, "fire.gaf");
    let fh = core.opendir(Caller::root(), fire.ino).unwrap();
    let plus = core.readdirplus(Caller::root(), fh, 0).unwrap();
    core.releasedir(Caller::root(), fh).unwrap();
    let seq = look(&core, fire.ino, "fire");
    let frame = look(&core, seq.ino, "0.png");
    let full = core.inode_count();
    assert!(full >= start + 41 + 5, "{start} → {full}");

    for a in &looked {
        core.forget(a.ino, 1);
    }
    // f0.txt is still known once; everything else in `many` is gone
    assert_eq!(
        core.name_of(looked[0].ino).map(|n| n.1),
        Some("f0.txt".into())
    );
    assert!(looked[1..].iter().all(|a| core.name_of(a.ino).is_none()));
    core.forget(many.ino, 1); // `many` stays while f0.txt is referenced
    assert!(core.name_of(many.ino).is_some());
    core.forget(looked[0].ino, 1);
    assert!(core.name_of(many.ino).is_none());
    assert!(
        core.inode_count() <= full - 41,
        "{full} → {}",
        core.inode_count()
    );

    // the view: an open file keeps its node until it is closed
    let o = core
        .open(Caller::root(), frame.ino, libc::O_RDONLY)
        .unwrap();
    core.forget(frame.ino, 1);
    assert!(core.name_of(frame.ino).is_some());
    assert_eq!(core.read(Caller::root(), o.fh, 0, 100).unwrap(), b"AAAA");
    core.release(Caller::root(), o.fh).unwrap();
    assert!(core.name_of(frame.ino).is_none());
    for (_, it) in &plus {
        if it.name != "." && it.name != ".." {
            core.forget(it.ino, 1);
        }
    }
    for a in [seq, fire, anims] {
        core.forget(a.ino, 1);
    }
    assert_eq!(core.inode_count(), start, "everything forgotten");
    // a forgotten inode answers ESTALE, never for another file; the name gets a new one
    assert_eq!(
        core.getattr(Caller::root(), frame.ino, None)
            .unwrap_err()
            .errno(),
        libc::ESTALE
    );
    let anims2 = look(&core, ROOT, "anims");
    assert_ne!(anims2.ino, anims.ino);
    let frame2 = walk(&core, anims2.ino, "fire.gaf/fire/0.png");
    assert_eq!(read_all(&core, frame2.ino), b"AAAA");
}

#[test]
fn an_entry_forgotten_after_opendir_is_still_listed() {
    let g = game();
    let (core, _rx) = core_with(g.path(), opts());
    let anims = look(&core, ROOT, "anims");
    let fire = look(&core, anims.ino, "fire.gaf");
    let fh = core.opendir(Caller::root(), anims.ino).unwrap();
    core.forget(fire.ino, 1); // the kernel evicts it while the folder is being read
    assert!(core.name_of(fire.ino).is_none());
    let listed: Vec<(String, u64)> = core
        .readdirplus(Caller::root(), fh, 0)
        .unwrap()
        .into_iter()
        .map(|(_, it)| (it.name.to_string_lossy().into_owned(), it.ino))
        .collect();
    core.releasedir(Caller::root(), fh).unwrap();
    let again = listed
        .iter()
        .find(|(n, _)| n == "fire.gaf")
        .expect("listed");
    assert_ne!(again.1, fire.ino);
    assert_eq!(
        core.getattr(Caller::root(), again.1, None).unwrap().kind,
        FileKind::Dir
    );
}

/// An open of a generated file whose decoded view has left memory decodes nothing (the
/// kernel may hold its pages: nothing may be read at all); the first read decodes, and reads
/// the version that was opened even when the binary was replaced in between.
#[test]
fn an_open_without_its_view_in_memory_decodes_nothing_and_reads_the_version_opened() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let g = tempfile::tempdir().unwrap();
    put(&g.path().join("a.gaf"), "FAKE\nf*100=a\n");
    put(&g.path().join("b.gaf"), "FAKE\nf*100=b\n");
    let decodes = Arc::new(AtomicUsize::new(0));
    let d = decodes.clone();
    let counting: tafs::fs::Opener = Arc::new(move |k, data: &tafs::view::SharedBytes, o| {
        d.fetch_add(1, Ordering::SeqCst);
        fake_opener()(k, data, o)
    });
    let (core, _rx) = core_with(
        g.path(),
        MountOptions {
            opener: counting,
            // no room for a 100-byte file among the bytes, one view at a time
            cache_size: 150,
            max_views: 1,
            ..MountOptions::default()
        },
    );
    let file = |asset: &str| {
        let a = core
            .lookup(Caller::root(), ROOT, OsStr::new(asset))
            .unwrap();
        look(&core, a.ino, "f")
    };
    let fa = file("a.gaf");
    assert_eq!(read_all(&core, fa.ino), vec![b'a'; 100]);
    let fb = file("b.gaf");
    assert_eq!(read_all(&core, fb.ino), vec![b'b'; 100]);
    // a's view is gone (one view at a time), its bytes were never kept
    let before = decodes.load(Ordering::SeqCst);
    let o = core.open(Caller::root(), fa.ino, libc::O_RDONLY).unwrap();
    assert_eq!(decodes.load(Ordering::SeqCst), before, "open decoded");
    core.release(Caller::root(), o.fh).unwrap();
    assert_eq!(decodes.load(Ordering::SeqCst), before, "release decoded");
    // opened, then the binary is replaced: the read gives the version opened
    let o = core.open(Caller::root(), fa.ino, libc::O_RDONLY).unwrap();
    replace(&g.path().join("a.gaf"), "FAKE\nf*100=z\n");
    assert_eq!(
        core.read(Caller::root(), o.fh, 0, 200).unwrap(),
        vec![b'a'; 100]
    );
    assert!(decodes.load(Ordering::SeqCst) > before, "the read decoded");
    core.release(Caller::root(), o.fh).unwrap();
    // and a new look-up shows the new version
    assert_eq!(read_all(&core, file("a.gaf").ino), vec![b'z'; 100]);
}
