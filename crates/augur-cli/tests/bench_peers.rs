//! End-to-end tests of `augur bench --engine`: without the cargo feature `rocksdb` the peer
//! is refused with a clear error; with it, a tiny fill + reads on RocksDB find what the fill
//! wrote, and on the same key stream RocksDB and Augur find the same number of keys.

mod common;

use common::augur;
#[cfg(feature = "rocksdb")]
use common::record;
use serde_json::Value;
#[cfg(feature = "rocksdb")]
use std::path::Path;

/// Runs a bench in `dir` on `engine` and returns the JSON records.
#[cfg(feature = "rocksdb")]
fn bench_json(dir: &Path, engine: &str, args: &[&str]) -> Vec<Value> {
    let engine_flag = format!("--engine={engine}");
    let mut all = vec![engine_flag.as_str()];
    all.extend_from_slice(args);
    common::bench_json(dir, &all)
}

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
    let o = augur(&["bench", "--engine=rocksdb", "--num=10"]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("feature `rocksdb`"), "stderr: {err}");
}

#[cfg(feature = "rocksdb")]
#[test]
fn rocksdb_fill_and_reads_find_what_was_written() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("rocks");
    let r = bench_json(
        &dir,
        "rocksdb",
        &[
            "--num=500",
            "--reads=200",
            "--benchmarks=fillseq,flush,readrandom,readmissing,seekrandom,readseq,stats",
        ],
    );
    for x in &r {
        assert_eq!(x["engine"], "rocksdb", "{x}");
    }
    assert_eq!(record(&r, "fillseq")["ops"], 500);
    assert_eq!(record(&r, "readrandom")["found"], 200);
    assert_eq!(record(&r, "readmissing")["found"], 0);
    assert_eq!(record(&r, "seekrandom")["found"], 200);
    // readseq reads up to --reads entries of the 500 present.
    assert_eq!(record(&r, "readseq")["ops"], 200);
    // A second fresh fill in the same directory deletes RocksDB's files and starts over.
    let again = bench_json(
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
    let rocks = bench_json(&tmp.path().join("rocks"), "rocksdb", &args);
    let ours = bench_json(&tmp.path().join("augur"), "augur", &args);
    let found = |r: &[Value]| record(r, "readrandom")["found"].as_u64().unwrap();
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
    let r = bench_json(
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
