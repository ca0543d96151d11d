//! `ReadMode::Direct` on the real file system (issue 27): `O_DIRECT` reads must be aligned
//! to 4 KiB in offset, length and buffer address, so every read the engine makes is widened
//! to whole pages (`fs::direct`) or served page by page from the page cache
//! (`cache::CachedFile`). These tests aim at the edges of that widening, on files in a
//! temporary directory (ext4 here, which supports `O_DIRECT`; a file system that refuses it
//! fails the open with `InvalidArgument`, and the tests then fail saying so):
//!
//! - files of lengths around page multiples (1, 4095, 4096, 4097, 8191, 8192, 8193, 10000 …)
//!   read at every interesting offset: 0, the last byte, ranges ending at the end of the
//!   file, ranges crossing one or several page boundaries, and past the end (an error);
//! - the same through a `CachedFile` with caches of 0, 1, 3 pages and 1 MiB, in orders that
//!   leave cached pages between missing ones;
//! - SSTables read with `augur::sst::Table` under `Direct` and `Mmap`: inline values of
//!   4095, 4096, 4097, 10000 bytes (crossing page boundaries), value pointers, tombstones,
//!   several block sizes, with and without a learned index, and a table of one entry (a file
//!   shorter than a page);
//! - whole databases with such values inline and in the value log, read under `Direct` with
//!   several cache budgets against a `BTreeMap` model and against the same database read
//!   under `Mmap`; and a database whose only table and only value-log segment hold one small
//!   entry each (files shorter than a page), reopened under `Direct`.

use augur::cache::{CachedFile, PageCache, PAGE_BYTES};
use augur::fs::{FileSystem, RandomAccessFile, ReadMode, StdFs};
use augur::index::{IndexConfig, IndexKind};
use augur::key::{ValueKind, MAX_SEQNO};
use augur::sst::{Builder, BuilderOptions, Entry, Table, TableCursor};
use augur::{Compression, Db, Error, Options};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

const PAGE: u64 = PAGE_BYTES as u64;

/// File lengths around page multiples.
const LENGTHS: [u64; 12] = [
    1,
    100,
    4095,
    4096,
    4097,
    8191,
    8192,
    8193,
    10_000,
    3 * 4096 + 17,
    16 * 4096,
    70 * 4096 + 1,
];

/// Distinct bytes at every offset (a wrong offset never reads the right byte).
fn content(len: u64) -> Vec<u8> {
    (0..len)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8 ^ (i >> 12) as u8)
        .collect()
}

fn write_file(path: &Path, data: &[u8]) {
    let mut w = StdFs.create(path).expect("create");
    w.append(data).expect("append");
    w.sync().expect("sync");
}

fn open_direct(path: &Path) -> Arc<dyn RandomAccessFile> {
    StdFs.open(path, ReadMode::Direct).unwrap_or_else(|e| {
        panic!(
            "opening {} with O_DIRECT failed ({e}): the temporary directory's file system must \
             support direct I/O",
            path.display()
        )
    })
}

/// The ranges `(offset, len)` worth reading in a file of `len` bytes: whole file, first and
/// last byte, each page boundary from both sides, ranges ending at the end of the file,
/// ranges crossing one and several boundaries, reads of exactly one page at and off
/// alignment.
fn edge_ranges(len: u64) -> Vec<(u64, u64)> {
    let mut out = vec![(0, len), (0, 1), (len - 1, 1), (0, len.min(PAGE))];
    for b in (PAGE..len).step_by(PAGE as usize) {
        out.extend([
            (b - 1, 1),
            (b, 1),
            (b - 1, 2),
            (b, len - b),
            (b, (len - b).min(PAGE)),
        ]);
        if b >= 10 {
            out.push((b - 10, (len - (b - 10)).min(20)));
        }
        if b + 2 * PAGE < len {
            out.push((b - 1, 2 * PAGE + 2));
        }
    }
    for tail in [1, 2, 100, PAGE - 1, PAGE, PAGE + 1, 2 * PAGE + 3] {
        if tail <= len {
            out.push((len - tail, tail));
        }
    }
    if len > 3 {
        out.push((1, len - 2));
        out.push((len / 2, len - len / 2));
    }
    out
}

