//! The embedded demo: a small game folder the crate writes itself, for `tafs mount --demo`
//! (and the fuzzing seeds of `examples/write_demo.rs`).

use crate::formats::gaf;
use crate::formats::palette::Palette;
use std::io;
use std::path::Path;

/// The feature definitions of the demo (one `.tdf`, as in `features/all worlds/`).
const FEATURES_TDF: &str = "[demo_rock]\n\t{\n\tworld=all worlds;\n\tdescription=Rock;\n\tfilename=demo;\n\tseqname=turret;\n\tfootprintx=2;\n\tfootprintz=2;\n\theight=20;\n\tblocking=1;\n\treclaimable=1;\n\tmetal=15;\n\t}\n[demo_tree]\n\t{\n\tworld=all worlds;\n\tdescription=Tree;\n\tfilename=demo;\n\tseqname=pulse;\n\tfootprintx=1;\n\tfootprintz=1;\n\theight=40;\n\tblocking=1;\n\tflamable=1;\n\tenergy=250;\n\t}\n";

/// The map's .ota (mission/skirmish schema with start positions).
const DEMO_OTA: &str = "[GlobalHeader]\n\t{\n\tmissionname=tafs demo;\n\tmissiondescription=A tiny map written by tafs;\n\tplanet=green planet;\n\ttidalstrength=20;\n\tsolarstrength=20;\n\tnumplayers=2;\n\tsize=1 x 1;\n\t[Schema 0]\n\t\t{\n\t\tType=Network 1;\n\t\tsurfacemetal=3;\n\t\tmohometal=30;\n\t\t[specials]\n\t\t\t{\n\t\t\t[special0]\n\t\t\t\t{\n\t\t\t\tspecialwhat=StartPos1;\n\t\t\t\tXPos=120;\n\t\t\t\tZPos=420;\n\t\t\t\t}\n\t\t\t[special1]\n\t\t\t\t{\n\t\t\t\tspecialwhat=StartPos2;\n\t\t\t\tXPos=440;\n\t\t\t\tZPos=200;\n\t\t\t\t}\n\t\t\t}\n\t\t}\n\t}\n";

/// Writes the demo game folder into `dir`: `palettes/PALETTE.PAL`, `anims/demo.gaf`
/// (RLE, raw and composite frames), `textures/demo.gaf`, `features/all worlds/demo.tdf`
/// the map `maps/demo.tnt` (features placed) with its `maps/demo.ota` (start positions), a
/// build picture `unitpics/demo.pcx`, a TA: Kingdoms palette carrier `palettes/kingdoms.pcx`
/// and a model `objects3d/demo.3do` textured from `textures/demo.gaf`.
pub fn write_demo(dir: &Path) -> io::Result<()> {
    let put = |rel: &str, bytes: &[u8]| -> io::Result<()> {
        let p = dir.join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(p, bytes)
    };
    put("palettes/PALETTE.PAL", &Palette::ta().to_pal())?;
    let anim = gaf::write(&crate::sample::animated_gaf()).map_err(io::Error::other)?;
    put("anims/demo.gaf", &anim)?;
    let tex = gaf::write(&crate::sample::texture_gaf()).map_err(io::Error::other)?;
    put("textures/demo.gaf", &tex)?;
    put("features/all worlds/demo.tdf", FEATURES_TDF.as_bytes())?;
    put("maps/demo.ota", DEMO_OTA.as_bytes())?;
    let map = crate::formats::tnt::write(&crate::sample::demo_map()).map_err(io::Error::other)?;
    put("maps/demo.tnt", &map)?;
    put("unitpics/demo.pcx", &crate::sample::unit_picture_pcx())?;
    put(
        "palettes/kingdoms.pcx",
        &crate::sample::palette_carrier_pcx(),
    )?;
    put("objects3d/demo.3do", &crate::sample::demo_model_3do())?;
    let taf = gaf::write(&crate::sample::truecolor_taf()).map_err(io::Error::other)?;
    put("anims/glow_4444.taf", &taf)?;
    Ok(())
}

/// Arguments of `tafs demo`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Example:\n  tafs demo ~/ta && tafs mount -d ~/ta ~/ta-mnt && ls ~/ta-mnt/anims/demo.gaf"
)]
pub struct DemoArgs {
    /// The folder to write the demo game folder into (created when missing; files of the
    /// demo's names in it are replaced).
    pub dir: std::path::PathBuf,
}

/// Runs `tafs demo`: writes the demo game folder into DIR.
pub fn run(a: DemoArgs) -> Result<i32, super::CliError> {
    write_demo(&a.dir).map_err(|e| super::CliError::Msg(format!("{}: {e}", a.dir.display())))?;
    Ok(0)
}

/// What to try in a demo mount at `mnt`.
pub fn hints(mnt: &Path) -> String {
    let m = mnt.display();
    format!(
        "Try:\n  ls -R {m}\n  cat {m}/anims/demo.gaf/pulse/frames.csv\n  open {m}/anims/demo.gaf/pulse/animated.png (an animated PNG) or 0.png in an image viewer\n  cp -r {m}/anims/demo.gaf /tmp/demo-dump   # the same files `tafs gaf dump` writes\n  open {m}/maps/demo.tnt/map.png, cat {m}/maps/demo.tnt/features.csv\n  open {m}/unitpics/demo.pcx/image.png, {m}/objects3d/demo.3do/preview.png, {m}/anims/glow_4444.taf/glow/0.png (RGBA)\n  load {m}/palettes/PALETTE.PAL/palette.gpl (or {m}/anims/demo.gaf/palette.gpl) in GIMP, Krita or Aseprite\n  tafs umount {m}   (or Ctrl-C)\n"
    )
}
