//! The merged game view (`tafs mount --merged`, real mounts of the built binary): loose
//! files and the archives at the top of a self-made game folder overlaid in the documented
//! priority order, folders merged ignoring case, GAF members exploded, sources in
//! `user.tafs.source`, `tafs which`, read-only, changes seen; and the corpus when present.
//! The expected trees below are worked out by hand from the rules in SEMANTICS.md.

mod common;
mod mount_common;

use mount_common::{fuse_available, put, sh, Mount};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tafs::formats::hpi;
use tafs::fs::Caller;

use common::{tafs, tafs_ok as ok};

/// A daemon mount of the merged view with the options `extra`.
fn mount(game: &Path, mnt: &Path, extra: &[&str]) -> Mount {
    let mut args = vec!["--merged", "--ttl", "0.2"];
    args.extend_from_slice(extra);
    mount_common::mount(game, mnt, &args)
}

fn file(name: &str, bytes: &[u8]) -> hpi::Node {
    hpi::Node::file(name.as_bytes().to_vec(), bytes.to_vec())
}

fn dir(name: &str, entries: Vec<hpi::Node>) -> hpi::Node {
    hpi::Node::dir(name.as_bytes().to_vec(), entries)
}

fn gaf_bytes() -> Vec<u8> {
    tafs::formats::gaf::write(&tafs::sample::animated_gaf()).unwrap()
}

/// Member `docs/bad.txt` of totala1.hpi has a damaged payload (its chunk checksum fails):
/// listing shows it (size from the directory), reading it fails.
const BAD_SIZE: usize = 3000;

fn totala1() -> Vec<u8> {
    let tree = vec![
        dir(
            "UNITS",
            vec![
                file("ARMCOM.FBI", b"hpi armcom"),
                file("corcom.fbi", b"hpi corcom"),
            ],
        ),
        dir("GameData", vec![file("sidedata.tdf", b"hpi sidedata")]),
        dir("anims", vec![file("Pulse.GAF", &gaf_bytes())]),
        file("Readme.TXT", b"hpi readme"),
        dir("docs", vec![file("bad.txt", &vec![b'x'; BAD_SIZE])]),
        dir("TEXTURES", vec![file("tex.GAF", &gaf_bytes())]),
    ];
    let mut data = hpi::write(&tree, &hpi::WriteOptions::v1()).unwrap();
    // damage the last payload byte of docs/bad.txt
    let a = hpi::parse(&data, &hpi::HpiLimits::default()).unwrap();
    let i = a.find(b"docs/bad.txt").unwrap();
    let hpi::EntryKind::File(f) = a.entries[i].kind else {
        panic!("not a file")
    };
    let last = f.offset as usize + f.stored_len as usize - 1;
    data[last] ^= 0x55;
    data
}

fn game() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    let g = d.path();
    put(&g.join("units/armcom.fbi"), b"loose armcom");
    put(&g.join("gamedata"), b"loose gamedata file");
    put(&g.join("readme.txt"), b"loose readme");
    // a loose GAF shadowing totala1's TEXTURES/tex.GAF (a different GAF)
    let tex = tafs::formats::gaf::write(&tafs::sample::texture_gaf()).unwrap();
    put(&g.join("textures/Tex.gaf"), tex);
    put(&g.join("broken.ccx"), b"HAPI not an archive");
    let nested = hpi::write(&[file("inner.txt", b"i")], &hpi::WriteOptions::v1()).unwrap();
    put(&g.join("sub/nested.ufo"), nested);
    put(&g.join("totala1.hpi"), totala1());
    let ufo = vec![
        dir(
            "Units",
            vec![
                file("CORCOM.FBI", b"ufo corcom"),
                file("armcom.fbi", b"ufo armcom"),
            ],
        ),
        dir("Anims", vec![file("extra.txt", b"ufo extra")]),
    ];
    put(
        &g.join("mod.ufo"),
        hpi::write(&ufo, &hpi::WriteOptions::v1()).unwrap(),
    );
    let gp3 = vec![
        dir("units", vec![file("corcom.fbi", b"gp3 corcom")]),
        dir("maps", vec![]),
    ];
    put(
        &g.join("rev31.GP3"),
        hpi::write(&gp3, &hpi::WriteOptions::v1()).unwrap(),
    );
    d
}

