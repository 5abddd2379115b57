//! Any bytes as a .pal and as a .pcx palette: a palette or an error, never a panic; whatever
//! parses answers nearest-colour queries.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tafs::formats::palette::Palette;

fuzz_target!(|data: &[u8]| {
    for name in ["x.pal", "x.pcx"] {
        if let Ok(p) = Palette::from_file_bytes(name, data) {
            let _ = p.nearest([data.len() as u8, 7, 200], &[9]);
            assert_eq!(
                Palette::from_pal(&p.to_pal()).ok().map(|q| q.rgb_bytes()),
                Some(p.rgb_bytes())
            );
        }
    }
});
