//! RadixSpline (Kipf et al., "RadixSpline: a single-pass learned index", aiDM 2020): an
//! error-bounded linear spline over `lb` (`super::spline`, GreedySplineCorridor, one pass)
//! plus a **radix table** over the spline points.
//!
//! # Radix table
//!
//! With `r` effective radix bits, the prefix of a key is `(x − min) >> shift`, where `min` is
//! the first key and `shift` is chosen so that the prefixes of `[min, max]` span `r` bits
//! (`shift = bits(max − min) − r`, at least 0). `table[p]` is the index of the first spline
//! point whose prefix is `>= p`, for `p` in `0 ..= prefix(max) + 1`. A key `x` in
//! `(min, max]` with prefix `p` has its first spline point `>= x` in `[table[p],
//! table[p + 1]]`: points with a smaller prefix are `< x`, points with a larger prefix are
//! `> x`. A binary search there finds the segment; `super::spline::Spline::window`
//! interpolates it with exact integer differences and clamps, giving at most `2δ + 1`
//! positions (see `super::spline` for why every u64 key's lower bound is inside).
//!
//! # Parameters
//!
//! - `error_bound` δ: the spline's error bound; windows hold at most `2δ + 1` positions.
//! - `tuning.radix_bits` (1..=24, others are rejected by the builder with
//!   `InvalidArgument`): the **largest** table the user allows. *Augur*: the table never uses
//!   more than `⌈log2(m)⌉ + 1` bits for `m` spline points (at most about 4 entries per point;
//!   more bits would only add empty slots), so a small file does not carry a 2^18-entry table.
//!   The effective bits are a function of `radix_bits` and the spline, so the table is not
//!   stored in the encoding: it is rebuilt on decode in `O(m + 2^r)`.

use super::spline::{ceil_log2, KnotLocator, Spline, SplineBuilder};
use super::{put_header, Index, IndexBuilder, IndexConfig, IndexKind, Window};
use crate::coding::{put_u32, Decoder};
use crate::error::Result;

/// The accepted range of `tuning.radix_bits`.
pub const RADIX_BITS: std::ops::RangeInclusive<u32> = 1..=24;

/// A builder for this index type.
pub(super) fn builder(config: &IndexConfig) -> Box<dyn IndexBuilder> {
    let bits = config.tuning.radix_bits;
    let mut spline = SplineBuilder::new(config.error_bound);
    if !RADIX_BITS.contains(&bits) {
        spline.fail(format!("index: radix_bits {bits} outside 1..=24"));
    }
    Box::new(RadixSplineBuilder { bits, spline })
}

/// The window bound of an index of `config`: `2δ + 1`.
pub(super) fn documented_max_window(config: &IndexConfig) -> Option<u64> {
    Some(2 * u64::from(config.error_bound) + 1)
}

/// Decodes the body of an encoding of this type (`docs/format/index.md`, kind 4).
pub(super) fn decode_body(body: &[u8]) -> std::result::Result<Box<dyn Index>, String> {
    let mut d = Decoder::new(body);
    let Some(bits) = d.u32() else {
        return Err("rs: truncated parameters".to_string());
    };
    if !RADIX_BITS.contains(&bits) {
        return Err(format!("rs: radix_bits {bits} outside 1..=24"));
    }
    let spline = Spline::decode(&mut d, "rs")?;
    Ok(Box::new(RadixSplineIndex::new(bits, spline)))
}

/// Streams keys into a [`RadixSplineIndex`].
#[derive(Debug)]
struct RadixSplineBuilder {
    bits: u32,
    spline: SplineBuilder,
}

impl IndexBuilder for RadixSplineBuilder {
    fn add(&mut self, key: u64) -> Result<()> {
        self.spline.add(key)
    }

    fn add_all(&mut self, keys: &[u64]) -> Result<()> {
        self.spline.add_all(keys)
    }

    fn finish(self: Box<Self>) -> Result<Box<dyn Index>> {
        let spline = self.spline.finish()?;
        Ok(Box::new(RadixSplineIndex::new(self.bits, spline)))
    }
}

/// A flat radix table over the keys of spline points (also PLEX's fallback locator).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct RadixTable {
    /// The first spline key (the prefixes are taken of `x − min`).
    min: u64,
    /// Right shift giving the prefix of `x − min`.
    shift: u32,
    /// `table[p]`: index of the first spline point whose prefix is `>= p`.
    table: Vec<u32>,
}

