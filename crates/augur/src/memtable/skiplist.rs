//! The memtable's skiplist: internal entries (user key, trailer, value) in arenas the list
//! owns, ordered as internal keys; a node holds its links and its key, its value sits in a
//! separate arena.
//!
//! Why not a general-purpose concurrent skiplist: a memtable only ever inserts (each write
//! has a unique seqno) and is dropped whole after its flush, so nodes never need to be
//! unlinked, reference-counted or reclaimed one by one. Nodes are bump-allocated from
//! blocks the list owns and freed with it; a node is its header, its tower of links, then
//! its key (56 bytes for a 16-byte key of height 1, where crossbeam's node with its epoch
//! bookkeeping took about 100), so the nodes a search walks are dense in memory. Values go
//! to their own arena: interleaved with the nodes they doubled the memory a search's cache
//! misses land in, and made inserts slower than crossbeam's (measured: 2.36–3.19 µs vs
//! 2.06–2.57 per insert into a 64 MiB memtable of 16 + 128-byte entries). Dropping a
//! memtable frees a few dozen blocks instead of two allocations per entry
//! (docs/benchmarks/write-path.md, "Arena skiplist").
//!
//! Each link carries, beside the successor's address, the successor's key prefix (a u64 by
//! the list's [`PrefixRule`]: its first 8 bytes, or the bytes after a prefix the previous
//! memtable's keys all shared): a search decides "the successor is past the key sought" from the
//! node it stands on, without loading the successor, and about half of a search's steps
//! decide that. The inserting thread sees exact prefixes; a reader may see the prefix of a
//! node inserted into the link after the address it loaded, which is never larger, so a
//! reader trusts a prefix only to rule a successor out (see [`SkipList::descend`]).
//!
//! Invariants:
//! - Inserts are serialised by the writer lock (the database's group-commit leader is the
//!   only inserting thread; the lock makes any other caller safe too). Readers take no lock.
//! - A node is completely written — header, key, value and its own links — before the
//!   first link to it is stored with `Release`; readers load links with `Acquire`, so a
//!   reader that reaches a node sees all of it. After that only its links change, and only
//!   through atomics.
//! - Nodes are never unlinked, moved or freed while the list lives: a [`NodeRef`] borrowed
//!   from the list stays valid for the borrow.
//! - Links at each level are sorted by (user key, newest trailer first); a node is linked
//!   bottom-up, so level 0 always holds every published node in order.
//! - A link's prefix is stored before its address (the address with `Release`), so a reader
//!   that loads an address with `Acquire` and then the prefix reads the prefix of that node
//!   or of one inserted before it since: a lower bound of the node's prefix.
//!
//! Heights: branching factor 2 (a node reaches level `l + 1` with probability 1/2), at most
//! [`MAX_HEIGHT`]; measured faster than RocksDB's 4 here (docs/benchmarks/write-path.md).

use super::arena::{Arena, NODE_ALIGN};
use super::prefix_rule::PrefixRule;
use crate::key;
use parking_lot::Mutex;
use std::cmp::Ordering;
use std::marker::PhantomData;
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering as AtomicOrdering};

mod inserter;
pub(crate) use inserter::Inserter;

/// Most levels a node links into (2^20 ≈ 1M entries before searches lengthen).
const MAX_HEIGHT: usize = 20;
const BITS_PER_LEVEL: usize = 1;

/// A node's fixed part; its tower of `height` links follows, then the key.
#[repr(C)]
struct Node {
    trailer: u64,
    /// The value's bytes, in the value arena (dangling when the value is empty).
    value: NonNull<u8>,
    value_len: u32,
    key_len: u16,
    height: u8,
    _pad: u8,
}

/// One level of a node's tower: its successor at that level and the successor's key prefix.
#[repr(C)]
struct Link {
    next: AtomicPtr<Node>,
    /// [`PrefixRule::prefix`] of `next`'s user key (0 while `next` is null); a lower bound of it for
    /// a reader (module invariants).
    next_prefix: AtomicU64,
}

const HEADER_BYTES: usize = std::mem::size_of::<Node>();
const LINK_BYTES: usize = std::mem::size_of::<Link>();

