//! The unpack view of a TNT map and its inverse, [`pack`].
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
//! [`pack`] reads those files back. Unedited, it gives the original bytes. `map.png` is
//! compared (as palette colours) with the checksum of the mosaic it was written from; when it
//! differs it is re-tiled: a 32×32 cell equal to the tile already there or to any stored tile
//! reuses it, other cells become new tiles, and the minimap is rebuilt from the new image
//! (unless `minimap.png` was edited too).

use super::image::{decode_png, indexed_encoder, to_indices, write_gray_png, write_indexed_png};
use super::{Entry, FileSet, View, ViewError, ViewOptions};
use crate::formats::palette::{NearestCache, Palette, MINIMAP_PAD};
use crate::formats::tnt::{
    self, Attr, Block, FeatureEntry, Filler, Layout, Minimap, Tnt, FEATURE_NONE, FIRST_SENTINEL,
    MAX_TILES, NAME_LEN, TILE_BYTES, TILE_SIDE, VERSION_LEGACY, VERSION_TA,
};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::io::Write;

/// `format` value of metadata.json.
pub const FORMAT: &str = "tafs-tnt-unpack";
const MAP_PNG: &str = "map.png";
const HEIGHT_PNG: &str = "heightmap.png";
const MINI_PNG: &str = "minimap.png";
const TILEMAP_CSV: &str = "tilemap.csv";
const FEATURES_CSV: &str = "features.csv";
const METADATA: &str = "metadata.json";
/// Header line of features.csv.
pub const FEATURES_HEADER: &str = "feature_index,name,attr_x,attr_y";

/// The options a map's view is built with, by the CLI and the mount alike: maps are drawn in
/// the game's main palette, `palettes/PALETTE.PAL` of `game_dir` (any letter case) when it
/// reads, else the built-in TA palette. (Not the asset-name palette chain of GAFs: a `.pcx`
/// beside a map is its loading-screen picture, not its palette.)
pub fn map_view_options(
    game_dir: Option<&std::path::Path>,
    asset_path: Option<String>,
) -> ViewOptions {
    let found = game_dir
        .and_then(|g| super::palette::find_dir_ci(g, "palettes"))
        .and_then(|d| super::palette::find_ci(&d, "palette.pal"))
        .and_then(|p| {
            let pal = Palette::from_pal(&std::fs::read(&p).ok()?).ok()?;
            let name = p.file_name()?.to_string_lossy().to_string();
            Some((pal, format!("palettes/{name}")))
        });
    let (palette, palette_source) =
        found.unwrap_or_else(|| (Palette::ta(), super::palette::BUILTIN.to_string()));
    ViewOptions {
        palette,
        palette_source,
        asset_path,
        ..ViewOptions::default()
    }
}

/// The exploded view of one TNT map.
pub struct TntView {
    tnt: Tnt,
    palette: Palette,
    palette_source: String,
    clean: bool,
    entries: Vec<Entry>,
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
        }
    }

    /// The decoded map.
    pub fn tnt(&self) -> &Tnt {
        &self.tnt
    }

    fn render_map(&self, out: &mut dyn Write) -> Result<(), ViewError> {
        let t = &self.tnt;
        let (w, h) = (t.pixel_width(), t.pixel_height());
        write_map_png(out, t, &self.palette).map_err(|e| png_err(MAP_PNG, e, w, h))
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
                map: map_checksum(t, &canon),
                minimap: canon_crc(&t.minimap.pixels, &canon),
            },
        }
    }
}

impl View for TntView {
    fn entries(&self) -> &[Entry] {
        &self.entries
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
            TILEMAP_CSV => {
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
                out.write_all(s.as_bytes()).map_err(io)
            }
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
                let mut s = serde_json::to_string_pretty(&self.metadata())
                    .map_err(|e| ViewError::invalid(path, e.to_string()))?;
                s.push('\n');
                out.write_all(s.as_bytes()).map_err(io)
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

fn png_err(file: &str, e: png::EncodingError, w: usize, h: usize) -> ViewError {
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

/// metadata.json.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Metadata {
    /// Always [`FORMAT`].
    pub format: String,
    /// IDVersion of the file unpacked (8192 = 0x2000; 4128 = 0x1020, packed as 0x2000).
    pub source_version: u32,
    /// Width in 16-pixel attribute cells.
    pub width: u32,
    /// Height in 16-pixel attribute cells.
    pub height: u32,
    /// Tiles per row (informative).
    pub tiles_x: u32,
    /// Tile rows (informative).
    pub tiles_y: u32,
    /// Stored tiles when unpacked (informative: pack counts tiles/).
    pub tile_count: u32,
    /// Heights below this are under water.
    pub sea_level: u32,
    /// Header word 0x2C (bit 0: the game reads the stored minimap).
    pub minimap_flags: u32,
    /// Header words 0x30..0x40.
    pub pads: [u32; 4],
    /// Minimap width (used when minimap.png is absent).
    pub minimap_width: u32,
    /// Minimap height.
    pub minimap_height: u32,
    /// Palette the PNGs were written with.
    pub palette: String,
    /// That palette (768 bytes R,G,B in hex) when it is not the built-in TA palette; pack
    /// reads the PNGs with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub palette_rgb: Option<String>,
    /// The feature table in file order (absent in the clean form: rebuilt from the names of
    /// features.csv in order of first use).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub features: Option<Vec<FeatureMeta>>,
    /// Cells whose feature word places nothing and is not 0xFFFF: runs of `[x, y, count,
    /// word]` (row-major; 65532 = 0xFFFC void).
    #[serde(default)]
    pub feature_words: Vec<[u32; 4]>,
    /// Non-zero attribute pad bytes: runs of `[x, y, count, byte]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attr_pads: Vec<[u32; 4]>,
    /// Where the blocks sat and the bytes between them (lossless form of a 0x2000 map).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<LayoutMeta>,
    /// CRC-32 of the images as written, to tell edited files from unedited ones.
    pub checksums: Checksums,
}

/// One feature-table entry in metadata.json.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FeatureMeta {
    /// Stored index word.
    pub index: u32,
    /// Name (text before the NUL).
    pub name: String,
    /// The raw 128-byte buffer in hex, when bytes follow the NUL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<String>,
}

/// Block offsets and filler of the unpacked file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LayoutMeta {
    /// `[offset, length]` of the tile grid.
    pub map_data: [u64; 2],
    /// `[offset, length]` of the attribute grid.
    pub attrs: [u64; 2],
    /// `[offset, length]` of the tile graphics.
    pub tile_gfx: [u64; 2],
    /// `[offset, length]` of the feature table.
    pub feature_names: [u64; 2],
    /// `[offset, length]` of the minimap.
    pub minimap: [u64; 2],
    /// File length.
    pub file_len: u64,
    /// Bytes outside the header and the blocks (map-data padding, gaps, trailing bytes).
    #[serde(default)]
    pub filler: Vec<FillerMeta>,
}

