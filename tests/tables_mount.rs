//! The balance tables folder `.tafs-tables/` of real mounts (the built binary): a Python csv
//! edit of ARMCOM's BuildCostEnergy changes one line of units/ARMCOM.FBI; `sed -i` commits
//! through a rename; an unchanged save (cp of the same text, LibreOffice's re-save) writes
//! nothing; a number cell given text fails the close with EIO and the status names row and
//! column, nothing written; `--merged` shows the tables read-only; `--merged --into MOD`
//! copies a stock unit's FBI (loose, or a member of an archive) into the mod with one value
//! changed. The corpus's ota units/weapons/gamedata are used when present, else fixtures.

mod common;
mod mount_common;

use common::{corpus, py};
use mount_common::{fuse_available, put, sh};
use std::path::{Path, PathBuf};
use tafs::formats::hpi;

const ARMCOM: &[u8] = b"[UNITINFO]\r\n\t{\r\n\tUnitName=ARMCOM;\r\n\tName=Commander;\r\n\tBuildCostEnergy=34125;\r\n\tBuildCostMetal=29854;\r\n\t}\r\n";
const CORAK: &[u8] = b"[UNITINFO]\n{\nUnitName=CORAK;\nBuildCostEnergy=900;\n}\n";
const WEAPONS: &[u8] = b"[LASER]\n{\nrange=300;\n[DAMAGE]\n{\ndefault=5;\n}\n}\n";

/// A game folder: the corpus's ota units, weapons and gamedata, else fixtures.
fn game(dir: &Path) {
    if let Some(c) = corpus() {
        for sub in ["units", "weapons", "gamedata"] {
            sh(&format!(
                "cp -r '{}' '{}' && chmod -R u+w '{}'",
                c.join("ota").join(sub).display(),
                dir.display(),
                dir.display()
            ));
        }
    } else {
        put(&dir.join("units/ARMCOM.FBI"), ARMCOM);
        put(&dir.join("units/CORAK.FBI"), CORAK);
        put(&dir.join("weapons/w.tdf"), WEAPONS);
    }
}

/// The lines of `a` and `b` that differ (same line count asserted).
fn changed_lines(a: &[u8], b: &[u8]) -> Vec<(String, String)> {
    let la: Vec<&[u8]> = a.split(|&c| c == b'\n').collect();
    let lb: Vec<&[u8]> = b.split(|&c| c == b'\n').collect();
    assert_eq!(la.len(), lb.len());
    la.iter()
        .zip(&lb)
        .filter(|(x, y)| x != y)
        .map(|(x, y)| {
            (
                String::from_utf8_lossy(x).trim_end().to_string(),
                String::from_utf8_lossy(y).trim_end().to_string(),
            )
        })
        .collect()
}

/// Sets column `col` of the row of `path` in `csv` with Python's csv module; returns the
/// script's output (`ok`, or `error N` for an OSError at close).
fn py_set(csv: &Path, path: &str, col: &str, value: &str) -> String {
    py_set_cells(csv, &[(path, col, value)])
}

/// [`py_set`] of several cells (path, column, value) in one save; the row is the last's.
fn py_set_cells(csv: &Path, cells: &[(&str, &str, &str)]) -> String {
    py(&format!(
        r#"
import csv
p = {csv:?}
with open(p, newline='') as f:
    rows = list(csv.reader(f))
for path, col, value in {cells}:
    c = rows[0].index(col)
    hit = [i for i, r in enumerate(rows) if r[0].upper() == path.upper()]
    assert len(hit) == 1, hit
    rows[hit[0]][c] = value
try:
    with open(p, 'w', newline='') as f:
        csv.writer(f).writerows(rows)
    print('ok', hit[0] + 1)
except OSError as e:
    print('error', e.errno, hit[0] + 1)
"#,
        cells = py_list(cells)
    ))
}

/// `cells` as a Python list of tuples.
fn py_list(cells: &[(&str, &str, &str)]) -> String {
    let items: Vec<String> = cells
        .iter()
        .map(|(p, c, v)| format!("({p:?}, {c:?}, {v:?})"))
        .collect();
    format!("[{}]", items.join(", "))
}

fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    common::files_with_ext(dir, &[""])
        .into_iter()
        .map(|p| (std::fs::read(&p).unwrap(), p))
        .map(|(b, p)| (p, b))
        .collect()
}

#[test]
fn tables_of_a_game_folder_mount() {
    if !fuse_available() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let g = tmp.path().join("game");
    std::fs::create_dir(&g).unwrap();
    game(&g);
    let m = mount_common::mount(&g, &tmp.path().join("mnt"), &["--ttl", "0"]);
    let t = m.mnt.join(".tafs-tables");
    let units = t.join("units.csv");

    // One row per FBI, one per weapon section.
    let fbis = common::files_with_ext(&g.join("units"), &[".fbi"]).len();
    let rows = py(&format!(
        "import csv; print(len(list(csv.reader(open({:?}, newline=''))))-1)",
        units
    ));
    assert_eq!(rows, fbis.to_string());
    let fbi = g.join("units/ARMCOM.FBI");
    let stock = std::fs::read(&fbi).unwrap();
    let before = snapshot(&g);

    // Unchanged text written back: nothing written.
    sh(&format!(
        "cp '{0}' '{1}/u.csv' && cp '{1}/u.csv' '{0}'",
        units.display(),
        tmp.path().display()
    ));
    assert_eq!(snapshot(&g), before);

    // Text in a number column: EIO at close, row and column in the status, nothing written.
    let out = py_set(&units, "units/ARMCOM.FBI", "BuildCostEnergy", "lots");
    let row = out.rsplit(' ').next().unwrap().to_string();
    assert_eq!(out, format!("error 5 {row}"));
    let status = std::fs::read_to_string(t.join("status")).unwrap();
    assert!(
        status.contains(&format!(
            "units.csv: row {row}, column BuildCostEnergy: \"lots\" is not a number"
        )),
        "{status}"
    );
    assert_eq!(snapshot(&g), before);

    // One cell: one line of the FBI.
    assert_eq!(
        py_set(&units, "units/ARMCOM.FBI", "BuildCostEnergy", "40000"),
        format!("ok {row}")
    );
    let after = std::fs::read(&fbi).unwrap();
    assert_eq!(
        changed_lines(&stock, &after),
        [(
            "\tBuildCostEnergy=34125;".to_string(),
            "\tBuildCostEnergy=40000;".to_string()
        )]
    );
    // The mount shows it, the table too.
    assert_eq!(
        std::fs::read(m.mnt.join("units/ARMCOM.FBI")).unwrap(),
        after
    );
    assert!(std::fs::read_to_string(&units).unwrap().contains(",40000,"));

    // sed -i (a new file renamed over the table).
    sh(&format!(
        "sed -i 's/,40000,/,41000,/' '{}'",
        units.display()
    ));
    let sedded = std::fs::read(&fbi).unwrap();
    assert_eq!(
        changed_lines(&stock, &sedded),
        [(
            "\tBuildCostEnergy=34125;".to_string(),
            "\tBuildCostEnergy=41000;".to_string()
        )]
    );
    // A file changed outside the mount (same size) shows in the table at once.
    std::fs::write(
        &fbi,
        String::from_utf8_lossy(&sedded)
            .replace("=41000;", "=42000;")
            .as_bytes(),
    )
    .unwrap();
    let text = std::fs::read_to_string(&units).unwrap();
    assert!(text.contains(",42000,") && !text.contains(",41000,"));
    // A weapon's nested DAMAGE value through the weapons table.
    let wcsv = t.join("weapons.csv");
    let text = std::fs::read_to_string(&wcsv).unwrap();
    assert!(text.lines().next().unwrap().contains("DAMAGE.default"));
    // No scratch file is left; the folder is not listed at the root.
    let names: Vec<String> = std::fs::read_dir(&t)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(
        names.iter().all(|n| n.ends_with(".csv") || n == "status"),
        "{names:?}"
    );
    assert!(!std::fs::read_dir(&m.mnt)
        .unwrap()
        .any(|e| e.unwrap().file_name() == ".tafs-tables"));
}

