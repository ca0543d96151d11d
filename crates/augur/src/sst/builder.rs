//! [`Builder`]: writes one SSTable (format 6) from entries given in internal-key order (the
//! last step of a memtable flush or of a compaction's merge), streaming: each data block and
//! its value chunk is written as soon as the block is full.
//!
//! The slot layout (stripped prefix, head width, field widths) must be fixed before the first
//! block is written, yet the best one depends on every key of the file. The builder holds a
//! bounded **sample** — the first [`SAMPLE_ENTRIES`] entries, or fewer once they hold
//! [`SAMPLE_KEY_BYTES`] of keys or [`SAMPLE_VALUE_BYTES`] of inline values. A table that ends
//! within its sample gets the exact layout, chosen from all its entries. Otherwise, when the
//! sample is full, the builder chooses the head width from the sample's keys and every other
//! width from the sample widened by the caller's [`LayoutHints`] (bounds of the keys, their
//! lengths, seqnos and values; docs/format/sst.md "Choosing the layout"), writes the sample's
//! blocks, and from then on holds one block at a time. An entry the chosen layout cannot
//! store (outside the hints) is refused with `InvalidArgument`; the file stays valid.
//!
//! Memory: the sample or the block being filled (keys, values, a ~48-byte record per entry)
//! and one block's encoding buffers, independent of the table's size
//! ([`Builder::buffered_bytes`]). What still grows with the entry count is per-block or
//! per-key metadata only: the fence-index records (one per block), the bloom filter's key
//! hashes (8 bytes per distinct key) and, with an at-build model, the keys' projections it is
//! trained from (8 bytes per entry), and the model itself.

mod blocks;
mod layout;
mod pending;
#[cfg(test)]
mod tests;

pub use layout::{LayoutHints, ValueHints};

use crate::error::{Error, Result};
use crate::fs::WritableFile;
use crate::index::chooser::{self, ModelBudget};
use crate::index::projection::project;
use crate::index::string_tree::KeyArena;
use crate::index::{self, IndexConfig, IndexKind};
use crate::compression::Compression;
use crate::key::{pack_trailer, InternalKey, SeqNo, ValueKind, MAX_KEY_LEN, MAX_SEQNO};
use crate::sst::filter::FilterBuilder;
use crate::sst::format::{Footer, Section, FOOTER_LEN, FORMAT_VERSION};
use crate::sst::properties::Properties;
use crate::sst::slot::{self, POINTER_REF_BYTES};
use crate::stats::cpu_time::CpuStopwatch;
use crate::vlog::{SegmentSpan, ValuePointer};
use blocks::BlockWriter;
use layout::Streaming;
use pending::{Pending, PendingValue};
use std::cmp::Ordering;
use std::path::PathBuf;
use std::time::Instant;

/// Entries the sample holds at most before the layout is chosen.
pub const SAMPLE_ENTRIES: usize = 4096;
/// Bytes of keys at which the sample ends before [`SAMPLE_ENTRIES`].
pub const SAMPLE_KEY_BYTES: usize = 64 << 10;
/// Bytes of inline values at which the sample ends before [`SAMPLE_ENTRIES`].
pub const SAMPLE_VALUE_BYTES: usize = 1 << 20;

/// Bytes a fence record takes besides its last key's unshared bytes, about (format 7: the
/// checksums, codecs and varint lengths and offsets of a block of a few KiB), for the size
/// estimate of blocks not yet written.
const INDEX_RECORD_FIXED_BYTES: u64 = 24;

