//! `tafs pcx|pal|3do …`, `tafs gaf palette` and `tafs roundtrip` on the demo folder's
//! self-made files (and corpus files when present), checked with Pillow and by bytes.

mod common;

use common::py;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const TAFS: &str = env!("CARGO_BIN_EXE_tafs");

fn run(args: &[&str]) -> Output {
    Command::new(TAFS).args(args).output().unwrap()
}

fn ok(args: &[&str]) -> String {
    let o = run(args);
    assert!(
        o.status.success(),
        "tafs {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn demo() -> (tempfile::TempDir, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let g = t.path().join("game");
    tafs::cli::demo::write_demo(&g).unwrap();
    (t, g)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn pcx_describe_convert_dump_build() {
    let (t, g) = demo();
    let pcx = g.join("unitpics/demo.pcx");
    let d = ok(&["pcx", "describe", s(&pcx)]);
    assert!(d.contains("size: 64×64 (8-bit paletted)"), "{d}");
    assert!(
        d.contains("encoder: this codec's runs reproduce the file"),
        "{d}"
    );
    // PCX → PNG: Pillow sees the same pixels in both
    let png = t.path().join("pic.png");
    ok(&["pcx", "convert", s(&pcx), "-t", s(&png)]);
    let same = py(&format!(
        "from PIL import Image\na = Image.open('{}'); b = Image.open('{}')\nprint(a.mode, b.mode, list(a.convert('RGB').getdata()) == list(b.convert('RGB').getdata()))",
        pcx.display(),
        png.display()
    ));
    assert_eq!(same, "P P True");
    // PNG (RGB, colours of the TA palette) → PCX, read back by Pillow
    let rgb = t.path().join("rgb.png");
    py(&format!(
        "from PIL import Image\nim = Image.open('{}').convert('RGB')\nim.putpixel((3, 3), (255, 255, 0))\nim.save('{}')",
        png.display(),
        rgb.display()
    ));
    let back = t.path().join("back.pcx");
    ok(&["pcx", "convert", s(&rgb), "-t", s(&back)]);
    let same = py(&format!(
        "from PIL import Image\na = Image.open('{}').convert('RGB'); b = Image.open('{}').convert('RGB')\nprint(a.size, list(a.getdata()) == list(b.getdata()))",
        back.display(),
        rgb.display()
    ));
    assert_eq!(same, "(64, 64) True");
    assert!(!run(&["pcx", "convert", s(&pcx), "-t", "/tmp/x.tga"])
        .status
        .success());
    // dump → build: identical unedited, with or without --base
    let dump = t.path().join("dump");
    ok(&["pcx", "dump", s(&pcx), "-t", s(&dump)]);
    let out = t.path().join("out.pcx");
    ok(&["pcx", "build", s(&dump), "-t", s(&out)]);
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&pcx).unwrap());
    ok(&["pcx", "build", s(&dump), "-t", s(&out), "--base", s(&pcx)]);
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&pcx).unwrap());
    // a corpus picture too
    let c = Path::new("../shared/corpus/game/unitpics/ArmRaz.pcx");
    if c.exists() {
        let dump = t.path().join("dump-c");
        ok(&["pcx", "dump", s(c), "-t", s(&dump)]);
        ok(&["pcx", "build", s(&dump), "-t", s(&out)]);
        assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(c).unwrap());
    }
    std::fs::write(t.path().join("bad.pcx"), b"\x0a\x05\x01").unwrap();
    let o = run(&["pcx", "describe", s(&t.path().join("bad.pcx"))]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("offset"));
}

