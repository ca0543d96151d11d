//! [`DbIterator`]: the user-facing iterator. It reads one consistent state (memtables and
//! version captured together, at the seqno of its snapshot), keeps for each user key only
//! the newest version visible at that seqno, hides tombstones, and resolves value pointers
//! lazily, one value per step.
//!
//! Forward and backward iteration use two independent merges over the same captured state,
//! built on first use; they stop where they meet (the front never passes a key the back
//! already returned, and vice versa), which makes the iterator a correct
//! `DoubleEndedIterator` without LevelDB's direction-switching logic.

use super::level::{table_source, LevelIter};
use super::merge::{MergingIter, Source};
use crate::db::{DbInner, ReadView, SnapshotGuard};
use crate::error::Result;
use crate::key::{SeqNo, ValueKind};
use crate::memtable::MemtableCursor;
use crate::sst::Entry;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

/// Iterator over `(key, value)` pairs in key order (and reverse with `next_back`). Items are
/// `Result`s: an I/O error or corruption is yielded once and ends the iteration.
pub struct DbIterator {
    db: Arc<DbInner>,
    guard: Arc<SnapshotGuard>,
    view: ReadView,
    start: Bound<Vec<u8>>,
    end: Bound<Vec<u8>>,
    front: Option<MergingIter>,
    back: Option<MergingIter>,
    /// Lookahead entry of the back merge (the first entry of the next, smaller key).
    back_pending: Option<Entry>,
    /// Last user key the front consumed (returned or found deleted): its older versions
    /// are skipped, and the back stops there.
    front_last: Option<Vec<u8>>,
    /// Last user key the back consumed; the front stops there.
    back_last: Option<Vec<u8>>,
    done: bool,
}

fn to_owned_bound<K: AsRef<[u8]>>(b: Bound<&K>) -> Bound<Vec<u8>> {
    match b {
        Bound::Included(k) => Bound::Included(k.as_ref().to_vec()),
        Bound::Excluded(k) => Bound::Excluded(k.as_ref().to_vec()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

fn as_slice(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(k) => Bound::Included(k.as_slice()),
        Bound::Excluded(k) => Bound::Excluded(k.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

impl DbIterator {
    pub(crate) fn new<K: AsRef<[u8]>, R: RangeBounds<K>>(
        db: Arc<DbInner>,
        guard: Arc<SnapshotGuard>,
        range: R,
    ) -> Self {
        let view = db.read_view();
        DbIterator {
            db,
            guard,
            view,
            start: to_owned_bound(range.start_bound()),
            end: to_owned_bound(range.end_bound()),
            front: None,
            back: None,
            back_pending: None,
            front_last: None,
            back_last: None,
            done: false,
        }
    }

    fn seqno(&self) -> SeqNo {
        self.guard.seqno()
    }

    fn build(&self, forward: bool) -> Result<MergingIter> {
        let (start, end) = (as_slice(&self.start), as_slice(&self.end));
        let mut sources: Vec<Source> = Vec::new();
        for mem in self.view.memtables.iter() {
            let cursor = MemtableCursor::new(mem.clone(), start, end, forward);
            sources.push(Box::new(cursor.map(Ok)));
        }
        let version = &self.view.version;
        if let Some(l0) = version.levels.first() {
            for f in l0 {
                sources.push(table_source(f.table.clone(), start, end, forward)?);
            }
        }
        for files in version.levels.iter().skip(1) {
            if !files.is_empty() {
                sources.push(Box::new(LevelIter::new(files, start, end, forward)));
            }
        }
        Ok(MergingIter::new(sources, forward))
    }

    fn fail<T>(&mut self, e: crate::Error) -> Option<Result<T>> {
        self.done = true;
        Some(Err(e))
    }

    fn resolve(&self, e: Entry) -> Result<Option<Vec<u8>>> {
        self.db.resolve(e)
    }
}

impl Iterator for DbIterator {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        if self.front.is_none() {
            match self.build(true) {
                Ok(m) => self.front = Some(m),
                Err(e) => return self.fail(e),
            }
        }
        let seqno = self.seqno();
        loop {
            let e = match self.front.as_mut()?.next()? {
                Ok(e) => e,
                Err(e) => return self.fail(e),
            };
            if self.front_last.as_deref() == Some(&e.user_key[..]) || e.seqno > seqno {
                continue;
            }
            if self
                .back_last
                .as_deref()
                .is_some_and(|b| e.user_key.as_slice() >= b)
            {
                self.done = true;
                return None;
            }
            set_last(&mut self.front_last, &e.user_key);
            let key = if e.kind == ValueKind::Delete {
                continue;
            } else {
                e.user_key.clone()
            };
            match self.resolve(e) {
                Ok(Some(v)) => return Some(Ok((key, v))),
                Ok(None) => continue,
                Err(err) => return self.fail(err),
            }
        }
    }
}

/// Remembers `key` in `slot`, reusing its buffer.
fn set_last(slot: &mut Option<Vec<u8>>, key: &[u8]) {
    let buf = slot.get_or_insert_with(Vec::new);
    buf.clear();
    buf.extend_from_slice(key);
}

impl DoubleEndedIterator for DbIterator {
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        if self.back.is_none() {
            match self.build(false) {
                Ok(m) => self.back = Some(m),
                Err(e) => return self.fail(e),
            }
        }
        let seqno = self.seqno();
        loop {
            let first = match self.back_pending.take() {
                Some(e) => e,
                None => match self.back.as_mut()?.next()? {
                    Ok(e) => e,
                    Err(e) => return self.fail(e),
                },
            };
            // Entries of one user key arrive oldest first: keep the newest visible one.
            let key = first.user_key.clone();
            let mut best = (first.seqno <= seqno).then_some(first);
            loop {
                match self.back.as_mut()?.next() {
                    None => break,
                    Some(Err(e)) => return self.fail(e),
                    Some(Ok(e)) if e.user_key == key => {
                        if e.seqno <= seqno {
                            best = Some(e);
                        }
                    }
                    Some(Ok(e)) => {
                        self.back_pending = Some(e);
                        break;
                    }
                }
            }
            if self
                .front_last
                .as_deref()
                .is_some_and(|f| key.as_slice() <= f)
            {
                self.done = true;
                return None;
            }
            set_last(&mut self.back_last, &key);
            let Some(e) = best else { continue };
            if e.kind == ValueKind::Delete {
                continue;
            }
            match self.resolve(e) {
                Ok(Some(v)) => return Some(Ok((key, v))),
                Ok(None) => continue,
                Err(err) => return self.fail(err),
            }
        }
    }
}
