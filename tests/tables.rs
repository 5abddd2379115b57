//! Balance tables and the lossless TDF document: every FBI/TDF of the corpus reads, edits
//! change only the edited value, and `tafs tables export` → `apply` unchanged writes nothing;
//! a Python csv edit of one cell changes one line of its file. Self-made fixtures run when the
//! corpus is absent.

mod common;

use common::{corpus, files_with_ext, py, tafs, tafs_ok};
use std::path::Path;
use tafs::formats::tdf_doc::{self, Edit, KeyLookup};
use tafs::fs::{Caller, NewNode};
use tafs::game::Plain;
use tafs::view::tables::{read_files, Table, FAMILIES};

const FIXTURE_FBI: &[u8] = b"[UNITINFO]\r\n\t{\r\n\tUnitName=ARMCOM;\r\n\tName=Commander;\r\n\tBuildCostEnergy=34125;\r\n\tBuildCostMetal=29854;\r\n\t}\r\n";
const FIXTURE_TDF: &[u8] = b"// weapons\n[ARM_LASER]\n{\n  name=Laser; // c\n  range=300;\n  [DAMAGE]\n  {\n    default=50;\n  }\n}\n[CORE_LASER]\n{\n  name=Laser2\n  ;\n  range=310;\n  [DAMAGE]\n  {\n    default=55;\n  }\n}\n\x1a";

/// A small game folder: the corpus's units/weapons/features/gamedata/download copied from
/// `ota` when present, else the fixtures.
fn game(dir: &Path) {
    if let Some(c) = corpus() {
        let ota = c.join("ota");
        for sub in ["units", "weapons", "features", "gamedata", "download"] {
            let st = std::process::Command::new("cp")
                .arg("-r")
                .arg(ota.join(sub))
                .arg(dir)
                .status()
                .unwrap();
            assert!(st.success());
        }
    } else {
        std::fs::create_dir_all(dir.join("units")).unwrap();
        std::fs::create_dir_all(dir.join("weapons")).unwrap();
        std::fs::write(dir.join("units/ARMCOM.FBI"), FIXTURE_FBI).unwrap();
        std::fs::write(dir.join("weapons/lasers.tdf"), FIXTURE_TDF).unwrap();
    }
}

