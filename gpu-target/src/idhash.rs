//! Sets and maps keyed by wave and event ids, with a hash that keeps
//! neighbouring ids together.
//!
//! The simulated amd-dbgapi library looks a wave up in several per-process
//! sets on every wave call, and a debugger keeps per-wave maps (a stop-all
//! of 10,000 waves makes about 100,000 such lookups); the standard map's
//! SipHash was most of a lookup's cost. The keys are handles a library
//! hands out (small, mostly consecutive integers), not input an adversary
//! chooses, so the hash is a multiply by the golden-ratio constant
//! (Fibonacci hashing).
//!
//! A stop-all walks the waves in id order (the stop requests, then their
//! events, then the resumes), and so do the library's event ids. A hash
//! that scatters every id sent each of those lookups to its own cache line:
//! a miss per wave per map, in tables of hundreds of kilobytes that the
//! simulated device's wave state (megabytes) keeps pushing out of the
//! cache. So the bucket bits hash an id's run (its id without the low
//! [`RUN_BITS`] bits) and place the run's 16 ids side by side in one
//! stretch of 16 buckets: a lookup in id order finds its line already
//! fetched (or prefetched) for 15 ids of 16, and the runs are spread over
//! the table. The place in the stretch is the id's low bits turned by the
//! run's hash, so that ids with a power-of-two stride (every 4th or 64th
//! id) still spread over about as many buckets as random keys take. The
//! table's control bytes (the top 7 bits) come from the whole id's
//! product, so the ids of one run do not share them (a probe compares one
//! key, not the run's). Measured on the shared VM (`rsp-bench --gpu-scale`, 10,000 waves),
//! this change alone: the loop thread's CPU per stop-all ×0.89, per `jThreadsInfo` ×0.61.

use std::collections::HashMap;
use std::collections::HashSet;
use std::hash::BuildHasherDefault;
use std::hash::Hasher;

/// The hasher of [`IdSet`] and [`IdMap`]: keys are `u64`s (wave and event
/// ids).
#[derive(Default, Clone, Copy)]
pub struct IdHasher(u64);

/// Low id bits that place an id within its run: runs of 16 consecutive
/// ids (`hashbrown`'s group of control bytes; 16 entries of 16 bytes are 4
/// cache lines) share one aligned stretch of 16 buckets.
const RUN_BITS: u32 = 4;

/// Fibonacci hashing's multiplier (2^64 / the golden ratio).
const GOLDEN: u64 = 0x9e37_79b9_7f4a_7c15;

/// The bits the table's control bytes take (`hashbrown`'s tag: the top 7).
const TAG_BITS: u64 = 0x7f << 57;

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        let x = self.0;
        let run = (x >> RUN_BITS).wrapping_mul(GOLDEN);
        // The run's stretch: the product's well-mixed high half folded into
        // the low one (the bucket bits above the run's own).
        let stretch = run ^ (run >> 32);
        // The id's place in it: its low bits, turned by the product's top
        // bits (which the stretch's low bits do not repeat), so that ids of
        // a power-of-two stride, one per run, do not all take the same
        // place in their stretches.
        let place = x.wrapping_add(run >> (64 - RUN_BITS)) & ((1 << RUN_BITS) - 1);
        let buckets = (stretch << RUN_BITS) | place;
        (buckets & !TAG_BITS) | (x.wrapping_mul(GOLDEN) & TAG_BITS)
    }

    fn write(&mut self, bytes: &[u8]) {
        // Not used by `u64` keys; any other key still hashes correctly.
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, x: u64) {
        // One word (an id) is kept as it is, for `finish`; a key of several
        // mixes each earlier word in.
        self.0 = self.0.rotate_left(5).wrapping_mul(GOLDEN) ^ x;
    }
}

/// A set of ids.
pub type IdSet<K> = HashSet<K, BuildHasherDefault<IdHasher>>;
/// A map keyed by ids.
pub type IdMap<K, V> = HashMap<K, V, BuildHasherDefault<IdHasher>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_spread_over_buckets() {
        use std::hash::BuildHasher;
        let b = BuildHasherDefault::<IdHasher>::default();
        // 10,000 ids, consecutive or every 4th or 64th, over the low 14 bits
        // (a 16,384-bucket table): about as many buckets as random keys
        // take (7,500), not a quarter or a 64th of them.
        for stride in [1u64, 4, 64] {
            let buckets: std::collections::BTreeSet<u64> = (0..10_000u64)
                .map(|i| b.hash_one(1000 + i * stride) & 0x3fff)
                .collect();
            assert!(buckets.len() > 6000, "stride {stride}: {}", buckets.len());
        }
        let mut s: IdSet<u64> = IdSet::default();
        assert!(s.insert(7) && !s.insert(7) && s.contains(&7) && !s.contains(&8));
    }

    #[test]
    fn consecutive_ids_share_a_stretch() {
        use std::hash::BuildHasher;
        let b = BuildHasherDefault::<IdHasher>::default();
        // A run of 16 ids (aligned) takes the 16 buckets of one stretch, each
        // its own, and their control bytes (top 7 bits) mostly differ.
        for base in [16 * 1234u64, 16 * 99_999] {
            let hashes: Vec<u64> = (0..16).map(|i| b.hash_one(base + i)).collect();
            let stretches: std::collections::BTreeSet<u64> =
                hashes.iter().map(|h| (h & 0x3fff) >> 4).collect();
            let places: std::collections::BTreeSet<u64> = hashes.iter().map(|h| h & 15).collect();
            let tags: std::collections::BTreeSet<u64> = hashes.iter().map(|h| h >> 57).collect();
            assert_eq!(stretches.len(), 1, "base {base}");
            assert_eq!(places.len(), 16, "base {base}");
            assert!(tags.len() > 12, "base {base}: {} tags", tags.len());
        }
    }
}
