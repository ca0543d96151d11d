//! The table's bloom filter: one filter over the distinct user keys of the file (the
//! PebblesDB sstable-level filter), consulted before any index or data block is touched.
//!
//! Hashing: one 64-bit xxh3 hash per key, expanded into `k` probe positions by double hashing
//! (Kirsch–Mitzenmacher): `x_0 = h`, `x_{i+1} = x_i + δ` with `δ` an odd mix of `h`, each
//! `x_i` mapped onto `[0, m)` by multiply-shift ("fastrange"). `k = round(bits_per_key·ln 2)`
//! clamped to `1..=30`. Encoding: `num_probes u32 | bit array` (`m` = 8 × array bytes; bit
//! `j` is bit `j % 8` of byte `j / 8`). An empty section means "no filter".

use crate::coding::get_u32;
use xxhash_rust::xxh3::xxh3_64;

/// Largest number of probes a filter may use.
const MAX_PROBES: u32 = 30;

/// Smallest bit array, so tiny tables still get a useful filter.
const MIN_BITS: u64 = 64;

/// Bytes of the filter header (`num_probes u32`).
const HEADER_BYTES: usize = 4;

fn probe_positions(h: u64, num_bits: u64, probes: u32) -> impl Iterator<Item = u64> {
    let delta = h.rotate_right(33).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..u64::from(probes)).map(move |i| {
        let x = h.wrapping_add(i.wrapping_mul(delta));
        ((u128::from(x) * u128::from(num_bits)) >> 64) as u64
    })
}

/// Collects user keys while a table is built and encodes the filter at the end.
#[derive(Debug)]
pub(crate) struct FilterBuilder {
    bits_per_key: u32,
    /// xxh3 hashes of the distinct user keys (8 bytes per key instead of the key).
    hashes: Vec<u64>,
}

impl FilterBuilder {
    /// A builder for `bits_per_key` bits per distinct key; 0 builds no filter.
    pub(crate) fn new(bits_per_key: u32) -> Self {
        FilterBuilder {
            bits_per_key,
            hashes: Vec::new(),
        }
    }

    /// Adds a user key. REQUIRES: the caller adds each distinct key once.
    pub(crate) fn add(&mut self, user_key: &[u8]) {
        if self.bits_per_key > 0 {
            self.hashes.push(xxh3_64(user_key));
        }
    }

    /// Bytes the encoded filter will take.
    pub(crate) fn estimated_bytes(&self) -> u64 {
        if self.bits_per_key == 0 {
            return 0;
        }
        let bits = (self.hashes.len() as u64 * u64::from(self.bits_per_key)).max(MIN_BITS);
        bits.div_ceil(8) + HEADER_BYTES as u64
    }

    /// Encodes the filter section (empty when disabled).
    pub(crate) fn finish(&self) -> Vec<u8> {
        if self.bits_per_key == 0 {
            return Vec::new();
        }
        let probes = ((f64::from(self.bits_per_key) * std::f64::consts::LN_2).round() as u32)
            .clamp(1, MAX_PROBES);
        let num_bytes = self.estimated_bytes() as usize - HEADER_BYTES;
        let num_bits = num_bytes as u64 * 8;
        let mut out = vec![0u8; HEADER_BYTES + num_bytes];
        out[..HEADER_BYTES].copy_from_slice(&probes.to_le_bytes());
        let bits = &mut out[HEADER_BYTES..];
        for &h in &self.hashes {
            for pos in probe_positions(h, num_bits, probes) {
                if let Some(byte) = bits.get_mut((pos / 8) as usize) {
                    *byte |= 1 << (pos % 8);
                }
            }
        }
        out
    }
}

/// A decoded bloom filter.
#[derive(Debug)]
pub(crate) struct Bloom {
    probes: u32,
    bits: Vec<u8>,
}

impl Bloom {
    /// Decodes a non-empty filter section; `Err(reason)` when it is malformed.
    pub(crate) fn decode(section: &[u8]) -> Result<Bloom, &'static str> {
        let probes = get_u32(section, 0).ok_or("filter shorter than its header")?;
        if probes == 0 || probes > MAX_PROBES {
            return Err("filter probe count out of range");
        }
        let bits = section.get(HEADER_BYTES..).unwrap_or_default().to_vec();
        if bits.is_empty() {
            return Err("filter has no bits");
        }
        Ok(Bloom { probes, bits })
    }

    /// False only when `user_key` was certainly not added.
    pub(crate) fn may_contain(&self, user_key: &[u8]) -> bool {
        let num_bits = self.bits.len() as u64 * 8;
        probe_positions(xxh3_64(user_key), num_bits, self.probes).all(|pos| {
            self.bits
                .get((pos / 8) as usize)
                .is_some_and(|b| b & (1 << (pos % 8)) != 0)
        })
    }

    /// Heap bytes held by the filter.
    pub(crate) fn size_bytes(&self) -> usize {
        self.bits.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(bits_per_key: u32, n: u64) -> Option<Bloom> {
        let mut b = FilterBuilder::new(bits_per_key);
        for i in 0..n {
            b.add(&i.to_be_bytes());
        }
        let enc = b.finish();
        assert_eq!(enc.len() as u64, b.estimated_bytes());
        if enc.is_empty() {
            None
        } else {
            Some(Bloom::decode(&enc).unwrap())
        }
    }

    #[test]
    fn no_false_negatives_and_disabled() {
        let f = build(10, 1000).unwrap();
        assert!((0..1000u64).all(|i| f.may_contain(&i.to_be_bytes())));
        assert!(build(0, 1000).is_none());
        let tiny = build(10, 1).unwrap();
        assert!(tiny.may_contain(&0u64.to_be_bytes()));
        assert!(tiny.size_bytes() >= 8);
    }

    /// The false-positive rate is close to the theoretical `(1 - e^{-k/b})^k`.
    #[test]
    fn false_positive_rate_matches_bits_per_key() {
        let n = 10_000u64;
        for (bits, expected) in [(6u32, 0.056), (10, 0.0082), (16, 0.00046)] {
            let f = build(bits, n).unwrap();
            let trials = 100_000u64;
            let fp = (n..n + trials)
                .filter(|i| f.may_contain(&i.to_be_bytes()))
                .count();
            let rate = fp as f64 / trials as f64;
            assert!(
                rate < expected * 1.6 + 0.0005 && rate > expected * 0.4,
                "bits {bits}: rate {rate}, expected about {expected}"
            );
        }
    }

    #[test]
    fn rejects_malformed() {
        assert!(Bloom::decode(&[1, 0]).is_err());
        assert!(Bloom::decode(&[0, 0, 0, 0, 1]).is_err());
        assert!(Bloom::decode(&[31, 0, 0, 0, 1]).is_err());
        assert!(Bloom::decode(&[3, 0, 0, 0]).is_err());
    }
}
