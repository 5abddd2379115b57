//! A COB's decompiled `script.bos` through a real mount: the text is what `tafs cob
//! decompile` writes; `sed -i` of a sleep constant rebuilds the COB with exactly that word
//! changed (checked with Python's `struct`); a syntax error written in place fails the close
//! with EIO, the status names `script.bos:line:col`, and the binary stays as it was.

mod common;
mod mount_common;

use mount_common::{sh, GameMount};
use std::path::Path;
use tafs::formats::bos::{self, Limits, Mode, NoIncludes, Options};
use tafs::formats::cob;

/// Create loops forever sleeping 100; Killed explodes `base`.
fn fixture() -> Vec<u8> {
    let src = b"piece base, flare;\nCreate()\n{\n\twhile (TRUE)\n\t{\n\t\tsleep 100;\n\t}\n}\nKilled(severity)\n{\n\texplode base type 32;\n\treturn (0);\n}\n";
    let c = bos::compile(
        "fixture.bos",
        src,
        &NoIncludes,
        &Options::new(Mode::Ta),
        &Limits::default(),
    )
    .unwrap();
    cob::write(&c).unwrap()
}

/// (byte offset, old, new) of every 32-bit word that differs, computed by Python.
fn word_diff(a: &Path, b: &Path) -> String {
    sh(&format!(
        "python3 -c \"import struct,sys\n\
a=open(sys.argv[1],'rb').read(); b=open(sys.argv[2],'rb').read()\n\
assert len(a)==len(b), (len(a), len(b))\n\
n=len(a)//4\n\
wa=struct.unpack('<%dI'%n,a[:4*n]); wb=struct.unpack('<%dI'%n,b[:4*n])\n\
print([(i*4,x,y) for i,(x,y) in enumerate(zip(wa,wb)) if x!=y])\" {} {}",
        a.display(),
        b.display()
    ))
    .trim()
    .to_string()
}

#[test]
fn saving_the_bos_compiles_it_and_a_syntax_error_gives_eio() {
    let Some(g) = GameMount::new("scripts/UNIT.COB", &[], |_, bin| {
        std::fs::write(bin, fixture()).unwrap();
    }) else {
        return;
    };
    let dir = g.asset();
    let bos_file = dir.join("script.bos");
    let orig = g.path("orig.cob");
    std::fs::copy(g.bin(), &orig).unwrap();
    let text = std::fs::read_to_string(&bos_file).unwrap();
    let cli = common::tafs_ok(&["cob", "decompile", g.bin().to_str().unwrap()]);
    assert_eq!(text, cli, "the mount serves what the CLI writes");
    assert!(text.contains("sleep 100;"), "{text}");
    assert!(sh(&format!("grep -rl 'explode base' {}", g.mnt.display())).contains("script.bos"));

    // sed -i of the sleep constant: only that word changes (header 44 bytes + word 5).
    sh(&format!(
        "sed -i 's/sleep 100;/sleep 250;/' {}",
        bos_file.display()
    ));
    assert_eq!(word_diff(&orig, &g.bin()), "[(64, 100, 250)]");
    let after_sed = std::fs::read(g.bin()).unwrap();

    // A syntax error written in place: the close fails with EIO, the binary is untouched,
    // the status names the line and column.
    let bad = g.path("bad.bos");
    std::fs::write(&bad, text.replace("sleep 100;", "sleep 250 oops;")).unwrap();
    let o = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("cat {} > {}", bad.display(), bos_file.display()))
        .output()
        .unwrap();
    assert!(!o.status.success(), "a save that does not compile fails");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("Input/output error"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(std::fs::read(g.bin()).unwrap(), after_sed);
    let line = text.lines().position(|l| l.contains("sleep 100;")).unwrap() + 1;
    let status = g.status();
    assert!(
        status.contains(&format!("script.bos:{line}:")) && status.contains("expected ';'"),
        "{status}"
    );

    // Putting it right saves again.
    let good = g.path("good.bos");
    std::fs::write(&good, text.replace("sleep 100;", "sleep 300;")).unwrap();
    sh(&format!("cat {} > {}", good.display(), bos_file.display()));
    assert_eq!(word_diff(&orig, &g.bin()), "[(64, 100, 300)]");
}

/// The binary's bytes.
fn bytes_of(p: &Path) -> Vec<u8> {
    std::fs::read(p).unwrap()
}

