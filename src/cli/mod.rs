//! Command-line glue: parses arguments and calls the library ([`crate::view`] for dumps and
//! builds, [`crate::fs`] for mounts); writes every output file through [`crate::atomic`].

/// `print!` that returns a closed pipe as an error (`tafs … | head` ends quietly, exit 0)
/// instead of panicking.
macro_rules! outp {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        write!(std::io::stdout().lock(), $($arg)*)?;
    }};
}

/// `println!` that returns a closed pipe as an error; see [`outp`].
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout().lock(), $($arg)*)?;
    }};
}

mod bos;
mod cob;
pub mod demo;
mod docs;
mod fnt;
mod fstab;
mod gaf;
mod hpi;
mod model3d;
mod mount;
mod notify;
mod pcx;
mod progress;
mod roundtrip;
mod runfile;
mod statelock;
mod tables;
mod tnt;

use clap::{Parser, Subcommand};

/// tafs: Total Annihilation GAF sprites and TNT maps as editable files.
#[derive(Parser, Debug)]
#[command(
    name = "tafs",
    version,
    about,
    propagate_version = true,
    after_help = QUICK_START
)]
pub struct Cli {
    /// More log output (-v info, -vv debug, -vvv trace).
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
    #[command(subcommand)]
    command: Command,
}

/// The quick start `tafs --help` ends with: the README's first commands (tests/readme.rs
/// checks that each is one the README runs).
const QUICK_START: &str = "Try it on the demo (README.md has the recipes, docs/ the reference):
  tafs demo ~/ta
  mkdir -p ~/ta-mnt
  tafs mount -d ~/ta ~/ta-mnt           # -d: return once mounted, serve in the background
  ls ~/ta-mnt/anims/demo.gaf ~/ta-mnt/anims/demo.gaf/pulse
  tafs status ~/ta-mnt                  # after saving a file: what was committed, or why not
  tafs umount ~/ta-mnt";

#[derive(Subcommand, Debug)]
enum Command {
    /// GAF sprite animations: list, export, dump, build, palette, roundtrip.
    #[command(subcommand)]
    Gaf(gaf::GafCmd),
    /// TA: Kingdoms .taf sprites (paletted or truecolor ARGB4444/ARGB1555): the `gaf`
    /// commands under kbot's name.
    #[command(subcommand)]
    Taf(gaf::GafCmd),
    /// TNT maps: describe, minimap, heightmap, image, buildmap, voidmap, ascii, features, lint,
    /// optimize, unpack, pack, preview.
    #[command(subcommand)]
    Tnt(tnt::TntCmd),
    /// PCX pictures (unit pictures, GUI panels): describe, convert, dump, build.
    #[command(subcommand)]
    Pcx(pcx::PcxCmd),
    /// Palettes (.pal, TA: Kingdoms palette .pcx) and lookup tables (.alp .shd .lht): dump,
    /// build, convert, lookup, gpl.
    #[command(subcommand)]
    Pal(pcx::PalCmd),
    /// Bitmap fonts (.fnt): info, describe, render, sheet, dump, build.
    #[command(subcommand)]
    Fnt(fnt::FntCmd),
    /// 3DO models (read-only): describe, dump (OBJ + MTL, textures, pieces.csv, preview.png).
    #[command(subcommand, name = "3do")]
    Model3d(model3d::ModelCmd),
    /// COB unit scripts: list, info, disassemble, assemble, roundtrip, decompile, compile,
    /// lint.
    #[command(subcommand)]
    Cob(cob::CobCmd),
    /// Check that every rebuildable asset (GAF, TNT, PCX, PAL) under the given paths rebuilds
    /// from its unedited view to identical bytes.
    Roundtrip(roundtrip::RoundtripArgs),
    /// HPI archives (.hpi .ufo .ccx .gp3 .gpf, TA: Kingdoms .hpi): list, info, extract, pack.
    #[command(subcommand)]
    Hpi(hpi::HpiCmd),
    /// Write a small game folder to try tafs on (sprites, a map, a unit picture, a palette,
    /// a model).
    Demo(demo::DemoArgs),
    /// Mount a game folder: every .gaf/.tnt/.pcx/.pal/.3do appears as a directory of editable files.
    Mount(mount::MountArgs),
    /// Unmount a tafs mount.
    Umount(mount::UmountArgs),
    /// Write-back status of a mount: staged, pending, failed and conflicting edits (with
    /// `mount --merged --into`: also what the mod overrides and adds).
    Status(mount::StatusArgs),
    /// Versions of a binary kept by write-back (newest first).
    History(mount::HistoryArgs),
    /// Put back a version of a binary kept by write-back.
    Restore(mount::RestoreArgs),
    /// Which source (loose file or archive) a path of the merged game view comes from.
    Which(mount::WhichArgs),
    /// What the mod of a `mount --merged --into` changes: its files against what they shadow.
    Diff(mount::DiffArgs),
    /// Balance tables: units, weapons, features, sounds, build menus as CSVs (export, apply).
    #[command(subcommand)]
    Tables(tables::TablesCmd),
    /// TDF/FBI text: get or set one value, every other byte kept.
    #[command(subcommand)]
    Tdf(tables::TdfCmd),
    /// Shell completions (bash, zsh, fish) of every command, on standard output.
    Completions(docs::CompletionsArgs),
    /// Man pages of tafs and every subcommand.
    Man(docs::ManArgs),
}

