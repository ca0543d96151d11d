//! RMI training: the fitting half of the two-layer recursive model index (Kraska et al.,
//! SIGMOD 2018; lookup is in [`super::rmi_model`], the overview in [`super::rmi`]).
//!
//! Training runs over the buffered keys of a file in a few sequential passes:
//!
//! 1. **Root.** A least-squares fit of the positions, scaled to leaf units (`pos · L / n`),
//!    against `dx = key − first_key`: a line (one pass of sums), or a cubic in
//!    `u = t / 2^24 ∈ [0, 1)` where `t` is `dx` scaled to 24 bits ([`Root::Cubic`]; one pass of
//!    power sums, a 4×4 normal-equation solve), quantized to exact i128 fixed point. A cubic that is not non-decreasing on its domain
//!    (checked exactly, [`super::rmi_model::cubic_is_monotone`]), degenerate or out of range
//!    falls back to the linear root, so routing is always monotone.
//! 2. **Routing + leaf fits.** Every corner of the lower-bound step function over
//!    `(first_key, last_key]` — for each distinct key `k_i` after the first, the points
//!    `(k_{i−1} + 1, lb)` (when it differs from `k_i`) and `(k_i, lb)` — is routed by the root.
//!    Monotone routing makes each leaf's points contiguous, so one accumulator suffices: a
//!    least-squares line per leaf (sums shifted by the leaf's first point), slope clamped to
//!    `>= 0`. The distinct keys' routes give each leaf's start position.
//! 3. **Errors.** The corners are routed again and each leaf records the largest `q − lb` and
//!    `lb − q` over its corners, where `q` is exactly the lookup's clamped, floored prediction.
//!
//! Leaf count: the configured `rmi_leaves`, or for 0 `ceil(n / (δ + 1))` capped at `n` and
//! 2^20 (each leaf then holds about `δ + 1` positions, so its windows stay near `2δ + 1` when the
//! data fit a line locally). When that model's largest window exceeds `RETRY_FACTOR` (4)
//! times `2δ + 1`, one retry with `RETRY_GROWTH` (4) times as many leaves (within the caps) is
//! trained and the one with the smaller largest window kept — unless the finer routing would not split the
//! middle half of the widest leaf (typically a dense cluster that the root maps into a sliver
//! of one leaf: more leaves cannot help there, and skipping keeps training cheap).

use super::rmi_model::{Leaf, RmiIndex, Root, MAX_LEAVES, SATURATED};
use super::{Index, IndexBuilder, IndexConfig, KeyOrder, RmiRoot};
use crate::error::Result;

/// An automatic leaf count is retried when the largest window exceeds this many times `2δ + 1`.
const RETRY_FACTOR: u64 = 4;
/// The automatic retry trains this many times as many leaves.
const RETRY_GROWTH: u64 = 4;

/// Streams projected keys into an [`RmiIndex`]: buffers them (8 bytes per key) and trains in
/// [`IndexBuilder::finish`].
#[derive(Debug)]
pub struct RmiBuilder {
    leaves: u32,
    root: RmiRoot,
    error_bound: u32,
    order: KeyOrder,
    keys: Vec<u64>,
}

impl RmiBuilder {
    /// A builder for `config`; a leaf count above 2^20 is rejected by the first `add` (or
    /// `finish`).
    pub fn new(config: &IndexConfig) -> Self {
        let mut order = KeyOrder::default();
        let leaves = config.tuning.rmi_leaves;
        if leaves > MAX_LEAVES {
            order.failed = Some(format!(
                "index: rmi_leaves must be in 1..={MAX_LEAVES}, or 0 for automatic, got {leaves}"
            ));
        }
        RmiBuilder {
            leaves,
            root: config.tuning.rmi_root,
            error_bound: config.error_bound,
            order,
            keys: Vec::new(),
        }
    }
}

impl IndexBuilder for RmiBuilder {
    fn add(&mut self, key: u64) -> Result<()> {
        self.order.accept(key)?;
        self.keys.push(key);
        Ok(())
    }

    fn finish(self: Box<Self>) -> Result<Box<dyn Index>> {
        self.order.check()?;
        Ok(Box::new(train(
            &self.keys,
            self.leaves,
            self.root,
            self.error_bound,
        )))
    }
}

