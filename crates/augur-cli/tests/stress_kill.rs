//! The short crash test of issue 13 inside `cargo test`: `augur stress` with options
//! randomized per run is SIGKILLed at random moments (at least 10 times); each new run first
//! verifies the whole key space against the expected-state oracle the killed run left, and a
//! last run only verifies. `scripts/crash_test.sh` is the long version.

use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// `augur --db DB stress --randomize --keys 3000`, to which a test adds its flags.
fn stress(db: &str) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_augur"));
    c.args(["--db", db, "stress", "--randomize", "--keys", "3000"]);
    c
}

/// A finished run's stdout and stderr, for a failure message.
fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn stress_survives_sigkills_with_nothing_lost() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let db = db.to_str().unwrap();
    let mut verified_runs = 0;
    // Lives from 150 ms to ~1.5 s: some kills land during open and verification, most in
    // the middle of writes, flushes and compactions.
    let lives_ms = [
        150u64, 900, 400, 1500, 250, 700, 1200, 300, 1000, 500, 800, 350,
    ];
    for (i, life) in lives_ms.iter().enumerate() {
        let mut child = stress(db)
            .args(["--threads", "3", "--seconds", "600"])
            .args(["--seed", &(1000 + i).to_string()])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(*life));
        if let Some(status) = child.try_wait().unwrap() {
            let out = child.wait_with_output().unwrap();
            panic!(
                "run {i} ended by itself ({status}) before its kill:\n{}",
                text(&out)
            );
        }
        child.kill().unwrap(); // SIGKILL
        let out = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        if stdout.contains("verified 3000 keys at open") {
            verified_runs += 1;
        }
    }
    let out = stress(db).arg("--verify-only").output().unwrap();
    assert!(
        out.status.success(),
        "final verification failed:\n{}",
        text(&out)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("verified 3000 keys at open"));
    // Most runs got past verification before their kill (the shortest may not have).
    assert!(
        verified_runs >= 4,
        "only {verified_runs} runs verified before their kill"
    );
}
