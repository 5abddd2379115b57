//! The daemon's peak resident memory (`VmHWM`) stays at or below `--cache-size` + 64 MiB
//! after listing and reading every file of a game folder (`ls -lR`, then `tar` of the whole
//! mount): on a generated folder of many GAFs and maps, and on the real install
//! (`../shared/corpus/ota`) when present, at 128M and 256M. What the budgets do not hold
//! (layouts and inodes, renders in flight, the allocator's retained pages, thread stacks)
//! must fit in the 64 MiB. `scripts/bench-mount` (`RSS=1`) prints the same figure.

mod common;
mod mount_common;

use mount_common::{daemon_pid, fuse_available, sh, UnmountGuard};
use std::path::Path;

/// Peak resident memory of `pid` in MiB.
fn vm_hwm_mib(pid: i32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib: u64 = s
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kib / 1024
}

/// Mounts `game` read-only with `--cache-size cache_mib`M, lists and reads everything, and
/// returns the daemon's peak RSS in MiB (and the bytes read).
fn peak_after_reading_all(game: &Path, work: &Path, cache_mib: u64) -> (u64, u64) {
    let mnt = work.join(format!("mnt-{cache_mib}"));
    let state = work.join(format!("state-{cache_mib}"));
    let cache = format!("{cache_mib}M");
    let args = [
        "--ro",
        "--state-dir",
        state.to_str().unwrap(),
        "--cache-size",
        &cache,
    ];
    let pid = daemon_pid(game, &mnt, &args);
    let _guard = UnmountGuard(mnt.clone());
    sh(&format!("ls -lR '{}' > /dev/null", mnt.display()));
    let bytes: u64 = sh(&format!("tar cf - -C '{}' . | wc -c", mnt.display()))
        .trim()
        .parse()
        .unwrap();
    (vm_hwm_mib(pid), bytes)
}

#[test]
fn peak_rss_stays_within_the_cache_size_on_a_generated_folder() {
    if !fuse_available() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let game = work.path().join("game");
    let gaf = tafs::formats::gaf::write(&tafs::sample::animated_gaf()).unwrap();
    let map = tafs::formats::tnt::write(&tafs::sample::demo_map()).unwrap();
    for d in 0..40 {
        for i in 0..20 {
            mount_common::put(&game.join(format!("anims{d}/g{i}.gaf")), &gaf);
        }
        for i in 0..3 {
            mount_common::put(&game.join(format!("maps{d}/m{i}.tnt")), &map);
        }
    }
    let cache = 16;
    let (peak, bytes) = peak_after_reading_all(&game, work.path(), cache);
    eprintln!(
        "generated folder: peak RSS {peak} MiB at --cache-size {cache}M, {} MiB read",
        bytes >> 20
    );
    // more is generated than the cache holds: the bound is the budget's, not the tree's
    assert!(bytes >> 20 > cache, "{bytes}");
    assert!(
        peak <= cache + 64,
        "peak RSS {peak} MiB over {cache} + 64 MiB"
    );
}

#[test]
fn peak_rss_stays_within_the_cache_size_on_the_real_install() {
    if !fuse_available() {
        return;
    }
    let Some(ota) = common::corpus()
        .map(|c| c.join("ota"))
        .filter(|p| p.is_dir())
    else {
        eprintln!("skipped: no corpus/ota (the generated folder above still runs)");
        return;
    };
    let work = tempfile::tempdir().unwrap();
    for cache in [128, 256] {
        let (peak, bytes) = peak_after_reading_all(&ota, work.path(), cache);
        eprintln!(
            "corpus/ota: peak RSS {peak} MiB at --cache-size {cache}M, {} MiB read",
            bytes >> 20
        );
        assert!(
            peak <= cache + 64,
            "peak RSS {peak} MiB over {cache} + 64 MiB"
        );
    }
}
