//! [`Inserter`]: a run of inserts into a [`SkipList`] under one hold of its writer lock,
//! each searching from where the last one went (see the type).

use super::{node_bytes, write_node, Node, NodeRef, SkipList, Writer, MAX_HEIGHT};
use std::cmp::Ordering;
use std::ptr::{self, NonNull};
use std::sync::atomic::Ordering as AtomicOrdering;

/// The levels an [`Inserter`] climbs looking for a bracket before it searches from the head
/// (a level-`l` bracket spans about `2^l` entries).
const MAX_CLIMB: usize = 6;

/// A run of inserts under one hold of a [`SkipList`]'s writer lock. It keeps where the
/// last insert went at every level (a "splice": after `prev[l]`, before `next[l]`); the
/// next insert climbs from level 0 to the first level whose pair still brackets its key
/// and walks down from there, so inserts in key order walk a few links each instead of a
/// descent from the head. Any order is correct: a key outside the lowest [`MAX_CLIMB`]
/// brackets searches from the head. The splice stays valid because nothing else inserts
/// while the lock is held.
pub(crate) struct Inserter<'a> {
    list: &'a SkipList,
    writer: parking_lot::MutexGuard<'a, Writer>,
    /// Per level, the last node before the last insert's position (the head at first).
    prev: [NonNull<Node>; MAX_HEIGHT],
    /// Per level, the node after that position and its exact link prefix.
    next: [(*mut Node, u64); MAX_HEIGHT],
    /// Whether `prev` and `next` hold a search's result (false before the first insert).
    placed: bool,
}

impl<'a> Inserter<'a> {
    /// Takes `list`'s writer lock; the first insert searches from the head.
    pub(super) fn new(list: &'a SkipList) -> Self {
        Inserter {
            list,
            writer: list.writer.lock(),
            prev: [list.head; MAX_HEIGHT],
            next: [(ptr::null_mut(), 0); MAX_HEIGHT],
            placed: false,
        }
    }

    /// [`SkipList::insert_over`] through this run's splice.
    pub(crate) fn insert_over(
        &mut self,
        user_key: &[u8],
        trailer: u64,
        value: &[u8],
    ) -> (usize, Option<NodeRef<'a>>) {
        let list = self.list;
        let probe = list.probe(user_key, trailer);
        // Under the writer lock every link's prefix is exact, so a successor with a smaller
        // prefix is before the probe without a look at it.
        let before = |prefix: u64, n: NodeRef<'_>| {
            prefix < probe.prefix || (prefix == probe.prefix && n.cmp(&probe) == Ordering::Less)
        };
        // The lowest level whose pair brackets the probe. Pairs nest (a higher level's
        // bracket holds a lower one's), so every level above it brackets it too. Only the
        // lowest levels are tried: a bracket higher up spans so many entries that the walk
        // down from it costs about a descent from the head, and the climb would be waste.
        let bracketed = if self.placed {
            (0..MAX_CLIMB).find(|&l| {
                let prev = NodeRef::new(self.prev[l]);
                let (succ, prefix) = self.next[l];
                (prev.node == list.head || prev.cmp(&probe) == Ordering::Less)
                    && NonNull::new(succ).is_none_or(|n| !before(prefix, NodeRef::new(n)))
            })
        } else {
            None
        };
        let successor = match bracketed {
            Some(0) => NonNull::new(self.next[0].0).map(NodeRef::new),
            start => {
                // Walk down from the bracket, or from the head (levels above the list's
                // height stay head → null).
                let (from, level, known_after) = match start {
                    Some(l) => (NodeRef::new(self.prev[l]), l - 1, self.next[l].0),
                    None => {
                        self.prev = [list.head; MAX_HEIGHT];
                        self.next = [(ptr::null_mut(), 0); MAX_HEIGHT];
                        self.placed = true;
                        let top = list.height.load(AtomicOrdering::Relaxed).max(1) - 1;
                        (list.head(), top, ptr::null_mut())
                    }
                };
                let (prev, next) = (&mut self.prev, &mut self.next);
                let leave = |lv: usize, p: NodeRef<'_>, n: *mut Node, pf: u64| {
                    prev[lv] = p.node;
                    next[lv] = (n, pf);
                };
                list.descend_from(from, level, known_after, before, leave).1
            }
        };
        let (prev, next) = (&mut self.prev, &mut self.next);
        // Under the writer lock the link's prefix is exact: a successor with another prefix
        // holds another key, without a look at it.
        let same_key = successor.filter(|n| next[0].1 == probe.prefix && n.user_key() == user_key);
        if same_key.is_some_and(|n| n.trailer() == trailer) {
            return (0, None);
        }
        let height = self.writer.random_height();
        let Writer { nodes, values, .. } = &mut *self.writer;
        let node = write_node(nodes, values, height, &probe, value);
        let node_ref = NodeRef::new(node);
        for (level, (succ, prefix)) in next.iter().enumerate().take(height) {
            // Not yet reachable: nothing reads these links until the stores below.
            let link = node_ref.link(level);
            link.next_prefix.store(*prefix, AtomicOrdering::Relaxed);
            link.next.store(*succ, AtomicOrdering::Relaxed);
        }
        if height > list.height.load(AtomicOrdering::Relaxed) {
            // A reader that sees the new height before the links finds the head's upper
            // links empty and descends: harmless.
            list.height.store(height, AtomicOrdering::Relaxed);
        }
        for (level, p) in prev.iter_mut().enumerate().take(height) {
            // The prefix first: a reader that loads the new address reads its prefix (or a
            // later, smaller one); one that loads the old address may read this smaller one.
            let link = NodeRef::new(*p).link(level);
            link.next_prefix.store(probe.prefix, AtomicOrdering::Relaxed);
            link.next.store(node.as_ptr(), AtomicOrdering::Release);
            // The splice: the new node is now the last one before the position at this level.
            *p = node;
        }
        list.len.fetch_add(1, AtomicOrdering::Release);
        (node_bytes(height, user_key.len()) + value.len(), same_key)
    }
}

