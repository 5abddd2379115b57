//! A commit costs what was edited, not the size of the asset (SEMANTICS.md, "Known
//! limitations"), driven through the core (no FUSE) with a view that counts what it renders:
//! saving one frame of a GAF renders no other frame image (their stored bytes are kept
//! without rendering and decoding them), and the binary is still exactly the edit. A commit
//! of frame images only is not built a second time to see whether it is stable: it is by
//! construction, and what it gives is what `tafs gaf build --base` gives of the visible tree.
//! A commit decodes one view, the new binary's (validated, then the new generation's view):
//! the binary it replaces is built from the view the mount holds of it, not read again.
//! Saving one tile of a map renders no other tile, nor the height map or minimap (the
//! map's own data stands for them), and is not built a second time either.

mod writeback_common;

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tafs::fs::Caller;
use tafs::fs::{Core, MountOptions};
use tafs::view::{AssetKind, Entry, View, ViewError, ViewOptions};
use writeback_common::{
    cp_onto, edit_png, gaf_build_base, ino, parse, payloads, read, sample_bytes, tnt_pack,
};

/// A view that records the frame images and CSV files it renders.
struct Counting {
    inner: Box<dyn View>,
    images: Arc<Mutex<Vec<String>>>,
}

impl View for Counting {
    fn entries(&self) -> &[Entry] {
        self.inner.entries()
    }
    fn render(&self, path: &str, out: &mut dyn Write) -> Result<(), ViewError> {
        let file = path.rsplit('/').next().unwrap_or(path);
        if (file.ends_with(".png") && file != "animated.png") || file.ends_with(".csv") {
            self.images.lock().unwrap().push(path.to_string());
        }
        self.inner.render(path, out)
    }
    fn size_hint(&self, path: &str) -> Option<u64> {
        self.inner.size_hint(path)
    }
    fn render_cost(&self, path: &str) -> u64 {
        self.inner.render_cost(path)
    }
}

#[test]
fn a_one_frame_commit_renders_no_other_frame() {
    let game = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(game.path().join("anims")).unwrap();
    let bin = game.path().join("anims/fx.gaf");
    std::fs::write(&bin, sample_bytes()).unwrap();
    let state = tempfile::tempdir().unwrap();
    let images = Arc::new(Mutex::new(Vec::new()));
    let opened = Arc::new(AtomicUsize::new(0));
    let (i2, o2) = (images.clone(), opened.clone());
    let opts = MountOptions {
        state_dir: Some(state.path().to_path_buf()),
        opener: Arc::new(
            move |kind: AssetKind, data: &tafs::view::SharedBytes, o: &ViewOptions| {
                o2.fetch_add(1, Ordering::Relaxed);
                let inner = tafs::view::open_shared(kind, data, o)?;
                Ok(Box::new(Counting {
                    inner,
                    images: i2.clone(),
                }) as Box<dyn View>)
            },
        ),
        ..MountOptions::default()
    };
    let core = Core::new(game.path(), opts, None).unwrap();
    let before = parse(&bin);
    for round in 0..2u8 {
        let frame = "anims/fx.gaf/pulse/2.png";
        let (edited, _) = edit_png(&read(&core, frame), 0xB0 + round);
        images.lock().unwrap().clear();
        cp_onto(&core, frame, &edited).unwrap();
        // nor the lists of the sequences of simple frames (their rows are the binary's);
        // those of `turret` (composite frames) are rendered and parsed
        let rendered = images.lock().unwrap().clone();
        assert!(
            rendered.iter().all(|p| p.starts_with("turret/")),
            "round {round}: the commit rendered: {rendered:?}"
        );
        let status = String::from_utf8(read(&core, "anims/fx.gaf/.tafs-status")).unwrap();
        assert!(status.contains("committed"), "{status}");
        // exactly that frame changed; every other frame kept its stored bytes
        let after = parse(&bin);
        let (b, a) = (payloads(&before), payloads(&after));
        assert_eq!(b.len(), a.len());
        let changed: Vec<&str> = b
            .iter()
            .zip(&a)
            .filter(|(x, y)| x != y)
            .map(|(x, _)| x.0.as_str())
            .collect();
        assert_eq!(changed, ["pulse/2"], "round {round}");
    }
    assert!(opened.load(Ordering::Relaxed) > 0);
}

/// A view that forwards everything, its GAF model included (a commit can build from it).
struct Forwarding {
    inner: Box<dyn View>,
}

