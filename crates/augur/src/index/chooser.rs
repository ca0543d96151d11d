//! The model chooser (`--index=auto`): per file, pick the way of locating keys that a cost
//! model predicts to be fastest for that file's keys, within a model-memory budget: one of
//! the learned indexes, or none at all — the table's own fence path (a binary search over
//! its blocks' last keys, then a bisection of one block), which costs no model memory and
//! which every model must beat by a margin to be kept.
//!
//! # Candidates
//!
//! Over projected keys ([`choose`]): fence pointers at δ (stride `2δ + 1`), Greedy-PLR at δ,
//! 2δ, 4δ, … (doubling while a wider bound can still pay), and PGM at δ (fewer segments than
//! PLR at the same bound, for the files where PLR's segments are too many for the budget).
//! Candidates larger than the budget are dropped; when nothing else fits, fence pointers are
//! kept whatever their size.
//!
//! Over byte keys ([`choose_keys`], what tables use): [`choose`]'s pick; the model of the
//! configured kind (`--index plr`'s, [`super::train_keys`]); and, where the keys'
//! projections collide (string keys that share their first bytes: paths, URLs, composite
//! keys — an integer model's window then holds only the start of a run of equal projections
//! and the reader gallops through the run), string trees ([`super::string_tree`]) at the
//! configured bound and run limit and at two and four times both. Each candidate's locate
//! cost is measured on a sample of the keys, collisions included. Then:
//!
//! 1. the cheapest candidate within the budget is picked — every budget is a hard cap, so
//!    under the default (`fence`) a file's model never takes more memory than fence
//!    pointers that tell its keys apart (session 37: the configured kind's model used to
//!    pass that budget as "the floor": on reversed domains its 163 KB tree against 93 KB of
//!    such fence pointers, for lookups that measured no faster than the fence path);
//! 2. the floor (the configured kind's model) is kept instead when it fits and the pick is
//!    not cheaper by [`FLOOR_MARGIN`]: `auto` trades the default index for a smaller or
//!    different one only where that is clearly no slower;
//! 3. no model is kept — the table's fence path, [`fence_path_cost`] — unless the pick is
//!    cheaper than it by [`FENCE_PATH_MARGIN`].
//!
//! # Cost model
//!
//! In units of one cache miss on a file's slots ([`SLOT_MISS`], about 90 ns on the
//! development machine, where the data is in the last-level cache but not nearer), a lookup
//! costs its search (in memory) plus its locate (over the slots):
//!
//! ```text
//! integer model:  MODEL_STEP · log2(segments) + EVAL + model misses
//! string tree:    MODEL_STEP · (depth − 1 + segment steps) + REDIRECT_CHECK · redirects + EVAL
//!                 + model misses
//! model misses:   MODEL_MISS · log2(model bytes / MODEL_CACHE_BYTES), when positive
//! locate, window of w slots whose lower bound lies e slots from its middle:
//!   w ≤ LINEAR_SCAN_SLOTS:  MODEL_PATH + SLOT_MISS + SCAN_COMPARE · (|e| + 2)   (scanned outward)
//!   w > LINEAR_SCAN_SLOTS:  MODEL_PATH + SLOT_MISS + PROBE · log2(w)            (bisected)
//!   lower bound g slots past the window:  + 2 · PROBE · log2(g + 2)             (a gallop)
//! fence path:     FENCE_COMPARE(shared bytes) · log2(blocks) + fence index misses
//!                 + SLOT_MISS + BLOCK_PROBE · log2(block records)
//! ```
//!
//! The reader scans windows of at most [`LINEAR_SCAN_SLOTS`] slots outward from their
//! middle (one or two cache lines, compares that do not wait on memory) and bisects wider
//! ones (each probe a dependent load, often of another line), so a window just past that
//! width costs far more than one just under it: the old model priced every doubling of a
//! window at one step and never saw it. A model larger than the cache share it gets
//! ([`MODEL_CACHE_BYTES`]) misses on the lower levels of its own search. The fence path's
//! key compares run over the fence pointers' keys in memory and cost more the more bytes
//! neighbouring keys share. The weights were fitted on lookups in the engine
//! (`examples/read_paths_bench.rs`) over package paths, reversed domains, English words,
//! composite keys and `key:%012d` (docs/benchmarks/string-keys.md, "Auto chooser against
//! the fence path"), and refitted in session 35 on the machine of that time (same file, "The
//! string tree's projection in one load"). The choice is deterministic for given keys,
//! configuration and budget.

