//! Group commit: concurrent writers asking for `sync` share WAL writes and fsyncs.
//!
//! A wrapper file system makes every sync slow and counts them; while one leader syncs, the
//! other writers queue up and are committed together by the next leader.

#[path = "common/forward_fs.rs"]
#[macro_use]
mod forward_fs;

use augur::fs::{FileSystem, MemFs, RandomAccessFile, ReadMode, WritableFile};
use augur::{Db, Options, Result, WriteBatch, WriteOptions};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

struct SlowSyncFs {
    inner: MemFs,
    wal_syncs: Arc<AtomicU64>,
}

struct SlowSyncFile {
    inner: Box<dyn WritableFile>,
    is_wal: bool,
    wal_syncs: Arc<AtomicU64>,
}

impl WritableFile for SlowSyncFile {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.inner.append(data)
    }
    fn flush(&mut self) -> Result<()> {
        self.inner.flush()
    }
    fn sync(&mut self) -> Result<()> {
        if self.is_wal {
            self.wal_syncs.fetch_add(1, Ordering::SeqCst);
        }
        std::thread::sleep(Duration::from_millis(2));
        self.inner.sync()
    }
    fn len(&self) -> u64 {
        self.inner.len()
    }
}

impl FileSystem for SlowSyncFs {
    forward_file_system!(inner);
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        Ok(Box::new(SlowSyncFile {
            inner: self.inner.create(path)?,
            is_wal: path.extension().is_some_and(|e| e == "wal"),
            wal_syncs: self.wal_syncs.clone(),
        }))
    }
    fn open_append(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        Ok(Box::new(SlowSyncFile {
            inner: self.inner.open_append(path)?,
            is_wal: path.extension().is_some_and(|e| e == "wal"),
            wal_syncs: self.wal_syncs.clone(),
        }))
    }
    fn open(&self, path: &Path, mode: ReadMode) -> Result<Arc<dyn RandomAccessFile>> {
        self.inner.open(path, mode)
    }
}

#[test]
fn concurrent_synced_writers_share_fsyncs() {
    const THREADS: u64 = 8;
    const WRITES: u64 = 40;
    let wal_syncs = Arc::new(AtomicU64::new(0));
    let fs = SlowSyncFs {
        inner: MemFs::new(),
        wal_syncs: wal_syncs.clone(),
    };
    let opts = Options {
        fs: Arc::new(fs),
        ..Options::default()
    };
    let db = Db::open("/db", opts).unwrap();
    let before = wal_syncs.load(Ordering::SeqCst);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let db = &db;
            s.spawn(move || {
                for i in 0..WRITES {
                    let mut b = WriteBatch::new();
                    b.put(format!("t{t}-k{i}"), format!("v{i}"));
                    db.write_opt(b, WriteOptions { sync: true }).unwrap();
                }
            });
        }
    });
    let syncs = wal_syncs.load(Ordering::SeqCst) - before;
    let writes = THREADS * WRITES;
    // Every write was synced (it returned), yet far fewer fsyncs than writes happened.
    assert!(syncs >= 1);
    assert!(
        syncs * 2 <= writes,
        "{syncs} WAL syncs for {writes} synced writes: no group commit"
    );
    for t in 0..THREADS {
        for i in 0..WRITES {
            assert_eq!(
                db.get(format!("t{t}-k{i}")).unwrap().unwrap(),
                format!("v{i}").as_bytes()
            );
        }
    }
}
