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

/// The projection of `key` at `depth` (REQUIRES: `key` is at least `depth` bytes long — the
/// caller checked the node prefix): the next [`CHUNK`] bytes big-endian, zero-padded, then one
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

/// A string tree over the keys of one file (see the module doc).
#[derive(Debug)]
pub struct StringTree {
    root: Node,
    /// Keys a node keeps per projection at most (longer runs have children).
    run_limit: u32,
    /// The widest window a search returns.
    max_window: u64,
    /// Nodes in the tree (a statistic: the index's "segments" count them with the models').
    nodes: u64,
    size_bytes: usize,
}

/// One node of a [`StringTree`].
#[derive(Debug)]
struct Node {
    /// The bytes every key of the node shares beyond its parent's prefix (empty for the
    /// root).
    extra: Box<[u8]>,
    /// The node's first position in the file.
    base: u64,
    /// Its number of keys.
    len: u64,
    /// What the node holds besides its keys' range.
    body: Body,
}

#[derive(Debug)]
enum Body {
    /// Every key of the node is the same (versions of one user key): nothing to model.
    /// `tail` is that key's bytes past the node's depth (empty but in a root leaf).
    Leaf { tail: Box<[u8]> },
    /// A model over the keys' projections at the node's depth, and the runs redirected to
    /// children (`redirects[i]` is the projection of `children[i]`'s keys; ascending).
    Inner {
        model: Box<dyn Index>,
        redirects: Redirects,
        children: Box<[Node]>,
    },
}

/// A node's redirects: the projections whose runs have children, in ascending order
/// (`children[i]` is the child of `keys[i]`), found in about one probe.
#[derive(Debug)]
struct Redirects {
    keys: Box<[u64]>,
    /// Open addressing over `keys` (index + 1; 0 is empty), a power of two at least twice
    /// their number; empty for at most [`LINEAR_REDIRECTS`] keys, which are scanned.
    slots: Box<[u32]>,
}

/// Redirect tables this short are scanned (one or two cache lines) instead of hashed.
const LINEAR_REDIRECTS: usize = 8;

/// The home slot of projection `x` in a table of `mask + 1` slots.
#[inline]
fn redirect_slot(x: u64, mask: usize) -> usize {
    (x.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32) as usize & mask
}

impl Redirects {
    /// The table over `keys` (ascending, distinct).
    fn new(keys: Vec<u64>) -> Redirects {
        let mut slots = Vec::new();
        if keys.len() > LINEAR_REDIRECTS {
            slots = vec![0u32; (keys.len() * 2).next_power_of_two()];
            let mask = slots.len() - 1;
            for (i, &x) in keys.iter().enumerate() {
                let mut at = redirect_slot(x, mask);
                while slots[at] != 0 {
                    at = (at + 1) & mask;
                }
                slots[at] = i as u32 + 1;
            }
        }
        Redirects {
            keys: keys.into(),
            slots: slots.into(),
        }
    }

    /// The index of `x` among the keys, if it is one.
    #[inline]
    fn find(&self, x: u64) -> Option<usize> {
        if self.slots.is_empty() {
            return self.keys.iter().position(|&k| k == x);
        }
        let mask = self.slots.len() - 1;
        let mut at = redirect_slot(x, mask);
        loop {
            let i = (*self.slots.get(at)? as usize).checked_sub(1)?;
            if self.keys.get(i) == Some(&x) {
                return Some(i);
            }
            at = (at + 1) & mask;
        }
    }

    /// Bytes held.
    fn size_bytes(&self) -> usize {
        self.keys.len() * 8 + self.slots.len() * 4
    }
}

