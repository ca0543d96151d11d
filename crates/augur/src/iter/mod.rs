//! Iterators and range scans. Bottom up: per-source cursors (`memtable::MemtableCursor`,
//! `sst::TableCursor`, [`level::LevelCursor`] for a sorted level) behind the [`source::Source`]
//! enum; the k-way [`merge::MergeCursor`]; the user-facing zero-copy [`Scan`] (snapshot
//! visibility, tombstones, range bounds, readahead of separated values), and the owning
//! double-ended [`DbIterator`] built on two scans; parallel scans of one range cut into
//! partitions ([`split`]: key-space or learned, entry-balanced cuts) on several threads
//! ([`parallel`]). Compaction merges its inputs with the same merge cursor.

mod context;
mod db_iter;
mod level;
pub(crate) mod merge;
mod parallel;
mod readahead;
mod scan;
pub(crate) mod source;
mod snapshot;
mod split;

pub(crate) use context::{ReadContext, ReadView, Registration, ScanState};
pub use context::SeekObserver;
pub use db_iter::DbIterator;
pub(crate) use parallel::run as run_parallel;
pub use parallel::ParallelScanOptions;
pub(crate) use scan::owned_range;
pub use scan::{KeyRange, Scan, ScanOptions};
pub use snapshot::Snapshot;
pub(crate) use snapshot::{SnapshotGuard, SnapshotList};
pub(crate) use split::{rank_below, split};
pub use split::Split;
