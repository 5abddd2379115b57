//! The writable merged view (`tafs mount --merged --into TARGET`, real mounts of the built
//! binary): a whole session of edits through the view lands in TARGET (a folder and a
//! `.ufo`), on a self-made game folder and on one made of the corpus archives and loose
//! files. Checked: a frame edited in a GAF only an archive holds (TARGET's GAF equals
//! `tafs gaf build` of the edited view, the pixel read back by Pillow), an FBI edited with
//! `sed -i`, a new map copied in by rsync (a second rsync transfers nothing and leaves
//! TARGET as it is), the deletion rules, `tafs which`/`status`/`diff`, a remount showing the
//! mod, stock shown again once TARGET is gone, and every stock file byte-identical after
//! it all.

mod common;
mod mount_common;

use common::{py, tafs, tafs_ok};
use mount_common::{fuse_available, put, sh, Mount};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use tafs::formats::hpi;

/// What a session edits in a game folder.
struct Plan {
    /// A GAF only an archive holds.
    gaf: &'static str,
    /// A frame of it (a path inside the exploded GAF).
    frame: &'static str,
    /// An FBI (or other text file) only an archive holds, and a `sed` expression changing it.
    fbi: &'static str,
    sed: (&'static str, &'static str),
    /// A file only the stock game holds, to try to delete.
    stock_only: &'static str,
    /// A map to unpack and rsync in as a new one.
    map: PathBuf,
    /// The source `tafs which` names for `gaf` and `fbi` before the session.
    gaf_source: &'static str,
    fbi_source: &'static str,
}

