//! `tafs gaf …` end to end through the binary.

mod common;

use std::path::Path;
use std::process::{Command, Output};

fn tafs(args: &[&str]) -> Output {
    tafs_umask(None, args)
}

/// Runs `tafs args…`, under umask `mask` when given (set in the child before it starts).
fn tafs_umask(mask: Option<libc::mode_t>, args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tafs"));
    cmd.args(args);
    if let Some(mask) = mask {
        use std::os::unix::process::CommandExt;
        // SAFETY: umask is async-signal-safe and touches no memory of the parent.
        unsafe {
            cmd.pre_exec(move || {
                libc::umask(mask);
                Ok(())
            });
        }
    }
    cmd.output().unwrap()
}

fn ok(args: &[&str]) -> String {
    ok_umask(None, args)
}

fn ok_umask(mask: Option<libc::mode_t>, args: &[&str]) -> String {
    let o = tafs_umask(mask, args);
    assert!(
        o.status.success(),
        "tafs {args:?} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[test]
fn sample_list_dump_build_export_roundtrip() {
    let t = tempfile::tempdir().unwrap();
    let gaf = t.path().join("sample.gaf");
    ok(&["gaf", "sample", "-t", p(&gaf)]);
    let list = ok(&["gaf", "list", p(&gaf)]);
    assert!(
        list.starts_with("GAF: 3 sequence(s), version 0x00010100"),
        "{list}"
    );
    assert!(
        list.lines()
            .any(|l| l.starts_with("0   pulse") && l.contains("6") && l.contains("yes")),
        "{list}"
    );

    let dir = t.path().join("dump");
    ok(&["gaf", "dump", p(&gaf), "-t", p(&dir)]);
    for f in [
        "metadata.json",
        "pulse/frames.csv",
        "pulse/sequence.csv",
        "pulse/0.png",
        "pulse/animated.png",
        "turret/0.layers/layers.csv",
    ] {
        assert!(dir.join(f).is_file(), "{f} missing");
    }
    let frames = std::fs::read_to_string(dir.join("pulse/frames.csv")).unwrap();
    assert_eq!(
        frames.lines().next().unwrap(),
        "frame,width,height,origin_x,origin_y,transparency,duration_ticks,duration_sec,storage,blend"
    );
    // sed-style edit of a duration, then build: only that changes
    std::fs::write(
        dir.join("pulse/frames.csv"),
        frames.replacen(",3,0.100,", ",7,0.233,", 1),
    )
    .unwrap();
    let out = t.path().join("rebuilt.gaf");
    ok(&["gaf", "build", p(&dir), "-t", p(&out), "--base", p(&gaf)]);
    let a = std::fs::read(&gaf).unwrap();
    let b = std::fs::read(&out).unwrap();
    assert_eq!(a.len(), b.len());
    let diffs: Vec<usize> = (0..a.len()).filter(|&i| a[i] != b[i]).collect();
    assert_eq!(
        diffs.len(),
        1,
        "only the first duration's low byte changes: {diffs:?}"
    );

    // a failing build writes nothing
    std::fs::write(dir.join("pulse/1.png"), b"not a png").unwrap();
    let bad = t.path().join("bad.gaf");
    let o = tafs(&["gaf", "build", p(&dir), "-t", p(&bad)]);
    assert!(!o.status.success());
    let msg = String::from_utf8_lossy(&o.stderr);
    assert!(msg.contains("pulse/1.png"), "{msg}");
    assert!(!bad.exists());

    // export as APNG and GIF
    let apng = t.path().join("pulse.png");
    ok(&["gaf", "export", p(&gaf), "--sequence", "0", "-t", p(&apng)]);
    let d = png::Decoder::new(std::io::Cursor::new(std::fs::read(&apng).unwrap()))
        .read_info()
        .unwrap();
    assert_eq!(d.info().animation_control.unwrap().num_frames, 6);
    let gif_path = t.path().join("pulse.gif");
    ok(&[
        "gaf",
        "export",
        p(&gaf),
        "--format",
        "gif",
        "--sequence",
        "0",
        "-t",
        p(&gif_path),
        "--transparency",
        "none",
    ]);
    let mut dec = gif::DecodeOptions::new()
        .read_info(std::fs::File::open(&gif_path).unwrap())
        .unwrap();
    let mut n = 0;
    while let Some(f) = dec.read_next_frame().unwrap() {
        assert_eq!(f.delay, 10, "3 ticks = 0.1 s");
        n += 1;
    }
    assert_eq!(n, 6);
    assert!(!tafs(&[
        "gaf",
        "export",
        p(&gaf),
        "--sequence",
        "9",
        "-t",
        p(&gif_path)
    ])
    .status
    .success());

    // roundtrip over a folder with a corrupt GAF fails, and names it
    let rt = ok(&["gaf", "roundtrip", p(&gaf)]);
    assert!(rt.contains("1 ok, 0 failed"), "{rt}");
    std::fs::write(t.path().join("corrupt.gaf"), &a[..100]).unwrap();
    let o = tafs(&["gaf", "roundtrip", p(t.path())]);
    assert_eq!(o.status.code(), Some(1));
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(s.contains("FAIL") && s.contains("corrupt.gaf"), "{s}");
}

#[test]
fn corpus_roundtrip_passes() {
    let Some(corpus) = common::corpus() else {
        return;
    };
    let s = ok(&["gaf", "roundtrip", p(&corpus)]);
    assert!(s.contains("10 ok, 0 failed, 2 skipped"), "{s}");
    assert!(
        s.contains("byte-identical: 10 after decode → encode, 10 after dump → build --base"),
        "{s}"
    );
}

#[test]
fn truecolor_gaf_is_refused_clearly() {
    let Some(corpus) = common::corpus() else {
        return;
    };
    let f = corpus.join("nonstandard/ta3d-truecolor-cursors.gaf");
    let o = tafs(&["gaf", "list", p(&f)]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("not a Cavedog GAF"));
}

#[test]
fn written_files_get_the_modes_of_an_ordinary_write() {
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
    let t = tempfile::tempdir().unwrap();
    let gaf = t.path().join("sample.gaf");
    let dir = t.path().join("dump");
    ok(&["gaf", "sample", "-t", p(&gaf)]);
    ok(&["gaf", "dump", p(&gaf), "-t", p(&dir)]);

    // a new file: 0666 & ~umask
    let out = t.path().join("new.gaf");
    ok_umask(Some(0o022), &["gaf", "build", p(&dir), "-t", p(&out)]);
    assert_eq!(mode(&out), 0o644);
    let out2 = t.path().join("new2.gaf");
    ok_umask(Some(0o002), &["gaf", "build", p(&dir), "-t", p(&out2)]);
    assert_eq!(mode(&out2), 0o664);

    // a replaced file keeps its mode
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o644)).unwrap();
    ok_umask(Some(0o077), &["gaf", "build", p(&dir), "-t", p(&out)]);
    assert_eq!(mode(&out), 0o644);
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o604)).unwrap();
    ok_umask(Some(0o022), &["gaf", "sample", "-t", p(&out)]);
    assert_eq!(mode(&out), 0o604);

    // `hpi pack` goes through the same helper
    let hpi = t.path().join("x.hpi");
    ok_umask(Some(0o022), &["hpi", "pack", p(&dir), "-t", p(&hpi)]);
    assert_eq!(mode(&hpi), 0o644);
}
