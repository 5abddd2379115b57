//! The exploded view of a 3DO model (read-only): `model.obj` + `model.mtl` (one OBJ object
//! per piece, piece offsets applied along the hierarchy), the textures the model uses as
//! indexed PNGs under `textures/`, `pieces.csv` (the hierarchy COB scripts refer to) and
//! `preview.png`, a software rendering from the game's camera angle, made when it is read
//! ([`ModelView`]).
//!
//! Axes: 3DO files are left-handed (x right, y up, z away from the game's camera; units
//! face −z, towards the camera). OBJ is right-handed, so the OBJ has z negated and each
//! face's vertex order reversed (outward faces stay outward): y is up, the model faces +z
//! and is not mirrored. Coordinates are game units (16.16 fixed point / 65536).
//! `pieces.csv` keeps the file's own axes, as COB scripts use them.
//!
//! Texture coordinates follow the engine, which maps a texture's corners to a primitive's
//! vertices in order: the first vertex gets the top-left corner, then top-right,
//! bottom-right, bottom-left (vertices past the fourth repeat the last corner). Solid
//! primitives get a material per palette colour; invisible primitives (neither textured nor
//! coloured), points and the root's selection primitive are left out of the OBJ.

use super::image::write_indexed_png;
use super::pcx::FileListView;
use super::{safe_component, Entry, View, ViewError};
use crate::formats::gaf::Gaf;
use crate::formats::o3do::{self, Model, ModelLimits, FIXED_ONE};
use crate::formats::palette::Palette;
use std::collections::HashMap;
use std::fmt::Write as _;

/// The geometry.
pub const OBJ: &str = "model.obj";
/// The materials.
pub const MTL: &str = "model.mtl";
/// The piece hierarchy.
pub const PIECES: &str = "pieces.csv";
/// Folder of the texture PNGs.
pub const TEXTURE_DIR: &str = "textures";

/// A texture: palette indices of the first frame of a GAF sequence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Texture {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// One palette index per pixel, row-major.
    pub indices: Vec<u8>,
}

/// Textures by sequence name, matched ignoring ASCII case (the first one added wins).
#[derive(Debug, Clone, Default)]
pub struct Textures {
    map: HashMap<String, Texture>,
}

impl Textures {
    /// No textures.
    pub fn new() -> Textures {
        Textures::default()
    }

    /// A hash of every texture (names, sizes, pixels): equal sets hash alike.
    pub fn content_hash(&self) -> u64 {
        let mut all: Vec<(&String, &Texture)> = self.map.iter().collect();
        all.sort_by(|a, b| a.0.cmp(b.0));
        let mut h = crc32fast::Hasher::new();
        for (name, t) in &all {
            h.update(name.as_bytes());
            h.update(&[0]);
            h.update(&t.width.to_le_bytes());
            h.update(&t.height.to_le_bytes());
            h.update(&t.indices);
        }
        ((all.len() as u64) << 32) | u64::from(h.finalize())
    }

    /// Adds `tex` under `name` unless a texture of that name is already known.
    pub fn insert(&mut self, name: &str, tex: Texture) {
        self.map.entry(name.to_ascii_lowercase()).or_insert(tex);
    }

    /// Adds the first frame of every sequence of `gaf` (a `textures/*.gaf`); truecolor frames
    /// hold no palette indices and are left out.
    pub fn add_gaf(&mut self, gaf: &Gaf) {
        for s in &gaf.sequences {
            let first = s.frames.first().filter(|f| f.frame.truecolor().is_none());
            let Some(flat) = first.and_then(|f| f.frame.flatten()) else {
                continue;
            };
            if flat.width == 0 || flat.height == 0 {
                continue;
            }
            self.insert(
                &s.name_str(),
                Texture {
                    width: flat.width,
                    height: flat.height,
                    indices: flat.indices,
                },
            );
        }
    }

    /// The texture called `name` (any case).
    pub fn get(&self, name: &str) -> Option<&Texture> {
        self.map.get(&name.to_ascii_lowercase())
    }

