//! Balance tables: every unit, weapon, feature, sound category, build-menu entry and movement
//! class of a game folder as one CSV per [`Family`], and an edited CSV back as changes to the
//! TDF files it came from.
//!
//! A row is one top-level section (`units.csv`: the `[UNITINFO]` of each `units/*.fbi`); its
//! first two columns, `path` (relative to the game folder) and `section`, name it. The other
//! columns are the union of the keys, matched ignoring case (the header keeps the spelling
//! most files use); a key of a nested section is a column `CHILD.key` (`DAMAGE.default`).
//! [`Table::plan`] compares an edited CSV with the table and returns the new bytes of every
//! file with an edited cell, edited through [`crate::formats::tdf_doc`] (only the value
//! changes; an absent key is added at the end of its section; an emptied cell removes the
//! key). Rows are matched by `path` + `section` (a sorted CSV applies the same); a row added
//! or deleted, a column added or missing, a read-only cell changed, or text in a number column
//! is an error naming the CSV row and column, and nothing is planned.

use super::csv::csv_err;
use super::ViewError;
use crate::formats::tdf_doc::{self, Document, Edit, KeyLookup};
use crate::game::{find_ci_in, find_dir_ci_in, GameFs, Kind};
use std::collections::HashMap;
use std::path::Path;

/// Largest TDF file read.
pub const MAX_FILE_BYTES: u64 = 8 << 20;

/// Bytes read for one table, all files together.
pub const MAX_TABLE_BYTES: u64 = 256 << 20;

/// Files read for one table.
pub const MAX_FILES: usize = 100_000;

/// Where a family's files are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    /// Files with extension `ext` directly in folder `dir`.
    Dir(&'static str, &'static str),
    /// Files with extension `ext` anywhere under `dir`.
    Tree(&'static str, &'static str),
    /// One file `dir/name`.
    File(&'static str, &'static str),
}

/// One table: which files, which sections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Family {
    /// CSV file name.
    pub csv: &'static str,
    sources: &'static [Source],
    /// Only top-level sections of this name become rows (`None`: every one).
    only: Option<&'static str>,
}

/// The tables, in the order they are listed.
pub const FAMILIES: &[Family] = &[
    Family {
        csv: "units.csv",
        sources: &[Source::Dir("units", "fbi")],
        only: Some("UNITINFO"),
    },
    Family {
        csv: "weapons.csv",
        sources: &[
            Source::File("gamedata", "weapons.tdf"),
            Source::Dir("weapons", "tdf"),
        ],
        only: None,
    },
    Family {
        csv: "features.csv",
        sources: &[Source::Tree("features", "tdf")],
        only: None,
    },
    Family {
        csv: "sounds.csv",
        sources: &[Source::File("gamedata", "sound.tdf")],
        only: None,
    },
    Family {
        csv: "downloads.csv",
        sources: &[Source::Dir("download", "tdf")],
        only: None,
    },
    Family {
        csv: "moveinfo.csv",
        sources: &[Source::File("gamedata", "moveinfo.tdf")],
        only: None,
    },
];

/// The family whose CSV is `name` (exact).
pub fn family(name: &str) -> Option<&'static Family> {
    FAMILIES.iter().find(|f| f.csv == name)
}

/// The files (paths relative to `game_dir`, `/`-separated, sorted ignoring case) of `fam`.
pub fn list_files(gfs: &dyn GameFs, game_dir: &Path, fam: &Family) -> Vec<String> {
    let mut out = Vec::new();
    for src in fam.sources {
        match *src {
            Source::File(dir, name) => {
                if let Some(d) = find_dir_ci_in(gfs, game_dir, dir) {
                    if let Some(f) = find_ci_in(gfs, &d, name) {
                        if let Some(rel) = rel_of(game_dir, &f) {
                            out.push(rel);
                        }
                    }
                }
            }
            Source::Dir(dir, ext) | Source::Tree(dir, ext) => {
                let tree = matches!(src, Source::Tree(..));
                if let Some(d) = find_dir_ci_in(gfs, game_dir, dir) {
                    let mut found = Vec::new();
                    walk(gfs, &d, ext, tree, 0, &mut found);
                    found.sort_by_key(|p| p.to_ascii_lowercase());
                    out.extend(found.iter().filter_map(|f| rel_of(game_dir, Path::new(f))));
                }
            }
        }
    }
    out
}

fn rel_of(game_dir: &Path, f: &Path) -> Option<String> {
    let rel = f.strip_prefix(game_dir).ok()?;
    Some(rel.to_str()?.to_string())
}

