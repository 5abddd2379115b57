//! TA's LZ77 variant (SQSH method 1).
//!
//! A 4096-byte window, zero-filled, write position starting at 1. Tag bytes are read LSB
//! first: a 0 bit copies one literal byte; a 1 bit reads a u16 `v`: `v >> 4` is an absolute
//! window position (0 ends the stream), `(v & 15) + 2` bytes are copied from it one at a
//! time, each also written to the window. Input byte `p` of a chunk occupies window cell
//! `(p + 1) & 0xFFF`.

use thiserror::Error;

const WINDOW: usize = 4096;
const MIN_MATCH: usize = 2;
const MAX_MATCH: usize = 17;

/// An LZ77 stream that cannot be decoded; offsets are relative to the payload.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Lz77Error {
    /// The input ended before the end marker.
    #[error("lz77: input ends at byte {offset} before the end marker")]
    Truncated {
        /// Where the missing byte would be.
        offset: usize,
    },
    /// The stream produces more than the declared size.
    #[error("lz77: output passes the declared {expected} bytes (input byte {offset})")]
    TooLong {
        /// The declared size.
        expected: usize,
        /// Input position when it happened.
        offset: usize,
    },
    /// The stream ended short of the declared size.
    #[error("lz77: end marker at byte {offset} after {found} bytes, {expected} declared")]
    TooShort {
        /// The declared size.
        expected: usize,
        /// Bytes produced.
        found: usize,
        /// Where the marker was.
        offset: usize,
    },
}

/// Decodes one chunk that must produce exactly `expected` bytes. Stops at the end marker;
/// bytes after it are ignored (Cavedog's archives have one). Returns the output and the
/// input length consumed (marker included).
pub fn decode(input: &[u8], expected: usize) -> Result<(Vec<u8>, usize), Lz77Error> {
    let mut out = Vec::with_capacity(expected);
    let mut window = [0u8; WINDOW];
    let mut w = 1usize;
    let mut pos = 0usize;
    let byte = |pos: usize| {
        input
            .get(pos)
            .copied()
            .ok_or(Lz77Error::Truncated { offset: pos })
    };
    loop {
        let tag = byte(pos)?;
        pos += 1;
        for bit in 0..8 {
            if tag & (1 << bit) == 0 {
                let b = byte(pos)?;
                pos += 1;
                if out.len() >= expected {
                    return Err(Lz77Error::TooLong {
                        expected,
                        offset: pos - 1,
                    });
                }
                out.push(b);
                window[w] = b;
                w = (w + 1) & (WINDOW - 1);
            } else {
                let v = u16::from_le_bytes([byte(pos)?, byte(pos + 1)?]);
                pos += 2;
                let mut s = usize::from(v >> 4);
                if s == 0 {
                    if out.len() != expected {
                        return Err(Lz77Error::TooShort {
                            expected,
                            found: out.len(),
                            offset: pos - 2,
                        });
                    }
                    return Ok((out, pos));
                }
                let n = usize::from(v & 0xF) + MIN_MATCH;
                if out.len() + n > expected {
                    return Err(Lz77Error::TooLong {
                        expected,
                        offset: pos - 2,
                    });
                }
                for _ in 0..n {
                    let b = window[s];
                    out.push(b);
                    window[w] = b;
                    s = (s + 1) & (WINDOW - 1);
                    w = (w + 1) & (WINDOW - 1);
                }
            }
        }
    }
}

