//! Reading many values of one segment at once — the value-log side of a range scan over
//! separated values (WiscKey §3.3: a scan must not pay one random read per entry).
//!
//! The requests arrive sorted by offset. From a mapped segment each entry is read in place;
//! through `pread`, entries close to each other are coalesced into one read of the span that
//! covers them (values written in key order — a sequential load, or GC's rewrites — then cost
//! one read per run instead of one per value). Every entry is checked exactly as a single read
//! checks it — in a mapped segment once per mapping (`verified.rs`): later reads check its
//! lengths and key but not its CRC again, and touch only its first cache line ahead of time —
//! and an entry that fails the fast check is re-read through the checked slow path, which
//! reports the precise corruption.

use super::verified::VerifiedEntries;
use super::{known_entry_len, value_of_entry, value_of_entry_with, SegmentReader};
use crate::compression::CODEC_NONE;
use crate::error::Result;
use crate::vlog::ValuePointer;
use std::borrow::Cow;

/// Gap (bytes) between two entries below which one read covers both.
const COALESCE_GAP_BYTES: u64 = 16 * 1024;
/// Largest span one coalesced read covers.
const MAX_SPAN_BYTES: u64 = 512 * 1024;

/// Receives each value of a batch: the request's slot, the value's bytes, and — when they
/// are borrowed from a mapped segment — that mapping, so the caller can keep the value
/// without copying it (the bytes lie inside the mapping).
pub type ValueSink<'a> = dyn FnMut(usize, &[u8], Option<&bytes::Bytes>) + 'a;

/// One value to read: the pointer, the key it was stored under, and the caller's slot for
/// the result.
#[derive(Debug, Clone, Copy)]
pub struct ValueRequest<'k> {
    /// The caller's index for this value (passed back to the sink).
    pub slot: usize,
    /// Where the value is.
    pub ptr: ValuePointer,
    /// The key the entry must hold.
    pub key: &'k [u8],
}

impl SegmentReader {
    /// Reads the values of `requests` — pointers into this segment sorted by offset — and
    /// hands each to `sink` with its slot, in offset order (with the mapping when the value is
    /// borrowed from it).
    ///
    /// # Errors
    /// As [`SegmentReader::read`] for the first request that fails.
    pub fn read_values(
        &self,
        requests: &[ValueRequest<'_>],
        sink: &mut ValueSink<'_>,
    ) -> Result<()> {
        if let Some(mapping) = &self.mapped {
            let data: &[u8] = mapping;
            let verified = self
                .verified
                .get_or_init(|| VerifiedEntries::new(data.len()));
            touch_entries(data, requests, verified);
            for r in requests {
                let entry = known_entry_len(&r.ptr, r.key).and_then(|total| {
                    let start = usize::try_from(r.ptr.offset).ok()?;
                    data.get(start..start.checked_add(total)?)
                });
                let value = entry.and_then(|e| {
                    if verified.contains(r.ptr.offset) {
                        value_of_entry_with(e, &r.ptr, r.key, false)
                    } else {
                        let v = value_of_entry(e, &r.ptr, r.key)?;
                        verified.insert(r.ptr.offset);
                        Some(v)
                    }
                });
                match value {
                    Some((CODEC_NONE, v)) => sink(r.slot, v, Some(mapping)),
                    Some((codec, v)) => {
                        let v = self.decoded(codec, Cow::Borrowed(v), r.ptr.offset)?;
                        sink(r.slot, &v, None);
                    }
                    None => sink(r.slot, &self.read(&r.ptr, Some(r.key))?, None),
                }
            }
            return Ok(());
        }
        let mut span = Vec::new();
        let mut i = 0;
        while let Some(first) = requests.get(i) {
            // Extend the run while the next entry starts near the end of the current one.
            let mut end = first.ptr.offset.saturating_add(entry_bytes(first));
            let mut j = i + 1;
            while let Some(r) = requests.get(j) {
                let r_end = r.ptr.offset.saturating_add(entry_bytes(r));
                if r.ptr.offset > end.saturating_add(COALESCE_GAP_BYTES)
                    || end.max(r_end).saturating_sub(first.ptr.offset) > MAX_SPAN_BYTES
                {
                    break;
                }
                end = end.max(r_end);
                j += 1;
            }
            let run = requests.get(i..j).unwrap_or_default();
            let len = usize::try_from(end - first.ptr.offset).unwrap_or(usize::MAX);
            let whole = j > i + 1 && self.read_span(first.ptr.offset, len, &mut span)?;
            for r in run {
                let entry = whole
                    .then(|| {
                        let start = usize::try_from(r.ptr.offset - first.ptr.offset).ok()?;
                        span.get(start..start.checked_add(known_entry_len(&r.ptr, r.key)?)?)
                    })
                    .flatten();
                match entry.and_then(|e| value_of_entry(e, &r.ptr, r.key)) {
                    Some((codec, v)) => {
                        let v = self.decoded(codec, Cow::Borrowed(v), r.ptr.offset)?;
                        sink(r.slot, &v, None);
                    }
                    None => sink(r.slot, &self.read(&r.ptr, Some(r.key))?, None),
                }
            }
            i = j;
        }
        Ok(())
    }

    /// Reads `len` bytes at `offset` into `buf`; false when the file ends first (the
    /// entries are then read one by one, which reports what is missing).
    fn read_span(&self, offset: u64, len: usize, buf: &mut Vec<u8>) -> Result<bool> {
        buf.clear();
        buf.resize(len, 0);
        match self.file.read_exact_at(offset, buf) {
            Ok(()) => Ok(true),
            Err(crate::Error::Io { source, .. })
                if source.kind() == std::io::ErrorKind::UnexpectedEof =>
            {
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }
}

/// Loads every cache line of every requested entry of a mapped segment (only the first line
/// of an entry already verified: its checksum will not be recomputed) before any is
/// processed. The loads are independent, so the CPU keeps many of their cache misses in
/// flight at once; the checks that follow then find the lines in cache instead of waiting
/// for DRAM one entry at a time (scans of separated values were bound by that wait: 98% of
/// the batch reader's time sat on the first load of each entry).
fn touch_entries(data: &[u8], requests: &[ValueRequest<'_>], verified: &VerifiedEntries) {
    let mut sum = 0u64;
    for r in requests {
        let start = usize::try_from(r.ptr.offset).unwrap_or(usize::MAX);
        let len = if verified.contains(r.ptr.offset) {
            1
        } else {
            usize::try_from(entry_bytes(r)).unwrap_or(0).min(1 << 16)
        };
        let mut at = start;
        while at < start.saturating_add(len) {
            if let Some(b) = data.get(at) {
                sum = sum.wrapping_add(u64::from(*b));
            }
            at += 64;
        }
    }
    std::hint::black_box(sum);
}

/// Bytes of the entry a request points at (header, key, value).
fn entry_bytes(r: &ValueRequest<'_>) -> u64 {
    super::entry_bytes(r.key.len(), &r.ptr)
}
