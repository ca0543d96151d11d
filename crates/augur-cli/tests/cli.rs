//! End-to-end tests of the `augur` binary: data commands, --hex and --json, bulk load and
//! verify (on a generated SOSD file and, in release builds, a real dataset), the exit-status
//! contract (0 ok, 1 key not found, 2 error) and every benchmark of `augur bench`.

mod common;

use common::{augur as augur_bare, augur_db as augur, fails_with_error as fails};
use common::{files_ending, ok, stderr, stdout};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;

/// Asserts success and parses stdout as one JSON value.
fn ok_json(o: Output) -> Value {
    let out = ok(o);
    serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
}

/// Writes an SOSD key file (count, then keys, little-endian u64).
fn write_sosd(path: &Path, keys: &[u64]) {
    let mut bytes = (keys.len() as u64).to_le_bytes().to_vec();
    for k in keys {
        bytes.extend_from_slice(&k.to_le_bytes());
    }
    std::fs::write(path, bytes).unwrap();
}

/// 5,000 sorted distinct keys spread over the u64 range.
fn generated_keys() -> Vec<u64> {
    (0..5000u64)
        .map(|i| i * 3_689_348_814_741_910 + (i * i) % 977)
        .collect()
}

#[test]
fn put_get_del_scan_roundtrip_utf8() {
    let t = tempfile::tempdir().unwrap();
    let db = t.path().join("db");
    ok(augur(&db, &["put", "apple", "red"]));
    ok(augur(&db, &["put", "banana", "yellow"]));
    ok(augur(&db, &["put", "cherry", "dark red ünïcode"]));
    assert_eq!(ok(augur(&db, &["get", "apple"])), "red\n");
    assert_eq!(ok(augur(&db, &["get", "cherry"])), "dark red ünïcode\n");
    assert_eq!(
        ok(augur(&db, &["scan"])),
        "apple\tred\nbanana\tyellow\ncherry\tdark red ünïcode\n"
    );
    assert_eq!(
        ok(augur(&db, &["scan", "--from", "b", "--to", "cherry"])),
        "banana\tyellow\n"
    );
    assert_eq!(
        ok(augur(&db, &["scan", "--reverse", "--limit", "2"])),
        "cherry\tdark red ünïcode\nbanana\tyellow\n"
    );
    ok(augur(&db, &["del", "banana"]));
    assert_eq!(augur(&db, &["get", "banana"]).status.code(), Some(1));
    assert_eq!(
        ok(augur(&db, &["scan"])),
        "apple\tred\ncherry\tdark red ünïcode\n"
    );
    // Overwrite, and the value survives flush and compaction.
    ok(augur(&db, &["put", "apple", "green"]));
    ok(augur(&db, &["flush"]));
    ok(augur(&db, &["compact"]));
    assert_eq!(ok(augur(&db, &["get", "apple"])), "green\n");
}

#[test]
fn put_with_ttl_expires_and_ttl_reports_it() {
    let t = tempfile::tempdir().unwrap();
    let db = t.path().join("db");
    ok(augur(&db, &["put", "long", "1", "--ttl", "3600"]));
    ok(augur(&db, &["put", "short", "2", "--ttl", "0.05"]));
    ok(augur(&db, &["put", "past", "3", "--expire-at", "1000"]));
    ok(augur(&db, &["put", "plain", "4"]));
    let left: u64 = ok(augur(&db, &["ttl", "long"])).trim().parse().unwrap();
    assert!((3_590_000..=3_600_000).contains(&left), "{left}");
    assert_eq!(ok(augur(&db, &["ttl", "plain"])), "none\n");
    let j = ok_json(augur(&db, &["ttl", "plain", "--json"]));
    assert!(j["ttl_ms"].is_null() && j["expire_at_ms"].is_null(), "{j}");
    assert_eq!(augur(&db, &["get", "past"]).status.code(), Some(1));
    assert_eq!(augur(&db, &["ttl", "absent"]).status.code(), Some(1));
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert_eq!(augur(&db, &["get", "short"]).status.code(), Some(1));
    assert_eq!(ok(augur(&db, &["scan"])), "long\t1\nplain\t4\n");
    fails(augur(&db, &["put", "k", "v", "--ttl", "-1"]));
    fails(augur(
        &db,
        &["put", "k", "v", "--ttl", "1", "--expire-at", "5"],
    ));
}