/// Knobs of the table layout.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BuilderOptions {
    /// Slots per data block: the fence-pointer granularity and the unit of checksum
    /// verification. Must be in `1..=u32::MAX`.
    pub block_records: usize,
    /// Bloom filter bits per distinct user key; 0 writes no filter.
    pub bloom_bits_per_key: u32,
    /// The learned index to train while writing the file (Bourbon "at build"), stored in the
    /// model section; `None` leaves the section empty.
    pub model: Option<IndexConfig>,
    /// `Some` when the model chooser picks the model per file within this budget
    /// (`Options::auto_index`); `model` then gives the error bound and tuning.
    pub model_budget: Option<ModelBudget>,
    /// How each data block's value chunk (and, with `compress_keys`, the block itself) is
    /// compressed.
    pub compression: Compression,
    /// With `compression` on, also compress each data block — its slots, packed, and its
    /// key suffixes — when that saves an eighth of its bytes (format 6); off stores every
    /// block uncompressed, as format 5 does.
    pub compress_keys: bool,
    /// Width of the slot's key head; `None` chooses per file the width that stores the keys
    /// in the fewest bytes (`slot::choose_head`).
    pub head_bytes: Option<u32>,
    /// Store each block's shared key prefix once (format 5) instead of in every slot; off
    /// writes every block prefix empty (the format-4 slot contents), for comparisons.
    pub block_prefixes: bool,
}

impl Default for BuilderOptions {
    fn default() -> Self {
        BuilderOptions {
            block_records: 64,
            bloom_bits_per_key: 10,
            model: None,
            model_budget: None,
            compression: Compression::None,
            compress_keys: true,
            head_bytes: None,
            block_prefixes: true,
        }
    }
}

/// What [`Builder::finish`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableSummary {
    /// Size of the file in bytes.
    pub file_size: u64,
    /// Number of entries.
    pub entries: u64,
    /// First internal key.
    pub smallest: InternalKey,
    /// Last internal key.
    pub largest: InternalKey,
    /// What at-build learning cost this table.
    pub model_time: ModelTime,
    /// The value-log segments its pointers point into (empty without pointers).
    pub value_segments: SegmentSpan,
    /// Its expiring values' count and times (`None` without any).
    pub expiry: Option<crate::expiry::ExpirySummary>,
}

/// The cost of training a table's model while it is built (Bourbon "at build").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ModelTime {
    /// CPU nanoseconds spent training and encoding the model (0 without one): the work. CPU
    /// time of the training thread, not wall time, which would also count the time that
    /// thread waited for a core while the builder and other threads ran.
    pub train_ns: u64,
    /// Nanoseconds the build waited for the model once every other section was written (a
    /// large table's model is trained beside them): what training added to the wall time.
    pub wait_ns: u64,
}

impl ModelTime {
    /// Adds `other`'s times to these.
    pub fn add(&mut self, other: ModelTime) {
        self.train_ns += other.train_ns;
        self.wait_ns += other.wait_ns;
    }
}

/// Writes one table to a file. Not thread-safe; one builder per output file.
pub struct Builder {
    file: Box<dyn WritableFile>,
    path: PathBuf,
    opts: BuilderOptions,
    hints: LayoutHints,
    /// Entries of the sample at most, and bytes of its keys and of its inline values.
    sample_limits: (usize, usize, usize),
    /// The sample, then the block being filled.
    pending: Pending,
    /// Once the sample is full: the layout and the writer of the blocks.
    stream: Option<(Streaming, BlockWriter)>,
    /// Overflow bytes (key bytes past the head) of the pending block, once streaming.
    pending_overflow: u64,
    filter: FilterBuilder,
    /// What the at-build model is trained from, taken once the stripped prefix is chosen
    /// (`None` without a model).
    training: Option<TrainingInput>,
    smallest: Option<InternalKey>,
    last_key: Vec<u8>,
    last_trailer: u64,
    entries: u64,
    max_key_len: usize,
    raw_key_bytes: u64,
    raw_value_bytes: u64,
    /// Smallest and largest seqno added.
    seqnos: Option<(SeqNo, SeqNo)>,
    deletes: u64,
    inline_values: u64,
    pointers: u64,
    pointer_value_bytes: u64,
    max_inline_value_len: u32,
    /// The value-log segments the pointers point into.
    value_segments: SegmentSpan,
    expiry: Option<crate::expiry::ExpirySummary>,
}

impl std::fmt::Debug for Builder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Builder")
            .field("path", &self.path)
            .field("opts", &self.opts)
            .field("entries", &self.entries)
            .field("streaming", &self.stream.is_some())
            .finish_non_exhaustive()
    }
}