/// Every FBI/TDF/OTA of the corpus (or the fixtures): parses and keeps its bytes; setting the
/// first unique key of a section to a new value changes exactly that value's bytes.
#[test]
fn every_tdf_reads_and_one_value_edit_changes_only_that_value() {
    let mut files: Vec<(String, Vec<u8>)> = vec![
        ("fixture.fbi".into(), FIXTURE_FBI.to_vec()),
        ("fixture.tdf".into(), FIXTURE_TDF.to_vec()),
    ];
    if let Some(c) = corpus() {
        for p in files_with_ext(&c, &[".fbi", ".tdf", ".ota"]) {
            files.push((p.display().to_string(), std::fs::read(&p).unwrap()));
        }
        assert!(files.len() > 600, "{} files", files.len());
    }
    let mut edits = 0;
    for (name, bytes) in &files {
        let d = tdf_doc::parse(bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(d.bytes(), &bytes[..]);
        // Every section of a small file; the first, middle and last of a large one (each
        // edit parses the whole file again).
        let count = d.nodes().len();
        let pick = |i: usize| count <= 16 || i == 0 || i == count / 2 || i + 1 == count;
        for (id, n) in d.nodes().iter().enumerate().filter(|(i, _)| pick(*i)) {
            let Some(e) = n
                .entries
                .iter()
                .find(|e| matches!(d.key(id, &e.key), KeyLookup::One(_)))
            else {
                continue;
            };
            let out = d
                .apply(&[Edit::Set {
                    node: id,
                    key: e.key.clone(),
                    value: "777".into(),
                }])
                .unwrap_or_else(|err| panic!("{name} [{}] {}: {err}", n.name, e.key));
            let mut want = bytes[..e.value_span.start].to_vec();
            want.extend_from_slice(b"777");
            want.extend_from_slice(&bytes[e.value_span.end..]);
            assert_eq!(out, want, "{name} [{}] {}", n.name, e.key);
            edits += 1;
        }
    }
    assert!(edits >= 3);
}

/// Every table of the corpus game folder (or the fixture): its CSV applied unchanged plans
/// no change; every FBI/TDF stays byte-identical through the CLI's export → apply.
#[test]
fn export_then_apply_unchanged_is_byte_identical() {
    let tmp = tempfile::tempdir().unwrap();
    let g = tmp.path().join("game");
    std::fs::create_dir(&g).unwrap();
    game(&g);
    for fam in FAMILIES {
        let t = Table::build(fam, read_files(&Plain, &g, fam).unwrap());
        assert!(t.skipped.is_empty(), "{:?}", t.skipped);
        assert!(t.plan(&t.to_csv()).unwrap().is_empty(), "{}", fam.csv);
    }
    let before: Vec<_> = files_with_ext(&g, &[".fbi", ".tdf"])
        .into_iter()
        .map(|p| (std::fs::read(&p).unwrap(), p))
        .collect();
    let x = tmp.path().join("x");
    let out = tafs_ok(&[
        "tables",
        "export",
        g.to_str().unwrap(),
        "-t",
        x.to_str().unwrap(),
    ]);
    if corpus().is_some() {
        assert!(out.contains("units.csv: 272 rows"), "{out}");
        assert!(out.contains("weapons.csv: 226 rows"), "{out}");
    }
    let out = tafs_ok(&["tables", "apply", x.to_str().unwrap(), g.to_str().unwrap()]);
    assert_eq!(out.trim(), "nothing edited");
    for (b, p) in &before {
        assert_eq!(&std::fs::read(p).unwrap(), b, "{}", p.display());
    }
}

/// Python's csv module edits ARMCOM's BuildCostEnergy in units.csv; `tables apply` changes
/// exactly that line of units/ARMCOM.FBI; text in that number column is refused with row and
/// column and writes nothing.
#[test]
fn python_csv_edit_of_one_cell_changes_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let g = tmp.path().join("game");
    std::fs::create_dir(&g).unwrap();
    game(&g);
    let x = tmp.path().join("x");
    tafs_ok(&[
        "tables",
        "export",
        g.to_str().unwrap(),
        "-t",
        x.to_str().unwrap(),
    ]);
    let fbi = g.join("units/ARMCOM.FBI");
    let before = std::fs::read(&fbi).unwrap();
    let csv = x.join("units.csv");
    let edit = |value: &str| {
        py(&format!(
            r#"
import csv
p = {csv:?}
with open(p, newline='') as f:
    rows = list(csv.reader(f))
h = rows[0]
c = h.index('BuildCostEnergy')
n = []
for i, r in enumerate(rows):
    if r[0].upper() == 'UNITS/ARMCOM.FBI':
        r[c] = {value:?}
        n.append(i + 1)
assert len(n) == 1
with open(p, 'w', newline='') as f:
    csv.writer(f).writerows(rows)
print(n[0])
"#
        ))
    };
    let line = edit("lots");
    let o = tafs(&["tables", "apply", x.to_str().unwrap(), g.to_str().unwrap()]);
    assert!(!o.status.success());
    let msg = String::from_utf8_lossy(&o.stderr);
    assert!(
        msg.contains(&format!(
            "units.csv: row {line}, column BuildCostEnergy: \"lots\" is not a number"
        )),
        "{msg}"
    );
    assert_eq!(std::fs::read(&fbi).unwrap(), before);

    assert_eq!(edit("40000"), line);
    tafs_ok(&["tables", "apply", x.to_str().unwrap(), g.to_str().unwrap()]);
    let after = std::fs::read(&fbi).unwrap();
    let old: Vec<&[u8]> = before.split(|&b| b == b'\n').collect();
    let new: Vec<&[u8]> = after.split(|&b| b == b'\n').collect();
    assert_eq!(old.len(), new.len());
    let diff: Vec<usize> = (0..old.len()).filter(|&i| old[i] != new[i]).collect();
    assert_eq!(diff.len(), 1, "{diff:?}");
    let cr = |l: &'static [u8]| {
        if before.contains(&b'\r') {
            [l, b"\r"].concat()
        } else {
            l.to_vec()
        }
    };
    assert_eq!(new[diff[0]], cr(b"\tBuildCostEnergy=40000;"));
    assert_eq!(old[diff[0]], cr(b"\tBuildCostEnergy=34125;"));
    assert_eq!(
        tafs_ok(&[
            "tdf",
            "get",
            fbi.to_str().unwrap(),
            "UnitInfo.buildcostenergy"
        ])
        .trim(),
        "40000"
    );
}

/// `tafs tdf set` changes one value, adds a missing key at the end of its section, and
/// refuses a value that cannot be written.
#[test]
fn tdf_get_and_set() {
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("w.tdf");
    std::fs::write(&f, FIXTURE_TDF).unwrap();
    let fs = f.to_str().unwrap();
    assert_eq!(
        tafs_ok(&["tdf", "get", fs, "core_laser.name"]).trim(),
        "Laser2"
    );
    assert_eq!(
        tafs_ok(&["tdf", "get", fs, "ARM_LASER.DAMAGE.default"]).trim(),
        "50"
    );
    tafs_ok(&["tdf", "set", fs, "ARM_LASER.DAMAGE.default", "60"]);
    tafs_ok(&["tdf", "set", fs, "CORE_LASER.reloadtime", "1.5"]);
    let got = std::fs::read(&f).unwrap();
    let want = String::from_utf8_lossy(FIXTURE_TDF)
        .replace("default=50;", "default=60;")
        .replace("  }\n}\n\x1a", "  }\n  reloadtime=1.5;\n}\n\x1a");
    assert_eq!(String::from_utf8_lossy(&got), want);
    let o = tafs(&["tdf", "set", fs, "ARM_LASER.range", "1;2"]);
    assert!(!o.status.success());
    assert_eq!(std::fs::read(&f).unwrap(), got);
    assert!(!tafs(&["tdf", "get", fs, "nosuch.key"]).status.success());
}