use super::plr::PlrBuilder;
use super::radix_projection::RadixProjection;
use super::string_tree::StringTree;
use super::{builder, Index, IndexBuilder, IndexConfig, IndexKind, Window};
use crate::error::{Error, Result};

/// How much memory the chooser may spend on one file's model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ModelBudget {
    /// No limit: the fastest predicted candidate.
    Unlimited,
    /// The memory of fence pointers at the file's error bound (stride `2δ + 1`): auto then
    /// never uses more model memory than `--index=fence` would.
    FencePointers,
    /// At most this many bytes of model per key of the file (a total budget spread over the
    /// keys: every file gets its share by its size).
    BytesPerKey(f64),
}

impl ModelBudget {
    /// Parses `unlimited`, `fence` or a number of bytes per key (`0.5`).
    ///
    /// # Errors
    /// `InvalidArgument` naming the value when it is none of these, negative or not finite.
    pub fn parse(s: &str) -> Result<ModelBudget> {
        match s {
            "unlimited" => Ok(ModelBudget::Unlimited),
            "fence" => Ok(ModelBudget::FencePointers),
            _ => match s.parse::<f64>() {
                Ok(b) if b.is_finite() && b >= 0.0 => Ok(ModelBudget::BytesPerKey(b)),
                _ => Err(Error::InvalidArgument(format!(
                    "model_memory_budget: expected unlimited, fence or bytes per key >= 0, got {s:?}"
                ))),
            },
        }
    }
}

impl std::fmt::Display for ModelBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ModelBudget::Unlimited => f.write_str("unlimited"),
            ModelBudget::FencePointers => f.write_str("fence"),
            ModelBudget::BytesPerKey(b) => write!(f, "{b}"),
        }
    }
}

/// Cost of the first touch of a window's (or a block's) slots: one cache miss, the unit.
pub const SLOT_MISS: f64 = 1.0;
/// Cost of one slot compare of a scanned window (the slots in lines already loaded).
pub const SCAN_COMPARE: f64 = 0.12;
/// Cost of one probe of a bisected window, or of a gallop: a compare that waits on its load.
pub const PROBE: f64 = 0.4;
/// Cost of each more block a window's search touches: the block's slots are not
/// prefetched (a cold line, often a page walk: blocks lie apart, their values between),
/// and the probe is matched against that block's prefix again.
pub const BLOCK_SWITCH: f64 = 2.5;
/// Entries per block assumed where the chooser does not know the table's
/// (`Options::block_records`' default).
pub const DEFAULT_BLOCK_RECORDS: usize = 64;
/// Cost of one probe of the fence path's bisection of a block (not prefetched).
pub const BLOCK_PROBE: f64 = 0.4;
/// Cost of the model path's own work around the window: the prefetch of its lines and the
/// value's guessed line, the clamp to the file.
pub const MODEL_PATH: f64 = 0.3;
/// Cost of one binary-search step over a model's in-memory array.
pub const MODEL_STEP: f64 = 0.1;
/// Cost of evaluating a line (a multiplication, a clamp) on top of finding its segment.
pub const EVAL: f64 = 0.15;
/// Cost of one redirect lookup at a node with children (a hash slot and a projection in
/// arrays that are hot only near the root). Refitted in session 35 once a level's
/// projection became one word load (a tree level measured ~13 ns in the engine, a quarter
/// of a slot miss with its [`MODEL_STEP`]).
pub const REDIRECT_CHECK: f64 = 0.15;
/// Cost of one more level of a model's search that misses the cache (per doubling of its
/// bytes past [`MODEL_CACHE_BYTES`]).
pub const MODEL_MISS: f64 = 0.9;
/// The bytes of one file's in-memory index (its model, or its fence pointers) that stay in
/// cache beside the data the lookups touch and the other files of its level.
pub const MODEL_CACHE_BYTES: f64 = 128.0 * 1024.0;
/// Bytes the table's fence index keeps per block besides the block's last key (the block's
/// bounds and checksums, the key's end, its trailer, the block prefix's length).
pub const FENCE_BLOCK_BYTES: f64 = 46.0;
/// Cost of one key compare of the fence path's search over its blocks' last keys.
pub const FENCE_COMPARE: f64 = 0.12;
/// Cost per byte the compared keys share, on top of [`FENCE_COMPARE`]: small, the compare
/// runs over vector-wide words (refitted in session 35: the fence search of package paths,
/// whose neighbours share 41 bytes, costs per unit of the model what the other sets' does).
pub const FENCE_COMPARE_BYTE: f64 = 0.0005;
/// How much cheaper than the table's fence path a model must be predicted to be kept.
pub const FENCE_PATH_MARGIN: f64 = 0.5;
/// How much cheaper than the configured kind's model another candidate must be predicted to
/// replace it.
pub const FLOOR_MARGIN: f64 = 0.25;
/// Windows of at most this many slots are scanned slot by slot outward from their middle;
/// wider ones are bisected (the reader's rule, `sst::reader`).
pub const LINEAR_SCAN_SLOTS: u64 = 24;

