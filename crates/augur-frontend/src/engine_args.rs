//! Engine options by name, shared by the `augur` CLI (its global flags) and the Python
//! package (`augur.open()`'s keyword arguments), and meant for every front end: one struct,
//! [`EngineArgs`], maps the names and their accepted values onto [`augur::Options`], so the
//! front ends accept the same options with the same defaults (the engine's).

use augur::index::chooser::ModelBudget;
use augur::index::RmiRoot;
use augur::{CompactionStyle, Db, IndexKind, LearningPolicy, Options, ReadMode};
use clap::{Args, ValueEnum};
use std::collections::BTreeMap;
use std::path::Path;

/// How SSTables and sealed value-log segments are read.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadModeArg {
    /// Memory-map the files.
    Mmap,
    /// Positional reads into buffers.
    Pread,
    /// `O_DIRECT` reads through the database's own bounded page cache (`--cache-mb`).
    Direct,
}

impl ReadModeArg {
    /// The engine's value.
    pub fn to_engine(self) -> ReadMode {
        match self {
            ReadModeArg::Mmap => ReadMode::Mmap,
            ReadModeArg::Pread => ReadMode::Pread,
            ReadModeArg::Direct => ReadMode::Direct,
        }
    }
}

/// How levels >= 1 are organized and compacted.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompactionArg {
    /// LevelDB's leveled compaction: one sorted run per level.
    Leveled,
    /// PebblesDB's fragmented LSM: guards, fragments appended without rewriting.
    Flsm,
}

impl CompactionArg {
    /// The engine's value.
    pub fn to_engine(self) -> CompactionStyle {
        match self {
            CompactionArg::Leveled => CompactionStyle::Leveled,
            CompactionArg::Flsm => CompactionStyle::Flsm,
        }
    }
}

/// The learned index trained per SSTable.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexArg {
    /// Fence pointers over key projections (the baseline index, in the model section).
    Fence,
    /// Bourbon's Greedy-PLR piecewise linear model.
    Plr,
    /// PGM-index: optimal piecewise linear approximation with recursive levels.
    Pgm,
    /// RadixSpline: spline with a radix table (`--radix-bits`).
    Rs,
    /// Two-layer RMI (`--rmi-leaves`, `--rmi-root`); its error bound comes from the data.
    Rmi,
    /// FITing-Tree: greedy segments under a B+-tree (`--fiting-fanout`).
    Fiting,
    /// PLEX: spline under a self-tuned compact hist-tree.
    Plex,
    /// String tree: PLR models over the bytes past each region's shared prefix, a tree of
    /// them where keys share more (for string keys: paths, URLs, composite keys).
    String,
    /// The model chooser: per file, fence pointers, PLR or PGM at the error bound or wider,
    /// by predicted lookup cost within `--model-memory-budget`.
    Auto,
}

impl IndexArg {
    /// The engine's value (`Auto` sets `Options::auto_index` instead and leaves the kind at
    /// the engine's default, which the chooser does not use).
    pub fn to_engine(self) -> IndexKind {
        match self {
            IndexArg::Auto => Options::default().index,
            IndexArg::Fence => IndexKind::Fence,
            IndexArg::Plr => IndexKind::Plr,
            IndexArg::Pgm => IndexKind::Pgm,
            IndexArg::Rs => IndexKind::RadixSpline,
            IndexArg::Rmi => IndexKind::Rmi,
            IndexArg::Fiting => IndexKind::Fiting,
            IndexArg::Plex => IndexKind::Plex,
            IndexArg::String => IndexKind::StringTree,
        }
    }
}

/// The root model of an RMI.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum RmiRootArg {
    /// Linear root.
    Linear,
    /// Cubic root.
    Cubic,
}

impl RmiRootArg {
    /// The engine's value.
    pub fn to_engine(self) -> RmiRoot {
        match self {
            RmiRootArg::Linear => RmiRoot::Linear,
            RmiRootArg::Cubic => RmiRoot::Cubic,
        }
    }
}

/// Parses `--model-memory-budget`: `fence`, `unlimited` or bytes per key.
///
/// # Errors
/// A message naming the option and the value.
pub fn parse_model_budget(s: &str) -> Result<ModelBudget, String> {
    ModelBudget::parse(s).map_err(|e| e.to_string())
}

