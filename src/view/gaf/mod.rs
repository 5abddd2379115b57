//! The dump view of a GAF ([`GafView`]: which files a GAF becomes) and its inverse,
//! [`build()`].
//!
//! ```text
//! metadata.json              what the CSVs cannot hold (version, order, raw names, trailing
//!                            bytes, header words, composite parents, palette, transparency)
//! <sequence>/sequence.csv    index,name,loop_flags,unknown4
//! <sequence>/frames.csv      frame,width,height,origin_x,origin_y,transparency,
//!                            duration_ticks,duration_sec,storage,blend (storage raw,
//!                            compressed, or argb4444 / argb1555 for truecolor .taf frames)
//! <sequence>/<n>.png         indexed PNG, one transparent slot (none for 0-size frames);
//!                            truecolor frames: RGBA PNG of the exactly expanded words
//! <sequence>/<n>.layers/     composite frames only: layers.csv + <k>.png (+ <k>.layers/)
//! <sequence>/animated.png    APNG preview (not read back; RGBA with the frames' alpha when
//!                            the sequence holds truecolor frames)
//! palette.gpl                GIMP palette of the palette the frames are drawn with (not
//!                            read back)
//! ```
//!
//! A composite frame's `<n>.png` is the flattened frame on the union box of its layers and
//! its frames.csv row describes that image (size and origin); the composite's own header
//! (`width`, `height`, `origin_x`, `origin_y`) is kept in metadata.json. Build keeps the
//! composite when `<n>.png` still equals the flattening of the (possibly edited) layers, and
//! makes it a simple frame from `<n>.png` otherwise.
//!
//! The parts: `meta` (metadata.json), `render` (frames laid out as files), `anim`
//! (animations and APNG), `build` (files → GAF), `reuse` (stored bytes of unchanged frames,
//! and where two GAFs differ), `layout` (the original block layout in metadata.json, the
//! colour rules of a rebuild).

mod anim;
mod build;
pub mod layout;
mod meta;
mod render;
mod reuse;
pub mod truecolor;

pub use anim::{animation, write_apng, Animation, Transparency};
pub use build::{always_raw, build, BuildOptions, Built, Storage};
pub use meta::{metadata_value, CompositeHeader, FrameExtras, Metadata, SequenceMeta};
pub use render::{image_fingerprint, transparent_slot};
pub use reuse::{first_difference, reuse_payloads, same_bytes};

use crate::formats::gaf::{self, Content, Frame, Gaf, Sequence};
use crate::formats::palette::Palette;
use crate::view::csv::hex;
use crate::view::{unique_names, Entry, View, ViewError, ViewOptions};
use render::{
    area, csv_bytes, frame_is_empty, frame_row, lay_out_frame, plain_name, sequence_bounds,
    write_flat_image, LayoutCtx,
};
use std::collections::HashMap;
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

/// Pixels of all flattened frames of one sequence above which it gets no `animated.png`
/// (drawing it holds them all at once).
pub const MAX_ANIMATION_PIXELS: u64 = gaf::MAX_FLAT_PIXELS;

/// Names at the top of a dump that sequence folders must not take.
pub(super) const RESERVED: &[&str] = &["metadata.json", PALETTE_GPL, ".tafs-status"];

/// The GIMP palette of the palette the frames are drawn with (generated only).
pub const PALETTE_GPL: &str = "palette.gpl";

/// What one file of the view shows.
#[derive(Debug, Clone)]
pub(super) enum Node {
    Metadata,
    PaletteGpl,
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
    palette_source: String,
    /// metadata.json without its layout's odd RLE rows, which take decoding and encoding
    /// every RLE frame: found when metadata.json is rendered (and not kept by the view: the
    /// rows of a Cavedog GAF, as hex, are several times its size).
    meta: Metadata,
    /// The composite frames and layers (key in `meta.frames`, sequence, path), whose
    /// flattened fingerprint metadata.json gives.
    composites: Vec<(String, usize, Vec<usize>)>,
    entries: Vec<Entry>,
    nodes: HashMap<String, Node>,
    format: crate::view::FrameFormat,
}

impl GafView {
    /// Reads `data` and lays out its files. The frames a sequence lists are kept as stored
    /// ([`gaf::parse_stored`]) and decoded when their image is rendered: a view of a GAF of
    /// many frames costs its headers, not its pixels. The stored bytes are copied once, as a
    /// whole, and the frames share that copy ([`gaf::parse_stored_shared`]): one allocation
    /// instead of one per frame (a 16 MB GAF of 1,000 frames took 3–20 ms to copy frame by
    /// frame into fresh memory).
    pub fn new(data: &[u8], opts: &ViewOptions) -> Result<GafView, ViewError> {
        let mut owned = crate::formats::bytes::zeroed(data.len());
        owned.copy_from_slice(data);
        GafView::from_shared(&owned.into(), opts)
    }

