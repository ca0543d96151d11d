//! The decompressed value-chunk cache (issue 41 item 3, `cache::ChunkCache`) through the
//! public API: with compression on, a point lookup keeps its block's decompressed value
//! chunk (and, SSTable format 6, its decompressed data block), so a later lookup of any value
//! of the block decompresses nothing
//! (`Stats::reads.chunks` counts hits and misses); what comes back is byte for byte what an
//! uncached read returns, under every codec and read mode; the cache keeps within its budget;
//! scans neither insert nor evict; a compressed block and its values are one entry; and a
//! damaged chunk or block is corruption on its first read as before, and on every read
//! after, while what was cached (checked when it was read) still serves.

use augur::fs::{FileSystem, ReadMode, StdFs};
use augur::{ChunkCacheStats, Compression, Db, Error, Options};
use std::path::{Path, PathBuf};

const KEYS: u64 = 4000;

fn key(i: u64) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

/// Key `i`'s value: 60 to 140 bytes, compressible (a repeated phrase), unique to the key.
fn value(i: u64) -> Vec<u8> {
    let len = 60 + ((i * 7919) % 81) as usize;
    let mut v = format!("value of key {i} / ").into_bytes();
    let phrase = b"the quick brown fox jumps over the lazy dog; ";
    while v.len() < len {
        v.push(phrase[v.len() % phrase.len()]);
    }
    v
}

fn options(compression: Compression, read_mode: ReadMode, cache_bytes: u64) -> Options {
    Options {
        compression,
        read_mode,
        cache_bytes,
        background_threads: false,
        value_separation_threshold: 1024,
        ..Options::default()
    }
}

/// A database at `dir` holding every key in compacted tables, written with `compression`
/// (values and, format 6, data blocks).
fn build(dir: &Path, compression: Compression) {
    build_with(dir, compression, true);
}

/// [`build`], compressing data blocks only when `compress_keys`.
fn build_with(dir: &Path, compression: Compression, compress_keys: bool) {
    let opts = Options {
        compress_keys,
        ..options(compression, ReadMode::Mmap, 64 << 20)
    };
    let db = Db::open(dir, opts).expect("open");
    for i in 0..KEYS {
        db.put(key(i), value(i)).expect("put");
    }
    db.flush().expect("flush");
    db.compact_range(None, None).expect("compact");
    db.close().expect("close");
}

fn chunks(db: &Db) -> ChunkCacheStats {
    db.stats().reads.chunks.expect("a chunk cache")
}

/// Reads every key by `get`, checking it against the model.
fn read_all(db: &Db, what: &str) -> Vec<Vec<u8>> {
    (0..KEYS)
        .map(|i| {
            let got = db.get(key(i)).expect("get").expect("present");
            assert_eq!(got, value(i), "{what}: key {i}");
            got
        })
        .collect()
}

/// Direct reads need a file system with `O_DIRECT` (not tmpfs): the tests' temporary
/// directory is used when it has one.
fn direct_works(dir: &Path) -> bool {
    let probe = dir.join("probe");
    std::fs::write(&probe, vec![0u8; 4096]).expect("write");
    let ok = StdFs.open(&probe, ReadMode::Direct).is_ok();
    std::fs::remove_file(&probe).expect("remove");
    ok
}