/// Trains an RMI over `keys` (sorted, duplicates allowed): `leaves` leaf models (0 = sized from
/// `error_bound`), with the requested root.
pub fn train(keys: &[u64], leaves: u32, root: RmiRoot, error_bound: u32) -> RmiIndex {
    let n = keys.len() as u64;
    if leaves != 0 {
        return train_with(keys, u64::from(leaves).min(u64::from(MAX_LEAVES)), root);
    }
    let cap = n.min(u64::from(MAX_LEAVES));
    let auto = n.div_ceil(u64::from(error_bound) + 1).clamp(1, cap.max(1));
    let first = train_with(keys, auto, root);
    let target = 2 * u64::from(error_bound) + 1;
    let more = (auto * RETRY_GROWTH).min(cap);
    if first.max_window() <= RETRY_FACTOR * target
        || more <= auto
        || !worst_leaf_splits(&first, keys, more as f64 / auto as f64)
    {
        return first;
    }
    let second = train_with(keys, more, root);
    if second.max_window() < first.max_window() {
        second
    } else {
        first
    }
}

/// Whether scaling the root's output by `growth` would spread the middle half of the keys of
/// the widest leaf (by positions) over more than one leaf. When it would not, a retry with
/// more leaves cannot lower the largest window much, and is skipped.
fn worst_leaf_splits(idx: &RmiIndex, keys: &[u64], growth: f64) -> bool {
    let leaves = idx.leaves();
    let ends = leaves.iter().skip(1).map(|l| l.start).chain([idx.len()]);
    let Some((leaf, end)) = leaves
        .iter()
        .zip(ends)
        .max_by_key(|(leaf, end)| end.saturating_sub(leaf.start))
    else {
        return false;
    };
    // The middle half of its positions: a few outlying keys split off do not shrink it.
    let quarter = end.saturating_sub(leaf.start) / 4;
    let key_at = |pos: u64| usize::try_from(pos).ok().and_then(|i| keys.get(i));
    let (Some(&first), Some(&lo), Some(&hi)) = (
        keys.first(),
        key_at(leaf.start + quarter),
        key_at(end.saturating_sub(quarter + 1)),
    ) else {
        return false;
    };
    let root = idx.root();
    let (a, b) = (root.value(lo - first), root.value(hi - first));
    (b * growth).floor() > (a * growth).floor()
}

/// Trains with exactly `count` leaves (`1..=2^20`; none when `keys` is empty).
fn train_with(keys: &[u64], count: u64, root_kind: RmiRoot) -> RmiIndex {
    let (Some(&first), Some(&last)) = (keys.first(), keys.last()) else {
        return RmiIndex::new(
            0,
            0,
            0,
            Root::Linear {
                intercept: 0.0,
                slope: 0.0,
            },
            Vec::new(),
        );
    };
    let n = keys.len() as u64;
    let scale = count as f64 / n as f64;
    let root = match root_kind {
        RmiRoot::Cubic => {
            fit_cubic_root(keys, scale).unwrap_or_else(|| fit_linear_root(keys, scale))
        }
        RmiRoot::Linear => fit_linear_root(keys, scale),
    };
    let last_leaf = count - 1;
    let route = |dx: u64| root.route(dx, last_leaf);

    // Pass 2: starts and leaf lines.
    let mut leaves = vec![
        Leaf {
            intercept: f64::NAN, // "no point yet"; replaced below
            slope: 0.0,
            start: n,
            below: 0,
            above: 0,
        };
        count as usize
    ];
    let mut next_start = 0usize; // leaves below this index have their start set
    let mut set_starts = |leaves: &mut [Leaf], upto: usize, pos: u64| {
        if upto >= next_start {
            for leaf in leaves.get_mut(next_start..=upto).unwrap_or_default() {
                leaf.start = pos;
            }
            next_start = upto + 1;
        }
    };
    set_starts(&mut leaves, route(0), 0);
    let mut acc = LineFit::default();
    let mut acc_leaf = 0usize;
    for_each_corner(keys, route, |j, dx, pos, is_key| {
        if j != acc_leaf {
            if let Some(leaf) = leaves.get_mut(acc_leaf) {
                acc.finish_into(leaf);
            }
            acc = LineFit::default();
            acc_leaf = j;
        }
        if is_key {
            set_starts(&mut leaves, j, pos);
        }
        acc.push(dx, pos);
    });
    if let Some(leaf) = leaves.get_mut(acc_leaf) {
        acc.finish_into(leaf);
    }
    for leaf in &mut leaves {
        if leaf.intercept.is_nan() {
            leaf.intercept = leaf.start as f64; // no point: predict the start
        }
    }

    // Pass 3: recorded errors against the lookup's own prediction, accumulated per leaf.
    let end_of = |leaves: &[Leaf], j: usize| leaves.get(j + 1).map_or(n, |l| l.start);
    let (mut cur, mut cur_end) = (0usize, end_of(&leaves, 0));
    let (mut below, mut above) = (0u64, 0u64);
    let record = |leaves: &mut [Leaf], j: usize, below: u64, above: u64| {
        if let Some(leaf) = leaves.get_mut(j) {
            let saturate = |e: u64| u32::try_from(e).unwrap_or(SATURATED);
            leaf.below = saturate(below);
            leaf.above = saturate(above);
        }
    };
    for_each_corner(keys, route, |j, dx, pos, _| {
        if j != cur {
            record(&mut leaves, cur, below, above);
            (cur, cur_end, below, above) = (j, end_of(&leaves, j), 0, 0);
        }
        let Some(leaf) = leaves.get(j) else {
            return;
        };
        let q = leaf.floor_prediction(dx, cur_end);
        below = below.max(q.saturating_sub(pos));
        above = above.max(pos.saturating_sub(q));
    });
    record(&mut leaves, cur, below, above);
    RmiIndex::new(n, first, last, root, leaves)
}

