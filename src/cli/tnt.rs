//! `tafs tnt …`: describe, minimap, heightmap, image, buildmap, voidmap, ascii, features,
//! lint, optimize, unpack, pack, preview.
//! Arguments and output only: the map rules are [`crate::view::tnt::lint`], the renderer
//! [`crate::view::tnt::preview`], the game folder's files [`crate::game`].

use super::{read_file, write_bytes, write_file, CliError};
use crate::formats::palette::Palette;
use crate::formats::tnt::{self, Tnt, FEATURE_VOID, FIRST_SENTINEL};
use crate::formats::Limits;
use crate::game::features::{find_game_dir, FeatureIndex};
use crate::view::tnt::{
    lint::lint_map, lint::quality as quality_rules, pack_with_report, preview, tools,
    write_map_png, PackOptions, TntView,
};
use crate::view::{self, DirFileSet};

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
    /// Write where units can be built, one pixel per 16×16 cell: void black, a feature red,
    /// under water blue, a cliff edge yellow (over 32 height units to a neighbour), else green.
    Buildmap {
        /// The map.
        file: PathBuf,
        /// Output PNG.
        #[arg(short = 't', long = "target")]
        target: PathBuf,
        /// Sea level instead of the header's (0: no water).
        #[arg(long)]
        sealevel: Option<u32>,
    },
    /// Write the void cells (feature word 0xFFFC) as opaque red on transparent, one pixel per
    /// 16×16 cell.
    Voidmap {
        /// The map.
        file: PathBuf,
        /// Output PNG.
        #[arg(short = 't', long = "target")]
        target: PathBuf,
    },
    /// Print a small ASCII sketch of the map (heights, water, voids).
    Ascii {
        /// The map.
        file: PathBuf,
        /// Characters per line.
        #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=1024))]
        cols: u32,
    },
    /// Merge byte-identical tiles (the map draws the same pixels with fewer tiles).
    Optimize {
        /// The map.
        file: PathBuf,
        /// Output map (written atomically; may be the input).
        #[arg(short = 't', long = "target")]
        target: PathBuf,
    },
    /// Print the feature table and every placement as JSON.
    Features {
        /// The map.
        file: PathBuf,
    },
    /// Check maps: bad-tile-index, unresolved-feature, minimap-flag, minimap-size,
    /// duplicate-tiles, unused-tiles; and kbot's quality rules: otaFields, startsInBounds,
    /// schemaSlots, metalProximity, voidIslands, heightDiscontinuities.
    Lint {
        /// The maps.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Exit with status 1 when any warning fires.
        #[arg(long)]
        strict: bool,
        /// Output: one line per warning, or SARIF 2.1.0 JSON (for CI code scanning).
        #[arg(long, value_enum, default_value = "text")]
        format: LintFormat,
        /// Skip the quality rules.
        #[arg(long)]
        no_quality: bool,
        /// The .ota to check against (default: the one beside each map).
        #[arg(long)]
        ota: Option<PathBuf>,
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
        /// The .ota schema whose start positions are drawn (0-based).
        #[arg(long, default_value_t = 0)]
        schema: usize,
    },
    /// Write the crate's sample map (16×16 tiles: grass, lake, rocks, paths, placed features)
    /// to try the other commands on.
    Sample {
        /// Output map.
        #[arg(short = 't', long = "target")]
        target: PathBuf,
    },
}

/// Output form of `tafs tnt lint`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum LintFormat {
    /// `FILE: warning[RULE]: message` lines.
    Text,
    /// SARIF 2.1.0 JSON on standard output.
    Sarif,
}

