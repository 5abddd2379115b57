//! The unpack view of a TNT map ([`TntView`]: which files a map becomes, and how they are
//! rendered) and its inverse, [`pack()`].
//!
//! ```text
//! map.png         indexed PNG of the full tile mosaic (TA palette), streamed row by row
//! heightmap.png   8-bit grey, width × height attribute cells, pixel = raw height byte
//! minimap.png     indexed PNG of the embedded minimap (its stored size, e.g. 252×256)
//! tiles/<n>.png   indexed 32×32 per stored tile
//! tilemap.csv     tile index per 32×32 cell; no header; one line per row (rows = y)
//! features.csv    feature_index,name,attr_x,attr_y: one line per placement
//! metadata.json   header constants, the feature table, non-placement feature words
//!                 (void 0xFFFC, 0xFFFD/0xFFFE…), and by default the lossless data: raw
//!                 name buffers, attribute pad bytes, block offsets and every byte outside
//!                 the blocks (hex)
//! ```
//!
//! [`pack()`] reads those files back. Unedited, it gives the original bytes. `map.png` is
//! compared (as palette colours) with the checksum of the mosaic it was written from; when it
//! differs it is re-tiled: a 32×32 cell equal to the tile already there or to any stored tile
//! reuses it, other cells become new tiles, and the minimap is rebuilt from the new image
//! (unless `minimap.png` was edited too).
//!
//! The parts: `meta` (metadata.json), `pack` (files → map), `inputs` (reading the files),
//! `retile` (an edited map.png, the minimap rebuild), [`lint`] (rules over a decoded map),
//! [`preview`] (the map drawn with its features and start positions).

mod inputs;
pub mod lint;
mod meta;
mod pack;
pub mod preview;
mod retile;
pub mod tools;

pub use meta::{Checksums, FeatureMeta, FillerMeta, LayoutMeta, Metadata};
pub use pack::{
    image_checksum, pack, pack_from, pack_with_report, PackBase, PackOptions, PackReport,
};
pub use retile::{canon_table, rebuild_minimap};

use crate::formats::palette::Palette;
use crate::formats::tnt::TILE_SIDE;
use crate::formats::tnt::{self, Tnt, FEATURE_NONE, FIRST_SENTINEL};
use crate::view::banded_png::{self, BandIndex, Reuse};
use crate::view::csv::hex;
use crate::view::image::{indexed_encoder, write_gray_png, write_indexed_png};
use crate::view::{lock, Entry, View, ViewError, ViewOptions};
use meta::runs;
use retile::{canon_crc, combined, map_bands, unchanged_rows};
use std::io::Write;
use std::sync::{Arc, Mutex, Weak};

/// `format` value of metadata.json.
pub const FORMAT: &str = "tafs-tnt-unpack";
pub(super) const MAP_PNG: &str = "map.png";
pub(super) const HEIGHT_PNG: &str = "heightmap.png";
pub(super) const MINI_PNG: &str = "minimap.png";
pub(super) const TILEMAP_CSV: &str = "tilemap.csv";
pub(super) const FEATURES_CSV: &str = "features.csv";
pub(super) const METADATA: &str = "metadata.json";
/// Header line of features.csv.
pub const FEATURES_HEADER: &str = "feature_index,name,attr_x,attr_y";

/// The exploded view of one TNT map.
pub struct TntView {
    tnt: Tnt,
    palette: Palette,
    palette_source: String,
    clean: bool,
    entries: Vec<Entry>,
    /// The mosaic's checksum by bands of tile rows, once computed (it reads every pixel of
    /// the map) or taken over from the version before ([`TntView::inherit`]).
    map_bands: std::sync::OnceLock<Vec<crc32fast::Hasher>>,
    /// CRC-32 of `tilemap.csv`, once rendered or taken over.
    tilemap_crc: std::sync::OnceLock<u32>,
    /// `metadata.json`, once rendered.
    metadata_json: std::sync::OnceLock<Vec<u8>>,
    /// Where the bands of `map.png` lie in its bytes, once rendered.
    map_index: std::sync::OnceLock<Arc<BandIndex>>,
    /// The bytes of `map.png` as the caller keeps them ([`View::keep_rendering`]), without
    /// holding them: the next version copies its unchanged bands from them.
    map_png: Mutex<Weak<Vec<u8>>>,
    /// From the version before ([`TntView::inherit`]): its `map.png`, its bands, and which
    /// of them this map shares; taken (and let go) by the first rendering.
    map_seed: Mutex<Option<MapSeed>>,
}

