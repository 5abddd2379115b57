//! The exploded view of a palette lookup table (`.ALP`, `.SHD`, `.LHT`): `table.png`, one
//! pixel per entry (256 wide, one row per table row) indexed in the game palette, so each
//! pixel's index is the entry's byte; and `table.csv` (`row,0,1,…,255`, the entries in
//! decimal). Either rebuilds the table: an unedited folder gives the identical file, an edit
//! changes only the entries edited.

use super::image::{decode_png, PngPixels};
use super::pcx::{map_to_palette, FileListView};
use super::{FileSet, ViewError};
use crate::formats::palette::Palette;
use crate::formats::paltable::{self, PalTable, TableKind, COLUMNS};
use crate::formats::Limits;
use std::fmt::Write as _;

/// The table as an indexed PNG.
pub const PNG: &str = "table.png";
/// The table as CSV.
pub const CSV: &str = "table.csv";

fn from_codec(e: paltable::PalTableError) -> ViewError {
    ViewError::invalid("", e.to_string())
}

/// `table.png`: 256 × rows, pixel `(c, r)` = entry `[r][c]`, PLTE = `palette`.
pub fn png(t: &PalTable, palette: &Palette) -> Result<Vec<u8>, ViewError> {
    let mut out = Vec::new();
    super::image::write_indexed_png(
        &mut out,
        COLUMNS as u32,
        t.rows as u32,
        &t.cells,
        palette,
        None,
    )
    .map_err(|e| ViewError::invalid(PNG, format!("cannot encode PNG: {e}")))?;
    Ok(out)
}

/// `table.csv`: a header `row,0,…,255`, then one line per row: its number and its 256
/// entries.
pub fn csv(t: &PalTable) -> String {
    let mut s = String::with_capacity(t.cells.len() * 4 + 1200);
    s.push_str("row");
    for c in 0..COLUMNS {
        let _ = write!(s, ",{c}");
    }
    s.push('\n');
    for (r, row) in t.cells.chunks_exact(COLUMNS).enumerate() {
        let _ = write!(s, "{r}");
        for v in row {
            let _ = write!(s, ",{v}");
        }
        s.push('\n');
    }
    s
}

/// The files of the view of table `data` (`kind` from the file name when known, else told
/// by size), drawn in `palette`.
pub fn files(
    data: &[u8],
    kind: Option<TableKind>,
    palette: &Palette,
    limits: &Limits,
) -> Result<Vec<(String, Vec<u8>)>, ViewError> {
    let t = paltable::parse(data, kind, limits).map_err(from_codec)?;
    Ok(vec![
        (PNG.to_string(), png(&t, palette)?),
        (CSV.to_string(), csv(&t).into_bytes()),
    ])
}

/// The view of table `data`.
pub fn open(
    data: &[u8],
    kind: Option<TableKind>,
    palette: &Palette,
    limits: &Limits,
) -> Result<FileListView, ViewError> {
    Ok(FileListView::new(files(data, kind, palette, limits)?))
}

/// Reads `table.csv` of a `rows`-row table: the header, then rows 0 … rows−1 in order, each
/// its number and 256 entries 0–255.
pub fn parse_csv(text: &[u8], rows: usize) -> Result<Vec<u8>, ViewError> {
    let err = |row: u64, column: String, msg: String| super::csv::csv_err(CSV, row, column, msg);
    let mut rd = csv::ReaderBuilder::new()
        .has_headers(true)
        .trim(csv::Trim::All)
        .flexible(true)
        .from_reader(text);
    let header = rd
        .headers()
        .map_err(|e| err(1, "row".into(), e.to_string()))?
        .clone();
    let want: Vec<String> = std::iter::once("row".to_string())
        .chain((0..COLUMNS).map(|c| c.to_string()))
        .collect();
    if header.iter().ne(want.iter().map(String::as_str)) {
        return Err(err(
            1,
            "row".into(),
            "the header must be row,0,1,…,255".into(),
        ));
    }
    let mut cells = Vec::with_capacity(rows * COLUMNS);
    let mut n = 0usize;
    for rec in rd.records() {
        let rec = rec.map_err(|e| {
            let line = e.position().map_or(0, |p| p.line());
            err(line, "row".into(), e.to_string())
        })?;
        let line = rec.position().map_or(0, |p| p.line());
        if rec.iter().all(str::is_empty) {
            continue;
        }
        if n >= rows {
            return Err(err(
                line,
                "row".into(),
                format!("the table has {rows} rows"),
            ));
        }
        if rec.get(0) != Some(n.to_string().as_str()) {
            return Err(err(
                line,
                "row".into(),
                format!("expected row {n} (rows stay in order, none added or removed)"),
            ));
        }
        if rec.len() != COLUMNS + 1 {
            return Err(err(
                line,
                "row".into(),
                format!("{} entries, a row has 256", rec.len().saturating_sub(1)),
            ));
        }
        for (c, v) in rec.iter().skip(1).enumerate() {
            let v: u8 = v.parse().map_err(|_| {
                err(
                    line,
                    c.to_string(),
                    format!("{v:?} is no palette index 0–255"),
                )
            })?;
            cells.push(v);
        }
        n += 1;
    }
    if n != rows {
        return Err(err(
            0,
            "row".into(),
            format!("{n} rows, the table has {rows}"),
        ));
    }
    Ok(cells)
}

