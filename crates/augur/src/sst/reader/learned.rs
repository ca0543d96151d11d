//! The model path of a table lookup (Bourbon §4.5): project the key, ask the learned index
//! for a window of positions, and binary-search only the slots of that window — the fixed
//! slot width makes position `i` a computed offset, so no index block is read.
//!
//! Correctness with byte keys (DESIGN.md "Key projection"): every slot before `lb(x)` (the
//! first slot whose projection is `>= x`, x = the key's projection) holds a smaller key, so the
//! answer is at or after the window's start. A run of equal projections can extend past the
//! window; when every slot of the window is smaller than the key, the search gallops forward
//! from the window's end.

use super::{LoadedBlock, Table};
use crate::error::Result;
use crate::index::{self, projection, Index};
use crate::key::compare;
use crate::sst::properties::Properties;
use std::cmp::Ordering;
use std::path::Path;

/// Decodes a model section. `None` (with a warning) when this build cannot use it.
pub(super) fn load_model(
    bytes: &[u8],
    properties: &Properties,
    path: &Path,
    offset: u64,
) -> Option<Box<dyn Index>> {
    match index::decode(bytes, path, offset) {
        Ok(m) if m.len() == properties.entries => Some(m),
        Ok(m) => {
            log::warn!(
                "{}: the model covers {} keys, the file holds {}; using fence pointers",
                path.display(),
                m.len(),
                properties.entries
            );
            None
        }
        Err(e) => {
            log::warn!(
                "{}: unusable model ({e}); using fence pointers",
                path.display()
            );
            None
        }
    }
}

impl Table {
    /// The lower bound of `(user_key, trailer)` found through `model`.
    pub(super) fn model_lower_bound(
        &self,
        model: &dyn Index,
        user_key: &[u8],
        trailer: u64,
    ) -> Result<u64> {
        let n = self.entries();
        let window = model.search(projection::project_bounded(user_key, &self.prefix));
        let (lo, hi) = (window.lo.min(n), window.hi.min(n));
        let mut cache = None;
        let pos = self.lower_bound_between(&mut cache, lo, hi, user_key, trailer)?;
        if pos < hi || hi == n {
            return Ok(pos);
        }
        // Every slot of the window is smaller: gallop through the rest of the run.
        let (mut lo, mut step) = (hi, 1u64);
        loop {
            let probe = lo.saturating_add(step - 1);
            if probe >= n {
                return self.lower_bound_between(&mut cache, lo, n, user_key, trailer);
            }
            if self.cmp_at(&mut cache, probe, user_key, trailer)? == Ordering::Less {
                lo = probe + 1;
                step = step.saturating_mul(2);
            } else {
                return self.lower_bound_between(&mut cache, lo, probe + 1, user_key, trailer);
            }
        }
    }

    /// First position in `[lo, hi)` whose entry is `>= (user_key, trailer)`, or `hi`. The
    /// range may span blocks; `cache` keeps the last block read.
    fn lower_bound_between(
        &self,
        cache: &mut Option<LoadedBlock>,
        mut lo: u64,
        mut hi: u64,
        user_key: &[u8],
        trailer: u64,
    ) -> Result<u64> {
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.cmp_at(cache, mid, user_key, trailer)? == Ordering::Less {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        Ok(lo)
    }

    /// Compares the entry at `pos` with `(user_key, trailer)`, loading (and verifying, the
    /// first time) its block unless `cache` holds it.
    fn cmp_at(
        &self,
        cache: &mut Option<LoadedBlock>,
        pos: u64,
        user_key: &[u8],
        trailer: u64,
    ) -> Result<Ordering> {
        let block_no = self.fence.block_of(pos);
        let block = match cache.take() {
            Some(b) if b.block == block_no => b,
            _ => self.load_block(block_no, false)?,
        };
        let slot = self.slot(&block, pos)?;
        let ord = compare(slot.key, slot.trailer, user_key, trailer);
        *cache = Some(block);
        Ok(ord)
    }
}
