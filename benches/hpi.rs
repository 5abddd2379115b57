//! HPI benchmark (not a test): `cargo bench --bench hpi [-- MB] [--codec]`.
//!
//! Archives by range: for each corpus archive (`../shared/corpus/archives`, when present) and
//! a synthetic archive of about MB megabytes (default 60) that `tafs hpi pack` makes from a
//! folder of random and compressible files (version 1, key 0x7D, so the directory is
//! ciphered), prints the archive's size, the bytes `hpi list` reads (counted in process
//! through a counting [`Source`]), and wall time and peak RSS of the real `tafs hpi list` and
//! `tafs hpi extract` processes; for the synthetic archive also of `tafs hpi pack` and of a
//! minimal Python reader of the same directory (with the interpreter's own start-up time).
//!
//! `--codec` adds the in-memory codec throughput (pack, list, extract, repack MB/s) on a
//! synthetic tree in each variant.

use rayon::prelude::*;
use std::cell::Cell;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tafs::formats::hpi::{self, HpiLimits, Method, Node, Source, WriteOptions};
use tafs::view::archive::FileSource;

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

/// Incompressible bytes (xorshift).
fn noise(n: usize, seed: u64) -> Vec<u8> {
    let mut s = seed | 1;
    let mut out = Vec::with_capacity(n + 8);
    while out.len() < n {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        out.extend_from_slice(&s.to_le_bytes());
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

/// A folder of about `mb` MB once packed: 512 KiB files, alternately random and
/// asset-like, in folders of 40, plus two 8 MiB random members (128 chunks each).
fn make_folder(dir: &Path, mb: usize) -> u64 {
    let mut total = 0u64;
    let big = 2 * 8 * 1024 * 1024;
    let per = 512 * 1024;
    // a random file stores ~1:1, an asset-like one ~1:12
    let files = ((mb * 1_000_000).saturating_sub(big) as f64 / (per as f64 * 0.54)) as usize;
    for i in 0..files {
        let sub = dir.join(format!("dir{:02}", i / 40));
        std::fs::create_dir_all(&sub).expect("mkdir");
        let bytes = if i % 2 == 0 {
            noise(per, i as u64 + 7)
        } else {
            content(per, i as u32 + 1)
        };
        total += bytes.len() as u64;
        std::fs::write(sub.join(format!("file{i:04}.dat")), bytes).expect("write");
    }
    for i in 0..2 {
        let bytes = noise(8 * 1024 * 1024, 1000 + i);
        total += bytes.len() as u64;
        std::fs::write(dir.join(format!("big{i}.dat")), bytes).expect("write");
    }
    total
}

/// Wall time and peak RSS (KiB) of running `argv`. The peak comes from `/usr/bin/time`
/// (whose own child starts from a small copy of it, so that this large process's memory is
/// not counted, as it would be for a process spawned from it directly).
fn run(argv: &[&OsStr]) -> (Duration, i64) {
    let rss_file = std::env::temp_dir().join(format!("tafs-bench-rss-{}", std::process::id()));
    let start = Instant::now();
    let status = Command::new("/usr/bin/time")
        .args(["-f", "%M", "-o"])
        .arg(&rss_file)
        .args(argv)
        .stdout(Stdio::null())
        .status()
        .expect("/usr/bin/time");
    let took = start.elapsed();
    assert!(status.success(), "{argv:?} failed");
    let rss = std::fs::read_to_string(&rss_file)
        .ok()
        .and_then(|s| s.trim().lines().last()?.trim().parse().ok())
        .unwrap_or(0);
    let _ = std::fs::remove_file(&rss_file);
    (took, rss)
}

/// Best wall time and largest peak RSS of `n` runs (`before` runs first each time).
fn best(n: usize, argv: &[&OsStr], before: impl Fn()) -> (Duration, i64) {
    (0..n)
        .map(|_| {
            before();
            run(argv)
        })
        .fold((Duration::MAX, 0), |(t, m), (t2, m2)| {
            (t.min(t2), m.max(m2))
        })
}

/// A [`Source`] that counts the bytes read through it.
struct Counting<'a> {
    inner: &'a dyn Source,
    read: Cell<u64>,
    calls: Cell<u64>,
}

impl Source for Counting<'_> {
    fn len(&self) -> u64 {
        self.inner.len()
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
        self.read.set(self.read.get() + buf.len() as u64);
        self.calls.set(self.calls.get() + 1);
        self.inner.read_at(offset, buf)
    }
}

/// A minimal version 1 directory walk (the work `hpi list` does: header, deciphered
/// directory, each compressed member's chunk size table), one line per file.
const PY_LIST: &str = r#"
import sys, struct
f = open(sys.argv[1], 'rb')
h = f.read(20)
dir_end, key, start = struct.unpack_from('<III', h, 8)
f.seek(0)
d = bytearray(f.read(dir_end))
k = ((key << 2) | (key >> 6)) & 255 if key else 0
if key:
    for i in range(20, dir_end):
        d[i] ^= k ^ (i & 255)
out = []
def walk(node, pre):
    n, lst = struct.unpack_from('<II', d, node)
    for e in range(n):
        no, do, fl = struct.unpack_from('<IIB', d, lst + 9 * e)
        name = d[no:d.index(0, no)].decode('latin1')
        if fl:
            walk(do, pre + name + '/')
            continue
        off, size, c = struct.unpack_from('<IIB', d, do)
        stored = size
        if c:
            nch = (size + 65535) // 65536
            f.seek(off)
            t = bytearray(f.read(4 * nch))
            if key:
                for i in range(len(t)):
                    t[i] ^= k ^ ((off + i) & 255)
            stored = 4 * nch + sum(struct.unpack('<%dI' % nch, t))
        out.append('%10d %10d %s' % (size, stored, pre + name))