/// Bytes outside the blocks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FillerMeta {
    /// Absolute offset.
    pub offset: u64,
    /// The bytes in hex.
    pub hex: String,
}

/// Checksums of the written images.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checksums {
    /// CRC-32 of map.png's pixels (palette indices folded to the first index of equal colour).
    pub map: u32,
    /// The same for minimap.png.
    pub minimap: u32,
}

impl From<&Layout> for LayoutMeta {
    fn from(l: &Layout) -> LayoutMeta {
        let b = |b: Block| [u64::from(b.offset), b.len];
        LayoutMeta {
            map_data: b(l.map_data),
            attrs: b(l.attrs),
            tile_gfx: b(l.tile_gfx),
            feature_names: b(l.feature_names),
            minimap: b(l.minimap),
            file_len: l.file_len,
            filler: l
                .filler
                .iter()
                .map(|f| FillerMeta {
                    offset: f.offset,
                    hex: hex(&f.bytes),
                })
                .collect(),
        }
    }
}

impl LayoutMeta {
    fn to_layout(&self) -> Result<Layout, ViewError> {
        let b = |what: &str, v: [u64; 2]| -> Result<Block, ViewError> {
            let offset = u32::try_from(v[0]).map_err(|_| {
                ViewError::invalid(
                    METADATA,
                    format!("layout.{what}: offset {} too large", v[0]),
                )
            })?;
            Ok(Block { offset, len: v[1] })
        };
        let mut filler = Vec::with_capacity(self.filler.len());
        for (i, f) in self.filler.iter().enumerate() {
            let bytes = unhex(&f.hex).ok_or_else(|| {
                ViewError::invalid(METADATA, format!("layout.filler[{i}].hex: not hex"))
            })?;
            if f.offset.saturating_add(bytes.len() as u64) > self.file_len {
                return Err(ViewError::invalid(
                    METADATA,
                    format!("layout.filler[{i}] passes layout.file_len"),
                ));
            }
            filler.push(Filler {
                offset: f.offset,
                bytes,
            });
        }
        // A parsed file is exactly header + blocks + filler: nothing else can be implied.
        let covered = [
            self.map_data,
            self.attrs,
            self.tile_gfx,
            self.feature_names,
            self.minimap,
        ]
        .iter()
        .map(|b| b[1])
        .chain(filler.iter().map(|f| f.bytes.len() as u64))
        .fold(tnt::HEADER_LEN, u64::saturating_add);
        if self.file_len > covered.min(u64::from(u32::MAX)) {
            return Err(ViewError::invalid(
                METADATA,
                format!(
                    "layout.file_len {} is more than the header, blocks and filler ({covered})",
                    self.file_len
                ),
            ));
        }
        Ok(Layout {
            map_data: b("map_data", self.map_data)?,
            attrs: b("attrs", self.attrs)?,
            tile_gfx: b("tile_gfx", self.tile_gfx)?,
            feature_names: b("feature_names", self.feature_names)?,
            minimap: b("minimap", self.minimap)?,
            file_len: self.file_len,
            filler,
        })
    }
}

/// Runs of equal values other than `skip`, as `[x, y, count, value]` (row-major, may wrap rows).
fn runs(values: &[u16], width: usize, skip: u16) -> Vec<[u32; 4]> {
    let mut out: Vec<[u32; 4]> = Vec::new();
    let mut prev: Option<(usize, u16)> = None;
    for (i, &v) in values.iter().enumerate() {
        if v == skip {
            prev = None;
            continue;
        }
        match (prev, out.last_mut()) {
            (Some((p, pv)), Some(last)) if p + 1 == i && pv == v => last[2] += 1,
            _ => out.push([(i % width) as u32, (i / width) as u32, 1, u32::from(v)]),
        }
        prev = Some((i, v));
    }
    out
}

fn hex(b: &[u8]) -> String {
    const D: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(b.len() * 2);
    for &x in b {
        s.push(char::from(D[usize::from(x >> 4)]));
        s.push(char::from(D[usize::from(x & 15)]));
    }
    s
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    let s = s.as_bytes();
    if s.len() % 2 != 0 {
        return None;
    }
    let nib = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    s.chunks_exact(2)
        .map(|p| Some(nib(p[0])? << 4 | nib(p[1])?))
        .collect()
}

