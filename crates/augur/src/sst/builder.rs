//! [`Builder`]: writes one SSTable (format 2) from entries given in internal-key order (the
//! last step of a memtable flush or of a compaction's merge).
//!
//! The slot layout (head width, field widths, the stripped prefix) depends on every key of
//! the file and is only known once every entry has been added, so the builder buffers the
//! file's entries in memory (keys, references and inline values; about 40 bytes of overhead
//! per entry) and writes the whole file in [`Builder::finish`]. A table is at most the target
//! file size (tens of MiB), so the buffer is bounded by it; callers cut files with
//! [`Builder::estimated_size_bytes`].

use crate::checksum::crc;
use crate::compression::{compress_frames, Compression};
use crate::error::{Error, Result};
use crate::fs::WritableFile;
use crate::index::chooser::{self, ModelBudget};
use crate::index::projection::common_prefix_len;
use crate::index::{self, IndexConfig};
use crate::key::{compare, pack_trailer, InternalKey, SeqNo, ValueKind, MAX_KEY_LEN, MAX_SEQNO};
use crate::sst::fence;
use crate::sst::filter::FilterBuilder;
use crate::sst::format::{ChunkRef, Footer, Section, FORMAT_VERSION};
use crate::sst::key_projections::KeyProjections;
use crate::sst::properties::Properties;
use crate::sst::slot::{self, SlotLayout, SlotParams, POINTER_REF_BYTES};
use crate::stats::cpu_time::CpuStopwatch;
use crate::vlog::ValuePointer;
use std::cmp::Ordering;
use std::path::PathBuf;
use std::time::Instant;

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
    /// How each data block's value chunk is compressed.
    pub compression: Compression,
    /// Width of the slot's key head; `None` chooses per file the width that stores the keys
    /// in the fewest bytes (`slot::choose_head`).
    pub head_bytes: Option<u32>,
}

