//! Exact GAF rebuilds: every layout comes back byte for byte, a one-frame edit changes only
//! that frame's bytes and the pointers that must move, and an image editor's re-save of
//! unedited frames (RGBA, reordered palette; made with Python Pillow) rebuilds the same file.

mod common;
mod writeback_common;

use std::path::{Path, PathBuf};
use std::process::Command;
use tafs::formats::gaf::{self, Content, Frame, Gaf, SlotBody};
use tafs::formats::palette::Palette;
use tafs::formats::Limits;
use tafs::view::gaf::{build, BuildOptions, GafView, Storage};
use tafs::view::image::{decode_png, write_indexed_png, PngPixels};
use tafs::view::{DirFileSet, FileSet, MemFileSet, ViewOptions};

fn parse(data: &[u8]) -> Gaf {
    gaf::parse(data, &Limits::default()).unwrap()
}

fn dump(g: &Gaf) -> MemFileSet {
    let v = GafView::from_gaf(g.clone(), &ViewOptions::default()).unwrap();
    MemFileSet::from_view(&v).unwrap()
}

fn rebuild(files: &dyn FileSet, base: Option<&Gaf>) -> Vec<u8> {
    let built = build(
        files,
        &BuildOptions {
            palette: Palette::ta(),
            storage: Storage::Auto,
            asset_path: None,
            base,
        },
    )
    .unwrap();
    gaf::write(&built.gaf).unwrap()
}

// ---------------------------------------------------------------------------------------
// Fixtures, assembled by hand from the format's rules (FORMATS.md)
// ---------------------------------------------------------------------------------------

fn put(buf: &mut Vec<u8>, at: usize, bytes: &[u8]) {
    if buf.len() < at + bytes.len() {
        buf.resize(at + bytes.len(), 0);
    }
    buf[at..at + bytes.len()].copy_from_slice(bytes);
}

fn frame_header(w: u16, h: u16, key: u8, comp: u8, layers: u8, blend: u8, data: u32) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(&w.to_le_bytes());
    v.extend_from_slice(&h.to_le_bytes());
    v.extend_from_slice(&1i16.to_le_bytes());
    v.extend_from_slice(&(-1i16).to_le_bytes());
    v.extend_from_slice(&[key, comp, layers, blend]);
    v.extend_from_slice(&0x5EED_u32.to_le_bytes());
    v.extend_from_slice(&data.to_le_bytes());
    v.extend_from_slice(&0u32.to_le_bytes());
    v
}

fn seq_header(frames: &[(u32, u32)], name: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(&(frames.len() as u16).to_le_bytes());
    v.extend_from_slice(&1u16.to_le_bytes());
    v.extend_from_slice(&0u32.to_le_bytes());
    let mut n = [0u8; 32];
    n[..name.len()].copy_from_slice(name);
    v.extend_from_slice(&n);
    for (ptr, dur) in frames {
        v.extend_from_slice(&ptr.to_le_bytes());
        v.extend_from_slice(&dur.to_le_bytes());
    }
    v
}

