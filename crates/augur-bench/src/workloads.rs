//! The benchmarks themselves, single-threaded, with db_bench semantics:
//!
//! - `fillseq`: keys 0..num in order into a fresh database.
//! - `fillrandom`: num puts of uniformly random key numbers in `[0, num)` (with repeats, as
//!   db_bench, so about 63% of the numbers end up present) into a fresh database.
//! - `overwrite`: like fillrandom, on the existing database.
//! - `readrandom`: `reads` gets of random key numbers in `[0, num)`; reports how many were found.
//!   `--read_distribution` picks the key indexes of `readrandom`, `readmissing` and
//!   `seekrandom` with one of YCSB's choosers instead (`Params::read_chooser`).
//! - `readmissing`: `reads` gets of keys one byte longer (an extra `'0'`), so never found.
//!   Both read benchmarks materialize their keys 1024 at a time outside the timed region
//!   (`KeyBatch`): on a large key set fetching a random key is a cache miss, harness work
//!   that would otherwise be counted as lookup latency.
//! - `readseq` / `readreverse`: iterate forward / backward over up to `reads` entries.
//! - `seekrandom`: `reads` seeks to a random key, each reading the entry found and the
//!   `--seek_nexts` entries after it.
//! - `scanparallel`: `reads` parallel scans (`Db::scan_parallel`, Augur only) of ranges of
//!   `--scan-range-keys` source keys at random positions, with `--scan-threads`,
//!   `--scan-split` and `--scan-partitions` (see `workloads/scans.rs`).
//! - `deleteseq` / `deleterandom`: num deletes in order / of random key numbers.
//! - `flush`, `compact`: one `Db::flush` / full `Db::compact_range` (timed as one op).
//! - `waitforcompaction`: waits until the flushes and compactions earlier writes left behind
//!   are done (db_bench's name; timed as one op). Its `io_bytes_written` completes a fill's
//!   write amplification: (fill's + this one's) / the fill's user bytes.
//! - `gc`: explicit value-log GC (`Db::run_value_log_gc`) until no segment has garbage
//!   (timed as one op; Augur only): each run rewrites in place the tables that point into
//!   the worst segment. Reports the segments collected and the tables rewritten.
//! - `waitforlearning`: waits until the background learner has no file waiting for `T_wait`,
//!   queued or being learned (Augur only; timed as one op), and reports what was learned
//!   meanwhile (`stats_view::learning_during`), so that the models earlier benchmarks caused
//!   are not counted in the next one.
//! - `stats`: prints `Db::stats()` (not timed).
//! - `train`: no database: builds the configured index (`--index`, `--error-bound`) over the
//!   projected keys of the whole key set in sorted order, as one file's index, and reports the
//!   training time per key (projection excluded), segments and model bytes per key.
//! - `ycsb-load`, `ycsb-a` … `ycsb-f`, `ycsb-b-hot`: YCSB's core workloads and B′ (see
//!   `ycsb.rs`); `ycsb-load` starts from a fresh database like the fills.
//!
//! With a key source (`--keys`, `--keys-text`, `--distribution`; see `sources.rs`), `num` is the
//! number of source keys, fills write every key exactly once — `fillseq` in ascending order,
//! `fillrandom` shuffled with the run's seed, either overridden by `--load-order` — and the
//! random benchmarks (`overwrite`, `readrandom`, `seekrandom`, `deleterandom`,
//! `readrandomwriterandom`, `readwhilewriting`) draw source keys uniformly with repeats;
//! `readmissing` reads the missing keys `sources.rs` describes; YCSB's records are the
//! source's keys (`ycsb/naming.rs`).
//!
//! With db_bench's `--prefix_size` and `--keys_per_prefix` (`keys.rs`), the benchmarks draw key
//! indexes as without them; `fillseq` and `deleteseq` visit the keys by key number, as
//! db_bench does (`KeySet::sequential`), so their prefixes go round-robin.
//!
//! Fill benchmarks report the write amplification of the benchmark itself: bytes written to
//! WAL, value log, flushed and compacted SSTables during the benchmark divided by user bytes,
//! measured right after the last write. It counts the flushes and compactions that ran so
//! far and not the ones still pending (no final flush is forced), like db_bench's own
//! statistics at the end of a fill.
//!
//! The modules: `meter.rs` (timing), `threads.rs` (spreading a benchmark over threads),
//! `writes.rs`, `reads.rs`, `scans.rs`, `learning.rs` and `train.rs` (the benchmarks),
//! `amplification.rs` (write and space amplification, background work); this file holds the
//! parameters and the `Runner`, which opens the database and dispatches by name.

