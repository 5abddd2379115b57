//! Write-back through a real mount with real tools (rsync, cp, truncate, sed -i, Python
//! tempfile + os.replace, a GIO-style rename while open, vim in ex mode), on a self-made GAF
//! with composite frames and on a corpus GAF when present. After each save `tafs gaf dump`
//! of the binary must show exactly the edit.

mod common;
mod mount_common;
mod writeback_common;

use common::differing;
use mount_common::{fuse_available, mount_state, sh, UnmountGuard};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use tafs::view::image::{decode_png, write_gray_png, PngPixels};
use writeback_common::{edit_png, noisy_png, parse, payloads, sample_bytes};

const TAFS: &str = env!("CARGO_BIN_EXE_tafs");

/// A write-back mount with TTL 0 and state directory `state`.
struct Env {
    dir: tempfile::TempDir,
    game: PathBuf,
    state: PathBuf,
    mnt: PathBuf,
}

/// A game folder with the self-made GAF (and a corpus GAF when present), writable.
fn env() -> Env {
    let dir = tempfile::tempdir().unwrap();
    let game = dir.path().join("game");
    std::fs::create_dir_all(game.join("anims")).unwrap();
    std::fs::write(game.join("anims/fx.gaf"), sample_bytes()).unwrap();
    let corpus = Path::new("../shared/corpus/game/anims/abboom.gaf");
    if corpus.exists() {
        std::fs::copy(corpus, game.join("anims/abboom.gaf")).unwrap();
        sh(&format!(
            "chmod 644 {}",
            game.join("anims/abboom.gaf").display()
        ));
    } else {
        println!("corpus absent: ../shared/corpus/game/anims/abboom.gaf (self-made GAF only)");
    }
    Env {
        state: dir.path().join("state"),
        mnt: dir.path().join("mnt"),
        game,
        dir,
    }
}

fn assets(e: &Env) -> Vec<&'static str> {
    let mut v = vec!["fx.gaf"];
    if e.game.join("anims/abboom.gaf").exists() {
        v.push("abboom.gaf");
    }
    v
}

fn dump(bin: &Path, to: &Path) {
    let o = Command::new(TAFS)
        .args(["gaf", "dump"])
        .arg(bin)
        .arg("-t")
        .arg(to)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

fn first_seq(dump_dir: &Path) -> String {
    let meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dump_dir.join("metadata.json")).unwrap()).unwrap();
    meta["sequences"][0]["dir"].as_str().unwrap().to_string()
}

/// Checks that the binary now dumps as `before` with only `changed` (and the sequence's
/// preview) different, that the changed file reads back as `expect` when given, and that
/// every frame other than `frame` keeps its payload bytes.
fn check_edit(
    e: &Env,
    asset: &str,
    before_dump: &Path,
    before: &tafs::formats::gaf::Gaf,
    changed: &str,
    frame: Option<&str>,
) {
    let bin = e.game.join("anims").join(asset);
    let after_dump = e
        .dir
        .path()
        .join(format!("after-{asset}-{}", changed.replace('/', "_")));
    dump(&bin, &after_dump);
    let seq = changed.split('/').next().unwrap();
    let diff = differing(before_dump, &after_dump);
    let allowed = [changed.to_string(), format!("{seq}/animated.png")];
    assert!(
        diff.iter().any(|d| d == changed),
        "{changed} not changed: {diff:?}"
    );
    assert!(
        diff.iter().all(|d| allowed.contains(d)),
        "{asset}: more changed than {changed}: {diff:?}"
    );
    let after = parse(&bin);
    let (a, b) = (payloads(before), payloads(&after));
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(&b) {
        if Some(x.0.as_str()) != frame {
            assert_eq!(x, y, "{asset}: payload of {} changed", x.0);
        }
    }
}

