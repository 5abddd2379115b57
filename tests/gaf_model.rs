//! Property test: random edit sequences on the sample GAF's exploded view (frame PNG pixels,
//! durations and origins in frames.csv, deleting the last frame, appending a frame) applied
//! through the files and `view::gaf::build`, and applied to a reference model (the `Gaf`
//! edited directly, by the rules in docs/LAYOUT.md, "Build rules"), give the same pixels and fields.

use proptest::prelude::*;
use tafs::formats::gaf::{self, Content, Frame, FrameEntry, Gaf, Pixels};
use tafs::formats::palette::Palette;
use tafs::formats::Limits;
use tafs::view::gaf::{build, BuildOptions, GafView, Storage};
use tafs::view::image::{decode_png, write_indexed_png, PngPixels};
use tafs::view::{MemFileSet, ViewOptions};

/// Sequences of simple frames in the sample (composites have their own rules).
const SEQS: [&str; 2] = ["pulse", "panel"];

#[derive(Debug, Clone)]
enum Edit {
    /// seq, frame (mod count), x, y (mod size), new index.
    Pixel(usize, usize, u16, u16, u8),
    Duration(usize, usize, u16),
    Origin(usize, usize, i16, i16),
    DeleteLast(usize),
    /// seq, width, height, index, origin, raw?
    Append(usize, u16, u16, u8, i16, bool),
}

fn edit() -> impl Strategy<Value = Edit> {
    let idx = 0x30u8..0x60;
    prop_oneof![
        (
            0..2usize,
            0..8usize,
            any::<u16>(),
            any::<u16>(),
            idx.clone()
        )
            .prop_map(|(s, f, x, y, i)| Edit::Pixel(s, f, x, y, i)),
        (0..2usize, 0..8usize, 0..1000u16).prop_map(|(s, f, d)| Edit::Duration(s, f, d)),
        (0..2usize, 0..8usize, -300..300i16, -300..300i16)
            .prop_map(|(s, f, x, y)| Edit::Origin(s, f, x, y)),
        (0..2usize).prop_map(Edit::DeleteLast),
        (
            0..2usize,
            1..20u16,
            1..20u16,
            idx,
            -10..10i16,
            any::<bool>()
        )
            .prop_map(|(s, w, h, i, o, r)| Edit::Append(s, w, h, i, o, r)),
    ]
}

fn png(w: u32, h: u32, idx: &[u8], slot: Option<u8>) -> Vec<u8> {
    let mut out = Vec::new();
    write_indexed_png(&mut out, w, h, idx, &Palette::ta(), slot).unwrap();
    out
}

/// frames.csv as rows of cells (header first).
fn rows(files: &MemFileSet, seq: &str) -> Vec<Vec<String>> {
    String::from_utf8(files.files[&format!("{seq}/frames.csv")].clone())
        .unwrap()
        .lines()
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect()
}

fn set_rows(files: &mut MemFileSet, seq: &str, rows: &[Vec<String>]) {
    let text: String = rows.iter().map(|r| r.join(",") + "\n").collect();
    files
        .files
        .insert(format!("{seq}/frames.csv"), text.into_bytes());
}

fn col(rows: &[Vec<String>], name: &str) -> usize {
    rows[0].iter().position(|c| c == name).unwrap()
}

