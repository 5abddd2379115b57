//! Any bytes as a 3DO model: a model or an error, never a panic, a hang or an unbounded
//! allocation (cyclic and deep trees included, shared lists budgeted as expanded); whatever
//! parses renders its OBJ view and its preview.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tafs::formats::o3do::{self, ModelLimits};
use tafs::formats::palette::Palette;
use tafs::view::model3d::{self, Texture, Textures};

fuzz_target!(|data: &[u8]| {
    // the reader's own limits: what they accept expands within their byte budget
    let lim = ModelLimits::default();
    let Ok(m) = o3do::parse(data, &lim) else {
        return;
    };
    assert!(!m.pieces.is_empty());
    let mut t = Textures::new();
    for name in m.textures().iter().step_by(2) {
        t.insert(
            name,
            Texture {
                width: 1,
                height: 1,
                indices: vec![0],
            },
        );
    }
    let files = model3d::files(data, &t, &Palette::ta(), &lim).unwrap();
    assert!(files.len() >= 3);
    let png = model3d::preview_png(&m, &t, &Palette::ta()).unwrap();
    assert!(png.starts_with(b"\x89PNG"));
});
