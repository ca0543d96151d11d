//! PGM-index (Ferragina & Vinciguerra, "The PGM-index", VLDB 2020): the lookup half and the
//! builder. Fitting — O'Rourke's optimal piecewise linear approximation — is in
//! [`super::pgm_fit`] (STYLE.md §10).
//!
//! # Structure
//!
//! - **Leaves** (level 0): the optimal PLA with error ε = [`IndexConfig::error_bound`] of the
//!   file's lower-bound function `lb`, fitted on both ends of every step (so absent keys and
//!   keys inside runs of equal projections are covered, see [`super::pgm_fit`]). A segment is
//!   `(key, slope, intercept)`: its line is `intercept + slope · (x − key)`.
//! - **Recursive levels**: level `L + 1` is the same PLA, with error
//!   ε_rec = [`IndexTuning::pgm_recursive_error`](super::IndexTuning) (≥ 1), of the
//!   lower-bound function of level `L`'s segment keys over `[first key, last key]`. Levels are
//!   added until one holds at most 64 segments (the root), or stops shrinking. *Augur*: the
//!   reference recurses down to a single segment; a root of up to 64 keys is searched by one
//!   vectorized count over 512 bytes, cheaper than the two more levels of dependent loads it
//!   replaces (measured with `examples/index_bench.rs`).
//! - All segments live in one `Vec`, leaves first, with the level offsets beside them (the PGM
//!   reference's layout).
//!
//! # Search of a u64 key `x`
//!
//! 1. `n = 0` or `x ≤ first key` → `[0, 1)`; `x > last key` → `[n, n + 1)`.
//! 2. At the root level, find the last segment whose key is `≤ x` (a linear count over at most
//!    64 keys).
//! 3. Descending: segment `t` of level `L + 1` predicts `p`, the rank of `x` among level `L`'s
//!    keys, within ε_rec (its line at `x`, capped by the next segment's intercept); so `lb_L(x) ∈ [⌈p − r⌉, ⌊p + r⌋]` with `r = ε_rec + 1/64`, and the
//!    last level-`L` segment whose key is `≤ x` is `lb_L(x)` or `lb_L(x) − 1`: a binary search
//!    over those at most `2ε_rec + 2` segments finds it.
//! 4. The leaf segment predicts `p` (capped the same way) within ε of `lb(x)`; the window is the integers of
//!    `[p − r, p + r]` with `r = ε + 1/64`, i.e. `[⌈p − r⌉, ⌊p + r⌋ + 1)`, clamped to
//!    `[0, n + 1)`: at most **2ε + 1** positions (an interval of length `2ε + 1/32` holds at most
//!    `2ε + 1` integers).
//!
//! Why it holds for every key: a segment is used only for the keys it owns (from its key up
//! to the next segment's key minus one). The fitter guarantees, in exact arithmetic, that its
//! line is within the error bound of `lb` at each of its fitted points, hence between them,
//! and a prediction capped by the next segment's intercept stays within the bound at the
//! owned keys past the last fitted point ([`super::pgm_fit`], "Segment boundaries"). The key
//! difference `x − key` is taken in u64 before converting to `f64` (a key
//! above 2^53 is not exact as `f64`). Rounding of the stored line and of the prediction stays
//! below 2^-8 positions, since positions are below 2^41 ([`super::MAX_KEYS`]); the slack 1/64
//! covers it. A damaged (but decodable) model still returns non-empty windows inside
//! `[0, n + 1)`: every prediction is clamped and every index checked.

use super::pgm_fit::{fit_level_above, LevelFit, Seg};
use super::step_feed::{StepFeed, StepFit};
use super::{put_header, Index, IndexBuilder, IndexConfig, IndexKind, Window, MAX_KEYS};
use crate::coding::{put_u32, put_u64, Decoder};
use crate::error::Result;

/// Rounding slack added to the error bound on each side of a prediction (module docs).
const SLACK: f64 = 1.0 / 64.0;

/// Bytes of one encoded segment.
const SEG_BYTES: usize = 24;

/// The line of one segment (its key is kept apart, for a dense search over keys).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Line {
    slope: f64,
    intercept: f64,
}

/// Window searches up to this many keys count the keys `<= x` with a linear (vectorized) scan
/// instead of a binary search.
const LINEAR_SCAN: usize = 64;

/// Recursive levels are added until a level holds at most this many segments (module docs).
const ROOT_MAX: usize = LINEAR_SCAN;

