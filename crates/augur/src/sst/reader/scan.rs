//! What a sequential reader of a table needs: a data block with its value chunk, verified —
//! in a mapped file checked in place and then read straight from the mapping
//! ([`Table::check_scan_block`]), through `pread` read into the reader's buffers
//! ([`Table::scan_block`]). Iterators, compaction inputs and range scans read through
//! `sst::TableCursor`; point lookups keep the narrower slot-at-a-time path of `reader.rs`.
//!
//! With a mapped file both parts of a block are checked against the per-table "verified"
//! bitsets, so a block is checksummed once per table lifetime; with `pread` both are read and
//! checked on every load — a scan reads every value of a block it visits, so one read and one
//! checksum of the whole chunk is cheaper than one per value. A block stored compressed
//! (format 6) is always read through the buffers, decompressed: a cursor reads it with
//! [`Table::scan_block`] whatever the read mode ([`Table::block_compressed`]).

use super::{BlockBytes, Table};
use crate::error::{Error, Result};
use crate::sst::fence::BlockMeta;

/// Where one data block lies, as loaded by [`Table::scan_block`] or
/// [`Table::check_scan_block`].
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ScanBlock {
    /// Position of the block's first slot.
    pub(crate) first_pos: u64,
    /// One past the position of the block's last slot.
    pub(crate) end_pos: u64,
    /// File offset of the block (its slots, then its key suffixes; as stored).
    pub(crate) start: u64,
    /// Bytes of the block's slots.
    pub(crate) slots_len: usize,
    /// Bytes of the whole block (decompressed).
    pub(crate) len: usize,
    /// True when the block is stored compressed: its bytes, decompressed, are in the reader's
    /// buffer, and its slots have no file offsets of their own (errors name `start`).
    pub(crate) decoded: bool,
    /// Start of the block's value chunk within the value section.
    pub(crate) values_start: u64,
    /// Bytes of the value chunk once decompressed.
    pub(crate) values_len: usize,
    /// True when the value chunk is compressed: a reader holds it decompressed in a buffer.
    pub(crate) values_compressed: bool,
    /// Bytes the block's keys share past the stripped prefix (format 5; 0 before).
    pub(crate) prefix_ext: usize,
}

impl Table {
    /// The index record of `block` (where its slots and value chunk lie).
    pub(crate) fn block_meta(&self, block: u64) -> Result<BlockMeta> {
        self.fence.meta(block).ok_or_else(|| {
            Error::corruption(&self.path, self.footer.index.offset, "block out of range")
        })
    }

    fn scan_block_info(&self, block: u64, meta: &BlockMeta) -> ScanBlock {
        let positions = self.fence.block_positions(block);
        ScanBlock {
            first_pos: positions.start,
            end_pos: positions.end,
            start: self.footer.data.offset + meta.data_start,
            slots_len: (positions.end - positions.start) as usize * self.layout.slot,
            len: meta.block_raw_len as usize,
            decoded: meta.block_codec != 0,
            values_start: meta.values_start,
            values_len: meta.raw_len as usize,
            values_compressed: meta.codec != 0,
            prefix_ext: self.fence.block_prefix_ext(block),
        }
    }

    /// Loads block `block` for a scan: copies its bytes into `slots` and its value chunk,
    /// decompressed, into `values` (both verified, see the module comment).
    ///
    /// # Errors
    /// `Corruption` naming the file and offset when a checksum fails or the block number is
    /// out of range; `Io` when a read fails.
    pub(crate) fn scan_block(
        &self,
        block: u64,
        slots: &mut Vec<u8>,
        values: &mut Vec<u8>,
    ) -> Result<ScanBlock> {
        let loaded = self.load_block(block, false)?;
        let meta = self.block_meta(block)?;
        match loaded.bytes {
            BlockBytes::Read(read) | BlockBytes::Decoded(read) => *slots = read,
            _ => {
                slots.clear();
                slots.extend_from_slice(self.block_bytes(&loaded));
            }
        }
        values.clear();
        if meta.raw_len > 0 {
            let chunk = self.value_chunk(block, &meta, false)?;
            values.extend_from_slice(&chunk);
        }
        Ok(self.scan_block_info(block, &meta))
    }

    /// Checks block `block` of a mapped table (its bytes and value chunk, once per table
    /// lifetime) without copying it: the reader then reads it from [`Table::mapping`]. A
    /// compressed value chunk is decompressed into `values`. REQUIRES: the block is stored
    /// uncompressed (else [`Table::scan_block`]).
    ///
    /// # Errors
    /// As [`Table::scan_block`].
    pub(crate) fn check_scan_block(&self, block: u64, values: &mut Vec<u8>) -> Result<ScanBlock> {
        let meta = self.block_meta(block)?;
        if !self.verified_blocks.contains(block) {
            self.load_block(block, false)?;
        }
        if meta.codec != 0 {
            let chunk = self.value_chunk(block, &meta, false)?;
            values.clear();
            values.extend_from_slice(&chunk);
        } else if !self.verified_value_chunks.contains(block) {
            self.value_chunk(block, &meta, false)?;
        }
        Ok(self.scan_block_info(block, &meta))
    }

    /// File offset the value chunks' offsets (`ScanBlock::values_start`) are relative to.
    pub(crate) fn values_offset(&self) -> u64 {
        self.values_base
    }

    /// The slot layout of the file.
    pub(crate) fn layout(&self) -> &crate::sst::slot::SlotLayout {
        &self.layout
    }

    /// What the keys of `block` share past the stripped prefix (empty before format 5).
    pub(crate) fn block_prefix(&self, block: u64) -> &[u8] {
        self.fence.block_prefix(block)
    }

    /// The prefix stripped from every key of the file (empty in format 1).
    pub(crate) fn stripped_prefix(&self) -> &[u8] {
        &self.stripped
    }
}
