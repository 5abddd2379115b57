//! `tafs tnt …` (stub).

use super::CliError;

/// `tafs tnt` subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum TntCmd {
    /// Not yet implemented.
    Todo,
}

/// Runs a `tafs tnt` subcommand.
pub fn run(cmd: TntCmd) -> Result<i32, CliError> {
    match cmd {
        TntCmd::Todo => super::err("not implemented"),
    }
}
