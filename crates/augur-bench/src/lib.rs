//! `augur bench`: a db_bench-style, single-threaded benchmark of the engine (the README's
//! main job). Flags use db_bench's names (`--benchmarks`, `--num`, `--reads`, `--key_size`,
//! `--value_size`, `--use_existing_db`, `--histogram`, `--bloom_bits`,
//! `--compression_type`, `--write_buffer_size`, `--seed`, `--sync`) so the same command line
//! can drive RocksDB's `db_bench`. Keys and values: see `keys.rs`; the
//! benchmarks: see `workloads.rs`; output: see `report.rs`.
//!
//! Unless `--value-separation-threshold` or `--use_existing_db` is given, every benchmark
//! list runs twice: once with values inline (no separation) and once with every value
//! separated into the value log (threshold 0, the Bourbon preset).
//!
//! Key sources (`--keys`, `--keys-text`, `--distribution` — u64 distributions and synthetic
//! string keys, `--distribution=strings` — `--load-order`): see `sources.rs`.
//!
//! Memory: `--cache_size`, `--use_direct_reads` and `--statistics` (db_bench's flags) give every
//! engine the same cache and read path, and the records report cache, pinned memory and RSS:
//! see `memory.rs`. `--read_distribution` picks the keys of the lookups (`workloads/reads.rs`).
//!
//! Compression: `--compression_type=none|snappy|lz4|zstd` (db_bench's flag and names) sets the
//! codec of every engine of the run: Augur's `Options::compression` (unless the engine flag
//! `--compression` is given, which wins), RocksDB's on every level, LevelDB's, fjall's. An
//! engine without the codec is refused with the ones it has (`EngineKind::codecs`), never
//! given another. Each record's `config.compression` says what its engine used.
//!
//! `--engine=rocksdb|leveldb|fjall` runs the same benchmarks on a peer (each behind the cargo
//! feature of its name; see `engine/mod.rs`), once. `--compare` runs Augur's baseline and
//! learned paths and every peer compiled in, and prints them side by side (`run_configs`).

pub mod engine;
pub mod error;
mod header;
mod keys;
pub mod memory;
mod process;
mod report;
pub mod sosd;
pub mod sources;
mod workloads;
pub mod ycsb;

use crate::error::io_err;
pub use crate::error::BenchError;
use clap::{ArgAction, Args, ValueEnum};
use engine::{Codec, EngineKind};
use serde_json::{json, Value};
use sources::{Distribution, KeySet, LoadOrder};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use workloads::{Params, Runner, NAMES};

// The stats view lives in the front ends' shared crate (augur-frontend); imported here, not
// re-exported, so that the workloads' `crate::stats_view` paths name it.
use augur_frontend::stats_view;

/// `--num` when neither it nor a key file says otherwise.
const DEFAULT_NUM: u64 = 200_000;

/// Benchmarks run when `--benchmarks` is not given. The flush makes the reads go to
/// SSTables: with the default 64 MiB memtable, 200,000 entries would otherwise all be read
/// from the memtable.
const DEFAULT_BENCHMARKS: &[&str] = &["fillrandom", "flush", "readrandom", "readseq", "stats"];

/// Benchmarks of `--compare` when `--benchmarks` is not given: a settled tree (full
/// compaction), then point lookups present and absent, seeks and a scan.
const COMPARE_BENCHMARKS: &[&str] = &[
    "fillrandom",
    "compact",
    "readrandom",
    "readmissing",
    "seekrandom",
    "readseq",
];

/// Parses a gflags-style boolean (`--flag`, `--flag=1`, `--flag=true`, `--flag=0`, ...).
fn parse_bool(s: &str) -> Result<bool, String> {
    match s {
        "1" | "true" | "yes" => Ok(true),
        "0" | "false" | "no" => Ok(false),
        _ => Err(format!("expected true/false or 1/0, got {s:?}")),
    }
}

/// Parses a fraction in `[0, 1]`.
fn parse_ops_fraction(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(f) if (0.0..=1.0).contains(&f) => Ok(f),
        _ => Err(format!("expected a fraction between 0 and 1, got {s:?}")),
    }
}

/// Parses a fraction in `(0, 1]`.
fn parse_data_fraction(s: &str) -> Result<f64, String> {
    match parse_ops_fraction(s) {
        Ok(f) if f > 0.0 => Ok(f),
        _ => Err(format!(
            "expected a fraction above 0 and at most 1, got {s:?}"
        )),
    }
}

