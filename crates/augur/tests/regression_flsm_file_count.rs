//! Regression (issue "FLSM makes one file per guard"): under FLSM the number of table files
//! follows the target file size, not the guard density. Before the fix, the deepest levels of
//! a 7-level tree got a guard per 1,024 keys (`top_level_bits` 20 − 5·2) and every guard one
//! file, so 10.4M keys compacted to the last level made 10,210 files of ~107 KB (target
//! 32 MB), and the legal overrides `top_level_bits` 1 / `bit_decrement` 0 made a guard of
//! every other key and one file for each, past the kernel's mapping limit. Now a level's
//! guard bits never go below the floor whose spacing holds a target file, and a slot holding
//! more than a target file gets several files cut at the target size. And a compaction that
//! would raise the live table count past what the kernel's mapping limit allows is refused
//! with an error naming the options to change, instead of poisoning the database with ENOMEM.

use augur::fs::MemFs;
use augur::{CompactionStyle, Db, FlsmOptions, Options};
use std::sync::Arc;

const KEY_BYTES: usize = 16;
const VALUE_BYTES: usize = 100;

fn key(i: u32) -> Vec<u8> {
    // Scattered over the key space, fixed width.
    let k = u64::from(i).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    format!("{k:016x}").into_bytes()
}

fn value(i: u32) -> Vec<u8> {
    let mut v = format!("{i:08}").into_bytes();
    v.resize(VALUE_BYTES, b'v');
    v
}

/// A 7-level FLSM store whose levels are small (data reaches the deepest level quickly) and
/// whose files are `target_file_size_bytes`.
fn options(fs: &MemFs, target_file_size_bytes: u64, flsm: FlsmOptions) -> Options {
    Options {
        fs: Arc::new(fs.clone()),
        background_threads: false,
        compaction: Some(CompactionStyle::Flsm),
        num_levels: 7,
        memtable_size_bytes: 512 << 10,
        target_file_size_bytes,
        l1_max_bytes: 64 << 10,
        level_size_ratio: 2,
        value_separation_threshold: usize::MAX,
        flsm,
        ..Options::default()
    }
}

/// Loads keys `0..n`, compacts everything to the deepest level holding data, and returns
/// (files, table bytes) of the whole tree after checking every key reads back.
fn load_and_compact(db: &Db, n: u32) -> (usize, u64) {
    for i in 0..n {
        db.put(key(i), value(i)).expect("put");
    }
    db.compact_range(None, None).expect("compact");
    db.check_structure().expect("structure");
    for i in (0..n).step_by(97) {
        assert_eq!(db.get(key(i)).expect("get"), Some(value(i)), "key {i}");
    }
    let s = db.stats();
    let files = s.levels.iter().map(|l| l.files).sum();
    let bytes = s.levels.iter().map(|l| l.bytes).sum();
    (files, bytes)
}

/// At most this many files for `bytes` of tables cut at `target`: guards are spaced at
/// least one target file apart, so a slot of geometric size with mean >= one file averages
/// fewer than 1.6 files per target's worth of data; twice the ideal count plus one file per
/// level leaves room for the partial files at slot ends.
fn file_budget(bytes: u64, target: u64) -> usize {
    (2 * bytes.div_ceil(target) + 7) as usize
}

#[test]
fn default_guards_at_the_deepest_level_do_not_cut_one_file_per_guard() {
    let fs = MemFs::new();
    let target = 1 << 20;
    let db = Db::open("/db", options(&fs, target, FlsmOptions::default())).expect("open");
    let n = 100_000;
    let (files, bytes) = load_and_compact(&db, n);
    let s = db.stats();
    let deepest = s
        .levels
        .iter()
        .rposition(|l| l.files > 0)
        .expect("a level with files");
    assert_eq!(deepest, 6, "the data did not reach the last level: {:?}", {
        s.levels.iter().map(|l| l.files).collect::<Vec<_>>()
    });
    // Before the fix: a guard per 1,024 keys at level 6, ~98 files of ~120 KB.
    assert!(
        files <= file_budget(bytes, target),
        "{files} files for {bytes} bytes at a {target}-byte target (mean {} bytes)",
        bytes / files.max(1) as u64
    );
    assert!(
        bytes / files as u64 >= target / 4,
        "mean file {} bytes",
        bytes / files as u64
    );
}

