//! [`Table`]: an open, immutable SSTable and its point-lookup path (filter → fence-pointer
//! search → binary search over the fixed-width slots of one block → value).
//!
//! Reads come straight from the mapping when the file exposes one
//! ([`RandomAccessFile::as_slice`]: zero-copy slot access), otherwise through
//! `read_exact_at` into a buffer (`reader/blocks.rs`). Checksums: the small sections are
//! verified in [`Table::open`]; a data block (and, separately, its value chunk) read from a
//! mapping or through the page cache (direct reads) is verified the first time it is read and
//! remembered in a per-table atomic bitset, so steady-state lookups compute no CRC — and,
//! through the cache, then read only the slots and the value they need. `pread` reads verify
//! every block and value chunk they read. A point lookup of a value in a compressed chunk
//! decompresses only the value's frame, and with the database's chunk cache
//! (`cache::ChunkCache`) nothing on a hit; scans decompress whole chunks. Keys are compared slot head first
//! (`slot.rs`), so the key-suffix chunk of a block is read only when two heads tie. A data
//! block stored compressed (format 6) is searched in its decompressed copy, shared with the
//! same chunk cache (`reader/blocks.rs`); a table without one reads as in format 5.

use crate::checksum::crc;
use crate::error::{Error, Result};
use crate::fs::{FileSystem, RandomAccessFile};
use crate::index::Index;
use crate::key::{unpack_trailer, InternalKey, SeqNo, ValueKind, MAX_SEQNO};
use crate::sst::fence::{BlockMeta, FenceIndex};
use crate::sst::filter::Bloom;
use crate::sst::format::{Footer, InlineRef};
use crate::sst::properties::Properties;
use crate::sst::slot::{Probe, RawSlot, SlotLayout};
use crate::sst::Entry;
use crate::stats::breakdown::{self, Step};
use std::borrow::Cow;
use std::cmp::Ordering;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

mod blocks;
#[cfg(test)]
mod compressed_tests;
#[cfg(test)]
mod end_ref_tests;
mod facts;
mod learned;
mod open;
mod scan;
mod values;
mod verify;

pub(crate) use learned::Locator;
pub(crate) use scan::ScanBlock;
pub mod lookup_stats;

pub use learned::LearnReport;
use lookup_stats::LookupStats;

/// A set of block numbers, settable from many threads at once (one bit per block).
#[derive(Debug)]
struct VerifiedSet(Vec<AtomicU64>);

impl VerifiedSet {
    fn new(blocks: u64) -> Self {
        VerifiedSet(
            (0..blocks.div_ceil(64))
                .map(|_| AtomicU64::new(0))
                .collect(),
        )
    }

    fn contains(&self, block: u64) -> bool {
        self.0
            .get((block / 64) as usize)
            .is_some_and(|w| w.load(AtomicOrdering::Acquire) & (1 << (block % 64)) != 0)
    }

    fn insert(&self, block: u64) {
        if let Some(w) = self.0.get((block / 64) as usize) {
            w.fetch_or(1 << (block % 64), AtomicOrdering::Release);
        }
    }
}

/// The bytes of one data block (its slots, then its key suffixes), verified; either borrowed
/// from the mapping (resolved through the table on each access) or read into an owned
/// buffer, or — for a block stored compressed (format 6) — decompressed, owned or shared with
/// the chunk cache. Through the page cache it may hold a run of the block's slots only
/// ([`Table::load_slots`]), followed by the block's key suffixes.
#[derive(Debug)]
pub(crate) struct LoadedBlock {
    block: u64,
    /// Position of the first slot held.
    first_pos: u64,
    /// File offset of the first slot held; of the stored block when it is decompressed
    /// (its slots then have no file offset of their own).
    start: u64,
    /// Bytes of the slots held (the block's key suffixes follow them).
    slots_len: usize,
    /// Bytes of the whole block (decompressed).
    len: usize,
    /// Where the bytes are.
    bytes: BlockBytes,
    /// Bytes the block's keys share past the stripped prefix (format 5; 0 before): its
    /// slots hold each key past them.
    prefix_ext: usize,
}

