//! The dump view of a GAF and its inverse, build.
//!
//! ```text
//! metadata.json              what the CSVs cannot hold (version, order, raw names, trailing
//!                            bytes, header words, composite parents, palette, transparency)
//! <sequence>/sequence.csv    index,name,loop_flags,unknown4
//! <sequence>/frames.csv      frame,width,height,origin_x,origin_y,transparency,
//!                            duration_ticks,duration_sec,storage,blend
//! <sequence>/<n>.png         indexed PNG, one transparent slot (none for 0-size frames)
//! <sequence>/<n>.layers/     composite frames only: layers.csv + <k>.png (+ <k>.layers/)
//! <sequence>/animated.png    APNG preview (not read back)
//! ```
//!
//! A composite frame's `<n>.png` is the flattened frame on the union box of its layers and
//! its frames.csv row describes that image (size and origin); the composite's own header
//! (`width`, `height`, `origin_x`, `origin_y`) is kept in metadata.json. Build keeps the
//! composite when `<n>.png` still equals the flattening of the (possibly edited) layers, and
//! makes it a simple frame from `<n>.png` otherwise.

use super::image::{
    decode_gif, decode_png, indexed_encoder, to_indices, write_indexed_gif, write_indexed_png,
};
use super::{unique_names, Entry, FileSet, View, ViewError, ViewOptions};
use crate::formats::gaf::{self, Content, Flat, Frame, FrameEntry, Gaf, Pixels, Sequence};
use crate::formats::palette::Palette;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap};
use std::io::Write;

/// Columns of frames.csv (kbot's).
pub const FRAMES_CSV_HEADER: [&str; 10] = [
    "frame",
    "width",
    "height",
    "origin_x",
    "origin_y",
    "transparency",
    "duration_ticks",
    "duration_sec",
    "storage",
    "blend",
];
/// Columns of sequence.csv (kbot's).
pub const SEQUENCE_CSV_HEADER: [&str; 4] = ["index", "name", "loop_flags", "unknown4"];
/// Columns of a composite's layers.csv.
pub const LAYERS_CSV_HEADER: [&str; 8] = [
    "layer",
    "width",
    "height",
    "origin_x",
    "origin_y",
    "transparency",
    "storage",
    "blend",
];

/// Names at the top of a dump that sequence folders must not take.
const RESERVED: &[&str] = &["metadata.json", ".tafs-status"];

/// metadata.json of a GAF dump.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Metadata {
    /// Always `"gaf"`.
    pub kind: String,
    /// Header version word.
    pub version: u32,
    /// Header +8 word.
    #[serde(default)]
    pub header_word8: u32,
    /// Palette the PNGs use and where it came from.
    #[serde(default)]
    pub palette: String,
    /// Transparency rule of the PNGs (always "game" in dumps).
    #[serde(default)]
    pub transparency: String,
    /// Sequence folders in file order.
    #[serde(default)]
    pub sequences: Vec<SequenceMeta>,
    /// Bytes after the last block, hex.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub trailing_hex: String,
    /// Per-frame fields the CSVs cannot hold, keyed by `<sequence>/<n>` or
    /// `<sequence>/<n>.layers/<k>`. Only frames that need them are listed.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub frames: BTreeMap<String, FrameExtras>,
    /// Reader warnings (short RLE rows …), informational.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Where the blocks sat in the dumped file (build puts them back there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<super::gaf_layout::LayoutMeta>,
}

/// Per-sequence data of metadata.json.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct SequenceMeta {
    /// The folder name.
    pub dir: String,
    /// The 32 raw name bytes, hex, when the name is not plain printable ASCII followed by
    /// NULs (garbage after the NUL, non-ASCII bytes).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name_raw_hex: String,
}

/// Header fields of one frame or layer that its CSV row cannot hold.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct FrameExtras {
    /// +12 word when non-zero.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub word12: u32,
    /// +20 word when non-zero.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub word20: u32,
    /// +9 byte when it is neither 0 nor 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compressed_byte: Option<u8>,
    /// For composites: the composite's own header size and origin (the CSV row describes
    /// the flattened image).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub composite: Option<CompositeHeader>,
    /// For composites: fingerprint of the flattened image as dumped, so build can tell
    /// whether `<n>.png` was edited (then it wins) or only layers were (then they do).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub flat_fnv: String,
}

fn is_zero(v: &u32) -> bool {
    *v == 0
}

/// A composite frame's own header geometry.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub struct CompositeHeader {
    /// +0 width.
    pub width: u16,
    /// +2 height.
    pub height: u16,
    /// +4 origin x.
    pub origin_x: i16,
    /// +6 origin y.
    pub origin_y: i16,
}

/// What one file of the view shows.
#[derive(Debug, Clone)]
enum Node {
    Metadata,
    SequenceCsv(usize),
    FramesCsv(usize),
    /// Frame PNG: sequence, path of indices (frame, layer, sublayer…).
    FramePng(usize, Vec<usize>),
    LayersCsv(usize, Vec<usize>),
    Animated(usize),
}

/// The exploded view of one GAF.
pub struct GafView {
    gaf: Gaf,
    palette: Palette,
    metadata: Vec<u8>,
    entries: Vec<Entry>,
    nodes: HashMap<String, Node>,
    format: super::FrameFormat,
}

impl GafView {
    /// Decodes `data` and lays out its files.
    pub fn new(data: &[u8], opts: &ViewOptions) -> Result<GafView, ViewError> {
        let gaf = gaf::parse(data, &opts.limits)?;
        GafView::from_gaf(gaf, opts)
    }

