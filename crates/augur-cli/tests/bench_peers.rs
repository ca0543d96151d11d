//! End-to-end tests of `augur bench --engine`: without the cargo feature `rocksdb` the peer
//! is refused with a clear error; with it, a tiny fill + reads on RocksDB find what the fill
//! wrote, and on the same key stream RocksDB and Augur find the same number of keys;
//! `--use_direct_reads`, `--cache_size` and `--statistics` reach RocksDB and its records carry
//! its block cache figures, hotspot reads find what Augur's find, and every benchmark runs on
//! text keys (YCSB's included) as on Augur.

mod common;

use common::augur;
#[cfg(feature = "rocksdb")]
use common::peers::{
    field, fillseq_reads_find_what_was_written, hotspot_reads_find_what_augur_finds,
    text_keys_find_what_augur_finds,
};
#[cfg(feature = "rocksdb")]
use common::{bench_json_on, bench_json_with, record};
use serde_json::Value;

#[test]
fn augur_engine_is_reported_in_json() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let json = tmp.path().join("out.json");
    let o = augur(&[
        "--db",
        dir.to_str().unwrap(),
        "bench",
        "--engine=augur",
        "--value-separation-threshold=0",
        "--num=100",
        "--benchmarks=fillseq,readrandom",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    for r in v.as_array().unwrap() {
        assert_eq!(r["engine"], "augur");
        assert_eq!(r["config"]["engine"], "augur");
    }
}

#[cfg(not(feature = "rocksdb"))]
#[test]
fn rocksdb_without_the_feature_is_a_clear_error() {
    common::peers::refused_without_feature(&[], "rocksdb", &[]);
}

#[cfg(feature = "rocksdb")]
#[test]
fn rocksdb_fill_and_reads_find_what_was_written() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("rocks");
    let r = fillseq_reads_find_what_was_written(
        &dir,
        "rocksdb",
        "fillseq,flush,readrandom,readmissing,seekrandom,readseq,stats",
    );
    for x in &r {
        assert_eq!(x["engine"], "rocksdb", "{x}");
    }
    // A second fresh fill in the same directory deletes RocksDB's files and starts over.
    let again = bench_json_on(
        &dir,
        "rocksdb",
        &["--num=50", "--benchmarks=fillseq,readseq"],
    );
    assert_eq!(record(&again, "readseq")["ops"], 50);
}

#[cfg(feature = "rocksdb")]
#[test]
fn rocksdb_and_augur_see_the_same_key_stream() {
    let tmp = tempfile::tempdir().unwrap();
    let args = [
        "--num=1000",
        "--reads=300",
        "--benchmarks=fillrandom,deleterandom,readrandom",
    ];
    let rocks = bench_json_on(&tmp.path().join("rocks"), "rocksdb", &args);
    let ours = bench_json_on(&tmp.path().join("augur"), "augur", &args);
    let found = |r: &[Value]| field(r, "readrandom", "found");
    // fillrandom draws with repeats and deleterandom removes some: neither 0 nor all.
    assert!(
        found(&rocks) > 0 && found(&rocks) < 300,
        "{}",
        found(&rocks)
    );
    assert_eq!(found(&rocks), found(&ours));
}

#[cfg(feature = "rocksdb")]
#[test]
fn rocksdb_runs_ycsb_load_and_workloads() {
    let tmp = tempfile::tempdir().unwrap();
    let r = bench_json_on(
        &tmp.path().join("rocks"),
        "rocksdb",
        &[
            "--num=300",
            "--reads=200",
            "--benchmarks=ycsb-load,ycsb-c,ycsb-e",
        ],
    );
    assert_eq!(record(&r, "ycsb-load")["ops"], 300);
    // Workload C only reads loaded records: every one is found.
    let c = record(&r, "ycsb-c");
    assert_eq!(c["found"], c["ops"]);
    assert_eq!(record(&r, "ycsb-e")["ops"], 200);
}

/// The harness's keys are db_bench's: a database written by RocksDB's own `db_bench`
/// (Debian package rocksdb-tools) is read by `augur bench --engine=rocksdb` with every
/// lookup found, and one written by the harness is read by `db_bench` likewise. Skipped (with
/// a message) where `db_bench` is not installed.
#[cfg(feature = "rocksdb")]
#[test]
fn db_bench_and_the_harness_share_the_key_encoding() {
    let db_bench = |args: &[&str]| std::process::Command::new("db_bench").args(args).output();
    if db_bench(&["--help"]).is_err() {
        eprintln!("db_bench is not installed (apt-get install rocksdb-tools); skipped");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("written-by-db-bench");
    let db_flag = format!("--db={}", dir.display());
    let common = [
        "--num=2000",
        "--key_size=16",
        "--value_size=64",
        "--compression_type=none",
    ];
    let mut args = vec!["--benchmarks=fillseq", db_flag.as_str()];
    args.extend_from_slice(&common);
    let out = db_bench(&args).unwrap();
    assert!(out.status.success(), "{out:?}");
    let recs = bench_json_on(
        &dir,
        "rocksdb",
        &[
            "--use_existing_db",
            "--num=2000",
            "--benchmarks=readrandom,readmissing,readseq",
        ],
    );
    assert_eq!(record(&recs, "readrandom")["found"], 2000);
    assert_eq!(record(&recs, "readmissing")["found"], 0);
    assert_eq!(record(&recs, "readseq")["ops"], 2000);

    let dir = tmp.path().join("written-by-harness");
    bench_json_on(&dir, "rocksdb", &["--num=2000", "--benchmarks=fillseq"]);
    let db_flag = format!("--db={}", dir.display());
    let mut args = vec![
        "--benchmarks=readrandom",
        "--use_existing_db=1",
        db_flag.as_str(),
    ];
    args.extend_from_slice(&common);
    let out = db_bench(&args).unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("(2000 of 2000 found)"), "{text}");
}

