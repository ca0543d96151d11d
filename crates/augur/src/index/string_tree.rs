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
//! plus `extra`, the bytes its own keys share beyond it). It holds a model of any kind of the
//! zoo over its keys' projections at its depth ([`project_at`]: the next 7 bytes after the
//! prefix and how many bytes follow, so a key that ends sorts before its extensions), and a
//! sorted table of **redirects**: a run of more than `run_limit` keys sharing one projection
//! gets a child covering exactly that run, whose depth is the run's longest common prefix.
//! A run of identical keys (the versions of one user key) becomes a leaf: nothing to model.
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
//! where `max_window` is the widest node model window. The window holds the start of the
//! run of keys sharing `k`'s projection in its node, and the lower bound lies in that run,
//! which is at most `run_limit` keys long (a longer one has a child): when every key of the
//! window is smaller than `k`, the reader goes on past `hi` as it does through the runs of
//! equal projections of the integer models ([`super`]), at most `run_limit` keys. The window
//! is not widened by `run_limit` up front: most projections are one key's.

use super::{builder, decode, projection, Index, IndexConfig, IndexKind, Window, MAX_KEYS};
use crate::coding::{put_u32, put_u64, put_varint, Decoder};
use crate::error::{Error, Result};
use std::cmp::Ordering;

/// Keys a projection may share in one node before the run gets a child of its own. Small: a
/// run the node keeps widens every window by this much.
pub const DEFAULT_RUN_LIMIT: u32 = 16;

/// The deepest tree a decoder accepts (a guard against hostile encodings; a tree's depth is
/// at most its key length over 7 bytes).
const MAX_DEPTH: usize = 4096;

/// Bytes of key each level of projection reads.
const CHUNK: usize = 7;

/// Keys of a node that gets no model when its model kind's window is not known in advance
/// (RMI): one more than this is the window the whole node makes.
const SMALL_NODE_KEYS: u64 = 16;

