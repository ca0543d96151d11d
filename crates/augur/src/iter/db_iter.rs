//! [`DbIterator`]: the owning, double-ended Rust iterator over a range — two [`Scan`]s over one
//! shared state, one per end, each copying the pairs it yields into owned `Vec`s.
//!
//! The front and back scans are built on first use and stop where they meet (the front
//! never passes a key the back already returned, and vice versa), which makes the iterator a
//! correct `DoubleEndedIterator` without LevelDB's direction-switching logic. For scans
//! without per-pair allocation use [`Scan`] directly (`Db::scan`).

use super::context::ScanState;
use super::scan::{KeyRange, Scan};
use crate::error::Result;
use std::sync::Arc;

/// Iterator over `(key, value)` pairs in key order (and reverse with `next_back`). Items are
/// `Result`s: an I/O error or corruption is yielded once and ends the iteration.
pub struct DbIterator {
    state: Arc<ScanState>,
    range: KeyRange,
    readahead: usize,
    front: Option<Scan>,
    back: Option<Scan>,
    /// Last user key the front returned: the back stops there.
    front_last: Option<Vec<u8>>,
    /// Last user key the back returned: the front stops there.
    back_last: Option<Vec<u8>>,
    done: bool,
}

impl DbIterator {
    pub(crate) fn new(state: Arc<ScanState>, range: KeyRange, readahead: usize) -> Self {
        DbIterator {
            state,
            range,
            readahead,
            front: None,
            back: None,
            front_last: None,
            back_last: None,
            done: false,
        }
    }

    fn new_scan(&self, forward: bool) -> Scan {
        Scan::new(
            self.state.clone(),
            self.range.clone(),
            forward,
            self.readahead,
        )
    }

    /// Takes the next pair of one end, stopping where it meets the other end's last key.
    fn take(&mut self, forward: bool) -> Option<Result<(Vec<u8>, Vec<u8>)>> {
        if self.done {
            return None;
        }
        let slot = if forward { &self.front } else { &self.back };
        if slot.is_none() {
            let scan = self.new_scan(forward);
            if forward {
                self.front = Some(scan);
            } else {
                self.back = Some(scan);
            }
        }
        let (scan, own_last, other_last) = if forward {
            (self.front.as_mut()?, &mut self.front_last, &self.back_last)
        } else {
            (self.back.as_mut()?, &mut self.back_last, &self.front_last)
        };
        match scan.next() {
            Ok(Some((k, v))) => {
                let met = other_last
                    .as_deref()
                    .is_some_and(|o| if forward { k >= o } else { k <= o });
                if met {
                    self.done = true;
                    return None;
                }
                let buf = own_last.get_or_insert_with(Vec::new);
                buf.clear();
                buf.extend_from_slice(k);
                Some(Ok((k.to_vec(), v.to_vec())))
            }
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

impl Iterator for DbIterator {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        self.take(true)
    }
}

impl DoubleEndedIterator for DbIterator {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.take(false)
    }
}
