//! The index zoo: structures that map a key of one sorted file to a small window of positions
//! holding its lower bound. The SSTable reader sees only the [`Index`] trait; this module owns
//! the implementations, their builders and their serialized form (the SSTable's model section,
//! `docs/format/index.md`).
//!
//! Where it sits: on the write path an [`IndexBuilder`] is fed the projected keys of a file in
//! order (streaming, inside the flush/compaction loop or in a background learner) and yields an
//! [`Index`]; on the read path the reader projects the lookup key ([`projection`]), asks
//! [`Index::search`] for a [`Window`], and reads only the records of that window (Bourbon §4.5).
//!
//! # Keys and positions
//!
//! An index works on **u64 projections** of byte keys (see [`projection`]), handed over in
//! non-decreasing order; equal projections are allowed (distinct byte keys may share one, and an
//! internal-key file holds several versions of one user key). Positions are `0..n`. For a u64
//! `key`, `lb(key)` is the first position whose projection is `>= key`, or `n` when there is
//! none.
//!
//! # The window contract
//!
//! For **every** u64 `key` — present, absent, before the first key, after the last key, between
//! two PLR segments — `search(key)` returns `Window { lo, hi }` with
//!
//! ```text
//! lo <= lb(key) < hi <= n + 1        and        hi - lo <= max_window()
//! ```
//!
//! Position `n` stands for "past the end": when `lb(key) = n` the window is `[lo, n + 1)`. A
//! reader therefore looks at the records `[lo, min(hi, n))`: the first one whose projection is
//! `>= key` is `lb(key)`; when there is none, `lb(key) = n` (then necessarily `hi = n + 1`).
//!
//! # Byte keys sharing a projection
//!
//! For a byte key `k` with projection `x`, every record whose projection is `< x` is `< k` and
//! every record whose projection is `> x` is `> k` (the projection is monotone). So the byte-key
//! lower bound of `k` lies in the run of records whose projection equals `x`, starting at
//! `lb(x)`. The index locates the start of that run; a run of equal projections may extend past
//! the window, and the reader scans forward while projections are equal (DESIGN.md, "Key
//! projection").

pub mod chooser;
mod cht;
pub mod fence;
pub mod fiting;
pub mod pgm;
pub mod pgm_fit;
pub mod plex;
mod plex_tune;
pub mod plr;
pub mod plr_model;
pub mod projection;
pub mod radix_projection;
pub mod radix_spline;
pub mod rmi;
pub mod rmi_fit;
pub mod rmi_model;
mod spline;
mod step_feed;
pub mod string_tree;

#[cfg(test)]
mod string_tree_tests;
#[cfg(test)]
mod tests;

use crate::error::{Error, Result};
use std::path::Path;

/// Format version of every index encoding written by this build (the second header byte).
pub const FORMAT_VERSION: u8 = 1;

/// The largest number of keys an index accepts. Positions then fit in 41 bits with the error
/// bound added, which keeps the PLR model's `f64` predictions exact to well under one position
/// (see [`plr_model`]).
pub const MAX_KEYS: u64 = 1 << 40;

/// Half-open window of positions `[lo, hi)`; see the module docs for the contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Window {
    /// First position of the window.
    pub lo: u64,
    /// One past the last position of the window (at most `n + 1`).
    pub hi: u64,
}

impl Window {
    /// Number of positions in the window.
    pub fn len(&self) -> u64 {
        self.hi.saturating_sub(self.lo)
    }

    /// True when the window holds no position (never returned by [`Index::search`]).
    pub fn is_empty(&self) -> bool {
        self.hi <= self.lo
    }

    /// True when `pos` lies in `[lo, hi)`.
    pub fn contains(&self, pos: u64) -> bool {
        self.lo <= pos && pos < self.hi
    }
}

