//! [`build`]: a dump folder back to a GAF (sequence.csv, frames.csv, layers.csv and the
//! frame images, with metadata.json for what the CSVs cannot hold).

use crate::formats::gaf::{self, Content, Frame, FrameEntry, Gaf, Pixels, Sequence};
use crate::formats::palette::Palette;
use crate::view::image::{decode_gif, decode_png, to_indices_as};
use crate::view::{FileSet, ViewError};
use std::collections::HashMap;

use super::meta::{FrameExtras, Metadata};
use super::render::image_fingerprint;
use super::reuse::reuse_payloads;
use crate::view::csv::{csv_err, unhex};

/// How frames are stored when built.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Storage {
    /// As frames.csv says; frames without a value are compressed, except in textures/*.gaf
    /// and anims/vismasks.gaf, which are always raw.
    #[default]
    Auto,
    /// Every frame raw.
    Raw,
    /// Every frame RLE.
    Compressed,
}

/// Options of [`build`].
#[derive(Debug, Clone, Default)]
pub struct BuildOptions<'a> {
    /// Palette images are mapped to (must be the one the dump used for indexed PNGs to be
    /// copied as they are).
    pub palette: Palette,
    /// Storage policy.
    pub storage: Storage,
    /// Path of the GAF being built relative to the game folder (textures/*.gaf rule).
    pub asset_path: Option<String>,
    /// Frames equal (pixels and fields) to a frame of this GAF reuse its stored bytes
    /// (borrowed: a commit builds from the view the mount holds, not a copy of it).
    pub base: Option<&'a Gaf>,
}

/// Result of [`build`]: the GAF and warnings (skipped folders).
#[derive(Debug)]
pub struct Built {
    /// The rebuilt GAF.
    pub gaf: Gaf,
    /// Non-fatal findings.
    pub warnings: Vec<String>,
}

/// True for paths the game reads as plain pixel arrays (frames must stay raw).
pub fn always_raw(asset_path: &str) -> bool {
    let p = asset_path.replace('\\', "/").to_ascii_lowercase();
    let in_textures = p.starts_with("textures/") || p.contains("/textures/");
    in_textures || p.ends_with("vismasks.gaf")
}

/// Rebuilds a GAF from a dump. Errors name the file and row/column; nothing is partially
/// built.
pub fn build(files: &dyn FileSet, opts: &BuildOptions) -> Result<Built, ViewError> {
    let meta: Metadata = match files.read("metadata.json")? {
        Some(b) => serde_json::from_slice(&b)
            .map_err(|e| ViewError::invalid("metadata.json", format!("not valid metadata: {e}")))?,
        None => Metadata {
            version: gaf::VERSION_STANDARD,
            ..Default::default()
        },
    };
    let trailing = unhex(&meta.trailing_hex)
        .ok_or_else(|| ViewError::invalid("metadata.json", "trailing_hex is not hex"))?;
    let mut warnings = Vec::new();
    let own = format!("{:08x}", opts.palette.crc32());
    if !meta.palette_crc32.is_empty() && meta.palette_crc32 != own {
        warnings.push(format!(
            "the dump's PNGs use the palette {} but this build maps to another one: frames \
             indexed with the dump's palette keep their indices, other images are remapped",
            meta.palette
        ));
    }
    let root = files.list("")?.unwrap_or_default();
    let order: HashMap<&str, usize> = meta
        .sequences
        .iter()
        .enumerate()
        .map(|(i, s)| (s.dir.as_str(), i))
        .collect();
    // the folder each sequence of the base is shown in (as its dump names them): the base's
    // frames at a folder's places are what that folder's unedited files hold
    let base_dirs: HashMap<String, (usize, &Sequence)> = opts
        .base
        .map(|b| {
            crate::view::unique_names(b.sequences.iter().map(|s| s.name_bytes()), super::RESERVED)
                .into_iter()
                .zip(b.sequences.iter().enumerate())
                .collect()
        })
        .unwrap_or_default();
    let mut seqs: Vec<(u64, usize, String, Sequence)> = Vec::new();
    for (dir, is_dir) in root {
        if !is_dir {
            continue;
        }
        let base_seq = base_dirs.get(dir.as_str()).copied();
        // a list the base generates there, untouched: its rows are the base's, taken as
        // they are instead of rendered and parsed (what parsing the rendering gives)
        let listed = |file: String, from_base: bool| -> Result<Option<Input>, ViewError> {
            if from_base && files.generated(&file) {
                return Ok(Some(Input::Base));
            }
            Ok(files.read(&file)?.map(Input::Bytes))
        };
        let has_frames = listed(
            format!("{dir}/frames.csv"),
            base_seq.is_some_and(|(_, s)| rows_from_base(s)),
        )?;
        let has_seq = listed(
            format!("{dir}/sequence.csv"),
            base_seq.is_some_and(|(_, s)| name_from_base(s)),
        )?;
        if has_frames.is_none() && has_seq.is_none() {
            warnings.push(format!("{dir}/: no frames.csv or sequence.csv; skipped"));
            continue;
        }
        let listed = meta.sequences.iter().find(|s| s.dir == dir);
        let raw_name = listed
            .and_then(|s| unhex(&s.name_raw_hex))
            .and_then(|v| <[u8; 32]>::try_from(v).ok());
        // in a dump that lists its sequences, the folder names the sequence: `mv A B`
        // renames it, `cp -r A B` is one new sequence B (sequence.csv's name is A's, copied
        // with it); sequence.csv's name gives the exact bytes where the folder is its safe
        // form (see `names_folder`)
        let folder_named = !meta.sequences.is_empty();
        let inp = Inputs {
            files,
            meta: &meta,
            opts,
        };
        let (index, seq) = build_sequence(
            inp,
            &dir,
            has_seq,
            has_frames,
            raw_name,
            folder_named,
            base_seq,
        )?;
        let pos = order.get(dir.as_str()).copied().unwrap_or(usize::MAX);
        seqs.push((index.unwrap_or(u64::MAX), pos, dir, seq));
    }
    seqs.sort_by(|a, b| (a.0, a.1, &a.2).cmp(&(b.0, b.1, &b.2)));
    let dumped: Vec<&str> = meta.sequences.iter().map(|s| s.dir.as_str()).collect();
    let built_dirs: Vec<String> = seqs.iter().map(|s| s.2.clone()).collect();
    let built_dirs: Vec<&str> = built_dirs.iter().map(String::as_str).collect();
    let layout =
        super::layout::build_layout(meta.layout.as_ref(), opts.base, &dumped, &built_dirs)?;
    let mut gaf = Gaf {
        version: meta.version,
        header_word8: meta.header_word8,
        sequences: seqs.into_iter().map(|s| s.3).collect(),
        trailing,
        warnings: vec![],
        layout,
    };
    if let Some(base) = opts.base {
        super::layout::keep_base_indices(&mut gaf, base, &opts.palette);
        reuse_payloads(&mut gaf, base);
    }
    super::layout::apply_rle_rows(&mut gaf, meta.layout.as_ref(), &dumped, &built_dirs);
    Ok(Built { gaf, warnings })
}