/// The projection of `key` at `depth` (REQUIRES: `key` is at least `depth` bytes long — the
/// caller checked the node prefix): the next 7 (`CHUNK`) bytes big-endian, zero-padded, then one
/// byte holding how many bytes of the key follow `depth`, at most `CHUNK + 1`. Monotone: a key
/// ending inside the chunk is a prefix of every key with the same padded bytes and a larger
/// count, so it sorts before them; two keys that both go on past the chunk tie.
#[inline]
pub fn project_at(key: &[u8], depth: usize) -> u64 {
    let rest = key.get(depth..).unwrap_or_default();
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

/// A string tree over the keys of one file (see the module doc), laid out flat: nodes in one
/// array (the root first), their prefix bytes, redirects and hash slots in three more, and
/// the models of the nodes that have one in a fifth, so a lookup's descent touches few
/// cache lines per level.
#[derive(Debug)]
pub struct StringTree {
    nodes: Box<[Node]>,
    /// Each node's `extra` bytes (a root leaf's key), concatenated.
    bytes: Box<[u8]>,
    /// Each node's redirects, ascending by projection within the node's range.
    redirects: Box<[Redirect]>,
    /// Open-addressing slots of the nodes with more than [`LINEAR_REDIRECTS`] redirects:
    /// the index of a redirect within its node's range plus one (0: empty).
    slots: Box<[u32]>,
    /// The nodes' models.
    models: Box<[Box<dyn Index>]>,
    /// Keys a node keeps per projection at most (longer runs have children).
    run_limit: u32,
    /// The widest window a search returns.
    max_window: u64,
    size_bytes: usize,
}

/// One node of a [`StringTree`]: positions `[base, base + len)`.
#[derive(Debug, Clone, Copy)]
struct Node {
    base: u64,
    len: u64,
    /// `bytes[extra.0 .. extra.0 + extra.1]`: what every key of the node shares beyond its
    /// parent's prefix (a root leaf: its key).
    extra: (u32, u32),
    /// `redirects[redirects.0 .. redirects.0 + redirects.1]`.
    redirects: (u32, u32),
    /// `slots[slots.0 .. slots.0 + slots.1]` (a power of two, or 0: scan the redirects).
    slots: (u32, u32),
    /// What the node holds: [`LEAF`], [`WHOLE`], or the index of its model.
    model: u32,
}

/// [`Node::model`] of a leaf: every key of the node is the same (versions of one user key).
const LEAF: u32 = u32::MAX;

/// [`Node::model`] of a node no wider than a model's window: the window is the whole node.
const WHOLE: u32 = u32::MAX - 1;

/// A projection whose run has a child node.
#[derive(Debug, Clone, Copy)]
struct Redirect {
    x: u64,
    child: u32,
}

/// Redirect tables this short are scanned (one or two cache lines) instead of hashed.
const LINEAR_REDIRECTS: u32 = 8;

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

/// The arrays a tree is assembled into, node by node (pre-order).
#[derive(Default)]
struct Arrays {
    nodes: Vec<Node>,
    bytes: Vec<u8>,
    redirects: Vec<Redirect>,
    slots: Vec<u32>,
    models: Vec<Box<dyn Index>>,
}

impl Arrays {
    /// Reserves a node (filled in by [`Arrays::finish_node`] once its children exist) and
    /// stores its `extra` bytes.
    fn start_node(&mut self, base: u64, len: u64, extra: &[u8]) -> Result<usize, String> {
        let start = u32::try_from(self.bytes.len()).map_err(|_| "string tree: too large")?;
        let extra_len = u32::try_from(extra.len()).map_err(|_| "string tree: too large")?;
        self.bytes.extend_from_slice(extra);
        self.nodes.push(Node {
            base,
            len,
            extra: (start, extra_len),
            redirects: (0, 0),
            slots: (0, 0),
            model: WHOLE,
        });
        Ok(self.nodes.len() - 1)
    }

    /// Completes node `id` with its model and its redirects (ascending, distinct).
    fn finish_node(&mut self, id: usize, model: u32, redirects: &[Redirect]) -> Result<(), String> {
        let too_large = || "string tree: too large".to_string();
        let start = u32::try_from(self.redirects.len()).map_err(|_| too_large())?;
        let count = u32::try_from(redirects.len()).map_err(|_| too_large())?;
        self.redirects.extend_from_slice(redirects);
        let mut slots = (0, 0);
        if count > LINEAR_REDIRECTS {
            let len = (redirects.len() * 2).next_power_of_two();
            let slot_start = u32::try_from(self.slots.len()).map_err(|_| too_large())?;
            let table = self.slots.len();
            self.slots.resize(table + len, 0);
            for (i, r) in redirects.iter().enumerate() {
                let mut at = redirect_slot(r.x, len - 1);
                while self.slots[table + at] != 0 {
                    at = (at + 1) & (len - 1);
                }
                self.slots[table + at] = i as u32 + 1;
            }
            slots = (slot_start, u32::try_from(len).map_err(|_| too_large())?);
        }
        let node = &mut self.nodes[id];
        node.model = model;
        node.redirects = (start, count);
        node.slots = slots;
        Ok(())
    }

    /// Stores `model` and returns its index.
    fn add_model(&mut self, model: Box<dyn Index>) -> Result<u32, String> {
        let id = u32::try_from(self.models.len())
            .ok()
            .filter(|&i| i < WHOLE)
            .ok_or("string tree: too many models")?;
        self.models.push(model);
        Ok(id)
    }

    /// The tree of these arrays.
    fn into_tree(self, run_limit: u32) -> StringTree {
        let widest = self
            .nodes
            .iter()
            .map(|n| match n.model {
                LEAF => 1,
                WHOLE => n.len + 1,
                m => self.models[m as usize].max_window(),
            })
            .max()
            .unwrap_or(1);
        let size_bytes = std::mem::size_of::<StringTree>()
            + self.nodes.len() * std::mem::size_of::<Node>()
            + self.bytes.len()
            + self.redirects.len() * std::mem::size_of::<Redirect>()
            + self.slots.len() * 4
            + self
                .models
                .iter()
                .map(|m| m.size_bytes() + std::mem::size_of::<Box<dyn Index>>())
                .sum::<usize>();
        StringTree {
            nodes: self.nodes.into(),
            bytes: self.bytes.into(),
            redirects: self.redirects.into(),
            slots: self.slots.into(),
            models: self.models.into(),
            run_limit,
            max_window: widest,
            size_bytes,
        }
    }
}

impl StringTree {
    /// Builds a tree over `keys` (the file's keys in order, each without the file's common
    /// prefix; equal keys allowed), with node models of `config` (its kind must not be
    /// [`IndexKind::StringTree`]) and runs of more than `run_limit` keys redirected.
    ///
    /// # Errors
    /// `InvalidArgument` for keys out of order, more than [`MAX_KEYS`] keys, a `run_limit` of
    /// 0, or an invalid node configuration.
    pub fn build(keys: &[&[u8]], config: &IndexConfig, run_limit: u32) -> Result<StringTree> {
        if run_limit == 0 {
            return Err(Error::InvalidArgument(
                "string tree: the run limit must be at least 1".into(),
            ));
        }
        if config.kind == IndexKind::StringTree {
            return Err(Error::InvalidArgument(
                "string tree: node models cannot be string trees".into(),
            ));
        }
        if keys.len() as u64 > MAX_KEYS {
            return Err(Error::InvalidArgument(format!(
                "string tree: more than {MAX_KEYS} keys"
            )));
        }
        if let Some(i) = keys.windows(2).position(|w| w[0] > w[1]) {
            return Err(Error::InvalidArgument(format!(
                "string tree: keys must be non-decreasing (position {})",
                i + 1
            )));
        }
        let mut arrays = Arrays::default();
        let mut builder = TreeBuilder {
            config,
            run_limit,
            model_window: super::documented_max_window(config).unwrap_or(SMALL_NODE_KEYS + 1),
            scratch: Vec::new(),
        };
        builder.node(&mut arrays, keys, 0, 0, &[], true)?;
        Ok(arrays.into_tree(run_limit))
    }

    /// The most keys a node keeps per projection (a window's reach past its end).
    pub fn run_limit(&self) -> u32 {
        self.run_limit
    }

    /// The redirect of projection `x` in `node`, if it has one.
    #[inline]
    fn redirect(&self, node: &Node, x: u64) -> Option<&Redirect> {
        let (start, count) = (node.redirects.0 as usize, node.redirects.1 as usize);
        let own = self.redirects.get(start..start + count)?;
        if node.slots.1 == 0 {
            return own.iter().find(|r| r.x == x);
        }
        let (table, len) = (node.slots.0 as usize, node.slots.1 as usize);
        let slots = self.slots.get(table..table + len)?;
        let mut at = redirect_slot(x, len - 1);
        loop {
            let i = (*slots.get(at)? as usize).checked_sub(1)?;
            let r = own.get(i)?;
            if r.x == x {
                return Some(r);
            }
            at = (at + 1) & (len - 1);
        }
    }

    /// The `extra` bytes of `node`.
    #[inline]
    fn extra(&self, node: &Node) -> &[u8] {
        let (start, len) = (node.extra.0 as usize, node.extra.1 as usize);
        self.bytes.get(start..start + len).unwrap_or_default()
    }

    /// The window of `rest`, a key without the file's common prefix (see the module doc).
    pub fn search_rest(&self, rest: &[u8]) -> Window {
        let Some(mut node) = self.nodes.first() else {
            return at(0);
        };
        let mut depth = 0usize;
        let mut root = true;
        loop {
            match node.model {
                LEAF => {
                    // A leaf holds one key: the lower bound is its start unless `rest` is
                    // larger. (Below the root, the leaf's depth is its key's length.)
                    let tail = if root { self.extra(node) } else { &[] };
                    let larger = rest.get(depth..).unwrap_or_default() > tail;
                    return at(node.base + if larger { node.len } else { 0 });
                }
                model => {
                    let x = project_at(rest, depth);
                    let Some(r) = self.redirect(node, x) else {
                        let w = match self.models.get(model as usize) {
                            Some(m) => m.search(x),
                            None => Window {
                                lo: 0,
                                hi: node.len + 1,
                            },
                        };
                        return Window {
                            lo: node.base + w.lo,
                            hi: (node.base + w.hi).min(node.base + node.len + 1),
                        };
                    };
                    let Some(child) = self.nodes.get(r.child as usize) else {
                        return at(node.base);
                    };
                    let extra = self.extra(child);
                    let tail = rest.get(depth..).unwrap_or_default();
                    let take = tail.len().min(extra.len());
                    match tail[..take].cmp(&extra[..take]) {
                        Ordering::Less => return at(child.base),
                        Ordering::Greater => return at(child.base + child.len),
                        // `rest` stops inside the child's prefix: before all its keys.
                        Ordering::Equal if take < extra.len() => return at(child.base),
                        Ordering::Equal => {
                            depth += extra.len();
                            node = child;
                            root = false;
                        }
                    }
                }
            }
        }
    }

    /// Decodes the body written after the header (see `docs/format/index.md`), checking
    /// every invariant the search relies on.
    pub(super) fn decode_body(body: &[u8]) -> std::result::Result<StringTree, String> {
        let mut d = Decoder::new(body);
        let (Some(run_limit), Some(n)) = (d.u32(), d.u64()) else {
            return Err("string tree: truncated parameters".into());
        };
        if run_limit == 0 || n > MAX_KEYS {
            return Err(format!("string tree: run limit {run_limit}, {n} keys"));
        }
        let mut arrays = Arrays::default();
        decode_node(&mut d, &mut arrays, 0, 0, n, true)?;
        if !d.is_empty() {
            return Err(format!("string tree: {} trailing bytes", d.remaining()));
        }
        Ok(arrays.into_tree(run_limit))
    }

    /// Appends the encoding of node `id` (pre-order; children's positions relative to
    /// their parent's base).
    fn encode_node(&self, out: &mut Vec<u8>, id: usize, root: bool) {
        let Some(node) = self.nodes.get(id) else {
            return;
        };
        if !root {
            let extra = self.extra(node);
            put_varint(out, extra.len() as u64);
            out.extend_from_slice(extra);
        }
        match node.model {
            LEAF => {
                out.push(0);
                let tail = if root { self.extra(node) } else { &[] };
                put_varint(out, tail.len() as u64);
                out.extend_from_slice(tail);
                return;
            }
            WHOLE => out.push(2),
            m => {
                out.push(1);
                let mut encoded = Vec::new();
                if let Some(model) = self.models.get(m as usize) {
                    model.encode(&mut encoded);
                }
                put_varint(out, encoded.len() as u64);
                out.extend_from_slice(&encoded);
            }
        }
        let (start, count) = (node.redirects.0 as usize, node.redirects.1 as usize);
        let own = self.redirects.get(start..start + count).unwrap_or_default();
        put_varint(out, own.len() as u64);
        for r in own {
            let Some(child) = self.nodes.get(r.child as usize) else {
                continue;
            };
            put_u64(out, r.x);
            put_varint(out, child.base - node.base);
            put_varint(out, child.len);
            self.encode_node(out, r.child as usize, false);
        }
    }
}

/// Builds the nodes of a tree (see [`StringTree::build`]).
struct TreeBuilder<'a> {
    config: &'a IndexConfig,
    run_limit: u32,
    /// The window of the node models' kind: nodes no wider get no model.
    model_window: u64,
    /// Projections, reused from node to node.
    scratch: Vec<u64>,
}

