//! The GAF dump view and build: round trips, edits, names, errors.

mod common;

use tafs::formats::gaf::{self, Content, Frame, Gaf, Sequence};
use tafs::formats::palette::Palette;
use tafs::formats::Limits;
use tafs::view::gaf::{build, first_difference, BuildOptions, GafView, Storage};
use tafs::view::image::{decode_png, write_indexed_png};
use tafs::view::{EntryKind, FileSet, MemFileSet, View, ViewOptions};

fn dump(g: &Gaf) -> MemFileSet {
    let v = GafView::from_gaf(g.clone(), &ViewOptions::default()).unwrap();
    MemFileSet::from_view(&v).unwrap()
}

fn opts(base: Option<&Gaf>) -> BuildOptions<'_> {
    BuildOptions {
        palette: Palette::ta(),
        storage: Storage::Auto,
        asset_path: None,
        base,
    }
}

fn reparse(g: &Gaf) -> Gaf {
    gaf::parse(&gaf::write(g).unwrap(), &Limits::default()).unwrap()
}

#[test]
fn corpus_dump_build_is_identical() {
    let Some(corpus) = common::corpus() else {
        return;
    };
    let mut identical = 0;
    let mut files = common::files_with_ext(&corpus.join("game"), &[".gaf"]);
    files.extend(common::files_with_ext(&corpus.join("tak"), &[".gaf"]));
    assert_eq!(files.len(), 10);
    for p in &files {
        let data = std::fs::read(p).unwrap();
        let g = gaf::parse(&data, &Limits::default()).unwrap();
        let files = dump(&g);
        // without a base: every field and every drawn pixel
        let plain = build(&files, &opts(None)).unwrap().gaf;
        assert_eq!(
            first_difference(&g, &reparse(&plain)),
            None,
            "{}",
            p.display()
        );
        // with the original as base: the same bytes, whatever the layout
        let based = build(&files, &opts(Some(&g))).unwrap().gaf;
        let out = gaf::write(&based).unwrap();
        assert!(out == data, "{} not byte-identical", p.display());
        identical += 1;
    }
    assert_eq!(identical, 10, "every standard GAF rebuilds byte for byte");
}

fn sample() -> Gaf {
    reparse(&tafs::sample::animated_gaf())
}

fn set_png(files: &mut MemFileSet, path: &str, w: u32, h: u32, idx: &[u8], slot: Option<u8>) {
    let mut png = Vec::new();
    write_indexed_png(&mut png, w, h, idx, &Palette::ta(), slot).unwrap();
    files.files.insert(path.to_string(), png);
}

fn png_indices(files: &MemFileSet, path: &str) -> (u32, u32, Vec<u8>, Vec<u8>) {
    let d = decode_png(&files.files[path]).unwrap();
    match d.pixels {
        tafs::view::image::PngPixels::Indexed { indices, trns, .. } => {
            (d.width, d.height, indices, trns)
        }
        _ => panic!("{path} is not indexed"),
    }
}

#[test]
fn unedited_sample_rebuilds_to_the_same_bytes_even_without_base() {
    let g = sample();
    let out = build(&dump(&g), &opts(None)).unwrap();
    assert!(out.warnings.is_empty());
    assert_eq!(gaf::write(&out.gaf).unwrap(), gaf::write(&g).unwrap());
}

#[test]
fn frame_pngs_are_indexed_with_one_transparent_slot() {
    let g = sample();
    let files = dump(&g);
    // pulse/0: RLE frame whose centre is drawn with the key (9): the slot must move off 9.
    let (w, h, idx, trns) = png_indices(&files, "pulse/0.png");
    let f = &g.sequences[0].frames[0].frame;
    assert_eq!((w, h), (u32::from(f.width), u32::from(f.height)));
    let px = f.pixels().unwrap();
    let slot = trns.iter().position(|&a| a == 0).unwrap() as u8;
    assert_eq!(
        trns.iter().filter(|&&a| a == 0).count(),
        1,
        "exactly one transparent slot"
    );
    assert_ne!(
        slot, 9,
        "index 9 is drawn, so it cannot be the transparent slot"
    );
    for (i, (&p, &o)) in idx.iter().zip(&px.opaque).enumerate() {
        if o {
            assert_eq!(p, px.indices[i], "drawn pixel {i} keeps its index");
        } else {
            assert_eq!(p, slot);
        }
    }
    // panel: raw, nothing transparent → no tRNS at all
    let (_, _, idx, trns) = png_indices(&files, "panel/0.png");
    assert!(trns.iter().all(|&a| a == 255));
    assert_eq!(
        idx,
        g.sequences[1].frames[0].frame.pixels().unwrap().indices
    );
}

