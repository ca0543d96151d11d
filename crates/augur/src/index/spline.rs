//! The error-bounded linear spline shared by [`super::radix_spline`] and [`super::plex`]:
//! the one-pass GreedySplineCorridor fitter (Kipf et al., "RadixSpline: a single-pass learned
//! index", aiDM 2020, §2; Neumann & Michel, "Smooth interpolating histograms with error
//! guarantees", BNCOD 2008) and the interpolation that turns a spline segment into a window.
//! Both index types locate the segment of a key with their own structure (a radix table, a
//! compact hist-tree) and hand the candidate knot range to [`Spline::window`].
//!
//! # What is fitted
//!
//! As in [`super::plr`], the spline approximates the **lower-bound step function** `lb(x)`
//! over the whole key range, not only the keys: for distinct keys `x_0 < … < x_{m−1}` whose
//! runs start at positions `y_0 < … < y_{m−1}`, `lb(x) = y_j` on `(x_{j−1}, x_j]`, and each step
//! is fed as its two ends `(x_{j−1} + 1, y_j)` (skipped when it equals `x_j`) and `(x_j, y_j)`.
//! Every fed point lies on `lb`.
//!
//! # GreedySplineCorridor
//!
//! Knots (spline points) are a subset of the fed points; the first and the last fed point are
//! knots. From the last knot `B`, the fitter keeps a corridor of slopes `[L, U]`: for every
//! point `P` seen since `B`, the slopes from `B` to `(x_P, y_P − δ)` and `(x_P, y_P + δ)`
//! narrow it. A new point `Q` whose slope from `B` lies inside the corridor extends the
//! segment (the line `B → Q` is within δ of every point in between, because its slope is
//! feasible for each of them); otherwise the previous point becomes a knot and the corridor
//! restarts from it. Slopes are exact fractions `num / den` compared in `u128` (numerators
//! below 2^42 since positions are below 2^40 and δ below 2^32, denominators below 2^64).
//!
//! # Why the window contract holds
//!
//! Between consecutive knots `(x_a, y_a)` and `(x_b, y_b)` the interpolation is within δ of
//! every fed point in `[x_a, x_b]` (above), exactly at the knots. Between two consecutive fed
//! points there is either no integer (`x_{j−1}` and `x_{j−1} + 1`) or `lb` is constant
//! (`(x_{j−1} + 1, y_j)` to `(x_j, y_j)`) while the interpolation is linear, so its error is
//! linear there and stays within δ: the bound holds for **every** u64 key in
//! `[x_0, x_{m−1}]` — present, absent, inside a run of duplicates. Keys `<= x_0` have
//! `lb = 0`, keys `> x_{m−1}` have `lb = n`; both are answered without the spline.
//!
//! The lookup interpolates with integer differences (`x − x_a` and `x_b − x_a` in u64 before
//! the conversion to `f64`, since a u64 key above 2^53 is not exact as `f64`), clamps the
//! prediction to `[y_a, y_b]` (knots lie on `lb`, which is monotone) and returns the integers
//! of `[p − δ − 1/64, p + δ + 1/64]`: at most `2δ + 1` of them. The `f64` error of `p` is below
//! 2^-9 positions (relative errors of a few ulps on a ratio in `(0, 1]`, times `y_b − y_a <
//! 2^40`), well inside the 1/64 slack.
//!
//! The caller's knot range is only a hint: [`Spline::window`] checks that the knots it found
//! bracket the key and falls back to a binary search over all knots otherwise, so a locator
//! can never make a window miss `lb`.

use super::step_feed::{StepFeed, StepFit};
use super::{Window, MAX_KEYS};
use crate::coding::{put_u32, put_u64, Decoder};
use crate::error::Result;

/// Rounding slack added to δ on each side of a prediction (see the module docs).
const SLACK: f64 = 1.0 / 64.0;

