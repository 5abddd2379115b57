//! parse → write → parse: a written map reads back to the same model, and an unedited 0x2000
//! map whose blocks do not overlap comes back byte for byte.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tafs::formats::{tnt, Limits};

fuzz_target!(|data: &[u8]| {
    let limits = Limits {
        max_map_cells: 1 << 16,
        max_tiles: 4096,
        max_features: 4096,
        ..Limits::default()
    };
    let Ok(t) = tnt::parse(data, &limits) else {
        return;
    };
    // The writer may refuse (odd sizes, bad tile indices, names without NUL): that is fine.
    let Ok(out) = tnt::write(&t) else {
        return;
    };
    let again = tnt::parse(&out, &Limits::default()).expect("a written map must parse");
    assert_eq!(again.width, t.width);
    assert_eq!(again.height, t.height);
    assert_eq!(again.sea_level, t.sea_level);
    assert_eq!(again.minimap_flags, t.minimap_flags);
    assert_eq!(again.pads, t.pads);
    assert_eq!(again.tilemap, t.tilemap);
    assert_eq!(again.attrs, t.attrs);
    assert_eq!(again.tiles, t.tiles);
    assert_eq!(again.features, t.features);
    assert_eq!(again.minimap, t.minimap);
    if t.source_version == tnt::VERSION_TA && again.layout == t.layout {
        assert_eq!(out, data, "same layout must mean same bytes");
    }
});
