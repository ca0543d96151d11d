//! Options: every tunable of the engine, with documented defaults, validated at open.
//!
//! `Options::validate` rejects a bad value with `Error::InvalidArgument` naming the option.

use crate::compression::Compression;
use crate::error::{Error, Result};
use crate::expiry::{Clock, SystemClock};
use crate::fs::{FileSystem, ReadMode, StdFs};
use crate::index::chooser::ModelBudget;
use crate::index::{IndexConfig, IndexKind, IndexTuning};
use crate::learning::LearningPolicy;
use crate::sst::BuilderOptions;
use crate::version::CompactionStyle;
use std::collections::BTreeMap;
use std::sync::Arc;

mod commit_listener;
mod compaction_filter;
mod flsm;
pub use commit_listener::{CommitKind, CommitListener, CommitOp};
pub use compaction_filter::{CompactionFilter, ReadLatest, Verdict};
pub use flsm::FlsmOptions;

/// The largest error bound (δ) an option may set.
const MAX_ERROR_BOUND: u32 = 1 << 20;

/// Options of a database, fixed at [`crate::Db::open`].
#[derive(Clone)]
pub struct Options {
    /// Create the directory and an empty database if none exists. Default `true`.
    pub create_if_missing: bool,
    /// Fail if a database already exists. Default `false`.
    pub error_if_exists: bool,
    /// Memtable size (bytes) at which it becomes immutable and is flushed. Default 64 MiB.
    pub memtable_size_bytes: usize,
    /// Immutable memtables allowed to wait for flush before writes stall. Default 2.
    pub max_immutable_memtables: usize,
    /// Values of at least this many bytes go to the value log (WiscKey); smaller ones stay
    /// inline. `usize::MAX` disables separation; 0 separates every value (Bourbon preset).
    /// Default 1024.
    pub value_separation_threshold: usize,
    /// Target size of one SSTable (bytes). Default 32 MiB.
    pub target_file_size_bytes: u64,
    /// Number of L0 files that triggers a compaction into L1. Default 4.
    pub l0_compaction_trigger: usize,
    /// Number of L0 files from which writes are held to `delayed_write_rate`, a rate that
    /// falls as L0 nears `l0_stop_trigger` (`db/write_delay.rs`). Default 8.
    pub l0_slowdown_trigger: usize,
    /// Number of L0 files at which writes wait for compaction. Default 12.
    pub l0_stop_trigger: usize,
    /// User bytes per second writes may ingest at `l0_slowdown_trigger` files in L0 (a
    /// sixteenth of it near `l0_stop_trigger`); 0 never slows writes down (they stop at
    /// `l0_stop_trigger`). Default 16 MiB/s (RocksDB's `delayed_write_rate`).
    pub delayed_write_rate: u64,
    /// Maximum total size of L1 (bytes); level `n+1` may be `level_size_ratio` times larger.
    /// Default 256 MiB.
    pub l1_max_bytes: u64,
    /// Size ratio between consecutive levels. Default 10.
    pub level_size_ratio: u64,
    /// Leveled: set level targets from the last level up (RocksDB's
    /// `level_compaction_dynamic_level_bytes`), so the last level holds ~90% of the data and
    /// L0 compacts into the shallowest level that needs to exist (`compaction/leveled.rs`).
    /// `false`: level `n` may hold `l1_max_bytes × ratio^(n-1)` and L0 goes to L1 (LevelDB).
    /// Default `true`.
    pub dynamic_level_bytes: bool,
    /// Threads one leveled compaction may split its merge over, by key ranges of the output
    /// level's files (RocksDB's sub-compactions). 1 merges on the background thread alone;
    /// with `background_threads = false` the ranges merge one after another (deterministic).
    /// Default: the machine's parallelism, at most 4.
    pub max_subcompactions: usize,
    /// Nice value the compaction thread (and its sub-compaction threads) adds to its CPU
    /// priority on Linux, under leveled compaction, whose flushes run on a thread of their
    /// own: on a busy machine the writers and the flush then take the CPU first and
    /// compaction the rest, so sealed memtables do not pile up behind a merge (peak memory)
    /// and writes are slowed by L0's triggers rather than starved of CPU. 0 keeps the
    /// process's priority; at most 19. Ignored elsewhere (FLSM flushes on the compaction
    /// thread). Default 10.
    pub compaction_nice: i32,
    /// How levels >= 1 are organized and compacted (`--compaction`): leveled (LevelDB) or
    /// PebblesDB's fragmented LSM. Fixed when the database is created and recorded in its
    /// manifest: `None` (the default) opens an existing database with its recorded style and
    /// creates a new one leveled; `Some(style)` creates a new database with `style` and fails
    /// with `InvalidArgument` on an existing one of the other style.
    pub compaction: Option<CompactionStyle>,
    /// Tunables of the fragmented LSM (guards, per-guard limits, seek-based compaction,
    /// parallel seeks); ignored under `Leveled`.
    pub flsm: FlsmOptions,
    /// Number of levels (L0 … L(n-1)). Default 7.
    pub num_levels: usize,
    /// Bloom filter bits per key; 0 disables filters. Default 10 (≈1% false positives).
    pub bloom_bits_per_key: u32,
    /// Records per data block of an SSTable (the fence-pointer granularity). Default 64.
    pub block_records: usize,
    /// How values are compressed: each SSTable data block's value chunk, and each value-log
    /// record — and, with `compress_keys`, each data block's keys. Default `None` (see
    /// README "Compression").
    pub compression: Compression,
    /// With `compression` on, also compress each SSTable data block — its fixed-width key
    /// slots, byte-transposed so that LZ4 finds their repeated fields, and its key suffixes —
    /// with the same codec, where that saves an eighth of the block (SSTable format 6,
    /// docs/format/sst.md; `--no-compress-keys` turns it off). A lookup into a compressed
    /// block takes it decompressed from the cache of decompressed chunks (`cache_bytes`), or
    /// reads and decompresses the whole block (1–6 KiB for 64 slots) and caches it when the
    /// cache admits it. Ignored without compression. Default on.
    pub compress_keys: bool,
    /// Width of an SSTable slot's key head; `None` (default) lets each file choose the width
    /// that stores its keys in the fewest bytes (at least 8 bytes, or the longest key after
    /// the file's common prefix when that is shorter). For layout experiments: any width
    /// from 0 to 65,535 is valid; a file uses `min(width, longest key after its prefix)`.
    /// Narrow heads make slots smaller and searches slower: a key's bytes past the head live
    /// in its block's suffix chunk, which a comparison reads whenever two heads tie — with
    /// a head of 0, every comparison (with 1, most of them).
    pub slot_head_bytes: Option<u32>,
    /// Store the key prefix each data block's keys share once per block (SSTable format 5)
    /// rather than in every slot: fewer key bytes and narrower slots on string keys. On by
    /// default; off writes format-5 tables with empty block prefixes (for comparisons).
    pub block_prefixes: bool,
    /// How SSTables and sealed value-log segments are read. Default `Mmap`.
    pub read_mode: ReadMode,
    /// Bytes of the database's caches (`--cache-mb`). Under [`ReadMode::Direct`] the page
    /// cache: data blocks, value chunks and value-log pages read with `O_DIRECT` stay there,
    /// and nowhere else — less a quarter for decompressed value chunks when `compression` is
    /// on. Under the other read modes (the kernel caches file pages) all of it holds
    /// decompressed value chunks, used only as far as compressed values are read. A point
    /// lookup whose chunk is cached decompresses nothing (`Stats::reads`). Filter, fence and
    /// model sections are pinned beside it (`Stats::pinned_bytes`). 0 caches nothing.
    /// Default 64 MiB.
    pub cache_bytes: u64,
    /// Most table files held open at once (`--max-open-files`, as LevelDB and RocksDB name
    /// it): under `pread` and `direct` an LRU of descriptors, files past it opened again on
    /// demand; under `mmap` at most this many tables are mapped, later ones are read with
    /// `pread` through the LRU. Their filter, fence and model sections stay in memory. `None`
    /// (the default) keeps every live table open, so the kernel's limits on mappings and
    /// descriptors bound the number of live tables.
    pub max_open_files: Option<usize>,
    /// Size at which the active value-log segment is sealed and a new one started (sealed
    /// segments are read through `read_mode`; GC rewrites one segment at a time). Default
    /// 64 MiB.
    pub value_log_segment_bytes: u64,
    /// Garbage ratio (garbage bytes / segment bytes) from which a sealed segment is
    /// collected: every compaction relocates the values it meets in such a segment into a
    /// fresh one (RocksDB BlobDB's GC during compaction), and background GC rewrites in place
    /// the tables that still point into the worst such segment, then deletes it. A segment
    /// whose garbage reaches all its bytes is deleted without being read. Background GC also
    /// seals the active segment once its garbage reaches this ratio and a quarter of
    /// `value_log_segment_bytes` (an open keeps appending to it, so a database reopened often
    /// would otherwise keep that garbage). 1.0 or above disables all of these (explicit
    /// `Db::run_value_log_gc` still works). Default 0.5.
    pub value_log_gc_ratio: f64,
    /// Titan's level merge: a compaction into the last level rewrites, in key order, into
    /// fresh value-log segments the values its output pointers reach out of key order (not
    /// continuing one of the few segments the previous pointers went to, within 64 KiB), when
    /// more than `level_merge_threshold` of its pointers are; so range scans over separated
    /// values read the log nearly sequentially. Each value is rewritten about once, when it
    /// first reaches the last level out of order. Default `true`.
    pub level_merge: bool,
    /// The fraction of a last-level merge's pointers that must be out of key order for
    /// `level_merge` to rewrite them (0 rewrites any out-of-order value at once; near 1
    /// almost never). Default 0.1 (docs/benchmarks/gc-in-compaction.md).
    pub level_merge_threshold: f64,
    /// The learned index trained per SSTable (`--index`). Default Greedy-PLR.
    pub index: IndexKind,
    /// Error bound δ of learned indexes — the position boundary: a lookup reads at most
    /// `2δ + 1` slots (for every type but RMI, whose bound comes from the data; `fence` then
    /// keeps one pointer per `2δ + 1` keys). Default 8.
    pub error_bound: u32,
    /// Per-level overrides of `error_bound` (`--error-bound-per-level=L0:4,L1:16`): level →
    /// δ. The learned-index study found read cost per level is not proportional to level
    /// size under skew, so each level may get its own position boundary. Levels not listed
    /// use `error_bound`. Default empty.
    pub error_bound_per_level: BTreeMap<usize, u32>,
    /// Type-specific parameters of the index types (radix bits, RMI leaves, ...).
    pub index_tuning: IndexTuning,
    /// `--index=auto`: every model is picked per file by the model chooser
    /// ([`crate::index::chooser`]) among fence pointers, PLR and PGM at `error_bound` and
    /// wider bounds, by predicted lookup cost within `model_memory_budget`; `index` is then
    /// not used. Default false.
    pub auto_index: bool,
    /// The model chooser's memory budget per file (`--model-memory-budget`): `fence` (the
    /// memory of fence pointers at the file's bound), `unlimited`, or bytes per key.
    /// Default `fence`.
    pub model_memory_budget: ModelBudget,
    /// When models are learned and whether lookups use them (`--learning`). Default
    /// `at-build`.
    pub learning: LearningPolicy,
    /// `T_wait` of the background policies (`always`, `cost-benefit`): how long a new file
    /// must live before it is considered for learning, in milliseconds (Bourbon §4.4.1).
    /// Default 50, as in Bourbon.
    pub learning_wait_ms: u64,
    /// Threads of the background learner (`always`, `cost-benefit`, `lazy`). Default 1.
    pub learning_threads: usize,
    /// `lazy`: a file is learned once this many point lookups passed its bloom filter
    /// (at least; see `lazy_learning_reads_per_key`). Default 1.
    pub lazy_learning_reads: u64,
    /// `lazy`: a file of `n` keys is learned once `max(lazy_learning_reads, ⌈n ×
    /// lazy_learning_reads_per_key⌉)` point lookups passed its bloom filter — about the
    /// lookups that pay for training it (Bourbon's break-even: training costs ~100–150 ns
    /// per key, a model lookup saves ~200 ns). A file that few lookups reach (the cold part
    /// of a hot-spot workload) is never learned. 0 learns on the `lazy_learning_reads`-th
    /// lookup. Default 0.5.
    pub lazy_learning_reads_per_key: f64,
    /// Learn one model per sorted level (Bourbon level learning) when the background thread
    /// is idle; any change to a level invalidates its model until it is retrained. For
    /// read-mostly workloads. Ignored under the `never` policy. Default `false`.
    pub level_models: bool,
    /// Most separated values a range scan reads ahead of its consumer in one sorted batch
    /// (WiscKey's range-query readahead; batches start at 4 values and double up to this).
    /// 1 reads each value when reached. Default 64.
    pub scan_readahead: usize,
    /// Threads that read a scan's batch of separated values in parallel with the scanning
    /// thread (WiscKey's range-query thread pool), so several reads are in flight on a
    /// device with internal parallelism. 0 reads on the scanning thread only. Default 0.
    pub scan_fetch_threads: usize,
    /// Open even when unflushed writes were lost to damage rather than to a crash: a WAL
    /// the manifest records as live is missing, shorter than its synced size or damaged in
    /// its synced bytes, or a value-log entry that a synced WAL record points at is missing
    /// or damaged (docs/RELIABILITY.md, "Damage model"). The writes are dropped, and each
    /// loss is logged and listed by [`crate::Db::wal_losses`]. Without it such an open fails
    /// with `Corruption` naming the damaged file and changes nothing on disk. Default
    /// `false`.
    pub accept_wal_loss: bool,
    /// Open for reading only: the open writes nothing (no new manifest, WAL or value-log
    /// segment; the WALs' writes are replayed into memory, not flushed), takes no lock, and
    /// can run beside a process that has the database open for writing. It reads the state
    /// as of the open (a snapshot; later writes of the other process are not seen). Writes,
    /// flushes, compactions and GC fail with `InvalidArgument`. Default `false`.
    pub read_only: bool,
    /// The file system. Default the real one ([`StdFs`]).
    pub fs: Arc<dyn FileSystem>,
    /// How often (milliseconds) the background thread looks for tables dense with expired
    /// values to rewrite when no other work wakes it (it also looks after every flush and
    /// compaction). Default 60,000.
    pub expiry_check_interval_ms: u64,
    /// The clock expiring values are judged by ([`crate::expiry`]): reads hide, and
    /// compactions drop, values whose expiry time has passed on it. Default the system's
    /// wall clock; tests use a [`ManualClock`](crate::ManualClock).
    pub clock: Arc<dyn Clock>,
    /// An application's judgement of garbage beyond the engine's ([`CompactionFilter`]):
    /// compaction drops the values of keys under the filter's prefix that it calls garbage.
    /// Default `None` (compaction drops only what no reader can see).
    pub compaction_filter: Option<Arc<dyn CompactionFilter>>,
    /// Told of every committed write group, in commit order, with the batches' logical
    /// operations ([`CommitListener`]; replication's source). Default `None` (one branch
    /// per commit group).
    pub commit_listener: Option<Arc<dyn CommitListener>>,
    /// Run flush and compaction in background threads. When `false`, they run inline in the
    /// writer that triggers them (deterministic; used by tests). Default `true`.
    pub background_threads: bool,
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("create_if_missing", &self.create_if_missing)
            .field("error_if_exists", &self.error_if_exists)
            .field("memtable_size_bytes", &self.memtable_size_bytes)
            .field("max_immutable_memtables", &self.max_immutable_memtables)
            .field(
                "value_separation_threshold",
                &self.value_separation_threshold,
            )
            .field("target_file_size_bytes", &self.target_file_size_bytes)
            .field("l0_compaction_trigger", &self.l0_compaction_trigger)
            .field("l0_slowdown_trigger", &self.l0_slowdown_trigger)
            .field("l0_stop_trigger", &self.l0_stop_trigger)
            .field("delayed_write_rate", &self.delayed_write_rate)
            .field("compaction_nice", &self.compaction_nice)
            .field("l1_max_bytes", &self.l1_max_bytes)
            .field("level_size_ratio", &self.level_size_ratio)
            .field("dynamic_level_bytes", &self.dynamic_level_bytes)
            .field("max_subcompactions", &self.max_subcompactions)
            .field("compaction", &self.compaction)
            .field("flsm", &self.flsm)
            .field("num_levels", &self.num_levels)
            .field("bloom_bits_per_key", &self.bloom_bits_per_key)
            .field("block_records", &self.block_records)
            .field("compression", &self.compression)
            .field("compress_keys", &self.compress_keys)
            .field("slot_head_bytes", &self.slot_head_bytes)
            .field("block_prefixes", &self.block_prefixes)
            .field("read_mode", &self.read_mode)
            .field("cache_bytes", &self.cache_bytes)
            .field("max_open_files", &self.max_open_files)
            .field("value_log_segment_bytes", &self.value_log_segment_bytes)
            .field("value_log_gc_ratio", &self.value_log_gc_ratio)
            .field("level_merge", &self.level_merge)
            .field("level_merge_threshold", &self.level_merge_threshold)
            .field("background_threads", &self.background_threads)
            .field("index", &self.index)
            .field("error_bound", &self.error_bound)
            .field("error_bound_per_level", &self.error_bound_per_level)
            .field("index_tuning", &self.index_tuning)
            .field("auto_index", &self.auto_index)
            .field("model_memory_budget", &self.model_memory_budget)
            .field("learning", &self.learning)
            .field("learning_wait_ms", &self.learning_wait_ms)
            .field("learning_threads", &self.learning_threads)
            .field("lazy_learning_reads", &self.lazy_learning_reads)
            .field(
                "lazy_learning_reads_per_key",
                &self.lazy_learning_reads_per_key,
            )
            .field("level_models", &self.level_models)
            .field("scan_readahead", &self.scan_readahead)
            .field("scan_fetch_threads", &self.scan_fetch_threads)
            .field("accept_wal_loss", &self.accept_wal_loss)
            .field("read_only", &self.read_only)
            .field("expiry_check_interval_ms", &self.expiry_check_interval_ms)
            .field("clock", &self.clock)
            .field("compaction_filter", &self.compaction_filter)
            .field("commit_listener", &self.commit_listener)
            .finish_non_exhaustive()
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            create_if_missing: true,
            error_if_exists: false,
            memtable_size_bytes: 64 << 20,
            max_immutable_memtables: 2,
            value_separation_threshold: 1024,
            target_file_size_bytes: 32 << 20,
            l0_compaction_trigger: 4,
            l0_slowdown_trigger: 8,
            l0_stop_trigger: 12,
            delayed_write_rate: 16 << 20,
            l1_max_bytes: 256 << 20,
            level_size_ratio: 10,
            dynamic_level_bytes: true,
            max_subcompactions: std::thread::available_parallelism().map_or(1, |n| n.get().min(4)),
            compaction_nice: 10,
            compaction: None,
            flsm: FlsmOptions::default(),
            num_levels: 7,
            bloom_bits_per_key: 10,
            block_records: 64,
            compression: Compression::None,
            compress_keys: true,
            slot_head_bytes: None,
            block_prefixes: true,
            read_mode: ReadMode::Mmap,
            cache_bytes: 64 << 20,
            max_open_files: None,
            value_log_segment_bytes: 64 << 20,
            value_log_gc_ratio: 0.5,
            level_merge: true,
            level_merge_threshold: 0.1,
            fs: Arc::new(StdFs),
            clock: Arc::new(SystemClock),
            compaction_filter: None,
            commit_listener: None,
            expiry_check_interval_ms: 60_000,
            background_threads: true,
            index: IndexKind::Plr,
            error_bound: 8,
            error_bound_per_level: BTreeMap::new(),
            index_tuning: IndexTuning::default(),
            auto_index: false,
            model_memory_budget: ModelBudget::FencePointers,
            learning: LearningPolicy::AtBuild,
            learning_wait_ms: 50,
            learning_threads: 1,
            lazy_learning_reads: 1,
            lazy_learning_reads_per_key: 0.5,
            level_models: false,
            scan_readahead: 64,
            scan_fetch_threads: 0,
            accept_wal_loss: false,
            read_only: false,
        }
    }
}