#[test]
fn overrides_that_made_every_other_key_a_guard_are_floored() {
    // The legal settings: `--flsm-top-level-bits 1 --flsm-bit-decrement 0`.
    let dense = FlsmOptions {
        top_level_bits: 1,
        bit_decrement: 0,
        ..FlsmOptions::default()
    };
    let fs = MemFs::new();
    let target = 256 << 10;
    let opts = options(&fs, target, dense);
    let db = Db::open("/db", opts.clone()).expect("open: the options are accepted");
    let n = 20_000;
    let (files, bytes) = load_and_compact(&db, n);
    // Before the fix: about n / 2 guards and as many files.
    assert!(
        files <= file_budget(bytes, target),
        "{files} files for {bytes} bytes at a {target}-byte target"
    );
    let guards = db.guards();
    let entry_bytes = (KEY_BYTES + VALUE_BYTES) as u64;
    let keys_per_file = target / entry_bytes;
    for (level, g) in guards.iter().enumerate().skip(1) {
        // About one guard per 2^⌈log2(keys per file)⌉ keys; allow for hash noise.
        assert!(
            (g.len() as u64) <= 2 * u64::from(n) / keys_per_file + 4,
            "level {level}: {} guards for {n} keys",
            g.len()
        );
    }
    drop(db);
    let db = Db::open("/db", opts).expect("reopen");
    assert_eq!(db.guards(), guards, "the guards are persisted");
}

#[test]
fn a_slot_holding_many_files_worth_is_cut_at_the_target_size() {
    // (Already true before the fix; kept so it stays true.) No guard below the hash's 60
    // low bits: every level is one slot, whose data must still be cut at the target.
    let coarse = FlsmOptions {
        top_level_bits: 60,
        bit_decrement: 0,
        ..FlsmOptions::default()
    };
    let fs = MemFs::new();
    let target = 64 << 10;
    let db = Db::open("/db", options(&fs, target, coarse)).expect("open");
    let (files, bytes) = load_and_compact(&db, 30_000);
    assert!(db.guards().iter().all(Vec::is_empty), "no guards expected");
    let ideal = bytes.div_ceil(target) as usize;
    assert!(
        files >= ideal && files <= ideal + 7,
        "{files} files for {bytes} bytes at a {target}-byte target"
    );
}