/// Sequence headers after the data, gaps of garbage, an RLE payload shared by two frame
/// headers, a frame header listed twice, a composite with a nested composite, trailing bytes.
fn odd_fixture() -> Vec<u8> {
    let mut f = Vec::new();
    put(&mut f, 0, &gaf::VERSION_STANDARD.to_le_bytes());
    put(&mut f, 4, &2u32.to_le_bytes());
    put(&mut f, 12, &600u32.to_le_bytes());
    put(&mut f, 16, &700u32.to_le_bytes());
    put(&mut f, 20, &[0xEE; 20]);
    // A: raw 4×3, key 9
    put(&mut f, 40, &frame_header(4, 3, 9, 0, 0, 0, 64));
    put(&mut f, 64, &[9, 1, 2, 9, 3, 3, 3, 3, 9, 9, 4, 9]);
    put(&mut f, 76, &[0xAB; 4]);
    // B and C: RLE 3×2 sharing one payload: row 0 "skip 1, repeat 9 ×2" (the key, drawn),
    // row 1 "literal 7 8 9"
    put(&mut f, 80, &frame_header(3, 2, 9, 1, 0, 0, 104));
    put(&mut f, 104, &[3, 0, 3, 6, 9, 4, 0, 8, 7, 8, 9]);
    put(&mut f, 120, &frame_header(3, 2, 9, 1, 0, 0, 104));
    // D: composite of E (raw 1×1) and F (composite of G, raw 2×1)
    put(&mut f, 150, &frame_header(3, 3, 9, 0, 2, 0, 174));
    put(&mut f, 174, &200u32.to_le_bytes());
    put(&mut f, 178, &250u32.to_le_bytes());
    put(&mut f, 200, &frame_header(1, 1, 9, 0, 0, 0, 224));
    put(&mut f, 224, &[5]);
    put(&mut f, 250, &frame_header(2, 1, 9, 0, 1, 1, 274));
    put(&mut f, 274, &300u32.to_le_bytes());
    put(&mut f, 300, &frame_header(2, 1, 9, 0, 0, 0, 324));
    put(&mut f, 324, &[1, 2]);
    put(&mut f, 326, &[0x5A; 274]);
    put(
        &mut f,
        600,
        &seq_header(&[(40, 1), (80, 2), (40, 3), (150, 4)], b"odd"),
    );
    put(&mut f, 700, &seq_header(&[(120, 1)], b"other"));
    f.extend_from_slice(b"TRAIL");
    f
}

/// Block kinds in the order [`scattered`] lays them out.
const PAYLOAD: u8 = 0;
const TABLE: u8 = 1;
const HEADER: u8 = 2;
const SEQUENCE: u8 = 3;

struct Block {
    kind: u8,
    bytes: Vec<u8>,
    ptrs: Vec<(usize, usize)>,
}

fn blocks_of_frame(f: &Frame, out: &mut Vec<Block>) -> usize {
    let data = match &f.content {
        Content::Pixels(p) => {
            out.push(Block {
                kind: PAYLOAD,
                bytes: p.payload.as_deref().unwrap().to_vec(),
                ptrs: vec![],
            });
            out.len() - 1
        }
        Content::Truecolor(w) => {
            out.push(Block {
                kind: PAYLOAD,
                bytes: w.iter().flat_map(|x| x.to_le_bytes()).collect(),
                ptrs: vec![],
            });
            out.len() - 1
        }
        Content::Layers(l) => {
            let kids: Vec<usize> = l.iter().map(|c| blocks_of_frame(c, out)).collect();
            out.push(Block {
                kind: TABLE,
                bytes: vec![0; 4 * kids.len()],
                ptrs: kids.iter().enumerate().map(|(k, &c)| (4 * k, c)).collect(),
            });
            out.len() - 1
        }
    };
    let mut h = Vec::new();
    h.extend_from_slice(&f.width.to_le_bytes());
    h.extend_from_slice(&f.height.to_le_bytes());
    h.extend_from_slice(&f.origin_x.to_le_bytes());
    h.extend_from_slice(&f.origin_y.to_le_bytes());
    h.extend_from_slice(&[f.key, f.compressed, f.layer_count() as u8, f.blend]);
    h.extend_from_slice(&f.word12.to_le_bytes());
    h.extend_from_slice(&[0; 4]);
    h.extend_from_slice(&f.word20.to_le_bytes());
    out.push(Block {
        kind: HEADER,
        bytes: h,
        ptrs: vec![(16, data)],
    });
    out.len() - 1
}