/// Cost of projecting a key through a radix projection, per key position it reads (a
/// compare and a multiply-add, no load beyond the key's own line).
pub const RADIX_DIGIT: f64 = 0.01;

/// The largest error bound the chooser tries for PLR (windows of 2049 slots).
const MAX_DELTA: u32 = 1024;

/// `log2(n)` for a count (0 for 0 and 1).
fn log2(n: f64) -> f64 {
    n.max(1.0).log2()
}

/// What the misses of a model of `bytes` bytes add to its search.
fn model_misses(bytes: usize) -> f64 {
    MODEL_MISS * log2(bytes as f64 / MODEL_CACHE_BYTES)
}

/// The search cost of an integer index (over projections): its binary search, its line,
/// its misses.
fn integer_search_cost(index: &dyn Index) -> f64 {
    let eval = if index.kind() == IndexKind::Fence {
        0.0
    } else {
        EVAL
    };
    MODEL_STEP * log2(index.segments() as f64) + eval + model_misses(index.size_bytes())
}

/// The locate cost of windows of at most `width` slots, their lower bounds spread evenly
/// over them (the mean distance from the middle is a quarter of the width), in blocks of
/// [`DEFAULT_BLOCK_RECORDS`].
fn window_cost(width: u64) -> f64 {
    let block = DEFAULT_BLOCK_RECORDS as f64;
    let (search, span) = if width <= LINEAR_SCAN_SLOTS {
        let compares = width as f64 / 4.0 + 2.0;
        (SCAN_COMPARE * compares, compares / block)
    } else {
        (PROBE * log2(width as f64), (width as f64 - 1.0) / block)
    };
    MODEL_PATH + SLOT_MISS + search + BLOCK_SWITCH * span.min(1.0)
}

/// The predicted lookup cost of `index` over projections that do not collide (module docs).
pub fn predicted_cost(index: &dyn Index) -> f64 {
    integer_search_cost(index) + window_cost(index.max_window())
}

