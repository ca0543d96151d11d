//! Augur: an embedded key-value store built on a log-structured merge tree with key-value
//! separation (WiscKey) and learned indexes (Bourbon).
//!
//! The public API, in ten lines:
//! - [`Db::open`] a directory with [`Options`] (or `read_only`); [`Db::close`], or drop it.
//! - Writes: [`Db::put`], [`Db::delete`], [`Db::write`] / [`Db::write_opt`] of a
//!   [`WriteBatch`] ([`WriteOptions::sync`] for durability).
//! - Reads: [`Db::get`], [`Db::snapshot`] and [`Db::get_at`]; [`Db::iter`] / [`Db::range`]
//!   ([`DbIterator`]), [`Db::scan`] / [`Db::scan_with`] ([`Scan`], zero-copy) and
//!   [`Db::scan_parallel`].
//! - Upkeep: [`Db::flush`], [`Db::compact_range`], [`Db::run_value_log_gc`],
//!   [`Db::learn_all`], [`Db::wait_for_compactions`]; checks: [`Db::verify`].
//! - Copies: [`Db::checkpoint`] (an openable copy, hard-linked where it can be) and
//!   [`backup::BackupEngine`] (incremental backups sharing unchanged files, with verify and
//!   restore).
//! - Observing: [`Db::stats`] ([`Stats`]), [`Db::wal_losses`]; every failure an [`Error`].
//! - Extension points: [`fs::FileSystem`] (where files live) and [`index`] (the learned-index
//!   zoo, usable on its own for research).
//! - Debugging: [`inspect`] reads one manifest, WAL, value-log segment or SSTable without
//!   opening the database (the CLI's `augur dump`).
//!
//! Internal modules are crate-private; the `test-util` feature exports them (and the
//! in-memory and fault-injecting file systems) for tests, fuzz targets and examples.
#![deny(unsafe_code)]
#![warn(missing_docs)]

/// Declares internal modules: crate-private, public under the `test-util` feature.
macro_rules! internal_modules {
    ($($(#[$attr:meta])* $name:ident;)*) => {
        $(
            $(#[$attr])*
            #[cfg(feature = "test-util")]
            pub mod $name;
            $(#[$attr])*
            #[cfg(not(feature = "test-util"))]
            pub(crate) mod $name;
        )*
    };
}

internal_modules! {
    cache;
    checksum;
    coding;
    compaction;
    compression;
    filename;
    iter;
    key;
    learning;
    memtable;
    sst;
    version;
    vlog;
    wal;
}

pub mod backup;
mod db;
mod error;
pub mod expiry;
pub mod fs;
#[cfg(feature = "test-util")]
#[doc(hidden)]
pub mod fuzzing;
pub mod index;
pub mod inspect;
mod options;
mod prefetch;
pub mod stats;
mod work_signal;

pub use cache::{CacheStats, ChunkCacheStats, OpenFilesStats, ReadStats};
pub use compression::Compression;
pub use db::{
    repair, CheckpointInfo, CheckpointOptions, Db, Found, GcReport, IndexMemory, KeptSegment,
    KeptTable, LevelStats, LostFile, RecoveredWal, RepairReport, Stats, TryWrite,
    ValueLogSegmentStats, WriteBatch, WriteOptions, LOST_DIR,
};
pub use error::{Error, Result};
pub use expiry::{Clock, ManualClock, SystemClock};
pub use filename::is_database_file;
pub use fs::ReadMode;
pub use index::chooser::ModelBudget;
pub use index::{IndexKind, IndexTuning, RmiRoot};
pub use iter::{DbIterator, KeyRange, ParallelScanOptions, Scan, ScanOptions, Snapshot, Split};
pub use learning::LearningPolicy;
pub use options::FlsmOptions;
pub use options::Options;
pub use options::{CommitKind, CommitListener, CommitOp, CompactionFilter, ReadLatest, Verdict};
pub use version::CompactionStyle;