/// A sequence.csv row: index, name, loop_flags, unknown4 (each as given, if given).
type SequenceRow = (Option<u64>, String, Option<u16>, Option<u32>);

/// A sequence's list as a build reads it: the file's bytes, or the base's own (the file is
/// the one the base generates, [`FileSet::generated`]).
pub(super) enum Input {
    Bytes(Vec<u8>),
    Base,
}

/// Whether a sequence's frames.csv rows can be taken from the base sequence as parsing its
/// rendering gives them: every frame simple (a composite's row describes its flattened box,
/// which parsing may refuse).
fn rows_from_base(s: &Sequence) -> bool {
    s.frames
        .iter()
        .all(|fe| !matches!(fe.frame.content, Content::Layers(_)))
}

/// Whether a sequence's sequence.csv row can be taken from the base sequence as parsing its
/// rendering gives it: a name of printable ASCII that the CSV neither quotes nor trims.
fn name_from_base(s: &Sequence) -> bool {
    let n = s.name_bytes();
    n.iter()
        .all(|b| (0x21..0x7f).contains(b) && *b != b'"' && *b != b',')
}

/// The frames.csv rows of base sequence `s` ([`rows_from_base`]) as [`read_rows`] parses
/// the rendering of them.
fn base_rows(s: &Sequence) -> Vec<RowFields> {
    s.frames
        .iter()
        .enumerate()
        .map(|(i, fe)| {
            let f = &fe.frame;
            let truecolor = f.truecolor();
            RowFields {
                line: i as u64 + 2,
                index: i,
                width: f.width,
                height: f.height,
                origin_x: f.origin_x,
                origin_y: f.origin_y,
                key: f.key,
                duration: fe.duration,
                storage: truecolor.is_none().then(|| f.is_compressed()),
                truecolor,
                blend: f.blend,
            }
        })
        .collect()
}

pub(super) struct CsvTable {
    file: String,
    headers: Vec<String>,
    rows: Vec<(u64, Vec<String>)>,
}

impl CsvTable {
    fn parse(file: &str, data: &[u8]) -> Result<CsvTable, ViewError> {
        let mut rd = csv::ReaderBuilder::new()
            .has_headers(true)
            .trim(csv::Trim::All)
            .from_reader(data);
        let headers: Vec<String> = rd
            .headers()
            .map_err(|e| csv_err(file, 1, "-", e.to_string()))?
            .iter()
            .map(|h| h.trim_start_matches('\u{feff}').to_ascii_lowercase())
            .collect();
        let mut rows = Vec::new();
        for rec in rd.records() {
            let rec = rec.map_err(|e| {
                let line = e.position().map(|p| p.line()).unwrap_or(0);
                csv_err(file, line, "-", e.to_string())
            })?;
            let line = rec.position().map(|p| p.line()).unwrap_or(0);
            if rec.iter().all(|f| f.is_empty()) {
                continue;
            }
            rows.push((line, rec.iter().map(str::to_string).collect()));
        }
        Ok(CsvTable {
            file: file.to_string(),
            headers,
            rows,
        })
    }

    fn require(&self, cols: &[&str]) -> Result<(), ViewError> {
        for c in cols {
            if !self.headers.iter().any(|h| h == c) {
                return Err(csv_err(
                    &self.file,
                    1,
                    *c,
                    format!("missing column (expected {})", cols.join(",")),
                ));
            }
        }
        Ok(())
    }

    fn get<'r>(&self, row: &'r [String], col: &str) -> Option<&'r str> {
        let i = self.headers.iter().position(|h| h == col)?;
        row.get(i).map(String::as_str)
    }

    fn num<T: std::str::FromStr>(
        &self,
        line: u64,
        row: &[String],
        col: &str,
        what: &str,
    ) -> Result<T, ViewError> {
        let v = self.get(row, col).unwrap_or("");
        v.parse::<T>()
            .map_err(|_| csv_err(&self.file, line, col, format!("{v:?} is not {what}")))
    }

    fn opt_num<T: std::str::FromStr>(
        &self,
        line: u64,
        row: &[String],
        col: &str,
        what: &str,
    ) -> Result<Option<T>, ViewError> {
        match self.get(row, col) {
            None | Some("") => Ok(None),
            Some(_) => self.num(line, row, col, what).map(Some),
        }
    }
}

/// Header fields of one frames.csv / layers.csv row.
pub(super) struct RowFields {
    line: u64,
    index: usize,
    width: u16,
    height: u16,
    origin_x: i16,
    origin_y: i16,
    key: u8,
    duration: u32,
    storage: Option<bool>,
    /// `argb4444` / `argb1555` in the storage column: a truecolor frame.
    truecolor: Option<gaf::Argb>,
    blend: u8,
}

