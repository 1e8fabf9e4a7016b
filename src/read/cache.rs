//! A bounded least-recently-used cache of decoded segments, and the
//! reader's cache built on it for every archive a viewer holds open.
//!
//! Segments are immutable (format §3.2), so a decoded segment never goes
//! stale while its archive is open. A viewer that pans and zooms asks for
//! the same few segments again and again; decoding is what costs, so the
//! cache holds decoded Arrow batches, weighed by their memory size.

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;
use std::sync::Arc;

use arrow_array::RecordBatch;

use super::range::Stats;

/// The decoded-segment budget when nobody chose one: a quarter of the bytes
/// of the archives open, between 16 and 256 MiB. Memory a wasm instance
/// grows into is never given back, so a fixed 256 MiB on a 100 MB archive
/// left the engine at 2.5 times the file after some panning.
pub fn default_budget(open_bytes: u64) -> usize {
    const MIN: u64 = 16 << 20;
    const MAX: u64 = 256 << 20;
    (open_bytes / 4).clamp(MIN, MAX) as usize
}

/// The most the working window raises the decoded-segment budget to
/// ([`ReaderCache::begin_window`]): what an archive read in place gets
/// by default (a quarter of its 256 MiB weight), so no archive's cache
/// grows past what the in-place reader's memory bound already allows.
pub const WORKING_CAP: usize = 64 << 20;

/// Footer summaries kept at most: a few hundred bytes each.
const MAX_STATS_ENTRIES: usize = 1 << 16;

/// Which decode a cache entry holds: segment `seq` of a stream of archive
/// `archive` (an id its holder assigns), with `columns` as asked for and,
/// for a range read, the time axis.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DecodeKey {
    /// The holder's id for the archive.
    pub archive: u32,
    /// The source.
    pub source_id: i64,
    /// The stream.
    pub stream: String,
    /// The segment.
    pub seq: i64,
    /// What the catalog says of it (rows, first and last ts, payload
    /// bytes), so a namespace shared by successive images of an archive
    /// being written never mistakes another segment under the same seq
    /// for this one. Zero where the holder keys by seq alone.
    pub identity: Identity,
    /// The columns kept (`None`: all), sorted.
    pub columns: Option<Vec<String>>,
    /// Whether the time axis was added to them.
    pub with_time_axis: bool,
}

/// A segment, for the footer-summary cache: its summary does not depend on
/// which columns are asked for.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SegmentKey {
    /// The holder's id for the archive.
    pub archive: u32,
    /// The source.
    pub source_id: i64,
    /// The stream.
    pub stream: String,
    /// The segment.
    pub seq: i64,
    /// As in [`DecodeKey::identity`].
    pub identity: Identity,
}

/// A sealed segment as its catalog row describes it: rows, first ts, last
/// ts, payload bytes. Sealed segments never change, so two images of one
/// archive with the same seq and identity hold the same segment.
pub type Identity = (i64, i64, i64, i64);

/// The identity of the segment `record` describes.
pub fn identity_of(record: &crate::catalog::SegmentRecord) -> Identity {
    (record.rows, record.first_ts, record.last_ts, record.bytes)
}

/// The reader's caches over every open archive: decoded segments under one
/// byte budget, and footer summaries (`None`: the footer says nothing
/// exact). Until a holder chooses one, the budget is the larger of
/// [`default_budget`] of the open archives' sizes and the working window:
/// the most decoded bytes one exact read (a heatmap, region statistics)
/// has held at once, up to [`WORKING_CAP`]. Such a read holds its whole
/// window in memory while it runs, so wasm memory, which never shrinks,
/// has grown to hold it anyway; keeping it costs no more memory, and the
/// next read of that window (zooming in it, another region) decodes
/// nothing instead of everything. A window past the cap keeps its first
/// segments ([`ReaderCache::keep_decoded`]), so its next read decodes the
/// rest only.
pub struct ReaderCache {
    decoded: SegmentCache<DecodeKey>,
    stats: HashMap<SegmentKey, Option<Stats>>,
    /// The summaries' keys, oldest first, for evicting the oldest half.
    stats_order: VecDeque<SegmentKey>,
    open: HashMap<u32, u64>,
    /// Holders sharing each namespace (an archive id that later images of
    /// the same archive key their entries under); entries go with the last.
    sharing: HashMap<u32, u32>,
    chosen: Option<usize>,
    /// The largest working window seen, capped.
    working: usize,
    /// Bytes held so far by the window being read, when one is, and the
    /// cache's clock when it began.
    window: Option<(usize, u64)>,
}

