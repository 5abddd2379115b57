//! TNT maps of Total Annihilation: reader ([`parse`]) and writer ([`write()`]).
//!
//! A map is a 64-byte header followed by five blocks at absolute offsets: the tile-index grid
//! (`u16` per 32×32 tile), the attribute grid (height and feature word per 16×16 cell), the tile
//! graphics (1,024 palette indices per tile), the feature-name table and the minimap.
//!
//! Two layouts are read: `0x2000` (every TA tool writes it) and the older `0x1020` (8-byte
//! attribute records with a one-byte feature, minimap offset and flags at `0x38`/`0x3C`).
//! `0x4000` (TA: Kingdoms) and unknown versions are refused with an error naming them.
//!
//! Lossless: a parsed `0x2000` map keeps every feature word, the attribute pad bytes, the raw
//! 128-byte name buffers, the header pads and flags, and (in [`Layout`]) where each block sat and
//! every byte outside the header and the blocks (the map-data padding, gaps, extra attribute
//! rows, trailing bytes). [`write()`] reproduces the file byte for byte while the block sizes are
//! unchanged. A `0x1020` map is written as `0x2000`.

mod read;
mod write;

pub use read::parse;
pub use write::write;

use super::bytes::OutOfBounds;

/// The `IDVersion` of TA maps.
pub const VERSION_TA: u32 = 0x2000;
/// The `IDVersion` of the older TA layout (read only; written back as [`VERSION_TA`]).
pub const VERSION_LEGACY: u32 = 0x1020;
/// The `IDVersion` of TA: Kingdoms maps (refused).
pub const VERSION_KINGDOMS: u32 = 0x4000;
/// Largest width or height accepted, in attribute cells, whatever the other side (one pixel
/// row of the mosaic is then at most 1 MB; the largest retail maps are 512 cells a side).
pub const MAX_SIDE: u32 = 1 << 15;
/// Size of the header.
pub const HEADER_LEN: u64 = 64;
/// Pixels per tile side.
pub const TILE_SIDE: usize = 32;
/// Bytes of one tile's graphics (32×32 palette indices).
pub const TILE_BYTES: usize = TILE_SIDE * TILE_SIDE;
/// Pixels per attribute cell side.
pub const CELL_SIDE: usize = 16;
/// Bytes of one feature-table entry (`u32` index + 128-byte name).
pub const FEATURE_ENTRY_LEN: usize = 132;
/// Length of a raw feature name buffer.
pub const NAME_LEN: usize = 128;
/// Most tiles a map can index (`u16` indices).
pub const MAX_TILES: usize = 65_536;
/// Feature words from this value up are sentinels; a feature table must be shorter.
pub const FIRST_SENTINEL: u16 = 0xFFFB;
/// Feature word of a void (impassable) cell.
pub const FEATURE_VOID: u16 = 0xFFFC;
/// Feature word of a cell without a feature.
pub const FEATURE_NONE: u16 = 0xFFFF;

/// Why a map could not be read or written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TntError {
    /// Fewer bytes than a header.
    #[error("tnt: header at offset 0: the file is {len} bytes, shorter than the 64-byte header")]
    ShortHeader {
        /// Length of the input.
        len: usize,
    },
    /// A TA: Kingdoms map.
    #[error(
        "tnt: version 0x4000 at offset 0 is a TA: Kingdoms map, which Total Annihilation cannot \
         load; tafs reads TA maps (0x2000 and the older 0x1020)"
    )]
    Kingdoms,
    /// Not a known map version.
    #[error(
        "tnt: unknown version {0:#x} at offset 0 (TA maps are 0x2000 or the older 0x1020; 0x4000 \
         is TA: Kingdoms); not a TNT map?"
    )]
    UnknownVersion(u32),
    /// A block passes the end of the file.
    #[error("tnt: {what}: {source}")]
    OutOfBounds {
        /// The structure being read.
        what: String,
        /// Where and how far.
        source: OutOfBounds,
    },
    /// A count or size above the budget or the format's range.
    #[error("tnt: {what} is {value}, over the limit of {limit}")]
    OverLimit {
        /// What was counted (names the header field and its offset).
        what: String,
        /// The value found.
        value: u64,
        /// The largest accepted value.
        limit: u64,
    },
    /// The model cannot be written as a map the game loads.
    #[error("tnt: cannot write: {0}")]
    Refused(String),
}

