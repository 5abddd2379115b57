//! The byte budget of decoded views: what a decode will hold is estimated from the binary's
//! headers before it starts ([`estimate`]), leased from one [`Budget`] shared by every
//! asset of the mount, and given back when the view is dropped ([`Leased`]). A decode that
//! alone needs more than the whole budget is refused at once; one that needs room held by
//! other views waits for them to be evicted or finish (at most [`WAIT`]).

use crate::formats::{gaf, pcx, Limits};
use crate::fs::shared::lock;
use crate::view::{AssetKind, Entry, View, ViewError};
use std::io::Write;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// Longest a decode waits for room in the budget before it answers "busy".
pub(crate) const WAIT: Duration = Duration::from_secs(30);

/// The smallest budget of decoded views, whatever `--cache-size` says (a few stock-sized
/// views).
pub(crate) const MIN_VIEWS: u64 = 16 << 20;

/// Bytes renders in flight may hold at once beyond their views (a frame PNG of the largest
/// frame, 4096², flattened; or one animation preview). A render holds nothing else while it
/// waits for room, so waiting cannot deadlock.
pub(crate) const RENDER_BUDGET: u64 = 48 << 20;

/// What the budgets of a `cache_size` hold in all: seven eighths of it. The last eighth is
/// room for what the allocator keeps of memory freed by the renders and evictions that
/// churn through the budgets: pages of its arenas partly in use, which `malloc_trim` cannot
/// give back. On a real install (corpus/ota, `ls -lR` then `tar` of the whole mount) that
/// was 40–60 MiB beside full budgets at 256 MiB, and the daemon's peak reached the cache
/// size + 66 MiB in one run of ten.
pub(crate) fn held_of(cache_size: u64) -> u64 {
    cache_size - cache_size / 8
}

/// The split of `half` (half of what the budgets hold, [`held_of`]) between generated
/// bytes kept and renders in flight: `(bytes, renders)`. From a half of 48 MiB on (a
/// `--cache-size` of 110 MiB), renders in flight are part of the cache size (half of the
/// half, at most [`RENDER_BUDGET`]), so the daemon's peak follows `--cache-size`; a
/// smaller cache keeps [`RENDER_BUDGET`] beside it (a stock frame or map must still
/// render).
pub(crate) fn renders_within(half: u64) -> (u64, u64) {
    if half < 48 << 20 {
        return (half, RENDER_BUDGET);
    }
    let renders = (half / 2).min(RENDER_BUDGET);
    (half - renders, renders)
}

/// Longest a decode waits for room beside the metadata held ([`Budget::for_views`]) before
/// it takes room from the whole budget.
const RESERVE_WAIT: Duration = Duration::from_secs(5);

/// Bytes of decoded views that may be held at once.
pub(crate) struct Budget {
    cap: u64,
    used: Mutex<u64>,
    freed: Condvar,
    /// The metadata to make room for ([`Budget::for_views`]).
    beside: Option<fn() -> u64>,
}

/// Why a lease was not granted.
#[derive(Debug)]
pub(crate) enum Refused {
    /// The decode alone needs more than the whole budget.
    TooLarge { need: u64, cap: u64 },
    /// No room freed up within [`WAIT`].
    Busy,
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::TooLarge { need, cap } => write!(
                f,
                "needs {} MiB, over the {} MiB budget (decoded views: half of --cache-size; renders: up to 48 MiB)",
                need.div_ceil(1 << 20),
                cap >> 20
            ),
            Refused::Busy => write!(f, "no room in the budget of decoded views"),
        }
    }
}

/// Makes the allocator give every buffer of 256 KiB or more back to the system when it is
/// freed (glibc otherwise raises that threshold after the first big buffer freed, and keeps
/// freed decoded frames in per-thread arenas: the daemon's resident memory would no longer
/// follow the budgets).
pub fn return_big_buffers() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets allocator parameters.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 256 << 10);
        libc::mallopt(libc::M_ARENA_MAX, 4);
    }
}

/// Bulk allocation work (files rendered, views dropped) since the start, see [`note_churn`].
static CHURN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// How often the allocator's free pages are given back while rendering goes on.
const TRIM_EVERY: Duration = Duration::from_millis(250);

