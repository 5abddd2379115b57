//! `tafs tnt …`: describe, minimap, heightmap, image, features, lint, unpack, pack, preview.

use super::{read_file, write_bytes, write_file, CliError};
use crate::formats::palette::Palette;
use crate::formats::tdf;
use crate::formats::tnt::{self, Tnt, FEATURE_VOID, FIRST_SENTINEL, TILE_BYTES};
use crate::formats::Limits;
use crate::view::tnt::{map_view_options, pack_with_report, write_map_png, PackOptions, TntView};
use crate::view::{self, DirFileSet, ViewOptions};

/// The view options of a map file: the palette of the game folder found above it (the folder
/// holding `palettes/`), the same way the mount builds them.
pub fn options_for(file: &Path) -> ViewOptions {
    let (game_dir, rel) = view::palette::game_dir_of(file);
    let has_palettes = view::palette::find_dir_ci(&game_dir, "palettes").is_some();
    map_view_options(has_palettes.then_some(game_dir.as_path()), Some(rel))
}

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// `tafs tnt` subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum TntCmd {
    /// Header, tiles, features, minimap, pads, elevation statistics, top features.
    Describe {
        /// The map.
        file: PathBuf,
    },
    /// Write the embedded minimap as an indexed PNG.
    Minimap {
        /// The map.
        file: PathBuf,
        /// Output PNG.
        #[arg(short = 't', long = "target")]
        target: PathBuf,
    },
    /// Write the elevation grid as an 8-bit grey PNG (one pixel per 16×16 cell).
    Heightmap {
        /// The map.
        file: PathBuf,
        /// Stretch the heights found to 0..255.
        #[arg(long)]
        normalize: bool,
        /// Output PNG.
        #[arg(short = 't', long = "target")]
        target: PathBuf,
    },
    /// Write the raw tile mosaic as an indexed PNG (streamed).
    Image {
        /// The map.
        file: PathBuf,
        /// Output PNG.
        #[arg(short = 't', long = "target")]
        target: PathBuf,
    },
    /// Print the feature table and every placement as JSON.
    Features {
        /// The map.
        file: PathBuf,
    },
    /// Check maps: bad-tile-index, unresolved-feature, minimap-flag, minimap-size,
    /// duplicate-tiles, unused-tiles.
    Lint {
        /// The maps.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Exit with status 1 when any warning fires.
        #[arg(long)]
        strict: bool,
        /// Game folder whose features/**/*.tdf resolve feature names (default: found by
        /// walking up from each map).
        #[arg(long)]
        game_dir: Option<PathBuf>,
    },
    /// Explode a map into map.png, heightmap.png, minimap.png, tiles/, tilemap.csv,
    /// features.csv and metadata.json.
    Unpack {
        /// The map.
        file: PathBuf,
        /// Output directory (created if missing).
        #[arg(short = 't', long = "target")]
        target: PathBuf,
        /// Leave the lossless data (raw name buffers, pad bytes, layout) out of metadata.json.
        #[arg(long, conflicts_with = "lossless")]
        clean: bool,
        /// Accepted for kbot users: the lossless form is the default.
        #[arg(long)]
        lossless: bool,
    },
    /// Rebuild a map from an unpacked directory (written atomically; nothing on error).
    Pack {
        /// The unpacked directory.
        dir: PathBuf,
        /// Output map.
        #[arg(short = 't', long = "target")]
        target: PathBuf,
        /// Drop tiles no cell uses.
        #[arg(long)]
        prune: bool,
    },
    /// Render the map with feature sprites and numbered start positions (PNG or JPG).
    Preview {
        /// The map.
        file: PathBuf,
        /// Output image: .png or .jpg/.jpeg.
        #[arg(short = 't', long = "target")]
        target: PathBuf,
        /// Game folder with features/ and anims/ (default: found by walking up from the map).
        #[arg(long)]
        game_dir: Option<PathBuf>,
        /// Longest side of the output in pixels; larger maps are scaled down by a whole factor.
        #[arg(long, default_value_t = 8192)]
        max_size: u32,
    },
    /// Write the crate's sample map (16×16 tiles: grass, lake, rocks, paths, placed features)
    /// to try the other commands on.
    Sample {
        /// Output map.
        #[arg(short = 't', long = "target")]
        target: PathBuf,
    },
}

