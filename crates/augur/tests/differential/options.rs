//! The configurations of the differential suite and the random options of each run: where
//! values live, which file system, background threads and compaction style (`Config`, one per
//! test); the engine options a seed draws under them (`draw_options`); how each open of a run
//! reads its files (`read_setup`); and the environment overrides of the seeds and the
//! operation count.

use augur::index::chooser::ModelBudget;
use augur::{CompactionStyle, FlsmOptions, IndexKind, LearningPolicy, Options, ReadMode};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Default operations per run.
const DEFAULT_OPS: usize = 100_000;

/// Where values live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Values {
    /// Every value inline in the SSTables.
    Inline,
    /// Every value in the value log.
    Separated,
    /// Threshold 32 with values of 0..100 bytes.
    Mixed,
}

/// Which file system.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Storage {
    Mem,
    Disk,
}

/// One configuration of the suite (one per test).
#[derive(Debug, Clone, Copy)]
pub struct Config {
    pub values: Values,
    pub storage: Storage,
    pub background: bool,
    pub style: CompactionStyle,
}

/// A learning policy, any of them: background learners (with a tiny `T_wait`, set by the
/// caller) install models while operations run; results must not change.
pub fn random_learning(rng: &mut StdRng) -> LearningPolicy {
    augur::learning::ALL_POLICIES[rng.gen_range(0..augur::learning::ALL_POLICIES.len())]
}

/// Seeds from `AUGUR_DIFF_SEEDS` (`a..b` or `a,b,c`), else `defaults`.
pub fn seeds(defaults: &[u64]) -> Vec<u64> {
    let Ok(s) = std::env::var("AUGUR_DIFF_SEEDS") else {
        return defaults.to_vec();
    };
    let s = s.trim();
    if let Some((a, b)) = s.split_once("..") {
        let a: u64 = a.trim().parse().expect("AUGUR_DIFF_SEEDS: bad range start");
        let b: u64 = b.trim().parse().expect("AUGUR_DIFF_SEEDS: bad range end");
        return (a..b).collect();
    }
    s.split(',')
        .map(|x| x.trim().parse().expect("AUGUR_DIFF_SEEDS: bad seed"))
        .collect()
}

/// Operation count from `AUGUR_DIFF_OPS`, else [`DEFAULT_OPS`].
pub fn op_count() -> usize {
    std::env::var("AUGUR_DIFF_OPS")
        .map(|s| s.trim().parse().expect("AUGUR_DIFF_OPS: bad number"))
        .unwrap_or(DEFAULT_OPS)
}

/// The read modes a run cycles through: under `MemFs` the mode only decides whether reads go
/// through the page cache (`Direct`) or not (`Mmap` and `Pread` read the same way there).
fn read_modes(storage: Storage) -> &'static [ReadMode] {
    match storage {
        Storage::Mem => &[ReadMode::Mmap, ReadMode::Direct],
        Storage::Disk => &[ReadMode::Mmap, ReadMode::Pread, ReadMode::Direct],
    }
}

/// How open number `open` (0 for the first, then one more per reopen) of run `seed` reads
/// its files: the read mode, the page cache's budget and the bound on open files.
///
/// The mode cycles with the open (starting at the seed), so every run, whatever index type
/// its seed picks, spends part of its life under `ReadMode::Direct` and part under the other
/// modes, and reads files another mode wrote; the suite's run time stays that of one run per
/// seed. The budget and the bound come from a stream of their own (the other drawn options
/// and the operations are those of the seed as before): the cache is often tiny (0 caches
/// nothing; 16 KiB is three pages, evicted all the time) or 1 MiB, so eviction happens
/// while iterators, snapshots and compactions hold pages. `max_open_files` is sometimes a
/// handful of tables, so tables are opened again on demand under every mode.
pub fn read_setup(seed: u64, storage: Storage, open: u64) -> (ReadMode, u64, Option<usize>) {
    let modes = read_modes(storage);
    let mode = modes[((seed + open) % modes.len() as u64) as usize];
    let mut rng = StdRng::seed_from_u64(seed ^ 0xCAC4_E000 ^ open.wrapping_mul(0x9E37_79B9));
    let cache_bytes = [0, 16 << 10, 256 << 10, 1 << 20, 64 << 20][rng.gen_range(0..5)];
    let max_open_files = rng.gen_bool(0.25).then(|| rng.gen_range(1..=6));
    (mode, cache_bytes, max_open_files)
}

