//! Key sources shaped like an application's keys (text keys, used as they are; `sources.rs`
//! lists every source):
//!
//! - **`--distribution=composite`**: `--num` keys `<table>:<id>:<field>`, the naming
//!   convention of key-value applications (Redis's `object-type:id:field`): a table of
//!   [`COMPOSITE_TABLES`] and a field of [`COMPOSITE_FIELDS`], each drawn uniformly, and an id
//!   drawn from a zipfian distribution (YCSB's θ = 0.99) over `1..=num`, written in decimal
//!   without padding (as applications write ids, so `user:10:…` sorts before `user:9:…`).
//!   Small ids are the popular ones: they carry every table and field, while large ids are
//!   sparse — a skewed key space with long shared prefixes. Draws repeat; a key set is the
//!   first `num` distinct keys drawn (deterministic for a given `--seed`), sorted.
//! - **`--distribution=redis`**: the keys of the server benchmark (`scripts/server_bench.py`)
//!   and of `redis-benchmark -r num`'s `__rand_int__`: `key:` followed by the key number
//!   zero-padded to [`REDIS_DIGITS`] digits, for the numbers `0..num` (all of them, so the set
//!   does not depend on the seed; the random draws are the benchmarks'). Zero-padding makes
//!   key order numeric order.

use crate::error::BenchError;
use crate::ycsb::{Zipfian, ZIPFIAN_THETA};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::HashSet;

/// The tables of composite keys.
pub const COMPOSITE_TABLES: [&str; 5] = ["account", "event", "order", "session", "user"];
/// The fields of composite keys.
pub const COMPOSITE_FIELDS: [&str; 4] = ["created", "email", "name", "status"];
/// Digits of the number in a redis-style key (`key:%012d`).
pub const REDIS_DIGITS: usize = 12;

/// Draws per key after which `composite` gives up (never reached: the id space alone allows
/// 20 keys per wanted key, and the zipfian's tail yields a new key in most draws).
const COMPOSITE_DRAWS_PER_KEY: u64 = 64;

/// `num` sorted distinct composite keys `<table>:<id>:<field>`, deterministic for `seed`
/// (module docs).
///
/// # Errors
/// `num` beyond the memory's reach (`usize`), or — in theory — no `num` distinct keys within
/// 64 draws per key.
pub fn composite(num: u64, seed: u64) -> Result<Vec<Vec<u8>>, BenchError> {
    let n = usize::try_from(num).map_err(|_| BenchError::failed("--num too large"))?;
    let mut rng = StdRng::seed_from_u64(seed);
    let ids = Zipfian::new(num.max(1), ZIPFIAN_THETA);
    let mut seen: HashSet<Vec<u8>> = HashSet::with_capacity(n);
    // Kept in draw order, so that the set does not depend on the hash set's iteration order.
    let mut keys: Vec<Vec<u8>> = Vec::with_capacity(n);
    let mut draws = 0u64;
    let limit = num.saturating_mul(COMPOSITE_DRAWS_PER_KEY).max(1024);
    while keys.len() < n {
        if draws == limit {
            return Err(BenchError::failed(format!(
                "--distribution=composite: only {} distinct keys of {num} after {draws} draws",
                keys.len()
            )));
        }
        draws += 1;
        let table = COMPOSITE_TABLES[rng.gen_range(0..COMPOSITE_TABLES.len())];
        let id = ids.next(&mut rng) + 1;
        let field = COMPOSITE_FIELDS[rng.gen_range(0..COMPOSITE_FIELDS.len())];
        let key = format!("{table}:{id}:{field}").into_bytes();
        if seen.insert(key.clone()) {
            keys.push(key);
        }
    }
    keys.sort_unstable();
    Ok(keys)
}