    /// Number of textures.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

type TextureStamp = Vec<(std::path::PathBuf, u64, Option<std::time::SystemTime>)>;

/// The textures of the game folder `game_dir` (the first frame of every sequence of its
/// `textures/*.gaf`, [`crate::game::textures`]), decoded once per process and read again
/// only when a texture GAF changes (its size or time). GAFs that do not decode are skipped.
pub fn game_textures(
    game_dir: &std::path::Path,
    limits: &crate::formats::Limits,
) -> std::sync::Arc<Textures> {
    game_textures_in(&crate::game::Plain, game_dir, limits)
}

/// [`game_textures`] read through `gfs`; a texture GAF over the limit of a rebuild's input
/// ([`crate::view::MAX_INPUT_BYTES`]) is skipped unread.
pub fn game_textures_in(
    gfs: &dyn crate::game::GameFs,
    game_dir: &std::path::Path,
    limits: &crate::formats::Limits,
) -> std::sync::Arc<Textures> {
    use std::sync::{Arc, Mutex, OnceLock};
    type Cache = Mutex<HashMap<std::path::PathBuf, (TextureStamp, Arc<Textures>)>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let stamp = crate::game::textures::stamp_in(gfs, game_dir);
    let cache = CACHE.get_or_init(Default::default);
    if let Some((s, t)) = cache
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(game_dir)
    {
        if *s == stamp {
            return t.clone();
        }
    }
    let mut t = Textures::new();
    for (p, _, _) in &stamp {
        let Some(data) = gfs.read(p, crate::view::MAX_INPUT_BYTES) else {
            continue;
        };
        match crate::formats::gaf::parse(&data, limits) {
            Ok(g) => t.add_gaf(&g),
            Err(e) => log::debug!("{}: textures skipped: {e}", p.display()),
        }
    }
    let t = Arc::new(t);
    cache
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(game_dir.to_path_buf(), (stamp, t.clone()));
    t
}

/// OBJ texture coordinates of the corners in the engine's order (v grows upwards in OBJ).
const CORNERS: [(u8, u8); 4] = [(0, 1), (1, 1), (1, 0), (0, 0)];

/// A name usable after `o`/`newmtl`/`usemtl` (no whitespace).
fn obj_name(s: &str) -> String {
    let t: String = s
        .chars()
        .map(|c| {
            if c.is_whitespace() || c.is_control() {
                '_'
            } else {
                c
            }
        })
        .collect();
    if t.is_empty() {
        "_".into()
    } else {
        t
    }
}

/// Material name of a texture.
pub fn texture_material(name: &str) -> String {
    obj_name(name)
}

/// Material name of a solid colour.
pub fn color_material(index: i32) -> String {
    format!("color_{index}")
}

/// The PNG file name (under [`TEXTURE_DIR`]) of every texture of `model` found in
/// `textures`: the sanitised name, made unique ignoring case.
pub fn texture_files(model: &Model, textures: &Textures) -> Vec<(String, String)> {
    let mut taken = std::collections::HashSet::new();
    let mut out = Vec::new();
    for t in model.textures() {
        if textures.get(&t).is_none() {
            continue;
        }
        let stem = safe_component(t.as_bytes());
        let mut file = format!("{stem}.png");
        let mut n = 1;
        while !taken.insert(file.to_ascii_lowercase()) {
            n += 1;
            file = format!("{stem}~{n}.png");
        }
        out.push((t, file));
    }
    out
}

fn coord(v: i64) -> f64 {
    v as f64 / FIXED_ONE
}

/// True for the primitives the OBJ draws as faces: visible, three or more vertices, not
/// the root's selection primitive.
pub fn is_face(model: &Model, piece: usize, prim: usize) -> bool {
    model
        .pieces
        .get(piece)
        .is_some_and(|p| is_face_of(p, piece == 0, prim))
}

/// [`is_face`] of primitive `prim` of `p` (`root`: the model's root piece).
fn is_face_of(p: &o3do::Piece, root: bool, prim: usize) -> bool {
    let Some(q) = p.primitives.get(prim) else {
        return false;
    };
    let selection = root && usize::try_from(p.selection_primitive).ok() == Some(prim);
    q.visible() && q.indices.len() >= 3 && !selection
}

/// True for the primitives the OBJ shows: faces and visible two-vertex lines.
fn is_drawn(p: &o3do::Piece, root: bool, prim: usize) -> bool {
    is_face_of(p, root, prim)
        || p.primitives
            .get(prim)
            .is_some_and(|q| q.visible() && q.indices.len() == 2)
}

#[path = "model3d_build.rs"]
mod build;
pub use build::build;

/// The OBJ text.
pub fn obj_text(model: &Model, textures: &Textures) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# {} pieces; game units (16.16 fixed point / 65536), y up, 3DO z negated\nmtllib {MTL}",
        model.pieces.len()
    );
    for (u, v) in CORNERS {
        let _ = writeln!(s, "vt {u} {v}");
    }
    let names = model.textures();
    let mut base = 1usize;
    for (pi, p) in model.pieces.iter().enumerate() {
        let o = model.world_origin(pi);
        let _ = writeln!(s, "o {}", obj_name(&p.name));
        for v in &p.vertices {
            let _ = writeln!(
                s,
                "v {} {} {}",
                coord(o[0] + i64::from(v[0])),
                coord(o[1] + i64::from(v[1])),
                coord(-(o[2] + i64::from(v[2])))
            );
        }
        let mut current: Option<String> = None;
        for (k, q) in p.primitives.iter().enumerate() {
            let line = q.visible() && q.indices.len() == 2;
            if !is_face(model, pi, k) && !line {
                continue;
            }
            // One material per texture name ignoring case, spelt as first used.
            let mat = match &q.texture {
                Some(t) => texture_material(
                    names
                        .iter()
                        .find(|n| n.eq_ignore_ascii_case(t))
                        .unwrap_or(t),
                ),
                None => color_material(q.color),
            };
            if current.as_deref() != Some(mat.as_str()) {
                let _ = writeln!(s, "usemtl {mat}");
                current = Some(mat);
            }
            let textured = q
                .texture
                .as_deref()
                .is_some_and(|t| textures.get(t).is_some());
            if line {
                let _ = writeln!(
                    s,
                    "l {} {}",
                    base + usize::from(q.indices[0]),
                    base + usize::from(q.indices[1])
                );
                continue;
            }
            s.push('f');
            // Reversed: negating z mirrors the winding.
            for (c, &i) in q.indices.iter().enumerate().rev() {
                let v = base + usize::from(i);
                if textured {
                    let _ = write!(s, " {v}/{}", c.min(3) + 1);
                } else {
                    let _ = write!(s, " {v}");
                }
            }
            s.push('\n');
        }
        base += p.vertices.len();
    }
    s
}

