//! A second identical push is a no-op, through a real mount with the real tools: an edited
//! backup of an asset directory (made with `rsync -a` from the mount, one frame edited) pushed
//! back twice with `rsync -a`, `cp -a`, `tar x` and `unzip -o`, and a `git checkout` back and
//! forth in a repository kept in the asset directory. The first push commits the edit (the
//! binary equals `tafs gaf build --base` of the backup); the second commits nothing (binary
//! inode and mtime unchanged, no history entry) and `rsync` transfers nothing but the stale
//! previews of the edited sequence once (SEMANTICS.md, "Commit").

mod mount_common;
mod writeback_common;

use mount_common::{fuse_available, sh, GameMount};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use writeback_common::{edit_png, gaf_build_base, sample_bytes, tnt_pack};

/// A writable mount of a game folder holding the self-made GAF at `anims/fx.gaf`.
type Env = GameMount;

impl Env {
    /// Versions in the history of the binary.
    fn history(&self) -> usize {
        let abs = std::path::absolute(self.bin()).unwrap();
        tafs::fs::stage::history_of(&tafs::fs::stage::history_dir(&self.state, &abs)).len()
    }
    /// Inode, mtime (s, ns) and size of the binary.
    fn ident(&self) -> (u64, i64, i64, u64) {
        let m = std::fs::metadata(self.bin()).unwrap();
        (m.ino(), m.mtime(), m.mtime_nsec(), m.len())
    }
}

/// Mount options of the push tests: every save its own history version (the tests count
/// commits by versions).
const EVERY_SAVE: &[&str] = &["--operation-gap", "0"];

/// A writable mount of a game folder holding the self-made GAF.
fn env() -> Option<Env> {
    GameMount::new("anims/fx.gaf", EVERY_SAVE, |_, bin| {
        std::fs::write(bin, sample_bytes()).unwrap();
        // an old binary: a commit's new mtime differs from it by more than rsync's 1 s window
        sh(&format!("touch -d 2001-02-03T04:05:06 {}", bin.display()));
    })
}

/// `rsync -a` of the asset directory to a backup folder, with frame `pulse/1.png` edited in
/// the backup. Returns the backup and the binary the edit must give (`tafs gaf build
/// --base` of the backup).
fn edited_backup(e: &Env) -> (PathBuf, Vec<u8>) {
    let b = e.path("backup");
    sh(&format!(
        "rsync -a {}/ {}/",
        e.asset().display(),
        b.display()
    ));
    let f = b.join("pulse/1.png");
    let (png, _) = edit_png(&std::fs::read(&f).unwrap(), 0xB5);
    std::fs::write(&f, png).unwrap();
    // saved later than the dump (rsync's quick check compares size and mtime)
    sh(&format!("touch -d 2031-01-02T03:04:05 {}", f.display()));
    // and a file whose bytes stay the generated ones made private: its mode carries over too
    sh(&format!("chmod 600 {}", b.join("panel/0.png").display()));
    let want = gaf_build_base(&b, &e.bin(), &e.path("want.gaf"));
    assert_ne!(
        want,
        std::fs::read(e.bin()).unwrap(),
        "the edit changes nothing"
    );
    (b, want)
}

/// Files `rsync -ai` itemized as transferred (lines starting with `>f` / `cf`).
fn transferred(itemized: &str) -> Vec<String> {
    itemized
        .lines()
        .filter(|l| l.starts_with(">f") || l.starts_with("cf"))
        .map(|l| l.split_once(' ').map_or(l, |x| x.1).to_string())
        .collect()
}

/// What an `rsync -ai -n` of `b` onto the asset directory would do (empty: the mount shows
/// exactly the backup's files, sizes and mtimes).
fn rsync_dry(e: &Env, b: &Path) -> String {
    sh(&format!(
        "rsync -ai -n {}/ {}/",
        b.display(),
        e.asset().display()
    ))
}

