//! The page cache of `ReadMode::Direct` under concurrent readers, a running compaction, a
//! writer and background flushes, compactions and value-log GC (issue 27), on the real file
//! system (`O_DIRECT`).
//!
//! The database is first filled with every "old" key (even numbers), each written one to
//! three times with a value unique to (key, version), and flushed into several tables and
//! value-log segments, so there is garbage and overlap for the compaction. Then, at once:
//!
//! - reader threads do random gets and short scans (forward and backward) with a cache of
//!   1 MiB, far smaller than the data, so pages are evicted all the time;
//! - one thread runs `Db::compact_range` over everything, twice, replacing every table (their
//!   cached pages must go and never answer a read again);
//! - a writer appends "new" keys (odd numbers) in increasing order, with values derived from
//!   the key, flushing now and then (background flushes, compactions and GC run too);
//! - a sampler reads `Db::stats()` in a loop.
//!
//! What the readers may see is fixed by the writes: an old key always has its last value; a
//! new key is absent or has its value; a reader that saw new key `j` sees every new key
//! before it afterwards (one writer, in order); a scan is a snapshot, so the new keys it
//! returns in its range are all those before some point of the writer, without gaps. Every
//! read is checked against that, every sample of the cache has `used_bytes <=
//! capacity_bytes`, and at the end the whole database equals the model. A second test runs
//! the same with `max_open_files` of 4 (tables opened again on demand while cached; the
//! sampler also checks that no more descriptors than that are held).

use augur::{Db, Options, ReadMode};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// Old keys: `2 * i` for `i < OLD_KEYS`.
const OLD_KEYS: u64 = 30_000;
/// New keys the writer appends: `2 * j + 1` for `j < NEW_KEYS`.
const NEW_KEYS: u64 = 12_000;
const READERS: usize = 3;
const CACHE_BYTES: u64 = 1 << 20;

fn key(n: u64) -> Vec<u8> {
    format!("key{n:09}").into_bytes()
}

fn key_number(k: &[u8]) -> u64 {
    std::str::from_utf8(&k[3..])
        .expect("utf8")
        .parse()
        .expect("number")
}