/// The version before's `map.png`, for the first rendering of this one's.
struct MapSeed {
    png: Arc<Vec<u8>>,
    index: Arc<BandIndex>,
    keep: Vec<bool>,
}

impl TntView {
    /// Decodes `data` and lays out its files (lossless form).
    pub fn new(data: &[u8], opts: &ViewOptions) -> Result<TntView, ViewError> {
        TntView::with_form(data, opts, false)
    }

    /// Like [`TntView::new`]; `clean` leaves the lossless data out of metadata.json (raw name
    /// buffers, attribute pad bytes, block layout and filler): pack then writes clean tables
    /// and the canonical layout.
    pub fn with_form(data: &[u8], opts: &ViewOptions, clean: bool) -> Result<TntView, ViewError> {
        let tnt = tnt::parse(data, &opts.limits)?;
        Ok(TntView::from_tnt(tnt, opts, clean))
    }

    /// The view of an already decoded map.
    pub fn from_tnt(tnt: Tnt, opts: &ViewOptions, clean: bool) -> TntView {
        let mut entries = Vec::new();
        if tnt.pixel_width() > 0 && tnt.pixel_height() > 0 {
            entries.push(Entry::file(MAP_PNG));
        }
        if tnt.width > 0 && tnt.height > 0 {
            entries.push(Entry::file(HEIGHT_PNG));
        }
        if tnt.minimap.width > 0 && tnt.minimap.height > 0 {
            entries.push(Entry::file(MINI_PNG));
        }
        entries.push(Entry::file(TILEMAP_CSV));
        entries.push(Entry::file(FEATURES_CSV));
        entries.push(Entry::file(METADATA));
        entries.push(Entry::dir("tiles"));
        for i in 0..tnt.tile_count() {
            entries.push(Entry::file(format!("tiles/{i}.png")));
        }
        TntView {
            tnt,
            palette: opts.palette.clone(),
            palette_source: opts.palette_source.clone(),
            clean,
            entries,
            map_bands: std::sync::OnceLock::new(),
            tilemap_crc: std::sync::OnceLock::new(),
            metadata_json: std::sync::OnceLock::new(),
            map_index: std::sync::OnceLock::new(),
            map_png: Mutex::new(Weak::new()),
            map_seed: Mutex::new(None),
        }
    }

    /// Takes over what `old` (the view of the version before, in the same palette) computed
    /// and this map shares: the mosaic checksum of every band of tile rows whose cells and
    /// tiles are unchanged (a one-tile edit hashes one band again, not the map), and the CRC
    /// of `tilemap.csv` when the grids are equal, and for `map.png`, when the caller still
    /// keeps `old`'s ([`View::keep_rendering`]), those bytes (held until this view's is first
    /// rendered, [`TntView::seed_bytes`]) with the bands to copy from them: those whose tile
    /// row and the row above are unchanged. What is not taken is computed when needed, as
    /// without `old`; what is taken gives the same bytes.
    pub fn inherit(&self, old: &TntView) {
        if self.palette != old.palette {
            return;
        }
        // map.png: bands whose tile row and the one above are unchanged (a band's first row
        // is filtered against the row above it)
        let png = lock(&old.map_png).upgrade();
        if let (Some(png), Some(index)) = (png, old.map_index.get()) {
            if let Some(rows) = unchanged_rows(&self.tnt, &old.tnt) {
                let keep = (0..rows.len())
                    .map(|r| rows[r] && (r == 0 || rows[r - 1]))
                    .collect();
                *lock(&self.map_seed) = Some(MapSeed {
                    png,
                    index: index.clone(),
                    keep,
                });
            }
        }
        if let Some(bands) = old.map_bands.get() {
            let canon = canon_table(&self.palette);
            let _ = self
                .map_bands
                .set(map_bands(&self.tnt, &canon, Some((&old.tnt, bands))));
        }
        let (a, b) = (&self.tnt, &old.tnt);
        if (a.tiles_x(), a.tiles_y()) == (b.tiles_x(), b.tiles_y()) && a.tilemap == b.tilemap {
            if let Some(&crc) = old.tilemap_crc.get() {
                let _ = self.tilemap_crc.set(crc);
            }
        }
    }

    /// Bytes of the version before's `map.png` this view holds until its own is first
    /// rendered (see [`TntView::inherit`]); 0 when none.
    pub fn seed_bytes(&self) -> u64 {
        lock(&self.map_seed)
            .as_ref()
            .map_or(0, |s| s.png.len() as u64)
    }

