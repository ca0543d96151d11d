//! Inline values of a table: where a slot's reference points in its block's value chunk,
//! and the chunk read, checked and decompressed — whole for scans and `verify`, one frame for
//! a point lookup (`compression::FramedChunk`); through the page cache, a plain chunk checked
//! before is read one value at a time.

use super::Table;
use crate::compression::{decompress, FramedChunk, CODEC_NONE};
use crate::error::Result;
use crate::sst::fence::BlockMeta;
use crate::sst::format::{ChunkRef, InlineRef};
use std::borrow::Cow;

impl Table {
    /// Where an inline value lies in its block's (decompressed) value chunk, given where that
    /// chunk starts in the value section: `(offset, len)`; `None` for a malformed reference.
    pub(crate) fn inline_ref(&self, reference: &[u8], values_start: u64) -> Option<(usize, usize)> {
        let (offset, len) = if self.layout.params.v1_refs {
            let r = InlineRef::decode(reference)?;
            (r.offset.checked_sub(values_start)?, u64::from(r.len))
        } else {
            let r = ChunkRef::decode(reference, self.layout.params.value_field_bytes())?;
            (u64::from(r.offset), u64::from(r.len))
        };
        Some((usize::try_from(offset).ok()?, usize::try_from(len).ok()?))
    }

    /// The stored bytes of `block`'s value chunk and their file offset, checked (once per
    /// table lifetime when mapped, unless `force`).
    fn stored_value_chunk(
        &self,
        block: u64,
        meta: &BlockMeta,
        force: bool,
    ) -> Result<(Cow<'_, [u8]>, u64)> {
        let offset = self.value_chunk_offset(meta);
        let stored = self.read(offset, meta.values_end - meta.values_start)?;
        self.check_once(
            &self.verified_value_chunks,
            block,
            &stored,
            meta.values_crc,
            offset,
            "value chunk of block",
            force,
        )?;
        Ok((stored, offset))
    }

    /// The value chunk of `block`, checked (once per table lifetime when mapped, unless
    /// `force`) and decompressed.
    ///
    /// # Errors
    /// `Corruption` naming the file and offset when the checksum fails or the chunk does not
    /// decompress to its recorded length; `Io` when the read fails.
    pub(crate) fn value_chunk(
        &self,
        block: u64,
        meta: &BlockMeta,
        force: bool,
    ) -> Result<Cow<'_, [u8]>> {
        let (stored, offset) = self.stored_value_chunk(block, meta, force)?;
        if meta.codec == CODEC_NONE {
            return decompress(stored, CODEC_NONE, meta.raw_len, &self.path, offset);
        }
        let chunk = FramedChunk::parse(&stored, meta.codec, meta.raw_len, &self.path, offset)?;
        let mut raw = Vec::with_capacity(meta.raw_len as usize);
        chunk.read_all(&mut raw, &self.path, offset)?;
        Ok(Cow::Owned(raw))
    }

    /// The raw bytes `[at, at + len)` of `block`'s value chunk (one value), checked as
    /// [`Table::value_chunk`] checks the chunk, decompressing only the frame that holds them;
    /// `None` when they lie outside the chunk.
    ///
    /// # Errors
    /// As [`Table::value_chunk`].
    pub(super) fn value_in_chunk(
        &self,
        block: u64,
        meta: &BlockMeta,
        at: usize,
        len: usize,
    ) -> Result<Option<Vec<u8>>> {
        if at.checked_add(len).is_none_or(|end| end > meta.raw_len as usize) {
            return Ok(None);
        }
        // Through the page cache, a plain chunk checked before is read value by value (the
        // pages the value covers), not whole.
        if self.cached && meta.codec == CODEC_NONE && self.verified_value_chunks.contains(block) {
            let offset = self.value_chunk_offset(meta) + at as u64;
            return Ok(Some(self.read(offset, len as u64)?.into_owned()));
        }
        let (stored, offset) = self.stored_value_chunk(block, meta, false)?;
        if meta.codec == CODEC_NONE {
            return Ok(stored.get(at..at + len).map(<[u8]>::to_vec));
        }
        let chunk = FramedChunk::parse(&stored, meta.codec, meta.raw_len, &self.path, offset)?;
        chunk
            .read(at as u64, len as u64, &self.path, offset)
            .map(Some)
    }

}