impl View for Forwarding {
    fn entries(&self) -> &[Entry] {
        self.inner.entries()
    }
    fn render(&self, path: &str, out: &mut dyn Write) -> Result<(), ViewError> {
        self.inner.render(path, out)
    }
    fn render_cost(&self, path: &str) -> u64 {
        self.inner.render_cost(path)
    }
    fn gaf_model(&self) -> Option<&tafs::formats::gaf::Gaf> {
        self.inner.gaf_model()
    }
}

#[test]
fn a_commit_decodes_only_the_binary_it_writes() {
    let game = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(game.path().join("anims")).unwrap();
    let bin = game.path().join("anims/fx.gaf");
    std::fs::write(&bin, sample_bytes()).unwrap();
    let state = tempfile::tempdir().unwrap();
    let opened = Arc::new(AtomicUsize::new(0));
    let o2 = opened.clone();
    let opts = MountOptions {
        state_dir: Some(state.path().to_path_buf()),
        opener: Arc::new(
            move |kind: AssetKind, data: &tafs::view::SharedBytes, o: &ViewOptions| {
                o2.fetch_add(1, Ordering::Relaxed);
                Ok(Box::new(Forwarding {
                    inner: tafs::view::open_shared(kind, data, o)?,
                }) as Box<dyn View>)
            },
        ),
        ..MountOptions::default()
    };
    let core = Core::new(game.path(), opts, None).unwrap();
    let frame = "anims/fx.gaf/pulse/2.png";
    let mut png = read(&core, frame);
    for round in 0..3u8 {
        let (edited, _) = edit_png(&png, 0xB0 + round);
        let before = std::fs::read(&bin).unwrap();
        let n = opened.load(Ordering::Relaxed);
        cp_onto(&core, frame, &edited).unwrap();
        // the new binary, validated; not the one it replaced, nor the new one once more
        // for its generation
        assert_eq!(opened.load(Ordering::Relaxed) - n, 1, "round {round}");
        let after = std::fs::read(&bin).unwrap();
        assert_ne!(before, after, "round {round}");
        // the new generation shows the edit (its view is the validated one)
        png = read(&core, frame);
        assert_eq!(png, read(&core, frame));
        let shown = tafs::view::image::decode_png(&png).unwrap();
        let saved = tafs::view::image::decode_png(&edited).unwrap();
        assert!(shown.pixels == saved.pixels, "round {round}");
        // what `tafs gaf build --base` (the binary it replaced) gives of the visible tree
        let dir = tempfile::tempdir().unwrap();
        copy_out(&core, "anims/fx.gaf", &dir.path().join("fx"));
        std::fs::write(dir.path().join("base.gaf"), &before).unwrap();
        let again = gaf_build_base(
            &dir.path().join("fx"),
            &dir.path().join("base.gaf"),
            &dir.path().join("again.gaf"),
        );
        assert!(again == after, "round {round}");
    }
    // saving the image it shows again changes nothing (known without reading the binary)
    let before = std::fs::metadata(&bin).unwrap();
    cp_onto(&core, frame, &png).unwrap();
    let after = std::fs::metadata(&bin).unwrap();
    use std::os::unix::fs::MetadataExt;
    assert_eq!(
        (before.ino(), before.mtime_nsec()),
        (after.ino(), after.mtime_nsec())
    );
}

/// Copies the folder `path` of `core` (everything a listing shows) to `to`.
fn copy_out(core: &Core, path: &str, to: &std::path::Path) {
    use tafs::fs::FsOps;
    std::fs::create_dir_all(to).unwrap();
    let dh = core.opendir(Caller::root(), ino(core, path)).unwrap();
    let mut items = Vec::new();
    let mut off = 0;
    loop {
        let batch = core.readdir(Caller::root(), dh, off).unwrap();
        if batch.is_empty() {
            break;
        }
        for (next, it) in batch {
            off = next;
            let n = it.name.to_string_lossy().into_owned();
            if n != "." && n != ".." {
                items.push((n, it.kind == tafs::fs::FileKind::Dir));
            }
        }
    }
    core.releasedir(Caller::root(), dh).unwrap();
    for (n, dir) in items {
        let p = format!("{path}/{n}");
        if dir {
            copy_out(core, &p, &to.join(&n));
        } else {
            std::fs::write(to.join(&n), read(core, &p)).unwrap();
        }
    }
}

