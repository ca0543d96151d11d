//! The sets of a [`ChunkCache`] and their replacement: a lookup finds its way under the
//! set's lock; an insert reserves its bytes, evicting by the set's policy (see the module
//! doc of `chunk_cache`).

use super::{mix, reduce, ChunkCache, Index, CHUNK_OVERHEAD, MAX_REFS, NEIGHBOUR_SETS, PROBATION_WAYS, WAYS};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// The ways of one set: their policy state and chunks (keys and hints are in [`Set`]).
/// Laid out as declared, after the lock: the small fields, then the chunks (see [`Set`]).
#[derive(Default)]
#[repr(C)]
pub(super) struct Ways {
    hand: u8,
    /// One bit per way: protected (hit since it entered), else on probation.
    protected: u8,
    /// One bit per way: it holds a decompressed data block (format 6), with or without the
    /// block's value chunk after it; else a value chunk.
    blocks: u8,
    refs: [u8; WAYS],
    /// Per way holding a data block: the block's bytes; the rest of its chunk (if any) is
    /// the block's decompressed value chunk.
    splits: [u32; WAYS],
    chunks: [Option<Arc<[u8]>>; WAYS],
}

impl Ways {
    /// One bit per occupied way.
    fn occupied(&self) -> u8 {
        self.chunks
            .iter()
            .enumerate()
            .fold(0u8, |m, (i, c)| m | (u8::from(c.is_some()) << i))
    }

    /// One bit per way holding value bytes: a value chunk, or a data block with its value
    /// chunk.
    pub(super) fn values(&self) -> u8 {
        let mut bare_blocks = 0u8;
        for (i, (chunk, split)) in self.chunks.iter().zip(self.splits).enumerate() {
            let bare = chunk.as_ref().is_some_and(|c| c.len() <= split as usize);
            bare_blocks |= u8::from(bare) << i;
        }
        self.occupied() & !(self.blocks & bare_blocks)
    }
}

/// One set, on cache lines of its own, laid out so that a hit reads two of them: first the
/// lock and the ways (their policy fields, splits and chunks: 96 bytes), then each way's key
/// (the way search) in the rest of the second line, then each way's chunk address, which only
/// prefetch hints read (`a_hit_reads_two_lines_of_its_set`).
#[derive(Default)]
#[repr(C, align(64))]
pub(super) struct Set {
    pub(super) ways: Mutex<Ways>,
    /// Each way's packed key ([`pack`]; 0: empty): written under the lock; read without it
    /// only for prefetch hints.
    pub(super) keys: [AtomicU64; WAYS],
    /// Each way's chunk address (0: empty): a prefetch hint only.
    pub(super) addrs: [AtomicUsize; WAYS],
}

/// `(table, block)` as one word, `table << 32 | block`; `None` past 32 bits of either (such
/// blocks are not cached: a table number past 2^32 means four billion tables opened).
pub(super) fn pack(table: u64, block: u64) -> Option<u64> {
    (table < 1 << 32 && block < 1 << 32).then_some(table << 32 | block)
}

impl Set {
    /// The way holding `(table, block)` (loads only; exact under the set's lock).
    pub(super) fn way_of(&self, table: u64, block: u64) -> Option<usize> {
        let key = pack(table, block)?;
        (0..WAYS).find(|&i| self.keys.get(i).is_some_and(|k| k.load(Ordering::Relaxed) == key))
    }

    /// Publishes way `i`'s key and chunk address (under the set's lock; `None`: empty).
    pub(super) fn label(&self, i: usize, key: Option<(u64, &Arc<[u8]>)>) {
        if let (Some(k), Some(a)) = (self.keys.get(i), self.addrs.get(i)) {
            k.store(key.map_or(0, |(k, _)| k), Ordering::Relaxed);
            a.store(key.map_or(0, |(_, c)| c.as_ptr() as usize), Ordering::Relaxed);
        }
    }
}