/// Runs a `tafs tnt` subcommand.
pub fn run(cmd: TntCmd) -> Result<i32, CliError> {
    match cmd {
        TntCmd::Describe { file } => {
            let (t, len) = load(&file)?;
            outp!("{}", describe(&t, len));
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
        TntCmd::Buildmap {
            file,
            target,
            sealevel,
        } => {
            let (t, _) = load(&file)?;
            let rgb = tools::buildmap(&t, sealevel.unwrap_or(t.sea_level));
            write_rgb(&target, t.width, t.height, &rgb, png::ColorType::Rgb, &file)
        }
        TntCmd::Voidmap { file, target } => {
            let (t, _) = load(&file)?;
            let rgba = tools::voidmap(&t);
            write_rgb(
                &target,
                t.width,
                t.height,
                &rgba,
                png::ColorType::Rgba,
                &file,
            )
        }
        TntCmd::Ascii { file, cols } => {
            let (t, _) = load(&file)?;
            use std::io::Write as _;
            let text = tools::ascii(&t, cols as usize, t.sea_level);
            std::io::stdout().lock().write_all(text.as_bytes())?;
            Ok(0)
        }
        TntCmd::Optimize { file, target } => {
            let (mut t, _) = load(&file)?;
            let r = tools::optimize(&mut t)
                .map_err(|e| CliError::Msg(format!("{}: {e}", file.display())))?;
            let bytes =
                tnt::write(&t).map_err(|e| CliError::Msg(format!("{}: {e}", file.display())))?;
            write_bytes(&target, &bytes)?;
            eprintln!(
                "{}: {} tiles, {} after merging duplicates",
                target.display(),
                r.before,
                r.after
            );
            Ok(0)
        }
        TntCmd::Features { file } => {
            let (t, _) = load(&file)?;
            let s = serde_json::to_string_pretty(&features_json(&t))
                .map_err(|e| CliError::Msg(e.to_string()))?;
            outln!("{s}");
            Ok(0)
        }
        TntCmd::Lint {
            files,
            strict,
            format,
            no_quality,
            ota,
            game_dir,
        } => lint(
            &files,
            strict,
            game_dir.as_deref(),
            format,
            !no_quality,
            ota.as_deref(),
        ),
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
            let v = TntView::with_form(
                &data,
                &view::options_for(&file, None, &Default::default()),
                clean,
            )
            .map_err(|e| CliError::Msg(format!("{}: {e}", file.display())))?;
            super::progress::write_tree(&v, &target)?;
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
            schema,
        } => preview(&file, &target, game_dir.as_deref(), max_size, schema),
    }
}