/// `find` of the mount: `d path` / `f path`, sorted.
fn tree(mnt: &Path) -> Vec<String> {
    let out = sh(&format!(
        "cd '{}' && find . -mindepth 1 -printf '%y %P\\n' | LC_ALL=C sort",
        mnt.display()
    ));
    out.lines().map(str::to_string).collect()
}

/// The entries of `tafs gaf dump` of the test GAF, as `find` prints them under `prefix`.
fn gaf_dump_tree(tmp: &Path, prefix: &str) -> (PathBuf, Vec<String>) {
    let src = tmp.join("Pulse.GAF");
    std::fs::write(&src, gaf_bytes()).unwrap();
    let dump = tmp.join("dump");
    ok(&[
        "gaf",
        "dump",
        src.to_str().unwrap(),
        "-t",
        dump.to_str().unwrap(),
    ]);
    let lines = tree(&dump)
        .into_iter()
        .map(|l| format!("{} {prefix}/{}", &l[..1], &l[2..]))
        .collect();
    (dump, lines)
}

fn xattr(p: &Path, name: &str) -> String {
    sh(&format!(
        "python3 -c 'import os,sys; sys.stdout.write(os.getxattr(sys.argv[1], sys.argv[2]).decode())' '{}' '{name}'",
        p.display()
    ))
}

/// The errno name `getxattr` of `name` fails with, or "ok".
fn xattr_errno(p: &Path, name: &str) -> String {
    sh(&format!(
        "python3 -c 'import os,sys,errno\ntry: os.getxattr(sys.argv[1], sys.argv[2]); print(\"ok\")\nexcept OSError as e: print(\"EOPNOTSUPP\" if e.errno == errno.EOPNOTSUPP else errno.errorcode[e.errno])' '{}' '{name}'",
        p.display()
    ))
    .trim()
    .to_string()
}

fn errno_of<T>(r: std::io::Result<T>) -> i32 {
    r.err().and_then(|e| e.raw_os_error()).unwrap_or(0)
}