#[test]
fn hex_switches_input_and_output() {
    let t = tempfile::tempdir().unwrap();
    let db = t.path().join("db");
    ok(augur(&db, &["--hex", "put", "00ff10", "deadbeef"]));
    ok(augur(&db, &["put", "--hex", "0001", "ff"]));
    assert_eq!(ok(augur(&db, &["--hex", "get", "00ff10"])), "deadbeef\n");
    assert_eq!(
        ok(augur(&db, &["--hex", "scan"])),
        "0001\tff\n00ff10\tdeadbeef\n"
    );
    let j = ok_json(augur(&db, &["--hex", "get", "00ff10", "--json"]));
    assert_eq!(j["key"], "00ff10");
    assert_eq!(j["value"], "deadbeef");
    // Without --hex, bytes that are not UTF-8 are reported in a `_hex` field.
    let j = ok_json(augur(&db, &["scan", "--json"]));
    assert_eq!(j["count"], 2);
    assert_eq!(j["entries"][0]["key"], "\u{0}\u{1}");
    assert_eq!(j["entries"][0]["value_hex"], "ff");
    // A UTF-8 key given in hex reads back as text.
    ok(augur(&db, &["--hex", "put", "6b6579", "76616c"]));
    assert_eq!(ok(augur(&db, &["get", "key"])), "val\n");
}

