//! Greedy-PLR fitting (Bourbon §3.2, after Xie et al.; FITing-Tree's "shrinking cone"): the
//! one-pass training half of the PLR index. Lookup lives in [`super::plr_model`] (STYLE.md §10).
//!
//! # What is fitted
//!
//! The model approximates the **lower-bound step function** `lb(x)` over the whole key range
//! `[first key, last key]`, not only at the keys. For distinct keys `x_0 < … < x_{m−1}` whose
//! runs start at positions `y_0 < … < y_{m−1}`, `lb(x) = y_j` for `x ∈ (x_{j−1}, x_j]`. Each
//! step is fed to the fitter as its two ends, `(x_{j−1} + 1, y_j)` (skipped when it equals
//! `x_j`) and `(x_j, y_j)`. Segment slopes are non-negative, so a prediction is monotone in `x`
//! and stays within δ of `lb(x)` between two fitted points when it does at both: the error
//! bound then holds for every u64 key in range — absent keys, keys inside a run of duplicate
//! projections (trained on the run's first position only), and keys in the gap between two
//! segments (the case the Bourbon range-query report fixes by clamping; here the clamp of
//! [`super::plr_model`] is a second safety net). Bourbon trains on the keys alone, which bounds
//! the error of present keys only. On dense keys the extra points vanish (`x_{j−1} + 1 = x_j`).
//!
//! # The greedy cone
//!
//! A segment is anchored at its first point `(x_0, y_0)` (error 0) with feasible slopes
//! `[lo, hi] = [0, +∞)`. A point `(x, y)` with `dx = x − x_0` admits the slopes
//! `[(y − δ − y_0)/dx, (y + δ − y_0)/dx]`; the cone is intersected with them, and when the
//! intersection is empty the segment is closed with the midpoint slope and a new one starts at
//! the point. The bounds are exact fractions compared in i128 (numerators below 2^42, `dx`
//! below 2^64, products below 2^106); only the final slope is rounded to `f64`.

use super::plr_model::{PlrIndex, Segment};
use super::step_feed::{StepFeed, StepFit};
use super::{Index, IndexBuilder};
use crate::error::Result;

/// A slope `num / den` with `den > 0`, or +∞ when `den == 0`.
#[derive(Debug, Clone, Copy)]
struct Slope {
    num: i64,
    den: u64,
}

impl Slope {
    const ZERO: Slope = Slope { num: 0, den: 1 };
    const INFINITE: Slope = Slope { num: 1, den: 0 };

    /// `self < other`, exactly, by cross-multiplication: `num_a · den_b < num_b · den_a`.
    /// +∞ (`1 / 0`) needs no case of its own: against a finite slope the products are `0`
    /// and `den > 0` (or the reverse), and two infinities give `0 < 0`. Branch-free: which
    /// side of the cone a point tightens is data-dependent, so branches mispredict.
    #[inline]
    fn less_than(self, other: Slope) -> bool {
        // |num| < 2^42 and den < 2^64: the products fit i128 with room to spare.
        widening_mul(self.num, other.den) < widening_mul(other.num, self.den)
    }

    fn to_f64(self) -> f64 {
        self.num as f64 / self.den as f64
    }
}

/// `num * den` exactly, as a 64 × 64 → 128-bit product: `i128::from(num) * i128::from(den)`
/// with both high halves known (sign and zero extension), which compiles to one wide
/// multiplication and one correction, without branches.
#[inline]
fn widening_mul(num: i64, den: u64) -> i128 {
    // |num| < 2^42, so the magnitude of the product is below 2^106 and fits i128.
    i128::from(num) * i128::from(den)
}

/// The segment being grown: its anchor and feasible slope range.
#[derive(Debug, Clone, Copy)]
struct Cone {
    x0: u64,
    y0: u64,
    lo: Slope,
    hi: Slope,
}

impl Cone {
    fn start(x0: u64, y0: u64) -> Cone {
        Cone {
            x0,
            y0,
            lo: Slope::ZERO,
            hi: Slope::INFINITE,
        }
    }

