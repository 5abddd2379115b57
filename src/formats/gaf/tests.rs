//! Unit tests over hand-assembled files: the expected pixels come from the format's rules,
//! not from the code under test.

use super::*;
use proptest::prelude::*;

/// Places `bytes` at `at` in `buf`, growing it as needed.
fn put(buf: &mut Vec<u8>, at: usize, bytes: &[u8]) {
    if buf.len() < at + bytes.len() {
        buf.resize(at + bytes.len(), 0);
    }
    buf[at..at + bytes.len()].copy_from_slice(bytes);
}

fn le32(v: u32) -> [u8; 4] {
    v.to_le_bytes()
}

/// A frame header: size `(w, h)`, origin `(ox, oy)`, the key colour, compression, layer count,
/// blend flag and data offset.
fn frame_header(
    (w, h): (u16, u16),
    (ox, oy): (i16, i16),
    key: u8,
    comp: u8,
    layers: u8,
    blend: u8,
    data: u32,
) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(&w.to_le_bytes());
    v.extend_from_slice(&h.to_le_bytes());
    v.extend_from_slice(&ox.to_le_bytes());
    v.extend_from_slice(&oy.to_le_bytes());
    v.extend_from_slice(&[key, comp, layers, blend]);
    v.extend_from_slice(&le32(0xAABBCCDD)); // +12 scratch
    v.extend_from_slice(&le32(data));
    v.extend_from_slice(&le32(7)); // +20
    v
}

fn seq_header(frames: &[(u32, u32)], name: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(&(frames.len() as u16).to_le_bytes());
    v.extend_from_slice(&1u16.to_le_bytes());
    v.extend_from_slice(&le32(0x1234));
    let mut n = [0u8; 32];
    n[..name.len()].copy_from_slice(name);
    v.extend_from_slice(&n);
    for (ptr, dur) in frames {
        v.extend_from_slice(&le32(*ptr));
        v.extend_from_slice(&le32(*dur));
    }
    v
}

/// One sequence with one RLE frame 4 wide, 3 high, key 9:
/// row 0: skip 1, repeat 9 ×2 (key, stays opaque), literal [0]   → . 9 9 0
/// row 1: empty (byte count 0)                                   → . . . .
/// row 2: literal [5] only: short row, padded                    → 5 . . .
fn rle_fixture() -> Vec<u8> {
    let mut f = Vec::new();
    put(&mut f, 0, &le32(VERSION_STANDARD));
    put(&mut f, 4, &le32(1));
    put(&mut f, 12, &le32(16));
    put(&mut f, 16, &seq_header(&[(64, 0)], b"boom"));
    put(&mut f, 64, &frame_header((4, 3), (2, 1), 9, 1, 0, 0, 88));
    let rows: Vec<u8> = vec![
        5,
        0,
        0b11,
        (1 << 2) | 2,
        9,
        0,
        0, // row 0: 5 bytes
        0,
        0, // row 1
        2,
        0,
        0,
        5, // row 2
    ];
    put(&mut f, 88, &rows);
    f
}

#[test]
fn rle_follows_the_command_table() {
    let g = parse(&rle_fixture(), &Limits::default()).unwrap();
    let f = &g.sequences[0].frames[0];
    assert_eq!(f.duration, 0, "a stored 0 duration is kept");
    let px = f.frame.pixels().unwrap();
    let t = false;
    let o = true;
    assert_eq!(px.opaque, [t, o, o, o, t, t, t, t, o, t, t, t]);
    assert_eq!(px.indices[1..4], [9, 9, 0]);
    assert_eq!(px.indices[8], 5);
    assert_eq!(g.warnings.len(), 1, "the short row is reported");
    assert!(g.warnings[0].message.contains("row 2"));
    assert_eq!(g.sequences[0].name_str(), "boom");
    assert_eq!(g.sequences[0].word4, 0x1234);
    assert_eq!(f.frame.word12, 0xAABBCCDD);
    assert_eq!(f.frame.word20, 7);
    // canonical layout: rewriting reproduces the bytes
    assert_eq!(write(&g).unwrap(), rle_fixture());
}

#[test]
fn every_truncation_is_an_error() {
    let f = rle_fixture();
    for n in 0..f.len() {
        let e = parse(&f[..n], &Limits::default());
        assert!(e.is_err(), "truncated to {n} bytes parsed");
    }
}

#[test]
fn version_zero_and_blend_byte_are_separate_fields() {
    let mut f = rle_fixture();
    put(&mut f, 0, &le32(0));
    put(&mut f, 64 + 11, &[1]); // +11 blend set, +10 layer count still 0
    let g = parse(&f, &Limits::default()).unwrap();
    assert_eq!(g.version, 0);
    let fr = &g.sequences[0].frames[0].frame;
    assert_eq!((fr.blend, fr.layer_count()), (1, 0));
    assert_eq!(write(&g).unwrap(), f);
}

