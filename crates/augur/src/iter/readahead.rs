//! [`ValueBatch`]: readahead for range scans over separated values (WiscKey §3.3).
//!
//! A scan that meets a value pointer does not read that one value: it gathers the next
//! visible entries into a batch — keys and tree values copied into flat buffers — until the
//! batch holds `target` pointers, then reads all of the batch's values with one
//! [`ValueLog::read_values`] call (sorted by segment and offset, each segment's reader taken
//! once, nearby entries coalesced into one read). Values of mapped segments are not copied:
//! the batch keeps the segment's mapping (a shared `Bytes`) and the value's range in it. The target starts small and doubles per
//! batch up to the scan's readahead limit, so a short scan reads few values it will not
//! return, and a long one reads in large sorted batches.

use crate::error::{Error, Result};
use crate::key::ValueKind;
use crate::vlog::{ValueLog, ValuePointer, ValueRequest};
use bytes::Bytes;
use std::path::Path;

/// Where a batch entry's resolved value is.
#[derive(Debug, Clone, Copy, Default)]
enum ValueAt {
    /// `values[start..end]`.
    #[default]
    Copied,
    /// `mappings[i][start..end]`.
    Mapped(usize),
}

/// Pointers in the first batch of a scan.
const FIRST_TARGET: usize = 4;

/// Entries buffered by a scan, with their values resolved.
#[derive(Debug, Default)]
pub(crate) struct ValueBatch {
    keys: Vec<u8>,
    key_ends: Vec<usize>,
    /// The values as stored in the tree: inline bytes or encoded pointers.
    raw: Vec<u8>,
    raw_ends: Vec<usize>,
    kinds: Vec<ValueKind>,
    /// Each entry's expiry time (`None`: it never expires).
    expire_ats: Vec<Option<u64>>,
    /// Resolved values: copied into `values`, or borrowed from a segment mapping of
    /// `mappings`; each entry's place and range.
    values: Vec<u8>,
    mappings: Vec<Bytes>,
    ranges: Vec<(ValueAt, usize, usize)>,
    pointers: usize,
    /// Index of the next entry to hand out.
    next: usize,
    /// Pointers wanted in the batch being filled.
    target: usize,
}

impl ValueBatch {
    /// Empties the batch (buffers are kept) and resets the ramp-up.
    pub(crate) fn reset(&mut self) {
        self.clear();
        self.target = FIRST_TARGET;
    }

    fn clear(&mut self) {
        self.keys.clear();
        self.key_ends.clear();
        self.raw.clear();
        self.raw_ends.clear();
        self.kinds.clear();
        self.expire_ats.clear();
        self.values.clear();
        self.mappings.clear();
        self.ranges.clear();
        self.pointers = 0;
        self.next = 0;
    }

    /// Starts filling a new batch whose pointer target is `min(doubled target, limit)`.
    pub(crate) fn begin(&mut self, limit: usize) {
        self.clear();
        self.target = self.target.clamp(FIRST_TARGET.min(limit), limit.max(1));
    }

    /// Adds a visible entry (`kind` is `Value` or `Pointer`).
    pub(crate) fn push(&mut self, key: &[u8], kind: ValueKind, raw: &[u8]) {
        self.keys.extend_from_slice(key);
        self.key_ends.push(self.keys.len());
        self.raw.extend_from_slice(raw);
        self.raw_ends.push(self.raw.len());
        self.kinds.push(kind);
        self.expire_ats.push(None);
        if kind == ValueKind::Pointer {
            self.pointers += 1;
        }
    }

    /// Adds a visible expiring value (`value` the user's bytes, always inline) that expires
    /// at `expire_at`.
    pub(crate) fn push_expiring(&mut self, key: &[u8], value: &[u8], expire_at: u64) {
        self.push(key, ValueKind::Value, value);
        if let Some(last) = self.expire_ats.last_mut() {
            *last = Some(expire_at);
        }
    }