impl Builder {
    /// A builder writing to `file`, which lives at `path` (used in error messages), knowing
    /// nothing of the entries to come: a table larger than the sample gets widths that store
    /// any entry. Prefer [`Builder::with_hints`] when bounds are known.
    #[cfg(any(test, feature = "test-util"))]
    pub fn new(file: Box<dyn WritableFile>, path: PathBuf, opts: BuilderOptions) -> Builder {
        Builder::with_hints(file, path, opts, LayoutHints::default())
    }

    /// A builder writing to `file` at `path` whose entries will satisfy `hints` (each set
    /// field a sound bound over every entry added; see [`LayoutHints`]). An entry outside
    /// them is accepted while the layout can still store it, refused otherwise.
    pub fn with_hints(
        file: Box<dyn WritableFile>,
        path: PathBuf,
        opts: BuilderOptions,
        hints: LayoutHints,
    ) -> Builder {
        Builder {
            file,
            path,
            opts,
            hints,
            sample_limits: (SAMPLE_ENTRIES, SAMPLE_KEY_BYTES, SAMPLE_VALUE_BYTES),
            pending: Pending::default(),
            stream: None,
            pending_overflow: 0,
            filter: FilterBuilder::new(opts.bloom_bits_per_key),
            training: opts
                .model
                .map(|c| TrainingInput::for_config(&c, opts.model_budget.is_some())),
            smallest: None,
            last_key: Vec::new(),
            last_trailer: 0,
            entries: 0,
            max_key_len: 0,
            raw_key_bytes: 0,
            raw_value_bytes: 0,
            seqnos: None,
            deletes: 0,
            inline_values: 0,
            pointers: 0,
            pointer_value_bytes: 0,
            max_inline_value_len: 0,
            value_segments: SegmentSpan::EMPTY,
            expiry: None,
        }
    }

    /// Ends the sample after exactly `n` entries (at least 1), whatever their bytes, so tests
    /// reach the streaming path with small tables (or, with `usize::MAX`, never).
    #[cfg(test)]
    pub(crate) fn with_sample_entries(mut self, n: usize) -> Builder {
        self.sample_limits = (n.max(1), usize::MAX, usize::MAX);
        self
    }

    fn block_records(&self) -> Result<u32> {
        match u32::try_from(self.opts.block_records) {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(Error::InvalidArgument(format!(
                "block_records must be in 1..=u32::MAX, got {}",
                self.opts.block_records
            ))),
        }
    }

