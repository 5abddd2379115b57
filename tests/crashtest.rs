//! Every file in tests/crashtest/ (inputs that once crashed, exhausted memory or failed a
//! fuzzed round trip) is answered without a panic; rendering its view stays within the
//! per-image pixel budget; a GAF that parses writes and reads back to the same model; a COB
//! that parses writes back, and disassembles and assembles back, to the same bytes; a 3DO
//! that parses writes back over itself identical.

use tafs::formats::{cob, gaf, o3do, tnt, Limits};
use tafs::view::{self, AssetKind, ViewOptions};

#[test]
fn crashtest_inputs_are_handled() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/crashtest");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        let Some(kind) = AssetKind::from_name(&name) else {
            continue;
        };
        let data = std::fs::read(e.path()).unwrap();
        n += 1;
        match kind {
            AssetKind::Gaf => {
                if let Ok(g) = gaf::parse(&data, &Limits::default()) {
                    let out = gaf::write(&g).unwrap_or_else(|e| panic!("{name}: write: {e}"));
                    let again = gaf::parse(&out, &Limits::default())
                        .unwrap_or_else(|e| panic!("{name}: written GAF: {e}"));
                    assert!(again.sequences == g.sequences, "{name}: frames changed");
                    assert!(
                        again.trailing == g.trailing,
                        "{name}: trailing bytes changed"
                    );
                }
            }
            AssetKind::Tnt => {
                if let Ok(t) = tnt::parse(&data, &Limits::default()) {
                    let _ = tnt::write(&t);
                }
            }
            AssetKind::Cob => {
                if let Ok(c) = cob::parse(&data, &cob::Limits::default()) {
                    assert_eq!(cob::write(&c).ok().as_deref(), Some(&data[..]), "{name}");
                    let back = cob::asm::assemble(&cob::asm::disassemble(&c))
                        .unwrap_or_else(|e| panic!("{name}: own assembly: {e}"));
                    assert_eq!(cob::write(&back).ok().as_deref(), Some(&data[..]), "{name}");
                }
            }
            AssetKind::Model3d => {
                let lim = o3do::ModelLimits::default();
                if let Ok(m) = o3do::parse(&data, &lim) {
                    let out = o3do::write(&m, Some(&data)).unwrap();
                    assert!(out == data, "{name}: not rewritten identical");
                    let fresh = o3do::write(&m, None).unwrap();
                    let back = o3do::parse(&fresh, &lim).unwrap();
                    assert_eq!(back.pieces.len(), m.pieces.len(), "{name}");
                }
            }
            _ => {}
        }
        if let Ok(v) = view::open(kind, &data, &ViewOptions::default()) {
            for entry in v.entries() {
                if entry.kind == view::EntryKind::File {
                    // an error is fine; a panic or an unbounded allocation is not
                    if let Ok(bytes) = v.render_vec(&entry.path) {
                        assert!(
                            bytes.len() < 256 << 20,
                            "{name}: {} is {} bytes",
                            entry.path,
                            bytes.len()
                        );
                    }
                }
            }
        }
    }
    assert!(n >= 1, "no crashtest inputs found");
    println!("{n} crashtest input(s) handled");
}
