//! HPI throughput (a benchmark, not a test): `cargo bench --bench hpi [-- MB]`.
//! Builds a synthetic archive of about 100 MB (decompressed) in each variant and prints
//! MB/s (decompressed bytes) for pack, list (parse only) and extract (every member decoded,
//! sequentially and in parallel).

use rayon::prelude::*;
use std::time::Instant;
use tafs::formats::hpi::{self, HpiLimits, Method, Node, WriteOptions};

/// Asset-like content: runs of text, repeated records and some noise.
fn content(n: usize, seed: u32) -> Vec<u8> {
    let mut s = seed.max(1);
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        s ^= s << 13;
        s ^= s >> 17;
        s ^= s << 5;
        match s % 4 {
            0 => out.extend_from_slice(
                b"[UNITINFO]\n{\n\tUnitName=ARMCOM;\n\tBuildCostEnergy=1500;\n}\n",
            ),
            1 => out.extend((0..64).map(|i| (s >> (i % 24)) as u8)),
            _ => out.extend(std::iter::repeat((s >> 8) as u8).take((s % 96) as usize)),
        }
    }
    out.truncate(n);
    out
}

fn tree(total: usize) -> Vec<Node> {
    let per = 256 * 1024;
    let files = total / per;
    let mut dirs = Vec::new();
    for d in 0..files.div_ceil(50) {
        let kids = (0..50.min(files - d * 50))
            .map(|f| {
                Node::file(
                    format!("file{f:03}.dat"),
                    content(per, (d * 50 + f + 1) as u32),
                )
            })
            .collect();
        dirs.push(Node::dir(format!("dir{d:02}"), kids));
    }
    dirs
}

fn mbps(bytes: u64, secs: f64) -> f64 {
    bytes as f64 / 1e6 / secs.max(1e-9)
}

fn main() {
    let mb: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(100);
    let t = tree(mb * 1_000_000);
    let limits = HpiLimits::default();
    println!(
        "synthetic tree: {mb} MB in 256 KiB files, {} threads",
        rayon::current_num_threads()
    );
    for (label, opts) in [
        ("v1 zlib key 0", WriteOptions::v1()),
        (
            "v1 lz77 key 0x7D",
            WriteOptions {
                method: Method::Lz77,
                key: 0x7D,
                ..WriteOptions::v1()
            },
        ),
        ("v2 zlib", WriteOptions::v2()),
    ] {
        let start = Instant::now();
        let data = hpi::write(&t, &opts).expect("write");
        let pack = start.elapsed().as_secs_f64();

        let start = Instant::now();
        let a = hpi::parse(&data, &limits).expect("parse");
        let list = start.elapsed().as_secs_f64();
        let total = a.total_size();

        let start = Instant::now();
        let mut n = 0u64;
        for (_, f) in a.files() {
            n += a.read(&data, f, &limits).expect("read").len() as u64;
        }
        let seq = start.elapsed().as_secs_f64();
        assert_eq!(n, total);

        let start = Instant::now();
        let files: Vec<_> = a.files().map(|(_, f)| *f).collect();
        let n: u64 = files
            .par_iter()
            .map(|f| a.read(&data, f, &limits).expect("read").len() as u64)
            .sum();
        let par = start.elapsed().as_secs_f64();
        assert_eq!(n, total);

        let start = Instant::now();
        let again =
            hpi::write(&a.to_tree(&data).expect("tree"), &WriteOptions::like(&a)).expect("repack");
        let repack = start.elapsed().as_secs_f64();
        assert!(again == data);

        println!(
            "{label:<18} archive {:>6.1} MB (ratio {:.2}) | pack {:>7.1} MB/s | list {} entries in {:.2} ms ({:.0} MB/s of members) | extract {:>6.1} MB/s, parallel {:>6.1} MB/s | repack unchanged {:>7.1} MB/s",
            data.len() as f64 / 1e6,
            total as f64 / data.len() as f64,
            mbps(total, pack),
            a.entries.len(),
            list * 1e3,
            mbps(total, list),
            mbps(total, seq),
            mbps(total, par),
            mbps(total, repack),
        );
    }
}
