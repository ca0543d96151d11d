//! What a scan reads, and nothing more: [`ReadView`] (the memtables and version of one
//! consistent state), [`ReadContext`] (the value log, the options reads consult and where
//! seeks are reported, shared by every scan of a database) and [`ScanState`] (both, at one registered seqno). A scan holds
//! no reference to the database: the database builds these and hands them down.

use super::snapshot::SnapshotGuard;
use crate::expiry::Clock;
use crate::key::SeqNo;
use crate::memtable::Memtable;
use crate::version::Version;
use crate::vlog::ValueLog;
use std::path::PathBuf;
use std::sync::Arc;

/// What a reader needs to see one consistent state: the memtables and the version.
pub(crate) struct ReadView {
    /// Newest first: the active memtable, then the immutable ones from newest to oldest.
    pub memtables: Arc<Vec<Arc<Memtable>>>,
    /// The files.
    pub version: Arc<Version>,
}

/// The database-wide part of a scan's context.
pub(crate) struct ReadContext {
    /// The database directory (named by errors about malformed entries).
    pub dir: PathBuf,
    /// Resolves separated values.
    pub vlog: Arc<ValueLog>,
    /// FLSM: threads seeking the deepest level's runs in parallel (0: none, and always 0
    /// under leveled, where a level is one run).
    pub parallel_seek_threads: usize,
    /// Told where each scan seeks, when the compaction strategy counts seeks (FLSM's
    /// seek-based compaction); `None` otherwise.
    pub seeks: Option<Arc<dyn SeekObserver>>,
    /// The clock expiring values are judged by (`Options::clock`).
    pub clock: Arc<dyn Clock>,
}

/// Told where each scan seeks. FLSM's seek statistics (`compaction/flsm/seeks.rs`), owned by
/// the compaction strategy, implement it: a scan reports its seek and knows nothing more of
/// the policy. Must not block.
pub trait SeekObserver: Send + Sync {
    /// A scan of `version` positioned at `user_key`.
    fn seeked(&self, version: &Version, user_key: &[u8]);
}

/// One consistent state read by a scan (and shared by the partitions of a parallel scan and
/// both ends of a `DbIterator`): the context, the memtables and version captured after the
/// snapshot was registered, and the registration, which keeps what the state can see alive.
pub(crate) struct ScanState {
    pub(crate) ctx: Arc<ReadContext>,
    pub(crate) view: ReadView,
    /// The database was closed when the state was taken: the scan fails with `Closed`.
    pub(crate) closed: bool,
    /// The snapshot registration, whose seqno reads see; dropped with the last scan of the
    /// state.
    snapshot: Registration,
}

/// The registration a [`ScanState`] reads at: its own (a scan of the current state, the
/// common case: no allocation beyond the state's), or one shared with a [`super::Snapshot`]
/// and its other scans.
pub(crate) enum Registration {
    /// Taken for this state alone; released with it.
    Own(SnapshotGuard),
    /// A snapshot's, released with the last of its holders.
    Shared(Arc<SnapshotGuard>),
}

impl Registration {
    fn guard(&self) -> &SnapshotGuard {
        match self {
            Registration::Own(g) => g,
            Registration::Shared(g) => g,
        }
    }
}

impl From<SnapshotGuard> for Registration {
    fn from(guard: SnapshotGuard) -> Self {
        Registration::Own(guard)
    }
}

impl From<Arc<SnapshotGuard>> for Registration {
    fn from(guard: Arc<SnapshotGuard>) -> Self {
        Registration::Shared(guard)
    }
}

impl ScanState {
    /// The state of `view` read at the seqno of `snapshot`, kept alive by it (a
    /// registration taken before `view` was captured).
    pub(crate) fn new(
        ctx: Arc<ReadContext>,
        view: ReadView,
        snapshot: Registration,
        closed: bool,
    ) -> Arc<ScanState> {
        Arc::new(ScanState {
            ctx,
            view,
            closed,
            snapshot,
        })
    }

    /// The seqno reads see.
    pub(crate) fn seqno(&self) -> SeqNo {
        self.snapshot.guard().seqno()
    }
}
