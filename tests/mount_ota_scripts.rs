//! Unit scripts of a whole game's `scripts/` folder through a real mount (Cavedog's 272 COBs
//! of `corpus/ota/scripts`, copied; a self-made folder of three compiled scripts when the
//! corpus is absent), driven with the real tools: `grep -rl emit-sfx` lists exactly the
//! scripts whose code holds the EMIT_SFX opcode (computed independently by
//! `tests/scripts/cob_emitters.py` from the raw words); `sed -i` of one sleep constant in a
//! unit's `script.bos` changes exactly that constant in its disassembly (and that word in the
//! binary, read by Python's `struct`); a syntax error written in place gives EIO, the status
//! names its line, the binary is untouched.

mod common;
mod mount_common;

use mount_common::{sh, GameMount};
use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use tafs::formats::bos::{self, Limits, Mode, NoIncludes, Options};
use tafs::formats::cob;

/// The fixture folder: three scripts, two of which emit effects.
fn fixture(dir: &Path) {
    let srcs: [(&str, &str); 3] = [
        (
            "ARMONE.COB",
            "piece base, flare;\nCreate()\n{\n\twhile (TRUE)\n\t{\n\t\temit-sfx 256 from flare;\n\t\tsleep 400;\n\t}\n}\n",
        ),
        (
            "armtwo.cob",
            "piece base;\nCreate()\n{\n\tsleep 120;\n\thide base;\n}\n",
        ),
        (
            "CorThree.Cob",
            "piece base, gun;\nCreate()\n{\n\tsleep 30;\n}\nFirePrimary()\n{\n\temit-sfx 1024 + 1 from gun;\n}\n",
        ),
    ];
    for (name, src) in srcs {
        let c = bos::compile(
            name,
            src.as_bytes(),
            &NoIncludes,
            &Options::new(Mode::Ta),
            &Limits::default(),
        )
        .unwrap();
        std::fs::write(dir.join(name), cob::write(&c).unwrap()).unwrap();
    }
}

fn is_cob(name: &str) -> bool {
    name.to_ascii_lowercase().ends_with(".cob")
}

/// The game's COB file names, sorted.
fn cobs(scripts: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(scripts)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| is_cob(n))
        .collect();
    v.sort();
    v
}

/// A mount of a game whose `scripts/` holds the corpus's (or the fixture's) scripts; the
/// first COB is the mount's asset.
fn game() -> Option<GameMount> {
    let corpus = common::corpus().map(|c| c.join("ota/scripts"));
    let tmp = tempfile::tempdir().unwrap();
    match &corpus {
        Some(c) if c.is_dir() => {
            for e in std::fs::read_dir(c).unwrap().flatten() {
                if e.path().is_file() {
                    let to = tmp.path().join(e.file_name());
                    std::fs::copy(e.path(), &to).unwrap();
                    std::fs::set_permissions(&to, std::fs::Permissions::from_mode(0o644)).unwrap();
                }
            }
        }
        _ => {
            println!("corpus/ota/scripts absent: a self-made folder of three scripts is used");
            fixture(tmp.path());
        }
    }
    let first = cobs(tmp.path()).into_iter().next().unwrap();
    GameMount::new(&format!("scripts/{first}"), &[], |_, bin| {
        let scripts = bin.parent().unwrap();
        for e in std::fs::read_dir(tmp.path()).unwrap().flatten() {
            std::fs::copy(e.path(), scripts.join(e.file_name())).unwrap();
        }
    })
}

