//! End-to-end tests of the harness itself (crate augur-bench through `augur bench`): the JSON
//! schema of every benchmark, threaded writes, write and space amplification, seeks with
//! nexts, and `--compare` (Augur's baseline vs learned path side by side).

mod common;

use common::{augur, bench_json, fails, ok, record};
use serde_json::Value;

/// Every benchmark name the harness knows, in an order that runs on one database.
const EVERY_BENCHMARK: &str = "fillseq,fillrandom,overwrite,readrandom,readmissing,\
readrandomwriterandom,readseq,readreverse,seekrandom,flush,compact,waitforcompaction,learn,\
waitforlearning,train,deleterandom,deleteseq,stats,ycsb-load,ycsb-a,ycsb-b,ycsb-c,ycsb-d,ycsb-e,\
ycsb-f,ycsb-b-hot";

/// The keys every record carries, with their JSON types: the stable schema of issue 5.
fn assert_schema(r: &Value) {
    assert!(r["benchmark"].is_string(), "{r}");
    assert_eq!(r["engine"], "augur", "{r}");
    for key in ["ops", "seconds", "micros_per_op", "ops_per_sec"] {
        assert!(r[key].as_f64().is_some_and(|x| x >= 0.0), "{key} in {r}");
    }
    // Latency percentiles are numbers when recorded (--histogram); `train` times whole builds.
    if r["benchmark"] != "train" {
        for key in ["p50_us", "p99_us", "p999_us"] {
            assert!(r[key].is_number(), "{key} in {r}");
        }
        assert!(r["p50_us"].as_f64() <= r["p999_us"].as_f64(), "{r}");
    }
    assert!(r["config"].is_object(), "{r}");
    for key in [
        "num",
        "key_size",
        "value_size",
        "index",
        "learning",
        "label",
    ] {
        assert!(!r["config"][key].is_null(), "config.{key} in {r}");
    }
    if r["benchmark"] != "train" {
        assert!(r["stats"]["levels"].is_array(), "stats in {r}");
    }
}

#[test]
fn every_benchmark_runs_and_keeps_the_json_schema() {
    let t = tempfile::tempdir().unwrap();
    let recs = bench_json(
        &t.path().join("db"),
        &[
            &format!("--benchmarks={EVERY_BENCHMARK}"),
            "--num=400",
            "--reads=300",
            "--histogram",
            "--learning=offline",
        ],
    );
    let names: Vec<&str> = EVERY_BENCHMARK.split(',').collect();
    // `stats` prints tables instead of measuring.
    assert_eq!(recs.len(), names.len() - 1);
    for (r, name) in recs.iter().zip(names.iter().filter(|n| **n != "stats")) {
        assert_eq!(r["benchmark"], *name);
        assert_schema(r);
    }
}

/// `--threads=N` splits a fill's writes among N writers, each key once, and deletes likewise.
#[test]
fn threaded_writes_write_every_key_once() {
    let t = tempfile::tempdir().unwrap();
    let recs = bench_json(
        &t.path().join("db"),
        &[
            "--benchmarks=fillseq,readseq,deleteseq,readseq",
            "--num=10001",
            "--threads=3",
        ],
    );
    let fill = &recs[0];
    assert_eq!(fill["ops"], 10001);
    assert_eq!(fill["threads"], 3);
    assert_eq!(recs[1]["ops"], 10001, "every key once: {}", recs[1]);
    assert_eq!(recs[3]["ops"], 0, "every key deleted: {}", recs[3]);
}

/// Write records carry the write amplification measured from the process's write calls and
/// the space used after the write; a fill of distinct keys has exactly num × (key + value)
/// live bytes.
#[cfg(target_os = "linux")]
#[test]
fn writes_report_io_write_and_space_amplification() {
    let t = tempfile::tempdir().unwrap();
    let recs = bench_json(
        &t.path().join("db"),
        &["--benchmarks=fillseq,flush,readrandom", "--num=5000"],
    );
    let fill = record(&recs, "fillseq");
    assert_eq!(fill["live_bytes"], 5000 * (16 + 64), "{fill}");
    // Every value goes to the value log and every entry to the WAL: at least one write of
    // every user byte.
    let wa = fill["io_write_amplification"].as_f64().unwrap();
    assert!((1.0..10.0).contains(&wa), "{fill}");
    assert!(
        fill["io_bytes_written"].as_u64().unwrap() >= 5000 * 80,
        "{fill}"
    );
    let space = fill["space_amplification"].as_f64().unwrap();
    assert!(space >= 1.0, "{fill}");
    assert!(fill["db_bytes"].as_u64().unwrap() >= 5000 * 80, "{fill}");
    // Reads report no amplification.
    assert!(record(&recs, "readrandom")
        .get("space_amplification")
        .is_none());
}