/// Runs a `tafs tnt` subcommand.
pub fn run(cmd: TntCmd) -> Result<i32, CliError> {
    match cmd {
        TntCmd::Describe { file } => {
            let (t, len) = load(&file)?;
            print!("{}", describe(&t, len));
            Ok(0)
        }
        TntCmd::Minimap { file, target } => {
            let (t, _) = load(&file)?;
            let m = &t.minimap;
            if m.width == 0 || m.height == 0 {
                return super::err(format!("{}: the minimap is empty", file.display()));
            }
            write_file(&target, |w| {
                crate::view::image::write_indexed_png(
                    w,
                    m.width,
                    m.height,
                    &m.pixels,
                    &Palette::ta(),
                    None,
                )
                .map_err(png_err)
            })?;
            Ok(0)
        }
        TntCmd::Heightmap {
            file,
            normalize,
            target,
        } => {
            let (t, _) = load(&file)?;
            let mut h: Vec<u8> = t.attrs.iter().map(|a| a.height).collect();
            if normalize {
                let (lo, hi) = h
                    .iter()
                    .fold((255u8, 0u8), |(l, m), &v| (l.min(v), m.max(v)));
                let span = u32::from(hi.saturating_sub(lo)).max(1);
                for v in h.iter_mut() {
                    *v = (u32::from(*v - lo) * 255 / span) as u8;
                }
            }
            if h.is_empty() {
                return super::err(format!("{}: the map has no cells", file.display()));
            }
            write_file(&target, |w| {
                crate::view::image::write_gray_png(w, t.width, t.height, &h).map_err(png_err)
            })?;
            Ok(0)
        }
        TntCmd::Image { file, target } => {
            let (t, _) = load(&file)?;
            if t.pixel_width() == 0 || t.pixel_height() == 0 {
                return super::err(format!("{}: the map has no tiles", file.display()));
            }
            write_file(&target, |w| {
                write_map_png(w, &t, &Palette::ta()).map_err(png_err)
            })?;
            Ok(0)
        }
        TntCmd::Features { file } => {
            let (t, _) = load(&file)?;
            let s = serde_json::to_string_pretty(&features_json(&t))
                .map_err(|e| CliError::Msg(e.to_string()))?;
            println!("{s}");
            Ok(0)
        }
        TntCmd::Lint {
            files,
            strict,
            game_dir,
        } => lint(&files, strict, game_dir.as_deref()),
        TntCmd::Unpack {
            file,
            target,
            clean,
            lossless: _,
        } => {
            let non_empty = std::fs::read_dir(&target).is_ok_and(|mut d| d.next().is_some());
            if non_empty {
                return super::err(format!(
                    "{}: not empty; unpack into a new or empty directory (files left from \
                     another map would be packed back)",
                    target.display()
                ));
            }
            let data = read_file(&file)?;
            let v = TntView::with_form(&data, &options_for(&file), clean)
                .map_err(|e| CliError::Msg(format!("{}: {e}", file.display())))?;
            view::write_tree(&v, &target)?;
            eprintln!(
                "unpacked {} ({} tiles, {} placements) to {}",
                file.display(),
                v.tnt().tile_count(),
                v.tnt().placements().count(),
                target.display()
            );
            Ok(0)
        }
        TntCmd::Sample { target } => {
            let bytes = crate::formats::tnt::write(&crate::sample::demo_map())
                .map_err(|e| CliError::Msg(e.to_string()))?;
            write_bytes(&target, &bytes)?;
            Ok(0)
        }
        TntCmd::Pack { dir, target, prune } => {
            let opts = PackOptions {
                prune,
                ..Default::default()
            };
            let (bytes, rep) = pack_with_report(&DirFileSet::new(&dir), &opts)
                .map_err(|e| CliError::Msg(format!("{}: {e}", dir.display())))?;
            write_bytes(&target, &bytes)?;
            if rep.map_retiled {
                eprintln!(
                    "map.png was edited: re-tiled ({} new tiles){}",
                    rep.new_tiles,
                    if rep.minimap_rebuilt {
                        ", minimap rebuilt"
                    } else {
                        ", edited minimap.png kept"
                    }
                );
            }
            if rep.pruned_tiles > 0 {
                eprintln!("pruned {} unused tiles", rep.pruned_tiles);
            }
            Ok(0)
        }
        TntCmd::Preview {
            file,
            target,
            game_dir,
            max_size,
        } => preview(&file, &target, game_dir.as_deref(), max_size),
    }
}

fn png_err(e: png::EncodingError) -> CliError {
    match e {
        png::EncodingError::IoError(io) => CliError::Io(io),
        e => CliError::Msg(e.to_string()),
    }
}

