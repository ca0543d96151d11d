//! End-to-end tests of `augur bench`'s YCSB benchmarks: every `ycsb-*` name on a tiny
//! `--num`, the operation counts and keys they leave, `--request-distribution`,
//! `--scan-length`, B′ (`ycsb-b-hot`) on ordered keys with its per-phase learning figures,
//! and the flag errors.

mod common;

use common::{augur, bench_json, ok, record};
use serde_json::Value;

const WORKLOADS: &[&str] = &["ycsb-a", "ycsb-b", "ycsb-c", "ycsb-d", "ycsb-e", "ycsb-f"];

fn count(r: &Value, field: &str) -> u64 {
    r[field]
        .as_u64()
        .unwrap_or_else(|| panic!("{field} in {r}"))
}

#[test]
fn every_ycsb_benchmark_runs_with_its_mix() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let list = format!("ycsb-load,{}", WORKLOADS.join(","));
    let recs = bench_json(
        &dir,
        &[
            "--benchmarks",
            &list,
            "--num=300",
            "--reads=400",
            "--scan-length=5",
        ],
    );
    assert_eq!(recs.len(), 7);
    let load = record(&recs, "ycsb-load");
    assert_eq!(count(load, "ops"), 300);
    assert_eq!(count(load, "inserts"), 300);
    let mut inserted = 0;
    for name in WORKLOADS {
        let r = record(&recs, name);
        assert_eq!(count(r, "ops"), 400, "{r}");
        for key in ["p50_us", "p99_us", "p999_us", "ops_per_sec"] {
            assert!(r[key].as_f64().is_some(), "{key} in {r}");
        }
        let kinds = ["reads", "updates", "inserts", "scans", "read_modify_writes"];
        let total: u64 = kinds.iter().map(|k| count(r, k)).sum();
        assert_eq!(total, 400, "{r}");
        // Only the workload's own kinds occur; reads always find their record.
        let allowed: &[&str] = match *name {
            "ycsb-a" | "ycsb-b" => &["reads", "updates"],
            "ycsb-c" => &["reads"],
            "ycsb-d" => &["reads", "inserts"],
            "ycsb-e" => &["scans", "inserts"],
            _ => &["reads", "read_modify_writes"],
        };
        for k in kinds {
            if !allowed.contains(&k) {
                assert_eq!(count(r, k), 0, "{name}: {k} in {r}");
            }
        }
        // Each kind that occurred has its own p99 latency; the others have none.
        let p99 = |k: &str| r[format!("{}_p99_us", k.trim_end_matches('s'))].as_f64();
        for k in kinds {
            assert_eq!(p99(k).is_some(), count(r, k) > 0, "{name}: {k} in {r}");
        }
        if *name != "ycsb-e" {
            let gets = count(r, "reads") + count(r, "read_modify_writes");
            assert_eq!(count(r, "found"), gets, "{r}");
        }
        let default = if *name == "ycsb-d" {
            "latest"
        } else {
            "zipfian"
        };
        assert_eq!(r["distribution"], default);
        inserted += count(r, "inserts");
    }
    assert!(inserted > 0);
    // The database holds the loaded records plus the inserted ones, all named as YCSB does.
    let scan = ok(augur(&["--db", dir.to_str().unwrap(), "--hex", "scan"]));
    let keys: Vec<String> = scan
        .lines()
        .map(|l| String::from_utf8(hex::decode(l.split('\t').next().unwrap()).unwrap()).unwrap())
        .collect();
    assert_eq!(keys.len() as u64, 300 + inserted);
    assert!(
        keys.iter().any(|k| k == "user6284781860667377211"),
        "record 0"
    );
    assert!(keys
        .iter()
        .all(|k| k.starts_with("user") && k[4..].bytes().all(|b| b.is_ascii_digit())));
}

#[test]
fn request_distribution_overrides_the_workload_default() {
    let tmp = tempfile::tempdir().unwrap();
    for dist in [
        "uniform",
        "zipfian",
        "latest",
        "hotspot",
        "hotspot-zipfian",
        "exponential",
        "sequential",
    ] {
        let dir = tmp.path().join(dist);
        let recs = bench_json(
            &dir,
            &[
                "--benchmarks=ycsb-load,ycsb-c,ycsb-d",
                "--num=200",
                "--reads=300",
                &format!("--request-distribution={dist}"),
            ],
        );
        for name in ["ycsb-c", "ycsb-d"] {
            let r = record(&recs, name);
            assert_eq!(r["distribution"], dist, "{r}");
            assert_eq!(count(r, "found"), count(r, "reads"), "{r}");
            assert_eq!(r["config"]["request_distribution"], dist);
        }
    }
}

