//! A least-recently-used cache of generated file bytes, bounded in bytes.

use lru::LruCache;
use std::hash::Hash;
use std::sync::{Arc, Mutex};

/// Bytes of generated files keyed by `K`; the total stays at or below the budget (one
/// item larger than the budget is returned to the caller but not kept).
pub(crate) struct ByteCache<K: Hash + Eq> {
    inner: Mutex<Inner<K>>,
    budget: u64,
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
        }
    }

    pub(crate) fn get(&self, k: &K) -> Option<Arc<Vec<u8>>> {
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        g.lru.get(k).cloned()
    }

    pub(crate) fn insert(&self, k: K, v: Arc<Vec<u8>>) {
        let len = v.len() as u64;
        if len > self.budget {
            return;
        }
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(old) = g.lru.put(k, v) {
            g.total -= old.len() as u64;
        }
        g.total += len;
        while g.total > self.budget {
            match g.lru.pop_lru() {
                Some((_, old)) => g.total -= old.len() as u64,
                None => break,
            }
        }
    }

    /// Drops every entry for which `f` is true.
    pub(crate) fn retain(&self, mut f: impl FnMut(&K) -> bool) {
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
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
                g.total += v.len() as u64;
                g.lru.put(k, v);
            }
        }
    }

    /// Bytes held.
    pub(crate) fn total(&self) -> u64 {
        self.inner.lock().unwrap_or_else(|p| p.into_inner()).total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