fn walk(gfs: &dyn GameFs, dir: &Path, ext: &str, tree: bool, depth: usize, out: &mut Vec<String>) {
    if depth > 16 || out.len() >= MAX_FILES {
        return;
    }
    let Some(mut names) = gfs.names(dir) else {
        return;
    };
    names.sort();
    for n in names {
        let p = dir.join(&n);
        match gfs.kind(&p) {
            Some(Kind::File) => {
                let has_ext = p
                    .extension()
                    .is_some_and(|e| e.to_string_lossy().eq_ignore_ascii_case(ext));
                if has_ext && out.len() < MAX_FILES {
                    if let Some(s) = p.to_str() {
                        out.push(s.to_string());
                    }
                }
            }
            Some(Kind::Dir) if tree => walk(gfs, &p, ext, tree, depth + 1, out),
            _ => {}
        }
    }
}

/// Reads the files of `fam` under `game_dir`: (relative path, bytes). A file over
/// [`MAX_FILE_BYTES`] or past the [`MAX_TABLE_BYTES`] budget is an error.
pub fn read_files(
    gfs: &dyn GameFs,
    game_dir: &Path,
    fam: &Family,
) -> Result<Vec<(String, Vec<u8>)>, ViewError> {
    read_listed(gfs, game_dir, fam, list_files(gfs, game_dir, fam))
}

/// [`read_files`] of the files `rels` (relative to `game_dir`) of `fam`.
pub fn read_listed(
    gfs: &dyn GameFs,
    game_dir: &Path,
    fam: &Family,
    rels: Vec<String>,
) -> Result<Vec<(String, Vec<u8>)>, ViewError> {
    let mut total = 0u64;
    let mut out = Vec::new();
    for rel in rels {
        let p = game_dir.join(&rel);
        let Some(b) = gfs.read(&p, MAX_FILE_BYTES) else {
            return Err(ViewError::invalid(
                rel,
                format!("unreadable or over {MAX_FILE_BYTES} bytes"),
            ));
        };
        total += b.len() as u64;
        if total > MAX_TABLE_BYTES {
            return Err(ViewError::invalid(
                fam.csv,
                format!("its files hold over {MAX_TABLE_BYTES} bytes"),
            ));
        }
        out.push((rel, b));
    }
    Ok(out)
}

/// Where a cell's value lives.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Cell {
    /// No such key, and it can be added to section `node` of the row's file.
    Absent(usize),
    /// The single `key=value` of section `node`.
    Value(usize),
    /// Shown but not editable, with the reason.
    ReadOnly(String),
}

/// One column: a key of the row's section or of a nested section.
#[derive(Debug, Clone)]
struct Column {
    /// Header (the most common spelling).
    name: String,
    /// Nested section names below the row's section (empty for its own keys).
    sub: Vec<String>,
    /// The key.
    key: String,
    /// Every non-empty value of the column is a number.
    numeric: bool,
}

struct Row {
    file: usize,
    section: String,
    values: Vec<String>,
    cells: Vec<Cell>,
}

/// One file an edited CSV changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    /// Relative path (as the `path` column).
    pub path: String,
    /// Its bytes the table was built from.
    pub old: Vec<u8>,
    /// Its new bytes.
    pub new: Vec<u8>,
    /// The edited cells of its rows, in CSV order.
    pub cells: Vec<CellChange>,
}

/// One edited cell: row (by section), column, value before and after (empty: no key).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CellChange {
    /// The row's section.
    pub section: String,
    /// The column's header.
    pub column: String,
    /// The value before.
    pub old: String,
    /// The value after.
    pub new: String,
}

impl std::fmt::Display for CellChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "[{}] {}: {:?} -> {:?}",
            self.section, self.column, self.old, self.new
        )
    }
}

/// A family's table built from its files.
pub struct Table {
    csv: &'static str,
    files: Vec<(String, Document)>,
    columns: Vec<Column>,
    rows: Vec<Row>,
    /// Files that could not be read as TDF (relative path, why): no row, never written.
    pub skipped: Vec<(String, String)>,
}

/// Key of a column: lower-case nested section names and key, joined by `[` (which no key
/// holds, so a key with a `.` in it never merges with a nested section's key; their headers
/// would then be the same, and a save of that table is refused as naming a column twice).
fn col_id(sub: &[String], key: &str) -> String {
    let mut s = String::new();
    for p in sub {
        s.push_str(&p.to_ascii_lowercase());
        s.push('[');
    }
    s.push_str(&key.to_ascii_lowercase());
    s
}

