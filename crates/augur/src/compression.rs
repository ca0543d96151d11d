//! Value compression: the codecs a database may store values with ([`Compression`], the
//! `--compression` option) and the decoders every reader of compressed bytes goes through.
//! The value log compresses each value on its own ([`decompress`]; docs/format/vlog.md).
//! SSTables compress each data block's value chunk as a sequence of **frames** of whole
//! values ([`compress_frames`], [`FramedChunk`]; docs/format/sst.md), so a point lookup
//! decompresses only the frame of its value, and a scan the whole chunk.
//!
//! Invariants: a chunk is stored compressed only when that saves at least an eighth of its
//! bytes (otherwise it is stored raw, codec 0), so a reader never pays for a useless
//! decompression; a stored chunk always records its raw length, and decompression that does
//! not produce exactly that many bytes is corruption, never a short or padded value.

use crate::error::{Error, Result};
use std::borrow::Cow;
use std::path::Path;

/// Codec byte of an uncompressed chunk.
pub const CODEC_NONE: u8 = 0;
/// Codec byte of an LZ4 block (lz4_flex's block format, no frame).
pub const CODEC_LZ4: u8 = 1;
/// Codec byte of a zstd frame.
pub const CODEC_ZSTD: u8 = 2;

/// The zstd level `zstd` alone stands for (RocksDB's default is the library's, 3).
pub const DEFAULT_ZSTD_LEVEL: i32 = 3;

/// How values are compressed when written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Compression {
    /// Stored as they are.
    #[default]
    None,
    /// LZ4: fast, modest ratio.
    Lz4,
    /// zstd at the given level (1..=22; negative levels are zstd's fast modes).
    Zstd(i32),
}

impl Compression {
    /// Parses `none`, `lz4`, `zstd` or `zstd:LEVEL`.
    ///
    /// # Errors
    /// `InvalidArgument` naming the accepted forms.
    pub fn parse(s: &str) -> Result<Compression> {
        let bad = || {
            Error::InvalidArgument(format!(
                "compression must be none, lz4, zstd or zstd:LEVEL (LEVEL in -7..=22), got {s:?}"
            ))
        };
        match s {
            "none" => Ok(Compression::None),
            "lz4" => Ok(Compression::Lz4),
            "zstd" => Ok(Compression::Zstd(DEFAULT_ZSTD_LEVEL)),
            _ => {
                let level = s.strip_prefix("zstd:").ok_or_else(bad)?;
                let level: i32 = level.parse().map_err(|_| bad())?;
                if !(-7..=22).contains(&level) || level == 0 {
                    return Err(bad());
                }
                Ok(Compression::Zstd(level))
            }
        }
    }

    /// The codec byte chunks written with this setting carry when compressed.
    pub fn codec(&self) -> u8 {
        match self {
            Compression::None => CODEC_NONE,
            Compression::Lz4 => CODEC_LZ4,
            Compression::Zstd(_) => CODEC_ZSTD,
        }
    }

    /// Compresses `raw` into `out` (cleared first) whatever it saves; returns the codec byte,
    /// or [`CODEC_NONE`] (with `out` empty) when compression is off or fails.
    fn compress_always(&self, raw: &[u8], out: &mut Vec<u8>) -> u8 {
        out.clear();
        match self {
            Compression::None => return CODEC_NONE,
            Compression::Lz4 => {
                out.resize(lz4_flex::block::get_maximum_output_size(raw.len()), 0);
                match lz4_flex::block::compress_into(raw, out) {
                    Ok(n) => out.truncate(n),
                    Err(_) => {
                        out.clear();
                        return CODEC_NONE;
                    }
                }
            }
            Compression::Zstd(level) => match zstd::bulk::compress(raw, *level) {
                Ok(bytes) => *out = bytes,
                Err(_) => {
                    out.clear();
                    return CODEC_NONE;
                }
            },
        }
        self.codec()
    }

    /// Compresses `raw` into `out` (cleared first) and returns the codec byte to record:
    /// `CODEC_NONE` (and `out` left empty) when compression is off, fails, or saves less
    /// than an eighth of the bytes — the caller then stores `raw` itself.
    pub fn compress(&self, raw: &[u8], out: &mut Vec<u8>) -> u8 {
        if raw.is_empty() || self.compress_always(raw, out) == CODEC_NONE {
            out.clear();
            return CODEC_NONE;
        }
        if out.len() > raw.len() - raw.len() / 8 {
            out.clear();
            return CODEC_NONE;
        }
        self.codec()
    }
}

