//! PCX pictures, palettes and 3DO models through a real mount: they appear as directories of
//! exactly the files `tafs pcx|pal|3do dump` write; a PCX's image.png saved by Pillow (RGBA)
//! and a palette.csv edited by `sed -i` rebuild the binary (checked by Pillow and by bytes);
//! an unedited save rebuilds identical bytes; a 3DO directory refuses writes to its renderings
//! (preview.png, textures/) with EROFS (its write-back: tests/model3d_mount.rs).

mod common;
mod mount_common;

use common::{py, tafs_ok_bytes as tafs};
use mount_common::{fuse_available, sh, Mount};
use std::path::{Path, PathBuf};
use std::process::Command;

struct Env {
    dir: tempfile::TempDir,
    game: PathBuf,
    mnt: PathBuf,
}

/// A writable game folder with a build picture, the main palette, a 1×1 palette carrier, a
/// texture GAF, a model and a sprite GAF (all self-made), plus a corpus build picture when
/// present.
fn env() -> Env {
    let dir = tempfile::tempdir().unwrap();
    let game = dir.path().join("game");
    tafs::cli::demo::write_demo(&game).unwrap();
    let corpus = Path::new("../shared/corpus/game/unitpics/ArmRaz.pcx");
    if corpus.exists() {
        std::fs::copy(corpus, game.join("unitpics/ArmRaz.pcx")).unwrap();
        sh(&format!(
            "chmod 644 {}",
            game.join("unitpics/ArmRaz.pcx").display()
        ));
    } else {
        println!("corpus absent: {} (self-made PCX only)", corpus.display());
    }
    Env {
        mnt: dir.path().join("mnt"),
        game,
        dir,
    }
}

fn mount(e: &Env) -> Mount {
    let state = e.dir.path().join("state");
    mount_common::mount(
        &e.game,
        &e.mnt,
        &["--ttl", "0", "--state-dir", state.to_str().unwrap()],
    )
}

/// Files under `dir`, relative, sorted.
fn tree(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = walk(dir)
        .into_iter()
        .map(|p| p.strip_prefix(dir).unwrap().to_string_lossy().to_string())
        .collect();
    v.sort();
    v
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else if !e.file_name().to_string_lossy().starts_with('.') {
            out.push(p);
        }
    }
    out
}

/// The mount's directory `rel` holds exactly the files `tafs <cmd> dump` writes, byte for byte.
fn same_as_dump(e: &Env, cmd: &str, rel: &str) -> Vec<String> {
    let out = e.dir.path().join(format!("dump-{}", rel.replace('/', "_")));
    tafs(&[
        cmd,
        "dump",
        e.game.join(rel).to_str().unwrap(),
        "-t",
        out.to_str().unwrap(),
    ]);
    let names = tree(&out);
    assert_eq!(tree(&e.mnt.join(rel)), names, "{rel}");
    for n in &names {
        assert_eq!(
            std::fs::read(e.mnt.join(rel).join(n)).unwrap(),
            std::fs::read(out.join(n)).unwrap(),
            "{rel}/{n}"
        );
    }
    names
}