fn read(f: &dyn RandomAccessFile, offset: u64, len: u64) -> augur::Result<Vec<u8>> {
    let mut buf = vec![0u8; len as usize];
    f.read_exact_at(offset, &mut buf)?;
    Ok(buf)
}

fn assert_eof(r: augur::Result<Vec<u8>>, what: &str) {
    match r {
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::UnexpectedEof => {}
        other => panic!(
            "{what}: want UnexpectedEof, got {:?}",
            other.map(|v| v.len())
        ),
    }
}

/// Reads past the end of a file of `len` bytes fail with `UnexpectedEof`.
fn check_past_end(f: &dyn RandomAccessFile, len: u64, what: &str) {
    assert_eof(read(f, len, 1), &format!("{what}: read at the end"));
    assert_eof(read(f, len - 1, 2), &format!("{what}: read across the end"));
    assert_eof(
        read(f, 0, len + 1),
        &format!("{what}: read of the file and one more byte"),
    );
    assert_eof(
        read(f, len + PAGE, 1),
        &format!("{what}: read a page past the end"),
    );
}

#[test]
fn direct_file_reads_every_edge_range() {
    let tmp = tempfile::tempdir().expect("tempdir");
    for len in LENGTHS {
        let path = tmp.path().join(format!("f{len}"));
        let data = content(len);
        write_file(&path, &data);
        let f = open_direct(&path);
        assert_eq!(f.len().expect("len"), len);
        assert!(f.as_slice().is_none(), "a direct file is not mapped");
        for (offset, n) in edge_ranges(len) {
            let got = read(&*f, offset, n)
                .unwrap_or_else(|e| panic!("len {len}: read {n} at {offset}: {e}"));
            assert!(
                got == data[offset as usize..(offset + n) as usize],
                "len {len}: read {n} at {offset} returned other bytes"
            );
        }
        // An empty read anywhere inside (or at the end) succeeds.
        f.read_exact_at(len, &mut [])
            .expect("empty read at the end");
        check_past_end(&*f, len, &format!("direct file of {len} bytes"));
    }
}

/// A read of an empty file: nothing to read, every byte is past the end.
#[test]
fn direct_file_of_zero_bytes() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let path = tmp.path().join("empty");
    write_file(&path, b"");
    let f = open_direct(&path);
    assert_eq!(f.len().expect("len"), 0);
    f.read_exact_at(0, &mut []).expect("empty read");
    assert_eof(read(&*f, 0, 1), "one byte of an empty file");
    let cached = CachedFile::new(f, PageCache::new(1 << 20), &path).expect("cached");
    cached.read_exact_at(0, &mut []).expect("empty read");
    assert_eof(read(&cached, 0, 1), "one byte of an empty cached file");
}

