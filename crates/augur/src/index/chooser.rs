//! The model chooser (`--index=auto`): per file, pick the index type and error bound that a
//! cost model predicts to be fastest for that file's keys, within a model-memory budget.
//! Fence pointers at the configured error bound are always a candidate, so a chosen model is
//! never predicted slower than the baseline structure at the same memory.
//!
//! # Candidates
//!
//! Built over the file's projected keys: fence pointers at δ (stride `2δ + 1`), Greedy-PLR at
//! δ, 2δ, 4δ, … (doubling while a wider bound can still pay, see below), and PGM at δ (fewer
//! segments than PLR at the same bound, for the files where PLR's segments are short).
//! Candidates larger than the budget are dropped; when nothing else fits, fence pointers are
//! kept whatever their size (they are the baseline a file would otherwise use).
//!
//! Over byte keys ([`choose_keys`], what tables use): where the keys' projections collide
//! (string keys that share their first bytes: paths, URLs, composite keys), an integer
//! model's window holds only the start of a run of equal projections and the reader
//! gallops through the run; the chooser measures that on a sample of the keys and then
//! also tries string trees ([`super::string_tree`]) at the configured bound and run limit
//! and at two and four times both, keeping the cheapest within the budget.
//!
//! # Cost model
//!
//! A lookup's locate cost is counted in binary-search steps over the file's slots (each a
//! likely cache miss on the data), [`SLOT_STEP`] each; the model's own search is counted in
//! steps over its in-memory arrays, [`MODEL_STEP`] each (small, hot arrays), plus
//! [`EVAL`] for evaluating a line:
//!
//! ```text
//! fence(δ):   MODEL_STEP · log2(pointers) + SLOT_STEP · log2(2δ + 1)
//! PLR/PGM(δ): MODEL_STEP · log2(segments) + EVAL + SLOT_STEP · log2(2δ + 1)
//! ```
//!
//! So a line model wins over fence pointers at the same δ when its segments are on average
//! more than `2^(EVAL / MODEL_STEP) ≈ 2.7` times longer than a fence stride, and doubling δ
//! (one more slot step) pays only when it cuts the segments by more than `2^(SLOT_STEP /
//! MODEL_STEP) ≈ 7×`. The weights come from the lookup breakdown (`docs/benchmarks/`): a
//! slot step costs about three times a step over a segment array. The choice is
//! deterministic for given keys, configuration and budget.

use super::string_tree::StringTree;
use super::{builder, Index, IndexConfig, IndexKind, Window};
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

/// Cost of one binary-search step over the file's slots (the unit).
pub const SLOT_STEP: f64 = 1.0;
/// Cost of one binary-search step over a model's in-memory array.
pub const MODEL_STEP: f64 = 0.35;
/// Cost of evaluating a line (a multiplication, a clamp) on top of finding its segment.
pub const EVAL: f64 = 0.5;

/// The largest error bound the chooser tries for PLR (windows of 2049 slots).
const MAX_DELTA: u32 = 1024;