    /// Lays out the files of an already decoded GAF. Refuses a GAF whose composite frames
    /// span more than [`gaf::MAX_FLAT_PIXELS`] (their flattened PNG could not be made).
    pub fn from_gaf(gaf: Gaf, opts: &ViewOptions) -> Result<GafView, ViewError> {
        for (si, s) in gaf.sequences.iter().enumerate() {
            for (fi, fe) in s.frames.iter().enumerate() {
                if area(fe.frame.bounds()) > gaf::MAX_FLAT_PIXELS {
                    return Err(ViewError::invalid(
                        "",
                        format!(
                            "sequence {si} frame {fi}: its layers span more than {} pixels",
                            gaf::MAX_FLAT_PIXELS
                        ),
                    ));
                }
            }
        }
        let dirs = unique_names(gaf.sequences.iter().map(|s| s.name_bytes()), RESERVED);
        let mut entries = vec![Entry::file("metadata.json")];
        let mut nodes = HashMap::new();
        nodes.insert("metadata.json".to_string(), Node::Metadata);
        let mut meta = Metadata {
            kind: "gaf".into(),
            version: gaf.version,
            header_word8: gaf.header_word8,
            palette: opts.palette_source.clone(),
            transparency: "game".into(),
            trailing_hex: hex(&gaf.trailing),
            warnings: gaf.warnings.iter().map(|w| w.to_string()).collect(),
            layout: super::gaf_layout::layout_meta(&gaf),
            ..Default::default()
        };
        for (si, (seq, dir)) in gaf.sequences.iter().zip(&dirs).enumerate() {
            meta.sequences.push(SequenceMeta {
                dir: dir.clone(),
                name_raw_hex: if plain_name(&seq.name) {
                    String::new()
                } else {
                    hex(&seq.name)
                },
            });
            entries.push(Entry::dir(dir.clone()));
            let mut add = |path: String, node: Node, kind_dir: bool| {
                if kind_dir {
                    entries.push(Entry::dir(path));
                } else {
                    nodes.insert(path.clone(), node);
                    entries.push(Entry::file(path));
                }
            };
            add(format!("{dir}/sequence.csv"), Node::SequenceCsv(si), false);
            add(format!("{dir}/frames.csv"), Node::FramesCsv(si), false);
            let mut any_pixels = false;
            for (fi, fe) in seq.frames.iter().enumerate() {
                let key = format!("{dir}/{fi}");
                let mut cx = LayoutCtx {
                    add: &mut add,
                    extras: &mut meta.frames,
                    ext: opts.frame_format.ext(),
                };
                lay_out_frame(&fe.frame, &key, si, vec![fi], &mut cx, 0);
                any_pixels |= !frame_is_empty(&fe.frame);
            }
            if any_pixels && area(sequence_bounds(seq)) <= gaf::MAX_FLAT_PIXELS {
                add(format!("{dir}/animated.png"), Node::Animated(si), false);
            }
        }
        let metadata = serde_json::to_vec_pretty(&meta).unwrap_or_default();
        Ok(GafView {
            gaf,
            palette: opts.palette.clone(),
            metadata,
            entries,
            nodes,
            format: opts.frame_format,
        })
    }

    /// The decoded GAF.
    pub fn gaf(&self) -> &Gaf {
        &self.gaf
    }

    fn frame_at(&self, si: usize, path: &[usize]) -> Option<&Frame> {
        let seq = self.gaf.sequences.get(si)?;
        let (first, rest) = path.split_first()?;
        let mut f = &seq.frames.get(*first)?.frame;
        for &k in rest {
            match &f.content {
                Content::Layers(l) => f = l.get(k)?,
                Content::Pixels(_) => return None,
            }
        }
        Some(f)
    }
}

fn area((l, t, r, b): (i32, i32, i32, i32)) -> u64 {
    let w = (i64::from(r) - i64::from(l)).max(0) as u64;
    let h = (i64::from(b) - i64::from(t)).max(0) as u64;
    w * h
}

/// Union of the frames' boxes around the pen (the animation canvas).
fn sequence_bounds(s: &Sequence) -> (i32, i32, i32, i32) {
    let mut u: Option<(i32, i32, i32, i32)> = None;
    for fe in &s.frames {
        let b = fe.frame.bounds();
        if area(b) == 0 {
            continue;
        }
        u = Some(match u {
            None => b,
            Some(a) => (a.0.min(b.0), a.1.min(b.1), a.2.max(b.2), a.3.max(b.3)),
        });
    }
    u.unwrap_or((0, 0, 0, 0))
}

fn frame_is_empty(f: &Frame) -> bool {
    let (l, t, r, b) = f.bounds();
    r <= l || b <= t
}

/// Adds the files of one frame (and, for composites, its layers) to the layout.
struct LayoutCtx<'a> {
    add: &'a mut dyn FnMut(String, Node, bool),
    extras: &'a mut BTreeMap<String, FrameExtras>,
    ext: &'a str,
}

fn lay_out_frame(
    f: &Frame,
    key: &str,
    si: usize,
    path: Vec<usize>,
    cx: &mut LayoutCtx,
    depth: usize,
) {
    let mut x = FrameExtras {
        word12: f.word12,
        word20: f.word20,
        compressed_byte: (f.compressed > 1).then_some(f.compressed),
        composite: None,
        flat_fnv: String::new(),
    };
    if let Content::Layers(_) = f.content {
        x.composite = Some(CompositeHeader {
            width: f.width,
            height: f.height,
            origin_x: f.origin_x,
            origin_y: f.origin_y,
        });
        if let Some(flat) = f.flatten() {
            x.flat_fnv = image_fingerprint(flat.width, flat.height, &flat.indices, &flat.opaque);
        }
    }
    if x != FrameExtras::default() {
        cx.extras.insert(key.to_string(), x);
    }
    if !frame_is_empty(f) {
        (cx.add)(
            format!("{key}.{}", cx.ext),
            Node::FramePng(si, path.clone()),
            false,
        );
    }
    if let Content::Layers(layers) = &f.content {
        let ldir = format!("{key}.layers");
        (cx.add)(ldir.clone(), Node::Metadata, true);
        (cx.add)(
            format!("{ldir}/layers.csv"),
            Node::LayersCsv(si, path.clone()),
            false,
        );
        for (k, layer) in layers.iter().enumerate() {
            let mut p = path.clone();
            p.push(k);
            // depth is bounded by the parser's Limits; guard models built by code too
            if depth < 64 {
                lay_out_frame(layer, &format!("{ldir}/{k}"), si, p, cx, depth + 1);
            }
        }
    }
}