/// Arguments of `bench` (db_bench names; hyphenated spellings are accepted too).
#[derive(Args, Debug)]
#[command(
    after_help = "Benchmarks: fillseq fillrandom overwrite readrandom readmissing readseq \
readreverse seekrandom deleteseq deleterandom flush compact waitforcompaction waitforlearning learn \
stats train ycsb-load ycsb-a ycsb-b ycsb-c ycsb-d ycsb-e ycsb-f ycsb-b-hot.\n\
YCSB: keys user<fnv64(n)>, or user<n zero-padded to 19 digits> with --insert-order=ordered \
(--key_size and key sources do not apply), ycsb-load inserts --num records (in record order, or \
shuffled with --load-order=random), ycsb-a..f run --reads operations (A 50/50 read/update, B 95/5 \
read/update, C read, D 95/5 read/insert latest, E 95/5 scan/insert, F 50/50 \
read/read-modify-write; zipfian unless noted or --request-distribution is given); ycsb-b-hot is \
B' of the lazy-learning study: 95/5 read/update, 90% of the operations on the first 1% of the \
records, zipfian within each part (--hotspot-data-fraction, --hotspot-ops-fraction).\n\
waitforlearning: waits until Augur's background learner has nothing pending.\n\
train: builds --index over the projected keys (no database) and reports ns/key, segments and \
bytes/key.\n\
Key sources: --keys=FILE (SOSD u64: 8 bytes big-endian + '0' padding to --key_size >= 8), \
--keys-text=FILE (one key per line, as-is), --distribution=NAME (synthetic u64, by --seed), \
--distribution=strings (synthetic printable string keys, not db_bench's: a shared prefix of \
--string-prefix-len bytes, then random bytes, total length uniform in [--string-min-len, \
--string-max-len], by --seed). With a source, --num defaults to all keys of a file (a smaller \
--num keeps evenly spaced keys), fills write each key once (fillseq ascending, fillrandom \
shuffled; --load-order overrides), reads draw source keys, and readmissing reads a source key plus \
one byte ('0', or 0x00 for text keys; string keys are text keys).\n\
Keys are db_bench's: the key number as 8 big-endian bytes, padded with ASCII '0' to --key_size. \
Values are random bytes (compressible with --compression_ratio).\n\
fillrandom/overwrite/readrandom draw key numbers uniformly from [0, num) with repeats, as db_bench.\n\
Write amplification of a fill = bytes written to WAL, value log and SSTables during the fill / \
user bytes, right after its last write (pending flushes and compactions not included).\n\
Without --value-separation-threshold the benchmarks run twice: values inline, then separated."
)]
pub struct BenchArgs {
    /// Comma-separated benchmarks, run in order (default fillrandom,flush,readrandom,readseq,stats).
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    pub benchmarks: Vec<String>,
    /// Number of key numbers (and of writes in fills); default 200000, or every key of
    /// --keys/--keys-text (a smaller value keeps evenly spaced keys of the file).
    #[arg(long)]
    pub num: Option<u64>,
    /// Keys from an SOSD binary file (little-endian u64 count, then the u64 keys).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["keys_text", "distribution"])]
    pub keys: Option<PathBuf>,
    /// Keys from a text file, one key per line, used as-is.
    #[arg(
        long = "keys-text",
        alias = "keys_text",
        value_name = "FILE",
        conflicts_with = "distribution"
    )]
    pub keys_text: Option<PathBuf>,
    /// Synthetic keys of this distribution (--num of them, deterministic by --seed): u64
    /// keys, or `strings`: printable string keys with a shared prefix (see --string-*-len).
    #[arg(long, value_enum)]
    pub distribution: Option<Distribution>,
    /// --distribution=strings: shortest key in bytes.
    #[arg(long = "string-min-len", alias = "string_min_len", value_name = "BYTES",
          default_value_t = sources::StringShape::DEFAULT.min_len)]
    pub string_min_len: usize,
    /// --distribution=strings: longest key in bytes.
    #[arg(long = "string-max-len", alias = "string_max_len", value_name = "BYTES",
          default_value_t = sources::StringShape::DEFAULT.max_len)]
    pub string_max_len: usize,
    /// --distribution=strings: bytes of the prefix every key shares (a key shorter than the
    /// prefix plus 8 bytes keeps 8 random bytes and shares only the prefix's start).
    #[arg(long = "string-prefix-len", alias = "string_prefix_len", value_name = "BYTES",
          default_value_t = sources::StringShape::DEFAULT.prefix_len)]
    pub string_prefix_len: usize,
    /// Write the keys of the text key source (--keys-text or --distribution=strings) to
    /// FILE, one per line in sorted order, and run no benchmark: the same keys can then be
    /// given to another build with --keys-text=FILE.
    #[arg(long = "dump-keys", alias = "dump_keys", value_name = "FILE")]
    pub dump_keys: Option<PathBuf>,
    /// Order in which fills write the keys of a source (default: fillseq sequential,
    /// fillrandom random), and in which ycsb-load inserts its records (default sequential:
    /// record order, as YCSB).
    #[arg(long = "load-order", alias = "load_order", value_enum)]
    pub load_order: Option<LoadOrder>,
    /// Number of reads (negative: --num); also the operations of readrandomwriterandom.
    #[arg(long, default_value_t = -1, allow_negative_numbers = true)]
    pub reads: i64,
    /// readrandomwriterandom: percentage of operations that are reads (db_bench's flag).
    #[arg(long, default_value_t = 90, value_parser = clap::value_parser!(u32).range(0..=100))]
    pub readwritepercent: u32,
    /// Key size in bytes.
    #[arg(long = "key_size", alias = "key-size", default_value_t = 16)]
    pub key_size: usize,
    /// Value size in bytes.
    #[arg(long = "value_size", alias = "value-size", default_value_t = 64)]
    pub value_size: usize,
    /// Make values compressible to about this fraction of their size, in (0, 1], generated
    /// exactly as db_bench's `--compression_ratio` (100-byte pieces each repeating a random
    /// printable fragment of ratio × 100 bytes). Without it values are random bytes.
    #[arg(long = "compression_ratio", alias = "compression-ratio", value_name = "R",
          value_parser = compression_ratio)]
    pub compression_ratio: Option<f64>,
    /// Write the results as a JSON array to FILE (or, without FILE, print it on stdout
    /// instead of the text report).
    #[arg(long, num_args = 0..=1, value_name = "FILE")]
    pub json: Option<Option<PathBuf>>,
    /// Reuse the database in --db; fills are skipped.
    #[arg(long = "use_existing_db", alias = "use-existing-db", action = ArgAction::Set,
          num_args = 0..=1, require_equals = true, default_value = "false",
          default_missing_value = "true", value_parser = parse_bool)]
    pub use_existing_db: bool,
    /// Record per-operation latencies and print p50/p99/p99.9/max.
    #[arg(long, action = ArgAction::Set, num_args = 0..=1, require_equals = true,
          default_value = "false", default_missing_value = "true", value_parser = parse_bool)]
    pub histogram: bool,
    /// Sync every write.
    #[arg(long, action = ArgAction::Set, num_args = 0..=1, require_equals = true,
          default_value = "false", default_missing_value = "true", value_parser = parse_bool)]
    pub sync: bool,
    /// Threads (db_bench's --threads): readrandom / readmissing run N readers, each doing
    /// --reads lookups; fills, overwrite and deletes split their --num writes among N
    /// writers (each key once for fillseq, deleteseq and key-source fills).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=256))]
    pub threads: u64,
    /// seekrandom: entries read after each seek (db_bench's flag).
    #[arg(long = "seek_nexts", alias = "seek-nexts", default_value_t = 0)]
    pub seek_nexts: usize,
    /// scanparallel: threads scanning each range (the caller's included).
    #[arg(long = "scan-threads", alias = "scan_threads", default_value_t = 2,
          value_parser = clap::value_parser!(u64).range(1..=256))]
    pub scan_threads: u64,
    /// scanparallel: how each range is cut into partitions: balanced (equal entry counts
    /// from the learned indexes) or keyspace (equal key intervals).
    #[arg(long = "scan-split", alias = "scan_split", default_value = "balanced",
          value_parser = parse_split)]
    pub scan_split: augur::Split,
    /// scanparallel: partitions per range (0: one per thread; more let early threads take
    /// more work).
    #[arg(long = "scan-partitions", alias = "scan_partitions", default_value_t = 0,
          value_parser = clap::value_parser!(u64).range(0..=4096))]
    pub scan_partitions: u64,
    /// scanparallel: source keys per range (the range from the i-th to the (i+N)-th key).
    #[arg(
        long = "scan-range-keys",
        alias = "scan_range_keys",
        default_value_t = 65536
    )]
    pub scan_range_keys: u64,
    /// --use_direct_reads, --cache_size, --statistics (see memory.rs).
    #[command(flatten)]
    pub memory: memory::MemoryArgs,
    /// Random seed; benchmark i of a run uses seed + i.
    #[arg(long, default_value_t = 301)]
    pub seed: u64,
    /// Memtable size in bytes (db_bench's name; overrides --memtable-mb).
    #[arg(
        long = "write_buffer_size",
        alias = "write-buffer-size",
        value_name = "BYTES"
    )]
    pub write_buffer_size: Option<usize>,
    /// Compression of every engine in the run (db_bench's flag): none, snappy, lz4 or zstd
    /// (zstd at the engine's default level, 3 for Augur and RocksDB). Augur: the engine flag
    /// --compression CODEC wins over this one when given. An engine without the codec is
    /// refused: Augur has none, lz4, zstd; RocksDB all four; LevelDB none, snappy; fjall
    /// none, lz4.
    #[arg(
        long = "compression_type",
        alias = "compression-type",
        value_enum,
        value_name = "CODEC",
        default_value_t = Codec::None
    )]
    pub compression_type: Codec,
    /// YCSB: request distribution of every ycsb-a..f workload (default: the workload's own).
    #[arg(
        long = "request-distribution",
        alias = "request_distribution",
        value_enum
    )]
    pub request_distribution: Option<ycsb::RequestDist>,
    /// YCSB: how record numbers become keys (YCSB's insertorder): hashed (user + FNV hash of
    /// the number, the default) or ordered (user + the number zero-padded to 19 digits, so
    /// a range of records is a range of keys).
    #[arg(
        long = "insert-order",
        alias = "insert_order",
        alias = "insertorder",
        value_enum,
        default_value_t = ycsb::KeyOrder::Hashed
    )]
    pub insert_order: ycsb::KeyOrder,
    /// Key chooser of readrandom, readmissing and seekrandom over the keys in sorted order
    /// (default: uniform, db_bench's): a --request-distribution value; hotspot sends
    /// --hotspot-ops-fraction of the lookups to the first --hotspot-data-fraction of the keys.
    #[arg(long = "read_distribution", alias = "read-distribution", value_enum)]
    pub read_distribution: Option<ycsb::RequestDist>,
    /// Hotspot distributions (YCSB's and --read_distribution's): fraction of the records in
    /// the hot set, in (0, 1] (default 0.2 for hotspot, 0.01 for hotspot-zipfian, ycsb-b-hot).
    #[arg(long = "hotspot-data-fraction", alias = "hotspot_data_fraction",
          alias = "hotspotdatafraction", value_parser = parse_data_fraction)]
    pub hotspot_data_fraction: Option<f64>,
    /// Hotspot distributions: fraction of the operations on the hot set, in [0, 1]
    /// (default 0.8 for hotspot, 0.9 for hotspot-zipfian and ycsb-b-hot).
    #[arg(long = "hotspot-ops-fraction", alias = "hotspot_ops_fraction",
          alias = "hotspot_opn_fraction", alias = "hotspotopnfraction",
          value_parser = parse_ops_fraction)]
    pub hotspot_ops_fraction: Option<f64>,
    /// YCSB workload E: scans read uniformly 1..=N entries.
    #[arg(long = "scan-length", alias = "scan_length", default_value_t = 100,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub scan_length: u64,
    /// Engine benchmarked (default augur). The peers rocksdb, leveldb and fjall need builds
    /// with the cargo feature of the same name; they run the same key and value streams with
    /// comparable settings (see engine/mod.rs).
    #[arg(long, value_enum)]
    pub engine: Option<EngineKind>,
    /// Run Augur's baseline path, its learned path and every peer compiled in on the same
    /// workload, and print a side-by-side table (see `run_configs`).
    #[arg(long)]
    pub compare: bool,
}