/// `--seek_nexts=N`: each seek reads the entry found and up to N after it.
#[test]
fn seekrandom_reads_the_nexts() {
    let t = tempfile::tempdir().unwrap();
    let recs = bench_json(
        &t.path().join("db"),
        &[
            "--benchmarks=fillseq,seekrandom",
            "--num=1000",
            "--reads=500",
            "--seek_nexts=9",
        ],
    );
    let seek = record(&recs, "seekrandom");
    assert_eq!(seek["found"], 500, "every seek lands on a key: {seek}");
    assert_eq!(seek["seek_nexts"], 9);
    let entries = seek["entries_read"].as_u64().unwrap();
    // Ten entries per seek except for seeks among the last nine keys.
    assert!((4500..=5000).contains(&entries), "{seek}");
}

/// `--compare` runs Augur's baseline path and learned path on the same workload; both find
/// the same keys, only the learned one answers from models, and the text report ends with
/// the side-by-side summary.
#[test]
fn compare_runs_baseline_and_learned_side_by_side() {
    let t = tempfile::tempdir().unwrap();
    let recs = bench_json(
        &t.path().join("db"),
        &[
            "--compare",
            "--benchmarks=fillrandom,compact,readrandom",
            "--num=20000",
        ],
    );
    let by = |label: &str| {
        recs.iter()
            .find(|r| r["config"]["label"] == label && r["benchmark"] == "readrandom")
            .unwrap_or_else(|| panic!("no {label} readrandom in {recs:?}"))
    };
    let (base, learned) = (by("augur-baseline"), by("augur-learned"));
    assert_eq!(base["config"]["learning"], "never");
    assert_eq!(learned["config"]["learning"], "at-build");
    assert_eq!(base["found"], learned["found"]);
    let model_path = |r: &Value| r["stats"]["learning"]["model_path_lookups"].as_u64();
    assert_eq!(model_path(base), Some(0), "{base}");
    assert!(model_path(learned).unwrap() > 0, "{learned}");

    let dir = t.path().join("text");
    let out = ok(augur(&[
        "--db",
        dir.to_str().unwrap(),
        "bench",
        "--compare",
        "--benchmarks=fillrandom,readrandom",
        "--num=2000",
    ]));
    assert!(
        out.contains("augur-baseline") && out.contains("learned speedup"),
        "{out}"
    );
    let err = fails(augur(&["bench", "--compare", "--engine=augur", "--num=10"]));
    assert!(err.contains("--compare"), "{err}");
}

/// `waitforcompaction` returns on every engine built once the writes' background work is
/// done, and leaves every key readable: after a fill through a 64 KiB write buffer each
/// engine scans exactly the entries Augur scans.
#[test]
fn waitforcompaction_settles_every_engine_built() {
    let t = tempfile::tempdir().unwrap();
    let mut engines = vec!["augur"];
    for (feature, on) in [
        ("rocksdb", cfg!(feature = "rocksdb")),
        ("leveldb", cfg!(feature = "leveldb")),
        ("fjall", cfg!(feature = "fjall")),
    ] {
        if on {
            engines.push(feature);
        }
    }
    let mut scanned = Vec::new();
    for engine in engines {
        let recs = bench_json(
            &t.path().join(engine),
            &[
                &format!("--engine={engine}"),
                "--write_buffer_size=65536",
                "--num=30000",
                "--benchmarks=fillrandom,waitforcompaction,readseq",
            ],
        );
        let wait = record(&recs, "waitforcompaction");
        assert_eq!(wait["ops"], 1, "{wait}");
        assert!(wait["io_bytes_written"].is_u64(), "{wait}");
        scanned.push((engine, record(&recs, "readseq")["ops"].clone()));
    }
    let augur = scanned[0].1.clone();
    assert!(augur.as_u64().unwrap() > 15_000, "{augur}");
    for (engine, n) in &scanned {
        assert_eq!(*n, augur, "{engine} scanned {n}, augur {augur}");
    }
}

/// Issue 15: without `--value-separation-threshold` the text report says first that two
/// configurations run, and in which subdirectories of `--db`; with it, one runs in `--db`.
#[test]
fn the_header_names_every_configuration_and_its_directory() {
    let t = tempfile::tempdir().unwrap();
    let db = t.path().join("db");
    let db_s = db.to_str().unwrap();
    let out = ok(augur(&[
        "--db",
        db_s,
        "bench",
        "--num=50",
        "--benchmarks=fillrandom",
    ]));
    let plan = out.find("Running 2 configurations").expect(&out);
    let first_run = out.find("Augur:").expect(&out);
    assert!(plan < first_run, "{out}");
    for label in ["inline", "separated"] {
        let path = db.join(label);
        assert!(out.contains(&*path.to_string_lossy()), "{out}");
        assert!(path.is_dir(), "{label} database missing");
    }
    assert!(out.contains("pass --value-separation-threshold N"), "{out}");

    let one = t.path().join("one");
    let out = ok(augur(&[
        "--db",
        one.to_str().unwrap(),
        "bench",
        "--num=50",
        "--value-separation-threshold=0",
        "--benchmarks=fillrandom",
    ]));
    assert!(!out.contains("configurations"), "{out}");
    assert!(
        one.join("CURRENT").exists(),
        "one configuration runs in --db itself"
    );
}