#[test]
fn pal_dump_build_gpl_and_gaf_palette() {
    let (t, g) = demo();
    let pal = g.join("palettes/PALETTE.PAL");
    let bytes = std::fs::read(&pal).unwrap();
    let dump = t.path().join("pal");
    ok(&["pal", "dump", s(&pal), "-t", s(&dump)]);
    let out = t.path().join("out.pal");
    ok(&["pal", "build", s(&dump), "-t", s(&out)]);
    assert_eq!(std::fs::read(&out).unwrap(), bytes);
    // an edited CSV row
    let csv = std::fs::read_to_string(dump.join("palette.csv")).unwrap();
    let row = format!("\n3,{},{},{},0\n", bytes[12], bytes[13], bytes[14]);
    assert!(csv.contains(&row));
    std::fs::write(dump.join("palette.csv"), csv.replace(&row, "\n3,9,8,7,0\n")).unwrap();
    ok(&["pal", "build", s(&dump), "-t", s(&out)]);
    let edited = std::fs::read(&out).unwrap();
    assert_eq!(&edited[12..16], &[9, 8, 7, 0]);
    assert_eq!(&edited[..12], &bytes[..12]);
    assert_eq!(&edited[16..], &bytes[16..]);
    // the GIMP palette: one "R G B<TAB>index N" line per entry of the file
    let gpl = ok(&["pal", "gpl", s(&pal)]);
    let lines: Vec<&str> = gpl.lines().collect();
    assert_eq!(
        lines[..4],
        ["GIMP Palette", "Name: PALETTE.PAL", "Columns: 16", "#"]
    );
    assert_eq!(lines.len(), 4 + 256);
    for (i, l) in lines[4..].iter().enumerate() {
        let (rgb, idx) = l.split_once('\t').unwrap();
        let v: Vec<u8> = rgb.split_whitespace().map(|x| x.parse().unwrap()).collect();
        assert_eq!(v, bytes[i * 4..i * 4 + 3], "entry {i}");
        assert_eq!(idx, format!("index {i}"));
    }
    // the carrier .pcx: its palette, and a build that keeps its picture
    let carrier = g.join("palettes/kingdoms.pcx");
    let cg = ok(&["pal", "gpl", s(&carrier)]);
    assert!(cg.contains("\n 34  34  34\tindex 2\n"), "{cg}");
    let cd = t.path().join("carrier");
    ok(&["pal", "dump", s(&carrier), "-t", s(&cd)]);
    let cout = t.path().join("c.pcx");
    assert!(!run(&["pal", "build", s(&cd), "-t", s(&cout)])
        .status
        .success());
    ok(&[
        "pal",
        "build",
        s(&cd),
        "-t",
        s(&cout),
        "--base",
        s(&carrier),
    ]);
    assert_eq!(
        std::fs::read(&cout).unwrap(),
        std::fs::read(&carrier).unwrap()
    );
    // gaf palette: the palette the GAF resolves to, the same text as palette.gpl of its dump
    let gaf = g.join("anims/demo.gaf");
    let target = t.path().join("demo.gpl");
    ok(&["gaf", "palette", s(&gaf), "-t", s(&target)]);
    let gd = t.path().join("gaf");
    ok(&["gaf", "dump", s(&gaf), "-t", s(&gd)]);
    let from_dump = std::fs::read(gd.join("palette.gpl")).unwrap();
    assert_eq!(std::fs::read(&target).unwrap(), from_dump);
    assert_eq!(
        String::from_utf8_lossy(&from_dump).replace("palettes/PALETTE.PAL", "PALETTE.PAL"),
        gpl
    );
    // the build ignores it
    let rebuilt = t.path().join("re.gaf");
    ok(&["gaf", "build", s(&gd), "-t", s(&rebuilt), "--base", s(&gaf)]);
    assert_eq!(
        std::fs::read(&rebuilt).unwrap(),
        std::fs::read(&gaf).unwrap()
    );
}

#[test]
fn model_describe_and_dump() {
    let (t, g) = demo();
    let m = g.join("objects3d/demo.3do");
    let d = ok(&["3do", "describe", s(&m)]);
    assert!(d.contains("2 piece(s), 16 vertices, 12 primitives"), "{d}");
    assert!(
        d.contains("base,,0,0,0,8,6\nturret,base,0,8,2,8,6\n"),
        "{d}"
    );
    assert!(d.contains("textures: 2 named, 2 found"), "{d}");
    let out = t.path().join("m");
    ok(&["3do", "dump", s(&m), "-t", s(&out)]);
    let obj = std::fs::read_to_string(out.join("model.obj")).unwrap();
    assert_eq!(obj.lines().filter(|l| l.starts_with("f ")).count(), 12);
    assert_eq!(obj.lines().filter(|l| l.starts_with("v ")).count(), 16);
    // the turret sits on the hull: its top at 8 + 5 game units, 2 units forward (−z in OBJ)
    assert!(obj.contains("\nv -5 13 -7\n"), "{obj}");
    let mtl = std::fs::read_to_string(out.join("model.mtl")).unwrap();
    assert!(mtl.contains("map_Kd textures/checker.png"));
    let sizes = py(&format!(
        "from PIL import Image\nfor n in ['preview.png', 'textures/checker.png', 'textures/stripes.png']: print(Image.open('{}/' + n).size)",
        out.display()
    ));
    assert_eq!(sizes, "(512, 512)\n(32, 32)\n(32, 32)");
    assert!(!run(&["3do", "describe", s(&g.join("unitpics/demo.pcx"))])
        .status
        .success());
}

#[test]
fn roundtrip_covers_every_rebuildable_kind() {
    let (t, g) = demo();
    let out = ok(&["roundtrip", s(&g)]);
    for kind in ["gaf", "tnt", "pcx", "pal", "3do"] {
        assert!(
            out.lines().any(|l| l.starts_with("ok")
                && l.contains(&format!(" {kind} "))
                && l.contains("identical")),
            "{kind}: {out}"
        );
    }
    assert!(out.contains("0 failed"), "{out}");
    // a file that does not decode fails the run
    std::fs::write(g.join("unitpics/broken.pcx"), b"not a pcx").unwrap();
    let o = run(&["roundtrip", s(&g)]);
    assert_eq!(o.status.code(), Some(1));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("FAIL     pcx"), "{text}");
    assert!(!run(&["roundtrip", s(&t.path().join("nope.txt"))])
        .status
        .success());
}
