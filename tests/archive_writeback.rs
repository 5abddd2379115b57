//! Write-back into archives through a real mount with real tools (cp, sed -i, rsync, Python
//! tempfile + os.replace, echo, rm, mkdir), on self-made archives packed with `tafs hpi pack`
//! in every format (a GAF, the demo map, a .tdf, a sub-folder) and on corpus archives when
//! present. After each save, `tafs hpi extract` (+ `tafs gaf dump` / `tafs tnt unpack`) of
//! the archive must show exactly the edit, and every other member must keep its stored
//! bytes (compared through the HPI reader, not only decompressed).

mod common;
mod mount_common;
mod writeback_common;

use mount_common::{fuse_available, sh, Mount};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use tafs::formats::hpi;
use writeback_common::{edit_png, edited_later, sample_bytes};

use common::{differing, tafs, tafs_ok as ok};

/// A write-back mount with TTL 0, state directory `state` and the options `extra`; every
/// save is an operation of its own (each commit keeps a version, so `tafs restore` puts back
/// the archive before the last commit) and commits at once unless `extra` gives an
/// `--archive-commit-delay`.
fn mount(game: &Path, mnt: &Path, state: &Path, extra: &[&str]) -> Mount {
    let mut args = vec!["--operation-gap", "0"];
    if !extra.contains(&"--archive-commit-delay") {
        args.extend(["--archive-commit-delay", "0"]);
    }
    args.extend_from_slice(extra);
    mount_common::mount_state(game, mnt, state, &args)
}

const TDF: &[u8] = b"[SIDE0]\r\n{\r\nname=ARM;\r\n}\r\n";

/// The tree of the self-made archives: two GAFs, the demo map, a .tdf, a sub-folder.
fn source_tree(dir: &Path) {
    let put = |rel: &str, b: &[u8]| mount_common::put(&dir.join(rel), b);
    put("anims/a.gaf", &sample_bytes());
    put("anims/b.gaf", &sample_bytes());
    let map = tafs::formats::tnt::write(&tafs::sample::demo_map()).unwrap();
    put("maps/demo.tnt", &map);
    put("gamedata/side.tdf", TDF);
    put("units/sub/armcom.fbi", b"[UNITINFO]{name=Commander;}");
}

/// A game folder `WORK/game` holding `x.hpi` (the self-made tree, `tafs hpi pack` defaults),
/// mounted on `WORK/mnt` with write-back (state in `WORK/state`). Returns the work folder,
/// the archive's path and the mount (drop the mount first).
fn packed_and_mounted() -> (Mount, PathBuf, tempfile::TempDir) {
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    let game = w.join("game");
    std::fs::create_dir_all(&game).unwrap();
    let arch = game.join("x.hpi");
    pack(w, &arch, &[]);
    // A private archive (0600), unlike the dumps copied into it (0644): `rsync -a` of a dump
    // into a member folder then sets the mode of every file, so every file of the dump is
    // staged, also one whose size and time (to the second) equal the generated file's. With
    // equal modes, whether an unchanged `animated.png` is staged would depend on whether the
    // dump and the pack fell in the same second.
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&arch, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let m = mount(&game, &w.join("mnt"), &w.join("state"), &[]);
    (m, arch, work)
}

/// Packs the self-made tree into `target` with `tafs hpi pack` and extra options.
fn pack(work: &Path, target: &Path, opts: &[&str]) {
    let src = work.join("src");
    if !src.exists() {
        source_tree(&src);
    }
    let mut args = vec![
        "hpi",
        "pack",
        src.to_str().unwrap(),
        "-t",
        target.to_str().unwrap(),
    ];
    args.extend_from_slice(opts);
    ok(&args);
}

