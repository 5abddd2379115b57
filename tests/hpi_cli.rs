//! `tafs hpi …` end to end through the binary: pack → extract round trips in every variant,
//! corpus extraction, hostile names, case duplicates, symlinks in the target.

mod common;

use common::{hand_v1, tafs};
use std::collections::BTreeMap;
use std::path::Path;
use tafs::formats::hpi::{self, HpiLimits, Node, WriteOptions};

fn ok(args: &[&str]) -> (String, String) {
    let o = tafs(args);
    assert!(
        o.status.success(),
        "tafs {args:?} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    (
        String::from_utf8(o.stdout).unwrap(),
        String::from_utf8(o.stderr).unwrap(),
    )
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// Every file (relative path → bytes) and folder (→ None) under `dir`.
fn snapshot(dir: &Path) -> BTreeMap<String, Option<Vec<u8>>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let rel = e
                .path()
                .strip_prefix(dir)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if e.file_type().unwrap().is_dir() {
                out.insert(rel, None);
                stack.push(e.path());
            } else {
                out.insert(rel, Some(std::fs::read(e.path()).unwrap()));
            }
        }
    }
    out
}

fn make_source(dir: &Path) {
    std::fs::create_dir_all(dir.join("maps/deep/er")).unwrap();
    std::fs::create_dir_all(dir.join("Empty")).unwrap();
    std::fs::write(dir.join("ReadMe.txt"), b"hello").unwrap();
    std::fs::write(dir.join("maps/zero.tdf"), b"").unwrap();
    let big: Vec<u8> = (0..150_000u32)
        .map(|i| (i % 251) as u8 ^ (i / 4096) as u8)
        .collect();
    std::fs::write(dir.join("maps/deep/er/big.bin"), big).unwrap();
}

#[test]
fn pack_extract_round_trips() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    make_source(&src);
    let want = snapshot(&src);
    for (i, args) in [
        &["--format", "v1"][..],
        &["--format", "v1", "--method", "lz77", "--key", "0x7D"],
        &["--format", "v1", "--method", "none"],
        &["--format", "v1", "--key", "175"],
        &["--format", "v2"],
        &["--format", "v2", "--method", "none"],
    ]
    .iter()
    .enumerate()
    {
        let arc = t.path().join(format!("a{i}.hpi"));
        let mut a = vec!["hpi", "pack", p(&src), "-t", p(&arc)];
        a.extend_from_slice(args);
        ok(&a);
        let out = t.path().join(format!("out{i}"));
        ok(&["hpi", "extract", p(&arc), "-t", p(&out)]);
        assert_eq!(snapshot(&out), want, "{args:?}");
        let (list, _) = ok(&["hpi", "list", p(&arc)]);
        assert!(
            list.lines()
                .any(|l| l.trim_start().starts_with("150000 ")
                    && l.ends_with("maps/deep/er/big.bin")),
            "{list}"
        );
        assert!(list.lines().any(|l| l.ends_with("Empty/")), "{list}");
        let (info, _) = ok(&["hpi", "info", p(&arc)]);
        assert!(info.contains("files:      3"), "{info}");
    }
    // A pattern selects a folder's contents only.
    let arc = t.path().join("a0.hpi");
    let out = t.path().join("sel");
    ok(&["hpi", "extract", p(&arc), "MAPS/DEEP", "-t", p(&out)]);
    let got = snapshot(&out);
    assert!(got.contains_key("maps/deep/er/big.bin"));
    assert!(!got.contains_key("ReadMe.txt"));
    assert!(
        !tafs(&["hpi", "extract", p(&arc), "nothing*", "-t", p(&out)])
            .status
            .success()
    );
    // Keys above 0xFF and keys on v2 are refused.
    assert!(
        !tafs(&["hpi", "pack", p(&src), "-t", p(&arc), "--key", "256"])
            .status
            .success()
    );
    assert!(!tafs(&[
        "hpi",
        "pack",
        p(&src),
        "-t",
        p(&t.path().join("k.hpi")),
        "--format",
        "v2",
        "--key",
        "1"
    ])
    .status
    .success());
    assert!(!t.path().join("k.hpi").exists());
}

