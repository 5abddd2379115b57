//! Archives in the mount (real mounts of the built binary): every archive directory equals
//! `tafs hpi extract` of the archive with its GAF/TNT members replaced by `tafs gaf dump` /
//! `tafs tnt unpack` of the extracted member; a corrupt archive is the plain file; a changed
//! archive is seen; listing needs no decompression.

mod common;
mod mount_common;

use mount_common::{fuse_available, mount, put, sh};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use tafs::formats::hpi;
use tafs::fs::Caller;

use common::tafs;

fn ok(args: &[&str]) {
    common::tafs_ok(args);
}

/// What the mount must show for `archive`: extracted, each GAF/TNT member that dumps
/// replaced by its dump (one that does not stays the plain file, as in the mount).
fn expected_tree(archive: &Path, out: &Path) -> PathBuf {
    let target = out.join(archive.file_name().unwrap());
    ok(&[
        "hpi",
        "extract",
        archive.to_str().unwrap(),
        "-t",
        target.to_str().unwrap(),
    ]);
    let exts = [
        ".gaf", ".taf", ".tnt", ".pcx", ".pal", ".3do", ".cob", ".fnt",
    ];
    for m in common::files_with_ext(&target, &exts) {
        let lower = m.to_string_lossy().to_ascii_lowercase();
        let ext = lower.rsplit('.').next().unwrap_or("");
        let (cmd, verb) = match ext {
            "tnt" => ("tnt", "unpack"),
            "pcx" => ("pcx", "dump"),
            "pal" => ("pal", "dump"),
            "3do" => ("3do", "dump"),
            "cob" => ("cob", "dump"),
            "fnt" => ("fnt", "dump"),
            _ => ("gaf", "dump"),
        };
        // a model inside an archive is drawn with the textures of the folder around the
        // archive (none here), not with the archive's own textures/ members
        let src = if ext == "3do" {
            let alone = out.join("models-alone").join(m.file_name().unwrap());
            std::fs::create_dir_all(alone.parent().unwrap()).unwrap();
            std::fs::copy(&m, &alone).unwrap();
            alone
        } else {
            m.clone()
        };
        let dump = m.with_extension("tafs-dump");
        let o = tafs(&[
            cmd,
            verb,
            src.to_str().unwrap(),
            "-t",
            dump.to_str().unwrap(),
        ]);
        if o.status.success() {
            std::fs::remove_file(&m).unwrap();
            std::fs::rename(&dump, &m).unwrap();
        } else {
            let _ = std::fs::remove_dir_all(&dump);
        }
    }
    target
}

/// A 200 KiB member (over the 64 KiB chunk size) with varied bytes.
fn big_member() -> Vec<u8> {
    let mut x: u32 = 12345;
    (0..200 * 1024)
        .map(|i| {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            if i % 3 == 0 {
                (x >> 24) as u8
            } else {
                b'a' + (i % 7) as u8
            }
        })
        .collect()
}

const TDF: &[u8] = b"[SIDE0]\r\n{\r\nname=ARM;\r\n}\r\n";

fn self_made_archive(extra: Option<(&str, &[u8])>) -> Vec<u8> {
    let gaf = tafs::formats::gaf::write(&tafs::sample::animated_gaf()).unwrap();
    let mut root = vec![
        hpi::Node::dir(
            b"anims".to_vec(),
            vec![hpi::Node::file(b"Pulse.GAF".to_vec(), gaf)],
        ),
        hpi::Node::dir(
            b"gamedata".to_vec(),
            vec![hpi::Node::file(b"sidedata.tdf".to_vec(), TDF.to_vec())],
        ),
        hpi::Node::dir(b"empty".to_vec(), vec![]),
        hpi::Node::dir(
            b"big".to_vec(),
            vec![hpi::Node::file(b"data.bin".to_vec(), big_member())],
        ),
    ];
    if let Some((name, bytes)) = extra {
        root.push(hpi::Node::file(name.as_bytes().to_vec(), bytes.to_vec()));
    }
    hpi::write(&root, &hpi::WriteOptions::v1()).unwrap()
}

fn self_made_game() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    put(&d.path().join("mods/Test.UFO"), self_made_archive(None));
    put(&d.path().join("broken.hpi"), b"HAPI this is not an archive");
    d
}

