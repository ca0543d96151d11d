//! PGM-index fitting (Ferragina & Vinciguerra, VLDB 2020, §2–3): the streaming **optimal**
//! piecewise linear approximation (O'Rourke's convex-hull algorithm, 1981) that the PGM-index
//! builds on every level. Lookup lives in [`super::pgm`] (STYLE.md §10).
//!
//! # What is fitted
//!
//! As for PLR ([`super::plr`]), the lines approximate the **lower-bound step function** `lb`
//! over a key range, not only at the keys: a step `lb(x) = y` for `x ∈ [l, r]` is fed as its
//! two ends `(l, y)` and `(r, y)` (one point when `l = r`). Between two consecutive fed points
//! of one step a line stays between its values at the ends, so a line within ε of both ends is
//! within ε of `lb` at every integer key in between; consecutive steps touch (`r + 1` is the
//! next step's `l`), so there is no integer between them.
//!
//! # The optimal segment (O'Rourke)
//!
//! A point `(x, y)` is turned into the vertical range `[(x, y − ε), (x, y + ε)]`; a line is
//! feasible when it crosses every range of the segment. The fitter keeps the upper convex hull
//! of the upper ends and the lower convex hull of the lower ends (only the parts that can still
//! support an extreme line), plus the two extreme feasible lines: the shallowest, through
//! `rect[0]` (an upper end) and `rect[2]` (a lower end), and the steepest, through `rect[1]`
//! (a lower end) and `rect[3]` (an upper end). A new range that lies entirely above the
//! steepest line or below the shallowest one leaves no feasible line: the segment is closed.
//! Otherwise the extreme lines are rotated onto the hulls (amortized O(1) per point, the hull
//! starts only move forward). Segments are as long as any line within ε allows, so there are
//! at most as many as Greedy-PLR's shrinking cone produces, usually far fewer.
//!
//! Every quantity is exact: x are u64 (a direction's `dx` is taken from the smaller x, so it
//! fits u64), y are positions ± ε below 2^42 (i64); products are single widening
//! multiplications into i128, below 2^107. Only the closed segment is rounded to `f64`.
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
//! one. Every owned key lies between two fitted points of the segment except in one case: a
//! step whose left end `(l, y)` closed the segment's fitting and whose right end `(r, y)`
//! started the next segment; the keys `l + 1 .. r − 1` have `lb = y` but lie past the
//! segment's last point. The lookup ([`super::pgm`]) caps a prediction by the next segment's
//! intercept `v`, which is within ε of `y` (the next segment is fitted at `(r, y)`). For such a
//! gap key the line is `≥ y − ε` (slope `≥ 0`, within ε at `l`), so the capped value lies in
//! `[y − ε, y + ε]`. For any other owned key `x`, `lb(x) ≤ y_next` and `v ≥ y_next − ε`, so
//! capping a value within ε of `lb(x)` at `v` keeps it within ε.

use super::pgm::Seg;

/// A hull point: a key and a position shifted by ±ε.
#[derive(Debug, Clone, Copy, Default)]
struct Pt {
    x: u64,
    y: i64,
}

/// The direction between two points of distinct `x`, from the one with the smaller `x` to the
/// other, so `dx > 0` (a slope does not depend on the orientation).
#[derive(Debug, Clone, Copy)]
struct Dir {
    dx: u64,
    dy: i64,
}

/// The direction between `a` and `b` (`y` are below 2^42 in magnitude: `dy` fits i64).
fn dir(a: Pt, b: Pt) -> Dir {
    if a.x >= b.x {
        Dir {
            dx: a.x - b.x,
            dy: a.y - b.y,
        }
    } else {
        Dir {
            dx: b.x - a.x,
            dy: b.y - a.y,
        }
    }
}

/// Slope of `a` < slope of `b`, exactly: `dx < 2^64`, `|dy| < 2^43`, so each product is a
/// single widening multiplication below 2^107.
fn slope_lt(a: Dir, b: Dir) -> bool {
    i128::from(a.dy) * i128::from(b.dx) < i128::from(b.dy) * i128::from(a.dx)
}