impl Default for BuilderOptions {
    fn default() -> Self {
        BuilderOptions {
            block_records: 64,
            bloom_bits_per_key: 10,
            model: None,
            model_budget: None,
            compression: Compression::None,
            head_bytes: None,
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

/// What a buffered entry holds besides its key.
#[derive(Debug)]
enum PendingValue {
    /// An inline value: its range in the builder's value buffer.
    Inline { start: u64, len: u32 },
    /// The encoded value pointer.
    Pointer([u8; POINTER_REF_BYTES]),
    /// A tombstone.
    Tombstone,
}

/// One buffered entry: where its key is in the key arena, its trailer and its value.
#[derive(Debug)]
struct Pending {
    key_start: usize,
    key_len: u16,
    trailer: u64,
    value: PendingValue,
}

/// Writes one table to a file. Not thread-safe; one builder per output file.
pub struct Builder {
    file: Box<dyn WritableFile>,
    path: PathBuf,
    opts: BuilderOptions,
    /// User keys of all entries, concatenated.
    keys: Vec<u8>,
    entries: Vec<Pending>,
    /// The value section being accumulated.
    values: Vec<u8>,
    filter: FilterBuilder,
    /// The keys' projections for the model, taken as they are added (`None` without a model).
    projections: Option<KeyProjections>,
    max_key_len: usize,
    /// Smallest and largest seqno added (the trailer field's range).
    seqnos: Option<(SeqNo, SeqNo)>,
    deletes: u64,
    inline_values: u64,
    pointers: u64,
    pointer_value_bytes: u64,
}

impl std::fmt::Debug for Builder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Builder")
            .field("path", &self.path)
            .field("opts", &self.opts)
            .field("entries", &self.entries.len())
            .finish_non_exhaustive()
    }
}

impl Builder {
    /// A builder writing to `file`, which lives at `path` (used in error messages).
    pub fn new(file: Box<dyn WritableFile>, path: PathBuf, opts: BuilderOptions) -> Builder {
        Builder {
            file,
            path,
            opts,
            keys: Vec::new(),
            entries: Vec::new(),
            values: Vec::new(),
            filter: FilterBuilder::new(opts.bloom_bits_per_key),
            projections: opts.model.map(|_| KeyProjections::default()),
            max_key_len: 0,
            seqnos: None,
            deletes: 0,
            inline_values: 0,
            pointers: 0,
            pointer_value_bytes: 0,
        }
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

    fn key_of(&self, e: &Pending) -> &[u8] {
        key_in(&self.keys, e)
    }

    /// Adds an entry.
    ///
    /// REQUIRES: strictly increasing internal-key order (user key ascending, seqno strictly
    /// descending within a user key). `value` is the inline value (`Value`), the 20-byte
    /// encoded [`ValuePointer`] (`Pointer`) or empty (`Delete`).
    ///
    /// # Errors
    /// `InvalidArgument` when the order, key length, seqno or value shape is violated or the
    /// options are invalid; the builder is unchanged then.
    pub fn add(
        &mut self,
        user_key: &[u8],
        seqno: SeqNo,
        kind: ValueKind,
        value: &[u8],
    ) -> Result<()> {
        self.block_records()?;
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
        if let Some(last) = self.entries.last() {
            let last_key = self.key_of(last);
            let ordered = match last_key.cmp(user_key) {
                Ordering::Less => true,
                Ordering::Equal => (last.trailer >> 8) > seqno,
                Ordering::Greater => false,
            };
            if !ordered {
                return invalid(format!(
                    "entries out of order in {}: key {:?} seqno {seqno} after key {:?} seqno {}",
                    self.path.display(),
                    user_key,
                    last_key,
                    last.trailer >> 8
                ));
            }
            debug_assert_eq!(
                compare(last_key, last.trailer, user_key, trailer),
                Ordering::Less
            );
        }
        let pending_value = match kind {
            ValueKind::Value => {
                let Ok(len) = u32::try_from(value.len()) else {
                    return invalid(format!("inline value of {} bytes", value.len()));
                };
                PendingValue::Inline {
                    start: self.values.len() as u64,
                    len,
                }
            }
            ValueKind::Pointer => match ValuePointer::decode(value) {
                Some(p) => {
                    self.pointer_value_bytes += u64::from(p.len);
                    PendingValue::Pointer(p.encode())
                }
                None => return invalid(format!("pointer value of {} bytes", value.len())),
            },
            ValueKind::Delete => {
                if !value.is_empty() {
                    return invalid("a tombstone carries no value".to_string());
                }
                PendingValue::Tombstone
            }
        };
        match kind {
            ValueKind::Value => {
                self.values.extend_from_slice(value);
                self.inline_values += 1;
            }
            ValueKind::Pointer => self.pointers += 1,
            ValueKind::Delete => self.deletes += 1,
        }
        let new_user_key = self
            .entries
            .last()
            .is_none_or(|last| self.key_of(last) != user_key);
        if new_user_key {
            self.filter.add(user_key);
        }
        if let Some(projections) = self.projections.as_mut() {
            let first = match self.entries.first() {
                Some(e) => key_in(&self.keys, e),
                None => user_key,
            };
            projections.add(first, user_key);
        }
        self.entries.push(Pending {
            key_start: self.keys.len(),
            key_len: user_key.len() as u16,
            trailer,
            value: pending_value,
        });
        self.keys.extend_from_slice(user_key);
        self.max_key_len = self.max_key_len.max(user_key.len());
        self.seqnos = Some(match self.seqnos {
            None => (seqno, seqno),
            Some((lo, hi)) => (lo.min(seqno), hi.max(seqno)),
        });
        Ok(())
    }

    /// Entries added so far.
    pub fn entries(&self) -> u64 {
        self.entries.len() as u64
    }

    /// Size the file would have if finished now, uncompressed (close for the slots and value
    /// section, estimated for the index and properties); use it to cut files at the target
    /// size.
    pub fn estimated_size_bytes(&self) -> u64 {
        let n = self.entries.len() as u64;
        let (Some(first), Some(last)) = (self.entries.first(), self.entries.last()) else {
            return super::format::FOOTER_LEN as u64;
        };
        let prefix = common_prefix_len(self.key_of(first), self.key_of(last)) as u64;
        let rest_bytes = (self.keys.len() as u64).saturating_sub(n * prefix);
        let trailer = self
            .seqnos
            .map_or(1, |(lo, hi)| slot::width_of(((hi - lo) << 8) | 0xff));
        let reference = match (self.pointers, self.inline_values) {
            (0, 0) => 0,
            (0, _) => 4,
            _ => POINTER_REF_BYTES as u64,
        };
        let blocks = n.div_ceil(self.opts.block_records.max(1) as u64);
        rest_bytes
            + n * (1 + u64::from(trailer) + reference)
            + self.values.len() as u64
            + self.filter.estimated_bytes()
            + blocks * (self.max_key_len as u64 + 40)
            + 2 * self.max_key_len as u64
            + 160
            + super::format::FOOTER_LEN as u64
    }

    /// The slot layout that stores these entries in the fewest bytes (or with the head
    /// width the options ask for): see `docs/format/sst.md` "Data section".
    fn choose_slot_params(
        &self,
        entries: &[Pending],
        prefix: usize,
        block_records: u32,
    ) -> SlotParams {
        let rests: Vec<u32> = entries
            .iter()
            .map(|e| (usize::from(e.key_len) - prefix) as u32)
            .collect();
        let longest = rests.iter().copied().max().unwrap_or(0);
        let shortest = rests.iter().copied().min().unwrap_or(0);
        let head = match self.opts.head_bytes {
            Some(h) => h.min(longest),
            None => slot::choose_head(&rests),
        };
        let len_bytes = if shortest == longest {
            0
        } else if longest <= 255 {
            1
        } else {
            2
        };
        let mut max_suffix_chunk = 0u64;
        let mut max_value_chunk = 0u64;
        for chunk in entries.chunks(block_records as usize) {
            let overflow: u64 = chunk
                .iter()
                .map(|e| u64::from((u32::from(e.key_len) - prefix as u32).saturating_sub(head)))
                .sum();
            max_suffix_chunk = max_suffix_chunk.max(overflow);
            let values = block_values(chunk);
            max_value_chunk = max_value_chunk.max(values.end - values.start);
        }
        let suffix_bytes = match max_suffix_chunk {
            0 => 0,
            n if n <= u64::from(u16::MAX) => 2,
            _ => 4,
        };
        let (lowest_seqno, _) = self.seqnos.unwrap_or((0, 0));
        let trailer_base = lowest_seqno << 8;
        let max_trailer = entries.iter().map(|e| e.trailer).max().unwrap_or(0);
        let ref_bytes = if self.pointers > 0 {
            POINTER_REF_BYTES as u8
        } else if self.inline_values == 0 {
            0
        } else if max_value_chunk <= u64::from(u16::MAX) {
            4
        } else {
            8
        };
        SlotParams {
            prefix_len: prefix as u32,
            head_bytes: head,
            len_bytes,
            fixed_rest_len: if len_bytes == 0 { longest } else { 0 },
            suffix_bytes,
            trailer_bytes: slot::width_of(max_trailer - trailer_base),
            trailer_base,
            ref_bytes,
            v1_refs: false,
        }
    }

    fn internal_key(&self, e: &Pending) -> InternalKey {
        let (seqno, kind) = crate::key::unpack_trailer(e.trailer).unwrap_or((0, ValueKind::Delete));
        InternalKey::new(self.key_of(e).to_vec(), seqno, kind)
    }

    /// Writes the data, value, filter, index, model and properties sections and the footer,
    /// then syncs the file.
    ///
    /// # Errors
    /// `InvalidArgument` when no entry was added or the options are invalid; `Io` when a
    /// write or the sync fails (the file is then unusable and should be removed).
    pub fn finish(mut self) -> Result<TableSummary> {
        let block_records = self.block_records()?;
        let (Some(first), Some(last)) = (self.entries.first(), self.entries.last()) else {
            return Err(Error::InvalidArgument(format!(
                "cannot finish the empty table {}",
                self.path.display()
            )));
        };
        let smallest = self.internal_key(first);
        let largest = self.internal_key(last);
        let common_prefix = common_prefix_len(&smallest.user_key, &largest.user_key);
        let (entries, keys, projections) = (
            std::mem::take(&mut self.entries),
            std::mem::take(&mut self.keys),
            self.projections.take(),
        );
        let (entries, keys) = (entries.as_slice(), keys.as_slice());
        debug_assert!(projections
            .as_ref()
            .is_none_or(|p| p.prefix() == common_prefix));
        std::thread::scope(|scope| {
            // At-build training runs beside the writing of the other sections (a large
            // table's on its own thread): it reads the projections taken at `add` (and the
            // buffered keys of those projected before the common prefix settled).
            let budget = self.opts.model_budget;
            let trainer = self
                .opts
                .model
                .zip(projections)
                .map(|(config, projections)| {
                    let train = move || {
                        let started = CpuStopwatch::start();
                        // The keys projected before the common prefix settled, again.
                        let projected = projections
                            .finish(|i| entries.get(i).map_or(&[][..], |e| key_in(keys, e)));
                        let model = train_model(&config, budget, &projected);
                        (model, started.elapsed_ns())
                    };
                    if entries.len() >= PIPELINED_TRAINING_MIN_ENTRIES {
                        Trainer::Thread(scope.spawn(train))
                    } else {
                        Trainer::Inline(Box::new(train))
                    }
                });
            let layout = Layout {
                smallest,
                largest,
                block_records,
                common_prefix,
            };
            self.write_sections(entries, keys, layout, trainer)
        })
    }

    /// [`Builder::finish`] once the model's training is under way: the data, value, filter and
    /// index sections, then the model when `trainer` yields it, the properties and the footer.
    fn write_sections(
        &mut self,
        entries: &[Pending],
        keys: &[u8],
        layout: Layout,
        trainer: Option<Trainer<'_, '_>>,
    ) -> Result<TableSummary> {
        let Layout {
            smallest,
            largest,
            block_records,
            common_prefix,
        } = layout;
        let key_width = self.max_key_len;
        let params = self.choose_slot_params(entries, common_prefix, block_records);
        let layout = SlotLayout::new(params, key_width as u32);
        let prefix_len = common_prefix;
        let mut footer = Footer {
            version: FORMAT_VERSION,
            ..Footer::default()
        };

        // Data section: blocks of fixed-width slots, each followed by its keys' overflows and
        // then by its value chunk (compressed when that pays); the value section stays empty
        // (format 3). Where both lie and their checksums go to the fence index.
        let mut index = Vec::new();
        let mut block = Vec::new();
        let mut suffixes = Vec::new();
        let mut compressed = Vec::new();
        let mut value_ends = Vec::new();
        let mut reference = Vec::with_capacity(POINTER_REF_BYTES);
        let field = params.value_field_bytes();
        let ref_bytes = usize::from(params.ref_bytes);
        let head = params.head_bytes as usize;
        let mut data_end = 0u64;
        for chunk in entries.chunks(block_records as usize) {
            block.clear();
            suffixes.clear();
            let values = block_values(chunk);
            let raw_values = self
                .values
                .get(values.start as usize..values.end as usize)
                .unwrap_or_default();
            if u32::try_from(raw_values.len()).is_err() {
                return Err(Error::InvalidArgument(format!(
                    "the inline values of one block of {} exceed 4 GiB",
                    self.path.display()
                )));
            }
            for e in chunk {
                let rest = key_in(keys, e).get(prefix_len..).unwrap_or_default();
                reference.clear();
                match &e.value {
                    PendingValue::Inline { start, len } => ChunkRef {
                        offset: (start - values.start) as u32,
                        len: *len,
                    }
                    .encode(&mut reference, field, ref_bytes),
                    PendingValue::Pointer(p) => reference.extend_from_slice(p),
                    PendingValue::Tombstone => reference.resize(ref_bytes, 0),
                }
                layout.encode(&mut block, rest, suffixes.len(), e.trailer, &reference);
                suffixes.extend_from_slice(rest.get(head..).unwrap_or_default());
            }
            let Some(block_last) = chunk.last() else {
                continue;
            };
            block.extend_from_slice(&suffixes);
            value_ends.clear();
            value_ends.extend(chunk.iter().filter_map(|e| match e.value {
                PendingValue::Inline { start, len } => {
                    Some((start + u64::from(len) - values.start) as usize)
                }
                _ => None,
            }));
            let codec = compress_frames(
                self.opts.compression,
                raw_values,
                &value_ends,
                &mut compressed,
            );
            let stored: &[u8] = if codec == 0 { raw_values } else { &compressed };
            let block_end = data_end + block.len() as u64;
            data_end = block_end + stored.len() as u64;
            fence::Record {
                last_user_key: key_in(keys, block_last),
                last_trailer: block_last.trailer,
                data_end: block_end,
                block_crc: crc(&block),
                values_end: data_end,
                values_crc: crc(stored),
                codec,
                raw_len: raw_values.len() as u32,
            }
            .encode(&mut index);
            self.file.append(&block)?;
            self.file.append(stored)?;
        }
        footer.data = Section {
            offset: 0,
            len: self.file.len(),
            crc: 0,
        };

        let mut offset = footer.data.len;
        let mut write_section = |file: &mut Box<dyn WritableFile>, bytes: &[u8], crc_of: bool| {
            let s = Section {
                offset,
                len: bytes.len() as u64,
                crc: if crc_of { crc(bytes) } else { 0 },
            };
            offset += s.len;
            file.append(bytes).map(|()| s)
        };
        footer.values = write_section(&mut self.file, &[], false)?;
        footer.filter = write_section(&mut self.file, &self.filter.finish(), true)?;
        footer.index = write_section(&mut self.file, &index, true)?;
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
            entries: entries.len() as u64,
            key_width: key_width as u32,
            block_records,
            blocks: (entries.len() as u64).div_ceil(u64::from(block_records)),
            common_prefix_len: common_prefix as u32,
            bloom_bits_per_key: self.opts.bloom_bits_per_key,
            deletes: self.deletes,
            inline_values: self.inline_values,
            pointers: self.pointers,
            raw_key_bytes: keys.len() as u64,
            raw_value_bytes: self.values.len() as u64,
            pointer_value_bytes: self.pointer_value_bytes,
            smallest: smallest.clone(),
            largest: largest.clone(),
            slot: params,
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
        })
    }
}

