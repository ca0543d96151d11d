//! [`MemtableCursor`]: a one-direction cursor over a memtable's entries, for scans.
//!
//! The cursor owns its `Arc<Memtable>` and so cannot hold a borrow of the skiplist; instead it
//! copies entries in batches into three reusable flat buffers (keys, values, per-entry
//! offsets) and re-seeks the skiplist after the last entry copied. Batches start small (a
//! short scan copies little) and double up to [`MAX_BATCH`]; nothing is allocated per entry
//! once the buffers have grown. Because it re-seeks, a cursor may see entries inserted after
//! it was created; scans filter by seqno.

use super::{Memtable, NodeRef};
use std::sync::Arc;

/// Entries copied by the first batch after a seek.
const FIRST_BATCH: usize = 8;
/// Largest batch.
const MAX_BATCH: usize = 256;

/// One buffered entry: where its key and value end in the flat buffers (they start where
/// the previous entry's end), and its trailer.
#[derive(Debug, Clone, Copy)]
struct Item {
    key_end: usize,
    value_end: usize,
    trailer: u64,
}

/// Where the next batch starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Resume {
    /// At the first entry in the cursor's direction.
    Start,
    /// At `(resume_key, resume_trailer)` inclusive (a seek target) …
    At,
    /// … or just past it (the last entry copied).
    After,
    /// Nothing left.
    Done,
}

/// A cursor over a memtable in internal order (`forward`) or its reverse. Unpositioned until
/// [`Self::seek_to_first`] or [`Self::seek`].
pub struct MemtableCursor {
    mem: Arc<Memtable>,
    forward: bool,
    keys: Vec<u8>,
    values: Vec<u8>,
    items: Vec<Item>,
    /// Index of the current entry in `items`.
    idx: usize,
    resume: Resume,
    resume_key: Vec<u8>,
    resume_trailer: u64,
    batch: usize,
}

impl std::fmt::Debug for MemtableCursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemtableCursor")
            .field("forward", &self.forward)
            .field("buffered", &self.items.len())
            .finish_non_exhaustive()
    }
}

impl MemtableCursor {
    /// An unpositioned cursor over `mem`.
    pub fn new(mem: Arc<Memtable>, forward: bool) -> Self {
        MemtableCursor {
            mem,
            forward,
            keys: Vec::new(),
            values: Vec::new(),
            items: Vec::new(),
            idx: 0,
            resume: Resume::Done,
            resume_key: Vec::new(),
            resume_trailer: 0,
            batch: FIRST_BATCH,
        }
    }

    /// Positions at the first entry in the cursor's direction.
    pub fn seek_to_first(&mut self) {
        self.resume = Resume::Start;
        self.restart();
    }

    /// Forward: positions at the first entry `>= (user_key, trailer)` in internal order.
    /// Backward: at the last entry `< (user_key, trailer)`.
    pub fn seek(&mut self, user_key: &[u8], trailer: u64) {
        self.resume_key.clear();
        self.resume_key.extend_from_slice(user_key);
        self.resume_trailer = trailer;
        self.resume = if self.forward {
            Resume::At
        } else {
            Resume::After
        };
        self.restart();
    }

    fn restart(&mut self) {
        self.batch = FIRST_BATCH;
        self.refill();
    }

    /// True when positioned at an entry.
    #[inline]
    pub fn valid(&self) -> bool {
        self.idx < self.items.len()
    }

    /// Moves one entry in the cursor's direction. REQUIRES: `valid()`.
    #[inline]
    pub fn advance(&mut self) {
        self.idx += 1;
        if self.idx >= self.items.len() {
            self.refill();
        }
    }

    fn starts(&self) -> (usize, usize) {
        match self.idx.checked_sub(1).and_then(|i| self.items.get(i)) {
            Some(prev) => (prev.key_end, prev.value_end),
            None => (0, 0),
        }
    }

    /// The current user key. REQUIRES: `valid()`.
    #[inline]
    pub fn key(&self) -> &[u8] {
        let (start, _) = self.starts();
        let end = self.items.get(self.idx).map_or(start, |i| i.key_end);
        self.keys.get(start..end).unwrap_or_default()
    }

    /// The current value bytes (inline value, encoded pointer, or empty). REQUIRES: `valid()`.
    #[inline]
    pub fn value(&self) -> &[u8] {
        let (_, start) = self.starts();
        let end = self.items.get(self.idx).map_or(start, |i| i.value_end);
        self.values.get(start..end).unwrap_or_default()
    }

    /// The current trailer. REQUIRES: `valid()`.
    #[inline]
    pub fn trailer(&self) -> u64 {
        self.items.get(self.idx).map_or(0, |i| i.trailer)
    }

