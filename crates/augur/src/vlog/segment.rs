//! Value-log segment files (WiscKey §3.2): one append-only file `NNNNNN.vlog` per segment.
//!
//! Where it sits: on the write path a large value is appended here before its WAL record
//! (which holds the returned [`ValuePointer`]); on the read path a pointer found in the LSM is
//! resolved with [`SegmentReader::read`]; compactions relocating values copy them with
//! [`SegmentReader::read_stored`] and [`SegmentWriter::append_stored`]; `verify` walks a segment with
//! [`SegmentReader::entries`].
//!
//! Format (specified in `docs/format/vlog.md`): a 24-byte header (magic, format version,
//! segment id, masked CRC32C of the three), then entries
//! `[crc u32][codec u8 << 24 | key_len u24][value_len u32][key][value]` with the CRC over
//! lengths, key and stored value. A compressed value (format 2, codec ≠ 0) is stored as
//! `raw_len u32 | compressed bytes` and returned decompressed. A pointer's `offset` is the
//! entry's first byte and its `len` the stored value length (what the entry takes on disk).
//!
//! Invariants: a writer only appends; the header is synced at creation; each entry carries
//! its key (checked against the pointer's on every read); a reader never trusts a length field before checking it
//! against the file's length (no allocation larger than the file), and never panics on bad
//! bytes.

use super::ValuePointer;
use crate::checksum::crc_parts;
use crate::coding::{get_u32, get_u64};
use crate::compression::{self, Compression, CODEC_NONE};
use crate::error::{Error, Result};
use crate::cache::FileReads;
use crate::fs::{FileSystem, RandomAccessFile, WritableFile};
use crate::key::MAX_KEY_LEN;
use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

mod batch;
mod chain;
mod verified;
mod walk;

pub use batch::{ValueRequest, ValueSink};
pub use walk::{EntryWalk, WalkEnd, WalkStep};

/// Magic bytes at the start of every value-log segment.
pub const SEGMENT_MAGIC: [u8; 8] = *b"AUGURVLG";

/// Segment format version written by this build (2: values may be compressed).
pub const SEGMENT_FORMAT_VERSION: u32 = 2;

/// The oldest segment format version this build reads.
pub const MIN_SEGMENT_FORMAT_VERSION: u32 = 1;

/// Bits of the key-length field below the codec byte.
const KEY_LEN_BITS: u32 = 24;

/// Segment header: magic (8) + version (4) + segment id (8) + masked CRC32C of those (4).
pub const SEGMENT_HEADER_LEN: usize = 24;

/// Entry header: masked CRC32C (4) + key length (4) + value length (4).
pub const ENTRY_HEADER_LEN: usize = 12;

/// One value-log entry as yielded by [`SegmentReader::entries`]: the pointer to it, its key
/// and its value.
pub type SegmentEntry = (ValuePointer, Vec<u8>, Vec<u8>);

/// A value as an entry stores it: its codec (0 raw, 1 LZ4, 2 zstd) and its stored bytes
/// (`raw_len u32 | compressed bytes` when compressed). Relocation copies values in this form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredValue {
    /// The entry's codec.
    pub codec: u8,
    /// The stored bytes (what the entry's checksum covers after the key).
    pub bytes: Vec<u8>,
}

/// File name of segment `id`: the id zero-padded to at least 6 digits, then `.vlog`.
pub fn segment_file_name(id: u64) -> String {
    format!("{id:06}.vlog")
}

/// The segment id named by `name`, if it is exactly a name [`segment_file_name`] produces.
pub fn parse_segment_file_name(name: &str) -> Option<u64> {
    let digits = name.strip_suffix(".vlog")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let id: u64 = digits.parse().ok()?;
    (segment_file_name(id) == name).then_some(id)
}

fn encode_header(id: u64) -> [u8; SEGMENT_HEADER_LEN] {
    let mut h = [0u8; SEGMENT_HEADER_LEN];
    h[..8].copy_from_slice(&SEGMENT_MAGIC);
    h[8..12].copy_from_slice(&SEGMENT_FORMAT_VERSION.to_le_bytes());
    h[12..20].copy_from_slice(&id.to_le_bytes());
    let crc = crc_parts(&[&h[..20]]);
    h[20..].copy_from_slice(&crc.to_le_bytes());
    h
}