impl std::fmt::Display for Compression {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Compression::None => write!(f, "none"),
            Compression::Lz4 => write!(f, "lz4"),
            Compression::Zstd(level) => write!(f, "zstd:{level}"),
        }
    }
}

/// The raw bytes of a chunk stored as `stored` with `codec`, which must decompress to exactly
/// `raw_len` bytes. An uncompressed chunk is passed through (borrowed stays borrowed).
///
/// # Errors
/// `Corruption` naming `file` and `offset` (where the stored chunk starts) for an unknown
/// codec, a chunk that does not decompress, or one of the wrong raw length.
pub fn decompress<'a>(
    stored: Cow<'a, [u8]>,
    codec: u8,
    raw_len: u32,
    file: &Path,
    offset: u64,
) -> Result<Cow<'a, [u8]>> {
    let corrupt = |why: &str| Error::corruption(file, offset, why);
    let raw_len = raw_len as usize;
    match codec {
        CODEC_NONE => {
            if stored.len() != raw_len {
                return Err(corrupt("uncompressed chunk of the wrong length"));
            }
            Ok(stored)
        }
        CODEC_LZ4 => {
            let mut out = vec![0u8; raw_len];
            match lz4_flex::block::decompress_into(&stored, &mut out) {
                Ok(n) if n == raw_len => Ok(Cow::Owned(out)),
                _ => Err(corrupt("LZ4 chunk does not decompress to its recorded length")),
            }
        }
        CODEC_ZSTD => {
            let mut out = vec![0u8; raw_len];
            match zstd::bulk::decompress_to_buffer(&stored, &mut out) {
                Ok(n) if n == raw_len => Ok(Cow::Owned(out)),
                _ => Err(corrupt("zstd chunk does not decompress to its recorded length")),
            }
        }
        other => Err(corrupt(&format!("unknown compression codec {other}"))),
    }
}

/// Decompresses `stored`, compressed with `codec` (LZ4 or zstd), into exactly `out`: the
/// recorded raw length is `out.len()`. Format 6 data blocks (`sst::block_codec`) are stored
/// this way, one compressed unit per block.
///
/// # Errors
/// `Corruption` naming `file` and `offset` (where the stored bytes start) for another codec,
/// bytes that do not decompress, or a raw length other than `out.len()`.
pub fn decompress_into(
    stored: &[u8],
    codec: u8,
    out: &mut [u8],
    file: &Path,
    offset: u64,
) -> Result<()> {
    let raw_len = out.len();
    let written = match codec {
        CODEC_LZ4 => lz4_flex::block::decompress_into(stored, out).ok(),
        CODEC_ZSTD => zstd::bulk::decompress_to_buffer(stored, out).ok(),
        other => {
            return Err(Error::corruption(
                file,
                offset,
                format!("unknown compression codec {other}"),
            ))
        }
    };
    if written != Some(raw_len) {
        return Err(Error::corruption(
            file,
            offset,
            "compressed block does not decompress to its recorded length",
        ));
    }
    Ok(())
}

/// Raw bytes a frame of an SSTable value chunk covers before the next frame starts (a value
/// never spans frames: a longer value is a frame of its own). Small enough that a point
/// lookup's decompression costs a fraction of the lookup, large enough to compress. 1 KiB
/// frames were measured in session 36: words with half-compressible 100-byte values took
/// 1.3% fewer bytes, but lookups that decompress their frame (words, whose decompressed
/// blocks outgrow a 64 MiB cache) 20–30% more time, so 512 stays
/// (docs/benchmarks/string-keys.md, "Bytes: format 7").
pub const FRAME_BYTES: usize = 512;

/// How wide a framed chunk's frame records are: chosen from the chunk's raw length and the
/// table's format, so no byte records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameRecords {
    /// `raw_end u32 | stored_end u32` (formats 2–6, and any chunk of more than 65535 raw
    /// bytes).
    Wide,
    /// `raw_end u16 | stored_end u16` (format 7, a chunk of at most 65535 raw bytes; its
    /// stored frames are never longer than its raw bytes).
    Narrow,
}

