//! 256-colour palettes: the built-in TA palette, raw `.pal` files and the palette trailer of
//! 8-bit `.pcx` files, plus colour → index matching.

use std::fmt;

/// The standard Total Annihilation palette (`palettes/PALETTE.PAL`, 256 × R,G,B,0).
pub const TA_PALETTE_BYTES: &[u8; 1024] = include_bytes!("ta_palette.pal");

/// Palette index the game pads minimaps with; never chosen when mapping colours.
pub const MINIMAP_PAD: u8 = 0x64;

/// Why a palette could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PaletteError {
    /// A `.pal` shorter than 1,024 bytes.
    PalTooShort {
        /// Length found.
        len: usize,
    },
    /// A `.pcx` without the 769-byte 256-colour trailer (0x0C then 768 RGB bytes).
    PcxNoPalette {
        /// Length of the file.
        len: usize,
        /// Byte at `len - 769`, if any (should be 0x0C).
        marker: Option<u8>,
    },
}

impl fmt::Display for PaletteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PaletteError::PalTooShort { len } => {
                write!(f, "palette: .pal has {len} bytes, needs at least 1024 (256 × RGBx)")
            }
            PaletteError::PcxNoPalette { len, marker } => match marker {
                Some(m) => write!(
                    f,
                    "palette: .pcx byte at offset {:#x} is {m:#04x}, not the 0x0c marker of a 256-colour palette",
                    len - 769
                ),
                None => write!(f, "palette: .pcx has {len} bytes, too short for a 769-byte palette trailer"),
            },
        }
    }
}

impl std::error::Error for PaletteError {}

/// 256 RGB colours.
#[derive(Clone, PartialEq, Eq)]
pub struct Palette {
    /// The colours, index → (r, g, b).
    pub colors: [[u8; 3]; 256],
}

impl fmt::Debug for Palette {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Palette({:?}, …)", &self.colors[..4])
    }
}

impl Default for Palette {
    fn default() -> Self {
        Palette::ta()
    }
}

impl Palette {
    /// The built-in TA palette.
    pub fn ta() -> Palette {
        // The embedded file is exactly 1024 bytes, so this cannot fail.
        Palette::from_rgbx(TA_PALETTE_BYTES)
    }

    fn from_rgbx(data: &[u8; 1024]) -> Palette {
        let mut colors = [[0u8; 3]; 256];
        for (c, quad) in colors.iter_mut().zip(data.chunks_exact(4)) {
            c.copy_from_slice(&quad[..3]);
        }
        Palette { colors }
    }

    /// A `.pal` file: at least 1,024 bytes, the first 1,024 read as 256 × (R, G, B, x).
    pub fn from_pal(data: &[u8]) -> Result<Palette, PaletteError> {
        let head: &[u8; 1024] = data
            .get(..1024)
            .and_then(|s| s.try_into().ok())
            .ok_or(PaletteError::PalTooShort { len: data.len() })?;
        Ok(Palette::from_rgbx(head))
    }

    /// The trailing palette of an 8-bit `.pcx`: the last 769 bytes, 0x0C then 768 RGB bytes.
    pub fn from_pcx(data: &[u8]) -> Result<Palette, PaletteError> {
        let len = data.len();
        let start = len
            .checked_sub(769)
            .ok_or(PaletteError::PcxNoPalette { len, marker: None })?;
        let trailer = &data[start..];
        if trailer[0] != 0x0C {
            return Err(PaletteError::PcxNoPalette {
                len,
                marker: Some(trailer[0]),
            });
        }
        let mut colors = [[0u8; 3]; 256];
        for (c, rgb) in colors.iter_mut().zip(trailer[1..].chunks_exact(3)) {
            c.copy_from_slice(rgb);
        }
        Ok(Palette { colors })
    }

    /// Reads a palette by its file name's extension (`.pcx` trailer, anything else `.pal`).
    pub fn from_file_bytes(name: &str, data: &[u8]) -> Result<Palette, PaletteError> {
        if let Ok(rgb) = <&[u8; 768]>::try_from(data) {
            // exactly 768 bytes: a raw palette, whatever the name (too short for a PCX)
            return Ok(Palette::from_rgb(rgb));
        }
        // a `.pal` named `.pcx` (Cavedog's GUIPAL.PCX): 1,024 bytes, no PCX header
        if name.to_ascii_lowercase().ends_with(".pcx")
            && !(data.len() == 1024 && data.first() != Some(&0x0a))
        {
            Palette::from_pcx(data)
        } else {
            Palette::from_pal(data)
        }
    }

