//! Change detection of a real FUSE mount (in this process, with the fake view of
//! `mount_common`): with the game folder watched the kernel caches for long, and changes made
//! directly in the game folder still show within the documented delay; without the watch the
//! same caching hides them (which is why polling keeps a short TTL). Also: the mode is
//! reported in the root `.tafs-status`.

mod mount_common;

use mount_common::{fake_opener, fuse_available, mount, put, replace, Mnt};
use std::path::Path;
use std::time::{Duration, Instant};
use tafs::fs::MountOptions;

/// What SEMANTICS.md promises for a direct change with the watch on ("within milliseconds");
/// the bound leaves room for a loaded machine.
const DELAY: Duration = Duration::from_secs(2);

/// A mount of a small fake game folder; `watch` as `--no-watch` leaves it; names and
/// attributes cached for an hour when not watched.
fn served(watch: bool) -> Mnt {
    let game = tempfile::tempdir().unwrap();
    put(&game.path().join("notes.txt"), "one");
    put(&game.path().join("anims/fx.gaf"), "FAKE\nf/0.txt=first\n");
    let opts = MountOptions {
        opener: fake_opener(),
        ttl: Duration::from_secs(3600),
        watch,
        ..MountOptions::default()
    };
    Mnt::serve(game, opts)
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Waits until `ok` holds (at most [`DELAY`]); the time it took, or `None`.
fn within(mut ok: impl FnMut() -> bool) -> Option<Duration> {
    let t0 = Instant::now();
    loop {
        if ok() {
            return Some(t0.elapsed());
        }
        if t0.elapsed() > DELAY {
            return None;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Reads the mount once so the kernel holds names, attributes, listings and pages.
fn warm(m: &Mnt) {
    assert_eq!(std::fs::read(m.mnt.join("notes.txt")).unwrap(), b"one");
    assert_eq!(
        std::fs::read(m.mnt.join("anims/fx.gaf/f/0.txt")).unwrap(),
        b"first"
    );
    assert_eq!(names(&m.mnt), ["anims", "notes.txt"]);
    assert_eq!(names(&m.mnt.join("anims")), ["fx.gaf"]);
}

#[test]
fn direct_changes_show_while_the_kernel_caches() {
    if !fuse_available() {
        return;
    }
    let m = served(true);
    warm(&m);
    // a second look is served by the kernel; the content is unchanged
    warm(&m);

    // a plain file written in place: size and bytes
    std::fs::write(m.game().join("notes.txt"), "twenty-two").unwrap();
    let t = within(|| {
        std::fs::metadata(m.mnt.join("notes.txt")).unwrap().len() == 10
            && std::fs::read(m.mnt.join("notes.txt")).unwrap() == b"twenty-two"
    });
    println!("plain file rewritten: {t:?}");
    assert!(t.is_some(), "a direct write did not show");

    // a binary replaced (temp file renamed over): its generated file
    replace(&m.game().join("anims/fx.gaf"), "FAKE\nf/0.txt=second!\n");
    let t = within(|| {
        std::fs::read(m.mnt.join("anims/fx.gaf/f/0.txt")).ok() == Some(b"second!".to_vec())
    });
    println!("binary replaced: {t:?}");
    assert!(t.is_some(), "a replaced binary did not show");

    // a binary rewritten in place
    std::fs::write(
        m.game().join("anims/fx.gaf"),
        "FAKE\nf/0.txt=third\ng.txt=new\n",
    )
    .unwrap();
    let t = within(|| {
        std::fs::read(m.mnt.join("anims/fx.gaf/f/0.txt")).ok() == Some(b"third".to_vec())
            && names(&m.mnt.join("anims/fx.gaf")) == ["f", "g.txt"]
    });
    println!("binary rewritten: {t:?}");
    assert!(t.is_some(), "a rewritten binary did not show");

    // names appearing and vanishing: cached listings are invalidated
    put(&m.game().join("added.txt"), "x");
    let t = within(|| names(&m.mnt) == ["added.txt", "anims", "notes.txt"]);
    assert!(t.is_some(), "a new file did not show: {:?}", names(&m.mnt));
    std::fs::remove_file(m.game().join("added.txt")).unwrap();
    let t = within(|| names(&m.mnt) == ["anims", "notes.txt"] && !m.mnt.join("added.txt").exists());
    assert!(
        t.is_some(),
        "a removed file still shows: {:?}",
        names(&m.mnt)
    );

    // a folder made directly, then a binary in it: the new folder is watched too
    put(&m.game().join("new/deep/b.gaf"), "FAKE\nx.txt=deep\n");
    let t =
        within(|| std::fs::read(m.mnt.join("new/deep/b.gaf/x.txt")).ok() == Some(b"deep".to_vec()));
    assert!(t.is_some(), "a binary in a new folder did not show");
    std::fs::write(m.game().join("new/deep/b.gaf"), "FAKE\nx.txt=deeper\n").unwrap();
    let t = within(|| {
        std::fs::read(m.mnt.join("new/deep/b.gaf/x.txt")).ok() == Some(b"deeper".to_vec())
    });
    assert!(t.is_some(), "a change in a new folder did not show");

    // a folder renamed directly: the old name goes, the new one lists its files
    std::fs::rename(m.game().join("new"), m.game().join("moved")).unwrap();
    let t = within(|| !m.mnt.join("new").exists() && names(&m.mnt.join("moved/deep")) == ["b.gaf"]);
    assert!(t.is_some(), "a renamed folder did not show");
    std::fs::write(m.game().join("moved/deep/b.gaf"), "FAKE\nx.txt=moved\n").unwrap();
    let t = within(|| {
        std::fs::read(m.mnt.join("moved/deep/b.gaf/x.txt")).ok() == Some(b"moved".to_vec())
    });
    assert!(t.is_some(), "a change in a renamed folder did not show");

    // a binary removed: its folder goes
    std::fs::remove_file(m.game().join("anims/fx.gaf")).unwrap();
    let t =
        within(|| names(&m.mnt.join("anims")).is_empty() && !m.mnt.join("anims/fx.gaf").exists());
    assert!(t.is_some(), "a removed binary still shows");
}

/// The control: the same mount without the watch (an hour of TTL) keeps showing what the
/// kernel cached, so the test above sees the watch's invalidations, not expired caches.
#[test]
fn without_the_watch_the_kernel_cache_hides_direct_changes() {
    if !fuse_available() {
        return;
    }
    let m = served(false);
    warm(&m);
    std::fs::write(m.game().join("notes.txt"), "twenty-two").unwrap();
    put(&m.game().join("added.txt"), "x");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(std::fs::metadata(m.mnt.join("notes.txt")).unwrap().len(), 3);
    // a listing is read again at every opendir without the watch
    assert_eq!(names(&m.mnt), ["added.txt", "anims", "notes.txt"]);
}

#[test]
fn the_mode_is_reported() {
    if !fuse_available() {
        return;
    }
    let game = tempfile::tempdir().unwrap();
    put(&game.path().join("a.txt"), "a");
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let state = state.to_str().unwrap();
    for (args, want) in [
        (
            vec!["--state-dir", state],
            "change detection: inotify watch (1 folders",
        ),
        (
            vec!["--state-dir", state, "--no-watch", "--ttl", "0.5"],
            "change detection: polling, TTL 0.5 s (--no-watch)",
        ),
    ] {
        let mnt = dir.path().join("mnt");
        let m = mount(game.path(), &mnt, &args);
        let status = std::fs::read_to_string(m.mnt.join(".tafs-status")).unwrap();
        assert!(status.contains(want), "{args:?}: {status}");
        drop(m);
        while mount_common::is_mounted(&mnt) {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
