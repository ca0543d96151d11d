//! `augur checkpoint` and `augur backup ...` end to end (issue 44, item 1): round trips
//! with text and `--json` output, `verify`'s exit status on a damaged backup, clear errors,
//! and real processes SIGKILLed at random moments of a checkpoint or a backup: the source
//! always reopens whole, a checkpoint directory is missing or whole, and every listed
//! backup verifies and restores whole.

mod common;

use augur::{Db, Options};
use common::{augur, augur_db, fails_with_error, stdout};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// Fills a database in `dir` with `keys` keys (every fourth value separated).
fn fill(dir: &Path, keys: u32) {
    let db = Db::open(
        dir,
        Options {
            value_separation_threshold: 200,
            ..Options::default()
        },
    )
    .unwrap();
    let mut batch = augur::WriteBatch::new();
    for i in 0..keys {
        let v = if i.is_multiple_of(4) {
            vec![b'v'; 400]
        } else {
            format!("value{i}").into_bytes()
        };
        batch.put(format!("key{i:08}"), v);
        if i % 1000 == 999 {
            db.write(std::mem::take(&mut batch)).unwrap();
        }
    }
    db.write(batch).unwrap();
}

/// Opens `dir`, verifies it and returns its key count; `None` when it does not open.
fn key_count(dir: &Path) -> Option<usize> {
    let db = Db::open(
        dir,
        Options {
            create_if_missing: false,
            ..Options::default()
        },
    )
    .ok()?;
    db.verify().ok()?;
    let mut n = 0;
    for entry in db.iter() {
        entry.ok()?;
        n += 1;
    }
    Some(n)
}

