//! Value compression: the codecs a database may store values with ([`Compression`], the
//! `--compression` option) and the decoder every reader of a compressed chunk goes through
//! ([`decompress`]). SSTables compress each data block's value chunk (docs/format/sst.md);
//! the value log compresses per record (docs/format/vlog.md).
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

    /// Compresses `raw` into `out` (cleared first) and returns the codec byte to record:
    /// [`CODEC_NONE`] (and `out` left empty) when compression is off, fails, or saves less
    /// than an eighth of the bytes — the caller then stores `raw` itself.
    pub fn compress(&self, raw: &[u8], out: &mut Vec<u8>) -> u8 {
        out.clear();
        if raw.is_empty() {
            return CODEC_NONE;
        }
        match self {
            Compression::None => return CODEC_NONE,
            Compression::Lz4 => {
                out.resize(lz4_flex::block::get_maximum_output_size(raw.len()), 0);
                match lz4_flex::block::compress_into(raw, out) {
                    Ok(n) => out.truncate(n),
                    Err(_) => out.clear(),
                }
            }
            Compression::Zstd(level) => match zstd::bulk::compress(raw, *level) {
                Ok(bytes) => *out = bytes,
                Err(_) => out.clear(),
            },
        }
        if out.is_empty() || out.len() > raw.len() - raw.len() / 8 {
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
