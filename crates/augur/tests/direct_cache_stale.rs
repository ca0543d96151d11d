//! A file that compaction or value-log GC deleted is never served from the page cache of
//! `ReadMode::Direct` (issue 27).
//!
//! The cache keys pages by a number drawn each time a file is opened, never by the file's
//! name or number, and a dropped `CachedFile` removes its pages. These tests check the
//! consequences through the public API on the real file system: tables and value-log
//! segments read into the cache, then replaced by compaction and GC while the keys get new
//! values (the cache is large enough to keep every old page), must answer every read with
//! the new values, also across reopens and over a database created again in the same
//! directory (its file names start over); and the pages of deleted files leave the cache
//! as soon as the last reader of the old version lets go. Unit-level: a `CachedFile` over a
//! new file at the path of an old one, through the same cache, reads the new bytes.

use augur::cache::{CachedFile, PageCache, PAGE_BYTES};
use augur::fs::{FileSystem, MemFs, RandomAccessFile, ReadMode, StdFs};
use augur::{Db, Options};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

const KEYS: u64 = 3000;

fn key(i: u64) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

/// Version `round` of key `i`'s value: unique to both, 30 to 300 bytes.
fn value(i: u64, round: u64) -> Vec<u8> {
    let len = 30 + ((i * 7919 + round * 104_729) % 271) as usize;
    let mut v = format!("r{round}.k{i}|").into_bytes();
    v.resize(len, b'a' + ((i + round) % 26) as u8);
    v
}

fn options(threshold: usize) -> Options {
    Options {
        read_mode: ReadMode::Direct,
        // Room for every page of every file the tests write: nothing is evicted, so a stale
        // page could only leave the cache by being removed.
        cache_bytes: 256 << 20,
        background_threads: false,
        memtable_size_bytes: 128 << 10,
        target_file_size_bytes: 64 << 10,
        value_separation_threshold: threshold,
        value_log_segment_bytes: 64 << 10,
        value_log_gc_ratio: 1.0,
        block_records: 16,
        ..Options::default()
    }
}

fn files_with(dir: &Path, suffix: &str) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .expect("read_dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(suffix))
        .collect()
}

/// Writes version `round` of every key and flushes.
fn write_round(db: &Db, round: u64) {
    for i in 0..KEYS {
        db.put(key(i), value(i, round)).expect("put");
    }
    db.flush().expect("flush");
}

/// Every key reads back version `round`, by get and by scan.
fn check_round(db: &Db, round: u64, what: &str) {
    for i in 0..KEYS {
        let got = db.get(key(i)).expect("get");
        assert!(
            got.as_deref() == Some(&value(i, round)[..]),
            "{what}: key {i} reads {:?}, want round {round}",
            got.map(|v| String::from_utf8_lossy(&v[..v.len().min(12)]).into_owned())
        );
    }
    let all: BTreeMap<Vec<u8>, Vec<u8>> = db.iter().collect::<augur::Result<_>>().expect("scan");
    assert_eq!(all.len() as u64, KEYS, "{what}");
    for (i, (k, v)) in all.into_iter().enumerate() {
        assert!(
            k == key(i as u64) && v == value(i as u64, round),
            "{what}: scan item {i} is not round {round}"
        );
    }
}

fn cache(db: &Db) -> augur::CacheStats {
    db.stats().reads.cache.expect("direct mode has a cache")
}