/// The locate cost of finding lower bound `lb` from `window` in a file of `n` slots stored
/// `block_records` to a block, as the reader does it: the window (clamped to the file)
/// scanned outward from its middle when narrow, else bisected; then, when `lb` lies past it
/// (in a run of equal projections), a gallop to it; plus each more block the slots read lie
/// in.
pub fn locate_cost(window: Window, lb: u64, n: u64, block_records: u64) -> f64 {
    let block = |pos: u64| pos / block_records.max(1);
    let (lo, hi) = (window.lo.min(n), window.hi.min(n));
    let width = hi.saturating_sub(lo);
    let mut cost = MODEL_PATH + SLOT_MISS;
    let (first, last);
    if width <= LINEAR_SCAN_SLOTS {
        let mid = lo + width / 2;
        let end = lb.min(hi);
        cost += SCAN_COMPARE * (end.abs_diff(mid) + 2) as f64;
        // The scan reads from the middle to the lower bound, and the slot before it.
        (first, last) = (mid.min(end).saturating_sub(1).max(lo), mid.max(end));
    } else {
        cost += PROBE * log2(width as f64);
        (first, last) = (lo, hi.saturating_sub(1));
    }
    let mut blocks = block(last.min(n.saturating_sub(1))).saturating_sub(block(first));
    if lb >= hi && hi < n {
        cost += 2.0 * PROBE * log2((lb - hi + 2) as f64);
        blocks += block(lb.min(n - 1)).saturating_sub(block(last));
    }
    cost + BLOCK_SWITCH * blocks as f64
}

/// The predicted cost of a lookup on the table's own fence path over `keys` (the file's keys
/// in order, without its common prefix) stored `block_records` to a block: a binary search
/// over the blocks' last keys, whose compares cost more the more bytes keys a block apart
/// share (measured on a sample) and which misses the cache as a model of the fence index's
/// bytes would, then a bisection of the block's slots.
pub fn fence_path_cost(keys: &[&[u8]], block_records: usize) -> f64 {
    let n = keys.len();
    if n == 0 {
        return 0.0;
    }
    let per_block = block_records.clamp(1, n);
    let blocks = n.div_ceil(per_block);
    let step = (n / SAMPLES).max(1);
    let (mut shared, mut bytes, mut count) = (0usize, 0usize, 0usize);
    for i in (0..n).step_by(step) {
        let j = (i + per_block).min(n - 1);
        shared += super::projection::common_prefix_len(keys[i], keys[j]);
        bytes += keys[i].len();
        count += 1;
    }
    let count = count.max(1) as f64;
    let (shared, key_bytes) = (shared as f64 / count, bytes as f64 / count);
    let index_bytes = blocks as f64 * (FENCE_BLOCK_BYTES + key_bytes);
    (FENCE_COMPARE + FENCE_COMPARE_BYTE * shared) * log2(blocks as f64)
        + MODEL_MISS * log2(index_bytes / MODEL_CACHE_BYTES)
        + SLOT_MISS
        + BLOCK_PROBE * log2(per_block as f64)
}

/// The byte budget of a file of `keys` keys whose fence pointers at the configured bound take
/// `fence_bytes`.
fn budget_bytes(budget: ModelBudget, keys: usize, fence_bytes: usize) -> usize {
    match budget {
        ModelBudget::Unlimited => usize::MAX,
        ModelBudget::FencePointers => fence_bytes,
        ModelBudget::BytesPerKey(b) => (b * keys as f64) as usize,
    }
}

fn build(
    config: &IndexConfig,
    kind: IndexKind,
    delta: u32,
    keys: &[u64],
) -> Result<Box<dyn Index>> {
    let mut b = builder(&IndexConfig {
        kind,
        error_bound: delta,
        fence_stride: 2 * delta + 1,
        ..*config
    });
    b.add_all(keys)?;
    b.finish()
}