/// LibreOffice (headless) converts the mounted units.csv to CSV (it refuses to overwrite its
/// own source, so into another folder), and that text copied back writes nothing: the
/// numbers it reformats (`.6` → `0.6`, `3.0` → `3`) are the same numbers.
#[test]
fn libreoffice_resave_of_an_unchanged_table_writes_nothing() {
    if !fuse_available() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let g = tmp.path().join("game");
    std::fs::create_dir(&g).unwrap();
    game(&g);
    let m = mount_common::mount(&g, &tmp.path().join("mnt"), &["--ttl", "0"]);
    let units = m.mnt.join(".tafs-tables/units.csv");
    let before = snapshot(&g);
    let out = tmp.path().join("lo");
    sh(&format!(
        "HOME='{home}' soffice --headless --infilter='CSV:44,34,76' \
         --convert-to 'csv:Text - txt - csv (StarCalc):44,34,76' --outdir '{out}' '{src}'",
        home = tmp.path().display(),
        out = out.display(),
        src = units.display()
    ));
    let resaved = std::fs::read(out.join("units.csv")).unwrap();
    std::fs::write(&units, &resaved).unwrap();
    assert_eq!(snapshot(&g), before);
    let status = std::fs::read_to_string(m.mnt.join(".tafs-tables/status")).unwrap();
    assert!(status.is_empty(), "{status}");
}

/// A save changing two files whose second cannot be staged (a folder holds its temporary
/// file's name) changes neither; the same save then replaces both, `tafs status` lists it
/// with its cells, and `tafs history` / `tafs restore` bring a file's previous text back.
#[test]
fn a_table_save_is_all_or_nothing_and_kept_in_the_history() {
    if !fuse_available() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let g = tmp.path().join("game");
    let state = tmp.path().join("state");
    std::fs::create_dir(&g).unwrap();
    game(&g);
    let st = state.to_str().unwrap();
    let m = mount_common::mount(
        &g,
        &tmp.path().join("mnt"),
        &["--ttl", "0", "--state-dir", st],
    );
    let units = m.mnt.join(".tafs-tables/units.csv");
    let (armcom, corak) = (g.join("units/ARMCOM.FBI"), g.join("units/CORAK.FBI"));
    let (stock_armcom, stock_corak) = (
        std::fs::read(&armcom).unwrap(),
        std::fs::read(&corak).unwrap(),
    );
    let cells = [
        ("units/ARMCOM.FBI", "BuildCostEnergy", "40000"),
        ("units/CORAK.FBI", "BuildCostEnergy", "950"),
    ];

    // CORAK's temporary file cannot be made: nothing changes, ARMCOM included.
    put(&g.join("units/.CORAK.FBI.tafs-tables/keep"), b"x");
    let before = snapshot(&g);
    let out = py_set_cells(&units, &cells);
    assert!(out.starts_with("error 5 "), "{out}");
    assert_eq!(snapshot(&g), before);
    let status = std::fs::read_to_string(m.mnt.join(".tafs-tables/status")).unwrap();
    assert!(
        status.contains("units.csv: nothing written: staging units/CORAK.FBI failed"),
        "{status}"
    );

    // Unblocked, the same save replaces both, one line each.
    std::fs::remove_dir_all(g.join("units/.CORAK.FBI.tafs-tables")).unwrap();
    assert!(py_set_cells(&units, &cells).starts_with("ok "));
    let changed = |stock: &[u8], f: &Path| changed_lines(stock, &std::fs::read(f).unwrap());
    assert_eq!(changed(&stock_armcom, &armcom).len(), 1);
    assert_eq!(changed(&stock_corak, &corak).len(), 1);
    assert!(changed(&stock_corak, &corak)[0]
        .1
        .contains("BuildCostEnergy=950;"));
    // No temporary file, no journal left.
    assert_eq!(snapshot(&g).len(), before.len() - 1);
    assert_eq!(std::fs::read_dir(state.join("tables")).unwrap().count(), 0);

    // The status lists the save with its files and cells.
    let status = common::tafs_ok(&["status", m.mnt.to_str().unwrap()]);
    assert!(
        status.contains("tables:\nunits.csv: nothing written")
            && status.contains("\nunits.csv: committed 2 file(s)\n"),
        "{status}"
    );
    assert!(status.contains("  units/CORAK.FBI\n"), "{status}");
    assert!(
        status.contains("    [UNITINFO] BuildCostEnergy: \"34125\" -> \"40000\"\n"),
        "{status}"
    );

    // The history keeps the text each file had; restoring brings it back.
    let a = armcom.to_str().unwrap();
    let h = common::tafs_ok(&["history", a, "--state-dir", st]);
    assert_eq!(h.lines().count(), 1, "{h}");
    common::tafs_ok(&["restore", a, "--state-dir", st]);
    assert_eq!(std::fs::read(&armcom).unwrap(), stock_armcom);
    assert!(String::from_utf8_lossy(&std::fs::read(&corak).unwrap()).contains("=950;"));
}