/// Appends entries to one segment. Not thread-safe by itself; [`super::ValueLog`] serializes.
pub struct SegmentWriter {
    file: Box<dyn WritableFile>,
    id: u64,
    path: PathBuf,
    /// Reused for compressed values.
    scratch: Vec<u8>,
}

impl std::fmt::Debug for SegmentWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SegmentWriter")
            .field("id", &self.id)
            .field("path", &self.path)
            .field("len", &self.file.len())
            .finish()
    }
}

impl SegmentWriter {
    /// Creates (or truncates) segment `id` in `dir`, writes its header and syncs it. The
    /// caller syncs `dir` to make the file's name durable.
    ///
    /// # Errors
    /// `Io` if the file cannot be created, written or synced.
    pub fn create(fs: &dyn FileSystem, dir: &Path, id: u64) -> Result<SegmentWriter> {
        let path = dir.join(segment_file_name(id));
        let mut file = fs.create(&path)?;
        file.append(&encode_header(id))?;
        file.sync()?;
        Ok(SegmentWriter {
            file,
            id,
            path,
            scratch: Vec::new(),
        })
    }

    /// Opens the existing segment `id` in `dir` to append after its last byte, truncating
    /// nothing. REQUIRES: the file holds a valid header of the current format version and
    /// ends exactly after a complete entry (checked by the caller with
    /// [`SegmentReader::clean_end`]), so what follows extends a valid chain of entries.
    ///
    /// # Errors
    /// `Io` if the file cannot be opened.
    pub fn reopen(fs: &dyn FileSystem, dir: &Path, id: u64) -> Result<SegmentWriter> {
        let path = dir.join(segment_file_name(id));
        let file = fs.open_append(&path)?;
        Ok(SegmentWriter {
            file,
            id,
            path,
            scratch: Vec::new(),
        })
    }

    /// Appends the entry `(key, value)`, the value compressed with `compression` when that
    /// saves an eighth of it, and returns the pointer to it. The bytes may stay buffered until
    /// [`Self::flush`] (visible to readers) or [`Self::sync`] (durable).
    ///
    /// # Errors
    /// `InvalidArgument` if the key is longer than [`MAX_KEY_LEN`] or the value longer than
    /// `u32::MAX`; `Io` on a write failure (the segment's tail is then unknown: seal it).
    pub fn append(
        &mut self,
        key: &[u8],
        value: &[u8],
        compression: Compression,
    ) -> Result<ValuePointer> {
        if key.len() > MAX_KEY_LEN {
            return Err(Error::InvalidArgument(format!(
                "key of {} bytes exceeds the {MAX_KEY_LEN}-byte limit",
                key.len()
            )));
        }
        let value_len = u32::try_from(value.len()).map_err(|_| {
            Error::InvalidArgument(format!(
                "value of {} bytes exceeds the 4 GiB value-log entry limit",
                value.len()
            ))
        })?;
        let mut compressed = std::mem::take(&mut self.scratch);
        let codec = compression.compress(value, &mut compressed);
        let stored_prefix = value_len.to_le_bytes();
        let stored: [&[u8]; 2] = if codec == CODEC_NONE {
            [&[], value]
        } else {
            [&stored_prefix, &compressed]
        };
        let written = self.append_parts(key, codec, stored);
        self.scratch = compressed;
        written
    }

    /// Appends an entry whose value is already in its stored form (`stored.codec`, and for a
    /// compressed value `raw_len u32 | compressed bytes`), as [`SegmentReader::read_stored`]
    /// returns it: compaction relocates values this way without decompressing them. The
    /// returned pointer has the same `len` as the entry the value came from.
    ///
    /// # Errors
    /// `InvalidArgument` for an oversized key or stored value or an unknown codec; `Io` on a
    /// write failure.
    pub fn append_stored(&mut self, key: &[u8], stored: &StoredValue) -> Result<ValuePointer> {
        if key.len() > MAX_KEY_LEN {
            return Err(Error::InvalidArgument(format!(
                "key of {} bytes exceeds the {MAX_KEY_LEN}-byte limit",
                key.len()
            )));
        }
        if u32::try_from(stored.bytes.len()).is_err() || stored.codec > compression::CODEC_ZSTD {
            return Err(Error::InvalidArgument(format!(
                "stored value of {} bytes with codec {}",
                stored.bytes.len(),
                stored.codec
            )));
        }
        self.append_parts(key, stored.codec, [&[], &stored.bytes])
    }

