//! End-to-end tests of `augur bench`'s key sources: SOSD files (`--keys`), text files
//! (`--keys-text`), synthetic distributions (`--distribution`), `--load-order`, `--num`
//! capping, readmissing over a source, the `train` benchmark and the flag errors.

mod common;

use common::{augur, bench_json, fails, ok, record};
use serde_json::Value;
use std::path::Path;

fn found(r: &Value) -> u64 {
    r["found"].as_u64().unwrap()
}

/// The keys stored in the database, hex-encoded, in order.
fn stored_keys(dir: &Path) -> Vec<String> {
    ok(augur(&["--db", dir.to_str().unwrap(), "--hex", "scan"]))
        .lines()
        .map(|l| l.split('\t').next().unwrap().to_string())
        .collect()
}

fn write_sosd(path: &Path, keys: &[u64]) {
    let mut bytes = (keys.len() as u64).to_le_bytes().to_vec();
    for k in keys {
        bytes.extend_from_slice(&k.to_le_bytes());
    }
    std::fs::write(path, bytes).unwrap();
}

/// The documented encoding: 8 bytes big-endian, '0'-padded to 16 bytes.
fn encoded(k: u64) -> String {
    format!(
        "{}{}",
        hex::encode(k.to_be_bytes()),
        hex::encode(b"00000000")
    )
}

#[test]
fn sosd_keys_are_written_once_each_and_read_back() {
    let t = tempfile::tempdir().unwrap();
    let file = t.path().join("keys.u64");
    // Unsorted with a duplicate: the source is sorted and deduplicated.
    let keys = [900u64, 5, u64::MAX, 77, 5, 1 << 40];
    write_sosd(&file, &keys);
    let dir = t.path().join("db");
    let recs = bench_json(
        &dir,
        &[
            &format!("--keys={}", file.display()),
            "--benchmarks=fillrandom,flush,readrandom,readmissing,seekrandom,train",
            "--reads=200",
        ],
    );
    let fill = record(&recs, "fillrandom");
    assert_eq!(fill["ops"], 5, "one write per distinct key");
    assert_eq!(fill["config"]["num"], 5);
    assert_eq!(found(record(&recs, "readrandom")), 200);
    assert_eq!(found(record(&recs, "readmissing")), 0);
    assert_eq!(found(record(&recs, "seekrandom")), 200);
    let train = record(&recs, "train");
    assert_eq!(train["ops"], 5);
    assert!(train["segments"].as_u64().unwrap() >= 1, "{train}");
    assert!(train["train_ns_per_key"].as_f64().unwrap() > 0.0, "{train}");
    let sorted = [5u64, 77, 900, 1 << 40, u64::MAX];
    let expected: Vec<String> = sorted.iter().map(|&k| encoded(k)).collect();
    assert_eq!(stored_keys(&dir), expected);
}

#[test]
fn num_caps_a_file_source_with_evenly_spaced_keys() {
    let t = tempfile::tempdir().unwrap();
    let file = t.path().join("keys.u64");
    write_sosd(&file, &(0..100u64).map(|i| i * 10).collect::<Vec<_>>());
    let dir = t.path().join("db");
    let recs = bench_json(
        &dir,
        &[
            &format!("--keys={}", file.display()),
            "--num=4",
            "--benchmarks=fillseq",
        ],
    );
    assert_eq!(record(&recs, "fillseq")["ops"], 4);
    let expected: Vec<String> = [0u64, 250, 500, 750].iter().map(|&k| encoded(k)).collect();
    assert_eq!(stored_keys(&dir), expected);
}

#[test]
fn text_keys_are_used_as_is() {
    let t = tempfile::tempdir().unwrap();
    let file = t.path().join("words.txt");
    std::fs::write(&file, "pear\napple\r\n\nfig\nfigs\napple\n").unwrap();
    let dir = t.path().join("db");
    let recs = bench_json(
        &dir,
        &[
            &format!("--keys-text={}", file.display()),
            "--benchmarks=fillrandom,compact,readrandom,readmissing",
            "--reads=100",
        ],
    );
    assert_eq!(record(&recs, "fillrandom")["ops"], 4);
    assert_eq!(found(record(&recs, "readrandom")), 100);
    assert_eq!(found(record(&recs, "readmissing")), 0);
    let expected: Vec<String> = ["apple", "fig", "figs", "pear"]
        .iter()
        .map(hex::encode)
        .collect();
    assert_eq!(stored_keys(&dir), expected);
}

