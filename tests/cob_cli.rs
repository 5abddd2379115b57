//! `tafs cob …` driven as a user would: a self-made script (always) and the corpus (when
//! present). The edited binary is checked word by word with Python's `struct`, independently
//! of the crate's reader.

mod common;

use common::{tafs, tafs_ok};
use std::path::Path;
use tafs::formats::cob::{self, Cob};

/// A TA script made by hand: Create sleeps 100 in a loop; Go is empty (shares Stop's start).
fn fixture(dir: &Path) -> std::path::PathBuf {
    let mut c = Cob::new(4, vec!["base".into(), "flare".into()], 1);
    c.push_script(
        "Create",
        &[
            0x1002_1001,
            100,
            0x1001_3000, // PUSH_CONST 100; SLEEP
            0x1006_4000,
            0, // JUMP 0
        ],
    );
    c.push_script("Go", &[]);
    c.push_script("Stop", &[0x1000_6000, 1, 0x1002_1001, 0, 0x1006_5000]);
    let p = dir.join("UNIT.COB");
    std::fs::write(&p, cob::write(&c).unwrap()).unwrap();
    p
}

#[test]
fn info_list_and_disassembly_of_a_fixture() {
    let d = tempfile::tempdir().unwrap();
    let f = fixture(d.path());
    let f = f.to_str().unwrap();
    let info = tafs_ok(&["cob", "info", f]);
    assert!(info.contains("version: 4"), "{info}");
    assert!(info.contains("scripts: 3"), "{info}");
    assert!(
        info.contains("empty scripts (no code of their own): Go"),
        "{info}"
    );
    let list = tafs_ok(&["cob", "list", f]);
    assert!(list.contains("1\tGo\t5\t0\n2\tStop\t5\t5\n"), "{list}");
    let text = tafs_ok(&["cob", "disassemble", f]);
    assert!(
        text.contains(".script Create\nL0000:\n    PUSH_CONST 100\n    SLEEP\n    JUMP L0000\n"),
        "{text}"
    );
    let one = tafs_ok(&["cob", "disassemble", f, "-s", "stop"]);
    assert_eq!(
        one,
        ".script Stop\n    HIDE flare\n    PUSH_CONST 0\n    RETURN\n"
    );
    assert!(!tafs(&["cob", "disassemble", f, "-s", "Nope"])
        .status
        .success());
}

#[test]
fn sed_of_a_sleep_constant_changes_exactly_that_word() {
    let d = tempfile::tempdir().unwrap();
    let f = fixture(d.path());
    let coba = d.path().join("unit.coba");
    let out = d.path().join("out.cob");
    tafs_ok(&[
        "cob",
        "disassemble",
        f.to_str().unwrap(),
        "-t",
        coba.to_str().unwrap(),
    ]);
    // Unedited text assembles to the same bytes.
    tafs_ok(&[
        "cob",
        "assemble",
        coba.to_str().unwrap(),
        "-t",
        out.to_str().unwrap(),
    ]);
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&f).unwrap());
    let st = std::process::Command::new("sed")
        .args(["-i", "s/PUSH_CONST 100/PUSH_CONST 250/"])
        .arg(&coba)
        .status()
        .unwrap();
    assert!(st.success());
    tafs_ok(&[
        "cob",
        "assemble",
        coba.to_str().unwrap(),
        "-t",
        out.to_str().unwrap(),
    ]);
    // Python reads both files as little-endian words and lists where they differ.
    let py = std::process::Command::new("python3")
        .arg("-c")
        .arg(
            "import struct,sys\n\
             a=open(sys.argv[1],'rb').read(); b=open(sys.argv[2],'rb').read()\n\
             assert len(a)==len(b)\n\
             n=len(a)//4\n\
             wa=struct.unpack('<%dI'%n,a[:4*n]); wb=struct.unpack('<%dI'%n,b[:4*n])\n\
             assert a[4*n:]==b[4*n:]\n\
             print([(i*4,x,y) for i,(x,y) in enumerate(zip(wa,wb)) if x!=y])",
        )
        .arg(&f)
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        py.status.success(),
        "{}",
        String::from_utf8_lossy(&py.stderr)
    );
    // The constant is the second code word: offset 44 + 4.
    assert_eq!(
        String::from_utf8_lossy(&py.stdout).trim(),
        "[(48, 100, 250)]"
    );
}

#[test]
fn assembly_errors_name_file_line_and_column_and_write_nothing() {
    let d = tempfile::tempdir().unwrap();
    let coba = d.path().join("bad.coba");
    std::fs::write(
        &coba,
        ".version 4\n.piece base\n.script Create\n    HIDE turret\n",
    )
    .unwrap();
    let out = d.path().join("bad.cob");
    let o = tafs(&["cob", "assemble", coba.to_str().unwrap()]);
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("bad.coba:4:10: no piece \"turret\""), "{e}");
    assert!(!out.exists());
}

#[test]
fn roundtrip_reports_each_file() {
    let d = tempfile::tempdir().unwrap();
    fixture(d.path());
    std::fs::write(d.path().join("broken.cob"), b"\x04\0\0\0").unwrap();
    let o = tafs(&["cob", "roundtrip", d.path().to_str().unwrap()]);
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(!o.status.success(), "a broken file fails the run");
    assert!(s.contains("identical  ") && s.contains("UNIT.COB"), "{s}");
    assert!(s.contains("FAILED     ") && s.contains("broken.cob"), "{s}");
    assert!(s.contains("1 of 2 COB files"), "{s}");
    let Some(c) = common::corpus() else {
        return;
    };
    let o = tafs(&[
        "cob",
        "roundtrip",
        "-q",
        c.join("cob").to_str().unwrap(),
        c.join("ota/scripts").to_str().unwrap(),
    ]);
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{s}");
    assert!(s.contains("303 of 303 COB files"), "{s}");
}
