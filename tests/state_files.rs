//! What the state folder shows and keeps, through a real mount: history versions keep the
//! asset's mode and owner in 0700 folders (a second real user cannot read old versions of
//! a 0600 asset), `tafs history`/`tafs restore` never offer a version that does not decode,
//! and the root `.tafs-status` answers while another asset's commit is in progress.

mod mount_common;
mod writeback_common;

use mount_common::{as_second_user as as_other, fuse_available, mount, second_user};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const TAFS: &str = env!("CARGO_BIN_EXE_tafs");
const OTHER: &str = mount_common::SECOND_USER;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Whether the second user can read `p`.
fn other_reads(p: &Path) -> bool {
    Command::new("runuser")
        .args(["-u", OTHER, "--", "cat"])
        .arg(p)
        .output()
        .expect("runuser is missing: apt-get install -y util-linux")
        .status
        .success()
}

fn history_dir_files(state: &Path) -> Vec<std::path::PathBuf> {
    let mut v = Vec::new();
    for d in std::fs::read_dir(state.join("history")).unwrap().flatten() {
        for f in std::fs::read_dir(d.path()).unwrap().flatten() {
            v.push(f.path());
        }
    }
    v
}

/// Saves frames.csv of `asset` unchanged through the mount: a commit of the asset.
fn resave(mnt: &Path, asset: &str) {
    let seq = std::fs::read_dir(mnt.join(asset))
        .unwrap()
        .flatten()
        .find(|e| e.path().join("frames.csv").exists())
        .unwrap()
        .path();
    let csv = std::fs::read(seq.join("frames.csv")).unwrap();
    std::fs::write(seq.join("frames.csv"), csv).unwrap();
}

#[test]
fn history_keeps_the_asset_mode_and_restore_refuses_broken_versions() {
    if !fuse_available() || !second_user() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    std::fs::set_permissions(t.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let game = t.path().join("game");
    std::fs::create_dir_all(&game).unwrap();
    let gaf = game.join("fx.gaf");
    std::fs::write(&gaf, writeback_common::sample_bytes()).unwrap();
    std::fs::set_permissions(&gaf, std::fs::Permissions::from_mode(0o600)).unwrap();
    let state = t.path().join("state");
    {
        let m = mount(
            &game,
            &t.path().join("mnt"),
            &["--ttl", "0", "--state-dir", s(&state)],
        );
        let seq = std::fs::read_dir(m.mnt.join("fx.gaf"))
            .unwrap()
            .flatten()
            .find(|e| e.path().join("0.png").exists())
            .unwrap()
            .path();
        let png = std::fs::read(seq.join("0.png")).unwrap();
        let (edited, n) = writeback_common::edit_png(&png, 5);
        assert!(n > 0);
        std::fs::write(seq.join("0.png"), edited).unwrap();
    }
    let versions = history_dir_files(&state);
    assert_eq!(versions.len(), 1, "{versions:?}");
    let v = &versions[0];
    let meta = std::fs::metadata(v).unwrap();
    assert_eq!(meta.mode() & 0o777, 0o600, "history keeps the asset's mode");
    assert_eq!(meta.uid(), std::fs::metadata(&gaf).unwrap().uid());
    let hdir = std::fs::metadata(v.parent().unwrap()).unwrap();
    assert_eq!(hdir.mode() & 0o777, 0o700);
    assert!(
        !other_reads(v),
        "another user reads an old version of a 0600 asset"
    );

    // a truncated version (as an interrupted write of an older release left it)
    let broken = v.parent().unwrap().join("99999999999999999999-fx.gaf");
    std::fs::write(&broken, &std::fs::read(v).unwrap()[..40]).unwrap();
    let before = std::fs::read(&gaf).unwrap();
    let o = Command::new(TAFS)
        .args(["history", s(&gaf), "--state-dir", s(&state)])
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&o.stdout);
    assert!(
        listed.lines().next().unwrap_or("").contains("broken"),
        "{listed}"
    );
    let o = Command::new(TAFS)
        .args(["restore", s(&gaf), "--state-dir", s(&state)])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("does not decode"));
    assert_eq!(std::fs::read(&gaf).unwrap(), before, "nothing installed");
    // the good version still restores
    let o = Command::new(TAFS)
        .args(["restore", s(&gaf), "2", "--state-dir", s(&state)])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

fn put(buf: &mut Vec<u8>, at: usize, bytes: &[u8]) {
    if buf.len() < at + bytes.len() {
        buf.resize(at + bytes.len(), 0);
    }
    buf[at..at + bytes.len()].copy_from_slice(bytes);
}