/// Number of `keys` (sorted) that are `<= x`.
fn count_le(keys: &[u64], x: u64) -> usize {
    if keys.len() <= LINEAR_SCAN {
        keys.iter().map(|&k| usize::from(k <= x)).sum()
    } else {
        keys.partition_point(|&k| k <= x)
    }
}

/// The prediction of segment `t` of a level at `x` (REQUIRES: `x >=` its key, `x <` the next
/// segment's key): its line, capped by the next segment's intercept (module docs), clamped to
/// `[0, max]`. The difference is taken in u64 first; `max`/`min` map a NaN to a bound (only a
/// damaged model produces one). `None` when `t` is out of range (a damaged model).
fn predict(keys: &[u64], lines: &[Line], t: usize, x: u64, max: u64) -> Option<f64> {
    let (key, line) = (keys.get(t)?, lines.get(t)?);
    let mut p = line.intercept + line.slope * x.wrapping_sub(*key) as f64;
    if let Some(next) = lines.get(t + 1) {
        p = p.min(next.intercept);
    }
    Some(p.max(0.0).min(max as f64))
}

/// The integer window `[⌈p − r⌉, ⌊p + r⌋ + 1)` with `r = eps + SLACK`, clamped to
/// `[0, max + 1)` and never empty (`as` floors `p + r`).
fn window(p: f64, eps: u32, max: u64) -> Window {
    let reach = f64::from(eps) + SLACK;
    let lo = super::ceil_position(p - reach).min(max);
    let hi = ((p + reach) as u64).saturating_add(1).min(max + 1);
    Window {
        lo,
        hi: hi.max(lo + 1),
    }
}

/// A builder for this index type: rejects `pgm_recursive_error = 0` with `InvalidArgument`.
pub(super) fn builder(config: &IndexConfig) -> Box<dyn IndexBuilder> {
    Box::new(PgmBuilder::new(
        config.error_bound,
        config.tuning.pgm_recursive_error,
    ))
}

/// The window bound of an index of `config`: `2ε + 1`.
pub(super) fn documented_max_window(config: &IndexConfig) -> Option<u64> {
    Some(2 * u64::from(config.error_bound) + 1)
}

/// Decodes the body of an encoding of this type (`docs/format/index.md`, kind 3).
pub(super) fn decode_body(body: &[u8]) -> std::result::Result<Box<dyn Index>, String> {
    Ok(Box::new(PgmIndex::decode_body(body)?))
}

/// Streams projected keys into a [`PgmIndex`]: the leaf level is fitted while keys arrive, the
/// (small) recursive levels at `finish`.
#[derive(Debug)]
pub struct PgmBuilder {
    eps: u32,
    eps_rec: u32,
    feed: StepFeed<PgmSteps>,
}

/// PGM's leaf fitter of the steps of `lb`, and the first key.
#[derive(Debug)]
struct PgmSteps {
    first_key: u64,
    fit: LevelFit,
}

impl PgmBuilder {
    /// A builder with leaf error `eps` and recursive error `eps_rec` (≥ 1; 0 is reported by
    /// the first `add` or `finish`).
    pub fn new(eps: u32, eps_rec: u32) -> Self {
        let mut feed = StepFeed::new(PgmSteps {
            first_key: 0,
            fit: LevelFit::new(eps),
        });
        if eps_rec == 0 {
            feed.order.failed = Some("index: pgm recursive error must be at least 1".to_string());
        }
        PgmBuilder { eps, eps_rec, feed }
    }
}

impl StepFit for PgmSteps {
    #[inline(always)]
    fn fit_step(&mut self, prev: Option<u64>, key: u64, pos: u64) {
        let left = match prev {
            None => {
                self.first_key = key;
                key
            }
            Some(prev) => prev + 1,
        };
        self.fit.push_step(left, key, pos);
    }
}

impl IndexBuilder for PgmBuilder {
    fn add(&mut self, key: u64) -> Result<()> {
        self.feed.add(key)
    }

    fn add_all(&mut self, keys: &[u64]) -> Result<()> {
        self.feed.add_all(keys)
    }

