//! Codec throughput (a benchmark, not a test): `cargo bench --bench codecs`.
//! Prints MB/s of decoded pixels for RLE row decoding and for whole-file GAF decoding, and
//! for the PNG encoding of the dump view.

use std::time::Instant;
use tafs::formats::gaf::{self, rle, Content, Frame, FrameEntry, Gaf, Pixels, Sequence};
use tafs::formats::Limits;
use tafs::view::{gaf::GafView, View, ViewOptions};

fn synthetic(frames: usize, w: u16, h: u16, compressed: bool) -> Gaf {
    let n = usize::from(w) * usize::from(h);
    let mut seed = 0x1234_5678u32;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        seed
    };
    let frames = (0..frames)
        .map(|_| {
            // sprite-like content: transparent borders, runs and noise
            let mut indices = vec![9u8; n];
            let mut opaque = vec![false; n];
            for y in 0..usize::from(h) {
                for x in 0..usize::from(w) {
                    let dx = x as i32 - i32::from(w) / 2;
                    let dy = y as i32 - i32::from(h) / 2;
                    if dx * dx + dy * dy < i32::from(w) * i32::from(w) / 5 {
                        let i = y * usize::from(w) + x;
                        opaque[i] = true;
                        indices[i] = if next() % 4 == 0 {
                            (next() % 256) as u8
                        } else {
                            0xD0 + (x / 8) as u8
                        };
                    }
                }
            }
            FrameEntry {
                duration: 2,
                frame: Frame {
                    width: w,
                    height: h,
                    origin_x: 0,
                    origin_y: 0,
                    key: 9,
                    compressed: u8::from(compressed),
                    blend: 0,
                    word12: 0,
                    word20: 0,
                    content: Content::Pixels(Pixels {
                        indices,
                        opaque,
                        payload: None,
                    }),
                },
            }
        })
        .collect();
    Gaf {
        version: gaf::VERSION_STANDARD,
        header_word8: 0,
        sequences: vec![Sequence {
            name: Sequence::name_buffer(b"bench").unwrap(),
            loop_word: 1,
            word4: 0,
            frames,
        }],
        trailing: vec![],
        warnings: vec![],
        layout: None,
    }
}

fn time<F: FnMut()>(mut f: F) -> f64 {
    let mut best = f64::MAX;
    for _ in 0..5 {
        let t = Instant::now();
        f();
        best = best.min(t.elapsed().as_secs_f64());
    }
    best
}

fn main() {
    for (label, compressed) in [("RLE", true), ("raw", false)] {
        let g = synthetic(200, 128, 128, compressed);
        let bytes = gaf::write(&g).unwrap();
        let pixels = 200.0 * 128.0 * 128.0;
        let s = time(|| {
            gaf::parse(&bytes, &Limits::default()).unwrap();
        });
        println!(
            "{label:>4} full-file decode: {:8.1} MB/s of pixels ({} KiB file)",
            pixels / s / 1e6,
            bytes.len() / 1024
        );
        if compressed {
            let parsed = gaf::parse(&bytes, &Limits::default()).unwrap();
            let rows: Vec<(Vec<u8>, usize)> = parsed.sequences[0]
                .frames
                .iter()
                .map(|f| {
                    (
                        f.frame.pixels().unwrap().payload.as_ref().unwrap().to_vec(),
                        128,
                    )
                })
                .collect();
            let mut idx = [0u8; 128];
            let mut opq = [false; 128];
            let s = time(|| {
                for (p, w) in &rows {
                    let mut pos = 0;
                    while pos + 2 <= p.len() {
                        let n = usize::from(u16::from_le_bytes([p[pos], p[pos + 1]]));
                        rle::decode_row(&p[pos + 2..pos + 2 + n], &mut idx[..*w], &mut opq[..*w])
                            .unwrap();
                        pos += 2 + n;
                    }
                }
            });
            println!(
                " RLE row decode:       {:8.1} MB/s of pixels",
                pixels / s / 1e6
            );
            let px = parsed.sequences[0].frames[0]
                .frame
                .pixels()
                .unwrap()
                .clone();
            let s = time(|| {
                for _ in 0..200 {
                    rle::encode(128, 128, &px.indices, &px.opaque).unwrap();
                }
            });
            println!(
                " RLE encode:           {:8.1} MB/s of pixels",
                pixels / s / 1e6
            );
        }
        let v = GafView::from_gaf(
            gaf::parse(&bytes, &Limits::default()).unwrap(),
            &ViewOptions::default(),
        )
        .unwrap();
        let s = time(|| {
            for i in 0..200 {
                v.render_vec(&format!("bench/{i}.png")).unwrap();
            }
        });
        println!(
            "{label:>4} frame PNG render:  {:8.1} MB/s of pixels",
            pixels / s / 1e6
        );
    }
}