impl Default for ReaderCache {
    fn default() -> Self {
        ReaderCache {
            decoded: SegmentCache::new(default_budget(0)),
            stats: HashMap::new(),
            stats_order: VecDeque::new(),
            open: HashMap::new(),
            sharing: HashMap::new(),
            chosen: None,
            working: 0,
            window: None,
        }
    }
}

impl ReaderCache {
    /// An archive of `bytes` was opened under `archive`.
    pub fn opened(&mut self, archive: u32, bytes: u64) {
        self.open.insert(archive, bytes);
        self.resize();
    }

    /// Another holder keys its entries under `namespace` too: they stay
    /// until every holder of it has closed ([`ReaderCache::left`]).
    pub fn joined(&mut self, namespace: u32) {
        *self.sharing.entry(namespace).or_insert(1) += 1;
    }

    /// A holder of `namespace` closed: when it was the last, its entries go.
    pub fn left(&mut self, namespace: u32) {
        let n = self.sharing.entry(namespace).or_insert(1);
        *n -= 1;
        if *n == 0 {
            self.sharing.remove(&namespace);
            self.drop_entries(namespace);
        }
    }

    /// Archive `archive` was closed: its weight goes (its entries go with
    /// [`ReaderCache::left`] when others share them, else now).
    pub fn closed(&mut self, archive: u32) {
        self.open.remove(&archive);
        if self.sharing.contains_key(&archive) {
            self.left(archive);
        } else {
            self.drop_entries(archive);
        }
        self.resize();
    }

    fn drop_entries(&mut self, archive: u32) {
        self.decoded.remove_where(|k| k.archive == archive);
        self.stats.retain(|k, _| k.archive != archive);
        self.stats_order.retain(|k| k.archive != archive);
    }

    /// Chooses the budget, overriding the default for good; 0 turns both
    /// caches off.
    pub fn choose_budget(&mut self, bytes: usize) {
        self.chosen = Some(bytes);
        if bytes == 0 {
            self.stats.clear();
            self.stats_order.clear();
        }
        self.resize();
    }

    fn resize(&mut self) {
        let budget = self
            .chosen
            .unwrap_or_else(|| default_budget(self.open.values().sum()).max(self.working));
        self.decoded.set_budget(budget);
    }

    /// An exact read begins: every decoded segment it holds until
    /// [`ReaderCache::end_window`] counts toward its working window.
    pub fn begin_window(&mut self) {
        self.window = Some((0, self.decoded.clock));
    }

    /// The exact read has ended.
    pub fn end_window(&mut self) {
        self.window = None;
    }

    /// The read in progress holds `bytes` more: the budget grows with its
    /// window (up to the cap) before they are kept, so its first segments
    /// are not evicted for its last.
    fn hold(&mut self, bytes: usize) {
        if let Some((window, _)) = self.window.as_mut() {
            *window = window.saturating_add(bytes);
            let grown = (*window).min(WORKING_CAP);
            if grown > self.working {
                self.working = grown;
                self.resize();
            }
        }
    }

    fn enabled(&self) -> bool {
        self.chosen != Some(0)
    }

    /// The decoded batches for `key`, if cached.
    pub fn decoded(&mut self, key: &DecodeKey) -> Option<Batches> {
        let hit = self.decoded.get(key)?;
        if self.window.is_some() {
            self.hold(weight(&hit));
        }
        Some(hit)
    }

    /// Keeps decoded batches (when caching is on). Within a window larger
    /// than the budget, a segment that would evict one of the same window
    /// is not kept: the window's first segments stay for its next read,
    /// where least-recently-used order would have evicted each of them
    /// just before that read came back to it, and kept nothing of use.
    pub fn keep_decoded(&mut self, key: DecodeKey, batches: Batches) {
        if !self.enabled() {
            return;
        }
        self.hold(weight(&batches));
        match self.window {
            Some((_, since)) => self.decoded.insert_sparing(key, batches, since),
            None => self.decoded.insert(key, batches),
        }
    }

    /// The footer summary for `key`, if cached (`Some(None)`: cached as
    /// saying nothing exact).
    pub fn stats(&self, key: &SegmentKey) -> Option<Option<Stats>> {
        self.stats.get(key).cloned()
    }

