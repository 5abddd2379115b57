//! TA's LZ77: decoding any bytes never panics and never passes the declared size; encoding
//! any bytes decodes back to them.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tafs::formats::hpi::lz77;

fuzz_target!(|data: &[u8]| {
    let expected = data.first().map_or(0, |&b| usize::from(b) * 64);
    if let Ok((out, used)) = lz77::decode(data.get(1..).unwrap_or_default(), expected) {
        assert_eq!(out.len(), expected);
        assert!(used < data.len());
    }
    let enc = lz77::encode(data);
    let (dec, used) = lz77::decode(&enc, data.len()).expect("own encoding decodes");
    assert_eq!(dec, data);
    assert_eq!(used, enc.len());
});