/// Bytes of a node of `height` links holding a `key_len`-byte key, rounded up to
/// [`NODE_ALIGN`].
fn node_bytes(height: usize, key_len: usize) -> usize {
    let raw = HEADER_BYTES + height * LINK_BYTES + key_len;
    raw.div_ceil(NODE_ALIGN) * NODE_ALIGN
}

/// A search key: a user key and a trailer, with the user key's prefix computed once.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Probe<'a> {
    prefix: u64,
    user_key: &'a [u8],
    trailer: u64,
}



/// A node of a [`SkipList`], borrowed from it: its key, trailer, value and successor.
#[derive(Clone, Copy)]
pub(crate) struct NodeRef<'a> {
    node: NonNull<Node>,
    _list: PhantomData<&'a SkipList>,
}

impl<'a> NodeRef<'a> {
    fn new(node: NonNull<Node>) -> Self {
        NodeRef {
            node,
            _list: PhantomData,
        }
    }

    #[inline]
    fn header(self) -> &'a Node {
        #[expect(unsafe_code, reason = "a node's header in the arena; docs/UNSAFE.md")]
        // SAFETY: a NodeRef is made only from the head or from a link loaded with Acquire,
        // and both point at nodes written completely before they were published (module
        // invariants); the arena holding it lives as long as the list borrowed for 'a, and
        // the header is never written after publication.
        unsafe {
            self.node.as_ref()
        }
    }

    #[inline]
    fn link(self, level: usize) -> &'a Link {
        debug_assert!(level < self.header().height as usize);
        #[expect(unsafe_code, reason = "a node's link after its header; docs/UNSAFE.md")]
        // SAFETY: the node's allocation holds `height` links right after its header, each
        // aligned to 8 (the node and the header are); `level < height` holds at every call
        // (searches only descend from the list's height, and a node of height h is linked
        // only at levels below h). Links are only ever accessed atomically. Lifetime as in
        // `header`.
        unsafe {
            &*self
                .node
                .as_ptr()
                .cast::<u8>()
                .add(HEADER_BYTES + level * LINK_BYTES)
                .cast::<Link>()
        }
    }

    /// The user key.
    #[inline]
    pub(crate) fn user_key(self) -> &'a [u8] {
        let h = self.header();
        #[expect(unsafe_code, reason = "a node's key after its tower; docs/UNSAFE.md")]
        // SAFETY: the node's allocation holds `key_len` key bytes after its tower, written by
        // the insert before the node was published and never written again; lifetime as in
        // `header`.
        unsafe {
            std::slice::from_raw_parts(
                self.node
                    .as_ptr()
                    .cast::<u8>()
                    .add(HEADER_BYTES + h.height as usize * LINK_BYTES),
                h.key_len as usize,
            )
        }
    }

    /// The value bytes (inline value, encoded pointer or empty).
    #[inline]
    pub(crate) fn value(self) -> &'a [u8] {
        let h = self.header();
        #[expect(unsafe_code, reason = "a node's value in the value arena; docs/UNSAFE.md")]
        // SAFETY: `value` points at `value_len` bytes of the list's value arena (or dangles,
        // aligned, for an empty value), written before the node was published and never
        // written again; the arena lives as long as the list borrowed for 'a.
        unsafe {
            std::slice::from_raw_parts(h.value.as_ptr(), h.value_len as usize)
        }
    }

    /// The trailer (seqno and kind).
    #[inline]
    pub(crate) fn trailer(self) -> u64 {
        self.header().trailer
    }

    /// The next node at level 0, in internal order.
    #[inline]
    pub(crate) fn next(self) -> Option<NodeRef<'a>> {
        self.next_at(0)
    }

    #[inline]
    fn next_at(self, level: usize) -> Option<NodeRef<'a>> {
        NonNull::new(self.link(level).next.load(AtomicOrdering::Acquire)).map(NodeRef::new)
    }

    /// Internal-key order of this node against `probe`.
    #[inline]
    fn cmp(self, probe: &Probe<'_>) -> Ordering {
        key::compare(
            self.user_key(),
            self.trailer(),
            probe.user_key,
            probe.trailer,
        )
    }
}

