//! PCX codec and view on every corpus PCX and on self-made fixtures, checked against Pillow's
//! decoder (`python3 -c "import PIL"`): pixels and palette as Pillow reads them, identical
//! rewrite of unedited files, and edited images re-encoded so that Pillow reads the edit.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use tafs::formats::pcx::{self, Pcx, PcxKind};
use tafs::formats::Limits;

/// Pillow's reading of a PCX file: mode, size, raw pixel bytes and palette (hex).
const PIL_READ: &str = r#"
import sys, json
from PIL import Image
im = Image.open(sys.argv[1])
im.load()
pal = im.getpalette() if im.mode == "P" else None
print(json.dumps({"mode": im.mode, "size": im.size, "pixels": im.tobytes().hex(),
                  "palette": bytes(pal).hex() if pal else None}))
"#;

fn pillow() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import PIL"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !ok {
        println!("SKIPPED: python3 with Pillow is missing; Pillow comparisons not run");
    }
    ok
}

fn pil_read(path: &Path) -> serde_json::Value {
    let out = Command::new("python3")
        .args(["-c", PIL_READ])
        .arg(path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "Pillow failed on {}: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Asserts that our decode of `path` equals Pillow's.
fn same_as_pillow(path: &Path, p: &Pcx) {
    let v = pil_read(path);
    assert_eq!(v["size"][0], p.width, "{}", path.display());
    assert_eq!(v["size"][1], p.height, "{}", path.display());
    match p.kind {
        PcxKind::Indexed8 => {
            assert_eq!(v["mode"], "P", "{}", path.display());
            let pal = p.palette.as_ref().unwrap().rgb_bytes();
            assert_eq!(
                v["palette"].as_str().unwrap(),
                hex(&pal),
                "{}",
                path.display()
            );
        }
        PcxKind::Rgb24 => assert_eq!(v["mode"], "RGB", "{}", path.display()),
    }
    assert_eq!(
        v["pixels"].as_str().unwrap(),
        hex(&p.pixels),
        "pixels of {}",
        path.display()
    );
}

/// The corpus's PCX pictures: every `.pcx` but the palettes stored under that name
/// (Cavedog's `GUIPAL.PCX` is `GUIPAL.PAL`'s 1,024 bytes; `tests/pal.rs` covers them).
fn corpus_pcx() -> Vec<PathBuf> {
    common::corpus()
        .map(|c| common::files_with_ext(&c, &[".pcx"]))
        .unwrap_or_default()
        .into_iter()
        .filter(|p| {
            let b = std::fs::read(p).unwrap();
            !matches!(
                tafs::view::pal::pcx_palette_kind(&b, &Limits::default()),
                Some(tafs::view::pal::PaletteFile::Pal | tafs::view::pal::PaletteFile::Raw)
            )
        })
        .collect()
}

fn fixtures() -> Vec<(String, Vec<u8>)> {
    let mut v = Vec::new();
    let idx: Vec<u8> = (0..40 * 7)
        .map(|i| [0u8, 0xC0, 0xFF, 9, 9, 9][i % 6])
        .collect();
    v.push((
        "indexed.pcx".into(),
        pcx::write(&Pcx::new(
            PcxKind::Indexed8,
            40,
            7,
            idx,
            Some(Default::default()),
        ))
        .unwrap(),
    ));
    let rgb: Vec<u8> = (0..13 * 5 * 3).map(|i| (i * 37 % 256) as u8).collect();
    v.push((
        "rgb.pcx".into(),
        pcx::write(&Pcx::new(PcxKind::Rgb24, 13, 5, rgb, None)).unwrap(),
    ));
    let mut padded = Pcx::new(PcxKind::Indexed8, 1, 1, vec![200], Some(Default::default()));
    padded.bytes_per_line = 2;
    padded.padding = vec![0];
    v.push(("carrier.pcx".into(), pcx::write(&padded).unwrap()));
    v
}

#[test]
fn corpus_and_fixtures_decode_like_pillow_and_rewrite_identically() {
    let lim = Limits::default();
    let t = tempfile::tempdir().unwrap();
    let mut files: Vec<(PathBuf, Vec<u8>)> = corpus_pcx()
        .into_iter()
        .map(|p| {
            let b = std::fs::read(&p).unwrap();
            (p, b)
        })
        .collect();
    for (name, bytes) in fixtures() {
        let p = t.path().join(name);
        std::fs::write(&p, &bytes).unwrap();
        files.push((p, bytes));
    }
    assert!(files.len() >= 3);
    let pil = pillow();
    let mut rgb = 0;
    for (path, bytes) in &files {
        let p = pcx::parse(bytes, &lim).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        if p.kind == PcxKind::Rgb24 {
            rgb += 1;
        }
        if pil {
            same_as_pillow(path, &p);
        }
        assert_eq!(
            &pcx::write_like(&p, bytes, &lim).unwrap(),
            bytes,
            "identity rewrite of {}",
            path.display()
        );
        // A fresh encode decodes to the same image.
        let fresh = pcx::write(&p).unwrap();
        assert_eq!(pcx::parse(&fresh, &lim).unwrap(), p, "{}", path.display());
    }
    assert!(rgb >= 1, "a 24-bit PCX is among the inputs");
}

#[test]
fn edited_images_reencode_to_what_pillow_reads() {
    let lim = Limits::default();
    let t = tempfile::tempdir().unwrap();
    let mut inputs: Vec<Vec<u8>> = corpus_pcx()
        .iter()
        .map(|p| std::fs::read(p).unwrap())
        .collect();
    inputs.extend(fixtures().into_iter().map(|f| f.1));
    let pil = pillow();
    for (n, bytes) in inputs.iter().enumerate() {
        let mut p = pcx::parse(bytes, &lim).unwrap();
        // Long runs, bytes ≥ 0xC0 and single pixels.
        let len = p.pixels.len();
        for (i, v) in p.pixels.iter_mut().enumerate() {
            if i < len / 3 {
                *v = 0xC7;
            } else if i % 5 == 0 {
                *v = v.wrapping_add(1);
            }
        }
        let out = pcx::write_like(&p, bytes, &lim).unwrap();
        assert_ne!(&out, bytes);
        let back = pcx::parse(&out, &lim).unwrap();
        assert_eq!(back, p);
        if pil {
            let f = t.path().join(format!("{n}.pcx"));
            std::fs::write(&f, &out).unwrap();
            same_as_pillow(&f, &p);
        }
    }
}

/// Converts `src` (a PNG) to RGBA with Pillow, paints the top-left quarter with colour
/// `(r,g,b)` and a 3-pixel row with `(1,2,3)`, saves to `dst`.
const PIL_RGBA_EDIT: &str = r#"
import sys
from PIL import Image
im = Image.open(sys.argv[1]).convert("RGBA")
r, g, b = (int(x) for x in sys.argv[3].split(","))
w, h = im.size
for y in range(h // 2):
    for x in range(w // 2):
        im.putpixel((x, y), (r, g, b, 255))
for x in range(min(3, w)):
    im.putpixel((x, h - 1), (1, 2, 3, 255))
im.save(sys.argv[2])
"#;

fn view_inputs() -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = corpus_pcx()
        .iter()
        .map(|p| (p.display().to_string(), std::fs::read(p).unwrap()))
        .collect();
    v.extend(fixtures());
    // An image using duplicated palette entries at their second index.
    let pal = tafs::formats::palette::Palette::ta();
    let dups: Vec<u8> = (0..=255u8)
        .filter(|&i| pal.colors[..usize::from(i)].contains(&pal.colors[usize::from(i)]))
        .collect();
    assert!(!dups.is_empty());
    let px: Vec<u8> = (0..16 * 16).map(|i| dups[i % dups.len()]).collect();
    v.push((
        "dups.pcx".into(),
        pcx::write(&Pcx::new(PcxKind::Indexed8, 16, 16, px, Some(pal))).unwrap(),
    ));
    v
}

fn fileset(files: Vec<(String, Vec<u8>)>) -> tafs::view::MemFileSet {
    tafs::view::MemFileSet {
        files: files.into_iter().collect(),
    }
}

#[test]
fn view_png_is_the_pcx_and_unedited_view_rebuilds_identically() {
    use tafs::view::pcx as vp;
    let lim = Limits::default();
    let t = tempfile::tempdir().unwrap();
    let pil = pillow();
    for (name, bytes) in view_inputs() {
        let p = pcx::parse(&bytes, &lim).unwrap();
        let files = vp::files(&bytes, &lim).unwrap();
        let fs = fileset(files);
        assert_eq!(vp::build(&fs, Some(&bytes), &lim).unwrap(), bytes, "{name}");
        assert_eq!(vp::build(&fs, None, &lim).unwrap(), bytes, "{name}");
        let meta: serde_json::Value = serde_json::from_slice(&fs.files[vp::METADATA]).unwrap();
        assert_eq!(meta["width"], p.width);
        if pil {
            let f = t.path().join("image.png");
            std::fs::write(&f, &fs.files[vp::IMAGE]).unwrap();
            let v = pil_read(&f);
            assert_eq!(v["pixels"].as_str().unwrap(), hex(&p.pixels), "{name}");
            match p.kind {
                PcxKind::Indexed8 => {
                    assert_eq!(v["mode"], "P");
                    let want = hex(&p.palette.as_ref().unwrap().rgb_bytes());
                    assert_eq!(v["palette"].as_str().unwrap(), want, "{name}");
                }
                PcxKind::Rgb24 => assert_eq!(v["mode"], "RGB", "{name}"),
            }
        }
    }
}

#[test]
fn rgba_save_maps_to_the_palette_without_drifting_untouched_pixels() {
    use tafs::view::pcx as vp;
    if !pillow() {
        return;
    }
    let lim = Limits::default();
    let t = tempfile::tempdir().unwrap();
    for (name, bytes) in view_inputs() {
        let p = pcx::parse(&bytes, &lim).unwrap();
        let mut fs = fileset(vp::files(&bytes, &lim).unwrap());
        let (src, dst) = (t.path().join("in.png"), t.path().join("out.png"));
        std::fs::write(&src, &fs.files[vp::IMAGE]).unwrap();
        // Paint with the colour of palette entry 200 (exact) and (1,2,3) (not in the palette).
        let paint = p
            .palette
            .as_ref()
            .map(|pal| pal.colors[200])
            .unwrap_or([10, 20, 30]);
        let o = Command::new("python3")
            .args(["-c", PIL_RGBA_EDIT])
            .arg(&src)
            .arg(&dst)
            .arg(format!("{},{},{}", paint[0], paint[1], paint[2]))
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        fs.files
            .insert(vp::IMAGE.into(), std::fs::read(&dst).unwrap());
        let out = vp::build(&fs, Some(&bytes), &lim).unwrap();
        let q = pcx::parse(&out, &lim).unwrap();
        assert_eq!((q.width, q.height, q.kind), (p.width, p.height, p.kind));
        let (w, h) = (p.width as usize, p.height as usize);
        let planes = p.planes();
        for y in 0..h {
            for x in 0..w {
                let i = y * w + x;
                let painted = y < h / 2 && x < w / 2;
                let odd = y == h - 1 && x < 3;
                let got = &q.pixels[i * planes..(i + 1) * planes];
                let was = &p.pixels[i * planes..(i + 1) * planes];
                match (p.kind, &p.palette) {
                    (PcxKind::Indexed8, Some(pal)) => {
                        let c = pal.colors[usize::from(got[0])];
                        if odd {
                            let want = pal.nearest([1, 2, 3], &[]);
                            assert_eq!(got[0], want, "{name} ({x},{y})");
                        } else if painted {
                            assert_eq!(c, paint, "{name} ({x},{y})");
                            // The original index is kept where it already had this colour.
                            if pal.colors[usize::from(was[0])] == paint {
                                assert_eq!(got, was);
                            }
                        } else {
                            assert_eq!(got, was, "untouched pixel drifted: {name} ({x},{y})");
                        }
                    }
                    _ => {
                        let want: &[u8] = if odd {
                            &[1, 2, 3]
                        } else if painted {
                            &paint
                        } else {
                            was
                        };
                        assert_eq!(got, want, "{name} ({x},{y})");
                    }
                }
            }
        }
        // Pillow reads the rebuilt file as the same picture.
        let f = t.path().join("rebuilt.pcx");
        std::fs::write(&f, &out).unwrap();
        same_as_pillow(&f, &q);
    }
}

#[test]
fn malformed_pcx_fixtures_are_clean_errors() {
    use tafs::view::pcx as vp;
    let lim = Limits::default();
    let good = fixtures().remove(0).1;
    let mut cases: Vec<(&str, Vec<u8>)> = vec![
        ("empty", vec![]),
        ("header only", good[..128].to_vec()),
        ("truncated data", {
            let mut v = good[..140].to_vec();
            v.extend_from_slice(&good[good.len() - 769..]);
            v
        }),
        ("no palette marker", {
            let mut v = good.clone();
            let n = v.len();
            v[n - 769] = 0;
            v
        }),
    ];
    let mut huge = good.clone();
    huge[8..12].copy_from_slice(&[0xff, 0xff, 0xff, 0xff]);
    huge[66..68].copy_from_slice(&[0xff, 0xff]);
    cases.push(("65536×65536", huge));
    let mut wide_lines = good.clone();
    wide_lines[66..68].copy_from_slice(&[0xff, 0xff]);
    cases.push(("65535 bytes per line", wide_lines));
    let mut four_bit = good.clone();
    four_bit[3] = 4;
    cases.push(("4 bits per pixel", four_bit));
    let mut not_pcx = good;
    not_pcx[0] = b'G';
    cases.push(("not a PCX", not_pcx));
    for (what, data) in cases {
        let e = pcx::parse(&data, &lim).expect_err(what).to_string();
        assert!(
            e.starts_with("pcx: ") && e.contains("offset 0x"),
            "{what}: {e}"
        );
        assert!(vp::files(&data, &lim).is_err(), "{what}");
    }
}

#[test]
fn convert_to_gif_and_bmp_matches_pillows_reading_of_the_pcx() {
    use tafs::formats::palette::Palette;
    use tafs::formats::pcx::{Pcx, PcxKind};
    let t = tempfile::tempdir().unwrap();
    let (w, h) = (13u32, 7u32); // odd width: BMP rows are padded
    let px: Vec<u8> = (0..w * h).map(|i| (i * 37 % 256) as u8).collect();
    let p = Pcx::new(PcxKind::Indexed8, w, h, px, Some(Palette::ta()));
    let src = t.path().join("a.pcx");
    std::fs::write(&src, tafs::formats::pcx::write(&p).unwrap()).unwrap();
    let tafs = env!("CARGO_BIN_EXE_tafs");
    for ext in ["gif", "bmp"] {
        let out = t.path().join(format!("a.{ext}"));
        let st = std::process::Command::new(tafs)
            .args(["pcx", "convert"])
            .arg(&src)
            .arg("-t")
            .arg(&out)
            .status()
            .unwrap();
        assert!(st.success());
        let r = common::py(&format!(
            r#"
from PIL import Image
a = Image.open({:?}); b = Image.open({:?})
assert a.format == "PCX" and b.format == {:?}, (a.format, b.format)
assert b.mode == "P" and a.size == b.size
assert list(a.convert("RGB").tobytes()) == list(b.convert("RGB").tobytes())
print("ok")
"#,
            src.to_str().unwrap(),
            out.to_str().unwrap(),
            ext.to_uppercase()
        ));
        assert_eq!(r, "ok", "{ext}");
        // --format decides whatever the target's name
        let named = t.path().join(format!("{ext}.out"));
        let st = std::process::Command::new(tafs)
            .args(["pcx", "convert", "--format", ext])
            .arg(&src)
            .arg("-t")
            .arg(&named)
            .status()
            .unwrap();
        assert!(st.success());
        assert_eq!(std::fs::read(&named).unwrap(), std::fs::read(&out).unwrap());
    }
    // --format png to a .gif name writes a PNG; no format and an unknown extension: refused
    let named = t.path().join("b.gif");
    let o = std::process::Command::new(tafs)
        .args(["pcx", "convert", "--format", "png"])
        .arg(&src)
        .arg("-t")
        .arg(&named)
        .output()
        .unwrap();
    assert!(o.status.success());
    assert!(std::fs::read(&named).unwrap().starts_with(b"\x89PNG"));
    let o = std::process::Command::new(tafs)
        .args(["pcx", "convert"])
        .arg(&src)
        .arg("-t")
        .arg(t.path().join("c.tga"))
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&o.stderr).contains("--format"));
}