    /// The cone's lower end, raised to `lower` when that is steeper (ties keep the cone's).
    #[inline]
    fn floor_with(&self, lower: Slope) -> Slope {
        if self.lo.less_than(lower) {
            lower
        } else {
            self.lo
        }
    }

    /// The cone's upper end, lowered to `upper` when that is shallower (ties keep the cone's).
    #[inline]
    fn ceiling_with(&self, upper: Slope) -> Slope {
        if upper.less_than(self.hi) {
            upper
        } else {
            self.hi
        }
    }

    /// The segment's slope: the middle of the cone (its lower end while the cone is unbounded,
    /// i.e. the segment holds one point).
    fn close(self) -> Segment {
        let slope = if self.hi.den == 0 {
            self.lo.to_f64()
        } else {
            (self.lo.to_f64() + self.hi.to_f64()) / 2.0
        };
        Segment {
            key: self.x0,
            pos: self.y0,
            slope: slope.max(0.0),
        }
    }
}

/// The Greedy-PLR fitter: feed points with strictly increasing `x`, get segments.
#[derive(Debug)]
pub struct GreedyPlr {
    delta: i64,
    cone: Option<Cone>,
    segments: Vec<Segment>,
}

impl GreedyPlr {
    /// A fitter with error bound `delta` (δ).
    pub fn new(delta: u32) -> Self {
        GreedyPlr {
            delta: i64::from(delta),
            cone: None,
            segments: Vec::new(),
        }
    }

    /// Adds the point `(x, y)`.
    ///
    /// REQUIRES: `x` greater than the previous point's, `y` not smaller (the builder ensures it).
    #[inline]
    pub fn push(&mut self, x: u64, y: u64) {
        let Some(cone) = self.cone.as_mut() else {
            self.cone = Some(Cone::start(x, y));
            return;
        };
        let dx = x.wrapping_sub(cone.x0);
        // Positions are below 2^40 (MAX_KEYS), so they and their difference fit i64.
        let dy = y as i64 - cone.y0 as i64;
        let lower = Slope {
            num: dy - self.delta,
            den: dx,
        };
        let upper = Slope {
            num: dy + self.delta,
            den: dx,
        };
        let (lo, hi) = (cone.floor_with(lower), cone.ceiling_with(upper));
        if hi.less_than(lo) {
            self.segments.push(cone.close());
            *cone = Cone::start(x, y);
        } else {
            cone.lo = lo;
            cone.hi = hi;
        }
    }

    /// Adds the two ends of one step of `lb`, `(a, y)` then `(b, y)`, as two [`push`]es
    /// would, with three slope comparisons instead of six while both fit the segment. The
    /// step's tightest constraints are `a`'s lower slope and `b`'s upper one: `(dy + δ) /
    /// (b − x₀) <= (dy + δ) / (a − x₀)` because `dy + δ >= 0`, and `b`'s lower slope is
    /// either below `a`'s (`dy − δ >= 0`) or negative, below the cone's floor of 0. When the
    /// step does not fit, it is replayed as two `push`es from the unchanged cone, so the
    /// segments are exactly those of the two `push`es.
    ///
    /// REQUIRES: `a < b`, `a` greater than the previous point's `x`, `y` not smaller.
    ///
    /// [`push`]: GreedyPlr::push
    #[inline]
    pub fn push_step(&mut self, a: u64, b: u64, y: u64) {
        if let Some(cone) = self.cone.as_mut() {
            let dy = y as i64 - cone.y0 as i64;
            let lower = Slope {
                num: dy - self.delta,
                den: a.wrapping_sub(cone.x0),
            };
            let upper = Slope {
                num: dy + self.delta,
                den: b.wrapping_sub(cone.x0),
            };
            let (lo, hi) = (cone.floor_with(lower), cone.ceiling_with(upper));
            if !hi.less_than(lo) {
                cone.lo = lo;
                cone.hi = hi;
                return;
            }
            // The step does not fit. If `a` alone does (its upper slope against the cone's),
            // `b` is what breaks the segment: the cone with `a` closes and `b` starts the
            // next one, exactly what `push(a); push(b)` does, without recomputing either.
            let upper_a = Slope {
                num: upper.num,
                den: lower.den,
            };
            let hi_a = cone.ceiling_with(upper_a);
            if !hi_a.less_than(lo) {
                cone.lo = lo;
                cone.hi = hi_a;
                let closed = cone.close();
                *cone = Cone::start(b, y);
                self.segments.push(closed);
                return;
            }
        }
        self.push(a, y);
        self.push(b, y);
    }

