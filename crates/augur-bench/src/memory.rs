//! Memory in `augur bench`: the flags that give every engine of a run the same memory budget
//! (db_bench's `--use_direct_reads`, `--cache_size` and `--statistics`), and what the records
//! report about memory (issue 27).
//!
//! **Flags.** `--cache_size=BYTES` is the cache of every engine: Augur's page cache of direct
//! reads (`Options::cache_bytes`), RocksDB's and LevelDB's LRU block cache, fjall's cache.
//! Without it, Augur's `--cache-mb` (when given) sets it for every engine, else db_bench's
//! default of 8 MiB. `--use_direct_reads=1` reads tables past the kernel's page cache: Augur
//! with `--read-mode direct`, RocksDB with `use_direct_reads` (flush and compaction writes stay
//! buffered, as Augur's); LevelDB and fjall have no direct reads and are refused. An explicit
//! `--read-mode` or `--cache-mb` that contradicts them is an error, never silently overridden.
//! `--read-mode direct` alone is Augur's (peers keep buffered reads), as `--compression` is.
//!
//! **Records.** For an engine that reports its memory ([`MemoryReport`]: Augur, RocksDB),
//! every benchmark record carries the cache's capacity and use and the bytes pinned outside it
//! after the benchmark, and the cache's hits, misses, device reads and device bytes during it,
//! in total and per operation (`cache_fields`). Every record carries the peak RSS during the
//! benchmark (`benchmark_peak_rss_mb`, [`PeakRss`]); Augur's also the budget of issue 27 item
//! 4 and whether that peak stayed within it ([`Budget`]).

use crate::engine::EngineKind;
use crate::error::BenchError;
use crate::process;
use crate::report::Outcome;
use augur::ReadMode;
use clap::{ArgAction, Args};
use serde_json::{json, Value};

/// db_bench's default `--cache_size`, the cache of every engine when no flag sets one.
pub const DEFAULT_CACHE_BYTES: usize = 8 << 20;

/// What the process may hold besides Augur's cache, memtables and pinned sections (code,
/// allocator, the harness's keys and buffers, transient reads): issue 27's 64 MiB.
pub const BUDGET_SLACK_BYTES: u64 = 64 << 20;

/// The memory flags of `augur bench` (db_bench's names).
#[derive(Args, Debug, Clone, Default)]
pub struct MemoryArgs {
    /// Read tables with direct I/O, past the kernel's page cache (db_bench's flag): Augur as
    /// with --read-mode direct (through its own cache of --cache_size bytes), RocksDB with
    /// use_direct_reads. LevelDB and fjall have no direct reads: refused. Default: off.
    #[arg(long = "use_direct_reads", alias = "use-direct-reads", value_name = "BOOL",
          num_args = 0..=1, require_equals = true, default_missing_value = "true",
          value_parser = crate::args::parse_bool)]
    pub use_direct_reads: Option<bool>,
    /// Cache of every engine in bytes (db_bench's flag): Augur's page cache of direct reads,
    /// RocksDB's and LevelDB's LRU block cache, fjall's cache. Default: --cache-mb when
    /// given, else 8 MiB (db_bench's default).
    #[arg(long = "cache_size", alias = "cache-size", value_name = "BYTES")]
    pub cache_size: Option<usize>,
    /// Keep RocksDB's statistics (db_bench's flag), so its records carry block cache hits
    /// and misses; off by default, as in db_bench, since it costs RocksDB time on every
    /// operation. Augur always counts; LevelDB and fjall ignore it.
    #[arg(long, action = ArgAction::Set, num_args = 0..=1, require_equals = true,
          default_value = "false", default_missing_value = "true",
          value_parser = crate::args::parse_bool)]
    pub statistics: bool,
}

/// What the memory flags resolve to for every engine of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemorySettings {
    /// The cache of every engine, bytes.
    pub cache_bytes: usize,
    /// Peers read with direct I/O (Augur's read mode is set in its `Options`).
    pub direct_reads: bool,
    /// RocksDB keeps its statistics.
    pub statistics: bool,
}

/// The name of a read mode as `--read-mode` spells it.
pub fn read_mode_name(m: ReadMode) -> String {
    format!("{m:?}").to_lowercase()
}