#[test]
fn missing_key_exits_1_with_empty_stdout() {
    let t = tempfile::tempdir().unwrap();
    let db = t.path().join("db");
    ok(augur(&db, &["put", "a", "1"]));
    for args in [
        &["get", "b"][..],
        &["get", "b", "--json"],
        &["--json", "get", "b"],
    ] {
        let o = augur(&db, args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        assert!(o.stdout.is_empty(), "{args:?}: {}", stdout(&o));
        assert!(stderr(&o).contains("not found"), "{}", stderr(&o));
    }
}

#[test]
fn every_command_prints_one_json_object() {
    let t = tempfile::tempdir().unwrap();
    let db = t.path().join("db");
    let j = ok_json(augur(
        &db,
        &[
            "--value-separation-threshold",
            "0",
            "put",
            "k",
            "v",
            "--json",
        ],
    ));
    assert_eq!(j["ok"], true);
    let j = ok_json(augur(&db, &["--json", "get", "k"]));
    assert_eq!(j["value"], "v");
    let j = ok_json(augur(&db, &["scan", "--json"]));
    assert_eq!(j["entries"][0]["key"], "k");
    let j = ok_json(augur(&db, &["flush", "--json"]));
    assert!(j["files"].as_u64().unwrap() >= 1, "{j}");
    let j = ok_json(augur(&db, &["compact", "--json"]));
    assert_eq!(j["ok"], true);
    let j = ok_json(augur(&db, &["stats", "--json"]));
    assert!(j["levels"].as_array().unwrap().len() >= 2, "{j}");
    assert!(j["value_log"].as_array().is_some(), "{j}");
    assert!(j["write_amplification"].is_number(), "{j}");
    assert_eq!(j["counters"]["writes"], 0);
    let j = ok_json(augur(&db, &["verify", "--json"]));
    assert_eq!(j["ok"], true);
    assert_eq!(j["table_entries_checked"], 1);
    let j = ok_json(augur(&db, &["gc", "--json"]));
    assert!(j["segments_collected"].is_u64(), "{j}");
    let j = ok_json(augur(&db, &["del", "k", "--json"]));
    assert_eq!(j["ok"], true);
}

#[test]
fn gc_collects_overwritten_separated_values() {
    let t = tempfile::tempdir().unwrap();
    let db = t.path().join("db");
    let csv = t.path().join("kv.csv");
    for round in 0..3 {
        let lines: String = (0..300)
            .map(|i| format!("key{i:04},value-{round}-{i}\n"))
            .collect();
        std::fs::write(&csv, lines).unwrap();
        let csv_arg = csv.to_str().unwrap();
        ok(augur(
            &db,
            &[
                "--value-separation-threshold",
                "0",
                // Automatic GC off: it could collect the segments before the explicit `gc`.
                "--value-log-gc-ratio",
                "2",
                "load",
                "--csv",
                csv_arg,
            ],
        ));
    }
    let no_auto_gc = ["--value-log-gc-ratio", "2"];
    ok(augur(&db, &[&no_auto_gc[..], &["compact"]].concat()));
    let s = ok_json(augur(
        &db,
        &[&no_auto_gc[..], &["stats", "--json"]].concat(),
    ));
    assert!(s["value_log_garbage_bytes"].as_u64().unwrap() > 0, "{s}");
    let j = ok_json(augur(
        &db,
        &[&no_auto_gc[..], &["gc", "--all", "--json"]].concat(),
    ));
    assert!(j["segments_collected"].as_u64().unwrap() >= 1, "{j}");
    assert_eq!(ok(augur(&db, &["get", "key0123"])), "value-2-123\n");
    assert_eq!(ok_json(augur(&db, &["scan", "--json"]))["count"], 300);
    ok(augur(&db, &["verify"]));
}

#[test]
fn load_csv_with_hex_and_bad_lines() {
    let t = tempfile::tempdir().unwrap();
    let db = t.path().join("db");
    let csv = t.path().join("kv.csv");
    std::fs::write(&csv, "6131,7631\r\n\n6132,7632\n").unwrap();
    let j = ok_json(augur(
        &db,
        &["--hex", "load", "--csv", csv.to_str().unwrap(), "--json"],
    ));
    assert_eq!(j["loaded"], 2);
    assert_eq!(ok(augur(&db, &["get", "a1"])), "v1\n");
    // Split at the first comma only.
    std::fs::write(&csv, "k,v,w\n").unwrap();
    ok(augur(&db, &["load", "--csv", csv.to_str().unwrap()]));
    assert_eq!(ok(augur(&db, &["get", "k"])), "v,w\n");
    std::fs::write(&csv, "good,1\nno comma here\n").unwrap();
    let err = fails(augur(&db, &["load", "--csv", csv.to_str().unwrap()]));
    assert!(err.contains("line 2"), "{err}");
}

/// Loads `keys` from an SOSD file, verifies them, then breaks one key two ways.
fn load_and_verify(keys_file: &Path, n_keys: u64, probe: u64) {
    let t = tempfile::tempdir().unwrap();
    let db = t.path().join("db");
    let f = keys_file.to_str().unwrap();
    let j = ok_json(augur(
        &db,
        &["load", "--keys", f, "--value-size", "24", "--json"],
    ));
    assert_eq!(j["loaded"], n_keys);
    let j = ok_json(augur(
        &db,
        &["verify", "--keys", f, "--value-size", "24", "--json"],
    ));
    assert_eq!(j["ok"], true, "{j}");
    assert_eq!(j["keys_checked"], n_keys);
    assert_eq!(j["keys_missing"], 0);
    // The wrong value size is reported as wrong values.
    let o = augur(
        &db,
        &["verify", "--keys", f, "--value-size", "25", "--json"],
    );
    assert_eq!(o.status.code(), Some(2));
    let j: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(j["keys_wrong_value"], n_keys);
    // ... with a hint naming the size the values have (issue 15).
    assert_eq!(
        j["hint"], "values are 24 bytes, not 25: pass --value-size 24",
        "{j}"
    );
    let o = augur(&db, &["verify", "--keys", f, "--value-size", "64"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stdout(&o).contains("hint: values are 24 bytes, not 64"),
        "{}",
        stdout(&o)
    );
    assert!(
        stderr(&o).contains("pass --value-size 24"),
        "{}",
        stderr(&o)
    );
    // Keys are stored big-endian, so a scan is in numeric order.
    let j = ok_json(augur(&db, &["--hex", "scan", "--limit", "2", "--json"]));
    let first = u64::from_str_radix(j["entries"][0]["key"].as_str().unwrap(), 16).unwrap();
    let second = u64::from_str_radix(j["entries"][1]["key"].as_str().unwrap(), 16).unwrap();
    assert!(first < second);
    assert_eq!(j["entries"][0]["value"].as_str().unwrap().len(), 48);
    // Delete one key: verify fails and counts it as missing.
    let probe_hex = hex::encode(probe.to_be_bytes());
    ok(augur(&db, &["--hex", "get", &probe_hex]));
    ok(augur(&db, &["--hex", "del", &probe_hex]));
    let o = augur(&db, &["verify", "--keys", f, "--value-size", "24"]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(
        stdout(&o).contains("keys missing:              1"),
        "{}",
        stdout(&o)
    );
    assert!(
        stderr(&o).contains("error: verification failed"),
        "{}",
        stderr(&o)
    );
    // Put it back with another value: still a failure, now a wrong value.
    ok(augur(&db, &["--hex", "put", &probe_hex, "00"]));
    let o = augur(
        &db,
        &["verify", "--keys", f, "--value-size", "24", "--json"],
    );
    assert_eq!(o.status.code(), Some(2));
    let j: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(j["keys_missing"], 0);
    assert_eq!(j["keys_wrong_value"], 1);
    assert_eq!(j["ok"], false);
    // A value that is not `load`'s at any size gives no value-size hint.
    assert!(j.get("hint").is_none(), "{j}");
}

#[test]
fn load_generated_sosd_file_then_verify_detects_missing_and_wrong_keys() {
    let t = tempfile::tempdir().unwrap();
    let keys = generated_keys();
    let file = t.path().join("keys.u64");
    write_sosd(&file, &keys);
    load_and_verify(&file, keys.len() as u64, keys[1234]);
}

#[test]
fn load_real_dataset_in_release_builds() {
    // 144k real keys (S2 cell ids); in debug builds the generated file above covers this.
    // `shared/` sits beside the repository (in CI too).
    let file = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/datasets/geonames_cities_s2cells.u64"
    ));
    if cfg!(debug_assertions) || !file.exists() {
        return;
    }
    let bytes = std::fs::read(&file).unwrap();
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap());
    let probe = u64::from_le_bytes(bytes[8 + 8 * 777..8 + 8 * 778].try_into().unwrap());
    load_and_verify(&file, n, probe);
}