#[test]
fn cached_direct_file_reads_every_edge_range_with_any_cache() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let per_page = PAGE + 96;
    for (c, capacity) in [0, per_page, 3 * per_page, 1 << 20].into_iter().enumerate() {
        for len in LENGTHS {
            let path = tmp.path().join(format!("c{c}-{len}"));
            let data = content(len);
            write_file(&path, &data);
            let cache = PageCache::new(capacity);
            let f = CachedFile::new(open_direct(&path), cache.clone(), &path).expect("cached");
            let what = |offset, n| format!("cache {capacity} B, len {len}: read {n} at {offset}");
            let check = |offset: u64, n: u64| {
                let got =
                    read(&f, offset, n).unwrap_or_else(|e| panic!("{}: {e}", what(offset, n)));
                assert!(
                    got == data[offset as usize..(offset + n) as usize],
                    "{}: other bytes",
                    what(offset, n)
                );
                let s = cache.stats();
                assert!(
                    s.used_bytes <= s.capacity_bytes,
                    "{}: {s:?}",
                    what(offset, n)
                );
            };
            // Twice: the second pass finds what the first left in the cache.
            for _ in 0..2 {
                for (offset, n) in edge_ranges(len) {
                    check(offset, n);
                }
            }
            // Cached pages between missing ones: read every other page, then everything
            // (runs of missing pages are read with one device read each).
            for p in (0..len.div_ceil(PAGE)).step_by(2) {
                check(p * PAGE, (len - p * PAGE).min(1));
            }
            check(0, len);
            // Random ranges.
            let mut rng = StdRng::seed_from_u64(len ^ capacity);
            for _ in 0..200 {
                let offset = rng.gen_range(0..len);
                let n = rng.gen_range(1..=(len - offset).min(3 * PAGE));
                check(offset, n);
            }
            check_past_end(&f, len, &format!("cached file of {len} bytes"));
            // With room for the whole file, a second read of it reads nothing more. (Room:
            // `quick_cache` admits no entry heavier than its hot share, 97% of the capacity,
            // so a budget of exactly one page holds none.)
            if len.div_ceil(PAGE) * per_page <= capacity * 97 / 100 {
                let before = cache.stats();
                check(0, len);
                let after = cache.stats();
                assert_eq!(
                    after.device_reads, before.device_reads,
                    "len {len}: a cached file was read from the device again"
                );
            }
            if capacity == 0 {
                let s = cache.stats();
                assert_eq!((s.hits, s.pages, s.used_bytes), (0, 0, 0), "{s:?}");
            }
        }
    }
}

/// A value of `len` bytes unique to `tag`.
fn value(tag: u64, len: usize) -> Vec<u8> {
    let mut v = format!("<{tag}:{len}>").into_bytes();
    let mut x = tag.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    while v.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.push(b'a' + (x % 26) as u8);
    }
    v.truncate(len);
    v
}

/// Value sizes around page multiples, with small ones between them so that the big ones
/// start at many offsets within a page.
fn edge_sizes() -> Vec<usize> {
    let mut sizes = Vec::new();
    for (i, big) in [
        4095, 4096, 4097, 10_000, 1, 8191, 8192, 8193, 0, 4000, 12_289,
    ]
    .into_iter()
    .enumerate()
    {
        sizes.push(big);
        sizes.push(1 + (i * 37) % 300);
        sizes.push(4096 - 1 - (i * 101) % 700);
    }
    sizes
}

fn table_entries(with_pointers: bool) -> Vec<Entry> {
    let mut out = Vec::new();
    for (i, &len) in edge_sizes().iter().enumerate() {
        let user_key = format!("key{i:04}").into_bytes();
        let (kind, v) = match i % 7 {
            5 => (ValueKind::Delete, Vec::new()),
            3 if with_pointers => {
                // A 20-byte encoded pointer (never followed: the table only stores it).
                let mut p = value(i as u64, 20);
                p[0] = 1;
                (ValueKind::Pointer, p)
            }
            _ => (ValueKind::Value, value(i as u64, len)),
        };
        out.push(Entry {
            user_key,
            seqno: 100 + i as u64,
            kind,
            value: v,
        });
    }
    out
}

fn write_table(path: &Path, entries: &[Entry], opts: BuilderOptions) {
    let file = StdFs.create(path).expect("create");
    let mut b = Builder::new(file, path.to_path_buf(), opts);
    for e in entries {
        b.add(&e.user_key, e.seqno, e.kind, &e.value).expect("add");
    }
    b.finish().expect("finish");
}

