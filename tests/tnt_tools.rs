//! kbot's map commands: `tafs tnt buildmap`, `voidmap`, `ascii`, `optimize`, `preview
//! --schema` and the quality rules of `tafs tnt lint` (text and SARIF), each checked against a
//! Python computation from the format facts (a TNT reader written from the header layout,
//! Pillow for the PNGs), on a self-made map and the corpus map.

mod common;
mod tnt_support;

use common::{py, tafs, tafs_ok};
use std::path::Path;
use tnt_support::{name, Fixture};

/// Reads a 0x2000 map by the published layout: header u32s (width 0x04, height 0x08, tile
/// grid 0x0C, attributes 0x10, tile graphics 0x14, tiles 0x18, features 0x1C, sea level
/// 0x24), attributes of 4 bytes (height, u16 feature word, pad), 1,024 bytes per tile.
const PY_TNT: &str = r#"
import struct
def read_tnt(path):
    d = open(path, "rb").read()
    h = struct.unpack_from("<16I", d, 0)
    w, hh = h[1], h[2]
    m = dict(w=w, h=hh, ntiles=h[6], nfeat=h[7], sea=h[9])
    m["attrs"] = [(d[h[4] + 4 * i], struct.unpack_from("<H", d, h[4] + 4 * i + 1)[0]) for i in range(w * hh)]
    tx, ty = w // 2, hh // 2
    m["tilemap"] = list(struct.unpack_from("<%dH" % (tx * ty), d, h[3]))
    m["tiles"] = [d[h[5] + 1024 * i: h[5] + 1024 * (i + 1)] for i in range(h[6])]
    m["features"] = [d[h[8] + 132 * i: h[8] + 132 * (i + 1)] for i in range(h[7])]
    return m
"#;

/// A 16 × 16-cell map: a cliff, water, a void wall cutting off a 4-cell-wide strip on the
/// right, a metal rock and a tree placed, tile 3 a copy of tile 1.
fn fixture() -> Vec<u8> {
    let mut f = Fixture::small(8, 8, 5);
    f.tiles[3] = f.tiles[1].clone();
    f.features = vec![(0, name("Tree1")), (1, name("Rock1"))];
    let w = f.width as usize;
    for (i, a) in f.attrs.iter_mut().enumerate() {
        let (x, y) = (i % w, i / w);
        a.0 = 40;
        if y < 3 && x < 4 {
            a.0 = 5; // water (sea level 20)
        }
        if (6..9).contains(&x) && (5..8).contains(&y) {
            a.0 = 120; // a plateau: cliff edges around it
        }
        if x == 11 {
            a.1 = 0xFFFC; // the void wall
        }
        if x == 12 && y == 0 {
            a.1 = 0xFFFE; // impassable for the quality rules, not void for buildmap
        }
    }
    f.attrs[2 * w + 8].1 = 0; // a tree
    f.attrs[9 * w + 3].1 = 1; // the metal rock
    f.bytes()
}

const OTA: &str = "[GlobalHeader]\n{\nmissionname=Test;\nmissiondescription=d;\nplanet=;\nnumplayers=2, 3;\nsize=1 x 1;\n\
[Schema 0]\n{\n[specials]\n{\n[special0]\n{\nspecialwhat=StartPos1;\nXPos=40;\nZPos=40;\n}\n\
[special1]\n{\nspecialwhat=StartPos2;\nXPos=180;\nZPos=100;\n}\n}\n}\n\
[Schema 1]\n{\n[specials]\n{\n[special0]\n{\nspecialwhat=StartPos1;\nXPos=900;\nZPos=40;\n}\n}\n}\n}\n";

fn game(dir: &Path) -> std::path::PathBuf {
    let g = dir.join("game");
    std::fs::create_dir_all(g.join("maps")).unwrap();
    std::fs::create_dir_all(g.join("features/all")).unwrap();
    std::fs::create_dir_all(g.join("palettes")).unwrap();
    std::fs::write(
        g.join("features/all/f.tdf"),
        "[Tree1]\n{\nfootprintx=1;\n}\n[Rock1]\n{\nmetal=5;\n}\n",
    )
    .unwrap();
    let map = g.join("maps/t.tnt");
    std::fs::write(&map, fixture()).unwrap();
    std::fs::write(g.join("maps/t.ota"), OTA).unwrap();
    map
}

