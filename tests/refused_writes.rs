//! Files whose writes no build reads refuse them at `open` (`EROFS`), show no write bit and
//! stage nothing (SEMANTICS, "Files that refuse writes"): the renderings of a loose 3DO
//! model, of an archive's 3DO member, and of both through `--merged --into` (real mounts of
//! the built binary, Python's `os.open` and the shell's `>>`).

mod common;
mod mount_common;

use mount_common::{fuse_available, mount, put, sh};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use tafs::formats::hpi;

/// A game folder with a loose model, an archive holding one and a GAF beside them.
fn game(dir: &Path) {
    let model = tafs::sample::demo_model_3do();
    put(&dir.join("objects3d/demo.3do"), &model);
    let gaf = tafs::formats::gaf::write(&tafs::sample::animated_gaf()).unwrap();
    put(&dir.join("anims/pulse.gaf"), &gaf);
    let root = vec![hpi::Node::dir(
        b"objects3d".to_vec(),
        vec![hpi::Node::file(b"boat.3do".to_vec(), model)],
    )];
    let ufo = hpi::write(&root, &hpi::WriteOptions::v1()).unwrap();
    put(&dir.join("models.ufo"), ufo);
}

/// Every way a tool opens an existing file for writing, through Python's `os.open`, each
/// printed as `flags errno` (0 when the open succeeded).
const OPENS: &str = r#"
import os, sys
p = sys.argv[1]
for name, fl in [("rdwr", os.O_RDWR), ("wronly", os.O_WRONLY),
                 ("append", os.O_WRONLY | os.O_APPEND), ("trunc", os.O_WRONLY | os.O_TRUNC),
                 ("creat", os.O_WRONLY | os.O_CREAT), ("rdwr-creat", os.O_RDWR | os.O_CREAT)]:
    try:
        fd = os.open(p, fl)
        os.write(fd, b"lost?")
        os.close(fd)
        print(name, 0)
    except OSError as e:
        print(name, e.errno)
"#;

/// Asserts that `folder` (a model's folder in a mount) refuses every write to its renderings
/// (`preview.png`, `textures/`), which no build reads, and shows no write bit on them; the
/// model's own files (`model.obj`, `model.mtl`, `pieces.csv`) build and stay writable.
fn refuses_renderings(folder: &Path) {
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode();
    for name in ["model.obj", "model.mtl", "pieces.csv"] {
        assert_ne!(
            mode(&folder.join(name)) & 0o200,
            0,
            "{name} shows no write bit"
        );
    }
    let f = folder.join("preview.png");
    let before = std::fs::read(&f).unwrap();
    assert_eq!(mode(&f) & 0o222, 0, "{f:?} shows a write bit");
    let out = sh(&format!(
        "python3 -c '{}' '{}'",
        OPENS.replace('\'', "\"'\"'"),
        f.display()
    ));
    assert_eq!(out.lines().count(), 6, "{out}");
    for line in out.lines() {
        assert!(
            line.ends_with(&format!(" {}", libc::EROFS)),
            "{f:?}: {line} (expected EROFS)"
        );
    }
    let echo = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("echo more >> '{}'", f.display()))
        .output()
        .unwrap();
    assert!(!echo.status.success(), "{f:?}: echo >> succeeded");
    assert_eq!(std::fs::read(&f).unwrap(), before, "{f:?} changed");
    assert_eq!(
        std::fs::remove_file(&f).unwrap_err().raw_os_error(),
        Some(libc::EROFS),
        "{f:?} removed"
    );
    let textures = folder.join("textures");
    if textures.is_dir() {
        let r = std::fs::write(textures.join("new.png"), b"x");
        assert_eq!(r.unwrap_err().raw_os_error(), Some(libc::EROFS));
    }
}

/// Files of `dir` and below, as paths relative to it.
fn files_under(dir: &Path) -> Vec<String> {
    common::files_with_ext(dir, &[""])
        .into_iter()
        .filter(|p| p.is_file())
        .map(|p| p.strip_prefix(dir).unwrap().display().to_string())
        .collect()
}

