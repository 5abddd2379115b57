//! Unit tests of the codec internals; archive-level tests live in tests/hpi*.rs.

use super::*;

#[test]
fn outer_key_rotates() {
    assert_eq!(outer_key(0x7D), Some(0xF5));
    assert_eq!(outer_key(0xAF), Some(0xBE));
    assert_eq!(outer_key(0), None);
}

#[test]
fn inner_transform_inverts() {
    // plain 0 at index i is stored as (0 XOR i) + i = 2i mod 256.
    let mut b = vec![0u8; 512];
    b[300] = 0xAB;
    let orig = b.clone();
    sqsh::inner_encode(&mut b);
    assert_eq!(b[1], 2);
    assert_eq!(b[200], 144);
    // 0xAB at 300 (i = 44 = 0x2C): (0xAB ^ 0x2C) + 0x2C = 0x87 + 0x2C = 0xB3
    assert_eq!(b[300], 0xB3);
    sqsh::inner_decode(&mut b);
    assert_eq!(b, orig);
}

#[test]
fn v2_checksum_by_hand() {
    // b = [1, 2]: c0 = 3, c1 = 1^2 = 3, c2 = (1^0)+(2^1) = 1+3 = 4, c3 = (1+0)^(2+1) = 1^3 = 2
    assert_eq!(v2_checksum(&[1, 2]), 3 | 3 << 8 | 4 << 16 | 2 << 24);
}

/// A source that records every range read through it.
struct Recording<'a> {
    data: &'a [u8],
    reads: std::cell::RefCell<Vec<(u64, u64)>>,
}

impl Source for Recording<'_> {
    fn len(&self) -> u64 {
        self.data.len() as u64
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
        self.reads.borrow_mut().push((offset, buf.len() as u64));
        InMemory(self.data).read_at(offset, buf)
    }
}

fn recording(data: &[u8]) -> Recording<'_> {
    Recording {
        data,
        reads: Default::default(),
    }
}

/// Incompressible bytes, so that members are large in the archive.
fn noise(n: usize, seed: u64) -> Vec<u8> {
    let mut s = seed | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s as u8
        })
        .collect()
}

fn variants() -> Vec<WriteOptions> {
    vec![
        WriteOptions {
            key: 0x7D,
            ..WriteOptions::v1()
        },
        WriteOptions {
            method: Method::Lz77,
            ..WriteOptions::v1()
        },
        WriteOptions {
            method: Method::None,
            key: 0xAF,
            ..WriteOptions::v1()
        },
        WriteOptions::v2(),
    ]
}

fn big_tree() -> Vec<Node> {
    vec![
        Node::file("a.bin", noise(300_000, 1)),
        Node::dir(
            "d",
            vec![
                Node::file("b.txt", b"small".to_vec()),
                Node::file("empty", Vec::new()),
            ],
        ),
        Node::file("c.bin", noise(140_000, 2)),
    ]
}

#[test]
fn parse_from_reads_directory_only() {
    for opts in variants() {
        let data = write(&big_tree(), &opts).unwrap();
        let src = recording(&data);
        let a = parse_from(&src, &HpiLimits::default()).unwrap();
        assert_eq!(a, parse(&data, &HpiLimits::default()).unwrap());
        let read: u64 = src.reads.borrow().iter().map(|r| r.1).sum();
        // the members hold ~440 kB of noise; header, directory, tables and trailer are small
        assert!(read < 4096, "{:?}: {read} bytes read", opts.version);
        for (_, f) in a.files() {
            for &(off, len) in src.reads.borrow().iter() {
                // never a chunk's payload: at most a member's first 19 bytes (v2 SQSH header)
                // or its chunk size table (v1)
                let inside = off >= u64::from(f.offset) + 19 + 4 * chunk_len(f)
                    && off < u64::from(f.offset) + f.stored_len;
                assert!(!inside || len == 0, "read {off:#x}+{len} inside a member");
            }
        }
    }
}

/// Bytes of a v1 member's chunk size table.
fn chunk_len(f: &FileInfo) -> u64 {
    u64::from(f.size).div_ceil(u64::from(CHUNK_SIZE))
}

