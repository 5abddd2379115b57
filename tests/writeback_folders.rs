//! Folders of a GAF through a real mount with real tools: `cp -r`, `cp -a` and `mv` of
//! sequence folders give exactly one new or renamed sequence (never growth at later saves),
//! sequences whose folder starts with `.` (a `.hidden` name, the safe folder of `../../x`)
//! survive a commit, a frame swap with `mv` answers 0, `rsync --delete` from a tree without
//! `metadata.json` fails visibly, and a dump copied into `mkdir new.gaf` by cp -r, cp -a,
//! tar, unzip, git clone or rsync exits 0 and builds the binary `tafs gaf build` gives.
//! After each commit the asset directory must show exactly `tafs gaf dump` of the new binary.

mod common;
mod mount_common;
mod writeback_common;

use common::tafs_ok as tafs;
use mount_common::{fuse_available, sh, GameMount};
use std::path::Path;
use std::process::Command;
use writeback_common::{edit_png, edited_later, parse, sample_bytes};

/// A writable mount of a game folder holding a GAF at `anims/multi.gaf`.
type Env = GameMount;

impl Env {
    /// Sequence names of the binary, in order.
    fn names(&self) -> Vec<String> {
        parse(&self.bin())
            .sequences
            .iter()
            .map(|s| {
                let n = &s.name;
                let end = n.iter().position(|&b| b == 0).unwrap_or(n.len());
                String::from_utf8_lossy(&n[..end]).into_owned()
            })
            .collect()
    }
    /// The asset directory equals `tafs gaf dump` of the binary (the status file aside, and
    /// the previews `cp` copied, which keep reading back as written: SEMANTICS.md, "Known
    /// limitations").
    fn shows_the_binary(&self, what: &str) {
        self.shows_the_binary_but(what, &[]);
    }
    /// [`Env::shows_the_binary`], files named `but` aside.
    fn shows_the_binary_but(&self, what: &str, but: &[&str]) {
        let d = self
            .dir
            .path()
            .join(format!("dump-{}", what.replace(' ', "_")));
        let _ = std::fs::remove_dir_all(&d);
        tafs(&[
            "gaf",
            "dump",
            self.bin().to_str().unwrap(),
            "-t",
            d.to_str().unwrap(),
        ]);
        let mut diff = Command::new("diff");
        diff.args(["-r", "-x", ".tafs-status", "-x", "animated.png"]);
        for b in but {
            diff.args(["-x", b]);
        }
        let out = diff.arg(&d).arg(self.asset()).output().unwrap();
        assert!(
            out.status.success(),
            "{what}: the asset directory is not the binary's dump:\n{}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
    /// Saves an edit of frame 0 of sequence folder `seq` with `cp` (a commit).
    fn save_frame(&self, seq: &str) {
        let p = self.asset().join(seq).join("0.png");
        let png = std::fs::read(&p).unwrap();
        let (edited, _) = edit_png(&png, 1);
        let tmp = self.dir.path().join("edited.png");
        std::fs::write(&tmp, edited).unwrap();
        sh(&format!("cp {} {}", tmp.display(), p.display()));
    }
}

/// A GAF of four sequences built from the sample GAF's first sequence: `ARMRL`, `ARMLLT`,
/// `.hidden` and `../../x` (shown as `.._.._x`), mounted with write-back.
fn env() -> Option<Env> {
    let e = GameMount::new("anims/multi.gaf", &[], |dir, bin| {
        let sample = dir.join("sample.gaf");
        std::fs::write(&sample, sample_bytes()).unwrap();
        let sd = dir.join("sample");
        tafs(&[
            "gaf",
            "dump",
            sample.to_str().unwrap(),
            "-t",
            sd.to_str().unwrap(),
        ]);
        let meta: serde_json::Value =
            serde_json::from_slice(&std::fs::read(sd.join("metadata.json")).unwrap()).unwrap();
        let first = meta["sequences"][0]["dir"].as_str().unwrap().to_string();
        let src = dir.join("src");
        std::fs::create_dir_all(&src).unwrap();
        for (i, (dir_name, name)) in [
            ("ARMRL", "ARMRL"),
            ("ARMLLT", "ARMLLT"),
            ("hid", ".hidden"),
            ("hos", "../../x"),
        ]
        .iter()
        .enumerate()
        {
            let to = src.join(dir_name);
            sh(&format!(
                "cp -r {} {}",
                sd.join(&first).display(),
                to.display()
            ));
            std::fs::write(
                to.join("sequence.csv"),
                format!("index,name,loop_flags,unknown4\n{i},{name},1,0\n"),
            )
            .unwrap();
        }
        tafs(&[
            "gaf",
            "build",
            src.to_str().unwrap(),
            "-t",
            bin.to_str().unwrap(),
        ]);
    })?;
    assert_eq!(e.names(), ["ARMRL", "ARMLLT", ".hidden", "../../x"]);
    Some(e)
}

fn listing(p: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(p)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n != ".tafs-status")
        .collect();
    v.sort();
    v
}

#[test]
fn copied_and_moved_sequence_folders_are_one_sequence_each() {
    let Some(e) = env() else { return };
    let a = e.asset();
    // cp -r and cp -a of a sequence folder: exit 0, one new sequence each, named after its
    // folder and placed after the one it was copied from
    sh(&format!("cp -r {0}/ARMRL {0}/ARMRLcopy", a.display()));
    sh(&format!("cp -a {0}/ARMLLT {0}/ARMLLTa", a.display()));
    assert_eq!(
        e.names(),
        [
            "ARMRL",
            "ARMRLcopy",
            "ARMLLT",
            "ARMLLTa",
            ".hidden",
            "../../x"
        ]
    );
    e.shows_the_binary("after the copies");
    // later saves do not grow it
    for _ in 0..3 {
        e.save_frame("ARMLLT");
        assert_eq!(e.names().len(), 6, "{:?}", e.names());
    }
    e.shows_the_binary("after saves");
    // mv renames the folder (no EXDEV, so no copy + delete) and the sequence, in place
    sh(&format!("mv {0}/ARMRLcopy {0}/ARMRL2", a.display()));
    assert_eq!(
        e.names(),
        ["ARMRL", "ARMRL2", "ARMLLT", "ARMLLTa", ".hidden", "../../x"]
    );
    e.save_frame("ARMRL2");
    assert_eq!(e.names().len(), 6);
    e.shows_the_binary("after the mv");
    assert_eq!(
        listing(&a),
        [
            ".._.._x",
            ".hidden",
            "ARMLLT",
            "ARMLLTa",
            "ARMRL",
            "ARMRL2",
            "metadata.json",
            "palette.gpl"
        ]
    );
    // a folder moved into itself is refused; the binary is unchanged
    let before = std::fs::read(e.bin()).unwrap();
    let o = Command::new("mv")
        .arg(a.join("ARMRL"))
        .arg(a.join("ARMRL/inner"))
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert_eq!(std::fs::read(e.bin()).unwrap(), before);
    // rsync of a tree holding a renamed sequence folder: one rename, not a new sequence
    let out = e.dir.path().join("out");
    sh(&format!("rsync -a {}/ {}/", a.display(), out.display()));
    sh(&format!("mv {0}/ARMLLTa {0}/ARMLLTb", out.display()));
    sh(&format!(
        "rsync -a --delete {}/ {}/",
        out.display(),
        a.display()
    ));
    // (rsync deletes the old folder before it sends the new one, so the index its copied
    // sequence.csv holds may now be another sequence's: the order is not checked)
    let mut names = e.names();
    names.sort();
    assert_eq!(
        names,
        ["../../x", ".hidden", "ARMLLT", "ARMLLTb", "ARMRL", "ARMRL2"]
    );
    // (rsync sent every file, metadata.json too, which builds the same binary and stays as
    // written; the renamed folder's sequence.csv shows the binary's row whichever commit
    // came first: writeback_core.rs,
    // `a_copied_sequence_csv_shows_the_binarys_row_whichever_commit_comes_first`)
    e.shows_the_binary_but("after the rsync", &["metadata.json"]);
    // the same with the last sequence's folder: its sequence.csv, sent last, then builds the
    // binary its frames.csv already committed (the no-change commit must replace it too)
    sh(&format!(
        "rsync -a --delete {}/ {}/",
        a.display(),
        out.display()
    ));
    let meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(a.join("metadata.json")).unwrap()).unwrap();
    let last = meta["sequences"].as_array().unwrap().last().unwrap()["dir"]
        .as_str()
        .unwrap()
        .to_string();
    sh(&format!("mv '{0}/{last}' {0}/Zlast", out.display()));
    sh(&format!(
        "rsync -a --delete {}/ {}/",
        out.display(),
        a.display()
    ));
    assert_eq!(
        e.names().last().map(String::as_str),
        Some("Zlast"),
        "{:?}",
        e.names()
    );
    e.shows_the_binary_but(
        "after the rsync of the renamed last folder",
        &["metadata.json"],
    );
}

