//! Writes the malformed-input corpus (see `tests/malformed_corpus/mod.rs`) into a directory:
//! `cargo run --example make_malformed -- DIR` (what `scripts/make-malformed DIR` runs).

#[path = "../tests/malformed_corpus/mod.rs"]
mod malformed_corpus;

fn main() {
    let Some(dir) = std::env::args_os().nth(1) else {
        eprintln!("usage: make_malformed DIR");
        std::process::exit(2);
    };
    let dir = std::path::PathBuf::from(dir);
    match malformed_corpus::write_to(&dir) {
        Ok(cases) => {
            for c in &cases {
                let expect = match &c.expect {
                    malformed_corpus::Expect::Reject(what) => format!("reject ({what})"),
                    malformed_corpus::Expect::Accept => "accept".to_string(),
                };
                println!("{:<40} {:>8} bytes  {expect}", c.name, c.bytes.len());
            }
            println!("{} files in {}", cases.len(), dir.display());
        }
        Err(e) => {
            eprintln!("make_malformed: {}: {e}", dir.display());
            std::process::exit(1);
        }
    }
}
