//! Concurrency (issue 2): reader threads iterate forward and backward, hold snapshots and
//! iterators across later writes, and read points, while one writer commits batches and
//! flushes, compactions and value-log GC run (background threads, plus a maintenance thread
//! calling `flush`, `compact_range` and `run_value_log_gc`).
//!
//! Invariant kept by the writer: batch number `g` (a "generation") writes `META = g` and
//! either puts value generation `g` under every one of the `KEYS` hot keys, or (every
//! `DELETE_EVERY`-th generation) deletes them all; every `COLD_EVERY`-th batch (starting
//! with the first) also rewrites the `COLD` cold keys, whose large values stay live in the
//! value log long enough for GC to relocate them under the readers' feet. So any consistent
//! view sees all hot keys absent or all at the generation of `META`, and the cold keys at
//! the generation of the last batch that wrote them; generations never go backwards in the
//! views one thread takes one after another.
//!
//! Bounded in operations: the writer commits `GENERATIONS` batches; the other threads run
//! until it is done (readers at least `MIN_READER_ROUNDS` rounds).

use augur::fs::MemFs;
use augur::{Db, Options, WriteBatch};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// Hot keys: rewritten (or deleted) by every batch.
const KEYS: usize = 24;
/// Cold keys: rewritten by every `COLD_EVERY`-th batch; they follow the hot ones.
const COLD: usize = 16;
/// How often the cold keys are rewritten.
const COLD_EVERY: u64 = 97;
/// Batches the writer commits.
const GENERATIONS: u64 = 8000;
/// Every this many generations, the batch deletes every key instead.
const DELETE_EVERY: u64 = 7;
/// Reader threads.
const READERS: usize = 3;
/// Rounds each reader runs at least.
const MIN_READER_ROUNDS: u64 = 50;
/// The maintenance thread runs one operation per this many batches.
const MAINTENANCE_EVERY: u64 = 4;
/// The key holding the generation of the last batch.
const META: &[u8] = b"meta";

fn key(i: usize) -> Vec<u8> {
    format!("k{i:04}").into_bytes()
}

/// A value of generation `g` for key `i`: `i:g:` then padding. Hot values have 20..80
/// bytes, so that with a threshold of 32 some are inline and some in the value log; cold
/// ones 40..100 (all in the value log).
fn value(i: usize, g: u64) -> Vec<u8> {
    let mut v = format!("{i:03}:{g:08}:").into_bytes();
    let min = if i < KEYS { 20 } else { 40 };
    let len = min + (g as usize * 7 + i * 13) % 60;
    v.resize(len, b'a' + (g % 26) as u8);
    v
}

/// The generation in a value of key `i`; panics (test failure) on a malformed value.
fn parse(i: usize, v: &[u8], ctx: &str) -> u64 {
    let s = std::str::from_utf8(v).unwrap_or_else(|_| panic!("{ctx}: value not UTF-8: {v:?}"));
    let mut parts = s.splitn(3, ':');
    let ki: usize = parts
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or(usize::MAX);
    let g: u64 = parts
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("{ctx}: malformed value {s:?}"));
    assert_eq!(ki, i, "{ctx}: value of key {i} belongs to key {ki}: {s:?}");
    assert_eq!(v, value(i, g).as_slice(), "{ctx}: corrupted value {s:?}");
    g
}

fn meta_gen(v: Option<Vec<u8>>, ctx: &str) -> u64 {
    match v {
        None => 0,
        Some(v) => std::str::from_utf8(&v)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("{ctx}: malformed meta {v:?}")),
    }
}

/// Checks that `pairs` (the whole database at one view, in order) is consistent and
/// returns its generation.
fn check_view(pairs: &[(Vec<u8>, Vec<u8>)], ctx: &str) -> u64 {
    let map: BTreeMap<_, _> = pairs.iter().cloned().collect();
    assert_eq!(map.len(), pairs.len(), "{ctx}: duplicate keys");
    assert!(
        pairs.windows(2).all(|w| w[0].0 < w[1].0),
        "{ctx}: keys out of order"
    );
    let g = meta_gen(map.get(META).cloned(), ctx);
    check_keys(g, |i| map.get(&key(i)).cloned(), ctx);
    let expected = match g {
        0 => 0,
        g if g.is_multiple_of(DELETE_EVERY) => 1 + COLD,
        _ => 1 + COLD + KEYS,
    };
    assert_eq!(
        map.len(),
        expected,
        "{ctx}: unexpected keys at generation {g}"
    );
    g
}

/// The generation of the cold keys after batch `g` (0: none yet).
fn cold_gen(g: u64) -> u64 {
    if g == 0 {
        0
    } else {
        g - (g - 1) % COLD_EVERY
    }
}

