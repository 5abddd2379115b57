//! Decompile → compile gives the identical COB: every COB of the corpus (the `cob/` pairs
//! and variants, Cavedog's 272 in `ota/scripts/`), and self-made fixtures.

mod common;

use tafs::formats::bos::decompile::decompile;
use tafs::formats::bos::{self, Limits, Mode, NoIncludes, Options};
use tafs::formats::cob;

fn roundtrip(bytes: &[u8]) -> Result<(bool, Vec<String>), String> {
    let c = cob::parse(bytes, &cob::Limits::default()).map_err(|e| e.to_string())?;
    let d = decompile(&c);
    let mode = bos::mode_of(d.source.as_bytes());
    let back = bos::compile(
        "x.bos",
        d.source.as_bytes(),
        &NoIncludes,
        &Options::new(mode),
        &Limits::default(),
    )
    .map_err(|e| e.to_string())?;
    let same = cob::write(&back).map_err(|e| e.to_string())? == bytes;
    assert_eq!(
        same, d.identical,
        "the decompiler's own identity check disagrees"
    );
    Ok((same, d.raw_scripts))
}

#[test]
fn fixture_roundtrip() {
    let src = b"piece base, turret, flare;\nstatic-var busy, aim;\nCreate()\n{\n\tbusy = 0;\n\twhile( get 17 ) { sleep 400; }\n\tif (busy == 1 AND aim < -3) { hide flare; } else { show flare; }\n\tspin turret around y-axis speed <50>;\n}\nAimPrimary(heading, pitch)\n{\n\tvar x;\n\tx = (heading + 2) * 3 - get 12(heading);\n\tsignal 2;\n\tset-signal-mask 2;\n\tturn turret to y-axis heading speed <90>;\n\twait-for-turn turret around y-axis;\n\tstart-script Create();\n\treturn (1);\n}\nEmpty()\n{\n}\n";
    let c = bos::compile(
        "t.bos",
        src,
        &NoIncludes,
        &Options::new(Mode::Ta),
        &Limits::default(),
    )
    .unwrap();
    let bytes = cob::write(&c).unwrap();
    let (same, raw) = roundtrip(&bytes).unwrap();
    assert!(same);
    assert!(raw.is_empty(), "{raw:?}");
    let d = decompile(&c);
    assert!(
        d.source.contains("while (get BUILD_PERCENT_LEFT)"),
        "{}",
        d.source
    );
    assert!(
        d.source.contains("} else") || d.source.contains("else\n"),
        "{}",
        d.source
    );
}

#[test]
fn fixture_unstructured_code_falls_back_to_words() {
    // A jump into the middle of an expression cannot be written as BOS.
    let mut c = cob::Cob::new(4, vec!["base".into()], 0);
    c.push_script("Odd", &[0x1002_1001, 1, 0x1006_4000, 1, 0x1006_5000]);
    let bytes = cob::write(&c).unwrap();
    let (same, raw) = roundtrip(&bytes).unwrap();
    assert!(same);
    assert_eq!(raw, vec!["Odd".to_string()]);
}

#[test]
fn corpus_decompile_compile_identical() {
    let Some(root) = common::corpus() else { return };
    let mut files = common::files_with_ext(&root.join("cob"), &[".cob"]);
    files.extend(common::files_with_ext(&root.join("ota/scripts"), &[".cob"]));
    let (mut same, mut structured, mut failed) = (0, 0, Vec::new());
    for f in &files {
        let bytes = std::fs::read(f).unwrap();
        match roundtrip(&bytes) {
            Ok((true, raw)) => {
                same += 1;
                if raw.is_empty() {
                    structured += 1;
                } else if std::env::var_os("BOS_VERBOSE").is_some() {
                    eprintln!("{}: verbatim {raw:?}", f.display());
                }
            }
            Ok((false, _)) => failed.push(format!("{}: differs", f.display())),
            Err(e) => failed.push(format!("{}: {e}", f.display())),
        }
    }
    eprintln!(
        "{same}/{} identical, {structured} with every script structured\n{}",
        files.len(),
        failed.join("\n")
    );
    assert!(
        failed.is_empty(),
        "decompile → compile differs:\n{}",
        failed.join("\n")
    );
    assert!(
        structured * 10 >= files.len() * 9,
        "only {structured} of {} structured",
        files.len()
    );
}
