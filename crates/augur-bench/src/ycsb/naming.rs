//! How YCSB's record numbers become keys ([`Records`]): YCSB's own names (`user` and a
//! number, [`KeyOrder`]) when the run has db_bench's numbered keys, or the keys of the run's
//! key source (`--keys`, `--keys-text`, `--distribution`; `sources.rs`).
//!
//! With a key source of `num` keys, record `n < num` is the `n`-th source key in key order, so
//! `ycsb-load` writes exactly the source's keys (in key order, or shuffled with
//! `--load-order=random`), and a hot set of the first records (`ycsb-b-hot`) is one key range,
//! as under `--insert-order=ordered`. The records the workloads insert (D and E) need keys that
//! are not in the source: record `n >= num` is the source key at index `fnv64(n) mod num`
//! (YCSB's hash, so inserts are scattered over the key space as YCSB's hashed inserts are),
//! then `#` and `n` in decimal — `user:42:email#1000017` — so each insert's key sorts right
//! after an existing key and is a function of `n` alone: every engine and every run of a seed
//! inserts the same keys, and the workloads' reads find them. Two records never share a key (the
//! last `#` splits a key into its base key and `n`), and should a source hold the very key
//! derived for a record (a text key ending in `#` and digits), more `#`s are appended until
//! the key is new. The alternative, holding back source keys from the load for the inserts,
//! would need the number of inserts before the load and would load fewer than `--num` keys.

use crate::sources::KeySet;
use clap::ValueEnum;
use std::io::Write;

/// How record numbers become keys: YCSB's `insertorder` (`--insert-order`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum KeyOrder {
    /// `user` + FNV-1 hash of the record number: records scattered over the key space.
    #[default]
    Hashed,
    /// `user` + the record number zero-padded to 19 digits: key order is record order.
    Ordered,
}

impl KeyOrder {
    /// The flag spelling.
    pub fn name(self) -> &'static str {
        match self {
            KeyOrder::Hashed => "hashed",
            KeyOrder::Ordered => "ordered",
        }
    }

    /// Writes the key of record `n` into `buf`.
    pub fn key(self, n: u64, buf: &mut Vec<u8>) {
        match self {
            KeyOrder::Hashed => record_key(n, buf),
            KeyOrder::Ordered => {
                buf.clear();
                buf.extend_from_slice(format!("user{n:019}").as_bytes());
            }
        }
    }
}

/// YCSB's `Utils.fnvhash64` (FNV-1 over the 8 little-endian bytes, absolute value).
pub fn fnv64(mut v: u64) -> u64 {
    let mut h: u64 = 0xCBF2_9CE4_8422_2325;
    for _ in 0..8 {
        h ^= v & 0xff;
        v >>= 8;
        h = h.wrapping_mul(1_099_511_628_211);
    }
    (h as i64).unsigned_abs()
}

/// Writes the hashed key of record `n` (`user<fnv64(n)>`, YCSB's default) into `buf`.
pub fn record_key(n: u64, buf: &mut Vec<u8>) {
    buf.clear();
    buf.extend_from_slice(b"user");
    buf.extend_from_slice(fnv64(n).to_string().as_bytes());
}

/// The byte between an inserted record's base key and its number (module docs).
pub const INSERT_SEPARATOR: u8 = b'#';

/// The keys of YCSB's records in one run (module docs).
#[derive(Debug, Clone, Copy)]
pub enum Records<'a> {
    /// YCSB's own names (`--insert-order`).
    Named(KeyOrder),
    /// The keys of a key source, `key_size` giving the encoding of u64 keys.
    Source { keys: &'a KeySet, key_size: usize },
}

impl<'a> Records<'a> {
    /// The source's keys when `keys` is a key source; YCSB's names in `order` for db_bench's
    /// numbered keys (whose `--key_size` and prefixes do not apply to YCSB).
    pub fn new(keys: &'a KeySet, key_size: usize, order: KeyOrder) -> Self {
        if keys.is_numbers() {
            Records::Named(order)
        } else {
            Records::Source { keys, key_size }
        }
    }

    /// The name the records give the naming (`insert_order`): `hashed`, `ordered` or
    /// `source`.
    pub fn name(&self) -> &'static str {
        match self {
            Records::Named(order) => order.name(),
            Records::Source { .. } => "source",
        }
    }

    /// Writes the key of record `n` into `buf` (replacing its contents).
    pub fn key(&self, n: u64, buf: &mut Vec<u8>) {
        match *self {
            Records::Named(order) => order.key(n, buf),
            Records::Source { keys, key_size } => source_record(keys, key_size, n, buf),
        }
    }
}

