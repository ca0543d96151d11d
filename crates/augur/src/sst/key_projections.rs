//! The projections ([`crate::index::projection`]) of a table's keys, taken by the
//! [`super::Builder`] as it adds each key — while the key is in cache — so that at-build
//! training reads 8 bytes per slot instead of walking the buffered entries and the key arena
//! again (issue 12: "train on the builder's already-projected keys").
//!
//! A table's keys are projected against the common prefix of its first and last key, which is
//! only known once the last key is added. While keys arrive, each is projected against the
//! common prefix of the first key and itself, which for sorted keys is the common prefix of all
//! keys so far and only shrinks. When it shrinks, the keys projected before then are stale;
//! [`KeyProjections::finish`] projects those again against the final prefix. So every key is
//! projected at most twice, and once when the prefix settles early (random keys: after the
//! second key).
//!
//! Invariant: `values[exact_from..]` are the projections against `prefix`, the common prefix
//! of the first key and every key added.

use crate::index::projection::{common_prefix_len, project};

/// Projections of the keys added so far, one per entry (versions of one key repeat it).
#[derive(Debug, Default)]
pub(super) struct KeyProjections {
    values: Vec<u64>,
    prefix: usize,
    exact_from: usize,
}

impl KeyProjections {
    /// Projects `key`, the next in sorted order; `first` is the table's first key (`key` itself
    /// for the first call).
    #[inline]
    pub(super) fn add(&mut self, first: &[u8], key: &[u8]) {
        if self.values.is_empty() {
            self.prefix = key.len();
        } else if key.get(..self.prefix) != first.get(..self.prefix) {
            self.prefix = common_prefix_len(first.get(..self.prefix).unwrap_or(first), key);
            self.exact_from = self.values.len();
        }
        self.values.push(project(key, self.prefix));
    }

    /// The common prefix of every key added (that of the first and the last).
    pub(super) fn prefix(&self) -> usize {
        self.prefix
    }

    /// The projections of every key against [`KeyProjections::prefix`]; `key(i)` gives the
    /// `i`-th key added again, for the ones projected before the prefix settled.
    pub(super) fn finish<'k>(mut self, key: impl Fn(usize) -> &'k [u8]) -> Vec<u64> {
        let prefix = self.prefix;
        for (i, v) in self.values.iter_mut().enumerate().take(self.exact_from) {
            *v = project(key(i), prefix);
        }
        self.values
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn projections_of(keys: &[Vec<u8>]) -> (Vec<u64>, usize) {
        let mut p = KeyProjections::default();
        for k in keys {
            p.add(&keys[0], k);
        }
        let prefix = p.prefix();
        (p.finish(|i| &keys[i]), prefix)
    }

    #[test]
    fn examples() {
        let keys: Vec<Vec<u8>> = [&b"user:0001"[..], b"user:0002", b"user:0100", b"user:1"]
            .iter()
            .map(|k| k.to_vec())
            .collect();
        let (values, prefix) = projections_of(&keys);
        assert_eq!(prefix, 5);
        assert_eq!(values[0], u64::from_be_bytes(*b"0001\0\0\0\0"));
        assert_eq!(values[3], u64::from_be_bytes(*b"1\0\0\0\0\0\0\0"));
        let (values, prefix) = projections_of(&[b"only".to_vec()]);
        assert_eq!((values, prefix), (vec![0], 4));
    }

    proptest! {
        /// Whatever order the prefix shrinks in, the result is every key projected against the
        /// common prefix of the first and last key.
        #[test]
        fn equals_projecting_against_the_final_prefix(
            mut keys in prop::collection::vec(
                prop::collection::vec(prop::sample::select(vec![0u8, 1, 0x61, 0xff]), 0..12),
                1..60,
            ),
        ) {
            keys.sort();
            let (values, prefix) = projections_of(&keys);
            let (first, last) = (&keys[0], &keys[keys.len() - 1]);
            let expected_prefix = common_prefix_len(first, last);
            prop_assert_eq!(prefix, expected_prefix);
            let expected: Vec<u64> = keys.iter().map(|k| project(k, expected_prefix)).collect();
            prop_assert_eq!(values, expected);
        }
    }
}
