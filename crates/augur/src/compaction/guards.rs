//! Guards of the fragmented LSM: which keys are guards (a hash of the key, as in PebblesDB)
//! and where a key or file sits among a level's guards.
//!
//! A level's guards are sorted keys `g_1 < … < g_m`. They cut the level into `m + 1` slots:
//! slot 0 (the *sentinel*) holds keys below `g_1`, slot `i` holds `[g_i, g_{i+1})`. Every
//! file of the level lies inside one slot. A key is a guard candidate of level `l` (>= 1)
//! when the `top_level_bits − (l − 1)·bit_decrement` low bits of its hash are all set, so
//! the candidates of level `l` are also candidates of every deeper level; committed guards
//! keep that shape (the guards of level `l` are a subset of level `l + 1`'s).

use super::style::FlsmOptions;
use crate::version::TableFile;
use std::sync::Arc;

/// The hash that decides guard candidacy (xxh3, stable across releases: guards persist).
pub fn guard_hash(user_key: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(user_key)
}

/// The shallowest level (>= 1, <= `last_level`) at which `user_key` is a guard candidate,
/// or `None` when it is a candidate at no level of the tree.
pub fn candidate_level(user_key: &[u8], opts: &FlsmOptions, last_level: usize) -> Option<usize> {
    let ones = guard_hash(user_key).trailing_ones();
    let level = if ones >= opts.top_level_bits {
        1
    } else if opts.bit_decrement == 0 {
        return None;
    } else {
        let missing = opts.top_level_bits - ones;
        1 + missing.div_ceil(opts.bit_decrement) as usize
    };
    (level <= last_level).then_some(level)
}

/// The slot of `user_key` among sorted `guards`: 0 below the first guard, `i` in
/// `[guards[i-1], guards[i])`.
#[inline]
pub fn slot_of(guards: &[Vec<u8>], user_key: &[u8]) -> usize {
    guards.partition_point(|g| g.as_slice() <= user_key)
}

/// The half-open key range `[start, end)` of slot `slot` (`None` = unbounded).
pub fn slot_range(guards: &[Vec<u8>], slot: usize) -> (Option<&[u8]>, Option<&[u8]>) {
    let start = slot
        .checked_sub(1)
        .and_then(|i| guards.get(i))
        .map(Vec::as_slice);
    let end = guards.get(slot).map(Vec::as_slice);
    (start, end)
}

/// True when the file lies inside one slot of `guards`.
pub fn file_fits(guards: &[Vec<u8>], f: &TableFile) -> bool {
    slot_of(guards, f.smallest_key()) == slot_of(guards, f.largest_key())
}

/// The files of a level (sorted by smallest key) grouped by slot: `(slot, files)` for every
/// non-empty slot, in key order. Files that straddle a guard (never produced; tolerated for
/// robustness) count in the slot of their smallest key.
pub fn files_by_slot(
    guards: &[Vec<u8>],
    files: &[Arc<TableFile>],
) -> Vec<(usize, Vec<Arc<TableFile>>)> {
    let mut out: Vec<(usize, Vec<Arc<TableFile>>)> = Vec::new();
    for f in files {
        let slot = slot_of(guards, f.smallest_key());
        match out.last_mut() {
            Some((s, v)) if *s == slot => v.push(f.clone()),
            _ => out.push((slot, vec![f.clone()])),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_nest_by_level() {
        let opts = FlsmOptions {
            top_level_bits: 8,
            bit_decrement: 2,
            ..FlsmOptions::default()
        };
        let mut per_level = [0usize; 7];
        for i in 0u32..200_000 {
            let key = i.to_be_bytes();
            if let Some(l) = candidate_level(&key, &opts, 6) {
                let ones = guard_hash(&key).trailing_ones();
                assert!(
                    ones + 2 * (l as u32 - 1) >= 8,
                    "key {i} level {l} ones {ones}"
                );
                if l > 1 {
                    assert!(
                        ones + 2 * (l as u32 - 2) < 8,
                        "level {l} is not the shallowest"
                    );
                }
                per_level[l] += 1;
            }
        }
        // Each level adds about three times the previous levels' candidates (4× in total).
        assert!(per_level[1] > 400 && per_level[1] < 1200, "{per_level:?}");
        assert!(per_level[2] > 2 * per_level[1], "{per_level:?}");
        assert!(per_level[4] > 2 * per_level[3], "{per_level:?}");
        // Level 5 needs 8 − 4·2 = 0 bits: every key is a candidate by then.
        assert_eq!(
            per_level[1..=5].iter().sum::<usize>(),
            200_000,
            "{per_level:?}"
        );
        assert_eq!(per_level[6], 0, "{per_level:?}");
    }

    #[test]
    fn slots_are_half_open() {
        let guards = vec![b"d".to_vec(), b"m".to_vec()];
        assert_eq!(slot_of(&guards, b"a"), 0);
        assert_eq!(slot_of(&guards, b"d"), 1);
        assert_eq!(slot_of(&guards, b"lzz"), 1);
        assert_eq!(slot_of(&guards, b"m"), 2);
        assert_eq!(slot_range(&guards, 0), (None, Some(&b"d"[..])));
        assert_eq!(slot_range(&guards, 1), (Some(&b"d"[..]), Some(&b"m"[..])));
        assert_eq!(slot_range(&guards, 2), (Some(&b"m"[..]), None));
    }
}
