//! Leveled compaction, as RocksDB runs it:
//!
//! - **Dynamic level sizes** (`Options::dynamic_level_bytes`, default on): level targets are
//!   set from the last level up, so the last level holds about `ratio / (ratio + 1)` of the
//!   data (space amplification ≈ 1.1 once settled). While the data is small, L0 compacts
//!   straight into the last level; the *base level* (where L0 goes) moves up one level each
//!   time the last level outgrows another factor of the ratio over the base budget: the
//!   larger of `l1_max_bytes` and ratio/2 L0 batches (see `level_targets`). Without it, level `n >= 1` may
//!   hold `l1_max_bytes × ratio^(n-1)` bytes and L0 goes to L1 (LevelDB).
//! - **Partial L0 picking**: the oldest L0 file and every L0 file overlapping it, transitively.
//!   No L0 file left behind overlaps a picked one, so the picked files may move below the
//!   ones left (which are all newer where they overlap nothing picked). Under random writes
//!   every L0 file overlaps every other and all are taken.
//! - **File picking by minimal overlapping ratio** at levels >= 1: the file whose overlap
//!   with the next level, in bytes, is smallest relative to its own size (the cheapest
//!   compaction per byte moved down).
//!
//! The level with the highest score (L0: files over `l0_compaction_trigger`; others: bytes
//! over target) goes first. A level above the base level that still holds data (the data
//! shrank and the base moved down) keeps receiving L0's files, and its target is the base's
//! divided by the ratio once per level between them: it drains down once it outgrows it.

use super::{Choice, Compaction, LeveledLayout, OutputLayout, Strategy};
use crate::options::Options;
use crate::version::{TableFile, Version};
use std::sync::Arc;

/// The leveled strategy. Stateless: every choice is a function of the version.
#[derive(Debug, Default)]
pub struct Leveled;

/// Maximum bytes of level `level >= 1` with static level sizes (LevelDB's rule; also
/// FLSM's per-level budget).
pub fn max_bytes_for_level(opts: &Options, level: usize) -> u64 {
    let mut bytes = opts.l1_max_bytes;
    for _ in 1..level {
        bytes = bytes.saturating_mul(opts.level_size_ratio);
    }
    bytes
}

/// Where L0 compacts to and how many bytes each level >= 1 may hold.
#[derive(Debug, Clone, PartialEq)]
pub struct LevelTargets {
    /// The level L0's files compact into when every level above it is empty.
    pub base_level: usize,
    /// Target bytes per level (index 0 unused).
    pub bytes: Vec<f64>,
}

/// Computes the level targets of `version` (see the module doc).
pub fn level_targets(version: &Version, opts: &Options) -> LevelTargets {
    let levels = version.levels.len();
    let last = levels.saturating_sub(1);
    if !opts.dynamic_level_bytes || last <= 1 {
        let bytes = (0..levels)
            .map(|l| max_bytes_for_level(opts, l.max(1)) as f64)
            .collect();
        return LevelTargets {
            base_level: 1,
            bytes,
        };
    }
    let ratio = opts.level_size_ratio as f64;
    // The last level stays the base while it holds at most ratio/2 L0 batches (a batch:
    // the `l0_compaction_trigger` memtables one L0 compaction takes). Merging a batch of B
    // bytes straight into a last level of S rewrites 1 + S/B bytes per byte; passing it
    // through a level of b = S/ratio above costs (1 + b/B) + (1 + S/(b + B)). The two cross
    // near S = ratio/2 × B, which is above `l1_max_bytes` with the defaults (1.28 GB vs
    // 256 MiB): a small database pays one merge per batch, not two.
    let batch = opts.l0_compaction_trigger as f64 * opts.memtable_size_bytes as f64;
    let base_max = (opts.l1_max_bytes as f64).max(batch * ratio / 2.0);
    let largest = (1..levels)
        .map(|l| version.level_bytes(l))
        .max()
        .unwrap_or(0) as f64;
    let (base_level, base_bytes) = if largest <= base_max {
        (last, base_max)
    } else {
        // Walk up from the last level, dividing by the ratio, until a level's share fits
        // the base budget (or L1 is reached and takes what is left).
        let mut share = largest;
        let mut base = last;
        while base > 1 && share > base_max {
            share /= ratio;
            base -= 1;
        }
        (base, share)
    };
    let bytes = (0..levels)
        .map(|l| {
            let exp = l as i32 - base_level as i32;
            base_bytes * ratio.powi(exp)
        })
        .collect();
    LevelTargets { base_level, bytes }
}

/// Urgency of each level that can be compacted (all but the last): >= 1 means compact.
pub fn scores(version: &Version, opts: &Options) -> Vec<f64> {
    let targets = level_targets(version, opts);
    let last = version.levels.len().saturating_sub(1);
    (0..last)
        .map(|level| {
            if level == 0 {
                version.levels[0].len() as f64 / opts.l0_compaction_trigger as f64
            } else {
                let bytes = version.level_bytes(level) as f64;
                if bytes == 0.0 {
                    0.0
                } else {
                    bytes / targets.bytes[level].max(1.0)
                }
            }
        })
        .collect()
}

