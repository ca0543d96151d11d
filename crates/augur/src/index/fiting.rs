//! FITing-Tree (Galakatos et al., "FITing-Tree: A Data-aware Index Structure", SIGMOD 2019):
//! greedy error-bounded segments indexed by a B+-tree over their start keys.
//!
//! # Segments
//!
//! The segmentation is FITing-Tree's **shrinking cone**, which is exactly the Greedy-PLR fitter
//! of [`super::plr`] ([`GreedyPlr`], reused, not duplicated): one pass, each segment anchored at
//! its first point, trained on both ends of every step of the lower-bound function `lb` so the
//! error bound δ holds for every u64 key of the file's range, absent keys included (see the
//! `plr` module docs). A segment is `(start key, start position, slope)`, slopes `≥ 0`.
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
//! `≈ 8·m / (F − 1)` bytes for `m` segments, and is rebuilt on decode (the encoding stores the
//! segments and `F` only).
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

use super::plr::GreedyPlr;
use super::plr_model::Segment;
use super::{put_header, Index, IndexBuilder, IndexConfig, IndexKind, KeyOrder, Window, MAX_KEYS};
use crate::coding::{put_u32, put_u64, Decoder};
use crate::error::Result;

/// Rounding slack added to δ on each side of a prediction (as in [`super::plr_model`]).
const SLACK: f64 = 1.0 / 64.0;

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

/// Bytes of one encoded segment.
const SEG_BYTES: usize = 24;

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

/// Streams projected keys into a [`FitingIndex`], feeding each step of `lb` to [`GreedyPlr`]
/// (as [`super::plr::PlrBuilder`] does); the tree is bulk-loaded at `finish`.
#[derive(Debug)]
pub struct FitingBuilder {
    delta: u32,
    fanout: u32,
    order: KeyOrder,
    first_key: u64,
    fit: GreedyPlr,
}

impl FitingBuilder {
    /// A builder with error bound `delta` and B+-tree fanout `fanout` (2..=256; others are
    /// reported by the first `add` or `finish`).
    pub fn new(delta: u32, fanout: u32) -> Self {
        let mut order = KeyOrder::default();
        if !FANOUTS.contains(&fanout) {
            order.failed = Some(format!(
                "index: fiting fanout {fanout} outside {}..={}",
                FANOUTS.start(),
                FANOUTS.end()
            ));
        }
        FitingBuilder {
            delta,
            fanout,
            order,
            first_key: 0,
            fit: GreedyPlr::new(delta),
        }
    }
}

impl IndexBuilder for FitingBuilder {
    fn add(&mut self, key: u64) -> Result<()> {
        let prev = self.order.prev;
        let pos = self.order.count;
        if !self.order.accept(key)? {
            return Ok(()); // a duplicate: lb(key) is its run's first position, already fed
        }
        match prev {
            None => self.first_key = key,
            Some(prev) if prev + 1 < key => self.fit.push(prev + 1, pos),
            Some(_) => {}
        }
        self.fit.push(key, pos);
        Ok(())
    }

    fn finish(self: Box<Self>) -> Result<Box<dyn Index>> {
        self.order.check()?;
        let segments = self.fit.finish();
        let starts = segments.iter().map(|s| s.key).collect();
        let lines = segments
            .iter()
            .map(|s| Line {
                pos: s.pos,
                slope: s.slope,
            })
            .collect();
        Ok(Box::new(FitingIndex::assemble(
            self.delta,
            self.fanout,
            self.order.count,
            self.first_key,
            self.order.prev.unwrap_or(0),
            starts,
            lines,
        )))
    }
}

/// The line of one segment (its start key is kept apart, in the tree's leaf level).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Line {
    pos: u64,
    slope: f64,
}

/// A FITing-Tree over the projected keys of one file.
#[derive(Debug, Clone, PartialEq)]
pub struct FitingIndex {
    /// Error bound δ.
    delta: u32,
    /// B+-tree fanout F (2..=256).
    fanout: u32,
    /// Number of keys indexed.
    n: u64,
    /// Smallest key (0 when `n == 0`); also the first segment's start key.
    first_key: u64,
    /// Largest key (0 when `n == 0`).
    last_key: u64,
    /// Segment start keys, strictly increasing: the tree's leaf level.
    starts: Vec<u64>,
    /// Segment lines, parallel to `starts`; positions non-decreasing, the first is 0.
    lines: Vec<Line>,
    /// The inner levels, root first; level `L + 1` is every F-th key of level `L`.
    inner: Vec<u64>,
    /// Inner level `k` (0 = root) is `inner[offsets[k]..offsets[k + 1]]`.
    offsets: Vec<usize>,
}