    /// Closes the last segment and returns all of them, in key order.
    pub fn finish(mut self) -> Vec<Segment> {
        if let Some(cone) = self.cone.take() {
            self.segments.push(cone.close());
        }
        self.segments
    }
}

/// Streams projected keys into a [`PlrIndex`], feeding each step of `lb` to [`GreedyPlr`].
#[derive(Debug)]
pub struct PlrBuilder {
    delta: u32,
    feed: StepFeed<PlrSteps>,
}

/// PLR's fitter of the steps of `lb`, and the first key.
#[derive(Debug)]
struct PlrSteps {
    first_key: u64,
    fit: GreedyPlr,
}

impl PlrBuilder {
    /// A builder with error bound `delta` (δ).
    pub fn new(delta: u32) -> Self {
        PlrBuilder {
            delta,
            feed: StepFeed::new(PlrSteps {
                first_key: 0,
                fit: GreedyPlr::new(delta),
            }),
        }
    }
}

impl PlrBuilder {
    /// Finishes the model (what [`IndexBuilder::finish`] boxes).
    ///
    /// # Errors
    /// `InvalidArgument` if an `add` failed.
    pub fn finish_model(self) -> Result<PlrIndex> {
        let StepFeed { order, fit } = self.feed;
        order.check()?;
        let last_key = order.prev.unwrap_or(0);
        Ok(PlrIndex::new(
            self.delta,
            order.count,
            fit.first_key,
            last_key,
            fit.fit.finish(),
        ))
    }
}

impl StepFit for PlrSteps {
    /// Both ends of the step when it is wider than one key, else the key alone.
    #[inline(always)]
    fn fit_step(&mut self, prev: Option<u64>, key: u64, pos: u64) {
        match prev {
            None => {
                self.first_key = key;
                self.fit.push(key, pos);
            }
            Some(prev) if prev + 1 < key => self.fit.push_step(prev + 1, key, pos),
            Some(_) => self.fit.push(key, pos),
        }
    }
}

impl IndexBuilder for PlrBuilder {
    #[inline]
    fn add(&mut self, key: u64) -> Result<()> {
        self.feed.add(key)
    }

    fn add_all(&mut self, keys: &[u64]) -> Result<()> {
        self.feed.add_all(keys)
    }

