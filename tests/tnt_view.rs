//! The unpack view of TNT maps and pack: lossless round trips and edits.

mod tnt_support;

use tafs::formats::palette::{Palette, MINIMAP_PAD};
use tafs::formats::tnt;
use tafs::formats::Limits;
use tafs::view::image::{decode_png, write_indexed_png, PngPixels};
use tafs::view::tnt::{pack, pack_with_report, PackOptions, TntView};
use tafs::view::{self, FileSet, MemFileSet, ViewError, ViewOptions};
use tnt_support::{corpus_map, name, tile, Fixture};

fn unpack(data: &[u8]) -> MemFileSet {
    let v = TntView::new(data, &ViewOptions::default()).unwrap();
    MemFileSet::from_view(&v).unwrap()
}

fn pack_default(files: &MemFileSet) -> Result<Vec<u8>, ViewError> {
    pack(files, &PackOptions::default())
}

fn indices(png: &[u8]) -> (u32, u32, Vec<u8>) {
    let d = decode_png(png).unwrap();
    match d.pixels {
        PngPixels::Indexed { indices, .. } => (d.width, d.height, indices),
        other => panic!("not indexed: {:?}", std::mem::discriminant(&other)),
    }
}

fn reencode(w: u32, h: u32, px: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    write_indexed_png(&mut out, w, h, px, &Palette::ta(), None).unwrap();
    out
}

/// A map with features, every sentinel word, garbage after NUL, pads, padding and a tail.
fn rich_fixture() -> Fixture {
    let mut f = Fixture::small(4, 4, 6);
    let words = [
        0u16, 1, 0xFFFB, 0xFFFC, 0xFFFD, 0xFFFE, 0xFFFF, 2, 9, 0xFFFC, 0xFFFC,
    ];
    for (i, w) in words.iter().enumerate() {
        f.attrs[i * 3].1 = *w;
    }
    f.attrs[5].2 = 0x11;
    let mut g = name("Tree1");
    g[40] = 0x99;
    g[127] = 0x01;
    f.features = vec![
        (0, g),
        (1, name("Rock, big \"one\"")),
        (7, name("GreenVent03")),
    ];
    f.pads = [0, 3, 0, 0xFFFF_FFFF];
    f.minimap_flags = 0x101;
    f.map_pad = vec![0xCD; 16];
    f.trailing = vec![0xEE; 5];
    f
}

#[test]
fn corpus_map_unpack_pack_is_identical() {
    let Some(data) = corpus_map() else { return };
    let files = unpack(&data);
    assert_eq!(pack_default(&files).unwrap(), data);
    // Through a real directory, as the CLI does.
    let dir = tempfile::tempdir().unwrap();
    let v = TntView::new(&data, &ViewOptions::default()).unwrap();
    view::write_tree(&v, dir.path()).unwrap();
    let back = pack(&view::DirFileSet::new(dir.path()), &PackOptions::default()).unwrap();
    assert_eq!(back, data);
    // map.png is an indexed 1024×1024 image (32×32 tiles of 32 px).
    let (w, h, _) = indices(&files.files["map.png"]);
    assert_eq!((w, h), (1024, 1024));
}

