//! The attributes of an asset folder (`nlink` counts its sub-folders) stay exact while the
//! folder is filled, emptied and rearranged, now that its child counts are kept between
//! requests instead of listing the folder for each (`src/fs/core/dircount.rs`). Driven
//! through the core (no FUSE); every expected figure is counted from a fresh listing.

mod writeback_common;

use std::ffi::OsStr;
use tafs::fs::core::FileKind;
use tafs::fs::{Caller, NewNode};
use tafs::fs::{Core, FsOps, MountOptions};
use writeback_common::{ino, sample_bytes};

/// Entries and sub-folders of `dir` from a listing (`.` and `..` left out).
fn listed(core: &Core, dir: u64) -> (usize, u32) {
    let fh = core.opendir(Caller::root(), dir).unwrap();
    let items = core.readdir(Caller::root(), fh, 0).unwrap();
    core.releasedir(Caller::root(), fh).unwrap();
    let kids: Vec<_> = items
        .iter()
        .filter(|(_, d)| d.name != "." && d.name != "..")
        .collect();
    let dirs = kids.iter().filter(|(_, d)| d.kind == FileKind::Dir).count();
    (kids.len(), dirs as u32)
}

fn nlink(core: &Core, dir: u64) -> u32 {
    core.getattr(Caller::root(), dir, None).unwrap().nlink
}

#[test]
fn folder_links_stay_exact_through_creates_mkdirs_removals_and_renames() {
    let game = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(game.path().join("anims")).unwrap();
    std::fs::write(game.path().join("anims/fx.gaf"), sample_bytes()).unwrap();
    let state = tempfile::tempdir().unwrap();
    let opts = MountOptions {
        state_dir: Some(state.path().to_path_buf()),
        ..MountOptions::default()
    };
    let core = Core::new(game.path(), opts, None).unwrap();
    let asset = ino(&core, "anims/fx.gaf");
    let (n0, d0) = listed(&core, asset);
    assert!(n0 > 0, "the sample GAF's folder lists its files");
    assert_eq!(nlink(&core, asset), 2 + d0);

    // getattr between every step, as the kernel does after each create
    let mut dirs = d0;
    for k in 0..40u32 {
        if k % 8 == 3 {
            let name = format!("d{k}");
            core.mkdir(
                Caller::root(),
                NewNode::new(asset, OsStr::new(&name), 0o755, 0o022),
            )
            .unwrap();
            dirs += 1;
        } else {
            let name = format!("note{k}.txt");
            let (_, o) = core
                .create(
                    Caller::root(),
                    NewNode::new(asset, OsStr::new(&name), 0o644, 0o022),
                    libc::O_WRONLY,
                )
                .unwrap();
            core.release(Caller::root(), o.fh).unwrap();
        }
        assert_eq!(nlink(&core, asset), 2 + dirs, "after step {k}");
    }
    let (n, d) = listed(&core, asset);
    assert_eq!((n, d), (n0 + 40, dirs));
    assert_eq!(nlink(&core, asset), 2 + d);

    // creating an existing name again changes nothing
    let (_, o) = core
        .create(
            Caller::root(),
            NewNode::new(asset, OsStr::new("note0.txt"), 0o644, 0o022),
            libc::O_WRONLY,
        )
        .unwrap();
    core.release(Caller::root(), o.fh).unwrap();
    assert_eq!(nlink(&core, asset), 2 + dirs);

    // removals and renames are seen at once
    core.rmdir(Caller::root(), asset, OsStr::new("d3")).unwrap();
    dirs -= 1;
    assert_eq!(nlink(&core, asset), 2 + dirs);
    let sub = ino(&core, "anims/fx.gaf/d11");
    core.rename(
        Caller::root(),
        asset,
        OsStr::new("d19"),
        sub,
        OsStr::new("d19"),
        0,
    )
    .unwrap();
    dirs -= 1;
    assert_eq!(nlink(&core, asset), 2 + dirs);
    assert_eq!(nlink(&core, sub), 3);
    core.unlink(Caller::root(), asset, OsStr::new("note1.txt"))
        .unwrap();
    let (n2, d2) = listed(&core, asset);
    assert_eq!((n2, d2), (n0 + 40 - 3, dirs));
    assert_eq!(nlink(&core, asset), 2 + d2);
}