/// A decimal number as the game reads one (`-12`, `0.5`, `.5`, `+3.`).
pub fn is_number(s: &str) -> bool {
    let s = s.strip_prefix(['-', '+']).unwrap_or(s);
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    (!int.is_empty() || !frac.is_empty())
        && int.bytes().all(|b| b.is_ascii_digit())
        && frac.bytes().all(|b| b.is_ascii_digit())
}

fn same_number(a: &str, b: &str) -> bool {
    is_number(a)
        && is_number(b)
        && matches!((a.parse::<f64>(), b.parse::<f64>()), (Ok(x), Ok(y)) if x == y)
}

impl Table {
    /// Builds the table of `fam` from its files (relative path, bytes).
    pub fn build(fam: &Family, files: Vec<(String, Vec<u8>)>) -> Table {
        let mut docs = Vec::new();
        let mut skipped = Vec::new();
        for (rel, bytes) in files {
            match tdf_doc::parse(&bytes) {
                Ok(d) => docs.push((rel, d)),
                Err(e) => skipped.push((rel, e.to_string())),
            }
        }
        // Columns: first appearance order; spelling counts per column.
        let mut ids: HashMap<String, usize> = HashMap::new();
        let mut cols: Vec<(Vec<String>, String, HashMap<String, usize>)> = Vec::new();
        let mut row_nodes: Vec<(usize, usize)> = Vec::new();
        for (fi, (_, d)) in docs.iter().enumerate() {
            for &top in d.top() {
                let n = &d.nodes()[top];
                if fam.only.is_some_and(|o| !n.name.eq_ignore_ascii_case(o)) {
                    continue;
                }
                row_nodes.push((fi, top));
                // Keys of the section and of its nested sections (explicit stack).
                let mut stack: Vec<(usize, Vec<String>)> = vec![(top, Vec::new())];
                while let Some((id, sub)) = stack.pop() {
                    let node = &d.nodes()[id];
                    for e in &node.entries {
                        let cid = col_id(&sub, &e.key);
                        let ci = *ids.entry(cid).or_insert_with(|| {
                            cols.push((sub.clone(), e.key.clone(), HashMap::new()));
                            cols.len() - 1
                        });
                        *cols[ci].2.entry(e.key.clone()).or_default() += 1;
                    }
                    for &c in node.children.iter().rev() {
                        let mut s = sub.clone();
                        s.push(d.nodes()[c].name.clone());
                        stack.push((c, s));
                    }
                }
            }
        }
        let mut columns: Vec<Column> = cols
            .into_iter()
            .map(|(sub, first, counts)| {
                let best = counts
                    .iter()
                    .max_by(|a, b| a.1.cmp(b.1).then_with(|| b.0.cmp(a.0)))
                    .map_or(first, |(k, _)| k.clone());
                let mut name = sub.join(".");
                if !name.is_empty() {
                    name.push('.');
                }
                name.push_str(&best);
                Column {
                    name,
                    sub,
                    key: best,
                    numeric: true,
                }
            })
            .collect();
        let mut rows = Vec::with_capacity(row_nodes.len());
        for (fi, top) in row_nodes {
            let d = &docs[fi].1;
            let mut values = Vec::with_capacity(columns.len());
            let mut cells = Vec::with_capacity(columns.len());
            for col in &columns {
                let (v, c) = locate(d, top, col);
                values.push(v);
                cells.push(c);
            }
            rows.push(Row {
                file: fi,
                section: d.nodes()[top].name.clone(),
                values,
                cells,
            });
        }
        for (ci, col) in columns.iter_mut().enumerate() {
            let mut any = false;
            for r in &rows {
                let v = &r.values[ci];
                if !v.is_empty() {
                    any = true;
                    if !is_number(v) {
                        col.numeric = false;
                        break;
                    }
                }
            }
            col.numeric &= any;
        }
        Table {
            csv: fam.csv,
            files: docs,
            columns,
            rows,
            skipped,
        }
    }

