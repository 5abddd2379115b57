//! formats::tdf on the corpus's TDF/OTA files and on hand-written text.

use tafs::formats::tdf;

fn corpus(rel: &str) -> Option<Vec<u8>> {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/corpus/game")
        .join(rel);
    match std::fs::read(&p) {
        Ok(b) => Some(b),
        Err(_) => {
            println!("note: corpus file {} absent; skipped", p.display());
            None
        }
    }
}

#[test]
fn corpus_feature_definitions() {
    let Some(b) = corpus("features/armpopaa_dead.tdf") else {
        return;
    };
    let s = tdf::parse(&b).unwrap();
    // The file defines armpopaa_dead, armpopaa_dead2, armpopaa_heap.
    assert_eq!(s.len(), 3);
    let heap = tdf::find(&s, "ARMPOPAA_HEAP").unwrap();
    assert_eq!(heap.get("object"), Some("3x3b"));
    assert_eq!(heap.get("FootprintX"), Some("3"));
    assert_eq!(heap.get("blocking"), Some("0"));
}

#[test]
fn corpus_ota_nesting() {
    let Some(b) = corpus("maps/example.ota") else {
        return;
    };
    let s = tdf::parse(&b).unwrap();
    let g = tdf::find(&s, "globalheader").unwrap();
    assert_eq!(g.get("SCHEMACOUNT"), Some("1"));
    assert_eq!(g.get("missionname"), Some(""));
    let schema = g.child("schema 0").unwrap();
    let units = schema.child("units").unwrap();
    assert_eq!(units.children.len(), 2);
    assert_eq!(units.child("unit1").unwrap().get("XPos"), Some("752"));
    let feats = schema.child("features").unwrap();
    assert_eq!(feats.children.len(), 13);
    assert_eq!(
        feats.child("feature12").unwrap().get("Featurename"),
        Some("RockMetal3")
    );
}

#[test]
fn every_corpus_tdf_parses() {
    for rel in [
        "features/corpses/zzz_dead.tdf",
        "gamedata/explosions/BerthaFlare.tdf",
        "gamedata/sidedata.tdf",
    ] {
        let Some(b) = corpus(rel) else { continue };
        let s = tdf::parse(&b).unwrap_or_else(|e| panic!("{rel}: {e}"));
        assert!(!s.is_empty(), "{rel}");
    }
}

#[test]
fn hand_written_text() {
    let t = "[A]{x=1;/* c */[B]{y = two words ;}\r\n// z=3;\n}\n[a]{x=9;}";
    let s = tdf::parse(t.as_bytes()).unwrap();
    assert_eq!(s.len(), 2);
    let a = tdf::find(&s, "a").unwrap(); // the first of the two
    assert_eq!(a.get("X"), Some("1"));
    assert_eq!(a.get("z"), None);
    assert_eq!(a.child("b").unwrap().get("y"), Some("two words"));
    // Latin-1 bytes decode.
    let s = tdf::parse(b"[F]{name=caf\xe9;}").unwrap();
    assert_eq!(s[0].get("name"), Some("caf\u{e9}"));
    // Errors name the line.
    let e = tdf::parse(b"[A]\n{\nx=1;\n").unwrap_err();
    assert_eq!(e.line, 1);
    assert!(e.to_string().contains("[A]"), "{e}");
}