/// Tables with at least this many entries train their model on a thread of their own while
/// the other sections are written (below it, a thread costs more than it saves).
const PIPELINED_TRAINING_MIN_ENTRIES: usize = 16 * 1024;

/// The result of training: the encoded model (empty without one) and the training time.
type Trained = (Result<Vec<u8>>, u64);

/// What [`Builder::finish`] decided before writing the sections.
struct Layout {
    smallest: InternalKey,
    largest: InternalKey,
    block_records: u32,
    common_prefix: usize,
}

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

/// The range of the builder's value buffer that the inline values of `chunk` (one block's
/// entries) occupy: they were added in order, so they are contiguous.
fn block_values(chunk: &[Pending]) -> std::ops::Range<u64> {
    let mut inline = chunk.iter().filter_map(|e| match e.value {
        PendingValue::Inline { start, len } => Some((start, start + u64::from(len))),
        _ => None,
    });
    let Some((start, mut end)) = inline.next() else {
        return 0..0;
    };
    for (_, e) in inline {
        end = e;
    }
    start..end
}

/// The user key of `e` in the key arena `keys`.
fn key_in<'k>(keys: &'k [u8], e: &Pending) -> &'k [u8] {
    keys.get(e.key_start..e.key_start + usize::from(e.key_len))
        .unwrap_or_default()
}