impl FitingIndex {
    /// Builds the inner levels over `starts` and assembles the index.
    fn assemble(
        delta: u32,
        fanout: u32,
        n: u64,
        first_key: u64,
        last_key: u64,
        starts: Vec<u64>,
        lines: Vec<Line>,
    ) -> FitingIndex {
        let f = fanout.max(2) as usize;
        // Bottom-up: each level is every F-th key of the one below, until one node remains.
        let mut levels: Vec<Vec<u64>> = Vec::new();
        let mut below: &[u64] = &starts;
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
            delta,
            fanout,
            n,
            first_key,
            last_key,
            starts,
            lines,
            inner,
            offsets,
        }
    }

    /// The error bound δ.
    pub fn error_bound(&self) -> u32 {
        self.delta
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
        self.starts
            .iter()
            .zip(&self.lines)
            .map(|(&key, line)| Segment {
                key,
                pos: line.pos,
                slope: line.slope,
            })
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
        let node = self
            .starts
            .get(start..end.min(self.starts.len()))
            .unwrap_or_default();
        start + count_le(node, x).saturating_sub(1)
    }

    /// Decodes the body that follows the header (see `docs/format/index.md`), checking every
    /// invariant `search` relies on, and rebuilds the tree; the error string says what is wrong.
    pub(super) fn decode_body(body: &[u8]) -> std::result::Result<FitingIndex, String> {
        let mut d = Decoder::new(body);
        let (Some(delta), Some(fanout), Some(n), Some(first_key), Some(last_key), Some(count)) =
            (d.u32(), d.u32(), d.u64(), d.u64(), d.u64(), d.u64())
        else {
            return Err("fiting: truncated parameters".to_string());
        };
        if !FANOUTS.contains(&fanout) {
            return Err(format!("fiting: fanout {fanout}"));
        }
        if n > MAX_KEYS {
            return Err(format!("fiting: {n} keys exceed the limit"));
        }
        if (n == 0) != (count == 0) || first_key > last_key || (n == 0 && last_key != 0) {
            return Err(format!(
                "fiting: {count} segments, keys {first_key}..={last_key} for {n} keys"
            ));
        }
        if usize::try_from(count)
            .ok()
            .and_then(|c| c.checked_mul(SEG_BYTES))
            != Some(d.remaining())
        {
            return Err(format!(
                "fiting: {} bytes for {count} segments",
                d.remaining()
            ));
        }
        let count = d.remaining() / SEG_BYTES;
        let mut starts: Vec<u64> = Vec::with_capacity(count);
        let mut lines: Vec<Line> = Vec::with_capacity(count);
        while let (Some(key), Some(pos), Some(bits)) = (d.u64(), d.u64(), d.u64()) {
            let slope = f64::from_bits(bits);
            let i = starts.len();
            let ordered = match (starts.last(), lines.last()) {
                (Some(&k), Some(l)) => k < key && l.pos <= pos,
                _ => key == first_key && pos == 0,
            };
            if !ordered || key > last_key || pos >= n {
                return Err(format!(
                    "fiting: segment {i} (key {key}, position {pos}) out of order"
                ));
            }
            if !(slope.is_finite() && slope >= 0.0) {
                return Err(format!("fiting: segment {i} has slope {slope}"));
            }
            starts.push(key);
            lines.push(Line { pos, slope });
        }
        Ok(FitingIndex::assemble(
            delta, fanout, n, first_key, last_key, starts, lines,
        ))
    }
}

impl Index for FitingIndex {
    fn search(&self, key: u64) -> Window {
        if key <= self.first_key || self.n == 0 {
            return Window { lo: 0, hi: 1 };
        }
        if key > self.last_key {
            return Window {
                lo: self.n,
                hi: self.n + 1,
            };
        }
        let i = self.segment_for(key);
        let (Some(&start), Some(line)) = (self.starts.get(i), self.lines.get(i)) else {
            return Window {
                lo: 0,
                hi: self.n + 1,
            }; // unreachable for a built or decoded index; stay correct anyway
        };
        let next_pos = self.lines.get(i + 1).map_or(self.n, |l| l.pos);
        let predicted = line.pos as f64 + line.slope * key.wrapping_sub(start) as f64;
        // f64 `max`/`min` (not `clamp`) never panic; `as` floors, saturates, maps NaN to 0.
        let p = predicted.max(line.pos as f64).min(next_pos as f64);
        let reach = f64::from(self.delta) + SLACK;
        // ⌈p − r⌉ by hand (`f64::ceil` is a libm call on baseline x86-64).
        let low = p - reach;
        let floor = low as u64;
        let lo = (floor + u64::from((floor as f64) < low)).max(line.pos);
        let hi = ((p + reach) as u64).saturating_add(1).min(next_pos + 1);
        Window {
            lo,
            hi: hi.max(lo + 1),
        }
    }

    fn max_window(&self) -> u64 {
        2 * u64::from(self.delta) + 1
    }

    fn size_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.starts.capacity() * std::mem::size_of::<u64>()
            + self.lines.capacity() * std::mem::size_of::<Line>()
            + self.inner.capacity() * std::mem::size_of::<u64>()
            + self.offsets.capacity() * std::mem::size_of::<usize>()
    }

    fn kind(&self) -> IndexKind {
        IndexKind::Fiting
    }

    fn len(&self) -> u64 {
        self.n
    }

    fn segments(&self) -> u64 {
        self.starts.len() as u64
    }

    fn encode(&self, out: &mut Vec<u8>) {
        put_header(out, IndexKind::Fiting);
        put_u32(out, self.delta);
        put_u32(out, self.fanout);
        put_u64(out, self.n);
        put_u64(out, self.first_key);
        put_u64(out, self.last_key);
        put_u64(out, self.starts.len() as u64);
        for s in self.segment_list() {
            put_u64(out, s.key);
            put_u64(out, s.pos);
            put_u64(out, s.slope.to_bits());
        }
    }
}

#[cfg(test)]
#[path = "fiting_tests.rs"]
mod tests;