/// FNV-1a (64-bit) over an image's size, drawn pixels and mask: a stable fingerprint
/// (undrawn pixels do not count, so the transparent slot chosen for the PNG does not matter).
pub fn image_fingerprint(width: u32, height: u32, indices: &[u8], opaque: &[bool]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |b: u8| {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    };
    width.to_le_bytes().into_iter().for_each(&mut eat);
    height.to_le_bytes().into_iter().for_each(&mut eat);
    for (&i, &o) in indices.iter().zip(opaque) {
        eat(u8::from(o));
        eat(if o { i } else { 0 });
    }
    format!("{h:016x}")
}

/// True when the 32 name bytes are printable ASCII then only NULs.
fn plain_name(raw: &[u8; 32]) -> bool {
    let end = raw.iter().position(|&b| b == 0).unwrap_or(32);
    raw[..end].iter().all(|b| (0x20..0x7f).contains(b)) && raw[end..].iter().all(|&b| b == 0)
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

fn storage_name(f: &Frame) -> &'static str {
    if f.is_compressed() {
        "compressed"
    } else {
        "raw"
    }
}

/// The index marked transparent in a frame's PNG: its key, unless a drawn pixel uses it;
/// then the highest index no drawn pixel uses.
pub fn transparent_slot(key: u8, indices: &[u8], opaque: &[bool]) -> u8 {
    let mut used = [false; 256];
    for (&i, &o) in indices.iter().zip(opaque) {
        if o {
            used[usize::from(i)] = true;
        }
    }
    if !used[usize::from(key)] {
        return key;
    }
    (0..=255u8)
        .rev()
        .find(|&i| !used[usize::from(i)])
        .unwrap_or(key)
}

fn write_flat_image(
    out: &mut dyn Write,
    flat: &Flat,
    key: u8,
    pal: &Palette,
    format: super::FrameFormat,
) -> Result<(), String> {
    let slot = transparent_slot(key, &flat.indices, &flat.opaque);
    let px: Vec<u8> = flat
        .indices
        .iter()
        .zip(&flat.opaque)
        .map(|(&i, &o)| if o { i } else { slot })
        .collect();
    let slot = flat.opaque.iter().any(|o| !o).then_some(slot);
    match format {
        super::FrameFormat::Png => write_indexed_png(out, flat.width, flat.height, &px, pal, slot)
            .map_err(|e| e.to_string()),
        super::FrameFormat::Gif => write_indexed_gif(out, flat.width, flat.height, &px, pal, slot),
    }
}

fn csv_bytes(header: &[&str], rows: &[Vec<String>]) -> Vec<u8> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let _ = w.write_record(header);
    for r in rows {
        let _ = w.write_record(r);
    }
    w.into_inner().unwrap_or_default()
}

fn frame_row(first: String, f: &Frame, durations: Option<u32>) -> Vec<String> {
    let (w, h, ox, oy) = if let Content::Layers(_) = f.content {
        let flat_box = f.bounds();
        (
            (flat_box.2 - flat_box.0).max(0),
            (flat_box.3 - flat_box.1).max(0),
            -flat_box.0,
            -flat_box.1,
        )
    } else {
        (
            i32::from(f.width),
            i32::from(f.height),
            i32::from(f.origin_x),
            i32::from(f.origin_y),
        )
    };
    let mut row = vec![
        first,
        w.to_string(),
        h.to_string(),
        ox.to_string(),
        oy.to_string(),
        f.key.to_string(),
    ];
    if let Some(d) = durations {
        row.push(d.to_string());
        row.push(format!("{:.3}", f64::from(d.max(1)) / 30.0));
    }
    row.push(storage_name(f).to_string());
    row.push(f.blend.to_string());
    row
}

impl View for GafView {
    fn entries(&self) -> &[Entry] {
        &self.entries
    }

    fn render(&self, path: &str, out: &mut dyn Write) -> Result<(), ViewError> {
        let node = self
            .nodes
            .get(path)
            .ok_or_else(|| ViewError::NotFound(path.to_string()))?;
        let io = |e: std::io::Error| ViewError::Io {
            path: path.to_string(),
            source: e,
        };
        let missing = || ViewError::NotFound(path.to_string());
        match node {
            Node::Metadata => out.write_all(&self.metadata).map_err(io),
            Node::SequenceCsv(si) => {
                let s = self.gaf.sequences.get(*si).ok_or_else(missing)?;
                let row = vec![
                    si.to_string(),
                    s.name_str(),
                    s.loop_word.to_string(),
                    s.word4.to_string(),
                ];
                out.write_all(&csv_bytes(&SEQUENCE_CSV_HEADER, &[row]))
                    .map_err(io)
            }
            Node::FramesCsv(si) => {
                let s = self.gaf.sequences.get(*si).ok_or_else(missing)?;
                let rows: Vec<Vec<String>> = s
                    .frames
                    .iter()
                    .enumerate()
                    .map(|(i, fe)| frame_row(i.to_string(), &fe.frame, Some(fe.duration)))
                    .collect();
                out.write_all(&csv_bytes(&FRAMES_CSV_HEADER, &rows))
                    .map_err(io)
            }
            Node::LayersCsv(si, p) => {
                let f = self.frame_at(*si, p).ok_or_else(missing)?;
                let Content::Layers(layers) = &f.content else {
                    return Err(missing());
                };
                let rows: Vec<Vec<String>> = layers
                    .iter()
                    .enumerate()
                    .map(|(k, l)| frame_row(k.to_string(), l, None))
                    .collect();
                out.write_all(&csv_bytes(&LAYERS_CSV_HEADER, &rows))
                    .map_err(io)
            }
            Node::FramePng(si, p) => {
                let f = self.frame_at(*si, p).ok_or_else(missing)?;
                let flat = f
                    .flatten()
                    .ok_or_else(|| ViewError::invalid(path, "layers span too many pixels"))?;
                write_flat_image(out, &flat, f.key, &self.palette, self.format)
                    .map_err(|m| ViewError::invalid(path, m))
            }
            Node::Animated(si) => {
                let s = self.gaf.sequences.get(*si).ok_or_else(missing)?;
                let anim =
                    animation(s, Transparency::Game).map_err(|m| ViewError::invalid(path, m))?;
                write_apng(out, &anim, &self.palette, s.loops())
                    .map_err(|m| ViewError::invalid(path, m))
            }
        }
    }
}