/// The largest number of knots a spline may have: locators index knots with 31 bits.
pub(super) const MAX_KNOTS: usize = (1 << 31) - 1;

/// `a_num / a_den <= b_num / b_den`, exactly (denominators positive): one widening multiply
/// each side.
#[inline]
fn slope_le(a_num: u64, a_den: u64, b_num: u64, b_den: u64) -> bool {
    u128::from(a_num) * u128::from(b_den) <= u128::from(b_num) * u128::from(a_den)
}

/// The GreedySplineCorridor fitter: feed points with strictly increasing `x` and
/// non-decreasing `y`, get knots.
///
/// Every slope here is `>= 0` (`y` never decreases), so a lower corridor limit below 0
/// constrains nothing and is stored as 0: all numerators are non-negative u64 and the exact
/// comparisons are single widening `u64 × u64 → u128` multiplies.
#[derive(Debug)]
pub(super) struct SplineFit {
    delta: u64,
    /// Knot keys so far (strictly increasing).
    keys: Vec<u64>,
    /// Knot positions, parallel to `keys`.
    pos: Vec<u64>,
    /// The last point fed, when it is not the last knot.
    prev: Option<(u64, u64)>,
    /// Upper corridor limit from the last knot, `num / den`; valid when `prev` is some.
    upper: (u64, u64),
    /// Lower corridor limit from the last knot, clamped at 0.
    lower: (u64, u64),
}

impl SplineFit {
    /// A fitter with error bound `delta`.
    pub(super) fn new(delta: u32) -> SplineFit {
        SplineFit {
            delta: u64::from(delta),
            keys: Vec::new(),
            pos: Vec::new(),
            prev: None,
            upper: (0, 1),
            lower: (0, 1),
        }
    }

    /// Adds the point `(x, y)`.
    ///
    /// REQUIRES: `x` greater than the previous point's, `y` not smaller, `y < 2^40`.
    #[inline]
    pub(super) fn push(&mut self, x: u64, y: u64) {
        let (Some(&bx), Some(&by)) = (self.keys.last(), self.pos.last()) else {
            self.keys.push(x);
            self.pos.push(y);
            return;
        };
        let dx = x.wrapping_sub(bx);
        let dy = y.wrapping_sub(by);
        if let Some((px, py)) = self.prev {
            let (un, ud) = self.upper;
            let (ln, ld) = self.lower;
            if slope_le(dy, dx, un, ud) & slope_le(ln, ld, dy, dx) {
                // Which limit the point tightens is data-dependent: selects, not branches.
                let high = dy + self.delta;
                let tighter_upper = slope_le(high, dx, un, ud);
                self.upper = if tighter_upper {
                    (high, dx)
                } else {
                    self.upper
                };
                let low = dy.saturating_sub(self.delta);
                let tighter_lower = (low > 0) & slope_le(ln, ld, low, dx);
                self.lower = if tighter_lower { (low, dx) } else { self.lower };
            } else {
                // The segment B → prev is feasible for every point before prev; prev becomes a
                // knot and the corridor restarts from it with this point's limits.
                self.keys.push(px);
                self.pos.push(py);
                self.restart(x.wrapping_sub(px), y.wrapping_sub(py));
            }
        } else {
            self.restart(dx, dy);
        }
        self.prev = Some((x, y));
    }