/// For every palette index, the first index holding the same colour.
pub fn canon_table(p: &Palette) -> [u8; 256] {
    let mut t = [0u8; 256];
    for (i, c) in p.colors.iter().enumerate() {
        t[i] = p.colors.iter().position(|x| x == c).unwrap_or(i) as u8;
    }
    t
}

fn canon_crc(px: &[u8], canon: &[u8; 256]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    let mut buf = Vec::with_capacity(px.len().min(1 << 16));
    for chunk in px.chunks(1 << 16) {
        buf.clear();
        buf.extend(chunk.iter().map(|&i| canon[usize::from(i)]));
        h.update(&buf);
    }
    h.finalize()
}

/// CRC-32 of the mosaic's pixels, row-major, folded through `canon`.
fn map_checksum(t: &Tnt, canon: &[u8; 256]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    let mut row = vec![0u8; t.pixel_width()];
    for y in 0..t.pixel_height() {
        t.render_row(y, &mut row);
        row.iter_mut().for_each(|i| *i = canon[usize::from(*i)]);
        h.update(&row);
    }
    h.finalize()
}

/// What [`pack`] did besides writing the map.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PackReport {
    /// map.png differed from the mosaic it was unpacked as and was re-tiled.
    pub map_retiled: bool,
    /// Tiles added by re-tiling.
    pub new_tiles: usize,
    /// Tiles dropped by `prune`.
    pub pruned_tiles: usize,
    /// The minimap was rebuilt from the new map image.
    pub minimap_rebuilt: bool,
}

/// Options of [`pack`]. The palette is not an option: the PNGs are read with the palette
/// metadata.json names (`palette_rgb`, else the built-in TA palette), the one they were
/// written with.
#[derive(Debug, Clone, Default)]
pub struct PackOptions {
    /// Drop tiles no cell uses (renumbering the rest).
    pub prune: bool,
    /// Budgets.
    pub limits: crate::formats::Limits,
}

fn csv_err(file: &str, row: u64, column: impl Into<String>, msg: impl Into<String>) -> ViewError {
    ViewError::Csv {
        file: file.to_string(),
        row,
        column: column.into(),
        msg: msg.into(),
    }
}

fn need(files: &dyn FileSet, path: &str, why: &str) -> Result<Vec<u8>, ViewError> {
    files.read(path)?.ok_or_else(|| ViewError::Missing {
        file: path.to_string(),
        why: why.to_string(),
    })
}

/// Rebuilds the map from an unpacked directory (see the module docs). Nothing is written:
/// the caller stores the returned bytes.
pub fn pack(files: &dyn FileSet, opts: &PackOptions) -> Result<Vec<u8>, ViewError> {
    pack_with_report(files, opts).map(|(b, _)| b)
}

