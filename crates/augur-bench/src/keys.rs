//! Keys and values of the benchmark, generated as RocksDB's `db_bench` does.
//!
//! A key is the key number written big-endian into `min(key_size, 8)` bytes (its low-order
//! bytes when `key_size < 8`), then padded with ASCII `'0'` up to `key_size` bytes: with
//! `--key_size=16`, key 1 is `00 00 00 00 00 00 00 01 30 30 30 30 30 30 30 30`, exactly what
//! `db_bench --key_size=16` writes (`GenerateKeyFromInt` without prefixes). Byte order
//! therefore equals numeric order.
//!
//! With `--prefix_size=P --keys_per_prefix=K` ([`Prefixed`]) the key starts with a prefix, as
//! db_bench builds it: the `num / K` prefixes are the numbers `0..num / K`, and key number `n`
//! takes prefix `n mod (num / K)`, written big-endian into `min(P, 8)` bytes (its low-order
//! bytes when `P < 8`) and padded with `'0'` to `P` bytes; then comes `n` itself, big-endian
//! into `min(key_size - P, 8)` bytes, padded with `'0'` to `key_size`. So consecutive key
//! numbers take *different* prefixes (db_bench's `fillseq` writes the prefixes round-robin),
//! and prefix `p` is shared by the numbers `p, p + g, p + 2g, …` below `num`, where
//! `g = num / K`: in key order the keys come in groups sharing their first `P` bytes, of `K`
//! keys when `K` divides `num` (otherwise of `num / g` keys, or one more for the first
//! `num mod g` prefixes, as db_bench's).
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
    push_be(n, key_size.min(8), buf);
    buf.resize(key_size, b'0');
}

/// Appends the `bytes` low-order bytes of `v` (at most 8), most significant first.
fn push_be(v: u64, bytes: usize, buf: &mut Vec<u8>) {
    let bytes = bytes.min(8);
    buf.extend_from_slice(v.to_be_bytes().get(8 - bytes..).unwrap_or_default());
}

/// db_bench's prefixed keys (`--prefix_size`, `--keys_per_prefix`; the module docs give the
/// layout). Key *numbers* are db_bench's; key *ranks* are positions in key order, which
/// [`Prefixed::number_at`] and [`Prefixed::rank_of`] convert between. The conversion is the
/// key order whenever the prefixes fit their bytes (`P >= 8`, or fewer than `256^P` of them)
/// and the numbers theirs (`key_size - P >= 8`, or `num <= 256^(key_size - P)`); otherwise
/// db_bench's keys wrap, and so do these.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Prefixed {
    /// Key numbers `0..num`.
    pub num: u64,
    /// Bytes of the prefix (`--prefix_size`): at least 1, less than the key size.
    pub prefix_bytes: usize,
    /// Key numbers per prefix (`--keys_per_prefix`): in `1..=num`.
    pub keys_per_prefix: u64,
}

impl Prefixed {
    /// How many prefixes there are: `num / keys_per_prefix` (db_bench's `num_prefix`; at
    /// least 1, so that a bad value cannot divide by zero).
    pub fn prefixes(&self) -> u64 {
        (self.num / self.keys_per_prefix.max(1)).max(1)
    }

    /// Writes the key of key number `n`, `key_size` bytes long, into `buf` (replacing its
    /// contents). REQUIRES: `key_size > prefix_bytes` (else the key is the prefix's start).
    pub fn make_key(&self, n: u64, key_size: usize, buf: &mut Vec<u8>) {
        buf.clear();
        push_be(n % self.prefixes(), self.prefix_bytes, buf);
        buf.resize(self.prefix_bytes.min(key_size), b'0');
        push_be(n, key_size.saturating_sub(self.prefix_bytes), buf);
        buf.resize(key_size, b'0');
    }

    /// `(g, q, r)`: `g` prefixes, `num = q·g + r`; the prefixes below `r` have `q + 1` key
    /// numbers, the others `q` (at least 1).
    fn split(&self) -> (u128, u128, u128) {
        let g = u128::from(self.prefixes());
        let num = u128::from(self.num.max(1));
        (g, (num / g).max(1), num % g)
    }

