//! Cursors over SSTables: one table within user-key bounds, and a whole sorted level (>= 1)
//! as the concatenation of its files, opening each file's cursor only when reached.

use super::merge::Source;
use crate::error::Result;
use crate::key::MAX_SEQNO;
use crate::sst::{Entry, Table, TableIter};
use crate::version::TableFile;
use std::ops::Bound;
use std::sync::Arc;

/// The positions `[lo, hi)` of `table` whose user keys lie within the bounds.
fn positions(table: &Table, start: Bound<&[u8]>, end: Bound<&[u8]>) -> Result<(u64, u64)> {
    // (k, MAX_SEQNO) sorts before every version of k; (k, 0) after all of them.
    let lo = match start {
        Bound::Included(k) => table.lower_bound(k, MAX_SEQNO)?,
        Bound::Excluded(k) => table.lower_bound(k, 0)?,
        Bound::Unbounded => 0,
    };
    let hi = match end {
        Bound::Included(k) => table.lower_bound(k, 0)?,
        Bound::Excluded(k) => table.lower_bound(k, MAX_SEQNO)?,
        Bound::Unbounded => table.entries(),
    };
    Ok((lo, hi.max(lo)))
}

/// A cursor over the entries of `table` within the bounds, in the given direction.
pub(crate) fn table_source(
    table: Arc<Table>,
    start: Bound<&[u8]>,
    end: Bound<&[u8]>,
    forward: bool,
) -> Result<Source> {
    let (lo, hi) = positions(&table, start, end)?;
    let it = TableIter::new(table, lo, hi);
    Ok(if forward {
        Box::new(it)
    } else {
        Box::new(it.rev())
    })
}

fn owned(b: Bound<&[u8]>) -> Bound<Vec<u8>> {
    match b {
        Bound::Included(k) => Bound::Included(k.to_vec()),
        Bound::Excluded(k) => Bound::Excluded(k.to_vec()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

fn borrowed(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(k) => Bound::Included(k),
        Bound::Excluded(k) => Bound::Excluded(k),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// The files of one sorted level within bounds, in one direction.
pub(crate) struct LevelIter {
    /// Files still to visit, in visiting order (reversed for backward iteration).
    files: std::vec::IntoIter<Arc<TableFile>>,
    current: Option<Source>,
    start: Bound<Vec<u8>>,
    end: Bound<Vec<u8>>,
    forward: bool,
}

impl LevelIter {
    /// A cursor over `files` (sorted, non-overlapping) restricted to the bounds.
    pub fn new(
        files: &[Arc<TableFile>],
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        forward: bool,
    ) -> Self {
        let lo = match start {
            Bound::Included(k) | Bound::Excluded(k) => Some(k),
            Bound::Unbounded => None,
        };
        let hi = match end {
            Bound::Included(k) | Bound::Excluded(k) => Some(k),
            Bound::Unbounded => None,
        };
        let mut selected: Vec<Arc<TableFile>> = files
            .iter()
            .filter(|f| f.overlaps(lo, hi))
            .cloned()
            .collect();
        if !forward {
            selected.reverse();
        }
        LevelIter {
            files: selected.into_iter(),
            current: None,
            start: owned(start),
            end: owned(end),
            forward,
        }
    }
}

impl Iterator for LevelIter {
    type Item = Result<Entry>;

    fn next(&mut self) -> Option<Result<Entry>> {
        loop {
            if let Some(cur) = self.current.as_mut() {
                if let Some(item) = cur.next() {
                    return Some(item);
                }
                self.current = None;
            }
            let file = self.files.next()?;
            match table_source(
                file.table.clone(),
                borrowed(&self.start),
                borrowed(&self.end),
                self.forward,
            ) {
                Ok(src) => self.current = Some(src),
                Err(e) => return Some(Err(e)),
            }
        }
    }
}
