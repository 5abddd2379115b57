//! metadata.json of an unpacked map: the header constants, the feature table, the
//! non-placement feature words and the lossless data (raw name buffers, pads, layout, filler).

use crate::formats::tnt::{self, Block, Filler, Layout};
use crate::view::ViewError;
use serde::{Deserialize, Serialize};

use super::METADATA;
use crate::view::csv::{hex, unhex};

/// metadata.json.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Metadata {
    /// Always [`FORMAT`](super::FORMAT).
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
    /// The layout, checked against the largest file a map of `cells` attribute cells can
    /// be within `limits` (every offset, length and the file length within it) before
    /// anything of that size is allocated.
    pub(super) fn to_layout(
        &self,
        cells: u64,
        limits: &crate::formats::Limits,
    ) -> Result<Layout, ViewError> {
        let max = max_file_len(cells, limits);
        if self.file_len > max {
            return Err(ViewError::invalid(
                METADATA,
                format!(
                    "layout.file_len {} is over the {max} bytes the largest map allowed can take",
                    self.file_len
                ),
            ));
        }
        let b = |what: &str, v: [u64; 2]| -> Result<Block, ViewError> {
            let offset = u32::try_from(v[0]).map_err(|_| {
                ViewError::invalid(
                    METADATA,
                    format!("layout.{what}: offset {} too large", v[0]),
                )
            })?;
            if v[0].saturating_add(v[1]) > max {
                return Err(ViewError::invalid(
                    METADATA,
                    format!(
                        "layout.{what}: offset {} + length {} is over the {max} bytes the largest map allowed can take",
                        v[0], v[1]
                    ),
                ));
            }
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

/// The largest file a map of `cells` attribute cells within `limits` makes: header, tile
/// grid (2 bytes a tile),
/// attributes (4 bytes a cell), tile graphics (1024 bytes a tile), feature table (128-byte
/// names and a word) and a minimap of at most 64 Ki pixels with its size words, with as many
/// bytes again of filler between them.
pub(super) fn max_file_len(cells: u64, limits: &crate::formats::Limits) -> u64 {
    let cells = cells.min(limits.max_map_cells);
    let blocks = (cells / 4 * 2)
        .saturating_add(cells.saturating_mul(4))
        .saturating_add((limits.max_tiles as u64).saturating_mul(1024))
        .saturating_add((limits.max_features as u64).saturating_mul(132))
        .saturating_add((1 << 16) + 8);
    tnt::HEADER_LEN.saturating_add(blocks.saturating_mul(2))
}

/// Runs of equal values other than `skip`, as `[x, y, count, value]` (row-major, may wrap rows).
pub(super) fn runs(values: &[u16], width: usize, skip: u16) -> Vec<[u32; 4]> {
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

#[cfg(test)]
mod tests {
    use super::runs;

    #[test]
    fn runs_compress_rows_and_wrap() {
        let v = [0xFFFF, 0xFFFC, 0xFFFC, 0xFFFC, 0xFFFF, 7, 7, 0xFFFE];
        assert_eq!(
            runs(&v, 3, 0xFFFF),
            vec![[1, 0, 3, 0xFFFC], [2, 1, 2, 7], [1, 2, 1, 0xFFFE]]
        );
    }
}