#[test]
fn cached_lookups_return_the_uncached_bytes_and_a_second_lookup_decompresses_nothing() {
    for compression in [Compression::None, Compression::Lz4, Compression::Zstd(3)] {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("db");
        build(&dir, compression);
        let uncached = {
            let db = Db::open(&dir, options(compression, ReadMode::Mmap, 0)).expect("open");
            assert!(
                db.stats().reads.chunks.is_none(),
                "a zero budget has no chunk cache"
            );
            read_all(&db, "uncached")
        };
        let mut modes = vec![ReadMode::Mmap, ReadMode::Pread];
        if direct_works(tmp.path()) {
            modes.push(ReadMode::Direct);
        }
        for mode in modes {
            let what = format!("{compression} {mode:?}");
            let db = Db::open(&dir, options(compression, mode, 64 << 20)).expect("open");
            let Some(start) = db.stats().reads.chunks else {
                assert!(
                    mode == ReadMode::Direct && compression == Compression::None,
                    "{what}: no chunk cache"
                );
                continue;
            };
            assert_eq!(read_all(&db, &what), uncached, "{what}");
            let first = chunks(&db);
            if compression == Compression::None {
                assert_eq!(
                    (first.hits, first.misses, first.chunks),
                    (0, 0, 0),
                    "{what}"
                );
                continue;
            }
            assert_eq!(start.misses, 0, "{what}");
            assert!(first.misses > 0 && first.chunks > 0, "{what}: {first:?}");
            assert_eq!(
                first.misses + first.block_misses,
                first.inserts,
                "{what}: room for all: {first:?}"
            );
            assert!(
                first.misses < KEYS / 20,
                "{what}: a chunk holds a block's values: {first:?}"
            );
            assert_eq!(first.hits + first.misses, KEYS, "{what}: {first:?}");
            assert_eq!(read_all(&db, &what), uncached, "{what}");
            let second = chunks(&db);
            assert_eq!(
                (second.misses, second.block_misses),
                (first.misses, first.block_misses),
                "{what}: the hot pass decompressed"
            );
            assert_eq!(second.hits - first.hits, KEYS, "{what}: {second:?}");
            if mode == ReadMode::Direct {
                let pages = db.stats().reads.cache.expect("page cache");
                assert_eq!(
                    pages.capacity_bytes + second.capacity_bytes,
                    64 << 20,
                    "{what}: the budget is shared"
                );
                assert_eq!(second.capacity_bytes, 16 << 20, "{what}");
            }
        }
    }
}

#[test]
fn resident_chunks_stay_within_a_small_budget() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("db");
    build(&dir, Compression::Lz4);
    let budget = 48 << 10;
    let db = Db::open(&dir, options(Compression::Lz4, ReadMode::Mmap, budget)).expect("open");
    for pass in 0..2 {
        // Keys in a scattered order, so that lookups jump between blocks.
        for i in (0..KEYS).map(|n| n * 7919 % KEYS) {
            assert_eq!(db.get(key(i)).expect("get"), Some(value(i)), "key {i}");
            if i % 97 == 0 {
                let s = chunks(&db);
                assert!(s.used_bytes <= budget, "pass {pass}, key {i}: {s:?}");
            }
        }
    }
    let s = chunks(&db);
    assert!(
        s.capacity_bytes == budget && s.used_bytes <= budget,
        "{s:?}"
    );
    // (The decompressed key blocks, which come first, fill this budget: values miss.)
    assert!(s.chunks > 0 && s.hits + s.block_hits > 0, "{s:?}");
    assert!(
        s.misses > KEYS / 10,
        "the data is larger than the budget: {s:?}"
    );
    assert!(
        s.inserts < s.misses + s.block_misses,
        "a full cache admits blocks missed twice only: {s:?}"
    );
}

#[test]
fn scans_neither_insert_nor_evict_chunks() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("db");
    build(&dir, Compression::Lz4);
    for mode in [ReadMode::Mmap, ReadMode::Pread] {
        let db = Db::open(&dir, options(Compression::Lz4, mode, 64 << 20)).expect("open");
        let scan = |what: &str| {
            let n = db
                .iter()
                .map(|item| item.expect("scan"))
                .enumerate()
                .inspect(|(i, (k, v))| {
                    assert!(*k == key(*i as u64) && *v == value(*i as u64), "{what}");
                })
                .count();
            assert_eq!(n as u64, KEYS, "{what}");
        };
        scan("cold scan");
        let cold = chunks(&db);
        assert_eq!(
            (cold.chunks, cold.hits, cold.misses),
            (0, 0, 0),
            "{mode:?}: {cold:?}"
        );
        // A hot half, read twice: every chunk of it cached.
        for _ in 0..2 {
            for i in 0..KEYS / 2 {
                assert_eq!(db.get(key(i)).expect("get"), Some(value(i)));
            }
        }
        let warm = chunks(&db);
        scan("warm scan");
        assert_eq!(
            chunks(&db),
            warm,
            "{mode:?}: a scan touched the chunk cache"
        );
        for i in 0..KEYS / 2 {
            assert_eq!(db.get(key(i)).expect("get"), Some(value(i)));
        }
        let after = chunks(&db);
        assert_eq!(
            after.misses, warm.misses,
            "{mode:?}: the hot half lost chunks"
        );
    }
}

