//! Mutated PCX and 3DO inputs (corpus files and fixtures with bytes flipped, words set to
//! extreme values, tails cut) through the readers and views, with the properties the fuzz
//! targets `pcx_parse` and `o3do_parse` assert: an error or a result, never a panic; every
//! PCX that parses rewrites identically and survives the view round trip; every 3DO that
//! parses rewrites over itself identically, writes a fresh layout that reads back, and
//! builds from its own view without a panic.

mod common;

use tafs::formats::o3do::{self, ModelLimits};
use tafs::formats::palette::Palette;
use tafs::formats::pcx::{self, Pcx, PcxKind};
use tafs::formats::Limits;
use tafs::view::model3d::{self, Textures};
use tafs::view::MemFileSet;

/// A small deterministic generator (xorshift64*).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn mutate(rng: &mut Rng, src: &[u8]) -> Vec<u8> {
    let mut v = src.to_vec();
    for _ in 0..1 + rng.below(4) {
        if v.is_empty() {
            break;
        }
        let at = rng.below(v.len());
        match rng.below(4) {
            0 => v[at] ^= 1 << rng.below(8),
            1 => {
                let w: [u8; 4] = match rng.below(4) {
                    0 => [0xff; 4],
                    1 => [0; 4],
                    2 => 0x7fff_ffffu32.to_le_bytes(),
                    _ => (rng.below(src.len() + 64) as u32).to_le_bytes(),
                };
                for (k, b) in w.iter().enumerate() {
                    if let Some(x) = v.get_mut(at + k) {
                        *x = *b;
                    }
                }
            }
            2 => v.truncate(at),
            _ => v[at] = rng.next() as u8,
        }
    }
    v
}

fn inputs(exts: &[&str]) -> Vec<Vec<u8>> {
    common::corpus()
        .map(|c| common::files_with_ext(&c, exts))
        .unwrap_or_default()
        .iter()
        .map(|p| std::fs::read(p).unwrap())
        .collect()
}

#[test]
fn mutated_pcx_files_never_panic_and_rewrite_identically() {
    let lim = Limits {
        max_frame_pixels: 1 << 20,
        ..Limits::default()
    };
    let mut seeds = inputs(&[".pcx"]);
    seeds.push(
        pcx::write(&Pcx::new(
            PcxKind::Indexed8,
            9,
            4,
            (0..36).map(|i| (i * 29) as u8).collect(),
            Some(Palette::ta()),
        ))
        .unwrap(),
    );
    seeds.push(pcx::write(&Pcx::new(PcxKind::Rgb24, 3, 3, vec![0xC3; 27], None)).unwrap());
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut parsed, mut refused) = (0, 0);
    for round in 0..3000 {
        let seed = &seeds[round % seeds.len()];
        let data = mutate(&mut rng, seed);
        let Ok(p) = pcx::parse(&data, &lim) else {
            refused += 1;
            continue;
        };
        parsed += 1;
        assert_eq!(
            pcx::write_like(&p, &data, &lim).unwrap(),
            data,
            "round {round}"
        );
        assert_eq!(pcx::parse(&pcx::write(&p).unwrap(), &lim).unwrap(), p);
        let fs = MemFileSet {
            files: tafs::view::pcx::files(&data, &lim)
                .unwrap()
                .into_iter()
                .collect(),
        };
        assert_eq!(
            tafs::view::pcx::build(&fs, None, &lim).unwrap(),
            data,
            "round {round}"
        );
    }
    assert!(
        parsed > 100 && refused > 100,
        "parsed {parsed}, refused {refused}"
    );
}

#[test]
fn mutated_3do_files_never_panic() {
    let lim = ModelLimits::default();
    let mut seeds = inputs(&[".3do"]);
    {
        // A one-piece model: header, name, 3 vertices, one triangle.
        let mut v = Vec::new();
        for w in [1i32, 3, 1, 0, 0, 0, 0, 52, 0, 56, 100, 0, 0] {
            v.extend_from_slice(&w.to_le_bytes());
        }
        v.extend_from_slice(b"abc\0");
        for w in [0i32, 0, 0, 65536, 0, 0, 0, 65536, 0] {
            v.extend_from_slice(&w.to_le_bytes());
        }
        v.extend_from_slice(&[0, 0, 1, 0, 2, 0, 0, 0]);
        for w in [3i32, 3, 0, 92, 0, 0, 0, 1] {
            v.extend_from_slice(&w.to_le_bytes());
        }
        assert!(o3do::parse(&v, &lim).is_ok());
        seeds.push(v);
    }
    let mut rng = Rng(0x1234_5678_9abc_def1);
    let (mut parsed, mut refused) = (0, 0);
    for round in 0..3000 {
        let data = mutate(&mut rng, &seeds[round % seeds.len()]);
        match o3do::parse(&data, &lim) {
            Ok(m) => {
                parsed += 1;
                assert!(!m.pieces.is_empty());
                model3d::files(&data, &Textures::new(), &Palette::ta(), &lim).unwrap();
                // the writer: over itself identical, a fresh layout that reads back, and a
                // build from its own view that never panics
                assert!(
                    o3do::write(&m, Some(&data)).unwrap() == data,
                    "round {round}"
                );
                let fresh = o3do::write(&m, None).unwrap();
                let back = o3do::parse(&fresh, &lim).unwrap();
                assert_eq!(back.pieces.len(), m.pieces.len());
                let v = model3d::open(&data, &Textures::new(), &Palette::ta(), &lim).unwrap();
                let files = tafs::view::MemFileSet::from_view(&v).unwrap();
                let _ = model3d::build(&files, Some(&data), None, &lim);
            }
            Err(e) => {
                refused += 1;
                assert!(e.to_string().contains("offset 0x"), "{e}");
            }
        }
    }
    assert!(
        parsed > 100 && refused > 100,
        "parsed {parsed}, refused {refused}"
    );
}
