//! Archives read by range through the file system core and the merged view (no FUSE): a
//! member above `MountOptions::archive_limits.max_member_size` is listed with its size but
//! fails to open or read with `EIO`, while the other members read normally.

mod mount_common;

use mount_common::put;
use std::ffi::OsStr;
use tafs::formats::hpi;
use tafs::fs::core::ROOT;
use tafs::fs::Caller;
use tafs::fs::{Core, FsOps, MergedCore, MountOptions};
use tafs::view::merged::Priority;

const SMALL: &[u8] = b"[SIDE0]\n{\n\tname=ARM;\n}\n";

fn big() -> Vec<u8> {
    (0..200_000u32).map(|i| (i * 31 % 253) as u8).collect()
}

fn archive() -> Vec<u8> {
    let tree = vec![hpi::Node::dir(
        "gamedata",
        vec![
            hpi::Node::file("big.dat", big()),
            hpi::Node::file("side.tdf", SMALL.to_vec()),
        ],
    )];
    hpi::write(&tree, &hpi::WriteOptions::v1()).unwrap()
}

fn limited() -> MountOptions {
    MountOptions {
        archive_limits: hpi::HpiLimits {
            max_member_size: 100_000,
            ..hpi::HpiLimits::default()
        },
        ..MountOptions::default()
    }
}

/// Opens and reads the whole of `ino` through `fs`.
fn read_all(fs: &dyn FsOps, ino: u64) -> Result<Vec<u8>, i32> {
    let o = fs
        .open(Caller::root(), ino, libc::O_RDONLY)
        .map_err(|e| e.errno())?;
    let r = fs
        .read(Caller::root(), o.fh, 0, 1 << 20)
        .map_err(|e| e.errno());
    let _ = fs.release(Caller::root(), o.fh);
    r
}

fn check(fs: &dyn FsOps, root: u64) {
    let gd = fs
        .lookup(Caller::root(), root, OsStr::new("gamedata"))
        .unwrap();
    let b = fs
        .lookup(Caller::root(), gd.ino, OsStr::new("big.dat"))
        .unwrap();
    assert_eq!(b.size, 200_000, "listed with its size from the directory");
    assert_eq!(read_all(fs, b.ino), Err(libc::EIO));
    let s = fs
        .lookup(Caller::root(), gd.ino, OsStr::new("side.tdf"))
        .unwrap();
    assert_eq!(read_all(fs, s.ino).unwrap(), SMALL);
}

#[test]
fn core_refuses_members_over_the_limit() {
    let game = tempfile::tempdir().unwrap();
    put(&game.path().join("data.hpi"), archive());
    let core = Core::new(game.path(), limited(), None).unwrap();
    let arch = core
        .lookup(Caller::root(), ROOT, OsStr::new("data.hpi"))
        .unwrap();
    check(&core, arch.ino);
    // with the default limit the same member reads whole
    let core = Core::new(game.path(), MountOptions::default(), None).unwrap();
    let arch = core
        .lookup(Caller::root(), ROOT, OsStr::new("data.hpi"))
        .unwrap();
    let gd = core
        .lookup(Caller::root(), arch.ino, OsStr::new("gamedata"))
        .unwrap();
    let b = core
        .lookup(Caller::root(), gd.ino, OsStr::new("big.dat"))
        .unwrap();
    assert_eq!(read_all(&core, b.ino).unwrap(), big());
}

#[test]
fn merged_view_refuses_members_over_the_limit() {
    let game = tempfile::tempdir().unwrap();
    put(&game.path().join("data.hpi"), archive());
    let merged = MergedCore::new(game.path(), limited(), Priority::default()).unwrap();
    check(&merged, 1);
}

#[test]
fn mount_flag_sets_the_member_limit() {
    if !mount_common::fuse_available() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let game = t.path().join("game");
    put(&game.join("mod.ufo"), archive());
    let mnt = t.path().join("mnt");
    let m = mount_common::mount(&game, &mnt, &["--max-member-size", "100K", "--ro"]);
    let e = std::fs::read(m.mnt.join("mod.ufo/gamedata/big.dat")).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EIO), "{e}");
    assert_eq!(
        std::fs::read(m.mnt.join("mod.ufo/gamedata/side.tdf")).unwrap(),
        SMALL
    );
    drop(m);
    // the default (64 MiB) reads it
    let m = mount_common::mount(&game, &mnt, &["--ro"]);
    assert_eq!(
        std::fs::read(m.mnt.join("mod.ufo/gamedata/big.dat")).unwrap(),
        big()
    );
}