/// A built index over the projected keys of one file. Immutable; safe to share across threads.
pub trait Index: Send + Sync + std::fmt::Debug {
    /// Returns a window `[lo, hi)` with `lo <= lb(key) < hi <= n + 1` and
    /// `hi - lo <= self.max_window()`, for any u64 `key` (module docs).
    fn search(&self, key: u64) -> Window;
    /// The largest window [`Index::search`] can return (a property of the structure's
    /// parameters: `2δ + 1` for PLR, the stride for fence pointers).
    fn max_window(&self) -> u64;
    /// Exact memory held by the structure: its inline size plus the capacity of its buffers.
    fn size_bytes(&self) -> usize;
    /// Which index type this is.
    fn kind(&self) -> IndexKind;
    /// Number of keys (positions) it was built over.
    fn len(&self) -> u64;
    /// True when it was built over no key.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Number of pieces it consists of: PLR segments, or fence pointers. A statistic.
    fn segments(&self) -> u64;
    /// The error bound δ it was fitted to, for the types fitted to one (PLR, PGM,
    /// RadixSpline, FITing-Tree, PLEX, the string tree); `None` for fence pointers and RMI,
    /// whose windows follow from their structure. A statistic (inspection tools show it).
    fn fitted_error_bound(&self) -> Option<u32> {
        None
    }
    /// Appends the serialized form (header included) to `out`; [`decode`] reads it back.
    fn encode(&self, out: &mut Vec<u8>);
    /// The window of a byte `key` of a file whose keys share `prefix` (their common prefix):
    /// the window of its projection ([`projection::project_bounded`]) for the integer models,
    /// whose runs of equal projections the reader scans past; a string model
    /// ([`string_tree`]) answers over the key's bytes, its window holding the start of a run
    /// of at most `run_limit` keys that holds the byte-key lower bound.
    fn search_key(&self, key: &[u8], prefix: &[u8]) -> Window {
        self.search(projection::project_bounded(key, prefix))
    }
}

/// Builds an [`Index`] in one streaming pass over a file's projected keys.
pub trait IndexBuilder: Send {
    /// Adds the projection of the next key (position = number of keys added so far).
    ///
    /// # Errors
    /// REQUIRES non-decreasing keys: a key smaller than the previous one, or more than
    /// [`MAX_KEYS`] keys, gives `InvalidArgument` (and so does every later call and `finish`).
    fn add(&mut self, key: u64) -> Result<()>;
    /// Adds the projections of the next keys, in order: the same as calling [`add`] on each,
    /// without a dynamic call per key (types whose fit is a tight loop override it).
    ///
    /// # Errors
    /// As [`add`].
    ///
    /// [`add`]: IndexBuilder::add
    fn add_all(&mut self, keys: &[u64]) -> Result<()> {
        keys.iter().try_for_each(|&k| self.add(k))
    }
    /// Finishes the index.
    ///
    /// # Errors
    /// `InvalidArgument` if the configuration was invalid or an `add` failed.
    fn finish(self: Box<Self>) -> Result<Box<dyn Index>>;
}

/// The index types. The discriminant is the first byte of the encoding.
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum IndexKind {
    /// Fence pointers over projections: the baseline binary search ([`fence`]).
    Fence = 1,
    /// Bourbon's Greedy-PLR piecewise linear model ([`plr`], [`plr_model`]).
    Plr = 2,
    /// PGM-index: optimal piecewise linear approximation with recursive levels ([`pgm`]).
    Pgm = 3,
    /// RadixSpline: greedy spline with a radix table over its points ([`radix_spline`]).
    RadixSpline = 4,
    /// Two-layer recursive model index with per-leaf recorded errors ([`rmi`]).
    Rmi = 5,
    /// FITing-Tree: greedy segments indexed by a B+-tree ([`fiting`]).
    Fiting = 6,
    /// PLEX: spline points indexed by a self-tuned compact radix tree ([`plex`]).
    Plex = 7,
    /// String tree: Greedy-PLR segments over the bytes past each region's shared prefix, a
    /// tree of them where keys share more ([`string_tree`]).
    StringTree = 8,
}

impl IndexKind {
    /// The kind whose discriminant is `byte`, if this build knows it.
    pub fn from_u8(byte: u8) -> Option<IndexKind> {
        match byte {
            1 => Some(IndexKind::Fence),
            2 => Some(IndexKind::Plr),
            3 => Some(IndexKind::Pgm),
            4 => Some(IndexKind::RadixSpline),
            5 => Some(IndexKind::Rmi),
            6 => Some(IndexKind::Fiting),
            7 => Some(IndexKind::Plex),
            8 => Some(IndexKind::StringTree),
            _ => None,
        }
    }

    /// Every kind, in discriminant order.
    pub const ALL: [IndexKind; 8] = [
        IndexKind::Fence,
        IndexKind::Plr,
        IndexKind::Pgm,
        IndexKind::RadixSpline,
        IndexKind::Rmi,
        IndexKind::Fiting,
        IndexKind::Plex,
        IndexKind::StringTree,
    ];