    /// Adds an entry; writes a block when it fills one (after the sample).
    ///
    /// REQUIRES: strictly increasing internal-key order (user key ascending, seqno strictly
    /// descending within a user key). `value` is the inline value (`Value`), the 20-byte
    /// encoded [`ValuePointer`] (`Pointer`) or empty (`Delete`).
    ///
    /// # Errors
    /// `InvalidArgument` when the order, key length, seqno or value shape is violated, the
    /// options are invalid, or the entry lies outside what the layout chosen for this table
    /// stores (outside the [`LayoutHints`]); the builder is unchanged then. `Io` when writing
    /// a block fails (the builder is then unusable).
    pub fn add(
        &mut self,
        user_key: &[u8],
        seqno: SeqNo,
        kind: ValueKind,
        value: &[u8],
    ) -> Result<()> {
        let block_records = self.block_records()?;
        let invalid = |why: String| Err(Error::InvalidArgument(why));
        if user_key.len() > MAX_KEY_LEN {
            return invalid(format!(
                "key of {} bytes exceeds MAX_KEY_LEN",
                user_key.len()
            ));
        }
        if seqno > MAX_SEQNO {
            return invalid(format!("seqno {seqno} exceeds MAX_SEQNO"));
        }
        let trailer = pack_trailer(seqno, kind);
        let new_user_key = self.entries == 0 || self.last_key.as_slice() != user_key;
        if self.entries > 0 {
            let ordered = match self.last_key.as_slice().cmp(user_key) {
                Ordering::Less => true,
                Ordering::Equal => (self.last_trailer >> 8) > seqno,
                Ordering::Greater => false,
            };
            if !ordered {
                return invalid(format!(
                    "entries out of order in {}: key {:?} seqno {seqno} after key {:?} seqno {}",
                    self.path.display(),
                    user_key,
                    self.last_key,
                    self.last_trailer >> 8
                ));
            }
        }
        let pending_value = match kind {
            ValueKind::Value | ValueKind::ExpiringValue => {
                if u32::try_from(value.len()).is_err() {
                    return invalid(format!("inline value of {} bytes", value.len()));
                }
                PendingValue::Inline { start: 0, len: 0 }
            }
            ValueKind::Pointer => match ValuePointer::decode(value) {
                Some(p) => PendingValue::Pointer(p.encode()),
                None => return invalid(format!("pointer value of {} bytes", value.len())),
            },
            ValueKind::Delete => {
                if !value.is_empty() {
                    return invalid("a tombstone carries no value".to_string());
                }
                PendingValue::Tombstone
            }
        };
        if let Some((layout, _)) = &self.stream {
            let block_values = self.pending.values.len() as u64;
            if let Some(why) = layout.check(
                user_key,
                trailer,
                kind,
                value.len(),
                self.pending_overflow,
                block_values,
            ) {
                return invalid(format!("{why} in {}", self.path.display()));
            }
            let rest = user_key.len() - layout.prefix.len();
            self.pending_overflow += rest.saturating_sub(layout.params.head_bytes as usize) as u64;
            if let Some(t) = self.training.as_mut() {
                t.push(user_key, layout.prefix.len());
            }
        }
        // Checked: from here on the entry is added.
        match pending_value {
            PendingValue::Inline { .. } => {
                if kind == ValueKind::ExpiringValue {
                    if let Some((at, _)) = crate::expiry::split(value) {
                        crate::expiry::ExpirySummary::include(&mut self.expiry, at);
                    }
                }
                self.inline_values += 1;
                self.raw_value_bytes += value.len() as u64;
                let len = u32::try_from(value.len()).unwrap_or(u32::MAX);
                self.max_inline_value_len = self.max_inline_value_len.max(len);
            }
            PendingValue::Pointer(_) => {
                self.pointers += 1;
                if let Some(p) = ValuePointer::decode(value) {
                    self.pointer_value_bytes += u64::from(p.len);
                    self.value_segments.include(p.segment);
                }
            }
            PendingValue::Tombstone => self.deletes += 1,
        }
        if new_user_key {
            self.filter.add(user_key);
            self.last_key.clear();
            self.last_key.extend_from_slice(user_key);
        }
        if self.smallest.is_none() {
            self.smallest = Some(InternalKey::new(user_key.to_vec(), seqno, kind));
        }
        self.last_trailer = trailer;
        self.entries += 1;
        self.max_key_len = self.max_key_len.max(user_key.len());
        self.raw_key_bytes += user_key.len() as u64;
        self.seqnos = Some(match self.seqnos {
            None => (seqno, seqno),
            Some((lo, hi)) => (lo.min(seqno), hi.max(seqno)),
        });
        self.pending.push(user_key, trailer, pending_value, value);
        if let Some((_, writer)) = &mut self.stream {
            if self.pending.len() >= block_records as usize {
                writer.write(&mut *self.file, &self.path, &self.pending, &self.pending.entries)?;
                self.pending.clear();
                self.pending_overflow = 0;
            }
            return Ok(());
        }
        if self.sample_full() {
            self.start_streaming(block_records)?;
        }
        Ok(())
    }

    /// True once the sample holds as much as it may.
    fn sample_full(&self) -> bool {
        let (entries, key_bytes, value_bytes) = self.sample_limits;
        self.pending.len() >= entries
            || self.pending.key_bytes() >= key_bytes
            || self.pending.values.len() >= value_bytes
    }

    /// Ends the sample: chooses the layout from it and the hints, projects its keys, and
    /// writes its full blocks (the rest starts the next block).
    fn start_streaming(&mut self, block_records: u32) -> Result<()> {
        let layout = Streaming::choose(&self.pending, &self.hints, &self.opts, block_records);
        let prefix_len = layout.prefix.len();
        if let Some(t) = self.training.as_mut() {
            for e in &self.pending.entries {
                t.push(self.pending.key(e), prefix_len);
            }
        }
        let mut writer = BlockWriter::new(layout.params, &self.opts, layout.block_prefixes);
        writer.watch_drift(layout.max_rest());
        let full = self.pending.len() / block_records as usize * block_records as usize;
        for chunk in self
            .pending
            .entries
            .get(..full)
            .unwrap_or_default()
            .chunks(block_records as usize)
        {
            writer.write(&mut *self.file, &self.path, &self.pending, chunk)?;
        }
        self.pending.drain_front(full);
        let head = layout.params.head_bytes as usize;
        self.pending_overflow = self
            .pending
            .entries
            .iter()
            .map(|e| (self.pending.key(e).len() - prefix_len).saturating_sub(head) as u64)
            .sum();
        self.stream = Some((layout, writer));
        Ok(())
    }

