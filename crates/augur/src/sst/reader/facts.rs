//! What a table's layout is, for inspection tools (`crate::inspect`): where each data block
//! and its value chunk lie and how they are stored, as the fence index records them (no data
//! block is read), and the bytes of the model section. Read through the fence index rather
//! than from the format by hand, so a change of the fence records shows here in one place.

use super::*;
use std::ops::Range;

/// Where one data block and its value chunk lie in the file and how they are stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BlockFacts {
    /// Positions of the block's entries.
    pub(crate) positions: Range<u64>,
    /// File offset of the block (its slots, then its key suffixes).
    pub(crate) data_offset: u64,
    /// Bytes of the block in the file.
    pub(crate) data_bytes: u64,
    /// How the block itself is stored (format 6): 0 raw, else the codec (1 LZ4, 2 zstd),
    /// packed as [`Self::block_keys_inline`] says.
    pub(crate) block_codec: u8,
    /// For a compressed block: whether its keys are packed inline (else in columns).
    pub(crate) block_keys_inline: bool,
    /// Bytes of the block once decompressed (its stored bytes when raw).
    pub(crate) block_raw_bytes: u64,
    /// File offset of the block's value chunk.
    pub(crate) values_offset: u64,
    /// Bytes of the value chunk in the file (compressed or not).
    pub(crate) values_stored_bytes: u64,
    /// Bytes of the value chunk once decompressed.
    pub(crate) values_raw_bytes: u64,
    /// How the value chunk is stored: 0 raw, 1 LZ4, 2 zstd.
    pub(crate) values_codec: u8,
    /// Length of the prefix every key of the block shares and no slot stores: the file's
    /// stripped prefix and, from format 5, the block's own.
    pub(crate) prefix_len: usize,
    /// The block's last user key and trailer.
    pub(crate) last_key: Vec<u8>,
    /// The trailer of the block's last key.
    pub(crate) last_trailer: u64,
}

impl Table {
    /// Number of data blocks.
    pub(crate) fn block_count(&self) -> u64 {
        self.fence.block_count()
    }

    /// Where block `block` and its value chunk lie, and how they are stored; `None` past the
    /// last block.
    pub(crate) fn block_facts(&self, block: u64) -> Option<BlockFacts> {
        let meta = self.fence.meta(block)?;
        let (last_key, last_trailer) = self.fence.block_last_key(block)?;
        Some(BlockFacts {
            positions: self.fence.block_positions(block),
            data_offset: self.footer.data.offset + meta.data_start,
            data_bytes: meta.data_end.saturating_sub(meta.data_start),
            block_codec: meta.block_codec & !crate::sst::block_codec::KEYS_INLINE,
            block_keys_inline: meta.block_codec & crate::sst::block_codec::KEYS_INLINE != 0,
            block_raw_bytes: meta.block_raw_len,
            values_offset: self.value_chunk_offset(&meta),
            values_stored_bytes: meta.values_end.saturating_sub(meta.values_start),
            values_raw_bytes: u64::from(meta.raw_len),
            values_codec: meta.codec,
            prefix_len: self.stripped.len() + self.fence.block_prefix_ext(block),
            last_key: last_key.to_vec(),
            last_trailer,
        })
    }

    /// The model section's bytes as stored (not checked against its checksum); `None` when
    /// the file has no model section.
    ///
    /// # Errors
    /// `Io` or `Corruption` when the section cannot be read.
    pub(crate) fn model_section(&self) -> Result<Option<Vec<u8>>> {
        let s = self.footer.model;
        if s.len == 0 {
            return Ok(None);
        }
        Ok(Some(self.read(s.offset, s.len)?.into_owned()))
    }
}
