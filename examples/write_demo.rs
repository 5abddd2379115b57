//! Writes the demo game folder (palette, GAFs, features .tdf, map and .ota) into DIR:
//! `cargo run --example write_demo -- DIR` (seeds for `scripts/fuzz`).

fn main() {
    let Some(dir) = std::env::args_os().nth(1) else {
        eprintln!("usage: write_demo DIR");
        std::process::exit(2);
    };
    if let Err(e) = tafs::cli::demo::write_demo(std::path::Path::new(&dir)) {
        eprintln!("write_demo: {e}");
        std::process::exit(1);
    }
}
