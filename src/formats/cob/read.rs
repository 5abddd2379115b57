//! The reader: checks the header against the canonical layout, then reads each table.

use super::layout::{Header, FIELD_NAMES, HEADER_V4_LEN};
use super::write::canonical_header;
use super::{latin1_decode, Cob, CobError, Limits, Script, VERSION_7, VERSION_TA, VERSION_TAK};
use crate::formats::bytes::Bytes;

fn oob(
    structure: impl Into<String>,
) -> impl FnOnce(crate::formats::bytes::OutOfBounds) -> CobError {
    let structure = structure.into();
    move |source| CobError::OutOfBounds { structure, source }
}

fn over(structure: &str, offset: u64, value: u64, limit: u64) -> Result<(), CobError> {
    if value > limit {
        return Err(CobError::OverLimit {
            structure: structure.into(),
            offset,
            value,
            limit,
        });
    }
    Ok(())
}

/// Reads a COB. Every offset and count is checked against the file and `limits` before
/// anything is allocated; a layout other than the canonical one is refused
/// ([`CobError::Layout`]).
pub fn parse(data: &[u8], limits: &Limits) -> Result<Cob, CobError> {
    over(
        "file length",
        0,
        data.len() as u64,
        limits.max_file_len as u64,
    )?;
    let b = Bytes::new(data);
    let version = b.u32(0).map_err(oob("header version"))?;
    if !matches!(version, VERSION_TA | VERSION_TAK | VERSION_7) {
        return Err(CobError::UnknownVersion(version));
    }
    let nwords = if version == VERSION_TAK { 13 } else { 11 };
    let mut words = Vec::with_capacity(nwords);
    for (i, field) in FIELD_NAMES.iter().take(nwords).enumerate() {
        words.push(b.u32(4 * i as u64).map_err(oob(*field))?);
    }
    let h = Header::from_words(&words);
    // Counts: each table entry is 4 bytes of the file, so bound them by its length first.
    let room = (data.len() / 4) as u64;
    over("header script count", 4, u64::from(h.num_scripts), room)?;
    over("header piece count", 8, u64::from(h.num_pieces), room)?;
    over("header code length", 12, u64::from(h.code_words), room)?;
    over("header sound count", 48, u64::from(h.num_sounds), room)?;
    let names = u64::from(h.num_scripts) + u64::from(h.num_pieces) + u64::from(h.num_sounds);
    over(
        "script, piece and sound counts",
        4,
        names,
        limits.max_names as u64,
    )?;
    let expect = canonical_header(
        version,
        (
            h.num_scripts as usize,
            h.num_pieces as usize,
            h.num_sounds as usize,
        ),
        h.code_words as usize,
        h.static_vars,
        h.unknown_0x14,
    )?;
    for (i, (&e, &f)) in expect.words().iter().zip(h.words().iter()).enumerate() {
        if e != f {
            return Err(CobError::Layout {
                structure: FIELD_NAMES.get(i).copied().unwrap_or("header").into(),
                offset: 4 * i as u64,
                expected: e.into(),
                found: f.into(),
            });
        }
    }
    debug_assert!(h.byte_len() >= HEADER_V4_LEN);
    let code_bytes = b
        .slice(u64::from(h.code_at), 4 * u64::from(h.code_words))
        .map_err(oob("code area"))?;
    let code: Vec<u32> = code_bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let table = |at: u32, n: u32, what: &str| -> Result<Vec<u32>, CobError> {
        let s = b
            .slice(u64::from(at), 4 * u64::from(n))
            .map_err(oob(what.to_string()))?;
        Ok(s.chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    };
    let starts = table(h.script_starts_at, h.num_scripts, "script start table")?;
    for (i, &s) in starts.iter().enumerate() {
        if s > h.code_words {
            return Err(CobError::Malformed {
                structure: format!("script start {i}"),
                offset: u64::from(h.script_starts_at) + 4 * i as u64,
                message: format!("word {s} is past the {}-word code area", h.code_words),
            });
        }
    }
    // The name offset tables are contiguous: scripts, pieces, sounds.
    let n_all = h.num_scripts + h.num_pieces + h.num_sounds;
    let offsets = table(h.script_names_at, n_all, "name offset tables")?;
    let mut at = u64::from(h.names_at);
    let mut names = Vec::with_capacity(offsets.len());
    for (i, &o) in offsets.iter().enumerate() {
        let entry_at = u64::from(h.script_names_at) + 4 * i as u64;
        let what = name_kind(i, h.num_scripts as usize, h.num_pieces as usize);
        if u64::from(o) != at {
            return Err(CobError::Layout {
                structure: format!("{what} name offset"),
                offset: entry_at,
                expected: at,
                found: o.into(),
            });
        }
        let rest = b
            .slice(at, (data.len() as u64).saturating_sub(at))
            .map_err(oob(format!("{what} name")))?;
        let window = &rest[..rest.len().min(limits.max_name_len + 1)];
        let Some(len) = window.iter().position(|&c| c == 0) else {
            return Err(CobError::Malformed {
                structure: format!("{what} name"),
                offset: at,
                message: if rest.len() > limits.max_name_len {
                    format!("no NUL within {} bytes", limits.max_name_len)
                } else {
                    "no NUL before the end of the file".into()
                },
            });
        };
        names.push(latin1_decode(&window[..len]));
        at += len as u64 + 1;
    }
    let trailing = data.get(at as usize..).unwrap_or_default().to_vec();
    let mut names = names.into_iter();
    let scripts = starts
        .into_iter()
        .zip(names.by_ref())
        .map(|(start, name)| Script { name, start })
        .collect();
    let pieces = names.by_ref().take(h.num_pieces as usize).collect();
    let sounds = names.collect();
    Ok(Cob {
        version,
        static_vars: h.static_vars,
        unknown_0x14: h.unknown_0x14,
        code,
        scripts,
        pieces,
        sounds,
        trailing,
    })
}

fn name_kind(i: usize, ns: usize, np: usize) -> String {
    if i < ns {
        format!("script {i}")
    } else if i < ns + np {
        format!("piece {}", i - ns)
    } else {
        format!("sound {}", i - ns - np)
    }
}