#[test]
fn writes_into_a_model_are_refused_at_open_and_stage_nothing() {
    if !fuse_available() {
        println!("skipped: no FUSE");
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let g = t.path().join("game");
    game(&g);
    let state = t.path().join("state");
    let mnt = t.path().join("mnt");
    let before: Vec<Vec<u8>> = ["objects3d/demo.3do", "models.ufo"]
        .iter()
        .map(|p| std::fs::read(g.join(p)).unwrap())
        .collect();
    {
        let _m = mount(
            &g,
            &mnt,
            &["--ttl", "0", "--state-dir", state.to_str().unwrap()],
        );
        refuses_renderings(&mnt.join("objects3d/demo.3do"));
        refuses_renderings(&mnt.join("models.ufo/objects3d/boat.3do"));
        // a GAF's frame beside them takes writes (the mount is writable)
        let frame = mnt.join("anims/pulse.gaf/pulse/0.png");
        assert_ne!(
            std::fs::metadata(&frame).unwrap().permissions().mode() & 0o200,
            0
        );
    }
    let staged: Vec<String> = files_under(&state)
        .into_iter()
        .filter(|p| p.contains("/files/"))
        .collect();
    assert!(
        staged.iter().all(|p| !p.contains(".3do")),
        "staged for refused writes: {staged:?}"
    );
    for (p, b) in ["objects3d/demo.3do", "models.ufo"].iter().zip(&before) {
        assert_eq!(&std::fs::read(g.join(p)).unwrap(), b, "{p} changed");
    }
}

#[test]
fn writes_into_a_model_through_a_mod_are_refused_and_copy_nothing_into_it() {
    if !fuse_available() {
        println!("skipped: no FUSE");
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let g = t.path().join("game");
    game(&g);
    let state = t.path().join("state");
    let mnt = t.path().join("mnt");
    {
        let _m = mount(
            &g,
            &mnt,
            &[
                "--ttl",
                "0",
                "--state-dir",
                state.to_str().unwrap(),
                "--merged",
                "--into",
                "mods/mine",
            ],
        );
        refuses_renderings(&mnt.join("objects3d/demo.3do"));
        refuses_renderings(&mnt.join("objects3d/boat.3do"));
    }
    let in_mod = g.join("mods/mine");
    let copied = if in_mod.exists() {
        files_under(&in_mod)
    } else {
        vec![]
    };
    assert!(copied.is_empty(), "copied into the mod: {copied:?}");
}

/// The names of a model's folder and of its `textures/` when there is one.
const LIST: &str = "ls -A . && if [ -d textures ]; then ls -A textures; fi";

/// Stats every name listed in a model's folder and its `textures/` and reads every file.
const READ_ALL: &str =
    "for f in $(ls -A .) $([ -d textures ] && ls -A textures | sed 's|^|textures/|'); \
     do stat \"$f\" >/dev/null && if [ -f \"$f\" ]; then cat \"$f\" >/dev/null; fi; done";

/// Staged files under a model's renderings (left in the state folder by a mount before
/// writes there were refused) are never served: a name with no generated counterpart is not
/// listed either, so every name `ls` shows can be `stat`ed and opened, and what is read is
/// the rendering.
#[test]
fn staged_leftovers_under_renderings_are_neither_listed_nor_served() {
    if !fuse_available() {
        println!("skipped: no FUSE");
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let g = t.path().join("game");
    game(&g);
    let state = t.path().join("state");
    let mnt = t.path().join("mnt");
    let args = ["--ttl", "0", "--state-dir", state.to_str().unwrap()];
    let folder = mnt.join("objects3d/demo.3do");
    let (preview, listing) = {
        let _m = mount(&g, &mnt, &args);
        // a save of pieces.csv as it is: the model gets a staging folder
        let pieces = std::fs::read(folder.join("pieces.csv")).unwrap();
        std::fs::write(folder.join("pieces.csv"), &pieces).unwrap();
        (
            std::fs::read(folder.join("preview.png")).unwrap(),
            sh(&format!("cd '{}' && {LIST}", folder.display())),
        )
    };
    // what an old mount left: a preview and a texture that it staged, a texture name the
    // model does not have
    let staged = files_under(&state)
        .into_iter()
        .find(|p| p.ends_with("/files/pieces.csv"))
        .expect("pieces.csv staged");
    let files = state.join(staged.strip_suffix("pieces.csv").unwrap());
    std::fs::create_dir_all(files.join("textures")).unwrap();
    std::fs::write(files.join("preview.png"), b"left over").unwrap();
    std::fs::write(files.join("textures/leftover.png"), b"left over").unwrap();
    let _m = mount(&g, &mnt, &args);
    // every name listed stats and opens; the left-over texture is not listed
    let out = sh(&format!(
        "cd '{}' && {LIST} && {READ_ALL}",
        folder.display()
    ));
    assert_eq!(out, listing, "the listing changed");
    assert!(!out.contains("leftover"), "{out}");
    assert_eq!(std::fs::read(folder.join("preview.png")).unwrap(), preview);
    assert_eq!(
        std::fs::metadata(folder.join("textures/leftover.png"))
            .unwrap_err()
            .raw_os_error(),
        Some(libc::ENOENT)
    );
}
