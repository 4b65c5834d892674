//! A fast hasher for the small integer keys the readers look up once or twice per record
//! (runtime, submission and region ids).
//!
//! std's default SipHash cost the joiner about a fifth of a pass (callgrind of `export`
//! on a 100k-region trace: 18% of its instructions in `hash_one`). Keys here are a few
//! integers each, so a multiply-rotate combine with a final avalanche (splitmix64's) is
//! enough for hashbrown, which takes the low bits for the bucket and the top 7 for the tag.
//! It is not keyed: a trace crafted to collide can slow a reader down, never change
//! what it reads.

use std::hash::{BuildHasherDefault, Hasher};

/// Builds [`IdHasher`]s (for `HashMap::with_hasher` / `default()`).
pub type IdBuildHasher = BuildHasherDefault<IdHasher>;

/// A `HashMap` keyed by integer ids, hashed with [`IdHasher`].
pub type IdMap<K, V> = std::collections::HashMap<K, V, IdBuildHasher>;

/// See the module docs.
#[derive(Clone, Copy, Debug, Default)]
pub struct IdHasher(u64);

impl IdHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(26) ^ word).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

impl Hasher for IdHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            self.add(u64::from_le_bytes(chunk.try_into().unwrap_or_default()));
        }
        let mut tail = [0u8; 8];
        let rest = chunks.remainder();
        tail[..rest.len()].copy_from_slice(rest);
        self.add(u64::from_le_bytes(tail) ^ (rest.len() as u64) << 56);
    }

    #[inline]
    fn write_u8(&mut self, v: u8) {
        self.add(v.into());
    }

    #[inline]
    fn write_u32(&mut self, v: u32) {
        self.add(v.into());
    }

    #[inline]
    fn write_u64(&mut self, v: u64) {
        self.add(v);
    }

    #[inline]
    fn write_usize(&mut self, v: usize) {
        self.add(v as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    #[test]
    fn neighbouring_keys_spread_over_low_and_high_bits() {
        let build = IdBuildHasher::default();
        let hashes: Vec<u64> = (0..4096u64).map(|s| build.hash_one((1u32, s))).collect();
        let low: std::collections::HashSet<u64> = hashes.iter().map(|h| h & 0xfff).collect();
        let top: std::collections::HashSet<u64> = hashes.iter().map(|h| h >> 57).collect();
        // 4096 keys into 4096 buckets: a uniform hash fills about 63% of them.
        assert!(low.len() > 2300, "{}", low.len());
        assert_eq!(top.len(), 128);
        assert_ne!(build.hash_one((1u32, 2u64)), build.hash_one((2u32, 1u64)));
    }
}
