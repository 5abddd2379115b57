//! Archives driven through the file system core (no FUSE): GAF/TNT members are decoded only
//! when something inside them, or the folder listing them, is asked for; write-back into
//! archives repacks them keeping unchanged members' stored bytes.

mod mount_common;

use mount_common::put;
use std::ffi::OsStr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tafs::formats::hpi;
use tafs::fs::core::ROOT;
use tafs::fs::{Core, FileKind, MountOptions};

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
            tafs::view::open(kind, bytes, o)
        }),
        ..MountOptions::default()
    };
    (opts, n)
}

fn names(core: &Core, ino: u64) -> Vec<(String, FileKind)> {
    let fh = core.opendir(ino).unwrap();
    let v = core
        .readdir(fh, 0)
        .unwrap()
        .into_iter()
        .map(|(_, it)| (it.name.to_string_lossy().into_owned(), it.kind))
        .filter(|(n, _)| n != "." && n != "..")
        .collect();
    core.releasedir(fh).unwrap();
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
    let arch = core.lookup(ROOT, OsStr::new("data.hpi")).unwrap();
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
    let anims = core.lookup(arch.ino, OsStr::new("anims")).unwrap();
    let units = core.lookup(arch.ino, OsStr::new("units")).unwrap();
    core.getattr(anims.ino, None).unwrap();
    // a plain member is read without decoding anything
    let gd = core.lookup(arch.ino, OsStr::new("gamedata")).unwrap();
    let tdf = core.lookup(gd.ino, OsStr::new("side.tdf")).unwrap();
    assert_eq!(tdf.size, TDF.len() as u64);
    let o = core.open(tdf.ino, libc::O_RDONLY).unwrap();
    assert_eq!(core.read(o.fh, 0, 4096).unwrap(), TDF);
    core.release(o.fh).unwrap();
    assert_eq!(n(), 0, "nothing inside a GAF member was asked for");

    // listing anims/ decodes its five GAFs (to know they are folders), not units/'s
    let listed = names(&core, anims.ino);
    assert_eq!(listed.len(), 5);
    assert!(listed.iter().all(|(_, k)| *k == FileKind::Dir), "{listed:?}");
    assert_eq!(n(), 5);
    // listing it again decodes nothing more
    names(&core, anims.ino);
    assert_eq!(n(), 5);

    // looking one GAF of units/ up decodes that one only
    let u1 = core.lookup(units.ino, OsStr::new("u1.gaf")).unwrap();
    assert_eq!(u1.kind, FileKind::Dir);
    assert_eq!(n(), 6);
    let inside = names(&core, u1.ino);
    assert!(inside.iter().any(|(x, _)| x == "metadata.json"), "{inside:?}");
    assert_eq!(n(), 6);
}