#[test]
fn save_patterns_of_real_tools() {
    if !fuse_available() {
        return;
    }
    let e = env();
    let m = mount_state(&e.game, &e.mnt, &e.state, &[]);
    for asset in assets(&e) {
        let bin = e.game.join("anims").join(asset);
        let dir = m.mnt.join("anims").join(asset);
        let mut step = 0;
        let mut fresh = |e: &Env| {
            step += 1;
            let d = e.dir.path().join(format!("before-{asset}-{step}"));
            dump(&bin, &d);
            (d.clone(), parse(&bin), first_seq(&d))
        };

        // cp onto an existing PNG
        let (bd, bg, seq) = fresh(&e);
        let seqname = bg.sequences[0].name_str();
        let (png, _) = edit_png(
            &std::fs::read(bd.join(format!("{seq}/0.png"))).unwrap(),
            0xB3,
        );
        let src = e.dir.path().join("edit.png");
        std::fs::write(&src, &png).unwrap();
        sh(&format!(
            "cp {} {}/{seq}/0.png",
            src.display(),
            dir.display()
        ));
        check_edit(
            &e,
            asset,
            &bd,
            &bg,
            &format!("{seq}/0.png"),
            Some(&format!("{seqname}/0")),
        );
        assert_eq!(
            std::fs::read(dir.join(format!("{seq}/0.png"))).unwrap(),
            png
        );

        // truncate + write
        let (bd, bg, seq) = fresh(&e);
        let (png, _) = edit_png(
            &std::fs::read(bd.join(format!("{seq}/0.png"))).unwrap(),
            0xB5,
        );
        std::fs::write(&src, &png).unwrap();
        sh(&format!(
            "truncate -s 0 {d}/{seq}/0.png && cat {} >> {d}/{seq}/0.png",
            src.display(),
            d = dir.display()
        ));
        check_edit(
            &e,
            asset,
            &bd,
            &bg,
            &format!("{seq}/0.png"),
            Some(&format!("{seqname}/0")),
        );

        // sed -i on frames.csv: origin_x of the first frame becomes 7
        let (bd, bg, seq) = fresh(&e);
        sh(&format!(
            "sed -i '2s/^\\([^,]*,[^,]*,[^,]*,\\)[^,]*/\\17/' {}/{seq}/frames.csv",
            dir.display()
        ));
        check_edit(
            &e,
            asset,
            &bd,
            &bg,
            &format!("{seq}/frames.csv"),
            Some(&format!("{seqname}/0")),
        );
        let csv = std::fs::read_to_string(dir.join(format!("{seq}/frames.csv"))).unwrap();
        assert!(
            csv.lines()
                .nth(1)
                .unwrap()
                .split(',')
                .nth(3)
                .unwrap()
                .trim()
                == "7",
            "{csv}"
        );

        // Python tempfile + os.replace
        let (bd, bg, seq) = fresh(&e);
        let (png, _) = edit_png(
            &std::fs::read(bd.join(format!("{seq}/0.png"))).unwrap(),
            0xB7,
        );
        std::fs::write(&src, &png).unwrap();
        sh(&format!(
            "python3 -c 'import os,tempfile,sys\nd=sys.argv[1]\nfd,t=tempfile.mkstemp(dir=d)\nos.write(fd,open(sys.argv[2],\"rb\").read())\nos.close(fd)\nos.replace(t,os.path.join(d,\"0.png\"))' {}/{seq} {}",
            dir.display(),
            src.display()
        ));
        check_edit(
            &e,
            asset,
            &bd,
            &bg,
            &format!("{seq}/0.png"),
            Some(&format!("{seqname}/0")),
        );

        // GIO: write a temp file, rename it over the target while still open, then close
        let (bd, bg, seq) = fresh(&e);
        let (png, _) = edit_png(
            &std::fs::read(bd.join(format!("{seq}/0.png"))).unwrap(),
            0xB9,
        );
        std::fs::write(&src, &png).unwrap();
        sh(&format!(
            "python3 -c 'import os,sys\nd=sys.argv[1]\nt=os.path.join(d,\".goutputstream-AB12CD\")\nf=open(t,\"wb\")\nf.write(open(sys.argv[2],\"rb\").read())\nf.flush()\nos.rename(t,os.path.join(d,\"0.png\"))\nf.close()' {}/{seq} {}",
            dir.display(),
            src.display()
        ));
        check_edit(
            &e,
            asset,
            &bd,
            &bg,
            &format!("{seq}/0.png"),
            Some(&format!("{seqname}/0")),
        );

        // vim in ex mode: change the duration of the first frame in frames.csv
        if Command::new("vim").arg("--version").output().is_ok() {
            let (bd, bg, seq) = fresh(&e);
            let st = Command::new("vim")
                .args([
                    "-e",
                    "-s",
                    "-n",
                    "-u",
                    "NONE",
                    "-c",
                    "2s/^\\([^,]*,[^,]*,[^,]*,[^,]*,\\)[^,]*/\\13/",
                    "-c",
                    "wq",
                ])
                .arg(dir.join(format!("{seq}/frames.csv")))
                .stdin(Stdio::null())
                .status()
                .unwrap();
            assert!(st.success());
            check_edit(
                &e,
                asset,
                &bd,
                &bg,
                &format!("{seq}/frames.csv"),
                Some(&format!("{seqname}/0")),
            );
        } else {
            println!("vim not installed: ex-mode save not tested");
        }
    }
    let st = String::from_utf8(
        Command::new(TAFS)
            .arg("status")
            .arg(&m.mnt)
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    assert!(!st.contains("error") && !st.contains("conflict"), "{st}");
}

#[test]
fn rsync_twice_is_stable_also_after_remount() {
    if !fuse_available() {
        return;
    }
    let e = env();
    for asset in assets(&e) {
        let bin = e.game.join("anims").join(asset);
        let src = e.dir.path().join(format!("src-{asset}"));
        dump(&bin, &src);
        let before = e.dir.path().join(format!("before-{asset}"));
        dump(&bin, &before);
        let bg = parse(&bin);
        let seq = first_seq(&src);
        let (png, _) = edit_png(
            &std::fs::read(src.join(format!("{seq}/0.png"))).unwrap(),
            0xB3,
        );
        std::fs::write(src.join(format!("{seq}/0.png")), &png).unwrap();
        // an old mtime, so rsync's quick check (size + mtime) sees every file as changed
        sh(&format!(
            "find {} -exec touch -h -d 2001-02-03T04:05:06 {{}} +",
            src.display()
        ));
        let dst = format!("{}/anims/{asset}/", e.mnt.display());
        {
            let _m = mount_state(&e.game, &e.mnt, &e.state, &[]);
            let out = sh(&format!("rsync -ai {}/ {dst}", src.display()));
            let st = std::fs::read_to_string(e.mnt.join(".tafs-status")).unwrap_or_default();
            println!("rsync: {out}\nstatus: {st}");
            check_edit(
                &e,
                asset,
                &before,
                &bg,
                &format!("{seq}/0.png"),
                Some(&format!("{}/0", bg.sequences[0].name_str())),
            );
            let m0 = std::fs::metadata(&bin).unwrap();
            let out = sh(&format!("rsync -ai {}/ {dst}", src.display()));
            assert_eq!(out, "", "second rsync itemized");
            let m1 = std::fs::metadata(&bin).unwrap();
            use std::os::unix::fs::MetadataExt;
            assert_eq!(
                (m0.ino(), m0.mtime(), m0.mtime_nsec()),
                (m1.ino(), m1.mtime(), m1.mtime_nsec())
            );
        }
        let _m = mount_state(&e.game, &e.mnt, &e.state, &[]);
        let out = sh(&format!("rsync -ai {}/ {dst}", src.display()));
        assert_eq!(out, "", "rsync after remount itemized");
    }
}

#[test]
fn bad_png_via_cp_fails_and_fixing_commits() {
    if !fuse_available() {
        return;
    }
    let e = env();
    let m = mount_state(&e.game, &e.mnt, &e.state, &[]);
    let bin = e.game.join("anims/fx.gaf");
    let orig = std::fs::read(&bin).unwrap();
    let bad = e.dir.path().join("bad.png");
    std::fs::write(&bad, b"this is not a PNG").unwrap();
    let target = m.mnt.join("anims/fx.gaf/panel/0.png");
    let st = Command::new("cp").arg(&bad).arg(&target).status().unwrap();
    assert!(!st.success(), "cp of a bad PNG succeeded");
    assert_eq!(std::fs::read(&bin).unwrap(), orig);
    assert_eq!(std::fs::read(&target).unwrap(), b"this is not a PNG");
    let out = Command::new(TAFS)
        .arg("status")
        .arg(&m.mnt)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("panel/0.png") && text.contains("error"),
        "{text}"
    );
    assert!(
        std::fs::read_to_string(m.mnt.join("anims/fx.gaf/.tafs-status"))
            .unwrap()
            .contains("panel/0.png")
    );
    // fixing it commits
    let d = e.dir.path().join("d");
    dump(&bin, &d);
    let (png, _) = edit_png(&std::fs::read(d.join("panel/0.png")).unwrap(), 0x20);
    std::fs::write(&bad, &png).unwrap();
    sh(&format!("cp {} {}", bad.display(), target.display()));
    assert_ne!(std::fs::read(&bin).unwrap(), orig);
    let text = std::fs::read_to_string(m.mnt.join("anims/fx.gaf/.tafs-status")).unwrap();
    assert!(text.contains(": clean"), "{text}");

    // the replaced version is in the history; restoring it keeps the edited one there too
    let fixed = std::fs::read(&bin).unwrap();
    let state = format!("--state-dir={}", e.state.display());
    let list = sh(&format!("{TAFS} history {} {state}", bin.display()));
    assert_eq!(list.lines().count(), 1, "{list}");
    sh(&format!("{TAFS} restore {} 1 {state}", bin.display()));
    assert!(
        std::fs::read(&bin).unwrap() == orig,
        "restore did not put back the original"
    );
    let list = sh(&format!("{TAFS} history {} {state}", bin.display()));
    assert_eq!(list.lines().count(), 2, "{list}");
    sh(&format!("{TAFS} restore {} {state}", bin.display()));
    assert!(
        std::fs::read(&bin).unwrap() == fixed,
        "restore of the newest failed"
    );
    // the mount shows the restored binary
    let d2 = e.dir.path().join("d2");
    dump(&bin, &d2);
    assert_eq!(
        std::fs::read(target).unwrap(),
        std::fs::read(d2.join("panel/0.png")).unwrap()
    );
}

