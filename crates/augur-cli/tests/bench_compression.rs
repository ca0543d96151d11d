//! End-to-end tests of `augur bench --compression_type` (every engine's codec, the engine flag
//! `--compression` winning for Augur, refusals of codecs an engine lacks), of the bytes on
//! disk the records report, of `--distribution=strings` and `--dump-keys`, and of the raw and
//! stored bytes `augur stats` shows per level.

mod common;

use common::{augur, fails, ok, record};
use serde_json::Value;
use std::path::Path;

/// Runs `augur [GLOBAL...] --db DIR bench --json FILE ARGS...` with values inline and returns
/// the records.
fn bench(dir: &Path, global: &[&str], args: &[&str]) -> Vec<Value> {
    common::bench_json_with(dir, global, "--value-separation-threshold=1000000", args)
}

const FILL: &[&str] = &[
    "--num=4000",
    "--value_size=100",
    "--compression_ratio=0.5",
    "--benchmarks=fillrandom,compact,readrandom",
];

fn f(r: &Value, k: &str) -> f64 {
    r[k].as_f64().unwrap_or_else(|| panic!("no {k} in {r}"))
}

#[test]
fn compression_type_compresses_augur_values_and_records_bytes_on_disk() {
    let tmp = tempfile::tempdir().unwrap();
    let mut table_bytes = Vec::new();
    for codec in ["none", "lz4", "zstd"] {
        let dir = tmp.path().join(codec);
        let flag = format!("--compression_type={codec}");
        let recs = bench(&dir, &[], &[FILL, &[flag.as_str()]].concat());
        let shown = if codec == "zstd" { "zstd:3" } else { codec };
        for r in &recs {
            assert_eq!(r["config"]["compression"], shown, "{r}");
        }
        let c = record(&recs, "compact");
        // Bytes on disk: the tree's files, the whole directory, the user data.
        let tables = f(c, "table_bytes");
        assert!(tables > 0.0 && tables <= f(c, "db_bytes"), "{c}");
        assert!(f(c, "db_allocated_bytes") > 0.0, "{c}");
        assert_eq!(
            tables,
            f(c, "sstable_bytes") + f(c, "value_log_bytes"),
            "{c}"
        );
        // A full compaction leaves one version of each key: the raw bytes the tables hold
        // are the live user data.
        assert_eq!(f(c, "raw_user_bytes"), f(c, "live_bytes"), "{c}");
        assert_eq!(
            f(c, "raw_user_bytes"),
            f(c, "raw_key_bytes") + f(c, "raw_value_bytes")
        );
        assert!(
            (f(c, "table_space_amplification") - tables / f(c, "live_bytes")).abs() < 1e-9,
            "{c}"
        );
        let ratio = f(c, "value_compression_ratio");
        assert_eq!(
            ratio,
            f(c, "stored_value_bytes") / f(c, "raw_value_bytes"),
            "{c}"
        );
        if codec == "none" {
            assert_eq!(ratio, 1.0, "{c}");
        } else {
            assert!(ratio < 0.8, "{codec}: {ratio}");
        }
        let levels = c["levels_disk"].as_array().unwrap();
        assert!(!levels.is_empty(), "{c}");
        let level_raw: f64 = levels.iter().map(|l| f(l, "raw_value_bytes")).sum();
        assert_eq!(level_raw, f(c, "raw_value_bytes"));
        // The fill's record has the space fields too; the reads' do not.
        assert!(record(&recs, "fillrandom")["db_bytes"].is_u64());
        assert!(record(&recs, "readrandom")["table_bytes"].is_null());
        // The per-level fields of the statistics in every Augur record.
        let l = &c["stats"]["levels"];
        assert!(l[0]["raw_key_bytes"].is_u64(), "{l}");
        table_bytes.push(tables);
    }
    assert!(table_bytes[1] < 0.8 * table_bytes[0], "{table_bytes:?}");
    assert!(table_bytes[2] < table_bytes[1], "{table_bytes:?}");
}

