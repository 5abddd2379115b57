//! Property test of the write-back (issue: "any sequence of ordinary file operations ends
//! with the binary `tafs gaf build` of the visible tree gives"), driven through the core (no
//! FUSE): random sequences of file operations on a GAF's asset directory — save a frame,
//! edit `frames.csv`, copy / move / delete a sequence folder, write back a stale
//! `animated.png` — and after every step the binary equals the model, `tafs gaf build --base`
//! of the tree the directory shows (read through the core), and replaying an idempotent step
//! changes nothing.

mod writeback_common;

use proptest::prelude::*;
use std::ffi::OsStr;
use tafs::formats::gaf;
use tafs::formats::palette::Palette;
use tafs::fs::core::ROOT;
use tafs::fs::{Caller, NewNode};
use tafs::fs::{Core, FsOps, MountOptions};
use tafs::view::gaf::{build, BuildOptions};
use tafs::view::MemFileSet;
use writeback_common::{edit_png, sample_bytes};

const ASSET: &str = "anims/fx.gaf";

#[derive(Debug, Clone)]
enum Op {
    /// Saves frame `frame` of sequence folder `seq` (indexes taken modulo) with one pixel
    /// set to `value`.
    Frame { seq: usize, frame: usize, value: u8 },
    /// Sets the first row's duration in the folder's `frames.csv`.
    Duration { seq: usize, ticks: u8 },
    /// `cp -r` of a sequence folder to a new name.
    Copy { seq: usize },
    /// `mv` of a sequence folder to a new name.
    Move { seq: usize },
    /// `rm -r` of a sequence folder (while more than one is left).
    Delete { seq: usize },
    /// Writes back the `animated.png` the folder had at the start (a stale preview).
    Stale { seq: usize },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..8usize, 0..8usize, 0x20u8..0xF0).prop_map(|(seq, frame, value)| Op::Frame { seq, frame, value }),
        2 => (0..8usize, 1u8..30).prop_map(|(seq, ticks)| Op::Duration { seq, ticks }),
        1 => (0..8usize).prop_map(|seq| Op::Copy { seq }),
        1 => (0..8usize).prop_map(|seq| Op::Move { seq }),
        1 => (0..8usize).prop_map(|seq| Op::Delete { seq }),
        1 => (0..8usize).prop_map(|seq| Op::Stale { seq }),
    ]
}

struct Fx {
    game: tempfile::TempDir,
    _state: tempfile::TempDir,
    core: Core,
}

impl Fx {
    fn new() -> Fx {
        let game = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(game.path().join("anims")).unwrap();
        std::fs::write(game.path().join(ASSET), sample_bytes()).unwrap();
        let state = tempfile::tempdir().unwrap();
        let opts = MountOptions {
            state_dir: Some(state.path().to_path_buf()),
            ..MountOptions::default()
        };
        let core = Core::new(game.path(), opts, None).unwrap();
        Fx {
            game,
            _state: state,
            core,
        }
    }

    fn bin(&self) -> Vec<u8> {
        std::fs::read(self.game.path().join(ASSET)).unwrap()
    }

    fn ino(&self, path: &str) -> Option<u64> {
        let mut i = ROOT;
        for c in path.split('/').filter(|c| !c.is_empty()) {
            i = self.core.lookup(Caller::root(), i, OsStr::new(c)).ok()?.ino;
        }
        Some(i)
    }

    /// (name, is folder) of the entries of folder `path`.
    fn list(&self, path: &str) -> Vec<(String, bool)> {
        let dh = self
            .core
            .opendir(Caller::root(), self.ino(path).unwrap())
            .unwrap();
        let mut out = Vec::new();
        let mut off = 0;
        loop {
            let items = self.core.readdir(Caller::root(), dh, off).unwrap();
            if items.is_empty() {
                break;
            }
            for (next, it) in items {
                off = next;
                let n = it.name.to_string_lossy().into_owned();
                if n != "." && n != ".." {
                    out.push((n, it.kind == tafs::fs::FileKind::Dir));
                }
            }
        }
        self.core.releasedir(Caller::root(), dh).unwrap();
        out.sort();
        out
    }