/// [`pack`], also saying what was re-tiled, pruned and rebuilt.
pub fn pack_with_report(
    files: &dyn FileSet,
    opts: &PackOptions,
) -> Result<(Vec<u8>, PackReport), ViewError> {
    let limits = &opts.limits;
    let mut report = PackReport::default();

    let meta_bytes = need(files, METADATA, "the map's header constants")?;
    let meta: Metadata = serde_json::from_slice(&meta_bytes)
        .map_err(|e| ViewError::invalid(METADATA, e.to_string()))?;
    let own_palette = match &meta.palette_rgb {
        Some(h) => {
            let rgb = unhex(h)
                .filter(|b| b.len() == 768)
                .ok_or_else(|| ViewError::invalid(METADATA, "palette_rgb: not 768 bytes of hex"))?;
            let mut colors = [[0u8; 3]; 256];
            for (c, v) in colors.iter_mut().zip(rgb.chunks_exact(3)) {
                c.copy_from_slice(v);
            }
            Some(Palette { colors })
        }
        None => None,
    };
    let ta = Palette::ta();
    let palette = own_palette.as_ref().unwrap_or(&ta);
    let canon = canon_table(palette);
    if meta.format != FORMAT {
        return Err(ViewError::invalid(
            METADATA,
            format!("format is {:?}, expected {FORMAT:?}", meta.format),
        ));
    }
    let (width, height) = (meta.width, meta.height);
    let cells = u64::from(width) * u64::from(height);
    if cells > limits.max_map_cells
        || width % 2 != 0
        || height % 2 != 0
        || cells == 0
        || width.max(height) > tnt::MAX_SIDE
    {
        return Err(ViewError::invalid(
            METADATA,
            format!(
                "width {width} × height {height}: need even, non-zero dimensions within {} cells",
                limits.max_map_cells
            ),
        ));
    }
    let (tx, ty) = ((width / 2) as usize, (height / 2) as usize);
    let cells = cells as usize;

    // Tiles.
    let mut tiles = read_tiles(files, palette, limits.max_tiles.min(MAX_TILES))?;

    // Tile grid.
    let tilemap_bytes = need(files, TILEMAP_CSV, "the tile grid")?;
    let mut tilemap = parse_tilemap(&tilemap_bytes, tx, ty)?;

    // Heights.
    let heights = match files.read(HEIGHT_PNG)? {
        Some(b) => read_heightmap(&b, width, height)?,
        None => {
            return Err(ViewError::Missing {
                file: HEIGHT_PNG.to_string(),
                why: "the elevation grid".to_string(),
            })
        }
    };

    // Minimap.
    let (mut minimap, minimap_edited) = match files.read(MINI_PNG)? {
        Some(b) => {
            let d = decode_png(&b).map_err(|e| ViewError::invalid(MINI_PNG, e))?;
            let img = to_indices(&d, palette, &[], MINIMAP_PAD);
            let crc = canon_crc(&img.indices, &canon);
            (
                Minimap {
                    width: img.width,
                    height: img.height,
                    pixels: img.indices,
                },
                crc != meta.checksums.minimap,
            )
        }
        None => {
            let n = u64::from(meta.minimap_width) * u64::from(meta.minimap_height);
            if n > 0 {
                return Err(ViewError::Missing {
                    file: MINI_PNG.to_string(),
                    why: format!("{}×{} minimap", meta.minimap_width, meta.minimap_height),
                });
            }
            let m = Minimap {
                width: meta.minimap_width,
                height: meta.minimap_height,
                pixels: vec![],
            };
            (m, false)
        }
    };

    // map.png: unedited, or re-tiled.
    if let Some(png_bytes) = files.read(MAP_PNG)? {
        let (pw, ph) = (tx * TILE_SIDE, ty * TILE_SIDE);
        let mut h = crc32fast::Hasher::new();
        let mut canon_row = Vec::new();
        let dims = stream_png_rows(&png_bytes, MAP_PNG, palette, |_, row| {
            canon_row.clear();
            canon_row.extend(row.iter().map(|&i| canon[usize::from(i)]));
            h.update(&canon_row);
            Ok(())
        })?;
        if dims != (pw as u32, ph as u32) {
            return Err(ViewError::invalid(
                MAP_PNG,
                format!(
                    "is {}×{} pixels; the map is {pw}×{ph} ({tx}×{ty} tiles of 32×32)",
                    dims.0, dims.1
                ),
            ));
        }
        if h.finalize() != meta.checksums.map {
            report.map_retiled = true;
            let before = tiles.len() / TILE_BYTES;
            let mut acc = MinimapAccumulator::new(width, height, &minimap);
            retile(
                &png_bytes,
                palette,
                &canon,
                tx,
                &mut tiles,
                &mut tilemap,
                &mut acc,
                limits.max_tiles.min(MAX_TILES),
            )?;
            report.new_tiles = tiles.len() / TILE_BYTES - before;
            if !minimap_edited {
                minimap.pixels = acc.finish(palette);
                report.minimap_rebuilt = true;
            }
        }
    }

    // Tile indices must name stored tiles. A missing one is reported as a missing file (a
    // copy of the tree may not have brought it yet: the mount then waits for it).
    let ntiles = tiles.len() / TILE_BYTES;
    if let Some(i) = tilemap.iter().position(|&c| usize::from(c) >= ntiles) {
        return Err(ViewError::Missing {
            file: format!("tiles/{}.png", tilemap[i]),
            why: format!(
                "{TILEMAP_CSV} row {}, column {} uses tile {}; tiles/ holds {ntiles} tiles",
                i / tx + 1,
                i % tx + 1,
                tilemap[i]
            ),
        });
    }
    if opts.prune {
        report.pruned_tiles = prune(&mut tiles, &mut tilemap);
    }

    // Features.
    let feats_bytes = need(files, FEATURES_CSV, "the feature placements")?;
    let placements = parse_features(&feats_bytes, width, height)?;
    let mut table: Vec<FeatureEntry> = Vec::new();
    if let Some(fm) = &meta.features {
        for (i, f) in fm.iter().enumerate() {
            table.push(feature_entry(i, f)?);
        }
    }
    let mut words = vec![FEATURE_NONE; cells];
    for r in &meta.feature_words {
        fill_runs(&mut words, r, width, "feature_words", |v| {
            u16::try_from(v).ok()
        })?;
    }
    let fixed_words = words.clone();
    let mut placed = vec![false; cells];
    for p in &placements {
        let idx = resolve_feature(&mut table, p)?;
        let cell = p.y as usize * width as usize + p.x as usize;
        if placed[cell] {
            return Err(csv_err(
                FEATURES_CSV,
                p.row,
                "attr_x",
                format!("a second feature at cell ({}, {})", p.x, p.y),
            ));
        }
        placed[cell] = true;
        words[cell] = idx;
    }
    if table.len() > limits.max_features.min(usize::from(FIRST_SENTINEL) - 1) {
        return Err(ViewError::invalid(
            FEATURES_CSV,
            format!(
                "{} distinct features; a map holds fewer than 65,531",
                table.len()
            ),
        ));
    }
    // A kept non-placement word must not turn into a placement of a grown table.
    for (i, w) in words.iter_mut().enumerate() {
        if !placed[i] && usize::from(fixed_words[i]) < table.len() {
            *w = FEATURE_NONE;
        }
    }
    let mut pads = vec![0u8; cells];
    for r in &meta.attr_pads {
        fill_runs(&mut pads, r, width, "attr_pads", |v| u8::try_from(v).ok())?;
    }
    let attrs = heights
        .iter()
        .zip(&words)
        .zip(&pads)
        .map(|((&height, &feature), &pad)| Attr {
            height,
            feature,
            pad,
        })
        .collect();

    let layout = match (&meta.layout, meta.source_version) {
        (Some(l), VERSION_TA) => Some(l.to_layout()?),
        _ => None,
    };
    if meta.source_version != VERSION_TA && meta.source_version != VERSION_LEGACY {
        return Err(ViewError::invalid(
            METADATA,
            format!(
                "source_version {:#x} is not a TA map version",
                meta.source_version
            ),
        ));
    }
    let t = Tnt {
        source_version: meta.source_version,
        width,
        height,
        sea_level: meta.sea_level,
        minimap_flags: meta.minimap_flags,
        pads: meta.pads,
        tilemap,
        attrs,
        tiles,
        features: table,
        minimap,
        layout,
    };
    Ok((tnt::write(&t)?, report))
}

