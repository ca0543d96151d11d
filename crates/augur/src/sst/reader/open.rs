//! Opening a [`Table`]: the footer, the section layout and the small sections (properties,
//! fence index, filter, model) read — in one read of the file's tail when it is not
//! mapped — checked against their checksums and decoded. Data blocks are verified later,
//! when first read (`reader.rs`).

use super::{learned, read_mapped_or, LookupStats, Table, VerifiedSet};
use crate::cache::{ChunkCache, FileReads};
use crate::checksum::crc;
use crate::error::{Error, Result};
use crate::fs::{FileSystem, RandomAccessFile, ReadMode};
use crate::sst::fence::{FenceIndex, SectionLens};
use crate::sst::filter::Bloom;
use crate::sst::format::{
    Footer, Section, COMPRESSED_BLOCK_FORMAT_VERSION, FOOTER_LEN, INTERLEAVED_FORMAT_VERSION,
};
use crate::sst::properties::Properties;
use crate::sst::slot::SlotLayout;
use std::borrow::Cow;
use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

/// Bytes read from the end of an unmapped file when it is opened: the footer and the
/// sections before it in one read.
const OPEN_TAIL_BYTES: u64 = 64 << 10;

/// Reads `len` bytes at `offset`: borrowed from the mapping when there is one.
fn read_bytes<'a>(
    file: &'a dyn RandomAccessFile,
    path: &Path,
    offset: u64,
    len: u64,
) -> Result<Cow<'a, [u8]>> {
    read_mapped_or(file.as_slice(), file, path, offset, len)
}

impl Table {
    /// Opens and validates a table: footer magic, version and checksum, the section layout,
    /// and the checksums of the properties, fence index and filter sections. Data blocks are
    /// verified when first read.
    ///
    /// # Errors
    /// `Corruption` naming `path` and the offset for a truncated or damaged file;
    /// `UnsupportedVersion` for another format version; `Io` when the file cannot be read.
    #[cfg(any(test, feature = "test-util"))]
    pub fn open(fs: &dyn FileSystem, path: &Path, file_id: u64, mode: ReadMode) -> Result<Table> {
        Self::open_with(fs, path, file_id, mode, true)
    }

    /// [`Table::open`], choosing whether lookups use the file's learned index (when it has
    /// one). A model section that passes its checksum but that this build cannot read (a
    /// newer index type or version) is ignored with a warning: lookups then take the fence
    /// path (STYLE.md §6).
    ///
    /// # Errors
    /// As [`Table::open`]; a model section failing its checksum is `Corruption`.
    pub fn open_with(
        fs: &dyn FileSystem,
        path: &Path,
        file_id: u64,
        mode: ReadMode,
        use_model: bool,
    ) -> Result<Table> {
        let reads = FileReads::plain(mode);
        let file = reads.open_unbounded(fs, path)?;
        Self::from_file(file, path, file_id, reads.cached(), None, use_model)
    }

    /// [`Table::open_with`] through `reads`: its mode, its page cache (direct mode), its
    /// chunk cache and its bound on open files.
    ///
    /// # Errors
    /// As [`Table::open_with`].
    pub(crate) fn open_in(
        fs: &Arc<dyn FileSystem>,
        path: &Path,
        file_id: u64,
        reads: &FileReads,
        use_model: bool,
    ) -> Result<Table> {
        let file = reads.open(fs, path)?;
        Self::from_file(file, path, file_id, reads.cached(), reads.chunks(), use_model)
    }

