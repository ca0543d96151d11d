//! Training a string tree: the nodes drafted depth-first from the sorted keys (a node's
//! Greedy-PLR segments over its keys' projections, a child for every run of more than
//! `run_limit` keys sharing one projection), before `layout` lays them out breadth-first.

use super::{project_at, Draft};
use crate::index::plr::GreedyPlr;
use crate::index::projection;

/// The drafts (pre-order, the root first) of a tree over `keys` (sorted; checked by the
/// caller) with segments of error bound `delta` and runs of more than `run_limit` keys
/// redirected.
pub(super) fn drafts(keys: &[&[u8]], delta: u32, run_limit: u32) -> Vec<Draft> {
    let mut builder = TreeBuilder {
        delta,
        run_limit,
        drafts: Vec::new(),
        scratch: Vec::new(),
    };
    builder.node(keys, 0, 0, &[], true);
    builder.drafts
}

/// Builds the drafts of a tree (see [`super::StringTree::build`]).
struct TreeBuilder {
    delta: u32,
    run_limit: u32,
    drafts: Vec<Draft>,
    /// Projections, reused from node to node.
    scratch: Vec<u64>,
}

impl TreeBuilder {
    /// Drafts the node over `keys` (positions from `base`; every key starts with the
    /// `depth` bytes of the node's prefix, the last `extra` of them its own) and its
    /// subtree; returns its index.
    fn node(&mut self, keys: &[&[u8]], depth: usize, base: u32, extra: &[u8], root: bool) -> usize {
        let len = keys.len() as u32;
        let id = self.drafts.len();
        if let (Some(first), Some(last)) = (keys.first(), keys.last()) {
            if first == last {
                // A root leaf keeps its key in place of the prefix it does not have.
                let stored = if root { &first[..] } else { extra };
                self.drafts.push(Draft {
                    base,
                    len,
                    extra: stored.to_vec(),
                    leaf: true,
                    segments: Vec::new(),
                    children: Vec::new(),
                });
                return id;
            }
        }
        self.scratch.clear();
        self.scratch
            .extend(keys.iter().map(|k| project_at(k, depth)));
        let segments = if u64::from(len) + 1 > 2 * u64::from(self.delta) + 1 {
            fit_segments(&self.scratch, self.delta)
        } else {
            Vec::new()
        };
        // The runs of more than `run_limit` keys sharing a projection.
        let mut runs = Vec::new();
        let mut start = 0;
        while start < keys.len() {
            let x = self.scratch[start];
            let end = start + self.scratch[start..].partition_point(|&p| p == x);
            if end - start > self.run_limit as usize {
                runs.push((x, start, end));
            }
            start = end;
        }
        self.drafts.push(Draft {
            base,
            len,
            extra: extra.to_vec(),
            leaf: false,
            segments,
            children: Vec::with_capacity(runs.len()),
        });
        for (x, start, end) in runs {
            let (first, last) = (keys[start], keys[end - 1]);
            // Equal projections with more than CHUNK bytes past `depth` share at least
            // CHUNK bytes; otherwise the keys are equal (a leaf).
            let shared = projection::common_prefix_len(first, last).max(depth);
            let child = self.node(
                &keys[start..end],
                shared,
                base + start as u32,
                first.get(depth..shared).unwrap_or_default(),
                false,
            );
            self.drafts[id].children.push((x, child));
        }
        id
    }
}

/// Greedy-PLR segments (error bound `delta`) over the lower-bound function of the sorted
/// projections `xs`: each distinct projection at its first position, the gap before it as
/// one step, and one point past the last (`lb = len`), so every projection above the last
/// is predicted within `delta` of the node's end. Positions relative to the node.
fn fit_segments(xs: &[u64], delta: u32) -> Vec<(u64, u32, f64)> {
    let mut fit = GreedyPlr::new(delta);
    let mut prev: Option<u64> = None;
    for (pos, &x) in xs.iter().enumerate() {
        let pos = pos as u64;
        match prev {
            Some(p) if p == x => continue,
            Some(p) if p + 1 < x => fit.push_step(p + 1, x, pos),
            _ => fit.push(x, pos),
        }
        prev = Some(x);
    }
    if let Some(last) = prev.filter(|&l| l < u64::MAX) {
        fit.push(last + 1, xs.len() as u64);
    }
    fit.finish()
        .into_iter()
        .map(|s| (s.key, s.pos as u32, s.slope))
        .collect()
}