/// `g` written with its blocks in reverse kind order (payloads first, sequence headers
/// last, each kind back to front), 3 bytes of 0xC3 before every block, and trailing bytes.
fn scattered(g: &Gaf) -> Vec<u8> {
    let mut blocks = Vec::new();
    let mut seqs = Vec::new();
    for s in &g.sequences {
        let frames: Vec<(usize, u32)> = s
            .frames
            .iter()
            .map(|fe| (blocks_of_frame(&fe.frame, &mut blocks), fe.duration))
            .collect();
        let items: Vec<(u32, u32)> = frames.iter().map(|&(_, d)| (0, d)).collect();
        let mut bytes = seq_header(&items, s.name_bytes());
        bytes[2..4].copy_from_slice(&s.loop_word.to_le_bytes());
        bytes[4..8].copy_from_slice(&s.word4.to_le_bytes());
        bytes[8..40].copy_from_slice(&s.name);
        blocks.push(Block {
            kind: SEQUENCE,
            bytes,
            ptrs: frames
                .iter()
                .enumerate()
                .map(|(j, &(b, _))| (40 + 8 * j, b))
                .collect(),
        });
        seqs.push(blocks.len() - 1);
    }
    let mut order: Vec<usize> = (0..blocks.len()).collect();
    order.sort_by_key(|&i| (blocks[i].kind, std::cmp::Reverse(i)));
    let mut at = vec![0usize; blocks.len()];
    let mut pos = 12 + 4 * seqs.len();
    for &i in &order {
        pos += 3;
        at[i] = pos;
        pos += blocks[i].bytes.len();
    }
    let mut f = vec![0xC3; pos];
    f[..4].copy_from_slice(&g.version.to_le_bytes());
    f[4..8].copy_from_slice(&(seqs.len() as u32).to_le_bytes());
    f[8..12].copy_from_slice(&g.header_word8.to_le_bytes());
    for (k, &s) in seqs.iter().enumerate() {
        f[12 + 4 * k..16 + 4 * k].copy_from_slice(&(at[s] as u32).to_le_bytes());
    }
    for (i, b) in blocks.iter().enumerate() {
        let mut bytes = b.bytes.clone();
        for &(p, c) in &b.ptrs {
            bytes[p..p + 4].copy_from_slice(&(at[c] as u32).to_le_bytes());
        }
        f[at[i]..at[i] + bytes.len()].copy_from_slice(&bytes);
    }
    f.extend_from_slice(b"\x01\x02trailing");
    f
}

/// The self-made fixtures: name and bytes.
fn fixtures() -> Vec<(String, Vec<u8>)> {
    let canon = |g: Gaf| gaf::write_canonical(&g).unwrap();
    let animated = parse(&canon(tafs::sample::animated_gaf()));
    let texture = parse(&canon(tafs::sample::texture_gaf()));
    vec![
        ("odd".into(), odd_fixture()),
        (
            "scattered animated (composites)".into(),
            scattered(&animated),
        ),
        ("scattered texture".into(), scattered(&texture)),
        (
            "canonical animated".into(),
            canon(tafs::sample::animated_gaf()),
        ),
    ]
}

/// Every corpus GAF that parses (truecolor files are not GAFs tafs writes): name and bytes.
fn corpus_gafs() -> Vec<(String, Vec<u8>)> {
    let Some(corpus) = common::corpus() else {
        println!("corpus absent (../shared/corpus): only the self-made fixtures are checked");
        return vec![];
    };
    let mut out = Vec::new();
    for p in common::files_with_ext(&corpus, &[".gaf", ".taf"]) {
        let data = std::fs::read(&p).unwrap();
        match gaf::parse(&data, &Limits::default()) {
            Ok(_) => out.push((p.display().to_string(), data)),
            Err(gaf::GafError::Truecolor { .. }) => {
                println!("skipped (truecolor): {}", p.display())
            }
            Err(e) => panic!("{}: {e}", p.display()),
        }
    }
    assert!(out.len() >= 10, "the corpus holds 10 paletted GAFs");
    out
}

fn everything() -> Vec<(String, Vec<u8>)> {
    let mut v = fixtures();
    v.extend(corpus_gafs());
    v
}

// ---------------------------------------------------------------------------------------
// Byte-identical rebuilds
// ---------------------------------------------------------------------------------------