#[test]
fn dot_named_sequences_survive_a_frame_edit() {
    let Some(e) = env() else { return };
    e.save_frame("ARMRL");
    assert_eq!(e.names(), ["ARMRL", "ARMLLT", ".hidden", "../../x"]);
    // an edit inside a dot-named sequence folder commits too
    let before = std::fs::read(e.bin()).unwrap();
    e.save_frame(".hidden");
    assert_ne!(std::fs::read(e.bin()).unwrap(), before, "no commit");
    e.save_frame(".._.._x");
    assert_eq!(e.names(), ["ARMRL", "ARMLLT", ".hidden", "../../x"]);
    e.shows_the_binary("after the edits");
}

/// `mv 1.png tmp.png; mv 0.png 1.png; mv tmp.png 0.png` of two frames of different sizes:
/// every step answers 0 and the swap commits (the images' sizes win where frames.csv does not
/// change them); a frames.csv edited to a size the image does not have is an error.
#[test]
fn a_frame_swap_with_mv_answers_zero_and_commits() {
    let Some(e) = env() else { return };
    let seq = e.asset().join("ARMRL");
    let f0 = std::fs::read(seq.join("0.png")).unwrap();
    let f1 = std::fs::read(seq.join("1.png")).unwrap();
    let before = std::fs::read(e.bin()).unwrap();
    // every step answers 0 ("mv: cannot stat" / "are the same file" before)
    sh(&format!(
        "cd {} && mv 1.png tmp.png && mv 0.png 1.png && mv tmp.png 0.png",
        seq.display()
    ));
    assert_eq!(std::fs::read(seq.join("0.png")).unwrap(), f1);
    assert_eq!(std::fs::read(seq.join("1.png")).unwrap(), f0);
    let status = std::fs::read_to_string(e.asset().join(".tafs-status")).unwrap();
    assert!(
        !status.contains("error") && !status.contains("pending"),
        "{status}"
    );
    let old = tafs::formats::gaf::parse(&before, &Default::default()).unwrap();
    let new = parse(&e.bin());
    let frame = |g: &tafs::formats::gaf::Gaf, i: usize| g.sequences[0].frames[i].frame.clone();
    let look = |f: &tafs::formats::gaf::Frame| {
        let p = f.pixels().expect("plain frames");
        (f.width, f.height, p.indices.clone(), p.opaque.clone())
    };
    assert_ne!(
        (frame(&old, 0).width, frame(&old, 0).height),
        (frame(&old, 1).width, frame(&old, 1).height),
        "the sample's frames 0 and 1 must differ in size"
    );
    assert_eq!(look(&frame(&new, 0)), look(&frame(&old, 1)), "{status}");
    assert_eq!(look(&frame(&new, 1)), look(&frame(&old, 0)), "{status}");
    // the origins stay with the rows, the other frames and sequences as they were
    assert_eq!(frame(&new, 0).origin_x, frame(&old, 0).origin_x);
    assert_eq!(new.sequences.len(), old.sequences.len());
    for i in 2..old.sequences[0].frames.len() {
        assert_eq!(look(&frame(&new, i)), look(&frame(&old, i)));
    }
    e.shows_the_binary("after the swap");
    // frames.csv edited to a size image 0 does not have: an error, the binary untouched
    let committed = std::fs::read(e.bin()).unwrap();
    let csv = std::fs::read_to_string(seq.join("frames.csv")).unwrap();
    let mut lines: Vec<String> = csv.lines().map(str::to_string).collect();
    let header: Vec<&str> = lines[0].split(',').collect();
    let wcol = header.iter().position(|h| *h == "width").unwrap();
    let mut row: Vec<String> = lines[1].split(',').map(str::to_string).collect();
    row[wcol] = (row[wcol].parse::<u32>().unwrap() + 3).to_string();
    lines[1] = row.join(",");
    let edited = e.dir.path().join("frames.csv");
    std::fs::write(&edited, lines.join("\n") + "\n").unwrap();
    sh(&format!(
        "cp {} {}",
        edited.display(),
        seq.join("frames.csv").display()
    ));
    let status = std::fs::read_to_string(e.asset().join(".tafs-status")).unwrap();
    assert!(
        status.contains("error") && status.contains("0.png"),
        "{status}"
    );
    assert_eq!(std::fs::read(e.bin()).unwrap(), committed);
}

