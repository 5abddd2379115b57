//! Benchmark (not a test) of the balance tables on a game folder (default
//! `../shared/corpus/ota`): the median time of building `units.csv` (read every FBI, parse,
//! render the CSV) and of planning a one-cell save (ARMCOM's BuildCostEnergy changed: the
//! table built again from the files, the edited CSV compared, the FBI edited and checked),
//! plus the same for every table. Usage: `cargo bench --bench tables [-- GAME_DIR [RUNS]]`.

use std::path::PathBuf;
use std::time::{Duration, Instant};
use tafs::game::Plain;
use tafs::view::tables::{family, read_files, Table, FAMILIES};

fn median(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v[v.len() / 2].as_secs_f64() * 1e3
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let game = args.first().map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/corpus/ota"))
    });
    let runs: usize = args.get(1).and_then(|r| r.parse().ok()).unwrap_or(15);
    if !game.is_dir() {
        eprintln!("{}: no such game folder", game.display());
        std::process::exit(2);
    }
    println!("game folder {}, median of {runs} runs", game.display());
    println!(
        "{:<14} {:>6} {:>9} {:>11} {:>13}",
        "table", "rows", "csv KB", "build ms", "1-cell plan ms"
    );
    for fam in FAMILIES {
        let mut build = Vec::new();
        let mut csv = Vec::new();
        let mut rows = 0;
        for _ in 0..runs {
            let t0 = Instant::now();
            let t = Table::build(fam, read_files(&Plain, &game, fam).unwrap());
            csv = t.to_csv();
            build.push(t0.elapsed());
            rows = t.len();
        }
        // One cell: the first number of the first data row, plus one.
        let text = String::from_utf8(csv.clone()).unwrap();
        let edited = edit_one(&text, fam == family("units.csv").unwrap());
        let mut plan = Vec::new();
        if let Some(edited) = &edited {
            for _ in 0..runs {
                let t0 = Instant::now();
                let t = Table::build(fam, read_files(&Plain, &game, fam).unwrap());
                let p = t.plan(edited.as_bytes()).unwrap();
                plan.push(t0.elapsed());
                assert_eq!(p.len(), 1);
            }
        }
        println!(
            "{:<14} {:>6} {:>9.1} {:>11.2} {:>13}",
            fam.csv,
            rows,
            csv.len() as f64 / 1024.0,
            median(build),
            if plan.is_empty() {
                "-".to_string()
            } else {
                format!("{:.2}", median(plan))
            }
        );
    }
}

/// `text` with one number cell changed: ARMCOM's BuildCostEnergy in units.csv, else the
/// first number cell of the first data row.
fn edit_one(text: &str, units: bool) -> Option<String> {
    let mut rd = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(text.as_bytes());
    let mut rows: Vec<Vec<String>> = rd
        .records()
        .map(|r| r.unwrap().iter().map(str::to_string).collect())
        .collect();
    let header = rows.first()?.clone();
    let (ri, ci) = if units {
        let ci = header.iter().position(|h| h == "BuildCostEnergy")?;
        let ri = rows
            .iter()
            .position(|r| r[0].eq_ignore_ascii_case("units/ARMCOM.FBI"))?;
        (ri, ci)
    } else {
        let ci = (2..header.len())
            .find(|&c| rows.get(1).is_some_and(|r| r[c].parse::<i64>().is_ok()))?;
        (1, ci)
    };
    let v: i64 = rows[ri][ci].parse().ok()?;
    rows[ri][ci] = (v + 1).to_string();
    let mut w = csv::Writer::from_writer(Vec::new());
    for r in rows {
        w.write_record(r).unwrap();
    }
    String::from_utf8(w.into_inner().unwrap()).ok()
}
