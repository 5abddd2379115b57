//! TA: Kingdoms truecolor `.taf` (ARGB4444 and ARGB1555 frames) through the CLI and a real
//! mount. The fixtures are assembled here from the format facts (GAF container, format byte
//! at FrameInfo +9, little-endian 16-bit words); one frame of each holds all 65,536 words, so
//! the dump is checked bit for bit against an independent Python/Pillow decoder and an
//! unedited dump rebuilds the identical file; a Pillow edit rebuilds the hand-computed word.

mod common;
mod mount_common;

use common::py;
use mount_common::{fuse_available, mount};
use std::path::{Path, PathBuf};
use std::process::Command;

const TAFS: &str = env!("CARGO_BIN_EXE_tafs");

/// Offset of frame 1's words (4×2) and of frame 0's (256×256) in a fixture.
const SMALL_AT: usize = 120;
const BIG_AT: usize = 136;

/// A truecolor `.taf`: file header, one sequence named `name` (32 raw bytes, junk after the
/// NUL allowed), two frames with format byte `format`: frame 0 is 256×256, origin (128, 128),
/// duration 3, +11 = `blend`, holding the word `y·256 + x` at (x, y); frame 1 is 4×2, origin
/// (1, 0), duration 0, +11 = 0, holding `small`. Both frame headers come first, then frame
/// 1's words, then frame 0's (not tafs's canonical order).
fn taf(format: u8, blend: u8, small: [u16; 8], name: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    let u16s = |f: &mut Vec<u8>, v: u16| f.extend_from_slice(&v.to_le_bytes());
    let u32s = |f: &mut Vec<u8>, v: u32| f.extend_from_slice(&v.to_le_bytes());
    u32s(&mut f, 0x0001_0100);
    u32s(&mut f, 1);
    u32s(&mut f, 0);
    u32s(&mut f, 16); // sequence table
    u16s(&mut f, 2); // frame count
    u16s(&mut f, 1); // loops
    u32s(&mut f, 0);
    let mut n = [0u8; 32];
    n[..name.len()].copy_from_slice(name);
    f.extend_from_slice(&n);
    for (ptr, dur) in [(72u32, 3u32), (96, 0)] {
        u32s(&mut f, ptr);
        u32s(&mut f, dur);
    }
    for (w, h, ox, oy, bl, data) in [
        (256u16, 256u16, 128i16, 128i16, blend, BIG_AT as u32),
        (4, 2, 1, 0, 0, SMALL_AT as u32),
    ] {
        u16s(&mut f, w);
        u16s(&mut f, h);
        f.extend_from_slice(&ox.to_le_bytes());
        f.extend_from_slice(&oy.to_le_bytes());
        f.extend_from_slice(&[0, format, 0, bl]); // +8 key 0, +9 format, +10 no layers, +11
        u32s(&mut f, 0);
        u32s(&mut f, data);
        u32s(&mut f, 0);
    }
    assert_eq!(f.len(), SMALL_AT);
    for w in small {
        u16s(&mut f, w);
    }
    assert_eq!(f.len(), BIG_AT);
    for w in 0..=u16::MAX {
        u16s(&mut f, w);
    }
    f
}

/// ARGB4444 with soft alpha, +11 = 0xFF, junk after the name's NUL.
fn taf_4444() -> Vec<u8> {
    let small = [
        0x0FFF, 0x1F00, 0x70F0, 0x800F, 0xF00F, 0xFFFF, 0x3456, 0xC3A5,
    ];
    taf(4, 0xFF, small, b"tc_4444\0\x01JUNKjunk")
}

/// ARGB1555 with one-bit alpha (transparent white among them), +11 = 0.
fn taf_1555() -> Vec<u8> {
    let small = [
        0x0000, 0x7FFF, 0x8000, 0xFFFF, 0x801F, 0x83E0, 0xFC00, 0x5555,
    ];
    taf(5, 0x00, small, b"tc_1555\0\xffxyz")
}

