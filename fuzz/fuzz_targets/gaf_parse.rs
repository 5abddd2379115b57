//! Any bytes into the GAF reader, with small limits: an error or a model, never a panic,
//! and the dump view of whatever parses renders every file.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tafs::formats::{gaf, Limits};
use tafs::view::{gaf::GafView, View, ViewOptions};

fuzz_target!(|data: &[u8]| {
    let limits = Limits {
        max_frames: 4096,
        max_frame_pixels: 1 << 20,
        max_total_pixels: 1 << 22,
        max_layer_depth: 8,
        max_frame_references: 4096,
        ..Limits::default()
    };
    // the shared reader (the mount's) gives what the copying one gives
    let shared = gaf::parse_stored_shared(&gaf::Payload::copy_from_slice(data), &limits);
    assert_eq!(shared, gaf::parse_stored(data, &limits));
    if let Some(v) = gaf::parse(data, &limits)
        .ok()
        .and_then(|g| GafView::from_gaf(g, &ViewOptions::default()).ok())
    {
        for e in v.entries() {
            let _ = v.render_vec(&e.path);
        }
    }
});