    /// CRC-32 of the file `tilemap.csv` (rendered once per view, or taken over).
    pub fn tilemap_crc(&self) -> u32 {
        *self.tilemap_crc.get_or_init(|| {
            let mut v = Vec::new();
            let _ = self.render_tilemap(&mut v);
            crc32fast::hash(&v)
        })
    }

    fn render_tilemap(&self, out: &mut dyn Write) -> std::io::Result<()> {
        let t = &self.tnt;
        let tx = t.tiles_x();
        let mut s = String::with_capacity(t.tilemap.len() * 4);
        for y in 0..t.tiles_y() {
            let row = t.tilemap.get(y * tx..(y + 1) * tx).unwrap_or_default();
            for (x, v) in row.iter().enumerate() {
                if x > 0 {
                    s.push(',');
                }
                s.push_str(&v.to_string());
            }
            s.push('\n');
        }
        out.write_all(s.as_bytes())
    }

    /// The decoded map.
    pub fn tnt(&self) -> &Tnt {
        &self.tnt
    }

    fn render_map(&self, out: &mut dyn Write) -> Result<(), ViewError> {
        let t = &self.tnt;
        let (w, h) = (t.pixel_width(), t.pixel_height());
        let err = |e| png_err(MAP_PNG, e, w, h);
        if !banded_png::available() || w == 0 || h == 0 || w > u32::MAX as usize {
            return write_map_png(out, t, &self.palette).map_err(err);
        }
        let seed = lock(&self.map_seed).take();
        let reuse = seed.as_ref().map(|s| Reuse {
            png: &s.png,
            index: &s.index,
            keep: &s.keep,
        });
        if let Some(s) = &seed {
            let kept = s.keep.iter().filter(|&&k| k).count();
            log::debug!("map.png: {kept} of {} bands copied", s.keep.len());
        }
        let row = |y: usize, buf: &mut [u8]| t.render_row(y, buf);
        let shape = banded_png::Shape {
            width: w as u32,
            height: h as u32,
            band_rows: TILE_SIDE as u32,
        };
        let index =
            banded_png::write_banded(out, shape, &self.palette, None, &row, reuse).map_err(err)?;
        let _ = self.map_index.set(Arc::new(index));
        Ok(())
    }

    /// The metadata.json document.
    pub fn metadata(&self) -> Metadata {
        let t = &self.tnt;
        let clean = self.clean;
        let w = t.width.max(1) as usize;
        let words: Vec<u16> = t
            .attrs
            .iter()
            .map(|a| {
                let keep = !t.places_feature(a.feature)
                    && a.feature != FEATURE_NONE
                    && (!clean || a.feature >= FIRST_SENTINEL);
                if keep {
                    a.feature
                } else {
                    FEATURE_NONE
                }
            })
            .collect();
        let pads: Vec<u16> = t.attrs.iter().map(|a| u16::from(a.pad)).collect();
        let canon = canon_table(&self.palette);
        Metadata {
            format: FORMAT.to_string(),
            source_version: t.source_version,
            width: t.width,
            height: t.height,
            tiles_x: t.tiles_x() as u32,
            tiles_y: t.tiles_y() as u32,
            tile_count: t.tile_count() as u32,
            sea_level: t.sea_level,
            minimap_flags: t.minimap_flags,
            pads: t.pads,
            minimap_width: t.minimap.width,
            minimap_height: t.minimap.height,
            palette: self.palette_source.clone(),
            palette_rgb: (self.palette != Palette::ta()).then(|| hex(&self.palette.rgb_bytes())),
            features: (!clean).then(|| {
                t.features
                    .iter()
                    .map(|f| FeatureMeta {
                        index: f.index,
                        name: f.name_str(),
                        // The exact buffer when the name alone cannot rebuild it.
                        raw: (!f.is_clean() || std::str::from_utf8(f.name_bytes()).is_err())
                            .then(|| hex(&f.name)),
                    })
                    .collect()
            }),
            feature_words: runs(&words, w, FEATURE_NONE),
            attr_pads: if clean { vec![] } else { runs(&pads, w, 0) },
            layout: if clean {
                None
            } else {
                t.layout.as_ref().map(LayoutMeta::from)
            },
            checksums: Checksums {
                map: combined(self.map_bands.get_or_init(|| map_bands(t, &canon, None))),
                minimap: canon_crc(&t.minimap.pixels, &canon),
            },
        }
    }
}

impl View for TntView {
    fn entries(&self) -> &[Entry] {
        &self.entries
    }