/// Every file of `dir` (recursively) with its bytes, except under `skip`.
fn hash_tree(dir: &Path, skip: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.starts_with(skip) {
                continue;
            }
            if p.is_dir() {
                stack.push(p);
            } else {
                out.insert(p.clone(), std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

/// The bytes TARGET holds at `path` (a folder's file, or an archive's member; any case).
fn in_target(target: &Path, path: &str) -> Option<Vec<u8>> {
    if target.is_dir() {
        return std::fs::read(target.join(path)).ok();
    }
    let data = std::fs::read(target).unwrap();
    let a = hpi::parse(&data, &hpi::HpiLimits::default()).unwrap();
    let i = a.find(path.as_bytes())?;
    let hpi::EntryKind::File(f) = a.entries[i].kind else {
        return None;
    };
    Some(a.read(&data, &f, &hpi::HpiLimits::default()).unwrap())
}

/// The sorted names of folder `p`.
fn names(p: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(p)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    v.sort();
    v
}

fn which(p: &Path) -> String {
    tafs_ok(&["which", p.to_str().unwrap()]).trim().to_string()
}

fn mount_into(game: &Path, mnt: &Path, state: &Path, into: &str) -> Mount {
    mount_common::mount(
        game,
        mnt,
        &[
            "--merged",
            "--into",
            into,
            "--ttl",
            "0.2",
            // TARGET is read right after each save: an archive TARGET commits at once
            "--archive-commit-delay",
            "0",
            "--state-dir",
            state.to_str().unwrap(),
        ],
    )
}

/// Runs the whole session on `game` with TARGET `into` (relative to the game folder).
fn session(game: &Path, into: &str, plan: &Plan) {
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    let mnt = w.join("mnt");
    let state = w.join("state");
    let target = game.join(into);
    assert!(!target.exists());
    let before = hash_tree(game, &target);

    let m = mount_into(game, &mnt, &state, into);
    assert!(target.exists(), "TARGET is created when missing");
    let v = |p: &str| m.mnt.join(p);
    assert_eq!(which(&v(plan.gaf)), plan.gaf_source);
    assert_eq!(which(&v(plan.fbi)), plan.fbi_source);
    let frame_before = std::fs::read(v(plan.frame)).unwrap();
    let (gdir, gname) = plan.gaf.rsplit_once('/').unwrap();
    let listed_before = names(&v(gdir));
    // TARGET inside the game folder is no stock source (only the top)
    assert!(
        !v(into).exists(),
        "{into} is not shown as a loose file or folder"
    );

    // 1. a frame of a GAF only an archive holds, edited as an image editor would save it
    let edited = w.join("edited.png");
    let frame = v(plan.frame);
    let new_index = py(&format!(
        "from PIL import Image\n\
         im = Image.open('{}')\n\
         assert im.mode == 'P'\n\
         v = im.getpixel((1, 1))\n\
         n = 7 if v != 7 else 8\n\
         im.putpixel((1, 1), n)\n\
         im.save('{}')\n\
         print(n)",
        frame.display(),
        edited.display()
    ));
    sh(&format!("cp '{}' '{}'", edited.display(), frame.display()));
    let got = py(&format!(
        "from PIL import Image\nprint(Image.open('{}').getpixel((1, 1)))",
        frame.display()
    ));
    assert_eq!(
        got.trim(),
        new_index.trim(),
        "the view shows the edited pixel"
    );
    let copy = w.join("gaf-view");
    sh(&format!(
        "cp -r '{}' '{}'",
        v(plan.gaf).display(),
        copy.display()
    ));
    let built = w.join("built.gaf");
    tafs_ok(&[
        "gaf",
        "build",
        copy.to_str().unwrap(),
        "--target",
        built.to_str().unwrap(),
    ]);
    assert_eq!(
        in_target(&target, plan.gaf).expect("the GAF is copied into TARGET"),
        std::fs::read(&built).unwrap(),
        "TARGET's GAF is `tafs gaf build` of the edited view"
    );
    let src = which(&v(plan.gaf));
    assert!(src.starts_with("mod:"), "{src}");
    assert!(src.ends_with(plan.gaf), "{src}");
    let all = tafs_ok(&["which", "--all", v(plan.frame).to_str().unwrap()]);
    assert_eq!(all.lines().nth(1), Some(plan.gaf_source), "{all}");

    // the folder lists the mod's GAF once, among the stock entries it had before
    let listed = names(&v(gdir));
    assert_eq!(
        listed, listed_before,
        "same names, TARGET's {gname} in place of the stock one"
    );

    // 2. an FBI edited with sed -i (a new file renamed over the stock name)
    let fbi_before = std::fs::read(v(plan.fbi)).unwrap();
    sh(&format!(
        "sed -i 's/{}/{}/' '{}'",
        plan.sed.0,
        plan.sed.1,
        v(plan.fbi).display()
    ));
    // (the expression matches on one line only: sed's edit is one replacement)
    let at = fbi_before
        .windows(plan.sed.0.len())
        .position(|x| x == plan.sed.0.as_bytes())
        .expect("the FBI has the text replaced");
    let mut expect = fbi_before[..at].to_vec();
    expect.extend_from_slice(plan.sed.1.as_bytes());
    expect.extend_from_slice(&fbi_before[at + plan.sed.0.len()..]);
    let fbi_mod = in_target(&target, plan.fbi).expect("the FBI is in TARGET");
    assert_eq!(fbi_mod, expect);
    assert_eq!(std::fs::read(v(plan.fbi)).unwrap(), fbi_mod);
    assert!(which(&v(plan.fbi)).starts_with("mod:"));
    // a file of TARGET and a stock one: no security labels (`ls -l` then asks once per file
    // system), other attributes absent
    for p in [v(plan.fbi), v(gdir)] {
        let got = sh(&format!(
            "python3 -c 'import os,sys,errno\nfor n in sys.argv[2:]:\n  try: os.getxattr(sys.argv[1], n); print(\"ok\")\n  except OSError as e: print(\"EOPNOTSUPP\" if e.errno == errno.EOPNOTSUPP else errno.errorcode[e.errno])' '{}' security.selinux user.other user.tafs.source",
            p.display()
        ));
        assert_eq!(got, "EOPNOTSUPP\nENODATA\nok\n", "{}", p.display());
    }

    // 3. a new map: rsync of an unpacked dump; a second rsync transfers nothing
    let dump = w.join("dump");
    tafs_ok(&[
        "tnt",
        "unpack",
        plan.map.to_str().unwrap(),
        "--target",
        dump.to_str().unwrap(),
    ]);
    let packed = w.join("packed.tnt");
    tafs_ok(&[
        "tnt",
        "pack",
        dump.to_str().unwrap(),
        "--target",
        packed.to_str().unwrap(),
    ]);
    let new_map = v("maps/newmap.tnt");
    sh(&format!(
        "rsync -a '{}/' '{}/'",
        dump.display(),
        new_map.display()
    ));
    assert_eq!(
        in_target(&target, "maps/newmap.tnt").expect("the new map is in TARGET"),
        std::fs::read(&packed).unwrap(),
        "the new map is `tafs tnt pack` of the dump"
    );
    let target_meta = |p: &Path| {
        let m = std::fs::metadata(p).unwrap();
        (m.len(), m.modified().unwrap())
    };
    let stamp = if target.is_dir() {
        target.join("maps/newmap.tnt")
    } else {
        target.clone()
    };
    let t0 = target_meta(&stamp);
    let again = sh(&format!(
        "rsync -a --itemize-changes '{}/' '{}/'",
        dump.display(),
        new_map.display()
    ));
    assert!(
        again
            .lines()
            .all(|l| !l.starts_with('>') && !l.starts_with('c')),
        "the second rsync transfers nothing: {again}"
    );
    assert_eq!(target_meta(&stamp), t0, "TARGET is not rewritten");

    // 4. status and diff
    let status = tafs_ok(&["status", m.mnt.to_str().unwrap()]);
    assert!(
        status.contains(&format!("overrides {}", plan.gaf)),
        "{status}"
    );
    assert!(
        status.contains(&format!("overrides {}", plan.fbi)),
        "{status}"
    );
    assert!(status.contains("adds maps/newmap.tnt"), "{status}");
    let diff = tafs_ok(&["diff", m.mnt.to_str().unwrap()]);
    assert!(
        diff.contains(&format!("M\t{}\t{}", plan.gaf, plan.gaf_source)),
        "{diff}"
    );
    assert!(
        diff.contains(&format!("M\t{}\t{}", plan.fbi, plan.fbi_source)),
        "{diff}"
    );
    assert!(diff.contains("A\tmaps/newmap.tnt\n"), "{diff}");

    // 5. letter case: the copies keep the stock view's spelling; a name differing from a
    // shown one only in case is refused
    if target.is_dir() {
        for p in [plan.gaf, plan.fbi] {
            assert!(
                target.join(p).is_file(),
                "{p} spelled as the stock view shows it"
            );
        }
    }
    let (fdir, fname) = plan.fbi.rsplit_once('/').unwrap();
    let twin = v(&format!("{fdir}/{}", fname.to_ascii_lowercase()));
    let twin = if twin == v(plan.fbi) {
        v(&format!("{fdir}/{}", fname.to_ascii_uppercase()))
    } else {
        twin
    };
    let e = std::fs::write(&twin, b"twin").unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EEXIST), "{e}");
    // a new folder and file land in TARGET
    std::fs::create_dir(v("newdir")).unwrap();
    std::fs::write(v("newdir/readme.txt"), b"new").unwrap();
    assert_eq!(in_target(&target, "newdir/readme.txt").unwrap(), b"new");

    // 6. deletion rules: a new file of TARGET goes; a stock-only file cannot
    let note = v("maps/newnote.txt");
    std::fs::write(&note, b"mod note").unwrap();
    assert_eq!(in_target(&target, "maps/newnote.txt").unwrap(), b"mod note");
    std::fs::remove_file(&note).unwrap();
    assert!(!note.exists());
    assert!(in_target(&target, "maps/newnote.txt").is_none());
    let e = std::fs::remove_file(v(plan.stock_only)).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EROFS), "{e}");
    assert!(v(plan.stock_only).exists());
    let (sdir, _) = plan.stock_only.rsplit_once('/').unwrap();
    let e = std::fs::remove_dir(v(sdir)).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EROFS), "{e}");
    let e = std::fs::rename(v(plan.stock_only), v("moved.tdf")).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EROFS), "{e}");
    let status = tafs_ok(&["status", m.mnt.to_str().unwrap()]);
    assert!(
        status.contains(&format!("{}: delete refused", plan.stock_only)),
        "{status}"
    );
    std::fs::remove_file(v("newdir/readme.txt")).unwrap();
    std::fs::remove_dir(v("newdir")).unwrap();
    assert!(!v("newdir").exists());
    drop(m);

    // 7. a remount shows the mod
    let m = mount_into(game, &mnt, &state, into);
    let v = |p: &str| m.mnt.join(p);
    assert_eq!(std::fs::read(v(plan.fbi)).unwrap(), fbi_mod);
    let got = py(&format!(
        "from PIL import Image\nprint(Image.open('{}').getpixel((1, 1)))",
        v(plan.frame).display()
    ));
    assert_eq!(got.trim(), new_index.trim());
    assert!(which(&v(plan.gaf)).starts_with("mod:"));
    // a file of TARGET holding the stock bytes again compares equal to them
    std::fs::write(v(plan.fbi), &fbi_before).unwrap();
    let diff = tafs_ok(&["diff", m.mnt.to_str().unwrap()]);
    assert!(
        diff.contains(&format!("=\t{}\t{}", plan.fbi, plan.fbi_source)),
        "{diff}"
    );
    assert!(
        diff.contains(&format!("M\t{}\t{}", plan.gaf, plan.gaf_source)),
        "{diff}"
    );
    // deleting a file TARGET holds shows the stock one again
    std::fs::remove_file(v(plan.fbi)).unwrap();
    assert_eq!(std::fs::read(v(plan.fbi)).unwrap(), fbi_before);
    assert_eq!(which(&v(plan.fbi)), plan.fbi_source);
    drop(m);

    // `tafs which` without a mount: TARGET first with --into; a top-level .ufo mod is what
    // the game itself picks (ufo above hpi)
    let g = game.to_str().unwrap();
    let w = tafs_ok(&["which", "--all", "--into", into, g, plan.gaf]);
    let first = w.lines().next().unwrap_or_default().to_string();
    assert_eq!(
        first,
        format!(
            "mod:{}:{}",
            std::path::absolute(&target).unwrap().display(),
            plan.gaf
        )
    );
    assert_eq!(w.lines().nth(1), Some(plan.gaf_source), "{w}");
    if !target.is_dir() {
        let plain = tafs_ok(&["which", g, plan.gaf]);
        assert_eq!(plain.trim(), format!("archive:{into}:{}", plan.gaf));
    }

    // 8. the stock sources are untouched; without TARGET the view is stock again
    assert_eq!(
        hash_tree(game, &target),
        before,
        "every stock file is byte-identical"
    );
    if target.is_dir() {
        std::fs::remove_dir_all(&target).unwrap();
    } else {
        std::fs::remove_file(&target).unwrap();
    }
    let m = mount_common::mount(game, &mnt, &["--merged"]);
    assert_eq!(std::fs::read(m.mnt.join(plan.frame)).unwrap(), frame_before);
    assert_eq!(which(&m.mnt.join(plan.gaf)), plan.gaf_source);
    assert!(!m.mnt.join("maps/newmap.tnt").exists());
}

