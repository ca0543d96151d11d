//! [`Scan`]: the zero-copy range scan — a lending cursor over the user-visible `(key, value)`
//! pairs of a range, in key order or its reverse.
//!
//! A scan reads one consistent state ([`ScanState`]: the memtables and version captured
//! together, at the seqno of a registered snapshot). Its merge ([`MergeCursor`]) yields every
//! internal entry of the range; the scan keeps, for each user key, the newest version visible
//! at the seqno, hides tombstones, and stops at the range's far bound. The key and inline value
//! it returns are borrowed — from the scan's key buffer and straight from the table mapping or
//! memtable batch — so a forward scan over inline values copies one key per entry and
//! allocates nothing. Separated values are read in sorted batches ahead of the consumer
//! ([`ValueBatch`]).
//!
//! Forward, a key's versions arrive newest first: the first one visible at the seqno decides,
//! and the rest are skipped before the next entry. Backward they arrive oldest first: the scan
//! reads all of them and keeps the last visible one (its value is copied, since the merge has
//! moved past it).

use super::context::ScanState;
use super::level::LevelCursor;
use super::merge::MergeCursor;
use super::readahead::ValueBatch;
use super::snapshot::Snapshot;
use super::source::Source;
use crate::error::{Error, Result};
use crate::key::{compare_user_keys, same_user_key, SeqNo, ValueKind, MAX_SEQNO};
use crate::memtable::MemtableCursor;
use crate::sst::TableCursor;
use crate::vlog::ValuePointer;
use std::cmp::Ordering;
use std::ops::Bound;
use std::sync::Arc;

/// A user-key range with owned bounds.
pub type KeyRange = (Bound<Vec<u8>>, Bound<Vec<u8>>);

/// How [`crate::Db::scan_with`] scans.
#[derive(Debug, Clone, Default)]
pub struct ScanOptions {
    /// Scan from the end of the range towards its start.
    pub reverse: bool,
    /// Read as of this snapshot (default: the current state).
    pub snapshot: Option<Snapshot>,
    /// Most separated values read ahead per batch (default `Options::scan_readahead`; 1
    /// reads each value when reached).
    pub value_readahead: Option<usize>,
    /// Keys only: no value is read (no value-log reads), and every pair's value is empty.
    pub keys_only: bool,
}

/// Converts a borrowed range into owned bounds.
pub(crate) fn owned_range<K: AsRef<[u8]>, R: std::ops::RangeBounds<K>>(range: &R) -> KeyRange {
    let own = |b: Bound<&K>| match b {
        Bound::Included(k) => Bound::Included(k.as_ref().to_vec()),
        Bound::Excluded(k) => Bound::Excluded(k.as_ref().to_vec()),
        Bound::Unbounded => Bound::Unbounded,
    };
    (own(range.start_bound()), own(range.end_bound()))
}

/// Where the current pair's value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Out {
    /// Nothing current.
    None,
    /// The merge's current entry (forward scans of inline values).
    Merge,
    /// The scan's value buffer.
    Buffer,
    /// The readahead batch (key and value).
    Batch,
}

/// The trailer that sorts before every version of a key with seqno `<= seqno`.
fn seek_trailer(seqno: SeqNo) -> u64 {
    (seqno.min(MAX_SEQNO) << 8) | 0xff
}