/// The MTL text: one material per texture name and per solid colour used.
pub fn mtl_text(model: &Model, textures: &Textures, palette: &Palette) -> String {
    let mut s = String::from("# materials of model.obj\n");
    let files = texture_files(model, textures);
    for t in model.textures() {
        let _ = writeln!(s, "\nnewmtl {}", texture_material(&t));
        if let Some((_, file)) = files.iter().find(|(n, _)| *n == t) {
            let _ = writeln!(s, "Kd 1 1 1\nmap_Kd {TEXTURE_DIR}/{file}");
        } else {
            let _ = writeln!(
                s,
                "# texture {t:?} not found in textures/*.gaf\nKd 0.5 0.5 0.5"
            );
        }
    }
    let mut colors: Vec<i32> = model
        .pieces
        .iter()
        .flat_map(|p| p.primitives.iter())
        .filter(|q| q.texture.is_none() && q.is_colored)
        .map(|q| q.color)
        .collect();
    colors.sort_unstable();
    colors.dedup();
    for c in colors {
        let rgb = usize::try_from(c)
            .ok()
            .and_then(|i| palette.colors.get(i))
            .copied()
            .unwrap_or([0, 0, 0]);
        let f = |v: u8| f64::from(v) / 255.0;
        let _ = writeln!(
            s,
            "\nnewmtl {}\nKd {} {} {}",
            color_material(c),
            f(rgb[0]),
            f(rgb[1]),
            f(rgb[2])
        );
    }
    s
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// `pieces.csv`: `name,parent,x,y,z,vertices,primitives` (offset from the parent in game
/// units; the root's parent is empty), in depth-first order.
pub fn pieces_csv(model: &Model) -> String {
    let mut s = String::from("name,parent,x,y,z,vertices,primitives\n");
    for p in &model.pieces {
        let parent = p
            .parent
            .and_then(|i| model.pieces.get(i))
            .map(|q| q.name.as_str())
            .unwrap_or("");
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{}",
            csv_field(&p.name),
            csv_field(parent),
            coord(i64::from(p.origin[0])),
            coord(i64::from(p.origin[1])),
            coord(i64::from(p.origin[2])),
            p.vertices.len(),
            p.primitives.len()
        );
    }
    s
}

/// The files of the view of the 3DO `data`: `model.obj`, `model.mtl`, `pieces.csv` and a
/// PNG per texture found in `textures` (drawn with `palette`).
pub fn files(
    data: &[u8],
    textures: &Textures,
    palette: &Palette,
    limits: &ModelLimits,
) -> Result<Vec<(String, Vec<u8>)>, ViewError> {
    let model = o3do::parse(data, limits).map_err(|e| ViewError::invalid("", e.to_string()))?;
    let mut out = vec![
        (OBJ.to_string(), obj_text(&model, textures).into_bytes()),
        (
            MTL.to_string(),
            mtl_text(&model, textures, palette).into_bytes(),
        ),
        (PIECES.to_string(), pieces_csv(&model).into_bytes()),
    ];
    for (t, file) in texture_files(&model, textures) {
        let Some(tex) = textures.get(&t) else {
            continue;
        };
        let path = format!("{TEXTURE_DIR}/{file}");
        let mut png = Vec::new();
        write_indexed_png(&mut png, tex.width, tex.height, &tex.indices, palette, None)
            .map_err(|e| ViewError::invalid(path.clone(), format!("cannot encode PNG: {e}")))?;
        out.push((path, png));
    }
    Ok(out)
}

/// The rendered preview.
pub const PREVIEW: &str = "preview.png";
/// Side of the preview in pixels (512: what a modder checks shows; a stock model renders in
/// a few milliseconds more than at 128).
pub const PREVIEW_SIZE: u32 = 512;
/// Bytes the preview's rendering holds (RGBA, depth buffer, PNG).
pub const PREVIEW_BYTES: u64 = (PREVIEW_SIZE as u64) * (PREVIEW_SIZE as u64) * 16;
/// Pixel tests one preview may spend (bounding boxes of triangles summed): a model with more
/// drawn area than this is previewed with the faces that fit, so its time is bounded.
pub const PREVIEW_WORK: u64 = 1 << 26;
/// Empty border around the model in the preview, in pixels.
pub const PREVIEW_MARGIN: f64 = 16.0;

/// Screen position of a model-space point (3DO axes, game units) in the game's oblique
/// view: x to the right, +z up the screen (units face −z, down the screen, towards the
/// camera), height up the screen at half scale, as the game draws heights on its maps.
pub fn project(p: [f64; 3]) -> (f64, f64) {
    (p[0], -p[2] - p[1] / 2.0)
}

/// Nearness to the game's camera (which looks along −(0, 2, −1)): larger is in front.
fn depth(p: [f64; 3]) -> f64 {
    2.0 * p[1] - p[2]
}

/// The faces the preview draws: (piece, primitive) pairs of [`is_face`], with their
/// model-space vertices in the primitive's order, made one at a time.
fn faces(model: &Model) -> impl Iterator<Item = (usize, usize, Vec<[f64; 3]>)> + '_ {
    model.pieces.iter().enumerate().flat_map(move |(pi, p)| {
        let o = model.world_origin(pi);
        p.primitives
            .iter()
            .enumerate()
            .filter(move |&(k, _)| is_face(model, pi, k))
            .map(move |(k, q)| {
                let pts = q
                    .indices
                    .iter()
                    .filter_map(|&i| p.vertices.get(usize::from(i)))
                    .map(|v| {
                        [
                            coord(o[0] + i64::from(v[0])),
                            coord(o[1] + i64::from(v[1])),
                            coord(o[2] + i64::from(v[2])),
                        ]
                    })
                    .collect();
                (pi, k, pts)
            })
    })
}

