//! Sample assets the crate generates itself (for the demo, the README and tests): an animated
//! GAF with RLE, raw and composite frames, and a texture GAF.

use crate::formats::gaf::{Content, Frame, FrameEntry, Gaf, Pixels, Sequence, VERSION_STANDARD};

/// The transparency key of the sample frames (index 9, the palette's "system pink" blue).
pub const KEY: u8 = 9;

fn frame(
    w: u16,
    h: u16,
    ox: i16,
    oy: i16,
    compressed: bool,
    f: impl Fn(i32, i32) -> Option<u8>,
) -> Frame {
    let mut indices = Vec::with_capacity(usize::from(w) * usize::from(h));
    let mut opaque = Vec::with_capacity(indices.capacity());
    for y in 0..i32::from(h) {
        for x in 0..i32::from(w) {
            match f(x, y) {
                Some(i) => {
                    indices.push(i);
                    opaque.push(true);
                }
                None => {
                    indices.push(KEY);
                    opaque.push(false);
                }
            }
        }
    }
    Frame {
        width: w,
        height: h,
        origin_x: ox,
        origin_y: oy,
        key: KEY,
        compressed: u8::from(compressed),
        blend: 0,
        word12: 0,
        word20: 0,
        content: Content::Pixels(Pixels {
            indices,
            opaque,
            payload: None,
        }),
    }
}

fn sequence(name: &str, frames: Vec<(Frame, u32)>) -> Sequence {
    Sequence {
        name: Sequence::name_buffer(name.as_bytes()).unwrap_or([0; 32]),
        loop_word: 1,
        word4: 0,
        frames: frames
            .into_iter()
            .map(|(frame, duration)| FrameEntry { duration, frame })
            .collect(),
    }
}

/// An animated GAF: `pulse` (6 RLE frames of a growing ring, the key colour drawn opaque in
/// its centre), `panel` (one raw frame), `turret` (2 composite frames whose layers reach
/// outside the parent, with negative origins).
pub fn animated_gaf() -> Gaf {
    // Palette ramps of the TA palette: 0xD0.. yellows/oranges, 0xB0.. greens, 0x20.. greys.
    let pulse = (0..6)
        .map(|i| {
            let r = 4 + 3 * i;
            let size = (2 * r + 3) as u16;
            let c = r + 1;
            let f = frame(size, size, c as i16, c as i16, true, move |x, y| {
                let d2 = (x - c) * (x - c) + (y - c) * (y - c);
                if d2 <= 2 {
                    Some(KEY) // drawn with the key index: stays opaque in RLE
                } else if d2 <= r * r && d2 >= (r - 2) * (r - 2) {
                    Some(0xD0 + (i as u8) * 2)
                } else if d2 < (r - 2) * (r - 2) && (x + y) % 4 == 0 {
                    Some(0)
                } else {
                    None
                }
            });
            (f, 3)
        })
        .collect();
    let panel = frame(24, 16, 12, 8, false, |x, y| {
        if x == 0 || y == 0 || x == 23 || y == 15 {
            Some(0x20)
        } else if (x / 4 + y / 4) % 2 == 0 {
            Some(0xB2)
        } else {
            Some(0xB6)
        }
    });
    let turret = (0..2)
        .map(|i| {
            let base = frame(16, 16, 8, 8, true, |x, y| {
                let d2 = (x - 8) * (x - 8) + (y - 8) * (y - 8);
                (d2 <= 49).then_some(0x24)
            });
            // the barrel sticks out to the right of the parent (negative origin x)
            let barrel = frame(12, 4, -4 - 2 * i as i16, 2, false, |_, y| {
                Some(if y == 1 { 0x1F } else { 0x22 })
            });
            let mut parent = frame(16, 16, 8, 8, true, |_, _| None);
            parent.content = Content::Layers(vec![base, barrel]);
            (parent, 5)
        })
        .collect();
    Gaf {
        version: VERSION_STANDARD,
        header_word8: 0,
        sequences: vec![
            sequence("pulse", pulse),
            sequence("panel", vec![(panel, 10)]),
            sequence("turret", turret),
        ],
        trailing: vec![],
        warnings: vec![],
        layout: None,
    }
}

