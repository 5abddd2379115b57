//! `tafs tnt …` end to end on the release binary's interface.

mod common;
mod tnt_support;

use common::tafs;
use std::path::Path;
use std::process::Output;
use tnt_support::{corpus_map, name, Fixture};

fn ok(args: &[&str]) -> Output {
    let o = tafs(args);
    assert!(
        o.status.success(),
        "tafs {args:?} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn corpus_path() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus/game/maps/example.tnt")
}

#[test]
fn corpus_map_describe_lint_unpack_pack_preview() {
    let Some(data) = corpus_map() else { return };
    let map = corpus_path();
    let dir = tempfile::tempdir().unwrap();
    let out = String::from_utf8(ok(&["tnt", "describe", s(&map)]).stdout).unwrap();
    assert!(out.contains("IDVersion:   0x2000"), "{out}");
    assert!(out.contains("Tiles:       177 unique"), "{out}");
    assert!(out.contains("Minimap:     252x252"), "{out}");
    ok(&["tnt", "lint", s(&map)]);
    let un = dir.path().join("un");
    ok(&["tnt", "unpack", s(&map), "-t", s(&un)]);
    let packed = dir.path().join("back.tnt");
    ok(&["tnt", "pack", s(&un), "-t", s(&packed)]);
    assert_eq!(std::fs::read(&packed).unwrap(), data);
    let prev = dir.path().join("p.png");
    ok(&["tnt", "preview", s(&map), "-t", s(&prev)]);
    let d = tafs::view::image::decode_png(&std::fs::read(&prev).unwrap()).unwrap();
    assert_eq!((d.width, d.height), (1024, 1024));
    let jpg = dir.path().join("p.jpg");
    ok(&["tnt", "preview", s(&map), "-t", s(&jpg)]);
    assert_eq!(&std::fs::read(&jpg).unwrap()[..2], &[0xFF, 0xD8]);
}

#[test]
fn fixture_commands_write_what_they_say() {
    let dir = tempfile::tempdir().unwrap();
    let mut f = Fixture::small(4, 4, 3);
    f.features = vec![(0, name("Tree1")), (1, name("Rock"))];
    f.attrs[3].1 = 1;
    f.attrs[10].1 = 0;
    f.attrs[11].1 = 1;
    f.attrs[12].1 = 0xFFFC;
    let map = dir.path().join("m.tnt");
    std::fs::write(&map, f.bytes()).unwrap();

    let d = String::from_utf8(ok(&["tnt", "describe", s(&map)]).stdout).unwrap();
    assert!(d.contains("Features:    2 in table, 3 placements"), "{d}");
    assert!(d.contains("0xfffc (void): 1"), "{d}");
    // Heights are x + y over an 8×8 grid: min 0, max 14, mean 7.0; sea level 20 → all 64 below.
    assert!(
        d.contains("min=0 max=14 mean=7.0  cells below sealevel: 64 (100.00%)"),
        "{d}"
    );
    assert!(d.contains("[  1] Rock  count=2"), "{d}");

    let j: serde_json::Value =
        serde_json::from_slice(&ok(&["tnt", "features", s(&map)]).stdout).unwrap();
    assert_eq!(j["placements"].as_array().unwrap().len(), 3);
    assert_eq!(j["placements"][0]["name"], "Rock");
    assert_eq!(j["placements"][0]["attr_x"], 3);
    assert_eq!(j["table"][1]["placements"], 2);

    let h = dir.path().join("h.png");
    ok(&["tnt", "heightmap", s(&map), "--normalize", "-t", s(&h)]);
    let img = tafs::view::image::decode_png(&std::fs::read(&h).unwrap()).unwrap();
    let tafs::view::image::PngPixels::Gray(g) = img.pixels else {
        panic!("not grey")
    };
    assert_eq!((g[0], g[63]), (0, 255)); // 0..14 stretched to 0..255
    assert_eq!(u32::from(g[7]), 7 * 255 / 14);

    let m = dir.path().join("mini.png");
    ok(&["tnt", "minimap", s(&map), "-t", s(&m)]);
    let img = tafs::view::image::decode_png(&std::fs::read(&m).unwrap()).unwrap();
    assert_eq!((img.width, img.height), (252, 252));

    let i = dir.path().join("i.png");
    ok(&["tnt", "image", s(&map), "-t", s(&i)]);
    let img = tafs::view::image::decode_png(&std::fs::read(&i).unwrap()).unwrap();
    assert_eq!((img.width, img.height), (128, 128));
    assert!(matches!(
        img.pixels,
        tafs::view::image::PngPixels::Indexed { .. }
    ));
}