fn feature_entry(i: usize, f: &FeatureMeta) -> Result<FeatureEntry, ViewError> {
    let bad = |m: String| ViewError::invalid(METADATA, format!("features[{i}]: {m}"));
    match &f.raw {
        Some(raw) => {
            let b = unhex(raw).ok_or_else(|| bad("raw is not hex".into()))?;
            let name: [u8; NAME_LEN] = b
                .try_into()
                .map_err(|_| bad("raw must be 128 bytes (256 hex digits)".into()))?;
            let e = FeatureEntry {
                index: f.index,
                name,
            };
            // The name is what features.csv refers to: an edited name replaces the buffer.
            if e.name_str() == f.name {
                Ok(e)
            } else {
                FeatureEntry::new(f.index, f.name.as_bytes()).ok_or_else(|| {
                    bad(format!("name {:?} is not 1..127 bytes without NUL", f.name))
                })
            }
        }
        None => FeatureEntry::new(f.index, f.name.as_bytes()).ok_or_else(|| {
            bad(format!(
                "name {:?} is 128 bytes or more, or has a NUL",
                f.name
            ))
        }),
    }
}

fn fill_runs<T: Copy>(
    out: &mut [T],
    r: &[u32; 4],
    width: u32,
    what: &str,
    conv: impl Fn(u32) -> Option<T>,
) -> Result<(), ViewError> {
    let [x, y, n, v] = *r;
    let bad = |m: &str| ViewError::invalid(METADATA, format!("{what} run {r:?}: {m}"));
    let v = conv(v).ok_or_else(|| bad("value out of range"))?;
    if x >= width {
        return Err(bad("x past the map width"));
    }
    let start = u64::from(y) * u64::from(width) + u64::from(x);
    let end = start + u64::from(n);
    if end > out.len() as u64 {
        return Err(bad("passes the end of the map"));
    }
    out[start as usize..end as usize].fill(v);
    Ok(())
}

struct Placement {
    row: u64,
    index: Option<u16>,
    name: String,
    x: u32,
    y: u32,
}

fn parse_features(data: &[u8], width: u32, height: u32) -> Result<Vec<Placement>, ViewError> {
    let mut rd = csv::ReaderBuilder::new()
        .has_headers(true)
        .trim(csv::Trim::Fields)
        .flexible(true)
        .from_reader(data);
    let headers = rd
        .headers()
        .map_err(|e| csv_err(FEATURES_CSV, 1, "-", e.to_string()))?
        .clone();
    let want = ["feature_index", "name", "attr_x", "attr_y"];
    if headers.len() != 4
        || headers
            .iter()
            .zip(want)
            .any(|(a, b)| !a.eq_ignore_ascii_case(b))
    {
        return Err(csv_err(
            FEATURES_CSV,
            1,
            "-",
            format!("header must be {FEATURES_HEADER}"),
        ));
    }
    let mut out = Vec::new();
    for rec in rd.records() {
        let rec = rec.map_err(|e| {
            let row = e.position().map_or(0, |p| p.line());
            csv_err(FEATURES_CSV, row, "-", e.to_string())
        })?;
        let row = rec.position().map_or(0, |p| p.line());
        if rec.iter().all(|f| f.is_empty()) {
            continue;
        }
        if rec.len() != 4 {
            return Err(csv_err(
                FEATURES_CSV,
                row,
                "-",
                format!("{} fields, expected 4 ({FEATURES_HEADER})", rec.len()),
            ));
        }
        let num = |col: usize, name: &str, max: u32| -> Result<u32, ViewError> {
            let s = &rec[col];
            let v: u32 = s
                .parse()
                .map_err(|_| csv_err(FEATURES_CSV, row, name, format!("{s:?} is not a number")))?;
            if v >= max {
                return Err(csv_err(
                    FEATURES_CSV,
                    row,
                    name,
                    format!("{v} is outside the map (0..{max})"),
                ));
            }
            Ok(v)
        };
        let index = match &rec[0] {
            "" => None,
            s => Some(s.parse::<u16>().map_err(|_| {
                csv_err(
                    FEATURES_CSV,
                    row,
                    "feature_index",
                    format!("{s:?} is not a feature index"),
                )
            })?),
        };
        let name = rec[1].to_string();
        if name.is_empty() && index.is_none() {
            return Err(csv_err(
                FEATURES_CSV,
                row,
                "name",
                "needs a name or an index",
            ));
        }
        out.push(Placement {
            row,
            index,
            name,
            x: num(2, "attr_x", width)?,
            y: num(3, "attr_y", height)?,
        });
    }
    Ok(out)
}

/// The table index for a placement: its `feature_index` when that entry has its name, else
/// the first entry of that name, else a new entry.
fn resolve_feature(table: &mut Vec<FeatureEntry>, p: &Placement) -> Result<u16, ViewError> {
    if let Some(i) = p.index {
        if let Some(e) = table.get(usize::from(i)) {
            if p.name.is_empty() || e.name_str() == p.name {
                return Ok(i);
            }
        }
    }
    if let Some(i) = table.iter().position(|e| e.name_str() == p.name) {
        return Ok(i as u16);
    }
    if p.name.is_empty() {
        return Err(csv_err(
            FEATURES_CSV,
            p.row,
            "feature_index",
            "no such feature and no name to add it by",
        ));
    }
    let n = table.len();
    if n + 1 >= usize::from(FIRST_SENTINEL) {
        return Err(csv_err(
            FEATURES_CSV,
            p.row,
            "name",
            "too many distinct features",
        ));
    }
    let e = FeatureEntry::new(n as u32, p.name.as_bytes()).ok_or_else(|| {
        csv_err(
            FEATURES_CSV,
            p.row,
            "name",
            format!("{:?} is longer than 127 bytes", p.name),
        )
    })?;
    table.push(e);
    Ok(n as u16)
}

