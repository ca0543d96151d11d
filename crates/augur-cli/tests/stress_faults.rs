//! The short fault-injection run of issue 13 inside `cargo test`: `augur stress --faults`
//! with options randomized per round, one fault armed per round and half of the rounds
//! ended by a power cut (only synced data survives). It must report power-cut rounds, keep
//! every write a sync point made durable, lose only unsynced writes and nothing out of
//! order (the run fails otherwise), and see no wrong value. Some cut rounds are cut in the
//! middle of their operations, while the threads write: writes then fail and stay
//! unacknowledged, and the same checks apply.

use std::process::Command;

#[test]
fn fault_rounds_with_power_cuts_lose_no_durable_write() {
    let out = Command::new(env!("CARGO_BIN_EXE_augur"))
        .args(["--json", "--db", "/unused", "stress", "--randomize"])
        .args(["--faults", "30", "--power-cuts", "0.5", "--seed", "1313"])
        .args(["--threads", "3", "--keys", "3000"])
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "stress --faults failed:\n{text}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect(&text);
    let n = |field: &str| {
        report[field]
            .as_u64()
            .unwrap_or_else(|| panic!("{field}: {text}"))
    };
    assert_eq!(n("fault_rounds"), 30);
    assert!(n("power_cut_rounds") >= 5, "{text}");
    assert!(n("power_cut_durable_writes_kept") > 0, "{text}");
    assert!(n("power_cut_mid_round") >= 1, "{text}");
    assert!(
        n("power_cut_mid_round_acknowledged_writes") > 0,
        "no write acknowledged before a mid-round cut: {text}"
    );
    assert_eq!(n("lost_writes"), 0);
    assert_eq!(n("wrong_values"), 0);
    assert_eq!(n("keys_verified"), 31 * 3000);
}
