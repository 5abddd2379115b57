//! `tafs tables export|apply` (the balance tables of [`crate::view::tables`] without a mount)
//! and `tafs tdf get|set` (one value of one TDF file, edited losslessly).

use super::{err, read_file, write_bytes, CliError};
use crate::formats::tdf_doc::{self, Edit, KeyLookup, SectionLookup};
use crate::game::Plain;
use crate::view::tables::{read_files, FileChange, Table, FAMILIES};
use clap::{Args, Subcommand};
use std::io::Write;
use std::path::{Path, PathBuf};

/// `tafs tables …`
#[derive(Subcommand, Debug)]
pub enum TablesCmd {
    /// Write units.csv, weapons.csv, features.csv, sounds.csv, downloads.csv and moveinfo.csv
    /// of a game folder into a folder.
    Export(ExportArgs),
    /// Apply the edited CSVs of a folder to a game folder: every edited cell lands in its
    /// file; nothing is written if any cell is refused.
    Apply(ApplyArgs),
}

/// `tafs tables export`
#[derive(Args, Debug)]
pub struct ExportArgs {
    /// The game folder.
    pub game_dir: PathBuf,
    /// Folder the CSVs are written into (created if missing).
    #[arg(short = 't', long = "to")]
    pub to: PathBuf,
}

/// `tafs tables apply`
#[derive(Args, Debug)]
pub struct ApplyArgs {
    /// Folder holding the edited CSVs (a missing CSV changes nothing).
    pub dir: PathBuf,
    /// The game folder.
    pub game_dir: PathBuf,
    /// Print what would change without writing.
    #[arg(short = 'n', long)]
    pub dry_run: bool,
}

/// `tafs tdf …`
#[derive(Subcommand, Debug)]
pub enum TdfCmd {
    /// Print one value: `tafs tdf get units/ARMCOM.FBI UNITINFO.BuildCostEnergy`.
    Get(GetArgs),
    /// Set one value (added at the end of its section if missing), every other byte kept.
    Set(SetArgs),
}

/// `tafs tdf get`
#[derive(Args, Debug)]
pub struct GetArgs {
    /// The .fbi/.tdf/.ota file.
    pub file: PathBuf,
    /// SECTION.KEY (nested: SECTION.CHILD.KEY), ignoring case.
    pub key: String,
}

/// `tafs tdf set`
#[derive(Args, Debug)]
pub struct SetArgs {
    /// The .fbi/.tdf/.ota file.
    pub file: PathBuf,
    /// SECTION.KEY (nested: SECTION.CHILD.KEY), ignoring case.
    pub key: String,
    /// The new value.
    pub value: String,
}

/// Runs `tafs tables …`.
pub fn run_tables(cmd: TablesCmd) -> Result<i32, CliError> {
    match cmd {
        TablesCmd::Export(a) => {
            std::fs::create_dir_all(&a.to)
                .map_err(|e| CliError::Msg(format!("{}: {e}", a.to.display())))?;
            for fam in FAMILIES {
                let t = Table::build(fam, read_files(&Plain, &a.game_dir, fam)?);
                for (rel, why) in &t.skipped {
                    eprintln!("tafs: {rel}: skipped: {why}");
                }
                write_bytes(&a.to.join(fam.csv), &t.to_csv())?;
                outln!("{}: {} rows", fam.csv, t.len());
            }
            Ok(0)
        }
        TablesCmd::Apply(a) => {
            let mut changes = Vec::new();
            for fam in FAMILIES {
                let csv = a.dir.join(fam.csv);
                if !csv.exists() {
                    continue;
                }
                let edited = read_file(&csv)?;
                let t = Table::build(fam, read_files(&Plain, &a.game_dir, fam)?);
                changes.extend(t.changes(&edited)?);
            }
            if a.dry_run {
                for c in &changes {
                    outln!("would change {}", c.path);
                }
            } else {
                replace_all(&a.game_dir, &changes)?;
                for c in &changes {
                    outln!("changed {}", c.path);
                }
            }
            if changes.is_empty() {
                outln!("nothing edited");
            }
            Ok(0)
        }
    }
}

/// Replaces the files of `changes` under `game_dir`, all or none: every new text is
/// written to a temporary file beside its file first, then each is renamed over it; if a
/// rename fails, the files already replaced get their old text back.
fn replace_all(game_dir: &Path, changes: &[FileChange]) -> Result<(), CliError> {
    let mut staged = Vec::with_capacity(changes.len());
    for c in changes {
        let target = game_dir.join(&c.path);
        let like = std::fs::metadata(&target).ok();
        let p = crate::atomic::prepare_seekable::<std::io::Error>(&target, like.as_ref(), |w| {
            w.write_all(&c.new)
        })
        .map_err(|e| CliError::Msg(format!("{}: {e}; nothing written", target.display())))?;
        staged.push(p);
    }
    for (i, p) in staged.into_iter().enumerate() {
        if let Err(e) = p.commit() {
            let target = game_dir.join(&changes[i].path);
            let failed: Vec<String> = changes[..i]
                .iter()
                .filter_map(|c| {
                    let r = write_bytes(&game_dir.join(&c.path), &c.old);
                    r.err().map(|e| format!("{} ({e})", c.path))
                })
                .collect();
            return Err(CliError::Msg(match failed.is_empty() {
                true => format!(
                    "{}: {e}; nothing changed (the {i} file(s) replaced before it were put back)",
                    target.display()
                ),
                false => format!(
                    "{}: {e}; putting back failed for {}",
                    target.display(),
                    failed.join(", ")
                ),
            }));
        }
    }
    Ok(())
}

/// Runs `tafs tdf …`.
pub fn run_tdf(cmd: TdfCmd) -> Result<i32, CliError> {
    let (file, key, value) = match cmd {
        TdfCmd::Get(a) => (a.file, a.key, None),
        TdfCmd::Set(a) => (a.file, a.key, Some(a.value)),
    };
    let (file, key) = (&file, &key);
    let bytes = read_file(file)?;
    let doc =
        tdf_doc::parse(&bytes).map_err(|e| CliError::Msg(format!("{}: {e}", file.display())))?;
    let Some((sec, k)) = key.rsplit_once('.') else {
        return err(format!("{key}: expected SECTION.KEY"));
    };
    let path: Vec<&str> = sec.split('.').collect();
    let node = match doc.section(&path) {
        SectionLookup::One(n) => n,
        SectionLookup::Missing => return err(format!("{}: no section [{sec}]", file.display())),
        SectionLookup::Ambiguous => {
            return err(format!(
                "{}: [{sec}] appears more than once",
                file.display()
            ))
        }
    };
    match value {
        None => match doc.key(node, k) {
            KeyLookup::One(_) => {
                outln!("{}", doc.value(node, k).unwrap_or_default());
                Ok(0)
            }
            KeyLookup::Missing => err(format!("{}: [{sec}] has no {k}", file.display())),
            KeyLookup::Ambiguous => err(format!(
                "{}: [{sec}] {k} appears more than once",
                file.display()
            )),
            KeyLookup::Bare => err(format!("{}: [{sec}] {k} has no value", file.display())),
        },
        Some(value) => {
            let new = doc
                .apply(&[Edit::Set {
                    node,
                    key: k.to_string(),
                    value,
                }])
                .map_err(|e| CliError::Msg(format!("{}: {e}", file.display())))?;
            if new != bytes {
                write_bytes(file, &new)?;
            }
            Ok(0)
        }
    }
}
