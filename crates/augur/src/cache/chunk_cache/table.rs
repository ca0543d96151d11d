//! [`TableChunks`]: one open table's part of a [`ChunkCache`], keyed by a table number of
//! its own, and what its lookups, inserts and prefetch hints ask of the cache.

use super::{referencing, BlockLookup, CachedBlock, ChunkCache, Lookup};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

/// Bytes of an `Arc`'s reference counts before its data (the strong and weak counts).
const ARC_HEADER_BYTES: usize = 2 * std::mem::size_of::<usize>();

/// One open table's chunks in a [`ChunkCache`]. `Send + Sync`; owned by the table.
pub struct TableChunks {
    pub(super) cache: Arc<ChunkCache>,
    /// The table's number in the cache's keys (unique within the cache, never 0).
    pub(super) table: u64,
    /// One bit per block with a chunk inserted: what a drop removes.
    pub(super) inserted: Vec<AtomicU64>,
    /// True when it holds decompressed data blocks ([`ChunkCache::block_table`]).
    pub(super) holds_blocks: bool,
    /// Of a table of data blocks, once one is inserted: per block, the address of its cached
    /// entry as this table last saw it (0: none) — a prefetch hint only, never read through,
    /// and possibly stale (another table's insert may evict the entry, or drop its values
    /// into a new one): refreshed by this table's inserts, hits and misses. Dense and the
    /// table's own, as its fence index is, so a lookup finds where its block's entry lies
    /// without the miss on the cache's set that the set's own hints cost, and loads the
    /// set, the entry's reference counts and its lines at once (`cached_address`).
    pub(super) addresses: OnceLock<Box<[AtomicUsize]>>,
    /// Data blocks of the table (the length of `addresses`).
    pub(super) blocks: u64,
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

    /// The cached decompressed data block `block` (`chunk_len` raw bytes), shared — with its
    /// value chunk when that is cached with it: a [`BlockLookup::Hit`]; a miss says whether
    /// the cache admits the block (then [`TableChunks::insert_block`] it). Counted as a block
    /// hit or miss. Under `scanning` or `without_cache_fill` a hit is no reference, nothing
    /// is admitted and nothing counted (the counters, as the value chunks', are point
    /// lookups').
    pub fn get_block(&self, block: u64, chunk_len: u64) -> BlockLookup {
        let referencing = referencing();
        if let Some(found) = self.cache.lookup_with(self.table, block, referencing, |c, split| {
            Some(CachedBlock {
                bytes: c.clone(),
                block_len: split.min(c.len()),
            })
        }) {
            if referencing {
                self.cache.block_hits.add(1);
            }
            self.note_address(block, found.bytes.as_ptr() as usize);
            return BlockLookup::Hit(found);
        }
        self.note_address(block, 0);
        if !referencing {
            return BlockLookup::Miss { admit: false };
        }
        self.cache.block_misses.add(1);
        BlockLookup::Miss {
            admit: self.cache.admits_block(self.table, block, chunk_len),
        }
    }

    /// Caches `chunk`, the whole decompressed value chunk of `block` (after a miss that
    /// admitted it), unless this thread runs under `scanning` or `without_cache_fill`.
    pub fn insert(&self, block: u64, chunk: Arc<[u8]>) {
        if referencing() {
            self.note_inserted(block);
            self.cache.insert(self.table, block, chunk, self.holds_blocks);
        }
    }

    /// Caches `bytes`, the whole decompressed data block `block` (format 6; after a miss
    /// that admitted it), without its values, unless this thread runs under `scanning` or
    /// `without_cache_fill`; returns the block as a [`CachedBlock`] either way (when it was
    /// not inserted — a race, a set that could not make room — its values attach to
    /// nothing).
    pub fn insert_block(&self, block: u64, bytes: Arc<[u8]>) -> CachedBlock {
        if referencing() {
            self.note_inserted(block);
            if self.cache.insert(self.table, block, bytes.clone(), true) {
                self.note_address(block, bytes.as_ptr() as usize);
            }
        }
        let block_len = bytes.len();
        CachedBlock { bytes, block_len }
    }

    /// Counts a point lookup's value read served from the value chunk of a cached block
    /// ([`CachedBlock::values`]) as a hit.
    #[inline]
    pub fn value_hit(&self) {
        self.cache.hits.add(1);
    }

