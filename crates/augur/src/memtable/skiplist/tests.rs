//! The skiplist's tests: order, repeated keys, large entries, readers beside the inserting
//! thread, and property tests of seeks and of [`Inserter`] runs against sorted models.

use super::*;
use crate::memtable::arena::MAX_BLOCK_BYTES;
use std::sync::Arc;

fn keys(list: &SkipList) -> Vec<(Vec<u8>, u64)> {
    let mut out = Vec::new();
    let mut n = list.first();
    while let Some(node) = n {
        out.push((node.user_key().to_vec(), node.trailer()));
        n = node.next();
    }
    out
}

#[test]
fn orders_by_key_then_newest_trailer_and_seeks_both_ways() {
    let list = SkipList::new();
    assert!(list.first().is_none() && list.last().is_none());
    for (k, t) in [(&b"b"[..], 2), (b"a", 1), (b"b", 5), (b"c", 3), (b"", 9)] {
        list.insert(k, t, k);
    }
    let want: Vec<(Vec<u8>, u64)> = vec![
        (b"".to_vec(), 9),
        (b"a".to_vec(), 1),
        (b"b".to_vec(), 5),
        (b"b".to_vec(), 2),
        (b"c".to_vec(), 3),
    ];
    assert_eq!(keys(&list), want);
    assert_eq!(list.len(), 5);
    assert_eq!(list.last().map(|n| n.user_key()), Some(&b"c"[..]));
    let b5 = list.probe(b"b", 5);
    assert_eq!(list.seek(&b5, true).map(|n| n.trailer()), Some(5));
    assert_eq!(list.seek(&b5, false).map(|n| n.trailer()), Some(2));
    assert_eq!(
        list.seek_last_before(&b5, false).map(|n| n.user_key()),
        Some(&b"a"[..])
    );
    assert_eq!(
        list.seek_last_before(&b5, true).map(|n| n.trailer()),
        Some(5)
    );
    assert!(list
        .seek_last_before(&list.probe(b"", 10), false)
        .is_none());
    assert!(list.seek(&list.probe(b"d", 0), true).is_none());
    assert_eq!(list.seek(&b5, true).map(|n| n.value()), Some(&b"b"[..]));
}

#[test]
fn a_repeated_internal_key_keeps_the_first_entry() {
    let list = SkipList::new();
    assert!(list.insert(b"k", 7, b"first") > 0);
    assert_eq!(list.insert(b"k", 7, b"again"), 0);
    assert!(list.insert(b"k", 8, b"newer") > 0);
    assert_eq!(list.len(), 2);
    assert_eq!(keys(&list), vec![(b"k".to_vec(), 8), (b"k".to_vec(), 7)]);
    assert_eq!(list.last().map(|n| n.value()), Some(&b"first"[..]));
}

#[test]
fn large_entries_get_their_own_blocks() {
    let list = SkipList::new();
    let big = vec![7u8; MAX_BLOCK_BYTES];
    for i in 0..3u8 {
        list.insert(&[i], 1, &big);
        list.insert(&[i, 1], 1, b"small");
    }
    assert_eq!(list.len(), 6);
    let mut n = list.first();
    while let Some(node) = n {
        let want: &[u8] = if node.user_key().len() == 1 { &big } else { b"small" };
        assert_eq!(node.value(), want);
        n = node.next();
    }
    assert!(list.allocated_bytes() >= 3 * MAX_BLOCK_BYTES);
}

#[test]
fn readers_see_whole_entries_while_one_thread_inserts() {
    let list = Arc::new(SkipList::new());
    // Small under Miri (`cargo +nightly miri test -p augur --lib memtable::skiplist`).
    const N: u32 = if cfg!(miri) { 300 } else { 20_000 };
    let writer = {
        let list = Arc::clone(&list);
        std::thread::spawn(move || {
            for i in 0..N {
                // Scattered order, each value derived from its key.
                let k = i.wrapping_mul(2_654_435_761).to_be_bytes();
                list.insert(&k, u64::from(i), &[k[3]; 40]);
            }
        })
    };
    let mut checks = 0u64;
    while !writer.is_finished() || checks == 0 {
        let mut n = list.first();
        let mut prev: Option<Vec<u8>> = None;
        let mut seen = 0usize;
        while let Some(node) = n {
            let k = node.user_key();
            assert!(node.value().iter().all(|&b| b == k[3]) && node.value().len() == 40);
            if let Some(p) = &prev {
                assert!(p.as_slice() < k);
            }
            prev = Some(k.to_vec());
            seen += 1;
            n = node.next();
        }
        assert!(seen <= N as usize);
        checks += 1;
    }
    writer.join().unwrap();
    assert_eq!(keys(&list).len(), N as usize);
}

