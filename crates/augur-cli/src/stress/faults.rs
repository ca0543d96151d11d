//! `augur stress --faults ROUNDS`: the stress workload on the engine's fault-injecting file
//! system (`augur::fs::FaultFs`, in memory). Each round opens the database, verifies every key
//! against the oracle, arms one fault — a failed or torn write, sync, rename or remove, once
//! or from then on (a dead disk) — at a random point ahead, and runs the workload until the
//! fault has been hit or the round's operations are done. A write that fails must fail with
//! a clear error (`Io`, or `Poisoned` once the database refuses writes); the thread then
//! stops and leaves the write pending in the oracle. The database is closed, the faults are
//! cleared (a restart, not a power cut: power cuts are the crash suites' job), and the next
//! round's verification proves that no acknowledged write was lost and nothing appeared that
//! was never written.

use super::{oracle::Oracle, randomized, verify_all, Counts, StressArgs, Workload};
use crate::error::CliError;
use augur::fs::{FaultFs, FaultMode, FaultOp};
use augur::{CompactionStyle, Db, Options};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// Outcomes over all rounds.
#[derive(Debug, Default)]
struct Outcomes {
    /// Rounds whose armed fault was reached by an operation.
    fired: u64,
    /// Rounds in which a write (or flush/compaction/GC call) was refused with a clear error.
    refused: u64,
    /// Rounds whose fault fired and the database kept accepting writes (the failed operation
    /// was a background one that the engine retried or skipped, or a remove).
    kept_working: u64,
    /// Keys verified at the opens.
    keys_verified: u64,
    /// Writes found pending (failed or in flight) and settled at an open.
    pending_settled: u64,
    /// The first error message of each kind seen, for the report.
    errors: Vec<String>,
}

/// Runs `rounds` fault-injection rounds; see the module doc.
pub fn run(
    base: Options,
    args: &StressArgs,
    rounds: u64,
    seed: u64,
    json: bool,
) -> Result<(), CliError> {
    let fs = FaultFs::new();
    let dir = Path::new("/stress/db");
    let oracle_path = std::env::temp_dir().join(format!(
        "augur-stress-faults-{}-{seed}.expected",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&oracle_path);
    let result = rounds_on(&fs, dir, &oracle_path, base, args, rounds, seed);
    let _ = std::fs::remove_file(&oracle_path);
    let o = result?;
    if json {
        println!(
            "{}",
            serde_json::json!({
                "seed": seed,
                "fault_rounds": rounds,
                "faults_fired": o.fired,
                "rounds_refusing_writes": o.refused,
                "rounds_kept_working": o.kept_working,
                "keys_verified": o.keys_verified,
                "pending_settled": o.pending_settled,
                "lost_writes": 0,
                "errors": o.errors,
            })
        );
    } else {
        println!(
            "seed {seed}: {rounds} fault rounds, {} faults fired: {} rounds refused writes with a clear error, {} kept working; {} keys verified ({} pending writes settled), 0 lost, 0 wrong",
            o.fired, o.refused, o.kept_working, o.keys_verified, o.pending_settled
        );
        for e in &o.errors {
            println!("  e.g. {e}");
        }
    }
    Ok(())
}

fn rounds_on(
    fs: &FaultFs,
    dir: &Path,
    oracle_path: &Path,
    base: Options,
    args: &StressArgs,
    rounds: u64,
    seed: u64,
) -> Result<Outcomes, CliError> {
    let mut rng = StdRng::seed_from_u64(seed);
    let style = if rng.gen_bool(0.5) {
        CompactionStyle::Flsm
    } else {
        CompactionStyle::Leveled
    };
    let oracle = Oracle::open_or_create(oracle_path, args.keys, 0).map_err(CliError::Failed)?;
    let mut out = Outcomes::default();
    let fail =
        |round: u64, what: String| CliError::Failed(format!("round {round} (seed {seed}): {what}"));
    for round in 0..=rounds {
        let mut opts = if args.randomize {
            randomized(&mut rng)
        } else {
            base.clone()
        };
        opts.compaction = style;
        opts.fs = Arc::new(fs.clone());
        let db = Db::open(dir, opts).map_err(|e| fail(round, format!("open: {e}")))?;
        let (verified, settled) =
            verify_all(&db, &oracle).map_err(|e| fail(round, format!("{e:?}")))?;
        out.keys_verified += verified;
        out.pending_settled += settled;
        if round == rounds {
            db.close().map_err(|e| fail(round, format!("close: {e}")))?;
            break;
        }
        let op = [
            FaultOp::Write,
            FaultOp::Sync,
            FaultOp::Rename,
            FaultOp::Remove,
            FaultOp::Any,
        ][rng.gen_range(0..5)];
        let before = fs.op_count(op);
        let n = rng.gen_range(1..=300);
        if rng.gen_range(0..4) == 0 {
            fs.fail_from(op, n);
        } else {
            let mode = if rng.gen_bool(0.5) {
                FaultMode::Tear
            } else {
                FaultMode::Error
            };
            fs.fail_at(op, n, mode);
        }
        let refusals = Mutex::new(Vec::new());
        let run = Workload {
            db: &db,
            oracle: &oracle,
            threads: args.threads,
            ops: if args.ops > 0 { args.ops } else { 400 },
            deadline: None,
            sync_every: args.sync_every,
            seed: rng.gen(),
            refusals: Some(&refusals),
        };
        if let Err(e) = run.run(&Counts::default()) {
            return Err(fail(round, format!("{op:?} fault at +{n}: {e}")));
        }
        let fired = fs.op_count(op) >= before + n;
        let refusals = refusals.into_inner().unwrap_or_else(|p| p.into_inner());
        if fired {
            out.fired += 1;
            if refusals.is_empty() {
                out.kept_working += 1;
            } else {
                out.refused += 1;
            }
        }
        if let Some(first) = refusals.first() {
            let kind: String = first.chars().take(60).collect();
            if out.errors.len() < 6 && !out.errors.iter().any(|e| e.starts_with(&kind)) {
                out.errors.push(first.clone());
            }
        }
        // Closing may fail on a dead disk; the next open must cope either way.
        let _ = db.close();
        drop(db);
        fs.reset_faults();
    }
    Ok(out)
}