fn walk(t: &Arc<Table>, forward: bool) -> Vec<(Vec<u8>, u64, Vec<u8>)> {
    let mut c = TableCursor::new(t.clone(), forward);
    c.seek_to_first().expect("seek_to_first");
    let mut out = Vec::new();
    while c.valid() {
        out.push((c.key().to_vec(), c.trailer(), c.value().to_vec()));
        c.advance().expect("advance");
    }
    out
}

/// Checks that `direct` (opened under `Direct`) reads exactly what `mapped` does, and what
/// was written.
fn compare_tables(direct: &Arc<Table>, mapped: &Arc<Table>, entries: &[Entry], what: &str) {
    assert_eq!(direct.entries(), entries.len() as u64, "{what}");
    // Point lookups in two orders (the second finds the blocks verified: the direct table
    // then reads only the window's slots and the value's bytes).
    let mut order: Vec<usize> = (0..entries.len()).collect();
    for pass in 0..2 {
        for &i in &order {
            let e = &entries[i];
            let got = direct.get(&e.user_key, MAX_SEQNO).expect("get");
            let want = mapped.get(&e.user_key, MAX_SEQNO).expect("get");
            assert_eq!(got, want, "{what}: pass {pass} get of entry {i}");
            let got = got.unwrap_or_else(|| panic!("{what}: entry {i} missing"));
            assert_eq!(
                (got.kind, &got.value),
                (e.kind, &e.value),
                "{what}: entry {i} (value of {} bytes)",
                e.value.len()
            );
            // Absent keys just after each present one.
            let mut absent = e.user_key.clone();
            absent.push(0);
            assert_eq!(direct.get(&absent, MAX_SEQNO).expect("get"), None, "{what}");
        }
        order.reverse();
    }
    for i in 0..entries.len() as u64 {
        assert_eq!(
            direct.entry_at(i).expect("entry_at"),
            mapped.entry_at(i).expect("entry_at"),
            "{what}: entry_at({i})"
        );
    }
    for forward in [true, false] {
        assert_eq!(
            walk(direct, forward),
            walk(mapped, forward),
            "{what}: walk forward={forward}"
        );
    }
    direct.verify().expect("verify");
}

#[test]
fn tables_with_values_across_page_boundaries_read_alike_under_direct_and_mmap() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let plr = |error_bound| IndexConfig {
        kind: IndexKind::Plr,
        error_bound,
        fence_stride: 4,
        tuning: Default::default(),
    };
    let mut n = 0;
    for block_records in [1, 4, 64] {
        for model in [None, Some(plr(0)), Some(plr(4))] {
            for compression in [Compression::None, Compression::Lz4] {
                for with_pointers in [false, true] {
                    let entries = table_entries(with_pointers);
                    let path = tmp.path().join(format!("{n:03}.sst"));
                    n += 1;
                    let opts = BuilderOptions {
                        block_records,
                        model,
                        compression,
                        ..BuilderOptions::default()
                    };
                    write_table(&path, &entries, opts);
                    let what = format!(
                        "{}: block_records {block_records}, model {model:?}, {compression:?}",
                        path.display()
                    );
                    let direct =
                        Arc::new(Table::open(&StdFs, &path, 1, ReadMode::Direct).expect("open"));
                    let mapped =
                        Arc::new(Table::open(&StdFs, &path, 1, ReadMode::Mmap).expect("open"));
                    compare_tables(&direct, &mapped, &entries, &what);
                }
            }
        }
    }
}