/// The database's one table file.
fn only_table(dir: &Path) -> PathBuf {
    let tables: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("read_dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "sst"))
        .collect();
    assert_eq!(tables.len(), 1, "{tables:?}");
    tables.into_iter().next().expect("one table")
}

/// File offset and stored length of the value chunk of `table`'s first block, which must
/// be compressed.
fn first_chunk(table: &Path) -> (u64, u64) {
    let t = augur::sst::Table::open(&StdFs, table, 1, ReadMode::Pread).expect("open table");
    let footer = *t.footer();
    let bytes = std::fs::read(table).expect("read");
    let index =
        &bytes[footer.index.offset as usize..(footer.index.offset + footer.index.len) as usize];
    let lens = (footer.version, footer.data.len, footer.values.len);
    let fence =
        augur::fuzzing::Fence::decode(index, t.properties(), lens, table, footer.index.offset)
            .expect("index");
    let (codec, _) = fence.value_codec(0).expect("block 0");
    assert_ne!(codec, 0, "block 0's values are compressed");
    let chunk = fence.value_chunk(0).expect("block 0");
    // From format 3 on, chunks are interleaved with the blocks, their offsets relative to
    // the data section (docs/format/sst.md).
    let base = if footer.version >= 3 {
        footer.data.offset
    } else {
        footer.values.offset
    };
    (base + chunk.start, chunk.end - chunk.start)
}

#[test]
fn a_damaged_chunk_is_corruption_on_the_first_read_and_every_read_after() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("db");
    // Values compressed, blocks not: the cache then holds value chunks only.
    build_with(&dir, Compression::Lz4, false);
    let table = only_table(&dir);
    let (at, len) = first_chunk(&table);
    let mut bytes = std::fs::read(&table).expect("read");
    // A byte in the last frame (past the frame table): only the chunk's checksum sees it
    // before decompression.
    bytes[(at + len - 3) as usize] ^= 0x20;
    std::fs::write(&table, bytes).expect("write");
    for mode in [ReadMode::Mmap, ReadMode::Pread] {
        let db = Db::open(&dir, options(Compression::Lz4, mode, 64 << 20)).expect("open");
        for attempt in 0..3 {
            match db.get(key(0)) {
                Err(Error::Corruption { file, .. }) => {
                    assert_eq!(file.file_name(), table.file_name(), "{mode:?} {attempt}")
                }
                other => panic!("{mode:?} attempt {attempt}: {other:?}"),
            }
        }
        let s = chunks(&db);
        assert_eq!(
            (s.chunks, s.hits),
            (0, 0),
            "{mode:?}: nothing cached from a bad chunk"
        );
        // Keys of other blocks still read (and cache) as before.
        assert_eq!(db.get(key(KEYS - 1)).expect("get"), Some(value(KEYS - 1)));
        assert_eq!(chunks(&db).chunks, 1, "{mode:?}");
    }
}

/// A compressed data block (format 6) damaged: `Corruption` naming the table on the first
/// lookup into it and on every one after, nothing cached from it; other blocks read and
/// cache as before.
#[test]
fn a_damaged_key_block_is_corruption_on_the_first_read_and_every_read_after() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("db");
    build(&dir, Compression::Lz4);
    let table = only_table(&dir);
    let t = augur::sst::Table::open(&StdFs, &table, 1, ReadMode::Pread).expect("open table");
    let footer = *t.footer();
    let bytes = std::fs::read(&table).expect("read");
    let index =
        &bytes[footer.index.offset as usize..(footer.index.offset + footer.index.len) as usize];
    let lens = (footer.version, footer.data.len, footer.values.len);
    let fence =
        augur::fuzzing::Fence::decode(index, t.properties(), lens, &table, footer.index.offset)
            .expect("index");
    let (codec, _) = fence.block_codec(0).expect("block 0");
    assert_ne!(codec, 0, "block 0 is compressed");
    let block = fence.data_block(0).expect("block 0");
    let mut bytes = bytes.clone();
    bytes[(footer.data.offset + block.end - 2) as usize] ^= 0x04;
    std::fs::write(&table, bytes).expect("write");
    for mode in [ReadMode::Mmap, ReadMode::Pread] {
        let db = Db::open(&dir, options(Compression::Lz4, mode, 64 << 20)).expect("open");
        for attempt in 0..3 {
            match db.get(key(0)) {
                Err(Error::Corruption { file, offset, .. }) => {
                    assert_eq!(file.file_name(), table.file_name(), "{mode:?} {attempt}");
                    assert_eq!(
                        offset,
                        footer.data.offset + block.start,
                        "{mode:?} {attempt}"
                    );
                }
                other => panic!("{mode:?} attempt {attempt}: {other:?}"),
            }
        }
        let s = chunks(&db);
        assert_eq!(
            (s.chunks, s.block_hits),
            (0, 0),
            "{mode:?}: nothing cached from a bad block"
        );
        assert_eq!(db.get(key(KEYS - 1)).expect("get"), Some(value(KEYS - 1)));
        assert!(chunks(&db).chunks > 0, "{mode:?}");
    }
}