/// The `num` redis-style keys `key:%012d` of the numbers `0..num`, sorted (module docs).
///
/// # Errors
/// `num` above 10^12 (the numbers would need more than 12 digits) or beyond `usize`.
pub fn redis(num: u64) -> Result<Vec<Vec<u8>>, BenchError> {
    if num > 10u64.pow(REDIS_DIGITS as u32) {
        return Err(BenchError::failed(format!(
            "--distribution=redis: --num={num} needs more than {REDIS_DIGITS} digits"
        )));
    }
    usize::try_from(num).map_err(|_| BenchError::failed("--num too large"))?;
    Ok((0..num)
        .map(|i| format!("key:{i:0width$}", width = REDIS_DIGITS).into_bytes())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted_distinct(k: &[Vec<u8>]) -> bool {
        k.windows(2).all(|w| w[0] < w[1])
    }

    /// The parts of a composite key.
    fn parts(key: &[u8]) -> (String, u64, String) {
        let text = std::str::from_utf8(key).unwrap();
        let mut it = text.split(':');
        let (t, id, f) = (it.next().unwrap(), it.next().unwrap(), it.next().unwrap());
        assert!(it.next().is_none(), "{text}");
        (t.to_string(), id.parse().unwrap(), f.to_string())
    }

    #[test]
    fn composite_keys_have_tables_skewed_ids_and_fields() {
        let num = 20_000;
        let k = composite(num, 5).unwrap();
        assert_eq!(k.len() as u64, num);
        assert!(sorted_distinct(&k));
        let parsed: Vec<(String, u64, String)> = k.iter().map(|x| parts(x)).collect();
        for (t, id, f) in &parsed {
            assert!(COMPOSITE_TABLES.contains(&t.as_str()), "{t}");
            assert!(COMPOSITE_FIELDS.contains(&f.as_str()), "{f}");
            assert!((1..=num).contains(id), "{id}");
        }
        // Every table and every field occurs; the ids are written without padding.
        for t in COMPOSITE_TABLES {
            assert!(parsed.iter().any(|p| p.0 == t), "{t}");
        }
        for f in COMPOSITE_FIELDS {
            assert!(parsed.iter().any(|p| p.2 == f), "{f}");
        }
        assert!(k.iter().any(|x| x.starts_with(b"user:1:")));
        // Skewed ids: the popular small ids carry every table and field (20 keys each), the
        // large ones are sparse: the first 1% of the ids hold over 20 times more keys per id
        // than the upper half.
        let with_id = |id: u64| parsed.iter().filter(|p| p.1 == id).count();
        assert_eq!(with_id(1), 20);
        assert_eq!(with_id(2), 20);
        let small = parsed.iter().filter(|p| p.1 <= num / 100).count() as f64;
        let large = parsed.iter().filter(|p| p.1 > num / 2).count() as f64;
        let (small_per_id, large_per_id) = (small / (num / 100) as f64, large / (num / 2) as f64);
        assert!(
            small_per_id > 20.0 * large_per_id,
            "keys per id: small ids {small_per_id}, large ids {large_per_id}"
        );
        assert!(large > 0.0, "the tail is drawn too");
    }

    #[test]
    fn composite_keys_are_seeded() {
        let k = composite(3000, 1).unwrap();
        assert_eq!(k, composite(3000, 1).unwrap(), "not deterministic");
        assert_ne!(k, composite(3000, 2).unwrap(), "ignores the seed");
        assert_eq!(composite(1, 9).unwrap().len(), 1);
        assert!(composite(0, 9).unwrap().is_empty());
        // The ids are drawn over 1..=num.
        assert!(composite(10, 1).unwrap().iter().all(|x| parts(x).1 <= 10));
    }

    #[test]
    fn redis_keys_are_zero_padded_numbers_in_order() {
        let k = redis(1500).unwrap();
        assert_eq!(k.len(), 1500);
        assert_eq!(k[0], b"key:000000000000");
        assert_eq!(k[42], b"key:000000000042");
        assert_eq!(k[1499], b"key:000000001499");
        assert!(k.iter().all(|x| x.len() == 4 + REDIS_DIGITS));
        assert!(sorted_distinct(&k));
        assert!(redis(10u64.pow(12) + 1).is_err());
        assert!(redis(0).unwrap().is_empty());
    }
}
