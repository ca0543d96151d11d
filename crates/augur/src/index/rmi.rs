//! RMI: the two-layer recursive model index (Kraska et al., "The Case for Learned Index
//! Structures", SIGMOD 2018), in the form CDFShop/SOSD build it (Marcus et al.) with the
//! per-leaf ("local") error bounds that Maltry & Dittrich's analysis (VLDB 2022) recommends.
//! Training is [`super::rmi_fit`], lookup [`super::rmi_model`]; this file holds the entry points
//! the index module dispatches to.
//!
//! # The structure
//!
//! A **root** model (linear, or cubic: [`super::IndexTuning::rmi_root`]) maps a key to one of
//! `L` **leaves** ([`super::IndexTuning::rmi_leaves`], 1..=2^20, or 0 to size it from the error
//! bound: `ceil(n / (δ + 1))` capped at `n` and 2^20, with one retry at 4× the leaves when the
//! largest window exceeds 4·(2δ + 1) and more leaves can split the widest one; see
//! [`super::rmi_fit`]). An explicit leaf count is used as given, even above `n` (leaves then
//! are mostly empty and cost 32 bytes each). Each leaf is a least-squares line over the points routed
//! to it and records, at training time, how far below and above its prediction the lower bound
//! was. The error bound is therefore a property of the data, not a parameter:
//! [`super::documented_max_window`] is `None`, and [`super::Index::max_window`] is the largest
//! window any leaf can return. Windows of badly fitting data (few leaves, clustered keys, long
//! runs of duplicates) can be large; that is the nature of an RMI, and what `L` tunes.
//!
//! # Why every u64 key gets a window containing its lower bound
//!
//! Write `lb(x)` for the lower bound and `route(x)` for the root's leaf. Keys `<= first_key`
//! and `> last_key` are answered without a model (`[0, 1)` and `[n, n + 1)`). For the others:
//!
//! 1. **Routing is monotone**, exactly as computed (not only in real arithmetic): the linear
//!    root is `floor(a + b·dx)` in f64 with `b >= 0`, and IEEE operations under
//!    round-to-nearest are monotone; the cubic root is evaluated exactly in i128 on `dx`
//!    scaled to 24 bits, and its non-decrease is verified exactly on the whole key range at
//!    training and decoding time (a cubic that fails falls back to the linear root). So the
//!    keys routed to leaf `j` form an interval of u64, and the file's positions split into
//!    consecutive ranges: `start_j` = number of positions whose key routes below `j`.
//! 2. **The leaf range holds the lower bound**: for `x` routed to `j`, every position routed
//!    below `j` has a key `< x`, and every position routed above `j` a key `> x`, so
//!    `start_j <= lb(x) <= start_{j+1}` (`= end_j`). An empty leaf (`start_j = end_j`, e.g. a
//!    leaf no key routes to, for keys between two leaves) thus answers `[start_j, start_j + 1)`.
//! 3. **Recorded errors cover absent keys**: like PLR ([`super::plr`]), training uses both ends
//!    of every step of `lb` over `(first_key, last_key]` — `(k_{i−1} + 1, lb)` and `(k_i, lb)` —
//!    each in the leaf it routes to, and records `below = max(q − lb)` and `above = max(lb − q)`
//!    (both at least 0) for the lookup's own `q = floor(clamp(line(dx), start_j, end_j))`. `q` is
//!    monotone in `x`, so between two trained ends of one step (same `lb`) the error lies
//!    between the errors at the ends. A step cut by a leaf boundary needs no trained point on
//!    the cut side: a step entering leaf `j` from the left has `lb = start_j`, which the window's
//!    clamp `lo >= start_j` never excludes as long as `q − below <= start_j`, guaranteed by the
//!    step's trained right end in `j` (`q` only grows); symmetrically a step leaving `j` to the
//!    right has `lb = end_j`, covered via the step's trained left end.
//! 4. The window `[max(q − below, start_j), min(q + above, end_j) + 1)` therefore holds
//!    `lb(x)`, is non-empty (`start_j <= q <= end_j`) and lies in `[0, n + 1)`. Because the
//!    errors are measured on the very f64 computation the lookup repeats, rounding needs no
//!    slack (unlike PLR's analytic bound).
//!
//! Keys are full u64: every model sees `dx = key − first_key` computed in integers (f64 never
//! holds a key); degenerate fits (no key, one key, all keys equal, a zero variance) give flat
//! lines, and non-finite values are rejected at training and decoding.

use super::rmi_fit::RmiBuilder;
use super::rmi_model::RmiIndex;
use super::{Index, IndexBuilder, IndexConfig};

/// A builder for this index type. A leaf count above 2^20 is rejected with `InvalidArgument`
/// by the builder's first `add` (or its `finish`).
pub(super) fn builder(config: &IndexConfig) -> Box<dyn IndexBuilder> {
    Box::new(RmiBuilder::new(config))
}

/// The window bound of an index of `config`, when known before training: never for an RMI,
/// whose errors are recorded from the data.
pub(super) fn documented_max_window(_config: &IndexConfig) -> Option<u64> {
    None
}

/// Decodes the body of an encoding of this type (after the 2 header bytes).
pub(super) fn decode_body(body: &[u8]) -> std::result::Result<Box<dyn Index>, String> {
    Ok(Box::new(RmiIndex::decode_body(body)?))
}

#[cfg(test)]
#[path = "rmi_tests.rs"]
mod tests;
