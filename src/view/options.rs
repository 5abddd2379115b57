//! The options a view is generated with, and the one place they are derived for a file:
//! [`options_for`], called by the CLI (`dump`, `unpack`, `build`, …) and the mount alike
//! (tenet 1: an asset directory is exactly the dump).

use super::model3d::Textures;
use super::AssetKind;
use crate::formats::o3do::ModelLimits;
use crate::formats::palette::Palette;
use crate::game;
use std::path::Path;
use std::sync::Arc;

/// What a caller decides instead of the game folder.
#[derive(Debug, Clone, Default)]
pub struct Overrides<'a> {
    /// The palette (and how metadata.json names its source) instead of the one resolved
    /// from the game folder (`--palette`).
    pub palette: Option<(Palette, String)>,
    /// The same-named `.pcx` beside a GAF when it is no real file (an archive member): its
    /// name and bytes. It is the first link of the palette chain, used when it reads.
    pub beside_pcx: Option<(&'a str, &'a [u8])>,
    /// Image format of GAF frame files.
    pub frame_format: FrameFormat,
}

/// The options of the view of the asset file at `path` (relative to `game_dir` when given,
/// as the mount passes it; else a path as the CLI got it). The game folder whose palettes
/// apply is the nearest folder above the file holding `palettes/`
/// ([`game::game_dir_of`]); `asset_path` is the file's path relative to it. GAFs get the
/// palette of the asset-name chain ([`game::palette::resolve`]), maps the main palette
/// ([`game::palette::main_palette`]); `overrides` come first. 3DO models get the main palette
/// and the textures of the nearest folder above them holding `textures/`
/// ([`game::textures::folder_of`]); PCX pictures and palettes carry their own colours.
pub fn options_for(path: &Path, game_dir: Option<&Path>, overrides: &Overrides) -> ViewOptions {
    options_in(&game::Plain, path, game_dir, overrides)
}

/// [`options_for`], the game folder read through `gfs` (the mount's is confined to its game
/// folder).
pub fn options_in(
    gfs: &dyn game::GameFs,
    path: &Path,
    game_dir: Option<&Path>,
    overrides: &Overrides,
) -> ViewOptions {
    let file = match game_dir {
        Some(g) => g.join(path),
        None => path.to_path_buf(),
    };
    let (dir, rel) = game::game_dir_of_in(gfs, &file);
    let beside = overrides
        .beside_pcx
        .filter(|_| AssetKind::from_name(&rel) == Some(AssetKind::Gaf))
        .and_then(|(name, pcx)| {
            let pal = Palette::from_file_bytes(name, pcx).ok()?;
            let source = match rel.rsplit_once('/') {
                Some((d, _)) => format!("{d}/{name}"),
                None => name.to_string(),
            };
            Some((pal, source))
        });
    let kind = AssetKind::from_name(&rel);
    let (palette, palette_source) = match (overrides.palette.clone(), beside) {
        (Some(p), _) | (None, Some(p)) => p,
        (None, None) if matches!(kind, Some(AssetKind::Tnt | AssetKind::Model3d)) => {
            game::palette::main_palette_in(gfs, &dir)
        }
        // pictures and palettes carry their own colours
        // a lookup table is drawn in the palette of its name beside it (`PALETTE.ALP` →
        // `PALETTE.PAL`, a TA: Kingdoms `aramon.alp` → `aramon.pcx`), else as a sprite
        (None, None) if kind == Some(AssetKind::PalTable) => beside_palette(gfs, &file)
            .map(|(p, name)| {
                let source = match rel.rsplit_once('/') {
                    Some((d, _)) => format!("{d}/{name}"),
                    None => name,
                };
                (p, source)
            })
            .unwrap_or_else(|| game::palette::resolve_in(gfs, &dir, &rel)),
        (None, None) if matches!(kind, Some(AssetKind::Pcx | AssetKind::Pal)) => {
            (Palette::ta(), game::palette::BUILTIN.to_string())
        }
        (None, None) => game::palette::resolve_in(gfs, &dir, &rel),
    };
    let limits = crate::formats::Limits::default();
    let textures = (kind == Some(AssetKind::Model3d))
        .then(|| game::textures::folder_of_in(gfs, &file))
        .flatten()
        .map(|d| super::model3d::game_textures_in(gfs, &d, &limits));
    let script_headers = (kind == Some(AssetKind::Cob)).then(|| {
        let script_dir = file.parent().unwrap_or(Path::new(""));
        Arc::new(game::scripts::HeaderSet::read(
            gfs,
            script_dir,
            Some(game_dir.unwrap_or(&dir)),
        ))
    });
    ViewOptions {
        palette,
        palette_source,
        asset_path: Some(rel),
        frame_format: overrides.frame_format,
        textures,
        script_headers,
        ..ViewOptions::default()
    }
}

/// The `.pal` (else `.pcx`) of the same name beside `file` that reads as a palette, and its
/// file name.
fn beside_palette(gfs: &dyn game::GameFs, file: &Path) -> Option<(Palette, String)> {
    let dir = file.parent()?;
    let stem = file.file_stem()?.to_str()?;
    ["pal", "pcx"].iter().find_map(|ext| {
        let p = game::find_ci_in(gfs, dir, &format!("{stem}.{ext}"))?;
        let name = p.file_name()?.to_string_lossy().to_string();
        let data = gfs.read(&p, 16 << 20)?;
        Some((Palette::from_file_bytes(&name, &data).ok()?, name))
    })
}

