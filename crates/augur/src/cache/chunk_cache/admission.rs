//! Admission into a [`ChunkCache`]: at once while the budget has room, then a block missed
//! twice within a turn of the cache at a bounded rate; a data block first where value chunks
//! can make room (see the module doc of `chunk_cache`).

use super::ways::pack;
use super::{mix, reduce, ChunkCache, CHUNK_OVERHEAD, MAX_ADMISSION_CREDIT, MISSES_PER_ADMISSION, NEIGHBOUR_SETS, WAYS};
use std::sync::atomic::Ordering;

/// Mixed into a block's ghost hash for the ghost of its value chunk.
const VALUES_GHOST_SALT: u64 = 0x5bd1_e995_5bd1_e995;

impl ChunkCache {
    /// Whether a block just missed (a chunk of `chunk_len` raw bytes) is admitted: at once
    /// while the budget has room; once it is full, only when its ghost entry says it missed
    /// within the last turn of the cache (as many misses as chunks held; its ghost is stamped
    /// now otherwise), and then at most once per [`MISSES_PER_ADMISSION`] misses.
    pub(super) fn admits(&self, table: u64, block: u64, chunk_len: u64) -> bool {
        self.admits_weight(table, block, chunk_len + CHUNK_OVERHEAD, mix(block, table))
    }

    /// Whether the value chunk of a cached data block (`values_len` raw bytes), just missed,
    /// joins the block's entry (`ChunkCache::attach`): by the rule of value chunks
    /// ([`ChunkCache::admits`]), with a ghost of its own (the block's is keyed apart).
    pub(super) fn admits_values(&self, table: u64, block: u64, values_len: u64) -> bool {
        self.admits_weight(table, block, values_len, mix(block, table) ^ VALUES_GHOST_SALT)
    }

    /// [`ChunkCache::admits`] for `weight` bytes more, the ghost found by `hash`.
    fn admits_weight(&self, table: u64, block: u64, weight: u64, hash: u64) -> bool {
        if pack(table, block).is_none() {
            return false;
        }
        let Some(index) = self.index(Some(weight)) else {
            return false;
        };
        if weight > index.chunk_budget / WAYS as u64 {
            return false;
        }
        if self.chunk_bytes.load(Ordering::Relaxed) + weight <= index.chunk_budget {
            return true;
        }
        let Some(ghost) = index.ghosts.get(reduce(hash, index.ghosts.len())) else {
            return false;
        };
        // The clock: misses so far, of values and blocks (32 bits; a stamp 2^31 misses old
        // reads as recent once).
        let misses = self.misses.get() + self.block_misses.get();
        let now = (misses as u32).max(1);
        let print = hash >> 32;
        let entry = ghost.load(Ordering::Relaxed);
        let (seen, stamp) = (entry >> 32, entry as u32);
        let turn = self.chunks.load(Ordering::Relaxed).max(WAYS as u64);
        if stamp == 0 || seen != print || u64::from(now.wrapping_sub(stamp)) > turn {
            ghost.store(print << 32 | u64::from(now), Ordering::Relaxed);
            return false;
        }
        let earned = misses / MISSES_PER_ADMISSION;
        let paid = self
            .admissions_when_full
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |spent| {
                let spent = spent.max(earned.saturating_sub(MAX_ADMISSION_CREDIT));
                (spent < earned).then_some(spent + 1)
            })
            .is_ok();
        if paid {
            ghost.store(0, Ordering::Relaxed);
        }
        paid
    }

    /// Whether a data block just missed (`chunk_len` raw bytes) is admitted: at once when its
    /// set (or one of the [`NEIGHBOUR_SETS`] after it) holds value bytes to displace — a
    /// value chunk, or a cached block's values: a cached block saves a whole decompression
    /// per hit, cached values one frame's, so blocks take the place of values — else by the
    /// rule of value chunks ([`ChunkCache::admits`]).
    pub(super) fn admits_block(&self, table: u64, block: u64, chunk_len: u64) -> bool {
        let weight = chunk_len + CHUNK_OVERHEAD;
        let Some(index) = self.index(Some(weight)) else {
            return false;
        };
        if pack(table, block).is_none() || weight > index.chunk_budget / WAYS as u64 {
            return false;
        }
        let home = reduce(mix(table, block), index.sets.len());
        let values = (0..=NEIGHBOUR_SETS).any(|step| {
            index
                .sets
                .get((home + step) % index.sets.len())
                .is_some_and(|set| set.ways.lock().values() != 0)
        });
        values || self.admits(table, block, chunk_len)
    }
}