#[test]
fn literal_past_row_end_is_malformed() {
    let mut f = rle_fixture();
    // row 2: byte count 2 but literal of 2 needs 3 bytes
    put(&mut f, 88 + 9, &[2, 0, 1 << 2, 5]);
    let e = parse(&f, &Limits::default()).unwrap_err();
    assert!(matches!(e, GafError::Malformed { .. }), "{e}");
    assert!(e.to_string().contains("RLE row 2"), "{e}");
}

/// Composite: parent 2×2 origin (0,0) with two raw layers; layer A 2×1 at origin (3, 1)
/// (so it lies left of and above the pen), layer B 1×1 origin (-2, -2) (right/below).
/// Data blocks come before the headers that point at them (blocks out of order).
fn composite_fixture() -> Vec<u8> {
    let mut f = Vec::new();
    put(&mut f, 0, &le32(VERSION_STANDARD));
    put(&mut f, 4, &le32(1));
    put(&mut f, 12, &le32(300));
    put(&mut f, 16, &[1, 9]); // layer A pixels: 1, key
    put(&mut f, 18, &[2]); // layer B pixel
    put(&mut f, 20, &le32(100)); // layer table
    put(&mut f, 24, &le32(150));
    put(&mut f, 100, &frame_header((2, 1), (3, 1), 9, 0, 0, 0, 16));
    put(&mut f, 150, &frame_header((1, 1), (-2, -2), 9, 0, 0, 1, 18));
    put(&mut f, 200, &frame_header((2, 2), (0, 0), 9, 0, 2, 0, 20));
    put(&mut f, 300, &seq_header(&[(200, 3)], b"comp"));
    f
}

#[test]
fn composites_flatten_on_the_union_box() {
    let g = parse(&composite_fixture(), &Limits::default()).unwrap();
    let fr = &g.sequences[0].frames[0].frame;
    assert_eq!(fr.layer_count(), 2);
    // Layer A covers x -3..-1, y -1..0; layer B covers x 2..3, y 2..3 (pen at 0,0).
    assert_eq!(fr.bounds(), (-3, -1, 3, 3));
    let flat = fr.flatten().unwrap();
    assert_eq!(
        (flat.width, flat.height, flat.origin_x, flat.origin_y),
        (6, 4, 3, 1)
    );
    let drawn: Vec<(usize, u8)> = flat
        .opaque
        .iter()
        .enumerate()
        .filter(|(_, o)| **o)
        .map(|(i, _)| (i, flat.indices[i]))
        .collect();
    // A's first pixel at canvas (0,0) = 1; its second is the key (not drawn);
    // B at canvas (5,3) = 2.
    assert_eq!(drawn, vec![(0, 1), (3 * 6 + 5, 2)]);
    // Rewritten canonically, the structure survives.
    let out = write(&g).unwrap();
    let again = parse(&out, &Limits::default()).unwrap();
    assert_eq!(again.sequences, g.sequences);
    assert!(again.trailing.is_empty());
}

#[test]
fn far_apart_layers_do_not_flatten_into_a_huge_canvas() {
    let mut f = composite_fixture();
    // layer B's origin moved to (-32768, -32768): the union box is ~32k × 32k pixels
    put(&mut f, 150 + 4, &(-32768i16).to_le_bytes());
    put(&mut f, 150 + 6, &(-32768i16).to_le_bytes());
    put(&mut f, 100 + 4, &32767i16.to_le_bytes());
    put(&mut f, 100 + 6, &32767i16.to_le_bytes());
    let g = parse(&f, &Limits::default()).unwrap();
    assert!(g.sequences[0].frames[0].frame.flatten().is_none());
}

#[test]
fn layer_cycles_and_depth_bombs_are_refused() {
    // the layer table points at its own frame
    let mut f = composite_fixture();
    put(&mut f, 20, &le32(200));
    let e = parse(&f, &Limits::default()).unwrap_err();
    assert!(e.to_string().contains("cycle"), "{e}");
    // a chain of composites deeper than the limit
    let mut f = Vec::new();
    put(&mut f, 0, &le32(VERSION_STANDARD));
    put(&mut f, 4, &le32(1));
    put(&mut f, 12, &le32(16));
    put(&mut f, 16, &seq_header(&[(100, 1)], b"deep"));
    for i in 0..40u32 {
        let at = 100 + 40 * i;
        put(
            &mut f,
            at as usize,
            &frame_header((1, 1), (0, 0), 0, 0, 1, 0, at + 24),
        );
        put(&mut f, at as usize + 24, &le32(at + 40));
    }
    let lim = Limits {
        max_layer_depth: 8,
        ..Limits::default()
    };
    let e = parse(&f, &lim).unwrap_err();
    assert!(matches!(e, GafError::Limit { .. }), "{e}");
}