/// Notes bulk allocation work (a file rendered: its view's scratch buffers, the PNG
/// encoder's, bytes evicted from the cache). glibc keeps the pages of freed chunks below
/// the mmap threshold in its arenas, so without help the daemon's resident memory would
/// grow past what the budgets hold by what its threads freed: a thread started at the first
/// call gives every whole free page of every arena back to the system (`malloc_trim`) at
/// most every [`TRIM_EVERY`] while such work goes on, and sleeps otherwise.
pub(crate) fn note_churn() {
    use std::sync::atomic::Ordering;
    CHURN.fetch_add(1, Ordering::Relaxed);
    static STARTED: std::sync::Once = std::sync::Once::new();
    STARTED.call_once(|| {
        let spawned = std::thread::Builder::new()
            .name("tafs-trim".into())
            .stack_size(64 << 10)
            .spawn(|| {
                let mut seen = 0;
                loop {
                    std::thread::sleep(TRIM_EVERY);
                    let now = CHURN.load(Ordering::Relaxed);
                    if now != seen {
                        seen = now;
                        give_back_free_pages();
                    }
                }
            });
        if let Err(e) = spawned {
            log::warn!("allocator trimming not started: {e}");
        }
    });
}

/// Gives the allocator's free pages back to the system.
pub(crate) fn give_back_free_pages() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free memory of the allocator to the system.
    unsafe {
        libc::malloc_trim(0);
    }
}

impl Budget {
    /// A budget of `cap` bytes.
    pub(crate) fn new(cap: u64) -> Arc<Budget> {
        Arc::new(Budget {
            cap,
            used: Mutex::new(0),
            freed: Condvar::new(),
            beside: None,
        })
    }

    /// A budget of `cap` bytes for decoded views, which also makes room for the metadata
    /// the file systems hold (inodes and layouts, [`crate::fs::shared::metadata_bytes`]):
    /// a lease waits for the views held and the metadata to fit in `cap` together (evicting
    /// views to make room), at most [`RESERVE_WAIT`]; then, or when nothing is held, the
    /// views alone fitting is enough. The metadata counted is at most three quarters of
    /// `cap`, so a quarter always stays for views. A real install holds about 50 MiB of
    /// metadata once listed: without this, the daemon's peak was that much over the budgets.
    pub(crate) fn for_views(cap: u64) -> Arc<Budget> {
        Self::beside(cap, crate::fs::shared::metadata_bytes)
    }

    /// A budget of `cap` bytes making room for `held()` bytes held outside it.
    fn beside(cap: u64, held: fn() -> u64) -> Arc<Budget> {
        Arc::new(Budget {
            cap,
            used: Mutex::new(0),
            freed: Condvar::new(),
            beside: Some(held),
        })
    }

    /// The metadata this budget makes room for now.
    fn reserve(&self) -> u64 {
        self.beside
            .map_or(0, |held| held().min(self.cap - self.cap / 4))
    }

    /// Whether `need` more bytes fit beside `used` (and the metadata, when `strict`).
    fn fits(&self, used: u64, need: u64, strict: bool) -> bool {
        let reserve = if strict { self.reserve() } else { 0 };
        used == 0 || used.saturating_add(need).saturating_add(reserve) <= self.cap
    }

    /// The bytes the budget holds at most.
    pub(crate) fn cap(&self) -> u64 {
        self.cap
    }

    /// Bytes leased right now.
    #[cfg(any(test, feature = "heap-stats"))]
    pub(crate) fn used(&self) -> u64 {
        *lock(&self.used)
    }

    /// Leases `need` bytes. While they are not free, `evict` is called to drop something
    /// (it returns false when there is nothing left to drop); then waits for leases to be
    /// given back, at most [`WAIT`].
    pub(crate) fn lease(
        self: &Arc<Self>,
        need: u64,
        evict: impl FnMut() -> bool,
    ) -> Result<Lease, Refused> {
        self.lease_within(need, evict, WAIT)
    }

