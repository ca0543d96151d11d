//! Crash consistency under the fault-injecting file system (`augur::fs::FaultFs`), in the
//! spirit of LevelDB's `fault_injection_test` and redb's `crash_consistency`.
//!
//! The contract checked after every simulated power cut:
//! - the workload is a numbered list of writes (single puts, deletes, batches); write `i`
//!   puts values that embed `i`, so every state names the writes it came from;
//! - `durable` = 1 + the index of the last write acknowledged with `sync = true`;
//!   `attempted` = the number of writes that were started (acknowledged ones plus the one
//!   that failed, whose fate is unknown: it may have reached the disk before the crash);
//! - the recovered state must equal the model state after some prefix of `P` writes with
//!   `durable <= P <= attempted` (every synced write survives; nothing torn or reordered);
//! - the database works afterwards: more writes, a clean reopen, the same state plus them.
//!
//! Flushes, compactions and value-log GC run inline (`background_threads = false`) so a
//! crash point (the n-th counted file-system operation) is deterministic and reproducible;
//! one test repeats the contract with background threads. Also covered: crashes inside
//! value-log GC, compaction and recovery itself, and injected (non-crash) I/O errors, which
//! must poison the database. `AUGUR_CRASH_POINTS=N` raises the number of crash points of
//! the main workload (every operation: `AUGUR_CRASH_POINTS=100000`).
//!
//! Learning (issue 3): case `i` of every test runs under [`Learning::nth`]`(i)`, so each
//! suite walks through every learning policy × index type, with error bounds, level models
//! and a `T_wait` of 0–2 ms (background learners train while the workload runs and may be
//! mid-training at the crash). Recovery often opens under a different policy than the one
//! that wrote the data ([`Learning::reopen_of`]), and the clean reopen after it goes back:
//! models persisted by `at-build` files keep serving lookups, `never` ignores them, and the
//! contract is the same under all of them. The workload also reads (lazy learning) and, under
//! `offline`, calls `Db::learn_all`.
//!
//! Read modes (issue 27): [`Learning::nth`]`(i)` also picks case `i`'s read mode
//! ([`common::Reads::nth`]), so a third of the cases of every policy and index type write or
//! recover under `direct`: tables and sealed value-log segments read through the page cache
//! (`FaultFs` has no `O_DIRECT`; the cache logic is the same), with budgets from 0 to 64 MiB.

mod common;
#[path = "crash_faultfs/models.rs"]
mod models;
#[path = "crash_faultfs/workload.rs"]
mod workload;

use augur::fs::{FaultFs, FaultMode, FaultOp};
use augur::{Db, Error, Options, WriteOptions};
use common::Learning;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use workload::*;

/// `count` crash points spread over `1..=total`, always including the first few and the last.
fn crash_points(total: u64, count: u64) -> Vec<u64> {
    let step = (total / count).max(1);
    let mut points: Vec<u64> = (1..=total).step_by(step as usize).collect();
    points.extend([2, 3, total]);
    points.sort_unstable();
    points.dedup();
    points.retain(|&n| n >= 1 && n <= total);
    points
}