fn parse_tilemap(data: &[u8], tx: usize, ty: usize) -> Result<Vec<u16>, ViewError> {
    let text = std::str::from_utf8(data)
        .map_err(|e| ViewError::invalid(TILEMAP_CSV, format!("not UTF-8 text: {e}")))?;
    let mut out = Vec::with_capacity(tx * ty);
    let mut rows = 0usize;
    for (n, line) in text.lines().enumerate() {
        let row = (n + 1) as u64;
        let line = line.trim();
        if line.is_empty() && (tx > 0 || rows >= ty) {
            continue;
        }
        rows += 1;
        if rows > ty {
            return Err(csv_err(
                TILEMAP_CSV,
                row,
                "-",
                format!("more than {ty} rows"),
            ));
        }
        let mut cols = 0usize;
        for (c, field) in line.split(',').enumerate() {
            if tx == 0 {
                break;
            }
            let field = field.trim();
            let v: u16 = field.parse().map_err(|_| {
                csv_err(
                    TILEMAP_CSV,
                    row,
                    (c + 1).to_string(),
                    format!("{field:?} is not a tile index (0..65535)"),
                )
            })?;
            cols += 1;
            if cols > tx {
                return Err(csv_err(
                    TILEMAP_CSV,
                    row,
                    (c + 1).to_string(),
                    format!("more than {tx} columns"),
                ));
            }
            out.push(v);
        }
        if cols != tx {
            return Err(csv_err(
                TILEMAP_CSV,
                row,
                (cols + 1).to_string(),
                format!("{cols} columns, expected {tx}"),
            ));
        }
    }
    if rows != ty {
        return Err(csv_err(
            TILEMAP_CSV,
            rows as u64 + 1,
            "-",
            format!("{rows} rows, expected {ty}"),
        ));
    }
    Ok(out)
}

fn read_heightmap(data: &[u8], width: u32, height: u32) -> Result<Vec<u8>, ViewError> {
    let d = decode_png(data).map_err(|e| ViewError::invalid(HEIGHT_PNG, e))?;
    if (d.width, d.height) != (width, height) {
        return Err(ViewError::invalid(
            HEIGHT_PNG,
            format!(
                "is {}×{}; the attribute grid is {width}×{height}",
                d.width, d.height
            ),
        ));
    }
    match d.pixels {
        super::image::PngPixels::Gray(g) => Ok(g),
        super::image::PngPixels::Rgba(px) => px
            .chunks_exact(4)
            .enumerate()
            .map(|(i, p)| {
                if p[0] == p[1] && p[1] == p[2] {
                    Ok(p[0])
                } else {
                    Err(ViewError::invalid(
                        HEIGHT_PNG,
                        format!(
                            "pixel ({}, {}) is not grey ({}, {}, {}); heights are grey levels",
                            i % width as usize,
                            i / width as usize,
                            p[0],
                            p[1],
                            p[2]
                        ),
                    ))
                }
            })
            .collect(),
        super::image::PngPixels::Indexed { .. } => Err(ViewError::invalid(
            HEIGHT_PNG,
            "is an indexed PNG; save it as 8-bit greyscale",
        )),
    }
}

fn read_tiles(files: &dyn FileSet, palette: &Palette, max: usize) -> Result<Vec<u8>, ViewError> {
    use rayon::prelude::*;
    let list = files.list("tiles")?.unwrap_or_default();
    let mut numbers = Vec::new();
    for (name, is_dir) in &list {
        if *is_dir || name.starts_with('.') || !name.to_ascii_lowercase().ends_with(".png") {
            continue;
        }
        let stem = &name[..name.len() - 4];
        let n = stem
            .parse::<usize>()
            .ok()
            .filter(|_| stem.bytes().all(|b| b.is_ascii_digit()))
            .ok_or_else(|| {
                ViewError::invalid(
                    format!("tiles/{name}"),
                    "tile files are named <n>.png with n = 0, 1, 2, …",
                )
            })?;
        numbers.push((n, name.clone()));
    }
    numbers.sort();
    if numbers.len() > max {
        return Err(ViewError::invalid(
            "tiles",
            format!("{} tiles, over the limit of {max}", numbers.len()),
        ));
    }
    for (i, (n, name)) in numbers.iter().enumerate() {
        if *n != i {
            let file = format!("tiles/{i}.png");
            return Err(if *n > i {
                ViewError::Missing {
                    file,
                    why: format!("tiles are numbered without gaps; found tiles/{name}"),
                }
            } else {
                ViewError::invalid(format!("tiles/{name}"), "duplicate tile number")
            });
        }
    }
    let mut raw = Vec::with_capacity(numbers.len());
    for (_, name) in &numbers {
        let path = format!("tiles/{name}");
        let b = need(files, &path, "listed in tiles/")?;
        raw.push((path, b));
    }
    let decoded: Vec<Vec<u8>> = raw
        .par_iter()
        .map(|(path, b)| {
            let d = decode_png(b).map_err(|e| ViewError::invalid(path.as_str(), e))?;
            if (d.width, d.height) != (32, 32) {
                return Err(ViewError::invalid(
                    path.as_str(),
                    format!("is {}×{}; tiles are 32×32", d.width, d.height),
                ));
            }
            Ok(to_indices(&d, palette, &[], 0).indices)
        })
        .collect::<Result<_, _>>()?;
    Ok(decoded.concat())
}