#[test]
fn composite_flattened_on_union_box_and_layers_dumped() {
    let g = sample();
    let files = dump(&g);
    let f0 = &g.sequences[2].frames[0].frame;
    // base 16×16 at origin (8,8) covers x -8..8; the barrel 12 wide at origin (-4, 2) covers
    // x 4..16, y -2..2: the union is x -8..16 (24 wide), y -8..8.
    let (w, h, idx, _) = png_indices(&files, "turret/0.png");
    assert_eq!((w, h), (24, 16));
    let csv = String::from_utf8(files.files["turret/frames.csv"].clone()).unwrap();
    assert!(
        csv.lines().nth(1).unwrap().starts_with("0,24,16,8,8,9,5,"),
        "{csv}"
    );
    // the barrel's second row (y=1 → canvas y = 8 - 2 + 1 = 7) is index 0x1F out to x=23
    assert_eq!(idx[7 * 24 + 23], 0x1F);
    assert!(files.files.contains_key("turret/0.layers/layers.csv"));
    assert!(files.files.contains_key("turret/0.layers/1.png"));
    assert_eq!(f0.layer_count(), 2);
}

#[test]
fn editing_a_layer_keeps_the_composite() {
    let g = sample();
    let mut files = dump(&g);
    let (w, h, mut idx, trns) = png_indices(&files, "turret/0.layers/1.png");
    let slot = trns.iter().position(|&a| a == 0).map(|s| s as u8);
    idx[0] = 0xF0;
    set_png(&mut files, "turret/0.layers/1.png", w, h, &idx, slot);
    let built = reparse(&build(&files, &opts(Some(&g))).unwrap().gaf);
    let f = &built.sequences[2].frames[0].frame;
    let Content::Layers(layers) = &f.content else {
        panic!("composite lost")
    };
    assert_eq!(layers[1].pixels().unwrap().indices[0], 0xF0);
    // the other composite frame is untouched
    assert_eq!(
        first_difference(
            &Gaf {
                sequences: vec![Sequence {
                    frames: vec![g.sequences[2].frames[1].clone()],
                    ..g.sequences[2].clone()
                }],
                ..g.clone()
            },
            &Gaf {
                sequences: vec![Sequence {
                    frames: vec![built.sequences[2].frames[1].clone()],
                    ..built.sequences[2].clone()
                }],
                ..built.clone()
            },
        ),
        None
    );
}

#[test]
fn editing_the_flattened_png_makes_a_simple_frame() {
    let g = sample();
    let mut files = dump(&g);
    let (w, h, mut idx, trns) = png_indices(&files, "turret/1.png");
    let slot = trns.iter().position(|&a| a == 0).map(|s| s as u8);
    idx[8 * w as usize + 8] = 0xF3; // the pen pixel
    set_png(&mut files, "turret/1.png", w, h, &idx, slot);
    let built = reparse(&build(&files, &opts(Some(&g))).unwrap().gaf);
    let f: &Frame = &built.sequences[2].frames[1].frame;
    assert_eq!(f.layer_count(), 0);
    assert_eq!((f.width, f.height, f.origin_x, f.origin_y), (26, 16, 8, 8));
    assert_eq!(f.pixels().unwrap().indices[8 * 26 + 8], 0xF3);
    // frame 0 is still a composite with its original bytes
    assert_eq!(built.sequences[2].frames[0], g.sequences[2].frames[0]);
}

