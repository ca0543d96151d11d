//! [`ChunkCache`]: the database's bounded cache of decompressed SSTable value chunks, and
//! [`TableChunks`], one open table's part of it.
//!
//! Where it sits: with compression on, each data block's inline values are stored as one
//! value chunk cut into frames of whole values, each compressed on its own
//! (`compression::FramedChunk`, docs/format/sst.md). A point lookup's value read
//! (`Table::value_in_chunk`) first asks this cache for the value's raw bytes; on a hit they
//! are copied out of the block's decompressed chunk: nothing is read from the file and
//! nothing decompressed. On a miss the lookup reads and checks the chunk as always (its
//! checksum on the first read, each frame's recorded length) and decompresses only its
//! value's frame — or, when the cache admits the block, the whole chunk, which it then
//! inserts. Scans and `verify` read whole chunks (`Table::value_chunk`) and never come here.
//!
//! **Compressed data blocks** (SSTable format 6) are cached as whole decompressed blocks
//! under a [`TableChunks`] of their own ([`ChunkCache::block_table`]: a table number of its
//! own, so a block never answers for the value chunk of the same block number), and a
//! block's decompressed value chunk joins the block's own entry rather than taking one of
//! its own: a [`CachedBlock`] is the block's bytes followed by its values, one allocation
//! under one key. A lookup takes the entry ([`TableChunks::get_block`]: one hash, one lock,
//! its reference count raised), searches its slots and copies its value from the same entry
//! ([`CachedBlock::values`]): one probe of the cache per lookup, as a value chunk's hit costs
//! in a table whose blocks are stored raw. (With blocks and values cached apart, a lookup
//! made two probes — block, then value chunk — and lz4 readrandom with the hot set cached
//! took 1.10–1.21× the time without compression, against 1.00–1.07× for format 5;
//! docs/benchmarks/string-keys.md "One cache entry per block".) A block's first value read
//! after the block was cached is a value miss: the value's frame is decompressed, or, when
//! the value chunks' admission rule ([`ChunkCache::admits`], a ghost of its own) lets the
//! values join, the whole chunk, checked, copied with the block into a new entry that
//! replaces the old one ([`TableChunks::attach_values`]; a reader holding the old entry keeps
//! it). Blocks come first: a lookup whose block is not cached decompresses the whole block
//! (about a microsecond), one whose values are not cached one frame of them (a few tenths),
//! and a block is the smaller of the two, so a missed block is admitted whenever value bytes
//! in its set, or in one of the [`NEIGHBOUR_SETS`] after it, can make room — a value chunk
//! evicted, or a cached block's values dropped (the block is copied into an entry of its
//! own and keeps its place) — (the budget is shared while the ways are per set, so a set
//! without values must not keep blocks out while values fill the others); values, joining
//! a block or in chunks of their own, take the bytes of other values only, never a block;
//! among blocks the rule of value chunks applies. (Reversed domains, lz4, an 8 MiB cache,
//! readrandom without a model: blocks admitted as value chunks are, 69% of block loads hit
//! and a lookup took 1.65 µs against 1.06 without compressed blocks; admitted when their own
//! set holds values, 88% and 1.67 µs against 1.25 on a busier machine; as now, 99.6% and
//! 1.07 against 0.93.) Block hits and misses are counted apart
//! ([`ChunkCacheStats::block_hits`]); a value read from a block's entry counts as a hit, one
//! that is not as a miss; both feed the same admission clock.
//!
//! **Why whole chunks, and why not `quick_cache`.** A hit must cost less than what it saves:
//! finding the value's frame (one cache miss on the chunk's frame table) and an LZ4
//! decompression of ~512 bytes, about 0.1–0.2 µs together on the development VM, where one
//! miss to the last-level cache costs ~0.07 µs. Two designs keyed by frame were built and
//! measured first (readrandom, reversed domains, lz4, 64 MiB, all hits): `quick_cache` (the
//! page cache's crate) at 1.17 µs/op and a set-associative cache at 1.14–1.22 µs/op, against
//! 1.03 µs/op decompressing every time — a hit there is the frame table, then the cache's
//! index (a megabyte-sized table of ~100,000 frames: a miss), then the frame: three
//! dependent misses. Keyed by block instead, the index has one entry per ~6 KiB chunk, small
//! enough to stay in the core's cache; the chunk's address is known as soon as the block is
//! (before the slot search), so the lookup prefetches the value's line at the position it
//! predicts ([`TableChunks::prefetch`], [`TableChunks::cached_address`], from
//! `Table::prefetch_window`) as it does in a mapped file; and the frame table is not read at all. A block is the unit of RocksDB's
//! block cache too; the cost is memory granularity (a hot value keeps its block's 63
//! neighbours) and a whole-chunk decompression on admission, which the admission rule below
//! keeps rare when the cache is much smaller than the data.
//!
//! **Structure.** A key `(table, block)` hashes to one set of [`WAYS`] ways behind one
//! mutex; a hit on a value chunk locks the set, finds the way, and copies the value out
//! under the lock (the chunk's reference count is never touched); a hit on a block's entry
//! takes a reference to it (the lookup searches it after the lock is let go). `table` is a number drawn from the cache's own
//! counter each time a table is opened (as the page cache's file numbers), so a chunk of a
//! deleted table can never answer a read of a later one; a dropped [`TableChunks`] also
//! removes its chunks, so they stop taking room. Each way also keeps its key and its chunk's
//! address in atomics that a prefetch reads without the lock (a hint only: a stale address
//! is a useless prefetch, never a read). A table of data blocks keeps its own dense hints
//! too, a word per block (allocated with its first cached block, counted in the table's
//! pinned bytes, refreshed by its own inserts, hits and misses): the address of the block's
//! entry is then found without touching the set, so a lookup starts loading the set's lock,
//! the entry's reference counts, its window of slots and its predicted value at once
//! ([`TableChunks::cached_address`]) rather than the set's hint line first and the rest
//! after it — on a cache much larger than the core's, two dependent misses per hit that
//! cost the 663k words 1.20× the uncompressed time with lz4 (0.99× with the dense hints,
//! same run). A database that reads no compressed value allocates no set.
//!
//! **Admission and replacement.** While the budget has room, a missed block is admitted at
//! once. Once it is full, a block is admitted only when it missed a second time within about
//! one turn of the cache (a ghost entry: the block's fingerprint and the miss count at its
//! first miss, in a small hashed array), and at most once per [`MISSES_PER_ADMISSION`]
//! misses: a whole-chunk decompression costs about 16 frame decompressions and brings nothing
//! when the cache is much smaller than uniformly read data, so a full cache mostly keeps what
//! it holds (the share of the data it can) and lets a moving hot set in slowly. Within a
//! set, ways are on probation or protected (segmented LRU, as S3-FIFO's small and main
//! queues): a chunk enters on probation, a hit promotes it; further hits raise its reference
//! count (up to [`MAX_REFS`]). Making room evicts the oldest way on probation while
//! [`PROBATION_WAYS`] are, else the hand sweeps the protected ways as a CLOCK, lowering
//! counts and evicting the first found at 0. Scans cannot pollute it at all: under
//! [`scanning`](super::scanning) or [`without_cache_fill`](super::without_cache_fill) a read
//! only peeks (no reference, no promotion, no ghost) and admits nothing.
//!
//! **Budget.** The sets and the ghost array are allocated when the first chunk is admitted,
//! with [`SET_SLACK`] ways per chunk of that size the budget holds (a database's chunks are
//! alike; 2–3% of the budget for ~6 KiB chunks), and reserved from the budget; each chunk
//! counts its length plus [`CHUNK_OVERHEAD`] against the rest, reserved before it is
//! inserted (evicting from its set until it fits, or not inserted); values joining a block
//! reserve their length before the joined entry replaces the block's, and values dropped
//! from a block give theirs back. So what the cache holds never exceeds its budget (entries
//! a reader still holds after their way let them go are the reader's, as with any `Arc`). How the database's `cache_bytes` is shared with the page cache:
//! `cache::CacheBudget`.


