//! `augur::repair` (issue 45 item 2): after the manifest is deleted, truncated or a table is
//! damaged, repair rebuilds a manifest from the files that check out, and then the database
//! opens, `verify` passes, and every key reads as the newest version the surviving files
//! hold (differential: each write's seqno is recorded, the surviving files are listed with
//! `augur::inspect`, and the expected value of a key is its surviving write with the largest
//! seqno). Values separated into the value log and expiring values are among the writes.

use augur::{inspect, repair, CompactionStyle, Db, ManualClock, Options, RepairReport};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

const T0: u64 = 1_700_000_000_000;

/// One write: the value (`None`: a delete) and its expiry time.
#[derive(Clone, Debug)]
struct Write {
    key: Vec<u8>,
    value: Option<Vec<u8>>,
    expire_at: Option<u64>,
}

fn options(clock: &Arc<ManualClock>) -> Options {
    Options {
        background_threads: false,
        value_separation_threshold: 32,
        value_log_segment_bytes: 16 << 10,
        clock: clock.clone(),
        ..Options::default()
    }
}

fn key(i: usize) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

fn value(i: usize, round: usize) -> Vec<u8> {
    // Every third value is large enough to be separated into the value log.
    let len = if i.is_multiple_of(3) { 80 } else { 10 };
    let mut v = format!("v{round}-{i}-").into_bytes();
    v.resize(len, b'a' + (round % 26) as u8);
    v
}

/// Builds a database in `dir` over several flushes and a compaction, with one snapshot held
/// from the start (so no version is dropped and no seqno zeroed), and the last writes left
/// in the WAL. Returns every write by seqno.
fn build(dir: &Path, clock: &Arc<ManualClock>) -> BTreeMap<u64, Write> {
    build_with(dir, clock, None)
}

/// [`build`] under compaction style `style` (`None`: the default).
fn build_with(
    dir: &Path,
    clock: &Arc<ManualClock>,
    style: Option<CompactionStyle>,
) -> BTreeMap<u64, Write> {
    let db = Db::open(
        dir,
        Options {
            compaction: style,
            ..options(clock)
        },
    )
    .expect("open");
    let hold = db.snapshot();
    let mut writes = BTreeMap::new();
    let mut record = |db: &Db, w: Write| {
        writes.insert(db.snapshot().seqno(), w);
    };
    for round in 0..5 {
        for i in (round..300).step_by(round + 1) {
            let k = key(i);
            if round > 0 && i.is_multiple_of(7) {
                db.delete(&k).expect("delete");
                record(
                    &db,
                    Write {
                        key: k,
                        value: None,
                        expire_at: None,
                    },
                );
            } else if round > 0 && i.is_multiple_of(5) {
                // Half of them expire before the checks.
                let at = if i % 2 == 0 {
                    T0 + 1_000
                } else {
                    T0 + 1_000_000_000
                };
                let v = value(i, round);
                db.put_expiring(&k, &v, at).expect("put_expiring");
                record(
                    &db,
                    Write {
                        key: k,
                        value: Some(v),
                        expire_at: Some(at),
                    },
                );
            } else {
                let v = value(i, round);
                db.put(&k, &v).expect("put");
                record(
                    &db,
                    Write {
                        key: k,
                        value: Some(v),
                        expire_at: None,
                    },
                );
            }
        }
        if round < 4 {
            db.flush().expect("flush");
        }
        if round == 1 {
            db.compact_range(None, None).expect("compact");
        }
    }
    drop(hold);
    drop(db);
    clock.set(T0 + 10_000);
    writes
}

