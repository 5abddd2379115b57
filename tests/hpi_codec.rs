//! Self-made archives in every variant, hand-assembled archives read from first principles,
//! repacks, and malformed inputs.

mod common;

use common::{hand_v1, noise};
use flate2::read::ZlibDecoder;
use std::io::Read;
use tafs::formats::hpi::{
    self, sqsh, Archive, EntryKind, HpiError, HpiLimits, Member, Method, Node, NodeKind, Version,
    WriteOptions,
};

/// (path, contents) of the test tree's files, and its folder paths, in order.
type Files = Vec<(String, Vec<u8>)>;

fn fixture() -> (Vec<Node>, Files, Vec<String>) {
    let mut deep = Node::file("bottom.txt", b"deep".to_vec());
    let mut deep_dirs = Vec::new();
    let mut path = String::new();
    for d in (0..20).rev() {
        deep = Node::dir(format!("d{d}"), vec![deep]);
    }
    for d in 0..20 {
        path.push_str(&format!("{}d{d}", if d == 0 { "" } else { "/" }));
        deep_dirs.push(path.clone());
    }
    let big = noise(200_000, 3);
    let tree = vec![
        Node::file("ReadMe.TXT", b"hello".to_vec()),
        Node::dir(
            "maps",
            vec![
                Node::file("Big.tnt", big.clone()),
                Node::file("empty.tdf", Vec::new()),
            ],
        ),
        Node::dir("empty", vec![]),
        Node::file("exact64k.bin", noise(65_536, 9)),
        deep,
    ];
    let files = vec![
        ("ReadMe.TXT".to_string(), b"hello".to_vec()),
        ("maps/Big.tnt".to_string(), big),
        ("maps/empty.tdf".to_string(), Vec::new()),
        ("exact64k.bin".to_string(), noise(65_536, 9)),
        (format!("{}/bottom.txt", deep_dirs[19]), b"deep".to_vec()),
    ];
    let mut dirs = vec!["maps".to_string(), "empty".to_string()];
    dirs.extend(deep_dirs);
    (tree, files, dirs)
}

fn opts(version: Version, method: Method, key: u32) -> WriteOptions {
    WriteOptions {
        method,
        key,
        ..if version == Version::V1 {
            WriteOptions::v1()
        } else {
            WriteOptions::v2()
        }
    }
}

fn read_all(data: &[u8], a: &Archive) -> Vec<(String, Vec<u8>)> {
    a.files()
        .map(|(i, f)| {
            (
                a.path_str(i),
                a.read(data, f, &HpiLimits::default()).unwrap(),
            )
        })
        .collect()
}

fn check_variant(version: Version, method: Method, key: u32) -> (Vec<u8>, Archive) {
    let (tree, files, dirs) = fixture();
    let data = hpi::write(&tree, &opts(version, method, key)).unwrap();
    let a = hpi::parse(&data, &HpiLimits::default()).unwrap();
    assert_eq!(a.version, version);
    assert_eq!(a.key, key);
    let mut got = read_all(&data, &a);
    let mut want = files;
    if version == Version::V2 {
        // v2 keeps a folder's files before its sub-folders' contents: same set.
        got.sort();
        want.sort();
    }
    assert_eq!(got, want, "{version:?} {method:?} {key:#x}");
    let got_dirs: Vec<String> = a
        .entries
        .iter()
        .enumerate()
        .filter(|(_, e)| e.kind == EntryKind::Dir)
        .map(|(i, _)| a.path_str(i))
        .collect();
    let mut gd = got_dirs.clone();
    let mut wd = dirs.clone();
    gd.sort();
    wd.sort();
    assert_eq!(gd, wd);
    if version == Version::V1 {
        assert_eq!(got_dirs, dirs, "v1 keeps directory order");
    }
    for (i, f) in a.files() {
        assert_eq!(
            f.method,
            if f.size == 0 && version == Version::V2 {
                Method::None
            } else {
                method
            },
            "{}",
            a.path_str(i)
        );
    }
    // Written again from its own stored members: byte for byte.
    let again = hpi::write(&a.to_tree(&data).unwrap(), &WriteOptions::like(&a)).unwrap();
    assert!(again == data, "{version:?} {method:?} rewrite differs");
    (data, a)
}

