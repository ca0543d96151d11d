//! End-to-end tests of the memory side of `augur bench` and `augur stats` (issue 27):
//! `--use_direct_reads` and `--cache_size` reach Augur (direct reads through a cache of that
//! size, with its hits, misses and device reads per benchmark), conflicting engine flags are
//! refused, every record carries the benchmark's peak RSS and Augur's memory budget, the
//! hotspot read distribution sends the configured share of lookups to the first keys, and
//! `augur stats` shows the cache, the open-file bound and the pinned bytes. The peers' side
//! is in `bench_peers.rs`, `bench_leveldb.rs` and `bench_fjall.rs` (behind their features).

mod common;

use common::peers::field;
use common::{augur, bench_json_with, fails_with_error, ok, record, stdout};
use serde_json::Value;
use std::path::Path;

/// A temporary directory on a disk file system: `O_DIRECT` needs one, and `/tmp` may be
/// tmpfs, so under `/var/tmp` when it exists.
fn disk_tempdir() -> tempfile::TempDir {
    if Path::new("/var/tmp").is_dir() {
        tempfile::tempdir_in("/var/tmp").unwrap()
    } else {
        tempfile::tempdir().unwrap()
    }
}

/// `augur bench` with values inline in `dir`, returning the records.
fn bench(dir: &Path, global: &[&str], args: &[&str]) -> Vec<Value> {
    bench_json_with(dir, global, "--value-separation-threshold=1024", args)
}

#[test]
fn direct_reads_and_cache_size_reach_augur_and_its_records() {
    let tmp = disk_tempdir();
    let r = bench(
        &tmp.path().join("direct"),
        &[],
        &[
            "--use_direct_reads=1",
            "--cache_size=1048576",
            "--write_buffer_size=4194304",
            "--num=20000",
            "--benchmarks=fillrandom,flush,readrandom",
        ],
    );
    let read = record(&r, "readrandom");
    let config = &read["config"];
    assert_eq!(config["read_mode"], "direct", "{config}");
    assert_eq!(config["use_direct_reads"], true, "{config}");
    assert_eq!(config["cache_bytes"], 1 << 20, "{config}");
    assert_eq!(read["stats"]["reads"]["cache"]["capacity_bytes"], 1 << 20);
    assert_eq!(read["cache_capacity_bytes"], 1 << 20, "{read}");
    for f in [
        "cache_misses",
        "device_reads",
        "device_bytes",
        "pinned_bytes",
    ] {
        assert!(field(&r, "readrandom", f) > 0, "{f}: {read}");
    }
    let used = field(&r, "readrandom", "cache_used_bytes");
    assert!(used > 0 && used <= 1 << 20, "{read}");
    let ratio = read["cache_hit_ratio"].as_f64().unwrap();
    assert!((0.0..1.0).contains(&ratio), "{read}");
    let per_op = read["device_reads_per_op"].as_f64().unwrap();
    let expected = field(&r, "readrandom", "device_reads") as f64 / 20_000.0;
    assert!((per_op - expected).abs() < 1e-9, "{read}");
    // The RSS of the benchmark and issue 27's budget: cache + 3 memtables + pinned + 64 MiB.
    assert!(
        read["benchmark_peak_rss_mb"].as_f64().unwrap() > 1.0,
        "{read}"
    );
    let budget = &read["memory_budget"];
    let pinned = field(&r, "readrandom", "pinned_bytes");
    assert_eq!(budget["pinned_bytes"], pinned, "{budget}");
    assert_eq!(
        budget["total_bytes"],
        (1u64 << 20) + 3 * (4 << 20) + pinned + (64 << 20),
        "{budget}"
    );
    assert!(read["rss_within_budget"].is_boolean(), "{read}");
    // A fresh fill opens the database during the benchmark: its counters start there.
    assert_eq!(record(&r, "fillrandom")["cache_capacity_bytes"], 1 << 20);
}

#[test]
fn without_the_flags_every_engine_gets_db_bench_cache_and_buffered_reads() {
    let tmp = tempfile::tempdir().unwrap();
    let r = bench(
        &tmp.path().join("db"),
        &[],
        &["--num=2000", "--benchmarks=fillrandom,flush,readrandom"],
    );
    let read = record(&r, "readrandom");
    assert_eq!(read["config"]["use_direct_reads"], false);
    assert_eq!(read["config"]["cache_bytes"], 8 << 20);
    assert_eq!(read["config"]["read_mode"], "mmap");
    assert!(
        read.get("cache_hits").is_none(),
        "no cache of Augur's own: {read}"
    );
    assert!(field(&r, "readrandom", "pinned_bytes") > 0, "{read}");
    assert!(read["stats"]["reads"]["cache"].is_null(), "{read}");
    assert!(read["benchmark_peak_rss_mb"].is_number(), "{read}");
    // Augur's --cache-mb sets the run's cache when --cache_size is not given.
    let r = bench(
        &tmp.path().join("mb"),
        &["--cache-mb", "2"],
        &["--num=100", "--benchmarks=fillseq"],
    );
    assert_eq!(record(&r, "fillseq")["config"]["cache_bytes"], 2 << 20);
}