impl TreeBuilder<'_> {
    /// Builds the node over `keys` (positions from `base`; every key starts with the
    /// `depth` bytes of the node's prefix, the last `extra` of them its own) and its
    /// subtree; returns its index.
    fn node(
        &mut self,
        arrays: &mut Arrays,
        keys: &[&[u8]],
        depth: usize,
        base: u64,
        extra: &[u8],
        root: bool,
    ) -> Result<usize> {
        let too_large = |e: String| Error::InvalidArgument(e);
        let len = keys.len() as u64;
        if let (Some(first), Some(last)) = (keys.first(), keys.last()) {
            if first == last {
                // A root leaf keeps its key in place of the prefix it does not have.
                let stored = if root { &first[..] } else { extra };
                let id = arrays.start_node(base, len, stored).map_err(too_large)?;
                arrays.finish_node(id, LEAF, &[]).map_err(too_large)?;
                return Ok(id);
            }
        }
        let id = arrays.start_node(base, len, extra).map_err(too_large)?;
        self.scratch.clear();
        self.scratch
            .extend(keys.iter().map(|k| project_at(k, depth)));
        let model = if len + 1 > self.model_window {
            let mut b = builder(self.config);
            b.add_all(&self.scratch)?;
            arrays.add_model(b.finish()?).map_err(too_large)?
        } else {
            WHOLE
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
        let mut redirects = Vec::with_capacity(runs.len());
        for (x, start, end) in runs {
            let (first, last) = (keys[start], keys[end - 1]);
            // Equal projections with more than CHUNK bytes past `depth` share at least
            // CHUNK bytes; otherwise the keys are equal (a leaf).
            let shared = projection::common_prefix_len(first, last).max(depth);
            let child = self.node(
                arrays,
                &keys[start..end],
                shared,
                base + start as u64,
                first.get(depth..shared).unwrap_or_default(),
                false,
            )?;
            let child = u32::try_from(child)
                .map_err(|_| Error::InvalidArgument("string tree: too many nodes".into()))?;
            redirects.push(Redirect { x, child });
        }
        arrays
            .finish_node(id, model, &redirects)
            .map_err(too_large)?;
        Ok(id)
    }
}