#[test]
fn files_follow_the_layout() {
    let f = rich_fixture();
    let data = f.bytes();
    let files = unpack(&data);
    let names: Vec<&str> = files.files.keys().map(|s| s.as_str()).collect();
    for want in [
        "map.png",
        "heightmap.png",
        "minimap.png",
        "tilemap.csv",
        "features.csv",
        "metadata.json",
        "tiles/0.png",
        "tiles/5.png",
    ] {
        assert!(names.contains(&want), "{want} missing from {names:?}");
    }
    assert!(!names.contains(&"tiles/6.png"));
    // tilemap.csv: no header, rows = y: cell (x, y) = (x + y) % 6.
    let csv = String::from_utf8(files.files["tilemap.csv"].clone()).unwrap();
    assert_eq!(csv, "0,1,2,3\n1,2,3,4\n2,3,4,5\n3,4,5,0\n");
    // features.csv: one row per placement (words 0, 1, 2 at cells 0, 3, 21 of an 8-wide grid).
    let fcsv = String::from_utf8(files.files["features.csv"].clone()).unwrap();
    assert_eq!(
        fcsv,
        "feature_index,name,attr_x,attr_y\n0,Tree1,0,0\n1,\"Rock, big \"\"one\"\"\",3,0\n2,GreenVent03,5,2\n"
    );
    // heightmap.png: grey, 8×8, value x + y.
    let d = decode_png(&files.files["heightmap.png"]).unwrap();
    let PngPixels::Gray(g) = d.pixels else {
        panic!("heightmap not grey")
    };
    assert_eq!((d.width, d.height), (8, 8));
    assert_eq!(g[8 * 3 + 5], 8);
    // map.png pixel (x, y) = tile[(x/32 + y/32) % 6] at (x%32, y%32).
    let (w, h, px) = indices(&files.files["map.png"]);
    assert_eq!((w, h), (128, 128));
    let (x, y) = (70usize, 100usize);
    let t = (x / 32 + y / 32) % 6;
    assert_eq!(px[y * 128 + x], f.tiles[t][(y % 32) * 32 + x % 32]);
    // tiles/3.png is tile 3.
    let (_, _, t3) = indices(&files.files["tiles/3.png"]);
    assert_eq!(t3, f.tiles[3]);
    // metadata.json keeps the raw buffer and the void/sentinel words.
    let meta: serde_json::Value = serde_json::from_slice(&files.files["metadata.json"]).unwrap();
    assert_eq!(meta["features"][0]["name"], "Tree1");
    assert!(meta["features"][0]["raw"].as_str().unwrap().len() == 256);
    assert!(meta["features"][1].get("raw").is_none());
    assert_eq!(meta["sea_level"], 20);
    let words = meta["feature_words"].as_array().unwrap();
    assert!(words
        .iter()
        .any(|r| r == &serde_json::json!([1, 1, 1, 0xFFFC])));
}

#[test]
fn rich_fixture_unpack_pack_is_identical() {
    let data = rich_fixture().bytes();
    assert_eq!(pack_default(&unpack(&data)).unwrap(), data);
}

#[test]
fn extra_rows_and_tall_minimap_unpack_pack_is_identical() {
    let mut f = Fixture::small(3, 2, 3);
    f.extra_attr_rows = 6;
    f.minimap_h = 256;
    f.minimap = (0..252 * 256).map(|i| (i % 7) as u8).collect();
    let data = f.bytes();
    let files = unpack(&data);
    let (w, h, _) = indices(&files.files["minimap.png"]);
    assert_eq!((w, h), (252, 256));
    assert_eq!(pack_default(&files).unwrap(), data);
}

#[test]
fn legacy_map_packs_as_2000() {
    let mut f = Fixture::small(2, 2, 2);
    f.version = 0x1020;
    f.features = vec![(0, name("Tree1"))];
    f.attrs[2].1 = 0;
    let data = f.bytes();
    let out = pack_default(&unpack(&data)).unwrap();
    let a = tnt::parse(&data, &Limits::default()).unwrap();
    let b = tnt::parse(&out, &Limits::default()).unwrap();
    assert_eq!(b.source_version, 0x2000);
    assert_eq!(
        (b.attrs, b.tilemap, b.tiles, b.features, b.minimap),
        (a.attrs, a.tilemap, a.tiles, a.features, a.minimap)
    );
}

/// Expected minimap pixel by the seed's rule, computed independently here.
fn expected_minimap_pixel(map: &[u8], pw: usize, width: u32, height: u32, mx: u64, my: u64) -> u8 {
    let pal = Palette::ta();
    let vw = u64::from(width) * 16 - 32;
    let vh = u64::from(height) * 16 - 128;
    let (rw, rh) = if vw >= vh {
        (252, 252 * vh / vw)
    } else {
        (252 * vw / vh, 252)
    };
    let mut s = [0u64; 4];
    for y in 0..vh {
        if y * rh / vh != my {
            continue;
        }
        for x in 0..vw {
            if x * rw / vw == mx {
                let c = pal.colors[usize::from(map[y as usize * pw + x as usize])];
                s[0] += u64::from(c[0]);
                s[1] += u64::from(c[1]);
                s[2] += u64::from(c[2]);
                s[3] += 1;
            }
        }
    }
    let avg = |v: u64| ((v + s[3] / 2) / s[3]) as u8;
    pal.nearest([avg(s[0]), avg(s[1]), avg(s[2])], &[MINIMAP_PAD])
}