/// Decodes a PNG row by row (whole-image decode for interlaced files), handing each row as
/// palette indices of `palette` to `f`. Returns the image size.
fn stream_png_rows(
    data: &[u8],
    file: &str,
    palette: &Palette,
    mut f: impl FnMut(usize, &[u8]) -> Result<(), ViewError>,
) -> Result<(u32, u32), ViewError> {
    let bad = |e: String| ViewError::invalid(file, e);
    let limits = png::Limits {
        bytes: super::image::MAX_DECODED_BYTES,
    };
    let probe = png::Decoder::new_with_limits(std::io::Cursor::new(data), limits)
        .read_info()
        .map_err(|e| bad(format!("not a readable PNG: {e}")))?;
    let info = probe.info();
    let (w, h) = (info.width, info.height);
    let indexed8 =
        info.color_type == png::ColorType::Indexed && info.bit_depth == png::BitDepth::Eight;
    let plte = info.palette.as_deref().unwrap_or_default().to_vec();
    let interlaced = info.interlaced;
    drop(probe);
    if interlaced {
        let d = decode_png(data).map_err(bad)?;
        let img = to_indices(&d, palette, &[], 0);
        for (y, row) in img.indices.chunks(w.max(1) as usize).enumerate() {
            f(y, row)?;
        }
        return Ok((w, h));
    }
    let mut dec = png::Decoder::new_with_limits(std::io::Cursor::new(data), limits);
    if indexed8 {
        dec.set_transformations(png::Transformations::IDENTITY);
    } else {
        dec.set_transformations(
            png::Transformations::normalize_to_color8() | png::Transformations::ALPHA,
        );
    }
    let mut reader = dec
        .read_info()
        .map_err(|e| bad(format!("not a readable PNG: {e}")))?;
    let (ct, _) = reader.output_color_type();
    let same = plte.len() <= 768
        && plte
            .chunks_exact(3)
            .zip(palette.colors.iter())
            .all(|(a, b)| a == b);
    let mut lut = [0u8; 256];
    if indexed8 && !same {
        let mut cache = NearestCache::new(palette, &[]);
        for (i, l) in lut.iter_mut().enumerate() {
            let c = plte
                .get(i * 3..i * 3 + 3)
                .map_or([0, 0, 0], |c| [c[0], c[1], c[2]]);
            *l = cache.get(c);
        }
    }
    let mut cache = NearestCache::new(palette, &[]);
    let mut out = vec![0u8; w as usize];
    let mut y = 0usize;
    while let Some(row) = reader
        .next_row()
        .map_err(|e| bad(format!("corrupt PNG data at row {y}: {e}")))?
    {
        let data = row.data();
        match (indexed8, ct) {
            (true, _) if same => out.copy_from_slice(&data[..w as usize]),
            (true, _) => {
                for (o, &i) in out.iter_mut().zip(data) {
                    *o = lut[usize::from(i)];
                }
            }
            (false, png::ColorType::Rgba) => {
                for (o, p) in out.iter_mut().zip(data.chunks_exact(4)) {
                    *o = cache.get([p[0], p[1], p[2]]);
                }
            }
            (false, png::ColorType::GrayscaleAlpha) => {
                for (o, p) in out.iter_mut().zip(data.chunks_exact(2)) {
                    *o = cache.get([p[0], p[0], p[0]]);
                }
            }
            (false, other) => return Err(bad(format!("unsupported PNG colour layout {other:?}"))),
        }
        f(y, &out)?;
        y += 1;
    }
    Ok((w, h))
}

/// Rebuilds the minimap pixels of `t` (same size as its current minimap) from its tiles by
/// the game's visible-region rule: each region pixel is the palette entry nearest (never
/// 0x64) to the average colour of the map pixels it covers; the rest is 0x64.
pub fn rebuild_minimap(t: &Tnt, palette: &Palette) -> Vec<u8> {
    let mut acc = MinimapAccumulator::new(t.width, t.height, &t.minimap);
    let mut row = vec![0u8; t.pixel_width()];
    for y in 0..t.pixel_height() {
        t.render_row(y, &mut row);
        acc.add_row(y, &row, palette);
    }
    acc.finish(palette)
}

/// Sums map colours per minimap pixel of the visible region.
struct MinimapAccumulator {
    mw: u32,
    mh: u32,
    rw: u32,
    rh: u32,
    vw: u64,
    vh: u64,
    sums: Vec<[u64; 4]>,
}

impl MinimapAccumulator {
    fn new(width: u32, height: u32, m: &Minimap) -> Self {
        let (rw, rh) = tnt::minimap_region(width, height, m.width, m.height);
        let (vw, vh) = tnt::visible_size(width, height);
        MinimapAccumulator {
            mw: m.width,
            mh: m.height,
            rw,
            rh,
            vw,
            vh,
            sums: vec![[0; 4]; (rw as usize) * (rh as usize)],
        }
    }

    fn add_row(&mut self, y: usize, row: &[u8], palette: &Palette) {
        if self.rw == 0 || self.rh == 0 || y as u64 >= self.vh {
            return;
        }
        let my = (y as u64 * u64::from(self.rh) / self.vh) as usize;
        let base = my * self.rw as usize;
        for (x, &i) in row.iter().enumerate().take(self.vw as usize) {
            let mx = (x as u64 * u64::from(self.rw) / self.vw) as usize;
            let c = palette.colors[usize::from(i)];
            let s = &mut self.sums[base + mx];
            s[0] += u64::from(c[0]);
            s[1] += u64::from(c[1]);
            s[2] += u64::from(c[2]);
            s[3] += 1;
        }
    }

