//! PGM-index fitting (Ferragina & Vinciguerra, VLDB 2020, §2–3): the streaming **optimal**
//! piecewise linear approximation (O'Rourke's convex-hull algorithm, 1981) that the PGM-index
//! builds on every level. Lookup lives in [`super::pgm`] (STYLE.md §10).
//!
//! # What is fitted
//!
//! As for PLR ([`super::plr`]), the lines approximate the **lower-bound step function** `lb`
//! over a key range, not only at the keys: a step is `lb(x) = y` for `x ∈ [l, r]`, where `r`
//! is a key, `y` its first position and `l` the previous key plus one. A line within ε of
//! `lb` at the integers of `[l, r]` is what the lookup needs.
//!
//! *Augur* (right ends only): a step is fed as its right end `(r, y)` alone when the next step
//! allows it, which halves the points of a sparse key set. The range fed for a point is
//! `[y − ε, y + ε]`, **lifted** to `[y + 1 − ε, y + ε]` when the next step (`l′, r′, y + 1`)
//! has a gap (`l′ < r′`) and ε ≥ 1: a line of non-negative slope then passes at least
//! `y + 1 − ε` at every key after `r`, so the gap keys `l′ .. r′ − 1` (where `lb = y + 1`) are
//! within ε of it wherever it is within ε at `r′`. The left end `(l′, y′)` is fed as well only
//! where lifting cannot cover the gap: when the step rises by more than one position (after a
//! run of duplicates) or ε = 0. One step is held back until the next says how to feed it
//! (`LevelFit`). Lifting never widens what the lines may do at a key: between two sparse
//! keys, `lb` must be met at `r` and at `r + 1` anyway, and a line rises by its slope (well
//! below one position) between them. Measured on the synthetic and real sets of
//! `examples/index_bench.rs` at ε = 8: 0–1.1% more segments, training −25% on sparse
//! sets.
//!
//! # The optimal segment (O'Rourke)
//!
//! A point `(x, y)` is turned into its vertical range (`[(x, y − ε), (x, y + ε)]`, or lifted,
//! above); a line is feasible when it crosses every range of the segment. The fitter keeps the
//! upper convex hull of the upper ends and the lower convex hull of the lower ends (only the
//! parts that can still support an extreme line), plus the two extreme feasible lines: the
//! shallowest, through `rect[0]` (an upper end) and `rect[2]` (a lower end), and the steepest,
//! through `rect[1]` (a lower end) and `rect[3]` (an upper end). A new range that lies entirely
//! above the steepest line or below the shallowest one leaves no feasible line: the segment is
//! closed. Otherwise the extreme lines it cuts are rotated onto the hulls (amortized O(1) per
//! point, the hull starts only move forward). Right of the last fed point the shallowest line
//! lies below the steepest (the steepest passes through the upper end `rect[3]`, where the
//! shallowest is at most that end, and rises faster after it), so a range below the
//! shallowest line also cuts the steepest one: each infeasibility test is taken only when its
//! line is cut, two slope tests per point that cuts neither (about half the points of a
//! random set). Segments are as long as any line through the fed ranges allows, so there are
//! at most as many as Greedy-PLR's shrinking cone produces, usually far fewer.
//!
//! Every quantity is exact: x are u64 (a direction goes from the smaller x to the larger, so
//! its `dx` fits u64), y are positions ± ε below 2^42 (i64); products are single widening
//! multiplications into i128, below 2^107 (or i64, below). Only the closed segment is rounded
//! to `f64`.
//!
//! # The emitted line
//!
//! Both extreme lines are feasible, and feasibility is linear in (slope, intercept), so every
//! convex combination of them is feasible too. The segment stores the average — `slope =
//! (s₁ + s₂) / 2` and its value at the segment's first key, `(L₁(x₀) + L₂(x₀)) / 2`, each
//! `L(x₀)` computed by an exact i128 division (quotient below 2^43, remainder as a fraction).
//! The PGM reference uses the same line (through the extreme lines' intersection, mid slope)
//! but computes the intersection in floating point. When that mid slope is negative, the
//! combination with slope 0 is stored instead: one exists, because the fed `y` never decrease
//! (if a line `L` with negative slope is feasible, so is the constant `L(x_last)`), so the
//! steepest feasible slope `s₂` is `≥ 0`. Rounding costs below 2^-9 positions at any key of the
//! segment's range (positions stay below 2^41), which the lookup's slack of 1/64 covers.
//!
//! # Segment boundaries (*Augur*)
//!
//! A segment **owns** the keys from its first key up to the next segment's first key minus
//! one. Owned keys between two fed points of the segment are covered by the line's
//! monotonicity (slope `≥ 0`): a key between a lifted right end `r` and the next fed point has
//! `lb = y + 1` and the line there lies in `[y + 1 − ε, y + 1 + ε]`, and a key between the
//! two ends of a step fed at both ends lies between two points within ε of the same `y`. The
//! one case left: the segment's last fed point is the end `r` (lifted) or the left end `l′` of
//! the step before the point `r′` that started the next segment, and the keys up to `r′ − 1`
//! have `lb = y′` but lie past the segment's last point. The lookup ([`super::pgm`]) caps a
//! prediction by the next segment's intercept `v`, which is within ε of `y′` (the next segment
//! is fitted at `(r′, y′)`). For such a gap key the line is `≥ y′ − ε` (slope `≥ 0`, and at the
//! last point it is `≥ y + 1 − ε = y′ − ε` when lifted, `≥ y′ − ε` at `l′`), so the capped
//! value lies in `[y′ − ε, y′ + ε]`. For any other owned key `x`, `lb(x) ≤ y_next` and
//! `v ≥ y_next − ε`, so capping a value within ε of `lb(x)` at `v` keeps it within ε.
//!
//! # Exact arithmetic, fast (*Augur*)
//!
//! Slopes are compared by cross-multiplying, exactly. Every direction the fitter compares
//! joins two points of the current segment, so its `|dx|` and `|dy|` are bounded by the
//! segment's extent; while the product of the extents is below 2^63 (checked per point with
//! one widening multiplication) the products are taken in i64, otherwise in i128 — the same
//! answers (`narrow_and_wide_slope_tests_fit_alike`), faster on every set of `index_bench`.

