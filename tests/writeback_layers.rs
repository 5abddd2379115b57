//! A composite frame's `<n>.png` and its `<n>.layers/` decided by content, not by arrival
//! order, through a real mount: an export of the asset directory (`rsync -a`) with one layer
//! edited, copied back with `cp -a` (the layer arriving before or after the export's stale
//! `<n>.png`), keeps the layer edit; an edited `<n>.png` is an edit; both edited differently
//! is a conflict that fails the save (`cp` exits non-zero) and is in the status. The binary
//! must equal `tafs gaf build --base` of the edited export (SEMANTICS.md, "Commit").

mod mount_common;
mod writeback_common;

use mount_common::{sh, GameMount};
use std::path::{Path, PathBuf};
use std::process::Command;
use writeback_common::{edit_png, gaf_build_base, sample_bytes};

/// A writable mount of a game folder holding the self-made GAF at `anims/fx.gaf`.
type Env = GameMount;

impl Env {
    /// `rsync -a` of the asset directory to folder `name`.
    fn export(&self, name: &str) -> PathBuf {
        let l = self.path(name);
        sh(&format!(
            "rsync -a {}/ {}/",
            self.asset().display(),
            l.display()
        ));
        l
    }
    /// `tafs gaf build --base BINARY` of folder `l`.
    fn build(&self, l: &Path) -> Vec<u8> {
        gaf_build_base(l, &self.bin(), &self.path("want.gaf"))
    }
}

fn env() -> Option<Env> {
    GameMount::new("anims/fx.gaf", &[], |_, bin| {
        std::fs::write(bin, sample_bytes()).unwrap()
    })
}

/// The sample's composite frame image and one of its layers.
const IMAGE: &str = "turret/0.png";
const LAYER: &str = "turret/0.layers/0.png";

/// Repaints the first opaque pixel of PNG `p` with palette index `to`.
fn repaint(p: &Path, to: u8) {
    let (png, _) = edit_png(&std::fs::read(p).unwrap(), to);
    std::fs::write(p, png).unwrap();
}

/// `cp -a` of folder `sub` of export `l` back into the asset directory, `first` copied
/// before the rest.
fn copy_back(e: &Env, l: &Path, sub: &str, first: &[&str]) {
    for f in first {
        sh(&format!(
            "cp -a {} {}",
            l.join(f).display(),
            e.asset().join(f).display()
        ));
    }
    sh(&format!(
        "cp -a {}/. {}/",
        l.join(sub).display(),
        e.asset().join(sub).display()
    ));
}

/// Only the sequence folder is copied back (no `metadata.json` of the export saying what the
/// image was), `first` before the rest; then the whole export again.
fn layer_edit_survives_the_stale_image(first: &[&str]) {
    let Some(e) = env() else { return };
    assert!(e.asset().join(LAYER).exists(), "the sample has a composite");
    let l = e.export("L");
    repaint(&l.join(LAYER), 0xB7);
    let want = e.build(&l);
    let before = std::fs::read(e.bin()).unwrap();
    assert_ne!(want, before);
    copy_back(&e, &l, "turret", first);
    let st = e.status();
    assert!(!st.contains("error"), "{st}");
    assert_eq!(
        std::fs::read(e.bin()).unwrap(),
        want,
        "first {first:?}: the layer edit is not in the binary: {st}"
    );
    // the layer edit is a composite's: the frame is still one
    let g = writeback_common::parse(&e.bin());
    let turret = g
        .sequences
        .iter()
        .find(|s| s.name_str() == "turret")
        .unwrap();
    assert!(matches!(
        turret.frames[0].frame.content,
        tafs::formats::gaf::Content::Layers(_)
    ));
    // and a push of the same export again commits nothing
    let id = std::fs::read(e.bin()).unwrap();
    copy_back(&e, &l, "turret", &[]);
    copy_back(&e, &l, "", &[]);
    assert_eq!(std::fs::read(e.bin()).unwrap(), id, "{}", e.status());
}

#[test]
fn a_layer_edit_wins_over_the_stale_image_arriving_after_it() {
    layer_edit_survives_the_stale_image(&[LAYER]);
}

#[test]
fn a_layer_edit_wins_over_the_stale_image_arriving_before_it() {
    layer_edit_survives_the_stale_image(&[IMAGE]);
}

#[test]
fn an_edited_image_is_an_edit() {
    let Some(e) = env() else { return };
    let l = e.export("L");
    repaint(&l.join(IMAGE), 0xB7);
    let want = e.build(&l);
    copy_back(&e, &l, "", &[]);
    let st = e.status();
    assert!(!st.contains("error"), "{st}");
    assert_eq!(std::fs::read(e.bin()).unwrap(), want, "{st}");
}

#[test]
fn an_image_and_a_layer_edited_differently_are_a_conflict() {
    let Some(e) = env() else { return };
    let l = e.export("L");
    repaint(&l.join(LAYER), 0xB7);
    repaint(&l.join(IMAGE), 0xB8);
    // the export's metadata.json says what both were when exported
    sh(&format!(
        "cp -a {} {}",
        l.join("metadata.json").display(),
        e.asset().join("metadata.json").display()
    ));
    sh(&format!(
        "cp -a {} {}",
        l.join(LAYER).display(),
        e.asset().join(LAYER).display()
    ));
    let after_layer = std::fs::read(e.bin()).unwrap();
    let image_now = e.dir.path().join("image-now.png");
    std::fs::copy(e.asset().join(IMAGE), &image_now).unwrap();
    let out = Command::new("cp")
        .arg(l.join(IMAGE))
        .arg(e.asset().join(IMAGE))
        .output()
        .unwrap();
    assert!(!out.status.success(), "the conflicting save succeeded");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("Input/output error"), "{err}");
    let st = e.status();
    assert!(st.contains("conflict") && st.contains(IMAGE), "{st}");
    assert_eq!(std::fs::read(e.bin()).unwrap(), after_layer);
    // resolved by saving the image the mount showed (the layers' flattening): the layers win
    sh(&format!(
        "cp {} {}",
        image_now.display(),
        e.asset().join(IMAGE).display()
    ));
    let st = e.status();
    assert!(!st.contains("error"), "after the fix: {st}");
    assert_eq!(std::fs::read(e.bin()).unwrap(), after_layer);
}
