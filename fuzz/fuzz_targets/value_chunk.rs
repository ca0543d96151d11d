//! The value-chunk decoder every reader of a compressed chunk goes through
//! (`compression::decompress`: SSTable value chunks, format 2), and the codecs' round trip.
//! The first input byte picks the mode (modulo 5):
//! - 0: arbitrary stored bytes: a codec byte (below 0xf0: `b % 3`, one of the known codecs;
//!   else the byte itself, an unknown codec), a raw length (u32 LE, at most [`MAX_RAW`]),
//!   then the stored chunk;
//! - 1: round trip: the rest, compressed with each codec (none, lz4, zstd:1 and a zstd level
//!   the next byte picks), decompresses to exactly itself; a compressed chunk saves at least
//!   an eighth of the bytes; any other recorded raw length is a `Corruption`;
//! - 2: damaged: the first half of the rest compressed (lz4 or zstd, by the next byte), then
//!   damaged by the second half (3-byte edits: position, xor mask; a last odd byte
//!   truncates), decompressed with its raw length;
//! - 3: framed chunks (`compression::FramedChunk`, the SSTable value chunk's stored form):
//!   arbitrary bytes parsed as a frame table and frames with a codec and raw length (and
//!   format 7's narrow frame records allowed or not), then read whole and at fuzzed value
//!   ranges;
//! - 4: framed round trip: the rest cut into values (lengths from the input), compressed by
//!   `compress_frames` (narrow frame records allowed or not), then every value read back
//!   through its frame, the whole chunk read back, and the stored chunk damaged (3-byte
//!   edits) and read again.
//!
//! Framed reads return the exact bytes (or a `Corruption` naming the file), never a panic.
//!
//! Decompression returns `Ok` with exactly the recorded raw length (an uncompressed chunk
//! passed through, still borrowed) or a `Corruption` naming the file, never panics, and
//! allocates at most the raw length plus `alloc_bound::bound` of the stored bytes.
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

use augur::compression::{
    compress_frames, decompress, FramedChunk, CODEC_LZ4, CODEC_NONE, CODEC_ZSTD,
};
use augur::Compression;
use libfuzzer_sys::fuzz_target;
use sst_sections::file;
use std::borrow::Cow;

/// Largest raw length mode 0 asks for (the decoder allocates it up front: the fence index
/// that records it is checksummed, so the engine trusts it).
const MAX_RAW: u32 = 1 << 20;

/// Where the chunk is said to start in the file.
const OFFSET: u64 = 4096;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    match mode % 5 {
        0 => arbitrary(rest),
        1 => round_trip(rest),
        2 => damaged(rest),
        3 => framed_arbitrary(rest),
        _ => framed_round_trip(rest),
    }
});

/// Reads a framed chunk whole and at `ranges`; every `Ok` has the asked-for length.
fn framed_reads(stored: &[u8], codec: u8, raw_len: u32, narrow: bool, ranges: &[(u64, u64)]) {
    let chunk = match FramedChunk::parse(stored, codec, raw_len, narrow, file(), OFFSET) {
        Ok(c) => c,
        Err(e) => return common::check_clean_error(&e, file()),
    };
    let mut all = Vec::new();
    match chunk.read_all(&mut all, file(), OFFSET) {
        Ok(()) => assert_eq!(all.len(), raw_len as usize, "read_all length"),
        Err(e) => common::check_clean_error(&e, file()),
    }
    for &(at, len) in ranges {
        match chunk.read(at, len, file(), OFFSET) {
            Ok(v) => assert_eq!(v.len() as u64, len, "read length"),
            Err(e) => common::check_clean_error(&e, file()),
        }
    }
}

fn framed_arbitrary(input: &[u8]) {
    let Some((head, stored)) = input.split_first_chunk::<9>() else {
        return;
    };
    let codec = [CODEC_LZ4, CODEC_ZSTD, CODEC_NONE, 7][usize::from(head[0] % 4)];
    let raw_len = u32::from_le_bytes([head[1], head[2], head[3], head[4]]) % (MAX_RAW + 1);
    let at = u64::from(u16::from_le_bytes([head[5], head[6]]));
    let len = u64::from(u16::from_le_bytes([head[7], head[8]]));
    // Bit 2 of the codec byte: narrow frame records (format 7) allowed.
    let narrow = head[0] & 4 != 0;
    framed_reads(stored, codec, raw_len, narrow, &[(at, len), (0, 0), (at, 0)]);
}