    /// Writes one entry whose stored value is the concatenation of `stored`. REQUIRES: the
    /// key and the stored value fit their length fields (checked by the callers).
    fn append_parts(&mut self, key: &[u8], codec: u8, stored: [&[u8]; 2]) -> Result<ValuePointer> {
        let stored_len = (stored[0].len() + stored[1].len()) as u32;
        let mut header = [0u8; ENTRY_HEADER_LEN];
        let key_field = key.len() as u32 | u32::from(codec) << KEY_LEN_BITS;
        header[4..8].copy_from_slice(&key_field.to_le_bytes());
        header[8..12].copy_from_slice(&stored_len.to_le_bytes());
        let crc = crc_parts(&[&header[4..], key, stored[0], stored[1]]);
        header[..4].copy_from_slice(&crc.to_le_bytes());

        let ptr = ValuePointer {
            segment: self.id,
            offset: self.file.len(),
            len: stored_len,
        };
        self.file
            .append(&header)
            .and_then(|()| self.file.append(key))
            .and_then(|()| self.file.append(stored[0]))
            .and_then(|()| self.file.append(stored[1]))
            .map(|()| ptr)
    }

    /// Hands buffered entries to the operating system, so readers see them.
    ///
    /// # Errors
    /// `Io` on a write failure.
    pub fn flush(&mut self) -> Result<()> {
        self.file.flush()
    }

    /// Flushes and makes every appended entry durable.
    ///
    /// # Errors
    /// `Io` on a write or fsync failure.
    pub fn sync(&mut self) -> Result<()> {
        self.file.sync()
    }

    /// Bytes in the segment so far, header and buffered entries included.
    pub fn len(&self) -> u64 {
        self.file.len()
    }

    /// True when no entry was appended (the file holds only its header).
    pub fn is_empty(&self) -> bool {
        self.file.len() <= SEGMENT_HEADER_LEN as u64
    }

    /// The segment id.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The segment file's path.
    #[cfg(test)]
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The decoded entry at some offset of a segment, or why there is none.
enum Parsed<'a> {
    /// A complete entry with a valid checksum; `next` is the following entry's offset.
    /// `value` is the value as stored (see [`SegmentReader::decoded`]).
    Valid {
        key: Cow<'a, [u8]>,
        value: Cow<'a, [u8]>,
        codec: u8,
        next: u64,
    },
    /// The file ends inside the entry (or its lengths point past the end).
    Incomplete,
    /// The entry header is all zeros.
    Zero,
    /// The entry is complete but fails a check; `next` is where its lengths say it ends.
    Bad { reason: String, next: u64 },
}

/// The codec byte and key length of an entry's key-length field.
fn split_key_field(field: u32) -> (u8, u32) {
    ((field >> KEY_LEN_BITS) as u8, field & ((1 << KEY_LEN_BITS) - 1))
}

/// Bytes the entry `ptr` points at takes in its segment (header, key, value) when it was
/// stored under a key of `key_len` bytes: what it adds to its segment's garbage once nothing
/// points at it.
#[must_use]
pub fn entry_bytes(key_len: usize, ptr: &ValuePointer) -> u64 {
    (ENTRY_HEADER_LEN + key_len) as u64 + u64::from(ptr.len)
}

/// Bytes of the whole entry `ptr` points at when it was stored under `key`, or `None` when
/// it is too large to read without first checking its header against the file length.
fn known_entry_len(ptr: &ValuePointer, key: &[u8]) -> Option<usize> {
    const MAX_BLIND_READ_BYTES: usize = 1 << 20;
    let total = ENTRY_HEADER_LEN + key.len() + ptr.len as usize;
    (total <= MAX_BLIND_READ_BYTES && ptr.offset <= i64::MAX as u64).then_some(total)
}

/// The codec and stored value inside `entry` (the whole entry's bytes: header, key, value)
/// when its lengths match `key` and the pointer, it holds `key`, and its checksum is right;
/// `None` otherwise (the caller then takes the checked slow path, which names the problem).
fn value_of_entry<'a>(entry: &'a [u8], ptr: &ValuePointer, key: &[u8]) -> Option<(u8, &'a [u8])> {
    value_of_entry_with(entry, ptr, key, true)
}

