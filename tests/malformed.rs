//! The malformed-input corpus (`tests/malformed_corpus`, also `scripts/make-malformed DIR`)
//! through the built CLI and a real mount: bad files are refused with an error naming the
//! structure and a byte offset, never a panic; memory stays under a 1 GiB address-space
//! limit; nothing is written outside the target; the mount shows refused files as the plain
//! files they are and accepted ones as directories, and `ls -lR`/`cat` over it succeed.

mod malformed_corpus;
mod mount_common;

use malformed_corpus::Expect;
use mount_common::{fuse_available, sh};
use std::path::Path;
use std::process::{Command, Output, Stdio};

const TAFS: &str = env!("CARGO_BIN_EXE_tafs");
/// Address-space limit the CLI runs under, in KiB (1 GiB).
const AS_LIMIT_KIB: u64 = 1 << 20;

/// Runs the CLI in `cwd` under `ulimit -v`.
fn tafs_limited(cwd: &Path, args: &[&str]) -> Output {
    Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {AS_LIMIT_KIB} && exec \"$0\" \"$@\""))
        .arg(TAFS)
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// Every path under `dir` (relative), sorted; symlinks are reported as such.
fn tree(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let ft = e.file_type().unwrap();
            let rel = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
            if ft.is_symlink() {
                out.push(format!("{rel} (symlink)"));
            } else if ft.is_dir() {
                out.push(format!("{rel}/"));
                stack.push(p);
            } else {
                out.push(rel);
            }
        }
    }
    out.sort();
    out
}

fn commands(name: &str, input: &Path) -> Vec<Vec<String>> {
    let i = input.to_string_lossy().into_owned();
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    if name.ends_with(".cob") {
        vec![s(&["cob", "info", &i]), s(&["cob", "disassemble", &i])]
    } else if name.ends_with(".gaf") {
        vec![
            s(&["gaf", "list", &i]),
            s(&["gaf", "dump", &i, "-t", "out"]),
        ]
    } else if [".alp", ".shd", ".lht"].iter().any(|e| name.ends_with(e)) {
        vec![
            s(&["pal", "lookup", &i, "--entry", "0,0"]),
            s(&["pal", "dump", &i, "-t", "out"]),
        ]
    } else if name.ends_with(".3do") {
        // roundtrip: dump, build through the writer, compare
        vec![s(&["3do", "describe", &i]), s(&["3do", "roundtrip", &i])]
    } else if name.ends_with(".fnt") {
        vec![
            s(&["fnt", "describe", &i]),
            s(&["fnt", "dump", &i, "-t", "out"]),
        ]
    } else {
        vec![
            s(&["tnt", "describe", &i]),
            s(&["tnt", "unpack", &i, "-t", "out"]),
        ]
    }
}

#[test]
fn cli_refuses_or_contains_every_malformed_file() {
    let root = tempfile::tempdir().unwrap();
    let input = root.path().join("in");
    let cases = malformed_corpus::write_to(&input).unwrap();
    assert!(cases.len() >= 60, "corpus has {} files", cases.len());
    let before = tree(&input);
    // Canaries: where the `../` names would land if they escaped.
    let outside = root.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    let mut failures = Vec::new();
    for c in &cases {
        let file = input.join(&c.name);
        for args in commands(&c.name, &file) {
            // cwd is work/work so that `out/../../x` would still land inside `root/`
            let work = outside.join("work").join("work");
            std::fs::create_dir_all(&work).unwrap();
            let argv: Vec<&str> = args.iter().map(String::as_str).collect();
            let o = tafs_limited(&work, &argv);
            let mut stderr = String::from_utf8_lossy(&o.stderr).into_owned();
            if args[1] == "roundtrip" {
                // its table (on standard output) says why a file failed
                stderr += &String::from_utf8_lossy(&o.stdout);
            }
            let what = format!("{} ({})", c.name, args[..2].join(" "));
            if o.status.code().is_none()
                || o.status.code() == Some(101)
                || stderr.contains("panicked")
            {
                failures.push(format!("{what}: crashed ({:?}): {stderr}", o.status));
            }
            match &c.expect {
                Expect::Reject(structure) => {
                    if o.status.success() {
                        failures.push(format!("{what}: accepted, expected an error"));
                    } else if !stderr.contains(structure)
                        || !(stderr.contains("0x") || stderr.contains("offset "))
                    {
                        failures.push(format!(
                            "{what}: message does not name {structure:?} and an offset: {stderr}"
                        ));
                    }
                }
                Expect::Accept => {
                    if !o.status.success() {
                        failures.push(format!("{what}: refused: {stderr}"));
                    }
                }
            }
            // Nothing outside the target: the only thing in `outside` is work/work[/out].
            let t = tree(&outside);
            let stray: Vec<&String> = t
                .iter()
                .filter(|p| {
                    !(p.as_str() == "work/"
                        || p.as_str() == "work/work/"
                        || p.starts_with("work/work/out/")
                        || p.as_str() == "work/work/out/")
                })
                .collect();
            if !stray.is_empty() {
                failures.push(format!("{what}: wrote outside the target: {stray:?}"));
            }
            if t.iter().any(|p| p.ends_with("(symlink)")) {
                failures.push(format!("{what}: created a symlink"));
            }
            std::fs::remove_dir_all(outside.join("work")).unwrap();
        }
    }
    assert_eq!(tree(&input), before, "the input folder changed");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    println!("{} malformed files checked", cases.len());
}

#[test]
fn mount_shows_malformed_files_plainly() {
    if !fuse_available() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let game = root.path().join("game");
    let cases = malformed_corpus::write_to(&game.join("anims")).unwrap();
    let m = mount_common::mount(&game, &root.path().join("mnt"), &[]);
    let mut failures = Vec::new();
    for c in &cases {
        let p = m.mnt.join("anims").join(&c.name);
        let meta = std::fs::symlink_metadata(&p);
        match (&c.expect, meta) {
            (_, Err(e)) => failures.push(format!("{}: {e}", c.name)),
            (Expect::Reject(_), Ok(md)) => {
                if !md.is_file() {
                    failures.push(format!("{}: not a plain file", c.name));
                } else if std::fs::read(&p).ok().as_deref() != Some(&c.bytes[..]) {
                    failures.push(format!("{}: plain file differs", c.name));
                }
            }
            (Expect::Accept, Ok(md)) => {
                if !md.is_dir() {
                    failures.push(format!("{}: not a directory", c.name));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let mn = m.mnt.display();
    let ls = sh(&format!("ls -lR '{mn}' | wc -l"));
    sh(&format!("find '{mn}' -type f -exec cat {{}} + > /dev/null"));
    // every accepted file's directory lists only safe names (no '/' possible; no '..' entries)
    let names = sh(&format!("find '{mn}' -mindepth 1 -printf '%f\\n'"));
    assert!(
        !names.lines().any(|n| n == ".." || n == "."),
        "unsafe names in the mount"
    );
    println!("mount: {} files, ls -lR {} lines", cases.len(), ls.trim());
}