/// How export decides transparency.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transparency {
    /// The game's rule (skips and keys).
    Game,
    /// TA: Kingdoms corner guess on raw frames.
    Heuristic,
    /// Everything drawn.
    None,
    /// This palette index transparent.
    Index(u8),
}

/// A sequence drawn frame by frame on one canvas around the pen.
pub struct Animation {
    /// Canvas width.
    pub width: u32,
    /// Canvas height.
    pub height: u32,
    /// The transparent palette slot.
    pub slot: u8,
    /// Each frame flattened, with its duration in ticks (≥ 1).
    frames: Vec<(Flat, u32)>,
    /// Canvas position of the pen.
    pen: (i32, i32),
}

impl Animation {
    /// Number of frames.
    pub fn len(&self) -> usize {
        self.frames.len()
    }

    /// True when there are no frames.
    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    /// Duration of frame `i` in ticks (≥ 1).
    pub fn ticks(&self, i: usize) -> u32 {
        self.frames.get(i).map_or(1, |f| f.1)
    }

    /// The canvas of frame `i` (drawn on demand, so only one canvas is in memory at a time).
    pub fn canvas(&self, i: usize) -> Vec<u8> {
        let (w, h) = (self.width as usize, self.height as usize);
        let mut canvas = vec![self.slot; w * h];
        let Some((f, _)) = self.frames.get(i) else {
            return canvas;
        };
        let (dx, dy) = (self.pen.0 - f.origin_x, self.pen.1 - f.origin_y);
        let fw = f.width as usize;
        for (y, (row, orow)) in f
            .indices
            .chunks(fw.max(1))
            .zip(f.opaque.chunks(fw.max(1)))
            .enumerate()
        {
            let cy = y as i64 + i64::from(dy);
            if cy < 0 || cy >= h as i64 {
                continue;
            }
            for (x, (&v, &o)) in row.iter().zip(orow).enumerate() {
                let cx = x as i64 + i64::from(dx);
                if o && cx >= 0 && cx < w as i64 {
                    canvas[cy as usize * w + cx as usize] = v;
                }
            }
        }
        canvas
    }
}

/// Lays a sequence out for animation under a transparency mode. Errors when it has no
/// pixels, or when a frame or the shared canvas would exceed [`gaf::MAX_FLAT_PIXELS`].
pub fn animation(seq: &Sequence, mode: Transparency) -> Result<Animation, String> {
    let mut flats = Vec::with_capacity(seq.frames.len());
    for (i, fe) in seq.frames.iter().enumerate() {
        let mut flat = fe.frame.flatten().ok_or_else(|| {
            format!(
                "frame {i}: its layers span more than {} pixels",
                gaf::MAX_FLAT_PIXELS
            )
        })?;
        apply_mode(&fe.frame, &mut flat, mode);
        flats.push((flat, (fe.duration & 0xFFFF).max(1)));
    }
    let (mut l, mut t, mut r, mut b) = (i64::MAX, i64::MAX, i64::MIN, i64::MIN);
    for (f, _) in flats.iter().filter(|(f, _)| f.width > 0 && f.height > 0) {
        l = l.min(-i64::from(f.origin_x));
        t = t.min(-i64::from(f.origin_y));
        r = r.max(i64::from(f.width) - i64::from(f.origin_x));
        b = b.max(i64::from(f.height) - i64::from(f.origin_y));
    }
    if r <= l || b <= t {
        return Err("the sequence has no pixels".into());
    }
    let (w, h) = ((r - l) as u64, (b - t) as u64);
    if w * h > gaf::MAX_FLAT_PIXELS {
        return Err(format!(
            "its frames span {w}×{h} pixels, more than {}",
            gaf::MAX_FLAT_PIXELS
        ));
    }
    let mut used = [false; 256];
    for (f, _) in &flats {
        for (&i, &o) in f.indices.iter().zip(&f.opaque) {
            used[usize::from(i)] |= o;
        }
    }
    let slot = seq
        .frames
        .iter()
        .map(|f| f.frame.key)
        .find(|k| !used[usize::from(*k)])
        .or_else(|| (0..=255u8).rev().find(|&i| !used[usize::from(i)]))
        .unwrap_or(0);
    Ok(Animation {
        width: w as u32,
        height: h as u32,
        slot,
        frames: flats,
        pen: (-l as i32, -t as i32),
    })
}

fn apply_mode(frame: &Frame, flat: &mut Flat, mode: Transparency) {
    let raw_simple = matches!(frame.content, Content::Pixels(_)) && !frame.is_compressed();
    match mode {
        Transparency::Game => {}
        Transparency::None => flat.opaque.iter_mut().for_each(|o| *o = true),
        Transparency::Index(n) => {
            for (o, &i) in flat.opaque.iter_mut().zip(&flat.indices) {
                *o = if raw_simple { i != n } else { *o && i != n };
            }
        }
        Transparency::Heuristic if raw_simple => {
            let px = &flat.indices;
            let key = frame.key;
            let eff = if px.contains(&key) || px.is_empty() {
                key
            } else {
                let w = flat.width as usize;
                let corners = [px[0], px[w - 1], px[px.len() - w], px[px.len() - 1]];
                if corners.iter().all(|&c| c == corners[0]) {
                    corners[0]
                } else {
                    key
                }
            };
            for (o, &i) in flat.opaque.iter_mut().zip(px) {
                *o = i != eff;
            }
        }
        Transparency::Heuristic => {}
    }
}

