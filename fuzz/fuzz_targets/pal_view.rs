//! The palette view's way back from arbitrary `palette.csv` and `swatch.png` contents laid
//! over the view of the built-in palette: an error or a palette file, never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tafs::formats::palette::TA_PALETTE_BYTES;
use tafs::formats::Limits;
use tafs::view::pal::{self, PaletteFile};
use tafs::view::MemFileSet;

fuzz_target!(|data: &[u8]| {
    let lim = Limits::default();
    let base = TA_PALETTE_BYTES.to_vec();
    let mut fs = MemFileSet {
        files: pal::files(&base, PaletteFile::Pal, "fuzz", &lim)
            .unwrap()
            .into_iter()
            .collect(),
    };
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let file = if which % 2 == 0 {
        pal::CSV
    } else {
        pal::SWATCH
    };
    fs.files.insert(file.to_string(), rest.to_vec());
    if let Ok(out) = pal::build(&fs, PaletteFile::Pal, Some(&base), &lim) {
        assert_eq!(out.len(), base.len());
    }
    let _ = pal::build(&fs, PaletteFile::Pal, None, &lim);
    let _ = pal::files(rest, PaletteFile::Pal, "x", &lim);
    let _ = pal::files(rest, PaletteFile::Pcx, "x", &lim);
});
