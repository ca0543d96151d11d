//! FITing-Tree (Galakatos et al., "FITing-Tree: A Data-aware Index Structure", SIGMOD 2019):
//! greedy error-bounded segments indexed by a B+-tree over their start keys.
//!
//! # Segments
//!
//! The segmentation is FITing-Tree's **shrinking cone**, which is exactly the Greedy-PLR fitter
//! of [`super::plr`] ([`GreedyPlr`](super::plr::GreedyPlr), reused, not duplicated): one pass,
//! each segment anchored at its first point, trained on both ends of every step of the
//! lower-bound function `lb` so the error bound δ holds for every u64 key of the file's range,
//! absent keys included (see the `plr` module docs). A segment is `(start key, start position,
//! slope)`, slopes `≥ 0`.
//!
//! # The tree
//!
//! The paper indexes the segments with a B+-tree whose leaves point at segments. Here the
//! segment start keys themselves are the leaf level (grouped in nodes of `F` = fanout keys),
//! and the inner levels are bulk-loaded bottom-up, packed: inner level `L + 1` holds the first
//! key of each node of level `L`, i.e. every `F`-th key of level `L`, until a level fits in one
//! node (the root). Node `j` of level `L + 1` has the children `[j·F, (j + 1)·F)` of level `L`,
//! so no child pointers are stored: all inner levels are one flat `Vec<u64>`, root first (a
//! descent reads forward in memory), with their offsets beside it. The tree costs
//! `≈ 8·m / (F − 1)` bytes for `m` segments, and is rebuilt on decode (the encoding stores
//! `F` and the segments, in PLR's encoding). The segments themselves, their windows and their
//! encoding are a [`PlrIndex`]'s: FITing-Tree only replaces how the segment is found.
//!
//! # Search of a u64 key `x`
//!
//! 1. `n = 0` or `x ≤ first key` → `[0, 1)`; `x > last key` → `[n, n + 1)`.
//! 2. Descend: in the root, find the last key `≤ x` (a linear count inside nodes of up to 64
//!    keys, a binary search in larger ones); its
//!    index `j` selects the node `[j·F, (j + 1)·F)` of the level below; repeat down to the
//!    segment start keys. This finds the last segment `i` whose start is `≤ x`: the key of
//!    entry `j` is `≤ x` and the next entry's (the first key of the next node) is `> x`.
//! 3. As PLR ([`super::plr_model`]): `p = pos_i + slope_i · (x − key_i)` (difference in u64
//!    first), clamped to `[pos_i, pos_{i+1}]`; with `r = δ + 1/64` the window is
//!    `[max(⌈p − r⌉, pos_i), min(⌊p + r⌋ + 1, pos_{i+1} + 1))`: at most **2δ + 1** positions.
//!    The clamp covers keys between segments (Bourbon range-query report, §4.2); the `f64`
//!    rounding stays below 2^-8 positions (positions below 2^41), within the slack.

use super::plr::PlrBuilder;
use super::plr_model::{PlrIndex, Segment};
use super::{put_header, Index, IndexBuilder, IndexConfig, IndexKind, Window};
use crate::coding::put_u32;
use crate::error::{Error, Result};

/// The smallest and largest B+-tree fanout.
const FANOUTS: std::ops::RangeInclusive<u32> = 2..=256;

/// Nodes up to this many keys are searched with a linear (vectorized) count, larger ones with
/// a binary search.
const LINEAR_SCAN: usize = 64;

/// Number of `keys` (sorted) that are `<= x`.
fn count_le(keys: &[u64], x: u64) -> usize {
    if keys.len() <= LINEAR_SCAN {
        keys.iter().map(|&k| usize::from(k <= x)).sum()
    } else {
        keys.partition_point(|&k| k <= x)
    }
}

/// A builder for this index type: rejects a fanout outside `2..=256` with `InvalidArgument`.
pub(super) fn builder(config: &IndexConfig) -> Box<dyn IndexBuilder> {
    Box::new(FitingBuilder::new(
        config.error_bound,
        config.tuning.fiting_fanout,
    ))
}

/// The window bound of an index of `config`: `2δ + 1`.
pub(super) fn documented_max_window(config: &IndexConfig) -> Option<u64> {
    Some(2 * u64::from(config.error_bound) + 1)
}

/// Decodes the body of an encoding of this type (`docs/format/index.md`, kind 6).
pub(super) fn decode_body(body: &[u8]) -> std::result::Result<Box<dyn Index>, String> {
    Ok(Box::new(FitingIndex::decode_body(body)?))
}

/// Streams projected keys into the segments (a [`PlrBuilder`]: the shrinking cone fed both
/// ends of every step of `lb`); the tree is bulk-loaded at `finish`.
#[derive(Debug)]
pub struct FitingBuilder {
    fanout: u32,
    /// Set (once, by `new`) when the fanout is out of range.
    invalid: Option<String>,
    plr: PlrBuilder,
}

impl FitingBuilder {
    /// A builder with error bound `delta` and B+-tree fanout `fanout`.
    pub fn new(delta: u32, fanout: u32) -> Self {
        FitingBuilder {
            fanout,
            invalid: (!FANOUTS.contains(&fanout)).then(|| {
                format!(
                    "index: fiting fanout {fanout} outside {}..={}",
                    FANOUTS.start(),
                    FANOUTS.end()
                )
            }),
            plr: PlrBuilder::new(delta),
        }
    }

