//! [`sst`] and [`sst_entries`]: an SSTable's format version, footer sections, properties, key
//! range, learned-index section and per-block layout, read through the engine's `Table`
//! (footer, properties, fence index; docs/format/sst.md) and `crate::index::decode`; then,
//! when asked, every entry through the table cursor, one at a time.
//!
//! [`sst`] reads no data block: the per-block facts come from the fence index
//! (`Table::block_facts`), so a change of the fence records (a new format) shows here
//! through that one function. [`sst_entries`] reads every block and checks its checksum as
//! a scan does; a damaged block ends the iteration with [`FileEnd::Damaged`].

use super::{std_fs, FileEnd, KeyVersion, ValueInfo};
use crate::checksum::crc;
use crate::error::{Error, Result};
use crate::filename::{self, FileKind};
use crate::fs::ReadMode;
use crate::index::IndexKind;
use crate::sst::{Table, TableCursor};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What an SSTable is made of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SstDump {
    /// The file read.
    pub path: PathBuf,
    /// Its size in bytes.
    pub file_bytes: u64,
    /// The table format version.
    pub format_version: u32,
    /// Where each section lies, in file order, the footer last.
    pub sections: Vec<SectionInfo>,
    /// The properties section.
    pub properties: SstProperties,
    /// The first internal key.
    pub smallest: KeyVersion,
    /// The last internal key.
    pub largest: KeyVersion,
    /// The learned-index section, if the file has one.
    pub model: Option<ModelInfo>,
    /// Every data block, in order, as the fence index records it.
    pub blocks: Vec<BlockInfo>,
}

/// One section of the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SectionInfo {
    /// `data`, `values`, `filter`, `index`, `model`, `properties` or `footer`.
    pub name: &'static str,
    /// Offset of its first byte.
    pub offset: u64,
    /// Its length in bytes (0: absent).
    pub len: u64,
}

/// The properties section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SstProperties {
    /// Entries (slots).
    pub entries: u64,
    /// Tombstones.
    pub deletes: u64,
    /// Values stored inline (expiring values included).
    pub inline_values: u64,
    /// Pointers into the value log.
    pub pointers: u64,
    /// The longest user key.
    pub key_width: u32,
    /// Entries per data block (the last block may hold fewer).
    pub block_records: u32,
    /// Data blocks.
    pub blocks: u64,
    /// Length of the prefix every user key of the file shares.
    pub common_prefix_len: u32,
    /// Bloom filter bits per key (0: no filter).
    pub bloom_bits_per_key: u32,
    /// Sum of the user keys' lengths.
    pub raw_key_bytes: u64,
    /// Sum of the inline values' lengths.
    pub raw_value_bytes: u64,
    /// Bytes the inline values take in the file (compressed or not).
    pub stored_value_bytes: u64,
    /// Sum of the lengths of the values the pointers refer to.
    pub pointer_value_bytes: u64,
    /// The longest inline value (formats 4 and later).
    pub max_inline_value_len: Option<u32>,
    /// The layout of the key slots.
    pub slot: SlotInfo,
}

/// The layout of every key slot of the file (docs/format/sst.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotInfo {
    /// Bytes of one slot.
    pub slot_bytes: u64,
    /// Bytes stripped from the front of every key.
    pub prefix_len: u32,
    /// Width of the key-head field.
    pub head_bytes: u32,
    /// Width of the key-length field.
    pub len_bytes: u8,
    /// Length after the prefix of every key when `len_bytes` is 0.
    pub fixed_rest_len: u32,
    /// Width of the key-suffix offset field.
    pub suffix_bytes: u8,
    /// Width of the trailer field.
    pub trailer_bytes: u8,
    /// Added to every stored trailer.
    pub trailer_base: u64,
    /// Width of the value-reference field.
    pub ref_bytes: u8,
    /// Format 1's value reference.
    pub v1_refs: bool,
    /// Format 7's inline references: each holds its value's end only.
    pub end_refs: bool,
}

/// The learned-index section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelInfo {
    /// Offset of the section.
    pub offset: u64,
    /// Its length in bytes.
    pub len: u64,
    /// True when the section matches its checksum (a mismatch fails the database's open).
    pub checksum_ok: bool,
    /// What the index decoder tells, or why it refused the section (lookups then take the
    /// fence path).
    pub decoded: std::result::Result<ModelSummary, String>,
}

/// What a decoded learned index tells about itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelSummary {
    /// Its type.
    pub kind: IndexKind,
    /// Keys it was built over (lookups use it only when that is the file's entry count).
    pub keys: u64,
    /// Its pieces: segments, or fence pointers.
    pub segments: u64,
    /// The largest window a lookup through it searches.
    pub max_window: u64,
    /// The error bound δ it was fitted to, for the types that have one.
    pub error_bound: Option<u32>,
    /// Bytes it takes in memory.
    pub memory_bytes: u64,
}

