//! Any bytes as a COB: a script or an error, never a panic; whatever parses writes back to
//! the same bytes, disassembles to text that assembles back to the same bytes, and goes
//! through the mount's view and back unchanged. Any text as assembly: a COB or an error.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tafs::formats::cob::{self, asm, Limits};
use tafs::view::{MemFileSet, View};

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(c) = asm::assemble(text) {
            let _ = cob::write(&c);
        }
    }
    let lim = Limits::default();
    let Ok(c) = cob::parse(data, &lim) else {
        return;
    };
    assert_eq!(cob::write(&c).ok().as_deref(), Some(data));
    let back = asm::assemble(&asm::disassemble(&c)).expect("own assembly assembles");
    assert_eq!(cob::write(&back).ok().as_deref(), Some(data));
    let v = tafs::view::cob::open(data, &lim).expect("parsed COB has a view");
    let fs = MemFileSet::from_view(&v as &dyn View).expect("renders");
    assert_eq!(
        tafs::view::cob::build(&fs, Some(data), &tafs::formats::bos::NoIncludes, &lim)
            .ok()
            .as_deref(),
        Some(data)
    );
});