/// The engine settings of a run, given by the caller (the CLI's global engine flags).
#[derive(Debug, Clone)]
pub struct EngineSettings {
    /// Options every Augur database of the run is opened with (peers get comparable ones).
    pub options: augur::Options,
    /// `--value-separation-threshold` when given explicitly; without it a run covers values
    /// inline and separated.
    pub value_separation_threshold: Option<usize>,
    /// `--read-mode` and `--cache-mb` (in bytes) when given explicitly: checked against
    /// `--use_direct_reads` and `--cache_size` (`memory::resolve`).
    pub read_mode: Option<augur::ReadMode>,
    pub cache_bytes: Option<u64>,
}

/// One database configuration of a run: a label (the subdirectory and the JSON
/// `config.label`; empty for a single configuration), the engine and its options.
#[derive(Debug, Clone)]
struct RunConfig {
    label: String,
    engine: EngineKind,
    options: augur::Options,
}

/// The configurations a run covers.
///
/// - `--compare`: Augur on the baseline path (`--learning=never`) and on the learned path (the
///   chosen policy, at-build if none), then every peer compiled in — RocksDB and fjall with
///   values inline, and also with their key-value separation (`rocksdb-blobdb`, `fjall-kv`)
///   when the values reach the separation threshold; LevelDB — all with the same options, so
///   one run prints learned vs baseline and the peers side by side.
/// - `--engine=PEER`: that peer, values inline unless `--value-separation-threshold` is given
///   and the peer separates values.
/// - Augur: one configuration with `--value-separation-threshold` or `--use_existing_db`,
///   otherwise two: values inline and every value separated (the Bourbon preset).
fn run_configs(
    a: &BenchArgs,
    engine: &EngineSettings,
    base: &augur::Options,
) -> Result<Vec<RunConfig>, BenchError> {
    let config = |label: &str, kind: EngineKind, threshold: usize| {
        let mut options = base.clone();
        options.value_separation_threshold = threshold;
        RunConfig {
            label: label.to_string(),
            engine: kind,
            options,
        }
    };
    if a.compare {
        if let Some(kind) = a.engine {
            return Err(BenchError::failed(format!(
                "--compare runs Augur and every peer compiled in; it does not take --engine={}",
                kind.name()
            )));
        }
        let threshold = engine
            .value_separation_threshold
            .unwrap_or(base.value_separation_threshold);
        let mut baseline = config("augur-baseline", EngineKind::Augur, threshold);
        baseline.options.learning = augur::LearningPolicy::Never;
        let mut learned = config("augur-learned", EngineKind::Augur, threshold);
        if learned.options.learning == augur::LearningPolicy::Never {
            learned.options.learning = augur::LearningPolicy::AtBuild;
        }
        let mut out = vec![baseline, learned];
        let separated = a.value_size >= threshold;
        for kind in EngineKind::ALL
            .into_iter()
            .filter(|k| *k != EngineKind::Augur)
        {
            if !kind.is_built() {
                continue;
            }
            out.push(config(kind.name(), kind, usize::MAX));
            if kind.separates_values() && separated {
                let label = match kind {
                    EngineKind::Rocksdb => "rocksdb-blobdb",
                    _ => "fjall-kv",
                };
                out.push(config(label, kind, threshold));
            }
        }
        return Ok(out);
    }
    let kind = a.engine.unwrap_or_default();
    Ok(match engine.value_separation_threshold {
        Some(t) if kind.separates_values() => vec![config("", kind, t)],
        _ if kind != EngineKind::Augur => vec![config("", kind, usize::MAX)],
        Some(t) => vec![config("", kind, t)],
        None if a.use_existing_db => vec![config("", kind, base.value_separation_threshold)],
        None => vec![
            config("inline", kind, usize::MAX),
            config("separated", kind, 0),
        ],
    })
}

