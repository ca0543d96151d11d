//! What a sequential reader of a table needs: a data block with its value chunk, verified —
//! in a mapped file checked in place and then read straight from the mapping
//! ([`Table::check_scan_block`]), through `pread` read into the reader's buffers
//! ([`Table::scan_block`]). Iterators, compaction inputs and range scans read through
//! `sst::TableCursor`; point lookups keep the narrower slot-at-a-time path of `reader.rs`.
//!
//! With a mapped file both parts of a block are checked against the per-table "verified"
//! bitsets, so a block is checksummed once per table lifetime; with `pread` both are read and
//! checked on every load — a scan reads every value of a block it visits, so one read and one
//! checksum of the whole chunk is cheaper than one per value.

use super::Table;
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
    /// Offset of the value chunk within the value section (inline references are relative
    /// to the section).
    pub(crate) values_start: u64,
    /// End of the value chunk within the value section.
    pub(crate) values_end: u64,
}

impl Table {
    fn block_meta(&self, block: u64) -> Result<BlockMeta> {
        self.fence.meta(block).copied().ok_or_else(|| {
            Error::corruption(&self.path, self.footer.index.offset, "block out of range")
        })
    }

    fn scan_block_info(&self, block: u64, meta: &BlockMeta) -> ScanBlock {
        let positions = self.fence.block_positions(block);
        ScanBlock {
            first_pos: positions.start,
            end_pos: positions.end,
            values_start: meta.values_start,
            values_end: meta.values_end,
        }
    }

    /// Reads block `block`'s value chunk and checks it (once per table lifetime when
    /// mapped); calls `keep` with the bytes.
    fn checked_value_chunk(
        &self,
        block: u64,
        meta: &BlockMeta,
        keep: impl FnOnce(&[u8]),
    ) -> Result<()> {
        let chunk_offset = self.footer.values.offset + meta.values_start;
        let chunk_len = meta.values_end - meta.values_start;
        if chunk_len == 0 {
            if self.mapped.is_some() {
                self.verified_value_chunks.insert(block);
            }
            return Ok(());
        }
        let chunk = self.read(chunk_offset, chunk_len)?;
        self.check_once(
            &self.verified_value_chunks,
            block,
            &chunk,
            meta.values_crc,
            chunk_offset,
            "value chunk of block",
            false,
        )?;
        keep(&chunk);
        Ok(())
    }

    /// Loads block `block` for a scan: copies its slots into `slots` and its value chunk into
    /// `values` (both verified, see the module comment).
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
        let mut loaded = self.load_block(block, false)?;
        let meta = self.block_meta(block)?;
        match loaded.owned.take() {
            Some(read) => *slots = read,
            None => {
                slots.clear();
                slots.extend_from_slice(self.block_bytes(&loaded));
            }
        }
        values.clear();
        self.checked_value_chunk(block, &meta, |chunk| values.extend_from_slice(chunk))?;
        Ok(self.scan_block_info(block, &meta))
    }

    /// Checks block `block` of a mapped table (slots and value chunk, once per table
    /// lifetime) without copying it: the reader then reads it from [`Table::mapping`]. Once
    /// both are verified this touches only the two "verified" bitsets, not the block's index
    /// record (a cache miss on every seek otherwise); the returned value bounds are then the
    /// whole value section, which the verified slots' references stay inside.
    ///
    /// # Errors
    /// As [`Table::scan_block`].
    pub(crate) fn check_scan_block(&self, block: u64) -> Result<ScanBlock> {
        let positions = self.fence.block_positions(block);
        if positions.is_empty() {
            return Err(Error::corruption(
                &self.path,
                self.footer.index.offset,
                "block out of range",
            ));
        }
        if !self.verified_blocks.contains(block) {
            self.load_block(block, false)?;
        }
        if !self.verified_value_chunks.contains(block) {
            let meta = self.block_meta(block)?;
            self.checked_value_chunk(block, &meta, |_| {})?;
        }
        Ok(ScanBlock {
            first_pos: positions.start,
            end_pos: positions.end,
            values_start: 0,
            values_end: self.footer.values.len,
        })
    }

    /// Offset of the value section in the file (inline references are relative to it).
    pub(crate) fn values_offset(&self) -> u64 {
        self.footer.values.offset
    }

    /// Width of the key field of a slot (`W`).
    pub(crate) fn key_width(&self) -> usize {
        self.key_width
    }

    /// Bytes of one slot (`W + 30`).
    pub(crate) fn slot_bytes(&self) -> usize {
        self.slot_bytes
    }

    /// Byte offset of position `pos`'s slot in the file (for error messages).
    pub(crate) fn slot_offset(&self, pos: u64) -> u64 {
        self.footer.data.offset + pos * self.slot_bytes as u64
    }
}