/// The maps checked: the fixture and the corpus map.
fn maps(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut v = vec![game(dir)];
    match common::corpus() {
        Some(c) => v.push(c.join("game/maps/example.tnt")),
        None => println!("corpus absent: the self-made map only"),
    }
    v
}

#[test]
fn buildmap_and_voidmap_match_a_python_classification() {
    let t = tempfile::tempdir().unwrap();
    for (i, map) in maps(t.path()).iter().enumerate() {
        let m = map.to_str().unwrap();
        let (b, v) = (
            t.path().join(format!("b{i}.png")),
            t.path().join(format!("v{i}.png")),
        );
        tafs_ok(&["tnt", "buildmap", m, "-t", b.to_str().unwrap()]);
        tafs_ok(&["tnt", "voidmap", m, "-t", v.to_str().unwrap()]);
        let b2 = t.path().join(format!("b{i}-sea0.png"));
        tafs_ok(&[
            "tnt",
            "buildmap",
            m,
            "--sealevel",
            "0",
            "-t",
            b2.to_str().unwrap(),
        ]);
        let got = py(&format!(
            r#"{PY_TNT}
from PIL import Image
m = read_tnt({m:?})
w, h, A = m["w"], m["h"], m["attrs"]
def klass(x, y, sea):
    ht, f = A[y * w + x]
    if f == 0xFFFC: return (0, 0, 0)
    if f < m["nfeat"]: return (255, 0, 0)
    if ht < sea: return (0, 0, 255)
    for nx, ny in ((x - 1, y), (x + 1, y), (x, y - 1), (x, y + 1)):
        if 0 <= nx < w and 0 <= ny < h and abs(ht - A[ny * w + nx][0]) > 32:
            return (255, 255, 0)
    return (0, 255, 0)
counts = {{}}
for path, sea in (({b:?}, m["sea"]), ({b2:?}, 0)):
    im = Image.open(path).convert("RGB")
    assert im.size == (w, h)
    for y in range(h):
        for x in range(w):
            k = klass(x, y, sea)
            assert im.getpixel((x, y)) == k, (path, x, y, im.getpixel((x, y)), k)
            counts[k] = counts.get(k, 0) + 1
vm = Image.open({v:?})
assert vm.mode == "RGBA" and vm.size == (w, h)
for y in range(h):
    for x in range(w):
        want = (255, 0, 0, 255) if A[y * w + x][1] == 0xFFFC else (0, 0, 0, 0)
        assert vm.getpixel((x, y)) == want, (x, y)
print(len(counts))
"#,
            b = b.to_str().unwrap(),
            b2 = b2.to_str().unwrap(),
            v = v.to_str().unwrap(),
        ));
        if i == 0 {
            // the fixture has every class
            assert_eq!(got, "5", "{m}");
        }
    }
}