/// Where a [`LoadedBlock`]'s bytes are.
#[derive(Debug)]
enum BlockBytes {
    /// In the mapping, at `[start, start + len)`.
    Mapped,
    /// Read into a buffer (a block stored uncompressed).
    Read(Vec<u8>),
    /// Decompressed into a buffer of its own (a block stored compressed).
    Decoded(Vec<u8>),
    /// Decompressed, shared with the chunk cache (a block stored compressed), with the
    /// block's decompressed value chunk when the cache holds that too.
    Cached(crate::cache::CachedBlock),
}

impl LoadedBlock {
    /// True when the slot at `pos` is among those held (`slot` bytes per slot).
    #[inline]
    fn holds(&self, pos: u64, slot: usize) -> bool {
        pos >= self.first_pos && ((pos - self.first_pos) as usize) < self.slots_len / slot.max(1)
    }

    /// True when the bytes are a compressed block's, decompressed: offsets in them are not
    /// file offsets.
    #[inline]
    fn decoded(&self) -> bool {
        matches!(self.bytes, BlockBytes::Decoded(_) | BlockBytes::Cached(_))
    }
}

/// One slot's fields and its key's overflow, borrowed from the block bytes.
struct Slot<'a> {
    raw: RawSlot<'a>,
    overflow: &'a [u8],
}

/// A copy of a format-7 end reference (2 or 4 bytes): the field of the slot before a slot,
/// where that slot's value starts.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PrevRef {
    bytes: [u8; 4],
    len: usize,
}

impl PrevRef {
    /// A copy of `field`; `None` when it is longer than 4 bytes.
    fn new(field: &[u8]) -> Option<PrevRef> {
        let mut bytes = [0; 4];
        bytes.get_mut(..field.len())?.copy_from_slice(field);
        Some(PrevRef { bytes, len: field.len() })
    }

    /// The field's bytes.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

impl Slot<'_> {
    #[inline]
    fn trailer(&self) -> u64 {
        self.raw.trailer
    }

    #[inline]
    fn reference(&self) -> &[u8] {
        self.raw.reference
    }
}

/// An open SSTable. Immutable, `Send + Sync`; share it as `Arc<Table>`.
pub struct Table {
    path: PathBuf,
    file_id: u64,
    file: Arc<dyn RandomAccessFile>,
    /// The file's mapping, when it is mapped: read without a virtual call.
    mapped: Option<bytes::Bytes>,
    /// True when reads come through the page cache (direct mode): as with a mapping, a
    /// block or value chunk is checked the first time it is read and trusted after, and
    /// lookups then read only the slots and the value they need, not whole blocks.
    cached: bool,
    file_size: u64,
    footer: Footer,
    properties: Properties,
    /// The slot layout of the file.
    layout: SlotLayout,
    /// The prefix stripped from every key of the file (empty in format 1).
    stripped: Vec<u8>,
    /// File offset the value chunks' offsets are relative to: the value section's in formats
    /// 1 and 2, the data section's in format 3 (chunks interleaved with the blocks).
    values_base: u64,
    /// True in format 3: each block's value chunk follows the block.
    interleaved: bool,
    filter: Option<Bloom>,
    fence: FenceIndex,
    /// The learned index: from the model section (when present, readable and enabled) or
    /// installed once later by [`Table::learn`]. Readers take the model path as soon as it
    /// is set; no lock on the read path.
    model: OnceLock<Box<dyn Index>>,
    /// Whether lookups may use a model (false under the `never` policy): `learn` refuses
    /// otherwise.
    models_enabled: bool,
    /// When the table was opened: its installation in the tree (or the database's open).
    opened_at: Instant,
    /// The common prefix of all user keys of the file: what projections strip.
    prefix: Vec<u8>,
    verified_blocks: VerifiedSet,
    verified_value_chunks: VerifiedSet,
    /// This table's part of the database's decompressed-chunk cache (`None`: opened alone,
    /// or the database has none): point lookups of compressed values go through it.
    chunks: Option<crate::cache::TableChunks>,
    /// The part of the same cache holding the table's compressed data blocks, decompressed
    /// (format 6; `None` when no block is compressed or there is no cache): lookups into a
    /// compressed block go through it. Keyed apart from `chunks`.
    key_blocks: Option<crate::cache::TableChunks>,
    /// True when some data block is stored compressed (format 6): only then does a block
    /// load look at how its block is stored, so uncompressed tables read as in format 5.
    compressed_blocks: bool,
    /// Lookups per path and outcome, with sampled latencies: the inputs of Bourbon's
    /// cost–benefit analysis, and of the per-level statistics.
    stats: LookupStats,
    /// Set once the file is obsolete: the file system that deletes it when the table drops.
    remove_on_drop: OnceLock<Arc<dyn FileSystem>>,
}