/// Calls `f(leaf, dx, lb, is_key)` for every corner of the lower-bound step function over
/// `(first_key, last_key]`, in increasing `dx = x − first_key`: for each distinct key `k_i`
/// after the first (first position `lb`), `(k_{i−1} + 1, lb, false)` when `k_{i−1} + 1 < k_i`,
/// then `(k_i, lb, true)`. `leaf` is `route(dx)`; since routing is monotone, a gap point
/// between two keys of one leaf is in that leaf and is not routed again.
fn for_each_corner(
    keys: &[u64],
    route: impl Fn(u64) -> usize,
    mut f: impl FnMut(usize, u64, u64, bool),
) {
    let Some(&first) = keys.first() else {
        return;
    };
    let mut prev = first;
    let mut prev_leaf = route(0);
    for (pos, &k) in (0u64..).zip(keys) {
        if k == prev {
            continue; // a duplicate (or the first key): its run's first position was fed
        }
        let dx = k - first;
        let leaf = route(dx);
        if prev + 1 < k {
            let gap = prev + 1 - first;
            let gap_leaf = if leaf == prev_leaf { leaf } else { route(gap) };
            f(gap_leaf, gap, pos, false);
        }
        f(leaf, dx, pos, true);
        prev = k;
        prev_leaf = leaf;
    }
}

/// Least-squares line accumulator; sums are shifted by the first point for conditioning.
#[derive(Debug, Default)]
struct LineFit {
    count: f64,
    x0: f64,
    y0: f64,
    su: f64,
    sv: f64,
    suu: f64,
    suv: f64,
}

impl LineFit {
    fn push(&mut self, dx: u64, pos: u64) {
        let (x, y) = (dx as f64, pos as f64);
        if self.count == 0.0 {
            self.x0 = x;
            self.y0 = y;
        }
        let (u, v) = (x - self.x0, y - self.y0);
        self.count += 1.0;
        self.su += u;
        self.sv += v;
        self.suu += u * u;
        self.suv += u * v;
    }

    /// Writes the fitted line (in `dx`) into `leaf`: slope clamped to `>= 0`; a degenerate fit
    /// (one point, all `x` equal, non-finite values) becomes the flat line through the mean.
    fn finish_into(&self, leaf: &mut Leaf) {
        if self.count == 0.0 {
            return;
        }
        let m = self.count;
        let den = m * self.suu - self.su * self.su;
        let num = m * self.suv - self.su * self.sv;
        let mut slope = if den > 0.0 { (num / den).max(0.0) } else { 0.0 };
        if !slope.is_finite() {
            slope = 0.0;
        }
        let c = (self.sv - slope * self.su) / m;
        let mut intercept = self.y0 + c - slope * self.x0;
        if !intercept.is_finite() {
            slope = 0.0;
            intercept = self.y0 + self.sv / m;
        }
        leaf.slope = slope;
        leaf.intercept = if intercept.is_finite() {
            intercept
        } else {
            self.y0
        };
    }
}

