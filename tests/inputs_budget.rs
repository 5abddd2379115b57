//! Rebuild inputs are checked against the format budgets before anything is allocated: a
//! block offset of 0xFFFF0000 in a map's metadata.json and a 3 GB frame PNG are refused at
//! once, with a message naming the field or the file.

mod common;
mod tnt_support;

use common::{children_max_rss_mib, tafs};
use std::path::Path;
use std::process::Output;
use std::time::Instant;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn a_huge_block_offset_in_metadata_json_is_refused_before_allocating() {
    let t = tempfile::tempdir().unwrap();
    let map = t.path().join("m.tnt");
    std::fs::write(&map, tnt_support::Fixture::small(8, 8, 4).bytes()).unwrap();
    let un = t.path().join("un");
    let o = tafs(&["tnt", "unpack", s(&map), "-t", s(&un)]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mp = un.join("metadata.json");
    let mut meta: serde_json::Value = serde_json::from_slice(&std::fs::read(&mp).unwrap()).unwrap();
    meta["layout"]["tile_gfx"][0] = serde_json::json!(0xFFFF_0000u64);
    std::fs::write(&mp, serde_json::to_vec_pretty(&meta).unwrap()).unwrap();
    let out = t.path().join("back.tnt");
    let start = Instant::now();
    let o = tafs(&["tnt", "pack", s(&un), "-t", s(&out)]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(err.contains("layout.tile_gfx"), "{err}");
    assert!(start.elapsed().as_secs() < 10);
    assert!(!out.exists());
    let rss = children_max_rss_mib();
    assert!(rss < 256, "pack peaked at {rss} MiB");
}

#[test]
fn a_3_gb_frame_png_is_refused_from_its_size() {
    let t = tempfile::tempdir().unwrap();
    let gaf = t.path().join("s.gaf");
    let o = tafs(&["gaf", "sample", "-t", s(&gaf)]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let dump = t.path().join("d");
    let o = tafs(&["gaf", "dump", s(&gaf), "-t", s(&dump)]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let png = std::fs::read_dir(&dump)
        .unwrap()
        .flatten()
        .find(|e| e.path().join("0.png").exists())
        .unwrap()
        .path()
        .join("0.png");
    // sparse: 3 GB long, no disk used
    std::fs::OpenOptions::new()
        .write(true)
        .open(&png)
        .unwrap()
        .set_len(3 << 30)
        .unwrap();
    let out = t.path().join("back.gaf");
    let start = Instant::now();
    let o = tafs(&["gaf", "build", s(&dump), "-t", s(&out)]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(err.contains("0.png") && err.contains("over the"), "{err}");
    assert!(start.elapsed().as_secs() < 10);
    let rss = children_max_rss_mib();
    assert!(rss < 256, "build peaked at {rss} MiB");
}

/// A GAF dump of the sample with its `metadata.json` layout changed by `edit`, then built:
/// the build's output.
fn build_with_layout(
    edit: impl FnOnce(&mut serde_json::Value),
) -> (Output, std::path::PathBuf, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path();
    let gaf = t.join("s.gaf");
    let o = tafs(&["gaf", "sample", "-t", s(&gaf)]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let dump = t.join("d");
    let o = tafs(&["gaf", "dump", s(&gaf), "-t", s(&dump)]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mp = dump.join("metadata.json");
    let mut meta: serde_json::Value = serde_json::from_slice(&std::fs::read(&mp).unwrap()).unwrap();
    assert!(
        meta["layout"]["end"].is_u64(),
        "the dump records its layout"
    );
    edit(&mut meta);
    std::fs::write(&mp, serde_json::to_vec_pretty(&meta).unwrap()).unwrap();
    let out = t.join("back.gaf");
    (tafs(&["gaf", "build", s(&dump), "-t", s(&out)]), out, dir)
}

#[test]
fn a_gaf_layout_end_past_every_block_is_refused_not_padded_with_zeros() {
    // unedited: builds, and equals the original
    let (o, out, _t) = build_with_layout(|_| {});
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(std::fs::metadata(&out).unwrap().len() < 1 << 20);
    // a 1 GiB end would have been written as a 1 GiB file of zeros
    let (o, out, _t) = build_with_layout(|m| m["layout"]["end"] = serde_json::json!(1u64 << 30));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success(),
        "built {:?}",
        std::fs::metadata(&out).map(|m| m.len())
    );
    assert!(
        err.contains("layout") && err.contains("end 1073741824"),
        "{err}"
    );
    assert!(!out.exists());
}

#[test]
fn a_gaf_layout_payload_slot_beyond_the_pixel_budget_is_refused() {
    let (o, out, _t) = build_with_layout(|m| {
        let seqs = m["layout"]["sequences"].as_array_mut().unwrap();
        let first = seqs[0].as_str().unwrap().to_owned();
        // the first frame's payload claims 900 MB (under the 1 GiB cap on `end`)
        let (head, rest) = first.split_once('+').unwrap();
        let tail = rest
            .split_once(' ')
            .map_or(String::new(), |(_, t)| format!(" {t}"));
        seqs[0] = serde_json::json!(format!("{head}+900000000{tail}"));
        m["layout"]["end"] = serde_json::json!(900_100_000u64);
    });
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(err.contains("payload slots total 9000"), "{err}");
    assert!(!out.exists());
}