/// `png` (an indexed dump PNG) as an RGBA PNG of the same colours, with pixel `at` drawn in
/// the colour of palette index `to`.
fn as_rgba(png: &[u8], at: usize, to: u8) -> Vec<u8> {
    use tafs::view::image::{decode_png, PngPixels};
    let d = decode_png(png).unwrap();
    let PngPixels::Indexed {
        indices,
        plte,
        trns,
        ..
    } = d.pixels
    else {
        panic!("dump PNGs are indexed")
    };
    let ta = tafs::formats::palette::Palette::ta();
    let mut rgba = Vec::new();
    for (k, &i) in indices.iter().enumerate() {
        let i = usize::from(i);
        let alpha = trns.get(i).copied().unwrap_or(255);
        let rgb = if k == at && alpha != 0 {
            ta.colors[usize::from(to)].to_vec()
        } else {
            plte[3 * i..3 * i + 3].to_vec()
        };
        rgba.extend_from_slice(&rgb);
        rgba.push(alpha);
    }
    let mut out = Vec::new();
    tafs::view::gaf::truecolor::write_rgba_png(&mut out, d.width, d.height, &rgba).unwrap();
    out
}

#[test]
fn frame_image_commits_are_built_once_and_build_the_same_again() {
    let game = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(game.path().join("anims")).unwrap();
    let bin = game.path().join("anims/fx.gaf");
    std::fs::write(&bin, sample_bytes()).unwrap();
    let state = tempfile::tempdir().unwrap();
    let opts = MountOptions {
        state_dir: Some(state.path().to_path_buf()),
        ..MountOptions::default()
    };
    let core = Core::new(game.path(), opts, None).unwrap();
    const ASSET: &str = "anims/fx.gaf";
    let asset = ASSET;
    let status =
        |core: &Core| String::from_utf8(read(core, &format!("{asset}/.tafs-status"))).unwrap();
    type Edit = Box<dyn Fn(&Core) -> (String, Vec<u8>)>;
    let at = |f: &'static str| format!("{ASSET}/{f}");
    let edits: Vec<(&str, Edit)> = vec![
        (
            "one pixel of an RLE frame",
            Box::new(move |c: &Core| {
                let f = at("pulse/2.png");
                (f.clone(), edit_png(&read(c, &f), 0xB3).0)
            }),
        ),
        (
            "one pixel of a raw frame",
            Box::new(move |c: &Core| {
                let f = at("panel/0.png");
                (f.clone(), edit_png(&read(c, &f), 0xB4).0)
            }),
        ),
        (
            "an image of another size and frame copied over (its stored bytes reused)",
            Box::new(move |c: &Core| (at("pulse/1.png"), read(c, &at("pulse/4.png")))),
        ),
        (
            "an RGBA image (mapped to the palette)",
            Box::new(move |c: &Core| {
                let f = at("pulse/3.png");
                let png = read(c, &f);
                let (_, pos) = edit_png(&png, 0xB5);
                (f, as_rgba(&png, pos, 0xC1))
            }),
        ),
    ];
    for (what, edit) in &edits {
        let (file, bytes) = edit(&core);
        let before = std::fs::read(&bin).unwrap();
        cp_onto(&core, &file, &bytes).unwrap();
        let after = std::fs::read(&bin).unwrap();
        assert_ne!(before, after, "{what}: the binary changed");
        let st = status(&core);
        assert!(st.contains("committed"), "{what}: {st}");
        assert!(!st.contains(" check "), "{what}: built a second time: {st}");
        // built again from the binary it gave with the visible files on top: the same bytes
        let dir = tempfile::tempdir().unwrap();
        copy_out(&core, asset, &dir.path().join("fx"));
        let again = gaf_build_base(&dir.path().join("fx"), &bin, &dir.path().join("again.gaf"));
        assert!(again == after, "{what}: not stable: built again it differs");
    }
    // an edit of frames.csv is built again to find what it made outdated
    let csv = at("pulse/frames.csv");
    let text = String::from_utf8(read(&core, &csv)).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let header: Vec<&str> = lines[0].split(',').collect();
    let d = header.iter().position(|h| *h == "duration_ticks").unwrap();
    let mut row: Vec<String> = lines[1].split(',').map(str::to_string).collect();
    row[d] = (row[d].parse::<u32>().unwrap() + 7).to_string();
    lines[1] = row.join(",");
    cp_onto(&core, &csv, (lines.join("\n") + "\n").as_bytes()).unwrap();
    let st = status(&core);
    assert!(st.contains("committed") && st.contains(" check "), "{st}");
}