/// Resolves the memory flags `a` against Augur's explicit engine flags (`read_mode`: the
/// `--read-mode` given, `cache_bytes`: `--cache-mb` in bytes, each `None` when not given) and
/// sets Augur's options `o` (read mode, cache bytes) accordingly.
///
/// # Errors
/// `--cache_size` and `--cache-mb` of different sizes; `--use_direct_reads=1` with a
/// `--read-mode` other than direct; `--use_direct_reads=0` with `--read-mode direct`.
pub fn resolve(
    a: &MemoryArgs,
    read_mode: Option<ReadMode>,
    cache_bytes: Option<u64>,
    o: &mut augur::Options,
) -> Result<MemorySettings, BenchError> {
    let cache = match (a.cache_size, cache_bytes) {
        (Some(size), Some(mb)) if size as u64 != mb => {
            return Err(BenchError::failed(format!(
                "--cache_size={size} conflicts with --cache-mb ({mb} bytes): give one of them, \
                 or both with the same size"
            )))
        }
        (Some(size), _) => size,
        (None, Some(mb)) => usize::try_from(mb).unwrap_or(usize::MAX),
        (None, None) => DEFAULT_CACHE_BYTES,
    };
    o.cache_bytes = cache as u64;
    let direct = a.use_direct_reads.unwrap_or(false);
    match (a.use_direct_reads, read_mode) {
        (Some(true), Some(m)) if m != ReadMode::Direct => {
            return Err(BenchError::failed(format!(
                "--use_direct_reads=1 conflicts with --read-mode {}: direct reads are Augur's \
                 --read-mode direct (drop one of the flags)",
                read_mode_name(m)
            )))
        }
        (Some(false), Some(ReadMode::Direct)) => {
            return Err(BenchError::failed(
                "--use_direct_reads=0 conflicts with --read-mode direct (drop one of the flags)",
            ))
        }
        (Some(true), _) => o.read_mode = ReadMode::Direct,
        _ => {}
    }
    Ok(MemorySettings {
        cache_bytes: cache,
        direct_reads: direct,
        statistics: a.statistics,
    })
}

/// Refuses a run whose peers cannot honour the settings: direct reads on an engine without
/// them (the whole run fails, as for a codec an engine lacks; nothing is substituted).
///
/// # Errors
/// See [`EngineKind::check_direct_reads`].
pub fn check_engines(
    kinds: impl IntoIterator<Item = EngineKind>,
    m: &MemorySettings,
) -> Result<(), BenchError> {
    for kind in kinds {
        if m.direct_reads {
            kind.check_direct_reads()?;
        }
    }
    Ok(())
}

/// Whether `kind` reads with direct I/O in a run: Augur by its read mode, peers by the run's
/// setting (the records' `config.use_direct_reads`).
pub fn reads_direct(kind: EngineKind, o: &augur::Options, peers_direct: bool) -> bool {
    if kind == EngineKind::Augur {
        o.read_mode == ReadMode::Direct
    } else {
        peers_direct
    }
}

/// An engine's cache counters at one moment (counters since the database was opened).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheCounters {
    /// The cache's budget.
    pub capacity_bytes: u64,
    /// Bytes it holds.
    pub used_bytes: u64,
    /// Lookups it answered (`None`: the engine does not count them; RocksDB without
    /// `--statistics`).
    pub hits: Option<u64>,
    /// Lookups it missed.
    pub misses: Option<u64>,
    /// Reads from the device (`None` where not counted: RocksDB).
    pub device_reads: Option<u64>,
    /// Bytes read from the device.
    pub device_bytes: Option<u64>,
}

/// An engine's cache and pinned memory at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemoryReport {
    /// Its cache (`None`: no cache of its own in use, e.g. Augur reading by mmap or pread).
    pub cache: Option<CacheCounters>,
    /// Bytes held in memory outside the cache for the open tables: Augur's filters, fences,
    /// models and key bounds (`Stats::pinned_bytes`); RocksDB's index and filter blocks in
    /// its table readers (`rocksdb.estimate-table-readers-mem`, as
    /// `cache_index_and_filter_blocks` is off).
    pub pinned_bytes: Option<u64>,
    /// Augur's cache of decompressed value chunks (`None` for other engines, or without
    /// one): its misses are the point lookups that decompressed.
    pub chunks: Option<augur::ChunkCacheStats>,
}

