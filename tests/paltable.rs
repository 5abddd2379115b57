//! Palette lookup tables (`.ALP`, `.SHD`, `.LHT`) on the corpus (Cavedog's and TA Mayhem's)
//! and self-made fixtures: `tafs pal dump` read by an independent Python reader (the file's
//! bytes, Pillow for the PNG, csv for the CSV), identical rebuilds, `tafs pal lookup` against
//! a Python rendering, and edits through a real mount (Pillow, ImageMagick, csv) landing
//! exactly the entries edited.

mod common;
mod mount_common;

use common::{py, tafs, tafs_ok};
use mount_common::{fuse_available, Mount};
use std::path::{Path, PathBuf};

/// A palette with some duplicate colours (black at 0 and 10–15, as the game's) and white at 255.
fn fixture_palette() -> Vec<u8> {
    let mut p = Vec::with_capacity(1024);
    for i in 0..256u32 {
        // duplicate blacks as in Mayhem's palette; white last, as in the game's
        let rgb = if (10..16).contains(&i) {
            [0, 0, 0]
        } else if i == 255 {
            [255, 255, 255]
        } else {
            [(i * 37 % 256) as u8, (i * 91 % 256) as u8, (255 - i) as u8]
        };
        p.extend_from_slice(&rgb);
        p.push(0);
    }
    p
}

/// A table of `rows` rows using every index, 0x0a among them.
fn fixture_table(rows: usize, seed: u32) -> Vec<u8> {
    common::noise(rows * 256, seed)
}

/// The tables checked, each with the palette it is drawn in: the corpus's when present, and
/// a fixture game folder's.
fn tables(dir: &Path) -> Vec<(PathBuf, PathBuf)> {
    let pals = dir.join("fixture/palettes");
    std::fs::create_dir_all(&pals).unwrap();
    let pal = pals.join("PALETTE.PAL");
    std::fs::write(&pal, fixture_palette()).unwrap();
    let mut v = Vec::new();
    for (name, rows, seed) in [
        ("PALETTE.ALP", 256, 1),
        ("PALETTE.SHD", 32, 2),
        ("PALETTE.LHT", 32, 3),
    ] {
        let p = pals.join(name);
        std::fs::write(&p, fixture_table(rows, seed)).unwrap();
        v.push((p, pal.clone()));
    }
    match common::corpus() {
        Some(c) => {
            for d in ["ota/palettes", "palettes/mayhem"] {
                for n in ["PALETTE.ALP", "PALETTE.SHD", "PALETTE.LHT"] {
                    v.push((c.join(d).join(n), c.join(d).join("PALETTE.PAL")));
                }
            }
        }
        None => println!("corpus absent: the self-made tables only"),
    }
    v
}