#[test]
fn lint_rules_fire_and_strict_fails() {
    let dir = tempfile::tempdir().unwrap();
    let mut f = Fixture::small(2, 2, 4);
    f.tilemap = vec![0, 1, 1, 9]; // 9: past the 4 tiles; 2 and 3 unused
    f.tiles[1] = f.tiles[0].clone(); // duplicate
    f.minimap_flags = 0;
    f.minimap_w = 100;
    f.minimap_h = 100;
    f.minimap = vec![0; 100 * 100];
    f.features = vec![(0, name("NoSuchFeature"))];
    let game = dir.path().join("game");
    std::fs::create_dir_all(game.join("maps")).unwrap();
    std::fs::create_dir_all(game.join("features/trees")).unwrap();
    std::fs::write(
        game.join("features/trees/t.tdf"),
        "[Tree1]\n{\nfootprintx=1;\n}\n",
    )
    .unwrap();
    let map = game.join("maps/bad.tnt");
    std::fs::write(&map, f.bytes()).unwrap();
    let o = tafs(&["tnt", "lint", s(&map)]);
    assert!(o.status.success());
    let out = String::from_utf8(o.stdout).unwrap();
    for rule in [
        "bad-tile-index",
        "unresolved-feature",
        "minimap-flag",
        "minimap-size",
        "duplicate-tiles",
        "unused-tiles",
    ] {
        assert!(
            out.contains(&format!("warning[{rule}]")),
            "{rule} missing in {out}"
        );
    }
    assert!(out.contains("NoSuchFeature"), "{out}");
    let o = tafs(&["tnt", "lint", "--strict", s(&map)]);
    assert_eq!(o.status.code(), Some(1));
    // A clean map passes --strict.
    let good = game.join("maps/good.tnt");
    let mut g = Fixture::small(2, 2, 3);
    g.tilemap = vec![0, 1, 2, 0];
    g.features = vec![(0, name("tree1"))];
    std::fs::write(&good, g.bytes()).unwrap();
    let o = tafs(&["tnt", "lint", "--strict", s(&good)]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
}

#[test]
fn kingdoms_map_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut f = Fixture::small(2, 2, 1);
    f.version = 0x4000;
    let map = dir.path().join("k.tnt");
    std::fs::write(&map, f.bytes()).unwrap();
    let o = tafs(&["tnt", "describe", s(&map)]);
    assert!(!o.status.success());
    let e = String::from_utf8(o.stderr).unwrap();
    assert!(e.contains("k.tnt") && e.contains("TA: Kingdoms"), "{e}");
}

#[test]
fn failed_pack_writes_nothing_and_names_the_cell() {
    let dir = tempfile::tempdir().unwrap();
    let map = dir.path().join("m.tnt");
    std::fs::write(&map, Fixture::small(2, 2, 2).bytes()).unwrap();
    let un = dir.path().join("un");
    ok(&["tnt", "unpack", s(&map), "-t", s(&un)]);
    // A second unpack into the same directory is refused (stale tiles would be packed back).
    let o = tafs(&["tnt", "unpack", s(&map), "-t", s(&un)]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("not empty"));
    std::fs::write(un.join("tilemap.csv"), "0,1\n1,x\n").unwrap();
    let out = dir.path().join("out.tnt");
    let o = tafs(&["tnt", "pack", s(&un), "-t", s(&out)]);
    assert!(!o.status.success());
    let e = String::from_utf8(o.stderr).unwrap();
    assert!(e.contains("tilemap.csv: row 2, column 2"), "{e}");
    assert!(!out.exists());
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(leftovers.len(), 2, "{leftovers:?}"); // m.tnt and un/
}

