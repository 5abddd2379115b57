//! Memory is bounded in bytes: hostile GAFs (a big RLE frame referenced many times, a
//! composite reference chain, a tiny file whose frame header is shared by many entries)
//! under a real mount with many parallel readers; the daemon's peak RSS (`VmHWM`) stays at
//! or below `--cache-size` + 64 MiB, and what is over budget is refused early.

mod mount_common;

use mount_common::{fuse_available, mount};
use std::path::{Path, PathBuf};
use std::time::Instant;

fn put(buf: &mut Vec<u8>, at: usize, bytes: &[u8]) {
    if buf.len() < at + bytes.len() {
        buf.resize(at + bytes.len(), 0);
    }
    buf[at..at + bytes.len()].copy_from_slice(bytes);
}

fn frame_header(w: u16, h: u16, comp: u8, layers: u8, data: u32) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(&w.to_le_bytes());
    v.extend_from_slice(&h.to_le_bytes());
    v.extend_from_slice(&0i16.to_le_bytes());
    v.extend_from_slice(&0i16.to_le_bytes());
    v.extend_from_slice(&[9, comp, layers, 0]);
    v.extend_from_slice(&0u32.to_le_bytes());
    v.extend_from_slice(&data.to_le_bytes());
    v.extend_from_slice(&0u32.to_le_bytes());
    v
}

fn seq_header(items: &[u32]) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(&(items.len() as u16).to_le_bytes());
    v.extend_from_slice(&1u16.to_le_bytes());
    v.extend_from_slice(&0u32.to_le_bytes());
    let mut n = [0u8; 32];
    n[..4].copy_from_slice(b"bomb");
    v.extend_from_slice(&n);
    for p in items {
        v.extend_from_slice(&p.to_le_bytes());
        v.extend_from_slice(&1u32.to_le_bytes());
    }
    v
}

fn gaf_head(f: &mut Vec<u8>) {
    put(f, 0, &0x0001_0100u32.to_le_bytes());
    put(f, 4, &1u32.to_le_bytes());
    put(f, 12, &16u32.to_le_bytes());
}

/// One `side`² RLE frame (every row: repeats of 64 opaque pixels) referenced `refs` times.
pub fn shared_rle(side: u16, refs: usize) -> Vec<u8> {
    let mut f = Vec::new();
    gaf_head(&mut f);
    let seq = seq_header(&vec![0; refs]);
    let header = 16 + seq.len() as u32;
    put(&mut f, 16, &seq_header(&vec![header; refs]));
    put(
        &mut f,
        header as usize,
        &frame_header(side, side, 1, 0, header + 24),
    );
    let mut row = Vec::new();
    for _ in 0..usize::from(side) / 64 {
        row.extend_from_slice(&[(63 << 2) | 2, 7]);
    }
    let mut data = Vec::new();
    for _ in 0..side {
        data.extend_from_slice(&(row.len() as u16).to_le_bytes());
        data.extend_from_slice(&row);
    }
    put(&mut f, header as usize + 24, &data);
    f
}

/// Composites nested 16 deep, each with 255 layers that all point at the next one: a
/// reference chain of 255^16 frames in a few KB.
pub fn composite_chain() -> Vec<u8> {
    let mut f = Vec::new();
    gaf_head(&mut f);
    let first = 16 + seq_header(&[0]).len() as u32;
    put(&mut f, 16, &seq_header(&[first]));
    let level = 24 + 255 * 4;
    for d in 0..16u32 {
        let at = first + d * level;
        let next = at + level;
        put(&mut f, at as usize, &frame_header(64, 64, 0, 255, at + 24));
        let table: Vec<u8> = (0..255).flat_map(|_| next.to_le_bytes()).collect();
        put(&mut f, at as usize + 24, &table);
    }
    let leaf = first + 16 * level;
    put(
        &mut f,
        leaf as usize,
        &frame_header(64, 64, 0, 0, leaf + 24),
    );
    put(&mut f, leaf as usize + 24, &[3; 64 * 64]);
    f
}

