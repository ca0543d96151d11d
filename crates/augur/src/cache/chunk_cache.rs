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
//! **Compressed data blocks** (SSTable format 6) are cached the same way, as whole
//! decompressed blocks under a [`TableChunks`] of their own ([`ChunkCache::block_table`]: a
//! table number of its own, so a block never answers for the value chunk of the same block
//! number): a lookup takes the block itself ([`TableChunks::get_block`], the chunk's
//! reference count raised under the set's lock), searches its slots, and drops it. Blocks
//! come first: a lookup whose block is not cached decompresses the whole block (about a
//! microsecond), one whose value chunk is not cached one frame of it (a few tenths), and a
//! block is the smaller of the two, so a missed block is admitted whenever value chunks in
//! its set, or in one of the [`NEIGHBOUR_SETS`] after it, can make room: it evicts them (the
//! budget is shared while the ways are per set, so a set without values must not keep
//! blocks out while values fill the others); value chunks never evict blocks; among blocks
//! the rule of value chunks applies. (Reversed domains, lz4, an 8 MiB cache, readrandom
//! without a model: blocks admitted as value chunks are, 69% of block loads hit and a
//! lookup took 1.65 µs against 1.06 without compressed blocks; admitted when their own set
//! holds values, 88% and 1.67 µs against 1.25 on a busier machine; as now, 99.6% and 1.07
//! against 0.93.) Their hits and misses are counted apart ([`ChunkCacheStats::block_hits`])
//! and feed the same admission clock.
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
//! predicts ([`TableChunks::prefetch`], from `Table::prefetch_window`) as it does in a
//! mapped file; and the frame table is not read at all. A block is the unit of RocksDB's
//! block cache too; the cost is memory granularity (a hot value keeps its block's 63
//! neighbours) and a whole-chunk decompression on admission, which the admission rule below
//! keeps rare when the cache is much smaller than the data.
//!
//! **Structure.** A key `(table, block)` hashes to one set of [`WAYS`] ways behind one
//! mutex; a hit locks the set, finds the way, and copies the value out under the lock (the
//! chunk's reference count is never touched). `table` is a number drawn from the cache's own
//! counter each time a table is opened (as the page cache's file numbers), so a chunk of a
//! deleted table can never answer a read of a later one; a dropped [`TableChunks`] also
//! removes its chunks, so they stop taking room. Each way also keeps its key and its chunk's
//! address in atomics that a prefetch reads without the lock (a hint only: a stale address
//! is a useless prefetch, never a read). A database that reads no compressed value
//! allocates no set.
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
//! alike; 2–3% of the budget for ~6 KiB chunks), and reserved from the budget; each chunk counts its length plus [`CHUNK_OVERHEAD`] against
//! the rest, reserved before it is inserted (evicting from its set until it fits, or not
//! inserted). So what the cache holds never exceeds its budget. How the database's `cache_bytes` is shared with the page cache:
//! `cache::CacheBudget`.

use super::counter::Counter;
use super::scope;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

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

