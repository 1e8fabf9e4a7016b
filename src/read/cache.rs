//! A bounded least-recently-used cache of decoded segments.
//!
//! Segments are immutable (format §3.2), so a decoded segment never goes
//! stale while its archive is open. A viewer that pans and zooms asks for
//! the same few segments again and again; decoding is what costs, so the
//! cache holds decoded Arrow batches, weighed by their memory size.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Arc;

use arrow_array::RecordBatch;

/// Decoded batches of one segment, shared between the cache and readers.
pub type Batches = Arc<Vec<RecordBatch>>;

struct Entry {
    batches: Batches,
    bytes: usize,
    last_used: u64,
}

/// A cache of decoded segments holding at most `budget` bytes of Arrow
/// memory. An entry larger than the whole budget is never kept.
pub struct SegmentCache<K> {
    budget: usize,
    used: usize,
    clock: u64,
    entries: HashMap<K, Entry>,
}

impl<K: Eq + Hash + Clone> SegmentCache<K> {
    /// An empty cache that keeps at most `budget` bytes.
    pub fn new(budget: usize) -> SegmentCache<K> {
        SegmentCache {
            budget,
            used: 0,
            clock: 0,
            entries: HashMap::new(),
        }
    }

    /// The cached batches for `key`, marking them recently used.
    pub fn get(&mut self, key: &K) -> Option<Batches> {
        self.clock += 1;
        let clock = self.clock;
        self.entries.get_mut(key).map(|e| {
            e.last_used = clock;
            Arc::clone(&e.batches)
        })
    }

    /// Keeps `batches` under `key`, evicting the least recently used
    /// entries until the budget holds.
    pub fn insert(&mut self, key: K, batches: Batches) {
        let bytes: usize = batches.iter().map(RecordBatch::get_array_memory_size).sum();
        if let Some(old) = self.entries.remove(&key) {
            self.used -= old.bytes;
        }
        if bytes > self.budget {
            return;
        }
        while self.used + bytes > self.budget {
            let Some(oldest) = self
                .entries
                .iter()
                .min_by_key(|(_, e)| e.last_used)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            if let Some(e) = self.entries.remove(&oldest) {
                self.used -= e.bytes;
            }
        }
        self.clock += 1;
        self.used += bytes;
        self.entries.insert(
            key,
            Entry {
                batches,
                bytes,
                last_used: self.clock,
            },
        );
    }

    /// The cached batches for `key`, or `load`'s answer, which is cached.
    pub fn get_or_load<E>(
        &mut self,
        key: K,
        load: impl FnOnce() -> Result<Batches, E>,
    ) -> Result<Batches, E> {
        if let Some(hit) = self.get(&key) {
            return Ok(hit);
        }
        let batches = load()?;
        self.insert(key, Arc::clone(&batches));
        Ok(batches)
    }

    /// Drops every entry whose key `stale` matches (an archive was closed).
    pub fn remove_where(&mut self, stale: impl Fn(&K) -> bool) {
        let used = &mut self.used;
        self.entries.retain(|k, e| {
            let keep = !stale(k);
            if !keep {
                *used -= e.bytes;
            }
            keep
        });
    }

    /// Sets a new budget, evicting as needed.
    pub fn set_budget(&mut self, budget: usize) {
        self.budget = budget;
        while self.used > self.budget {
            let Some(oldest) = self
                .entries
                .iter()
                .min_by_key(|(_, e)| e.last_used)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            if let Some(e) = self.entries.remove(&oldest) {
                self.used -= e.bytes;
            }
        }
    }

    /// Bytes of Arrow memory held.
    pub fn used(&self) -> usize {
        self.used
    }

    /// Entries held.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Int64Array, RecordBatch};
    use arrow_schema::{DataType, Field, Schema};

    use super::*;

    fn batches(rows: usize) -> Batches {
        let schema = Arc::new(Schema::new(vec![Field::new("ts", DataType::Int64, false)]));
        let ts = Int64Array::from_iter_values(0..rows as i64);
        Arc::new(vec![
            RecordBatch::try_new(schema, vec![Arc::new(ts)]).unwrap()
        ])
    }

    fn weight(b: &Batches) -> usize {
        b.iter().map(RecordBatch::get_array_memory_size).sum()
    }

    #[test]
    fn the_least_recently_used_entry_goes_first() {
        let one = weight(&batches(1000));
        let mut cache = SegmentCache::new(one * 2 + one / 2);
        cache.insert(1, batches(1000));
        cache.insert(2, batches(1000));
        assert!(cache.get(&1).is_some(), "touch 1 so that 2 is the oldest");
        cache.insert(3, batches(1000));
        assert_eq!(cache.len(), 2);
        assert!(cache.get(&2).is_none());
        assert!(cache.get(&1).is_some() && cache.get(&3).is_some());
        assert!(cache.used() <= one * 2 + one / 2);
    }

    #[test]
    fn an_entry_larger_than_the_budget_is_not_kept() {
        let mut cache = SegmentCache::new(16);
        cache.insert("big", batches(1000));
        assert!(cache.is_empty());
        assert_eq!(cache.used(), 0);
    }

    #[test]
    fn loads_happen_once_and_errors_are_not_cached() {
        let mut cache = SegmentCache::new(1 << 20);
        let mut loads = 0;
        for _ in 0..3 {
            let got: Result<_, ()> = cache.get_or_load(7, || {
                loads += 1;
                Ok(batches(10))
            });
            assert_eq!(got.unwrap()[0].num_rows(), 10);
        }
        assert_eq!(loads, 1);
        let failed: Result<Batches, &str> = cache.get_or_load(8, || Err("bad segment"));
        assert!(failed.is_err());
        assert!(cache.get(&8).is_none());
    }

    #[test]
    fn closing_an_archive_drops_its_entries_and_their_weight() {
        let mut cache = SegmentCache::new(1 << 20);
        cache.insert((1, 0), batches(10));
        cache.insert((1, 1), batches(10));
        cache.insert((2, 0), batches(10));
        cache.remove_where(|k| k.0 == 1);
        assert_eq!(cache.len(), 1);
        assert_eq!(cache.used(), weight(&batches(10)));
        cache.set_budget(0);
        assert!(cache.is_empty());
        assert_eq!(cache.used(), 0);
    }
}
