//! Which WAL rows share a table page, predicted from the order and size in
//! which they were appended.
//!
//! Appends land at the right end of the `wal` table's rowid b-tree, and
//! SQLite fills its rightmost leaf until the next cell does not fit, then
//! starts a new one. So the writer, which makes every append, can replay
//! that fill and know which rows sit together. The prune uses it to delete
//! the oldest pages once every row on them is covered, so each page is
//! written once on its way out instead of once per stream, and a run of
//! neighbouring pages goes together, which spares SQLite rebalancing.
//!
//! The prediction is a cost model, not a rule of correctness: a wrong guess
//! writes a page twice, never deletes a live row (the prune also bounds
//! every delete by the stream's watermark).

use std::collections::{HashMap, VecDeque};

/// Bytes for cells in a leaf page of 4096 bytes (8 of them are its header).
const LEAF_CAPACITY: usize = 4096 - 8;
/// A table leaf keeps a payload up to this size whole...
const MAX_LOCAL: usize = 4096 - 35;
/// ...and a longer one keeps at least this much, the rest overflowing.
const MIN_LOCAL: usize = (4096 - 12) * 32 / 255 - 23;
/// Rows tracked at most; past it tracking stops and the prune falls back
/// to deleting every covered row once enough have gathered.
const MAX_TRACKED_ROWS: usize = 1 << 20;

fn varint_len(v: u64) -> usize {
    match v {
        0..=0x7f => 1,
        0x80..=0x3fff => 2,
        0x4000..=0x1f_ffff => 3,
        0x20_0000..=0xfff_ffff => 4,
        0x1000_0000..=0x7_ffff_ffff => 5,
        0x8_0000_0000..=0x3ff_ffff_ffff => 6,
        0x400_0000_0000..=0x1_ffff_ffff_ffff => 7,
        0x2_0000_0000_0000..=0xff_ffff_ffff_ffff => 8,
        _ => 9,
    }
}

/// Bytes SQLite stores an integer in (record format 4).
fn int_len(v: i64) -> usize {
    match v {
        0 | 1 => 0,
        -128..=127 => 1,
        -32_768..=32_767 => 2,
        -8_388_608..=8_388_607 => 3,
        -2_147_483_648..=2_147_483_647 => 4,
        -140_737_488_355_328..=140_737_488_355_327 => 6,
        _ => 8,
    }
}

fn int_type(v: i64) -> u64 {
    match int_len(v) {
        0 => 8 + v as u64,
        1 => 1,
        2 => 2,
        3 => 3,
        4 => 4,
        6 => 5,
        _ => 6,
    }
}

/// The bytes one `wal` row's cell takes in a leaf, with its cell pointer.
pub(super) fn cell_bytes(
    source_id: i64,
    stream_len: usize,
    ts: i64,
    wall_offset: i64,
    row_len: usize,
) -> usize {
    let types = [
        int_type(source_id),
        13 + 2 * stream_len as u64,
        int_type(ts),
        int_type(wall_offset),
        12 + 2 * row_len as u64,
    ];
    let header_body: usize = types.iter().map(|t| varint_len(*t)).sum();
    let header = header_body + varint_len((header_body + 1) as u64);
    let payload =
        header + int_len(source_id) + stream_len + int_len(ts) + int_len(wall_offset) + row_len;
    let local = if payload <= MAX_LOCAL {
        payload
    } else {
        let spill = MIN_LOCAL + (payload - MIN_LOCAL) % (4096 - 4);
        (if spill <= MAX_LOCAL { spill } else { MIN_LOCAL }) + 4
    };
    varint_len(payload as u64) + 3 + local + 2
}

/// One predicted page: its rows, and how many are not yet covered.
#[derive(Default)]
struct Page {
    uncovered: u32,
    rows: Vec<(u32, i64)>,
}

/// The replayed fill of the `wal` table's rightmost leaves.
#[derive(Default)]
pub(super) struct PageTracker {
    keys: HashMap<(i64, String), u32>,
    names: Vec<(i64, String)>,
    /// Per stream, its rows not yet covered, oldest first, with their page.
    waiting: Vec<VecDeque<(i64, u64)>>,
    /// Pages from `first` on.
    pages: VecDeque<Page>,
    first: u64,
    /// The page being filled, and its bytes used.
    current: u64,
    used: usize,
    tracked: usize,
    disabled: bool,
}

impl PageTracker {
    fn key(&mut self, source_id: i64, stream: &str) -> u32 {
        if let Some(k) = self.keys.get(&(source_id, stream.to_string())) {
            return *k;
        }
        let k = self.names.len() as u32;
        self.keys.insert((source_id, stream.to_string()), k);
        self.names.push((source_id, stream.to_string()));
        self.waiting.push(VecDeque::new());
        k
    }