/// Writes the key of record `n` of a key source into `buf`: the `n`-th source key, or for a
/// record beyond the source an inserted record's key (module docs).
fn source_record(keys: &KeySet, key_size: usize, n: u64, buf: &mut Vec<u8>) {
    let num = keys.len().max(1);
    if n < num {
        keys.key(n, key_size, buf);
        return;
    }
    keys.key(fnv64(n) % num, key_size, buf);
    buf.push(INSERT_SEPARATOR);
    // Writing into a Vec cannot fail.
    let _ = write!(buf, "{n}");
    while in_text_source(keys, buf) {
        buf.push(INSERT_SEPARATOR);
    }
}

/// Whether `key` is a key of a text source. A u64 source's keys are `key_size` bytes, shorter
/// than any inserted record's key, so no inserted key is ever one of them.
fn in_text_source(keys: &KeySet, key: &[u8]) -> bool {
    match keys {
        KeySet::Text(list) => list.binary_search_by(|k| k.as_slice().cmp(key)).is_ok(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_match_ycsb() {
        // YCSB's first keys (user6284781860667377211 is record 0 in every YCSB load).
        let mut k = Vec::new();
        record_key(0, &mut k);
        assert_eq!(k, b"user6284781860667377211".to_vec());
        record_key(1, &mut k);
        assert_eq!(k, b"user8517097267634966620".to_vec());
        assert_eq!(fnv64(3), 4_052_466_453_699_787_802);
        KeyOrder::Hashed.key(1, &mut k);
        assert_eq!(k, b"user8517097267634966620".to_vec());
        // insertorder=ordered with zeropadding=19: byte order is record order.
        KeyOrder::Ordered.key(42, &mut k);
        assert_eq!(k, b"user0000000000000000042".to_vec());
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for n in [0u64, 9, 99, 12_345, 9_999_999] {
            KeyOrder::Ordered.key(n, &mut a);
            KeyOrder::Ordered.key(n + 1, &mut b);
            assert!(a < b, "{n}");
        }
    }

    fn text(keys: &[&str]) -> KeySet {
        KeySet::Text(keys.iter().map(|k| k.as_bytes().to_vec()).collect())
    }

    fn key_of(records: &Records, n: u64) -> String {
        let mut buf = b"stale".to_vec();
        records.key(n, &mut buf);
        String::from_utf8(buf).unwrap()
    }

    #[test]
    fn source_records_are_the_source_keys_then_derived_inserts() {
        let keys = text(&["apple", "fig", "pear"]);
        let r = Records::new(&keys, 16, KeyOrder::Ordered);
        assert_eq!(r.name(), "source");
        assert_eq!(
            (0..3).map(|n| key_of(&r, n)).collect::<Vec<_>>(),
            ["apple", "fig", "pear"]
        );
        // Inserts: the source key at fnv64(n) mod num, '#', n.
        let names = ["apple", "fig", "pear"];
        for n in 3..200u64 {
            let base = names[(fnv64(n) % 3) as usize];
            assert_eq!(key_of(&r, n), format!("{base}#{n}"));
        }
        // Scattered over the source: every key is a base of some insert.
        for base in names {
            assert!((3..50).any(|n| key_of(&r, n).starts_with(&format!("{base}#"))));
        }
        // db_bench numbers keep YCSB's names.
        let numbers = KeySet::Numbers(10);
        let r = Records::new(&numbers, 16, KeyOrder::Ordered);
        assert_eq!(r.name(), "ordered");
        assert_eq!(key_of(&r, 42), "user0000000000000000042");
        let r = Records::new(&numbers, 16, KeyOrder::Hashed);
        assert_eq!(key_of(&r, 0), "user6284781860667377211");
    }

    #[test]
    fn inserted_keys_never_repeat_nor_hit_a_source_key() {
        // A source holding the very key derived for record `n0` ("x#n0") and the next one
        // tried ("x#n0#"): record n0 gets "x#n0##".
        let n0 = (3..).find(|n| fnv64(*n).is_multiple_of(3)).unwrap();
        let source = ["x".to_string(), format!("x#{n0}"), format!("x#{n0}#")];
        let keys = KeySet::Text(source.iter().map(|k| k.as_bytes().to_vec()).collect());
        let r = Records::new(&keys, 16, KeyOrder::Hashed);
        assert_eq!(key_of(&r, n0), format!("x#{n0}##"));
        let mut seen = std::collections::HashSet::new();
        for n in 0..3000u64 {
            let k = key_of(&r, n);
            assert!(seen.insert(k.clone()), "{n}: {k} twice");
            if n >= 3 {
                assert!(!source.contains(&k), "{n}: {k}");
            }
        }
        // u64 sources: the key_size-byte encoding, then the suffix.
        let u = KeySet::U64(vec![5, 9]);
        let r = Records::new(&u, 10, KeyOrder::Hashed);
        let mut buf = Vec::new();
        r.key(1, &mut buf);
        assert_eq!(buf, b"\0\0\0\0\0\0\0\x0900");
        r.key(7, &mut buf);
        assert_eq!(buf.len(), 12);
        assert_eq!(&buf[10..], b"#7");
    }
}
