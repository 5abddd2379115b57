//! The persisted index through real mounts: a remount of an unchanged game folder lists
//! without decoding or rendering (the root `.tafs-status` counts both), a binary changed while
//! unmounted (also to the same size and mtime, `touch -r`) is decoded again, and a truncated,
//! edited or lying index never makes `stat` disagree with `wc -c` for a file that was read.
//! The lying index is written by a small Python reader/writer of the format (from its
//! description in `src/fs/index.rs`), independent of the crate's.

mod common;
mod mount_common;
mod writeback_common;

use mount_common::{fuse_available, sh, Mount};
use std::path::{Path, PathBuf};

/// A game folder `WORK/game` with a GAF (`anims/a.gaf`) and a PCX picture.
fn game(work: &Path) -> PathBuf {
    let g = work.join("game");
    mount_common::put(&g.join("anims/a.gaf"), writeback_common::sample_bytes());
    mount_common::put(&g.join("pics/p.pcx"), tafs::sample::unit_picture_pcx());
    g
}

fn mount(work: &Path, extra: &[&str]) -> Mount {
    let state = work.join("state");
    let mut args = vec!["--state-dir", state.to_str().unwrap()];
    args.extend_from_slice(extra);
    mount_common::mount(&work.join("game"), &work.join("mnt"), &args)
}

/// Renames the sequence `panel` of the GAF at `bin` to `panex` in place: the same size, the
/// mtime put back (a change only the contents show).
fn same_size_and_mtime_edit(bin: &Path) {
    sh(&format!("cp -p '{0}' '{0}.ref'", bin.display()));
    let mut b = std::fs::read(bin).unwrap();
    let at = b.windows(6).position(|x| x == b"panel\0").unwrap();
    b[at + 4] = b'x';
    std::fs::OpenOptions::new()
        .write(true)
        .open(bin)
        .and_then(|mut f| std::io::Write::write_all(&mut f, &b))
        .unwrap();
    sh(&format!(
        "touch -r '{0}.ref' '{0}' && rm '{0}.ref'",
        bin.display()
    ));
}

/// `ls -lR` of the mount, names sizes and times (the status file left out).
fn listing(mnt: &Path) -> String {
    sh(&format!(
        "cd '{}' && ls -lR --time-style=+%s . | grep -v tafs-status",
        mnt.display()
    ))
}

/// The counters of the root status file: (listed from the index, decoded, rendered).
fn counters(mnt: &Path) -> (u64, u64, u64) {
    counters_of(mnt, "index: ")
}

/// The three numbers of the line of the root status file that starts with `label`.
fn counters_of(mnt: &Path, label: &str) -> (u64, u64, u64) {
    let t = std::fs::read_to_string(mnt.join(".tafs-status")).unwrap();
    let line = t
        .lines()
        .find(|l| l.starts_with(label))
        .unwrap_or_else(|| panic!("no {label:?} line in {t:?}"));
    let n: Vec<u64> = line
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().unwrap())
        .collect();
    (n[0], n[1], n[2])
}

/// Every generated file: `stat` size equals the bytes read (`wc -c`), each read first when
/// `read_first`.
fn sizes_agree(mnt: &Path, read_first: bool) {
    let out = sh(&format!(
        "cd '{}' && find anims pics -type f | sort | while read f; do \
         if [ {} = 1 ]; then w=$(wc -c < \"$f\"); s=$(stat -c %s \"$f\"); \
         else s=$(stat -c %s \"$f\"); w=$(wc -c < \"$f\"); s2=$(stat -c %s \"$f\"); \
         [ \"$s\" = \"$s2\" ] || echo \"$f changed size: $s then $s2\"; fi; \
         [ \"$s\" = \"$w\" ] || echo \"$f: stat $s, read $w\"; done",
        mnt.display(),
        u8::from(read_first)
    ));
    assert_eq!(out, "", "sizes disagree");
}

fn index_file(work: &Path) -> PathBuf {
    let dir = work.join("state/index");
    let files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    files[0].clone()
}