/// The fence index of the table at `table` (its blocks' locations and codecs).
fn fence_of(table: &Path) -> (augur::fuzzing::Fence, augur::sst::Footer) {
    let t = augur::sst::Table::open(&StdFs, table, 1, ReadMode::Pread).expect("open table");
    let footer = *t.footer();
    let bytes = std::fs::read(table).expect("read");
    let index =
        &bytes[footer.index.offset as usize..(footer.index.offset + footer.index.len) as usize];
    let lens = (footer.version, footer.data.len, footer.values.len);
    let fence =
        augur::fuzzing::Fence::decode(index, t.properties(), lens, table, footer.index.offset)
            .expect("index");
    (fence, footer)
}

/// Flips bits of the byte at `at` of `file` in place (the file keeps its length, so a
/// mapping of it stays valid).
fn flip_byte(file: &Path, at: u64, bits: u8) {
    use std::io::{Read, Seek, SeekFrom, Write};
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(file)
        .expect("open for write");
    let mut byte = [0u8];
    f.seek(SeekFrom::Start(at)).expect("seek");
    f.read_exact(&mut byte).expect("read");
    byte[0] ^= bits;
    f.seek(SeekFrom::Start(at)).expect("seek");
    f.write_all(&byte).expect("write");
    f.sync_all().expect("sync");
}

/// Format 6 with compression on: a compressed block and its value chunk are one cache entry
/// (the values join the block at the block's first value read), so after one pass over the
/// keys every later lookup is one block hit and one value hit from that entry, and the
/// cache holds one chunk per block read.
#[test]
fn a_compressed_block_and_its_values_are_one_entry() {
    for compression in [Compression::Lz4, Compression::Zstd(3)] {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("db");
        build(&dir, compression);
        let (fence, _) = fence_of(&only_table(&dir));
        let blocks = fence.block_count();
        let compressed = (0..blocks)
            .filter(|&b| fence.block_codec(b).is_some_and(|(codec, _)| codec != 0))
            .count() as u64;
        assert_eq!(compressed, blocks, "{compression}: every block compressed");
        for mode in [ReadMode::Mmap, ReadMode::Pread] {
            let what = format!("{compression} {mode:?}");
            let db = Db::open(&dir, options(compression, mode, 64 << 20)).expect("open");
            read_all(&db, &what);
            let first = chunks(&db);
            assert_eq!(
                first.chunks, blocks,
                "{what}: one entry per block: {first:?}"
            );
            assert_eq!(first.block_misses, blocks, "{what}: {first:?}");
            assert_eq!(
                first.misses, blocks,
                "{what}: each block's first value: {first:?}"
            );
            assert_eq!(
                first.inserts,
                2 * blocks,
                "{what}: block, then its values: {first:?}"
            );
            assert_eq!(first.hits, KEYS - blocks, "{what}: {first:?}");
            read_all(&db, &what);
            let second = chunks(&db);
            assert_eq!(
                (
                    second.misses,
                    second.block_misses,
                    second.inserts,
                    second.chunks
                ),
                (
                    first.misses,
                    first.block_misses,
                    first.inserts,
                    first.chunks
                ),
                "{what}: the hot pass decompressed: {second:?}"
            );
            assert_eq!(second.hits - first.hits, KEYS, "{what}: {second:?}");
            assert!(
                second.block_hits - first.block_hits >= KEYS,
                "{what}: {second:?}"
            );
        }
    }
}

