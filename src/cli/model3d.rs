//! `tafs 3do …`: describe, dump and build 3DO models through the view the mount shows
//! ([`crate::view::model3d`]): OBJ + MTL, textures, pieces.csv, preview.png.

use super::{read_file, CliError};
use crate::view::{self, model3d};
use std::io::Write;
use std::path::{Path, PathBuf};

/// `tafs 3do` subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum ModelCmd {
    /// Pieces (hierarchy, offsets, vertex and primitive counts) and textures found or missing.
    Describe {
        /// The 3DO file.
        file: PathBuf,
    },
    /// Write model.obj, model.mtl, pieces.csv, preview.png and textures/*.png, as the mount
    /// shows them (textures from the game folder's textures/*.gaf, colours from its palette).
    Dump {
        /// The 3DO file.
        file: PathBuf,
        /// Output folder (created).
        #[arg(short, long)]
        target: PathBuf,
    },
    /// Build a 3DO from a folder of model.obj (+ pieces.csv): with --base, what the OBJ
    /// does not show comes from that file and an edit keeps its layout.
    Build {
        /// The folder (as `dump` writes it).
        dir: PathBuf,
        /// The 3DO to write (replaced atomically).
        #[arg(short, long)]
        target: PathBuf,
        /// The model the folder was dumped from.
        #[arg(long)]
        base: Option<PathBuf>,
    },
    /// Dump every 3DO under the paths to its view in memory and build it back: the report
    /// says which rebuild identical bytes.
    Roundtrip {
        /// Files or folders (searched recursively for .3do).
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
}

/// Runs a `tafs 3do` subcommand.
pub fn run(cmd: ModelCmd) -> Result<i32, CliError> {
    match cmd {
        ModelCmd::Describe { file } => describe(&file),
        ModelCmd::Dump { file, target } => {
            let v = open(&file)?;
            super::progress::write_tree(&v, &target)?;
            Ok(0)
        }
        ModelCmd::Build { dir, target, base } => {
            let base = base.as_deref().map(read_file).transpose()?;
            let opts = view::options_for(&target, None, &Default::default());
            let files = view::DirFileSet::new(&dir);
            let bytes = view::rebuild(view::AssetKind::Model3d, &files, base.as_deref(), &opts)
                .map_err(|e| CliError::Msg(format!("{}: {e}", dir.display())))?;
            super::write_bytes(&target, &bytes)?;
            Ok(0)
        }
        ModelCmd::Roundtrip { paths } => {
            super::roundtrip::run_only(&paths, Some(view::AssetKind::Model3d))
        }
    }
}

fn open(file: &Path) -> Result<model3d::ModelView, CliError> {
    let data = read_file(file)?;
    let opts = view::options_for(file, None, &Default::default());
    let none = model3d::Textures::new();
    let textures = opts.textures.as_deref().unwrap_or(&none);
    model3d::open(&data, textures, &opts.palette, &opts.model_limits)
        .map_err(|e| CliError::Msg(format!("{}: {e}", file.display())))
}

fn describe(file: &Path) -> Result<i32, CliError> {
    let data = read_file(file)?;
    let opts = view::options_for(file, None, &Default::default());
    let none = model3d::Textures::new();
    let textures = opts.textures.as_deref().unwrap_or(&none);
    let m = crate::formats::o3do::parse(&data, &opts.model_limits)
        .map_err(|e| CliError::Msg(format!("{}: {e}", file.display())))?;
    let mut out = std::io::stdout().lock();
    let (nv, np): (usize, usize) = m.pieces.iter().fold((0, 0), |(v, p), q| {
        (v + q.vertices.len(), p + q.primitives.len())
    });
    writeln!(out, "file: {}", file.display())?;
    writeln!(
        out,
        "{} piece(s), {nv} vertices, {np} primitives",
        m.pieces.len()
    )?;
    out.write_all(model3d::pieces_csv(&m).as_bytes())?;
    let names = m.textures();
    let found: Vec<&String> = names.iter().filter(|t| textures.get(t).is_some()).collect();
    writeln!(
        out,
        "textures: {} named, {} found in textures/*.gaf",
        names.len(),
        found.len()
    )?;
    for t in &names {
        let mark = if textures.get(t).is_some() {
            "found"
        } else {
            "missing"
        };
        writeln!(out, "  {t} ({mark})")?;
    }
    Ok(0)
}
