//! Derived files by content, not by arrival order, through a real mount: a map folder
//! exported with rsync, one tile edited, copied back with `cp -a` (the tile arriving before
//! or after the stale `map.png`/`minimap.png`) keeps the tile edit and re-tiles nothing; an
//! edited `map.png` is still an edit. The binary must equal `tafs tnt pack` of the edited
//! export.

mod mount_common;
mod writeback_common;

use mount_common::{fuse_available, sh, GameMount};
use std::path::Path;
use writeback_common::tnt_pack;

const MAP: &str = "../shared/corpus/game/maps/example.tnt";

/// Changes the top 8 rows of an indexed PNG (palette index + 7), with Pillow.
fn edit_tile(png: &Path) {
    sh(&format!(
        "python3 -c \"from PIL import Image\nim=Image.open('{0}'); px=im.load()\n\
         for x in range(32):\n  for y in range(8): px[x,y]=(px[x,y]+7)%256\nim.save('{0}')\"",
        png.display()
    ));
}

/// Mounts a copy of the corpus map, exports it, edits what `edit` edits in the export, copies
/// the export back with `cp -a` after `first` (files copied before the rest), and checks the
/// binary against `tafs tnt pack` of the export.
fn round_trip(edit: &str, first: &[&str]) {
    if !fuse_available() || !Path::new(MAP).exists() {
        println!("skipped: no FUSE or no corpus map");
        return;
    }
    let Some(e) = GameMount::new("maps/example.tnt", &[], |_, bin| {
        std::fs::copy(MAP, bin).unwrap();
        sh(&format!("chmod 644 {}", bin.display()));
    }) else {
        return;
    };
    let bin = e.bin();
    let m = e.asset();
    let l = e.path("L");
    sh(&format!("rsync -a {}/ {}/", m.display(), l.display()));
    let tiles_before = std::fs::read_dir(l.join("tiles")).unwrap().count();
    edit_tile(&l.join(edit));
    let want = tnt_pack(&l, &e.path("want.tnt"));
    for f in first {
        sh(&format!(
            "cp -a {} {}",
            l.join(f).display(),
            m.join(f).display()
        ));
    }
    sh(&format!("cp -a {}/. {}/", l.display(), m.display()));
    let status = std::fs::read_to_string(m.join(".tafs-status")).unwrap();
    assert!(!status.contains("error"), "{status}");
    assert_eq!(
        std::fs::read(&bin).unwrap(),
        want,
        "the binary is not `tafs tnt pack` of the edited export ({edit}, first {first:?}): {status}"
    );
    if edit.starts_with("tiles/") {
        // the edited tile is in place and no tile was added
        assert_eq!(
            std::fs::read(m.join(edit)).unwrap(),
            std::fs::read(l.join(edit)).unwrap()
        );
        assert_eq!(
            std::fs::read_dir(m.join("tiles")).unwrap().count(),
            tiles_before
        );
    }
}

#[test]
fn tile_edit_wins_over_a_stale_map_png_arriving_after_it() {
    round_trip("tiles/3.png", &["tiles/3.png"]);
}

#[test]
fn tile_edit_wins_over_a_stale_map_png_arriving_before_it() {
    round_trip("tiles/3.png", &["map.png", "minimap.png", "metadata.json"]);
}

#[test]
fn an_edited_map_png_is_an_edit() {
    round_trip("map.png", &[]);
}

#[test]
fn an_edited_map_png_arriving_before_the_stale_tilemap_is_an_edit() {
    // the re-tiling commit renumbers tilemap.csv; the export's copy arriving after it is the
    // earlier rendering, not an edit
    round_trip("map.png", &["map.png"]);
}