fn load(file: &Path) -> Result<(Tnt, usize), CliError> {
    let data = read_file(file)?;
    let t = tnt::parse(&data, &Limits::default())
        .map_err(|e| CliError::Msg(format!("{}: {e}", file.display())))?;
    Ok((t, data.len()))
}

fn version_name(v: u32) -> &'static str {
    match v {
        tnt::VERSION_TA => "Total Annihilation",
        tnt::VERSION_LEGACY => "older Total Annihilation layout; written back as 0x2000",
        _ => "unknown",
    }
}

/// The `describe` text.
pub fn describe(t: &Tnt, file_len: usize) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(s, "File Size: {file_len} bytes\n");
    let _ = writeln!(s, "Header:");
    let _ = writeln!(
        s,
        "  IDVersion:   {:#x} ({})",
        t.source_version,
        version_name(t.source_version)
    );
    let _ = writeln!(
        s,
        "  Width:       {} (16px cells) -> {} tiles, {} pixels",
        t.width,
        t.tiles_x(),
        t.pixel_width()
    );
    let _ = writeln!(
        s,
        "  Height:      {} (16px cells) -> {} tiles, {} pixels",
        t.height,
        t.tiles_y(),
        t.pixel_height()
    );
    let _ = writeln!(s, "  SeaLevel:    {}", t.sea_level);
    let _ = writeln!(s, "  Tiles:       {} unique", t.tile_count());
    let placements: Vec<(u16, u32, u32)> = t.placements().collect();
    let _ = writeln!(
        s,
        "  Features:    {} in table, {} placements",
        t.features.len(),
        placements.len()
    );
    let _ = writeln!(s, "  Minimap:     {}x{}", t.minimap.width, t.minimap.height);
    let _ = writeln!(
        s,
        "  MinimapFlags: {} ({})",
        t.minimap_flags,
        if t.minimap_flags & 1 != 0 {
            "bit 0 set, the game reads the stored minimap"
        } else {
            "bit 0 clear, the game builds the radar image from the tiles"
        }
    );
    let p = t.pads;
    let _ = writeln!(s, "  Pads:        {} {} {} {}", p[0], p[1], p[2], p[3]);

    let n = t.attrs.len().max(1);
    let (lo, hi, sum, under) = t.attrs.iter().fold((255u8, 0u8, 0u64, 0usize), |acc, a| {
        (
            acc.0.min(a.height),
            acc.1.max(a.height),
            acc.2 + u64::from(a.height),
            acc.3 + usize::from(u32::from(a.height) < t.sea_level),
        )
    });
    let _ = writeln!(s, "\nElevation:");
    if t.attrs.is_empty() {
        let _ = writeln!(s, "  (no cells)");
    } else {
        let _ = writeln!(
            s,
            "  min={lo} max={hi} mean={:.1}  cells below sealevel: {under} ({:.2}%)",
            sum as f64 / n as f64,
            under as f64 * 100.0 / n as f64
        );
    }

    // Feature words that place nothing.
    let mut sentinels: BTreeMap<u16, usize> = BTreeMap::new();
    for a in &t.attrs {
        if !t.places_feature(a.feature) && a.feature != tnt::FEATURE_NONE {
            *sentinels.entry(a.feature).or_default() += 1;
        }
    }
    if !sentinels.is_empty() {
        let _ = writeln!(s, "\nCells without a placement (feature word ≠ 0xFFFF):");
        for (w, c) in &sentinels {
            let what = match *w {
                FEATURE_VOID => "void",
                w if w >= FIRST_SENTINEL => "sentinel, places nothing",
                _ => "past the feature table, places nothing",
            };
            let _ = writeln!(s, "  {w:#06x} ({what}): {c}");
        }
    }

    let mut counts = vec![0usize; t.features.len()];
    for (f, _, _) in &placements {
        counts[usize::from(*f)] += 1;
    }
    if !t.features.is_empty() {
        let _ = writeln!(s, "\nFeature table:");
        for (i, f) in t.features.iter().enumerate() {
            let _ = writeln!(s, "  [{i:3}] {}  placed={}", f.name_str(), counts[i]);
        }
        let mut top: Vec<(usize, usize)> = counts.iter().copied().enumerate().collect();
        top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let _ = writeln!(s, "\nTop features:");
        for (i, c) in top.iter().filter(|(_, c)| *c > 0).take(10) {
            let _ = writeln!(s, "  [{i:3}] {}  count={c}", t.features[*i].name_str());
        }
    }
    if let Some(l) = &t.layout {
        let _ = writeln!(s, "\nLayout:");
        for (name, b) in [
            ("map data", l.map_data),
            ("attributes", l.attrs),
            ("tile graphics", l.tile_gfx),
            ("feature names", l.feature_names),
            ("minimap", l.minimap),
        ] {
            let _ = writeln!(s, "  {name:14} offset {:#x}, {} bytes", b.offset, b.len);
        }
        let extra: usize = l.filler.iter().map(|f| f.bytes.len()).sum();
        let _ = writeln!(
            s,
            "  bytes outside the blocks: {extra} in {} runs",
            l.filler.len()
        );
    }
    s
}

