//! The shell completions and man pages kept in docs/ are the ones the command line generates
//! (`scripts/gen-docs` rewrites them), the bash completion loads in bash, and the pages
//! render with man(1).

mod common;

use common::tafs_ok_bytes as tafs;
use std::path::{Path, PathBuf};
use std::process::Command;

const FIX: &str = "run scripts/gen-docs and commit docs/completions and docs/man";

fn docs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("docs")
}

#[test]
fn committed_completions_match_the_command_line() {
    for (shell, file) in [
        ("bash", "tafs.bash"),
        ("zsh", "_tafs"),
        ("fish", "tafs.fish"),
    ] {
        let kept = std::fs::read(docs().join("completions").join(file)).unwrap_or_default();
        assert!(
            kept == tafs(&["completions", shell]),
            "docs/completions/{file} differs from `tafs completions {shell}`: {FIX}"
        );
    }
}

#[test]
fn committed_man_pages_match_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    tafs(&["man", "-t", dir.path().to_str().unwrap()]);
    let names = |d: &Path| {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .map(|rd| {
                rd.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    };
    let generated = names(dir.path());
    let kept = names(&docs().join("man"));
    assert_eq!(
        kept, generated,
        "docs/man has other pages than `tafs man`: {FIX}"
    );
    // one page for the program and one for every command, down to `tafs gaf dump`
    for page in [
        "tafs.1",
        "tafs-mount.1",
        "tafs-gaf-dump.1",
        "tafs-hpi-extract.1",
    ] {
        assert!(generated.iter().any(|n| n == page), "no {page}");
    }
    for n in &generated {
        assert!(
            std::fs::read(dir.path().join(n)).unwrap()
                == std::fs::read(docs().join("man").join(n)).unwrap(),
            "docs/man/{n} differs from what `tafs man` writes: {FIX}"
        );
    }
}

#[test]
fn bash_loads_the_completion_and_completes_subcommands() {
    let script = docs().join("completions/tafs.bash");
    // what bash offers after `tafs mo` and `tafs gaf d`, through the loaded function
    let out = Command::new("bash")
        .arg("-c")
        .arg(
            r#"source "$1" && complete -p tafs &&
               COMP_WORDS=(tafs mo); COMP_CWORD=1; COMP_LINE="tafs mo"; COMP_POINT=7
               _tafs tafs mo tafs; echo "mo: ${COMPREPLY[*]}"
               COMP_WORDS=(tafs gaf d); COMP_CWORD=2; COMP_LINE="tafs gaf d"; COMP_POINT=10
               _tafs tafs d gaf; echo "gaf d: ${COMPREPLY[*]}""#,
        )
        .arg("bash")
        .arg(&script)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "bash: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("-F _tafs tafs"), "{text}");
    assert!(text.contains("mo: mount"), "{text}");
    assert!(text.contains("gaf d: dump"), "{text}");
}

#[test]
fn man_renders_the_generated_pages() {
    let page = docs().join("man/tafs-mount.1");
    let out = Command::new("man")
        .arg("-l")
        .arg(&page)
        .env("MANPAGER", "cat")
        .env("MANWIDTH", "100")
        .env("PAGER", "cat")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "man -l: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // roff rendered: the section headings and an option with its help, no raw requests
    assert!(text.contains("NAME") && text.contains("SYNOPSIS"), "{text}");
    assert!(text.contains("--state-dir"), "{text}");
    assert!(
        text.contains("Where write-back keeps staged files"),
        "{text}"
    );
    assert!(!text.contains(".TH") && !text.contains(".SH"), "{text}");
}