/// A zero-copy range scan: call [`Scan::next`] until it returns `None`. Each pair borrows the
/// scan and is valid until the next call. Holds its snapshot (and so the files and value-log
/// segments it reads) until dropped. `Send`; not `Sync`.
///
/// ```no_run
/// # fn main() -> augur::Result<()> {
/// let db = augur::Db::open("/tmp/db", augur::Options::default())?;
/// let mut scan = db.scan(b"a".as_slice()..b"n".as_slice());
/// while let Some((key, value)) = scan.next()? {
///     println!("{key:?} = {} bytes", value.len());
/// }
/// # Ok(()) }
/// ```
pub struct Scan {
    state: Arc<ScanState>,
    merge: MergeCursor,
    /// FLSM parallel seeks: index of the first merge source of the last non-empty level
    /// (sources from there on are seeked on `flsm.parallel_seek_threads` threads);
    /// `usize::MAX` when parallel seeks are off.
    parallel_from: usize,
    forward: bool,
    range: KeyRange,
    /// Where the next positioning starts (forward) or ends (backward), when a seek set it.
    seek_key: Option<Vec<u8>>,
    started: bool,
    /// The scan returned its last pair (or failed): every later call returns `None`.
    done: bool,
    /// The merge has no visible entry left; a readahead batch may still hold pairs.
    exhausted: bool,
    /// The current key, and (when `skip_key`) the last key consumed: its remaining versions
    /// are skipped before the next entry.
    key: Vec<u8>,
    skip_key: bool,
    value: Vec<u8>,
    /// Bytes in front of the current value that are not the user's: an expiring value's
    /// expiry time (`crate::expiry`), 0 otherwise.
    value_skip: usize,
    out: Out,
    batch: ValueBatch,
    /// Most separated values read per batch (1: one read per entry, no batching).
    readahead: usize,
    /// An error to report on the first call (e.g. the database was closed).
    pending: Option<Error>,
    /// Keys only ([`ScanOptions::keys_only`]).
    keys_only: bool,
    /// The expiry time of the current pair when it is an expiring value served from the
    /// tree (`Out::Merge`, `Out::Buffer`); a batch keeps its entries' own.
    expire_at: Option<u64>,
}

impl std::fmt::Debug for Scan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scan")
            .field("forward", &self.forward)
            .field("seqno", &self.state.seqno())
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

impl Scan {
    /// A scan of `range` over `state`, forward or backward, reading up to `readahead`
    /// separated values per batch.
    pub(crate) fn new(
        state: Arc<ScanState>,
        range: KeyRange,
        forward: bool,
        readahead: usize,
    ) -> Scan {
        let sources = sources(&state, &range, forward);
        let parallel_from = parallel_seek_start(&state, &sources);
        let pending = state.closed.then_some(Error::Closed);
        Scan {
            merge: MergeCursor::new(sources, forward),
            parallel_from,
            state,
            forward,
            range,
            seek_key: None,
            started: false,
            done: false,
            exhausted: false,
            key: Vec::new(),
            skip_key: false,
            value: Vec::new(),
            value_skip: 0,
            out: Out::None,
            batch: ValueBatch::default(),
            readahead: readahead.max(1),
            pending,
            keys_only: false,
            expire_at: None,
        }
    }

    /// Makes this a scan of keys only ([`ScanOptions::keys_only`]).
    pub(crate) fn keys_only(mut self) -> Scan {
        self.keys_only = true;
        self
    }

    /// The sequence number the scan reads at.
    pub fn seqno(&self) -> SeqNo {
        self.state.seqno()
    }

    /// When the pair the last successful [`Scan::next`] returned expires (milliseconds since
    /// the Unix epoch, `crate::Options::clock`): `Some` for a value written with an expiry
    /// ([`WriteBatch::put_expiring`](crate::WriteBatch::put_expiring)), `None` for one that
    /// never expires (and before the first pair or after the last). Keys-only scans know it
    /// too: an expiring value is stored inline, so no value-log read is needed.
    pub fn expire_at(&self) -> Option<u64> {
        match self.out {
            Out::Batch => self.batch.current_expire_at(),
            Out::Merge | Out::Buffer => self.expire_at,
            Out::None => None,
        }
    }

    /// Repositions the scan, within its range and snapshot: forward, at the first key `>=
    /// key`; backward, at the last key `<= key`. The next call to [`Scan::next`] returns that
    /// pair. Seeking before the range's start (forward) or past its end (backward) positions
    /// at the range's edge.
    pub fn seek(&mut self, key: impl AsRef<[u8]>) {
        self.seek_key = Some(key.as_ref().to_vec());
        self.started = false;
        self.done = false;
        self.exhausted = false;
        self.skip_key = false;
        self.out = Out::None;
        self.batch.reset();
    }

