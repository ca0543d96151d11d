//! `augur stress --faults ROUNDS`: the stress workload on the engine's fault-injecting file
//! system (`augur::fs::FaultFs`, in memory). Each round opens the database, verifies every key
//! against the oracle, arms one fault — a failed or torn write, sync, rename or remove, once
//! or from then on (a dead disk) — at a random point ahead, and runs the workload until the
//! fault has been hit or the round's operations are done. A write that fails must fail with
//! a clear error (`Io`, or `Poisoned` once the database refuses writes); the thread then
//! stops and leaves the write pending in the oracle.
//!
//! Most rounds then end with a clean close and a restart (the faults are cleared; nothing
//! unsynced is lost), and the next round's verification proves that no acknowledged write
//! was lost and nothing appeared that was never written. A fraction of the rounds
//! (`--power-cuts`, drawn from the seed on a stream of its own, so the fault plan of every
//! round is the same as without cuts) ends with a **power cut** instead: `FaultFs::crash`
//! keeps only synced file content and synced directory entries. Acknowledged writes may then
//! be lost, but only those after the last sync point, and only a suffix of the write order:
//! the round's write history (`stress/history.rs`) is checked against what the next open
//! finds, and the oracle is then reset to it.
//!
//! Some of the cut rounds (half, drawn on a third stream, so neither the fault plans nor
//! which rounds are cut change) are cut **in the middle** of their operations: a crash is
//! armed with `FaultFs::crash_at` at a drawn write, sync or operation ahead, and fires while
//! the threads are still writing. From then on the file system is down: every write fails
//! (the thread notes it and every thread stops; the write stays unacknowledged: like a write
//! in flight at the cut it may or may not survive), and a read through the dead process's
//! handles may fail too (the thread gives it up, excused only while the file system is
//! down, and goes on to its next operation). If
//! the round's own fault stops the threads first or the round ends before the crash point,
//! the cut comes at the round's end as in the other cut rounds.

use super::history::{CutOutcome, History};
use super::{oracle::Oracle, randomized, read_all, verify_all, Counts, StressArgs, Workload};
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
    /// Rounds ended by a power cut instead of a clean close.
    power_cuts: u64,
    /// Acknowledged writes in the rounds ended by a power cut.
    cut_acknowledged: u64,
    /// Of these, the writes a sync point had made durable (all found after the cut).
    cut_durable: u64,
    /// Of these, the writes the cut took away (acknowledged after the last sync point).
    cut_lost: u64,
    /// Writes never acknowledged (failed, or in flight at the cut) in the cut rounds.
    cut_pending: u64,
    /// Cut rounds whose crash fired while the threads were still running.
    mid_cuts: u64,
    /// Acknowledged writes, durable ones (all kept), lost ones and unacknowledged ones in
    /// the rounds cut in the middle.
    mid_acknowledged: u64,
    mid_durable: u64,
    mid_lost: u64,
    mid_pending: u64,
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
    if !(0.0..=1.0).contains(&args.power_cuts) {
        return Err(CliError::Failed(
            "--power-cuts must be between 0 and 1".into(),
        ));
    }
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
                "power_cut_rounds": o.power_cuts,
                "power_cut_acknowledged_writes": o.cut_acknowledged,
                "power_cut_durable_writes_kept": o.cut_durable,
                "power_cut_unsynced_writes_lost": o.cut_lost,
                "power_cut_unacknowledged_writes": o.cut_pending,
                "power_cut_mid_round": o.mid_cuts,
                "power_cut_mid_round_acknowledged_writes": o.mid_acknowledged,
                "power_cut_mid_round_durable_writes_kept": o.mid_durable,
                "power_cut_mid_round_unsynced_writes_lost": o.mid_lost,
                "power_cut_mid_round_unacknowledged_writes": o.mid_pending,
                "lost_writes": 0,
                "wrong_values": 0,
                "errors": o.errors,
            })
        );
    } else {
        println!(
            "seed {seed}: {rounds} fault rounds, {} faults fired: {} rounds refused writes with a clear error, {} kept working; {} keys verified ({} pending writes settled), 0 lost, 0 wrong",
            o.fired, o.refused, o.kept_working, o.keys_verified, o.pending_settled
        );
        println!(
            "{} rounds ended in a power cut: of {} acknowledged writes, {} made durable by a sync point were all kept, {} unsynced were lost (allowed), none out of order",
            o.power_cuts, o.cut_acknowledged, o.cut_durable, o.cut_lost
        );
        println!(
            "{} of them were cut in the middle of their operations, threads still writing: of {} acknowledged writes, {} durable were all kept, {} unsynced were lost; {} writes failed or in flight at the cut (may or may not survive)",
            o.mid_cuts, o.mid_acknowledged, o.mid_durable, o.mid_lost, o.mid_pending
        );
        for e in &o.errors {
            println!("  e.g. {e}");
        }
    }
    Ok(())
}