fn invalid(option: &str, why: impl std::fmt::Display) -> Error {
    Error::InvalidArgument(format!("option `{option}` {why}"))
}

impl Options {
    /// The Bourbon preset: every value separated into the value log (Bourbon §5 setup).
    pub fn bourbon() -> Self {
        Options {
            value_separation_threshold: 0,
            ..Options::default()
        }
    }

    /// Checks every option; the error names the first bad one.
    ///
    /// # Errors
    /// `Error::InvalidArgument` with a message naming the option and the accepted range.
    pub fn validate(&self) -> Result<()> {
        if self.memtable_size_bytes < 4096 {
            return Err(invalid("memtable_size_bytes", "must be at least 4096"));
        }
        if self.max_open_files == Some(0) {
            return Err(invalid("max_open_files", "must be at least 1"));
        }
        if self.scan_readahead == 0 || self.scan_readahead > 1 << 16 {
            return Err(invalid("scan_readahead", "must be between 1 and 65536"));
        }
        if self.scan_fetch_threads > 256 {
            return Err(invalid("scan_fetch_threads", "must be at most 256"));
        }
        if !(0..=19).contains(&self.compaction_nice) {
            return Err(invalid("compaction_nice", "must be between 0 and 19"));
        }
        if self.max_immutable_memtables == 0 {
            return Err(invalid("max_immutable_memtables", "must be at least 1"));
        }
        if self.target_file_size_bytes < 4096 {
            return Err(invalid("target_file_size_bytes", "must be at least 4096"));
        }
        if self.l0_compaction_trigger == 0 {
            return Err(invalid("l0_compaction_trigger", "must be at least 1"));
        }
        if self.l0_slowdown_trigger < self.l0_compaction_trigger {
            return Err(invalid(
                "l0_slowdown_trigger",
                "must be at least l0_compaction_trigger",
            ));
        }
        if self.l0_stop_trigger < self.l0_slowdown_trigger {
            return Err(invalid(
                "l0_stop_trigger",
                "must be at least l0_slowdown_trigger",
            ));
        }
        if self.l1_max_bytes < 4096 {
            return Err(invalid("l1_max_bytes", "must be at least 4096"));
        }
        if self.max_subcompactions == 0 {
            return Err(invalid("max_subcompactions", "must be at least 1"));
        }
        if self.level_size_ratio < 2 {
            return Err(invalid("level_size_ratio", "must be at least 2"));
        }
        if !(2..=16).contains(&self.num_levels) {
            return Err(invalid("num_levels", "must be between 2 and 16"));
        }
        self.flsm.validate()?;
        if self.bloom_bits_per_key > 64 {
            return Err(invalid("bloom_bits_per_key", "must be at most 64"));
        }
        if self
            .slot_head_bytes
            .is_some_and(|h| h as usize > crate::key::MAX_KEY_LEN)
        {
            return Err(invalid("slot_head_bytes", "must be at most 65535"));
        }
        if !(1..=65_536).contains(&self.block_records) {
            return Err(invalid("block_records", "must be between 1 and 65536"));
        }
        if self.value_log_segment_bytes < 4096 {
            return Err(invalid("value_log_segment_bytes", "must be at least 4096"));
        }
        if self.value_log_gc_ratio.is_nan() || self.value_log_gc_ratio <= 0.0 {
            return Err(invalid("value_log_gc_ratio", "must be a number above 0"));
        }
        if !(0.0..1.0).contains(&self.level_merge_threshold) {
            return Err(invalid(
                "level_merge_threshold",
                "must be a number from 0 up to (not including) 1",
            ));
        }
        self.validate_learning()
    }

