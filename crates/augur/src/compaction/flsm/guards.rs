//! Guards of the fragmented LSM: which keys are guards (a hash of the key, as in PebblesDB).
//! Where a key or file sits among a level's guards is the version's business
//! (`version::guards`).
//!
//! A level's guards are sorted keys `g_1 < … < g_m`. They cut the level into `m + 1` slots:
//! slot 0 (the *sentinel*) holds keys below `g_1`, slot `i` holds `[g_i, g_{i+1})`. Every
//! file of the level lies inside one slot. A key is a guard candidate of level `l` (>= 1)
//! when the [`GuardBits::bits`] of `l` low bits of its hash are all set; the bits never grow
//! with depth, so the candidates of level `l` are also candidates of every deeper level, and
//! committed guards keep that shape (the guards of level `l` are a subset of level `l + 1`'s).
//!
//! **Density follows the file size.** Level `l` needs `max(top_level_bits − (l − 1) ·
//! bit_decrement, floor)` bits, where the floor is the number of bits whose guard spacing
//! (`2^floor` keys on average) holds at least one target file:
//! `floor = ⌈log2(target_file_size_bytes / bytes_per_entry)⌉`. `bytes_per_entry` is
//! measured on the data being compacted (its input files' bytes over their entries, so
//! separated values, key and value sizes and per-file overhead are all counted); a compaction
//! of inputs that record no entries assumes [`ASSUMED_ENTRY_BYTES`]. PebblesDB's defaults
//! tie its deepest level to its file size the same way: `top_level_bits` 27 and
//! `bit_decrement` 2 over six guarded levels (LevelDB's seven, L0 unguarded) give the deepest
//! 27 − 5·2 = 17 bits, one guard per 131,072 keys, about 18 MiB of the thesis's 144-byte
//! entries (16-byte keys, 128-byte values): of the order of one sstable (thesis §4.4; its
//! Table 5.1 measures a mean sstable of 17.23 MB for PebblesDB, 13.33 MB for HyperLevelDB).
//! Without the floor, the deepest levels of a 7-level tree got one guard per 1,024 keys
//! (20 − 5·2 bits) and so one ~150 KB file per guard whatever the target file size.
//!
//! Because the floor follows the measured entry size, a key's candidacy can differ between
//! compactions of differently sized data. That is safe: a guard is committed only by the
//! executor, at every level from its candidate level down (the subset rule holds for any
//! candidate function), and committed guards are persisted in the manifest, never
//! recomputed, so guards recorded by older builds (denser ones included) stay valid.

use crate::options::FlsmOptions;

/// The hash that decides guard candidacy (xxh3, stable across releases: guards persist).
pub fn guard_hash(user_key: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(user_key)
}

/// Bytes per entry assumed when a compaction's inputs record no entries: db_bench's and the
/// PebblesDB thesis's 16-byte keys with 128-byte values.
pub const ASSUMED_ENTRY_BYTES: u64 = 144;

/// The fewest guard bits any level may need: the smallest `b` whose spacing, `2^b` keys of
/// `bytes_per_entry` bytes, holds a whole target file (`⌈log2(target / bytes_per_entry)⌉`,
/// at most 63). A level with fewer bits would cut its data into files smaller than the
/// target, one per guard.
pub fn min_guard_bits(target_file_size_bytes: u64, bytes_per_entry: u64) -> u32 {
    let keys_per_file = target_file_size_bytes / bytes_per_entry.max(1);
    if keys_per_file <= 1 {
        return 0;
    }
    // ⌈log2(k)⌉ for k >= 2 is the bit length of k − 1.
    (u64::BITS - (keys_per_file - 1).leading_zeros()).min(63)
}

/// The guard bits of every level of one tree, fixed for one compaction: level `l >= 1` needs
/// `max(top_level_bits − (l − 1)·bit_decrement, floor)` low hash bits set (see the module
/// doc). Never increasing with depth.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuardBits {
    /// `bits[l]` for `l` in `0..=last_level`; `bits[0]` is unused (L0 has no guards).
    bits: Vec<u32>,
}

impl GuardBits {
    /// The bits of levels `1..=last_level` under `opts`, for files of `target_file_size_bytes`
    /// holding entries of `bytes_per_entry` bytes (0 is taken as 1).
    pub fn new(
        opts: &FlsmOptions,
        target_file_size_bytes: u64,
        bytes_per_entry: u64,
        last_level: usize,
    ) -> Self {
        let floor = min_guard_bits(target_file_size_bytes, bytes_per_entry);
        let bits = (0..=last_level)
            .map(|l| {
                let depth = u32::try_from(l.saturating_sub(1)).unwrap_or(u32::MAX);
                opts.top_level_bits
                    .saturating_sub(depth.saturating_mul(opts.bit_decrement))
                    .max(floor)
            })
            .collect();
        GuardBits { bits }
    }