#[test]
fn map_png_edit_of_one_cell_makes_one_tile_and_rebuilds_the_minimap() {
    // 16×16 tiles (512 px): visible 480×384 → region 252×201.
    let f = Fixture::small(16, 16, 7);
    let data = f.bytes();
    let mut files = unpack(&data);
    let (w, h, mut px) = indices(&files.files["map.png"]);
    // Cell (2, 1) becomes solid index 9 (a colour no fixture tile uses as a whole).
    for y in 32..64 {
        for x in 64..96 {
            px[y * 512 + x] = 9;
        }
    }
    files.files.insert("map.png".into(), reencode(w, h, &px));
    let (out, rep) = pack_with_report(&files, &PackOptions::default()).unwrap();
    assert!(rep.map_retiled && rep.minimap_rebuilt);
    assert_eq!(rep.new_tiles, 1);
    let t = tnt::parse(&out, &Limits::default()).unwrap();
    assert_eq!(t.tile_count(), 8);
    assert_eq!(t.tile(7).unwrap(), &[9u8; 1024][..]);
    let mut want = f.tilemap.clone();
    want[16 + 2] = 7;
    assert_eq!(t.tilemap, want);
    // Minimap: region 252×201, padding 0x64 below and right of it.
    let mini = &t.minimap;
    assert_eq!((mini.width, mini.height), (252, 252));
    for (mx, my) in [(0u64, 0u64), (100, 100), (251, 200), (36, 20), (5, 150)] {
        let got = mini.pixels[my as usize * 252 + mx as usize];
        assert_eq!(
            got,
            expected_minimap_pixel(&px, 512, 32, 32, mx, my),
            "minimap ({mx}, {my})"
        );
        assert_ne!(got, MINIMAP_PAD);
    }
    // Pixel (36, 20) lies inside the edited cell (x 64..96 → 33.6..50.4; y 32..64 → 16.7..33.5).
    assert_eq!(
        Palette::ta().colors[usize::from(mini.pixels[20 * 252 + 36])],
        Palette::ta().colors[9]
    );
    assert_eq!(mini.pixels[201 * 252], MINIMAP_PAD);
    assert_eq!(mini.pixels[251 * 252 + 251], MINIMAP_PAD);
    // Everything else kept.
    let orig = tnt::parse(&data, &Limits::default()).unwrap();
    assert_eq!(t.attrs, orig.attrs);
    assert_eq!(&t.tiles[..7 * 1024], &orig.tiles[..]);
}

#[test]
fn map_png_edit_equal_to_an_existing_tile_adds_none() {
    let f = Fixture::small(4, 4, 5);
    let data = f.bytes();
    let mut files = unpack(&data);
    let (w, h, mut px) = indices(&files.files["map.png"]);
    // Cell (0, 0) (tile 0) now shows tile 3.
    for y in 0..32 {
        px[y * 128..y * 128 + 32].copy_from_slice(&f.tiles[3][y * 32..y * 32 + 32]);
    }
    files.files.insert("map.png".into(), reencode(w, h, &px));
    let (out, rep) = pack_with_report(&files, &PackOptions::default()).unwrap();
    assert_eq!(rep.new_tiles, 0);
    let t = tnt::parse(&out, &Limits::default()).unwrap();
    assert_eq!(t.tile_count(), 5);
    assert_eq!(t.tilemap[0], 3);
    assert_eq!(&t.tilemap[1..], &f.tilemap[1..]);
}

