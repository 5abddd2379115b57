//! BOS throughput (a benchmark, not a test): `cargo bench --bench bos`.
//! Prints scripts per second for decompiling every COB of `../shared/corpus/ota/scripts` and
//! for compiling the decompiled sources back, and the time of the biggest script's
//! decompile + compile (what a one-line save through the mount costs in the compiler).

use std::time::Instant;
use tafs::formats::bos::{self, decompile::decompile, Limits, NoIncludes, Options};
use tafs::formats::cob;

fn main() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus/ota/scripts");
    let Ok(rd) = std::fs::read_dir(&dir) else {
        println!("bos: {} is absent; nothing measured", dir.display());
        return;
    };
    let mut cobs = Vec::new();
    for e in rd.flatten() {
        let p = e.path();
        if p.extension().is_some_and(|x| x.eq_ignore_ascii_case("cob")) {
            let bytes = std::fs::read(&p).unwrap();
            if let Ok(c) = cob::parse(&bytes, &cob::Limits::default()) {
                cobs.push((p, bytes.len(), c));
            }
        }
    }
    let rounds = 3;
    let t = Instant::now();
    let mut sources = Vec::new();
    for _ in 0..rounds {
        sources = cobs.iter().map(|(_, _, c)| decompile(c).source).collect();
    }
    let dt = t.elapsed().as_secs_f64();
    println!("decompile (with its recompile check): {} scripts × {rounds} in {dt:.2} s = {:.0} scripts/s", cobs.len(), (cobs.len() * rounds) as f64 / dt);
    let t = Instant::now();
    for _ in 0..rounds {
        for s in &sources {
            let opts = Options::new(bos::mode_of(s.as_bytes()));
            bos::compile(
                "x.bos",
                s.as_bytes(),
                &NoIncludes,
                &opts,
                &Limits::default(),
            )
            .unwrap();
        }
    }
    let dt = t.elapsed().as_secs_f64();
    println!(
        "compile: {} scripts × {rounds} in {dt:.2} s = {:.0} scripts/s",
        sources.len(),
        (sources.len() * rounds) as f64 / dt
    );
    if let Some((p, len, c)) = cobs.iter().max_by_key(|(_, len, _)| *len) {
        let t = Instant::now();
        let src = decompile(c).source;
        let d = t.elapsed();
        let t = Instant::now();
        let back = bos::compile(
            "x.bos",
            src.as_bytes(),
            &NoIncludes,
            &Options::new(bos::mode_of(src.as_bytes())),
            &Limits::default(),
        )
        .unwrap();
        let _ = cob::write(&back).unwrap();
        println!(
            "biggest script {} ({len} bytes): decompile {:.1} ms, compile {:.1} ms",
            p.file_name().unwrap_or_default().to_string_lossy(),
            d.as_secs_f64() * 1e3,
            t.elapsed().as_secs_f64() * 1e3
        );
    }
}
