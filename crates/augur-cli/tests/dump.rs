//! `augur dump sst|manifest|wal|vlog` end to end: each command on a fresh database (text and
//! JSON), beside a database this process holds open, and on damaged copies of its files — a
//! truncated WAL, a manifest and an SSTable with a flipped byte, garbage of every kind — each
//! printing what it read, then where and why it stopped, with exit status 2 and never a
//! panic.

mod common;

use common::{augur, files_ending, ok, stderr, stdout};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;

/// A database the engine wrote: 40 keys (values of 100 bytes or more separated), `k30`
/// overwritten before the flush (which counts its first value as garbage), flushed to one
/// table; then three records in the WAL only: an inline value, a tombstone, a separated value.
fn fresh_database(root: &Path) -> PathBuf {
    let dir = root.join("db");
    let opts = augur::Options {
        value_separation_threshold: 100,
        ..augur::Options::default()
    };
    let db = augur::Db::open(&dir, opts).unwrap();
    for i in 0..40 {
        db.put(format!("k{i:02}"), "v".repeat(i * 5)).unwrap();
    }
    db.put("k30", "w".repeat(150)).unwrap();
    db.flush().unwrap();
    db.put("late", "value").unwrap();
    db.delete("k01").unwrap();
    db.put("late-big", "y".repeat(200)).unwrap();
    db.close().unwrap();
    drop(db);
    dir
}

fn one(dir: &Path, suffix: &str) -> PathBuf {
    let files = files_ending(dir, suffix);
    files
        .last()
        .cloned()
        .unwrap_or_else(|| panic!("no {suffix} in {dir:?}"))
}

/// The manifest file of database `db`.
fn manifest_of(db: &Path) -> PathBuf {
    files_ending(db, "")
        .into_iter()
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("MANIFEST-")
        })
        .unwrap()
}

