//! Errors keep their kind (issue 42, item 3): a write to a read-only database is `ReadOnly`;
//! the followers of a write group that failed get `Poisoned` whose source is the group's
//! failure, not its text; a panicking sub-compaction is `TaskPanicked`; and `get` reads
//! again only when a retry can fix the failure (a stale pointer into a segment GC deleted),
//! never after a damaged or failed read. The live-table limit's `ResourceLimit` is tested
//! in `regression_flsm_file_count.rs`.
//!
//! The tests run on `HookFs`: an in-memory file system with the hooks each test arms.

#[path = "common/forward_fs.rs"]
#[macro_use]
mod forward_fs;

use augur::fs::{FileSystem, MemFs, RandomAccessFile, ReadMode, WritableFile};
use augur::{Db, Error, Options, Result, WriteBatch, WriteOptions};
use parking_lot::Mutex;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::ThreadId;
use std::time::Duration;

/// What the tests make the file system do.
#[derive(Default)]
struct Hooks {
    /// Damaged value reads during one lookup: armed (1), a table read starts the lookup (2),
    /// its value-log reads return a flipped bit (3) until a table read after them (4: the
    /// lookup began again, and reads good values).
    damaged_lookup: AtomicU8,
    /// WAL syncs from now on: the first waits, so that writers queue behind it; the second
    /// fails. Zero: disarmed.
    wal_syncs: AtomicU64,
    wal_syncs_armed: AtomicBool,
    /// Panic when a table file is created on a thread without a name: the engine names its
    /// own threads (and the test harness names the tests'), sub-compactions run on unnamed
    /// scoped threads.
    panic_in_sub_compactions: AtomicBool,
    /// The thread whose next table read waits: it reports on the first channel, then waits
    /// for the second.
    held_table_read: Mutex<Option<HeldRead>>,
}

/// A held table read: the thread, where it reports that it waits, what releases it.
type HeldRead = (ThreadId, mpsc::Sender<()>, mpsc::Receiver<()>);

/// `MemFs` with [`Hooks`].
#[derive(Clone)]
struct HookFs {
    inner: MemFs,
    hooks: Arc<Hooks>,
}

fn extension_is(path: &Path, ext: &str) -> bool {
    path.extension().is_some_and(|e| e == ext)
}

struct HookWritable {
    inner: Box<dyn WritableFile>,
    wal: bool,
    hooks: Arc<Hooks>,
}

impl WritableFile for HookWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.inner.append(data)
    }
    fn flush(&mut self) -> Result<()> {
        self.inner.flush()
    }
    fn sync(&mut self) -> Result<()> {
        if self.wal && self.hooks.wal_syncs_armed.load(Ordering::SeqCst) {
            match self.hooks.wal_syncs.fetch_add(1, Ordering::SeqCst) {
                0 => std::thread::sleep(Duration::from_millis(500)),
                1 => {
                    return Err(Error::io(
                        "syncing the WAL",
                        std::io::Error::other("injected sync failure"),
                    ))
                }
                _ => {}
            }
        }
        self.inner.sync()
    }
    fn len(&self) -> u64 {
        self.inner.len()
    }
}

struct HookReader {
    inner: Arc<dyn RandomAccessFile>,
    path: PathBuf,
    hooks: Arc<Hooks>,
}

impl RandomAccessFile for HookReader {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        if extension_is(&self.path, "sst") {
            let damaged = &self.hooks.damaged_lookup;
            for (from, to) in [(1, 2), (3, 4)] {
                let _ = damaged.compare_exchange(from, to, Ordering::SeqCst, Ordering::SeqCst);
            }
            let mut held = self.hooks.held_table_read.lock();
            if held
                .as_ref()
                .is_some_and(|(t, _, _)| *t == std::thread::current().id())
            {
                if let Some((_, reached, release)) = held.take() {
                    drop(held);
                    reached.send(()).expect("report the held read");
                    release.recv().expect("wait for the release");
                }
            }
        }
        self.inner.read_exact_at(offset, buf)?;
        let damaged = &self.hooks.damaged_lookup;
        if extension_is(&self.path, "vlog")
            && (damaged.load(Ordering::SeqCst) == 3
                || damaged
                    .compare_exchange(2, 3, Ordering::SeqCst, Ordering::SeqCst)
                    .is_ok())
        {
            if let Some(last) = buf.last_mut() {
                *last ^= 1;
            }
        }
        Ok(())
    }
    fn as_slice(&self) -> Option<&[u8]> {
        None
    }
    fn len(&self) -> Result<u64> {
        self.inner.len()
    }
}