#[test]
fn edited_minimap_wins_over_the_rebuild_and_prune_drops_unused_tiles() {
    let f = Fixture::small(4, 4, 5);
    let data = f.bytes();
    let mut files = unpack(&data);
    let (w, h, mut px) = indices(&files.files["map.png"]);
    for v in px.iter_mut() {
        *v = 9; // every cell the same new tile
    }
    files.files.insert("map.png".into(), reencode(w, h, &px));
    let mini = vec![3u8; 252 * 252];
    files
        .files
        .insert("minimap.png".into(), reencode(252, 252, &mini));
    let opts = PackOptions {
        prune: true,
        ..Default::default()
    };
    let (out, rep) = pack_with_report(&files, &opts).unwrap();
    assert_eq!(
        (rep.new_tiles, rep.pruned_tiles, rep.minimap_rebuilt),
        (1, 5, false)
    );
    let t = tnt::parse(&out, &Limits::default()).unwrap();
    assert_eq!(t.tile_count(), 1);
    assert!(t.tilemap.iter().all(|&c| c == 0));
    assert_eq!(t.minimap.pixels, mini);
}

#[test]
fn tile_and_tilemap_edits_apply_when_map_png_is_unedited() {
    let f = Fixture::small(4, 4, 5);
    let mut files = unpack(&f.bytes());
    files
        .files
        .insert("tiles/2.png".into(), reencode(32, 32, &[4u8; 1024]));
    files
        .files
        .insert("tiles/5.png".into(), reencode(32, 32, &tile(200)));
    files.files.insert(
        "tilemap.csv".into(),
        b"5,1,2,3\n1,2,3,4\n2,3,4,5\n3,4,5,0\n".to_vec(),
    );
    let (out, rep) = pack_with_report(&files, &PackOptions::default()).unwrap();
    assert!(!rep.map_retiled);
    let t = tnt::parse(&out, &Limits::default()).unwrap();
    assert_eq!(t.tile_count(), 6);
    assert_eq!(t.tile(2).unwrap(), &[4u8; 1024][..]);
    assert_eq!(t.tile(5).unwrap(), &tile(200)[..]);
    assert_eq!(t.tilemap[0], 5);
}

#[test]
fn feature_edits_rebuild_the_table() {
    let data = rich_fixture().bytes();
    let mut files = unpack(&data);
    let mut csv = String::from_utf8(files.files["features.csv"].clone()).unwrap();
    csv.push_str(",NewFeature,7,7\n0,Tree1,6,6\n");
    files.files.insert("features.csv".into(), csv.into_bytes());
    let out = pack_default(&files).unwrap();
    let t = tnt::parse(&out, &Limits::default()).unwrap();
    assert_eq!(t.features.len(), 4);
    assert_eq!(t.features[3].name_str(), "NewFeature");
    // The raw Tree1 buffer (garbage after NUL) is kept for the unchanged name.
    assert_eq!(t.features[0].name[40], 0x99);
    assert_eq!(t.attrs[7 * 8 + 7].feature, 3);
    assert_eq!(t.attrs[6 * 8 + 6].feature, 0);
    // The void cell stays void.
    assert_eq!(t.attrs[9].feature, 0xFFFC);
}

