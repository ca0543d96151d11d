//! [`MergeCursor`]: the k-way merge of sorted [`Source`]s in one direction, zero-copy.
//!
//! The valid sources sit in a binary heap ordered by their current entry (internal order, or
//! its reverse backward); the top is the merge's current entry. Stepping advances only the
//! top source and sifts it down: when it still precedes both heap children — the common case
//! of a long run from one source — that costs two key comparisons whatever the number of
//! sources, and a single remaining source costs none. (The previous merge compared the heads
//! of all sources on every step and copied every entry into owned buffers.)
//!
//! An error from a source is returned by the call that hit it; the cursor is then in an
//! unspecified state and the caller must stop using it.

use super::source::Source;
use crate::error::Result;
use crate::key;
use std::cmp::Ordering;

/// Merges sources in internal order (`forward`) or its reverse.
pub(crate) struct MergeCursor {
    sources: Vec<Source>,
    /// Indices of the valid sources, a binary heap whose top (`heap[0]`) is the source with
    /// the entry that comes first in the merge direction.
    heap: Vec<usize>,
    forward: bool,
}

impl MergeCursor {
    /// An unpositioned merge of `sources`, each iterating in the direction `forward` gives.
    pub(crate) fn new(sources: Vec<Source>, forward: bool) -> Self {
        MergeCursor {
            heap: Vec::with_capacity(sources.len()),
            sources,
            forward,
        }
    }

    /// Positions every source at its first entry.
    pub(crate) fn seek_to_first(&mut self) -> Result<()> {
        for s in &mut self.sources {
            s.seek_to_first()?;
        }
        self.rebuild();
        Ok(())
    }

    /// Forward: positions at the first entry `>= (user_key, trailer)`; backward: at the last
    /// entry `< (user_key, trailer)`.
    pub(crate) fn seek(&mut self, user_key: &[u8], trailer: u64) -> Result<()> {
        for s in &mut self.sources {
            s.seek(user_key, trailer)?;
        }
        self.rebuild();
        Ok(())
    }

    /// [`MergeCursor::seek`] with the sources from `parallel_from` on (the last level's runs)
    /// seeked on `threads` scoped threads while the caller seeks the others (PebblesDB's
    /// parallel seeks: worth it when those files' pages are not cached).
    pub(crate) fn seek_parallel(
        &mut self,
        user_key: &[u8],
        trailer: u64,
        parallel_from: usize,
        threads: usize,
    ) -> Result<()> {
        let split = parallel_from.min(self.sources.len());
        let (near, far) = self.sources.split_at_mut(split);
        if threads == 0 || far.len() < 2 {
            return self.seek(user_key, trailer);
        }
        let chunk = far.len().div_ceil(threads);
        std::thread::scope(|scope| -> Result<()> {
            let handles: Vec<_> = far
                .chunks_mut(chunk)
                .map(|part| {
                    scope.spawn(move || -> Result<()> {
                        for s in part {
                            s.seek(user_key, trailer)?;
                        }
                        Ok(())
                    })
                })
                .collect();
            let mut result = near.iter_mut().try_for_each(|s| s.seek(user_key, trailer));
            for h in handles {
                // A panic in a seek is a bug: it continues on the caller's thread.
                let r = h.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
                result = result.and(r);
            }
            result
        })?;
        self.rebuild();
        Ok(())
    }

    fn rebuild(&mut self) {
        self.heap.clear();
        self.heap
            .extend((0..self.sources.len()).filter(|&i| self.sources[i].valid()));
        for i in (0..self.heap.len() / 2).rev() {
            self.sift_down(i);
        }
    }

    /// True when positioned at an entry.
    #[inline]
    pub(crate) fn valid(&self) -> bool {
        !self.heap.is_empty()
    }

    /// The source holding the current entry. REQUIRES: `valid()`.
    #[inline]
    pub(crate) fn current(&self) -> Option<&Source> {
        self.heap.first().and_then(|&i| self.sources.get(i))
    }

    /// The current user key (empty when not valid).
    #[inline]
    pub(crate) fn key(&self) -> &[u8] {
        self.current().map_or(&[], Source::key)
    }

    /// The current trailer (0 when not valid).
    #[inline]
    pub(crate) fn trailer(&self) -> u64 {
        self.current().map_or(0, Source::trailer)
    }

    /// The current value bytes (empty when not valid).
    #[inline]
    pub(crate) fn value(&self) -> &[u8] {
        self.current().map_or(&[], Source::value)
    }

    /// Moves to the next entry in the merge direction. REQUIRES: `valid()`.
    #[inline]
    pub(crate) fn advance(&mut self) -> Result<()> {
        let Some(&top) = self.heap.first() else {
            return Ok(());
        };
        let source = &mut self.sources[top];
        source.advance()?;
        if !source.valid() {
            let last = self.heap.len() - 1;
            self.heap.swap(0, last);
            self.heap.pop();
        }
        if self.heap.len() > 1 {
            self.sift_down(0);
        }
        Ok(())
    }

    /// True when source `a`'s current entry comes before source `b`'s.
    #[inline]
    fn before(&self, a: usize, b: usize) -> bool {
        let (x, y) = (&self.sources[a], &self.sources[b]);
        let ord = key::compare(x.key(), x.trailer(), y.key(), y.trailer());
        if self.forward {
            ord == Ordering::Less
        } else {
            ord == Ordering::Greater
        }
    }

    fn sift_down(&mut self, mut i: usize) {
        let n = self.heap.len();
        loop {
            let left = 2 * i + 1;
            if left >= n {
                return;
            }
            let right = left + 1;
            let child = if right < n && self.before(self.heap[right], self.heap[left]) {
                right
            } else {
                left
            };
            if !self.before(self.heap[child], self.heap[i]) {
                return;
            }
            self.heap.swap(i, child);
            i = child;
        }
    }
}
