//! Unit tests of the chunk cache: hits, admission, replacement, budget, scans.

use super::*;
use crate::cache::{scanning, without_cache_fill};

/// The decompressed chunk of `block`: `len` bytes, byte `k` is `(block + k) as u8`.
fn chunk(block: u64, len: usize) -> Arc<[u8]> {
    (0..len as u64).map(|k| (block + k) as u8).collect()
}

/// Reads `[at, at + len)` of `block` (chunks of `CHUNK` bytes) through `t`, inserting the
/// chunk on an admitted miss; counts decompressions (`made`: frames or chunks).
fn read(t: &TableChunks, block: u64, at: usize, len: usize, made: &mut u64) -> Vec<u8> {
    let want: Vec<u8> = (at as u64..(at + len) as u64).map(|k| (block + k) as u8).collect();
    let got = match t.get(block, at, len, CHUNK as u64) {
        Lookup::Hit(v) => v,
        Lookup::Miss { admit } => {
            *made += 1;
            if admit {
                t.insert(block, chunk(block, CHUNK));
            }
            want.clone()
        }
    };
    assert_eq!(got, want, "block {block} at {at}");
    got
}

const CHUNK: usize = 6000;

fn index_bytes(cache: &ChunkCache) -> u64 {
    cache.index.get().map_or(0, |i| i.bytes)
}

#[test]
fn every_value_of_a_cached_chunk_hits() {
    let cache = ChunkCache::new(1 << 20);
    let t = cache.table(4);
    let mut made = 0;
    read(&t, 2, 650, 100, &mut made);
    for (at, len) in [(0, 1), (0, CHUNK), (1023, 2), (5999, 1), (700, 400)] {
        read(&t, 2, at, len, &mut made);
    }
    assert_eq!(made, 1, "one decompression");
    assert_eq!(t.get(2, 5990, 20, CHUNK as u64), Lookup::Miss { admit: true }, "past the chunk");
    assert!(matches!(t.get(3, 0, 1, CHUNK as u64), Lookup::Miss { .. }), "another block");
    let s = cache.stats();
    assert_eq!((s.hits, s.misses, s.chunks, s.inserts), (5, 3, 1, 1), "{s:?}");
    assert_eq!(s.used_bytes, index_bytes(&cache) + CHUNK as u64 + CHUNK_OVERHEAD);
    assert!((s.hit_ratio() - 5.0 / 8.0).abs() < 1e-9);
}

#[test]
fn the_index_is_allocated_on_the_first_admission_only() {
    let cache = ChunkCache::new(64 << 20);
    let t = cache.table(4);
    let mut made = 0;
    scanning(|| read(&t, 0, 0, 10, &mut made));
    assert_eq!(cache.stats().used_bytes, 0, "a scan allocates nothing");
    read(&t, 0, 0, 10, &mut made);
    let s = cache.stats();
    assert!(s.used_bytes > index_bytes(&cache), "{s:?}");
    assert!(index_bytes(&cache) < (64 << 20) / 10, "{s:?}");
}

#[test]
fn tables_do_not_share_chunks_and_a_dropped_table_removes_its_own() {
    let cache = ChunkCache::new(1 << 20);
    let (a, b) = (cache.table(200), cache.table(200));
    let mut made = 0;
    for block in [0, 63, 64, 199] {
        read(&a, block, 5, 10, &mut made);
        read(&b, block, 5, 10, &mut made);
    }
    assert_eq!(made, 8, "the same block of two tables: two chunks");
    assert_eq!(cache.stats().chunks, 8);
    drop(a);
    let s = cache.stats();
    assert_eq!(s.chunks, 4, "a's chunks removed, b's kept");
    assert_eq!(s.used_bytes, index_bytes(&cache) + 4 * (CHUNK as u64 + CHUNK_OVERHEAD));
    read(&b, 199, 1205, 10, &mut made);
    assert_eq!(made, 8);
    drop(b);
    assert_eq!(cache.stats().used_bytes, index_bytes(&cache));
}