    fn read(&self, path: &str) -> Vec<u8> {
        let o = self
            .core
            .open(Caller::root(), self.ino(path).unwrap(), libc::O_RDONLY)
            .unwrap();
        let b = self.core.read(Caller::root(), o.fh, 0, 1 << 24).unwrap();
        self.core.release(Caller::root(), o.fh).unwrap();
        b
    }

    /// Writes `bytes` to `path` as `cp` does (onto the file, or a new one).
    fn write(&self, path: &str, bytes: &[u8]) {
        let (dir, name) = path.rsplit_once('/').unwrap();
        let o = match self.ino(path) {
            Some(i) => {
                let o = self.core.open(Caller::root(), i, libc::O_WRONLY).unwrap();
                let size = tafs::fs::SetAttr {
                    size: Some(0),
                    ..Default::default()
                };
                self.core
                    .setattr(Caller::root(), i, size, Some(o.fh))
                    .unwrap();
                o
            }
            None => {
                let d = self.ino(dir).unwrap();
                let flags = libc::O_WRONLY | libc::O_EXCL;
                let c = self.core.create(
                    Caller::root(),
                    NewNode::new(d, OsStr::new(name), 0o100644, 0),
                    flags,
                );
                c.unwrap().1
            }
        };
        self.core.write(Caller::root(), o.fh, 0, bytes).unwrap();
        // a save that does not build yet is reported, not asserted here
        let _ = self.core.flush(Caller::root(), o.fh);
        self.core.release(Caller::root(), o.fh).unwrap();
    }

    fn copy_dir(&self, from: &str, to: &str) {
        let (parent, name) = to.rsplit_once('/').unwrap();
        let p = self.ino(parent).unwrap();
        self.core
            .mkdir(Caller::root(), NewNode::new(p, OsStr::new(name), 0o755, 0))
            .unwrap();
        for (n, dir) in self.list(from) {
            let (f, t) = (format!("{from}/{n}"), format!("{to}/{n}"));
            if dir {
                self.copy_dir(&f, &t);
            } else {
                let b = self.read(&f);
                self.write(&t, &b);
            }
        }
    }

    fn delete_dir(&self, path: &str) {
        for (n, dir) in self.list(path) {
            let f = format!("{path}/{n}");
            if dir {
                self.delete_dir(&f);
            } else {
                let _ = self
                    .core
                    .unlink(Caller::root(), self.ino(path).unwrap(), OsStr::new(&n));
            }
        }
        let (parent, name) = path.rsplit_once('/').unwrap();
        let _ = self
            .core
            .rmdir(Caller::root(), self.ino(parent).unwrap(), OsStr::new(name));
    }

    /// Every file the asset directory shows, read through the core.
    fn tree(&self) -> MemFileSet {
        let mut set = MemFileSet::default();
        let mut stack = vec![String::new()];
        while let Some(d) = stack.pop() {
            let full = if d.is_empty() {
                ASSET.to_string()
            } else {
                format!("{ASSET}/{d}")
            };
            for (n, dir) in self.list(&full) {
                let rel = if d.is_empty() { n } else { format!("{d}/{n}") };
                if dir {
                    stack.push(rel);
                } else {
                    let b = self.read(&format!("{ASSET}/{rel}"));
                    set.files.insert(rel, b);
                }
            }
        }
        set
    }

    fn seqs(&self) -> Vec<String> {
        self.list(ASSET)
            .into_iter()
            .filter(|(_, d)| *d)
            .map(|(n, _)| n)
            .collect()
    }

    fn status(&self) -> String {
        String::from_utf8_lossy(&self.read(&format!("{ASSET}/.tafs-status"))).into_owned()
    }
}