#[test]
fn a_remount_of_an_unchanged_folder_lists_from_the_index() {
    if !fuse_available() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    game(w);
    let first = {
        let m = mount(w, &[]);
        let l = listing(&m.mnt);
        let (hits, decoded, rendered) = counters(&m.mnt);
        assert_eq!((hits, decoded), (0, 2));
        assert!(rendered > 10, "{rendered}");
        l
    };
    assert!(index_file(w).exists());
    let m = mount(w, &[]);
    assert_eq!(listing(&m.mnt), first);
    assert_eq!(counters(&m.mnt), (2, 0, 0), "nothing decoded or rendered");
    // reading decodes and renders, with the sizes listed
    sizes_agree(&m.mnt, false);
    let (_, decoded, rendered) = counters(&m.mnt);
    assert_eq!(decoded, 2);
    assert!(rendered > 10);
    drop(m);
    // the read-only mount uses it too, and leaves it as it was
    let before = std::fs::read(index_file(w)).unwrap();
    let m = mount(w, &["--ro"]);
    let no_write = first.replace("rw-", "r--").replace("rwx", "r-x");
    assert_eq!(listing(&m.mnt), no_write);
    drop(m);
    assert_eq!(std::fs::read(index_file(w)).unwrap(), before);
}

#[test]
fn a_binary_changed_to_the_same_size_and_mtime_is_decoded_again() {
    if !fuse_available() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    let g = game(w);
    {
        let m = mount(w, &[]);
        listing(&m.mnt);
    }
    // the sequence `panel` renamed `panex` in place: same size, mtime put back
    same_size_and_mtime_edit(&g.join("anims/a.gaf"));
    let m = mount(w, &[]);
    let l = listing(&m.mnt);
    assert!(l.contains("panex") && !l.contains("panel"), "{l}");
    let (hits, decoded, _) = counters(&m.mnt);
    assert_eq!(
        (hits, decoded),
        (1, 1),
        "the picture from the index, the GAF decoded"
    );
    sizes_agree(&m.mnt, false);
}

/// The index file with every recorded size of a file (kind 2) set to `size`, its checksum
/// made right again: parsed and written by Python from the format's description. Prints the
/// paths lied about.
const LIE: &str = r#"
import struct, sys, zlib
path, size = sys.argv[1], int(sys.argv[2])
b = open(path, 'rb').read()
body = bytearray(b[:-4])
assert struct.unpack('<I', b[-4:])[0] == zlib.crc32(body)
assert body[:8] == b'TAFSIDX\x01'
pos = 24
def take(fmt):
    global pos
    v = struct.unpack_from(fmt, body, pos)
    pos += struct.calcsize(fmt)
    return v[0]
def text():
    global pos
    n = take('<H')
    pos += n
    return body[pos - n:pos].decode()
lied = []
for _ in range(take('<I')):
    asset = text()
    pos += 8 + 4 + 8
    for _ in range(take('<I')):
        kind = take('<B')
        at = pos
        if kind == 2:
            pos += 8
        name = text()
        if kind == 2:
            struct.pack_into('<Q', body, at, size)
            lied.append(asset + '/' + name)
assert pos == len(body), (pos, len(body))
open(path, 'wb').write(bytes(body) + struct.pack('<I', zlib.crc32(body)))
print('\n'.join(lied))
"#;

#[test]
fn a_truncated_edited_or_lying_index_never_shows_a_wrong_size() {
    if !fuse_available() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    game(w);
    // the true sizes
    let truth: std::collections::BTreeMap<String, u64> = {
        let m = mount(w, &[]);
        listing(&m.mnt);
        sh(&format!(
            "cd '{}' && find anims pics -type f -exec wc -c {{}} +",
            m.mnt.display()
        ))
        .lines()
        .filter_map(|l| l.trim().split_once(' '))
        .filter(|(_, p)| *p != "total")
        .map(|(n, p)| (p.to_string(), n.parse().unwrap()))
        .collect()
    };
    assert!(truth.len() > 20, "{truth:?}");
    let idx = index_file(w);
    let good = std::fs::read(&idx).unwrap();
    // truncated: ignored
    std::fs::write(&idx, &good[..good.len() / 2]).unwrap();
    {
        let m = mount(w, &[]);
        listing(&m.mnt);
        assert_eq!(counters(&m.mnt).0, 0);
        sizes_agree(&m.mnt, false);
    }
    // one byte changed (a recorded size), checksum left: ignored
    let mut edited = good.clone();
    let n = edited.len();
    edited[n - 12] ^= 1;
    std::fs::write(&idx, &edited).unwrap();
    {
        let m = mount(w, &[]);
        listing(&m.mnt);
        assert_eq!(counters(&m.mnt).0, 0);
        sizes_agree(&m.mnt, false);
    }
    // an intact index that lies about a size: shown until the file is read, right after
    std::fs::write(&idx, &good).unwrap();
    let script = w.join("lie.py");
    std::fs::write(&script, LIE).unwrap();
    let lied = sh(&format!(
        "python3 '{}' '{}' 3",
        script.display(),
        idx.display()
    ));
    let lied: Vec<&str> = lied.lines().collect();
    assert!(lied.len() > 20, "{lied:?}");
    let m = mount(w, &[]);
    listing(&m.mnt);
    assert_eq!(counters(&m.mnt).0, 2);
    for p in &lied {
        let f = m.mnt.join(p);
        // listed with the size the index gave
        assert_eq!(std::fs::metadata(&f).unwrap().len(), 3, "{p}");
        // read whole, and stat agrees once read
        let read = std::fs::read(&f).unwrap();
        assert_eq!(Some(&(read.len() as u64)), truth.get(*p), "{p}");
        assert_eq!(
            std::fs::metadata(&f).unwrap().len(),
            read.len() as u64,
            "{p}"
        );
    }
    sizes_agree(&m.mnt, true);
}