/// Renders the model as the game's camera sees it, `PREVIEW_SIZE` square, RGBA (alpha 0
/// where nothing is drawn): orthographic oblique projection ([`project`]) fitted into the
/// square, a depth buffer, textures mapped corner by corner, a simple two-sided light.
/// A pixel is covered when its centre lies in a face's triangle (fan from the first vertex).
/// Drawing stops after [`PREVIEW_WORK`] pixel tests.
pub fn render_preview(model: &Model, textures: &Textures, palette: &Palette) -> Vec<u8> {
    let mut work = 0u64;
    let size = PREVIEW_SIZE as usize;
    let mut rgba = vec![0u8; size * size * 4];
    let mut zbuf = vec![f64::NEG_INFINITY; size * size];
    let (mut x0, mut y0, mut x1, mut y1) = (f64::MAX, f64::MAX, f64::MIN, f64::MIN);
    let mut any = false;
    for (_, _, pts) in faces(model) {
        any = true;
        for p in pts {
            let (x, y) = project(p);
            (x0, y0, x1, y1) = (x0.min(x), y0.min(y), x1.max(x), y1.max(y));
        }
    }
    if !any {
        return rgba;
    }
    let inner = f64::from(PREVIEW_SIZE) - 2.0 * PREVIEW_MARGIN;
    let span = (x1 - x0).max(y1 - y0).max(1e-9);
    let s = inner / span;
    let (ox, oy) = (
        PREVIEW_MARGIN + (inner - (x1 - x0) * s) / 2.0,
        PREVIEW_MARGIN + (inner - (y1 - y0) * s) / 2.0,
    );
    let light = {
        let l = [-1.0f64, 2.0, 1.0];
        let n = (l[0] * l[0] + l[1] * l[1] + l[2] * l[2]).sqrt();
        [l[0] / n, l[1] / n, l[2] / n]
    };
    for (pi, k, pts) in faces(model) {
        let q = &model.pieces[pi].primitives[k];
        if pts.len() < 3 {
            continue;
        }
        let tex = q.texture.as_deref().and_then(|t| textures.get(t));
        let solid = usize::try_from(q.color)
            .ok()
            .and_then(|i| palette.colors.get(i))
            .copied()
            .unwrap_or([0, 0, 0]);
        let shade = {
            let (a, b, c) = (pts[0], pts[1], pts[2]);
            let u = [b[0] - a[0], b[1] - a[1], b[2] - a[2]];
            let v = [c[0] - a[0], c[1] - a[1], c[2] - a[2]];
            let n = [
                u[1] * v[2] - u[2] * v[1],
                u[2] * v[0] - u[0] * v[2],
                u[0] * v[1] - u[1] * v[0],
            ];
            let len = (n[0] * n[0] + n[1] * n[1] + n[2] * n[2]).sqrt();
            let d = if len > 0.0 {
                (n[0] * light[0] + n[1] * light[1] + n[2] * light[2]).abs() / len
            } else {
                1.0
            };
            0.55 + 0.45 * d
        };
        // each colour the face draws is shaded once: its solid colour or grey up front, a
        // texture's palette entries when first met
        let shaded = |rgb: [u8; 3]| rgb.map(|c| round_half_up(f64::from(c) * shade).min(255) as u8);
        let flat = if tex.is_none() && q.texture.is_some() {
            shaded([128, 128, 128])
        } else {
            shaded(solid)
        };
        let mut by_index: [Option<[u8; 3]>; 256] = [None; 256];
        let screen: Vec<(f64, f64, f64)> = pts
            .iter()
            .map(|&p| {
                let (x, y) = project(p);
                (ox + (x - x0) * s, oy + (y - y0) * s, depth(p))
            })
            .collect();
        let corner = |c: usize| -> (f64, f64) {
            // Image-space corners: top-left, top-right, bottom-right, bottom-left.
            [(0.0, 0.0), (1.0, 0.0), (1.0, 1.0), (0.0, 1.0)][c.min(3)]
        };
        for t in 1..screen.len() - 1 {
            let tri = [
                (screen[0], corner(0)),
                (screen[t], corner(t)),
                (screen[t + 1], corner(t + 1)),
            ];
            let ((ax, ay, az), ta) = tri[0];
            let ((bx, by, bz), tb) = tri[1];
            let ((cx, cy, cz), tc) = tri[2];
            let area = (bx - ax) * (cy - ay) - (by - ay) * (cx - ax);
            if area.abs() < 1e-12 {
                continue;
            }
            let clampi = |v: f64| (v.max(0.0) as usize).min(size);
            let (px0, px1) = (
                clampi(ax.min(bx).min(cx).floor()),
                clampi(ax.max(bx).max(cx).ceil() + 1.0),
            );
            let (py0, py1) = (
                clampi(ay.min(by).min(cy).floor()),
                clampi(ay.max(by).max(cy).ceil() + 1.0),
            );
            work += ((px1 - px0) * (py1 - py0)) as u64;
            if work > PREVIEW_WORK {
                log::debug!("preview: drawing stopped after {PREVIEW_WORK} pixel tests");
                return rgba;
            }
            for py in py0..py1 {
                let y = py as f64 + 0.5;
                // only the pixels of the row the triangle can cover (each still tested)
                let Some((lo, hi)) = row_span([(ax, ay), (bx, by), (cx, cy)], y) else {
                    continue;
                };
                let sx0 = (lo.floor().max(0.0) as usize).max(px0);
                let sx1 = (hi.ceil().max(0.0) as usize).min(px1);
                for px in sx0..sx1 {
                    let Some((w0, w1, w2)) =
                        weights([(ax, ay), (bx, by), (cx, cy)], area, px as f64 + 0.5, y)
                    else {
                        continue;
                    };
                    let z = w0 * az + w1 * bz + w2 * cz;
                    let at = py * size + px;
                    if z < zbuf[at] {
                        continue;
                    }
                    zbuf[at] = z;
                    let out = match tex {
                        Some(tx) if tx.width > 0 && tx.height > 0 => {
                            let u = w0 * ta.0 + w1 * tb.0 + w2 * tc.0;
                            let v = w0 * ta.1 + w1 * tb.1 + w2 * tc.1;
                            let sx =
                                ((u * f64::from(tx.width)) as usize).min(tx.width as usize - 1);
                            let sy =
                                ((v * f64::from(tx.height)) as usize).min(tx.height as usize - 1);
                            let i = tx
                                .indices
                                .get(sy * tx.width as usize + sx)
                                .copied()
                                .unwrap_or(0);
                            *by_index[usize::from(i)]
                                .get_or_insert_with(|| shaded(palette.colors[usize::from(i)]))
                        }
                        // (a texture named but not found: grey; else the face's colour)
                        _ => flat,
                    };
                    let px_out = &mut rgba[at * 4..at * 4 + 4];
                    px_out[..3].copy_from_slice(&out);
                    px_out[3] = 255;
                }
            }
        }
    }
    rgba
}