/// Applies `e` to the files and to the model.
fn apply(files: &mut MemFileSet, model: &mut Gaf, e: &Edit) {
    let seq_of = |s: usize| SEQS[s % SEQS.len()];
    let model_seq = |model: &mut Gaf, s: usize| -> usize {
        model
            .sequences
            .iter()
            .position(|q| q.name_str() == seq_of(s))
            .unwrap()
    };
    match *e {
        Edit::Pixel(s, f, x, y, i) => {
            let q = model_seq(model, s);
            let n = model.sequences[q].frames.len();
            let f = f % n;
            let path = format!("{}/{f}.png", seq_of(s));
            let d = decode_png(&files.files[&path]).unwrap();
            let PngPixels::Indexed {
                mut indices, trns, ..
            } = d.pixels
            else {
                panic!("{path} not indexed")
            };
            let slot = trns.iter().position(|&a| a == 0).map(|p| p as u8);
            if Some(i) == slot {
                return; // that index is this image's transparent slot
            }
            let (x, y) = (u32::from(x) % d.width, u32::from(y) % d.height);
            let at = (y * d.width + x) as usize;
            indices[at] = i;
            files
                .files
                .insert(path, png(d.width, d.height, &indices, slot));
            let fr = &mut model.sequences[q].frames[f].frame;
            if let Content::Pixels(p) = &mut fr.content {
                p.indices[at] = i;
                p.opaque[at] = true;
                p.payload = None;
            }
        }
        Edit::Duration(s, f, d) => {
            let q = model_seq(model, s);
            let f = f % model.sequences[q].frames.len();
            let mut r = rows(files, seq_of(s));
            let c = col(&r, "duration_ticks");
            r[f + 1][c] = d.to_string();
            set_rows(files, seq_of(s), &r);
            model.sequences[q].frames[f].duration = u32::from(d);
        }
        Edit::Origin(s, f, x, y) => {
            let q = model_seq(model, s);
            let f = f % model.sequences[q].frames.len();
            let mut r = rows(files, seq_of(s));
            let (cx, cy) = (col(&r, "origin_x"), col(&r, "origin_y"));
            r[f + 1][cx] = x.to_string();
            r[f + 1][cy] = y.to_string();
            set_rows(files, seq_of(s), &r);
            let fr = &mut model.sequences[q].frames[f].frame;
            fr.origin_x = x;
            fr.origin_y = y;
        }
        Edit::DeleteLast(s) => {
            let q = model_seq(model, s);
            let n = model.sequences[q].frames.len();
            if n < 2 {
                return;
            }
            let mut r = rows(files, seq_of(s));
            r.pop();
            set_rows(files, seq_of(s), &r);
            files.files.remove(&format!("{}/{}.png", seq_of(s), n - 1));
            model.sequences[q].frames.pop();
        }
        Edit::Append(s, w, h, i, o, raw) => {
            let q = model_seq(model, s);
            let n = model.sequences[q].frames.len();
            let mut r = rows(files, seq_of(s));
            let mut row = vec![String::new(); r[0].len()];
            for (name, v) in [
                ("frame", n.to_string()),
                ("width", w.to_string()),
                ("height", h.to_string()),
                ("origin_x", o.to_string()),
                ("origin_y", (-o).to_string()),
                ("transparency", "9".into()),
                ("duration_ticks", "4".into()),
                ("duration_sec", "0.133".into()),
                ("storage", if raw { "raw" } else { "compressed" }.into()),
                ("blend", "0".into()),
            ] {
                row[col(&r, name)] = v;
            }
            r.push(row);
            set_rows(files, seq_of(s), &r);
            let px = usize::from(w) * usize::from(h);
            files.files.insert(
                format!("{}/{n}.png", seq_of(s)),
                png(u32::from(w), u32::from(h), &vec![i; px], Some(9)),
            );
            model.sequences[q].frames.push(FrameEntry {
                duration: 4,
                frame: Frame {
                    width: w,
                    height: h,
                    origin_x: o,
                    origin_y: -o,
                    key: 9,
                    compressed: u8::from(!raw),
                    blend: 0,
                    word12: 0,
                    word20: 0,
                    content: Content::Pixels(Pixels {
                        indices: vec![i; px],
                        opaque: vec![true; px],
                        payload: None,
                    }),
                },
            });
        }
    }
}

/// Every field the edits touch, and the drawn pixels, of every frame.
fn summary(g: &Gaf) -> Vec<String> {
    let mut out = Vec::new();
    for s in &g.sequences {
        out.push(format!(
            "sequence {} frames {}",
            s.name_str(),
            s.frames.len()
        ));
        for (i, fe) in s.frames.iter().enumerate() {
            let f = &fe.frame;
            let flat = f.flatten().unwrap();
            let drawn: Vec<Option<u8>> = flat
                .indices
                .iter()
                .zip(&flat.opaque)
                .map(|(&i, &o)| o.then_some(i))
                .collect();
            out.push(format!(
                "{} #{i}: {}x{} origin {},{} key {} rle {} blend {} duration {} layers {} pixels {:?}",
                s.name_str(),
                f.width,
                f.height,
                f.origin_x,
                f.origin_y,
                f.key,
                f.compressed != 0,
                f.blend,
                fe.duration,
                f.layer_count(),
                drawn
            ));
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn view_edits_match_the_model(edits in proptest::collection::vec(edit(), 1..12)) {
        let g = gaf::parse(&gaf::write(&tafs::sample::animated_gaf()).unwrap(), &Limits::default()).unwrap();
        let v = GafView::from_gaf(g.clone(), &ViewOptions::default()).unwrap();
        let mut files = MemFileSet::from_view(&v).unwrap();
        let mut model = g;
        for e in &edits {
            apply(&mut files, &mut model, e);
        }
        let opts = BuildOptions {
            palette: Palette::ta(),
            storage: Storage::Auto,
            asset_path: None,
            base: None,
        };
        let built = build(&files, &opts).map_err(|e| TestCaseError::fail(e.to_string()))?.gaf;
        // and the rebuilt model survives the binary
        let reread = gaf::parse(&gaf::write(&built).unwrap(), &Limits::default()).unwrap();
        prop_assert_eq!(summary(&reread), summary(&model));
    }
}
