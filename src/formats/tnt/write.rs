//! Writing `0x2000` maps.

use super::*;

/// Encodes `t` as a `0x2000` map.
///
/// When `t.layout` is present and every block still has the size it had in the file it was
/// read from (and the recorded blocks overlap neither each other nor the header), the blocks
/// go back to their recorded offsets and every byte between them is restored: an unedited map
/// comes out byte for byte. Otherwise the canonical layout is used: header, tile grid padded
/// to 16 bytes (with the original padding bytes where there were some), attributes, tile
/// graphics, feature table, minimap, then any bytes that trailed the last block.
///
/// Refuses what the game cannot load: odd or zero dimensions, a tile grid that is not half
/// the attribute grid, more than 65,536 tiles, 0xFFFB or more features, a name without its
/// NUL inside 128 bytes, tile indices past the tile set, a minimap whose pixels do not match
/// its size.
pub fn write(t: &Tnt) -> Result<Vec<u8>, TntError> {
    validate(t)?;
    let sizes = block_sizes(t);
    let layout = t.layout.as_ref().filter(|l| layout_fits(l, &sizes));
    let (offsets, file_len) = match layout {
        Some(l) => {
            let blocks = l.blocks();
            let ends = blocks.iter().map(|b| u64::from(b.offset) + b.len);
            let len = ends
                .chain([l.file_len, HEADER_LEN])
                .max()
                .unwrap_or(HEADER_LEN);
            (blocks.map(|b| u64::from(b.offset)), len)
        }
        None => canonical_offsets(t, &sizes),
    };
    let offsets32 = offsets.map(u32::try_from);
    let [Ok(map_off), Ok(attr_off), Ok(gfx_off), Ok(names_off), Ok(mini_off)] = offsets32 else {
        return Err(TntError::Refused(format!(
            "the map needs {file_len} bytes; offsets must fit in 32 bits"
        )));
    };
    let len = usize::try_from(file_len)
        .map_err(|_| TntError::Refused(format!("the map needs {file_len} bytes")))?;
    let mut out = crate::formats::bytes::zeroed(len);

    // Filler first, blocks on top.
    match (layout, &t.layout) {
        (Some(l), _) => {
            for f in &l.filler {
                put(&mut out, f.offset, &f.bytes);
            }
        }
        (None, Some(l)) => {
            // Canonical layout of an edited map: keep the map-data padding and trailing bytes.
            let map_end = u64::from(l.map_data.offset) + l.map_data.len;
            let pad_at = offsets[0] + sizes[0];
            let pad_len = (offsets[1] - pad_at) as usize;
            if let Some(f) = l.filler.iter().find(|f| f.offset == map_end) {
                let n = pad_len.min(f.bytes.len());
                put(&mut out, pad_at, &f.bytes[..n]);
            }
            if let Some(tail) = trailing(l) {
                let at = offsets[4] + sizes[4];
                put(&mut out, at, &tail.bytes);
            }
        }
        (None, None) => {}
    }

    let header: [u32; 16] = [
        VERSION_TA,
        t.width,
        t.height,
        map_off,
        attr_off,
        gfx_off,
        t.tile_count() as u32,
        t.features.len() as u32,
        names_off,
        t.sea_level,
        mini_off,
        t.minimap_flags,
        t.pads[0],
        t.pads[1],
        t.pads[2],
        t.pads[3],
    ];
    for (i, w) in header.iter().enumerate() {
        put(&mut out, 4 * i as u64, &w.to_le_bytes());
    }

    let mut pos = offsets[0] as usize;
    for &cell in &t.tilemap {
        out[pos..pos + 2].copy_from_slice(&cell.to_le_bytes());
        pos += 2;
    }
    let mut pos = offsets[1] as usize;
    for a in &t.attrs {
        let f = a.feature.to_le_bytes();
        out[pos..pos + 4].copy_from_slice(&[a.height, f[0], f[1], a.pad]);
        pos += 4;
    }
    put(&mut out, offsets[2], &t.tiles);
    let mut pos = offsets[3] as usize;
    for f in &t.features {
        out[pos..pos + 4].copy_from_slice(&f.index.to_le_bytes());
        out[pos + 4..pos + FEATURE_ENTRY_LEN].copy_from_slice(&f.name);
        pos += FEATURE_ENTRY_LEN;
    }
    let pos = offsets[4];
    put(&mut out, pos, &t.minimap.width.to_le_bytes());
    put(&mut out, pos + 4, &t.minimap.height.to_le_bytes());
    put(&mut out, pos + 8, &t.minimap.pixels);
    Ok(out)
}