#[test]
fn text_report_prints_latencies_and_bad_flags_fail() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let out = ok(augur(&[
        "--db",
        dir.to_str().unwrap(),
        "bench",
        "--value-separation-threshold=0",
        "--benchmarks=ycsb-load,ycsb-e",
        "--num=50",
        "--reads=20",
    ]));
    assert!(out.contains("ycsb-e"), "{out}");
    assert!(out.contains("latency us: p50"), "{out}");
    assert!(out.contains("scans="), "{out}");
    for bad in [
        "--request-distribution=pareto",
        "--scan-length=0",
        "--benchmarks=ycsb-g",
        "--insert-order=random",
        "--hotspot-data-fraction=0",
        "--hotspot-ops-fraction=1.5",
    ] {
        let o = augur(&["bench", "--num=10", bad]);
        assert!(!o.status.success(), "{bad} accepted");
    }
}

/// B′ on ordered keys loaded shuffled, under lazy learning: every record is named `user` +
/// its zero-padded number, 90% of the operations fall on the first 1% of the records, and
/// the run's record tells what was learned before it (nothing: lazy learns on lookups),
/// during it and right after it (the files it read).
#[test]
fn b_prime_on_ordered_keys_reports_learning_per_phase() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let recs = bench_json(
        &dir,
        &[
            "--benchmarks=ycsb-load,flush,waitforlearning,ycsb-b-hot,waitforlearning",
            "--num=2000",
            "--reads=3000",
            "--insert-order=ordered",
            "--load-order=random",
            "--learning=lazy",
            "--lazy-learning-reads=2",
            // A fixed threshold of 2 lookups (the per-key rate would ask for 1,000 here).
            "--lazy-learning-reads-per-key=0",
        ],
    );
    assert_eq!(recs.len(), 5);
    let run = &recs[3];
    assert_eq!(run["benchmark"], "ycsb-b-hot");
    assert_eq!(run["distribution"], "hotspot-zipfian");
    assert_eq!(run["insert_order"], "ordered");
    assert_eq!(run["hotspot_data_fraction"], 0.01);
    assert_eq!(run["hotspot_ops_fraction"], 0.9);
    assert_eq!(count(run, "reads") + count(run, "updates"), 3000, "{run}");
    assert_eq!(count(run, "found"), count(run, "reads"), "{run}");
    for key in [
        "read_mean_us",
        "read_p50_us",
        "update_mean_us",
        "update_p99_us",
    ] {
        assert!(run[key].as_f64().is_some_and(|x| x > 0.0), "{key} in {run}");
    }
    let config = &run["config"];
    assert_eq!(config["insert_order"], "ordered");
    assert_eq!(config["load_order"], "random");
    assert_eq!(config["learning"], "lazy");
    assert_eq!(config["lazy_learning_reads"], 2);
    assert_eq!(config["lazy_learning_reads_per_key"], 0.0);
    // One table (the flush); lazy learning learned nothing before the run, and the table
    // the run read is learned during the run or just after it.
    assert_eq!(count(run, "models_learned_before"), 0, "{run}");
    assert_eq!(count(run, "tables_created_before"), 1, "{run}");
    assert_eq!(count(run, "files_start"), 1, "{run}");
    assert_eq!(count(run, "learned_files_start"), 0, "{run}");
    let backlog = &recs[4];
    assert_eq!(backlog["benchmark"], "waitforlearning");
    // Learned during the run or after it: counted from the backlog's own "before" (a model
    // finished between the run's last snapshot and the backlog's first is in neither
    // phase's `models_learned`).
    let learned = count(backlog, "models_learned_before") + count(backlog, "models_learned")
        - count(run, "models_learned_before");
    assert_eq!(learned, 1, "{run}\n{backlog}");
    assert_eq!(count(backlog, "learned_files_end"), 1, "{backlog}");
    assert!(run["learning_s"].as_f64().is_some(), "{run}");
    // The keys: user + the record number in 19 digits, every record present.
    let scan = ok(augur(&["--db", dir.to_str().unwrap(), "--hex", "scan"]));
    let keys: Vec<String> = scan
        .lines()
        .map(|l| String::from_utf8(hex::decode(l.split('\t').next().unwrap()).unwrap()).unwrap())
        .collect();
    let want: Vec<String> = (0..2000).map(|n| format!("user{n:019}")).collect();
    assert_eq!(keys, want);
}