mod admission;
mod table;
#[cfg(test)]
mod tests;
mod ways;

pub use table::TableChunks;

use super::counter::Counter;
use super::scope;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use ways::Set;

/// Bytes charged per chunk beyond its data: the `Arc` header and the allocator's rounding.
pub const CHUNK_OVERHEAD: u64 = 32;

/// Ways per set.
pub const WAYS: usize = 4;

/// The highest reference count of a protected way: the sweeps of its set's hand it survives
/// unread.
pub const MAX_REFS: u8 = 3;

/// Ways a set keeps on probation before a new chunk replaces one of them rather than a
/// protected one.
pub const PROBATION_WAYS: u32 = 1;

/// Misses per admission into a full cache. An admission decompresses a whole chunk (about
/// 16 frame decompressions with its allocation) and pays off only if the new chunk is hit
/// more than the one it evicts: never when the data read is much larger than the cache and
/// read uniformly, where every admission is churn (reversed domains with 8 MiB, admitting
/// every block missed twice within a turn: 39,497 admissions in 1M lookups, 0.1–0.15 µs/op
/// slower than without a cache). One per 256 misses bounds that cost to ~1/16 of a frame
/// decompression per miss, while a hot set that moves still gets in (at 256 misses per
/// block of it).
pub const MISSES_PER_ADMISSION: u64 = 256;

