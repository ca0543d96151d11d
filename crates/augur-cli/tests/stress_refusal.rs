//! `augur stress` refuses a database it did not create (issue 23, case 7; moved here from
//! `cli.rs` when `stress` went behind the cargo feature of its name, which this test needs).

mod common;

use common::{augur_db as augur, fails_with_error as fails, files_ending, ok};
use std::path::Path;

/// Issue 23, case 7: rough edges of the CLI (the `stress` part; the rest is in `cli.rs`).
#[test]
fn stress_refuses_a_database_it_did_not_create() {
    let t = tempfile::tempdir().unwrap();
    // An FLSM database made by other commands, as in `cli.rs`'s rough-edges test.
    let flsm = t.path().join("flsm");
    ok(augur(&flsm, &["--compaction", "flsm", "put", "a", "1"]));
    ok(augur(&flsm, &["--compaction", "flsm", "put", "b", "2"]));

    // `stress` refuses a database it did not create, before writing anything.
    let before: Vec<_> = files_ending(&flsm, "");
    let err = fails(augur(&flsm, &["stress", "--ops", "100"]));
    assert!(err.contains("stress"), "{err}");
    assert_eq!(files_ending(&flsm, ""), before);
    let mut expected = flsm.as_os_str().to_owned();
    expected.push(".expected");
    assert!(!Path::new(&expected).exists(), "left {expected:?}");
}
