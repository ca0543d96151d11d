//! Key sources of `augur bench`: which keys a run writes and reads.
//!
//! - **db_bench numbers** (no source flag): key numbers `0..num`, encoded by
//!   `super::keys::make_key`, or with `--prefix_size` and `--keys_per_prefix` by
//!   [`Prefixed::make_key`] (db_bench's prefixed keys; see `keys.rs`).
//! - **`--keys=FILE`**: an SOSD binary file (little-endian u64 count, then that many
//!   little-endian u64 keys). Each u64 becomes a db_bench-style key: 8 bytes big-endian, then
//!   ASCII `'0'` padding up to `--key_size` (which must be at least 8), so `--key_size=16`
//!   gives 16-byte keys whose byte order is the numeric order.
//! - **`--keys-text=FILE`**: one key per line (a trailing `\r` and empty lines are dropped);
//!   the bytes of a line are the key, whatever `--key_size` says.
//! - **`--distribution=NAME`**: `--num` synthetic u64 keys (Bourbon §5, SOSD), encoded as for
//!   `--keys` and deterministic for a given `--seed`:
//!   - `linear`: `start + i * 100` (a constant stride; `start` drawn from the seed);
//!   - `seg1` / `seg10`: runs of 100 / 10 consecutive integers (stride 1), each run followed
//!     by a gap drawn uniformly from `[1000, 1_000_000)`: a gap after 1% / 10% of the keys;
//!   - `normal`: samples of N(0, 1) (Box–Muller), mapped linearly from `[-8, 8]` onto the u64
//!     range;
//!   - `lognormal`: `exp(2 z) * 1e9` for z ~ N(0, 1) (SOSD's lognormal(0, 2) scaling);
//!   - `uniform-dense`: `num` distinct integers drawn uniformly from `[0, 2 num)`;
//!   - `uniform-sparse`: `num` distinct integers drawn uniformly from the whole u64 range.
//! - **`--distribution=strings`**: `--num` synthetic string keys, used as they are (like text
//!   keys; db_bench has no such source, so the name is the harness's own). Deterministic for a
//!   given `--seed`, with the shape of `--string-min-len`, `--string-max-len` and
//!   `--string-prefix-len` (defaults 16, 128, 24; [`StringShape`]): the length `L` of each key
//!   is drawn uniformly from `[min, max]`; the key is the first bytes of a prefix shared by
//!   every key (`prefix-len` printable bytes drawn from the seed: letters and digits), then
//!   random printable bytes (`'!'..='~'`, no space) up to `L`. A key always keeps at least 8
//!   random bytes (or all of them, when `L < 8`): a key shorter than `prefix-len + 8` takes
//!   only the first `L - 8` bytes of the prefix — with the defaults, keys of 32 bytes or more
//!   carry the whole 24-byte prefix, keys of 16 to 31 bytes its first 8 to 23 bytes. That
//!   keeps short keys distinct (94^8 tails per length) and puts them, in key order, before or
//!   after the block of full-prefix keys.
//! - **`--distribution=composite`** and **`--distribution=redis`**: keys shaped like an
//!   application's, `<table>:<id>:<field>` with skewed ids, and the server benchmark's
//!   `key:%012d` (`app.rs`). Text keys too.
//!
//! Every source is sorted and deduplicated (random draws are topped up until there are exactly
//! `num` distinct keys). With a file source, `--num` (when given and smaller than the file)
//! keeps `num` keys evenly spaced in sorted order (key `i * len / num`), which preserves the
//! shape of the distribution; without `--num` every key of the file is used.
//!
//! Missing keys (`readmissing`): the `i`-th key followed by one more byte — `'0'` for u64 keys
//! (db_bench's readmissing: a key of `key_size + 1` bytes), `0x00` for text keys. Every source
//! key has a different length or no such suffix, so it is never present, and it sorts right
//! after an existing key (a negative lookup inside the key range, not outside it).
//!
//! Text keys are at most [`MAX_TEXT_KEY_BYTES`] long (Augur's and fjall's limit; a longer line
//! is refused when the source is read).