pub(super) fn row_fields(
    t: &CsvTable,
    line: u64,
    row: &[String],
    with_duration: bool,
) -> Result<RowFields, ViewError> {
    let first = if with_duration { "frame" } else { "layer" };
    let storage_text = t.get(row, "storage").unwrap_or("").to_ascii_lowercase();
    let truecolor = gaf::Argb::from_name(&storage_text);
    let storage = match storage_text.as_str() {
        "" => None,
        _ if truecolor.is_some() => None,
        "raw" => Some(false),
        "compressed" | "rle" => Some(true),
        other => {
            return Err(csv_err(
                &t.file,
                line,
                "storage",
                format!("{other:?} is not raw, compressed, argb4444 or argb1555"),
            ))
        }
    };
    Ok(RowFields {
        line,
        index: t.num(line, row, first, "a frame number")?,
        width: t.num(line, row, "width", "a width 0..65535")?,
        height: t.num(line, row, "height", "a height 0..65535")?,
        origin_x: t.num(line, row, "origin_x", "an origin -32768..32767")?,
        origin_y: t.num(line, row, "origin_y", "an origin -32768..32767")?,
        key: t.num(line, row, "transparency", "a palette index 0..255")?,
        duration: if with_duration {
            t.num(line, row, "duration_ticks", "a tick count 0..4294967295")?
        } else {
            0
        },
        storage,
        truecolor,
        blend: t.opt_num(line, row, "blend", "a byte 0..255")?.unwrap_or(0),
    })
}

/// Whether `dir` is the folder a dump gives a sequence named `name`: its safe form
/// ([`crate::view::safe_component`]), possibly with the `_<n>` suffixes that keep folder
/// names unique ([`crate::view::unique_names`]).
pub fn names_folder(name: &[u8], dir: &str) -> bool {
    let safe = crate::view::safe_component(name);
    match dir.strip_prefix(safe.as_str()) {
        Some("") => true,
        Some(rest) => rest.strip_prefix('_').is_some_and(|r| {
            r.split('_')
                .all(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
        }),
        None => false,
    }
}

/// Whether `name` is a sequence's name this build knows: one of a folder `metadata.json`
/// lists (a copied folder's `sequence.csv`) or of the base (a renamed folder's).
fn names_a_sequence(name: &[u8], meta: &Metadata, opts: &BuildOptions) -> bool {
    meta.sequences.iter().any(|s| names_folder(name, &s.dir))
        || opts
            .base
            .is_some_and(|b| b.sequences.iter().any(|s| s.name_bytes() == name))
}

/// What every sequence and frame of one build reads: the dump's files, its metadata and the
/// build's options.
#[derive(Clone, Copy)]
pub(super) struct Inputs<'a> {
    pub(super) files: &'a dyn FileSet,
    pub(super) meta: &'a Metadata,
    pub(super) opts: &'a BuildOptions<'a>,
}

pub(super) fn build_sequence(
    inp: Inputs,
    dir: &str,
    seq_csv: Option<Input>,
    frames_csv: Option<Input>,
    raw_name: Option<[u8; 32]>,
    folder_named: bool,
    base_seq: Option<(usize, &Sequence)>,
) -> Result<(Option<u64>, Sequence), ViewError> {
    let Inputs { files, meta, opts } = inp;
    let mut index = None;
    let mut name: Vec<u8> = dir.as_bytes().to_vec();
    let (mut loop_word, mut word4) = (1u16, 0u32);
    // the row, as parsed or as the base has it
    let row: Option<SequenceRow> = match seq_csv {
        None => None,
        Some(Input::Base) => base_seq.map(|(si, s)| {
            (
                Some(si as u64),
                s.name_str(),
                Some(s.loop_word),
                Some(s.word4),
            )
        }),
        Some(Input::Bytes(b)) => {
            let file = format!("{dir}/sequence.csv");
            let t = CsvTable::parse(&file, &b)?;
            t.require(&["name"])?;
            let (line, row) = t
                .rows
                .first()
                .ok_or_else(|| csv_err(&file, 2, "-", "no data row"))?;
            Some((
                t.opt_num(*line, row, "index", "a sequence number")?,
                t.get(row, "name").unwrap_or("").to_string(),
                t.opt_num(*line, row, "loop_flags", "a number 0..65535")?,
                t.opt_num(*line, row, "unknown4", "a number 0..4294967295")?,
            ))
        }
    };
    if let Some((row_index, csv_name, row_loop, row_word4)) = row {
        index = row_index;
        let csv_name = csv_name.as_bytes();
        // the name the dump wrote for a listed folder whose name bytes are not UTF-8
        let dumped = raw_name.is_some_and(|raw| {
            let end = raw.iter().position(|&b| b == 0).unwrap_or(32);
            raw.get(..end).map(String::from_utf8_lossy) == Some(String::from_utf8_lossy(csv_name))
        });
        // a CSV cell loses the spaces around a name: the folder's name with its spaces is the
        // same name (and stays the sequence's)
        let trimmed_same = dir.as_bytes().trim_ascii() == csv_name.trim_ascii()
            || raw_name.is_some_and(|raw| {
                let end = raw.iter().position(|&b| b == 0).unwrap_or(32);
                raw.get(..end).map(<[u8]>::trim_ascii) == Some(csv_name.trim_ascii())
            });
        if !folder_named || dumped || names_folder(csv_name, dir) {
            name = csv_name.to_vec();
        } else if !trimmed_same
            && !names_a_sequence(csv_name, meta, opts)
            && !files.earlier_name(csv_name)
        {
            // a new name (an edit of sequence.csv, not a copied folder's or a renamed one's
            // old name, nor an earlier version's, whose folder may be gone from the base and
            // metadata.json by now: rsync deletes the old folder first): refused rather than
            // quietly ignored
            return Err(csv_err(
                &format!("{dir}/sequence.csv"),
                2,
                "name",
                format!(
                    "{:?} is not the name of folder {dir:?}, which names the sequence: to \
                     rename the sequence, rename its folder (and keep sequence.csv's name)",
                    String::from_utf8_lossy(csv_name)
                ),
            ));
        }
        loop_word = row_loop.unwrap_or(1);
        word4 = row_word4.unwrap_or(0);
    }
    let name_buf = match raw_name {
        // unchanged name: keep the raw bytes (garbage after the NUL too)
        Some(raw)
            if String::from_utf8_lossy(&raw[..raw.iter().position(|&b| b == 0).unwrap_or(32)])
                == String::from_utf8_lossy(&name) =>
        {
            raw
        }
        _ => Sequence::name_buffer(&name).ok_or_else(|| {
            csv_err(
                &format!("{dir}/sequence.csv"),
                2,
                "name",
                format!("name is {} bytes, at most 32", name.len()),
            )
        })?,
    };
    let file = format!("{dir}/frames.csv");
    let rows = match frames_csv {
        Some(Input::Bytes(data)) => read_rows(&file, &data, true)?,
        Some(Input::Base) => base_seq.map(|(_, s)| base_rows(s)).unwrap_or_default(),
        None => {
            return Err(ViewError::Missing {
                file: file.clone(),
                why: "a sequence folder needs its frame list".into(),
            })
        }
    };
    let mut frames = Vec::with_capacity(rows.len());
    for rf in &rows {
        let key = format!("{dir}/{}", rf.index);
        let base = base_seq
            .and_then(|(_, s)| s.frames.get(rf.index))
            .map(|fe| &fe.frame);
        let frame = build_frame(inp, &key, &file, rf, base, 0)?;
        frames.push(FrameEntry {
            duration: rf.duration,
            frame,
        });
    }
    if frames.len() > usize::from(u16::MAX) {
        return Err(csv_err(
            &file,
            1,
            "frame",
            format!("{} frames, at most 65535", frames.len()),
        ));
    }
    Ok((
        index,
        Sequence {
            name: name_buf,
            loop_word,
            word4,
            frames,
        },
    ))
}

