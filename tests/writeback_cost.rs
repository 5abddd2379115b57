//! A commit costs what was edited, not the size of the asset (SEMANTICS.md, "Known
//! limitations"), driven through the core (no FUSE) with a view that counts what it renders:
//! saving one frame of a GAF renders no other frame image (their stored bytes are kept
//! without rendering and decoding them), and the binary is still exactly the edit.

mod writeback_common;

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tafs::fs::{Core, MountOptions};
use tafs::view::{AssetKind, Entry, View, ViewError, ViewOptions};
use writeback_common::{cp_onto, edit_png, parse, payloads, read, sample_bytes};

/// A view that records the frame images it renders.
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
        if file.ends_with(".png") && file != "animated.png" {
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
        opener: Arc::new(move |kind: AssetKind, data: &[u8], o: &ViewOptions| {
            o2.fetch_add(1, Ordering::Relaxed);
            let inner = tafs::view::open(kind, data, o)?;
            Ok(Box::new(Counting {
                inner,
                images: i2.clone(),
            }) as Box<dyn View>)
        }),
        ..MountOptions::default()
    };
    let core = Core::new(game.path(), opts, None).unwrap();
    let before = parse(&bin);
    for round in 0..2u8 {
        let frame = "anims/fx.gaf/pulse/2.png";
        let (edited, _) = edit_png(&read(&core, frame), 0xB0 + round);
        images.lock().unwrap().clear();
        cp_onto(&core, frame, &edited).unwrap();
        let rendered = images.lock().unwrap().clone();
        assert!(
            rendered.is_empty(),
            "round {round}: the commit rendered frame images: {rendered:?}"
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