/// A game folder `WORK/merged` with a loose GAF and a GAF only an archive holds.
fn merged_game(work: &Path) -> PathBuf {
    use tafs::formats::hpi;
    let g = work.join("merged");
    mount_common::put(&g.join("anims/a.gaf"), writeback_common::sample_bytes());
    let tree = vec![hpi::Node::dir(
        b"anims".to_vec(),
        vec![hpi::Node::file(
            b"Pulse.GAF".to_vec(),
            writeback_common::sample_bytes(),
        )],
    )];
    mount_common::put(
        &g.join("totala1.hpi"),
        hpi::write(&tree, &hpi::WriteOptions::v1()).unwrap(),
    );
    std::fs::create_dir_all(g.join("mymod")).unwrap();
    g
}

/// The counters of the merged view's index in the root status of a `--merged --into`
/// mount: (listed from the index, decoded, rendered).
fn merged_counters(mnt: &Path) -> (u64, u64, u64) {
    counters_of(mnt, "merged index: ")
}

#[test]
fn a_merged_remount_lists_from_the_index_and_decodes_a_changed_binary() {
    if !fuse_available() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    let g = merged_game(w);
    let state = w.join("state");
    let log = w.join("ro.log");
    let into = [
        "--state-dir",
        state.to_str().unwrap(),
        "--merged",
        "--into",
        "mymod",
    ];
    let merged_listing = |mnt: &Path| {
        sh(&format!(
            "cd '{}' && ls -lR --time-style=+%s anims | grep -v tafs-",
            mnt.display()
        ))
    };
    let first = {
        let m = mount_common::mount(&g, &w.join("mnt"), &into);
        let l = merged_listing(&m.mnt);
        assert!(l.contains("pulse.gaf") || l.contains("Pulse.GAF"), "{l}");
        let (hits, decoded, rendered) = merged_counters(&m.mnt);
        assert_eq!((hits, decoded), (0, 2));
        assert!(rendered > 10, "{rendered}");
        // `tafs status` tells the rendering: going on, or the last run
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_tafs"))
            .arg("status")
            .arg(&m.mnt)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let run = format!("rendering: idle, last run {rendered} files in ");
        let busy = format!("rendering: busy, {rendered} files in ");
        assert!(text.contains(&run) || text.contains(&busy), "{text}");
        l
    };
    let idx: Vec<PathBuf> = std::fs::read_dir(state.join("index"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".merged"))
        .collect();
    assert_eq!(idx.len(), 1, "{idx:?}");
    let written = std::fs::read(&idx[0]).unwrap();
    {
        let m = mount_common::mount(&g, &w.join("mnt"), &into);
        assert_eq!(merged_listing(&m.mnt), first);
        assert_eq!(
            merged_counters(&m.mnt),
            (2, 0, 0),
            "nothing decoded or rendered"
        );
        // read: rendered, with the sizes listed
        let out = sh(&format!(
            "cd '{}' && find anims -type f | while read f; do \
             [ \"$(stat -c %s \"$f\")\" = \"$(wc -c < \"$f\")\" ] || echo \"$f\"; done",
            m.mnt.display()
        ));
        assert_eq!(out, "", "sizes disagree");
    }
    // the read-only view reads it (its log counts), and never writes it
    let before = std::fs::read(&idx[0]).unwrap();
    assert_eq!(before.len(), written.len());
    {
        let ro = [
            "-v",
            "--log",
            log.to_str().unwrap(),
            "--state-dir",
            state.to_str().unwrap(),
            "--merged",
        ];
        let m = mount_common::mount(&g, &w.join("mnt"), &ro);
        let l = merged_listing(&m.mnt);
        assert_eq!(l, first.replace("rw-", "r--").replace("rwx", "r-x"));
    }
    let mut logged = String::new();
    for _ in 0..100 {
        logged = std::fs::read_to_string(&log).unwrap_or_default();
        if logged.contains("merged index: ") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(
        logged.contains("merged index: 2 listed from the index, 0 decoded, 0 rendered"),
        "{logged}"
    );
    assert_eq!(std::fs::read(&idx[0]).unwrap(), before);
    // the loose GAF changed to the same size and mtime: decoded again; the member is not
    same_size_and_mtime_edit(&g.join("anims/a.gaf"));
    let m = mount_common::mount(&g, &w.join("mnt"), &into);
    let l = merged_listing(&m.mnt);
    assert!(l.contains("panex") && l.contains("panel"), "{l}");
    let (hits, decoded, _) = merged_counters(&m.mnt);
    assert_eq!(
        (hits, decoded),
        (1, 1),
        "the member from the index, the GAF decoded"
    );
}

/// The "index:" counters once they have not moved for half a second (at most 30 s).
fn settled_counters(mnt: &Path) -> (u64, u64, u64) {
    let mut last = counters(mnt);
    for _ in 0..60 {
        std::thread::sleep(std::time::Duration::from_millis(500));
        let now = counters(mnt);
        if now == last {
            return now;
        }
        last = now;
    }
    last
}

#[test]
fn a_walk_is_rendered_ahead_in_name_order_each_file_once() {
    if !fuse_available() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let g = work.path().join("game");
    // ten GAFs, names in an order that is not the folder's nor plain byte order
    let names: Vec<String> = (0..10)
        .map(|i| {
            if i % 2 == 0 {
                format!("G{i:02}.GAF")
            } else {
                format!("g{i:02}.gaf")
            }
        })
        .collect();
    for n in names.iter().rev() {
        mount_common::put(&g.join("anims").join(n), writeback_common::sample_bytes());
    }
    let m = mount(work.path(), &[]);
    let per_gaf = sh(&format!("find '{}' -type f | wc -l", {
        let d = work.path().join("dump");
        sh(&format!(
            "{} gaf dump '{}' -t '{}'",
            env!("CARGO_BIN_EXE_tafs"),
            g.join("anims/G00.GAF").display(),
            d.display()
        ));
        d.display().to_string()
    }))
    .trim()
    .parse::<u64>()
    .unwrap();
    assert!(per_gaf > 1);
    // listing the real folder queues its first six assets: their files are rendered
    // without anything inside them being asked for
    sh(&format!(
        "ls '{}' >/dev/null",
        m.mnt.join("anims").display()
    ));
    let (_, _, rendered) = settled_counters(&m.mnt);
    assert_eq!(
        rendered,
        6 * per_gaf,
        "the first six assets, every file once"
    );
    // entering the fourth queues the six after it: the last four are rendered
    sh(&format!(
        "ls '{}' >/dev/null",
        m.mnt.join("anims/g03.gaf").display()
    ));
    let (_, _, rendered) = settled_counters(&m.mnt);
    assert_eq!(rendered, 10 * per_gaf, "every file of the folder, once");
    // the walk itself renders nothing more, and every size is the bytes read
    sh(&format!("ls -lR '{}' >/dev/null", m.mnt.display()));
    assert_eq!(settled_counters(&m.mnt).2, 10 * per_gaf);
    let out = sh(&format!(
        "cd '{}' && find anims -type f | while read f; do \
         [ \"$(stat -c %s \"$f\")\" = \"$(wc -c < \"$f\")\" ] || echo \"$f\"; done",
        m.mnt.display()
    ));
    assert_eq!(out.trim(), "", "sizes that disagree with the bytes");
}