/// The most admissions that misses may bank ahead (so that a burst of misses does not pay
/// for a burst of churn).
const MAX_ADMISSION_CREDIT: u64 = 16;

/// Sets after its own where a data block may evict a value chunk to free the bytes it needs
/// (`ChunkCache::evict_value_near`).
pub const NEIGHBOUR_SETS: usize = 8;

/// Ways per chunk the budget holds (see `ChunkCache::build_index`).
pub const SET_SLACK: u64 = 2;

/// The least chunk weight the sets are counted for.
const MIN_CHUNK_WEIGHT: u64 = 512;

/// Ghost entries per way.
const GHOSTS_PER_WAY: usize = 2;

/// What a lookup found.
#[derive(Debug, PartialEq, Eq)]
pub enum Lookup {
    /// The value's bytes, copied from the cached chunk.
    Hit(Vec<u8>),
    /// Not cached: `admit` when the caller should decompress the whole chunk and
    /// [`TableChunks::insert`] it (else only the value's frame, inserting nothing).
    Miss {
        /// Whether the cache admits the block now.
        admit: bool,
    },
}

/// What a lookup of a whole cached block found ([`TableChunks::get_block`]).
#[derive(Debug, PartialEq, Eq)]
pub enum BlockLookup {
    /// The block's decompressed bytes (and its value chunk's, when cached with it), shared
    /// with the cache.
    Hit(CachedBlock),
    /// Not cached: `admit` when the caller should [`TableChunks::insert_block`] the block it
    /// decompresses.
    Miss {
        /// Whether the cache admits the block now.
        admit: bool,
    },
}

/// A decompressed data block (format 6) as the cache holds it: the block's bytes, followed by
/// its decompressed value chunk once that has joined it ([`TableChunks::attach_values`]), in
/// one shared allocation, so that a lookup takes its slots and its value from one entry
/// found with one probe. Cheap to clone (a reference count).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CachedBlock {
    bytes: Arc<[u8]>,
    /// Bytes of the block; the rest are its values.
    block_len: usize,
}

impl CachedBlock {
    /// The decompressed block (its slots, then its key suffixes).
    #[inline]
    pub fn block(&self) -> &[u8] {
        self.bytes.get(..self.block_len).unwrap_or_default()
    }

    /// The block's decompressed value chunk, when the entry holds it.
    #[inline]
    pub fn values(&self) -> Option<&[u8]> {
        self.bytes.get(self.block_len..).filter(|v| !v.is_empty())
    }
}

