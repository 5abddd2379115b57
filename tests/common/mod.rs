//! Shared test helpers: where the corpus is, and whether it is present; running the built
//! `tafs`; hand-made fixtures several test files use; comparing folders.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// `../shared/corpus` relative to the crate root, if present.
pub fn corpus() -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus");
    if p.is_dir() {
        Some(p)
    } else {
        eprintln!(
            "note: ../shared/corpus is absent; corpus checks skipped, self-made fixtures still run"
        );
        None
    }
}

/// Every file under `dir` whose name ends (case-insensitively) with one of `exts`, sorted.
pub fn files_with_ext(dir: &Path, exts: &[&str]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let n = p.to_string_lossy().to_ascii_lowercase();
                if exts.iter().any(|x| n.ends_with(x)) {
                    out.push(p);
                }
            }
        }
    }
    out.sort();
    out
}

/// The built `tafs` binary.
pub const TAFS: &str = env!("CARGO_BIN_EXE_tafs");

/// Runs `tafs ARGS` (stdin closed) and returns its output.
pub fn tafs(args: &[&str]) -> std::process::Output {
    std::process::Command::new(TAFS)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

/// Runs `tafs ARGS`, asserts it succeeded and returns its standard output.
pub fn tafs_ok(args: &[&str]) -> String {
    String::from_utf8_lossy(&tafs_ok_bytes(args)).into_owned()
}

/// Runs `tafs ARGS`, asserts it succeeded and returns its standard output as bytes.
pub fn tafs_ok_bytes(args: &[&str]) -> Vec<u8> {
    let o = tafs(args);
    assert!(
        o.status.success(),
        "tafs {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o.stdout
}

/// Files that differ between two folders, as `diff -rq` reports them (paths relative to `a`,
/// sorted).
pub fn differing(a: &Path, b: &Path) -> Vec<String> {
    let out = std::process::Command::new("diff")
        .arg("-rq")
        .arg(a)
        .arg(b)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut v: Vec<String> = text
        .lines()
        .map(|l| {
            let p = l.split(' ').nth(1).unwrap_or(l);
            let p = p.trim_end_matches(':');
            p.strip_prefix(a.to_str().unwrap())
                .unwrap_or(p)
                .trim_start_matches('/')
                .to_string()
        })
        .collect();
    v.sort();
    v
}

/// A v1 HPI archive assembled by hand (key 0): a root with one raw (flag 0) file named `name`
/// holding `content`, followed by `trailer`.
pub fn hand_v1(name: &[u8], content: &[u8], trailer: &[u8]) -> Vec<u8> {
    let name_at = 0x14 + 8 + 9;
    let rec_at = name_at + name.len() + 1;
    let dir_end = rec_at + 9;
    let mut d = Vec::new();
    d.extend_from_slice(b"HAPI");
    for v in [
        0x0001_0000u32,
        dir_end as u32,
        0,
        0x14,
        1,
        0x1C,
        name_at as u32,
        rec_at as u32,
    ] {
        d.extend_from_slice(&v.to_le_bytes());
    }
    d.push(0); // flag: file
    d.extend_from_slice(name);
    d.push(0);
    d.extend_from_slice(&(dir_end as u32).to_le_bytes());
    d.extend_from_slice(&(content.len() as u32).to_le_bytes());
    d.push(0); // stored raw
    d.extend_from_slice(content);
    d.extend_from_slice(trailer);
    d
}

/// Runs `python3 -c SCRIPT` (the independent checkers: Pillow, csv, trimesh …), asserts it
/// succeeded and returns its trimmed standard output.
pub fn py(script: &str) -> String {
    let o = std::process::Command::new("python3")
        .arg("-c")
        .arg(script)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "python: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// Peak RSS in MiB of the largest child process waited for so far.
pub fn children_max_rss_mib() -> i64 {
    // SAFETY: getrusage fills the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut u) };
    u.ru_maxrss / 1024
}

/// `n` bytes of alternating text-like runs and xorshift noise (deterministic per `seed`), so
/// every compression method has work to do.
pub fn noise(n: usize, seed: u32) -> Vec<u8> {
    let mut s = seed.max(1);
    (0..n)
        .map(|i| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            if (i / 512) % 2 == 0 {
                b"abcdefgh"[(i / 3) % 8]
            } else {
                s as u8
            }
        })
        .collect()
}
