//! Fixtures for `scripts/bench-writeback` (a benchmark, not a test):
//!
//! * `gaf OUT BYTES [raw]`: a synthetic GAF of about BYTES bytes, 128×128 noisy frames in
//!   sequences of 8 (RLE with transparent borders; `raw`: every frame raw, like textures/*.gaf);
//! * `edit PNG OUT VALUE`: PNG (indexed, as the mount writes it) with its first opaque pixel
//!   set to palette index VALUE, written to OUT (a one-pixel edit that differs each run).

use tafs::formats::gaf::{self, Content, Frame, FrameEntry, Gaf, Pixels, Sequence};
use tafs::formats::palette::Palette;
use tafs::view::image::{decode_png, write_indexed_png, PngPixels};

const KEY: u8 = 9;
const SIDE: u16 = 128;

fn synthetic(bytes: usize, raw: bool) -> Gaf {
    let mut seed = 0x2545_F491u32;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        seed
    };
    let per_frame = usize::from(SIDE) * usize::from(SIDE);
    let frames = bytes.div_ceil(per_frame).max(1);
    let mut sequences = Vec::new();
    for s in 0..frames.div_ceil(8) {
        let mut entries = Vec::new();
        for _ in 0..8.min(frames - s * 8) {
            let mut indices = Vec::with_capacity(per_frame);
            let mut opaque = Vec::with_capacity(per_frame);
            for y in 0..SIDE {
                for x in 0..SIDE {
                    let edge = x < 4 || y < 4 || x >= SIDE - 4 || y >= SIDE - 4;
                    if edge && !raw {
                        indices.push(KEY);
                        opaque.push(false);
                    } else {
                        // noise, so that RLE does not shrink it much; never the key
                        let v = 0x20 + (next() % 0xC0) as u8;
                        indices.push(v);
                        opaque.push(true);
                    }
                }
            }
            entries.push(FrameEntry {
                duration: 2,
                frame: Frame {
                    width: SIDE,
                    height: SIDE,
                    origin_x: (SIDE / 2) as i16,
                    origin_y: (SIDE / 2) as i16,
                    key: KEY,
                    compressed: u8::from(!raw),
                    blend: 0,
                    word12: 0,
                    word20: 0,
                    content: Content::Pixels(Pixels {
                        indices,
                        opaque,
                        payload: None::<tafs::formats::gaf::Payload>,
                    }),
                },
            });
        }
        sequences.push(Sequence {
            name: Sequence::name_buffer(format!("seq{s:04}").as_bytes()).expect("short name"),
            loop_word: 1,
            word4: 0,
            frames: entries,
        });
    }
    Gaf {
        version: gaf::VERSION_STANDARD,
        header_word8: 0,
        sequences,
        trailing: vec![],
        warnings: vec![],
        layout: None,
    }
}

fn edit(png: &str, out: &str, value: u8) {
    let d = decode_png(&std::fs::read(png).expect("read PNG")).expect("decode PNG");
    let PngPixels::Indexed {
        mut indices, trns, ..
    } = d.pixels
    else {
        panic!("{png}: not an indexed PNG")
    };
    let transparent = trns.iter().position(|a| *a == 0).map(|i| i as u8);
    let pos = indices
        .iter()
        .position(|i| Some(*i) != transparent)
        .expect("an opaque pixel");
    indices[pos] = value;
    let mut bytes = Vec::new();
    write_indexed_png(
        &mut bytes,
        d.width,
        d.height,
        &indices,
        &Palette::ta(),
        transparent,
    )
    .expect("encode PNG");
    std::fs::write(out, bytes).expect("write PNG");
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["gaf", out, size, rest @ ..] => {
            let size: usize = size.parse().expect("BYTES");
            let g = synthetic(size, rest.first() == Some(&"raw"));
            let bytes = gaf::write(&g).expect("synthetic GAF writes");
            std::fs::write(out, &bytes).expect("write GAF");
        }
        ["edit", png, out, value] => edit(png, out, value.parse().expect("VALUE 0..255")),
        _ => eprintln!("usage: writeback gaf OUT BYTES [raw] | edit PNG OUT VALUE"),
    }
}