#[test]
fn distributions_fill_every_key_under_both_load_orders() {
    let t = tempfile::tempdir().unwrap();
    for dist in [
        "linear",
        "seg1",
        "seg10",
        "normal",
        "lognormal",
        "uniform-dense",
        "uniform-sparse",
    ] {
        for order in ["random", "sequential"] {
            let dir = t.path().join(format!("{dist}-{order}"));
            let recs = bench_json(
                &dir,
                &[
                    &format!("--distribution={dist}"),
                    &format!("--load-order={order}"),
                    "--num=300",
                    "--key_size=12",
                    "--benchmarks=fillrandom,flush,readrandom,readseq",
                ],
            );
            assert_eq!(record(&recs, "fillrandom")["ops"], 300);
            assert_eq!(found(record(&recs, "readrandom")), 300, "{dist}");
            assert_eq!(record(&recs, "readseq")["ops"], 300, "every key distinct");
            let config = &record(&recs, "fillrandom")["config"];
            assert_eq!(config["key_source"], format!("distribution:{dist}"));
            assert_eq!(config["load_order"], order);
            let keys = stored_keys(&dir);
            assert!(keys.iter().all(|k| k.len() == 24), "12-byte keys");
        }
    }
}

#[test]
fn a_seeded_distribution_is_reproducible() {
    let t = tempfile::tempdir().unwrap();
    let run = |name: &str, seed: &str| {
        let dir = t.path().join(name);
        bench_json(
            &dir,
            &[
                "--distribution=normal",
                "--num=50",
                seed,
                "--benchmarks=fillseq",
            ],
        );
        stored_keys(&dir)
    };
    let a = run("a", "--seed=9");
    assert_eq!(a, run("b", "--seed=9"));
    assert_ne!(a, run("c", "--seed=10"));
}

#[test]
fn bad_source_flags_are_rejected() {
    let t = tempfile::tempdir().unwrap();
    let file = t.path().join("keys.u64");
    write_sosd(&file, &[1, 2, 3]);
    let keys = format!("--keys={}", file.display());
    let err = fails(augur(&[
        "bench",
        &keys,
        "--key_size=4",
        "--benchmarks=train",
    ]));
    assert!(err.contains("key_size"), "{err}");
    let err = fails(augur(&["bench", "--load-order=random", "--num=10"]));
    assert!(err.contains("key source"), "{err}");
    fails(augur(&["bench", &keys, "--distribution=linear"]));
    let missing = t.path().join("nope.u64");
    fails(augur(&["bench", &format!("--keys={}", missing.display())]));
    let empty = t.path().join("empty.txt");
    std::fs::write(&empty, "\n\n").unwrap();
    let err = fails(augur(&[
        "bench",
        &format!("--keys-text={}", empty.display()),
    ]));
    assert!(err.contains("no key"), "{err}");
}

/// Every record carries the process CPU time and peak RSS (Linux), and `learn` reports the
/// models it trained, their bytes and the table entries.
#[cfg(target_os = "linux")]
#[test]
fn records_carry_cpu_rss_and_learn_figures() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("db");
    let recs = bench_json(
        &dir,
        &[
            "--num=20000",
            "--learning=offline",
            "--index=pgm",
            "--benchmarks=fillrandom,flush,learn,readrandom",
        ],
    );
    for r in &recs {
        assert!(r["cpu_s"].as_f64().is_some_and(|s| s >= 0.0), "{r}");
        assert!(r["peak_rss_mb"].as_f64().is_some_and(|mb| mb > 1.0), "{r}");
    }
    let learn = record(&recs, "learn");
    assert!(learn["models"].as_u64().unwrap() >= 1, "{learn}");
    assert!(learn["model_bytes"].as_u64().unwrap() > 0, "{learn}");
    // 20,000 draws with repeats leave ~12,600 distinct keys in the tables.
    assert!(learn["entries"].as_u64().unwrap() > 10_000, "{learn}");
}

/// `--threads=N`: readrandom runs N readers, each doing `--reads` lookups; every key of a key
/// source is present, so every lookup of every thread finds its key.
#[test]
fn threads_multiply_the_reads() {
    let t = tempfile::tempdir().unwrap();
    let file = t.path().join("keys.u64");
    let keys: Vec<u64> = (0..5000u64).map(|i| i * 7919).collect();
    write_sosd(&file, &keys);
    let dir = t.path().join("db");
    let recs = bench_json(
        &dir,
        &[
            &format!("--keys={}", file.display()),
            "--benchmarks=fillrandom,flush,readrandom,readmissing",
            "--reads=3000",
            "--threads=3",
            "--histogram",
        ],
    );
    let read = record(&recs, "readrandom");
    assert_eq!(read["ops"], 9000, "{read}");
    assert_eq!(read["threads"], 3, "{read}");
    assert_eq!(found(read), 9000);
    assert!(read["p50_us"].as_f64().is_some(), "{read}");
    let missing = record(&recs, "readmissing");
    assert_eq!(missing["ops"], 9000);
    assert_eq!(found(missing), 0);
    assert!(fails(augur(&["bench", "--threads=0", "--num=10"])).contains("threads"));
}