/// One segment as the fitter emits it: the line `intercept + slope · (x − key)`, used for the
/// keys from `key` up to the next segment's key (exclusive).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Seg {
    /// First key the segment owns.
    pub(super) key: u64,
    /// Positions per key unit; finite and non-negative.
    pub(super) slope: f64,
    /// The line's value at `key`; finite.
    pub(super) intercept: f64,
}

/// A hull point: a key and a position shifted by ±ε.
#[derive(Debug, Clone, Copy, Default)]
struct Pt {
    x: u64,
    y: i64,
}

/// The direction from a point to one with a larger `x`, so `dx > 0` (every pair the fitter
/// compares is ordered this way: hull points and the extreme lines' supports lie left of the
/// point being added, and hull points are in key order).
#[derive(Debug, Clone, Copy)]
struct Dir {
    dx: u64,
    dy: i64,
}

/// The direction from `a` to `b`. REQUIRES: `a.x < b.x`; `y` are below 2^42 in magnitude, so
/// `dy` fits i64.
#[inline(always)]
fn to(a: Pt, b: Pt) -> Dir {
    debug_assert!(a.x < b.x, "directions go right");
    Dir {
        dx: b.x - a.x,
        dy: b.y - a.y,
    }
}

/// Slope of `a` < slope of `b`, exactly: `dx < 2^64`, `|dy| < 2^43`, so each product is a
/// single widening multiplication below 2^107. `NARROW`: the caller knows both products are
/// below 2^63 in magnitude (a segment of small extent, see [`OptimalPla::add_range`]), so they
/// are taken in i64.
#[inline(always)]
fn slope_lt<const NARROW: bool>(a: Dir, b: Dir) -> bool {
    if NARROW {
        a.dy * (b.dx as i64) < b.dy * (a.dx as i64)
    } else {
        i128::from(a.dy) * i128::from(b.dx) < i128::from(b.dy) * i128::from(a.dx)
    }
}

/// Value at `x` of the line through `p` with slope `dy / dx` (`dx > 0`), computed exactly
/// except for the final rounding of the fraction: the integer part (|·| below 2^43 for a
/// feasible line evaluated inside its segment) is exact in `f64`.
fn line_at(p: Pt, d: Dir, x: u64) -> f64 {
    let (dx, dy) = (i128::from(d.dx), i128::from(d.dy));
    let num = dy * (i128::from(x) - i128::from(p.x));
    let (q, r) = (num / dx, num % dx);
    p.y as f64 + q as f64 + r as f64 / dx as f64
}