    /// [`Budget::lease`] without waiting for leases to be given back: `Busy` at once when
    /// evicting leaves no room.
    pub(crate) fn try_lease(
        self: &Arc<Self>,
        need: u64,
        evict: impl FnMut() -> bool,
    ) -> Result<Lease, Refused> {
        self.lease_within(need, evict, Duration::ZERO)
    }

    fn lease_within(
        self: &Arc<Self>,
        need: u64,
        mut evict: impl FnMut() -> bool,
        wait: Duration,
    ) -> Result<Lease, Refused> {
        if need > self.cap {
            return Err(Refused::TooLarge {
                need,
                cap: self.cap,
            });
        }
        let start = Instant::now();
        let deadline = start + wait;
        let strict_until = start + wait.min(RESERVE_WAIT);
        let mut strict = self.beside.is_some();
        loop {
            {
                let mut used = lock(&self.used);
                if self.fits(*used, need, strict) {
                    *used += need;
                    return Ok(Lease {
                        budget: self.clone(),
                        n: need,
                    });
                }
            }
            if evict() {
                continue;
            }
            let used = lock(&self.used);
            let now = Instant::now();
            if strict && now >= strict_until {
                // room beside the metadata did not come: the views alone
                strict = false;
                continue;
            }
            if self.fits(*used, need, strict) {
                continue;
            }
            if now >= deadline {
                return Err(Refused::Busy);
            }
            // woken by any lease given back; evicting again is then worth a try
            let until = if strict { strict_until } else { deadline };
            let wait = until
                .saturating_duration_since(now)
                .min(Duration::from_millis(200));
            drop(self.freed.wait_timeout(used, wait));
        }
    }
}

/// Bytes of a [`Budget`] held until dropped.
pub(crate) struct Lease {
    budget: Arc<Budget>,
    n: u64,
}

impl Drop for Lease {
    fn drop(&mut self) {
        let mut used = lock(&self.budget.used);
        *used = used.saturating_sub(self.n);
        drop(used);
        self.budget.freed.notify_all();
    }
}

/// What decoding `bytes` as `kind` holds in memory, from the headers only: a GAF's decoded
/// pixels (two bytes each: index and opacity, one copy per reference) plus its bytes; a
/// PCX: four times its scan lines and its bytes;
/// other kinds, and a GAF whose headers do not walk (the decoder then refuses it, also
/// before decoding a pixel), twice their bytes (maps keep their tiles and attributes as
/// stored); a 3DO what it expands to ([`crate::formats::o3do::measure`]: every shared list
/// counted per use, OBJ text included) plus its preview's buffers.
pub(crate) fn estimate(kind: AssetKind, bytes: &[u8], limits: &Limits) -> u64 {
    let len = bytes.len() as u64;
    match kind {
        AssetKind::Gaf => gaf::decoded_pixels(bytes, limits).map_or(len.saturating_mul(2), |p| {
            p.saturating_mul(2).saturating_add(len)
        }),
        AssetKind::Model3d => {
            let lim = crate::formats::o3do::ModelLimits::default();
            crate::formats::o3do::measure(bytes, &lim).map_or(len.saturating_mul(2), |c| {
                c.expanded_bytes()
                    .saturating_add(len)
                    .saturating_add(crate::view::model3d::PREVIEW_BYTES)
            })
        }
        // from the header: the decode (scan lines, then the pixels and padding sorted from
        // them), the re-encoding that checks whether the file is canonical, and the view's
        // `metadata.json`, which holds padding and stored data as hex: four times the scan
        // lines and the bytes bound it
        AssetKind::Pcx => pcx::shape(bytes, limits).map_or(len.saturating_mul(2), |s| {
            s.decode_bytes.saturating_add(len).saturating_mul(2)
        }),
        _ => len.saturating_mul(2),
    }
}

/// The largest `.pal` decoded: a palette uses its first 1,024 bytes (what follows them is
/// kept to rebuild the file identically); 64 KiB is far beyond any real one.
pub(crate) const MAX_PAL_BYTES: u64 = 64 << 10;