/// Entries of a 256-colour PLTE that must equal `palette`'s, position by position, for an
/// indexed PNG to count as drawn in it (its indices taken as they are): a dump made before
/// a palette edit still is, an editor's re-ordered palette is not.
pub const SAME_LAYOUT: usize = 192;

/// Reads `table.png` of a `rows`-row table drawn in `palette`. An indexed PNG whose 256-entry
/// PLTE matches `palette` in at least [`SAME_LAYOUT`] positions gives its indices (so does
/// one saved from a view generated before the palette was edited); anything else (an
/// editor's RGB save or re-ordered palette) maps each pixel to the entry `base` has there
/// when that still is the pixel's colour, else the first index of exactly its colour, else
/// the nearest colour.
pub fn parse_png(
    data: &[u8],
    rows: usize,
    palette: &Palette,
    base: Option<&[u8]>,
) -> Result<Vec<u8>, ViewError> {
    let img = decode_png(data).map_err(|e| ViewError::invalid(PNG, e))?;
    if img.width as usize != COLUMNS || img.height as usize != rows {
        return Err(ViewError::invalid(
            PNG,
            format!(
                "{}×{} pixels; this table is 256×{rows} (one pixel per entry)",
                img.width, img.height
            ),
        ));
    }
    if let PngPixels::Indexed { indices, plte, .. } = &img.pixels {
        let same = plte
            .chunks_exact(3)
            .zip(palette.colors.iter())
            .filter(|(a, b)| *a == b.as_slice())
            .count();
        if plte.len() == 768 && same >= SAME_LAYOUT && indices.len() == rows * COLUMNS {
            return Ok(indices.clone());
        }
    }
    Ok(map_to_palette(&img, palette, base))
}

