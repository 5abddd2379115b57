//! Real FUSE mounts (in this process, with the fake view of `common`), driven by real tools.
//! Skipped with a message only when /dev/fuse is missing.

mod mount_common;

use mount_common::{fake_opener, fuse_available, put, replace, sh, FakeView, Mnt};
use std::path::Path;
use std::time::Duration;
use tafs::fs::MountOptions;

const TTL: Duration = Duration::from_millis(1000);

/// Held by a test that drops the kernel's caches (system-wide: every mount of this process
/// is told to forget its unused inodes) and by those that need an inode remembered.
static KERNEL_CACHES: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Serves `game` with the fake view and a TTL of [`TTL`].
fn serve(game: tempfile::TempDir, opts: MountOptions) -> Mnt {
    Mnt::serve(
        game,
        MountOptions {
            opener: fake_opener(),
            ttl: TTL,
            ..opts
        },
    )
}

fn fake_game() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    put(
        &d.path().join("anims/fire.gaf"),
        "FAKE\nmetadata.json={\"sequences\":2}\nfire/0.png*3000=A\nfire/1.png=sequence one\nsmoke/frames.csv=sequence,frame\n",
    );
    put(&d.path().join("anims/corrupt.gaf"), "this is not a GAF");
    put(
        &d.path().join("maps/m.TNT"),
        "FAKE\nmap.png*70000=m\nmetadata.json=sequence-free\n",
    );
    put(
        &d.path().join("gamedata/units.tdf"),
        "[UNIT]{sequence=1;}\n",
    );
    d
}

/// What `dump` would write for each asset: the fake view's files on disk.
fn dump_all(game: &Path, out: &Path) {
    for (rel, target) in [
        ("anims/fire.gaf", "anims/fire.gaf"),
        ("maps/m.TNT", "maps/m.TNT"),
    ] {
        let v = FakeView::parse(&std::fs::read(game.join(rel)).unwrap()).unwrap();
        tafs::view::write_tree(&v, &out.join(target)).unwrap();
    }
}