/// A view that counts the images it renders and forwards its map model.
struct CountingMap {
    inner: Box<dyn View>,
    images: Arc<Mutex<Vec<String>>>,
}

impl View for CountingMap {
    fn entries(&self) -> &[Entry] {
        self.inner.entries()
    }
    fn render(&self, path: &str, out: &mut dyn Write) -> Result<(), ViewError> {
        if path.ends_with(".png") {
            self.images.lock().unwrap().push(path.to_string());
        }
        self.inner.render(path, out)
    }
    fn render_cost(&self, path: &str) -> u64 {
        self.inner.render_cost(path)
    }
    fn tnt_model(&self) -> Option<tafs::view::tnt::PackBase<'_>> {
        self.inner.tnt_model()
    }
}

#[test]
fn a_one_tile_commit_renders_no_other_tile_and_packs_as_the_tree_does() {
    let game = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(game.path().join("maps")).unwrap();
    let bin = game.path().join("maps/demo.tnt");
    let map = tafs::sample::demo_map();
    std::fs::write(&bin, tafs::formats::tnt::write(&map).unwrap()).unwrap();
    let state = tempfile::tempdir().unwrap();
    let images = Arc::new(Mutex::new(Vec::new()));
    let i2 = images.clone();
    let opts = MountOptions {
        state_dir: Some(state.path().to_path_buf()),
        opener: Arc::new(
            move |kind: AssetKind, data: &tafs::view::SharedBytes, o: &ViewOptions| {
                let inner = tafs::view::open_shared(kind, data, o)?;
                Ok(Box::new(CountingMap {
                    inner,
                    images: i2.clone(),
                }) as Box<dyn View>)
            },
        ),
        ..MountOptions::default()
    };
    let core = Core::new(game.path(), opts, None).unwrap();
    let limits = tafs::formats::Limits::default();
    for (round, tile) in [(0u8, 3usize), (1, 3), (2, 0)] {
        let path = format!("maps/demo.tnt/tiles/{tile}.png");
        let (edited, _) = edit_png(&read(&core, &path), 0x50 + round);
        let before = std::fs::read(&bin).unwrap();
        images.lock().unwrap().clear();
        cp_onto(&core, &path, &edited).unwrap();
        let rendered = images.lock().unwrap().clone();
        assert!(
            rendered.is_empty(),
            "round {round}: the commit rendered {rendered:?}"
        );
        let st = String::from_utf8(read(&core, "maps/demo.tnt/.tafs-status")).unwrap();
        assert!(st.contains("committed") && !st.contains(" check "), "{st}");
        // exactly that tile changed
        let after = std::fs::read(&bin).unwrap();
        let (b, a) = (
            tafs::formats::tnt::parse(&before, &limits).unwrap(),
            tafs::formats::tnt::parse(&after, &limits).unwrap(),
        );
        let tiles = |t: &tafs::formats::tnt::Tnt| -> Vec<Vec<u8>> {
            (0..t.tile_count())
                .map(|i| t.tile(i).unwrap().to_vec())
                .collect()
        };
        let changed: Vec<usize> = (0..b.tile_count())
            .filter(|&i| tiles(&b)[i] != tiles(&a)[i])
            .collect();
        assert_eq!(changed, [tile], "round {round}");
        assert_eq!(
            (&b.tilemap, &b.attrs, &b.minimap, &b.features),
            (&a.tilemap, &a.attrs, &a.minimap, &a.features),
            "round {round}"
        );
        // the edited tile holds the pixels saved
        let saved = tafs::view::image::decode_png(&edited).unwrap();
        let tafs::view::image::PngPixels::Indexed { indices, .. } = saved.pixels else {
            panic!("an indexed tile");
        };
        assert_eq!(a.tile(tile).unwrap(), &indices[..], "round {round}");
        // what `tafs tnt pack` of the visible tree gives
        let dir = tempfile::tempdir().unwrap();
        copy_out(&core, "maps/demo.tnt", &dir.path().join("demo"));
        let again = tnt_pack(&dir.path().join("demo"), &dir.path().join("again.tnt"));
        assert!(
            again == after,
            "round {round}: tnt pack of the tree differs"
        );
    }
}
