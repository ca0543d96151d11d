//! [`TableIter`]: a double-ended iterator over a range of positions of one table, the
//! building block of level iterators, compaction inputs and range scans.
//!
//! Each end keeps the data block it is reading, so a block is loaded (and, in pread mode,
//! checksummed) once per pass rather than once per entry. After the first error the iterator
//! is exhausted: corruption is reported once, never skipped over.

use crate::error::Result;
use crate::sst::reader::LoadedBlock;
use crate::sst::{Entry, Table};
use std::sync::Arc;

/// Double-ended iterator over the positions `[lo, hi)` of a table, yielding `Result<Entry>`.
pub struct TableIter {
    table: Arc<Table>,
    /// Next position yielded from the front.
    front: u64,
    /// One past the next position yielded from the back.
    back: u64,
    front_block: Option<LoadedBlock>,
    back_block: Option<LoadedBlock>,
}

impl std::fmt::Debug for TableIter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableIter")
            .field("path", &self.table.path())
            .field("front", &self.front)
            .field("back", &self.back)
            .finish_non_exhaustive()
    }
}

impl TableIter {
    /// Iterates positions `[lo, hi)`, clamped to `[0, entries()]`.
    pub fn new(table: Arc<Table>, lo: u64, hi: u64) -> Self {
        let back = hi.min(table.entries());
        TableIter {
            table,
            front: lo.min(back),
            back,
            front_block: None,
            back_block: None,
        }
    }

    /// Entries left to yield.
    pub fn remaining(&self) -> u64 {
        self.back - self.front
    }

    fn fuse_on_error(&mut self, r: Result<Entry>) -> Result<Entry> {
        if r.is_err() {
            self.front = self.back;
        }
        r
    }
}

impl Iterator for TableIter {
    type Item = Result<Entry>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.front >= self.back {
            return None;
        }
        let r = self
            .table
            .entry_at_cached(&mut self.front_block, self.front);
        self.front += 1;
        Some(self.fuse_on_error(r))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = usize::try_from(self.remaining()).unwrap_or(usize::MAX);
        (n, Some(n))
    }
}

impl ExactSizeIterator for TableIter {}

impl DoubleEndedIterator for TableIter {
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.front >= self.back {
            return None;
        }
        self.back -= 1;
        let r = self.table.entry_at_cached(&mut self.back_block, self.back);
        Some(self.fuse_on_error(r))
    }
}