#[derive(serde::Serialize)]
struct FeatureJson {
    index: usize,
    name: String,
    placements: usize,
}

#[derive(serde::Serialize)]
struct PlacementJson {
    feature_index: u16,
    name: String,
    attr_x: u32,
    attr_y: u32,
}

#[derive(serde::Serialize)]
struct FeaturesJson {
    table: Vec<FeatureJson>,
    placements: Vec<PlacementJson>,
}

fn features_json(t: &Tnt) -> FeaturesJson {
    let placements: Vec<PlacementJson> = t
        .placements()
        .map(|(f, x, y)| PlacementJson {
            feature_index: f,
            name: t.features[usize::from(f)].name_str(),
            attr_x: x,
            attr_y: y,
        })
        .collect();
    let table = t
        .features
        .iter()
        .enumerate()
        .map(|(i, f)| FeatureJson {
            index: i,
            name: f.name_str(),
            placements: placements
                .iter()
                .filter(|p| usize::from(p.feature_index) == i)
                .count(),
        })
        .collect();
    FeaturesJson { table, placements }
}

/// One lint finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// Rule name.
    pub rule: &'static str,
    /// What was found.
    pub msg: String,
}

/// Runs every rule on `t`; `features` resolves names (None: rule skipped).
pub fn lint_map(t: &Tnt, features: Option<&FeatureIndex>) -> Vec<Finding> {
    let mut out = Vec::new();
    let n = t.tile_count();
    let tx = t.tiles_x().max(1);
    let bad: Vec<usize> = (0..t.tilemap.len())
        .filter(|&i| usize::from(t.tilemap[i]) >= n)
        .collect();
    if let Some(&first) = bad.first() {
        out.push(Finding {
            rule: "bad-tile-index",
            msg: format!(
                "{} cells index tiles past the {n} stored (first at tile x={} y={}: {}); the game draws whatever follows the tile set",
                bad.len(),
                first % tx,
                first / tx,
                t.tilemap[first]
            ),
        });
    }
    if let Some(idx) = features {
        let placed: std::collections::BTreeSet<u16> = t.placements().map(|p| p.0).collect();
        for (i, f) in t.features.iter().enumerate() {
            if idx.get(&f.name_str()).is_none() {
                out.push(Finding {
                    rule: "unresolved-feature",
                    msg: format!(
                        "feature [{i}] {:?} ({}) has no [section] in features/**/*.tdf",
                        f.name_str(),
                        if placed.contains(&(i as u16)) {
                            "placed"
                        } else {
                            "not placed"
                        }
                    ),
                });
            }
        }
    }
    if t.minimap_flags & 1 == 0 {
        out.push(Finding {
            rule: "minimap-flag",
            msg: format!(
                "minimap flags {:#x}: bit 0 is clear, the game ignores the stored minimap",
                t.minimap_flags
            ),
        });
    }
    let (mw, mh) = (t.minimap.width, t.minimap.height);
    if mw < 252 || mh < 252 {
        out.push(Finding {
            rule: "minimap-size",
            msg: format!("minimap is {mw}×{mh}; the radar uses a stored minimap only when both sides are at least 252"),
        });
    }
    let mut seen: HashMap<&[u8], usize> = HashMap::new();
    let mut dups = Vec::new();
    for (i, tile) in t.tiles.chunks_exact(TILE_BYTES).enumerate() {
        if let Some(&first) = seen.get(tile) {
            dups.push((i, first));
        } else {
            seen.insert(tile, i);
        }
    }
    if !dups.is_empty() {
        let list: Vec<String> = dups
            .iter()
            .take(8)
            .map(|(i, f)| format!("{i}={f}"))
            .collect();
        out.push(Finding {
            rule: "duplicate-tiles",
            msg: format!(
                "{} tiles repeat an earlier one ({}{})",
                dups.len(),
                list.join(", "),
                if dups.len() > 8 { ", …" } else { "" }
            ),
        });
    }
    let mut used = vec![false; n];
    for &c in &t.tilemap {
        if let Some(u) = used.get_mut(usize::from(c)) {
            *u = true;
        }
    }
    let unused: Vec<usize> = (0..n).filter(|&i| !used[i]).collect();
    if !unused.is_empty() {
        let list: Vec<String> = unused.iter().take(8).map(|i| i.to_string()).collect();
        out.push(Finding {
            rule: "unused-tiles",
            msg: format!(
                "{} tiles are used by no cell ({}{}); `tafs tnt unpack` + `pack --prune` drops them",
                unused.len(),
                list.join(", "),
                if unused.len() > 8 { ", …" } else { "" }
            ),
        });
    }
    out
}

