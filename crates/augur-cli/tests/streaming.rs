//! Issue 40, item 5: `scan` streams its output and `verify --keys` its key file, so the CLI
//! keeps the engine's memory bound; a scan that meets a damaged table prints every entry
//! before the damage, then fails; `--threads N` prints the same bytes as one thread; a reader
//! that closes the pipe early ends the scan quietly.
//!
//! The memory tests read the child's peak resident set (`VmHWM` in `/proc/<pid>/status`)
//! while the child is certainly alive: blocked on a pipe the test has not drained (scan) or
//! not closed (verify), so no sleep or timing is involved.

mod common;

use common::{augur_db as augur, ok, stderr, stdout};
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// Entries of the scan memory test, and the size of their values: the output (about 200 MB
/// in hex) must dwarf the process's own footprint (about 25 MB).
const MEMORY_TEST_KEYS: u64 = 100_000;
const MEMORY_TEST_VALUE_BYTES: u64 = 1000;

/// Keys of the `verify` memory test (a 32 MB key file).
const VERIFY_TEST_KEYS: u64 = 4_000_000;

/// An SOSD key file (count, then keys, little-endian u64).
fn sosd_bytes(keys: &[u64]) -> Vec<u8> {
    let mut bytes = (keys.len() as u64).to_le_bytes().to_vec();
    for k in keys {
        bytes.extend_from_slice(&k.to_le_bytes());
    }
    bytes
}

/// `n` distinct keys spread over the u64 range.
fn spread_keys(n: u64) -> Vec<u64> {
    (0..n)
        .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15))
        .collect()
}

/// Spawns `augur --db DB ARGS...` with piped stdin, stdout and stderr.
fn spawn(db: &Path, args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_augur"))
        .arg("--db")
        .arg(db)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the augur binary")
}

/// The peak resident set of a live process, in bytes.
fn peak_rss_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .unwrap_or_else(|| panic!("no VmHWM (has {pid} exited?): {status}"))
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .unwrap();
    kb * 1024
}

/// What [`drain_sampling_rss`] read.
#[derive(Debug, PartialEq)]
struct Drained {
    bytes: u64,
    /// FNV-1a of the bytes (the same however the reads split them).
    digest: u64,
}

