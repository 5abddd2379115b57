//! COB reader and writer over every real script of the corpus: each parses and writes back
//! to identical bytes; the facts PROVENANCE.md lists for the odd variants are what the model
//! shows. Self-made fixtures run in the unit tests of `formats::cob` when the corpus is absent.

mod common;

use tafs::formats::cob::{self, Limits};

fn corpus_cobs() -> Vec<std::path::PathBuf> {
    let Some(c) = common::corpus() else {
        return Vec::new();
    };
    let mut v = common::files_with_ext(&c.join("cob"), &[".cob"]);
    v.extend(common::files_with_ext(&c.join("ota/scripts"), &[".cob"]));
    v
}

#[test]
fn every_corpus_cob_writes_back_identical() {
    let files = corpus_cobs();
    let mut n = 0;
    for f in &files {
        let b = std::fs::read(f).unwrap();
        let c = cob::parse(&b, &Limits::default()).unwrap_or_else(|e| panic!("{f:?}: {e}"));
        assert_eq!(cob::write(&c).unwrap(), b, "{f:?}");
        for i in 0..c.scripts.len() {
            assert!(c.script_code(i).is_some(), "{f:?} script {i}");
        }
        n += 1;
    }
    if !files.is_empty() {
        // 31 pairs + 3 variants in cob/, 272 in ota/scripts (some are the same files).
        assert!(n >= 300, "{n} COBs");
    }
}

#[test]
fn corpus_variants_show_their_documented_facts() {
    let Some(c) = common::corpus() else {
        return;
    };
    let read = |p: &str| {
        let b = std::fs::read(c.join(p)).unwrap();
        (cob::parse(&b, &Limits::default()).unwrap(), b.len())
    };
    let (drag, len) = read("cob/ta-cavedog/ARMDRAG.COB");
    assert_eq!(
        (drag.version, drag.scripts.len(), drag.pieces.len(), len),
        (4, 1, 0, 71)
    );
    assert_eq!(drag.scripts[0].name, "Create");
    let (roost, _) = read("cob/spring-warmachines/roost.cob");
    assert_eq!(roost.version, 6);
    assert_eq!(roost.sounds, ["largegun", "BERTHA1", "BERTHA6", "CAPTURE2"]);
    let (andill, _) = read("cob/variants/andill.cob");
    assert_eq!(andill.version, 7);
    let (eufarch, _) = read("cob/variants/eufarch.cob");
    assert_eq!(eufarch.trailing.len(), 179);
    assert!(String::from_utf8_lossy(&eufarch.trailing).contains("COBBLER"));
    let (cortronm, _) = read("cob/variants/cortronm.cob");
    let code: Vec<u8> = cortronm.code.iter().flat_map(|w| w.to_le_bytes()).collect();
    assert!(String::from_utf8_lossy(&code).contains("COBBLER"));
    assert!(cortronm.trailing.is_empty());
    // MoveRate1 is the zero-length script sharing Activate's start.
    let (araca, _) = read("cob/ta-mayhem/ARMACA.cob");
    let m = araca.script_index("MoveRate1").unwrap();
    let a = araca.script_index("Activate").unwrap();
    assert_eq!(araca.scripts[m].start, araca.scripts[a].start);
}

#[test]
fn every_corpus_cob_disassembles_and_assembles_back_identical() {
    let mut words = 0usize;
    for f in corpus_cobs() {
        let b = std::fs::read(&f).unwrap();
        let c = cob::parse(&b, &Limits::default()).unwrap();
        let text = cob::asm::disassemble(&c);
        let back = cob::asm::assemble(&text).unwrap_or_else(|e| panic!("{f:?}: {e}"));
        assert_eq!(cob::write(&back).unwrap(), b, "{f:?}");
        words += text
            .lines()
            .filter(|l| l.trim_start().starts_with(".word"))
            .count();
    }
    eprintln!("{words} code words shown as .word");
}
