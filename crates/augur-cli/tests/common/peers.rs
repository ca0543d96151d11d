//! Checks shared by the tests of the peer engines (`bench_peers.rs` for RocksDB,
//! `bench_leveldb.rs`, `bench_fjall.rs`), which each run only with the cargo feature of their
//! peer (except the refusal without it): a build without the feature refuses the peer
//! clearly, a fill and reads on the peer find what the fill wrote, a fresh fill refuses a
//! directory holding a foreign file, a peer without direct reads refuses them, hotspot reads
//! find what Augur's find, every benchmark runs on text keys as on Augur, and reading fields
//! of the JSON records.

use super::{augur, bench_json_on, fails_with_error, peer_and_augur, record};
use serde_json::Value;
use std::path::Path;

/// Without the cargo feature `engine`, `augur GLOBAL_ARGS bench --engine=ENGINE --num=10`
/// fails, and its stderr names the feature and holds every one of `hints`.
pub fn refused_without_feature(global_args: &[&str], engine: &str, hints: &[&str]) {
    let engine_flag = format!("--engine={engine}");
    let mut args = global_args.to_vec();
    args.extend_from_slice(&["bench", engine_flag.as_str(), "--num=10"]);
    let o = augur(&args);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!("feature `{engine}`")),
        "stderr: {err}"
    );
    for hint in hints {
        assert!(err.contains(hint), "stderr: {err}");
    }
}

/// Runs `--num=500 --reads=200 --benchmarks=BENCHMARKS` on `engine` in `dir`, where
/// `benchmarks` starts with fillseq and holds readrandom, readmissing, seekrandom and readseq:
/// the fill wrote 500 entries, every random read and seek finds its key, no missing key is
/// found, and readseq reads 200 (up to --reads of the 500 present). Returns the records.
pub fn fillseq_reads_find_what_was_written(
    dir: &Path,
    engine: &str,
    benchmarks: &str,
) -> Vec<Value> {
    let benchmarks = format!("--benchmarks={benchmarks}");
    let r = bench_json_on(dir, engine, &["--num=500", "--reads=200", &benchmarks]);
    assert_eq!(record(&r, "fillseq")["ops"], 500);
    assert_eq!(record(&r, "readrandom")["found"], 200);
    assert_eq!(record(&r, "readmissing")["found"], 0);
    assert_eq!(record(&r, "seekrandom")["found"], 200);
    assert_eq!(record(&r, "readseq")["ops"], 200);
    r
}

/// With a foreign file `notes.txt` in `dir` (created if missing), a fresh fill on `engine`
/// fails, saying it refuses and naming the file, and the file keeps its contents.
pub fn fresh_fill_refuses_foreign_file(dir: &Path, engine: &str) {
    std::fs::create_dir_all(dir).unwrap();
    let foreign = dir.join("notes.txt");
    std::fs::write(&foreign, b"keep me").unwrap();
    let engine_flag = format!("--engine={engine}");
    let o = augur(&[
        "--db",
        dir.to_str().unwrap(),
        "bench",
        &engine_flag,
        "--num=10",
        "--benchmarks=fillseq",
    ]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("refusing") && err.contains("notes.txt"),
        "stderr: {err}"
    );
    assert_eq!(std::fs::read(&foreign).unwrap(), b"keep me");
}

/// On `engine`, a peer without direct reads: `--use_direct_reads=1` fails before anything is
/// created in `dir`, naming the engines that have them (never reading buffered instead), and
/// `--use_direct_reads=0 --cache_size` runs, the records' config saying so.
pub fn refuses_direct_reads(dir: &Path, engine: &str) {
    let engine_flag = format!("--engine={engine}");
    let o = augur(&[
        "--db",
        dir.to_str().unwrap(),
        "bench",
        &engine_flag,
        "--use_direct_reads=1",
        "--num=10",
    ]);
    let e = fails_with_error(o);
    assert!(
        e.contains(&format!(
            "{engine} has no direct reads (engines with them: augur, rocksdb)"
        )),
        "{e}"
    );
    assert!(!dir.exists(), "refused before anything was created");
    let r = bench_json_on(
        dir,
        engine,
        &[
            "--use_direct_reads=0",
            "--cache_size=1048576",
            "--num=100",
            "--benchmarks=fillseq,readrandom",
        ],
    );
    let config = &record(&r, "readrandom")["config"];
    assert_eq!(config["use_direct_reads"], false, "{config}");
    assert_eq!(config["cache_bytes"], 1 << 20, "{config}");
}

