//! `kill -9` of the mount process in the middle of commits: after every kill the binary
//! parses and holds the old or the new version of the edited frame, and the staged files are
//! still there after a remount (SEMANTICS.md, "State directory" and "Commit"); the same for a
//! GAF member of an archive (the archive parses, its member holds the old or the new frame).

mod mount_common;
mod writeback_common;

use mount_common::{fuse_available, UnmountGuard};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tafs::view::image::{decode_png, PngPixels};
use writeback_common::{edit_png, sample_bytes};

const TAFS: &str = env!("CARGO_BIN_EXE_tafs");
const ITERATIONS: usize = 20;

/// Mounts with `--daemon` and returns the serving process's pid.
fn mount(game: &Path, mnt: &Path, state: &Path) -> i32 {
    // commits in the request that saves (killed at random moments of them)
    mount_common::daemon_pid(game, mnt, &mount_common::committing_at_once(state))
}

fn indices(png: &[u8]) -> Vec<u8> {
    match decode_png(png).unwrap().pixels {
        PngPixels::Indexed { indices, .. } => indices,
        _ => panic!("dump PNGs are indexed"),
    }
}

/// A small deterministic generator (the seed is printed, so a failure can be replayed).
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

#[test]
fn kill_9_in_a_loop_of_commits_loses_nothing() {
    kill_loop(false);
}

#[test]
fn kill_9_in_a_loop_of_archive_commits_loses_nothing() {
    kill_loop(true);
}

/// The GAF to check: the binary itself, or the member `anims/fx.gaf` of the archive (written
/// to `out`).
fn gaf_of(bin: &Path, archive: bool, out: &Path) -> std::path::PathBuf {
    if !archive {
        return bin.to_path_buf();
    }
    use tafs::formats::hpi;
    let data = std::fs::read(bin).unwrap();
    let a = hpi::parse(&data, &hpi::HpiLimits::default())
        .unwrap_or_else(|e| panic!("archive broken: {e}"));
    let i = a.find(b"anims/fx.gaf").expect("member anims/fx.gaf");
    let hpi::EntryKind::File(f) = &a.entries[i].kind else {
        panic!("anims/fx.gaf is a folder")
    };
    std::fs::write(out, a.read(&data, f, &hpi::HpiLimits::default()).unwrap()).unwrap();
    out.to_path_buf()
}

