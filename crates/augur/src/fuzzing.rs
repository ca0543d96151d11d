//! Entry points for the fuzz targets of `fuzz/` (issue 13) into decoders that the public API
//! only runs inside [`crate::sst::Table::open`]: the SSTable filter section
//! (`sst/filter.rs`) and fence-pointer index section (`sst/fence.rs`), each on its own, and
//! their builders. Built only with the `test-util` feature; not part of the API (the engine
//! keeps these types crate-private, and these wrappers expose only what a target checks).

use crate::error::Result;
use crate::sst::fence::{FenceIndex, SectionLens};
use crate::sst::filter::{key_hash, Bloom, FilterBuilder};
use crate::sst::Properties;
use std::ops::Range;
use std::path::Path;

/// A decoded filter section.
#[derive(Debug)]
pub struct Filter(Bloom);

impl Filter {
    /// Decodes a non-empty filter section read from `offset` of `file`, as `Table::open` does.
    ///
    /// # Errors
    /// `Corruption` naming `file` when the section is malformed.
    pub fn decode(section: &[u8], file: &Path, offset: u64) -> Result<Filter> {
        Bloom::decode_section(section, file, offset).map(Filter)
    }

    /// False only when `user_key` was certainly not added.
    pub fn may_contain(&self, user_key: &[u8]) -> bool {
        self.0.may_contain(user_key)
    }

    /// [`Filter::may_contain`] through the read path's hash-once entry (with its prefetch).
    pub fn may_contain_prefetched(&self, user_key: &[u8]) -> bool {
        let h = key_hash(user_key);
        self.0.prefetch(h);
        self.0.may_contain_hash(h)
    }

    /// The section bytes this filter decodes from.
    pub fn encode(&self) -> Vec<u8> {
        self.0.encode()
    }

    /// Heap bytes held by the filter.
    pub fn size_bytes(&self) -> usize {
        self.0.size_bytes()
    }
}

/// The filter section the table builder writes for `keys` (each distinct user key once) at
/// `bits_per_key` (0: no filter, an empty section), and the size it predicted for it.
pub fn build_filter<'a>(
    bits_per_key: u32,
    keys: impl IntoIterator<Item = &'a [u8]>,
) -> (Vec<u8>, u64) {
    let mut b = FilterBuilder::new(bits_per_key);
    for k in keys {
        b.add(k);
    }
    (b.finish(), b.estimated_bytes())
}

/// A decoded fence-pointer index section.
#[derive(Debug)]
pub struct Fence(FenceIndex);

impl Fence {
    /// Decodes and validates the index section of a table of format `version` read from
    /// `offset` of `file`, against the table's properties and data- and value-section
    /// lengths, as `Table::open` does.
    ///
    /// # Errors
    /// `Corruption` naming `file` when the section is malformed or inconsistent.
    pub fn decode(
        bytes: &[u8],
        props: &Properties,
        (version, data_len, values_len): (u32, u64, u64),
        file: &Path,
        offset: u64,
    ) -> Result<Fence> {
        let lens = SectionLens {
            version,
            data_len,
            values_len,
        };
        FenceIndex::decode(bytes, props, lens, file, offset).map(Fence)
    }

    /// Positions of the block holding the first entry `>= (user_key, trailer)` in internal
    /// order (`entries..entries` when every entry is smaller).
    pub fn search(&self, user_key: &[u8], trailer: u64) -> Range<u64> {
        self.0.search(user_key, trailer)
    }

    /// Number of data blocks.
    pub fn block_count(&self) -> u64 {
        self.0.block_count()
    }

    /// The block holding position `pos`.
    pub fn block_of(&self, pos: u64) -> u64 {
        self.0.block_of(pos)
    }

    /// Positions of the slots of `block`.
    pub fn block_positions(&self, block: u64) -> Range<u64> {
        self.0.block_positions(block)
    }

    /// The last internal key `(user key, trailer)` of `block`.
    pub fn block_last_key(&self, block: u64) -> Option<(&[u8], u64)> {
        self.0.block_last_key(block)
    }

    /// The value-section chunk `[start, end)` of `block`.
    pub fn value_chunk(&self, block: u64) -> Option<Range<u64>> {
        self.0.meta(block).map(|m| m.values_start..m.values_end)
    }

    /// The section bytes this index decodes from, as format `version` (every length in its
    /// shortest varint).
    pub fn encode(&self, version: u32) -> Vec<u8> {
        self.0.encode(version)
    }

    /// Heap bytes held by the index.
    pub fn size_bytes(&self) -> usize {
        self.0.size_bytes()
    }
}