mod amplification;
mod learning;
mod meter;
mod reads;
mod scans;
mod threads;
mod train;
mod writes;

pub(crate) use amplification::amplification;
pub(crate) use meter::Meter;
pub use scans::ParallelScanParams;

use super::engine::{self, BenchEngine, EngineKind};
use super::keys::ValueGen;
use super::memory::{self, PeakRss};
use super::report::Outcome;
use super::sources::{KeySet, LoadOrder};
use super::ycsb::{self, RequestDist, YcsbParams};
use crate::error::{io_err, BenchError};
use augur::Options;
use rand::rngs::StdRng;
use rand::SeedableRng;
use serde_json::json;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use writes::{Op, Order};

/// Every benchmark name understood.
pub const NAMES: &[&str] = &[
    "fillseq",
    "fillrandom",
    "overwrite",
    "readrandom",
    "readmissing",
    "readrandomwriterandom",
    "readwhilewriting",
    "readseq",
    "readreverse",
    "seekrandom",
    "scanparallel",
    "deleteseq",
    "deleterandom",
    "flush",
    "compact",
    "waitforcompaction",
    "gc",
    "waitforlearning",
    "learn",
    "stats",
    "train",
    "ycsb-load",
    "ycsb-a",
    "ycsb-b",
    "ycsb-c",
    "ycsb-d",
    "ycsb-e",
    "ycsb-f",
    "ycsb-b-hot",
];

/// The benchmarks that write; their records carry write and space amplification.
const WRITES: &[&str] = &[
    "fillseq",
    "fillrandom",
    "overwrite",
    "deleteseq",
    "deleterandom",
    "ycsb-load",
];

/// The benchmarks after which the files change without a write of their own; their records
/// carry the space use too (as the writes' do).
const SETTLES: &[&str] = &["flush", "compact", "waitforcompaction", "gc"];

/// Parameters shared by all benchmarks of a run.
#[derive(Debug, Clone)]
pub struct Params {
    pub num: u64,
    pub reads: u64,
    /// readrandomwriterandom: percentage of reads.
    pub readwritepercent: u32,
    pub key_size: usize,
    pub value_size: usize,
    /// Values compressible to about this fraction (`--compression_ratio`); `None`: random.
    pub compression_ratio: Option<f64>,
    /// The peers' codec (`--compression_type`; Augur's is in its `Options`).
    pub codec: engine::Codec,
    pub sync: bool,
    pub seed: u64,
    pub histogram: bool,
    pub use_existing_db: bool,
    /// The cache of every engine in bytes (`--cache_size`, see `memory.rs`; Augur's is also
    /// in its `Options`).
    pub cache_bytes: usize,
    /// Peers read with direct I/O (`--use_direct_reads`; Augur's read mode is in its
    /// `Options`).
    pub direct_reads: bool,
    /// RocksDB keeps its statistics (`--statistics`).
    pub statistics: bool,
    /// The L0 triggers given for the peers (Augur's are in its `Options`).
    pub l0_triggers: engine::L0Triggers,
    /// The key chooser of the lookups (`--read_distribution`; `None`: uniform).
    pub read_distribution: Option<RequestDist>,
    /// Entries read after each seek of `seekrandom` (db_bench's `--seek_nexts`).
    pub seek_nexts: usize,
    /// `scanparallel`'s threads, splitter, partitions and range size.
    pub parallel_scan: ParallelScanParams,
    /// Threads of `readrandom` / `readmissing` (db_bench's `--threads`): each does `reads`
    /// lookups with its own random stream.
    pub threads: usize,
    /// The keys (db_bench numbers or a key source).
    pub keys: Arc<KeySet>,
    /// Order of fills over a key source (`None`: by benchmark name).
    pub load_order: Option<LoadOrder>,
    /// YCSB's request distribution and scan length (see `ycsb.rs`).
    pub ycsb: YcsbParams,
}

