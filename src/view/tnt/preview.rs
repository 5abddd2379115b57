//! `tafs tnt preview`'s renderer: the map's mosaic scaled down by a whole factor, every
//! placed feature drawn with the first frame of its GAF sprite (from the game folder's
//! `features/**/*.tdf` and `anims/`; a box where it cannot be drawn) and numbered markers at
//! the start positions of the `.ota` beside the map. The result is RGB pixels; the caller
//! encodes them.

use crate::formats::gaf::Flat;
use crate::formats::palette::Palette;
use crate::formats::tdf;
use crate::formats::tnt::Tnt;
use crate::formats::Limits;
use crate::game::features::{self, FeatureIndex};
use crate::game::{find_ci, find_dir_ci, ota};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// The scale factor and size of the preview of a `pw` × `ph` pixel map whose longest side
/// may be at most `max_size` (at least 64): `(scale, width, height)`.
pub fn size(pw: usize, ph: usize, max_size: u32) -> (usize, usize, usize) {
    let scale = pw.max(ph).div_ceil(max_size.max(64) as usize).max(1);
    (scale, pw.div_ceil(scale), ph.div_ceil(scale))
}

/// A rendered preview.
pub struct Preview {
    /// Width in pixels.
    pub width: usize,
    /// Height in pixels.
    pub height: usize,
    /// One preview pixel per `scale` × `scale` map pixels.
    pub scale: usize,
    /// RGB, row-major.
    pub rgb: Vec<u8>,
    /// Feature placements of the map.
    pub placements: usize,
    /// Placements drawn with their sprite.
    pub drawn: usize,
    /// Start positions marked.
    pub starts: usize,
    /// Features drawn as a box instead: name → (why, how many placements).
    pub missing: BTreeMap<String, (String, usize)>,
    /// What could not be read (TDF files, the .ota), worded for the user.
    pub notes: Vec<String>,
}