impl FileSystem for HookFs {
    forward_file_system!(inner);
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        if extension_is(path, "sst")
            && std::thread::current().name().is_none()
            && self.hooks.panic_in_sub_compactions.load(Ordering::SeqCst)
        {
            panic!("injected panic creating {}", path.display());
        }
        Ok(Box::new(HookWritable {
            inner: self.inner.create(path)?,
            wal: extension_is(path, "wal"),
            hooks: self.hooks.clone(),
        }))
    }
    fn open_append(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        Ok(Box::new(HookWritable {
            inner: self.inner.open_append(path)?,
            wal: extension_is(path, "wal"),
            hooks: self.hooks.clone(),
        }))
    }
    fn open(&self, path: &Path, mode: ReadMode) -> Result<Arc<dyn RandomAccessFile>> {
        Ok(Arc::new(HookReader {
            inner: self.inner.open(path, mode)?,
            path: path.to_path_buf(),
            hooks: self.hooks.clone(),
        }))
    }
}

fn hook_fs() -> HookFs {
    HookFs {
        inner: MemFs::new(),
        hooks: Arc::default(),
    }
}

fn options(fs: &HookFs) -> Options {
    Options {
        fs: Arc::new(fs.clone()),
        ..Options::default()
    }
}

#[test]
fn every_change_to_a_read_only_database_is_refused_as_read_only() {
    let fs = hook_fs();
    let db = Db::open("/db", options(&fs)).expect("open");
    db.put("k", "v").expect("put");
    drop(db);
    let db = Db::open(
        "/db",
        Options {
            read_only: true,
            ..options(&fs)
        },
    )
    .expect("read-only open");
    let mut batch = WriteBatch::new();
    batch.put("a", "b");
    let refused = [
        ("put", db.put("a", "b")),
        ("delete", db.delete("k")),
        ("write", db.write(batch)),
        ("sync", db.sync()),
        ("flush", db.flush()),
        ("compact_range", db.compact_range(None, None)),
        ("run_value_log_gc", db.run_value_log_gc().map(|_| ())),
    ];
    for (what, r) in refused {
        match r {
            Err(Error::ReadOnly { dir }) => assert_eq!(dir, Path::new("/db"), "{what}"),
            other => panic!("{what} on a read-only database: {other:?}"),
        }
    }
    assert_eq!(db.get("k").expect("get").as_deref(), Some(&b"v"[..]));
}

#[test]
fn followers_of_a_failed_write_group_get_its_failure_as_their_cause() {
    let fs = hook_fs();
    let db = Db::open("/db", options(&fs)).expect("open");
    db.put("warm", "up").expect("put");
    fs.hooks.wal_syncs_armed.store(true, Ordering::SeqCst);
    let synced = WriteOptions { sync: true };
    let write = |key: String| {
        let mut b = WriteBatch::new();
        b.put(key, "v");
        db.write_opt(b, synced)
    };
    let (first, rest) = std::thread::scope(|s| {
        // The first write's sync waits; the others queue behind it and commit as one
        // group, whose sync fails.
        let first = s.spawn(|| write("first".into()));
        std::thread::sleep(Duration::from_millis(100));
        let rest: Vec<_> = (0..6)
            .map(|i| s.spawn(move || write(format!("k{i}"))))
            .collect();
        let rest: Vec<_> = rest.into_iter().map(|h| h.join().expect("join")).collect();
        (first.join().expect("join"), rest)
    });
    first.expect("the first write");
    let errors: Vec<Error> = rest.into_iter().map(|r| r.expect_err("written")).collect();
    let io: Vec<&Error> = errors
        .iter()
        .filter(|e| matches!(e, Error::Io { .. }))
        .collect();
    assert_eq!(io.len(), 1, "one leader met the failure: {errors:?}");
    let failure = io[0].to_string();
    assert!(failure.contains("injected sync failure"), "{failure}");
    // Every other writer — a follower in the failed group, or a later leader — is refused
    // with `Poisoned`, whose source is that very failure, kind and all.
    for e in errors.iter().filter(|e| !matches!(e, Error::Io { .. })) {
        assert!(matches!(e, Error::Poisoned { .. }), "{e:?}");
        let cause = e.root_cause();
        assert!(matches!(cause, Error::Io { .. }), "{e:?}");
        assert_eq!(cause.to_string(), failure);
    }
    match db.put("after", "x") {
        Err(e @ Error::Poisoned { .. }) => assert_eq!(e.root_cause().to_string(), failure),
        other => panic!("a write after the failure: {other:?}"),
    }
}