#[test]
fn v1_key0_zlib() {
    let (data, a) = check_variant(Version::V1, Method::Zlib, 0);
    // First principles: plain header, root node at 0x14 with 5 entries listed at 0x1C.
    assert_eq!(&data[..8], b"HAPI\x00\x00\x01\x00");
    assert_eq!(u32::from_le_bytes(data[16..20].try_into().unwrap()), 0x14);
    assert_eq!(u32::from_le_bytes(data[20..24].try_into().unwrap()), 5);
    assert_eq!(u32::from_le_bytes(data[24..28].try_into().unwrap()), 0x1C);
    assert!(data.ends_with(b"Copyright 1998 Cavedog Entertainment"));
    // The 200,000-byte member: 4 chunks (3 × 65,536 + 3,392), table entries = 19 + payload,
    // each chunk SQSH v2 / zlib / encrypted, payload a zlib stream after the inner transform.
    let i = a.find(b"maps/big.tnt").unwrap();
    let EntryKind::File(f) = a.entries[i].kind else {
        panic!()
    };
    let at = f.offset as usize;
    let table: Vec<u32> = (0..4)
        .map(|k| u32::from_le_bytes(data[at + 4 * k..at + 4 * k + 4].try_into().unwrap()))
        .collect();
    let mut pos = at + 16;
    let mut whole = Vec::new();
    for (k, &len) in table.iter().enumerate() {
        let c = &data[pos..pos + len as usize];
        assert_eq!(&c[..7], b"SQSH\x02\x02\x01");
        let csize = u32::from_le_bytes(c[7..11].try_into().unwrap());
        let dsize = u32::from_le_bytes(c[11..15].try_into().unwrap());
        assert_eq!(len, 19 + csize);
        assert_eq!(dsize, if k < 3 { 65_536 } else { 200_000 - 3 * 65_536 });
        let sum: u32 = c[19..].iter().map(|&b| u32::from(b)).sum();
        assert_eq!(sum, u32::from_le_bytes(c[15..19].try_into().unwrap()));
        let plain: Vec<u8> = c[19..]
            .iter()
            .enumerate()
            .map(|(i, &b)| b.wrapping_sub(i as u8) ^ i as u8)
            .collect();
        assert_eq!(&plain[..2], &[0x78, 0x9C]);
        ZlibDecoder::new(plain.as_slice())
            .read_to_end(&mut whole)
            .unwrap();
        pos += len as usize;
    }
    assert_eq!(whole, noise(200_000, 3));
}

#[test]
fn v1_key7d_lz77() {
    let (data, a) = check_variant(Version::V1, Method::Lz77, 0x7D);
    // Outer cipher: byte P is stored XOR 0xF5 XOR (P mod 256); root count 5 at offset 20.
    assert_eq!(data[20], 5 ^ 0xF5 ^ 20);
    assert_eq!(data[24], 0x1C ^ 0xF5 ^ 24);
    let i = a.find(b"readme.txt").unwrap();
    let EntryKind::File(f) = a.entries[i].kind else {
        panic!()
    };
    assert_eq!(f.method, Method::Lz77);
    // Deciphered, the member is a 1-entry table then an SQSH chunk with method 1.
    let at = f.offset as usize;
    let plain: Vec<u8> = (at..at + 11).map(|p| data[p] ^ 0xF5 ^ p as u8).collect();
    assert_eq!(&plain[4..10], b"SQSH\x02\x01");
}

#[test]
fn v1_stored() {
    let (data, a) = check_variant(Version::V1, Method::None, 0);
    let i = a.find(b"ReadMe.TXT").unwrap();
    let EntryKind::File(f) = a.entries[i].kind else {
        panic!()
    };
    assert_eq!(&data[f.offset as usize..f.offset as usize + 5], b"hello");
    assert_eq!(f.stored_len, 5);
}

#[test]
fn v1_other_key_and_methods() {
    check_variant(Version::V1, Method::Zlib, 0xAF);
    check_variant(Version::V1, Method::Lz77, 0);
}

#[test]
fn v2_zlib_and_raw() {
    let (data, a) = check_variant(Version::V2, Method::Zlib, 0);
    // Header: data from 0x20, no Last78; per-file checksum by the documented rule.
    assert_eq!(u32::from_le_bytes(data[24..28].try_into().unwrap()), 0x20);
    let i = a.find(b"ReadMe.TXT").unwrap();
    let EntryKind::File(f) = a.entries[i].kind else {
        panic!()
    };
    let (h, e, l, o) = (b'h', b'e', b'l', b'o');
    let c0 = h
        .wrapping_add(e)
        .wrapping_add(l)
        .wrapping_add(l)
        .wrapping_add(o);
    let c1 = h ^ e ^ l ^ l ^ o;
    let c2 = h
        .wrapping_add(e ^ 1)
        .wrapping_add(l ^ 2)
        .wrapping_add(l ^ 3)
        .wrapping_add(o ^ 4);
    let c3 = h ^ e.wrapping_add(1) ^ l.wrapping_add(2) ^ l.wrapping_add(3) ^ o.wrapping_add(4);
    assert_eq!(f.checksum, u32::from_le_bytes([c0, c1, c2, c3]));
    // One chunk for the 200,000-byte member, not encrypted.
    let i = a.find(b"maps/Big.tnt").unwrap();
    let EntryKind::File(f) = a.entries[i].kind else {
        panic!()
    };
    let c = &data[f.offset as usize..];
    assert_eq!(&c[..7], b"SQSH\x02\x02\x00");
    assert_eq!(u32::from_le_bytes(c[11..15].try_into().unwrap()), 200_000);
    check_variant(Version::V2, Method::None, 0);
}

