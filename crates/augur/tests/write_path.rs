//! The write path's shape (issue 28): leveled compaction with dynamic level sizes keeps most
//! data in the last level; sub-compactions give the same tree contents as one thread; the
//! smooth slowdown delays writers and says for how long; an FLSM flush writes straight into
//! L1's guards when L0 is empty; the compaction thread runs at a lower CPU priority than the
//! flush thread.

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

/// The nice value in a `/proc/.../stat` line (field 19; fields count from the pid, and the
/// thread's name, in parentheses, may hold spaces).
#[cfg(target_os = "linux")]
fn nice_in_stat(stat: &str) -> i32 {
    let after_name = &stat[stat.rfind(')').expect("stat") + 2..];
    let nice = after_name.split(' ').nth(16).expect("nice field");
    nice.parse().expect("nice")
}

/// Nice values of this process's threads named `name` (Linux: `/proc/self/task`).
#[cfg(target_os = "linux")]
fn nice_of_threads(name: &str) -> Vec<i32> {
    let mut nices = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").expect("tasks") {
        let dir = task.expect("task").path();
        // A thread that ended meanwhile has no files left: skip it.
        let Ok(comm) = std::fs::read_to_string(dir.join("comm")) else {
            continue;
        };
        if comm.trim_end() == name {
            if let Ok(stat) = std::fs::read_to_string(dir.join("stat")) {
                nices.push(nice_in_stat(&stat));
            }
        }
    }
    nices
}

#[cfg(target_os = "linux")]
#[test]
fn the_leveled_compaction_thread_yields_to_writers_and_flushes() {
    let base = nice_in_stat(&std::fs::read_to_string("/proc/thread-self/stat").expect("stat"));
    let lowered = (base + 7).min(19);
    let fs = MemFs::new();
    let db = Db::open(
        "/nice",
        Options {
            background_threads: true,
            compaction_nice: 7,
            ..options(&fs)
        },
    )
    .expect("open");
    // A thread names itself, and the compaction thread lowers its priority, as it starts:
    // wait for both. (Other tests' databases keep the default of 10, so a thread at
    // `lowered` is this one's.)
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let flush = loop {
        let flush = nice_of_threads("augur-flush");
        if nice_of_threads("augur-bg").contains(&lowered) && !flush.is_empty() {
            break flush;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no compaction thread at nice {lowered} ({:?}) or no flush thread ({flush:?})",
            nice_of_threads("augur-bg")
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    assert!(
        flush.iter().all(|&n| n == base),
        "flush threads lowered: {flush:?}"
    );
    drop(db);
}

#[test]
fn waiting_for_compactions_leaves_no_replaced_table_behind() {
    use augur::fs::FileSystem;
    let fs = MemFs::new();
    let db = Db::open(
        "/settle",
        Options {
            background_threads: true,
            ..options(&fs)
        },
    )
    .expect("open");
    let model = load(&db, 3000, 4);
    let s = db.stats();
    assert!(s.compactions > 0, "no compaction ran: {s:?}");
    let live: usize = s.levels.iter().map(|l| l.files).sum();
    let on_disk = fs
        .list(std::path::Path::new("/settle"))
        .expect("list")
        .into_iter()
        .filter(|name| name.ends_with(".sst"))
        .count();
    assert_eq!(
        on_disk, live,
        "tables on disk vs in the version: {:?}",
        s.levels
    );
    assert_eq!(contents(&db), model);
    drop(db);
}

#[test]
fn the_memtable_peak_is_one_sealed_memtable_or_more_and_no_more_than_allowed() {
    let check = |max_immutable_memtables: usize| {
        let fs = MemFs::new();
        let opts = Options {
            max_immutable_memtables,
            ..options(&fs)
        };
        let memtable = opts.memtable_size_bytes as u64;
        let db = Db::open("/peak", opts).expect("open");
        assert_eq!(db.stats().memtable_peak_bytes, 0, "nothing written yet");
        load(&db, 2_000, 1);
        let peak = db.stats().memtable_peak_bytes;
        // A memtable is sealed once it holds its size, so a sealed one holds at least that,
        // and at most that plus one entry (well under 1 KiB here).
        let held = max_immutable_memtables as u64 + 1;
        assert!(peak >= memtable, "peak {peak} below one sealed memtable");
        assert!(
            peak <= held * (memtable + 1024),
            "peak {peak} above {held} memtables"
        );
    };
    check(1);
    check(2);
}