#[test]
fn real_tools_see_exactly_the_dump() {
    if !fuse_available() {
        return;
    }
    let m = serve(fake_game(), MountOptions::default());
    let mnt = m.mnt.display().to_string();
    let dump = tempfile::tempdir().unwrap();
    dump_all(m.game(), dump.path());
    let d = dump.path().display();
    sh(&format!("diff -r {d}/anims/fire.gaf {mnt}/anims/fire.gaf"));
    sh(&format!("diff -r {d}/maps/m.TNT {mnt}/maps/m.TNT"));

    let ls = sh(&format!("ls -lR {mnt}"));
    assert!(ls.contains("corrupt.gaf"), "{ls}");
    let find = sh(&format!("cd {mnt} && find . | sort"));
    let expected = [
        ".",
        "./anims",
        "./anims/corrupt.gaf",
        "./anims/fire.gaf",
        "./anims/fire.gaf/fire",
        "./anims/fire.gaf/fire/0.png",
        "./anims/fire.gaf/fire/1.png",
        "./anims/fire.gaf/metadata.json",
        "./anims/fire.gaf/smoke",
        "./anims/fire.gaf/smoke/frames.csv",
        "./gamedata",
        "./gamedata/units.tdf",
        "./maps",
        "./maps/m.TNT",
        "./maps/m.TNT/map.png",
        "./maps/m.TNT/metadata.json",
    ];
    assert_eq!(find.lines().collect::<Vec<_>>(), expected);
    let grep = sh(&format!("cd {mnt} && grep -rl sequence . | sort"));
    assert_eq!(
        grep.lines().collect::<Vec<_>>(),
        [
            "./anims/fire.gaf/fire/1.png",
            "./anims/fire.gaf/metadata.json",
            "./anims/fire.gaf/smoke/frames.csv",
            "./gamedata/units.tdf",
            "./maps/m.TNT/metadata.json"
        ]
    );
    // stat sizes agree with the bytes read
    for f in expected
        .iter()
        .filter(|f| f.ends_with(".png") || f.ends_with(".json"))
    {
        let st = sh(&format!("cd {mnt} && stat -c %s {f}"));
        let wc = sh(&format!("cd {mnt} && cat {f} | wc -c"));
        assert_eq!(st.trim(), wc.trim(), "{f}");
    }
    assert_eq!(
        sh(&format!("stat -c %s {mnt}/maps/m.TNT/map.png")).trim(),
        "70000"
    );
    // the corrupt GAF is the plain file
    assert_eq!(
        sh(&format!("cat {mnt}/anims/corrupt.gaf")),
        "this is not a GAF"
    );
    assert_eq!(
        sh(&format!("stat -c %F {mnt}/anims/corrupt.gaf")).trim(),
        "regular file"
    );
    // cp -r and tar out
    let out = tempfile::tempdir().unwrap();
    let o = out.path().display();
    sh(&format!(
        "cp -r {mnt}/anims/fire.gaf {o}/copy && diff -r {d}/anims/fire.gaf {o}/copy"
    ));
    let tar_mnt = sh(&format!(
        "tar cf - -C {mnt} anims/fire.gaf maps/m.TNT | tar tvf - | awk '{{print $3, $6}}' | sort"
    ));
    let tar_dump = sh(&format!(
        "tar cf - -C {d} anims/fire.gaf maps/m.TNT | tar tvf - | awk '{{print $3, $6}}' | sort"
    ));
    assert_eq!(tar_mnt, tar_dump);
    // mtimes of generated files are the binary's
    let bin = sh(&format!("stat -c %Y {}/anims/fire.gaf", m.game().display()));
    assert_eq!(
        sh(&format!("stat -c %Y {mnt}/anims/fire.gaf/fire/0.png")),
        bin
    );
    // directories: nlink = 2 + sub-directories
    assert_eq!(sh(&format!("stat -c %h {mnt}/anims/fire.gaf")).trim(), "4");
    assert_eq!(
        sh(&format!("stat -c %h {mnt}/anims/fire.gaf/fire")).trim(),
        "2"
    );
    // stable inodes (while the kernel remembers them: no cache dropped meanwhile)
    let _remembered = KERNEL_CACHES.lock().unwrap_or_else(|e| e.into_inner());
    let i1 = sh(&format!("stat -c %i {mnt}/anims/fire.gaf/fire/0.png"));
    std::thread::sleep(TTL + Duration::from_millis(200));
    assert_eq!(
        sh(&format!("stat -c %i {mnt}/anims/fire.gaf/fire/0.png")),
        i1
    );
}

#[test]
fn asset_directories_are_read_only() {
    if !fuse_available() {
        return;
    }
    let m = serve(fake_game(), MountOptions::default());
    let a = m.mnt.join("anims/fire.gaf");
    for (what, r) in [
        ("create", std::fs::write(a.join("new.png"), b"x")),
        ("write", std::fs::write(a.join("metadata.json"), b"x")),
        ("unlink", std::fs::remove_file(a.join("metadata.json"))),
        ("mkdir", std::fs::create_dir(a.join("seq"))),
        ("rename", std::fs::rename(a.join("fire"), a.join("fire2"))),
        (
            "rmdir",
            std::fs::remove_dir(m.mnt.join("anims/fire.gaf/smoke")),
        ),
    ] {
        let e = r.expect_err(what);
        assert_eq!(e.raw_os_error(), Some(libc::EROFS), "{what}: {e}");
    }
    // extended attributes are not supported (SEMANTICS.md)
    let path = std::ffi::CString::new(a.join("metadata.json").to_str().unwrap()).unwrap();
    let mut buf = [0u8; 64];
    // SAFETY: valid C strings and a writable buffer of the given length.
    let r = unsafe {
        libc::lgetxattr(
            path.as_ptr(),
            c"user.x".as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    assert_eq!(r, -1);
    assert_eq!(
        std::io::Error::last_os_error().raw_os_error(),
        Some(libc::EOPNOTSUPP)
    );
    let e = std::fs::remove_dir_all(&a).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EROFS));
    assert!(m.game().join("anims/fire.gaf").is_file());
}