fn files(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("read_dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .collect();
    out.sort();
    out
}

/// The expected contents: per key, the surviving write with the largest seqno, where the
/// surviving files are the tables and WALs of `dir` except `excluded`.
fn expected(
    dir: &Path,
    writes: &BTreeMap<u64, Write>,
    excluded: &[PathBuf],
) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut newest: BTreeMap<Vec<u8>, u64> = BTreeMap::new();
    let mut note = |k: Vec<u8>, s: u64| {
        let e = newest.entry(k).or_insert(s);
        *e = (*e).max(s);
    };
    for t in files(dir, "sst").iter().filter(|p| !excluded.contains(p)) {
        for e in inspect::sst_entries(t, false).expect("sst") {
            let e = e.expect("entry");
            note(e.key, e.seqno);
        }
    }
    for w in files(dir, "wal").iter().filter(|p| !excluded.contains(p)) {
        for r in inspect::wal(w, false).expect("wal").records {
            for e in r.entries {
                note(e.key, e.seqno);
            }
        }
    }
    let now = T0 + 10_000;
    newest
        .into_iter()
        .filter_map(|(k, s)| {
            let w = writes
                .get(&s)
                .unwrap_or_else(|| panic!("no write at seqno {s}"));
            assert_eq!(w.key, k, "seqno {s}");
            match (&w.value, w.expire_at) {
                (Some(_), Some(at)) if at <= now => None,
                (Some(v), _) => Some((k, v.clone())),
                (None, _) => None,
            }
        })
        .collect()
}

/// Opens the repaired database, verifies it and compares every key with `model`.
fn check(dir: &Path, clock: &Arc<ManualClock>, model: &BTreeMap<Vec<u8>, Vec<u8>>, ctx: &str) {
    let db = Db::open(dir, options(clock)).unwrap_or_else(|e| panic!("{ctx}: open: {e}"));
    db.verify().unwrap_or_else(|e| panic!("{ctx}: verify: {e}"));
    for i in 0..300 {
        let k = key(i);
        let got = db.get(&k).unwrap_or_else(|e| panic!("{ctx}: get: {e}"));
        assert_eq!(got.as_ref(), model.get(&k), "{ctx}: key {i}");
    }
    let scanned: BTreeMap<Vec<u8>, Vec<u8>> = db
        .iter()
        .map(|r| r.unwrap_or_else(|e| panic!("{ctx}: scan: {e}")))
        .collect();
    assert_eq!(&scanned, model, "{ctx}: scan");
    // The database takes writes and compacts after repair.
    db.put(b"after-repair", b"x").expect("put");
    db.flush().expect("flush");
    db.compact_range(None, None).expect("compact");
    assert_eq!(db.get(b"after-repair").expect("get"), Some(b"x".to_vec()));
    db.verify()
        .unwrap_or_else(|e| panic!("{ctx}: verify after compaction: {e}"));
    // GC on the garbage repair recorded (and compaction counted) loses no live value.
    for _ in 0..50 {
        let r = db
            .run_value_log_gc()
            .unwrap_or_else(|e| panic!("{ctx}: gc: {e}"));
        if r.segment.is_none() {
            break;
        }
    }
    db.verify()
        .unwrap_or_else(|e| panic!("{ctx}: verify after gc: {e}"));
    for (k, v) in model {
        assert_eq!(
            db.get(k).expect("get").as_ref(),
            Some(v),
            "{ctx}: after compaction and gc"
        );
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read_dir") {
        let e = e.expect("entry");
        if e.file_type().expect("type").is_file() {
            std::fs::copy(e.path(), to.join(e.file_name())).expect("copy");
        }
    }
}

fn run_repair(dir: &Path, clock: &Arc<ManualClock>) -> RepairReport {
    repair(dir, &options(clock)).expect("repair")
}

fn manifests(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .expect("read_dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("MANIFEST-") || n == "CURRENT")
        })
        .collect()
}