#[test]
fn shared_references_are_budgeted() {
    // 1000 frame-list items all pointing at one frame header
    let mut f = Vec::new();
    put(&mut f, 0, &le32(VERSION_STANDARD));
    put(&mut f, 4, &le32(1));
    put(&mut f, 12, &le32(16));
    let items: Vec<(u32, u32)> = (0..1000).map(|_| (9000, 1)).collect();
    put(&mut f, 16, &seq_header(&items, b"many"));
    put(
        &mut f,
        9000,
        &frame_header((1, 1), (0, 0), 0, 0, 0, 0, 9024),
    );
    put(&mut f, 9024, &[3]);
    assert!(parse(&f, &Limits::default()).is_ok());
    let lim = Limits {
        max_frame_references: 100,
        ..Limits::default()
    };
    assert!(matches!(parse(&f, &lim), Err(GafError::Limit { .. })));
}

#[test]
fn huge_frames_are_refused_before_allocation() {
    let mut f = Vec::new();
    put(&mut f, 0, &le32(VERSION_STANDARD));
    put(&mut f, 4, &le32(1));
    put(&mut f, 12, &le32(16));
    put(&mut f, 16, &seq_header(&[(64, 1)], b"big"));
    put(
        &mut f,
        64,
        &frame_header((65535, 65535), (0, 0), 0, 1, 0, 0, 88),
    );
    let e = parse(&f, &Limits::default()).unwrap_err();
    assert!(matches!(e, GafError::Limit { .. }), "{e}");
    // Within the pixel budget but the data is not there: truncated, not an allocation.
    let lim = Limits {
        max_frame_pixels: u64::MAX,
        max_total_pixels: u64::MAX,
        ..Limits::default()
    };
    put(&mut f, 64 + 9, &[0]); // raw
    assert!(matches!(parse(&f, &lim), Err(GafError::Truncated { .. })));
    // A sequence table claiming 2^32-1 sequences in a tiny file.
    let mut f = Vec::new();
    put(&mut f, 0, &le32(VERSION_STANDARD));
    put(&mut f, 4, &le32(u32::MAX));
    put(&mut f, 8, &le32(0));
    assert!(matches!(
        parse(&f, &Limits::default()),
        Err(GafError::Truncated { .. })
    ));
}

#[test]
fn zero_size_frames_and_trailing_bytes_survive() {
    let mut f = Vec::new();
    put(&mut f, 0, &le32(VERSION_STANDARD));
    put(&mut f, 4, &le32(1));
    put(&mut f, 12, &le32(16));
    put(&mut f, 16, &seq_header(&[(72, 5), (96, 0)], b"z"));
    put(&mut f, 72, &frame_header((0, 0), (0, 0), 9, 0, 0, 0, 96));
    put(&mut f, 96, &frame_header((0, 5), (0, 0), 9, 1, 0, 0, 120));
    put(&mut f, 120, &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0]); // 5 empty rows
    put(&mut f, 130, b"junk");
    let g = parse(&f, &Limits::default()).unwrap();
    assert_eq!(g.trailing, b"junk");
    assert_eq!(write(&g).unwrap(), f);
}

fn simple(w: u16, h: u16) -> Frame {
    let n = usize::from(w) * usize::from(h);
    Frame {
        width: w,
        height: h,
        origin_x: 0,
        origin_y: 0,
        key: 9,
        compressed: 1,
        blend: 0,
        word12: 0,
        word20: 0,
        content: Content::Pixels(Pixels {
            indices: vec![1; n],
            opaque: vec![true; n],
            payload: None,
        }),
    }
}

fn one_frame_gaf(frame: Frame, frames: usize) -> Gaf {
    Gaf {
        version: VERSION_STANDARD,
        header_word8: 0,
        sequences: vec![Sequence {
            name: Sequence::name_buffer(b"s").unwrap(),
            loop_word: 1,
            word4: 0,
            frames: vec![FrameEntry { duration: 1, frame }; frames],
        }],
        trailing: vec![],
        warnings: vec![],
        layout: None,
    }
}

#[test]
fn writer_refuses_what_the_format_cannot_hold() {
    assert!(Sequence::name_buffer(&[b'a'; 33]).is_none());
    assert!(write(&one_frame_gaf(simple(2, 2), 65536)).is_err());
    assert!(write(&one_frame_gaf(simple(2, 2), 3)).is_ok());
    let mut f = simple(2, 2);
    f.content = Content::Layers(vec![simple(1, 1); 256]);
    assert!(matches!(
        write(&one_frame_gaf(f, 1)),
        Err(GafError::Unwritable { .. })
    ));
    let mut f = simple(2, 2);
    if let Content::Pixels(p) = &mut f.content {
        p.indices.pop();
    }
    let e = write(&one_frame_gaf(f, 1)).unwrap_err();
    assert!(e.to_string().contains("pixels"), "{e}");
    let mut f = simple(2, 2);
    f.content = Content::Layers(vec![]);
    assert!(write(&one_frame_gaf(f, 1)).is_err());
}

