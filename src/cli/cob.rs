//! `tafs cob …` (list, info, disassemble, assemble, roundtrip): COB unit scripts through
//! [`crate::formats::cob`] and its assembly text ([`crate::formats::cob::asm`]), with kbot's
//! command names and options.

use super::{err, read_file, write_bytes, CliError};
use crate::formats::cob::{self, asm, Cob, Limits};
use std::io::Write;
use std::path::{Path, PathBuf};

/// `tafs cob` subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum CobCmd {
    /// BOS source: decompile, compile, lint ([`super::bos`]).
    #[command(flatten)]
    Bos(super::bos::BosCmd),
    /// The scripts: table index, name, first code word, length in words.
    List {
        /// The COB file.
        file: PathBuf,
    },
    /// Version, counts, sizes, pieces and sound names.
    Info {
        /// The COB file.
        file: PathBuf,
    },
    /// COB → assembly text (the `.coba` form `assemble` reads back).
    Disassemble {
        /// The COB file.
        file: PathBuf,
        /// Write the text here (atomically) instead of standard output.
        #[arg(short, long)]
        target: Option<PathBuf>,
        /// Only this script's instructions (not reassemblable on their own).
        #[arg(short, long)]
        script: Option<String>,
    },
    /// Assembly text → COB.
    Assemble {
        /// The assembly file (.coba).
        file: PathBuf,
        /// Output COB (written atomically; default: the input with a .cob extension).
        #[arg(short, long)]
        target: Option<PathBuf>,
    },
    /// The folder the mount shows for a COB (`script.bos`, `script.coba`, `pieces.csv`,
    /// `scripts.csv`, `metadata.json`).
    Dump {
        /// The COB file.
        file: PathBuf,
        /// The folder to write (created).
        #[arg(short, long)]
        target: PathBuf,
    },
    /// Rebuild a COB from a dump folder, as a save in the mount does (an edited `script.bos`
    /// is compiled, an edited `script.coba` assembled).
    Build {
        /// The dump folder.
        dir: PathBuf,
        /// Output COB (written atomically).
        #[arg(short, long)]
        target: PathBuf,
        /// The COB the folder was dumped from: what is unedited is taken from it.
        #[arg(long)]
        base: Option<PathBuf>,
    },
    /// Check that each COB under the paths writes back and disassembles → assembles to
    /// identical bytes; one line per file.
    Roundtrip {
        /// Files or folders (searched recursively for .cob, any letter case).
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Only the failures and the summary.
        #[arg(short, long)]
        quiet: bool,
    },
}

/// Runs a `tafs cob` subcommand.
pub fn run(cmd: CobCmd) -> Result<i32, CliError> {
    match cmd {
        CobCmd::Bos(c) => super::bos::run(c),
        CobCmd::List { file } => list(&file),
        CobCmd::Info { file } => info(&file),
        CobCmd::Disassemble {
            file,
            target,
            script,
        } => disassemble(&file, target.as_deref(), script.as_deref()),
        CobCmd::Assemble { file, target } => assemble(&file, target),
        CobCmd::Roundtrip { paths, quiet } => roundtrip(&paths, quiet),
        CobCmd::Dump { file, target } => {
            let data = read_file(&file)?;
            let v = crate::view::cob::open_view(&data, &Limits::default())
                .map_err(|e| CliError::Msg(format!("{}: {e}", file.display())))?;
            super::progress::write_tree(v.as_ref(), &target)?;
            Ok(0)
        }
        CobCmd::Build { dir, target, base } => {
            let base = base.as_deref().map(read_file).transpose()?;
            let bytes = crate::view::rebuild(
                crate::view::AssetKind::Cob,
                &crate::view::DirFileSet::new(&dir),
                base.as_deref(),
                &crate::view::ViewOptions::default(),
            )
            .map_err(|e| CliError::Msg(format!("{}: {e}", dir.display())))?;
            write_bytes(&target, &bytes)?;
            Ok(0)
        }
    }
}

/// Reads and parses a COB, naming the file in the error.
pub fn load(path: &Path) -> Result<Cob, CliError> {
    let data = read_file(path)?;
    cob::parse(&data, &Limits::default())
        .map_err(|e| CliError::Msg(format!("{}: {e}", path.display())))
}

fn list(file: &Path) -> Result<i32, CliError> {
    let c = load(file)?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "index\tname\tstart_word\twords")?;
    for (i, s) in c.scripts.iter().enumerate() {
        let n = match c.shares_start_with(i) {
            Some(_) => 0,
            None => c.script_range(i).map_or(0, |r| r.len()),
        };
        writeln!(out, "{i}\t{}\t{}\t{n}", s.name, s.start)?;
    }
    Ok(0)
}