/// Runs benchmarks against one database directory.
pub struct Runner {
    dir: PathBuf,
    opts: Options,
    p: Params,
    /// The engine benchmarked.
    kind: EngineKind,
    db: Option<Box<dyn BenchEngine>>,
    values: ValueGen,
    /// Benchmarks run so far; benchmark `i` uses the random seed `seed + i` (db_bench).
    runs: u64,
    record: bool,
    /// Print nothing on stdout (it carries the JSON report).
    quiet: bool,
    /// YCSB records present (grows with YCSB inserts).
    ycsb: ycsb::State,
    /// `/proc/self/io` written bytes where the last benchmark's count stopped.
    io_mark: Option<u64>,
    /// Peak RSS per benchmark and so far.
    rss: PeakRss,
}

impl Runner {
    /// A runner; `record` asks for per-operation latencies, `quiet` for no text on stdout.
    pub fn new(
        dir: PathBuf,
        opts: Options,
        p: Params,
        kind: EngineKind,
        record: bool,
        quiet: bool,
    ) -> Self {
        let values = ValueGen::new(p.seed, p.value_size, p.compression_ratio);
        Runner {
            dir,
            opts,
            p,
            kind,
            db: None,
            values,
            runs: 0,
            record,
            quiet,
            ycsb: ycsb::State::default(),
            io_mark: None,
            rss: PeakRss::default(),
        }
    }

    fn db(&mut self) -> Result<&dyn BenchEngine, BenchError> {
        if self.db.is_none() {
            let mut o = self.opts.clone();
            o.create_if_missing = !self.p.use_existing_db;
            let settings = engine::OpenSettings {
                sync: self.p.sync,
                cache_bytes: self.p.cache_bytes,
                codec: self.p.codec,
                direct_reads: self.p.direct_reads,
                statistics: self.p.statistics,
                l0_triggers: self.p.l0_triggers,
            };
            self.db = Some(engine::open(self.kind, &self.dir, &o, settings)?);
        }
        self.db
            .as_deref()
            .ok_or_else(|| BenchError::failed("database not open"))
    }

    /// Closes the database and deletes its files, refusing to touch a directory that
    /// holds anything but the engine's files.
    fn fresh(&mut self) -> Result<(), BenchError> {
        if let Some(db) = self.db.take() {
            db.close()?;
        }
        if self.dir.exists() {
            let entries = std::fs::read_dir(&self.dir)
                .map_err(io_err(format!("listing {}", self.dir.display())))?;
            let mut files = Vec::new();
            for e in entries {
                let e = e.map_err(io_err(format!("listing {}", self.dir.display())))?;
                let name = e.file_name().to_string_lossy().into_owned();
                if !engine::owns_file(self.kind, &name) {
                    return Err(BenchError::failed(format!(
                        "refusing to delete the database in {}: it holds {name:?}, which is not a {} file",
                        self.dir.display(),
                        self.kind.name()
                    )));
                }
                files.push(e.path());
            }
            for f in files {
                // fjall keeps its journals and partitions in directories.
                let removed = if f.is_dir() {
                    std::fs::remove_dir_all(&f)
                } else {
                    std::fs::remove_file(&f)
                };
                removed.map_err(io_err(format!("deleting {}", f.display())))?;
            }
        }
        Ok(())
    }