#[test]
fn deleted_manifest_and_current() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let clock = Arc::new(ManualClock::new(T0));
    let writes = build(tmp.path(), &clock);
    let model = expected(tmp.path(), &writes, &[]);
    assert!(model.len() > 100, "a model of {} keys", model.len());
    for m in manifests(tmp.path()) {
        std::fs::remove_file(m).expect("remove");
    }
    assert!(
        Db::open(tmp.path(), options(&clock)).is_err(),
        "opens without CURRENT"
    );
    let report = run_repair(tmp.path(), &clock);
    assert!(report.tables.len() >= 3, "{report:#?}");
    assert!(
        report.tables.iter().any(|t| t.from_wal),
        "the WAL's table: {report:#?}"
    );
    assert!(report.wals.iter().all(|w| w.entries > 0 || w.records == 0));
    assert!(!report.segments.is_empty(), "value-log segments kept");
    assert!(report.lost.iter().any(|l| l.name.ends_with(".wal")));
    assert!(
        report.lost.iter().all(|l| l.moved_to.exists()),
        "{report:#?}"
    );
    check(tmp.path(), &clock, &model, "deleted manifest");
    // Repair is idempotent: a second run keeps everything.
    let again = run_repair(tmp.path(), &clock);
    assert!(
        again.lost.iter().all(|l| !l.name.ends_with(".sst")),
        "{again:#?}"
    );
    let mut model2 = model.clone();
    model2.insert(b"after-repair".to_vec(), b"x".to_vec());
    check(tmp.path(), &clock, &model2, "second repair");
}

#[test]
fn truncated_manifest_at_sampled_sizes() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let clock = Arc::new(ManualClock::new(T0));
    let template = tmp.path().join("template");
    let writes = build(&template, &clock);
    let model = expected(&template, &writes, &[]);
    let manifest = manifests(&template)
        .into_iter()
        .find(|p| p.file_name().is_some_and(|n| n != "CURRENT"))
        .expect("a manifest");
    let len = std::fs::metadata(&manifest).expect("meta").len();
    let mut sizes: Vec<u64> = (0..8).map(|k| len * k / 8).collect();
    sizes.extend([1, len - 1]);
    for size in sizes {
        let dir = tmp.path().join(format!("at-{size}"));
        copy_dir(&template, &dir);
        let m = dir.join(manifest.file_name().expect("name"));
        let bytes = std::fs::read(&m).expect("read");
        std::fs::write(&m, &bytes[..size as usize]).expect("write");
        let report = run_repair(&dir, &clock);
        assert!(
            report.lost.iter().any(|l| l.name.starts_with("MANIFEST-")),
            "{report:#?}"
        );
        check(
            &dir,
            &clock,
            &model,
            &format!("manifest truncated to {size} of {len}"),
        );
    }
}

#[test]
fn damaged_table() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let clock = Arc::new(ManualClock::new(T0));
    let writes = build(tmp.path(), &clock);
    // The largest table: the compaction's output, holding the oldest versions.
    let tables = files(tmp.path(), "sst");
    let victim = tables
        .iter()
        .max_by_key(|p| std::fs::metadata(p).expect("meta").len())
        .expect("a table")
        .clone();
    let model = expected(tmp.path(), &writes, std::slice::from_ref(&victim));
    assert_ne!(
        model,
        expected(tmp.path(), &writes, &[]),
        "the victim held newest versions"
    );
    let mut bytes = std::fs::read(&victim).expect("read");
    // A byte in the first data blocks (the slots come first in the file).
    let at = bytes.len() / 5;
    bytes[at] ^= 0x10;
    std::fs::write(&victim, &bytes).expect("write");
    let report = run_repair(tmp.path(), &clock);
    let name = victim.file_name().and_then(|n| n.to_str()).expect("name");
    let lost = report
        .lost
        .iter()
        .find(|l| l.name == name)
        .unwrap_or_else(|| panic!("{name} not in lost/: {report:#?}"));
    assert!(lost.reason.contains("verification"), "{}", lost.reason);
    assert!(lost.moved_to.exists());
    check(tmp.path(), &clock, &model, "damaged table");
}

