//! The lazy file's memory: fixed-size blocks of the file, least recently
//! used first out, under a byte budget. The budget, not the file, bounds
//! what a lazily opened archive costs, whatever its size.

use std::collections::{BTreeMap, HashMap};

/// Blocks of one file by index (offset / block size), with their recency.
pub(crate) struct BlockCache {
    block_bytes: u64,
    budget: usize,
    blocks: HashMap<u64, Block>,
    /// Recency order: use tick to block index; the smallest tick goes first.
    by_use: BTreeMap<u64, u64>,
    bytes: usize,
    tick: u64,
}

struct Block {
    data: Box<[u8]>,
    used: u64,
}

impl BlockCache {
    /// An empty cache of `block_bytes` blocks holding at most `budget` bytes
    /// (never fewer than one block).
    pub(crate) fn new(block_bytes: u64, budget: usize) -> BlockCache {
        BlockCache {
            block_bytes,
            budget: budget.max(block_bytes as usize),
            blocks: HashMap::new(),
            by_use: BTreeMap::new(),
            bytes: 0,
            tick: 0,
        }
    }

    /// The block size in bytes.
    pub(crate) fn block_bytes(&self) -> u64 {
        self.block_bytes
    }

    /// Whether block `index` is held (recency unchanged).
    pub(crate) fn contains(&self, index: u64) -> bool {
        self.blocks.contains_key(&index)
    }

    /// Block `index`, its recency unchanged.
    pub(crate) fn peek(&self, index: u64) -> Option<&[u8]> {
        self.blocks.get(&index).map(|b| &b.data[..])
    }

    /// Block `index`, marked as just used.
    pub(crate) fn get(&mut self, index: u64) -> Option<&[u8]> {
        self.tick += 1;
        let tick = self.tick;
        let block = self.blocks.get_mut(&index)?;
        self.by_use.remove(&block.used);
        block.used = tick;
        self.by_use.insert(tick, index);
        Some(&block.data)
    }

    /// Keeps `data` as block `index`, evicting the least recently used
    /// blocks until the budget holds again.
    pub(crate) fn insert(&mut self, index: u64, data: &[u8]) {
        self.tick += 1;
        let block = Block {
            data: data.into(),
            used: self.tick,
        };
        self.bytes += block.data.len();
        self.by_use.insert(block.used, index);
        if let Some(old) = self.blocks.insert(index, block) {
            self.bytes -= old.data.len();
            self.by_use.remove(&old.used);
        }
        while self.bytes > self.budget {
            let Some((_, oldest)) = self.by_use.pop_first() else {
                break;
            };
            if let Some(gone) = self.blocks.remove(&oldest) {
                self.bytes -= gone.data.len();
            }
        }
    }

    /// Bytes held now.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// The most bytes this cache holds.
    pub(crate) fn budget(&self) -> usize {
        self.budget
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_recently_used_block_leaves_first_and_the_budget_holds() {
        let mut cache = BlockCache::new(4, 12);
        cache.insert(0, &[0; 4]);
        cache.insert(1, &[1; 4]);
        cache.insert(2, &[2; 4]);
        assert!(cache.get(0).is_some(), "block 0 is used again");
        cache.insert(3, &[3; 4]);
        assert!(!cache.contains(1), "block 1 was the least recently used");
        assert!(cache.contains(0) && cache.contains(2) && cache.contains(3));
        assert_eq!(cache.bytes(), 12);
    }

    #[test]
    fn replacing_a_block_counts_its_bytes_once() {
        let mut cache = BlockCache::new(4, 100);
        cache.insert(7, &[1; 4]);
        cache.insert(7, &[2; 4]);
        assert_eq!(cache.bytes(), 4);
        assert_eq!(cache.get(7), Some(&[2u8; 4][..]));
    }

    #[test]
    fn a_budget_below_one_block_still_holds_one_block() {
        let mut cache = BlockCache::new(4096, 10);
        assert_eq!(cache.budget(), 4096);
        cache.insert(5, &[9; 4096]);
        assert!(cache.contains(5));
    }
}