    /// Keeps a footer summary (when caching is on), forgetting the oldest
    /// half when there are too many to hold: a window over more segments
    /// than fit keeps the newer half for the next read instead of nothing.
    pub fn keep_stats(&mut self, key: SegmentKey, summary: Option<Stats>) {
        if !self.enabled() {
            return;
        }
        if self.stats.len() >= MAX_STATS_ENTRIES {
            for old in self.stats_order.drain(..MAX_STATS_ENTRIES / 2) {
                self.stats.remove(&old);
            }
        }
        if self.stats.insert(key.clone(), summary).is_none() {
            self.stats_order.push_back(key);
        }
    }

    /// Decoded entries held, and their bytes of Arrow memory.
    pub fn usage(&self) -> (usize, usize) {
        (self.decoded.len(), self.decoded.used())
    }

    /// The decoded-segment budget in force.
    pub fn budget(&self) -> usize {
        self.decoded.budget
    }
}

/// Decoded batches of one segment, shared between the cache and readers.
pub type Batches = Arc<Vec<RecordBatch>>;

/// Bytes of Arrow memory `batches` hold: what the cache weighs them at.
fn weight(batches: &Batches) -> usize {
    batches.iter().map(RecordBatch::get_array_memory_size).sum()
}

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
        let bytes = weight(&batches);
        if let Some(old) = self.entries.remove(&key) {
            self.used -= old.bytes;
        }
        if bytes > self.budget {
            return;
        }
        self.evict_to(self.budget - bytes);
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

    /// [`SegmentCache::insert`], unless that would evict an entry used at
    /// or after `since` (by the cache's clock): then nothing is kept.
    pub fn insert_sparing(&mut self, key: K, batches: Batches, since: u64) {
        let bytes = weight(&batches);
        let old: usize = self
            .entries
            .iter()
            .filter(|(k, e)| e.last_used <= since || **k == key)
            .map(|(_, e)| e.bytes)
            .sum();
        if self.used - old + bytes <= self.budget {
            self.insert(key, batches);
        }
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
        self.evict_to(budget);
    }

    /// Drops the least recently used entries until at most `limit` bytes
    /// are held.
    fn evict_to(&mut self, limit: usize) {
        while self.used > limit {
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

    fn key(archive: u32, seq: i64) -> DecodeKey {
        DecodeKey {
            archive,
            source_id: 1,
            stream: "s".into(),
            seq,
            identity: (0, 0, 0, 0),
            columns: None,
            with_time_axis: false,
        }
    }

    #[test]
    fn the_default_budget_is_a_quarter_of_what_is_open_within_bounds() {
        assert_eq!(default_budget(0), 16 << 20);
        assert_eq!(default_budget(100 << 20), 25 << 20);
        assert_eq!(default_budget(10 << 30), 256 << 20);
        let mut cache = ReaderCache::default();
        cache.opened(1, 100 << 20);
        cache.opened(2, 200 << 20);
        assert_eq!(cache.budget(), 75 << 20);
        cache.closed(2);
        assert_eq!(cache.budget(), 25 << 20);
        cache.choose_budget(1 << 20);
        cache.opened(3, 1 << 30);
        assert_eq!(cache.budget(), 1 << 20, "a chosen budget stays chosen");
    }

    #[test]
    fn an_exact_reads_window_stays_whole_up_to_the_cap_and_past_it_keeps_its_first_segments() {
        let one = weight(&batches(100_000));
        assert!(one > 512 << 10, "each entry weighs about 800 KB");
        let floor = default_budget(0);
        // A window of three times the default budget: before the rule, a
        // second read of it found none of its first segments.
        let n = (3 * floor / one) as i64 + 1;
        let mut cache = ReaderCache::default();
        cache.opened(1, 0);
        cache.begin_window();
        for seq in 0..n {
            assert!(cache.decoded(&key(1, seq)).is_none());
            cache.keep_decoded(key(1, seq), batches(100_000));
        }
        cache.end_window();
        assert!(cache.budget() >= n as usize * one && cache.budget() <= WORKING_CAP);
        assert_eq!(cache.usage().0, n as usize, "the whole window is kept");
        // Read again: every segment a hit, none evicted by the others.
        cache.begin_window();
        assert!((0..n).all(|seq| cache.decoded(&key(1, seq)).is_some()));
        cache.end_window();
        // Reads outside a window (an envelope's, a segment at a time) do
        // not grow the budget; they evict the least recently used.
        let budget = cache.budget();
        for seq in n..2 * n {
            cache.keep_decoded(key(1, seq), batches(100_000));
        }
        assert_eq!(cache.budget(), budget);
        assert!(cache.usage().1 <= budget);
        assert!(cache.decoded(&key(1, 0)).is_none(), "the oldest went first");
        assert!(cache.decoded(&key(1, 2 * n - 1)).is_some());
        // A window past the cap keeps its first segments, up to the cap,
        // evicting what came before it: least-recently-used order would
        // keep its last ones, which its next read reaches only after
        // evicting them.
        let past = (WORKING_CAP / one) as i64 + 8;
        let window = |cache: &mut ReaderCache| {
            cache.begin_window();
            let mut hits = 0;
            for seq in 10_000..10_000 + past {
                match cache.decoded(&key(1, seq)) {
                    Some(_) => hits += 1,
                    None => cache.keep_decoded(key(1, seq), batches(100_000)),
                }
            }
            cache.end_window();
            hits
        };
        assert_eq!(window(&mut cache), 0);
        assert_eq!(cache.budget(), WORKING_CAP);
        assert!(cache.usage().1 <= WORKING_CAP);
        assert!(
            cache.decoded(&key(1, 2 * n - 1)).is_none(),
            "what came before went"
        );
        assert!(cache.decoded(&key(1, 10_000)).is_some());
        assert!(cache.decoded(&key(1, 9_999 + past)).is_none());
        let kept = cache.usage().0 as i64;
        assert!(kept >= past - 9, "{kept} of {past} kept");
        // Its next read finds every segment kept, and keeps them.
        assert_eq!(window(&mut cache), kept);
        assert_eq!(window(&mut cache), kept);
        // A chosen budget overrides the working window, and zero still
        // turns caching off.
        cache.choose_budget(1 << 20);
        assert_eq!(cache.budget(), 1 << 20);
        cache.choose_budget(0);
        cache.begin_window();
        cache.keep_decoded(key(1, 100_000), batches(10));
        assert_eq!(cache.usage(), (0, 0));
    }

    #[test]
    fn a_closed_archive_takes_its_entries_with_it_and_zero_turns_caching_off() {
        let mut cache = ReaderCache::default();
        cache.opened(1, 0);
        cache.opened(2, 0);
        cache.keep_decoded(key(1, 0), batches(10));
        cache.keep_decoded(key(2, 0), batches(10));
        let seg = |archive| SegmentKey {
            archive,
            source_id: 1,
            stream: "s".into(),
            seq: 0,
            identity: (0, 0, 0, 0),
        };
        cache.keep_stats(seg(1), None);
        cache.closed(1);
        assert!(cache.decoded(&key(1, 0)).is_none() && cache.decoded(&key(2, 0)).is_some());
        assert_eq!(cache.stats(&seg(1)), None);
        cache.choose_budget(0);
        cache.keep_decoded(key(2, 1), batches(10));
        cache.keep_stats(seg(2), None);
        assert_eq!(cache.usage(), (0, 0));
        assert_eq!(cache.stats(&seg(2)), None);
    }

    #[test]
    fn too_many_footer_summaries_forget_the_oldest_half() {
        let mut cache = ReaderCache::default();
        let seg = |seq| SegmentKey {
            archive: 1,
            source_id: 1,
            stream: "s".into(),
            seq,
            identity: (0, 0, 0, 0),
        };
        for seq in 0..=MAX_STATS_ENTRIES as i64 {
            cache.keep_stats(seg(seq), None);
        }
        assert_eq!(cache.stats(&seg(0)), None, "the oldest went");
        assert_eq!(
            cache.stats(&seg(MAX_STATS_ENTRIES as i64 - 1)),
            Some(None),
            "the newer half stayed"
        );
        assert_eq!(cache.stats.len(), MAX_STATS_ENTRIES / 2 + 1);
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

    #[test]
    fn a_shared_namespace_keeps_its_entries_until_the_last_holder_closes() {
        let mut cache = ReaderCache::default();
        cache.opened(1, 100 << 20);
        cache.keep_decoded(key(1, 0), batches(10));
        // A later image of the same archive (id 2) keys under namespace 1.
        cache.opened(2, 100 << 20);
        cache.joined(1);
        cache.closed(1);
        assert!(
            cache.decoded(&key(1, 0)).is_some(),
            "the later image still uses it"
        );
        cache.closed(2);
        cache.left(1);
        assert!(cache.decoded(&key(1, 0)).is_none());
    }
}