fn run(args: &[&str]) -> String {
    let o = Command::new(TAFS).args(args).output().unwrap();
    assert!(
        o.status.success(),
        "tafs {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn p(x: &Path) -> &str {
    x.to_str().unwrap()
}

/// The expansion, written independently in Python: `exp(fmt, word)` → (r, g, b, a).
const PY_EXPAND: &str = r#"
def exp(fmt, w):
    if fmt == 4:
        a, r, g, b = (w >> 12) & 15, (w >> 8) & 15, (w >> 4) & 15, w & 15
        return tuple(v * 17 for v in (r, g, b, a))
    r, g, b = (w >> 10) & 31, (w >> 5) & 31, w & 31
    five = lambda v: (v << 3) | (v >> 2)
    return (five(r), five(g), five(b), 255 if w & 0x8000 else 0)
"#;

struct Fixture {
    name: &'static str,
    format: u8,
    bytes: Vec<u8>,
    storage: &'static str,
    blend: u8,
    /// The word a Pillow save of (200, 100, 50, 77) at frame 1's (0, 0) must give, by hand:
    /// ARGB4444 rounds each channel to the nearest multiple of 17 (204, 102, 51, 85);
    /// ARGB1555 to the nearest of v<<3|v>>2 (198, 99, 49) and alpha < 128 → 0.
    edited: u16,
}

fn fixtures() -> Vec<Fixture> {
    vec![
        Fixture {
            name: "tc_4444.taf",
            format: 4,
            bytes: taf_4444(),
            storage: "argb4444",
            blend: 255,
            edited: 0x5C63,
        },
        Fixture {
            name: "tc_1555.taf",
            format: 5,
            bytes: taf_1555(),
            storage: "argb1555",
            blend: 0,
            edited: 0x6186,
        },
    ]
}

/// Pillow reads `png` as RGBA and every pixel equals the Python expansion of the words at
/// `at` in `taf`; returns the number of pixels compared.
fn check_png_against_words(taf: &Path, png: &Path, fmt: u8, at: usize, n: usize) -> String {
    py(&format!(
        "{PY_EXPAND}\nimport struct\nfrom PIL import Image\nd = open('{t}', 'rb').read()\nwords = struct.unpack_from('<{n}H', d, {at})\nim = Image.open('{png}')\nassert im.mode == 'RGBA', im.mode\npx = list(im.getdata())\nassert len(px) == {n}\nbad = [i for i, (w, q) in enumerate(zip(words, px)) if exp({fmt}, w) != q]\nassert not bad, (len(bad), bad[:5])\nprint(len(px), len(set(words)))",
        t = p(taf),
        png = p(png),
    ))
}

#[test]
fn truecolor_taf_dumps_bit_exactly_and_rebuilds_identical_bytes() {
    let t = tempfile::tempdir().unwrap();
    for fx in fixtures() {
        let file = t.path().join(fx.name);
        std::fs::write(&file, &fx.bytes).unwrap();
        let list = run(&["taf", "list", p(&file)]);
        assert!(
            list.contains(&format!("truecolor: 2 {} frame(s)", fx.storage)),
            "{list}"
        );
        let dir = t.path().join(format!("{}.d", fx.name));
        run(&["taf", "dump", p(&file), "-t", p(&dir)]);
        let seq = dir.join(&fx.name[..7]);
        let csv = std::fs::read_to_string(seq.join("frames.csv")).unwrap();
        assert_eq!(
            csv,
            format!(
                "frame,width,height,origin_x,origin_y,transparency,duration_ticks,duration_sec,storage,blend\n\
                 0,256,256,128,128,0,3,0.100,{s},{b}\n\
                 1,4,2,1,0,0,0,0.033,{s},0\n",
                s = fx.storage,
                b = fx.blend
            )
        );
        // every 16-bit value, against an independent decoder
        assert_eq!(
            check_png_against_words(&file, &seq.join("0.png"), fx.format, BIG_AT, 65536),
            "65536 65536"
        );
        check_png_against_words(&file, &seq.join("1.png"), fx.format, SMALL_AT, 8);
        // the unedited dump rebuilds the identical file (the name's junk, +11, the layout)
        let out = t.path().join(format!("rebuilt-{}", fx.name));
        run(&["taf", "build", p(&dir), "-t", p(&out)]);
        assert_eq!(std::fs::read(&out).unwrap(), fx.bytes, "{}", fx.name);
        let rt = run(&["roundtrip", p(&file)]);
        assert!(rt.contains(" identical "), "{rt}");

        // the preview is an RGBA APNG with the frames' real alpha
        let anim = py(&format!(
            "{PY_EXPAND}\nfrom PIL import Image\nim = Image.open('{a}')\nprint(im.mode, im.n_frames, im.size)\nfor x, y in [(37, 200), (255, 255), (3, 64)]:\n  w = y * 256 + x\n  e = exp({f}, w)\n  assert im.getpixel((x, y)) == (e if e[3] else (0, 0, 0, 0)), (x, y, im.getpixel((x, y)), e)\nprint('ok')",
            a = p(&seq.join("animated.png")),
            f = fx.format
        ));
        assert_eq!(anim, "RGBA 2 (256, 256)\nok");

        // an edit with a colour the format cannot hold is quantised to the nearest word
        py(&format!(
            "from PIL import Image\nim = Image.open('{png}')\nim.putpixel((0, 0), (200, 100, 50, 77))\nim.save('{png}')",
            png = p(&seq.join("1.png"))
        ));
        let edited = t.path().join(format!("edited-{}", fx.name));
        run(&["taf", "build", p(&dir), "-t", p(&edited)]);
        let got = std::fs::read(&edited).unwrap();
        let mut want = fx.bytes.clone();
        want[SMALL_AT..SMALL_AT + 2].copy_from_slice(&fx.edited.to_le_bytes());
        assert_eq!(got.len(), want.len());
        assert!(got == want, "{}: edit rebuilt other bytes", fx.name);
    }
}

#[test]
fn an_indexed_or_rgb_save_of_a_truecolor_frame_is_read_as_colours() {
    // Pillow saving the frame as RGB (no alpha) gives opaque words of the same colours
    let t = tempfile::tempdir().unwrap();
    let fx = &fixtures()[1];
    let file = t.path().join(fx.name);
    std::fs::write(&file, &fx.bytes).unwrap();
    let dir = t.path().join("d");
    run(&["taf", "dump", p(&file), "-t", p(&dir)]);
    let png = dir.join("tc_1555/1.png");
    py(&format!(
        "from PIL import Image\nImage.open('{0}').convert('RGB').save('{0}')",
        p(&png)
    ));
    let out = t.path().join("out.taf");
    run(&["taf", "build", p(&dir), "-t", p(&out)]);
    let got = std::fs::read(&out).unwrap();
    let words: Vec<u16> = got[SMALL_AT..SMALL_AT + 16]
        .chunks(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    // the small frame's words with the alpha bit set (RGB has no transparency)
    let want: Vec<u16> = [
        0x0000u16, 0x7FFF, 0x8000, 0xFFFF, 0x801F, 0x83E0, 0xFC00, 0x5555,
    ]
    .iter()
    .map(|w| w | 0x8000)
    .collect();
    assert_eq!(words, want);
    assert_eq!(&got[..SMALL_AT], &fx.bytes[..SMALL_AT]);
    assert_eq!(&got[BIG_AT..], &fx.bytes[BIG_AT..]);
}

/// Waits until the binary's bytes differ from `before` (write-back commits on close).
fn wait_change(bin: &Path, before: &[u8]) -> Vec<u8> {
    for _ in 0..100 {
        let now = std::fs::read(bin).unwrap();
        if now != before {
            return now;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("{}: not rebuilt", bin.display());
}

fn tree(dir: &Path) -> Vec<String> {
    fn walk(d: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if !e.file_name().to_string_lossy().starts_with('.') {
                out.push(p);
            }
        }
    }
    let mut v = Vec::new();
    walk(dir, &mut v);
    let mut v: Vec<String> = v
        .iter()
        .map(|x| x.strip_prefix(dir).unwrap().to_string_lossy().to_string())
        .collect();
    v.sort();
    v
}

#[test]
fn the_mount_shows_truecolor_taf_and_rebuilds_an_edit() {
    if !fuse_available() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let game = t.path().join("game");
    tafs::cli::demo::write_demo(&game).unwrap();
    std::fs::create_dir_all(game.join("anims")).unwrap();
    for fx in fixtures() {
        std::fs::write(game.join("anims").join(fx.name), &fx.bytes).unwrap();
    }
    let mnt = t.path().join("mnt");
    let state = t.path().join("state");
    let _m = mount(&game, &mnt, &["--ttl", "0", "--state-dir", p(&state)]);
    for fx in fixtures() {
        let rel = format!("anims/{}", fx.name);
        assert!(mnt.join(&rel).is_dir(), "{rel} is not a directory");
        let dump = t.path().join(format!("dump-{}", fx.name));
        run(&["taf", "dump", p(&game.join(&rel)), "-t", p(&dump)]);
        let names = tree(&dump);
        assert_eq!(tree(&mnt.join(&rel)), names, "{rel}");
        let s = &fx.name[..7];
        for f in [
            format!("{s}/0.png"),
            format!("{s}/1.png"),
            format!("{s}/frames.csv"),
            format!("{s}/animated.png"),
        ] {
            assert!(names.contains(&f), "{f} missing from {names:?}");
        }
        for n in &names {
            assert_eq!(
                std::fs::read(mnt.join(&rel).join(n)).unwrap(),
                std::fs::read(dump.join(n)).unwrap(),
                "{rel}/{n}"
            );
        }
        // `cat` of the big frame through the mount: Pillow reads every word back
        check_png_against_words(
            &game.join(&rel),
            &mnt.join(&rel).join(format!("{s}/0.png")),
            fx.format,
            BIG_AT,
            65536,
        );
        // a Pillow edit saved into the mount rebuilds the .taf with the quantised word
        let bin = game.join(&rel);
        let before = std::fs::read(&bin).unwrap();
        py(&format!(
            "from PIL import Image\nim = Image.open('{png}')\nim.load()\nim.putpixel((0, 0), (200, 100, 50, 77))\nim.save('{png}')",
            png = p(&mnt.join(&rel).join(format!("{s}/1.png")))
        ));
        let now = wait_change(&bin, &before);
        let mut want = fx.bytes.clone();
        want[SMALL_AT..SMALL_AT + 2].copy_from_slice(&fx.edited.to_le_bytes());
        assert!(now == want, "{rel}: the edit rebuilt other bytes");
    }
}