#[test]
fn ascii_matches_a_python_sketch() {
    let t = tempfile::tempdir().unwrap();
    for map in maps(t.path()) {
        let m = map.to_str().unwrap();
        for cols in [1usize, 5, 16, 64] {
            let out = tafs_ok(&["tnt", "ascii", m, "--cols", &cols.to_string()]);
            let want = py(&format!(
                r#"{PY_TNT}
import sys
m = read_tnt({m:?})
w, h, A = m["w"], m["h"], m["attrs"]
b = max(1, -(-w // {cols}))
ramp = ".,:;=+*#%@"
lines = []
for by in range(0, h, 2 * b):
    s = ""
    for bx in range(0, w, b):
        cells = [A[y * w + x] for y in range(by, min(by + 2 * b, h)) for x in range(bx, min(bx + b, w))]
        void = sum(1 for c in cells if c[1] == 0xFFFC)
        mean = sum(c[0] for c in cells) // len(cells)
        if 2 * void >= len(cells): s += "X"
        elif mean < m["sea"]: s += "~"
        else: s += ramp[min(mean * 10 // 256, 9)]
    lines.append(s)
sys.stdout.write("\n".join(lines) + "\n")
"#
            ));
            assert_eq!(out.trim_end(), want, "{m} --cols {cols}");
        }
    }
}

#[test]
fn optimize_merges_duplicates_and_draws_the_same_map() {
    let t = tempfile::tempdir().unwrap();
    for (i, map) in maps(t.path()).iter().enumerate() {
        let m = map.to_str().unwrap();
        let out = t.path().join(format!("o{i}.tnt"));
        let o = tafs(&["tnt", "optimize", m, "-t", out.to_str().unwrap()]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let got = py(&format!(
            r#"{PY_TNT}
a, b = read_tnt({m:?}), read_tnt({out:?})
assert (a["w"], a["h"], a["sea"]) == (b["w"], b["h"], b["sea"])
assert a["attrs"] == b["attrs"] and a["features"] == b["features"]
uniq = []
for t in a["tiles"]:
    if t not in uniq: uniq.append(t)
assert b["tiles"] == uniq, (len(b["tiles"]), len(uniq))
for ca, cb in zip(a["tilemap"], b["tilemap"]):
    assert a["tiles"][ca] == b["tiles"][cb]
print(len(a["tiles"]), len(b["tiles"]))
"#,
            out = out.to_str().unwrap()
        ));
        let (before, after) = got.split_once(' ').unwrap();
        assert!(
            String::from_utf8_lossy(&o.stderr).contains(&format!("{before} tiles, {after} after")),
            "{got}"
        );
        if i == 0 {
            assert_eq!(got, "5 4");
        }
        // optimizing again changes nothing; the map still reads
        let again = t.path().join(format!("o{i}b.tnt"));
        tafs_ok(&[
            "tnt",
            "optimize",
            out.to_str().unwrap(),
            "-t",
            again.to_str().unwrap(),
        ]);
        assert_eq!(std::fs::read(&again).unwrap(), std::fs::read(&out).unwrap());
        tafs_ok(&["tnt", "describe", out.to_str().unwrap()]);
    }
}

#[test]
fn lint_quality_rules_match_a_python_check_in_text_and_sarif() {
    let t = tempfile::tempdir().unwrap();
    let map = game(t.path());
    let m = map.to_str().unwrap();
    // what the rules find, computed from the bytes and the .ota facts above
    let want = py(&format!(
        r#"{PY_TNT}
from collections import deque
m = read_tnt({m:?})
w, h, A = m["w"], m["h"], m["attrs"]
imp = lambda f: f in (0xFFFC, 0xFFFE)
cliffs = sum(1 for y in range(h) for x in range(w) for nx, ny in ((x + 1, y), (x, y + 1))
             if nx < w and ny < h and abs(A[y * w + x][0] - A[ny * w + nx][0]) > 32)
starts = [(0, 1, 40, 40), (0, 2, 180, 100), (1, 1, 900, 40)]
seen = set(); q = deque()
for _, _, x, z in starts:
    ax, ay = x // 16, z // 16
    if ax < w and ay < h and not imp(A[ay * w + ax][1]) and (ax, ay) not in seen:
        seen.add((ax, ay)); q.append((ax, ay))
while q:
    x, y = q.popleft()
    for nx, ny in ((x + 1, y), (x - 1, y), (x, y + 1), (x, y - 1)):
        if 0 <= nx < w and 0 <= ny < h and not imp(A[ny * w + nx][1]) and (nx, ny) not in seen:
            seen.add((nx, ny)); q.append((nx, ny))
passable = sum(1 for a in A if not imp(a[1]))
stranded = passable - len(seen)
print(cliffs, stranded)
"#
    ));
    let (cliffs, stranded) = want.split_once(' ').unwrap();
    let text = tafs(&["tnt", "lint", m]);
    let out = String::from_utf8_lossy(&text.stdout).to_string();
    for (rule, needle) in [
        ("otaFields", "planet".to_string()),
        ("schemaSlots", "Schema 1 (1 starts)".to_string()),
        (
            "startsInBounds",
            "Schema 1 StartPos1 at (900, 40) outside the map".to_string(),
        ),
        ("heightDiscontinuities", format!("{cliffs} cliff edges")),
        ("voidIslands", format!("{stranded} passable cells")),
        ("duplicate-tiles", "3=1".to_string()),
    ] {
        let line = out
            .lines()
            .find(|l| l.contains(&format!("warning[{rule}]")))
            .unwrap_or_else(|| panic!("{rule} missing: {out}"));
        assert!(line.contains(&needle), "{rule}: {line}");
    }
    // the metal rock at cell (3, 9) = tile (1.5, 4.5) is within 24 tiles of every start but
    // the one outside the map (900 px = 28 tiles)
    let metal = out
        .lines()
        .find(|l| l.contains("warning[metalProximity]"))
        .unwrap();
    assert!(
        metal.contains("Schema 1 StartPos1") && !metal.contains("Schema 0"),
        "{metal}"
    );
    // SARIF: the same findings, read by Python's json
    let sarif = tafs(&["tnt", "lint", "--format", "sarif", m]);
    let path = t.path().join("lint.sarif");
    std::fs::write(&path, &sarif.stdout).unwrap();
    let got = py(&format!(
        r#"
import json
log = json.load(open({:?}))
assert log["version"] == "2.1.0"
run = log["runs"][0]
rules = [r["id"] for r in run["tool"]["driver"]["rules"]]
for r in run["results"]:
    assert rules[r["ruleIndex"]] == r["ruleId"]
    assert r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith("t.tnt")
print("\n".join(sorted("%s: %s" % (r["ruleId"], r["message"]["text"]) for r in run["results"])))
"#,
        path.to_str().unwrap()
    ));
    let mut text_lines: Vec<String> = out
        .lines()
        .map(|l| {
            let (_, rest) = l.split_once(": warning[").unwrap();
            let (rule, msg) = rest.split_once("]: ").unwrap();
            format!("{rule}: {msg}")
        })
        .collect();
    text_lines.sort();
    assert_eq!(got, text_lines.join("\n"));
    // --no-quality leaves them out; a map without an .ota skips the .ota rules
    let o = tafs_ok(&["tnt", "lint", "--no-quality", m]);
    assert!(
        !o.contains("otaFields") && !o.contains("heightDiscontinuities"),
        "{o}"
    );
    std::fs::remove_file(map.with_extension("ota")).unwrap();
    let o = tafs(&["tnt", "lint", m]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        !out.contains("otaFields") && out.contains("heightDiscontinuities"),
        "{out}"
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("no .ota beside the map"));
}

#[test]
fn preview_schema_draws_that_schemas_starts() {
    let t = tempfile::tempdir().unwrap();
    let map = game(t.path());
    let m = map.to_str().unwrap();
    let png = t.path().join("p.png");
    let p = png.to_str().unwrap();
    for (schema, starts) in [("0", 2), ("1", 1)] {
        let o = tafs(&["tnt", "preview", m, "--schema", schema, "-t", p]);
        assert!(o.status.success());
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(&format!("{starts} start positions")), "{err}");
    }
    // schema 0's first start (40, 40) carries a marker: the pixel there is no longer the
    // tile's colour; with schema 1 it is
    let read = |schema: &str| {
        tafs_ok(&["tnt", "preview", m, "--schema", schema, "-t", p]);
        py(&format!(
            "from PIL import Image\nprint(Image.open({p:?}).convert('RGB').getpixel((40, 40)))"
        ))
    };
    let (with, without) = (read("0"), read("1"));
    assert_ne!(with, without);
    let o = tafs(&["tnt", "preview", m, "--schema", "5", "-t", p]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("no schema 5 (it has 2)"), "{err}");
}

/// `tafs tnt lint MAP | head -0`: the findings go to a pipe nobody reads; the command ends
/// with exit 0 and no panic (a closed pipe is the reader's choice, not an error).
#[test]
fn lint_into_a_closed_pipe_ends_quietly() {
    use std::os::fd::{FromRawFd, OwnedFd};
    let t = tempfile::tempdir().unwrap();
    let map = game(t.path());
    let mut fds = [0; 2];
    // SAFETY: `pipe` fills two new descriptors that nothing else owns.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(read);
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_tafs"))
        .args(["tnt", "lint", map.to_str().unwrap()])
        .stdout(std::process::Stdio::from(write))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}