/// Number of crash points per workload; `AUGUR_CRASH_POINTS` raises it for longer runs.
fn point_budget(default: u64) -> u64 {
    std::env::var("AUGUR_CRASH_POINTS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// Crashes the workload, run under [`Learning::nth`]`(case)`, at the `n`-th counted
/// operation of kind `op` after open, recovers (every other case under a different policy,
/// [`Learning::reopen_of`]), and checks the prefix contract; the clean reopen that follows
/// goes back to the writing configuration. With `nested`, also crashes several times
/// inside the recovery itself before the final open.
fn crash_case(writes: &[Write], op: FaultOp, (n, total): (u64, u64), nested: bool, case: u64) {
    let written = Learning::nth(case);
    let recovery = if case % 2 == 1 {
        Learning::reopen_of(case)
    } else {
        written
    };
    let mut ctx = format!("crash at {op:?} #{n} (case {case}: {written:?}, recovery {recovery:?})");
    let (fs, out) = match run_to_crash(writes, op, n, &written, &ctx) {
        Some(crashed) => crashed,
        None => {
            // Models stored in the tables (built at flush, large with a small error bound)
            // change table sizes, so compactions, and so this configuration's count of
            // operations: crash at the same fraction of its own run.
            // Background work (flushes, compactions) also counts operations, and its timing
            // varies from run to run: when this configuration's own count still reaches `n`,
            // or the scaled point falls after the last write fails, crash a little earlier.
            let own = count_ops(writes, op, &written);
            let scaled = (u128::from(n) * u128::from(own) / u128::from(total.max(1))) as u64;
            let mut n = scaled.clamp(1, own.max(1));
            let mut attempts = 0;
            loop {
                let at = format!("{ctx}, crashing at #{n} of this configuration's {own}");
                if let Some(crashed) = run_to_crash(writes, op, n, &written, &at) {
                    ctx = at;
                    break crashed;
                }
                attempts += 1;
                assert!(
                    attempts < 6 && n > 1,
                    "{at}: the workload did not reach the crash point in {attempts} runs"
                );
                n = (n * 3 / 4).max(1);
            }
        }
    };
    if nested {
        crash_during_recovery(&fs, &recovery);
    }
    let db = open_with(&fs, &recovery, &ctx);
    let p = matching_prefix(&db, writes, out.durable, out.attempted, &ctx);
    assert!(p >= out.durable);
    check_model_use(&db, &recovery, &ctx);
    db.verify()
        .unwrap_or_else(|e| panic!("{ctx}: verify after recovery failed: {e}"));
    check_still_works(db, &fs, model_after(&writes[..p]), n, &written, &ctx);
}

/// Runs `writes` under `l` on a fresh file system set to crash at the `n`-th operation of
/// kind `op`; returns the crashed file system (faults reset) and the outcome, or `None` when
/// the workload ended without reaching the crash point.
fn run_to_crash(
    writes: &[Write],
    op: FaultOp,
    n: u64,
    l: &Learning,
    ctx: &str,
) -> Option<(FaultFs, Outcome)> {
    let fs = FaultFs::new();
    let db = open_with(&fs, l, ctx);
    fs.crash_at(op, n);
    let out = run_writes(&db, writes, l);
    let reached = out.error.is_some() && fs.is_crashed();
    drop(db);
    fs.reset_faults();
    reached.then_some((fs, out))
}

/// The operations of kind `op` that `writes` perform under `l`, without faults.
fn count_ops(writes: &[Write], op: FaultOp, l: &Learning) -> u64 {
    let fs = FaultFs::new();
    let db = open_with(&fs, l, "count");
    let before = fs.op_count(op);
    let out = run_writes(&db, writes, l);
    assert!(out.error.is_none(), "run without faults failed: {out:?}");
    fs.op_count(op) - before
}

/// Crashes inside `Db::open` (under `l`) at growing operation counts until an open
/// completes.
fn crash_during_recovery(fs: &FaultFs, l: &Learning) {
    for m in [1, 2, 3, 5, 8, 13, 21, 34, 55, 89] {
        fs.crash_at(FaultOp::Any, m);
        let attempt = Db::open(DIR, options_with(fs, l));
        let crashed = fs.is_crashed();
        drop(attempt);
        fs.reset_faults();
        if !crashed {
            break;
        }
    }
}

/// Runs the workload without faults (under the engine's default learning options); returns
/// the operations of kind `op` it performed. Most learning configurations perform as many
/// (the model section is written, empty or not, by one append); one whose models change
/// table sizes enough to change compactions performs fewer, and `crash_case` then scales its
/// crash point to that configuration's own count.
fn dry_run(writes: &[Write], op: FaultOp) -> u64 {
    let fs = FaultFs::new();
    let db = open(options(&fs), "dry run");
    let before = fs.op_count(op);
    let out = run_writes(&db, writes, &Learning::of(&options(&fs)));
    assert!(out.error.is_none(), "dry run failed: {out:?}");
    let ops = fs.op_count(op) - before;
    let stats = db.stats();
    assert!(stats.flushes >= 10, "too few flushes: {stats:?}");
    assert!(stats.compactions >= 5, "too few compactions: {stats:?}");
    assert!(stats.gc_runs >= 2, "too few value-log GC runs: {stats:?}");
    assert_eq!(scan(&db, "dry run"), model_after(writes));
    ops
}

#[test]
fn crash_at_many_operation_counts_recovers_a_prefix_with_every_synced_write() {
    let writes = workload(7, 1500, 0);
    let total = dry_run(&writes, FaultOp::Any);
    let points = crash_points(total, point_budget(800));
    assert!(points.len() >= 500, "only {} crash points", points.len());
    for (i, &n) in points.iter().enumerate() {
        crash_case(&writes, FaultOp::Any, (n, total), i % 8 == 0, i as u64);
    }
}

#[test]
fn crash_at_each_sync_recovers_a_prefix_with_every_synced_write() {
    let writes = workload(11, 700, 0);
    let total = dry_run(&writes, FaultOp::Sync);
    for (i, n) in crash_points(total, point_budget(total))
        .into_iter()
        .enumerate()
    {
        crash_case(&writes, FaultOp::Sync, (n, total), false, i as u64);
    }
}

/// A state for the maintenance crash tests: separated values written, two thirds of them
/// overwritten and some deleted, everything flushed to several L0 files (no automatic
/// compaction or GC), and a synced tail of writes left in the memtable and WAL.
fn maintenance_setup(opts: Options) -> (Db, Vec<Write>) {
    let mut writes = Vec::new();
    let put = |i: usize, k: u32, len: usize| Write {
        ops: vec![(key(k), Some(value(i, 0, len)))],
        sync: false,
    };
    for k in 0..KEY_SPACE {
        writes.push(put(writes.len(), k, 60 + (k as usize * 7) % 200));
    }
    for k in (0..KEY_SPACE).filter(|k| k % 3 != 0) {
        writes.push(put(writes.len(), k, 50 + (k as usize * 13) % 150));
    }
    for k in (0..KEY_SPACE).filter(|k| k % 5 == 0) {
        writes.push(Write {
            ops: vec![(key(k), None)],
            sync: false,
        });
    }
    let db = open(opts, "setup");
    for chunk in writes.chunks(40) {
        for w in chunk {
            db.write_opt(batch_of(w), WriteOptions::default())
                .expect("setup write");
        }
        db.flush().expect("setup flush");
    }
    let tail: Vec<Write> = (0..12)
        .map(|j| {
            let i = writes.len() + j;
            let mut w = put(i, (j as u32 * 11) % KEY_SPACE, 40 + j * 20);
            w.sync = j == 11;
            w
        })
        .collect();
    for w in &tail {
        db.write_opt(batch_of(w), WriteOptions { sync: w.sync })
            .expect("setup write");
    }
    writes.extend(tail);
    (db, writes)
}

fn maintenance_options(fs: &FaultFs, l: &Learning) -> Options {
    l.apply(Options {
        l0_compaction_trigger: 100,
        l0_slowdown_trigger: 100,
        l0_stop_trigger: 100,
        value_separation_threshold: 40,
        value_log_gc_ratio: 1.0,
        ..options(fs)
    })
}

/// A state for the relocation crash test: the maintenance state compacted (so the first
/// segments are mostly garbage, past a GC ratio of 0.3), then a fifth of the keys written
/// again and flushed, so that compacting L0 merges every file of the last level and
/// relocates the values still live in those segments. Automatic GC is held so that the
/// compaction is what relocates.
fn relocation_setup(opts: Options) -> (Db, Vec<Write>) {
    let (db, mut writes) = maintenance_setup(opts);
    db.hold_automatic_gc_for_test(true);
    db.compact_range(None, None).expect("setup compaction");
    for k in (0..KEY_SPACE).filter(|k| k % 5 == 1) {
        let i = writes.len();
        let w = Write {
            ops: vec![(key(k), Some(value(i, 0, 60 + k as usize % 90)))],
            sync: false,
        };
        db.write_opt(batch_of(&w), WriteOptions::default())
            .expect("setup write");
        writes.push(w);
    }
    db.flush().expect("setup flush");
    let past = db
        .stats()
        .value_log
        .iter()
        .filter(|s| !s.active && s.garbage_bytes as f64 >= 0.3 * s.bytes as f64)
        .count();
    assert!(past > 0, "no segment past the GC ratio");
    (db, writes)
}

fn relocation_options(fs: &FaultFs, l: &Learning) -> Options {
    Options {
        value_log_gc_ratio: 0.3,
        ..maintenance_options(fs, l)
    }
}

/// After recovery and the redone step: once explicit GC has collected every segment with
/// garbage, each sealed segment left holds a value some table or memtable points at, so no
/// segment written by an interrupted compaction or GC leaked.
fn check_no_leaked_segments(db: &Db, ctx: &str) {
    for _ in 0..64 {
        let report = db
            .run_value_log_gc()
            .unwrap_or_else(|e| panic!("{ctx}: GC failed: {e}"));
        if report.segment.is_none() {
            break;
        }
    }
    let referenced = db
        .referenced_segments_for_test()
        .unwrap_or_else(|e| panic!("{ctx}: listing pointers failed: {e}"));
    let stats = db.stats();
    let leaked: Vec<u64> = stats
        .value_log
        .iter()
        .filter(|s| !s.active && !referenced.contains(&s.id))
        .map(|s| s.id)
        .collect();
    assert!(
        leaked.is_empty(),
        "{ctx}: segments nothing points into survived GC: {leaked:?} ({:?})",
        stats.value_log
    );
}

/// Crashes inside `step` at every counted operation it performs and checks that recovery
/// loses nothing (the setup's writes are all durable), that the step can be redone, and
/// that no value-log segment leaks. Crash `n` runs the setup and step under
/// [`Learning::nth`]`(n)` and recovers (for odd `n`) under a different policy.
fn crash_during(name: &str, step: impl Fn(&Db) -> augur::Result<()>, min_ops: u64) {
    crash_during_with(
        name,
        &maintenance_setup,
        &maintenance_options,
        step,
        min_ops,
    );
}

/// [`crash_during`] from the state `setup` builds, under the options `options` gives.
fn crash_during_with(
    name: &str,
    setup: &dyn Fn(Options) -> (Db, Vec<Write>),
    options: &dyn Fn(&FaultFs, &Learning) -> Options,
    step: impl Fn(&Db) -> augur::Result<()>,
    min_ops: u64,
) {
    let maintenance_setup = setup;
    let maintenance_options = options;
    let fs = FaultFs::new();
    let dry = Learning::of(&workload::options(&fs));
    let (db, writes) = maintenance_setup(maintenance_options(&fs, &dry));
    let model = model_after(&writes);
    let before = fs.op_count(FaultOp::Any);
    step(&db).unwrap_or_else(|e| panic!("{name} without faults failed: {e}"));
    let total = fs.op_count(FaultOp::Any) - before;
    assert!(total >= min_ops, "{name} did only {total} operations");
    assert_eq!(scan(&db, name), model);
    drop(db);

    for n in 1..=total {
        let written = Learning::nth(n);
        let recovery = if n % 2 == 1 {
            Learning::reopen_of(n)
        } else {
            written
        };
        let ctx = format!("crash during {name} at op #{n} ({written:?}, recovery {recovery:?})");
        let fs = FaultFs::new();
        let (db, _) = maintenance_setup(maintenance_options(&fs, &written));
        fs.crash_at(FaultOp::Any, n);
        // The step may still succeed when the crash hit a best-effort removal of an
        // obsolete file after the step's result was durable.
        let _ = step(&db);
        // A compaction's input files are removed when their last reader lets go, which
        // may be a background learner finishing after the step returned: dropping the
        // database joins those threads, so the crash point is checked after it.
        drop(db);
        assert!(
            fs.is_crashed(),
            "{ctx}: the step did not reach the crash point"
        );
        fs.reset_faults();
        let db = open(maintenance_options(&fs, &recovery), &ctx);
        recovery
            .after_open(&db)
            .unwrap_or_else(|e| panic!("{ctx}: learn_all failed: {e}"));
        assert_eq!(scan(&db, &ctx), model, "{ctx}: state after recovery");
        check_gets(&db, &model, &ctx);
        check_model_use(&db, &recovery, &ctx);
        db.verify()
            .unwrap_or_else(|e| panic!("{ctx}: verify after recovery failed: {e}"));
        step(&db).unwrap_or_else(|e| panic!("{ctx}: redoing {name} failed: {e}"));
        assert_eq!(scan(&db, &ctx), model, "{ctx}: state after redoing {name}");
        db.verify()
            .unwrap_or_else(|e| panic!("{ctx}: verify after redoing failed: {e}"));
        check_no_leaked_segments(&db, &ctx);
        assert_eq!(scan(&db, &ctx), model, "{ctx}: state after GC");
        check_still_works(db, &fs, model.clone(), n, &written, &ctx);
    }
}

/// Three GC runs, each collecting the segment with the most garbage.
fn gc_rounds(db: &Db) -> augur::Result<()> {
    let mut collected = 0;
    for _ in 0..3 {
        if db.run_value_log_gc()?.segment.is_some() {
            collected += 1;
        }
    }
    if collected == 0 {
        return Err(Error::InvalidArgument(
            "GC found no segment to collect".into(),
        ));
    }
    Ok(())
}

#[test]
fn crash_during_value_log_gc_loses_nothing() {
    // Compact first so dropped pointers are counted as garbage; then GC is the step.
    let step = |db: &Db| -> augur::Result<()> {
        if db.stats().levels[0].files > 0 {
            db.compact_range(None, None)?;
        }
        gc_rounds(db)
    };
    crash_during("value-log GC", step, 30);
}

#[test]
fn crash_during_compaction_loses_nothing() {
    let step = |db: &Db| db.compact_range(None, None);
    crash_during("compact_range", step, 20);
}

/// A compaction that relocates the live values of segments past the GC ratio (and deletes
/// the segments that leaves all garbage): crashes at each of its operations, the segment
/// reservations, the relocated values' syncs and the edit that installs them included.
#[test]
fn crash_during_relocating_compaction_loses_nothing() {
    let step = |db: &Db| {
        db.hold_automatic_gc_for_test(true);
        db.compact_range(None, None)
    };
    // Without faults, the step relocates values and deletes a segment it leaves all garbage.
    let fs = FaultFs::new();
    let (db, _) = relocation_setup(relocation_options(&fs, &Learning::of(&options(&fs))));
    let before: Vec<u64> = db.stats().value_log.iter().map(|s| s.id).collect();
    step(&db).unwrap();
    let stats = db.stats();
    assert!(stats.values_relocated > 0, "{stats:?}");
    assert_eq!(stats.gc_runs, 0);
    assert!(
        before
            .iter()
            .any(|id| !stats.value_log.iter().any(|s| s.id == *id)),
        "no segment was deleted: {:?}",
        stats.value_log
    );
    drop(db);
    crash_during_with(
        "relocating compaction",
        &relocation_setup,
        &relocation_options,
        step,
        20,
    );
}

/// Arms `fail_at(op, n, mode)`, runs the workload until the first error, checks that the
/// database refuses further writes with `Poisoned`, then reopens (after a power cut when
/// `power_cut`) and checks the prefix contract.
/// The workload runs under [`Learning::nth`]`(case)`; the reopen is under a different policy
/// for odd cases.
fn fail_case(writes: &[Write], op: FaultOp, n: u64, mode: FaultMode, power_cut: bool, case: u64) {
    let written = Learning::nth(case);
    let recovery = if case % 2 == 1 {
        Learning::reopen_of(case)
    } else {
        written
    };
    let ctx = format!(
        "fail_at({op:?}, {n}, {mode:?}), power cut {power_cut} ({written:?}, recovery {recovery:?})"
    );
    let fs = FaultFs::new();
    let db = open_with(&fs, &written, &ctx);
    fs.fail_at(op, n, mode);
    let out = run_writes(&db, writes, &written);
    match &out.error {
        Some(e) => {
            // The injected failure itself, or a refusal that carries it as its first cause.
            assert!(
                matches!(e, Error::Io { .. } | Error::Poisoned { .. })
                    && matches!(e.root_cause(), Error::Io { .. }),
                "{ctx}: unexpected error {e}"
            );
            let again = db.put("after-failure", "x");
            assert!(
                matches!(&again, Err(p @ Error::Poisoned { .. }) if matches!(p.root_cause(), Error::Io { .. })),
                "{ctx}: a write after the failure ({e}) returned {again:?}, not Poisoned by an I/O error"
            );
            assert!(db.flush().is_err(), "{ctx}: flush after the failure worked");
        }
        None => {
            // The failed operation was one whose failure is harmless (e.g. removing a
            // flushed WAL): nothing may be lost.
            assert_eq!(scan(&db, &ctx), model_after(writes), "{ctx}");
        }
    }
    drop(db);
    if power_cut {
        fs.crash();
        fs.reset_faults();
        // A torn (`FaultMode::Tear`) sync leaves a torn tail that must stay recoverable
        // even when recovery itself is interrupted.
        crash_during_recovery(&fs, &recovery);
    }
    fs.reset_faults();
    let db = open_with(&fs, &recovery, &ctx);
    let lo = if power_cut { out.durable } else { out.acked };
    let p = matching_prefix(&db, writes, lo, out.attempted, &ctx);
    check_model_use(&db, &recovery, &ctx);
    db.verify()
        .unwrap_or_else(|e| panic!("{ctx}: verify after reopen failed: {e}"));
    check_still_works(db, &fs, model_after(&writes[..p]), n, &written, &ctx);
}

#[test]
fn injected_io_errors_poison_the_db_and_reopen_recovers_a_prefix() {
    let writes = workload(23, 500, 0);
    let mut cases = 0;
    // Renames happen only inside `Db::open` (CURRENT); see the open test below.
    for op in [FaultOp::Write, FaultOp::Sync, FaultOp::Remove, FaultOp::Any] {
        let total = dry_run(&writes, op);
        assert!(total > 0, "the workload never does {op:?}");
        for (i, n) in crash_points(total, 12).into_iter().enumerate() {
            let mode = if i % 2 == 0 {
                FaultMode::Error
            } else {
                FaultMode::Tear
            };
            fail_case(&writes, op, n, mode, i % 3 == 1, cases);
            cases += 1;
        }
    }
    assert!(cases >= 50, "only {cases} cases");
}

/// The same contract with background flush, compaction and GC threads: crash points are
/// no longer deterministic, so each case also checks whatever interleaving it got.
#[test]
fn crash_with_background_threads_recovers_a_prefix_with_every_synced_write() {
    let writes = workload(31, 600, 0);
    let bg_options = |fs: &FaultFs, l: &Learning| Options {
        background_threads: true,
        ..options_with(fs, l)
    };
    let mut rng = StdRng::seed_from_u64(5);
    for case in 0..48 {
        let written = Learning::nth(case);
        let recovery = Learning::reopen_of(case);
        let ctx = format!("background case {case} ({written:?}, recovery {recovery:?})");
        let fs = FaultFs::new();
        let db = open(bg_options(&fs, &written), &ctx);
        written
            .after_open(&db)
            .unwrap_or_else(|e| panic!("{ctx}: learn_all failed: {e}"));
        fs.crash_at(FaultOp::Any, rng.gen_range(1..6000));
        let out = run_writes(&db, &writes, &written);
        if !fs.is_crashed() {
            fs.crash();
        }
        drop(db);
        fs.reset_faults();
        let db = open(bg_options(&fs, &recovery), &ctx);
        recovery
            .after_open(&db)
            .unwrap_or_else(|e| panic!("{ctx}: learn_all failed: {e}"));
        let p = matching_prefix(&db, &writes, out.durable, out.attempted, &ctx);
        check_model_use(&db, &recovery, &ctx);
        db.verify()
            .unwrap_or_else(|e| panic!("{ctx}: verify after recovery failed: {e}"));
        drop(db);
        check_still_works(
            open_with(&fs, &written, &ctx),
            &fs,
            model_after(&writes[..p]),
            case,
            &written,
            &ctx,
        );
    }
}

/// A failure at any operation of `Db::open` (recovery writes a table, a manifest, CURRENT
/// by rename, a WAL, and removes obsolete files) is a clean error or a harmless one, and
/// the next open recovers everything.
#[test]
fn injected_io_errors_during_open_fail_cleanly() {
    let writes = workload(41, 300, 0);
    let model = model_after(&writes);
    let fs = FaultFs::new();
    let db = open(options(&fs), "setup");
    assert!(run_writes(&db, &writes, &Learning::of(&options(&fs)))
        .error
        .is_none());
    drop(db);
    let before = fs.op_count(FaultOp::Any);
    drop(open(options(&fs), "dry open"));
    let total = fs.op_count(FaultOp::Any) - before;
    assert!(total >= 8, "open did only {total} operations");
    for n in 1..=total + 2 {
        for (m, mode) in [FaultMode::Error, FaultMode::Tear].into_iter().enumerate() {
            // The failing open and the next one run under different policies.
            let case = 2 * n + m as u64;
            let (failing, next) = (Learning::nth(case), Learning::reopen_of(case));
            let ctx = format!("fail_at(Any, {n}, {mode:?}) during open ({failing:?}, {next:?})");
            fs.fail_at(FaultOp::Any, n, mode);
            match Db::open(DIR, options_with(&fs, &failing)) {
                Ok(db) => assert_eq!(scan(&db, &ctx), model, "{ctx}"),
                Err(e) => assert!(matches!(e, Error::Io { .. }), "{ctx}: {e}"),
            }
            fs.reset_faults();
            let db = open_with(&fs, &next, &ctx);
            assert_eq!(scan(&db, &ctx), model, "{ctx}: state after the next open");
            check_gets(&db, &model, &ctx);
            check_model_use(&db, &next, &ctx);
        }
    }
    // Renames are counted only by open: fail each one.
    for mode in [FaultMode::Error, FaultMode::Tear] {
        fs.fail_at(FaultOp::Rename, 1, mode);
        assert!(Db::open(DIR, options(&fs)).is_err());
        fs.reset_faults();
        let db = open(options(&fs), "after a failed rename");
        assert_eq!(scan(&db, "after a failed rename"), model);
    }
}

/// A power cut during a torn WAL sync leaves a torn tail in the newest WAL; recovery then
/// creates a newer WAL. A crash at any point of that recovery must not turn the torn tail
/// into "damage in an older WAL".
#[test]
fn torn_wal_tail_survives_a_crash_at_every_point_of_recovery() {
    // Inline values only, few enough to stay in one memtable and WAL.
    let writes: Vec<Write> = (0..30)
        .map(|i| Write {
            ops: vec![(key(i as u32 % KEY_SPACE), Some(value(i, 0, 20 + i % 7)))],
            sync: i == 9,
        })
        .collect();
    let torn_state = || {
        let fs = FaultFs::new();
        let db = open(options(&fs), "setup");
        let out = run_writes(&db, &writes[..29], &Learning::of(&options(&fs)));
        assert!(out.error.is_none());
        fs.fail_at(FaultOp::Sync, 1, FaultMode::Tear);
        let last = &writes[29];
        assert!(db
            .write_opt(batch_of(last), WriteOptions { sync: true })
            .is_err());
        drop(db);
        fs.crash();
        fs.reset_faults();
        fs
    };
    let fs = torn_state();
    let before = fs.op_count(FaultOp::Any);
    let db = open(options(&fs), "dry recovery");
    let total = fs.op_count(FaultOp::Any) - before;
    let p = matching_prefix(&db, &writes, 10, 30, "dry recovery");
    assert!(
        p > 10,
        "the torn sync made nothing beyond the synced write durable"
    );
    drop(db);
    for m in 1..=total {
        let (crashed, next) = (Learning::nth(m), Learning::reopen_of(m));
        let ctx =
            format!("crash at op #{m} of the recovery of a torn WAL ({crashed:?}, then {next:?})");
        let fs = torn_state();
        fs.crash_at(FaultOp::Any, m);
        let attempt = Db::open(DIR, options_with(&fs, &crashed));
        assert!(
            fs.is_crashed(),
            "{ctx}: recovery did not reach the crash point"
        );
        drop(attempt);
        fs.reset_faults();
        let db = open_with(&fs, &next, &ctx);
        let p = matching_prefix(&db, &writes, 10, 30, &ctx);
        check_model_use(&db, &next, &ctx);
        check_still_works(db, &fs, model_after(&writes[..p]), m, &crashed, &ctx);
    }
}

// The same contracts under PebblesDB's fragmented LSM: crashes inside fragmented
// compactions, guard commits, last-level rewrites and their manifest edits.

#[test]
fn flsm_crash_at_many_operation_counts_recovers_a_prefix_with_every_synced_write() {
    use_flsm();
    let writes = workload(17, 1500, 0);
    let total = dry_run(&writes, FaultOp::Any);
    // The last few operations of a run can be removals of obsolete tables, done by whichever
    // thread drops the last reference (a background learner may hold one a moment longer), so
    // the count there is not deterministic: crash before them. And FLSM's guard density
    // follows its inputs' bytes per entry, which the model sections of other learning
    // policies change, and so do the compactions, GC runs and relocations that follow: a
    // run under another policy may do a few percent fewer operations than the dry run.
    let mut points = crash_points(total, point_budget(400));
    points.retain(|&n| n + 4 <= total && n <= total / 100 * 95);
    assert!(points.len() >= 300, "only {} crash points", points.len());
    for (i, &n) in points.iter().enumerate() {
        crash_case(&writes, FaultOp::Any, (n, total), i % 8 == 0, i as u64);
    }
}

#[test]
fn flsm_crash_at_each_sync_recovers_a_prefix_with_every_synced_write() {
    use_flsm();
    let writes = workload(19, 700, 0);
    let total = dry_run(&writes, FaultOp::Sync);
    for (i, n) in crash_points(total, point_budget(total))
        .into_iter()
        .enumerate()
    {
        crash_case(&writes, FaultOp::Sync, (n, total), false, i as u64);
    }
}

#[test]
fn flsm_crash_during_compaction_loses_nothing() {
    use_flsm();
    let step = |db: &Db| db.compact_range(None, None);
    crash_during("compact_range (flsm)", step, 20);
}
