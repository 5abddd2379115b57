//! Every archive of the corpus: listing matches ../shared/HPI.md §7 (sizes typed from it),
//! every member decodes with its checksums, known members equal the loose corpus files, and
//! parse → write reproduces each archive byte for byte.

mod common;

use std::path::PathBuf;
use tafs::formats::hpi::{self, Archive, EntryKind, HpiLimits, Version, WriteOptions};

fn archives() -> Option<PathBuf> {
    let c = common::corpus()?;
    let a = c.join("archives");
    if a.is_dir() {
        Some(a)
    } else {
        eprintln!("note: corpus/archives is absent; archive corpus checks skipped");
        None
    }
}

fn load(name: &str) -> Option<(Vec<u8>, Archive)> {
    let data = std::fs::read(archives()?.join(name)).ok()?;
    let a = hpi::parse(&data, &HpiLimits::default()).unwrap_or_else(|e| panic!("{name}: {e}"));
    Some((data, a))
}

/// (path, size) of every file, and the folder paths.
fn listing(a: &Archive) -> (Vec<(String, u32)>, Vec<String>) {
    let mut files = Vec::new();
    let mut dirs = Vec::new();
    for (i, e) in a.entries.iter().enumerate() {
        match &e.kind {
            EntryKind::File(f) => files.push((a.path_str(i), f.size)),
            EntryKind::Dir => dirs.push(a.path_str(i)),
        }
    }
    (files, dirs)
}

fn check_sizes(name: &str, version: Version, key: u32, want: &[(&str, u32)]) {
    let Some((data, a)) = load(name) else { return };
    assert_eq!(a.version, version, "{name}");
    assert_eq!(a.key, key, "{name}");
    let (files, _) = listing(&a);
    for (p, size) in want {
        let got = files
            .iter()
            .find(|(q, _)| q == p)
            .unwrap_or_else(|| panic!("{name}: no {p} in {files:?}"));
        assert_eq!(got.1, *size, "{name}: {p}");
    }
    for (i, f) in a.files() {
        let bytes = a
            .read(&data, f, &HpiLimits::default())
            .unwrap_or_else(|e| panic!("{name}: {}: {e}", a.path_str(i)));
        assert_eq!(bytes.len(), f.size as usize);
    }
}

#[test]
fn armimp_member_is_the_loose_gaf() {
    check_sizes(
        "ArmImp.ufo",
        Version::V1,
        0x7D,
        &[("textures/ArmImp.gaf", 46_276)],
    );
    let Some((data, a)) = load("ArmImp.ufo") else {
        return;
    };
    let i = a
        .find(b"TEXTURES/armimp.gaf")
        .expect("case-insensitive find");
    let EntryKind::File(f) = &a.entries[i].kind else {
        panic!("not a file")
    };
    assert_eq!(f.method, hpi::Method::Lz77);
    let loose = std::fs::read(archives().unwrap().join("../game/textures/ArmImp.gaf")).unwrap();
    assert_eq!(a.read(&data, f, &HpiLimits::default()).unwrap(), loose);
}

#[test]
fn example_ufo_members_and_map() {
    check_sizes(
        "Example.ufo",
        Version::V1,
        0xAF,
        &[
            ("Copyright.txt", 36),
            ("maps/example.tnt", 263_256),
            ("maps/example.ota", 2_267),
            ("camps/useonly/example.tdf", 0),
        ],
    );
    let Some((data, a)) = load("Example.ufo") else {
        return;
    };
    // Entries keep the archive's order: maps before camps.
    let roots: Vec<String> = a.children(None).map(|i| a.path_str(i)).collect();
    assert_eq!(roots, ["Copyright.txt", "maps", "camps"]);
    let i = a.find(b"maps/example.tnt").unwrap();
    let EntryKind::File(f) = &a.entries[i].kind else {
        panic!()
    };
    let loose = std::fs::read(archives().unwrap().join("../game/maps/example.tnt")).unwrap();
    assert_eq!(a.read(&data, f, &HpiLimits::default()).unwrap(), loose);
    assert_eq!(a.trailer, b"Copyright 1998 Cavedog Entertainment");
}

#[test]
fn tademo_members_and_empty_folders() {
    check_sizes(
        "TADEMO.ufo",
        Version::V1,
        0,
        &[
            ("anims/zzz_gadget.gaf", 12_440),
            ("features/corpses/zzz_dead.tdf", 605),
            ("objects3d/zzz_dead.3do", 2_710),
            ("objects3d/zzz.3do", 7_178),
            ("scripts/zzz.cob", 2_221),
            ("scripts/zzz.bos", 3_540),
            ("unitpicE/zzz.pcx", 10_304),
            ("unitsE/zzz.fbi", 1_042),
        ],
    );
    let Some((_, a)) = load("TADEMO.ufo") else {
        return;
    };
    let (files, dirs) = listing(&a);
    assert_eq!(files.len(), 8);
    for d in ["bitmaps", "downloadsE", "textures"] {
        assert!(dirs.iter().any(|x| x == d), "{d} in {dirs:?}");
        let i = a.find(d.as_bytes()).unwrap();
        assert_eq!(a.children(Some(i)).count(), 0);
    }
    // HPIPack's one unreferenced byte per empty folder.
    assert_eq!(a.dir_padding, [0, 0, 0]);
}

