//! COB unit scripts through a real mount: each `.cob` (any letter case) is a directory of
//! `script.coba`, `pieces.csv`, `scripts.csv` and `metadata.json`; `sed -i` of a constant in
//! the assembly rebuilds the COB with exactly that word changed (checked by Python's
//! `struct`, not by the crate); a syntax error puts `file:line:col` in the status and leaves
//! the binary untouched (a `sed -i` rename stands, a write in place fails with EIO); rsync of an edited copy rebuilds it and a second
//! identical rsync changes nothing; an edit of a generated file fails its save.

mod common;
mod mount_common;

use mount_common::{sh, GameMount};
use std::path::Path;
use tafs::formats::cob::{self, Cob};

/// Create sleeps 100 in a loop; Go is empty (shares Stop's start); Stop hides `flare`.
fn fixture() -> Vec<u8> {
    let mut c = Cob::new(4, vec!["base".into(), "flare".into()], 1);
    c.push_script("Create", &[0x1002_1001, 100, 0x1001_3000, 0x1006_4000, 0]);
    c.push_script("Go", &[]);
    c.push_script("Stop", &[0x1000_6000, 1, 0x1002_1001, 0, 0x1006_5000]);
    cob::write(&c).unwrap()
}

/// The word offsets where two COBs differ, with both values (Python reads them).
fn word_diff(a: &Path, b: &Path) -> String {
    sh(&format!(
        "python3 -c \"import struct,sys\n\
a=open(sys.argv[1],'rb').read(); b=open(sys.argv[2],'rb').read()\n\
assert len(a)==len(b), (len(a), len(b))\n\
n=len(a)//4\n\
assert a[4*n:]==b[4*n:]\n\
wa=struct.unpack('<%dI'%n,a[:4*n]); wb=struct.unpack('<%dI'%n,b[:4*n])\n\
print([(i*4,x,y) for i,(x,y) in enumerate(zip(wa,wb)) if x!=y])\" {} {}",
        a.display(),
        b.display()
    ))
    .trim()
    .to_string()
}