impl MemoryReport {
    /// Augur's, from its statistics.
    pub fn of_augur(s: &augur::Stats) -> Self {
        MemoryReport {
            cache: s.reads.cache.map(|c| CacheCounters {
                capacity_bytes: c.capacity_bytes,
                used_bytes: c.used_bytes,
                hits: Some(c.hits),
                misses: Some(c.misses),
                device_reads: Some(c.device_reads),
                device_bytes: Some(c.device_bytes),
            }),
            pinned_bytes: Some(s.pinned_bytes()),
            chunks: s.reads.chunks,
        }
    }
}

/// The memory fields of a benchmark record from the engine's report `before` and `after` the
/// benchmark (`before` `None`: the database opened during it, so its counters started at
/// zero), per operation of `out`: pushed to the record only, except the hit ratio and the
/// device reads per operation, which also go on the text line when the cache was used (and
/// the chunk cache's hit ratio when a compressed value was looked up).
pub(crate) fn cache_fields(out: &mut Outcome, before: Option<&MemoryReport>, after: &MemoryReport) {
    let ops = out.ops;
    if let Some(p) = after.pinned_bytes {
        out.record_only.push(("pinned_bytes", json!(p)));
    }
    if let Some(c) = after.chunks {
        let old = before.and_then(|b| b.chunks).unwrap_or_default();
        let hits = c.hits.saturating_sub(old.hits);
        let misses = c.misses.saturating_sub(old.misses);
        out.record_only.extend([
            ("chunk_cache_capacity_bytes", json!(c.capacity_bytes)),
            ("chunk_cache_used_bytes", json!(c.used_bytes)),
            ("chunk_cache_hits", json!(hits)),
            ("chunk_cache_misses", json!(misses)),
            (
                "chunk_cache_misses_per_op",
                json!(misses as f64 / ops.max(1) as f64),
            ),
            (
                "chunk_cache_inserts",
                json!(c.inserts.saturating_sub(old.inserts)),
            ),
            (
                "chunk_cache_block_hits",
                json!(c.block_hits.saturating_sub(old.block_hits)),
            ),
            (
                "chunk_cache_block_misses",
                json!(c.block_misses.saturating_sub(old.block_misses)),
            ),
        ]);
        let lookups = hits + misses;
        let ratio = (lookups > 0).then(|| hits as f64 / lookups as f64);
        push(out, lookups > 0, ("chunk_cache_hit_ratio", json!(ratio)));
    }
    let Some(c) = after.cache else { return };
    let old = before.and_then(|b| b.cache).unwrap_or_default();
    let delta =
        |now: Option<u64>, then: Option<u64>| now.map(|n| n.saturating_sub(then.unwrap_or(0)));
    let per_op = |d: Option<u64>| d.map(|d| d as f64 / ops.max(1) as f64);
    let hits = delta(c.hits, old.hits);
    let misses = delta(c.misses, old.misses);
    let device_reads = delta(c.device_reads, old.device_reads);
    let device_bytes = delta(c.device_bytes, old.device_bytes);
    let lookups = hits.zip(misses).map(|(h, m)| h + m);
    let ratio = hits
        .zip(lookups)
        .filter(|(_, l)| *l > 0)
        .map(|(h, l)| h as f64 / l as f64);
    out.record_only.extend([
        ("cache_capacity_bytes", json!(c.capacity_bytes)),
        ("cache_used_bytes", json!(c.used_bytes)),
        ("cache_hits", json!(hits)),
        ("cache_misses", json!(misses)),
        ("cache_hits_per_op", json!(per_op(hits))),
        ("cache_misses_per_op", json!(per_op(misses))),
        ("device_reads", json!(device_reads)),
        ("device_bytes", json!(device_bytes)),
        ("device_bytes_per_op", json!(per_op(device_bytes))),
    ]);
    // On the line only when the cache was looked up, and only what was counted.
    let used = lookups.is_some_and(|l| l > 0);
    let reads_per_op = per_op(device_reads);
    push(out, used, ("cache_hit_ratio", json!(ratio)));
    push(
        out,
        used && reads_per_op.is_some(),
        ("device_reads_per_op", json!(reads_per_op)),
    );
}