/// A temporary directory removed on drop.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn temp_dir() -> Result<TempDir, BenchError> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let dir = std::env::temp_dir().join(format!("augur-bench-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(io_err(format!("creating {}", dir.display())))?;
    Ok(TempDir(dir))
}

/// Runs `augur bench`. `json_stdout` is the top-level `--json`.
pub fn run(
    a: &BenchArgs,
    engine: &EngineSettings,
    db: Option<&Path>,
    json_stdout: bool,
) -> Result<(), BenchError> {
    let names = benchmark_names(a)?;
    let keys = checked_keys(a, db)?;
    if let Some(file) = &a.dump_keys {
        return dump_keys(&keys, file);
    }
    let source = source_name(a);
    let mut base_opts = engine.options.clone();
    if let Some(b) = a.write_buffer_size {
        base_opts.memtable_size_bytes = b;
    }
    let memory = memory::resolve(
        &a.memory,
        engine.read_mode,
        engine.cache_bytes,
        &mut base_opts,
    )?;
    base_opts.validate()?;
    let p = params(a, keys, &memory);
    let mut configs = run_configs(a, engine, &base_opts)?;
    memory::check_engines(configs.iter().map(|c| c.engine), &memory)?;
    let explicit = engine.options.compression != augur::Compression::None
        || compression_flag_given(std::env::args_os());
    apply_compression(&mut configs, a.compression_type, explicit)?;
    let (_temp, base) = base_dir(db)?;
    // JSON goes to stdout with the top-level --json or a bare `bench --json`; the text
    // report is printed otherwise (also beside a JSON file).
    let json_to_stdout = json_stdout || matches!(&a.json, Some(None));
    let plan = Plan {
        string_shape: (a.distribution == Some(Distribution::Strings)).then(|| string_shape(a)),
        record: p.histogram || a.json.is_some() || json_stdout,
        names,
        p,
        source,
        print_text: !json_to_stdout,
    };
    let mut records: Vec<Value> = Vec::new();
    if plan.print_text && configs.len() > 1 {
        let labels: Vec<&str> = configs.iter().map(|c| c.label.as_str()).collect();
        let both = !a.compare && engine.value_separation_threshold.is_none();
        header::print_plan(&labels, &base, both);
    }
    for config in configs.iter().cloned() {
        records.extend(plan.run_config(config, &base)?);
    }
    if plan.print_text && configs.len() > 1 {
        if let Some(table) = report::summary_table(&records) {
            println!("{table}");
        }
    }
    write_records(a, records, json_to_stdout)
}

