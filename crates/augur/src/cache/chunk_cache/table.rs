//! [`TableChunks`]: one open table's part of a [`ChunkCache`], keyed by a table number of
//! its own, and what its lookups, inserts and prefetch hints ask of the cache.

use super::{referencing, BlockLookup, ChunkCache, Lookup};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// One open table's chunks in a [`ChunkCache`]. `Send + Sync`; owned by the table.
pub struct TableChunks {
    pub(super) cache: Arc<ChunkCache>,
    /// The table's number in the cache's keys (unique within the cache, never 0).
    pub(super) table: u64,
    /// One bit per block with a chunk inserted: what a drop removes.
    pub(super) inserted: Vec<AtomicU64>,
    /// True when it holds decompressed data blocks ([`ChunkCache::block_table`]).
    pub(super) holds_blocks: bool,
}

impl std::fmt::Debug for TableChunks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableChunks")
            .field("table", &self.table)
            .finish_non_exhaustive()
    }
}

impl TableChunks {
    /// Looks up the raw bytes `[at, at + len)` of `block`'s value chunk (`chunk_len` raw
    /// bytes in all): a [`Lookup::Hit`] copies them from the cached chunk; a miss says
    /// whether the cache admits the block (see the module doc). Counted as a hit or a miss.
    /// Under `scanning` or `without_cache_fill` a hit is no reference and nothing is
    /// admitted.
    pub fn get(&self, block: u64, at: usize, len: usize, chunk_len: u64) -> Lookup {
        let referencing = referencing();
        if let Some(value) = self.cache.lookup(self.table, block, at, len, referencing) {
            self.cache.hits.add(1);
            return Lookup::Hit(value);
        }
        self.cache.misses.add(1);
        Lookup::Miss {
            admit: referencing && self.cache.admits(self.table, block, chunk_len),
        }
    }

    /// The cached decompressed data block `block` (`chunk_len` raw bytes), shared: a
    /// [`BlockLookup::Hit`]; a miss says whether the cache admits the block (then
    /// [`TableChunks::insert`] it). Counted as a block hit or miss. Under `scanning` or
    /// `without_cache_fill` a hit is no reference, nothing is admitted and nothing counted
    /// (the counters, as the value chunks', are point lookups').
    pub fn get_block(&self, block: u64, chunk_len: u64) -> BlockLookup {
        let referencing = referencing();
        if let Some(bytes) = self
            .cache
            .lookup_with(self.table, block, referencing, |c| Some(c.clone()))
        {
            if referencing {
                self.cache.block_hits.add(1);
            }
            return BlockLookup::Hit(bytes);
        }
        if !referencing {
            return BlockLookup::Miss { admit: false };
        }
        self.cache.block_misses.add(1);
        BlockLookup::Miss {
            admit: self.cache.admits_block(self.table, block, chunk_len),
        }
    }

    /// Caches `chunk`, the whole decompressed value chunk (or data block) of `block` (after a
    /// miss that admitted it), unless this thread runs under `scanning` or
    /// `without_cache_fill`.
    pub fn insert(&self, block: u64, chunk: Arc<[u8]>) {
        if !referencing() {
            return;
        }
        if let Some(word) = self.inserted.get((block / 64) as usize) {
            word.fetch_or(1 << (block % 64), Ordering::Relaxed);
            self.cache.insert(self.table, block, chunk, self.holds_blocks);
        }
    }

    /// Starts loading the cache line of `block`'s cached chunk at raw offset `at` (a guess
    /// of where a value lies), so that it arrives while the lookup searches the block's
    /// slots; true when the chunk is cached (then there is no need to prefetch the stored
    /// chunk). Reads only the set's hint atomics, never a chunk.
    pub fn prefetch(&self, block: u64, at: u64) -> bool {
        let Some(set) = self.cache.set_of(self.table, block, None) else {
            return false;
        };
        // The lock's line too: the lookup takes it next.
        crate::prefetch::prefetch_value(&set.ways);
        let addr = set
            .way_of(self.table, block)
            .and_then(|i| set.addrs.get(i))
            .map_or(0, |a| a.load(Ordering::Relaxed));
        if addr == 0 {
            return false;
        }
        crate::prefetch::prefetch_address(addr.wrapping_add(at as usize));
        true
    }
}

impl Drop for TableChunks {
    /// Removes the table's chunks: they can never be read again.
    fn drop(&mut self) {
        if self.cache.index.get().is_none() {
            return;
        }
        for (w, word) in self.inserted.iter_mut().enumerate() {
            let mut bits = *word.get_mut();
            while bits != 0 {
                let block = w as u64 * 64 + u64::from(bits.trailing_zeros());
                bits &= bits - 1;
                self.cache.remove(self.table, block);
            }
        }
    }
}
