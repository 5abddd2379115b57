//! `tafs completions` and `tafs man`: shell completions and man pages generated from the
//! clap definitions, so they cannot drift from the command line (`scripts/gen-docs` writes
//! the copies kept in `docs/completions/` and `docs/man/`; tests/generated_docs.rs checks
//! that they match).

use super::CliError;
use clap::CommandFactory;
use std::path::PathBuf;

/// A shell `tafs completions` writes a script for.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
}

/// Arguments of `tafs completions`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  tafs completions bash > ~/.local/share/bash-completion/completions/tafs\n  tafs completions zsh > ~/.zfunc/_tafs\n  tafs completions fish > ~/.config/fish/completions/tafs.fish"
)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: Shell,
}

/// Arguments of `tafs man`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  tafs man -t ~/.local/share/man/man1 && man tafs-mount\n  tafs man | man -l -"
)]
pub struct ManArgs {
    /// Write a page for `tafs` and one for every subcommand (tafs-mount.1, tafs-gaf-dump.1,
    /// …) into DIR; without it, print the page of `tafs` itself.
    #[arg(short = 't', long = "to", value_name = "DIR")]
    pub to: Option<PathBuf>,
}

/// The completion script of `tafs` for `shell`.
pub fn completion(shell: Shell) -> Vec<u8> {
    let mut cmd = super::Cli::command();
    let shell = match shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
    };
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "tafs", &mut out);
    out
}

/// Every man page, as (file name, roff text): `tafs.1` and one per subcommand at any depth
/// (`tafs-gaf-dump.1`), sorted by name.
pub fn man_pages() -> Result<Vec<(String, Vec<u8>)>, CliError> {
    let mut cmd = super::Cli::command().disable_help_subcommand(true);
    cmd.build();
    let mut pages = Vec::new();
    let mut todo = vec![cmd];
    // the command tree is the crate's own, a few levels deep: a work list, no recursion
    while let Some(cmd) = todo.pop() {
        todo.extend(cmd.get_subcommands().filter(|s| !s.is_hide_set()).cloned());
        let man = clap_mangen::Man::new(cmd);
        let mut text = Vec::new();
        man.render(&mut text)?;
        pages.push((man.get_filename(), text));
    }
    pages.sort();
    Ok(pages)
}

/// Runs `tafs completions`.
pub fn completions(a: CompletionsArgs) -> Result<i32, CliError> {
    use std::io::Write;
    std::io::stdout().write_all(&completion(a.shell))?;
    Ok(0)
}

/// Runs `tafs man`.
pub fn man(a: ManArgs) -> Result<i32, CliError> {
    use std::io::Write;
    let pages = man_pages()?;
    match a.to {
        Some(dir) => {
            std::fs::create_dir_all(&dir)
                .map_err(|e| CliError::Msg(format!("{}: {e}", dir.display())))?;
            for (name, text) in &pages {
                super::write_bytes(&dir.join(name), text)?;
            }
            eprintln!(
                "tafs: {} man pages written to {}",
                pages.len(),
                dir.display()
            );
        }
        None => {
            let top = pages.iter().find(|(n, _)| n == "tafs.1");
            if let Some((_, text)) = top {
                std::io::stdout().write_all(text)?;
            }
        }
    }
    Ok(0)
}