/// Builds the candidates over `keys` (projected, non-decreasing) around `config`'s error
/// bound and returns the one with the lowest predicted cost within `budget`.
///
/// # Errors
/// `InvalidArgument` when the keys are out of order or the configuration is invalid.
pub fn choose(keys: &[u64], config: &IndexConfig, budget: ModelBudget) -> Result<Box<dyn Index>> {
    let delta = config.error_bound;
    let fence = build(config, IndexKind::Fence, delta, keys)?;
    let limit = budget_bytes(budget, keys.len(), fence.size_bytes());
    let mut best = fence;
    let mut best_cost = predicted_cost(best.as_ref());
    // Keeps `candidate` when it fits and beats the best so far; returns its cost.
    let mut consider = |candidate: Box<dyn Index>| -> f64 {
        let cost = predicted_cost(candidate.as_ref());
        if candidate.size_bytes() <= limit && cost < best_cost {
            best_cost = cost;
            best = candidate;
        }
        cost
    };
    // PLR from δ up, doubling while the model is over the budget or still getting cheaper:
    // a doubling widens the window, so it pays only where segments shrink a lot.
    let (mut d, mut last_fitting_cost, mut fits_at_delta) = (delta, None, false);
    loop {
        let plr = build(config, IndexKind::Plr, d, keys)?;
        let (segments, fits) = (plr.segments(), plr.size_bytes() <= limit);
        let cost = consider(plr);
        if fits {
            fits_at_delta |= d == delta;
            if last_fitting_cost.is_some_and(|last| cost >= last) {
                break;
            }
            last_fitting_cost = Some(cost);
        }
        if segments <= 1 || d >= MAX_DELTA {
            break;
        }
        d = d.saturating_mul(2).max(1);
    }
    // PGM's optimal segments are fewer than PLR's at the same bound: tried where PLR's are
    // too many for the budget at the configured bound.
    if !fits_at_delta {
        consider(build(config, IndexKind::Pgm, delta, keys)?);
    }
    Ok(best)
}

/// Sampled keys per file when the chooser measures windows (over byte keys).
const SAMPLES: usize = 4096;

/// Projections shared this much (mean slot steps of galloping through runs of equal
/// projections, per lookup) make integer models pay for collisions: string trees are tried.
const COLLIDING: f64 = 0.05;

/// Slot steps of galloping from a window ending at `hi` to the lower bound `lb` (two steps
/// per doubling), 0 when `lb` lies inside the window.
fn gallop_steps(hi: u64, lb: u64) -> f64 {
    if lb >= hi {
        2.0 * ((lb - hi + 2) as f64).log2()
    } else {
        0.0
    }
}

/// Calls `f(window, lower bound)` for a sample of `keys` (each key's lower bound is its
/// first position) searched through `search`, and returns the mean of what it returns.
fn sampled_mean(
    keys: &[&[u8]],
    search: impl Fn(usize) -> Window,
    f: impl Fn(Window, u64) -> f64,
) -> f64 {
    if keys.is_empty() {
        return 0.0;
    }
    let step = (keys.len() / SAMPLES).max(1);
    let mut total = 0.0;
    let mut count = 0usize;
    for i in (0..keys.len()).step_by(step) {
        let mut lb = i;
        while lb > 0 && keys[lb - 1] == keys[i] {
            lb -= 1;
        }
        total += f(search(i), lb as u64);
        count += 1;
    }
    total / count as f64
}

/// Mean locate cost ([`locate_cost`]) of a sample of `keys` through `search`.
fn sampled_locate_cost(
    keys: &[&[u8]],
    block_records: usize,
    search: impl Fn(usize) -> Window,
) -> f64 {
    let n = keys.len() as u64;
    sampled_mean(keys, search, |w, lb| {
        locate_cost(w, lb, n, block_records as u64)
    })
}

/// Bytes of fence pointers at stride `stride` that tell these keys apart: each pointer holds
/// its key's distinguishing prefix (one byte past what it shares with the key before it)
/// and a position, so keys whose first 8 bytes collide need longer pointers. For keys told
/// apart within 8 bytes this is about the 8 bytes per pointer of [`IndexKind::Fence`].
pub fn string_fence_bytes(keys: &[&[u8]], stride: usize) -> usize {
    let stride = stride.max(1);
    (0..keys.len())
        .step_by(stride)
        .map(|i| {
            let shared = match i {
                0 => 0,
                _ => super::projection::common_prefix_len(keys[i - 1], keys[i]),
            };
            (shared + 1).min(keys[i].len()).max(8) + 4
        })
        .sum()
}

