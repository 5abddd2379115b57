//! The malformed-input corpus: GAF, TNT, COB, FNT and 3DO files broken in the ways untrusted
//! files break, each built from bytes laid out by hand (or from the crate's own sample GAF,
//! demo map and demo model, patched at documented header offsets). Shared by
//! `tests/malformed.rs` and
//! `examples/make_malformed.rs` (`scripts/make-malformed DIR`).
#![allow(dead_code)]

use tafs::formats::{gaf, tnt};

/// What the CLI must do with a case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expect {
    /// Exit non-zero; stderr names this structure and a byte offset (`0x…` or `offset N`).
    Reject(&'static str),
    /// Decode (the format allows it, e.g. shared blocks, clamped RLE counts, odd names);
    /// dump/unpack succeed and write only inside the target.
    Accept,
}

/// One corpus file.
pub struct Case {
    /// File name (ends in `.gaf` or `.tnt`).
    pub name: String,
    pub bytes: Vec<u8>,
    pub expect: Expect,
}

fn put16(b: &mut Vec<u8>, at: usize, v: u16) {
    if b.len() < at + 2 {
        b.resize(at + 2, 0);
    }
    b[at..at + 2].copy_from_slice(&v.to_le_bytes());
}

fn put32(b: &mut Vec<u8>, at: usize, v: u32) {
    if b.len() < at + 4 {
        b.resize(at + 4, 0);
    }
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

fn get32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Offsets of the hand-laid one-sequence, one-frame GAF below.
pub const SEQ: usize = 16;
pub const LIST: usize = 56;
pub const FRAME: usize = 64;
pub const DATA: usize = 88;

/// A one-sequence GAF with one frame: file header at 0 (version 0x00010100, 1 sequence),
/// sequence table at 12 → 16, sequence header at 16 (1 frame, loops, `name`), frame list at
/// 56 (→ 64, 3 ticks), frame header at 64 (w × h, origin 0,0, key 9, raw, data at 88),
/// `data` at 88.
pub fn one_frame(name: &[u8], w: u16, h: u16, compressed: u8, data: &[u8]) -> Vec<u8> {
    let mut b = Vec::new();
    put32(&mut b, 0, 0x0001_0100);
    put32(&mut b, 4, 1);
    put32(&mut b, 8, 0);
    put32(&mut b, 12, SEQ as u32);
    put16(&mut b, SEQ, 1);
    put16(&mut b, SEQ + 2, 1);
    put32(&mut b, SEQ + 4, 0);
    let n = name.len().min(32);
    b.resize(SEQ + 40, 0);
    b[SEQ + 8..SEQ + 8 + n].copy_from_slice(&name[..n]);
    put32(&mut b, LIST, FRAME as u32);
    put32(&mut b, LIST + 4, 3);
    frame_header(&mut b, FRAME, w, h, compressed, 0, DATA as u32);
    b.resize(DATA, 0);
    b.extend_from_slice(data);
    b
}

/// Writes a 24-byte frame header at `at` (origin 0,0, key 9).
pub fn frame_header(
    b: &mut Vec<u8>,
    at: usize,
    w: u16,
    h: u16,
    compressed: u8,
    layers: u8,
    data: u32,
) {
    put16(b, at, w);
    put16(b, at + 2, h);
    put16(b, at + 4, 0);
    put16(b, at + 6, 0);
    if b.len() < at + 24 {
        b.resize(at + 24, 0);
    }
    b[at + 8] = 9;
    b[at + 9] = compressed;
    b[at + 10] = layers;
    b[at + 11] = 0;
    put32(b, at + 12, 0);
    put32(b, at + 16, data);
    put32(b, at + 20, 0);
}

/// A GAF with one sequence per name, all showing one shared 2×1 raw frame: header, table at
/// 12, sequences (40 + 8 bytes each) after it, then the frame header and its 2 pixels.
pub fn named_sequences(names: &[&[u8]]) -> Vec<u8> {
    let mut b = Vec::new();
    put32(&mut b, 0, 0x0001_0100);
    put32(&mut b, 4, names.len() as u32);
    let first = 12 + 4 * names.len();
    let frame = first + 48 * names.len();
    for (i, name) in names.iter().enumerate() {
        let at = first + 48 * i;
        put32(&mut b, 12 + 4 * i, at as u32);
        put16(&mut b, at, 1);
        put16(&mut b, at + 2, 1);
        b.resize(at + 40, 0);
        let n = name.len().min(32);
        b[at + 8..at + 8 + n].copy_from_slice(&name[..n]);
        put32(&mut b, at + 40, frame as u32);
        put32(&mut b, at + 44, 2);
    }
    frame_header(&mut b, frame, 2, 1, 0, 0, (frame + 24) as u32);
    b.extend_from_slice(&[3, 4]);
    b
}

/// A valid 4×2 raw frame GAF named `name`.
pub fn raw_4x2(name: &[u8]) -> Vec<u8> {
    one_frame(name, 4, 2, 0, &[1, 2, 3, 4, 5, 6, 7, 8])
}

/// A one-frame GAF whose frame is a composite with the given layer table entries; the layer
/// table sits at 88, and a valid 2×2 raw leaf frame header at 88 + 4 × entries (pixels after it).
fn composite(name: &str, table: &[u32]) -> Vec<u8> {
    let mut b = one_frame(name.as_bytes(), 2, 2, 0, &[]);
    b[FRAME + 10] = table.len() as u8;
    for (i, p) in table.iter().enumerate() {
        put32(&mut b, DATA + 4 * i, *p);
    }
    b
}

fn gaf_cases() -> Vec<Case> {
    let mut v = Vec::new();
    let mut add = |name: &str, bytes: Vec<u8>, expect: Expect| {
        v.push(Case {
            name: format!("gaf-{name}.gaf"),
            bytes,
            expect,
        })
    };
    let sample = gaf::write(&tafs::sample::animated_gaf()).expect("sample GAF writes");
    let len = sample.len();
    // Truncations of a valid file: every block is reached by a pointer, so any cut before the
    // last pointed-to byte is a truncation of some structure.
    for (cut, what) in [
        (0, "file header"),
        (4, "file header"),
        (11, "file header"),
        (12, "sequence table"),
        (15, "sequence table"),
        (30, "sequence 0"),
        (len / 2, "gaf:"),
        (len - 1, "gaf:"),
    ] {
        add(
            &format!("trunc-{cut}"),
            sample[..cut].to_vec(),
            Expect::Reject(what),
        );
    }
    let ok = raw_4x2(b"ok");
    // Pointers past the end of the file.
    let mut b = ok.clone();
    put32(&mut b, 12, 0xFFFF_FF00);
    add("seqptr-past-eof", b, Expect::Reject("sequence 0 header"));
    let mut b = ok.clone();
    put32(&mut b, LIST, 0x7FFF_FFFF);
    add("frameptr-past-eof", b, Expect::Reject("frame header"));
    let mut b = ok.clone();
    put32(&mut b, FRAME + 16, 0xFFFF_FFF0);
    add("dataptr-past-eof", b, Expect::Reject("raw pixel data"));
    // Pointers into the file header. A sequence header read at 0: frame_count = 0x0100 (low
    // half of the version), so its frame list (256 × 8 bytes at 40) passes the 96-byte file.
    let mut b = ok.clone();
    put32(&mut b, 12, 0);
    add(
        "seqptr-into-header",
        b,
        Expect::Reject("sequence 0 frame list"),
    );
    // A frame header read at 0: width 0x0100, height 1, data offset = bytes 16..20 (the
    // sequence header's first word, 0x00010001) → past the end.
    let mut b = ok.clone();
    put32(&mut b, LIST, 0);
    add("frameptr-into-header", b, Expect::Reject("raw pixel data"));
    // Pixel data read from the header itself: 4×2 bytes at offset 0 (overlaps; allowed).
    let mut b = ok.clone();
    put32(&mut b, FRAME + 16, 0);
    add("data-in-header", b, Expect::Accept);
    // Overlapping blocks: the frame's pixels are its own header bytes (allowed: pointers only).
    let mut b = one_frame(b"overlap", 4, 2, 0, &[]);
    put32(&mut b, FRAME + 16, FRAME as u32);
    add("overlap-data-header", b, Expect::Accept);
    // Two sequences sharing one sequence header and frame.
    let mut b = ok.clone();
    put32(&mut b, 4, 2);
    // the table now needs 8 bytes at 12: the second entry overlaps the sequence header's first
    // word (frame_count 1 | loop 1 << 16 = 0x00010001) → past the end.
    add(
        "seqtable-overlaps-seq",
        b,
        Expect::Reject("sequence 1 header"),
    );
    // Frame counts: a sequence count of 2^32 − 1 needs a 16 GiB table.
    let mut b = ok.clone();
    put32(&mut b, 4, u32::MAX);
    add("seqcount-max", b, Expect::Reject("sequence table"));
    let mut b = ok.clone();
    put16(&mut b, SEQ, u16::MAX);
    add("framecount-max", b, Expect::Reject("sequence 0 frame list"));
    // 65535 sequences all pointing at the same header, each listing the same frame 65535 times
    // would be 4 G references: the frame list itself must exist, so build 8190 entries (64 KiB)
    // of one frame in one sequence and 4096 table entries to that sequence → 33 M references.
    let mut b = Vec::new();
    put32(&mut b, 0, 0x0001_0100);
    put32(&mut b, 4, 4096);
    let seq = 12 + 4 * 4096;
    for i in 0..4096 {
        put32(&mut b, 12 + 4 * i, seq as u32);
    }
    put16(&mut b, seq, 8190);
    put16(&mut b, seq + 2, 1);
    b.resize(seq + 40, 0);
    let frame = seq + 40 + 8 * 8190;
    for i in 0..8190 {
        put32(&mut b, seq + 40 + 8 * i, frame as u32);
        put32(&mut b, seq + 44 + 8 * i, 1);
    }
    frame_header(&mut b, frame, 1, 1, 0, 0, (frame + 24) as u32);
    b.push(1);
    add("reference-bomb", b, Expect::Reject("frame header"));
    // 65535 × 65535 frames (4 G pixels), raw and RLE, with a few bytes of data.
    add(
        "frame-65535x65535-raw",
        one_frame(b"huge", 65535, 65535, 0, &[0; 64]),
        Expect::Reject("frame header"),
    );
    add(
        "frame-65535x65535-rle",
        one_frame(b"huge", 65535, 65535, 1, &[0; 64]),
        Expect::Reject("frame header"),
    );
    // Layer cycles: a frame whose layer table lists itself; two frames listing each other.
    add(
        "layer-cycle-self",
        composite("self", &[FRAME as u32]),
        Expect::Reject("cycle"),
    );
    let mut b = composite("mutual", &[96]);
    frame_header(&mut b, 96, 2, 2, 0, 1, 120);
    put32(&mut b, 120, FRAME as u32);
    add("layer-cycle-mutual", b, Expect::Reject("cycle"));
    // Depth bomb: 200 composites each with one layer, the next.
    let mut b = composite("deep", &[96]);
    let mut at = 96;
    for _ in 0..200 {
        frame_header(&mut b, at, 2, 2, 0, 1, (at + 24) as u32);
        put32(&mut b, at + 24, (at + 28) as u32);
        at += 28;
    }
    frame_header(&mut b, at, 2, 2, 0, 0, (at + 24) as u32);
    b.extend_from_slice(&[1, 2, 3, 4]);
    add("layer-depth-bomb", b, Expect::Reject("nested deeper"));
    // Fan-out bomb: 255 layers, each the same composite of 255 layers of the same composite …
    // (255^4 ≈ 4 G leaf references from < 4 KiB).
    let mut b = composite("fanout", &[0; 255]);
    let levels = [1100usize, 2150, 3200];
    for i in 0..255 {
        put32(&mut b, DATA + 4 * i, levels[0] as u32);
    }
    for (k, &at) in levels.iter().enumerate() {
        let next = levels.get(k + 1).copied();
        match next {
            Some(n) => {
                frame_header(&mut b, at, 2, 2, 0, 255, (at + 24) as u32);
                for i in 0..255 {
                    put32(&mut b, at + 24 + 4 * i, n as u32);
                }
            }
            None => {
                frame_header(&mut b, at, 2, 2, 0, 0, (at + 24) as u32);
                b.extend_from_slice(&[1, 2, 3, 4]);
            }
        }
    }
    add("layer-fanout-bomb", b, Expect::Reject("over the limit"));
    // RLE rows: counts past width are clamped (documented), a byte_count past the end is a
    // truncation. Row = u16 byte_count + commands.
    // 4×1 frame, one row: copy 64 literal bytes (m = 63 << 2) → 60 past the width.
    let mut row = vec![64 + 1, 0, 63 << 2];
    row.extend(std::iter::repeat(5).take(64));
    add(
        "rle-literal-past-width",
        one_frame(b"rle", 4, 1, 1, &row),
        Expect::Accept,
    );
    // repeat 64 (m = 63 << 2 | 2) and skip 127 (m = 0xFF) on a 4×2 frame.
    add(
        "rle-repeat-skip-past-width",
        one_frame(b"rle", 4, 2, 1, &[2, 0, (63 << 2) | 2, 7, 1, 0, 0xFF]),
        Expect::Accept,
    );
    add(
        "rle-bytecount-past-end",
        one_frame(b"rle", 4, 1, 1, &[0xFF, 0xFF, 3, 1]),
        Expect::Reject("0x"),
    );
    // A literal command whose bytes pass the row's byte_count (rows hold exactly that many
    // bytes of commands).
    add(
        "rle-command-past-row",
        one_frame(b"rle", 4, 2, 1, &[1, 0, 3 << 2, 0, 0]),
        Expect::Reject("RLE row 0"),
    );
    // Names that must not become paths.
    for (tag, name) in [
        ("dotdot", b"../../../../tmp/escape".as_slice()),
        ("slash", b"/etc/passwd"),
        ("dot", b"."),
        ("dotdot-only", b".."),
        ("nul", b"a\0../garbage"),
        ("ff", b"\xff\xfe\xff"),
        ("empty", b""),
        ("backslash", b"..\\..\\x"),
    ] {
        add(&format!("name-{tag}"), raw_4x2(name), Expect::Accept);
    }
    // Sequences whose names differ only in case, plus `metadata.json` as a name.
    add(
        "name-case-duplicates",
        named_sequences(&[b"Fire", b"fIRE", b"metadata.json", b"fire_1"]),
        Expect::Accept,
    );
    // TA3D truecolor version.
    let mut b = ok.clone();
    put32(&mut b, 0, 0x0001_0101);
    add("truecolor", b, Expect::Reject("0x00010101"));
    // TA: Kingdoms truecolor frames (format byte 4/5): 4×2 words, short, and huge.
    add(
        "argb4444-ok",
        one_frame(b"tc", 4, 2, 4, &[0xA5; 16]),
        Expect::Accept,
    );
    add(
        "argb1555-short",
        one_frame(b"tc", 4, 2, 5, &[0xA5; 15]),
        Expect::Reject("truecolor pixel data"),
    );
    add(
        "argb1555-huge",
        one_frame(b"tc", u16::MAX, u16::MAX, 5, &[0; 16]),
        Expect::Reject("over the limit"),
    );
    v
}

/// Header field offsets of a 0x2000 map.
pub mod tnt_at {
    pub const WIDTH: usize = 0x04;
    pub const HEIGHT: usize = 0x08;
    pub const MAP: usize = 0x0C;
    pub const ATTR: usize = 0x10;
    pub const TILES: usize = 0x14;
    pub const TILE_COUNT: usize = 0x18;
    pub const FEATURE_COUNT: usize = 0x1C;
    pub const FEATURES: usize = 0x20;
    pub const MINIMAP: usize = 0x28;
}

fn tnt_cases() -> Vec<Case> {
    use tnt_at::*;
    let mut v = Vec::new();
    let mut add = |name: &str, bytes: Vec<u8>, expect: Expect| {
        v.push(Case {
            name: format!("tnt-{name}.tnt"),
            bytes,
            expect,
        })
    };
    let map = tnt::write(&tafs::sample::demo_map()).expect("demo map writes");
    let len = map.len();
    let minimap = get32(&map, MINIMAP) as usize;
    for (cut, what) in [
        (0, "64-byte header"),
        (63, "64-byte header"),
        (64, "tnt:"),
        (len / 2, "tnt:"),
        (minimap + 4, "minimap"),
        (len - 1, "minimap"),
    ] {
        add(
            &format!("trunc-{cut}"),
            map[..cut].to_vec(),
            Expect::Reject(what),
        );
    }
    let patch = |at: usize, val: u32| {
        let mut b = map.clone();
        put32(&mut b, at, val);
        b
    };
    // Dimensions whose products overflow u32 (and usize for the pixel size on 32-bit).
    add("dims-max", patch(WIDTH, u32::MAX), Expect::Reject("width"));
    let mut b = patch(WIDTH, 0x1_0000);
    put32(&mut b, HEIGHT, 0x1_0000);
    add("dims-product-2pow32", b, Expect::Reject("attribute cells"));
    let mut b = patch(WIDTH, 0xFFFF_FFFE);
    put32(&mut b, HEIGHT, 0xFFFF_FFFE);
    add("dims-product-2pow64", b, Expect::Reject("0x04"));
    add(
        "tilecount-max",
        patch(TILE_COUNT, u32::MAX),
        Expect::Reject("tile count"),
    );
    // 2^22 tiles × 1024 bytes = 2^32: the byte size overflows u32.
    add(
        "tilecount-2pow22",
        patch(TILE_COUNT, 1 << 22),
        Expect::Reject("tile"),
    );
    add(
        "featurecount-max",
        patch(FEATURE_COUNT, u32::MAX),
        Expect::Reject("feature count"),
    );
    add(
        "featurecount-fffa",
        patch(FEATURE_COUNT, 0xFFFA),
        Expect::Reject("feature table"),
    );
    // Minimap dimensions: 0xFFFFFFFF × 0xFFFFFFFF and 2^16 × 2^16.
    for (tag, w, h) in [("max", u32::MAX, u32::MAX), ("2pow32", 1 << 16, 1 << 16)] {
        let mut b = map.clone();
        put32(&mut b, minimap, w);
        put32(&mut b, minimap + 4, h);
        add(&format!("minimap-{tag}"), b, Expect::Reject("minimap"));
    }
    // Offsets past the end.
    for (tag, at, what) in [
        ("map", MAP, "tile grid"),
        ("attr", ATTR, "attribute grid"),
        ("tiles", TILES, "tile graphics"),
        ("features", FEATURES, "feature table"),
        ("minimap", MINIMAP, "minimap"),
    ] {
        add(
            &format!("{tag}-past-eof"),
            patch(at, 0xFFFF_FFF0),
            Expect::Reject(what),
        );
        add(
            &format!("{tag}-at-len"),
            patch(at, len as u32),
            Expect::Reject(what),
        );
    }
    // Offsets into the header / overlapping blocks: the blocks are followed by pointer; a block
    // read from the header or from another block is garbage but in bounds (allowed).
    add("map-in-header", patch(MAP, 0), Expect::Accept);
    let attr = get32(&map, ATTR);
    add("tiles-over-attr", patch(TILES, attr), Expect::Accept);
    // The minimap read at 0x10: its size words are the attribute and tile offsets, so its
    // pixels pass the end.
    add(
        "minimap-in-header",
        patch(MINIMAP, 0x10),
        Expect::Reject("minimap pixels"),
    );
    // Feature names with path characters (features.csv only holds them as text).
    let mut t = tafs::sample::demo_map();
    let names: [&[u8]; 5] = [b"../../etc/passwd", b"/abs", b"a\0b/../c", b"\xff\xfe", b""];
    t.features = names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let mut name = [0u8; 128];
            name[..n.len()].copy_from_slice(n);
            tnt::FeatureEntry {
                index: i as u32,
                name,
            }
        })
        .collect();
    add(
        "feature-names",
        tnt::write(&t).expect("writes"),
        Expect::Accept,
    );
    add("kingdoms", patch(0, 0x4000), Expect::Reject("0x4000"));
    add(
        "version-unknown",
        patch(0, 0xDEAD),
        Expect::Reject("0xdead"),
    );
    v
}