/// Decodes a node covering positions `[base, base + len)` at tree level `level` into
/// `arrays`; returns its index. The root carries no `extra` and may be empty; every other
/// node holds a key.
fn decode_node(
    d: &mut Decoder<'_>,
    arrays: &mut Arrays,
    level: usize,
    base: u64,
    len: u64,
    root: bool,
) -> std::result::Result<usize, String> {
    if level > MAX_DEPTH {
        return Err("string tree: too deep".into());
    }
    let extra = match root {
        true => &[][..],
        false => d.length_prefixed().ok_or("string tree: truncated prefix")?,
    };
    let tag = d.u8().ok_or("string tree: truncated node")?;
    if tag == 0 {
        if len == 0 {
            return Err("string tree: an empty leaf".into());
        }
        let tail = d.length_prefixed().ok_or("string tree: truncated leaf")?;
        if !root && !tail.is_empty() {
            return Err("string tree: a leaf below the root with a tail".into());
        }
        let id = arrays.start_node(base, len, if root { tail } else { extra })?;
        arrays.finish_node(id, LEAF, &[])?;
        return Ok(id);
    }
    let id = arrays.start_node(base, len, extra)?;
    let model = match tag {
        2 => WHOLE,
        1 => {
            let bytes = d.length_prefixed().ok_or("string tree: truncated model")?;
            let model = decode(bytes, std::path::Path::new(""), 0).map_err(|e| e.to_string())?;
            if model.kind() == IndexKind::StringTree || model.len() != len {
                return Err(format!(
                    "string tree: a {} model over {} keys in a node of {len}",
                    model.kind().name(),
                    model.len()
                ));
            }
            arrays.add_model(model)?
        }
        other => return Err(format!("string tree: node tag {other}")),
    };
    let count = d.varint().ok_or("string tree: truncated redirects")?;
    if count > len {
        return Err(format!("string tree: {count} redirects in {len} keys"));
    }
    let mut redirects: Vec<Redirect> = Vec::with_capacity(count as usize);
    let mut next_free = base;
    for _ in 0..count {
        let (Some(x), Some(start), Some(child_len)) = (d.u64(), d.varint(), d.varint()) else {
            return Err("string tree: truncated redirect".into());
        };
        let child_base = base.checked_add(start).ok_or("string tree: position")?;
        let child_end = child_base
            .checked_add(child_len)
            .ok_or("string tree: position")?;
        if redirects.last().is_some_and(|r| r.x >= x)
            || child_base < next_free
            || child_end > base + len
            || child_len == 0
        {
            return Err("string tree: redirects out of order".into());
        }
        next_free = child_end;
        let child = decode_node(d, arrays, level + 1, child_base, child_len, false)?;
        let child = u32::try_from(child).map_err(|_| "string tree: too many nodes")?;
        redirects.push(Redirect { x, child });
    }
    arrays.finish_node(id, model, &redirects)?;
    Ok(id)
}