/// Copies `bytes` to `out` at `at` (callers sized `out` to hold every block and filler).
fn put(out: &mut [u8], at: u64, bytes: &[u8]) {
    let at = at as usize;
    if let Some(dst) = out.get_mut(at..at + bytes.len()) {
        dst.copy_from_slice(bytes);
    }
}

/// Sizes of the five blocks of `t`, in header order.
fn block_sizes(t: &Tnt) -> [u64; 5] {
    [
        t.tilemap.len() as u64 * 2,
        t.attrs.len() as u64 * 4,
        t.tiles.len() as u64,
        (t.features.len() * FEATURE_ENTRY_LEN) as u64,
        8 + t.minimap.pixels.len() as u64,
    ]
}

/// The recorded layout can be reused: same sizes, no overlaps.
fn layout_fits(l: &Layout, sizes: &[u64; 5]) -> bool {
    let blocks = l.blocks();
    if blocks.iter().zip(sizes).any(|(b, &s)| b.len != s) {
        return false;
    }
    let mut spans: Vec<(u64, u64)> = blocks
        .iter()
        .filter(|b| b.len > 0)
        .map(|b| (u64::from(b.offset), u64::from(b.offset) + b.len))
        .collect();
    spans.push((0, HEADER_LEN));
    spans.sort_unstable();
    spans.windows(2).all(|w| w[0].1 <= w[1].0)
}

/// Filler that follows every block up to the end of the file.
fn trailing(l: &Layout) -> Option<&Filler> {
    let last_end = l
        .blocks()
        .iter()
        .map(|b| u64::from(b.offset) + b.len)
        .max()
        .unwrap_or(HEADER_LEN)
        .max(HEADER_LEN);
    l.filler
        .last()
        .filter(|f| f.offset >= last_end && f.offset + f.bytes.len() as u64 == l.file_len)
}

/// Offsets of the canonical layout and the file length.
fn canonical_offsets(t: &Tnt, sizes: &[u64; 5]) -> ([u64; 5], u64) {
    let mut offsets = [0u64; 5];
    let mut pos = HEADER_LEN;
    for (i, s) in sizes.iter().enumerate() {
        offsets[i] = pos;
        pos += s;
        if i == 0 {
            pos = pos.div_ceil(16) * 16;
        }
    }
    let tail = t
        .layout
        .as_ref()
        .and_then(trailing)
        .map_or(0, |f| f.bytes.len() as u64);
    (offsets, pos + tail)
}

fn refuse<T>(msg: String) -> Result<T, TntError> {
    Err(TntError::Refused(msg))
}

fn validate(t: &Tnt) -> Result<(), TntError> {
    if t.width == 0 || t.height == 0 || t.width % 2 != 0 || t.height % 2 != 0 {
        return refuse(format!(
            "width {} × height {} attribute cells: both must be even and non-zero (a tile is 2×2 cells)",
            t.width, t.height
        ));
    }
    let cells = u64::from(t.width) * u64::from(t.height);
    if t.attrs.len() as u64 != cells {
        return refuse(format!(
            "{} attribute cells for a {}×{} grid",
            t.attrs.len(),
            t.width,
            t.height
        ));
    }
    let (tx, ty) = (t.tiles_x(), t.tiles_y());
    if t.tilemap.len() != tx * ty {
        return refuse(format!(
            "tile grid has {} cells, but half the {}×{} attribute grid is {tx}×{ty}",
            t.tilemap.len(),
            t.width,
            t.height
        ));
    }
    if t.tiles.len() % TILE_BYTES != 0 {
        return refuse(format!(
            "tile graphics are {} bytes, not a multiple of {TILE_BYTES}",
            t.tiles.len()
        ));
    }
    let n = t.tile_count();
    if n > MAX_TILES {
        return refuse(format!("{n} tiles; u16 tile indices reach {MAX_TILES}"));
    }
    if let Some(i) = t.tilemap.iter().position(|&c| usize::from(c) >= n) {
        return refuse(format!(
            "tile grid cell x={} y={} holds tile {}, past the {n} tiles",
            i % tx.max(1),
            i / tx.max(1),
            t.tilemap[i]
        ));
    }
    if t.features.len() >= usize::from(FIRST_SENTINEL) {
        return refuse(format!(
            "{} features; the table must have fewer than {} (0xFFFB) entries",
            t.features.len(),
            FIRST_SENTINEL
        ));
    }
    if let Some(i) = t.features.iter().position(|f| !f.name.contains(&0)) {
        return refuse(format!(
            "feature {i}: name fills all 128 bytes without a NUL (127 bytes at most)"
        ));
    }
    let m = &t.minimap;
    if m.pixels.len() as u64 != u64::from(m.width) * u64::from(m.height) {
        return refuse(format!(
            "minimap has {} pixels for {}×{}",
            m.pixels.len(),
            m.width,
            m.height
        ));
    }
    Ok(())
}
