//! `augur stress` refuses a database it did not create (issue 23, case 7; moved here from
//! `cli.rs` when `stress` went behind the cargo feature of its name, which this test needs).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs `augur --db DIR ARGS...`.
fn augur(db: &Path, args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_augur"));
    cmd.arg("--db").arg(db).args(args);
    cmd.output().expect("run the augur binary")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Asserts success and returns stdout.
fn ok(o: Output) -> String {
    assert!(
        o.status.success(),
        "status {:?}\nstdout: {}\nstderr: {}",
        o.status,
        stdout(&o),
        stderr(&o)
    );
    stdout(&o)
}

/// Asserts exit status 2, `error:` on stderr and nothing on stdout; returns stderr.
fn fails(o: Output) -> String {
    assert_eq!(
        o.status.code(),
        Some(2),
        "stdout: {}\nstderr: {}",
        stdout(&o),
        stderr(&o)
    );
    let err = stderr(&o);
    assert!(err.contains("error:"), "stderr: {err}");
    err
}

/// The files of `dir` whose names end with `suffix`, sorted.
fn files_ending(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    v.sort();
    v
}

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