#[test]
fn a_compaction_past_the_mapping_limit_is_refused_with_a_clear_error() {
    use augur::fs::FileSystem;
    // A kernel that allows 40 mappings per process: 30 live tables (a quarter is headroom).
    // The in-memory file system serves the engine's read of /proc like any file.
    let fs = MemFs::new();
    fs.create_dir_all(std::path::Path::new("/proc/sys/vm"))
        .expect("mkdir");
    let mut w = fs
        .create(std::path::Path::new("/proc/sys/vm/max_map_count"))
        .expect("create");
    w.append(b"40\n").expect("append");
    w.sync().expect("sync");
    drop(w);
    // 4 KiB files: ~35 entries each, so a few thousand keys need more than 30 files.
    let opts = Options {
        memtable_size_bytes: 64 << 10,
        ..options(&fs, 4096, FlsmOptions::default())
    };
    let db = Db::open("/db", opts.clone()).expect("open");
    let mut acknowledged = 0;
    let err = loop {
        match db.put(key(acknowledged), value(acknowledged)) {
            Ok(()) => acknowledged += 1,
            Err(e) => break e,
        }
        assert!(acknowledged < 20_000, "no compaction was refused");
        let files: usize = db.stats().levels.iter().map(|l| l.files).sum();
        // Flushes are not checked; L0 holds at most l0_stop_trigger (12) files.
        assert!(files <= 30 + 12, "{files} live tables");
    };
    // A limit of the machine, not a bad argument: its own kind (the write that met it may
    // carry it as the cause of a poisoned database, when the background thread met it).
    assert!(
        matches!(err.root_cause(), augur::Error::ResourceLimit(_)),
        "{err:?}"
    );
    let m = err.to_string();
    for part in [
        "compaction refused",
        "vm.max_map_count = 40",
        "30 allowed",
        "target_file_size_bytes` (now 4096 bytes)",
    ] {
        assert!(m.contains(part), "{part:?} missing from: {m}");
    }
    // The refusal poisons the handle (as any failed compaction does), with the same cause.
    match db.put(b"after", b"x") {
        Err(augur::Error::Poisoned { source, .. }) => match source.as_ref() {
            augur::Error::ResourceLimit(m) => assert!(m.contains("vm.max_map_count"), "{m}"),
            other => panic!("poisoned by {other:?}, not the limit"),
        },
        other => panic!("write after the refusal: {other:?}"),
    }
    drop(db);
    // A kernel that allows fewer mappings than the database has tables: the open says so
    // before it maps any, instead of failing half-way with ENOMEM.
    let set_max_map_count = |n: &str| {
        let path = std::path::Path::new("/proc/sys/vm/max_map_count");
        fs.remove(path).expect("remove");
        let mut w = fs.create(path).expect("create");
        w.append(n.as_bytes()).expect("append");
        w.sync().expect("sync");
    };
    let tables: usize = {
        let db = Db::open("/db", opts.clone()).expect("reopen");
        db.stats().levels.iter().map(|l| l.files).sum()
    };
    assert!(tables >= 2, "{tables} tables");
    set_max_map_count(&format!("{tables}\n"));
    match Db::open("/db", opts.clone()) {
        Err(augur::Error::ResourceLimit(m)) => assert!(
            m.contains(&format!("{tables} live table files"))
                && m.contains(&format!("vm.max_map_count is {tables}")),
            "{m}"
        ),
        other => panic!("open past the mapping limit: {other:?}"),
    }
    set_max_map_count("40\n");
    // Larger files fit: the database reopens and compacts, every acknowledged key readable.
    let db = Db::open(
        "/db",
        Options {
            target_file_size_bytes: 256 << 10,
            ..opts
        },
    )
    .expect("reopen with larger files");
    db.compact_range(None, None).expect("compact");
    for i in 0..acknowledged {
        assert_eq!(db.get(key(i)).expect("get"), Some(value(i)), "key {i}");
    }
}

#[test]
fn guards_recorded_under_a_denser_rule_stay_valid() {
    // Dense guards, as an older build (or a smaller target) recorded them: 4 KiB files of
    // ~370-byte entries hold ~11 entries, so the floor allows a guard per 16 keys.
    let big_value = |i: u32| {
        let mut v = value(i);
        v.resize(350, b'w');
        v
    };
    let fs = MemFs::new();
    let dense = FlsmOptions {
        top_level_bits: 4,
        bit_decrement: 0,
        ..FlsmOptions::default()
    };
    let db = Db::open("/db", options(&fs, 4096, dense.clone())).expect("open");
    for i in 0..3000 {
        db.put(key(i), big_value(i)).expect("put");
    }
    db.compact_range(None, None).expect("compact");
    let recorded = db.guards();
    let deepest = recorded.iter().map(Vec::len).max().unwrap_or(0);
    assert!(deepest >= 100, "only {deepest} guards recorded");
    drop(db);

    // Reopened with 1 MiB files the floor is ~12 bits: the recorded guards are kept as they
    // are, the structure holds, and new compactions respect them.
    let opts = options(&fs, 1 << 20, dense);
    let db = Db::open("/db", opts.clone()).expect("reopen");
    assert_eq!(db.guards(), recorded, "reopening changed the guards");
    db.check_structure().expect("structure after reopen");
    for i in 3000..6000 {
        db.put(key(i), big_value(i)).expect("put");
    }
    db.compact_range(None, None).expect("compact");
    db.check_structure().expect("structure after compaction");
    let after = db.guards();
    for (level, guards) in recorded.iter().enumerate() {
        for g in guards {
            assert!(
                after[level].binary_search(g).is_ok(),
                "a recorded guard of level {level} was dropped"
            );
        }
    }
    // Few guards are added under the new floor: ~6,000 keys over 2^12-key spacing.
    let added = after
        .iter()
        .map(Vec::len)
        .max()
        .unwrap_or(0)
        .saturating_sub(deepest);
    assert!(added <= 20, "{added} guards added");
    for i in (0..6000).step_by(37) {
        assert_eq!(db.get(key(i)).expect("get"), Some(big_value(i)), "key {i}");
    }
}