walk(start, '')
sys.stdout.write('\n'.join(out) + '\n')
"#;

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn mib(kib: i64) -> f64 {
    kib as f64 / 1024.0
}

/// One line of the by-range table for the archive at `path`.
fn by_range(bin: &Path, path: &Path, label: &str, scratch: &Path) {
    let file = FileSource::open(path).expect("open archive");
    let counting = Counting {
        inner: &file,
        read: Cell::new(0),
        calls: Cell::new(0),
    };
    let a = hpi::parse_from(&counting, &HpiLimits::default()).expect("parse");
    let bin = bin.as_os_str();
    let (list_t, list_rss) = best(
        5,
        &[bin, "hpi".as_ref(), "list".as_ref(), path.as_ref()],
        || {},
    );
    let out = scratch.join("out");
    let extract: [&OsStr; 6] = [
        bin,
        "hpi".as_ref(),
        "extract".as_ref(),
        path.as_ref(),
        "-t".as_ref(),
        out.as_ref(),
    ];
    let (ext_t, ext_rss) = best(3, &extract, || {
        let _ = std::fs::remove_dir_all(&out);
    });
    let _ = std::fs::remove_dir_all(&out);
    println!(
        "{label:<24} {:>9.2} MB {:>5} files | list reads {:>9} B in {:>4} reads, {:>7.2} ms, peak {:>5.1} MiB | extract {:>8.1} MB in {:>8.1} ms, peak {:>5.1} MiB",
        file.len() as f64 / 1e6,
        a.files().count(),
        counting.read.get(),
        counting.calls.get(),
        ms(list_t),
        mib(list_rss),
        a.total_size() as f64 / 1e6,
        ms(ext_t),
        mib(ext_rss),
    );
}

fn codec(mb: usize) {
    let t = tree(mb * 1_000_000);
    let limits = HpiLimits::default();
    let mbps = |bytes: u64, secs: f64| bytes as f64 / 1e6 / secs.max(1e-9);
    println!(
        "\nin-memory codec: {mb} MB in 256 KiB files, {} threads",
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
            "{label:<18} archive {:>6.1} MB | pack {:>7.1} MB/s | list {:.2} ms | extract (parallel) {:>6.1} MB/s | repack unchanged {:>7.1} MB/s",
            data.len() as f64 / 1e6,
            mbps(total, pack),
            list * 1e3,
            mbps(total, par),
            mbps(total, repack),
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mb: usize = args.iter().find_map(|a| a.parse().ok()).unwrap_or(60);
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_tafs"));
    let scratch = tempfile::tempdir().expect("temp dir");
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("archives by range ({cores} cores); times are the best of 5 (list) or 3 (extract) runs of the tafs binary, peak = its max RSS (/usr/bin/time)");

    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus/archives");
    if let Ok(rd) = std::fs::read_dir(&corpus) {
        let mut paths: Vec<PathBuf> = rd.filter_map(|e| Some(e.ok()?.path())).collect();
        paths.sort();
        for p in paths {
            let name = p
                .file_name()
                .map_or(String::new(), |n| n.to_string_lossy().into());
            by_range(&bin, &p, &name, scratch.path());
        }
    }

    let folder = scratch.path().join("folder");
    let total = make_folder(&folder, mb);
    let archive = scratch.path().join("synthetic.hpi");
    let (pack_t, pack_rss) = run(&[
        bin.as_ref(),
        "hpi".as_ref(),
        "pack".as_ref(),
        folder.as_ref(),
        "-t".as_ref(),
        archive.as_ref(),
        "--key".as_ref(),
        "0x7D".as_ref(),
    ]);
    std::fs::remove_dir_all(&folder).expect("rm folder");
    println!(
        "synthetic: {:.1} MB of files packed (v1 zlib, key 0x7D) in {:.0} ms, peak {:.1} MiB",
        total as f64 / 1e6,
        ms(pack_t),
        mib(pack_rss)
    );
    by_range(&bin, &archive, "synthetic.hpi", scratch.path());
    let (start_t, start_rss) = best(5, &[bin.as_ref(), "--version".as_ref()], || {});
    println!(
        "tafs process start alone (tafs --version): {:.2} ms, peak {:.1} MiB",
        ms(start_t),
        mib(start_rss)
    );
    if Command::new("python3")
        .arg("-c")
        .arg("pass")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
    {
        let py: &OsStr = "python3".as_ref();
        let (start_t, _) = best(
            5,
            &[py, "-S".as_ref(), "-c".as_ref(), "pass".as_ref()],
            || {},
        );
        let (py_t, py_rss) = best(
            5,
            &[
                py,
                "-S".as_ref(),
                "-c".as_ref(),
                PY_LIST.as_ref(),
                archive.as_ref(),
            ],
            || {},
        );
        println!(
            "minimal python3 directory walk of synthetic.hpi: {:.2} ms (interpreter start alone {:.2} ms), peak {:.1} MiB",
            ms(py_t),
            ms(start_t),
            mib(py_rss)
        );
    }
    if args.iter().any(|a| a == "--codec") {
        codec(mb);
    }
}