impl KnotLocator for RadixTable {
    #[inline]
    fn range(&self, x: u64) -> (usize, usize) {
        RadixTable::range(self, x)
    }
}

impl RadixTable {
    /// The table with `bits` radix bits (at least 1) over `keys` (strictly increasing,
    /// fewer than 2^31).
    pub(super) fn build(keys: &[u64], bits: u32) -> RadixTable {
        let (Some(&min), Some(&max)) = (keys.first(), keys.last()) else {
            return RadixTable {
                min: 0,
                shift: 0,
                table: Vec::new(),
            };
        };
        let range_bits = u64::BITS - (max - min).leading_zeros();
        let shift = range_bits.saturating_sub(bits);
        let top = ((max - min) >> shift) as usize; // < 2^bits
        let mut table = Vec::with_capacity(top + 2);
        for (i, &k) in keys.iter().enumerate() {
            let p = ((k - min) >> shift) as usize;
            while table.len() <= p {
                table.push(i as u32);
            }
        }
        table.resize(top + 2, keys.len() as u32);
        RadixTable { min, shift, table }
    }

    /// The effective bits of a table over `m` spline points when the user allows `bits`.
    pub(super) fn effective_bits(bits: u32, m: usize) -> u32 {
        bits.min(ceil_log2(m) + 1).max(1)
    }

    /// The knot-index range `[lo, hi]` holding the first spline point `>= x`.
    ///
    /// REQUIRES (for a useful hint): `min < x <= max`.
    #[inline]
    pub(super) fn range(&self, x: u64) -> (usize, usize) {
        let p = (x.wrapping_sub(self.min) >> self.shift) as usize;
        match (self.table.get(p), self.table.get(p.wrapping_add(1))) {
            (Some(&lo), Some(&hi)) => (lo as usize, hi as usize),
            _ => (0, usize::MAX),
        }
    }

    /// Memory held by the table buffer.
    pub(super) fn heap_bytes(&self) -> usize {
        self.table.capacity() * std::mem::size_of::<u32>()
    }

    /// Bytes a table of `bits` radix bits over `keys` would take, without building it.
    pub(super) fn predicted_bytes(keys: &[u64], bits: u32) -> usize {
        let (Some(&min), Some(&max)) = (keys.first(), keys.last()) else {
            return 0;
        };
        let range_bits = u64::BITS - (max - min).leading_zeros();
        let shift = range_bits.saturating_sub(bits);
        (((max - min) >> shift) as usize + 2) * std::mem::size_of::<u32>()
    }
}

/// A RadixSpline index over the projected keys of one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RadixSplineIndex {
    /// The configured radix bits (the table uses [`RadixTable::effective_bits`] of them).
    bits: u32,
    spline: Spline,
    table: RadixTable,
}

impl RadixSplineIndex {
    fn new(bits: u32, spline: Spline) -> RadixSplineIndex {
        let effective = RadixTable::effective_bits(bits, spline.keys.len());
        let table = RadixTable::build(&spline.keys, effective);
        RadixSplineIndex {
            bits,
            spline,
            table,
        }
    }

    /// The error bound δ.
    pub fn error_bound(&self) -> u32 {
        self.spline.delta
    }

    /// The configured radix bits.
    pub fn radix_bits(&self) -> u32 {
        self.bits
    }
}

impl Index for RadixSplineIndex {
    fn fitted_error_bound(&self) -> Option<u32> {
        Some(RadixSplineIndex::error_bound(self))
    }

    #[inline]
    fn search(&self, key: u64) -> Window {
        self.spline.search(key, &self.table)
    }

    fn max_window(&self) -> u64 {
        self.spline.max_window()
    }

    fn size_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + self.spline.heap_bytes() + self.table.heap_bytes()
    }

    fn kind(&self) -> IndexKind {
        IndexKind::RadixSpline
    }

    fn len(&self) -> u64 {
        self.spline.n
    }

    /// The number of spline points.
    fn segments(&self) -> u64 {
        self.spline.knots()
    }

    fn encode(&self, out: &mut Vec<u8>) {
        put_header(out, IndexKind::RadixSpline);
        put_u32(out, self.bits);
        self.spline.encode(out);
    }
}

#[cfg(test)]
#[path = "rs_tests.rs"]
mod tests;