/// Trains an index of `config` (or the model chooser's pick within `budget`) over the
/// projected keys of the table (one per entry, in order, so positions are slot positions) and
/// returns its encoding.
fn train_model(
    config: &IndexConfig,
    budget: Option<ModelBudget>,
    projected: &[u64],
) -> Result<Vec<u8>> {
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

#[cfg(test)]
mod tests {
    use super::*;

    struct NullFile(u64);
    impl WritableFile for NullFile {
        fn append(&mut self, data: &[u8]) -> Result<()> {
            self.0 += data.len() as u64;
            Ok(())
        }
        fn flush(&mut self) -> Result<()> {
            Ok(())
        }
        fn sync(&mut self) -> Result<()> {
            Ok(())
        }
        fn len(&self) -> u64 {
            self.0
        }
    }

    fn builder(block_records: usize) -> Builder {
        let opts = BuilderOptions {
            block_records,
            bloom_bits_per_key: 10,
            model: None,
            model_budget: None,
            ..BuilderOptions::default()
        };
        Builder::new(Box::new(NullFile(0)), PathBuf::from("t.sst"), opts)
    }

    fn is_invalid(r: Result<()>) -> bool {
        matches!(r, Err(Error::InvalidArgument(_)))
    }

    #[test]
    fn rejects_bad_input_and_stays_usable() {
        let mut b = builder(4);
        b.add(b"b", 5, ValueKind::Value, b"v").unwrap();
        assert!(is_invalid(b.add(b"a", 9, ValueKind::Value, b"v")));
        assert!(is_invalid(b.add(b"b", 5, ValueKind::Delete, b"")));
        assert!(is_invalid(b.add(b"b", 6, ValueKind::Value, b"v")));
        assert!(is_invalid(b.add(b"c", 1, ValueKind::Pointer, b"short")));
        assert!(is_invalid(b.add(b"c", 1, ValueKind::Delete, b"x")));
        assert!(is_invalid(b.add(
            &vec![0; MAX_KEY_LEN + 1],
            1,
            ValueKind::Delete,
            b""
        )));
        assert!(is_invalid(b.add(
            b"c",
            MAX_SEQNO + 1,
            ValueKind::Delete,
            b""
        )));
        assert_eq!(b.entries(), 1);
        b.add(b"b", 4, ValueKind::Delete, b"").unwrap();
        let summary = b.finish().unwrap();
        assert_eq!(summary.entries, 2);
        assert_eq!(
            summary.largest,
            InternalKey::new(b"b".to_vec(), 4, ValueKind::Delete)
        );
    }

    #[test]
    fn empty_and_bad_options_are_invalid() {
        assert!(matches!(
            builder(4).finish(),
            Err(Error::InvalidArgument(_))
        ));
        assert!(is_invalid(builder(0).add(b"a", 1, ValueKind::Delete, b"")));
    }

    #[test]
    fn estimate_tracks_size() {
        let mut b = builder(8);
        for i in 0..1000u64 {
            b.add(&i.to_be_bytes(), 1, ValueKind::Value, &[7; 20])
                .unwrap();
        }
        let est = b.estimated_size_bytes();
        let real = b.finish().unwrap().file_size;
        assert!(
            est >= real && est < real + real / 10,
            "est {est} real {real}"
        );
    }
}