    /// Counts a point lookup's value read of `block` (a compressed data block, its value
    /// chunk `values_len` raw bytes) that the cache could not serve as a miss; true when
    /// the caller should decompress the whole value chunk and
    /// [`TableChunks::attach_values`] it to `entry`, the block's cached entry (never without
    /// one, nor under `scanning` or `without_cache_fill`).
    pub fn value_missed(&self, block: u64, values_len: u64, entry: Option<&CachedBlock>) -> bool {
        self.cache.misses.add(1);
        entry.is_some() && referencing() && self.cache.admits_values(self.table, block, values_len)
    }

    /// Adds `values`, the decompressed (and checked) value chunk of `block`, to its cached
    /// entry `entry`, unless this thread runs under `scanning` or `without_cache_fill`:
    /// later lookups of the block find both with one probe. Nothing happens when the entry
    /// was evicted or replaced meanwhile, or holds values already.
    pub fn attach_values(&self, block: u64, entry: &CachedBlock, values: &[u8]) {
        if referencing() && entry.values().is_none() {
            if let Some(joined) = self.cache.attach(self.table, block, &entry.bytes, values) {
                self.note_address(block, joined);
            }
        }
    }

    /// Records `addr` as where `block`'s entry lies (0: not cached), in a table of data
    /// blocks (allocating the hints on the first entry); writes only when it changed.
    fn note_address(&self, block: u64, addr: usize) {
        if !self.holds_blocks {
            return;
        }
        let hints = match (self.addresses.get(), addr) {
            (Some(hints), _) => hints,
            (None, 0) => return,
            (None, _) => self
                .addresses
                .get_or_init(|| (0..self.blocks).map(|_| AtomicUsize::new(0)).collect()),
        };
        if let Some(hint) = usize::try_from(block).ok().and_then(|b| hints.get(b)) {
            if hint.load(Ordering::Relaxed) != addr {
                hint.store(addr, Ordering::Relaxed);
            }
        }
    }

    /// Heap bytes this handle keeps outside the cache's budget: its bitset of inserted
    /// blocks and, in a table of data blocks once one was cached, its address hints (a word
    /// per block).
    pub fn pinned_bytes(&self) -> usize {
        let hints = self.addresses.get().map_or(0, |h| h.len());
        self.inserted.len() * std::mem::size_of::<AtomicU64>()
            + hints * std::mem::size_of::<AtomicUsize>()
    }

    /// Marks `block` as having had a chunk inserted (what a drop removes).
    fn note_inserted(&self, block: u64) {
        if let Some(word) = self.inserted.get((block / 64) as usize) {
            word.fetch_or(1 << (block % 64), Ordering::Relaxed);
        }
    }

    /// Starts loading the cache line of `block`'s cached chunk at raw offset `at` (a guess
    /// of where a value lies), so that it arrives while the lookup searches the block's
    /// slots; true when the chunk is cached (then there is no need to prefetch the stored
    /// chunk). Reads only the set's hint atomics, never a chunk.
    pub fn prefetch(&self, block: u64, at: u64) -> bool {
        let Some(addr) = self.cached_address(block) else {
            return false;
        };
        crate::prefetch::prefetch_address(addr.wrapping_add(at as usize));
        true
    }

    /// The address of `block`'s cached chunk (a data block's entry: its bytes, then its
    /// values if it holds them), after starting to load the lines of its set (the lock the
    /// lookup takes next) and of the entry's reference counts (which a hit raises): for
    /// prefetching the lines a lookup will read while it does other work. A hint only,
    /// possibly stale: never to be read through. `None` when the chunk is not cached (as far
    /// as the hint knows). A table of data blocks reads it from its own dense hints, so the
    /// set, the counts and the lines the caller prefetches load at once; a table of value
    /// chunks from the set's (a miss on the set first).
    pub fn cached_address(&self, block: u64) -> Option<usize> {
        let set = self.cache.set_of(self.table, block, None)?;
        // A hit reads the set's first two lines: the lock and the ways, then the keys.
        let at = std::ptr::from_ref(set) as usize;
        crate::prefetch::prefetch_address(at);
        crate::prefetch::prefetch_address(at + 64);
        let addr = if self.holds_blocks {
            let hints = self.addresses.get()?;
            hints.get(usize::try_from(block).ok()?)?.load(Ordering::Relaxed)
        } else {
            set.way_of(self.table, block)
                .and_then(|i| set.addrs.get(i))
                .map_or(0, |a| a.load(Ordering::Relaxed))
        };
        if addr == 0 {
            return None;
        }
        // The entry's reference counts, just before its bytes: a hit raises them, and on a
        // large cache that line is otherwise the hit's one cache miss (65% of the time of a
        // hit on the 663k words, 128 MiB).
        crate::prefetch::prefetch_address(addr.wrapping_sub(ARC_HEADER_BYTES));
        Some(addr)
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