/// The benchmarks to run, in order: `--benchmarks` (trimmed, empty names dropped) or the
/// default list (of `--compare` or not).
///
/// # Errors
/// A name that is not a known benchmark.
fn benchmark_names(a: &BenchArgs) -> Result<Vec<String>, BenchError> {
    let names: Vec<String> = if a.benchmarks.is_empty() {
        let default = if a.compare {
            COMPARE_BENCHMARKS
        } else {
            DEFAULT_BENCHMARKS
        };
        default.iter().map(|s| s.to_string()).collect()
    } else {
        a.benchmarks
            .iter()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect()
    };
    if let Some(bad) = names.iter().find(|n| !NAMES.contains(&n.as_str())) {
        return Err(BenchError::failed(format!(
            "unknown benchmark {bad:?} (known: {})",
            NAMES.join(", ")
        )));
    }
    Ok(names)
}

/// Checks the flags that shape the keys and the database, and reads the key source.
///
/// # Errors
/// `--num=0`, `--key_size=0`, an engine not compiled in, a key source that fails to load or
/// holds no key, `--use_existing_db` without `--db`; in that order, the first one found.
/// (Codecs are checked per engine by `apply_compression`.)
fn checked_keys(a: &BenchArgs, db: Option<&Path>) -> Result<KeySet, BenchError> {
    if a.num == Some(0) {
        return Err(BenchError::failed("--num must be at least 1"));
    }
    if a.key_size == 0 {
        return Err(BenchError::failed(
            "--key_size must be at least 1 (empty keys are not allowed)",
        ));
    }
    if let Some(kind) = a.engine {
        kind.check_available()?;
    }
    let keys = key_set(a)?;
    if keys.is_empty() {
        return Err(BenchError::failed("the key source holds no key"));
    }
    if a.use_existing_db && db.is_none() {
        return Err(BenchError::failed("--use_existing_db needs --db DIR"));
    }
    Ok(keys)
}

/// Whether the engine flag `--compression` (not `--compression_type` or
/// `--compression_ratio`) is among the command-line arguments `args` (the program name
/// first; nothing after `--` counts). `EngineSettings` carries the resulting `Options` only,
/// where `--compression none` looks like no flag at all.
fn compression_flag_given(args: impl IntoIterator<Item = OsString>) -> bool {
    args.into_iter().skip(1).take_while(|a| a != "--").any(|a| {
        let a = a.to_string_lossy();
        a == "--compression" || a.starts_with("--compression=")
    })
}

/// Sets the codec of every configuration from `--compression_type` (`codec`): Augur's
/// `Options::compression` — unless `explicit` (the engine flag `--compression` was given:
/// it wins and Augur keeps its options) — and the peers' (`Params::codec`, checked here).
///
/// # Errors
/// An engine of the run without the codec (`EngineKind::check_codec`).
fn apply_compression(
    configs: &mut [RunConfig],
    codec: Codec,
    explicit: bool,
) -> Result<(), BenchError> {
    for c in configs.iter_mut() {
        if c.engine != EngineKind::Augur {
            c.engine.check_codec(codec)?;
        } else if !explicit {
            EngineKind::Augur.check_codec(codec)?;
            c.options.compression = codec.to_augur().unwrap_or_default();
        }
    }
    Ok(())
}

/// Writes the keys of a text key set to `file`, one per line (`--dump-keys`).
///
/// # Errors
/// A key set that is not text (db_bench numbers or u64 keys), or a key holding a newline
/// (it would not read back as one line); a failed write.
fn dump_keys(keys: &KeySet, file: &Path) -> Result<(), BenchError> {
    let KeySet::Text(list) = keys else {
        return Err(BenchError::failed(
            "--dump-keys writes text keys only (--keys-text or --distribution=strings)",
        ));
    };
    let mut out = Vec::with_capacity(list.iter().map(|k| k.len() + 1).sum());
    for k in list {
        if k.contains(&b'\n') {
            return Err(BenchError::failed(
                "--dump-keys: a key holds a newline and cannot be written one per line",
            ));
        }
        out.extend_from_slice(k);
        out.push(b'\n');
    }
    std::fs::write(file, out).map_err(io_err(format!("writing {}", file.display())))
}

/// Parses `--compression_ratio`: a number in (0, 1].
fn compression_ratio(text: &str) -> Result<f64, String> {
    let r: f64 = text
        .parse()
        .map_err(|_| format!("not a number: {text:?}"))?;
    if r > 0.0 && r <= 1.0 {
        Ok(r)
    } else {
        Err(format!("must be in (0, 1], got {text}"))
    }
}

