//! The 3DO expansion bomb: 4,096 pieces sharing one list of 256 primitives that each list
//! the same 1,024 vertex indices (226 KB on disk, a billion indices once expanded per
//! piece; the code before the expanded budget took 3 GB on it). Listing its folder on a real mount must neither kill the daemon nor grow it past
//! `--cache-size` + 64 MiB; the CLI refuses it early and names the budget. A model that
//! expands to just under the reader's budget but over the cache is refused by the budget of
//! decoded views, and a stock-sized model beside them still opens.

mod mount_common;

use mount_common::{daemon_pid, fuse_available, UnmountGuard};
use std::time::Instant;

fn w(out: &mut Vec<u8>, at: usize, v: i32) {
    if out.len() < at + 4 {
        out.resize(at + 4, 0);
    }
    out[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

/// `pieces` pieces (the root and its children, chained as siblings), every one pointing at
/// the same `prims` coloured primitives, every primitive at the same `indices` indices into
/// the same 8 vertices.
pub fn shared_bomb(pieces: usize, prims: usize, indices: usize) -> Vec<u8> {
    let mut f = Vec::new();
    let name = pieces * 52;
    let verts = name + 4;
    let idx = verts + 8 * 12;
    let prim = idx + indices * 2;
    f.resize(prim + prims * 32, 0);
    f[name..name + 2].copy_from_slice(b"p\0");
    for k in 0..8 {
        w(&mut f, verts + 12 * k, (k as i32) << 16);
    }
    for k in 0..indices {
        f[idx + 2 * k..idx + 2 * k + 2].copy_from_slice(&(k as u16 % 8).to_le_bytes());
    }
    for k in 0..prims {
        let at = prim + 32 * k;
        w(&mut f, at, 3);
        w(&mut f, at + 4, indices as i32);
        w(&mut f, at + 12, idx as i32);
        w(&mut f, at + 28, 1);
    }
    for i in 0..pieces {
        let h = i * 52;
        let words = [
            1,
            8,
            prims as i32,
            -1,
            0,
            0,
            0,
            name as i32,
            0,
            verts as i32,
            prim as i32,
            if i > 0 && i + 1 < pieces {
                ((i + 1) * 52) as i32
            } else {
                0
            },
            if i == 0 && pieces > 1 { 52 } else { 0 },
        ];
        for (k, v) in words.iter().enumerate() {
            w(&mut f, h + 4 * k, *v);
        }
    }
    f
}

/// The bomb of the report: 4,096 × 256 × 1,024.
fn bomb() -> Vec<u8> {
    shared_bomb(4096, 256, 1024)
}

fn vm_hwm_kib(pid: i32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    s.lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[test]
fn the_cli_refuses_the_3do_bomb_early_naming_its_budget() {
    let t = tempfile::tempdir().unwrap();
    let p = t.path().join("bomb.3do");
    let data = bomb();
    assert!(data.len() < 230_000, "{} bytes", data.len());
    std::fs::write(&p, &data).unwrap();
    let start = Instant::now();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_tafs"))
        .args(["3do", "describe"])
        .arg(&p)
        .output()
        .unwrap();
    let took = start.elapsed();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(err.contains("once expanded"), "{err}");
    assert!(took.as_secs() < 5, "refused after {took:?}");
}

#[test]
fn listing_a_3do_bomb_keeps_the_daemon_within_the_cache_size() {
    if !fuse_available() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let game = t.path().join("game");
    let dir = game.join("objects3d");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("bomb.3do"), bomb()).unwrap();
    // ~80 MiB once expanded: within the reader's budget, over the 32 MiB cache
    std::fs::write(dir.join("under.3do"), shared_bomb(20, 200, 1000)).unwrap();
    std::fs::write(dir.join("small.3do"), shared_bomb(4, 6, 8)).unwrap();
    let mnt = t.path().join("mnt");
    let _guard = UnmountGuard(mnt.clone());
    let cache_mib = 32u64;
    let pid = daemon_pid(&game, &mnt, &["--cache-size", &format!("{cache_mib}M")]);
    let start = Instant::now();
    let ls = std::process::Command::new("ls")
        .arg("-lR")
        .arg(mnt.join("objects3d"))
        .output()
        .unwrap();
    let took = start.elapsed();
    let listing = String::from_utf8_lossy(&ls.stdout);
    assert!(
        std::fs::read_dir(mnt.join("objects3d")).is_ok(),
        "the daemon died: {listing}"
    );
    let kinds: std::collections::BTreeMap<String, bool> = std::fs::read_dir(mnt.join("objects3d"))
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                e.file_type().unwrap().is_dir(),
            )
        })
        .collect();
    assert_eq!(kinds.get("bomb.3do"), Some(&false), "{kinds:?}");
    assert_eq!(kinds.get("under.3do"), Some(&false), "{kinds:?}");
    assert_eq!(kinds.get("small.3do"), Some(&true), "{kinds:?}");
    let obj = std::fs::read_to_string(mnt.join("objects3d/small.3do/model.obj")).unwrap();
    assert_eq!(obj.matches("\no p\n").count(), 4, "{obj}");
    let hwm = vm_hwm_kib(pid);
    println!(
        "daemon VmHWM {} MiB after ls -lR ({took:?}) of the 3DO bombs",
        hwm / 1024
    );
    assert!(
        hwm <= (cache_mib + 64) * 1024,
        "daemon peak RSS {} MiB over --cache-size {cache_mib} MiB + 64 MiB",
        hwm / 1024
    );
}