/// LibreOffice converting an edited copy of units.csv into the tables folder
/// (`--convert-to csv --outdir MNT/.tafs-tables`) saves it through the mount: one line of
/// the FBI changes.
#[test]
fn libreoffice_converting_an_edited_copy_into_the_tables_folder_commits_it() {
    if !fuse_available() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let g = tmp.path().join("game");
    std::fs::create_dir(&g).unwrap();
    game(&g);
    let m = mount_common::mount(&g, &tmp.path().join("mnt"), &["--ttl", "0"]);
    let t = m.mnt.join(".tafs-tables");
    let fbi = g.join("units/ARMCOM.FBI");
    let stock = std::fs::read(&fbi).unwrap();
    let ed = tmp.path().join("ed");
    std::fs::create_dir(&ed).unwrap();
    std::fs::copy(t.join("units.csv"), ed.join("units.csv")).unwrap();
    assert!(py_set(
        &ed.join("units.csv"),
        "units/ARMCOM.FBI",
        "BuildCostEnergy",
        "40000"
    )
    .starts_with("ok "));
    sh(&format!(
        "HOME='{home}' soffice --headless --infilter='CSV:44,34,76' \
         --convert-to 'csv:Text - txt - csv (StarCalc):44,34,76' --outdir '{out}' '{src}'",
        home = tmp.path().display(),
        out = t.display(),
        src = ed.join("units.csv").display()
    ));
    assert_eq!(
        changed_lines(&stock, &std::fs::read(&fbi).unwrap()),
        [(
            "\tBuildCostEnergy=34125;".to_string(),
            "\tBuildCostEnergy=40000;".to_string()
        )]
    );
    let status = std::fs::read_to_string(t.join("status")).unwrap();
    assert!(
        status.starts_with("units.csv: committed 1 file(s)"),
        "{status}"
    );
}

/// A plain mount shows each archive as a folder: a unit only inside one is a row of its
/// `units.csv` with read-only cells (changing one is refused, naming the archive), a unit
/// also loose is not (the loose file is the row); an unchanged save writes nothing.
#[test]
fn a_plain_mounts_units_only_in_an_archive_are_read_only_rows() {
    if !fuse_available() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let g = tmp.path().join("game");
    std::fs::create_dir(&g).unwrap();
    game(&g);
    let tree = vec![dir(
        "units",
        vec![file("ARMHPI.FBI", CORAK), file("ARMCOM.FBI", ARMCOM)],
    )];
    put(
        &g.join("rev31.gp3"),
        hpi::write(&tree, &hpi::WriteOptions::v1()).unwrap(),
    );
    let before = snapshot(&g);
    let m = mount_common::mount(&g, &tmp.path().join("mnt"), &["--ttl", "0"]);
    let units = m.mnt.join(".tafs-tables/units.csv");
    let text = std::fs::read_to_string(&units).unwrap();
    assert!(
        text.contains("\nrev31.gp3/units/ARMHPI.FBI,UNITINFO,CORAK,"),
        "{text}"
    );
    assert!(!text
        .to_ascii_lowercase()
        .contains("rev31.gp3/units/armcom.fbi"));
    let fbis = common::files_with_ext(&g.join("units"), &[".fbi"]).len();
    assert_eq!(text.lines().count(), 1 + fbis + 1);

    // Unchanged text written back: nothing written.
    sh(&format!(
        "cp '{0}' '{1}/u.csv' && cp '{1}/u.csv' '{0}'",
        units.display(),
        tmp.path().display()
    ));
    assert_eq!(snapshot(&g), before);
    // A cell of the archived unit: refused, naming the archive.
    let out = py_set(
        &units,
        "rev31.gp3/units/ARMHPI.FBI",
        "BuildCostEnergy",
        "950",
    );
    assert!(out.starts_with("error 5 "), "{out}");
    let status = std::fs::read_to_string(m.mnt.join(".tafs-tables/status")).unwrap();
    assert!(
        status.contains("column BuildCostEnergy: read-only cell: inside the archive rev31.gp3"),
        "{status}"
    );
    assert_eq!(snapshot(&g), before);
}

