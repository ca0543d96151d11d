//! The learning policies end to end: the background learner really installs models (after
//! `T_wait` for `always` and `cost-benefit`, for `lazy` after the k-th read past the bloom
//! filter or after reads in proportion to the file's keys, only through
//! `Db::learn_all` for `offline`), files that die first are counted and not learned, models
//! learned in the background are not persisted, and every policy returns exactly what the
//! `never` policy returns. Eventual states are awaited with bounded polling, never timed.

use augur::fs::MemFs;
use augur::learning::ALL_POLICIES;
use augur::{Db, IndexKind, LearningPolicy, Options, Stats};
use std::sync::Arc;
use std::time::Duration;

fn opts(policy: LearningPolicy, wait_ms: u64) -> Options {
    Options {
        fs: Arc::new(MemFs::new()),
        learning: policy,
        learning_wait_ms: wait_ms,
        background_threads: false,
        l0_compaction_trigger: 8,
        l0_slowdown_trigger: 16,
        l0_stop_trigger: 24,
        block_records: 16,
        ..Options::default()
    }
}

fn key(file: u32, i: u32) -> String {
    format!("file{file}-key{i:06}")
}

/// Writes `files` L0 files of 500 keys each, with disjoint key ranges.
fn fill(db: &Db, files: u32) {
    fill_from(db, 0, files);
}

/// Writes L0 files `first..first + files`, 500 keys each (`key(f, i)` = `v{f}-{i}`).
fn fill_from(db: &Db, first: u32, files: u32) {
    for f in first..first + files {
        for i in 0..500 {
            db.put(key(f, i), format!("v{f}-{i}")).unwrap();
        }
        db.flush().unwrap();
    }
}

fn model_files(s: &Stats) -> usize {
    s.levels.iter().map(|l| l.files_with_model).sum()
}

fn table_files(s: &Stats) -> usize {
    s.levels.iter().map(|l| l.files).sum()
}

