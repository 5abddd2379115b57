//! The BOS compiler against the shipped `.bos`/`.cob` pairs of the corpus and self-made
//! fixtures.

mod common;

use std::path::Path;

use tafs::formats::bos::{self, Limits, Mode, NoIncludes, Options};
use tafs::game::scripts::FolderIncludes;
use tafs::game::Plain;

fn compile_file(path: &Path, angle: f64, cavedog: bool) -> Result<Vec<u8>, bos::Error> {
    let src = std::fs::read(path).unwrap();
    let inc = FolderIncludes::new(&Plain, path.parent().unwrap(), None);
    let opts = Options {
        mode: bos::mode_of(&src),
        angle,
        cavedog,
    };
    bos::compile(
        &path.to_string_lossy(),
        &src,
        &inc,
        &opts,
        &Limits::default(),
    )
    .map(|p| tafs::formats::cob::write(&p).unwrap())
}

/// Words of the code section of a COB (for a readable first difference).
fn first_difference(a: &[u8], b: &[u8]) -> String {
    let n = a
        .iter()
        .zip(b)
        .position(|(x, y)| x != y)
        .unwrap_or(a.len().min(b.len()));
    format!(
        "first difference at byte {n} (0x{n:x}); lengths {} vs {}",
        a.len(),
        b.len()
    )
}

#[test]
fn shipped_pairs() {
    let Some(c) = common::corpus() else { return };
    let mut report = Vec::new();
    let mut same = 0;
    let bos_files = common::files_with_ext(&c.join("cob"), &[".bos"]);
    for b in &bos_files {
        let stem = b.file_stem().unwrap().to_string_lossy().to_string();
        let dir = b.parent().unwrap();
        let Some(cob) = tafs::game::find_ci(dir, &format!("{stem}.cob")) else {
            continue;
        };
        let want = std::fs::read(&cob).unwrap();
        if compile_file(b, bos::ANGLE_EXACT, true).is_ok_and(|g| g == want) {
            same += 1;
            report.push(format!("{}: identical as Cavedog's compiler", b.display()));
            continue;
        }
        if compile_file(b, bos::ANGLE_SCRIPTOR, false).is_ok_and(|g| g == want) {
            same += 1;
            report.push(format!("{}: identical with angle 182", b.display()));
            continue;
        }
        match compile_file(b, bos::ANGLE_EXACT, false) {
            Ok(got) if got == want => same += 1,
            Ok(got) => {
                if std::env::var_os("BOS_DUMP").is_some() {
                    std::fs::write(format!("/tmp/bosx/{stem}.got.cob"), &got).unwrap();
                }
                report.push(format!(
                    "{}: {}",
                    b.display(),
                    first_difference(&got, &want)
                ))
            }
            Err(e) => report.push(format!("{}: {e}", b.display())),
        }
    }
    eprintln!(
        "{same}/{} identical\n{}",
        bos_files.len(),
        report.join("\n")
    );
}

#[test]
fn fixture_compiles() {
    let src = b"#include \"sfxtype.h\"\n#include \"EXPtype.h\"\npiece base, turret;\nstatic-var busy;\n#define SIG_AIM 2\nCreate()\n{\n\twhile( get BUILD_PERCENT_LEFT ) { sleep 400; }\n}\nAimPrimary(heading, pitch)\n{\n\tsignal SIG_AIM;\n\tset-signal-mask SIG_AIM;\n\tturn turret to y-axis heading speed <90>;\n\twait-for-turn turret around y-axis;\n\treturn (1);\n}\n";
    let p = bos::compile(
        "t.bos",
        src,
        &NoIncludes,
        &Options::new(Mode::Ta),
        &Limits::default(),
    )
    .unwrap();
    assert_eq!(p.pieces, vec!["base", "turret"]);
    assert_eq!(p.scripts.len(), 2);
}