fn lint(files: &[PathBuf], strict: bool, game_dir: Option<&Path>) -> Result<i32, CliError> {
    let mut warnings = 0usize;
    let mut failed = 0usize;
    let mut indexes: HashMap<PathBuf, FeatureIndex> = HashMap::new();
    for file in files {
        let (t, _) = match load(file) {
            Ok(x) => x,
            Err(e) => {
                println!("{}: error: {e}", file.display());
                failed += 1;
                continue;
            }
        };
        let gd = game_dir
            .map(Path::to_path_buf)
            .or_else(|| find_game_dir(file));
        let idx = match &gd {
            Some(g) => {
                if !indexes.contains_key(g) {
                    let (idx, problems) = FeatureIndex::scan(g);
                    for p in problems {
                        eprintln!("note: {p}");
                    }
                    indexes.insert(g.clone(), idx);
                }
                indexes.get(g)
            }
            None => {
                eprintln!(
                    "note: {}: no game folder with features/ found above it; unresolved-feature skipped (use --game-dir)",
                    file.display()
                );
                None
            }
        };
        for f in lint_map(&t, idx) {
            println!("{}: warning[{}]: {}", file.display(), f.rule, f.msg);
            warnings += 1;
        }
    }
    if failed > 0 {
        return Ok(1);
    }
    Ok(if strict && warnings > 0 { 1 } else { 0 })
}

// ---------------------------------------------------------------------------------------
// Preview

/// Feature definitions of a game folder: lower-case section name → (file, section).
#[derive(Debug, Default)]
pub struct FeatureIndex {
    map: HashMap<String, (PathBuf, tdf::Section)>,
}

/// Largest TDF file read.
const MAX_TDF_BYTES: u64 = 8 << 20;

impl FeatureIndex {
    /// Reads every `features/**/*.tdf` under `game_dir`. Files that do not parse are
    /// reported, not fatal.
    pub fn scan(game_dir: &Path) -> (FeatureIndex, Vec<String>) {
        let mut idx = FeatureIndex::default();
        let mut problems = Vec::new();
        let Some(features) = child_ci(game_dir, "features") else {
            problems.push(format!("{}: no features/ folder", game_dir.display()));
            return (idx, problems);
        };
        let mut files = Vec::new();
        walk(&features, 0, &mut files);
        files.sort();
        for f in files {
            if !f.extension().is_some_and(|e| e.eq_ignore_ascii_case("tdf")) {
                continue;
            }
            let too_big = std::fs::metadata(&f).map_or(true, |m| m.len() > MAX_TDF_BYTES);
            if too_big {
                problems.push(format!("{}: unreadable or over 8 MB, skipped", f.display()));
                continue;
            }
            match std::fs::read(&f) {
                Ok(b) => match tdf::parse(&b) {
                    Ok(secs) => {
                        for s in secs {
                            idx.map
                                .entry(s.name.to_ascii_lowercase())
                                .or_insert_with(|| (f.clone(), s));
                        }
                    }
                    Err(e) => problems.push(format!("{}: {e}", f.display())),
                },
                Err(e) => problems.push(format!("{}: {e}", f.display())),
            }
        }
        (idx, problems)
    }

    /// The definition of feature `name` (case-insensitive).
    pub fn get(&self, name: &str) -> Option<&(PathBuf, tdf::Section)> {
        self.map.get(&name.to_ascii_lowercase())
    }
}

fn walk(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    if depth > 16 || out.len() > 100_000 {
        return;
    }
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        match e.file_type() {
            Ok(t) if t.is_dir() => walk(&p, depth + 1, out),
            Ok(t) if t.is_file() => out.push(p),
            _ => {}
        }
    }
}

