//! `tafs 3do …`: describe and dump 3DO models (read-only) through the view the mount shows
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
}

/// Runs a `tafs 3do` subcommand.
pub fn run(cmd: ModelCmd) -> Result<i32, CliError> {
    match cmd {
        ModelCmd::Describe { file } => describe(&file),
        ModelCmd::Dump { file, target } => {
            let v = open(&file)?;
            view::write_tree(&v, &target)?;
            Ok(0)
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