#[test]
fn every_gaf_dumps_and_builds_back_byte_identical() {
    for (name, data) in everything() {
        let g = parse(&data);
        let fixture = !name.contains("corpus");
        if fixture && !name.starts_with("canonical") {
            assert!(
                gaf::write_canonical(&g).unwrap() != data,
                "{name}: expected a non-canonical layout"
            );
        }
        assert!(gaf::write(&g).unwrap() == data, "{name}: parse → write");
        let files = dump(&g);
        assert!(
            rebuild(&files, Some(&g)) == data,
            "{name}: dump → build --base"
        );
        assert!(
            rebuild(&files, None) == data,
            "{name}: dump → build from metadata.json"
        );
    }
}

// ---------------------------------------------------------------------------------------
// One-frame edits
// ---------------------------------------------------------------------------------------

/// The first top-level simple frame with a drawn pixel: (sequence, frame).
fn editable_frame(g: &Gaf) -> Option<(usize, usize)> {
    for (si, s) in g.sequences.iter().enumerate() {
        for (fi, fe) in s.frames.iter().enumerate() {
            if let Some(p) = fe.frame.pixels() {
                if p.opaque.iter().any(|&o| o) {
                    return Some((si, fi));
                }
            }
        }
    }
    None
}

fn sequence_dir(files: &MemFileSet, si: usize) -> String {
    let meta: serde_json::Value =
        serde_json::from_slice(&files.read("metadata.json").unwrap().unwrap()).unwrap();
    meta["sequences"][si]["dir"].as_str().unwrap().to_string()
}

/// Changes the first drawn pixel of `<dir>/<fi>.png` to an index of another colour; returns
/// the pixel number and the new index.
fn edit_first_drawn_pixel(files: &mut MemFileSet, path: &str, key: u8, raw: bool) -> (usize, u8) {
    let pal = Palette::ta();
    let d = decode_png(&files.files[path]).unwrap();
    let PngPixels::Indexed {
        mut indices, trns, ..
    } = d.pixels
    else {
        panic!("{path} is not indexed")
    };
    let alpha = |i: u8| trns.get(usize::from(i)).copied().unwrap_or(255);
    let at = indices.iter().position(|&i| alpha(i) >= 128).unwrap();
    let old = indices[at];
    let slot = trns.iter().position(|&a| a == 0).map(|s| s as u8);
    let new = (0..=255u8)
        .find(|&q| {
            pal.colors[usize::from(q)] != pal.colors[usize::from(old)]
                && Some(q) != slot
                && !(raw && q == key)
                && pal.colors[usize::from(q)] != pal.colors[usize::from(key)]
        })
        .unwrap();
    indices[at] = new;
    let mut png = Vec::new();
    write_indexed_png(&mut png, d.width, d.height, &indices, &pal, slot).unwrap();
    files.files.insert(path.to_string(), png);
    (at, new)
}

