//! The SSTable fence-pointer index section on its own (`sst/fence.rs`, through
//! `augur::fuzzing`), decoded against a table's properties and section lengths as
//! `Table::open` does. The first input byte picks the mode (modulo 4):
//! - 0: framed sections: `props_len u16 LE | properties section | values_len u64 LE |
//!   data_len u64 LE | index section`, of format 2, 1, 3 or 7 (format 7's compact records;
//!   bits 2-3 of the mode byte);
//! - 1: the rest is a whole `.sst` file; its properties and index sections are found by the
//!   footer, and decoded as the footer's format version (their checksums are not checked);
//! - 2: structure-aware: a table is written by the engine's builder from fuzzed entries
//!   (`sst_sections::build_table`, which also picks the value chunks' compression and the
//!   slot head width); its index section decodes, re-encodes to the same bytes, and finds
//!   every entry's block — each entry, each key at the newest snapshot, and the lower bound
//!   of probes between and around them;
//! - 3: a table built as in mode 2 from the first half of the rest, its index section
//!   damaged by the second half (3-byte edits; a last odd byte truncates), then decoded.
//!
//! Decoding (modes 0, 1, 3) returns `Ok` or a `Corruption` naming the file, never panics,
//! allocates at most `alloc_bound::bound` of the section's length; a decoded index has one
//! record per block, data blocks that tile the data section (each long enough for its
//! slots), value chunks that tile the value section (format 3: each right after its block,
//! the data section tiled by blocks and chunks in turn) with a known codec (an uncompressed
//! chunk's raw length its stored length; format 6: likewise for each block), finds each block by its own last key, answers any
//! probe with a block's positions (or the empty window at the end), and re-encodes to bytes
//! that decode to the same index.
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

use augur::fuzzing::Fence;
use augur::key::{compare, MAX_SEQNO};
use augur::sst::{Footer, Properties, FORMAT_VERSION};
use libfuzzer_sys::fuzz_target;
use sst_sections::file;
use std::cmp::Ordering;

/// Where the index section is said to start in the file (modes 0).
const OFFSET: u64 = 8192;

/// What an index section is decoded against besides the properties: the table's format
/// version and its data- and value-section lengths.
#[derive(Clone, Copy)]
struct Lens {
    version: u32,
    data_len: u64,
    values_len: u64,
}

impl Lens {
    fn of(footer: &Footer) -> Lens {
        Lens {
            version: footer.version,
            data_len: footer.data.len,
            values_len: footer.values.len,
        }
    }

    fn tuple(self) -> (u32, u64, u64) {
        (self.version, self.data_len, self.values_len)
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    match mode % 4 {
        0 => framed(rest, [2, 1, 3, 7][usize::from(mode >> 2 & 3)]),
        1 => match sst_sections::footer_and_properties(rest) {
            Some(Ok((footer, props))) => {
                let index = sst_sections::slice(rest, &footer.index);
                decode_checked(index, &props, Lens::of(&footer));
            }
            Some(Err(e)) => common::check_clean_error(&e, file()),
            None => {}
        },
        2 => {
            build_and_check(rest);
        }
        _ => {
            let (build, edits) = rest.split_at(rest.len() / 2);
            if let Some((mut index, props, lens)) = build_and_check(build) {
                sst_sections::damage(&mut index, edits);
                decode_checked(&index, &props, lens);
            }
        }
    }
});

fn framed(rest: &[u8], version: u32) {
    let Some((len, rest)) = rest.split_first_chunk::<2>() else {
        return;
    };
    let len = usize::from(u16::from_le_bytes(*len)).min(rest.len());
    let (props, rest) = rest.split_at(len);
    let Some((values_len, rest)) = rest.split_first_chunk::<8>() else {
        return;
    };
    let Some((data_len, index)) = rest.split_first_chunk::<8>() else {
        return;
    };
    let lens = Lens {
        version,
        data_len: u64::from_le_bytes(*data_len),
        values_len: u64::from_le_bytes(*values_len),
    };
    match Properties::decode(props, version, file(), 0) {
        Ok(props) => decode_checked(index, &props, lens),
        Err(e) => common::check_clean_error(&e, file()),
    }
}