/// The tables folder driven without a mount ([`tafs::fs::tables::with_tables`] over the
/// game-folder core): a scratch file renamed onto units.csv commits (as `sed -i` saves), a
/// refused one is EIO with row and column in `status` and writes nothing, the scratch file
/// is gone after the rename, tables cannot be removed.
#[test]
fn tables_folder_over_the_core() {
    use std::ffi::OsStr;
    use std::sync::Arc;
    use tafs::fs::tables::{with_tables, DIR_NAME};
    use tafs::fs::{Core, FsOps, MountOptions};
    let tmp = tempfile::tempdir().unwrap();
    let g = tmp.path();
    std::fs::create_dir(g.join("units")).unwrap();
    std::fs::write(g.join("units/ARMCOM.FBI"), FIXTURE_FBI).unwrap();
    let core = Core::new(g, MountOptions::default(), None).unwrap();
    let ops = with_tables(Arc::new(core), false, Default::default(), false);
    let dir = ops
        .lookup(Caller::root(), 1, OsStr::new(DIR_NAME))
        .unwrap()
        .ino;
    let csv = ops
        .lookup(Caller::root(), dir, OsStr::new("units.csv"))
        .unwrap();
    let h = ops.open(Caller::root(), csv.ino, libc::O_RDONLY).unwrap();
    let text = String::from_utf8(ops.read(Caller::root(), h.fh, 0, 1 << 20).unwrap()).unwrap();
    ops.release(Caller::root(), h.fh).unwrap();
    assert_eq!(text.len() as u64, csv.size);
    let save = |new: &str| {
        let (_, h) = ops
            .create(
                Caller::root(),
                NewNode::new(dir, OsStr::new("sedXYZ"), 0o100644, 0),
                libc::O_WRONLY,
            )
            .unwrap();
        ops.write(Caller::root(), h.fh, 0, new.as_bytes()).unwrap();
        ops.release(Caller::root(), h.fh).unwrap();
        ops.rename(
            Caller::root(),
            dir,
            OsStr::new("sedXYZ"),
            dir,
            OsStr::new("units.csv"),
            0,
        )
    };
    let e = save(&text.replace("34125", "a lot")).unwrap_err();
    assert_eq!(e.errno(), libc::EIO);
    let st = ops
        .lookup(Caller::root(), dir, OsStr::new("status"))
        .unwrap();
    let h = ops.open(Caller::root(), st.ino, libc::O_RDONLY).unwrap();
    let status = String::from_utf8(ops.read(Caller::root(), h.fh, 0, 4096).unwrap()).unwrap();
    assert!(
        status.contains("row 2, column BuildCostEnergy: \"a lot\" is not a number"),
        "{status}"
    );
    assert_eq!(
        std::fs::read(g.join("units/ARMCOM.FBI")).unwrap(),
        FIXTURE_FBI
    );
    ops.unlink(Caller::root(), dir, OsStr::new("sedXYZ"))
        .unwrap();
    save(&text.replace("34125", "35000")).unwrap();
    assert_eq!(
        std::fs::read(g.join("units/ARMCOM.FBI")).unwrap(),
        String::from_utf8_lossy(FIXTURE_FBI)
            .replace("34125", "35000")
            .as_bytes()
    );
    assert!(ops
        .lookup(Caller::root(), dir, OsStr::new("sedXYZ"))
        .is_err());
    // Five bytes written in place (no O_TRUNC): the rest of the text is the table's.
    let at = text.find("34125").unwrap() as u64;
    let h = ops.open(Caller::root(), csv.ino, libc::O_WRONLY).unwrap();
    ops.write(Caller::root(), h.fh, at, b"36000").unwrap();
    ops.release(Caller::root(), h.fh).unwrap();
    assert_eq!(
        std::fs::read(g.join("units/ARMCOM.FBI")).unwrap(),
        String::from_utf8_lossy(FIXTURE_FBI)
            .replace("34125", "36000")
            .as_bytes()
    );
    let e = ops
        .unlink(Caller::root(), dir, OsStr::new("units.csv"))
        .unwrap_err();
    assert_eq!(e.errno(), libc::EROFS);
    // No temporary file is left beside the FBI.
    let names: Vec<_> = std::fs::read_dir(g.join("units")).unwrap().collect();
    assert_eq!(names.len(), 1);
}

