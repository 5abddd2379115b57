//! Frames laid out as the files of a dump: sequence bounds, frame PNG/GIF images with their
//! transparent slot, and the rows of frames.csv and layers.csv.

use crate::formats::gaf::{Content, Flat, Frame, Sequence};
use crate::formats::palette::Palette;
use crate::view::image::{write_indexed_gif, write_indexed_png};
use std::collections::BTreeMap;
use std::io::Write;

use super::meta::{CompositeHeader, FrameExtras};
use super::Node;

pub(super) fn area((l, t, r, b): (i32, i32, i32, i32)) -> u64 {
    let w = (i64::from(r) - i64::from(l)).max(0) as u64;
    let h = (i64::from(b) - i64::from(t)).max(0) as u64;
    w * h
}

/// Union of the frames' boxes around the pen (the animation canvas).
pub(super) fn sequence_bounds(s: &Sequence) -> (i32, i32, i32, i32) {
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

pub(super) fn frame_is_empty(f: &Frame) -> bool {
    let (l, t, r, b) = f.bounds();
    r <= l || b <= t
}

/// Adds the files of one frame (and, for composites, its layers) to the layout.
pub(super) struct LayoutCtx<'a> {
    pub(super) add: &'a mut dyn FnMut(String, Node, bool),
    pub(super) extras: &'a mut BTreeMap<String, FrameExtras>,
    pub(super) ext: &'a str,
    /// The composites whose `flat_fnv` metadata.json fills in: (key, sequence, path).
    pub(super) composites: &'a mut Vec<(String, usize, Vec<usize>)>,
}

pub(super) fn lay_out_frame(
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
        compressed_byte: (f.compressed > 1 && f.truecolor().is_none()).then_some(f.compressed),
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
        // (its fingerprint flattens it: taken when metadata.json is rendered)
        cx.composites.push((key.to_string(), si, path.clone()));
    }
    if x != FrameExtras::default() {
        cx.extras.insert(key.to_string(), x);
    }
    if !frame_is_empty(f) {
        // truecolor frames are RGBA PNGs whatever the dump's frame format
        let ext = if f.truecolor().is_some() {
            "png"
        } else {
            cx.ext
        };
        (cx.add)(
            format!("{key}.{ext}"),
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
pub(super) fn plain_name(raw: &[u8; 32]) -> bool {
    let end = raw.iter().position(|&b| b == 0).unwrap_or(32);
    raw[..end].iter().all(|b| (0x20..0x7f).contains(b)) && raw[end..].iter().all(|&b| b == 0)
}

pub(super) fn storage_name(f: &Frame) -> &'static str {
    if let Some(t) = f.truecolor() {
        t.name()
    } else if f.is_compressed() {
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

pub(super) fn write_flat_image(
    out: &mut dyn Write,
    flat: &Flat,
    key: u8,
    pal: &Palette,
    format: crate::view::FrameFormat,
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
        crate::view::FrameFormat::Png => {
            write_indexed_png(out, flat.width, flat.height, &px, pal, slot)
                .map_err(|e| e.to_string())
        }
        crate::view::FrameFormat::Gif => {
            write_indexed_gif(out, flat.width, flat.height, &px, pal, slot)
        }
    }
}

pub(super) fn csv_bytes(header: &[&str], rows: &[Vec<String>]) -> Vec<u8> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let _ = w.write_record(header);
    for r in rows {
        let _ = w.write_record(r);
    }
    w.into_inner().unwrap_or_default()
}

pub(super) fn frame_row(first: String, f: &Frame, durations: Option<u32>) -> Vec<String> {
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