/// The distinct keys with the first position of their run, as `(dx, pos)`.
fn distinct(keys: &[u64]) -> impl Iterator<Item = (u64, u64)> + '_ {
    let first = keys.first().copied().unwrap_or(0);
    (0u64..)
        .zip(keys.iter().zip(keys.iter().skip(1)))
        .filter(|(_, (prev, k))| prev != k)
        .map(move |(pos, (_, &k))| (k - first, pos + 1))
        .chain(keys.first().map(|_| (0, 0)))
}

/// Least-squares line of `pos · scale` against `dx` over the distinct keys (one pass).
/// A degenerate fit routes everything to leaf 0.
fn fit_linear_root(keys: &[u64], scale: f64) -> Root {
    // One pass; the sums are of dx >= 0 and positions, so cancellation in the variance only
    // costs a few digits of f64 (the fit need not be exact: routing is merely monotone).
    let (mut m, mut sx, mut sy, mut sxx, mut sxy) = (0.0f64, 0.0f64, 0.0f64, 0.0f64, 0.0f64);
    for (dx, pos) in distinct(keys) {
        let (x, y) = (dx as f64, pos as f64);
        m += 1.0;
        sx += x;
        sy += y;
        sxx += x * x;
        sxy += x * y;
    }
    let den = m * sxx - sx * sx;
    let slope = if den > 0.0 {
        ((m * sxy - sx * sy) / den).max(0.0)
    } else {
        0.0
    };
    let root = Root::Linear {
        intercept: (sy - slope * sx) / m * scale,
        slope: slope * scale,
    };
    if root.is_valid(0) {
        root
    } else {
        Root::Linear {
            intercept: 0.0,
            slope: 0.0,
        }
    }
}

/// Least-squares cubic of `pos · scale` against `u = t / 2^24` (`t` scaled from `dx`), quantized to the
/// exact fixed point of [`Root::Cubic`]; `None` when degenerate, out of range or not
/// non-decreasing on the keys' range.
fn fit_cubic_root(keys: &[u64], scale: f64) -> Option<Root> {
    let range = keys.last()? - keys.first()?;
    let shift = Root::cubic_shift(range);
    let unit = 1.0 / (1u64 << 24) as f64;
    // Power sums: s[k] = Σ u^k (k <= 6), r[k] = Σ u^k · y (k <= 3).
    let mut s = [0.0f64; 7];
    let mut r = [0.0f64; 4];
    for (dx, pos) in distinct(keys) {
        let u = shift.input(dx) as f64 * unit;
        let y = pos as f64 * scale;
        let mut p = 1.0;
        for (k, sk) in s.iter_mut().enumerate() {
            *sk += p;
            if let Some(rk) = r.get_mut(k) {
                *rk += p * y;
            }
            p *= u;
        }
    }
    let mut a = [[0.0f64; 5]; 4];
    for (i, row) in a.iter_mut().enumerate() {
        for (j, cell) in row.iter_mut().take(4).enumerate() {
            *cell = *s.get(i + j)?;
        }
        row[4] = *r.get(i)?;
    }
    let coef = solve4(a)?;
    let mut coeffs = [0i128; 4];
    for ((c, &x), (scale_bits, bound)) in coeffs.iter_mut().zip(&coef).zip(
        Root::cubic_coeff_scale_bits()
            .into_iter()
            .zip(Root::cubic_coeff_bits()),
    ) {
        let v = (x * 2f64.powi(scale_bits as i32)).round();
        if v.is_nan() || v.abs() >= 2f64.powi(bound as i32) {
            return None;
        }
        *c = v as i128;
    }
    let root = Root::Cubic { shift, coeffs };
    root.is_valid(range).then_some(root)
}

/// Solves the 4×4 system `[A | b]` by Gaussian elimination with partial pivoting; `None` when
/// (numerically) singular.
fn solve4(mut a: [[f64; 5]; 4]) -> Option<[f64; 4]> {
    for col in 0..4 {
        let pivot = (col..4).max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))?;
        a.swap(col, pivot);
        let pivot_row = a[col];
        let p = pivot_row[col];
        if !p.is_finite() || p.abs() <= 1e-300 {
            return None;
        }
        for row in a.iter_mut().skip(col + 1) {
            let factor = row[col] / p;
            for (cell, &pv) in row.iter_mut().zip(&pivot_row).skip(col) {
                *cell -= factor * pv;
            }
        }
    }
    let mut x = [0.0f64; 4];
    for row in (0..4).rev() {
        let r = a[row];
        let v = (row + 1..4).fold(r[4], |v, k| v - r[k] * x[k]);
        x[row] = v / r[row];
    }
    x.iter().all(|v| v.is_finite()).then_some(x)
}