/// Occupancy and counters of a database's cache of decompressed value chunks
/// (`cache::ChunkCache`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChunkCacheStats {
    /// Bytes the cache may hold (its budget).
    pub capacity_bytes: u64,
    /// Bytes it holds now: its sets and ghosts (once allocated) and its chunks with their
    /// overhead.
    pub used_bytes: u64,
    /// Chunks it holds now.
    pub chunks: u64,
    /// Point-lookup value reads served from a cached chunk (nothing read or decompressed).
    pub hits: u64,
    /// Point-lookup value reads that found no cached chunk (and decompressed).
    pub misses: u64,
    /// Chunks decompressed whole and inserted (admissions), data blocks included.
    pub inserts: u64,
    /// Point-lookup loads of a compressed data block (format 6) served from the cache (scans
    /// are not counted).
    pub block_hits: u64,
    /// Point-lookup loads of a compressed data block that found it uncached (and
    /// decompressed it).
    pub block_misses: u64,
}

impl ChunkCacheStats {
    /// Hits over lookups (0 when nothing was looked up).
    pub fn hit_ratio(&self) -> f64 {
        let all = self.hits + self.misses;
        if all == 0 {
            0.0
        } else {
            self.hits as f64 / all as f64
        }
    }
}

/// The sets and the ghost array, allocated together when the first chunk is admitted and
/// counted for that chunk's size (a database's chunks are alike: `block_records` values of
/// its usual size), so that ways and bytes run out together.
struct Index {
    sets: Box<[Set]>,
    /// Per missed block not admitted, by hash: its fingerprint (high 32 bits) and the insert
    /// count plus one at the miss (low 32 bits); 0: none.
    ghosts: Box<[AtomicU64]>,
    /// Bytes of the sets and ghosts, reserved from the budget.
    bytes: u64,
    /// What the chunks may take: the budget less the index.
    chunk_budget: u64,
}

/// A bounded, scan-resistant, set-associative cache of decompressed value chunks, shared by
/// every table of a database. `Send + Sync`; share it as `Arc<ChunkCache>`.
pub struct ChunkCache {
    capacity_bytes: u64,
    /// `None` until the first admission; with no set when the budget cannot hold one set and
    /// a chunk (nothing is cached).
    index: OnceLock<Index>,
    /// Bytes of the chunks held, overhead included (never above the index's `chunk_budget`).
    chunk_bytes: AtomicU64,
    /// Chunks held.
    chunks: AtomicU64,
    /// Chunks inserted so far.
    inserts: AtomicU64,
    /// Admissions into a full cache so far, less those forgiven (the credit's spending).
    admissions_when_full: AtomicU64,
    hits: Counter,
    misses: Counter,
    block_hits: Counter,
    block_misses: Counter,
    /// The next table's number in the keys (never reused; 0 marks an empty way).
    next_table: AtomicU64,
}

impl std::fmt::Debug for ChunkCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChunkCache")
            .field("capacity_bytes", &self.capacity_bytes)
            .field("sets", &self.index.get().map_or(0, |i| i.sets.len()))
            .finish_non_exhaustive()
    }
}

