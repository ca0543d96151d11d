//! Where a table's bytes come from: a block's location from its index record (or computed),
//! its bytes borrowed from the mapping or read into a buffer, checked once (mapped or cached)
//! or on every read (`pread`), and — through the page cache — only the slots a lookup needs,
//! fetched with its value chunk in one device request in format 3. A block stored compressed
//! (format 6) is taken decompressed from the chunk cache, or read, checked, decompressed and
//! unpacked (`sst::block_codec`) whole, and cached when the cache admits it.

use super::*;
use crate::cache::BlockLookup;
use crate::compression::CODEC_NONE;
use crate::sst::block_codec::{self, BlockShape};

impl Table {
    /// Checks `bytes` — part `what` of block `block`, read at `offset` — against `expected`,
    /// unless they come from the mapping and `verified` says this part was checked before
    /// (`force` checks anyway); remembers a mapped part once checked.
    ///
    /// # Errors
    /// `Corruption` naming the file and offset on a mismatch.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn check_once(
        &self,
        verified: &VerifiedSet,
        block: u64,
        bytes: &[u8],
        expected: u32,
        offset: u64,
        what: &str,
        force: bool,
    ) -> Result<()> {
        let mapped = self.checks_once();
        if force || !mapped || !verified.contains(block) {
            if crc(bytes) != expected {
                return Err(Error::corruption(
                    &self.path,
                    offset,
                    format!("{what} {block} checksum mismatch"),
                ));
            }
            if mapped {
                verified.insert(block);
            }
        }
        Ok(())
    }

    /// Where block `block` lies and its checksums.
    pub(super) fn meta_of(&self, block: u64) -> Result<BlockMeta> {
        self.fence.meta(block).ok_or_else(|| {
            Error::corruption(&self.path, self.footer.index.offset, "block number out of range")
        })
    }

    /// True when a block or value chunk checked once is trusted after: read from a mapping
    /// or through the page cache (the pread path checks every read).
    #[inline]
    pub(super) fn checks_once(&self) -> bool {
        self.mapped.is_some() || self.cached
    }

    /// The slots `[from, to)` of `block` (REQUIRES: within the block) and the block's key
    /// suffixes. Through the page cache, once the block was checked, only those slots are
    /// read (the pages they cover); otherwise the whole block ([`Table::load_block`]).
    pub(crate) fn load_slots(&self, block: u64, from: u64, to: u64) -> Result<LoadedBlock> {
        if !(self.cached && self.verified_blocks.contains(block)) || self.block_compressed(block)
        {
            return self.load_block(block, false);
        }
        let positions = self.fence.block_positions(block);
        // Format 7's end references: a value starts where the previous slot's ends, so the
        // slot before the window comes too.
        let from = if self.layout.params.end_only_refs() {
            from.saturating_sub(1)
        } else {
            from
        };
        let (from, to) = (from.max(positions.start), to.min(positions.end).max(from));
        let slot = self.layout.slot as u64;
        let (start, end) = match self.computed_block_span(block) {
            Some((start, len)) => (start, start + len),
            None => {
                let meta = self.meta_of(block)?;
                (
                    self.footer.data.offset + meta.data_start,
                    self.footer.data.offset + meta.data_end,
                )
            }
        };
        let slots_at = start + (from - positions.start) * slot;
        let slots_len = (to - from) * slot;
        if self.interleaved {
            self.prefetch_through_values(&self.meta_of(block)?, slots_at);
        }
        let mut bytes = self.read(slots_at, slots_len)?.into_owned();
        let suffixes_at = start + (positions.end - positions.start) * slot;
        if end > suffixes_at {
            bytes.extend_from_slice(&self.read(suffixes_at, end - suffixes_at)?);
        }
        Ok(LoadedBlock {
            block,
            first_pos: from,
            start: slots_at,
            slots_len: slots_len as usize,
            len: bytes.len(),
            bytes: BlockBytes::Read(bytes),
            prefix_ext: self.fence.block_prefix_ext(block),
        })
    }

    /// True when `block` is stored compressed (format 6). One flag test for a table without
    /// compressed blocks.
    #[inline]
    pub(crate) fn block_compressed(&self, block: u64) -> bool {
        self.compressed_blocks && self.fence.meta(block).is_some_and(|m| m.block_codec != CODEC_NONE)
    }

    /// Through the page cache of a format-3 file (REQUIRES: `cached && interleaved`), reads
    /// `[from, end of the value chunk of the block `meta` describes)` into the cache with one
    /// device request: a lookup's slots and its value (or a scan's block and its values) come
    /// from one read instead of two.
    pub(super) fn prefetch_through_values(&self, meta: &BlockMeta, from: u64) {
        let end = self.values_base + meta.values_end;
        self.file.prefetch(from, end.saturating_sub(from));
    }

    /// Reads the bytes of `block` (slots and key suffixes), verifying its checksum unless a
    /// mapped (or cached) block was verified before (or always, with `force`).
    pub(super) fn load_block(&self, block: u64, force: bool) -> Result<LoadedBlock> {
        if self.compressed_blocks {
            let meta = self.meta_of(block)?;
            if meta.block_codec != CODEC_NONE {
                return self.load_compressed_block(block, &meta, force);
            }
        }
        let positions = self.fence.block_positions(block);
        let slots_len = (positions.end - positions.start) as usize * self.layout.slot;
        let verified = !force && self.checks_once() && self.verified_blocks.contains(block);
        if self.cached && self.interleaved {
            let meta = self.meta_of(block)?;
            self.prefetch_through_values(&meta, self.footer.data.offset + meta.data_start);
        }
        // A verified block at a computed offset touches no index record (a cache miss per
        // lookup otherwise).
        let (offset, len) = match self.computed_block_span(block) {
            Some(span) if verified => span,
            _ => {
                let meta = self.meta_of(block)?;
                (
                    self.footer.data.offset + meta.data_start,
                    meta.data_end - meta.data_start,
                )
            }
        };
        let bytes = self.read(offset, len)?;
        if !verified {
            let meta = self.meta_of(block)?;
            self.check_once(
                &self.verified_blocks,
                block,
                &bytes,
                meta.slots_crc,
                offset,
                "data block",
                force,
            )?;
        }
        Ok(LoadedBlock {
            block,
            first_pos: positions.start,
            start: offset,
            slots_len,
            len: len as usize,
            bytes: match bytes {
                Cow::Borrowed(_) => BlockBytes::Mapped,
                Cow::Owned(v) => BlockBytes::Read(v),
            },
            prefix_ext: self.fence.block_prefix_ext(block),
        })
    }

    /// Block `block` (described by `meta`), stored compressed: from the chunk cache when it
    /// holds it (checked when it was cached; not with `force`), else its stored bytes read,
    /// checked (as [`Table::load_block`] checks a block), decompressed and unpacked — and
    /// cached when the cache admits the block.
    ///
    /// # Errors
    /// `Corruption` naming the file and the stored block's offset when the checksum fails or
    /// the block does not decompress to its recorded raw length; `Io` when the read fails.
    fn load_compressed_block(&self, block: u64, meta: &BlockMeta, force: bool) -> Result<LoadedBlock> {
        let positions = self.fence.block_positions(block);
        let shape = BlockShape::of(&self.layout, (positions.end - positions.start) as usize);
        let offset = self.footer.data.offset + meta.data_start;
        let loaded = |bytes: BlockBytes, len: usize| LoadedBlock {
            block,
            first_pos: positions.start,
            start: offset,
            slots_len: shape.slots_len(),
            len,
            bytes,
            prefix_ext: self.fence.block_prefix_ext(block),
        };
        let cache = self.key_blocks.as_ref().filter(|_| !force);
        let admit = match cache.map(|c| c.get_block(block, meta.block_raw_len)) {
            Some(BlockLookup::Hit(entry)) => {
                let len = entry.block().len();
                return Ok(loaded(BlockBytes::Cached(entry), len));
            }
            Some(BlockLookup::Miss { admit }) => admit,
            None => false,
        };
        if self.cached && self.interleaved {
            self.prefetch_through_values(meta, offset);
        }
        let stored = self.read(offset, meta.data_end - meta.data_start)?;
        self.check_once(
            &self.verified_blocks,
            block,
            &stored,
            meta.slots_crc,
            offset,
            "data block",
            force,
        )?;
        let raw_len = usize::try_from(meta.block_raw_len)
            .map_err(|_| Error::corruption(&self.path, offset, "data block too long"))?;
        let raw = block_codec::decompress(&stored, meta.block_codec, raw_len, shape, &self.path, offset)?;
        Ok(match cache.filter(|_| admit) {
            Some(cache) => loaded(BlockBytes::Cached(cache.insert_block(block, raw.into())), raw_len),
            None => loaded(BlockBytes::Decoded(raw), raw_len),
        })
    }

    /// Starts loading what a lookup of the positions `[lo, hi)` of compressed block `block`
    /// (`meta`: its record) will read from the block's entry in the chunk cache, when the
    /// entry is cached: the set's lock and the entry's reference counts
    /// ([`crate::cache::TableChunks::cached_address`]), the window's slots (at most
    /// `PREFETCH_WINDOW_LINES` lines), the stretch of key overflows they point into
    /// (estimated from the block's mean) and, with `value`, the value the window's middle
    /// predicts past the block's bytes, where the entry holds its values. All at once: one
    /// miss's latency instead of a chain. True when that value line was prefetched (then
    /// there is no need to prefetch the stored chunk). A hint only.
    pub(super) fn prefetch_cached_block(
        &self,
        block: u64,
        meta: &BlockMeta,
        lo: u64,
        hi: u64,
        value: bool,
    ) -> bool {
        let Some(base) = self.key_blocks.as_ref().and_then(|b| b.cached_address(block)) else {
            return false;
        };
        let positions = self.fence.block_positions(block);
        if positions.is_empty() {
            return false;
        }
        let (lo, hi) = (lo.clamp(positions.start, positions.end), hi.clamp(positions.start, positions.end));
        let lines = |from: u64, to: u64| {
            let mut at = from;
            while at < to.min(from + super::learned::PREFETCH_WINDOW_LINES * 64) {
                crate::prefetch::prefetch_address(base.wrapping_add(at as usize));
                at += 64;
            }
        };
        let slot = self.layout.slot as u64;
        let count = positions.end - positions.start;
        let slots_len = count * slot;
        lines((lo - positions.start) * slot, (hi - positions.start) * slot);
        let suffixes = meta.block_raw_len.saturating_sub(slots_len);
        if suffixes > 0 {
            let from = slots_len + (lo - positions.start) * suffixes / count;
            let to = slots_len + (hi - positions.start) * suffixes / count;
            lines(from.saturating_sub(64), to + 64);
        }
        if !(value && self.interleaved && meta.codec != CODEC_NONE) {
            return false;
        }
        let mid = (lo + (hi - lo) / 2).min(positions.end - 1);
        let at = meta.block_raw_len + (mid - positions.start) * u64::from(meta.raw_len) / count;
        crate::prefetch::prefetch_address(base.wrapping_add(at as usize));
        true
    }

    /// Where block `block` lies (file offset, stored length), computed without its index
    /// record: when the file stores no key suffixes and no interleaved value chunks, every
    /// block is its slots alone, at `first position × slot size`; when its blocks are
    /// uniform ([`crate::sst::fence::FenceIndex::uniform_span`]), at `block × stride`.
    /// `None` otherwise (the starts are in the index records). A record not touched is a
    /// cache miss fewer on a lookup's critical path.
    #[inline]
    pub(crate) fn computed_block_span(&self, block: u64) -> Option<(u64, u64)> {
        // (Compressed blocks are format 6, always interleaved and never uniform.)
        if self.layout.params.suffix_bytes == 0 && !self.interleaved {
            let positions = self.fence.block_positions(block);
            let slot = self.layout.slot as u64;
            return Some((
                self.footer.data.offset + positions.start * slot,
                (positions.end - positions.start) * slot,
            ));
        }
        let span = self.fence.uniform_span(block)?;
        Some((
            self.footer.data.offset + span.data_start,
            span.data_end - span.data_start,
        ))
    }

    pub(super) fn block_bytes<'a>(&'a self, block: &'a LoadedBlock) -> &'a [u8] {
        match &block.bytes {
            BlockBytes::Mapped => {
                let start = block.start as usize;
                self.mapped
                    .as_deref()
                    .and_then(|all| all.get(start..start + block.len))
                    .unwrap_or_default()
            }
            BlockBytes::Read(v) | BlockBytes::Decoded(v) => v,
            BlockBytes::Cached(entry) => entry.block(),
        }
    }

    /// Byte offset of slot `pos` of `block` in the file (for error messages); the stored
    /// block's offset for a decompressed block.
    pub(super) fn slot_file_offset(&self, block: &LoadedBlock, pos: u64) -> u64 {
        if block.decoded() {
            return block.start;
        }
        block.start + pos.saturating_sub(block.first_pos) * self.layout.slot as u64
    }
}
