//! Live-WAL tracking (issue 15, docs/format/manifest.md "Live WALs"): the manifest records
//! every WAL the database creates and the synced size of every WAL a memtable switch
//! closes, so an open that finds a live WAL missing, or a closed one shorter than its synced
//! size, fails with a `Corruption` naming it instead of silently losing its writes;
//! `Options::accept_wal_loss` opens anyway and says what was dropped.
//!
//! Closed but unflushed WALs only exist between a memtable switch and the end of its flush;
//! the fault-injecting file system produces them deterministically by cutting the power at
//! each sync of a flush in turn.

use augur::fs::{FaultFs, FaultOp, FileSystem};
use augur::{Db, Error, Options};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Options whose memtables switch every few dozen writes; flushes run inline.
fn options() -> Options {
    Options {
        memtable_size_bytes: 4096,
        background_threads: false,
        ..Options::default()
    }
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

fn value(i: u32) -> Vec<u8> {
    format!("value-{i}-{}", "x".repeat(40)).into_bytes()
}

/// Writes keys `0..flushed` and flushes them, then keys `flushed..total` (several memtables,
/// none flushed), and closes. Returns the WAL files left, oldest first.
fn build(dir: &Path, opts: Options, flushed: u32, total: u32) -> Vec<PathBuf> {
    let db = Db::open(dir, opts.clone()).expect("open");
    for i in 0..flushed {
        db.put(key(i), value(i)).expect("put");
    }
    db.flush().expect("flush");
    for i in flushed..total {
        db.put(key(i), value(i)).expect("put");
    }
    drop(db);
    wal_files(opts.fs.as_ref(), dir)
}

fn wal_files(fs: &dyn FileSystem, dir: &Path) -> Vec<PathBuf> {
    let mut wals: Vec<PathBuf> = fs
        .list(dir)
        .expect("list")
        .into_iter()
        .filter(|n| n.ends_with(".wal"))
        .map(|n| dir.join(n))
        .collect();
    wals.sort();
    wals
}

/// The open failed with a `Corruption` naming `wal` whose reason contains `says`.
fn assert_corruption_names(result: augur::Result<Db>, wal: &Path, says: &str) {
    match result {
        Err(Error::Corruption { file, reason, .. }) => {
            assert_eq!(file, wal, "{reason}");
            assert!(reason.contains(says), "{reason}");
            assert!(reason.contains("accept_wal_loss"), "{reason}");
        }
        Err(e) => panic!("expected a corruption naming {}, got {e}", wal.display()),
        Ok(_) => panic!("opened although {} lost writes", wal.display()),
    }
}

/// Keys found among `range`.
fn present(db: &Db, range: std::ops::Range<u32>) -> Vec<u32> {
    range
        .filter(|&i| {
            let got = db.get(key(i)).expect("get");
            if let Some(v) = &got {
                assert_eq!(v, &value(i), "wrong value for key {i}");
            }
            got.is_some()
        })
        .collect()
}

#[test]
fn clean_reopens_check_every_live_wal_without_false_alarms() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let wals = build(&dir, options(), 200, 1200);
    assert!(!wals.is_empty(), "{wals:?}");
    // Reopen twice: the first open replays and rewrites the manifest (its snapshot edit
    // carries the live WALs), the second checks what the first recorded.
    for round in 0..2 {
        let db = Db::open(&dir, options()).expect("clean reopen");
        assert!(db.wal_losses().is_empty(), "round {round}");
        assert_eq!(present(&db, 0..1200).len(), 1200, "round {round}");
        for i in 1200..1500 {
            db.put(key(i), value(i)).expect("put");
        }
    }
    let db = Db::open(&dir, options()).expect("open");
    assert_eq!(present(&db, 0..1500).len(), 1500);
}

#[test]
fn a_deleted_newest_wal_fails_the_open_and_accept_wal_loss_drops_its_writes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let wals = build(&dir, options(), 300, 1000);
    let newest = wals.last().expect("a WAL").clone();
    std::fs::remove_file(&newest).unwrap();

    assert_corruption_names(Db::open(&dir, options()), &newest, "is missing");
    // The failed open changed nothing: it fails the same way again.
    assert_corruption_names(Db::open(&dir, options()), &newest, "is missing");

    let db = Db::open(
        &dir,
        Options {
            accept_wal_loss: true,
            ..options()
        },
    )
    .expect("open accepting the loss");
    assert_eq!(db.wal_losses().len(), 1, "{:?}", db.wal_losses());
    assert!(
        db.wal_losses()[0].contains(&*newest.to_string_lossy()),
        "{:?}",
        db.wal_losses()
    );
    // Flushed keys and the older WALs' keys survive; the newest WAL's keys are gone.
    let found = present(&db, 0..1000);
    assert!(
        found.len() > 300 && found.len() < 1000,
        "{} found",
        found.len()
    );
    assert_eq!(
        found,
        (0..found.len() as u32).collect::<Vec<_>>(),
        "a prefix survives"
    );
    drop(db);
    // The accepted open recorded a fresh WAL set: a plain open works again.
    let db = Db::open(&dir, options()).expect("plain open after accepting");
    assert!(db.wal_losses().is_empty());
}