#[test]
fn new_asset_by_rsync_and_conflict_and_ro() {
    if !fuse_available() {
        return;
    }
    let e = env();
    let bin = e.game.join("anims/fx.gaf");
    let src = e.dir.path().join("src");
    dump(&bin, &src);
    {
        let m = mount_state(&e.game, &e.mnt, &e.state, &[]);
        sh(&format!(
            "mkdir {0}/anims/new.gaf && rsync -a {1}/ {0}/anims/new.gaf/",
            m.mnt.display(),
            src.display()
        ));
        // equals `tafs gaf build` of the same tree
        let built = e.dir.path().join("built.gaf");
        sh(&format!(
            "{TAFS} gaf build {} -t {}",
            src.display(),
            built.display()
        ));
        assert_eq!(
            std::fs::read(e.game.join("anims/new.gaf")).unwrap(),
            std::fs::read(&built).unwrap()
        );
        // written once: no earlier version went to the history
        let abs = std::path::absolute(e.game.join("anims/new.gaf")).unwrap();
        let h = tafs::fs::stage::history_of(&tafs::fs::stage::history_dir(&e.state, &abs));
        assert!(h.is_empty(), "new.gaf was written more than once: {h:?}");
        // a second rsync transfers nothing
        let out = sh(&format!(
            "rsync -ai {}/ {}/anims/new.gaf/",
            src.display(),
            m.mnt.display()
        ));
        assert_eq!(out, "", "second rsync into new.gaf itemized");

        // conflict: a pending edit, then the binary changes behind the mount
        let csv = m.mnt.join("anims/fx.gaf/panel/frames.csv");
        let text = std::fs::read_to_string(&csv).unwrap();
        let row = text.lines().nth(1).unwrap().replacen('0', "1", 1);
        std::fs::write(&csv, format!("{text}{row}\n")).unwrap();
        let st = std::fs::read_to_string(m.mnt.join("anims/fx.gaf/.tafs-status")).unwrap();
        assert!(st.contains("pending"), "{st}");
        let mut other = tafs::sample::animated_gaf();
        other.sequences.truncate(2);
        let other = tafs::formats::gaf::write(&other).unwrap();
        std::fs::write(&bin, &other).unwrap();
        // the commit happens at close: cp reports the close error
        let out = Command::new("cp")
            .arg(src.join("panel/0.png"))
            .arg(m.mnt.join("anims/fx.gaf/panel/1.png"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "cp succeeded despite the conflict");
        assert!(err.contains("Stale file handle"), "{err}");
        let st = std::fs::read_to_string(m.mnt.join("anims/fx.gaf/.tafs-status")).unwrap();
        assert!(st.contains("conflict"), "{st}");
        assert_eq!(std::fs::read(&bin).unwrap(), other);
        assert_eq!(
            std::fs::read_to_string(&csv).unwrap(),
            format!("{text}{row}\n")
        );
    }
    // --ro: EROFS
    let out = Command::new(TAFS)
        .args(["mount", "-d", "--ro", "--state-dir"])
        .arg(&e.state)
        .arg(&e.game)
        .arg(&e.mnt)
        .output()
        .unwrap();
    let _g = UnmountGuard(e.mnt.clone());
    assert!(out.status.success());
    let err = std::fs::write(e.mnt.join("anims/new.gaf/metadata.json"), b"{}").unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EROFS));
    let _ = Command::new(TAFS).arg("umount").arg(&e.mnt).status();
}

