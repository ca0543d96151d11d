//! The RMI model: the lookup half of the two-layer recursive model index (fitting is in
//! [`super::rmi_fit`], the overview and the proof of the window contract in [`super::rmi`]).
//!
//! A lookup of a u64 `key` over `n` keys `first_key ..= last_key`:
//!
//! 1. `key <= first_key` → window `[0, 1)`; `key > last_key` → `[n, n + 1)`. No model.
//! 2. `dx = key − first_key` (an integer difference: f64 is never asked to hold a key).
//! 3. The root routes `dx` to a leaf `j` in `0..L`. Routing is **monotone** in `dx`, exactly,
//!    as computed: the linear root is `floor(a + b·dx)` in f64 with `b >= 0` (every IEEE
//!    operation is monotone under round-to-nearest); the cubic root is evaluated exactly in
//!    i128 on `dx` scaled to 24 bits and was verified monotone on its whole domain ([`cubic_is_monotone`]).
//! 4. Leaf `j` covers the positions `[start_j, end_j]` (`end_j = start_{j+1}`, or `n` for the
//!    last leaf). Its line gives `p = intercept + slope·dx`, clamped to `[start_j, end_j]`,
//!    and `q = floor(p)`. The window is `[max(q − below, start_j), min(q + above, end_j) + 1)`,
//!    where `below`/`above` are the errors recorded at training time against this very `q`
//!    (so f64 rounding needs no slack: the recorded errors already include it). The value
//!    [`SATURATED`] means "unbounded" (then the leaf's own boundary applies).
//!
//! Since `start_j <= q <= end_j` and the errors are non-negative, every window is non-empty and
//! inside `[0, n + 1)`, whatever the (validated) field values; a damaged model can give a
//! wrong window, never an invalid one.

use super::{put_header, Index, IndexKind, Window, MAX_KEYS};
use crate::coding::{put_u32, put_u64, Decoder};

/// The largest number of leaf models.
pub const MAX_LEAVES: u32 = 1 << 20;

/// Bits of the cubic root's input: `dx` is scaled to `t < 2^24` ([`CubicShift`]).
const CUBIC_INPUT_BITS: u32 = 24;
/// Fraction bits of the cubic root's fixed-point output: `leaf = P(t) >> CUBIC_SCALE_BITS`.
const CUBIC_SCALE_BITS: u32 = 3 * CUBIC_INPUT_BITS + 16;
/// `|coeffs[i]| < 2^CUBIC_COEFF_BITS[i]`: with `t < 2^24`, Horner's rule stays below 2^127.
const CUBIC_COEFF_BITS: [u32; 4] = [124, 100, 76, 52];

/// A recorded error of this value stands for "unbounded": the leaf boundary applies instead.
pub const SATURATED: u32 = u32::MAX;

/// The root model: maps `dx = key − first_key` to a leaf.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Root {
    /// `leaf = floor(intercept + slope·dx)`, clamped to `0..L`; `slope >= 0`, both finite.
    Linear {
        /// Leaf units at `dx = 0`.
        intercept: f64,
        /// Leaves per key unit.
        slope: f64,
    },
    /// `leaf = P(t) >> 88` with `t = (dx << left) >> right` and
    /// `P(t) = c0 + c1·t + c2·t² + c3·t³` evaluated exactly in i128, clamped to `0..L`; `P` is
    /// non-decreasing on `0..=t_max` (`t_max` = the `t` of the last key).
    Cubic {
        /// Input scaling, derived from `range = last_key − first_key` and not encoded: with
        /// `b = bit_length(range)`, `right = b − 24` when `b >= 24` (else 0) and `left = 24 − b`
        /// when `b < 24` (else 0), so `t` spans `[2^23, 2^24)` at the last key.
        shift: CubicShift,
        /// The fixed-point coefficients, `|c_i| < 2^CUBIC_COEFF_BITS[i]`.
        coeffs: [i128; 4],
    },
}

impl Root {
    /// The input scaling of a cubic root over keys spanning `range = last_key − first_key`.
    pub fn cubic_shift(range: u64) -> CubicShift {
        let bits = u64::BITS - range.leading_zeros();
        CubicShift {
            left: CUBIC_INPUT_BITS.saturating_sub(bits),
            right: bits.saturating_sub(CUBIC_INPUT_BITS),
        }
    }

    /// The scale of a cubic root's output: `leaf = P(t) / 2^scale_bits`.
    pub fn cubic_scale_bits() -> u32 {
        CUBIC_SCALE_BITS
    }

    /// The scale of each cubic coefficient relative to a cubic in `u = t / 2^24 ∈ [0, 1)`.
    pub fn cubic_coeff_scale_bits() -> [u32; 4] {
        let k = CUBIC_INPUT_BITS;
        [3 * k + 16, 2 * k + 16, k + 16, 16]
    }