    /// Adds the two ends of one step of `lb`, `(a, y)` then `(b, y)`, as two [`push`]es
    /// would, with four slope comparisons instead of eight while both fit the corridor. With
    /// `dy >= 0` from the last knot and `a < b`: `b`'s slope is below `a`'s, so it passes the
    /// upper limit whenever `a` does; `b`'s upper limit `(dy + δ) / dx_b` is the tighter of
    /// the two, and `a`'s lower limit `(dy − δ) / dx_a` the tighter (when positive). When the
    /// step does not fit, it is replayed as two `push`es from the unchanged corridor, so the
    /// knots are exactly those of the two `push`es.
    ///
    /// REQUIRES: `a < b`, `a` greater than the previous point's `x`, `y` not smaller.
    ///
    /// [`push`]: SplineFit::push
    #[inline]
    pub(super) fn push_step(&mut self, a: u64, b: u64, y: u64) {
        if let (Some(&bx), Some(&by), Some(_)) = (self.keys.last(), self.pos.last(), self.prev) {
            let dy = y.wrapping_sub(by);
            let (dxa, dxb) = (a.wrapping_sub(bx), b.wrapping_sub(bx));
            let (un, ud) = self.upper;
            let (ln, ld) = self.lower;
            let low = dy.saturating_sub(self.delta);
            let a_fits = slope_le(dy, dxa, un, ud) & slope_le(ln, ld, dy, dxa);
            let tighter_lower = (low > 0) & slope_le(ln, ld, low, dxa);
            let lower = if tighter_lower {
                (low, dxa)
            } else {
                self.lower
            };
            if a_fits & slope_le(lower.0, lower.1, dy, dxb) {
                let high = dy + self.delta;
                let tighter_upper = slope_le(high, dxb, un, ud);
                self.upper = if tighter_upper {
                    (high, dxb)
                } else {
                    self.upper
                };
                self.lower = lower;
                self.prev = Some((b, y));
                return;
            }
        }
        self.push(a, y);
        self.push(b, y);
    }

    /// Sets the corridor to the limits of one point at `(dx, dy)` from the last knot.
    #[inline]
    fn restart(&mut self, dx: u64, dy: u64) {
        self.upper = (dy + self.delta, dx);
        self.lower = (dy.saturating_sub(self.delta), dx);
    }

    /// Makes the last point a knot and returns the knots `(keys, positions)`.
    pub(super) fn finish(mut self) -> (Vec<u64>, Vec<u64>) {
        if let Some((px, py)) = self.prev.take() {
            self.keys.push(px);
            self.pos.push(py);
        }
        (self.keys, self.pos)
    }
}

impl StepFit for SplineFit {
    /// The step's left end when it is wider than one key, then `key`.
    #[inline(always)]
    fn fit_step(&mut self, prev: Option<u64>, key: u64, pos: u64) {
        match prev {
            Some(prev) if prev + 1 < key => self.push_step(prev + 1, key, pos),
            _ => self.push(key, pos),
        }
    }
}

/// Streams projected keys into a [`Spline`], feeding both ends of every step of `lb` to
/// [`SplineFit`]. The index builders wrap it.
#[derive(Debug)]
pub(super) struct SplineBuilder {
    delta: u32,
    feed: StepFeed<SplineFit>,
}

impl SplineBuilder {
    /// A builder with error bound `delta`.
    pub(super) fn new(delta: u32) -> SplineBuilder {
        SplineBuilder {
            delta,
            feed: StepFeed::new(SplineFit::new(delta)),
        }
    }

    /// Marks the builder failed (an invalid configuration): every `add` and `finish` errors.
    pub(super) fn fail(&mut self, reason: String) {
        self.feed.order.failed = Some(reason);
    }

    /// Adds the next key.
    ///
    /// # Errors
    /// `InvalidArgument` for a decreasing key, too many keys, or a failed builder.
    pub(super) fn add(&mut self, key: u64) -> Result<()> {
        self.feed.add(key)
    }

    /// Adds a sorted batch of keys in one tight loop (as [`SplineBuilder::add`] per key).
    ///
    /// # Errors
    /// As [`SplineBuilder::add`].
    pub(super) fn add_all(&mut self, keys: &[u64]) -> Result<()> {
        self.feed.add_all(keys)
    }