/// Every file member: path → (decompressed bytes, stored bytes).
fn members(archive: &Path) -> BTreeMap<String, (Vec<u8>, hpi::StoredMember)> {
    let bytes = std::fs::read(archive).unwrap();
    let lim = hpi::HpiLimits::default();
    let a = hpi::parse(&bytes, &lim).unwrap();
    a.files()
        .map(|(i, f)| {
            (
                a.path_str(i),
                (
                    a.read(&bytes, f, &lim).unwrap(),
                    a.stored_member(&bytes, f).unwrap(),
                ),
            )
        })
        .collect()
}

/// Members other than `changed` keep their stored bytes; `changed` differs (or is new or
/// gone, as `before`/`after` say).
fn only_changed(
    before: &BTreeMap<String, (Vec<u8>, hpi::StoredMember)>,
    after: &BTreeMap<String, (Vec<u8>, hpi::StoredMember)>,
    changed: &str,
) {
    for (k, v) in before {
        if k != changed {
            let a = after.get(k).unwrap_or_else(|| panic!("{k} gone"));
            assert_eq!(a.1, v.1, "{k}: stored bytes changed");
        }
    }
    for k in after.keys() {
        assert!(before.contains_key(k) || k == changed, "{k} appeared");
    }
    assert_ne!(
        before.get(changed),
        after.get(changed),
        "{changed} unchanged"
    );
}

/// Extracts `archive` and dumps/unpacks member `member` (a GAF or TNT) into `to`.
fn dump_member(archive: &Path, member: &str, to: &Path) {
    let ex = to.with_extension("extract");
    let _ = std::fs::remove_dir_all(&ex);
    ok(&[
        "hpi",
        "extract",
        archive.to_str().unwrap(),
        "-t",
        ex.to_str().unwrap(),
    ]);
    let m = ex.join(member);
    let (tool, verb) = if member.ends_with(".tnt") {
        ("tnt", "unpack")
    } else {
        ("gaf", "dump")
    };
    ok(&[tool, verb, m.to_str().unwrap(), "-t", to.to_str().unwrap()]);
}

/// One edit of member `member` of `archive`: `f` edits through the mount; afterwards the
/// member's dump differs from before in `changed` (and at most in `also`), and every other
/// member keeps its stored bytes.
fn check_member_edit(
    work: &Path,
    archive: &Path,
    member: &str,
    changed: &str,
    also: &[&str],
    f: impl FnOnce(),
) {
    let tag = format!("{}-{}", member.replace('/', "_"), changed.replace('/', "_"));
    let before_dump = work.join(format!("before-{tag}"));
    dump_member(archive, member, &before_dump);
    let before = members(archive);
    f();
    let after = members(archive);
    only_changed(&before, &after, member);
    let after_dump = work.join(format!("after-{tag}"));
    dump_member(archive, member, &after_dump);
    let diff = differing(&before_dump, &after_dump);
    assert!(diff.iter().any(|d| d == changed), "{changed}: {diff:?}");
    assert!(
        diff.iter()
            .all(|d| d == changed || also.contains(&d.as_str())),
        "{member}: more changed than {changed}: {diff:?}"
    );
}