    /// Whether the table's layout, chosen from its first entries, has stopped fitting its
    /// keys: some window of the blocks written since would take at least a sixteenth fewer
    /// bytes in the head width chosen from its own keys (`layout::LayoutDrift`). A caller
    /// that may end the table early (a compaction) should, so that the next table chooses
    /// its layout from keys of the new shape. Always false for a table still within its
    /// sample.
    pub fn layout_drifted(&self) -> bool {
        self.stream.as_ref().is_some_and(|(_, w)| w.layout_drifted())
    }

    /// Entries added so far.
    #[cfg(test)]
    pub fn entries(&self) -> u64 {
        self.entries
    }

    /// Bytes of memory the builder holds for entries not yet written and for encoding one
    /// block: the sample or the pending block, and the block buffers. Bounded by the sample
    /// limits and the largest block, whatever the table's size; the per-block and per-key
    /// metadata of the module doc (index records, filter hashes, projections) is not counted.
    #[cfg(test)]
    pub fn buffered_bytes(&self) -> usize {
        self.pending.buffered_bytes()
            + self.last_key.capacity()
            + self
                .stream
                .as_ref()
                .map_or(0, |(l, w)| w.buffered_bytes() + l.prefix.capacity())
    }

    /// Size the file would have if finished now, with value chunks and data blocks
    /// uncompressed (close for the slots and value chunks, estimated for the index and
    /// properties); use it to cut files at the target size.
    pub fn estimated_size_bytes(&self) -> u64 {
        if self.entries == 0 {
            return FOOTER_LEN as u64;
        }
        let block_records = self.opts.block_records.max(1) as u64;
        let n = self.pending.len() as u64;
        let key_width = self.max_key_len as u64;
        let tail = self.filter.estimated_bytes() + 2 * key_width + 160 + FOOTER_LEN as u64;
        if let Some((_, writer)) = &self.stream {
            // Written blocks exactly; the pending block from its slots and bytes.
            return writer.raw_bytes
                + writer.index.len() as u64
                + n * writer.slot_bytes()
                + self.pending_overflow
                + self.pending.values.len() as u64
                + n.div_ceil(block_records) * (key_width + INDEX_RECORD_FIXED_BYTES)
                + tail;
        }
        let (Some(first), Some(last)) = (self.pending.entries.first(), self.pending.entries.last())
        else {
            return FOOTER_LEN as u64;
        };
        let prefix = crate::index::projection::common_prefix_len(
            self.pending.key(first),
            self.pending.key(last),
        ) as u64;
        let rest_bytes = (self.pending.key_bytes() as u64).saturating_sub(n * prefix);
        let trailer = self
            .seqnos
            .map_or(1, |(lo, hi)| slot::width_of(((hi - lo) << 8) | 0xff));
        let reference = match (self.pointers, self.inline_values) {
            (0, 0) => 0,
            (0, _) => 2,
            _ => POINTER_REF_BYTES as u64,
        };
        rest_bytes
            + n * (1 + u64::from(trailer) + reference)
            + self.pending.values.len() as u64
            + n.div_ceil(block_records) * (key_width + INDEX_RECORD_FIXED_BYTES)
            + tail
    }

