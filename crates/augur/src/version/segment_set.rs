//! [`SegmentSet`]: a set of value-log segment ids kept as runs of consecutive ids, the form in
//! which a [`Version`](super::Version) holds the segments garbage collection deleted.
//!
//! Why runs: the manifest must tell a segment GC deleted (pointers into it are obsolete, its
//! leftover file is removed at open) from a live one that is missing (damage), for as long as
//! any table or WAL may still hold a pointer into it — that is, for ever. As one id per
//! deleted segment, that list grew with every GC run and was rewritten whole into every
//! manifest an open starts. Segment ids are handed out consecutively and every id that stops
//! being live is recorded (GC's deletions, and the empty or torn segments an open removes), so
//! deleted ids form runs separated only by live segments: the set stays as small as the number
//! of live segments, whatever the number of GC runs. The run below the oldest live segment is
//! the watermark of docs/format/manifest.md.
//!
//! Membership is exact: a run never covers an id that was not inserted.

use std::collections::BTreeMap;

/// A set of segment ids stored as disjoint, non-adjacent runs `[first, end)`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SegmentSet {
    /// First id of each run → one past its last id. Invariant: runs are disjoint and not
    /// adjacent (a run ending at `e` is never followed by one starting at `e`).
    runs: BTreeMap<u64, u64>,
}

impl SegmentSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// True if `id` is in the set.
    pub fn contains(&self, id: u64) -> bool {
        self.runs
            .range(..=id)
            .next_back()
            .is_some_and(|(_, &end)| id < end)
    }

    /// Adds `id`.
    pub fn insert(&mut self, id: u64) {
        self.insert_run(id, 1);
    }

    /// Adds the `count` ids from `first` on (a run stops below `u64::MAX`).
    pub fn insert_run(&mut self, first: u64, count: u64) {
        let mut start = first;
        let mut end = first.saturating_add(count);
        if end <= start {
            return;
        }
        // Merge with a run that overlaps or touches `[start, end)` from below.
        if let Some((&s, &e)) = self.runs.range(..=start).next_back() {
            if e >= start {
                start = s;
                end = end.max(e);
            }
        }
        // Absorb every run that starts inside or right after `[start, end)`.
        while let Some((&s, &e)) = self.runs.range(start..).next() {
            if s > end {
                break;
            }
            self.runs.remove(&s);
            end = end.max(e);
        }
        self.runs.insert(start, end);
    }

    /// The largest id in the set.
    pub fn max(&self) -> Option<u64> {
        self.runs.values().next_back().map(|end| end - 1)
    }

    /// True if the set holds no id.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// The runs in id order, as `(first id, number of ids)`.
    pub fn runs(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.runs.iter().map(|(&first, &end)| (first, end - first))
    }

    /// The number of runs (what the set costs in memory and in a manifest snapshot).
    #[cfg(test)]
    pub fn run_count(&self) -> usize {
        self.runs.len()
    }
}

impl FromIterator<u64> for SegmentSet {
    fn from_iter<I: IntoIterator<Item = u64>>(ids: I) -> Self {
        let mut set = SegmentSet::new();
        for id in ids {
            set.insert(id);
        }
        set
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn runs_merge_and_membership_is_exact() {
        let mut set = SegmentSet::new();
        assert!(set.is_empty() && set.max().is_none());
        for id in [5, 7, 6, 1, 3] {
            set.insert(id);
        }
        assert_eq!(set.runs().collect::<Vec<_>>(), vec![(1, 1), (3, 1), (5, 3)]);
        set.insert(2);
        assert_eq!(set.runs().collect::<Vec<_>>(), vec![(1, 3), (5, 3)]);
        set.insert_run(4, 1);
        assert_eq!(set.runs().collect::<Vec<_>>(), vec![(1, 7)]);
        assert_eq!(set.max(), Some(7));
        assert!(!set.contains(0) && set.contains(1) && set.contains(7) && !set.contains(8));
        // Overlapping and repeated runs; a run reaching past u64::MAX is cut.
        set.insert_run(6, 10);
        set.insert_run(3, 2);
        assert_eq!(set.runs().collect::<Vec<_>>(), vec![(1, 15)]);
        set.insert_run(u64::MAX - 1, 5);
        set.insert(u64::MAX);
        set.insert_run(9, 0);
        assert!(set.contains(u64::MAX - 1) && !set.contains(u64::MAX));
        assert_eq!(set.run_count(), 2);
        assert_eq!(set.max(), Some(u64::MAX - 1));
    }

    /// Against a `BTreeSet`, for pseudo-random inserts and runs.
    #[test]
    fn matches_a_plain_set() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        let mut set = SegmentSet::new();
        let mut model = BTreeSet::new();
        for _ in 0..2_000 {
            let first = next(300);
            let count = if next(4) == 0 { next(6) } else { 1 };
            set.insert_run(first, count);
            model.extend(first..first + count);
            let runs: Vec<(u64, u64)> = set.runs().collect();
            for w in runs.windows(2) {
                assert!(w[0].0 + w[0].1 < w[1].0, "runs disjoint, not adjacent: {runs:?}");
            }
        }
        for id in 0..320 {
            assert_eq!(set.contains(id), model.contains(&id), "id {id}");
        }
        assert_eq!(set.max(), model.last().copied());
        assert_eq!(model.iter().copied().collect::<SegmentSet>(), set);
    }
}
