//! The sets of a [`ChunkCache`] and their replacement: a lookup finds its way under the
//! set's lock; an insert reserves its bytes, evicting by the set's policy (see the module
//! doc of `chunk_cache`).

use super::{mix, reduce, ChunkCache, Index, CHUNK_OVERHEAD, MAX_REFS, NEIGHBOUR_SETS, PROBATION_WAYS, WAYS};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// The ways of one set: their policy state and chunks (keys and hints are in [`Set`]).
#[derive(Default)]
pub(super) struct Ways {
    hand: u8,
    /// One bit per way: protected (hit since it entered), else on probation.
    protected: u8,
    /// One bit per way: it holds a decompressed data block (format 6), else a value chunk.
    blocks: u8,
    refs: [u8; WAYS],
    chunks: [Option<Arc<[u8]>>; WAYS],
}

impl Ways {
    /// One bit per way holding a value chunk.
    pub(super) fn values(&self) -> u8 {
        let occupied = self
            .chunks
            .iter()
            .enumerate()
            .fold(0u8, |m, (i, c)| m | (u8::from(c.is_some()) << i));
        occupied & !self.blocks
    }
}

/// One set, on cache lines of its own: first the line a prefetch hint reads (each way's key
/// and chunk address), then the lock and the ways.
#[derive(Default)]
#[repr(C, align(64))]
pub(super) struct Set {
    /// Each way's packed key ([`pack`]; 0: empty): written under the lock; read without it
    /// only for prefetch hints.
    pub(super) keys: [AtomicU64; WAYS],
    /// Each way's chunk address (0: empty): a prefetch hint only.
    pub(super) addrs: [AtomicUsize; WAYS],
    pub(super) ways: Mutex<Ways>,
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
        self.lookup_with(table, block, referencing, |chunk| {
            chunk.get(at..at.checked_add(len)?).map(<[u8]>::to_vec)
        })
    }

    /// `read` of the cached chunk of `(table, block)`, under its set's lock (`None` when it is
    /// not cached or `read` gives nothing); when `referencing`, promotes the way off
    /// probation or raises its reference count.
    pub(super) fn lookup_with<T>(
        &self,
        table: u64,
        block: u64,
        referencing: bool,
        read: impl FnOnce(&Arc<[u8]>) -> Option<T>,
    ) -> Option<T> {
        let set = self.set_of(table, block, None)?;
        let mut guard = set.ways.lock();
        let i = set.way_of(table, block)?;
        let ways = &mut *guard;
        let value = read(ways.chunks.get(i)?.as_ref()?)?;
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

    /// Frees room for a data block of `set_no`'s: evicts a value chunk from one of the
    /// [`NEIGHBOUR_SETS`] sets after it (the budget is shared, the ways are not: a set
    /// without value chunks of its own must not keep blocks out while values fill others).
    /// False when they hold none. Takes one set's lock at a time.
    fn evict_value_near(&self, index: &Index, set_no: usize) -> bool {
        (1..=NEIGHBOUR_SETS).any(|step| {
            index
                .sets
                .get((set_no + step) % index.sets.len())
                .is_some_and(|set| {
                    let mut ways = set.ways.lock();
                    ways.values() != 0 && self.evict_one(set, &mut ways, false)
                })
        })
    }

    /// Inserts `chunk` for `(table, block)` on probation: reserves its bytes, evicting from
    /// its set until they fit and a way is free (nothing is inserted when the set empties
    /// first or the chunk is cached already).
    pub(super) fn insert(&self, table: u64, block: u64, chunk: Arc<[u8]>, is_block: bool) {
        let weight = chunk.len() as u64 + CHUNK_OVERHEAD;
        let Some(index) = self.index(Some(weight)) else {
            return;
        };
        if chunk.is_empty() || weight > index.chunk_budget / WAYS as u64 {
            return;
        }
        let set_no = reduce(mix(table, block), index.sets.len());
        let Some(set) = index.sets.get(set_no) else {
            return;
        };
        let Some(key) = pack(table, block) else {
            return;
        };
        let mut guard = set.ways.lock();
        if set.way_of(table, block).is_some() {
            return;
        }
        let mut borrowed = 0;
        loop {
            let empty = guard.chunks.iter().position(Option::is_none);
            if let Some(i) = empty.filter(|_| self.reserve(weight, index.chunk_budget)) {
                set.label(i, Some((key, &chunk)));
                let ways = &mut *guard;
                if let (Some(c), Some(r)) = (ways.chunks.get_mut(i), ways.refs.get_mut(i)) {
                    (*c, *r) = (Some(chunk), 0);
                }
                if is_block {
                    ways.blocks |= 1 << i;
                }
                self.chunks.fetch_add(1, Ordering::Relaxed);
                self.inserts.fetch_add(1, Ordering::Relaxed);
                return;
            }
            // A block first takes the place of value chunks: its set's, else (a free way
            // waiting for bytes) a neighbouring set's; only then of other blocks.
            let own_values = guard.values() != 0;
            let free_way = guard.chunks.iter().any(Option::is_none);
            if is_block && !own_values && free_way && borrowed < NEIGHBOUR_SETS {
                borrowed += 1;
                drop(guard);
                let freed = self.evict_value_near(index, set_no);
                guard = set.ways.lock();
                if set.way_of(table, block).is_some() {
                    return;
                }
                if freed {
                    continue;
                }
                borrowed = NEIGHBOUR_SETS;
            }
            if !self.evict_one(set, &mut guard, is_block) {
                return;
            }
        }
    }

    /// Evicts one way of `set` to make room for a value chunk or, `for_block`, a data block
    /// (see the module doc): among the value chunks when the set holds one, else (only for a
    /// block) among the blocks; of those, the oldest on probation while [`PROBATION_WAYS`]
    /// are, else the first protected way the hand finds at reference count 0. False when
    /// there is nothing to evict.
    fn evict_one(&self, set: &Set, ways: &mut Ways, for_block: bool) -> bool {
        let occupied = ways
            .chunks
            .iter()
            .enumerate()
            .fold(0u8, |m, (i, c)| m | (u8::from(c.is_some()) << i));
        let occupied = match occupied & !ways.blocks {
            0 if for_block => occupied,
            0 => return false,
            values => values,
        };
        let probation = occupied & !ways.protected;
        if probation.count_ones() >= PROBATION_WAYS || occupied == probation {
            for step in 0..WAYS {
                let i = (usize::from(ways.hand) + step) % WAYS;
                if probation & (1 << i) != 0 {
                    ways.hand = ((i + 1) % WAYS) as u8;
                    self.clear(set, ways, i);
                    return true;
                }
            }
            return false;
        }
        for _ in 0..(usize::from(MAX_REFS) + 1) * WAYS {
            let i = usize::from(ways.hand) % WAYS;
            ways.hand = ((i + 1) % WAYS) as u8;
            let candidate = ways.protected & occupied & (1 << i) != 0;
            let Some(r) = ways.refs.get_mut(i).filter(|_| candidate) else {
                continue;
            };
            if *r > 0 {
                *r -= 1;
                continue;
            }
            self.clear(set, ways, i);
            return true;
        }
        false
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