/// About a kilobyte: 100 frame-list items reach one composite whose 200 layers all reach
/// one 128² RLE frame (rows of zero commands).
pub fn tiny_shared() -> Vec<u8> {
    let mut f = Vec::new();
    gaf_head(&mut f);
    let comp = 16 + seq_header(&[0; 100]).len() as u32;
    put(&mut f, 16, &seq_header(&[comp; 100]));
    let leaf = comp + 24 + 200 * 4;
    put(
        &mut f,
        comp as usize,
        &frame_header(128, 128, 0, 200, comp + 24),
    );
    let table: Vec<u8> = (0..200).flat_map(|_| leaf.to_le_bytes()).collect();
    put(&mut f, comp as usize + 24, &table);
    put(
        &mut f,
        leaf as usize,
        &frame_header(128, 128, 1, 0, leaf + 24),
    );
    put(&mut f, leaf as usize + 24, &[0; 256]);
    f
}

/// The daemon serving `mnt` (the `tafs mount` process whose command line names it).
fn daemon_pid(mnt: &Path) -> u32 {
    let want = mnt.to_str().unwrap();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let args: Vec<&[u8]> = cmd.split(|&b| b == 0).collect();
        if args.iter().any(|a| *a == b"mount") && args.contains(&want.as_bytes()) {
            return pid;
        }
    }
    panic!("no daemon serves {want}");
}

/// Peak resident memory of `pid` in KiB.
fn vm_hwm_kib(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    s.lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

fn files_under(p: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(p) else { return };
    for e in rd.flatten() {
        let path = e.path();
        match e.file_type() {
            Ok(t) if t.is_dir() => files_under(&path, out),
            Ok(_) => out.push(path),
            Err(_) => {}
        }
    }
}

/// Runs `args` with stdout ignored: whether it succeeded, its stderr and its peak resident
/// memory in KiB. Started by a small Python process: a child spawned by the test process
/// itself (vfork, then exec) counts the test process's own peak in its `ru_maxrss`, and
/// that grows with the other tests running at once; a child forked by Python counts
/// Python's (about 10 MiB) at most.
fn run_measured(args: &[&std::ffi::OsStr]) -> (bool, String, u64) {
    let o = std::process::Command::new("python3")
        .arg("-c")
        .arg(
            "import resource, subprocess, sys\n\
             r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)\n\
             sys.stderr.buffer.write(r.stderr)\n\
             print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n\
             sys.exit(r.returncode)\n",
        )
        .args(args)
        .output()
        .unwrap();
    let kib = String::from_utf8_lossy(&o.stdout).trim().parse().unwrap();
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
        kib,
    )
}

#[test]
fn hostile_gafs_are_refused_early_by_the_cli() {
    let mut peak = 0;
    for (name, data) in [
        ("shared.gaf", shared_rle(4096, 64)),
        ("chain.gaf", composite_chain()),
        ("tiny.gaf", tiny_shared()),
    ] {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join(name);
        std::fs::write(&p, &data).unwrap();
        let start = Instant::now();
        let (ok, err, kib) = run_measured(&[
            env!("CARGO_BIN_EXE_tafs").as_ref(),
            "gaf".as_ref(),
            "list".as_ref(),
            p.as_os_str(),
        ]);
        let took = start.elapsed();
        peak = peak.max(kib);
        assert!(!ok, "{name} ({} bytes) listed", data.len());
        assert!(
            err.contains("more than"),
            "{name}: refused for its budget: {err}"
        );
        assert!(took.as_secs() < 5, "{name}: refused after {took:?}");
    }
    let mib = peak / 1024;
    println!("gaf list of the hostile GAFs peaked at {mib} MiB");
    assert!(mib < 100, "gaf list peaked at {mib} MiB");
}

