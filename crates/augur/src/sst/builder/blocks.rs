//! Writing data blocks (format 6): a block's slots, then its keys' overflows — packed and
//! compressed with the values' codec when that pays (`sst::block_codec`) — then its value
//! chunk (compressed when that pays), each block as soon as its entries are known; and the
//! fence record of each block, kept for the index section, with the length of the prefix the
//! block's keys share (the slots hold each key past it) and how the block is stored.

use super::layout::LayoutDrift;
use super::pending::{Pending, PendingEntry, PendingValue};
use super::BuilderOptions;
use crate::checksum::crc;
use crate::compression::{compress_frames, Compression, CODEC_NONE};
use crate::sst::block_codec::{self, BlockShape};
use crate::error::{Error, Result};
use crate::fs::WritableFile;
use crate::index::projection::common_prefix_len;
use crate::key::MAX_KEY_LEN;
use crate::sst::fence;
use crate::sst::format::ChunkRef;
use crate::sst::slot::{SlotLayout, SlotParams, POINTER_REF_BYTES};
use std::path::Path;

/// Encodes and writes the blocks of one table in the layout `params`; holds the buffers of
/// one block (reused) and the fence records of the blocks written (one per block).
#[derive(Debug)]
pub(super) struct BlockWriter {
    pub(super) params: SlotParams,
    layout: SlotLayout,
    compression: Compression,
    /// Whether data blocks are compressed too (`BuilderOptions::compress_keys`, with a
    /// codec).
    compress_keys: bool,
    /// Whether blocks store their shared key prefix once (chosen with the layout).
    block_prefixes: bool,
    block: Vec<u8>,
    suffixes: Vec<u8>,
    compressed: Vec<u8>,
    /// The packed block and the other candidate (compressed blocks), and the compressed
    /// block.
    packed: [Vec<u8>; 2],
    compressed_block: Vec<u8>,
    value_ends: Vec<usize>,
    reference: Vec<u8>,
    /// The encoded fence records of the blocks written.
    pub(super) index: Vec<u8>,
    /// The last user key of the last block written (fence records store each last key past
    /// what it shares with the previous one).
    prev_last_key: Vec<u8>,
    /// Blocks written.
    pub(super) blocks: u64,
    /// End of the data written (the data section starts at 0).
    pub(super) data_end: u64,
    /// Bytes of the blocks written, with their value chunks counted uncompressed (what
    /// [`super::Builder::estimated_size_bytes`] counts).
    pub(super) raw_bytes: u64,
    /// For a streamed table: whether its layout still fits the keys written.
    drift: Option<LayoutDrift>,
}

impl BlockWriter {
    /// A writer of blocks in the layout `params`, compressing value chunks (and, with
    /// `compress_keys`, blocks) as `opts` say, storing each block's shared key prefix once
    /// when `block_prefixes`.
    pub(super) fn new(
        params: SlotParams,
        opts: &BuilderOptions,
        block_prefixes: bool,
    ) -> BlockWriter {
        BlockWriter {
            params,
            // Encoding reads no key width (only decoding checks lengths against it).
            layout: SlotLayout::new(params, MAX_KEY_LEN as u32),
            compression: opts.compression,
            compress_keys: opts.compress_keys && opts.compression != Compression::None,
            block_prefixes,
            block: Vec::new(),
            suffixes: Vec::new(),
            compressed: Vec::new(),
            packed: [Vec::new(), Vec::new()],
            compressed_block: Vec::new(),
            value_ends: Vec::new(),
            reference: Vec::with_capacity(POINTER_REF_BYTES),
            index: Vec::new(),
            prev_last_key: Vec::new(),
            blocks: 0,
            data_end: 0,
            raw_bytes: 0,
            drift: None,
        }
    }

    /// Watches, from now on, whether the layout still fits the keys written (a streamed
    /// table, whose keys are at most `max_rest` long after the file's prefix; see
    /// [`LayoutDrift`]).
    pub(super) fn watch_drift(&mut self, max_rest: u32) {
        self.drift = Some(LayoutDrift::new(&self.params, max_rest));
    }

    /// Whether the keys written since the layout was chosen would take markedly fewer bytes
    /// in a layout chosen from them ([`LayoutDrift::drifted`]).
    pub(super) fn layout_drifted(&self) -> bool {
        self.drift.as_ref().is_some_and(LayoutDrift::drifted)
    }

    /// Bytes of one slot.
    pub(super) fn slot_bytes(&self) -> u64 {
        self.params.slot_bytes()
    }

    /// Bytes of memory held for the block being encoded.
    #[cfg(test)]
    pub(super) fn buffered_bytes(&self) -> usize {
        self.block.capacity()
            + self.suffixes.capacity()
            + self.compressed.capacity()
            + self.packed.iter().map(Vec::capacity).sum::<usize>()
            + self.compressed_block.capacity()
            + self.value_ends.capacity() * std::mem::size_of::<usize>()
            + self.reference.capacity()
    }