/// The lookup cost of `tree` over `keys`: per level below the root a compare of the
/// child's prefix, a redirect lookup at each node with children on the way, the binary
/// search of the answering node's segments (weighted by the keys each node answers), a
/// line, the misses of a tree larger than its cache share, and the slots located (measured
/// on a sample of the keys).
pub fn string_tree_cost(tree: &StringTree, keys: &[&[u8]], block_records: usize) -> f64 {
    let s = tree.stats();
    MODEL_STEP * ((s.mean_depth - 1.0).max(0.0) + s.mean_segment_steps)
        + REDIRECT_CHECK * s.mean_redirect_checks
        + EVAL
        + model_misses(tree.size_bytes())
        + sampled_locate_cost(keys, block_records, |i| tree.search_rest(keys[i]))
}

/// The cost of an integer model over `keys` (their projections `projected`), the slots
/// located measured on a sample of the keys (runs of equal projections included).
fn integer_cost(idx: &dyn Index, keys: &[&[u8]], projected: &[u64], block_records: usize) -> f64 {
    integer_search_cost(idx)
        + sampled_locate_cost(keys, block_records, |i| idx.search(projected[i]))
}

/// Greedy-PLR at `config`'s bound over a file's keys (without the file's common prefix,
/// non-decreasing), or, where the keys' projections collide so that the string tree's PLR
/// segments (the same model, per region of shared prefix) are cheaper, the string tree:
/// what `--index plr` trains over byte keys.
///
/// # Errors
/// `InvalidArgument` when the keys are out of order or the configuration is invalid.
pub fn plr_over_keys(keys: &[&[u8]], config: &IndexConfig) -> Result<Box<dyn Index>> {
    let projected: Vec<u64> = keys
        .iter()
        .map(|k| super::projection::project(k, 0))
        .collect();
    plr_over_projected(keys, &projected, config, DEFAULT_BLOCK_RECORDS, false)
        .map(|(index, _)| index)
}

/// [`plr_over_keys`] given the keys' projections, with the model's cost ([`integer_cost`]
/// or [`string_tree_cost`]) when `costed` (else 0 where it was not needed).
///
/// Three models compete: PLR over the byte projection, PLR over a radix projection fitted
/// to the keys ([`RadixProjection`]: where keys use few byte values per position, such as
/// decimal ids, it reads them as the numbers they spell, and a line fits thousands of keys
/// the byte projection cuts into steps), and, when the cheaper PLR's projections collide,
/// the string tree.
fn plr_over_projected(
    keys: &[&[u8]],
    projected: &[u64],
    config: &IndexConfig,
    block_records: usize,
    costed: bool,
) -> Result<(Box<dyn Index>, f64)> {
    let plr_config = IndexConfig {
        kind: IndexKind::Plr,
        ..*config
    };
    let fit = |projected: &[u64]| {
        let mut b = builder(&plr_config);
        b.add_all(projected)?;
        b.finish()
    };
    let plr = fit(projected)?;
    let radix = match RadixProjection::fit(keys) {
        Some(projection) => {
            let radix_projected: Vec<u64> = keys.iter().map(|k| projection.project(k)).collect();
            let mut b = PlrBuilder::new(plr_config.error_bound);
            IndexBuilder::add_all(&mut b, &radix_projected)?;
            let model = b.finish_model()?.with_projection(projection);
            Some((model, radix_projected))
        }
        None => None,
    };
    let Some((radix_model, radix_projected)) = radix else {
        if !collides(plr.as_ref(), keys, projected) {
            let cost = if costed {
                integer_cost(plr.as_ref(), keys, projected, block_records)
            } else {
                0.0
            };
            return Ok((plr, cost));
        }
        return with_tree_if_cheaper(keys, config, block_records, plr, projected);
    };
    let plr_cost = integer_cost(plr.as_ref(), keys, projected, block_records);
    let positions = radix_model.radix_projection().map_or(0, |p| p.positions());
    let radix_cost = integer_cost(&radix_model, keys, &radix_projected, block_records)
        + RADIX_DIGIT * positions as f64;
    if radix_cost < plr_cost {
        if collides(&radix_model, keys, &radix_projected) {
            return with_tree_if_cheaper(
                keys,
                config,
                block_records,
                Box::new(radix_model),
                &radix_projected,
            );
        }
        return Ok((Box::new(radix_model), radix_cost));
    }
    if collides(plr.as_ref(), keys, projected) {
        return with_tree_if_cheaper(keys, config, block_records, plr, projected);
    }
    Ok((plr, plr_cost))
}