/// Writes an animation as an indexed APNG.
pub fn write_apng(
    out: &mut dyn Write,
    a: &Animation,
    pal: &Palette,
    loops: bool,
) -> Result<(), String> {
    let e = |e: png::EncodingError| format!("png: {e}");
    let mut enc = indexed_encoder(out, a.width, a.height, pal, Some(a.slot));
    enc.set_animated(a.len() as u32, if loops { 0 } else { 1 })
        .map_err(e)?;
    let mut w = enc.write_header().map_err(e)?;
    for i in 0..a.len() {
        w.set_frame_delay(a.ticks(i).min(u32::from(u16::MAX)) as u16, 30)
            .map_err(e)?;
        w.set_dispose_op(png::DisposeOp::Background).map_err(e)?;
        w.write_image_data(&a.canvas(i)).map_err(e)?;
    }
    w.finish().map_err(e)
}

// ---------------------------------------------------------------------------------------
// Build: files → GAF
// ---------------------------------------------------------------------------------------

/// How frames are stored when built.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Storage {
    /// As frames.csv says; frames without a value are compressed, except in textures/*.gaf
    /// and anims/vismasks.gaf, which are always raw.
    #[default]
    Auto,
    /// Every frame raw.
    Raw,
    /// Every frame RLE.
    Compressed,
}

/// Options of [`build`].
#[derive(Debug, Clone, Default)]
pub struct BuildOptions {
    /// Palette images are mapped to (must be the one the dump used for indexed PNGs to be
    /// copied as they are).
    pub palette: Palette,
    /// Storage policy.
    pub storage: Storage,
    /// Path of the GAF being built relative to the game folder (textures/*.gaf rule).
    pub asset_path: Option<String>,
    /// Frames equal (pixels and fields) to a frame of this GAF reuse its stored bytes.
    pub base: Option<Gaf>,
}

/// Result of [`build`]: the GAF and warnings (skipped folders).
#[derive(Debug)]
pub struct Built {
    /// The rebuilt GAF.
    pub gaf: Gaf,
    /// Non-fatal findings.
    pub warnings: Vec<String>,
}

/// True for paths the game reads as plain pixel arrays (frames must stay raw).
pub fn always_raw(asset_path: &str) -> bool {
    let p = asset_path.replace('\\', "/").to_ascii_lowercase();
    let in_textures = p.starts_with("textures/") || p.contains("/textures/");
    in_textures || p.ends_with("vismasks.gaf")
}

/// Rebuilds a GAF from a dump. Errors name the file and row/column; nothing is partially
/// built.
pub fn build(files: &dyn FileSet, opts: &BuildOptions) -> Result<Built, ViewError> {
    let meta: Metadata = match files.read("metadata.json")? {
        Some(b) => serde_json::from_slice(&b)
            .map_err(|e| ViewError::invalid("metadata.json", format!("not valid metadata: {e}")))?,
        None => Metadata {
            version: gaf::VERSION_STANDARD,
            ..Default::default()
        },
    };
    let trailing = unhex(&meta.trailing_hex)
        .ok_or_else(|| ViewError::invalid("metadata.json", "trailing_hex is not hex"))?;
    let mut warnings = Vec::new();
    let root = files.list("")?.unwrap_or_default();
    let order: HashMap<&str, usize> = meta
        .sequences
        .iter()
        .enumerate()
        .map(|(i, s)| (s.dir.as_str(), i))
        .collect();
    let mut seqs: Vec<(u64, usize, String, Sequence)> = Vec::new();
    for (dir, is_dir) in root {
        if !is_dir {
            continue;
        }
        let has_frames = files.read(&format!("{dir}/frames.csv"))?;
        let has_seq = files.read(&format!("{dir}/sequence.csv"))?;
        if has_frames.is_none() && has_seq.is_none() {
            warnings.push(format!("{dir}/: no frames.csv or sequence.csv; skipped"));
            continue;
        }
        let raw_name = meta
            .sequences
            .iter()
            .find(|s| s.dir == dir)
            .and_then(|s| unhex(&s.name_raw_hex))
            .and_then(|v| <[u8; 32]>::try_from(v).ok());
        let (index, seq) = build_sequence(files, &dir, has_seq, has_frames, raw_name, &meta, opts)?;
        let pos = order.get(dir.as_str()).copied().unwrap_or(usize::MAX);
        seqs.push((index.unwrap_or(u64::MAX), pos, dir, seq));
    }
    seqs.sort_by(|a, b| (a.0, a.1, &a.2).cmp(&(b.0, b.1, &b.2)));
    let dumped: Vec<&str> = meta.sequences.iter().map(|s| s.dir.as_str()).collect();
    let built_dirs: Vec<String> = seqs.iter().map(|s| s.2.clone()).collect();
    let built_dirs: Vec<&str> = built_dirs.iter().map(String::as_str).collect();
    let layout = super::gaf_layout::build_layout(
        meta.layout.as_ref(),
        opts.base.as_ref(),
        &dumped,
        &built_dirs,
    )?;
    let mut gaf = Gaf {
        version: meta.version,
        header_word8: meta.header_word8,
        sequences: seqs.into_iter().map(|s| s.3).collect(),
        trailing,
        warnings: vec![],
        layout,
    };
    if let Some(base) = &opts.base {
        super::gaf_layout::keep_base_indices(&mut gaf, base, &opts.palette);
        reuse_payloads(&mut gaf, base);
    }
    super::gaf_layout::apply_rle_rows(&mut gaf, meta.layout.as_ref(), &dumped, &built_dirs);
    Ok(Built { gaf, warnings })
}

struct CsvTable {
    file: String,
    headers: Vec<String>,
    rows: Vec<(u64, Vec<String>)>,
}

impl CsvTable {
    fn parse(file: &str, data: &[u8]) -> Result<CsvTable, ViewError> {
        let mut rd = csv::ReaderBuilder::new()
            .has_headers(true)
            .trim(csv::Trim::All)
            .from_reader(data);
        let headers: Vec<String> = rd
            .headers()
            .map_err(|e| csv_err(file, 1, "-", e.to_string()))?
            .iter()
            .map(|h| h.trim_start_matches('\u{feff}').to_ascii_lowercase())
            .collect();
        let mut rows = Vec::new();
        for rec in rd.records() {
            let rec = rec.map_err(|e| {
                let line = e.position().map(|p| p.line()).unwrap_or(0);
                csv_err(file, line, "-", e.to_string())
            })?;
            let line = rec.position().map(|p| p.line()).unwrap_or(0);
            if rec.iter().all(|f| f.is_empty()) {
                continue;
            }
            rows.push((line, rec.iter().map(str::to_string).collect()));
        }
        Ok(CsvTable {
            file: file.to_string(),
            headers,
            rows,
        })
    }