#[test]
fn hand_made_v1_raw_member() {
    let d = hand_v1(b"a.txt", b"0123456789", b"trailer!");
    let a = hpi::parse(&d, &HpiLimits::default()).unwrap();
    assert_eq!(a.entries.len(), 1);
    assert_eq!(a.entries[0].name, b"a.txt");
    assert_eq!(
        read_all(&d, &a),
        [("a.txt".to_string(), b"0123456789".to_vec())]
    );
    assert_eq!(a.trailer, b"trailer!");
    let again = hpi::write(&a.to_tree(&d).unwrap(), &WriteOptions::like(&a)).unwrap();
    assert_eq!(again, d);
}

#[test]
fn unsafe_names_are_errors() {
    for bad in [&b".."[..], b".", b"a/b", b"..\\x", b""] {
        let d = hand_v1(bad, b"x", b"trailer!");
        match hpi::parse(&d, &HpiLimits::default()) {
            Err(HpiError::Malformed {
                structure, offset, ..
            }) => {
                assert_eq!(structure, "v1 entry name");
                assert_eq!(offset, 0x14 + 8 + 9);
            }
            other => panic!("{bad:?}: {other:?}"),
        }
        let tree = vec![Node::file(bad.to_vec(), b"x".to_vec())];
        assert!(matches!(
            hpi::write(&tree, &WriteOptions::v1()),
            Err(HpiError::Unwritable { .. })
        ));
    }
    let dup = vec![
        Node::file("A", b"1".to_vec()),
        Node::file("a", b"2".to_vec()),
    ];
    assert!(hpi::write(&dup, &WriteOptions::v2()).is_err());
}

#[test]
fn directory_loops_are_errors() {
    // v1: the root's only entry is a folder whose node is the root itself.
    let mut d = hand_v1(b"loop", b"", b"trailer!");
    d[0x1C + 4..0x1C + 8].copy_from_slice(&0x14u32.to_le_bytes());
    d[0x1C + 8] = 1;
    let e = hpi::parse(&d, &HpiLimits::default()).unwrap_err();
    assert!(e.to_string().contains("loop"), "{e}");
    // v2: a sub-folder record whose sub-folder array is itself.
    let data = hpi::write(
        &[Node::dir("x", vec![])],
        &WriteOptions {
            reuse_blocks: vec![],
            ..WriteOptions::v2()
        },
    )
    .unwrap();
    let a = hpi::parse(&data, &HpiLimits::default()).unwrap();
    let mut dir = a.blocks[0].plain.clone();
    // root at 0 → sub array at 20 (one record); make that record's sub array point at 20.
    dir[24..28].copy_from_slice(&20u32.to_le_bytes());
    dir[28..32].copy_from_slice(&1u32.to_le_bytes());
    let data2 = replace_v2_dir(&data, &dir);
    let e = hpi::parse(&data2, &HpiLimits::default()).unwrap_err();
    assert!(e.to_string().contains("loop"), "{e}");
}

/// Appends a raw (uncompressed) directory block and points the header at it.
fn replace_v2_dir(data: &[u8], dir: &[u8]) -> Vec<u8> {
    let mut d = data.to_vec();
    let at = d.len() as u32;
    d.extend_from_slice(dir);
    d[8..12].copy_from_slice(&at.to_le_bytes());
    d[12..16].copy_from_slice(&(dir.len() as u32).to_le_bytes());
    d
}

#[test]
fn deep_nesting_is_limited() {
    let (tree, _, _) = fixture();
    let data = hpi::write(&tree, &WriteOptions::v1()).unwrap();
    let tight = HpiLimits {
        max_depth: 10,
        ..HpiLimits::default()
    };
    assert!(matches!(
        hpi::parse(&data, &tight),
        Err(HpiError::Limit { .. })
    ));
    let few = HpiLimits {
        max_entries: 5,
        ..HpiLimits::default()
    };
    assert!(matches!(
        hpi::parse(&data, &few),
        Err(HpiError::Limit { .. })
    ));
}

