//! The string tree: a learned index over byte keys, after Radix String Spline (Spector et
//! al., 2021) — a tree of models, each over the next bytes past the prefix its own keys
//! share — rather than one integer model over one projection of every key.
//!
//! Why: real string keys (paths, URLs, reversed domains, composite keys) tell neighbours
//! apart deep inside the key, at a depth that changes from one region of the key space to
//! the next. Projecting the 8 bytes after the file's common prefix maps thousands of them to
//! one number (122,565 of the 122,567 Debian package paths share 3 projections), and a model
//! over such projections predicts nothing: the reader gallops through the run.
//!
//! # Structure
//!
//! A **node** covers a contiguous range of the file's positions whose keys all start with the
//! node's prefix (the file's common prefix for the root; for a child, its parent's prefix
//! plus `extra`, the bytes its own keys share beyond it). It holds Greedy-PLR segments (error
//! bound δ) over its keys' projections at its depth ([`project_at`]: the next 7 bytes after
//! the prefix and how many bytes follow, so a key that ends sorts before its extensions),
//! and **redirects**: a run of more than `run_limit` keys sharing one projection gets a
//! child covering exactly that run, whose depth is the run's longest common prefix. A run
//! of identical keys (the versions of one user key) becomes a leaf: nothing to model. A
//! node no wider than a segment's window keeps no segments: its window is the whole node.
//!
//! # Layout
//!
//! Flat and breadth-first, so model memory is a few arrays and not a model object per node
//! (what made the first layout nine times the fence pointers' bytes): the nodes in one
//! array, a node's children contiguous in it (so a redirect is only its projection, kept
//! beside the child), the nodes' prefix bytes, segments and redirect hash slots each in one
//! array in node order. Positions are `u32` (a tree indexes at most `u32::MAX` keys).
//!
//! A lookup walks down: at each node it projects the key, and either follows a redirect (the
//! key then either carries the child's `extra` and descends, or it orders before or after all
//! the child's keys, which gives the lower bound at once), or asks the node's model.
//!
//! # The window contract, over byte keys
//!
//! For every byte key `k` (present or absent, longer or shorter than the stored ones), with
//! `lb(k)` the first position whose key is `>= k` (or `n`):
//!
//! ```text
//! lo <= lb(k) < hi + run_limit        hi <= n + 1        hi - lo <= max_window
//! ```
//!
//! where `max_window` is the widest node window (`2δ + 1`, or a small node's `len + 1`). The window holds the start of the
//! run of keys sharing `k`'s projection in its node, and the lower bound lies in that run,
//! which is at most `run_limit` keys long (a longer one has a child): when every key of the
//! window is smaller than `k`, the reader goes on past `hi` as it does through the runs of
//! equal projections of the integer models ([`super`]), at most `run_limit` keys. The window
//! is not widened by `run_limit` up front: most projections are one key's.

use super::{Index, IndexKind, Window};
use crate::coding::{put_u32, put_u64};
use crate::error::{Error, Result};
use crate::key::strip_key_prefix;
use std::cmp::Ordering;

mod build;
mod codec;

/// Keys a projection may share in one node before the run gets a child of its own. Small: a
/// run the node keeps widens every window by this much.
pub const DEFAULT_RUN_LIMIT: u32 = 16;

/// The deepest tree a decoder accepts (a guard against hostile encodings; a tree's depth is
/// at most its key length over 7 bytes).
const MAX_DEPTH: usize = 4096;

/// Bytes of key each level of projection reads.
const CHUNK: usize = 7;

/// Rounding slack added to δ on each side of a prediction (as PLR's: above the `f64` error
/// of a prediction, far below one position).
const SLACK: f64 = 1.0 / 64.0;

/// The most keys a tree indexes (positions are `u32`).
pub const MAX_TREE_KEYS: u64 = u32::MAX as u64 - 1;

/// The projection of `key` at `depth` (REQUIRES: `key` is at least `depth` bytes long — the
/// caller checked the node prefix): the next 7 (`CHUNK`) bytes big-endian, zero-padded, then one
/// byte holding how many bytes of the key follow `depth`, at most `CHUNK + 1`. Monotone: a key
/// ending inside the chunk is a prefix of every key with the same padded bytes and a larger
/// count, so it sorts before them; two keys that both go on past the chunk tie.
#[inline]
pub fn project_at(key: &[u8], depth: usize) -> u64 {
    let rest = key.get(depth..).unwrap_or_default();
    if let Some(&first8) = rest.first_chunk::<8>() {
        // At least 8 bytes on: the 7 bytes of the chunk and a count of 8 (`CHUNK + 1`), read
        // as one word (the copy below is a call and a store the load then waits on).
        return (u64::from_be_bytes(first8) & !0xFF) | (CHUNK as u64 + 1);
    }
    let mut word = [0u8; 8];
    let take = rest.len().min(CHUNK);
    word[..take].copy_from_slice(&rest[..take]);
    word[CHUNK] = rest.len().min(CHUNK + 1) as u8;
    u64::from_be_bytes(word)
}

