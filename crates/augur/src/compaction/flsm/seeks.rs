//! FLSM seek-based compaction's statistics: where scans' seeks land, counted per version.
//!
//! A slot is due once `seek_compaction_threshold` *consecutive* seeks of its level landed in
//! it while it held overlapping files (depth >= 2): a guard that a workload keeps seeking into
//! is worth merging, while random seeks spread over many guards (which would otherwise compact
//! everything, at the readers' expense) almost never make a streak.
//!
//! The counts belong to one version (its slots): they start over with the first seek of a
//! newer version, and a seek of an older one is ignored (its counts would never be read
//! again: the picker looks at the current version). They live here, not in the `Version`,
//! which is a value; the [`Flsm`](super::Flsm) strategy owns them (so the database's
//! background part, which owns the strategy, does), and scans reach them through their read
//! context as an [`iter::SeekObserver`](crate::iter::SeekObserver).

use crate::iter::SeekObserver;
use crate::version::Version;
use crate::work_signal::WorkSignal;
use parking_lot::Mutex;
use std::sync::Arc;

/// The seek statistics of one database. Lock order: `counts` is a leaf.
pub(crate) struct SeekStats {
    /// Consecutive seeks that make a crowded slot due (0: seek-based compaction is off).
    threshold: u32,
    /// Asked for work when a slot becomes due.
    wake: Arc<WorkSignal>,
    counts: Mutex<Counts>,
}

/// The counts of one version.
#[derive(Debug, Default)]
struct Counts {
    /// [`Version::number`] of the version counted; `None` before the first seek.
    version: Option<u64>,
    /// Per level: the current streak (the slot of the previous seek, the streak's length),
    /// or `None` for a level without a slot of overlapping files, whose seeks are not
    /// counted (they need not even find their slot).
    streaks: Vec<Option<(usize, u32)>>,
    /// Per level, per slot: the longest streak of seeks that landed in it.
    longest: Vec<Vec<u32>>,
}

impl Counts {
    /// Nothing counted yet for `version`.
    fn of(version: &Version) -> Counts {
        let streaks = (0..version.levels.len())
            .map(|l| {
                let crowded = version
                    .slots
                    .get(l)
                    .is_some_and(|s| s.iter().any(|s| s.depth >= 2));
                crowded.then_some((0, 0))
            })
            .collect();
        let longest = version.slots.iter().map(|s| vec![0; s.len()]).collect();
        Counts {
            version: Some(version.number),
            streaks,
            longest,
        }
    }
}

/// One more seek of a level landing in `slot`, after the level's streak `(last, len)`: the
/// new streak (its length counts the consecutive seeks into `slot`).
fn streak_step((last, len): (usize, u32), slot: usize) -> (usize, u32) {
    let len = if len > 0 && last == slot {
        len.saturating_add(1)
    } else {
        1
    };
    (slot, len)
}

impl SeekStats {
    /// Statistics that make a slot due after `threshold` consecutive seeks (0: never) and
    /// then wake `wake`.
    pub(crate) fn new(threshold: u32, wake: Arc<WorkSignal>) -> SeekStats {
        SeekStats {
            threshold,
            wake,
            counts: Mutex::default(),
        }
    }

    /// Whether seeks are counted at all (a threshold above 0).
    pub(crate) fn counts_seeks(&self) -> bool {
        self.threshold > 0
    }

    /// The level and slot of `version` that seeks made due, shallowest first.
    pub(crate) fn due(&self, version: &Version) -> Option<(usize, usize)> {
        if self.threshold == 0 {
            return None;
        }
        let counts = self.counts.lock();
        if counts.version != Some(version.number) {
            return None;
        }
        version.slots.iter().enumerate().find_map(|(level, slots)| {
            let longest = counts.longest.get(level)?;
            slots
                .iter()
                .zip(longest)
                .position(|(s, &n)| s.depth >= 2 && n >= self.threshold)
                .map(|slot| (level, slot))
        })
    }
}

impl SeekObserver for SeekStats {
    /// Notes a seek to `user_key` at every level >= 1 of `version`; wakes the background
    /// thread when it made a slot due.
    fn seeked(&self, version: &Version, user_key: &[u8]) {
        if self.threshold == 0 || version.slots.is_empty() {
            return;
        }
        let mut counts = self.counts.lock();
        match counts.version {
            Some(n) if n > version.number => return,
            Some(n) if n == version.number => {}
            _ => *counts = Counts::of(version),
        }
        let Counts {
            streaks, longest, ..
        } = &mut *counts;
        let mut due = false;
        for (level, slots) in version.slots.iter().enumerate() {
            let Some(Some(streak)) = streaks.get_mut(level) else {
                continue;
            };
            let slot = version.slot(level, user_key);
            let Some(s) = slots.get(slot) else {
                continue;
            };
            if s.files == 0 {
                continue;
            }
            *streak = streak_step(*streak, slot);
            let len = streak.1;
            if s.depth >= 2 && len == self.threshold {
                if let Some(n) = longest.get_mut(level).and_then(|l| l.get_mut(slot)) {
                    *n = (*n).max(len);
                }
                due = true;
            }
        }
        drop(counts);
        if due {
            self.wake.request_work();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streaks_count_consecutive_seeks_into_one_slot_only() {
        let mut cur = (0, 0);
        let mut lens = Vec::new();
        for slot in [3, 3, 3, 7, 3, 3, 0, 0] {
            cur = streak_step(cur, slot);
            lens.push(cur.1);
        }
        assert_eq!(lens, [1, 2, 3, 1, 1, 2, 1, 2]);
        // Slot 0 with an empty streak starts at 1.
        assert_eq!(streak_step((0, 0), 0).1, 1);
    }
}