/// `--read_distribution=hotspot` (80% of the lookups on the first 25% of the keys) draws the
/// same keys on `engine` as on Augur: readrandom and seekrandom find exactly as many, in
/// directories under `root`.
pub fn hotspot_reads_find_what_augur_finds(root: &Path, engine: &str) {
    let (peer, ours) = peer_and_augur(
        root,
        engine,
        &[
            "--num=2000",
            "--reads=3000",
            "--benchmarks=fillrandom,readrandom,seekrandom",
            "--read_distribution=hotspot",
            "--hotspot_data_fraction=0.25",
            "--hotspot_opn_fraction=0.8",
        ],
    );
    for name in ["readrandom", "seekrandom"] {
        assert_eq!(
            field(&peer, name, "found"),
            field(&ours, name, "found"),
            "{name}"
        );
        assert_eq!(record(&peer, name)["read_distribution"], "hotspot");
    }
}

/// On text keys (`--distribution=composite`, the same keys on both engines), every kind of
/// benchmark runs on `engine` as on Augur, in directories under `root`: the fill writes every
/// key once, random reads and seeks find every key, no missing key is found, the mixed and
/// concurrent reads find every key, and YCSB's load and workloads on the source's keys —
/// inserts included — count and find exactly what Augur's do.
pub fn text_keys_find_what_augur_finds(root: &Path, engine: &str) {
    let (peer, ours) = peer_and_augur(
        root,
        engine,
        &[
            "--distribution=composite",
            "--num=600",
            "--reads=300",
            "--scan-length=5",
            "--benchmarks=fillrandom,readrandom,readmissing,seekrandom,readrandomwriterandom,\
             readwhilewriting,flush,readseq,readreverse,deleterandom,ycsb-load,ycsb-a,ycsb-d,\
             ycsb-e,ycsb-f,readseq",
        ],
    );
    assert_eq!(field(&peer, "fillrandom", "ops"), 600);
    for name in ["readrandom", "seekrandom", "readwhilewriting"] {
        assert_eq!(field(&peer, name, "found"), 300, "{name}");
    }
    assert_eq!(field(&peer, "readmissing", "found"), 0);
    // The mix's gets (its draws are Augur's) all find their keys, as Augur's do.
    for (name, key) in [
        ("readrandomwriterandom", "found"),
        ("deleterandom", "ops"),
        ("readseq", "ops"),
        ("readreverse", "ops"),
        ("ycsb-load", "ops"),
    ] {
        assert_eq!(
            field(&peer, name, key),
            field(&ours, name, key),
            "{name} {key}"
        );
    }
    for name in ["ycsb-a", "ycsb-d", "ycsb-e", "ycsb-f"] {
        assert_eq!(record(&peer, name)["insert_order"], "source");
        for kind in [
            "reads",
            "updates",
            "inserts",
            "scans",
            "read_modify_writes",
            "found",
        ] {
            assert_eq!(
                record(&peer, name)[kind],
                record(&ours, name)[kind],
                "{name} {kind}"
            );
        }
        if name != "ycsb-e" {
            let gets = field(&peer, name, "reads") + field(&peer, name, "read_modify_writes");
            assert_eq!(field(&peer, name, "found"), gets, "{name}");
        }
    }
    // The last readseq (after YCSB) sees the loaded keys and the inserted ones.
    let last = |r: &[Value]| {
        r.iter()
            .rev()
            .find(|x| x["benchmark"] == "readseq")
            .unwrap()["ops"]
            .clone()
    };
    assert_eq!(last(&peer), last(&ours));
}

/// The unsigned `field` of the (first) record of benchmark `name`.
pub fn field(records: &[Value], name: &str, field: &str) -> u64 {
    let r = record(records, name);
    r[field]
        .as_u64()
        .unwrap_or_else(|| panic!("no {field} in {r}"))
}

/// The `field` of the `index`-th record named `name` (a benchmark may run twice).
pub fn nth<'a>(records: &'a [Value], name: &str, index: usize, field: &str) -> &'a Value {
    let r = records
        .iter()
        .filter(|r| r["benchmark"] == name)
        .nth(index)
        .unwrap_or_else(|| panic!("no {name} #{index} in {records:?}"));
    &r[field]
}