/// [`value_of_entry`], with the checksum comparison only when `check_crc` (an entry already
/// verified in this mapping; its lengths and key are still checked).
fn value_of_entry_with<'a>(
    entry: &'a [u8],
    ptr: &ValuePointer,
    key: &[u8],
    check_crc: bool,
) -> Option<(u8, &'a [u8])> {
    let (crc, key_field, value_len) =
        (get_u32(entry, 0)?, get_u32(entry, 4)?, get_u32(entry, 8)?);
    let (codec, key_len) = split_key_field(key_field);
    let body = entry.get(ENTRY_HEADER_LEN..)?;
    if key_len as usize != key.len() || value_len != ptr.len || !body.starts_with(key) {
        return None;
    }
    let lens = entry.get(4..ENTRY_HEADER_LEN)?;
    let value = body.get(key.len()..)?;
    let crc_ok = || crc_parts(&[lens, key, value]) == crc;
    (value.len() == ptr.len as usize && (!check_crc || crc_ok())).then_some((codec, value))
}

/// Reads entries of one segment. `Send + Sync`: readers are shared by all lookups.
pub struct SegmentReader {
    file: Arc<dyn RandomAccessFile>,
    /// The file's mapping when it is mapped (scans borrow values from it).
    mapped: Option<bytes::Bytes>,
    /// Entries of the mapping whose checksum batch reads already verified.
    verified: std::sync::OnceLock<verified::VerifiedEntries>,
    id: u64,
    path: PathBuf,
    /// The segment's format version (format 1 has no compressed values).
    version: u32,
}

impl std::fmt::Debug for SegmentReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SegmentReader")
            .field("id", &self.id)
            .field("path", &self.path)
            .finish()
    }
}

impl SegmentReader {
    /// Opens segment `id` in `dir` and checks its header. Use `ReadMode::Pread` for a
    /// segment that is still being appended to.
    ///
    /// # Errors
    /// `Io` if the file cannot be opened; `Corruption` (offset 0) for a short or damaged
    /// header or one naming another segment id; `UnsupportedVersion` for another format
    /// version.
    pub fn open(
        fs: &dyn FileSystem,
        dir: &Path,
        id: u64,
        reads: impl Into<FileReads>,
    ) -> Result<Self> {
        Self::open_file(fs, &dir.join(segment_file_name(id)), Some(id), reads)
    }

    /// Opens the segment file at `path` and checks its header, which must name segment
    /// `id` when one is given; without one the segment is the one its header names
    /// (inspection tools read segment files under any name).
    ///
    /// # Errors
    /// As [`Self::open`].
    pub fn open_file(
        fs: &dyn FileSystem,
        path: &Path,
        id: Option<u64>,
        reads: impl Into<FileReads>,
    ) -> Result<Self> {
        let file = reads.into().open_unbounded(fs, path)?;
        let reader = SegmentReader {
            mapped: file.mapped(),
            verified: std::sync::OnceLock::new(),
            file,
            id: id.unwrap_or_default(),
            path: path.to_path_buf(),
            version: 0,
        };
        let (version, stored_id) = reader.check_header(id.is_some())?;
        Ok(SegmentReader {
            version,
            id: stored_id,
            ..reader
        })
    }

    /// Checks the header (and, when `check_id`, that it names this segment) and returns the
    /// segment's format version and the id it names.
    fn check_header(&self, check_id: bool) -> Result<(u32, u64)> {
        let corrupt = |reason: &str| Error::corruption(&self.path, 0, reason);
        let header = self
            .read_at(0, SEGMENT_HEADER_LEN)?
            .ok_or_else(|| corrupt("file is shorter than the segment header"))?;
        if header.get(..8) != Some(&SEGMENT_MAGIC[..]) {
            return Err(corrupt("bad magic (not an Augur value-log segment)"));
        }
        let body = header.get(..20).unwrap_or_default();
        if get_u32(&header, 20) != Some(crc_parts(&[body])) {
            return Err(corrupt("segment header checksum mismatch"));
        }
        let version = get_u32(&header, 8).unwrap_or_default();
        if !(MIN_SEGMENT_FORMAT_VERSION..=SEGMENT_FORMAT_VERSION).contains(&version) {
            return Err(Error::UnsupportedVersion {
                file: self.path.clone(),
                version,
            });
        }
        let stored_id = get_u64(&header, 12).unwrap_or_default();
        if check_id && stored_id != self.id {
            return Err(corrupt(&format!(
                "header names segment {stored_id}, file name says {}",
                self.id
            )));
        }
        Ok((version, stored_id))
    }