#[test]
fn bad_inputs_exit_2_with_an_error_message() {
    let t = tempfile::tempdir().unwrap();
    let db = t.path().join("db");
    ok(augur(&db, &["put", "a", "1"]));
    // Bad hex.
    fails(augur(&db, &["--hex", "put", "zz", "00"]));
    fails(augur(&db, &["--hex", "get", "abc"]));
    fails(augur(&db, &["--hex", "scan", "--from", "0x"]));
    // Missing key file, bad SOSD headers.
    let err = fails(augur(&db, &["load", "--keys", "/nonexistent/keys.u64"]));
    assert!(err.contains("/nonexistent/keys.u64"), "{err}");
    let bad = t.path().join("bad.u64");
    std::fs::write(&bad, [1u8, 2, 3]).unwrap();
    let err = fails(augur(&db, &["load", "--keys", bad.to_str().unwrap()]));
    assert!(err.contains("not an SOSD key file"), "{err}");
    let mut lying = 10u64.to_le_bytes().to_vec();
    lying.extend_from_slice(&5u64.to_le_bytes());
    std::fs::write(&bad, &lying).unwrap();
    let err = fails(augur(&db, &["verify", "--keys", bad.to_str().unwrap()]));
    assert!(err.contains("announces 10 keys"), "{err}");
    fails(augur(&db, &["load", "--csv", "/nonexistent/kv.csv"]));
    // A directory that is not an Augur database, and a missing one.
    let foreign = t.path().join("foreign");
    std::fs::create_dir(&foreign).unwrap();
    std::fs::write(foreign.join("notes.txt"), "hello").unwrap();
    let err = fails(augur(&foreign, &["put", "a", "1"]));
    assert!(err.contains("not an Augur database"), "{err}");
    let missing = t.path().join("missing");
    fails(augur(&missing, &["get", "a"]));
    fails(augur(&missing, &["scan"]));
    fails(augur(&missing, &["--no-create", "put", "a", "1"]));
    assert!(
        !missing.exists(),
        "a read or --no-create must not create the database"
    );
    // A path that is a file.
    fails(augur(&foreign.join("notes.txt"), &["get", "a"]));
    // No --db.
    let err = fails(augur_bare(&["get", "a"]));
    assert!(err.contains("--db"), "{err}");
    // Bad option values.
    fails(augur(&db, &["--memtable-mb", "0", "put", "a", "1"]));
    fails(augur(&db, &["--read-mode", "telepathy", "get", "a"]));
    // The database still works afterwards.
    assert_eq!(ok(augur(&db, &["get", "a"])), "1\n");
}

