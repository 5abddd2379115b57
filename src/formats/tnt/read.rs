//! Reading `0x2000` and `0x1020` maps.

use super::*;
use crate::formats::bytes::Bytes;
use crate::formats::Limits;

/// Header field offsets shared by both layouts.
const H_WIDTH: u64 = 0x04;
const H_HEIGHT: u64 = 0x08;
const H_MAP_DATA: u64 = 0x0C;
const H_ATTRS: u64 = 0x10;
const H_TILE_GFX: u64 = 0x14;
const H_TILES: u64 = 0x18;
const H_FEATURES: u64 = 0x1C;
const H_FEATURE_NAMES: u64 = 0x20;
const H_SEA_LEVEL: u64 = 0x24;

fn oob(what: impl Into<String>) -> impl FnOnce(OutOfBounds) -> TntError {
    let what = what.into();
    move |source| TntError::OutOfBounds { what, source }
}

fn over(what: impl Into<String>, value: u64, limit: u64) -> TntError {
    TntError::OverLimit {
        what: what.into(),
        value,
        limit,
    }
}

/// `a × b × c`, or an error naming `what` when it overflows 64 bits.
fn product(what: &str, factors: &[u64]) -> Result<u64, TntError> {
    factors.iter().try_fold(1u64, |acc, &f| {
        acc.checked_mul(f)
            .ok_or_else(|| over(format!("{what} (overflows)"), u64::MAX, u64::MAX))
    })
}