#[test]
fn a_cob_is_a_folder_whose_assembly_rebuilds_it() {
    let Some(g) = GameMount::new("scripts/UNIT.COB", &[], |_, bin| {
        std::fs::write(bin, fixture()).unwrap();
    }) else {
        return;
    };
    let dir = g.asset();
    let orig = g.path("orig.cob");
    std::fs::copy(g.bin(), &orig).unwrap();
    let names = sh(&format!("ls {}", dir.display()));
    assert_eq!(
        names.split_whitespace().collect::<Vec<_>>(),
        [
            "metadata.json",
            "pieces.csv",
            "script.bos",
            "script.coba",
            "scripts.csv"
        ]
    );
    let text = std::fs::read_to_string(dir.join("script.coba")).unwrap();
    let cli = common::tafs_ok(&["cob", "disassemble", g.bin().to_str().unwrap()]);
    assert_eq!(text, cli, "the mount serves what the CLI writes");
    assert_eq!(
        std::fs::read_to_string(dir.join("scripts.csv")).unwrap(),
        "index,name,start_word,words,runs_as\n0,Create,0,5,\n1,Go,5,0,Stop\n2,Stop,5,5,\n"
    );
    assert!(sh(&format!("grep -rl SLEEP {}", g.mnt.display())).contains("script.coba"));

    // sed -i of the sleep constant: exactly that word changes.
    sh(&format!(
        "sed -i 's/PUSH_CONST 100/PUSH_CONST 250/' {}",
        dir.join("script.coba").display()
    ));
    assert_eq!(word_diff(&orig, &g.bin()), "[(48, 100, 250)]");
    let after_sed = std::fs::read(g.bin()).unwrap();

    // A syntax error saved by sed -i (a rename, which stands): the status names line and
    // column, the binary is untouched.
    sh(&format!(
        "sed -i 's/SLEEP/SLEPP/' {}",
        dir.join("script.coba").display()
    ));
    assert_eq!(std::fs::read(g.bin()).unwrap(), after_sed);
    let status = g.status();
    assert!(
        status.contains("script.coba:8:5: unknown instruction \"SLEPP\""),
        "{status}"
    );
    // The same written in place: the close fails with EIO, the binary is untouched.
    let bad = std::fs::read_to_string(dir.join("script.coba")).unwrap();
    assert!(bad.contains("SLEPP"), "the user's bytes are kept");
    let o = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "cat {} > {}",
            {
                let p = g.path("bad.coba");
                std::fs::write(&p, bad.replace("SLEPP", "SLEEEP")).unwrap();
                p.display().to_string()
            },
            dir.join("script.coba").display()
        ))
        .output()
        .unwrap();
    assert!(!o.status.success(), "a save that does not assemble fails");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("Input/output error"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(std::fs::read(g.bin()).unwrap(), after_sed);
    assert!(g
        .status()
        .contains("script.coba:8:5: unknown instruction \"SLEEEP\""));
    sh(&format!(
        "sed -i 's/SLEEEP/SLEPP/' {}",
        dir.join("script.coba").display()
    ));
    // Putting it right saves.
    sh(&format!(
        "sed -i 's/SLEPP/SLEEP/' {}",
        dir.join("script.coba").display()
    ));
    assert_eq!(std::fs::read(g.bin()).unwrap(), after_sed);

    // A generated file edited (Python appends a row): the close fails, the binary is
    // untouched, the status says what to edit instead.
    let o = std::process::Command::new("python3")
        .arg("-c")
        .arg("import sys\nwith open(sys.argv[1], 'a') as f: f.write('2,turret\\n')")
        .arg(dir.join("pieces.csv"))
        .output()
        .unwrap();
    assert!(!o.status.success(), "an edit of pieces.csv is not accepted");
    assert!(String::from_utf8_lossy(&o.stderr).contains("Input/output error"));
    assert!(g.status().contains("pieces.csv: generated from the script"));
    assert_eq!(std::fs::read(g.bin()).unwrap(), after_sed);
}

#[test]
fn rsync_of_an_edited_copy_rebuilds_and_a_second_is_a_no_op() {
    let Some(g) = GameMount::new("scripts/unit.cob", &[], |_, bin| {
        std::fs::write(bin, fixture()).unwrap();
    }) else {
        return;
    };
    let copy = g.path("copy");
    sh(&format!("cp -r {} {}", g.asset().display(), copy.display()));
    // The copy is edited in its assembly alone (a copy keeping its stale script.bos is
    // pushed twice in tests/mount_bos.rs).
    std::fs::remove_file(copy.join("script.bos")).unwrap();
    sh(&format!(
        "sed -i 's/HIDE flare/HIDE base/' {}",
        copy.join("script.coba").display()
    ));
    let orig = g.path("orig.cob");
    std::fs::copy(g.bin(), &orig).unwrap();
    sh(&format!(
        "rsync -r --checksum {}/ {}/",
        copy.display(),
        g.asset().display()
    ));
    // HIDE's operand is word 5 of the code (offset 44 + 24): piece 1 → piece 0.
    assert_eq!(word_diff(&orig, &g.bin()), "[(68, 1, 0)]");
    let m1 = std::fs::metadata(g.bin()).unwrap().modified().unwrap();
    let again = sh(&format!(
        "rsync -r --checksum -i {}/ {}/",
        copy.display(),
        g.asset().display()
    ));
    assert!(
        again.trim().is_empty(),
        "second rsync transfers nothing: {again}"
    );
    assert_eq!(std::fs::metadata(g.bin()).unwrap().modified().unwrap(), m1);
}