impl ChunkCache {
    /// A copy of `[at, at + len)` of the cached chunk of `(table, block)`; when
    /// `referencing`, promotes the way off probation or raises its reference count.
    pub(super) fn lookup(&self, table: u64, block: u64, at: usize, len: usize, referencing: bool) -> Option<Vec<u8>> {
        self.lookup_with(table, block, referencing, |chunk, _| {
            chunk.get(at..at.checked_add(len)?).map(<[u8]>::to_vec)
        })
    }

    /// `read` of the cached chunk of `(table, block)` and its split (the bytes of the data
    /// block a block way holds), under its set's lock (`None` when it is not cached or
    /// `read` gives nothing); when `referencing`, promotes the way off probation or raises
    /// its reference count.
    pub(super) fn lookup_with<T>(
        &self,
        table: u64,
        block: u64,
        referencing: bool,
        read: impl FnOnce(&Arc<[u8]>, usize) -> Option<T>,
    ) -> Option<T> {
        let set = self.set_of(table, block, None)?;
        let mut guard = set.ways.lock();
        let i = set.way_of(table, block)?;
        let ways = &mut *guard;
        let split = *ways.splits.get(i)? as usize;
        let value = read(ways.chunks.get(i)?.as_ref()?, split)?;
        if referencing {
            if let Some(r) = ways.refs.get_mut(i) {
                let bit = 1u8 << i;
                *r = match ways.protected & bit {
                    0 => 1,
                    _ => (*r + 1).min(MAX_REFS),
                };
                ways.protected |= bit;
            }
        }
        Some(value)
    }

    /// Frees room for a data block of `set_no`'s: evicts a value chunk (or the value chunk
    /// of a cached block) from one of the [`NEIGHBOUR_SETS`] sets after it (the budget is
    /// shared, the ways are not: a set without value bytes of its own must not keep blocks
    /// out while values fill others). False when they hold none. Takes one set's lock at a
    /// time.
    fn evict_value_near(&self, index: &Index, set_no: usize) -> bool {
        (1..=NEIGHBOUR_SETS).any(|step| {
            index
                .sets
                .get((set_no + step) % index.sets.len())
                .is_some_and(|set| {
                    let mut ways = set.ways.lock();
                    ways.values() != 0 && self.evict_one(set, &mut ways, Room::Bytes, None)
                })
        })
    }

    /// Inserts `chunk` for `(table, block)` on probation — a value chunk, or (`is_block`) a
    /// decompressed data block without its values: reserves its bytes, evicting from its set
    /// until they fit and a way is free. False when nothing was inserted (the set emptied
    /// first, or the chunk is cached already).
    pub(super) fn insert(&self, table: u64, block: u64, chunk: Arc<[u8]>, is_block: bool) -> bool {
        let weight = chunk.len() as u64 + CHUNK_OVERHEAD;
        let Some(index) = self.index(Some(weight)) else {
            return false;
        };
        if chunk.is_empty() || weight > index.chunk_budget / WAYS as u64 {
            return false;
        }
        let set_no = reduce(mix(table, block), index.sets.len());
        let (Some(set), Some(key), Ok(split)) =
            (index.sets.get(set_no), pack(table, block), u32::try_from(chunk.len()))
        else {
            return false;
        };
        let mut guard = set.ways.lock();
        if set.way_of(table, block).is_some() {
            return false;
        }
        let mut borrowed = 0;
        loop {
            let empty = guard.chunks.iter().position(Option::is_none);
            if let Some(i) = empty.filter(|_| self.reserve(weight, index.chunk_budget)) {
                set.label(i, Some((key, &chunk)));
                let ways = &mut *guard;
                if let (Some(c), Some(r), Some(s)) =
                    (ways.chunks.get_mut(i), ways.refs.get_mut(i), ways.splits.get_mut(i))
                {
                    (*c, *r, *s) = (Some(chunk), 0, split);
                }
                if is_block {
                    ways.blocks |= 1 << i;
                }
                self.chunks.fetch_add(1, Ordering::Relaxed);
                self.inserts.fetch_add(1, Ordering::Relaxed);
                return true;
            }
            // A block first takes the place of value bytes: its set's, else (a free way
            // waiting for bytes) a neighbouring set's; only then of other blocks.
            let own_values = guard.values() != 0;
            if is_block && !own_values && empty.is_some() && borrowed < NEIGHBOUR_SETS {
                borrowed += 1;
                drop(guard);
                let freed = self.evict_value_near(index, set_no);
                guard = set.ways.lock();
                if set.way_of(table, block).is_some() {
                    return false;
                }
                if freed {
                    continue;
                }
                borrowed = NEIGHBOUR_SETS;
            }
            let room = match (empty.is_some(), is_block) {
                (true, false) => Room::Bytes,
                (true, true) => Room::BlockBytes,
                (false, false) => Room::Way,
                (false, true) => Room::BlockWay,
            };
            if !self.evict_one(set, &mut guard, room, None) {
                return false;
            }
        }
    }