/// Decodes a map. Every block is checked against the input before anything is allocated,
/// and the cell, tile and feature counts against `limits`.
pub fn parse(data: &[u8], limits: &Limits) -> Result<Tnt, TntError> {
    let b = Bytes::new(data);
    if data.len() < HEADER_LEN as usize {
        return Err(TntError::ShortHeader { len: data.len() });
    }
    let h = |off: u64| b.u32(off).map_err(oob("header"));
    let version = h(0)?;
    let legacy = match version {
        VERSION_TA => false,
        VERSION_LEGACY => true,
        VERSION_KINGDOMS => return Err(TntError::Kingdoms),
        v => return Err(TntError::UnknownVersion(v)),
    };
    let width = h(H_WIDTH)?;
    let height = h(H_HEIGHT)?;
    for (side, v, at) in [("width", width, "0x04"), ("height", height, "0x08")] {
        if v > MAX_SIDE {
            return Err(over(
                format!("{side} in attribute cells (header {at})"),
                u64::from(v),
                u64::from(MAX_SIDE),
            ));
        }
    }
    let cells = u64::from(width) * u64::from(height);
    if cells > limits.max_map_cells {
        return Err(over(
            format!("attribute cells (width {width} × height {height}, header 0x04/0x08)"),
            cells,
            limits.max_map_cells,
        ));
    }
    let tile_count = u64::from(h(H_TILES)?);
    let tile_limit = limits.max_tiles.min(MAX_TILES) as u64;
    if tile_count > tile_limit {
        return Err(over("tile count (header 0x18)", tile_count, tile_limit));
    }
    let feature_count = u64::from(h(H_FEATURES)?);
    let feature_limit = (limits.max_features as u64).min(u64::from(FIRST_SENTINEL) - 1);
    if feature_count > feature_limit {
        return Err(over(
            "feature count (header 0x1C)",
            feature_count,
            feature_limit,
        ));
    }
    let (minimap_off_at, flags_at) = if legacy { (0x38, 0x3C) } else { (0x28, 0x2C) };
    let pads_at: u64 = if legacy { 0x28 } else { 0x30 };
    let mut pads = [0u32; 4];
    for (i, p) in pads.iter_mut().enumerate() {
        *p = h(pads_at + 4 * i as u64)?;
    }

    let tx = u64::from(width / 2);
    let ty = u64::from(height / 2);

    // Map data.
    let map_off = h(H_MAP_DATA)?;
    let map_len = product("tile grid size", &[tx, ty, 2])?;
    let map_bytes = b
        .slice(u64::from(map_off), map_len)
        .map_err(oob(format!("tile grid ({tx}×{ty} u16, header 0x0C)")))?;

    // Attributes.
    let attr_off = h(H_ATTRS)?;
    let rec = if legacy { 8 } else { 4 };
    let attr_len = product("attribute grid size", &[cells, rec])?;
    let attr_bytes = b.slice(u64::from(attr_off), attr_len).map_err(oob(format!(
        "attribute grid ({width}×{height} × {rec} bytes, header 0x10)"
    )))?;

    // Tile graphics.
    let gfx_off = h(H_TILE_GFX)?;
    let gfx_len = tile_count * TILE_BYTES as u64;
    let gfx = b.slice(u64::from(gfx_off), gfx_len).map_err(oob(format!(
        "tile graphics ({tile_count} tiles, header 0x14)"
    )))?;

    // Feature names.
    let names_off = h(H_FEATURE_NAMES)?;
    let names_len = feature_count * FEATURE_ENTRY_LEN as u64;
    let names = b
        .slice(u64::from(names_off), names_len)
        .map_err(oob(format!(
            "feature table ({feature_count} entries, header 0x20)"
        )))?;

    // Minimap.
    let mini_off = h(minimap_off_at)?;
    let mini_head = b
        .slice(u64::from(mini_off), 8)
        .map_err(oob(format!("minimap size (header {minimap_off_at:#04x})")))?;
    let mw = u32::from_le_bytes([mini_head[0], mini_head[1], mini_head[2], mini_head[3]]);
    let mh = u32::from_le_bytes([mini_head[4], mini_head[5], mini_head[6], mini_head[7]]);
    let mini_px = u64::from(mw) * u64::from(mh);
    let mini_pixels = b
        .slice(u64::from(mini_off) + 8, mini_px)
        .map_err(oob(format!("minimap pixels ({mw}×{mh})")))?;

    // Everything is in bounds: decode.
    let tilemap = map_bytes
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    let attrs = if legacy {
        attr_bytes
            .chunks_exact(8)
            .map(|r| Attr {
                height: r[0],
                feature: if r[2] >= 0xFC {
                    FEATURE_NONE
                } else {
                    u16::from(r[2])
                },
                pad: 0,
            })
            .collect()
    } else {
        attr_bytes
            .chunks_exact(4)
            .map(|r| Attr {
                height: r[0],
                feature: u16::from_le_bytes([r[1], r[2]]),
                pad: r[3],
            })
            .collect()
    };
    let features = names
        .chunks_exact(FEATURE_ENTRY_LEN)
        .map(|e| {
            let mut name = [0u8; NAME_LEN];
            name.copy_from_slice(&e[4..]);
            FeatureEntry {
                index: u32::from_le_bytes([e[0], e[1], e[2], e[3]]),
                name,
            }
        })
        .collect();

    let layout = (!legacy).then(|| {
        let blocks = [
            Block {
                offset: map_off,
                len: map_len,
            },
            Block {
                offset: attr_off,
                len: attr_len,
            },
            Block {
                offset: gfx_off,
                len: gfx_len,
            },
            Block {
                offset: names_off,
                len: names_len,
            },
            Block {
                offset: mini_off,
                len: 8 + mini_px,
            },
        ];
        Layout {
            map_data: blocks[0],
            attrs: blocks[1],
            tile_gfx: blocks[2],
            feature_names: blocks[3],
            minimap: blocks[4],
            file_len: data.len() as u64,
            filler: uncovered(data, &blocks),
        }
    });

    Ok(Tnt {
        source_version: version,
        width,
        height,
        sea_level: h(H_SEA_LEVEL)?,
        minimap_flags: h(flags_at)?,
        pads,
        tilemap,
        attrs,
        tiles: gfx.to_vec(),
        features,
        minimap: Minimap {
            width: mw,
            height: mh,
            pixels: mini_pixels.to_vec(),
        },
        layout,
    })
}

/// The byte ranges of `data` covered by neither the header nor a block (all in bounds).
fn uncovered(data: &[u8], blocks: &[Block]) -> Vec<Filler> {
    let mut spans: Vec<(u64, u64)> = blocks
        .iter()
        .filter(|bl| bl.len > 0)
        .map(|bl| (u64::from(bl.offset), u64::from(bl.offset) + bl.len))
        .collect();
    spans.push((0, HEADER_LEN));
    spans.sort_unstable();
    let mut out = Vec::new();
    let mut pos = 0u64;
    let end = data.len() as u64;
    for (s, e) in spans.into_iter().chain(std::iter::once((end, end))) {
        if s > pos {
            if let Some(bytes) = data.get(pos as usize..s.min(end) as usize) {
                out.push(Filler {
                    offset: pos,
                    bytes: bytes.to_vec(),
                });
            }
        }
        pos = pos.max(e);
    }
    out
}