    /// Checks the index and learning options (part of [`Self::validate`]).
    fn validate_learning(&self) -> Result<()> {
        if self.error_bound > MAX_ERROR_BOUND {
            return Err(invalid("error_bound", "must be at most 1048576"));
        }
        for (&level, &bound) in &self.error_bound_per_level {
            if level >= self.num_levels {
                return Err(invalid(
                    "error_bound_per_level",
                    format!(
                        "level {level} is not below num_levels ({})",
                        self.num_levels
                    ),
                ));
            }
            if bound > MAX_ERROR_BOUND {
                return Err(invalid(
                    "error_bound_per_level",
                    format!("the bound of level {level} must be at most 1048576"),
                ));
            }
        }
        if let ModelBudget::BytesPerKey(b) = self.model_memory_budget {
            if !(b.is_finite() && b >= 0.0) {
                return Err(invalid(
                    "model_memory_budget",
                    "bytes per key must be a finite number >= 0",
                ));
            }
        }
        validate_index_tuning(&self.index_tuning)?;
        if !(1..=64).contains(&self.learning_threads) {
            return Err(invalid("learning_threads", "must be between 1 and 64"));
        }
        if self.lazy_learning_reads == 0 {
            return Err(invalid("lazy_learning_reads", "must be at least 1"));
        }
        if !(self.lazy_learning_reads_per_key.is_finite()
            && (0.0..=1e6).contains(&self.lazy_learning_reads_per_key))
        {
            return Err(invalid(
                "lazy_learning_reads_per_key",
                "must be a number between 0 and 1000000",
            ));
        }
        if self.learning_wait_ms > 24 * 3600 * 1000 {
            return Err(invalid("learning_wait_ms", "must be at most one day"));
        }
        Ok(())
    }
}