    /// The value of an entry stored as `stored` with `codec` (at `offset`): decompressed when
    /// compressed (`raw_len u32 | compressed bytes`).
    ///
    /// # Errors
    /// `Corruption` naming this file and `offset` for a codec the segment's version does not
    /// have, or a compressed value that does not decompress to its recorded length.
    fn decoded<'a>(&self, codec: u8, stored: Cow<'a, [u8]>, offset: u64) -> Result<Cow<'a, [u8]>> {
        if codec == CODEC_NONE {
            return Ok(stored);
        }
        let corrupt = |why: &str| Error::corruption(&self.path, offset, why);
        if self.version < 2 {
            return Err(corrupt("compressed value in a format-1 segment"));
        }
        let raw_len = get_u32(&stored, 0).ok_or_else(|| corrupt("compressed value too short"))?;
        let body = Cow::Borrowed(stored.get(4..).unwrap_or_default());
        compression::decompress(body, codec, raw_len, &self.path, offset)
            .map(|v| Cow::Owned(v.into_owned()))
    }

    /// The segment id.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The segment's format version (from its header).
    pub fn format_version(&self) -> u32 {
        self.version
    }

    /// Current size of the segment file in bytes (what readers can see).
    ///
    /// # Errors
    /// `Io` if the size cannot be read.
    pub fn file_len(&self) -> Result<u64> {
        self.file.len()
    }

    /// `len` bytes at `offset`, or `None` if the file ends before them. REQUIRES: `len` was
    /// checked against the file length (it is allocated up front for pread files).
    fn read_at(&self, offset: u64, len: usize) -> Result<Option<Cow<'_, [u8]>>> {
        if let Some(data) = self.file.as_slice() {
            let bytes = usize::try_from(offset)
                .ok()
                .and_then(|start| data.get(start..start.checked_add(len)?));
            return Ok(bytes.map(Cow::Borrowed));
        }
        let mut buf = vec![0u8; len];
        match self.file.read_exact_at(offset, &mut buf) {
            Ok(()) => Ok(Some(Cow::Owned(buf))),
            Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::UnexpectedEof => {
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// Hot path of a value read: with the key known, the entry's whole length is known, so it
    /// is read with one positional read and no `fstat`. Returns `None` when the entry cannot
    /// be taken this way (too large to read blindly, short, or not matching), and the caller
    /// falls back to the checked slow path, which names the exact problem.
    fn read_known_entry(&self, ptr: &ValuePointer, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let Some(total) = known_entry_len(ptr, key) else {
            return Ok(None);
        };
        let Some(entry) = self.read_at(ptr.offset, total)? else {
            return Ok(None);
        };
        match value_of_entry(&entry, ptr, key) {
            Some((codec, stored)) => self
                .decoded(codec, Cow::Borrowed(stored), ptr.offset)
                .map(|v| Some(v.into_owned())),
            None => Ok(None),
        }
    }

    /// Decodes the entry at `offset` of a file of `file_len` bytes; the lengths are checked
    /// against `file_len` before anything is allocated. `expected_value_len`, when given (a
    /// pointer's `len`), is checked before the body is read.
    fn parse_entry(
        &self,
        offset: u64,
        file_len: u64,
        expected_value_len: Option<u32>,
    ) -> Result<Parsed<'_>> {
        let header_end = offset.checked_add(ENTRY_HEADER_LEN as u64);
        if header_end.is_none_or(|end| end > file_len) {
            return Ok(Parsed::Incomplete);
        }
        let Some(header) = self.read_at(offset, ENTRY_HEADER_LEN)? else {
            return Ok(Parsed::Incomplete);
        };
        let (Some(crc), Some(key_field), Some(value_len)) = (
            get_u32(&header, 0),
            get_u32(&header, 4),
            get_u32(&header, 8),
        ) else {
            return Ok(Parsed::Incomplete);
        };
        if crc == 0 && key_field == 0 && value_len == 0 {
            return Ok(Parsed::Zero);
        }
        let (codec, key_len) = if self.version >= 2 {
            split_key_field(key_field)
        } else {
            (CODEC_NONE, key_field)
        };
        let body_len = u64::from(key_len) + u64::from(value_len);
        let next = offset
            .saturating_add(ENTRY_HEADER_LEN as u64)
            .saturating_add(body_len);
        if next > file_len {
            return Ok(Parsed::Incomplete);
        }
        if key_len as usize > MAX_KEY_LEN {
            let reason = format!("key length {key_len} exceeds the {MAX_KEY_LEN}-byte limit");
            return Ok(Parsed::Bad { reason, next });
        }
        if codec > compression::CODEC_ZSTD {
            let reason = format!("unknown compression codec {codec}");
            return Ok(Parsed::Bad { reason, next });
        }
        if let Some(expected) = expected_value_len {
            if expected != value_len {
                let reason =
                    format!("value length is {value_len}, the value pointer says {expected}");
                return Ok(Parsed::Bad { reason, next });
            }
        }
        let body_start = offset + ENTRY_HEADER_LEN as u64;
        // Bounded by the file length (checked above).
        let Some(body) = self.read_at(body_start, body_len as usize)? else {
            return Ok(Parsed::Incomplete);
        };
        let Some((key, value)) = body.split_at_checked(key_len as usize) else {
            return Ok(Parsed::Incomplete);
        };
        let lens = header.get(4..).unwrap_or_default();
        if crc_parts(&[lens, key, value]) != crc {
            let reason = "entry checksum mismatch".to_string();
            return Ok(Parsed::Bad { reason, next });
        }
        let (key, value) = match body {
            Cow::Borrowed(b) => {
                let (k, v) = b.split_at(key_len as usize);
                (Cow::Borrowed(k), Cow::Borrowed(v))
            }
            Cow::Owned(mut b) => {
                let v = b.split_off(key_len as usize);
                (Cow::Owned(b), Cow::Owned(v))
            }
        };
        Ok(Parsed::Valid {
            key,
            value,
            codec,
            next,
        })
    }

    /// Reads and verifies the entry `ptr` points at and returns its value. Checks that the
    /// entry's value length equals `ptr.len` and, when `expected_key` is given, that the
    /// entry's key equals it. Bytes appended by a writer are visible once it flushed.
    ///
    /// # Errors
    /// `InvalidArgument` if `ptr` names another segment; `Corruption` naming this file and
    /// `ptr.offset` if the entry is incomplete, fails its checksum or does not match.
    pub fn read(&self, ptr: &ValuePointer, expected_key: Option<&[u8]>) -> Result<Vec<u8>> {
        if ptr.segment != self.id {
            return Err(Error::InvalidArgument(format!(
                "pointer into segment {} passed to the reader of segment {}",
                ptr.segment, self.id
            )));
        }
        let corrupt = |reason: String| Error::corruption(&self.path, ptr.offset, reason);
        if ptr.offset < SEGMENT_HEADER_LEN as u64 {
            return Err(corrupt(
                "value pointer points into the segment header".into(),
            ));
        }
        if let Some(key) = expected_key {
            if let Some(value) = self.read_known_entry(ptr, key)? {
                return Ok(value);
            }
        }
        // The file length bounds every length field before anything is allocated (one
        // fstat for pread files; free for mmap). It also keeps absurd offsets from reaching
        // the OS, which rejects them with EINVAL rather than EOF.
        let file_len = self.file.len()?;
        match self.parse_entry(ptr.offset, file_len, Some(ptr.len))? {
            Parsed::Valid {
                key, value, codec, ..
            } => {
                if expected_key.is_some_and(|k| k != &*key) {
                    return Err(corrupt(
                        "entry's key differs from the key the pointer was stored under".into(),
                    ));
                }
                Ok(self.decoded(codec, value, ptr.offset)?.into_owned())
            }
            Parsed::Incomplete => Err(corrupt(
                "value pointer points past the end of the segment".into(),
            )),
            Parsed::Zero => Err(corrupt("value pointer points at zero bytes".into())),
            Parsed::Bad { reason, .. } => Err(corrupt(reason)),
        }
    }

    /// Reads and verifies the entry `ptr` points at, which must hold `key`, and returns its
    /// value as stored (not decompressed): what [`SegmentWriter::append_stored`] copies.
    ///
    /// # Errors
    /// As [`Self::read`] with an expected key.
    pub fn read_stored(&self, ptr: &ValuePointer, key: &[u8]) -> Result<StoredValue> {
        if ptr.segment != self.id {
            return Err(Error::InvalidArgument(format!(
                "pointer into segment {} passed to the reader of segment {}",
                ptr.segment, self.id
            )));
        }
        let corrupt = |reason: &str| Error::corruption(&self.path, ptr.offset, reason);
        if ptr.offset < SEGMENT_HEADER_LEN as u64 {
            return Err(corrupt("value pointer points into the segment header"));
        }
        if let Some(total) = known_entry_len(ptr, key) {
            if let Some(entry) = self.read_at(ptr.offset, total)? {
                if let Some((codec, stored)) = value_of_entry(&entry, ptr, key) {
                    return Ok(StoredValue {
                        codec,
                        bytes: stored.to_vec(),
                    });
                }
            }
        }
        let file_len = self.file.len()?;
        match self.parse_entry(ptr.offset, file_len, Some(ptr.len))? {
            Parsed::Valid {
                key: stored_key,
                value,
                codec,
                ..
            } if *stored_key == *key => Ok(StoredValue {
                codec,
                bytes: value.into_owned(),
            }),
            Parsed::Valid { .. } => Err(corrupt(
                "entry's key differs from the key the pointer was stored under",
            )),
            Parsed::Incomplete => Err(corrupt("value pointer points past the end of the segment")),
            Parsed::Zero => Err(corrupt("value pointer points at zero bytes")),
            Parsed::Bad { reason, .. } => Err(corrupt(&reason)),
        }
    }

    /// Iterates all complete, valid entries from the start as `(pointer, key, value)`, up to
    /// the file length seen when the iteration starts.
    ///
    /// Torn-tail policy (docs/format/vlog.md): an entry that runs past the end of the file,
    /// an all-zero region that extends to the end of the file, or a damaged entry that ends
    /// exactly at the end of the file ends the iteration cleanly (a crash during an append).
    /// Any other bad entry yields one `Corruption` error naming its offset, then the
    /// iteration ends: GC must never mistake live entries behind damage for a torn tail.
    pub fn entries(&self) -> impl Iterator<Item = Result<SegmentEntry>> + '_ {
        EntryIter {
            reader: self,
            offset: SEGMENT_HEADER_LEN as u64,
            file_len: None,
            done: false,
        }
    }

    /// True if every byte from `offset` to `file_len` is zero.
    fn zeros_to_end(&self, offset: u64, file_len: u64) -> Result<bool> {
        const CHUNK: u64 = 64 * 1024;
        let mut pos = offset;
        while pos < file_len {
            let n = (file_len - pos).min(CHUNK) as usize;
            match self.read_at(pos, n)? {
                Some(chunk) if chunk.iter().all(|b| *b == 0) => pos += n as u64,
                _ => return Ok(false),
            }
        }
        Ok(true)
    }
}