#[test]
fn table_of_one_small_entry_shorter_than_a_page() {
    let tmp = tempfile::tempdir().expect("tempdir");
    for (i, (kind, v)) in [
        (ValueKind::Value, b"v".to_vec()),
        (ValueKind::Value, Vec::new()),
        (ValueKind::Delete, Vec::new()),
    ]
    .into_iter()
    .enumerate()
    {
        let path = tmp.path().join(format!("one{i}.sst"));
        let entries = vec![Entry {
            user_key: b"k".to_vec(),
            seqno: 1,
            kind,
            value: v,
        }];
        write_table(&path, &entries, BuilderOptions::default());
        let direct = Arc::new(Table::open(&StdFs, &path, 1, ReadMode::Direct).expect("open"));
        let mapped = Arc::new(Table::open(&StdFs, &path, 1, ReadMode::Mmap).expect("open"));
        assert!(
            direct.file_size() < PAGE,
            "the table has {} bytes",
            direct.file_size()
        );
        compare_tables(&direct, &mapped, &entries, &format!("one entry ({kind:?})"));
    }
}

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn db_options(threshold: usize, mode: ReadMode, cache_bytes: u64) -> Options {
    Options {
        background_threads: false,
        memtable_size_bytes: 64 << 10,
        target_file_size_bytes: 48 << 10,
        value_log_segment_bytes: 40 << 10,
        value_separation_threshold: threshold,
        value_log_gc_ratio: 1.0,
        block_records: 8,
        read_mode: mode,
        cache_bytes,
        ..Options::default()
    }
}

/// Everything the database holds, read with gets, both scan directions and ranges starting
/// at every tenth key; checked against `model`.
fn check_db(db: &Db, model: &Model, what: &str) {
    for (k, v) in model {
        let got = db
            .get(k)
            .unwrap_or_else(|e| panic!("{what}: get failed: {e}"));
        assert!(
            got.as_ref() == Some(v),
            "{what}: get {} returned {:?} bytes, want {}",
            String::from_utf8_lossy(k),
            got.map(|g| g.len()),
            v.len()
        );
    }
    let forward: Model = db
        .iter()
        .collect::<augur::Result<_>>()
        .unwrap_or_else(|e| panic!("{what}: scan failed: {e}"));
    assert!(&forward == model, "{what}: forward scan differs");
    let mut backward: Vec<(Vec<u8>, Vec<u8>)> = db
        .iter()
        .rev()
        .collect::<augur::Result<_>>()
        .unwrap_or_else(|e| panic!("{what}: reverse scan failed: {e}"));
    backward.reverse();
    let want: Vec<(Vec<u8>, Vec<u8>)> = model.clone().into_iter().collect();
    assert!(backward == want, "{what}: reverse scan differs");
    for start in model.keys().step_by(10) {
        let got: Vec<(Vec<u8>, Vec<u8>)> = db
            .range(start.clone()..)
            .take(3)
            .collect::<augur::Result<_>>()
            .unwrap_or_else(|e| panic!("{what}: range failed: {e}"));
        let want: Vec<(Vec<u8>, Vec<u8>)> = model
            .range(start.clone()..)
            .take(3)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        assert!(
            got == want,
            "{what}: range from {}",
            String::from_utf8_lossy(start)
        );
    }
    if let Some(c) = db.stats().reads.cache {
        assert!(c.used_bytes <= c.capacity_bytes, "{what}: {c:?}");
    }
}