/// Reads a frames.csv (`frames` = true) or layers.csv: required columns, every row's fields,
/// numbering 0, 1, 2… in order.
pub(super) fn read_rows(
    file: &str,
    data: &[u8],
    frames: bool,
) -> Result<Vec<RowFields>, ViewError> {
    let t = CsvTable::parse(file, data)?;
    let first = if frames { "frame" } else { "layer" };
    let mut cols = vec![
        first,
        "width",
        "height",
        "origin_x",
        "origin_y",
        "transparency",
    ];
    if frames {
        cols.push("duration_ticks");
    }
    t.require(&cols)?;
    let rows = t
        .rows
        .iter()
        .map(|(line, row)| row_fields(&t, *line, row, frames))
        .collect::<Result<Vec<_>, _>>()?;
    check_numbering(file, &rows)?;
    Ok(rows)
}

pub(super) fn check_numbering(file: &str, rows: &[RowFields]) -> Result<(), ViewError> {
    for (i, r) in rows.iter().enumerate() {
        if r.index != i {
            return Err(csv_err(
                file,
                r.line,
                "frame",
                format!(
                    "frames must be numbered 0, 1, 2… in order; expected {i}, found {}",
                    r.index
                ),
            ));
        }
    }
    Ok(())
}

pub(super) fn storage_for(rf: &RowFields, extras: Option<&FrameExtras>, opts: &BuildOptions) -> u8 {
    let compressed = match opts.storage {
        Storage::Raw => false,
        Storage::Compressed => true,
        Storage::Auto => rf
            .storage
            .unwrap_or_else(|| !opts.asset_path.as_deref().is_some_and(always_raw)),
    };
    if compressed {
        extras.and_then(|x| x.compressed_byte).unwrap_or(1)
    } else {
        0
    }
}

pub(super) const MAX_BUILD_DEPTH: usize = 16;

