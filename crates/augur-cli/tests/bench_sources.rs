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

/// Every benchmark, YCSB's included, runs on a text key file: the fills write each key once,
/// point reads, seeks, the mixed and concurrent reads find every key, scans and `train` see
/// every key, deletes remove them, and YCSB's load writes the file's keys again.
#[test]
fn every_benchmark_runs_on_text_keys() {
    let t = tempfile::tempdir().unwrap();
    let file = t.path().join("paths.txt");
    let keys: Vec<String> = (0..400)
        .map(|i| format!("/srv/{}/{:03}.log", ["api", "db", "web"][i % 3], i))
        .collect();
    std::fs::write(&file, keys.join("\n")).unwrap();
    let dir = t.path().join("db");
    let recs = bench_json(
        &dir,
        &[
            &format!("--keys-text={}", file.display()),
            "--reads=300",
            "--scan-range-keys=50",
            "--scan-length=4",
            "--benchmarks=fillseq,readrandom,readmissing,seekrandom,readrandomwriterandom,\
             readwhilewriting,flush,readseq,readreverse,scanparallel,train,overwrite,compact,\
             deleterandom,deleteseq,readseq,fillrandom,readrandom,ycsb-load,ycsb-a,ycsb-b,\
             ycsb-c,ycsb-d,ycsb-e,ycsb-f,ycsb-b-hot",
        ],
    );
    let by = |name: &str, i: usize| {
        recs.iter()
            .filter(|r| r["benchmark"] == name)
            .nth(i)
            .unwrap()
    };
    assert_eq!(by("fillseq", 0)["ops"], 400);
    assert_eq!(by("fillrandom", 0)["ops"], 400);
    for (name, i) in [
        ("readrandom", 0),
        ("seekrandom", 0),
        ("readwhilewriting", 0),
        ("readrandom", 1),
    ] {
        assert_eq!(found(by(name, i)), 300, "{name} #{i}");
    }
    assert_eq!(found(by("readmissing", 0)), 0);
    // readrandomwriterandom: 90% gets, each finding its key.
    let mixed = found(by("readrandomwriterandom", 0));
    assert!((240..300).contains(&mixed), "{mixed}");
    assert_eq!(
        by("readseq", 0)["ops"],
        300,
        "up to --reads of the 400 keys"
    );
    assert_eq!(by("readreverse", 0)["ops"], 300);
    assert_eq!(by("scanparallel", 0)["entries_per_scan"], 50.0);
    assert_eq!(by("train", 0)["ops"], 400);
    assert_eq!(by("deleteseq", 0)["ops"], 400);
    assert_eq!(by("readseq", 1)["ops"], 0, "every key deleted");
    assert_eq!(by("ycsb-load", 0)["ops"], 400);
    for name in [
        "ycsb-a",
        "ycsb-b",
        "ycsb-c",
        "ycsb-d",
        "ycsb-f",
        "ycsb-b-hot",
    ] {
        let r = by(name, 0);
        let gets = r["reads"].as_u64().unwrap() + r["read_modify_writes"].as_u64().unwrap();
        assert_eq!(found(r), gets, "{r}");
        assert_eq!(r["insert_order"], "source", "{r}");
    }
    // The database holds the file's keys (ycsb-load) and the records D and E inserted.
    let stored: Vec<String> = stored_keys(&dir)
        .iter()
        .map(|k| String::from_utf8(hex::decode(k).unwrap()).unwrap())
        .collect();
    let mut want = keys.clone();
    want.sort();
    let loaded: Vec<String> = stored
        .iter()
        .filter(|k| !k.contains('#'))
        .cloned()
        .collect();
    assert_eq!(loaded, want);
}

/// db_bench's `--prefix_size=4 --keys_per_prefix=10`: in key order the keys' first 4 bytes
/// repeat in groups of 10 — the prefixes 0..10, big-endian — and each key ends with its key
/// number; every key is found, no missing one.
#[test]
fn prefix_flags_make_keys_sharing_their_first_bytes_in_groups() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("db");
    let recs = bench_json(
        &dir,
        &[
            "--prefix_size=4",
            "--keys_per_prefix=10",
            "--num=100",
            "--reads=200",
            "--benchmarks=fillseq,readrandom,readmissing,seekrandom",
        ],
    );
    assert_eq!(record(&recs, "fillseq")["ops"], 100);
    assert_eq!(found(record(&recs, "readrandom")), 200);
    assert_eq!(found(record(&recs, "readmissing")), 0);
    assert_eq!(found(record(&recs, "seekrandom")), 200);
    let config = &record(&recs, "fillseq")["config"];
    assert_eq!(config["prefix_size"], 4);
    assert_eq!(config["keys_per_prefix"], 10);
    let keys: Vec<Vec<u8>> = stored_keys(&dir)
        .iter()
        .map(|k| hex::decode(k).unwrap())
        .collect();
    assert_eq!(keys.len(), 100);
    for (i, group) in keys.chunks(10).enumerate() {
        for (j, k) in group.iter().enumerate() {
            assert_eq!(k.len(), 16);
            assert_eq!(k[..4], (i as u32).to_be_bytes(), "group {i}");
            // Prefix p holds the numbers p, p + 10, p + 20, ...: the key's bytes 4..12.
            let n = u64::from_be_bytes(k[4..12].try_into().unwrap());
            assert_eq!(n, (i + 10 * j) as u64);
            assert_eq!(&k[12..], b"0000");
        }
    }
}