    /// Opens the table in `file` (at `path`); `cached` when reads come through the page
    /// cache (a block checked once is trusted after, and lookups read only what they need);
    /// its point lookups of compressed values through `chunks` when given.
    fn from_file(
        file: Arc<dyn RandomAccessFile>,
        path: &Path,
        file_id: u64,
        cached: bool,
        chunks: Option<&Arc<ChunkCache>>,
        use_model: bool,
    ) -> Result<Table> {
        let file_size = file.len()?;
        if file_size < FOOTER_LEN as u64 {
            return Err(Error::corruption(
                path,
                file_size,
                "file is shorter than an SSTable footer",
            ));
        }
        // Without a mapping, the file's tail — the footer and, in all but large files, the
        // sections after the data — is read with one read instead of one per section.
        let tail_len = file_size.min(OPEN_TAIL_BYTES);
        let tail_at = file_size - tail_len;
        // (Not into the page cache: the sections are parsed and pinned right here.)
        let tail = match file.as_slice() {
            Some(_) => None,
            None => Some(crate::cache::without_cache_fill(|| {
                read_bytes(&*file, path, tail_at, tail_len).map(Cow::into_owned)
            })?),
        };
        let read_meta = |offset: u64, len: u64| -> Result<Cow<'_, [u8]>> {
            let in_tail = tail.as_deref().and_then(|t| {
                let start = usize::try_from(offset.checked_sub(tail_at)?).ok()?;
                t.get(start..start.checked_add(usize::try_from(len).ok()?)?)
            });
            match in_tail {
                Some(bytes) => Ok(Cow::Borrowed(bytes)),
                None => read_bytes(&*file, path, offset, len),
            }
        };
        let footer_offset = file_size - FOOTER_LEN as u64;
        let footer_bytes = read_meta(footer_offset, FOOTER_LEN as u64)?;
        let footer = Footer::decode(&footer_bytes, path, footer_offset)?;
        let checked = |s: &Section, name: &str| -> Result<Cow<'_, [u8]>> {
            let bytes = read_meta(s.offset, s.len)?;
            if crc(&bytes) != s.crc {
                return Err(Error::corruption(
                    path,
                    s.offset,
                    format!("{name} section checksum mismatch"),
                ));
            }
            Ok(bytes)
        };
        let props_bytes = checked(&footer.properties, "properties")?;
        let properties = Properties::decode(
            &props_bytes,
            footer.version,
            path,
            footer.properties.offset,
        )?;
        let slot_bytes = properties.slot_bytes();
        // (From format 6 a block may be stored compressed, shorter than its slots: the fence
        // index checks each block's raw length against its slots instead.)
        let data_len_ok = match footer.version {
            1 => properties.entries.checked_mul(slot_bytes) == Some(footer.data.len),
            v if v >= COMPRESSED_BLOCK_FORMAT_VERSION => true,
            _ => properties
                .entries
                .checked_mul(slot_bytes)
                .is_some_and(|slots| slots <= footer.data.len),
        };
        if !data_len_ok {
            return Err(Error::corruption(
                path,
                footer.data.offset,
                "data section length differs from entries × slot size",
            ));
        }
        if footer.version == 1 && properties.raw_value_bytes != footer.values.len {
            return Err(Error::corruption(
                path,
                footer.values.offset,
                "value section length differs from the properties",
            ));
        }
        let index_bytes = checked(&footer.index, "fence index")?;
        let lens = SectionLens {
            version: footer.version,
            data_len: footer.data.len,
            values_len: footer.values.len,
        };
        let fence = FenceIndex::decode(&index_bytes, &properties, lens, path, footer.index.offset)?;
        let filter = if footer.filter.len == 0 {
            None
        } else {
            let bytes = checked(&footer.filter, "filter")?;
            Some(Bloom::decode_section(&bytes, path, footer.filter.offset)?)
        };
        let model = OnceLock::new();
        if use_model && footer.model.len > 0 {
            let bytes = checked(&footer.model, "model")?;
            if let Some(m) = learned::load_model(&bytes, &properties, path, footer.model.offset) {
                let _ = model.set(m);
            }
        }
        let prefix = properties
            .smallest
            .user_key
            .get(..properties.common_prefix_len as usize)
            .unwrap_or_default()
            .to_vec();
        drop((props_bytes, index_bytes, footer_bytes));
        let blocks = properties.blocks;
        let layout = SlotLayout::new(properties.slot, properties.key_width);
        if fence.raw_value_bytes() != properties.raw_value_bytes {
            return Err(Error::corruption(
                path,
                footer.index.offset,
                "value chunks' raw lengths differ from the properties",
            ));
        }
        let stripped = prefix.get(..layout.prefix_len()).unwrap_or_default().to_vec();
        let compressed_blocks = fence.has_compressed_blocks();
        Ok(Table {
            path: path.to_path_buf(),
            file_id,
            mapped: file.mapped(),
            cached,
            file,
            file_size,
            footer,
            layout,
            stripped,
            values_base: if footer.version >= INTERLEAVED_FORMAT_VERSION {
                footer.data.offset
            } else {
                footer.values.offset
            },
            interleaved: footer.version >= INTERLEAVED_FORMAT_VERSION,
            properties,
            filter,
            fence,
            model,
            models_enabled: use_model,
            opened_at: Instant::now(),
            prefix,
            verified_blocks: VerifiedSet::new(blocks),
            verified_value_chunks: VerifiedSet::new(blocks),
            chunks: chunks.map(|c| c.table(blocks)),
            // A part of its own: a block's decompressed bytes never answer for its value
            // chunk of the same block number, nor the other way round.
            key_blocks: chunks
                .filter(|_| compressed_blocks)
                .map(|c| c.block_table(blocks)),
            compressed_blocks,
            stats: LookupStats::default(),
            remove_on_drop: OnceLock::new(),
        })
    }

}