proptest::proptest! {
    /// Text made of TDF tokens and junk: parsing never panics and keeps the bytes; setting
    /// or removing any key either is refused or reads back as asked with all else unchanged
    /// (the check inside `apply`), and a set to the same value gives the same bytes.
    #[test]
    fn tdf_doc_never_panics_and_edits_read_back(
        parts in proptest::collection::vec(
            proptest::sample::select(vec![
                "[B]{", "[c] {", "}", "\n", "\r\n", "\t", " ", "x=1", "X=2", "y", "=", ";",
                "//c\n", "/*c*/", "z=two words", "\u{1a}", "]", "é", "x=", "new=3;",
            ]),
            0..40,
        ),
        value in "[a-z0-9]{0,4}",
    ) {
        let text = format!("[a]\n{{\n{}\n}}\n", parts.concat()).into_bytes();
        if let Ok(d) = tdf_doc::parse(&text) {
            proptest::prop_assert_eq!(d.bytes(), &text[..]);
            for node in 0..d.nodes().len() {
                for key in ["x", "y", "z", "new"] {
                    if let Ok(out) = d.apply(&[Edit::Set { node, key: key.into(), value: value.clone() }]) {
                        let d2 = tdf_doc::parse(&out).unwrap();
                        if !value.is_empty() {
                            proptest::prop_assert_eq!(d2.value(node, key), Some(value.as_str()));
                        }
                    }
                    let _ = d.apply(&[Edit::Remove { node, key: key.into() }]);
                    if let Some(v) = d.value(node, key) {
                        let same = d.apply(&[Edit::Set { node, key: key.into(), value: v.to_string() }]);
                        proptest::prop_assert_eq!(same.unwrap(), text.clone());
                    }
                }
            }
        }
    }
}

/// `tafs tables apply` changing two files of which the second cannot be written (its folder
/// made immutable with `chattr +i`, which holds for root too) changes neither; once it can
/// be, both change.
#[test]
fn apply_is_all_or_nothing() {
    struct Mutable<'a>(&'a Path);
    impl Drop for Mutable<'_> {
        fn drop(&mut self) {
            let _ = std::process::Command::new("chattr")
                .arg("-i")
                .arg(self.0)
                .status();
        }
    }
    let tmp = tempfile::tempdir().unwrap();
    let g = tmp.path().join("game");
    std::fs::create_dir_all(g.join("units")).unwrap();
    std::fs::create_dir_all(g.join("weapons")).unwrap();
    std::fs::write(g.join("units/ARMCOM.FBI"), FIXTURE_FBI).unwrap();
    std::fs::write(g.join("weapons/lasers.tdf"), FIXTURE_TDF).unwrap();
    let x = tmp.path().join("x");
    let (gs, xs) = (g.to_str().unwrap(), x.to_str().unwrap());
    tafs_ok(&["tables", "export", gs, "-t", xs]);
    for (csv, from, to) in [
        ("units.csv", ",34125,", ",40000,"),
        ("weapons.csv", ",300,", ",350,"),
    ] {
        let text = std::fs::read_to_string(x.join(csv)).unwrap();
        assert_eq!(text.matches(from).count(), 1, "{text}");
        std::fs::write(x.join(csv), text.replace(from, to)).unwrap();
    }
    let weapons = g.join("weapons");
    let locked = std::process::Command::new("chattr")
        .arg("+i")
        .arg(&weapons)
        .status()
        .is_ok_and(|s| s.success());
    if locked {
        let _guard = Mutable(&weapons);
        let o = tafs(&["tables", "apply", xs, gs]);
        assert!(!o.status.success());
        let msg = String::from_utf8_lossy(&o.stderr);
        assert!(
            msg.contains("lasers.tdf") && msg.contains("nothing written"),
            "{msg}"
        );
        assert_eq!(
            std::fs::read(g.join("units/ARMCOM.FBI")).unwrap(),
            FIXTURE_FBI
        );
        assert_eq!(
            std::fs::read(g.join("weapons/lasers.tdf")).unwrap(),
            FIXTURE_TDF
        );
    } else {
        eprintln!("chattr +i not supported here: the failing half of the test is skipped");
    }
    tafs_ok(&["tables", "apply", xs, gs]);
    let fbi = std::fs::read_to_string(g.join("units/ARMCOM.FBI")).unwrap();
    assert!(fbi.contains("BuildCostEnergy=40000;"));
    let tdf =
        String::from_utf8_lossy(&std::fs::read(g.join("weapons/lasers.tdf")).unwrap()).into_owned();
    assert!(tdf.contains("range=350;"));
}
