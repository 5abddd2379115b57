//! tafs: Total Annihilation assets as editable files.
//!
//! * [`formats`]: pure codecs over byte slices (GAF, TNT, palettes, TDF), with explicit [`formats::Limits`].
//! * [`view`]: the exploded view: which files a binary becomes and how those files rebuild it.
//!   Shared by the CLI (`dump`/`unpack`/`build`/`pack`) and the mount.
//! * [`fs`]: the FUSE filesystem serving views of a game folder.
//! * [`game`]: what belongs to a game folder (palette chain, feature definitions, start positions).
//! * [`atomic`]: atomic replacement of a file (the CLI's outputs, the mount's commits).
//! * `sys`: the few system calls std does not offer (used by [`atomic`] and [`fs`]).
//! * [`cli`]: the command-line glue.
//!
//! ```
//! use tafs::formats::{gaf, Limits};
//! use tafs::view::{gaf::GafView, View, ViewOptions};
//!
//! // A GAF the crate generates itself, written and read back byte for byte.
//! let bytes = gaf::write(&tafs::sample::animated_gaf()).unwrap();
//! let parsed = gaf::parse(&bytes, &Limits::default()).unwrap();
//! assert_eq!(gaf::write(&parsed).unwrap(), bytes);
//!
//! // Its exploded view: the files `tafs gaf dump` writes and the mount serves.
//! let view = GafView::from_gaf(parsed, &ViewOptions::default()).unwrap();
//! let csv = String::from_utf8(view.render_vec("pulse/frames.csv").unwrap()).unwrap();
//! assert!(csv.starts_with("frame,width,height,origin_x,origin_y,transparency"));
//! ```
#![forbid(unsafe_op_in_unsafe_fn)]

pub mod atomic;
pub mod cli;
pub mod formats;
pub mod fs;
pub mod game;
#[cfg(feature = "heap-stats")]
pub mod heap_stats;
pub mod sample;
pub(crate) mod sys;
pub mod view;