#[test]
fn rsync_delete_without_metadata_json_fails_visibly() {
    let Some(e) = env() else { return };
    let a = e.asset();
    let out = e.dir.path().join("out");
    sh(&format!("rsync -a {}/ {}/", a.display(), out.display()));
    std::fs::remove_file(out.join("metadata.json")).unwrap();
    let png = std::fs::read(out.join("ARMRL/0.png")).unwrap();
    std::fs::write(out.join("ARMRL/0.png"), edit_png(&png, 1).0).unwrap();
    edited_later(&out.join("ARMRL/0.png"));
    let before = std::fs::read(e.bin()).unwrap();
    let o = Command::new("rsync")
        .arg("-a")
        .arg("--delete")
        .arg(format!("{}/", out.display()))
        .arg(format!("{}/", a.display()))
        .output()
        .unwrap();
    // the edit cannot be applied: rsync says so (it exited 0 and committed nothing before)
    assert!(!o.status.success(), "rsync exited 0");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("Input/output error"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let status = std::fs::read_to_string(a.join(".tafs-status")).unwrap();
    assert!(status.contains("metadata.json is deleted"), "{status}");
    assert_eq!(std::fs::read(e.bin()).unwrap(), before);
}

/// A dump copied into `mkdir NEW.gaf` by `tool` (a shell command with `{src}` and `{dst}`).
fn new_asset_by(tool: &str, prepare: &str) {
    let Some(e) = env() else { return };
    let src = e.dir.path().join("src-dump");
    tafs(&[
        "gaf",
        "dump",
        e.bin().to_str().unwrap(),
        "-t",
        src.to_str().unwrap(),
    ]);
    let want = e.dir.path().join("want.gaf");
    tafs(&[
        "gaf",
        "build",
        src.to_str().unwrap(),
        "-t",
        want.to_str().unwrap(),
    ]);
    let dst = e.mnt.join("anims/new.gaf");
    let fill = |s: &str| {
        s.replace("{src}", src.to_str().unwrap())
            .replace("{dst}", dst.to_str().unwrap())
            .replace("{tmp}", e.dir.path().to_str().unwrap())
    };
    if !prepare.is_empty() {
        sh(&fill(prepare));
    }
    std::fs::create_dir(&dst).unwrap();
    // exit 0: no "File exists", no "replace metadata.json?", no collided paths
    let out = sh(&format!("{} 2>&1 </dev/null", fill(tool)));
    assert!(!out.contains("collided"), "{out}");
    let bin = e.game.join("anims/new.gaf");
    let status = std::fs::read_to_string(dst.join(".tafs-status")).unwrap_or_default();
    assert_eq!(
        std::fs::read(&bin).ok(),
        Some(std::fs::read(&want).unwrap()),
        "{tool}: the new binary is not `tafs gaf build` of the dump: {status}"
    );
    // with the dump's metadata.json, the original's own bytes
    assert_eq!(
        std::fs::read(&bin).unwrap(),
        std::fs::read(e.bin()).unwrap()
    );
}

#[test]
fn new_asset_by_cp_r() {
    new_asset_by("cp -r {src}/. {dst}/", "");
}

#[test]
fn new_asset_by_cp_a() {
    new_asset_by("cp -a {src}/. {dst}/", "");
}

#[test]
fn new_asset_by_tar_x() {
    new_asset_by(
        "tar xf {tmp}/d.tar -C {dst}",
        "cd {src} && tar cf {tmp}/d.tar .",
    );
}

#[test]
fn new_asset_by_unzip() {
    new_asset_by(
        "unzip -q {tmp}/d.zip -d {dst}",
        "cd {src} && zip -qr {tmp}/d.zip .",
    );
}

#[test]
fn new_asset_by_git_clone() {
    new_asset_by(
        "git clone -q {tmp}/repo {dst}",
        "cp -r {src} {tmp}/repo && cd {tmp}/repo && git init -q && git add -A && \
         git -c user.email=t@t -c user.name=t commit -qm dump",
    );
}

#[test]
fn new_asset_by_rsync() {
    new_asset_by("rsync -a {src}/ {dst}/", "");
}

#[test]
fn a_full_game_folder_answers_enospc_with_the_reason_in_the_status() {
    if !fuse_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let game = dir.path().join("game");
    std::fs::create_dir_all(&game).unwrap();
    // a small file system of its own for the game folder (root only)
    let Some(_u) = mount_common::small_tmpfs(&game, "1200k") else {
        return;
    };
    std::fs::create_dir_all(game.join("anims")).unwrap();
    std::fs::write(game.join("anims/fx.gaf"), sample_bytes()).unwrap();
    let mnt = dir.path().join("mnt");
    let state = dir.path().join("state");
    let m = mount_common::mount(
        &game,
        &mnt,
        &["--ttl", "0", "--state-dir", state.to_str().unwrap()],
    );
    // fill the game folder
    let _ = Command::new("dd")
        .arg("if=/dev/zero")
        .arg(format!("of={}", game.join("fill").display()))
        .args(["bs=1k", "count=4000"])
        .output();
    let a = mnt.join("anims/fx.gaf");
    let meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(a.join("metadata.json")).unwrap()).unwrap();
    let seq = meta["sequences"][0]["dir"].as_str().unwrap().to_string();
    let frame = a.join(&seq).join("0.png");
    let (edited, _) = edit_png(&std::fs::read(&frame).unwrap(), 1);
    let tmp = dir.path().join("e.png");
    std::fs::write(&tmp, edited).unwrap();
    let o = Command::new("cp").arg(&tmp).arg(&frame).output().unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("No space left on device"), "{err}");
    let status = std::fs::read_to_string(a.join(".tafs-status")).unwrap();
    assert!(status.contains("No space left"), "{status}");
    drop(m);
}
