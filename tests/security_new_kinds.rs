//! A root daemon's `-o allow_other` mount as a second real user, over the folders of the
//! newer kinds: a unit script (`script.bos`, `script.coba`), a 3DO model (`model.obj`), a
//! font's glyphs and the balance tables (`.tafs-tables/`). The user reads what the game
//! folder lets them read, writes only where the source file lets them write (a root-owned
//! 0644 `.cob` is not rebuilt by them, their own is), and reads nothing the game folder hides
//! from them, tables included.

mod mount_common;

use mount_common::{fuse_available, mount, second_user, Mount, SECOND_USER};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use tafs::formats::bos::{self, Limits, Mode, NoIncludes, Options};

/// Runs `sh -c SCRIPT` as the second user: whether it succeeded, and its output.
fn user_sh(script: &str) -> (bool, String) {
    let o = Command::new("runuser")
        .args(["-u", SECOND_USER, "--", "sh", "-c", script])
        .output()
        .expect("runuser is missing: apt-get install -y util-linux");
    let mut text = String::from_utf8_lossy(&o.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&o.stderr));
    (o.status.success(), text)
}

/// The second user's uid.
fn user_uid() -> u32 {
    let o = Command::new("id")
        .args(["-u", SECOND_USER])
        .output()
        .unwrap();
    String::from_utf8_lossy(&o.stdout).trim().parse().unwrap()
}

/// Writes `bytes` at `game/rel` with `mode`, owned by `uid` (folders made 0755).
fn put(game: &Path, rel: &str, bytes: &[u8], mode: u32, uid: u32) {
    let p = game.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, bytes).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
    std::os::unix::fs::chown(&p, Some(uid), None).unwrap();
}

/// A temporary folder others may enter, its game folder, and the game mounted by root with
/// `-o allow_other` once `fill(game)` made it.
struct Shared {
    _m: Mount,
    _t: tempfile::TempDir,
    game: PathBuf,
    mnt: PathBuf,
}