    /// Finishes the spline.
    ///
    /// # Errors
    /// `InvalidArgument` if an `add` failed, the configuration was invalid, or the spline
    /// needs more than [`MAX_KNOTS`] knots.
    pub(super) fn finish(self) -> Result<Spline> {
        let StepFeed { order, fit } = self.feed;
        order.check()?;
        let (mut keys, mut pos) = fit.finish();
        if keys.len() > MAX_KNOTS {
            return Err(crate::error::Error::InvalidArgument(format!(
                "index: {} spline points exceed the limit of {MAX_KNOTS}",
                keys.len()
            )));
        }
        keys.shrink_to_fit();
        pos.shrink_to_fit();
        Ok(Spline {
            delta: self.delta,
            n: order.count,
            keys,
            pos,
        })
    }
}

/// An error-bounded linear spline over `lb`: knots `(key, position)` on `lb`, keys strictly
/// increasing, positions non-decreasing, the first knot `(first key, 0)`, the last knot at the
/// last key. Empty iff `n == 0`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Spline {
    /// Error bound δ.
    pub(super) delta: u32,
    /// Number of keys indexed.
    pub(super) n: u64,
    /// Knot keys.
    pub(super) keys: Vec<u64>,
    /// Knot positions, parallel to `keys`; each `< n`.
    pub(super) pos: Vec<u64>,
}

/// Finds, for a key inside a spline's range, a range of knot indexes that holds the first
/// knot `>= key`: RadixSpline's radix table, or PLEX's tuned radix table or CHT.
pub(super) trait KnotLocator {
    /// The knot-index range `[lo, hi]` holding the first knot `>= x` (a hint; see
    /// [`Spline::window`]).
    fn range(&self, x: u64) -> (usize, usize);
}

impl Spline {
    /// The window of `x` (what RadixSpline's and PLEX's `Index::search` return): directly
    /// for keys outside the spline's range, else by interpolation between the knots that
    /// `locator` narrows the search to.
    #[inline]
    pub(super) fn search(&self, x: u64, locator: &impl KnotLocator) -> Window {
        if let Some(w) = self.outside(x) {
            return w;
        }
        let (lo, hi) = locator.range(x);
        self.window(x, lo, hi)
    }

    /// The widest window [`Self::search`] returns: `2δ + 1` slots.
    pub(super) fn max_window(&self) -> u64 {
        2 * u64::from(self.delta) + 1
    }

    /// The number of knots (what the indexes report as segments).
    pub(super) fn knots(&self) -> u64 {
        self.keys.len() as u64
    }

    /// The window of keys outside the spline's range (`x <= first key`, `x > last key`, or an
    /// empty spline), which need no locator; `None` for keys the spline must interpolate.
    #[inline]
    pub(super) fn outside(&self, x: u64) -> Option<Window> {
        match (self.keys.first(), self.keys.last()) {
            (Some(&first), Some(&last)) => {
                if x <= first {
                    Some(Window { lo: 0, hi: 1 })
                } else if x > last {
                    Some(Window {
                        lo: self.n,
                        hi: self.n + 1,
                    })
                } else {
                    None
                }
            }
            _ => Some(Window { lo: 0, hi: 1 }),
        }
    }

    /// The window of `x`, given that the first knot `>= x` has an index in `[lo, hi]` (a hint:
    /// a wrong hint costs a full binary search, never a wrong window).
    ///
    /// REQUIRES: `outside(x)` is `None` (first key `< x <=` last key).
    #[inline]
    pub(super) fn window(&self, x: u64, lo: usize, hi: usize) -> Window {
        let last = self.keys.len().saturating_sub(1);
        let hi = hi.min(last);
        let j = match self.keys.get(lo..=hi) {
            Some(range) => lo + range.partition_point(|&k| k < x),
            None => self.keys.partition_point(|&k| k < x),
        };
        if let (Some(&xa), Some(&xb)) = (self.keys.get(j.wrapping_sub(1)), self.keys.get(j)) {
            if xa < x && x <= xb {
                return self.interpolate(j, x, xa, xb);
            }
        }
        let j = self.keys.partition_point(|&k| k < x);
        match (self.keys.get(j.wrapping_sub(1)), self.keys.get(j)) {
            (Some(&xa), Some(&xb)) if xa < x && x <= xb => self.interpolate(j, x, xa, xb),
            // Only for a key outside the spline's range (a caller bug): stay in range.
            _ => self.outside(x).unwrap_or(Window {
                lo: 0,
                hi: self.n + 1,
            }),
        }
    }

