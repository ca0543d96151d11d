//! The SSTable fence-pointer index section on its own (`sst/fence.rs`, through
//! `augur::fuzzing`), decoded against a table's properties as `Table::open` does. The first
//! input byte picks the mode (modulo 4):
//! - 0: framed sections: `props_len u16 LE | properties section | values_len u64 LE | index
//!   section` (scripts/fuzz.sh cuts these out of real tables);
//! - 1: the rest is a whole `.sst` file; its properties and index sections are found by the
//!   footer (their checksums are not checked);
//! - 2: structure-aware: a table is written by the engine's builder from fuzzed entries
//!   (`sst_sections::build_table`); its index section decodes, re-encodes to the same bytes,
//!   and finds every entry's block — each entry, each key at the newest snapshot, and the
//!   lower bound of probes between and around them;
//! - 3: a table built as in mode 2 from the first half of the rest, its index section
//!   damaged by the second half (3-byte edits; a last odd byte truncates), then decoded.
//!
//! Decoding (modes 0, 1, 3) returns `Ok` or a `Corruption` naming the file, never panics,
//! allocates at most `alloc_bound::bound` of the section's length; a decoded index has one
//! record per block, value chunks that tile the value section, finds each block by its own
//! last key, answers any probe with a block's positions (or the empty window at the end),
//! and re-encodes to bytes that decode to the same index.
#![no_main]

#[path = "alloc_bound.rs"]
mod alloc_bound;

#[global_allocator]
static ALLOC: alloc_bound::Counting = alloc_bound::Counting;

#[path = "common.rs"]
#[allow(dead_code)]
mod common;
#[path = "sst_sections.rs"]
mod sst_sections;

use augur::fuzzing::Fence;
use augur::key::{compare, MAX_SEQNO};
use augur::sst::Properties;
use libfuzzer_sys::fuzz_target;
use sst_sections::file;
use std::cmp::Ordering;

/// Where the index section is said to start in the file (modes 0).
const OFFSET: u64 = 8192;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    match mode % 4 {
        0 => framed(rest),
        1 => match sst_sections::footer_and_properties(rest) {
            Some(Ok((footer, props))) => {
                let index = sst_sections::slice(rest, &footer.index);
                decode_checked(index, &props, footer.values.len);
            }
            Some(Err(e)) => common::check_clean_error(&e, file()),
            None => {}
        },
        2 => {
            build_and_check(rest);
        }
        _ => {
            let (build, edits) = rest.split_at(rest.len() / 2);
            if let Some((mut index, props, values_len)) = build_and_check(build) {
                sst_sections::damage(&mut index, edits);
                decode_checked(&index, &props, values_len);
            }
        }
    }
});

fn framed(rest: &[u8]) {
    let Some((len, rest)) = rest.split_first_chunk::<2>() else {
        return;
    };
    let len = usize::from(u16::from_le_bytes(*len)).min(rest.len());
    let (props, rest) = rest.split_at(len);
    let Some((values_len, index)) = rest.split_first_chunk::<8>() else {
        return;
    };
    match Properties::decode(props, file(), 0) {
        Ok(props) => decode_checked(index, &props, u64::from_le_bytes(*values_len)),
        Err(e) => common::check_clean_error(&e, file()),
    }
}

