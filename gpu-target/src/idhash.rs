//! Sets and maps keyed by wave and event ids, with a multiplicative hash.
//!
//! The simulated amd-dbgapi library looks a wave up in several per-process
//! sets on every wave call, and a debugger keeps per-wave maps (a stop-all
//! of 10,000 waves makes about 100,000 such lookups); the standard map's
//! SipHash was most of a lookup's cost. The keys are handles a library
//! hands out (small, mostly consecutive integers), not input an adversary
//! chooses, so a multiply by the golden-ratio constant
//! (Fibonacci hashing) spreads them over the table's buckets, and over the
//! top bits the table's control bytes use, with no collision between
//! consecutive ids.

use std::collections::HashMap;
use std::collections::HashSet;
use std::hash::BuildHasherDefault;
use std::hash::Hasher;

/// The hasher of [`IdSet`] and [`IdMap`]: keys are `u64`s (wave and event
/// ids).
#[derive(Default, Clone, Copy)]
pub struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Not used by `u64` keys; any other key still hashes correctly.
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0x9e37_79b9_7f4a_7c15);
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
    fn consecutive_ids_spread_over_buckets() {
        use std::hash::BuildHasher;
        let b = BuildHasherDefault::<IdHasher>::default();
        // The low 14 bits (a 16,384-bucket table) of 10,000 consecutive
        // ids are all different.
        let mut seen = std::collections::BTreeSet::new();
        for id in 1000u64..11_000 {
            assert!(seen.insert(b.hash_one(id) & 0x3fff));
        }
        let mut s: IdSet<u64> = IdSet::default();
        assert!(s.insert(7) && !s.insert(7) && s.contains(&7) && !s.contains(&8));
    }
}
