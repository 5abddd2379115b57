//! A least-recently-used cache of generated file bytes, bounded in bytes, that makes each
//! missing item once: concurrent requests for the same item wait for one maker
//! ([`ByteCache::get_or_make`], single-flight).

use crate::fs::shared::lock;
use lru::LruCache;
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Condvar, Mutex};

/// Bytes of generated files keyed by `K`; the total stays at or below the budget (one
/// item larger than the budget is returned to the caller but not kept).
pub(crate) struct ByteCache<K: Hash + Eq> {
    inner: Mutex<Inner<K>>,
    budget: u64,
    /// Items being made right now, and what their makers gave.
    flights: Mutex<HashMap<K, Arc<Flight>>>,
}

/// One item being made: waiters sleep on `done` until the maker sets `result`.
#[derive(Default)]
struct Flight {
    /// `None` while making; then the bytes, or `Some(None)` when making failed.
    result: Mutex<Option<Option<Arc<Vec<u8>>>>>,
    done: Condvar,
}

/// Bytes an item holds: its allocation, not only its length.
fn held(v: &Arc<Vec<u8>>) -> u64 {
    v.capacity() as u64
}

/// Ends a flight however its maker returns (also when it panics): waiters wake up.
struct Landing<'a, K: Hash + Eq> {
    flights: &'a Mutex<HashMap<K, Arc<Flight>>>,
    key: Option<K>,
    flight: Arc<Flight>,
    result: Option<Arc<Vec<u8>>>,
}

impl<K: Hash + Eq> Drop for Landing<'_, K> {
    fn drop(&mut self) {
        if let Some(k) = self.key.take() {
            lock(self.flights).remove(&k);
        }
        *lock(&self.flight.result) = Some(self.result.take());
        self.flight.done.notify_all();
    }
}

struct Inner<K: Hash + Eq> {
    lru: LruCache<K, Arc<Vec<u8>>>,
    total: u64,
}

impl<K: Hash + Eq> ByteCache<K> {
    pub(crate) fn new(budget: u64) -> Self {
        ByteCache {
            inner: Mutex::new(Inner {
                lru: LruCache::unbounded(),
                total: 0,
            }),
            budget,
            flights: Mutex::new(HashMap::new()),
        }
    }

    /// The item `k`, made by `make` if it is not cached. While one caller makes it, others
    /// asking for the same `k` wait and get its bytes (if making fails, each of them tries
    /// in turn and gets its own error).
    pub(crate) fn get_or_make<E>(
        &self,
        k: &K,
        make: impl FnOnce() -> Result<Vec<u8>, E>,
    ) -> Result<Arc<Vec<u8>>, E>
    where
        K: Clone,
    {
        let flight = loop {
            if let Some(b) = self.get(k) {
                return Ok(b);
            }
            let (flight, mine) = {
                let mut f = lock(&self.flights);
                match f.get(k) {
                    Some(fl) => (fl.clone(), false),
                    None => {
                        let fl = Arc::new(Flight::default());
                        f.insert(k.clone(), fl.clone());
                        (fl, true)
                    }
                }
            };
            if mine {
                break flight;
            }
            let mut r = lock(&flight.result);
            while r.is_none() {
                r = flight.done.wait(r).unwrap_or_else(|p| p.into_inner());
            }
            if let Some(Some(b)) = r.as_ref() {
                return Ok(b.clone());
            }
            // the maker failed: try ourselves
        };
        let mut landing = Landing {
            flights: &self.flights,
            key: Some(k.clone()),
            flight,
            result: None,
        };
        // the room a rendering grew into (up to twice its bytes) is given back before it is
        // kept: the budget counts what is held
        let mut made = make()?;
        made.shrink_to_fit();
        let bytes = Arc::new(made);
        self.insert(k.clone(), bytes.clone());
        landing.result = Some(bytes.clone());
        Ok(bytes)
    }

    pub(crate) fn get(&self, k: &K) -> Option<Arc<Vec<u8>>> {
        let mut g = lock(&self.inner);
        g.lru.get(k).cloned()
    }

