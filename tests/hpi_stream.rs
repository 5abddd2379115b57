//! The streaming archive writer (`hpi::write_to`): members copied range by range from the
//! archive they are in ([`Member::InPlace`]) or fetched only when written
//! ([`Member::Deferred`]) give the same bytes as the in-memory writer; `tafs hpi pack` holds a
//! bounded window of files, not the whole folder.

mod common;

use common::{children_max_rss_mib, noise};
use std::io::Cursor;
use std::sync::Arc;
use tafs::formats::hpi::{
    self, Deferred, HpiError, HpiLimits, InMemory, Member, Node, NodeKind, WriteOptions,
};

fn tree() -> Vec<Node> {
    vec![
        Node::dir(
            "anims",
            vec![
                Node::file("big.gaf", noise(200_000, 3)),
                Node::file("empty.gaf", Vec::new()),
            ],
        ),
        Node::file("readme.txt", b"hello".to_vec()),
        Node::dir(
            "units",
            vec![Node::dir(
                "deep",
                vec![Node::file("ARMCOM.FBI", noise(70_000, 9))],
            )],
        ),
    ]
}

/// Every option set worth writing: both versions, every method, v1 with and without a key.
fn variants() -> Vec<(&'static str, WriteOptions)> {
    let mut out = Vec::new();
    for (name, method) in [
        ("zlib", hpi::Method::Zlib),
        ("lz77", hpi::Method::Lz77),
        ("raw", hpi::Method::None),
    ] {
        let mut v1 = WriteOptions::v1();
        v1.method = method;
        out.push((name, v1.clone()));
        v1.key = 0x7D;
        out.push((name, v1));
        let mut v2 = WriteOptions::v2();
        v2.method = method;
        out.push((name, v2));
    }
    out
}

fn stream(tree: &[Node], opts: &WriteOptions, src: Option<&[u8]>) -> Result<Vec<u8>, HpiError> {
    let mut c = Cursor::new(Vec::new());
    let src = src.map(InMemory);
    let n = hpi::write_to(
        tree,
        opts,
        src.as_ref().map(|s| s as &dyn hpi::Source),
        &mut c,
    )?;
    let out = c.into_inner();
    assert_eq!(n, out.len() as u64);
    Ok(out)
}

/// `tree` with every file made [`Member::Deferred`] (fetched from a copy of its bytes).
fn deferred(tree: &[Node]) -> Vec<Node> {
    tree.iter()
        .map(|n| Node {
            name: n.name.clone(),
            kind: match &n.kind {
                NodeKind::Dir(k) => NodeKind::Dir(deferred(k)),
                NodeKind::File(Member::Data { bytes, date }) => {
                    let b = bytes.clone();
                    NodeKind::File(Member::Deferred(Deferred {
                        what: String::from_utf8_lossy(&n.name).into_owned(),
                        date: *date,
                        len: b.len() as u64,
                        fetch: Arc::new(move || Ok(b.clone())),
                    }))
                }
                NodeKind::File(m) => NodeKind::File(m.clone()),
            },
        })
        .collect()
}

#[test]
fn deferred_and_streamed_members_give_the_in_memory_writers_bytes() {
    for (name, opts) in variants() {
        let whole = hpi::write(&tree(), &opts).unwrap();
        assert_eq!(stream(&tree(), &opts, None).unwrap(), whole, "{name}");
        assert_eq!(
            stream(&deferred(&tree()), &opts, None).unwrap(),
            whole,
            "{name} deferred"
        );
        // and it is an archive holding the tree's files
        let a = hpi::parse(&whole, &HpiLimits::default()).unwrap();
        let (_, f) = a
            .files()
            .find(|(i, _)| a.path(*i) == b"units/deep/ARMCOM.FBI")
            .unwrap();
        assert_eq!(
            hpi::read_member(&whole, &a, f).unwrap(),
            noise(70_000, 9),
            "{name}"
        );
    }
}

/// Repacking `data` with every member copied in place gives the archive back byte for byte,
/// the same bytes as the in-memory repack of its stored members.
fn repacks_in_place(what: &str, data: &[u8]) {
    let a = hpi::parse(data, &HpiLimits::default()).unwrap_or_else(|e| panic!("{what}: {e}"));
    let opts = WriteOptions::like(&a);
    let in_memory = hpi::write(&a.to_tree(data).unwrap(), &opts).unwrap();
    let streamed = stream(&a.to_tree_in_place().unwrap(), &opts, Some(data)).unwrap();
    assert!(streamed == in_memory, "{what}: in-place repack differs");
    assert!(
        streamed == data,
        "{what}: in-place repack is not the original"
    );
}

