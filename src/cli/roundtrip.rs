//! `tafs roundtrip PATH…`: every asset that can be rebuilt (GAF, TNT, PCX, PAL, 3DO) under the
//! given paths is opened as the mount shows it and rebuilt from its unedited view; the
//! report says which rebuild the identical bytes. GAFs get the checks of `tafs gaf
//! roundtrip` (decode → encode, dump → build --base, what the game reads).

use super::gaf::{check_one, Check};
use super::CliError;
use crate::view::{self, AssetKind, MemFileSet};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Arguments of `tafs roundtrip`.
#[derive(clap::Args, Debug)]
pub struct RoundtripArgs {
    /// Files or folders (searched recursively for .gaf .taf .tnt .pcx .pal .alp .shd .lht
    /// .cob .3do .fnt).
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
}

/// One row of the report.
struct Row {
    kind: AssetKind,
    file: String,
    identical: bool,
    problem: Option<String>,
    skipped: Option<String>,
}

fn kind_name(k: AssetKind) -> &'static str {
    match k {
        AssetKind::Gaf => "gaf",
        AssetKind::Tnt => "tnt",
        AssetKind::Pcx => "pcx",
        AssetKind::Pal => "pal",
        AssetKind::Model3d => "3do",
        AssetKind::Cob => "cob",
        AssetKind::Fnt => "fnt",
        AssetKind::PalTable => "table",
    }
}

fn from_gaf(c: Check) -> Row {
    Row {
        kind: AssetKind::Gaf,
        file: c.file,
        identical: c.build_identical,
        problem: c.problem,
        skipped: c.skipped,
    }
}

/// Opens `path` as the view the mount shows and rebuilds it with the original as base.
fn check_view(kind: AssetKind, path: &Path) -> Row {
    let mut r = Row {
        kind,
        file: path.display().to_string(),
        identical: false,
        problem: None,
        skipped: None,
    };
    let data = match std::fs::read(path) {
        Ok(d) => d,
        Err(e) => {
            r.problem = Some(e.to_string());
            return r;
        }
    };
    let opts = view::options_for(path, None, &Default::default());
    let rebuilt = view::open(kind, &data, &opts)
        .and_then(|v| MemFileSet::from_view(&*v))
        .and_then(|files| view::rebuild(kind, &files, Some(&data), &opts));
    match rebuilt {
        Ok(b) if b == data => r.identical = true,
        Ok(b) => {
            let at = b.iter().zip(&data).position(|(x, y)| x != y);
            r.problem = Some(match at {
                Some(o) => format!("rebuilt bytes differ at offset {o:#x}"),
                None => format!("rebuilt {} bytes, the file has {}", b.len(), data.len()),
            })
        }
        Err(e) => r.problem = Some(e.to_string()),
    }
    r
}

/// Runs `tafs roundtrip`; exit code 1 when any file fails.
pub fn run(a: RoundtripArgs) -> Result<i32, CliError> {
    run_only(&a.paths, None)
}

/// [`run`] over the assets of kind `only` (all when `None`).
pub fn run_only(paths: &[PathBuf], only: Option<AssetKind>) -> Result<i32, CliError> {
    use rayon::prelude::*;
    let mut files = Vec::new();
    for p in paths {
        collect(p, &mut files, 0)?;
    }
    files.retain(|(k, _)| only.map_or(true, |o| o == *k));
    files.sort_by(|a, b| a.1.cmp(&b.1));
    let bar = super::progress::files(files.len(), 8);
    let rows: Vec<Row> = files
        .par_iter()
        .map(|(kind, f)| {
            let row = match kind {
                AssetKind::Gaf => from_gaf(check_one(f)),
                k => check_view(*k, f),
            };
            bar.inc(1);
            row
        })
        .collect();
    bar.finish_and_clear();
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{:<8} {:<5} {:>10}  file",
        "status", "kind", "rebuild=="
    )?;
    let (mut failed, mut skipped, mut identical) = (0, 0, 0);
    for r in &rows {
        let status = if r.problem.is_some() {
            failed += 1;
            "FAIL"
        } else if r.skipped.is_some() {
            skipped += 1;
            "skip"
        } else {
            "ok"
        };
        identical += usize::from(r.identical && status == "ok");
        let same = match (status, r.identical) {
            ("ok", true) => "identical",
            ("ok", false) => "equivalent",
            _ => "-",
        };
        writeln!(
            out,
            "{status:<8} {:<5} {same:>10}  {}",
            kind_name(r.kind),
            r.file
        )?;
        if let Some(p) = r.problem.as_ref().or(r.skipped.as_ref()) {
            writeln!(out, "         {p}")?;
        }
    }
    writeln!(
        out,
        "\n{} file(s): {} ok, {failed} failed, {skipped} skipped; {identical} rebuilt byte-identical from the unedited view",
        rows.len(),
        rows.len() - failed - skipped
    )?;
    Ok(if failed > 0 { 1 } else { 0 })
}

/// Finds the rebuildable assets under `p` (a file given by name is taken whatever its kind,
/// if it has one).
fn collect(p: &Path, out: &mut Vec<(AssetKind, PathBuf)>, depth: usize) -> Result<(), CliError> {
    if depth > 64 {
        return Ok(());
    }
    let md =
        std::fs::symlink_metadata(p).map_err(|e| CliError::Msg(format!("{}: {e}", p.display())))?;
    let kind = p
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(AssetKind::from_name)
        .filter(|k| k.writable());
    if md.is_dir() {
        let rd =
            std::fs::read_dir(p).map_err(|e| CliError::Msg(format!("{}: {e}", p.display())))?;
        for e in rd.flatten() {
            let is_dir = e.file_type().map(|t| t.is_dir()).unwrap_or(false);
            let name = e.file_name().to_string_lossy().to_string();
            let asset = AssetKind::from_name(&name).is_some_and(|k| k.writable());
            if is_dir || asset {
                collect(&e.path(), out, depth + 1)?;
            }
        }
    } else if let Some(k) = kind {
        out.push((k, p.to_path_buf()));
    } else if depth == 0 {
        return Err(CliError::Msg(format!(
            "{}: not a .gaf, .taf, .tnt, .pcx, .pal, .cob or .3do",
            p.display()
        )));
    }
    Ok(())
}
