//! TNT reader and writer: round trips, every quirk the format description lists, malformed input.

mod tnt_support;

use tafs::formats::tnt::{self, TntError};
use tafs::formats::Limits;
use tnt_support::{corpus_map, name, Fixture};

fn parse(b: &[u8]) -> Result<tnt::Tnt, TntError> {
    tnt::parse(b, &Limits::default())
}

#[test]
fn corpus_map_round_trips_byte_for_byte() {
    let Some(data) = corpus_map() else { return };
    let t = parse(&data).unwrap();
    // PROVENANCE.md: 32×32 tiles, 177 unique tiles, no features.
    assert_eq!((t.width, t.height), (64, 64));
    assert_eq!(t.tile_count(), 177);
    assert!(t.features.is_empty());
    assert_eq!((t.minimap.width, t.minimap.height), (252, 252));
    assert_eq!(tnt::write(&t).unwrap(), data);
}

#[test]
fn small_map_fields_and_round_trip() {
    let f = Fixture::small(4, 3, 5);
    let data = f.bytes();
    let t = parse(&data).unwrap();
    assert_eq!(t.source_version, 0x2000);
    assert_eq!((t.width, t.height, t.tiles_x(), t.tiles_y()), (8, 6, 4, 3));
    assert_eq!(t.tilemap, f.tilemap);
    assert_eq!(t.tile(4).unwrap(), &f.tiles[4][..]);
    assert_eq!(t.attrs[9].height, 1 + 1); // x=1, y=1
    assert_eq!(t.sea_level, 20);
    assert_eq!(t.minimap.pixels, f.minimap);
    assert_eq!(tnt::write(&t).unwrap(), data);
}

#[test]
fn every_sentinel_word_pads_and_name_garbage_survive() {
    let mut f = Fixture::small(2, 2, 2);
    let words = [
        0u16, 1, 2, 0xFFFB, 0xFFFC, 0xFFFD, 0xFFFE, 0xFFFF, 5, 0x7FFF,
    ];
    for (i, w) in words.iter().enumerate() {
        f.attrs[i].1 = *w;
        f.attrs[i].2 = i as u8 * 3; // non-zero record pad bytes
    }
    let mut garbage = name("Tree1");
    for (i, b) in garbage.iter_mut().enumerate().skip(6) {
        *b = (i * 7) as u8;
    }
    let mut g2 = name("Rock");
    g2[127] = 0xEE;
    f.features = vec![(0, garbage), (77, g2), (2, name("GreenVent03"))];
    f.pads = [1, 0xDEAD_BEEF, 0, 7];
    f.minimap_flags = 0x0000_0103;
    f.map_pad = vec![0xAB; 8];
    f.trailing = b"trailing junk".to_vec();
    let data = f.bytes();
    let t = parse(&data).unwrap();
    let got: Vec<u16> = t
        .attrs
        .iter()
        .take(words.len())
        .map(|a| a.feature)
        .collect();
    assert_eq!(got, words);
    assert_eq!(t.features[0].name_str(), "Tree1");
    assert_eq!(t.features[0].name, garbage);
    assert_eq!(t.features[1].index, 77);
    assert_eq!(t.pads, [1, 0xDEAD_BEEF, 0, 7]);
    assert_eq!(t.minimap_flags, 0x103);
    // Placements: only words below the table size (3): cells 0, 1, 2.
    let placed: Vec<_> = t.placements().collect();
    assert_eq!(placed, vec![(0, 0, 0), (1, 1, 0), (2, 2, 0)]);
    assert_eq!(tnt::write(&t).unwrap(), data);
}

#[test]
fn extra_attribute_rows_are_ignored_but_kept() {
    let mut f = Fixture::small(3, 2, 3);
    f.extra_attr_rows = 6;
    let data = f.bytes();
    let t = parse(&data).unwrap();
    assert_eq!(t.attrs.len(), 6 * 4);
    assert_eq!(t.tile_count(), 3);
    assert_eq!(t.tile(2).unwrap(), &f.tiles[2][..]);
    assert_eq!(tnt::write(&t).unwrap(), data);
}

#[test]
fn minimap_252x256_is_kept() {
    let mut f = Fixture::small(2, 2, 1);
    f.minimap_h = 256;
    f.minimap = (0..252 * 256).map(|i| (i / 252) as u8).collect();
    let data = f.bytes();
    let t = parse(&data).unwrap();
    assert_eq!((t.minimap.width, t.minimap.height), (252, 256));
    assert_eq!(t.minimap.pixels[252 * 255], 255);
    assert_eq!(tnt::write(&t).unwrap(), data);
}

