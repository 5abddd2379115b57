//! The README runs: every fenced `sh` block of README.md is run, in order, by bash against the
//! demo folder (`tafs demo`), with a real mount where a block mounts, in a temporary `HOME`
//! with the built `tafs` first on `PATH`. A `text` block right after an `sh` block is output
//! that block must print (see [`expected_in`]). A block that cannot run here says so in an
//! HTML comment on the line above it (`<!-- not run: why -->`). `tafs --help` is checked
//! against the README too.

mod mount_common;

use mount_common::fuse_available;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const README: &str = include_str!("../README.md");
const TAFS: &str = env!("CARGO_BIN_EXE_tafs");

/// A fenced code block of the README.
#[derive(Debug)]
struct Block {
    /// Line of the opening fence (1-based).
    line: usize,
    /// The info string (`sh`, `text`, …).
    lang: String,
    /// Why the block is not run, from `<!-- not run: … -->` on the line above.
    not_run: Option<String>,
    code: String,
}

fn blocks(md: &str) -> Vec<Block> {
    let lines: Vec<&str> = md.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Some(lang) = lines[i].strip_prefix("```") else {
            i += 1;
            continue;
        };
        let start = i;
        let mut code = String::new();
        i += 1;
        while i < lines.len() && !lines[i].starts_with("```") {
            code.push_str(lines[i]);
            code.push('\n');
            i += 1;
        }
        let not_run = start
            .checked_sub(1)
            .and_then(|p| lines[p].trim().strip_prefix("<!-- not run:"))
            .and_then(|r| r.strip_suffix("-->"))
            .map(|r| r.trim().to_string());
        out.push(Block {
            line: start + 1,
            lang: lang.trim().to_string(),
            not_run,
            code,
        });
        i += 1;
    }
    out
}

/// The runnable `sh` blocks, each with the `text` block that follows it directly, if any.
fn runnable(md: &str) -> Vec<(Block, Option<Block>)> {
    let mut out: Vec<(Block, Option<Block>)> = Vec::new();
    let mut prev_sh_end = None;
    for b in blocks(md) {
        let end = b.line + b.code.lines().count() + 1; // closing fence, 1-based
        if b.lang == "text" && prev_sh_end.is_some_and(|e: usize| b.line == e + 1) {
            if let Some(last) = out.last_mut() {
                last.1 = Some(b);
            }
            continue;
        }
        prev_sh_end = None;
        if b.lang == "sh" && b.not_run.is_none() {
            prev_sh_end = Some(end);
            out.push((b, None));
        }
    }
    out
}

/// Whether `expected` is in `actual`: each line of `expected`, as whitespace-separated words,
/// is a run of consecutive words of `actual` (so `ls` in columns or one name a line both
/// match), the lines in order.
fn expected_in(expected: &str, actual: &str) -> Result<(), String> {
    let words: Vec<&str> = actual.split_whitespace().collect();
    let mut at = 0;
    for line in expected.lines() {
        let want: Vec<&str> = line.split_whitespace().collect();
        if want.is_empty() {
            continue;
        }
        match (at..=words.len().saturating_sub(want.len()))
            .find(|&i| words.get(i..i + want.len()) == Some(&want[..]))
        {
            Some(i) => at = i + want.len(),
            None => return Err(format!("{line:?} not found (in order) in the output")),
        }
    }
    Ok(())
}

/// Unmounts every mount under `dir` when dropped, so a failing block leaves nothing behind.
struct UnmountAllUnder(PathBuf);

impl UnmountAllUnder {
    fn mounts(&self) -> Vec<String> {
        let prefix = self.0.to_string_lossy().into_owned();
        std::fs::read_to_string("/proc/self/mountinfo")
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.split(' ').nth(4).map(str::to_string))
            .filter(|m| m.starts_with(&prefix))
            .collect()
    }
}