fn file(name: &str, bytes: &[u8]) -> hpi::Node {
    hpi::Node::file(name.as_bytes().to_vec(), bytes.to_vec())
}

fn dir(name: &str, entries: Vec<hpi::Node>) -> hpi::Node {
    hpi::Node::dir(name.as_bytes().to_vec(), entries)
}

/// `--merged`: the tables show the game as it plays (a unit only an archive holds too) and
/// refuse writes; `--merged --into MOD`: a cell edit of a loose stock unit and of an
/// archive's unit each land as a copy in the mod with one line changed, stock untouched.
#[test]
fn tables_of_the_merged_view_and_into_a_mod() {
    if !fuse_available() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let g = tmp.path().join("game");
    std::fs::create_dir(&g).unwrap();
    game(&g);
    let tree = vec![dir("units", vec![file("ARMHPI.FBI", CORAK)])];
    put(
        &g.join("rev31.gp3"),
        hpi::write(&tree, &hpi::WriteOptions::v1()).unwrap(),
    );
    std::fs::create_dir_all(g.join("mods/mymod")).unwrap();
    let before = snapshot(&g);
    {
        let m = mount_common::mount(&g, &tmp.path().join("ro"), &["--merged", "--ttl", "0"]);
        let units = m.mnt.join(".tafs-tables/units.csv");
        let text = std::fs::read_to_string(&units).unwrap();
        assert!(text.contains("units/ARMHPI.FBI,UNITINFO,CORAK,"), "{text}");
        let e = std::fs::OpenOptions::new()
            .write(true)
            .open(&units)
            .unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EROFS));
    }
    let state = tmp.path().join("state");
    let m = mount_common::mount(
        &g,
        &tmp.path().join("mnt"),
        &[
            "--merged",
            "--into",
            "mods/mymod",
            "--ttl",
            "0",
            "--state-dir",
            state.to_str().unwrap(),
        ],
    );
    let units = m.mnt.join(".tafs-tables/units.csv");
    assert!(py_set(&units, "units/ARMCOM.FBI", "BuildCostEnergy", "40000").starts_with("ok"));
    assert!(py_set(&units, "units/ARMHPI.FBI", "BuildCostEnergy", "950").starts_with("ok"));
    let stock = std::fs::read(g.join("units/ARMCOM.FBI")).unwrap();
    let copy = std::fs::read(g.join("mods/mymod/units/ARMCOM.FBI")).unwrap();
    assert_eq!(
        changed_lines(&stock, &copy),
        [(
            "\tBuildCostEnergy=34125;".to_string(),
            "\tBuildCostEnergy=40000;".to_string()
        )]
    );
    let copy = std::fs::read(g.join("mods/mymod/units/ARMHPI.FBI")).unwrap();
    assert_eq!(
        changed_lines(CORAK, &copy),
        [(
            "BuildCostEnergy=900;".to_string(),
            "BuildCostEnergy=950;".to_string()
        )]
    );
    // The mod copy's history keeps the text it replaced (the stock unit's).
    let h = common::tafs_ok(&[
        "history",
        g.join("mods/mymod/units/ARMCOM.FBI").to_str().unwrap(),
        "--state-dir",
        state.to_str().unwrap(),
    ]);
    let kept = h.split('\t').nth(2).unwrap().trim_end_matches("\toriginal");
    assert_eq!(std::fs::read(kept.trim()).unwrap(), stock, "{h}");
    // Stock untouched: everything outside the mod as before.
    let mods = g.join("mods");
    let now: Vec<_> = snapshot(&g)
        .into_iter()
        .filter(|(p, _)| !p.starts_with(&mods))
        .collect();
    assert_eq!(now, before);
}