#[test]
fn ta3d_members() {
    let want: Vec<(String, u32)> = ["leaf1", "leaf2", "leaf3", "tree1", "tree2", "tree3"]
        .iter()
        .map(|n| (format!("objects3d/trees-{n}.3dm"), 182_749))
        .collect();
    let w: Vec<(&str, u32)> = want.iter().map(|(p, s)| (p.as_str(), *s)).collect();
    check_sizes("ta3d.hpi", Version::V1, 0, &w);
}

#[test]
fn kingdoms_archives() {
    check_sizes(
        "Aimtolerance Fix.hpi",
        Version::V2,
        0,
        &[
            ("units/tarfire.fbi", 1_456),
            ("units/verpult.fbi", 1_694),
            ("unitscb/tarfire.fbi", 1_456),
            ("unitscb/verpult.fbi", 1_694),
        ],
    );
    check_sizes(
        "TAK Enhanced.hpi",
        Version::V2,
        0,
        &[
            ("anims/version.bmp", 1_976),
            ("anims/version.gaf", 1_864),
            ("anims/version.pcx", 900),
            ("anims/version.psd", 59_684),
            ("guis/battlemenumulti.gui", 31_014),
            ("guis/battlemenusingle.gui", 24_127),
            ("guis/bod.gui", 4_335),
            ("guis/loadscreen.gui", 6_931),
            ("guis/mainmenu1.gui", 2_573),
            ("guis/selectgame.gui", 9_741),
        ],
    );
    check_sizes(
        "EnhancedTAK.hpi",
        Version::V2,
        0,
        &[
            ("ais/default.ai", 6_990),
            ("ais/default.txt", 6_990),
            ("anims/version.bmp", 1_752),
            ("anims/version.gaf", 3_084),
            ("anims/version.pcx", 900),
            ("anims/version.psd", 42_929),
            ("guis/battlemenumulti.gui", 31_013),
            ("scripts/araking.bos", 193_733),
            ("scripts/araking.cob", 97_911),
            ("scripts/arapries.bos", 102_933),
            ("scripts/arapries.cob", 53_613),
            ("scripts/MonarchsFix.hpi", 164_763),
            ("scripts/tarmage.bos", 271_503),
            ("scripts/tarmage.cob", 133_518),
            ("scripts/tarwitch.bos", 130_293),
            ("scripts/tarwitch.cob", 66_441),
            ("scripts/vermage.bos", 212_186),
            ("scripts/vermage.cob", 108_698),
            ("scripts/vermage2.bos", 205_996),
        ],
    );
    let Some((_, a)) = load("EnhancedTAK.hpi") else {
        return;
    };
    let (files, _) = listing(&a);
    assert_eq!(files.len(), 111);
    let cb: Vec<_> = files
        .iter()
        .filter(|(p, _)| p.starts_with("unitscb/") && p.ends_with(".fbi"))
        .collect();
    assert_eq!(cb.len(), 92);
    assert_eq!(cb.iter().map(|(_, s)| u64::from(*s)).sum::<u64>(), 145_128);
    assert!(cb.iter().all(|(_, s)| (700..=3_460).contains(s)));
}

#[test]
fn every_archive_rewrites_byte_for_byte() {
    let Some(dir) = archives() else { return };
    let mut n = 0;
    for p in common::files_with_ext(&dir, &[".hpi", ".ufo", ".ccx", ".gp3", ".gpf"]) {
        let data = std::fs::read(&p).unwrap();
        let a = hpi::parse(&data, &HpiLimits::default())
            .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        let out = hpi::write(&a.to_tree(&data).unwrap(), &WriteOptions::like(&a)).unwrap();
        assert!(
            out == data,
            "{} is not reproduced byte for byte",
            p.display()
        );
        // And with a fresh directory encoding (no reused v2 blocks) every member still reads.
        let fresh = hpi::write(
            &a.to_tree(&data).unwrap(),
            &WriteOptions {
                reuse_blocks: Vec::new(),
                ..WriteOptions::like(&a)
            },
        )
        .unwrap();
        let b = hpi::parse(&fresh, &HpiLimits::default()).unwrap();
        assert_eq!(listing(&a), listing(&b));
        for ((_, f), (_, g)) in a.files().zip(b.files()) {
            assert_eq!(
                a.read(&data, f, &HpiLimits::default()).unwrap(),
                b.read(&fresh, g, &HpiLimits::default()).unwrap()
            );
        }
        n += 1;
    }
    eprintln!("{n} corpus archives reproduced byte for byte");
}