    /// The window of `x` in the segment ending at knot `j` (`xa = key[j−1] < x <= xb =
    /// key[j]`).
    #[inline]
    fn interpolate(&self, j: usize, x: u64, xa: u64, xb: u64) -> Window {
        let (Some(&ya), Some(&yb)) = (self.pos.get(j.wrapping_sub(1)), self.pos.get(j)) else {
            return Window {
                lo: 0,
                hi: self.n + 1,
            }; // unreachable: keys and pos are parallel
        };
        let dy = yb.saturating_sub(ya) as f64;
        let t = (x - xa) as f64 / (xb - xa) as f64;
        let p = (ya as f64 + dy * t).max(ya as f64).min(yb as f64);
        let reach = f64::from(self.delta) + SLACK;
        // `as` floors `p + reach`.
        let lo = super::ceil_position(p - reach).max(ya);
        let hi = ((p + reach) as u64 + 1).min(yb + 1);
        Window {
            lo,
            hi: hi.max(lo + 1),
        }
    }

    /// Memory held by the knot buffers (not the inline struct).
    pub(super) fn heap_bytes(&self) -> usize {
        (self.keys.capacity() + self.pos.capacity()) * std::mem::size_of::<u64>()
    }

    /// Appends the spline's encoding: δ, n, the knot count, then `(key, position)` per knot.
    pub(super) fn encode(&self, out: &mut Vec<u8>) {
        put_u32(out, self.delta);
        put_u64(out, self.n);
        put_u64(out, self.keys.len() as u64);
        for (&k, &p) in self.keys.iter().zip(&self.pos) {
            put_u64(out, k);
            put_u64(out, p);
        }
    }

    /// Decodes a spline that runs to the end of `d`, checking every invariant the lookup
    /// relies on; `what` names the index type in errors.
    pub(super) fn decode(d: &mut Decoder<'_>, what: &str) -> std::result::Result<Spline, String> {
        let (Some(delta), Some(n), Some(count)) = (d.u32(), d.u64(), d.u64()) else {
            return Err(format!("{what}: truncated spline parameters"));
        };
        if n > MAX_KEYS {
            return Err(format!("{what}: {n} keys exceed the limit"));
        }
        if (n == 0) != (count == 0) || count > MAX_KNOTS as u64 {
            return Err(format!("{what}: {count} spline points for {n} keys"));
        }
        if count.checked_mul(16) != u64::try_from(d.remaining()).ok() {
            return Err(format!(
                "{what}: {} bytes for {count} spline points",
                d.remaining()
            ));
        }
        let count = d.remaining() / 16;
        let mut keys: Vec<u64> = Vec::with_capacity(count);
        let mut pos: Vec<u64> = Vec::with_capacity(count);
        while let (Some(k), Some(p)) = (d.u64(), d.u64()) {
            let ordered = match (keys.last(), pos.last()) {
                (Some(&pk), Some(&pp)) => pk < k && pp <= p,
                _ => p == 0,
            };
            if !ordered || p >= n {
                return Err(format!(
                    "{what}: spline point {} (key {k}, position {p}) out of order",
                    keys.len()
                ));
            }
            keys.push(k);
            pos.push(p);
        }
        Ok(Spline {
            delta,
            n,
            keys,
            pos,
        })
    }
}