    pub(crate) fn insert(&self, k: K, v: Arc<Vec<u8>>) {
        let len = held(&v);
        if len > self.budget {
            return;
        }
        let mut g = lock(&self.inner);
        if let Some(old) = g.lru.put(k, v) {
            g.total -= held(&old);
        }
        g.total += len;
        while g.total > self.budget {
            match g.lru.pop_lru() {
                Some((_, old)) => g.total -= held(&old),
                None => break,
            }
        }
    }

    /// Drops every entry for which `f` is true.
    pub(crate) fn retain(&self, mut f: impl FnMut(&K) -> bool) {
        let mut g = lock(&self.inner);
        if !g.lru.iter().any(|(k, _)| !f(k)) {
            return;
        }
        // LruCache has no retain: rebuild without the dropped entries, oldest first.
        let mut items: Vec<(K, Arc<Vec<u8>>)> = Vec::with_capacity(g.lru.len());
        while let Some(kv) = g.lru.pop_lru() {
            items.push(kv);
        }
        g.total = 0;
        for (k, v) in items {
            if f(&k) {
                g.total += held(&v);
                g.lru.put(k, v);
            }
        }
    }

    /// Bytes held (the items' allocations).
    pub(crate) fn total(&self) -> u64 {
        lock(&self.inner).total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_counts_allocations_and_made_items_give_back_their_spare_room() {
        let c = ByteCache::new(1 << 20);
        let mut v = Vec::with_capacity(4096);
        v.extend_from_slice(&[1, 2, 3]);
        c.insert(1, Arc::new(v));
        assert!(c.total() >= 4096, "{}", c.total());
        let made = c
            .get_or_make(&2, || {
                let mut v = Vec::with_capacity(8192);
                v.push(9);
                Ok::<_, ()>(v)
            })
            .unwrap();
        assert!(made.capacity() < 8192, "{}", made.capacity());
    }

    #[test]
    fn stays_within_budget_and_evicts_oldest() {
        let c = ByteCache::new(10);
        c.insert(1, Arc::new(vec![0; 4]));
        c.insert(2, Arc::new(vec![0; 4]));
        assert_eq!(c.total(), 8);
        assert!(c.get(&1).is_some()); // 1 is now the most recent
        c.insert(3, Arc::new(vec![0; 4]));
        assert_eq!(c.total(), 8);
        assert!(c.get(&2).is_none());
        assert!(c.get(&1).is_some());
        assert!(c.get(&3).is_some());
        c.insert(4, Arc::new(vec![0; 11])); // larger than the budget: not kept
        assert!(c.get(&4).is_none());
        assert_eq!(c.total(), 8);
        c.insert(1, Arc::new(vec![0; 2])); // replacing updates the total
        assert_eq!(c.total(), 6);
        c.retain(|k| *k != 3);
        assert_eq!(c.total(), 2);
        assert!(c.get(&3).is_none());
        assert!(c.get(&1).is_some());
    }

    #[test]
    fn concurrent_requests_for_one_item_make_it_once() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let c = Arc::new(ByteCache::new(1 << 20));
        let made = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let (c, made) = (c.clone(), made.clone());
                std::thread::spawn(move || {
                    c.get_or_make(&"k", || {
                        made.fetch_add(1, Ordering::SeqCst);
                        std::thread::sleep(std::time::Duration::from_millis(200));
                        Ok::<_, ()>(vec![7; 3])
                    })
                })
            })
            .collect();
        for t in threads {
            assert_eq!(*t.join().unwrap().unwrap(), vec![7; 3]);
        }
        assert_eq!(made.load(Ordering::SeqCst), 1);
        // a failed make is not shared: the next caller makes it again
        assert_eq!(c.get_or_make(&"e", || Err::<Vec<u8>, _>("no")), Err("no"));
        assert_eq!(
            *c.get_or_make(&"e", || Ok::<_, ()>(vec![1])).unwrap(),
            vec![1]
        );
        // larger than the budget: not kept, but every waiter got it
        let small = ByteCache::new(2);
        assert_eq!(
            small
                .get_or_make(&1, || Ok::<_, ()>(vec![0; 5]))
                .unwrap()
                .len(),
            5
        );
        assert_eq!(small.total(), 0);
    }
}