#[test]
fn a_damaged_value_read_is_reported_not_read_again() {
    let fs = hook_fs();
    let db = Db::open(
        "/db",
        Options {
            value_separation_threshold: 0,
            ..options(&fs)
        },
    )
    .expect("open");
    let value = b"a value in the value log".to_vec();
    db.put("k", &value).expect("put");
    db.flush().expect("flush");
    assert_eq!(db.get("k").expect("get"), Some(value.clone()));
    // One lookup reads damaged bytes (a flaky disk, a bad cable): it reports them. Read
    // again, the table and the value would have been good, and the damage hidden.
    fs.hooks.damaged_lookup.store(1, Ordering::SeqCst);
    match db.get("k") {
        Err(e) => assert!(e.is_corruption(), "{e:?}"),
        Ok(v) => panic!("a damaged read was retried into {v:?}"),
    }
    assert_eq!(
        fs.hooks.damaged_lookup.load(Ordering::SeqCst),
        3,
        "read again"
    );
    assert_eq!(db.get("k").expect("get"), Some(value));
}

#[test]
fn a_pointer_into_a_segment_gc_deleted_meanwhile_is_read_again() {
    let fs = hook_fs();
    let db = Db::open(
        "/db",
        Options {
            value_separation_threshold: 0,
            // Only explicit GC runs.
            value_log_gc_ratio: 2.0,
            background_threads: false,
            ..options(&fs)
        },
    )
    .expect("open");
    let value = b"the value GC relocates".to_vec();
    db.put("k", &value).expect("put");
    for round in 0..3 {
        db.put("garbage", format!("round {round}")).expect("put");
    }
    db.compact_range(None, None).expect("compact");
    let before: Vec<u64> = db.stats().value_log.iter().map(|s| s.id).collect();

    // A reader captures the version, then waits in its table read while GC relocates the
    // value and deletes its segment; the pointer it then reads is stale.
    let (reached_tx, reached) = mpsc::channel();
    let (release, release_rx) = mpsc::channel();
    let got = std::thread::scope(|s| {
        let reader = s.spawn(|| {
            let me = std::thread::current().id();
            *fs.hooks.held_table_read.lock() = Some((me, reached_tx, release_rx));
            db.get("k")
        });
        reached
            .recv_timeout(Duration::from_secs(30))
            .expect("the reader reached its table read");
        let report = db.run_value_log_gc().expect("gc");
        assert!(report.segment.is_some(), "GC collected nothing: {report:?}");
        let after: Vec<u64> = db.stats().value_log.iter().map(|s| s.id).collect();
        assert!(
            before.iter().any(|s| !after.contains(s)),
            "no segment was deleted: {before:?} → {after:?}"
        );
        release.send(()).expect("release the reader");
        reader.join().expect("join")
    });
    assert_eq!(got.expect("the stale read, read again"), Some(value));
}

#[test]
fn a_panicking_sub_compaction_is_task_panicked() {
    let fs = hook_fs();
    let opts = Options {
        background_threads: true,
        max_subcompactions: 4,
        target_file_size_bytes: 8 << 10,
        l0_compaction_trigger: 100,
        l0_slowdown_trigger: 200,
        l0_stop_trigger: 300,
        ..options(&fs)
    };
    let db = Db::open("/db", opts).expect("open");
    let put_all = |round: u32| {
        for i in 0..3000u32 {
            db.put(format!("key{i:06}"), format!("value {round} {i:0>40}"))
                .expect("put");
        }
    };
    put_all(0);
    db.compact_range(None, None).expect("compact");
    let deepest_files = db
        .stats()
        .levels
        .iter()
        .rev()
        .map(|l| l.files)
        .find(|&n| n > 0)
        .unwrap_or(0);
    assert!(
        deepest_files >= 2,
        "{deepest_files} files: nothing to split"
    );
    put_all(1);
    fs.hooks
        .panic_in_sub_compactions
        .store(true, Ordering::SeqCst);
    match db.compact_range(None, None) {
        Err(Error::TaskPanicked { task, message }) => {
            assert_eq!(task, "a sub-compaction");
            assert!(message.contains("injected panic"), "{message}");
        }
        other => panic!("a compaction whose sub-compaction panicked: {other:?}"),
    }
    fs.hooks
        .panic_in_sub_compactions
        .store(false, Ordering::SeqCst);
    // The failed compaction poisons the database, with the panic as the cause.
    match db.put("after", "x") {
        Err(e @ Error::Poisoned { .. }) => {
            assert!(
                matches!(e.root_cause(), Error::TaskPanicked { .. }),
                "{e:?}"
            )
        }
        other => panic!("a write after the panic: {other:?}"),
    }
}