#[test]
fn the_engine_flag_compression_wins_over_compression_type() {
    let tmp = tempfile::tempdir().unwrap();
    let recs = bench(
        &tmp.path().join("a"),
        &["--compression", "none"],
        &[FILL, &["--compression_type=lz4"]].concat(),
    );
    let c = record(&recs, "compact");
    assert_eq!(c["config"]["compression"], "none");
    assert_eq!(f(c, "value_compression_ratio"), 1.0);
    let recs = bench(
        &tmp.path().join("b"),
        &["--compression=zstd:5"],
        &[FILL, &["--compression_type=none"]].concat(),
    );
    let c = record(&recs, "compact");
    assert_eq!(c["config"]["compression"], "zstd:5");
    assert!(f(c, "value_compression_ratio") < 0.8, "{c}");
    // And with --compression, a codec Augur lacks does not matter to Augur.
    let recs = bench(
        &tmp.path().join("c"),
        &["--compression=lz4"],
        &[FILL, &["--compression_type=snappy"]].concat(),
    );
    assert_eq!(record(&recs, "compact")["config"]["compression"], "lz4");
}

#[test]
fn codecs_an_engine_lacks_are_refused_naming_the_ones_it_has() {
    let err = fails(augur(&["bench", "--num=10", "--compression_type=snappy"]));
    assert!(
        err.contains("augur has no snappy compression (it supports none, lz4, zstd)"),
        "{err}"
    );
    let err = fails(augur(&["bench", "--num=10", "--compression_type=zlib"]));
    assert!(err.contains("zlib"), "{err}");
}

#[cfg(feature = "leveldb")]
#[test]
fn leveldb_has_snappy_and_refuses_lz4() {
    let tmp = tempfile::tempdir().unwrap();
    let err = fails(augur(&[
        "--db",
        tmp.path().join("l").to_str().unwrap(),
        "bench",
        "--engine=leveldb",
        "--num=10",
        "--compression_type=lz4",
    ]));
    assert!(
        err.contains("leveldb has no lz4 compression (it supports none, snappy)"),
        "{err}"
    );
    let none = bench(
        &tmp.path().join("n"),
        &[],
        &[FILL, &["--engine=leveldb"]].concat(),
    );
    let snappy = bench(
        &tmp.path().join("s"),
        &[],
        &[FILL, &["--engine=leveldb", "--compression_type=snappy"]].concat(),
    );
    assert_eq!(
        record(&snappy, "compact")["config"]["compression"],
        "snappy"
    );
    let bytes = |r: &[Value]| f(record(r, "compact"), "table_bytes");
    assert!(
        bytes(&snappy) < 0.8 * bytes(&none),
        "{} vs {}",
        bytes(&snappy),
        bytes(&none)
    );
}

#[cfg(feature = "rocksdb")]
#[test]
fn rocksdb_compresses_with_every_codec() {
    let tmp = tempfile::tempdir().unwrap();
    let none = bench(
        &tmp.path().join("none"),
        &[],
        &[FILL, &["--engine=rocksdb"]].concat(),
    );
    let bytes = |r: &[Value]| f(record(r, "compact"), "table_bytes");
    for codec in ["snappy", "lz4", "zstd"] {
        let flag = format!("--compression_type={codec}");
        let r = bench(
            &tmp.path().join(codec),
            &[],
            &[FILL, &["--engine=rocksdb", flag.as_str()]].concat(),
        );
        assert_eq!(record(&r, "compact")["config"]["compression"], codec);
        assert!(bytes(&r) < 0.8 * bytes(&none), "{codec}");
    }
}

#[cfg(feature = "fjall")]
#[test]
fn fjall_has_lz4_and_refuses_zstd() {
    let tmp = tempfile::tempdir().unwrap();
    let err = fails(augur(&[
        "--db",
        tmp.path().join("z").to_str().unwrap(),
        "bench",
        "--engine=fjall",
        "--num=10",
        "--compression_type=zstd",
    ]));
    assert!(
        err.contains("fjall has no zstd compression (it supports none, lz4)"),
        "{err}"
    );
    let bytes = |r: &[Value]| f(record(r, "compact"), "table_bytes");
    let none = bench(
        &tmp.path().join("n"),
        &[],
        &[FILL, &["--engine=fjall"]].concat(),
    );
    let lz4 = bench(
        &tmp.path().join("l"),
        &[],
        &[FILL, &["--engine=fjall", "--compression_type=lz4"]].concat(),
    );
    assert!(bytes(&lz4) < 0.8 * bytes(&none));
}

/// The keys stored in the database, hex-encoded, in order.
fn stored_keys(dir: &Path) -> Vec<String> {
    ok(augur(&["--db", dir.to_str().unwrap(), "--hex", "scan"]))
        .lines()
        .map(|l| l.split('\t').next().unwrap().to_string())
        .collect()
}