/// Adds `field` to the record, and to the text line too when `on_line`.
fn push(out: &mut Outcome, on_line: bool, field: (&'static str, Value)) {
    if on_line {
        out.extra.push(field);
    } else {
        out.record_only.push(field);
    }
}

/// Issue 27 item 4's bound on Augur's resident memory: the cache, every memtable it may hold
/// (the active one and `max_immutable_memtables` sealed ones), the pinned sections, and
/// [`BUDGET_SLACK_BYTES`] for everything else. Meant for direct reads: under mmap the mapped
/// file pages count in the RSS and the bound does not apply (records say so by the config's
/// `read_mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// `Options::cache_bytes`.
    pub cache_bytes: u64,
    /// `memtable_size_bytes × (1 + max_immutable_memtables)`.
    pub memtable_bytes: u64,
    /// `Stats::pinned_bytes` after the benchmark.
    pub pinned_bytes: u64,
}

impl Budget {
    /// The budget of a database with options `o` pinning `pinned_bytes`.
    pub fn new(o: &augur::Options, pinned_bytes: u64) -> Self {
        let memtables = u64::try_from(o.max_immutable_memtables)
            .unwrap_or(u64::MAX)
            .saturating_add(1);
        Budget {
            cache_bytes: o.cache_bytes,
            memtable_bytes: (o.memtable_size_bytes as u64).saturating_mul(memtables),
            pinned_bytes,
        }
    }

    /// All of it, slack included.
    pub fn total_bytes(&self) -> u64 {
        self.cache_bytes
            .saturating_add(self.memtable_bytes)
            .saturating_add(self.pinned_bytes)
            .saturating_add(BUDGET_SLACK_BYTES)
    }

    /// The record's fields for a benchmark whose peak RSS was `peak_rss` (`None`: not
    /// measured, so no verdict): `memory_budget` (the parts) and `memory_budget_mb` on the
    /// record, `rss_within_budget` on the line too.
    pub(crate) fn push_fields(&self, out: &mut Outcome, peak_rss: Option<u64>) {
        out.record_only.push((
            "memory_budget",
            json!({"cache_bytes": self.cache_bytes, "memtable_bytes": self.memtable_bytes,
                   "pinned_bytes": self.pinned_bytes, "slack_bytes": BUDGET_SLACK_BYTES,
                   "total_bytes": self.total_bytes()}),
        ));
        out.record_only
            .push(("memory_budget_mb", json!(mb(self.total_bytes()))));
        if let Some(rss) = peak_rss {
            out.extra
                .push(("rss_within_budget", json!(rss <= self.total_bytes())));
        }
    }
}

/// Bytes in MiB, as the records' `*_mb` fields give them.
pub fn mb(bytes: u64) -> f64 {
    bytes as f64 / (1 << 20) as f64
}

/// The process's peak RSS per benchmark and over a configuration: the kernel's high-water
/// mark (`VmHWM`) is reset to the current RSS as each benchmark starts, read as it ends
/// (the peak during the benchmark), and folded into the peak so far (the records'
/// `peak_rss_mb`, as before per-benchmark resets existed).
#[derive(Debug, Default)]
pub struct PeakRss {
    so_far: Option<u64>,
}

impl PeakRss {
    fn fold(&mut self, peak: Option<u64>) {
        if let Some(p) = peak {
            self.so_far = Some(self.so_far.map_or(p, |s| s.max(p)));
        }
    }

    /// Starts a benchmark's window; returns whether the reset worked (Linux ≥ 4.0).
    pub fn begin(&mut self) -> bool {
        self.fold(process::peak_rss_bytes());
        process::reset_peak_rss()
    }

    /// Ends the window `begin` started (`reset`: what it returned): the peak RSS during it,
    /// `None` when it could not be measured.
    pub fn end(&mut self, reset: bool) -> Option<u64> {
        let peak = process::peak_rss_bytes();
        self.fold(peak);
        peak.filter(|_| reset)
    }