#[test]
fn resident_bytes_stay_within_the_budget() {
    for budget in [700u64, 50_000, 256 << 10, 4 << 20] {
        let cache = ChunkCache::new(budget);
        let t = cache.table(10_000);
        let mut made = 0;
        for pass in 0..2 {
            for block in 0..10_000 {
                read(&t, block, (block as usize * 7) % CHUNK, 1, &mut made);
                let s = cache.stats();
                assert!(s.used_bytes <= budget, "{budget} pass {pass}: {s:?}");
            }
        }
        let s = cache.stats();
        assert!(s.chunks > 0 || budget < 50_000, "{budget}: {s:?}");
        assert!(budget < 50_000 || s.used_bytes > budget / 2, "{budget}: filled: {s:?}");
    }
}

#[test]
fn a_budget_below_one_set_caches_nothing() {
    let cache = ChunkCache::new(1000);
    let t = cache.table(1);
    let mut made = 0;
    read(&t, 0, 0, 10, &mut made);
    read(&t, 0, 0, 10, &mut made);
    assert_eq!(made, 2);
    let s = cache.stats();
    assert_eq!((s.hits, s.misses, s.chunks, s.used_bytes), (0, 2, 0, 0));
}

#[test]
fn a_chunk_larger_than_a_ways_share_is_not_admitted() {
    let cache = ChunkCache::new(64 << 10);
    let t = cache.table(1);
    assert_eq!(t.get(0, 0, 1, 20 << 10), Lookup::Miss { admit: false });
    t.insert(0, chunk(0, 20 << 10));
    assert_eq!(cache.stats().chunks, 0);
}

#[test]
fn scans_and_no_fill_reads_admit_nothing_but_use_what_is_cached() {
    let cache = ChunkCache::new(1 << 20);
    let t = cache.table(100);
    let mut made = 0;
    scanning(|| (0..50).for_each(|b| drop(read(&t, b, 10, 10, &mut made))));
    without_cache_fill(|| (0..50).for_each(|b| drop(read(&t, b, 610, 10, &mut made))));
    assert_eq!(cache.stats().chunks, 0, "nothing inserted");
    assert_eq!(made, 100);
    without_cache_fill(|| t.insert(7, chunk(7, CHUNK)));
    assert_eq!(cache.stats().chunks, 0, "no insert outside referencing reads");
    read(&t, 7, 10, 10, &mut made);
    scanning(|| read(&t, 7, 20, 10, &mut made));
    assert_eq!(made, 101, "a scan still hits a cached chunk");
}

/// Once the cache is full, a block is admitted only when it misses twice within about
/// one turn of the cache, and at most once per MISSES_PER_ADMISSION misses: values read
/// once evict nothing, and churn is bounded.
#[test]
fn a_full_cache_admits_blocks_missed_twice_at_a_bounded_rate() {
    let cache = ChunkCache::new(256 << 10);
    let t = cache.table(1_000_000);
    let mut made = 0;
    let mut block = 0;
    while cache.stats().used_bytes + (CHUNK as u64 + CHUNK_OVERHEAD) <= 256 << 10
        && block < 1000
    {
        read(&t, block, 0, 1, &mut made);
        block += 1;
    }
    let full = cache.stats();
    assert!(full.chunks > 10 && full.misses < MISSES_PER_ADMISSION, "{full:?}");
    let miss = |b| t.get(b, 0, 1, CHUNK as u64);
    assert_eq!(miss(500_000), Lookup::Miss { admit: false }, "first miss: a ghost only");
    assert_eq!(miss(500_000), Lookup::Miss { admit: false }, "no credit yet");
    // Misses of other blocks earn credit: then a block missed twice gets in.
    for b in 0..MISSES_PER_ADMISSION {
        miss(700_000 + b);
    }
    assert_eq!(miss(500_001), Lookup::Miss { admit: false }, "first miss: a ghost only");
    assert_eq!(miss(500_001), Lookup::Miss { admit: true }, "missed again, paid");
    assert_eq!(miss(500_002), Lookup::Miss { admit: false });
    assert_eq!(miss(500_002), Lookup::Miss { admit: false }, "the credit is spent");
    // Over many misses, each block missed twice in a row, admissions stay within the rate.
    let before = cache.stats().inserts;
    let rounds = 20 * MISSES_PER_ADMISSION;
    for b in 0..rounds {
        miss(800_000 + b);
        if miss(800_000 + b) == (Lookup::Miss { admit: true }) {
            t.insert(800_000 + b, chunk(0, CHUNK));
        }
    }
    let admitted = cache.stats().inserts - before;
    assert!(
        admitted <= 2 * rounds / MISSES_PER_ADMISSION + MAX_ADMISSION_CREDIT && admitted > 0,
        "{admitted} admissions in {} misses",
        2 * rounds
    );
}