/// The level L0's files go to: the base level, or a shallower one that still holds data
/// (newer data must never land below older data of the same keys).
pub fn l0_output_level(version: &Version, opts: &Options) -> usize {
    let base = level_targets(version, opts).base_level;
    (1..base)
        .find(|&l| !version.levels[l].is_empty())
        .unwrap_or(base)
}

/// The oldest L0 file and every L0 file overlapping the picked ones, transitively.
pub fn pick_l0(l0: &[Arc<TableFile>]) -> Vec<Arc<TableFile>> {
    // L0 is sorted newest first: the oldest file is the last.
    let Some(oldest) = l0.last() else {
        return Vec::new();
    };
    let mut picked = vec![false; l0.len()];
    picked[l0.len() - 1] = true;
    let mut lo = oldest.smallest_key();
    let mut hi = oldest.largest_key();
    loop {
        let mut grew = false;
        for (i, f) in l0.iter().enumerate() {
            if !picked[i] && f.smallest_key() <= hi && lo <= f.largest_key() {
                picked[i] = true;
                lo = lo.min(f.smallest_key());
                hi = hi.max(f.largest_key());
                grew = true;
            }
        }
        if !grew {
            break;
        }
    }
    l0.iter()
        .zip(picked)
        .filter(|(_, p)| *p)
        .map(|(f, _)| f.clone())
        .collect()
}

/// The file of `files` whose overlap with `next` (sorted, disjoint) is the smallest per
/// byte of the file. Ties go to the file with the smallest key.
pub fn pick_min_overlap<'f>(
    files: &'f [Arc<TableFile>],
    next: &[Arc<TableFile>],
) -> Option<&'f Arc<TableFile>> {
    let mut prefix = Vec::with_capacity(next.len() + 1);
    prefix.push(0u64);
    for f in next {
        prefix.push(prefix[prefix.len() - 1] + f.meta.file_size);
    }
    files.iter().min_by_key(|f| {
        let first = next.partition_point(|n| n.largest_key() < f.smallest_key());
        let end = next.partition_point(|n| n.smallest_key() <= f.largest_key());
        let overlap = prefix[end.max(first)] - prefix[first];
        u128::from(overlap) * 1024 / u128::from(f.meta.file_size.max(1))
    })
}