/// Reads the child's stdout to the end, sampling its peak RSS once half of `expected_bytes`
/// arrived (the child cannot have exited then: the rest is not written yet). Returns what
/// was read and the sample.
fn drain_sampling_rss(child: &mut Child, expected_bytes: u64) -> (Drained, u64) {
    let mut out = child.stdout.take().unwrap();
    let mut buf = vec![0u8; 1 << 16];
    let mut drained = Drained {
        bytes: 0,
        digest: 0xcbf2_9ce4_8422_2325,
    };
    let mut sample = None;
    loop {
        let n = out.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        for &b in &buf[..n] {
            drained.digest = (drained.digest ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
        drained.bytes += n as u64;
        if sample.is_none() && drained.bytes >= expected_bytes / 2 {
            sample = Some(peak_rss_bytes(child.id()));
        }
    }
    (drained, sample.expect("less than half the output arrived"))
}

/// A database of `MEMORY_TEST_KEYS` keys with values of `MEMORY_TEST_VALUE_BYTES`.
fn loaded_database(dir: &Path) -> std::path::PathBuf {
    let keys = dir.join("keys.u64");
    std::fs::write(&keys, sosd_bytes(&spread_keys(MEMORY_TEST_KEYS))).unwrap();
    let db = dir.join("db");
    let size = MEMORY_TEST_VALUE_BYTES.to_string();
    let load = [
        "load",
        "--keys",
        keys.to_str().unwrap(),
        "--value-size",
        &size,
    ];
    ok(augur(&db, &load));
    ok(augur(&db, &["compact"]));
    db
}

#[test]
fn scan_streams_its_output_in_bounded_memory() {
    let t = tempfile::tempdir().unwrap();
    let db = loaded_database(t.path());
    // Per entry: 16 hex digits, a tab, the value's hex digits, a newline.
    let text_bytes = MEMORY_TEST_KEYS * (16 + 1 + 2 * MEMORY_TEST_VALUE_BYTES + 1);
    let frame = r#"{"key":"","value":""},"#.len() as u64;
    let json_bytes = MEMORY_TEST_KEYS * (frame + 16 + 2 * MEMORY_TEST_VALUE_BYTES);
    for (format, bytes) in [("text", text_bytes), ("--json", json_bytes)] {
        let mut first = None;
        // With 4 threads the database (100 MB) is cut into about 100 partitions.
        for threads in ["1", "4"] {
            let mut args = vec!["--read-mode", "pread", "--cache-mb", "8", "--hex", "scan"];
            args.extend(["--threads", threads]);
            args.extend((format == "--json").then_some("--json"));
            let mut child = spawn(&db, &args);
            let (drained, peak) = drain_sampling_rss(&mut child, bytes);
            let o = child.wait_with_output().unwrap();
            assert!(o.status.success(), "{}", stderr(&o));
            if format == "text" {
                assert_eq!(drained.bytes, text_bytes, "--threads {threads}");
            } else {
                assert!(drained.bytes > json_bytes, "{}", drained.bytes);
            }
            // Held whole, the output would be in memory; streamed, the process stays at its
            // own footprint (about 25 MB), a fraction of the output.
            assert!(
                peak < bytes / 3,
                "{format} --threads {threads}: peak RSS {peak} bytes for {bytes} bytes of output"
            );
            match &first {
                None => first = Some(drained),
                Some(one) => assert_eq!(one, &drained, "{format}: --threads {threads}"),
            }
        }
    }
}

#[test]
fn verify_reads_the_key_file_in_chunks() {
    let t = tempfile::tempdir().unwrap();
    let db = t.path().join("db");
    ok(augur(&db, &["put", "a", "1"]));
    // The keys arrive through a pipe (`--keys /dev/stdin`). Once a write returns, the child
    // has read all but a pipe's worth of what was written, and waits for the rest: its peak
    // RSS after the first eighth and after the whole file differ by the keys it holds.
    let n = VERIFY_TEST_KEYS;
    let file = sosd_bytes(&spread_keys(n));
    let file_bytes = file.len() as u64;
    let mut child = spawn(&db, &["verify", "--keys", "/dev/stdin", "--json"]);
    let mut stdin = child.stdin.take().unwrap();
    let (first, rest) = file.split_at(file.len() / 8);
    stdin.write_all(first).unwrap();
    let early = peak_rss_bytes(child.id());
    stdin.write_all(rest).unwrap();
    let late = peak_rss_bytes(child.id());
    drop(stdin);
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let j: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(j["keys_checked"], n);
    assert_eq!(j["keys_missing"], n);
    assert!(
        late - early < file_bytes / 4,
        "peak RSS grew from {early} to {late} bytes over a {file_bytes}-byte key file"
    );
    // A file shorter than its header says is still refused, after the fact for a pipe.
    let mut child = spawn(&db, &["verify", "--keys", "/dev/stdin"]);
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&file[..file.len() - 4]).unwrap();
    drop(stdin);
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("is not an SOSD key file"),
        "{}",
        stderr(&o)
    );
}

/// 20,000 entries `key00000`.. with 40-byte values, compacted into the last level.
fn text_database(dir: &Path) -> (std::path::PathBuf, String) {
    let csv = dir.join("in.csv");
    let mut lines = String::new();
    let mut expected = String::new();
    for i in 0..20_000 {
        let (k, v) = (
            format!("key{i:05}"),
            format!("value-{i:05}-{}", "x".repeat(28)),
        );
        lines.push_str(&format!("{k},{v}\n"));
        expected.push_str(&format!("{k}\t{v}\n"));
    }
    std::fs::write(&csv, lines).unwrap();
    let db = dir.join("db");
    ok(augur(&db, &["load", "--csv", csv.to_str().unwrap()]));
    ok(augur(&db, &["compact"]));
    (db, expected)
}

