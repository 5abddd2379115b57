//! 3DO models through Blender 3.4, run headless: its OBJ import (default axes) and export
//! (objects and materials) re-writes every line, drops vertices no face uses, objects
//! without faces and lines along face edges, merges repeated corners and regroups faces by
//! material. An unedited round trip builds the identical 3DO (armcom, or the self-made
//! model, through a real mount; every corpus model with `tafs 3do build`); a piece moved
//! in Blender changes that piece's offset words only (checked with `tafs 3do describe` and
//! the independent Python reader `tests/scripts/read3do.py`), also in an archive's member
//! through `mount --merged --into`, where the edited model lands in the mod only.

mod common;
mod mount_common;

use mount_common::GameMount;
use std::path::{Path, PathBuf};
use std::process::Command;

const TAFS: &str = env!("CARGO_BIN_EXE_tafs");
const U: i64 = 65536;

/// Imports each `src` OBJ (default axes), moves the objects named in `moves` by
/// (dx, dy, dz) in Blender's axes, and exports to `dst` (objects and materials).
const SCRIPT: &str = r#"
import bpy, sys
jobs = [l.rstrip("\n").split("\t") for l in open(sys.argv[sys.argv.index("--") + 1])]
for job in jobs:
    src, dst, moves = job[0], job[1], job[2:]
    bpy.ops.wm.read_factory_settings(use_empty=True)
    bpy.ops.wm.obj_import(filepath=src)
    for m in moves:
        name, dx, dy, dz = m.split(",")
        ob = bpy.data.objects[name]
        ob.location.x += float(dx)
        ob.location.y += float(dy)
        ob.location.z += float(dz)
    bpy.ops.wm.obj_export(filepath=dst, export_materials=True)
"#;

/// Runs Blender headless over `jobs` (source OBJ, target OBJ, moves "name,dx,dy,dz").
fn blender(dir: &Path, jobs: &[(PathBuf, PathBuf, Vec<String>)]) {
    let script = dir.join("roundtrip.py");
    std::fs::write(&script, SCRIPT).unwrap();
    let list = dir.join("jobs.tsv");
    let text: String = jobs
        .iter()
        .map(|(s, d, m)| {
            let mut cols = vec![s.display().to_string(), d.display().to_string()];
            cols.extend(m.iter().cloned());
            cols.join("\t") + "\n"
        })
        .collect();
    std::fs::write(&list, text).unwrap();
    let o = Command::new("blender")
        .args([
            "-b",
            "--factory-startup",
            "--python-exit-code",
            "1",
            "--python",
        ])
        .arg(&script)
        .arg("--")
        .arg(&list)
        .output()
        .expect("blender (Debian's blender) runs");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.success() && !err.contains("Traceback"),
        "{}\n{err}",
        String::from_utf8_lossy(&o.stdout)
    );
}

/// The self-made model, with what Blender drops: a vertex no face uses (in `turret`) and a
/// piece that is one point (`flare`).
fn fixture() -> Vec<u8> {
    use tafs::formats::o3do;
    let mut m = o3do::parse(
        &tafs::sample::demo_model_3do(),
        &o3do::ModelLimits::default(),
    )
    .unwrap();
    let turret = m.pieces[1].clone();
    m.pieces[1].vertices.push([0, 6 * U as i32, 0]);
    m.pieces.push(o3do::Piece {
        name: "flare".into(),
        parent: Some(1),
        depth: 2,
        origin: [0, 2 * U as i32, -6 * U as i32],
        vertices: vec![[0, 0, 0]],
        primitives: Vec::new(),
        selection_primitive: -1,
        ..turret
    });
    o3do::write(&m, None).unwrap()
}

/// The model to edit: armcom from the corpus (the leaf piece to move, and a piece to move
/// with its children), or the fixture.
fn model() -> (Vec<u8>, &'static str, &'static str, &'static [&'static str]) {
    match common::corpus() {
        Some(c) => (
            std::fs::read(c.join("ota/objects3d/armcom.3do")).unwrap(),
            "head",
            "luparm",
            &["nanolath", "lfirept", "nanospray"],
        ),
        None => {
            println!("corpus missing: the self-made model");
            (fixture(), "turret", "base", &["turret"])
        }
    }
}

