//! SSTables: the immutable sorted files of the LSM tree, in Augur's "learned-friendly"
//! format (docs/format/sst.md). Written once by [`Builder`] at flush or compaction, then read
//! by [`Table`] on the read path and by [`TableCursor`] in scans and compactions.
//!
//! Every key occupies a fixed-width slot (format 2: a key head of a width chosen per file,
//! the rest of a long key in its block's suffix chunk; format 1: the key padded to the
//! file's longest), so entry `i` sits at a computed offset: a learned model can predict a
//! position and read a few slots directly (Bourbon §3). Small values sit in per-block value
//! chunks, compressed when that pays; large ones are value-log pointers (WiscKey). From format
//! 6 a data block itself is stored compressed too when that pays, and read decompressed
//! (`block_codec`). Every byte of the file is covered by a checksum.

pub(crate) mod block_codec;
mod builder;
mod cursor;
pub(crate) mod fence;
pub(crate) mod filter;
mod format;
#[cfg(test)]
mod learned_tests;
mod properties;
mod reader;
pub(crate) mod slot;
#[cfg(test)]
mod tests;

pub use builder::{Builder, BuilderOptions, LayoutHints, ModelTime, TableSummary, ValueHints};
#[cfg(feature = "test-util")]
pub(crate) use builder::SAMPLE_VALUE_BYTES;
pub use cursor::TableCursor;
// The file layout, for the fuzz targets and the format tests outside the crate.
#[cfg(feature = "test-util")]
pub use format::{Footer, Section, FOOTER_LEN, FORMAT_VERSION};
#[cfg(feature = "test-util")]
pub use properties::Properties;
#[cfg(feature = "test-util")]
pub use slot::SlotParams;
pub use reader::lookup_stats::{LookupCounts, PathCounts};
pub use reader::{LearnReport, Table};

use crate::key::{SeqNo, ValueKind};

/// One entry of a table, as stored: the value is the inline bytes (`Value`), the 20-byte
/// encoded `ValuePointer` (`Pointer`) or empty (`Delete`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The user key.
    pub user_key: Vec<u8>,
    /// Sequence number of the write.
    pub seqno: SeqNo,
    /// What the entry holds.
    pub kind: ValueKind,
    /// Inline value, encoded pointer, or empty.
    pub value: Vec<u8>,
}