#[test]
fn legacy_1020_is_read_and_written_as_2000() {
    let mut f = Fixture::small(2, 2, 2);
    f.version = 0x1020;
    f.features = vec![(0, name("Tree1")), (1, name("Rock"))];
    f.attrs[0].1 = 1;
    f.attrs[1].1 = 0xFC;
    f.attrs[2].1 = 0xFF;
    f.attrs[3].1 = 0;
    f.minimap_flags = 1;
    let data = f.bytes();
    let t = parse(&data).unwrap();
    assert_eq!(t.source_version, 0x1020);
    assert_eq!(t.attrs[0].feature, 1);
    assert_eq!(t.attrs[1].feature, 0xFFFF);
    assert_eq!(t.attrs[2].feature, 0xFFFF);
    assert_eq!(t.attrs[3].feature, 0);
    assert_eq!(t.attrs[5].height, 5 % 4 + 5 / 4);
    assert_eq!(t.minimap_flags, 1);
    assert_eq!(t.minimap.pixels, f.minimap);
    let out = tnt::write(&t).unwrap();
    assert_eq!(&out[..4], &0x2000u32.to_le_bytes());
    let back = parse(&out).unwrap();
    assert_eq!(back.attrs, t.attrs);
    assert_eq!(back.tilemap, t.tilemap);
    assert_eq!(back.features, t.features);
    assert_eq!(back.minimap, t.minimap);
    // The 0x2000 record is 4 bytes: attribute block = 16 cells × 4 bytes.
    let attr_off = u32::from_le_bytes(out[16..20].try_into().unwrap()) as usize;
    let gfx_off = u32::from_le_bytes(out[20..24].try_into().unwrap()) as usize;
    assert_eq!(gfx_off - attr_off, 16 * 4);
}

#[test]
fn kingdoms_and_unknown_versions_are_named() {
    let mut f = Fixture::small(2, 2, 1);
    f.version = 0x4000;
    let e = parse(&f.bytes()).unwrap_err();
    assert_eq!(e, TntError::Kingdoms);
    assert!(e.to_string().contains("TA: Kingdoms"), "{e}");
    f.version = 0x1234;
    let e = parse(&f.bytes()).unwrap_err();
    assert!(e.to_string().contains("0x1234"), "{e}");
}

#[test]
fn every_truncation_is_an_error() {
    let mut f = Fixture::small(2, 2, 2);
    f.features = vec![(0, name("Tree1"))];
    f.minimap_w = 4;
    f.minimap_h = 3;
    f.minimap = vec![1; 12];
    let data = f.bytes();
    assert!(parse(&data).is_ok());
    for n in 0..data.len() {
        assert!(parse(&data[..n]).is_err(), "truncated to {n} bytes parsed");
    }
}