#[test]
fn bad_prefix_flags_are_refused() {
    let t = tempfile::tempdir().unwrap();
    let words = t.path().join("w.txt");
    std::fs::write(&words, "a\nb\n").unwrap();
    let text = format!("--keys-text={}", words.display());
    for (flags, message) in [
        (
            &["--keys_per_prefix=10"][..],
            "--keys_per_prefix=10 needs --prefix_size",
        ),
        (
            &["--prefix_size=4"],
            "--prefix_size=4 needs --keys_per_prefix",
        ),
        (
            &["--prefix_size=16", "--keys_per_prefix=10"],
            "--prefix_size=16 must be less than --key_size=16",
        ),
        (
            &["--prefix_size=4", "--keys_per_prefix=11", "--num=10"],
            "--keys_per_prefix=11 is more than --num=10",
        ),
        (
            &["--prefix_size=4", "--keys_per_prefix=2", &text],
            "do not apply to a key source",
        ),
    ] {
        let mut args = vec!["bench"];
        args.extend_from_slice(flags);
        let err = fails(augur(&args));
        assert!(err.contains(message), "{flags:?}: {err}");
    }
}

/// The two application-shaped sources: `composite` keys are `<table>:<id>:<field>` with a few
/// tables and fields and the same keys for the same seed; `redis` keys are `key:%012d` of the
/// numbers 0..num. Both are written once each by the fills and all found by readrandom.
#[test]
fn composite_and_redis_sources_have_their_shapes_and_are_all_found() {
    let t = tempfile::tempdir().unwrap();
    let dump = |dist: &str, seed: &str| -> Vec<String> {
        let file = t.path().join(format!("{dist}-{seed}.txt"));
        ok(augur(&[
            "bench",
            &format!("--distribution={dist}"),
            "--num=500",
            seed,
            &format!("--dump-keys={}", file.display()),
        ]));
        std::fs::read_to_string(&file)
            .unwrap()
            .lines()
            .map(String::from)
            .collect()
    };
    let composite = dump("composite", "--seed=1");
    assert_eq!(composite.len(), 500);
    assert_eq!(composite, dump("composite", "--seed=1"));
    assert_ne!(composite, dump("composite", "--seed=2"));
    for k in &composite {
        let parts: Vec<&str> = k.split(':').collect();
        assert_eq!(parts.len(), 3, "{k}");
        assert!(
            ["account", "event", "order", "session", "user"].contains(&parts[0]),
            "{k}"
        );
        let id: u64 = parts[1].parse().unwrap();
        assert!((1..=500).contains(&id) && !parts[1].starts_with('0'), "{k}");
        assert!(
            ["created", "email", "name", "status"].contains(&parts[2]),
            "{k}"
        );
    }
    let redis = dump("redis", "--seed=1");
    let want: Vec<String> = (0..500).map(|i| format!("key:{i:012}")).collect();
    assert_eq!(redis, want);
    assert_eq!(
        redis,
        dump("redis", "--seed=2"),
        "the numbers 0..num, whatever the seed"
    );
    for (dist, keys) in [("composite", &composite), ("redis", &redis)] {
        let dir = t.path().join(dist);
        let recs = bench_json(
            &dir,
            &[
                &format!("--distribution={dist}"),
                "--num=500",
                "--seed=1",
                "--reads=400",
                "--benchmarks=fillrandom,readrandom,fillseq,flush,readrandom,readmissing",
            ],
        );
        assert_eq!(record(&recs, "fillrandom")["ops"], 500, "{dist}");
        let reads: Vec<&Value> = recs
            .iter()
            .filter(|r| r["benchmark"] == "readrandom")
            .collect();
        assert!(reads.iter().all(|r| found(r) == 400), "{dist}: {reads:?}");
        assert_eq!(found(record(&recs, "readmissing")), 0, "{dist}");
        assert_eq!(
            record(&recs, "fillseq")["config"]["key_source"],
            format!("distribution:{dist}")
        );
        let stored: Vec<String> = stored_keys(&dir)
            .iter()
            .map(|k| String::from_utf8(hex::decode(k).unwrap()).unwrap())
            .collect();
        assert_eq!(&stored, keys, "{dist}");
    }
}