/// Keys in one buffer, in the order pushed: what a table builder collects to train a string
/// tree at the end (one allocation per buffer growth, not per key).
#[derive(Debug, Default, Clone)]
pub struct KeyArena {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl KeyArena {
    /// Appends `key`.
    pub fn push(&mut self, key: &[u8]) {
        self.bytes.extend_from_slice(key);
        self.ends.push(self.bytes.len());
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// True when it holds no key.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The keys, in order.
    pub fn keys(&self) -> Vec<&[u8]> {
        let mut start = 0;
        self.ends
            .iter()
            .map(|&end| {
                let key = &self.bytes[start..end];
                start = end;
                key
            })
            .collect()
    }

    /// Bytes held (keys and their ends).
    pub fn size_bytes(&self) -> usize {
        self.bytes.capacity() + self.ends.capacity() * std::mem::size_of::<usize>()
    }
}

/// A string tree over the keys of one file (see the module doc).
#[derive(Debug)]
pub struct StringTree {
    /// Breadth-first: the root first, each node's children contiguous and in key order.
    nodes: Box<[Node]>,
    /// `child_x[i]`: the projection in its parent that leads to node `i` (root: 0).
    child_x: Box<[u64]>,
    /// The nodes' `extra` bytes in node order (a root leaf: its key); node `i`'s end where
    /// node `i + 1`'s start.
    bytes: Box<[u8]>,
    /// Segment starts (projections), in node order; node `i`'s end where node `i + 1`'s
    /// start.
    seg_x: Box<[u64]>,
    /// Segment slopes (positions per unit of projection).
    seg_slope: Box<[f64]>,
    /// Segment start positions, relative to their node's base.
    seg_pos: Box<[u32]>,
    /// Open-addressing tables of the nodes with more than [`LINEAR_REDIRECTS`] children:
    /// the child's index among its siblings plus one (0: empty).
    slots: Box<[u32]>,
    /// Keys a node keeps per projection at most (longer runs have children).
    run_limit: u32,
    /// The segments' error bound δ.
    delta: u32,
    /// The widest window a search returns.
    max_window: u64,
}

/// One node of a [`StringTree`]: positions `[base, base + len)`.
#[derive(Debug, Clone, Copy)]
struct Node {
    base: u32,
    len: u32,
    /// Start of its `extra` bytes in [`StringTree::bytes`].
    extra_start: u32,
    /// Its first child's index ([`LEAF`] for a leaf).
    first_child: u32,
    children: u32,
    /// Start of its segments (none: the window is the whole node).
    seg_start: u32,
    /// Start of its redirect hash table (with more than [`LINEAR_REDIRECTS`] children).
    slot_start: u32,
}

/// [`Node::first_child`] of a leaf: every key of the node is the same (versions of one user
/// key).
const LEAF: u32 = u32::MAX;

/// Redirect lists this short are scanned (one or two cache lines) instead of hashed.
const LINEAR_REDIRECTS: u32 = 8;

/// The size of the hash table of a node with `children` children (a power of two, at most
/// half full).
fn table_len(children: u32) -> usize {
    (children as usize * 2).next_power_of_two()
}

/// The home slot of projection `x` in a table of `mask + 1` slots.
#[inline]
fn redirect_slot(x: u64, mask: usize) -> usize {
    (x.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32) as usize & mask
}

/// A window holding only `pos`.
fn at(pos: u64) -> Window {
    Window {
        lo: pos,
        hi: pos + 1,
    }
}

/// What [`StringTree::stats`] reports.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StringTreeStats {
    /// Nodes, leaves included.
    pub nodes: u64,
    /// Nodes holding versions of one key.
    pub leaves: u64,
    /// Nodes with segments.
    pub models: u64,
    /// Segments of all nodes.
    pub model_segments: u64,
    /// Redirects (edges to children: every node but the root).
    pub redirects: u64,
    /// Bytes of the node array.
    pub node_bytes: usize,
    /// Bytes of the nodes' prefixes.
    pub prefix_bytes: usize,
    /// Bytes of the redirects' projections and hash slots.
    pub redirect_bytes: usize,
    /// Bytes of the segments.
    pub model_bytes: usize,
    /// Nodes visited per key, averaged over the keys (1: the root answers).
    pub mean_depth: f64,
    /// Redirect lookups per key (nodes visited that have children), averaged over the keys.
    pub mean_redirect_checks: f64,
    /// Binary-search steps over the answering node's segments, averaged over the keys.
    pub mean_segment_steps: f64,
}

/// A node before layout: what the builder and the decoder produce, in pre-order.
struct Draft {
    base: u32,
    len: u32,
    /// Its `extra` bytes (a root leaf: its key).
    extra: Vec<u8>,
    leaf: bool,
    /// Segments: (start projection, start position relative to `base`, slope).
    segments: Vec<(u64, u32, f64)>,
    /// Children: the projection leading to each, and its index in the draft list.
    children: Vec<(u64, usize)>,
}

impl StringTree {
    /// Builds a tree over `keys` (the file's keys in order, each without the file's common
    /// prefix; equal keys allowed), with segments of error bound `delta` and runs of more
    /// than `run_limit` keys redirected.
    ///
    /// # Errors
    /// `InvalidArgument` for keys out of order, more than [`MAX_TREE_KEYS`] keys or a
    /// `run_limit` of 0.
    pub fn build(keys: &[&[u8]], delta: u32, run_limit: u32) -> Result<StringTree> {
        if run_limit == 0 {
            return Err(Error::InvalidArgument(
                "string tree: the run limit must be at least 1".into(),
            ));
        }
        if keys.len() as u64 > MAX_TREE_KEYS {
            return Err(Error::InvalidArgument(format!(
                "string tree: more than {MAX_TREE_KEYS} keys"
            )));
        }
        if let Some(i) = keys.windows(2).position(|w| w[0] > w[1]) {
            return Err(Error::InvalidArgument(format!(
                "string tree: keys must be non-decreasing (position {})",
                i + 1
            )));
        }
        Ok(layout(
            build::drafts(keys, delta, run_limit),
            delta,
            run_limit,
        ))
    }