#[test]
fn edits_with_real_tools_repack_the_archive() {
    if !fuse_available() {
        return;
    }
    let (m, arch, work) = packed_and_mounted();
    let w = work.path();
    let (game, state) = (w.join("game"), w.join("state"));
    let mx = m.mnt.join("x.hpi");

    // cp of a changed PNG onto a frame of a GAF member
    let png = std::fs::read(mx.join("anims/a.gaf/pulse/2.png")).unwrap();
    let (edited, _) = edit_png(&png, 0xB3);
    let src = w.join("edit.png");
    std::fs::write(&src, &edited).unwrap();
    check_member_edit(
        w,
        &arch,
        "anims/a.gaf",
        "pulse/2.png",
        &["pulse/animated.png"],
        || {
            sh(&format!(
                "cp {} {}/anims/a.gaf/pulse/2.png",
                src.display(),
                mx.display()
            ));
        },
    );
    assert_eq!(
        std::fs::read(mx.join("anims/a.gaf/pulse/2.png")).unwrap(),
        edited
    );
    let hist = ok(&[
        "history",
        "--state-dir",
        state.to_str().unwrap(),
        arch.to_str().unwrap(),
    ]);
    assert!(
        !hist.trim().is_empty(),
        "history lists the replaced archive"
    );

    // sed -i on a CSV of another member: origin_x of pulse's first frame becomes 7
    check_member_edit(
        w,
        &arch,
        "anims/b.gaf",
        "pulse/frames.csv",
        &["pulse/animated.png"],
        || {
            sh(&format!(
                "sed -i '2s/^\\([^,]*,[^,]*,[^,]*,\\)[^,]*/\\17/' {}/anims/b.gaf/pulse/frames.csv",
                mx.display()
            ));
        },
    );

    // rsync -a of an edited dump into the member's folder
    let edited_dump = w.join("rsync-src");
    dump_member(&arch, "anims/b.gaf", &edited_dump);
    let (p0, _) = edit_png(
        &std::fs::read(edited_dump.join("panel/0.png")).unwrap(),
        0x21,
    );
    std::fs::write(edited_dump.join("panel/0.png"), &p0).unwrap();
    edited_later(&edited_dump.join("panel/0.png"));
    check_member_edit(
        w,
        &arch,
        "anims/b.gaf",
        "panel/0.png",
        &["panel/animated.png"],
        || {
            sh(&format!(
                "rsync -a {}/ {}/anims/b.gaf/",
                edited_dump.display(),
                mx.display()
            ));
        },
    );

    // the same rsync again transfers nothing and leaves the archive alone
    let m0 = std::fs::metadata(&arch).unwrap();
    let out = sh(&format!(
        "rsync -ai {}/ {}/anims/b.gaf/",
        edited_dump.display(),
        mx.display()
    ));
    // no file and no folder time is sent again (rsync sets a folder's time before it
    // writes into its subfolders: copying those into the staging area changes nothing)
    assert_eq!(out, "", "second rsync itemized");
    let m1 = std::fs::metadata(&arch).unwrap();
    use std::os::unix::fs::MetadataExt;
    assert_eq!((m0.ino(), m0.mtime_nsec()), (m1.ino(), m1.mtime_nsec()));

    // a tile of the map member
    let tile = std::fs::read(mx.join("maps/demo.tnt/tiles/1.png")).unwrap();
    let (tile, _) = edit_png(&tile, 0xC3);
    std::fs::write(w.join("tile.png"), &tile).unwrap();
    check_member_edit(
        w,
        &arch,
        "maps/demo.tnt",
        "tiles/1.png",
        &["map.png", "minimap.png", "metadata.json"],
        || {
            sh(&format!(
                "cp {} {}/maps/demo.tnt/tiles/1.png",
                w.join("tile.png").display(),
                mx.display()
            ));
        },
    );

    // python tempfile + os.replace of a plain member
    let before = members(&arch);
    sh(&format!(
        "python3 -c 'import os,tempfile,sys\nd=sys.argv[1]\nfd,t=tempfile.mkstemp(dir=d)\nos.write(fd,b\"[SIDE0]{{name=CORE;}}\")\nos.close(fd)\nos.replace(t,os.path.join(d,\"side.tdf\"))' {}",
        mx.join("gamedata").display()
    ));
    let after = members(&arch);
    only_changed(&before, &after, "gamedata/side.tdf");
    assert_eq!(after["gamedata/side.tdf"].0, b"[SIDE0]{name=CORE;}");

    // echo > a new file
    let before = after;
    sh(&format!("echo hello > {}/gamedata/new.txt", mx.display()));
    let after = members(&arch);
    only_changed(&before, &after, "gamedata/new.txt");
    assert_eq!(after["gamedata/new.txt"].0, b"hello\n");

    // cp of a GAF binary in: a new member, shown as its exploded view once closed
    let before = after;
    std::fs::write(w.join("c.gaf"), sample_bytes()).unwrap();
    sh(&format!(
        "cp {} {}/anims/",
        w.join("c.gaf").display(),
        mx.display()
    ));
    let after = members(&arch);
    only_changed(&before, &after, "anims/c.gaf");
    assert_eq!(after["anims/c.gaf"].0, sample_bytes());
    assert!(mx.join("anims/c.gaf/pulse/frames.csv").is_file());

    // rm of a member (its folder stays, empty)
    let before = after;
    sh(&format!("rm {}/units/sub/armcom.fbi", mx.display()));
    let after = members(&arch);
    only_changed(&before, &after, "units/sub/armcom.fbi");
    let ex = w.join("ex-after-rm");
    ok(&[
        "hpi",
        "extract",
        arch.to_str().unwrap(),
        "-t",
        ex.to_str().unwrap(),
    ]);
    assert!(ex.join("units/sub").is_dir());
    assert!(!ex.join("units/sub/armcom.fbi").exists());

    // mkdir of a new folder, rmdir of an empty one
    sh(&format!(
        "mkdir {}/scripts && rmdir {}/units/sub",
        mx.display(),
        mx.display()
    ));
    let ex = w.join("ex-after-mkdir");
    ok(&[
        "hpi",
        "extract",
        arch.to_str().unwrap(),
        "-t",
        ex.to_str().unwrap(),
    ]);
    assert!(ex.join("scripts").is_dir());
    assert!(ex.join("units").is_dir() && !ex.join("units/sub").exists());
    assert_eq!(members(&arch).len(), after.len());

    // a name differing only in case: EEXIST; rename out of the archive: EXDEV
    let e = std::fs::write(mx.join("gamedata/SIDE.TDF"), b"x").unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EEXIST));
    let e = std::fs::rename(mx.join("gamedata/side.tdf"), m.mnt.join("side.tdf")).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EXDEV));
    // mv out of it copies and deletes: the member is gone from the archive
    sh(&format!(
        "mv {}/gamedata/new.txt {}/",
        mx.display(),
        m.mnt.display()
    ));
    assert!(!members(&arch).contains_key("gamedata/new.txt"));
    assert_eq!(std::fs::read(game.join("new.txt")).unwrap(), b"hello\n");

    // mv of a member shown exploded, and of a folder: moved in the archive, stored bytes kept
    let before = members(&arch);
    sh(&format!(
        "mv {0}/anims/b.gaf {0}/anims/bb.gaf && mv {0}/maps {0}/maps2",
        mx.display()
    ));
    let after = members(&arch);
    assert_eq!(after["anims/bb.gaf"].1, before["anims/b.gaf"].1);
    assert_eq!(after["maps2/demo.tnt"].1, before["maps/demo.tnt"].1);
    assert!(!after.contains_key("anims/b.gaf") && !after.contains_key("maps/demo.tnt"));
    assert!(mx.join("maps2/demo.tnt/tilemap.csv").is_file());

    // a bad PNG: cp fails, the archive is untouched, status names it; fixing it commits
    let orig = std::fs::read(&arch).unwrap();
    std::fs::write(w.join("bad.png"), b"not a png").unwrap();
    let out = Command::new("cp")
        .arg(w.join("bad.png"))
        .arg(mx.join("anims/a.gaf/pulse/1.png"))
        .output()
        .unwrap();
    assert!(!out.status.success(), "cp of a bad PNG must fail");
    assert_eq!(std::fs::read(&arch).unwrap(), orig);
    // (status exits non-zero while something is in error)
    let st =
        String::from_utf8_lossy(&tafs(&["status", m.mnt.to_str().unwrap()]).stdout).into_owned();
    assert!(
        st.contains("x.hpi: error") && st.contains("anims/a.gaf") && st.contains("pulse/1.png"),
        "{st}"
    );
    let good = std::fs::read(w.join("before-anims_a.gaf-pulse_2.png/pulse/1.png")).unwrap();
    let (fixed, _) = edit_png(&good, 0x40);
    std::fs::write(w.join("fixed.png"), &fixed).unwrap();
    sh(&format!(
        "cp {} {}/anims/a.gaf/pulse/1.png",
        w.join("fixed.png").display(),
        mx.display()
    ));
    assert_ne!(std::fs::read(&arch).unwrap(), orig);
    let st = ok(&["status", m.mnt.to_str().unwrap()]);
    assert!(st.contains("x.hpi: clean"), "{st}");

    // tafs restore puts the archive before the last commit back
    let state = state.to_str().unwrap();
    ok(&["restore", "--state-dir", state, arch.to_str().unwrap()]);
    assert_eq!(std::fs::read(&arch).unwrap(), orig);
}

