//! PLEX's self-tuning (Stoian et al., aiDM 2021, §3.2): choose the locator over the spline
//! points — a Compact Hist-Tree with `(bin_bits, max_error)`, or a plain radix table with
//! `bits` — from a small cost model evaluated on the spline points themselves. Only δ is
//! user-facing; this picks everything else.
//!
//! # The cost model (*Augur*'s concrete version)
//!
//! A lookup of a random record of the file ends in the spline segment that holds it; segment
//! `j` (ending at knot `j`) holds `w_j = y_j − y_{j−1}` records, so knot `j` is the target
//! of a lookup with probability `w_j / n'` (`n'` = the last knot's position). The expected
//! cost of a locator, in units of one dependent memory access, is
//!
//! ```text
//! cost = NODE_COST · E[nodes visited] + STEP_COST · E[⌈log2(size of the searched range)⌉]
//! ```
//!
//! - radix table (`bits`): one node (the table slot), then a binary search over the
//!   `c + 1` knots of the slot's range (`c` = knots in the slot);
//! - CHT `(b, e)`: one node per level down to the leaf bin holding the target's knot, then a
//!   binary search over the `c + 1` knots of the bin's range (`c` = knots in the bin, at
//!   most `e`; the model ignores that the range is `e + 1` knots when the next bin is a
//!   child node, see [`super::cht`]).
//!
//! `NODE_COST = 1` (a cache miss per level) and `STEP_COST = 1/2` (the first steps of a
//! binary search miss the cache, the last ones share a line). The space of a candidate is its
//! exact table size. Candidates: CHT with `b ∈ 4..=12` and `e ∈ {8, 16, 32, 64}`, radix
//! tables with `bits ∈ [r_max − 6, r_max]`, `r_max = ⌈log2 m⌉ + 1`.
//! Those over the **space budget** `8 · m + 1 KiB` bytes (half the spline's own 16 bytes per
//! point, plus a small constant) are dropped; among the rest, the cheapest cost `c*` is found
//! and the **smallest** candidate with cost `≤ 1.05 · c*` is taken (a 5% tolerance buys
//! space). A radix table of `r_max − 6` bits always fits, so a choice always exists.
//!
//! All CHTs of one `b` are evaluated in a single walk: a node of the tree with `e = 8` exists
//! in the tree with `e` iff its point count exceeds `e` (counts shrink downwards), so one
//! traversal counts nodes and depths for every `e`; a walk stops as soon as even the tree with
//! `e = 64` is over the budget. Tuning costs `O(m · depth)` per `b`, on the `m` spline points
//! (far fewer than the keys for δ ≥ 8; about twice the keys at δ = 0 on gappy keys).

use super::cht::{root, Cht};
use super::radix_spline::RadixTable;

/// Cost of visiting one node (a table slot or a CHT node).
const NODE_COST: f64 = 1.0;
/// Cost of one binary-search step over spline keys.
const STEP_COST: f64 = 0.5;
/// The CHT bin bits tried.
const BIN_BITS: std::ops::RangeInclusive<u32> = 4..=12;
/// The CHT leaf sizes tried, increasing.
const MAX_ERRORS: [u32; 4] = [8, 16, 32, 64];
/// Radix bits tried below the largest useful table.
const RADIX_SPAN: u32 = 6;
/// Relative cost tolerance traded for space.
const TOLERANCE: f64 = 1.05;

/// The locator PLEX builds over its spline points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Choice {
    /// A flat radix table with `bits` radix bits.
    Radix {
        /// Radix bits (1..=24).
        bits: u32,
    },
    /// A Compact Hist-Tree.
    Cht {
        /// log2 of the bins per node.
        bin_bits: u32,
        /// Spline points per leaf bin.
        max_error: u32,
    },
}

/// A priced candidate.
#[derive(Debug, Clone, Copy)]
struct Candidate {
    cost: f64,
    bytes: usize,
    choice: Choice,
}

/// The space budget for the locator of `m` spline points.
pub(super) fn budget_bytes(m: usize) -> usize {
    8 * m + 1024
}

/// Chooses the locator for spline points `keys` (strictly increasing) at positions `pos`.
pub(super) fn tune(keys: &[u64], pos: &[u64]) -> Choice {
    let m = keys.len();
    let r_max = RadixTable::effective_bits(24, m);
    let fallback = Choice::Radix {
        bits: r_max.saturating_sub(RADIX_SPAN).max(1),
    };
    let total = pos.last().copied().unwrap_or(0) as f64;
    if m < 3 || total <= 0.0 {
        return fallback;
    }
    // Records whose lookups end at knots [a, b): the positions those segments cover.
    let weight = |a: usize, b: usize| -> f64 {
        let hi = pos.get(b.wrapping_sub(1)).copied().unwrap_or(0);
        let lo = pos.get(a.saturating_sub(1)).copied().unwrap_or(0);
        hi.saturating_sub(lo) as f64
    };
    let budget = budget_bytes(m);
    let mut candidates: Vec<Candidate> = Vec::new();
    for bits in r_max.saturating_sub(RADIX_SPAN).max(1)..=r_max {
        let bytes = RadixTable::predicted_bytes(keys, bits);
        if bytes > budget {
            continue; // dropped anyway: do not price it
        }
        let (min, shift) = root(keys, bits);
        let mut search = 0.0;
        for_each_group(
            keys,
            0,
            keys.len(),
            |k| (k - min) >> shift,
            |a, b| {
                search += weight(a, b) * f64::from(steps(b - a));
            },
        );
        candidates.push(Candidate {
            cost: NODE_COST + STEP_COST * search / total,
            bytes,
            choice: Choice::Radix { bits },
        });
    }
    for bin_bits in BIN_BITS {
        for (max_error, nodes, weighted) in price_cht(keys, bin_bits, &weight, budget) {
            let bytes = nodes.saturating_mul(4 << bin_bits);
            candidates.push(Candidate {
                cost: weighted / total,
                bytes,
                choice: Choice::Cht {
                    bin_bits,
                    max_error,
                },
            });
        }
    }
    candidates.retain(|c| c.bytes <= budget);
    let best = candidates
        .iter()
        .map(|c| c.cost)
        .fold(f64::INFINITY, f64::min);
    candidates
        .iter()
        .filter(|c| c.cost <= best * TOLERANCE)
        .min_by_key(|c| c.bytes)
        .map_or(fallback, |c| c.choice)
}