    fn require(&self, cols: &[&str]) -> Result<(), ViewError> {
        for c in cols {
            if !self.headers.iter().any(|h| h == c) {
                return Err(csv_err(
                    &self.file,
                    1,
                    c,
                    format!("missing column (expected {})", cols.join(",")),
                ));
            }
        }
        Ok(())
    }

    fn get<'r>(&self, row: &'r [String], col: &str) -> Option<&'r str> {
        let i = self.headers.iter().position(|h| h == col)?;
        row.get(i).map(String::as_str)
    }

    fn num<T: std::str::FromStr>(
        &self,
        line: u64,
        row: &[String],
        col: &str,
        what: &str,
    ) -> Result<T, ViewError> {
        let v = self.get(row, col).unwrap_or("");
        v.parse::<T>()
            .map_err(|_| csv_err(&self.file, line, col, format!("{v:?} is not {what}")))
    }

    fn opt_num<T: std::str::FromStr>(
        &self,
        line: u64,
        row: &[String],
        col: &str,
        what: &str,
    ) -> Result<Option<T>, ViewError> {
        match self.get(row, col) {
            None | Some("") => Ok(None),
            Some(_) => self.num(line, row, col, what).map(Some),
        }
    }
}

fn csv_err(file: &str, row: u64, column: &str, msg: String) -> ViewError {
    ViewError::Csv {
        file: file.to_string(),
        row,
        column: column.to_string(),
        msg,
    }
}

/// Header fields of one frames.csv / layers.csv row.
struct RowFields {
    line: u64,
    index: usize,
    width: u16,
    height: u16,
    origin_x: i16,
    origin_y: i16,
    key: u8,
    duration: u32,
    storage: Option<bool>,
    blend: u8,
}

fn row_fields(
    t: &CsvTable,
    line: u64,
    row: &[String],
    with_duration: bool,
) -> Result<RowFields, ViewError> {
    let first = if with_duration { "frame" } else { "layer" };
    let storage = match t
        .get(row, "storage")
        .unwrap_or("")
        .to_ascii_lowercase()
        .as_str()
    {
        "" => None,
        "raw" => Some(false),
        "compressed" | "rle" => Some(true),
        other => {
            return Err(csv_err(
                &t.file,
                line,
                "storage",
                format!("{other:?} is not raw or compressed"),
            ))
        }
    };
    Ok(RowFields {
        line,
        index: t.num(line, row, first, "a frame number")?,
        width: t.num(line, row, "width", "a width 0..65535")?,
        height: t.num(line, row, "height", "a height 0..65535")?,
        origin_x: t.num(line, row, "origin_x", "an origin -32768..32767")?,
        origin_y: t.num(line, row, "origin_y", "an origin -32768..32767")?,
        key: t.num(line, row, "transparency", "a palette index 0..255")?,
        duration: if with_duration {
            t.num(line, row, "duration_ticks", "a tick count 0..4294967295")?
        } else {
            0
        },
        storage,
        blend: t.opt_num(line, row, "blend", "a byte 0..255")?.unwrap_or(0),
    })
}

fn build_sequence(
    files: &dyn FileSet,
    dir: &str,
    seq_csv: Option<Vec<u8>>,
    frames_csv: Option<Vec<u8>>,
    raw_name: Option<[u8; 32]>,
    meta: &Metadata,
    opts: &BuildOptions,
) -> Result<(Option<u64>, Sequence), ViewError> {
    let mut index = None;
    let mut name: Vec<u8> = dir.as_bytes().to_vec();
    let (mut loop_word, mut word4) = (1u16, 0u32);
    if let Some(b) = seq_csv {
        let file = format!("{dir}/sequence.csv");
        let t = CsvTable::parse(&file, &b)?;
        t.require(&["name"])?;
        let (line, row) = t
            .rows
            .first()
            .ok_or_else(|| csv_err(&file, 2, "-", "no data row".into()))?;
        index = t.opt_num(*line, row, "index", "a sequence number")?;
        name = t.get(row, "name").unwrap_or("").as_bytes().to_vec();
        loop_word = t
            .opt_num(*line, row, "loop_flags", "a number 0..65535")?
            .unwrap_or(1);
        word4 = t
            .opt_num(*line, row, "unknown4", "a number 0..4294967295")?
            .unwrap_or(0);
    }
    let name_buf = match raw_name {
        // unchanged name: keep the raw bytes (garbage after the NUL too)
        Some(raw)
            if String::from_utf8_lossy(&raw[..raw.iter().position(|&b| b == 0).unwrap_or(32)])
                == String::from_utf8_lossy(&name) =>
        {
            raw
        }
        _ => Sequence::name_buffer(&name).ok_or_else(|| {
            csv_err(
                &format!("{dir}/sequence.csv"),
                2,
                "name",
                format!("name is {} bytes, at most 32", name.len()),
            )
        })?,
    };
    let file = format!("{dir}/frames.csv");
    let data = frames_csv.ok_or_else(|| ViewError::Missing {
        file: file.clone(),
        why: "a sequence folder needs its frame list".into(),
    })?;
    let rows = read_rows(&file, &data, true)?;
    let mut frames = Vec::with_capacity(rows.len());
    for rf in &rows {
        let key = format!("{dir}/{}", rf.index);
        let frame = build_frame(files, &key, &file, rf, meta, opts, 0)?;
        frames.push(FrameEntry {
            duration: rf.duration,
            frame,
        });
    }
    if frames.len() > usize::from(u16::MAX) {
        return Err(csv_err(
            &file,
            1,
            "frame",
            format!("{} frames, at most 65535", frames.len()),
        ));
    }
    Ok((
        index,
        Sequence {
            name: name_buf,
            loop_word,
            word4,
            frames,
        },
    ))
}