    /// The next pair, or `None` at the end of the range. After an error the scan is over.
    ///
    /// # Errors
    /// `Corruption` when a table, memtable entry or value-log entry is damaged; `Io` on read
    /// failures; `Closed` when the database was closed before the scan started.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Option<(&[u8], &[u8])>> {
        if let Some(e) = self.pending.take() {
            self.done = true;
            return Err(e);
        }
        if self.done {
            return Ok(None);
        }
        match self.step() {
            Ok(true) => Ok(Some(self.current())),
            Ok(false) => {
                self.done = true;
                self.out = Out::None;
                Ok(None)
            }
            Err(e) => {
                self.done = true;
                self.out = Out::None;
                Err(e)
            }
        }
    }

    /// The pair the last successful [`Scan::next`] returned.
    fn current(&self) -> (&[u8], &[u8]) {
        if self.keys_only {
            return (&self.key, &[]);
        }
        match self.out {
            Out::Merge => (
                &self.key,
                self.merge.value().get(self.value_skip..).unwrap_or_default(),
            ),
            Out::Buffer => (
                &self.key,
                self.value.get(self.value_skip..).unwrap_or_default(),
            ),
            Out::Batch => self.batch.current(),
            Out::None => (&[], &[]),
        }
    }

    /// Moves to the next visible pair and records where it is in `out`.
    fn step(&mut self) -> Result<bool> {
        if self.out == Out::Batch {
            if self.batch.advance() {
                return Ok(true);
            }
            if self.exhausted {
                return Ok(false);
            }
        }
        if !self.started {
            self.position()?;
            self.started = true;
            self.batch.reset();
        }
        let Some(kind) = self.next_visible()? else {
            return Ok(false);
        };
        self.value_skip = match kind {
            ValueKind::ExpiringValue => crate::expiry::EXPIRY_BYTES,
            _ => 0,
        };
        self.expire_at = match kind {
            ValueKind::ExpiringValue => {
                crate::expiry::split(self.found_value()).map(|(at, _)| at)
            }
            _ => None,
        };
        if kind == ValueKind::Pointer && !self.keys_only {
            if self.readahead > 1 {
                return self.fill_batch();
            }
            self.resolve_one()?;
            self.out = Out::Buffer;
            return Ok(true);
        }
        self.out = if self.forward {
            Out::Merge
        } else {
            Out::Buffer
        };
        Ok(true)
    }

    /// The tree value of the entry `next_visible` just found.
    fn found_value(&self) -> &[u8] {
        if self.forward {
            self.merge.value()
        } else {
            &self.value
        }
    }

    /// Reads the separated value of the entry just found into the value buffer.
    fn resolve_one(&mut self) -> Result<()> {
        let ctx = &self.state.ctx;
        let raw = self.found_value();
        let ptr = ValuePointer::decode(raw).ok_or_else(|| {
            Error::corruption(
                &ctx.dir,
                0,
                format!("malformed value pointer for key {:?}", self.key),
            )
        })?;
        self.value = ctx.vlog.read_with_key(&ptr, &self.key)?;
        Ok(())
    }

    /// Gathers the entry just found and the following visible ones into the readahead batch,
    /// reads their separated values in one sorted pass, and makes the first one current.
    fn fill_batch(&mut self) -> Result<bool> {
        self.batch.begin(self.readahead);
        let mut kind = ValueKind::Pointer;
        loop {
            let value = if self.forward {
                self.merge.value()
            } else {
                &self.value
            };
            match kind {
                // Checked by `next_visible`: not expired, so at least its time long.
                ValueKind::ExpiringValue => match crate::expiry::split(value) {
                    Some((at, value)) => self.batch.push_expiring(&self.key, value, at),
                    None => self.batch.push(&self.key, ValueKind::Value, &[]),
                },
                _ => self.batch.push(&self.key, kind, value),
            }
            if self.batch.is_full() {
                break;
            }
            match self.next_visible()? {
                Some(k) => kind = k,
                None => {
                    // The range is used up: the batch is served, then the scan ends.
                    self.exhausted = true;
                    break;
                }
            }
        }
        self.batch
            .resolve(&self.state.ctx.vlog, &self.state.ctx.dir)?;
        self.out = Out::Batch;
        Ok(self.batch.has_next())
    }

    /// Positions the merge at the start of the range (or the seek key).
    fn position(&mut self) -> Result<()> {
        let seqno = self.seqno();
        let (near, _) = self.directed_bounds();
        let near = self.clamped(near);
        self.skip_key = false;
        if let (Some(seeks), Bound::Included(k) | Bound::Excluded(k)) = (&self.state.ctx.seeks, &near)
        {
            seeks.seeked(&self.state.view.version, k);
        }
        match near {
            Bound::Included(k) => {
                let trailer = if self.forward { seek_trailer(seqno) } else { 0 };
                if self.parallel_from == usize::MAX {
                    self.merge.seek(&k, trailer)
                } else {
                    let threads = self.state.ctx.parallel_seek_threads;
                    self.merge
                        .seek_parallel(&k, trailer, self.parallel_from, threads)
                }
            }
            Bound::Excluded(k) => {
                let trailer = if self.forward { 0 } else { u64::MAX };
                self.merge.seek(&k, trailer)?;
                // Treat the excluded key as already consumed.
                self.key = k;
                self.skip_key = true;
                Ok(())
            }
            Bound::Unbounded => self.merge.seek_to_first(),
        }
    }

    /// The range's bounds as (where the scan starts, where it stops) in its direction.
    fn directed_bounds(&self) -> (Bound<&Vec<u8>>, Bound<&Vec<u8>>) {
        let (s, e) = (self.range.0.as_ref(), self.range.1.as_ref());
        if self.forward {
            (s, e)
        } else {
            (e, s)
        }
    }

    /// The near bound, moved to the seek key when one was set and it is inside the range.
    fn clamped(&self, near: Bound<&Vec<u8>>) -> Bound<Vec<u8>> {
        let near_owned = near.cloned();
        let Some(seek) = &self.seek_key else {
            return near_owned;
        };
        let inside = match near {
            Bound::Unbounded => true,
            Bound::Included(b) | Bound::Excluded(b) => {
                let ord = compare_user_keys(seek, b);
                let past = if self.forward {
                    ord == Ordering::Greater
                } else {
                    ord == Ordering::Less
                };
                past || (ord == Ordering::Equal && matches!(near, Bound::Included(_)))
            }
        };
        if inside {
            Bound::Included(seek.clone())
        } else {
            near_owned
        }
    }

    /// True when `key` lies beyond the far end of the range in the scan's direction.
    #[inline]
    fn beyond_far_end(&self, key: &[u8]) -> bool {
        let far = if self.forward {
            self.range.1.as_ref()
        } else {
            self.range.0.as_ref()
        };
        let (Bound::Included(b) | Bound::Excluded(b)) = far else {
            return false;
        };
        let ord = compare_user_keys(key, b);
        let inclusive = matches!(far, Bound::Included(_));
        match (self.forward, ord) {
            (_, Ordering::Equal) => !inclusive,
            (true, o) => o == Ordering::Greater,
            (false, o) => o == Ordering::Less,
        }
    }

    /// Advances the merge to the next user key with a visible, live version: leaves the key
    /// in `key` and the version's tree value in the merge (forward) or `value` (backward).
    /// Returns its kind (`Value`, `Pointer` or an unexpired `ExpiringValue`), or `None` at
    /// the end of the range.
    fn next_visible(&mut self) -> Result<Option<ValueKind>> {
        if self.forward {
            self.next_visible_forward()
        } else {
            self.next_visible_backward()
        }
    }

    /// True when `stored`, an expiring value's tree bytes, has expired now.
    fn expired(&self, stored: &[u8]) -> bool {
        crate::expiry::stored_has_expired(stored, self.state.ctx.clock.now_unix_ms())
    }

    fn skip_versions_of_key(&mut self) -> Result<()> {
        while self.merge.valid() && same_user_key(self.merge.key(), &self.key) {
            self.merge.advance()?;
        }
        Ok(())
    }

    fn next_visible_forward(&mut self) -> Result<Option<ValueKind>> {
        let seqno = self.seqno();
        loop {
            if !self.merge.valid() {
                return Ok(None);
            }
            // One look at the entry's key per step: older versions of the last key, the far
            // bound and the copy all use it.
            let key = self.merge.key();
            if self.skip_key && same_user_key(key, &self.key) {
                self.merge.advance()?;
                continue;
            }
            if self.beyond_far_end(key) {
                return Ok(None);
            }
            let trailer = self.merge.trailer();
            if trailer >> 8 > seqno {
                self.merge.advance()?;
                continue;
            }
            self.key.clear();
            self.key.extend_from_slice(key);
            self.skip_key = true;
            match kind_of(trailer) {
                // The next round skips the tombstone and every older version; an expired
                // value hides them as a tombstone would.
                ValueKind::Delete => continue,
                ValueKind::ExpiringValue if self.expired(self.merge.value()) => continue,
                kind => return Ok(Some(kind)),
            }
        }
    }

    fn next_visible_backward(&mut self) -> Result<Option<ValueKind>> {
        let seqno = self.seqno();
        if self.skip_key {
            // Only an excluded end bound leaves a key to skip going backward.
            self.skip_versions_of_key()?;
            self.skip_key = false;
        }
        loop {
            if !self.merge.valid() || self.beyond_far_end(self.merge.key()) {
                return Ok(None);
            }
            self.key.clear();
            self.key.extend_from_slice(self.merge.key());
            // Versions arrive oldest first: the last visible one is the newest visible.
            let mut newest = None;
            while self.merge.valid() && same_user_key(self.merge.key(), &self.key) {
                let trailer = self.merge.trailer();
                if trailer >> 8 <= seqno {
                    newest = Some(kind_of(trailer));
                    self.value.clear();
                    self.value.extend_from_slice(self.merge.value());
                }
                self.merge.advance()?;
            }
            match newest {
                None | Some(ValueKind::Delete) => continue,
                Some(ValueKind::ExpiringValue) if self.expired(&self.value) => continue,
                Some(kind) => return Ok(Some(kind)),
            }
        }
    }
}