#[test]
fn dumps_read_independently_and_rebuild_identically() {
    let t = tempfile::tempdir().unwrap();
    let tables = tables(t.path());
    for (i, (f, pal)) in tables.iter().enumerate() {
        let out = t.path().join(format!("d{i}"));
        let fs = f.to_str().unwrap();
        tafs_ok(&["pal", "dump", fs, "-t", out.to_str().unwrap()]);
        let got = py(&format!(
            r#"
import csv
from PIL import Image
data = open({fs:?}, "rb").read()
pal = open({pal:?}, "rb").read()[:1024]
rows = len(data) // 256
assert len(data) in (65536, 8192)
im = Image.open({out:?} + "/table.png")
assert im.mode == "P" and im.size == (256, rows), (im.mode, im.size)
rgb = [c for i in range(256) for c in pal[4 * i: 4 * i + 3]]
assert im.getpalette()[:768] == rgb
assert bytes(im.getdata()) == data
lines = list(csv.reader(open({out:?} + "/table.csv")))
assert lines[0] == ["row"] + [str(c) for c in range(256)]
assert len(lines) == rows + 1
for r, line in enumerate(lines[1:]):
    assert int(line[0]) == r
    assert bytes(int(v) for v in line[1:]) == data[256 * r: 256 * r + 256], r
print("ok", rows)
"#,
            pal = pal.to_str().unwrap(),
            out = out.to_str().unwrap(),
        ));
        assert!(got.starts_with("ok"), "{fs}: {got}");
        // rebuilt with and without the original
        let back = t
            .path()
            .join(format!("b{i}.{}", f.extension().unwrap().to_str().unwrap()));
        let (o, b) = (out.to_str().unwrap(), back.to_str().unwrap());
        tafs_ok(&["pal", "build", o, "-t", b, "--base", fs]);
        assert_eq!(
            std::fs::read(&back).unwrap(),
            std::fs::read(f).unwrap(),
            "{fs}"
        );
        tafs_ok(&["pal", "build", o, "-t", b]);
        assert_eq!(
            std::fs::read(&back).unwrap(),
            std::fs::read(f).unwrap(),
            "{fs}"
        );
    }
    // tafs roundtrip covers them
    let mut args = vec!["roundtrip".to_string()];
    args.extend(tables.iter().map(|(f, _)| f.to_string_lossy().to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let report = tafs_ok(&args);
    assert!(
        report.contains(&format!("{n} file(s): {n} ok, 0 failed", n = tables.len())),
        "{report}"
    );
}

#[test]
fn lookup_renders_as_an_independent_rendering_and_answers_entries() {
    let t = tempfile::tempdir().unwrap();
    for (i, (f, pal)) in tables(t.path()).iter().enumerate() {
        let out = t.path().join(format!("l{i}.png"));
        let fs = f.to_str().unwrap();
        let cell = if i % 2 == 0 { 1 } else { 3 };
        tafs_ok(&[
            "pal",
            "lookup",
            fs,
            "--palette",
            pal.to_str().unwrap(),
            "--cell",
            &cell.to_string(),
            "-t",
            out.to_str().unwrap(),
        ]);
        let got = py(&format!(
            r#"
from PIL import Image
data = open({fs:?}, "rb").read()
pal = open({pal:?}, "rb").read()
rows, cell = len(data) // 256, {cell}
im = Image.open({out:?}).convert("RGB")
assert im.size == (256 * cell, rows * cell), im.size
px = im.load()
for y in range(rows * cell):
    for x in range(256 * cell):
        v = data[(y // cell) * 256 + x // cell]
        assert px[x, y] == tuple(pal[4 * v: 4 * v + 3]), (x, y)
r, c = rows - 1, 77
v = data[r * 256 + c]
print("%d,%d %d #%02x%02x%02x" % ((r, c, v) + tuple(pal[4 * v: 4 * v + 3])))
"#,
            pal = pal.to_str().unwrap(),
            out = out.to_str().unwrap(),
        ));
        let (at, want) = got.split_once(' ').unwrap();
        let entry = tafs_ok(&[
            "pal",
            "lookup",
            fs,
            "--palette",
            pal.to_str().unwrap(),
            "--entry",
            at,
        ]);
        assert_eq!(entry.trim(), want, "{fs}");
    }
    // the kind from --kind; the wrong size, an unknown kind, an entry outside: refused
    let odd = t.path().join("table.bin");
    std::fs::write(&odd, fixture_table(32, 9)).unwrap();
    let o = odd.to_str().unwrap();
    assert!(!tafs(&["pal", "lookup", o, "--entry", "0,0"])
        .status
        .success());
    tafs_ok(&["pal", "lookup", o, "--kind", "shd", "--entry", "31,255"]);
    let e = tafs(&["pal", "lookup", o, "--kind", "alp", "--entry", "0,0"]);
    assert!(
        String::from_utf8_lossy(&e.stderr).contains("65536 bytes"),
        "{e:?}"
    );
    let e = tafs(&["pal", "lookup", o, "--kind", "shd", "--entry", "32,0"]);
    assert!(
        String::from_utf8_lossy(&e.stderr).contains("32 rows"),
        "{e:?}"
    );
    assert!(!tafs(&["pal", "lookup", o, "--kind", "xyz"])
        .status
        .success());
}

/// Waits until `bin` differs from `before` and returns it.
fn changed(bin: &Path, before: &[u8]) -> Vec<u8> {
    for _ in 0..200 {
        let now = std::fs::read(bin).unwrap();
        if now != before {
            return now;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("{} not rebuilt", bin.display());
}

/// The offsets where `a` and `b` differ.
fn diff(a: &[u8], b: &[u8]) -> Vec<(usize, u8)> {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .enumerate()
        .filter(|(_, (x, y))| x != y)
        .map(|(i, (_, &y))| (i, y))
        .collect()
}

#[test]
fn edits_through_a_mount_land_exactly() {
    if !fuse_available() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let game = t.path().join("game");
    let pals = game.join("palettes");
    std::fs::create_dir_all(&pals).unwrap();
    // Mayhem's tables use the duplicate black 0x0a where Cavedog's use 0: an editor's save
    // must keep them
    let src = common::corpus().map(|c| c.join("palettes/mayhem"));
    for (n, rows, seed) in [
        ("PALETTE.ALP", 256, 4),
        ("PALETTE.SHD", 32, 5),
        ("PALETTE.PAL", 0, 0),
    ] {
        let bytes = match &src {
            Some(d) => std::fs::read(d.join(n)).unwrap(),
            None if rows == 0 => fixture_palette(),
            None => fixture_table(rows, seed),
        };
        std::fs::write(pals.join(n), bytes).unwrap();
    }
    let alp = pals.join("PALETTE.ALP");
    let shd = pals.join("PALETTE.SHD");
    let (alp0, shd0) = (std::fs::read(&alp).unwrap(), std::fs::read(&shd).unwrap());
    assert!(shd0.contains(&0x0a) || src.is_none());
    let mnt = t.path().join("mnt");
    let state = t.path().join("state");
    let _m: Mount = mount_common::mount(
        &game,
        &mnt,
        &["--ttl", "0", "--state-dir", state.to_str().unwrap()],
    );
    // the mount shows what dump writes
    let dump = t.path().join("dump");
    tafs_ok(&[
        "pal",
        "dump",
        alp.to_str().unwrap(),
        "-t",
        dump.to_str().unwrap(),
    ]);
    let dir = mnt.join("palettes/PALETTE.ALP");
    for n in ["table.png", "table.csv"] {
        assert_eq!(
            std::fs::read(dir.join(n)).unwrap(),
            std::fs::read(dump.join(n)).unwrap(),
            "{n}"
        );
    }
    // Pillow sets two entries of the ALP's PNG and saves over it
    py(&format!(
        r#"
from PIL import Image
p = {:?}
im = Image.open(p)
im.load()
im.putpixel((10, 3), 200)
im.putpixel((255, 255), 7)
im.save(p)
"#,
        dir.join("table.png").to_str().unwrap()
    ));
    let alp1 = changed(&alp, &alp0);
    assert_eq!(
        diff(&alp0, &alp1),
        vec![(3 * 256 + 10, 200), (255 * 256 + 255, 7)]
    );
    // ImageMagick draws one white point into the SHD's PNG (its own palette layout, as
    // ImageMagick writes it): the point becomes the first white index, every other entry —
    // duplicate blacks included — stays
    let sdir = mnt.join("palettes/PALETTE.SHD");
    let white = py(&format!(
        r#"
pal = open({:?}, "rb").read()
print(min(i for i in range(256) if pal[4 * i: 4 * i + 3] == b"\xff\xff\xff"))
"#,
        pals.join("PALETTE.PAL").to_str().unwrap()
    ));
    let white: u8 = white.parse().unwrap();
    let x = (0..256).find(|&x| shd0[5 * 256 + x] != white).unwrap();
    let edited = t.path().join("shd.png");
    let st = std::process::Command::new("convert")
        .arg(sdir.join("table.png"))
        .args(["-fill", "#ffffff", "-draw", &format!("point {x},5")])
        .arg(&edited)
        .status()
        .unwrap();
    assert!(st.success());
    std::fs::copy(&edited, sdir.join("table.png")).unwrap();
    let shd1 = changed(&shd, &shd0);
    assert_eq!(diff(&shd0, &shd1), vec![(5 * 256 + x, white)]);
    // a CSV edit by Python's csv module
    let v = shd1[31 * 256].wrapping_add(1);
    py(&format!(
        r#"
import csv
p = {:?}
rows = list(csv.reader(open(p)))
rows[1 + 31][1 + 0] = "{v}"
with open(p, "w", newline="") as f:
    csv.writer(f, lineterminator="\n").writerows(rows)
"#,
        sdir.join("table.csv").to_str().unwrap()
    ));
    let shd2 = changed(&shd, &shd1);
    assert_eq!(diff(&shd1, &shd2), vec![(31 * 256, v)]);
    // a cell that is no index is refused, the place named in the folder's status, nothing
    // written
    let csvp = sdir.join("table.csv");
    let text = std::fs::read_to_string(&csvp)
        .unwrap()
        .replacen("\n3,", "\n3,300", 1);
    let _ = std::fs::write(&csvp, text);
    let mut status = String::new();
    for _ in 0..200 {
        status = std::fs::read_to_string(sdir.join(".tafs-status")).unwrap_or_default();
        if status.contains("table.csv") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(status.contains("row 5, column 0"), "{status}");
    assert_eq!(std::fs::read(&shd).unwrap(), shd2);
}
