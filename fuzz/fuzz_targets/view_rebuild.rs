//! The rebuild of a view from an arbitrary small file set: the input is split into files
//! (`path\0bytes\0…`) laid over a dump of the sample GAF and the demo map, then built or
//! packed: an error or a result, never a panic or an unbounded allocation.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tafs::formats::{gaf, tnt, Limits};
use tafs::view::gaf::{build, BuildOptions, GafView};
use tafs::view::tnt::{PackOptions, TntView};
use tafs::view::{MemFileSet, ViewOptions};

fn overlay(base: &mut MemFileSet, data: &[u8]) {
    let mut parts = data.split(|&b| b == 0);
    while let (Some(p), Some(bytes)) = (parts.next(), parts.next()) {
        if let Ok(p) = std::str::from_utf8(p) {
            if bytes == b"-" {
                base.files.remove(p);
            } else {
                base.files.insert(p.to_string(), bytes.to_vec());
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    if which % 2 == 0 {
        let Ok(v) = GafView::from_gaf(tafs::sample::animated_gaf(), &ViewOptions::default()) else {
            return;
        };
        let Ok(mut files) = MemFileSet::from_view(&v) else {
            return;
        };
        overlay(&mut files, rest);
        if let Ok(b) = build(&files, &BuildOptions::default()) {
            if let Ok(bytes) = gaf::write(&b.gaf) {
                gaf::parse(&bytes, &Limits::default()).expect("a written GAF must parse");
            }
        }
    } else {
        let map = tafs::sample::demo_map();
        let v = TntView::from_tnt(map, &ViewOptions::default(), false);
        let Ok(mut files) = MemFileSet::from_view(&v) else {
            return;
        };
        overlay(&mut files, rest);
        if let Ok(bytes) = tafs::view::tnt::pack(&files, &PackOptions::default()) {
            tnt::parse(&bytes, &Limits::default()).expect("a packed map must parse");
        }
    }
});