/// A small COB (`version` 4 or 6): 3 scripts (the second sharing the third's start), 2
/// pieces, 9 code words. Version 4 layout: code at 44, start table at 80, script-name offsets
/// at 92, piece-name offsets at 104, names at 112.
pub fn small_cob(version: u32) -> Vec<u8> {
    use tafs::formats::cob::{self, Cob};
    let mut c = Cob::new(version, vec!["base".into(), "flare".into()], 1);
    c.push_script("Create", &[0x1002_2000, 0x1002_1001, 0, 0x1006_5000]);
    c.push_script("Go", &[]);
    c.push_script("Stop", &[0x1000_6000, 1, 0x1002_1001, 0, 0x1006_5000]);
    if version == 6 {
        c.sounds = vec!["ARROW10".into()];
    }
    cob::write(&c).expect("sample COB writes")
}

fn cob_cases() -> Vec<Case> {
    let mut v = Vec::new();
    let mut add = |name: &str, bytes: Vec<u8>, expect: Expect| {
        v.push(Case {
            name: format!("cob-{name}.cob"),
            bytes,
            expect,
        })
    };
    let good = small_cob(4);
    let patch = |at: usize, val: u32| {
        let mut b = good.clone();
        put32(&mut b, at, val);
        b
    };
    add("good", good.clone(), Expect::Accept);
    add("v6-sounds", small_cob(6), Expect::Accept);
    add(
        "truncated-header",
        good[..20].to_vec(),
        Expect::Reject("header"),
    );
    add("empty", Vec::new(), Expect::Reject("header version"));
    add(
        "version-5",
        patch(0, 5),
        Expect::Reject("unknown version 5"),
    );
    add(
        "script-count-huge",
        patch(4, u32::MAX),
        Expect::Reject("header script count"),
    );
    add(
        "piece-count-huge",
        patch(8, 0x4000_0000),
        Expect::Reject("header piece count"),
    );
    add(
        "code-length-huge",
        patch(12, 0xFFFF_FFF0),
        Expect::Reject("header code length"),
    );
    add(
        "code-length-off-by-one",
        patch(12, 10),
        Expect::Reject("header script start table offset"),
    );
    add(
        "code-offset-moved",
        patch(0x24, 48),
        Expect::Reject("header code offset"),
    );
    add(
        "script-start-past-code",
        patch(80, 1000),
        Expect::Reject("script start 0"),
    );
    add(
        "name-offset-wrong",
        patch(92, 113),
        Expect::Reject("script 0 name offset"),
    );
    add(
        "name-offset-past-end",
        patch(104, u32::MAX),
        Expect::Reject("piece 0 name offset"),
    );
    add(
        "last-name-without-nul",
        good[..good.len() - 1].to_vec(),
        Expect::Reject("piece 1 name"),
    );
    let mut v6 = small_cob(6);
    put32(&mut v6, 0x30, u32::MAX);
    add(
        "v6-sound-count-huge",
        v6,
        Expect::Reject("header sound count"),
    );
    let mut trailing = good.clone();
    trailing.extend_from_slice(b"Build by a tool\0\xff\xfe");
    add("trailing-bytes", trailing, Expect::Accept);
    // Names that would be hostile as paths (`../`, `/`, control and high bytes): they are
    // only text in the view, whose file names are fixed.
    {
        use tafs::formats::cob::{self, Cob};
        let mut c = Cob::new(4, vec!["../../x".into(), "/etc/passwd".into()], 0);
        c.push_script("a\u{1}\u{ff}b", &[0x4275_696c, 0x1006_4000, 0xFFFF_FFFF]);
        c.push_script("", &[0x1006_4000]);
        add(
            "hostile-names-and-code",
            cob::write(&c).expect("writes"),
            Expect::Accept,
        );
    }
    add(
        "nothing",
        tafs::formats::cob::write(&tafs::formats::cob::Cob::new(4, Vec::new(), 0)).expect("writes"),
        Expect::Accept,
    );
    v
}