    /// The peak RSS since the configuration started.
    pub fn so_far(&mut self) -> Option<u64> {
        self.fold(process::peak_rss_bytes());
        self.so_far
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(direct: Option<bool>, cache: Option<usize>) -> MemoryArgs {
        MemoryArgs {
            use_direct_reads: direct,
            cache_size: cache,
            statistics: false,
        }
    }

    #[test]
    fn the_flags_set_every_engine_and_conflicts_are_refused() {
        let mut o = augur::Options::default();
        let m = resolve(&args(None, None), None, None, &mut o).unwrap();
        assert_eq!(m.cache_bytes, DEFAULT_CACHE_BYTES);
        assert_eq!(o.cache_bytes, DEFAULT_CACHE_BYTES as u64);
        assert!(!m.direct_reads);
        assert_eq!(o.read_mode, augur::Options::default().read_mode);
        // --use_direct_reads=1 --cache_size: Augur direct with that cache, peers direct.
        let m = resolve(&args(Some(true), Some(1 << 20)), None, None, &mut o).unwrap();
        assert_eq!((m.cache_bytes, m.direct_reads), (1 << 20, true));
        assert_eq!((o.read_mode, o.cache_bytes), (ReadMode::Direct, 1 << 20));
        // --cache-mb alone sets every engine's cache; agreeing flags are fine.
        let m = resolve(&args(None, None), None, Some(4 << 20), &mut o).unwrap();
        assert_eq!(m.cache_bytes, 4 << 20);
        let same = resolve(
            &args(Some(true), Some(4 << 20)),
            Some(ReadMode::Direct),
            Some(4 << 20),
            &mut o,
        );
        assert!(same.is_ok());
        // --read-mode direct alone is Augur's: peers keep buffered reads.
        let mut o = augur::Options::default();
        let m = resolve(&args(None, None), Some(ReadMode::Direct), None, &mut o).unwrap();
        assert!(!m.direct_reads);
        let e = resolve(&args(Some(true), None), Some(ReadMode::Mmap), None, &mut o)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--use_direct_reads=1 conflicts with --read-mode mmap"),
            "{e}"
        );
        let e = resolve(
            &args(Some(false), None),
            Some(ReadMode::Direct),
            None,
            &mut o,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("--use_direct_reads=0 conflicts with --read-mode direct"),
            "{e}"
        );
        let e = resolve(&args(None, Some(1000)), None, Some(1 << 20), &mut o)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--cache_size=1000 conflicts with --cache-mb (1048576 bytes)"),
            "{e}"
        );
    }

    #[test]
    fn direct_reads_are_refused_for_engines_without_them() {
        let direct = MemorySettings {
            cache_bytes: 1,
            direct_reads: true,
            statistics: false,
        };
        assert!(check_engines([EngineKind::Augur, EngineKind::Rocksdb], &direct).is_ok());
        for kind in [EngineKind::Leveldb, EngineKind::Fjall] {
            let e = check_engines([EngineKind::Augur, kind], &direct)
                .unwrap_err()
                .to_string();
            assert!(
                e.contains(&format!(
                    "{} has no direct reads (engines with them: augur, rocksdb)",
                    kind.name()
                )),
                "{e}"
            );
            let buffered = MemorySettings {
                direct_reads: false,
                ..direct
            };
            assert!(check_engines([kind], &buffered).is_ok());
        }
    }

    #[test]
    fn cache_fields_are_deltas_per_operation() {
        let at = |hits, misses, reads, bytes| MemoryReport {
            cache: Some(CacheCounters {
                capacity_bytes: 1 << 20,
                used_bytes: 4096,
                hits: Some(hits),
                misses: Some(misses),
                device_reads: Some(reads),
                device_bytes: Some(bytes),
            }),
            pinned_bytes: Some(777),
            chunks: None,
        };
        let mut out = Outcome::new("readrandom", 100, 1.0);
        cache_fields(
            &mut out,
            Some(&at(10, 10, 5, 4096)),
            &at(160, 60, 45, 4096 * 41),
        );
        let j = out.to_json("augur", &json!({}));
        assert_eq!(j["cache_hits"], 150);
        assert_eq!(j["cache_misses"], 50);
        assert_eq!(j["cache_hit_ratio"], 0.75);
        assert_eq!(j["cache_hits_per_op"], 1.5);
        assert_eq!(j["device_reads"], 40);
        assert_eq!(j["device_reads_per_op"], 0.4);
        assert_eq!(j["device_bytes_per_op"], 4096.0 * 40.0 / 100.0);
        assert_eq!(j["cache_capacity_bytes"], 1 << 20);
        assert_eq!(j["pinned_bytes"], 777);
        assert!(
            out.line()
                .contains("cache_hit_ratio=0.750 device_reads_per_op=0.400"),
            "{}",
            out.line()
        );
        // Opened during the benchmark: counted from zero. Unused: nothing on the line.
        let mut out = Outcome::new("fillrandom", 10, 1.0);
        cache_fields(&mut out, None, &at(0, 0, 0, 0));
        assert!(!out.line().contains("cache_hit_ratio"), "{}", out.line());
        let j = out.to_json("augur", &json!({}));
        assert!(
            j["cache_hit_ratio"].is_null() && j["cache_hits"] == 0,
            "{j}"
        );
        // No cache (mmap): pinned bytes only. Uncounted hits (RocksDB without statistics):
        // null.
        let mut out = Outcome::new("readrandom", 10, 1.0);
        let no_cache = MemoryReport {
            cache: None,
            pinned_bytes: Some(5),
            chunks: None,
        };
        cache_fields(&mut out, None, &no_cache);
        let j = out.to_json("augur", &json!({}));
        assert!(
            j["cache_hits"].is_null() && j.get("cache_hits").is_none() && j["pinned_bytes"] == 5,
            "{j}"
        );
        let uncounted = MemoryReport {
            cache: Some(CacheCounters {
                capacity_bytes: 8,
                used_bytes: 4,
                ..CacheCounters::default()
            }),
            pinned_bytes: None,
            chunks: None,
        };
        let mut out = Outcome::new("readrandom", 10, 1.0);
        cache_fields(&mut out, None, &uncounted);
        let j = out.to_json("rocksdb", &json!({}));
        assert!(
            j["cache_hits"].is_null() && j["cache_used_bytes"] == 4,
            "{j}"
        );
        assert!(j["device_reads_per_op"].is_null(), "{j}");
        // Augur's chunk cache: deltas, and its hit ratio on the line once it was looked up.
        let chunks = |hits, misses| MemoryReport {
            chunks: Some(augur::ChunkCacheStats {
                capacity_bytes: 1 << 20,
                used_bytes: 7000,
                chunks: 10,
                hits,
                misses,
                inserts: misses / 2,
                block_hits: 0,
                block_misses: 0,
            }),
            ..no_cache
        };
        let mut out = Outcome::new("readrandom", 100, 1.0);
        cache_fields(&mut out, Some(&chunks(5, 10)), &chunks(95, 20));
        let j = out.to_json("augur", &json!({}));
        assert_eq!(
            (
                j["chunk_cache_hits"].as_u64(),
                j["chunk_cache_misses"].as_u64()
            ),
            (Some(90), Some(10))
        );
        assert_eq!(j["chunk_cache_misses_per_op"], 0.1);
        assert_eq!(j["chunk_cache_inserts"], 5);
        assert!(
            out.line().contains("chunk_cache_hit_ratio=0.900"),
            "{}",
            out.line()
        );
        let mut out = Outcome::new("fillrandom", 100, 1.0);
        cache_fields(&mut out, None, &chunks(0, 0));
        assert!(!out.line().contains("chunk_cache"), "{}", out.line());
    }

    #[test]
    fn the_budget_adds_cache_memtables_pinned_and_slack() {
        let o = augur::Options {
            cache_bytes: 1 << 20,
            memtable_size_bytes: 4 << 20,
            max_immutable_memtables: 2,
            ..augur::Options::default()
        };
        let b = Budget::new(&o, 1000);
        assert_eq!(b.memtable_bytes, 12 << 20);
        assert_eq!(b.total_bytes(), (1 << 20) + (12 << 20) + 1000 + (64 << 20));
        let mut out = Outcome::new("readrandom", 1, 1.0);
        b.push_fields(&mut out, Some(b.total_bytes()));
        let j = out.to_json("augur", &json!({}));
        assert_eq!(j["rss_within_budget"], true);
        assert_eq!(j["memory_budget"]["total_bytes"], b.total_bytes());
        let mut out = Outcome::new("readrandom", 1, 1.0);
        b.push_fields(&mut out, Some(b.total_bytes() + 1));
        assert!(
            out.line().contains("rss_within_budget=false"),
            "{}",
            out.line()
        );
    }

    /// Only what holds whatever the other tests of this process allocate and reset
    /// meanwhile (they run on threads of the same process).
    #[cfg(target_os = "linux")]
    #[test]
    fn the_peak_rss_of_a_benchmark_is_folded_into_the_peak_so_far() {
        let mut rss = PeakRss::default();
        let reset = rss.begin();
        assert!(reset, "/proc/self/clear_refs");
        let during = rss.end(reset).expect("VmHWM");
        assert!(during > 1 << 20, "{during}");
        assert!(rss.so_far().unwrap() >= during);
        assert_eq!(rss.end(false), None);
    }
}