fn json(out: &std::process::Output) -> Value {
    assert!(out.status.success(), "{}", common::stderr(out));
    serde_json::from_str(stdout(out).trim()).unwrap()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn checkpoint_and_backups_round_trip_on_the_command_line() {
    let tmp = tempfile::tempdir().unwrap();
    let (db, cp, bk) = (
        tmp.path().join("db"),
        tmp.path().join("cp"),
        tmp.path().join("bk"),
    );
    fill(&db, 5_000);
    let out = augur_db(&db, &["checkpoint", s(&cp)]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    assert!(stdout(&out).contains("files linked"), "{}", stdout(&out));
    assert_eq!(key_count(&cp), Some(5_000));
    let copied = json(&augur_db(
        &db,
        &["checkpoint", "--copy", "--json", s(&tmp.path().join("cp2"))],
    ));
    assert_eq!(copied["linked_files"], 0);
    assert!(copied["copied_files"].as_u64().unwrap() > 0);
    let err = fails_with_error(augur_db(&db, &["checkpoint", s(&cp)]));
    assert!(err.contains("already exists"), "{err}");

    let first = json(&augur_db(&db, &["backup", "create", s(&bk), "--json"]));
    assert_eq!(first["id"], 1);
    assert_eq!(first["seqno"], 5_000);
    let out = augur_db(&db, &["put", "extra", "1"]);
    assert!(out.status.success());
    let second = json(&augur_db(&db, &["--json", "backup", "create", s(&bk)]));
    assert_eq!(second["id"], 2);
    assert!(second["reused_files"].as_u64().unwrap() > 0);
    assert!(second["new_bytes"].as_u64().unwrap() < first["new_bytes"].as_u64().unwrap() / 5);
    let list = json(&augur(&["backup", "list", s(&bk), "--json"]));
    let backups = list["backups"].as_array().unwrap();
    assert_eq!(backups.len(), 2);
    assert!(backups[1]["shared_bytes"].as_u64().unwrap() > 0);
    let text = stdout(&augur(&["backup", "list", s(&bk)]));
    assert!(
        text.contains("shared bytes") && text.lines().count() == 3,
        "{text}"
    );
    let verified = json(&augur(&["backup", "verify", s(&bk), "2", "--json"]));
    assert_eq!(verified["ok"], true);
    let r = tmp.path().join("restored");
    let restored = json(&augur(&["backup", "restore", s(&bk), "1", s(&r), "--json"]));
    assert_eq!(restored["seqno"], 5_000);
    assert_eq!(key_count(&r), Some(5_000));
    let purged = json(&augur(&[
        "backup",
        "purge",
        s(&bk),
        "--keep",
        "1",
        "--json",
    ]));
    assert_eq!(purged["deleted"], serde_json::json!([1]));
    let deleted = json(&augur(&["backup", "delete", s(&bk), "2", "--json"]));
    assert_eq!(deleted["deleted"], serde_json::json!([2]));
    assert!(stdout(&augur(&["backup", "list", s(&bk)])).contains("no backups"));
}

#[test]
fn verify_exits_2_on_a_damaged_backup_and_errors_are_clear() {
    let tmp = tempfile::tempdir().unwrap();
    let (db, bk) = (tmp.path().join("db"), tmp.path().join("bk"));
    fill(&db, 3_000);
    assert!(augur_db(&db, &["backup", "create", s(&bk)])
        .status
        .success());
    let shared = bk.join("shared");
    let table = std::fs::read_dir(&shared)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".sst"))
        .unwrap();
    let mut bytes = std::fs::read(&table).unwrap();
    bytes[10] ^= 0xff;
    std::fs::write(&table, bytes).unwrap();
    let out = augur(&["backup", "verify", s(&bk), "1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stdout(&out).contains("CRC32C"), "{}", stdout(&out));
    assert!(common::stderr(&out).contains("is damaged"));
    let out = augur(&["backup", "verify", s(&bk), "1", "--json"]);
    assert_eq!(out.status.code(), Some(2));
    let v: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(v["ok"], false);
    assert_eq!(v["problems"].as_array().unwrap().len(), 1);
    let err = fails_with_error(augur(&[
        "backup",
        "restore",
        s(&bk),
        "1",
        s(&tmp.path().join("r")),
    ]));
    assert!(err.contains("corruption"), "{err}");
    assert!(!tmp.path().join("r").exists());

    let err = fails_with_error(augur(&["backup", "create", s(&bk)]));
    assert!(err.contains("--db"), "{err}");
    let err = fails_with_error(augur(&["backup", "list", s(&tmp.path().join("none"))]));
    assert!(err.contains("no backup directory"), "{err}");
    let err = fails_with_error(augur_db(&db, &["backup", "create", s(&db)]));
    assert!(err.contains("not a backup directory"), "{err}");
    let err = fails_with_error(augur(&["backup", "verify", s(&bk), "7"]));
    assert!(err.contains("no backup 7"), "{err}");
    let err = fails_with_error(augur_db(&tmp.path().join("nodb"), &["checkpoint", "x"]));
    assert!(err.contains("no database"), "{err}");
}

/// Runs `augur ARGS` and SIGKILLs it after `life`; returns whether it ended by itself.
fn run_and_kill(args: &[&str], life: Duration) -> bool {
    let mut child = Command::new(env!("CARGO_BIN_EXE_augur"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(life);
    if child.try_wait().unwrap().is_some() {
        return true;
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    false
}

#[test]
fn checkpoints_and_backups_killed_at_random_moments_leave_no_partial_copy() {
    let tmp = tempfile::tempdir().unwrap();
    let (db, bk) = (tmp.path().join("db"), tmp.path().join("bk"));
    const KEYS: usize = 150_000;
    fill(&db, KEYS as u32);
    let lives_ms = [3u64, 40, 10, 120, 25, 70, 5, 200, 15, 90, 55, 160];
    let (mut killed, mut finished) = (0, 0);
    for (i, &life) in lives_ms.iter().enumerate() {
        let cp = tmp.path().join(format!("cp{i}"));
        // Copies, not links: slow enough to be killed in the middle.
        let args = ["--db", s(&db), "checkpoint", "--copy", s(&cp)];
        match run_and_kill(&args, Duration::from_millis(life)) {
            true => finished += 1,
            false => killed += 1,
        }
        let args = ["--db", s(&db), "backup", "create", s(&bk)];
        match run_and_kill(&args, Duration::from_millis(life * 2)) {
            true => finished += 1,
            false => killed += 1,
        }
        assert_eq!(key_count(&db), Some(KEYS), "round {i}: the source");
        match key_count(&cp) {
            Some(n) => assert_eq!(n, KEYS, "round {i}: checkpoint"),
            None => assert!(!cp.exists(), "round {i}: a partial checkpoint"),
        }
        let staging = tmp.path().join(format!("cp{i}.augur-tmp"));
        if let Some(n) = key_count(&staging) {
            assert_eq!(n, KEYS, "round {i}: a staging directory opened short");
        }
    }
    eprintln!("{killed} runs killed, {finished} finished before their kill");
    assert!(killed >= 6, "{killed} killed, {finished} finished");
    let list = json(&augur(&["backup", "list", s(&bk), "--json"]));
    for b in list["backups"].as_array().unwrap() {
        let id = b["id"].to_string();
        let verified = json(&augur(&["backup", "verify", s(&bk), &id, "--json"]));
        assert_eq!(verified["ok"], true, "backup {id}");
        let r = tmp.path().join(format!("restored{id}"));
        assert!(augur(&["backup", "restore", s(&bk), &id, s(&r)])
            .status
            .success());
        assert_eq!(key_count(&r), Some(KEYS), "backup {id}");
    }
    // What killed backups copied is reclaimed.
    assert!(augur(&["backup", "purge", s(&bk), "--keep", "1000"])
        .status
        .success());
    let engine = augur::backup::BackupEngine::open(&bk).unwrap();
    let named: std::collections::BTreeSet<String> = engine
        .list()
        .unwrap()
        .iter()
        .flat_map(|b| engine.backup(b.id).unwrap().files)
        .map(|f| f.shared_name())
        .collect();
    let shared: std::collections::BTreeSet<String> = std::fs::read_dir(bk.join("shared"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(shared, named);
    assert_eq!(std::fs::read_dir(bk.join("tmp")).unwrap().count(), 0);
}
