//! tafs: Total Annihilation assets as editable files.
//!
//! * [`formats`]: pure codecs over byte slices (GAF, TNT, palettes, TDF), with explicit [`formats::Limits`].
//! * [`view`]: the exploded view: which files a binary becomes and how those files rebuild it.
//!   Shared by the CLI (`dump`/`unpack`/`build`/`pack`) and the mount.
//! * [`fs`]: the FUSE filesystem serving views of a game folder.
//! * [`cli`]: the command-line glue.
#![forbid(unsafe_op_in_unsafe_fn)]

pub mod cli;
pub mod formats;
pub mod fs;
pub mod sample;
pub mod view;