#[test]
fn databases_with_values_across_page_boundaries_read_alike_under_direct() {
    // Inline values (no separation), every value in the value log, and a threshold between.
    for threshold in [usize::MAX, 0, 4096] {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("db");
        let mut model = Model::new();
        {
            let db =
                Db::open(&dir, db_options(threshold, ReadMode::Direct, 1 << 20)).expect("open");
            let sizes = edge_sizes();
            // Three rounds: the later ones overwrite some keys with other sizes, so tables
            // of several levels and several segments hold the values.
            for round in 0..3u64 {
                for (i, &len) in sizes.iter().enumerate() {
                    if round > 0 && i % (round as usize + 1) != 0 {
                        continue;
                    }
                    let k = format!("key{i:04}").into_bytes();
                    let len = sizes[(i + round as usize * 5) % sizes.len()].max(len / 2);
                    let v = value(round * 1000 + i as u64, len);
                    db.put(&k, &v).expect("put");
                    model.insert(k, v);
                }
                db.flush().expect("flush");
                if round == 1 {
                    db.compact_range(None, None).expect("compact");
                }
            }
            check_db(&db, &model, &format!("threshold {threshold}: as written"));
        }
        // Reopened: the sealed value-log segments are read with O_DIRECT too (the newest,
        // which a writing open keeps appending to, with pread).
        let mapped = Db::open(&dir, db_options(threshold, ReadMode::Mmap, 0)).expect("open");
        check_db(&mapped, &model, &format!("threshold {threshold}: mmap"));
        drop(mapped);
        for cache_bytes in [0, 16 << 10, 1 << 20, 64 << 20] {
            let what = format!("threshold {threshold}: direct, cache {cache_bytes} B");
            let db =
                Db::open(&dir, db_options(threshold, ReadMode::Direct, cache_bytes)).expect("open");
            // Twice: the second pass reads blocks checked by the first, a slot window and
            // a value at a time.
            check_db(&db, &model, &what);
            check_db(&db, &model, &what);
            let c = db.stats().reads.cache.expect("direct mode has a cache");
            assert!(c.device_reads > 0, "{what}: nothing read from the device");
            if cache_bytes >= 1 << 20 {
                assert!(c.hits > 0, "{what}: {c:?}");
            }
            db.verify().expect("verify");
        }
    }
}

#[test]
fn database_whose_files_are_shorter_than_a_page() {
    // One small entry inline (a table of one entry), then one in the value log (a segment of
    // one entry), each database reopened under Direct.
    for threshold in [usize::MAX, 0] {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("db");
        {
            let db =
                Db::open(&dir, db_options(threshold, ReadMode::Direct, 1 << 20)).expect("open");
            db.put(b"k", b"value").expect("put");
            db.flush().expect("flush");
        }
        let files: Vec<(String, u64)> = std::fs::read_dir(&dir)
            .expect("read_dir")
            .map(|e| {
                let e = e.expect("entry");
                let name = e.file_name().to_string_lossy().into_owned();
                (name, e.metadata().expect("metadata").len())
            })
            .collect();
        let tables: Vec<_> = files.iter().filter(|(n, _)| n.ends_with(".sst")).collect();
        assert_eq!(tables.len(), 1, "{files:?}");
        assert!(tables[0].1 < PAGE, "{files:?}");
        let segments: Vec<_> = files
            .iter()
            .filter(|(n, len)| n.ends_with(".vlog") && *len > 0)
            .collect();
        if threshold == 0 {
            assert!(
                !segments.is_empty() && segments.iter().all(|(_, len)| *len < PAGE),
                "{files:?}"
            );
        }
        let model: Model = [(b"k".to_vec(), b"value".to_vec())].into_iter().collect();
        for cache_bytes in [0, 1 << 20] {
            let what = format!("threshold {threshold}, cache {cache_bytes}: {files:?}");
            // Read-only, so the segment stays sealed and is read with O_DIRECT (a writing
            // open keeps appending to it, reading it with pread: issue 28).
            let opts = Options {
                read_only: true,
                ..db_options(threshold, ReadMode::Direct, cache_bytes)
            };
            let db = Db::open(&dir, opts).expect("open");
            check_db(&db, &model, &what);
            assert_eq!(db.get(b"j").expect("get"), None);
            assert_eq!(db.get(b"l").expect("get"), None);
            db.verify().expect("verify");
            // Both files were read whole through the cache (each read covers its only
            // page): the table, and under separation the segment (its value is read there).
            let c = db.stats().reads.cache.expect("direct mode has a cache");
            let segment = segments.iter().map(|(_, len)| *len).max().unwrap_or(0);
            let want = tables[0].1 + if threshold == 0 { segment } else { 0 };
            assert!(c.device_bytes >= want, "{what}: {c:?}");
            if cache_bytes > 0 {
                let files = if threshold == 0 { 2 } else { 1 };
                assert!(c.pages >= files, "{what}: {c:?}");
            }
        }
    }
}