#[test]
fn rgba_edit_maps_to_palette_and_others_keep_payloads() {
    let g = sample();
    let mut files = dump(&g);
    let pal = Palette::ta();
    // pulse/2 replaced by an RGBA image: all pixels the key's colour, first pixel transparent
    let f = &g.sequences[0].frames[2].frame;
    let (w, h) = (u32::from(f.width), u32::from(f.height));
    let c = pal.colors[9];
    let mut rgba = Vec::new();
    for i in 0..w * h {
        rgba.extend_from_slice(&[c[0], c[1], c[2], if i == 0 { 0 } else { 255 }]);
    }
    let mut png = Vec::new();
    {
        let mut e = png::Encoder::new(&mut png, w, h);
        e.set_color(png::ColorType::Rgba);
        let mut wr = e.write_header().unwrap();
        wr.write_image_data(&rgba).unwrap();
    }
    files.files.insert("pulse/2.png".into(), png);
    let built = build(&files, &opts(Some(&g))).unwrap().gaf;
    let out = reparse(&built);
    let px = out.sequences[0].frames[2].frame.pixels().unwrap();
    assert!(!px.opaque[0]);
    assert!(px.opaque[1..].iter().all(|&o| o));
    let got = px.indices[1];
    // an RLE frame: its transparency is the skips, so the key's colour is the key's index
    assert!(f.is_compressed());
    assert_eq!(pal.nearest(c, &[]), 9);
    assert_eq!(
        got, 9,
        "drawn pixels of the key's colour keep the key index"
    );
    // every other frame keeps its stored bytes
    for (si, s) in g.sequences.iter().enumerate() {
        for (fi, fe) in s.frames.iter().enumerate() {
            if (si, fi) == (0, 2) {
                continue;
            }
            assert_eq!(
                out.sequences[si].frames[fi], *fe,
                "sequence {si} frame {fi} changed"
            );
        }
    }
}

#[test]
fn hostile_sequence_names_make_safe_unique_folders_and_come_back_exactly() {
    let mut g = sample();
    let names: [&[u8]; 6] = [b"a/b", b"..", b"\xff\xfe", b"Fire", b"fire", b""];
    let proto = g.sequences[1].clone();
    g.sequences = names
        .iter()
        .map(|n| {
            let mut s = proto.clone();
            s.name = Sequence::name_buffer(n).unwrap();
            s
        })
        .collect();
    // garbage after the NUL is kept too
    g.sequences[3].name[10] = b'x';
    let v = GafView::from_gaf(g.clone(), &ViewOptions::default()).unwrap();
    let mut lower = std::collections::HashSet::new();
    for e in v.entries().iter().filter(|e| e.kind == EntryKind::Dir) {
        for c in e.path.split('/') {
            assert!(
                !c.is_empty() && c != "." && c != ".." && !c.contains('\\') && !c.contains('\0'),
                "{:?}",
                e.path
            );
        }
        if !e.path.contains('/') {
            assert!(
                lower.insert(e.path.to_lowercase()),
                "duplicate folder {}",
                e.path
            );
        }
    }
    assert_eq!(lower.len(), 6);
    let files = MemFileSet::from_view(&v).unwrap();
    let built = build(&files, &opts(None)).unwrap().gaf;
    let got: Vec<[u8; 32]> = built.sequences.iter().map(|s| s.name).collect();
    let want: Vec<[u8; 32]> = g.sequences.iter().map(|s| s.name).collect();
    assert_eq!(got, want);
}

#[test]
fn build_errors_name_file_row_and_column() {
    let g = sample();
    // missing PNG
    let mut files = dump(&g);
    files.files.remove("pulse/3.png");
    let e = build(&files, &opts(None)).unwrap_err().to_string();
    assert!(e.contains("pulse/3.png") && e.contains("missing"), "{e}");
    // bad CSV value
    let mut files = dump(&g);
    let csv = String::from_utf8(files.files["panel/frames.csv"].clone()).unwrap();
    files.files.insert(
        "panel/frames.csv".into(),
        csv.replacen(",24,", ",wide,", 1).into_bytes(),
    );
    let e = build(&files, &opts(None)).unwrap_err().to_string();
    assert!(
        e.contains("panel/frames.csv") && e.contains("row 2") && e.contains("width"),
        "{e}"
    );
    // image size disagreeing with frames.csv
    let mut files = dump(&g);
    set_png(&mut files, "panel/0.png", 3, 3, &[1; 9], None);
    let e = build(&files, &opts(None)).unwrap_err().to_string();
    assert!(e.contains("panel/0.png") && e.contains("3×3"), "{e}");
    // not a PNG
    let mut files = dump(&g);
    files.files.insert("panel/0.png".into(), b"hello".to_vec());
    let e = build(&files, &opts(None)).unwrap_err().to_string();
    assert!(e.contains("panel/0.png") && e.contains("PNG"), "{e}");
    // a folder without CSVs is skipped with a warning
    let mut files = dump(&g);
    files
        .files
        .insert("notes/readme.txt".into(), b"hi".to_vec());
    let out = build(&files, &opts(None)).unwrap();
    assert_eq!(out.gaf.sequences.len(), 3);
    assert!(
        out.warnings.iter().any(|w| w.contains("notes")),
        "{:?}",
        out.warnings
    );
}

