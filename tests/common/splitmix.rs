//! SplitMix64: a tiny deterministic generator, so a seeded test or bench
//! makes the same inputs every run (and noise that LZ4 cannot shrink).
//! Shared by `tests/replicate` and `benches/replicate.rs`.

/// The generator's state; any seed works.
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}