#[test]
fn readers_find_the_newest_version_published() {
    // One writer puts seqno s to key s % KEYS and then publishes s; readers seek every key
    // at the published seqno and must find exactly the newest version at or below it.
    const KEYS: u64 = 64;
    const N: u64 = if cfg!(miri) { 500 } else { 200_000 };
    let list = Arc::new(SkipList::new());
    let published = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let key = |k: u64| format!("key{k:05}").into_bytes();
    let readers: Vec<_> = (0..2)
        .map(|r| {
            let (list, published) = (Arc::clone(&list), Arc::clone(&published));
            std::thread::spawn(move || {
                let mut k = r;
                loop {
                    let s = published.load(AtomicOrdering::Acquire);
                    k = (k * 7 + 3) % KEYS;
                    let want = if s >= k.max(1) { s - (s + KEYS - k) % KEYS } else { 0 };
                    let user_key = key(k);
                    let probe = list.probe(&user_key, (s << 8) | 0xff);
                    let found = list
                        .seek(&probe, true)
                        .filter(|n| n.user_key() == user_key.as_slice())
                        .map_or(0, |n| n.trailer() >> 8);
                    assert_eq!(found, want, "key {k} at {s}");
                    if s == N {
                        break;
                    }
                }
            })
        })
        .collect();
    for s in 1..=N {
        list.insert(&key(s % KEYS), s << 8 | 1, &s.to_le_bytes());
        published.store(s, AtomicOrdering::Release);
    }
    for r in readers {
        r.join().unwrap();
    }
}