/// `n` distinct `side`² raw frames with noisy pixels: slow to render and read back.
fn big_gaf(side: u16, n: u32) -> Vec<u8> {
    let mut f = Vec::new();
    put(&mut f, 0, &0x0001_0100u32.to_le_bytes());
    put(&mut f, 4, &1u32.to_le_bytes());
    put(&mut f, 12, &16u32.to_le_bytes());
    let mut seq = Vec::new();
    seq.extend_from_slice(&(n as u16).to_le_bytes());
    seq.extend_from_slice(&[0; 6]);
    let mut name = [0u8; 32];
    name[..3].copy_from_slice(b"big");
    seq.extend_from_slice(&name);
    let first = 16 + seq.len() as u32 + 8 * n;
    let px = u32::from(side) * u32::from(side);
    for i in 0..n {
        seq.extend_from_slice(&(first + i * (24 + px)).to_le_bytes());
        seq.extend_from_slice(&1u32.to_le_bytes());
    }
    put(&mut f, 16, &seq);
    let mut x: u32 = 12345;
    for i in 0..n {
        let at = (first + i * (24 + px)) as usize;
        let mut h = Vec::new();
        h.extend_from_slice(&side.to_le_bytes());
        h.extend_from_slice(&side.to_le_bytes());
        h.extend_from_slice(&[0; 4]);
        h.extend_from_slice(&[9, 0, 0, 0]);
        h.extend_from_slice(&[0; 4]);
        h.extend_from_slice(&(at as u32 + 24).to_le_bytes());
        h.extend_from_slice(&[0; 4]);
        put(&mut f, at, &h);
        let pixels: Vec<u8> = (0..px)
            .map(|_| {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                (x >> 16) as u8
            })
            .collect();
        put(&mut f, at + 24, &pixels);
    }
    f
}

#[test]
fn root_status_answers_while_another_asset_commits() {
    if !fuse_available() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let game = t.path().join("game");
    std::fs::create_dir_all(&game).unwrap();
    std::fs::write(game.join("big.gaf"), big_gaf(1024, 8)).unwrap();
    std::fs::write(game.join("fx.gaf"), writeback_common::sample_bytes()).unwrap();
    let state = t.path().join("state");
    let m = mount(
        &game,
        &t.path().join("mnt"),
        &["--ttl", "0", "--state-dir", s(&state)],
    );
    // something staged on the other asset, so the root status has it to show
    let _ = std::fs::read_dir(m.mnt.join("fx.gaf")).unwrap().count();
    let mnt = m.mnt.clone();
    let start = Instant::now();
    let commit = std::thread::spawn(move || {
        resave(&mnt, "big.gaf");
        start.elapsed()
    });
    let mut slowest = Duration::ZERO;
    let mut busy_seen = false;
    while !commit.is_finished() {
        let t0 = Instant::now();
        let text = std::fs::read_to_string(m.mnt.join(".tafs-status")).unwrap();
        slowest = slowest.max(t0.elapsed());
        busy_seen |= text.contains("big.gaf: busy");
        std::thread::sleep(Duration::from_millis(20));
    }
    let took = commit.join().unwrap();
    println!("commit took {took:?}; slowest status read {slowest:?}; busy seen: {busy_seen}");
    assert!(
        slowest < Duration::from_millis(500),
        "a status read waited {slowest:?} during a {took:?} commit"
    );
    if took > Duration::from_secs(1) {
        assert!(busy_seen, "the committing asset is shown busy");
    }
}

#[test]
fn a_root_daemon_keeps_a_users_asset_theirs_after_their_first_save() {
    if !fuse_available() || !second_user() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    std::fs::set_permissions(t.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let game = t.path().join("game");
    std::fs::create_dir_all(&game).unwrap();
    let gaf = game.join("fx.gaf");
    std::fs::write(&gaf, writeback_common::sample_bytes()).unwrap();
    let uid = String::from_utf8(
        Command::new("id")
            .args(["-u", OTHER])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap()
    .trim()
    .parse::<u32>()
    .unwrap();
    std::os::unix::fs::chown(&gaf, Some(uid), Some(uid)).unwrap();
    std::os::unix::fs::chown(&game, Some(uid), Some(uid)).unwrap();
    let state = t.path().join("state");
    let m = mount(
        &game,
        &t.path().join("mnt"),
        &["--ttl", "0", "--state-dir", s(&state), "-o", "allow_other"],
    );
    let seq = std::fs::read_dir(m.mnt.join("fx.gaf"))
        .unwrap()
        .flatten()
        .find(|e| e.path().join("0.png").exists())
        .unwrap()
        .path();
    let png = std::fs::read(seq.join("0.png")).unwrap();
    let (edited, _) = writeback_common::edit_png(&png, 5);
    let tmp = t.path().join("edit.png");
    std::fs::write(&tmp, edited).unwrap();
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o644)).unwrap();
    // the owner's first save stages the folder of the frame
    assert!(as_other(&["cp", s(&tmp), s(&seq.join("0.png"))]));
    for p in [m.mnt.join("fx.gaf"), seq.clone(), seq.join("0.png")] {
        let md = std::fs::metadata(&p).unwrap();
        assert_eq!(md.uid(), uid, "{p:?} belongs to the asset's owner");
    }
    // and they can still work in it
    assert!(as_other(&["touch", s(&seq.join("notes.txt"))]));
    let (again, _) = writeback_common::edit_png(&png, 6);
    std::fs::write(&tmp, again).unwrap();
    assert!(as_other(&["cp", s(&tmp), s(&seq.join("0.png"))]));
    let md = std::fs::metadata(seq.join("notes.txt")).unwrap();
    assert_eq!(md.uid(), uid);
    assert_eq!(md.mode() & 0o022, 0, "the caller's umask (022) applies");
}

