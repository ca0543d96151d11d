//! Helpers shared by the end-to-end tests of the `augur` binary: run it, check its exit
//! status and output, list a database's files, and read the JSON records a bench run writes; `peers.rs`: the checks the peer
//! engines' tests share. Each test file uses a subset.
#![allow(dead_code)]

pub mod peers;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs `augur ARGS...`.
pub fn augur(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_augur"))
        .args(args)
        .output()
        .expect("run the augur binary")
}

/// Runs `augur --db DIR ARGS...`.
pub fn augur_db(db: &Path, args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_augur"));
    cmd.arg("--db").arg(db).args(args);
    cmd.output().expect("run the augur binary")
}

/// The command's stdout as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The command's stderr as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Asserts exit status 2, `error:` on stderr and nothing on stdout; returns stderr.
pub fn fails_with_error(o: Output) -> String {
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
pub fn files_ending(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    v.sort();
    v
}

/// Asserts success and returns stdout.
pub fn ok(o: Output) -> String {
    assert!(
        o.status.success(),
        "status {:?}\nstdout: {}\nstderr: {}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Asserts exit status 2 and returns stderr.
pub fn fails(o: Output) -> String {
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs a bench in `dir` (values separated) writing JSON to a file and returns the records.
pub fn bench_json(dir: &Path, args: &[&str]) -> Vec<Value> {
    bench_json_with(dir, &[], "--value-separation-threshold=0", args)
}

/// Runs `augur [GLOBAL...] --db DIR bench SEPARATION --json FILE ARGS...` and returns the
/// records (`separation`: the `--value-separation-threshold=N` flag).
pub fn bench_json_with(dir: &Path, global: &[&str], separation: &str, args: &[&str]) -> Vec<Value> {
    let json = dir.with_extension("json");
    let mut all: Vec<&str> = global.to_vec();
    all.extend([
        "--db",
        dir.to_str().unwrap(),
        "bench",
        separation,
        "--json",
        json.to_str().unwrap(),
    ]);
    all.extend_from_slice(args);
    ok(augur(&all));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    v.as_array().unwrap().clone()
}

/// Runs a bench in `dir` on `engine` (`--engine=ENGINE`) and returns the JSON records.
pub fn bench_json_on(dir: &Path, engine: &str, args: &[&str]) -> Vec<Value> {
    let engine_flag = format!("--engine={engine}");
    let mut all = vec![engine_flag.as_str()];
    all.extend_from_slice(args);
    bench_json(dir, &all)
}

/// Runs `args` on the peer `engine` and on Augur, each in its own directory under `root`;
/// checks every peer record names the peer and returns (the peer's records, Augur's).
pub fn peer_and_augur(root: &Path, engine: &str, args: &[&str]) -> (Vec<Value>, Vec<Value>) {
    let peer = bench_json_on(&root.join(engine), engine, args);
    for r in &peer {
        assert_eq!(r["engine"], engine, "{r}");
        assert_eq!(r["config"]["engine"], engine, "{r}");
    }
    let ours = bench_json_on(&root.join("augur"), "augur", args);
    (peer, ours)
}

/// The record of benchmark `name`.
pub fn record<'a>(records: &'a [Value], name: &str) -> &'a Value {
    records
        .iter()
        .find(|r| r["benchmark"] == name)
        .unwrap_or_else(|| panic!("no {name} in {records:?}"))
}