/// Checks the per-type index tunables (part of [`Options::validate`]).
fn validate_index_tuning(t: &IndexTuning) -> Result<()> {
    if t.pgm_recursive_error == 0 || t.pgm_recursive_error > MAX_ERROR_BOUND {
        return Err(invalid(
            "index_tuning.pgm_recursive_error",
            "must be between 1 and 1048576",
        ));
    }
    if !(1..=24).contains(&t.radix_bits) {
        return Err(invalid(
            "index_tuning.radix_bits",
            "must be between 1 and 24",
        ));
    }
    if t.rmi_leaves > 1 << 20 {
        return Err(invalid(
            "index_tuning.rmi_leaves",
            "must be at most 1048576 (0 sizes it from the error bound)",
        ));
    }
    if !(2..=256).contains(&t.fiting_fanout) {
        return Err(invalid(
            "index_tuning.fiting_fanout",
            "must be between 2 and 256",
        ));
    }
    if !(1..=65_536).contains(&t.string_run_limit) {
        return Err(invalid(
            "index_tuning.string_run_limit",
            "must be between 1 and 65536",
        ));
    }
    Ok(())
}

impl Options {
    /// The index learned models use (at build time or in the background), with the default
    /// `error_bound` (no per-level override).
    pub fn index_config(&self) -> IndexConfig {
        self.index_config_with_bound(self.error_bound)
    }

