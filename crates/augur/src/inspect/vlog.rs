//! [`vlog`] and [`vlog_entries`]: a value-log segment's header, then its entries one at a
//! time (offset, key, stored and raw length, codec) through the engine's `SegmentReader`
//! (docs/format/vlog.md), and where a torn or damaged entry stops the walk.
//!
//! A segment may hold millions of entries: [`VlogEntries`] is an iterator holding one entry
//! at a time. Each value is decompressed to check it, never kept. How much of a segment is
//! garbage is the manifest's accounting, not the segment's
//! ([`super::ManifestDump::segment_accounting`]).

use super::{std_fs, FileEnd};
use crate::error::Result;
use crate::fs::ReadMode;
use crate::vlog::{
    parse_segment_file_name, EntryWalk, SegmentReader, WalkEnd, WalkStep, SEGMENT_HEADER_LEN,
};
use std::path::{Path, PathBuf};

/// A segment's header and size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VlogDump {
    /// The file read.
    pub path: PathBuf,
    /// Its size in bytes when it was opened.
    pub file_bytes: u64,
    /// The segment id its header names (equal to the file name's, checked, when the file
    /// has a segment's name).
    pub segment_id: u64,
    /// The segment format version (1: no compressed values; 2).
    pub format_version: u32,
    /// Bytes of the header; entries start there.
    pub header_bytes: u64,
}

/// One entry of a segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VlogEntry {
    /// Offset of the entry (what a value pointer to it holds).
    pub offset: u64,
    /// The key it was written under.
    pub key: Vec<u8>,
    /// Bytes of the value once decompressed.
    pub value_len: u64,
    /// Bytes of the value as stored (a pointer's `len`; `raw_len u32 | compressed bytes`
    /// when compressed).
    pub stored_len: u32,
    /// How the value is stored: 0 raw, 1 LZ4, 2 zstd ([`super::codec_name`]).
    pub codec: u8,
    /// Bytes the whole entry takes: header, key and stored value (what its garbage is).
    pub entry_bytes: u64,
}

/// Opens the segment at `path` (read through `pread`, so a segment another process appends
/// to is read up to its length at this call), checking its header.
fn open(path: &Path) -> Result<SegmentReader> {
    let id = path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(parse_segment_file_name);
    SegmentReader::open_file(&std_fs(), path, id, ReadMode::Pread)
}

/// Reads the header of the segment at `path`. Writes nothing.
///
/// # Errors
/// `Io` when the file cannot be read; `Corruption` (offset 0) for a short or damaged header,
/// or one naming another segment than the file's name; `UnsupportedVersion` for a newer
/// segment format.
pub fn vlog(path: &Path) -> Result<VlogDump> {
    let reader = open(path)?;
    Ok(VlogDump {
        path: path.to_path_buf(),
        file_bytes: reader.file_len()?,
        segment_id: reader.id(),
        format_version: reader.format_version(),
        header_bytes: SEGMENT_HEADER_LEN as u64,
    })
}

/// The entries of the segment at `path`, in file order, up to its length at the first step.
/// Writes nothing.
///
/// # Errors
/// As [`vlog`].
pub fn vlog_entries(path: &Path) -> Result<VlogEntries> {
    Ok(VlogEntries {
        reader: open(path)?,
        walk: EntryWalk::new(),
        end: None,
        done: false,
    })
}

/// The entries of one segment, one at a time. After the last one (`next` gives `None`),
/// [`VlogEntries::end`] says how the segment ends; an `Err` item is an I/O failure, and
/// ends the iteration.
#[derive(Debug)]
pub struct VlogEntries {
    reader: SegmentReader,
    walk: EntryWalk,
    end: Option<FileEnd>,
    done: bool,
}

impl VlogEntries {
    /// How the segment ends, once the iteration has ended (`None` before, or after an
    /// I/O failure).
    pub fn end(&self) -> Option<&FileEnd> {
        self.end.as_ref()
    }
}

impl Iterator for VlogEntries {
    type Item = Result<VlogEntry>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.walk.step(&self.reader) {
            Ok(WalkStep::Entry(e)) => Some(Ok(VlogEntry {
                offset: e.offset,
                entry_bytes: crate::vlog::entry_bytes(
                    e.key.len(),
                    &crate::vlog::ValuePointer {
                        segment: self.reader.id(),
                        offset: e.offset,
                        len: e.stored_len,
                    },
                ),
                key: e.key,
                value_len: e.raw_len,
                stored_len: e.stored_len,
                codec: e.codec,
            })),
            Ok(WalkStep::End(end)) => {
                self.done = true;
                self.end = Some(match end {
                    WalkEnd::Clean => FileEnd::Clean,
                    WalkEnd::ZeroFilled { offset } => FileEnd::ZeroFilled { offset },
                    WalkEnd::Torn { offset, reason } => FileEnd::Torn { offset, reason },
                    WalkEnd::Damaged { offset, reason } => FileEnd::Damaged { offset, reason },
                });
                None
            }
            Err(e) => {
                // An I/O failure: the walk cannot say how the segment ends.
                self.done = true;
                Some(Err(e))
            }
        }
    }
}
