//! metadata.json of a GAF dump: what the CSVs cannot hold (version, sequence order, raw
//! names, trailing bytes, header words, composite headers, palette, transparency).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

use super::GafView;

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
    /// CRC-32 of that palette's 768 RGB bytes (hex): a build that resolves another palette
    /// still copies the indices of frame PNGs indexed with this one.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub palette_crc32: String,
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
    pub layout: Option<super::layout::LayoutMeta>,
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

pub(super) fn is_zero(v: &u32) -> bool {
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

/// metadata.json as a generic JSON value (used by tools that want to inspect it).
pub fn metadata_value(view: &GafView) -> Value {
    serde_json::from_slice(&view.metadata()).unwrap_or(Value::Object(Map::new()))
}