    /// The index with error bound `delta`. The error bound is the position boundary of every
    /// type: `fence` (pointers over projections) gets one pointer every `2δ + 1` keys, so its
    /// windows are as wide as PLR's.
    fn index_config_with_bound(&self, delta: u32) -> IndexConfig {
        IndexConfig {
            kind: self.index,
            error_bound: delta,
            fence_stride: delta.saturating_mul(2).saturating_add(1),
            tuning: self.index_tuning,
        }
    }

    /// The error bound of the files of `level`: its override, else `error_bound`.
    pub fn error_bound_at(&self, level: usize) -> u32 {
        self.error_bound_per_level
            .get(&level)
            .copied()
            .unwrap_or(self.error_bound)
    }

    /// The index learned for the files (or the level model) of `level`.
    pub fn index_config_at(&self, level: usize) -> IndexConfig {
        self.index_config_with_bound(self.error_bound_at(level))
    }

    /// The table-builder options of a file written into `level` (the level picks its error
    /// bound, `error_bound_per_level`): the table layer gets its configuration as data.
    pub fn builder_options(&self, level: usize) -> BuilderOptions {
        BuilderOptions {
            block_records: self.block_records,
            bloom_bits_per_key: self.bloom_bits_per_key,
            model: self.build_model_config(level),
            model_budget: self.auto_index.then_some(self.model_memory_budget),
            compression: self.compression,
            compress_keys: self.compress_keys,
            head_bytes: self.slot_head_bytes,
            block_prefixes: self.block_prefixes,
        }
    }