    fn finish(self: Box<Self>) -> Result<Box<dyn Index>> {
        Ok(Box::new(self.finish_model()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    fn build(delta: u32, keys: impl IntoIterator<Item = u64>) -> Box<dyn Index> {
        let mut b = Box::new(PlrBuilder::new(delta));
        for k in keys {
            b.add(k).expect("sorted keys");
        }
        b.finish().expect("valid")
    }

    #[test]
    fn dense_keys_need_one_segment_at_any_bound() {
        for delta in [0, 1, 8] {
            let idx = build(delta, 1000..101_000);
            assert_eq!(idx.segments(), 1, "delta {delta}");
        }
    }

    #[test]
    fn linear_keys_need_one_segment() {
        for delta in [1, 8, 64] {
            let idx = build(delta, (0..100_000u64).map(|i| 7 + i * 1000));
            assert_eq!(idx.segments(), 1, "delta {delta}");
        }
        // The largest keys: stride 2^44 up to near u64::MAX.
        let idx = build(8, (0..1_000_000u64).map(|i| i << 44));
        assert_eq!(idx.segments(), 1);
    }

    #[test]
    fn segmented_keys_need_one_segment_per_piece() {
        // Ten linear pieces of 1000 keys, each jumping far ahead of the previous one.
        let keys = (0..10u64).flat_map(|s| (0..1000u64).map(move |i| s * 1_000_000_000 + i * 3));
        let idx = build(8, keys);
        assert_eq!(idx.segments(), 10);
    }

    #[test]
    fn duplicates_collapse_to_their_run_start() {
        // 1000 distinct keys each repeated 5 times: lb steps by 5 per key, which is linear.
        let keys = (0..1000u64).flat_map(|i| std::iter::repeat_n(i * 10, 5));
        let idx = build(8, keys);
        assert_eq!(idx.len(), 5000);
        assert_eq!(idx.segments(), 1);
        assert!(idx.search(10 * 500).contains(5 * 500));
        assert!(idx.search(10 * 500 + 1).contains(5 * 501));
    }

    #[test]
    fn single_and_empty() {
        let idx = build(8, [42]);
        assert_eq!(idx.segments(), 1);
        assert!(idx.search(42).contains(0));
        assert!(idx.search(0).contains(0));
        assert!(idx.search(43).contains(1));
        let idx = build(8, []);
        assert_eq!(idx.segments(), 0);
        assert!(idx.search(5).contains(0));
    }

    /// The analysis of `plr_model`: at every fitted point (both ends of every step of `lb`),
    /// the `f64` prediction is within δ + 2^-8 of `lb` — the rounding error stays far below
    /// the 1/64 slack the lookup adds. Keys above 2^53 and slopes far from 1 included.
    #[test]
    fn f64_predictions_stay_within_the_bound_at_fitted_points() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let mut uniform: Vec<u64> = (0..50_000).map(|_| rng.gen()).collect();
        uniform.sort_unstable();
        let high_dense: Vec<u64> = (0..50_000u64).map(|i| (1 << 62) + i * 3).collect();
        let top: Vec<u64> = (0..50_000u64).rev().map(|i| u64::MAX - i * i).collect();
        let dup: Vec<u64> = (0..50_000u64).map(|i| (i / 7) << 50).collect();
        for keys in [uniform, high_dense, top, dup] {
            for delta in [0u32, 1, 8, 1024] {
                let mut points = Vec::new();
                for (pos, pair) in (0u64..).zip(keys.iter().enumerate()) {
                    let (i, &k) = pair;
                    let prev = i.checked_sub(1).and_then(|j| keys.get(j)).copied();
                    match prev {
                        Some(p) if p == k => continue,
                        Some(p) if p + 1 < k => points.push((p + 1, pos)),
                        _ => {}
                    }
                    points.push((k, pos));
                }
                let mut fit = GreedyPlr::new(delta);
                for &(x, y) in &points {
                    fit.push(x, y);
                }
                let segments = fit.finish();
                for &(x, y) in &points {
                    let i = segments.partition_point(|s| s.key <= x) - 1;
                    let s = segments[i];
                    let p = s.pos as f64 + s.slope * (x - s.key) as f64;
                    let err = (p - y as f64).abs();
                    assert!(
                        err <= f64::from(delta) + 1.0 / 256.0,
                        "delta {delta}: point ({x}, {y}) predicted {p}"
                    );
                }
            }
        }
    }

    /// `push_step(a, b, y)` yields exactly the segments of `push(a, y); push(b, y)`, on steps
    /// that fit, break at `a`, break at `b`, and at error bounds from 0 up.
    #[test]
    fn push_step_equals_two_pushes() {
        use rand::SeedableRng;
        let mut rng = rand::rngs::StdRng::seed_from_u64(11);
        for delta in [0u32, 1, 2, 8, 64] {
            for spread in [1u64, 3, 1000, 1 << 40] {
                let (mut paired, mut stepped) = (GreedyPlr::new(delta), GreedyPlr::new(delta));
                let (_, steps) = crate::index::tests::random_steps(&mut rng, spread, 20_000);
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
    fn rejects_decreasing_keys() {
        let mut b = Box::new(PlrBuilder::new(8));
        b.add(5).expect("first");
        b.add(5).expect("duplicate");
        assert!(matches!(b.add(4), Err(Error::InvalidArgument(_))));
        assert!(b.finish().is_err());
    }
}
