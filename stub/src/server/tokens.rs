//! Maps keyed by the loop's small integer keys (mio tokens, session ids).
//!
//! The loop looks its connection up several times per packet (read,
//! session, flush, the turn's counts). The standard map hashes each key
//! with SipHash, which on a `qC` round trip with busy polling off was
//! about 4 % of the server's CPU (`perf record`, 2026-12-02); the keys
//! here are counters this process hands out, never chosen by a client, so
//! a multiplicative hash (one multiply) serves as well.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::hash::Hasher;

/// A multiplicative hash of one integer key (Fibonacci hashing: the
/// key times 2^64 / φ, whose high bits, which the map's control bytes use,
/// and low bits, which pick the bucket, both vary with every key bit).
#[derive(Debug, Default, Clone, Copy)]
pub struct IdHasher(u64);

const PHI: u64 = 0x9E37_79B9_7F4A_7C15;

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Not used by integer keys; any bytes still hash correctly.
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(PHI);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0 ^ n).wrapping_mul(PHI);
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
}

/// A `HashMap` keyed by a token or session id, hashed with [`IdHasher`].
pub type IdMap<K, V> = HashMap<K, V, BuildHasherDefault<IdHasher>>;

#[cfg(test)]
mod tests {
    use super::*;
    use mio::Token;

    #[test]
    fn distinct_keys_stay_distinct_and_found() {
        let mut m: IdMap<Token, usize> = IdMap::default();
        for i in 0..10_000 {
            m.insert(Token(i * 16), i);
        }
        assert_eq!(m.len(), 10_000);
        assert!((0..10_000).all(|i| m.get(&Token(i * 16)) == Some(&i)));
        assert_eq!(m.get(&Token(1)), None);
    }
}