#[test]
fn daemon_memory_stays_within_the_cache_size_under_hostile_gafs_and_200_readers() {
    if !fuse_available() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let game = t.path().join("game");
    std::fs::create_dir_all(game.join("anims")).unwrap();
    // each within the per-file limits (2 × 2048² = 8 Mi pixels = 16 MiB decoded), 12 in one
    // folder decoded by the listing at once
    for i in 0..12 {
        std::fs::write(
            game.join(format!("anims/big{i:02}.gaf")),
            shared_rle(2048, 2),
        )
        .unwrap();
    }
    // over the budget of decoded views alone: refused before decoding
    std::fs::write(game.join("anims/over.gaf"), shared_rle(4096, 4)).unwrap();
    // over the per-file limits
    std::fs::write(game.join("anims/bomb.gaf"), shared_rle(4096, 64)).unwrap();
    std::fs::write(game.join("anims/chain.gaf"), composite_chain()).unwrap();
    std::fs::write(game.join("anims/tiny.gaf"), tiny_shared()).unwrap();
    let mnt = t.path().join("mnt");
    let cache_mib = 64u64;
    let m = mount(&game, &mnt, &["--cache-size", &format!("{cache_mib}M")]);
    let pid = daemon_pid(&m.mnt);
    let base = vm_hwm_kib(pid);

    let anims = m.mnt.join("anims");
    let start = Instant::now();
    let mut kinds = std::collections::BTreeMap::new();
    for e in std::fs::read_dir(&anims).unwrap() {
        let e = e.unwrap();
        let dir = e.file_type().unwrap().is_dir();
        kinds.insert(e.file_name().to_string_lossy().into_owned(), dir);
    }
    let listed = start.elapsed();
    for i in 0..12 {
        assert_eq!(
            kinds.get(&format!("big{i:02}.gaf")),
            Some(&true),
            "{kinds:?}"
        );
    }
    for name in ["over.gaf", "bomb.gaf", "chain.gaf", "tiny.gaf"] {
        assert_eq!(
            kinds.get(name),
            Some(&false),
            "{name} is refused: {kinds:?}"
        );
    }
    let mut files = Vec::new();
    files_under(&anims, &mut files);
    assert!(files.len() > 12 * 4, "{files:?}");
    // 200 parallel readers over every file
    std::thread::scope(|s| {
        for r in 0..200 {
            let files = &files;
            s.spawn(move || {
                for k in 0..files.len() {
                    let p = &files[(k + r * 7) % files.len()];
                    // EAGAIN (no room right now) is allowed; anything else is not
                    if let Err(e) = std::fs::read(p) {
                        assert_eq!(e.raw_os_error(), Some(libc::EAGAIN), "{p:?}: {e}");
                    }
                }
            });
        }
    });
    // a frame really renders: 2048² PNG
    let png = std::fs::read(anims.join("big00.gaf/bomb/0.png")).unwrap();
    assert_eq!(&png[1..4], b"PNG");
    assert_eq!(u32::from_be_bytes(png[16..20].try_into().unwrap()), 2048);
    let hwm = vm_hwm_kib(pid);
    println!(
        "daemon VmHWM: {} MiB after mounting, {} MiB after listing ({listed:?}) and 200 readers",
        base / 1024,
        hwm / 1024
    );
    assert!(
        hwm <= (cache_mib + 64) * 1024,
        "daemon peak RSS {} MiB over --cache-size {cache_mib} MiB + 64 MiB",
        hwm / 1024
    );
}

/// `.pal` files padded to `len` bytes (sparse) after a real 1,024-byte palette, and one
/// real palette, in `game/palettes`.
fn padded_palettes(game: &Path, len: u64) {
    let dir = game.join("palettes");
    std::fs::create_dir_all(&dir).unwrap();
    let pal = tafs::formats::palette::TA_PALETTE_BYTES;
    std::fs::write(dir.join("real.pal"), pal).unwrap();
    for i in 0..4 {
        let p = dir.join(format!("big{i}.pal"));
        std::fs::write(&p, pal).unwrap();
        std::fs::File::options()
            .write(true)
            .open(&p)
            .unwrap()
            .set_len(len)
            .unwrap();
    }
}

/// `ls -l` of `dir`: each name and whether it is a folder.
fn kinds_in(dir: &Path) -> std::collections::BTreeMap<String, bool> {
    let mut kinds = std::collections::BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let m = std::fs::metadata(e.path()).unwrap();
        kinds.insert(e.file_name().to_string_lossy().into_owned(), m.is_dir());
    }
    kinds
}