#[test]
fn encoder_splits_long_runs_by_the_command_limits() {
    // 300 transparent, 130 of index 4, 70 distinct-ish literals
    let mut idx = vec![0u8; 300];
    let mut opq = vec![false; 300];
    idx.extend(std::iter::repeat_n(4u8, 130));
    opq.extend(std::iter::repeat_n(true, 130));
    idx.extend((0..70u8).map(|i| i % 2 + 10));
    opq.extend(std::iter::repeat_n(true, 70));
    let mut row = Vec::new();
    assert!(rle::encode_row(&idx, &opq, &mut row));
    let cmds = &row[2..];
    // skip 127, 127, 46; repeat 64, 64, then the 2-pixel tail as a repeat
    assert_eq!(&cmds[..3], &[(127 << 1) | 1, (127 << 1) | 1, (46 << 1) | 1]);
    assert_eq!(&cmds[3..7], &[(63 << 2) | 2, 4, (63 << 2) | 2, 4]);
    assert_eq!(&cmds[7..9], &[(1 << 2) | 2, 4]);
    assert_eq!(cmds[9], 63 << 2, "literal of 64");
    assert_eq!(cmds[9 + 65], 5 << 2, "literal of the remaining 6");
    let mut i2 = vec![0; idx.len()];
    let mut o2 = vec![false; idx.len()];
    let out = rle::decode_row(cmds, &mut i2, &mut o2).unwrap();
    assert_eq!(out.covered, idx.len());
    assert_eq!(o2, opq);
}

proptest! {
    #[test]
    fn rle_encode_decode_identity(row in proptest::collection::vec((any::<u8>(), any::<bool>()), 0..400)) {
        let idx: Vec<u8> = row.iter().map(|(i, o)| if *o { *i } else { 0 }).collect();
        let opq: Vec<bool> = row.iter().map(|(_, o)| *o).collect();
        let mut enc = Vec::new();
        prop_assert!(rle::encode_row(&idx, &opq, &mut enc));
        let n = u16::from_le_bytes([enc[0], enc[1]]) as usize;
        prop_assert_eq!(n, enc.len() - 2);
        let mut i2 = vec![0u8; idx.len()];
        let mut o2 = vec![false; idx.len()];
        let out = rle::decode_row(&enc[2..], &mut i2, &mut o2).unwrap();
        prop_assert_eq!(out.covered, idx.len());
        prop_assert_eq!(o2, opq);
        prop_assert_eq!(i2, idx);
    }

    #[test]
    fn scanning_a_row_finds_what_decoding_it_finds(
        cmds in proptest::collection::vec(any::<u8>(), 0..200),
        width in 0usize..300,
    ) {
        let mut i = vec![0u8; width];
        let mut o = vec![false; width];
        prop_assert_eq!(rle::scan_row(&cmds), rle::decode_row(&cmds, &mut i, &mut o));
    }

    #[test]
    fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..600)) {
        let _ = parse(&data, &Limits::default());
        // the shared reader takes and refuses what the copying one does
        let shared = parse_stored_shared(&Payload::from(data.clone()), &Limits::default());
        prop_assert_eq!(shared, parse_stored(&data, &Limits::default()));
    }
}

/// A file with the blocks in an odd order: sequence headers after the pixel data, gaps of
/// garbage between blocks, an RLE payload shared by two frame headers, a frame header listed
/// twice, a composite with a nested composite layer, and trailing bytes.
///
/// ```text
///   0 header (2 sequences)       12 table → 600, 700     20..40 gap (0xEE)
///  40 A raw 4×3 → 64 (12 bytes)  76..80 gap (0xAB)
///  80 B RLE 2×2 → 104 (8 bytes: two rows "repeat 9 ×2")
/// 120 C RLE 2×2 → 104 (B's payload)
/// 150 D composite → table 174 [200, 250]
/// 200 E raw 1×1 → 224 [5]      250 F composite → table 274 [300]   300 G raw 2×1 → 324 [1, 2]
/// 326..600 gap (0x5A)          600 "odd": A, B, A, D              700 "other": C
/// 748 trailing "TRAIL"
/// ```
pub(super) fn odd_layout_fixture() -> Vec<u8> {
    let mut f = Vec::new();
    put(&mut f, 0, &le32(VERSION_STANDARD));
    put(&mut f, 4, &le32(2));
    put(&mut f, 8, &le32(0));
    put(&mut f, 12, &le32(600));
    put(&mut f, 16, &le32(700));
    put(&mut f, 20, &[0xEE; 20]);
    put(&mut f, 40, &frame_header((4, 3), (1, 1), 9, 0, 0, 0, 64));
    put(&mut f, 64, &[9, 1, 2, 9, 3, 3, 3, 3, 9, 9, 4, 9]);
    put(&mut f, 76, &[0xAB; 4]);
    put(&mut f, 80, &frame_header((2, 2), (0, 0), 9, 1, 0, 0, 104));
    put(&mut f, 104, &[2, 0, 6, 9, 2, 0, 6, 9]);
    put(&mut f, 112, &[0xCD; 8]);
    put(&mut f, 120, &frame_header((2, 2), (0, 0), 9, 1, 0, 0, 104));
    put(&mut f, 144, &[0x11; 6]);
    put(&mut f, 150, &frame_header((3, 3), (1, 1), 9, 0, 2, 0, 174));
    put(&mut f, 174, &le32(200));
    put(&mut f, 178, &le32(250));
    put(&mut f, 200, &frame_header((1, 1), (0, 0), 9, 0, 0, 0, 224));
    put(&mut f, 224, &[5]);
    put(&mut f, 250, &frame_header((2, 1), (0, 0), 9, 0, 1, 1, 274));
    put(&mut f, 274, &le32(300));
    put(&mut f, 300, &frame_header((2, 1), (0, 0), 9, 0, 0, 0, 324));
    put(&mut f, 324, &[1, 2]);
    put(&mut f, 326, &[0x5A; 274]);
    put(
        &mut f,
        600,
        &seq_header(&[(40, 1), (80, 2), (40, 3), (150, 4)], b"odd"),
    );
    put(&mut f, 700, &seq_header(&[(120, 1)], b"other"));
    f.extend_from_slice(b"TRAIL");
    f
}

