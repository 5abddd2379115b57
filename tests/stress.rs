//! A short run of `scripts/stress` (readers verifying PNG CRCs and sizes, pass-through churn
//! writers, a binary swapper, editors committing frame and tile edits through write-back)
//! against the built binary: no failure, and every kind of work actually happened.

mod mount_common;

use std::process::Command;

#[test]
fn short_stress_run_has_no_failures() {
    if !mount_common::fuse_available() {
        return;
    }
    if Command::new("python3").arg("--version").output().is_err() {
        println!("SKIPPED: python3 is missing, scripts/stress cannot run");
        return;
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/stress");
    let out = Command::new("python3")
        .args([
            script,
            "--seconds",
            "20",
            "--readers",
            "3",
            "--writers",
            "2",
            "--editors",
            "2",
        ])
        .args(["--tafs", env!("CARGO_BIN_EXE_tafs")])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "stress run failed");
    for what in [
        "png verified",
        "churn cycles",
        "binary swaps",
        "ls -lR",
        "stat:",
        "frame edits (rename)",
        "frame edits (cp)",
        "tile edits (cp)",
        "edits verified in binaries",
    ] {
        assert!(stdout.contains(what), "no {what} in the run");
    }
    // 6 + swap + the texture GAF, and each editor's GAF and map
    assert!(stdout.contains("binaries checked: 12"), "{stdout}");
}