#[test]
fn padded_palettes_are_refused_from_their_size_before_they_are_read() {
    if !fuse_available() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let game = t.path().join("game");
    padded_palettes(&game, 1000 << 20);
    let cache_mib = 64u64;
    for (i, merged) in [false, true].into_iter().enumerate() {
        let mnt = t.path().join(format!("mnt{i}"));
        let cache = format!("{cache_mib}M");
        let mut args = vec!["--cache-size", cache.as_str()];
        if merged {
            args.push("--merged");
        }
        let m = mount(&game, &mnt, &args);
        let pid = daemon_pid(&m.mnt);
        let kinds = kinds_in(&m.mnt.join("palettes"));
        assert_eq!(kinds.get("real.pal"), Some(&true), "{kinds:?}");
        for n in 0..4 {
            let name = format!("big{n}.pal");
            assert_eq!(kinds.get(&name), Some(&false), "{name}: {kinds:?}");
        }
        let hwm = vm_hwm_kib(pid);
        println!(
            "merged {merged}: daemon VmHWM {} MiB after ls -l of four 1000 MiB palettes",
            hwm / 1024
        );
        assert!(
            hwm <= (cache_mib + 64) * 1024,
            "daemon peak RSS {} MiB over --cache-size {cache_mib} MiB + 64 MiB",
            hwm / 1024
        );
    }
}

/// A 4096×4096 paletted RLE PCX of runs of 32 pixels (about 1 MiB; 16 MiB of pixels).
fn big_rle_pcx(seed: u8) -> Vec<u8> {
    use tafs::formats::pcx::{self, Pcx, PcxKind};
    let side = 4096usize;
    let mut pixels = vec![0u8; side * side];
    for (y, row) in pixels.chunks_exact_mut(side).enumerate() {
        for (x, p) in row.iter_mut().enumerate() {
            *p = ((x / 32) as u8 ^ (y as u8)).wrapping_add(seed) & 0x7F;
        }
    }
    let pal = tafs::formats::palette::Palette::ta();
    pcx::write(&Pcx::new(
        PcxKind::Indexed8,
        side as u32,
        side as u32,
        pixels,
        Some(pal),
    ))
    .unwrap()
}

/// A 4096×4096 paletted PCX with 16,384 bytes per line (64 MiB of scan lines, 48 MiB of
/// them padding, the most the limits let through), all runs of 63 zeros: 2.1 MB.
fn padded_rle_pcx() -> Vec<u8> {
    let mut f = vec![0u8; 128];
    f[..4].copy_from_slice(&[0x0A, 5, 1, 8]);
    f[8..10].copy_from_slice(&4095u16.to_le_bytes());
    f[10..12].copy_from_slice(&4095u16.to_le_bytes());
    f[12..14].copy_from_slice(&72u16.to_le_bytes());
    f[14..16].copy_from_slice(&72u16.to_le_bytes());
    f[65] = 1;
    f[66..68].copy_from_slice(&16384u16.to_le_bytes());
    f[68..70].copy_from_slice(&1u16.to_le_bytes());
    let mut left = 16384usize * 4096;
    while left > 0 {
        let n = left.min(63);
        f.extend_from_slice(&[0xC0 | n as u8, 0]);
        left -= n;
    }
    f.push(0x0C);
    f.extend_from_slice(&tafs::formats::palette::Palette::ta().rgb_bytes());
    f
}

/// `ls -l` of each of `dirs` at once, one thread each (a listing of the folder holding
/// them would decode them at most as many at a time as there are cores): the number of
/// files seen.
fn list_at_once(dirs: &[PathBuf]) -> usize {
    std::thread::scope(|s| {
        let each: Vec<_> = dirs
            .iter()
            .map(|d| {
                s.spawn(move || {
                    let mut files = Vec::new();
                    files_under(d, &mut files);
                    for f in &files {
                        let _ = std::fs::metadata(f);
                    }
                    files.len()
                })
            })
            .collect();
        each.into_iter().map(|h| h.join().unwrap()).sum()
    })
}