#[test]
fn every_format_is_kept_by_a_repack_and_ro_refuses() {
    if !fuse_available() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    let game = w.join("game");
    std::fs::create_dir_all(&game).unwrap();
    let variants: [(&str, &[&str]); 3] = [
        ("zlib.hpi", &[]),
        ("lz77.ufo", &["--method", "lz77", "--key", "125"]),
        ("v2.hpi", &["--format", "v2"]),
    ];
    for (name, opts) in variants {
        pack(w, &game.join(name), opts);
    }
    let info = |p: &Path| {
        let a = hpi::parse(&std::fs::read(p).unwrap(), &hpi::HpiLimits::default()).unwrap();
        let methods: std::collections::BTreeSet<&str> =
            a.files().map(|(_, f)| f.method.name()).collect();
        (a.version, a.key, methods)
    };
    let originals: Vec<_> = variants.iter().map(|(n, _)| info(&game.join(n))).collect();
    assert_eq!(originals[1].1, 125);
    assert_eq!(originals[2].0, hpi::Version::V2);
    {
        let m = mount(&game, &w.join("mnt"), &w.join("state"), &[]);
        for ((name, _), orig) in variants.iter().zip(&originals) {
            let arch = game.join(name);
            let mx = m.mnt.join(name);
            let before = members(&arch);
            // a plain member and a frame
            sh(&format!("echo new > {}/gamedata/new.txt", mx.display()));
            let png = std::fs::read(mx.join("anims/a.gaf/pulse/0.png")).unwrap();
            std::fs::write(w.join("e.png"), edit_png(&png, 0x30).0).unwrap();
            sh(&format!(
                "cp {} {}/anims/a.gaf/pulse/0.png",
                w.join("e.png").display(),
                mx.display()
            ));
            assert_eq!(&info(&arch), orig, "{name}: format kept");
            let after = members(&arch);
            assert_eq!(after["gamedata/new.txt"].0, b"new\n");
            for (k, v) in &before {
                if k != "anims/a.gaf" {
                    assert_eq!(after[k].1, v.1, "{name}: {k} stored bytes kept");
                }
            }
            assert_ne!(after["anims/a.gaf"].0, before["anims/a.gaf"].0);
        }
    }
    // --ro: EROFS inside archives, nothing changes
    let snapshot = std::fs::read(game.join("zlib.hpi")).unwrap();
    let m = mount(&game, &w.join("mnt-ro"), &w.join("state"), &["--ro"]);
    let e = std::fs::write(m.mnt.join("zlib.hpi/gamedata/x.txt"), b"x").unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EROFS));
    let e = std::fs::write(m.mnt.join("zlib.hpi/gamedata/side.tdf"), b"x").unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EROFS));
    assert_eq!(std::fs::read(game.join("zlib.hpi")).unwrap(), snapshot);
}