/// A texture GAF (textures/*.gaf are read as plain arrays: every frame raw): two 32×32
/// sequences, a checker and a stripe pattern.
pub fn texture_gaf() -> Gaf {
    let checker = frame(32, 32, 0, 0, false, |x, y| {
        Some(if (x / 8 + y / 8) % 2 == 0 { 0x50 } else { 0x58 })
    });
    let stripes = frame(32, 32, 0, 0, false, |x, _| Some(0x90 + (x / 4) as u8));
    Gaf {
        version: VERSION_STANDARD,
        header_word8: 0,
        sequences: vec![
            sequence("checker", vec![(checker, 10)]),
            sequence("stripes", vec![(stripes, 10)]),
        ],
        trailing: vec![],
        warnings: vec![],
        layout: None,
    }
}

/// A 16×16-tile (512×512 px) map: grass, a lake below sea level, a rock outcrop and a path,
/// with `demo_rock` and `demo_tree` features placed (defined in the demo's features .tdf) and
/// a minimap rebuilt by the game's rule.
pub fn demo_map() -> crate::formats::tnt::Tnt {
    use crate::formats::palette::Palette;
    use crate::formats::tnt::{
        Attr, FeatureEntry, Minimap, Tnt, FEATURE_NONE, TILE_SIDE, VERSION_TA,
    };
    let pal = Palette::ta();
    let near = |rgb: [u8; 3]| pal.nearest(rgb, &[]);
    let grass = [near([56, 104, 36]), near([68, 120, 44]), near([48, 92, 32])];
    let water = [near([24, 56, 120]), near([32, 72, 140])];
    let rock = [
        near([104, 100, 92]),
        near([128, 124, 116]),
        near([80, 76, 72]),
    ];
    let path = [near([140, 116, 76]), near([120, 100, 64])];
    // a small deterministic noise for texture
    let noise = |t: usize, x: usize, y: usize| (x * 7 + y * 13 + t * 5 + (x * y) % 7) % 11;
    let tile = |t: usize, colours: &[u8]| -> Vec<u8> {
        (0..TILE_SIDE * TILE_SIDE)
            .map(|i| colours[noise(t, i % TILE_SIDE, i / TILE_SIDE) % colours.len()])
            .collect()
    };
    let mut tiles = Vec::new();
    for (t, c) in [&grass[..], &grass[1..], &water[..], &rock[..], &path[..]]
        .iter()
        .enumerate()
    {
        tiles.extend(tile(t, c));
    }
    let (tx, ty) = (16usize, 16usize);
    let mut tilemap = vec![0u16; tx * ty];
    for y in 0..ty {
        for x in 0..tx {
            let i = y * tx + x;
            tilemap[i] = if x + y < 6 {
                2 // lake in the top-left corner
            } else if (10..13).contains(&x) && (9..13).contains(&y) {
                3 // rock outcrop
            } else if x == 7 || y == 7 {
                4 // paths
            } else {
                ((x + y) % 2) as u16 // two grass variants
            };
        }
    }
    let (w, h) = (2 * tx as u32, 2 * ty as u32);
    let mut attrs = vec![
        Attr {
            height: 0,
            feature: FEATURE_NONE,
            pad: 0,
        };
        (w * h) as usize
    ];
    for cy in 0..h as usize {
        for cx in 0..w as usize {
            let t = tilemap[(cy / 2) * tx + cx / 2];
            attrs[cy * w as usize + cx].height = match t {
                2 => 10,
                3 => 120 + ((cx + cy) % 3) as u8 * 10,
                _ => 60 + ((cx * 3 + cy) % 8) as u8,
            };
        }
    }
    let entry = |index: u32, name: &[u8]| {
        let mut buf = [0u8; crate::formats::tnt::NAME_LEN];
        buf[..name.len()].copy_from_slice(name);
        FeatureEntry { index, name: buf }
    };
    let features = vec![entry(0, b"demo_rock"), entry(1, b"demo_tree")];
    for (cx, cy, f) in [
        (18, 20, 0u16),
        (24, 6, 0),
        (4, 24, 1),
        (6, 26, 1),
        (28, 28, 1),
    ] {
        attrs[cy * w as usize + cx].feature = f;
    }
    let mut t = Tnt {
        source_version: VERSION_TA,
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
            pixels: vec![crate::formats::palette::MINIMAP_PAD; 252 * 252],
        },
        layout: None,
    };
    t.minimap.pixels = crate::view::tnt::rebuild_minimap(&t, &pal);
    t
}