    /// A raw palette: 256 × R, G, B.
    pub fn from_rgb(data: &[u8; 768]) -> Palette {
        let mut colors = [[0u8; 3]; 256];
        for (c, t) in colors.iter_mut().zip(data.chunks_exact(3)) {
            c.copy_from_slice(t);
        }
        Palette { colors }
    }

    /// The 1,024-byte `.pal` form (R, G, B, 0).
    pub fn to_pal(&self) -> Vec<u8> {
        self.colors
            .iter()
            .flat_map(|c| [c[0], c[1], c[2], 0])
            .collect()
    }

    /// 768 bytes R, G, B for PNG `PLTE` chunks.
    pub fn rgb_bytes(&self) -> Vec<u8> {
        self.colors.iter().flatten().copied().collect()
    }

    /// CRC-32 of the 768 RGB bytes (how a dump records which palette its PNGs use).
    pub fn crc32(&self) -> u32 {
        crc32fast::hash(self.colors.as_flattened())
    }

    /// The index whose colour is nearest (squared RGB distance) to `rgb`, never one of `avoid`.
    /// Ties go to the lowest index, so duplicated palette entries map to their first copy.
    pub fn nearest(&self, rgb: [u8; 3], avoid: &[u8]) -> u8 {
        let mut best = (u32::MAX, 0u8);
        for (i, c) in self.colors.iter().enumerate() {
            let i = i as u8;
            if avoid.contains(&i) {
                continue;
            }
            let d = |a: u8, b: u8| {
                let x = i32::from(a) - i32::from(b);
                (x * x) as u32
            };
            let dist = d(c[0], rgb[0]) + d(c[1], rgb[1]) + d(c[2], rgb[2]);
            if dist < best.0 {
                best = (dist, i);
                if dist == 0 {
                    break;
                }
            }
        }
        best.1
    }
}

/// A memo of [`Palette::nearest`] for repeated colours (images use few distinct colours).
pub struct NearestCache<'p> {
    palette: &'p Palette,
    avoid: Vec<u8>,
    memo: std::collections::HashMap<[u8; 3], u8>,
}

impl<'p> NearestCache<'p> {
    /// Maps colours to `palette` indices other than `avoid`.
    pub fn new(palette: &'p Palette, avoid: &[u8]) -> Self {
        NearestCache {
            palette,
            avoid: avoid.to_vec(),
            memo: Default::default(),
        }
    }

    /// Nearest index for `rgb`.
    pub fn get(&mut self, rgb: [u8; 3]) -> u8 {
        let (p, avoid) = (self.palette, &self.avoid);
        *self
            .memo
            .entry(rgb)
            .or_insert_with(|| p.nearest(rgb, avoid))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_palette_matches_known_entries() {
        let p = Palette::ta();
        // PROVENANCE.md: entry 9 = (84, 84, 252).
        assert_eq!(p.colors[9], [84, 84, 252]);
        assert_eq!(p.to_pal(), TA_PALETTE_BYTES.to_vec());
    }

    #[test]
    fn pal_and_pcx_parsing() {
        assert!(matches!(
            Palette::from_pal(&[0; 1000]),
            Err(PaletteError::PalTooShort { len: 1000 })
        ));
        let mut pal = vec![0u8; 1030];
        pal[4] = 7;
        assert_eq!(Palette::from_pal(&pal).unwrap().colors[1], [7, 0, 0]);

        let mut pcx = vec![0xAAu8; 128];
        pcx.push(0x0C);
        for i in 0..256u32 {
            pcx.extend_from_slice(&[i as u8, 0, 255 - i as u8]);
        }
        let p = Palette::from_pcx(&pcx).unwrap();
        assert_eq!(p.colors[3], [3, 0, 252]);
        let n = pcx.len();
        pcx[n - 769] = 0x0A;
        assert!(matches!(
            Palette::from_pcx(&pcx),
            Err(PaletteError::PcxNoPalette {
                marker: Some(0x0A),
                ..
            })
        ));
        assert!(Palette::from_pcx(&[0x0C; 10]).is_err());
    }

    #[test]
    fn nearest_avoids_and_prefers_first_duplicate() {
        let p = Palette::ta();
        let c = p.colors[9];
        assert_eq!(p.nearest(c, &[]), 9);
        assert_ne!(p.nearest(c, &[9]), 9);
        // Every colour maps to the first index holding it.
        for (i, col) in p.colors.iter().enumerate() {
            let first = p.colors.iter().position(|x| x == col).unwrap();
            assert_eq!(p.nearest(*col, &[]) as usize, first, "index {i}");
        }
    }
}