/// The workloads' parameters from the flags, over `keys` (`--num` is their count).
fn params(a: &BenchArgs, keys: KeySet, m: &memory::MemorySettings) -> Params {
    let num = keys.len();
    Params {
        num,
        reads: u64::try_from(a.reads).unwrap_or(num),
        readwritepercent: a.readwritepercent,
        key_size: a.key_size,
        value_size: a.value_size,
        compression_ratio: a.compression_ratio,
        codec: a.compression_type,
        sync: a.sync,
        seed: a.seed,
        histogram: a.histogram,
        use_existing_db: a.use_existing_db,
        cache_bytes: m.cache_bytes,
        direct_reads: m.direct_reads,
        statistics: m.statistics,
        read_distribution: a.read_distribution,
        seek_nexts: a.seek_nexts,
        parallel_scan: workloads::ParallelScanParams {
            threads: usize::try_from(a.scan_threads).unwrap_or(2),
            split: a.scan_split,
            partitions: usize::try_from(a.scan_partitions).unwrap_or(0),
            range_keys: a.scan_range_keys,
        },
        threads: usize::try_from(a.threads).unwrap_or(1),
        keys: Arc::new(keys),
        load_order: a.load_order,
        ycsb: ycsb::YcsbParams {
            distribution: a.request_distribution,
            scan_length: a.scan_length,
            insert_order: a.insert_order,
            shuffled_load: a.load_order == Some(LoadOrder::Random),
            hot_data_fraction: a.hotspot_data_fraction,
            hot_ops_fraction: a.hotspot_ops_fraction,
        },
    }
}

/// The directory the configurations run in: `--db`, or a temporary directory (returned too,
/// so that it lives as long as the run and is removed after it).
fn base_dir(db: Option<&Path>) -> Result<(Option<TempDir>, PathBuf), BenchError> {
    Ok(match db {
        Some(d) => (None, d.to_path_buf()),
        None => {
            let t = temp_dir()?;
            let path = t.0.clone();
            (Some(t), path)
        }
    })
}

/// What every configuration of a run shares: the benchmarks and their parameters, the key
/// source, and what is reported.
struct Plan {
    names: Vec<String>,
    p: Params,
    /// The key source as the records name it (`source_name`).
    source: String,
    /// The shape of `--distribution=strings` keys (the records' `config.string_shape`).
    string_shape: Option<sources::StringShape>,
    /// Print the text report (off when the JSON goes to stdout).
    print_text: bool,
    /// Keep what the records and histograms need.
    record: bool,
}

impl Plan {
    /// Runs every benchmark on configuration `c`, in `base` (or its subdirectory named by the
    /// label), printing the header and a line per benchmark unless the JSON goes to stdout.
    /// Returns one JSON record per benchmark run.
    fn run_config(&self, c: RunConfig, base: &Path) -> Result<Vec<Value>, BenchError> {
        let RunConfig {
            label,
            engine: kind,
            options: opts,
        } = c;
        let p = &self.p;
        let dir = if label.is_empty() {
            base.to_path_buf()
        } else {
            base.join(&label)
        };
        let mut config = config_json(&label, p, &opts, &self.source);
        config["engine"] = json!(kind.name());
        config["compression"] = json!(compression_name(kind, &opts, p.codec));
        config["use_direct_reads"] = json!(memory::reads_direct(kind, &opts, p.direct_reads));
        if let Some(s) = &self.string_shape {
            config["string_shape"] = json!({"min_len": s.min_len, "max_len": s.max_len,
                                            "prefix_len": s.prefix_len});
        }
        if self.print_text {
            let compression = compression_name(kind, &opts, p.codec);
            header::print_header(kind, &label, p, &opts, &dir, &self.source, &compression);
        }
        // Each configuration's records report its own peak RSS.
        process::reset_peak_rss();
        let mut runner = Runner::new(dir, opts, p.clone(), kind, self.record, !self.print_text);
        let mut records = Vec::new();
        for name in &self.names {
            let Some(outcome) = runner.run(name)? else {
                continue;
            };
            if self.print_text {
                println!("{}", outcome.line());
                if p.histogram || name.starts_with("ycsb-") {
                    if let Some(h) = outcome.histogram_line() {
                        println!("{h}");
                    }
                }
            }
            records.push(outcome.to_json(kind.name(), &config));
        }
        if self.print_text {
            println!();
        }
        Ok(records)
    }
}

/// Writes the records as a JSON array: pretty-printed to the `--json` file if one is named,
/// and on one line to stdout if `to_stdout`.
fn write_records(a: &BenchArgs, records: Vec<Value>, to_stdout: bool) -> Result<(), BenchError> {
    let array = Value::Array(records);
    if let Some(Some(file)) = &a.json {
        let text =
            serde_json::to_string_pretty(&array).map_err(|e| BenchError::failed(e.to_string()))?;
        std::fs::write(file, text + "\n").map_err(io_err(format!("writing {}", file.display())))?;
    }
    if to_stdout {
        println!("{array}");
    }
    Ok(())
}

