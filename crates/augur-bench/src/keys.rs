//! Keys and values of the benchmark, generated as RocksDB's `db_bench` does.
//!
//! A key is the key number written big-endian into `min(key_size, 8)` bytes (its low-order
//! bytes when `key_size < 8`), then padded with ASCII `'0'` up to `key_size` bytes: with
//! `--key_size=16`, key 1 is `00 00 00 00 00 00 00 01 30 30 30 30 30 30 30 30`, exactly what
//! `db_bench --key_size=16` writes (`GenerateKeyFromInt` without prefixes). Byte order
//! therefore equals numeric order.
//!
//! Values are slices of a pre-generated buffer of random bytes, taken at a moving offset
//! like db_bench's `RandomGenerator`; Augur does not compress, so they are not made
//! compressible.

use rand::rngs::StdRng;
use rand::{RngCore, SeedableRng};

/// Writes the db_bench key of number `n` into `buf` (replacing its contents).
pub fn make_key(n: u64, key_size: usize, buf: &mut Vec<u8>) {
    buf.clear();
    let fill = key_size.min(8);
    for i in 0..fill {
        buf.push((n >> ((fill - i - 1) * 8)) as u8);
    }
    buf.resize(key_size, b'0');
}

/// Source of value bytes.
pub struct ValueGen {
    data: Vec<u8>,
    pos: usize,
}

impl ValueGen {
    /// A generator of values of up to `max_len` bytes.
    pub fn new(seed: u64, max_len: usize) -> Self {
        let mut data = vec![0u8; max_len.max(1 << 20)];
        StdRng::seed_from_u64(seed).fill_bytes(&mut data);
        ValueGen { data, pos: 0 }
    }

    /// The next value of `len` bytes (`len` at most the `max_len` given to `new`).
    pub fn next(&mut self, len: usize) -> &[u8] {
        if self.pos + len > self.data.len() {
            self.pos = 0;
        }
        let start = self.pos;
        self.pos += len;
        self.data.get(start..start + len).unwrap_or(&[])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_match_db_bench_layout_and_order() {
        let mut k = Vec::new();
        make_key(1, 16, &mut k);
        assert_eq!(k, b"\0\0\0\0\0\0\0\x0100000000".to_vec());
        let mut k2 = Vec::new();
        make_key(256, 16, &mut k2);
        assert!(k < k2);
        make_key(0x0102_0304, 4, &mut k);
        assert_eq!(k, vec![1, 2, 3, 4]);
        make_key(7, 8, &mut k);
        assert_eq!(k, 7u64.to_be_bytes().to_vec());
    }

    #[test]
    fn values_have_the_requested_length() {
        let mut g = ValueGen::new(1, 100);
        for _ in 0..100_000 {
            assert_eq!(g.next(100).len(), 100);
        }
        assert_eq!(ValueGen::new(1, 0).next(0).len(), 0);
    }
}