    fn tnt_model(&self) -> Option<PackBase<'_>> {
        Some(PackBase {
            tnt: &self.tnt,
            palette: &self.palette,
        })
    }

    fn tnt_view(&self) -> Option<&TntView> {
        Some(self)
    }

    fn keep_rendering(&self, path: &str, bytes: &Arc<Vec<u8>>) {
        if path == MAP_PNG {
            *lock(&self.map_png) = Arc::downgrade(bytes);
        }
    }

    fn render(&self, path: &str, out: &mut dyn Write) -> Result<(), ViewError> {
        let t = &self.tnt;
        let io = |e: std::io::Error| ViewError::Io {
            path: path.to_string(),
            source: e,
        };
        match path {
            MAP_PNG => self.render_map(out),
            HEIGHT_PNG => {
                let heights: Vec<u8> = t.attrs.iter().map(|a| a.height).collect();
                write_gray_png(out, t.width, t.height, &heights)
                    .map_err(|e| png_err(path, e, t.width as usize, t.height as usize))
            }
            MINI_PNG => {
                let m = &t.minimap;
                write_indexed_png(out, m.width, m.height, &m.pixels, &self.palette, None)
                    .map_err(|e| png_err(path, e, m.width as usize, m.height as usize))
            }
            TILEMAP_CSV => self.render_tilemap(out).map_err(io),
            FEATURES_CSV => {
                let mut w = csv::WriterBuilder::new()
                    .terminator(csv::Terminator::Any(b'\n'))
                    .from_writer(Vec::new());
                let rec = |w: &mut csv::Writer<Vec<u8>>, r: [&str; 4]| {
                    w.write_record(r)
                        .map_err(|e| ViewError::invalid(path, e.to_string()))
                };
                rec(&mut w, ["feature_index", "name", "attr_x", "attr_y"])?;
                for (f, x, y) in t.placements() {
                    let name = t.features[usize::from(f)].name_str();
                    rec(
                        &mut w,
                        [&f.to_string(), &name, &x.to_string(), &y.to_string()],
                    )?;
                }
                let bytes = w
                    .into_inner()
                    .map_err(|e| ViewError::invalid(path, e.to_string()))?;
                out.write_all(&bytes).map_err(io)
            }
            METADATA => {
                let bytes = match self.metadata_json.get() {
                    Some(b) => b,
                    None => {
                        let mut s = serde_json::to_string_pretty(&self.metadata())
                            .map_err(|e| ViewError::invalid(path, e.to_string()))?;
                        s.push('\n');
                        self.metadata_json.get_or_init(|| s.into_bytes())
                    }
                };
                out.write_all(bytes).map_err(io)
            }
            _ => {
                let tile = path
                    .strip_prefix("tiles/")
                    .and_then(|r| r.strip_suffix(".png"))
                    .filter(|n| !n.starts_with('0') || *n == "0")
                    .and_then(|n| n.parse::<usize>().ok())
                    .and_then(|n| t.tile(n))
                    .ok_or_else(|| ViewError::NotFound(path.to_string()))?;
                write_indexed_png(out, 32, 32, tile, &self.palette, None)
                    .map_err(|e| png_err(path, e, 32, 32))
            }
        }
    }
}

pub(super) fn png_err(file: &str, e: png::EncodingError, w: usize, h: usize) -> ViewError {
    match e {
        png::EncodingError::IoError(source) => ViewError::Io {
            path: file.to_string(),
            source,
        },
        e => ViewError::invalid(file, format!("cannot encode {w}×{h} PNG: {e}")),
    }
}