    /// Makes every cell of the rows of file `rel` read-only, for reason `why`.
    pub fn lock_file(&mut self, rel: &str, why: &str) {
        let Some(fi) = self.files.iter().position(|(r, _)| r == rel) else {
            return;
        };
        for r in self.rows.iter_mut().filter(|r| r.file == fi) {
            for c in &mut r.cells {
                *c = Cell::ReadOnly(why.to_string());
            }
        }
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether the table has no row.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The header: `path`, `section`, then the key columns.
    pub fn header(&self) -> Vec<&str> {
        let mut h = vec!["path", "section"];
        h.extend(self.columns.iter().map(|c| c.name.as_str()));
        h
    }

    /// The CSV text (UTF-8, `\n` line ends, quoted where needed).
    pub fn to_csv(&self) -> Vec<u8> {
        let mut w = csv::WriterBuilder::new()
            .terminator(csv::Terminator::Any(b'\n'))
            .from_writer(Vec::new());
        // Writing into a Vec cannot fail.
        let _ = w.write_record(self.header());
        for r in &self.rows {
            let mut rec: Vec<&str> = vec![self.files[r.file].0.as_str(), r.section.as_str()];
            rec.extend(r.values.iter().map(String::as_str));
            let _ = w.write_record(rec);
        }
        w.into_inner().unwrap_or_default()
    }

    /// The new bytes of every file an edited CSV changes (relative path, bytes), or the first
    /// error naming its CSV row and column; empty when nothing was edited.
    pub fn plan(&self, edited: &[u8]) -> Result<Vec<(String, Vec<u8>)>, ViewError> {
        Ok(self
            .changes(edited)?
            .into_iter()
            .map(|c| (c.path, c.new))
            .collect())
    }

    /// [`Table::plan`] with, for every changed file, its bytes before and the cells edited.
    pub fn changes(&self, edited: &[u8]) -> Result<Vec<FileChange>, ViewError> {
        let file = self.csv;
        let mut rd = csv::ReaderBuilder::new()
            .flexible(true)
            .has_headers(false)
            .from_reader(edited);
        let mut records = rd.records();
        let header = match records.next() {
            Some(Ok(h)) => h,
            Some(Err(e)) => return Err(ViewError::invalid(file, e.to_string())),
            None => return Err(ViewError::invalid(file, "empty: the header is missing")),
        };
        // CSV column → table column (None for path/section).
        let want = self.header();
        let mut map: Vec<Option<usize>> = Vec::with_capacity(header.len());
        let mut seen = vec![false; want.len()];
        let (mut path_col, mut sec_col) = (None, None);
        for (i, h) in header.iter().enumerate() {
            let h = h.trim_start_matches('\u{feff}');
            let Some(j) = want.iter().position(|w| w.eq_ignore_ascii_case(h)) else {
                return Err(csv_err(
                    file,
                    1,
                    h,
                    "unknown column: columns cannot be added (add the key to a file instead)",
                ));
            };
            if seen[j] {
                return Err(csv_err(file, 1, h, "column appears twice"));
            }
            seen[j] = true;
            match j {
                0 => path_col = Some(i),
                1 => sec_col = Some(i),
                _ => {}
            }
            map.push(j.checked_sub(2));
        }
        if let Some(j) = seen.iter().position(|s| !s) {
            return Err(csv_err(
                file,
                1,
                want[j],
                "column is missing: columns cannot be removed",
            ));
        }
        let (Some(pc), Some(sc)) = (path_col, sec_col) else {
            return Err(ViewError::invalid(file, "path or section column missing"));
        };
        // Rows by (path, section, occurrence).
        let mut index: HashMap<(String, String), Vec<usize>> = HashMap::new();
        for (ri, r) in self.rows.iter().enumerate() {
            index
                .entry((
                    self.files[r.file].0.to_ascii_lowercase(),
                    r.section.to_ascii_lowercase(),
                ))
                .or_default()
                .push(ri);
        }
        let mut used = vec![false; self.rows.len()];
        let mut edits: HashMap<usize, Vec<Edit>> = HashMap::new();
        let mut cells: HashMap<usize, Vec<CellChange>> = HashMap::new();
        for rec in records {
            let rec = rec.map_err(|e| ViewError::invalid(file, e.to_string()))?;
            // A CRLF record starts, for the csv crate, at the `\n` of the line before.
            let line = rec.position().map_or(0, |p| {
                let at_lf =
                    usize::try_from(p.byte()).ok().and_then(|b| edited.get(b)) == Some(&b'\n');
                p.line() + u64::from(at_lf)
            });
            if rec.iter().all(|c| c.is_empty()) {
                continue;
            }
            if rec.len() != header.len() {
                return Err(csv_err(
                    file,
                    line,
                    format!("{}", rec.len()),
                    format!("{} fields, the header has {}", rec.len(), header.len()),
                ));
            }
            let p = rec.get(pc).unwrap_or_default();
            let s = rec.get(sc).unwrap_or_default();
            let key = (p.to_ascii_lowercase(), s.to_ascii_lowercase());
            let Some(ri) = index
                .get(&key)
                .and_then(|v| v.iter().copied().find(|&ri| !used[ri]))
            else {
                return Err(csv_err(
                    file,
                    line,
                    "path",
                    format!(
                        "{p} [{s}] is not a row of the table: rows cannot be added (a unit is a set of files, not a row)"
                    ),
                ));
            };
            used[ri] = true;
            let row = &self.rows[ri];
            for (i, cell) in rec.iter().enumerate() {
                let Some(ci) = map[i] else { continue };
                let col = &self.columns[ci];
                let old = &row.values[ci];
                if cell == old || (col.numeric && same_number(cell, old)) {
                    continue;
                }
                let bad = |msg: String| csv_err(file, line, col.name.clone(), msg);
                if col.numeric && !cell.is_empty() && !is_number(cell) {
                    return Err(bad(format!("{cell:?} is not a number")));
                }
                let node = match &row.cells[ci] {
                    Cell::ReadOnly(why) => return Err(bad(format!("read-only cell: {why}"))),
                    Cell::Absent(n) | Cell::Value(n) => *n,
                };
                let edit = if cell.is_empty() {
                    Edit::Remove {
                        node,
                        key: col.key.clone(),
                    }
                } else {
                    tdf_doc::encode_value(cell).map_err(|e| bad(e.msg))?;
                    Edit::Set {
                        node,
                        key: col.key.clone(),
                        value: cell.to_string(),
                    }
                };
                edits.entry(row.file).or_default().push(edit);
                cells.entry(row.file).or_default().push(CellChange {
                    section: row.section.clone(),
                    column: col.name.clone(),
                    old: old.clone(),
                    new: cell.to_string(),
                });
            }
        }
        if let Some(ri) = used.iter().position(|u| !u) {
            let r = &self.rows[ri];
            return Err(ViewError::invalid(
                file,
                format!(
                    "the row of {} [{}] is missing: rows cannot be deleted (a unit is a set of files, not a row)",
                    self.files[r.file].0, r.section
                ),
            ));
        }
        let mut files: Vec<usize> = edits.keys().copied().collect();
        files.sort_unstable();
        let mut out = Vec::new();
        for fi in files {
            let (rel, doc) = &self.files[fi];
            let new = doc
                .apply(&edits[&fi])
                .map_err(|e| ViewError::invalid(rel.clone(), e.to_string()))?;
            if new != doc.bytes() {
                out.push(FileChange {
                    path: rel.clone(),
                    old: doc.bytes().to_vec(),
                    new,
                    cells: cells.remove(&fi).unwrap_or_default(),
                });
            }
        }
        Ok(out)
    }
}

/// The value and cell of `col` for the row of section `top`.
fn locate(d: &Document, top: usize, col: &Column) -> (String, Cell) {
    let mut node = top;
    for name in &col.sub {
        let mut hits = d.nodes()[node]
            .children
            .iter()
            .copied()
            .filter(|&c| d.nodes()[c].name.eq_ignore_ascii_case(name));
        match (hits.next(), hits.next()) {
            (Some(c), None) => node = c,
            (None, _) => {
                return (
                    String::new(),
                    Cell::ReadOnly(format!("the section has no [{name}]")),
                )
            }
            (Some(_), Some(_)) => {
                return (
                    String::new(),
                    Cell::ReadOnly(format!("[{name}] appears more than once")),
                )
            }
        }
    }
    match d.key(node, &col.key) {
        KeyLookup::One(i) => {
            let v = d.nodes()[node].entries[i].value.clone().unwrap_or_default();
            (v, Cell::Value(node))
        }
        KeyLookup::Missing if d.nodes()[node].close.is_some() => {
            (String::new(), Cell::Absent(node))
        }
        KeyLookup::Missing => (
            String::new(),
            Cell::ReadOnly("its section is not closed by }".into()),
        ),
        KeyLookup::Ambiguous => {
            let first = d.nodes()[node]
                .entries
                .iter()
                .find(|e| e.key.eq_ignore_ascii_case(&col.key))
                .and_then(|e| e.value.clone())
                .unwrap_or_default();
            (
                first,
                Cell::ReadOnly("the key appears more than once".into()),
            )
        }
        KeyLookup::Bare => (String::new(), Cell::ReadOnly("the key has no '='".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn units() -> Table {
        let files = vec![
            (
                "units/ARMCOM.FBI".to_string(),
                b"[UNITINFO]\r\n\t{\r\n\tUnitName=ARMCOM;\r\n\tBuildCostEnergy=34125;\r\n\tName=Commander;\r\n\t}\r\n".to_vec(),
            ),
            (
                "units/corak.fbi".to_string(),
                b"[UNITINFO]\n{\nunitname=CORAK;\nbuildcostenergy=900;\ndup=1;\ndup=2;\n}\n".to_vec(),
            ),
        ];
        Table::build(family("units.csv").unwrap(), files)
    }

    #[test]
    fn header_keeps_the_common_spelling_and_unedited_is_a_no_op() {
        let t = units();
        assert_eq!(
            t.header(),
            [
                "path",
                "section",
                "UnitName",
                "BuildCostEnergy",
                "Name",
                "dup"
            ]
        );
        let csv = t.to_csv();
        assert_eq!(
            String::from_utf8(csv.clone()).unwrap(),
            "path,section,UnitName,BuildCostEnergy,Name,dup\n\
             units/ARMCOM.FBI,UNITINFO,ARMCOM,34125,Commander,\n\
             units/corak.fbi,UNITINFO,CORAK,900,,1\n"
        );
        assert!(t.plan(&csv).unwrap().is_empty());
        // Sorted rows, CRLF, reformatted numbers: still nothing to do.
        let resaved = "path,section,UnitName,BuildCostEnergy,Name,dup\r\n\
             units/corak.fbi,UNITINFO,CORAK,900.0,,1\r\n\
             units/ARMCOM.FBI,UNITINFO,ARMCOM,34125,Commander,\r\n";
        assert!(t.plan(resaved.as_bytes()).unwrap().is_empty());
        let e = t
            .plan(resaved.replace("34125", "x").as_bytes())
            .unwrap_err();
        assert!(
            e.to_string().contains("row 3, column BuildCostEnergy"),
            "{e}"
        );
    }

    #[test]
    fn edits_land_in_their_files() {
        let t = units();
        let csv = String::from_utf8(t.to_csv()).unwrap();
        let edited = csv
            .replace("34125", "40000")
            .replace("CORAK,900,,1", "CORAK,,Thud,1");
        let plan = t.plan(edited.as_bytes()).unwrap();
        assert_eq!(plan.len(), 2);
        assert_eq!(plan[0].0, "units/ARMCOM.FBI");
        assert_eq!(
            plan[0].1,
            b"[UNITINFO]\r\n\t{\r\n\tUnitName=ARMCOM;\r\n\tBuildCostEnergy=40000;\r\n\tName=Commander;\r\n\t}\r\n"
        );
        assert_eq!(
            plan[1].1,
            b"[UNITINFO]\n{\nunitname=CORAK;\ndup=1;\ndup=2;\nName=Thud;\n}\n"
        );
    }

    #[test]
    fn bad_edits_name_row_and_column() {
        let t = units();
        let csv = String::from_utf8(t.to_csv()).unwrap();
        let e = t.plan(csv.replace("34125", "lots").as_bytes()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "units.csv: row 2, column BuildCostEnergy: \"lots\" is not a number"
        );
        let e = t.plan(csv.replace("CORAK,900,,1", "CORAK,900,,3").as_bytes());
        assert!(e
            .unwrap_err()
            .to_string()
            .contains("row 3, column dup: read-only"));
        let added = format!("{csv}units/new.fbi,UNITINFO,NEW,1,,\n");
        assert!(t
            .plan(added.as_bytes())
            .unwrap_err()
            .to_string()
            .contains("rows cannot be added"));
        let deleted: String = csv.lines().take(2).map(|l| format!("{l}\n")).collect();
        assert!(t
            .plan(deleted.as_bytes())
            .unwrap_err()
            .to_string()
            .contains("rows cannot be deleted"));
        let e = t.plan(csv.replace(",dup", ",dupe").as_bytes()).unwrap_err();
        assert!(e.to_string().contains("unknown column"));
    }

    #[test]
    fn number_check() {
        for s in ["1", "-2", "0.5", ".5", "3.", "+4"] {
            assert!(is_number(s), "{s}");
        }
        for s in ["", ".", "-", "1e3", "inf", "1,5", "x"] {
            assert!(!is_number(s), "{s}");
        }
    }
}
