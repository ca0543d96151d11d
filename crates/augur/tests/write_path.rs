//! The write path's shape (issue 28): leveled compaction with dynamic level sizes keeps most
//! data in the last level; sub-compactions give the same tree contents as one thread; the
//! smooth slowdown delays writers and says for how long; an FLSM flush writes straight into
//! L1's guards when L0 is empty.

use augur::fs::MemFs;
use augur::{CompactionStyle, Db, FlsmOptions, Options};
use std::collections::BTreeMap;
use std::sync::Arc;

fn options(fs: &MemFs) -> Options {
    Options {
        fs: Arc::new(fs.clone()),
        background_threads: false,
        memtable_size_bytes: 16 << 10,
        target_file_size_bytes: 8 << 10,
        l1_max_bytes: 32 << 10,
        level_size_ratio: 4,
        num_levels: 5,
        block_records: 8,
        value_separation_threshold: usize::MAX,
        ..Options::default()
    }
}

fn key(k: u64) -> Vec<u8> {
    format!("key{:08}", k.wrapping_mul(0x9E37_79B9) % 1_000_000).into_bytes()
}

fn value(k: u64, round: u64) -> Vec<u8> {
    format!("{k}-{round}-{}", "v".repeat(80)).into_bytes()
}

/// Writes `rounds` versions of `keys` keys, then waits for compactions; returns the model.
fn load(db: &Db, keys: u64, rounds: u64) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut model = BTreeMap::new();
    for round in 0..rounds {
        for k in 0..keys {
            db.put(key(k), value(k, round)).expect("put");
            model.insert(key(k), value(k, round));
        }
    }
    db.wait_for_compactions().expect("settle");
    model
}

fn contents(db: &Db) -> BTreeMap<Vec<u8>, Vec<u8>> {
    db.iter().collect::<augur::Result<_>>().expect("scan")
}

/// Bytes per level (L1 onwards).
fn level_bytes(db: &Db) -> Vec<u64> {
    db.stats().levels.iter().skip(1).map(|l| l.bytes).collect()
}

#[test]
fn dynamic_level_sizes_keep_most_data_in_the_last_level() {
    let fs = MemFs::new();
    let db = Db::open("/dynamic", options(&fs)).expect("open");
    let model = load(&db, 6000, 3);
    assert_eq!(contents(&db), model);
    let bytes = level_bytes(&db);
    let total: u64 = bytes.iter().sum();
    let last = *bytes.last().expect("levels");
    assert!(
        last as f64 >= 0.7 * total as f64,
        "the last level holds {last} of {total} bytes: {bytes:?}"
    );
    // Static sizes on the same writes: L1 is filled first and the last level stays empty.
    let fs = MemFs::new();
    let stat = Db::open(
        "/static",
        Options {
            dynamic_level_bytes: false,
            ..options(&fs)
        },
    )
    .expect("open");
    load(&stat, 6000, 3);
    let bytes = level_bytes(&stat);
    assert!(bytes[0] > 0, "static sizes leave L1 empty: {bytes:?}");
    assert_eq!(contents(&stat), model);
}

#[test]
fn sub_compactions_build_the_same_tree_contents() {
    let mut trees = Vec::new();
    for threads in [1, 4] {
        let fs = MemFs::new();
        let db = Db::open(
            "/db",
            Options {
                max_subcompactions: threads,
                ..options(&fs)
            },
        )
        .expect("open");
        let model = load(&db, 5000, 3);
        for k in (0..5000).step_by(7) {
            db.delete(key(k)).expect("delete");
        }
        db.compact_range(None, None).expect("compact");
        let got = contents(&db);
        let want: BTreeMap<_, _> = model
            .into_iter()
            .filter(|(k, _)| !(0..5000).step_by(7).any(|i| &key(i) == k))
            .collect();
        assert_eq!(got, want, "{threads} threads");
        drop(db);
        let db = Db::open("/db", options(&fs)).expect("reopen");
        assert_eq!(contents(&db), want, "{threads} threads, reopened");
        trees.push(got);
    }
    assert_eq!(trees[0], trees[1]);
}

#[test]
fn the_slowdown_delays_writers_and_reports_it() {
    let fs = MemFs::new();
    let db = Db::open(
        "/slow",
        Options {
            background_threads: true,
            memtable_size_bytes: 4 << 10,
            // L0 reaches the slowdown trigger after 20 flushes; the compaction that then
            // merges it takes long enough for the next writes to owe a delay at 64 KiB/s.
            l0_compaction_trigger: 20,
            l0_slowdown_trigger: 20,
            l0_stop_trigger: 400,
            delayed_write_rate: 64 << 10,
            ..options(&fs)
        },
    )
    .expect("open");
    let mut written = 0;
    while db.stats().write_slowdown_ns == 0 && written < 50_000 {
        db.put(key(written), value(written, 0)).expect("put");
        written += 1;
    }
    assert!(
        db.stats().write_slowdown_ns > 0,
        "no write was slowed down in {written} writes"
    );
}

#[test]
fn an_flsm_flush_goes_straight_into_level_1_when_level_0_is_empty() {
    let fs = MemFs::new();
    let db = Db::open(
        "/flsm",
        Options {
            compaction: Some(CompactionStyle::Flsm),
            l0_compaction_trigger: 4,
            flsm: FlsmOptions {
                top_level_bits: 5,
                bit_decrement: 1,
                ..FlsmOptions::default()
            },
            ..options(&fs)
        },
    )
    .expect("open");
    for k in 0..100 {
        db.put(key(k), value(k, 0)).expect("put");
    }
    db.flush().expect("flush");
    let s = db.stats();
    assert_eq!(s.levels[0].files, 0, "the flush went to L0: {:?}", s.levels);
    assert!(s.levels[1].files > 0, "nothing in L1: {:?}", s.levels);
    assert_eq!(s.flushes, 1);
    let model = load(&db, 3000, 2);
    assert_eq!(contents(&db), model.into_iter().collect::<BTreeMap<_, _>>());
    drop(db);
}