/// Runs rounds `0..rounds` and a last open that verifies what the last round left; see the
/// module doc.
fn rounds_on(
    fs: &FaultFs,
    dir: &Path,
    oracle_path: &Path,
    base: Options,
    args: &StressArgs,
    rounds: u64,
    seed: u64,
) -> Result<Outcomes, CliError> {
    let mut r = Rounds::new(fs, dir, oracle_path, base, args, seed)?;
    for round in 0..=rounds {
        let db = r.open_and_verify(round)?;
        if round == rounds {
            db.close()
                .map_err(|e| r.fail(round, format!("close: {e}")))?;
            break;
        }
        r.play(db, round)?;
    }
    Ok(r.out)
}

/// The state of a fault run carried from round to round: the file system and the options,
/// the random streams, the oracle and the round's write history, how the last round ended,
/// and the outcomes so far.
struct Rounds<'a> {
    fs: &'a FaultFs,
    dir: &'a Path,
    base: Options,
    args: &'a StressArgs,
    seed: u64,
    /// The main stream: options, faults, workload seeds.
    rng: StdRng,
    /// Which rounds end in a power cut: a stream of its own, so that the main stream is the
    /// same whatever the fraction.
    cuts: StdRng,
    /// Which cut rounds are cut in the middle, and where: a third stream, so that neither the
    /// main stream nor the choice of cut rounds depends on it.
    mids: StdRng,
    /// The compaction style of every round (drawn once, first).
    style: CompactionStyle,
    oracle: Oracle,
    history: History,
    /// The last round ended in a power cut.
    cut_before: bool,
    /// The last round's cut came in the middle of its operations.
    mid_before: bool,
    out: Outcomes,
}

/// The fault armed for a round: the `n`-th operation of kind `op` after the `before` done so
/// far fails.
#[derive(Clone, Copy)]
struct ArmedFault {
    op: FaultOp,
    before: u64,
    n: u64,
}

impl<'a> Rounds<'a> {
    /// Seeds the streams from `seed`, draws the compaction style and opens the oracle at
    /// `oracle_path`.
    fn new(
        fs: &'a FaultFs,
        dir: &'a Path,
        oracle_path: &Path,
        base: Options,
        args: &'a StressArgs,
        seed: u64,
    ) -> Result<Self, CliError> {
        let mut rng = StdRng::seed_from_u64(seed);
        let style = if rng.gen_bool(0.5) {
            CompactionStyle::Flsm
        } else {
            CompactionStyle::Leveled
        };
        let oracle = Oracle::open_or_create(oracle_path, args.keys, 0).map_err(CliError::Failed)?;
        Ok(Rounds {
            fs,
            dir,
            base,
            args,
            seed,
            rng,
            cuts: StdRng::seed_from_u64(seed ^ 0x706f_7765_725f_6375),
            mids: StdRng::seed_from_u64(seed ^ 0x6d69_645f_726f_756e),
            style,
            oracle,
            history: History::new(),
            cut_before: false,
            mid_before: false,
            out: Outcomes::default(),
        })
    }

    /// The error of round `round`, naming the seed.
    fn fail(&self, round: u64, what: String) -> CliError {
        CliError::Failed(format!("round {round} (seed {}): {what}", self.seed))
    }