/// Cross product of `a − o` and `b − o` (positive when `o → a → b` turns left).
/// REQUIRES: `o.x < a.x < b.x` (hull points are in key order). Each product is below 2^107.
fn cross(o: Pt, a: Pt, b: Pt) -> i128 {
    let (a, b) = (dir(a, o), dir(b, o));
    i128::from(a.dx) * i128::from(b.dy) - i128::from(a.dy) * i128::from(b.dx)
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
    pub(super) fn add(&mut self, x: u64, y: u64) -> bool {
        // Positions are below 2^41 (MAX_KEYS plus a tail step), ε below 2^32.
        let y = y as i64;
        let hi = Pt { x, y: y + self.eps };
        let lo = Pt { x, y: y - self.eps };
        if self.count == 0 {
            self.first_x = x;
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
        let [r0, r1, r2, r3] = self.rect;
        let shallow = dir(r2, r0);
        let steep = dir(r3, r1);
        if slope_lt(dir(hi, r2), shallow) || slope_lt(steep, dir(lo, r3)) {
            return false;
        }
        if slope_lt(dir(hi, r1), steep) {
            // The steepest line now ends at `hi`: pivot it on the lower hull.
            let start = self.lower_start;
            let mut best = start;
            let mut best_dir = self
                .lower
                .get(start)
                .map_or(Dir { dx: 1, dy: 0 }, |&p| dir(p, hi));
            for (i, &p) in self.lower.iter().enumerate().skip(start + 1) {
                let d = dir(p, hi);
                if slope_lt(best_dir, d) {
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
            push_hull(&mut self.upper, self.upper_start, hi, |c| c <= 0);
        }
        if slope_lt(shallow, dir(lo, r0)) {
            // The shallowest line now ends at `lo`: pivot it on the upper hull.
            let start = self.upper_start;
            let mut best = start;
            let mut best_dir = self
                .upper
                .get(start)
                .map_or(Dir { dx: 1, dy: 0 }, |&p| dir(p, lo));
            for (i, &p) in self.upper.iter().enumerate().skip(start + 1) {
                if p.x >= x {
                    break; // `hi` itself, just pushed by the first branch: not a pivot
                }
                let d = dir(p, lo);
                if slope_lt(d, best_dir) {
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
            push_hull(&mut self.lower, self.lower_start, lo, |c| c >= 0);
        }
        self.count += 1;
        self.compact();
        true
    }

    /// Drops hull points before the starts once they are the larger part of the buffers, so a
    /// long segment holds memory proportional to its live hulls only.
    fn compact(&mut self) {
        if self.upper_start > 256 && self.upper_start * 2 > self.upper.len() {
            self.upper.drain(..self.upper_start);
            self.upper_start = 0;
        }
        if self.lower_start > 256 && self.lower_start * 2 > self.lower.len() {
            self.lower.drain(..self.lower_start);
            self.lower_start = 0;
        }
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
            let shallow = dir(r2, r0);
            let steep = dir(r3, r1);
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

/// Appends `p` to the hull `hull[start..]`, first popping the points that `keep_popping` says
/// are no longer vertices (by the sign of the cross product of the last two and `p`).
fn push_hull(hull: &mut Vec<Pt>, start: usize, p: Pt, keep_popping: impl Fn(i128) -> bool) {
    let mut end = hull.len();
    while end >= start + 2 {
        let (Some(&a), Some(&b)) = (hull.get(end - 2), hull.get(end - 1)) else {
            break;
        };
        if !keep_popping(cross(a, b, p)) {
            break;
        }
        end -= 1;
    }
    hull.truncate(end);
    hull.push(p);
}

/// Segments one level of the PGM-index from the steps of its lower-bound function (both ends
/// of each step, module docs).
#[derive(Debug)]
pub(super) struct LevelFit {
    pla: OptimalPla,
    segs: Vec<Seg>,
}

impl LevelFit {
    /// A fitter with error bound `eps`.
    pub(super) fn new(eps: u32) -> Self {
        LevelFit {
            pla: OptimalPla::new(eps),
            segs: Vec::new(),
        }
    }

    /// Feeds the step `lb(x) = y` for `x ∈ [left, right]` (`left <= right`), which must start
    /// right after the previous step's end.
    pub(super) fn push_step(&mut self, left: u64, right: u64, y: u64) {
        if left < right {
            self.push(left, y);
        }
        self.push(right, y);
    }

    /// Adds one point, closing the segment and starting a new one at the point if it does not
    /// fit.
    fn push(&mut self, x: u64, y: u64) {
        if !self.pla.add(x, y) {
            self.segs.push(self.pla.close());
            self.pla.add(x, y);
        }
    }

    /// Closes the last segment and returns all of them, in key order.
    pub(super) fn finish(mut self) -> Vec<Seg> {
        if !self.pla.is_empty() {
            self.segs.push(self.pla.close());
        }
        self.segs
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