    fn page_mut(&mut self, id: u64) -> Option<&mut Page> {
        let at = id.checked_sub(self.first)?;
        self.pages.get_mut(at as usize)
    }

    /// Records one committed row, in the order it was inserted.
    pub fn appended(
        &mut self,
        source_id: i64,
        stream: &str,
        ts: i64,
        wall_offset: i64,
        row_len: usize,
    ) {
        if self.disabled {
            return;
        }
        if self.tracked >= MAX_TRACKED_ROWS {
            *self = PageTracker {
                disabled: true,
                ..PageTracker::default()
            };
            return;
        }
        let cell = cell_bytes(source_id, stream.len(), ts, wall_offset, row_len);
        if self.pages.is_empty() {
            self.first = self.current;
            self.pages.push_back(Page::default());
        }
        if self.used + cell > LEAF_CAPACITY && self.used > 0 {
            self.current += 1;
            self.used = 0;
            self.pages.push_back(Page::default());
        }
        self.used += cell;
        let key = self.key(source_id, stream);
        let page = self.current;
        let entry = self.page_mut(page).expect("the current page is tracked");
        entry.uncovered += 1;
        entry.rows.push((key, ts));
        self.waiting[key as usize].push_back((ts, page));
        self.tracked += 1;
    }

    /// A seal covered `stream` up to `watermark`: its rows at or below it no
    /// longer hold their pages back.
    pub fn covered(&mut self, source_id: i64, stream: &str, watermark: i64) {
        if self.disabled {
            return;
        }
        let Some(&key) = self.keys.get(&(source_id, stream.to_string())) else {
            return;
        };
        while let Some(&(ts, page)) = self.waiting[key as usize].front() {
            if ts > watermark {
                break;
            }
            self.waiting[key as usize].pop_front();
            if let Some(entry) = self.page_mut(page) {
                entry.uncovered -= 1;
            }
        }
    }

    /// Stops waiting for rows of `stream` below `cutoff` (retention deleted
    /// them), or for every row of `source_id` when `stream` is `None` (the
    /// source was finalized or released, so its live tail stays). Their
    /// pages no longer wait on them; the prune's watermark bound still keeps
    /// any live one from being deleted.
    pub fn stop_waiting(&mut self, source_id: i64, stream: Option<&str>, cutoff: i64) {
        if self.disabled {
            return;
        }
        let keys: Vec<u32> = self
            .keys
            .iter()
            .filter(|((s, name), _)| *s == source_id && stream.is_none_or(|n| n == name))
            .map(|(_, k)| *k)
            .collect();
        for key in keys {
            while let Some(&(ts, page)) = self.waiting[key as usize].front() {
                if stream.is_some() && ts >= cutoff {
                    break;
                }
                self.waiting[key as usize].pop_front();
                if let Some(entry) = self.page_mut(page) {
                    entry.uncovered -= 1;
                }
            }
        }
    }

    /// The rows of the oldest pages, as long as every row on them is
    /// covered (never the page still being filled): handed over for
    /// deletion and forgotten. Only a prefix, because freeing a run of
    /// neighbouring pages is cheap while freeing one page among full ones
    /// makes SQLite rebalance (rewrite) its neighbours.
    pub fn take_ready(&mut self) -> Vec<(i64, String, i64)> {
        let mut out = Vec::new();
        while self.first < self.current && self.pages.front().is_some_and(|p| p.uncovered == 0) {
            let page = self.pages.pop_front().expect("checked");
            self.first += 1;
            self.tracked -= page.rows.len();
            for (key, ts) in page.rows {
                let (source_id, stream) = &self.names[key as usize];
                out.push((*source_id, stream.clone(), ts));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_rows_of_1925_bytes_share_a_page_and_a_third_does_not() {
        let cell = cell_bytes(1, 3, 1_700_000_000_000_000_000, 1000, 1925);
        assert!(
            2 * cell <= LEAF_CAPACITY && 3 * cell > LEAF_CAPACITY,
            "{cell}"
        );
    }

    #[test]
    fn a_page_is_ready_only_when_all_its_rows_are_covered() {
        let mut t = PageTracker::default();
        for ts in 0..3 {
            t.appended(1, "a", ts, 0, 1925);
            t.appended(1, "b", ts, 0, 1925);
        }
        t.covered(1, "a", 1);
        assert!(t.take_ready().is_empty(), "b still holds the pages");
        t.covered(1, "b", 1);
        let rows = t.take_ready();
        assert_eq!(
            rows,
            vec![
                (1, "a".into(), 0),
                (1, "b".into(), 0),
                (1, "a".into(), 1),
                (1, "b".into(), 1)
            ]
        );
        t.covered(1, "a", 2);
        t.covered(1, "b", 2);
        assert!(t.take_ready().is_empty(), "the page being filled is kept");
    }
}