    /// The most keys a node keeps per projection (a window's reach past its end).
    pub fn run_limit(&self) -> u32 {
        self.run_limit
    }

    /// The segments' error bound δ.
    pub fn error_bound(&self) -> u32 {
        self.delta
    }

    /// What the tree is made of, and the bytes of each part.
    pub fn stats(&self) -> StringTreeStats {
        // Per node: its depth and the redirect lookups on the way to it (itself included).
        let mut depth = vec![1u64; self.nodes.len()];
        let mut checks = vec![0u64; self.nodes.len()];
        let (mut weighted, mut weighted_checks, mut weighted_steps) = (0u64, 0u64, 0.0f64);
        for (id, node) in self.nodes.iter().enumerate() {
            checks[id] += u64::from(node.children > 0);
            let mut redirected = 0u64;
            for c in self.children(node) {
                depth[c] = depth[id] + 1;
                checks[c] = checks[id];
                redirected += u64::from(self.nodes[c].len);
            }
            let answered = u64::from(node.len) - redirected;
            weighted += answered * depth[id];
            weighted_checks += answered * checks[id];
            let segments = self.segment_range(id).len();
            weighted_steps += answered as f64 * (segments.max(1) as f64).log2();
        }
        StringTreeStats {
            nodes: self.nodes.len() as u64,
            leaves: self.nodes.iter().filter(|n| n.first_child == LEAF).count() as u64,
            models: (0..self.nodes.len())
                .filter(|&i| !self.segment_range(i).is_empty())
                .count() as u64,
            model_segments: self.seg_x.len() as u64,
            redirects: self.nodes.len().saturating_sub(1) as u64,
            node_bytes: self.nodes.len() * std::mem::size_of::<Node>(),
            prefix_bytes: self.bytes.len(),
            redirect_bytes: self.child_x.len() * 8 + self.slots.len() * 4,
            model_bytes: self.seg_x.len() * 8 + self.seg_slope.len() * 8 + self.seg_pos.len() * 4,
            mean_depth: weighted as f64 / self.len().max(1) as f64,
            mean_redirect_checks: weighted_checks as f64 / self.len().max(1) as f64,
            mean_segment_steps: weighted_steps / self.len().max(1) as f64,
        }
    }