/// Parses `L0:4,L1:16` (or `0:4,1:16`) into level → error bound.
///
/// # Errors
/// A message naming the malformed part.
pub fn parse_level_bounds(s: &str) -> Result<BTreeMap<usize, u32>, String> {
    let mut out = BTreeMap::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (level, bound) = part
            .split_once(':')
            .ok_or_else(|| format!("{part:?}: expected LEVEL:BOUND, e.g. L0:4"))?;
        let level = level.trim();
        let digits = level
            .strip_prefix('L')
            .or_else(|| level.strip_prefix('l'))
            .unwrap_or(level);
        let level: usize = digits
            .parse()
            .map_err(|_| format!("{part:?}: bad level {level:?}"))?;
        let bound: u32 = bound
            .trim()
            .parse()
            .map_err(|_| format!("{part:?}: bad error bound {bound:?}"))?;
        if out.insert(level, bound).is_some() {
            return Err(format!("level {level} is given twice"));
        }
    }
    Ok(out)
}

/// When models are learned.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum LearningArg {
    /// No models: lookups take the baseline path (fence pointers + binary search).
    Never,
    /// Train while writing each SSTable; lookups use the model.
    AtBuild,
    /// Learn every new SSTable in the background after T_wait.
    Always,
    /// Learn in the background after T_wait when Bourbon's cost–benefit analyzer expects
    /// the model to pay off.
    CostBenefit,
    /// Learn an SSTable in the background after its k-th lookup.
    Lazy,
    /// Learn only on demand (`Db::learn_all`); never learn later files.
    Offline,
}

impl LearningArg {
    /// The engine's value.
    pub fn to_engine(self) -> LearningPolicy {
        match self {
            LearningArg::Never => LearningPolicy::Never,
            LearningArg::AtBuild => LearningPolicy::AtBuild,
            LearningArg::Always => LearningPolicy::Always,
            LearningArg::CostBenefit => LearningPolicy::CostBenefit,
            LearningArg::Lazy => LearningPolicy::Lazy,
            LearningArg::Offline => LearningPolicy::Offline,
        }
    }
}

