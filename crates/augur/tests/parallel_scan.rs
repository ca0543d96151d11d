//! Parallel range scans (`Db::scan_parallel`, `Db::scan_partitions`): the partitions of both
//! splitters tile any range exactly, the learned splitter balances entries on clustered keys
//! where the key-space splitter does not, and every partition reads one snapshot while
//! writes, flushes and compactions go on.

use augur::fs::MemFs;
use augur::{Db, KeyRange, Options, ParallelScanOptions, Split};
use proptest::prelude::*;
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

fn small_options() -> Options {
    Options {
        fs: Arc::new(MemFs::new()),
        memtable_size_bytes: 16 << 10,
        target_file_size_bytes: 16 << 10,
        l1_max_bytes: 64 << 10,
        background_threads: false,
        ..Options::default()
    }
}

fn contains(range: &KeyRange, key: &[u8]) -> bool {
    let above = match &range.0 {
        Bound::Included(s) => key >= &s[..],
        Bound::Excluded(s) => key > &s[..],
        Bound::Unbounded => true,
    };
    let below = match &range.1 {
        Bound::Included(e) => key <= &e[..],
        Bound::Excluded(e) => key < &e[..],
        Bound::Unbounded => true,
    };
    above && below
}

fn bound(choice: u8, key: Vec<u8>) -> Bound<Vec<u8>> {
    match choice % 3 {
        0 => Bound::Unbounded,
        1 => Bound::Included(key),
        _ => Bound::Excluded(key),
    }
}

/// Keys of a few bytes over a small alphabet: shared prefixes, prefixes of other keys and
/// zero bytes all occur.
fn key() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(
        prop_oneof![Just(0u8), Just(b'a'), Just(0xff), any::<u8>()],
        0..10,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Every key of the range (written ones and random probes) lies in exactly one
    /// partition, no partition holds a key outside the range, and partitions come in key
    /// order — for both splitters, any partition count, data in memtables, L0 and levels.
    #[test]
    fn partitions_tile_the_range_exactly(
        keys in proptest::collection::vec(key(), 1..400),
        probes in proptest::collection::vec(key(), 0..50),
        lo in key(), hi in key(), lo_kind in 0u8..3, hi_kind in 0u8..3,
        partitions in 1usize..12,
        balanced in any::<bool>(),
        flush_at in 0usize..400,
    ) {
        let db = Db::open("/db", small_options()).unwrap();
        for (i, k) in keys.iter().enumerate() {
            db.put(k, [7u8; 40]).unwrap();
            if i == flush_at {
                db.flush().unwrap();
            }
        }
        let range: KeyRange = (bound(lo_kind, lo), bound(hi_kind, hi));
        let split = if balanced { Split::Balanced } else { Split::KeySpace };
        let parts = db.scan_partitions(range.clone(), partitions, split);
        prop_assert!(!parts.is_empty() && parts.len() <= partitions);
        for k in keys.iter().chain(&probes) {
            let n = parts.iter().filter(|p| contains(p, k)).count();
            prop_assert_eq!(n, usize::from(contains(&range, k)), "key {:?} in {} partitions", k, n);
        }
        prop_assert_eq!(&parts[0].0, &range.0);
        prop_assert_eq!(&parts[parts.len() - 1].1, &range.1);
        for w in parts.windows(2) {
            let (Bound::Excluded(end), Bound::Included(start)) = (&w[0].1, &w[1].0) else {
                return Err(TestCaseError::fail("inner cuts must be [.., cut) [cut, ..)"));
            };
            prop_assert_eq!(end, start);
        }
    }
}

/// Entries of each partition of `parts`.
fn counts(db: &Db, range: KeyRange, partitions: usize, split: Split) -> Vec<u64> {
    let options = ParallelScanOptions {
        threads: 2,
        partitions,
        split,
        ..ParallelScanOptions::default()
    };
    db.scan_parallel(range, &options, |_, scan| {
        let mut n = 0u64;
        while scan.next()?.is_some() {
            n += 1;
        }
        Ok(n)
    })
    .unwrap()
}

