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

#[test]
fn a_sequence_renamed_in_sequence_csv_fails_the_save_and_says_to_rename_the_folder() {
    if !fuse_available() {
        println!("skipped: no FUSE");
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let game = t.path().join("game");
    let gaf = tafs::formats::gaf::write(&tafs::sample::animated_gaf()).unwrap();
    put(&game.join("anims/pulse.gaf"), &gaf);
    let state = t.path().join("state");
    let mnt = t.path().join("mnt");
    let asset = mnt.join("anims/pulse.gaf");
    let dump = t.path().join("dump");
    {
        let _m = mount(
            &game,
            &mnt,
            &["--ttl", "0", "--state-dir", state.to_str().unwrap()],
        );
        sh(&format!("cp -a '{}' '{}'", asset.display(), dump.display()));
        sh(&format!(
            "sed -i 's/,pulse,/,renamed,/' '{}'",
            asset.join("pulse/sequence.csv").display()
        ));
        let st = status(&asset);
        assert!(
            st.contains("error") && st.contains("rename its folder"),
            "not refused: {st}"
        );
        assert!(std::fs::read(game.join("anims/pulse.gaf")).unwrap() == gaf);
        // renaming the folder (sequence.csv put back) renames the sequence
        sh(&format!(
            "sed -i 's/,renamed,/,pulse,/' '{0}/pulse/sequence.csv' && mv '{0}/pulse' '{0}/renamed'",
            asset.display()
        ));
        assert!(status(&asset).contains("committed"), "{}", status(&asset));
    }
    let names: Vec<String> = tafs::formats::gaf::parse(
        &std::fs::read(game.join("anims/pulse.gaf")).unwrap(),
        &Default::default(),
    )
    .unwrap()
    .sequences
    .iter()
    .map(|s| s.name_str())
    .collect();
    assert_eq!(names, ["renamed", "panel", "turret"]);
    // `tafs gaf build` of the same edit refuses it too
    sh(&format!(
        "sed -i 's/,pulse,/,renamed,/' '{}'",
        dump.join("pulse/sequence.csv").display()
    ));
    let out = common::tafs(&[
        "gaf",
        "build",
        dump.to_str().unwrap(),
        "-t",
        t.path().join("out.gaf").to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("rename its folder"));
}

#[test]
fn a_sequence_folder_copied_with_cp_keeps_its_sequence_csv() {
    if !fuse_available() {
        println!("skipped: no FUSE");
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let game = t.path().join("game");
    let gaf = tafs::formats::gaf::write(&tafs::sample::animated_gaf()).unwrap();
    put(&game.join("anims/pulse.gaf"), &gaf);
    let state = t.path().join("state");
    let mnt = t.path().join("mnt");
    let asset = mnt.join("anims/pulse.gaf");
    let _m = mount(
        &game,
        &mnt,
        &["--ttl", "0", "--state-dir", state.to_str().unwrap()],
    );
    for (cmd, to) in [("cp -r", "copy2"), ("cp -a", "copy3")] {
        // the copy, then a stat of its sequence.csv before anything lists the folder
        let out = sh(&format!(
            "cd '{}' && {cmd} pulse {to} && cat {to}/sequence.csv",
            asset.display()
        ));
        assert!(
            out.lines()
                .nth(1)
                .is_some_and(|l| l.contains(&format!(",{to},"))),
            "{cmd}: {to}/sequence.csv is {out:?}"
        );
    }
    let names: Vec<String> = tafs::formats::gaf::parse(
        &std::fs::read(game.join("anims/pulse.gaf")).unwrap(),
        &Default::default(),
    )
    .unwrap()
    .sequences
    .iter()
    .map(|s| s.name_str())
    .collect();
    assert_eq!(names, ["pulse", "copy3", "copy2", "panel", "turret"]);
}

#[test]
fn a_dump_with_a_renamed_sequence_folder_builds_in_the_mount_as_gaf_build_builds_it() {
    if !fuse_available() {
        println!("skipped: no FUSE");
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let game = t.path().join("game");
    std::fs::create_dir_all(game.join("anims")).unwrap();
    let src = t.path().join("pulse.gaf");
    std::fs::write(
        &src,
        tafs::formats::gaf::write(&tafs::sample::animated_gaf()).unwrap(),
    )
    .unwrap();
    let dump = t.path().join("dump");
    common::tafs_ok(&[
        "gaf",
        "dump",
        src.to_str().unwrap(),
        "-t",
        dump.to_str().unwrap(),
    ]);
    // renamed after the dump: metadata.json still lists `pulse`
    std::fs::rename(dump.join("pulse"), dump.join("renamed")).unwrap();
    let built = t.path().join("built.gaf");
    common::tafs_ok(&[
        "gaf",
        "build",
        dump.to_str().unwrap(),
        "-t",
        built.to_str().unwrap(),
    ]);
    let state = t.path().join("state");
    let mnt = t.path().join("mnt");
    let _m = mount(
        &game,
        &mnt,
        &["--ttl", "0", "--state-dir", state.to_str().unwrap()],
    );
    let asset = mnt.join("anims/new.gaf");
    std::fs::create_dir(&asset).unwrap();
    sh(&format!(
        "cp -r '{}/.' '{}/'",
        dump.display(),
        asset.display()
    ));
    let bin = game.join("anims/new.gaf");
    assert!(bin.exists(), "no binary; status: {}", status(&asset));
    assert!(
        std::fs::read(&bin).unwrap() == std::fs::read(&built).unwrap(),
        "the mount built another binary than gaf build"
    );
}

/// The palette indices of a PNG the view wrote.
fn indices(png: &[u8]) -> Vec<u8> {
    match tafs::view::image::decode_png(png).unwrap().pixels {
        tafs::view::image::PngPixels::Indexed { indices, .. } => indices,
        _ => panic!("dump PNGs are indexed"),
    }
}

#[test]
fn rsync_into_a_stock_gaf_through_a_mod_keeps_the_folders_it_entered_valid() {
    if !fuse_available() {
        println!("skipped: no FUSE");
        return;
    }
    for into in ["mods/mine", "mine.ufo"] {
        let t = tempfile::tempdir().unwrap();
        let game = t.path().join("game");
        let gaf = tafs::formats::gaf::write(&tafs::sample::animated_gaf()).unwrap();
        put(&game.join("anims/pulse.gaf"), &gaf);
        let mnt = t.path().join("mnt");
        let bk = t.path().join("bk");
        let edited;
        {
            let state = t.path().join("state");
            let _m = mount(
                &game,
                &mnt,
                &[
                    "--ttl",
                    "0",
                    "--state-dir",
                    state.to_str().unwrap(),
                    "--merged",
                    "--into",
                    into,
                ],
            );
            let asset = mnt.join("anims/pulse.gaf");
            sh(&format!(
                "rsync -a '{}/' '{}/'",
                asset.display(),
                bk.display()
            ));
            let frame = bk.join("pulse/1.png");
            edited = writeback_common::edit_png(&std::fs::read(&frame).unwrap(), 200).0;
            std::fs::write(&frame, &edited).unwrap();
            // an edit made later than the dump (rsync compares size and mtime)
            sh(&format!("touch -d '2030-01-01' '{}'", frame.display()));
            let out = std::process::Command::new("rsync")
                .arg("-a")
                .arg(format!("{}/", bk.display()))
                .arg(format!("{}/", asset.display()))
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{into}: rsync: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        assert!(
            std::fs::read(game.join("anims/pulse.gaf")).unwrap() == gaf,
            "the stock GAF changed"
        );
        // what the mod holds now, through a mount with no staged files
        let state2 = t.path().join("state2");
        let _m = mount(
            &game,
            &mnt,
            &["--ttl", "0", "--state-dir", state2.to_str().unwrap()],
        );
        // (a folder mod and an archive mod alike show as folders)
        let in_mod = mnt.join(into).join("anims/pulse.gaf/pulse/1.png");
        assert_eq!(
            indices(&std::fs::read(&in_mod).unwrap()),
            indices(&edited),
            "{into}: the mod's frame is not the edit"
        );
    }
}

#[test]
fn a_push_after_a_remount_sends_nothing_again() {
    if !fuse_available() {
        println!("skipped: no FUSE");
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let game = t.path().join("game");
    let gaf = tafs::formats::gaf::write(&tafs::sample::animated_gaf()).unwrap();
    put(&game.join("anims/pulse.gaf"), &gaf);
    // the binary older than the edit below (rsync compares size and mtime)
    sh(&format!(
        "touch -d '2020-01-01' '{}'",
        game.join("anims/pulse.gaf").display()
    ));
    let state = t.path().join("state");
    let mnt = t.path().join("mnt");
    let bk = t.path().join("bk");
    let args = ["--ttl", "0", "--state-dir", state.to_str().unwrap()];
    let asset = mnt.join("anims/pulse.gaf");
    let push = || {
        sh(&format!(
            "rsync -a --itemize-changes '{}/' '{}/' | grep -c '^>f' || true",
            bk.display(),
            asset.display()
        ))
        .trim()
        .parse::<u32>()
        .unwrap()
    };
    {
        let _m = mount(&game, &mnt, &args);
        sh(&format!(
            "rsync -a '{}/' '{}/'",
            asset.display(),
            bk.display()
        ));
        let frame = bk.join("pulse/1.png");
        let edited = writeback_common::edit_png(&std::fs::read(&frame).unwrap(), 200).0;
        std::fs::write(&frame, &edited).unwrap();
        assert_eq!(push(), 1, "the first push sends the edited frame");
        // nothing of the asset is looked at before the unmount
    }
    assert!(std::fs::read(game.join("anims/pulse.gaf")).unwrap() != gaf);
    let _m = mount(&game, &mnt, &args);
    // the sequence's animated.png is a preview the commit changed: sent once, kept as written
    let second = push();
    assert!(second <= 1, "the push after a remount sent {second} files");
    assert_eq!(push(), 0, "a third push sent files");
}