/// The value of version `version` of key number `n`: unique to both, 16 to 400 bytes (so
/// some inline and some in the value log).
fn value(n: u64, version: u64) -> Vec<u8> {
    let h = (n ^ (version << 40)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let len = 16 + (h >> 33) as usize % 385;
    let mut v = format!("{n}.{version}|").into_bytes();
    while v.len() < len {
        v.push(b'a' + ((h >> (v.len() % 50)) % 26) as u8);
    }
    v
}

/// The versions key number `n` (old) is written with in the fill; the last one stays.
fn versions(n: u64) -> u64 {
    1 + (n / 2) % 3
}

fn options(max_open_files: Option<usize>) -> Options {
    Options {
        read_mode: ReadMode::Direct,
        cache_bytes: CACHE_BYTES,
        max_open_files,
        memtable_size_bytes: 256 << 10,
        target_file_size_bytes: 256 << 10,
        l1_max_bytes: 1 << 20,
        value_separation_threshold: 200,
        value_log_segment_bytes: 512 << 10,
        block_records: 16,
        ..Options::default()
    }
}

/// What a reader checks a pair against; returns the new key's number `j` if it is new.
fn check_pair(k: &[u8], v: &[u8], what: &str) -> Option<u64> {
    let n = key_number(k);
    if n.is_multiple_of(2) {
        assert!(n / 2 < OLD_KEYS, "{what}: unknown key {n}");
        assert!(
            v == value(n, versions(n)),
            "{what}: old key {n} has a wrong value ({} bytes: {:?})",
            v.len(),
            String::from_utf8_lossy(&v[..v.len().min(24)])
        );
        None
    } else {
        let j = n / 2;
        assert!(j < NEW_KEYS, "{what}: unknown key {n}");
        assert!(v == value(n, 0), "{what}: new key {n} has a wrong value");
        Some(j)
    }
}

/// One reader: random gets and short scans until `stop`; returns the reads it made.
fn reader(db: &Db, seed: u64, stop: &AtomicBool, written: &AtomicU64) -> u64 {
    let mut rng = StdRng::seed_from_u64(seed);
    // New keys below this were seen (or acknowledged before a read began): they stay.
    let mut seen_new = 0u64;
    let mut reads = 0u64;
    while !stop.load(Ordering::Relaxed) {
        // Acknowledged before this read starts: must be visible.
        let acked = written.load(Ordering::Acquire);
        seen_new = seen_new.max(acked);
        let what = format!("reader {seed} read {reads}");
        if rng.gen_bool(0.7) {
            let n = rng.gen_range(0..2 * OLD_KEYS.max(NEW_KEYS));
            let got = db
                .get(key(n))
                .unwrap_or_else(|e| panic!("{what}: get {n} failed: {e}"));
            match got {
                Some(v) => {
                    if let Some(j) = check_pair(&key(n), &v, &what) {
                        seen_new = seen_new.max(j + 1);
                    }
                }
                None if n.is_multiple_of(2) => {
                    assert!(n / 2 >= OLD_KEYS, "{what}: old key {n} missing");
                }
                None => assert!(
                    n / 2 >= seen_new,
                    "{what}: new key {n} missing after new key {} was seen",
                    2 * seen_new - 1
                ),
            }
        } else {
            let start = rng.gen_range(0..2 * OLD_KEYS);
            let len = rng.gen_range(2..40);
            let reverse = rng.gen_bool(0.3);
            let items: Vec<(Vec<u8>, Vec<u8>)> = if reverse {
                db.range(..key(start))
                    .rev()
                    .take(len)
                    .collect::<augur::Result<_>>()
            } else {
                db.range(key(start)..)
                    .take(len)
                    .collect::<augur::Result<_>>()
            }
            .unwrap_or_else(|e| panic!("{what}: scan from {start} failed: {e}"));
            let mut numbers: Vec<u64> = items.iter().map(|(k, _)| key_number(k)).collect();
            if reverse {
                numbers.reverse();
            }
            assert!(
                numbers.windows(2).all(|w| w[0] < w[1]),
                "{what}: scan out of order"
            );
            let mut new_in_scan = Vec::new();
            for (k, v) in &items {
                if let Some(j) = check_pair(k, v, &what) {
                    new_in_scan.push(j);
                }
            }
            // Every key in the range covered: old keys all there; new ones a gap-free
            // prefix of the writer's order (a scan is one snapshot).
            if let (Some(&lo), Some(&hi)) = (numbers.first(), numbers.last()) {
                let mut new_missing_below = None;
                for n in lo..=hi {
                    let present = numbers.binary_search(&n).is_ok();
                    if n.is_multiple_of(2) {
                        assert!(
                            present || n / 2 >= OLD_KEYS,
                            "{what}: scan of {lo}..={hi} skipped old key {n}"
                        );
                    } else if !present && n / 2 < NEW_KEYS {
                        new_missing_below.get_or_insert(n);
                        assert!(
                            n / 2 >= seen_new,
                            "{what}: scan skipped new key {n}, seen before"
                        );
                    } else if present {
                        assert!(
                            new_missing_below.is_none(),
                            "{what}: scan has new key {n} but not {new_missing_below:?}"
                        );
                    }
                }
            }
            if let Some(&j) = new_in_scan.iter().max() {
                seen_new = seen_new.max(j + 1);
            }
        }
        reads += 1;
    }
    reads
}

/// Sets its flag when dropped.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

fn run(max_open_files: Option<usize>) {
    let started = Instant::now();
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("db");
    let db = Arc::new(Db::open(&dir, options(max_open_files)).expect("open"));
    // The fill: versions in rounds, so each round's tables overlap the others'.
    for round in 1..=3 {
        for i in 0..OLD_KEYS {
            let n = 2 * i;
            if versions(n) >= round {
                db.put(key(n), value(n, round)).expect("put");
            }
        }
        db.flush().expect("flush");
    }
    let fill = db.stats();
    let tables_before: usize = fill.levels.iter().map(|l| l.files).sum();
    assert!(tables_before >= 4, "{fill:?}");
    let stop = Arc::new(AtomicBool::new(false));
    let written = Arc::new(AtomicU64::new(0));
    let samples = Arc::new(Mutex::new((0u64, 0u64))); // (samples, max used_bytes)
    thread::scope(|s| {
        // Stops the readers and the sampler however this thread leaves the scope (a failed
        // compaction must fail the test, not hang it).
        let _stop = StopOnDrop(stop.clone());
        let readers: Vec<_> = (0..READERS)
            .map(|r| {
                let (db, stop, written) = (db.clone(), stop.clone(), written.clone());
                s.spawn(move || reader(&db, 1000 + r as u64, &stop, &written))
            })
            .collect();
        let sampler = {
            let (db, stop, samples) = (db.clone(), stop.clone(), samples.clone());
            s.spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let reads = db.stats().reads;
                    if let Some(f) = reads.open_files {
                        assert!(f.open <= f.limit, "more files open than the bound: {f:?}");
                    }
                    let c = reads.cache.expect("direct mode has a cache");
                    assert_eq!(c.capacity_bytes, CACHE_BYTES);
                    assert!(
                        c.used_bytes <= c.capacity_bytes,
                        "the page cache holds more than its budget: {c:?}"
                    );
                    let mut s = samples.lock().expect("lock");
                    s.0 += 1;
                    s.1 = s.1.max(c.used_bytes);
                    drop(s);
                    thread::sleep(Duration::from_millis(2));
                }
            })
        };
        let writer = {
            let (db, written) = (db.clone(), written.clone());
            s.spawn(move || {
                for j in 0..NEW_KEYS {
                    let n = 2 * j + 1;
                    db.put(key(n), value(n, 0)).expect("writer put");
                    written.store(j + 1, Ordering::Release);
                    if j % 3000 == 2999 {
                        db.flush().expect("writer flush");
                    }
                }
            })
        };
        // The compaction, while everything else runs.
        for _ in 0..2 {
            db.compact_range(None, None).expect("compact_range");
        }
        writer.join().expect("writer");
        // Let the readers run a little over the final state too.
        thread::sleep(Duration::from_millis(200));
        stop.store(true, Ordering::Relaxed);
        let reads: u64 = readers.into_iter().map(|r| r.join().expect("reader")).sum();
        sampler.join().expect("sampler");
        assert!(reads > 1000, "only {reads} reads");
        eprintln!("{max_open_files:?}: {reads} reads during the compactions and writes");
    });
    // The final state: every old key with its last value, every new key.
    let mut model = BTreeMap::new();
    for i in 0..OLD_KEYS {
        model.insert(key(2 * i), value(2 * i, versions(2 * i)));
    }
    for j in 0..NEW_KEYS {
        model.insert(key(2 * j + 1), value(2 * j + 1, 0));
    }
    let all: BTreeMap<Vec<u8>, Vec<u8>> =
        db.iter().collect::<augur::Result<_>>().expect("final scan");
    assert!(all == model, "the final state differs from the model");
    for (k, v) in model.iter().step_by(7) {
        assert_eq!(db.get(k).expect("get").as_ref(), Some(v));
    }
    let s = db.stats();
    let c = s.reads.cache.expect("cache");
    let (n_samples, max_used) = *samples.lock().expect("lock");
    eprintln!(
        "{max_open_files:?}: {n_samples} samples, max used {max_used} of {CACHE_BYTES}; {c:?}; \
         compactions {}, gc runs {}, {:?}",
        s.compactions,
        s.gc_runs,
        started.elapsed()
    );
    assert!(c.used_bytes <= c.capacity_bytes, "{c:?}");
    assert!(n_samples >= 10, "only {n_samples} samples");
    // The cache was full and evicting: it filled most of its budget and read many times
    // its size from the device.
    assert!(
        max_used > CACHE_BYTES / 2,
        "the cache never filled: {max_used}"
    );
    assert!(
        c.misses * augur::cache::PAGE_BYTES as u64 > 4 * CACHE_BYTES,
        "too few misses to evict: {c:?}"
    );
    if let Some(limit) = max_open_files {
        // Far more tables than the bound were read: descriptors were evicted and reopened.
        let f = s.reads.open_files.expect("open-file stats");
        assert!(f.open <= limit as u64, "{f:?}");
        assert!(f.opens > 10 * limit as u64, "{f:?}");
    }
}

#[test]
fn concurrent_readers_see_their_writes_while_compaction_evicts_the_cache() {
    run(None);
}

#[test]
fn concurrent_readers_with_max_open_files() {
    run(Some(4));
}