impl Drop for UnmountAllUnder {
    fn drop(&mut self) {
        for _ in 0..50 {
            let left = self.mounts();
            if left.is_empty() {
                return;
            }
            for m in left {
                let _ = Command::new("umount").arg("-l").arg(m).status();
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

#[test]
fn every_shell_block_is_run_or_says_why_not() {
    let all = blocks(README);
    let sh: Vec<&Block> = all.iter().filter(|b| b.lang == "sh").collect();
    assert!(sh.len() >= 8, "README.md has {} sh blocks", sh.len());
    for b in &all {
        assert!(
            b.lang == "sh" || b.lang == "text",
            "README.md:{}: a block marked {:?}: mark shell commands `sh` (run by this test) and their output `text`",
            b.line,
            b.lang
        );
        if let Some(why) = &b.not_run {
            assert!(
                !why.is_empty(),
                "README.md:{}: say why it is not run",
                b.line
            );
        }
    }
    let skipped = sh.iter().filter(|b| b.not_run.is_some()).count();
    assert!(
        skipped <= 2,
        "README.md: {skipped} sh blocks are not run; run them here"
    );
    // every text block is the output of the sh block just above it
    let run = runnable(README);
    let texts = all.iter().filter(|b| b.lang == "text").count();
    let attached = run.iter().filter(|(_, t)| t.is_some()).count();
    assert_eq!(
        texts, attached,
        "README.md: a text block not right after a run sh block"
    );
}

#[test]
fn the_readme_is_short() {
    let n = README.lines().count();
    assert!(
        n <= 210,
        "README.md is {n} lines; move reference material to docs/"
    );
}

#[test]
fn expected_output_matching() {
    let out = "/x/a:\nmetadata.json\npalette.gpl\npanel\n\n/x/b:\n0.png\n1.png\n";
    assert!(expected_in("metadata.json palette.gpl panel\n0.png 1.png", out).is_ok());
    assert!(expected_in("0.png 1.png\nmetadata.json", out).is_err());
    assert!(expected_in("palette.gpl 0.png", out).is_err());
    assert!(expected_in("missing", out).is_err());
}

#[test]
fn readme_shell_blocks_run_against_the_demo() {
    if !fuse_available() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().canonicalize().unwrap();
    // dropped before `tmp`: nothing stays mounted in the folder being removed
    let _unmount = UnmountAllUnder(home.clone());
    let bin_dir = Path::new(TAFS).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let home_s = home.to_string_lossy().into_owned();
    // run files (how `tafs umount` finds a mount) stay in the temporary home too
    let run = home.join(".run");
    std::fs::create_dir(&run).unwrap();
    for (b, expected) in runnable(README) {
        let out = Command::new("bash")
            .args(["--noprofile", "--norc", "-euo", "pipefail", "-c", &b.code])
            .current_dir(&home)
            .env("HOME", &home)
            .env("PATH", &path)
            .env("XDG_RUNTIME_DIR", &run)
            .env_remove("XDG_STATE_HOME")
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).replace(&home_s, "~");
        let stderr = String::from_utf8_lossy(&out.stderr).replace(&home_s, "~");
        assert!(
            out.status.success(),
            "README.md:{}: the block failed ({}):\n{}\nstdout:\n{stdout}\nstderr:\n{stderr}",
            b.line,
            out.status,
            b.code
        );
        if let Some(t) = expected {
            if let Err(e) = expected_in(&t.code, &stdout) {
                panic!(
                    "README.md:{}: the output of the block above it differs: {e}\n{}\nstdout:\n{stdout}\nstderr:\n{stderr}",
                    t.line, b.code
                );
            }
        }
    }
}

/// The command lines of the README's run blocks, comments and blanks dropped.
fn readme_command_lines() -> Vec<String> {
    runnable(README)
        .iter()
        .flat_map(|(b, _)| b.code.lines().map(str::to_string).collect::<Vec<_>>())
        .map(|l| match l.find("  #") {
            Some(i) => l[..i].trim().to_string(),
            None => l.trim().to_string(),
        })
        .filter(|l| !l.is_empty())
        .collect()
}

fn tafs_out(args: &[&str]) -> String {
    let o = Command::new(TAFS).args(args).output().unwrap();
    assert!(o.status.success(), "tafs {args:?}");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn tafs_help_and_the_readme_agree() {
    let help = tafs_out(&["--help"]);
    // the quick start `tafs --help` prints is the README's, command for command
    let start = help
        .split_once("Try it on the demo")
        .map(|(_, s)| s)
        .expect("tafs --help has the quick start");
    let commands = readme_command_lines();
    let mut n = 0;
    for l in start.lines().filter(|l| l.starts_with("  ")) {
        let cmd = match l.find("  #") {
            Some(i) if i > 2 => l[..i].trim(),
            _ => l.trim(),
        };
        assert!(
            commands.iter().any(|c| c == cmd),
            "`tafs --help` shows {cmd:?}, which no run block of README.md has"
        );
        n += 1;
    }
    assert!(n >= 4, "tafs --help's quick start has {n} commands");
    // every asset command of the README's table exists, and every asset command is in it
    let table: Vec<&str> = README
        .split_once("## What each asset becomes")
        .expect("the asset table")
        .1
        .lines()
        .filter(|l| l.starts_with('|'))
        .collect();
    let subcommands: Vec<String> = help
        .split_once("Commands:")
        .unwrap()
        .1
        .lines()
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect();
    for row in &table {
        for part in row.split("`tafs ").skip(1) {
            let name = part.split(['`', ' ']).next().unwrap_or("");
            assert!(
                subcommands.iter().any(|s| s == name),
                "README.md's table names `tafs {name}`, which `tafs --help` does not list"
            );
        }
    }
    for kind in ["gaf", "taf", "tnt", "pcx", "pal", "3do", "hpi"] {
        assert!(
            subcommands.iter().any(|s| s == kind),
            "`tafs {kind}` is gone from --help"
        );
        assert!(
            table.iter().any(|r| r.contains(&format!("`tafs {kind}`"))),
            "README.md's asset table has no row for `tafs {kind}`"
        );
    }
    // every command of --help is documented somewhere a reader is sent to
    let docs: String = [
        README,
        include_str!("../docs/CLI.md"),
        include_str!("../docs/MOUNT.md"),
    ]
    .concat();
    for s in subcommands.iter().filter(|s| *s != "help") {
        assert!(
            docs.contains(&format!("tafs {s}")),
            "`tafs {s}` is in --help but neither README.md nor docs/CLI.md nor docs/MOUNT.md mentions it"
        );
    }
}

/// The targets of the Markdown links and pictures in `text` (relative ones only).
fn local_links(text: &str) -> Vec<String> {
    text.split("](")
        .skip(1)
        .filter_map(|rest| rest.split_once(')').map(|(t, _)| t))
        .map(|t| t.split('#').next().unwrap_or("").to_string())
        .filter(|t| !t.is_empty() && !t.contains("://"))
        .collect()
}

#[test]
fn readme_and_docs_links_and_pictures_exist() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages = vec![root.join("README.md")];
    for e in std::fs::read_dir(root.join("docs")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "md") {
            pages.push(p);
        }
    }
    let mut checked = 0;
    for page in &pages {
        let text = std::fs::read_to_string(page).unwrap();
        for link in local_links(&text) {
            let target = page.parent().unwrap().join(&link);
            assert!(
                target.exists(),
                "{}: the link {link} goes nowhere",
                page.display()
            );
            if link.ends_with(".png") {
                let head = std::fs::read(&target).unwrap();
                assert!(head.starts_with(b"\x89PNG"), "{link} is not a PNG");
            }
            checked += 1;
        }
    }
    assert!(checked >= 10, "{checked} links checked");
}
