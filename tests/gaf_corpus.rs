//! Every GAF of the corpus: parse → write reproduces canonical files byte for byte, and the
//! RLE encoder's agreement with the original tools is measured.

mod common;

use tafs::formats::gaf::{self, Content, Frame, GafError};
use tafs::formats::Limits;

fn all_frames<'a>(f: &'a Frame, out: &mut Vec<&'a Frame>) {
    out.push(f);
    if let Content::Layers(l) = &f.content {
        for x in l {
            all_frames(x, out);
        }
    }
}

#[test]
fn corpus_gafs_round_trip() {
    let Some(corpus) = common::corpus() else {
        return;
    };
    let files = common::files_with_ext(&corpus.join("game"), &[".gaf"]);
    let mut tak = common::files_with_ext(&corpus.join("tak"), &[".gaf"]);
    let all: Vec<_> = files.into_iter().chain(tak.drain(..)).collect();
    assert!(
        all.len() >= 10,
        "expected the 10 standard GAFs, found {}",
        all.len()
    );
    let mut identical = 0;
    let (mut rows, mut same_rows) = (0usize, 0usize);
    for path in &all {
        let data = std::fs::read(path).unwrap();
        let g = gaf::parse(&data, &Limits::default())
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(
            g.warnings.is_empty(),
            "{}: {:?}",
            path.display(),
            g.warnings
        );
        let out = gaf::write(&g).unwrap();
        let again = gaf::parse(&out, &Limits::default()).unwrap();
        assert_eq!(
            again.sequences,
            g.sequences,
            "{}: fields/pixels differ after rewrite",
            path.display()
        );
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if out == data {
            identical += 1;
        } else {
            assert_eq!(name, "ARMAMEX_gadget.GAF", "{name}: not byte-identical");
        }
        // RLE agreement: re-encode each RLE frame's rows and compare with the stored ones.
        for s in &g.sequences {
            for e in &s.frames {
                let mut v = Vec::new();
                all_frames(&e.frame, &mut v);
                for f in v {
                    let (Some(px), true) = (f.pixels(), f.is_compressed()) else {
                        continue;
                    };
                    let stored = px.payload.as_ref().unwrap();
                    let w = usize::from(f.width);
                    let mut pos = 0;
                    for y in 0..usize::from(f.height) {
                        let len =
                            2 + usize::from(u16::from_le_bytes([stored[pos], stored[pos + 1]]));
                        let mut mine = Vec::new();
                        gaf::rle::encode_row(
                            &px.indices[y * w..(y + 1) * w],
                            &px.opaque[y * w..(y + 1) * w],
                            &mut mine,
                        );
                        rows += 1;
                        if mine == stored[pos..pos + len] {
                            same_rows += 1;
                        }
                        pos += len;
                    }
                }
            }
        }
    }
    println!(
        "corpus: {} GAFs, {identical} byte-identical after parse → write; RLE rows re-encoded identically: {same_rows}/{rows} ({:.1}%)",
        all.len(),
        100.0 * same_rows as f64 / rows.max(1) as f64
    );
    assert_eq!(
        identical,
        all.len(),
        "every corpus GAF rewrites byte for byte"
    );
}

#[test]
fn truecolor_gafs_get_a_clear_error() {
    let Some(corpus) = common::corpus() else {
        return;
    };
    for p in common::files_with_ext(&corpus.join("nonstandard"), &[".gaf"]) {
        let data = std::fs::read(&p).unwrap();
        let e = gaf::parse(&data, &Limits::default()).unwrap_err();
        assert!(
            matches!(
                e,
                GafError::Truecolor {
                    version: 0x0001_0101
                }
            ),
            "{e}"
        );
        assert!(e.to_string().contains("not a Cavedog GAF"));
    }
}