#[test]
fn a_one_frame_edit_changes_only_that_frame_and_moved_pointers() {
    for (name, data) in everything() {
        let g = parse(&data);
        let Some((si, fi)) = editable_frame(&g) else {
            continue;
        };
        let mut files = dump(&g);
        let dir = sequence_dir(&files, si);
        let f = &g.sequences[si].frames[fi].frame;
        let (at, new) = edit_first_drawn_pixel(
            &mut files,
            &format!("{dir}/{fi}.png"),
            f.key,
            !f.is_compressed(),
        );
        let out = rebuild(&files, Some(&g));
        let again = parse(&out);
        // the edit is there, every other frame is as it was
        let px = again.sequences[si].frames[fi].frame.pixels().unwrap();
        assert_eq!(px.indices[at], new, "{name}");
        for (sj, s) in g.sequences.iter().enumerate() {
            assert_eq!(s.frames.len(), again.sequences[sj].frames.len());
            for (fj, fe) in s.frames.iter().enumerate() {
                if (sj, fj) != (si, fi) {
                    assert_eq!(again.sequences[sj].frames[fj], *fe, "{name}: {sj}/{fj}");
                }
            }
        }
        // byte ranges: only the edited frame's header pointer and payload (and the frame-list
        // item pointing at its header, if the header had to move) may differ before the end
        // of the original blocks; the trailing bytes end the file
        let l = g.layout.as_deref().unwrap();
        let seq = &l.sequences[si];
        let fs = &seq.frames[fi];
        let SlotBody::Payload(len) = fs.body else {
            panic!("a simple frame")
        };
        let (h, d) = (fs.header as usize, fs.data as usize);
        let item = seq.offset as usize + 40 + 8 * fi;
        let allowed = |i: usize| {
            (h + 16..h + 20).contains(&i)
                || (d..d + len as usize).contains(&i)
                || (item..item + 4).contains(&i)
        };
        for i in 0..l.end as usize {
            assert!(
                allowed(i) || data[i] == out[i],
                "{name}: byte {i} changed ({:#x} → {:#x})",
                data[i],
                out[i]
            );
        }
        assert!(out.ends_with(&g.trailing), "{name}: trailing bytes");
        // every other block kept its place
        let l2 = again.layout.as_deref().unwrap();
        for (sj, (a, b)) in l.sequences.iter().zip(&l2.sequences).enumerate() {
            assert_eq!(a.offset, b.offset, "{name}: sequence {sj} moved");
            for (fj, (x, y)) in a.frames.iter().zip(&b.frames).enumerate() {
                if (sj, fj) != (si, fi) {
                    assert_eq!(x, y, "{name}: frame {sj}/{fj} moved");
                }
            }
        }
        // and without the base, from metadata.json alone, the same bytes
        assert!(rebuild(&files, None) == out, "{name}: build without base");
    }
}

// ---------------------------------------------------------------------------------------
// Editor re-saves (Python Pillow)
// ---------------------------------------------------------------------------------------

fn pillow() {
    let ok = Command::new("python3")
        .args(["-c", "import PIL"])
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "these checks re-save PNGs with Python Pillow: install it with `pip install pillow`"
    );
}

/// Runs `script` with every frame image of the dump in `dir` as `sys.argv[1:]`.
fn resave(dir: &Path, script: &str) {
    let pngs: Vec<PathBuf> = common::files_with_ext(dir, &[".png"])
        .into_iter()
        .filter(|p| !p.ends_with("animated.png"))
        .collect();
    assert!(!pngs.is_empty());
    let st = Command::new("python3")
        .arg("-c")
        .arg(script)
        .args(&pngs)
        .status()
        .unwrap();
    assert!(st.success(), "python3 failed");
}

const RGBA: &str = r#"
import sys
from PIL import Image
for p in sys.argv[1:]:
    Image.open(p).convert("RGBA").save(p)
"#;

/// Reverses the palette order (indices remapped, transparency follows its slot).
const REORDER: &str = r#"
import sys
from PIL import Image
for p in sys.argv[1:]:
    im = Image.open(p)
    im.load()
    n = len(im.getpalette()) // 3
    out = im.remap_palette(list(range(n - 1, -1, -1)))
    t = out.info.get("transparency")
    if t is None:
        out.save(p)
    else:
        out.save(p, transparency=t)
"#;

#[test]
fn editor_resaves_of_unedited_frames_rebuild_the_same_bytes() {
    pillow();
    for (name, data) in everything() {
        let g = parse(&data);
        let v = GafView::from_gaf(g.clone(), &ViewOptions::default()).unwrap();
        for (what, script) in [("RGBA", RGBA), ("palette-reordered", REORDER)] {
            let t = tempfile::tempdir().unwrap();
            tafs::view::write_tree(&v, t.path()).unwrap();
            resave(t.path(), script);
            let out = rebuild(&DirFileSet::new(t.path()), Some(&g));
            assert!(out == data, "{name}: {what} save rebuilt differently");
        }
    }
}