/// Polls `cond` every 10 ms, up to 30 s; returns the last stats.
fn wait_for(db: &Db, what: &str, cond: impl Fn(&Stats) -> bool) -> Stats {
    for _ in 0..3000 {
        let s = db.stats();
        if cond(&s) {
            return s;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("timed out waiting for: {what}; stats: {:#?}", db.stats());
}

#[test]
fn always_learns_every_new_file_after_t_wait() {
    let db = Db::open("/db", opts(LearningPolicy::Always, 5)).unwrap();
    fill(&db, 3);
    let s = wait_for(&db, "3 models", |s| model_files(s) == 3);
    assert_eq!(table_files(&s), 3);
    assert_eq!(s.models_built, 3);
    assert!(s.learning_ns_total > 0 && s.training_ns_per_key > 0.0);
    let l0 = &s.levels[0];
    assert_eq!((l0.models_built, l0.models_skipped), (3, 0));
    assert!(l0.model_bytes > 0);
    // Lookups now take the model path.
    for i in 0..500 {
        assert_eq!(
            db.get(key(1, i)).unwrap().unwrap(),
            format!("v1-{i}").as_bytes()
        );
    }
    let s = db.stats();
    assert!(s.levels[0].model_path_lookups >= 500);
    assert_eq!(s.levels[0].baseline_path_lookups, 0);
    assert!(s.model_path_fraction() > 0.99);
    // A compaction's outputs are learned too, and the inputs' deaths recorded.
    db.compact_range(None, None).unwrap();
    let s = wait_for(&db, "compaction outputs learned", |s| {
        s.learning_pending == 0 && model_files(s) == table_files(s)
    });
    assert_eq!(s.levels[0].dead_files, 3);
    assert_eq!(
        s.levels[0].models_wasted, 2,
        "files 0 and 2 were never read"
    );
    // The outputs land in the level L0 compacts into (the last, with dynamic level sizes).
    assert!(s.levels.iter().skip(1).map(|l| l.models_built).sum::<u64>() >= 1);
}

#[test]
fn lazy_learns_only_files_that_were_read() {
    let o = Options {
        lazy_learning_reads_per_key: 0.0,
        ..opts(LearningPolicy::Lazy, 0)
    };
    let db = Db::open("/db", o).unwrap();
    fill(&db, 3);
    assert_eq!(db.get(key(1, 7)).unwrap().unwrap(), b"v1-7");
    let s = wait_for(&db, "the read file learned", |s| {
        model_files(s) == 1 && s.learning_pending == 0
    });
    assert_eq!(s.models_built, 1);
    assert_eq!(s.levels[0].baseline_path_lookups, 1);
    // The learned file is the one read: its lookups now go through the model.
    db.get(key(1, 8)).unwrap().unwrap();
    assert_eq!(db.stats().levels[0].model_path_lookups, 1);
    // A key between ranges is rejected by the files' key ranges and triggers nothing.
    assert!(db.get("file1-zzz").unwrap().is_none());
    assert_eq!(model_files(&db.stats()), 1);
}

#[test]
fn lazy_waits_for_the_kth_read() {
    let o = Options {
        lazy_learning_reads: 3,
        lazy_learning_reads_per_key: 0.0,
        ..opts(LearningPolicy::Lazy, 0)
    };
    let db = Db::open("/db", o).unwrap();
    fill(&db, 1);
    db.get(key(0, 1)).unwrap().unwrap();
    db.get(key(0, 2)).unwrap().unwrap();
    let s = db.stats();
    assert_eq!((model_files(&s), s.learning_pending), (0, 0));
    db.get(key(0, 3)).unwrap().unwrap();
    wait_for(&db, "learned after 3 reads", |s| model_files(s) == 1);
}

/// With the default per-key rate (0.5), a 500-key file is learned after 250 lookups that
/// passed its bloom filter; lookups of absent keys the filter rejects do not count.
#[test]
fn lazy_waits_for_lookups_in_proportion_to_the_file_size() {
    let db = Db::open("/db", opts(LearningPolicy::Lazy, 0)).unwrap();
    fill(&db, 2);
    // 2000 absent keys inside file 0's key range: the bloom filter (10 bits per key, ~1%
    // false positives) rejects all but a few tens of them.
    for i in 0..2000 {
        assert!(db.get(format!("file0-key{i:06}x")).unwrap().is_none());
    }
    // 200 reads past the filter: with the false positives, still below 250.
    for i in 0..200 {
        db.get(key(0, i)).unwrap().unwrap();
    }
    let s = db.stats();
    assert_eq!(
        (model_files(&s), s.learning_pending),
        (0, 0),
        "learned too early"
    );
    for i in 200..300 {
        db.get(key(0, i)).unwrap().unwrap();
    }
    let s = wait_for(&db, "file 0 learned", |s| {
        model_files(s) == 1 && s.learning_pending == 0
    });
    assert_eq!(s.models_built, 1);
    // File 1 was never read: not learned.
    db.get(key(1, 3)).unwrap().unwrap();
    assert_eq!(model_files(&db.stats()), 1);
}

#[test]
fn offline_learns_only_through_learn_all() {
    let db = Db::open("/db", opts(LearningPolicy::Offline, 0)).unwrap();
    fill(&db, 2);
    let s = db.stats();
    assert_eq!((model_files(&s), s.learning_pending), (0, 0));
    assert_eq!(db.learn_all().unwrap(), 2);
    assert_eq!(model_files(&db.stats()), 2);
    assert_eq!(db.learn_all().unwrap(), 0, "nothing left to learn");
    fill(&db, 1); // rewrites file0's keys into a third file
    let s = db.stats();
    assert_eq!((table_files(&s), model_files(&s)), (3, 2));
    assert_eq!(s.models_built, 2);
}

#[test]
fn cost_benefit_learns_while_bootstrapping() {
    let db = Db::open("/db", opts(LearningPolicy::CostBenefit, 5)).unwrap();
    fill(&db, 3);
    let s = wait_for(&db, "bootstrap learns every file", |s| {
        model_files(s) == 3 && s.learning_pending == 0
    });
    assert_eq!(s.levels[0].models_skipped, 0);
}

#[test]
fn never_learns_nothing_and_refuses_learn_all() {
    let db = Db::open("/db", opts(LearningPolicy::Never, 0)).unwrap();
    fill(&db, 2);
    assert!(db.learn_all().is_err());
    db.get(key(0, 1)).unwrap().unwrap();
    let s = db.stats();
    assert_eq!((model_files(&s), s.learning_pending), (0, 0));
    assert_eq!(s.levels[0].baseline_path_lookups, 1);
}

#[test]
fn files_that_die_before_t_wait_are_not_learned() {
    let db = Db::open("/db", opts(LearningPolicy::Always, 1000)).unwrap();
    fill(&db, 4);
    // Compacted away at once: the four L0 files die long before their 1 s wait ends
    // (the inputs are gone before the learner looks at them, whenever that is).
    db.compact_range(None, None).unwrap();
    let s = wait_for(&db, "the dead files dropped", |s| {
        s.levels[0].files_died_before_learning == 4 && s.learning_pending == 0
    });
    assert_eq!(s.levels[0].models_built, 0);
    assert_eq!(s.levels[0].dead_files, 4);
    assert!(model_files(&s) >= 1, "the compaction output is learned");
}

#[test]
fn background_models_are_not_persisted_and_at_build_ones_are() {
    let fs = Arc::new(MemFs::new());
    let with_fs = |p| Options {
        fs: fs.clone(),
        ..opts(p, 0)
    };
    {
        let db = Db::open("/db", with_fs(LearningPolicy::Always)).unwrap();
        fill(&db, 1);
        wait_for(&db, "learned", |s| model_files(s) == 1);
    }
    {
        let db = Db::open("/db", with_fs(LearningPolicy::Offline)).unwrap();
        assert_eq!(
            model_files(&db.stats()),
            0,
            "a background model is memory only"
        );
        // Switching to at-build: new files carry a persisted model.
        drop(db);
        let db = Db::open("/db", with_fs(LearningPolicy::AtBuild)).unwrap();
        for i in 0..100 {
            db.put(format!("new{i}"), "x").unwrap();
        }
        db.flush().unwrap();
        assert_eq!(model_files(&db.stats()), 1);
    }
    // Under always, the model-less file found at open is learned; the other keeps its own.
    let db = Db::open("/db", with_fs(LearningPolicy::Always)).unwrap();
    let s = wait_for(&db, "old file learned", |s| model_files(s) == 2);
    assert_eq!(s.models_built, 1);
}

/// The same operations under every policy give the same answers as `never`.
#[test]
fn every_policy_answers_like_never() {
    let run = |policy: LearningPolicy| -> Vec<Option<Vec<u8>>> {
        let db = Db::open("/db", opts(policy, 1)).unwrap();
        let mut answers = Vec::new();
        for round in 0..6u32 {
            for i in (0..600u32).step_by(1 + round as usize) {
                db.put(
                    format!("k{:05}", (i * 7919 + round) % 3000),
                    format!("{round}-{i}"),
                )
                .unwrap();
            }
            for i in (0..3000u32).step_by(97) {
                db.delete(format!("k{i:05}")).unwrap();
            }
            db.flush().unwrap();
            if round == 3 {
                db.compact_range(None, None).unwrap();
            }
            if policy == LearningPolicy::Offline && round == 1 {
                db.learn_all().unwrap();
            }
            for i in (0..3100u32).step_by(13 + round as usize) {
                answers.push(db.get(format!("k{i:05}")).unwrap());
            }
        }
        if policy.learns_in_background() {
            wait_for(&db, "learner idle", |s| s.learning_pending == 0);
        }
        for i in 0..3100u32 {
            answers.push(db.get(format!("k{i:05}")).unwrap());
        }
        for item in db.iter() {
            let (k, v) = item.unwrap();
            answers.push(Some(k));
            answers.push(Some(v));
        }
        answers
    };
    let want = run(LearningPolicy::Never);
    for policy in ALL_POLICIES {
        assert!(run(policy) == want, "{policy} differs from never");
    }
}

/// `error_bound_per_level`: files of each level are learned with that level's bound — at
/// build time and in the background — so a tight L0 bound gives many more segments per key
/// than a loose L1 bound over the same kind of keys. Memory and training time are accounted.
#[test]
fn error_bounds_apply_per_level() {
    for policy in [LearningPolicy::AtBuild, LearningPolicy::Always] {
        let o = Options {
            error_bound_per_level: [(0, 0), (1, 256)].into_iter().collect(),
            ..opts(policy, 0)
        };
        let window_at = |level: usize| 2 * u64::from(o.error_bound_at(level)) + 1;
        let db = Db::open("db", o.clone()).unwrap();
        // Irregular keys (a hash), so a segment covers few keys at δ = 0.
        let put = |i: u64| {
            let k = i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 16;
            db.put(format!("{k:016x}"), "v").unwrap();
        };
        (0..3000).for_each(put);
        db.compact_range(None, None).unwrap();
        (3000..6000).for_each(put);
        db.flush().unwrap();
        let s = wait_for(&db, "every file learned", |s| {
            model_files(s) == table_files(s)
        });
        let per_key = |level: usize| {
            let l = &s.levels[level];
            assert!(l.files > 0, "{policy:?}: level {level} is empty: {s:#?}");
            l.model_segments as f64 / l.entries as f64
        };
        let (l0, deeper) = (
            per_key(0),
            s.levels.iter().rposition(|l| l.files > 0).unwrap(),
        );
        assert!(deeper >= 1);
        assert!(
            l0 > 10.0 * per_key(deeper),
            "{policy:?}: {l0} segments/key at L0 (δ 0), {} at L{deeper} (δ 256)",
            per_key(deeper)
        );
        // Model memory is grouped by kind and window: one PLR group per bound in use.
        let kinds = s.models_by_kind();
        let windows: std::collections::BTreeSet<u64> = kinds.iter().map(|k| k.max_window).collect();
        let want: std::collections::BTreeSet<u64> = s
            .levels
            .iter()
            .filter(|l| l.files > 0)
            .map(|l| window_at(l.level))
            .collect();
        assert_eq!(windows, want, "{kinds:?}");
        assert!(kinds.iter().all(|k| k.kind == IndexKind::Plr), "{kinds:?}");
        assert_eq!(
            kinds.iter().map(|k| k.files).sum::<usize>(),
            table_files(&s)
        );
        assert_eq!(
            kinds.iter().map(|k| k.bytes).sum::<u64>(),
            s.levels.iter().map(|l| l.model_bytes).sum::<u64>()
        );
        assert!(s.flush_ns >= s.flush_training_ns && s.compaction_ns >= s.compaction_training_ns);
        if policy == LearningPolicy::AtBuild {
            assert!(
                s.flush_training_ns > 0 && s.compaction_training_ns > 0,
                "{s:#?}"
            );
        }
    }
}

/// Cost–benefit after a write-only phase: every finished file served no lookup, so the
/// analyzer expects no benefit and skips new files (Bourbon would leave them unlearned). A
/// skipped file that then serves enough lookups to pay for its training is learned.
#[test]
fn cost_benefit_learns_skipped_files_once_their_lookups_pay_for_them() {
    let db = Db::open("db", opts(LearningPolicy::CostBenefit, 0)).unwrap();
    // Write-only history: the same keys again and again, so L0 files keep dying unread.
    for round in 0..40u32 {
        for i in 0..500 {
            db.put(key(0, i), format!("v{round}-{i}")).unwrap();
        }
        db.flush().unwrap();
    }
    db.compact_range(None, None).unwrap();
    // Four new L0 files with their own keys: judged on that history, they are skipped.
    fill_from(&db, 1, 4);
    let s = wait_for(&db, "the learner to go idle", |s| s.learning_pending == 0);
    assert_eq!(s.levels[0].files, 4, "{s:#?}");
    assert_eq!(s.levels[0].files_with_model, 0, "{s:#?}");
    assert!(s.levels[0].models_skipped >= 4, "{s:#?}");
    // A read phase: every L0 file serves many lookups, and gets learned.
    for _ in 0..50 {
        for f in 1..=4 {
            for i in 0..500 {
                assert_eq!(
                    db.get(key(f, i)).unwrap(),
                    Some(format!("v{f}-{i}").into_bytes())
                );
            }
        }
    }
    wait_for(&db, "every L0 file learned", |s| {
        s.levels[0].files_with_model == 4
    });
}