/// Calls `visit(a, b)` for each maximal run `[a, b)` of `keys[lo..hi]` with equal `group(k)`.
fn for_each_group(
    keys: &[u64],
    lo: usize,
    hi: usize,
    group: impl Fn(u64) -> u64,
    mut visit: impl FnMut(usize, usize),
) {
    let Some(slice) = keys.get(lo..hi) else {
        return;
    };
    let mut start = lo;
    let mut current: Option<u64> = None;
    for (i, &k) in (lo..).zip(slice) {
        let g = group(k);
        if current.is_some_and(|c| c != g) {
            visit(start, i);
            start = i;
        }
        current = Some(g);
    }
    if current.is_some() {
        visit(start, hi);
    }
}

/// For every `e` of [`MAX_ERRORS`]: `(e, nodes, Σ weight · cost)` of the CHT with
/// `bin_bits` over `keys`, in one walk of the tree with the smallest `e`. A lookup ending in a
/// leaf bin of `c` points at depth `d` costs `NODE_COST · d + STEP_COST · log2(c + 1)`.
///
/// Stops early, returning no candidate, once even the tree with the largest `e` (the fewest
/// nodes) exceeds `budget` bytes.
fn price_cht(
    keys: &[u64],
    bin_bits: u32,
    weight: &impl Fn(usize, usize) -> f64,
    budget: usize,
) -> Vec<(u32, usize, f64)> {
    const NE: usize = MAX_ERRORS.len();
    let mask = (1u64 << bin_bits) - 1;
    let (min, root_shift) = root(keys, bin_bits);
    let mut nodes = [1usize; NE];
    let mut cost = [0.0f64; NE];
    // (first point, end, shift, depth of this node in the tree of each e, or 0 when the
    // node's points already ended in a leaf of that tree)
    let mut stack: Vec<(usize, usize, u32, [u32; NE])> = vec![(0, keys.len(), root_shift, [1; NE])];
    while let Some((lo, hi, shift, depth)) = stack.pop() {
        let child_shift = shift.saturating_sub(bin_bits);
        for_each_group(
            keys,
            lo,
            hi,
            |k| ((k - min) >> shift) & mask,
            |a, b| {
                let count = b - a;
                let w = weight(a, b);
                let search = STEP_COST * f64::from(steps(count));
                let split = count > MAX_ERRORS[0] as usize && shift > 0;
                let mut child = [0u32; NE];
                for k in 0..NE {
                    let (d, e) = (depth[k], MAX_ERRORS[k] as usize);
                    if d == 0 {
                        continue;
                    }
                    if split && count > e {
                        child[k] = d + 1;
                        nodes[k] += 1;
                    } else {
                        cost[k] += w * (NODE_COST * f64::from(d) + search);
                    }
                }
                if split {
                    stack.push((a, b, child_shift, child));
                }
            },
        );
        if nodes[NE - 1].saturating_mul(4 << bin_bits) > budget {
            return Vec::new();
        }
    }
    (0..NE)
        .map(|k| (MAX_ERRORS[k], nodes[k], cost[k]))
        .collect()
}

/// Binary-search steps over `c + 1` elements: `⌈log2(c + 1)⌉`.
fn steps(c: usize) -> u32 {
    usize::BITS - c.leading_zeros()
}

/// Builds the locator `choice` names over `keys`.
pub(super) fn build(keys: &[u64], choice: Choice) -> Locator {
    match choice {
        Choice::Radix { bits } => Locator::Radix(RadixTable::build(keys, bits)),
        Choice::Cht {
            bin_bits,
            max_error,
        } => Locator::Cht(Cht::build(keys, bin_bits, max_error)),
    }
}

/// A built locator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Locator {
    /// A flat radix table.
    Radix(RadixTable),
    /// A Compact Hist-Tree.
    Cht(Cht),
}

impl super::spline::KnotLocator for Locator {
    #[inline]
    fn range(&self, x: u64) -> (usize, usize) {
        Locator::range(self, x)
    }
}

impl Locator {
    /// The knot-index range holding the first spline point `>= x` (see the two types).
    #[inline]
    pub(super) fn range(&self, x: u64) -> (usize, usize) {
        match self {
            Locator::Radix(t) => t.range(x),
            Locator::Cht(t) => t.range(x),
        }
    }

    /// Memory held by the locator's buffers.
    pub(super) fn heap_bytes(&self) -> usize {
        match self {
            Locator::Radix(t) => t.heap_bytes(),
            Locator::Cht(t) => t.heap_bytes(),
        }
    }
}