/// The indices of an indexed PNG.
fn png_indices(png: &[u8]) -> Vec<u8> {
    match decode_png(png).unwrap().pixels {
        PngPixels::Indexed { indices, .. } => indices,
        _ => panic!("not an indexed PNG"),
    }
}

/// One map edited through the mount, file by file and with different tools. Before each
/// edit the tree the mount shows is copied; the same edit is made to the copy, which
/// `tafs tnt pack` packs: the binary the mount commits must be those bytes.
fn map_edits_equal_cli_pack(e: &Env, name: &str) {
    let bin = e.game.join("maps").join(name);
    let dir = e.mnt.join("maps").join(name);
    let mut last = std::fs::read(&bin).unwrap();
    let mut step = 0;
    let mut snapshot = || {
        step += 1;
        let t = e.dir.path().join(format!("tree-{name}-{step}"));
        sh(&format!("cp -r {} {}", dir.display(), t.display()));
        t
    };
    let mut check = |what: &str, tree: &Path| {
        let packed = tree.with_extension("packed.tnt");
        sh(&format!(
            "{TAFS} tnt pack {} -t {}",
            tree.display(),
            packed.display()
        ));
        let now = std::fs::read(&bin).unwrap();
        let want = std::fs::read(&packed).unwrap();
        assert!(now != last, "{name}: {what} did not change the binary");
        assert!(
            now == want,
            "{name}: after {what} the binary ({} bytes) differs from tafs tnt pack ({} bytes)",
            now.len(),
            want.len()
        );
        tafs::formats::tnt::parse(&now, &Default::default()).unwrap();
        // the mount's map.png of the new version (its bands copied from the version before's,
        // which the snapshot read) is the one unpack writes; a saved map.png stays as saved
        let fresh = PathBuf::from(format!("{}.unpacked", tree.display()));
        sh(&format!(
            "{TAFS} tnt unpack {} -t {}",
            bin.display(),
            fresh.display()
        ));
        let (shown, unpacked) = (
            std::fs::read(dir.join("map.png")).unwrap(),
            std::fs::read(fresh.join("map.png")).unwrap(),
        );
        if what == "map.png" {
            assert!(png_indices(&shown) == png_indices(&unpacked));
        } else {
            assert!(
                shown == unpacked,
                "{name}: after {what} the mount's map.png differs from tafs tnt unpack's"
            );
        }
        last = now;
    };
    let cp = |from: &Path, file: &str| {
        sh(&format!(
            "cp {} {}",
            from.join(file).display(),
            dir.join(file).display()
        ))
    };

    // a tile's pixel, with cp
    let t = snapshot();
    let (png, _) = edit_png(&std::fs::read(t.join("tiles/1.png")).unwrap(), 0xC3);
    std::fs::write(t.join("tiles/1.png"), &png).unwrap();
    cp(&t, "tiles/1.png");
    check("tiles/1.png", &t);
    assert_eq!(std::fs::read(dir.join("tiles/1.png")).unwrap(), png);

    // the first cell of tilemap.csv takes another tile, with Python tempfile + os.replace
    let t = snapshot();
    let text = std::fs::read_to_string(t.join("tilemap.csv")).unwrap();
    let (first, rest) = text.split_once(',').unwrap();
    let v: u32 = first.trim().parse().unwrap();
    std::fs::write(
        t.join("tilemap.csv"),
        format!("{},{rest}", if v == 1 { 2 } else { 1 }),
    )
    .unwrap();
    sh(&format!(
        "python3 -c 'import os,tempfile,sys\nd=sys.argv[1]\nfd,t=tempfile.mkstemp(dir=d)\nos.write(fd,open(sys.argv[2],\"rb\").read())\nos.close(fd)\nos.replace(t,os.path.join(d,\"tilemap.csv\"))' {} {}",
        dir.display(),
        t.join("tilemap.csv").display()
    ));
    check("tilemap.csv", &t);

    // one height of heightmap.png, with cp
    let t = snapshot();
    let d = decode_png(&std::fs::read(t.join("heightmap.png")).unwrap()).unwrap();
    let PngPixels::Gray(mut gray) = d.pixels else {
        panic!("heightmap.png is 8-bit grey")
    };
    gray[0] = gray[0].wrapping_add(17);
    let mut png = Vec::new();
    write_gray_png(&mut png, d.width, d.height, &gray).unwrap();
    std::fs::write(t.join("heightmap.png"), &png).unwrap();
    cp(&t, "heightmap.png");
    check("heightmap.png", &t);

    // one pixel of minimap.png, with cp: the stored minimap takes it
    let t = snapshot();
    let (png, at) = edit_png(&std::fs::read(t.join("minimap.png")).unwrap(), 0xC5);
    std::fs::write(t.join("minimap.png"), &png).unwrap();
    cp(&t, "minimap.png");
    check("minimap.png", &t);
    let now = tafs::formats::tnt::parse(&std::fs::read(&bin).unwrap(), &Default::default());
    assert_eq!(
        now.unwrap().minimap.pixels[at],
        0xC5,
        "{name}: minimap pixel"
    );

    // the sea level in metadata.json, with sed -i
    let t = snapshot();
    let text = std::fs::read_to_string(t.join("metadata.json")).unwrap();
    let meta: serde_json::Value = serde_json::from_str(&text).unwrap();
    let sea = meta["sea_level"].as_u64().unwrap();
    let new_sea = if sea == 0 { 1 } else { sea - 1 };
    let from = format!("\"sea_level\": {sea},");
    let to = format!("\"sea_level\": {new_sea},");
    assert!(text.contains(&from), "{name}: {text}");
    std::fs::write(t.join("metadata.json"), text.replace(&from, &to)).unwrap();
    sh(&format!(
        "sed -i 's/\"sea_level\": {sea},/\"sea_level\": {new_sea},/' {}",
        dir.join("metadata.json").display()
    ));
    check("metadata.json", &t);
    let now = tafs::formats::tnt::parse(&std::fs::read(&bin).unwrap(), &Default::default());
    assert_eq!(
        u64::from(now.unwrap().sea_level),
        new_sea,
        "{name}: sea level"
    );

    // one pixel of map.png (re-tiling: a new tile, tilemap.csv renumbered, the minimap
    // rebuilt), small maps only
    let mut mosaic = None;
    if std::fs::metadata(dir.join("map.png")).unwrap().len() < 1 << 20 {
        let t = snapshot();
        let (png, _) = edit_png(&std::fs::read(t.join("map.png")).unwrap(), 0xC7);
        std::fs::write(t.join("map.png"), &png).unwrap();
        let folder_t = std::fs::metadata(&dir).unwrap().modified().unwrap();
        cp(&t, "map.png");
        check("map.png", &t);
        // a file written in place and one giving way to the generated one (the staged
        // tilemap.csv): no name of the folder changed, nor its time
        assert_eq!(
            std::fs::metadata(&dir).unwrap().modified().unwrap(),
            folder_t,
            "{name}: the map folder's time"
        );
        mosaic = Some(png_indices(&png));
        // the mount now shows the re-tiled map (no outdated tilemap.csv), as unpack does
        let fresh = e.dir.path().join(format!("fresh-{name}"));
        sh(&format!(
            "{TAFS} tnt unpack {} -t {}",
            bin.display(),
            fresh.display()
        ));
        assert_eq!(
            std::fs::read_to_string(dir.join("tilemap.csv")).unwrap(),
            std::fs::read_to_string(fresh.join("tilemap.csv")).unwrap()
        );
    }

    // the first placement in features.csv moves one cell, with sed -i
    let t = snapshot();
    let text = std::fs::read_to_string(t.join("features.csv")).unwrap();
    if text.lines().count() < 2 {
        println!("{name}: no feature placements, features.csv edit not tested");
        return;
    }
    let row: Vec<String> = text
        .lines()
        .nth(1)
        .unwrap()
        .split(',')
        .map(String::from)
        .collect();
    let x: u32 = row[2].trim().parse().unwrap();
    let nx = if x == 0 { 1 } else { x - 1 };
    let new_row = format!("{},{},{nx},{}", row[0], row[1], row[3]);
    let edited: Vec<String> = text
        .lines()
        .enumerate()
        .map(|(i, l)| {
            if i == 1 {
                new_row.clone()
            } else {
                l.to_string()
            }
        })
        .collect();
    std::fs::write(t.join("features.csv"), edited.join("\n") + "\n").unwrap();
    sh(&format!(
        "sed -i '2s/.*/{new_row}/' {}",
        dir.join("features.csv").display()
    ));
    assert_eq!(
        std::fs::read(dir.join("features.csv")).unwrap(),
        std::fs::read(t.join("features.csv")).unwrap()
    );
    check("features.csv", &t);
    // a later commit keeps the earlier map.png edit
    if let Some(m) = mosaic {
        let fresh = e.dir.path().join(format!("fresh2-{name}"));
        sh(&format!(
            "{TAFS} tnt unpack {} -t {}",
            bin.display(),
            fresh.display()
        ));
        assert!(png_indices(&std::fs::read(fresh.join("map.png")).unwrap()) == m);
    }
}