/// Builds the frame of row `rf` (`key`: its path without `.png`). `base`: the frame the base
/// has at this place, if known: where the row's size is the base frame's (frames.csv did not
/// change it), an image of another size gives the frame its size (a frame image moved or
/// swapped in from another frame).
pub(super) fn build_frame(
    inp: Inputs,
    key: &str,
    csv_file: &str,
    rf: &RowFields,
    base: Option<&Frame>,
    depth: usize,
) -> Result<Frame, ViewError> {
    let Inputs { files, meta, opts } = inp;
    let extras = meta.frames.get(key);
    let compressed = storage_for(rf, extras, opts);
    let mut frame = Frame {
        width: rf.width,
        height: rf.height,
        origin_x: rf.origin_x,
        origin_y: rf.origin_y,
        key: rf.key,
        compressed,
        blend: rf.blend,
        word12: extras.map_or(0, |x| x.word12),
        word20: extras.map_or(0, |x| x.word20),
        content: Content::Pixels(Pixels {
            indices: vec![],
            opaque: vec![],
            payload: None,
        }),
    };
    // an unedited image of a frame the base has at this place, under an unedited row: the
    // base's frame as it is (its stored bytes), nothing read or decoded (a commit costs what
    // was edited, not the size of the GAF)
    if let Some(b) = base.filter(|b| !matches!(b.content, Content::Layers(_))) {
        let same_header = (b.width, b.height, b.origin_x, b.origin_y, b.key)
            == (
                frame.width,
                frame.height,
                frame.origin_x,
                frame.origin_y,
                frame.key,
            )
            && (b.compressed, b.blend, b.word12, b.word20)
                == (
                    rf.truecolor.map_or(frame.compressed, |f| f.byte()),
                    frame.blend,
                    frame.word12,
                    frame.word20,
                );
        if same_header
            && files.unedited(&format!("{key}.png"))
            && files.list(&format!("{key}.layers"))?.is_none()
        {
            return Ok(b.clone());
        }
    }
    if let Some(fmt) = rf.truecolor {
        frame.compressed = fmt.byte();
        frame.content = Content::Truecolor(truecolor_words(files, key, csv_file, rf, fmt)?);
        return Ok(frame);
    }
    // Layers first: a composite whose flattening still equals <n>.png stays a composite.
    let ldir = format!("{key}.layers");
    let layers = if files.list(&ldir)?.is_some() {
        if depth >= MAX_BUILD_DEPTH {
            return Err(ViewError::invalid(
                &ldir,
                format!("layers nested deeper than {MAX_BUILD_DEPTH}"),
            ));
        }
        let lfile = format!("{ldir}/layers.csv");
        let data = files.read(&lfile)?.ok_or_else(|| ViewError::Missing {
            file: lfile.clone(),
            why: "a .layers folder needs its layer list".into(),
        })?;
        let rows = read_rows(&lfile, &data, false)?;
        if rows.is_empty() || rows.len() > 255 {
            return Err(csv_err(
                &lfile,
                1,
                "layer",
                format!("{} layers; a composite holds 1 to 255", rows.len()),
            ));
        }
        let mut v = Vec::new();
        for lr in &rows {
            let base_layer = match base.map(|b| &b.content) {
                Some(Content::Layers(l)) => l.get(lr.index),
                _ => None,
            };
            v.push(build_frame(
                inp,
                &format!("{ldir}/{}", lr.index),
                &lfile,
                lr,
                base_layer,
                depth + 1,
            )?);
        }
        Some(v)
    } else {
        None
    };
    let empty = rf.width == 0 || rf.height == 0;
    let mut png_name = format!("{key}.png");
    // the unedited flattening of a composite the base has at this place: the layers decide,
    // the image is not decoded
    let flat_as_dumped = layers.is_some()
        && base.is_some_and(|b| matches!(b.content, Content::Layers(_)))
        && files.unedited(&png_name);
    let image = if empty || flat_as_dumped {
        None
    } else {
        let data = match files.read(&png_name)? {
            Some(d) => d,
            None => {
                let gif_name = format!("{key}.gif");
                match files.read(&gif_name)? {
                    Some(d) => {
                        png_name = gif_name;
                        d
                    }
                    None => {
                        return Err(ViewError::Missing {
                            file: png_name,
                            why: format!(
                                "{csv_file} row {} lists a {}×{} frame",
                                rf.line, rf.width, rf.height
                            ),
                        })
                    }
                }
            }
        };
        let img = if png_name.ends_with(".gif") {
            decode_gif(&data)
        } else {
            decode_png(&data)
        }
        .map_err(|m| ViewError::invalid(&png_name, m))?;
        if img.width != u32::from(rf.width) || img.height != u32::from(rf.height) {
            // the row's size is the base frame's: the image was replaced (a frame moved or
            // swapped in), so its size wins; a size the row changed must agree
            let row_unedited = layers.is_none()
                && base.is_some_and(|b| {
                    !matches!(b.content, Content::Layers(_))
                        && (b.width, b.height) == (rf.width, rf.height)
                });
            match (u16::try_from(img.width), u16::try_from(img.height)) {
                (Ok(w), Ok(h)) if row_unedited && w > 0 && h > 0 => {
                    frame.width = w;
                    frame.height = h;
                }
                _ => {
                    return Err(ViewError::invalid(
                        &png_name,
                        format!(
                            "image is {}×{} but {csv_file} row {} says {}×{}",
                            img.width, img.height, rf.line, rf.width, rf.height
                        ),
                    ))
                }
            }
        }
        let avoid = super::layout::avoid_for(compressed, rf.key);
        let dump_palette = u32::from_str_radix(&meta.palette_crc32, 16).ok();
        Some(to_indices_as(
            &img,
            &opts.palette,
            dump_palette,
            &avoid,
            rf.key,
        ))
    };
    if let Some(layers) = layers {
        let comp = extras.and_then(|x| x.composite);
        let mut c = frame.clone();
        if let Some(h) = comp {
            c.width = h.width;
            c.height = h.height;
            c.origin_x = h.origin_x;
            c.origin_y = h.origin_y;
        }
        c.content = Content::Layers(layers);
        let flat = c.flatten().ok_or_else(|| {
            ViewError::invalid(
                &ldir,
                format!("layers span more than {} pixels", gaf::MAX_FLAT_PIXELS),
            )
        })?;
        // <n>.png unchanged since the dump: the layers decide (they may have been edited).
        let png_unedited = flat_as_dumped
            || match (&image, extras.map(|x| x.flat_fnv.as_str())) {
                (Some(img), Some(fp)) if !fp.is_empty() => {
                    let opaque: Vec<bool> = img.transparent.iter().map(|t| !t).collect();
                    image_fingerprint(img.width, img.height, &img.indices, &opaque) == fp
                }
                _ => false,
            };
        let same = png_unedited
            || match &image {
                None => flat.width == 0 || flat.height == 0,
                Some(img) => {
                    flat.width == img.width
                        && flat.height == img.height
                        && flat.origin_x == i32::from(rf.origin_x)
                        && flat.origin_y == i32::from(rf.origin_y)
                        && flat
                            .opaque
                            .iter()
                            .zip(&img.transparent)
                            .all(|(o, t)| *o != *t)
                        && flat
                            .indices
                            .iter()
                            .zip(&img.indices)
                            .zip(&flat.opaque)
                            .all(|((a, b), o)| !*o || a == b)
                }
            };
        if same {
            return Ok(c);
        }
        // <n>.png edited: it wins over layers that are as dumped; both edited (and the
        // image not their flattening) is a conflict, whatever order they were saved in
        let layers_unedited = extras.map(|x| x.flat_fnv.as_str()).is_some_and(|fp| {
            !fp.is_empty()
                && image_fingerprint(flat.width, flat.height, &flat.indices, &flat.opaque) == fp
        });
        let dumped = extras.is_some_and(|x| !x.flat_fnv.is_empty());
        if dumped && !layers_unedited {
            return Err(ViewError::invalid(
                &png_name,
                format!(
                    "conflict: both {png_name} and {ldir}/ were edited since the dump and the \
                     image is not the layers' flattening; keep one: delete {ldir}/ to keep \
                     the image, or put the dump's {png_name} back to keep the layers"
                ),
            ));
        }
    }
    let (indices, opaque) = match image {
        Some(img) => {
            let opaque: Vec<bool> = img.transparent.iter().map(|t| !t).collect();
            (img.indices, opaque)
        }
        None => (vec![], vec![]),
    };
    frame.content = Content::Pixels(Pixels {
        indices,
        opaque,
        payload: None,
    });
    Ok(frame)
}