/// Engine options; unset ones keep the engine defaults (see `augur::Options`).
#[derive(Args, Debug, Clone, Default)]
pub struct EngineArgs {
    /// Values of at least N bytes go to the value log; 0 separates every value.
    #[arg(
        long,
        global = true,
        value_name = "N",
        alias = "value_separation_threshold"
    )]
    pub value_separation_threshold: Option<usize>,
    /// Memtable size in MiB (engine default 64).
    #[arg(long, global = true, value_name = "MB", alias = "memtable_mb")]
    pub memtable_mb: Option<usize>,
    /// How files are read: mmap, pread or direct (O_DIRECT through the database's page
    /// cache; engine default mmap).
    #[arg(long, global = true, value_enum, alias = "read_mode")]
    pub read_mode: Option<ReadModeArg>,
    /// The database's cache, in MiB (engine default 64): under `--read-mode direct` the page
    /// cache of data and value-log pages (less a quarter for decompressed value chunks when
    /// values are compressed), under mmap and pread the cache of decompressed value chunks
    /// (used only by compressed values); filters, fence indexes and models are pinned beside
    /// it.
    #[arg(long, global = true, value_name = "MB", alias = "cache_mb")]
    pub cache_mb: Option<u64>,
    /// Most table files open at once (engine default: all); tables past it are opened on
    /// demand (LevelDB's and RocksDB's max_open_files).
    #[arg(long, global = true, value_name = "N", alias = "max_open_files")]
    pub max_open_files: Option<usize>,
    /// Bloom filter bits per key; 0 disables filters (engine default 10).
    #[arg(long, global = true, value_name = "N", alias = "bloom_bits")]
    pub bloom_bits: Option<u32>,
    /// Value compression: none, lz4, zstd or zstd:LEVEL (engine default none): SSTable value
    /// chunks (one per data block) and value-log records.
    #[arg(long, global = true, value_name = "CODEC", value_parser = parse_compression)]
    pub compression: Option<augur::Compression>,
    /// With --compression, store SSTable data blocks (key slots and suffixes) uncompressed,
    /// compressing values only, as before format 6 (engine default: blocks compressed with
    /// the values' codec where that saves an eighth); for comparisons.
    #[arg(long, global = true, alias = "no_compress_keys")]
    pub no_compress_keys: bool,
    /// Width of an SSTable slot's key head in bytes, 0 to 65535 (engine default: chosen per
    /// file); key bytes past the head are read from the block's suffix chunk when heads tie,
    /// so 0 (no head: every comparison reads it) and other narrow heads trade speed for size.
    #[arg(long, global = true, value_name = "N", alias = "slot_head_bytes")]
    pub slot_head_bytes: Option<u32>,
    /// Store every key past the prefix its SSTable block's keys share, as before format 5's
    /// block prefixes (engine default: each block's shared prefix stored once, where that
    /// narrows the slots); for layout comparisons.
    #[arg(long, global = true, alias = "no_block_prefixes")]
    pub no_block_prefixes: bool,
    /// Target SSTable size in MiB (engine default 32).
    #[arg(long, global = true, value_name = "MB", alias = "target_file_mb")]
    pub target_file_mb: Option<u64>,
    /// Leveled: static level sizes (L1 holds 256 MiB, each level 10× the one above, L0
    /// compacts into L1: LevelDB) instead of sizes set from the last level up (engine
    /// default, RocksDB's dynamic level bytes).
    #[arg(long, global = true, alias = "static_level_sizes")]
    pub static_level_sizes: bool,
    /// Threads one leveled compaction may split its merge over (engine default: the
    /// machine's parallelism, at most 4).
    #[arg(long, global = true, value_name = "N", alias = "max_subcompactions")]
    pub max_subcompactions: Option<usize>,
    /// Immutable memtables that may wait for their flush before writes stall (engine
    /// default 2; RocksDB's `max_write_buffer_number` is this plus the active one).
    #[arg(
        long,
        global = true,
        value_name = "N",
        alias = "max_immutable_memtables"
    )]
    pub max_immutable_memtables: Option<usize>,
    /// MiB per second writes may ingest once L0 reaches its slowdown trigger (falling to a
    /// sixteenth near the stop trigger); 0 never slows writes (engine default 16).
    #[arg(long, global = true, value_name = "MB", alias = "delayed_write_mb")]
    pub delayed_write_mb: Option<u64>,
    /// Leveled: nice value the compaction thread adds to its CPU priority on Linux, so that
    /// writers and flushes run first on a busy machine; 0 keeps the process's (engine
    /// default 10).
    #[arg(long, global = true, value_name = "N", alias = "compaction_nice")]
    pub compaction_nice: Option<i32>,
    /// L0 files that trigger a compaction out of L0 (engine default 4; db_bench's
    /// `--level0_file_num_compaction_trigger`; `augur bench` gives RocksDB the same, and
    /// refuses LevelDB and fjall, which cannot take it).
    #[arg(
        long,
        global = true,
        value_name = "N",
        alias = "level0_file_num_compaction_trigger"
    )]
    pub level0_file_num_compaction_trigger: Option<usize>,
    /// L0 files from which writes are slowed down (engine default 8; db_bench's
    /// `--level0_slowdown_writes_trigger`; RocksDB in `augur bench` too).
    #[arg(
        long,
        global = true,
        value_name = "N",
        alias = "level0_slowdown_writes_trigger"
    )]
    pub level0_slowdown_writes_trigger: Option<usize>,
    /// L0 files at which writes wait for compaction (engine default 12; db_bench's
    /// `--level0_stop_writes_trigger`; RocksDB in `augur bench` too).
    #[arg(
        long,
        global = true,
        value_name = "N",
        alias = "level0_stop_writes_trigger"
    )]
    pub level0_stop_writes_trigger: Option<usize>,
    /// Learned index type (engine default plr).
    #[arg(long, global = true, value_enum)]
    pub index: Option<IndexArg>,
    /// Compaction style, fixed when the database is created (engine default leveled); an
    /// existing database must be opened with the style it was created with.
    #[arg(long, global = true, value_enum)]
    pub compaction: Option<CompactionArg>,
    /// FLSM: low hash bits a key needs to be a level-1 guard (engine default 20). No level
    /// needs fewer than the floor whose guard spacing holds one target file
    /// (⌈log2(target file bytes / bytes per entry)⌉, 18 for 32 MiB of 144-byte entries): a
    /// smaller value acts as the floor.
    #[arg(long, global = true, value_name = "N", alias = "flsm_top_level_bits")]
    pub flsm_top_level_bits: Option<u32>,
    /// FLSM: bits fewer per deeper level, down to the floor of --flsm-top-level-bits
    /// (engine default 2).
    #[arg(long, global = true, value_name = "N", alias = "flsm_bit_decrement")]
    pub flsm_bit_decrement: Option<u32>,
    /// FLSM: overlapping files a guard may hold before it is compacted (engine default 4).
    #[arg(
        long,
        global = true,
        value_name = "N",
        alias = "max_sstables_per_guard"
    )]
    pub max_sstables_per_guard: Option<usize>,
    /// FLSM: a level is due for size past this many times the leveled limit (engine
    /// default 4).
    #[arg(long, global = true, value_name = "N", alias = "flsm_level_size_runs")]
    pub flsm_level_size_runs: Option<u64>,
    /// FLSM: consecutive seeks landing in a crowded guard before it is compacted; 0 disables (engine
    /// default 10).
    #[arg(
        long,
        global = true,
        value_name = "N",
        alias = "seek_compaction_threshold"
    )]
    pub seek_compaction_threshold: Option<u32>,
    /// FLSM: threads seeking the last level's files in parallel; 0 disables (engine
    /// default 0).
    #[arg(long, global = true, value_name = "N", alias = "parallel_seek_threads")]
    pub parallel_seek_threads: Option<usize>,
    /// Learning policy (engine default at-build).
    #[arg(long, global = true, value_enum)]
    pub learning: Option<LearningArg>,
    /// T_wait of background learning, in milliseconds (engine default 50).
    #[arg(long, global = true, value_name = "MS", alias = "learning_wait_ms")]
    pub learning_wait_ms: Option<u64>,
    /// lazy learning: a file is learned after this many point lookups into it (engine
    /// default 1).
    #[arg(long, global = true, value_name = "K", alias = "lazy_learning_reads")]
    pub lazy_learning_reads: Option<u64>,
    /// lazy learning: a file of n keys is learned after max(K, n × RATE) lookups past its
    /// bloom filter (engine default 0.5; 0 learns at K).
    #[arg(
        long,
        global = true,
        value_name = "RATE",
        alias = "lazy_learning_reads_per_key"
    )]
    pub lazy_learning_reads_per_key: Option<f64>,
    /// Error bound δ of learned indexes: a lookup reads at most 2δ+1 slots (engine default 8).
    #[arg(long, global = true, value_name = "N", alias = "error_bound")]
    pub error_bound: Option<u32>,
    /// Per-level error bounds overriding --error-bound, e.g. `L0:4,L1:16`.
    #[arg(
        long,
        global = true,
        value_name = "LIST",
        value_parser = parse_level_bounds,
        alias = "error_bound_per_level"
    )]
    pub error_bound_per_level: Option<BTreeMap<usize, u32>>,
    /// `--index=auto`: the model memory budget per file: `fence` (the memory fence pointers
    /// take at the file's error bound), `unlimited`, or bytes per key (engine default fence).
    #[arg(
        long,
        global = true,
        value_name = "BUDGET",
        alias = "model_memory_budget",
        value_parser = parse_model_budget
    )]
    pub model_memory_budget: Option<ModelBudget>,
    /// PGM: error bound of the recursive levels (engine default 4).
    #[arg(long, global = true, value_name = "N", alias = "pgm_recursive_error")]
    pub pgm_recursive_error: Option<u32>,
    /// RadixSpline: radix table bits, 1..=24 (engine default 18).
    #[arg(long, global = true, value_name = "N", alias = "radix_bits")]
    pub radix_bits: Option<u32>,
    /// RMI: leaf models, 1..=1048576; 0 sizes them from the error bound (engine default 0).
    #[arg(long, global = true, value_name = "N", alias = "rmi_leaves")]
    pub rmi_leaves: Option<u32>,
    /// RMI: root model (engine default linear).
    #[arg(long, global = true, value_enum, alias = "rmi_root")]
    pub rmi_root: Option<RmiRootArg>,
    /// FITing-Tree: B+-tree fanout, 2..=256 (engine default 16).
    #[arg(long, global = true, value_name = "N", alias = "fiting_fanout")]
    pub fiting_fanout: Option<u32>,
    /// String tree: keys a node keeps per projection before the run gets a child of its
    /// own, 1..=65536 (engine default 16); every window is this much wider than its model's.
    #[arg(long, global = true, value_name = "N", alias = "string_run_limit")]
    pub string_run_limit: Option<u32>,
    /// Garbage ratio past which a value-log segment is collected automatically; 1 or more
    /// disables automatic GC (engine default 0.5).
    #[arg(
        long,
        global = true,
        value_name = "RATIO",
        alias = "value_log_gc_ratio"
    )]
    pub value_log_gc_ratio: Option<f64>,
    /// Turn off level merge: compactions into the last level leave separated values where
    /// they are instead of rewriting the ones out of key order (engine default: on).
    #[arg(long, global = true, alias = "no_level_merge")]
    pub no_level_merge: bool,
    /// Level merge: fraction of a last-level merge's pointers that must be out of key order
    /// for it to rewrite them, 0 up to (not including) 1 (engine default 0.1).
    #[arg(
        long,
        global = true,
        value_name = "RATIO",
        alias = "level_merge_threshold"
    )]
    pub level_merge_threshold: Option<f64>,
    /// Learn one model per sorted level when idle (Bourbon level learning; read-mostly).
    #[arg(long, global = true, alias = "level_models")]
    pub level_models: bool,
    /// Open even when damage (not a crash) lost unflushed writes: a WAL missing, short or
    /// damaged in its synced bytes, or a value-log entry a synced WAL record points at. The
    /// writes are dropped and each loss is printed on stderr (without it: an error naming
    /// the damaged file, and nothing on disk changes).
    #[arg(long, global = true, alias = "accept_wal_loss")]
    pub accept_wal_loss: bool,
    /// Open for reading only: write nothing to the directory and take no lock, so the
    /// command can run beside a process that has the database open for writing (it sees
    /// the database as of its open). Commands that write fail.
    #[arg(long, global = true, alias = "read_only")]
    pub read_only: bool,
    /// Most separated values a range scan reads ahead in one sorted batch (1 reads each
    /// value when reached; engine default 64).
    #[arg(long, global = true, value_name = "N", alias = "scan_readahead")]
    pub scan_readahead: Option<usize>,
    /// Threads reading a scan's separated values in parallel (engine default 0).
    #[arg(long, global = true, value_name = "N", alias = "scan_fetch_threads")]
    pub scan_fetch_threads: Option<usize>,
    /// Do not create the database if it does not exist (commands that only read or
    /// delete never create one).
    #[arg(long, global = true)]
    pub no_create: bool,
}