fn framed_round_trip(input: &[u8]) {
    let Some((&pick, rest)) = input.split_first() else {
        return;
    };
    let compression = if pick % 2 == 0 {
        Compression::Lz4
    } else {
        Compression::Zstd(1)
    };
    // Bit 1: narrow frame records (format 7) allowed.
    let narrow = pick & 2 != 0;
    // Value lengths from the first bytes (each byte × 16), the raw bytes from the rest,
    // repeated so that frames compress.
    let (lens, body) = rest.split_at(rest.len().min(16));
    if body.is_empty() {
        return;
    }
    let mut raw = Vec::new();
    let mut ends = Vec::new();
    for &l in lens {
        let l = usize::from(l) * 16;
        raw.extend(body.iter().cycle().take(l));
        ends.push(raw.len());
    }
    let mut out = Vec::new();
    let codec = compress_frames(compression, &raw, &ends, narrow, &mut out);
    if codec == CODEC_NONE {
        assert!(out.is_empty());
        return;
    }
    assert!(
        out.len() <= raw.len() - raw.len() / 8,
        "a framed chunk saves an eighth"
    );
    let chunk = FramedChunk::parse(&out, codec, raw.len() as u32, narrow, file(), OFFSET)
        .expect("a written framed chunk parses");
    let mut start = 0;
    for &end in &ends {
        let got = chunk
            .read(start as u64, (end - start) as u64, file(), OFFSET)
            .expect("a written value reads back");
        assert_eq!(got, &raw[start..end]);
        start = end;
    }
    let mut all = Vec::new();
    chunk
        .read_all(&mut all, file(), OFFSET)
        .expect("a written chunk reads back");
    assert_eq!(all, raw);
    let mut bad = out.clone();
    for edit in body.chunks(3).take(4) {
        if let [at_lo, at_hi, mask] = *edit {
            let at = usize::from(u16::from_le_bytes([at_lo, at_hi])) % bad.len();
            bad[at] ^= mask;
        }
    }
    framed_reads(&bad, codec, raw.len() as u32, narrow, &[(0, ends[0] as u64)]);
}

fn arbitrary(input: &[u8]) {
    let Some((&codec, rest)) = input.split_first() else {
        return;
    };
    let codec = if codec < 0xf0 { codec % 3 } else { codec };
    let Some((raw_len, stored)) = rest.split_first_chunk::<4>() else {
        return;
    };
    let raw_len = u32::from_le_bytes(*raw_len) % (MAX_RAW + 1);
    decode_checked(stored, codec, raw_len);
}

/// Decompresses `stored` (borrowed) and checks the contract; returns the raw bytes.
fn decode_checked(stored: &[u8], codec: u8, raw_len: u32) -> Option<Vec<u8>> {
    let (result, peak) = alloc_bound::peak_during(|| {
        decompress(Cow::Borrowed(stored), codec, raw_len, file(), OFFSET)
    });
    let allowed = raw_len as usize + alloc_bound::bound(stored.len());
    assert!(
        peak <= allowed,
        "decompress: {} stored bytes and raw length {raw_len} made it allocate {peak} bytes",
        stored.len()
    );
    match result {
        Ok(raw) => {
            assert!(codec <= CODEC_ZSTD, "unknown codec {codec} accepted");
            assert_eq!(
                raw.len(),
                raw_len as usize,
                "codec {codec}: wrong raw length"
            );
            if codec == CODEC_NONE {
                assert!(
                    matches!(raw, Cow::Borrowed(_)),
                    "an uncompressed chunk is copied"
                );
                assert_eq!(&raw[..], stored, "an uncompressed chunk is changed");
            }
            Some(raw.into_owned())
        }
        Err(e) => {
            common::check_clean_error(&e, file());
            assert!(e.is_corruption(), "not a corruption: {e}");
            None
        }
    }
}

fn round_trip(input: &[u8]) {
    let (level, raw) = match input.split_first() {
        // Levels -7..=19 but 0 (zstd's fast modes and its usual range; 20..=22 only cost
        // time).
        Some((&b, rest)) => (
            match i32::from(b % 26) - 7 {
                0 => 1,
                l => l,
            },
            rest,
        ),
        None => (1, input),
    };
    let mut out = Vec::new();
    for c in [
        Compression::None,
        Compression::Lz4,
        Compression::Zstd(1),
        Compression::Zstd(level),
    ] {
        let codec = c.compress(raw, &mut out);
        let stored: &[u8] = if codec == CODEC_NONE {
            assert!(
                out.is_empty(),
                "{c}: an uncompressed result left bytes behind"
            );
            raw
        } else {
            assert_eq!(codec, c.codec(), "{c}: another codec recorded");
            assert!(
                out.len() <= raw.len() - raw.len() / 8,
                "{c}: stored compressed while saving less than an eighth"
            );
            &out
        };
        if c == Compression::None || raw.is_empty() {
            assert_eq!(codec, CODEC_NONE, "{c}: compressed");
        }
        let len = u32::try_from(raw.len()).expect("a fuzz input is short");
        let got = decode_checked(stored, codec, len).expect("a compressed chunk decompresses");
        assert_eq!(got, raw, "{c}: the round trip changed the bytes");
        for wrong in [len.wrapping_sub(1), len + 1, len / 2] {
            if wrong != len && wrong <= MAX_RAW {
                assert!(
                    decode_checked(stored, codec, wrong).is_none(),
                    "{c}: decompressed to a raw length other than the chunk's"
                );
            }
        }
    }
}

fn damaged(input: &[u8]) {
    let Some((&which, rest)) = input.split_first() else {
        return;
    };
    let (raw, edits) = rest.split_at(rest.len() / 2);
    let c = if which % 2 == 0 {
        Compression::Lz4
    } else {
        Compression::Zstd(1)
    };
    let mut out = Vec::new();
    let codec = c.compress(raw, &mut out);
    if codec == CODEC_NONE {
        return;
    }
    assert!(codec == CODEC_LZ4 || codec == CODEC_ZSTD);
    let original = out.clone();
    sst_sections::damage(&mut out, edits);
    let len = raw.len() as u32;
    if let Some(got) = decode_checked(&out, codec, len) {
        if out == original {
            assert_eq!(
                got, raw,
                "{c}: an undamaged chunk decompressed to other bytes"
            );
        }
    }
}