/// One data block and its value chunk, as the fence index records them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockInfo {
    /// The block's number.
    pub block: u64,
    /// Position of its first entry in the file.
    pub first_position: u64,
    /// Its entries.
    pub entries: u64,
    /// File offset of the block.
    pub data_offset: u64,
    /// Bytes of the block (slots and key suffixes) as stored.
    pub data_bytes: u64,
    /// How the block is stored (format 6; [`super::codec_name`]): 0 raw.
    pub block_codec: u8,
    /// For a compressed block: its keys packed inline (`true`) or in columns.
    pub block_keys_inline: bool,
    /// Bytes of the block once decompressed.
    pub block_raw_bytes: u64,
    /// File offset of its value chunk.
    pub values_offset: u64,
    /// Bytes of the value chunk as stored.
    pub values_stored_bytes: u64,
    /// Bytes of the value chunk once decompressed.
    pub values_raw_bytes: u64,
    /// How the value chunk is stored ([`super::codec_name`]).
    pub values_codec: u8,
    /// Length of the key prefix the block's slots do not store (the file's and the block's).
    pub prefix_len: u64,
    /// The block's last key.
    pub last_key: KeyVersion,
}

/// One entry of a table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SstEntry {
    /// Its position in the file.
    pub position: u64,
    /// The user key.
    pub key: Vec<u8>,
    /// Its sequence number.
    pub seqno: u64,
    /// What it holds.
    pub value: ValueInfo,
}

/// Opens the table at `path` without its model (a damaged model section is reported, not
/// refused), read through `pread`.
fn open(path: &Path) -> Result<Table> {
    let file_id = match path
        .file_name()
        .and_then(|n| n.to_str())
        .map(filename::parse)
    {
        Some(Some(FileKind::Table(id))) => id,
        _ => 0,
    };
    Table::open_with(&std_fs(), path, file_id, ReadMode::Pread, false)
}

/// Reads what the SSTable at `path` is made of: its footer, properties, fence index and
/// model section (no data block). Writes nothing.
///
/// # Errors
/// `Io` when the file cannot be read; `Corruption` naming the offset for a damaged footer,
/// properties, fence index or filter section (the database's open refuses such a table too);
/// `UnsupportedVersion` for a newer table format.
pub fn sst(path: &Path) -> Result<SstDump> {
    let table = open(path)?;
    let f = table.footer();
    let p = table.properties();
    let mut sections: Vec<SectionInfo> = [
        ("data", f.data),
        ("values", f.values),
        ("filter", f.filter),
        ("index", f.index),
        ("model", f.model),
        ("properties", f.properties),
    ]
    .into_iter()
    .map(|(name, s)| SectionInfo {
        name,
        offset: s.offset,
        len: s.len,
    })
    .collect();
    let footer_at = f.properties.offset + f.properties.len;
    sections.push(SectionInfo {
        name: "footer",
        offset: footer_at,
        len: table.file_size().saturating_sub(footer_at),
    });
    let model = table
        .model_section()?
        .map(|bytes| model_info(&bytes, f.model.offset, f.model.crc, path));
    let s = p.slot;
    let properties = SstProperties {
        entries: p.entries,
        deletes: p.deletes,
        inline_values: p.inline_values,
        pointers: p.pointers,
        key_width: p.key_width,
        block_records: p.block_records,
        blocks: p.blocks,
        common_prefix_len: p.common_prefix_len,
        bloom_bits_per_key: p.bloom_bits_per_key,
        raw_key_bytes: p.raw_key_bytes,
        raw_value_bytes: p.raw_value_bytes,
        stored_value_bytes: table.stored_value_bytes(),
        pointer_value_bytes: p.pointer_value_bytes,
        max_inline_value_len: p.max_inline_value_len,
        slot: SlotInfo {
            slot_bytes: s.slot_bytes(),
            prefix_len: s.prefix_len,
            head_bytes: s.head_bytes,
            len_bytes: s.len_bytes,
            fixed_rest_len: s.fixed_rest_len,
            suffix_bytes: s.suffix_bytes,
            trailer_bytes: s.trailer_bytes,
            trailer_base: s.trailer_base,
            ref_bytes: s.ref_bytes,
            v1_refs: s.v1_refs,
            end_refs: s.end_only_refs(),
        },
    };
    let mut blocks = Vec::new();
    for b in 0..table.block_count() {
        let facts = table.block_facts(b).ok_or_else(|| {
            Error::corruption(
                path,
                f.index.offset,
                format!("no fence record of block {b}"),
            )
        })?;
        let last_key =
            KeyVersion::of_trailer(facts.last_key, facts.last_trailer).ok_or_else(|| {
                Error::corruption(path, f.index.offset, "unknown kind in a block's last key")
            })?;
        blocks.push(BlockInfo {
            block: b,
            first_position: facts.positions.start,
            entries: facts.positions.end - facts.positions.start,
            data_offset: facts.data_offset,
            data_bytes: facts.data_bytes,
            values_offset: facts.values_offset,
            values_stored_bytes: facts.values_stored_bytes,
            values_raw_bytes: facts.values_raw_bytes,
            values_codec: facts.values_codec,
            block_codec: facts.block_codec,
            block_keys_inline: facts.block_keys_inline,
            block_raw_bytes: facts.block_raw_bytes,
            prefix_len: facts.prefix_len as u64,
            last_key,
        });
    }
    Ok(SstDump {
        path: path.to_path_buf(),
        file_bytes: table.file_size(),
        format_version: f.version,
        sections,
        smallest: KeyVersion::of(table.smallest()),
        largest: KeyVersion::of(table.largest()),
        properties,
        model,
        blocks,
    })
}