/// The predicted lookup cost of `index` in slot steps (module docs).
pub fn predicted_cost(index: &dyn Index) -> f64 {
    let steps = |n: u64| (n.max(1) as f64).log2();
    let locate = SLOT_STEP * steps(index.max_window());
    match index.kind() {
        IndexKind::Fence => MODEL_STEP * steps(index.segments()) + locate,
        _ => MODEL_STEP * steps(index.segments()) + EVAL + locate,
    }
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
    // a doubling adds a slot step, so it pays only where segments shrink a lot.
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

/// Slot steps of locating the lower bound `lb` from `window`: a binary search of the window,
/// then, when `lb` lies past it (in a run of equal projections), a gallop to it (two steps
/// per doubling).
fn locate_steps(window: Window, lb: u64) -> f64 {
    let width = window.hi.saturating_sub(window.lo).max(1) as f64;
    let mut steps = width.log2();
    if lb >= window.hi {
        steps += 2.0 * ((lb - window.hi + 2) as f64).log2();
    }
    steps
}

/// Mean slot steps to locate a sample of `keys` through `search` (each key's lower bound is
/// its first position), as [`locate_steps`] counts them.
fn sampled_locate_steps(keys: &[&[u8]], search: impl Fn(usize) -> Window) -> f64 {
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
        total += locate_steps(search(i), lb as u64);
        count += 1;
    }
    total / count as f64
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

/// Cost of one redirect lookup at a node with children (a hash slot and a projection in
/// arrays that are hot only near the root).
pub const REDIRECT_CHECK: f64 = 2.0 * MODEL_STEP;

/// The lookup cost of `tree` over `keys` in slot steps: per level below the root a compare
/// of the child's prefix, a redirect lookup at each node with children on the way, the
/// binary search of the answering node's segments (weighted by the keys each node
/// answers), a line, and the slots located (measured on a sample of the keys).
pub fn string_tree_cost(tree: &StringTree, keys: &[&[u8]]) -> f64 {
    let s = tree.stats();
    MODEL_STEP * (s.mean_depth - 1.0).max(0.0)
        + REDIRECT_CHECK * s.mean_redirect_checks
        + MODEL_STEP * s.mean_segment_steps
        + EVAL
        + SLOT_STEP * sampled_locate_steps(keys, |i| tree.search_rest(keys[i]))
}

/// The cost of an integer model over `keys` (their projections `projected`) in slot steps,
/// the slots located measured on a sample of the keys (runs of equal projections included).
fn integer_cost(idx: &dyn Index, keys: &[&[u8]], projected: &[u64]) -> f64 {
    let window_steps = SLOT_STEP * (idx.max_window().max(1) as f64).log2();
    predicted_cost(idx) - window_steps
        + SLOT_STEP * sampled_locate_steps(keys, |i| idx.search(projected[i]))
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
    let plr_config = IndexConfig {
        kind: IndexKind::Plr,
        ..*config
    };
    let mut b = builder(&plr_config);
    b.add_all(&projected)?;
    let plr = b.finish()?;
    if !collides(plr.as_ref(), keys, &projected) {
        return Ok(plr);
    }
    let tree = StringTree::build(keys, config.error_bound, config.tuning.string_run_limit)?;
    if string_tree_cost(&tree, keys) < integer_cost(plr.as_ref(), keys, &projected) {
        return Ok(Box::new(tree));
    }
    Ok(plr)
}

/// True when lookups through `idx` gallop through runs of equal projections (measured on a
/// sample of the keys) more than [`COLLIDING`] slot steps on average.
fn collides(idx: &dyn Index, keys: &[&[u8]], projected: &[u64]) -> bool {
    let ideal = (idx.max_window().max(1) as f64).log2();
    sampled_locate_steps(keys, |i| idx.search(projected[i])) >= ideal + COLLIDING
}

/// The model chooser over a file's keys (without the file's common prefix, non-decreasing):
/// [`choose`] over their projections, and, when the projections collide (the reader would
/// gallop through runs of equal projections), string trees too — at the configured bound
/// and run limit and at two and four times both — with every candidate's locate cost
/// measured on a sample of the keys, collisions included. The budget's fence pointers are
/// fence pointers that tell these keys apart ([`string_fence_bytes`]).
///
/// # Errors
/// `InvalidArgument` when the keys are out of order or the configuration is invalid.
pub fn choose_keys(
    keys: &[&[u8]],
    config: &IndexConfig,
    budget: ModelBudget,
) -> Result<Box<dyn Index>> {
    let projected: Vec<u64> = keys
        .iter()
        .map(|k| super::projection::project(k, 0))
        .collect();
    let integer = choose(&projected, config, budget)?;
    if !collides(integer.as_ref(), keys, &projected) {
        return Ok(integer);
    }
    let mut best_cost = integer_cost(integer.as_ref(), keys, &projected);
    let mut best = integer;
    let stride = 2 * config.error_bound as usize + 1;
    let limit = match budget {
        ModelBudget::FencePointers => string_fence_bytes(keys, stride),
        other => budget_bytes(other, keys.len(), 0),
    };
    for scale in [1u32, 2, 4] {
        let delta = config.error_bound.saturating_mul(scale);
        let run_limit = config.tuning.string_run_limit.saturating_mul(scale);
        let tree = StringTree::build(keys, delta, run_limit)?;
        if tree.size_bytes() > limit {
            continue;
        }
        let cost = string_tree_cost(&tree, keys);
        if cost < best_cost {
            best_cost = cost;
            best = Box::new(tree);
        }
    }
    Ok(best)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    fn uniform(n: usize, seed: u64) -> Vec<u64> {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut keys: Vec<u64> = (0..n).map(|_| rng.gen()).collect();
        keys.sort_unstable();
        keys
    }

    /// Keys in short dense runs separated by random gaps: lines fit only a run at a time.
    fn clustered(n: usize, run: u64, seed: u64) -> Vec<u64> {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut keys = Vec::with_capacity(n);
        let mut x = 0u64;
        while keys.len() < n {
            x += rng.gen_range(1_000..1_000_000_000);
            for _ in 0..run {
                x += rng.gen_range(1..3);
                keys.push(x);
            }
        }
        keys.truncate(n);
        keys
    }

    fn config() -> IndexConfig {
        IndexConfig {
            error_bound: 8,
            ..IndexConfig::default()
        }
    }

    #[test]
    fn linear_keys_get_a_line_model() {
        let keys: Vec<u64> = (0..100_000u64).map(|i| 5 + 3 * i).collect();
        let idx = choose(&keys, &config(), ModelBudget::FencePointers).unwrap();
        assert_ne!(idx.kind(), IndexKind::Fence);
        assert!(idx.segments() <= 2);
    }

    #[test]
    fn choices_stay_within_the_budget_and_the_contract() {
        for keys in [
            uniform(50_000, 1),
            clustered(50_000, 5, 2),
            clustered(50_000, 40, 3),
        ] {
            let fence = build(&config(), IndexKind::Fence, 8, &keys).unwrap();
            for budget in [
                ModelBudget::FencePointers,
                ModelBudget::BytesPerKey(0.1),
                ModelBudget::Unlimited,
            ] {
                let idx = choose(&keys, &config(), budget).unwrap();
                let limit = budget_bytes(budget, keys.len(), fence.size_bytes());
                assert!(
                    idx.size_bytes() <= limit || idx.kind() == IndexKind::Fence,
                    "{budget}: {:?} of {} bytes over {limit}",
                    idx.kind(),
                    idx.size_bytes()
                );
                assert!(predicted_cost(idx.as_ref()) <= predicted_cost(fence.as_ref()));
                for (pos, &k) in keys.iter().enumerate().step_by(97) {
                    let lb = keys.partition_point(|&x| x < k) as u64;
                    assert!(idx.search(k).contains(lb), "{budget}: key {k} at {pos}");
                    let lb1 = keys.partition_point(|&x| x < k + 1) as u64;
                    assert!(idx.search(k + 1).contains(lb1));
                }
            }
        }
    }

    #[test]
    fn short_segments_fall_back_to_fence_pointers_at_fence_memory() {
        // Runs of 5 keys: PLR at δ = 8 needs a segment per few runs, bigger than fence
        // pointers; the chooser must not pick a slower or larger structure.
        let keys = clustered(50_000, 5, 4);
        let fence = build(&config(), IndexKind::Fence, 8, &keys).unwrap();
        let idx = choose(&keys, &config(), ModelBudget::FencePointers).unwrap();
        assert!(idx.size_bytes() <= fence.size_bytes());
    }

    /// Path-like keys whose first 8 bytes collide by the thousand: integer models would
    /// gallop through the runs, so the chooser picks a string tree (within the budget of
    /// fence pointers that tell the keys apart), whose windows keep the contract; keys told
    /// apart by their first bytes keep the integer choice.
    #[test]
    fn colliding_projections_get_a_string_tree() {
        let mut owned: Vec<Vec<u8>> = Vec::new();
        for dir in [
            "usr/share/icons/hicolor/",
            "usr/share/doc/packages/",
            "var/lib/db/",
        ] {
            for i in 0..4000 {
                owned.push(format!("{dir}{:x}/file-{i:05}", i % 37).into_bytes());
            }
        }
        owned.sort();
        let keys: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
        let idx = choose_keys(&keys, &config(), ModelBudget::FencePointers).unwrap();
        assert_eq!(idx.kind(), IndexKind::StringTree);
        assert!(idx.size_bytes() <= string_fence_bytes(&keys, 17));
        let reach = u64::from(config().tuning.string_run_limit) * 4;
        for (i, k) in keys.iter().enumerate().step_by(7) {
            let w = idx.search_key(k, b"");
            assert!(w.lo <= i as u64 && (i as u64) < w.hi + reach, "{i}: {w:?}");
        }

        let numbers: Vec<Vec<u8>> = (0..20_000u64)
            .map(|i| (i * 7919).to_be_bytes().to_vec())
            .collect();
        let keys: Vec<&[u8]> = numbers.iter().map(Vec::as_slice).collect();
        let projected: Vec<u64> = keys
            .iter()
            .map(|k| super::super::projection::project(k, 0))
            .collect();
        let by_keys = choose_keys(&keys, &config(), ModelBudget::FencePointers).unwrap();
        let by_projections = choose(&projected, &config(), ModelBudget::FencePointers).unwrap();
        assert_eq!(by_keys.kind(), by_projections.kind());
        assert_eq!(by_keys.segments(), by_projections.segments());
    }

    #[test]
    fn budget_parsing_names_the_option() {
        assert_eq!(
            ModelBudget::parse("fence").unwrap(),
            ModelBudget::FencePointers
        );
        assert_eq!(
            ModelBudget::parse("unlimited").unwrap(),
            ModelBudget::Unlimited
        );
        assert_eq!(
            ModelBudget::parse("0.25").unwrap(),
            ModelBudget::BytesPerKey(0.25)
        );
        for bad in ["-1", "NaN", "inf", "lots"] {
            let e = ModelBudget::parse(bad).unwrap_err().to_string();
            assert!(e.contains("model_memory_budget"), "{e}");
        }
    }
}
