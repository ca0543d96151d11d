//! SOSD binary key files and the values `load --keys` derives from their keys.
//!
//! File format: a little-endian u64 count, then that many little-endian u64 keys. Each key
//! is stored as its 8-byte **big-endian** encoding, so byte order equals numeric order.
//!
//! Value derivation (also in `augur load --help` and the README): the value of key `k` with
//! `--value-size N` is the first N bytes of the output of the SplitMix64 generator seeded
//! with `k`, each 64-bit output written big-endian. Output `i` (i = 1, 2, …) is
//! `mix(k + i * 0x9e3779b97f4a7c15)` with
//! `mix(z) = z ^= z >> 30; z *= 0xbf58476d1ce4e5b9; z ^= z >> 27; z *= 0x94d049bb133111eb;
//! z ^ (z >> 31)` (all arithmetic wrapping).

use crate::error::{io_err, BenchError};
use std::path::Path;

/// Reads every key of an SOSD file.
///
/// # Errors
/// A missing or unreadable file, or a header whose count does not match the file size.
pub fn read_keys(path: &Path) -> Result<Vec<u64>, BenchError> {
    let bytes = std::fs::read(path).map_err(io_err(format!("reading {}", path.display())))?;
    parse_keys(&bytes).map_err(|why| {
        BenchError::failed(format!("{} is not an SOSD key file: {why}", path.display()))
    })
}

/// Parses the bytes of an SOSD file.
pub fn parse_keys(bytes: &[u8]) -> Result<Vec<u64>, String> {
    let (header, body) = bytes
        .split_first_chunk::<8>()
        .ok_or_else(|| format!("{} bytes is shorter than the 8-byte header", bytes.len()))?;
    let count = u64::from_le_bytes(*header);
    let expected = count.checked_mul(8).filter(|&n| n == body.len() as u64);
    if expected.is_none() {
        return Err(format!(
            "the header announces {count} keys but {} bytes follow it (expected 8 per key)",
            body.len()
        ));
    }
    Ok(body
        .chunks_exact(8)
        .map(|c| {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            u64::from_le_bytes(w)
        })
        .collect())
}

/// The stored key: 8 bytes big-endian.
pub fn key_bytes(key: u64) -> [u8; 8] {
    key.to_be_bytes()
}

/// The SplitMix64 increment (the golden gamma).
const GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

/// SplitMix64's output function.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The value `load --keys` stores for `key` (see the module doc).
pub fn derived_value(key: u64, len: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(len + 8);
    let mut state = key;
    while v.len() < len {
        state = state.wrapping_add(GAMMA);
        v.extend_from_slice(&mix(state).to_be_bytes());
    }
    v.truncate(len);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_rejects_headers() {
        let mut f = 2u64.to_le_bytes().to_vec();
        f.extend_from_slice(&7u64.to_le_bytes());
        f.extend_from_slice(&9u64.to_le_bytes());
        assert_eq!(parse_keys(&f).unwrap(), vec![7, 9]);
        assert!(parse_keys(&f[..12]).is_err());
        assert!(parse_keys(&f[..4]).is_err());
        let mut huge = u64::MAX.to_le_bytes().to_vec();
        huge.extend_from_slice(&[0; 8]);
        assert!(parse_keys(&huge).is_err());
    }

    #[test]
    fn derived_values_are_deterministic_prefixes() {
        let a = derived_value(42, 20);
        assert_eq!(a.len(), 20);
        assert_eq!(a, derived_value(42, 20));
        assert_eq!(&derived_value(42, 100)[..20], &a[..]);
        assert_ne!(derived_value(43, 20), a);
        assert!(derived_value(1, 0).is_empty());
        // The first SplitMix64 output for seed 0 (reference value of the generator).
        assert_eq!(
            derived_value(0, 8),
            0xe220_a839_7b1d_cdafu64.to_be_bytes().to_vec()
        );
    }
}