/// One attribute cell (16×16 pixels).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Attr {
    /// Elevation, 0..=255.
    pub height: u8,
    /// Feature word: `< feature count` places that feature; `0xFFFC` void; any other value
    /// places nothing (`0xFFFF` none; `0xFFFD`/`0xFFFE` appear in retail maps). Kept exactly.
    pub feature: u16,
    /// The fourth byte of the record (normally zero), kept as found.
    pub pad: u8,
}

/// One entry of the feature table.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FeatureEntry {
    /// The stored index word (normally the entry's position), kept as found.
    pub index: u32,
    /// The raw 128-byte name buffer: the name, a NUL, then whatever the tool left there.
    pub name: [u8; NAME_LEN],
}

impl FeatureEntry {
    /// An entry with a clean (zero-filled) name buffer. `None` if `name` does not fit with its
    /// NUL (127 bytes at most) or contains a NUL.
    pub fn new(index: u32, name: &[u8]) -> Option<FeatureEntry> {
        if name.len() >= NAME_LEN || name.contains(&0) {
            return None;
        }
        let mut buf = [0u8; NAME_LEN];
        buf[..name.len()].copy_from_slice(name);
        Some(FeatureEntry { index, name: buf })
    }

    /// The name: the bytes before the first NUL.
    pub fn name_bytes(&self) -> &[u8] {
        let end = self.name.iter().position(|&b| b == 0).unwrap_or(NAME_LEN);
        &self.name[..end]
    }

    /// The name as text (invalid UTF-8 replaced).
    pub fn name_str(&self) -> String {
        String::from_utf8_lossy(self.name_bytes()).into_owned()
    }

    /// True when the buffer holds nothing after the name but zeros.
    pub fn is_clean(&self) -> bool {
        let n = self.name_bytes().len();
        self.name[n..].iter().all(|&b| b == 0)
    }
}

/// The embedded minimap.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Minimap {
    /// Width in pixels (252 in retail maps).
    pub width: u32,
    /// Height in pixels (252, or 256 in 33 retail maps).
    pub height: u32,
    /// Palette indices, row-major.
    pub pixels: Vec<u8>,
}

/// Where a block sat in the file it was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Block {
    /// Absolute offset (as stored in the header).
    pub offset: u32,
    /// Length in bytes.
    pub len: u64,
}

/// Bytes of the file covered by neither the header nor a block.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Filler {
    /// Absolute offset of the first byte.
    pub offset: u64,
    /// The bytes.
    pub bytes: Vec<u8>,
}

/// The physical arrangement of a `0x2000` file, kept so that [`write()`] reproduces it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Layout {
    /// Tile-index grid.
    pub map_data: Block,
    /// Attribute grid.
    pub attrs: Block,
    /// Tile graphics.
    pub tile_gfx: Block,
    /// Feature-name table.
    pub feature_names: Block,
    /// Minimap (8-byte size header + pixels).
    pub minimap: Block,
    /// Length of the file.
    pub file_len: u64,
    /// Every byte outside the header and the blocks, in file order.
    pub filler: Vec<Filler>,
}

impl Layout {
    /// The blocks in header order.
    pub fn blocks(&self) -> [Block; 5] {
        [
            self.map_data,
            self.attrs,
            self.tile_gfx,
            self.feature_names,
            self.minimap,
        ]
    }
}

/// A decoded map.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Tnt {
    /// The version the file was read from ([`VERSION_TA`] or [`VERSION_LEGACY`]); [`write()`]
    /// always writes [`VERSION_TA`].
    pub source_version: u32,
    /// Width in 16-pixel attribute cells (tiles = width / 2).
    pub width: u32,
    /// Height in 16-pixel attribute cells (tiles = height / 2).
    pub height: u32,
    /// Heights below this are under water.
    pub sea_level: u32,
    /// Header word 0x2C: bit 0 = the game reads the stored minimap; other bits kept.
    pub minimap_flags: u32,
    /// Header words 0x30..0x40 (for a `0x1020` map, the words at 0x28..0x38).
    pub pads: [u32; 4],
    /// Tile indices, (width/2) × (height/2), row-major.
    pub tilemap: Vec<u16>,
    /// Attribute cells, width × height, row-major.
    pub attrs: Vec<Attr>,
    /// Tile graphics, [`TILE_BYTES`] per tile.
    pub tiles: Vec<u8>,
    /// The feature table.
    pub features: Vec<FeatureEntry>,
    /// The embedded minimap.
    pub minimap: Minimap,
    /// Where the blocks sat and the bytes between them (`None` for a `0x1020` source or a
    /// map built from scratch: [`write()`] then uses the canonical layout).
    pub layout: Option<Layout>,
}