/// Runs the CLI and returns the process exit code.
///
/// The mount(8) form `tafs GAME_DIR MOUNTPOINT -o OPT[,OPT…]` (and the program names
/// `mount.tafs`, `mount.fuse.tafs`) runs `tafs mount` (see [`fstab`]).
pub fn main() -> i32 {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let cli = match fstab::as_mount_command(&args) {
        None => Cli::parse_from(args),
        Some(Ok(a)) if a.is_empty() => return 0,
        Some(Ok(a)) => Cli::parse_from(a),
        Some(Err(e)) => {
            eprintln!("tafs: {e}");
            // mount(8)'s "incorrect invocation or permissions"
            return 1;
        }
    };
    let level = match cli.verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    let _ = env_logger::Builder::from_env(env_logger::Env::default().default_filter_or(level))
        .format_timestamp_millis()
        .try_init();
    let result = match cli.command {
        Command::Gaf(c) | Command::Taf(c) => gaf::run(c),
        Command::Tnt(c) => tnt::run(c),
        Command::Hpi(c) => hpi::run(c),
        Command::Pcx(c) => pcx::run_pcx(c),
        Command::Pal(c) => pcx::run_pal(c),
        Command::Model3d(c) => model3d::run(c),
        Command::Cob(c) => cob::run(c),
        Command::Fnt(c) => fnt::run(c),
        Command::Roundtrip(a) => roundtrip::run(a),
        Command::Demo(a) => demo::run(a),
        Command::Mount(a) => mount::run(a),
        Command::Umount(a) => mount::umount(a),
        Command::Status(a) => mount::status(a),
        Command::History(a) => mount::history(a),
        Command::Restore(a) => mount::restore(a),
        Command::Which(a) => mount::which(a),
        Command::Diff(a) => mount::diff(a),
        Command::Tables(c) => tables::run_tables(c),
        Command::Tdf(c) => tables::run_tdf(c),
        Command::Completions(a) => docs::completions(a),
        Command::Man(a) => docs::man(a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            if is_broken_pipe(&e) {
                return 0;
            }
            eprintln!("tafs: {e:#}");
            1
        }
    }
}

fn is_broken_pipe(e: &CliError) -> bool {
    matches!(e, CliError::Io(io) if io.kind() == std::io::ErrorKind::BrokenPipe)
}

/// What a command can fail with; printed as one line.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// A file could not be read or written.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// A view could not be generated or rebuilt.
    #[error("{0}")]
    View(#[from] crate::view::ViewError),
    /// Anything else, already worded for the user.
    #[error("{0}")]
    Msg(String),
}

/// Shorthand for a worded error.
pub fn err<T>(msg: impl Into<String>) -> Result<T, CliError> {
    Err(CliError::Msg(msg.into()))
}

/// Reads a file, naming it in the error.
pub fn read_file(path: &std::path::Path) -> Result<Vec<u8>, CliError> {
    std::fs::read(path).map_err(|e| CliError::Msg(format!("{}: {e}", path.display())))
}

/// Writes `target` atomically with what `f` writes (see [`crate::atomic`]: nothing is left
/// on error, a replaced file keeps its mode), naming the target in I/O errors.
pub fn write_file(
    target: &std::path::Path,
    f: impl FnOnce(&mut dyn std::io::Write) -> Result<(), CliError>,
) -> Result<(), CliError> {
    crate::atomic::replace_with(target, f).map_err(|e| match e {
        CliError::Io(io) => CliError::Msg(format!("{}: {io}", target.display())),
        e => e,
    })
}

/// [`write_file`] of `bytes`.
pub fn write_bytes(target: &std::path::Path, bytes: &[u8]) -> Result<(), CliError> {
    write_file(target, |w| Ok(w.write_all(bytes)?))
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_command_definition_is_consistent() {
        // clap's own checks (unique argument names, …) of every subcommand
        use clap::CommandFactory;
        super::Cli::command().debug_assert();
    }
}
