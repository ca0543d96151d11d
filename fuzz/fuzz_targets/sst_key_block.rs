//! The decoder of a compressed SSTable data block (format 6, `sst/block_codec.rs`, through
//! `augur::fuzzing`): a block's slots and key suffixes, packed (the slot area transposed, its
//! offset fields as differences, the keys transposed too or inline as text) and compressed
//! with the values' codec. The first input byte picks the mode (modulo 3); the next six the
//! block's shape (`slots` 0..=127, `slot_bytes` 0..=63, the head's width and where the
//! key-length, suffix-offset and value-offset fields lie, any of them out of place):
//! - 0: arbitrary stored bytes: a codec byte (as given: any value, known or not), a raw
//!   length (u32 LE, at most [`MAX_RAW`]), then the stored block;
//! - 1: round trip: the rest is a raw block; either packing is undone by unpacking; compressed
//!   with lz4 and zstd it decompresses to exactly itself, saves an eighth when stored
//!   compressed, and any other recorded raw length is a `Corruption`;
//! - 2: damaged: the first half of the rest compressed as in mode 1, damaged by the second
//!   half (3-byte edits: position, xor mask; a last odd byte truncates), then decompressed.
//!
//! Decompression returns exactly the recorded raw length or a `Corruption` naming the file,
//! never panics, and allocates at most twice the raw length (the packed block and the block)
//! plus `alloc_bound::bound` of the stored bytes.
#![no_main]

#[path = "alloc_bound.rs"]
#[allow(dead_code)]
mod alloc_bound;

#[global_allocator]
static ALLOC: alloc_bound::Counting = alloc_bound::Counting;

#[path = "common.rs"]
#[allow(dead_code)]
mod common;
#[path = "sst_sections.rs"]
#[allow(dead_code)]
mod sst_sections;

use augur::fuzzing::{compress_block, decompress_block, pack_block, unpack_block, KeyBlockShape};
use augur::Compression;
use libfuzzer_sys::fuzz_target;
use sst_sections::file;

/// Largest raw length mode 0 asks for (the reader allocates it: the fence index that records
/// it is checksummed, and bounded by the block's slots and key width on open).
const MAX_RAW: u32 = 1 << 20;

/// Where the block is said to start in the file.
const OFFSET: u64 = 8192;

fuzz_target!(|data: &[u8]| {
    let Some((&[mode, slots, slot_bytes, head, len, suffix, value], rest)) =
        data.split_first_chunk::<7>()
    else {
        return;
    };
    let slot_bytes = usize::from(slot_bytes % 64);
    let shape = KeyBlockShape {
        slots: usize::from(slots % 128),
        slot_bytes,
        head_bytes: usize::from(head % 64),
        len_field: (usize::from(len % 64), usize::from(len / 64)),
        suffix_field: (usize::from(suffix % 64), usize::from(suffix / 64)),
        value_field: (usize::from(value % 64), usize::from(value / 64) * 2),
    };
    match mode % 3 {
        0 => arbitrary(rest, shape),
        1 => round_trip(rest, shape),
        _ => damaged(rest, shape),
    }
});

/// Decompresses `stored` and checks the contract; returns the raw block.
fn decode_checked(stored: &[u8], codec: u8, raw_len: usize, shape: KeyBlockShape) -> Option<Vec<u8>> {
    let (result, peak) = alloc_bound::peak_during(|| {
        decompress_block(stored, codec, raw_len, shape, file(), OFFSET)
    });
    let allowed = 2 * raw_len + alloc_bound::bound(stored.len());
    assert!(
        peak <= allowed,
        "{} stored bytes and raw length {raw_len} made it allocate {peak} bytes",
        stored.len()
    );
    match result {
        Ok(raw) => {
            assert!(
                [1, 2, 0x81, 0x82].contains(&codec),
                "codec byte {codec:#x} accepted"
            );
            assert_eq!(raw.len(), raw_len, "wrong raw length");
            assert!(raw_len >= shape.slots * shape.slot_bytes, "a block shorter than its slots");
            Some(raw)
        }
        Err(e) => {
            common::check_clean_error(&e, file());
            assert!(e.is_corruption(), "not a corruption: {e}");
            None
        }
    }
}

fn arbitrary(input: &[u8], shape: KeyBlockShape) {
    let Some((&codec, rest)) = input.split_first() else {
        return;
    };
    let Some((raw_len, stored)) = rest.split_first_chunk::<4>() else {
        return;
    };
    let raw_len = u32::from_le_bytes(*raw_len) % (MAX_RAW + 1);
    decode_checked(stored, codec, raw_len as usize, shape);
}

fn round_trip(raw: &[u8], shape: KeyBlockShape) {
    for keys_inline in [false, true] {
        let packed = pack_block(raw, shape, keys_inline);
        assert_eq!(packed.len(), raw.len(), "packing changed the length");
        assert_eq!(
            unpack_block(&packed, shape, keys_inline),
            raw,
            "unpack does not invert pack"
        );
    }
    for c in [Compression::Lz4, Compression::Zstd(1)] {
        let (codec, stored) = compress_block(c, raw, shape);
        if codec == 0 {
            assert!(stored.is_empty(), "{c}: a raw block left bytes behind");
            continue;
        }
        assert_eq!(codec & 0x7f, c.codec(), "{c}: another codec recorded");
        assert!(
            stored.len() <= raw.len() - raw.len() / 8,
            "{c}: stored compressed while saving less than an eighth"
        );
        if raw.len() < shape.slots * shape.slot_bytes {
            // A reader never sees such a block: open refuses a raw length below the slots.
            assert!(decode_checked(&stored, codec, raw.len(), shape).is_none());
            continue;
        }
        let got = decode_checked(&stored, codec, raw.len(), shape)
            .expect("a compressed block decompresses");
        assert_eq!(got, raw, "{c}: the round trip changed the bytes");
        for wrong in [raw.len().wrapping_sub(1), raw.len() + 1, raw.len() / 2] {
            if wrong != raw.len() && wrong <= MAX_RAW as usize {
                assert!(
                    decode_checked(&stored, codec, wrong, shape).is_none(),
                    "{c}: decompressed to a raw length other than the block's"
                );
            }
        }
    }
}

fn damaged(input: &[u8], shape: KeyBlockShape) {
    let (raw, edits) = input.split_at(input.len() / 2);
    let c = if edits.first().is_some_and(|b| b % 2 == 0) {
        Compression::Lz4
    } else {
        Compression::Zstd(1)
    };
    let (codec, mut stored) = compress_block(c, raw, shape);
    if codec == 0 {
        return;
    }
    let original = stored.clone();
    sst_sections::damage(&mut stored, edits);
    if let Some(got) = decode_checked(&stored, codec, raw.len(), shape) {
        if stored == original {
            assert_eq!(got, raw, "{c}: an undamaged block decompressed to other bytes");
        }
    }
}
