//! Every file in tests/crashtest/ (inputs that once crashed or exhausted memory) is answered
//! without a panic; rendering its view stays within the per-image pixel budget.

use tafs::formats::{gaf, tnt, Limits};
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
                    let _ = gaf::write(&g);
                }
            }
            AssetKind::Tnt => {
                if let Ok(t) = tnt::parse(&data, &Limits::default()) {
                    let _ = tnt::write(&t);
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
