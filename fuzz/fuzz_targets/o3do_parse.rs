//! Any bytes as a 3DO model: a model or an error, never a panic, a hang or an unbounded
//! allocation (cyclic and deep trees included, shared lists budgeted as expanded); whatever
//! parses renders its OBJ view and its preview, writes back over itself to the identical
//! bytes, writes in a fresh layout that reads back as the same model, and rebuilds from
//! its own view.
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
    assert!(
        o3do::write(&m, Some(data)).unwrap() == data,
        "rewrite over itself"
    );
    let fresh = o3do::write(&m, None).unwrap();
    let back = o3do::parse(&fresh, &lim).expect("a fresh layout must parse");
    assert_eq!(back.pieces.len(), m.pieces.len());
    for (a, b) in back.pieces.iter().zip(&m.pieces) {
        assert_eq!((&a.name, a.parent, a.origin), (&b.name, b.parent, b.origin));
        assert_eq!(a.vertices, b.vertices);
        let idx = |p: &o3do::Piece| {
            p.primitives
                .iter()
                .map(|q| q.indices.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(idx(a), idx(b));
    }
    let v = model3d::open(data, &t, &Palette::ta(), &lim).unwrap();
    if let Ok(files) = tafs::view::MemFileSet::from_view(&v) {
        // names with whitespace or unusual bytes need not survive the OBJ; no panic
        let _ = model3d::build(&files, Some(data), None, &lim);
    }
});
