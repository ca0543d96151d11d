//! Leveled compaction (LevelDB): L0 is compacted when it has `l0_compaction_trigger` files;
//! level `n >= 1` when its size exceeds `l1_max_bytes × ratio^(n-1)`. The level with the
//! highest score (size over limit) goes first; inside a level, files are taken round-robin by
//! key so the whole key space is compacted evenly.

use super::{Choice, Compaction, LeveledLayout, OutputLayout, Strategy};
use crate::options::Options;
use crate::version::Version;
use parking_lot::Mutex;

/// The leveled strategy. Remembers, per level, where the last compaction ended.
#[derive(Debug, Default)]
pub struct Leveled {
    cursors: Mutex<Vec<Option<Vec<u8>>>>,
}

/// Maximum bytes of level `level >= 1`.
pub fn max_bytes_for_level(opts: &Options, level: usize) -> u64 {
    let mut bytes = opts.l1_max_bytes;
    for _ in 1..level {
        bytes = bytes.saturating_mul(opts.level_size_ratio);
    }
    bytes
}

/// Urgency of each level that can be compacted (all but the last): >= 1 means compact.
pub fn scores(version: &Version, opts: &Options) -> Vec<f64> {
    let last = version.levels.len().saturating_sub(1);
    (0..last)
        .map(|level| {
            if level == 0 {
                version.levels[0].len() as f64 / opts.l0_compaction_trigger as f64
            } else {
                version.level_bytes(level) as f64 / max_bytes_for_level(opts, level) as f64
            }
        })
        .collect()
}

impl Leveled {
    /// A leveled strategy with no compaction history.
    pub fn new() -> Self {
        Self::default()
    }
}

impl Strategy for Leveled {
    fn layout<'v>(
        &self,
        _c: &'v Compaction,
        _version: &'v Version,
        _opts: &Options,
    ) -> Box<dyn OutputLayout + 'v> {
        Box::new(LeveledLayout)
    }

    fn choose(&self, version: &Version, opts: &Options) -> Choice {
        let scores = scores(version, opts);
        let Some((level, score)) = scores
            .iter()
            .copied()
            .enumerate()
            .max_by(|a, b| a.1.total_cmp(&b.1))
        else {
            return Choice::None;
        };
        if score < 1.0 {
            return Choice::None;
        }
        let inputs = if level == 0 {
            // L0 files overlap each other: take them all, so no older version stays behind.
            version.levels[0].clone()
        } else {
            let files = &version.levels[level];
            let mut cursors = self.cursors.lock();
            if cursors.len() < version.levels.len() {
                cursors.resize(version.levels.len(), None);
            }
            let start = cursors[level]
                .as_deref()
                .map_or(0, |k| files.partition_point(|f| f.largest_key() <= k));
            let Some(f) = files.get(start).or_else(|| files.first()) else {
                return Choice::None;
            };
            cursors[level] = Some(f.largest_key().to_vec());
            vec![f.clone()]
        };
        let lo = inputs.iter().map(|f| f.smallest_key()).min();
        let hi = inputs.iter().map(|f| f.largest_key()).max();
        let next_inputs = version.overlapping(level + 1, lo, hi);
        Choice::Merge(Compaction {
            level,
            inputs,
            next_inputs,
            output_level: level + 1,
            allow_trivial_move: true,
        })
    }
}
