//! [`TableCursor`]: a zero-copy cursor over the entries of one table, in one direction — the
//! building block of level cursors, range scans and compaction inputs.
//!
//! Stepping to the next entry decodes one fixed-width slot and allocates nothing. The key is
//! assembled in a buffer the cursor reuses (the stripped prefix stays in it; the head and
//! overflow are copied per entry). Inline values are borrowed: in a mapped file straight from
//! the mapping (held as shared
//! bytes, so no virtual call per access), each block checked once per table lifetime when
//! the cursor enters it; through `pread` from two buffers the cursor reuses, into which each
//! block it enters is read and checked. (Two earlier designs were measured slower: copying
//! every mapped block into the buffers — a fifth of YCSB-E's time went to those copies —
//! and resolving the mapping through the file's virtual `as_slice` on every access.) A block
//! stored compressed (format 6) is decompressed into the slot buffer in every mode, without
//! filling the chunk cache (a scan's blocks would evict the point lookups' hot set). Seeks
//! take the table's own locator — its learned index when it has one — so
//! every iterator seek into a learned file is a learned seek (the Bourbon range-query
//! follow-up's "learned file iterators").
//!
//! After an error the cursor is invalid: corruption is reported once, never skipped over.

use crate::error::{Error, Result};
use crate::key::{unpack_trailer, ValueKind};
use crate::sst::reader::ScanBlock;
use crate::sst::slot::POINTER_REF_BYTES;
use crate::sst::Table;
use std::sync::Arc;

/// How far past the slot being decoded a cursor prefetches (two cache lines): the slots a
/// forward scan reads next.
const PREFETCH_AHEAD_BYTES: usize = 128;

/// Where the current entry's value bytes are.
#[derive(Debug, Clone, Copy)]
enum ValueAt {
    /// A range of the value bytes (inline value): file offsets when the chunk is read from
    /// the mapping, offsets in the cursor's value buffer otherwise.
    Chunk(usize, usize),
    /// The slot's reference field (an encoded value pointer).
    Reference(usize),
    /// No bytes (a tombstone).
    Empty,
}

/// Where the cursor reads its current block from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Held {
    /// The table's mapping: offsets are file offsets.
    Mapped,
    /// The cursor's buffers (`pread`): offsets are relative to the block.
    Buffered,
}

/// A cursor over one table's entries in internal order (`forward`) or its reverse. Starts
/// unpositioned; position it with [`Self::seek_to_first`], [`Self::seek`] or
/// [`Self::seek_to_position`].
pub struct TableCursor {
    table: Arc<Table>,
    forward: bool,
    valid: bool,
    pos: u64,
    /// The loaded block (`end_pos == 0`: none).
    block: ScanBlock,
    held: Held,
    slots: Vec<u8>,
    values: Vec<u8>,
    /// The current user key: the table's stripped prefix, its block's prefix (format 5), then
    /// the slot's head and overflow.
    key: Vec<u8>,
    /// Whether inline values are read from the mapping (else from `values`).
    values_mapped: bool,
    trailer: u64,
    kind: ValueKind,
    value_at: ValueAt,
}

impl std::fmt::Debug for TableCursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableCursor")
            .field("path", &self.table.path())
            .field("forward", &self.forward)
            .field("valid", &self.valid)
            .field("pos", &self.pos)
            .finish_non_exhaustive()
    }
}

impl TableCursor {
    /// An unpositioned cursor over `table`.
    pub fn new(table: Arc<Table>, forward: bool) -> Self {
        let key = table.stripped_prefix().to_vec();
        TableCursor {
            table,
            forward,
            valid: false,
            pos: 0,
            block: ScanBlock::default(),
            held: Held::Buffered,
            slots: Vec::new(),
            values: Vec::new(),
            key,
            values_mapped: false,
            trailer: 0,
            kind: ValueKind::Delete,
            value_at: ValueAt::Empty,
        }
    }

    /// True when positioned at an entry.
    #[inline]
    pub fn valid(&self) -> bool {
        self.valid
    }