/// Keys in tight clusters (90% of them in 1% of the key space): the learned splitter gives
/// every partition close to its share of the entries; cutting the key space gives one
/// partition most of them.
#[test]
fn balanced_split_follows_the_data_keyspace_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(
        dir.path(),
        Options {
            memtable_size_bytes: 1 << 20,
            target_file_size_bytes: 1 << 20,
            ..Options::default()
        },
    )
    .unwrap();
    let mut keys: Vec<u64> = (0..90_000u64).map(|i| (1 << 40) + i * 7).collect();
    keys.extend((0..10_000u64).map(|i| i * (1 << 44)));
    for k in &keys {
        db.put(k.to_be_bytes(), [1u8; 16]).unwrap();
    }
    db.compact_range(None, None).unwrap();
    let total = keys.len() as u64;
    for partitions in [2usize, 4, 8] {
        let share = total / partitions as u64;
        let balanced = counts(
            &db,
            (Bound::Unbounded, Bound::Unbounded),
            partitions,
            Split::Balanced,
        );
        assert_eq!(balanced.iter().sum::<u64>(), total);
        assert_eq!(balanced.len(), partitions);
        for &n in &balanced {
            assert!(
                n.abs_diff(share) * 50 <= share,
                "balanced {balanced:?}, share {share}"
            );
        }
        let keyspace = counts(
            &db,
            (Bound::Unbounded, Bound::Unbounded),
            partitions,
            Split::KeySpace,
        );
        assert_eq!(keyspace.iter().sum::<u64>(), total);
        let largest = keyspace.iter().max().copied().unwrap_or(0);
        assert!(
            largest > share * 3 / 2,
            "keyspace {keyspace:?}, share {share}"
        );
    }
}

/// A parallel scan at a snapshot returns exactly what a sequential scan at that snapshot
/// returns, while another thread keeps overwriting and deleting keys and the background
/// thread flushes and compacts.
#[test]
fn partitions_share_one_snapshot_under_concurrent_writes() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(
        Db::open(
            dir.path(),
            Options {
                memtable_size_bytes: 64 << 10,
                target_file_size_bytes: 64 << 10,
                l1_max_bytes: 256 << 10,
                value_separation_threshold: 32,
                ..Options::default()
            },
        )
        .unwrap(),
    );
    for i in 0..20_000u32 {
        db.put(i.to_be_bytes(), vec![i as u8; 8 + (i % 50) as usize])
            .unwrap();
    }
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (db, stop) = (db.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut round = 0u32;
            while !stop.load(Ordering::Relaxed) {
                for i in (round % 7..20_000).step_by(7) {
                    if i % 3 == 0 {
                        db.delete(i.to_be_bytes()).unwrap();
                    } else {
                        db.put(i.to_be_bytes(), vec![round as u8; 60]).unwrap();
                    }
                }
                round += 1;
            }
        })
    };
    for round in 0..12 {
        let snapshot = db.snapshot();
        let mut want = Vec::new();
        let mut scan = db.scan_with::<&[u8], _>(
            ..,
            &augur::ScanOptions {
                snapshot: Some(snapshot.clone()),
                ..Default::default()
            },
        );
        while let Some((k, v)) = scan.next().unwrap() {
            want.push((k.to_vec(), v.to_vec()));
        }
        let threads = 1 + round % 4;
        let options = ParallelScanOptions {
            threads,
            partitions: threads * (1 + round % 3),
            split: if round % 2 == 0 {
                Split::Balanced
            } else {
                Split::KeySpace
            },
            snapshot: Some(snapshot),
            ..ParallelScanOptions::default()
        };
        let got: Vec<(Vec<u8>, Vec<u8>)> = db
            .scan_parallel::<&[u8], _, _, _>(.., &options, |_, scan| {
                let mut pairs = Vec::new();
                while let Some((k, v)) = scan.next()? {
                    pairs.push((k.to_vec(), v.to_vec()));
                }
                Ok(pairs)
            })
            .unwrap()
            .concat();
        assert_eq!(got.len(), want.len(), "round {round}");
        assert!(got == want, "round {round}: pairs differ");
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
}

#[test]
fn bad_thread_counts_are_refused() {
    let db = Db::open("/db", small_options()).unwrap();
    for (threads, partitions) in [(0, 0), (5000, 0), (2, 5000)] {
        let options = ParallelScanOptions {
            threads,
            partitions,
            ..ParallelScanOptions::default()
        };
        let r = db.scan_parallel::<&[u8], _, _, _>(.., &options, |_, _| Ok(()));
        assert!(
            matches!(r, Err(augur::Error::InvalidArgument(_))),
            "{threads} {partitions}"
        );
    }
}

#[test]
fn scans_are_send_and_refuse_a_closed_database() {
    fn send<T: Send>() {}
    send::<augur::Scan>();
    send::<augur::DbIterator>();
    let db = Db::open("/db", small_options()).unwrap();
    db.put(b"k", b"v").unwrap();
    let mut open_scan = db.scan::<&[u8], _>(..);
    assert_eq!(open_scan.next().unwrap(), Some((&b"k"[..], &b"v"[..])));
    db.close().unwrap();
    let mut scan = db.scan::<&[u8], _>(..);
    assert!(matches!(scan.next(), Err(augur::Error::Closed)));
    assert!(matches!(scan.next(), Ok(None)));
    let r = db.scan_parallel::<&[u8], _, _, _>(.., &ParallelScanOptions::default(), |_, s| {
        s.next().map(|_| ())
    });
    assert!(matches!(r, Err(augur::Error::Closed)), "{r:?}");
}