/// A damaged value chunk of a compressed block: `Corruption` naming the table and the
/// chunk's offset on the first lookup and on every one after; the block is cached (it
/// checked out) but nothing joins it; other blocks read and cache both as before.
#[test]
fn a_damaged_value_chunk_of_a_compressed_block_is_corruption_every_time() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("db");
    build(&dir, Compression::Lz4);
    let table = only_table(&dir);
    let (fence, _) = fence_of(&table);
    assert_ne!(
        fence.block_codec(0).expect("block 0").0,
        0,
        "block 0 compressed"
    );
    let (at, len) = first_chunk(&table);
    flip_byte(&table, at + len - 3, 0x20);
    for mode in [ReadMode::Mmap, ReadMode::Pread] {
        let db = Db::open(&dir, options(Compression::Lz4, mode, 64 << 20)).expect("open");
        for attempt in 0..3 {
            match db.get(key(0)) {
                Err(Error::Corruption { file, offset, .. }) => {
                    assert_eq!(file.file_name(), table.file_name(), "{mode:?} {attempt}");
                    assert_eq!(offset, at, "{mode:?} {attempt}: the chunk's offset");
                }
                other => panic!("{mode:?} attempt {attempt}: {other:?}"),
            }
        }
        let s = chunks(&db);
        assert_eq!(
            (s.chunks, s.hits, s.inserts),
            (1, 0, 1),
            "{mode:?}: the block alone: {s:?}"
        );
        assert_eq!(db.get(key(KEYS - 1)).expect("get"), Some(value(KEYS - 1)));
        let s = chunks(&db);
        assert_eq!((s.chunks, s.inserts), (2, 3), "{mode:?}: {s:?}");
    }
}

/// What a lookup served from the cache means after the file is damaged: the block and
/// values it cached were checked when they were read, so a lookup of them is answered from
/// the cache, right, whatever the file holds since (as before the entries were joined); a
/// block never read is checked on its first read and is `Corruption`.
#[test]
fn cached_entries_were_checked_when_cached_and_serve_after_damage() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("db");
    build(&dir, Compression::Lz4);
    let table = only_table(&dir);
    let (fence, footer) = fence_of(&table);
    let last = fence.block_count() - 1;
    assert!(last > 2, "several blocks");
    let pristine = std::fs::read(&table).expect("read");
    for mode in [ReadMode::Mmap, ReadMode::Pread] {
        std::fs::write(&table, &pristine).expect("restore");
        let db = Db::open(&dir, options(Compression::Lz4, mode, 64 << 20)).expect("open");
        // Block 0 read (cached, with its values); the last block never.
        assert_eq!(db.get(key(0)).expect("get"), Some(value(0)));
        assert_eq!(db.get(key(1)).expect("get"), Some(value(1)));
        let cached = chunks(&db);
        assert_eq!((cached.chunks, cached.hits), (1, 1), "{mode:?}: {cached:?}");
        for b in [0, last] {
            let block = fence.data_block(b).expect("block");
            flip_byte(&table, footer.data.offset + block.end - 2, 0x04);
            let values = fence.value_chunk(b).expect("values");
            flip_byte(&table, footer.data.offset + values.end - 3, 0x20);
        }
        for i in [0, 1, 2] {
            assert_eq!(
                db.get(key(i)).expect("get"),
                Some(value(i)),
                "{mode:?}: key {i}"
            );
        }
        let last_block = fence.data_block(last).expect("block");
        match db.get(key(KEYS - 1)) {
            Err(Error::Corruption { file, offset, .. }) => {
                assert_eq!(file.file_name(), table.file_name(), "{mode:?}");
                assert_eq!(offset, footer.data.offset + last_block.start, "{mode:?}");
            }
            other => panic!("{mode:?}: {other:?}"),
        }
        let s = chunks(&db);
        assert_eq!(
            s.hits - cached.hits,
            3,
            "{mode:?}: served from the cache: {s:?}"
        );
        assert_eq!(
            s.chunks, 1,
            "{mode:?}: nothing cached from the damaged block: {s:?}"
        );
        db.close().expect("close");
    }
}