    /// The indexes of `node`'s children.
    fn children(&self, node: &Node) -> std::ops::Range<usize> {
        if node.first_child == LEAF {
            return 0..0;
        }
        let first = node.first_child as usize;
        first..first + node.children as usize
    }

    /// Node `id`'s segments, as a range of the segment arrays.
    #[inline]
    fn segment_range(&self, id: usize) -> std::ops::Range<usize> {
        let start = self.nodes.get(id).map_or(0, |n| n.seg_start as usize);
        let end = self
            .nodes
            .get(id + 1)
            .map_or(self.seg_x.len(), |n| n.seg_start as usize);
        start..end.max(start)
    }

    /// Node `id`'s `extra` bytes.
    #[inline]
    fn extra(&self, id: usize) -> &[u8] {
        let start = self.nodes.get(id).map_or(0, |n| n.extra_start as usize);
        let end = self
            .nodes
            .get(id + 1)
            .map_or(self.bytes.len(), |n| n.extra_start as usize);
        self.bytes.get(start..end).unwrap_or_default()
    }

    /// The child of `node` reached by projection `x`, if it has one.
    #[inline]
    fn redirect(&self, node: &Node, x: u64) -> Option<usize> {
        let range = self.children(node);
        let own = self.child_x.get(range.clone())?;
        if node.children <= LINEAR_REDIRECTS {
            return own.iter().position(|&c| c == x).map(|i| range.start + i);
        }
        let len = table_len(node.children);
        let table = node.slot_start as usize;
        let slots = self.slots.get(table..table + len)?;
        let mut at = redirect_slot(x, len - 1);
        loop {
            let i = (*slots.get(at)? as usize).checked_sub(1)?;
            if *own.get(i)? == x {
                return Some(range.start + i);
            }
            at = (at + 1) & (len - 1);
        }
    }

    /// The window of projection `x` in node `id` from its segments, relative to its base.
    #[inline]
    fn segment_window(&self, id: usize, len: u64, x: u64) -> Window {
        let range = self.segment_range(id);
        if range.is_empty() {
            return Window { lo: 0, hi: len + 1 };
        }
        let xs = &self.seg_x[range.clone()];
        let i = xs.partition_point(|&s| s <= x);
        if i == 0 {
            // Below the node's first projection: before all its keys.
            return at(0);
        }
        let seg = range.start + i - 1;
        let pos = u64::from(self.seg_pos[seg]);
        let next_pos = if i < xs.len() {
            u64::from(self.seg_pos[seg + 1])
        } else {
            len
        };
        let predicted = pos as f64 + self.seg_slope[seg] * (x - xs[i - 1]) as f64;
        // f64 `max`/`min` never panic; `as` floors, saturates and maps NaN to 0.
        let p = predicted.max(pos as f64).min(next_pos as f64);
        let reach = f64::from(self.delta) + SLACK;
        let lo = super::ceil_position(p - reach).max(pos);
        let hi = ((p + reach) as u64).saturating_add(1).min(next_pos + 1);
        Window {
            lo,
            hi: hi.max(lo + 1),
        }
    }