    /// The fanout error, if the fanout is out of range.
    fn check_fanout(&self) -> Result<()> {
        match &self.invalid {
            Some(reason) => Err(Error::InvalidArgument(reason.clone())),
            None => Ok(()),
        }
    }
}

impl IndexBuilder for FitingBuilder {
    fn add(&mut self, key: u64) -> Result<()> {
        if self.invalid.is_some() {
            return self.check_fanout();
        }
        self.plr.add(key)
    }

    fn finish(self: Box<Self>) -> Result<Box<dyn Index>> {
        self.check_fanout()?;
        Ok(Box::new(FitingIndex::new(
            self.plr.finish_model()?,
            self.fanout,
        )))
    }
}

/// A FITing-Tree over the projected keys of one file.
#[derive(Debug, Clone, PartialEq)]
pub struct FitingIndex {
    /// The segments (and δ, the key count and range).
    plr: PlrIndex,
    /// B+-tree fanout F (2..=256).
    fanout: u32,
    /// The inner levels, root first; level `L + 1` is every F-th key of level `L` (level 0 =
    /// the segment start keys).
    inner: Vec<u64>,
    /// Inner level `k` (0 = root) is `inner[offsets[k]..offsets[k + 1]]`.
    offsets: Vec<usize>,
}

impl FitingIndex {
    /// Bulk-loads the tree over the segments of `plr`.
    fn new(plr: PlrIndex, fanout: u32) -> FitingIndex {
        let f = fanout.max(2) as usize;
        // Bottom-up: each level is every F-th key of the one below, until one node remains.
        let mut levels: Vec<Vec<u64>> = Vec::new();
        let mut below: &[u64] = plr.starts();
        while below.len() > f {
            let level: Vec<u64> = below.iter().step_by(f).copied().collect();
            levels.push(level);
            below = levels.last().map_or(&[], Vec::as_slice);
        }
        let total = levels.iter().map(Vec::len).sum();
        let mut inner = Vec::with_capacity(total);
        let mut offsets = Vec::with_capacity(levels.len() + 1);
        for level in levels.iter().rev() {
            offsets.push(inner.len());
            inner.extend_from_slice(level);
        }
        offsets.push(inner.len());
        FitingIndex {
            plr,
            fanout,
            inner,
            offsets,
        }
    }

    /// The error bound δ.
    pub fn error_bound(&self) -> u32 {
        self.plr.error_bound()
    }

    /// The B+-tree fanout.
    pub fn fanout(&self) -> u32 {
        self.fanout
    }

    /// Number of tree levels above the segment start keys.
    pub fn inner_levels(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    /// The segments, in key order.
    pub fn segment_list(&self) -> impl Iterator<Item = Segment> + '_ {
        self.plr.segment_list()
    }

    /// Index of the last segment whose start key is `<= x`, by descending the tree.
    /// REQUIRES: `first_key <= x` (otherwise returns 0).
    fn segment_for(&self, x: u64) -> usize {
        let f = self.fanout as usize;
        // The node to search in the current level: the root is its whole level.
        let (mut start, mut end) = (0usize, usize::MAX);
        for pair in self.offsets.windows(2) {
            let level = match pair {
                &[a, b] => self.inner.get(a..b).unwrap_or_default(),
                _ => &[],
            };
            let node = level.get(start..end.min(level.len())).unwrap_or_default();
            let j = start + count_le(node, x).saturating_sub(1);
            start = j.saturating_mul(f);
            end = start.saturating_add(f);
        }
        let starts = self.plr.starts();
        let node = starts.get(start..end.min(starts.len())).unwrap_or_default();
        start + count_le(node, x).saturating_sub(1)
    }

    /// Decodes the body that follows the header (see `docs/format/index.md`): the fanout, then
    /// a PLR body (validated as PLR's), and rebuilds the tree; the error string says what is
    /// wrong.
    pub(super) fn decode_body(body: &[u8]) -> std::result::Result<FitingIndex, String> {
        let (Some(fanout), Some(rest)) = (
            body.first_chunk::<4>().map(|b| u32::from_le_bytes(*b)),
            body.get(4..),
        ) else {
            return Err("fiting: truncated parameters".to_string());
        };
        if !FANOUTS.contains(&fanout) {
            return Err(format!("fiting: fanout {fanout}"));
        }
        let plr = PlrIndex::decode_body(rest).map_err(|e| format!("fiting: {e}"))?;
        Ok(FitingIndex::new(plr, fanout))
    }
}

impl Index for FitingIndex {
    fn fitted_error_bound(&self) -> Option<u32> {
        Some(FitingIndex::error_bound(self))
    }

    fn search(&self, key: u64) -> Window {
        self.plr.search_with(key, |key| self.segment_for(key))
    }

    fn max_window(&self) -> u64 {
        self.plr.max_window()
    }

    fn size_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.plr.heap_bytes()
            + self.inner.capacity() * std::mem::size_of::<u64>()
            + self.offsets.capacity() * std::mem::size_of::<usize>()
    }

    fn kind(&self) -> IndexKind {
        IndexKind::Fiting
    }

    fn len(&self) -> u64 {
        self.plr.len()
    }

    fn segments(&self) -> u64 {
        self.plr.segments()
    }

    fn encode(&self, out: &mut Vec<u8>) {
        put_header(out, IndexKind::Fiting);
        put_u32(out, self.fanout);
        self.plr.encode_body(out);
    }
}

#[cfg(test)]
#[path = "fiting_tests.rs"]
mod tests;