    /// The index the builder trains for a file of `level`, or `None` when the policy does not
    /// learn at build time.
    pub fn build_model_config(&self, level: usize) -> Option<IndexConfig> {
        (self.learning == LearningPolicy::AtBuild).then(|| self.index_config_at(level))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_errors_name_the_option() {
        Options::default().validate().unwrap();
        let o = Options {
            l0_stop_trigger: 1,
            ..Options::default()
        };
        let msg = o.validate().unwrap_err().to_string();
        assert!(msg.contains("l0_stop_trigger"), "{msg}");
        let o = Options {
            value_log_gc_ratio: f64::NAN,
            ..Options::default()
        };
        assert!(o
            .validate()
            .unwrap_err()
            .to_string()
            .contains("value_log_gc_ratio"));
    }

    #[test]
    fn index_options_are_validated() {
        let bad = [
            Options {
                error_bound_per_level: [(7, 4)].into_iter().collect(),
                ..Options::default()
            },
            Options {
                error_bound_per_level: [(1, (1 << 20) + 1)].into_iter().collect(),
                ..Options::default()
            },
        ];
        for o in bad {
            let msg = o.validate().unwrap_err().to_string();
            assert!(msg.contains("error_bound_per_level"), "{msg}");
        }
        let tuned = |f: fn(&mut IndexTuning)| {
            let mut o = Options::default();
            f(&mut o.index_tuning);
            o.validate().map_err(|e| e.to_string())
        };
        assert!(tuned(|t| t.radix_bits = 0)
            .unwrap_err()
            .contains("radix_bits"));
        assert!(tuned(|t| t.radix_bits = 25)
            .unwrap_err()
            .contains("radix_bits"));
        assert!(tuned(|t| t.radix_bits = 24).is_ok());
        assert!(tuned(|t| t.fiting_fanout = 1)
            .unwrap_err()
            .contains("fanout"));
        assert!(tuned(|t| t.fiting_fanout = 257)
            .unwrap_err()
            .contains("fanout"));
        assert!(tuned(|t| t.rmi_leaves = (1 << 20) + 1)
            .unwrap_err()
            .contains("rmi_leaves"));
        assert!(tuned(|t| t.pgm_recursive_error = 0)
            .unwrap_err()
            .contains("pgm"));
        let o = Options {
            error_bound: 8,
            error_bound_per_level: [(2, 64)].into_iter().collect(),
            ..Options::default()
        };
        o.validate().unwrap();
        assert_eq!(o.index_config_at(2).error_bound, 64);
        assert_eq!(o.index_config_at(3).error_bound, 8);
        assert_eq!(o.build_model_config(2).map(|c| c.error_bound), Some(64));
    }
}
