//! Palette views (`.pal` and TA: Kingdoms 1×1 `.pcx` carriers) on the corpus and on fixtures:
//! the GIMP palette read by an independent parser of GIMP's format, the swatch and the CSV
//! read by Pillow and Python's csv module, identical rebuilds, and edits of either file.

mod common;

use std::path::Path;
use std::process::Command;
use tafs::formats::palette::{Palette, TA_PALETTE_BYTES};
use tafs::formats::Limits;
use tafs::view::pal::{self, PaletteFile};
use tafs::view::MemFileSet;

/// Reads a view directory with Python only: the .gpl by GIMP's rules (magic line, optional
/// Name/Columns, `#` comments, `R G B name` rows), the CSV with the csv module and the swatch
/// with Pillow (centre of each 16-pixel cell). Prints JSON.
const PY_READ: &str = r##"
import sys, json, csv, re
d = sys.argv[1]
lines = open(d + "/palette.gpl", encoding="utf-8").read().split("\n")
assert lines[0] == "GIMP Palette", lines[0]
assert lines[1].startswith("Name: "), lines[1]
assert lines[2] == "Columns: 16", lines[2]
rows, names = [], []
for ln in lines[3:]:
    if ln.startswith("#") or ln.strip() == "":
        continue
    m = re.match(r"^\s*(\d+)\s+(\d+)\s+(\d+)\t(.*)$", ln)
    assert m, repr(ln)
    rows.append([int(m.group(i)) for i in (1, 2, 3)])
    names.append(m.group(4))
assert names == ["index %d" % i for i in range(256)], names[:3]
with open(d + "/palette.csv", newline="") as f:
    r = list(csv.DictReader(f))