    /// A short lowercase name (`fence`, `plr`, `pgm`, `rs`, `rmi`, `fiting`, `plex`,
    /// `string`), as the CLI flag spells it.
    pub fn name(self) -> &'static str {
        match self {
            IndexKind::Fence => "fence",
            IndexKind::Plr => "plr",
            IndexKind::Pgm => "pgm",
            IndexKind::RadixSpline => "rs",
            IndexKind::Rmi => "rmi",
            IndexKind::Fiting => "fiting",
            IndexKind::Plex => "plex",
            IndexKind::StringTree => "string",
        }
    }

    /// The kind named `name` (as [`IndexKind::name`] spells it).
    pub fn from_name(name: &str) -> Option<IndexKind> {
        IndexKind::ALL.into_iter().find(|k| k.name() == name)
    }
}

/// The root model of an RMI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum RmiRoot {
    /// A linear root model (default).
    #[default]
    Linear,
    /// A cubic root model.
    Cubic,
}

/// Type-specific parameters of the index zoo; [`IndexConfig::error_bound`] is the shared
/// position boundary. Each field is used by one type only and documented there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IndexTuning {
    /// PGM: error bound ε of the recursive levels over the segment keys (≥ 1). Default 4.
    pub pgm_recursive_error: u32,
    /// RadixSpline: bits of the radix table over the spline points (1..=24). Default 18.
    pub radix_bits: u32,
    /// RMI: number of leaf models (1..=2^20), or 0 to size it from the error bound. Default 0.
    pub rmi_leaves: u32,
    /// RMI: the root model. Default linear.
    pub rmi_root: RmiRoot,
    /// FITing-Tree: fanout of the B+-tree over the segments (2..=256). Default 16.
    pub fiting_fanout: u32,
    /// String tree: keys a node keeps per projection before the run gets a child (≥ 1).
    /// Default 16.
    pub string_run_limit: u32,
}

impl Default for IndexTuning {
    fn default() -> Self {
        IndexTuning {
            pgm_recursive_error: 4,
            radix_bits: 18,
            rmi_leaves: 0,
            rmi_root: RmiRoot::Linear,
            fiting_fanout: 16,
            string_run_limit: string_tree::DEFAULT_RUN_LIMIT,
        }
    }
}

/// Which index to build and with which parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexConfig {
    /// The index type.
    pub kind: IndexKind,
    /// PLR error bound δ: every prediction is within δ positions of the lower bound
    /// (windows hold at most `2δ + 1` positions). Default 8, as in Bourbon.
    pub error_bound: u32,
    /// Keys per fence pointer (must be at least 1). Default 64.
    pub fence_stride: u32,
    /// Parameters of the other index types.
    pub tuning: IndexTuning,
}

impl Default for IndexConfig {
    /// Greedy-PLR with δ = 8 (Bourbon's setting) and a fence stride of 64.
    fn default() -> Self {
        IndexConfig {
            kind: IndexKind::Plr,
            error_bound: 8,
            fence_stride: 64,
            tuning: IndexTuning::default(),
        }
    }
}

/// Returns a builder for the index `config` describes. An invalid configuration (a fence stride
/// of 0) is reported by the builder's first `add` or its `finish`.
pub fn builder(config: &IndexConfig) -> Box<dyn IndexBuilder> {
    match config.kind {
        IndexKind::Fence => Box::new(fence::FenceBuilder::new(config.fence_stride)),
        IndexKind::Plr => Box::new(plr::PlrBuilder::new(config.error_bound)),
        IndexKind::Pgm => pgm::builder(config),
        IndexKind::RadixSpline => radix_spline::builder(config),
        IndexKind::Rmi => rmi::builder(config),
        IndexKind::Fiting => fiting::builder(config),
        IndexKind::Plex => plex::builder(config),
        IndexKind::StringTree => Box::new(KeysOnly),
    }
}

/// The [`IndexBuilder`] of the string tree, which is trained from keys ([`train_keys`]), not
/// from projections: every call fails.
struct KeysOnly;

impl IndexBuilder for KeysOnly {
    fn add(&mut self, _key: u64) -> Result<()> {
        Err(keys_only())
    }

    fn finish(self: Box<Self>) -> Result<Box<dyn Index>> {
        Err(keys_only())
    }
}