    /// [`GafView::new`] of bytes the view keeps: its frames slice `data`, no copy is made.
    pub fn from_shared(data: &gaf::Payload, opts: &ViewOptions) -> Result<GafView, ViewError> {
        let gaf = gaf::parse_stored_shared(data, &opts.limits)?;
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
        let mut composites = Vec::new();
        let mut nodes = HashMap::new();
        nodes.insert("metadata.json".to_string(), Node::Metadata);
        entries.push(Entry::file(PALETTE_GPL));
        nodes.insert(PALETTE_GPL.to_string(), Node::PaletteGpl);
        let mut meta = Metadata {
            kind: "gaf".into(),
            version: gaf.version,
            header_word8: gaf.header_word8,
            palette: opts.palette_source.clone(),
            palette_crc32: format!("{:08x}", opts.palette.crc32()),
            transparency: "game".into(),
            trailing_hex: hex(&gaf.trailing),
            layout: None,
            warnings: gaf.warnings.iter().map(|w| w.to_string()).collect(),
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
                    composites: &mut composites,
                };
                lay_out_frame(&fe.frame, &key, si, vec![fi], &mut cx, 0);
                any_pixels |= !frame_is_empty(&fe.frame);
            }
            // the preview holds every frame flattened at once: bounded like one canvas pair
            let flat_total: u64 = seq.frames.iter().map(|fe| area(fe.frame.bounds())).sum();
            if any_pixels
                && area(sequence_bounds(seq)) <= gaf::MAX_FLAT_PIXELS
                && flat_total <= MAX_ANIMATION_PIXELS
            {
                add(format!("{dir}/animated.png"), Node::Animated(si), false);
            }
        }
        Ok(GafView {
            gaf,
            palette: opts.palette.clone(),
            palette_source: opts.palette_source.clone(),
            meta,
            composites,
            entries,
            nodes,
            format: opts.frame_format,
        })
    }

    /// The bytes of metadata.json (the layout's rows looked at on rayon's pool).
    fn metadata(&self) -> Vec<u8> {
        let mut meta = self.meta.clone();
        for (key, si, path) in &self.composites {
            let flat = self.frame_at(*si, path).and_then(Frame::flatten);
            if let (Some(x), Some(flat)) = (meta.frames.get_mut(key), flat) {
                x.flat_fnv =
                    image_fingerprint(flat.width, flat.height, &flat.indices, &flat.opaque);
            }
        }
        meta.layout = layout::layout_meta(&self.gaf);
        serde_json::to_vec_pretty(&meta).unwrap_or_default()
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
                Content::Pixels(_) | Content::Truecolor(_) => return None,
            }
        }
        Some(f)
    }
}

impl View for GafView {
    fn entries(&self) -> &[Entry] {
        &self.entries
    }

    fn gaf_model(&self) -> Option<&Gaf> {
        Some(&self.gaf)
    }

    /// A frame PNG: its flattened canvas (index and opacity); the animation: every frame
    /// flattened plus one canvas.
    fn render_cost(&self, path: &str) -> u64 {
        match self.nodes.get(path) {
            Some(Node::FramePng(si, p)) => self
                .frame_at(*si, p)
                .map_or(0, |f| area(f.bounds()).saturating_mul(2)),
            Some(Node::Animated(si)) => self.gaf.sequences.get(*si).map_or(0, |s| {
                let flats: u64 = s.frames.iter().map(|fe| area(fe.frame.bounds())).sum();
                flats
                    .saturating_mul(2)
                    .saturating_add(area(sequence_bounds(s)))
            }),
            _ => 0,
        }
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
            Node::Metadata => out.write_all(&self.metadata()).map_err(io),
            Node::PaletteGpl => out
                .write_all(crate::view::pal::gpl(&self.palette, &self.palette_source).as_bytes())
                .map_err(io),
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
                if let (Content::Truecolor(words), Some(fmt)) = (&f.content, f.truecolor()) {
                    let rgba = truecolor::expand(fmt, words);
                    return truecolor::write_rgba_png(
                        out,
                        u32::from(f.width),
                        u32::from(f.height),
                        &rgba,
                    )
                    .map_err(|m| ViewError::invalid(path, m));
                }
                let flat = f
                    .flatten()
                    .ok_or_else(|| ViewError::invalid(path, "layers span too many pixels"))?;
                write_flat_image(out, &flat, f.key, &self.palette, self.format)
                    .map_err(|m| ViewError::invalid(path, m))
            }
            Node::Animated(si) => {
                let s = self.gaf.sequences.get(*si).ok_or_else(missing)?;
                if truecolor::sequence_has_truecolor(s) {
                    return truecolor::write_rgba_apng(out, s, &self.palette)
                        .map_err(|m| ViewError::invalid(path, m));
                }
                let anim =
                    animation(s, Transparency::Game).map_err(|m| ViewError::invalid(path, m))?;
                write_apng(out, &anim, &self.palette, s.loops())
                    .map_err(|m| ViewError::invalid(path, m))
            }
        }
    }
}

/// Rebuilds a GAF from `files` as [`crate::view::rebuild`] does (storage as frames.csv says,
/// the textures rule of `opts.asset_path`), starting from `base` (the current GAF as decoded,
/// frames as stored): the new bytes, and whether they are the base's when that is known
/// without its bytes ([`same_bytes`]).
pub fn rebuild(
    files: &dyn crate::view::FileSet,
    base: Option<&Gaf>,
    opts: &ViewOptions,
) -> Result<(Vec<u8>, Option<bool>), ViewError> {
    let built = build(
        files,
        &BuildOptions {
            palette: opts.palette.clone(),
            storage: Storage::Auto,
            asset_path: opts.asset_path.clone(),
            base,
        },
    )?;
    for w in &built.warnings {
        log::debug!("build: {w}");
    }
    let unchanged = base.and_then(|b| same_bytes(b, &built.gaf));
    let bytes = gaf::write(&built.gaf)?;
    Ok((bytes, unchanged))
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