    /// The key number whose key has rank `i` in key order (`i < num`): ranks go through the
    /// prefixes in order, and within a prefix through its numbers in order.
    pub fn number_at(&self, i: u64) -> u64 {
        let (g, q, r) = self.split();
        let i = u128::from(i);
        let big = r * (q + 1);
        let (p, j) = if i < big {
            (i / (q + 1), i % (q + 1))
        } else {
            (r + (i - big) / q, (i - big) % q)
        };
        u64::try_from(p + j * g).unwrap_or(u64::MAX)
    }

    /// The rank in key order of the key of number `n` (`n < num`; inverse of
    /// [`Prefixed::number_at`]).
    pub fn rank_of(&self, n: u64) -> u64 {
        let (g, q, r) = self.split();
        let n = u128::from(n);
        let (p, j) = (n % g, n / g);
        let rank = if p < r {
            p * (q + 1) + j
        } else {
            r * (q + 1) + (p - r) * q + j
        };
        u64::try_from(rank).unwrap_or(u64::MAX)
    }
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

    /// db_bench's `GenerateKeyFromInt` with `--prefix_size` and `--keys_per_prefix`, byte by
    /// byte: the prefix `n mod (num / K)` in the first 8 prefix bytes ('0'-padded beyond), then
    /// `n`, each big-endian.
    #[test]
    fn prefixed_keys_match_db_bench_layout() {
        let p = Prefixed {
            num: 100,
            prefix_bytes: 4,
            keys_per_prefix: 10,
        };
        assert_eq!(p.prefixes(), 10);
        let mut k = Vec::new();
        p.make_key(23, 16, &mut k);
        assert_eq!(k, b"\0\0\0\x03\0\0\0\0\0\0\0\x170000".to_vec());
        // A prefix longer than 8 bytes: 8 bytes of the prefix number, then '0's.
        let long = Prefixed {
            num: 1000,
            prefix_bytes: 10,
            keys_per_prefix: 4,
        };
        long.make_key(251, 20, &mut k);
        assert_eq!(k, b"\0\0\0\0\0\0\0\x0100\0\0\0\0\0\0\0\xfb00".to_vec());
        // Fewer than 8 bytes left for the number: its low-order bytes.
        long.make_key(0x0102_0304, 13, &mut k);
        assert_eq!(&k[10..], &[2, 3, 4]);
        // One byte more (readmissing): the same key with one more '0' at the end.
        let (mut key, mut missing) = (Vec::new(), Vec::new());
        p.make_key(23, 16, &mut key);
        p.make_key(23, 17, &mut missing);
        assert_eq!(missing, [key.as_slice(), b"0"].concat());
    }

    /// In key order, the first `P` bytes repeat in groups of `K`, and `number_at` / `rank_of`
    /// are that order (also when `K` does not divide `num`).
    #[test]
    fn prefixed_ranks_are_key_order_in_groups_of_keys_per_prefix() {
        for (num, k) in [(100u64, 10u64), (25, 10), (7, 7), (50, 1), (103, 4)] {
            let p = Prefixed {
                num,
                prefix_bytes: 4,
                keys_per_prefix: k,
            };
            let mut keys: Vec<(Vec<u8>, u64)> = (0..num)
                .map(|n| {
                    let mut key = Vec::new();
                    p.make_key(n, 16, &mut key);
                    (key, n)
                })
                .collect();
            keys.sort();
            keys.dedup_by(|a, b| a.0 == b.0);
            assert_eq!(keys.len() as u64, num, "distinct keys");
            for (rank, (_, n)) in keys.iter().enumerate() {
                assert_eq!(p.number_at(rank as u64), *n, "{num}/{k}: rank {rank}");
                assert_eq!(p.rank_of(*n), rank as u64, "{num}/{k}: number {n}");
            }
            let groups: Vec<usize> = keys
                .chunk_by(|a, b| a.0[..4] == b.0[..4])
                .map(<[_]>::len)
                .collect();
            assert_eq!(groups.len() as u64, num / k, "{num}/{k}");
            if num % k == 0 {
                assert!(
                    groups.iter().all(|&g| g as u64 == k),
                    "{num}/{k}: {groups:?}"
                );
            } else {
                assert!(
                    groups.iter().all(|&g| g as u64 >= k),
                    "{num}/{k}: {groups:?}"
                );
            }
        }
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