/// O'Rourke's optimal streaming fitter with error ε: feed points with strictly increasing `x`
/// and non-decreasing `y`; [`OptimalPla::add`] says whether the current segment still fits.
#[derive(Debug)]
pub(super) struct OptimalPla {
    eps: i64,
    /// Points of the current segment (0 when none has been added since the last close).
    count: u64,
    first_x: u64,
    /// The first point's lower end: no point of the segment lies below it.
    first_lo: i64,
    /// Tests: never take the i64 slope tests (to compare both paths).
    #[cfg(test)]
    wide_only: bool,
    /// The extreme lines' supporting points (module docs).
    rect: [Pt; 4],
    upper: Vec<Pt>,
    lower: Vec<Pt>,
    upper_start: usize,
    lower_start: usize,
}

impl OptimalPla {
    /// A fitter with error bound `eps`.
    pub(super) fn new(eps: u32) -> Self {
        OptimalPla {
            eps: i64::from(eps),
            count: 0,
            first_x: 0,
            first_lo: 0,
            #[cfg(test)]
            wide_only: false,
            rect: [Pt::default(); 4],
            upper: Vec::new(),
            lower: Vec::new(),
            upper_start: 0,
            lower_start: 0,
        }
    }

    /// Adds `(x, y)` to the current segment; returns false (and changes nothing) when no line
    /// within ε of all its points and this one exists. Then [`OptimalPla::close`] the segment.
    ///
    /// REQUIRES: `x` greater than the previous point's of the segment, `y < 2^41`.
    #[cfg(test)]
    pub(super) fn add(&mut self, x: u64, y: u64) -> bool {
        self.add_range(x, y, false)
    }

    /// [`OptimalPla::add`] of the range `[y − ε + lift, y + ε]`: with `lift`, the line must
    /// pass at least `y + 1 − ε` at `x` (module docs, "Right ends only"). REQUIRES: ε ≥ 1
    /// when `lift`, and the ranges' ends never decrease from one point to the next.
    #[inline(always)]
    pub(super) fn add_range(&mut self, x: u64, y: u64, lift: bool) -> bool {
        // Positions are below 2^41 (MAX_KEYS plus a tail step), ε below 2^32.
        let y = y as i64;
        let hi = Pt { x, y: y + self.eps };
        let lo = Pt {
            x,
            y: y - self.eps + i64::from(lift),
        };
        if self.count == 0 {
            self.first_x = x;
            self.first_lo = lo.y;
            self.rect = [hi, lo, lo, hi];
            self.upper.clear();
            self.lower.clear();
            self.upper.push(hi);
            self.lower.push(lo);
            self.upper_start = 0;
            self.lower_start = 0;
            self.count = 1;
            return true;
        }
        if self.count == 1 {
            self.rect[2] = lo;
            self.rect[3] = hi;
            self.upper.push(hi);
            self.lower.push(lo);
            self.count = 2;
            return true;
        }
        // Every direction compared below joins two points of the segment, so its |dx| and
        // |dy| are at most the segment's extent; when the extents' product is below 2^63,
        // so is every product the tests take.
        let x_extent = x - self.first_x;
        let y_extent = hi.y.abs_diff(self.first_lo);
        let extent = u128::from(x_extent) * u128::from(y_extent);
        if extent >> 63 == 0 && self.narrow_allowed() {
            self.add_past_two::<true>(x, hi, lo)
        } else {
            self.add_past_two::<false>(x, hi, lo)
        }
    }