/// The keys of the run (see `sources.rs`).
fn key_set(a: &BenchArgs) -> Result<KeySet, BenchError> {
    let strings = a.distribution == Some(Distribution::Strings);
    let u64_keys = a.keys.is_some() || (a.distribution.is_some() && !strings);
    if u64_keys && a.key_size < 8 {
        return Err(BenchError::failed(format!(
            "--key_size={} is too small for u64 keys (at least 8)",
            a.key_size
        )));
    }
    let ycsb_load = a.benchmarks.iter().any(|b| b.trim() == "ycsb-load");
    if a.load_order.is_some() && !u64_keys && !strings && a.keys_text.is_none() && !ycsb_load {
        return Err(BenchError::failed(
            "--load-order needs a key source (--keys, --keys-text or --distribution) or ycsb-load",
        ));
    }
    Ok(if let Some(f) = &a.keys {
        KeySet::U64(sources::cap(sources::load_sosd(f)?, a.num))
    } else if let Some(f) = &a.keys_text {
        KeySet::Text(sources::cap(sources::load_text(f)?, a.num))
    } else if strings {
        KeySet::Text(sources::strings(
            &string_shape(a),
            a.num.unwrap_or(DEFAULT_NUM),
            a.seed,
        )?)
    } else if let Some(d) = a.distribution {
        KeySet::U64(sources::generate(d, a.num.unwrap_or(DEFAULT_NUM), a.seed))
    } else {
        KeySet::Numbers(a.num.unwrap_or(DEFAULT_NUM))
    })
}

/// The shape of `--distribution=strings` keys from the flags.
fn string_shape(a: &BenchArgs) -> sources::StringShape {
    sources::StringShape {
        min_len: a.string_min_len,
        max_len: a.string_max_len,
        prefix_len: a.string_prefix_len,
    }
}

/// How the key source is named in reports.
fn source_name(a: &BenchArgs) -> String {
    if let Some(f) = &a.keys {
        format!("sosd:{}", f.display())
    } else if let Some(f) = &a.keys_text {
        format!("text:{}", f.display())
    } else if let Some(d) = a.distribution {
        format!(
            "distribution:{}",
            d.to_possible_value()
                .map_or("?".into(), |v| v.get_name().to_string())
        )
    } else {
        "db_bench".to_string()
    }
}

/// The codec `kind` runs with, as the record's `config.compression` shows it: Augur's
/// `Options::compression` (`none`, `lz4`, `zstd:LEVEL`), a peer's `--compression_type`.
fn compression_name(kind: EngineKind, o: &augur::Options, codec: Codec) -> String {
    if kind == EngineKind::Augur {
        o.compression.to_string()
    } else {
        codec.name().to_string()
    }
}

fn threshold_json(t: usize) -> Value {
    if t == usize::MAX {
        Value::Null
    } else {
        json!(t)
    }
}

fn config_json(label: &str, p: &Params, o: &augur::Options, source: &str) -> Value {
    json!({
        "label": label,
        "key_source": source,
        "load_order": p.load_order.map(|l| format!("{l:?}").to_lowercase()),
        "index": o.index.name(),
        "learning": o.learning.name(),
        "error_bound": o.error_bound,
        "num": p.num,
        "reads": p.reads,
        "key_size": p.key_size,
        "value_size": p.value_size,
        "compression_ratio": p.compression_ratio,
        "slot_head_bytes": o.slot_head_bytes,
        "value_separation_threshold": threshold_json(o.value_separation_threshold),
        "read_mode": format!("{:?}", o.read_mode).to_lowercase(),
        "memtable_size_bytes": o.memtable_size_bytes,
        "bloom_bits_per_key": o.bloom_bits_per_key,
        "sync": p.sync,
        "seed": p.seed,
        "use_existing_db": p.use_existing_db,
        "request_distribution": p.ycsb.distribution.map(ycsb::RequestDist::name),
        "insert_order": p.ycsb.insert_order.name(),
        "hotspot_data_fraction": p.ycsb.hot_data_fraction,
        "hotspot_ops_fraction": p.ycsb.hot_ops_fraction,
        "learning_wait_ms": o.learning_wait_ms,
        "lazy_learning_reads": o.lazy_learning_reads,
        "lazy_learning_reads_per_key": o.lazy_learning_reads_per_key,
        "target_file_size_bytes": o.target_file_size_bytes,
        "scan_length": p.ycsb.scan_length,
        "seek_nexts": p.seek_nexts,
        "scan_threads": p.parallel_scan.threads,
        "scan_split": p.parallel_scan.split.name(),
        "scan_partitions": p.parallel_scan.partitions,
        "scan_range_keys": p.parallel_scan.range_keys,
        "cache_bytes": p.cache_bytes,
        "statistics": p.statistics,
        "read_distribution": p.read_distribution.map(ycsb::RequestDist::name),
        "threads": p.threads,
        "version": env!("CARGO_PKG_VERSION"),
    })
}

