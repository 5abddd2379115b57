//! TNT unpack / pack / image on a synthetic 256×256-tile map with 2,000 unique tiles (a
//! benchmark, not a test): `cargo bench --bench tnt [-- OUT.tnt]`.
//!
//! Prints in-process times. With a path argument it only writes the synthetic map there (for
//! `scripts/bench-tnt`, which measures the release binary's time and peak memory).

use std::time::Instant;
use tafs::formats::tnt::{self, Attr, FeatureEntry, Minimap, Tnt, FEATURE_NONE};
use tafs::view::tnt::{pack, PackOptions, TntView};
use tafs::view::{self, DirFileSet, View, ViewOptions};

/// 256×256 tiles (8,192² px), 2,000 unique noisy tiles, 600 feature placements.
fn synthetic() -> Tnt {
    let mut seed = 0x9E37_79B9u32;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        seed
    };
    let (tx, ty) = (256usize, 256usize);
    let (w, h) = (2 * tx as u32, 2 * ty as u32);
    let mut tiles = Vec::with_capacity(2000 * 1024);
    for t in 0..2000u32 {
        // terrain-like: a base ramp per tile plus noise
        let base = 0xB0 + (t % 12) as u8;
        for _ in 0..1024 {
            let r = next();
            tiles.push(if r % 3 == 0 {
                base.wrapping_add((r >> 8) as u8 % 4)
            } else {
                base
            });
        }
    }
    let tilemap = (0..tx * ty).map(|_| (next() % 2000) as u16).collect();
    let mut attrs: Vec<Attr> = (0..(w * h) as usize)
        .map(|i| {
            let (x, y) = ((i % w as usize) as f32, (i / w as usize) as f32);
            Attr {
                height: (60.0 + 40.0 * (x / 37.0).sin() * (y / 53.0).cos()) as u8,
                feature: FEATURE_NONE,
                pad: 0,
            }
        })
        .collect();
    for _ in 0..600 {
        let c = next() as usize % attrs.len();
        attrs[c].feature = (next() % 20) as u16;
    }
    let features = (0..20)
        .map(|i| FeatureEntry::new(i, format!("Feature{i:02}").as_bytes()).unwrap())
        .collect();
    Tnt {
        source_version: tnt::VERSION_TA,
        width: w,
        height: h,
        sea_level: 40,
        minimap_flags: 1,
        pads: [0; 4],
        tilemap,
        attrs,
        tiles,
        features,
        minimap: Minimap {
            width: 252,
            height: 252,
            pixels: (0..252 * 252).map(|i| (i % 200) as u8).collect(),
        },
        layout: None,
    }
}

/// Rewrites an indexed map.png (row by row) with its top-left 32×32 cell set to index 9.
fn edit_first_cell(path: &str) {
    let data = std::fs::read(path).expect("read map.png");
    let mut dec = png::Decoder::new(std::io::Cursor::new(&data[..]));
    dec.set_transformations(png::Transformations::IDENTITY);
    let mut rd = dec.read_info().expect("png");
    let info = rd.info().clone();
    let mut out = Vec::with_capacity(data.len());
    {
        let mut enc = png::Encoder::new(&mut out, info.width, info.height);
        enc.set_color(png::ColorType::Indexed);
        enc.set_depth(png::BitDepth::Eight);
        enc.set_palette(info.palette.as_deref().expect("PLTE").to_vec());
        enc.set_compression(png::Compression::Fast);
        let mut w = enc.write_header().expect("header");
        let mut s = w.stream_writer().expect("stream");
        let mut y = 0;
        while let Some(row) = rd.next_row().expect("row") {
            let mut r = row.data().to_vec();
            if y < 32 {
                r[..32].fill(9);
            }
            std::io::Write::write_all(&mut s, &r).expect("write row");
            y += 1;
        }
        s.finish().expect("finish");
    }
    std::fs::write(path, out).expect("write map.png");
    println!("edited {path}: cell (0, 0) set to index 9");
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let bytes = tnt::write(&synthetic()).expect("synthetic map writes");
    if let [cmd, png] = args.as_slice() {
        if cmd == "edit" {
            edit_first_cell(png);
            return;
        }
    }
    if let Some(out) = args.first() {
        std::fs::write(out, &bytes).expect("write synthetic map");
        println!("wrote {out} ({} bytes)", bytes.len());
        return;
    }
    let opts = ViewOptions::default();
    let dir = tempfile::tempdir().expect("temp dir");
    let t0 = Instant::now();
    let v = TntView::new(&bytes, &opts).expect("view");
    view::write_tree(&v, dir.path()).expect("unpack");
    let unpack = t0.elapsed();
    let t0 = Instant::now();
    let back = pack(&DirFileSet::new(dir.path()), &PackOptions::default()).expect("pack");
    let pack_t = t0.elapsed();
    assert_eq!(back, bytes, "unedited unpack → pack must be identical");
    let t0 = Instant::now();
    let png = v.render_vec("map.png").expect("map.png");
    let image = t0.elapsed();
    println!(
        "tnt 256×256 tiles, 2000 unique ({} MB): unpack {:.2} s, pack (unedited) {:.2} s, map.png {:.2} s ({} MB)",
        bytes.len() >> 20,
        unpack.as_secs_f64(),
        pack_t.as_secs_f64(),
        image.as_secs_f64(),
        png.len() >> 20
    );
    map_png(&bytes, &opts);
}

/// map.png: the png crate's single stream against the banded encoding on every core
/// (`RAYON_NUM_THREADS=1` for one), and the next version's after a one-cell edit, which
/// copies the bands the edit did not touch. Medians of 5.
fn map_png(bytes: &[u8], opts: &ViewOptions) {
    let t = tnt::parse(bytes, &opts.limits).expect("parse");
    let ms = |f: &mut dyn FnMut()| {
        let mut v: Vec<f64> = (0..5)
            .map(|_| {
                let t0 = Instant::now();
                f();
                t0.elapsed().as_secs_f64() * 1e3
            })
            .collect();
        v.sort_by(f64::total_cmp);
        v[2]
    };
    let single = ms(&mut || {
        let mut out = Vec::new();
        tafs::view::tnt::write_map_png(&mut out, &t, &opts.palette).expect("png");
    });
    let banded = ms(&mut || {
        TntView::from_tnt(t.clone(), opts, false)
            .render_vec("map.png")
            .expect("png");
    });
    let old = TntView::from_tnt(t.clone(), opts, false);
    let kept = std::sync::Arc::new(old.render_vec("map.png").expect("png"));
    old.keep_rendering("map.png", &kept);
    let mut edited = t.clone();
    let cell = 100 * edited.tiles_x() + 5;
    edited.tilemap[cell] ^= 1;
    let news: Vec<TntView> = (0..5)
        .map(|_| {
            let v = TntView::from_tnt(edited.clone(), opts, false);
            v.inherit(&old);
            v
        })
        .collect();
    let mut next = news.into_iter();
    let after = ms(&mut || {
        if let Some(v) = next.next() {
            v.render_vec("map.png").expect("png");
        }
    });
    println!(
        "map.png {} MB: png crate (one stream) {single:.1} ms, banded on {} threads {banded:.1} ms \
         ({:.2}x), after a one-cell edit {after:.1} ms ({:.1}x)",
        kept.len() >> 20,
        rayon::current_num_threads(),
        single / banded,
        single / after
    );
}