    /// Runs benchmark `name`; `None` when it printed something instead of measuring
    /// (`stats`, or a fill skipped because of `--use_existing_db`).
    pub fn run(&mut self, name: &str) -> Result<Option<Outcome>, BenchError> {
        let mut rng = StdRng::seed_from_u64(self.p.seed.wrapping_add(self.runs));
        self.runs += 1;
        let cpu_before = super::process::cpu_seconds();
        // Writes are counted from where the previous benchmark's count stopped, so background
        // work that runs during the bookkeeping between benchmarks (the space scan below) is
        // charged to the next benchmark (e.g. `waitforcompaction`) instead of to nobody.
        let io_before = self.io_mark.take().or_else(super::process::written_bytes);
        let fresh = matches!(name, "fillseq" | "fillrandom" | "ycsb-load");
        if fresh {
            if self.p.use_existing_db {
                if !self.quiet {
                    println!("{name:<12} : skipped (--use_existing_db is true)");
                }
                return Ok(None);
            }
            self.fresh()?;
        }
        // A spinner with the elapsed time on stderr while the benchmark runs (drawn only on a
        // terminal; nothing touches the measured operations).
        let progress = (!self.quiet && name != "stats").then(|| {
            let bar = indicatif::ProgressBar::new_spinner();
            bar.set_style(
                indicatif::ProgressStyle::with_template("{spinner} {msg} {elapsed}")
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
            );
            bar.set_message(format!("{name} ({})", self.kind.name()));
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        });
        // The engine's memory counters where the benchmark starts (none when it opens the
        // database: its counters start at zero), and the window of its peak RSS.
        let memory_before = self.db.as_deref().and_then(|d| d.memory());
        let rss_reset = self.rss.begin();
        let outcome = self.measure(name, &mut rng);
        let peak_rss = self.rss.end(rss_reset);
        // Taken before the bookkeeping below (the space scan reads every entry).
        let memory_after = self.db.as_deref().and_then(|d| d.memory());
        if let Some(bar) = progress {
            bar.finish_and_clear();
        }
        let Some(outcome) = outcome? else {
            return Ok(None);
        };
        let mut outcome = outcome;
        let io_after = super::process::written_bytes();
        self.io_mark = io_after;
        if let (Some(before), Some(after)) = (io_before, io_after) {
            let io = after.saturating_sub(before);
            outcome.extra.push(("io_bytes_written", json!(io)));
            if WRITES.contains(&name) && outcome.bytes > 0 {
                outcome.extra.push((
                    "io_write_amplification",
                    json!(io as f64 / outcome.bytes as f64),
                ));
            }
        }
        if WRITES.contains(&name) || SETTLES.contains(&name) {
            self.space_amplification(&mut outcome)?;
        }
        let stats = self.db.as_deref().and_then(|db| db.stats());
        outcome.stats = stats.as_ref().map(crate::stats_view::stats_json);
        let mut budget = None;
        if let Some(after) = memory_after {
            memory::cache_fields(&mut outcome, memory_before.as_ref(), &after);
            if self.kind == EngineKind::Augur {
                let pinned = after.pinned_bytes.unwrap_or(0);
                budget = Some(memory::Budget::new(&self.opts, pinned));
            }
        }
        // Process CPU time over the benchmark (all threads: background work counts too), peak
        // RSS so far and during the benchmark (with Augur's budget, `memory.rs`); absent where
        // /proc is not available.
        if let (Some(before), Some(after)) = (cpu_before, super::process::cpu_seconds()) {
            outcome.extra.push(("cpu_s", json!(after - before)));
        }
        if let Some(bytes) = self.rss.so_far() {
            outcome
                .extra
                .push(("peak_rss_mb", json!(memory::mb(bytes))));
        }
        if let Some(bytes) = peak_rss {
            outcome
                .extra
                .push(("benchmark_peak_rss_mb", json!(memory::mb(bytes))));
        }
        // What the memtables held at once, since open (Augur): most of the peak RSS of a fill.
        if let Some(s) = &stats {
            outcome
                .extra
                .push(("memtable_peak_mb", json!(memory::mb(s.memtable_peak_bytes))));
        }
        if let Some(b) = budget {
            b.push_fields(&mut outcome, peak_rss);
        }
        Ok(Some(outcome))
    }