    /// The bit bounds of the cubic coefficients.
    pub fn cubic_coeff_bits() -> [u32; 4] {
        CUBIC_COEFF_BITS
    }

    /// The leaf of `dx`, in `0..=last_leaf`. Monotone non-decreasing in `dx`.
    #[inline]
    pub fn route(&self, dx: u64, last_leaf: u64) -> usize {
        let leaf = match *self {
            Root::Linear { intercept, slope } => {
                // Clamped in f64 first (`max` maps NaN, impossible for finite parameters, to
                // 0), then `as` floors a value below 2^20: every step is monotone, and the
                // signed conversion is a single instruction.
                let v = (intercept + slope * dx as f64)
                    .max(0.0)
                    .min(last_leaf as f64);
                v as i64 as u64
            }
            Root::Cubic { shift, coeffs } => {
                let j = cubic_eval(&coeffs, shift.input(dx)) >> CUBIC_SCALE_BITS;
                u64::try_from(j).unwrap_or(0).min(last_leaf)
            }
        };
        // last_leaf < 2^20 fits usize.
        leaf as usize
    }

    /// The unclamped routing value of `dx` in leaf units (`route` floors and clamps it); for
    /// statistics and sizing decisions only.
    pub fn value(&self, dx: u64) -> f64 {
        match *self {
            Root::Linear { intercept, slope } => intercept + slope * dx as f64,
            Root::Cubic { shift, coeffs } => {
                cubic_eval(&coeffs, shift.input(dx)) as f64 / 2f64.powi(CUBIC_SCALE_BITS as i32)
            }
        }
    }

    /// The root's parameters are valid for keys spanning `range` (finite linear parameters with
    /// a non-negative slope; cubic coefficients in bounds and non-decreasing on the domain).
    pub fn is_valid(&self, range: u64) -> bool {
        match *self {
            Root::Linear { intercept, slope } => {
                intercept.is_finite() && slope.is_finite() && slope >= 0.0
            }
            Root::Cubic { shift, coeffs } => {
                shift == Root::cubic_shift(range)
                    && cubic_in_bounds(&coeffs)
                    && cubic_is_monotone(&coeffs, shift.input(range))
            }
        }
    }
}

/// How a cubic root scales `dx` to its input `t = (dx << left) >> right < 2^24`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CubicShift {
    /// Left shift (for key ranges below 2^23).
    pub left: u32,
    /// Right shift (for key ranges of 2^24 and more).
    pub right: u32,
}

impl CubicShift {
    /// `t` of `dx`: monotone; below 2^24 for `dx <= range` of the root's key range.
    #[inline]
    pub fn input(self, dx: u64) -> i128 {
        // left <= 24 and right <= 40, so neither shift overflows its operand's width.
        i128::from((dx << self.left.min(63)) >> self.right.min(63))
    }
}

/// `P(t)` by Horner's rule. Exact (no overflow) for coefficients within
/// [`CUBIC_COEFF_BITS`] and `0 <= t < 2^24`; wrapping arithmetic keeps it panic-free otherwise.
#[inline]
fn cubic_eval(c: &[i128; 4], t: i128) -> i128 {
    let [c0, c1, c2, c3] = *c;
    let inner = c3.wrapping_mul(t).wrapping_add(c2);
    let inner = inner.wrapping_mul(t).wrapping_add(c1);
    inner.wrapping_mul(t).wrapping_add(c0)
}

/// True when every coefficient is within its bound.
pub fn cubic_in_bounds(c: &[i128; 4]) -> bool {
    c.iter()
        .zip(CUBIC_COEFF_BITS)
        .all(|(&v, bits)| v.unsigned_abs() < 1u128 << bits)
}

/// True when `P(t + 1) >= P(t)` for every integer `t` in `0..t_max`, checked exactly.
///
/// `Δ(t) = P(t+1) − P(t) = 3c3·t² + (2c2 + 3c3)·t + (c1 + c2 + c3)` is a quadratic. When
/// `c3 <= 0` it is concave (or linear) and its minimum over an interval is at an end; when
/// `c3 > 0` the integer minimum is next to the vertex `−(2c2 + 3c3) / (6c3)`, which is located
/// in f64 and checked with a margin of two integers on each side.
/// REQUIRES: [`cubic_in_bounds`] and `t_max < 2^24` (so `Δ` fits i128).
pub fn cubic_is_monotone(c: &[i128; 4], t_max: i128) -> bool {
    if t_max <= 0 {
        return true;
    }
    let [_, c1, c2, c3] = *c;
    let delta = |t: i128| 3 * c3 * t * t + (2 * c2 + 3 * c3) * t + (c1 + c2 + c3);
    let last = t_max - 1;
    if delta(0) < 0 || delta(last) < 0 {
        return false;
    }
    if c3 > 0 {
        let vertex = -((2 * c2 + 3 * c3) as f64) / ((6 * c3) as f64);
        if vertex > 0.0 && vertex < last as f64 {
            let v = vertex.floor() as i128;
            return (v - 2..=v + 2).all(|t| delta(t.clamp(0, last)) >= 0);
        }
    }
    true
}