/// Rounds of: overwrite every key, read everything (its pages cached), compact everything
/// (every table replaced), GC the value log (every sealed segment rewritten), read
/// everything again; with a reopen between some rounds.
fn replace_everything(threshold: usize) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("db");
    let mut db = Db::open(&dir, options(threshold)).expect("open");
    for round in 1..=5u64 {
        let what = format!("threshold {threshold}, round {round}");
        write_round(&db, round);
        check_round(&db, round, &what);
        let tables = files_with(&dir, ".sst");
        let segments = files_with(&dir, ".vlog");
        let before = cache(&db);
        assert!(before.pages > 0, "{what}: nothing cached: {before:?}");
        db.compact_range(None, None).expect("compact");
        if threshold == 0 {
            // Everything of earlier rounds is garbage now.
            db.run_value_log_gc().expect("gc");
        }
        let after = files_with(&dir, ".sst");
        // Compaction replaces tables (their cached pages must never be served again) but
        // need not replace all: a table no input overlaps stays where it is (one that a
        // background compaction of this round wrote at the last level, or that round 1's
        // disjoint flushes moved down whole).
        assert!(
            !tables.is_subset(&after),
            "{what}: compaction replaced no table: {tables:?} -> {after:?}"
        );
        if threshold == 0 && round > 1 {
            let now = files_with(&dir, ".vlog");
            let kept: Vec<_> = segments.intersection(&now).collect();
            assert!(
                kept.len() < segments.len(),
                "{what}: GC deleted no segment: {segments:?} -> {now:?}"
            );
        }
        check_round(&db, round, &format!("{what}, after compaction"));
        if round % 2 == 0 {
            drop(db);
            db = Db::open(&dir, options(threshold)).expect("reopen");
            check_round(&db, round, &format!("{what}, reopened"));
        }
    }
    drop(db);
    // The same directory emptied and created again: file names start over (000005.sst,
    // ...), in the same process.
    std::fs::remove_dir_all(&dir).expect("remove");
    let db = Db::open(&dir, options(threshold)).expect("create again");
    write_round(&db, 100);
    check_round(&db, 100, "database created again");
    db.compact_range(None, None).expect("compact");
    write_round(&db, 101);
    check_round(&db, 101, "database created again, overwritten");
}

#[test]
fn tables_replaced_by_compaction_are_never_read_from_the_cache() {
    replace_everything(usize::MAX);
}

#[test]
fn segments_rewritten_by_gc_are_never_read_from_the_cache() {
    replace_everything(0);
}

/// The pages of tables that compaction replaced leave the cache when the last reader of
/// the old version (an iterator here) drops it; until then that reader reads the old
/// values.
#[test]
fn pages_of_deleted_tables_leave_the_cache_with_their_last_reader() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("db");
    let db = Db::open(&dir, options(usize::MAX)).expect("open");
    write_round(&db, 1);
    write_round(&db, 2);
    check_round(&db, 2, "before");
    let cached = cache(&db);
    // Holds the current version (its tables) across the compaction.
    let mut old = db.iter();
    let first = old.next().expect("an item").expect("read");
    assert_eq!(first, (key(0), value(0, 2)));
    write_round(&db, 3);
    db.compact_range(None, None).expect("compact");
    let held = cache(&db);
    assert!(
        held.pages >= cached.pages,
        "pages of live (held) tables were removed: {cached:?} -> {held:?}"
    );
    // The held iterator still reads the old version, through the cache.
    for i in 1..KEYS {
        let (k, v) = old.next().expect("an item").expect("read");
        assert!(k == key(i) && v == value(i, 2), "old iterator at {i}");
    }
    assert!(old.next().is_none());
    let misses = cache(&db).misses;
    drop(old);
    let released = cache(&db);
    // Every page cached before the compaction was a page of a table it deleted: all of
    // them are gone now. What is left was read since (new tables, at most one page per
    // miss since the compaction began).
    assert!(
        released.pages <= released.misses - cached.misses,
        "pages of deleted tables stayed in the cache: before {cached:?}, held {held:?}, \
         released {released:?}"
    );
    assert!(
        released.pages < held.pages && released.pages + cached.pages <= held.pages + 1,
        "before {cached:?}, held {held:?}, released {released:?}"
    );
    assert_eq!(released.misses, misses, "dropping reads nothing");
    check_round(&db, 3, "after");
}

fn write(fs: &dyn FileSystem, path: &Path, data: &[u8]) {
    let mut w = fs.create(path).expect("create");
    w.append(data).expect("append");
    w.sync().expect("sync");
}

fn read_all(f: &dyn RandomAccessFile) -> Vec<u8> {
    let mut buf = vec![0u8; f.len().expect("len") as usize];
    f.read_exact_at(0, &mut buf).expect("read");
    buf
}