#[test]
fn big_pictures_stay_within_the_cache_size_loose_and_in_an_archive() {
    if !fuse_available() {
        return;
    }
    use tafs::formats::hpi;
    let t = tempfile::tempdir().unwrap();
    let game = t.path().join("game");
    std::fs::create_dir_all(game.join("pics")).unwrap();
    let padded = padded_rle_pcx();
    let plain = big_rle_pcx(0);
    let mut members = vec![hpi::Node::file(b"plain.pcx".to_vec(), plain.clone())];
    for i in 0..12 {
        std::fs::write(game.join(format!("pics/p{i:02}.pcx")), &padded).unwrap();
    }
    for i in 0..6 {
        members.push(hpi::Node::file(
            format!("p{i}.pcx").into_bytes(),
            padded.clone(),
        ));
    }
    std::fs::write(game.join("pics/plain.pcx"), &plain).unwrap();
    let ufo = hpi::write(
        &[hpi::Node::dir(b"art".to_vec(), members)],
        &hpi::WriteOptions::v1(),
    )
    .unwrap();
    std::fs::write(game.join("z.ufo"), &ufo).unwrap();
    // decoded views: 80 MiB, room for one plain 4096² picture (66 MiB)
    let cache_mib = 160u64;
    for (i, merged) in [false, true].into_iter().enumerate() {
        let mnt = t.path().join(format!("mnt{i}"));
        let cache = format!("{cache_mib}M");
        let mut args = vec!["--cache-size", cache.as_str()];
        if merged {
            args.push("--merged");
        }
        let m = mount(&game, &mnt, &args);
        let pid = daemon_pid(&m.mnt);
        // (the members as the normal mount shows them, in the archive's folder, are left
        // out: an archive view still decodes a member over the budget for the request)
        let mut dirs: Vec<PathBuf> = (0..12)
            .map(|i| m.mnt.join(format!("pics/p{i:02}.pcx")))
            .collect();
        if merged {
            dirs.extend((0..6).map(|i| m.mnt.join(format!("art/p{i}.pcx"))));
        }
        let start = Instant::now();
        list_at_once(&dirs);
        let took = start.elapsed();
        // refused from their headers (plain files); plain pictures are shown as pictures
        for d in &dirs {
            assert!(!d.is_dir(), "{d:?}");
        }
        let mut plain = vec![m.mnt.join("pics/plain.pcx")];
        if merged {
            plain.push(m.mnt.join("art/plain.pcx"));
        }
        for d in &plain {
            assert!(d.join("image.png").is_file(), "{d:?}");
        }
        let hwm = vm_hwm_kib(pid);
        println!(
            "merged {merged}: ls -l of the padded 4096² PCX at once in {took:?}, then of \
             the plain ones: daemon VmHWM {} MiB",
            hwm / 1024
        );
        assert!(
            hwm <= (cache_mib + 64) * 1024,
            "daemon peak RSS {} MiB over --cache-size {cache_mib} MiB + 64 MiB",
            hwm / 1024
        );
    }
}

/// A 4096×4096 paletted RLE PCX written by hand: every line runs of 16 pixels of
/// `(x / 16) ^ y + seed` (2 bytes a run: 2.1 MB; 16 MiB of pixels).
fn striped_pcx(seed: u8) -> Vec<u8> {
    let side = 4096usize;
    let mut f = vec![0u8; 128];
    f[..4].copy_from_slice(&[0x0A, 5, 1, 8]);
    f[8..10].copy_from_slice(&(side as u16 - 1).to_le_bytes());
    f[10..12].copy_from_slice(&(side as u16 - 1).to_le_bytes());
    f[12..14].copy_from_slice(&72u16.to_le_bytes());
    f[14..16].copy_from_slice(&72u16.to_le_bytes());
    f[65] = 1;
    f[66..68].copy_from_slice(&(side as u16).to_le_bytes());
    f[68..70].copy_from_slice(&1u16.to_le_bytes());
    for y in 0..side {
        for run in 0..side / 16 {
            f.extend_from_slice(&[0xC0 | 16, ((run ^ y) as u8).wrapping_add(seed)]);
        }
    }
    f.push(0x0C);
    f.extend_from_slice(&tafs::formats::palette::Palette::ta().rgb_bytes());
    f
}

/// Reads `p`, trying again while the daemon answers EAGAIN (no room right now), for at
/// most two minutes.
fn read_when_room(p: &Path) -> Vec<u8> {
    let start = Instant::now();
    loop {
        match std::fs::read(p) {
            Ok(b) => return b,
            Err(e) if e.raw_os_error() == Some(libc::EAGAIN) && start.elapsed().as_secs() < 120 => {
                std::thread::sleep(std::time::Duration::from_millis(200))
            }
            Err(e) => panic!("{p:?}: {e}"),
        }
    }
}