    fn finish(self: Box<Self>) -> Result<Box<dyn Index>> {
        let StepFeed { order, fit } = self.feed;
        order.check()?;
        let n = order.count;
        let last_key = order.prev.unwrap_or(0);
        let first_key = fit.first_key;
        let leaves = fit.fit.finish();
        let mut keys: Vec<u64> = leaves.iter().map(|s| s.key).collect();
        let mut lines: Vec<Line> = leaves.iter().map(Line::of).collect();
        let mut offsets = vec![0, keys.len()];
        let mut level_start = 0;
        while keys.len() - level_start > ROOT_MAX {
            let below = keys.get(level_start..).unwrap_or_default();
            let above = fit_level_above(below, last_key, self.eps_rec);
            if above.len() >= below.len() {
                break; // not shrinking (cannot happen with ε_rec ≥ 1): keep a wider root
            }
            level_start = keys.len();
            keys.extend(above.iter().map(|s| s.key));
            lines.extend(above.iter().map(Line::of));
            offsets.push(keys.len());
        }
        if n == 0 {
            offsets.truncate(1);
        }
        keys.shrink_to_fit();
        lines.shrink_to_fit();
        offsets.shrink_to_fit();
        let index = PgmIndex {
            eps: self.eps,
            eps_rec: self.eps_rec,
            n,
            first_key,
            last_key,
            keys,
            lines,
            offsets,
        };
        Ok(Box::new(index))
    }
}

impl Line {
    fn of(seg: &Seg) -> Line {
        Line {
            slope: seg.slope,
            intercept: seg.intercept,
        }
    }
}

/// A PGM-index over the projected keys of one file.
#[derive(Debug, Clone, PartialEq)]
pub struct PgmIndex {
    /// Leaf error bound ε.
    eps: u32,
    /// Error bound ε_rec of the recursive levels (≥ 1).
    eps_rec: u32,
    /// Number of keys indexed.
    n: u64,
    /// Smallest key (0 when `n == 0`); the first key of every level.
    first_key: u64,
    /// Largest key (0 when `n == 0`).
    last_key: u64,
    /// Every level's segment keys, leaves first; strictly increasing within a level.
    keys: Vec<u64>,
    /// The segments' lines, parallel to `keys`.
    lines: Vec<Line>,
    /// Level `L` is `[offsets[L], offsets[L + 1])` of `keys` and `lines`; `[0]` when `n == 0`,
    /// otherwise at least two entries, strictly increasing, level sizes strictly decreasing.
    offsets: Vec<usize>,
}

impl PgmIndex {
    /// The leaf error bound ε.
    pub fn error_bound(&self) -> u32 {
        self.eps
    }

    /// The error bound of the recursive levels.
    pub fn recursive_error_bound(&self) -> u32 {
        self.eps_rec
    }