assert [int(x["index"]) for x in r] == list(range(256))
csv_rows = [[int(x["r"]), int(x["g"]), int(x["b"])] for x in r]
extra = [int(x["extra"]) for x in r] if "extra" in r[0] else None
out = {"gpl": rows, "csv": csv_rows, "extra": extra}
try:
    from PIL import Image
    im = Image.open(d + "/swatch.png").convert("RGB")
    assert im.size == (256, 256), im.size
    out["swatch"] = [list(im.getpixel(((i % 16) * 16 + 8, (i // 16) * 16 + 8))) for i in range(256)]
    # every pixel of a cell is the cell's colour
    for i in (0, 17, 255):
        x0, y0 = (i % 16) * 16, (i // 16) * 16
        assert all(im.getpixel((x0 + x, y0 + y)) == tuple(out["swatch"][i]) for x in range(16) for y in range(16))
except ImportError:
    out["swatch"] = None
print(json.dumps(out))
"##;

fn py_read(dir: &Path) -> serde_json::Value {
    let o = Command::new("python3")
        .args(["-c", PY_READ])
        .arg(dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

fn python() -> bool {
    let ok = Command::new("python3").arg("--version").output().is_ok();
    if !ok {
        println!("SKIPPED: python3 is missing; independent checks not run");
    }
    ok
}

fn inputs() -> Vec<(String, PaletteFile, Vec<u8>)> {
    let mut v = vec![(
        "builtin.pal".to_string(),
        PaletteFile::Pal,
        TA_PALETTE_BYTES.to_vec(),
    )];
    let mut odd = TA_PALETTE_BYTES.to_vec();
    odd[3] = 0xAB;
    odd.extend_from_slice(&[1, 2, 3]);
    v.push(("odd.pal".into(), PaletteFile::Pal, odd));
    v.push((
        "raw.pcx".into(),
        PaletteFile::Raw,
        Palette::ta().rgb_bytes(),
    ));
    if let Some(c) = common::corpus() {
        for p in common::files_with_ext(&c, &[".pal", ".pcx"]) {
            let b = std::fs::read(&p).unwrap();
            let kind = if p.to_string_lossy().to_ascii_lowercase().ends_with(".pal") {
                PaletteFile::Pal
            } else if let Some(k) = pal::pcx_palette_kind(&b, &Limits::default()) {
                k
            } else {
                continue;
            };
            v.push((p.display().to_string(), kind, b));
        }
    }
    v
}

fn expected(kind: PaletteFile, data: &[u8]) -> Palette {
    match kind {
        PaletteFile::Pal => Palette::from_pal(data).unwrap(),
        PaletteFile::Pcx => Palette::from_pcx(data).unwrap(),
        PaletteFile::Raw => Palette::from_rgb(data.try_into().unwrap()),
    }
}

#[test]
fn views_read_independently_and_rebuild_identically() {
    let lim = Limits::default();
    let py = python();
    let ins = inputs();
    if common::corpus().is_some() {
        assert!(ins.iter().filter(|i| i.1 == PaletteFile::Pcx).count() >= 6);
    }
    for (name, kind, data) in ins {
        let files = pal::files(&data, kind, "x", &lim).unwrap();
        let fs = MemFileSet {
            files: files.iter().cloned().collect(),
        };
        assert_eq!(
            pal::build(&fs, kind, Some(&data), &lim).unwrap(),
            data,
            "{name}"
        );
        if !py {
            continue;
        }
        let t = tempfile::tempdir().unwrap();
        for (f, b) in &files {
            std::fs::write(t.path().join(f), b).unwrap();
        }
        let v = py_read(t.path());
        let want: Vec<Vec<u8>> = expected(kind, &data)
            .colors
            .iter()
            .map(|c| c.to_vec())
            .collect();
        let got = |k: &str| -> Vec<Vec<u8>> { serde_json::from_value(v[k].clone()).unwrap() };
        assert_eq!(got("gpl"), want, "{name}");
        assert_eq!(got("csv"), want, "{name}");
        if !v["swatch"].is_null() {
            assert_eq!(got("swatch"), want, "{name}");
        }
        match kind {
            PaletteFile::Pal => {
                let extra: Vec<u8> = serde_json::from_value(v["extra"].clone()).unwrap();
                let want: Vec<u8> = data.chunks_exact(4).take(256).map(|q| q[3]).collect();
                assert_eq!(extra, want, "{name}");
            }
            PaletteFile::Pcx | PaletteFile::Raw => assert!(v["extra"].is_null()),
        }
    }
}

/// Edits row 5 of the CSV with Python's csv module.
const PY_CSV_EDIT: &str = r#"
import sys, csv
p = sys.argv[1]
rows = list(csv.reader(open(p, newline="")))
rows[6][1:4] = ["11", "22", "33"]
with open(p, "w", newline="") as f:
    csv.writer(f, lineterminator="\n").writerows(rows)
"#;

/// Paints cell 200 of the swatch with Pillow.
const PY_SWATCH_EDIT: &str = r#"
import sys
from PIL import Image
p = sys.argv[1]
im = Image.open(p).convert("RGBA")
for y in range(16):
    for x in range(16):
        im.putpixel((8 * 16 + x, 12 * 16 + y), (44, 55, 66, 255))
im.save(p)
"#;

#[test]
fn csv_and_swatch_edits_rebuild_the_palette_file() {
    let lim = Limits::default();
    if !python() {
        return;
    }
    for (name, kind, data) in inputs() {
        let t = tempfile::tempdir().unwrap();
        let files = pal::files(&data, kind, "x", &lim).unwrap();
        for (f, b) in &files {
            std::fs::write(t.path().join(f), b).unwrap();
        }
        let run = |script: &str, file: &str| {
            let o = Command::new("python3")
                .args(["-c", script])
                .arg(t.path().join(file))
                .output()
                .unwrap();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        };
        run(PY_CSV_EDIT, pal::CSV);
        let fs = tafs::view::DirFileSet::new(t.path());
        let out = pal::build(&fs, kind, Some(&data), &lim).unwrap();
        let mut want = expected(kind, &data);
        want.colors[5] = [11, 22, 33];
        assert_eq!(expected(kind, &out), want, "{name}");
        assert_eq!(out.len(), data.len(), "{name}");
        if kind == PaletteFile::Pal {
            // Only entry 5's colour changed; its fourth byte and any tail are kept.
            let diff: Vec<usize> = (0..data.len()).filter(|&i| out[i] != data[i]).collect();
            assert!(
                diff.iter().all(|&i| (20..23).contains(&i)),
                "{name}: {diff:?}"
            );
        }
        if Command::new("python3")
            .args(["-c", "import PIL"])
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false)
        {
            // Back to the original CSV, then a swatch edit.
            std::fs::write(t.path().join(pal::CSV), &files[2].1).unwrap();
            run(PY_SWATCH_EDIT, pal::SWATCH);
            let out = pal::build(&fs, kind, Some(&data), &lim).unwrap();
            let mut want = expected(kind, &data);
            want.colors[200] = [44, 55, 66];
            assert_eq!(expected(kind, &out), want, "{name}");
            // A conflicting CSV edit on top is refused.
            run(PY_CSV_EDIT, pal::CSV);
            assert!(pal::build(&fs, kind, Some(&data), &lim).is_err(), "{name}");
        }
    }
}

#[test]
fn malformed_palette_files_are_errors() {
    let lim = Limits::default();
    assert!(pal::files(&[0; 1023], PaletteFile::Pal, "x", &lim).is_err());
    assert!(pal::files(&[0; 900], PaletteFile::Pcx, "x", &lim).is_err());
    assert!(pal::files(b"", PaletteFile::Pcx, "x", &lim).is_err());
    let empty = MemFileSet::default();
    assert!(pal::build(&empty, PaletteFile::Pal, None, &lim).is_err());
    assert!(pal::build(&empty, PaletteFile::Pcx, None, &lim).is_err());
}

/// Reads a JASC-PAL file by its published layout (magic, version 0100, count, `R G B` rows)
/// and prints the colours as JSON.
const PY_JASC: &str = r#"
import sys, json
lines = open(sys.argv[1], "rb").read().decode("ascii").split("\r\n")
assert lines[0] == "JASC-PAL" and lines[1] == "0100", lines[:2]
n = int(lines[2])
rows = [[int(v) for v in ln.split(" ")] for ln in lines[3:3 + n]]
assert all(len(r) == 3 for r in rows)
assert lines[3 + n:] == [""], lines[3 + n:]
print(json.dumps(rows))
"#;

#[test]
fn pal_convert_writes_jasc_and_reads_it_back() {
    if !python() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let mut data = TA_PALETTE_BYTES.to_vec();
    data[4..7].copy_from_slice(&[7, 8, 9]);
    // named .pcx with a .pal's bytes, as Cavedog's GUIPAL.PCX
    let src = t.path().join("GUIPAL.PCX");
    std::fs::write(&src, &data).unwrap();
    let tafs = env!("CARGO_BIN_EXE_tafs");
    let jasc = t.path().join("out.pal");
    let st = Command::new(tafs)
        .args(["pal", "convert", "--format", "jasc", "-t"])
        .arg(&jasc)
        .arg(&src)
        .status()
        .unwrap();
    assert!(st.success());
    let o = Command::new("python3")
        .args(["-c", PY_JASC])
        .arg(&jasc)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows: Vec<Vec<u8>> = serde_json::from_slice(&o.stdout).unwrap();
    let want: Vec<Vec<u8>> = data.chunks_exact(4).map(|q| q[..3].to_vec()).collect();
    assert_eq!(rows, want);
    // and back: JASC text → binary .pal gives the original bytes
    let back = t.path().join("back.pal");
    let st = Command::new(tafs)
        .args(["pal", "convert", "--format", "pal", "-t"])
        .arg(&back)
        .arg(&jasc)
        .status()
        .unwrap();
    assert!(st.success());
    assert_eq!(std::fs::read(&back).unwrap(), data);
}
