//! The root daemon against a hostile local user: a second real user (`useradd`, `runuser`)
//! plants folders, symlinks and pid files where the daemon keeps its run files, and palettes
//! above or linked into the game folder.

mod mount_common;

use mount_common::{as_second_user, fuse_available, is_mounted, second_user, UnmountGuard};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const TAFS: &str = env!("CARGO_BIN_EXE_tafs");
const EVIL: &str = mount_common::SECOND_USER;

/// Runs `ARGS` as the second user, asserting success.
fn as_evil(args: &[&str]) {
    assert!(as_second_user(args), "runuser {args:?} failed");
}

fn tafs_env(args: &[&str], xdg: &Path) -> std::process::Output {
    Command::new(TAFS)
        .args(args)
        .env("XDG_RUNTIME_DIR", xdg)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// A temp folder others may enter (the second user must reach the run folder's parent), with
/// a game folder and a mountpoint in it.
fn setup() -> (tempfile::TempDir, PathBuf, PathBuf, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    std::fs::set_permissions(t.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let game = t.path().join("game");
    std::fs::create_dir(&game).unwrap();
    std::fs::write(game.join("readme.txt"), b"hello").unwrap();
    let mnt = t.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let xdg = t.path().join("xdg");
    std::fs::create_dir(&xdg).unwrap();
    // like /tmp: anyone may create entries
    std::fs::set_permissions(&xdg, std::fs::Permissions::from_mode(0o1777)).unwrap();
    (t, game, mnt, xdg)
}

fn mount(game: &Path, mnt: &Path, xdg: &Path) -> UnmountGuard {
    let guard = UnmountGuard(mnt.to_path_buf());
    let o = tafs_env(
        &["mount", "-d", game.to_str().unwrap(), mnt.to_str().unwrap()],
        xdg,
    );
    assert!(
        o.status.success(),
        "mount: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(is_mounted(mnt));
    guard
}

fn umount(mnt: &Path, xdg: &Path) {
    let o = tafs_env(&["umount", mnt.to_str().unwrap()], xdg);
    assert!(
        o.status.success(),
        "umount: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    for _ in 0..250 {
        if !is_mounted(mnt) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    panic!("{} still mounted after tafs umount", mnt.display());
}

#[test]
fn run_folder_made_by_another_user_is_not_used() {
    if !fuse_available() || !second_user() {
        return;
    }
    let (_t, game, mnt, xdg) = setup();
    // the second user makes the run folder first, open to everyone
    let planted = xdg.join("tafs");
    as_evil(&["mkdir", "-m", "0777", planted.to_str().unwrap()]);
    let _g = mount(&game, &mnt, &xdg);
    let inside: Vec<_> = std::fs::read_dir(&planted).unwrap().collect();
    assert!(
        inside.is_empty(),
        "the daemon wrote into a folder another user owns: {inside:?}"
    );
    // umount still works (directly, without a run file)
    umount(&mnt, &xdg);
}

#[test]
fn symlinked_run_folder_is_never_followed() {
    if !fuse_available() || !second_user() {
        return;
    }
    let (t, game, mnt, xdg) = setup();
    let victim = t.path().join("victim");
    std::fs::create_dir(&victim).unwrap();
    std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o700)).unwrap();
    as_evil(&[
        "ln",
        "-s",
        victim.to_str().unwrap(),
        xdg.join("tafs").to_str().unwrap(),
    ]);
    let _g = mount(&game, &mnt, &xdg);
    let inside: Vec<_> = std::fs::read_dir(&victim).unwrap().collect();
    assert!(
        inside.is_empty(),
        "the daemon wrote through a planted symlink: {inside:?}"
    );
    umount(&mnt, &xdg);
}

/// A runtime folder of the caller's own (0700) under `dir`.
fn private_xdg(dir: &Path) -> PathBuf {
    let xdg = dir.join("own-xdg");
    std::fs::create_dir(&xdg).unwrap();
    std::fs::set_permissions(&xdg, std::fs::Permissions::from_mode(0o700)).unwrap();
    xdg
}

/// Field 22 of /proc/PID/stat.
fn start_time(pid: u32) -> String {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let rest = &s[s.rfind(')').unwrap() + 1..];
    rest.split_whitespace().nth(19).unwrap().to_string()
}

#[test]
fn umount_never_signals_a_process_that_does_not_serve_the_mount() {
    if !fuse_available() {
        return;
    }
    let (t, game, mnt, _) = setup();
    let xdg = private_xdg(t.path());
    let _g = mount(&game, &mnt, &xdg);
    let files: Vec<PathBuf> = std::fs::read_dir(xdg.join("tafs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "one run file for the mount: {files:?}");
    let text = std::fs::read_to_string(&files[0]).unwrap();
    assert!(text.ends_with(&format!("{}\n", mnt.display())), "{text}");
    // replace the recorded pid by an unrelated process of the same user, start time included
    let mut bystander = Command::new("sleep").arg("60").spawn().unwrap();
    let pid = bystander.id();
    std::fs::write(
        &files[0],
        format!("{pid}\n{}\n{}\n", start_time(pid), mnt.display()),
    )
    .unwrap();
    umount(&mnt, &xdg);
    std::thread::sleep(std::time::Duration::from_millis(100));
    let alive = bystander.try_wait().unwrap().is_none();
    let _ = bystander.kill();
    let _ = bystander.wait();
    assert!(
        alive,
        "tafs umount signalled a process that does not serve the mount"
    );
}

#[test]
fn umount_stops_the_daemon_through_its_run_file() {
    if !fuse_available() {
        return;
    }
    let (t, game, mnt, _) = setup();
    let xdg = private_xdg(t.path());
    let _g = mount(&game, &mnt, &xdg);
    let run = xdg.join("tafs");
    let mode = std::fs::symlink_metadata(&run)
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700, "the run folder is private");
    let file = std::fs::read_dir(&run)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let pid: u32 = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(Path::new(&format!("/proc/{pid}")).exists());
    umount(&mnt, &xdg);
    // the daemon itself ended (asked through its run file) and removed the file
    for _ in 0..250 {
        let st = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        if st.is_empty() || st.contains("zombie") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let st = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    assert!(
        st.is_empty() || st.contains("zombie"),
        "daemon {pid} still runs"
    );
    assert!(!file.exists(), "run file left behind");
}

// ---------------------------------------------------------------------------------------
// Pass-through and merged view against a user who can write in the game folder.

/// Runs `sh -c SCRIPT` as the second user; its output and whether it succeeded.
fn evil_sh(script: &str) -> (bool, String) {
    let o = Command::new("runuser")
        .args(["-u", EVIL, "--", "sh", "-c", script])
        .output()
        .expect("runuser is missing: apt-get install -y util-linux");
    let mut text = String::from_utf8_lossy(&o.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&o.stderr));
    (o.status.success(), text)
}

/// The second user's uid.
fn evil_uid() -> u32 {
    let o = Command::new("id").args(["-u", EVIL]).output().unwrap();
    String::from_utf8_lossy(&o.stdout).trim().parse().unwrap()
}

/// Mounts `game` at `mnt` as root with `-o allow_other` and `extra` options.
fn mount_shared(game: &Path, mnt: &Path, xdg: &Path, extra: &[&str]) -> UnmountGuard {
    let guard = UnmountGuard(mnt.to_path_buf());
    let state = game.parent().unwrap().join("state");
    let mut args = vec![
        "mount",
        "-d",
        "-o",
        "allow_other",
        "--state-dir",
        state.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    args.extend([game.to_str().unwrap(), mnt.to_str().unwrap()]);
    let o = tafs_env(&args, xdg);
    assert!(
        o.status.success(),
        "mount: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(is_mounted(mnt));
    guard
}

/// A folder only root may enter, holding a 0600 secret; outside the game folder.
fn rootonly(base: &Path) -> PathBuf {
    let r = base.join("rootonly");
    std::fs::create_dir(&r).unwrap();
    std::fs::write(r.join("secret"), b"root's secret\n").unwrap();
    std::fs::set_permissions(r.join("secret"), std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::set_permissions(&r, std::fs::Permissions::from_mode(0o700)).unwrap();
    r
}

#[test]
fn a_folder_swapped_for_a_symlink_leads_nowhere_outside_the_game_folder() {
    if !fuse_available() || !second_user() {
        return;
    }
    let (t, game, mnt, xdg) = setup();
    let root = rootonly(t.path());
    let shared = game.join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
    std::fs::set_permissions(&game, std::fs::Permissions::from_mode(0o777)).unwrap();
    let _m = mount_shared(&game, &mnt, &xdg, &[]);
    let m = mnt.display();
    // the folder is looked up through the mount, then swapped under it for a symlink to
    // root's folder; within the TTL the kernel still holds the folder's inode
    let script = format!(
        "ls '{m}/shared' >/dev/null && mv '{g}/shared' '{g}/old' && \
         ln -s '{r}' '{g}/shared' && \
         (cat '{m}/shared/secret'; echo x > '{m}/shared/planted'; mkdir '{m}/shared/d'; \
          ls '{m}/shared'; true)",
        g = game.display(),
        r = root.display()
    );
    let (_, out) = evil_sh(&script);
    assert!(
        !out.contains("root's secret"),
        "read through the mount: {out}"
    );
    assert!(!root.join("planted").exists(), "created outside GAME_DIR");
    assert!(!root.join("d").exists(), "mkdir outside GAME_DIR");
    // root through the mount: the symlink is shown as a symlink, never followed by the daemon
    let meta = std::fs::symlink_metadata(mnt.join("shared")).unwrap();
    assert!(meta.file_type().is_symlink());
    assert_eq!(
        std::fs::read_link(mnt.join("shared")).unwrap(),
        root.as_path()
    );
    umount(&mnt, &xdg);
}

#[test]
fn chmod_by_a_mapped_user_gives_no_root_owned_setuid_binary() {
    if !fuse_available() || !second_user() {
        return;
    }
    let (_t, game, mnt, xdg) = setup();
    std::fs::create_dir(game.join("bin")).unwrap();
    std::fs::copy("/bin/id", game.join("bin/tool")).unwrap(); // root's file
    let uid = evil_uid().to_string();
    let _m = mount_shared(&game, &mnt, &xdg, &["--uid", &uid]);
    let tool = mnt.join("bin/tool");
    // shown as the second user's: the kernel lets it chmod; the daemon drops the set-id bits
    let (ok, out) = evil_sh(&format!("chmod 6755 '{}'", tool.display()));
    assert!(ok, "chmod: {out}");
    let real = std::fs::metadata(game.join("bin/tool")).unwrap();
    use std::os::unix::fs::MetadataExt;
    assert_eq!(real.uid(), 0);
    assert_eq!(
        real.mode() & 0o7777,
        0o755,
        "set-id bits kept on root's file"
    );
    // a file the second user really owns keeps them (its own set-id file is no escalation)
    let (ok, out) = evil_sh(&format!(
        "cp /bin/id '{m}/bin/mine' && chmod 4755 '{m}/bin/mine'",
        m = mnt.display()
    ));
    assert!(ok, "{out}");
    let mine = std::fs::metadata(game.join("bin/mine")).unwrap();
    assert_eq!(mine.uid(), evil_uid());
    assert_eq!(mine.mode() & 0o7777, 0o4755);
    // giving root's file away to someone else is refused
    let (ok, _) = evil_sh(&format!("chown 0 '{}'", tool.display()));
    assert!(!ok || std::fs::metadata(game.join("bin/tool")).unwrap().uid() == 0);
    umount(&mnt, &xdg);
}

#[test]
fn the_merged_view_never_reads_a_planted_symlink_for_anyone() {
    if !fuse_available() || !second_user() {
        return;
    }
    let (t, game, mnt, xdg) = setup();
    let root = rootonly(t.path());
    std::fs::set_permissions(&game, std::fs::Permissions::from_mode(0o777)).unwrap();
    let (ok, out) = evil_sh(&format!(
        "ln -s '{r}/secret' '{g}/w.txt' && ln -s /etc/shadow '{g}/s.txt' && \
         echo mine > '{g}/own.txt' && ln -s own.txt '{g}/own-link.txt'",
        r = root.display(),
        g = game.display()
    ));
    assert!(ok, "{out}");
    // root's own link to a file elsewhere is followed (archives are often linked in)
    std::fs::write(t.path().join("elsewhere.txt"), b"linked by root\n").unwrap();
    std::os::unix::fs::symlink(t.path().join("elsewhere.txt"), game.join("root-link.txt")).unwrap();
    let uid = evil_uid().to_string();
    let _m = mount_shared(&game, &mnt, &xdg, &["--merged", "--uid", &uid]);
    let m = mnt.display();
    let (_, out) = evil_sh(&format!("cat '{m}/w.txt' '{m}/s.txt'; ls '{m}'; true"));
    assert!(!out.contains("root's secret"), "{out}");
    assert!(!out.contains("root:"), "{out}");
    assert!(std::fs::read(mnt.join("w.txt")).is_err());
    assert!(std::fs::read(mnt.join("s.txt")).is_err());
    // links that lead to their owner's own files, and root's links, still work
    assert_eq!(std::fs::read(mnt.join("own-link.txt")).unwrap(), b"mine\n");
    assert_eq!(
        std::fs::read(mnt.join("root-link.txt")).unwrap(),
        b"linked by root\n"
    );
    umount(&mnt, &xdg);
}

#[test]
fn creations_get_the_callers_umask_and_owner() {
    if !fuse_available() || !second_user() {
        return;
    }
    let (_t, game, mnt, xdg) = setup();
    std::fs::set_permissions(&game, std::fs::Permissions::from_mode(0o777)).unwrap();
    let _m = mount_shared(&game, &mnt, &xdg, &[]);
    let (ok, out) = evil_sh(&format!(
        "cd '{}' && umask 002 && touch f && mkdir d && mkfifo p && umask 077 && touch q",
        mnt.display()
    ));
    assert!(ok, "{out}");
    use std::os::unix::fs::MetadataExt;
    for (name, mode) in [("f", 0o664), ("d", 0o775), ("p", 0o664), ("q", 0o600)] {
        let m = std::fs::symlink_metadata(game.join(name)).unwrap();
        assert_eq!(m.mode() & 0o7777, mode, "{name}");
        assert_eq!(m.uid(), evil_uid(), "{name}");
    }
    umount(&mnt, &xdg);
}

/// The palette source a map's view was drawn with, from its `metadata.json`.
fn palette_of(metadata: &[u8]) -> String {
    let m: serde_json::Value = serde_json::from_slice(metadata).unwrap();
    m["palette"].as_str().unwrap().to_string()
}

#[test]
fn palettes_planted_above_or_linked_into_the_game_folder_are_never_read() {
    if !fuse_available() || !second_user() {
        return;
    }
    let (t, game, mnt, xdg) = setup();
    // the game folder sits in a folder anyone may write (like /tmp), holding no palettes of
    // its own; its maps folder is the second user's too
    let open = t.path().join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let game_in = open.join("game");
    std::fs::rename(&game, &game_in).unwrap();
    std::fs::set_permissions(&game_in, std::fs::Permissions::from_mode(0o777)).unwrap();
    std::fs::create_dir(game_in.join("maps")).unwrap();
    let map = tafs::formats::tnt::write(&tafs::sample::demo_map()).unwrap();
    std::fs::write(game_in.join("maps/m.tnt"), &map).unwrap();
    let mut evil = tafs::formats::palette::Palette::ta();
    evil.colors[1] = [9, 9, 9];
    let pal = t.path().join("evil.pal");
    std::fs::write(&pal, evil.to_pal()).unwrap();
    std::fs::set_permissions(&pal, std::fs::Permissions::from_mode(0o644)).unwrap();
    let (ok, out) = evil_sh(&format!(
        "mkdir '{o}/palettes' && cp '{p}' '{o}/palettes/PALETTE.PAL'",
        o = open.display(),
        p = pal.display()
    ));
    assert!(ok, "{out}");
    // the CLI, run on the file, finds the folder above (it follows paths as given)
    let unpacked = t.path().join("unpacked");
    let o = Command::new(TAFS)
        .args(["tnt", "unpack"])
        .arg(game_in.join("maps/m.tnt"))
        .arg("-t")
        .arg(&unpacked)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let cli = std::fs::read(unpacked.join("metadata.json")).unwrap();
    assert_eq!(palette_of(&cli), "palettes/PALETTE.PAL");
    // what the root daemon draws the map with, as `metadata.json` of a new mount says
    let shown = || {
        let _m = mount_shared(&game_in, &mnt, &xdg, &[]);
        let m = std::fs::read(mnt.join("maps/m.tnt/metadata.json")).unwrap();
        umount(&mnt, &xdg);
        palette_of(&m)
    };
    let planted = |script: String| {
        let (ok, out) = evil_sh(&script);
        assert!(ok, "{out}");
    };
    let (o, g, p) = (open.display(), game_in.display(), pal.display());
    // it does not look above its game folder
    assert_eq!(shown(), "built-in TA palette");
    // nor through a palettes folder, or a palette file, that is a symlink
    planted(format!("ln -s '{o}/palettes' '{g}/palettes'"));
    assert_eq!(shown(), "built-in TA palette");
    planted(format!(
        "rm '{g}/palettes' && mkdir '{g}/palettes' && \
         ln -s '{o}/palettes/PALETTE.PAL' '{g}/palettes/PALETTE.PAL'"
    ));
    assert_eq!(shown(), "built-in TA palette");
    // a palette file of the game folder itself is used, as by the CLI
    planted(format!(
        "rm '{g}/palettes/PALETTE.PAL' && cp '{p}' '{g}/palettes/PALETTE.PAL'"
    ));
    assert_eq!(shown(), "palettes/PALETTE.PAL");
}

/// A private (0600) binary's and archive's directories stay private once something is
/// staged in them (their staged copy takes the mode they show, not the daemon's umask), and
/// the members of a private archive written with their own modes (`rsync -a` of 0644 files)
/// stay out of reach: the archive's folder never shows more than the archive allows.
#[test]
fn private_assets_stay_private_once_written_into() {
    if !fuse_available() || !second_user() {
        return;
    }
    use std::os::unix::fs::MetadataExt;
    let (_t, game, mnt, xdg) = setup();
    let gaf = tafs::formats::gaf::write(&tafs::sample::animated_gaf()).unwrap();
    std::fs::write(game.join("private.gaf"), &gaf).unwrap();
    let tree = vec![tafs::formats::hpi::Node::dir(
        b"gamedata".to_vec(),
        vec![tafs::formats::hpi::Node::file(
            b"side.tdf".to_vec(),
            b"[X]{}".to_vec(),
        )],
    )];
    let hpi = tafs::formats::hpi::write(&tree, &tafs::formats::hpi::WriteOptions::v1()).unwrap();
    std::fs::write(game.join("private.hpi"), hpi).unwrap();
    for n in ["private.gaf", "private.hpi"] {
        std::fs::set_permissions(game.join(n), std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let _m = mount_shared(&game, &mnt, &xdg, &[]);
    // the owner (root) writes: a plain file beside the view, a member of the archive with
    // its own mode (committed, it leaves the staging area), a temporary file that stays
    let src = game.parent().unwrap().join("src");
    std::fs::create_dir_all(src.join("scripts")).unwrap();
    std::fs::write(src.join("scripts/a.txt"), b"secret script\n").unwrap();
    std::fs::set_permissions(
        src.join("scripts/a.txt"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    std::fs::set_permissions(src.join("scripts"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let root_sh = |script: &str| {
        let o = Command::new("sh").args(["-c", script]).output().unwrap();
        assert!(
            o.status.success(),
            "{script}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    };
    let m = mnt.display();
    root_sh(&format!(
        "umask 022 && echo notes > '{m}/private.gaf/notes.txt' && \
         echo tmp > '{m}/private.hpi/gamedata/.x.tdf.tmp' && \
         rsync -a '{}' '{m}/private.hpi/'",
        src.join("scripts").display()
    ));
    for (dir, mode) in [("private.gaf", 0o700), ("private.hpi", 0o700)] {
        let got = std::fs::metadata(mnt.join(dir)).unwrap().mode() & 0o777;
        assert_eq!(got, mode, "{dir} shows {got:o}");
    }
    // the member keeps the mode it was written with below the archive's folder
    let a = std::fs::metadata(mnt.join("private.hpi/scripts/a.txt")).unwrap();
    assert_eq!(a.mode() & 0o777, 0o644);
    for path in [
        "private.gaf/notes.txt",
        "private.hpi/gamedata/.x.tdf.tmp",
        "private.hpi/scripts/a.txt",
    ] {
        let (ok, out) = evil_sh(&format!("cat '{m}/{path}'"));
        assert!(!ok, "the second user read {path}: {out}");
    }
    let (ok, out) = evil_sh(&format!("ls '{m}/private.gaf' '{m}/private.hpi'"));
    assert!(!ok, "the second user listed a private asset: {out}");
    umount(&mnt, &xdg);
}

/// GAME with `private/` (root, 0700) holding a 0644 `notes.txt`, a public `docs/` holding
/// `a.txt`, and `z.hpi` with `PRIVATE/pub.txt` and `DOCS/b.txt`.
fn game_with_a_private_folder(game: &Path) {
    use tafs::formats::hpi::{self, Node};
    let private = game.join("private");
    std::fs::create_dir(&private).unwrap();
    std::fs::write(private.join("notes.txt"), b"root's notes\n").unwrap();
    std::fs::set_permissions(
        private.join("notes.txt"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::create_dir(game.join("docs")).unwrap();
    std::fs::write(game.join("docs/a.txt"), b"public a\n").unwrap();
    let tree = vec![
        Node::dir(
            b"PRIVATE".to_vec(),
            vec![Node::file(b"pub.txt".to_vec(), b"pub\n".to_vec())],
        ),
        Node::dir(
            b"DOCS".to_vec(),
            vec![Node::file(b"b.txt".to_vec(), b"public b\n".to_vec())],
        ),
    ];
    let bytes = hpi::write(&tree, &hpi::WriteOptions::v1()).unwrap();
    std::fs::write(game.join("z.hpi"), bytes).unwrap();
    std::fs::set_permissions(game.join("z.hpi"), std::fs::Permissions::from_mode(0o644)).unwrap();
}

#[test]
fn a_merged_folder_never_opens_a_private_loose_folder() {
    if !fuse_available() || !second_user() {
        return;
    }
    let (_t, game, mnt, xdg) = setup();
    game_with_a_private_folder(&game);
    // the archive's folder wins the name: it alone would be r-x for everyone
    let _m = mount_shared(&game, &mnt, &xdg, &["--merged", "--priority", "hpi,loose"]);
    let m = mnt.display();
    for script in [
        format!("cat '{m}/PRIVATE/notes.txt'"),
        format!("cat '{m}/PRIVATE/pub.txt'"),
        format!("ls '{m}/PRIVATE'"),
    ] {
        let (ok, out) = evil_sh(&script);
        assert!(!ok, "the second user got through: {script}: {out}");
        assert!(!out.contains("root's notes"), "{out}");
    }
    // root still reads it; public folders merged the same way stay open to everyone
    assert_eq!(
        std::fs::read(mnt.join("PRIVATE/notes.txt")).unwrap(),
        b"root's notes\n"
    );
    let (ok, out) = evil_sh(&format!("cat '{m}/DOCS/a.txt' '{m}/DOCS/b.txt'"));
    assert!(ok, "{out}");
    assert_eq!(out, "public a\npublic b\n");
    umount(&mnt, &xdg);
}

#[test]
fn a_mod_folder_of_that_name_never_opens_a_private_stock_folder() {
    if !fuse_available() || !second_user() {
        return;
    }
    let (_t, game, mnt, xdg) = setup();
    game_with_a_private_folder(&game);
    let target = game.join("mods/probemod");
    std::fs::create_dir_all(&target).unwrap();
    let o = Command::new("chown")
        .args([EVIL, target.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success());
    let _m = mount_shared(&game, &mnt, &xdg, &["--merged", "--into", "mods/probemod"]);
    let m = mnt.display();
    // the mod's owner makes a folder of the private folder's name in the mod
    as_evil(&["mkdir", target.join("private").to_str().unwrap()]);
    for script in [
        format!("cat '{m}/private/notes.txt'"),
        format!("ls '{m}/private'"),
    ] {
        let (ok, out) = evil_sh(&script);
        assert!(!ok, "the second user got through: {script}: {out}");
        assert!(!out.contains("root's notes"), "{out}");
    }
    assert_eq!(
        std::fs::read(mnt.join("private/notes.txt")).unwrap(),
        b"root's notes\n"
    );
    // a folder of the mod the stock game does not have is the mod owner's as usual
    as_evil(&["mkdir", target.join("extra").to_str().unwrap()]);
    let (ok, out) = evil_sh(&format!(
        "echo hi > '{m}/extra/x.txt' && cat '{m}/extra/x.txt'"
    ));
    assert!(ok, "{out}");
    umount(&mnt, &xdg);
}

#[test]
fn an_open_state_folder_is_made_private_and_another_users_is_refused() {
    if !fuse_available() || !second_user() {
        return;
    }
    use std::os::unix::fs::MetadataExt;
    let (t, game, mnt, xdg) = setup();
    let state = t.path().join("state");
    std::fs::create_dir(&state).unwrap();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o755)).unwrap();
    let m = mount_shared(&game, &mnt, &xdg, &[]);
    assert_eq!(std::fs::metadata(&state).unwrap().mode() & 0o777, 0o700);
    let (ok, out) = evil_sh(&format!("ls '{}'", state.display()));
    assert!(!ok, "the second user listed the state folder: {out}");
    umount(&mnt, &xdg);
    drop(m);
    // a state folder the second user owns: refused before mounting
    let theirs = xdg.join("theirs");
    as_evil(&["mkdir", "-m", "0700", theirs.to_str().unwrap()]);
    let o = tafs_env(
        &[
            "mount",
            "-d",
            "--state-dir",
            theirs.to_str().unwrap(),
            game.to_str().unwrap(),
            mnt.to_str().unwrap(),
        ],
        &xdg,
    );
    let _g = UnmountGuard(mnt.clone());
    assert!(
        !o.status.success(),
        "mounted with another user's state folder"
    );
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("belongs to uid"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(!is_mounted(&mnt));
}

/// A dump of the sample GAF in `dir/dump` that anyone may read.
fn readable_dump(dir: &Path) -> PathBuf {
    let gaf = dir.join("sample.gaf");
    std::fs::write(
        &gaf,
        tafs::formats::gaf::write(&tafs::sample::animated_gaf()).unwrap(),
    )
    .unwrap();
    let dump = dir.join("dump");
    let o = Command::new(TAFS)
        .args([
            "gaf",
            "dump",
            gaf.to_str().unwrap(),
            "-t",
            dump.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    Command::new("chmod")
        .args(["-R", "a+rX", dump.to_str().unwrap()])
        .status()
        .unwrap();
    dump
}

/// On a root daemon, `mkdir NAME.gaf` by another user in a folder of theirs makes an asset
/// of theirs: the folder is theirs and takes their writes, the binary its first commit
/// writes is theirs, and an asset made but not yet written keeps its owner across a
/// remount (recorded in the state folder), so it can still be filled and becomes theirs.
#[test]
fn a_new_asset_belongs_to_the_user_who_made_it() {
    if !fuse_available() || !second_user() {
        return;
    }
    use std::os::unix::fs::MetadataExt;
    let (t, game, mnt, xdg) = setup();
    let shared = game.join("shared");
    std::fs::create_dir(&shared).unwrap();
    let uid = evil_uid();
    std::os::unix::fs::chown(&shared, Some(uid), None).unwrap();
    let dump = readable_dump(t.path());
    let m = mnt.display();
    {
        let _m = mount_shared(&game, &mnt, &xdg, &[]);
        let (ok, out) = evil_sh(&format!(
            "umask 022 && mkdir '{m}/shared/new.gaf' && cp -r '{d}'/. '{m}/shared/new.gaf/' && \
             mkdir '{m}/shared/later.gaf'",
            d = dump.display()
        ));
        assert!(
            ok,
            "the second user's copy into their new asset failed: {out}"
        );
        let bin = std::fs::metadata(shared.join("new.gaf")).expect("the binary was written");
        assert_eq!(
            (bin.uid(), bin.mode() & 0o022),
            (uid, 0),
            "binary {:o}",
            bin.mode()
        );
        let shown = std::fs::metadata(mnt.join("shared/new.gaf")).unwrap();
        assert_eq!(shown.uid(), uid);
        assert_eq!(
            std::fs::metadata(mnt.join("shared/later.gaf"))
                .unwrap()
                .uid(),
            uid
        );
        umount(&mnt, &xdg);
    }
    let asset_json = walk(&game.parent().unwrap().join("state"))
        .into_iter()
        .filter(|p| p.ends_with("asset.json"))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .find(|j| j.contains("later.gaf"))
        .expect("later.gaf's record");
    let record: serde_json::Value = serde_json::from_str(&asset_json).unwrap();
    assert_eq!(record["owner"][0], uid, "{asset_json}");
    let _m = mount_shared(&game, &mnt, &xdg, &[]);
    assert_eq!(
        std::fs::metadata(mnt.join("shared/later.gaf"))
            .unwrap()
            .uid(),
        uid
    );
    let (ok, out) = evil_sh(&format!(
        "cp -r '{d}'/. '{m}/shared/later.gaf/'",
        d = dump.display()
    ));
    assert!(ok, "the second user's copy after a remount failed: {out}");
    let bin = std::fs::metadata(shared.join("later.gaf")).expect("the binary was written");
    assert_eq!(bin.uid(), uid);
    umount(&mnt, &xdg);
}

/// Every path under `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p.clone());
            }
            out.push(p);
        }
    }
    out
}