/// Reads a frames.csv (`frames` = true) or layers.csv: required columns, every row's fields,
/// numbering 0, 1, 2… in order.
fn read_rows(file: &str, data: &[u8], frames: bool) -> Result<Vec<RowFields>, ViewError> {
    let t = CsvTable::parse(file, data)?;
    let first = if frames { "frame" } else { "layer" };
    let mut cols = vec![
        first,
        "width",
        "height",
        "origin_x",
        "origin_y",
        "transparency",
    ];
    if frames {
        cols.push("duration_ticks");
    }
    t.require(&cols)?;
    let rows = t
        .rows
        .iter()
        .map(|(line, row)| row_fields(&t, *line, row, frames))
        .collect::<Result<Vec<_>, _>>()?;
    check_numbering(file, &rows)?;
    Ok(rows)
}

fn check_numbering(file: &str, rows: &[RowFields]) -> Result<(), ViewError> {
    for (i, r) in rows.iter().enumerate() {
        if r.index != i {
            return Err(csv_err(
                file,
                r.line,
                "frame",
                format!(
                    "frames must be numbered 0, 1, 2… in order; expected {i}, found {}",
                    r.index
                ),
            ));
        }
    }
    Ok(())
}

fn storage_for(rf: &RowFields, extras: Option<&FrameExtras>, opts: &BuildOptions) -> u8 {
    let compressed = match opts.storage {
        Storage::Raw => false,
        Storage::Compressed => true,
        Storage::Auto => rf
            .storage
            .unwrap_or_else(|| !opts.asset_path.as_deref().is_some_and(always_raw)),
    };
    if compressed {
        extras.and_then(|x| x.compressed_byte).unwrap_or(1)
    } else {
        0
    }
}

const MAX_BUILD_DEPTH: usize = 16;

fn build_frame(
    files: &dyn FileSet,
    key: &str,
    csv_file: &str,
    rf: &RowFields,
    meta: &Metadata,
    opts: &BuildOptions,
    depth: usize,
) -> Result<Frame, ViewError> {
    let extras = meta.frames.get(key);
    let compressed = storage_for(rf, extras, opts);
    let mut frame = Frame {
        width: rf.width,
        height: rf.height,
        origin_x: rf.origin_x,
        origin_y: rf.origin_y,
        key: rf.key,
        compressed,
        blend: rf.blend,
        word12: extras.map_or(0, |x| x.word12),
        word20: extras.map_or(0, |x| x.word20),
        content: Content::Pixels(Pixels {
            indices: vec![],
            opaque: vec![],
            payload: None,
        }),
    };
    // Layers first: a composite whose flattening still equals <n>.png stays a composite.
    let ldir = format!("{key}.layers");
    let layers = if files.list(&ldir)?.is_some() {
        if depth >= MAX_BUILD_DEPTH {
            return Err(ViewError::invalid(
                &ldir,
                format!("layers nested deeper than {MAX_BUILD_DEPTH}"),
            ));
        }
        let lfile = format!("{ldir}/layers.csv");
        let data = files.read(&lfile)?.ok_or_else(|| ViewError::Missing {
            file: lfile.clone(),
            why: "a .layers folder needs its layer list".into(),
        })?;
        let rows = read_rows(&lfile, &data, false)?;
        if rows.is_empty() || rows.len() > 255 {
            return Err(csv_err(
                &lfile,
                1,
                "layer",
                format!("{} layers; a composite holds 1 to 255", rows.len()),
            ));
        }
        let mut v = Vec::new();
        for lr in &rows {
            v.push(build_frame(
                files,
                &format!("{ldir}/{}", lr.index),
                &lfile,
                lr,
                meta,
                opts,
                depth + 1,
            )?);
        }
        Some(v)
    } else {
        None
    };
    let empty = rf.width == 0 || rf.height == 0;
    let mut png_name = format!("{key}.png");
    let image = if empty {
        None
    } else {
        let data = match files.read(&png_name)? {
            Some(d) => d,
            None => {
                let gif_name = format!("{key}.gif");
                match files.read(&gif_name)? {
                    Some(d) => {
                        png_name = gif_name;
                        d
                    }
                    None => {
                        return Err(ViewError::Missing {
                            file: png_name,
                            why: format!(
                                "{csv_file} row {} lists a {}×{} frame",
                                rf.line, rf.width, rf.height
                            ),
                        })
                    }
                }
            }
        };
        let img = if png_name.ends_with(".gif") {
            decode_gif(&data)
        } else {
            decode_png(&data)
        }
        .map_err(|m| ViewError::invalid(&png_name, m))?;
        if img.width != u32::from(rf.width) || img.height != u32::from(rf.height) {
            return Err(ViewError::invalid(
                &png_name,
                format!(
                    "image is {}×{} but {csv_file} row {} says {}×{}",
                    img.width, img.height, rf.line, rf.width, rf.height
                ),
            ));
        }
        let avoid = super::gaf_layout::avoid_for(compressed, rf.key);
        Some(to_indices(&img, &opts.palette, &avoid, rf.key))
    };
    if let Some(layers) = layers {
        let comp = extras.and_then(|x| x.composite);
        let mut c = frame.clone();
        if let Some(h) = comp {
            c.width = h.width;
            c.height = h.height;
            c.origin_x = h.origin_x;
            c.origin_y = h.origin_y;
        }
        c.content = Content::Layers(layers);
        let flat = c.flatten().ok_or_else(|| {
            ViewError::invalid(
                &ldir,
                format!("layers span more than {} pixels", gaf::MAX_FLAT_PIXELS),
            )
        })?;
        // <n>.png unchanged since the dump: the layers decide (they may have been edited).
        let png_unedited = match (&image, extras.map(|x| x.flat_fnv.as_str())) {
            (Some(img), Some(fp)) if !fp.is_empty() => {
                let opaque: Vec<bool> = img.transparent.iter().map(|t| !t).collect();
                image_fingerprint(img.width, img.height, &img.indices, &opaque) == fp
            }
            _ => false,
        };
        let same = png_unedited
            || match &image {
                None => flat.width == 0 || flat.height == 0,
                Some(img) => {
                    flat.width == img.width
                        && flat.height == img.height
                        && flat.origin_x == i32::from(rf.origin_x)
                        && flat.origin_y == i32::from(rf.origin_y)
                        && flat
                            .opaque
                            .iter()
                            .zip(&img.transparent)
                            .all(|(o, t)| *o != *t)
                        && flat
                            .indices
                            .iter()
                            .zip(&img.indices)
                            .zip(&flat.opaque)
                            .all(|((a, b), o)| !*o || a == b)
                }
            };
        if same {
            return Ok(c);
        }
    }
    let (indices, opaque) = match image {
        Some(img) => {
            let opaque: Vec<bool> = img.transparent.iter().map(|t| !t).collect();
            (img.indices, opaque)
        }
        None => (vec![], vec![]),
    };
    frame.content = Content::Pixels(Pixels {
        indices,
        opaque,
        payload: None,
    });
    Ok(frame)
}