/// `CachedFile`s of a file and of a new file written at its path, through one cache: each
/// reads its own bytes, whether the old one is still open or dropped (its pages removed).
fn same_path_new_file(fs: &dyn FileSystem, dir: &Path) {
    fs.create_dir_all(dir).expect("mkdir");
    let path = dir.join("000007.sst");
    let cache = PageCache::new(16 << 20);
    let old_bytes: Vec<u8> = (0..5 * PAGE_BYTES + 123).map(|i| (i % 251) as u8).collect();
    let new_bytes: Vec<u8> = (0..3 * PAGE_BYTES + 7)
        .map(|i| (i % 239) as u8 ^ 0x5a)
        .collect();
    write(fs, &path, &old_bytes);
    let old = CachedFile::new(
        fs.open(&path, ReadMode::Direct).expect("open"),
        cache.clone(),
        &path,
    )
    .expect("cached");
    assert_eq!(read_all(&old), old_bytes);
    assert_eq!(read_all(&old), old_bytes);
    let s = cache.stats();
    assert_eq!(s.pages, 6, "{s:?}");
    assert!(s.hits >= 6, "the second read hit: {s:?}");

    // A new file at the same path (the old one removed first, as the engine does), read
    // while the old one is still open.
    fs.remove(&path).expect("remove");
    write(fs, &path, &new_bytes);
    let new = CachedFile::new(
        fs.open(&path, ReadMode::Direct).expect("open"),
        cache.clone(),
        &path,
    )
    .expect("cached");
    let before = cache.stats();
    assert_eq!(
        read_all(&new),
        new_bytes,
        "the new file read the old one's pages"
    );
    let after = cache.stats();
    assert_eq!(
        after.hits, before.hits,
        "the new file hit a cached page: {after:?}"
    );
    assert_eq!(after.misses, before.misses + 4);
    for offset in [0, PAGE_BYTES as u64 - 1, 2 * PAGE_BYTES as u64 + 5] {
        let mut a = [0u8; 3];
        new.read_exact_at(offset, &mut a).expect("read");
        assert_eq!(a[..], new_bytes[offset as usize..offset as usize + 3]);
    }
    // The old one still reads its own (open) file, from its own pages.
    assert_eq!(read_all(&old), old_bytes);
    assert_eq!(cache.stats().pages, 10);
    drop(old);
    let s = cache.stats();
    assert_eq!(s.pages, 4, "the old file's pages were not removed: {s:?}");
    assert_eq!(read_all(&new), new_bytes);

    // Opened again (a new number in the cache): reads the file, none of the old handle's
    // pages.
    drop(new);
    assert_eq!(cache.stats().pages, 0);
    let again = CachedFile::new(
        fs.open(&path, ReadMode::Direct).expect("open"),
        cache.clone(),
        &path,
    )
    .expect("cached");
    assert_eq!(read_all(&again), new_bytes);
    assert!(cache.stats().used_bytes <= cache.stats().capacity_bytes);
}

#[test]
fn cached_file_over_a_new_file_at_the_same_path_reads_the_new_bytes() {
    let tmp = tempfile::tempdir().expect("tempdir");
    same_path_new_file(&StdFs, tmp.path());
    let fs: Arc<MemFs> = Arc::new(MemFs::new());
    same_path_new_file(fs.as_ref(), Path::new("/db"));
}

/// File numbers are drawn per cache, so the first file of two databases' caches has the
/// same number: a thread reading both without filling (a compaction of each, a `verify` of
/// each) must still read each file's own bytes, not the run it read ahead from the other.
#[test]
fn reads_without_fill_of_two_caches_files_with_one_number_read_their_own_bytes() {
    let fs = MemFs::new();
    let dir = Path::new("/two");
    fs.create_dir_all(dir).expect("mkdir");
    let open = |name: &str, fill: u8| {
        let path = dir.join(name);
        write(&fs, &path, &vec![fill; 3 * PAGE_BYTES]);
        let file = fs.open(&path, ReadMode::Direct).expect("open");
        CachedFile::new(file, PageCache::new(16 << 20), &path).expect("cached")
    };
    let (a, b) = (open("a.sst", 0xaa), open("b.sst", 0xbb));
    for _ in 0..2 {
        for (f, fill) in [(&a, 0xaa), (&b, 0xbb)] {
            let read = augur::cache::without_cache_fill(|| read_all(f));
            assert!(read.iter().all(|&x| x == fill), "read another cache's run");
        }
    }
}