mod app;
pub(crate) mod select;

pub use app::{composite, redis, COMPOSITE_FIELDS, COMPOSITE_TABLES, REDIS_DIGITS};

use super::keys::make_key;
pub use super::keys::Prefixed;
use crate::error::{io_err, BenchError};
use clap::ValueEnum;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::path::Path;

/// Synthetic key distributions (`--distribution`): u64 keys, and `strings`.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Distribution {
    /// Consecutive keys with a constant stride.
    Linear,
    /// Linear runs of 100 keys separated by gaps (gaps after 1% of the keys).
    Seg1,
    /// Linear runs of 10 keys separated by gaps (gaps after 10% of the keys).
    Seg10,
    /// Normally distributed keys.
    Normal,
    /// Log-normally distributed keys.
    Lognormal,
    /// Uniform over a range twice the key count.
    UniformDense,
    /// Uniform over the whole u64 range.
    UniformSparse,
    /// Printable string keys of random length with a shared prefix (not db_bench's; see
    /// `--string-min-len`, `--string-max-len`, `--string-prefix-len`).
    Strings,
    /// Composite keys `<table>:<id>:<field>`: a few tables and fields, zipfian ids.
    Composite,
    /// The server benchmark's keys: `key:` and the key number zero-padded to 12 digits.
    Redis,
}

impl Distribution {
    /// Whether the distribution makes text keys (used as they are) rather than u64 keys.
    pub fn is_text(self) -> bool {
        matches!(
            self,
            Distribution::Strings | Distribution::Composite | Distribution::Redis
        )
    }
}

/// The longest text key a source may hold: Augur's `MAX_KEY_LEN` and fjall's limit (it
/// asserts), 65,535 bytes.
pub const MAX_TEXT_KEY_BYTES: usize = 65_535;

/// The shape of `--distribution=strings` keys (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StringShape {
    /// Shortest key, bytes.
    pub min_len: usize,
    /// Longest key, bytes.
    pub max_len: usize,
    /// Bytes of the prefix every key long enough shares.
    pub prefix_len: usize,
}

impl StringShape {
    /// The defaults of the flags: 16 to 128 bytes, a 24-byte shared prefix.
    pub const DEFAULT: StringShape = StringShape {
        min_len: 16,
        max_len: 128,
        prefix_len: 24,
    };

    /// The random bytes a key keeps at least (all of them when shorter).
    pub const MIN_RANDOM: usize = 8;

    /// Bytes of the shared prefix a key of `len` bytes starts with.
    pub fn prefix_of(&self, len: usize) -> usize {
        self.prefix_len.min(len.saturating_sub(Self::MIN_RANDOM))
    }

    /// How many distinct keys this shape can make (saturating).
    fn capacity(&self) -> u128 {
        (self.min_len..=self.max_len)
            .map(|len| {
                let random = len - self.prefix_of(len);
                u32::try_from(random)
                    .ok()
                    .and_then(|r| (PRINTABLE.len() as u128).checked_pow(r))
                    .unwrap_or(u128::MAX)
            })
            .fold(0u128, u128::saturating_add)
    }
}

/// The bytes of the random part of string keys: printable ASCII without the space.
const PRINTABLE: std::ops::RangeInclusive<u8> = b'!'..=b'~';
/// The bytes of the shared prefix of string keys.
const PREFIX_BYTES: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

