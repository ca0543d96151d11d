//! A database of 100,000 live tables — past the kernel's mapping limit (`vm.max_map_count`,
//! 65,530 by default) — opens, reads and compacts with `max_open_files` (issue 27, item 3),
//! under mmap, pread and direct reads, with the descriptors and mappings it holds bounded;
//! without the bound, mmap refuses the open with an error naming the option.
//!
//! The fixture is written straight through the table builder and the manifest writer (a
//! database reaching 100k tables through flushes and compactions would take minutes): table
//! `i` holds keys `i·K .. i·K + K − 1`, all at level 1, so the tree is valid as written. A file system that skips `sync` writes it (durability is not what is tested).

use augur::fs::{FileLock, FileSystem, RandomAccessFile, ReadMode, StdFs, WritableFile};
use augur::key::ValueKind;
use augur::sst::{Builder, BuilderOptions};
use augur::version::{CompactionStyle, FileMeta, VersionEdit, VersionSet};
use augur::wal::{LogKind, LogWriter};
use augur::{Db, Error, Options};
use std::path::Path;
use std::sync::Arc;

const TABLES: u64 = 100_000;
const KEYS_PER_TABLE: u64 = 2;
/// The level the fixture's tables are at (a full compaction merges them into the next).
const LEVEL: usize = 1;

fn key(i: u64) -> Vec<u8> {
    format!("k{i:010}").into_bytes()
}

fn value(i: u64) -> Vec<u8> {
    format!("v{i}").into_bytes()
}

/// `StdFs` whose syncs only flush: writing the fixture's 100k files fast.
struct NoSyncFs;

struct NoSyncFile(Box<dyn WritableFile>);

impl WritableFile for NoSyncFile {
    fn append(&mut self, data: &[u8]) -> augur::Result<()> {
        self.0.append(data)
    }
    fn flush(&mut self) -> augur::Result<()> {
        self.0.flush()
    }
    fn sync(&mut self) -> augur::Result<()> {
        self.0.flush()
    }
    fn len(&self) -> u64 {
        self.0.len()
    }
}

impl FileSystem for NoSyncFs {
    fn create_dir_all(&self, dir: &Path) -> augur::Result<()> {
        StdFs.create_dir_all(dir)
    }
    fn create(&self, path: &Path) -> augur::Result<Box<dyn WritableFile>> {
        Ok(Box::new(NoSyncFile(StdFs.create(path)?)))
    }
    fn open_append(&self, path: &Path) -> augur::Result<Box<dyn WritableFile>> {
        Ok(Box::new(NoSyncFile(StdFs.open_append(path)?)))
    }
    fn open(&self, path: &Path, mode: ReadMode) -> augur::Result<Arc<dyn RandomAccessFile>> {
        StdFs.open(path, mode)
    }
    fn read_all(&self, path: &Path) -> augur::Result<Vec<u8>> {
        StdFs.read_all(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> augur::Result<()> {
        StdFs.rename(from, to)
    }
    fn remove(&self, path: &Path) -> augur::Result<()> {
        StdFs.remove(path)
    }
    fn list(&self, dir: &Path) -> augur::Result<Vec<String>> {
        StdFs.list(dir)
    }
    fn exists(&self, path: &Path) -> bool {
        StdFs.exists(path)
    }
    fn size(&self, path: &Path) -> augur::Result<u64> {
        StdFs.size(path)
    }
    fn sync_dir(&self, _dir: &Path) -> augur::Result<()> {
        Ok(())
    }
    fn sync_file(&self, _path: &Path) -> augur::Result<()> {
        Ok(())
    }
    fn lock(&self, path: &Path) -> augur::Result<Box<dyn FileLock>> {
        StdFs.lock(path)
    }
}

/// Writes a leveled database of `TABLES` tables at the last level into `dir`.
fn write_fixture(dir: &Path) {
    let fs = NoSyncFs;
    fs.create_dir_all(dir).unwrap();
    VersionSet::create(&fs, dir, CompactionStyle::Leveled).unwrap();
    let first_file = 2;
    let opts = BuilderOptions {
        model: None,
        ..BuilderOptions::default()
    };
    let mut added = Vec::with_capacity(TABLES as usize);
    for t in 0..TABLES {
        let id = first_file + t;
        let path = augur::filename::table_path(dir, id);
        let mut b = Builder::new(fs.create(&path).unwrap(), path, opts);
        for k in t * KEYS_PER_TABLE..(t + 1) * KEYS_PER_TABLE {
            b.add(&key(k), 1, ValueKind::Value, &value(k)).unwrap();
        }
        let s = b.finish().unwrap();
        added.push((
            LEVEL,
            FileMeta {
                file_id: id,
                file_size: s.file_size,
                entries: s.entries,
                smallest: s.smallest,
                largest: s.largest,
                value_segments: Some(s.value_segments),
                expiry: s.expiry,
            },
        ));
    }
    // MANIFEST-000001 (CURRENT names it): the creation edit, then every table.
    let create = VersionEdit {
        log_number: Some(0),
        next_file_number: Some(first_file + TABLES),
        last_seqno: Some(1),
        ..VersionEdit::default()
    };
    let files = VersionEdit {
        added,
        ..VersionEdit::default()
    };
    let mut w = LogWriter::create(
        &fs,
        &augur::filename::manifest_path(dir, 1),
        LogKind::Manifest,
    )
    .unwrap();
    w.add_record(&create.encode()).unwrap();
    w.add_record(&files.encode()).unwrap();
    w.sync().unwrap();
}

fn options(mode: ReadMode, max_open_files: Option<usize>) -> Options {
    Options {
        read_mode: mode,
        max_open_files,
        cache_bytes: 8 << 20,
        create_if_missing: false,
        // The tables sit in L1 and are small: static level sizes leave them there (dynamic
        // ones would start draining L1 to the last level at the open).
        dynamic_level_bytes: false,
        ..Options::default()
    }
}

/// Descriptors this process holds now.
fn open_descriptors() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count())
}

