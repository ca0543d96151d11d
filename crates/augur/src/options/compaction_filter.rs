//! The compaction filter: an application's say in which entries compaction drops
//! ([`Options::compaction_filter`](super::Options::compaction_filter)).
//!
//! The engine drops what no reader can see (shadowed versions, settled tombstones, expired
//! values). An application that encodes structures over the key space knows of more garbage
//! the engine cannot see: augur-server stores a Redis hash as a metadata record plus one
//! key per field, and deleting the hash writes only the metadata, so its fields become
//! garbage that only the application can recognize (Kvrocks's `SubKeyFilter`, RocksDB's
//! `CompactionFilter`). A filter names a key prefix; compaction offers it each key under
//! that prefix that holds a value (never a tombstone) and drops every value version of a key
//! it calls garbage.
//!
//! Cost: unset (the default), one test of an `Option` per compaction. Set, one prefix
//! comparison per entry, and one call per group of keys (a [`Verdict`] covers every
//! following key that shares its first [`Verdict::scope_bytes`] bytes).

use crate::error::Result;

/// Reads the current value of a key (`None`: absent, deleted or expired), as a filter's
/// judgement may need: the newest state, not the compaction's snapshot.
pub type ReadLatest<'a> = &'a (dyn Fn(&[u8]) -> Result<Option<Vec<u8>>> + Sync);

/// What a [`CompactionFilter`] decided about a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verdict {
    /// Every value version of the key is garbage: compaction drops it.
    pub garbage: bool,
    /// The verdict holds for every key that begins with the same first `scope_bytes` bytes
    /// as the judged one (a hash's fields share one verdict): compaction does not ask again
    /// for the keys that follow in that group. At most the key's length; 0 or the key's
    /// length for a verdict about that key alone.
    pub scope_bytes: usize,
}

/// Decides during compaction which keys under a prefix hold garbage.
///
/// # Contract
///
/// - **Monotone.** Once a key is garbage it stays garbage: every later judgement of it, of
///   any of its versions, must say so too. Compaction drops only the versions it holds; an
///   older version of the key in a deeper level surfaces when a newer one is dropped, and
///   must then be garbage too. (augur-server's hash fields qualify: a field key names its
///   hash's version, and a version that lost its metadata never gets it back.)
/// - **Latest state.** A filter judges by the database's current state ([`ReadLatest`]),
///   not by the compaction's snapshot: a snapshot older than the change that made a key
///   garbage may no longer read it. Use a filter only for keys such readers never need.
/// - **Cheap and infallible.** It runs on compaction threads, for every group of keys under
///   its prefix. It never fails: when it cannot tell (a read failed), it keeps the key.
///
/// Thread-safety: sub-compactions call it from several threads at once.
pub trait CompactionFilter: Send + Sync + std::fmt::Debug {
    /// The first bytes of every key the filter judges: compaction never offers another key.
    fn prefix(&self) -> &[u8];

    /// The verdict on `key` (which begins with [`CompactionFilter::prefix`] and holds a
    /// value), reading the current state through `read` when it needs to.
    fn judge(&self, key: &[u8], read: ReadLatest<'_>) -> Verdict;
}