/// The inserting side: the arenas and the height generator, under the writer lock.
struct Writer {
    nodes: Arena,
    values: Arena,
    /// xorshift64 state for node heights.
    rng: u64,
}

impl Writer {
    /// 1 + the number of times a fair 4-sided die shows 0 in a row, at most [`MAX_HEIGHT`].
    fn random_height(&mut self) -> usize {
        let mut x = self.rng;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng = x;
        (1 + x.trailing_zeros() as usize / BITS_PER_LEVEL).min(MAX_HEIGHT)
    }
}

/// An insert-only skiplist of internal entries. See the module doc.
pub(crate) struct SkipList {
    /// A node of [`MAX_HEIGHT`] with no key, before every entry; never compared.
    head: NonNull<Node>,
    /// Levels in use (1 ..= MAX_HEIGHT); only grows.
    height: AtomicUsize,
    len: AtomicUsize,
    writer: Mutex<Writer>,
    /// How its links' prefixes are computed (fixed for the list's life).
    rule: PrefixRule,
}

// SAFETY: the list owns its arena; nodes are immutable after publication except their links,
// which are atomics; the arena itself is only touched under the writer lock. Sharing the
// list between threads shares nothing else.
#[expect(unsafe_code, reason = "nodes shared under the list's invariants; docs/UNSAFE.md")]
unsafe impl Send for SkipList {}
// SAFETY: as for Send.
#[expect(unsafe_code, reason = "nodes shared under the list's invariants; docs/UNSAFE.md")]
unsafe impl Sync for SkipList {}

impl std::fmt::Debug for SkipList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SkipList")
            .field("len", &self.len())
            .finish_non_exhaustive()
    }
}

impl SkipList {
    /// An empty list with plain prefixes.
    #[cfg(test)]
    pub(crate) fn new() -> Self {
        SkipList::with_rule(PrefixRule::default())
    }

    /// An empty list whose links carry prefixes by `rule`.
    pub(crate) fn with_rule(rule: PrefixRule) -> Self {
        let mut nodes = Arena::new();
        let mut values = Arena::new();
        let empty = Probe {
            prefix: 0,
            user_key: &[],
            trailer: 0,
        };
        let head = write_node(&mut nodes, &mut values, MAX_HEIGHT, &empty, &[]);
        SkipList {
            head,
            height: AtomicUsize::new(1),
            len: AtomicUsize::new(0),
            writer: Mutex::new(Writer {
                nodes,
                values,
                rng: 0x2545_f491_4f6c_dd1d,
            }),
            rule,
        }
    }