/// The kind byte of a trailer (every trailer in a source was validated when decoded).
fn kind_of(trailer: u64) -> ValueKind {
    ValueKind::from_u8(trailer as u8).unwrap_or(ValueKind::Delete)
}

/// FLSM parallel seeks (PebblesDB's heuristic: only the last level, whose data is the least
/// likely to be cached): the index of the first source that is a run of the deepest level
/// holding files in the scan, or `usize::MAX` when parallel seeks are off or pointless (a
/// deepest level of one run: always under leveled, whose read context turns them off too).
fn parallel_seek_start(state: &ScanState, sources: &[Source]) -> usize {
    let version = &state.view.version;
    if state.ctx.parallel_seek_threads == 0 {
        return usize::MAX;
    }
    let Some(deepest) = version
        .runs
        .iter()
        .filter(|r| !r.files.is_empty())
        .map(|r| r.level)
        .max()
    else {
        return usize::MAX;
    };
    // Level cursors come last, in run order (shallow to deep); a scan only opens cursors
    // for runs with files in its range, so count the deepest level's from the end.
    let level_runs: Vec<usize> = sources
        .iter()
        .filter_map(|s| match s {
            Source::Level(c) => Some(c.run()),
            _ => None,
        })
        .collect();
    let deep = level_runs
        .iter()
        .rev()
        .take_while(|&&r| version.runs[r].level == deepest)
        .count();
    if deep < 2 {
        return usize::MAX;
    }
    sources.len() - deep
}