impl Index for StringTree {
    /// A window for the key whose bytes after the file's common prefix are the big-endian
    /// `key` with its trailing zero bytes dropped (the u64 interface of the zoo: estimates
    /// and level models; lookups use [`Index::search_key`]).
    fn search(&self, key: u64) -> Window {
        let bytes = key.to_be_bytes();
        let len = 8 - (key.trailing_zeros() / 8) as usize;
        self.search_rest(&bytes[..len.min(8)])
    }

    fn search_key(&self, key: &[u8], prefix: &[u8]) -> Window {
        match key.strip_prefix(prefix) {
            Some(rest) => self.search_rest(rest),
            None if key < prefix => at(0),
            None => at(self.len()),
        }
    }

    fn max_window(&self) -> u64 {
        self.max_window
    }

    fn size_bytes(&self) -> usize {
        self.size_bytes
    }

    fn kind(&self) -> IndexKind {
        IndexKind::StringTree
    }

    fn len(&self) -> u64 {
        self.nodes.first().map_or(0, |n| n.len)
    }

    /// Nodes plus the segments of their models (a statistic).
    fn segments(&self) -> u64 {
        self.nodes.len() as u64 + self.models.iter().map(|m| m.segments()).sum::<u64>()
    }

    fn encode(&self, out: &mut Vec<u8>) {
        super::put_header(out, IndexKind::StringTree);
        put_u32(out, self.run_limit);
        put_u64(out, self.len());
        self.encode_node(out, 0, true);
    }
}