#[test]
fn read_to_reads_only_the_member_one_chunk_at_a_time() {
    for opts in variants() {
        let data = write(&big_tree(), &opts).unwrap();
        let a = parse(&data, &HpiLimits::default()).unwrap();
        for (_, f) in a.files() {
            let src = recording(&data);
            let mut out = Vec::new();
            let n = a.read_to(&src, f, &HpiLimits::default(), &mut out).unwrap();
            assert_eq!(n, u64::from(f.size));
            assert_eq!(out, a.read(&data, f, &HpiLimits::default()).unwrap());
            let (start, end) = (u64::from(f.offset), u64::from(f.offset) + f.stored_len);
            let reads = src.reads.borrow();
            for &(off, len) in reads.iter() {
                assert!(off >= start && off + len <= end, "{off:#x}+{len} outside");
                if opts.version == Version::V1 {
                    // a table or one chunk (64 KiB of noise grows by up to 1/8 in LZ77)
                    assert!(len <= u64::from(CHUNK_SIZE) * 9 / 8 + 64, "{len}-byte read");
                }
            }
            let total: u64 = reads.iter().map(|r| r.1).sum();
            assert_eq!(total, f.stored_len);
        }
    }
}

/// A source whose reads fail.
struct Failing(u64);

impl Source for Failing {
    fn len(&self) -> u64 {
        self.0
    }

    fn read_at(&self, _: u64, _: &mut [u8]) -> std::io::Result<()> {
        Err(std::io::Error::other("device gone"))
    }
}

/// An output that refuses every write.
struct Full;

impl std::io::Write for Full {
    fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
        Err(std::io::Error::other("disk full"))
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn source_and_output_errors_are_io_errors() {
    let data = write(&big_tree(), &WriteOptions::v1()).unwrap();
    let a = parse(&data, &HpiLimits::default()).unwrap();
    let (_, f) = a.files().next().unwrap();
    let lim = HpiLimits::default();
    let e = a
        .read_to(&Failing(data.len() as u64), f, &lim, &mut Vec::new())
        .unwrap_err();
    assert!(matches!(&e, HpiError::Io { message, .. } if message.contains("device gone")));
    let e = parse_from(&Failing(data.len() as u64), &lim).unwrap_err();
    assert!(matches!(e, HpiError::Io { offset: 0, .. }));
    let e = a.read_to(&InMemory(&data), f, &lim, &mut Full).unwrap_err();
    assert!(matches!(&e, HpiError::Io { message, .. } if message.contains("disk full")));
}

#[test]
fn member_over_the_limit_is_refused_before_reading() {
    let data = write(&big_tree(), &WriteOptions::v1()).unwrap();
    let a = parse(&data, &HpiLimits::default()).unwrap();
    let (_, f) = a.files().next().unwrap();
    let lim = HpiLimits {
        max_member_size: 100_000,
        ..HpiLimits::default()
    };
    let src = recording(&data);
    let e = a.read_to(&src, f, &lim, &mut Vec::new()).unwrap_err();
    assert!(
        matches!(&e, HpiError::Limit { message, .. } if message.contains("max_member_size 100000")),
        "{e}"
    );
    assert!(src.reads.borrow().is_empty());
}

#[test]
fn case_duplicates_only_where_the_archive_had_them() {
    let tree = vec![
        Node::file("ABC.TDF", b"upper".to_vec()),
        Node::dir("d", vec![Node::file("x", b"x".to_vec())]),
        Node::file("abc.tdf", b"lower".to_vec()),
    ];
    // a new tree with such names is refused
    assert!(write(&tree, &WriteOptions::v1()).is_err());
    let keep = WriteOptions {
        keep_duplicate_names: true,
        ..WriteOptions::v1()
    };
    let data = write(&tree, &keep).unwrap();
    let a = parse(&data, &HpiLimits::default()).unwrap();
    assert!(a.has_duplicate_names());
    // a repack like the archive keeps both
    assert!(WriteOptions::like(&a).keep_duplicate_names);
    let clean = write(&big_tree(), &WriteOptions::v1()).unwrap();
    let b = parse(&clean, &HpiLimits::default()).unwrap();
    assert!(!b.has_duplicate_names());
    assert!(!WriteOptions::like(&b).keep_duplicate_names);
}
