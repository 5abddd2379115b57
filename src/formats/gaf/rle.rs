//! TA's row run-length encoding.
//!
//! A row is `u16 byte_count` then exactly that many command bytes. Command byte `m`:
//! `m & 1` skips `m >> 1` transparent pixels (≤ 127); else `m & 2` repeats the next byte
//! `(m >> 2) + 1` times (≤ 64); else copies the next `(m >> 2) + 1` bytes (≤ 64). Repeated
//! and literal pixels are drawn even when they equal the key.

/// Longest skip one command can hold.
pub const MAX_SKIP: usize = 127;
/// Longest repeat one command can hold.
pub const MAX_REPEAT: usize = 64;
/// Longest literal one command can hold.
pub const MAX_LITERAL: usize = 64;

/// How a row decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowOutcome {
    /// Pixels the commands covered (before clamping to the width).
    pub covered: usize,
}

/// A row whose commands need bytes past its `byte_count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowError {
    /// Offset of the offending command within the row's command bytes.
    pub at: usize,
    /// Bytes the command needs after the command byte.
    pub needs: usize,
}

/// Opaque pixels one command draws from pixel `x` on.
enum Run<'a> {
    /// `n` pixels of one index.
    Repeat { x: usize, n: usize, v: u8 },
    /// These indices.
    Literal { x: usize, lit: &'a [u8] },
}

/// Walks one row's command bytes, handing each drawn run to `run`: the pixels covered, or
/// the command that needs bytes past the row. The one reading of the commands, for
/// [`decode_row`] and [`scan_row`].
fn walk_row<'a>(cmds: &'a [u8], mut run: impl FnMut(Run<'a>)) -> Result<RowOutcome, RowError> {
    let mut x = 0usize;
    let mut i = 0usize;
    while let Some(&m) = cmds.get(i) {
        if m & 1 != 0 {
            x += usize::from(m >> 1);
            i += 1;
        } else if m & 2 != 0 {
            let n = usize::from(m >> 2) + 1;
            let v = *cmds.get(i + 1).ok_or(RowError { at: i, needs: 1 })?;
            run(Run::Repeat { x, n, v });
            x += n;
            i += 2;
        } else {
            let n = usize::from(m >> 2) + 1;
            let lit = cmds
                .get(i + 1..i + 1 + n)
                .ok_or(RowError { at: i, needs: n })?;
            run(Run::Literal { x, lit });
            x += n;
            i += 1 + n;
        }
    }
    Ok(RowOutcome { covered: x })
}

/// Decodes one row's command bytes into `indices`/`opaque` (both `width` long, pre-filled
/// transparent). Pixels past the width are dropped (clamped); the caller reports rows whose
/// `covered` differs from the width.
pub fn decode_row(
    cmds: &[u8],
    indices: &mut [u8],
    opaque: &mut [bool],
) -> Result<RowOutcome, RowError> {
    let width = indices.len().min(opaque.len());
    walk_row(cmds, |r| match r {
        Run::Repeat { x, n, v } => {
            for p in x..(x + n).min(width) {
                indices[p] = v;
                opaque[p] = true;
            }
        }
        Run::Literal { x, lit } => {
            for (k, &v) in lit.iter().enumerate() {
                let p = x + k;
                if p < width {
                    indices[p] = v;
                    opaque[p] = true;
                }
            }
        }
    })
}

/// What [`decode_row`] gives for `cmds` (the pixels covered, or the command that needs
/// bytes past the row), without drawing them.
pub fn scan_row(cmds: &[u8]) -> Result<RowOutcome, RowError> {
    walk_row(cmds, |_| {})
}

/// Encodes one row (indices with their opacity) as `u16 byte_count` + commands, appending to
/// `out`; `false` (and `out` unchanged) if the commands would exceed the u16 byte count.
/// Transparent runs become skips (a trailing transparent run too, so the row always
/// covers its width); opaque runs of [`MIN_REPEAT`] or more equal pixels become repeats, the
/// rest literals.
pub fn encode_row(indices: &[u8], opaque: &[bool], out: &mut Vec<u8>) -> bool {
    let start = out.len();
    out.extend_from_slice(&[0, 0]);
    let n = indices.len().min(opaque.len());
    let mut x = 0usize;
    let mut lit_start: Option<usize> = None;
    let flush_lit = |out: &mut Vec<u8>, from: usize, to: usize| {
        let mut s = from;
        while s < to {
            let len = (to - s).min(MAX_LITERAL);
            out.push(((len - 1) << 2) as u8);
            out.extend_from_slice(&indices[s..s + len]);
            s += len;
        }
    };
    while x < n {
        if !opaque[x] {
            if let Some(s) = lit_start.take() {
                flush_lit(out, s, x);
            }
            let mut run = 0;
            while x + run < n && !opaque[x + run] {
                run += 1;
            }
            let mut left = run;
            while left > 0 {
                let k = left.min(MAX_SKIP);
                out.push(((k << 1) | 1) as u8);
                left -= k;
            }
            x += run;
            continue;
        }
        let v = indices[x];
        let mut run = 1;
        while x + run < n && opaque[x + run] && indices[x + run] == v {
            run += 1;
        }
        if run >= MIN_REPEAT {
            if let Some(s) = lit_start.take() {
                flush_lit(out, s, x);
            }
            let mut left = run;
            while left > 0 {
                let k = left.min(MAX_REPEAT);
                if k < MIN_REPEAT && left < run {
                    // A short tail of a long run: cheaper as a literal.
                    lit_start = Some(x + run - left);
                    break;
                }
                out.push((((k - 1) << 2) | 2) as u8);
                out.push(v);
                left -= k;
            }
            x += run;
        } else {
            if lit_start.is_none() {
                lit_start = Some(x);
            }
            x += run;
        }
    }
    if let Some(s) = lit_start {
        flush_lit(out, s, n);
    }
    let Ok(len) = u16::try_from(out.len() - start - 2) else {
        out.truncate(start);
        return false;
    };
    out[start..start + 2].copy_from_slice(&len.to_le_bytes());
    true
}

/// Shortest run of equal opaque pixels written as a repeat rather than a literal.
pub const MIN_REPEAT: usize = 2;

/// Encodes a whole frame (`width × height`), row by row; `Err(row)` names a row whose
/// commands would not fit the u16 byte count.
pub fn encode(
    width: usize,
    height: usize,
    indices: &[u8],
    opaque: &[bool],
) -> Result<Vec<u8>, usize> {
    let mut out = Vec::with_capacity(indices.len() / 2 + 2 * height);
    for y in 0..height {
        let (a, b) = (y * width, (y + 1) * width);
        let (Some(row), Some(orow)) = (indices.get(a..b), opaque.get(a..b)) else {
            return Err(y);
        };
        if !encode_row(row, orow, &mut out) {
            return Err(y);
        }
    }
    Ok(out)
}