/// The same models inside a `.ufo`: listed in the archive's own folder and, with
/// `--merged`, as the game sees them; the daemon stays within `--cache-size` + 64 MiB.
#[test]
fn listing_a_3do_bomb_inside_an_archive_keeps_the_daemon_within_the_cache_size() {
    if !fuse_available() {
        return;
    }
    use tafs::formats::hpi;
    let t = tempfile::tempdir().unwrap();
    let game = t.path().join("game");
    std::fs::create_dir_all(&game).unwrap();
    let ufo = hpi::write(
        &[hpi::Node::dir(
            b"objects3d".to_vec(),
            vec![
                hpi::Node::file(b"bomb.3do".to_vec(), bomb()),
                hpi::Node::file(b"under.3do".to_vec(), shared_bomb(20, 200, 1000)),
                hpi::Node::file(b"small.3do".to_vec(), shared_bomb(4, 6, 8)),
            ],
        )],
        &hpi::WriteOptions::v1(),
    )
    .unwrap();
    std::fs::write(game.join("z.ufo"), &ufo).unwrap();
    let cache_mib = 32u64;
    for (i, merged) in [false, true].into_iter().enumerate() {
        let mnt = t.path().join(format!("mnt{i}"));
        let _guard = UnmountGuard(mnt.clone());
        let cache = format!("{cache_mib}M");
        let mut args = vec!["--cache-size", cache.as_str()];
        if merged {
            args.push("--merged");
        }
        let pid = daemon_pid(&game, &mnt, &args);
        let dir = if merged {
            mnt.join("objects3d")
        } else {
            mnt.join("z.ufo/objects3d")
        };
        let start = Instant::now();
        let ls = std::process::Command::new("ls")
            .arg("-lR")
            .arg(&mnt)
            .output()
            .unwrap();
        let took = start.elapsed();
        assert!(
            std::fs::read_dir(&dir).is_ok(),
            "the daemon died: {}",
            String::from_utf8_lossy(&ls.stdout)
        );
        for (name, is_dir) in [
            ("bomb.3do", false),
            ("under.3do", false),
            ("small.3do", true),
        ] {
            assert_eq!(dir.join(name).is_dir(), is_dir, "merged {merged}: {name}");
        }
        let obj = std::fs::read_to_string(dir.join("small.3do/model.obj")).unwrap();
        assert_eq!(obj.matches("\no p\n").count(), 4, "{obj}");
        let hwm = vm_hwm_kib(pid);
        println!(
            "merged {merged}: daemon VmHWM {} MiB after ls -lR ({took:?}) of the 3DO bombs in a \
             {} byte .ufo",
            hwm / 1024,
            ufo.len()
        );
        assert!(
            hwm <= (cache_mib + 64) * 1024,
            "merged {merged}: daemon peak RSS {} MiB over --cache-size {cache_mib} MiB + 64 MiB",
            hwm / 1024
        );
    }
}
