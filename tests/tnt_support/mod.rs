//! Hand-built TNT fixtures, laid out from the format description (not with the crate's writer).
#![allow(dead_code)]

/// Everything a fixture map holds.
#[derive(Clone)]
pub struct Fixture {
    pub version: u32,
    /// Attribute cells.
    pub width: u32,
    pub height: u32,
    pub sea_level: u32,
    pub minimap_flags: u32,
    pub pads: [u32; 4],
    pub tilemap: Vec<u16>,
    /// (height, feature word, pad byte) per cell.
    pub attrs: Vec<(u8, u16, u8)>,
    pub tiles: Vec<Vec<u8>>,
    /// (index word, raw 128-byte name buffer)
    pub features: Vec<(u32, [u8; 128])>,
    pub minimap_w: u32,
    pub minimap_h: u32,
    pub minimap: Vec<u8>,
    /// Bytes right after the tile grid (Cavedog pads it to 16 bytes).
    pub map_pad: Vec<u8>,
    /// Extra attribute rows stored after the header's height (editor quirk).
    pub extra_attr_rows: u32,
    /// Bytes after the minimap.
    pub trailing: Vec<u8>,
}

/// A clean name buffer.
pub fn name(s: &str) -> [u8; 128] {
    let mut b = [0u8; 128];
    b[..s.len()].copy_from_slice(s.as_bytes());
    b
}

/// A tile whose every pixel is `seed + x + y` (mod 256).
pub fn tile(seed: u8) -> Vec<u8> {
    (0..1024)
        .map(|i| {
            seed.wrapping_add((i % 32) as u8)
                .wrapping_add((i / 32) as u8)
        })
        .collect()
}

impl Fixture {
    /// A `tx × ty`-tile map with `ntiles` distinct tiles, cell (x, y) using tile (x + y) % ntiles,
    /// heights x + y, no features, a 252×252 minimap of index x % 200.
    pub fn small(tx: u32, ty: u32, ntiles: u16) -> Fixture {
        let (w, h) = (tx * 2, ty * 2);
        Fixture {
            version: 0x2000,
            width: w,
            height: h,
            sea_level: 20,
            minimap_flags: 1,
            pads: [0; 4],
            tilemap: (0..tx * ty)
                .map(|i| ((i % tx + i / tx) % u32::from(ntiles)) as u16)
                .collect(),
            attrs: (0..w * h)
                .map(|i| (((i % w + i / w) % 256) as u8, 0xFFFF, 0))
                .collect(),
            tiles: (0..ntiles)
                .map(|i| tile((i as u8).wrapping_mul(37)))
                .collect(),
            features: vec![],
            minimap_w: 252,
            minimap_h: 252,
            minimap: (0..252 * 252).map(|i| (i % 252 % 200) as u8).collect(),
            map_pad: vec![],
            extra_attr_rows: 0,
            trailing: vec![],
        }
    }

    /// The file bytes: header, tile grid (+ map_pad), attributes (+ extra rows), tiles,
    /// feature table, minimap, trailing bytes. A 0x1020 fixture uses 8-byte attribute records
    /// (height at +0, one-byte feature at +2) and puts the minimap offset/flags at 0x38/0x3C.
    pub fn bytes(&self) -> Vec<u8> {
        let legacy = self.version == 0x1020;
        let mut body = Vec::new();
        let at = |body: &Vec<u8>| 64 + body.len() as u32;
        let map_off = at(&body);
        for c in &self.tilemap {
            body.extend_from_slice(&c.to_le_bytes());
        }
        body.extend_from_slice(&self.map_pad);
        let attr_off = at(&body);
        let extra = (self.width * self.extra_attr_rows) as usize;
        for (i, &(hgt, f, pad)) in self
            .attrs
            .iter()
            .chain(std::iter::repeat(&(9, 0xFFFF, 0)).take(extra))
            .enumerate()
        {
            if legacy {
                body.extend_from_slice(&[hgt, 0, f as u8, 0, 0, 0, 0, i as u8]);
            } else {
                body.push(hgt);
                body.extend_from_slice(&f.to_le_bytes());
                body.push(pad);
            }
        }
        let gfx_off = at(&body);
        for t in &self.tiles {
            body.extend_from_slice(t);
        }
        let names_off = at(&body);
        for (i, n) in &self.features {
            body.extend_from_slice(&i.to_le_bytes());
            body.extend_from_slice(n);
        }
        let mini_off = at(&body);
        body.extend_from_slice(&self.minimap_w.to_le_bytes());
        body.extend_from_slice(&self.minimap_h.to_le_bytes());
        body.extend_from_slice(&self.minimap);
        body.extend_from_slice(&self.trailing);

        let mut head = [0u32; 16];
        head[0] = self.version;
        head[1] = self.width;
        head[2] = self.height;
        head[3] = map_off;
        head[4] = attr_off;
        head[5] = gfx_off;
        head[6] = self.tiles.len() as u32;
        head[7] = self.features.len() as u32;
        head[8] = names_off;
        head[9] = self.sea_level;
        if legacy {
            head[10..14].copy_from_slice(&self.pads);
            head[14] = mini_off;
            head[15] = self.minimap_flags;
        } else {
            head[10] = mini_off;
            head[11] = self.minimap_flags;
            head[12..16].copy_from_slice(&self.pads);
        }
        let mut out: Vec<u8> = head.iter().flat_map(|w| w.to_le_bytes()).collect();
        out.extend_from_slice(&body);
        out
    }
}

/// The corpus example map, if present (prints a note otherwise).
pub fn corpus_map() -> Option<Vec<u8>> {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/corpus/game/maps/example.tnt");
    match std::fs::read(&p) {
        Ok(b) => Some(b),
        Err(_) => {
            println!(
                "note: corpus map {} absent; corpus checks skipped",
                p.display()
            );
            None
        }
    }
}
