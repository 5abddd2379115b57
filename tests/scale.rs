//! Folders and archives of any size cost O(1) per operation and O(n) per listing: a folder
//! of an asset directory keeps exact counts through thousands of creates and unlinks
//! (`src/fs/core/dircount.rs`), and a listing read page by page without a directory handle
//! is made once, its offsets stable. Real mounts driven by Python; the rates are printed by
//! `scripts/bench-dircount` and `scripts/bench-archive-listing`, not asserted here.

mod mount_common;

use mount_common::{daemon_peak_kib, sh, GameMount};

/// Creates, mkdirs, unlinks and rmdirs in a GAF's sequence folder, with a `stat` of the
/// folder after every operation (as the kernel asks for its attributes again): its `nlink`
/// (2 + sub-folders) always matches, and so does a listing every 250 entries.
#[test]
fn a_folder_filled_and_emptied_file_by_file_keeps_exact_counts() {
    let Some(m) = GameMount::new("anims/fx.gaf", &[], |_, bin| {
        std::fs::write(
            bin,
            tafs::formats::gaf::write(&tafs::sample::animated_gaf()).unwrap(),
        )
        .unwrap()
    }) else {
        return;
    };
    let out = sh(&format!(
        r#"python3 - '{}' <<'EOF'
import os, sys
root = sys.argv[1]
seq = sorted(e for e in os.listdir(root) if os.path.isdir(os.path.join(root, e)))[0]
d = os.path.join(root, seq)
base = os.listdir(d)
n = 2000

def check(what, entries, dirs):
    st = os.stat(d)
    assert st.st_nlink == 2 + dirs, (what, st.st_nlink, dirs)
    if entries % 250 == 0:
        listed = os.listdir(d)
        assert len(listed) == entries and len(set(listed)) == entries, (what, len(listed))

dirs0 = sum(os.path.isdir(os.path.join(d, e)) for e in base)
entries, dirs = len(base), dirs0
for i in range(n):
    if i % 500 == 7:
        os.mkdir(os.path.join(d, f"sub{{i}}"))
        dirs += 1
    else:
        open(os.path.join(d, f"note{{i}}.txt"), "w").close()
    entries += 1
    check(f"create {{i}}", entries, dirs)
    if i % 400 == 0:
        # a create of an existing name adds nothing
        open(os.path.join(d, f"note{{i}}.txt"), "w").close()
        check(f"again {{i}}", entries, dirs)
listed = os.listdir(d)
assert len(listed) == entries and len(set(listed)) == entries, (len(listed), entries)
for i in range(n):
    if i % 500 == 7:
        os.rmdir(os.path.join(d, f"sub{{i}}"))
        dirs -= 1
    else:
        os.unlink(os.path.join(d, f"note{{i}}.txt"))
    entries -= 1
    check(f"remove {{i}}", entries, dirs)
assert sorted(os.listdir(d)) == sorted(base)
print("ok", n)
EOF"#,
        m.asset().display()
    ));
    assert_eq!(out.trim(), "ok 2000");
}

/// A 100,000-member archive (one folder of 100,000 files, packed with `tafs hpi pack`):
/// `os.listdir` of its folder lists every member once; a second reader going through the
/// same listing with `telldir`/`seekdir` finds the same names at the same offsets; `ls -lR`
/// lists them all with their sizes. Each page used to list the folder again (O(n²)).
#[test]
fn a_100k_member_archive_lists_every_member_once_with_stable_offsets() {
    let n = 100_000;
    // (the default; the archive's directory, its layout and the listed inodes are not
    // counted in the cache: about 1 KiB a member, 150 MiB peak for these 100,000)
    let cache_mib = 256u64;
    let cache = format!("{cache_mib}M");
    let Some(m) = GameMount::new("big.ufo", &["--cache-size", &cache], |dir, bin| {
        let src = dir.join("src/data");
        std::fs::create_dir_all(&src).unwrap();
        for i in 0..n {
            std::fs::write(src.join(format!("m{i:06}.txt")), format!("member {i}\n")).unwrap();
        }
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_tafs"))
            .args(["hpi", "pack", "--method", "none", "--target"])
            .arg(bin)
            .arg(dir.join("src"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::remove_dir_all(dir.join("src")).unwrap();
    }) else {
        return;
    };
    let out = sh(&format!(
        r#"python3 - '{}' {n} <<'EOF'
import ctypes, os, sys
d, n = sys.argv[1], int(sys.argv[2])
want = {{f"m{{i:06d}}.txt" for i in range(n)}}
listed = os.listdir(d)
assert len(listed) == n and set(listed) == want, (len(listed), len(set(listed)))

# telldir/seekdir through libc: names at the offsets first seen stay there
libc = ctypes.CDLL(None, use_errno=True)
class Dirent(ctypes.Structure):
    _fields_ = [("d_ino", ctypes.c_uint64), ("d_off", ctypes.c_int64),
                ("d_reclen", ctypes.c_ushort), ("d_type", ctypes.c_ubyte),
                ("d_name", ctypes.c_char * 256)]
libc.opendir.restype = ctypes.c_void_p
libc.readdir.restype = ctypes.POINTER(Dirent)
libc.readdir.argtypes = [ctypes.c_void_p]
libc.telldir.restype = ctypes.c_long
libc.telldir.argtypes = [ctypes.c_void_p]
libc.seekdir.argtypes = [ctypes.c_void_p, ctypes.c_long]
libc.closedir.argtypes = [ctypes.c_void_p]
h = libc.opendir(d.encode())
assert h
marks, names = {{}}, []
while True:
    if len(names) % 9973 == 0:
        marks[len(names)] = libc.telldir(h)
    e = libc.readdir(h)
    if not e:
        break
    names.append(e.contents.d_name.decode())
real = [x for x in names if x not in (".", "..")]
assert len(real) == n and set(real) == want, (len(real), len(set(real)))
for at, pos in marks.items():
    libc.seekdir(h, pos)
    for k in range(5):
        e = libc.readdir(h)
        if not e:
            assert at + k == len(names), (at, k)
            break
        assert e.contents.d_name.decode() == names[at + k], (at, k)
libc.closedir(h)
print("ok", len(real), len(marks))
EOF"#,
        m.asset().join("data").display()
    ));
    assert!(out.starts_with("ok 100000"), "{out}");
    // `ls -lR`: readdirplus pages, every member once with its size
    let ls = sh(&format!("ls -lR '{}'", m.asset().display()));
    let members: Vec<&str> = ls.lines().filter(|l| l.ends_with(".txt")).collect();
    assert_eq!(members.len(), n);
    let uniq: std::collections::HashSet<&str> = members
        .iter()
        .filter_map(|l| l.rsplit(' ').next())
        .collect();
    assert_eq!(uniq.len(), n);
    assert!(
        ls.lines()
            .any(|l| l.ends_with(" m099999.txt") && l.contains(" 13 ")),
        "sizes shown"
    );
    let hwm = daemon_peak_kib(&m.mnt);
    println!(
        "daemon VmHWM {} MiB after listing 100,000 members",
        hwm / 1024
    );
    assert!(
        hwm <= (cache_mib + 64) * 1024,
        "daemon peak RSS {} MiB over --cache-size {cache_mib} MiB + 64 MiB",
        hwm / 1024
    );
}