#[test]
fn big_pictures_inside_an_archives_folder_are_decoded_within_the_cache_size() {
    if !fuse_available() {
        return;
    }
    use tafs::formats::hpi;
    let t = tempfile::tempdir().unwrap();
    let game = t.path().join("game");
    let refs = t.path().join("ref");
    std::fs::create_dir_all(&game).unwrap();
    std::fs::create_dir_all(&refs).unwrap();
    let mut members = Vec::new();
    for i in 0..12u8 {
        let pcx = striped_pcx(i * 7);
        assert!((2_000_000..2_300_000).contains(&pcx.len()), "{}", pcx.len());
        std::fs::write(refs.join(format!("p{i:02}.pcx")), &pcx).unwrap();
        // one folder each: the kernel looks up names of one folder one at a time
        members.push(hpi::Node::dir(
            format!("d{i:02}").into_bytes(),
            vec![hpi::Node::file(format!("p{i:02}.pcx").into_bytes(), pcx)],
        ));
    }
    let hpi = hpi::write(
        &[hpi::Node::dir(b"pics".to_vec(), members)],
        &hpi::WriteOptions::v1(),
    )
    .unwrap();
    std::fs::write(game.join("z.hpi"), &hpi).unwrap();
    // decoded views: 80 MiB, room for one of these pictures (66 MiB) at a time
    let cache_mib = 160u64;
    let mnt = t.path().join("mnt");
    // a thread for each request: every member may be asked for at once
    let m = mount(
        &game,
        &mnt,
        &["--cache-size", &format!("{cache_mib}M"), "--threads", "16"],
    );
    let pid = daemon_pid(&m.mnt);
    let pics = m.mnt.join("z.hpi/pics");
    let pngs: Vec<PathBuf> = (0..12)
        .map(|i| pics.join(format!("d{i:02}/p{i:02}.pcx/image.png")))
        .collect();
    // `ls -lR` of the archive's folder and every picture read at once; no room right now
    // (EAGAIN) is the only failure allowed
    let start = Instant::now();
    let read = std::thread::scope(|s| {
        let ls = s.spawn(|| {
            std::process::Command::new("ls")
                .arg("-lR")
                .arg(m.mnt.join("z.hpi"))
                .output()
                .unwrap()
        });
        let readers: Vec<_> = pngs
            .iter()
            .map(|p| {
                s.spawn(move || match std::fs::read(p) {
                    Ok(b) => Some(b.len()),
                    Err(e) => {
                        assert_eq!(e.raw_os_error(), Some(libc::EAGAIN), "{p:?}: {e}");
                        None
                    }
                })
            })
            .collect();
        let ls = ls.join().unwrap();
        let err = String::from_utf8_lossy(&ls.stderr);
        for line in err.lines() {
            assert!(line.contains("temporarily unavailable"), "ls -lR: {err}");
        }
        readers
            .into_iter()
            .filter_map(|h| h.join().unwrap())
            .count()
    });
    let took = start.elapsed();
    let hwm = vm_hwm_kib(pid);
    println!(
        "ls -lR and 12 readers of 4096² PCX members in {took:?} ({read} of 12 read at once, the others \
         EAGAIN): daemon VmHWM {} MiB",
        hwm / 1024
    );
    assert!(
        hwm <= (cache_mib + 64) * 1024,
        "daemon peak RSS {} MiB over --cache-size {cache_mib} MiB + 64 MiB",
        hwm / 1024
    );
    // after the pressure every member is a folder whose picture is the right image
    // (compared by Pillow with the PCX it was made from)
    let out = t.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    for (i, p) in pngs.iter().enumerate() {
        assert!(p.parent().unwrap().is_dir(), "{p:?}");
        std::fs::write(out.join(format!("p{i:02}.png")), read_when_room(p)).unwrap();
    }
    let check = r#"
import sys
from PIL import Image
Image.MAX_IMAGE_PIXELS = None
ref, out = sys.argv[1], sys.argv[2]
for i in range(12):
    a = Image.open(f"{ref}/p{i:02}.pcx")
    b = Image.open(f"{out}/p{i:02}.png")
    assert a.size == b.size == (4096, 4096), (i, a.size, b.size)
    assert a.convert("RGB").tobytes() == b.convert("RGB").tobytes(), i
print("ok", 12)
"#;
    let o = std::process::Command::new("python3")
        .args(["-c", check])
        .arg(&refs)
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        o.status.success() && String::from_utf8_lossy(&o.stdout).starts_with("ok 12"),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let hwm = vm_hwm_kib(pid);
    assert!(
        hwm <= (cache_mib + 64) * 1024,
        "daemon peak RSS {} MiB after reading every picture",
        hwm / 1024
    );
}