/// `num` sorted distinct string keys of `shape`, deterministic for `seed` (module docs).
///
/// # Errors
/// `min_len` of 0 or above `max_len`, or a shape that cannot make twice `num` distinct keys
/// (so that duplicates stay rare and the lengths uniform).
pub fn strings(shape: &StringShape, num: u64, seed: u64) -> Result<Vec<Vec<u8>>, BenchError> {
    if shape.min_len == 0 || shape.min_len > shape.max_len {
        return Err(BenchError::failed(format!(
            "--string-min-len={} and --string-max-len={}: need 1 <= min <= max",
            shape.min_len, shape.max_len
        )));
    }
    if shape.capacity() < u128::from(num).saturating_mul(2) {
        return Err(BenchError::failed(format!(
            "--distribution=strings: lengths {}..={} with a {}-byte prefix make too few \
             distinct keys for --num={num}",
            shape.min_len, shape.max_len, shape.prefix_len
        )));
    }
    let n = usize::try_from(num).map_err(|_| BenchError::failed("--num too large"))?;
    let mut rng = StdRng::seed_from_u64(seed);
    let prefix: Vec<u8> = (0..shape.prefix_len)
        .map(|_| PREFIX_BYTES[rng.gen_range(0..PREFIX_BYTES.len())])
        .collect();
    let draw = |rng: &mut StdRng| {
        let len = rng.gen_range(shape.min_len..=shape.max_len);
        let shared = shape.prefix_of(len);
        let mut key = Vec::with_capacity(len);
        key.extend_from_slice(&prefix[..shared]);
        key.extend((shared..len).map(|_| rng.gen_range(PRINTABLE)));
        key
    };
    let mut keys: Vec<Vec<u8>> = (0..n).map(|_| draw(&mut rng)).collect();
    keys.sort_unstable();
    keys.dedup();
    // At most half the possible keys are asked for, so each round at least halves what is
    // missing (in expectation); bound the rounds anyway.
    for _ in 0..256 {
        if keys.len() >= n {
            break;
        }
        let missing = n - keys.len();
        keys.extend((0..missing).map(|_| draw(&mut rng)));
        keys.sort_unstable();
        keys.dedup();
    }
    if keys.len() < n {
        return Err(BenchError::failed(format!(
            "--distribution=strings: only {} distinct keys of {num} after 256 rounds",
            keys.len()
        )));
    }
    keys.truncate(n);
    Ok(keys)
}

/// Order in which fills write the keys of a source (`--load-order`).
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadOrder {
    /// Shuffled with the run's seed.
    Random,
    /// Ascending key order.
    Sequential,
}

/// The keys of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySet {
    /// db_bench key numbers `0..num` (drawn with repeats by random benchmarks).
    Numbers(u64),
    /// db_bench key numbers `0..num` with prefixes (`--prefix_size`, `--keys_per_prefix`);
    /// indexes are ranks in key order ([`Prefixed::number_at`]).
    Prefixed(Prefixed),
    /// Sorted distinct u64 keys, encoded like db_bench key numbers.
    U64(Vec<u64>),
    /// Sorted distinct byte keys, used as they are.
    Text(Vec<Vec<u8>>),
}

impl KeySet {
    /// Number of keys.
    pub fn len(&self) -> u64 {
        match self {
            KeySet::Numbers(n) => *n,
            KeySet::Prefixed(p) => p.num,
            KeySet::U64(k) => k.len() as u64,
            KeySet::Text(k) => k.len() as u64,
        }
    }

    /// True when there is no key.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// True for the db_bench key numbers, prefixed or not (no key source).
    pub fn is_numbers(&self) -> bool {
        matches!(self, KeySet::Numbers(_) | KeySet::Prefixed(_))
    }

    /// The index (rank in key order) of the `i`-th key a sequential benchmark (`fillseq`,
    /// `deleteseq`) visits: `i` itself, except for prefixed numbers, which db_bench visits
    /// by key number (so their prefixes go round-robin, not in key order).
    pub fn sequential(&self, i: u64) -> u64 {
        match self {
            KeySet::Prefixed(p) => p.rank_of(i),
            _ => i,
        }
    }