#[test]
fn bank_and_garbage_are_refused() {
    assert_eq!(
        hpi::parse(b"HAPIBANK\0\0\0\0", &HpiLimits::default()),
        Err(HpiError::Bank)
    );
    assert!(matches!(
        hpi::parse(b"GAF!xxxx", &HpiLimits::default()),
        Err(HpiError::NotHpi { .. })
    ));
    assert!(matches!(
        hpi::parse(b"HAPI\0\0\x03\0", &HpiLimits::default()),
        Err(HpiError::UnknownVersion { .. })
    ));
}

fn all_members_fail_or_work(data: &[u8]) {
    if let Ok(a) = hpi::parse(data, &HpiLimits::default()) {
        for (_, f) in a.files() {
            let _ = a.read(data, f, &HpiLimits::default());
        }
        let _ = a.to_tree(data);
    }
}

#[test]
fn truncations_never_panic() {
    for (v, m, k) in [
        (Version::V1, Method::Lz77, 0x7D),
        (Version::V1, Method::Zlib, 0),
        (Version::V2, Method::Zlib, 0),
    ] {
        let tree = vec![Node::dir(
            "d",
            vec![
                Node::file("f", noise(70_000, 1)),
                Node::file("g", b"gg".to_vec()),
            ],
        )];
        let data = hpi::write(&tree, &opts(v, m, k)).unwrap();
        for n in (0..data.len())
            .step_by(97)
            .chain(data.len().saturating_sub(200)..data.len())
        {
            all_members_fail_or_work(&data[..n]);
        }
        // Without the trailer everything still reads; shorter than the last member, reads fail.
        let t = opts(v, m, k).trailer.len();
        let cut = &data[..data.len() - t - 1];
        let bad = hpi::parse(cut, &HpiLimits::default()).map(|a| {
            a.files()
                .all(|(_, f)| a.read(cut, f, &HpiLimits::default()).is_ok())
        });
        assert_ne!(bad, Ok(true), "{v:?} {m:?}");
    }
}

fn v1_member(data: &[u8]) -> (Archive, hpi::FileInfo) {
    let a = hpi::parse(data, &HpiLimits::default()).unwrap();
    let f = *a.files().next().unwrap().1;
    (a, f)
}

#[test]
fn bad_checksums_and_lying_sizes() {
    let content = noise(100_000, 5);
    let tree = vec![Node::file("f", content.clone())];
    let data = hpi::write(&tree, &WriteOptions::v1()).unwrap();
    let (_, f) = v1_member(&data);
    let at = f.offset as usize;
    let chunk0 = at + 8; // 2-entry table
    let lim = HpiLimits::default();

    // A flipped payload byte: the chunk checksum catches it.
    let mut d = data.clone();
    d[chunk0 + 19 + 10] ^= 0x40;
    let (a, f) = v1_member(&d);
    match a.read(&d, &f, &lim) {
        Err(HpiError::Checksum { offset, .. }) => assert_eq!(offset as usize, chunk0),
        other => panic!("{other:?}"),
    }
    // A flipped checksum field.
    let mut d = data.clone();
    d[chunk0 + 15] ^= 1;
    let (a, f) = v1_member(&d);
    assert!(matches!(
        a.read(&d, &f, &lim),
        Err(HpiError::Checksum { .. })
    ));
    // A chunk's declared decompressed size that lies.
    let mut d = data.clone();
    d[chunk0 + 11..chunk0 + 15].copy_from_slice(&65_535u32.to_le_bytes());
    let (a, f) = v1_member(&d);
    assert!(
        matches!(a.read(&d, &f, &lim), Err(HpiError::Malformed { .. })),
        "{:?}",
        a.read(&d, &f, &lim)
    );
    // A compressed size longer than the chunk's table entry.
    let mut d = data.clone();
    let cs = u32::from_le_bytes(d[chunk0 + 7..chunk0 + 11].try_into().unwrap());
    d[chunk0 + 7..chunk0 + 11].copy_from_slice(&(cs + 5000).to_le_bytes());
    let (a, f) = v1_member(&d);
    assert!(a.read(&d, &f, &lim).is_err());
    // A table entry longer than the file: the directory no longer fits.
    let mut d = data.clone();
    d[at..at + 4].copy_from_slice(&0x7FFF_FFF0u32.to_le_bytes());
    assert!(matches!(
        hpi::parse(&d, &lim),
        Err(HpiError::Truncated { .. })
    ));
    // A table entry shorter than an SQSH header.
    let mut d = data.clone();
    let t0 = u32::from_le_bytes(d[at..at + 4].try_into().unwrap());
    let t1 = u32::from_le_bytes(d[at + 4..at + 8].try_into().unwrap());
    d[at..at + 4].copy_from_slice(&3u32.to_le_bytes());
    d[at + 4..at + 8].copy_from_slice(&(t0 + t1 - 3).to_le_bytes());
    let (a, f) = v1_member(&d);
    assert!(matches!(
        a.read(&d, &f, &lim),
        Err(HpiError::Malformed { .. })
    ));
    // A record size that lies (declares fewer bytes than the chunks hold).
    let tree = vec![Node::file("f", content)];
    let d = hpi::write(&tree, &WriteOptions::v2()).unwrap();
    let a = hpi::parse(&d, &lim).unwrap();
    let mut dir = a.blocks[0].plain.clone();
    // root (20) + file record: size at +8.
    dir[20 + 8..20 + 12].copy_from_slice(&99_999u32.to_le_bytes());
    let d2 = replace_v2_dir(&d, &dir);
    let a = hpi::parse(&d2, &lim).unwrap();
    let f = *a.files().next().unwrap().1;
    assert!(a.read(&d2, &f, &lim).is_err());
}