#[test]
fn string_keys_are_a_key_source_and_dump_to_a_text_file() {
    let tmp = tempfile::tempdir().unwrap();
    let shape = [
        "--distribution=strings",
        "--num=3000",
        "--string-min-len=20",
        "--string-max-len=40",
        "--string-prefix-len=12",
    ];
    let reads = [
        "--benchmarks=fillrandom,readrandom,readmissing",
        "--reads=500",
    ];
    let generated = tmp.path().join("generated");
    let recs = bench(&generated, &[], &[&shape[..], &reads].concat());
    let fill = record(&recs, "fillrandom");
    assert_eq!(fill["ops"], 3000, "each key written once");
    assert_eq!(fill["config"]["key_source"], "distribution:strings");
    assert_eq!(fill["config"]["string_shape"]["prefix_len"], 12);
    assert_eq!(record(&recs, "readrandom")["found"], 500);
    assert_eq!(record(&recs, "readmissing")["found"], 0);
    let keys = stored_keys(&generated);
    assert_eq!(keys.len(), 3000);
    for k in &keys {
        let k = hex::decode(k).unwrap();
        assert!((20..=40).contains(&k.len()), "{k:?}");
        assert!(k.iter().all(|b| (b'!'..=b'~').contains(b)), "{k:?}");
    }
    let prefix = &keys[keys.len() / 2][..2 * 12];
    assert!(keys.iter().filter(|k| k.starts_with(prefix)).count() > 2000);

    // --dump-keys writes the same keys for --keys-text, and runs nothing.
    let file = tmp.path().join("keys.txt");
    let dump = format!("--dump-keys={}", file.display());
    let out = ok(augur(&[&["bench"], &shape[..], &[dump.as_str()]].concat()));
    assert!(out.is_empty(), "{out}");
    let text = std::fs::read_to_string(&file).unwrap();
    assert_eq!(text.lines().count(), 3000);
    let from_file = tmp.path().join("from-file");
    let keys_text = format!("--keys-text={}", file.display());
    let recs = bench(&from_file, &[], &[keys_text.as_str(), reads[0], reads[1]]);
    assert_eq!(record(&recs, "fillrandom")["ops"], 3000);
    assert_eq!(stored_keys(&from_file), keys);
    // Only text keys can be dumped.
    let err = fails(augur(&["bench", "--num=10", dump.as_str()]));
    assert!(err.contains("text keys"), "{err}");
    // A shape that cannot make --num distinct keys is refused.
    let err = fails(augur(&[
        "bench",
        "--distribution=strings",
        "--num=100",
        "--string-min-len=1",
        "--string-max-len=1",
        "--string-prefix-len=0",
    ]));
    assert!(err.contains("too few"), "{err}");
}

#[test]
fn stats_show_raw_and_stored_bytes_per_level() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let d = db.to_str().unwrap();
    let csv = tmp.path().join("rows.csv");
    let rows: String = (0..200)
        .map(|i| format!("key{i:04},{}\n", "v".repeat(200)))
        .collect();
    std::fs::write(&csv, rows).unwrap();
    // The codec applies where tables are written (the load's or the flush's process).
    ok(augur(&[
        "--db",
        d,
        "--compression=lz4",
        "load",
        "--csv",
        csv.to_str().unwrap(),
    ]));
    ok(augur(&["--db", d, "--compression=lz4", "flush"]));
    let text = ok(augur(&["--db", d, "stats"]));
    for column in [
        "raw key bytes",
        "raw value bytes",
        "stored value bytes",
        "value ratio",
    ] {
        assert!(text.contains(column), "{column} missing:\n{text}");
    }
    assert!(
        text.contains("1400 raw key bytes, 40000 raw value bytes"),
        "{text}"
    );
    let j: Value = serde_json::from_str(&ok(augur(&["--db", d, "--json", "stats"]))).unwrap();
    assert_eq!(j["raw_key_bytes"], 1400, "{j}");
    assert_eq!(j["raw_value_bytes"], 40_000, "{j}");
    let stored = j["stored_value_bytes"].as_u64().unwrap();
    assert!(stored < 40_000 / 4, "{j}");
    let ratio = j["value_compression_ratio"].as_f64().unwrap();
    assert!((ratio - stored as f64 / 40_000.0).abs() < 1e-12, "{j}");
    let levels = j["levels"].as_array().unwrap();
    let with_files: Vec<&Value> = levels.iter().filter(|l| l["files"] != 0).collect();
    assert_eq!(with_files.len(), 1, "{j}");
    assert_eq!(with_files[0]["raw_value_bytes"], 40_000);
    assert!(levels
        .iter()
        .any(|l| l["value_compression_ratio"].is_null()));
}