    /// The deepest level these bits describe.
    #[cfg(test)]
    pub fn last_level(&self) -> usize {
        self.bits.len().saturating_sub(1)
    }

    /// The low hash bits a key needs to be a guard candidate of `level` (>= 1); `None` for
    /// a level beyond the last.
    #[cfg(test)]
    pub fn bits(&self, level: usize) -> Option<u32> {
        self.bits.get(level).copied()
    }

    /// The shallowest level (>= 1, <= the last) at which `user_key` is a guard candidate,
    /// or `None` when it is a candidate at no level of the tree.
    pub fn candidate_level(&self, user_key: &[u8]) -> Option<usize> {
        let ones = guard_hash(user_key).trailing_ones();
        (1..self.bits.len()).find(|&l| self.bits.get(l).is_some_and(|&b| ones >= b))
    }
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
        // Files of one entry: the floor is 0 bits and does not bind.
        let bits = GuardBits::new(&opts, 4096, 4096, 6);
        let mut per_level = [0usize; 7];
        for i in 0u32..200_000 {
            let key = i.to_be_bytes();
            if let Some(l) = bits.candidate_level(&key) {
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
    fn the_floor_is_one_target_file_of_entries() {
        // 32 MiB of 144-byte entries is 233,016 keys: 2^18 is the first power above.
        assert_eq!(min_guard_bits(32 << 20, 144), 18);
        assert_eq!(min_guard_bits(4096, 64), 6); // exactly 64 keys
        assert_eq!(min_guard_bits(4096, 63), 7); // 65 keys
        assert_eq!(min_guard_bits(4096, 4096), 0);
        assert_eq!(min_guard_bits(4096, 1 << 20), 0);
        assert_eq!(min_guard_bits(4096, 0), 12); // 0 is taken as 1 byte
        assert_eq!(min_guard_bits(u64::MAX, 1), 63);
    }

    #[test]
    fn the_floor_clamps_levels_whose_spacing_is_below_a_file() {
        let defaults = FlsmOptions::default();
        let bits = GuardBits::new(&defaults, 32 << 20, 144, 6);
        let per_level: Vec<u32> = (1..=6).filter_map(|l| bits.bits(l)).collect();
        // 20 − (l−1)·2 until it meets the floor of 18.
        assert_eq!(per_level, [20, 18, 18, 18, 18, 18]);
        assert_eq!(bits.last_level(), 6);
        assert_eq!(bits.bits(7), None);
        // The overrides of the issue (every other key a guard) are clamped to the floor.
        let dense = FlsmOptions {
            top_level_bits: 1,
            bit_decrement: 0,
            ..FlsmOptions::default()
        };
        let bits = GuardBits::new(&dense, 32 << 20, 144, 6);
        assert!((1..=6).all(|l| bits.bits(l) == Some(18)), "{bits:?}");
        // Larger entries lower the floor; smaller ones (values separated) raise it.
        assert_eq!(GuardBits::new(&dense, 32 << 20, 1040, 6).bits(6), Some(15));
        assert_eq!(GuardBits::new(&dense, 32 << 20, 40, 6).bits(6), Some(20));
        // PebblesDB's defaults on LevelDB's seven levels: 17 bits at the deepest.
        let thesis = FlsmOptions {
            top_level_bits: 27,
            ..FlsmOptions::default()
        };
        assert_eq!(GuardBits::new(&thesis, 4096, 4096, 6).bits(6), Some(17));
    }

    #[test]
    fn clamped_candidates_are_spaced_at_least_a_file_apart() {
        let dense = FlsmOptions {
            top_level_bits: 1,
            bit_decrement: 0,
            ..FlsmOptions::default()
        };
        // 4 KiB files of 64-byte entries: 64 keys per file, 6 bits.
        let bits = GuardBits::new(&dense, 4096, 64, 3);
        let n = 200_000u32;
        let guards = (0..n)
            .filter(|i| bits.candidate_level(&i.to_be_bytes()).is_some())
            .count();
        let spacing = f64::from(n) / guards as f64;
        assert!(
            (48.0..=80.0).contains(&spacing),
            "one guard per {spacing} keys"
        );
        // Every candidate is a candidate of level 1 (all levels share the floor).
        assert!((0..n).all(|i| {
            let k = i.to_be_bytes();
            bits.candidate_level(&k).is_none_or(|l| l == 1)
        }));
    }
}