    /// Adds `values`, the decompressed value chunk of data block `(table, block)`, to the
    /// block's cached entry, when that is still `cached` (the same allocation, without
    /// values): the entry is then the block followed by its values, one chunk, so that a
    /// lookup finds its slots and its value with one probe of the cache. Reserves the
    /// values' bytes by evicting value bytes of other ways of its set (value chunks, or
    /// other blocks' values), never a block. The joined entry's address when it was added.
    pub(super) fn attach(&self, table: u64, block: u64, cached: &Arc<[u8]>, values: &[u8]) -> Option<usize> {
        let index = self.index(None)?;
        let weight = (cached.len() + values.len()) as u64 + CHUNK_OVERHEAD;
        if values.is_empty() || weight > index.chunk_budget / WAYS as u64 {
            return None;
        }
        let (Some(set), Some(key)) = (self.set_of(table, block, None), pack(table, block)) else {
            return None;
        };
        // Built before the lock is taken (a few KiB copied): the set stays locked briefly.
        let mut joined = Vec::with_capacity(cached.len() + values.len());
        joined.extend_from_slice(cached);
        joined.extend_from_slice(values);
        let joined: Arc<[u8]> = joined.into();
        let mut guard = set.ways.lock();
        let i = set.way_of(table, block)?;
        let same = guard.chunks.get(i).and_then(Option::as_ref).is_some_and(|c| Arc::ptr_eq(c, cached));
        if !same || guard.blocks & (1 << i) == 0 {
            return None;
        }
        while !self.reserve(values.len() as u64, index.chunk_budget) {
            if !self.evict_one(set, &mut guard, Room::Bytes, Some(i)) {
                return None;
            }
        }
        set.label(i, Some((key, &joined)));
        let addr = joined.as_ptr() as usize;
        if let Some(c) = guard.chunks.get_mut(i) {
            *c = Some(joined);
        }
        self.inserts.fetch_add(1, Ordering::Relaxed);
        Some(addr)
    }

    /// Makes room in `set` for what `room` says, except at way `keep` (see the module doc):
    /// bytes come from ways holding value bytes — a value chunk is evicted, a block's value
    /// chunk dropped (the block stays) — and, for a data block, from blocks when the set
    /// holds no value bytes; a way comes from a value chunk evicted, or for a data block
    /// from any way. Among the candidates, the oldest on probation while
    /// [`PROBATION_WAYS`] are, else the first protected way the hand finds at reference
    /// count 0. False when there is nothing to evict.
    fn evict_one(&self, set: &Set, ways: &mut Ways, room: Room, keep: Option<usize>) -> bool {
        let keep = keep.map_or(0, |i| 1u8 << i);
        let occupied = ways.occupied() & !keep;
        let (preferred, for_block) = match room {
            Room::Bytes => (ways.values() & !keep, false),
            Room::BlockBytes => (ways.values() & !keep, true),
            Room::Way => (occupied & !ways.blocks, false),
            Room::BlockWay => (occupied & !ways.blocks, true),
        };
        let candidates = match preferred {
            0 if for_block => occupied,
            0 => return false,
            some => some,
        };
        let strip = matches!(room, Room::Bytes | Room::BlockBytes);
        let Some(i) = Self::victim(ways, candidates) else {
            return false;
        };
        let has_values = ways.values() & (1 << i) != 0;
        if strip && ways.blocks & (1 << i) != 0 && has_values {
            self.strip(set, ways, i);
        } else {
            self.clear(set, ways, i);
        }
        true
    }