fn info(file: &Path) -> Result<i32, CliError> {
    let c = load(file)?;
    let mut out = std::io::stdout().lock();
    let layout = match c.version {
        cob::VERSION_TAK => "TA: Kingdoms layout (52-byte header, sound-name table)",
        cob::VERSION_7 => "version 7, TA layout (44-byte header)",
        _ => "TA layout (44-byte header)",
    };
    writeln!(out, "version: {} ({layout})", c.version)?;
    writeln!(out, "scripts: {}", c.scripts.len())?;
    let shared = c
        .scripts
        .iter()
        .enumerate()
        .filter(|(i, _)| c.shares_start_with(*i).is_some())
        .map(|(_, s)| s.name.as_str())
        .collect::<Vec<_>>();
    if !shared.is_empty() {
        writeln!(
            out,
            "empty scripts (no code of their own): {}",
            shared.join(", ")
        )?;
    }
    writeln!(out, "pieces: {} ({})", c.pieces.len(), c.pieces.join(" "))?;
    writeln!(out, "static variables: {}", c.static_vars)?;
    writeln!(
        out,
        "code: {} words ({} bytes)",
        c.code.len(),
        4 * c.code.len()
    )?;
    if c.has_sound_table() {
        writeln!(out, "sound names: {}", c.sounds.len())?;
        for s in &c.sounds {
            writeln!(out, "  {s}")?;
        }
    }
    if c.unknown_0x14 != 0 {
        writeln!(out, "header word 0x14: {}", c.unknown_0x14)?;
    }
    if !c.trailing.is_empty() {
        writeln!(
            out,
            "trailing bytes after the names: {} ({:?})",
            c.trailing.len(),
            String::from_utf8_lossy(&c.trailing)
        )?;
    }
    Ok(0)
}

fn disassemble(file: &Path, target: Option<&Path>, script: Option<&str>) -> Result<i32, CliError> {
    let data = read_file(file)?;
    let c = cob::parse(&data, &Limits::default())
        .map_err(|e| CliError::Msg(format!("{}: {e}", file.display())))?;
    // The whole file as the mount's script.coba shows it (ending in its origin line).
    let mut text = crate::view::cob::assembly_text(&c, &data);
    if let Some(name) = script {
        if c.script_index(name).is_none() {
            return err(format!("{}: no script {name:?}", file.display()));
        }
        text = only_script(&asm::disassemble(&c), name);
    }
    match target {
        Some(t) => write_bytes(t, text.as_bytes())?,
        None => std::io::stdout().lock().write_all(text.as_bytes())?,
    }
    Ok(0)
}

/// The lines of one `.script` block of a listing.
fn only_script(text: &str, name: &str) -> String {
    let mut keep = false;
    let mut out = String::new();
    for line in text.lines() {
        if let Some(n) = line.strip_prefix(".script ") {
            keep = n.trim().trim_matches('"').eq_ignore_ascii_case(name);
        } else if line.starts_with(".trailing") {
            keep = false;
        }
        if keep {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

fn assemble(file: &Path, target: Option<PathBuf>) -> Result<i32, CliError> {
    let data = read_file(file)?;
    let text = String::from_utf8(data)
        .map_err(|_| CliError::Msg(format!("{}: not UTF-8 text", file.display())))?;
    let c = asm::assemble(&text).map_err(|e| CliError::Msg(format!("{}:{e}", file.display())))?;
    let bytes = cob::write(&c).map_err(|e| CliError::Msg(format!("{}: {e}", file.display())))?;
    let target = target.unwrap_or_else(|| file.with_extension("cob"));
    write_bytes(&target, &bytes)?;
    Ok(0)
}

/// Every `.cob` under `paths` (any letter case), sorted; files named directly are taken.
fn collect(paths: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for p in paths {
        if !p.is_dir() {
            out.push(p.clone());
            continue;
        }
        let mut stack = vec![p.clone()];
        let mut found = Vec::new();
        while let Some(d) = stack.pop() {
            let Ok(rd) = std::fs::read_dir(&d) else {
                continue;
            };
            for e in rd.flatten() {
                let q = e.path();
                if q.is_dir() {
                    stack.push(q);
                } else if q
                    .extension()
                    .is_some_and(|x| x.to_string_lossy().eq_ignore_ascii_case("cob"))
                {
                    found.push(q);
                }
            }
        }
        found.sort();
        out.extend(found);
    }
    out
}

/// What went wrong for one file, if anything.
fn check(path: &Path) -> Result<Cob, String> {
    let data = std::fs::read(path).map_err(|e| e.to_string())?;
    let c = cob::parse(&data, &Limits::default()).map_err(|e| e.to_string())?;
    let written = cob::write(&c).map_err(|e| e.to_string())?;
    if written != data {
        return Err(first_difference("write", &written, &data));
    }
    let text = asm::disassemble(&c);
    let back = asm::assemble(&text).map_err(|e| format!("assembly:{e}"))?;
    let bytes = cob::write(&back).map_err(|e| e.to_string())?;
    if bytes != data {
        return Err(first_difference("disassemble → assemble", &bytes, &data));
    }
    Ok(c)
}

fn first_difference(what: &str, got: &[u8], want: &[u8]) -> String {
    let at = got
        .iter()
        .zip(want)
        .position(|(a, b)| a != b)
        .unwrap_or(got.len().min(want.len()));
    format!(
        "{what} differs from offset {at:#x} ({} bytes against {})",
        got.len(),
        want.len()
    )
}

fn roundtrip(paths: &[PathBuf], quiet: bool) -> Result<i32, CliError> {
    let files = collect(paths);
    if files.is_empty() {
        return err("no .cob file under the given paths");
    }
    let mut out = std::io::stdout().lock();
    let mut bad = 0;
    for f in &files {
        match check(f) {
            Ok(c) => {
                if !quiet {
                    writeln!(
                        out,
                        "identical  {}  (v{}, {} scripts, {} words)",
                        f.display(),
                        c.version,
                        c.scripts.len(),
                        c.code.len()
                    )?;
                }
            }
            Err(e) => {
                bad += 1;
                writeln!(out, "FAILED     {}: {e}", f.display())?;
            }
        }
    }
    writeln!(
        out,
        "{} of {} COB files round-trip to identical bytes (write, disassemble → assemble)",
        files.len() - bad,
        files.len()
    )?;
    Ok(if bad == 0 { 0 } else { 1 })
}