/// A hot set read over and over survives a stream of blocks read once each (ten times
/// what the cache holds; admitted while it has room, then ghosts only) between its reads,
/// and a scan-scoped sweep, which neither admits nor references.
#[test]
fn a_hot_set_survives_one_off_reads_and_scans() {
    let cache = ChunkCache::new(4 << 20);
    let t = cache.table(1_000_000);
    let hot = 100u64;
    let mut made = 0;
    for _ in 0..2 {
        (0..hot).for_each(|b| drop(read(&t, b, 100, 50, &mut made)));
    }
    assert_eq!(made, hot);
    let capacity = (4u64 << 20) / CHUNK as u64;
    for (i, b) in (hot..hot + 10 * capacity).enumerate() {
        read(&t, b, 100, 50, &mut made);
        if i % 4 == 0 {
            read(&t, (i as u64 / 4) % hot, 100, 50, &mut made);
        }
    }
    scanning(|| (hot..hot + 10 * capacity).for_each(|b| drop(read(&t, b, 700, 50, &mut made))));
    let before = made;
    (0..hot).for_each(|b| drop(read(&t, b, 100, 50, &mut made)));
    let lost = made - before;
    assert!(lost <= hot / 20, "{lost} of {hot} hot chunks lost");
}

/// Decompressed data blocks take the place of value chunks, never the other way round.
#[test]
fn blocks_displace_value_chunks_and_not_the_other_way_round() {
    const BLOCK: usize = 1500;
    let cache = ChunkCache::new(256 << 10);
    let values = cache.table(1_000_000);
    let blocks = cache.block_table(1_000_000);
    let mut made = 0;
    let mut b = 0;
    while cache.stats().used_bytes + (CHUNK as u64 + CHUNK_OVERHEAD) <= 256 << 10 && b < 1000 {
        read(&values, b, 0, 1, &mut made);
        b += 1;
    }
    let full = cache.stats();
    assert!(full.chunks > 10, "{full:?}");
    // A full cache of value chunks: a block missed once is admitted and evicts values.
    let mut admitted = 0;
    for blk in 0..8 {
        match blocks.get_block(blk, BLOCK as u64) {
            BlockLookup::Miss { admit: true } => {
                admitted += 1;
                blocks.insert_block(blk, chunk(blk, BLOCK));
            }
            BlockLookup::Miss { admit: false } => {}
            BlockLookup::Hit(_) => panic!("block {blk} cached before"),
        }
    }
    assert!(admitted >= 6, "{admitted} of 8 admitted");
    let cached: Vec<u64> = (0..8)
        .filter(|&blk| matches!(blocks.get_block(blk, BLOCK as u64), BlockLookup::Hit(_)))
        .collect();
    assert_eq!(cached.len(), admitted, "{cached:?}");
    // Value chunks read over and over (admitted while the budget allows) never evict them.
    for round in 0..4 {
        for v in 2000..2400 {
            read(&values, v, 0, 1, &mut made);
        }
        for &blk in &cached {
            match blocks.get_block(blk, BLOCK as u64) {
                BlockLookup::Hit(entry) => assert_eq!(entry.block(), &chunk(blk, BLOCK)[..]),
                miss => panic!("round {round}: block {blk} evicted: {miss:?}"),
            }
        }
    }
    let s = cache.stats();
    assert!(s.used_bytes <= 256 << 10 && s.block_hits > 0, "{s:?}");
}