/// `--compression`'s parser: the engine's own, so the flag and `Options` accept the same.
fn parse_compression(s: &str) -> Result<augur::Compression, String> {
    augur::Compression::parse(s).map_err(|e| e.to_string())
}

impl EngineArgs {
    /// The engine options these flags describe.
    pub fn options(&self) -> Options {
        let mut o = Options::default();
        if let Some(t) = self.value_separation_threshold {
            o.value_separation_threshold = t;
        }
        if let Some(mb) = self.memtable_mb {
            o.memtable_size_bytes = mb.saturating_mul(1 << 20);
        }
        if let Some(m) = self.read_mode {
            o.read_mode = m.to_engine();
        }
        if let Some(mb) = self.cache_mb {
            o.cache_bytes = mb.saturating_mul(1 << 20);
        }
        if self.max_open_files.is_some() {
            o.max_open_files = self.max_open_files;
        }
        if let Some(b) = self.bloom_bits {
            o.bloom_bits_per_key = b;
        }
        if let Some(c) = self.compression {
            o.compression = c;
        }
        if self.no_compress_keys {
            o.compress_keys = false;
        }
        if self.slot_head_bytes.is_some() {
            o.slot_head_bytes = self.slot_head_bytes;
        }
        if self.no_block_prefixes {
            o.block_prefixes = false;
        }
        if let Some(mb) = self.target_file_mb {
            o.target_file_size_bytes = mb.saturating_mul(1 << 20);
        }
        if self.static_level_sizes {
            o.dynamic_level_bytes = false;
        }
        if let Some(n) = self.max_subcompactions {
            o.max_subcompactions = n;
        }
        if let Some(n) = self.max_immutable_memtables {
            o.max_immutable_memtables = n;
        }
        if let Some(mb) = self.delayed_write_mb {
            o.delayed_write_rate = mb.saturating_mul(1 << 20);
        }
        if let Some(n) = self.compaction_nice {
            o.compaction_nice = n;
        }
        if let Some(n) = self.level0_file_num_compaction_trigger {
            o.l0_compaction_trigger = n;
        }
        if let Some(n) = self.level0_slowdown_writes_trigger {
            o.l0_slowdown_trigger = n;
        }
        if let Some(n) = self.level0_stop_writes_trigger {
            o.l0_stop_trigger = n;
        }
        if let Some(i) = self.index {
            o.index = i.to_engine();
            o.auto_index = i == IndexArg::Auto;
        }
        if let Some(b) = self.model_memory_budget {
            o.model_memory_budget = b;
        }
        if let Some(b) = &self.error_bound_per_level {
            o.error_bound_per_level = b.clone();
        }
        if let Some(c) = self.compaction {
            o.compaction = Some(c.to_engine());
        }
        let f = &mut o.flsm;
        if let Some(n) = self.flsm_top_level_bits {
            f.top_level_bits = n;
        }
        if let Some(n) = self.flsm_bit_decrement {
            f.bit_decrement = n;
        }
        if let Some(n) = self.max_sstables_per_guard {
            f.max_sstables_per_guard = n;
        }
        if let Some(n) = self.flsm_level_size_runs {
            f.level_size_runs = n;
        }
        if let Some(n) = self.seek_compaction_threshold {
            f.seek_compaction_threshold = n;
        }
        if let Some(n) = self.parallel_seek_threads {
            f.parallel_seek_threads = n;
        }
        let t = &mut o.index_tuning;
        if let Some(e) = self.pgm_recursive_error {
            t.pgm_recursive_error = e;
        }
        if let Some(b) = self.radix_bits {
            t.radix_bits = b;
        }
        if let Some(l) = self.rmi_leaves {
            t.rmi_leaves = l;
        }
        if let Some(r) = self.rmi_root {
            t.rmi_root = r.to_engine();
        }
        if let Some(f) = self.fiting_fanout {
            t.fiting_fanout = f;
        }
        if let Some(r) = self.string_run_limit {
            t.string_run_limit = r;
        }
        if let Some(l) = self.learning {
            o.learning = l.to_engine();
        }
        if let Some(ms) = self.learning_wait_ms {
            o.learning_wait_ms = ms;
        }
        if let Some(k) = self.lazy_learning_reads {
            o.lazy_learning_reads = k;
        }
        if let Some(r) = self.lazy_learning_reads_per_key {
            o.lazy_learning_reads_per_key = r;
        }
        if let Some(e) = self.error_bound {
            o.error_bound = e;
        }
        if let Some(n) = self.scan_readahead {
            o.scan_readahead = n;
        }
        if let Some(n) = self.scan_fetch_threads {
            o.scan_fetch_threads = n;
        }
        if self.level_models {
            o.level_models = true;
        }
        if self.accept_wal_loss {
            o.accept_wal_loss = true;
        }
        if self.read_only {
            o.read_only = true;
        }
        if let Some(r) = self.value_log_gc_ratio {
            o.value_log_gc_ratio = r;
        }
        if self.no_level_merge {
            o.level_merge = false;
        }
        if let Some(t) = self.level_merge_threshold {
            o.level_merge_threshold = t;
        }
        o
    }