#[test]
fn self_made_archive_is_its_extract_and_follows_changes() {
    if !fuse_available() {
        return;
    }
    let game = self_made_game();
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("mnt");
    let state = dir.path().join("state");
    let _g = mount(game.path(), &mnt, &["--state-dir", state.to_str().unwrap()]);
    let arch = mnt.join("mods/Test.UFO");
    let expected = expected_tree(&game.path().join("mods/Test.UFO"), &dir.path().join("ex"));
    // the expected tree has the GAF exploded and the empty folder
    assert!(expected.join("anims/Pulse.GAF/metadata.json").is_file());
    assert!(expected.join("empty").is_dir());
    sh(&format!(
        "diff -r '{}' '{}'",
        expected.display(),
        arch.display()
    ));
    assert_eq!(
        std::fs::read(arch.join("gamedata/sidedata.tdf")).unwrap(),
        TDF
    );
    assert_eq!(
        std::fs::read(arch.join("big/data.bin")).unwrap(),
        big_member()
    );
    let ls = sh(&format!("ls -lR '{}'", arch.display()));
    assert!(ls.contains(&(200 * 1024).to_string()), "{ls}");
    assert_eq!(
        sh(&format!("stat -c %F '{}'", arch.display())).trim(),
        "directory"
    );

    // nothing is staged for the archive until something is written (writes: see
    // tests/archive_writeback.rs)
    assert_eq!(
        std::fs::read_to_string(arch.join(".tafs-status")).unwrap(),
        "mods/Test.UFO: clean\n"
    );

    // a corrupt archive is the plain file
    let broken = mnt.join("broken.hpi");
    assert_eq!(
        sh(&format!("stat -c %F '{}'", broken.display())).trim(),
        "regular file"
    );
    assert_eq!(
        std::fs::read(&broken).unwrap(),
        b"HAPI this is not an archive"
    );

    // a changed archive is seen (after the attribute TTL of 1 s)
    mount_common::replace(
        &game.path().join("mods/Test.UFO"),
        self_made_archive(Some(("added.txt", b"new member"))),
    );
    std::thread::sleep(std::time::Duration::from_millis(1500));
    assert_eq!(
        std::fs::read(arch.join("added.txt")).unwrap(),
        b"new member"
    );
    assert_eq!(
        std::fs::read(arch.join("big/data.bin")).unwrap(),
        big_member()
    );

    // renaming the archive directory as a whole renames the archive file
    std::fs::rename(&arch, mnt.join("mods/Renamed.ufo")).unwrap();
    assert!(game.path().join("mods/Renamed.ufo").is_file());
    assert!(!game.path().join("mods/Test.UFO").exists());
    assert_eq!(
        std::fs::read(mnt.join("mods/Renamed.ufo/added.txt")).unwrap(),
        b"new member"
    );
}

#[test]
fn corpus_archives_equal_their_extracts() {
    if !fuse_available() {
        return;
    }
    let Some(corpus) = common::corpus() else {
        return;
    };
    let archives = corpus.join("archives");
    if !archives.is_dir() {
        println!("note: ../shared/corpus/archives is absent; corpus archive mount check skipped");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("mnt");
    let _g = mount(&archives, &mnt, &["--ro"]);
    let mut n = 0;
    for e in std::fs::read_dir(&archives).unwrap().flatten() {
        let p = e.path();
        let name = p.file_name().and_then(OsStr::to_str).unwrap_or("");
        if !tafs::view::archive::is_archive_name(name) {
            continue;
        }
        let expected = expected_tree(&p, &dir.path().join("ex"));
        sh(&format!(
            "diff -r '{}' '{}'",
            expected.display(),
            mnt.join(name).display()
        ));
        n += 1;
    }
    assert!(n >= 1, "no archive in {}", archives.display());
    println!("{n} corpus archives equal their extracts in the mount");
}

/// Listing and `stat` of archive members come from the archive's directory: nothing is
/// decompressed into the cache of generated bytes until a member is read.
#[test]
fn listing_an_archive_needs_no_decompression() {
    use tafs::fs::{core::ROOT, Core, FsOps, MountOptions};
    let game = self_made_game();
    let core = Core::new(game.path(), MountOptions::default(), None).unwrap();
    let mods = core
        .lookup(Caller::root(), ROOT, OsStr::new("mods"))
        .unwrap();
    let arch = core
        .lookup(Caller::root(), mods.ino, OsStr::new("Test.UFO"))
        .unwrap();
    assert_eq!(arch.kind, tafs::fs::FileKind::Dir);
    let big = core
        .lookup(Caller::root(), arch.ino, OsStr::new("big"))
        .unwrap();
    let data = core
        .lookup(Caller::root(), big.ino, OsStr::new("data.bin"))
        .unwrap();
    assert_eq!(data.size, 200 * 1024);
    let gd = core
        .lookup(Caller::root(), arch.ino, OsStr::new("gamedata"))
        .unwrap();
    let tdf = core
        .lookup(Caller::root(), gd.ino, OsStr::new("sidedata.tdf"))
        .unwrap();
    assert_eq!(tdf.size, TDF.len() as u64);
    assert_eq!(core.cached_bytes(), 0);
    let o = core.open(Caller::root(), data.ino, libc::O_RDONLY).unwrap();
    assert_eq!(
        core.read(Caller::root(), o.fh, 0, 16).unwrap(),
        big_member()[..16].to_vec()
    );
    assert!(core.cached_bytes() >= 200 * 1024);
    core.release(Caller::root(), o.fh).unwrap();
    // the corrupt archive is a plain file
    let b = core
        .lookup(Caller::root(), ROOT, OsStr::new("broken.hpi"))
        .unwrap();
    assert_eq!(b.kind, tafs::fs::FileKind::File);
}
