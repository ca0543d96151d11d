//! Splitting one key range into partitions for a parallel scan.
//!
//! Two splitters, both over one captured state and both reading no data block:
//! - [`Split::KeySpace`] (the Bourbon range-query follow-up's splitter): cut the key space
//!   between the range's ends into equal intervals. Balanced only when keys are spread
//!   evenly; on clustered keys one partition gets most of the work.
//! - [`Split::Balanced`]: cut at quantiles of the range's *entries*. The rank of any key —
//!   how many entries lie below it — is estimated from every file's learned index (the
//!   midpoint of the model's window for the key, exact to `±δ` positions; fence pointers for a
//!   file without a model), from the levels' cumulative entry counts, and for memtables by
//!   interpolating inside their key range. Each cut is found by bisection over the key axis
//!   until its rank is within a small tolerance of the target.
//!
//! Keys are placed on a u64 axis: the common prefix of the range's two ends is fixed and the
//! next 8 bytes are the coordinate (`index::projection`). Cuts are keys `prefix ‖ be(x)`;
//! keys that differ only after those 8 bytes cannot be separated, so a range can yield fewer
//! partitions than asked. Partitions tile the range exactly: every key of the range is in
//! exactly one of them.

use super::context::ScanState;
use super::scan::KeyRange;
use crate::index::projection::{common_prefix_len, project_bounded};
use crate::key::compare_user_keys;
use std::cmp::Ordering;
use std::ops::Bound;

/// How a parallel scan cuts its range into partitions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Split {
    /// Equal intervals of the key space (Bourbon's range-query follow-up).
    KeySpace,
    /// Equal numbers of entries, estimated from the files' learned indexes (default).
    #[default]
    Balanced,
}

impl Split {
    /// The CLI spelling: `keyspace` or `balanced`.
    pub fn name(self) -> &'static str {
        match self {
            Split::KeySpace => "keyspace",
            Split::Balanced => "balanced",
        }
    }

    /// Parses [`Split::name`].
    pub fn from_name(name: &str) -> Option<Split> {
        match name {
            "keyspace" => Some(Split::KeySpace),
            "balanced" => Some(Split::Balanced),
            _ => None,
        }
    }
}

/// The u64 axis of a key range: a fixed prefix, then 8 bytes as the coordinate.
struct KeyAxis {
    prefix: Vec<u8>,
}

impl KeyAxis {
    fn new(lo: &[u8], hi: &[u8]) -> Self {
        KeyAxis {
            prefix: lo
                .get(..common_prefix_len(lo, hi))
                .unwrap_or_default()
                .to_vec(),
        }
    }

    fn x(&self, key: &[u8]) -> u64 {
        project_bounded(key, &self.prefix)
    }

    fn key(&self, x: u64) -> Vec<u8> {
        let mut k = self.prefix.clone();
        k.extend_from_slice(&x.to_be_bytes());
        k
    }
}

/// Estimates how many entries of a state lie below a key, without reading data blocks.
struct RankEstimator<'s> {
    state: &'s ScanState,
    /// Per sorted run: entries of the files before each file (prefix sums).
    run_before: Vec<Vec<u64>>,
    /// Per memtable: its key range (as an axis), first and last key, and entry count.
    memtables: Vec<(KeyAxis, Vec<u8>, Vec<u8>, u64)>,
}

impl<'s> RankEstimator<'s> {
    fn new(state: &'s ScanState) -> Self {
        let version = &state.view.version;
        let run_before = version
            .runs
            .iter()
            .map(|run| {
                let mut sum = 0;
                run.files
                    .iter()
                    .map(|f| {
                        let before = sum;
                        sum += f.table.entries();
                        before
                    })
                    .collect()
            })
            .collect();
        let memtables = state
            .view
            .memtables
            .iter()
            .filter_map(|m| {
                let (first, last) = m.key_range()?;
                Some((KeyAxis::new(&first, &last), first, last, m.len() as u64))
            })
            .collect();
        RankEstimator {
            state,
            run_before,
            memtables,
        }
    }

    /// Estimated number of entries (all versions) with a user key below `key`.
    fn rank(&self, key: &[u8]) -> u64 {
        let version = &self.state.view.version;
        let mut rank = 0u64;
        let in_file = |f: &crate::version::TableFile| -> u64 {
            if compare_user_keys(key, f.smallest_key()) != Ordering::Greater {
                0
            } else if compare_user_keys(key, f.largest_key()) == Ordering::Greater {
                f.table.entries()
            } else {
                f.table.rank_estimate(key)
            }
        };
        if let Some(l0) = version.levels.first() {
            rank += l0.iter().map(|f| in_file(f)).sum::<u64>();
        }
        for (run, r) in version.runs.iter().enumerate() {
            let files = &r.files;
            let i = version.file_index(run, key);
            let before = self.run_before.get(run).and_then(|b| b.get(i)).copied();
            rank += match (before, files.get(i)) {
                (Some(before), Some(f)) => before + in_file(f),
                _ => files.iter().map(|f| f.table.entries()).sum(),
            };
        }
        for (axis, first, last, n) in &self.memtables {
            rank += if compare_user_keys(key, first) != Ordering::Greater {
                0
            } else if compare_user_keys(key, last) == Ordering::Greater {
                *n
            } else {
                let (a, b, x) = (axis.x(first), axis.x(last), axis.x(key));
                let span = b.saturating_sub(a).max(1);
                ((u128::from(x.saturating_sub(a)) * u128::from(*n)) / u128::from(span)) as u64
            };
        }
        rank
    }
}

