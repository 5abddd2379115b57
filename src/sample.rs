//! Sample assets the crate generates itself (for the demo, the README and tests): an animated
//! GAF with RLE, raw and composite frames, a texture GAF, a map, a PCX build picture, a palette
//! carrier, a textured 3DO model and a truecolor TA: Kingdoms `.taf`.

use crate::formats::gaf::{Content, Frame, FrameEntry, Gaf, Pixels, Sequence, VERSION_STANDARD};

/// The transparency key of the sample frames (index 9, the palette's "system pink" blue).
pub const KEY: u8 = 9;

/// A frame of `w`×`h` at origin (`ox`, `oy`) whose pixel (x, y) is `f(x, y)` (`None`:
/// transparent, the key [`KEY`]).
pub(crate) fn frame(
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

/// A 64×64 build picture (`unitpics/*.pcx` style): an 8-bit PCX with the TA palette, a
/// framed disc on a gradient.
pub fn unit_picture_pcx() -> Vec<u8> {
    use crate::formats::palette::Palette;
    use crate::formats::pcx::{self, Pcx, PcxKind};
    let (w, h) = (64u32, 64u32);
    let mut px = Vec::with_capacity((w * h) as usize);
    for y in 0..h {
        for x in 0..w {
            let (dx, dy) = (x as i32 - 32, y as i32 - 30);
            let v = if x < 2 || y < 2 || x >= w - 2 || y >= h - 2 {
                0xF5
            } else if dx * dx + dy * dy < 18 * 18 {
                0xB0 + (y / 8) as u8
            } else {
                0x20 + (y / 8) as u8
            };
            px.push(v);
        }
    }
    let p = Pcx::new(PcxKind::Indexed8, w, h, px, Some(Palette::ta()));
    pcx::write(&p).unwrap_or_default()
}

/// A TA: Kingdoms-style palette carrier: a 1×1 8-bit PCX whose trailer is the palette (here
/// the TA palette with its first 16 entries made a grey ramp).
pub fn palette_carrier_pcx() -> Vec<u8> {
    use crate::formats::palette::Palette;
    use crate::formats::pcx::{self, Pcx, PcxKind};
    let mut pal = Palette::ta();
    for (i, c) in pal.colors.iter_mut().take(16).enumerate() {
        *c = [(i * 17) as u8; 3];
    }
    let p = Pcx::new(PcxKind::Indexed8, 1, 1, vec![0], Some(pal));
    pcx::write(&p).unwrap_or_default()
}

/// One piece of [`write_3do`]: name, offset from the parent (16.16 fixed point), vertices,
/// primitives (vertex indices, texture name or palette colour) and children.
pub struct ModelPiece {
    /// Piece name (what COB scripts refer to).
    pub name: &'static str,
    /// Offset from the parent.
    pub origin: [i32; 3],
    /// Vertices.
    pub vertices: Vec<[i32; 3]>,
    /// Primitives: vertex indices and a texture name (`Err(colour)` = solid palette colour).
    pub primitives: Vec<(Vec<u16>, Result<&'static str, i32>)>,
    /// Child pieces.
    pub children: Vec<ModelPiece>,
}

/// Encodes a 3DO: every object header first (pre-order), then each piece's name, vertices,
/// index lists, texture names and primitives. The root has no selection primitive.
pub fn write_3do(root: &ModelPiece) -> Vec<u8> {
    const OBJ: usize = 52;
    fn flatten<'a>(p: &'a ModelPiece, out: &mut Vec<&'a ModelPiece>) {
        out.push(p);
        for c in &p.children {
            flatten(c, out);
        }
    }
    let mut order = Vec::new();
    flatten(root, &mut order);
    let index_of = |p: &ModelPiece| order.iter().position(|q| std::ptr::eq(*q, p)).unwrap_or(0);
    let mut out = vec![0u8; order.len() * OBJ];
    let w32 = |out: &mut Vec<u8>, v: i32| out.extend_from_slice(&v.to_le_bytes());
    for (i, p) in order.iter().enumerate() {
        let name_at = out.len();
        out.extend_from_slice(p.name.as_bytes());
        out.push(0);
        let vert_at = out.len();
        for v in &p.vertices {
            for &c in v {
                w32(&mut out, c);
            }
        }
        let mut prims = Vec::new();
        for (idx, look) in &p.primitives {
            let idx_at = out.len();
            for &k in idx {
                out.extend_from_slice(&k.to_le_bytes());
            }
            let tex_at = match look {
                Ok(t) => {
                    let a = out.len();
                    out.extend_from_slice(t.as_bytes());
                    out.push(0);
                    a as i32
                }
                Err(_) => 0,
            };
            let (color, colored) = match look {
                Ok(_) => (0, 0),
                Err(c) => (*c, 1),
            };
            prims.push([
                color,
                idx.len() as i32,
                0,
                idx_at as i32,
                tex_at,
                0,
                0,
                colored,
            ]);
        }
        let prim_at = out.len();
        for q in prims {
            for v in q {
                w32(&mut out, v);
            }
        }
        // siblings: the next child of the same parent
        let sibling = order
            .iter()
            .find_map(|parent| {
                let k = parent.children.iter().position(|c| std::ptr::eq(c, *p))?;
                parent
                    .children
                    .get(k + 1)
                    .map(|n| (index_of(n) * OBJ) as i32)
            })
            .unwrap_or(0);
        let child = p.children.first().map_or(0, |c| (index_of(c) * OBJ) as i32);
        let words = [
            1,
            p.vertices.len() as i32,
            p.primitives.len() as i32,
            -1,
            p.origin[0],
            p.origin[1],
            p.origin[2],
            name_at as i32,
            0,
            vert_at as i32,
            prim_at as i32,
            sibling,
            child,
        ];
        for (k, wd) in words.iter().enumerate() {
            let at = i * OBJ + k * 4;
            out[at..at + 4].copy_from_slice(&wd.to_le_bytes());
        }
    }
    out
}

/// The vertices and faces of a box from `lo` to `hi` (game units × 65536), faces wound
/// clockwise seen from outside in the 3DO's left-handed axes; `top` and `side` are the
/// looks of the top and of the four sides and bottom.
fn box_piece(
    name: &'static str,
    origin: [i32; 3],
    lo: [i32; 3],
    hi: [i32; 3],
    top: Result<&'static str, i32>,
    side: Result<&'static str, i32>,
) -> ModelPiece {
    let (a, b) = (lo, hi);
    let vertices = vec![
        [a[0], a[1], a[2]],
        [b[0], a[1], a[2]],
        [b[0], b[1], a[2]],
        [a[0], b[1], a[2]],
        [a[0], a[1], b[2]],
        [b[0], a[1], b[2]],
        [b[0], b[1], b[2]],
        [a[0], b[1], b[2]],
    ];
    let primitives = vec![
        (vec![3, 2, 6, 7], top),
        (vec![0, 1, 2, 3], side),
        (vec![1, 5, 6, 2], side),
        (vec![5, 4, 7, 6], side),
        (vec![4, 0, 3, 7], side),
        (vec![4, 5, 1, 0], side),
    ];
    ModelPiece {
        name,
        origin,
        vertices,
        primitives,
        children: vec![],
    }
}

/// A small unit model: a textured hull (`checker` on top, `stripes` on the sides, the
/// sequences of [`texture_gaf`]) with a solid-coloured turret piece on it.
pub fn demo_model_3do() -> Vec<u8> {
    const U: i32 = 65536;
    let mut hull = box_piece(
        "base",
        [0, 0, 0],
        [-12 * U, 0, -16 * U],
        [12 * U, 8 * U, 16 * U],
        Ok("checker"),
        Ok("stripes"),
    );
    hull.children.push(box_piece(
        "turret",
        [0, 8 * U, 2 * U],
        [-5 * U, 0, -5 * U],
        [5 * U, 5 * U, 5 * U],
        Err(0xD0),
        Err(0x20),
    ));
    write_3do(&hull)
}

/// A truecolor TA: Kingdoms `.taf` (ARGB4444): one 24×24 frame of a glow, opaque in the
/// centre and fading out (soft alpha), as retail TAK effects are.
pub fn truecolor_taf() -> Gaf {
    let (w, h) = (24u16, 24u16);
    let mut words = Vec::with_capacity(usize::from(w) * usize::from(h));
    for y in 0..i32::from(h) {
        for x in 0..i32::from(w) {
            let (dx, dy) = (x - 12, y - 12);
            let d = ((dx * dx + dy * dy) as f64).sqrt();
            let a = (15.0 - d * 1.4).clamp(0.0, 15.0) as u16;
            let r = 15u16;
            let g = (15.0 - d * 0.6).clamp(4.0, 15.0) as u16;
            let b = 2u16;
            words.push(a << 12 | r << 8 | g << 4 | b);
        }
    }
    let frame = Frame {
        width: w,
        height: h,
        origin_x: 12,
        origin_y: 12,
        key: 0,
        compressed: crate::formats::gaf::FORMAT_ARGB4444,
        blend: 0,
        word12: 0,
        word20: 0,
        content: Content::Truecolor(words),
    };
    Gaf {
        version: VERSION_STANDARD,
        header_word8: 0,
        sequences: vec![sequence("glow", vec![(frame, 2)])],
        trailing: vec![],
        warnings: vec![],
        layout: None,
    }
}