    /// Writes the last block (or, for a table that ended within its sample, every block in
    /// the layout chosen from all its entries), then the filter, index, model and properties
    /// sections and the footer, and syncs the file.
    ///
    /// # Errors
    /// `InvalidArgument` when no entry was added or the options are invalid; `Io` when a
    /// write or the sync fails (the file is then unusable and should be removed).
    pub fn finish(mut self) -> Result<TableSummary> {
        let block_records = self.block_records()?;
        let Some(smallest) = self.smallest.take() else {
            return Err(Error::InvalidArgument(format!(
                "cannot finish the empty table {}",
                self.path.display()
            )));
        };
        let largest = InternalKey::new(
            self.last_key.clone(),
            self.last_trailer >> 8,
            crate::key::unpack_trailer(self.last_trailer).map_or(ValueKind::Delete, |(_, k)| k),
        );
        let writer = match self.stream.take() {
            Some((_, writer)) => writer,
            None => {
                let (params, block_prefixes) =
                    layout::exact(&self.pending, &self.opts, block_records);
                if let Some(t) = self.training.as_mut() {
                    let prefix = params.prefix_len as usize;
                    for e in &self.pending.entries {
                        t.push(self.pending.key(e), prefix);
                    }
                }
                BlockWriter::new(params, &self.opts, block_prefixes)
            }
        };
        let training = self.training.take();
        std::thread::scope(|scope| {
            // At-build training runs beside the writing of the remaining sections (a large
            // table's on its own thread), from what was taken as keys were added.
            let budget = self.opts.model_budget;
            let records_per_block = block_records as usize;
            let trainer = self
                .opts
                .model
                .zip(training)
                .map(|(config, input)| {
                    let large = input.len() >= PIPELINED_TRAINING_MIN_ENTRIES;
                    let train = move || {
                        let started = CpuStopwatch::start();
                        let model = train_model(&config, budget, records_per_block, &input);
                        (model, started.elapsed_ns())
                    };
                    if large {
                        Trainer::Thread(scope.spawn(train))
                    } else {
                        Trainer::Inline(Box::new(train))
                    }
                });
            self.write_sections(writer, smallest, largest, block_records, trainer)
        })
    }

    /// [`Builder::finish`] once the layout is fixed and the model's training under way: the
    /// pending blocks, the filter and index sections, then the model when `trainer` yields
    /// it, the properties and the footer.
    fn write_sections(
        &mut self,
        mut writer: BlockWriter,
        smallest: InternalKey,
        largest: InternalKey,
        block_records: u32,
        trainer: Option<Trainer<'_, '_>>,
    ) -> Result<TableSummary> {
        for chunk in self.pending.entries.chunks(block_records as usize) {
            writer.write(&mut *self.file, &self.path, &self.pending, chunk)?;
        }
        self.pending.clear();
        let mut footer = Footer {
            version: FORMAT_VERSION,
            data: Section {
                offset: 0,
                len: writer.data_end,
                crc: 0,
            },
            ..Footer::default()
        };
        // Format 3: the value chunks are interleaved with the blocks; the value section is
        // empty.
        let mut offset = footer.data.len;
        let mut write_section = |file: &mut Box<dyn WritableFile>, bytes: &[u8], crc_of: bool| {
            let s = Section {
                offset,
                len: bytes.len() as u64,
                crc: if crc_of { crate::checksum::crc(bytes) } else { 0 },
            };
            offset += s.len;
            file.append(bytes).map(|()| s)
        };
        footer.values = write_section(&mut self.file, &[], false)?;
        footer.filter = write_section(&mut self.file, &self.filter.finish(), true)?;
        footer.index = write_section(&mut self.file, &writer.index, true)?;
        let waited = Instant::now();
        let (model, model_train_ns) = match trainer {
            None => (Ok(Vec::new()), 0),
            Some(Trainer::Inline(train)) => train(),
            Some(Trainer::Thread(handle)) => handle
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
        };
        let model = model?;
        let model_wait_ns = if model.is_empty() {
            0
        } else {
            elapsed_ns(waited)
        };
        footer.model = write_section(&mut self.file, &model, true)?;
        let props = Properties {
            entries: self.entries,
            key_width: self.max_key_len as u32,
            block_records,
            blocks: writer.blocks,
            common_prefix_len: writer.params.prefix_len,
            bloom_bits_per_key: self.opts.bloom_bits_per_key,
            deletes: self.deletes,
            inline_values: self.inline_values,
            pointers: self.pointers,
            raw_key_bytes: self.raw_key_bytes,
            raw_value_bytes: self.raw_value_bytes,
            pointer_value_bytes: self.pointer_value_bytes,
            smallest: smallest.clone(),
            largest: largest.clone(),
            slot: writer.params,
            max_inline_value_len: Some(self.max_inline_value_len),
        };
        footer.properties = write_section(&mut self.file, &props.encode(), true)?;
        self.file.append(&footer.encode())?;
        self.file.sync()?;
        Ok(TableSummary {
            file_size: self.file.len(),
            entries: props.entries,
            smallest,
            largest,
            model_time: ModelTime {
                train_ns: model_train_ns,
                wait_ns: model_wait_ns,
            },
            value_segments: self.value_segments,
            expiry: self.expiry,
        })
    }
}

