//! Inline values of a table: where a slot's reference points in its block's value chunk,
//! and the chunk read, checked and decompressed — whole for scans and `verify`, one frame for
//! a point lookup (`compression::FramedChunk`) — or, when the database's chunk cache
//! (`cache::ChunkCache`) admits the block, whole and cached, so that later lookups of the
//! block read and decompress nothing; through the page cache, a plain chunk checked before is
//! read one value at a time.

use super::{BlockBytes, LoadedBlock, Table};
use crate::cache::{CachedBlock, Lookup, TableChunks};
use crate::compression::{decompress, FramedChunk, CODEC_NONE};
use crate::error::Result;
use crate::sst::fence::BlockMeta;
use crate::sst::format::{ChunkRef, InlineRef, NARROW_FRAME_FORMAT_VERSION};
use std::borrow::Cow;

impl Table {
    /// Where an inline value lies in its block's (decompressed) value chunk, given its
    /// slot's reference field, the previous slot's in the same block (`prev`, `None` for a
    /// block's first slot; only format 7's end references read it) and where the chunk
    /// starts in the value section: `(offset, len)`; `None` for a malformed reference.
    #[inline]
    pub(crate) fn inline_ref(
        &self,
        reference: &[u8],
        prev: Option<&[u8]>,
        values_start: u64,
    ) -> Option<(usize, usize)> {
        let params = &self.layout.params;
        let (offset, len) = if params.v1_refs {
            let r = InlineRef::decode(reference)?;
            (r.offset.checked_sub(values_start)?, u64::from(r.len))
        } else if params.end_only_refs() {
            let r = ChunkRef::decode_end(reference, prev, params.value_field_bytes())?;
            (u64::from(r.offset), u64::from(r.len))
        } else {
            let r = ChunkRef::decode(reference, self.layout.params.value_field_bytes())?;
            (u64::from(r.offset), u64::from(r.len))
        };
        Some((usize::try_from(offset).ok()?, usize::try_from(len).ok()?))
    }