    /// Number of levels (leaves included; 0 for an empty index).
    pub fn levels(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    /// Segment keys and lines of level `level` (0 = leaves).
    fn level(&self, level: usize) -> (&[u64], &[Line]) {
        match (self.offsets.get(level), self.offsets.get(level + 1)) {
            (Some(&a), Some(&b)) => (
                self.keys.get(a..b).unwrap_or_default(),
                self.lines.get(a..b).unwrap_or_default(),
            ),
            _ => (&[], &[]),
        }
    }

    /// Index, in level 0, of the last leaf segment whose key is `<= x`.
    /// REQUIRES: `first_key <= x`.
    fn leaf_for(&self, x: u64) -> usize {
        let levels = self.levels();
        let (root, _) = self.level(levels.saturating_sub(1));
        let mut t = count_le(root, x).saturating_sub(1);
        for level in (1..levels).rev() {
            let (keys, lines) = self.level(level);
            let (below, _) = self.level(level - 1);
            let m = below.len() as u64;
            let Some(p) = predict(keys, lines, t, x, m) else {
                return 0; // unreachable for a built or decoded index
            };
            let w = window(p, self.eps_rec, m);
            // lb_below(x) ∈ [w.lo, w.hi); the wanted segment is lb or lb − 1.
            let a = w.lo.saturating_sub(1) as usize;
            let b = w.hi.min(m) as usize;
            t = a + count_le(below.get(a..b).unwrap_or_default(), x).saturating_sub(1);
        }
        t
    }

    /// Decodes the body that follows the header (see `docs/format/index.md`), checking every
    /// invariant `search` relies on; the error string says what is wrong.
    pub(super) fn decode_body(body: &[u8]) -> std::result::Result<PgmIndex, String> {
        let mut d = Decoder::new(body);
        let (Some(eps), Some(eps_rec), Some(n), Some(first_key), Some(last_key), Some(levels)) =
            (d.u32(), d.u32(), d.u64(), d.u64(), d.u64(), d.u32())
        else {
            return Err("pgm: truncated parameters".to_string());
        };
        if n > MAX_KEYS {
            return Err(format!("pgm: {n} keys exceed the limit"));
        }
        if eps_rec == 0 {
            return Err("pgm: recursive error 0".to_string());
        }
        if (n == 0) != (levels == 0) || first_key > last_key || (n == 0 && last_key != 0) {
            return Err(format!(
                "pgm: {levels} levels, keys {first_key}..={last_key} for {n} keys"
            ));
        }
        if u64::from(levels) * 8 > d.remaining() as u64 {
            return Err(format!("pgm: {levels} levels do not fit"));
        }
        let mut offsets = Vec::with_capacity(levels as usize + 1);
        offsets.push(0usize);
        let mut total = 0usize;
        let mut prev_count = u64::MAX;
        for level in 0..levels {
            let count = d.u64().unwrap_or(0);
            if count == 0 || count >= prev_count {
                return Err(format!("pgm: level {level} has {count} segments"));
            }
            prev_count = count;
            total = usize::try_from(count)
                .ok()
                .and_then(|c| total.checked_add(c))
                .filter(|t| t.saturating_mul(SEG_BYTES) <= d.remaining())
                .ok_or_else(|| format!("pgm: level {level} has {count} segments"))?;
            offsets.push(total);
        }
        if total.checked_mul(SEG_BYTES) != Some(d.remaining()) {
            return Err(format!("pgm: {} bytes for {total} segments", d.remaining()));
        }
        let mut keys: Vec<u64> = Vec::with_capacity(total);
        let mut lines: Vec<Line> = Vec::with_capacity(total);
        for (level, pair) in offsets.windows(2).enumerate() {
            let (start, end) = (pair.first().copied(), pair.get(1).copied());
            let count = end.unwrap_or(0) - start.unwrap_or(0);
            for i in 0..count {
                let (Some(key), Some(slope), Some(intercept)) = (d.u64(), d.u64(), d.u64()) else {
                    return Err("pgm: truncated segments".to_string());
                };
                let (slope, intercept) = (f64::from_bits(slope), f64::from_bits(intercept));
                let ordered = match i {
                    0 => key == first_key,
                    _ => keys.last().is_some_and(|&k| k < key),
                };
                if !ordered || key > last_key {
                    return Err(format!(
                        "pgm: level {level} segment {i} key {key} out of order"
                    ));
                }
                if !(slope.is_finite() && slope >= 0.0 && intercept.is_finite()) {
                    return Err(format!(
                        "pgm: level {level} segment {i}: slope {slope}, intercept {intercept}"
                    ));
                }
                keys.push(key);
                lines.push(Line { slope, intercept });
            }
        }
        Ok(PgmIndex {
            eps,
            eps_rec,
            n,
            first_key,
            last_key,
            keys,
            lines,
            offsets,
        })
    }
}

impl Index for PgmIndex {
    fn fitted_error_bound(&self) -> Option<u32> {
        Some(PgmIndex::error_bound(self))
    }

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
        let t = self.leaf_for(key);
        let (keys, lines) = self.level(0);
        match predict(keys, lines, t, key, self.n) {
            Some(p) => window(p, self.eps, self.n),
            None => Window {
                lo: 0,
                hi: self.n + 1,
            }, // unreachable for a built or decoded index; stay correct anyway
        }
    }

    fn max_window(&self) -> u64 {
        2 * u64::from(self.eps) + 1
    }

    fn size_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.keys.capacity() * std::mem::size_of::<u64>()
            + self.lines.capacity() * std::mem::size_of::<Line>()
            + self.offsets.capacity() * std::mem::size_of::<usize>()
    }

    fn kind(&self) -> IndexKind {
        IndexKind::Pgm
    }

    fn len(&self) -> u64 {
        self.n
    }

    /// Leaf segments (the recursive levels are not counted).
    fn segments(&self) -> u64 {
        self.level(0).0.len() as u64
    }

    fn encode(&self, out: &mut Vec<u8>) {
        put_header(out, IndexKind::Pgm);
        put_u32(out, self.eps);
        put_u32(out, self.eps_rec);
        put_u64(out, self.n);
        put_u64(out, self.first_key);
        put_u64(out, self.last_key);
        put_u32(out, self.levels() as u32);
        for level in 0..self.levels() {
            put_u64(out, self.level(level).0.len() as u64);
        }
        for (key, line) in self.keys.iter().zip(&self.lines) {
            put_u64(out, *key);
            put_u64(out, line.slope.to_bits());
            put_u64(out, line.intercept.to_bits());
        }
    }
}

#[cfg(test)]
#[path = "pgm_tests.rs"]
mod tests;