/// Checks that every key matches generation `g` of `META`.
fn check_keys(g: u64, get: impl Fn(usize) -> Option<Vec<u8>>, ctx: &str) {
    for i in KEYS..KEYS + COLD {
        let want = cold_gen(g);
        match get(i) {
            None => assert_eq!(want, 0, "{ctx}: cold key {i} missing at generation {g}"),
            Some(v) => assert_eq!(
                parse(i, &v, ctx),
                want,
                "{ctx}: cold key {i} at the wrong generation (meta {g})"
            ),
        }
    }
    for i in 0..KEYS {
        let v = get(i);
        if g == 0 || g.is_multiple_of(DELETE_EVERY) {
            assert_eq!(v, None, "{ctx}: key {i} present at deleted generation {g}");
        } else {
            let v = v.unwrap_or_else(|| panic!("{ctx}: key {i} missing at generation {g}"));
            assert_eq!(
                parse(i, &v, ctx),
                g,
                "{ctx}: key {i} at the wrong generation"
            );
        }
    }
}

fn collect(
    it: impl Iterator<Item = augur::Result<(Vec<u8>, Vec<u8>)>>,
    ctx: &str,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    it.map(|r| r.unwrap_or_else(|e| panic!("{ctx}: iteration error {e}")))
        .collect()
}

fn options(fs_is_mem: bool) -> Options {
    let mut o = Options {
        memtable_size_bytes: 8 << 10,
        target_file_size_bytes: 8 << 10,
        l1_max_bytes: 32 << 10,
        level_size_ratio: 4,
        value_log_segment_bytes: 16 << 10,
        value_separation_threshold: 32,
        block_records: 8,
        background_threads: true,
        ..Options::default()
    };
    if fs_is_mem {
        o.fs = Arc::new(MemFs::new());
    }
    o
}

/// Consumes `it` with randomly mixed `next` / `next_back` calls (yielding the CPU between
/// steps when `slow`) and returns the pairs in key order.
fn drain_mixed(
    mut it: augur::DbIterator,
    rng: &mut StdRng,
    slow: bool,
    ctx: &str,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    let (mut front, mut back) = (Vec::new(), Vec::new());
    loop {
        let forward = rng.gen_bool(0.5);
        let step = if forward { it.next() } else { it.next_back() };
        let Some(r) = step else { break };
        let p = r.unwrap_or_else(|e| panic!("{ctx}: iteration error {e}"));
        if forward {
            front.push(p);
        } else {
            back.push(p);
        }
        if slow {
            std::thread::yield_now();
        }
    }
    back.reverse();
    front.extend(back);
    front
}

/// One reader round; returns the generation it saw last.
fn reader_round(db: &Db, rng: &mut StdRng, last: &mut u64, ctx: &str) {
    let mut see = |g: u64, what: &str| {
        assert!(
            g >= *last,
            "{ctx} {what}: generation went back from {last} to {g}"
        );
        *last = g;
    };
    match rng.gen_range(0..6) {
        0 => {
            let pairs = collect(db.iter(), ctx);
            see(check_view(&pairs, &format!("{ctx} forward")), "forward");
        }
        1 => {
            let mut pairs = collect(db.iter().rev(), ctx);
            pairs.reverse();
            see(check_view(&pairs, &format!("{ctx} backward")), "backward");
        }
        2 => {
            // A snapshot read point by point and by iteration (mixed directions): both agree.
            let snap = db.snapshot();
            let c = format!("{ctx} snapshot {}", snap.seqno());
            let g = meta_gen(db.get_at(META, &snap).expect("get_at"), &c);
            check_keys(g, |i| db.get_at(key(i), &snap).expect("get_at"), &c);
            let pairs = drain_mixed(db.range_at::<&[u8], _>(.., &snap), rng, false, &c);
            assert_eq!(
                check_view(&pairs, &c),
                g,
                "{c}: iteration and get_at disagree"
            );
            see(g, "snapshot");
        }
        3 => {
            // A snapshot held across later writes: two reads of it must agree.
            let snap = db.snapshot();
            let c = format!("{ctx} held snapshot {}", snap.seqno());
            let first = collect(db.range_at::<&[u8], _>(.., &snap), &c);
            let g = check_view(&first, &c);
            for _ in 0..20 {
                std::thread::yield_now();
            }
            let second = collect(db.range_at::<&[u8], _>(.., &snap), &c);
            assert_eq!(first, second, "{c}: snapshot changed");
            check_keys(g, |i| db.get_at(key(i), &snap).expect("get_at"), &c);
            see(g, "held snapshot");
        }
        4 => {
            // An iterator consumed slowly, from both ends, across later writes.
            let c = format!("{ctx} slow iterator");
            let pairs = drain_mixed(db.iter(), rng, true, &c);
            see(check_view(&pairs, &c), "slow iterator");
        }
        _ => {
            // Point reads without a snapshot: each sees a state at least as new as the last.
            let c = format!("{ctx} point reads");
            let g0 = meta_gen(db.get(META).expect("get"), &c);
            see(g0, "meta");
            for _ in 0..8 {
                let i = rng.gen_range(0..KEYS + COLD);
                if let Some(v) = db.get(key(i)).expect("get") {
                    let g = parse(i, &v, &c);
                    if i >= KEYS {
                        // A cold key: its batch is at or after the meta read before.
                        assert!(g >= cold_gen(g0), "{c}: cold key {i} older than meta {g0}");
                        continue;
                    }
                    assert!(
                        !g.is_multiple_of(DELETE_EVERY),
                        "{c}: key {i} at deleted generation {g}"
                    );
                    see(g, "point read");
                }
            }
            let g1 = meta_gen(db.get(META).expect("get"), &c);
            see(g1, "meta again");
        }
    }
}