#[test]
fn map_edits_through_the_mount_equal_tnt_pack() {
    if !fuse_available() {
        return;
    }
    let e = env();
    std::fs::create_dir_all(e.game.join("maps")).unwrap();
    let demo = tafs::formats::tnt::write(&tafs::sample::demo_map()).unwrap();
    std::fs::write(e.game.join("maps/demo.tnt"), demo).unwrap();
    let mut maps = vec!["demo.tnt"];
    let corpus = Path::new("../shared/corpus/game/maps/example.tnt");
    if corpus.exists() {
        std::fs::copy(corpus, e.game.join("maps/example.tnt")).unwrap();
        sh(&format!(
            "chmod 644 {}",
            e.game.join("maps/example.tnt").display()
        ));
        maps.push("example.tnt");
    } else {
        println!("corpus absent: ../shared/corpus/game/maps/example.tnt (demo map only)");
    }
    let _m = mount_state(&e.game, &e.mnt, &e.state, &[]);
    for name in maps {
        map_edits_equal_cli_pack(&e, name);
    }
}

#[test]
fn acl_xattrs_are_refused_with_enotsup() {
    if !fuse_available() {
        return;
    }
    let e = env();
    let m = mount_state(&e.game, &e.mnt, &e.state, &[]);
    let generated = m.mnt.join("anims/fx.gaf/panel/frames.csv");
    let staged = m.mnt.join("anims/fx.gaf/panel/notes~");
    std::fs::write(&staged, b"kept").unwrap();
    let before = std::fs::read(&generated).unwrap();
    // a valid access ACL that is not equivalent to the mode bits (a named user and a mask),
    // laid out as the kernel's xattr form: version 2, then (tag u16, perm u16, id u32)
    let mut acl = 2u32.to_le_bytes().to_vec();
    for (tag, perm, id) in [
        (0x01u16, 6u16, u32::MAX),
        (0x02, 4, 0),
        (0x04, 4, u32::MAX),
        (0x10, 4, u32::MAX),
        (0x20, 4, u32::MAX),
    ] {
        acl.extend(tag.to_le_bytes());
        acl.extend(perm.to_le_bytes());
        acl.extend(id.to_le_bytes());
    }
    let hex: String = acl.iter().map(|b| format!("{b:02x}")).collect();
    let asset_dir = m.mnt.join("anims/fx.gaf/panel");
    for (path, name) in [
        (&generated, "system.posix_acl_access"),
        (&staged, "system.posix_acl_access"),
        (&asset_dir, "system.posix_acl_default"),
        (&staged, "user.comment"),
    ] {
        let out = Command::new("python3")
            .args([
                "-c",
                "import os,sys\ntry:\n os.setxattr(sys.argv[1],sys.argv[2],bytes.fromhex(sys.argv[3]))\n print(0)\nexcept OSError as e:\n print(e.errno)",
            ])
            .arg(path)
            .arg(name)
            .arg(&hex)
            .output()
            .unwrap();
        let errno: i32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
        assert_eq!(errno, libc::ENOTSUP, "{name} on {}", path.display());
    }
    assert_eq!(std::fs::read(&generated).unwrap(), before);
    assert_eq!(std::fs::read(&staged).unwrap(), b"kept");
}