/// `v.round()` for `0 ≤ v < 2³²` (halves away from zero) without the library call: the
/// fraction after truncating is exact in floating point.
fn round_half_up(v: f64) -> u32 {
    let t = v as u32;
    if v - f64::from(t) >= 0.5 {
        t + 1
    } else {
        t
    }
}

/// The barycentric weights of point `(x, y)` in triangle `t` (of doubled signed area
/// `area`), unless it lies outside (edges are inside).
#[inline]
fn weights(t: [(f64, f64); 3], area: f64, x: f64, y: f64) -> Option<(f64, f64, f64)> {
    let [(ax, ay), (bx, by), (cx, cy)] = t;
    let w0 = ((bx - x) * (cy - y) - (by - y) * (cx - x)) / area;
    let w1 = ((cx - x) * (ay - y) - (cy - y) * (ax - x)) / area;
    let w2 = 1.0 - w0 - w1;
    // (as written: a NaN weight, from a crafted model's overflow, counts as inside)
    let outside = w0 < 0.0 || w1 < 0.0 || w2 < 0.0;
    (!outside).then_some((w0, w1, w2))
}

/// The x span of pixel row `y` a triangle can cover: from the leftmost to the rightmost
/// point where its edges cross the row, a pixel wider each side (a superset of the pixels
/// the exact test keeps: a point inside lies between two crossings of its row); rows a
/// pixel beyond the corners cross at the nearest corner. `None`: no edge reaches the row.
fn row_span(corners: [(f64, f64); 3], y: f64) -> Option<(f64, f64)> {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for k in 0..3 {
        let ((ax, ay), (bx, by)) = (corners[k], corners[(k + 1) % 3]);
        if y < ay.min(by) - 1.0 || y > ay.max(by) + 1.0 {
            continue;
        }
        let dy = by - ay;
        if dy.abs() < 1e-9 {
            (lo, hi) = (lo.min(ax.min(bx)), hi.max(ax.max(bx)));
            continue;
        }
        let t = ((y - ay) / dy).clamp(0.0, 1.0);
        let x = ax + t * (bx - ax);
        (lo, hi) = (lo.min(x), hi.max(x));
    }
    (lo <= hi).then_some((lo - 1.0, hi + 1.0))
}

/// [`render_preview`] as a PNG.
pub fn preview_png(
    model: &Model,
    textures: &Textures,
    palette: &Palette,
) -> Result<Vec<u8>, ViewError> {
    let rgba = render_preview(model, textures, palette);
    let mut out = Vec::new();
    let mut enc = png::Encoder::new(&mut out, PREVIEW_SIZE, PREVIEW_SIZE);
    enc.set_color(png::ColorType::Rgba);
    enc.set_depth(png::BitDepth::Eight);
    crate::view::image::fast_png(&mut enc);
    let res = enc
        .write_header()
        .and_then(|mut w| w.write_image_data(&rgba).and_then(|_| w.finish()));
    res.map_err(|e| ViewError::invalid(PREVIEW, format!("cannot encode PNG: {e}")))?;
    Ok(out)
}

/// The view of a 3DO: the files of [`files`] plus `preview.png`, rendered when it is read.
pub struct ModelView {
    list: FileListView,
    entries: Vec<Entry>,
    model: Model,
    textures: Textures,
    palette: Palette,
    bytes: Vec<u8>,
}

impl ModelView {
    /// Decodes `data` and lays out its view (the preview is rendered on demand).
    pub fn new(
        data: &[u8],
        textures: &Textures,
        palette: &Palette,
        limits: &ModelLimits,
    ) -> Result<ModelView, ViewError> {
        let model = o3do::parse(data, limits).map_err(|e| ViewError::invalid("", e.to_string()))?;
        let list = FileListView::new(files(data, textures, palette, limits)?);
        let mut used = Textures::new();
        for t in model.textures() {
            if let Some(x) = textures.get(&t) {
                used.insert(&t, x.clone());
            }
        }
        let mut entries = list.entries().to_vec();
        let at = entries
            .iter()
            .position(|e| e.path == PIECES)
            .map_or(entries.len(), |i| i + 1);
        entries.insert(at, Entry::file(PREVIEW));
        Ok(ModelView {
            list,
            entries,
            model,
            textures: used,
            palette: palette.clone(),
            bytes: data.to_vec(),
        })
    }

    /// The decoded model.
    pub fn model(&self) -> &Model {
        &self.model
    }
}

impl View for ModelView {
    fn entries(&self) -> &[Entry] {
        &self.entries
    }

    fn render(&self, path: &str, out: &mut dyn std::io::Write) -> Result<(), ViewError> {
        if path == PREVIEW {
            let png = preview_png(&self.model, &self.textures, &self.palette)?;
            return out.write_all(&png).map_err(|source| ViewError::Io {
                path: path.to_string(),
                source,
            });
        }
        self.list.render(path, out)
    }

