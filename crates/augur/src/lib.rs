//! Augur: an embedded key-value store built on a log-structured merge tree with key-value
//! separation (WiscKey) and learned indexes (Bourbon).
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod checksum;
pub mod coding;
pub mod compaction;
mod db;
mod error;
pub mod filename;
pub mod fs;
#[cfg(feature = "test-util")]
#[doc(hidden)]
pub mod fuzzing;
pub mod index;
pub mod iter;
pub mod key;
pub mod learning;
pub mod memtable;
mod options;
mod prefetch;
pub mod sst;
pub mod stats;
pub mod version;
pub mod vlog;
pub mod wal;
mod work_signal;

pub use db::{
    Db, GcReport, IndexMemory, LevelStats, Snapshot, Stats, ValueLogSegmentStats, WriteBatch,
    WriteOptions,
};
pub use error::{Error, Result};
pub use fs::ReadMode;
pub use index::IndexKind;
pub use iter::{DbIterator, KeyRange, ParallelScanOptions, Scan, ScanOptions, Split};
pub use learning::LearningPolicy;
pub use options::FlsmOptions;
pub use options::Options;
pub use version::CompactionStyle;
