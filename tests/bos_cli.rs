//! `tafs cob compile|decompile|lint` on self-made scripts.

mod common;

#[test]
fn compile_decompile_and_lint() {
    let dir = tempfile::tempdir().unwrap();
    let scripts = dir.path().join("scripts");
    std::fs::create_dir(&scripts).unwrap();
    std::fs::write(scripts.join("SIGS.H"), "#define SIG_AIM 2\n").unwrap();
    let bos = scripts.join("unit.bos");
    std::fs::write(
        &bos,
        "#include \"sigs.h\"\n#include \"EXPtype.h\"\npiece base, turret;\nstatic-var never_read, never_set;\n\
         Create()\n{\n\tnever_read = 1;\n\twhile (TRUE)\n\t{\n\t\tturn turret to y-axis <90> now;\n\t}\n}\n\
         AimPrimary(heading, pitch)\n{\n\tsignal SIG_AIM;\n\treturn (1);\n\tsleep 1;\n}\n\
         Helper(a)\n{\n\tcall-script AimPrimary(never_set);\n}\n",
    )
    .unwrap();
    let cob = dir.path().join("unit.cob");
    common::tafs_ok(&[
        "cob",
        "compile",
        bos.to_str().unwrap(),
        "-o",
        cob.to_str().unwrap(),
    ]);
    let bytes = std::fs::read(&cob).unwrap();
    assert_eq!(&bytes[..4], &[4, 0, 0, 0]);
    // Cavedog's angle: <90> is 16384, pushed by TURN_NOW's operand (checked as raw words).
    let words: Vec<u32> = bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    assert!(words.windows(2).any(|w| w == [0x1002_1001, 16384]));

    let src = common::tafs_ok(&["cob", "decompile", cob.to_str().unwrap()]);
    assert!(
        src.contains("while (1)")
            && src.contains("signal 2;")
            && src.contains("call-script AimPrimary(static1);"),
        "{src}"
    );
    let again = dir.path().join("again.bos");
    std::fs::write(&again, &src).unwrap();
    let cob2 = dir.path().join("again.cob");
    common::tafs_ok(&[
        "cob",
        "compile",
        again.to_str().unwrap(),
        "-o",
        cob2.to_str().unwrap(),
    ]);
    assert_eq!(std::fs::read(&cob2).unwrap(), bytes);

    let o = common::tafs(&["cob", "lint", bos.to_str().unwrap()]);
    assert!(!o.status.success());
    let out = String::from_utf8_lossy(&o.stdout);
    let path = bos.display().to_string();
    for want in [
        format!("{path}:4:24: warning: static-var never_set is never set"),
        format!("{path}:4:12: warning: static-var never_read is set but never read"),
        format!("{path}:8:2: warning: endless loop without sleep or wait"),
        format!("{path}:15:2: warning: signal sent, but no script sets a signal mask"),
        format!("{path}:17:2: warning: unreachable: this statement follows a return"),
        format!("{path}:21:2: warning: AimPrimary takes 2 argument(s), called with 1"),
        format!("{path}:19:1: warning: script Helper is never called"),
    ] {
        assert!(out.contains(&want), "missing {want:?} in\n{out}");
    }

    // A compile error names file, line and column and exits non-zero.
    std::fs::write(&bos, "Create()\n{\n\tsleep 1\n}\n").unwrap();
    let o = common::tafs(&["cob", "compile", bos.to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr)
        .contains(&format!("{path}:4:1: expected ';', found '}}'")));
}
