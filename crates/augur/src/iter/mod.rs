//! Iterators and range scans. Bottom up: per-source cursors (`memtable::MemtableCursor`,
//! `sst::TableCursor`, [`level::LevelCursor`] for a sorted level) behind the [`source::Source`]
//! enum; the k-way [`merge::MergeCursor`]; the user-facing zero-copy [`Scan`] (snapshot
//! visibility, tombstones, range bounds, readahead of separated values), and the owning
//! double-ended [`DbIterator`] built on two scans. Compaction merges its inputs with the same
//! merge cursor.

mod db_iter;
mod level;
pub(crate) mod merge;
mod readahead;
mod scan;
pub(crate) mod source;

pub use db_iter::DbIterator;
pub use scan::Scan;
pub(crate) use scan::{owned_range, KeyRange, ScanState};
