//! The benchmarks themselves, single-threaded, with db_bench semantics:
//!
//! - `fillseq`: keys 0..num in order into a fresh database.
//! - `fillrandom`: num puts of uniformly random key numbers in `[0, num)` (with repeats, as
//!   db_bench, so about 63% of the numbers end up present) into a fresh database.
//! - `overwrite`: like fillrandom, on the existing database.
//! - `readrandom`: `reads` gets of random key numbers in `[0, num)`; reports how many were found.
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
//! random benchmarks (`overwrite`, `readrandom`, `seekrandom`, `deleterandom`) draw source keys
//! uniformly with repeats; `readmissing` reads the missing keys `sources.rs` describes.
//!
//! Fill benchmarks report the write amplification of the benchmark itself: bytes written to
//! WAL, value log, flushed and compacted SSTables during the benchmark divided by user bytes,
//! measured right after the last write. It counts the flushes and compactions that ran so
//! far and not the ones still pending (no final flush is forced), like db_bench's own
//! statistics at the end of a fill.

mod learning;
mod scans;

pub use scans::ParallelScanParams;

use super::engine::{self, BenchEngine, EngineKind};
use super::keys::ValueGen;
use super::report::Outcome;
use super::sources::{KeySet, LoadOrder};
use super::ycsb::{self, YcsbParams};
use crate::error::{io_err, BenchError};
use augur::index::builder;
use augur::index::projection::{common_prefix_len, project};
use augur::{Options, Stats};
use hdrhistogram::Histogram;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use serde_json::json;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Every benchmark name understood.
pub const NAMES: &[&str] = &[
    "fillseq",
    "fillrandom",
    "overwrite",
    "readrandom",
    "readmissing",
    "readrandomwriterandom",
    "readseq",
    "readreverse",
    "seekrandom",
    "scanparallel",
    "deleteseq",
    "deleterandom",
    "flush",
    "compact",
    "waitforcompaction",
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

/// Bytes of every file under `dir`, recursively (0 for a missing directory; files deleted
/// while it is walked count as 0).
fn dir_bytes(dir: &std::path::Path) -> Result<u64, BenchError> {
    if !dir.exists() {
        return Ok(0);
    }
    let mut total = 0;
    let entries = std::fs::read_dir(dir).map_err(io_err(format!("listing {}", dir.display())))?;
    for e in entries {
        let e = e.map_err(io_err(format!("listing {}", dir.display())))?;
        // Engines delete obsolete files in the background: a file listed a moment ago may
        // be gone, and then it takes no space.
        let meta = match e.metadata() {
            Ok(m) => m,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => continue,
            Err(err) => return Err(io_err(format!("reading {}", e.path().display()))(err)),
        };
        total += if meta.is_dir() {
            dir_bytes(&e.path())?
        } else {
            meta.len()
        };
    }
    Ok(total)
}

/// Parameters shared by all benchmarks of a run.
#[derive(Debug, Clone)]
pub struct Params {
    pub num: u64,
    pub reads: u64,
    /// readrandomwriterandom: percentage of reads.
    pub readwritepercent: u32,
    pub key_size: usize,
    pub value_size: usize,
    pub sync: bool,
    pub seed: u64,
    pub histogram: bool,
    pub use_existing_db: bool,
    /// Block cache of the peers in bytes (db_bench's `--cache_size`).
    pub cache_bytes: usize,
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

/// Per-operation timing.
pub(super) struct Meter {
    start: Instant,
    last: Instant,
    /// Time spent in [`Meter::exclude`]d harness work, subtracted from the total.
    excluded: Duration,
    hist: Option<Histogram<u64>>,
}

impl Meter {
    pub(super) fn new(record: bool) -> Self {
        let now = Instant::now();
        Meter {
            start: now,
            last: now,
            excluded: Duration::ZERO,
            // Three significant digits from 1 ns to one hour; creation cannot fail with
            // these bounds, and if it did we would simply not record.
            hist: if record {
                Histogram::new_with_bounds(1, 3_600_000_000_000, 3).ok()
            } else {
                None
            },
        }
    }

    /// Records one operation; returns its latency in nanoseconds (0 when not recording).
    pub(super) fn op_done(&mut self) -> u64 {
        match &mut self.hist {
            Some(h) => {
                let now = Instant::now();
                let ns = now.duration_since(self.last).as_nanos() as u64;
                h.saturating_record(ns);
                self.last = now;
                ns
            }
            None => 0,
        }
    }

    /// The outcome of meters that ran concurrently (one per thread): the time is the slowest
    /// thread's, so `micros_per_op` is wall time per operation over all threads (db_bench's
    /// merged statistics); the latency histograms are added.
    pub(super) fn combine(meters: Vec<Meter>, name: &str, ops: u64, bytes: u64) -> Outcome {
        let mut seconds = 0.0f64;
        let mut hist: Option<Histogram<u64>> = None;
        for m in meters {
            let own = m.start.elapsed().saturating_sub(m.excluded).as_secs_f64();
            seconds = seconds.max(own);
            hist = match (hist, m.hist) {
                (Some(mut a), Some(b)) => {
                    // Same bounds, so adding cannot fail; if it did, keep what we have.
                    let _ = a.add(&b);
                    Some(a)
                }
                (a, b) => a.or(b),
            };
        }
        Outcome {
            name: name.to_string(),
            ops,
            seconds,
            bytes,
            found: None,
            write_amplification: None,
            latency_ns: hist,
            extra: Vec::new(),
            stats: None,
        }
    }

    /// Runs harness work `f` (e.g. materializing the next keys) outside the measured time:
    /// neither the total nor the next operation's latency includes it.
    pub(super) fn exclude<T>(&mut self, f: impl FnOnce() -> T) -> T {
        let started = Instant::now();
        let out = f();
        let now = Instant::now();
        self.excluded += now.duration_since(started);
        self.last = now;
        out
    }

    pub(super) fn finish(self, name: &str, ops: u64, bytes: u64) -> Outcome {
        Meter::combine(vec![self], name, ops, bytes)
    }
}

/// The keys of the next lookups, materialized together outside the timed region: fetching a
/// key of a large key set is a cache miss that costs a tenth of a lookup, and is the
/// harness's work, not the engine's.
#[derive(Default)]
struct KeyBatch {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl KeyBatch {
    /// Keys per batch.
    const LEN: u64 = 1024;

    fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
    }

    fn push(&mut self, key: &[u8]) {
        self.bytes.extend_from_slice(key);
        self.ends.push(self.bytes.len());
    }

    fn iter(&self) -> impl Iterator<Item = &[u8]> {
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        starts
            .zip(&self.ends)
            .map(|(start, &end)| self.bytes.get(start..end).unwrap_or_default())
    }
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
        let values = ValueGen::new(p.seed, p.value_size);
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
        }
    }

    fn db(&mut self) -> Result<&dyn BenchEngine, BenchError> {
        if self.db.is_none() {
            let mut o = self.opts.clone();
            o.create_if_missing = !self.p.use_existing_db;
            let settings = engine::OpenSettings {
                sync: self.p.sync,
                cache_bytes: self.p.cache_bytes,
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
        let outcome = self.measure(name, &mut rng);
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
        if WRITES.contains(&name) {
            self.space_amplification(&mut outcome)?;
        }
        if let Some(db) = self.db.as_deref() {
            outcome.stats = db.stats().map(|s| crate::stats_view::stats_json(&s));
        }
        // Process CPU time over the benchmark (all threads: background work counts too) and
        // peak RSS so far; absent where /proc is not available.
        if let (Some(before), Some(after)) = (cpu_before, super::process::cpu_seconds()) {
            outcome.extra.push(("cpu_s", json!(after - before)));
        }
        if let Some(bytes) = super::process::peak_rss_bytes() {
            outcome
                .extra
                .push(("peak_rss_mb", json!(bytes as f64 / (1 << 20) as f64)));
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
            // db_bench's readmissing: one more byte of key, never present (sources.rs).
            "readmissing" => self.read_random(name, rng, true)?,
            "train" => train(name, &self.p, &self.opts)?,
            "seekrandom" => self.seek_random(name, rng)?,
            "scanparallel" => self.scan_parallel(name, rng)?,
            "readseq" => self.read_seq(name, false)?,
            "readreverse" => self.read_seq(name, true)?,
            "flush" | "compact" | "waitforcompaction" => self.maintenance(name)?,
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

    /// Appends the database's space use after a write benchmark: bytes of every file under
    /// the directory (`db_bytes`), key + value bytes of the live entries (`live_bytes`, from
    /// a full scan, outside the timed region) and their ratio (`space_amplification`).
    fn space_amplification(&mut self, out: &mut Outcome) -> Result<(), BenchError> {
        let db_bytes = dir_bytes(&self.dir)?;
        let mut live = 0u64;
        self.db()?.scan_all(usize::MAX, false, &mut |b| live += b)?;
        out.extra.push(("db_bytes", json!(db_bytes)));
        out.extra.push(("live_bytes", json!(live)));
        if live > 0 {
            out.extra
                .push(("space_amplification", json!(db_bytes as f64 / live as f64)));
        }
        Ok(())
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
        let r = ycsb::Run {
            name,
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

    /// `num` puts or deletes of keys in order or random.
    fn write(
        &mut self,
        name: &str,
        rng: &mut StdRng,
        op: Op,
        order: Order,
    ) -> Result<Outcome, BenchError> {
        let Params {
            num,
            key_size,
            value_size,
            ..
        } = self.p;
        let record = self.record;
        let keys = Arc::clone(&self.p.keys);
        let shuffled = match order {
            Order::Shuffled => {
                let mut v: Vec<u64> = (0..num).collect();
                v.shuffle(rng);
                v
            }
            _ => Vec::new(),
        };
        let threads = self.p.threads.max(1);
        let value_seed = self.p.seed.wrapping_add(self.runs << 16);
        let db = self.db()?;
        let before = db.stats();
        // Thread t writes positions [t·num/T, (t+1)·num/T) of the order: every key once for
        // the sequential and shuffled orders, num/T uniform draws each for random writes.
        let writes = |t: usize, rng: &mut StdRng| {
            let (lo, hi) = chunk(num, threads, t);
            let mut values = ValueGen::new(value_seed.wrapping_add(t as u64), value_size);
            let mut key = Vec::with_capacity(key_size);
            let mut bytes = 0u64;
            let mut meter = Meter::new(record);
            for i in lo..hi {
                let n = match order {
                    Order::Sequential => i,
                    Order::Drawn => rng.gen_range(0..num),
                    Order::Shuffled => shuffled.get(i as usize).copied().unwrap_or(i),
                };
                keys.key(n, key_size, &mut key);
                match op {
                    Op::Put => {
                        db.put(&key, values.next(value_size))?;
                        bytes += (key.len() + value_size) as u64;
                    }
                    Op::Delete => db.delete(&key)?,
                }
                meter.op_done();
            }
            Ok((meter, bytes))
        };
        let results = in_threads(threads, rng, writes)?;
        let bytes = results.iter().map(|r| r.1).sum();
        let mut out = Meter::combine(results.into_iter().map(|r| r.0).collect(), name, num, bytes);
        let after = db.stats();
        out.write_amplification = amplification(before.as_ref(), after.as_ref());
        out.extra = background_work(before.as_ref(), after.as_ref());
        if threads > 1 {
            out.extra.push(("threads", json!(threads)));
        }
        Ok(out)
    }

    /// `reads` gets of random keys of the set, or of missing keys next to them.
    fn read_random(
        &mut self,
        name: &str,
        rng: &mut StdRng,
        missing: bool,
    ) -> Result<Outcome, BenchError> {
        let Params {
            num,
            reads,
            key_size,
            ..
        } = self.p;
        let record = self.record;
        let threads = self.p.threads.max(1);
        let keys = Arc::clone(&self.p.keys);
        let (db, _) = self.parts()?;
        let lookups = |rng: &mut StdRng| {
            let mut meter = Meter::new(record);
            let mut key = Vec::with_capacity(key_size + 1);
            let mut batch = KeyBatch::default();
            let (mut found, mut bytes, mut done) = (0u64, 0u64, 0u64);
            while done < reads {
                let count = (reads - done).min(KeyBatch::LEN);
                meter.exclude(|| {
                    batch.clear();
                    for _ in 0..count {
                        let n = rng.gen_range(0..num);
                        if missing {
                            keys.missing(n, key_size, &mut key);
                        } else {
                            keys.key(n, key_size, &mut key);
                        }
                        batch.push(&key);
                    }
                });
                for key in batch.iter() {
                    if let Some(v) = db.get(key)? {
                        found += 1;
                        bytes += (key.len() + v.len()) as u64;
                    }
                    meter.op_done();
                }
                done += count;
            }
            Ok::<_, BenchError>((meter, found, bytes))
        };
        let results = in_threads(threads, rng, |_, rng| lookups(rng))?;
        let ops = reads * threads as u64;
        let found: u64 = results.iter().map(|r| r.1).sum();
        let bytes: u64 = results.iter().map(|r| r.2).sum();
        let meters = results.into_iter().map(|r| r.0).collect();
        let mut out = Meter::combine(meters, name, ops, bytes);
        out.found = Some((found, ops));
        if threads > 1 {
            out.extra.push(("threads", json!(threads)));
        }
        Ok(out)
    }

    /// db_bench's readrandomwriterandom: `reads` operations on random keys of the set, each a
    /// get with probability `readwritepercent`% and otherwise a put of a new value (Bourbon
    /// Figure 13's mixed workloads). Reports, besides the foreground time, what the engine
    /// spent learning meanwhile and the share of internal lookups on the model path.
    fn read_write_random(&mut self, name: &str, rng: &mut StdRng) -> Result<Outcome, BenchError> {
        let Params {
            num,
            reads,
            key_size,
            value_size,
            readwritepercent,
            ..
        } = self.p;
        let record = self.record;
        let keys = Arc::clone(&self.p.keys);
        let (db, values) = self.parts()?;
        let before = db.stats();
        let mut key = Vec::with_capacity(key_size);
        let (mut found, mut gets, mut bytes) = (0u64, 0u64, 0u64);
        let mut meter = Meter::new(record);
        for _ in 0..reads {
            keys.key(rng.gen_range(0..num), key_size, &mut key);
            if rng.gen_range(0..100) < readwritepercent {
                gets += 1;
                if let Some(v) = db.get(&key)? {
                    found += 1;
                    bytes += (key.len() + v.len()) as u64;
                }
            } else {
                db.put(&key, values.next(value_size))?;
                bytes += (key.len() + value_size) as u64;
            }
            meter.op_done();
        }
        let mut out = meter.finish(name, reads, bytes);
        out.found = Some((found, gets));
        let after = db.stats();
        out.write_amplification = amplification(before.as_ref(), after.as_ref());
        let (Some(before), Some(after)) = (before, after) else {
            out.extra = vec![("readwritepercent", json!(readwritepercent))];
            return Ok(out);
        };
        // Learning = background/offline training plus training inside flush and compaction.
        let learned = |s: &augur::Stats| s.learning_ns_total + s.at_build_training_ns;
        let learning_ns = learned(&after).saturating_sub(learned(&before));
        let model = after
            .model_path_lookups
            .saturating_sub(before.model_path_lookups);
        let baseline = after
            .baseline_path_lookups
            .saturating_sub(before.baseline_path_lookups);
        let foreground_s = out.seconds;
        out.extra = vec![
            ("readwritepercent", json!(readwritepercent)),
            ("foreground_s", json!(foreground_s)),
            ("learning_s", json!(learning_ns as f64 / 1e9)),
            (
                "total_work_s",
                json!(foreground_s + learning_ns as f64 / 1e9),
            ),
            (
                "model_path_fraction",
                json!(model as f64 / (model + baseline).max(1) as f64),
            ),
        ];
        Ok(out)
    }

    /// `reads` seeks to random keys, reading the first entry at or after each and the
    /// `seek_nexts` entries after it (db_bench's `--seek_nexts`).
    fn seek_random(&mut self, name: &str, rng: &mut StdRng) -> Result<Outcome, BenchError> {
        let Params {
            num,
            reads,
            key_size,
            seek_nexts,
            ..
        } = self.p;
        let record = self.record;
        let keys = Arc::clone(&self.p.keys);
        let (db, _) = self.parts()?;
        let mut key = Vec::with_capacity(key_size);
        let (mut found, mut entries, mut bytes) = (0u64, 0u64, 0u64);
        let mut meter = Meter::new(record);
        for _ in 0..reads {
            keys.key(rng.gen_range(0..num), key_size, &mut key);
            let (n, b) = db.scan_from(&key, 1 + seek_nexts)?;
            found += u64::from(n > 0);
            entries += n;
            bytes += b;
            meter.op_done();
        }
        let mut out = meter.finish(name, reads, bytes);
        out.found = Some((found, reads));
        out.extra.push(("seek_nexts", json!(seek_nexts)));
        out.extra.push(("entries_read", json!(entries)));
        Ok(out)
    }

    /// Iterates over up to `reads` entries, forward or backward.
    fn read_seq(&mut self, name: &str, reverse: bool) -> Result<Outcome, BenchError> {
        let n = usize::try_from(self.p.reads).unwrap_or(usize::MAX);
        let record = self.record;
        let db = self.db()?;
        let mut meter = Meter::new(record);
        let (mut ops, mut bytes) = (0u64, 0u64);
        db.scan_all(n, reverse, &mut |b| {
            ops += 1;
            bytes += b;
            meter.op_done();
        })?;
        Ok(meter.finish(name, ops, bytes))
    }

    /// One flush or full compaction, timed as one operation.
    fn maintenance(&mut self, name: &str) -> Result<Outcome, BenchError> {
        let record = self.record;
        let (db, _) = self.parts()?;
        let before = db.stats();
        let mut meter = Meter::new(record);
        match name {
            "flush" => db.flush()?,
            "waitforcompaction" => db.wait_for_compactions()?,
            _ => db.compact()?,
        }
        meter.op_done();
        let mut out = meter.finish(name, 1, 0);
        out.write_amplification = None;
        let after = db.stats();
        out.extra = background_work(before.as_ref(), after.as_ref());
        if let (Some(before), Some(after)) = (before, after) {
            out.bytes = written(&after).saturating_sub(written(&before));
        }
        Ok(out)
    }
}

/// Positions `[lo, hi)` of `num` that thread `t` of `threads` handles (contiguous chunks
/// differing in length by at most one).
fn chunk(num: u64, threads: usize, t: usize) -> (u64, u64) {
    let at = |i: usize| (u128::from(num) * i as u128 / threads.max(1) as u128) as u64;
    (at(t), at(t + 1))
}

/// Runs `work(t, rng)` for every thread `t` of `threads` and returns the results in thread
/// order. One thread runs on the caller's thread with the run's own generator (so a
/// single-threaded run draws exactly the stream it always did); more run on scoped threads,
/// each with a generator seeded from the run's.
fn in_threads<T: Send>(
    threads: usize,
    rng: &mut StdRng,
    work: impl Fn(usize, &mut StdRng) -> Result<T, BenchError> + Sync,
) -> Result<Vec<T>, BenchError> {
    if threads <= 1 {
        return Ok(vec![work(0, rng)?]);
    }
    let seeds: Vec<u64> = (0..threads).map(|_| rng.gen()).collect();
    let work = &work;
    std::thread::scope(|s| {
        let handles: Vec<_> = seeds
            .iter()
            .enumerate()
            .map(|(t, &seed)| s.spawn(move || work(t, &mut StdRng::seed_from_u64(seed))))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(BenchError::failed("a benchmark thread panicked")))
            })
            .collect()
    })
}

/// Flush and compaction time during a benchmark, and the part of it spent training at-build
/// models (the learned-index study's Figure 9), and the time background learners spent
/// training meanwhile (seconds; Augur only).
fn background_work(
    before: Option<&Stats>,
    after: Option<&Stats>,
) -> Vec<(&'static str, serde_json::Value)> {
    let (Some(b), Some(a)) = (before, after) else {
        return Vec::new();
    };
    let secs = |f: fn(&Stats) -> u64| json!(f(a).saturating_sub(f(b)) as f64 / 1e9);
    vec![
        ("flush_s", secs(|s| s.flush_ns)),
        ("flush_training_s", secs(|s| s.flush_training_ns)),
        ("compaction_s", secs(|s| s.compaction_ns)),
        ("compaction_training_s", secs(|s| s.compaction_training_ns)),
        ("training_wait_s", secs(|s| s.at_build_training_wait_ns)),
        ("learning_s", secs(|s| s.learning_ns_total)),
    ]
}

/// A write benchmark's operation.
#[derive(Debug, Clone, Copy)]
enum Op {
    Put,
    Delete,
}

/// Which keys a write benchmark visits, in which order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Order {
    /// Every key once, ascending.
    Sequential,
    /// Every key once, in an order shuffled with the run's seed.
    Shuffled,
    /// `num` uniform draws with repeats (db_bench's random writes).
    Drawn,
}

/// The `train` benchmark: builds one index over the projected, sorted keys of the set, as the
/// engine's SSTable builder does for one file (projection excluded from the timing). The
/// build is repeated until it has run 5 times or for a second, and the mean is reported.
fn train(name: &str, p: &Params, o: &Options) -> Result<Outcome, BenchError> {
    let config = o.index_config();
    let n = p.keys.len();
    let (mut first, mut last, mut key) = (Vec::new(), Vec::new(), Vec::new());
    p.keys.key(0, p.key_size, &mut first);
    p.keys.key(n.saturating_sub(1), p.key_size, &mut last);
    let prefix = common_prefix_len(&first, &last);
    let projected: Vec<u64> = (0..n)
        .map(|i| {
            p.keys.key(i, p.key_size, &mut key);
            project(&key, prefix)
        })
        .collect();
    let start = Instant::now();
    let mut passes = 0u64;
    let mut built = None;
    while passes < 5 && (passes == 0 || start.elapsed().as_secs_f64() < 1.0) {
        let mut b = builder(&config);
        for &x in &projected {
            b.add(x)?;
        }
        built = Some(b.finish()?);
        passes += 1;
    }
    let seconds = start.elapsed().as_secs_f64() / passes as f64;
    let mut out = Outcome::new(name, n, seconds);
    if let Some(index) = built {
        let per_key = |v: f64| v / n.max(1) as f64;
        out.extra = vec![
            ("index", json!(index.kind().name())),
            ("error_bound", json!(config.error_bound)),
            ("train_ns_per_key", json!(per_key(seconds * 1e9))),
            ("segments", json!(index.segments())),
            (
                "keys_per_segment",
                json!(n as f64 / index.segments().max(1) as f64),
            ),
            ("model_bytes", json!(index.size_bytes())),
            (
                "model_bytes_per_key",
                json!(per_key(index.size_bytes() as f64)),
            ),
        ];
    }
    Ok(out)
}

/// Bytes written to files so far.
fn written(s: &Stats) -> u64 {
    s.wal_bytes_written
        + s.value_log_bytes_written
        + s.flush_bytes_written
        + s.compaction_bytes_written
}

/// Write amplification between two optional statistics snapshots (`None` for peers).
pub(super) fn amplification(before: Option<&Stats>, after: Option<&Stats>) -> Option<f64> {
    Some(write_amplification(before?, after?))
}

/// Write amplification between two statistics snapshots.
fn write_amplification(before: &Stats, after: &Stats) -> f64 {
    let user = after
        .user_bytes_written
        .saturating_sub(before.user_bytes_written);
    written(after).saturating_sub(written(before)) as f64 / user.max(1) as f64
}
