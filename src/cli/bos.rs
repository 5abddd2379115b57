//! `tafs cob decompile|compile|lint`: unit scripts as BOS source ([`crate::formats::bos`]).

use std::path::{Path, PathBuf};

use super::{err, read_file, write_bytes, CliError};
use crate::formats::bos::{self, decompile::decompile, Angle, Limits, Mode, Options};
use crate::formats::cob;
use crate::game::scripts::FolderIncludes;
use crate::game::{game_dir_of, Plain};

/// `tafs cob` subcommands of the BOS language side.
#[derive(clap::Subcommand, Debug)]
pub enum BosCmd {
    /// COB → BOS source that compiles back to the identical COB (unstructurable scripts as
    /// verbatim `__cob(…)` words, said so in a comment).
    Decompile {
        /// The COB file.
        file: PathBuf,
        /// Output .bos (default: standard output).
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
    /// BOS → COB. Includes are searched in the script's folder, then `scripts/` of its game
    /// folder, then the built-in sfxtype.h/exptype.h.
    Compile {
        /// The .bos file.
        file: PathBuf,
        /// Output .cob (default: the source with a .cob extension; written atomically).
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// TA: Kingdoms (version 6); default: TAK when the source has `#define TAK`.
        #[arg(long, conflicts_with = "ta")]
        tak: bool,
        /// Total Annihilation (version 4).
        #[arg(long)]
        ta: bool,
        /// How `<degrees>` are scaled: `cavedog` (× 65536/360), `single` (the same in single
        /// precision, as TA Mayhem's compiler), `scriptor` (× 182) or `decimal` (× 182.04444,
        /// as TA Mayhem's ARMCOM).
        #[arg(long, default_value = "cavedog")]
        angle: String,
        /// Cavedog's compiler: an empty function gets `return 0` instead of no code.
        #[arg(long)]
        cavedog: bool,
        /// `a + b + c` as `a + (b + c)`, the same for `||`: operands first, then the
        /// operators (Scriptor's builds of TA Mayhem's ARMHERC and TA: Escalation's ARMFIELD).
        #[arg(long)]
        right_assoc: bool,
    },
    /// Find what breaks units in game: statics never set or never read, signals sent with no
    /// mask set, endless loops without a sleep, calls with the wrong argument count,
    /// unreachable code, scripts never called.
    Lint {
        /// .bos files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
}

/// Runs a `tafs cob` subcommand.
pub fn run(cmd: BosCmd) -> Result<i32, CliError> {
    run_inner(cmd).map(|()| 0)
}

fn run_inner(cmd: BosCmd) -> Result<(), CliError> {
    match cmd {
        BosCmd::Decompile { file, output } => {
            let bytes = read_file(&file)?;
            let c = cob::parse(&bytes, &cob::Limits::default())
                .map_err(|e| CliError::Msg(format!("{}: {e}", file.display())))?;
            let mut d = decompile(&c);
            // As the mount's script.bos shows it: ending in its origin line.
            d.source
                .push_str(&crate::view::cob::Origin::of(&bytes).line("//"));
            if !d.identical {
                eprintln!(
                    "{}: warning: the source does not compile back to identical bytes",
                    file.display()
                );
            }
            for s in &d.raw_scripts {
                eprintln!(
                    "{}: note: script {s} written as verbatim code words",
                    file.display()
                );
            }
            match output {
                Some(o) => write_bytes(&o, d.source.as_bytes()),
                None => {
                    use std::io::Write;
                    std::io::stdout().write_all(d.source.as_bytes())?;
                    Ok(())
                }
            }
        }
        BosCmd::Compile {
            file,
            output,
            tak,
            ta,
            angle,
            cavedog,
            right_assoc,
        } => {
            let src = read_file(&file)?;
            let mode = if tak {
                Mode::Tak
            } else if ta {
                Mode::Ta
            } else {
                bos::mode_of(&src)
            };
            let angle = match angle.as_str() {
                "cavedog" => Angle::Cavedog,
                "single" => Angle::Single,
                "scriptor" => Angle::Scriptor,
                "decimal" => Angle::Decimal,
                other => {
                    return err(format!(
                        "--angle {other}: expected cavedog, single, scriptor or decimal"
                    ))
                }
            };
            let c = compile_file(
                &file,
                &src,
                &Options {
                    mode,
                    angle,
                    cavedog,
                    right_assoc,
                },
            )?;
            let bytes = cob::write(&c).map_err(|e| CliError::Msg(e.to_string()))?;
            let out = output.unwrap_or_else(|| file.with_extension("cob"));
            write_bytes(&out, &bytes)
        }
        BosCmd::Lint { files } => {
            let mut problems = 0usize;
            for f in &files {
                let src = read_file(f)?;
                let opts = Options::new(bos::mode_of(&src));
                let inc = includes(f);
                match bos::lint::lint(&f.to_string_lossy(), &src, &inc, &opts, &Limits::default()) {
                    Ok(found) => {
                        for w in &found {
                            outln!("{w}");
                        }
                        problems += found.len();
                    }
                    Err(e) => {
                        outln!("{e}");
                        problems += 1;
                    }
                }
            }
            if problems > 0 {
                return err(format!("{problems} problem(s) found"));
            }
            Ok(())
        }
    }
}

fn includes(file: &Path) -> FolderIncludes<'static> {
    let dir = file
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let (game, _) = game_dir_of(file);
    FolderIncludes::new(&Plain, dir, Some(&game))
}

fn compile_file(file: &Path, src: &[u8], opts: &Options) -> Result<cob::Cob, CliError> {
    let inc = includes(file);
    bos::compile(&file.to_string_lossy(), src, &inc, opts, &Limits::default())
        .map_err(|e| CliError::Msg(e.to_string()))
}
