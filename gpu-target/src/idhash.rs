//! Sets and maps keyed by wave and event ids, with a multiplicative hash.
//!
//! The simulated amd-dbgapi library looks a wave up in several per-process
//! sets on every wave call, and a debugger keeps per-wave maps (a stop-all
//! of 10,000 waves makes about 100,000 such lookups); the standard map's
//! SipHash was most of a lookup's cost. The keys are handles a library
//! hands out (small, mostly consecutive integers), not input an adversary
//! chooses, so a multiply by the golden-ratio constant
//! (Fibonacci hashing), its high half folded into the low one, spreads
//! them over the table's buckets and over the top bits the table's control
//! bytes use.

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
        // The table takes its bucket from the low bits: fold the product's
        // well-mixed high half into them, so that ids with a power-of-two
        // stride (every 4th id) do not all fall into a quarter of the buckets.
        self.0 ^ (self.0 >> 32)
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
}