/// Renders the preview of map `t` read from `file`; `game_dir` is the folder with
/// `features/` and `anims/` (default: the nearest above the map holding `features/`); the
/// start positions are those of `.ota` schema `schema` (0-based).
pub fn render(
    t: &Tnt,
    file: &Path,
    game_dir: Option<&Path>,
    max_size: u32,
    schema: usize,
) -> Preview {
    let (pw, ph) = (t.pixel_width(), t.pixel_height());
    let (scale, w, h) = size(pw, ph, max_size);
    let pal = Palette::ta();
    let mut canvas = Canvas {
        w,
        h,
        scale,
        rgb: vec![0; w * h * 3],
    };
    let mut row = vec![0u8; pw];
    for cy in 0..h {
        t.render_row(cy * scale, &mut row);
        for cx in 0..w {
            let c = pal.colors[usize::from(row[cx * scale])];
            canvas.put(cx as i64, cy as i64, c);
        }
    }

    // Features.
    let gd = game_dir
        .map(Path::to_path_buf)
        .or_else(|| features::find_game_dir(file));
    let (index, problems) = match &gd {
        Some(g) => FeatureIndex::scan(g),
        None => (FeatureIndex::default(), vec![]),
    };
    let mut notes = problems;
    let mut missing: BTreeMap<String, (String, usize)> = BTreeMap::new();
    let mut sprites: HashMap<u16, Result<Flat, String>> = HashMap::new();
    let mut gaf_cache = HashMap::new();
    let mut drawn = 0usize;
    let placements: Vec<(u16, u32, u32)> = t.placements().collect();
    for &(f, ax, ay) in &placements {
        let name = t.features[usize::from(f)].name_str();
        let def = index.get(&name);
        let (fx, fz) = def.map_or((1, 1), |(_, s)| {
            let n = |k: &str| {
                s.get(k)
                    .and_then(|v| v.parse::<i64>().ok())
                    .unwrap_or(1)
                    .clamp(1, 64)
            };
            (n("footprintx"), n("footprintz"))
        });
        let (x0, y0) = (i64::from(ax) * 16, i64::from(ay) * 16);
        let (cx, cy) = (x0 + fx * 8, y0 + fz * 8);
        let sprite = sprites.entry(f).or_insert_with(|| {
            let Some(g) = &gd else {
                return Err("no game folder with features/ found (use --game-dir)".into());
            };
            let Some((_, s)) = def else {
                return Err("no [section] in features/**/*.tdf".into());
            };
            match (s.get("filename"), s.get("seqname")) {
                (Some(fname), Some(seq)) if !fname.is_empty() && !seq.is_empty() => {
                    load_feature_sprite(g, fname, seq, &mut gaf_cache)
                }
                _ => match s.get("object") {
                    Some(o) => Err(format!("3D object {o:?} (no GAF sprite)")),
                    None => Err("no filename/seqname keys".into()),
                },
            }
        });
        match sprite {
            Ok(sp) => {
                let (sx, sy) = (cx - i64::from(sp.origin_x), cy - i64::from(sp.origin_y));
                let (sw, sh) = (sp.width as usize, sp.height as usize);
                for yy in 0..sh {
                    for xx in 0..sw {
                        let i = yy * sw + xx;
                        if sp.opaque[i] {
                            let c = pal.colors[usize::from(sp.indices[i])];
                            canvas.put_map(sx + xx as i64, sy + yy as i64, c);
                        }
                    }
                }
                drawn += 1;
            }
            Err(why) => {
                draw_box(&mut canvas, x0, y0, fx * 16, fz * 16, [255, 0, 255]);
                missing.entry(name).or_insert((why.clone(), 0)).1 += 1;
            }
        }
    }

    // Start positions.
    let mut starts = Vec::new();
    if let Some(ota) = ota::beside(file) {
        match std::fs::read(&ota)
            .map_err(|e| e.to_string())
            .and_then(|b| tdf::parse(&b).map_err(|e| e.to_string()))
        {
            Ok(secs) => match ota::start_positions_of(&secs, schema) {
                Some(s) => starts = s,
                None => notes.push(format!(
                    "{}: no schema {schema} (it has {}); no start positions drawn",
                    ota.display(),
                    ota::schema_count(&secs)
                )),
            },
            Err(e) => notes.push(format!("{}: {e}", ota.display())),
        }
    }
    for &(n, x, z) in &starts {
        draw_marker(&mut canvas, x / scale as i64, z / scale as i64, n);
    }

    Preview {
        width: canvas.w,
        height: canvas.h,
        scale,
        rgb: canvas.rgb,
        placements: placements.len(),
        drawn,
        starts: starts.len(),
        missing,
        notes,
    }
}

/// Loads the first frame of GAF sequence `seqname` from `anims/<filename>.gaf`.
fn load_feature_sprite(
    game_dir: &Path,
    filename: &str,
    seqname: &str,
    cache: &mut HashMap<PathBuf, Result<Vec<u8>, String>>,
) -> Result<Flat, String> {
    let anims = find_dir_ci(game_dir, "anims").ok_or("no anims/ folder")?;
    let gaf_path = find_ci(&anims, &format!("{filename}.gaf"))
        .ok_or_else(|| format!("anims/{filename}.gaf not found"))?;
    let bytes = cache
        .entry(gaf_path.clone())
        .or_insert_with(|| std::fs::read(&gaf_path).map_err(|e| e.to_string()))
        .clone()?;
    decode_sprite(&bytes, seqname).map_err(|e| format!("anims/{filename}.gaf: {e}"))
}