    /// The expiry time of the current entry (`None`: it never expires).
    pub(crate) fn current_expire_at(&self) -> Option<u64> {
        self.expire_ats.get(self.next).copied().flatten()
    }

    /// True when the batch has gathered as many entries as it should before reading values.
    pub(crate) fn is_full(&self) -> bool {
        self.pointers >= self.target || self.kinds.len() >= 4 * self.target
    }

    fn span(ends: &[usize], i: usize) -> (usize, usize) {
        let start = i.checked_sub(1).and_then(|p| ends.get(p)).copied();
        (start.unwrap_or(0), ends.get(i).copied().unwrap_or(0))
    }

    /// Reads every pointer's value from `vlog` (one sorted batch) and copies inline values,
    /// then doubles the target for the next batch.
    ///
    /// # Errors
    /// `Corruption` for a malformed pointer (naming `dir`) or a damaged value-log entry; `Io`.
    pub(crate) fn resolve(&mut self, vlog: &ValueLog, dir: &Path) -> Result<()> {
        let n = self.kinds.len();
        self.ranges.clear();
        self.ranges.resize(n, (ValueAt::Copied, 0, 0));
        let mut requests = Vec::with_capacity(self.pointers);
        for i in 0..n {
            let (rs, re) = Self::span(&self.raw_ends, i);
            let raw = self.raw.get(rs..re).unwrap_or_default();
            let (ks, ke) = Self::span(&self.key_ends, i);
            let key = self.keys.get(ks..ke).unwrap_or_default();
            match self.kinds.get(i) {
                Some(ValueKind::Pointer) => {
                    let ptr = ValuePointer::decode(raw).ok_or_else(|| {
                        Error::corruption(
                            dir,
                            0,
                            format!("malformed value pointer for key {key:?}"),
                        )
                    })?;
                    requests.push(ValueRequest { slot: i, ptr, key });
                }
                _ => {
                    let start = self.values.len();
                    self.values.extend_from_slice(raw);
                    self.ranges[i] = (ValueAt::Copied, start, self.values.len());
                }
            }
        }
        let (values, mappings, ranges) = (&mut self.values, &mut self.mappings, &mut self.ranges);
        vlog.read_values(&mut requests, &mut |slot, v, mapping| {
            let place = match mapping {
                Some(m) => {
                    // The value lies inside the mapping: keep its offset, not a copy.
                    let start = (v.as_ptr() as usize).wrapping_sub(m.as_ptr() as usize);
                    let i = match mappings.iter().position(|x| x.as_ptr() == m.as_ptr()) {
                        Some(i) => i,
                        None => {
                            mappings.push(m.clone());
                            mappings.len() - 1
                        }
                    };
                    (ValueAt::Mapped(i), start, start + v.len())
                }
                None => {
                    let start = values.len();
                    values.extend_from_slice(v);
                    (ValueAt::Copied, start, values.len())
                }
            };
            if let Some(r) = ranges.get_mut(slot) {
                *r = place;
            }
        })?;
        self.target = self.target.saturating_mul(2);
        Ok(())
    }

    /// True when an entry is left to hand out.
    pub(crate) fn has_next(&self) -> bool {
        self.next < self.kinds.len()
    }

    /// Moves to the next entry; returns false when the batch is used up.
    pub(crate) fn advance(&mut self) -> bool {
        self.next += 1;
        self.has_next()
    }

    /// Hands out the current entry (its key and resolved value).
    pub(crate) fn current(&self) -> (&[u8], &[u8]) {
        let (ks, ke) = Self::span(&self.key_ends, self.next);
        let (at, vs, ve) = self
            .ranges
            .get(self.next)
            .copied()
            .unwrap_or((ValueAt::Copied, 0, 0));
        let source: &[u8] = match at {
            ValueAt::Copied => &self.values,
            ValueAt::Mapped(i) => self.mappings.get(i).map_or(&[], |m| m),
        };
        (
            self.keys.get(ks..ke).unwrap_or_default(),
            source.get(vs..ve).unwrap_or_default(),
        )
    }
}