    /// Position of the current entry. REQUIRES: `valid()`.
    #[cfg(any(test, feature = "test-util"))]
    pub fn position(&self) -> u64 {
        self.pos
    }

    /// Positions at the first entry in the cursor's direction (the last one backward).
    ///
    /// # Errors
    /// `Corruption` when the block fails its checksum or a slot is malformed.
    pub fn seek_to_first(&mut self) -> Result<()> {
        let n = self.table.entries();
        if self.forward {
            self.seek_to_position(0)
        } else {
            self.seek_to_position(n.wrapping_sub(1))
        }
    }

    /// Forward: positions at the first entry `>= (user_key, trailer)` in internal order.
    /// Backward: at the last entry `< (user_key, trailer)`. Goes through the table's learned
    /// index when it has one.
    ///
    /// # Errors
    /// As [`Self::seek_to_first`].
    pub fn seek(&mut self, user_key: &[u8], trailer: u64) -> Result<()> {
        let lb = match self.table.lower_bound_trailer(user_key, trailer) {
            Ok(p) => p,
            Err(e) => return Err(self.fail(e)),
        };
        if self.forward {
            self.seek_to_position(lb)
        } else {
            self.seek_to_position(lb.wrapping_sub(1))
        }
    }

    /// Positions at entry `pos`; invalid when `pos >= entries()`.
    ///
    /// # Errors
    /// As [`Self::seek_to_first`].
    pub fn seek_to_position(&mut self, pos: u64) -> Result<()> {
        self.pos = pos;
        self.load_current()
    }

    /// Moves one entry in the cursor's direction. REQUIRES: `valid()`.
    ///
    /// # Errors
    /// As [`Self::seek_to_first`].
    #[inline]
    pub fn advance(&mut self) -> Result<()> {
        if self.forward {
            self.pos += 1;
        } else {
            self.pos = self.pos.wrapping_sub(1);
        }
        self.load_current()
    }

    /// The bytes slot offsets refer to.
    #[inline]
    fn slot_bytes_src(&self) -> &[u8] {
        match self.held {
            Held::Mapped => self.table.mapping().unwrap_or_default(),
            Held::Buffered => &self.slots,
        }
    }

    /// The current user key. REQUIRES: `valid()`.
    #[inline]
    pub fn key(&self) -> &[u8] {
        &self.key
    }

    /// The current trailer `(seqno << 8) | kind`. REQUIRES: `valid()`.
    #[inline]
    pub fn trailer(&self) -> u64 {
        self.trailer
    }

    /// The current kind. REQUIRES: `valid()`.
    #[inline]
    pub fn kind(&self) -> ValueKind {
        self.kind
    }

    /// The current value: inline bytes, the encoded value pointer, or empty for a tombstone.
    /// REQUIRES: `valid()`.
    #[inline]
    pub fn value(&self) -> &[u8] {
        match self.value_at {
            ValueAt::Chunk(start, end) => {
                let values = if self.values_mapped {
                    self.table.mapping().unwrap_or_default()
                } else {
                    &self.values
                };
                values.get(start..end).unwrap_or_default()
            }
            ValueAt::Reference(start) => self
                .slot_bytes_src()
                .get(start..start + POINTER_REF_BYTES)
                .unwrap_or_default(),
            ValueAt::Empty => &[],
        }
    }

    fn fail(&mut self, e: Error) -> Error {
        self.valid = false;
        self.block = ScanBlock::default();
        e
    }