fn decode_checked(index: &[u8], props: &Properties, values_len: u64) {
    let decoded = alloc_bound::check(index.len(), "fence decode", || {
        Fence::decode(index, props, values_len, file(), OFFSET)
    });
    let fence = match decoded {
        Ok(f) => f,
        Err(e) => return common::check_clean_error(&e, file()),
    };
    assert_eq!(fence.block_count(), props.blocks);
    let mut chunk_end = 0;
    for b in 0..fence.block_count() {
        let chunk = fence.value_chunk(b).expect("every block has a value chunk");
        assert_eq!(chunk.start, chunk_end, "value chunks do not tile");
        chunk_end = chunk.end;
        let (key, trailer) = fence.block_last_key(b).expect("every block has a last key");
        assert_eq!(
            fence.search(key, trailer),
            fence.block_positions(b),
            "block {b} is not found by its own last key"
        );
    }
    assert_eq!(chunk_end, values_len);
    let entries = props.entries;
    for (key, trailer) in [(&b""[..], u64::MAX), (&b""[..], 0), (&[0xff; 40][..], 0)] {
        let w = fence.search(key, trailer);
        assert!(
            w == (entries..entries)
                || (0..fence.block_count()).any(|b| fence.block_positions(b) == w),
            "window {w:?} is no block's"
        );
    }
    let again = fence.encode();
    assert!(again.len() <= index.len(), "re-encoding grew");
    let re = Fence::decode(&again, props, values_len, file(), OFFSET)
        .expect("a re-encoded index decodes");
    assert_eq!(re.encode(), again, "encode is not stable through decode");
}

/// Builds a table from `input`, checks its index section; returns the section, the table's
/// properties and value-section length.
fn build_and_check(input: &[u8]) -> Option<(Vec<u8>, Properties, u64)> {
    let (table, entries) = sst_sections::build_table(input)?;
    let (footer, props) = sst_sections::footer_and_properties(&table)
        .expect("a built table has a footer")
        .expect("a built table's footer and properties decode");
    let index = sst_sections::slice(&table, &footer.index).to_vec();
    let fence = Fence::decode(
        &index,
        &props,
        footer.values.len,
        file(),
        footer.index.offset,
    )
    .expect("a built index decodes");
    assert_eq!(
        fence.encode(),
        index,
        "encode → decode → encode changed the bytes"
    );
    let n = entries.len() as u64;
    assert_eq!(props.entries, n);
    assert_eq!(fence.block_count(), props.blocks);
    let lower_bound = |key: &[u8], trailer: u64| {
        entries.partition_point(|e| compare(&e.key, e.trailer, key, trailer) == Ordering::Less)
            as u64
    };
    // `lb` is the lower bound of the probe `key`/`trailer` among the entries.
    let check = |key: &[u8], trailer: u64, lb: u64| {
        let w = fence.search(key, trailer);
        if lb == n {
            assert_eq!(w, n..n, "probe past the end: window {w:?}");
        } else {
            assert!(
                w.contains(&lb),
                "window {w:?} misses lower bound {lb} of {key:?}/{trailer}"
            );
            assert_eq!(fence.block_positions(fence.block_of(lb)), w);
        }
    };
    // Per user key: its versions are entries `start..end`. Every entry is looked up; the
    // probes around a key are the same for each of its versions, so they are made once per
    // key (searches and lower bounds are most of an execution's cost).
    let mut start = 0;
    for versions in entries.chunk_by(|a, b| a.key == b.key) {
        let end = start + versions.len() as u64;
        for (i, e) in (start..).zip(versions) {
            let w = fence.search(&e.key, e.trailer);
            assert!(w.contains(&i), "entry {i} not in its block's window {w:?}");
        }
        let key = &versions[0].key;
        // The key at the newest snapshot (every version's trailer is at most this one, so
        // the lower bound is its first version), below every version (trailer 0, while every
        // seqno is at least 1: the lower bound follows its last version), and probes around
        // it: its successor `key\0` (no key lies between them, so after its last version
        // too) and a smaller key.
        check(key, (MAX_SEQNO << 8) | 0xff, start);
        check(key, 0, end);
        let mut after = key.clone();
        after.push(0);
        check(&after, u64::MAX, end);
        let mut before = key.clone();
        if let Some(b) = before.last_mut() {
            *b = b.wrapping_sub(1);
            check(&before, u64::MAX, lower_bound(&before, u64::MAX));
        }
        start = end;
    }
    check(b"", u64::MAX, 0);
    check(&[0xff; 30], 0, lower_bound(&[0xff; 30], 0));
    Some((index, props, footer.values.len))
}