/// With a value-separation threshold RocksDB runs with BlobDB (values in `*.blob` files), as
/// Augur's go to its value log; `--compare` also runs it without BlobDB.
#[cfg(feature = "rocksdb")]
#[test]
fn rocksdb_separates_values_with_blobdb() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("blob");
    let recs = bench_json_on(
        &dir,
        "rocksdb",
        &["--num=3000", "--benchmarks=fillrandom,flush,readrandom"],
    );
    let blobs = std::fs::read_dir(&dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".blob")
        })
        .count();
    assert!(blobs > 0, "no blob file in {}", dir.display());
    assert!(record(&recs, "readrandom")["found"].as_u64().unwrap() > 1000);

    let cmp = tmp.path().join("compare");
    let json = tmp.path().join("compare.json");
    common::ok(augur(&[
        "--db",
        cmp.to_str().unwrap(),
        "bench",
        "--compare",
        "--value_size=100",
        "--value-separation-threshold=100",
        "--num=500",
        "--benchmarks=fillrandom",
        "--json",
        json.to_str().unwrap(),
    ]));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let labels: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["config"]["label"].as_str().unwrap())
        .collect();
    for l in [
        "augur-baseline",
        "augur-learned",
        "rocksdb",
        "rocksdb-blobdb",
    ] {
        assert!(labels.contains(&l), "{l} missing in {labels:?}");
    }
}

/// Direct reads through a block cache of `--cache_size` bytes, with index and filter blocks
/// held by the table readers (`pinned_bytes`); block cache hits and misses only with
/// `--statistics`. On `/var/tmp` when it exists: `O_DIRECT` needs a disk file system.
#[cfg(feature = "rocksdb")]
#[test]
fn rocksdb_reads_direct_through_a_block_cache_of_cache_size() {
    let tmp = if std::path::Path::new("/var/tmp").is_dir() {
        tempfile::tempdir_in("/var/tmp").unwrap()
    } else {
        tempfile::tempdir().unwrap()
    };
    let run = |dir: &str, statistics: &str| {
        bench_json_with(
            &tmp.path().join(dir),
            &[],
            "--value-separation-threshold=1024",
            &[
                "--engine=rocksdb",
                "--use_direct_reads=1",
                "--cache_size=1048576",
                statistics,
                "--num=20000",
                "--benchmarks=fillrandom,flush,readrandom",
            ],
        )
    };
    let r = run("stats", "--statistics=1");
    let read = record(&r, "readrandom");
    assert_eq!(read["config"]["use_direct_reads"], true, "{read}");
    assert_eq!(read["config"]["cache_bytes"], 1 << 20, "{read}");
    assert_eq!(read["config"]["statistics"], true, "{read}");
    assert_eq!(read["cache_capacity_bytes"], 1 << 20, "{read}");
    for f in ["cache_used_bytes", "cache_misses", "pinned_bytes"] {
        assert!(field(&r, "readrandom", f) > 0, "{f}: {read}");
    }
    assert!(
        read["cache_hits"].is_u64() && read["cache_hit_ratio"].is_f64(),
        "{read}"
    );
    // RocksDB counts no device reads; the budget is Augur's alone.
    assert!(read["device_reads"].is_null(), "{read}");
    assert!(read.get("memory_budget").is_none(), "{read}");
    assert!(read["benchmark_peak_rss_mb"].is_number(), "{read}");
    let r = run("nostats", "--statistics=0");
    let read = record(&r, "readrandom");
    assert!(
        read["cache_hits"].is_null() && read["cache_misses"].is_null(),
        "{read}"
    );
    assert!(field(&r, "readrandom", "cache_used_bytes") > 0, "{read}");
}

#[cfg(feature = "rocksdb")]
#[test]
fn rocksdb_hotspot_reads_find_what_augurs_find() {
    let tmp = tempfile::tempdir().unwrap();
    hotspot_reads_find_what_augur_finds(tmp.path(), "rocksdb");
}

#[cfg(feature = "rocksdb")]
#[test]
fn rocksdb_runs_every_benchmark_on_text_keys_like_augur() {
    let tmp = tempfile::tempdir().unwrap();
    text_keys_find_what_augur_finds(tmp.path(), "rocksdb");
}