#[test]
fn root_status_lists_only_assets_the_caller_may_reach() {
    if !fuse_available() || !second_user() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    std::fs::set_permissions(t.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let game = t.path().join("game");
    std::fs::create_dir_all(game.join("private")).unwrap();
    std::fs::create_dir_all(game.join("public")).unwrap();
    std::fs::set_permissions(game.join("private"), std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::write(
        game.join("private/secret.gaf"),
        writeback_common::sample_bytes(),
    )
    .unwrap();
    std::fs::write(
        game.join("public/open.gaf"),
        writeback_common::sample_bytes(),
    )
    .unwrap();
    let state = t.path().join("state");
    let m = mount(
        &game,
        &t.path().join("mnt"),
        &["--ttl", "0", "--state-dir", s(&state), "-o", "allow_other"],
    );
    // a failed save in each: staged, with an error text
    for a in ["private/secret.gaf", "public/open.gaf"] {
        let seq = std::fs::read_dir(m.mnt.join(a))
            .unwrap()
            .flatten()
            .find(|e| e.path().join("0.png").exists())
            .unwrap()
            .path();
        let _ = std::fs::write(seq.join("0.png"), b"not a png");
    }
    let status = m.mnt.join(".tafs-status");
    let mine = std::fs::read_to_string(&status).unwrap();
    assert!(
        mine.contains("private/secret.gaf") && mine.contains("public/open.gaf"),
        "{mine}"
    );
    let o = Command::new("runuser")
        .args(["-u", OTHER, "--", "cat"])
        .arg(&status)
        .output()
        .unwrap();
    let theirs = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(theirs.contains("public/open.gaf"), "{theirs}");
    assert!(
        !theirs.contains("secret"),
        "another user sees a 0700 folder's asset: {theirs}"
    );
}

/// A state folder too full for the history copy of the binary a save replaces: the save
/// fails with `ENOSPC`, and the status says it is the history, not the binary, that could
/// not be written.
#[test]
fn a_full_state_folder_is_named_in_the_status_not_the_binary() {
    if !fuse_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let game = dir.path().join("game");
    std::fs::create_dir_all(&game).unwrap();
    // a palette with a 60 KiB tail (kept as it is): its history copy does not fit
    let mut pal = tafs::formats::palette::TA_PALETTE_BYTES.to_vec();
    pal.resize(61 << 10, 7);
    std::fs::write(game.join("x.pal"), &pal).unwrap();
    let state = dir.path().join("state");
    std::fs::create_dir_all(&state).unwrap();
    let Some(_u) = mount_common::small_tmpfs(&state, "40k") else {
        return;
    };
    let mnt = dir.path().join("mnt");
    let m = mount(&game, &mnt, &["--ttl", "0", "--state-dir", s(&state)]);
    let csv = mnt.join("x.pal/palette.csv");
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let f: Vec<&str> = lines[1].split(',').collect();
    let r: u8 = f[1].parse().unwrap();
    let edited = format!("{},{},{}", f[0], r.wrapping_add(1), f[2..].join(","));
    lines[1] = edited;
    let tmp = dir.path().join("palette.csv");
    std::fs::write(&tmp, lines.join("\n") + "\n").unwrap();
    // (cp reports the error of the close, where the save commits)
    let o = Command::new("cp").arg(&tmp).arg(&csv).output().unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("No space left on device"), "{err}");
    let status = std::fs::read_to_string(mnt.join("x.pal/.tafs-status")).unwrap();
    assert!(
        status.contains("history") && status.contains("No space left"),
        "{status}"
    );
    assert_eq!(std::fs::read(game.join("x.pal")).unwrap(), pal);
    drop(m);
}
