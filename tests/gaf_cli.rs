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
    // every GAF/TAF of the corpus (counted here, independently of the command) rebuilds,
    // but the two TA3D truecolor files of nonstandard/, which are skipped
    fn count(dir: &Path) -> usize {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .map(|p| {
                if p.is_dir() {
                    count(&p)
                } else {
                    let ext = p.extension().map(|e| e.to_ascii_lowercase());
                    usize::from(ext.is_some_and(|e| e == "gaf" || e == "taf"))
                }
            })
            .sum()
    }
    let n = count(&corpus);
    assert!(n >= 12, "{n} GAF/TAF files in the corpus");
    let s = ok(&["gaf", "roundtrip", p(&corpus)]);
    let want = format!("{} ok, 0 failed, 2 skipped", n - 2);
    assert!(s.contains(&want), "want {want}: {s}");
    let identical = format!(
        "byte-identical: {} after decode → encode, {} after dump → build --base",
        n - 2,
        n - 2
    );
    assert!(s.contains(&identical), "want {identical}: {s}");
}

#[test]
fn ta3d_truecolor_gaf_is_refused_clearly_tak_truecolor_is_read() {
    // TA: Kingdoms truecolor: the GAF container with format byte 4 (ARGB4444) at +9
    let t = tempfile::tempdir().unwrap();
    let mut f = Vec::new();
    for v in [0x0001_0100u32, 1, 0, 16] {
        f.extend_from_slice(&v.to_le_bytes());
    }
    f.extend_from_slice(&[1, 0, 1, 0, 0, 0, 0, 0]);
    f.extend_from_slice(&[b'x'; 32]);
    f.extend_from_slice(&[64, 0, 0, 0, 1, 0, 0, 0]);
    f.extend_from_slice(&[1, 0, 1, 0, 0, 0, 0, 0, 0, 4, 0, 0xFF]);
    for v in [0u32, 88, 0] {
        f.extend_from_slice(&v.to_le_bytes());
    }
    f.extend_from_slice(&[0x34, 0x12]);
    let tak = t.path().join("x.taf");
    std::fs::write(&tak, &f).unwrap();
    let o = tafs(&["gaf", "list", p(&tak)]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("truecolor: 1 argb4444 frame(s)"));

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

/// A PCX carrying only a palette (as TA: Kingdoms' palette `.pcx` files): 128-byte header,
/// one pixel, 0x0C, 768 bytes of palette.
fn palette_pcx(colors: &[[u8; 3]; 256]) -> Vec<u8> {
    let mut v = vec![0u8; 128];
    v[0] = 0x0A;
    v[1] = 5;
    v[2] = 1;
    v[3] = 8;
    v[65] = 1; // planes
    v[66] = 1; // bytes per line
    v.push(0); // the one pixel
    v.push(0x0C);
    for c in colors {
        v.extend_from_slice(c);
    }
    v
}

#[test]
fn a_build_away_from_the_game_folder_keeps_the_assets_own_palette() {
    // a game folder whose GAF has its own palette beside it (the TA: Kingdoms rule): the
    // built-in palette reversed, so every colour sits at another index than in the default
    let t = tempfile::tempdir().unwrap();
    let game = t.path().join("game");
    std::fs::create_dir_all(game.join("anims")).unwrap();
    std::fs::create_dir_all(game.join("palettes")).unwrap();
    let gaf = game.join("anims/unit.gaf");
    ok(&["gaf", "sample", "-t", p(&gaf)]);
    let ta = tafs::formats::palette::Palette::ta();
    let mut rev = ta.colors;
    rev.reverse();
    std::fs::write(game.join("anims/unit.pcx"), palette_pcx(&rev)).unwrap();
    let dump = t.path().join("dump");
    ok(&["gaf", "dump", p(&gaf), "-t", p(&dump)]);
    let meta = std::fs::read_to_string(dump.join("metadata.json")).unwrap();
    assert!(meta.contains("\"palette\": \"anims/unit.pcx\""), "{meta}");
    let original = std::fs::read(&gaf).unwrap();
    // with --base: the palette comes from the original's place
    let out = t.path().join("elsewhere/a.gaf");
    std::fs::create_dir_all(out.parent().unwrap()).unwrap();
    ok(&["gaf", "build", p(&dump), "-t", p(&out), "--base", p(&gaf)]);
    assert_eq!(
        std::fs::read(&out).unwrap(),
        original,
        "build --base elsewhere"
    );
    // without: the target's place resolves the built-in palette, but the PNGs are indexed
    // with the dump's palette, so their indices are copied, with a warning
    let out2 = t.path().join("elsewhere/b.gaf");
    let o = tafs(&["gaf", "build", p(&dump), "-t", p(&out2)]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(std::fs::read(&out2).unwrap(), original, "build elsewhere");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("maps to another one"), "no warning: {err}");
}

#[test]
fn corpus_tak_gaf_builds_identically_away_from_its_folder() {
    let Some(corpus) = common::corpus() else {
        return;
    };
    let gaf = corpus.join("tak/anims/version.gaf");
    let t = tempfile::tempdir().unwrap();
    let dump = t.path().join("d");
    ok(&["gaf", "dump", p(&gaf), "-t", p(&dump)]);
    let original = std::fs::read(&gaf).unwrap();
    for base in [true, false] {
        let out = t.path().join(format!("r-{base}.gaf"));
        let mut args = vec!["gaf", "build", p(&dump), "-t", p(&out)];
        if base {
            args.extend(["--base", p(&gaf)]);
        }
        ok(&args);
        assert_eq!(std::fs::read(&out).unwrap(), original, "--base: {base}");
    }
}

/// A dump of a big GAF draws a bar counting files on a terminal (a pty made by script(1)),
/// and prints nothing extra when stderr is not one.
#[test]
fn dump_of_a_big_gaf_shows_progress_on_a_terminal_only() {
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("script(1) is not installed: skipping");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = tafs(&["demo", d.join("g").to_str().unwrap()]);
    assert!(out.status.success());
    let dump = d.join("dump");
    let gaf = d.join("g/anims/demo.gaf");
    assert!(tafs(&[
        "gaf",
        "dump",
        gaf.to_str().unwrap(),
        "-t",
        dump.to_str().unwrap()
    ])
    .status
    .success());
    // 400 frames in the pulse sequence, each a copy of frame 0
    let pulse = dump.join("pulse");
    let mut csv = std::fs::read_to_string(pulse.join("frames.csv")).unwrap();
    let row0 = csv.lines().nth(1).unwrap().to_string();
    for i in 6..400 {
        std::fs::copy(pulse.join("0.png"), pulse.join(format!("{i}.png"))).unwrap();
        csv.push_str(&row0.replacen('0', &i.to_string(), 1));
        csv.push('\n');
    }
    std::fs::write(pulse.join("frames.csv"), csv).unwrap();
    let _ = std::fs::remove_file(pulse.join("animated.png"));
    let big = d.join("big.gaf");
    let out = tafs(&[
        "gaf",
        "build",
        dump.to_str().unwrap(),
        "-t",
        big.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // not a terminal: no bar
    let plain = d.join("plain");
    let out = tafs(&[
        "gaf",
        "dump",
        big.to_str().unwrap(),
        "-t",
        plain.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // a terminal: the bar counts the files
    let tty = d.join("tty");
    let cmd = format!(
        "{} gaf dump {} -t {}",
        env!("CARGO_BIN_EXE_tafs"),
        big.display(),
        tty.display()
    );
    let out = Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let files = walk_files(&tty);
    assert!(files > 400, "{files} files");
    assert!(text.contains(&format!("/{files} files")), "{text:?}");
    assert_eq!(walk_files(&plain), files);
}

fn walk_files(d: &Path) -> usize {
    let mut n = 0;
    for e in std::fs::read_dir(d).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            n += walk_files(&e.path());
        } else {
            n += 1;
        }
    }
    n
}