fn set_u32(d: &mut [u8], at: usize, v: u32) {
    d[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

#[test]
fn offsets_past_the_end_and_huge_counts_are_errors() {
    let mut f = Fixture::small(2, 2, 2);
    f.features = vec![(0, name("Tree1"))];
    let data = f.bytes();
    for field in [0x0C, 0x10, 0x14, 0x20, 0x28] {
        for v in [data.len() as u32, u32::MAX, u32::MAX - 3] {
            let mut d = data.clone();
            set_u32(&mut d, field, v);
            let Err(e) = parse(&d) else {
                panic!("field {field:#x} = {v:#x} parsed")
            };
            assert!(
                matches!(e, TntError::OutOfBounds { .. } | TntError::OverLimit { .. }),
                "field {field:#x} = {v:#x}: {e}"
            );
        }
    }
    // Dimensions, tile and feature counts far too large.
    for (field, v) in [
        (0x04, u32::MAX),
        (0x08, 0x1_0000),
        (0x18, u32::MAX),
        (0x18, 65_537),
        (0x1C, 0xFFFB),
        (0x1C, 5000),
    ] {
        let mut d = data.clone();
        set_u32(&mut d, field, v);
        assert!(parse(&d).is_err(), "field {field:#x} = {v:#x} parsed");
    }
    // Minimap size that overflows.
    let mut d = data.clone();
    let mini = u32::from_le_bytes(d[0x28..0x2C].try_into().unwrap()) as usize;
    set_u32(&mut d, mini, u32::MAX);
    set_u32(&mut d, mini + 4, u32::MAX);
    assert!(matches!(parse(&d), Err(TntError::OutOfBounds { .. })));
    // Errors name the structure.
    let mut d = data.clone();
    set_u32(&mut d, 0x14, data.len() as u32);
    let msg = parse(&d).unwrap_err().to_string();
    assert!(
        msg.contains("tile graphics") && msg.contains("0x14"),
        "{msg}"
    );
}

#[test]
fn limits_are_applied_before_allocation() {
    let data = Fixture::small(4, 4, 3).bytes();
    let tight = Limits {
        max_tiles: 2,
        ..Limits::default()
    };
    assert!(matches!(
        tnt::parse(&data, &tight),
        Err(TntError::OverLimit { .. })
    ));
    let tight = Limits {
        max_map_cells: 63,
        ..Limits::default()
    };
    assert!(matches!(
        tnt::parse(&data, &tight),
        Err(TntError::OverLimit { .. })
    ));
}

#[test]
fn writer_refuses_what_the_game_cannot_load() {
    let base = parse(&Fixture::small(2, 2, 2).bytes()).unwrap();
    let refused = |t: &tnt::Tnt| matches!(tnt::write(t), Err(TntError::Refused(_)));
    let mut t = base.clone();
    t.tilemap[3] = 2;
    assert!(refused(&t), "tile index past the tile count");
    let mut t = base.clone();
    t.tilemap.pop();
    assert!(refused(&t), "tile grid not half the attribute grid");
    let mut t = base.clone();
    t.width = 5;
    assert!(refused(&t), "odd width");
    let mut t = base.clone();
    t.tiles = vec![0; 1024 * 65_537];
    assert!(refused(&t), "65,537 tiles");
    let mut t = base.clone();
    t.features = vec![tnt::FeatureEntry::new(0, b"x").unwrap(); 0xFFFB];
    assert!(refused(&t), "0xFFFB features");
    let mut t = base.clone();
    t.features = vec![tnt::FeatureEntry {
        index: 0,
        name: [b'a'; 128],
    }];
    assert!(refused(&t), "name without NUL");
    let mut t = base.clone();
    t.minimap.pixels.pop();
    assert!(refused(&t), "minimap size mismatch");
}

#[test]
fn edited_sizes_get_the_canonical_layout_and_keep_padding_and_tail() {
    let mut f = Fixture::small(3, 3, 2);
    f.map_pad = vec![0xAB; 14]; // 9 cells × 2 = 18 bytes → padded to 32
    f.trailing = vec![1, 2, 3];
    let data = f.bytes();
    let mut t = parse(&data).unwrap();
    t.tiles.extend_from_slice(&[7u8; 1024]);
    t.tilemap[0] = 2;
    let out = tnt::write(&t).unwrap();
    let back = parse(&out).unwrap();
    assert_eq!(back.tile_count(), 3);
    assert_eq!(back.tilemap, t.tilemap);
    assert_eq!(back.attrs, t.attrs);
    assert_eq!(back.minimap, t.minimap);
    // Header 64 + 18 map bytes, padded to 96 with the original padding bytes.
    assert_eq!(u32::from_le_bytes(out[16..20].try_into().unwrap()), 96);
    assert_eq!(&out[64 + 18..96], &[0xAB; 14]);
    assert_eq!(&out[out.len() - 3..], &[1, 2, 3]);
}

mod mutations {
    use super::*;
    use proptest::prelude::*;

    fn base() -> Vec<u8> {
        let mut f = Fixture::small(2, 2, 2);
        f.features = vec![(0, name("Tree1"))];
        f.attrs[1].1 = 0;
        f.minimap_w = 3;
        f.minimap_h = 2;
        f.minimap = vec![1, 2, 3, 4, 5, 6];
        f.map_pad = vec![0xAA; 8];
        f.bytes()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        /// Mutated maps never panic; whatever parses and writes reads back the same.
        #[test]
        fn mutated_maps_parse_or_fail_cleanly(
            edits in proptest::collection::vec((0usize..400, any::<u8>()), 1..6),
            cut in 0usize..600,
        ) {
            let mut d = base();
            for (at, v) in edits {
                let n = d.len();
                d[at % n] = v;
            }
            d.truncate(cut.max(1).min(d.len()));
            if let Ok(t) = parse(&d) {
                if let Ok(out) = tnt::write(&t) {
                    let again = parse(&out).unwrap();
                    prop_assert_eq!(&again.tilemap, &t.tilemap);
                    prop_assert_eq!(&again.attrs, &t.attrs);
                    prop_assert_eq!(&again.tiles, &t.tiles);
                    prop_assert_eq!(&again.features, &t.features);
                    prop_assert_eq!(&again.minimap, &t.minimap);
                    if t.source_version == 0x2000 && again.layout == t.layout {
                        prop_assert!(out == d, "same layout, different bytes");
                    }
                }
            }
        }
    }
}

/// Found by fuzzing: width 0x19000000 with height 0 passed the cell budget (0 cells) and made
/// every pixel row 6.7 GB.
#[test]
fn huge_side_with_empty_other_side_is_refused() {
    let mut d = Fixture::small(2, 2, 1).bytes();
    set_u32(&mut d, 0x04, 0x1900_0000);
    set_u32(&mut d, 0x08, 0);
    assert!(matches!(parse(&d), Err(TntError::OverLimit { .. })));
}