#[test]
fn the_prefetch_hint_finds_cached_chunks_only() {
    let cache = ChunkCache::new(1 << 20);
    let t = cache.table(10);
    assert!(!t.prefetch(3, 100), "no index yet");
    let mut made = 0;
    read(&t, 3, 0, 1, &mut made);
    assert!(t.prefetch(3, 100) && t.prefetch(3, 1 << 40), "any offset: a hint only");
    assert!(!t.prefetch(4, 0));
    drop(t);
    let u = cache.table(10);
    assert!(!u.prefetch(3, 0), "a dropped table's chunk is gone");
}

#[test]
fn many_threads_read_and_insert_at_once() {
    let cache = ChunkCache::new(256 << 10);
    let t = cache.table(4096);
    std::thread::scope(|s| {
        for n in 0..4u64 {
            let t = &t;
            s.spawn(move || {
                let mut made = 0;
                for i in 0..20_000u64 {
                    let block = (i * 7919 + n * 31) % if i % 3 == 0 { 16 } else { 4096 };
                    read(t, block, (i % 50) as usize * 100, 100, &mut made);
                }
            });
        }
    });
    let s = cache.stats();
    assert!(s.used_bytes <= 256 << 10 && s.hits > 0, "{s:?}");
    drop(t);
    let s = cache.stats();
    assert_eq!((s.chunks, s.used_bytes), (0, index_bytes(&cache)), "{s:?}");
}

/// Bytes of a decompressed data block in the tests of blocks with their values.
const BLOCK: usize = 1500;

/// The decompressed value chunk of block `block`: `CHUNK` bytes, byte `k` is
/// `(block * 3 + k) as u8` (told apart from the block's own bytes).
fn values_of(block: u64) -> Vec<u8> {
    (0..CHUNK as u64).map(|k| (block * 3 + k) as u8).collect()
}

/// What a point lookup into compressed data block `block` of `t` does (as
/// `Table::load_compressed_block` and `Table::inline_value`): takes the block from the
/// cache, or decompresses it (`made` += 1) and inserts it when admitted; then reads
/// `[at, at + len)` of its values from the entry, or decompresses (`made` += 1, a frame or
/// the whole chunk) and attaches the chunk when the cache admits it. Checks both.
fn lookup(t: &TableChunks, block: u64, at: usize, len: usize, made: &mut u64) {
    let entry = match t.get_block(block, BLOCK as u64) {
        BlockLookup::Hit(entry) => Some(entry),
        BlockLookup::Miss { admit } => {
            *made += 1;
            admit.then(|| t.insert_block(block, chunk(block, BLOCK)))
        }
    };
    if let Some(e) = &entry {
        assert_eq!(e.block(), &chunk(block, BLOCK)[..], "block {block}");
    }
    let want = values_of(block)[at..at + len].to_vec();
    let got = match entry.as_ref().and_then(CachedBlock::values) {
        Some(values) => {
            t.value_hit();
            values[at..at + len].to_vec()
        }
        None => {
            *made += 1;
            if t.value_missed(block, CHUNK as u64, entry.as_ref()) {
                if let Some(e) = &entry {
                    t.attach_values(block, e, &values_of(block));
                }
            }
            want.clone()
        }
    };
    assert_eq!(got, want, "values of block {block} at {at}");
}