#[test]
fn new_map_by_rsync_appears_once_and_equals_tnt_pack() {
    if !fuse_available() {
        return;
    }
    let e = env();
    std::fs::create_dir_all(e.game.join("maps")).unwrap();
    let demo = e.dir.path().join("demo.tnt");
    std::fs::write(
        &demo,
        tafs::formats::tnt::write(&tafs::sample::demo_map()).unwrap(),
    )
    .unwrap();
    let src = e.dir.path().join("src");
    sh(&format!(
        "{TAFS} tnt unpack {} -t {}",
        demo.display(),
        src.display()
    ));
    let m = mount_state(&e.game, &e.mnt, &e.state, &[]);
    // rsync sends tilemap.csv before tiles/: the map waits for its tiles (pending), no error
    sh(&format!(
        "mkdir {0}/maps/new.tnt && rsync -a {1}/ {0}/maps/new.tnt/",
        m.mnt.display(),
        src.display()
    ));
    let built = e.dir.path().join("built.tnt");
    sh(&format!(
        "{TAFS} tnt pack {} -t {}",
        src.display(),
        built.display()
    ));
    let bin = e.game.join("maps/new.tnt");
    assert!(std::fs::read(&bin).unwrap() == std::fs::read(&built).unwrap());
    let abs = std::path::absolute(&bin).unwrap();
    let h = tafs::fs::stage::history_of(&tafs::fs::stage::history_dir(&e.state, &abs));
    assert!(h.is_empty(), "new.tnt was written more than once: {h:?}");
    let out = sh(&format!(
        "rsync -ai {}/ {}/maps/new.tnt/",
        src.display(),
        m.mnt.display()
    ));
    assert_eq!(out, "", "second rsync into new.tnt itemized");
}