#[test]
fn read_modes_give_the_same_answers() {
    let t = tempfile::tempdir().unwrap();
    let db = t.path().join("db");
    ok(augur(
        &db,
        &["--value-separation-threshold", "4", "put", "short", "abc"],
    ));
    ok(augur(
        &db,
        &[
            "--value-separation-threshold",
            "4",
            "put",
            "long",
            "abcdefgh",
        ],
    ));
    ok(augur(&db, &["flush"]));
    for mode in ["mmap", "pread"] {
        assert_eq!(
            ok(augur(&db, &["--read-mode", mode, "get", "long"])),
            "abcdefgh\n"
        );
        assert_eq!(
            ok(augur(&db, &["--read-mode", mode, "scan"])),
            "long\tabcdefgh\nshort\tabc\n"
        );
    }
}

#[test]
fn bench_runs_every_benchmark_and_writes_json() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("bench");
    let json = t.path().join("out.json");
    let all = "fillseq,fillrandom,overwrite,readrandom,readmissing,readrandomwriterandom,\
               readseq,readreverse,seekrandom,deleteseq,deleterandom,flush,compact,stats";
    let names: Vec<&str> = all.split(',').map(str::trim).collect();
    let benchmarks = format!("--benchmarks={}", names.join(","));
    let out = ok(augur(
        &dir,
        &[
            "bench",
            &benchmarks,
            "--num",
            "300",
            "--histogram",
            "--value-separation-threshold",
            "32",
            "--json",
            json.to_str().unwrap(),
        ],
    ));
    for name in &names[..names.len() - 1] {
        assert!(
            out.contains(&format!("{name:<12} : ")),
            "{name} missing:\n{out}"
        );
    }
    assert!(out.contains("micros/op"), "{out}");
    assert!(out.contains("latency us: p50"), "{out}");
    assert!(out.contains("level"), "stats table missing:\n{out}");
    // readmissing never finds anything; readrandom after fills finds something.
    assert!(out.contains("(0 of 300 found)"), "{out}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let records = v.as_array().unwrap();
    assert_eq!(records.len(), names.len() - 1, "stats is not a measurement");
    for r in records {
        assert_eq!(r["engine"], "augur");
        for key in [
            "ops",
            "seconds",
            "micros_per_op",
            "ops_per_sec",
            "p50_us",
            "p99_us",
            "p999_us",
        ] {
            assert!(r[key].is_number(), "{key} in {r}");
        }
        assert!(r.get("write_amplification").is_some(), "{r}");
        assert_eq!(r["config"]["key_size"], 16);
        assert_eq!(r["config"]["value_separation_threshold"], 32);
    }
    let fill = &records[1];
    assert_eq!(fill["benchmark"], "fillrandom");
    assert!(
        fill["write_amplification"].as_f64().unwrap() >= 1.0,
        "{fill}"
    );
    let read = records
        .iter()
        .find(|r| r["benchmark"] == "readseq")
        .unwrap();
    assert!(read["ops"].as_u64().unwrap() > 0);
    // --use_existing_db skips fills and reads what is there.
    let out = ok(augur(
        &dir,
        &[
            "bench",
            "--benchmarks=fillrandom,readseq",
            "--num=300",
            "--use_existing_db=1",
        ],
    ));
    assert!(out.contains("fillrandom   : skipped"), "{out}");
}