#[test]
fn corpus_archives_take_an_edit_and_keep_the_rest() {
    if !fuse_available() {
        return;
    }
    let Some(corpus) = common::corpus() else {
        println!("note: ../shared/corpus is absent; corpus archive write-back skipped");
        return;
    };
    let dir = corpus.join("archives");
    if !dir.is_dir() {
        println!("note: ../shared/corpus/archives is absent; corpus archive write-back skipped");
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    let game = w.join("game");
    std::fs::create_dir_all(&game).unwrap();
    let mut names = Vec::new();
    for e in std::fs::read_dir(&dir).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if tafs::view::archive::is_archive_name(&name) {
            std::fs::copy(e.path(), game.join(&name)).unwrap();
            sh(&format!("chmod 644 '{}'", game.join(&name).display()));
            names.push(name);
        }
    }
    let m = mount(&game, &w.join("mnt"), &w.join("state"), &[]);
    for name in &names {
        let arch = game.join(name);
        let a0 = hpi::parse(&std::fs::read(&arch).unwrap(), &Default::default()).unwrap();
        let before = members(&arch);
        std::fs::write(m.mnt.join(name).join("tafs-added.txt"), b"added").unwrap();
        let after = members(&arch);
        only_changed(&before, &after, "tafs-added.txt");
        let a1 = hpi::parse(&std::fs::read(&arch).unwrap(), &Default::default()).unwrap();
        assert_eq!((a0.version, a0.key), (a1.version, a1.key), "{name}");
    }
    // a frame of a GAF member of a corpus archive (ArmImp.ufo holds one)
    let imp = game.join("ArmImp.ufo");
    if imp.exists() {
        let gaf = members(&imp)
            .keys()
            .find(|k| k.to_ascii_lowercase().ends_with(".gaf"))
            .cloned()
            .unwrap();
        let ex = w.join("imp-before");
        dump_member(&imp, &gaf, &ex);
        let meta: serde_json::Value =
            serde_json::from_slice(&std::fs::read(ex.join("metadata.json")).unwrap()).unwrap();
        let seq = meta["sequences"][0]["dir"].as_str().unwrap().to_string();
        let mem = m.mnt.join("ArmImp.ufo").join(&gaf);
        let png = std::fs::read(mem.join(&seq).join("0.png")).unwrap();
        std::fs::write(w.join("imp.png"), edit_png(&png, 0x31).0).unwrap();
        check_member_edit(
            w,
            &imp,
            &gaf,
            &format!("{seq}/0.png"),
            &[&format!("{seq}/animated.png")],
            || {
                sh(&format!(
                    "cp {} '{}'",
                    w.join("imp.png").display(),
                    mem.join(&seq).join("0.png").display()
                ));
            },
        );
    }
    println!("{} corpus archives took an edit", names.len());
}

