//! Any bytes as a PCX, with the limits the reader has everywhere else: an image or an
//! error, never a panic; the header's [`pcx::shape`] (what the mount's budget leases)
//! agrees with the parse and covers what it holds; whatever parses rewrites to the same
//! bytes through `write_like`, re-encodes to an image that parses back equal, and goes
//! through the view and back unchanged.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tafs::formats::{pcx, Limits};
use tafs::view::MemFileSet;

fuzz_target!(|data: &[u8]| {
    let lim = Limits::default();
    let shape = pcx::shape(data, &lim);
    let Ok(p) = pcx::parse(data, &lim) else {
        return;
    };
    let s = shape.expect("parsed, so its header is fine");
    assert_eq!((s.kind, s.width, s.height), (p.kind, p.width, p.height));
    assert!(s.decode_bytes >= (p.pixels.len() + p.padding.len()) as u64);
    assert_eq!(pcx::write_like(&p, data, &lim).ok().as_deref(), Some(data));
    let fresh = pcx::write(&p).unwrap();
    assert_eq!(pcx::parse(&fresh, &lim).ok(), Some(p));
    if let Ok(files) = tafs::view::pcx::files(data, &lim) {
        let fs = MemFileSet {
            files: files.into_iter().collect(),
        };
        assert_eq!(
            tafs::view::pcx::build(&fs, None, &lim).ok().as_deref(),
            Some(data)
        );
    }
});