#[test]
fn bench_default_runs_inline_and_separated_and_rejects_bad_flags() {
    let o = augur_bare(&["bench", "--num", "500", "--json"]);
    let out = ok(o);
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    let records = v.as_array().unwrap();
    let labels: Vec<&str> = records
        .iter()
        .map(|r| r["config"]["label"].as_str().unwrap())
        .collect();
    let expected: Vec<&str> = ["inline"; 4].into_iter().chain(["separated"; 4]).collect();
    assert_eq!(labels, expected);
    assert_eq!(records[0]["benchmark"], "fillrandom");
    assert_eq!(records[1]["benchmark"], "flush");
    assert!(records[4]["config"]["value_separation_threshold"] == 0);
    assert!(records[0]["config"]["value_separation_threshold"].is_null());
    fails(augur_bare(&[
        "bench",
        "--benchmarks=fillrandom,teleport",
        "--num=10",
    ]));
    fails(augur_bare(&["bench", "--num=0"]));
    fails(augur_bare(&[
        "bench",
        "--compression_type=snappy",
        "--num=10",
    ]));
    // Refuses to wipe a directory that is not an Augur database.
    let t = tempfile::tempdir().unwrap();
    std::fs::write(t.path().join("precious.txt"), "keep me").unwrap();
    let err = fails(augur(
        t.path(),
        &["bench", "--num=10", "--value-separation-threshold=0"],
    ));
    assert!(err.contains("precious.txt"), "{err}");
    assert!(t.path().join("precious.txt").exists());
}

#[test]
fn every_learning_policy_is_accepted_and_stats_show_learning() {
    let t = tempfile::tempdir().unwrap();
    let db = t.path().join("db");
    ok(augur(&db, &["put", "k", "v"]));
    ok(augur(&db, &["flush"]));
    for policy in [
        "never",
        "at-build",
        "always",
        "cost-benefit",
        "lazy",
        "offline",
    ] {
        let j = ok_json(augur(&db, &["--learning", policy, "--json", "get", "k"]));
        assert_eq!(j["value"], "v", "{policy}");
    }
    let j = ok_json(augur(
        &db,
        &[
            "--learning",
            "lazy",
            "--learning-wait-ms",
            "0",
            "stats",
            "--json",
        ],
    ));
    assert!(j["learning"]["model_path_fraction"].is_number(), "{j}");
    assert!(j["learning"]["models_built"].is_u64(), "{j}");
    assert!(j["levels"][0]["models_wasted"].is_u64(), "{j}");
    assert!(j["levels"][0]["avg_baseline_lookup_ns"].is_u64(), "{j}");
    // Issue 15: the text shows the populated levels only, and the learning table only after
    // lookups (none in a fresh `stats` process); --all shows all seven levels and the table.
    let text = ok(augur(&db, &["stats"]));
    assert!(!text.contains("lookups +"), "{text}");
    let all = ok(augur(&db, &["stats", "--all"]));
    assert!(
        all.contains("model path") && all.contains("wasted"),
        "{all}"
    );
    // Six more level rows in the level table, and the learning table's header and 7 rows.
    assert!(
        all.lines().count() >= text.lines().count() + 6 + 7,
        "{text}\n{all}"
    );
    fails(augur(&db, &["--learning", "sometimes", "stats"]));
}

