//! Any bytes into the BOS compiler front-end (preprocessor, parser, code generator): a COB
//! or an error, never a panic, hang or unbounded allocation; what compiles decompiles to
//! source that compiles back to the same COB.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tafs::formats::bos::{self, decompile::decompile, Limits, Mode, NoIncludes, Options};
use tafs::formats::cob;

fuzz_target!(|data: &[u8]| {
    let limits = Limits {
        max_expanded_tokens: 1 << 16,
        max_code_words: 1 << 16,
        ..Limits::default()
    };
    let Ok(c) = bos::compile(
        "fuzz.bos",
        data,
        &NoIncludes,
        &Options::new(Mode::Ta),
        &limits,
    ) else {
        return;
    };
    let Ok(bytes) = cob::write(&c) else { return };
    let d = decompile(&c);
    if d.identical {
        let back = bos::compile(
            "d.bos",
            d.source.as_bytes(),
            &NoIncludes,
            &Options::new(bos::mode_of(d.source.as_bytes())),
            &Limits::default(),
        )
        .expect("decompiled source compiles");
        assert_eq!(cob::write(&back).ok(), Some(bytes));
    }
});
