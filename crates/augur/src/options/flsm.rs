//! Tunables of the fragmented LSM (PebblesDB's guards, per-guard limits, seek-based
//! compaction, parallel seeks), part of the engine's [`crate::Options`].

use crate::error::{Error, Result};

/// Tunables of the fragmented LSM (ignored under `Leveled`).
#[derive(Debug, Clone, PartialEq)]
pub struct FlsmOptions {
    /// A key is a guard of level 1 when the `top_level_bits` low bits of its hash are all
    /// set; each deeper level needs `bit_decrement` fewer — but never fewer than the
    /// *floor*, `⌈log2(target_file_size_bytes / bytes per entry)⌉` bits (bytes per entry
    /// measured on the data each compaction merges), whose spacing holds one target file:
    /// a guard finer than that would only cut files smaller than the target
    /// (`compaction::guards`). So these two options shape the shallow levels and cannot
    /// make a database of one tiny file per guard: a value below the floor acts as the
    /// floor. Default 20: with the default level sizes (L1 256 MiB) about one level-1 guard
    /// per million distinct keys, 4 per million at level 2; with the default 32 MiB files of
    /// 144-byte entries the floor is 18 bits, one guard per 262,144 keys, from level 2 down
    /// (PebblesDB's 27 is sized for LevelDB's 10 MiB L1 and 100M keys; its deepest level,
    /// 27 − 5·2 = 17 bits, is about one of its sstables).
    pub top_level_bits: u32,
    /// Bits fewer per level deeper (PebblesDB: 2, so each level has ~4× the guards of the
    /// one above), down to the floor of `top_level_bits`. Default 2.
    pub bit_decrement: u32,
    /// A guard of level 1 .. last-1 holding this many files is compacted into the next
    /// level (PebblesDB's `max_sstables_per_guard`). Default 4.
    pub max_sstables_per_guard: usize,
    /// A level >= 1 is due for size when its bytes exceed this many times the leveled limit
    /// (`l1_max_bytes × ratio^(l-1)`): appending costs no rewrite, so an FLSM level may hold
    /// several runs' worth of data. Default 4: measured at 30M keys against 1 (PebblesDB's
    /// leveled limits), it wrote less (WA 5.26 vs 5.46) *and* read faster (seekrandom 6.1 vs
    /// 7.8 µs), because data settles in fewer levels with fewer overlapping runs per guard
    /// (`docs/benchmarks/flsm.md`).
    pub level_size_runs: u64,
    /// A guard is compacted after this many *consecutive* seeks of its level landed in it
    /// while it held overlapping files (seek-based compaction); 0 disables it. Default 10.
    /// Counting every seek instead made random seeks compact every crowded guard at 30M
    /// keys, which slowed seekrandom 1.8× while it ran and pushed data a level deeper.
    pub seek_compaction_threshold: u32,
    /// Level `i` is compacted into `i + 1` when its bytes reach this fraction of level
    /// `i + 1`'s (PebblesDB's aggressive compaction, "within 25%"). Default 0.75.
    pub aggressive_ratio: f64,
    /// The second-to-last level rewrites a guard in place instead of merging it into the
    /// last level when the merge would read and write this many times the guard's bytes
    /// (the thesis's 25× heuristic). Default 25.
    pub rewrite_in_place_factor: u64,
    /// Threads that seek the files of a last-level guard in parallel (PebblesDB's parallel
    /// seeks, used on the last non-empty level only); 0 seeks them on the caller's thread.
    /// Default 0.
    pub parallel_seek_threads: usize,
}

impl Default for FlsmOptions {
    fn default() -> Self {
        FlsmOptions {
            top_level_bits: 20,
            bit_decrement: 2,
            max_sstables_per_guard: 4,
            level_size_runs: 4,
            seek_compaction_threshold: 10,
            aggressive_ratio: 0.75,
            rewrite_in_place_factor: 25,
            parallel_seek_threads: 0,
        }
    }
}

fn invalid(option: &str, why: &str) -> Error {
    Error::InvalidArgument(format!("option `flsm.{option}` {why}"))
}

impl FlsmOptions {
    /// Checks every field; the error names the first bad one.
    ///
    /// # Errors
    /// `Error::InvalidArgument` naming the option and its accepted range.
    pub fn validate(&self) -> Result<()> {
        if !(1..=63).contains(&self.top_level_bits) {
            return Err(invalid("top_level_bits", "must be between 1 and 63"));
        }
        if self.bit_decrement > 16 {
            return Err(invalid("bit_decrement", "must be at most 16"));
        }
        if !(2..=64).contains(&self.max_sstables_per_guard) {
            return Err(invalid(
                "max_sstables_per_guard",
                "must be between 2 and 64",
            ));
        }
        if !(1..=64).contains(&self.level_size_runs) {
            return Err(invalid("level_size_runs", "must be between 1 and 64"));
        }
        if !(self.aggressive_ratio.is_finite() && self.aggressive_ratio > 0.0) {
            return Err(invalid("aggressive_ratio", "must be a number above 0"));
        }
        if self.rewrite_in_place_factor < 1 {
            return Err(invalid("rewrite_in_place_factor", "must be at least 1"));
        }
        if self.parallel_seek_threads > 64 {
            return Err(invalid("parallel_seek_threads", "must be at most 64"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_names_the_option() {
        let bad = FlsmOptions {
            max_sstables_per_guard: 1,
            ..FlsmOptions::default()
        };
        let e = bad.validate().unwrap_err().to_string();
        assert!(e.contains("max_sstables_per_guard"), "{e}");
        assert!(FlsmOptions::default().validate().is_ok());
    }
}