    /// The minimap: region pixels = nearest palette colour (never 0x64) to the average; the
    /// rest 0x64.
    fn finish(self, palette: &Palette) -> Vec<u8> {
        let mut px = vec![MINIMAP_PAD; (self.mw as usize) * (self.mh as usize)];
        let mut cache = NearestCache::new(palette, &[MINIMAP_PAD]);
        for y in 0..self.rh as usize {
            for x in 0..self.rw as usize {
                let s = self.sums[y * self.rw as usize + x];
                if s[3] == 0 {
                    continue;
                }
                let avg = |v: u64| ((v + s[3] / 2) / s[3]) as u8;
                px[y * self.mw as usize + x] = cache.get([avg(s[0]), avg(s[1]), avg(s[2])]);
            }
        }
        px
    }
}

fn canon_hash(cell: &[u8], canon: &[u8; 256]) -> u64 {
    // FNV-1a over the folded indices.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in cell {
        h ^= u64::from(canon[usize::from(b)]);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

fn same_colours(a: &[u8], b: &[u8], canon: &[u8; 256]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(&x, &y)| canon[usize::from(x)] == canon[usize::from(y)])
}

/// Cuts map.png into 32×32 cells: a cell showing the colours of the tile already at that
/// position keeps it, else the first stored tile with those colours, else it becomes a new
/// tile. Feeds every row to the minimap accumulator.
#[allow(clippy::too_many_arguments)]
fn retile(
    png_bytes: &[u8],
    palette: &Palette,
    canon: &[u8; 256],
    tx: usize,
    tiles: &mut Vec<u8>,
    tilemap: &mut [u16],
    acc: &mut MinimapAccumulator,
    max_tiles: usize,
) -> Result<(), ViewError> {
    let mut index: HashMap<u64, Vec<u32>> = HashMap::new();
    for (i, t) in tiles.chunks_exact(TILE_BYTES).enumerate() {
        index
            .entry(canon_hash(t, canon))
            .or_default()
            .push(i as u32);
    }
    let pw = tx * TILE_SIDE;
    let mut band = vec![0u8; pw * TILE_SIDE];
    let mut cell = vec![0u8; TILE_BYTES];
    stream_png_rows(png_bytes, MAP_PNG, palette, |y, row| {
        acc.add_row(y, row, palette);
        let py = y % TILE_SIDE;
        band[py * pw..(py + 1) * pw].copy_from_slice(&row[..pw]);
        if py + 1 < TILE_SIDE {
            return Ok(());
        }
        let ty = y / TILE_SIDE;
        for cx in 0..tx {
            for r in 0..TILE_SIDE {
                let s = r * pw + cx * TILE_SIDE;
                cell[r * TILE_SIDE..(r + 1) * TILE_SIDE].copy_from_slice(&band[s..s + TILE_SIDE]);
            }
            let slot = &mut tilemap[ty * tx + cx];
            let cur = usize::from(*slot);
            let cur_tile = tiles.get(cur * TILE_BYTES..(cur + 1) * TILE_BYTES);
            if cur_tile.is_some_and(|t| same_colours(t, &cell, canon)) {
                continue;
            }
            let h = canon_hash(&cell, canon);
            let found = index.get(&h).and_then(|c| {
                c.iter().copied().find(|&i| {
                    let i = i as usize;
                    same_colours(&tiles[i * TILE_BYTES..(i + 1) * TILE_BYTES], &cell, canon)
                })
            });
            let i = match found {
                Some(i) => i as usize,
                None => {
                    let n = tiles.len() / TILE_BYTES;
                    if n >= max_tiles {
                        return Err(ViewError::invalid(
                            MAP_PNG,
                            format!(
                                "cell at pixel ({}, {}) needs tile {}, past the limit of {max_tiles} tiles",
                                cx * TILE_SIDE,
                                ty * TILE_SIDE,
                                n + 1
                            ),
                        ));
                    }
                    tiles.extend_from_slice(&cell);
                    index.entry(h).or_default().push(n as u32);
                    n
                }
            };
            *slot = i as u16;
        }
        Ok(())
    })?;
    Ok(())
}

/// Drops tiles no cell uses, keeping the order of the rest; returns how many were dropped.
fn prune(tiles: &mut Vec<u8>, tilemap: &mut [u16]) -> usize {
    let n = tiles.len() / TILE_BYTES;
    let mut used = vec![false; n];
    for &c in tilemap.iter() {
        if let Some(u) = used.get_mut(usize::from(c)) {
            *u = true;
        }
    }
    let mut remap = vec![0u16; n];
    let mut kept = Vec::with_capacity(tiles.len());
    for (i, t) in tiles.chunks_exact(TILE_BYTES).enumerate() {
        if used[i] {
            remap[i] = (kept.len() / TILE_BYTES) as u16;
            kept.extend_from_slice(t);
        }
    }
    for c in tilemap.iter_mut() {
        *c = remap[usize::from(*c)];
    }
    let dropped = n - kept.len() / TILE_BYTES;
    *tiles = kept;
    dropped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_compress_rows_and_wrap() {
        let v = [0xFFFF, 0xFFFC, 0xFFFC, 0xFFFC, 0xFFFF, 7, 7, 0xFFFE];
        assert_eq!(
            runs(&v, 3, 0xFFFF),
            vec![[1, 0, 3, 0xFFFC], [2, 1, 2, 7], [1, 2, 1, 0xFFFE]]
        );
    }

    #[test]
    fn hex_round_trip() {
        let b = [0u8, 1, 0xAB, 0xFF];
        assert_eq!(hex(&b), "0001abff");
        assert_eq!(unhex("0001abff").unwrap(), b);
        assert!(unhex("0g").is_none());
        assert!(unhex("abc").is_none());
    }
}
