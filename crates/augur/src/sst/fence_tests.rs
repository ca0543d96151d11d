//! Tests of the fence-pointer index section: search, uniform blocks, the encodings of
//! formats 1 and 7, and the checks on decode.

use super::*;
use crate::key::{pack_trailer, InternalKey, ValueKind};

fn props(entries: u64, block_records: u32, largest: &[u8], trailer_seq: u64) -> Properties {
    Properties {
        entries,
        key_width: 8,
        block_records,
        blocks: entries.div_ceil(u64::from(block_records)),
        common_prefix_len: 0,
        bloom_bits_per_key: 0,
        deletes: 0,
        inline_values: entries,
        pointers: 0,
        raw_key_bytes: 0,
        raw_value_bytes: 30,
        pointer_value_bytes: 0,
        smallest: InternalKey::new(b"a".to_vec(), 1, ValueKind::Value),
        largest: InternalKey::new(largest.to_vec(), trailer_seq, ValueKind::Value),
        slot: crate::sst::slot::SlotParams::v1(8),
        max_inline_value_len: None,
    }
}

/// Format-1 section lengths of a 7-entry table with `values_len` value bytes.
fn lens(values_len: u64) -> SectionLens {
    SectionLens {
        version: 1,
        data_len: 7 * 38,
        values_len,
    }
}

fn encoded(keys: &[(&[u8], u64)]) -> Vec<u8> {
    let mut b = Vec::new();
    for (i, (k, s)) in keys.iter().enumerate() {
        let t = pack_trailer(*s, ValueKind::Value);
        encode_record(&mut b, k, t, 1, 10 * (i as u64 + 1), 2);
    }
    b
}

#[test]
fn search_finds_covering_block() {
    let keys: [(&[u8], u64); 3] = [(b"b", 5), (b"d", 5), (b"f", 5)];
    let p = props(7, 3, b"f", 5);
    let idx = FenceIndex::decode(&encoded(&keys), &p, lens(30), Path::new("x"), 0).unwrap();
    let t = |s| pack_trailer(s, ValueKind::Value);
    assert_eq!(idx.search(b"a", t(1)), 0..3);
    assert_eq!(idx.search(b"b", t(6)), 0..3);
    assert_eq!(idx.search(b"b", t(5)), 0..3);
    assert_eq!(idx.search(b"b", t(4)), 3..6);
    assert_eq!(idx.search(b"e", t(4)), 6..7);
    assert_eq!(idx.search(b"g", t(4)), 7..7);
    assert_eq!(idx.meta(1).unwrap().values_start, 10);
    assert_eq!(idx.block_last_key(2), Some((&b"f"[..], t(5))));
    assert_eq!(idx.block_of(6), 2);
    assert!(idx.size_bytes() > 0);
}

#[test]
fn uniform_blocks_are_located_without_their_records() {
    let keys: [(&[u8], u64); 3] = [(b"b", 5), (b"d", 5), (b"f", 5)];
    let p = props(7, 3, b"f", 5);
    let idx = FenceIndex::decode(&encoded(&keys), &p, lens(30), Path::new("x"), 0).unwrap();
    for b in 0..2 {
        assert_eq!(idx.uniform_span(b), Some(idx.meta(b).unwrap().span()), "block {b}");
    }
    // The last block (shorter here) and past the end: read from the records.
    assert_eq!(idx.uniform_span(2), None);
    assert_eq!(idx.uniform_span(3), None);
    // Value chunks of different lengths: every block is located by its record.
    let t = pack_trailer(5, ValueKind::Value);
    let mut uneven = Vec::new();
    for (key, values_end) in [(&b"b"[..], 10), (b"d", 25), (b"f", 30)] {
        encode_record(&mut uneven, key, t, 1, values_end, 2);
    }
    let idx = FenceIndex::decode(&uneven, &p, lens(30), Path::new("x"), 0).unwrap();
    assert!((0..3).all(|b| idx.uniform_span(b).is_none()));
    assert_eq!(idx.meta(1).unwrap().values_end, 25);
}

