//! Snapshots: a registered sequence number that reads can be served at, and that
//! compaction and value-log GC must keep visible while it lives.

use crate::key::SeqNo;
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The multiset of live snapshot seqnos (snapshots, and iterators' implicit snapshots).
#[derive(Debug, Default)]
pub(crate) struct SnapshotList {
    live: Mutex<BTreeMap<SeqNo, usize>>,
}

impl SnapshotList {
    /// Registers `seqno`.
    pub fn acquire(&self, seqno: SeqNo) {
        *self.live.lock().entry(seqno).or_default() += 1;
    }

    /// Unregisters one registration of `seqno`.
    pub fn release(&self, seqno: SeqNo) {
        let mut live = self.live.lock();
        if let Some(n) = live.get_mut(&seqno) {
            *n -= 1;
            if *n == 0 {
                live.remove(&seqno);
            }
        }
    }

    /// The oldest live snapshot, or `None` when there is none.
    pub fn oldest(&self) -> Option<SeqNo> {
        self.live.lock().keys().next().copied()
    }

    /// Number of live registrations.
    pub fn count(&self) -> usize {
        self.live.lock().values().sum()
    }
}

/// A registration that is released on drop.
#[derive(Debug)]
pub(crate) struct SnapshotGuard {
    list: Arc<SnapshotList>,
    seqno: SeqNo,
}

impl SnapshotGuard {
    /// Registers `seqno` in `list` until the guard is dropped.
    pub fn new(list: Arc<SnapshotList>, seqno: SeqNo) -> Self {
        list.acquire(seqno);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oldest_tracks_guards() {
        let list = Arc::new(SnapshotList::default());
        assert_eq!(list.oldest(), None);
        let a = SnapshotGuard::new(list.clone(), 5);
        let b = SnapshotGuard::new(list.clone(), 3);
        let c = SnapshotGuard::new(list.clone(), 3);
        assert_eq!(list.oldest(), Some(3));
        drop(b);
        assert_eq!(list.oldest(), Some(3));
        drop(c);
        assert_eq!(list.oldest(), Some(5));
        assert_eq!(a.seqno(), 5);
        drop(a);
        assert_eq!(list.count(), 0);
    }
}