#[test]
fn file_numbers_out_of_seqno_order() {
    // Repair must not take the read order from file numbers: give the oldest table the
    // largest number and the newest the smallest, then repair.
    let tmp = tempfile::tempdir().expect("tempdir");
    let clock = Arc::new(ManualClock::new(T0));
    let writes = build(tmp.path(), &clock);
    let model = expected(tmp.path(), &writes, &[]);
    let tables = files(tmp.path(), "sst");
    assert!(tables.len() >= 2);
    let (first, last) = (&tables[0], &tables[tables.len() - 1]);
    let swap = tmp.path().join("swap.tmp");
    std::fs::rename(first, &swap).expect("rename");
    std::fs::rename(last, first).expect("rename");
    std::fs::rename(&swap, last).expect("rename");
    let report = run_repair(tmp.path(), &clock);
    assert!(
        report.tables.iter().any(|t| t.renamed_from.is_some()),
        "renumbered: {report:#?}"
    );
    check(tmp.path(), &clock, &model, "swapped numbers");
}

#[test]
fn damaged_wal() {
    // A flipped byte in the middle of the WAL: its records before the damage are kept,
    // the rest reported.
    let tmp = tempfile::tempdir().expect("tempdir");
    let clock = Arc::new(ManualClock::new(T0));
    let writes = build(tmp.path(), &clock);
    let wal = files(tmp.path(), "wal")
        .into_iter()
        .max_by_key(|p| std::fs::metadata(p).expect("meta").len())
        .expect("a WAL");
    let mut bytes = std::fs::read(&wal).expect("read");
    let at = bytes.len() / 2;
    bytes[at] ^= 0x40;
    std::fs::write(&wal, &bytes).expect("write");
    let model = expected(tmp.path(), &writes, &[]);
    let report = run_repair(tmp.path(), &clock);
    let name = wal.file_name().and_then(|n| n.to_str()).expect("name");
    let replayed = report
        .wals
        .iter()
        .find(|w| w.name == name)
        .unwrap_or_else(|| panic!("{report:#?}"));
    let (offset, _) = replayed.stopped.clone().expect("stopped at the damage");
    assert!(offset <= at as u64, "stopped at {offset}, damage at {at}");
    assert!(replayed.records > 0, "{replayed:?}");
    check(tmp.path(), &clock, &model, "damaged WAL");
}

#[test]
fn flsm_database() {
    // The style comes from the old manifest when a record of it reads; with every manifest
    // gone, from the options. All tables at L0 suit either style.
    let tmp = tempfile::tempdir().expect("tempdir");
    let clock = Arc::new(ManualClock::new(T0));
    let writes = build_with(tmp.path(), &clock, Some(CompactionStyle::Flsm));
    let model = expected(tmp.path(), &writes, &[]);
    let report = run_repair(tmp.path(), &clock);
    assert_eq!(report.style, CompactionStyle::Flsm);
    let asked_leveled = Options {
        compaction: Some(CompactionStyle::Leveled),
        ..options(&clock)
    };
    assert!(
        repair(tmp.path(), &asked_leveled).is_err(),
        "a style conflict is refused"
    );
    check(tmp.path(), &clock, &model, "FLSM");
    for m in manifests(tmp.path()) {
        std::fs::remove_file(m).expect("remove");
    }
    let asked_flsm = Options {
        compaction: Some(CompactionStyle::Flsm),
        ..options(&clock)
    };
    let report = repair(tmp.path(), &asked_flsm).expect("repair");
    assert_eq!(report.style, CompactionStyle::Flsm);
    let mut model2 = model.clone();
    model2.insert(b"after-repair".to_vec(), b"x".to_vec());
    check(tmp.path(), &clock, &model2, "FLSM, manifest deleted");
}

#[test]
fn tables_sharing_writes_are_merged() {
    // A compaction's leftover input beside its output: simulated by a copy of a table
    // under a new number. Both kept, a compaction would count the shared entries' values
    // as garbage while the other copy still points at them.
    let tmp = tempfile::tempdir().expect("tempdir");
    let clock = Arc::new(ManualClock::new(T0));
    let writes = build(tmp.path(), &clock);
    let model = expected(tmp.path(), &writes, &[]);
    let tables = files(tmp.path(), "sst");
    let copy = tmp.path().join("000900.sst");
    std::fs::copy(&tables[0], &copy).expect("copy");
    let report = run_repair(tmp.path(), &clock);
    let merged: Vec<_> = report
        .lost
        .iter()
        .filter(|l| l.reason.contains("merged into"))
        .collect();
    assert_eq!(merged.len(), 2, "{report:#?}");
    check(tmp.path(), &clock, &model, "duplicated table");
}

