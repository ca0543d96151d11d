//! The model side of the differential suite: the `BTreeMap` the engine is checked against,
//! the key set of a run (variable lengths, prefixes, a small alphabet), the pairs a range or a
//! seek must yield, and how keys, bounds and pairs are shown in a failure report.

use rand::rngs::StdRng;
use rand::Rng;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::ops::Bound;

pub type Model = BTreeMap<Vec<u8>, Vec<u8>>;
pub type Pair = (Vec<u8>, Vec<u8>);

pub fn show(k: &[u8]) -> String {
    format!("\"{}\"", k.escape_ascii())
}

pub fn show_bound(b: &Bound<Vec<u8>>) -> String {
    match b {
        Bound::Included(k) => format!("Included({})", show(k)),
        Bound::Excluded(k) => format!("Excluded({})", show(k)),
        Bound::Unbounded => "Unbounded".into(),
    }
}

pub fn show_pair(p: &Option<Pair>) -> String {
    match p {
        Some((k, v)) => format!("Some({} => {} bytes {})", show(k), v.len(), show(v)),
        None => "None".into(),
    }
}

/// A key set with variable lengths (including the empty key), a small alphabet and many
/// keys that are prefixes of others, so ordering corner cases come up often.
pub fn make_keys(rng: &mut StdRng, n: usize) -> Vec<Vec<u8>> {
    let mut set = BTreeSet::new();
    set.insert(Vec::new());
    while set.len() < n {
        let mut k = if rng.gen_bool(0.3) && !set.is_empty() {
            // Extend an existing key: prefix relations.
            let i = rng.gen_range(0..set.len());
            set.iter().nth(i).cloned().unwrap_or_default()
        } else {
            Vec::new()
        };
        let extra = match rng.gen_range(0..10) {
            0..=5 => rng.gen_range(1..6),
            6..=8 => rng.gen_range(6..20),
            _ => rng.gen_range(20..80),
        };
        k.extend((0..extra).map(|_| random_key_byte(rng)));
        set.insert(k);
    }
    set.into_iter().collect()
}

pub fn random_key_byte(rng: &mut StdRng) -> u8 {
    const ALPHABET: [u8; 8] = [0x00, 0x01, b'a', b'b', b'c', 0x7f, 0x80, 0xff];
    if rng.gen_bool(0.9) {
        ALPHABET[rng.gen_range(0..ALPHABET.len())]
    } else {
        rng.gen()
    }
}

/// The expected pairs of `model` within the bounds; empty for inverted bounds.
pub fn model_range(model: &Model, lo: &Bound<Vec<u8>>, hi: &Bound<Vec<u8>>) -> VecDeque<Pair> {
    let valid = match (lo, hi) {
        (Bound::Included(a), Bound::Included(b)) => a <= b,
        (Bound::Included(a) | Bound::Excluded(a), Bound::Excluded(b))
        | (Bound::Excluded(a), Bound::Included(b)) => a < b,
        _ => true,
    };
    if !valid {
        return VecDeque::new();
    }
    model
        .range((lo.clone(), hi.clone()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// The near bound of a range after `Scan::seek(key)`: `Included(key)` when `key` lies inside
/// it (past it in the scan direction: `forward` for a start bound), else the bound itself.
pub fn clamp_bound(bound: &Bound<Vec<u8>>, key: &[u8], forward: bool) -> Bound<Vec<u8>> {
    let inside = match bound {
        Bound::Unbounded => true,
        Bound::Included(b) => {
            if forward {
                key >= &b[..]
            } else {
                key <= &b[..]
            }
        }
        Bound::Excluded(b) => {
            if forward {
                key > &b[..]
            } else {
                key < &b[..]
            }
        }
    };
    if inside {
        Bound::Included(key.to_vec())
    } else {
        bound.clone()
    }
}