#[test]
fn raw_frames_never_draw_the_key_but_rle_frames_keep_it() {
    // an RGBA save where every pixel has the key's colour: a raw frame must take another
    // index (the key would be transparent), an RLE frame keeps the key index
    let pal = Palette::ta();
    let c = pal.colors[9];
    for (comp, want) in [(0u8, pal.nearest(c, &[9])), (1, 9)] {
        let mut f = Vec::new();
        put(&mut f, 0, &gaf::VERSION_STANDARD.to_le_bytes());
        put(&mut f, 4, &1u32.to_le_bytes());
        put(&mut f, 12, &16u32.to_le_bytes());
        put(&mut f, 16, &seq_header(&[(64, 1)], b"k"));
        put(&mut f, 64, &frame_header(2, 1, 9, comp, 0, 0, 88));
        if comp == 0 {
            put(&mut f, 88, &[1, 2]);
        } else {
            put(&mut f, 88, &[3, 0, 4, 1, 2]);
        }
        let g = parse(&f);
        let mut files = dump(&g);
        let mut png = Vec::new();
        {
            let mut e = png::Encoder::new(&mut png, 2, 1);
            e.set_color(png::ColorType::Rgba);
            let mut w = e.write_header().unwrap();
            w.write_image_data(&[c[0], c[1], c[2], 255, c[0], c[1], c[2], 255])
                .unwrap();
        }
        files.files.insert("k/0.png".into(), png);
        let out = parse(&rebuild(&files, Some(&g)));
        let px = out.sequences[0].frames[0].frame.pixels().unwrap();
        assert_eq!(px.indices, [want, want], "compressed byte {comp}");
        assert_eq!(px.opaque, [true, true]);
        assert_ne!(want == 9, comp == 0);
    }
}

// ---------------------------------------------------------------------------------------
// The mount's write-back (through the core, no FUSE)
// ---------------------------------------------------------------------------------------

mod mount {
    use super::*;
    use crate::writeback_common::cp_onto;
    use tafs::fs::{Core, MountOptions};

    #[test]
    fn rewriting_every_file_of_an_unedited_dump_leaves_the_binary_untouched() {
        let mut cases = vec![("odd.gaf".to_string(), odd_fixture())];
        if let Some(c) = common::corpus() {
            let p = c.join("game/anims/ARMAMEX_gadget.GAF");
            cases.push(("ARMAMEX_gadget.GAF".into(), std::fs::read(p).unwrap()));
        }
        for (name, data) in cases {
            let game = tempfile::tempdir().unwrap();
            let state = tempfile::tempdir().unwrap();
            std::fs::create_dir_all(game.path().join("anims")).unwrap();
            let bin = game.path().join("anims").join(&name);
            std::fs::write(&bin, &data).unwrap();
            let mtime = std::fs::metadata(&bin).unwrap().modified().unwrap();
            let opts = MountOptions {
                state_dir: Some(state.path().to_path_buf()),
                ..MountOptions::default()
            };
            let core = Core::new(game.path(), opts, None).unwrap();
            let g = parse(&data);
            let files = dump(&g);
            // every file written back as it is (what an rsync of an unedited dump does) …
            for (path, bytes) in &files.files {
                cp_onto(&core, &format!("anims/{name}/{path}"), bytes).unwrap();
            }
            // … and every frame re-saved as RGBA, as image editors do
            for path in files.files.keys().filter(|p| p.ends_with(".png")) {
                if path.ends_with("animated.png") {
                    continue;
                }
                let d = decode_png(&files.files[path]).unwrap();
                let PngPixels::Indexed {
                    indices,
                    plte,
                    trns,
                } = d.pixels
                else {
                    panic!("{path} is not indexed")
                };
                let mut rgba = Vec::new();
                for &i in &indices {
                    let c = &plte[3 * usize::from(i)..3 * usize::from(i) + 3];
                    let a = trns.get(usize::from(i)).copied().unwrap_or(255);
                    rgba.extend_from_slice(&[c[0], c[1], c[2], a]);
                }
                let mut png = Vec::new();
                {
                    let mut e = png::Encoder::new(&mut png, d.width, d.height);
                    e.set_color(png::ColorType::Rgba);
                    let mut w = e.write_header().unwrap();
                    w.write_image_data(&rgba).unwrap();
                }
                cp_onto(&core, &format!("anims/{name}/{path}"), &png).unwrap();
            }
            assert!(std::fs::read(&bin).unwrap() == data, "{name} was rewritten");
            assert_eq!(
                std::fs::metadata(&bin).unwrap().modified().unwrap(),
                mtime,
                "{name} was replaced"
            );
        }
    }
}