/// Rebuilds a table from `files`. `kind` (from the target's name) or `base` fixes the row
/// count, else the files tell it. The entries are the CSV's unless only the PNG differs
/// from `base`; both edited to different entries is refused. Without `base` nothing tells
/// which was edited: the CSV decides, the PNG is read only when there is no CSV.
pub fn build(
    files: &dyn FileSet,
    kind: Option<TableKind>,
    base: Option<&[u8]>,
    palette: &Palette,
    limits: &Limits,
) -> Result<Vec<u8>, ViewError> {
    let base = match base {
        Some(b) => Some(paltable::parse(b, kind, limits).map_err(from_codec)?),
        None => None,
    };
    let csv_text = files.read(CSV)?;
    let png_bytes = files.read(PNG)?;
    let rows = match (&base, kind) {
        (Some(b), _) => b.rows,
        (None, Some(k)) => k.rows(),
        (None, None) => match (&csv_text, &png_bytes) {
            (Some(t), _) => {
                let lines = t
                    .split(|&b| b == b'\n')
                    .filter(|l| !l.iter().all(u8::is_ascii_whitespace))
                    .count();
                if lines > 33 {
                    256
                } else {
                    32
                }
            }
            (None, Some(p)) => {
                decode_png(p)
                    .map_err(|e| ViewError::invalid(PNG, e))?
                    .height as usize
            }
            (None, None) => 0,
        },
    };
    let base_cells = base.as_ref().map(|b| b.cells.as_slice());
    let from_csv = csv_text.map(|t| parse_csv(&t, rows)).transpose()?;
    // without a base nothing tells which file was edited: the CSV decides
    let from_png = png_bytes
        .filter(|_| base.is_some() || from_csv.is_none())
        .map(|p| parse_png(&p, rows, palette, base_cells))
        .transpose()?;
    let cells = match (from_csv, from_png) {
        (None, None) => {
            return Err(ViewError::Missing {
                file: CSV.into(),
                why: "table.csv or table.png is needed".into(),
            })
        }
        (Some(c), None) => c,
        (None, Some(p)) => p,
        (Some(c), Some(p)) if c == p => c,
        (Some(c), Some(p)) => match base_cells {
            Some(b) if p == b => c,
            Some(b) if c == b => p,
            // both edited, differently (only with a base: without, the PNG is not read)
            _ => {
                let at = c.iter().zip(&p).position(|(x, y)| x != y).unwrap_or(0);
                return Err(ViewError::invalid(
                    PNG,
                    format!(
                        "table.png and table.csv were both edited, differently (first at row {}, \
                         column {}): edit one",
                        at / COLUMNS,
                        at % COLUMNS,
                    ),
                ));
            }
        },
    };
    paltable::write(&PalTable { rows, cells }).map_err(from_codec)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::MemFileSet;

    fn table(rows: usize) -> Vec<u8> {
        (0..rows * COLUMNS).map(|i| (i * 7 % 256) as u8).collect()
    }

    fn set(files: Vec<(String, Vec<u8>)>) -> MemFileSet {
        MemFileSet {
            files: files.into_iter().collect(),
        }
    }

    #[test]
    fn unedited_rebuilds_and_either_file_edits() {
        let lim = Limits::default();
        let pal = Palette::ta();
        for rows in [32, 256] {
            let data = table(rows);
            let files = files(&data, None, &pal, &lim).unwrap();
            let out = build(&set(files.clone()), None, Some(&data), &pal, &lim).unwrap();
            assert_eq!(out, data);
            // without a base too
            assert_eq!(
                build(&set(files.clone()), None, None, &pal, &lim).unwrap(),
                data
            );
            // a CSV edit: one entry
            let mut t = paltable::parse(&data, None, &lim).unwrap();
            t.cells[COLUMNS + 3] = 200;
            let mut edited = files.clone();
            edited[1].1 = csv(&t).into_bytes();
            let out = build(&set(edited.clone()), None, Some(&data), &pal, &lim).unwrap();
            assert_eq!(out, t.cells);
            // the same edit in the PNG
            let mut edited_png = files.clone();
            edited_png[0].1 = png(&t, &pal).unwrap();
            let out = build(&set(edited_png), None, Some(&data), &pal, &lim).unwrap();
            assert_eq!(out, t.cells);
            // both, differently: refused
            let mut other = t.clone();
            other.cells[5] = 1;
            edited[0].1 = png(&other, &pal).unwrap();
            let e = build(&set(edited), None, Some(&data), &pal, &lim).unwrap_err();
            assert!(e.to_string().contains("both edited"), "{e}");
        }
    }

    #[test]
    fn a_png_from_before_a_palette_edit_keeps_its_indices() {
        let lim = Limits::default();
        let old = Palette::ta();
        let mut new = old.clone();
        for c in 100..110 {
            new.colors[c] = [1, 2, 3];
        }
        let data = table(32);
        let mut t = paltable::parse(&data, None, &lim).unwrap();
        t.cells[7] = 104;
        // the PNG of the view generated with the old palette, one entry edited in it
        let png_old = png(&t, &old).unwrap();
        let files = set(vec![(PNG.into(), png_old)]);
        assert_eq!(
            build(&files, None, Some(&data), &new, &lim).unwrap(),
            t.cells
        );
        // an editor's re-ordered palette is mapped by colour, unchanged entries kept
        let mut shuffled = Palette::ta();
        shuffled.colors.rotate_left(1);
        let moved: Vec<u8> = t.cells.iter().map(|&v| v.wrapping_sub(1)).collect();
        let mut out = Vec::new();
        crate::view::image::write_indexed_png(&mut out, 256, 32, &moved, &shuffled, None).unwrap();
        let got = build(&set(vec![(PNG.into(), out)]), None, Some(&data), &old, &lim).unwrap();
        let changed: Vec<usize> = (0..got.len()).filter(|&i| got[i] != data[i]).collect();
        assert_eq!(changed, vec![7]);
        assert_eq!(got[7], 104);
    }

    #[test]
    fn bad_csv_and_png_name_the_place() {
        let lim = Limits::default();
        let pal = Palette::ta();
        let data = table(32);
        let files = files(&data, None, &pal, &lim).unwrap();
        let text = String::from_utf8(files[1].1.clone()).unwrap();
        let cases = [
            (text.replacen("\n1,", "\n2,", 1), "row 3, column row"),
            (
                text.replacen("\n0,0,7,", "\n0,0,256,", 1),
                "row 2, column 1",
            ),
            (text.replacen("\n0,0,7,", "\n0,0,x,", 1), "no palette index"),
            (text.replacen("row,", "line,", 1), "header"),
            (
                text.lines().take(20).collect::<Vec<_>>().join("\n"),
                "19 rows",
            ),
            (format!("{text}32{}\n", ",0".repeat(256)), "has 32 rows"),
            (text.replacen("\n0,0,7,", "\n0,0,", 1), "255 entries"),
        ];
        for (t, want) in cases {
            let e = build(
                &set(vec![(CSV.into(), t.into_bytes())]),
                None,
                Some(&data),
                &pal,
                &lim,
            )
            .unwrap_err();
            assert!(e.to_string().contains(want), "{want}: {e}");
        }
        let wide = PalTable {
            rows: 256,
            cells: table(256),
        };
        let e = build(
            &set(vec![(PNG.into(), png(&wide, &pal).unwrap())]),
            None,
            Some(&data),
            &pal,
            &lim,
        )
        .unwrap_err();
        assert!(e.to_string().contains("256×32"), "{e}");
        let e = build(&set(vec![]), None, Some(&data), &pal, &lim).unwrap_err();
        assert!(e.to_string().contains("missing"), "{e}");
        let e = files_err(&[0u8; 100]);
        assert!(e.contains("100 bytes"), "{e}");
    }

    fn files_err(d: &[u8]) -> String {
        files(d, None, &Palette::ta(), &Limits::default())
            .unwrap_err()
            .to_string()
    }
}