/// A new GAF or TNT member from an exploded folder: `mkdir` of a folder named like a member
/// inside the archive and an rsync of a dump into it write the member built from that tree
/// (the bytes `tafs gaf build` / `tafs tnt pack` give), keeping every other member's stored
/// bytes; an incomplete one stays pending and leaves the archive alone.
#[test]
fn new_members_from_exploded_folders() {
    if !fuse_available() {
        return;
    }
    let (m, arch, work) = packed_and_mounted();
    let w = work.path();
    let p = |x: &Path| x.to_str().unwrap().to_string();
    // the trees: a dump of the sample GAF, an unpack of the sample map
    let (gaf, map) = (w.join("s.gaf"), w.join("s.tnt"));
    ok(&["gaf", "sample", "-t", &p(&gaf)]);
    ok(&["tnt", "sample", "-t", &p(&map)]);
    let (gdump, mdump) = (w.join("gdump"), w.join("mdump"));
    ok(&["gaf", "dump", &p(&gaf), "-t", &p(&gdump)]);
    ok(&["tnt", "unpack", &p(&map), "-t", &p(&mdump)]);
    let (gbuilt, mbuilt) = (w.join("built.gaf"), w.join("built.tnt"));
    ok(&["gaf", "build", &p(&gdump), "-t", &p(&gbuilt)]);
    ok(&["tnt", "pack", &p(&mdump), "-t", &p(&mbuilt)]);

    let mx = m.mnt.join("x.hpi");
    for (member, tree, built) in [
        ("anims/new.gaf", &gdump, &gbuilt),
        ("maps/new.tnt", &mdump, &mbuilt),
    ] {
        let before = members(&arch);
        sh(&format!(
            "mkdir {0}/{member} && rsync -a {1}/ {0}/{member}/",
            mx.display(),
            tree.display()
        ));
        let after = members(&arch);
        only_changed(&before, &after, member);
        assert!(
            after[member].0 == std::fs::read(built).unwrap(),
            "{member}: the member differs from the CLI's build of the same tree"
        );
        // shown as the member's exploded view, and a second rsync transfers no file
        assert!(mx.join(member).join("metadata.json").is_file());
        let out = sh(&format!(
            "rsync -ai {}/ {}/{member}/",
            tree.display(),
            mx.display()
        ));
        assert_eq!(out, "", "second rsync into {member} itemized");
    }

    // incomplete: metadata.json alone waits for its sequences, the archive is untouched
    let before = std::fs::read(&arch).unwrap();
    sh(&format!(
        "mkdir {0}/anims/half.gaf && cp {1}/metadata.json {0}/anims/half.gaf/",
        mx.display(),
        gdump.display()
    ));
    let st = std::fs::read_to_string(mx.join(".tafs-status")).unwrap();
    assert!(st.contains("pending") && st.contains("half.gaf"), "{st}");
    assert!(
        std::fs::read(&arch).unwrap() == before,
        "the archive changed"
    );
}