/// Pushes backup `b` twice with `push`; the first commits `want`, the second nothing.
fn twice(e: &Env, b: &Path, want: &[u8], tool: &str, push: impl Fn()) {
    let h0 = e.history();
    push();
    assert_eq!(
        std::fs::read(e.bin()).unwrap(),
        want,
        "{tool}: first push: {}",
        e.status()
    );
    assert_eq!(e.history(), h0 + 1, "{tool}: first push: one commit");
    let id = e.ident();
    push();
    assert_eq!(e.ident(), id, "{tool}: the second push rewrote the binary");
    assert_eq!(e.history(), h0 + 1, "{tool}: the second push committed");
    let st = e.status();
    assert!(
        !st.contains("error") && !st.contains("pending"),
        "{tool}: {st}"
    );
    // the mount now shows the backup as it is (user attributes carried over: no file to send,
    // none whose mode or mtime differs)
    let dry = rsync_dry(e, b);
    assert!(
        transferred(&dry).is_empty(),
        "{tool}: rsync would send: {dry}"
    );
    assert!(
        !dry.lines().any(|l| l.starts_with(".f")),
        "{tool}: attributes differ: {dry}"
    );
}

#[test]
fn second_rsync_of_an_edited_backup_transfers_nothing() {
    let Some(e) = env() else { return };
    let (b, want) = edited_backup(&e);
    let push = || {
        sh(&format!(
            "rsync -ai {}/ {}/",
            b.display(),
            e.asset().display()
        ))
    };
    let h0 = e.history();
    let first = push();
    println!("first: {first}");
    assert_eq!(transferred(&first), ["pulse/1.png"], "{first}");
    assert_eq!(std::fs::read(e.bin()).unwrap(), want, "{}", e.status());
    assert_eq!(e.history(), h0 + 1);
    let id = e.ident();
    // the binary's other files kept their mtime: only the edited sequence's preview, which
    // the edit changed, differs from the backup's (stale) copy and is sent once
    let second = push();
    println!("second: {second}");
    assert_eq!(transferred(&second), ["pulse/animated.png"], "{second}");
    assert_eq!(e.ident(), id, "the second rsync rewrote the binary");
    assert_eq!(e.history(), h0 + 1);
    let third = push();
    assert_eq!(third, "", "third rsync itemized");
    assert_eq!(e.ident(), id);
    let st = e.status();
    assert!(!st.contains("error") && !st.contains("pending"), "{st}");
}

#[test]
fn second_cp_a_tar_unzip_of_an_edited_backup_commit_nothing() {
    let Some(e) = env() else { return };
    let (b, want) = edited_backup(&e);
    let dst = e.asset();
    // each tool starts from the original binary again
    let orig = std::fs::read(e.bin()).unwrap();
    let reset = |e: &Env| {
        // restoring through the mount: a copy of the original dump pushed with rsync
        let o = e.path("orig");
        if !o.exists() {
            sh(&format!("rsync -a {}/ {}/", dst.display(), o.display()));
        }
        sh(&format!(
            "rsync -a --checksum {}/ {}/",
            o.display(),
            dst.display()
        ));
        assert_eq!(std::fs::read(e.bin()).unwrap(), orig, "{}", e.status());
    };
    reset(&e);
    twice(&e, &b, &want, "cp -a", || {
        sh(&format!("cp -a {}/. {}/", b.display(), dst.display()));
    });
    reset(&e);
    let tar = e.path("b.tar");
    sh(&format!("tar -C {} -cf {} .", b.display(), tar.display()));
    twice(&e, &b, &want, "tar x", || {
        sh(&format!("tar -C {} -xf {}", dst.display(), tar.display()));
    });
    reset(&e);
    let zip = e.path("b.zip");
    sh(&format!(
        "cd {} && zip -qr {} .",
        b.display(),
        zip.display()
    ));
    twice(&e, &b, &want, "unzip -o", || {
        sh(&format!("unzip -qo {} -d {}", zip.display(), dst.display()));
    });
}

