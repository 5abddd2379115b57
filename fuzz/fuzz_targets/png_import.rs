//! Arbitrary bytes as a frame image of a dumped GAF, then build: an error naming the file or
//! a GAF that writes and parses again, never a panic or an unbounded allocation.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tafs::formats::{gaf, Limits};
use tafs::view::gaf::{build, BuildOptions, GafView};
use tafs::view::{MemFileSet, ViewOptions};

fuzz_target!(|data: &[u8]| {
    let sample = tafs::sample::animated_gaf();
    let Ok(view) = GafView::from_gaf(sample, &ViewOptions::default()) else {
        return;
    };
    let Ok(mut files) = MemFileSet::from_view(&view) else {
        return;
    };
    // the first byte picks which image is replaced (simple RLE, raw, composite, layer)
    let targets = [
        "pulse/0.png",
        "panel/0.png",
        "turret/1.png",
        "turret/0.layers/1.png",
    ];
    let Some((&pick, image)) = data.split_first() else {
        return;
    };
    let path = targets[usize::from(pick) % targets.len()];
    files.files.insert(path.to_string(), image.to_vec());
    if let Ok(built) = build(&files, &BuildOptions::default()) {
        let bytes = gaf::write(&built.gaf).expect("a built GAF must be writable");
        gaf::parse(&bytes, &Limits::default()).expect("a written GAF must parse");
    }
});