fn file(name: &str, bytes: &[u8]) -> hpi::Node {
    hpi::Node::file(name.as_bytes().to_vec(), bytes.to_vec())
}

fn dir(name: &str, entries: Vec<hpi::Node>) -> hpi::Node {
    hpi::Node::dir(name.as_bytes().to_vec(), entries)
}

/// A self-made game folder: `totala1.hpi` (a GAF, an FBI), loose files, a map elsewhere.
fn self_made() -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let g = d.path().join("game");
    let gaf = tafs::formats::gaf::write(&tafs::sample::animated_gaf()).unwrap();
    let tree = vec![
        dir("anims", vec![file("Pulse.GAF", &gaf)]),
        dir(
            "UNITS",
            vec![file("ARMCOM.FBI", b"[UNITINFO]\n{\nName=Commander;\n}\n")],
        ),
    ];
    put(
        &g.join("totala1.hpi"),
        hpi::write(&tree, &hpi::WriteOptions::v1()).unwrap(),
    );
    put(&g.join("gamedata/sidedata.tdf"), b"[SIDE0]\n{\n}\n");
    put(&g.join("maps/.keep"), b"");
    let map = d.path().join("src.tnt");
    put(
        &map,
        tafs::formats::tnt::write(&tafs::sample::demo_map()).unwrap(),
    );
    (d, map)
}

