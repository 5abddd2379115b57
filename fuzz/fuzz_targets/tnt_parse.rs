//! The TNT reader on arbitrary bytes: an error or a map, never a panic or a huge allocation.
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
    if let Ok(t) = tnt::parse(data, &limits) {
        // Everything the views touch must be consistent with the header.
        assert_eq!(
            t.attrs.len() as u64,
            u64::from(t.width) * u64::from(t.height)
        );
        assert_eq!(t.tilemap.len(), t.tiles_x() * t.tiles_y());
        let _ = t.placements().count();
        let mut row = vec![0u8; t.pixel_width()];
        if t.pixel_height() > 0 {
            t.render_row(t.pixel_height() - 1, &mut row);
        }
    }
});