fn read3do(path: &Path) -> serde_json::Value {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/scripts/read3do.py");
    let o = Command::new("python3")
        .arg(script)
        .arg(path)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// The rows of `tafs 3do describe`'s piece table.
fn describe(path: &Path) -> Vec<String> {
    let o = common::tafs(&["3do", "describe", path.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .skip_while(|l| !l.starts_with("name,parent"))
        .take_while(|l| !l.starts_with("textures:"))
        .map(String::from)
        .collect()
}

/// Checks that `after` differs from `before` only in the offset of piece `name`, by `d`
/// (16.16 units): per the Python reader, per `tafs 3do describe`, and in at most the 12
/// bytes of one object header's offset words.
fn only_offset_moved(dir: &Path, before: &[u8], after: &[u8], name: &str, d: [i64; 3]) {
    let (a, b) = (dir.join("before.3do"), dir.join("after.3do"));
    std::fs::write(&a, before).unwrap();
    std::fs::write(&b, after).unwrap();
    let (ja, jb) = (read3do(&a), read3do(&b));
    let (pa, pb) = (ja.as_array().unwrap(), jb.as_array().unwrap());
    assert_eq!(pa.len(), pb.len());
    let mut moved = 0;
    for (x, y) in pa.iter().zip(pb) {
        if x["name"] == name && moved == 0 {
            moved += 1;
            for k in 0..3 {
                let (o, n) = (x["origin"][k].as_i64(), y["origin"][k].as_i64());
                assert_eq!(n.unwrap() - o.unwrap(), d[k], "{name} axis {k}");
            }
            let mut x = x.clone();
            x["origin"] = y["origin"].clone();
            assert_eq!(&x, y, "{name}: more than its offset changed");
        } else {
            assert_eq!(x, y, "piece {} changed", x["name"]);
        }
    }
    assert_eq!(moved, 1, "no piece {name}");
    let (da, db) = (describe(&a), describe(&b));
    let changed: Vec<(&String, &String)> = da.iter().zip(&db).filter(|(x, y)| x != y).collect();
    assert_eq!(changed.len(), 1, "{changed:?}");
    assert!(changed[0].1.starts_with(&format!("{name},")), "{changed:?}");
    assert_eq!(before.len(), after.len());
    let at: Vec<usize> = (0..before.len())
        .filter(|&i| before[i] != after[i])
        .collect();
    assert!(!at.is_empty());
    assert!(at[at.len() - 1] - at[0] < 12, "bytes {at:?} differ");
}

#[test]
fn blender_moves_a_piece_through_the_mount_and_only_its_offset_changes() {
    let (bytes, leaf, parent, children) = model();
    let Some(e) = GameMount::new("objects3d/armcom.3do", &[], |_, bin| {
        std::fs::write(bin, &bytes).unwrap();
    }) else {
        return;
    };
    let obj = e.asset().join("model.obj");
    let work = e.path("work");
    std::fs::create_dir_all(&work).unwrap();
    let before = std::fs::read(e.bin()).unwrap();

    // unedited: Blender's export over the mount's model.obj gives back the identical 3DO
    blender(&work, &[(obj.clone(), obj.clone(), vec![])]);
    assert_eq!(std::fs::read(e.bin()).unwrap(), before, "{}", e.status());
    assert!(e.status().contains("clean"), "{}", e.status());

    // a leaf moved by (1, 2, 3) in Blender's axes: (1, 3, 2) in the 3DO's
    blender(
        &work,
        &[(obj.clone(), obj.clone(), vec![format!("{leaf},1,2,3")])],
    );
    let after = std::fs::read(e.bin()).unwrap();
    assert!(e.status().contains("clean"), "{}", e.status());
    only_offset_moved(&work, &before, &after, leaf, [U, 3 * U, 2 * U]);

    // a piece moved with its children: its offset only (the leaf stays moved)
    let mut moves = vec![format!("{parent},-0.5,0,0.25")];
    moves.extend(children.iter().map(|c| format!("{c},-0.5,0,0.25")));
    blender(&work, &[(obj.clone(), obj.clone(), moves)]);
    let last = std::fs::read(e.bin()).unwrap();
    assert!(e.status().contains("clean"), "{}", e.status());
    only_offset_moved(&work, &after, &last, parent, [-U / 2, U / 4, 0]);
}

#[test]
fn an_unedited_blender_round_trip_of_every_model_builds_the_identical_3do() {
    let t = tempfile::tempdir().unwrap();
    let fix = t.path().join("fixture.3do");
    std::fs::write(&fix, fixture()).unwrap();
    let mut models = vec![fix];
    match common::corpus() {
        Some(c) => {
            for d in ["ota/objects3d", "game/objects3d"] {
                models.extend(common::files_with_ext(&c.join(d), &["3do"]));
            }
            assert!(models.len() > 596, "{} models", models.len());
        }
        None => println!("corpus missing: the self-made model only"),
    }
    let mut jobs = Vec::new();
    for (i, m) in models.iter().enumerate() {
        let d = t.path().join(format!("m{i}"));
        let o = common::tafs(&[
            "3do",
            "dump",
            m.to_str().unwrap(),
            "-t",
            d.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        jobs.push((d.join("model.obj"), d.join("blender.obj"), vec![]));
    }
    blender(t.path(), &jobs);
    let mut failed = Vec::new();
    for (i, m) in models.iter().enumerate() {
        let d = t.path().join(format!("m{i}"));
        std::fs::rename(d.join("blender.obj"), d.join("model.obj")).unwrap();
        let target = t.path().join("rebuilt.3do");
        let o = Command::new(TAFS)
            .args(["3do", "build"])
            .arg(&d)
            .arg("-t")
            .arg(&target)
            .arg("--base")
            .arg(m)
            .output()
            .unwrap();
        if !o.status.success() {
            failed.push(format!(
                "{}: {}",
                m.display(),
                String::from_utf8_lossy(&o.stderr)
            ));
        } else if std::fs::read(&target).unwrap() != std::fs::read(m).unwrap() {
            failed.push(format!("{}: rebuilt bytes differ", m.display()));
        }
    }
    println!(
        "{} of {} Blender round trips rebuilt identical",
        models.len() - failed.len(),
        models.len()
    );
    assert!(failed.is_empty(), "{failed:#?}");
}

#[test]
fn blender_in_an_archives_3do_through_merged_into_lands_in_the_mod_only() {
    use tafs::formats::hpi;
    if !mount_common::fuse_available() {
        println!("skipped: no FUSE");
        return;
    }
    let (bytes, leaf, _, _) = model();
    let t = tempfile::tempdir().unwrap();
    let game = t.path().join("game");
    std::fs::create_dir_all(&game).unwrap();
    let tree = vec![hpi::Node::dir(
        b"objects3d".to_vec(),
        vec![hpi::Node::file(b"armcom.3do".to_vec(), bytes.clone())],
    )];
    let archive = hpi::write(&tree, &hpi::WriteOptions::v1()).unwrap();
    std::fs::write(game.join("totala1.hpi"), &archive).unwrap();
    let state = t.path().join("state");
    let m = mount_common::mount(
        &game,
        &t.path().join("mnt"),
        &[
            "--merged",
            "--into",
            "mod",
            "--ttl",
            "0",
            "--archive-commit-delay",
            "0",
            "--state-dir",
            state.to_str().unwrap(),
        ],
    );
    let obj = m.mnt.join("objects3d/armcom.3do/model.obj");
    let work = t.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    blender(
        &work,
        &[(obj.clone(), obj.clone(), vec![format!("{leaf},0,0,1")])],
    );
    let landed = game.join("mod/objects3d/armcom.3do");
    let after = std::fs::read(&landed).unwrap_or_else(|e| {
        let st = sh_status(&m.mnt.join("objects3d/armcom.3do"));
        panic!("{}: {e}; status: {st}", landed.display())
    });
    // Blender's z is the 3DO's y: one game unit up
    only_offset_moved(&work, &bytes, &after, leaf, [0, U, 0]);
    assert_eq!(std::fs::read(game.join("totala1.hpi")).unwrap(), archive);
}

fn sh_status(asset: &Path) -> String {
    std::fs::read_to_string(asset.join(".tafs-status")).unwrap_or_default()
}