/// `⌈log2(m)⌉` for `m >= 1` (0 for `m <= 1`).
pub(super) fn ceil_log2(m: usize) -> u32 {
    usize::BITS - m.saturating_sub(1).leading_zeros()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fit(delta: u32, keys: &[u64]) -> Spline {
        let mut b = SplineBuilder::new(delta);
        for &k in keys {
            b.add(k).expect("sorted");
        }
        b.finish().expect("valid")
    }

    #[test]
    fn linear_keys_need_two_knots() {
        // Gaps make lb a staircase: at δ = 0 it is not linear, at δ >= 1 it is close enough.
        for delta in [1, 8, 64] {
            let keys: Vec<u64> = (0..100_000u64).map(|i| 7 + i * 1000).collect();
            assert_eq!(fit(delta, &keys).keys.len(), 2, "delta {delta}");
        }
        for delta in [0, 1, 8, 64] {
            let dense: Vec<u64> = (0..100_000u64).map(|i| (1 << 62) + i).collect();
            assert_eq!(fit(delta, &dense).keys.len(), 2, "delta {delta}");
        }
    }

    #[test]
    fn pieces_need_a_knot_each() {
        // Ten linear pieces of 1000 keys, each jumping far ahead of the previous one: two
        // knots per piece (its start and end; the gap's step adds the start of the next).
        let keys: Vec<u64> = (0..10u64)
            .flat_map(|s| (0..1000u64).map(move |i| s * 1_000_000_000 + i * 3))
            .collect();
        let s = fit(8, &keys);
        assert!(s.keys.len() <= 21, "{} knots", s.keys.len());
    }

    /// Every fed point is within δ of the interpolation, in exact arithmetic (checked in
    /// i128): the property the fitter promises.
    #[test]
    fn every_point_is_within_delta_of_the_interpolation() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        let mut keys: Vec<u64> = (0..20_000).map(|_| rng.gen::<u64>() >> 3).collect();
        keys.sort_unstable();
        for delta in [0u32, 1, 8, 64] {
            let s = fit(delta, &keys);
            for (i, &x) in keys.iter().enumerate() {
                let y = keys.partition_point(|&k| k < x) as i128;
                let j = s.keys.partition_point(|&k| k < x);
                if j == 0 {
                    assert_eq!(y, 0);
                    continue;
                }
                let (xa, xb) = (i128::from(s.keys[j - 1]), i128::from(s.keys[j]));
                let (ya, yb) = (i128::from(s.pos[j - 1]), i128::from(s.pos[j]));
                // |ya + (yb − ya)(x − xa)/(xb − xa) − y| <= δ, multiplied by (xb − xa).
                let err = (ya - y) * (xb - xa) + (yb - ya) * (i128::from(x) - xa);
                assert!(
                    err.abs() <= i128::from(delta) * (xb - xa),
                    "delta {delta}: key {i}"
                );
            }
        }
    }

    /// `push_step(a, b, y)` yields exactly the knots of `push(a, y); push(b, y)`, on steps
    /// that fit, break at `a`, break at `b`, and at error bounds from 0 up.
    #[test]
    fn push_step_equals_two_pushes() {
        use rand::SeedableRng;
        let mut rng = rand::rngs::StdRng::seed_from_u64(12);
        for delta in [0u32, 1, 2, 8, 64] {
            for spread in [1u64, 3, 1000, 1 << 40] {
                let (mut paired, mut stepped) = (SplineFit::new(delta), SplineFit::new(delta));
                let (start, steps) = crate::index::tests::random_steps(&mut rng, spread, 20_000);
                paired.push(start, 0);
                stepped.push(start, 0);
                for (a, b, y) in steps {
                    paired.push(a, y);
                    paired.push(b, y);
                    stepped.push_step(a, b, y);
                }
                assert_eq!(
                    paired.finish(),
                    stepped.finish(),
                    "delta {delta} spread {spread}"
                );
            }
        }
    }

    #[test]
    fn ceil_log2_values() {
        assert_eq!(
            [0, 1, 2, 3, 4, 5, 1024, 1025].map(ceil_log2),
            [0, 0, 1, 2, 2, 3, 10, 11]
        );
    }
}