    /// [`OptimalPla::add_range`] once the segment holds two points, with the slope tests of
    /// `NARROW` (see [`slope_lt`]).
    #[inline(always)]
    fn add_past_two<const NARROW: bool>(&mut self, x: u64, hi: Pt, lo: Pt) -> bool {
        let [r0, r1, r2, r3] = self.rect;
        let shallow = to(r0, r2);
        let steep = to(r1, r3);
        // Right of every fed point the shallowest line lies below the steepest one (module
        // docs), so a range entirely above the steepest line also cuts the shallowest one and
        // vice versa: the feasibility tests are needed only where a line is cut.
        let cuts_steep = slope_lt::<NARROW>(to(r1, hi), steep);
        let cuts_shallow = slope_lt::<NARROW>(shallow, to(r0, lo));
        if (cuts_steep && slope_lt::<NARROW>(to(r2, hi), shallow))
            || (cuts_shallow && slope_lt::<NARROW>(steep, to(r3, lo)))
        {
            return false;
        }
        if cuts_steep {
            // The steepest line now ends at `hi`: pivot it on the lower hull.
            let start = self.lower_start;
            let mut best = start;
            let mut best_dir = self
                .lower
                .get(start)
                .map_or(Dir { dx: 1, dy: 0 }, |&p| to(p, hi));
            for (i, &p) in self.lower.iter().enumerate().skip(start + 1) {
                let d = to(p, hi);
                if slope_lt::<NARROW>(best_dir, d) {
                    break;
                }
                best_dir = d;
                best = i;
            }
            if let Some(&p) = self.lower.get(best) {
                self.rect[1] = p;
            }
            self.rect[3] = hi;
            self.lower_start = best;
            compact(&mut self.lower, &mut self.lower_start);
            push_hull::<NARROW>(&mut self.upper, self.upper_start, hi, Turn::Left);
        }
        if cuts_shallow {
            // The shallowest line now ends at `lo`: pivot it on the upper hull.
            let start = self.upper_start;
            let mut best = start;
            let mut best_dir = self
                .upper
                .get(start)
                .map_or(Dir { dx: 1, dy: 0 }, |&p| to(p, lo));
            for (i, &p) in self.upper.iter().enumerate().skip(start + 1) {
                if p.x >= x {
                    break; // `hi` itself, just pushed by the first branch: not a pivot
                }
                let d = to(p, lo);
                if slope_lt::<NARROW>(d, best_dir) {
                    break;
                }
                best_dir = d;
                best = i;
            }
            if let Some(&p) = self.upper.get(best) {
                self.rect[0] = p;
            }
            self.rect[2] = lo;
            self.upper_start = best;
            compact(&mut self.upper, &mut self.upper_start);
            push_hull::<NARROW>(&mut self.lower, self.lower_start, lo, Turn::Right);
        }
        self.count += 1;
        true
    }

    /// Whether the i64 slope tests may be used (always, except in tests that compare).
    #[inline(always)]
    fn narrow_allowed(&self) -> bool {
        #[cfg(test)]
        return !self.wide_only;
        #[cfg(not(test))]
        true
    }

    /// True when no point was added since the last close.
    pub(super) fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Closes the current segment (which must hold a point) and returns its line.
    pub(super) fn close(&mut self) -> Seg {
        let [r0, r1, r2, r3] = self.rect;
        let seg = if self.count <= 1 {
            Seg {
                key: self.first_x,
                slope: 0.0,
                intercept: ((r0.y + r1.y) / 2) as f64,
            }
        } else {
            let shallow = to(r0, r2);
            let steep = to(r1, r3);
            let s1 = shallow.dy as f64 / shallow.dx as f64;
            let s2 = steep.dy as f64 / steep.dx as f64;
            let l1 = line_at(r0, shallow, self.first_x);
            let l2 = line_at(r1, steep, self.first_x);
            let mid = (s1 + s2) / 2.0;
            if mid >= 0.0 || s2 <= s1 {
                Seg {
                    key: self.first_x,
                    slope: mid.max(0.0),
                    intercept: (l1 + l2) / 2.0,
                }
            } else {
                // s1 < 0 <= s2: the combination of the extreme lines with slope 0.
                let w1 = s2 / (s2 - s1);
                Seg {
                    key: self.first_x,
                    slope: 0.0,
                    intercept: w1 * l1 + (1.0 - w1) * l2,
                }
            }
        };
        self.count = 0;
        seg
    }

    /// Capacity of the hull buffers, in points (a statistic for tests).
    #[cfg(test)]
    pub(super) fn hull_capacity(&self) -> usize {
        self.upper.capacity() + self.lower.capacity()
    }
}

/// A hull's dropped prefix (the points before its start) is compacted away once it is longer
/// than this and than the live part, so a long segment holds memory proportional to its live
/// hulls only.
const COMPACT_MIN: usize = 256;

/// Drops `hull[..*start]` once it is longer than [`COMPACT_MIN`] and than the live part; called
/// where a start moves.
#[inline(always)]
fn compact(hull: &mut Vec<Pt>, start: &mut usize) {
    if *start > COMPACT_MIN && *start * 2 > hull.len() {
        drop_prefix(hull, start);
    }
}

/// The drain of [`compact`]; rare, so kept out of the hot path.
#[cold]
#[inline(never)]
fn drop_prefix(hull: &mut Vec<Pt>, start: &mut usize) {
    hull.drain(..*start);
    *start = 0;
}