/// Gives every frame that equals a frame of `base` (header fields and pixels) the stored bytes
/// of that frame, so unchanged frames are written exactly as they were.
pub fn reuse_payloads(gaf: &mut Gaf, base: &Gaf) {
    let mut index: HashMap<u64, Vec<&Frame>> = HashMap::new();
    fn collect<'a>(f: &'a Frame, index: &mut HashMap<u64, Vec<&'a Frame>>) {
        match &f.content {
            Content::Pixels(p) if p.payload.is_some() => {
                index.entry(frame_hash(f)).or_default().push(f);
            }
            Content::Pixels(_) => {}
            Content::Layers(l) => l.iter().for_each(|x| collect(x, index)),
        }
    }
    for s in &base.sequences {
        for fe in &s.frames {
            collect(&fe.frame, &mut index);
        }
    }
    fn apply(f: &mut Frame, index: &HashMap<u64, Vec<&Frame>>) {
        let h = frame_hash(f);
        match &mut f.content {
            Content::Layers(l) => l.iter_mut().for_each(|x| apply(x, index)),
            Content::Pixels(_) => {
                let found = index.get(&h).and_then(|cands| {
                    cands
                        .iter()
                        .find(|b| same_pixels_and_fields(b, f))
                        .and_then(|b| b.pixels())
                        .and_then(|p| p.payload.clone())
                });
                if let (Some(payload), Content::Pixels(p)) = (found, &mut f.content) {
                    p.payload = Some(payload);
                }
            }
        }
    }
    for s in &mut gaf.sequences {
        for fe in &mut s.frames {
            apply(&mut fe.frame, &index);
        }
    }
}

/// Equality of what a stored payload encodes: size, key, storage and drawn pixels.
fn same_pixels_and_fields(a: &Frame, b: &Frame) -> bool {
    let (Some(pa), Some(pb)) = (a.pixels(), b.pixels()) else {
        return false;
    };
    a.width == b.width
        && a.height == b.height
        && a.key == b.key
        && a.compressed == b.compressed
        && pa.opaque == pb.opaque
        && pa
            .indices
            .iter()
            .zip(&pb.indices)
            .zip(&pa.opaque)
            .all(|((x, y), o)| !*o || x == y)
        && (a.is_compressed() || pa.indices == pb.indices)
}

fn frame_hash(f: &Frame) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (f.width, f.height, f.key, f.compressed).hash(&mut h);
    if let Some(p) = f.pixels() {
        p.opaque.hash(&mut h);
        for (i, o) in p.indices.iter().zip(&p.opaque) {
            if *o {
                i.hash(&mut h);
            }
        }
    }
    h.finish()
}

/// Compares two GAFs as the game reads them: every header field, every drawn pixel, every
/// duration, name, loop word and the trailing bytes. Returns the first difference.
pub fn first_difference(a: &Gaf, b: &Gaf) -> Option<String> {
    if a.version != b.version || a.header_word8 != b.header_word8 {
        return Some("file header".into());
    }
    if a.sequences.len() != b.sequences.len() {
        return Some(format!(
            "{} vs {} sequences",
            a.sequences.len(),
            b.sequences.len()
        ));
    }
    for (i, (x, y)) in a.sequences.iter().zip(&b.sequences).enumerate() {
        if x.name != y.name || x.loop_word != y.loop_word || x.word4 != y.word4 {
            return Some(format!("sequence {i} header"));
        }
        if x.frames.len() != y.frames.len() {
            return Some(format!("sequence {i}: frame count"));
        }
        for (j, (f, g)) in x.frames.iter().zip(&y.frames).enumerate() {
            if f.duration != g.duration {
                return Some(format!("sequence {i} frame {j}: duration"));
            }
            if let Some(d) = frame_difference(&f.frame, &g.frame) {
                return Some(format!("sequence {i} frame {j}: {d}"));
            }
        }
    }
    if a.trailing != b.trailing {
        return Some("trailing bytes".into());
    }
    None
}

fn frame_difference(a: &Frame, b: &Frame) -> Option<String> {
    let fields = |f: &Frame| {
        (
            f.width,
            f.height,
            f.origin_x,
            f.origin_y,
            f.key,
            f.compressed,
            f.blend,
            f.word12,
            f.word20,
            f.layer_count(),
        )
    };
    if fields(a) != fields(b) {
        return Some("header fields".into());
    }
    match (&a.content, &b.content) {
        (Content::Layers(x), Content::Layers(y)) => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(k, (p, q))| frame_difference(p, q).map(|d| format!("layer {k}: {d}"))),
        (Content::Pixels(_), Content::Pixels(_)) => {
            (!same_pixels_and_fields(a, b)).then(|| "pixels".to_string())
        }
        _ => Some("structure".into()),
    }
}

/// Summary values for `tafs gaf list`.
pub fn sequence_summary(s: &Sequence) -> (usize, bool, u64) {
    let ticks = s
        .frames
        .iter()
        .map(|f| u64::from((f.duration & 0xFFFF).max(1)))
        .sum();
    (s.frames.len(), s.loops(), ticks)
}

/// metadata.json as a generic JSON value (used by tools that want to inspect it).
pub fn metadata_value(view: &GafView) -> Value {
    serde_json::from_slice(&view.metadata).unwrap_or(Value::Object(Map::new()))
}