#[test]
fn encode_gives_back_the_section() {
    let keys: [(&[u8], u64); 3] = [(b"b", 5), (b"d", 5), (b"f", 5)];
    let p = props(7, 3, b"f", 5);
    let enc = encoded(&keys);
    let idx = FenceIndex::decode(&enc, &p, lens(30), Path::new("x"), 0).unwrap();
    assert_eq!(idx.encode(1), enc);
    // An overlong varint length decodes too, and re-encodes in the shortest form.
    let mut long = vec![0x81, 0x00];
    long.extend_from_slice(&enc[1..]);
    let idx = FenceIndex::decode(&long, &p, lens(30), Path::new("x"), 0).unwrap();
    assert_eq!(idx.encode(1), enc);
}

/// A format-7 section of three blocks (3, 3 and 1 entries of format-1 slots, 38 bytes,
/// each block followed by a 10-byte value chunk) with last keys sharing prefixes, and the
/// section lengths it needs.
fn compact_section(keys: [&[u8]; 3]) -> (Vec<u8>, SectionLens) {
    let mut out = Vec::new();
    let (mut start, mut prev) = (0u64, &b""[..]);
    for (b, key) in keys.into_iter().enumerate() {
        let slots = if b == 2 { 38 } else { 3 * 38 };
        Record {
            last_user_key: key,
            prev_user_key: prev,
            data_start: start,
            last_trailer: pack_trailer(5, ValueKind::Value),
            data_end: start + slots,
            block_crc: 7,
            values_end: start + slots + 10,
            values_crc: 9,
            codec: 0,
            raw_len: 10,
            block_prefix_len: 0,
            block_codec: 0,
            block_raw_len: slots as u32,
        }
        .encode_as(COMPACT_INDEX_FORMAT_VERSION, &mut out);
        (start, prev) = (start + slots + 10, key);
    }
    let lens = SectionLens {
        version: COMPACT_INDEX_FORMAT_VERSION,
        data_len: start,
        values_len: 0,
    };
    (out, lens)
}

#[test]
fn compact_records_decode_and_encode_back() {
    let x = Path::new("x");
    let keys: [&[u8]; 3] = [b"ap/alph", b"ap/beta", b"aq"];
    let (section, lens) = compact_section(keys);
    let p = props(7, 3, b"aq", 5);
    let idx = FenceIndex::decode(&section, &p, lens, x, 0).unwrap();
    for (b, key) in keys.iter().enumerate() {
        assert_eq!(idx.block_last_key(b as u64).map(|(k, _)| k), Some(*key));
    }
    let m = idx.meta(1).unwrap();
    assert_eq!((m.data_start, m.data_end, m.values_end), (124, 238, 248));
    assert_eq!(idx.encode(COMPACT_INDEX_FORMAT_VERSION), section);
    assert!(section.len() < idx.encode(COMPRESSED_BLOCK_FORMAT_VERSION).len());
    // The second record shares 3 bytes with "ap/alph" (no byte of the first record is 3);
    // claiming 10 is corruption, as is every truncation.
    let second = section.iter().position(|&b| b == 3).unwrap();
    let mut bad = section.clone();
    bad[second] = 10;
    assert!(FenceIndex::decode(&bad, &p, lens, x, 0).is_err());
    for cut in 0..section.len() {
        assert!(FenceIndex::decode(&section[..cut], &p, lens, x, 0).is_err());
    }
}

#[test]
fn rejects_inconsistent() {
    let x = Path::new("x");
    let good: [(&[u8], u64); 3] = [(b"b", 5), (b"d", 5), (b"f", 5)];
    let p = props(7, 3, b"f", 5);
    // Value section length mismatch, wrong block count, unsorted, wrong largest, truncated.
    assert!(FenceIndex::decode(&encoded(&good), &p, lens(31), x, 0).is_err());
    assert!(FenceIndex::decode(&encoded(&good[..2]), &p, lens(20), x, 0).is_err());
    let bad: [(&[u8], u64); 3] = [(b"d", 5), (b"b", 5), (b"f", 5)];
    assert!(FenceIndex::decode(&encoded(&bad), &p, lens(30), x, 0).is_err());
    let p2 = props(7, 3, b"g", 5);
    assert!(FenceIndex::decode(&encoded(&good), &p2, lens(30), x, 0).is_err());
    let enc = encoded(&good);
    for cut in 0..enc.len() {
        assert!(FenceIndex::decode(&enc[..cut], &p, lens(30), x, 0).is_err());
    }
}
