//! Issue 40's damage findings through the `augur` binary: a damaged database is refused
//! with exit status 2 and a message saying it is damaged, by writing commands (which must
//! not start an empty database over it) and reading commands alike (whose message must not
//! suggest a write that would).

mod common;

use common::{augur_db as augur, fails_with_error as fails, files_ending, ok};

/// Finding 1: a CLI database stays WAL-only until its next open; losing CURRENT then must
/// not let `put` start an empty database over the WAL.
#[test]
fn missing_current_on_a_wal_only_database_is_refused() {
    let t = tempfile::tempdir().unwrap();
    let csv = t.path().join("r1.csv");
    let lines: String = (1..=5_000).map(|i| format!("k{i:07},v{i}\n")).collect();
    std::fs::write(&csv, lines).unwrap();
    let db = t.path().join("D");
    ok(augur(
        &db,
        &["load", "--sync", "--csv", csv.to_str().unwrap()],
    ));
    assert!(files_ending(&db, ".sst").is_empty(), "the load flushed");
    let wals = files_ending(&db, ".wal");
    let sizes: Vec<u64> = wals
        .iter()
        .map(|p| std::fs::metadata(p).unwrap().len())
        .collect();
    std::fs::remove_file(db.join("CURRENT")).unwrap();

    for args in [
        &["put", "a", "b"][..],
        &["scan"],
        &["get", "k0000001"],
        &["--read-only", "scan"],
        &["--no-create", "put", "a", "b"],
    ] {
        let err = fails(augur(&db, args));
        assert!(
            err.contains("CURRENT is missing") && err.contains("damaged"),
            "{args:?}: {err}"
        );
        assert!(!err.contains("creates it"), "{args:?}: {err}");
    }
    // Nothing was rewritten.
    assert_eq!(files_ending(&db, ".wal"), wals);
    for (p, len) in wals.iter().zip(sizes) {
        assert_eq!(std::fs::metadata(p).unwrap().len(), len, "{}", p.display());
    }
}