/// What the model section `bytes` (at `offset`, with checksum `expected_crc`) holds.
fn model_info(bytes: &[u8], offset: u64, expected_crc: u32, path: &Path) -> ModelInfo {
    let checksum_ok = crc(bytes) == expected_crc;
    let decoded = if checksum_ok {
        crate::index::decode(bytes, path, offset)
            .map(|m| ModelSummary {
                kind: m.kind(),
                keys: m.len(),
                segments: m.segments(),
                max_window: m.max_window(),
                error_bound: m.fitted_error_bound(),
                memory_bytes: m.size_bytes() as u64,
            })
            .map_err(|e| e.to_string())
    } else {
        Err("model section checksum mismatch".into())
    };
    ModelInfo {
        offset,
        len: bytes.len() as u64,
        checksum_ok,
        decoded,
    }
}

/// Every entry of the SSTable at `path` in order, each with its value bytes when `values`,
/// read block by block through the table cursor (each block checked against its checksum).
/// Writes nothing.
///
/// # Errors
/// As [`sst`].
pub fn sst_entries(path: &Path, values: bool) -> Result<SstEntries> {
    let table = Arc::new(open(path)?);
    Ok(SstEntries {
        cursor: TableCursor::new(Arc::clone(&table), true),
        table,
        values,
        position: 0,
        started: false,
        done: false,
        end: None,
    })
}

/// The entries of one table, one at a time. After the last one (`next` gives `None`),
/// [`SstEntries::end`] says whether the table was read to its end or where damage stopped
/// it; an `Err` item is an I/O failure, and ends the iteration.
pub struct SstEntries {
    table: Arc<Table>,
    cursor: TableCursor,
    values: bool,
    position: u64,
    started: bool,
    done: bool,
    end: Option<FileEnd>,
}

impl std::fmt::Debug for SstEntries {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SstEntries")
            .field("path", &self.table.path())
            .field("position", &self.position)
            .finish_non_exhaustive()
    }
}

impl SstEntries {
    /// How reading ended, once the iteration has ended (`None` before, or after an I/O
    /// failure).
    pub fn end(&self) -> Option<&FileEnd> {
        self.end.as_ref()
    }

    /// Stops the iteration with `end`, or with the error when it is no damage.
    fn stop(&mut self, e: Error) -> Option<Result<SstEntry>> {
        self.done = true;
        match FileEnd::of_error(e) {
            Ok(end) => {
                self.end = Some(end);
                None
            }
            Err(e) => Some(Err(e)),
        }
    }
}

impl Iterator for SstEntries {
    type Item = Result<SstEntry>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let moved = if self.started {
            self.position += 1;
            self.cursor.advance()
        } else {
            self.started = true;
            self.cursor.seek_to_first()
        };
        if let Err(e) = moved {
            return self.stop(e);
        }
        if !self.cursor.valid() {
            self.done = true;
            self.end = Some(FileEnd::Clean);
            return None;
        }
        let Some(value) = ValueInfo::decode(self.cursor.kind(), self.cursor.value(), self.values)
        else {
            let block = self.table.block_of(self.position);
            let offset = self.table.block_facts(block).map_or(0, |b| b.data_offset);
            return self.stop(Error::corruption(
                self.table.path(),
                offset,
                format!(
                    "entry {} (block {block}): malformed {} value",
                    self.position,
                    super::EntryKind::of(self.cursor.kind()).name()
                ),
            ));
        };
        Some(Ok(SstEntry {
            position: self.position,
            key: self.cursor.key().to_vec(),
            seqno: self.cursor.trailer() >> 8,
            value,
        }))
    }
}
