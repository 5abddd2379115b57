//! Any bytes into the TDF reader: sections or an error, never a panic or unbounded nesting.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tafs::formats::tdf;

fuzz_target!(|data: &[u8]| {
    if let Ok(sections) = tdf::parse(data) {
        let _ = tdf::find(&sections, "feature");
    }
});