#[test]
fn corpus_scripts_mount_and_rebuild_identically() {
    let Some(c) = common::corpus() else {
        return;
    };
    let src = c.join("cob/ta-cavedog/ARMFAV.COB");
    let Some(g) = GameMount::new("scripts/ARMFAV.COB", &[], |_, bin| {
        std::fs::copy(&src, bin).unwrap();
    }) else {
        return;
    };
    let text = std::fs::read_to_string(g.asset().join("script.coba")).unwrap();
    assert!(text.contains("EMIT_SFX"), "{text}");
    // An unedited save (cat > same file) rebuilds identical bytes.
    let copy = g.path("same.coba");
    std::fs::write(&copy, &text).unwrap();
    sh(&format!(
        "cat {} > {}",
        copy.display(),
        g.asset().join("script.coba").display()
    ));
    assert_eq!(
        std::fs::read(g.bin()).unwrap(),
        std::fs::read(&src).unwrap()
    );
}

#[test]
fn a_cob_inside_an_archive_is_a_folder_too() {
    let Some(g) = GameMount::new("unit.ufo", &["--archive-commit-delay", "0"], |dir, bin| {
        let src = dir.join("src/scripts");
        std::fs::create_dir_all(&src).unwrap();
        std::fs::write(src.join("Unit.Cob"), fixture()).unwrap();
        common::tafs_ok(&[
            "hpi",
            "pack",
            dir.join("src").to_str().unwrap(),
            "-t",
            bin.to_str().unwrap(),
        ]);
    }) else {
        return;
    };
    let coba = g.asset().join("scripts/Unit.Cob/script.coba");
    sh(&format!(
        "sed -i 's/PUSH_CONST 100/PUSH_CONST 7/' {}",
        coba.display()
    ));
    let out = g.path("out");
    common::tafs_ok(&[
        "hpi",
        "extract",
        g.bin().to_str().unwrap(),
        "-t",
        out.to_str().unwrap(),
    ]);
    let orig = g.path("orig.cob");
    std::fs::write(&orig, fixture()).unwrap();
    assert_eq!(
        word_diff(&orig, &out.join("scripts/Unit.Cob")),
        "[(48, 100, 7)]"
    );
}

#[test]
fn merged_view_shows_loose_and_archived_scripts_and_into_lands_the_edit_in_the_mod() {
    if !mount_common::fuse_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let game = dir.path().join("game");
    let src = dir.path().join("src/scripts");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::create_dir_all(game.join("scripts")).unwrap();
    std::fs::write(src.join("ARCHIVED.COB"), fixture()).unwrap();
    std::fs::write(game.join("scripts/loose.cob"), fixture()).unwrap();
    common::tafs_ok(&[
        "hpi",
        "pack",
        dir.path().join("src").to_str().unwrap(),
        "-t",
        game.join("z.ufo").to_str().unwrap(),
    ]);
    let state = dir.path().join("state");
    let mnt = dir.path().join("mnt");
    let m = mount_common::mount(
        &game,
        &mnt,
        &[
            "--merged",
            "--into",
            "mymod",
            "--ttl",
            "0",
            "--state-dir",
            state.to_str().unwrap(),
        ],
    );
    let hits = sh(&format!(
        "grep -rl SLEEP {}/scripts | sort",
        m.mnt.display()
    ));
    let hits: Vec<&str> = hits
        .lines()
        .map(|l| l.strip_prefix(&format!("{}/", m.mnt.display())).unwrap())
        .collect();
    assert_eq!(
        hits,
        [
            "scripts/ARCHIVED.COB/script.coba",
            "scripts/loose.cob/script.coba"
        ]
    );
    // An edit of the archived script lands in the mod; the archive keeps its member.
    let o = std::process::Command::new("sed")
        .args(["-i", "s/PUSH_CONST 100/PUSH_CONST 42/"])
        .arg(m.mnt.join("scripts/ARCHIVED.COB/script.coba"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let orig = dir.path().join("orig.cob");
    std::fs::write(&orig, fixture()).unwrap();
    assert_eq!(
        word_diff(&orig, &game.join("mymod/scripts/ARCHIVED.COB")),
        "[(48, 100, 42)]"
    );
}
