//! Where a key or a file sits among a level's guards (the fragmented LSM's partition of a
//! level into slots; which keys become guards is `compaction::guards`' business).
//!
//! A level's guards are sorted keys `g_1 < … < g_m`. They cut the level into `m + 1` slots:
//! slot 0 (the *sentinel*) holds keys below `g_1`, slot `i` holds `[g_i, g_{i+1})`. Every
//! file of the level lies inside one slot.

use super::table_file::TableFile;
use std::sync::Arc;

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