/// Options that decide the bytes of a view. The CLI and the mount build them with the same
/// [`options_for`], so the mount serves exactly what `dump`/`unpack` write.
#[derive(Debug, Clone)]
pub struct ViewOptions {
    /// Palette the PNGs are written with.
    pub palette: Palette,
    /// Where the palette came from, recorded in metadata.json.
    pub palette_source: String,
    /// Decoding budgets.
    pub limits: crate::formats::Limits,
    /// The asset's path relative to the game folder, `/`-separated, if known (decides e.g.
    /// that textures/*.gaf stay raw).
    pub asset_path: Option<String>,
    /// Image format of GAF frame files (`<n>.png` or `<n>.gif`); the mount always uses PNG.
    pub frame_format: FrameFormat,
    /// The textures 3DO models are drawn with (the game folder's `textures/*.gaf`, see
    /// [`super::model3d::game_textures`]); `None` = none found, untextured faces are grey.
    pub textures: Option<Arc<Textures>>,
    /// Decoding budgets of 3DO models.
    pub model_limits: ModelLimits,
    /// The headers a COB's `script.bos` may include beside the built-in ones: those of the
    /// script's folder, then of the game's `scripts/` ([`game::scripts::HeaderSet`]).
    pub script_headers: Option<Arc<game::scripts::HeaderSet>>,
}

/// Image format of the frame files of a GAF dump.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FrameFormat {
    /// Indexed PNG.
    #[default]
    Png,
    /// GIF (one frame, the palette, the transparent slot as the GIF's transparent index).
    Gif,
}

impl FrameFormat {
    /// File extension.
    pub fn ext(self) -> &'static str {
        match self {
            FrameFormat::Png => "png",
            FrameFormat::Gif => "gif",
        }
    }
}

impl Default for ViewOptions {
    fn default() -> Self {
        ViewOptions {
            palette: Palette::ta(),
            palette_source: "built-in TA palette".to_string(),
            limits: Default::default(),
            asset_path: None,
            frame_format: FrameFormat::Png,
            textures: None,
            model_limits: ModelLimits::default(),
            script_headers: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::game::palette::tests::pcx_with;

    fn pal_with(color0: [u8; 3]) -> Vec<u8> {
        let mut v = vec![0u8; 1024];
        v[..3].copy_from_slice(&color0);
        v
    }

    /// What decides the bytes of a view, comparable.
    fn key(o: &ViewOptions) -> ([u8; 3], String, Option<String>, FrameFormat) {
        (
            o.palette.colors[0],
            o.palette_source.clone(),
            o.asset_path.clone(),
            o.frame_format,
        )
    }

    /// A game folder with the given sub-folders.
    fn game_with(dirs: &[&str]) -> tempfile::TempDir {
        let t = tempfile::tempdir().unwrap();
        for d in dirs {
            std::fs::create_dir_all(t.path().join(d)).unwrap();
        }
        t
    }

    #[test]
    fn mount_and_cli_derive_the_same_options() {
        let t = game_with(&["anims", "maps", "palettes"]);
        let g = t.path();
        std::fs::write(g.join("palettes/PALETTE.PAL"), pal_with([1, 0, 0])).unwrap();
        std::fs::write(g.join("anims/x.pcx"), pcx_with([2, 0, 0])).unwrap();
        // a .pcx beside a map is its loading picture, not its palette
        std::fs::write(g.join("maps/m.pcx"), pcx_with([3, 0, 0])).unwrap();
        let none = Overrides::default();
        for (rel, color, source) in [
            ("anims/x.gaf", [2, 0, 0], "anims/x.pcx"),
            ("anims/y.gaf", [1, 0, 0], "palettes/PALETTE.PAL"),
            ("maps/m.tnt", [1, 0, 0], "palettes/PALETTE.PAL"),
        ] {
            let mount = options_for(Path::new(rel), Some(g), &none);
            let cli = options_for(&g.join(rel), None, &none);
            assert_eq!(key(&mount), key(&cli), "{rel}");
            assert_eq!(
                key(&mount),
                (
                    color,
                    source.to_string(),
                    Some(rel.to_string()),
                    FrameFormat::Png
                ),
                "{rel}"
            );
        }
    }

    #[test]
    fn overrides_come_first() {
        let t = game_with(&["anims", "palettes"]);
        let g = t.path();
        std::fs::write(g.join("anims/x.pcx"), pcx_with([2, 0, 0])).unwrap();
        let pcx = pcx_with([5, 0, 0]);
        // a member's .pcx beside it (an archive) is the first link of the chain
        let beside = Overrides {
            beside_pcx: Some(("X.PCX", &pcx)),
            ..Default::default()
        };
        let o = options_for(Path::new("anims/x.gaf"), Some(g), &beside);
        assert_eq!(
            (o.palette.colors[0], o.palette_source.as_str()),
            ([5, 0, 0], "anims/X.PCX")
        );
        // one that does not read is skipped; a map never takes one
        let bad = Overrides {
            beside_pcx: Some(("x.pcx", b"short")),
            ..Default::default()
        };
        let o = options_for(Path::new("anims/x.gaf"), Some(g), &bad);
        assert_eq!(o.palette_source, "anims/x.pcx");
        let o = options_for(Path::new("anims/x.tnt"), Some(g), &beside);
        assert_eq!(o.palette_source, game::palette::BUILTIN);
        // --palette beats everything; the frame format is the caller's
        let given = Overrides {
            palette: Some((
                Palette::from_pal(&pal_with([7, 0, 0])).unwrap(),
                "p.pal".into(),
            )),
            beside_pcx: Some(("X.PCX", &pcx)),
            frame_format: FrameFormat::Gif,
        };
        let o = options_for(Path::new("anims/x.gaf"), Some(g), &given);
        assert_eq!(
            key(&o),
            (
                [7, 0, 0],
                "p.pal".into(),
                Some("anims/x.gaf".into()),
                FrameFormat::Gif
            )
        );
    }
}