#[test]
fn a_session_of_edits_lands_in_a_mod_folder_and_a_ufo() {
    if !fuse_available() {
        return;
    }
    for into in ["mods/mymod", "mymod.ufo"] {
        let (d, map) = self_made();
        let game = d.path().join("game");
        let plan = Plan {
            gaf: "anims/Pulse.GAF",
            frame: "anims/Pulse.GAF/pulse/0.png",
            fbi: "UNITS/ARMCOM.FBI",
            sed: ("Commander", "Kommandant"),
            stock_only: "gamedata/sidedata.tdf",
            map,
            gaf_source: "archive:totala1.hpi:anims/Pulse.GAF",
            fbi_source: "archive:totala1.hpi:UNITS/ARMCOM.FBI",
        };
        session(&game, into, &plan);
    }
}

#[test]
fn a_session_of_edits_on_the_corpus_game() {
    if !fuse_available() {
        return;
    }
    let Some(c) = common::corpus() else { return };
    for into in ["mods/mymod", "mymod.ufo"] {
        let d = tempfile::tempdir().unwrap();
        let game = d.path().join("game");
        sh(&format!(
            "cp -r '{}' '{}' && chmod -R u+w '{}'",
            c.join("game").display(),
            game.display(),
            game.display()
        ));
        // the GAF edited is only in TADEMO.ufo
        std::fs::remove_file(game.join("anims/zzz_gadget.gaf")).unwrap();
        for a in ["TADEMO.ufo", "ArmImp.ufo", "Example.ufo", "ta3d.hpi"] {
            std::fs::copy(c.join("archives").join(a), game.join(a)).unwrap();
        }
        let plan = Plan {
            gaf: "anims/zzz_gadget.gaf",
            frame: "anims/zzz_gadget.gaf/zzz/0.png",
            fbi: "unitsE/zzz.fbi",
            sed: ("Objectname=zzz", "Objectname=yyy"),
            stock_only: "gamedata/sidedata.tdf",
            map: c.join("game/maps/example.tnt"),
            gaf_source: "archive:TADEMO.ufo:anims/zzz_gadget.gaf",
            fbi_source: "archive:TADEMO.ufo:unitsE/zzz.fbi",
        };
        session(&game, into, &plan);
    }
}