/// Bitmap fonts: header and table cut short, height 0 (rejected, naming the structure and
/// offset); offsets into the header, past the end, at a width-0 byte, records running past
/// the end or overlapping, and a shortened table (accepted: what decodes is shown).
fn fnt_cases() -> Vec<Case> {
    // height 3, glyph 'A' at 516: width 2, 6 bits → 1 byte
    let mut ok = vec![3, 0, 1, 0];
    ok.resize(516, 0);
    put16(&mut ok, 4 + 2 * 0x41, 516);
    ok.extend_from_slice(&[2, 0b1011_0100]);
    let patch = |f: &dyn Fn(&mut Vec<u8>)| {
        let mut b = ok.clone();
        f(&mut b);
        b
    };
    let case = |name: &str, bytes: Vec<u8>, expect| Case {
        name: format!("fnt-{name}.fnt"),
        bytes,
        expect,
    };
    vec![
        case("empty", Vec::new(), Expect::Reject("header")),
        case("header-short", vec![3, 0], Expect::Reject("header")),
        case(
            "height-zero",
            patch(&|b| b[0] = 0),
            Expect::Reject("header"),
        ),
        case(
            "table-short",
            ok[..300].to_vec(),
            Expect::Reject("offset table"),
        ),
        case("valid", ok.clone(), Expect::Accept),
        case(
            "offset-into-header",
            patch(&|b| put16(b, 4 + 2 * 0x42, 1)),
            Expect::Accept,
        ),
        case(
            "offset-past-end",
            patch(&|b| put16(b, 4 + 2 * 0x42, 0xFFFF)),
            Expect::Accept,
        ),
        case(
            "width-zero",
            patch(&|b| {
                b.push(0);
                put16(b, 4 + 2 * 0x42, 518);
            }),
            Expect::Accept,
        ),
        case("record-past-end", patch(&|b| b[516] = 255), Expect::Accept),
        case(
            "overlapping-records",
            patch(&|b| put16(b, 4 + 2 * 0x42, 517)),
            Expect::Accept,
        ),
        case(
            "every-entry-the-widest",
            patch(&|b| {
                b[0] = 255;
                b.truncate(516);
                b.push(255);
                b.resize(516 + 1 + (255usize * 255).div_ceil(8), 0xAA);
                for c in 0..256 {
                    put16(b, 4 + 2 * c, 516);
                }
            }),
            Expect::Accept,
        ),
        case(
            "short-table",
            vec![2, 0, 0, 0xFE, 8, 0, 8, 0, 1, 0xC0],
            Expect::Accept,
        ),
    ]
}