fn keys_only() -> Error {
    Error::InvalidArgument("a string tree is trained from keys, not projections".into())
}

/// The integer model of the string tree's segments under `config` (Greedy-PLR at its error
/// bound): what a level model over projections uses when files use string trees.
pub fn string_node_config(config: &IndexConfig) -> IndexConfig {
    IndexConfig {
        kind: IndexKind::Plr,
        ..*config
    }
}

/// Trains an index of `config` over `keys`, the keys of one file in order with their common
/// prefix removed: a string tree over their bytes; PLR over their projections
/// ([`projection::project`] at 0), or a string tree of PLR segments where the projections
/// collide and the tree is cheaper ([`chooser::plr_over_keys`]); any other kind over their
/// projections.
///
/// # Errors
/// As the builders': keys out of order, too many keys, an invalid configuration.
pub fn train_keys(config: &IndexConfig, keys: &[&[u8]]) -> Result<Box<dyn Index>> {
    match config.kind {
        IndexKind::StringTree => {
            let tree = string_tree::StringTree::build(
                keys,
                config.error_bound,
                config.tuning.string_run_limit,
            )?;
            Ok(Box::new(tree))
        }
        IndexKind::Plr => chooser::plr_over_keys(keys, config),
        _ => {
            let projected: Vec<u64> = keys.iter().map(|k| projection::project(k, 0)).collect();
            let mut b = builder(config);
            b.add_all(&projected)?;
            b.finish()
        }
    }
}

/// The largest window an index of `config` can return, when it is known before training (it
/// is then exactly [`Index::max_window`] of every index built with `config`); `None` for types
/// whose bound comes from the data (RMI records its errors while it trains).
pub fn documented_max_window(config: &IndexConfig) -> Option<u64> {
    match config.kind {
        IndexKind::Fence => Some(u64::from(config.fence_stride)),
        IndexKind::Plr => Some(2 * u64::from(config.error_bound) + 1),
        IndexKind::Pgm => pgm::documented_max_window(config),
        IndexKind::RadixSpline => radix_spline::documented_max_window(config),
        IndexKind::Rmi => rmi::documented_max_window(config),
        IndexKind::Fiting => fiting::documented_max_window(config),
        IndexKind::Plex => plex::documented_max_window(config),
        // Segments' windows, or a node no wider than one.
        IndexKind::StringTree => Some(2 * u64::from(config.error_bound) + 1),
    }
}

/// Decodes an index written by [`Index::encode`]. `file` and `offset` (the model section's
/// position in its file) only label errors.
///
/// # Errors
/// - `UnsupportedVersion` for a format version this build does not read, or an unknown kind
///   (then `version` is `kind << 8 | format_version`): the caller falls back to the fence path.
/// - `Corruption` (naming `file` and `offset`) for malformed bytes: truncation, trailing bytes,
///   out-of-range parameters, keys or positions out of order. Never panics.
pub fn decode(bytes: &[u8], file: &Path, offset: u64) -> Result<Box<dyn Index>> {
    let (Some(&kind_byte), Some(&version)) = (bytes.first(), bytes.get(1)) else {
        return Err(Error::corruption(file, offset, "index: missing header"));
    };
    let Some(kind) = IndexKind::from_u8(kind_byte) else {
        return Err(Error::UnsupportedVersion {
            file: file.to_path_buf(),
            version: u32::from(kind_byte) << 8 | u32::from(version),
        });
    };
    let plr_radix = kind == IndexKind::Plr && version == plr_model::RADIX_FORMAT_VERSION;
    if version != FORMAT_VERSION && !plr_radix {
        return Err(Error::UnsupportedVersion {
            file: file.to_path_buf(),
            version: u32::from(version),
        });
    }
    let body = bytes.get(2..).unwrap_or_default();
    let corrupt = |reason: String| Error::corruption(file, offset, format!("index: {reason}"));
    match kind {
        IndexKind::Fence => Ok(Box::new(
            fence::FenceIndex::decode_body(body).map_err(corrupt)?,
        )),
        IndexKind::Plr if plr_radix => Ok(Box::new(
            plr_model::PlrIndex::decode_radix_body(body).map_err(corrupt)?,
        )),
        IndexKind::Plr => Ok(Box::new(
            plr_model::PlrIndex::decode_body(body).map_err(corrupt)?,
        )),
        IndexKind::Pgm => pgm::decode_body(body).map_err(corrupt),
        IndexKind::RadixSpline => radix_spline::decode_body(body).map_err(corrupt),
        IndexKind::Rmi => rmi::decode_body(body).map_err(corrupt),
        IndexKind::Fiting => fiting::decode_body(body).map_err(corrupt),
        IndexKind::Plex => plex::decode_body(body).map_err(corrupt),
        IndexKind::StringTree => Ok(Box::new(
            string_tree::StringTree::decode_body(body).map_err(corrupt)?,
        )),
    }
}

