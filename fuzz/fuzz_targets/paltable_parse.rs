//! Any bytes as a palette lookup table, and as its view's CSV and PNG: a table or an error,
//! never a panic; a table's view rebuilds the same bytes; any bytes as `table.csv` or
//! `table.png` over a real table rebuild or are refused.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tafs::formats::{paltable, Limits};
use tafs::view::{self, AssetKind, MemFileSet, ViewOptions};

fuzz_target!(|data: &[u8]| {
    let opts = ViewOptions::default();
    if let Ok(t) = paltable::parse(data, None, &Limits::default()) {
        assert_eq!(paltable::write(&t).unwrap(), data);
        let v = view::open(AssetKind::PalTable, data, &opts).unwrap();
        let files = MemFileSet::from_view(&*v).unwrap();
        assert_eq!(
            view::rebuild(AssetKind::PalTable, &files, Some(data), &opts).unwrap(),
            data
        );
        return;
    }
    let base = vec![0u8; 8192];
    for name in ["table.csv", "table.png"] {
        let mut files = MemFileSet::default();
        files.files.insert(name.to_string(), data.to_vec());
        if let Ok(out) = view::rebuild(AssetKind::PalTable, &files, Some(&base), &opts) {
            assert_eq!(out.len(), base.len());
        }
    }
});
