//! `tafs gaf …` (stub).

use super::CliError;

/// `tafs gaf` subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum GafCmd {
    /// Not yet implemented.
    Todo,
}

/// Runs a `tafs gaf` subcommand.
pub fn run(cmd: GafCmd) -> Result<i32, CliError> {
    match cmd {
        GafCmd::Todo => super::err("not implemented"),
    }
}