impl Leveled {
    /// The leveled strategy.
    pub fn new() -> Self {
        Self
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

    fn splits_by_key_range(&self) -> bool {
        true
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
        if level == 0 {
            return l0_compaction(version, opts).map_or(Choice::None, Choice::Merge);
        }
        let next = &version.levels[level + 1];
        let Some(f) = pick_min_overlap(&version.levels[level], next) else {
            return Choice::None;
        };
        Choice::Merge(merge_into(version, level, vec![f.clone()], level + 1))
    }
}

/// The compaction of L0's oldest file and its overlaps ([`pick_l0`]) into
/// [`l0_output_level`]; `None` when L0 is empty. Also what `db/expiry.rs` runs when L0 holds
/// expired values that no flush would ever push down.
pub fn l0_compaction(version: &Version, opts: &Options) -> Option<Compaction> {
    let inputs = pick_l0(version.levels.first()?);
    if inputs.is_empty() {
        return None;
    }
    Some(merge_into(version, 0, inputs, l0_output_level(version, opts)))
}

/// `inputs` of `level` merged with what they overlap in `output_level`.
fn merge_into(
    version: &Version,
    level: usize,
    inputs: Vec<Arc<TableFile>>,
    output_level: usize,
) -> Compaction {
    let lo = inputs.iter().map(|f| f.smallest_key()).min();
    let hi = inputs.iter().map(|f| f.largest_key()).max();
    let next_inputs = version.overlapping(output_level, lo, hi);
    Compaction {
        level,
        inputs,
        next_inputs,
        output_level,
        allow_trivial_move: true,
        memtable: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::{FileSystem, MemFs, ReadMode};
    use crate::key::{InternalKey, ValueKind};
    use crate::sst::{Builder, BuilderOptions, Table};
    use crate::version::FileMeta;
    use std::path::Path;

    /// One real (tiny) table every fake file shares: the strategy reads only the metadata.
    fn shared_table(fs: &Arc<dyn FileSystem>) -> Arc<Table> {
        let path = Path::new("/t/000001.sst");
        let file = fs.create(path).unwrap();
        let mut b = Builder::new(file, path.to_path_buf(), BuilderOptions::default());
        b.add(b"a", 1, ValueKind::Value, b"v").unwrap();
        b.finish().unwrap();
        Arc::new(Table::open(fs.as_ref(), path, 1, ReadMode::Pread).unwrap())
    }

    struct Files {
        fs: Arc<dyn FileSystem>,
        table: Arc<Table>,
        next_id: u64,
    }

    impl Files {
        fn new() -> Self {
            let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
            fs.create_dir_all(Path::new("/t")).unwrap();
            let table = shared_table(&fs);
            Files {
                fs,
                table,
                next_id: 10,
            }
        }

        /// A file of `[lo, hi]` (single-byte keys) holding `size` bytes.
        fn file(&mut self, lo: u8, hi: u8, size: u64) -> Arc<TableFile> {
            self.next_id += 1;
            let meta = FileMeta {
                file_id: self.next_id,
                file_size: size,
                entries: 1,
                smallest: InternalKey::new(vec![lo], 1, ValueKind::Value),
                largest: InternalKey::new(vec![hi], 1, ValueKind::Value),
                value_segments: None,
                expiry: None,
            };
            Arc::new(TableFile::new(meta, self.table.clone(), self.fs.clone()))
        }
    }

    fn opts(dynamic: bool) -> Options {
        Options {
            dynamic_level_bytes: dynamic,
            // L0 batches of 4 × 50 bytes: ratio/2 of them is the 1,000 of `l1_max_bytes`.
            memtable_size_bytes: 50,
            l0_compaction_trigger: 4,
            l1_max_bytes: 1000,
            level_size_ratio: 10,
            num_levels: 5,
            ..Options::default()
        }
    }

    #[test]
    fn dynamic_targets_grow_from_the_last_level() {
        let mut f = Files::new();
        let o = opts(true);
        let mut v = Version::new(5);
        // Small data: L0 compacts straight into the last level.
        assert_eq!(level_targets(&v, &o).base_level, 4);
        v.levels[4] = vec![f.file(0, 9, 900)];
        assert_eq!(level_targets(&v, &o).base_level, 4);
        // 50,000 bytes at the bottom: L3 may hold 5,000 > 1,000, L2 500 fits: base L2.
        v.levels[4] = vec![f.file(0, 9, 50_000)];
        let t = level_targets(&v, &o);
        assert_eq!(t.base_level, 2);
        assert!((t.bytes[2] - 500.0).abs() < 1e-6, "{t:?}");
        assert!((t.bytes[3] - 5_000.0).abs() < 1e-6, "{t:?}");
        // Static sizes: L1 gets 1,000, L2 10,000.
        let s = level_targets(&v, &opts(false));
        assert_eq!(s.base_level, 1);
        assert_eq!(s.bytes[2], 10_000.0);
    }

    #[test]
    fn l0_goes_to_the_shallowest_level_holding_data() {
        let mut f = Files::new();
        let o = opts(true);
        let mut v = Version::new(5);
        v.levels[4] = vec![f.file(0, 9, 50_000)];
        assert_eq!(l0_output_level(&v, &o), 2);
        // Data left above the base level (it shrank): L0 must not jump below it.
        v.levels[1] = vec![f.file(3, 4, 10)];
        assert_eq!(l0_output_level(&v, &o), 1);
        // A level above the base holds the base's share over ratio^distance (50 bytes
        // here): more than that and it drains down.
        assert!(scores(&v, &o)[1] < 1.0);
        v.levels[1] = vec![f.file(3, 4, 60)];
        assert!(scores(&v, &o)[1] > 1.0);
    }

    #[test]
    fn l0_picks_the_oldest_file_and_its_overlaps_transitively() {
        let mut f = Files::new();
        // Oldest is last. Oldest [10,20] overlaps [18,30] which overlaps [29,40]; [50,60]
        // overlaps none of them.
        let oldest = f.file(10, 20, 1);
        let b = f.file(18, 30, 1);
        let c = f.file(29, 40, 1);
        let d = f.file(50, 60, 1);
        let l0 = vec![d.clone(), c.clone(), b.clone(), oldest.clone()];
        let picked: Vec<u64> = pick_l0(&l0).iter().map(|x| x.meta.file_id).collect();
        let mut want = vec![c.meta.file_id, b.meta.file_id, oldest.meta.file_id];
        want.sort_unstable();
        let mut got = picked.clone();
        got.sort_unstable();
        assert_eq!(got, want);
        // A file spanning everything pulls in all.
        let all = f.file(0, 99, 1);
        let l0 = vec![all, d, c, b, oldest];
        assert_eq!(pick_l0(&l0).len(), 5);
        assert!(pick_l0(&[]).is_empty());
    }

    #[test]
    fn min_overlap_picks_the_cheapest_file_per_byte() {
        let mut f = Files::new();
        let next = vec![f.file(0, 9, 1000), f.file(10, 19, 10), f.file(20, 29, 1000)];
        // [0,5] overlaps 1000 bytes per 100; [12,15] 10 per 100; [25,40] 1000 per 100.
        let files = vec![f.file(0, 5, 100), f.file(12, 15, 100), f.file(25, 40, 100)];
        let best = pick_min_overlap(&files, &next).unwrap();
        assert_eq!(best.smallest_key(), &[12]);
        // A file overlapping nothing costs nothing.
        let files = vec![f.file(0, 5, 100), f.file(30, 35, 100)];
        assert_eq!(pick_min_overlap(&files, &next).unwrap().smallest_key(), &[30]);
        assert!(pick_min_overlap(&[], &next).is_none());
    }
}