    /// Encodes `chunk` (consecutive entries of `pending`, one block) and appends the block
    /// and its value chunk to `file`.
    ///
    /// # Errors
    /// `InvalidArgument` when the block's inline values, or the block itself, exceed 4 GiB
    /// (the layout choice rules this out for a builder's own entries); `Io` when a write
    /// fails.
    pub(super) fn write(
        &mut self,
        file: &mut dyn WritableFile,
        path: &Path,
        pending: &Pending,
        chunk: &[PendingEntry],
    ) -> Result<()> {
        let Some(block_last) = chunk.last() else {
            return Ok(());
        };
        self.block.clear();
        self.suffixes.clear();
        let values = Pending::values_of(chunk);
        let raw_values = pending.values.get(values.clone()).unwrap_or_default();
        let Ok(raw_len) = u32::try_from(raw_values.len()) else {
            return Err(Error::InvalidArgument(format!(
                "the inline values of one block of {} exceed 4 GiB",
                path.display()
            )));
        };
        let prefix_len =
            pending.block_prefix_len(chunk, self.params.prefix_len as usize, self.block_prefixes);
        let head = self.params.head_bytes as usize;
        let field = self.params.value_field_bytes();
        let ref_bytes = usize::from(self.params.ref_bytes);
        let end_refs = self.params.end_only_refs();
        // End of the block's values so far (format 7's end references).
        let mut values_end = 0u32;
        for e in chunk {
            let rest = pending.key(e).get(prefix_len..).unwrap_or_default();
            self.reference.clear();
            match &e.value {
                PendingValue::Inline { start, len } if end_refs => {
                    values_end = (start - values.start) as u32 + len;
                    self.reference
                        .extend_from_slice(&values_end.to_le_bytes()[..field]);
                }
                PendingValue::Inline { start, len } => ChunkRef {
                    offset: (start - values.start) as u32,
                    len: *len,
                }
                .encode(&mut self.reference, field, ref_bytes),
                PendingValue::Pointer(p) => self.reference.extend_from_slice(p),
                PendingValue::Tombstone if end_refs => self
                    .reference
                    .extend_from_slice(&values_end.to_le_bytes()[..field]),
                PendingValue::Tombstone => self.reference.resize(ref_bytes, 0),
            }
            self.layout.encode(
                &mut self.block,
                rest,
                self.suffixes.len(),
                e.trailer,
                &self.reference,
            );
            self.suffixes
                .extend_from_slice(rest.get(head..).unwrap_or_default());
        }
        self.block.extend_from_slice(&self.suffixes);
        let Ok(block_raw_len) = u32::try_from(self.block.len()) else {
            return Err(Error::InvalidArgument(format!(
                "a data block of {} exceeds 4 GiB",
                path.display()
            )));
        };
        let block_codec = if self.compress_keys {
            let shape = BlockShape::of(&self.layout, chunk.len());
            block_codec::compress(
                self.compression,
                &self.block,
                shape,
                &mut self.packed,
                &mut self.compressed_block,
            )
        } else {
            CODEC_NONE
        };
        let stored_block: &[u8] = if block_codec == CODEC_NONE {
            &self.block
        } else {
            &self.compressed_block
        };
        self.value_ends.clear();
        self.value_ends
            .extend(chunk.iter().filter_map(|e| match e.value {
                PendingValue::Inline { start, len } => Some(start + len as usize - values.start),
                _ => None,
            }));
        let codec = compress_frames(
            self.compression,
            raw_values,
            &self.value_ends,
            true,
            &mut self.compressed,
        );
        let stored: &[u8] = if codec == 0 {
            raw_values
        } else {
            &self.compressed
        };
        let block_end = self.data_end + stored_block.len() as u64;
        let values_end = block_end + stored.len() as u64;
        file.append(stored_block)?;
        file.append(stored)?;
        let last_user_key = pending.key(block_last);
        fence::Record {
            last_user_key,
            prev_user_key: &self.prev_last_key,
            data_start: self.data_end,
            last_trailer: block_last.trailer,
            data_end: block_end,
            block_crc: crc(stored_block),
            values_end,
            values_crc: crc(stored),
            codec,
            raw_len,
            // At most a key's length, which is below 64 KiB.
            block_prefix_len: prefix_len as u16,
            block_codec,
            block_raw_len,
        }
        .encode(&mut self.index);
        self.prev_last_key.clear();
        self.prev_last_key.extend_from_slice(last_user_key);
        self.data_end = values_end;
        let block_bytes = self.block.len() as u64 + raw_values.len() as u64;
        if let Some(drift) = self.drift.as_mut() {
            let first = chunk.first().map_or(&[][..], |e| pending.key(e));
            let fresh_prefix = common_prefix_len(first, pending.key(block_last))
                .max(self.params.prefix_len as usize);
            let rest_of = |e: &PendingEntry, shared: usize| {
                pending.key(e).len().saturating_sub(shared) as u32
            };
            drift.observe_block(
                chunk.iter().map(|e| rest_of(e, prefix_len)),
                chunk.iter().map(|e| rest_of(e, fresh_prefix)),
                block_bytes,
            );
        }
        self.raw_bytes += block_bytes;
        self.blocks += 1;
        Ok(())
    }
}