    /// Runs the measured part of benchmark `name`; `None` when it printed something instead
    /// (`stats`).
    fn measure(&mut self, name: &str, rng: &mut StdRng) -> Result<Option<Outcome>, BenchError> {
        let order = |default| match self.p.load_order {
            Some(LoadOrder::Random) if !self.p.keys.is_numbers() => Order::Shuffled,
            Some(LoadOrder::Sequential) => Order::Sequential,
            _ => default,
        };
        let fill_random = if self.p.keys.is_numbers() {
            Order::Drawn
        } else {
            Order::Shuffled
        };
        let outcome = match name {
            "fillseq" => self.write(name, rng, Op::Put, order(Order::Sequential))?,
            "fillrandom" => self.write(name, rng, Op::Put, order(fill_random))?,
            "overwrite" => self.write(name, rng, Op::Put, Order::Drawn)?,
            "deleteseq" => self.write(name, rng, Op::Delete, Order::Sequential)?,
            "deleterandom" => self.write(name, rng, Op::Delete, Order::Drawn)?,
            "readrandom" => self.read_random(name, rng, false)?,
            "readrandomwriterandom" => self.read_write_random(name, rng)?,
            "readwhilewriting" => self.read_while_writing(name, rng)?,
            // db_bench's readmissing: one more byte of key, never present (sources.rs).
            "readmissing" => self.read_random(name, rng, true)?,
            "train" => train::train(name, &self.p, &self.opts)?,
            "seekrandom" => self.seek_random(name, rng)?,
            "scanparallel" => self.scan_parallel(name, rng)?,
            "readseq" => self.read_seq(name, false)?,
            "readreverse" => self.read_seq(name, true)?,
            "flush" | "compact" | "waitforcompaction" => self.maintenance(name)?,
            "gc" => self.gc(name)?,
            "learn" => self.learn(name)?,
            "waitforlearning" => self.wait_for_learning(name)?,
            n if n.starts_with("ycsb-") => self.ycsb(name, rng)?,
            "stats" => {
                let Some(stats) = self.db()?.stats() else {
                    if !self.quiet {
                        println!("{name:<12} : not available for {}", self.kind.name());
                    }
                    return Ok(None);
                };
                if !self.quiet {
                    print!("{}", crate::stats_view::stats_text(&stats, false));
                }
                return Ok(None);
            }
            other => return Err(BenchError::failed(format!("unknown benchmark {other:?}"))),
        };
        Ok(Some(outcome))
    }

    /// Opens the database if needed and returns it with the value generator (split borrow).
    fn parts(&mut self) -> Result<(&dyn BenchEngine, &mut ValueGen), BenchError> {
        self.db()?;
        match self.db.as_deref() {
            Some(db) => Ok((db, &mut self.values)),
            None => Err(BenchError::failed("database not open")),
        }
    }

    /// The Augur database of an Augur-only benchmark `name`; for a peer, an error saying the
    /// benchmark is not available for it.
    fn augur_only(&mut self, name: &str) -> Result<&augur::Db, BenchError> {
        let kind = self.kind;
        let (db, _) = self.parts()?;
        db.augur()
            .ok_or_else(|| BenchError::failed(format!("{name}: not available for {}", kind.name())))
    }

    /// A YCSB benchmark (`ycsb.rs`): the load or a workload of `reads` operations.
    fn ycsb(&mut self, name: &str, rng: &mut StdRng) -> Result<Outcome, BenchError> {
        let keys = Arc::clone(&self.p.keys);
        let r = ycsb::Run {
            name,
            records: ycsb::Records::new(&keys, self.p.key_size, self.p.ycsb.insert_order),
            num: self.p.num,
            ops: self.p.reads,
            value_size: self.p.value_size,
            ycsb: self.p.ycsb,
            at_build: self.kind == EngineKind::Augur
                && self.opts.learning == augur::LearningPolicy::AtBuild,
        };
        self.db()?;
        let (Some(db), values, state) = (self.db.as_deref(), &mut self.values, &mut self.ycsb)
        else {
            return Err(BenchError::failed("database not open"));
        };
        if name == "ycsb-load" {
            ycsb::load(&r, db, values, state, rng)
        } else {
            ycsb::transactions(&r, db, values, state, rng)
        }
    }
}
