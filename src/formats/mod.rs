//! Pure codecs over `&[u8]`: no file, PNG or FUSE I/O in here.
//!
//! Every reader takes explicit [`Limits`] and checks every offset and size against the input
//! before it allocates; every error names the structure and the byte offset.

pub mod bos;
pub mod bytes;
pub mod cob;
pub mod fnt;
pub mod gaf;
pub mod hpi;
pub mod o3do;
pub mod palette;
pub mod paltable;
pub mod pcx;
pub mod tdf;
pub mod tdf_doc;
pub mod tnt;

/// Budgets applied while decoding untrusted files. The defaults are far above anything the
/// game ships (the largest stock GAF is ~12 MB, the largest map 256×256 tiles) and far below
/// what would exhaust memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Total frames (including layers, each reference counted) in one GAF.
    pub max_frames: usize,
    /// Pixels (width × height) of one frame or layer.
    pub max_frame_pixels: u64,
    /// Decoded pixels of the whole file, summed over every frame and layer, each reference
    /// of a shared frame counted (the decoded GAF holds one copy per reference; two bytes
    /// per pixel: 128 Mi pixels = 256 MiB).
    pub max_total_pixels: u64,
    /// Nesting depth of composite frames (1 = layers of a top-level frame).
    pub max_layer_depth: usize,
    /// Times one frame header may be referenced (by frame lists or layer tables) before the
    /// file is refused as a reference bomb.
    pub max_frame_references: usize,
    /// Attribute cells (width × height) of one map (1024 × 1024 cells = a 16,384-pixel square,
    /// four times the side of the largest stock map).
    pub max_map_cells: u64,
    /// Tiles stored in one map.
    pub max_tiles: usize,
    /// Entries of a map's feature table.
    pub max_features: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_frames: 1 << 16,
            max_frame_pixels: 16 << 20,
            max_total_pixels: 128 << 20,
            max_layer_depth: 16,
            max_frame_references: 1 << 16,
            max_map_cells: 1024 * 1024,
            max_tiles: 65_536,
            max_features: 0xFFFA,
        }
    }
}