/// Streams the full mosaic of `t` as an indexed PNG, one pixel row at a time.
pub fn write_map_png(
    out: &mut dyn Write,
    t: &Tnt,
    palette: &Palette,
) -> Result<(), png::EncodingError> {
    let (w, h) = (t.pixel_width(), t.pixel_height());
    let enc = indexed_encoder(out, w as u32, h as u32, palette, None);
    let mut writer = enc.write_header()?;
    let mut stream = writer.stream_writer_with_size(w.clamp(1, 1 << 20))?;
    let mut row = vec![0u8; w];
    for y in 0..h {
        t.render_row(y, &mut row);
        stream.write_all(&row)?;
    }
    stream.finish()?;
    writer.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The view of `t` in `opts`.
    fn view(t: &Tnt, opts: &ViewOptions) -> TntView {
        TntView::new(&tnt::write(t).unwrap(), opts).unwrap()
    }

    #[test]
    fn map_png_copies_the_bands_an_edit_did_not_touch() {
        let opts = ViewOptions::default();
        let old_map = crate::sample::demo_map();
        let (tx, ty) = (old_map.tiles_x(), old_map.tiles_y());
        assert!(ty >= 4, "{ty} tile rows");
        let old = view(&old_map, &opts);
        let png = old.render_vec(MAP_PNG).unwrap();
        // a copy whose band data is all wrong: what is copied from it shows
        let first = png.windows(4).position(|w| w == b"IDAT").unwrap();
        let mut bad = png.clone();
        let end = bad.len() - 40;
        bad[first + 20..end].iter_mut().for_each(|b| *b ^= 0xA5);
        // one cell of tile row 2 changes: bands 2 and 3 (filtered against row 2) are new
        let mut t = old_map.clone();
        let c = 2 * tx + 1;
        t.tilemap[c] = if t.tilemap[c] == 0 { 1 } else { 0 };
        let fresh = view(&t, &opts).render_vec(MAP_PNG).unwrap();
        assert_ne!(fresh, png);
        for (source, copies) in [(&png, true), (&bad, false)] {
            let kept = Arc::new(source.clone());
            old.keep_rendering(MAP_PNG, &kept);
            let new = view(&t, &opts);
            new.inherit(&old);
            let got = new.render_vec(MAP_PNG).unwrap();
            assert_eq!(got == fresh, copies, "copied from the {copies} bytes");
            // taken by the first rendering only: the next is the fresh encoding
            assert_eq!(new.render_vec(MAP_PNG).unwrap(), fresh);
        }
        // the bytes are held from the hand-over to the first rendering, and let go then
        let kept = Arc::new(png.clone());
        old.keep_rendering(MAP_PNG, &kept);
        let new = view(&t, &opts);
        new.inherit(&old);
        assert_eq!(new.seed_bytes(), png.len() as u64);
        drop(kept);
        assert_eq!(new.render_vec(MAP_PNG).unwrap(), fresh);
        assert_eq!(new.seed_bytes(), 0);
        // the cache dropped the bytes before the hand-over: nothing to copy from, still right
        let kept = Arc::new(bad.clone());
        old.keep_rendering(MAP_PNG, &kept);
        drop(kept);
        let new = view(&t, &opts);
        new.inherit(&old);
        assert_eq!(new.seed_bytes(), 0);
        assert_eq!(new.render_vec(MAP_PNG).unwrap(), fresh);
        // the same map again: every band is copied
        let kept = Arc::new(png.clone());
        old.keep_rendering(MAP_PNG, &kept);
        let same = view(&old_map, &opts);
        same.inherit(&old);
        assert_eq!(same.render_vec(MAP_PNG).unwrap(), png);
    }

    #[test]
    fn a_view_taking_over_from_the_version_before_renders_what_a_fresh_one_does() {
        let opts = ViewOptions::default();
        let old_map = crate::sample::demo_map();
        let old = view(&old_map, &opts);
        // what a commit's old version has computed
        old.render_vec(METADATA).unwrap();
        assert_eq!(
            old.tilemap_crc(),
            crc32fast::hash(&old.render_vec(TILEMAP_CSV).unwrap())
        );
        let mut edits = Vec::new();
        let mut t = old_map.clone();
        t.tiles[40] ^= 3; // a pixel of tile 0
        edits.push(t);
        let mut t = old_map.clone();
        t.tilemap[1] = t.tilemap[0]; // a cell
        edits.push(t);
        edits.push(old_map.clone());
        for t in &edits {
            let new = view(t, &opts);
            new.inherit(&old);
            let fresh = view(t, &opts);
            assert_eq!(
                new.render_vec(METADATA).unwrap(),
                fresh.render_vec(METADATA).unwrap()
            );
            assert_eq!(
                new.tilemap_crc(),
                crc32fast::hash(&fresh.render_vec(TILEMAP_CSV).unwrap())
            );
        }
        // the map's own checksum moved with the tile edit
        let a: serde_json::Value =
            serde_json::from_slice(&old.render_vec(METADATA).unwrap()).unwrap();
        let b = view(&edits[0], &opts);
        b.inherit(&old);
        let b: serde_json::Value =
            serde_json::from_slice(&b.render_vec(METADATA).unwrap()).unwrap();
        assert_ne!(a["checksums"]["map"], b["checksums"]["map"]);
        // another palette: nothing is taken over, and the result is still right
        let mut other = ViewOptions::default();
        other.palette.colors[5] = other.palette.colors[0];
        let new = view(&edits[0], &other);
        new.inherit(&old);
        assert_eq!(
            new.render_vec(METADATA).unwrap(),
            view(&edits[0], &other).render_vec(METADATA).unwrap()
        );
    }
}