#[test]
fn storage_defaults_and_overrides() {
    let g = sample();
    let mut files = dump(&g);
    // blank the storage column: compressed by default, raw under textures/
    for k in ["pulse/frames.csv", "panel/frames.csv", "turret/frames.csv"] {
        let s = String::from_utf8(files.files[k].clone()).unwrap();
        let s = s.replace(",compressed,", ",,").replace(",raw,", ",,");
        files.files.insert(k.into(), s.into_bytes());
    }
    let b = build(&files, &opts(None)).unwrap().gaf;
    assert!(b.sequences[1].frames[0].frame.is_compressed());
    let mut o = opts(None);
    o.asset_path = Some("textures/x.gaf".into());
    let b = build(&files, &o).unwrap().gaf;
    assert!(b
        .sequences
        .iter()
        .all(|s| s.frames.iter().all(|f| !f.frame.is_compressed())));
    let mut o = opts(None);
    o.storage = Storage::Raw;
    let b = build(&dump(&g), &o).unwrap().gaf;
    assert!(!b.sequences[0].frames[0].frame.is_compressed());
    // pixels survive the change of storage (the drawn key pixels become transparent in raw)
    assert!(first_difference(&g, &reparse(&b)).is_some());
}

#[test]
fn zero_size_frames_have_no_image_and_rebuild_from_their_row() {
    let mut g = sample();
    let mut z = g.sequences[1].frames[0].clone();
    z.frame.width = 0;
    z.frame.height = 4;
    z.frame.content = Content::Pixels(gaf::Pixels {
        indices: vec![],
        opaque: vec![],
        payload: None,
    });
    z.duration = 0;
    g.sequences[1].frames.push(z);
    let g = reparse(&g);
    let files = dump(&g);
    assert!(!files.files.contains_key("panel/1.png"));
    let b = build(&files, &opts(None)).unwrap().gaf;
    assert_eq!(first_difference(&g, &reparse(&b)), None);
    assert_eq!(b.sequences[1].frames[1].duration, 0);
}

#[test]
fn view_is_deterministic() {
    let g = sample();
    let a = dump(&g);
    let b = dump(&g);
    assert_eq!(a.files, b.files);
    assert!(FileSet::list(&a, "").unwrap().unwrap().len() >= 4);
}

#[test]
fn gif_frames_dump_and_build_like_png() {
    let g = sample();
    let o = ViewOptions {
        frame_format: tafs::view::FrameFormat::Gif,
        ..ViewOptions::default()
    };
    let v = GafView::from_gaf(g.clone(), &o).unwrap();
    let files = MemFileSet::from_view(&v).unwrap();
    assert!(files.files.contains_key("pulse/0.gif"));
    assert!(!files.files.contains_key("pulse/0.png"));
    assert!(files.files.contains_key("turret/0.layers/1.gif"));
    let b = build(&files, &opts(None)).unwrap().gaf;
    assert_eq!(gaf::write(&b).unwrap(), gaf::write(&g).unwrap());
}

#[test]
fn heuristic_transparency_uses_corners_only_when_the_key_is_absent() {
    use tafs::view::gaf::{animation, Transparency};
    // a raw 3×3 frame with key 9 absent and a uniform border of 5 around a centre 7
    let mut g = sample();
    let f = &mut g.sequences[1].frames[0].frame;
    f.width = 3;
    f.height = 3;
    f.content = Content::Pixels(gaf::Pixels {
        indices: vec![5, 5, 5, 5, 7, 5, 5, 5, 5],
        opaque: vec![true; 9],
        payload: None,
    });
    let s = &g.sequences[1];
    let game = animation(s, Transparency::Game).unwrap();
    assert!(
        game.canvas(0).iter().all(|&i| i != game.slot),
        "game rule: all drawn"
    );
    let h = animation(s, Transparency::Heuristic).unwrap();
    let transparent = h.canvas(0).iter().filter(|&&i| i == h.slot).count();
    assert_eq!(transparent, 8, "the border of 5 becomes transparent");
    // with the key present somewhere, the key is trusted
    if let Content::Pixels(p) = &mut g.sequences[1].frames[0].frame.content {
        p.indices[4] = 9;
        p.opaque[4] = false;
    }
    let h = animation(&g.sequences[1], Transparency::Heuristic).unwrap();
    assert_eq!(h.canvas(0).iter().filter(|&&i| i == h.slot).count(), 1);
}
