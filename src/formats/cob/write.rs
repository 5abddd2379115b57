//! The writer: the canonical layout every known compiler produces.

use super::layout::Header;
use super::{latin1_encode, Cob, CobError, VERSION_TAK};
use crate::formats::bytes::PutLe;

/// Where each section goes for a model: the header a writer emits (also what the reader
/// expects of a file).
pub(super) fn canonical_header(
    cob_version: u32,
    counts: (usize, usize, usize),
    code_words: usize,
    static_vars: u32,
    unknown_0x14: u32,
) -> Result<Header, CobError> {
    let (ns, np, nsnd) = counts;
    let too_big = || CobError::Refused("the file would pass 4 GiB".into());
    let u = |v: u64| u32::try_from(v).map_err(|_| too_big());
    let mut h = Header {
        version: cob_version,
        ..Header::default()
    };
    let code_at = h.byte_len() as u64;
    let starts_at = code_at + 4 * code_words as u64;
    let snames_at = starts_at + 4 * ns as u64;
    let pnames_at = snames_at + 4 * ns as u64;
    let pend = pnames_at + 4 * np as u64;
    let names_at = if cob_version == VERSION_TAK {
        pend + 4 * nsnd as u64
    } else {
        pend
    };
    h.num_scripts = u(ns as u64)?;
    h.num_pieces = u(np as u64)?;
    h.code_words = u(code_words as u64)?;
    h.static_vars = static_vars;
    h.unknown_0x14 = unknown_0x14;
    h.script_starts_at = u(starts_at)?;
    h.script_names_at = u(snames_at)?;
    h.piece_names_at = u(pnames_at)?;
    h.code_at = u(code_at)?;
    h.names_at = u(names_at)?;
    if cob_version == VERSION_TAK {
        h.sound_names_at = u(pend)?;
        h.num_sounds = u(nsnd as u64)?;
    }
    Ok(h)
}

/// Writes `cob` in the canonical layout; an unedited parsed file comes back byte for byte.
///
/// Refused: a script start past the code area, sound names in a layout without a sound
/// table (version other than 6), a name with a NUL or a character above U+00FF, a file past
/// 4 GiB.
pub fn write(cob: &Cob) -> Result<Vec<u8>, CobError> {
    if !cob.has_sound_table() && !cob.sounds.is_empty() {
        return Err(CobError::Refused(format!(
            "version {} has no sound-name table, but {} sound names are set (version 6 has one)",
            cob.version,
            cob.sounds.len()
        )));
    }
    for s in &cob.scripts {
        if s.start as usize > cob.code.len() {
            return Err(CobError::Refused(format!(
                "script {:?} starts at word {}, past the {}-word code area",
                s.name,
                s.start,
                cob.code.len()
            )));
        }
    }
    let enc = |what: &str, s: &str| {
        latin1_encode(s).ok_or_else(|| {
            CobError::Refused(format!(
                "{what} name {s:?} has a NUL or a character outside Latin-1"
            ))
        })
    };
    let mut names: Vec<Vec<u8>> = Vec::new();
    for s in &cob.scripts {
        names.push(enc("script", &s.name)?);
    }
    for p in &cob.pieces {
        names.push(enc("piece", p)?);
    }
    for s in &cob.sounds {
        names.push(enc("sound", s)?);
    }
    let h = canonical_header(
        cob.version,
        (cob.scripts.len(), cob.pieces.len(), cob.sounds.len()),
        cob.code.len(),
        cob.static_vars,
        cob.unknown_0x14,
    )?;
    let pool: u64 = names.iter().map(|n| n.len() as u64 + 1).sum();
    let total = u64::from(h.names_at) + pool + cob.trailing.len() as u64;
    let total = u32::try_from(total)
        .map_err(|_| CobError::Refused("the file would pass 4 GiB".into()))?
        as usize;
    let mut out = Vec::with_capacity(total);
    for w in h.words() {
        out.put_u32(w);
    }
    for &w in &cob.code {
        out.put_u32(w);
    }
    for s in &cob.scripts {
        out.put_u32(s.start);
    }
    let mut at = h.names_at;
    for n in &names {
        out.put_u32(at);
        // Fits: the total was checked against u32 above.
        at = at.wrapping_add(n.len() as u32 + 1);
    }
    for n in &names {
        out.extend_from_slice(n);
        out.push(0);
    }
    out.extend_from_slice(&cob.trailing);
    debug_assert_eq!(out.len(), total);
    Ok(out)
}