#[test]
fn without_into_the_merged_view_stays_read_only() {
    if !fuse_available() {
        return;
    }
    let (d, _) = self_made();
    let game = d.path().join("game");
    let mnt = d.path().join("mnt");
    let m = mount_common::mount(&game, &mnt, &["--merged"]);
    let e = std::fs::write(m.mnt.join("UNITS/ARMCOM.FBI"), b"x").unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EROFS));
    let out = tafs(&["diff", m.mnt.to_str().unwrap()]);
    assert!(!out.status.success(), "no diff without --into");
}

#[test]
fn a_target_that_is_no_folder_or_archive_or_the_game_itself_is_refused() {
    if !fuse_available() {
        return;
    }
    let (d, _) = self_made();
    let game = d.path().join("game");
    let mnt = d.path().join("mnt");
    std::fs::create_dir_all(&mnt).unwrap();
    let _guard = mount_common::UnmountGuard(mnt.clone());
    for (into, why) in [
        ("gamedata/sidedata.tdf", "neither a folder nor an archive"),
        (".", "cannot be the game folder"),
    ] {
        let out = tafs(&[
            "mount",
            "-d",
            "--merged",
            "--into",
            into,
            game.to_str().unwrap(),
            mnt.to_str().unwrap(),
        ]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{into}: mounted");
        assert!(err.contains(why), "{into}: {err}");
        assert!(!mount_common::is_mounted(&mnt));
    }
    let out = tafs(&[
        "mount",
        "--into",
        "mod",
        game.to_str().unwrap(),
        mnt.to_str().unwrap(),
    ]);
    assert!(!out.status.success(), "--into needs --merged");
}

#[test]
fn git_and_cp_into_the_view_land_in_the_mod() {
    if !fuse_available() {
        return;
    }
    let (d, _) = self_made();
    let game = d.path().join("game");
    let w = d.path();
    let repo = w.join("repo");
    sh(&format!(
        "mkdir -p '{r}' && cd '{r}' && git init -q && echo 'Name=Mine;' > mine.fbi && git add . \
         && git -c user.email=t@t -c user.name=t commit -qm one",
        r = repo.display()
    ));
    let m = mount_into(&game, &w.join("mnt"), &w.join("state"), "mods/mymod");
    let target = game.join("mods/mymod");
    sh(&format!(
        "git clone -q '{}' '{}'",
        repo.display(),
        m.mnt.join("UNITS/mine").display()
    ));
    assert_eq!(
        std::fs::read(target.join("UNITS/mine/mine.fbi")).unwrap(),
        b"Name=Mine;\n"
    );
    let st = sh(&format!(
        "cd '{}' && git status --porcelain",
        m.mnt.join("UNITS/mine").display()
    ));
    assert_eq!(st, "", "the clone is clean");
    // cp -a into a stock folder: the file lands in TARGET, the stock ones stay
    sh(&format!(
        "cp -a '{}' '{}'",
        repo.join("mine.fbi").display(),
        m.mnt.join("UNITS/mine.fbi").display()
    ));
    assert!(target.join("UNITS/mine.fbi").is_file());
    assert!(m.mnt.join("UNITS/ARMCOM.FBI").is_file());
    assert_eq!(names(&target.join("UNITS")), ["mine", "mine.fbi"]);
}