#[test]
fn duplicate_palette_colours_keep_the_original_index_with_base() {
    let pal = Palette::ta();
    let (first, dup) = (0..256usize)
        .flat_map(|j| (0..j).map(move |i| (i, j)))
        .find(|&(i, j)| pal.colors[i] == pal.colors[j] && i != 9 && j != 9)
        .map(|(i, j)| (i as u8, j as u8))
        .expect("the TA palette has duplicate colours");
    // one raw frame and one RLE frame, each drawing the second copy of a colour
    let mut f = Vec::new();
    put(&mut f, 0, &gaf::VERSION_STANDARD.to_le_bytes());
    put(&mut f, 4, &1u32.to_le_bytes());
    put(&mut f, 12, &16u32.to_le_bytes());
    put(&mut f, 16, &seq_header(&[(100, 1), (140, 1)], b"dup"));
    put(&mut f, 100, &frame_header(2, 1, 9, 0, 0, 0, 124));
    put(&mut f, 124, &[dup, 1]);
    put(&mut f, 140, &frame_header(2, 1, 9, 1, 0, 0, 164));
    put(&mut f, 164, &[3, 0, 4, dup, 1]);
    let g = parse(&f);
    let mut files = dump(&g);
    for k in 0..2 {
        let path = format!("dup/{k}.png");
        let d = decode_png(&files.files[&path]).unwrap();
        let PngPixels::Indexed { indices, plte, .. } = d.pixels else {
            panic!()
        };
        let rgba: Vec<u8> = indices
            .iter()
            .flat_map(|&i| {
                let c = &plte[3 * usize::from(i)..3 * usize::from(i) + 3];
                [c[0], c[1], c[2], 255]
            })
            .collect();
        let mut png = Vec::new();
        {
            let mut e = png::Encoder::new(&mut png, d.width, d.height);
            e.set_color(png::ColorType::Rgba);
            let mut w = e.write_header().unwrap();
            w.write_image_data(&rgba).unwrap();
        }
        files.files.insert(path, png);
    }
    assert!(
        rebuild(&files, Some(&g)) == f,
        "with the base: the same bytes"
    );
    // without it, a colour goes to its first index
    let plain = parse(&rebuild(&files, None));
    for k in 0..2 {
        let px = plain.sequences[0].frames[k].frame.pixels().unwrap();
        assert_eq!(px.indices[0], first, "frame {k}");
    }
}

#[test]
fn removing_a_sequence_moves_no_other_block() {
    let mut cases = vec![scattered(&parse(
        &gaf::write_canonical(&tafs::sample::animated_gaf()).unwrap(),
    ))];
    if let Some(c) = common::corpus() {
        cases.push(std::fs::read(c.join("game/textures/Alien.gaf")).unwrap());
    }
    for data in cases {
        let g = parse(&data);
        assert!(g.sequences.len() > 2);
        let mut files = dump(&g);
        let first = sequence_dir(&files, 0);
        files
            .files
            .retain(|p, _| !p.starts_with(&format!("{first}/")));
        for base in [Some(&g), None] {
            let out = rebuild(&files, base);
            let again = parse(&out);
            assert_eq!(again.sequences.len(), g.sequences.len() - 1);
            let (l, l2) = (
                g.layout.as_deref().unwrap(),
                again.layout.as_deref().unwrap(),
            );
            for (k, s) in l2.sequences.iter().enumerate() {
                assert_eq!(*s, l.sequences[k + 1], "sequence {k} moved");
                assert_eq!(again.sequences[k], g.sequences[k + 1]);
                let n = gaf::sequence_len(s.frames.len()) as usize;
                let at = s.offset as usize;
                assert_eq!(out[at..at + n], data[at..at + n]);
            }
            assert!(out.len() <= data.len());
        }
    }
}