#[test]
fn bomb_chunks_are_limited() {
    // 64 MiB of zeros in one v2 chunk: a ratio over 1000, refused by a tight ratio budget
    // and by a member size budget before anything is inflated.
    let zeros = vec![0u8; 64 << 20];
    let d = hpi::write(&[Node::file("z", zeros)], &WriteOptions::v2()).unwrap();
    let a = hpi::parse(&d, &HpiLimits::default()).unwrap();
    let f = *a.files().next().unwrap().1;
    assert!(f.ratio() > 500.0, "{}", f.ratio());
    let tight = HpiLimits {
        max_ratio: 100,
        ..HpiLimits::default()
    };
    assert!(matches!(
        a.read(&d, &f, &tight),
        Err(HpiError::Limit { .. })
    ));
    let small = HpiLimits {
        max_member_size: 1 << 20,
        ..HpiLimits::default()
    };
    assert!(matches!(
        a.read(&d, &f, &small),
        Err(HpiError::Limit { .. })
    ));
    // A chunk claiming 4 GiB from a few bytes: refused by the default ratio.
    let mut c = sqsh::encode(b"tiny", Method::Zlib, false).unwrap();
    c[11..15].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(matches!(
        sqsh::decode(&c, 0, "t", None, &HpiLimits::default()),
        Err(HpiError::Limit { .. })
    ));
}

#[test]
fn repack_keeps_other_members_verbatim() {
    for o in [
        WriteOptions::v1(),
        opts(Version::V1, Method::Lz77, 0x7D),
        WriteOptions::v2(),
    ] {
        let (tree, _, _) = fixture();
        let data = hpi::write(&tree, &o).unwrap();
        let a = hpi::parse(&data, &HpiLimits::default()).unwrap();
        let mut t = a.to_tree(&data).unwrap();
        // Replace maps/Big.tnt.
        let maps = t.iter_mut().find(|n| n.name == b"maps").unwrap();
        let NodeKind::Dir(maps) = &mut maps.kind else {
            panic!()
        };
        maps[0].kind = NodeKind::File(Member::Data {
            bytes: b"new map".to_vec(),
            date: 7,
        });
        let out = hpi::write(&t, &WriteOptions::like(&a)).unwrap();
        let b = hpi::parse(&out, &HpiLimits::default()).unwrap();
        for (i, f) in a.files() {
            let p = a.path(i);
            let j = b.find(&p).unwrap();
            let EntryKind::File(g) = b.entries[j].kind else {
                panic!()
            };
            if p == b"maps/Big.tnt" {
                assert_eq!(b.read(&out, &g, &HpiLimits::default()).unwrap(), b"new map");
            } else {
                assert_eq!(
                    a.stored_member(&data, f).unwrap(),
                    b.stored_member(&out, &g).unwrap(),
                    "{}",
                    a.path_str(i)
                );
            }
        }
    }
}

#[test]
fn stored_member_of_other_version_is_refused() {
    let d = hpi::write(&[Node::file("f", b"abc".to_vec())], &WriteOptions::v2()).unwrap();
    let a = hpi::parse(&d, &HpiLimits::default()).unwrap();
    let t = a.to_tree(&d).unwrap();
    assert!(matches!(
        hpi::write(&t, &WriteOptions::v1()),
        Err(HpiError::Unwritable { .. })
    ));
    assert!(hpi::write(
        &[],
        &WriteOptions {
            key: 0x100,
            ..WriteOptions::v1()
        }
    )
    .is_err());
}