/// The entry of `dir` named `name`, any letter case.
fn child_ci(dir: &Path, name: &str) -> Option<PathBuf> {
    let exact = dir.join(name);
    if exact.exists() {
        return Some(exact);
    }
    std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .find(|e| e.file_name().to_string_lossy().eq_ignore_ascii_case(name))
        .map(|e| e.path())
}

/// The nearest folder above `map` holding a `features/` folder.
pub fn find_game_dir(map: &Path) -> Option<PathBuf> {
    let abs = std::fs::canonicalize(map).ok()?;
    abs.ancestors()
        .skip(1)
        .find(|d| child_ci(d, "features").is_some_and(|f| f.is_dir()))
        .map(Path::to_path_buf)
}

/// Start positions from a `.ota`: (player number, x, z) in map pixels.
pub fn start_positions(ota: &[tdf::Section]) -> Vec<(u32, i64, i64)> {
    let schema = tdf::find(ota, "GlobalHeader")
        .and_then(|g| g.child("Schema 0"))
        .or_else(|| tdf::find(ota, "Schema 0"));
    let Some(specials) = schema.and_then(|s| s.child("specials")) else {
        return vec![];
    };
    let mut out = Vec::new();
    for sp in &specials.children {
        let Some(what) = sp.get("specialwhat") else {
            continue;
        };
        let lower = what.to_ascii_lowercase();
        let Some(n) = lower
            .strip_prefix("startpos")
            .and_then(|n| n.trim().parse::<u32>().ok())
        else {
            continue;
        };
        let coord = |k: &str| sp.get(k).and_then(|v| v.trim().parse::<f64>().ok());
        if let (Some(x), Some(z)) = (coord("XPos"), coord("ZPos")) {
            out.push((n, x as i64, z as i64));
        }
    }
    out.sort();
    out
}

/// A flattened sprite frame in palette indices.
pub struct Sprite {
    /// Width.
    pub width: usize,
    /// Height.
    pub height: usize,
    /// The pixel that sits on the anchor point.
    pub origin_x: i64,
    /// The pixel that sits on the anchor point.
    pub origin_y: i64,
    /// Palette indices.
    pub indices: Vec<u8>,
    /// Opaque pixels.
    pub opaque: Vec<bool>,
}

/// Loads the first frame of GAF sequence `seqname` from `anims/<filename>.gaf`.
fn load_feature_sprite(
    game_dir: &Path,
    filename: &str,
    seqname: &str,
    cache: &mut HashMap<PathBuf, Result<Vec<u8>, String>>,
) -> Result<Sprite, String> {
    let anims = child_ci(game_dir, "anims").ok_or("no anims/ folder")?;
    let gaf_path = child_ci(&anims, &format!("{filename}.gaf"))
        .ok_or_else(|| format!("anims/{filename}.gaf not found"))?;
    let bytes = cache
        .entry(gaf_path.clone())
        .or_insert_with(|| std::fs::read(&gaf_path).map_err(|e| e.to_string()))
        .clone()?;
    decode_sprite(&bytes, seqname).map_err(|e| format!("anims/{filename}.gaf: {e}"))
}

/// The first frame of sequence `seqname` (any letter case) of a GAF, flattened.
fn decode_sprite(gaf: &[u8], seqname: &str) -> Result<Sprite, String> {
    let g = crate::formats::gaf::parse(gaf, &Limits::default()).map_err(|e| e.to_string())?;
    let seq = g
        .sequences
        .iter()
        .find(|s| s.name_str().eq_ignore_ascii_case(seqname))
        .ok_or_else(|| format!("no sequence {seqname:?}"))?;
    let first = seq
        .frames
        .first()
        .ok_or_else(|| format!("sequence {seqname:?} has no frames"))?;
    let f = first
        .frame
        .flatten()
        .ok_or_else(|| format!("sequence {seqname:?}: its layers span too many pixels"))?;
    Ok(Sprite {
        width: f.width as usize,
        height: f.height as usize,
        origin_x: i64::from(f.origin_x),
        origin_y: i64::from(f.origin_y),
        indices: f.indices,
        opaque: f.opaque,
    })
}

struct Canvas {
    w: usize,
    h: usize,
    scale: usize,
    rgb: Vec<u8>,
}

impl Canvas {
    /// Sets map pixel (x, y) (full-resolution coordinates) if it falls on a sampled pixel.
    fn put_map(&mut self, x: i64, y: i64, c: [u8; 3]) {
        let s = self.scale as i64;
        if x < 0 || y < 0 || x % s != 0 || y % s != 0 {
            return;
        }
        self.put(x / s, y / s, c);
    }

