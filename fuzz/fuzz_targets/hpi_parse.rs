//! Any bytes into the HPI reader with small limits: an error or an archive, never a panic;
//! every member of what parses is decoded (or refused), and the tree rewrites.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tafs::formats::hpi::{self, HpiLimits, WriteOptions};

fuzz_target!(|data: &[u8]| {
    let limits = HpiLimits {
        max_entries: 4096,
        max_depth: 16,
        max_name_len: 256,
        max_member_size: 1 << 22,
        max_ratio: 2048,
    };
    if let Ok(a) = hpi::parse(data, &limits) {
        for (i, f) in a.files() {
            let _ = a.path(i);
            let _ = a.read(data, f, &limits);
        }
        if let Ok(tree) = a.to_tree(data) {
            if let Ok(out) = hpi::write(&tree, &WriteOptions::like(&a)) {
                // What was read is written back readable.
                assert!(hpi::parse(&out, &limits).is_ok());
            }
        }
    }
});
