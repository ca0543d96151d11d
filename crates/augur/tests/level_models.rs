//! Level models (Bourbon level learning): trained for unchanged sorted levels, used by point
//! lookups, dropped when the level changes and retrained; results never change.

use augur::fs::MemFs;
use augur::{Db, Options};
use std::collections::BTreeMap;
use std::sync::Arc;

fn opts(fs: &MemFs, level_models: bool) -> Options {
    Options {
        fs: Arc::new(fs.clone()),
        memtable_size_bytes: 16 << 10,
        target_file_size_bytes: 16 << 10,
        l1_max_bytes: 64 << 10,
        background_threads: false,
        level_models,
        ..Options::default()
    }
}

fn key(i: u64) -> Vec<u8> {
    // A shared prefix and keys that differ only late exercise the level's projection.
    format!("user/{:012}/x", i * 7919 % 100_003).into_bytes()
}

#[test]
fn level_models_serve_lookups_and_follow_level_changes() {
    let fs = MemFs::new();
    let db = Db::open("/db", opts(&fs, true)).unwrap();
    let mut model = BTreeMap::new();
    for round in 0..3u64 {
        for i in 0..3000u64 {
            if (i + round) % 5 == 0 {
                db.delete(key(i)).unwrap();
                model.remove(&key(i));
            } else {
                let v = format!("v{round}-{i}").into_bytes();
                db.put(key(i), &v).unwrap();
                model.insert(key(i), v);
            }
        }
        db.compact_range(None, None).unwrap();
        // An idle unit of background work trains the level models (inline mode: the next
        // write runs it).
        // (A key inside the level's range: a key past it would shorten the level's common
        // prefix until the keys no longer project, and the level model be refused.)
        let v = format!("trigger-{round}").into_bytes();
        db.put(key(0), &v).unwrap();
        model.insert(key(0), v);
        let stats = db.stats();
        let learned: Vec<_> = stats
            .levels
            .iter()
            .filter(|l| l.level > 0 && l.files > 0)
            .collect();
        assert!(!learned.is_empty());
        assert!(
            learned
                .iter()
                .all(|l| l.level_model_bytes > 0 && l.level_model_segments > 0),
            "round {round}: every non-empty sorted level has a level model: {learned:?}"
        );
        let before = db.stats();
        for i in 0..3100u64 {
            assert_eq!(
                db.get(key(i)).unwrap(),
                model.get(&key(i)).cloned(),
                "round {round} key {i}"
            );
        }
        // The lookups went through the level models, and are counted as such (a subset of
        // the model-path lookups).
        let after = db.stats();
        let via_level = after.level_model_lookups - before.level_model_lookups;
        let model_path = after.model_path_lookups - before.model_path_lookups;
        assert!(via_level >= 2000, "round {round}: {via_level}");
        assert!(via_level <= model_path, "{via_level} > {model_path}");
        assert_eq!(db.get(b"user/").unwrap(), None);
        assert_eq!(db.get(b"zzzz").unwrap(), None);
    }
    let built = db.stats().level_models_built;
    assert!(
        built >= 3,
        "models are retrained after each level change ({built})"
    );
    let all: Vec<_> = db.iter().map(|r| r.unwrap()).collect();
    assert_eq!(all, model.into_iter().collect::<Vec<_>>());
}

/// `Db::learn_all` trains the missing level models on the calling thread (with
/// `level_models`), under a policy that learns no file by itself (`offline`).
#[test]
fn learn_all_trains_level_models() {
    let fs = MemFs::new();
    let o = Options {
        learning: augur::LearningPolicy::Offline,
        ..opts(&fs, true)
    };
    let db = Db::open("/db", o).unwrap();
    for i in 0..3000u64 {
        db.put(key(i), i.to_le_bytes()).unwrap();
    }
    db.compact_range(None, None).unwrap();
    let sorted = |s: &augur::Stats| -> Vec<augur::LevelStats> {
        s.levels
            .iter()
            .filter(|l| l.level > 0 && l.files > 0)
            .cloned()
            .collect()
    };
    let before = db.stats();
    assert!(sorted(&before)
        .iter()
        .all(|l| l.files_with_model == 0 && l.level_model_bytes == 0));
    let learned = db.learn_all().unwrap();
    let after = db.stats();
    assert_eq!(
        learned as usize,
        sorted(&after).iter().map(|l| l.files).sum::<usize>()
    );
    assert!(
        sorted(&after).iter().all(|l| l.level_model_bytes > 0),
        "{:?}",
        sorted(&after)
    );
    for i in 0..3000u64 {
        assert_eq!(db.get(key(i)).unwrap(), Some(i.to_le_bytes().to_vec()));
    }
}

/// Without `level_models`, no lookup is counted on a level model.
#[test]
fn no_level_model_lookups_without_level_models() {
    let fs = MemFs::new();
    let db = Db::open("/db", opts(&fs, false)).unwrap();
    for i in 0..3000u64 {
        db.put(key(i), i.to_le_bytes()).unwrap();
    }
    db.compact_range(None, None).unwrap();
    db.put(b"zzz-trigger", b"1").unwrap();
    for i in 0..3000u64 {
        assert_eq!(db.get(key(i)).unwrap(), Some(i.to_le_bytes().to_vec()));
    }
    let s = db.stats();
    assert_eq!((s.level_model_lookups, s.level_models_built), (0, 0));
    assert!(s.model_path_lookups > 0);
}

/// A level whose keys agree on the 8 bytes past the level's common prefix (a few roots of
/// long paths) gets no usable level model: it is trained once, refused (not retrained while
/// the level is unchanged), and lookups keep to the file models with the same results.
#[test]
fn level_models_are_refused_when_keys_do_not_project() {
    let fs = MemFs::new();
    let db = Db::open("/db", opts(&fs, true)).unwrap();
    let path = |i: u64| {
        format!(
            "{}/shared/long/path/{:06}",
            ["a", "b", "c"][(i % 3) as usize],
            i
        )
    };
    for i in 0..3000u64 {
        db.put(path(i), i.to_le_bytes()).unwrap();
    }
    db.compact_range(None, None).unwrap();
    db.learn_all().unwrap();
    let built = db.stats().level_models_built;
    // More idle units of background work (inline mode: each write runs one) do not retrain it.
    db.put(path(0), b"x").unwrap();
    db.put(path(0), 0u64.to_le_bytes()).unwrap();
    let s = db.stats();
    assert!(built >= 1);
    assert_eq!(
        (s.level_models_built, s.level_models_refused),
        (built, built)
    );
    assert!(s.levels.iter().all(|l| l.level_model_bytes == 0));
    for i in 0..3000u64 {
        assert_eq!(db.get(path(i)).unwrap(), Some(i.to_le_bytes().to_vec()));
    }
    assert_eq!(db.get(b"b/shared/long/path/x").unwrap(), None);
    let s = db.stats();
    assert_eq!(s.level_model_lookups, 0);
    assert!(s.model_path_lookups >= 3000);
}

/// Keys with distinct projections keep their level model (none refused).
#[test]
fn level_models_are_kept_when_keys_project() {
    let fs = MemFs::new();
    let db = Db::open("/db", opts(&fs, true)).unwrap();
    for i in 0..3000u64 {
        db.put(key(i), i.to_le_bytes()).unwrap();
    }
    db.compact_range(None, None).unwrap();
    db.learn_all().unwrap();
    let s = db.stats();
    assert!(s.level_models_built >= 1);
    assert_eq!(s.level_models_refused, 0);
}
