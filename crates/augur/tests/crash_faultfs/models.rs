//! Models written at build time survive a crash and serve every learning policy but
//! `never` after it (the crash contract of the parent module, issue 3).

use super::*;
use augur::LearningPolicy;

/// Files written under `at-build` keep their persisted models through a crash: whatever
/// policy recovery and later opens use, the state obeys the prefix contract; every policy
/// but `never` loads the models of all files and serves lookups through them, and `never`
/// ignores them. (Background learning is held off — `T_wait` of a minute, a huge lazy read
/// count, no `learn_all` — so any model in use is a persisted one.)
#[test]
fn at_build_models_survive_a_crash_and_serve_every_policy_but_never() {
    use augur::learning::ALL_POLICIES;
    let writes = workload(53, 800, 0);
    let total = dry_run(&writes, FaultOp::Any);
    for (i, index) in common::INDEX_KINDS.into_iter().enumerate() {
        let written = Learning {
            policy: LearningPolicy::AtBuild,
            index,
            ..Learning::nth(i as u64)
        };
        let fs = FaultFs::new();
        // L0 compacts at 4 files, not 2: format 7 fits the live keys in one 4 KiB file.
        let several_files = |l: &Learning| Options {
            l0_compaction_trigger: 4,
            l0_slowdown_trigger: 8,
            l0_stop_trigger: 12,
            ..options_with(&fs, l)
        };
        let db = open(several_files(&written), "setup");
        fs.crash_at(FaultOp::Any, total * 2 / 3 + i as u64);
        let out = run_writes(&db, &writes, &written);
        assert!(out.error.is_some() && fs.is_crashed(), "{out:?}");
        drop(db);
        fs.reset_faults();
        let (mut lo, mut hi) = (out.durable, out.attempted);
        // At-build first, so that the file recovery flushes from the WAL has a model too.
        let order = [LearningPolicy::AtBuild].into_iter().chain(
            ALL_POLICIES
                .into_iter()
                .filter(|&p| p != LearningPolicy::AtBuild),
        );
        for (j, policy) in order.enumerate() {
            let l = Learning {
                policy,
                index: common::INDEX_KINDS[(i + j) % 2],
                wait_ms: 60_000,
                level_models: false,
                lazy_reads: 1 << 40,
                ..Learning::nth(j as u64)
            };
            let ctx = format!("written {written:?}, reopened {l:?}");
            let db = open(several_files(&l), &ctx);
            let p = matching_prefix(&db, &writes, lo, hi, &ctx);
            (lo, hi) = (p, p);
            check_model_use(&db, &l, &ctx);
            let s = db.stats();
            let files: usize = s.levels.iter().map(|l| l.files).sum();
            let with_model: usize = s.levels.iter().map(|l| l.files_with_model).sum();
            assert!(files >= 2, "{ctx}: only {files} files");
            if policy != LearningPolicy::Never {
                assert_eq!(with_model, files, "{ctx}: persisted models not loaded");
                assert!(
                    s.model_path_lookups > 0,
                    "{ctx}: no lookup used a persisted model: {s:?}"
                );
            }
            db.verify()
                .unwrap_or_else(|e| panic!("{ctx}: verify failed: {e}"));
        }
    }
}