impl Tnt {
    /// Tiles per row.
    pub fn tiles_x(&self) -> usize {
        (self.width / 2) as usize
    }

    /// Tile rows.
    pub fn tiles_y(&self) -> usize {
        (self.height / 2) as usize
    }

    /// Map width in pixels.
    pub fn pixel_width(&self) -> usize {
        self.tiles_x() * TILE_SIDE
    }

    /// Map height in pixels.
    pub fn pixel_height(&self) -> usize {
        self.tiles_y() * TILE_SIDE
    }

    /// Number of stored tiles.
    pub fn tile_count(&self) -> usize {
        self.tiles.len() / TILE_BYTES
    }

    /// The graphics of tile `i`, if it exists.
    pub fn tile(&self, i: usize) -> Option<&[u8]> {
        let start = i.checked_mul(TILE_BYTES)?;
        self.tiles.get(start..start.checked_add(TILE_BYTES)?)
    }

    /// True when feature word `w` places a feature (it indexes the table).
    pub fn places_feature(&self, w: u16) -> bool {
        w < FIRST_SENTINEL && usize::from(w) < self.features.len()
    }

    /// Every placement: (feature index, attribute x, attribute y), row-major.
    pub fn placements(&self) -> impl Iterator<Item = (u16, u32, u32)> + '_ {
        let w = self.width.max(1) as usize;
        self.attrs
            .iter()
            .enumerate()
            .filter(|(_, a)| self.places_feature(a.feature))
            .map(move |(i, a)| (a.feature, (i % w) as u32, (i / w) as u32))
    }

    /// Writes pixel row `y` of the full tile mosaic into `row` (length [`Tnt::pixel_width`]).
    /// Cells whose tile index is past the tile set are drawn with index 0.
    pub fn render_row(&self, y: usize, row: &mut [u8]) {
        let tx = self.tiles_x();
        let (ty, py) = (y / TILE_SIDE, y % TILE_SIDE);
        let Some(line) = self.tilemap.get(ty * tx..(ty + 1) * tx) else {
            row.fill(0);
            return;
        };
        for (cell, out) in line.iter().zip(row.chunks_exact_mut(TILE_SIDE)) {
            match self.tile(usize::from(*cell)) {
                Some(t) => out.copy_from_slice(&t[py * TILE_SIDE..(py + 1) * TILE_SIDE]),
                None => out.fill(0),
            }
        }
    }
}

/// The region of a `minimap_w × minimap_h` minimap that shows a map of `width × height`
/// attribute cells: the visible map (`width·16 − 32` × `height·16 − 128` pixels, from the
/// top-left) scaled so its longer side is 252, the other keeping the aspect ratio (rounded
/// down); clipped to the minimap.
pub fn minimap_region(width: u32, height: u32, minimap_w: u32, minimap_h: u32) -> (u32, u32) {
    let (vw, vh) = visible_size(width, height);
    if vw == 0 || vh == 0 {
        return (0, 0);
    }
    let (rw, rh) = if vw >= vh {
        (252, 252 * vh / vw)
    } else {
        (252 * vw / vh, 252)
    };
    ((rw as u32).min(minimap_w), (rh as u32).min(minimap_h))
}

/// The part of the map the game shows (and the minimap covers), in pixels, from the top-left.
pub fn visible_size(width: u32, height: u32) -> (u64, u64) {
    (
        (u64::from(width) * 16).saturating_sub(32),
        (u64::from(height) * 16).saturating_sub(128),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minimap_region_follows_the_seed_examples() {
        // 225×196 tiles → 252×216; 128×96 → 252×182; 96×128 → 193×252.
        assert_eq!(minimap_region(450, 392, 252, 252), (252, 216));
        assert_eq!(minimap_region(256, 192, 252, 252), (252, 182));
        assert_eq!(minimap_region(192, 256, 252, 252), (193, 252));
        assert_eq!(minimap_region(2, 2, 252, 252), (0, 0));
    }

    #[test]
    fn feature_entry_names() {
        let mut e = FeatureEntry::new(3, b"Tree1").unwrap();
        assert_eq!(e.name_str(), "Tree1");
        assert!(e.is_clean());
        e.name[10] = 0xAA;
        assert_eq!(e.name_bytes(), b"Tree1");
        assert!(!e.is_clean());
        assert!(FeatureEntry::new(0, &[b'a'; 128]).is_none());
        assert!(FeatureEntry::new(0, &[b'a'; 127]).is_some());
        assert!(FeatureEntry::new(0, b"a\0b").is_none());
    }
}