fn kill_loop(archive: bool) {
    if !fuse_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let game = dir.path().join("game");
    let (state, mnt) = (dir.path().join("state"), dir.path().join("mnt"));
    std::fs::create_dir_all(game.join("anims")).unwrap();
    std::fs::create_dir_all(&mnt).unwrap();
    // the asset directory, relative to the game folder and the mount
    let (bin, asset) = if archive {
        use tafs::formats::hpi;
        let tree = vec![
            hpi::Node::dir(
                b"anims".to_vec(),
                vec![hpi::Node::file(b"fx.gaf".to_vec(), sample_bytes())],
            ),
            hpi::Node::file(b"side.tdf".to_vec(), b"[X]{}".to_vec()),
        ];
        let bin = game.join("anims/data.hpi");
        std::fs::write(&bin, hpi::write(&tree, &hpi::WriteOptions::v1()).unwrap()).unwrap();
        (bin, "anims/data.hpi/anims/fx.gaf")
    } else {
        let bin = game.join("anims/fx.gaf");
        std::fs::write(&bin, sample_bytes()).unwrap();
        (bin, "anims/fx.gaf")
    };
    let frame_path = format!("{asset}/pulse/2.png");
    let status_path = if archive {
        "anims/data.hpi/.tafs-status"
    } else {
        "anims/fx.gaf/.tafs-status"
    };
    let _guard = UnmountGuard(mnt.clone());

    let orig_dump = dir.path().join("orig");
    let st = Command::new(TAFS)
        .args(["gaf", "dump"])
        .arg(gaf_of(&bin, archive, &dir.path().join("orig.gaf")))
        .arg("-t")
        .arg(&orig_dump)
        .output()
        .unwrap();
    assert!(st.status.success());
    let orig_png = std::fs::read(orig_dump.join("pulse/2.png")).unwrap();
    // the edits the writer cycles through: the frame with one pixel set to 0x40 + k
    let variants: Arc<Vec<Vec<u8>>> =
        Arc::new((0..96u8).map(|k| edit_png(&orig_png, 0x40 + k).0).collect());
    let mut allowed: Vec<Vec<u8>> = variants.iter().map(|v| indices(v)).collect();
    allowed.push(indices(&orig_png));

    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    println!("seed {seed}");
    let mut rng = Lcg(seed);
    let mut kept: Vec<(String, String)> = Vec::new();
    let mut commits_seen = 0usize;
    for i in 0..ITERATIONS {
        let pid = mount(&game, &mnt, &state);
        // a staged plain file written in this run must survive every later kill
        let name = format!("{asset}/notes-{i}~");
        let text = format!("iteration {i}\n");
        std::fs::write(mnt.join(&name), &text).unwrap();
        kept.push((name, text));

        // commits in a loop (cp onto the frame) until the process is killed
        let stop = Arc::new(AtomicBool::new(false));
        let writer = {
            let (stop, variants) = (stop.clone(), variants.clone());
            let (src, target) = (dir.path().join(format!("v{i}.png")), mnt.join(&frame_path));
            let first = rng.below(variants.len() as u64) as usize;
            std::thread::spawn(move || {
                let mut ok = 0usize;
                let mut k = first;
                while !stop.load(Ordering::Relaxed) {
                    std::fs::write(&src, &variants[k % variants.len()]).unwrap();
                    let st = Command::new("cp")
                        .arg(&src)
                        .arg(&target)
                        .stderr(Stdio::null())
                        .status()
                        .unwrap();
                    if !st.success() {
                        break;
                    }
                    ok += 1;
                    k += 1;
                }
                ok
            })
        };
        std::thread::sleep(Duration::from_millis(20 + rng.below(300)));
        assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
        for _ in 0..500 {
            // gone, or a zombie nobody reaps yet
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let zombie = stat
                .rsplit_once(") ")
                .map(|(_, rest)| rest.starts_with('Z'));
            if zombie != Some(false) {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        stop.store(true, Ordering::Relaxed);
        commits_seen += writer.join().unwrap();

        // the binary parses and holds the old or a new version of the frame
        let g = gaf_of(&bin, archive, &dir.path().join(format!("member{i}.gaf")));
        let bytes = std::fs::read(&g).unwrap();
        tafs::formats::gaf::parse(&bytes, &Default::default())
            .unwrap_or_else(|e| panic!("iteration {i} (seed {seed}): binary broken: {e}"));
        let d = dir.path().join(format!("dump{i}"));
        let st = Command::new(TAFS)
            .args(["gaf", "dump"])
            .arg(&g)
            .arg("-t")
            .arg(&d)
            .output()
            .unwrap();
        assert!(st.status.success(), "iteration {i}: dump failed");
        let frame = indices(&std::fs::read(d.join("pulse/2.png")).unwrap());
        assert!(
            allowed.contains(&frame),
            "iteration {i} (seed {seed}): frame is neither the old nor an edited version"
        );
    }
    assert!(commits_seen > 0, "no commit completed before the kills");

    // after a remount every staged file is still there, and saving commits again
    let pid = mount(&game, &mnt, &state);
    for (name, text) in &kept {
        assert_eq!(
            std::fs::read_to_string(mnt.join(name)).unwrap_or_default(),
            *text,
            "{name} lost (seed {seed})"
        );
    }
    let status = std::fs::read_to_string(mnt.join(status_path)).unwrap();
    assert!(!status.contains("conflict"), "seed {seed}: {status}");
    let last = edit_png(&orig_png, 0x3F).0;
    let src = dir.path().join("last.png");
    std::fs::write(&src, &last).unwrap();
    let st = Command::new("cp")
        .arg(&src)
        .arg(mnt.join(&frame_path))
        .status()
        .unwrap();
    assert!(st.success(), "seed {seed}: a save after the kills failed");
    assert_eq!(std::fs::read(mnt.join(&frame_path)).unwrap(), last);
    let status = std::fs::read_to_string(mnt.join(status_path)).unwrap();
    assert!(status.contains(": clean"), "seed {seed}: {status}");
    // temporary files of commits killed before their rename are gone after this commit
    let leftovers: Vec<String> = std::fs::read_dir(game.join("anims"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| Some(n.as_str()) != bin.file_name().and_then(|b| b.to_str()))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    let _ = pid;
    let _ = Command::new(TAFS).arg("umount").arg(&mnt).status();
    println!("{commits_seen} commits completed across {ITERATIONS} kills");
}
