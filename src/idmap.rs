//! Maps keyed by ids this crate hands out itself (request ids, stream ids, call keys), with a
//! cheap hash: a multiply-rotate over the key's words instead of the standard library's
//! SipHash, whose protection against chosen colliding keys buys nothing for keys that no
//! peer chooses, and costs a few hundred instructions per request on the hot path. A peer's
//! input only ever looks a key up (one hash of it), so a hostile one cannot make the map
//! slow.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A `HashMap` for keys this crate assigns (see the module docs).
pub(crate) type IdMap<K, V> = HashMap<K, V, BuildHasherDefault<IdHasher>>;

/// The multiply-rotate hash of [`IdMap`] (the constant is 2^64 divided by the golden ratio,
/// which spreads consecutive integers across the table).
#[derive(Default, Clone, Copy)]
pub(crate) struct IdHasher(u64);

const SEED: u64 = 0x9e37_79b9_7f4a_7c15;

impl IdHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            // The length tells "ab" from "ab\0".
            self.add(u64::from_le_bytes(word) ^ ((rest.len() as u64) << 56));
        }
    }

    fn write_u8(&mut self, n: u8) {
        self.add(u64::from(n));
    }

    fn write_u32(&mut self, n: u32) {
        self.add(u64::from(n));
    }

    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }

    fn write_i64(&mut self, n: i64) {
        self.add(n as u64);
    }

    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::{BuildHasher, Hash};

    fn hash<T: Hash>(value: &T) -> u64 {
        BuildHasherDefault::<IdHasher>::default().hash_one(value)
    }

    #[test]
    fn distinct_keys_hash_apart_and_the_map_works() {
        let mut map: IdMap<u64, u64> = IdMap::default();
        for n in 0..10_000 {
            map.insert(n, n * 2);
        }
        assert!((0..10_000).all(|n| map.get(&n) == Some(&(n * 2))));
        assert_ne!(hash(&1u64), hash(&2u64));
        assert_ne!(hash(&"ab"), hash(&"ab\0"));
        assert_ne!(hash(&"abcdefgh1"), hash(&"abcdefgh2"));
        // Consecutive ids spread over the top bits hashbrown uses for its control bytes.
        let tops: std::collections::HashSet<u64> = (0..128u64).map(|n| hash(&n) >> 57).collect();
        assert!(tops.len() > 64, "{}", tops.len());
    }
}