    /// Opens the database for round `round` (options drawn from the main stream with
    /// `--randomize`) and verifies every key: against the last round's write history after a
    /// power cut, against the oracle otherwise. The round's history then starts empty.
    fn open_and_verify(&mut self, round: u64) -> Result<Db, CliError> {
        let mut opts = if self.args.randomize {
            randomized(&mut self.rng)
        } else {
            self.base.clone()
        };
        opts.compaction = Some(self.style);
        opts.fs = Arc::new(self.fs.clone());
        let db = Db::open(self.dir, opts).map_err(|e| self.fail(round, format!("open: {e}")))?;
        let verified = if self.cut_before {
            verify_after_cut(&db, &self.oracle, &self.history, &mut self.out).map(
                |(verified, cut)| {
                    if self.mid_before {
                        self.out.mid_acknowledged += cut.acknowledged;
                        self.out.mid_durable += cut.durable;
                        self.out.mid_lost += cut.lost;
                        self.out.mid_pending += cut.pending;
                    }
                    verified
                },
            )
        } else {
            verify_all(&db, &self.oracle).map(|(verified, settled)| {
                self.out.pending_settled += settled;
                verified
            })
        };
        let verified = verified.map_err(|e| self.fail(round, format!("{e:?}")))?;
        self.out.keys_verified += verified;
        // The open made everything it found durable: the next history starts here.
        self.history.clear();
        Ok(db)
    }

    /// Round `round` on the open database: arms its fault (and, if it is cut in the middle,
    /// the crash), runs the workload, counts the outcome and ends the round.
    fn play(&mut self, db: Db, round: u64) -> Result<(), CliError> {
        let fault = self.arm_fault();
        let cut = self.arm_cut();
        let refusals = self.run_workload(&db, round, fault)?;
        // Operations rejected while the file system is down are not counted: this is whether
        // the round's fault fired before any cut.
        let fired = self.fs.op_count(fault.op) >= fault.before + fault.n;
        let mid_cut = self.fs.is_crashed();
        self.tally(fired, mid_cut, &refusals);
        self.end_round(db, cut, mid_cut);
        Ok(())
    }

    /// Draws the round's fault from the main stream (which operation, how far ahead, and
    /// whether it fails once, torn or with an error, or from then on) and arms it.
    fn arm_fault(&mut self) -> ArmedFault {
        let (fs, rng) = (self.fs, &mut self.rng);
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
        ArmedFault { op, before, n }
    }

    /// Draws whether the round ends in a power cut (cut stream) and where a cut in the middle
    /// would come (mid stream, drawn every round); arms that crash if the round is cut in the
    /// middle. Returns whether the round is cut.
    fn arm_cut(&mut self) -> bool {
        // Drawn here rather than after the round (same stream, same order: the same rounds
        // are cut as before mid-round cuts existed).
        let cut = self.cuts.gen_bool(self.args.power_cuts);
        let mids = &mut self.mids;
        let (mid, crash_op, crash_n) = (
            mids.gen_bool(0.5),
            [FaultOp::Write, FaultOp::Sync, FaultOp::Any][mids.gen_range(0..3)],
            mids.gen_range(1..=4000u64),
        );
        if cut && mid {
            // A round of 3 threads × 400 operations makes some 3,000 to 15,000 appends and
            // 10 to 1,000 syncs: the crash point spreads over the first few thousand
            // appends or operations, or the first 63 syncs.
            let n = if crash_op == FaultOp::Sync {
                crash_n.div_ceil(64)
            } else {
                crash_n
            };
            self.fs.crash_at(crash_op, n);
        }
        cut
    }

