//! Hostile but real archives through a real mount (SEMANTICS.md, "Archives" and "Writing
//! inside archives"): a member whose name had to be made safe (`a*b.tdf` shown as
//! `a_b.tdf~2`) takes saves under its raw name, an archive holding two members that differ
//! only in letter case takes edits and removals of every member, the root status lists a
//! dirty asset right after a remount, and `tafs hpi list` never prints a name's control
//! characters. The archives are written with the crate's HPI writer; what the mount did is
//! checked by reading the archive back with the HPI reader, by raw member name.

mod common;
mod mount_common;
mod writeback_common;

use common::{tafs, tafs_ok, TAFS};
use mount_common::{fuse_available, mount_state, sh};
use std::collections::BTreeMap;
use std::path::Path;
use tafs::formats::hpi::{self, Node, WriteOptions};

/// Every file member by raw path: (decompressed bytes, stored bytes).
fn members(archive: &Path) -> BTreeMap<Vec<u8>, (Vec<u8>, hpi::StoredMember)> {
    let bytes = std::fs::read(archive).unwrap();
    let lim = hpi::HpiLimits::default();
    let a = hpi::parse(&bytes, &lim).unwrap();
    a.files()
        .map(|(i, f)| {
            (
                a.path(i),
                (
                    a.read(&bytes, f, &lim).unwrap(),
                    a.stored_member(&bytes, f).unwrap(),
                ),
            )
        })
        .collect()
}

/// After an edit: the members in `changed` (raw paths) hold the given bytes (`None`: gone),
/// every other member of `before` keeps its stored bytes, nothing else appeared.
fn check(
    before: &BTreeMap<Vec<u8>, (Vec<u8>, hpi::StoredMember)>,
    archive: &Path,
    changed: &[(&[u8], Option<&[u8]>)],
) -> BTreeMap<Vec<u8>, (Vec<u8>, hpi::StoredMember)> {
    let after = members(archive);
    for (k, v) in before {
        let name = String::from_utf8_lossy(k);
        match changed.iter().find(|(c, _)| *c == k.as_slice()) {
            Some((_, Some(want))) => {
                let got = after.get(k).unwrap_or_else(|| panic!("{name} gone"));
                assert_eq!(got.0, *want, "{name}: not the saved bytes");
            }
            Some((_, None)) => assert!(!after.contains_key(k), "{name} not removed"),
            None => {
                let got = after.get(k).unwrap_or_else(|| panic!("{name} gone"));
                assert_eq!(got.1, v.1, "{name}: stored bytes changed");
            }
        }
    }
    for k in after.keys() {
        assert!(
            before.contains_key(k),
            "{} appeared",
            String::from_utf8_lossy(k)
        );
    }
    after
}

/// Each save is checked in the archive at once.
const AT_ONCE: &[&str] = &["--archive-commit-delay", "0"];

/// `gamedata/` holding a member whose name must be made safe after a member already named
/// like its safe form (`a_b.tdf`, then `a*b.tdf` shown as `a_b.tdf~2`), two members that
/// differ only in letter case (`ABC.TDF`, then `abc.tdf` shown as `abc.tdf~2`), and plain
/// members.
fn hostile_archive() -> Vec<u8> {
    let tree = vec![Node::dir(
        "gamedata",
        vec![
            Node::file("a_b.tdf", b"[PLAIN]{}".to_vec()),
            Node::file("a*b.tdf", b"[STAR]{}".to_vec()),
            Node::file("ABC.TDF", b"[UPPER]{}".to_vec()),
            Node::file("abc.tdf", b"[LOWER]{}".to_vec()),
            Node::file("other.tdf", b"[OTHER]{}".to_vec()),
            Node::file("keep.fbi", b"[KEEP]{}".to_vec()),
        ],
    )];
    let opts = WriteOptions {
        keep_duplicate_names: true,
        ..WriteOptions::v1()
    };
    hpi::write(&tree, &opts).unwrap()
}