#[test]
fn preview_draws_start_markers_and_reports_missing_features() {
    let dir = tempfile::tempdir().unwrap();
    let game = dir.path().join("game");
    std::fs::create_dir_all(game.join("maps")).unwrap();
    std::fs::create_dir_all(game.join("features")).unwrap();
    std::fs::write(
        game.join("features/all.tdf"),
        "[Rock1]\n{\nfootprintx=2;\nfootprintz=2;\nobject=rock1;\n}\n",
    )
    .unwrap();
    let mut f = Fixture::small(8, 8, 2);
    f.features = vec![(0, name("Rock1")), (1, name("Ghost"))];
    f.attrs[0].1 = 0;
    f.attrs[20].1 = 1;
    let map = game.join("maps/m.tnt");
    std::fs::write(&map, f.bytes()).unwrap();
    std::fs::write(
        game.join("maps/M.OTA"),
        "[GlobalHeader]\n{\n[Schema 0]\n{\n[specials]\n{\n[special0]\n{\nspecialwhat=StartPos1;\nXPos=64;\nZPos=64;\n}\n[special1]\n{\nspecialwhat=StartPos2;\nXPos=200;\nZPos=180;\n}\n}\n}\n}\n",
    )
    .unwrap();
    let out = dir.path().join("p.png");
    let o = ok(&["tnt", "preview", s(&map), "-t", s(&out)]);
    let e = String::from_utf8(o.stderr).unwrap();
    assert!(e.contains("2 start positions"), "{e}");
    assert!(e.contains("\"Ghost\"") && e.contains("no [section]"), "{e}");
    assert!(e.contains("\"Rock1\"") && e.contains("3D object"), "{e}");
    let d = tafs::view::image::decode_png(&std::fs::read(&out).unwrap()).unwrap();
    let tafs::view::image::PngPixels::Rgba(px) = d.pixels else {
        panic!("rgb expected")
    };
    let at = |x: usize, y: usize| &px[(y * 256 + x) * 4..(y * 256 + x) * 4 + 3];
    // Marker 2 at (200, 180): its rim is white at radius 12 (r = 10 + 2 × one digit).
    assert_eq!(at(200 + 12, 180), &[255, 255, 255]);
    // Its body is red between the rim and the digit.
    assert_eq!(at(200 - 6, 180 + 6), &[200, 20, 20]);
}

#[test]
fn preview_draws_gaf_feature_sprites_centred_on_the_footprint() {
    let dir = tempfile::tempdir().unwrap();
    let game = dir.path().join("game");
    for d in ["maps", "features/trees", "anims"] {
        std::fs::create_dir_all(game.join(d)).unwrap();
    }
    let gaf = tafs::formats::gaf::write(&tafs::sample::animated_gaf()).unwrap();
    std::fs::write(game.join("anims/Panels.GAF"), gaf).unwrap();
    std::fs::write(
        game.join("features/trees/p.tdf"),
        "[PanelFeature]\n{\nfilename=panels;\nseqname=PANEL;\nfootprintx=2;\nfootprintz=2;\n}\n",
    )
    .unwrap();
    let mut f = Fixture::small(8, 8, 2);
    f.features = vec![(0, name("PanelFeature"))];
    f.attrs[3 * 16 + 4].1 = 0; // cell (4, 3)
    let map = game.join("maps/m.tnt");
    std::fs::write(&map, f.bytes()).unwrap();
    let out = dir.path().join("p.png");
    let o = ok(&["tnt", "preview", s(&map), "-t", s(&out)]);
    let e = String::from_utf8(o.stderr).unwrap();
    assert!(e.contains("1 sprites drawn"), "{e}");
    let d = tafs::view::image::decode_png(&std::fs::read(&out).unwrap()).unwrap();
    let tafs::view::image::PngPixels::Rgba(px) = d.pixels else {
        panic!("rgb expected")
    };
    let at = |x: usize, y: usize| px[(y * 256 + x) * 4..(y * 256 + x) * 4 + 3].to_vec();
    let pal = tafs::formats::palette::Palette::ta();
    // Footprint 2×2 cells at (4, 3): centre (4·16 + 16, 3·16 + 16) = (80, 64). The panel
    // (24×16, origin 12, 8) covers x 68..92, y 56..72: border index 0x20, (13, 9) is 0xB6.
    assert_eq!(at(68, 56), pal.colors[0x20].to_vec());
    assert_eq!(at(91, 71), pal.colors[0x20].to_vec());
    assert_eq!(at(68 + 13, 56 + 9), pal.colors[0xB6].to_vec());
}

