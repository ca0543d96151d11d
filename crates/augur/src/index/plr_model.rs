//! The Greedy-PLR model: the lookup half of the PLR index (fitting is in [`super::plr`]).
//!
//! The model is a list of segments `(start key, start position, slope)` covering the key range
//! `[first key, last key]` of the file. Its u64 keys are the byte projection of the file's
//! keys ([`super::projection`]), or a radix projection fitted to them
//! ([`super::radix_projection`], which the model then carries and encodes; chosen by
//! [`super::chooser`] where it costs less). Lookup of a u64 `key` (Bourbon §4.5):
//!
//! 1. `key <= first key` → `lb = 0`, window `[0, 1)`; `key > last key` → `lb = n`, window
//!    `[n, n + 1)`. No model is consulted.
//! 2. Otherwise find the last segment `i` whose start key is `<= key`: a radix table over
//!    the start keys (*Augur*; the RadixSpline table, `super::radix_spline::RadixTable`,
//!    about one entry per two segments, rebuilt on decode) narrows the binary search to the
//!    segments sharing the key's radix prefix, a few on most data.
//! 3. Predict `p = pos_i + slope_i · (key − key_i)`. The difference `key − key_i` is taken in
//!    integers before converting to `f64` (a u64 key above 2^53 is not exact as `f64`; the
//!    Bourbon reference loses keys that way). Clamp `p` to `[pos_i, pos_{i+1}]` (`pos_{i+1}` is
//!    `n` for the last segment): every key of the segment's range has its lower bound there,
//!    and this is the segment-boundary fix of the Bourbon range-query report (§4.2).
//! 4. With `r = δ + 1/64`, the window is the integers of `[p − r, p + r]`, i.e.
//!    `[⌈p − r⌉, ⌊p + r⌋ + 1)`, intersected with `[pos_i, pos_{i+1} + 1)`: at most
//!    **`2δ + 1`** positions (an interval of length `2δ + 1/32` holds at most `2δ + 1`
//!    integers), the `[p − δ, p + δ]` that Bourbon reads; `2δ` when `p` is far from an integer.
//!
//! Why it is safe: the fitter guarantees, in exact arithmetic, that the segment's line is
//! within δ of `lb(x)` for every `x` of its range (see [`super::plr`]). Rounding the slope and
//! the product to `f64` adds an error `η` below 2^-8 positions, because positions and δ stay
//! below 2^41 ([`super::MAX_KEYS`]); the slack 1/64 covers `η` and the rounding of `p ± r`.
//! So `p − r <= lb <= p + r`, and the integer `lb` lies in the window.

use super::radix_projection::RadixProjection;
use super::radix_spline::RadixTable;
use super::spline::ceil_log2;
use super::{put_header, Index, IndexKind, Window, MAX_KEYS};
use crate::coding::{put_u32, put_u64, Decoder};

/// Rounding slack added to δ on each side of a prediction: it exceeds the `f64` error of a
/// prediction (below 2^-8 positions) plus the rounding of `p ± (δ + SLACK)` itself (below
/// 2^-10 for values under 2^42).
const SLACK: f64 = 1.0 / 64.0;

/// One PLR segment as the fitter emits it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Segment {
    /// The projection where the segment starts (its anchor point's key).
    pub key: u64,
    /// The lower bound of `key`: the position the line passes through at `key`.
    pub pos: u64,
    /// Positions per key unit; finite and non-negative.
    pub slope: f64,
}

/// The line of one segment, without its start key (kept apart for a denser binary search).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Line {
    pos: u64,
    slope: f64,
}

/// A Greedy-PLR index over the projected keys of one file.
#[derive(Debug, Clone, PartialEq)]
pub struct PlrIndex {
    /// Error bound δ.
    delta: u32,
    /// Number of keys indexed.
    n: u64,
    /// Smallest key (0 when `n == 0`); also the first segment's start key.
    first_key: u64,
    /// Largest key (0 when `n == 0`).
    last_key: u64,
    /// Segment start keys, strictly increasing.
    starts: Vec<u64>,
    /// Segment lines, parallel to `starts`; positions non-decreasing, the first is 0.
    lines: Vec<Line>,
    /// Radix table over `starts` (empty for few segments): derived, not encoded.
    directory: RadixTable,
    /// How byte keys become the u64 keys it was fitted over: `None`, the byte projection
    /// ([`super::projection`]); else a radix projection fitted to the file's keys (encoded
    /// with header version [`RADIX_FORMAT_VERSION`]).
    projection: Option<RadixProjection>,
}