/// `⌈x⌉` as a position: 0 for negative `x` (and NaN), saturating above `u64::MAX`. By hand,
/// because `f64::ceil` is a libm call on baseline x86-64 and this is on every lookup.
#[inline]
pub(crate) fn ceil_position(x: f64) -> u64 {
    let floor = x as u64; // `as` truncates (= floors) non-negatives, saturates negatives to 0
    floor.saturating_add(u64::from((floor as f64) < x))
}

/// Appends the two header bytes (kind, format version).
fn put_header(out: &mut Vec<u8>, kind: IndexKind) {
    out.push(kind as u8);
    out.push(FORMAT_VERSION);
}

/// Tracks the order and count of the keys fed to a builder.
#[derive(Debug, Clone, Default)]
struct KeyOrder {
    /// The previous key, if any.
    prev: Option<u64>,
    /// Keys accepted so far.
    count: u64,
    /// Set once a call failed; every later call fails too.
    failed: Option<String>,
}

impl KeyOrder {
    /// Checks `key` against the previous one and the key limit; on success returns whether it is
    /// a new distinct key and counts it.
    #[inline]
    fn accept(&mut self, key: u64) -> Result<bool> {
        if let Some(reason) = &self.failed {
            return Err(Error::InvalidArgument(reason.clone()));
        }
        if self.count >= MAX_KEYS {
            return Err(self.fail(format!("index: more than {MAX_KEYS} keys")));
        }
        let distinct = match self.prev {
            Some(prev) if key < prev => {
                return Err(self.fail(format!(
                    "index: keys must be non-decreasing, got {key} after {prev} at position {}",
                    self.count
                )));
            }
            Some(prev) => key != prev,
            None => true,
        };
        self.prev = Some(key);
        self.count += 1;
        Ok(distinct)
    }

    /// Records a failure and returns it as an error.
    fn fail(&mut self, reason: String) -> Error {
        self.failed = Some(reason.clone());
        Error::InvalidArgument(reason)
    }

    /// Takes a sorted batch in one tight loop: calls `step(prev, key, pos)` for each key that
    /// differs from the one before it (`prev` is `None` for the builder's very first key),
    /// with `pos` its position, as [`KeyOrder::accept`] per key would. Returns false, taking
    /// nothing, unless the whole batch is acceptable (no earlier failure, within the key
    /// limit, non-decreasing from the previous key on); the caller then falls back to
    /// `accept` per key, which reports the exact error.
    #[inline(always)]
    fn take_steps(&mut self, keys: &[u64], mut step: impl FnMut(Option<u64>, u64, u64)) -> bool {
        let acceptable = self.failed.is_none()
            && self.count.saturating_add(keys.len() as u64) <= MAX_KEYS
            && match (self.prev, keys.first()) {
                (Some(prev), Some(&first)) => prev <= first,
                _ => true,
            }
            && keys.windows(2).all(|w| w[0] <= w[1]);
        if !acceptable {
            return false;
        }
        let mut pos = self.count;
        let (mut prev, rest) = match (self.prev, keys.split_first()) {
            (_, None) => return true,
            (Some(prev), Some(_)) => (prev, keys),
            (None, Some((&first, rest))) => {
                step(None, first, pos);
                pos += 1;
                (first, rest)
            }
        };
        // `prev` is a plain key here, so the per-key test is one comparison.
        for &key in rest {
            if key != prev {
                step(Some(prev), key, pos);
                prev = key;
            }
            pos += 1;
        }
        self.prev = Some(prev);
        self.count = pos;
        true
    }

    /// Errors if any call failed.
    fn check(&self) -> Result<()> {
        match &self.failed {
            Some(reason) => Err(Error::InvalidArgument(reason.clone())),
            None => Ok(()),
        }
    }
}