#[test]
fn pass_through_of_a_tdf() {
    if !fuse_available() {
        return;
    }
    let m = serve(fake_game(), MountOptions::default());
    let mnt = m.mnt.display().to_string();
    let g = m.game().display().to_string();
    sh(&format!(
        "printf 'one' > {mnt}/gamedata/new.tdf && printf ' two' >> {mnt}/gamedata/new.tdf"
    ));
    assert_eq!(
        std::fs::read_to_string(m.game().join("gamedata/new.tdf")).unwrap(),
        "one two"
    );
    sh(&format!(
        "mv {mnt}/gamedata/new.tdf {mnt}/gamedata/moved.tdf"
    ));
    assert!(!m.game().join("gamedata/new.tdf").exists());
    sh(&format!("chmod 600 {mnt}/gamedata/moved.tdf"));
    assert_eq!(
        sh(&format!("stat -c %a {g}/gamedata/moved.tdf")).trim(),
        "600"
    );
    sh(&format!(
        "touch -d '2001-02-03 04:05:06 UTC' {mnt}/gamedata/moved.tdf"
    ));
    assert_eq!(
        sh(&format!("stat -c %Y {g}/gamedata/moved.tdf")).trim(),
        "981173106"
    );
    assert_eq!(
        sh(&format!("stat -c %Y {mnt}/gamedata/moved.tdf")).trim(),
        "981173106"
    );
    sh(&format!("truncate -s 3 {mnt}/gamedata/moved.tdf"));
    assert_eq!(
        std::fs::read_to_string(m.game().join("gamedata/moved.tdf")).unwrap(),
        "one"
    );
    sh(&format!(
        "mkdir -p {mnt}/gamedata/sub/deeper && ln -s ../moved.tdf {mnt}/gamedata/sub/link"
    ));
    assert_eq!(
        sh(&format!("readlink {g}/gamedata/sub/link")).trim(),
        "../moved.tdf"
    );
    assert_eq!(sh(&format!("cat {mnt}/gamedata/sub/link")), "one");
    sh(&format!(
        "ln {mnt}/gamedata/moved.tdf {mnt}/gamedata/hard.tdf"
    ));
    assert_eq!(
        sh(&format!("stat -c %h {g}/gamedata/moved.tdf")).trim(),
        "2"
    );
    sh(&format!(
        "rm {mnt}/gamedata/moved.tdf {mnt}/gamedata/hard.tdf && rm -r {mnt}/gamedata/sub"
    ));
    assert_eq!(sh(&format!("ls -A {g}/gamedata")).trim(), "units.tdf");
    sh(&format!("df {mnt} >/dev/null"));
    // a binary copied in through the mount becomes a directory
    sh(&format!("cp {g}/anims/fire.gaf {mnt}/gamedata/copy.gaf"));
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(
        sh(&format!("stat -c %F {mnt}/gamedata/copy.gaf")).trim(),
        "directory"
    );
    sh(&format!(
        "diff -r {mnt}/anims/fire.gaf {mnt}/gamedata/copy.gaf"
    ));
}

#[test]
fn replaced_and_deleted_binaries_show_through() {
    if !fuse_available() {
        return;
    }
    let m = serve(fake_game(), MountOptions::default());
    let bin = m.game().join("anims/fire.gaf");
    let png = m.mnt.join("anims/fire.gaf/fire/0.png");
    assert_eq!(std::fs::read(&png).unwrap(), vec![b'A'; 3000]);
    assert_eq!(std::fs::metadata(&png).unwrap().len(), 3000);
    replace(&bin, "FAKE\nfire/0.png*10=Z\nnew/x.png=x\n");
    // open always reaches the file system, which notices the change at once
    assert_eq!(std::fs::read(&png).unwrap(), vec![b'Z'; 10]);
    std::thread::sleep(TTL + Duration::from_millis(200));
    assert_eq!(std::fs::metadata(&png).unwrap().len(), 10);
    assert_eq!(std::fs::read(&png).unwrap(), vec![b'Z'; 10]);
    let names = sh(&format!("ls {}", m.mnt.join("anims/fire.gaf").display()));
    assert_eq!(names, "fire\nnew\n");
    // bigger again, read through a kept handle-less path: no stale bytes at the new size
    replace(&bin, "FAKE\nfire/0.png*5000=Q\nnew/x.png=x\n");
    let got = std::fs::read(&png).unwrap();
    assert_eq!(got, vec![b'Q'; 5000]);
    std::fs::remove_file(&bin).unwrap();
    std::thread::sleep(TTL + Duration::from_millis(200));
    assert!(!m.mnt.join("anims/fire.gaf").exists());
    assert_eq!(
        sh(&format!("ls {}", m.mnt.join("anims").display())),
        "corrupt.gaf\n"
    );
}