/// The iterator behind [`SegmentReader::entries`].
struct EntryIter<'a> {
    reader: &'a SegmentReader,
    offset: u64,
    /// File length, read on the first call to `next`.
    file_len: Option<u64>,
    done: bool,
}

impl EntryIter<'_> {
    fn step(&mut self) -> Result<Option<SegmentEntry>> {
        let file_len = match self.file_len {
            Some(l) => l,
            None => *self.file_len.insert(self.reader.file_len()?),
        };
        if self.offset >= file_len {
            return Ok(None);
        }
        let offset = self.offset;
        let corrupt = |reason: String| Error::corruption(&self.reader.path, offset, reason);
        match self.reader.parse_entry(offset, file_len, None)? {
            Parsed::Valid {
                key,
                value,
                codec,
                next,
            } => {
                self.offset = next;
                let ptr = ValuePointer {
                    segment: self.reader.id,
                    offset,
                    len: value.len() as u32,
                };
                // A checksummed value that does not decompress is damage, not a torn tail.
                let value = self.reader.decoded(codec, value, offset)?;
                Ok(Some((ptr, key.into_owned(), value.into_owned())))
            }
            Parsed::Incomplete => Ok(None),
            Parsed::Zero if self.reader.zeros_to_end(offset, file_len)? => Ok(None),
            Parsed::Zero => Err(corrupt(
                "zero-filled entry header followed by non-zero bytes".into(),
            )),
            Parsed::Bad { next, .. } if next == file_len => Ok(None),
            Parsed::Bad { reason, next } => Err(corrupt(format!(
                "{reason}; {} more bytes follow the entry",
                file_len - next
            ))),
        }
    }
}

impl Iterator for EntryIter<'_> {
    type Item = Result<SegmentEntry>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let item = self.step().transpose();
        if !matches!(item, Some(Ok(_))) {
            self.done = true;
        }
        item
    }
}

#[cfg(test)]
#[path = "segment_tests.rs"]
mod tests;