#[test]
fn default_order_tree_sources_and_read_only() {
    if !fuse_available() {
        return;
    }
    let g = game();
    let tmp = tempfile::tempdir().unwrap();
    let mnt = tmp.path().join("mnt");
    let _m = mount(g.path(), &mnt, &[]);

    // Default order: loose, rev31.GP3, mod.ufo, totala1.hpi. By hand:
    // - `units`: loose folder (spelling `units`); armcom.fbi from loose; corcom.fbi from
    //   rev31.GP3 (spelled `corcom.fbi`), shadowing mod.ufo's CORCOM.FBI and totala1's.
    // - `gamedata`: the loose file hides totala1's `GameData/` folder.
    // - `readme.txt`: loose, shadows totala1's Readme.TXT.
    // - `Anims`: spelled as mod.ufo (the highest source having it) with extra.txt, and
    //   totala1's Pulse.GAF exploded.
    // - `broken.ccx` does not parse: a plain loose file; sub/nested.ufo is not at the top:
    //   a plain file. `maps` from rev31.GP3 (empty), `docs` from totala1.
    // - `textures/Tex.gaf`: the loose GAF (exploded as `tafs gaf dump` of it in place)
    //   shadows totala1's TEXTURES/tex.GAF.
    let (dump, gaf_lines) = gaf_dump_tree(tmp.path(), "Anims/Pulse.GAF");
    let tex_dump = tmp.path().join("tex-dump");
    ok(&[
        "gaf",
        "dump",
        g.path().join("textures/Tex.gaf").to_str().unwrap(),
        "-t",
        tex_dump.to_str().unwrap(),
    ]);
    let tex_lines: Vec<String> = tree(&tex_dump)
        .into_iter()
        .map(|l| format!("{} textures/Tex.gaf/{}", &l[..1], &l[2..]))
        .collect();
    assert!(tex_lines.len() > 3, "{tex_lines:?}");
    let mut want: Vec<String> = [
        "d Anims",
        "f Anims/extra.txt",
        "d Anims/Pulse.GAF",
        "f broken.ccx",
        "d docs",
        "f docs/bad.txt",
        "f gamedata",
        "d maps",
        "f readme.txt",
        "d sub",
        "f sub/nested.ufo",
        "d units",
        "f units/armcom.fbi",
        "f units/corcom.fbi",
        "d textures",
        "d textures/Tex.gaf",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain(gaf_lines)
    .chain(tex_lines)
    .collect();
    want.sort();
    assert_eq!(tree(&mnt), want);
    // the exploded member equals `tafs gaf dump` of it byte for byte
    sh(&format!(
        "diff -r '{}' '{}'",
        dump.display(),
        mnt.join("Anims/Pulse.GAF").display()
    ));
    sh(&format!(
        "diff -r '{}' '{}'",
        tex_dump.display(),
        mnt.join("textures/Tex.gaf").display()
    ));
    assert_eq!(
        xattr(&mnt.join("textures/Tex.gaf"), "user.tafs.sources"),
        "loose:textures/Tex.gaf\narchive:totala1.hpi:TEXTURES/tex.GAF\n"
    );

    // shadowed paths read the winner's bytes
    let read = |p: &str| std::fs::read(mnt.join(p)).unwrap();
    assert_eq!(read("units/armcom.fbi"), b"loose armcom");
    assert_eq!(read("units/corcom.fbi"), b"gp3 corcom");
    assert_eq!(read("readme.txt"), b"loose readme");
    assert_eq!(read("gamedata"), b"loose gamedata file");
    assert_eq!(read("Anims/extra.txt"), b"ufo extra");
    assert_eq!(read("broken.ccx"), b"HAPI not an archive");
    // names are the shown spelling only (another case is not a second name)
    assert!(!mnt.join("UNITS/armcom.fbi").exists());

    // listing shows the damaged member with its size (no decompression); reading fails
    let ls = sh(&format!("ls -l '{}'", mnt.join("docs").display()));
    assert!(ls.contains(&BAD_SIZE.to_string()), "{ls}");
    assert_eq!(errno_of(std::fs::read(mnt.join("docs/bad.txt"))), libc::EIO);

    // sources
    assert_eq!(
        xattr(&mnt.join("units/corcom.fbi"), "user.tafs.source"),
        "archive:rev31.GP3:units/corcom.fbi"
    );
    assert_eq!(
        xattr(&mnt.join("units/corcom.fbi"), "user.tafs.sources"),
        "archive:rev31.GP3:units/corcom.fbi\narchive:mod.ufo:Units/CORCOM.FBI\narchive:totala1.hpi:UNITS/corcom.fbi\n"
    );
    assert_eq!(
        xattr(&mnt.join("units"), "user.tafs.sources"),
        "loose:units\narchive:rev31.GP3:units\narchive:mod.ufo:Units\narchive:totala1.hpi:UNITS\n"
    );
    assert_eq!(
        xattr(&mnt.join("gamedata"), "user.tafs.sources"),
        "loose:gamedata\narchive:totala1.hpi:GameData\n"
    );
    assert_eq!(
        xattr(
            &mnt.join("Anims/Pulse.GAF/metadata.json"),
            "user.tafs.source"
        ),
        "archive:totala1.hpi:anims/Pulse.GAF"
    );
    assert_eq!(xattr(&mnt, "user.tafs.source"), "loose:");
    assert_eq!(
        xattr(&mnt, "user.tafs.sources"),
        "loose:\narchive:rev31.GP3:\narchive:mod.ufo:\narchive:totala1.hpi:\n"
    );
    assert_eq!(
        xattr(&mnt.join("broken.ccx"), "user.tafs.source"),
        "loose:broken.ccx"
    );
    let names = sh(&format!(
        "python3 -c 'import os,sys; print(sorted(os.listxattr(sys.argv[1])))' '{}'",
        mnt.join("readme.txt").display()
    ));
    assert_eq!(names.trim(), "['user.tafs.source', 'user.tafs.sources']");
    // no security labels at all (so `ls -l` asks for `security.selinux` once per file
    // system, not once per entry); other names, ACLs included, are absent
    let f = mnt.join("units/armcom.fbi");
    assert_eq!(xattr_errno(&f, "security.selinux"), "EOPNOTSUPP");
    assert_eq!(xattr_errno(&mnt, "security.capability"), "EOPNOTSUPP");
    assert_eq!(xattr_errno(&f, "user.other"), "ENODATA");
    assert_eq!(xattr_errno(&f, "system.posix_acl_access"), "ENODATA");
    assert_eq!(xattr_errno(&f, "user.tafs.source"), "ok");

    // tafs which: on the mount (xattr) and on the game folder (same order)
    let m_which = |p: &str| ok(&["which", "--all", mnt.join(p).to_str().unwrap()]);
    let g_which = |p: &str| ok(&["which", "--all", g.path().to_str().unwrap(), p]);
    let want = "loose:units/armcom.fbi\narchive:mod.ufo:Units/armcom.fbi\narchive:totala1.hpi:UNITS/ARMCOM.FBI\n";
    assert_eq!(m_which("units/armcom.fbi"), want);
    assert_eq!(g_which("UNITS/ARMCOM.fbi"), want);
    assert_eq!(
        ok(&["which", g.path().to_str().unwrap(), "units/armcom.fbi"]),
        "loose:units/armcom.fbi\n"
    );
    // inside an exploded GAF: the binary's source
    assert_eq!(
        g_which("anims/pulse.gaf/metadata.json"),
        "archive:totala1.hpi:anims/Pulse.GAF\n"
    );
    // hidden by a file: not in the view (exit 1 without --all)
    assert!(
        !tafs(&["which", g.path().to_str().unwrap(), "gamedata/sidedata.tdf"])
            .status
            .success()
    );
    assert!(
        !tafs(&["which", g.path().to_str().unwrap(), "nothing/here"])
            .status
            .success()
    );

    // read-only: every write is EROFS
    let erofs = libc::EROFS;
    assert_eq!(errno_of(std::fs::write(mnt.join("new.txt"), b"x")), erofs);
    assert_eq!(
        errno_of(
            std::fs::OpenOptions::new()
                .write(true)
                .open(mnt.join("units/armcom.fbi"))
        ),
        erofs
    );
    assert_eq!(errno_of(std::fs::create_dir(mnt.join("units/d"))), erofs);
    assert_eq!(
        errno_of(std::fs::remove_file(mnt.join("readme.txt"))),
        erofs
    );
    assert_eq!(
        errno_of(std::fs::rename(mnt.join("readme.txt"), mnt.join("r.txt"))),
        erofs
    );
    assert_eq!(
        errno_of(std::fs::write(
            mnt.join("Anims/Pulse.GAF/metadata.json"),
            b"{}"
        )),
        erofs
    );
    sh(&format!(
        "python3 -c 'import os,sys,errno\ntry:\n os.setxattr(sys.argv[1], \"user.x\", b\"1\")\nexcept OSError as e:\n assert e.errno == errno.EROFS, e\nelse:\n raise SystemExit(\"setxattr succeeded\")' '{}'",
        mnt.join("readme.txt").display()
    ));
    // nothing changed in the game folder
    assert_eq!(
        std::fs::read(g.path().join("readme.txt")).unwrap(),
        b"loose readme"
    );
    assert!(!g.path().join("new.txt").exists());
}

#[test]
fn priority_option_changes_the_winner() {
    if !fuse_available() {
        return;
    }
    let g = game();
    let tmp = tempfile::tempdir().unwrap();

    // `hpi` first: totala1.hpi > loose > rev31.GP3 > mod.ufo. By hand: `UNITS` spelled by
    // totala1, armcom.fbi = totala1's, corcom.fbi = totala1's;
    // `GameData/` (folder) now hides the loose file `gamedata`; Readme.TXT spelled by it.
    let mnt = tmp.path().join("hpi-first");
    let _m = mount(g.path(), &mnt, &["--priority", "hpi"]);
    let read = |p: &str| std::fs::read(mnt.join(p)).unwrap();
    assert_eq!(read("UNITS/ARMCOM.FBI"), b"hpi armcom");
    assert_eq!(read("UNITS/corcom.fbi"), b"hpi corcom");
    assert_eq!(read("GameData/sidedata.tdf"), b"hpi sidedata");
    assert_eq!(read("Readme.TXT"), b"hpi readme");
    let top: Vec<String> = tree(&mnt)
        .into_iter()
        .filter(|l| !l[2..].contains('/'))
        .collect();
    // sorted by type then name; `anims` spelled by totala1 now (mod.ufo's `Anims` merges in)
    let want = [
        "d GameData",
        "d TEXTURES",
        "d UNITS",
        "d anims",
        "d docs",
        "d maps",
        "d sub",
        "f Readme.TXT",
        "f broken.ccx",
    ];
    assert_eq!(top, want);
    assert_eq!(read("anims/extra.txt"), b"ufo extra");
    assert_eq!(
        xattr(&mnt.join("GameData"), "user.tafs.sources"),
        "archive:totala1.hpi:GameData\nloose:gamedata\n"
    );
    assert_eq!(
        ok(&[
            "which",
            "--all",
            "--priority",
            "hpi",
            g.path().to_str().unwrap(),
            "units/armcom.fbi"
        ]),
        "archive:totala1.hpi:UNITS/ARMCOM.FBI\nloose:units/armcom.fbi\narchive:mod.ufo:Units/armcom.fbi\n"
    );

    // one archive by name: mod.ufo > loose > rev31.GP3 > totala1.hpi
    let mnt2 = tmp.path().join("mod-first");
    let _m2 = mount(g.path(), &mnt2, &["--priority", "MOD.UFO"]);
    assert_eq!(
        std::fs::read(mnt2.join("Units/CORCOM.FBI")).unwrap(),
        b"ufo corcom"
    );
    assert_eq!(
        std::fs::read(mnt2.join("Units/armcom.fbi")).unwrap(),
        b"ufo armcom"
    );
    // a bad list is refused before mounting
    let o = tafs(&[
        "mount",
        "--merged",
        "--priority",
        "zip",
        g.path().to_str().unwrap(),
        tmp.path().to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("zip"));
}

#[test]
fn changes_are_seen() {
    if !fuse_available() {
        return;
    }
    let g = game();
    let tmp = tempfile::tempdir().unwrap();
    let mnt = tmp.path().join("mnt");
    let _m = mount(g.path(), &mnt, &[]);
    assert_eq!(
        std::fs::read(mnt.join("units/corcom.fbi")).unwrap(),
        b"gp3 corcom"
    );
    // a loose file changed in place, a new archive that wins by name (a.gp3 < rev31.GP3),
    // a loose file deleted
    mount_common::replace(&g.path().join("readme.txt"), b"loose readme v2");
    let a = hpi::write(
        &[dir("units", vec![file("corcom.fbi", b"a.gp3 corcom")])],
        &hpi::WriteOptions::v1(),
    )
    .unwrap();
    put(&g.path().join("a.gp3"), a);
    std::fs::remove_file(g.path().join("units/armcom.fbi")).unwrap();
    std::thread::sleep(Duration::from_millis(900));
    let read = |p: &str| std::fs::read(mnt.join(p)).unwrap();
    assert_eq!(read("readme.txt"), b"loose readme v2");
    assert_eq!(read("units/corcom.fbi"), b"a.gp3 corcom");
    // the loose armcom is gone: mod.ufo's shows through
    assert_eq!(read("units/armcom.fbi"), b"ufo armcom");
    assert_eq!(
        xattr(&mnt.join("units/armcom.fbi"), "user.tafs.source"),
        "archive:mod.ufo:Units/armcom.fbi"
    );
}

/// Polls `f` for up to 5 s: whether it became true.
fn within_5s(mut f: impl FnMut() -> bool) -> bool {
    let t = std::time::Instant::now();
    while t.elapsed() < Duration::from_secs(5) {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// The watch (the default): the kernel caches names, attributes, listings and pages for
/// long (`--ttl 3600` is what polling would use), and every direct change in the game
/// folder still shows, each after the kernel held the old state: a loose file rewritten in
/// place with the same size, a new archive winning a name, a new loose file in a listed
/// folder and at the top, a deleted one letting an archive's file through. The control,
/// `--no-watch` with the same TTL, keeps showing the old content of the files the kernel
/// holds, so it is the watch that shows them.
#[test]
fn changes_are_seen_while_the_kernel_caches() {
    if !fuse_available() {
        return;
    }
    for watch in [true, false] {
        let g = game();
        let tmp = tempfile::tempdir().unwrap();
        let mnt = tmp.path().join("mnt");
        let mut extra = vec!["--ttl", "3600"];
        if !watch {
            extra.push("--no-watch");
        }
        let _m = mount_common::mount(g.path(), &mnt, &[&["--merged"][..], &extra].concat());
        let read = |p: &str| std::fs::read(mnt.join(p)).unwrap_or_default();
        let names = |p: &str| sh(&format!("ls {}", mnt.join(p).display()));
        // the old state, read and listed (so the kernel holds it)
        assert_eq!(read("readme.txt"), b"loose readme");
        assert_eq!(read("units/corcom.fbi"), b"gp3 corcom");
        assert_eq!(names("units"), "armcom.fbi\ncorcom.fbi\n");
        assert_eq!(read("units/armcom.fbi"), b"loose armcom");
        assert!(!names("").contains("newdir"));
        mount_common::replace(&g.path().join("readme.txt"), b"LOOSE README");
        let a = hpi::write(
            &[dir("units", vec![file("corcom.fbi", b"a.gp3 corcom")])],
            &hpi::WriteOptions::v1(),
        )
        .unwrap();
        put(&g.path().join("a.gp3"), a);
        put(&g.path().join("units/armnew.fbi"), b"new");
        put(&g.path().join("newdir/x.txt"), b"x");
        std::fs::remove_file(g.path().join("units/armcom.fbi")).unwrap();
        let seen = [
            within_5s(|| read("readme.txt") == b"LOOSE README"),
            within_5s(|| read("units/corcom.fbi") == b"a.gp3 corcom"),
            within_5s(|| names("units") == "armcom.fbi\narmnew.fbi\ncorcom.fbi\n"),
            within_5s(|| names("").contains("newdir")),
            // the loose armcom deleted: mod.ufo's shows through
            within_5s(|| read("units/armcom.fbi") == b"ufo armcom"),
        ];
        if watch {
            assert_eq!(seen, [true; 5], "changes seen with the watch");
        } else {
            // (polling: listings are not kept, but the names and pages the kernel holds
            // are, for the TTL)
            assert_eq!(
                seen[..2],
                [false; 2],
                "without the watch the kernel's caches hide changes of what it holds"
            );
        }
    }
}

/// Listing and `stat` through the core (no FUSE) decompress nothing; reading does.
#[test]
fn listing_the_root_decompresses_nothing() {
    use tafs::fs::{FsOps, MergedCore, MountOptions};
    let g = game();
    let core = MergedCore::new(g.path(), MountOptions::default(), Default::default()).unwrap();
    let fh = core.opendir(Caller::root(), 1).unwrap();
    let items = core.readdirplus(Caller::root(), fh, 0).unwrap();
    let names: Vec<String> = items
        .iter()
        .map(|(_, it)| it.name.to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        [
            ".",
            "..",
            "Anims",
            "broken.ccx",
            "docs",
            "gamedata",
            "maps",
            "readme.txt",
            "sub",
            "textures",
            "units"
        ]
    );
    let docs = core.lookup(Caller::root(), 1, OsStr::new("docs")).unwrap();
    let bad = core
        .lookup(Caller::root(), docs.ino, OsStr::new("bad.txt"))
        .unwrap();
    assert_eq!(bad.size, BAD_SIZE as u64);
    let units = core.lookup(Caller::root(), 1, OsStr::new("units")).unwrap();
    let cor = core
        .lookup(Caller::root(), units.ino, OsStr::new("corcom.fbi"))
        .unwrap();
    assert_eq!(cor.size, 10);
    assert_eq!(core.cached_bytes(), 0);
    let o = core.open(Caller::root(), cor.ino, libc::O_RDONLY).unwrap();
    assert_eq!(
        core.read(Caller::root(), o.fh, 0, 100).unwrap(),
        b"gp3 corcom"
    );
    assert_eq!(core.cached_bytes(), 10);
    assert_eq!(
        core.open(Caller::root(), cor.ino, libc::O_WRONLY)
            .unwrap_err()
            .errno(),
        libc::EROFS
    );
    assert_eq!(
        core.getxattr(Caller::root(), cor.ino, OsStr::new("user.other"))
            .unwrap_err()
            .errno(),
        libc::ENODATA
    );
}

#[test]
fn corpus_game_with_its_archives() {
    if !fuse_available() {
        return;
    }
    let Some(corpus) = common::corpus() else {
        return;
    };
    let (game_src, archives) = (corpus.join("game"), corpus.join("archives"));
    if !game_src.is_dir() || !archives.is_dir() {
        println!("note: ../shared/corpus/game or archives is absent; corpus merged check skipped");
        return;
    }
    // a game folder: the corpus game files copied, the archives linked at the top
    let tmp = tempfile::tempdir().unwrap();
    let g = tmp.path().join("game");
    sh(&format!("cp -r '{}' '{}'", game_src.display(), g.display()));
    let mut n = 0;
    for e in std::fs::read_dir(&archives).unwrap().flatten() {
        std::os::unix::fs::symlink(e.path(), g.join(e.file_name())).unwrap();
        n += 1;
    }
    let mnt = tmp.path().join("mnt");
    let _m = mount(&g, &mnt, &[]);
    let t = std::time::Instant::now();
    let ls = sh(&format!("ls -lR '{}'", mnt.display()));
    println!(
        "ls -lR of the merged corpus ({n} archives + loose game files): {} lines in {:?}",
        ls.lines().count(),
        t.elapsed()
    );
    // loose ArmImp.gaf wins over ArmImp.ufo's identical member; both are listed
    assert_eq!(
        ok(&[
            "which",
            "--all",
            mnt.join("textures/ArmImp.gaf").to_str().unwrap()
        ]),
        "loose:textures/ArmImp.gaf\narchive:ArmImp.ufo:textures/ArmImp.gaf\n"
    );
    // members only in archives, read through the merged view
    let copyright = std::fs::read(mnt.join("Copyright.txt")).unwrap();
    assert_eq!(copyright.len(), 36);
    assert_eq!(
        std::fs::metadata(mnt.join("units/tarfire.fbi"))
            .unwrap()
            .len(),
        1456
    );
    assert_eq!(
        xattr(&mnt.join("units/tarfire.fbi"), "user.tafs.source"),
        "archive:Aimtolerance Fix.hpi:units/tarfire.fbi"
    );
    // the loose map is exploded as `tafs tnt unpack` writes it
    let unpack = tmp.path().join("example.tnt");
    ok(&[
        "tnt",
        "unpack",
        g.join("maps/example.tnt").to_str().unwrap(),
        "-t",
        unpack.to_str().unwrap(),
    ]);
    sh(&format!(
        "diff -r '{}' '{}'",
        unpack.display(),
        mnt.join("maps/example.tnt").display()
    ));
    // a GAF member only in an archive (TADEMO's zzz_gadget.gaf is also loose: loose wins)
    assert_eq!(
        xattr(&mnt.join("anims/zzz_gadget.gaf"), "user.tafs.sources"),
        "loose:anims/zzz_gadget.gaf\narchive:TADEMO.ufo:anims/zzz_gadget.gaf\n"
    );
    assert!(mnt.join("anims/zzz_gadget.gaf/metadata.json").is_file());
}

/// Inodes the kernel forgot leave the merged view's table; the names get new ones.
#[test]
fn forgotten_inodes_leave_the_merged_table() {
    use tafs::fs::{FsOps, MergedCore, MountOptions};
    let g = game();
    let core = MergedCore::new(g.path(), MountOptions::default(), Default::default()).unwrap();
    let start = core.inodes();
    let units = core.lookup(Caller::root(), 1, OsStr::new("units")).unwrap();
    let cor = core
        .lookup(Caller::root(), units.ino, OsStr::new("corcom.fbi"))
        .unwrap();
    let fh = core.opendir(Caller::root(), units.ino).unwrap();
    let plus = core.readdirplus(Caller::root(), fh, 0).unwrap();
    core.releasedir(Caller::root(), fh).unwrap();
    assert!(plus.iter().any(|(_, it)| it.ino == cor.ino));
    let grown = core.inodes();
    assert!(grown > start + 2, "{start} → {grown}");
    core.forget(cor.ino, 1); // readdirplus gave it once more
    assert_eq!(core.inodes(), grown);
    for (_, it) in &plus {
        if it.name != "." && it.name != ".." {
            core.forget(it.ino, 1);
        }
    }
    core.forget(units.ino, 1);
    assert_eq!(core.inodes(), start);
    assert_eq!(
        core.getattr(Caller::root(), cor.ino, None)
            .unwrap_err()
            .errno(),
        libc::ESTALE
    );
    let units2 = core.lookup(Caller::root(), 1, OsStr::new("units")).unwrap();
    let cor2 = core
        .lookup(Caller::root(), units2.ino, OsStr::new("corcom.fbi"))
        .unwrap();
    assert_ne!(cor2.ino, cor.ino);
    let o = core.open(Caller::root(), cor2.ino, libc::O_RDONLY).unwrap();
    assert_eq!(
        core.read(Caller::root(), o.fh, 0, 100).unwrap(),
        b"gp3 corcom"
    );
    core.release(Caller::root(), o.fh).unwrap();
}