/// Estimated number of entries of `state` (every version and tombstone, in its memtables and
/// tables) whose user key sorts below `key`, read from the files' indexes and the
/// memtables' key ranges: no data block is read.
pub(crate) fn rank_below(state: &ScanState, key: &[u8]) -> u64 {
    RankEstimator::new(state).rank(key)
}

/// The smallest and largest user key present in the state's files and memtables.
fn key_extent(state: &ScanState) -> Option<(Vec<u8>, Vec<u8>)> {
    let mut lo: Option<Vec<u8>> = None;
    let mut hi: Option<Vec<u8>> = None;
    let mut widen = |first: &[u8], last: &[u8]| {
        if lo.as_deref().is_none_or(|l| first < l) {
            lo = Some(first.to_vec());
        }
        if hi.as_deref().is_none_or(|h| last > h) {
            hi = Some(last.to_vec());
        }
    };
    for m in state.view.memtables.iter() {
        if let Some((first, last)) = m.key_range() {
            widen(&first, &last);
        }
    }
    for files in &state.view.version.levels {
        for f in files {
            widen(f.smallest_key(), f.largest_key());
        }
    }
    Some((lo?, hi?))
}

/// Cuts `range` into at most `partitions` sub-ranges in key order that tile it exactly.
pub(crate) fn split(
    state: &ScanState,
    range: &KeyRange,
    partitions: usize,
    how: Split,
) -> Vec<KeyRange> {
    let cuts = if partitions > 1 {
        cut_keys(state, range, partitions, how)
    } else {
        Vec::new()
    };
    let mut out = Vec::with_capacity(cuts.len() + 1);
    let mut start = range.0.clone();
    for cut in cuts {
        out.push((start, Bound::Excluded(cut.clone())));
        start = Bound::Included(cut);
    }
    out.push((start, range.1.clone()));
    out
}

/// The cut keys: strictly increasing, strictly inside the range.
fn cut_keys(state: &ScanState, range: &KeyRange, partitions: usize, how: Split) -> Vec<Vec<u8>> {
    let Some((min_key, max_key)) = key_extent(state) else {
        return Vec::new();
    };
    let lo = match &range.0 {
        Bound::Included(k) | Bound::Excluded(k) => k.clone(),
        Bound::Unbounded => min_key,
    };
    let hi = match &range.1 {
        Bound::Included(k) | Bound::Excluded(k) => k.clone(),
        Bound::Unbounded => max_key,
    };
    if compare_user_keys(&lo, &hi) != Ordering::Less {
        return Vec::new();
    }
    let axis = KeyAxis::new(&lo, &hi);
    let (x_lo, x_hi) = (axis.x(&lo), axis.x(&hi));
    let n = partitions as u128;
    let mut cuts: Vec<Vec<u8>> = match how {
        Split::KeySpace => (1..partitions as u128)
            .map(|i| {
                let x = u128::from(x_lo) + (u128::from(x_hi - x_lo) * i) / n;
                axis.key(x as u64)
            })
            .collect(),
        Split::Balanced => {
            let ranks = RankEstimator::new(state);
            let (r_lo, r_hi) = (ranks.rank(&lo), ranks.rank(&hi));
            let total = r_hi.saturating_sub(r_lo);
            // Stop bisecting once a cut is within 0.5% of a partition's share.
            let tolerance = (total / (partitions as u64 * 200)).max(1);
            (1..partitions as u64)
                .map(|i| {
                    let target = r_lo + (u128::from(total) * u128::from(i) / n) as u64;
                    axis.key(bisect(&axis, &ranks, x_lo, x_hi, target, tolerance))
                })
                .collect()
        }
    };
    cuts.retain(|c| {
        compare_user_keys(c, &lo) == Ordering::Greater
            && compare_user_keys(c, &hi) == Ordering::Less
    });
    cuts.sort_by(|a, b| compare_user_keys(a, b));
    cuts.dedup();
    cuts
}

/// The smallest coordinate in `[lo, hi]` whose key's estimated rank reaches `target` (or is
/// within `tolerance` of it).
fn bisect(
    axis: &KeyAxis,
    ranks: &RankEstimator<'_>,
    lo: u64,
    hi: u64,
    target: u64,
    tolerance: u64,
) -> u64 {
    let (mut lo, mut hi) = (lo, hi);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let r = ranks.rank(&axis.key(mid));
        if r.abs_diff(target) <= tolerance {
            return mid;
        }
        if r < target {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}
