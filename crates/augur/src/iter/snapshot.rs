//! Snapshots: a registered sequence number that reads can be served at, and that
//! compaction and value-log GC must keep visible while it lives. The registrations live
//! here, beside the scans that hold them ([`super::ScanState`]); the database keeps the list
//! and hands out the public [`Snapshot`].

use crate::key::SeqNo;
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::Arc;

/// The multiset of live snapshot seqnos (snapshots, and iterators' implicit snapshots).
///
/// A ring of `(seqno, registrations)` sorted by seqno: every scan registers and releases
/// one, so a ring that keeps its capacity serves them without allocating, where a map
/// allocated a node for the first registration and freed it with the last one. New
/// registrations are at the current seqno, the newest (the back), and the oldest are
/// released first (the front): both ends are O(1), a release in the middle moves the
/// shorter side.
#[derive(Debug, Default)]
pub(crate) struct SnapshotList {
    live: Mutex<VecDeque<(SeqNo, usize)>>,
}

impl SnapshotList {
    /// Registers the seqno returned by `current` (the visible seqno) and returns it. It is
    /// read under the list's lock, so a concurrent [`Self::oldest_or`] or [`Self::oldest`]
    /// either sees the registration or ran before `current` was read: compaction and GC never
    /// drop what a snapshot being taken will read.
    pub fn acquire_current(&self, current: impl FnOnce() -> SeqNo) -> SeqNo {
        let mut live = self.live.lock();
        let seqno = current();
        let at = position(&live, seqno);
        match live.get_mut(at) {
            Some((s, n)) if *s == seqno => *n += 1,
            _ => live.insert(at, (seqno, 1)),
        }
        seqno
    }

    /// The oldest live snapshot, or `current()` (read under the lock) if that is smaller.
    pub fn oldest_or(&self, current: impl FnOnce() -> SeqNo) -> SeqNo {
        let live = self.live.lock();
        live.front()
            .map_or(SeqNo::MAX, |&(s, _)| s)
            .min(current())
    }

    /// Unregisters one registration of `seqno`.
    pub fn release(&self, seqno: SeqNo) {
        let mut live = self.live.lock();
        let at = position(&live, seqno);
        if let Some((s, n)) = live.get_mut(at) {
            if *s == seqno {
                *n -= 1;
                if *n == 0 {
                    live.remove(at);
                }
            }
        }
    }

    /// The oldest live snapshot, or `None` when there is none.
    pub fn oldest(&self) -> Option<SeqNo> {
        self.live.lock().front().map(|&(s, _)| s)
    }

    /// Number of live registrations.
    pub fn count(&self) -> usize {
        self.live.lock().iter().map(|&(_, n)| n).sum()
    }
}

/// Where `seqno`'s entry is or would go in `live` (sorted by seqno).
fn position(live: &VecDeque<(SeqNo, usize)>, seqno: SeqNo) -> usize {
    live.partition_point(|&(s, _)| s < seqno)
}

/// A registration that is released on drop.
#[derive(Debug)]
pub(crate) struct SnapshotGuard {
    list: Arc<SnapshotList>,
    seqno: SeqNo,
}

impl SnapshotGuard {
    /// Registers the current seqno given by `current` (see [`SnapshotList::acquire_current`]).
    pub fn new_current(list: Arc<SnapshotList>, current: impl FnOnce() -> SeqNo) -> Self {
        let seqno = list.acquire_current(current);
        SnapshotGuard { list, seqno }
    }

    /// The sequence number.
    pub fn seqno(&self) -> SeqNo {
        self.seqno
    }
}

impl Drop for SnapshotGuard {
    fn drop(&mut self) {
        self.list.release(self.seqno);
    }
}

/// A consistent read view at one sequence number. Reads through it see exactly the writes
/// acknowledged before it was taken. Keeps the data it can see alive until dropped (clones
/// share one registration).
#[derive(Clone)]
pub struct Snapshot {
    guard: Arc<SnapshotGuard>,
}

impl Snapshot {
    /// The snapshot of registration `guard`.
    pub(crate) fn new(guard: SnapshotGuard) -> Snapshot {
        Snapshot {
            guard: Arc::new(guard),
        }
    }

    /// The registration, shared with the scans that read at it.
    pub(crate) fn guard(&self) -> &Arc<SnapshotGuard> {
        &self.guard
    }

    /// The sequence number of the snapshot.
    pub fn seqno(&self) -> SeqNo {
        self.guard.seqno()
    }
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Snapshot({})", self.seqno())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oldest_tracks_guards() {
        let list = Arc::new(SnapshotList::default());
        assert_eq!(list.oldest(), None);
        let a = SnapshotGuard::new_current(list.clone(), || 5);
        let b = SnapshotGuard::new_current(list.clone(), || 3);
        let c = SnapshotGuard::new_current(list.clone(), || 3);
        assert_eq!(list.oldest(), Some(3));
        assert_eq!(list.oldest_or(|| 4), 3);
        assert_eq!(list.oldest_or(|| 2), 2);
        drop(b);
        assert_eq!(list.oldest(), Some(3));
        drop(c);
        assert_eq!(list.oldest(), Some(5));
        assert_eq!(a.seqno(), 5);
        drop(a);
        assert_eq!(list.count(), 0);
    }

    proptest::proptest! {
        /// Registrations and releases in any order, at seqnos old and new, keep the oldest
        /// and the count of a multiset model.
        #[test]
        fn the_list_is_a_multiset_of_seqnos(ops in proptest::collection::vec((0u64..12, proptest::bool::ANY), 1..200)) {
            let list = Arc::new(SnapshotList::default());
            let mut guards: Vec<SnapshotGuard> = Vec::new();
            let mut model = std::collections::BTreeMap::<SeqNo, usize>::new();
            for (seqno, register) in ops {
                if register || guards.is_empty() {
                    guards.push(SnapshotGuard::new_current(list.clone(), || seqno));
                    *model.entry(seqno).or_default() += 1;
                } else {
                    let g = guards.swap_remove(seqno as usize % guards.len());
                    let n = model.get_mut(&g.seqno()).expect("a registered seqno");
                    *n -= 1;
                    if *n == 0 {
                        model.remove(&g.seqno());
                    }
                }
                proptest::prop_assert_eq!(list.oldest(), model.keys().next().copied());
                proptest::prop_assert_eq!(list.count(), model.values().sum::<usize>());
            }
        }
    }
}