#[test]
fn an_in_place_repack_of_an_unchanged_archive_is_the_archive() {
    for (name, opts) in variants() {
        let data = hpi::write(&tree(), &opts).unwrap();
        repacks_in_place(name, &data);
    }
    let Some(c) = common::corpus() else {
        return;
    };
    let archives = common::files_with_ext(&c.join("archives"), &[".hpi", ".ufo", ".ccx", ".gp3"]);
    assert!(!archives.is_empty());
    for p in archives {
        let data = std::fs::read(&p).unwrap();
        repacks_in_place(&p.display().to_string(), &data);
    }
}

#[test]
fn in_place_members_change_cipher_and_sit_beside_new_content() {
    let mut keyed = WriteOptions::v1();
    keyed.key = 0x7D;
    let data = hpi::write(&tree(), &keyed).unwrap();
    let a = hpi::parse(&data, &HpiLimits::default()).unwrap();
    let mut t = a.to_tree_in_place().unwrap();
    // a new member in front moves every stored one
    t.insert(0, Node::file("aaa_first.txt", noise(90_000, 5)));
    let mut plain = keyed.clone();
    plain.key = 0;
    for opts in [keyed, plain] {
        let out = stream(&t, &opts, Some(&data)).unwrap();
        let b = hpi::parse(&out, &HpiLimits::default()).unwrap();
        let files: Vec<(Vec<u8>, Vec<u8>)> = b
            .files()
            .map(|(i, f)| (b.path(i), hpi::read_member(&out, &b, f).unwrap()))
            .collect();
        let want: Vec<(Vec<u8>, Vec<u8>)> = vec![
            (b"aaa_first.txt".to_vec(), noise(90_000, 5)),
            (b"anims/big.gaf".to_vec(), noise(200_000, 3)),
            (b"anims/empty.gaf".to_vec(), Vec::new()),
            (b"readme.txt".to_vec(), b"hello".to_vec()),
            (b"units/deep/ARMCOM.FBI".to_vec(), noise(70_000, 9)),
        ];
        assert_eq!(files, want, "key {:#x}", opts.key);
    }
    // without the archive to copy from, the writer refuses
    let e = stream(&t, &WriteOptions::v1(), None).unwrap_err();
    assert!(e.to_string().contains("without the archive"), "{e}");
}

#[test]
fn a_deferred_member_that_cannot_be_fetched_names_itself() {
    let t = vec![Node {
        name: b"gone.tdf".to_vec(),
        kind: NodeKind::File(Member::Deferred(Deferred {
            what: "src/gone.tdf".into(),
            date: 0,
            len: 10,
            fetch: Arc::new(|| Err(std::io::Error::other("vanished"))),
        })),
    }];
    let e = stream(&t, &WriteOptions::v1(), None).unwrap_err();
    let m = e.to_string();
    assert!(m.contains("src/gone.tdf") && m.contains("vanished"), "{m}");
}

#[test]
fn packing_a_folder_holds_a_window_of_files_not_the_folder() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    std::fs::create_dir_all(src.join("sounds")).unwrap();
    // 96 MiB of hardly compressible files: all in memory would peak far above 96 MiB
    for i in 0..96u32 {
        std::fs::write(
            src.join(format!("sounds/s{i:03}.wav")),
            noise(1 << 20, i + 1),
        )
        .unwrap();
    }
    let out = t.path().join("x.ufo");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_tafs"))
        .args(["hpi", "pack"])
        .arg(&src)
        .arg("-t")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rss = children_max_rss_mib();
    assert!(rss < 64, "pack of 96 MiB peaked at {rss} MiB");
    let data = std::fs::read(&out).unwrap();
    let a = hpi::parse(&data, &HpiLimits::default()).unwrap();
    assert_eq!(a.files().count(), 96);
    let (_, f) = a
        .files()
        .find(|(i, _)| a.path(*i) == b"sounds/s050.wav")
        .unwrap();
    assert_eq!(hpi::read_member(&data, &a, f).unwrap(), noise(1 << 20, 51));
}