impl Drop for Table {
    fn drop(&mut self) {
        if let Some(fs) = self.remove_on_drop.get() {
            if let Err(e) = fs.remove(&self.path) {
                log::warn!(
                    "could not delete obsolete table {}: {e}",
                    self.path.display()
                );
            }
        }
    }
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table")
            .field("path", &self.path)
            .field("file_id", &self.file_id)
            .field("file_size", &self.file_size)
            .field("entries", &self.properties.entries)
            .finish_non_exhaustive()
    }
}

/// Reads `len` bytes at `offset`: borrowed from `mapped` (the file's mapping) when there is
/// one, otherwise read from `file`.
fn read_mapped_or<'a>(
    mapped: Option<&'a [u8]>,
    file: &dyn RandomAccessFile,
    path: &Path,
    offset: u64,
    len: u64,
) -> Result<Cow<'a, [u8]>> {
    let out_of_range = || Error::corruption(path, offset, "read past the end of the file");
    if let Some(all) = mapped {
        let start = usize::try_from(offset).map_err(|_| out_of_range())?;
        let end = start
            .checked_add(usize::try_from(len).map_err(|_| out_of_range())?)
            .ok_or_else(out_of_range)?;
        return all
            .get(start..end)
            .map(Cow::Borrowed)
            .ok_or_else(out_of_range);
    }
    let mut buf = vec![0u8; usize::try_from(len).map_err(|_| out_of_range())?];
    file.read_exact_at(offset, &mut buf)?;
    Ok(Cow::Owned(buf))
}