    /// Copies the next batch after the resume point into the buffers.
    fn refill(&mut self) {
        self.keys.clear();
        self.values.clear();
        self.items.clear();
        self.idx = 0;
        if self.resume == Resume::Done {
            return;
        }
        let MemtableCursor {
            mem,
            forward,
            keys,
            values,
            items,
            resume,
            resume_key,
            resume_trailer,
            batch,
            ..
        } = self;
        let probe = mem.map.probe(resume_key, *resume_trailer);
        let mut push = |e: NodeRef<'_>| {
            keys.extend_from_slice(e.user_key());
            values.extend_from_slice(e.value());
            items.push(Item {
                key_end: keys.len(),
                value_end: values.len(),
                trailer: e.trailer(),
            });
        };
        let map = &mem.map;
        let inclusive = *resume == Resume::At;
        let mut at = match (*forward, *resume) {
            (true, Resume::At | Resume::After) => map.seek(&probe, inclusive),
            (false, Resume::At | Resume::After) => map.seek_last_before(&probe, inclusive),
            (true, _) => map.first(),
            (false, _) => map.last(),
        };
        let mut taken = 0;
        while let Some(e) = at {
            push(e);
            taken += 1;
            if taken == *batch {
                break;
            }
            // Forward: the level-0 link. Backward: links only point forward, so each step
            // back is a search.
            at = if *forward {
                e.next()
            } else {
                map.seek_last_before(&map.probe(e.user_key(), e.trailer()), false)
            };
        }
        let full = items.len() == *batch;
        *batch = (*batch * 2).min(MAX_BATCH);
        match self.items.last().copied() {
            Some(last) if full => {
                let start = self
                    .items
                    .len()
                    .checked_sub(2)
                    .map_or(0, |i| self.items.get(i).map_or(0, |p| p.key_end));
                self.resume_key.clear();
                self.resume_key
                    .extend_from_slice(self.keys.get(start..last.key_end).unwrap_or_default());
                self.resume_trailer = last.trailer;
                self.resume = Resume::After;
            }
            _ => self.resume = Resume::Done,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::ValueKind;

    fn mem() -> Arc<Memtable> {
        let m = Memtable::new();
        m.insert(b"a", 1, ValueKind::Value, b"a1");
        m.insert(b"b", 2, ValueKind::Value, b"b2");
        m.insert(b"b", 5, ValueKind::Delete, b"");
        m.insert(b"c", 3, ValueKind::Value, b"c3");
        Arc::new(m)
    }

    fn drain(c: &mut MemtableCursor) -> Vec<(Vec<u8>, u64, Vec<u8>)> {
        let mut out = Vec::new();
        while c.valid() {
            out.push((c.key().to_vec(), c.trailer() >> 8, c.value().to_vec()));
            c.advance();
        }
        out
    }

    #[test]
    fn both_directions_and_seeks() {
        let m = mem();
        let mut c = MemtableCursor::new(m.clone(), true);
        c.seek_to_first();
        let all = drain(&mut c);
        let keys: Vec<_> = all.iter().map(|(k, s, _)| (k.clone(), *s)).collect();
        assert_eq!(
            keys,
            vec![
                (b"a".to_vec(), 1),
                (b"b".to_vec(), 5),
                (b"b".to_vec(), 2),
                (b"c".to_vec(), 3)
            ]
        );
        assert_eq!(all[2].2, b"b2");
        let mut r = MemtableCursor::new(m.clone(), false);
        r.seek_to_first();
        let mut rev = drain(&mut r);
        rev.reverse();
        assert_eq!(rev, all);
        // Forward seek to (b, MAX): both versions of b; backward seek below (b, MAX): a.
        c.seek(b"b", u64::MAX);
        assert_eq!(drain(&mut c).len(), 3);
        r.seek(b"b", u64::MAX);
        assert_eq!(drain(&mut r), vec![(b"a".to_vec(), 1, b"a1".to_vec())]);
        // Backward from just past every version of b.
        r.seek(b"b", 0);
        assert_eq!(drain(&mut r).len(), 3);
        c.seek(b"zz", u64::MAX);
        assert!(!c.valid());
    }

    #[test]
    fn spans_growing_batches() {
        let m = Memtable::new();
        for i in 0..1000u32 {
            m.insert(&i.to_be_bytes(), u64::from(i) + 1, ValueKind::Value, b"v");
        }
        let m = Arc::new(m);
        for forward in [true, false] {
            let mut c = MemtableCursor::new(m.clone(), forward);
            c.seek_to_first();
            let got = drain(&mut c);
            assert_eq!(got.len(), 1000);
            let ordered = got.windows(2).all(|w| (w[0].0 < w[1].0) == forward);
            assert!(ordered, "forward = {forward}");
        }
        let mut c = MemtableCursor::new(m, true);
        c.seek(&500u32.to_be_bytes(), u64::MAX);
        assert_eq!(drain(&mut c).len(), 500);
    }
}