/// The header version of a PLR encoding that carries a radix projection (the body is the
/// projection, then the version-1 body).
pub const RADIX_FORMAT_VERSION: u8 = 2;

/// Models with fewer segments search their start keys without a directory (a binary search
/// of a few cache lines).
const DIRECTORY_MIN_SEGMENTS: usize = 64;

/// The directory over `starts`: about one entry per two segments.
fn directory(starts: &[u64]) -> RadixTable {
    if starts.len() < DIRECTORY_MIN_SEGMENTS {
        return RadixTable::build(&[], 1);
    }
    RadixTable::build(starts, ceil_log2(starts.len()).saturating_sub(1).max(1))
}

impl PlrIndex {
    /// Assembles a model from the fitter's output (as [`super::plr::PlrBuilder`] does).
    pub(super) fn new(
        delta: u32,
        n: u64,
        first_key: u64,
        last_key: u64,
        segments: Vec<Segment>,
    ) -> PlrIndex {
        let starts: Vec<u64> = segments.iter().map(|s| s.key).collect();
        let lines = segments
            .iter()
            .map(|s| Line {
                pos: s.pos,
                slope: s.slope,
            })
            .collect();
        PlrIndex {
            delta,
            n,
            first_key,
            last_key,
            directory: directory(&starts),
            starts,
            lines,
            projection: None,
        }
    }

    /// The same model over keys projected by `projection` (it must have been fitted over
    /// keys projected that way).
    pub(super) fn with_projection(mut self, projection: RadixProjection) -> PlrIndex {
        self.projection = Some(projection);
        self
    }

    /// The radix projection its keys were fitted over, if not the byte projection.
    pub fn radix_projection(&self) -> Option<&RadixProjection> {
        self.projection.as_ref()
    }