/// `tafs gaf build --base BINARY` of `tree`.
fn model(tree: &MemFileSet, bin: &[u8]) -> Vec<u8> {
    let base = gaf::parse(bin, &Default::default()).unwrap();
    let opts = BuildOptions {
        palette: Palette::ta(),
        asset_path: Some(ASSET.into()),
        base: Some(&base),
        ..Default::default()
    };
    gaf::write(&build(tree, &opts).unwrap().gaf).unwrap()
}

/// Applies `op`; returns the file it wrote and its bytes when it is a save that a replay
/// (writing the same bytes again) must find done.
fn apply(fx: &Fx, op: &Op, step: usize, stale: &[(String, Vec<u8>)]) -> Option<(String, Vec<u8>)> {
    let seqs = fx.seqs();
    let pick = |i: usize| seqs[i % seqs.len()].clone();
    match op {
        Op::Frame { seq, frame, value } => {
            let s = pick(*seq);
            let frames: Vec<String> = fx
                .list(&format!("{ASSET}/{s}"))
                .into_iter()
                .filter(|(n, d)| !d && n.ends_with(".png") && n != "animated.png")
                .map(|(n, _)| n)
                .collect();
            if frames.is_empty() {
                return None;
            }
            let f = format!("{ASSET}/{s}/{}", frames[frame % frames.len()]);
            let (png, _) = edit_png(&fx.read(&f), *value);
            fx.write(&f, &png);
            Some((f, png))
        }
        Op::Duration { seq, ticks } => {
            let f = format!("{ASSET}/{}/frames.csv", pick(*seq));
            let text = String::from_utf8(fx.read(&f)).unwrap();
            let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
            let col = lines[0]
                .split(',')
                .position(|h| h == "duration_ticks")
                .unwrap();
            let mut row: Vec<String> = lines[1].split(',').map(str::to_string).collect();
            row[col] = ticks.to_string();
            lines[1] = row.join(",");
            let b = (lines.join("\n") + "\n").into_bytes();
            fx.write(&f, &b);
            Some((f, b))
        }
        Op::Copy { seq } => {
            let s = pick(*seq);
            fx.copy_dir(&format!("{ASSET}/{s}"), &format!("{ASSET}/c{step}"));
            None
        }
        Op::Move { seq } => {
            let s = pick(*seq);
            let a = fx.ino(ASSET).unwrap();
            let to = format!("m{step}");
            fx.core
                .rename(Caller::root(), a, OsStr::new(&s), a, OsStr::new(&to), 0)
                .unwrap();
            None
        }
        Op::Delete { seq } => {
            if seqs.len() > 1 {
                fx.delete_dir(&format!("{ASSET}/{}", pick(*seq)));
            }
            None
        }
        Op::Stale { seq } => {
            let s = pick(*seq);
            let (_, b) = stale.iter().find(|(n, _)| *n == s)?;
            let f = format!("{ASSET}/{s}/animated.png");
            fx.ino(&f)?;
            fx.write(&f, b);
            Some((f, b.clone()))
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn any_file_operations_end_with_the_binary_of_the_visible_tree(ops in proptest::collection::vec(op(), 1..7)) {
        let fx = Fx::new();
        let stale: Vec<(String, Vec<u8>)> = fx
            .seqs()
            .into_iter()
            .filter_map(|s| {
                let f = format!("{ASSET}/{s}/animated.png");
                fx.ino(&f).map(|_| (s, fx.read(&f)))
            })
            .collect();
        for (step, op) in ops.iter().enumerate() {
            let saved = apply(&fx, op, step, &stale);
            let st = fx.status();
            prop_assert!(!st.contains("error") && !st.contains("pending") && !st.contains("conflict"),
                "step {} {:?}: {}", step, op, st);
            let bin = fx.bin();
            gaf::parse(&bin, &Default::default()).unwrap();
            let tree = fx.tree();
            prop_assert!(model(&tree, &bin) == bin, "step {} {:?}: the binary is not the build of the visible tree: {}", step, op, st);
            if let Some((f, b)) = saved {
                fx.write(&f, &b);
                prop_assert!(fx.bin() == bin, "step {} {:?}: the replay changed the binary", step, op);
            }
        }
    }
}