    /// Writes the `i`-th key in sorted order into `buf` (`i < len()`; for prefixed numbers, the
    /// order of [`Prefixed::number_at`]).
    pub fn key(&self, i: u64, key_size: usize, buf: &mut Vec<u8>) {
        match self {
            KeySet::Numbers(_) => make_key(i, key_size, buf),
            KeySet::Prefixed(p) => p.make_key(p.number_at(i), key_size, buf),
            KeySet::U64(k) => make_key(at(k, i).copied().unwrap_or(0), key_size, buf),
            KeySet::Text(k) => {
                buf.clear();
                buf.extend_from_slice(at(k, i).map(Vec::as_slice).unwrap_or_default());
            }
        }
    }

    /// Writes a key that is not in the set and sorts right after the `i`-th key (module docs).
    pub fn missing(&self, i: u64, key_size: usize, buf: &mut Vec<u8>) {
        match self {
            KeySet::Numbers(_) | KeySet::Prefixed(_) | KeySet::U64(_) => {
                self.key(i, key_size + 1, buf);
            }
            KeySet::Text(_) => {
                self.key(i, key_size, buf);
                buf.push(0);
            }
        }
    }

    /// A short description for the report header.
    pub fn describe(&self, key_size: usize) -> String {
        match self {
            KeySet::Numbers(_) => format!("{key_size} bytes each (db_bench layout)"),
            KeySet::Prefixed(p) => format!(
                "{key_size} bytes each (db_bench layout, {} prefixes of {} bytes, \
                 --keys_per_prefix={})",
                p.prefixes(),
                p.prefix_bytes,
                p.keys_per_prefix
            ),
            KeySet::U64(_) => {
                format!("{key_size} bytes each (u64 big-endian, '0'-padded)")
            }
            KeySet::Text(k) => {
                let total: usize = k.iter().map(Vec::len).sum();
                format!(
                    "text, {:.1} bytes on average",
                    total as f64 / k.len().max(1) as f64
                )
            }
        }
    }
}

fn at<T>(v: &[T], i: u64) -> Option<&T> {
    usize::try_from(i).ok().and_then(|i| v.get(i))
}

/// Reads an SOSD key file: sorted and deduplicated.
pub fn load_sosd(path: &Path) -> Result<Vec<u64>, BenchError> {
    let mut keys = crate::sosd::read_keys(path)?;
    keys.sort_unstable();
    keys.dedup();
    Ok(keys)
}

/// Reads a text key file (one key per line): sorted and deduplicated.
pub fn load_text(path: &Path) -> Result<Vec<Vec<u8>>, BenchError> {
    let bytes = std::fs::read(path).map_err(io_err(format!("reading {}", path.display())))?;
    Ok(parse_text(&bytes))
}

/// Splits text into keys (module docs), sorted and deduplicated.
pub fn parse_text(bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut keys: Vec<Vec<u8>> = bytes
        .split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .filter(|l| !l.is_empty())
        .map(<[u8]>::to_vec)
        .collect();
    keys.sort_unstable();
    keys.dedup();
    keys
}

/// Keeps `num` keys evenly spaced in sorted order (all of them when `num >= len`).
pub fn cap<T: Clone>(keys: Vec<T>, num: Option<u64>) -> Vec<T> {
    let len = keys.len();
    match num.and_then(|n| usize::try_from(n).ok()) {
        Some(n) if n < len => (0..n)
            .filter_map(|i| keys.get(i * len / n).cloned())
            .collect(),
        _ => keys,
    }
}