    /// The search key `(user_key, trailer)`, its prefix computed by this list's rule.
    #[inline]
    pub(crate) fn probe<'k>(&self, user_key: &'k [u8], trailer: u64) -> Probe<'k> {
        Probe {
            prefix: self.rule.prefix(user_key),
            user_key,
            trailer,
        }
    }

    fn head(&self) -> NodeRef<'_> {
        NodeRef::new(self.head)
    }

    /// Entries inserted.
    pub(crate) fn len(&self) -> usize {
        self.len.load(AtomicOrdering::Acquire)
    }

    /// Bytes of arena blocks allocated (entries plus the unused tails of current blocks).
    #[cfg(test)]
    pub(crate) fn allocated_bytes(&self) -> usize {
        let w = self.writer.lock();
        w.nodes.allocated_bytes() + w.values.allocated_bytes()
    }

    /// [`Self::insert_over`], returning only the bytes.
    #[cfg(test)]
    pub(crate) fn insert(&self, user_key: &[u8], trailer: u64, value: &[u8]) -> usize {
        self.insert_over(user_key, trailer, value).0
    }

    /// Inserts `(user_key, trailer) → value` and returns the bytes the entry takes (node
    /// and value), or 0 when the internal key is already present (a WAL replayed twice
    /// carries the same writes twice): the first entry stays. REQUIRES: `user_key` at most
    /// 65,535 bytes and `value` under 4 GiB ([`crate::key::MAX_KEY_LEN`]; the write path
    /// admits values of half that).
    ///
    /// Also returns the entry of the same user key the new one was inserted in front of, if
    /// any: the key's newest entry before this insert when the trailers arrive in increasing
    /// order (as writes do), which the new entry shadows.
    #[cfg(test)]
    pub(crate) fn insert_over(
        &self,
        user_key: &[u8],
        trailer: u64,
        value: &[u8],
    ) -> (usize, Option<NodeRef<'_>>) {
        self.inserter().insert_over(user_key, trailer, value)
    }

    /// Takes the writer lock for a run of inserts ([`Inserter`]): each starts its search
    /// where the previous one ended, so a run in key order costs a short walk per entry
    /// instead of a descent from the head.
    pub(crate) fn inserter(&self) -> Inserter<'_> {
        Inserter::new(self)
    }

    /// Walks down from the head and returns the last node `n` with `before(prefix, n)` (the
    /// head when there is none) with the successor it had at level 0 when the walk passed
    /// it, calling `leave(level, last, its successor, the successor's link prefix)` as it
    /// leaves each level. `before` must hold for a prefix of the list (it is a "less than"
    /// test); the `prefix` it gets is the link's: exact for the inserting thread, a lower
    /// bound of `n`'s prefix for a reader (module invariants).
    ///
    /// The successor is the one the walk compared, not a later load of the link: an entry
    /// inserted meanwhile between the two may be one `before` holds for (a newer version
    /// of the key sought, above the reader's snapshot).
    #[inline]
    fn descend(
        &self,
        before: impl Fn(u64, NodeRef<'_>) -> bool,
        leave: impl FnMut(usize, NodeRef<'_>, *mut Node, u64),
    ) -> (NodeRef<'_>, Option<NodeRef<'_>>) {
        let top = self.height.load(AtomicOrdering::Relaxed).max(1) - 1;
        self.descend_from(self.head(), top, ptr::null_mut(), before, leave)
    }

    /// [`Self::descend`] from `x` at `level` instead of the head at the top: `before` must
    /// hold for `x` (or `x` be the head), and `known_after` is a node known not `before`
    /// (or null) that the walk need not compare.
    #[inline]
    fn descend_from<'l>(
        &'l self,
        mut x: NodeRef<'l>,
        mut level: usize,
        mut known_after: *mut Node,
        before: impl Fn(u64, NodeRef<'_>) -> bool,
        mut leave: impl FnMut(usize, NodeRef<'_>, *mut Node, u64),
    ) -> (NodeRef<'l>, Option<NodeRef<'l>>) {
        // `known_after`: the successor found not `before` one level up; equal successors
        // need no compare.
        loop {
            let link = x.link(level);
            let next = link.next.load(AtomicOrdering::Acquire);
            // After the address (Acquire): this node's prefix or a smaller, later one.
            let prefix = link.next_prefix.load(AtomicOrdering::Relaxed);
            match NonNull::new(next) {
                Some(n) if next != known_after && before(prefix, NodeRef::new(n)) => {
                    x = NodeRef::new(n);
                }
                _ => {
                    leave(level, x, next, prefix);
                    if level == 0 {
                        return (x, NonNull::new(next).map(NodeRef::new));
                    }
                    known_after = next;
                    level -= 1;
                }
            }
        }
    }

    /// The last node `before` holds for, or `None` when it holds for none.
    fn last_where(&self, before: impl Fn(u64, NodeRef<'_>) -> bool) -> Option<NodeRef<'_>> {
        let (last, _) = self.descend(before, |_, _, _, _| {});
        (last.node != self.head).then_some(last)
    }

    /// About `want` entries spread evenly over the list, in order: the nodes of the highest
    /// level holding at least `want` of them (a node reaches each level with probability
    /// 1/2, independent of its key, so a level is a uniform sample of the entries). Fewer
    /// when the list holds fewer; reads only that level's links.
    pub(crate) fn sample(&self, want: usize) -> Vec<NodeRef<'_>> {
        let want = want.max(1);
        let ratio = (self.len() / want).max(1);
        let level = (ratio.ilog2() as usize).min(self.height.load(AtomicOrdering::Acquire) - 1);
        let mut out = Vec::with_capacity(want * 2);
        let mut node = self.head().next_at(level);
        while let Some(n) = node {
            out.push(n);
            node = n.next_at(level);
        }
        out
    }

    /// The first entry, in internal order.
    pub(crate) fn first(&self) -> Option<NodeRef<'_>> {
        self.head().next()
    }

    /// The last entry.
    pub(crate) fn last(&self) -> Option<NodeRef<'_>> {
        self.last_where(|_, _| true)
    }

    /// The first entry at or after `probe` (`inclusive`), or strictly after it.
    pub(crate) fn seek(&self, probe: &Probe<'_>, inclusive: bool) -> Option<NodeRef<'_>> {
        let (_, next) = if inclusive {
            self.descend(|p, n| read_before(p, n, probe, false), |_, _, _, _| {})
        } else {
            self.descend(|p, n| read_before(p, n, probe, true), |_, _, _, _| {})
        };
        next
    }

    /// The last entry before `probe`, or at or before it when `inclusive`.
    pub(crate) fn seek_last_before(
        &self,
        probe: &Probe<'_>,
        inclusive: bool,
    ) -> Option<NodeRef<'_>> {
        if inclusive {
            self.last_where(|p, n| read_before(p, n, probe, true))
        } else {
            self.last_where(|p, n| read_before(p, n, probe, false))
        }
    }
}

/// Whether a reader's link to `node`, carrying `prefix`, leads before `probe` (at or before
/// it when `or_equal`). A prefix above the probe's rules the node out (a reader's prefix is a
/// lower bound of the node's); otherwise the keys decide. Call sites pass `or_equal` as a
/// constant so each search compiles to its own comparison.
#[inline(always)]
fn read_before(prefix: u64, node: NodeRef<'_>, probe: &Probe<'_>, or_equal: bool) -> bool {
    prefix <= probe.prefix
        && match node.cmp(probe) {
            Ordering::Less => true,
            Ordering::Equal => or_equal,
            Ordering::Greater => false,
        }
}

/// Copies `value` into the value arena and allocates and writes the node of `key` with empty
/// links; returns the node, unpublished.
fn write_node(
    nodes: &mut Arena,
    values: &mut Arena,
    height: usize,
    key: &Probe<'_>,
    value: &[u8],
) -> NonNull<Node> {
    let user_key = key.user_key;
    let value_at = if value.is_empty() {
        NonNull::dangling()
    } else {
        let at = values.alloc(value.len());
        #[expect(unsafe_code, reason = "a value copied into a fresh allocation; docs/UNSAFE.md")]
        // SAFETY: `at` is a fresh, exclusively owned allocation of `value.len()` bytes.
        unsafe {
            ptr::copy_nonoverlapping(value.as_ptr(), at.as_ptr(), value.len());
        }
        at
    };
    let header = Node {
        trailer: key.trailer,
        value: value_at,
        value_len: u32::try_from(value.len()).expect("memtable values are under 4 GiB"),
        key_len: u16::try_from(user_key.len()).expect("keys are at most MAX_KEY_LEN bytes"),
        height: u8::try_from(height).unwrap_or(u8::MAX),
        _pad: 0,
    };
    let at = nodes.alloc(node_bytes(height, user_key.len()));
    #[expect(unsafe_code, reason = "a node written into a fresh allocation; docs/UNSAFE.md")]
    // SAFETY: `at` is a fresh, exclusively owned allocation of `node_bytes(height, key)`
    // bytes aligned to 8 (every node allocation is a multiple of 8): room for the header,
    // `height` links and the key at the offsets written here; nothing else can see it until
    // it is linked.
    unsafe {
        let base = at.as_ptr();
        base.cast::<Node>().write(header);
        let links = base.add(HEADER_BYTES).cast::<Link>();
        for level in 0..height {
            links.add(level).write(Link {
                next: AtomicPtr::new(ptr::null_mut()),
                next_prefix: AtomicU64::new(0),
            });
        }
        let key_at = base.add(HEADER_BYTES + height * LINK_BYTES);
        ptr::copy_nonoverlapping(user_key.as_ptr(), key_at, user_key.len());
    }
    at.cast()
}

#[cfg(test)]
mod tests;