/// `plr` (over `projected`), or the string tree over `keys` where it costs less.
fn with_tree_if_cheaper(
    keys: &[&[u8]],
    config: &IndexConfig,
    block_records: usize,
    plr: Box<dyn Index>,
    projected: &[u64],
) -> Result<(Box<dyn Index>, f64)> {
    let tree = StringTree::build(keys, config.error_bound, config.tuning.string_run_limit)?;
    let (tree_cost, plr_cost) = (
        string_tree_cost(&tree, keys, block_records),
        integer_cost(plr.as_ref(), keys, projected, block_records),
    );
    if tree_cost < plr_cost {
        return Ok((Box::new(tree), tree_cost));
    }
    Ok((plr, plr_cost))
}

/// The model of `config`'s kind over `keys` ([`super::train_keys`]) and its cost.
fn floor_model(
    keys: &[&[u8]],
    projected: &[u64],
    config: &IndexConfig,
    block_records: usize,
) -> Result<(Box<dyn Index>, f64)> {
    match config.kind {
        IndexKind::Plr => plr_over_projected(keys, projected, config, block_records, true),
        IndexKind::StringTree => {
            let tree = StringTree::build(keys, config.error_bound, config.tuning.string_run_limit)?;
            let cost = string_tree_cost(&tree, keys, block_records);
            Ok((Box::new(tree), cost))
        }
        _ => {
            let index = super::train_keys(config, keys)?;
            let cost = integer_cost(index.as_ref(), keys, projected, block_records);
            Ok((index, cost))
        }
    }
}

/// True when lookups through `idx` gallop through runs of equal projections (measured on a
/// sample of the keys) more than [`COLLIDING`] slot steps on average.
fn collides(idx: &dyn Index, keys: &[&[u8]], projected: &[u64]) -> bool {
    sampled_mean(
        keys,
        |i| idx.search(projected[i]),
        |w, lb| gallop_steps(w.hi, lb),
    ) >= COLLIDING
}

/// One way of locating a file's keys that [`choose_keys`] weighed.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// What it is: `fence path` (no model), or the index's kind, window and, for string
    /// trees, run limit (`string/w33/r32`); `(floor)` marks the configured kind's model.
    pub label: String,
    /// Model bytes (0 for the fence path).
    pub bytes: usize,
    /// Whether it fits the budget (only a candidate that fits may be kept).
    pub fits: bool,
    /// Predicted lookup cost, in slot misses (module docs).
    pub cost: f64,
    /// Whether it was chosen.
    pub chosen: bool,
}

impl std::fmt::Display for Candidate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:<24} {:>9} B {:<8} cost {:.2}{}",
            self.label,
            self.bytes,
            if self.fits { "fits" } else { "too big" },
            self.cost,
            if self.chosen { "  <- chosen" } else { "" }
        )
    }
}

/// A model candidate with its label and predicted cost.
struct Weighed {
    index: Box<dyn Index>,
    label: String,
    cost: f64,
    fits: bool,
}

/// Everything [`choose_keys`] weighs: the model candidates (the configured kind's model
/// first), the cost of the fence path, and which candidate is chosen (`None`: the fence
/// path).
struct Weighing {
    models: Vec<Weighed>,
    fence_path: f64,
    chosen: Option<usize>,
}

/// `kind/wWINDOW`, as `augur stats` names a model.
fn label(idx: &dyn Index) -> String {
    format!("{}/w{}", idx.kind().name(), idx.max_window())
}