/// The options of run `seed` under `cfg`, drawn from `rng` (the model chooser's settings from
/// a stream of their own), and the largest value the run writes.
pub fn draw_options(seed: u64, cfg: Config, rng: &mut StdRng) -> (Options, usize) {
    // The model chooser's settings come from a stream of their own, so adding them left
    // every other drawn setting (and the seeds' coverage) as it was.
    let mut auto_rng = StdRng::seed_from_u64(seed ^ 0xA070_1DE5);
    // So do the SSTable layout's: the compression cycles with the seed ((seed + seed / 7)
    // mod 3: neighbouring seeds take different codecs, and a run of 7 seeds pairs index types
    // with codecs differently from the next), and some runs force a slot head width (0:
    // every key byte in the block's suffix chunk).
    let mut layout_rng = StdRng::seed_from_u64(seed ^ 0x5107_C0DE);
    let compression = [
        augur::Compression::None,
        augur::Compression::Lz4,
        augur::Compression::Zstd(1),
    ][((seed + seed / IndexKind::ALL.len() as u64) % 3) as usize];
    let slot_head_bytes = layout_rng
        .gen_bool(0.3)
        .then(|| [0, 1, 3, 8, 9, 16][layout_rng.gen_range(0..6)]);
    // Most runs let files store their blocks' shared prefixes once (format 5), some not.
    let block_prefixes = layout_rng.gen_bool(0.75);
    // With a codec, most runs compress the data blocks too (format 6), some values only.
    let compress_keys = layout_rng.gen_bool(0.75);
    let (threshold, max_value) = match cfg.values {
        Values::Inline => (usize::MAX, rng.gen_range(40..120)),
        Values::Separated => (0, rng.gen_range(40..120)),
        Values::Mixed => (32, 100),
    };
    let mut opts = Options {
        memtable_size_bytes: rng.gen_range(4..=16) << 10,
        target_file_size_bytes: rng.gen_range(8..=32) << 10,
        l1_max_bytes: rng.gen_range(16..=64) << 10,
        value_log_segment_bytes: rng.gen_range(8..=32) << 10,
        value_separation_threshold: threshold,
        block_records: [4, 16, 64][rng.gen_range(0..3)],
        bloom_bits_per_key: [0, 10][rng.gen_range(0..2)],
        level_size_ratio: rng.gen_range(2..=10),
        background_threads: cfg.background,
        // Seed s uses index type s mod 7: the default seeds cover every type.
        index: IndexKind::ALL[(seed % IndexKind::ALL.len() as u64) as usize],
        // Some runs let the model chooser pick every model (`--index=auto`).
        auto_index: auto_rng.gen_bool(0.25),
        model_memory_budget: [
            ModelBudget::FencePointers,
            ModelBudget::Unlimited,
            ModelBudget::BytesPerKey(0.05),
        ][auto_rng.gen_range(0..3)],
        error_bound: [0, 1, 4, 8, 64][rng.gen_range(0..5)],
        learning: random_learning(rng),
        level_models: rng.gen_bool(0.5),
        learning_wait_ms: rng.gen_range(0..3),
        lazy_learning_reads: rng.gen_range(1..4),
        scan_fetch_threads: rng.gen_range(0..3),
        compaction: Some(cfg.style),
        compression,
        slot_head_bytes,
        block_prefixes,
        compress_keys,
        ..Options::default()
    };
    (opts.read_mode, opts.cache_bytes, opts.max_open_files) = read_setup(seed, cfg.storage, 0);
    // Leveled compaction's shape from a stream of its own: static or dynamic level sizes,
    // 1–4 sub-compactions, and sometimes a write slowdown slow enough to act in the test.
    let mut level_rng = StdRng::seed_from_u64(seed ^ 0x1E7E_15ED);
    opts.dynamic_level_bytes = level_rng.gen_bool(0.7);
    opts.max_subcompactions = level_rng.gen_range(1..=4);
    opts.delayed_write_rate = [0, 1 << 20, 16 << 20][level_rng.gen_range(0..3)];
    // Value relocation from a stream of its own: the GC ratio (which segments compactions
    // relocate out of and automatic GC collects) and level merge (on or off, at thresholds
    // from "any value out of order" up).
    let mut vlog_rng = StdRng::seed_from_u64(seed ^ 0x0B10_B6C0);
    opts.value_log_gc_ratio = [0.3, 0.5, 0.8][vlog_rng.gen_range(0..3)];
    opts.level_merge = vlog_rng.gen_bool(0.6);
    opts.level_merge_threshold = [0.0, 0.1, 0.3][vlog_rng.gen_range(0..3)];
    if cfg.style == CompactionStyle::Flsm {
        // Guards every few dozen keys, few levels (so the last level's rewrites and the
        // in-place rule run), crowded guards and seek-triggered compactions.
        opts.num_levels = rng.gen_range(3..=5);
        opts.flsm = FlsmOptions {
            top_level_bits: rng.gen_range(4..=9),
            bit_decrement: rng.gen_range(0..=2),
            max_sstables_per_guard: rng.gen_range(2..=4),
            seek_compaction_threshold: [0, 2, 10][rng.gen_range(0..3)],
            rewrite_in_place_factor: [1, 25][rng.gen_range(0..2)],
            parallel_seek_threads: rng.gen_range(0..3),
            ..FlsmOptions::default()
        };
    }
    (opts, max_value)
}