    /// The error bound δ.
    pub fn error_bound(&self) -> u32 {
        self.delta
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

    /// Segment start keys, strictly increasing (FITing-Tree indexes them with its B+-tree).
    pub(super) fn starts(&self) -> &[u64] {
        &self.starts
    }

    /// Bytes held by the buffers (the rest of [`Index::size_bytes`]).
    pub(super) fn heap_bytes(&self) -> usize {
        self.starts.capacity() * std::mem::size_of::<u64>()
            + self.lines.capacity() * std::mem::size_of::<Line>()
            + self.directory.heap_bytes()
            + self
                .projection
                .as_ref()
                .map_or(0, RadixProjection::heap_bytes)
    }

    /// The window of `key` for a given segment search: `[0, 1)` / `[n, n + 1)` outside the key
    /// range, else the window of segment `segment_of(key)` (which must return the last segment
    /// whose start is `<= key`; it is only called when `first key < key <= last key`).
    #[inline]
    pub(super) fn search_with(&self, key: u64, segment_of: impl FnOnce(u64) -> usize) -> Window {
        if key <= self.first_key || self.n == 0 {
            return Window { lo: 0, hi: 1 };
        }
        if key > self.last_key {
            return Window {
                lo: self.n,
                hi: self.n + 1,
            };
        }
        let i = segment_of(key);
        let (Some(&start), Some(line)) = (self.starts.get(i), self.lines.get(i)) else {
            return Window {
                lo: 0,
                hi: self.n + 1,
            }; // unreachable for a built or decoded index; stay correct anyway
        };
        let next_pos = self.lines.get(i + 1).map_or(self.n, |l| l.pos);
        let predicted = line.pos as f64 + line.slope * (key - start) as f64;
        // f64 `max`/`min` (not `clamp`) never panic; `as` floors, saturates, maps NaN to 0.
        let p = predicted.max(line.pos as f64).min(next_pos as f64);
        let reach = f64::from(self.delta) + SLACK;
        // lb is an integer in [p − reach, p + reach]; `as` floors `p + reach`.
        let lo = super::ceil_position(p - reach).max(line.pos);
        let hi = ((p + reach) as u64).saturating_add(1).min(next_pos + 1);
        // lo <= next_pos always; `max` only matters for a damaged model, keeping it non-empty.
        Window {
            lo,
            hi: hi.max(lo + 1),
        }
    }

    /// Appends the body (everything after the header) of the encoding.
    pub(super) fn encode_body(&self, out: &mut Vec<u8>) {
        put_u32(out, self.delta);
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

    /// Decodes the body that follows the header (see `docs/format/index.md`), checking every
    /// invariant `search` relies on; the error string says what is wrong.
    pub(super) fn decode_body(body: &[u8]) -> Result<PlrIndex, String> {
        let mut d = Decoder::new(body);
        let (Some(delta), Some(n), Some(first_key), Some(last_key), Some(count)) =
            (d.u32(), d.u64(), d.u64(), d.u64(), d.u64())
        else {
            return Err("plr: truncated parameters".to_string());
        };
        if n > MAX_KEYS {
            return Err(format!("plr: {n} keys exceed the limit"));
        }
        if (n == 0) != (count == 0) || first_key > last_key || (n == 0 && last_key != 0) {
            return Err(format!(
                "plr: {count} segments, keys {first_key}..={last_key} for {n} keys"
            ));
        }
        if count.checked_mul(24) != u64::try_from(d.remaining()).ok() {
            return Err(format!("plr: {} bytes for {count} segments", d.remaining()));
        }
        let count = d.remaining() / 24;
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
                    "plr: segment {i} (key {key}, position {pos}) out of order"
                ));
            }
            if !(slope.is_finite() && slope >= 0.0) {
                return Err(format!("plr: segment {i} has slope {slope}"));
            }
            starts.push(key);
            lines.push(Line { pos, slope });
        }
        Ok(PlrIndex {
            delta,
            n,
            first_key,
            last_key,
            directory: directory(&starts),
            starts,
            lines,
            projection: None,
        })
    }

    /// Decodes a version-2 body: the radix projection, then the version-1 body.
    pub(super) fn decode_radix_body(body: &[u8]) -> Result<PlrIndex, String> {
        let mut d = Decoder::new(body);
        let projection = RadixProjection::decode(&mut d)?;
        let rest = body.get(d.position()..).unwrap_or_default();
        Ok(PlrIndex::decode_body(rest)?.with_projection(projection))
    }
}

impl Index for PlrIndex {
    fn fitted_error_bound(&self) -> Option<u32> {
        Some(PlrIndex::error_bound(self))
    }

    fn search(&self, key: u64) -> Window {
        // first_key < key here, and starts[0] == first_key, so at least one start is <= key.
        self.search_with(key, |key| {
            // The first start above `key` is in `lo ..= hi` (see `RadixTable::range`; an
            // empty directory gives the whole list): search only there.
            let (lo, hi) = self.directory.range(key);
            let candidates = self.starts.get(lo..hi.min(self.starts.len()));
            let above = candidates.map_or_else(
                || self.starts.partition_point(|&s| s <= key),
                |c| lo + c.partition_point(|&s| s <= key),
            );
            above.saturating_sub(1)
        })
    }

    fn max_window(&self) -> u64 {
        2 * u64::from(self.delta) + 1
    }

    fn size_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + self.heap_bytes()
    }

    fn kind(&self) -> IndexKind {
        IndexKind::Plr
    }

    fn len(&self) -> u64 {
        self.n
    }

    fn segments(&self) -> u64 {
        self.starts.len() as u64
    }

    fn encode(&self, out: &mut Vec<u8>) {
        match &self.projection {
            None => put_header(out, IndexKind::Plr),
            Some(projection) => {
                out.extend_from_slice(&[IndexKind::Plr as u8, RADIX_FORMAT_VERSION]);
                projection.encode(out);
            }
        }
        self.encode_body(out);
    }

    fn search_key(&self, key: &[u8], prefix: &[u8]) -> Window {
        match &self.projection {
            None => self.search(super::projection::project_bounded(key, prefix)),
            Some(projection) => self.search(projection.project_bounded(key, prefix)),
        }
    }
}
