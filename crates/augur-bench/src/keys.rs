//! Keys and values of the benchmark, generated as RocksDB's `db_bench` does.
//!
//! A key is the key number written big-endian into `min(key_size, 8)` bytes (its low-order
//! bytes when `key_size < 8`), then padded with ASCII `'0'` up to `key_size` bytes: with
//! `--key_size=16`, key 1 is `00 00 00 00 00 00 00 01 30 30 30 30 30 30 30 30`, exactly what
//! `db_bench --key_size=16` writes (`GenerateKeyFromInt` without prefixes). Byte order
//! therefore equals numeric order.
//!
//! Values are slices of a pre-generated buffer, taken at a moving offset like db_bench's
//! `RandomGenerator`. Without `--compression_ratio` the buffer is random bytes (values do not
//! compress). With `--compression_ratio R` it is built as db_bench builds it: 100-byte pieces,
//! each `max(1, floor(100·R))` random printable characters (`' '` + 0..95) repeated to fill
//! the piece, so that a compressor shrinks values to about `R` of their size and the same
//! flag drives `db_bench`.

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

/// Bytes of one compressible piece (db_bench's `CompressibleString` length).
const PIECE_BYTES: usize = 100;

impl ValueGen {
    /// A generator of values of up to `max_len` bytes: incompressible, or compressible to
    /// about `compression_ratio` (in `(0, 1]`) of their size as db_bench's are.
    pub fn new(seed: u64, max_len: usize, compression_ratio: Option<f64>) -> Self {
        let len = max_len.max(1 << 20);
        let mut rng = StdRng::seed_from_u64(seed);
        let data = match compression_ratio {
            None => {
                let mut data = vec![0u8; len];
                rng.fill_bytes(&mut data);
                data
            }
            Some(ratio) => {
                // `as` floors (and saturates): db_bench's `(int)(len * compressed_fraction)`.
                let raw = ((PIECE_BYTES as f64 * ratio) as usize).clamp(1, PIECE_BYTES);
                let mut data = Vec::with_capacity(len + PIECE_BYTES);
                while data.len() < len {
                    let piece: Vec<u8> = (0..raw)
                        .map(|_| b' ' + (rng.next_u32() % 95) as u8)
                        .collect();
                    data.extend(piece.iter().cycle().take(PIECE_BYTES));
                }
                data
            }
        };
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
        for ratio in [None, Some(0.5)] {
            let mut g = ValueGen::new(1, 100, ratio);
            for _ in 0..100_000 {
                assert_eq!(g.next(100).len(), 100);
            }
            assert_eq!(ValueGen::new(1, 0, ratio).next(0).len(), 0);
        }
    }

    #[test]
    fn compressible_values_repeat_a_random_fragment_per_piece_as_db_bench() {
        for (ratio, raw) in [(0.5, 50usize), (0.25, 25), (0.001, 1), (1.0, 100)] {
            let g = ValueGen::new(7, 1000, Some(ratio));
            assert!(g.data.len() >= 1 << 20);
            for piece in g.data.chunks(PIECE_BYTES).take(1000) {
                let fragment = &piece[..raw];
                assert!(fragment.iter().all(|&b| (b' '..=b'~').contains(&b)));
                for (i, &b) in piece.iter().enumerate() {
                    assert_eq!(b, fragment[i % raw], "ratio {ratio}: byte {i}");
                }
            }
            // Distinct pieces: the fragments are random, not one repeated string.
            assert_ne!(g.data[..raw], g.data[PIECE_BYTES..PIECE_BYTES + raw]);
        }
        // Without a ratio the bytes are not printable-only (random over 0..=255).
        let g = ValueGen::new(7, 1000, None);
        assert!(g.data.iter().any(|&b| !(b' '..=b'~').contains(&b)));
    }
}
