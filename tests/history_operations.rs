//! The history through a real mount with real tools (SEMANTICS.md, "State directory"): a
//! `git checkout` changing 12 frames, and an rsync of an edited tree, are one operation
//! each, one version in the history (the binary before it, kept as the replaced file itself,
//! not a copy), and the status lists each of its commits; the original (the binary before
//! the first commit) is never evicted by later versions and `tafs restore --original` brings
//! it back.

mod common;
mod mount_common;
mod writeback_common;

use common::{tafs_ok, TAFS};
use mount_common::{fuse_available, mount_state, sh};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use tafs::formats::gaf;
use writeback_common::edit_png;

/// The sample GAF with its `pulse` sequence twice as long: 12 frames.
fn twelve_frames() -> Vec<u8> {
    let mut g = tafs::sample::animated_gaf();
    let more = g.sequences[0].frames.clone();
    g.sequences[0].frames.extend(more);
    gaf::write(&g).unwrap()
}

fn git(repo: &Path, args: &str) -> String {
    sh(&format!(
        "cd {} && git -c user.name=t -c user.email=t@t -c advice.detachedHead=false {args}",
        repo.display()
    ))
}

/// `tafs history` of `bin`: its lines, newest first.
fn history(bin: &Path, state: &Path) -> Vec<String> {
    tafs_ok(&[
        "history",
        bin.to_str().unwrap(),
        "--state-dir",
        state.to_str().unwrap(),
    ])
    .lines()
    .map(str::to_string)
    .collect()
}

#[test]
fn a_twelve_frame_git_checkout_is_one_version_and_the_original_stays() {
    if !fuse_available() || std::process::Command::new("git").output().is_err() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    let game = w.join("game");
    let bin = game.join("anims/fx.gaf");
    let orig = twelve_frames();
    mount_common::put(&bin, &orig);
    let (mnt, state) = (w.join("mnt"), w.join("state"));

    // a repository of the dump: `main` as dumped, `edit` with every pulse frame edited
    let repo = w.join("repo");
    tafs_ok(&[
        "gaf",
        "dump",
        bin.to_str().unwrap(),
        "-t",
        repo.to_str().unwrap(),
    ]);
    git(
        &repo,
        "init -q -b main && git add -A && git commit -qm dump",
    );
    git(&repo, "checkout -q -b edit");
    for i in 0..12 {
        let p = repo.join(format!("pulse/{i}.png"));
        let (png, _) = edit_png(&std::fs::read(&p).unwrap(), 0x40 + i as u8);
        std::fs::write(&p, png).unwrap();
    }
    git(&repo, "commit -qam edit && git checkout -q main");

    {
        let m = mount_state(&game, &mnt, &state, &["--operation-gap", "4"]);
        let asset = m.mnt.join("anims/fx.gaf");
        let into = format!(
            "--git-dir={} --work-tree={}",
            repo.join(".git").display(),
            asset.display()
        );
        // the mount's asset folder checked out at `edit`: 12 frames written
        let ino = std::fs::metadata(&bin).unwrap().ino();
        git(&repo, &format!("{into} checkout -q -f edit"));
        assert_ne!(std::fs::read(&bin).unwrap(), orig, "nothing committed");
        // the asset shows the checked-out frames (the previews follow the binary)
        let st = git(
            &repo,
            &format!("{into} status --porcelain -- . ':(exclude)*/animated.png'"),
        );
        assert!(st.trim().is_empty(), "{st}");
        // one version: the binary before the checkout, marked as the original
        let h = history(&bin, &state);
        assert_eq!(h.len(), 1, "{h:?}");
        assert!(h[0].ends_with("\toriginal"), "{h:?}");
        let kept = h[0].split('\t').nth(2).unwrap();
        assert!(std::fs::read(kept).unwrap() == orig);
        // kept without a copy: the version is the file the binary was (state and game
        // folder are on one file system here), now linked only from the history
        let km = std::fs::metadata(kept).unwrap();
        assert_eq!(
            (km.ino(), km.nlink()),
            (ino, 1),
            "not the replaced file itself"
        );
        // the status lists each commit of the checkout, and no "changed nothing"
        let text = sh(&format!("{TAFS} status {}", asset.display()));
        assert!(
            text.contains("last operation: 12 commits"),
            "the commits of the checkout: {text}"
        );
        assert_eq!(
            text.lines()
                .filter(|l| l.trim_start().starts_with("committed "))
                .count(),
            12,
            "{text}"
        );
        assert!(!text.contains("changed nothing"), "{text}");
        // after the gap, checking `main` out again is a second operation: a second version
        std::thread::sleep(std::time::Duration::from_millis(4500));
        git(&repo, &format!("{into} checkout -q -f main"));
        assert_eq!(history(&bin, &state).len(), 2);
        // an rsync of an edited tree, after the gap, is one more operation: one more version
        std::thread::sleep(std::time::Duration::from_millis(4500));
        let tree = w.join("tree");
        sh(&format!(
            "rsync -a {}/ {}/",
            asset.display(),
            tree.display()
        ));
        for i in [1, 5, 9] {
            let p = tree.join(format!("pulse/{i}.png"));
            let (png, _) = edit_png(&std::fs::read(&p).unwrap(), 0x60 + i as u8);
            std::fs::write(&p, png).unwrap();
        }
        let before = std::fs::read(&bin).unwrap();
        sh(&format!(
            "rsync -a {}/ {}/",
            tree.display(),
            asset.display()
        ));
        assert!(
            std::fs::read(&bin).unwrap() != before,
            "rsync committed nothing"
        );
        let h = history(&bin, &state);
        assert_eq!(h.len(), 3, "{h:?}");
        let newest = h[0].split('\t').nth(2).unwrap();
        assert!(
            std::fs::read(newest).unwrap() == before,
            "not the binary before the rsync"
        );
        let text = sh(&format!("{TAFS} status {}", asset.display()));
        assert!(text.contains("last operation: 3 commits"), "{text}");
    }

    // every save its own operation: 12 more versions; the original is not evicted
    {
        let m = mount_state(&game, &mnt, &state, &["--operation-gap", "0"]);
        for i in 0..12 {
            let p = m.mnt.join(format!("anims/fx.gaf/pulse/{i}.png"));
            let (png, _) = edit_png(&std::fs::read(&p).unwrap(), 0x80 + i as u8);
            let tmp = w.join("f.png");
            std::fs::write(&tmp, png).unwrap();
            sh(&format!("cp {} {}", tmp.display(), p.display()));
        }
    }
    let h = history(&bin, &state);
    assert_eq!(h.len(), tafs::fs::stage::HISTORY_KEEP + 1, "{h:?}");
    assert!(h.last().unwrap().ends_with("\toriginal"), "{h:?}");
    let out = tafs_ok(&[
        "restore",
        bin.to_str().unwrap(),
        "--original",
        "--state-dir",
        state.to_str().unwrap(),
    ]);
    assert!(out.starts_with("restored"), "{out}");
    assert!(std::fs::read(&bin).unwrap() == orig, "the original is back");
}
