//! COB script throughput (a benchmark, not a test): `cargo bench --bench cob [DIR…]`.
//! Over every `.cob` under the given folders (default: the corpus's `cob/` and
//! `ota/scripts/`; a synthetic script when absent), prints scripts per second and MB/s of COB
//! for parse + disassemble and for assemble + write.

use std::path::{Path, PathBuf};
use std::time::Instant;
use tafs::formats::cob::{self, asm, Cob, Limits};

fn cobs_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            cobs_under(&p, out);
        } else if p
            .extension()
            .is_some_and(|x| x.to_string_lossy().eq_ignore_ascii_case("cob"))
        {
            out.push(p);
        }
    }
}

fn synthetic() -> Vec<u8> {
    let mut c = Cob::new(4, (0..40).map(|i| format!("piece{i}")).collect(), 8);
    for s in 0..30 {
        let base = c.code_len_words();
        let mut w = Vec::new();
        for i in 0..200u32 {
            w.extend([0x1002_1001, i, 0x1002_1001, 5, 0x1000_2000, i % 40, i % 3]);
        }
        w.extend([0x1006_4000, base, 0x1002_1001, 0, 0x1006_5000]);
        c.push_script(format!("Script{s}"), &w);
    }
    cob::write(&c).unwrap()
}

fn main() {
    let args: Vec<PathBuf> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .map(PathBuf::from)
        .collect();
    let dirs = if args.is_empty() {
        let c = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus");
        vec![c.join("cob"), c.join("ota/scripts")]
    } else {
        args
    };
    let mut files = Vec::new();
    for d in &dirs {
        cobs_under(d, &mut files);
    }
    let inputs: Vec<Vec<u8>> = if files.is_empty() {
        println!("no .cob found: one synthetic script (30 scripts, 42k words)");
        vec![synthetic()]
    } else {
        files.iter().filter_map(|f| std::fs::read(f).ok()).collect()
    };
    let bytes: usize = inputs.iter().map(Vec::len).sum();
    let lim = Limits::default();
    let scripts: usize = inputs
        .iter()
        .map(|b| cob::parse(b, &lim).map_or(0, |c| c.scripts.len()))
        .sum();
    println!(
        "{} files, {scripts} scripts, {:.1} MB of COB",
        inputs.len(),
        bytes as f64 / 1e6
    );
    let rounds = (20_000_000 / bytes.max(1)).clamp(1, 50);
    let t = Instant::now();
    let mut texts = Vec::new();
    for r in 0..rounds {
        for b in &inputs {
            let c = cob::parse(b, &lim).unwrap();
            let text = asm::disassemble(&c);
            if r == 0 {
                texts.push(text);
            }
        }
    }
    let dis = t.elapsed().as_secs_f64() / rounds as f64;
    let t = Instant::now();
    for _ in 0..rounds {
        for (text, b) in texts.iter().zip(&inputs) {
            let out = cob::write(&asm::assemble(text).unwrap()).unwrap();
            assert_eq!(out.len(), b.len());
        }
    }
    let asm_t = t.elapsed().as_secs_f64() / rounds as f64;
    let text_mb: f64 = texts.iter().map(String::len).sum::<usize>() as f64 / 1e6;
    for (what, secs) in [("parse + disassemble", dis), ("assemble + write", asm_t)] {
        println!(
            "{what:<20} {:>9.0} scripts/s  {:>7.1} MB/s of COB  ({:.1} ms for all, {rounds} rounds; {text_mb:.1} MB of text)",
            scripts as f64 / secs,
            bytes as f64 / 1e6 / secs,
            secs * 1e3
        );
    }
}