/// The merge inputs of a scan over `range`: every memtable that holds anything, the L0 files
/// overlapping the range, and one cursor per sorted run with a file in the range.
fn sources(state: &ScanState, range: &KeyRange, forward: bool) -> Vec<Source> {
    let mut out = Vec::new();
    for mem in state.view.memtables.iter() {
        // A memtable empty now never holds a version visible at this seqno (the view was
        // captured after the seqno was registered).
        if !mem.is_empty() {
            out.push(Source::Mem(MemtableCursor::new(mem.clone(), forward)));
        }
    }
    let version = &state.view.version;
    let lo = match &range.0 {
        Bound::Included(k) | Bound::Excluded(k) => Some(&k[..]),
        Bound::Unbounded => None,
    };
    let hi = match &range.1 {
        Bound::Included(k) | Bound::Excluded(k) => Some(&k[..]),
        Bound::Unbounded => None,
    };
    if let Some(l0) = version.levels.first() {
        for f in l0.iter().filter(|f| f.overlaps(lo, hi)) {
            out.push(Source::Table(TableCursor::new(f.table.clone(), forward)));
        }
    }
    for (run, r) in version.runs.iter().enumerate() {
        if r.overlaps(lo, hi) {
            out.push(Source::Level(LevelCursor::new(
                version.clone(),
                run,
                forward,
            )));
        }
    }
    out
}