fn set_pixels(f: &mut Frame, indices: Vec<u8>) {
    let raw = !f.is_compressed();
    let key = f.key;
    f.content = Content::Pixels(Pixels {
        opaque: indices.iter().map(|&i| !raw || i != key).collect(),
        indices,
        payload: None,
    });
}

/// Offsets where `a` and `b` differ within their common length.
fn diffs(a: &[u8], b: &[u8]) -> Vec<usize> {
    a.iter()
        .zip(b)
        .enumerate()
        .filter(|(_, (x, y))| x != y)
        .map(|(i, _)| i)
        .collect()
}

#[test]
fn odd_layouts_are_recorded_and_written_back_exactly() {
    let f = odd_layout_fixture();
    let g = parse(&f, &Limits::default()).unwrap();
    assert_eq!(g.trailing, b"TRAIL");
    let l = g.layout.as_deref().unwrap();
    assert_eq!(l.end, 748);
    assert_eq!(l.sequences[0].offset, 600);
    assert_eq!(l.sequences[0].frames[1].data, 104);
    // gaps: 20..40, 76..80, 112..120, 144..150, 182..200, 225..250, 278..300, 326..600, 672..700
    let gaps: Vec<(u64, usize)> = l.filler.iter().map(|x| (x.offset, x.bytes.len())).collect();
    assert_eq!(
        gaps,
        [
            (20, 20),
            (76, 4),
            (112, 8),
            (144, 6),
            (182, 18),
            (225, 25),
            (278, 22),
            (326, 274),
            (672, 28)
        ]
    );
    // the shared header (A) and its payload, and B's payload shared with C, are checked
    let checked: Vec<(u32, u64)> = l.checks.iter().map(|c| (c.offset, c.len)).collect();
    assert_eq!(checked, [(40, 24), (64, 12), (104, 8)]);
    assert_eq!(write(&g).unwrap(), f, "unedited: byte for byte");
    assert_ne!(
        write_canonical(&g).unwrap(),
        f,
        "the fixture is not canonical"
    );
    // a model that lost its layout is written canonically and reads the same
    let again = parse(&write_canonical(&g).unwrap(), &Limits::default()).unwrap();
    assert_eq!(again.sequences, g.sequences);
}

#[test]
fn a_grown_shared_payload_moves_to_the_end_and_nothing_else_changes() {
    let f = odd_layout_fixture();
    let mut g = parse(&f, &Limits::default()).unwrap();
    // B (entry 1) gets four different pixels: 2 rows of "literal 2" = 10 bytes (was 8)
    set_pixels(&mut g.sequences[0].frames[1].frame, vec![1, 2, 3, 4]);
    let out = write(&g).unwrap();
    // only B's data pointer changed before the old end; the new payload follows the last
    // block; then the trailing bytes
    assert_eq!(diffs(&f[..748], &out[..748]), [96, 97]);
    assert_eq!(&out[96..100], &le32(748));
    assert_eq!(&out[748..758], &[3, 0, 4, 1, 2, 3, 0, 4, 3, 4]);
    assert_eq!(&out[758..], b"TRAIL");
    let again = parse(&out, &Limits::default()).unwrap();
    let b = again.sequences[0].frames[1].frame.pixels().unwrap();
    assert_eq!(b.indices, [1, 2, 3, 4]);
    // C kept the shared payload in its place
    assert_eq!(again.sequences[1], g.sequences[1]);
    assert_eq!(
        again.layout.as_deref().unwrap().sequences[1].frames[0].data,
        104
    );
}