#[test]
fn a_game_palette_travels_with_the_unpacked_directory() {
    let dir = tempfile::tempdir().unwrap();
    let game = dir.path().join("game");
    std::fs::create_dir_all(game.join("maps")).unwrap();
    std::fs::create_dir_all(game.join("palettes")).unwrap();
    // The TA palette with entries 0..16 changed: a mod's palette.
    let mut pal = tafs::formats::palette::Palette::ta().to_pal();
    for (i, b) in pal.iter_mut().take(64).enumerate() {
        *b = (i * 3) as u8;
    }
    std::fs::write(game.join("palettes/PALETTE.PAL"), &pal).unwrap();
    let data = Fixture::small(4, 4, 3).bytes();
    let map = game.join("maps/m.tnt");
    std::fs::write(&map, &data).unwrap();
    let un = dir.path().join("un"); // outside the game folder
    ok(&["tnt", "unpack", s(&map), "-t", s(&un)]);
    let meta = std::fs::read_to_string(un.join("metadata.json")).unwrap();
    assert!(
        meta.contains("\"palette\": \"palettes/PALETTE.PAL\""),
        "{meta}"
    );
    assert!(meta.contains("palette_rgb"), "{meta}");
    let back = dir.path().join("back.tnt");
    ok(&["tnt", "pack", s(&un), "-t", s(&back)]);
    assert_eq!(std::fs::read(&back).unwrap(), data);
}

#[test]
fn cli_unpack_equals_the_mount_view_even_with_a_loading_picture_beside_the_map() {
    let dir = tempfile::tempdir().unwrap();
    let game = dir.path().join("game");
    std::fs::create_dir_all(game.join("maps")).unwrap();
    std::fs::create_dir_all(game.join("palettes")).unwrap();
    std::fs::write(
        game.join("palettes/PALETTE.PAL"),
        tafs::formats::palette::Palette::ta().to_pal(),
    )
    .unwrap();
    // m.pcx: a loading picture with its own (all-grey) palette; it must not colour the map.
    let mut pcx = vec![0u8; 128];
    pcx.push(0x0C);
    pcx.extend(std::iter::repeat_n(128u8, 768));
    std::fs::write(game.join("maps/m.pcx"), &pcx).unwrap();
    let data = Fixture::small(4, 4, 3).bytes();
    let map = game.join("maps/m.tnt");
    std::fs::write(&map, &data).unwrap();
    let un = dir.path().join("un");
    ok(&["tnt", "unpack", s(&map), "-t", s(&un)]);
    let opts = tafs::fs::core::view_options_for(&game, "maps/m.tnt");
    assert_eq!(opts.palette, tafs::formats::palette::Palette::ta());
    let v = tafs::view::open(tafs::view::AssetKind::Tnt, &data, &opts).unwrap();
    for e in v.entries() {
        if e.kind == tafs::view::EntryKind::File {
            let disk = std::fs::read(un.join(&e.path)).unwrap();
            assert!(disk == v.render_vec(&e.path).unwrap(), "{} differs", e.path);
        }
    }
}

#[test]
fn sample_writes_the_demo_map() {
    let dir = tempfile::tempdir().unwrap();
    let map = dir.path().join("sample.tnt");
    ok(&["tnt", "sample", "-t", s(&map)]);
    let bytes = std::fs::read(&map).unwrap();
    let t = tafs::formats::tnt::parse(&bytes, &tafs::formats::Limits::default()).unwrap();
    // 16×16 tiles of 32 px: 32×32 cells of 16 px (the sample's doc comment).
    assert_eq!((t.width, t.height), (32, 32));
    let out = String::from_utf8(ok(&["tnt", "describe", s(&map)]).stdout).unwrap();
    assert!(out.contains("Tiles:       5 unique"), "{out}");
    ok(&["tnt", "lint", s(&map)]);
}