/// A 64-bit mix of `(table, block)` (splitmix64's finalizer).
fn mix(table: u64, block: u64) -> u64 {
    let mut x = table.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ block;
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// `hash` mapped onto `0..n` (multiply-shift: any `n`, not only powers of two).
fn reduce(hash: u64, n: usize) -> usize {
    ((u128::from(hash) * n as u128) >> 64) as usize
}

/// True when this thread's reads reference and fill the caches (not in a scan, not under
/// `without_cache_fill`).
fn referencing() -> bool {
    !scope::in_scan() && scope::fills()
}

impl ChunkCache {
    /// A cache holding at most `capacity_bytes`, its index included (a budget too small for
    /// one set and a chunk caches nothing).
    pub fn new(capacity_bytes: u64) -> Arc<ChunkCache> {
        Arc::new(ChunkCache {
            capacity_bytes,
            index: OnceLock::new(),
            chunk_bytes: AtomicU64::new(0),
            chunks: AtomicU64::new(0),
            inserts: AtomicU64::new(0),
            admissions_when_full: AtomicU64::new(0),
            hits: Counter::default(),
            misses: Counter::default(),
            block_hits: Counter::default(),
            block_misses: Counter::default(),
            next_table: AtomicU64::new(1),
        })
    }

    /// The cache's occupancy and counters.
    pub fn stats(&self) -> ChunkCacheStats {
        let index = self.index.get().map_or(0, |i| i.bytes);
        ChunkCacheStats {
            capacity_bytes: self.capacity_bytes,
            used_bytes: index + self.chunk_bytes.load(Ordering::Relaxed),
            chunks: self.chunks.load(Ordering::Relaxed),
            hits: self.hits.get(),
            misses: self.misses.get(),
            inserts: self.inserts.load(Ordering::Relaxed),
            block_hits: self.block_hits.get(),
            block_misses: self.block_misses.get(),
        }
    }

    /// The part of the cache of a table being opened with `blocks` data blocks: its chunks
    /// are keyed by a new table number, and removed when the returned handle drops.
    pub fn table(self: &Arc<Self>, blocks: u64) -> TableChunks {
        TableChunks {
            cache: self.clone(),
            table: self.next_table.fetch_add(1, Ordering::Relaxed),
            inserted: (0..blocks.div_ceil(64)).map(|_| AtomicU64::new(0)).collect(),
            holds_blocks: false,
            addresses: OnceLock::new(),
            blocks,
        }
    }

    /// [`ChunkCache::table`] for the decompressed data blocks of a table (format 6) rather
    /// than its value chunks: a table number of its own, and blocks take the place of value
    /// chunks (see the module doc).
    pub fn block_table(self: &Arc<Self>, blocks: u64) -> TableChunks {
        let mut t = self.table(blocks);
        t.holds_blocks = true;
        t
    }

    /// The index, once it exists; with `first_weight` (a chunk being admitted), creating it
    /// first, counted for chunks of that weight. `None` when it holds no set.
    fn index(&self, first_weight: Option<u64>) -> Option<&Index> {
        let index = match first_weight {
            Some(weight) => self.index.get_or_init(|| self.build_index(weight)),
            None => self.index.get()?,
        };
        (!index.sets.is_empty()).then_some(index)
    }

    /// An index for this budget and chunks of `weight` bytes: [`SET_SLACK`] times as many
    /// ways as the budget holds such chunks (none when it cannot hold one set and a chunk).
    /// With one way per chunk, chunks hashed to sets would overflow some sets (conflict
    /// misses: 6% of readrandom lookups on the 663k words with a cache larger than the data)
    /// while the bytes run out last; with twice the ways, overflow is rare and the bytes run
    /// out first, so a full cache is full by its budget.
    fn build_index(&self, weight: u64) -> Index {
        let per_set = std::mem::size_of::<Set>() as u64
            + (WAYS * GHOSTS_PER_WAY * std::mem::size_of::<AtomicU64>()) as u64;
        let weight = weight.max(MIN_CHUNK_WEIGHT);
        let sets = match self.capacity_bytes.checked_sub(per_set + weight) {
            None => 0,
            Some(_) => self.capacity_bytes / (per_set + WAYS as u64 * weight / SET_SLACK),
        };
        let sets = usize::try_from(sets).unwrap_or(usize::MAX);
        let bytes = sets as u64 * per_set;
        Index {
            sets: (0..sets).map(|_| Set::default()).collect(),
            ghosts: (0..sets * WAYS * GHOSTS_PER_WAY)
                .map(|_| AtomicU64::new(0))
                .collect(),
            bytes,
            chunk_budget: self.capacity_bytes - bytes,
        }
    }

    /// The set that holds `(table, block)`, once the index exists (see [`ChunkCache::index`]).
    fn set_of(&self, table: u64, block: u64, first_weight: Option<u64>) -> Option<&Set> {
        let index = self.index(first_weight)?;
        index.sets.get(reduce(mix(table, block), index.sets.len()))
    }
}
