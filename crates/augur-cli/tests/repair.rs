//! `augur repair DIR [--json]` end to end: a database whose manifest and CURRENT were lost
//! is refused, repaired (the report names what was kept and what went to `lost/`), and then
//! reads every key again, values in the value log included; a damaged table goes to `lost/`
//! with its reason.

mod common;

use common::{augur as augur_bare, augur_db as augur, fails_with_error as fails};
use common::{files_ending, ok};
use serde_json::Value;

/// A database with two tables (one value separated into the value log) and a WAL.
fn build(db: &std::path::Path) {
    let sep = ["--value-separation-threshold", "16"];
    ok(augur(db, &[&sep[..], &["put", "a", "1"]].concat()));
    ok(augur(
        db,
        &[
            &sep[..],
            &["put", "b", "a value long enough for the value log"],
        ]
        .concat(),
    ));
    ok(augur(db, &["flush"]));
    ok(augur(db, &["put", "c", "3"]));
    ok(augur(db, &["flush"]));
    ok(augur(db, &["put", "a", "newest"]));
}

#[test]
fn repair_after_the_manifest_is_lost() {
    let t = tempfile::tempdir().unwrap();
    let db = t.path().join("db");
    build(&db);
    for m in
        files_ending(&db, "CURRENT")
            .into_iter()
            .chain(files_ending(&db, "").into_iter().filter(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("MANIFEST-"))
            }))
    {
        std::fs::remove_file(m).unwrap();
    }
    let err = fails(augur(&db, &["get", "a"]));
    assert!(err.contains("augur repair"), "{err}");

    let out = ok(augur_bare(&["repair", db.to_str().unwrap()]));
    assert!(out.starts_with("repaired "), "{out}");
    assert!(out.contains("(written from the WALs)"), "{out}");
    assert!(out.contains(".wal: replayed into"), "{out}");
    assert!(db.join("lost").is_dir());

    assert_eq!(ok(augur(&db, &["get", "a"])), "newest\n");
    assert_eq!(
        ok(augur(&db, &["get", "b"])),
        "a value long enough for the value log\n"
    );
    assert_eq!(ok(augur(&db, &["get", "c"])), "3\n");
    assert!(ok(augur(&db, &["verify"])).contains("OK"));

    // --json: one object; a second repair keeps every table (how many there are depends on
    // whether the opens since found time to compact).
    let tables = files_ending(&db, ".sst").len();
    let out = ok(augur_bare(&["repair", db.to_str().unwrap(), "--json"]));
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["tables"].as_array().map(Vec::len), Some(tables), "{v}");
    assert!(v["lost"]
        .as_array()
        .unwrap()
        .iter()
        .all(|l| !l["name"].as_str().unwrap().ends_with(".sst")));
    assert_eq!(ok(augur(&db, &["get", "a"])), "newest\n");
}

#[test]
fn repair_moves_a_damaged_table_to_lost() {
    let t = tempfile::tempdir().unwrap();
    let db = t.path().join("db");
    build(&db);
    // The first table: repair must keep the others and the WAL's writes.
    let victim = files_ending(&db, ".sst")[0].clone();
    let mut bytes = std::fs::read(&victim).unwrap();
    bytes[40] ^= 0x01;
    std::fs::write(&victim, bytes).unwrap();
    let out = ok(augur_bare(&["repair", db.to_str().unwrap(), "--json"]));
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    let name = victim.file_name().unwrap().to_str().unwrap();
    let lost = v["lost"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["name"] == name)
        .unwrap_or_else(|| panic!("{name} not lost: {v}"));
    assert!(
        lost["reason"]
            .as_str()
            .unwrap()
            .contains("failed verification"),
        "{lost}"
    );
    assert!(db.join("lost").join(name).exists());
    assert_eq!(ok(augur(&db, &["get", "a"])), "newest\n");
    assert!(ok(augur(&db, &["verify"])).contains("OK"));
}

#[test]
fn repair_of_a_missing_directory_fails() {
    let t = tempfile::tempdir().unwrap();
    let err = fails(augur_bare(&[
        "repair",
        t.path().join("nothing").to_str().unwrap(),
    ]));
    assert!(err.contains("no database directory"), "{err}");
}