/// Tables with at least this many entries train their model on a thread of their own while
/// the last sections are written (below it, a thread costs more than it saves).
const PIPELINED_TRAINING_MIN_ENTRIES: usize = 16 * 1024;

/// The result of training: the encoded model (empty without one) and the training time.
type Trained = (Result<Vec<u8>>, u64);

/// Where a table's model is being trained.
enum Trainer<'scope, 'env> {
    /// Trained when the other sections are written (small tables).
    Inline(Box<dyn FnOnce() -> Trained + Send + 'env>),
    /// Being trained on a scoped thread.
    Thread(std::thread::ScopedJoinHandle<'scope, Trained>),
}

fn elapsed_ns(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// What an at-build model is trained from: one item per entry, in order (so positions are
/// slot positions), against the stripped prefix.
enum TrainingInput {
    /// The keys' projections (the integer models).
    Projections(Vec<u64>),
    /// The keys without the prefix (a string tree; PLR and the chooser, which try string
    /// trees where projections collide).
    Keys(KeyArena),
}

impl TrainingInput {
    /// The input a model of `config` (chosen per file when `chooser`) trains from.
    fn for_config(config: &IndexConfig, chooser: bool) -> TrainingInput {
        match config.kind {
            _ if chooser => TrainingInput::Keys(KeyArena::default()),
            IndexKind::StringTree | IndexKind::Plr => TrainingInput::Keys(KeyArena::default()),
            _ => TrainingInput::Projections(Vec::new()),
        }
    }

    /// Takes the entry of `user_key` (which starts with the `prefix_len`-byte prefix).
    fn push(&mut self, user_key: &[u8], prefix_len: usize) {
        match self {
            TrainingInput::Projections(p) => p.push(project(user_key, prefix_len)),
            TrainingInput::Keys(k) => k.push(user_key.get(prefix_len..).unwrap_or_default()),
        }
    }

    /// Entries taken.
    fn len(&self) -> usize {
        match self {
            TrainingInput::Projections(p) => p.len(),
            TrainingInput::Keys(k) => k.len(),
        }
    }
}

/// Trains an index of `config` (or the model chooser's pick within `budget` for a table of
/// `block_records` entries per block) over `input` and returns its encoding: empty when the
/// chooser keeps the table's own fence path (no model).
fn train_model(
    config: &IndexConfig,
    budget: Option<ModelBudget>,
    block_records: usize,
    input: &TrainingInput,
) -> Result<Vec<u8>> {
    let projected = match input {
        TrainingInput::Projections(p) => p,
        TrainingInput::Keys(keys) => {
            let mut out = Vec::new();
            let model = match budget {
                Some(budget) => chooser::choose_keys(&keys.keys(), config, budget, block_records)?,
                None => Some(index::train_keys(config, &keys.keys())?),
            };
            if let Some(model) = model {
                model.encode(&mut out);
            }
            return Ok(out);
        }
    };
    if let Some(budget) = budget {
        let mut out = Vec::new();
        chooser::choose(projected, config, budget)?.encode(&mut out);
        return Ok(out);
    }
    let mut builder = index::builder(config);
    // Fitted a chunk at a time: each batch's order check and its fit read the chunk from L1.
    const CHUNK: usize = 1024;
    for chunk in projected.chunks(CHUNK) {
        builder.add_all(chunk)?;
    }
    let mut out = Vec::new();
    builder.finish()?.encode(&mut out);
    Ok(out)
}