fn parse_split(s: &str) -> Result<augur::Split, String> {
    augur::Split::from_name(s).ok_or_else(|| format!("unknown split `{s}` (keyspace or balanced)"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    /// `augur bench`'s arguments alone, as the CLI flattens them.
    #[derive(Parser, Debug)]
    struct Cli {
        #[command(flatten)]
        bench: BenchArgs,
    }

    fn args(flags: &[&str]) -> Result<BenchArgs, clap::Error> {
        Cli::try_parse_from(std::iter::once("bench").chain(flags.iter().copied())).map(|c| c.bench)
    }

    fn config(kind: EngineKind) -> RunConfig {
        RunConfig {
            label: kind.name().to_string(),
            engine: kind,
            options: augur::Options::default(),
        }
    }

    #[test]
    fn compression_type_takes_db_bench_names_and_defaults_to_none() {
        assert_eq!(args(&[]).unwrap().compression_type, Codec::None);
        for (flag, codec) in [
            ("--compression_type=none", Codec::None),
            ("--compression_type=snappy", Codec::Snappy),
            ("--compression_type=lz4", Codec::Lz4),
            ("--compression-type=zstd", Codec::Zstd),
        ] {
            assert_eq!(args(&[flag]).unwrap().compression_type, codec, "{flag}");
            assert_eq!(codec.name(), flag.rsplit('=').next().unwrap());
        }
        for bad in ["zlib", "zstd:3", "LZ4", ""] {
            assert!(
                args(&[&format!("--compression_type={bad}")]).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn the_engine_flag_compression_is_told_from_the_bench_flags() {
        let given = |a: &[&str]| {
            compression_flag_given(
                std::iter::once("augur")
                    .chain(a.iter().copied())
                    .map(OsString::from),
            )
        };
        assert!(given(&["--compression", "lz4", "bench"]));
        assert!(given(&["bench", "--compression=none"]));
        assert!(!given(&[
            "bench",
            "--compression_type=lz4",
            "--compression_ratio=0.5"
        ]));
        assert!(!given(&[
            "bench",
            "--compression-type",
            "lz4",
            "--compression-ratio",
            "0.5"
        ]));
        assert!(!given(&["bench", "--", "--compression=lz4"]));
        // The program name is not an argument.
        assert!(!compression_flag_given(
            ["--compression"].map(OsString::from)
        ));
    }

    #[test]
    fn compression_type_sets_augur_unless_the_engine_flag_wins() {
        let mut c = [config(EngineKind::Augur)];
        apply_compression(&mut c, Codec::Lz4, false).unwrap();
        assert_eq!(c[0].options.compression, augur::Compression::Lz4);
        apply_compression(&mut c, Codec::Zstd, false).unwrap();
        assert_eq!(c[0].options.compression, augur::Compression::Zstd(3));
        assert_eq!(
            compression_name(EngineKind::Augur, &c[0].options, Codec::Zstd),
            "zstd:3"
        );
        apply_compression(&mut c, Codec::None, false).unwrap();
        assert_eq!(c[0].options.compression, augur::Compression::None);
        // --compression given: Augur keeps its own codec, even for one it would refuse here.
        c[0].options.compression = augur::Compression::Zstd(7);
        apply_compression(&mut c, Codec::Lz4, true).unwrap();
        apply_compression(&mut c, Codec::Snappy, true).unwrap();
        assert_eq!(c[0].options.compression, augur::Compression::Zstd(7));
        // Otherwise a codec Augur does not have is refused, naming the ones it has.
        let e = apply_compression(&mut [config(EngineKind::Augur)], Codec::Snappy, false)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("augur has no snappy compression (it supports none, lz4, zstd)"),
            "{e}"
        );
    }

    #[test]
    fn peers_without_the_codec_are_refused_not_substituted() {
        let refused = |kind: EngineKind, codec: Codec| {
            apply_compression(&mut [config(kind)], codec, false)
                .err()
                .map(|e| e.to_string())
        };
        for codec in [Codec::None, Codec::Snappy, Codec::Lz4, Codec::Zstd] {
            assert_eq!(refused(EngineKind::Rocksdb, codec), None, "{codec:?}");
        }
        assert_eq!(refused(EngineKind::Leveldb, Codec::Snappy), None);
        assert_eq!(refused(EngineKind::Fjall, Codec::Lz4), None);
        let e = refused(EngineKind::Leveldb, Codec::Lz4).unwrap();
        assert!(
            e.contains("leveldb has no lz4 compression (it supports none, snappy)"),
            "{e}"
        );
        let e = refused(EngineKind::Leveldb, Codec::Zstd).unwrap();
        assert!(e.contains("leveldb has no zstd"), "{e}");
        let e = refused(EngineKind::Fjall, Codec::Zstd).unwrap();
        assert!(
            e.contains("fjall has no zstd compression (it supports none, lz4)"),
            "{e}"
        );
        assert!(refused(EngineKind::Fjall, Codec::Snappy).is_some());
        // One refusal fails the whole run, whatever the other configurations.
        let mut mixed = [config(EngineKind::Augur), config(EngineKind::Leveldb)];
        assert!(apply_compression(&mut mixed, Codec::Lz4, false).is_err());
        // Peers keep Augur's options; their codec travels in `Params::codec`.
        assert_eq!(
            compression_name(EngineKind::Rocksdb, &augur::Options::default(), Codec::Lz4),
            "lz4"
        );
    }

    #[test]
    fn strings_is_a_text_key_source_with_the_flags_shape() {
        let a = args(&[
            "--distribution=strings",
            "--num=500",
            "--string-min-len=20",
            "--string-max-len=30",
            "--string-prefix-len=10",
        ])
        .unwrap();
        let KeySet::Text(k) = key_set(&a).unwrap() else {
            panic!("not text keys");
        };
        assert_eq!(k.len(), 500);
        assert!(k
            .iter()
            .all(|x| (20..=30).contains(&x.len()) && x[..10] == k[0][..10]));
        assert_eq!(source_name(&a), "distribution:strings");
        let d = args(&["--distribution=strings"]).unwrap();
        assert_eq!(string_shape(&d), sources::StringShape::DEFAULT);
        // --key_size does not apply to string keys (no u64 minimum), --load-order does.
        let a = args(&[
            "--distribution=strings",
            "--num=50",
            "--key_size=4",
            "--load-order=sequential",
        ])
        .unwrap();
        assert_eq!(key_set(&a).unwrap().len(), 50);
        // --dump-keys writes them one per line, and --keys-text reads the same set back.
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("keys.txt");
        let keys = key_set(&a).unwrap();
        dump_keys(&keys, &file).unwrap();
        assert_eq!(KeySet::Text(sources::load_text(&file).unwrap()), keys);
        assert!(dump_keys(&KeySet::Numbers(3), &file).is_err());
    }
}