#[test]
fn bad_edits_name_file_and_position() {
    let data = Fixture::small(4, 4, 5).bytes();
    let base = unpack(&data);
    let err = |k: &str, v: &[u8]| {
        let mut f = base.clone();
        f.files.insert(k.into(), v.to_vec());
        pack_default(&f).unwrap_err().to_string()
    };
    let e = err("tilemap.csv", b"0,1,2,3\n1,2,-1,4\n2,3,4,0\n3,4,0,1\n");
    assert!(
        e.contains("tilemap.csv") && e.contains("row 2") && e.contains("column 3"),
        "{e}"
    );
    let e = err("tilemap.csv", b"0,1,2,3\n1,2,3,4\n2,3,4,0\n3,4,0,70000\n");
    assert!(e.contains("row 4") && e.contains("column 4"), "{e}");
    let e = err("tilemap.csv", b"0,1,2,3\n1,2,3,4\n2,3,4,0\n3,4,0,9\n");
    assert!(e.contains("row 4") && e.contains("tile 9"), "{e}");
    let e = err(
        "features.csv",
        b"feature_index,name,attr_x,attr_y\n,Tree,8,0\n",
    );
    assert!(
        e.contains("features.csv") && e.contains("row 2") && e.contains("attr_x"),
        "{e}"
    );
    let e = err("tiles/1.png", &reencode(16, 32, &[0; 512]));
    assert!(e.contains("tiles/1.png") && e.contains("32×32"), "{e}");
    let e = err("map.png", &reencode(64, 64, &[0; 4096]));
    assert!(e.contains("map.png"), "{e}");
    let mut f = base.clone();
    f.files.remove("tiles/2.png");
    let e = pack_default(&f).unwrap_err().to_string();
    assert!(e.contains("tiles/2.png"), "{e}");
    let g = decode_png(&base.files["heightmap.png"]).unwrap();
    let mut rgba = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut rgba, g.width, g.height);
        enc.set_color(png::ColorType::Rgb);
        let mut w = enc.write_header().unwrap();
        let mut px = vec![0u8; (g.width * g.height * 3) as usize];
        px[3 * 10] = 200;
        w.write_image_data(&px).unwrap();
    }
    let e = err("heightmap.png", &rgba);
    assert!(e.contains("heightmap.png") && e.contains("(2, 1)"), "{e}");
}

#[test]
fn clean_form_drops_raw_data_and_still_packs() {
    let data = rich_fixture().bytes();
    let v = TntView::with_form(&data, &ViewOptions::default(), true).unwrap();
    let files = MemFileSet::from_view(&v).unwrap();
    let meta = String::from_utf8(files.files["metadata.json"].clone()).unwrap();
    assert!(
        !meta.contains("\"raw\"") && !meta.contains("\"layout\"") && !meta.contains("\"features\""),
        "{meta}"
    );
    let out = pack_default(&files).unwrap();
    let a = tnt::parse(&data, &Limits::default()).unwrap();
    let b = tnt::parse(&out, &Limits::default()).unwrap();
    assert_eq!(b.tilemap, a.tilemap);
    assert!(b.features.iter().all(|f| f.is_clean()));
    let names: Vec<String> = b.features.iter().map(|f| f.name_str()).collect();
    assert_eq!(names, ["Tree1", "Rock, big \"one\"", "GreenVent03"]);
    // Placements and sentinels survive; the stray word 9 (no such feature) becomes none.
    let pa: Vec<_> = a.placements().collect();
    let pb: Vec<_> = b.placements().collect();
    assert_eq!(pa, pb);
    assert_eq!(b.attrs[9].feature, 0xFFFC);
    assert_eq!(b.attrs[24].feature, 0xFFFF);
}

#[test]
fn view_entries_match_render() {
    let data = rich_fixture().bytes();
    let v = view::open(view::AssetKind::Tnt, &data, &ViewOptions::default()).unwrap();
    for e in v.entries() {
        if e.kind == view::EntryKind::File {
            assert!(!v.render_vec(&e.path).unwrap().is_empty(), "{}", e.path);
        }
    }
    assert!(v.render_vec("tiles/06.png").is_err());
    assert!(v.render_vec("tiles/6.png").is_err());
    let files = MemFileSet::from_view(v.as_ref()).unwrap();
    assert!(files.list("tiles").unwrap().unwrap().len() == 6);
}

#[test]
fn map_png_resaved_as_rgb_counts_as_unedited() {
    let data = rich_fixture().bytes();
    let mut files = unpack(&data);
    let (w, h, px) = indices(&files.files["map.png"]);
    let pal = Palette::ta();
    let rgb: Vec<u8> = px
        .iter()
        .flat_map(|&i| pal.colors[usize::from(i)])
        .collect();
    let mut png_bytes = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut png_bytes, w, h);
        enc.set_color(png::ColorType::Rgb);
        let mut wr = enc.write_header().unwrap();
        wr.write_image_data(&rgb).unwrap();
    }
    files.files.insert("map.png".into(), png_bytes);
    let (out, rep) = pack_with_report(&files, &PackOptions::default()).unwrap();
    assert!(!rep.map_retiled);
    assert_eq!(out, data);
}