proptest::proptest! {
    /// Every seek agrees with a sorted model, for keys with zero bytes, shared prefixes
    /// and lengths around 8 (the prefix shortcut's edge cases).
    #[test]
    fn seeks_match_a_sorted_model(
        entries in proptest::collection::vec(
            (proptest::collection::vec(proptest::prop_oneof![
                proptest::strategy::Just(0u8), proptest::strategy::Just(255u8), proptest::num::u8::ANY
            ], 0..12), 0u64..4),
            1..80,
        ),
        probe in (proptest::collection::vec(proptest::num::u8::ANY, 0..12), 0u64..5),
        anchor in proptest::collection::vec(proptest::prop_oneof![
            proptest::strategy::Just(0u8), proptest::strategy::Just(255u8), proptest::num::u8::ANY
        ], 0..7),
    ) {
        // Plain prefixes, or anchored ones (the keys are drawn from the same bytes, so
        // some carry the anchor, some share only its head, some neither).
        let list = SkipList::with_rule(PrefixRule::for_shared_prefix(&anchor));
        let entries: Vec<(Vec<u8>, u64)> = entries
            .into_iter()
            .enumerate()
            .map(|(i, (k, t))| match i % 3 {
                0 => ([anchor.as_slice(), &k].concat(), t),
                1 => ([anchor.get(..2).unwrap_or_default(), &k].concat(), t),
                _ => (k, t),
            })
            .collect();
        let probe = match probe.1 % 2 {
            0 => ([anchor.as_slice(), &probe.0].concat(), probe.1),
            _ => probe,
        };
        let mut model = std::collections::BTreeSet::new();
        for (k, t) in &entries {
            if model.insert((k.clone(), std::cmp::Reverse(*t))) {
                list.insert(k, *t, &t.to_le_bytes());
            }
        }
        let sorted: Vec<(Vec<u8>, u64)> = model.iter().map(|(k, t)| (k.clone(), t.0)).collect();
        proptest::prop_assert_eq!(keys(&list), sorted.clone());
        let p = list.probe(&probe.0, probe.1);
        let as_key = |n: Option<NodeRef<'_>>| n.map(|n| (n.user_key().to_vec(), n.trailer()));
        let order = |e: &(Vec<u8>, u64)| key::compare(&e.0, e.1, &probe.0, probe.1);
        let ge = sorted.iter().find(|e| order(e) != Ordering::Less).cloned();
        let gt = sorted.iter().find(|e| order(e) == Ordering::Greater).cloned();
        let lt = sorted.iter().rev().find(|e| order(e) == Ordering::Less).cloned();
        let le = sorted.iter().rev().find(|e| order(e) != Ordering::Greater).cloned();
        proptest::prop_assert_eq!(as_key(list.seek(&p, true)), ge);
        proptest::prop_assert_eq!(as_key(list.seek(&p, false)), gt);
        proptest::prop_assert_eq!(as_key(list.seek_last_before(&p, false)), lt);
        proptest::prop_assert_eq!(as_key(list.seek_last_before(&p, true)), le);
        proptest::prop_assert_eq!(as_key(list.last()), sorted.last().cloned());
    }

    /// Runs of inserts through one [`Inserter`] — sorted, reversed or shuffled runs,
    /// repeated internal keys, several versions of one key — build the same list as
    /// single inserts: every level in order with exact link prefixes, each insert
    /// reporting a repeat as 0 bytes and the entry it shadows.
    #[test]
    fn inserter_runs_in_any_order_build_an_ordered_list(
        entries in proptest::collection::vec(
            (proptest::collection::vec(proptest::prop_oneof![
                proptest::strategy::Just(0u8), proptest::strategy::Just(b'k'), proptest::num::u8::ANY
            ], 0..10), 0u64..4),
            1..300,
        ),
        runs in proptest::collection::vec((1usize..64, 0u8..3), 1..20),
        anchored in proptest::bool::ANY,
    ) {
        let rule = if anchored { PrefixRule::for_shared_prefix(b"kkkk") } else { PrefixRule::default() };
        let list = SkipList::with_rule(rule);
        let mut model = std::collections::BTreeSet::new();
        let mut rest = entries.as_slice();
        for (len, shape) in runs.iter().cycle() {
            if rest.is_empty() {
                break;
            }
            let (run, tail) = rest.split_at((*len).min(rest.len()));
            rest = tail;
            let mut run: Vec<(Vec<u8>, u64)> = run
                .iter()
                .enumerate()
                .map(|(i, (k, t))| (if i % 2 == 0 { [b"kkkk".as_slice(), k].concat() } else { k.clone() }, *t))
                .collect();
            match shape {
                0 => run.sort(),
                1 => run.sort_by(|a, b| b.cmp(a)),
                _ => {}
            }
            let mut ins = list.inserter();
            for (k, t) in &run {
                // The entry this one goes in front of, if it holds the same user key.
                let shadowed = model
                    .range((k.clone(), std::cmp::Reverse(*t))..)
                    .find(|e: &&(Vec<u8>, std::cmp::Reverse<u64>)| e.1 .0 != *t || e.0 != *k)
                    .filter(|e| e.0 == *k)
                    .map(|e| e.1 .0);
                let fresh = model.insert((k.clone(), std::cmp::Reverse(*t)));
                let (bytes, older) = ins.insert_over(k, *t, &t.to_le_bytes());
                proptest::prop_assert_eq!(bytes == 0, !fresh);
                if fresh {
                    proptest::prop_assert_eq!(older.map(|n| n.trailer()), shadowed);
                }
            }
        }
        let sorted: Vec<(Vec<u8>, u64)> = model.iter().map(|(k, t)| (k.clone(), t.0)).collect();
        proptest::prop_assert_eq!(keys(&list), sorted);
        for level in 0..MAX_HEIGHT {
            let mut at = list.head();
            while let Some(n) = at.next_at(level) {
                let link = at.link(level);
                proptest::prop_assert_eq!(link.next_prefix.load(AtomicOrdering::Relaxed), list.rule.prefix(n.user_key()));
                if at.node != list.head {
                    proptest::prop_assert_eq!(key::compare(at.user_key(), at.trailer(), n.user_key(), n.trailer()), Ordering::Less);
                }
                at = n;
            }
        }
    }
}