fn run(fs_is_mem: bool, seed: u64) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let path = if fs_is_mem {
        std::path::PathBuf::from("/db")
    } else {
        tmp.path().join("db")
    };
    let db = Db::open(&path, options(fs_is_mem)).expect("open");
    let done = AtomicBool::new(false);
    let progress = AtomicU64::new(0);
    let maintenance_ops = AtomicU64::new(0);
    let reader_rounds = AtomicU64::new(0);
    std::thread::scope(|s| {
        s.spawn(|| {
            for g in 1..=GENERATIONS {
                let mut b = WriteBatch::new();
                b.put(META, g.to_string());
                if g % COLD_EVERY == 1 {
                    for i in KEYS..KEYS + COLD {
                        b.put(key(i), value(i, g));
                    }
                }
                for i in 0..KEYS {
                    if g.is_multiple_of(DELETE_EVERY) {
                        b.delete(key(i));
                    } else {
                        b.put(key(i), value(i, g));
                    }
                }
                db.write(b).expect("write");
                progress.store(g, Ordering::Release);
            }
            done.store(true, Ordering::Release);
        });
        s.spawn(|| {
            let mut rng = StdRng::seed_from_u64(seed);
            let mut next = 0;
            while !done.load(Ordering::Acquire) {
                // One operation per few batches, so it does not starve the others.
                if progress.load(Ordering::Acquire) < next {
                    std::thread::yield_now();
                    continue;
                }
                next = progress.load(Ordering::Acquire) + MAINTENANCE_EVERY;
                match rng.gen_range(0..4) {
                    0 => db.flush().expect("flush"),
                    1 => {
                        let (a, b) = (rng.gen_range(0..KEYS), rng.gen_range(0..KEYS));
                        let (a, b) = (key(a.min(b)), key(a.max(b)));
                        db.compact_range(Some(&a), Some(&b)).expect("compact_range");
                    }
                    _ => {
                        db.run_value_log_gc().expect("run_value_log_gc");
                    }
                }
                maintenance_ops.fetch_add(1, Ordering::Relaxed);
            }
        });
        for r in 0..READERS {
            let (db, done, reader_rounds) = (&db, &done, &reader_rounds);
            s.spawn(move || {
                let mut rng = StdRng::seed_from_u64(seed * 100 + r as u64);
                let mut last = 0;
                let mut rounds = 0u64;
                while rounds < MIN_READER_ROUNDS || !done.load(Ordering::Acquire) {
                    let ctx = format!("seed {seed} reader {r} round {rounds}");
                    reader_round(db, &mut rng, &mut last, &ctx);
                    rounds += 1;
                }
                reader_rounds.fetch_add(rounds, Ordering::Relaxed);
            });
        }
    });
    // The final state is the last generation.
    let pairs = collect(db.iter(), "final");
    assert_eq!(check_view(&pairs, "final"), GENERATIONS);
    db.verify().expect("verify");
    let st = db.stats();
    eprintln!(
        "seed {seed}: {} maintenance ops, {} reader rounds, flushes {}, compactions {}, gc runs {} ({} relocated), stalls {}",
        maintenance_ops.load(Ordering::Relaxed),
        reader_rounds.load(Ordering::Relaxed),
        st.flushes,
        st.compactions,
        st.gc_runs,
        st.gc_entries_relocated,
        st.write_stalls
    );
    assert!(st.flushes >= 20, "only {} flushes", st.flushes);
    assert!(st.compactions >= 10, "only {} compactions", st.compactions);
    assert!(st.gc_runs > 0, "value-log GC never ran");
    assert_eq!(st.live_snapshots, 0, "snapshots leaked");
    drop(db);
    if !fs_is_mem {
        let db = Db::open(&path, options(false)).expect("reopen");
        let pairs = collect(db.iter(), "after reopen");
        assert_eq!(check_view(&pairs, "after reopen"), GENERATIONS);
    }
}

#[test]
fn readers_see_consistent_generations_in_memory() {
    run(true, 1);
}

#[test]
fn readers_see_consistent_generations_on_disk() {
    run(false, 2);
}