/// An editor renames new versions over a frame (two versions of different sizes, in turn)
/// while readers open, fstat and read it and others stat it: every read must be exactly one
/// version, with the size fstat gave. (Before opens and stats of a frame checked its inode
/// still stood at its name under the stage lock, an open racing a rename served the new
/// file under the old inode, whose size the kernel kept: hundreds of short or mixed reads in
/// a few seconds.)
#[test]
fn readers_never_see_another_version_while_frames_are_renamed_over() {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    if !fuse_available() {
        return;
    }
    let e = env();
    let m = mount_state(&e.game, &e.mnt, &e.state, &[]);
    let d = e.dir.path().join("before");
    dump(&e.game.join("anims/fx.gaf"), &d);
    let rel = format!("{}/0.png", first_seq(&d));
    let generated = std::fs::read(d.join(&rel)).unwrap();
    let small = edit_png(&generated, 0xB3).0;
    let big = noisy_png(&generated);
    assert_ne!(small.len(), big.len());
    let frame = m.mnt.join("anims/fx.gaf").join(&rel);
    let folder = frame.parent().unwrap().to_path_buf();
    let stop = AtomicBool::new(false);
    let (reads, edits) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let bad = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        s.spawn(|| {
            let t0 = std::time::Instant::now();
            let mut n = 0usize;
            while t0.elapsed() < std::time::Duration::from_secs(4) {
                n += 1;
                let tmp = folder.join(format!(".edit{n}.tmp"));
                std::fs::write(&tmp, if n % 2 == 0 { &small } else { &big }).unwrap();
                std::fs::rename(&tmp, &frame).unwrap();
                edits.fetch_add(1, Ordering::Relaxed);
            }
            stop.store(true, Ordering::Relaxed);
        });
        for _ in 0..3 {
            s.spawn(|| {
                use std::io::Read;
                while !stop.load(Ordering::Relaxed) {
                    // ESTALE/ENOENT while a rename lands are allowed; what was read is checked
                    let Ok(mut f) = std::fs::File::open(&frame) else {
                        continue;
                    };
                    let Ok(size) = f.metadata().map(|m| m.len()) else {
                        continue;
                    };
                    let mut data = Vec::new();
                    if f.read_to_end(&mut data).is_err() {
                        continue;
                    }
                    reads.fetch_add(1, Ordering::Relaxed);
                    let known = data == generated || data == small || data == big;
                    if !known || data.len() as u64 != size {
                        bad.lock().unwrap().push(format!(
                            "read {} bytes (a known version: {known}), fstat said {size}",
                            data.len()
                        ));
                    }
                }
            });
        }
        s.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                let _ = std::fs::metadata(&frame);
            }
        });
    });
    let bad = bad.into_inner().unwrap();
    let (reads, edits) = (reads.into_inner(), edits.into_inner());
    println!(
        "{edits} renames over the frame, {reads} reads, {} bad",
        bad.len()
    );
    assert!(edits > 20 && reads > 100, "{edits} edits, {reads} reads");
    assert!(
        bad.is_empty(),
        "{} bad reads, first: {:?}",
        bad.len(),
        &bad[..bad.len().min(5)]
    );
    // the mount and the binary hold the last version
    let last = if edits % 2 == 0 { &small } else { &big };
    assert_eq!(&std::fs::read(&frame).unwrap(), last);
    let after = e.dir.path().join("after");
    dump(&e.game.join("anims/fx.gaf"), &after);
    let indices = |png: &[u8]| match decode_png(png).unwrap().pixels {
        PngPixels::Indexed { indices, .. } => indices,
        _ => panic!("dump PNGs are indexed"),
    };
    assert_eq!(
        indices(&std::fs::read(after.join(&rel)).unwrap()),
        indices(last)
    );
}