/// Reads a spread of keys (and an absent one per table gap) and checks them.
fn check_reads(db: &Db) {
    let n = TABLES * KEYS_PER_TABLE;
    for k in (0..n).step_by(997) {
        assert_eq!(db.get(key(k)).unwrap(), Some(value(k)), "key {k}");
    }
    assert_eq!(db.get(b"k9999999999x").unwrap(), None);
    let tail: Vec<_> = db.range(key(n - 5)..).map(|r| r.unwrap()).collect();
    let expected: Vec<_> = (n - 5..n).map(|k| (key(k), value(k))).collect();
    assert_eq!(tail, expected);
}

#[test]
fn a_database_of_100k_tables_opens_reads_and_compacts_with_max_open_files() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    write_fixture(&dir);

    // Without a bound, mmap would need a mapping per table: the open is refused, naming
    // the option, and writes nothing.
    match Db::open(&dir, options(ReadMode::Mmap, None)) {
        Err(Error::ResourceLimit(msg)) => assert!(msg.contains("max_open_files"), "{msg}"),
        Err(e) => panic!("unexpected error {e}"),
        Ok(_) => {
            // A machine with a raised vm.max_map_count may open it: nothing to refuse.
            let limit = std::fs::read_to_string("/proc/sys/vm/max_map_count").unwrap_or_default();
            assert!(
                limit.trim().parse::<u64>().unwrap_or(0) > TABLES,
                "opened past {limit}"
            );
        }
    }

    const BOUND: usize = 256;
    let before = open_descriptors();
    for mode in [ReadMode::Mmap, ReadMode::Pread, ReadMode::Direct] {
        let db = Db::open(&dir, options(mode, Some(BOUND))).unwrap();
        let stats = db.stats();
        assert_eq!(stats.levels[LEVEL].files, TABLES as usize, "{mode:?}");
        // Every table's filter, fence index and bounds stay in memory (no reload on reopen):
        // what that costs per table, small enough for millions of tables.
        let pinned_per_table = stats.pinned_bytes() / TABLES;
        eprintln!("{mode:?}: pinned {} bytes per table", pinned_per_table);
        assert!(
            pinned_per_table < 2048,
            "{mode:?}: {pinned_per_table} bytes per table"
        );
        check_reads(&db);
        let files = db.stats().reads.open_files.expect("bounded");
        assert!(files.open as usize <= BOUND, "{mode:?}: {files:?}");
        assert!(files.mapped as usize <= BOUND, "{mode:?}: {files:?}");
        assert!(
            files.opens > files.open,
            "{mode:?}: files were reopened: {files:?}"
        );
        // WALs, the manifest, the value log and the LRU's descriptors, nothing per table.
        let held = open_descriptors().saturating_sub(before);
        assert!(held <= BOUND + 32, "{mode:?}: {held} descriptors held");
        db.close().unwrap();
    }

    // Compaction merges the 100k inputs into a few tables; the data survives.
    let db = Db::open(&dir, options(ReadMode::Pread, Some(BOUND))).unwrap();
    db.compact_range(None, None).unwrap();
    let files: usize = db.stats().levels.iter().map(|l| l.files).sum();
    assert!(files < 100, "{files} tables after a full compaction");
    check_reads(&db);
    db.close().unwrap();
    drop(db);
    let db = Db::open(&dir, options(ReadMode::Mmap, None)).unwrap();
    check_reads(&db);
}