/// Issue 15: a deleted WAL holding unflushed writes fails the open with an error naming it;
/// `--accept-wal-loss` opens anyway and says on stderr what was dropped.
#[test]
fn a_deleted_wal_is_an_error_unless_the_loss_is_accepted() {
    let t = tempfile::tempdir().unwrap();
    let db = t.path().join("db");
    ok(augur(&db, &["put", "flushed", "1"]));
    ok(augur(&db, &["flush"]));
    ok(augur(&db, &["put", "only-in-the-wal", "2"]));
    let wal = std::fs::read_dir(&db)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "wal"))
        .max()
        .expect("a WAL");
    std::fs::remove_file(&wal).unwrap();
    let o = augur(&db, &["get", "flushed"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains(&*wal.file_name().unwrap().to_string_lossy())
            && err.contains("--accept-wal-loss"),
        "{err}"
    );
    let o = augur(&db, &["--accept-wal-loss", "get", "flushed"]);
    assert_eq!(stdout(&o).trim(), "1", "{}", stderr(&o));
    assert!(
        stderr(&o).contains("warning: --accept-wal-loss"),
        "{}",
        stderr(&o)
    );
    // The loss was accepted once; the database opens normally again.
    let o = augur(&db, &["get", "only-in-the-wal"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
}

/// Issue 23, case 1, the user's reproduction: the newest value-log segment removed under two
/// synced separated writes still in the WAL. `scan` printed only `a 1` with exit 0.
///
/// Since issue 28 the second process appends to the first one's segment, which would take
/// `a` with it: `a` is written inline here, so that it survives as it did in the
/// reproduction, where each process wrote its own segment.
#[test]
fn a_removed_value_log_segment_is_an_error_naming_it() {
    let t = tempfile::tempdir().unwrap();
    let db = t.path().join("d");
    let sep = ["--value-separation-threshold", "0"];
    ok(augur(&db, &["put", "a", "1", "--sync"]));
    ok(augur(
        &db,
        &[&sep[..], &["put", "b", "2", "--sync"]].concat(),
    ));
    let segment = files_ending(&db, ".vlog")
        .into_iter()
        .filter(|p| std::fs::metadata(p).unwrap().len() > 24)
        .max()
        .expect("a segment with entries");
    std::fs::remove_file(&segment).unwrap();
    let err = fails(augur(&db, &["scan"]));
    let name = segment.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        err.contains(&name) && err.contains("--accept-wal-loss"),
        "{err}"
    );
    assert_eq!(
        fails(augur(&db, &["scan"])),
        err,
        "the failed open changed something"
    );
    let o = augur(&db, &["--accept-wal-loss", "scan"]);
    assert_eq!(stdout(&o), "a\t1\n", "{}", stderr(&o));
    assert!(stderr(&o).contains(&name), "{}", stderr(&o));
}

/// Issue 23, case 3: the active WAL truncated to 0 bytes after two synced writes.
#[test]
fn an_active_wal_truncated_to_nothing_is_an_error() {
    let t = tempfile::tempdir().unwrap();
    let db = t.path().join("d");
    ok(augur(&db, &["put", "a", "1", "--sync"]));
    ok(augur(&db, &["put", "b", "2", "--sync"]));
    let wal = files_ending(&db, ".wal").pop().expect("a WAL");
    std::fs::File::options()
        .write(true)
        .open(&wal)
        .unwrap()
        .set_len(0)
        .unwrap();
    let err = fails(augur(&db, &["scan"]));
    assert!(
        err.contains(&*wal.file_name().unwrap().to_string_lossy()),
        "{err}"
    );
}

/// Issue 23, case 4: after a flush, the last byte of the value-log segment flipped: `get`
/// fails, and `verify` must fail too (it said OK).
#[test]
fn verify_fails_when_a_live_value_is_damaged() {
    let t = tempfile::tempdir().unwrap();
    let db = t.path().join("d");
    let sep = ["--value-separation-threshold", "0"];
    ok(augur(&db, &[&sep[..], &["put", "a", "1"]].concat()));
    ok(augur(&db, &[&sep[..], &["put", "b", "2"]].concat()));
    ok(augur(&db, &["flush"]));
    ok(augur(&db, &["verify"]));
    for segment in files_ending(&db, ".vlog") {
        let mut bytes = std::fs::read(&segment).unwrap();
        if bytes.len() > 24 {
            *bytes.last_mut().unwrap() ^= 1;
            std::fs::write(&segment, bytes).unwrap();
        }
    }
    fails(augur(&db, &["get", "b"]));
    let err = fails(augur(&db, &["verify"]));
    assert!(err.contains(".vlog"), "{err}");
}

/// Issue 23, case 7: rough edges of the CLI (`stress`'s is in stress_refusal.rs).
#[test]
fn rough_edges_flsm_style_csv_and_missing_database() {
    let t = tempfile::tempdir().unwrap();
    // An FLSM database reopens without --compaction; only a conflicting flag is refused,
    // and the error names the flag.
    let flsm = t.path().join("flsm");
    ok(augur(&flsm, &["--compaction", "flsm", "put", "a", "1"]));
    assert_eq!(ok(augur(&flsm, &["get", "a"])), "1\n");
    let stats = ok_json(augur(&flsm, &["--json", "stats"]));
    assert_eq!(stats["compaction_style"], "flsm", "{stats}");
    let err = fails(augur(&flsm, &["--compaction", "leveled", "get", "a"]));
    assert!(err.contains("--compaction"), "{err}");
    ok(augur(&flsm, &["--compaction", "flsm", "put", "b", "2"]));
    // (`stress` refusing this database is in stress_refusal.rs: it needs `--features stress`.)

    // A CSV line that is not UTF-8: its line number, and what was committed before it.
    let csv = t.path().join("in.csv");
    std::fs::write(&csv, b"k1,v1\nk2,v2\nk3,\xff\nk4,v4\n").unwrap();
    let db = t.path().join("csv");
    let err = fails(augur(&db, &["load", "--csv", csv.to_str().unwrap()]));
    assert!(
        err.contains("line 3") && err.contains("not UTF-8") && err.contains("2 entries"),
        "{err}"
    );
    assert_eq!(ok(augur(&db, &["scan"])), "k1\tv1\nk2\tv2\n");

    // A missing database, in the CLI's words.
    let missing = t.path().join("missing");
    let err = fails(augur(&missing, &["get", "a"]));
    assert!(
        err.contains("no database at") && !err.contains("create_if_missing"),
        "{err}"
    );
}

/// A database another process or handle holds is refused with exit status 3 (issue 42), a
/// message saying so and what reads beside it; `--read-only` does.
#[test]
fn a_database_held_elsewhere_exits_3() {
    let t = tempfile::tempdir().unwrap();
    let db = t.path().join("d");
    ok(augur(&db, &["put", "a", "1"]));
    // The lock a running `augur` (or any open handle) holds on the directory.
    let lock = std::fs::OpenOptions::new()
        .write(true)
        .open(db.join("LOCK"))
        .unwrap();
    lock.try_lock().unwrap();
    let o = augur(&db, &["put", "b", "2"]);
    assert_eq!(o.status.code(), Some(3), "{o:?}");
    let err = stderr(&o);
    assert!(err.starts_with("error: database is busy"), "{err}");
    assert!(err.contains("--read-only reads beside it"), "{err}");
    assert_eq!(ok(augur(&db, &["--read-only", "get", "a"])), "1\n");
    drop(lock);
    ok(augur(&db, &["put", "b", "2"]));
}

/// Issue 23, case 7: `--read-only` writes nothing, takes no lock, and refuses writes.
#[test]
fn read_only_changes_nothing_on_disk() {
    let t = tempfile::tempdir().unwrap();
    let db = t.path().join("d");
    ok(augur(&db, &["put", "a", "1"]));
    ok(augur(&db, &["flush"]));
    ok(augur(&db, &["put", "b", "2"]));
    let snapshot = |dir: &Path| -> Vec<(PathBuf, Vec<u8>)> {
        files_ending(dir, "")
            .into_iter()
            .map(|p| (p.clone(), std::fs::read(&p).unwrap()))
            .collect()
    };
    let before = snapshot(&db);
    assert_eq!(ok(augur(&db, &["--read-only", "scan"])), "a\t1\nb\t2\n");
    assert_eq!(ok(augur(&db, &["--read-only", "get", "b"])), "2\n");
    ok(augur(&db, &["--read-only", "verify"]));
    for change in [
        &["put", "c", "3"][..],
        &["del", "a"],
        &["flush"],
        &["compact"],
    ] {
        let args: Vec<&str> = ["--read-only"].iter().chain(change).copied().collect();
        let o = augur(&db, &args);
        // Its own exit status (issue 42): a script tells it from a failure of the database.
        assert_eq!(o.status.code(), Some(4), "{change:?}: {o:?}");
        let err = stderr(&o);
        assert!(
            err.starts_with("error: ") && err.contains("reading only"),
            "{change:?}: {err}"
        );
        assert!(err.contains("without it"), "{change:?}: {err}");
    }
    assert_eq!(
        snapshot(&db),
        before,
        "a read-only command changed the directory"
    );
    fails(augur(&t.path().join("none"), &["--read-only", "scan"]));
}
