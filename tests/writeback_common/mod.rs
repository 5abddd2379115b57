//! Helpers of the write-back tests: GAF fixtures and PNG edits done from first principles
//! (decode the PNG the view wrote, change one pixel's palette index, encode it again).
#![allow(dead_code)]

use std::path::Path;
use tafs::formats::gaf::{self, Content, Gaf};
use tafs::formats::palette::Palette;
use tafs::fs::Caller;
use tafs::view::image::{decode_png, write_indexed_png, PngPixels};

/// A self-made GAF with RLE, raw and composite frames.
pub fn sample_bytes() -> Vec<u8> {
    gaf::write(&tafs::sample::animated_gaf()).unwrap()
}

/// `png` (an indexed dump PNG) with its palette indices changed by `f` (given the indices and
/// the transparent index), encoded again.
pub fn with_indices<T>(png: &[u8], f: impl FnOnce(&mut [u8], Option<u8>) -> T) -> (Vec<u8>, T) {
    let d = decode_png(png).unwrap();
    let PngPixels::Indexed {
        mut indices, trns, ..
    } = d.pixels
    else {
        panic!("dump PNGs are indexed")
    };
    let transparent = trns.iter().position(|a| *a == 0).map(|i| i as u8);
    let r = f(&mut indices, transparent);
    let mut out = Vec::new();
    write_indexed_png(
        &mut out,
        d.width,
        d.height,
        &indices,
        &Palette::ta(),
        transparent,
    )
    .unwrap();
    (out, r)
}

/// `png` with the first opaque pixel set to palette index `to` (returns the new PNG and the
/// pixel's position).
pub fn edit_png(png: &[u8], to: u8) -> (Vec<u8>, usize) {
    with_indices(png, |indices, transparent| {
        let pos = indices
            .iter()
            .position(|i| Some(*i) != transparent && *i != to)
            .expect("an opaque pixel");
        indices[pos] = to;
        pos
    })
}

/// Gives `path` a modification time a minute ahead, as a real edit made after the files it
/// replaces has: a one-pixel edit of a PNG can keep its size, and rsync's quick check (size
/// and time) would take a copy made within the same second for unchanged.
pub fn edited_later(path: &std::path::Path) {
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(60);
    std::fs::File::options()
        .write(true)
        .open(path)
        .and_then(|f| f.set_modified(later))
        .unwrap();
}

/// `png` with every pixel set to a pseudo-random opaque palette index (compresses worse than
/// an `edit_png` edit, so the two differ in size).
pub fn noisy_png(png: &[u8]) -> Vec<u8> {
    with_indices(png, |indices, transparent| {
        let mut x = 0x2545_f491_u32;
        for i in indices.iter_mut() {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            *i = 16 + (x % 200) as u8;
            if Some(*i) == transparent {
                *i += 1;
            }
        }
    })
    .0
}

/// The stored payload of every simple frame and layer, in order (None for composites'
/// own entries).
pub fn payloads(g: &Gaf) -> Vec<(String, Option<Vec<u8>>)> {
    let mut v = Vec::new();
    fn walk(f: &gaf::Frame, name: String, v: &mut Vec<(String, Option<Vec<u8>>)>) {
        match &f.content {
            Content::Pixels(p) => v.push((name, p.payload.as_ref().map(|b| b.to_vec()))),
            Content::Truecolor(w) => {
                v.push((name, Some(w.iter().flat_map(|x| x.to_le_bytes()).collect())))
            }
            Content::Layers(l) => {
                for (k, x) in l.iter().enumerate() {
                    walk(x, format!("{name}/{k}"), v);
                }
            }
        }
    }
    for s in &g.sequences {
        for (i, fe) in s.frames.iter().enumerate() {
            walk(&fe.frame, format!("{}/{i}", s.name_str()), &mut v);
        }
    }
    v
}

pub fn parse(path: &Path) -> Gaf {
    gaf::parse(&std::fs::read(path).unwrap(), &Default::default()).unwrap()
}

/// The inode of `path` (components from the root of the game folder) in `core`.
pub fn ino(core: &tafs::fs::Core, path: &str) -> u64 {
    use tafs::fs::FsOps;
    let mut i = tafs::fs::core::ROOT;
    for c in path.split('/') {
        i = core
            .lookup(Caller::root(), i, std::ffi::OsStr::new(c))
            .unwrap_or_else(|e| panic!("{path}: {e}"))
            .ino;
    }
    i
}

/// `touch -d`: sets the access and modification times of `path` in `core` to `when`;
/// the modification time it shows then.
pub fn touch(
    core: &tafs::fs::Core,
    path: &str,
    when: std::time::SystemTime,
) -> std::time::SystemTime {
    use tafs::fs::{FsOps, SetAttr, SetTime};
    let set = SetAttr {
        atime: Some(SetTime::At(when)),
        mtime: Some(SetTime::At(when)),
        ..Default::default()
    };
    core.setattr(Caller::root(), ino(core, path), set, None)
        .unwrap()
        .mtime
}

/// The whole content of file `path` in `core` (open, read, release).
pub fn read(core: &tafs::fs::Core, path: &str) -> Vec<u8> {
    use tafs::fs::FsOps;
    let o = core
        .open(Caller::root(), ino(core, path), libc::O_RDONLY)
        .unwrap();
    let b = core.read(Caller::root(), o.fh, 0, 1 << 24).unwrap();
    core.release(Caller::root(), o.fh).unwrap();
    b
}

/// cp onto an existing file: open O_WRONLY, truncate, write, close (flush + release); the
/// errno of the first step that fails.
pub fn cp_onto(core: &tafs::fs::Core, path: &str, bytes: &[u8]) -> Result<(), i32> {
    use tafs::fs::FsOps;
    let i = ino(core, path);
    let o = core
        .open(Caller::root(), i, libc::O_WRONLY)
        .map_err(|e| e.errno())?;
    core.setattr(
        Caller::root(),
        i,
        tafs::fs::SetAttr {
            size: Some(0),
            ..Default::default()
        },
        Some(o.fh),
    )
    .map_err(|e| e.errno())?;
    core.write(Caller::root(), o.fh, 0, bytes)
        .map_err(|e| e.errno())?;
    let r = core.flush(Caller::root(), o.fh).map_err(|e| e.errno());
    core.release(Caller::root(), o.fh).unwrap();
    r
}

/// Runs `tafs` as `cmd` (the built binary with its arguments) and `-t TO` (panics with its
/// message if it fails): the bytes written to `to`.
fn tafs_to(cmd: &mut std::process::Command, to: &Path) -> Vec<u8> {
    let o = cmd.arg("-t").arg(to).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::read(to).unwrap()
}

/// `tafs gaf build DIR --base BASE -t TO`: the bytes written to `to`.
pub fn gaf_build_base(dir: &Path, base: &Path, to: &Path) -> Vec<u8> {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_tafs"));
    cmd.args(["gaf", "build"]).arg(dir).arg("--base").arg(base);
    tafs_to(&mut cmd, to)
}

/// `tafs tnt pack DIR -t TO`: the bytes written to `to`.
pub fn tnt_pack(dir: &Path, to: &Path) -> Vec<u8> {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_tafs"));
    cmd.args(["tnt", "pack"]).arg(dir);
    tafs_to(&mut cmd, to)
}