#[test]
fn an_edit_of_one_reference_of_a_shared_header_leaves_the_other_in_place() {
    let f = odd_layout_fixture();
    let mut g = parse(&f, &Limits::default()).unwrap();
    // entry 0 (A) edited in place-size; entry 2 still lists the original A
    let mut px = g.sequences[0].frames[0]
        .frame
        .pixels()
        .unwrap()
        .indices
        .clone();
    px[1] = 7;
    set_pixels(&mut g.sequences[0].frames[0].frame, px);
    let out = write(&g).unwrap();
    // the frame list's first pointer moved; A's header and payload stayed for entry 2
    assert_eq!(diffs(&f[..748], &out[..748]), [640, 641]);
    let again = parse(&out, &Limits::default()).unwrap();
    let l = again.layout.as_deref().unwrap();
    assert_eq!(l.sequences[0].frames[2].header, 40);
    assert_eq!(
        l.sequences[0].frames[0].header,
        748 + 12,
        "payload first, then header"
    );
    assert_eq!(
        again.sequences[0].frames[0].frame.pixels().unwrap().indices[1],
        7
    );
    assert_eq!(again.sequences[0].frames[2], g.sequences[0].frames[2]);
    assert!(out.ends_with(b"TRAIL"));
}

#[test]
fn a_nested_layer_edit_changes_only_that_layer() {
    let f = odd_layout_fixture();
    let mut g = parse(&f, &Limits::default()).unwrap();
    let Content::Layers(d) = &mut g.sequences[0].frames[3].frame.content else {
        panic!("D is a composite")
    };
    let Content::Layers(fl) = &mut d[1].content else {
        panic!("F is a composite")
    };
    // G: same size, other pixels → in place
    set_pixels(&mut fl[0], vec![2, 1]);
    let out = write(&g).unwrap();
    assert_eq!(out.len(), f.len());
    assert_eq!(diffs(&f, &out), [324, 325]);
    // G grows to 3×1: its header changes in place (width), the payload moves to the end
    let Content::Layers(d) = &mut g.sequences[0].frames[3].frame.content else {
        unreachable!()
    };
    let Content::Layers(fl) = &mut d[1].content else {
        unreachable!()
    };
    fl[0].width = 3;
    set_pixels(&mut fl[0], vec![2, 1, 4]);
    let out = write(&g).unwrap();
    // (the room G's old payload held is cleared)
    assert_eq!(diffs(&f[..748], &out[..748]), [300, 316, 317, 324, 325]);
    assert_eq!(&out[324..326], &[0, 0]);
    assert_eq!(&out[748..751], &[2, 1, 4]);
}

#[test]
fn room_freed_by_a_removed_frame_takes_a_grown_payload() {
    let f = odd_layout_fixture();
    let mut g = parse(&f, &Limits::default()).unwrap();
    g.sequences[0].frames.truncate(3); // D and its layers go
    set_pixels(&mut g.sequences[0].frames[1].frame, vec![1, 2, 3, 4]);
    let out = write(&g).unwrap();
    assert_eq!(out.len(), f.len(), "the payload fits where D's header was");
    let again = parse(&out, &Limits::default()).unwrap();
    let l = again.layout.as_deref().unwrap();
    assert_eq!(l.sequences[0].frames[1].data, 150);
    assert_eq!(
        again.sequences[0].frames[1].frame.pixels().unwrap().indices,
        [1, 2, 3, 4]
    );
    assert_eq!(again.sequences[0].frames.len(), 3);
    assert_eq!(again.sequences[1], g.sequences[1]);
    // the sequence header shrank in place: its last 8 bytes are zero now
    assert_eq!(&out[600 + 64..600 + 72], &[0; 8]);
    // the gaps are kept
    assert_eq!(&out[326..600], &f[326..600]);
}

#[test]
fn a_new_sequence_moves_what_the_longer_table_covers() {
    let f = odd_layout_fixture();
    let mut g = parse(&f, &Limits::default()).unwrap();
    let extra = g.sequences[1].clone();
    g.sequences.push(extra);
    let out = write(&g).unwrap();
    let again = parse(&out, &Limits::default()).unwrap();
    assert_eq!(again.sequences, g.sequences);
    // the table grew over the gap at 20..24: nothing else before the old end moved
    let d = diffs(&f[..748], &out[..748]);
    assert!(d.iter().all(|&i| (4..24).contains(&i)), "{d:?}");
}

/// One sequence (name with junk after its NUL) with two truecolor frames: frame 0 is 3×2
/// ARGB4444 with +11 = 0xFF; frame 1 is 2×1 ARGB1555. Frame 1's data sits before the frame
/// headers (blocks in any order).
fn truecolor_fixture() -> Vec<u8> {
    let mut f = Vec::new();
    put(&mut f, 0, &le32(VERSION_STANDARD));
    put(&mut f, 4, &le32(1));
    put(&mut f, 12, &le32(20));
    put(&mut f, 16, &[0x34, 0x12, 0xFF, 0x7F]); // frame 1's words 0x1234, 0x7FFF
    let mut seq = seq_header(&[(76, 2), (100, 0)], b"tc\0JUNK");
    seq[8 + 3..8 + 7].copy_from_slice(b"JUNK");
    put(&mut f, 20, &seq); // 20..76
    put(
        &mut f,
        76,
        &frame_header((3, 2), (1, 1), 0, 4, 0, 0xFF, 124),
    );
    put(&mut f, 100, &frame_header((2, 1), (0, 0), 0, 5, 0, 0, 16));
    let words: [u16; 6] = [0x0000, 0xF00F, 0x8421, 0xFFFF, 0x1234, 0xABCD];
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    put(&mut f, 124, &bytes); // 124..136
    f
}