    /// Opens the database in `dir`; `create` says whether the caller may create it
    /// (overridden by `no_create`). The WAL losses `accept_wal_loss` let through are in
    /// [`Db::wal_losses`]; reporting them is the caller's job.
    ///
    /// # Errors
    /// Those of [`Db::open`].
    pub fn open(&self, dir: &Path, create: bool) -> augur::Result<Db> {
        let mut o = self.options();
        o.create_if_missing = create && !self.no_create;
        Db::open(dir, o)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn level_bounds_parse_and_errors_say_why() {
        let b = parse_level_bounds("L0:4, l1:16,3:64").unwrap();
        assert_eq!(
            b.into_iter().collect::<Vec<_>>(),
            vec![(0, 4), (1, 16), (3, 64)]
        );
        assert!(parse_level_bounds("").unwrap().is_empty());
        assert!(parse_level_bounds("L0")
            .unwrap_err()
            .contains("LEVEL:BOUND"));
        assert!(parse_level_bounds("Lx:4")
            .unwrap_err()
            .contains("bad level"));
        assert!(parse_level_bounds("L0:-1")
            .unwrap_err()
            .contains("bad error bound"));
        assert!(parse_level_bounds("L0:1,L0:2")
            .unwrap_err()
            .contains("twice"));
    }
}