/// Refuses a `len`-byte binary of `kind` from its size alone, before a byte of it is read
/// into memory: larger than the format can use ([`MAX_PAL_BYTES`]), or needing more than the
/// whole budget `cap` even at the least [`estimate`] can give for that size (its bytes for a
/// GAF, PCX or 3DO, whose estimates add what they decode; twice its bytes otherwise).
pub(crate) fn check_size(kind: AssetKind, len: u64, cap: u64) -> Result<(), String> {
    if kind == AssetKind::Pal && len > MAX_PAL_BYTES {
        return Err(format!(
            "a palette of {len} bytes: a .pal uses 1024, at most {MAX_PAL_BYTES} are read"
        ));
    }
    if kind == AssetKind::PalTable && len > 65_536 {
        return Err(format!(
            "a lookup table of {len} bytes: a table is 65,536 or 8,192 bytes"
        ));
    }
    let least = match kind {
        AssetKind::Gaf | AssetKind::Pcx | AssetKind::Model3d => len,
        AssetKind::Tnt | AssetKind::Pal | AssetKind::Cob | AssetKind::Fnt | AssetKind::PalTable => {
            len.saturating_mul(2)
        }
    };
    if least > cap {
        return Err(Refused::TooLarge { need: least, cap }.to_string());
    }
    Ok(())
}

/// A decoded view with the lease of the memory it holds (none yet, or given back: a view a
/// commit validated is leased once it replaces the binary; the version it replaced, kept
/// only to compare times with, is no longer counted, as a decode made for that is not).
pub(crate) struct Leased {
    view: Box<dyn View>,
    lease: Mutex<Option<Lease>>,
}

impl Leased {
    /// `view` holding `lease`.
    pub(crate) fn new(view: Box<dyn View>, lease: Option<Lease>) -> Leased {
        Leased {
            view,
            lease: Mutex::new(lease),
        }
    }

    /// The view now holds `lease` (one it held before is given back).
    pub(crate) fn set_lease(&self, lease: Lease) {
        *lock(&self.lease) = Some(lease);
    }
}