/// A `map.png` edit of a map member re-tiles it (new tiles, `tilemap.csv` renumbered, the
/// minimap rebuilt): the mount then shows the member as `tafs tnt unpack` does (no outdated
/// staged `tilemap.csv`), and a later commit of the member keeps the edit.
#[test]
fn map_png_edit_of_a_member_retiles_and_stays() {
    if !fuse_available() {
        return;
    }
    let (m, arch, work) = packed_and_mounted();
    let w = work.path();
    let dir = m.mnt.join("x.hpi/maps/demo.tnt");
    let indices = |png: &[u8]| match tafs::view::image::decode_png(png).unwrap().pixels {
        tafs::view::image::PngPixels::Indexed { indices, .. } => indices,
        _ => panic!("map.png is indexed"),
    };

    // first tilemap.csv is edited (so it is staged): its first cell takes tile 3
    sh(&format!(
        "sed -i '1s/^2,/3,/' {}",
        dir.join("tilemap.csv").display()
    ));
    let fresh0 = w.join("fresh0");
    dump_member(&arch, "maps/demo.tnt", &fresh0);
    let tm = std::fs::read_to_string(fresh0.join("tilemap.csv")).unwrap();
    assert!(tm.starts_with("3,"), "{tm}");

    // then map.png: one pixel, re-tiled by the commit
    let (png, _) = edit_png(&std::fs::read(dir.join("map.png")).unwrap(), 0xC7);
    std::fs::write(w.join("map.png"), &png).unwrap();
    let before = members(&arch);
    sh(&format!(
        "cp {} {}",
        w.join("map.png").display(),
        dir.join("map.png").display()
    ));
    only_changed(&before, &members(&arch), "maps/demo.tnt");
    let fresh = w.join("fresh");
    dump_member(&arch, "maps/demo.tnt", &fresh);
    assert!(indices(&std::fs::read(fresh.join("map.png")).unwrap()) == indices(&png));
    for f in ["tilemap.csv", "metadata.json", "minimap.png"] {
        assert!(
            std::fs::read(dir.join(f)).unwrap() == std::fs::read(fresh.join(f)).unwrap(),
            "{f} in the mount differs from the unpack of the committed member"
        );
    }

    // a later commit of the member (a feature moves, sed -i) keeps the map.png edit
    sh(&format!(
        "sed -i '2s/,24,6$/,23,6/' {}",
        dir.join("features.csv").display()
    ));
    let fresh2 = w.join("fresh2");
    dump_member(&arch, "maps/demo.tnt", &fresh2);
    let features = std::fs::read_to_string(fresh2.join("features.csv")).unwrap();
    assert!(features.contains(",23,6"), "{features}");
    assert!(indices(&std::fs::read(fresh2.join("map.png")).unwrap()) == indices(&png));
}