#[test]
fn git_checkout_back_and_forth_commits_once_per_change() {
    let Some(e) = env() else { return };
    let dst = e.asset();
    let git = |args: &str| {
        sh(&format!(
            "cd {} && git -c user.name=t -c user.email=t@t -c init.defaultBranch=main {args}",
            dst.display()
        ))
    };
    let orig = std::fs::read(e.bin()).unwrap();
    git("init -q && git add -A && git commit -qm base");
    let h0 = e.history();
    let f = dst.join("pulse/1.png");
    let (png, _) = edit_png(&std::fs::read(&f).unwrap(), 0xB5);
    git("checkout -qb edit");
    std::fs::write(&f, png).unwrap();
    let edited = std::fs::read(e.bin()).unwrap();
    assert_ne!(edited, orig, "{}", e.status());
    assert_eq!(e.history(), h0 + 1);
    git("commit -qam edit");
    for (branch, want) in [("main", &orig), ("edit", &edited), ("main", &orig)] {
        let h = e.history();
        git(&format!("checkout -q {branch}"));
        assert_eq!(
            &std::fs::read(e.bin()).unwrap(),
            want,
            "{branch}: {}",
            e.status()
        );
        assert_eq!(e.history(), h + 1, "{branch}: one commit");
        let st = git("status --porcelain");
        assert_eq!(st.trim(), "", "{branch}: git sees changes");
        // again: nothing to do
        let id = e.ident();
        git(&format!("checkout -q {branch}"));
        let st = git("status --porcelain");
        assert_eq!(st.trim(), "", "{branch}: git sees changes");
        assert_eq!(
            e.ident(),
            id,
            "{branch}: a second checkout rewrote the binary"
        );
        assert_eq!(e.history(), h + 1);
    }
}

/// A map: an rsync backup with one tile edited, pushed with `rsync -a` twice. The first push
/// commits the tile (no tile added: the binary equals `tafs tnt pack` of the backup); later
/// pushes commit nothing and add no tile; the backup's stale `map.png` / `minimap.png` and
/// `metadata.json` (the edit changed the mosaic and its checksum) are sent once, then nothing
/// is.
#[test]
fn second_rsync_of_an_edited_map_backup_adds_no_tile() {
    let map = Path::new("../shared/corpus/game/maps/example.tnt");
    if !fuse_available() || !map.exists() {
        println!("skipped: no FUSE or no corpus map");
        return;
    }
    let Some(e) = GameMount::new("maps/example.tnt", EVERY_SAVE, |_, bin| {
        std::fs::copy(map, bin).unwrap();
        sh(&format!(
            "chmod 644 {0} && touch -d 2001-02-03T04:05:06 {0}",
            bin.display()
        ));
    }) else {
        return;
    };
    let bin = e.bin();
    let m = e.asset();
    let b = e.path("backup");
    sh(&format!("rsync -a {}/ {}/", m.display(), b.display()));
    let tiles = std::fs::read_dir(b.join("tiles")).unwrap().count();
    let tile = b.join("tiles/3.png");
    sh(&format!(
        "python3 -c \"from PIL import Image\nim=Image.open('{0}'); px=im.load()\n\
         for x in range(32):\n  for y in range(8): px[x,y]=(px[x,y]+7)%256\nim.save('{0}')\" \
         && touch -d 2031-01-02T03:04:05 {0}",
        tile.display()
    ));
    let want = tnt_pack(&b, &e.path("want.tnt"));
    let push = || sh(&format!("rsync -ai {}/ {}/", b.display(), m.display()));
    let first = push();
    let status = || e.status();
    assert_eq!(transferred(&first), ["tiles/3.png"], "{first}");
    assert_eq!(std::fs::read(&bin).unwrap(), want, "{}", status());
    let meta = std::fs::metadata(&bin).unwrap();
    let id = (meta.ino(), meta.mtime(), meta.mtime_nsec());
    let second = push();
    let sent = transferred(&second);
    assert!(
        sent.iter()
            .all(|f| ["map.png", "minimap.png", "metadata.json"].contains(&f.as_str())),
        "second rsync sent more than the stale renderings: {second}"
    );
    for _ in 0..2 {
        let again = push();
        assert!(
            transferred(&again).is_empty(),
            "a later rsync sent: {again}"
        );
    }
    let meta = std::fs::metadata(&bin).unwrap();
    assert_eq!(
        (meta.ino(), meta.mtime(), meta.mtime_nsec()),
        id,
        "{}",
        status()
    );
    assert_eq!(std::fs::read(&bin).unwrap(), want);
    assert_eq!(std::fs::read_dir(m.join("tiles")).unwrap().count(), tiles);
    let st = status();
    assert!(!st.contains("error") && !st.contains("pending"), "{st}");
}