impl FrameRecords {
    /// The records of a chunk of `raw_len` raw bytes in a table whose format allows narrow
    /// ones (`narrow_allowed`: format 7 and later).
    pub fn for_chunk(raw_len: usize, narrow_allowed: bool) -> FrameRecords {
        if narrow_allowed && raw_len <= usize::from(u16::MAX) {
            FrameRecords::Narrow
        } else {
            FrameRecords::Wide
        }
    }

    /// Bytes of each of a record's two fields (`raw_end`, `stored_end`).
    fn field_bytes(self) -> usize {
        match self {
            FrameRecords::Wide => 4,
            FrameRecords::Narrow => 2,
        }
    }
}

/// Compresses `raw` (a block's value chunk, whose values end at `value_ends`, increasing) as
/// frames of whole values of about [`FRAME_BYTES`] each, into `out`: `frames u16`, then per
/// frame `raw_end | stored_end` (stored ends relative to the first frame's byte; 4 bytes
/// each, or 2 when `narrow_allowed` and `raw` is at most 65535 bytes:
/// [`FrameRecords::for_chunk`]), then the frames, each compressed on its own with
/// `compression`. Returns the codec byte, or [`CODEC_NONE`] (and `out` empty) when
/// compression is off or the framed chunk would not save an eighth of `raw` (or its frames
/// would outgrow `raw`): the caller then stores `raw` itself.
pub fn compress_frames(
    compression: Compression,
    raw: &[u8],
    value_ends: &[usize],
    narrow_allowed: bool,
    out: &mut Vec<u8>,
) -> u8 {
    out.clear();
    if compression == Compression::None || raw.is_empty() {
        return CODEC_NONE;
    }
    let mut frame_ends = Vec::new();
    let mut start = 0;
    for &end in value_ends {
        if end.saturating_sub(start) >= FRAME_BYTES {
            frame_ends.push(end);
            start = end;
        }
    }
    if start < raw.len() {
        frame_ends.push(raw.len());
    }
    if frame_ends.len() > usize::from(u16::MAX) || u32::try_from(raw.len()).is_err() {
        return CODEC_NONE;
    }
    let width = FrameRecords::for_chunk(raw.len(), narrow_allowed).field_bytes();
    let table_len = 2 + frame_ends.len() * 2 * width;
    out.resize(table_len, 0);
    out[..2].copy_from_slice(&(frame_ends.len() as u16).to_le_bytes());
    let mut frame = Vec::new();
    let mut raw_start = 0;
    for (i, &raw_end) in frame_ends.iter().enumerate() {
        let piece = &raw[raw_start..raw_end];
        let codec = compression.compress_always(piece, &mut frame);
        if codec == CODEC_NONE {
            out.clear();
            return CODEC_NONE;
        }
        out.extend_from_slice(&frame);
        let stored_end = out.len() - table_len;
        if stored_end > raw.len() {
            // Frames longer than the raw bytes never pay (and would not fit narrow ends).
            out.clear();
            return CODEC_NONE;
        }
        let at = 2 + i * 2 * width;
        out[at..at + width].copy_from_slice(&(raw_end as u32).to_le_bytes()[..width]);
        out[at + width..at + 2 * width]
            .copy_from_slice(&(stored_end as u32).to_le_bytes()[..width]);
        raw_start = raw_end;
    }
    if out.len() > raw.len() - raw.len() / 8 {
        out.clear();
        return CODEC_NONE;
    }
    compression.codec()
}

/// A framed value chunk (see [`compress_frames`]) whose table was checked: which frame holds
/// a raw offset, and the decompression of one frame or of all. Borrows the stored bytes; a
/// point lookup parses and reads it without allocating beyond the value it returns.
#[derive(Debug)]
pub struct FramedChunk<'a> {
    codec: u8,
    /// The frame records, `raw_end | stored_end` each ([`FrameRecords`]).
    table: &'a [u8],
    /// Bytes of each of a record's two fields (4, or 2 for narrow records).
    width: usize,
    /// The frames' stored bytes, back to back.
    frames: &'a [u8],
}