/// `num` sorted distinct u64 keys of `dist`, deterministic for `seed`; none for the text
/// distributions (`Distribution::is_text`: see [`strings`], [`composite`], [`redis`]).
pub fn generate(dist: Distribution, num: u64, seed: u64) -> Vec<u64> {
    let mut rng = StdRng::seed_from_u64(seed);
    let n = usize::try_from(num).unwrap_or(usize::MAX);
    match dist {
        Distribution::Linear => {
            let start: u64 = rng.gen_range(0..1 << 40);
            (0..num).map(|i| start + i * 100).collect()
        }
        Distribution::Seg1 => segmented(&mut rng, num, 100),
        Distribution::Seg10 => segmented(&mut rng, num, 10),
        Distribution::Normal => distinct(&mut rng, n, |r| {
            let z = gaussian(r).clamp(-8.0, 8.0);
            ((z + 8.0) / 16.0 * u64::MAX as f64) as u64
        }),
        Distribution::Lognormal => {
            distinct(&mut rng, n, |r| ((2.0 * gaussian(r)).exp() * 1e9) as u64)
        }
        Distribution::UniformDense => select(&mut rng, num, num.saturating_mul(2)),
        Distribution::UniformSparse => distinct(&mut rng, n, |r| r.gen()),
        // Text keys are not u64 keys: `strings`, `composite` and `redis` make them
        // (`select.rs` calls them).
        Distribution::Strings | Distribution::Composite | Distribution::Redis => Vec::new(),
    }
}

/// Runs of `run` consecutive integers, each followed by a random gap.
fn segmented(rng: &mut StdRng, num: u64, run: u64) -> Vec<u64> {
    let mut next: u64 = rng.gen_range(0..1 << 20);
    let mut keys = Vec::with_capacity(usize::try_from(num).unwrap_or(0));
    for i in 0..num {
        if i > 0 && i % run == 0 {
            next += rng.gen_range(1000..1_000_000);
        }
        keys.push(next);
        next += 1;
    }
    keys
}