/// Plain member files keep the times and modes `rsync -a` gave them (an archive stores
/// neither; the mount records what they showed when they left the staging area): a second
/// `rsync -a` of the same tree sends nothing and leaves the archive alone, also after a
/// remount; a file changed in the source is the only one sent; compared by content
/// (`rsync -rc`), the repeat sends nothing either (SEMANTICS.md, "Writing inside archives").
#[test]
fn rsync_of_plain_files_into_an_archive_twice_commits_once() {
    use std::os::unix::fs::MetadataExt;
    if !fuse_available() {
        return;
    }
    let (m, arch, work) = packed_and_mounted();
    let src = work.path().join("scripts-src");
    for (rel, text) in [
        ("scripts/a.txt", "one\n"),
        ("scripts/b.txt", "two\n"),
        ("scripts/sub/c.txt", "three\n"),
    ] {
        mount_common::put(&src.join(rel), text.as_bytes());
    }
    sh(&format!(
        "chmod 0755 {}",
        src.join("scripts/b.txt").display()
    ));
    sh(&format!(
        "find {} -exec touch -h -d 2001-02-03T04:05:06 {{}} +",
        src.display()
    ));
    let into = |mnt: &Path, flags: &str| {
        sh(&format!(
            "rsync {flags} {}/ {}/x.hpi/",
            src.display(),
            mnt.display()
        ))
    };
    into(&m.mnt, "-a");
    let after = members(&arch);
    for (k, v) in [
        ("scripts/a.txt", "one\n"),
        ("scripts/b.txt", "two\n"),
        ("scripts/sub/c.txt", "three\n"),
    ] {
        assert_eq!(after[k].0, v.as_bytes(), "{k}");
    }
    let a0 = std::fs::metadata(&arch).unwrap();
    let unchanged = |why: &str| {
        let a1 = std::fs::metadata(&arch).unwrap();
        assert_eq!(
            (a0.ino(), a0.mtime(), a0.mtime_nsec()),
            (a1.ino(), a1.mtime(), a1.mtime_nsec()),
            "the archive was written again {why}"
        );
    };
    assert_eq!(
        into(&m.mnt, "-ai"),
        "",
        "the second rsync -a sent something"
    );
    unchanged("by the second rsync -a");
    let b = std::fs::metadata(m.mnt.join("x.hpi/scripts/b.txt")).unwrap();
    assert_eq!(b.mode() & 0o777, 0o755);
    assert_eq!(b.mtime(), 981_173_106);
    assert_eq!(
        into(&m.mnt, "-rci --omit-dir-times"),
        "",
        "rsync -rc itemized"
    );
    // a new mount of the same game and state folders
    let mnt = m.mnt.clone();
    let (game, state) = (
        arch.parent().unwrap().to_path_buf(),
        work.path().join("state"),
    );
    drop(m);
    let m = mount(&game, &mnt, &state, &[]);
    assert_eq!(
        into(&m.mnt, "-ai"),
        "",
        "rsync -a after a remount sent something"
    );
    unchanged("after a remount");
    // one file changed: only it is sent, and the repeat sends nothing
    mount_common::put(&src.join("scripts/sub/c.txt"), b"four\n");
    let sent = into(&m.mnt, "-ai");
    assert_eq!(sent.trim(), ">f.st...... scripts/sub/c.txt", "{sent:?}");
    assert_eq!(members(&arch)["scripts/sub/c.txt"].0, b"four\n");
    assert_eq!(into(&m.mnt, "-ai"), "", "the repeat sent something");
    drop(m);
}