#[test]
fn parallel_readers_while_a_binary_is_replaced() {
    if !fuse_available() {
        return;
    }
    let version = |c: char, n: usize| {
        format!(
            "FAKE\nmetadata.json*{n}={c}\na/0.png*{}={c}\na/1.png*{}={c}\nb/0.png*{}={c}\n",
            n * 2,
            n * 7,
            n / 3 + 1
        )
    };
    let m = serve(fake_game(), MountOptions::default());
    let bin = m.game().join("anims/fire.gaf");
    replace(&bin, version('a', 1000));
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let root = m.mnt.clone();
    let readers: Vec<_> = (0..8)
        .map(|_| {
            let stop = stop.clone();
            let root = root.clone();
            std::thread::spawn(move || {
                let (mut reads, mut stale) = (0usize, 0usize);
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    for f in ["metadata.json", "a/0.png", "a/1.png", "b/0.png"] {
                        let p = root.join("anims/fire.gaf").join(f);
                        let bytes = match std::fs::read(&p) {
                            Ok(b) => b,
                            // the binary replaced again between the kernel's second lookup
                            // and its open (SEMANTICS.md, "Change detection"): rare
                            Err(e) if e.raw_os_error() == Some(libc::ESTALE) => {
                                stale += 1;
                                continue;
                            }
                            Err(e) => panic!("{f}: {e}"),
                        };
                        let c = bytes[0];
                        assert!(bytes.iter().all(|&b| b == c), "{f}: mixed content");
                        let n = 1000 + 500 * (c - b'a') as usize;
                        let want = match f {
                            "metadata.json" => n,
                            "a/0.png" => n * 2,
                            "a/1.png" => n * 7,
                            _ => n / 3 + 1,
                        };
                        assert_eq!(
                            bytes.len(),
                            want,
                            "{f}: {} bytes of {}",
                            bytes.len(),
                            c as char
                        );
                        reads += 1;
                    }
                    let _ = std::fs::read_dir(root.join("anims")).map(|d| d.count());
                }
                (reads, stale)
            })
        })
        .collect();
    for i in 0..20u8 {
        std::thread::sleep(Duration::from_millis(60));
        let c = (b'a' + (i % 6)) as char;
        replace(&bin, version(c, 1000 + 500 * (i % 6) as usize));
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (total, stale) = readers
        .into_iter()
        .map(|r| r.join().unwrap())
        .fold((0, 0), |(a, b), (r, s)| (a + r, b + s));
    println!("{total} whole reads, {stale} opens answered ESTALE twice");
    assert!(total > 8, "readers made progress ({total})");
    assert!(
        stale * 100 <= total,
        "{stale} of {total} opens failed with ESTALE: the kernel's retry should find the new file"
    );
}

#[test]
fn inodes_the_kernel_forgets_leave_the_table() {
    if !fuse_available() {
        return;
    }
    let game = fake_game();
    for i in 0..300 {
        put(&game.path().join(format!("many/d{}/f{i}.txt", i % 10)), "x");
    }
    let m = serve(game, MountOptions::default());
    let found = sh(&format!("find {} | wc -l", m.mnt.display()));
    assert!(found.trim().parse::<usize>().unwrap() > 300, "{found}");
    let seen = m.inodes();
    assert!(seen > 300, "{seen} inodes after find");
    // the kernel drops unused dentries and inodes and sends FORGET for each
    let _dropping = KERNEL_CACHES.lock().unwrap_or_else(|e| e.into_inner());
    if std::fs::write("/proc/sys/vm/drop_caches", "2").is_err() {
        println!("SKIPPED: /proc/sys/vm/drop_caches is not writable");
        return;
    }
    let t = std::time::Instant::now();
    while m.inodes() > seen / 2 && t.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(100));
    }
    let left = m.inodes();
    assert!(
        left <= seen / 2,
        "{seen} inodes before dropping caches, {left} after"
    );
    // what was forgotten is found again, with its content
    let f = m.mnt.join("many/d3/f13.txt");
    assert_eq!(std::fs::read(&f).unwrap(), b"x");
    assert_eq!(
        std::fs::read(m.mnt.join("anims/fire.gaf/fire/1.png")).unwrap(),
        b"sequence one"
    );
}