#[test]
fn flags_contradicting_the_engine_flags_are_refused() {
    let tmp = disk_tempdir();
    let db = tmp.path().join("db");
    let db = db.to_str().unwrap();
    let run = |global: &[&str], args: &[&str]| {
        let mut all = global.to_vec();
        all.extend(["--db", db, "bench", "--num=10", "--benchmarks=fillseq"]);
        all.extend_from_slice(args);
        augur(&all)
    };
    let e = fails_with_error(run(&["--read-mode", "mmap"], &["--use_direct_reads=1"]));
    assert!(
        e.contains("--use_direct_reads=1 conflicts with --read-mode mmap"),
        "{e}"
    );
    let e = fails_with_error(run(
        &["--read-mode", "direct"],
        &["--use_direct_reads=false"],
    ));
    assert!(
        e.contains("--use_direct_reads=0 conflicts with --read-mode direct"),
        "{e}"
    );
    let e = fails_with_error(run(&["--cache-mb", "2"], &["--cache_size=1048576"]));
    assert!(
        e.contains("--cache_size=1048576 conflicts with --cache-mb (2097152 bytes)"),
        "{e}"
    );
    assert!(
        !Path::new(db).exists(),
        "refused before anything was created"
    );
    // Flags that agree are fine.
    ok(run(
        &["--read-mode", "direct", "--cache-mb", "1"],
        &[
            "--use_direct_reads",
            "--cache_size=1048576",
            "--value-separation-threshold=0",
        ],
    ));
    let e = fails_with_error(run(&[], &["--use_direct_reads=maybe"]));
    assert!(e.contains("expected true/false or 1/0"), "{e}");
}

/// Keys 0..250 written, lookups drawn over 0..1000: a lookup finds its key exactly when it
/// falls in the first quarter of the key numbers, so the found share measures the chooser.
#[test]
fn hotspot_reads_send_the_ops_fraction_to_the_first_keys() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    bench(&dir, &[], &["--num=250", "--benchmarks=fillseq"]);
    let reads = |extra: &[&str]| {
        let mut args = vec![
            "--use_existing_db=1",
            "--num=1000",
            "--reads=20000",
            "--benchmarks=readrandom,seekrandom",
        ];
        args.extend_from_slice(extra);
        bench(&dir, &[], &args)
    };
    let share = |r: &[Value], name: &str| field(r, name, "found") as f64 / 20_000.0;
    let hot = reads(&[
        "--read_distribution=hotspot",
        "--hotspot_data_fraction=0.25",
        "--hotspot_opn_fraction=0.8",
    ]);
    for name in ["readrandom", "seekrandom"] {
        let s = share(&hot, name);
        assert!((s - 0.8).abs() < 0.02, "{name}: {s}");
        let rec = record(&hot, name);
        assert_eq!(rec["read_distribution"], "hotspot", "{rec}");
        assert_eq!(rec["hotspot_data_fraction"], 0.25, "{rec}");
        assert_eq!(rec["hotspot_ops_fraction"], 0.8, "{rec}");
    }
    assert_eq!(
        record(&hot, "readrandom")["config"]["read_distribution"],
        "hotspot"
    );
    // The same seed draws the same keys: a second run finds exactly as many.
    let again = reads(&[
        "--read_distribution=hotspot",
        "--hotspot-data-fraction=0.25",
        "--hotspot-ops-fraction=0.8",
    ]);
    assert_eq!(
        field(&again, "readrandom", "found"),
        field(&hot, "readrandom", "found")
    );
    // Uniform (the default) finds about a quarter, and --read_distribution=uniform is the
    // very same draw.
    let plain = reads(&[]);
    assert!((share(&plain, "readrandom") - 0.25).abs() < 0.02);
    assert!(record(&plain, "readrandom")
        .get("read_distribution")
        .is_none());
    let uniform = reads(&["--read_distribution=uniform"]);
    assert_eq!(
        field(&uniform, "readrandom", "found"),
        field(&plain, "readrandom", "found")
    );
}

#[test]
fn stats_show_the_cache_the_open_file_bound_and_pinned_bytes() {
    let tmp = disk_tempdir();
    let db = tmp.path().join("db");
    let db = db.to_str().unwrap();
    let flags = [
        "--db",
        db,
        "--read-mode",
        "direct",
        "--cache-mb",
        "1",
        "--max-open-files",
        "8",
    ];
    let with = |args: &[&str]| {
        let mut all = flags.to_vec();
        all.extend_from_slice(args);
        augur(&all)
    };
    ok(with(&["put", "apple", "red"]));
    ok(with(&["flush"]));
    let j: Value = serde_json::from_str(&ok(with(&["stats", "--json"]))).unwrap();
    assert_eq!(j["reads"]["cache"]["capacity_bytes"], 1 << 20, "{j}");
    assert!(
        j["reads"]["cache"]["misses"].as_u64().unwrap() > 0,
        "opening reads: {j}"
    );
    assert_eq!(j["reads"]["open_files"]["limit"], 8, "{j}");
    let pinned = j["pinned_bytes"].as_u64().unwrap();
    assert!(pinned > 0, "{j}");
    assert_eq!(j["levels"][0]["pinned_bytes"], pinned, "{j}");
    let text = stdout(&with(&["stats"]));
    for part in [
        "page cache (direct reads): 1048576 B capacity",
        "hit ratio",
        "device reads",
        "open files: limit 8",
        "pinned bytes",
        &format!("{pinned} pinned bytes"),
    ] {
        assert!(text.contains(part), "{part} missing: {text}");
    }
    // Read by mmap without a bound: neither is shown, the JSON keeps its shape.
    let j: Value = serde_json::from_str(&ok(augur(&["--db", db, "stats", "--json"]))).unwrap();
    assert!(
        j["reads"]["cache"].is_null() && j["reads"]["open_files"].is_null(),
        "{j}"
    );
    let text = stdout(&augur(&["--db", db, "stats"]));
    assert!(
        !text.contains("page cache") && !text.contains("open files"),
        "{text}"
    );
}
