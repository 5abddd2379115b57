//! Folders and archives of any size cost O(1) per operation and O(n) per listing: a folder
//! of an asset directory keeps exact counts through thousands of creates and unlinks
//! (`src/fs/core/dircount.rs`), and a listing read page by page without a directory handle
//! is made once, its offsets stable. Real mounts driven by Python; the rates are printed by
//! `scripts/bench-dircount` and `scripts/bench-archive-listing`, not asserted here.

mod mount_common;

use mount_common::{sh, GameMount};

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