#[test]
fn garbage_of_values_nothing_points_at_is_recorded() {
    // Overwritten separated values whose pointers a compaction dropped before the manifest
    // was lost: repair records their bytes as garbage, so GC collects them, and every live
    // value stays.
    let tmp = tempfile::tempdir().expect("tempdir");
    let clock = Arc::new(ManualClock::new(T0));
    let db = Db::open(tmp.path(), options(&clock)).expect("open");
    for round in 0..3 {
        for i in 0..200 {
            db.put(key(i), vec![b'a' + round as u8; 100]).expect("put");
        }
        db.flush().expect("flush");
    }
    db.compact_range(None, None).expect("compact");
    drop(db);
    for m in manifests(tmp.path()) {
        std::fs::remove_file(m).expect("remove");
    }
    run_repair(tmp.path(), &clock);
    let db = Db::open(tmp.path(), options(&clock)).expect("open");
    let r = db.run_value_log_gc().expect("gc");
    assert!(r.segment.is_some(), "repair recorded garbage: {r:?}");
    db.verify().expect("verify");
    for i in 0..200 {
        assert_eq!(
            db.get(key(i)).expect("get"),
            Some(vec![b'c'; 100]),
            "key {i}"
        );
    }
}

#[test]
fn lost_dir_is_no_foreign_file_and_an_open_database_is_not_repaired() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let clock = Arc::new(ManualClock::new(T0));
    build(tmp.path(), &clock);
    run_repair(tmp.path(), &clock);
    assert!(tmp.path().join(augur::LOST_DIR).is_dir());
    // A repair interrupted between moving CURRENT and writing the new one: the open names
    // the damage (not `lost/` as a foreign file).
    std::fs::remove_file(tmp.path().join("CURRENT")).expect("remove");
    match Db::open(tmp.path(), options(&clock)) {
        Err(augur::Error::Corruption { reason, .. }) => {
            assert!(reason.contains("augur repair"), "{reason}")
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
    let read_only = Options {
        read_only: true,
        ..options(&clock)
    };
    assert!(matches!(
        repair(tmp.path(), &read_only),
        Err(augur::Error::ReadOnly { .. })
    ));
    run_repair(tmp.path(), &clock);
    let db = Db::open(tmp.path(), options(&clock)).expect("open");
    match repair(tmp.path(), &options(&clock)) {
        Err(augur::Error::Busy(_)) => {}
        other => panic!("repair of an open database: {other:?}"),
    }
    drop(db);
}

#[test]
fn a_segment_with_a_damaged_header_goes_to_lost_and_verify_names_the_loss() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let clock = Arc::new(ManualClock::new(T0));
    build(tmp.path(), &clock);
    let segment = files(tmp.path(), "vlog")
        .into_iter()
        .next()
        .expect("a segment");
    let mut bytes = std::fs::read(&segment).expect("read");
    bytes[0] ^= 0xff;
    std::fs::write(&segment, &bytes).expect("write");
    let report = run_repair(tmp.path(), &clock);
    let name = segment.file_name().and_then(|n| n.to_str()).expect("name");
    assert!(
        report
            .lost
            .iter()
            .any(|l| l.name == name && l.reason.contains("header")),
        "{report:#?}"
    );
    assert!(report.segments_missing.contains(&1), "{report:#?}");
    assert!(
        report
            .warnings
            .iter()
            .any(|w| w.contains("missing value-log segment")),
        "{report:#?}"
    );
    // The database opens; the values that lived in the segment are lost, and verify says so.
    let db = Db::open(tmp.path(), options(&clock)).expect("open");
    match db.verify() {
        Err(augur::Error::Corruption { file, .. }) => {
            assert_eq!(file.file_name().and_then(|n| n.to_str()), Some(name))
        }
        other => panic!("verify: {other:?}"),
    }
}