    /// Decodes the slot at `self.pos`, checking (mapped) or reading (pread) its block when
    /// the cursor enters it.
    #[inline]
    fn load_current(&mut self) -> Result<()> {
        if self.pos >= self.table.entries() {
            self.valid = false;
            return Ok(());
        }
        if !(self.block.first_pos <= self.pos && self.pos < self.block.end_pos) {
            let block_no = self.table.block_of(self.pos);
            self.block = ScanBlock::default();
            let loaded = if self.table.mapping().is_some() && !self.table.block_compressed(block_no)
            {
                self.held = Held::Mapped;
                self.table.check_scan_block(block_no, &mut self.values)
            } else {
                self.held = Held::Buffered;
                // Through the page cache a scan's re-reads of its pages are not references;
                // nor are its loads of compressed blocks in the chunk cache.
                crate::cache::scanning(|| {
                    self.table
                        .scan_block(block_no, &mut self.slots, &mut self.values)
                })
            };
            match loaded {
                Ok(b) => {
                    self.values_mapped = self.held == Held::Mapped && !b.values_compressed;
                    self.block = b;
                    self.key.truncate(self.table.stripped_prefix().len());
                    self.key
                        .extend_from_slice(self.table.block_prefix(block_no));
                }
                Err(e) => return Err(self.fail(e)),
            }
        }
        match self.decode_slot() {
            Ok(()) => {
                self.valid = true;
                Ok(())
            }
            Err(e) => Err(self.fail(e)),
        }
    }

    fn decode_slot(&mut self) -> Result<()> {
        let table = &*self.table;
        let block = self.block;
        let layout = table.layout();
        let size = layout.slot;
        let in_block = (self.pos - block.first_pos) as usize * size;
        let at = if block.decoded {
            block.start
        } else {
            block.start + in_block as u64
        };
        let corrupt = |why: &str| Error::corruption(table.path(), at, why);
        let (src, base) = match self.held {
            Held::Mapped => (table.mapping().unwrap_or_default(), block.start as usize),
            Held::Buffered => (&self.slots[..], 0),
        };
        let start = base + in_block;
        // The slots after this one are read next (a scan's nexts): their line two lines on
        // is asked for now, so its miss overlaps this slot's work instead of following it.
        if let Some(ahead) = src.get(start + PREFETCH_AHEAD_BYTES..) {
            crate::prefetch::prefetch_read(ahead);
        }
        let raw = src
            .get(start..start + size)
            .and_then(|_| src.get(start..))
            .and_then(|slot| layout.decode(slot, block.prefix_ext))
            .ok_or_else(|| corrupt("malformed slot (key length or trailer)"))?;
        let suffixes = src
            .get(base + block.slots_len..base + block.len)
            .ok_or_else(|| corrupt("block outside the file"))?;
        let overflow = layout
            .overflow(&raw, suffixes)
            .ok_or_else(|| corrupt("key suffix outside its block"))?;
        let (_, kind) = unpack_trailer(raw.trailer).ok_or_else(|| corrupt("unknown value kind"))?;
        let value_at = match kind {
            ValueKind::Value | ValueKind::ExpiringValue => {
                // A format-7 reference starts where the previous slot's value ended.
                let prev = (self.pos > block.first_pos)
                    .then(|| src.get(start - size + layout.ref_offset()..start))
                    .flatten();
                let (offset, len) = table
                    .inline_ref(raw.reference, prev, block.values_start)
                    .filter(|&(o, l)| {
                        let end = o + l;
                        end <= block.values_len && (self.values_mapped || end <= self.values.len())
                    })
                    .ok_or_else(|| corrupt("value reference outside its block's value chunk"))?;
                let begin = if self.values_mapped {
                    (table.values_offset() + block.values_start) as usize + offset
                } else {
                    offset
                };
                ValueAt::Chunk(begin, begin + len)
            }
            ValueKind::Pointer => {
                if raw.reference.len() < POINTER_REF_BYTES {
                    return Err(corrupt("value pointer in a narrow reference field"));
                }
                ValueAt::Reference(start + layout.ref_offset())
            }
            ValueKind::Delete => ValueAt::Empty,
        };
        let prefix = table.stripped_prefix().len() + block.prefix_ext;
        self.key.truncate(prefix);
        self.key.extend_from_slice(raw.head);
        self.key.extend_from_slice(overflow);
        self.value_at = value_at;
        self.trailer = raw.trailer;
        self.kind = kind;
        Ok(())
    }
}
