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