    /// Sets canvas pixel (x, y).
    fn put(&mut self, x: i64, y: i64, c: [u8; 3]) {
        if x < 0 || y < 0 || x as usize >= self.w || y as usize >= self.h {
            return;
        }
        let o = (y as usize * self.w + x as usize) * 3;
        self.rgb[o..o + 3].copy_from_slice(&c);
    }
}

/// 3×5 digit glyphs, one row per byte (bits 2..0 = left..right).
const DIGITS: [[u8; 5]; 10] = [
    [7, 5, 5, 5, 7],
    [2, 6, 2, 2, 7],
    [7, 1, 7, 4, 7],
    [7, 1, 7, 1, 7],
    [5, 5, 7, 1, 1],
    [7, 4, 7, 1, 7],
    [7, 4, 7, 5, 7],
    [7, 1, 1, 1, 1],
    [7, 5, 7, 5, 7],
    [7, 5, 7, 1, 7],
];

/// A numbered start marker centred on canvas pixel (cx, cy).
fn draw_marker(c: &mut Canvas, cx: i64, cy: i64, n: u32) {
    let text = n.to_string();
    let px = 3i64; // glyph pixel size
    let r = 10 + 2 * text.len() as i64;
    for dy in -r..=r {
        for dx in -r..=r {
            let d2 = dx * dx + dy * dy;
            if d2 <= r * r {
                let col = if d2 >= (r - 2) * (r - 2) {
                    [255, 255, 255]
                } else {
                    [200, 20, 20]
                };
                c.put(cx + dx, cy + dy, col);
            }
        }
    }
    let tw = text.len() as i64 * 4 * px - px;
    let (x0, y0) = (cx - tw / 2, cy - 5 * px / 2);
    for (k, ch) in text.bytes().enumerate() {
        let g = DIGITS[usize::from(ch - b'0')];
        for (row, bits) in g.iter().enumerate() {
            for col in 0..3 {
                if bits & (4 >> col) != 0 {
                    for yy in 0..px {
                        for xx in 0..px {
                            c.put(
                                x0 + k as i64 * 4 * px + col * px + xx,
                                y0 + row as i64 * px + yy,
                                [255, 255, 255],
                            );
                        }
                    }
                }
            }
        }
    }
}

/// Outline of a footprint (features whose sprite could not be drawn).
fn draw_box(c: &mut Canvas, x0: i64, y0: i64, w: i64, h: i64, col: [u8; 3]) {
    let s = c.scale as i64;
    let (x0, y0, x1, y1) = (x0 / s, y0 / s, (x0 + w) / s - 1, (y0 + h) / s - 1);
    for x in x0..=x1 {
        c.put(x, y0, col);
        c.put(x, y1, col);
    }
    for y in y0..=y1 {
        c.put(x0, y, col);
        c.put(x1, y, col);
    }
}

