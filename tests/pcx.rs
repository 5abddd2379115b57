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
            assert_eq!(v["palette"].as_str().unwrap(), hex(&pal), "{}", path.display());
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

fn corpus_pcx() -> Vec<PathBuf> {
    common::corpus()
        .map(|c| common::files_with_ext(&c, &[".pcx"]))
        .unwrap_or_default()
}

fn fixtures() -> Vec<(String, Vec<u8>)> {
    let mut v = Vec::new();
    let idx: Vec<u8> = (0..40 * 7).map(|i| [0u8, 0xC0, 0xFF, 9, 9, 9][i % 6]).collect();
    v.push((
        "indexed.pcx".into(),
        pcx::write(&Pcx::new(PcxKind::Indexed8, 40, 7, idx, Some(Default::default()))).unwrap(),
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