/// A cached block and its values are one entry: once both are in, a lookup's block and value
/// come from one probe, counted as a block hit and a value hit; the entry is charged its
/// bytes once; a stale entry, a scan or a block that is not cached attaches nothing.
#[test]
fn a_block_and_its_values_are_one_entry() {
    let cache = ChunkCache::new(1 << 20);
    let t = cache.block_table(10);
    let mut made = 0;
    lookup(&t, 3, 100, 50, &mut made);
    assert_eq!(made, 2, "the block and the whole value chunk decompressed");
    let s = cache.stats();
    assert_eq!((s.chunks, s.inserts, s.block_misses, s.misses), (1, 2, 1, 1), "{s:?}");
    let one = BLOCK as u64 + CHUNK as u64 + CHUNK_OVERHEAD;
    assert_eq!(s.used_bytes, index_bytes(&cache) + one, "{s:?}");
    for (at, len) in [(0, 1), (5999, 1), (0, CHUNK), (700, 300)] {
        lookup(&t, 3, at, len, &mut made);
    }
    assert_eq!(made, 2, "hits decompress nothing");
    let s = cache.stats();
    assert_eq!((s.block_hits, s.hits, s.chunks), (4, 4, 1), "{s:?}");
    let BlockLookup::Hit(entry) = t.get_block(3, BLOCK as u64) else {
        panic!("block 3 cached")
    };
    assert_eq!(entry.values(), Some(&values_of(3)[..]));

    // A block cached without values: a stale entry (replaced since) attaches nothing; nor
    // does a scan, nor a block that is not cached.
    let bare = t.insert_block(5, chunk(5, BLOCK));
    let stale = CachedBlock {
        bytes: chunk(5, BLOCK),
        block_len: BLOCK,
    };
    t.attach_values(5, &stale, &values_of(5));
    scanning(|| t.attach_values(5, &bare, &values_of(5)));
    assert!(!t.value_missed(7, CHUNK as u64, None), "no entry: nothing to attach to");
    let BlockLookup::Hit(found) = t.get_block(5, BLOCK as u64) else {
        panic!("block 5 cached")
    };
    assert_eq!(found.values(), None, "nothing attached");
    assert_eq!(cache.stats().used_bytes, index_bytes(&cache) + one + BLOCK as u64 + CHUNK_OVERHEAD);
    t.attach_values(5, &bare, &values_of(5));
    t.attach_values(5, &bare, &values_of(5));
    assert_eq!(cache.stats().used_bytes, index_bytes(&cache) + 2 * one, "attached once");
    drop(t);
    let s = cache.stats();
    assert_eq!((s.chunks, s.used_bytes), (0, index_bytes(&cache)), "{s:?}");
}

/// Under pressure, values go before blocks: a cache that holds every block but not every
/// block's values keeps the blocks (a new block takes the bytes of values in its set or the
/// sets after it, and another block's only when there are none near: a few percent here),
/// within its budget at every step; value chunks of other tables never evict a block.
#[test]
fn values_of_cached_blocks_go_before_the_blocks() {
    let budget = 512u64 << 10;
    let cache = ChunkCache::new(budget);
    let t = cache.block_table(10_000);
    let plain = cache.table(10_000);
    // ~300 blocks fit the budget, ~70 with their values: read 150 blocks, round after round.
    let hot = 150u64;
    let mut made = 0;
    for round in 0..6 {
        for b in 0..hot {
            lookup(&t, (b * 37) % hot, (round * 997 + b as usize * 13) % (CHUNK - 10), 10, &mut made);
            let s = cache.stats();
            assert!(s.used_bytes <= budget, "round {round}, block {b}: {s:?}");
        }
        for v in 0..100 {
            read(&plain, 5000 + v, 0, 1, &mut made);
            assert!(cache.stats().used_bytes <= budget);
        }
    }
    let s = cache.stats();
    let missing: Vec<u64> = (0..hot)
        .filter(|&b| !matches!(t.get_block(b, BLOCK as u64), BlockLookup::Hit(_)))
        .collect();
    assert!(missing.len() as u64 <= hot / 10, "blocks lost: {missing:?} {s:?}");
    let with_values = (0..hot)
        .filter(|&b| matches!(t.get_block(b, BLOCK as u64), BlockLookup::Hit(e) if e.values().is_some()))
        .count();
    assert!(with_values > 10 && (with_values as u64) < hot, "{with_values} of {hot} with values");
    assert!(s.hits > 0 && s.misses > 0, "{s:?}");
    drop((t, plain));
    assert_eq!(cache.stats().used_bytes, index_bytes(&cache));
}