#[test]
fn truecolor_frames_are_read_by_their_format_byte_and_written_back() {
    let f = truecolor_fixture();
    let g = parse(&f, &Limits::default()).unwrap();
    let s = &g.sequences[0];
    assert_eq!(&s.name[..7], b"tc\0JUNK");
    let (a, b) = (&s.frames[0].frame, &s.frames[1].frame);
    assert_eq!(a.truecolor(), Some(Argb::Argb4444));
    assert_eq!(b.truecolor(), Some(Argb::Argb1555));
    assert!(!a.is_compressed());
    assert_eq!(a.blend, 0xFF);
    assert_eq!(
        a.content,
        Content::Truecolor(vec![0x0000, 0xF00F, 0x8421, 0xFFFF, 0x1234, 0xABCD])
    );
    assert_eq!(b.content, Content::Truecolor(vec![0x1234, 0x7FFF]));
    assert_eq!(write(&g).unwrap(), f);
    // canonical layout reads back to the same model
    let again = parse(&write_canonical(&g).unwrap(), &Limits::default()).unwrap();
    assert_eq!(again.sequences, g.sequences);
    // an edited word is written in place, nothing else changes
    let mut e = g.clone();
    if let Content::Truecolor(w) = &mut e.sequences[0].frames[0].frame.content {
        w[5] = 0x0102;
    }
    let out = write(&e).unwrap();
    assert_eq!(diffs(&f, &out), vec![134, 135]);
    assert_eq!(&out[134..136], &[0x02, 0x01]);
}

#[test]
fn truecolor_frames_are_checked_and_budgeted() {
    let f = truecolor_fixture();
    for n in 0..f.len() {
        assert!(parse(&f[..n], &Limits::default()).is_err(), "{n}");
    }
    let lim = Limits {
        max_frame_pixels: 5,
        ..Limits::default()
    };
    assert!(matches!(parse(&f, &lim), Err(GafError::Limit { .. })));
    let mut g = parse(&f, &Limits::default()).unwrap();
    g.layout = None;
    g.sequences[0].frames[0].frame.content = Content::Truecolor(vec![0; 5]);
    assert!(matches!(write(&g), Err(GafError::Unwritable { .. })));
    g.sequences[0].frames[0].frame.content = Content::Truecolor(vec![0; 6]);
    g.sequences[0].frames[0].frame.compressed = 1;
    assert!(matches!(write(&g), Err(GafError::Unwritable { .. })));
}

/// Every frame of `g` a sequence lists directly, in order.
fn listed(g: &Gaf) -> Vec<&Frame> {
    g.sequences
        .iter()
        .flat_map(|s| s.frames.iter().map(|fe| &fe.frame))
        .collect()
}

#[test]
fn stored_frames_write_back_exactly_and_decode_as_parse_decodes() {
    let sample = write(&crate::sample::animated_gaf()).unwrap();
    let mut undecoded = 0;
    for data in [
        odd_layout_fixture(),
        rle_fixture(),
        composite_fixture(),
        sample,
    ] {
        let full = parse(&data, &Limits::default()).unwrap();
        let stored = parse_stored(&data, &Limits::default()).unwrap();
        assert_eq!(write(&stored).unwrap(), data);
        assert_eq!(stored.layout, full.layout);
        let (a, b) = (listed(&full), listed(&stored));
        assert_eq!(a.len(), b.len());
        for (f, s) in a.iter().zip(&b) {
            undecoded += usize::from(s.undecoded());
            match (&f.content, &s.content) {
                // layers are decoded
                (Content::Layers(_), Content::Layers(_)) => assert_eq!(f, s),
                (Content::Pixels(p), Content::Pixels(_)) => {
                    assert!(!f.undecoded());
                    assert_eq!(s.decoded().as_deref(), Some(p));
                    assert_eq!((f.width, f.height, f.key), (s.width, s.height, s.key));
                }
                _ => assert_eq!(f, s),
            }
        }
    }
    assert!(undecoded > 5, "{undecoded} frames left undecoded");
}

/// Every payload of `f` and its layers.
fn payloads<'a>(f: &'a Frame, out: &mut Vec<&'a Payload>) {
    match &f.content {
        Content::Pixels(p) => out.extend(p.payload.as_ref()),
        Content::Layers(l) => l.iter().for_each(|x| payloads(x, out)),
        Content::Truecolor(_) => {}
    }
}