/// Writes an 8-bit RGB or RGBA PNG of `w × h` cells.
fn write_rgb(
    target: &Path,
    w: u32,
    h: u32,
    px: &[u8],
    color: png::ColorType,
    file: &Path,
) -> Result<i32, CliError> {
    if px.is_empty() {
        return super::err(format!("{}: the map has no cells", file.display()));
    }
    write_file(target, |out| {
        let mut enc = png::Encoder::new(out, w, h);
        enc.set_color(color);
        enc.set_depth(png::BitDepth::Eight);
        let mut wr = enc.write_header().map_err(png_err)?;
        wr.write_image_data(px).map_err(png_err)?;
        wr.finish().map_err(png_err)
    })?;
    Ok(0)
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

fn lint(
    files: &[PathBuf],
    strict: bool,
    game_dir: Option<&Path>,
    format: LintFormat,
    quality: bool,
    ota_path: Option<&Path>,
) -> Result<i32, CliError> {
    let mut warnings = 0usize;
    let mut failed = 0usize;
    let mut sarif: Vec<(String, &'static str, String, &'static str)> = Vec::new();
    let mut indexes: HashMap<PathBuf, FeatureIndex> = HashMap::new();
    for file in files {
        let (t, _) = match load(file) {
            Ok(x) => x,
            Err(e) => {
                match format {
                    LintFormat::Text => outln!("{}: error: {e}", file.display()),
                    LintFormat::Sarif => sarif.push((
                        file.display().to_string(),
                        "unreadable-map",
                        e.to_string(),
                        "error",
                    )),
                }
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
        let mut findings = lint_map(&t, idx);
        if quality {
            let ota_file = ota_path
                .map(Path::to_path_buf)
                .or_else(|| crate::game::ota::beside(file));
            let secs = match &ota_file {
                Some(p) => match std::fs::read(p)
                    .map_err(|e| e.to_string())
                    .and_then(|b| crate::formats::tdf::parse(&b).map_err(|e| e.to_string()))
                {
                    Ok(s) => Some(s),
                    Err(e) => {
                        eprintln!("note: {}: {e}; the .ota rules skipped", p.display());
                        None
                    }
                },
                None => {
                    eprintln!(
                        "note: {}: no .ota beside the map; the .ota rules skipped (use --ota)",
                        file.display()
                    );
                    None
                }
            };
            findings.extend(quality_rules(&t, secs.as_deref(), idx));
        }
        for f in findings {
            match format {
                LintFormat::Text => {
                    outln!("{}: warning[{}]: {}", file.display(), f.rule, f.msg)
                }
                LintFormat::Sarif => {
                    sarif.push((file.display().to_string(), f.rule, f.msg, "warning"))
                }
            }
            warnings += 1;
        }
    }
    if format == LintFormat::Sarif {
        use std::io::Write as _;
        writeln!(std::io::stdout().lock(), "{}", sarif_log(&sarif))?;
    }
    if failed > 0 {
        return Ok(1);
    }
    Ok(if strict && warnings > 0 { 1 } else { 0 })
}

fn preview(
    file: &Path,
    target: &Path,
    game_dir: Option<&Path>,
    max_size: u32,
    schema: usize,
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
    let (_, w, h) = preview::size(pw, ph, max_size);
    if jpeg && (w > 65_535 || h > 65_535) {
        return super::err("JPEG sides are limited to 65,535 pixels; use --max-size");
    }
    let p = preview::render(&t, file, game_dir, max_size, schema);
    for n in &p.notes {
        eprintln!("note: {n}");
    }
    // Checked above: a JPEG is at most 65,535 pixels a side.
    let (jw, jh) = (p.width.min(65_535) as u16, p.height.min(65_535) as u16);
    write_file(target, |w| {
        if jpeg {
            let enc = jpeg_encoder::Encoder::new(w, 90);
            enc.encode(&p.rgb, jw, jh, jpeg_encoder::ColorType::Rgb)
                .map_err(|e| CliError::Msg(format!("{}: {e}", target.display())))
        } else {
            let mut enc = png::Encoder::new(w, p.width as u32, p.height as u32);
            enc.set_color(png::ColorType::Rgb);
            enc.set_depth(png::BitDepth::Eight);
            crate::view::image::fast_png(&mut enc);
            let mut wr = enc.write_header().map_err(png_err)?;
            wr.write_image_data(&p.rgb).map_err(png_err)?;
            wr.finish().map_err(png_err)
        }
    })?;
    eprintln!(
        "preview {}: {}×{} (1/{} scale), {} placements, {} sprites drawn, {} start positions",
        target.display(),
        p.width,
        p.height,
        p.scale,
        p.placements,
        p.drawn,
        p.starts
    );
    for (name, (why, n)) in &p.missing {
        eprintln!("  feature {name:?} ×{n} not drawn (box instead): {why}");
    }
    Ok(0)
}

/// What each lint rule checks, for SARIF's rule list.
const RULES: &[(&str, &str)] = &[
    ("bad-tile-index", "a cell indexes a tile past the tile set"),
    (
        "unresolved-feature",
        "a feature name no features/**/*.tdf defines",
    ),
    (
        "minimap-flag",
        "minimap flag bit 0 clear: the stored minimap is ignored",
    ),
    ("minimap-size", "a stored minimap under 252 pixels a side"),
    (
        "duplicate-tiles",
        "byte-identical tiles (tafs tnt optimize merges them)",
    ),
    ("unused-tiles", "tiles no cell uses"),
    ("otaFields", "lobby fields of the .ota blank or missing"),
    (
        "startsInBounds",
        "a start position outside the map or on a void cell",
    ),
    (
        "schemaSlots",
        "a schema with fewer start positions than numplayers asks",
    ),
    (
        "metalProximity",
        "a start position with no metal feature within 24 tiles",
    ),
    ("voidIslands", "passable cells no start reaches"),
    (
        "heightDiscontinuities",
        "neighbouring cells more than 32 height units apart",
    ),
    ("unreadable-map", "the map does not decode"),
];

/// A SARIF 2.1.0 log of `(file, rule, message, level)` results.
fn sarif_log(results: &[(String, &'static str, String, &'static str)]) -> String {
    let rules: Vec<serde_json::Value> = RULES
        .iter()
        .map(|(id, text)| serde_json::json!({"id": id, "shortDescription": {"text": text}}))
        .collect();
    let results: Vec<serde_json::Value> = results
        .iter()
        .map(|(file, rule, msg, level)| {
            serde_json::json!({
                "ruleId": rule,
                "ruleIndex": RULES.iter().position(|(id, _)| id == rule),
                "level": level,
                "message": {"text": msg},
                "locations": [{"physicalLocation": {"artifactLocation": {"uri": file}}}],
            })
        })
        .collect();
    let log = serde_json::json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "tafs",
                "version": env!("CARGO_PKG_VERSION"),
                "rules": rules,
            }},
            "results": results,
        }],
    });
    serde_json::to_string_pretty(&log).unwrap_or_default()
}