fn decode_checked(index: &[u8], props: &Properties, lens: Lens) {
    let decoded = alloc_bound::check(index.len(), "fence decode", || {
        Fence::decode(index, props, lens.tuple(), file(), OFFSET)
    });
    let fence = match decoded {
        Ok(f) => f,
        Err(e) => return common::check_clean_error(&e, file()),
    };
    assert_eq!(fence.block_count(), props.blocks);
    // Format 3 interleaves: block b, then its value chunk, then block b + 1, all in the data
    // section (the value section is empty); earlier formats tile each section on its own.
    let interleaved = lens.version >= 3;
    let (mut chunk_end, mut data_end) = (0, 0);
    for b in 0..fence.block_count() {
        let chunk = fence.value_chunk(b).expect("every block has a value chunk");
        let data = fence.data_block(b).expect("every block has data bytes");
        if interleaved {
            assert_eq!(
                data.start, chunk_end,
                "block {b} does not follow the previous chunk"
            );
            assert_eq!(chunk.start, data.end, "chunk {b} does not follow its block");
        } else {
            assert_eq!(chunk.start, chunk_end, "value chunks do not tile");
            assert_eq!(data.start, data_end, "data blocks do not tile");
        }
        chunk_end = chunk.end;
        let (codec, raw_len) = fence.value_codec(b).expect("every block has a codec");
        assert!(codec <= 2, "block {b}: unknown codec {codec} accepted");
        if codec == 0 {
            assert_eq!(
                u64::from(raw_len),
                chunk.end - chunk.start,
                "block {b}: uncompressed chunk of another raw length"
            );
        }
        data_end = data.end;
        let slots = fence.block_positions(b);
        // Format 6: a block may be stored compressed; its raw length covers its slots.
        let (block_codec, block_raw) = fence.block_codec(b).expect("every block has a codec");
        assert!(
            [0, 1, 2, 0x81, 0x82].contains(&block_codec),
            "block {b}: unknown block codec {block_codec:#x} accepted"
        );
        if block_codec == 0 {
            assert_eq!(block_raw, data.end - data.start, "block {b}: raw block of another length");
        }
        assert!(
            block_raw >= (slots.end - slots.start) * props.slot_bytes(),
            "block {b} is shorter than its slots"
        );
        let (key, trailer) = fence.block_last_key(b).expect("every block has a last key");
        assert_eq!(
            fence.search(key, trailer),
            fence.block_positions(b),
            "block {b} is not found by its own last key"
        );
    }
    if interleaved {
        assert_eq!(lens.values_len, 0, "interleaved table with a value section");
        assert_eq!(chunk_end.max(data_end), lens.data_len);
    } else {
        assert_eq!(chunk_end, lens.values_len);
        assert_eq!(data_end, lens.data_len);
    }
    let entries = props.entries;
    for (key, trailer) in [(&b""[..], u64::MAX), (&b""[..], 0), (&[0xff; 40][..], 0)] {
        let w = fence.search(key, trailer);
        assert!(
            w == (entries..entries)
                || (0..fence.block_count()).any(|b| fence.block_positions(b) == w),
            "window {w:?} is no block's"
        );
    }
    let again = fence.encode(lens.version);
    assert!(again.len() <= index.len(), "re-encoding grew");
    let re = Fence::decode(&again, props, lens.tuple(), file(), OFFSET)
        .expect("a re-encoded index decodes");
    assert_eq!(
        re.encode(lens.version),
        again,
        "encode is not stable through decode"
    );
}

/// Builds a table from `input`, checks its index section; returns the section, the table's
/// properties and section lengths.
fn build_and_check(input: &[u8]) -> Option<(Vec<u8>, Properties, Lens)> {
    let (table, entries) = sst_sections::build_table(input)?;
    let (footer, props) = sst_sections::footer_and_properties(&table)
        .expect("a built table has a footer")
        .expect("a built table's footer and properties decode");
    assert_eq!(
        footer.version, FORMAT_VERSION,
        "the builder writes the newest format"
    );
    let lens = Lens::of(&footer);
    let index = sst_sections::slice(&table, &footer.index).to_vec();
    let fence = Fence::decode(&index, &props, lens.tuple(), file(), footer.index.offset)
        .expect("a built index decodes");
    assert_eq!(
        fence.encode(lens.version),
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
    Some((index, props, lens))
}