/// The words of a truecolor frame from `<key>.png` (any colour type; colours the format
/// cannot hold are quantised to the nearest it can). No image for a 0-size frame.
fn truecolor_words(
    files: &dyn FileSet,
    key: &str,
    csv_file: &str,
    rf: &RowFields,
    fmt: gaf::Argb,
) -> Result<Vec<u16>, ViewError> {
    if rf.width == 0 || rf.height == 0 {
        return Ok(vec![]);
    }
    let png_name = format!("{key}.png");
    let data = files.read(&png_name)?.ok_or_else(|| ViewError::Missing {
        file: png_name.clone(),
        why: format!(
            "{csv_file} row {} lists a {}×{} {} frame",
            rf.line,
            rf.width,
            rf.height,
            fmt.name()
        ),
    })?;
    let img = decode_png(&data).map_err(|m| ViewError::invalid(&png_name, m))?;
    if img.width != u32::from(rf.width) || img.height != u32::from(rf.height) {
        return Err(ViewError::invalid(
            &png_name,
            format!(
                "image is {}×{} but {csv_file} row {} says {}×{}",
                img.width, img.height, rf.line, rf.width, rf.height
            ),
        ));
    }
    let rgba = super::truecolor::to_rgba(&img);
    Ok(super::truecolor::quantise(fmt, &rgba))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::Limits;
    use crate::view::gaf::GafView;
    use crate::view::{MemFileSet, ViewOptions};

    /// The sample GAF, its dump in memory and the folder of its first sequence.
    fn dumped() -> (Gaf, MemFileSet, String) {
        let bytes = gaf::write(&crate::sample::animated_gaf()).unwrap();
        let g = gaf::parse(&bytes, &Limits::default()).unwrap();
        let v = GafView::from_gaf(g.clone(), &ViewOptions::default()).unwrap();
        let files = MemFileSet::from_view(&v).unwrap();
        let meta: serde_json::Value =
            serde_json::from_slice(&files.files["metadata.json"]).unwrap();
        let dir = meta["sequences"][0]["dir"].as_str().unwrap().to_string();
        (g, files, dir)
    }

    fn opts(base: Option<&Gaf>) -> BuildOptions<'_> {
        BuildOptions {
            palette: Palette::ta(),
            base,
            ..Default::default()
        }
    }

    #[test]
    fn swapped_images_of_two_sizes_swap_the_frames_when_frames_csv_is_unedited() {
        let (g, mut files, dir) = dumped();
        let f = |g: &Gaf, i: usize| g.sequences[0].frames[i].frame.clone();
        assert_ne!(
            (f(&g, 0).width, f(&g, 0).height),
            (f(&g, 1).width, f(&g, 1).height)
        );
        let (a, b) = (format!("{dir}/0.png"), format!("{dir}/1.png"));
        let pa = files.files[&a].clone();
        let pb = files.files.insert(b.clone(), pa).unwrap();
        files.files.insert(a, pb);
        // without a base nothing says the rows are unedited: the sizes disagree
        let e = build(&files, &opts(None)).unwrap_err().to_string();
        assert!(e.contains("0.png") && e.contains("says"), "{e}");
        let built = build(&files, &opts(Some(&g))).unwrap().gaf;
        let look = |f: &Frame| (f.width, f.height, f.pixels().map(|p| p.indices.clone()));
        assert_eq!(look(&f(&built, 0)), look(&f(&g, 1)));
        assert_eq!(look(&f(&built, 1)), look(&f(&g, 0)));
        // the stored bytes of both frames are reused, only moved
        let payload = |f: &Frame| f.pixels().and_then(|p| p.payload.clone());
        assert_eq!(payload(&f(&built, 0)), payload(&f(&g, 1)));
        assert!(payload(&f(&built, 1)).is_some());
        assert_eq!(f(&built, 0).origin_x, f(&g, 0).origin_x);
    }

    #[test]
    fn a_size_frames_csv_changed_must_agree_with_the_image() {
        let (g, mut files, dir) = dumped();
        let csv = format!("{dir}/frames.csv");
        let text = String::from_utf8(files.files[&csv].clone()).unwrap();
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        let header: Vec<&str> = lines[0].split(',').collect();
        let w = header.iter().position(|h| *h == "width").unwrap();
        let mut row: Vec<String> = lines[1].split(',').map(str::to_string).collect();
        row[w] = (row[w].parse::<u32>().unwrap() + 3).to_string();
        lines[1] = row.join(",");
        files
            .files
            .insert(csv, (lines.join("\n") + "\n").into_bytes());
        let e = build(&files, &opts(Some(&g))).unwrap_err().to_string();
        assert!(e.contains("0.png") && e.contains("says"), "{e}");
    }

    /// `png` (an indexed dump PNG) with its first opaque pixel set to index `to`.
    fn repaint(png: &[u8], to: u8) -> Vec<u8> {
        let d = crate::view::image::decode_png(png).unwrap();
        let crate::view::image::PngPixels::Indexed {
            mut indices, trns, ..
        } = d.pixels
        else {
            panic!("dump PNGs are indexed")
        };
        let transparent = trns.iter().position(|a| *a == 0).map(|i| i as u8);
        let pos = indices
            .iter()
            .position(|i| Some(*i) != transparent && *i != to)
            .unwrap();
        indices[pos] = to;
        let mut out = Vec::new();
        crate::view::image::write_indexed_png(
            &mut out,
            d.width,
            d.height,
            &indices,
            &Palette::ta(),
            transparent,
        )
        .unwrap();
        out
    }

    /// The composite frame of the sample (sequence folder, frame number).
    fn composite(files: &MemFileSet) -> (String, String) {
        let k = files
            .files
            .keys()
            .find(|k| k.contains(".layers/layers.csv"))
            .unwrap()
            .clone();
        let (dir, rest) = k.split_once('/').unwrap();
        (
            dir.to_string(),
            rest.split_once(".layers").unwrap().0.to_string(),
        )
    }

    fn frame_at<'g>(g: &'g Gaf, files: &MemFileSet, dir: &str, n: &str) -> &'g Frame {
        let meta: serde_json::Value =
            serde_json::from_slice(&files.files["metadata.json"]).unwrap();
        let si = meta["sequences"]
            .as_array()
            .unwrap()
            .iter()
            .position(|s| s["dir"] == dir)
            .unwrap();
        &g.sequences[si].frames[n.parse::<usize>().unwrap()].frame
    }

    #[test]
    fn an_image_and_its_layers_decided_by_content_and_both_edited_is_a_conflict() {
        let (g, files, _) = dumped();
        let (dir, n) = composite(&files);
        let png = format!("{dir}/{n}.png");
        let layer = format!("{dir}/{n}.layers/0.png");
        // unedited: the composite as it was
        let built = build(&files, &opts(Some(&g))).unwrap().gaf;
        assert_eq!(
            frame_at(&built, &files, &dir, &n),
            frame_at(&g, &files, &dir, &n)
        );
        // a layer edited (the image as dumped): still a composite, with the edited layer
        let mut only_layer = files.clone();
        let edited = repaint(&files.files[&layer], 0xB7);
        only_layer.files.insert(layer.clone(), edited.clone());
        let built = build(&only_layer, &opts(Some(&g))).unwrap().gaf;
        let f = frame_at(&built, &files, &dir, &n);
        assert!(matches!(f.content, Content::Layers(_)));
        assert_ne!(f, frame_at(&g, &files, &dir, &n));
        // the image edited (the layers as dumped): the image wins, a plain frame
        let mut only_png = files.clone();
        only_png
            .files
            .insert(png.clone(), repaint(&files.files[&png], 0xB7));
        let built = build(&only_png, &opts(Some(&g))).unwrap().gaf;
        assert!(matches!(
            frame_at(&built, &files, &dir, &n).content,
            Content::Pixels(_)
        ));
        // both edited alike (the image is the edited layers' flattening): the layers
        let mut alike = only_png.clone();
        alike.files.insert(layer.clone(), edited.clone());
        let built = build(&alike, &opts(Some(&g))).unwrap().gaf;
        let from_layers = build(&only_layer, &opts(Some(&g))).unwrap().gaf;
        assert_eq!(
            frame_at(&built, &files, &dir, &n),
            frame_at(&from_layers, &files, &dir, &n)
        );
        // both edited differently: a conflict naming the image
        let mut both = only_layer.clone();
        both.files
            .insert(png.clone(), repaint(&files.files[&png], 0xB8));
        let e = build(&both, &opts(Some(&g))).unwrap_err().to_string();
        assert!(e.contains("conflict") && e.contains(&png), "{e}");
    }

    /// A dump in memory whose files other than `edited` are the base's own renderings.
    struct Marked<'a> {
        files: &'a MemFileSet,
        edited: Vec<String>,
    }

    impl FileSet for Marked<'_> {
        fn read(&self, path: &str) -> Result<Option<Vec<u8>>, ViewError> {
            self.files.read(path)
        }
        fn list(&self, dir: &str) -> Result<Option<Vec<(String, bool)>>, ViewError> {
            self.files.list(dir)
        }
        fn unedited(&self, path: &str) -> bool {
            self.files.files.contains_key(path) && !self.edited.iter().any(|e| e == path)
        }
        fn generated(&self, path: &str) -> bool {
            self.unedited(path)
        }
    }

    #[test]
    fn taking_unedited_frames_from_the_base_builds_what_reading_them_builds() {
        let (g, files, dir) = dumped();
        let (cdir, n) = composite(&files);
        let frame = format!("{dir}/2.png");
        let layer = format!("{cdir}/{n}.layers/1.png");
        let (a, b) = (format!("{dir}/0.png"), format!("{dir}/1.png"));
        let cases: Vec<(MemFileSet, Vec<String>)> = {
            let mut one = files.clone();
            one.files
                .insert(frame.clone(), repaint(&files.files[&frame], 0xB9));
            let mut swap = files.clone();
            swap.files.insert(a.clone(), files.files[&b].clone());
            swap.files.insert(b.clone(), files.files[&a].clone());
            let mut lay = files.clone();
            lay.files
                .insert(layer.clone(), repaint(&files.files[&layer], 0xBA));
            vec![
                (files.clone(), vec![]),
                (one, vec![frame]),
                (swap, vec![a, b]),
                (lay, vec![layer]),
            ]
        };
        for (set, edited) in cases {
            let read = build(&set, &opts(Some(&g))).unwrap().gaf;
            let marked = Marked {
                files: &set,
                edited: edited.clone(),
            };
            let taken = build(&marked, &opts(Some(&g))).unwrap().gaf;
            assert_eq!(
                gaf::write(&taken).unwrap(),
                gaf::write(&read).unwrap(),
                "edited {edited:?}"
            );
        }
    }

    #[test]
    fn lists_taken_from_the_base_build_what_parsing_their_rendering_builds() {
        // names the CSV quotes or trims, and plain ones; words and durations off the defaults
        let mut g = crate::sample::animated_gaf();
        let names: [&[u8]; 4] = [b" padded ", b"q\"x,y", b"plain", b"\xff\xfe"];
        for (i, (s, n)) in g.sequences.iter_mut().zip(names).enumerate() {
            s.name = Sequence::name_buffer(n).unwrap();
            s.loop_word = 0x0100 + i as u16;
            s.word4 = 70_000 + i as u32;
            for (k, fe) in s.frames.iter_mut().enumerate() {
                fe.duration = 3 + 40_000 * k as u32;
            }
        }
        let bytes = gaf::write(&g).unwrap();
        let base = gaf::parse_stored(&bytes, &Limits::default()).unwrap();
        let v = GafView::new(&bytes, &ViewOptions::default()).unwrap();
        let files = MemFileSet::from_view(&v).unwrap();
        let meta: serde_json::Value =
            serde_json::from_slice(&files.files["metadata.json"]).unwrap();
        let dirs: Vec<String> = meta["sequences"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["dir"].as_str().unwrap().to_string())
            .collect();
        let png = files
            .files
            .keys()
            .find(|k| k.ends_with("/0.png") && !k.contains(".layers"))
            .unwrap()
            .clone();
        let mut one = files.clone();
        one.files
            .insert(png.clone(), repaint(&files.files[&png], 0xB9));
        let seq_csv = format!("{}/sequence.csv", dirs[2]);
        // a sequence.csv saved again as it was: parsed, the others taken
        let saved = files.clone();
        for (set, edited) in [
            (files.clone(), vec![]),
            (one, vec![png]),
            (saved, vec![seq_csv]),
        ] {
            // `set` itself says nothing is generated: every list is parsed
            let read = build(&set, &opts(Some(&base))).unwrap().gaf;
            let marked = Marked {
                files: &set,
                edited: edited.clone(),
            };
            let taken = build(&marked, &opts(Some(&base))).unwrap().gaf;
            let out = gaf::write(&taken).unwrap();
            assert!(out == gaf::write(&read).unwrap(), "edited {edited:?}");
            if edited.iter().all(|e| e.ends_with(".csv")) {
                assert!(out == bytes, "edited {edited:?}");
            }
        }
    }

    /// A GAF of two sequences of two 6×4 frames of storage `compressed` (distinct pixels);
    /// with RLE, frame 0 of sequence "a" is stored with an extra empty skip command at the end
    /// of every row: the same pixels as tafs's encoding, other bytes.
    fn two_by_two(compressed: u8) -> Vec<u8> {
        let frame = |seed: u8| {
            let mut f = crate::sample::frame(6, 4, 3, 2, compressed != 0, |x, y| {
                let k = (y * 6 + x) as u8;
                (k % 5 != 0).then_some(0x20 + seed * 3 + k)
            });
            f.compressed = compressed;
            f
        };
        let seq = |name: &[u8], a: u8, b: u8| Sequence {
            name: Sequence::name_buffer(name).unwrap(),
            loop_word: 1,
            word4: 0,
            frames: vec![
                FrameEntry {
                    duration: 2,
                    frame: frame(a),
                },
                FrameEntry {
                    duration: 2,
                    frame: frame(b),
                },
            ],
        };
        let mut g = Gaf {
            version: gaf::VERSION_STANDARD,
            header_word8: 0,
            sequences: vec![seq(b"a", 0, 1), seq(b"b", 2, 3)],
            trailing: vec![],
            warnings: vec![],
            layout: None,
        };
        if compressed != 0 {
            let f = &mut g.sequences[0].frames[0].frame;
            let px = f.pixels().unwrap();
            let mut odd = Vec::new();
            for y in 0..4 {
                let mut row = Vec::new();
                assert!(gaf::rle::encode_row(
                    &px.indices[y * 6..y * 6 + 6],
                    &px.opaque[y * 6..y * 6 + 6],
                    &mut row
                ));
                row.push(0x01); // skip 0
                let n = (row.len() - 2) as u16;
                row[..2].copy_from_slice(&n.to_le_bytes());
                odd.extend_from_slice(&row);
            }
            if let Content::Pixels(p) = &mut f.content {
                p.payload = Some(odd.into());
            }
        }
        gaf::write(&g).unwrap()
    }

    #[test]
    fn a_base_of_stored_frames_builds_what_a_decoded_base_builds() {
        for compressed in [0u8, 1] {
            let bytes = two_by_two(compressed);
            let full = gaf::parse(&bytes, &Limits::default()).unwrap();
            let v = GafView::from_gaf(full.clone(), &ViewOptions::default()).unwrap();
            let files = MemFileSet::from_view(&v).unwrap();
            let odd = full.sequences[0].frames[0]
                .frame
                .pixels()
                .and_then(|p| p.payload.clone())
                .unwrap();
            // (frame a/0, odd when RLE) copied onto b/1; a/1 repainted; both; nothing
            let mut copied = files.clone();
            copied
                .files
                .insert("b/1.png".into(), files.files["a/0.png"].clone());
            let mut painted = files.clone();
            painted
                .files
                .insert("a/1.png".into(), repaint(&files.files["a/1.png"], 0xB9));
            let mut both = copied.clone();
            both.files
                .insert("a/1.png".into(), painted.files["a/1.png"].clone());
            let cases = [
                (files.clone(), vec![]),
                (copied, vec!["b/1.png"]),
                (painted, vec!["a/1.png"]),
                (both, vec!["b/1.png", "a/1.png"]),
            ];
            for (set, edited) in cases {
                let marked = Marked {
                    files: &set,
                    edited: edited.iter().map(|e| e.to_string()).collect(),
                };
                let from_full = build(&marked, &opts(Some(&full))).unwrap().gaf;
                let stored = gaf::parse_stored(&bytes, &Limits::default()).unwrap();
                let from_stored = build(&marked, &opts(Some(&stored))).unwrap().gaf;
                let out = gaf::write(&from_stored).unwrap();
                assert_eq!(
                    out,
                    gaf::write(&from_full).unwrap(),
                    "{compressed} {edited:?}"
                );
                if edited.is_empty() {
                    assert_eq!(out, bytes);
                }
                if edited.contains(&"b/1.png") {
                    // the copy takes the stored bytes of the frame it copies
                    let again = gaf::parse(&out, &Limits::default()).unwrap();
                    let p = again.sequences[1].frames[1].frame.pixels().unwrap();
                    assert_eq!(p.payload.as_deref(), Some(&*odd), "{compressed}");
                }
            }
        }
    }
}
