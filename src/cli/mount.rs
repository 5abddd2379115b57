//! `tafs mount` / `tafs umount` (stub).

use super::CliError;
use std::path::PathBuf;

/// Arguments of `tafs mount`.
#[derive(clap::Args, Debug)]
pub struct MountArgs {
    /// The game folder to show.
    pub game_dir: PathBuf,
    /// Where to mount it.
    pub mountpoint: PathBuf,
}

/// Arguments of `tafs umount`.
#[derive(clap::Args, Debug)]
pub struct UmountArgs {
    /// The mountpoint.
    pub mountpoint: PathBuf,
}

/// Runs `tafs mount`.
pub fn run(_a: MountArgs) -> Result<i32, CliError> {
    super::err("mount: not implemented yet")
}

/// Runs `tafs umount`.
pub fn umount(_a: UmountArgs) -> Result<i32, CliError> {
    super::err("umount: not implemented yet")
}
