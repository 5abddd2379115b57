//! parse → write → parse: whatever parses must write, and read back to the same model.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tafs::formats::{gaf, Limits};

fuzz_target!(|data: &[u8]| {
    let limits = Limits {
        max_frames: 4096,
        max_frame_pixels: 1 << 20,
        max_total_pixels: 1 << 22,
        max_layer_depth: 8,
        max_frame_references: 4096,
        ..Limits::default()
    };
    if let Ok(g) = gaf::parse(data, &limits) {
        let out = gaf::write(&g).expect("a parsed GAF must be writable");
        let again = gaf::parse(&out, &Limits::default()).expect("written GAF must parse");
        assert_eq!(again.sequences, g.sequences);
        assert_eq!(again.trailing, g.trailing);
    }
});