    /// The frame table of a compressed value chunk (`stored`, read at `offset`, of the block
    /// `meta` describes), checked; its records are narrow from format 7
    /// ([`crate::compression::FrameRecords::for_chunk`]).
    fn framed_chunk<'a>(
        &self,
        stored: &'a [u8],
        meta: &BlockMeta,
        offset: u64,
    ) -> Result<FramedChunk<'a>> {
        let narrow = self.footer.version >= NARROW_FRAME_FORMAT_VERSION;
        FramedChunk::parse(stored, meta.codec, meta.raw_len, narrow, &self.path, offset)
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
        let chunk = self.framed_chunk(&stored, meta, offset)?;
        let mut raw = Vec::with_capacity(meta.raw_len as usize);
        chunk.read_all(&mut raw, &self.path, offset)?;
        Ok(Cow::Owned(raw))
    }

    /// The inline value `[at, at + len)` of `loaded`'s value chunk (`meta`: the block's
    /// record); `None` when it lies outside the chunk. A block stored compressed (format 6)
    /// keeps its values in its own cache entry: when the entry the lookup took its slots from
    /// holds them, the value is copied from there — the lookup's one probe of the cache was
    /// its block's — else read as [`Table::value_in_block`]. Other blocks' values are read
    /// as [`Table::value_in_chunk`].
    ///
    /// # Errors
    /// As [`Table::value_chunk`].
    pub(super) fn inline_value(
        &self,
        loaded: &LoadedBlock,
        meta: &BlockMeta,
        at: usize,
        len: usize,
    ) -> Result<Option<Vec<u8>>> {
        let blocks = self
            .key_blocks
            .as_ref()
            .filter(|_| loaded.decoded() && meta.codec != CODEC_NONE && len > 0);
        let Some(blocks) = blocks else {
            return self.value_in_chunk(loaded.block, meta, at, len);
        };
        let entry = match &loaded.bytes {
            BlockBytes::Cached(entry) => Some(entry),
            _ => None,
        };
        if let Some(values) = entry.and_then(CachedBlock::values) {
            blocks.value_hit();
            return Ok(at
                .checked_add(len)
                .and_then(|end| values.get(at..end))
                .map(<[u8]>::to_vec));
        }
        self.value_in_block(blocks, loaded.block, entry, meta, at, len)
    }

    /// The raw bytes `[at, at + len)` of the value chunk of `block`, a compressed data block
    /// whose cache entry (`entry`, when it is cached) does not hold its values: the chunk
    /// read and checked as [`Table::value_chunk`] checks it, and only the value's frame
    /// decompressed — or, when the cache lets the values join the block's entry, the whole
    /// chunk, attached to the entry. Counted as a value miss.
    ///
    /// # Errors
    /// As [`Table::value_chunk`].
    fn value_in_block(
        &self,
        blocks: &TableChunks,
        block: u64,
        entry: Option<&CachedBlock>,
        meta: &BlockMeta,
        at: usize,
        len: usize,
    ) -> Result<Option<Vec<u8>>> {
        if at.checked_add(len).is_none_or(|end| end > meta.raw_len as usize) {
            return Ok(None);
        }
        let admit = blocks.value_missed(block, u64::from(meta.raw_len), entry);
        let (stored, offset) = self.stored_value_chunk(block, meta, false)?;
        let chunk = self.framed_chunk(&stored, meta, offset)?;
        match entry.filter(|_| admit) {
            Some(entry) => {
                let mut raw = Vec::with_capacity(meta.raw_len as usize);
                chunk.read_all(&mut raw, &self.path, offset)?;
                blocks.attach_values(block, entry, &raw);
                Ok(raw.get(at..at + len).map(<[u8]>::to_vec))
            }
            None => chunk
                .read(at as u64, len as u64, &self.path, offset)
                .map(Some),
        }
    }

    /// The raw bytes `[at, at + len)` of `block`'s value chunk (one value), checked as
    /// [`Table::value_chunk`] checks the chunk, decompressing only the frame that holds them;
    /// `None` when they lie outside the chunk. With a chunk cache, a value of a compressed
    /// chunk is copied from the cached chunk when there is one (no read, no decompression:
    /// the chunk was checked when it was cached); on a miss that the cache admits, the whole
    /// chunk is decompressed and cached.
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
        let chunks = self.chunks.as_ref().filter(|_| meta.codec != CODEC_NONE && len > 0);
        let admit = match chunks.map(|c| c.get(block, at, len, u64::from(meta.raw_len))) {
            Some(Lookup::Hit(value)) => return Ok(Some(value)),
            Some(Lookup::Miss { admit }) => admit,
            None => false,
        };
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
        let chunk = self.framed_chunk(&stored, meta, offset)?;
        match chunks.filter(|_| admit) {
            Some(cache) => {
                let mut raw = Vec::with_capacity(meta.raw_len as usize);
                chunk.read_all(&mut raw, &self.path, offset)?;
                let value = raw.get(at..at + len).map(<[u8]>::to_vec);
                cache.insert(block, raw.into());
                Ok(value)
            }
            None => chunk
                .read(at as u64, len as u64, &self.path, offset)
                .map(Some),
        }
    }

    /// Starts loading the line of `block`'s cached decompressed chunk at raw offset `at` (a
    /// guess of where a lookup's value lies); true when the chunk is cached. False without a
    /// chunk cache or for an uncompressed chunk.
    pub(super) fn prefetch_cached_value(&self, block: u64, meta: &BlockMeta, at: u64) -> bool {
        meta.codec != CODEC_NONE && self.chunks.as_ref().is_some_and(|c| c.prefetch(block, at))
    }

    /// An upper bound of the table's longest inline value that is exact up to `cap`: a block
    /// whose whole value chunk is at most `cap` bytes (or at most the longest found so far)
    /// is bounded by its chunk's length without being read; another block's slots are read
    /// (not its values) until a value longer than `cap` is found, which ends the search. So
    /// the result is at most `cap` exactly when every inline value is. 0 without inline
    /// values. What a compaction tells the builder of its outputs (`sst::ValueHints`). Exact
    /// and read from the properties in format 4 and later; older files are searched.
    ///
    /// # Errors
    /// `Corruption` when a block read fails its checksum or holds a malformed slot; `Io` when
    /// a read fails.
    pub(crate) fn longest_inline_value(&self, cap: u64) -> Result<u64> {
        if self.properties.inline_values == 0 {
            return Ok(0);
        }
        if let Some(len) = self.properties.max_inline_value_len {
            return Ok(u64::from(len));
        }
        let mut longest = 0u64;
        for block in 0..self.properties.blocks {
            let meta = self.meta_of(block)?;
            let chunk = u64::from(meta.raw_len);
            if chunk <= cap.max(longest) {
                longest = longest.max(chunk);
                continue;
            }
            let loaded = self.load_block(block, false)?;
            for pos in self.fence.block_positions(block) {
                let slot = self.slot(&loaded, pos)?;
                let inline = crate::key::ValueKind::from_u8(slot.trailer() as u8)
                    .is_some_and(crate::key::ValueKind::is_inline);
                if !inline {
                    continue;
                }
                let prev = self.prev_reference(&loaded, pos)?;
                let (_, len) = self
                    .inline_ref(
                        slot.reference(),
                        prev.as_ref().map(super::PrevRef::bytes),
                        meta.values_start,
                    )
                    .ok_or_else(|| {
                        crate::error::Error::corruption(
                            &self.path,
                            self.slot_file_offset(&loaded, pos),
                            "malformed value reference",
                        )
                    })?;
                longest = longest.max(len as u64);
                if longest > cap {
                    return Ok(longest);
                }
            }
        }
        Ok(longest)
    }
}
