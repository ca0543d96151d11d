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
//! Key sources (`--keys`, `--keys-text`, `--distribution` — u64 distributions, and the text
//! keys `strings`, `composite` and `redis` — `--load-order`): see `sources.rs`; which flags
//! choose which keys, and their checks: `sources/select.rs`. db_bench's own keys, with its
//! `--prefix_size` and `--keys_per_prefix`: `keys.rs`. Every benchmark runs on every source,
//! YCSB's included (`ycsb/naming.rs`).
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

mod args;
mod config_record;
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
pub use args::BenchArgs;
use clap::{ArgAction, Args};
use config_record::{compression_name, config_json, level0_triggers_json};
pub use engine::L0Triggers;
use engine::{Codec, EngineKind};
use serde_json::{json, Value};
use sources::select::{dump_keys, key_set, source_name, string_shape};
use sources::{Distribution, KeySet, LoadOrder};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use workloads::{Params, Runner, NAMES};

// The stats view lives in the front ends' shared crate (augur-frontend); imported here, not
// re-exported, so that the workloads' `crate::stats_view` paths name it.
use augur_frontend::stats_view;

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
    /// db_bench's L0 trigger flags when given (already in `options` for Augur): RocksDB
    /// takes them too, LevelDB and fjall refuse them.
    pub l0_triggers: engine::L0Triggers,
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
    let p = params(a, keys, &memory, engine.l0_triggers);
    let mut configs = run_configs(a, engine, &base_opts)?;
    memory::check_engines(configs.iter().map(|c| c.engine), &memory)?;
    for c in &configs {
        c.engine.check_l0_triggers(&engine.l0_triggers)?;
    }
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
/// `--num=0`, `--key_size=0`, an engine not compiled in, flags that shape keys wrongly or a
/// key source that fails to load (`sources/select.rs`'s `key_set`), a source that holds no
/// key, `--use_existing_db` without `--db`; in that order, the first one found.
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
fn params(
    a: &BenchArgs,
    keys: KeySet,
    m: &memory::MemorySettings,
    l0_triggers: engine::L0Triggers,
) -> Params {
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
        l0_triggers,
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
            insert_order: a.insert_order.unwrap_or_default(),
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
        config["level0_triggers"] = level0_triggers_json(kind, &opts, &p.l0_triggers);
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
}