    /// The way among `candidates` (a non-empty mask) to give up: the first on probation
    /// from the hand while [`PROBATION_WAYS`] are (or all are), else the first protected
    /// one the hand finds at reference count 0, lowering the counts it passes. Moves the hand
    /// past it.
    fn victim(ways: &mut Ways, candidates: u8) -> Option<usize> {
        let probation = candidates & !ways.protected;
        if probation.count_ones() >= PROBATION_WAYS || candidates == probation {
            let i = (0..WAYS)
                .map(|step| (usize::from(ways.hand) + step) % WAYS)
                .find(|&i| probation & (1 << i) != 0)?;
            ways.hand = ((i + 1) % WAYS) as u8;
            return Some(i);
        }
        for _ in 0..(usize::from(MAX_REFS) + 1) * WAYS {
            let i = usize::from(ways.hand) % WAYS;
            ways.hand = ((i + 1) % WAYS) as u8;
            let candidate = ways.protected & candidates & (1 << i) != 0;
            let Some(r) = ways.refs.get_mut(i).filter(|_| candidate) else {
                continue;
            };
            if *r > 0 {
                *r -= 1;
                continue;
            }
            return Some(i);
        }
        None
    }

    /// Drops the value chunk of the data block at way `i` of `set` (REQUIRES: it holds one),
    /// keeping the block, its key and its standing; gives the values' bytes back. The block
    /// is copied into an allocation of its own (readers holding the joined chunk keep it).
    fn strip(&self, set: &Set, ways: &mut Ways, i: usize) {
        let split = ways.splits.get(i).map_or(0, |&s| s as usize);
        let Some(chunk) = ways.chunks.get_mut(i) else {
            return;
        };
        let Some(block) = chunk.as_ref().and_then(|c| c.get(..split)).map(Arc::<[u8]>::from) else {
            return;
        };
        let freed = chunk.as_ref().map_or(0, |c| c.len() - split) as u64;
        if let Some(key) = set.keys.get(i).map(|k| k.load(Ordering::Relaxed)) {
            set.label(i, Some((key, &block)));
        }
        *chunk = Some(block);
        self.chunk_bytes.fetch_sub(freed, Ordering::Relaxed);
    }

    /// Empties way `i` of `set`, giving its chunk's bytes back.
    fn clear(&self, set: &Set, ways: &mut Ways, i: usize) {
        set.label(i, None);
        ways.protected &= !(1 << i);
        ways.blocks &= !(1 << i);
        if let Some(r) = ways.refs.get_mut(i) {
            *r = 0;
        }
        if let Some(chunk) = ways.chunks.get_mut(i).and_then(Option::take) {
            self.chunk_bytes
                .fetch_sub(chunk.len() as u64 + CHUNK_OVERHEAD, Ordering::Relaxed);
            self.chunks.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Reserves `weight` bytes of the chunks' `budget`; false when they do not fit.
    fn reserve(&self, weight: u64, budget: u64) -> bool {
        self.chunk_bytes
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| {
                used.checked_add(weight).filter(|&u| u <= budget)
            })
            .is_ok()
    }

    /// Removes the chunk of `(table, block)` if it is cached.
    pub(super) fn remove(&self, table: u64, block: u64) {
        if let Some(set) = self.set_of(table, block, None) {
            let mut guard = set.ways.lock();
            if let Some(i) = set.way_of(table, block) {
                self.clear(set, &mut guard, i);
            }
        }
    }
}

/// What [`ChunkCache::evict_one`] makes room for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Room {
    /// Bytes, for a value chunk (or a block's values) given a way.
    Bytes,
    /// Bytes, for a data block given a way.
    BlockBytes,
    /// A way, for a value chunk.
    Way,
    /// A way, for a data block.
    BlockWay,
}