/// Replaces `path` on `fs` by its first `len` bytes (synced).
fn truncate(fs: &FaultFs, path: &Path, len: usize) {
    let bytes = fs.read_all(path).unwrap();
    fs.remove(path).unwrap();
    let mut f = fs.create(path).unwrap();
    f.append(&bytes[..len.min(bytes.len())]).unwrap();
    f.sync().unwrap();
    fs.sync_dir(path.parent().unwrap()).unwrap();
}

/// Writes 300 keys (not synced) on a fresh fault-injecting file system, then cuts the power
/// just before the `k`-th sync of `Db::flush` (the memtable switch that closes the WAL, then
/// the flush). Returns the file system, up again, and the WALs left; `None` when the flush
/// finished before its `k`-th sync.
fn crash_inside_flush(k: u64) -> Option<(FaultFs, Vec<PathBuf>)> {
    let fs = FaultFs::new();
    let opts = Options {
        fs: Arc::new(fs.clone()),
        background_threads: false,
        ..Options::default()
    };
    let dir = Path::new("/db");
    let db = Db::open(dir, opts).unwrap();
    for i in 0..300 {
        db.put(key(i), value(i)).unwrap();
    }
    fs.crash_at(FaultOp::Sync, k);
    let flushed = db.flush().is_ok();
    drop(db);
    fs.reopen_after_crash();
    (!flushed).then(|| {
        let wals = wal_files(&fs, dir);
        (fs, wals)
    })
}

fn fault_options(fs: &FaultFs, accept_wal_loss: bool) -> Options {
    Options {
        fs: Arc::new(fs.clone()),
        background_threads: false,
        accept_wal_loss,
        ..Options::default()
    }
}

/// A power cut at every sync of a flush: the reopen never raises a false alarm and recovers
/// a prefix of the writes; once the switch recorded the closed WAL's synced size, a copy of
/// that WAL cut short fails the open (and `accept_wal_loss` opens it, reporting the loss); a
/// deleted WAL that was not yet flushed always fails the open.
#[test]
fn crashes_inside_a_flush_raise_no_false_alarm_and_short_or_missing_wals_are_caught() {
    let dir = Path::new("/db");
    let (mut short_caught, mut missing_caught, mut points) = (0, 0, 0);
    for k in 1..=24 {
        let Some((fs, wals)) = crash_inside_flush(k) else {
            break;
        };
        points += 1;
        let ctx = format!("crash before sync #{k} of the flush; WALs {wals:?}");
        // Clean reopen: no alarm, a prefix of the 300 unsynced writes.
        {
            let db =
                Db::open(dir, fault_options(&fs, false)).unwrap_or_else(|e| panic!("{ctx}: {e}"));
            assert!(db.wal_losses().is_empty(), "{ctx}");
            let found = present(&db, 0..300);
            assert_eq!(found, (0..found.len() as u32).collect::<Vec<_>>(), "{ctx}");
        }
        if wals.len() < 2 {
            continue;
        }
        let older = &wals[0];
        // The older WAL cut short by 10 bytes.
        let (fs, _) = crash_inside_flush(k).unwrap();
        let len = fs.size(older).unwrap() as usize;
        truncate(&fs, older, len.saturating_sub(10));
        match Db::open(dir, fault_options(&fs, false)) {
            Ok(_) => {} // the crash came before the switch recorded the synced size
            Err(e) => {
                assert_corruption_names(Err(e), older, "fewer than");
                short_caught += 1;
                let db = Db::open(dir, fault_options(&fs, true)).expect("accepting the loss");
                // The short WAL, and the crashed flush's table when it was written: it
                // holds the cut record's writes, which nothing else recovers now.
                let losses = db.wal_losses();
                assert!(
                    losses.first().is_some_and(|l| l.contains("fewer than"))
                        && losses[1..]
                            .iter()
                            .all(|l| l.contains(".sst: not in the manifest")),
                    "{ctx}: {losses:?}"
                );
                let found = present(&db, 0..300);
                assert!(found.len() < 300, "{ctx}: the cut record is gone");
            }
        }
        // The older WAL deleted.
        let (fs, _) = crash_inside_flush(k).unwrap();
        fs.remove(older).unwrap();
        fs.sync_dir(dir).unwrap();
        match Db::open(dir, fault_options(&fs, false)) {
            Ok(db) => {
                // Only when the flush had already moved the log number past it.
                assert_eq!(
                    present(&db, 0..300).len(),
                    300,
                    "{ctx}: writes lost silently"
                );
            }
            Err(e) => {
                assert_corruption_names(Err(e), older, "is missing");
                missing_caught += 1;
            }
        }
    }
    assert!(points >= 4, "only {points} crash points inside the flush");
    assert!(
        short_caught >= 1,
        "no crash point left a recorded closed WAL"
    );
    assert!(
        missing_caught >= 1,
        "no crash point left an unflushed older WAL"
    );
}