/// One leaf model with its recorded errors and its position range.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Leaf {
    /// Predicted position at `dx = 0` (finite).
    pub intercept: f64,
    /// Positions per key unit (finite, `>= 0`).
    pub slope: f64,
    /// First position of the keys routed to this leaf (= the next leaf's `start` when empty).
    pub start: u64,
    /// Largest `q − lb` over the trained points, or [`SATURATED`].
    pub below: u32,
    /// Largest `lb − q` over the trained points, or [`SATURATED`].
    pub above: u32,
}

impl Leaf {
    /// `q = floor(clamp(intercept + slope·dx, start, end))`: monotone in `dx`, in `[start, end]`.
    #[inline]
    pub fn floor_prediction(&self, dx: u64, end: u64) -> u64 {
        let p = self.intercept + self.slope * dx as f64;
        // Positions are below 2^41, exact in f64. `max`/`min` never panic (and map NaN to
        // `start`); `as` floors the non-negative result.
        p.max(self.start as f64).min(end as f64) as i64 as u64
    }

    /// The window of a key with prediction `q` in this leaf, whose range ends at `end`.
    #[inline]
    fn window(&self, q: u64, end: u64) -> Window {
        let below = if self.below == SATURATED {
            u64::MAX
        } else {
            u64::from(self.below)
        };
        let above = if self.above == SATURATED {
            u64::MAX
        } else {
            u64::from(self.above)
        };
        Window {
            lo: q.saturating_sub(below).max(self.start),
            hi: q.saturating_add(above).min(end) + 1,
        }
    }

    /// The largest window this leaf can return.
    fn max_window(&self, end: u64) -> u64 {
        let span = end.saturating_sub(self.start) + 1;
        if self.below == SATURATED || self.above == SATURATED {
            return span;
        }
        (u64::from(self.below) + u64::from(self.above) + 1).min(span)
    }
}

/// A two-layer RMI over the projected keys of one file.
#[derive(Debug, Clone, PartialEq)]
pub struct RmiIndex {
    /// Number of keys indexed.
    n: u64,
    /// Smallest key (0 when `n == 0`).
    first_key: u64,
    /// Largest key (0 when `n == 0`).
    last_key: u64,
    /// The root model.
    root: Root,
    /// The leaves (none iff `n == 0`); `start` non-decreasing from 0, at most `n`.
    leaves: Vec<Leaf>,
    /// The largest window any search returns (derived from the leaves).
    max_window: u64,
}

impl RmiIndex {
    /// Assembles a model (as [`super::rmi_fit`] does). REQUIRES the invariants that
    /// [`RmiIndex::decode_body`] checks.
    pub(super) fn new(
        n: u64,
        first_key: u64,
        last_key: u64,
        root: Root,
        mut leaves: Vec<Leaf>,
    ) -> RmiIndex {
        leaves.shrink_to_fit();
        let max_window = max_window(&leaves, n);
        RmiIndex {
            n,
            first_key,
            last_key,
            root,
            leaves,
            max_window,
        }
    }

    /// The root model.
    pub fn root(&self) -> &Root {
        &self.root
    }

    /// The leaf models, in key order.
    pub fn leaves(&self) -> &[Leaf] {
        &self.leaves
    }