/// Blocks with their values and plain value chunks from many threads at once, in a cache
/// much smaller than them: every read is right and the budget holds; dropping the tables
/// gives every byte back.
#[test]
fn many_threads_read_blocks_with_values_within_the_budget() {
    let budget = 256u64 << 10;
    let cache = ChunkCache::new(budget);
    let t = cache.block_table(4096);
    let plain = cache.table(4096);
    std::thread::scope(|s| {
        for n in 0..4u64 {
            let (t, plain, cache) = (&t, &plain, &cache);
            s.spawn(move || {
                let mut made = 0;
                for i in 0..10_000u64 {
                    let block = (i * 7919 + n * 31) % if i % 3 == 0 { 24 } else { 2048 };
                    if i % 5 == 0 {
                        read(plain, block, (i % 50) as usize * 100, 100, &mut made);
                    } else {
                        lookup(t, block, (i % 50) as usize * 100, 100, &mut made);
                    }
                    if i % 64 == 0 {
                        assert!(cache.stats().used_bytes <= budget);
                    }
                }
            });
        }
    });
    let s = cache.stats();
    assert!(s.used_bytes <= budget && s.hits > 0 && s.block_hits > 0, "{s:?}");
    drop((t, plain));
    let s = cache.stats();
    assert_eq!((s.chunks, s.used_bytes), (0, index_bytes(&cache)), "{s:?}");
}

#[test]
fn the_address_hint_finds_cached_block_entries_only() {
    let cache = ChunkCache::new(1 << 20);
    let t = cache.block_table(10);
    assert_eq!(t.cached_address(2), None, "no index yet");
    let mut made = 0;
    lookup(&t, 2, 0, 1, &mut made);
    let BlockLookup::Hit(entry) = t.get_block(2, BLOCK as u64) else {
        panic!("block 2 cached")
    };
    assert_eq!(t.cached_address(2), Some(entry.bytes.as_ptr() as usize), "the joined entry's");
    assert_eq!(t.cached_address(9), None);
    // Evicted by other tables' blocks: the hint may be stale until this table's next look
    // at the block, which refreshes it.
    let others = cache.block_table(10_000);
    for b in 0..2000 {
        lookup(&others, b, 0, 1, &mut made);
    }
    match t.get_block(2, BLOCK as u64) {
        BlockLookup::Hit(e) => {
            assert_eq!(t.cached_address(2), Some(e.bytes.as_ptr() as usize), "refreshed")
        }
        BlockLookup::Miss { .. } => assert_eq!(t.cached_address(2), None, "cleared"),
    }
}

/// A hit on a way reads the set's first two lines only: the lock, the ways' policy fields,
/// splits and chunks, and the keys (the chunk addresses, read by value chunks' prefetch
/// hints only, come last).
#[test]
fn a_hit_reads_two_lines_of_its_set() {
    use std::mem::{offset_of, size_of};
    assert_eq!(offset_of!(ways::Set, ways), 0);
    assert!(size_of::<parking_lot::Mutex<ways::Ways>>() <= offset_of!(ways::Set, keys));
    assert!(offset_of!(ways::Set, keys) + WAYS * size_of::<u64>() <= 128);
    assert!(offset_of!(ways::Set, addrs) >= 128);
}