    fn size_hint(&self, path: &str) -> Option<u64> {
        self.list.size_hint(path)
    }

    fn base_bytes(&self) -> Option<&[u8]> {
        Some(&self.bytes)
    }
}

/// The view of the 3DO `data` (see [`ModelView`]).
pub fn open(
    data: &[u8],
    textures: &Textures,
    palette: &Palette,
    limits: &ModelLimits,
) -> Result<ModelView, ViewError> {
    ModelView::new(data, textures, palette, limits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_without_the_library_call_is_round() {
        let mut v = 0.0f64;
        while v < 300.0 {
            for x in [v, v + 0.5, v + 0.499_999_999_999_999_94, v + 0.25] {
                assert_eq!(f64::from(round_half_up(x)), x.round(), "{x}");
            }
            v += 1.0;
        }
        // the products the preview rounds: a channel times a shade
        for c in 0..=255u8 {
            for k in 0..=450 {
                let x = f64::from(c) * (0.55 + f64::from(k) / 1000.0);
                assert_eq!(f64::from(round_half_up(x)), x.round(), "{x}");
            }
        }
    }

    #[test]
    fn a_row_span_holds_every_pixel_the_exact_test_keeps() {
        // triangles from a fixed pseudo-random sequence, thin and slanted ones included
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % 64_000) as f64 / 1000.0
        };
        let mut inside = 0;
        for _ in 0..2000 {
            let t = [(next(), next()), (next(), next()), (next(), next())];
            let [(ax, ay), (bx, by), (cx, cy)] = t;
            let area = (bx - ax) * (cy - ay) - (by - ay) * (cx - ax);
            if area.abs() < 1e-12 {
                continue;
            }
            for py in 0..66 {
                let y = py as f64 + 0.5;
                let span = row_span(t, y);
                for px in 0..66 {
                    if weights(t, area, px as f64 + 0.5, y).is_none() {
                        continue;
                    }
                    inside += 1;
                    let (lo, hi) = span.unwrap_or_else(|| panic!("{t:?} row {py}: no span"));
                    assert!(
                        (lo.floor().max(0.0) as usize) <= px && px < hi.ceil() as usize,
                        "{t:?}: pixel {px},{py} outside {lo}..{hi}"
                    );
                }
            }
        }
        assert!(inside > 100_000, "{inside}");
    }
    use crate::formats::o3do::tests::cube_tree;

    fn textures() -> Textures {
        let mut t = Textures::new();
        t.insert(
            "TEX1",
            Texture {
                width: 2,
                height: 1,
                indices: vec![1, 2],
            },
        );
        t
    }

    #[test]
    fn obj_places_pieces_and_maps_texture_corners_in_order() {
        let m = o3do::parse(&cube_tree(), &ModelLimits::default()).unwrap();
        let obj = obj_text(&m, &textures());
        let lines: Vec<&str> = obj.lines().collect();
        // Root selection quad is left out: "base" has its vertices and no face.
        let base = lines.iter().position(|l| *l == "o base").unwrap();
        assert_eq!(
            lines[base + 1..base + 5],
            ["v 0 0 0", "v 1 0 0", "v 1 1 0", "v 0 1 0"]
        );
        assert_eq!(lines[base + 5], "o arm");
        assert!(
            !obj.contains("-0 ") && !obj.contains("-0\n"),
            "no negative zeros"
        );
        // arm at (1,0,0): its quad uses the found texture with corners 1..4, the triangle
        // the first three corners.
        assert_eq!(lines[base + 6], "v 1 0 0");
        let arm_faces: Vec<&str> = lines
            .iter()
            .filter(|l| l.starts_with("f 8/") || l.starts_with("f 7/"))
            .copied()
            .collect();
        // Written in reverse (z is negated), each vertex keeping its corner.
        assert_eq!(arm_faces, ["f 8/4 7/3 6/2 5/1", "f 7/3 6/2 5/1"]);
        // hand at arm + (0,2,0) = (1,2,0); its texture is unknown: no texture coordinates.
        let hand = lines.iter().position(|l| *l == "o hand").unwrap();
        assert_eq!(lines[hand + 1], "v 1 2 0");
        assert!(obj.contains("usemtl Other\nf 12 11 10 9\n"));
        // leg at (-1,0,0) has a coloured line.
        assert!(obj.contains("usemtl color_1\nl 13 14\n"));
        assert_eq!(lines.iter().filter(|l| l.starts_with("vt ")).count(), 4);

        let mtl = mtl_text(&m, &textures(), &Palette::ta());
        assert!(mtl.contains("newmtl Tex1\nKd 1 1 1\nmap_Kd textures/Tex1.png\n"));
        assert!(mtl.contains("newmtl Other\n# texture \"Other\" not found"));
        let c1 = Palette::ta().colors[1];
        assert!(mtl.contains(&format!(
            "newmtl color_1\nKd {} {} {}\n",
            f64::from(c1[0]) / 255.0,
            f64::from(c1[1]) / 255.0,
            f64::from(c1[2]) / 255.0
        )));
    }

    #[test]
    fn pieces_csv_and_files() {
        let data = cube_tree();
        let m = o3do::parse(&data, &ModelLimits::default()).unwrap();
        assert_eq!(
            pieces_csv(&m),
            "name,parent,x,y,z,vertices,primitives\nbase,,0,0,0,4,1\narm,base,1,0,0,4,2\n\
             hand,arm,0,2,0,4,1\nleg,base,-1,0,0,4,1\n"
        );
        let f = files(&data, &textures(), &Palette::ta(), &ModelLimits::default()).unwrap();
        let names: Vec<&str> = f.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, [OBJ, MTL, PIECES, "textures/Tex1.png"]);
        let v = open(&data, &textures(), &Palette::ta(), &ModelLimits::default()).unwrap();
        assert_eq!(v.entries()[3], Entry::file(PREVIEW));
        assert_eq!(v.entries()[4], Entry::dir(TEXTURE_DIR));
        let png = v.render_vec(PREVIEW).unwrap();
        assert!(png.starts_with(b"\x89PNG"));
        assert!(files(
            &data[..60],
            &textures(),
            &Palette::ta(),
            &ModelLimits::default()
        )
        .is_err());
    }

    #[test]
    fn preview_maps_texture_corners_in_vertex_order() {
        use crate::formats::o3do::tests::build;
        // A ground quad (y = 0) seen from above: z grows up the screen.
        let quad = vec![[0, 0, 0], [65536, 0, 0], [65536, 0, 65536], [0, 0, 65536]];
        let data = build(
            &[
                ("root", [0, 0, 0], vec![], vec![]),
                (
                    "floor",
                    [0, 0, 0],
                    quad,
                    vec![(vec![0, 1, 2, 3], Some("T"), false)],
                ),
            ],
            &[vec![1], vec![]],
        );
        let m = o3do::parse(&data, &ModelLimits::default()).unwrap();
        let mut t = Textures::new();
        t.insert(
            "t",
            Texture {
                width: 2,
                height: 2,
                indices: vec![1, 2, 3, 4],
            },
        );
        let pal = Palette::ta();
        let img = render_preview(&m, &t, &pal);
        let shade = 0.55 + 0.45 * (2.0 / 6f64.sqrt());
        let at = |x: usize, y: usize| &img[(y * PREVIEW_SIZE as usize + x) * 4..][..4];
        let want = |i: usize| {
            let c = pal.colors[i];
            c.map(|v| (f64::from(v) * shade).round() as u8)
        };
        // Vertex 0 (screen bottom-left) takes the texture's top-left corner, vertex 1 (bottom
        // right) its top-right, vertex 2 (top right) bottom-right, vertex 3 bottom-left.
        // (positions on a 128-pixel preview, scaled)
        let k = PREVIEW_SIZE as usize / 128;
        for (x, y, i) in [(30, 98, 1), (98, 98, 2), (98, 30, 4), (30, 30, 3)] {
            assert_eq!(at(x * k, y * k)[..3], want(i), "({x},{y})");
            assert_eq!(at(x * k, y * k)[3], 255);
        }
        assert_eq!(at(1, 1)[3], 0);
        assert_eq!(at(126 * k, 126 * k)[3], 0);
    }

    fn view_files(data: &[u8]) -> crate::view::MemFileSet {
        let v = open(data, &textures(), &Palette::ta(), &ModelLimits::default()).unwrap();
        crate::view::MemFileSet::from_view(&v).unwrap()
    }

    #[test]
    fn an_edited_obj_line_changes_one_vertex_and_errors_name_the_line() {
        let data = cube_tree();
        let lim = ModelLimits::default();
        let mut fs = view_files(&data);
        assert_eq!(build(&fs, Some(&data), None, &lim).unwrap(), data);
        let obj = String::from_utf8(fs.files[OBJ].clone()).unwrap();
        // hand (at 1,2,0) vertex 1 (1,0,0) moves up by 0.5
        let edited = obj.replacen(
            "o hand\nv 1 2 0\nv 2 2 0\n",
            "o hand\nv 1 2 0\nv 2 2.5 0\n",
            1,
        );
        assert_ne!(edited, obj);
        fs.files.insert(OBJ.into(), edited.into_bytes());
        let out = build(&fs, Some(&data), None, &lim).unwrap();
        let m = o3do::parse(&out, &lim).unwrap();
        let base = o3do::parse(&data, &lim).unwrap();
        assert_eq!(m.pieces[2].vertices[1], [65536, 32768, 0]);
        let diff: Vec<usize> = (0..data.len()).filter(|&i| out[i] != data[i]).collect();
        let at = base.pieces[2].vertex_offset as usize + 12 + 4;
        assert!(
            !diff.is_empty() && diff.iter().all(|i| (at..at + 4).contains(i)),
            "{diff:?}"
        );
        // a broken line: its number in the error
        let broken = obj.replacen("v 2 2 0\n", "v 2 oops 0\n", 1);
        let line = broken.lines().position(|l| l == "v 2 oops 0").unwrap() + 1;
        fs.files.insert(OBJ.into(), broken.into_bytes());
        let e = build(&fs, Some(&data), None, &lim).unwrap_err().to_string();
        assert!(e.contains(&format!("line {line}:")), "{e}");
        // without a base, the OBJ and pieces.csv alone make the same pieces
        fs.files.insert(OBJ.into(), obj.into_bytes());
        let fresh = build(&fs, None, None, &lim).unwrap();
        let f = o3do::parse(&fresh, &lim).unwrap();
        let names = |m: &Model| {
            m.pieces
                .iter()
                .map(|p| (p.name.clone(), p.parent, p.origin, p.vertices.clone()))
                .collect::<Vec<_>>()
        };
        assert_eq!(names(&f), names(&base));
        // a texture the game does not have, named by its material
        let obj = String::from_utf8(fs.files[OBJ].clone()).unwrap();
        fs.files.insert(
            OBJ.into(),
            obj.replacen("usemtl Other", "usemtl Nowhere", 1)
                .into_bytes(),
        );
        let e = build(&fs, Some(&data), Some(&textures()), &lim)
            .unwrap_err()
            .to_string();
        assert!(e.contains("material Nowhere"), "{e}");
    }

    /// The demo model with what editors drop: two vertices of `turret` no face uses and a
    /// one-point piece `flare` under it.
    fn with_unused() -> Vec<u8> {
        let lim = ModelLimits::default();
        let mut m = o3do::parse(&crate::sample::demo_model_3do(), &lim).unwrap();
        let t = m.pieces[1].clone();
        m.pieces[1].vertices.push([0, 6 << 16, 0]);
        m.pieces[1].vertices.push([1 << 16, 6 << 16, 0]);
        m.pieces.push(o3do::Piece {
            name: "flare".into(),
            parent: Some(1),
            depth: 2,
            origin: [0, 2 << 16, -(6 << 16)],
            vertices: vec![[0, 0, 0]],
            primitives: Vec::new(),
            ..t
        });
        o3do::write(&m, None).unwrap()
    }

    /// `obj` with the `v` lines of object `name` passed through `f` (`None` drops one).
    fn edit_vertices(obj: &str, name: &str, f: impl Fn(usize, &str) -> Option<String>) -> String {
        let mut inside = false;
        let mut k = 0;
        let mut out = String::new();
        for l in obj.lines() {
            if let Some(n) = l.strip_prefix("o ") {
                inside = n == name;
                k = 0;
            }
            if inside && l.starts_with("v ") {
                let r = f(k, l);
                k += 1;
                match r {
                    Some(r) => out.push_str(&r),
                    None => continue,
                }
            } else {
                out.push_str(l);
            }
            out.push('\n');
        }
        out
    }

    #[test]
    fn vertices_no_face_uses_are_kept_when_an_editor_drops_them_deleted_when_a_list_lacks_them() {
        let data = with_unused();
        let lim = ModelLimits::default();
        let mut fs = view_files(&data);
        let obj = String::from_utf8(fs.files[OBJ].clone()).unwrap();
        // both unused vertices dropped (every listed vertex used): kept, identical bytes
        let dropped = edit_vertices(&obj, "turret", |k, l| (k < 8).then(|| l.to_string()));
        fs.files.insert(OBJ.into(), dropped.into_bytes());
        assert_eq!(build(&fs, Some(&data), None, &lim).unwrap(), data);
        // one of them left out of a list that still has the other, with a face edited
        // (an OBJ whose faces are all the model's own gives the model back): deleted
        let one = edit_vertices(&obj, "turret", |k, l| match k {
            0 => Some(l.replacen("v -5 8", "v -5 8.5", 1)),
            9 => None,
            _ => Some(l.to_string()),
        });
        assert!(one.contains("v -5 8.5 "), "{one}");
        fs.files.insert(OBJ.into(), one.into_bytes());
        let out = build(&fs, Some(&data), None, &lim).unwrap();
        let m = o3do::parse(&out, &lim).unwrap();
        assert_eq!(m.pieces[1].vertices.len(), 9);
        // two faces of a material listed in another order (Blender groups a piece's faces by
        // material): identical bytes
        let f: Vec<&str> = obj.lines().filter(|l| l.starts_with("f ")).collect();
        let swapped = obj
            .replacen(f[7], "SWAP", 1)
            .replacen(f[8], f[7], 1)
            .replacen("SWAP", f[8], 1);
        assert_ne!(swapped, obj);
        fs.files.insert(OBJ.into(), swapped.into_bytes());
        assert_eq!(build(&fs, Some(&data), None, &lim).unwrap(), data);
    }

    #[test]
    fn a_piece_whose_vertices_all_moved_by_one_amount_moves_its_offset() {
        let data = with_unused();
        let lim = ModelLimits::default();
        let mut fs = view_files(&data);
        let obj = String::from_utf8(fs.files[OBJ].clone()).unwrap();
        // every vertex of turret 1.5 along x (and z, negated in the OBJ, by 0.25)
        let moved = edit_vertices(&obj, "turret", |_, l| {
            let c: Vec<f64> = l[2..].split(' ').map(|s| s.parse().unwrap()).collect();
            Some(format!("v {} {} {}", c[0] + 1.5, c[1], c[2] - 0.25))
        });
        fs.files.insert(OBJ.into(), moved.into_bytes());
        let out = build(&fs, Some(&data), None, &lim).unwrap();
        let (a, b) = (
            o3do::parse(&data, &lim).unwrap(),
            o3do::parse(&out, &lim).unwrap(),
        );
        assert_eq!(b.pieces[1].origin[0] - a.pieces[1].origin[0], 3 << 15);
        assert_eq!(b.pieces[1].origin[2] - a.pieces[1].origin[2], 1 << 14);
        assert_eq!(b.pieces[1].vertices, a.pieces[1].vertices);
        assert_eq!(b.pieces[0].origin, a.pieces[0].origin);
        // flare (one point, no evidence) follows turret; the OBJ kept its point in place
        assert_eq!(b.pieces[2].origin, a.pieces[2].origin);
        assert_eq!(
            b.world_origin(2)[0] + i64::from(b.pieces[2].vertices[0][0]),
            0
        );
        // less than two steps is an editor's rounding: no move
        let nudged = edit_vertices(&obj, "turret", |_, l| {
            let c: Vec<f64> = l[2..].split(' ').map(|s| s.parse().unwrap()).collect();
            Some(format!("v {:.6} {} {}", c[0] + 0.9 / 65536.0, c[1], c[2]))
        });
        fs.files.insert(OBJ.into(), nudged.into_bytes());
        assert_eq!(build(&fs, Some(&data), None, &lim).unwrap(), data);
    }
}