/// Which turn a hull keeps at each of its vertices, walking in key order.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Turn {
    /// `a → b → c` turns left (slope `a → c` above slope `a → b`): the hull the upper ends
    /// form below the feasible lines.
    Left,
    /// Turns right: the hull the lower ends form above the feasible lines.
    Right,
}

/// Appends `p` to the hull `hull[start..]`, first popping the points that are no longer
/// vertices: collinear ones and those where the walk `a → b → p` does not turn `keep`.
#[inline(always)]
fn push_hull<const NARROW: bool>(hull: &mut Vec<Pt>, start: usize, p: Pt, keep: Turn) {
    let mut end = hull.len();
    while end >= start + 2 {
        let (Some(&a), Some(&b)) = (hull.get(end - 2), hull.get(end - 1)) else {
            break;
        };
        let (ab, ap) = (to(a, b), to(a, p));
        let turns = match keep {
            Turn::Left => slope_lt::<NARROW>(ab, ap),
            Turn::Right => slope_lt::<NARROW>(ap, ab),
        };
        if turns {
            break;
        }
        end -= 1;
    }
    hull.truncate(end);
    hull.push(p);
}

/// Segments one level of the PGM-index from the steps of its lower-bound function (module
/// docs: right ends, lifted when the next step allows it; left ends only where needed).
#[derive(Debug)]
pub(super) struct LevelFit {
    pla: OptimalPla,
    segs: Vec<Seg>,
    /// Whether a right end may be lifted (ε ≥ 1).
    can_lift: bool,
    /// The previous step's right end `(x, y)`, fed once the next step says whether it is
    /// lifted.
    pending: Option<(u64, u64)>,
}

impl LevelFit {
    /// A fitter with error bound `eps`.
    pub(super) fn new(eps: u32) -> Self {
        LevelFit {
            pla: OptimalPla::new(eps),
            segs: Vec::new(),
            can_lift: eps >= 1,
            pending: None,
        }
    }

    /// Feeds the step `lb(x) = y` for `x ∈ [left, right]` (`left <= right`), which must start
    /// right after the previous step's end, one or more positions above it.
    #[inline(always)]
    pub(super) fn push_step(&mut self, left: u64, right: u64, y: u64) {
        let gap = left < right;
        let lift = match self.pending.take() {
            Some((px, py)) => {
                // The keys `left .. right` lie past the previous right end: lifting that end
                // covers them when this step is one position up (module docs).
                let lift = gap && self.can_lift && y == py + 1;
                self.push(px, py, lift);
                lift
            }
            None => false,
        };
        if gap && !lift {
            self.push(left, y, false);
        }
        self.pending = Some((right, y));
    }

    /// Adds one point (its range lifted or not), closing the segment and starting a new one at
    /// the point if it does not fit.
    #[inline(always)]
    fn push(&mut self, x: u64, y: u64, lift: bool) {
        if !self.pla.add_range(x, y, lift) {
            self.segs.push(self.pla.close());
            self.pla.add_range(x, y, lift);
        }
    }

    /// Closes the last segment and returns all of them, in key order.
    pub(super) fn finish(mut self) -> Vec<Seg> {
        if let Some((x, y)) = self.pending.take() {
            self.push(x, y, false);
        }
        if !self.pla.is_empty() {
            self.segs.push(self.pla.close());
        }
        self.segs
    }

    /// A fitter that always takes the i128 slope tests (tests compare it with the default).
    #[cfg(test)]
    pub(super) fn wide_only(eps: u32) -> Self {
        let mut fit = LevelFit::new(eps);
        fit.pla.wide_only = true;
        fit
    }

    /// Capacity of the fitter's working buffers, in points (a statistic for tests).
    #[cfg(test)]
    pub(super) fn hull_capacity(&self) -> usize {
        self.pla.hull_capacity()
    }
}

/// Fits the level above `below` (segment first keys, strictly increasing, the first one the
/// file's first key): the steps of `lb` over those keys on `[below[0], last_key]`, the last
/// step (keys past the last segment start, `lb = below.len()`) included.
pub(super) fn fit_level_above(below: &[u64], last_key: u64, eps: u32) -> Vec<Seg> {
    let mut fit = LevelFit::new(eps);
    let mut next_left: Option<u64> = None;
    for (i, &key) in (0u64..).zip(below) {
        fit.push_step(next_left.unwrap_or(key), key, i);
        next_left = key.checked_add(1);
    }
    if let Some(left) = next_left.filter(|&l| l <= last_key) {
        fit.push_step(left, last_key, below.len() as u64);
    }
    fit.finish()
}
