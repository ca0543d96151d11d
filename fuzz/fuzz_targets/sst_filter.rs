//! The SSTable filter section on its own (`sst/filter.rs`, through `augur::fuzzing`). The
//! first input byte picks the mode (modulo 4):
//! - 0: the rest is a filter section;
//! - 1: the rest is a whole `.sst` file, and its filter section (found by the footer) is
//!   decoded — real files seed this mode;
//! - 2: structure-aware: a bits-per-key byte and keys (a length byte, then the key; at most
//!   `MAX_KEYS`) are given to the table builder's filter builder; the section has the size it
//!   predicted, decodes, re-encodes to the same bytes, and reports every key as maybe present
//!   (no false negatives), through both lookup entries (plain and hash-once with prefetch);
//! - 3: a section built as in mode 2 from the first half of the rest, damaged by the second
//!   half (3-byte edits: position, xor mask; a last odd byte truncates), then decoded.
//!
//! Decoding (modes 0, 1, 3) returns `Ok` or a `Corruption` naming the file, never panics,
//! allocates at most `alloc_bound::bound` of the section's length, and whatever decodes
//! re-encodes to exactly the section's bytes and answers lookups without panicking.
#![no_main]

#[path = "alloc_bound.rs"]
mod alloc_bound;

#[global_allocator]
static ALLOC: alloc_bound::Counting = alloc_bound::Counting;

#[path = "common.rs"]
#[allow(dead_code)]
mod common;
#[path = "sst_sections.rs"]
#[allow(dead_code)]
mod sst_sections;

use augur::fuzzing::{build_filter, Filter};
use libfuzzer_sys::fuzz_target;
use sst_sections::file;
use std::collections::HashSet;

/// Where the filter section is said to start in the file.
const OFFSET: u64 = 4096;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    match mode % 4 {
        0 => decode_checked(rest),
        1 => match sst_sections::footer_and_properties(rest) {
            Some(Ok((footer, _))) => {
                let section = sst_sections::slice(rest, &footer.filter);
                if !section.is_empty() {
                    decode_checked(section);
                }
            }
            Some(Err(e)) => common::check_clean_error(&e, file()),
            None => {}
        },
        2 => {
            build_and_check(rest);
        }
        _ => {
            let (build, edits) = rest.split_at(rest.len() / 2);
            if let Some(mut section) = build_and_check(build) {
                sst_sections::damage(&mut section, edits);
                decode_checked(&section);
            }
        }
    }
});

fn decode_checked(section: &[u8]) {
    let decoded = alloc_bound::check(section.len(), "filter decode", || {
        Filter::decode(section, file(), OFFSET)
    });
    match decoded {
        Ok(f) => {
            assert_eq!(f.encode(), section, "decode → encode changed the section");
            assert!(f.size_bytes() + 4 >= section.len());
            for key in probes(section) {
                assert_eq!(f.may_contain(key), f.may_contain_prefetched(key));
            }
        }
        Err(e) => common::check_clean_error(&e, file()),
    }
}

/// Most keys [`build_and_check`] reads from an input (the rest is ignored): the filter's code
/// takes the same paths for any number of keys (the engine's edges covered by the corpus are
/// the same with 128 keys as without a limit), and an execution costs time per key.
const MAX_KEYS: usize = 256;

/// Keys to look up in a decoded filter: the empty key and slices of the input.
fn probes(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    std::iter::once(&b""[..]).chain(bytes.chunks(7).take(32))
}

/// Builds a filter from `input` (see the module doc), checks it, returns its section when
/// it has one.
fn build_and_check(input: &[u8]) -> Option<Vec<u8>> {
    let (&bits, mut rest) = input.split_first()?;
    let bits = u32::from(bits % 33);
    let mut keys: Vec<&[u8]> = Vec::new();
    while let Some((&len, tail)) = rest.split_first().filter(|_| keys.len() < MAX_KEYS) {
        let len = usize::from(len % 32).min(tail.len());
        keys.push(&tail[..len]);
        rest = &tail[len..];
    }
    // The builder takes each distinct key once, in any order (the filter ORs their bits):
    // the first of equal keys is kept, found with a hash set. (A bytewise sort did it before;
    // its `memcmp` calls, which libFuzzer intercepts, were most of an execution's cost.)
    let mut seen = HashSet::with_capacity(keys.len());
    keys.retain(|&k| seen.insert(k));
    let (section, predicted) = build_filter(bits, keys.iter().copied());
    assert_eq!(
        section.len() as u64,
        predicted,
        "size differs from the estimate"
    );
    if bits == 0 {
        assert!(section.is_empty(), "0 bits per key writes no filter");
        return None;
    }
    let f = Filter::decode(&section, file(), OFFSET).expect("a built filter decodes");
    assert_eq!(
        f.encode(),
        section,
        "encode → decode → encode changed the bytes"
    );
    for key in &keys {
        assert!(f.may_contain(key), "false negative for {key:?}");
        assert!(
            f.may_contain_prefetched(key),
            "false negative (hash-once) for {key:?}"
        );
    }
    Some(section)
}
