//! Failures that must never be silent (real mounts of the built binary, real tools): a write
//! cut short by a full state folder leaves what was there before and says so.

mod common;
mod mount_common;
mod writeback_common;

use mount_common::{fuse_available, mount, put, sh};
use std::path::Path;

fn status(asset: &Path) -> String {
    std::fs::read_to_string(asset.join(".tafs-status")).unwrap_or_default()
}

/// Files under `dir` (paths relative to it).
fn files_under(dir: &Path) -> Vec<String> {
    common::files_with_ext(dir, &[""])
        .into_iter()
        .map(|p| p.strip_prefix(dir).unwrap().display().to_string())
        .collect()
}

#[test]
fn a_write_cut_short_by_a_full_state_folder_leaves_the_frame_as_it_was() {
    if !fuse_available() {
        println!("skipped: no FUSE");
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let game = t.path().join("game");
    let gaf = tafs::formats::gaf::write(&tafs::sample::animated_gaf()).unwrap();
    put(&game.join("anims/pulse.gaf"), &gaf);
    let state = t.path().join("state");
    std::fs::create_dir_all(&state).unwrap();
    let Some(_fs) = mount_common::small_tmpfs(&state, "1m") else {
        return;
    };
    // bigger than the state folder
    let big = t.path().join("edit.png");
    std::fs::write(&big, vec![7u8; 3 << 20]).unwrap();
    let mnt = t.path().join("mnt");
    let args = ["--ttl", "0", "--state-dir", state.to_str().unwrap()];
    let asset = mnt.join("anims/pulse.gaf");
    let frame = asset.join("pulse/0.png");
    let before;
    {
        let _m = mount(&game, &mnt, &args);
        before = std::fs::read(&frame).unwrap();
        let cp = std::process::Command::new("cp")
            .arg(&big)
            .arg(&frame)
            .output()
            .unwrap();
        assert!(!cp.status.success(), "cp onto the frame succeeded");
        let err = String::from_utf8_lossy(&cp.stderr);
        assert!(err.contains("No space left"), "{err}");
        // the frame is what it was, and the failure is named
        assert!(
            std::fs::read(&frame).unwrap() == before,
            "the frame changed"
        );
        let st = status(&asset);
        assert!(
            st.contains("writing pulse/0.png failed") && st.contains("No space left"),
            "{st}"
        );
        let staged = files_under(&state);
        assert!(
            staged.iter().all(|p| !p.ends_with("0.png")),
            "a partial frame is staged: {staged:?}"
        );
        // the room is free again: the next save commits
        let frame1 = asset.join("pulse/1.png");
        let png = std::fs::read(&frame1).unwrap();
        let (edited, _) = writeback_common::edit_png(&png, 200);
        std::fs::write(t.path().join("one.png"), &edited).unwrap();
        sh(&format!(
            "cp '{}' '{}'",
            t.path().join("one.png").display(),
            frame1.display()
        ));
        assert!(status(&asset).contains("committed"), "{}", status(&asset));
    }
    assert_ne!(std::fs::read(game.join("anims/pulse.gaf")).unwrap(), gaf);
    // and after a remount the frame is still the binary's
    let _m = mount(&game, &mnt, &args);
    assert!(
        std::fs::read(&frame).unwrap() == before,
        "the frame changed"
    );
}