    /// Decodes the body that follows the header (see `docs/format/index.md`), checking every
    /// invariant `search` relies on; the error string says what is wrong.
    pub(super) fn decode_body(body: &[u8]) -> Result<RmiIndex, String> {
        let mut d = Decoder::new(body);
        let (Some(n), Some(first_key), Some(last_key), Some(count), Some(root_kind)) =
            (d.u64(), d.u64(), d.u64(), d.u32(), d.u8())
        else {
            return Err("rmi: truncated parameters".to_string());
        };
        if n > MAX_KEYS {
            return Err(format!("rmi: {n} keys exceed the limit"));
        }
        let leaves_ok = if n == 0 {
            count == 0 && first_key == 0 && last_key == 0
        } else {
            (1..=MAX_LEAVES).contains(&count)
        };
        if !leaves_ok || first_key > last_key {
            return Err(format!(
                "rmi: {count} leaves, keys {first_key}..={last_key} for {n} keys"
            ));
        }
        let range = last_key - first_key;
        let root = match root_kind {
            0 => {
                let (Some(a), Some(b)) = (d.u64(), d.u64()) else {
                    return Err("rmi: truncated linear root".to_string());
                };
                Root::Linear {
                    intercept: f64::from_bits(a),
                    slope: f64::from_bits(b),
                }
            }
            1 => {
                let mut coeffs = [0i128; 4];
                for c in &mut coeffs {
                    let (Some(lo), Some(hi)) = (d.u64(), d.u64()) else {
                        return Err("rmi: truncated cubic root".to_string());
                    };
                    *c = (i128::from(hi as i64) << 64) | i128::from(lo);
                }
                Root::Cubic {
                    shift: Root::cubic_shift(range),
                    coeffs,
                }
            }
            other => return Err(format!("rmi: unknown root kind {other}")),
        };
        if !root.is_valid(range) {
            return Err(format!("rmi: invalid root {root:?}"));
        }
        if u64::from(count) * 32 != d.remaining() as u64 {
            return Err(format!("rmi: {} bytes for {count} leaves", d.remaining()));
        }
        let mut leaves: Vec<Leaf> = Vec::with_capacity(count as usize);
        while let (Some(a), Some(b), Some(start), Some(below), Some(above)) =
            (d.u64(), d.u64(), d.u64(), d.u32(), d.u32())
        {
            let leaf = Leaf {
                intercept: f64::from_bits(a),
                slope: f64::from_bits(b),
                start,
                below,
                above,
            };
            let i = leaves.len();
            let ordered = match leaves.last() {
                Some(prev) => prev.start <= start,
                None => start == 0,
            };
            if !ordered || start > n {
                return Err(format!("rmi: leaf {i} starts at {start}, out of order"));
            }
            if !(leaf.intercept.is_finite() && leaf.slope.is_finite() && leaf.slope >= 0.0) {
                return Err(format!("rmi: leaf {i} has line {leaf:?}"));
            }
            leaves.push(leaf);
        }
        Ok(RmiIndex::new(n, first_key, last_key, root, leaves))
    }
}

/// The largest window of any leaf (at least 1: the windows outside the key range).
fn max_window(leaves: &[Leaf], n: u64) -> u64 {
    let ends = leaves.iter().skip(1).map(|l| l.start).chain([n]);
    leaves
        .iter()
        .zip(ends)
        .map(|(leaf, end)| leaf.max_window(end))
        .fold(1, u64::max)
}

impl Index for RmiIndex {
    fn search(&self, key: u64) -> Window {
        if key <= self.first_key {
            return Window { lo: 0, hi: 1 };
        }
        if key > self.last_key {
            return Window {
                lo: self.n,
                hi: self.n + 1,
            };
        }
        // first_key < key <= last_key, so n > 0 and there is at least one leaf.
        let dx = key - self.first_key;
        let last_leaf = self.leaves.len().saturating_sub(1) as u64;
        let j = self.root.route(dx, last_leaf);
        let Some(leaf) = self.leaves.get(j) else {
            return Window {
                lo: 0,
                hi: self.n + 1,
            }; // unreachable for a built or decoded index; stay correct anyway
        };
        let end = self.leaves.get(j + 1).map_or(self.n, |l| l.start);
        leaf.window(leaf.floor_prediction(dx, end), end)
    }

    fn max_window(&self) -> u64 {
        self.max_window
    }

    fn size_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + self.leaves.capacity() * std::mem::size_of::<Leaf>()
    }

    fn kind(&self) -> IndexKind {
        IndexKind::Rmi
    }

    fn len(&self) -> u64 {
        self.n
    }

    fn segments(&self) -> u64 {
        self.leaves.len() as u64
    }

    fn encode(&self, out: &mut Vec<u8>) {
        put_header(out, IndexKind::Rmi);
        put_u64(out, self.n);
        put_u64(out, self.first_key);
        put_u64(out, self.last_key);
        put_u32(out, self.leaves.len() as u32);
        match self.root {
            Root::Linear { intercept, slope } => {
                out.push(0);
                put_u64(out, intercept.to_bits());
                put_u64(out, slope.to_bits());
            }
            Root::Cubic { coeffs, .. } => {
                out.push(1);
                for c in coeffs {
                    put_u64(out, c as u64);
                    put_u64(out, (c >> 64) as u64);
                }
            }
        }
        for leaf in &self.leaves {
            put_u64(out, leaf.intercept.to_bits());
            put_u64(out, leaf.slope.to_bits());
            put_u64(out, leaf.start);
            put_u32(out, leaf.below);
            put_u32(out, leaf.above);
        }
    }
}