/// Builds and prices the candidates over `keys` and the fence path, and decides (module
/// docs, "Candidates").
fn weigh(
    keys: &[&[u8]],
    config: &IndexConfig,
    budget: ModelBudget,
    block_records: usize,
) -> Result<Weighing> {
    let projected: Vec<u64> = keys
        .iter()
        .map(|k| super::projection::project(k, 0))
        .collect();
    let stride = 2 * config.error_bound as usize + 1;
    let limit = match budget {
        ModelBudget::FencePointers => string_fence_bytes(keys, stride),
        other => budget_bytes(other, keys.len(), 0),
    };
    let mut models: Vec<Weighed> = Vec::new();
    let mut add = |index: Box<dyn Index>, label: String, cost: f64| {
        let fits = index.size_bytes() <= limit;
        models.push(Weighed {
            index,
            label,
            cost,
            fits,
        });
    };
    // The configured kind's own model: the floor.
    let (floor, floor_cost) = floor_model(keys, &projected, config, block_records)?;
    let floor_label = format!("{} (floor)", label(floor.as_ref()));
    // A floor that is a tree is the tree at the configured bound and run limit.
    let floor_is_tree = floor.kind() == IndexKind::StringTree;
    add(floor, floor_label, floor_cost);
    let integer = choose(&projected, config, budget)?;
    let colliding = collides(integer.as_ref(), keys, &projected);
    let integer_cost = integer_cost(integer.as_ref(), keys, &projected, block_records);
    let integer_label = label(integer.as_ref());
    add(integer, integer_label, integer_cost);
    if colliding {
        for scale in [1u32, 2, 4] {
            if scale == 1 && floor_is_tree {
                continue;
            }
            let delta = config.error_bound.saturating_mul(scale);
            let run_limit = config.tuning.string_run_limit.saturating_mul(scale);
            let tree = StringTree::build(keys, delta, run_limit)?;
            let cost = string_tree_cost(&tree, keys, block_records);
            let label = format!("string/w{}/r{run_limit}", tree.max_window());
            add(Box::new(tree), label, cost);
        }
    }
    let fence_path = fence_path_cost(keys, block_records);
    // The cheapest within the budget (ties to the earlier: the floor first).
    let mut chosen: Option<usize> = None;
    for (i, m) in models.iter().enumerate() {
        if m.fits && chosen.is_none_or(|c| m.cost < models[c].cost) {
            chosen = Some(i);
        }
    }
    if models[0].fits && chosen.is_some_and(|c| models[c].cost + FLOOR_MARGIN > models[0].cost) {
        chosen = Some(0);
    }
    if chosen.is_some_and(|c| models[c].cost + FENCE_PATH_MARGIN > fence_path) {
        chosen = None;
    }
    Ok(Weighing {
        models,
        fence_path,
        chosen,
    })
}

/// The model chooser over a file's keys (without the file's common prefix, non-decreasing)
/// stored `block_records` to a block: the model to keep, or `None` when the table's own
/// fence path is predicted as fast (module docs: the candidates and the decision). The
/// budget's fence pointers are fence pointers that tell these keys apart
/// ([`string_fence_bytes`]); a kept model fits the budget.
///
/// # Errors
/// `InvalidArgument` when the keys are out of order or the configuration is invalid.
pub fn choose_keys(
    keys: &[&[u8]],
    config: &IndexConfig,
    budget: ModelBudget,
    block_records: usize,
) -> Result<Option<Box<dyn Index>>> {
    let mut w = weigh(keys, config, budget, block_records)?;
    Ok(w.chosen.map(|c| w.models.swap_remove(c).index))
}

/// What [`choose_keys`] weighs for these keys, the fence path first, the choice marked: for
/// tools and reports.
///
/// # Errors
/// As [`choose_keys`].
pub fn explain_keys(
    keys: &[&[u8]],
    config: &IndexConfig,
    budget: ModelBudget,
    block_records: usize,
) -> Result<Vec<Candidate>> {
    let w = weigh(keys, config, budget, block_records)?;
    let mut out = vec![Candidate {
        label: "fence path".into(),
        bytes: 0,
        fits: true,
        cost: w.fence_path,
        chosen: w.chosen.is_none(),
    }];
    out.extend(w.models.iter().enumerate().map(|(i, m)| Candidate {
        label: m.label.clone(),
        bytes: m.index.size_bytes(),
        fits: m.fits,
        cost: m.cost,
        chosen: w.chosen == Some(i),
    }));
    Ok(out)
}

#[cfg(test)]
mod tests;