#[test]
fn a_shared_parse_equals_a_stored_one_and_slices_the_input() {
    let sample = write(&crate::sample::animated_gaf()).unwrap();
    for data in [
        odd_layout_fixture(),
        rle_fixture(),
        composite_fixture(),
        truecolor_fixture(),
        sample,
    ] {
        let owner = Payload::from(data.clone());
        let shared = parse_stored_shared(&owner, &Limits::default()).unwrap();
        assert_eq!(shared, parse_stored(&data, &Limits::default()).unwrap());
        assert_eq!(write(&shared).unwrap(), data);
        let mut all = Vec::new();
        for f in listed(&shared) {
            payloads(f, &mut all);
        }
        let (lo, hi) = (
            owner.as_ptr() as usize,
            owner.as_ptr() as usize + owner.len(),
        );
        for p in &all {
            let at = p.as_ptr() as usize;
            assert!(at >= lo && at + p.len() <= hi, "a payload is a copy");
        }
        // the same refusals
        for cut in 0..data.len() {
            let cutp = Payload::from(data[..cut].to_vec());
            assert_eq!(
                parse_stored_shared(&cutp, &Limits::default()).map(|_| ()),
                parse_stored(&data[..cut], &Limits::default()).map(|_| ()),
                "cut at {cut}"
            );
        }
    }
}

#[test]
fn stored_parse_checks_the_structure_as_parse_does() {
    let data = odd_layout_fixture();
    for cut in 0..data.len() {
        let (a, b) = (
            parse(&data[..cut], &Limits::default()).map(|_| ()),
            parse_stored(&data[..cut], &Limits::default()).map(|_| ()),
        );
        assert_eq!(a, b, "cut at {cut}");
    }
    // the same warnings (a short row), and a row whose commands run past its length refused
    // by both the same way
    let good = rle_fixture();
    let full = parse(&good, &Limits::default()).unwrap();
    let stored = parse_stored(&good, &Limits::default()).unwrap();
    assert!(stored.sequences[0].frames[0].frame.undecoded());
    assert_eq!(full.warnings.len(), 1);
    assert_eq!(stored.warnings, full.warnings);
    let mut bad = good.clone();
    let at = full.layout.as_ref().unwrap().sequences[0].frames[0].data as usize;
    bad[at + 2] = 0xFC; // a 64-byte literal in a short row
    let e = parse(&bad, &Limits::default()).unwrap_err();
    assert!(matches!(e, GafError::Malformed { .. }), "{e}");
    assert_eq!(parse_stored(&bad, &Limits::default()).unwrap_err(), e);
}

#[test]
fn an_undecoded_frame_flattens_as_its_pixels_do() {
    let data = write(&crate::sample::animated_gaf()).unwrap();
    let full = parse(&data, &Limits::default()).unwrap();
    let stored = parse_stored(&data, &Limits::default()).unwrap();
    let mut seen = 0;
    for (f, s) in listed(&full).into_iter().zip(listed(&stored)) {
        seen += usize::from(s.undecoded());
        assert_eq!(s.flatten(), f.flatten());
    }
    assert!(seen > 3);
}

/// A frame of `w`×`h` pixels at origin `(ox, oy)`, key 9, drawn where `opaque`.
fn pixels_frame(w: u16, h: u16, (ox, oy): (i16, i16), indices: &[u8], opaque: &[bool]) -> Frame {
    let mut f = simple(w, h);
    (f.origin_x, f.origin_y) = (ox, oy);
    f.content = Content::Pixels(Pixels {
        indices: indices.to_vec(),
        opaque: opaque.to_vec(),
        payload: None,
    });
    f
}

#[test]
fn flattening_gives_drawn_pixels_and_the_key_elsewhere_later_layers_on_top() {
    // a simple frame: its own box; an undrawn pixel holds the key whatever its index was
    let f = pixels_frame(
        3,
        2,
        (2, 1),
        &[1, 7, 3, 4, 5, 6],
        &[true, false, true, true, false, true],
    );
    let flat = f.flatten().unwrap();
    assert_eq!(
        (flat.width, flat.height, flat.origin_x, flat.origin_y),
        (3, 2, 2, 1)
    );
    assert_eq!(flat.indices, [1, 9, 3, 4, 9, 6]);
    assert_eq!(flat.opaque, [true, false, true, true, false, true]);
    // the same frame as the only layer of a composite: the same canvas
    let mut c = simple(1, 1);
    c.content = Content::Layers(vec![f.clone()]);
    assert_eq!(c.flatten().unwrap(), flat);
    // two layers: boxes (0,0)-(2,2) and (1,1)-(3,3); the second covers the first
    let a = pixels_frame(2, 2, (0, 0), &[10, 11, 12, 13], &[true; 4]);
    let b = pixels_frame(
        2,
        2,
        (-1, -1),
        &[20, 21, 22, 23],
        &[true, true, false, true],
    );
    c.content = Content::Layers(vec![a, b]);
    let flat = c.flatten().unwrap();
    assert_eq!(
        (flat.width, flat.height, flat.origin_x, flat.origin_y),
        (3, 3, 0, 0)
    );
    assert_eq!(flat.indices, [10, 11, 9, 12, 20, 21, 9, 9, 23]);
    assert_eq!(
        flat.opaque,
        [true, true, false, true, true, true, false, false, true]
    );
}