/// The first frame of sequence `seqname` (any letter case) of a GAF, flattened.
fn decode_sprite(gaf: &[u8], seqname: &str) -> Result<Flat, String> {
    let g = crate::formats::gaf::parse(gaf, &Limits::default()).map_err(|e| e.to_string())?;
    let seq = g
        .sequences
        .iter()
        .find(|s| s.name_str().eq_ignore_ascii_case(seqname))
        .ok_or_else(|| format!("no sequence {seqname:?}"))?;
    let first = seq
        .frames
        .first()
        .ok_or_else(|| format!("sequence {seqname:?} has no frames"))?;
    if let Some(t) = first.frame.truecolor() {
        return Err(format!(
            "sequence {seqname:?}: a truecolor ({}) frame has no palette indices to draw",
            t.name()
        ));
    }
    first
        .frame
        .flatten()
        .ok_or_else(|| format!("sequence {seqname:?}: its layers span too many pixels"))
}

struct Canvas {
    w: usize,
    h: usize,
    scale: usize,
    rgb: Vec<u8>,
}

impl Canvas {
    /// Sets map pixel (x, y) (full-resolution coordinates) if it falls on a sampled pixel.
    fn put_map(&mut self, x: i64, y: i64, c: [u8; 3]) {
        let s = self.scale as i64;
        if x < 0 || y < 0 || x % s != 0 || y % s != 0 {
            return;
        }
        self.put(x / s, y / s, c);
    }

    /// Sets canvas pixel (x, y).
    fn put(&mut self, x: i64, y: i64, c: [u8; 3]) {
        if x < 0 || y < 0 || x as usize >= self.w || y as usize >= self.h {
            return;
        }
        let o = (y as usize * self.w + x as usize) * 3;
        self.rgb[o..o + 3].copy_from_slice(&c);
    }
}

/// 3×5 digit glyphs, one row per byte (bits 2..0 = left..right).
const DIGITS: [[u8; 5]; 10] = [
    [7, 5, 5, 5, 7],
    [2, 6, 2, 2, 7],
    [7, 1, 7, 4, 7],
    [7, 1, 7, 1, 7],
    [5, 5, 7, 1, 1],
    [7, 4, 7, 1, 7],
    [7, 4, 7, 5, 7],
    [7, 1, 1, 1, 1],
    [7, 5, 7, 5, 7],
    [7, 5, 7, 1, 7],
];

/// A numbered start marker centred on canvas pixel (cx, cy).
fn draw_marker(c: &mut Canvas, cx: i64, cy: i64, n: u32) {
    let text = n.to_string();
    let px = 3i64; // glyph pixel size
    let r = 10 + 2 * text.len() as i64;
    for dy in -r..=r {
        for dx in -r..=r {
            let d2 = dx * dx + dy * dy;
            if d2 <= r * r {
                let col = if d2 >= (r - 2) * (r - 2) {
                    [255, 255, 255]
                } else {
                    [200, 20, 20]
                };
                c.put(cx + dx, cy + dy, col);
            }
        }
    }
    let tw = text.len() as i64 * 4 * px - px;
    let (x0, y0) = (cx - tw / 2, cy - 5 * px / 2);
    for (k, ch) in text.bytes().enumerate() {
        let g = DIGITS[usize::from(ch - b'0')];
        for (row, bits) in g.iter().enumerate() {
            for col in 0..3 {
                if bits & (4 >> col) != 0 {
                    for yy in 0..px {
                        for xx in 0..px {
                            c.put(
                                x0 + k as i64 * 4 * px + col * px + xx,
                                y0 + row as i64 * px + yy,
                                [255, 255, 255],
                            );
                        }
                    }
                }
            }
        }
    }
}

/// Outline of a footprint (features whose sprite could not be drawn).
fn draw_box(c: &mut Canvas, x0: i64, y0: i64, w: i64, h: i64, col: [u8; 3]) {
    let s = c.scale as i64;
    let (x0, y0, x1, y1) = (x0 / s, y0 / s, (x0 + w) / s - 1, (y0 + h) / s - 1);
    for x in x0..=x1 {
        c.put(x, y0, col);
        c.put(x, y1, col);
    }
    for y in y0..=y1 {
        c.put(x0, y, col);
        c.put(x1, y, col);
    }
}