/// A copy of a folder edited in one of its two sources and pushed back with `rsync -rt`
/// three times (the third after a remount): the first push lands the edit; the later ones
/// send the other source too (its time changed with the commit), a rendering of the binary
/// the copy was made from, which must not undo the edit.
fn push_twice_and_after_a_remount(edited: &str, from: &str, to: &str) {
    if !mount_common::fuse_available() {
        println!("skipped: no FUSE");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (game, mnt, state) = (
        dir.path().join("game"),
        dir.path().join("mnt"),
        dir.path().join("state"),
    );
    let bin = game.join("scripts/unit.cob");
    std::fs::create_dir_all(bin.parent().unwrap()).unwrap();
    std::fs::write(&bin, fixture()).unwrap();
    let args = ["--ttl", "0", "--state-dir", state.to_str().unwrap()];
    let m = mount_common::mount(&game, &mnt, &args);
    let asset = mnt.join("scripts/unit.cob");
    let copy = dir.path().join("copy");
    let orig = dir.path().join("orig.cob");
    std::fs::copy(&bin, &orig).unwrap();
    sh(&format!(
        "rsync -rt {}/ {}/",
        asset.display(),
        copy.display()
    ));
    // (dated apart from the mount's files, which an edit in the same second would not be)
    sh(&format!(
        "sed -i 's/{from}/{to}/' {0} && touch -m -d 2001-01-01 {0}",
        copy.join(edited).display()
    ));
    let push = || {
        sh(&format!(
            "rsync -rt -i {}/ {}/",
            copy.display(),
            asset.display()
        ))
    };
    push();
    // the sleep constant is word 5 of the code: offset 44 + 20
    assert_eq!(word_diff(&orig, &bin), "[(64, 100, 2500)]", "{edited}");
    let edited_bin = bytes_of(&bin);
    let sent = push();
    let other = if edited == "script.bos" {
        "script.coba"
    } else {
        "script.bos"
    };
    assert!(
        sent.contains(other),
        "the stale source is sent again: {sent}"
    );
    let status = std::fs::read_to_string(asset.join(".tafs-status")).unwrap_or_default();
    assert_eq!(bytes_of(&bin), edited_bin, "{edited}: {status}");
    // After a remount, the stale source sent once more (touched, as an editor that
    // opened and saved it unchanged would).
    drop(m);
    let _m = mount_common::mount(&game, &mnt, &args);
    sh(&format!(
        "touch -m -d 2002-02-02 {}",
        copy.join(other).display()
    ));
    let sent = push();
    assert!(sent.contains(other), "{sent}");
    assert_eq!(bytes_of(&bin), edited_bin, "{edited}");
}

#[test]
fn rsync_of_a_copy_edited_in_its_source_twice_and_after_a_remount_keeps_the_edit() {
    push_twice_and_after_a_remount("script.bos", "sleep 100;", "sleep 2500;");
}

#[test]
fn rsync_of_a_copy_edited_in_its_assembly_twice_and_after_a_remount_keeps_the_edit() {
    push_twice_and_after_a_remount("script.coba", "PUSH_CONST 100", "PUSH_CONST 2500");
}

#[test]
fn a_copy_edited_in_both_sources_apart_is_refused_naming_both() {
    let Some(g) = GameMount::new("scripts/unit.cob", &[], |_, bin| {
        std::fs::write(bin, fixture()).unwrap();
    }) else {
        return;
    };
    let copy = g.path("copy");
    let orig = g.path("orig.cob");
    std::fs::copy(g.bin(), &orig).unwrap();
    sh(&format!("cp -r {} {}", g.asset().display(), copy.display()));
    sh(&format!(
        "sed -i 's/sleep 100;/sleep 250;/' {}",
        copy.join("script.bos").display()
    ));
    sh(&format!(
        "sed -i 's/PUSH_CONST 100/PUSH_CONST 300/' {}",
        copy.join("script.coba").display()
    ));
    let _ = std::process::Command::new("rsync")
        .arg("-r")
        .arg("--checksum")
        .arg(format!("{}/", copy.display()))
        .arg(format!("{}/", g.asset().display()))
        .output()
        .unwrap();
    // rsync saves file by file, script.bos first: its edit lands; script.coba, edited
    // from the same binary into another script, is refused (taking it would undo the
    // first edit).
    assert_eq!(word_diff(&orig, &g.bin()), "[(64, 100, 250)]");
    let status = g.status();
    assert!(
        status.contains("script.bos") && status.contains("script.coba"),
        "{status}"
    );
}

#[test]
fn include_finds_the_scripts_folder_then_the_games_scripts_ignoring_case() {
    let Some(g) = GameMount::new("units/sub/unit.cob", &[], |_, bin| {
        std::fs::write(bin, fixture()).unwrap();
        let game = bin.parent().unwrap().parent().unwrap().parent().unwrap();
        std::fs::write(bin.with_file_name("Local.H"), "#define SLOW 400\n").unwrap();
        std::fs::create_dir_all(game.join("Scripts")).unwrap();
        // shadowed by the script's own folder's
        std::fs::write(game.join("Scripts/local.h"), "#define SLOW 999\n").unwrap();
        std::fs::write(game.join("Scripts/SHARED.h"), "#define FAST 50\n").unwrap();
    }) else {
        return;
    };
    let orig = g.path("orig.cob");
    std::fs::copy(g.bin(), &orig).unwrap();
    let bos_file = g.asset().join("script.bos");
    let text = std::fs::read_to_string(&bos_file).unwrap();
    let src = g.path("edited.bos");
    for (word, value) in [("SLOW", 400), ("FAST", 50)] {
        let edited = format!(
            "#include \"local.h\"\n#include \"shared.H\"\n#include \"sfxtype.h\"\n{}",
            text.replace("sleep 100;", &format!("sleep {word};"))
        );
        std::fs::write(&src, edited).unwrap();
        sh(&format!("cat {} > {}", src.display(), bos_file.display()));
        assert_eq!(
            word_diff(&orig, &g.bin()),
            format!("[(64, 100, {value})]"),
            "{}",
            g.status()
        );
    }
    // A header nowhere to be found: the save fails naming it, the binary is kept.
    let before = bytes_of(&g.bin());
    std::fs::write(&src, format!("#include \"missing.h\"\n{text}")).unwrap();
    let o = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("cat {} > {}", src.display(), bos_file.display()))
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert_eq!(bytes_of(&g.bin()), before);
    assert!(g.status().contains("missing.h"), "{}", g.status());
}