/// A standard normal sample (Box–Muller).
fn gaussian(rng: &mut StdRng) -> f64 {
    let u1: f64 = 1.0 - rng.gen::<f64>(); // in (0, 1]
    let u2: f64 = rng.gen();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// `n` distinct values of `draw`, sorted; draws more while duplicates are found.
fn distinct(rng: &mut StdRng, n: usize, mut draw: impl FnMut(&mut StdRng) -> u64) -> Vec<u64> {
    let mut keys: Vec<u64> = (0..n).map(|_| draw(rng)).collect();
    keys.sort_unstable();
    keys.dedup();
    // Ranges of 2^64 make duplicates rare; bound the top-up rounds anyway.
    for _ in 0..64 {
        if keys.len() >= n {
            break;
        }
        let missing = n - keys.len();
        keys.extend((0..missing).map(|_| draw(rng)));
        keys.sort_unstable();
        keys.dedup();
    }
    keys.truncate(n);
    keys
}

/// `num` distinct integers of `[0, range)` chosen uniformly, in order (Knuth's selection
/// sampling, Algorithm S).
fn select(rng: &mut StdRng, num: u64, range: u64) -> Vec<u64> {
    let mut keys = Vec::with_capacity(usize::try_from(num).unwrap_or(0));
    let mut needed = num;
    for x in 0..range {
        if needed == 0 {
            break;
        }
        if rng.gen_range(0..range - x) < needed {
            keys.push(x);
            needed -= 1;
        }
    }
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted_unique(k: &[u64]) -> bool {
        k.windows(2).all(|w| w[0] < w[1])
    }

    #[test]
    fn every_distribution_is_sorted_unique_exact_and_seeded() {
        for d in Distribution::value_variants()
            .iter()
            .filter(|d| !d.is_text())
        {
            let k = generate(*d, 20_000, 7);
            assert_eq!(k.len(), 20_000, "{d:?}");
            assert!(sorted_unique(&k), "{d:?}");
            assert_eq!(k, generate(*d, 20_000, 7), "{d:?} not deterministic");
            assert_ne!(k, generate(*d, 20_000, 8), "{d:?} ignores the seed");
            assert_eq!(generate(*d, 1, 3).len(), 1);
            assert!(generate(*d, 0, 3).is_empty());
        }
    }

    fn sorted_distinct<T: Ord>(k: &[T]) -> bool {
        k.windows(2).all(|w| w[0] < w[1])
    }

    #[test]
    fn string_keys_have_their_lengths_prefix_and_alphabet() {
        let shape = StringShape::DEFAULT;
        let k = strings(&shape, 50_000, 9).unwrap();
        assert_eq!(k.len(), 50_000);
        assert!(sorted_distinct(&k));
        assert!(k.iter().all(|k| (16..=128).contains(&k.len())));
        // Every length is drawn: the shortest and the longest occur, and about as many keys
        // are shorter than the midpoint as longer.
        assert!(k.iter().any(|k| k.len() == 16) && k.iter().any(|k| k.len() == 128));
        let short = k.iter().filter(|k| k.len() < 72).count() as f64 / k.len() as f64;
        assert!((0.47..0.53).contains(&short), "{short}");
        assert!(k.iter().all(|k| k.iter().all(|b| PRINTABLE.contains(b))));
        // The prefix: the keys of 32 bytes or more share their first 24 bytes; shorter ones
        // share its first len - 8 bytes (at least 8 random bytes each).
        let long: Vec<&Vec<u8>> = k.iter().filter(|k| k.len() >= 32).collect();
        let prefix = &long[0][..24];
        assert!(prefix.iter().all(|b| PREFIX_BYTES.contains(b)));
        assert!(long.iter().all(|k| &k[..24] == prefix));
        assert!(k
            .iter()
            .all(|key| key.len() >= 32 || key[..key.len() - 8] == prefix[..key.len() - 8]));
        // The full-prefix keys are one contiguous block in key order.
        let first = k.iter().position(|x| x.len() >= 32).unwrap();
        let last = k.iter().rposition(|x| x.len() >= 32).unwrap();
        assert!(k[first..=last].iter().all(|x| x.starts_with(prefix)));
        // Each key as a text key: no line breaks.
        assert!(k.iter().all(|k| !k.contains(&b'\n') && !k.contains(&b'\r')));
    }

    #[test]
    fn string_keys_are_seeded_and_shaped_by_the_flags() {
        let shape = StringShape {
            min_len: 12,
            max_len: 14,
            prefix_len: 4,
        };
        let k = strings(&shape, 3000, 1).unwrap();
        assert_eq!(k, strings(&shape, 3000, 1).unwrap(), "not deterministic");
        assert_ne!(k, strings(&shape, 3000, 2).unwrap(), "ignores the seed");
        assert!(sorted_distinct(&k));
        assert!(k
            .iter()
            .all(|x| (12..=14).contains(&x.len()) && x[..4] == k[0][..4]));
        // A key shorter than 8 random bytes is all random.
        let tiny = StringShape {
            min_len: 5,
            max_len: 5,
            prefix_len: 3,
        };
        let k = strings(&tiny, 1000, 1).unwrap();
        assert!(k.iter().all(|x| x.len() == 5));
        assert_ne!(k[0][..3], k[999][..3]);
        // As a key set, a missing key is the key plus 0x00 (text keys).
        let set = KeySet::Text(strings(&StringShape::DEFAULT, 10, 4).unwrap());
        let (mut key, mut missing) = (Vec::new(), Vec::new());
        set.key(3, 16, &mut key);
        set.missing(3, 16, &mut missing);
        assert_eq!(missing, [key.as_slice(), &[0]].concat());
        // Refused: empty or inverted lengths, and too few possible keys.
        for (min, max, prefix, num) in
            [(0, 4, 0, 10), (9, 8, 0, 10), (1, 1, 0, 48), (2, 2, 4, 5000)]
        {
            let bad = StringShape {
                min_len: min,
                max_len: max,
                prefix_len: prefix,
            };
            assert!(strings(&bad, num, 1).is_err(), "{bad:?} {num}");
        }
        // Exactly half the possible keys is allowed (94 one-byte keys: 47).
        let one = StringShape {
            min_len: 1,
            max_len: 1,
            prefix_len: 0,
        };
        assert_eq!(strings(&one, 47, 1).unwrap().len(), 47);
    }

    #[test]
    fn linear_has_a_constant_stride() {
        let k = generate(Distribution::Linear, 10_000, 1);
        assert!(k.windows(2).all(|w| w[1] - w[0] == 100));
    }

    #[test]
    fn segmented_gaps_follow_1_and_10_percent_of_keys() {
        for (d, run) in [(Distribution::Seg1, 100usize), (Distribution::Seg10, 10)] {
            let k = generate(d, 100_000, 5);
            let gaps: Vec<usize> = k
                .windows(2)
                .enumerate()
                .filter(|(_, w)| w[1] - w[0] > 1)
                .map(|(i, _)| i + 1)
                .collect();
            assert_eq!(gaps.len(), 100_000 / run - 1, "{d:?}");
            assert!(gaps.iter().all(|i| i % run == 0), "{d:?}");
            assert!(k
                .windows(2)
                .all(|w| w[1] - w[0] == 1 || w[1] - w[0] >= 1000));
        }
    }

    #[test]
    fn shapes_match_their_names() {
        let n = 100_000u64;
        // Normal: about 68% of the keys within one standard deviation (1/16 of the range).
        let k = generate(Distribution::Normal, n, 2);
        let sd = u64::MAX / 16;
        let mid = u64::MAX / 2;
        let inside = k.iter().filter(|&&x| x.abs_diff(mid) <= sd).count() as f64 / n as f64;
        assert!((0.66..0.70).contains(&inside), "{inside}");
        // Lognormal: the median is about 1e9 and the mean well above it (right skew).
        let k = generate(Distribution::Lognormal, n, 2);
        let median = k[k.len() / 2] as f64;
        assert!((0.9e9..1.1e9).contains(&median), "{median}");
        let mean = k.iter().map(|&x| x as f64).sum::<f64>() / n as f64;
        assert!(mean > 3.0 * median, "{mean}");
        // Dense: inside [0, 2n), each half of the range holds about half the keys.
        let k = generate(Distribution::UniformDense, n, 2);
        assert!(*k.last().unwrap() < 2 * n);
        let low = k.iter().filter(|&&x| x < n).count() as f64 / n as f64;
        assert!((0.48..0.52).contains(&low), "{low}");
        // Sparse: spread over the whole range.
        let k = generate(Distribution::UniformSparse, n, 2);
        let low = k.iter().filter(|&&x| x < u64::MAX / 2).count() as f64 / n as f64;
        assert!((0.48..0.52).contains(&low), "{low}");
    }

    #[test]
    fn text_keys_are_lines_sorted_and_deduplicated() {
        let k = parse_text(b"pear\napple\r\n\nfig\napple\n");
        assert_eq!(
            k,
            vec![b"apple".to_vec(), b"fig".to_vec(), b"pear".to_vec()]
        );
        assert!(parse_text(b"").is_empty());
    }

    #[test]
    fn cap_keeps_evenly_spaced_keys() {
        let k: Vec<u64> = (0..100).collect();
        assert_eq!(cap(k.clone(), Some(4)), vec![0, 25, 50, 75]);
        assert_eq!(cap(k.clone(), Some(1000)).len(), 100);
        assert_eq!(cap(k.clone(), None), k);
    }

    #[test]
    fn keys_and_missing_keys_encode_as_documented() {
        let set = KeySet::U64(vec![5, 9]);
        let mut b = Vec::new();
        set.key(1, 16, &mut b);
        assert_eq!(b, b"\0\0\0\0\0\0\0\x0900000000".to_vec());
        let mut m = Vec::new();
        set.missing(0, 16, &mut m);
        assert_eq!(m.len(), 17);
        let mut k0 = Vec::new();
        set.key(0, 16, &mut k0);
        assert!(k0 < m && m < b);
        let text = KeySet::Text(vec![b"a".to_vec(), b"b".to_vec()]);
        text.key(0, 16, &mut b);
        assert_eq!(b, b"a");
        text.missing(0, 16, &mut b);
        assert_eq!(b, b"a\0");
        assert_eq!(text.len(), 2);
    }
}