    /// The window of `rest`, a key without the file's common prefix (see the module doc).
    pub fn search_rest(&self, rest: &[u8]) -> Window {
        let mut id = 0usize;
        let mut depth = 0usize;
        loop {
            let Some(node) = self.nodes.get(id) else {
                return at(0);
            };
            let (base, len) = (u64::from(node.base), u64::from(node.len));
            if node.first_child == LEAF {
                // A leaf holds one key: the lower bound is its start unless `rest` is
                // larger. (Below the root, the leaf's depth is its key's length.)
                let tail = if id == 0 { self.extra(0) } else { &[] };
                let larger = rest.get(depth..).unwrap_or_default() > tail;
                return at(base + if larger { len } else { 0 });
            }
            let x = project_at(rest, depth);
            let Some(child) = self.redirect(node, x) else {
                let w = self.segment_window(id, len, x);
                return Window {
                    lo: base + w.lo,
                    hi: base + w.hi.min(len + 1),
                };
            };
            let Some(c) = self.nodes.get(child) else {
                return at(base);
            };
            let extra = self.extra(child);
            let tail = rest.get(depth..).unwrap_or_default();
            let take = tail.len().min(extra.len());
            match tail[..take].cmp(&extra[..take]) {
                Ordering::Less => return at(u64::from(c.base)),
                Ordering::Greater => return at(u64::from(c.base) + u64::from(c.len)),
                // `rest` stops inside the child's prefix: before all its keys.
                Ordering::Equal if take < extra.len() => return at(u64::from(c.base)),
                Ordering::Equal => {
                    depth += extra.len();
                    id = child;
                }
            }
        }
    }
}

/// Lays the drafts (pre-order, the root first) out breadth-first.
fn layout(drafts: Vec<Draft>, delta: u32, run_limit: u32) -> StringTree {
    let mut order = Vec::with_capacity(drafts.len());
    let mut child_x = Vec::with_capacity(drafts.len());
    if !drafts.is_empty() {
        order.push(0usize);
        child_x.push(0u64);
    }
    let mut nodes = Vec::with_capacity(drafts.len());
    let (mut bytes, mut seg_x, mut seg_slope, mut seg_pos, mut slots) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut max_window = 1u64;
    let mut next = 0;
    while let Some(&d) = order.get(next) {
        next += 1;
        let draft = &drafts[d];
        let first_child = order.len() as u32;
        for &(x, c) in &draft.children {
            order.push(c);
            child_x.push(x);
        }
        let children = draft.children.len() as u32;
        let slot_start = slots.len() as u32;
        if children > LINEAR_REDIRECTS {
            let len = table_len(children);
            let table = slots.len();
            slots.resize(table + len, 0);
            for (i, &(x, _)) in draft.children.iter().enumerate() {
                let mut at = redirect_slot(x, len - 1);
                while slots[table + at] != 0 {
                    at = (at + 1) & (len - 1);
                }
                slots[table + at] = i as u32 + 1;
            }
        }
        max_window = max_window.max(match (draft.leaf, draft.segments.is_empty()) {
            (true, _) => 1,
            (false, true) => u64::from(draft.len) + 1,
            (false, false) => 2 * u64::from(delta) + 1,
        });
        nodes.push(Node {
            base: draft.base,
            len: draft.len,
            extra_start: bytes.len() as u32,
            first_child: if draft.leaf { LEAF } else { first_child },
            children,
            seg_start: seg_x.len() as u32,
            slot_start,
        });
        bytes.extend_from_slice(&draft.extra);
        for &(x, pos, slope) in &draft.segments {
            seg_x.push(x);
            seg_pos.push(pos);
            seg_slope.push(slope);
        }
    }
    StringTree {
        nodes: nodes.into(),
        child_x: child_x.into(),
        bytes: bytes.into(),
        seg_x: seg_x.into(),
        seg_slope: seg_slope.into(),
        seg_pos: seg_pos.into(),
        slots: slots.into(),
        run_limit,
        delta,
        max_window,
    }
}

impl Index for StringTree {
    fn fitted_error_bound(&self) -> Option<u32> {
        Some(StringTree::error_bound(self))
    }

    /// A window for the key whose bytes after the file's common prefix are the big-endian
    /// `key` with its trailing zero bytes dropped (the u64 interface of the zoo: estimates
    /// and level models; lookups use [`Index::search_key`]).
    fn search(&self, key: u64) -> Window {
        let bytes = key.to_be_bytes();
        let len = 8 - (key.trailing_zeros() / 8) as usize;
        self.search_rest(&bytes[..len.min(8)])
    }

    fn search_key(&self, key: &[u8], prefix: &[u8]) -> Window {
        match strip_key_prefix(key, prefix) {
            Some(rest) => self.search_rest(rest),
            None if key < prefix => at(0),
            None => at(self.len()),
        }
    }

    fn max_window(&self) -> u64 {
        self.max_window
    }

    fn size_bytes(&self) -> usize {
        let s = self.stats();
        std::mem::size_of::<Self>()
            + s.node_bytes
            + s.prefix_bytes
            + s.redirect_bytes
            + s.model_bytes
    }

    fn kind(&self) -> IndexKind {
        IndexKind::StringTree
    }

    fn len(&self) -> u64 {
        self.nodes.first().map_or(0, |n| u64::from(n.len))
    }

    /// Nodes plus their segments (a statistic).
    fn segments(&self) -> u64 {
        self.nodes.len() as u64 + self.seg_x.len() as u64
    }

    fn encode(&self, out: &mut Vec<u8>) {
        super::put_header(out, IndexKind::StringTree);
        put_u32(out, self.run_limit);
        put_u32(out, self.delta);
        put_u64(out, self.len());
        self.encode_node(out, 0);
    }
}