#[test]
fn corpus_archives_extract() {
    let Some(c) = common::corpus() else { return };
    let dir = c.join("archives");
    if !dir.is_dir() {
        eprintln!("note: corpus/archives is absent; skipped");
        return;
    }
    let t = tempfile::tempdir().unwrap();
    for arc in common::files_with_ext(&dir, &[".hpi", ".ufo"]) {
        let out = t.path().join(arc.file_name().unwrap());
        ok(&["hpi", "extract", p(&arc), "-t", p(&out)]);
        let data = std::fs::read(&arc).unwrap();
        let a = hpi::parse(&data, &HpiLimits::default()).unwrap();
        let got = snapshot(&out);
        assert_eq!(
            got.values().filter(|v| v.is_some()).count(),
            a.files().count(),
            "{}",
            arc.display()
        );
        for (i, f) in a.files() {
            let bytes = got
                .get(&a.path_str(i))
                .cloned()
                .flatten()
                .unwrap_or_else(|| panic!("{}", a.path_str(i)));
            assert_eq!(bytes.len(), f.size as usize);
        }
    }
    let gaf = std::fs::read(t.path().join("ArmImp.ufo/textures/ArmImp.gaf")).unwrap();
    assert_eq!(
        gaf,
        std::fs::read(c.join("game/textures/ArmImp.gaf")).unwrap()
    );
    let tnt = std::fs::read(t.path().join("Example.ufo/maps/example.tnt")).unwrap();
    assert_eq!(tnt, std::fs::read(c.join("game/maps/example.tnt")).unwrap());
}

#[test]
fn hostile_names_never_leave_the_target() {
    let t = tempfile::tempdir().unwrap();
    let target = t.path().join("inside");
    for (i, bad) in [&b".."[..], b"../escape", b"/etc/passwd", b"a\\..\\b"]
        .iter()
        .enumerate()
    {
        let arc = t.path().join(format!("bad{i}.hpi"));
        std::fs::write(&arc, hand_v1(bad, b"pwned", b"")).unwrap();
        let o = tafs(&["hpi", "extract", p(&arc), "-t", p(&target)]);
        assert!(!o.status.success(), "{bad:?}");
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("unsafe name"),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    assert!(!t.path().join("escape").exists());
    // Allowed but odd bytes are sanitised per component; nothing outside `target`.
    let arc = t.path().join("odd.hpi");
    std::fs::write(&arc, hand_v1(b"a:b*?\x01.txt", b"odd", b"")).unwrap();
    let (_, err) = ok(&["hpi", "extract", p(&arc), "-t", p(&target)]);
    assert!(err.contains("written as a_b___.txt"), "{err}");
    assert_eq!(std::fs::read(target.join("a_b___.txt")).unwrap(), b"odd");
    let names: Vec<_> = std::fs::read_dir(t.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 6, "{names:?}"); // 5 archives and `inside`
}

#[test]
fn case_duplicates_are_reported_and_symlinks_refused() {
    let t = tempfile::tempdir().unwrap();
    // The writer refuses names differing only in case, so write "X.txt" and "y.txt" and
    // patch the second name in the (unciphered) directory to "x.txt".
    let tree = vec![
        Node::file("X.txt", b"upper".to_vec()),
        Node::file("y.txt", b"lower".to_vec()),
    ];
    let mut data = hpi::write(
        &tree,
        &WriteOptions {
            method: hpi::Method::None,
            ..WriteOptions::v1()
        },
    )
    .unwrap();
    let at = data.windows(6).position(|w| w == b"y.txt\0").unwrap();
    data[at] = b'x';
    let arc = t.path().join("dup.hpi");
    std::fs::write(&arc, &data).unwrap();
    let out = t.path().join("out");
    let (_, err) = ok(&["hpi", "extract", p(&arc), "-t", p(&out)]);
    assert!(err.contains("differ only in case"), "{err}");
    assert_eq!(std::fs::read(out.join("X.txt")).unwrap(), b"upper");
    assert_eq!(std::fs::read(out.join("x.txt")).unwrap(), b"lower");
    // A symlink planted in the target is not written through.
    let tree = vec![Node::dir("d", vec![Node::file("f", b"data".to_vec())])];
    let arc = t.path().join("s.hpi");
    std::fs::write(&arc, hpi::write(&tree, &WriteOptions::v1()).unwrap()).unwrap();
    let out = t.path().join("sym");
    let elsewhere = t.path().join("elsewhere");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, out.join("d")).unwrap();
    assert!(!tafs(&["hpi", "extract", p(&arc), "-t", p(&out)])
        .status
        .success());
    assert!(!elsewhere.join("f").exists());
}

#[test]
fn damaged_member_fails_extract_but_others_are_written() {
    let t = tempfile::tempdir().unwrap();
    let tree = vec![
        Node::file("a", vec![7u8; 5000]),
        Node::file("b", vec![9u8; 5000]),
    ];
    let mut data = hpi::write(&tree, &WriteOptions::v1()).unwrap();
    let a = hpi::parse(&data, &HpiLimits::default()).unwrap();
    let f = *a.files().next().unwrap().1;
    data[f.offset as usize + 4 + 19 + 3] ^= 0xFF; // a payload byte of a's only chunk
    let arc = t.path().join("d.hpi");
    std::fs::write(&arc, &data).unwrap();
    let out = t.path().join("out");
    let o = tafs(&["hpi", "extract", p(&arc), "-t", p(&out)]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("checksum"));
    assert!(!out.join("a").exists());
    assert_eq!(std::fs::read(out.join("b")).unwrap(), vec![9u8; 5000]);
}