/// Runs `augur dump ARGS...`.
fn dump(args: &[&str]) -> Output {
    let mut all = vec!["dump"];
    all.extend_from_slice(args);
    augur(&all)
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Parses `out` as one JSON object.
fn parse(out: &str) -> Value {
    serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
}

/// Parses stdout as one JSON object.
fn json_of(o: &Output) -> Value {
    parse(&stdout(o))
}

/// Asserts exit status 2 without a panic, the stop on stderr; returns stdout.
fn stopped(o: &Output, what: &str) -> String {
    let err = stderr(o);
    assert_eq!(
        o.status.code(),
        Some(2),
        "stdout: {}\nstderr: {err}",
        stdout(o)
    );
    assert!(err.contains("error:") && err.contains(what), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    stdout(o)
}

/// A copy of `file` under the same name in `to`, changed by `edit`.
fn damaged_copy(file: &Path, to: &Path, edit: impl FnOnce(&mut Vec<u8>)) -> PathBuf {
    let mut bytes = std::fs::read(file).unwrap();
    edit(&mut bytes);
    let copy = to.join(file.file_name().unwrap());
    std::fs::write(&copy, bytes).unwrap();
    copy
}

#[test]
fn each_command_on_a_fresh_database_in_text_and_json() {
    let t = tempfile::tempdir().unwrap();
    let db = fresh_database(t.path());
    let sst = one(&db, ".sst");

    let text = ok(dump(&["sst", path(&sst), "--keys", "--values"]));
    for part in [
        "format 7",
        "sections:",
        "properties: 40 entries",
        "model: plr",
        "block 0:",
    ] {
        assert!(text.contains(part), "{part}: {text}");
    }
    assert!(text.contains("k05\t@"), "{text}");
    assert!(text.contains("\tpointer\tsegment "), "{text}");
    assert!(text.contains("end: clean"), "{text}");
    let v = parse(&ok(dump(&["sst", path(&sst), "--keys", "--json"])));
    assert_eq!(v["properties"]["entries"], 40);
    assert_eq!(v["entries"].as_array().unwrap().len(), 40);
    assert_eq!(v["entries"][0]["key"], "k00");
    assert_eq!(v["damage"], Value::Null);
    assert_eq!(v["sections"][0]["name"], "data");
    let v = parse(&ok(augur(&["--json", "dump", "sst", path(&sst)])));
    assert!(v.get("entries").is_none() && v["blocks"].is_array(), "{v}");
    let v = parse(&ok(augur(&[
        "--hex",
        "dump",
        "sst",
        path(&sst),
        "--keys",
        "--json",
    ])));
    assert_eq!(v["entries"][0]["key"], "6b3030");

    // A directory stands for the manifest its CURRENT names.
    let text = ok(dump(&["manifest", path(&db)]));
    assert!(text.contains("edit 1 at offset 20"), "{text}");
    assert!(text.contains("closed cleanly"), "{text}");
    assert!(text.contains("add L0 #"), "{text}");
    let v = parse(&ok(dump(&["manifest", path(&db), "--json"])));
    assert_eq!(v["edits"][0]["closed_cleanly"], true);
    assert_eq!(v["edits"][0]["compaction_style"], "leveled");
    assert_eq!(v["damage"], Value::Null);

    let wal = one(&db, ".wal");
    let text = ok(dump(&["wal", path(&wal), "--values"]));
    assert!(text.contains("record at offset 20"), "{text}");
    assert!(text.contains("k01\t@"), "{text}");
    assert!(text.contains("\tdelete\t-"), "{text}");
    assert!(text.contains("end: clean"), "{text}");
    let v = parse(&ok(dump(&["wal", path(&wal), "--json"])));
    assert_eq!(v["end"]["kind"], "clean");
    let kinds: Vec<&Value> = v["records"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r["entries"].as_array().unwrap())
        .map(|e| &e["kind"])
        .collect();
    assert!(kinds.contains(&&Value::from("delete")), "{v}");

    let vlog = one(&db, ".vlog");
    let text = ok(dump(&["vlog", path(&vlog), "--keys"]));
    assert!(text.contains("\tk20\t100 bytes"), "{text}");
    assert!(text.contains("end: clean"), "{text}");
    let v = parse(&ok(dump(&["vlog", path(&vlog), "--keys", "--json"])));
    let n = v["entry_count"].as_u64().unwrap();
    assert_eq!(n, 22, "k20..k39, k30 again, late-big: {v}");
    assert_eq!(v["entries"].as_array().unwrap().len() as u64, n);
    // With --db, the garbage the manifest records for the segment: k30's first entry
    // (a 12-byte header, its key, its value).
    let text = ok(augur(&["--db", path(&db), "dump", "vlog", path(&vlog)]));
    assert!(
        text.contains("by the manifest: 165 garbage bytes"),
        "{text}"
    );
    let v = parse(&ok(augur(&[
        "--db",
        path(&db),
        "dump",
        "vlog",
        path(&vlog),
        "--json",
    ])));
    assert_eq!(v["manifest"]["garbage_bytes"], 165, "{v}");
    assert!(v.get("entries").unwrap().as_array().unwrap().is_empty());
}

#[test]
fn dump_reads_beside_a_database_this_process_holds_open() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("db");
    let db = augur::Db::open(&dir, augur::Options::default()).unwrap();
    for i in 0..100 {
        db.put(format!("key{i:03}"), "value").unwrap();
    }
    db.flush().unwrap();
    db.put("after", "the flush").unwrap();
    let v = parse(&ok(dump(&["manifest", path(&dir), "--json"])));
    assert!(v["edits"].as_array().unwrap().len() >= 2, "{v}");
    // The open WAL is preallocated: zeros past its last record are no damage.
    let v = parse(&ok(dump(&["wal", path(&one(&dir, ".wal")), "--json"])));
    assert_eq!(v["entry_count"], 1);
    assert!(v["damage"].is_null(), "{v}");
    let v = parse(&ok(dump(&[
        "sst",
        path(&one(&dir, ".sst")),
        "--keys",
        "--json",
    ])));
    assert_eq!(v["entries"].as_array().unwrap().len(), 100);
    db.close().unwrap();
}

#[test]
fn a_truncated_wal_reports_where_its_torn_tail_starts() {
    let t = tempfile::tempdir().unwrap();
    let db = fresh_database(t.path());
    let wal = one(&db, ".wal");
    let whole = parse(&ok(dump(&["wal", path(&wal), "--json"])));
    let records = whole["records"].as_array().unwrap();
    let last = records.last().unwrap()["offset"].as_u64().unwrap();
    let copy = damaged_copy(&wal, t.path(), |b| b.truncate(last as usize + 5));

    let o = dump(&["wal", path(&copy)]);
    let out = stopped(&o, &format!("torn tail at offset {last}"));
    assert!(
        out.contains(&format!("stopped at offset {last}: torn tail")),
        "{out}"
    );
    assert!(
        out.contains("record at offset 20"),
        "the records before it: {out}"
    );
    let o = dump(&["wal", path(&copy), "--json"]);
    stopped(&o, "torn tail");
    let v = json_of(&o);
    assert_eq!(v["damage"]["kind"], "torn");
    assert_eq!(v["damage"]["offset"], last);
    assert_eq!(v["records"].as_array().unwrap().len(), records.len() - 1);
}

#[test]
fn a_manifest_with_a_flipped_byte_is_reported_damaged() {
    let t = tempfile::tempdir().unwrap();
    let db = fresh_database(t.path());
    let manifest = manifest_of(&db);
    let copy = damaged_copy(&manifest, t.path(), |b| b[40] ^= 0x08);
    let o = dump(&["manifest", path(&copy)]);
    let out = stopped(&o, "damaged at offset 20");
    assert!(out.contains("stopped at offset 20: damaged"), "{out}");
    let o = dump(&["manifest", path(&copy), "--json"]);
    stopped(&o, "damaged");
    let v = json_of(&o);
    assert_eq!(v["damage"]["kind"], "damaged");
    assert_eq!(v["damage"]["offset"], 20);
    assert!(v["edits"].as_array().unwrap().is_empty());
    // A damaged file header: nothing to read, the damage still in the JSON.
    let copy = damaged_copy(&manifest, t.path(), |b| b[2] ^= 1);
    let o = dump(&["manifest", path(&copy), "--json"]);
    stopped(&o, "bad magic");
    assert_eq!(json_of(&o)["damage"]["offset"], 0);
}

#[test]
fn an_sst_with_a_flipped_byte_in_a_block_is_reported_by_keys() {
    let t = tempfile::tempdir().unwrap();
    let db = fresh_database(t.path());
    let sst = one(&db, ".sst");
    let layout = parse(&ok(dump(&["sst", path(&sst), "--json"])));
    let block = layout["blocks"][0]["data_offset"].as_u64().unwrap();
    let copy = damaged_copy(&sst, t.path(), |b| b[block as usize + 3] ^= 0x10);
    // The layout reads no data block.
    ok(dump(&["sst", path(&copy)]));
    let o = dump(&["sst", path(&copy), "--keys"]);
    let out = stopped(&o, &format!("damaged at offset {block}"));
    assert!(out.contains("checksum mismatch"), "{out}");
    let o = dump(&["sst", path(&copy), "--keys", "--json"]);
    stopped(&o, "checksum mismatch");
    let v = json_of(&o);
    assert_eq!(v["damage"]["offset"], block);
    assert!(v["entries"].as_array().unwrap().is_empty());

    // A flipped byte in the model section (which the database's open refuses).
    let model = layout["model"]["offset"].as_u64().unwrap();
    let copy = damaged_copy(&sst, t.path(), |b| b[model as usize + 4] ^= 0x01);
    let o = dump(&["sst", path(&copy), "--json"]);
    stopped(&o, "model section checksum mismatch");
    let v = json_of(&o);
    assert_eq!(v["model"]["checksum_ok"], false);
    assert_eq!(v["damage"]["offset"], model);
}

#[test]
fn damaged_and_foreign_files_never_panic() {
    let t = tempfile::tempdir().unwrap();
    let db = fresh_database(t.path());
    let junk = t.path().join("junk");
    std::fs::create_dir(&junk).unwrap();
    let files = [one(&db, ".sst"), one(&db, ".wal"), one(&db, ".vlog")];
    let manifest = manifest_of(&db);
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for file in files.iter().chain([&manifest]) {
        let len = std::fs::metadata(file).unwrap().len() as usize;
        for round in 0..12 {
            let cut = (next() as usize) % (len + 1);
            let at = (next() as usize) % len;
            let copy = damaged_copy(file, &junk, |b| match round % 3 {
                0 => b.truncate(cut),
                1 => b[at] ^= 1 << (next() % 8),
                _ => b.iter_mut().skip(at).take(16).for_each(|x| *x = 0),
            });
            for kind in ["sst", "wal", "vlog", "manifest"] {
                for extra in [&["--keys"][..], &["--json"], &[]] {
                    let mut args = vec![kind, path(&copy)];
                    if !(extra == ["--keys"] && matches!(kind, "wal" | "manifest")) {
                        args.extend_from_slice(extra);
                    }
                    let o = dump(&args);
                    let code = o.status.code();
                    assert!(matches!(code, Some(0 | 2)), "{args:?}: {o:?}");
                    assert!(!stderr(&o).contains("panicked"), "{args:?}: {}", stderr(&o));
                }
            }
        }
    }
}