thread_local! {
    /// The frame a point lookup decompresses into, reused by the thread's next lookup.
    static FRAME: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// `(raw_end, stored_end)` of record `i` of a frame table whose fields are `width` bytes
/// (2 or 4; `(0, 0)` past the table).
///
/// Fixed-size loads per width: a copy of a variable length is a `memcpy` call, and the frame
/// search of every compressed lookup reads several records (written that way, lookups on
/// lz4 tables took 10–18% longer).
#[inline]
fn record(table: &[u8], width: usize, i: usize) -> (u32, u32) {
    let rest = table.get(i * 2 * width..).unwrap_or_default();
    if width == 2 {
        match rest.first_chunk::<4>() {
            Some(&[a, b, c, d]) => (
                u32::from(u16::from_le_bytes([a, b])),
                u32::from(u16::from_le_bytes([c, d])),
            ),
            None => (0, 0),
        }
    } else {
        match rest.first_chunk::<8>() {
            Some(&[a, b, c, d, e, f, g, h]) => (
                u32::from_le_bytes([a, b, c, d]),
                u32::from_le_bytes([e, f, g, h]),
            ),
            None => (0, 0),
        }
    }
}

impl<'a> FramedChunk<'a> {
    /// Parses the frame table of `stored`, a chunk of `raw_len` raw bytes stored with
    /// `codec` (not [`CODEC_NONE`]), in a table whose format allows narrow frame records
    /// (`narrow_allowed`: [`FrameRecords::for_chunk`]).
    ///
    /// # Errors
    /// `Corruption` naming `file` and `offset` when the table is short or its ends do not
    /// increase to `raw_len` and to the stored length.
    pub fn parse(
        stored: &'a [u8],
        codec: u8,
        raw_len: u32,
        narrow_allowed: bool,
        file: &Path,
        offset: u64,
    ) -> Result<FramedChunk<'a>> {
        let corrupt = |why: &str| Error::corruption(file, offset, why);
        if codec != CODEC_LZ4 && codec != CODEC_ZSTD {
            return Err(corrupt(&format!("unknown compression codec {codec}")));
        }
        let count = stored
            .first_chunk::<2>()
            .map(|b| usize::from(u16::from_le_bytes(*b)))
            .ok_or_else(|| corrupt("compressed chunk shorter than its frame table"))?;
        let width = FrameRecords::for_chunk(raw_len as usize, narrow_allowed).field_bytes();
        let (table, frames) = stored
            .get(2..)
            .and_then(|rest| rest.split_at_checked(count * 2 * width))
            .ok_or_else(|| corrupt("compressed chunk shorter than its frame table"))?;
        let (mut raw_prev, mut stored_prev) = (0u32, 0u32);
        for i in 0..count {
            let (raw_end, stored_end) = record(table, width, i);
            if raw_end <= raw_prev || stored_end <= stored_prev {
                return Err(corrupt("frame table ends do not increase"));
            }
            (raw_prev, stored_prev) = (raw_end, stored_end);
        }
        if raw_prev != raw_len || stored_prev as usize != frames.len() {
            return Err(corrupt("frame table does not cover the chunk"));
        }
        Ok(FramedChunk {
            codec,
            table,
            width,
            frames,
        })
    }

    fn frames(&self) -> usize {
        self.table.len() / (2 * self.width)
    }

    /// `(raw_end, stored_end)` of frame `i`.
    fn record(&self, i: usize) -> (u32, u32) {
        record(self.table, self.width, i)
    }

    /// The frame holding raw offset `at`: its index and raw start.
    fn frame_of(&self, at: u64) -> Option<(usize, u64)> {
        let (mut lo, mut hi) = (0, self.frames());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if u64::from(self.record(mid).0) <= at {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        let start = match lo {
            0 => 0,
            _ => u64::from(self.record(lo - 1).0),
        };
        (lo < self.frames()).then_some((lo, start))
    }

    /// Decompresses frame `i` into `out` (replacing its contents).
    fn decompress_frame(&self, i: usize, out: &mut Vec<u8>, file: &Path, offset: u64) -> Result<()> {
        let corrupt = |why: &str| Error::corruption(file, offset, why);
        let (raw_start, stored_start) = match i {
            0 => (0, 0),
            _ => self.record(i - 1),
        };
        let (raw_end, stored_end) = self.record(i);
        let frame = self
            .frames
            .get(stored_start as usize..stored_end as usize)
            .ok_or_else(|| corrupt("compressed frame outside its chunk"))?;
        let raw_len = (raw_end - raw_start) as usize;
        out.clear();
        out.resize(raw_len, 0);
        let written = match self.codec {
            CODEC_LZ4 => lz4_flex::block::decompress_into(frame, out).ok(),
            _ => zstd::bulk::decompress_to_buffer(frame, out.as_mut_slice()).ok(),
        };
        if written != Some(raw_len) {
            return Err(corrupt("compressed frame does not decompress to its recorded length"));
        }
        Ok(())
    }

    /// Where the raw bytes `[at, at + len)` of the chunk lie: the index of the frame that
    /// holds them and their range within that frame once decompressed; `None` for an empty
    /// range within the chunk (nothing to decompress).
    ///
    /// # Errors
    /// `Corruption` naming `file` and `offset` when the range is not inside one frame.
    pub fn locate(
        &self,
        at: u64,
        len: u64,
        file: &Path,
        offset: u64,
    ) -> Result<Option<(usize, std::ops::Range<usize>)>> {
        let corrupt = || Error::corruption(file, offset, "value outside its chunk's frames");
        let raw_len = match self.frames() {
            0 => 0,
            n => u64::from(self.record(n - 1).0),
        };
        if len == 0 && at <= raw_len {
            return Ok(None);
        }
        let (i, start) = self.frame_of(at).ok_or_else(corrupt)?;
        let from = usize::try_from(at - start).map_err(|_| corrupt())?;
        let to = from
            .checked_add(usize::try_from(len).map_err(|_| corrupt())?)
            .ok_or_else(corrupt)?;
        let (frame_start, frame_end) = match i {
            0 => (0, self.record(0).0),
            _ => (self.record(i - 1).0, self.record(i).0),
        };
        if to > (frame_end - frame_start) as usize {
            return Err(corrupt());
        }
        Ok(Some((i, from..to)))
    }

    /// The raw bytes `[at, at + len)` of the chunk, decompressing only the frame that holds
    /// them (into a buffer the thread reuses).
    ///
    /// # Errors
    /// `Corruption` naming `file` and `offset` when the range is not inside one frame or the
    /// frame does not decompress to its recorded length.
    pub fn read(&self, at: u64, len: u64, file: &Path, offset: u64) -> Result<Vec<u8>> {
        let Some((i, range)) = self.locate(at, len, file, offset)? else {
            return Ok(Vec::new());
        };
        FRAME.with(|frame| {
            let mut frame = frame.borrow_mut();
            self.decompress_frame(i, &mut frame, file, offset)?;
            frame.get(range).map(<[u8]>::to_vec).ok_or_else(|| {
                Error::corruption(file, offset, "value outside its chunk's frames")
            })
        })
    }

    /// Every raw byte of the chunk, appended to `out`.
    ///
    /// # Errors
    /// As [`FramedChunk::read`].
    pub fn read_all(&self, out: &mut Vec<u8>, file: &Path, offset: u64) -> Result<()> {
        let mut frame = Vec::new();
        for i in 0..self.frames() {
            self.decompress_frame(i, &mut frame, file, offset)?;
            out.extend_from_slice(&frame);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compressible(n: usize) -> Vec<u8> {
        (0..n).map(|i| b"augur-"[i % 6] ^ (i / 97) as u8).collect()
    }

    #[test]
    fn every_codec_round_trips_and_checks_its_length() {
        let raw = compressible(10_000);
        let p = Path::new("t.sst");
        for c in [Compression::Lz4, Compression::Zstd(3), Compression::Zstd(-1)] {
            let mut out = Vec::new();
            let codec = c.compress(&raw, &mut out);
            assert_eq!(codec, c.codec(), "{c}");
            assert!(out.len() < raw.len() / 2);
            let got = decompress(Cow::Borrowed(&out), codec, raw.len() as u32, p, 7).unwrap();
            assert_eq!(&got[..], &raw[..]);
            for wrong in [raw.len() as u32 - 1, raw.len() as u32 + 1] {
                let err = decompress(Cow::Borrowed(&out), codec, wrong, p, 7).unwrap_err();
                assert!(err.is_corruption(), "{err}");
            }
            // Damage anywhere is an error or (for a lucky byte) the same length, never a panic.
            for i in 0..out.len() {
                let mut bad = out.clone();
                bad[i] ^= 0x5a;
                let _ = decompress(Cow::Owned(bad), codec, raw.len() as u32, p, 7);
            }
        }
    }

    #[test]
    fn incompressible_and_empty_are_stored_raw() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let noise: Vec<u8> = (0..4096)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 32) as u8
            })
            .collect();
        let mut out = Vec::new();
        assert_eq!(Compression::Lz4.compress(&noise, &mut out), CODEC_NONE);
        assert!(out.is_empty());
        assert_eq!(Compression::Zstd(3).compress(&[], &mut out), CODEC_NONE);
        assert_eq!(Compression::None.compress(&compressible(999), &mut out), CODEC_NONE);
        let p = Path::new("t");
        assert!(decompress(Cow::Borrowed(&[1, 2][..]), 9, 2, p, 0).is_err());
        assert!(decompress(Cow::Borrowed(&[1, 2][..]), CODEC_NONE, 3, p, 0).is_err());
    }

    /// Framed chunks: every value reads back from its own frame, the whole chunk reads back,
    /// and a damaged table or frame is corruption, never a panic.
    #[test]
    fn framed_chunks_round_trip_and_check_their_table() {
        let p = Path::new("t.sst");
        for sizes in [vec![10usize; 300], vec![3000, 5, 5, 2000], vec![700; 9], vec![1]] {
            let mut raw = Vec::new();
            let mut ends = Vec::new();
            for (i, n) in sizes.iter().enumerate() {
                raw.extend(compressible(*n).iter().map(|b| b ^ (i % 3) as u8));
                ends.push(raw.len());
            }
            for (c, narrow) in [
                (Compression::Lz4, false),
                (Compression::Lz4, true),
                (Compression::Zstd(1), true),
            ] {
                let mut out = Vec::new();
                let codec = compress_frames(c, &raw, &ends, narrow, &mut out);
                if raw.len() < 8 {
                    assert_eq!(codec, CODEC_NONE);
                    continue;
                }
                assert_eq!(codec, c.codec(), "{c} {sizes:?}");
                let chunk =
                    FramedChunk::parse(&out, codec, raw.len() as u32, narrow, p, 9).unwrap();
                // Narrow records (every chunk here is below 64 KiB) take half the table, and
                // read as wide ones the table does not cover the chunk.
                assert_eq!(chunk.width, if narrow { 2 } else { 4 });
                if narrow {
                    assert!(FramedChunk::parse(&out, codec, raw.len() as u32, false, p, 9).is_err());
                }
                let mut start = 0;
                for &end in &ends {
                    let (at, len) = (start as u64, (end - start) as u64);
                    let got = chunk.read(at, len, p, 9).unwrap();
                    assert_eq!(got, &raw[start..end]);
                    // The located frame holds the value whole.
                    let (i, range) = chunk.locate(at, len, p, 9).unwrap().unwrap();
                    assert!(i < chunk.frames() && range.len() == end - start);
                    start = end;
                }
                assert!(chunk.locate(raw.len() as u64, 0, p, 9).unwrap().is_none());
                assert!(chunk.locate(raw.len() as u64, 1, p, 9).is_err());
                if ends.len() > 1 {
                    // A range across two frames is not a value of this chunk.
                    let across = chunk.locate(0, raw.len() as u64, p, 9);
                    assert!(chunk.frames() == 1 || across.is_err());
                }
                let mut all = Vec::new();
                chunk.read_all(&mut all, p, 9).unwrap();
                assert_eq!(all, raw);
                assert!(
                    FramedChunk::parse(&out, codec, raw.len() as u32 + 1, narrow, p, 9).is_err()
                );
                for i in 0..out.len().min(64) {
                    let mut bad = out.clone();
                    bad[i] ^= 0x41;
                    if let Ok(chunk) =
                        FramedChunk::parse(&bad, codec, raw.len() as u32, narrow, p, 9)
                    {
                        let mut all = Vec::new();
                        if chunk.read_all(&mut all, p, 9).is_ok() {
                            assert_eq!(all.len(), raw.len());
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn parse_accepts_the_documented_forms() {
        assert_eq!(Compression::parse("none").unwrap(), Compression::None);
        assert_eq!(Compression::parse("lz4").unwrap(), Compression::Lz4);
        assert_eq!(Compression::parse("zstd").unwrap(), Compression::Zstd(3));
        assert_eq!(Compression::parse("zstd:19").unwrap(), Compression::Zstd(19));
        for bad in ["", "LZ4", "zstd:", "zstd:0", "zstd:23", "zstd:x", "snappy"] {
            assert!(Compression::parse(bad).is_err(), "{bad}");
        }
        for c in [Compression::None, Compression::Lz4, Compression::Zstd(7)] {
            assert_eq!(Compression::parse(&c.to_string()).unwrap(), c);
        }
    }
}