/// Palette lookup tables: every size but the two a table has, and a size of the other kind
/// (rejected, naming the table and offset 0); one table of each size (accepted).
fn paltable_cases() -> Vec<Case> {
    let case = |name: &str, ext: &str, len: usize, expect| Case {
        name: format!("table-{name}.{ext}"),
        bytes: (0..len).map(|i| (i % 253) as u8).collect(),
        expect,
    };
    let bad = || Expect::Reject("lookup table");
    vec![
        case("empty", "alp", 0, bad()),
        case("one-byte", "shd", 1, bad()),
        case("short", "shd", 8191, bad()),
        case("long", "lht", 8193, bad()),
        case("alp-short", "alp", 65535, bad()),
        case("alp-long", "alp", 65537, bad()),
        case("shd-size-as-alp", "alp", 8192, bad()),
        case("alp-size-as-lht", "lht", 65536, bad()),
        case("valid", "alp", 65536, Expect::Accept),
        case("valid", "shd", 8192, Expect::Accept),
    ]
}

/// The demo model with what editors drop: a vertex of `turret` no face uses and a
/// one-point piece `flare` under it (written in a fresh layout by the writer).
pub fn model_with_unused_vertices() -> Vec<u8> {
    use tafs::formats::o3do;
    let mut m = o3do::parse(
        &tafs::sample::demo_model_3do(),
        &o3do::ModelLimits::default(),
    )
    .expect("demo model parses");
    let t = m.pieces[1].clone();
    m.pieces[1].vertices.push([0, 6 << 16, 0]);
    m.pieces.push(o3do::Piece {
        name: "flare".into(),
        parent: Some(1),
        depth: 2,
        origin: [0, 2 << 16, 0],
        vertices: vec![[0, 0, 0]],
        primitives: Vec::new(),
        ..t
    });
    o3do::write(&m, None).expect("model writes")
}