/// Waits until the binary's bytes differ from `before` (write-back commits on close).
fn wait_change(bin: &Path, before: &[u8]) -> Vec<u8> {
    for _ in 0..100 {
        let now = std::fs::read(bin).unwrap();
        if now != before {
            return now;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("{}: not rebuilt", bin.display());
}

#[test]
fn pictures_palettes_and_models_are_directories_of_the_dump() {
    if !fuse_available() {
        return;
    }
    let e = env();
    let _m = mount(&e);
    let pcx = same_as_dump(&e, "pcx", "unitpics/demo.pcx");
    assert_eq!(pcx, ["image.png", "metadata.json"]);
    if e.game.join("unitpics/ArmRaz.pcx").exists() {
        same_as_dump(&e, "pcx", "unitpics/ArmRaz.pcx");
    }
    let pal = same_as_dump(&e, "pal", "palettes/PALETTE.PAL");
    assert_eq!(pal, ["palette.csv", "palette.gpl", "swatch.png"]);
    // the 1×1 carrier is a palette by content, through `pcx dump` and `pal dump` alike
    assert_eq!(same_as_dump(&e, "pcx", "palettes/kingdoms.pcx"), pal);
    assert_eq!(same_as_dump(&e, "pal", "palettes/kingdoms.pcx"), pal);
    let model = same_as_dump(&e, "3do", "objects3d/demo.3do");
    assert_eq!(
        model,
        [
            "model.mtl",
            "model.obj",
            "pieces.csv",
            "preview.png",
            "textures/checker.png",
            "textures/stripes.png"
        ]
    );
    // a GAF shows the GIMP palette it is drawn with, as `tafs gaf palette` prints it
    let gpl = std::fs::read(e.mnt.join("anims/demo.gaf/palette.gpl")).unwrap();
    let o = tafs(&[
        "gaf",
        "palette",
        e.game.join("anims/demo.gaf").to_str().unwrap(),
    ]);
    assert_eq!(gpl, o);
    assert!(gpl.starts_with(b"GIMP Palette\nName: palettes/PALETTE.PAL\n"));
    // Pillow reads what the mount shows
    let got = py(&format!(
        "from PIL import Image\nfor p in ['{m}/unitpics/demo.pcx/image.png', '{m}/objects3d/demo.3do/preview.png', '{m}/palettes/kingdoms.pcx/swatch.png']:\n  im = Image.open(p); print(im.size, im.mode)",
        m = e.mnt.display()
    ));
    assert_eq!(got, "(64, 64) P\n(512, 512) RGBA\n(256, 256) RGB");
    // the model's preview covers pixels (alpha) and leaves the corners empty
    let cover = py(&format!(
        "from PIL import Image\nim = Image.open('{}').getchannel('A')\nprint(sum(1 for a in im.getdata() if a), im.getpixel((0, 0)))",
        e.mnt.join("objects3d/demo.3do/preview.png").display()
    ));
    let (covered, corner) = cover.split_once(' ').unwrap();
    let covered: usize = covered.parse().unwrap();
    assert!(covered > 32000 && covered < 512 * 512, "{covered}");
    assert_eq!(corner, "0");
}

#[test]
fn pcx_and_palette_edits_rebuild_the_binary() {
    if !fuse_available() {
        return;
    }
    let e = env();
    let _m = mount(&e);
    let mut pictures = vec!["demo.pcx"];
    if e.game.join("unitpics/ArmRaz.pcx").exists() {
        pictures.push("ArmRaz.pcx");
    }
    for name in pictures {
        let bin = e.game.join("unitpics").join(name);
        let dir = e.mnt.join("unitpics").join(name);
        let before = std::fs::read(&bin).unwrap();
        // an unedited save (same bytes written again) rebuilds the identical file
        let png = std::fs::read(dir.join("image.png")).unwrap();
        std::fs::write(dir.join("image.png"), &png).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(200));
        assert_eq!(std::fs::read(&bin).unwrap(), before, "{name}: unedited");
        // Pillow saves an RGBA copy with a yellow block (a colour of the TA palette)
        let edited = e.dir.path().join(format!("{name}-edited.png"));
        py(&format!(
            "from PIL import Image\nim = Image.open('{src}').convert('RGBA')\nfor y in range(4, 12):\n  for x in range(6, 20): im.putpixel((x, y), (255, 255, 0, 255))\nim.save('{dst}')\nim.save('{src}')",
            src = dir.join("image.png").display(),
            dst = edited.display()
        ));
        let after = wait_change(&bin, &before);
        assert_eq!(&after[..4], &before[..4], "{name}: header kept");
        // Pillow decodes the rebuilt PCX to exactly the edited picture (no drift elsewhere)
        let same = py(&format!(
            "from PIL import Image\na = Image.open('{}').convert('RGB')\nb = Image.open('{}').convert('RGB')\nprint(a.size == b.size and list(a.getdata()) == list(b.getdata()))",
            bin.display(),
            edited.display()
        ));
        assert_eq!(same, "True", "{name}");
        // and the mount now shows the rebuilt binary's view
        assert_eq!(
            tree(&dir),
            ["image.png", "metadata.json"],
            "{name}: view after the commit"
        );
    }

    // palette.csv of a .pal, edited in place by sed
    let pal = e.game.join("palettes/PALETTE.PAL");
    let before = std::fs::read(&pal).unwrap();
    let line = format!("1,{},{},{},{}", before[4], before[5], before[6], before[7]);
    let csv = e.mnt.join("palettes/PALETTE.PAL/palette.csv");
    assert!(std::fs::read_to_string(&csv)
        .unwrap()
        .contains(&format!("\n{line}\n")));
    sh(&format!("sed -i 's/^{line}$/1,1,2,3,0/' {}", csv.display()));
    let after = wait_change(&pal, &before);
    assert_eq!(&after[4..8], &[1, 2, 3, 0]);
    assert_eq!(&after[..4], &before[..4]);
    assert_eq!(&after[8..], &before[8..]);

    // palette.csv of a TA: Kingdoms carrier: Pillow reads the new palette, the pixel is kept
    let carrier = e.game.join("palettes/kingdoms.pcx");
    let before = std::fs::read(&carrier).unwrap();
    let csv = e.mnt.join("palettes/kingdoms.pcx/palette.csv");
    sh(&format!(
        "sed -i 's/^2,34,34,34$/2,200,100,50/' {}",
        csv.display()
    ));
    let after = wait_change(&carrier, &before);
    let got = py(&format!(
        "from PIL import Image\nim = Image.open('{}')\np = im.getpalette()\nprint(im.size, p[6:9], p[3:6], im.getpixel((0, 0)))",
        carrier.display()
    ));
    assert_eq!(got, "(1, 1) [200, 100, 50] [17, 17, 17] 0");
    assert_eq!(after.len(), before.len());
}

#[test]
fn model_directories_refuse_writes_to_their_renderings() {
    if !fuse_available() {
        return;
    }
    let e = env();
    // an archive holding the model too
    let src = e.dir.path().join("pack");
    std::fs::create_dir_all(src.join("objects3d")).unwrap();
    std::fs::copy(
        e.game.join("objects3d/demo.3do"),
        src.join("objects3d/demo.3do"),
    )
    .unwrap();
    tafs(&[
        "hpi",
        "pack",
        src.to_str().unwrap(),
        "-t",
        e.game.join("pack.ufo").to_str().unwrap(),
    ]);
    let _m = mount(&e);
    let member = e.mnt.join("pack.ufo/objects3d/demo.3do");
    assert!(member.join("pieces.csv").is_file());
    for cmd in [
        format!("echo x > {}/preview.png", member.display()),
        format!("rm {}/preview.png", member.display()),
    ] {
        let o = Command::new("sh").arg("-c").arg(&cmd).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("Read-only file system"), "{cmd}: {err}");
    }
    // a new model member is a member file like any other: the archive takes it
    let archive = e.game.join("pack.ufo");
    let before = std::fs::read(&archive).unwrap();
    sh(&format!(
        "cp {} {}",
        e.game.join("objects3d/demo.3do").display(),
        e.mnt.join("pack.ufo/objects3d/copy.3do").display()
    ));
    wait_change(&archive, &before);
    assert!(e
        .mnt
        .join("pack.ufo/objects3d/copy.3do/model.obj")
        .is_file());
    let bin = e.game.join("objects3d/demo.3do");
    let before = std::fs::read(&bin).unwrap();
    let dir = e.mnt.join("objects3d/demo.3do");
    for cmd in [
        format!("echo x > {}/preview.png", dir.display()),
        format!("truncate -s 0 {}/preview.png", dir.display()),
        format!("rm {}/preview.png", dir.display()),
        format!("mv {0}/model.mtl {0}/preview.png", dir.display()),
        format!("cp {0}/model.obj {0}/textures/copy.obj", dir.display()),
    ] {
        let o = Command::new("sh").arg("-c").arg(&cmd).output().unwrap();
        assert!(!o.status.success(), "{cmd}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("Read-only file system"), "{cmd}: {err}");
    }
    assert_eq!(std::fs::read(&bin).unwrap(), before);
    assert!(dir.join("preview.png").exists());
    // a PCX beside it is written back as usual
    let pcx = e.game.join("unitpics/demo.pcx");
    let before = std::fs::read(&pcx).unwrap();
    sh(&format!(
        "python3 -c \"from PIL import Image; im = Image.open('{0}').convert('RGBA'); im.putpixel((30, 30), (255, 255, 0, 255)); im.save('{0}')\"",
        e.mnt.join("unitpics/demo.pcx/image.png").display()
    ));
    wait_change(&pcx, &before);
}