/// Under at-build every table written carries a model: the models counted before the run are
/// the tables written by the load and the flush.
#[test]
fn at_build_counts_every_table_written_as_a_model() {
    let tmp = tempfile::tempdir().unwrap();
    let recs = bench_json(
        &tmp.path().join("db"),
        &[
            "--benchmarks=ycsb-load,flush,ycsb-b",
            "--num=3000",
            "--reads=500",
            "--learning=at-build",
            "--write_buffer_size=65536",
        ],
    );
    let run = record(&recs, "ycsb-b");
    let tables = count(run, "tables_created_before");
    assert!(tables >= 2, "{run}");
    assert_eq!(count(run, "models_learned_before"), tables, "{run}");
    assert_eq!(
        count(run, "models_learned"),
        count(run, "tables_created"),
        "{run}"
    );
    assert_eq!(count(run, "models_learned_background"), 0, "{run}");
}

/// The keys in `dir`'s database, as text, in key order.
fn stored_text_keys(dir: &std::path::Path) -> Vec<String> {
    ok(augur(&["--db", dir.to_str().unwrap(), "--hex", "scan"]))
        .lines()
        .map(|l| String::from_utf8(hex::decode(l.split('\t').next().unwrap()).unwrap()).unwrap())
        .collect()
}

/// With `--keys-text`, YCSB's records are the file's keys: `ycsb-load` writes exactly them,
/// the workloads read and update them (every read finds its record), and the records D and E
/// insert get keys derived from them (`<source key>#<record number>`, never a source key),
/// which later reads find too.
#[test]
fn ycsb_records_are_the_keys_of_a_text_source() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("keys.txt");
    let source: Vec<String> = (0..300)
        .map(|i| {
            format!(
                "tenant/{}/doc-{:05}",
                ["eu", "us", "ap"][i % 3],
                i * 7919 % 100_000
            )
        })
        .collect();
    std::fs::write(&file, source.join("\n")).unwrap();
    let dir = tmp.path().join("db");
    let recs = bench_json(
        &dir,
        &[
            &format!("--keys-text={}", file.display()),
            "--benchmarks=ycsb-load,ycsb-a,ycsb-d,ycsb-e,ycsb-f,ycsb-c",
            "--reads=400",
            "--scan-length=5",
        ],
    );
    let load = record(&recs, "ycsb-load");
    assert_eq!(count(load, "ops"), 300);
    assert_eq!(
        load["config"]["key_source"],
        format!("text:{}", file.display())
    );
    assert_eq!(load["config"]["insert_order"], "source");
    let mut inserted = 0;
    for name in ["ycsb-a", "ycsb-d", "ycsb-e", "ycsb-f", "ycsb-c"] {
        let r = record(&recs, name);
        assert_eq!(count(r, "ops"), 400, "{r}");
        assert_eq!(r["insert_order"], "source", "{r}");
        if name != "ycsb-e" {
            let gets = count(r, "reads") + count(r, "read_modify_writes");
            assert!(gets > 0, "{r}");
            assert_eq!(count(r, "found"), gets, "{r}");
        } else {
            assert!(count(r, "scans") > 0, "{r}");
        }
        inserted += count(r, "inserts");
    }
    assert!(count(record(&recs, "ycsb-d"), "inserts") > 0);
    assert!(count(record(&recs, "ycsb-e"), "inserts") > 0);
    // The database: every source key, and one derived key per insert.
    let keys = stored_text_keys(&dir);
    assert_eq!(keys.len() as u64, 300 + inserted);
    let (loaded, derived): (Vec<&String>, Vec<&String>) =
        keys.iter().partition(|k| !k.contains('#'));
    let mut want = source.clone();
    want.sort();
    assert_eq!(loaded, want.iter().collect::<Vec<_>>());
    let mut numbers = Vec::new();
    for k in derived {
        let (base, n) = k.rsplit_once('#').unwrap();
        assert!(want.binary_search(&base.to_string()).is_ok(), "{k}");
        numbers.push(n.parse::<u64>().unwrap());
    }
    // The inserted records are numbered on from the loaded ones, each once.
    numbers.sort_unstable();
    assert_eq!(numbers, (300..300 + inserted).collect::<Vec<_>>());
}

/// `--insert-order` names YCSB's own keys, so it is refused with a key source.
#[test]
fn insert_order_with_a_key_source_is_refused() {
    let o = augur(&[
        "bench",
        "--distribution=redis",
        "--num=10",
        "--insert-order=ordered",
        "--benchmarks=ycsb-load",
    ]);
    let err = common::fails(o);
    assert!(
        err.contains("--insert-order names YCSB's own keys"),
        "{err}"
    );
}