/// The ways of one set: their policy state and chunks (keys and hints are in [`Set`]).
#[derive(Default)]
struct Ways {
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
    fn values(&self) -> u8 {
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
struct Set {
    /// Each way's packed key ([`pack`]; 0: empty): written under the lock; read without it
    /// only for prefetch hints.
    keys: [AtomicU64; WAYS],
    /// Each way's chunk address (0: empty): a prefetch hint only.
    addrs: [AtomicUsize; WAYS],
    ways: Mutex<Ways>,
}

/// `(table, block)` as one word, `table << 32 | block`; `None` past 32 bits of either (such
/// blocks are not cached: a table number past 2^32 means four billion tables opened).
fn pack(table: u64, block: u64) -> Option<u64> {
    (table < 1 << 32 && block < 1 << 32).then_some(table << 32 | block)
}

impl Set {
    /// The way holding `(table, block)` (loads only; exact under the set's lock).
    fn way_of(&self, table: u64, block: u64) -> Option<usize> {
        let key = pack(table, block)?;
        (0..WAYS).find(|&i| self.keys.get(i).is_some_and(|k| k.load(Ordering::Relaxed) == key))
    }

    /// Publishes way `i`'s key and chunk address (under the set's lock; `None`: empty).
    fn label(&self, i: usize, key: Option<(u64, &Arc<[u8]>)>) {
        if let (Some(k), Some(a)) = (self.keys.get(i), self.addrs.get(i)) {
            k.store(key.map_or(0, |(k, _)| k), Ordering::Relaxed);
            a.store(key.map_or(0, |(_, c)| c.as_ptr() as usize), Ordering::Relaxed);
        }
    }
}

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
    /// The block's decompressed bytes, shared with the cache.
    Hit(Arc<[u8]>),
    /// Not cached: `admit` when the caller should [`TableChunks::insert`] the block it
    /// decompresses.
    Miss {
        /// Whether the cache admits the block now.
        admit: bool,
    },
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

    /// A copy of `[at, at + len)` of the cached chunk of `(table, block)`; when
    /// `referencing`, promotes the way off probation or raises its reference count.
    fn lookup(&self, table: u64, block: u64, at: usize, len: usize, referencing: bool) -> Option<Vec<u8>> {
        self.lookup_with(table, block, referencing, |chunk| {
            chunk.get(at..at.checked_add(len)?).map(<[u8]>::to_vec)
        })
    }

    /// `read` of the cached chunk of `(table, block)`, under its set's lock (`None` when it is
    /// not cached or `read` gives nothing); when `referencing`, promotes the way off
    /// probation or raises its reference count.
    fn lookup_with<T>(
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

    /// Whether a block just missed (a chunk of `chunk_len` raw bytes) is admitted: at once
    /// while the budget has room; once it is full, only when its ghost entry says it missed
    /// within the last turn of the cache (as many misses as chunks held; its ghost is stamped
    /// now otherwise), and then at most once per [`MISSES_PER_ADMISSION`] misses.
    fn admits(&self, table: u64, block: u64, chunk_len: u64) -> bool {
        if pack(table, block).is_none() {
            return false;
        }
        let weight = chunk_len + CHUNK_OVERHEAD;
        let Some(index) = self.index(Some(weight)) else {
            return false;
        };
        if weight > index.chunk_budget / WAYS as u64 {
            return false;
        }
        if self.chunk_bytes.load(Ordering::Relaxed) + weight <= index.chunk_budget {
            return true;
        }
        let hash = mix(block, table);
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
    /// set holds a value chunk to displace — a cached block saves a whole decompression per
    /// hit, a cached value chunk one frame's, so blocks take the place of values — else by
    /// the rule of value chunks ([`ChunkCache::admits`]).
    fn admits_block(&self, table: u64, block: u64, chunk_len: u64) -> bool {
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
    fn insert(&self, table: u64, block: u64, chunk: Arc<[u8]>, is_block: bool) {
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
    fn remove(&self, table: u64, block: u64) {
        if let Some(set) = self.set_of(table, block, None) {
            let mut guard = set.ways.lock();
            if let Some(i) = set.way_of(table, block) {
                self.clear(set, &mut guard, i);
            }
        }
    }
}

/// One open table's chunks in a [`ChunkCache`]. `Send + Sync`; owned by the table.
pub struct TableChunks {
    cache: Arc<ChunkCache>,
    /// The table's number in the cache's keys (unique within the cache, never 0).
    table: u64,
    /// One bit per block with a chunk inserted: what a drop removes.
    inserted: Vec<AtomicU64>,
    /// True when it holds decompressed data blocks ([`ChunkCache::block_table`]).
    holds_blocks: bool,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::{scanning, without_cache_fill};

    /// The decompressed chunk of `block`: `len` bytes, byte `k` is `(block + k) as u8`.
    fn chunk(block: u64, len: usize) -> Arc<[u8]> {
        (0..len as u64).map(|k| (block + k) as u8).collect()
    }

    /// Reads `[at, at + len)` of `block` (chunks of `CHUNK` bytes) through `t`, inserting the
    /// chunk on an admitted miss; counts decompressions (`made`: frames or chunks).
    fn read(t: &TableChunks, block: u64, at: usize, len: usize, made: &mut u64) -> Vec<u8> {
        let want: Vec<u8> = (at as u64..(at + len) as u64).map(|k| (block + k) as u8).collect();
        let got = match t.get(block, at, len, CHUNK as u64) {
            Lookup::Hit(v) => v,
            Lookup::Miss { admit } => {
                *made += 1;
                if admit {
                    t.insert(block, chunk(block, CHUNK));
                }
                want.clone()
            }
        };
        assert_eq!(got, want, "block {block} at {at}");
        got
    }

    const CHUNK: usize = 6000;

    fn index_bytes(cache: &ChunkCache) -> u64 {
        cache.index.get().map_or(0, |i| i.bytes)
    }

    #[test]
    fn every_value_of_a_cached_chunk_hits() {
        let cache = ChunkCache::new(1 << 20);
        let t = cache.table(4);
        let mut made = 0;
        read(&t, 2, 650, 100, &mut made);
        for (at, len) in [(0, 1), (0, CHUNK), (1023, 2), (5999, 1), (700, 400)] {
            read(&t, 2, at, len, &mut made);
        }
        assert_eq!(made, 1, "one decompression");
        assert_eq!(t.get(2, 5990, 20, CHUNK as u64), Lookup::Miss { admit: true }, "past the chunk");
        assert!(matches!(t.get(3, 0, 1, CHUNK as u64), Lookup::Miss { .. }), "another block");
        let s = cache.stats();
        assert_eq!((s.hits, s.misses, s.chunks, s.inserts), (5, 3, 1, 1), "{s:?}");
        assert_eq!(s.used_bytes, index_bytes(&cache) + CHUNK as u64 + CHUNK_OVERHEAD);
        assert!((s.hit_ratio() - 5.0 / 8.0).abs() < 1e-9);
    }

    #[test]
    fn the_index_is_allocated_on_the_first_admission_only() {
        let cache = ChunkCache::new(64 << 20);
        let t = cache.table(4);
        let mut made = 0;
        scanning(|| read(&t, 0, 0, 10, &mut made));
        assert_eq!(cache.stats().used_bytes, 0, "a scan allocates nothing");
        read(&t, 0, 0, 10, &mut made);
        let s = cache.stats();
        assert!(s.used_bytes > index_bytes(&cache), "{s:?}");
        assert!(index_bytes(&cache) < (64 << 20) / 10, "{s:?}");
    }

    #[test]
    fn tables_do_not_share_chunks_and_a_dropped_table_removes_its_own() {
        let cache = ChunkCache::new(1 << 20);
        let (a, b) = (cache.table(200), cache.table(200));
        let mut made = 0;
        for block in [0, 63, 64, 199] {
            read(&a, block, 5, 10, &mut made);
            read(&b, block, 5, 10, &mut made);
        }
        assert_eq!(made, 8, "the same block of two tables: two chunks");
        assert_eq!(cache.stats().chunks, 8);
        drop(a);
        let s = cache.stats();
        assert_eq!(s.chunks, 4, "a's chunks removed, b's kept");
        assert_eq!(s.used_bytes, index_bytes(&cache) + 4 * (CHUNK as u64 + CHUNK_OVERHEAD));
        read(&b, 199, 1205, 10, &mut made);
        assert_eq!(made, 8);
        drop(b);
        assert_eq!(cache.stats().used_bytes, index_bytes(&cache));
    }

    #[test]
    fn resident_bytes_stay_within_the_budget() {
        for budget in [700u64, 50_000, 256 << 10, 4 << 20] {
            let cache = ChunkCache::new(budget);
            let t = cache.table(10_000);
            let mut made = 0;
            for pass in 0..2 {
                for block in 0..10_000 {
                    read(&t, block, (block as usize * 7) % CHUNK, 1, &mut made);
                    let s = cache.stats();
                    assert!(s.used_bytes <= budget, "{budget} pass {pass}: {s:?}");
                }
            }
            let s = cache.stats();
            assert!(s.chunks > 0 || budget < 50_000, "{budget}: {s:?}");
            assert!(budget < 50_000 || s.used_bytes > budget / 2, "{budget}: filled: {s:?}");
        }
    }

    #[test]
    fn a_budget_below_one_set_caches_nothing() {
        let cache = ChunkCache::new(1000);
        let t = cache.table(1);
        let mut made = 0;
        read(&t, 0, 0, 10, &mut made);
        read(&t, 0, 0, 10, &mut made);
        assert_eq!(made, 2);
        let s = cache.stats();
        assert_eq!((s.hits, s.misses, s.chunks, s.used_bytes), (0, 2, 0, 0));
    }

    #[test]
    fn a_chunk_larger_than_a_ways_share_is_not_admitted() {
        let cache = ChunkCache::new(64 << 10);
        let t = cache.table(1);
        assert_eq!(t.get(0, 0, 1, 20 << 10), Lookup::Miss { admit: false });
        t.insert(0, chunk(0, 20 << 10));
        assert_eq!(cache.stats().chunks, 0);
    }

    #[test]
    fn scans_and_no_fill_reads_admit_nothing_but_use_what_is_cached() {
        let cache = ChunkCache::new(1 << 20);
        let t = cache.table(100);
        let mut made = 0;
        scanning(|| (0..50).for_each(|b| drop(read(&t, b, 10, 10, &mut made))));
        without_cache_fill(|| (0..50).for_each(|b| drop(read(&t, b, 610, 10, &mut made))));
        assert_eq!(cache.stats().chunks, 0, "nothing inserted");
        assert_eq!(made, 100);
        without_cache_fill(|| t.insert(7, chunk(7, CHUNK)));
        assert_eq!(cache.stats().chunks, 0, "no insert outside referencing reads");
        read(&t, 7, 10, 10, &mut made);
        scanning(|| read(&t, 7, 20, 10, &mut made));
        assert_eq!(made, 101, "a scan still hits a cached chunk");
    }

    /// Once the cache is full, a block is admitted only when it misses twice within about
    /// one turn of the cache, and at most once per MISSES_PER_ADMISSION misses: values read
    /// once evict nothing, and churn is bounded.
    #[test]
    fn a_full_cache_admits_blocks_missed_twice_at_a_bounded_rate() {
        let cache = ChunkCache::new(256 << 10);
        let t = cache.table(1_000_000);
        let mut made = 0;
        let mut block = 0;
        while cache.stats().used_bytes + (CHUNK as u64 + CHUNK_OVERHEAD) <= 256 << 10
            && block < 1000
        {
            read(&t, block, 0, 1, &mut made);
            block += 1;
        }
        let full = cache.stats();
        assert!(full.chunks > 10 && full.misses < MISSES_PER_ADMISSION, "{full:?}");
        let miss = |b| t.get(b, 0, 1, CHUNK as u64);
        assert_eq!(miss(500_000), Lookup::Miss { admit: false }, "first miss: a ghost only");
        assert_eq!(miss(500_000), Lookup::Miss { admit: false }, "no credit yet");
        // Misses of other blocks earn credit: then a block missed twice gets in.
        for b in 0..MISSES_PER_ADMISSION {
            miss(700_000 + b);
        }
        assert_eq!(miss(500_001), Lookup::Miss { admit: false }, "first miss: a ghost only");
        assert_eq!(miss(500_001), Lookup::Miss { admit: true }, "missed again, paid");
        assert_eq!(miss(500_002), Lookup::Miss { admit: false });
        assert_eq!(miss(500_002), Lookup::Miss { admit: false }, "the credit is spent");
        // Over many misses, each block missed twice in a row, admissions stay within the rate.
        let before = cache.stats().inserts;
        let rounds = 20 * MISSES_PER_ADMISSION;
        for b in 0..rounds {
            miss(800_000 + b);
            if miss(800_000 + b) == (Lookup::Miss { admit: true }) {
                t.insert(800_000 + b, chunk(0, CHUNK));
            }
        }
        let admitted = cache.stats().inserts - before;
        assert!(
            admitted <= 2 * rounds / MISSES_PER_ADMISSION + MAX_ADMISSION_CREDIT && admitted > 0,
            "{admitted} admissions in {} misses",
            2 * rounds
        );
    }

    /// A hot set read over and over survives a stream of blocks read once each (ten times
    /// what the cache holds; admitted while it has room, then ghosts only) between its reads,
    /// and a scan-scoped sweep, which neither admits nor references.
    #[test]
    fn a_hot_set_survives_one_off_reads_and_scans() {
        let cache = ChunkCache::new(4 << 20);
        let t = cache.table(1_000_000);
        let hot = 100u64;
        let mut made = 0;
        for _ in 0..2 {
            (0..hot).for_each(|b| drop(read(&t, b, 100, 50, &mut made)));
        }
        assert_eq!(made, hot);
        let capacity = (4u64 << 20) / CHUNK as u64;
        for (i, b) in (hot..hot + 10 * capacity).enumerate() {
            read(&t, b, 100, 50, &mut made);
            if i % 4 == 0 {
                read(&t, (i as u64 / 4) % hot, 100, 50, &mut made);
            }
        }
        scanning(|| (hot..hot + 10 * capacity).for_each(|b| drop(read(&t, b, 700, 50, &mut made))));
        let before = made;
        (0..hot).for_each(|b| drop(read(&t, b, 100, 50, &mut made)));
        let lost = made - before;
        assert!(lost <= hot / 20, "{lost} of {hot} hot chunks lost");
    }

    /// Decompressed data blocks take the place of value chunks, never the other way round.
    #[test]
    fn blocks_displace_value_chunks_and_not_the_other_way_round() {
        const BLOCK: usize = 1500;
        let cache = ChunkCache::new(256 << 10);
        let values = cache.table(1_000_000);
        let blocks = cache.block_table(1_000_000);
        let mut made = 0;
        let mut b = 0;
        while cache.stats().used_bytes + (CHUNK as u64 + CHUNK_OVERHEAD) <= 256 << 10 && b < 1000 {
            read(&values, b, 0, 1, &mut made);
            b += 1;
        }
        let full = cache.stats();
        assert!(full.chunks > 10, "{full:?}");
        // A full cache of value chunks: a block missed once is admitted and evicts values.
        let mut admitted = 0;
        for blk in 0..8 {
            match blocks.get_block(blk, BLOCK as u64) {
                BlockLookup::Miss { admit: true } => {
                    admitted += 1;
                    blocks.insert(blk, chunk(blk, BLOCK));
                }
                BlockLookup::Miss { admit: false } => {}
                BlockLookup::Hit(_) => panic!("block {blk} cached before"),
            }
        }
        assert!(admitted >= 6, "{admitted} of 8 admitted");
        let cached: Vec<u64> = (0..8)
            .filter(|&blk| matches!(blocks.get_block(blk, BLOCK as u64), BlockLookup::Hit(_)))
            .collect();
        assert_eq!(cached.len(), admitted, "{cached:?}");
        // Value chunks read over and over (admitted while the budget allows) never evict them.
        for round in 0..4 {
            for v in 2000..2400 {
                read(&values, v, 0, 1, &mut made);
            }
            for &blk in &cached {
                match blocks.get_block(blk, BLOCK as u64) {
                    BlockLookup::Hit(bytes) => assert_eq!(bytes, chunk(blk, BLOCK)),
                    miss => panic!("round {round}: block {blk} evicted: {miss:?}"),
                }
            }
        }
        let s = cache.stats();
        assert!(s.used_bytes <= 256 << 10 && s.block_hits > 0, "{s:?}");
    }

    #[test]
    fn the_prefetch_hint_finds_cached_chunks_only() {
        let cache = ChunkCache::new(1 << 20);
        let t = cache.table(10);
        assert!(!t.prefetch(3, 100), "no index yet");
        let mut made = 0;
        read(&t, 3, 0, 1, &mut made);
        assert!(t.prefetch(3, 100) && t.prefetch(3, 1 << 40), "any offset: a hint only");
        assert!(!t.prefetch(4, 0));
        drop(t);
        let u = cache.table(10);
        assert!(!u.prefetch(3, 0), "a dropped table's chunk is gone");
    }

    #[test]
    fn many_threads_read_and_insert_at_once() {
        let cache = ChunkCache::new(256 << 10);
        let t = cache.table(4096);
        std::thread::scope(|s| {
            for n in 0..4u64 {
                let t = &t;
                s.spawn(move || {
                    let mut made = 0;
                    for i in 0..20_000u64 {
                        let block = (i * 7919 + n * 31) % if i % 3 == 0 { 16 } else { 4096 };
                        read(t, block, (i % 50) as usize * 100, 100, &mut made);
                    }
                });
            }
        });
        let s = cache.stats();
        assert!(s.used_bytes <= 256 << 10 && s.hits > 0, "{s:?}");
        drop(t);
        let s = cache.stats();
        assert_eq!((s.chunks, s.used_bytes), (0, index_bytes(&cache)), "{s:?}");
    }
}