fn shared(fill: impl FnOnce(&Path)) -> Option<Shared> {
    if !fuse_available() || !second_user() {
        return None;
    }
    let t = tempfile::tempdir().unwrap();
    std::fs::set_permissions(t.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let game = t.path().join("game");
    std::fs::create_dir(&game).unwrap();
    fill(&game);
    let private = game.join("private");
    if private.exists() {
        std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    let mnt = t.path().join("mnt");
    let state = t.path().join("state");
    let m = mount(
        &game,
        &mnt,
        &[
            "-o",
            "allow_other",
            "--ttl",
            "0",
            "--state-dir",
            state.to_str().unwrap(),
        ],
    );
    Some(Shared {
        _m: m,
        _t: t,
        game,
        mnt,
    })
}

/// A COB whose Create sleeps 100 in a loop.
fn cob_fixture() -> Vec<u8> {
    let src = b"piece base;\nCreate()\n{\n\twhile (TRUE)\n\t{\n\t\tsleep 100;\n\t}\n}\n";
    let c = bos::compile(
        "fixture.bos",
        src,
        &NoIncludes,
        &Options::new(Mode::Ta),
        &Limits::default(),
    )
    .unwrap();
    tafs::formats::cob::write(&c).unwrap()
}

#[test]
fn a_unit_script_is_rebuilt_only_by_whoever_may_write_its_cob() {
    let uid = user_uid();
    let cob = cob_fixture();
    let Some(s) = shared(|g| {
        put(g, "scripts/root.cob", &cob, 0o644, 0);
        put(g, "scripts/mine.cob", &cob, 0o644, uid);
        put(g, "private/secret.cob", &cob, 0o644, 0);
    }) else {
        return;
    };
    let m = s.mnt.display();
    // readable as the game folder allows
    let (ok, out) = user_sh(&format!("cat '{m}/scripts/root.cob/script.bos'"));
    assert!(ok && out.contains("sleep 100"), "{out}");
    // root's script: no edit of either text lands, nothing is rebuilt
    for script in [
        format!("sed -i 's/sleep 100/sleep 200/' '{m}/scripts/root.cob/script.bos'"),
        format!("echo >> '{m}/scripts/root.cob/script.coba'"),
        format!("cp '{m}/scripts/mine.cob/script.bos' '{m}/scripts/root.cob/script.bos'"),
    ] {
        let (ok, out) = user_sh(&script);
        assert!(!ok, "{script}: {out}");
        assert!(out.contains("Permission denied"), "{script}: {out}");
    }
    assert_eq!(std::fs::read(s.game.join("scripts/root.cob")).unwrap(), cob);
    // their own: the edit compiles into it, and it stays theirs
    let (ok, out) = user_sh(&format!(
        "sed -i 's/sleep 100/sleep 200/' '{m}/scripts/mine.cob/script.bos'"
    ));
    assert!(ok, "{out}");
    let mine = s.game.join("scripts/mine.cob");
    assert_ne!(
        std::fs::read(&mine).unwrap(),
        cob,
        "their script was not rebuilt"
    );
    assert_eq!(std::fs::metadata(&mine).unwrap().uid(), uid);
    // hidden by the game folder: hidden through the mount
    let (ok, out) = user_sh(&format!("cat '{m}/private/secret.cob/script.bos'"));
    assert!(!ok && out.contains("Permission denied"), "{out}");
}

#[test]
fn a_model_is_read_as_its_3do_allows_and_written_only_by_its_owner() {
    let uid = user_uid();
    let model = tafs::sample::demo_model_3do();
    let Some(s) = shared(|g| {
        put(g, "objects3d/root.3do", &model, 0o644, 0);
        put(g, "objects3d/mine.3do", &model, 0o644, uid);
        put(g, "private/secret.3do", &model, 0o644, 0);
    }) else {
        return;
    };
    let m = s.mnt.display();
    let (ok, out) = user_sh(&format!("head -c 100 '{m}/objects3d/root.3do/model.obj'"));
    assert!(ok, "{out}");
    let (ok, out) = user_sh(&format!("echo '# x' >> '{m}/objects3d/root.3do/model.obj'"));
    assert!(!ok && out.contains("Permission denied"), "{out}");
    assert_eq!(
        std::fs::read(s.game.join("objects3d/root.3do")).unwrap(),
        model
    );
    // their own model takes the write (an OBJ comment builds the same model)
    let (ok, out) = user_sh(&format!("echo '# x' >> '{m}/objects3d/mine.3do/model.obj'"));
    assert!(ok, "{out}");
    let (ok, out) = user_sh(&format!("cat '{m}/private/secret.3do/model.obj'"));
    assert!(!ok && out.contains("Permission denied"), "{out}");
}

#[test]
fn a_fonts_glyphs_are_read_as_its_fnt_allows_and_written_only_by_its_owner() {
    let uid = user_uid();
    let mut f = tafs::formats::fnt::Fnt::new(7);
    for c in 0x41u8..0x44 {
        f.glyphs[usize::from(c)] = Some(tafs::formats::fnt::Glyph {
            width: 3,
            pixels: (0..21).map(|i| (i + usize::from(c)) % 3 == 0).collect(),
            tail: 0,
        });
        f.layout.push(tafs::formats::fnt::Piece::Record(vec![c]));
    }
    let font = tafs::formats::fnt::write(&f).unwrap();
    let Some(s) = shared(|g| {
        put(g, "fonts/root.fnt", &font, 0o644, 0);
        put(g, "fonts/mine.fnt", &font, 0o644, uid);
        put(g, "private/secret.fnt", &font, 0o644, 0);
    }) else {
        return;
    };
    let m = s.mnt.display();
    let (ok, out) = user_sh(&format!("cat '{m}/fonts/root.fnt/glyphs.csv'"));
    assert!(ok, "{out}");
    let (ok, out) = user_sh(&format!(
        "cp '{m}/fonts/root.fnt/U+0042.png' '{m}/fonts/root.fnt/U+0041.png'"
    ));
    assert!(!ok && out.contains("Permission denied"), "{out}");
    assert_eq!(std::fs::read(s.game.join("fonts/root.fnt")).unwrap(), font);
    // their own font: glyph A drawn as glyph B lands
    let (ok, out) = user_sh(&format!(
        "cp '{m}/fonts/mine.fnt/U+0042.png' '{m}/fonts/mine.fnt/U+0041.png'"
    ));
    assert!(ok, "{out}");
    assert_ne!(std::fs::read(s.game.join("fonts/mine.fnt")).unwrap(), font);
    let (ok, out) = user_sh(&format!("cat '{m}/private/secret.fnt/glyphs.csv'"));
    assert!(!ok && out.contains("Permission denied"), "{out}");
}

const PUBLIC_FBI: &[u8] =
    b"[UNITINFO]\r\n{\r\n\tUnitName=PUBLIC;\r\n\tBuildCostEnergy=100;\r\n}\r\n";
const SECRET_FBI: &[u8] =
    b"[UNITINFO]\r\n{\r\n\tUnitName=SECRET;\r\n\tBuildCostEnergy=123;\r\n}\r\n";

/// The tables of a shared mount hold only files every user may read: a root-only FBI
/// beside a public one (0600), or inside a root-only folder, gives no row to anyone, so the
/// second user never reads its values; the tables are root's, and the user cannot write them.
#[test]
fn the_tables_of_a_shared_mount_show_no_value_of_a_hidden_file() {
    let Some(s) = shared(|g| {
        put(g, "units/PUBLIC.FBI", PUBLIC_FBI, 0o644, 0);
        put(g, "units/SECRET.FBI", SECRET_FBI, 0o600, 0);
        put(g, "private/units/HIDDEN.FBI", SECRET_FBI, 0o644, 0);
    }) else {
        return;
    };
    let m = s.mnt.display();
    let (ok, out) = user_sh(&format!("cat '{m}/units/SECRET.FBI'"));
    assert!(!ok, "the user read the root-only FBI: {out}");
    let (ok, table) = user_sh(&format!("cat '{m}/.tafs-tables/units.csv'"));
    assert!(ok, "{table}");
    assert!(table.contains("units/PUBLIC.FBI"), "{table}");
    assert!(
        !table.contains("SECRET") && !table.contains("123"),
        "the table shows a hidden file's values: {table}"
    );
    // root reads the same table (one table for every user)
    let root_table = std::fs::read_to_string(s.mnt.join(".tafs-tables/units.csv")).unwrap();
    assert_eq!(root_table, table);
    let (ok, out) = user_sh(&format!(
        "python3 -c \"open('{m}/.tafs-tables/units.csv', 'r+').write('x')\""
    ));
    assert!(!ok && out.contains("Permission denied"), "{out}");
    assert_eq!(
        std::fs::read(s.game.join("units/PUBLIC.FBI")).unwrap(),
        PUBLIC_FBI
    );
}
