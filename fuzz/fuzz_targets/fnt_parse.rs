//! Any bytes as a bitmap font: a font or an error, never a panic; whatever parses renders
//! its view, and the view rebuilds the same bytes (or, for an irregular font, refuses
//! nothing unedited).
#![no_main]
use libfuzzer_sys::fuzz_target;
use tafs::formats::fnt;
use tafs::view::{self, AssetKind, MemFileSet, ViewOptions};

fuzz_target!(|data: &[u8]| {
    let Ok(f) = fnt::parse(data) else {
        return;
    };
    assert_eq!(fnt::write(&f).unwrap(), data);
    let opts = ViewOptions::default();
    let v = view::open(AssetKind::Fnt, data, &opts).unwrap();
    let files = MemFileSet::from_view(&*v).unwrap();
    assert_eq!(
        view::rebuild(AssetKind::Fnt, &files, Some(data), &opts).unwrap(),
        data
    );
});