/// A window holding only `pos`.
fn at(pos: u64) -> Window {
    Window {
        lo: pos,
        hi: pos + 1,
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
        let mut projected = Vec::new();
        let root = build_node(
            keys,
            0,
            0,
            Box::default(),
            config,
            run_limit,
            &mut projected,
        )?;
        Ok(Self::assemble(root, run_limit))
    }

    /// The tree around `root`, with its statistics computed.
    fn assemble(root: Node, run_limit: u32) -> StringTree {
        let (nodes, widest, bytes) = root.stats();
        StringTree {
            root,
            run_limit,
            max_window: widest,
            nodes,
            size_bytes: bytes + std::mem::size_of::<StringTree>(),
        }
    }

    /// The most keys a node keeps per projection (a window's reach past its end).
    pub fn run_limit(&self) -> u32 {
        self.run_limit
    }

    /// The window of `rest`, a key without the file's common prefix (see the module doc).
    pub fn search_rest(&self, rest: &[u8]) -> Window {
        let mut node = &self.root;
        let mut depth = 0usize;
        loop {
            let (model, redirects, children) = match &node.body {
                Body::Inner {
                    model,
                    redirects,
                    children,
                } => (model, redirects, children),
                // A leaf holds one key: the lower bound is its start unless `rest` is larger.
                Body::Leaf { tail } => {
                    let larger = rest.get(depth..).unwrap_or_default() > &tail[..];
                    return at(node.base + if larger { node.len } else { 0 });
                }
            };
            let x = project_at(rest, depth);
            let Some(i) = redirects.find(x) else {
                let w = model.search(x);
                let end = node.base + node.len + 1;
                return Window {
                    lo: node.base + w.lo,
                    hi: (node.base + w.hi).min(end),
                };
            };
            let child = &children[i];
            let tail = rest.get(depth..).unwrap_or_default();
            let take = tail.len().min(child.extra.len());
            match tail[..take].cmp(&child.extra[..take]) {
                Ordering::Less => return at(child.base),
                Ordering::Greater => return at(child.base + child.len),
                // `rest` stops inside the child's prefix: before all its keys.
                Ordering::Equal if take < child.extra.len() => return at(child.base),
                Ordering::Equal => {
                    depth += child.extra.len();
                    node = child;
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
        let root = decode_node(&mut d, 0, 0, n, true)?;
        if !d.is_empty() {
            return Err(format!("string tree: {} trailing bytes", d.remaining()));
        }
        Ok(Self::assemble(root, run_limit))
    }
}

/// Builds the node over `keys` (its positions start at `base`; every key starts with the
/// `depth` bytes of the node's prefix). `scratch` is reused for projections.
fn build_node(
    keys: &[&[u8]],
    depth: usize,
    base: u64,
    extra: Box<[u8]>,
    config: &IndexConfig,
    run_limit: u32,
    scratch: &mut Vec<u64>,
) -> Result<Node> {
    let len = keys.len() as u64;
    if let (Some(first), Some(last)) = (keys.first(), keys.last()) {
        if first == last {
            let tail = first.get(depth..).unwrap_or_default().into();
            return Ok(Node {
                extra,
                base,
                len,
                body: Body::Leaf { tail },
            });
        }
    }
    scratch.clear();
    scratch.extend(keys.iter().map(|k| project_at(k, depth)));
    let mut model_builder = builder(config);
    model_builder.add_all(scratch)?;
    let model = model_builder.finish()?;
    // The runs of more than `run_limit` keys sharing a projection.
    let mut runs = Vec::new();
    let mut start = 0;
    while start < keys.len() {
        let x = scratch[start];
        let end = start + scratch[start..].partition_point(|&p| p == x);
        if end - start > run_limit as usize {
            runs.push((x, start, end));
        }
        start = end;
    }
    let mut redirects = Vec::with_capacity(runs.len());
    let mut children = Vec::with_capacity(runs.len());
    for (x, start, end) in runs {
        let (first, last) = (keys[start], keys[end - 1]);
        let shared = projection::common_prefix_len(first, last);
        // Equal projections with more than CHUNK bytes after `depth`: at least CHUNK shared
        // bytes; otherwise the keys are equal (a leaf).
        debug_assert!(shared > depth || first == last);
        let child_extra = first
            .get(depth..shared.max(depth))
            .unwrap_or_default()
            .into();
        let child = build_node(
            &keys[start..end],
            shared.max(depth),
            base + start as u64,
            child_extra,
            config,
            run_limit,
            scratch,
        )?;
        redirects.push(x);
        children.push(child);
    }
    Ok(Node {
        extra,
        base,
        len,
        body: Body::Inner {
            model,
            redirects: Redirects::new(redirects),
            children: children.into(),
        },
    })
}

/// Decodes a node covering positions `[base, base + len)` at tree level `level`. The root
/// carries no `extra` and may be empty; every other node holds a key.
fn decode_node(
    d: &mut Decoder<'_>,
    level: usize,
    base: u64,
    len: u64,
    root: bool,
) -> std::result::Result<Node, String> {
    if level > MAX_DEPTH {
        return Err("string tree: too deep".into());
    }
    let extra: Box<[u8]> = match root {
        true => Box::default(),
        false => d
            .length_prefixed()
            .ok_or("string tree: truncated prefix")?
            .into(),
    };
    let tag = d.u8().ok_or("string tree: truncated node")?;
    let body = match tag {
        0 if len > 0 => Body::Leaf {
            tail: d
                .length_prefixed()
                .ok_or("string tree: truncated leaf")?
                .into(),
        },
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
            let count = d.varint().ok_or("string tree: truncated redirects")?;
            if count > len {
                return Err(format!("string tree: {count} redirects in {len} keys"));
            }
            let mut redirects = Vec::with_capacity(count as usize);
            let mut children = Vec::with_capacity(count as usize);
            let mut next_free = base;
            for _ in 0..count {
                let (Some(x), Some(start), Some(child_len)) = (d.u64(), d.varint(), d.varint())
                else {
                    return Err("string tree: truncated redirect".into());
                };
                let child_base = base.checked_add(start).ok_or("string tree: position")?;
                let child_end = child_base
                    .checked_add(child_len)
                    .ok_or("string tree: position")?;
                if redirects.last().is_some_and(|&p| p >= x)
                    || child_base < next_free
                    || child_end > base + len
                    || child_len == 0
                {
                    return Err("string tree: redirects out of order".into());
                }
                next_free = child_end;
                children.push(decode_node(d, level + 1, child_base, child_len, false)?);
                redirects.push(x);
            }
            Body::Inner {
                model,
                redirects: Redirects::new(redirects),
                children: children.into(),
            }
        }
        other => return Err(format!("string tree: node tag {other}")),
    };
    Ok(Node {
        extra,
        base,
        len,
        body,
    })
}

impl Node {
    /// (nodes, widest model window, bytes) of the subtree.
    fn stats(&self) -> (u64, u64, usize) {
        let own = std::mem::size_of::<Node>() + self.extra.len();
        match &self.body {
            Body::Leaf { tail } => (1, 1, own + tail.len()),
            Body::Inner {
                model,
                redirects,
                children,
            } => children.iter().fold(
                (
                    1,
                    model.max_window(),
                    own + model.size_bytes() + redirects.size_bytes(),
                ),
                |(n, w, b), c| {
                    let (cn, cw, cb) = c.stats();
                    (n + cn, w.max(cw), b + cb)
                },
            ),
        }
    }

    /// Appends the node's encoding (positions of children relative to this node's base).
    fn encode(&self, out: &mut Vec<u8>, root: bool) {
        if !root {
            put_varint(out, self.extra.len() as u64);
            out.extend_from_slice(&self.extra);
        }
        match &self.body {
            Body::Leaf { tail } => {
                out.push(0);
                put_varint(out, tail.len() as u64);
                out.extend_from_slice(tail);
            }
            Body::Inner {
                model,
                redirects,
                children,
            } => {
                out.push(1);
                let mut encoded = Vec::new();
                model.encode(&mut encoded);
                put_varint(out, encoded.len() as u64);
                out.extend_from_slice(&encoded);
                put_varint(out, children.len() as u64);
                for (x, child) in redirects.keys.iter().zip(children.iter()) {
                    put_u64(out, *x);
                    put_varint(out, child.base - self.base);
                    put_varint(out, child.len);
                    child.encode(out, false);
                }
            }
        }
    }

    /// Model segments in the subtree (a statistic).
    fn segments(&self) -> u64 {
        match &self.body {
            Body::Leaf { .. } => 0,
            Body::Inner {
                model, children, ..
            } => model.segments() + children.iter().map(Node::segments).sum::<u64>(),
        }
    }
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
            None => at(self.root.len),
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
        self.root.len
    }

    fn segments(&self) -> u64 {
        self.root.segments().max(self.nodes)
    }

    fn encode(&self, out: &mut Vec<u8>) {
        super::put_header(out, IndexKind::StringTree);
        put_u32(out, self.run_limit);
        put_u64(out, self.root.len);
        self.root.encode(out, true);
    }
}
