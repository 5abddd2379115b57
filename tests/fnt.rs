//! Bitmap fonts (`.fnt`) on the corpus and a self-made fixture: `tafs fnt dump` read by an
//! independent Python FNT reader (written from the format facts) and Pillow, identical
//! rebuilds, `tafs fnt render` against a Python layout, and a glyph edited by ImageMagick
//! through a real mount landing exactly in the font.

mod common;
mod mount_common;

use common::{py, tafs_ok};
use mount_common::{fuse_available, Mount};
use std::path::{Path, PathBuf};
use tafs::formats::fnt::{self, Fnt, Glyph, Piece};

/// Reads a font by the published layout (height byte 0, first code byte 3, u16 offsets from
/// byte 4, records: width byte then MSB-first bits) and prints JSON {height, glyphs:
/// {code: [width, "0101…"]}}.
const PY_FNT: &str = r#"
import sys, json, struct
def read_fnt(path):
    d = open(path, "rb").read()
    h, first = d[0], d[3]
    glyphs = {}
    for i in range(256 - first):
        off = struct.unpack_from("<H", d, 4 + 2 * i)[0]
        if off == 0:
            continue
        w = d[off]
        bits = d[off + 1: off + 1 + (w * h + 7) // 8]
        glyphs[first + i] = [w, "".join(str((bits[k // 8] >> (7 - k % 8)) & 1) for k in range(w * h))]
    return h, glyphs
"#;

fn fixture() -> Vec<u8> {
    let mut f = Fnt::new(7);
    f.baseline = 2;
    f.layout.push(Piece::Bytes(vec![2, 0xFF, 0xFC]));
    for c in 0x20u8..0x7F {
        let w = 2 + c % 6;
        let n = usize::from(w) * 7;
        f.glyphs[usize::from(c)] = Some(Glyph {
            width: w,
            pixels: (0..n).map(|i| (i * 5 + usize::from(c)) % 4 == 0).collect(),
            tail: 0,
        });
        f.layout.push(Piece::Record(vec![c]));
    }
    fnt::write(&f).unwrap()
}

/// The fonts checked: the corpus's when present, and the fixture.
fn fonts(dir: &Path) -> Vec<PathBuf> {
    let p = dir.join("FIXTURE.FNT");
    std::fs::write(&p, fixture()).unwrap();
    let mut v = vec![p];
    match common::corpus() {
        Some(c) => v.extend(common::files_with_ext(&c, &[".fnt"])),
        None => println!("corpus absent: the self-made font only"),
    }
    v
}

#[test]
fn dumps_read_independently_and_rebuild_identically() {
    let t = tempfile::tempdir().unwrap();
    let fonts = fonts(t.path());
    if common::corpus().is_some() {
        assert_eq!(fonts.len(), 1 + 29);
    }
    for (i, f) in fonts.iter().enumerate() {
        let out = t.path().join(format!("d{i}"));
        let fs = f.to_str().unwrap();
        tafs_ok(&["fnt", "dump", fs, "-t", out.to_str().unwrap()]);
        // Python: the font by the reader above, each PNG by Pillow, the CSV by csv
        let got = py(&format!(
            r#"{PY_FNT}
import csv, os
from PIL import Image
h, glyphs = read_fnt({fs:?})
d = {out:?}
rows = {{int(r["code"], 16): int(r["width"]) for r in csv.DictReader(open(d + "/glyphs.csv"))}}
assert rows == {{c: g[0] for c, g in glyphs.items()}}, "csv"
pngs = sorted(n for n in os.listdir(d) if n.startswith("U+"))
assert pngs == ["U+%04X.png" % c for c in sorted(glyphs)], pngs
for c, (w, bits) in glyphs.items():
    im = Image.open(d + "/U+%04X.png" % c).convert("L")
    assert im.size == (w, h), (c, im.size)
    px = "".join("1" if im.getpixel((k % w, k // w)) >= 128 else "0" for k in range(w * h))
    assert px == bits, c
print(len(glyphs))
"#
        ));
        assert!(got.parse::<usize>().unwrap() > 0, "{got}");
        let rebuilt = t.path().join(format!("r{i}.fnt"));
        tafs_ok(&[
            "fnt",
            "build",
            out.to_str().unwrap(),
            "-t",
            rebuilt.to_str().unwrap(),
        ]);
        assert_eq!(
            std::fs::read(&rebuilt).unwrap(),
            std::fs::read(f).unwrap(),
            "{fs}"
        );
    }
}

#[test]
fn render_lays_text_out_as_an_independent_layout() {
    let t = tempfile::tempdir().unwrap();
    let f = t.path().join("FIXTURE.FNT");
    std::fs::write(&f, fixture()).unwrap();
    let png = t.path().join("r.png");
    tafs_ok(&[
        "fnt",
        "render",
        f.to_str().unwrap(),
        "--text",
        "Hi, TA!\nok",
        "--fg",
        "#ffff00",
        "--bg",
        "transparent",
        "-t",
        png.to_str().unwrap(),
    ]);
    let got = py(&format!(
        r#"{PY_FNT}
from PIL import Image
h, glyphs = read_fnt({:?})
lines = ["Hi, TA!", "ok"]
W = max(sum(glyphs[ord(c)][0] for c in l) for l in lines)
want = {{}}
for row, l in enumerate(lines):
    pen = 0
    for c in l:
        w, bits = glyphs[ord(c)]
        for k, b in enumerate(bits):
            if b == "1":
                want[(pen + k % w, row * h + k // w)] = True
        pen += w
im = Image.open({:?}).convert("RGBA")
assert im.size == (W, h * 2), im.size
for y in range(im.size[1]):
    for x in range(im.size[0]):
        p = im.getpixel((x, y))
        assert p == ((255, 255, 0, 255) if (x, y) in want else (0, 0, 0, 0)), (x, y, p)
print(len(want))
"#,
        f.to_str().unwrap(),
        png.to_str().unwrap()
    ));
    assert!(got.parse::<usize>().unwrap() > 10);
}

#[test]
fn a_glyph_edited_by_imagemagick_through_the_mount_lands_exactly() {
    if !fuse_available() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let game = t.path().join("game");
    std::fs::create_dir_all(game.join("fonts")).unwrap();
    let src = common::corpus()
        .map(|c| c.join("ota/fonts/COMIX.FNT"))
        .filter(|p| p.exists());
    let bin = game.join("fonts/COMIX.FNT");
    match &src {
        Some(p) => std::fs::write(&bin, std::fs::read(p).unwrap()).unwrap(),
        None => std::fs::write(&bin, fixture()).unwrap(),
    }
    let before = std::fs::read(&bin).unwrap();
    let mnt = t.path().join("mnt");
    let state = t.path().join("state");
    let _m: Mount = mount_common::mount(
        &game,
        &mnt,
        &["--ttl", "0", "--state-dir", state.to_str().unwrap()],
    );
    let dir = mnt.join("fonts/COMIX.FNT");
    // the mount shows what dump writes
    let dump = t.path().join("dump");
    tafs_ok(&[
        "fnt",
        "dump",
        bin.to_str().unwrap(),
        "-t",
        dump.to_str().unwrap(),
    ]);
    for n in ["U+0041.png", "glyphs.csv", "sheet.png", "metadata.json"] {
        assert_eq!(
            std::fs::read(dir.join(n)).unwrap(),
            std::fs::read(dump.join(n)).unwrap(),
            "{n}"
        );
    }
    // ImageMagick inverts 'A' (every pixel flips), the result copied back over the glyph
    let a = dir.join("U+0041.png");
    let st = std::process::Command::new("convert")
        .arg(&a)
        .arg("-negate")
        .arg(t.path().join("a.png"))
        .status()
        .unwrap();
    assert!(st.success());
    std::fs::copy(t.path().join("a.png"), &a).unwrap();
    let mut after = before.clone();
    for _ in 0..100 {
        after = std::fs::read(&bin).unwrap();
        if after != before {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_ne!(after, before, "font not rebuilt");
    let old = t.path().join("old.fnt");
    std::fs::write(&old, &before).unwrap();
    let diff = py(&format!(
        r#"{PY_FNT}
h, a = read_fnt({:?})
h2, b = read_fnt({:?})
assert h == h2 and a.keys() == b.keys()
changed = [c for c in a if a[c] != b[c]]
assert changed == [0x41], changed
w, old = a[0x41]
w2, new = b[0x41]
assert w == w2
assert new == "".join("1" if v == "0" else "0" for v in old), (old, new)
print("ok")
"#,
        old.to_str().unwrap(),
        bin.to_str().unwrap()
    ));
    assert_eq!(diff, "ok");
    // only A's record changed: same length, bytes outside it identical
    assert_eq!(after.len(), before.len());
    let off = usize::from(u16::from_le_bytes([
        before[4 + 2 * 0x41],
        before[5 + 2 * 0x41],
    ]));
    let len = fnt::record_len(before[off], before[0]);
    assert_eq!(after[..off], before[..off]);
    assert_eq!(after[off + len..], before[off + len..]);
}