#[test]
fn a_damaged_table_mid_scan_prints_the_entries_before_it_then_exits_2() {
    let t = tempfile::tempdir().unwrap();
    let (db, full) = text_database(t.path());
    let tables = common::files_ending(&db, ".sst");
    let table = tables
        .iter()
        .max_by_key(|p| std::fs::metadata(p).unwrap().len())
        .unwrap();
    // A byte in the middle of the data blocks: the open reads only the footer, index and
    // filter, so the damage is met mid-scan.
    let mut bytes = std::fs::read(table).unwrap();
    let at = bytes.len() * 2 / 5;
    bytes[at] ^= 0x55;
    std::fs::write(table, bytes).unwrap();
    let mut printed = None;
    for threads in ["1", "4"] {
        let o = augur(&db, &["--read-mode", "pread", "scan", "--threads", threads]);
        assert_eq!(o.status.code(), Some(2), "--threads {threads}");
        let err = stderr(&o);
        assert!(
            err.starts_with("error: ") && err.contains("corrupt"),
            "{err}"
        );
        let out = stdout(&o);
        assert!(
            !out.is_empty() && out.len() < full.len() / 2 && full.starts_with(&out),
            "--threads {threads}: {} of {} bytes, not a prefix of whole lines",
            out.len(),
            full.len()
        );
        assert!(out.ends_with('\n'));
        // Every thread count prints the same entries: all those before the damage.
        assert_eq!(
            printed.get_or_insert(out.clone()),
            &out,
            "--threads {threads}"
        );
    }
    let entries = printed.unwrap().lines().count();
    let o = augur(&db, &["--read-mode", "pread", "scan", "--json"]);
    assert_eq!(o.status.code(), Some(2));
    let out = stdout(&o);
    let head = format!(r#"{{"count":{entries},"entries":[{{"key":"key00000","#);
    assert!(out.starts_with(&head), "{}", &out[..out.len().min(200)]);
    assert_eq!(out.matches(r#"{"key""#).count(), entries);
}

#[test]
fn parallel_scan_prints_the_same_bytes_as_one_thread() {
    let t = tempfile::tempdir().unwrap();
    let (db, full) = text_database(t.path());
    // Entries in the memtable too, shadowing and deleting some in the tables.
    ok(augur(&db, &["put", "key00100", "new"]));
    ok(augur(&db, &["del", "key00200"]));
    ok(augur(&db, &["put", "key25000", "tail"]));
    let runs: [&[&str]; 7] = [
        &["scan"],
        &["scan", "--reverse"],
        &["scan", "--limit", "12345"],
        &[
            "scan",
            "--from",
            "key05000",
            "--to",
            "key15000",
            "--reverse",
            "--limit",
            "777",
        ],
        &["--hex", "scan", "--json"],
        &["scan", "--json", "--limit", "3001", "--reverse"],
        &["scan", "--from", "zzz", "--json"],
    ];
    for args in runs {
        let one = ok(augur(&db, args));
        for threads in ["2", "4", "7"] {
            for split in ["balanced", "keyspace"] {
                let extra = ["--threads", threads, "--split", split];
                let many = ok(augur(&db, &[args, &extra[..]].concat()));
                assert!(one == many, "{args:?} {extra:?} differs from one thread");
            }
        }
    }
    assert!(ok(augur(&db, &["scan"])).starts_with(&full[..full.find("key00100").unwrap()]));
    // --json prints what serde_json prints for the whole object (the bytes of the CLI
    // before it streamed).
    let out = ok(augur(&db, &["scan", "--from", "key19998", "--json"]));
    let entries: Vec<Value> = ["key19998", "key19999"]
        .iter()
        .map(|k| json!({"key": k, "value": format!("value-{}-{}", &k[3..], "x".repeat(28))}))
        .chain([json!({"key": "key25000", "value": "tail"})])
        .collect();
    assert_eq!(
        out,
        format!("{}\n", json!({"count": 3, "entries": entries}))
    );
    let out = ok(augur(&db, &["scan", "--limit", "0", "--json"]));
    assert_eq!(out, "{\"count\":0,\"entries\":[]}\n");
}

#[test]
fn a_reader_that_closes_the_pipe_ends_the_scan_quietly() {
    let t = tempfile::tempdir().unwrap();
    let (db, _) = text_database(t.path());
    for args in [
        &["scan"][..],
        &["scan", "--json"],
        &["scan", "--threads", "3"],
    ] {
        let mut child = spawn(&db, args);
        let mut out = child.stdout.take().unwrap();
        let mut first = [0u8; 16];
        out.read_exact(&mut first).unwrap();
        drop(out);
        let o = child.wait_with_output().unwrap();
        assert!(
            o.status.success() && o.stderr.is_empty(),
            "{args:?}: {:?}, stderr: {}",
            o.status,
            stderr(&o)
        );
    }
}