/// 3DO models (object headers of 52 bytes at the offsets kbot's 3do.md gives: version 0,
/// vertex count 4, primitive count 8, name 28, vertex array 36, primitive array 40, sibling
/// 44, child 48; primitives of 32 bytes, index array at 12), patched from the demo model.
/// Accepted ones go through the writer (`tafs 3do roundtrip`).
fn o3do_cases() -> Vec<Case> {
    let mut v = Vec::new();
    let mut add = |name: &str, bytes: Vec<u8>, expect: Expect| {
        v.push(Case {
            name: format!("3do_{name}.3do"),
            bytes,
            expect,
        })
    };
    let demo = tafs::sample::demo_model_3do();
    add("ok_demo", demo.clone(), Expect::Accept);
    add(
        "ok_unused_vertices",
        model_with_unused_vertices(),
        Expect::Accept,
    );
    add(
        "truncated_header",
        demo[..40].to_vec(),
        Expect::Reject("object header #0"),
    );
    let mut b = demo.clone();
    put32(&mut b, 0, 2);
    add("bad_version", b, Expect::Reject("object header #0"));
    let mut b = demo.clone();
    put32(&mut b, 4, u32::MAX);
    add(
        "negative_vertex_count",
        b,
        Expect::Reject("object header #0"),
    );
    let mut b = demo.clone();
    put32(&mut b, 36, 0x7fff_0000);
    add("vertex_array_past_end", b, Expect::Reject("vertex array"));
    let mut b = demo.clone();
    put32(&mut b, 40, 0x7fff_0000);
    add(
        "primitive_array_past_end",
        b,
        Expect::Reject("primitive array"),
    );
    let mut b = demo.clone();
    let po = get32(&b, 40) as usize;
    let io = get32(&b, po + 12) as usize;
    put16(&mut b, io, 999);
    add("index_past_vertices", b, Expect::Reject("primitive #0"));
    let mut b = demo.clone();
    put32(&mut b, 28, 0x7fff_0000);
    add(
        "name_past_end",
        b,
        Expect::Reject("name of object header #0"),
    );
    v
}

/// Every case, GAF first.
pub fn cases() -> Vec<Case> {
    let mut v = gaf_cases();
    v.extend(tnt_cases());
    v.extend(cob_cases());
    v.extend(fnt_cases());
    v.extend(paltable_cases());
    v.extend(o3do_cases());
    v
}

/// Writes every case into `dir` (created) and returns them.
pub fn write_to(dir: &std::path::Path) -> std::io::Result<Vec<Case>> {
    std::fs::create_dir_all(dir)?;
    let cases = cases();
    for c in &cases {
        std::fs::write(dir.join(&c.name), &c.bytes)?;
    }
    Ok(cases)
}