#[test]
fn safe_named_and_case_duplicate_members_take_edits_and_removals() {
    if !fuse_available() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    let game = w.join("game");
    let arch = game.join("x.hpi");
    mount_common::put(&arch, hostile_archive());
    let m = mount_state(&game, &w.join("mnt"), &w.join("state"), AT_ONCE);
    let gd = m.mnt.join("x.hpi/gamedata");
    let ls = sh(&format!("ls -f {}", gd.display()));
    for n in ["a_b.tdf", "a_b.tdf~2", "ABC.TDF", "abc.tdf~2", "other.tdf"] {
        assert!(ls.lines().any(|l| l == n), "{n} not listed: {ls}");
    }
    let at = |n: &str| gd.join(n).display().to_string();

    // a save of the member shown as `a_b.tdf~2` reaches `a*b.tdf`, nothing else
    let before = members(&arch);
    sh(&format!("printf '[STAR2]{{}}' > '{}'", at("a_b.tdf~2")));
    let before = check(&before, &arch, &[(b"gamedata/a*b.tdf", Some(b"[STAR2]{}"))]);
    assert_eq!(std::fs::read(gd.join("a_b.tdf~2")).unwrap(), b"[STAR2]{}");
    assert_eq!(std::fs::read(gd.join("a_b.tdf")).unwrap(), b"[PLAIN]{}");
    // the same through a temporary file renamed over it (sed -i)
    sh(&format!("sed -i 's/STAR2/STAR3/' '{}'", at("a_b.tdf~2")));
    let before = check(&before, &arch, &[(b"gamedata/a*b.tdf", Some(b"[STAR3]{}"))]);

    // the case-duplicate archive takes an edit of another member (was EIO)
    sh(&format!("printf '[OTHER2]{{}}' > '{}'", at("other.tdf")));
    let before = check(
        &before,
        &arch,
        &[(b"gamedata/other.tdf", Some(b"[OTHER2]{}"))],
    );
    // and of each of the two, by its shown name
    sh(&format!(
        "cp /dev/stdin '{}' <<'E'\n[UP2]\nE",
        at("ABC.TDF")
    ));
    let before = check(&before, &arch, &[(b"gamedata/ABC.TDF", Some(b"[UP2]\n"))]);
    sh(&format!("printf '[LOW2]' > '{}'", at("abc.tdf~2")));
    let before = check(&before, &arch, &[(b"gamedata/abc.tdf", Some(b"[LOW2]"))]);
    // removals: another member, then each of the two
    sh(&format!("rm '{}'", at("keep.fbi")));
    let before = check(&before, &arch, &[(b"gamedata/keep.fbi", None)]);
    sh(&format!("rm '{}'", at("abc.tdf~2")));
    let before = check(&before, &arch, &[(b"gamedata/abc.tdf", None)]);
    sh(&format!("rm '{}'", at("ABC.TDF")));
    check(&before, &arch, &[(b"gamedata/ABC.TDF", None)]);
    let text = std::fs::read_to_string(m.mnt.join("x.hpi/.tafs-status")).unwrap();
    assert!(text.contains("x.hpi: clean"), "{text}");
    // a new name differing only in case from a member is still refused
    let o = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("printf x > '{}'", at("A_B.TDF")))
        .output()
        .unwrap();
    assert!(!o.status.success(), "a case clash was created");
}

#[test]
fn status_lists_a_dirty_asset_right_after_a_remount() {
    if !fuse_available() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    let game = w.join("game");
    let bin = game.join("anims/fx.gaf");
    mount_common::put(&bin, writeback_common::sample_bytes());
    mount_common::put(&game.join("x.hpi"), hostile_archive());
    let (mnt, state) = (w.join("mnt"), w.join("state"));
    {
        let m = mount_state(&game, &mnt, &state, AT_ONCE);
        // an invalid frame: the save fails, the asset stays dirty with the error
        let bad = m.mnt.join("anims/fx.gaf/panel/0.png");
        let junk = w.join("junk.png");
        std::fs::write(&junk, b"not a png").unwrap();
        // (cp checks close, where the save fails)
        let o = std::process::Command::new("cp")
            .arg(&junk)
            .arg(&bad)
            .output()
            .unwrap();
        assert!(!o.status.success(), "an invalid frame was accepted");
        // a staged file of the archive that is no member name (kept, never committed)
        sh(&format!(
            "printf x > '{}'",
            m.mnt.join("x.hpi/gamedata/notes~").display()
        ));
        let all = sh(&format!("{TAFS} status {} || true", m.mnt.display()));
        assert!(all.contains("anims/fx.gaf: error"), "{all}");
    }
    let m = mount_state(&game, &mnt, &state, AT_ONCE);
    // nothing looked up yet: the status still names both
    let o = tafs(&["status", m.mnt.to_str().unwrap()]);
    let all = String::from_utf8_lossy(&o.stdout);
    assert!(all.contains("anims/fx.gaf: error"), "{all}");
    assert!(all.contains("panel/0.png"), "{all}");
    assert!(all.contains("x.hpi: clean"), "{all}");
    assert_eq!(o.status.code(), Some(1), "an error makes the status fail");
    assert!(std::fs::read(&bin).unwrap() == writeback_common::sample_bytes());
}

#[test]
fn hpi_list_escapes_control_characters_and_raw_prints_the_bytes() {
    let work = tempfile::tempdir().unwrap();
    let arch = work.path().join("n.hpi");
    let names: [&[u8]; 4] = [
        b"\x1b[31mred.tdf",
        b"tab\there.tdf",
        b"del\x7f.tdf",
        b"cp\xe9.tdf",
    ];
    let tree: Vec<Node> = names
        .iter()
        .map(|n| Node::file(*n, b"x".to_vec()))
        .collect();
    mount_common::put(&arch, hpi::write(&tree, &WriteOptions::v1()).unwrap());
    let list = tafs_ok(&["hpi", "list", arch.to_str().unwrap()]);
    for want in [
        "\\x1b[31mred.tdf",
        "tab\\x09here.tdf",
        "del\\x7f.tdf",
        "cp\\xe9.tdf",
    ] {
        assert!(
            list.lines().any(|l| l.ends_with(want)),
            "{want} not in {list}"
        );
    }
    assert!(
        !list.bytes().any(|b| b < 0x20 && b != b'\n' || b == 0x7f),
        "control characters printed: {list:?}"
    );
    let raw = tafs(&["hpi", "list", "--raw", arch.to_str().unwrap()]);
    assert!(raw.status.success());
    for n in names {
        let mut line = n.to_vec();
        line.push(b'\n');
        assert!(
            raw.stdout.windows(line.len()).any(|w| w == line.as_slice()),
            "{:?} not raw in --raw",
            String::from_utf8_lossy(n)
        );
    }
}