fn preview(
    file: &Path,
    target: &Path,
    game_dir: Option<&Path>,
    max_size: u32,
) -> Result<i32, CliError> {
    let ext = target
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let jpeg = match ext.as_str() {
        "png" => false,
        "jpg" | "jpeg" => true,
        _ => return super::err(format!("{}: the preview is .png or .jpg", target.display())),
    };
    let (t, _) = load(file)?;
    let (pw, ph) = (t.pixel_width(), t.pixel_height());
    if pw == 0 || ph == 0 {
        return super::err(format!("{}: the map has no tiles", file.display()));
    }
    let scale = pw.max(ph).div_ceil(max_size.max(64) as usize).max(1);
    let (w, h) = (pw.div_ceil(scale), ph.div_ceil(scale));
    if jpeg && (w > 65_535 || h > 65_535) {
        return super::err("JPEG sides are limited to 65,535 pixels; use --max-size");
    }
    let pal = Palette::ta();
    let mut canvas = Canvas {
        w,
        h,
        scale,
        rgb: vec![0; w * h * 3],
    };
    let mut row = vec![0u8; pw];
    for cy in 0..h {
        t.render_row(cy * scale, &mut row);
        for cx in 0..w {
            let c = pal.colors[usize::from(row[cx * scale])];
            canvas.put(cx as i64, cy as i64, c);
        }
    }

    // Features.
    let gd = game_dir
        .map(Path::to_path_buf)
        .or_else(|| find_game_dir(file));
    let (index, problems) = match &gd {
        Some(g) => FeatureIndex::scan(g),
        None => (FeatureIndex::default(), vec![]),
    };
    for p in problems {
        eprintln!("note: {p}");
    }
    let mut missing: BTreeMap<String, (String, usize)> = BTreeMap::new();
    let mut sprites: HashMap<u16, Result<Sprite, String>> = HashMap::new();
    let mut gaf_cache = HashMap::new();
    let mut drawn = 0usize;
    let placements: Vec<(u16, u32, u32)> = t.placements().collect();
    for &(f, ax, ay) in &placements {
        let name = t.features[usize::from(f)].name_str();
        let def = index.get(&name);
        let (fx, fz) = def.map_or((1, 1), |(_, s)| {
            let n = |k: &str| {
                s.get(k)
                    .and_then(|v| v.parse::<i64>().ok())
                    .unwrap_or(1)
                    .clamp(1, 64)
            };
            (n("footprintx"), n("footprintz"))
        });
        let (x0, y0) = (i64::from(ax) * 16, i64::from(ay) * 16);
        let (cx, cy) = (x0 + fx * 8, y0 + fz * 8);
        let sprite = sprites.entry(f).or_insert_with(|| {
            let Some(g) = &gd else {
                return Err("no game folder with features/ found (use --game-dir)".into());
            };
            let Some((_, s)) = def else {
                return Err("no [section] in features/**/*.tdf".into());
            };
            match (s.get("filename"), s.get("seqname")) {
                (Some(fname), Some(seq)) if !fname.is_empty() && !seq.is_empty() => {
                    load_feature_sprite(g, fname, seq, &mut gaf_cache)
                }
                _ => match s.get("object") {
                    Some(o) => Err(format!("3D object {o:?} (no GAF sprite)")),
                    None => Err("no filename/seqname keys".into()),
                },
            }
        });
        match sprite {
            Ok(sp) => {
                let (sx, sy) = (cx - sp.origin_x, cy - sp.origin_y);
                for yy in 0..sp.height {
                    for xx in 0..sp.width {
                        let i = yy * sp.width + xx;
                        if sp.opaque[i] {
                            let c = pal.colors[usize::from(sp.indices[i])];
                            canvas.put_map(sx + xx as i64, sy + yy as i64, c);
                        }
                    }
                }
                drawn += 1;
            }
            Err(why) => {
                draw_box(&mut canvas, x0, y0, fx * 16, fz * 16, [255, 0, 255]);
                missing.entry(name).or_insert((why.clone(), 0)).1 += 1;
            }
        }
    }

    // Start positions.
    let mut starts = Vec::new();
    if let Some(ota) = sibling_ota(file) {
        match std::fs::read(&ota)
            .map_err(|e| e.to_string())
            .and_then(|b| tdf::parse(&b).map_err(|e| e.to_string()))
        {
            Ok(secs) => starts = start_positions(&secs),
            Err(e) => eprintln!("note: {}: {e}", ota.display()),
        }
    }
    for &(n, x, z) in &starts {
        draw_marker(&mut canvas, x / scale as i64, z / scale as i64, n);
    }

    // Checked above: a JPEG is at most 65,535 pixels a side.
    let (jw, jh) = (canvas.w.min(65_535) as u16, canvas.h.min(65_535) as u16);
    write_file(target, |w| {
        if jpeg {
            let enc = jpeg_encoder::Encoder::new(w, 90);
            enc.encode(&canvas.rgb, jw, jh, jpeg_encoder::ColorType::Rgb)
                .map_err(|e| CliError::Msg(format!("{}: {e}", target.display())))
        } else {
            let mut enc = png::Encoder::new(w, canvas.w as u32, canvas.h as u32);
            enc.set_color(png::ColorType::Rgb);
            enc.set_depth(png::BitDepth::Eight);
            enc.set_compression(png::Compression::Fast);
            let mut wr = enc.write_header().map_err(png_err)?;
            wr.write_image_data(&canvas.rgb).map_err(png_err)?;
            wr.finish().map_err(png_err)
        }
    })?;
    eprintln!(
        "preview {}: {}×{} (1/{scale} scale), {} placements, {drawn} sprites drawn, {} start positions",
        target.display(),
        canvas.w,
        canvas.h,
        placements.len(),
        starts.len()
    );
    for (name, (why, n)) in &missing {
        eprintln!("  feature {name:?} ×{n} not drawn (box instead): {why}");
    }
    Ok(0)
}

/// `<stem>.ota` next to the map (any letter case).
fn sibling_ota(map: &Path) -> Option<PathBuf> {
    let stem = map.file_stem()?.to_string_lossy().to_string();
    let dir = match map.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    child_ci(&dir, &format!("{stem}.ota")).filter(|p| p.is_file())
}