impl Table {
    /// Reads `len` bytes at `offset`: borrowed from the mapping when there is one.
    fn read(&self, offset: u64, len: u64) -> Result<Cow<'_, [u8]>> {
        read_mapped_or(self.mapped.as_deref(), &*self.file, &self.path, offset, len)
    }

    /// The mapped file (`None` when read through `pread`).
    pub(crate) fn mapping(&self) -> Option<&[u8]> {
        self.mapped.as_deref()
    }

    /// Deletes the table's file when the last reference to the table goes (an obsolete
    /// file stays readable for the scans still holding the table).
    pub(crate) fn remove_file_when_dropped(&self, fs: Arc<dyn FileSystem>) {
        let _ = self.remove_on_drop.set(fs);
    }

    /// The file id given at open.
    #[cfg(test)]
    pub fn file_id(&self) -> u64 {
        self.file_id
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Size of the file in bytes.
    pub fn file_size(&self) -> u64 {
        self.file_size
    }

    /// Number of entries.
    pub fn entries(&self) -> u64 {
        self.properties.entries
    }

    /// The first internal key.
    pub fn smallest(&self) -> &InternalKey {
        &self.properties.smallest
    }

    /// The last internal key.
    pub fn largest(&self) -> &InternalKey {
        &self.properties.largest
    }

    /// The table's properties.
    pub fn properties(&self) -> &Properties {
        &self.properties
    }

    /// Drops the recorded longest inline value, as in a file of format 3 or older (tests of
    /// the search that such files need).
    #[cfg(test)]
    pub(crate) fn forget_max_inline_value_len(&mut self) {
        self.properties.max_inline_value_len = None;
    }

    /// Where each section of the file lies (for inspection tools).
    pub fn footer(&self) -> &Footer {
        &self.footer
    }

    /// Heap bytes held by the table's index structures (fence index and filter).
    pub fn index_size_bytes(&self) -> usize {
        self.fence.size_bytes() + self.filter.as_ref().map_or(0, Bloom::size_bytes)
    }

    /// Stored (possibly compressed) bytes of the file's inline values.
    pub fn stored_value_bytes(&self) -> u64 {
        self.fence.stored_value_bytes()
    }

    /// File offset of the start of `block`'s value chunk.
    pub(crate) fn value_chunk_offset(&self, meta: &BlockMeta) -> u64 {
        self.values_base + meta.values_start
    }

    /// Bytes this open table keeps in memory whatever the cache holds: filter, fence index,
    /// model, properties (key bounds), the stripped prefix and its handles on the chunk
    /// cache (their bitsets and address hints).
    pub fn pinned_bytes(&self) -> usize {
        let cache_handles = [&self.chunks, &self.key_blocks]
            .into_iter()
            .flatten()
            .map(crate::cache::TableChunks::pinned_bytes)
            .sum::<usize>();
        cache_handles
            + self.index_size_bytes()
            + self.model_size_bytes()
            + self.properties.smallest.user_key.len()
            + self.properties.largest.user_key.len()
            + self.prefix.len()
            + self.stripped.len()
            + std::mem::size_of::<Table>()
    }

    /// Bloom check: false only when `user_key` is certainly absent; true when there is no
    /// filter.
    pub fn may_contain(&self, user_key: &[u8]) -> bool {
        self.filter.as_ref().is_none_or(|f| f.may_contain(user_key))
    }

    /// Starts loading the filter's cache line for a key whose `filter::key_hash` is `hash`,
    /// so that a lookup probing several tables overlaps their filter misses.
    pub(crate) fn prefetch_filter(&self, hash: u64) {
        if let Some(f) = &self.filter {
            f.prefetch(hash);
        }
    }

    /// The newest entry for `user_key` with seqno `<= snapshot`, or `None`: filter → the
    /// learned index's window (model path, Bourbon §4.5) or the fence pointers' block
    /// (baseline path) → binary search of the fixed-width slots there → the entry.
    ///
    /// # Errors
    /// `Corruption` when a block or value read fails its checksum or is malformed.
    #[cfg(any(test, feature = "test-util"))]
    pub fn get(&self, user_key: &[u8], snapshot: SeqNo) -> Result<Option<Entry>> {
        let hash = crate::sst::filter::key_hash(user_key);
        self.get_with(self.locator(), user_key, hash, snapshot)
    }

    /// [`Table::get`] of a key whose `filter::key_hash` is `hash` (computed once per lookup
    /// for every table it probes).
    pub(crate) fn get_hashed(
        &self,
        user_key: &[u8],
        hash: u64,
        snapshot: SeqNo,
    ) -> Result<Option<Entry>> {
        self.get_with(self.locator(), user_key, hash, snapshot)
    }

    /// [`Table::get`] locating the key with `locator`, counting the lookup per path.
    fn get_with(
        &self,
        locator: Locator<'_>,
        user_key: &[u8],
        hash: u64,
        snapshot: SeqNo,
    ) -> Result<Option<Entry>> {
        let learned = !matches!(locator, Locator::Fence);
        let started = lookup_stats::sample_this_lookup().then(Instant::now);
        let may_contain = || {
            self.filter
                .as_ref()
                .is_none_or(|f| f.may_contain_hash(hash))
        };
        if !breakdown::timed(Step::Filter, may_contain) {
            self.stats.record(learned, false, false, started);
            return Ok(None);
        }
        let found = self.find(locator, user_key, snapshot)?;
        self.stats.record(learned, found.is_some(), true, started);
        Ok(found)
    }

    /// The file's own way of locating keys: its model, else the fence pointers.
    fn locator(&self) -> Locator<'_> {
        self.model
            .get()
            .map_or(Locator::Fence, |m| Locator::Model(m.as_ref()))
    }

    /// The entry of `user_key` past the filter: locate, then read the slot.
    fn find(&self, model: Locator<'_>, user_key: &[u8], snapshot: SeqNo) -> Result<Option<Entry>> {
        let probe = Probe::new(user_key, &self.stripped);
        let mut held = None;
        let pos = self.seek_position(model, user_key, &probe, seek_trailer(snapshot), &mut held)?;
        if pos >= self.entries() {
            return Ok(None);
        }
        breakdown::timed(Step::Load, || {
            // A compressed block the search decompressed (or took from the cache) serves
            // the entry too.
            let block = match held {
                Some(b) if b.block == self.fence.block_of(pos) && b.holds(pos, self.layout.slot) => b,
                _ => self.load_slots(self.fence.block_of(pos), pos, pos + 1)?,
            };
            let slot = self.slot(&block, pos)?;
            let probe = probe.past(self.fence.block_prefix(block.block));
            if probe.key_order(self.layout.head_bytes(), &slot.raw, slot.overflow)
                != Ordering::Equal
            {
                return Ok(None);
            }
            // The slot holds `user_key`: no need to reassemble it from the slot.
            self.entry_from_slot(&block, pos, &slot, Some(user_key))
                .map(Some)
        })
    }

    /// Point lookups served by this table so far: (found, not found).
    pub fn lookups(&self) -> (u64, u64) {
        let c = self.stats.snapshot();
        (c.positive(), c.negative())
    }

    /// Point lookups per path and outcome, with sampled latencies.
    pub fn lookup_counts(&self) -> lookup_stats::LookupCounts {
        self.stats.snapshot()
    }

    /// Runs `action` once, on a lookup thread, when the table has served `after` point
    /// lookups (at once if it already has). Only the first call arms; later ones are ignored.
    pub(crate) fn on_lookups(&self, after: u64, action: Box<dyn Fn() + Send + Sync>) {
        self.stats.arm(after, action);
    }

    /// When the table was opened (installed in the tree, or found at database open).
    pub fn opened_at(&self) -> Instant {
        self.opened_at
    }

    /// Position of the first entry `>= (user_key, seqno)` in internal order (`entries()` if
    /// none), i.e. the first version of `user_key` visible at snapshot `seqno`, or the first
    /// entry of the next user key. Iterators seek with it, so a learned file also gets a
    /// learned seek.
    ///
    /// # Errors
    /// `Corruption` when the block read fails its checksum or is malformed.
    #[cfg(any(test, feature = "test-util"))]
    pub fn lower_bound(&self, user_key: &[u8], seqno: SeqNo) -> Result<u64> {
        self.lower_bound_trailer(user_key, seek_trailer(seqno))
    }

    /// Position of the first entry `>= (user_key, trailer)` in internal order (`entries()`
    /// if none), through the file's learned index when it has one.
    ///
    /// # Errors
    /// `Corruption` when the block read fails its checksum or is malformed.
    pub(crate) fn lower_bound_trailer(&self, user_key: &[u8], trailer: u64) -> Result<u64> {
        let probe = Probe::new(user_key, &self.stripped);
        self.seek_position(self.locator(), user_key, &probe, trailer, &mut None)
    }

    /// The data block holding position `pos`.
    pub(crate) fn block_of(&self, pos: u64) -> u64 {
        self.fence.block_of(pos)
    }

    /// True when lookups into this file go through a learned index.
    pub fn has_model(&self) -> bool {
        self.model.get().is_some()
    }

    /// Bytes of the learned index in memory (0 without one).
    pub fn model_size_bytes(&self) -> usize {
        self.model.get().map_or(0, |m| m.size_bytes())
    }

    /// The type of the learned index, if the table has one.
    pub fn model_kind(&self) -> Option<crate::index::IndexKind> {
        self.model.get().map(|m| m.kind())
    }

    /// The largest window of the learned index, if the table has one.
    pub fn model_max_window(&self) -> Option<u64> {
        self.model.get().map(|m| m.max_window())
    }

    /// Segments (or fence pointers) of the learned index (0 without one).
    pub fn model_segments(&self) -> u64 {
        self.model.get().map_or(0, |m| m.segments())
    }

    /// The lower bound of `(user_key, trailer)` (`probe` is `user_key` against the stripped
    /// prefix): through the model when the file has one, else through the fence pointers and
    /// one block. In a table with compressed blocks, `held` gets the last block the search
    /// loaded (decompressed), so that reading the entry does not load it again.
    fn seek_position(
        &self,
        locator: Locator<'_>,
        user_key: &[u8],
        probe: &Probe<'_>,
        trailer: u64,
        held: &mut Option<LoadedBlock>,
    ) -> Result<u64> {
        match probe {
            Probe::Below => return Ok(0),
            Probe::Above => return Ok(self.entries()),
            Probe::Rest(_) => {}
        }
        match locator {
            Locator::Model(model) => {
                return self.model_lower_bound(model, user_key, probe, trailer, held)
            }
            Locator::Window { lo, hi } => {
                let n = self.entries();
                self.prefetch_window(lo.min(n), hi.min(n));
                return breakdown::timed(Step::Locate, || {
                    self.locate_from_window(lo, hi, probe, trailer, held)
                });
            }
            Locator::Fence => {}
        }
        let window = breakdown::timed(Step::Search, || self.fence.search(user_key, trailer));
        if window.is_empty() {
            return Ok(window.start);
        }
        breakdown::timed(Step::Locate, || {
            let block_no = self.fence.block_of(window.start);
            if self.compressed_blocks {
                // A cached compressed block: its set, counts and first probe's line at once.
                if let Some(meta) = self.fence.meta(block_no).filter(|m| m.block_codec != crate::compression::CODEC_NONE) {
                    let mid = window.start + (window.end - window.start) / 2;
                    self.prefetch_cached_block(block_no, &meta, mid, mid + 1, false);
                }
            }
            let block = self.load_block(block_no, false)?;
            let pos = self.lower_bound_in(&block, window.end, probe, trailer)?;
            if self.compressed_blocks {
                *held = Some(block);
            }
            Ok(pos)
        })
    }

    /// The entry at position `i` (0-based), with its value (inline bytes or pointer bytes).
    ///
    /// # Errors
    /// `InvalidArgument` when `i >= entries()`; `Corruption` for a damaged block or value.
    #[cfg(any(test, feature = "test-util"))]
    pub fn entry_at(&self, i: u64) -> Result<Entry> {
        if i >= self.entries() {
            return Err(Error::InvalidArgument(format!(
                "position {i} is past the {} entries of {}",
                self.entries(),
                self.path.display()
            )));
        }
        let block = self.load_block(self.fence.block_of(i), false)?;
        let slot = self.slot(&block, i)?;
        self.entry_from_slot(&block, i, &slot, None)
    }

    /// Decodes the slot at position `pos` of `block`. The hot path: no allocation.
    #[inline]
    fn slot<'a>(&'a self, block: &'a LoadedBlock, pos: u64) -> Result<Slot<'a>> {
        let bytes = self.block_bytes(block);
        let size = self.layout.slot;
        let corrupt = |why: &str| Error::corruption(&self.path, self.slot_file_offset(block, pos), why);
        let start = pos
            .checked_sub(block.first_pos)
            .and_then(|i| usize::try_from(i).ok())
            .and_then(|i| i.checked_mul(size))
            .filter(|&s| s + size <= block.slots_len)
            .ok_or_else(|| corrupt("slot outside its block"))?;
        let (slots, suffixes) = bytes
            .split_at_checked(block.slots_len)
            .ok_or_else(|| corrupt("short block"))?;
        let raw = slots
            .get(start..)
            .and_then(|slot| self.layout.decode(slot, block.prefix_ext))
            .ok_or_else(|| corrupt("malformed slot (key length or trailer)"))?;
        let overflow = self
            .layout
            .overflow(&raw, suffixes)
            .ok_or_else(|| corrupt("key suffix outside its block"))?;
        Ok(Slot { raw, overflow })
    }

    /// For format 7's end references: the reference field of the slot before position
    /// `pos` in `block` (where the value of `pos` starts), `None` for the block's first slot
    /// or in a table without end references. Read from `block` when it holds that slot, else
    /// (a lookup through the page cache that loaded only its window) read on its own.
    ///
    /// # Errors
    /// As [`Table::load_slots`].
    fn prev_reference(&self, block: &LoadedBlock, pos: u64) -> Result<Option<PrevRef>> {
        if !self.layout.params.end_only_refs()
            || pos <= self.fence.block_positions(block.block).start
        {
            return Ok(None);
        }
        let size = self.layout.slot;
        let field = |slots: &[u8], index: u64| {
            let at = usize::try_from(index).ok()?.checked_mul(size)?;
            PrevRef::new(slots.get(at + self.layout.ref_offset()..at + size)?)
        };
        let corrupt = || Error::corruption(&self.path, self.slot_file_offset(block, pos), "slot outside its block");
        if pos > block.first_pos {
            let slots = self.block_bytes(block).get(..block.slots_len).unwrap_or_default();
            return field(slots, pos - 1 - block.first_pos).map(Some).ok_or_else(corrupt);
        }
        let prev = self.load_slots(block.block, pos - 1, pos)?;
        let slots = self.block_bytes(&prev).get(..prev.slots_len).unwrap_or_default();
        field(slots, pos - 1 - prev.first_pos).map(Some).ok_or_else(corrupt)
    }

    /// The user key of `slot`, a slot of `block`.
    fn key_of(&self, block: &LoadedBlock, slot: &Slot<'_>) -> Vec<u8> {
        let block_prefix = self.fence.block_prefix(block.block);
        let mut key =
            Vec::with_capacity(self.stripped.len() + block_prefix.len() + slot.raw.rest_len);
        key.extend_from_slice(&self.stripped);
        key.extend_from_slice(block_prefix);
        key.extend_from_slice(slot.raw.head);
        key.extend_from_slice(slot.overflow);
        key
    }

    /// First position in `[block.first_pos, end)` whose key is `>= (probe, trailer)`, or
    /// `end`.
    fn lower_bound_in(
        &self,
        block: &LoadedBlock,
        end: u64,
        probe: &Probe<'_>,
        trailer: u64,
    ) -> Result<u64> {
        let (mut lo, mut hi) = (block.first_pos, end);
        let head = self.layout.head_bytes();
        let probe = probe.past(self.fence.block_prefix(block.block));
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let slot = self.slot(block, mid)?;
            if probe.order(head, &slot.raw, slot.overflow, trailer) == Ordering::Less {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        Ok(lo)
    }

    /// Materializes the entry of `slot` (at `pos` in `block`), reading its inline value;
    /// `user_key` is the slot's key when the caller has matched it, else it is reassembled.
    fn entry_from_slot(
        &self,
        block: &LoadedBlock,
        pos: u64,
        slot: &Slot<'_>,
        user_key: Option<&[u8]>,
    ) -> Result<Entry> {
        let corrupt = |why: &str| Error::corruption(&self.path, self.slot_file_offset(block, pos), why);
        let (seqno, kind) =
            unpack_trailer(slot.trailer()).ok_or_else(|| corrupt("unknown value kind"))?;
        let value = match kind {
            ValueKind::Value | ValueKind::ExpiringValue => {
                let meta = self.meta_of(block.block)?;
                let prev = self.prev_reference(block, pos)?;
                let (offset, len) = self
                    .inline_ref(slot.reference(), prev.as_ref().map(PrevRef::bytes), meta.values_start)
                    .ok_or_else(|| corrupt("malformed value reference"))?;
                self.inline_value(block, &meta, offset, len)?
                    .ok_or_else(|| corrupt("value reference outside its block's value chunk"))?
            }
            ValueKind::Pointer => {
                if slot.reference().len() != crate::sst::slot::POINTER_REF_BYTES {
                    return Err(corrupt("value pointer in a narrow reference field"));
                }
                slot.reference().to_vec()
            }
            ValueKind::Delete => Vec::new(),
        };
        Ok(Entry {
            user_key: user_key.map_or_else(|| self.key_of(block, slot), <[u8]>::to_vec),
            seqno,
            kind,
            value,
        })
    }
}

/// The trailer that sorts before every version of a key with seqno `<= snapshot`.
fn seek_trailer(snapshot: SeqNo) -> u64 {
    (snapshot.min(MAX_SEQNO) << 8) | 0xff
}