impl View for Leased {
    fn entries(&self) -> &[Entry] {
        self.view.entries()
    }
    fn render(&self, path: &str, out: &mut dyn Write) -> Result<(), ViewError> {
        self.view.render(path, out)
    }
    fn size_hint(&self, path: &str) -> Option<u64> {
        self.view.size_hint(path)
    }
    fn shallow(&self) -> Option<(&[Entry], Vec<&str>)> {
        self.view.shallow()
    }
    fn part_entries(&self, path: &str) -> Option<&[Entry]> {
        self.view.part_entries(path)
    }
    fn part_waits(&self, path: &str) -> bool {
        self.view.part_waits(path)
    }
    fn render_cost(&self, path: &str) -> u64 {
        self.view.render_cost(path)
    }
    fn render_vec(&self, path: &str) -> Result<Vec<u8>, ViewError> {
        self.view.render_vec(path)
    }
    fn gaf_model(&self) -> Option<&crate::formats::gaf::Gaf> {
        self.view.gaf_model()
    }
    fn tnt_model(&self) -> Option<crate::view::tnt::PackBase<'_>> {
        self.view.tnt_model()
    }
    fn base_bytes(&self) -> Option<&[u8]> {
        self.view.base_bytes()
    }
    fn tnt_view(&self) -> Option<&crate::view::tnt::TntView> {
        self.view.tnt_view()
    }
    fn keep_rendering(&self, path: &str, bytes: &Arc<Vec<u8>>) {
        self.view.keep_rendering(path, bytes)
    }
    fn unlease(&self) {
        drop(lock(&self.lease).take());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_are_part_of_a_big_cache_and_beside_a_small_one() {
        const M: u64 = 1 << 20;
        // --cache-size 128M: the budgets hold 112 MiB, 56 for views, 28 for generated
        // bytes, 28 for renders
        assert_eq!(held_of(128 * M), 112 * M);
        assert_eq!(renders_within(held_of(128 * M) / 2), (28 * M, 28 * M));
        // 256M: at most 48 MiB of renders
        assert_eq!(renders_within(held_of(256 * M) / 2), (64 * M, 48 * M));
        // 64M: the renders' own 48 MiB beside the cache
        assert_eq!(renders_within(held_of(64 * M) / 2), (28 * M, RENDER_BUDGET));
    }

    #[test]
    fn too_large_is_refused_at_once_and_room_is_given_back() {
        let b = Budget::new(100);
        assert!(matches!(
            b.lease(101, || false),
            Err(Refused::TooLarge {
                need: 101,
                cap: 100
            })
        ));
        let a = b.lease(60, || false).unwrap();
        assert_eq!(b.used(), 60);
        // evicting frees the first lease
        let mut held = Some(a);
        let c = b.lease(60, || held.take().is_some()).unwrap();
        assert_eq!(b.used(), 60);
        drop(c);
        assert_eq!(b.used(), 0);
    }

    #[test]
    fn sizes_are_refused_before_reading() {
        assert!(check_size(AssetKind::Pal, 1024, 1 << 20).is_ok());
        assert!(check_size(AssetKind::Pal, MAX_PAL_BYTES + 1, 1 << 30).is_err());
        // twice the bytes of a map over the budget
        assert!(check_size(AssetKind::Tnt, 600, 1000).is_err());
        assert!(check_size(AssetKind::Tnt, 500, 1000).is_ok());
        assert!(check_size(AssetKind::Gaf, 1001, 1000).is_err());
    }

    #[test]
    fn a_lease_tried_without_waiting_is_refused_at_once_and_granted_after_eviction() {
        let b = Budget::new(100);
        let held = b.lease(80, || false).unwrap();
        let t = Instant::now();
        assert!(matches!(b.try_lease(50, || false), Err(Refused::Busy)));
        assert!(t.elapsed() < Duration::from_secs(1), "did not wait");
        let mut held = Some(held);
        let got = b.try_lease(50, || held.take().is_some()).unwrap();
        assert_eq!(b.used(), 50);
        drop(got);
        assert_eq!(b.used(), 0);
    }

    #[test]
    fn a_waiting_lease_gets_room_given_back_by_another_thread() {
        let b = Budget::new(100);
        let a = b.lease(80, || false).unwrap();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            drop(a);
        });
        let c = b.lease(50, || false).unwrap();
        t.join().unwrap();
        assert_eq!(b.used(), 50);
        drop(c);
    }

    #[test]
    fn a_budget_of_views_makes_room_for_the_metadata_held_and_never_refuses_for_it() {
        static HELD: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(40);
        fn held() -> u64 {
            HELD.load(std::sync::atomic::Ordering::Relaxed)
        }
        let b = Budget::beside(100, held);
        let a = b.lease(30, || false).unwrap();
        // 30 + 40 + 40 > 100: the view held is evicted first
        let mut first = Some(a);
        let c = b.lease(40, || first.take().is_some()).unwrap();
        assert!(first.is_none(), "evicted to make room beside the metadata");
        assert_eq!(b.used(), 40);
        // nothing to evict: granted at once when tried, as the views alone fit
        let d = b.try_lease(30, || false).unwrap();
        assert_eq!(b.used(), 70);
        drop(d);
        // a lease waits for room beside the metadata while views are given back
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            drop(c);
        });
        let started = Instant::now();
        let e = b.lease(50, || false).unwrap();
        assert!(started.elapsed() >= Duration::from_millis(90), "waited");
        assert!(started.elapsed() < RESERVE_WAIT, "got the room given back");
        t.join().unwrap();
        // alone, a lease fits whatever the metadata; at most three quarters are counted
        drop(e);
        HELD.store(1 << 40, std::sync::atomic::Ordering::Relaxed);
        let f = b.lease(90, || false).unwrap();
        drop(f);
        let g = b.lease(20, || false).unwrap();
        assert!(b.try_lease(10, || false).is_ok());
        drop(g);
        // a plain budget counts no metadata
        let plain = Budget::new(100);
        let h = plain.lease(60, || false).unwrap();
        let mut evicted = false;
        let i = plain
            .lease(40, || std::mem::replace(&mut evicted, true))
            .unwrap();
        assert!(!evicted);
        drop((h, i));
    }
}