#[test]
fn grep_lists_exactly_the_scripts_that_emit_effects() {
    let Some(g) = game() else {
        return;
    };
    let scripts = g.game.join("scripts");
    let found: BTreeSet<String> = sh(&format!(
        "grep -rl emit-sfx {} || true",
        g.mnt.join("scripts").display()
    ))
    .lines()
    .filter_map(|l| {
        let p = Path::new(l);
        let dir = p.parent()?.file_name()?.to_str()?;
        (p.file_name()? == "script.bos" && is_cob(dir)).then(|| dir.to_string())
    })
    .collect();
    let args: Vec<String> = cobs(&scripts)
        .iter()
        .map(|n| scripts.join(n).display().to_string())
        .collect();
    let expected: BTreeSet<String> = sh(&format!(
        "python3 {}/tests/scripts/cob_emitters.py {}",
        env!("CARGO_MANIFEST_DIR"),
        args.join(" ")
    ))
    .lines()
    .map(str::to_string)
    .collect();
    assert!(!expected.is_empty());
    assert!(expected.len() < args.len(), "some scripts emit nothing");
    assert_eq!(found, expected);
}

/// (byte offset, old, new) of every 32-bit word that differs, computed by Python.
fn word_diff(a: &Path, b: &Path) -> String {
    sh(&format!(
        "python3 -c \"import struct,sys\n\
a=open(sys.argv[1],'rb').read(); b=open(sys.argv[2],'rb').read()\n\
assert len(a)==len(b), (len(a), len(b))\n\
n=len(a)//4\n\
wa=struct.unpack('<%dI'%n,a[:4*n]); wb=struct.unpack('<%dI'%n,b[:4*n])\n\
print([(x,y) for x,y in zip(wa,wb) if x!=y])\" {} {}",
        a.display(),
        b.display()
    ))
    .trim()
    .to_string()
}

/// The lines of a disassembly, its origin line left out (it names the binary).
fn listing(bin: &Path) -> Vec<String> {
    common::tafs_ok(&["cob", "disassemble", bin.to_str().unwrap()])
        .lines()
        .filter(|l| !l.starts_with("; origin:"))
        .map(str::to_string)
        .collect()
}

#[test]
fn sed_of_a_sleep_constant_changes_exactly_that_constant_and_a_syntax_error_gives_eio() {
    let Some(g) = game() else {
        return;
    };
    let bos_file = g.asset().join("script.bos");
    let text = std::fs::read_to_string(&bos_file).unwrap();
    // the first `sleep N;` line
    let (line, n) = text
        .lines()
        .enumerate()
        .find_map(|(i, l)| {
            let n = l.trim().strip_prefix("sleep ")?.strip_suffix(';')?;
            Some((i + 1, n.parse::<u32>().ok()?))
        })
        .expect("a sleep statement");
    let m = n + 1;
    let orig = g.path("orig.cob");
    std::fs::copy(g.bin(), &orig).unwrap();
    let before = listing(&g.bin());
    sh(&format!(
        "sed -i '{line}s/sleep {n};/sleep {m};/' {}",
        bos_file.display()
    ));
    let after = listing(&g.bin());
    assert_eq!(before.len(), after.len());
    let changed: Vec<(&String, &String)> =
        before.iter().zip(&after).filter(|(a, b)| a != b).collect();
    assert_eq!(changed.len(), 1, "{changed:?}");
    assert_eq!(changed[0].0.trim(), format!("PUSH_CONST {n}"));
    assert_eq!(changed[0].1.trim(), format!("PUSH_CONST {m}"));
    assert_eq!(word_diff(&orig, &g.bin()), format!("[({n}, {m})]"));

    // A syntax error written in place: EIO at close, the status names the line, the
    // binary is untouched.
    let saved = std::fs::read(g.bin()).unwrap();
    let bad = g.path("bad.bos");
    let edited = std::fs::read_to_string(&bos_file).unwrap();
    std::fs::write(
        &bad,
        edited.replacen(&format!("sleep {m};"), &format!("sleep {m} oops;"), 1),
    )
    .unwrap();
    let o = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("cat {} > {}", bad.display(), bos_file.display()))
        .output()
        .unwrap();
    assert!(!o.status.success(), "a save that does not compile fails");
    assert!(String::from_utf8_lossy(&o.stderr).contains("Input/output error"));
    assert_eq!(std::fs::read(g.bin()).unwrap(), saved);
    let status = g.status();
    assert!(status.contains(&format!("script.bos:{line}:")), "{status}");
}