    /// Runs the workload on `db` (its seed from the main stream) until the fault or a crash
    /// stops the threads or their operations are done. Returns the clear errors with which
    /// writes were refused.
    fn run_workload(
        &mut self,
        db: &Db,
        round: u64,
        fault: ArmedFault,
    ) -> Result<Vec<String>, CliError> {
        let ArmedFault { op, n, .. } = fault;
        let refusals = Mutex::new(Vec::new());
        let run = Workload {
            db,
            oracle: &self.oracle,
            threads: self.args.threads,
            ops: if self.args.ops > 0 {
                self.args.ops
            } else {
                400
            },
            deadline: None,
            sync_every: self.args.sync_every,
            seed: self.rng.gen(),
            refusals: Some(&refusals),
            history: Some(&self.history),
            power: Some(self.fs),
        };
        if let Err(e) = run.run(&Counts::default()) {
            return Err(self.fail(round, format!("{op:?} fault at +{n}: {e}")));
        }
        Ok(refusals.into_inner().unwrap_or_else(|p| p.into_inner()))
    }

    /// Counts the round's outcome: whether its fault fired and, if so, whether writes were
    /// then refused or the engine kept working; the first refusal of a kind not seen yet (up
    /// to 6); and a cut in the middle.
    fn tally(&mut self, fired: bool, mid_cut: bool, refusals: &[String]) {
        let out = &mut self.out;
        if fired {
            out.fired += 1;
            if mid_cut {
                // The cut refused the writes: whether the engine kept working after the
                // fault is not known.
            } else if refusals.is_empty() {
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
        if mid_cut {
            out.mid_cuts += 1;
        }
    }

    /// Ends the round: a power cut if it is `cut` (unless the crash came `mid_cut`), then a
    /// close and the faults cleared; the next open verifies accordingly.
    fn end_round(&mut self, db: Db, cut: bool, mid_cut: bool) {
        self.cut_before = cut;
        self.mid_before = mid_cut;
        if cut {
            // Power cut (unless the armed one already came): the disk keeps only what was
            // synced; the dead process's handles fail from now on (closing it only stops
            // its threads).
            if !mid_cut {
                self.fs.crash();
            }
            self.out.power_cuts += 1;
        }
        // Closing may fail on a dead disk; the next open must cope either way.
        let _ = db.close();
        drop(db);
        self.fs.reset_faults();
    }
}

/// The verification at the open after a power cut: every key's value is checked against the
/// round's write history (lost writes allowed only after the last sync point, and only a
/// suffix of the write order), then the oracle is reset to what was found.
fn verify_after_cut(
    db: &Db,
    oracle: &Oracle,
    history: &History,
    out: &mut Outcomes,
) -> Result<(u64, CutOutcome), CliError> {
    let found = read_all(db, oracle.keys())?;
    let cut = history
        .check(&found, |k| oracle.get(k).value)
        .map_err(|e| CliError::Failed(format!("after a power cut: {e}")))?;
    out.cut_acknowledged += cut.acknowledged;
    out.cut_durable += cut.durable;
    out.cut_lost += cut.lost;
    out.cut_pending += cut.pending;
    for (k, &found) in (0..oracle.keys()).zip(&found) {
        let e = oracle.get(k);
        if e.value != found || e.pending != 0 {
            oracle.settle(k, found).map_err(CliError::Failed)?;
        }
    }
    Ok((oracle.keys(), cut))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stress::{key, value};
    use augur::{WriteBatch, WriteOptions};

    /// A database on a fault-injecting file system with its oracle and round history.
    struct Rig {
        fs: FaultFs,
        oracle: Oracle,
        history: History,
        _dir: tempfile::TempDir,
    }

    impl Rig {
        fn new() -> Rig {
            let dir = tempfile::tempdir().unwrap();
            let oracle = Oracle::open_or_create(&dir.path().join("o"), 4, 0).unwrap();
            Rig {
                fs: FaultFs::new(),
                oracle,
                history: History::new(),
                _dir: dir,
            }
        }

        fn open(&self) -> Db {
            let opts = Options {
                fs: Arc::new(self.fs.clone()),
                ..Options::default()
            };
            Db::open("/db", opts).unwrap()
        }

        /// Puts value `id` into key `k` as a stress thread does (oracle, history, write).
        fn put(&self, db: &Db, k: u64, id: u32, sync: bool) {
            let committed = self.oracle.get(k).value;
            self.oracle.begin(k, id).unwrap();
            let w = self.history.begin(&[(k, id, committed)]);
            let mut b = WriteBatch::new();
            b.put(key(k), value(k, id));
            db.write_opt(b, WriteOptions { sync }).unwrap();
            self.history.acknowledge(w, sync);
            self.oracle.commit(k).unwrap();
        }

        /// Keys 0..4 written in order, key 1 synced; then a power cut and a reopen, whose
        /// state `tamper` may change (a broken engine) before it is verified.
        fn cut_and_verify(&self, tamper: impl FnOnce(&Db)) -> Result<Outcomes, CliError> {
            let db = self.open();
            self.put(&db, 0, 10, false);
            self.put(&db, 1, 11, true);
            self.put(&db, 2, 12, false);
            self.put(&db, 3, 13, false);
            self.fs.crash();
            drop(db);
            self.fs.reset_faults();
            let db = self.open();
            tamper(&db);
            let mut out = Outcomes::default();
            verify_after_cut(&db, &self.oracle, &self.history, &mut out).map(|_| out)
        }
    }

    #[test]
    fn a_power_cut_loses_only_the_unsynced_tail() {
        let rig = Rig::new();
        let out = rig.cut_and_verify(|_| {}).unwrap();
        assert_eq!(
            (out.cut_acknowledged, out.cut_durable, out.cut_lost),
            (4, 2, 2)
        );
        // The oracle now holds what survived.
        let values: Vec<u32> = (0..4).map(|k| rig.oracle.get(k).value).collect();
        assert_eq!(values, [10, 11, 0, 0]);
    }

    #[test]
    fn a_power_cut_in_the_middle_leaves_the_failed_write_pending() {
        let rig = Rig::new();
        let db = rig.open();
        rig.put(&db, 0, 10, false);
        rig.put(&db, 1, 11, true);
        // The cut comes at the next append, while a thread writes key 2 (a synced write).
        rig.fs.crash_at(FaultOp::Write, 1);
        rig.oracle.begin(2, 12).unwrap();
        let _in_flight = rig.history.begin(&[(2, 12, 0)]);
        let mut b = WriteBatch::new();
        b.put(key(2), value(2, 12));
        let e = db.write_opt(b, WriteOptions { sync: true }).unwrap_err();
        assert!(matches!(e, augur::Error::Io { .. }), "{e}");
        assert!(rig.fs.is_crashed());
        // The process is dead: writes fail (reads may still be served from memory).
        assert!(db.put(key(3), value(3, 13)).is_err());
        let _ = db.close();
        drop(db);
        rig.fs.reset_faults();
        let db = rig.open();
        let mut out = Outcomes::default();
        let (_, cut) = verify_after_cut(&db, &rig.oracle, &rig.history, &mut out).unwrap();
        assert_eq!((cut.acknowledged, cut.durable, cut.pending), (2, 2, 1));
        // The synced write survived, and the oracle holds what the open found.
        assert_eq!(rig.oracle.get(1).value, 11);
        assert_eq!(rig.oracle.get(2).pending, 0);
        assert_eq!(read_id_of(&db, 2), rig.oracle.get(2).value);
    }

    fn read_id_of(db: &Db, k: u64) -> u32 {
        crate::stress::read_id(db, k, None).unwrap()
    }

    #[test]
    fn a_lost_synced_write_is_caught() {
        let rig = Rig::new();
        let err = rig
            .cut_and_verify(|db| db.delete(key(1)).unwrap())
            .unwrap_err();
        let err = format!("{err:?}");
        assert!(
            err.contains("key 1: holds 0") && err.contains("synced write"),
            "{err}"
        );
    }

    #[test]
    fn a_non_prefix_recovery_is_caught() {
        let rig = Rig::new();
        // Key 3's write comes back without key 2's, which was acknowledged before it began.
        let err = rig
            .cut_and_verify(|db| db.put(key(3), value(3, 13)).unwrap())
            .unwrap_err();
        let err = format!("{err:?}");
        assert!(
            err.contains("key 2: holds 0") && err.contains("before write #3 began"),
            "{err}"
        );
    }
}