/// Encodes one chunk (any length, normally ≤ 64 KiB) greedily with hash chains; ends with
/// the `0x0000` marker and no extra byte.
pub fn encode(input: &[u8]) -> Vec<u8> {
    const HASH_BITS: u32 = 14;
    const CHAIN: usize = 48;
    let hash = |p: usize| -> usize {
        let v = u32::from(input[p])
            | u32::from(input[p + 1]) << 8
            | u32::from(*input.get(p + 2).unwrap_or(&0)) << 16;
        (v.wrapping_mul(0x9E37_79B1) >> (32 - HASH_BITS)) as usize
    };
    let mut head = vec![usize::MAX; 1 << HASH_BITS];
    let mut prev = vec![usize::MAX; input.len()];
    let mut out = Vec::with_capacity(input.len() + input.len() / 8 + 4);
    let mut tag_at = 0usize;
    let mut bits = 8u32; // forces a new tag byte first
    let mut push_item = |out: &mut Vec<u8>, flag: bool, item: &[u8]| {
        if bits == 8 {
            tag_at = out.len();
            out.push(0);
            bits = 0;
        }
        if flag {
            out[tag_at] |= 1 << bits;
        }
        bits += 1;
        out.extend_from_slice(item);
    };
    let insert = |head: &mut [usize], prev: &mut [usize], p: usize| {
        if p + 1 < input.len() {
            let h = hash(p);
            prev[p] = head[h];
            head[h] = p;
        }
    };
    let mut p = 0usize;
    while p < input.len() {
        let mut best_len = 0usize;
        let mut best_pos = 0usize;
        if p + MIN_MATCH <= input.len() {
            let max = MAX_MATCH.min(input.len() - p);
            let mut cand = head[hash(p)];
            let mut steps = 0;
            while cand != usize::MAX && steps < CHAIN {
                let dist = p - cand;
                if dist >= WINDOW {
                    break;
                }
                // Cell 0 is the end marker; it can never be a match source.
                if (cand + 1) % WINDOW != 0 {
                    let mut l = 0;
                    while l < max && input[cand + l] == input[p + l] {
                        l += 1;
                    }
                    if l > best_len {
                        best_len = l;
                        best_pos = cand;
                        if l == max {
                            break;
                        }
                    }
                }
                cand = prev[cand];
                steps += 1;
            }
        }
        if best_len >= MIN_MATCH {
            let s = ((best_pos + 1) % WINDOW) as u16;
            let v = s << 4 | (best_len - MIN_MATCH) as u16;
            push_item(&mut out, true, &v.to_le_bytes());
            for q in p..p + best_len {
                insert(&mut head, &mut prev, q);
            }
            p += best_len;
        } else {
            push_item(&mut out, false, &[input[p]]);
            insert(&mut head, &mut prev, p);
            p += 1;
        }
    }
    push_item(&mut out, true, &[0, 0]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_made_stream() {
        // Tag 0b0000_1100: literal 'a' (cell 1), literal 'b' (cell 2), a match of 4 from cell
        // 1 (overlapping: a b a b), then the end marker.
        let v: u16 = 1 << 4 | (4 - 2);
        let mut s = vec![0b0000_1100, b'a', b'b'];
        s.extend_from_slice(&v.to_le_bytes());
        s.extend_from_slice(&[0, 0]);
        s.push(0xEE); // the extra byte Cavedog's archives carry
        let (out, used) = decode(&s, 6).unwrap();
        assert_eq!(out, b"ababab");
        assert_eq!(used, s.len() - 1);
        assert!(matches!(decode(&s, 7), Err(Lz77Error::TooShort { .. })));
        assert!(matches!(decode(&s, 5), Err(Lz77Error::TooLong { .. })));
        assert!(matches!(
            decode(&s[..5], 6),
            Err(Lz77Error::Truncated { .. })
        ));
    }

    #[test]
    fn encode_round_trips() {
        let mut seed = 7u32;
        let mut data = Vec::new();
        for i in 0..70_000u32 {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            data.push(if i % 7 < 4 {
                (i / 50) as u8
            } else {
                seed as u8 & 0x3
            });
        }
        for len in [
            0usize, 1, 2, 3, 17, 18, 4095, 4096, 4097, 8200, 65_536, 70_000,
        ] {
            let enc = encode(&data[..len]);
            let (dec, used) = decode(&enc, len).unwrap();
            assert_eq!(dec, &data[..len], "len {len}");
            assert_eq!(used, enc.len());
        }
        let zeros = vec![0u8; 65_536];
        let enc = encode(&zeros);
        assert!(enc.len() < 65_536 / 7, "{}", enc.len());
        assert_eq!(decode(&enc, 65_536).unwrap().0, zeros);
    }
}
