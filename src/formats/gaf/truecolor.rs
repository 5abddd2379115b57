//! Truecolor frames of TA: Kingdoms `.taf` files: the two 16-bit pixel formats named by the
//! frame format byte (+9), and the exact expansion of their words to 8-bit RGBA and back.

/// A 16-bit ARGB pixel format of a truecolor frame (the frame's +9 byte).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Argb {
    /// Format byte 4: A 15–12, R 11–8, G 7–4, B 3–0.
    Argb4444,
    /// Format byte 5: A bit 15 (0 = transparent), R 14–10, G 9–5, B 4–0.
    Argb1555,
}

/// Format byte of ARGB4444 frames.
pub const FORMAT_ARGB4444: u8 = 4;
/// Format byte of ARGB1555 frames.
pub const FORMAT_ARGB1555: u8 = 5;

impl Argb {
    /// The format a frame format byte names (`None` for paletted storage).
    pub fn from_byte(b: u8) -> Option<Argb> {
        match b {
            FORMAT_ARGB4444 => Some(Argb::Argb4444),
            FORMAT_ARGB1555 => Some(Argb::Argb1555),
            _ => None,
        }
    }

    /// The frame format byte (+9) of this format.
    pub fn byte(self) -> u8 {
        match self {
            Argb::Argb4444 => FORMAT_ARGB4444,
            Argb::Argb1555 => FORMAT_ARGB1555,
        }
    }

    /// The lower-case name used in frames.csv (`argb4444`, `argb1555`).
    pub fn name(self) -> &'static str {
        match self {
            Argb::Argb4444 => "argb4444",
            Argb::Argb1555 => "argb1555",
        }
    }

    /// The format named `name` (case-insensitive).
    pub fn from_name(name: &str) -> Option<Argb> {
        match name.to_ascii_lowercase().as_str() {
            "argb4444" => Some(Argb::Argb4444),
            "argb1555" => Some(Argb::Argb1555),
            _ => None,
        }
    }

    /// The word as 8-bit `[r, g, b, a]`, each channel widened by bit replication
    /// (4 bits: `v<<4|v`; 5 bits: `v<<3|v>>2`; the 1-bit alpha: 0 or 255).
    pub fn expand(self, w: u16) -> [u8; 4] {
        match self {
            Argb::Argb4444 => {
                let c = |shift: u16| {
                    let v = ((w >> shift) & 0xF) as u8;
                    v << 4 | v
                };
                [c(8), c(4), c(0), c(12)]
            }
            Argb::Argb1555 => {
                let c = |shift: u16| {
                    let v = ((w >> shift) & 0x1F) as u8;
                    v << 3 | v >> 2
                };
                let a = if w & 0x8000 != 0 { 255 } else { 0 };
                [c(10), c(5), c(0), a]
            }
        }
    }

    /// The word nearest to 8-bit `[r, g, b, a]`: the inverse of [`Argb::expand`] on its
    /// outputs; any other channel value is rounded to the nearest representable level
    /// (ARGB1555 alpha: below 128 is transparent).
    pub fn quantise(self, [r, g, b, a]: [u8; 4]) -> u16 {
        match self {
            Argb::Argb4444 => {
                // levels are v·17; nearest = round(x / 17)
                let q = |x: u8| (u16::from(x) + 8) / 17;
                q(a) << 12 | q(r) << 8 | q(g) << 4 | q(b)
            }
            Argb::Argb1555 => {
                let q = |x: u8| {
                    // levels v<<3|v>>2 are not evenly spaced: pick the nearest of the two
                    // levels around x
                    let x = i32::from(x);
                    let level = |v: i32| (v << 3) | (v >> 2);
                    let lo = (x * 31 / 255).clamp(0, 31);
                    (lo.saturating_sub(1)..=(lo + 1).min(31))
                        .min_by_key(|&v| (level(v) - x).abs())
                        .unwrap_or(lo) as u16
                };
                let alpha = if a >= 128 { 0x8000 } else { 0 };
                alpha | q(r) << 10 | q(g) << 5 | q(b)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_word_expands_and_quantises_back() {
        for f in [Argb::Argb4444, Argb::Argb1555] {
            for w in 0..=u16::MAX {
                assert_eq!(f.quantise(f.expand(w)), w, "{f:?} {w:#06x}");
            }
        }
    }

    #[test]
    fn expansion_by_hand() {
        assert_eq!(Argb::Argb4444.expand(0x1234), [0x22, 0x33, 0x44, 0x11]);
        assert_eq!(Argb::Argb4444.expand(0xF0A5), [0x00, 0xAA, 0x55, 0xFF]);
        // 1 10000 00001 11111: r=16 -> 132, g=1 -> 8, b=31 -> 255
        assert_eq!(Argb::Argb1555.expand(0xC03F), [132, 8, 255, 255]);
        assert_eq!(Argb::Argb1555.expand(0x7FFF), [255, 255, 255, 0]);
    }

    #[test]
    fn quantisation_rounds_to_the_nearest_level() {
        // 4444: levels 0,17,34…; 8 -> 0, 9 -> 17, 25 -> 17, 26 -> 34
        let q = |x| Argb::Argb4444.quantise([x, 0, 0, 255]) >> 8 & 0xF;
        assert_eq!((q(8), q(9), q(25), q(26)), (0, 1, 1, 2));
        // 1555: levels 0,8,16,24,33,…; 4 -> 0, 5 -> 1 (8), 28 -> 3 (24), 29 -> 4 (33)
        let q = |x| Argb::Argb1555.quantise([x, 0, 0, 255]) >> 10 & 0x1F;
        assert_eq!((q(3), q(5), q(28), q(29)), (0, 1, 3, 4));
        assert_eq!(Argb::Argb1555.quantise([0, 0, 0, 127]) & 0x8000, 0);
        assert_eq!(Argb::Argb1555.quantise([0, 0, 0, 128]) & 0x8000, 0x8000);
    }
}
