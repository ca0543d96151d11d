//! The memtable: a concurrent, insert-only skiplist of internal entries (newest write of a
//! key first), the first stop of every write after the WAL and of every read.
//!
//! Invariants: entries are never removed or overwritten (each write has a unique seqno), so
//! readers can run concurrently with the single inserting writer (the group-commit leader).
//! A memtable becomes immutable when full and is flushed to an L0 SSTable.

mod cursor;
mod filter;

pub use cursor::MemtableCursor;

use filter::KeyFilter;

use crate::key::{self, pack_trailer, unpack_trailer, SeqNo, ValueKind, MAX_SEQNO};
use crate::sst::Entry;
use crossbeam_epoch as epoch;
use crossbeam_skiplist::base::SkipList;
use smallvec::SmallVec;
use std::cmp::Ordering;
use std::ops::Bound;
use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};

/// User keys up to this many bytes are stored inside the skiplist node, not behind a pointer.
const INLINE_KEY_BYTES: usize = 24;

/// Key of a skiplist entry: user key and trailer, ordered as internal keys. `prefix` caches
/// the first 8 key bytes (big-endian, zero-padded) so most comparisons during a skiplist
/// search are one integer compare inside the node; keys of up to [`INLINE_KEY_BYTES`] are
/// stored in the node too, so that keys sharing their first 8 bytes (`user:…`, `key:…`) are
/// compared without another cache miss.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MemKey {
    prefix: u64,
    user_key: SmallVec<[u8; INLINE_KEY_BYTES]>,
    trailer: u64,
}

/// The first 8 bytes of `key`, zero-padded, as a big-endian integer. Ordering by it agrees
/// with bytewise ordering wherever two prefixes differ.
fn key_prefix(key: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    let n = key.len().min(8);
    b[..n].copy_from_slice(&key[..n]);
    u64::from_be_bytes(b)
}

impl MemKey {
    fn new(user_key: Vec<u8>, trailer: u64) -> Self {
        MemKey {
            prefix: key_prefix(&user_key),
            user_key: SmallVec::from_vec(user_key),
            trailer,
        }
    }
}

/// Internal-key order with the prefix shortcut.
fn compare_views(a: &(impl KeyView + ?Sized), b: &(impl KeyView + ?Sized)) -> Ordering {
    a.prefix()
        .cmp(&b.prefix())
        .then_with(|| key::compare(a.user_key(), a.trailer(), b.user_key(), b.trailer()))
}

impl Ord for MemKey {
    fn cmp(&self, other: &Self) -> Ordering {
        compare_views(self, other)
    }
}

impl PartialOrd for MemKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// A borrowed view of an internal key, so lookups can probe the skiplist with a `&[u8]`
/// without allocating a `MemKey` (the `Borrow<dyn Trait>` pattern).
pub(crate) trait KeyView {
    fn prefix(&self) -> u64;
    fn user_key(&self) -> &[u8];
    fn trailer(&self) -> u64;
}

impl KeyView for MemKey {
    fn prefix(&self) -> u64 {
        self.prefix
    }
    fn user_key(&self) -> &[u8] {
        &self.user_key
    }
    fn trailer(&self) -> u64 {
        self.trailer
    }
}

/// A lookup key borrowing the caller's bytes.
pub(crate) struct Probe<'a> {
    prefix: u64,
    user_key: &'a [u8],
    trailer: u64,
}

impl<'a> Probe<'a> {
    pub(crate) fn new(user_key: &'a [u8], trailer: u64) -> Self {
        Probe {
            prefix: key_prefix(user_key),
            user_key,
            trailer,
        }
    }
}

impl KeyView for Probe<'_> {
    fn prefix(&self) -> u64 {
        self.prefix
    }
    fn user_key(&self) -> &[u8] {
        self.user_key
    }
    fn trailer(&self) -> u64 {
        self.trailer
    }
}

impl<'a> std::borrow::Borrow<dyn KeyView + 'a> for MemKey {
    fn borrow(&self) -> &(dyn KeyView + 'a) {
        self
    }
}

impl Ord for dyn KeyView + '_ {
    fn cmp(&self, other: &Self) -> Ordering {
        compare_views(self, other)
    }
}

impl PartialOrd for dyn KeyView + '_ {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for dyn KeyView + '_ {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for dyn KeyView + '_ {}

/// Bytes of bookkeeping charged per entry on top of key and value (skiplist node, trailer).
const ENTRY_OVERHEAD_BYTES: usize = 64;

/// A memtable. Shared as `Arc<Memtable>` by the writer, readers, iterators and the flusher.
///
/// The skiplist is crossbeam's epoch-based `base::SkipList` rather than its `SkipMap`
/// wrapper: readers pin an epoch once per operation and walk entries borrowed under that
/// pin, where `SkipMap`'s iterators pinned and reference-counted every entry (a tenth of a
/// short scan's time). Entries are never removed, so a long pin holds back no garbage.
pub struct Memtable {
    pub(crate) map: SkipList<MemKey, Box<[u8]>>,
    /// The user keys inserted, for point lookups of keys not held (see `filter.rs`).
    filter: KeyFilter,
    approximate_bytes: AtomicUsize,
    max_seqno: std::sync::atomic::AtomicU64,
    /// The smallest value-log segment a pointer inserted here points into (`u64::MAX`: no
    /// pointer): value-log GC collects a segment only once no memtable may point into it.
    min_pointer_segment: std::sync::atomic::AtomicU64,
}

/// The budget [`Memtable::new`] sizes its key filter for.
const DEFAULT_BUDGET_BYTES: usize = 4 << 20;

impl Default for Memtable {
    fn default() -> Self {
        Memtable::with_budget(DEFAULT_BUDGET_BYTES)
    }
}

impl Memtable {
    /// An empty memtable that is switched out at about `budget_bytes`
    /// (`Options::memtable_size_bytes`), which sizes its key filter.
    pub fn with_budget(budget_bytes: usize) -> Self {
        Memtable {
            map: SkipList::new(epoch::default_collector().clone()),
            filter: KeyFilter::for_budget(budget_bytes),
            approximate_bytes: AtomicUsize::new(0),
            max_seqno: std::sync::atomic::AtomicU64::new(0),
            min_pointer_segment: std::sync::atomic::AtomicU64::new(u64::MAX),
        }
    }
}

impl std::fmt::Debug for Memtable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Memtable")
            .field("entries", &self.map.len())
            .field("approximate_bytes", &self.approximate_bytes())
            .finish_non_exhaustive()
    }
}

impl Memtable {
    /// An empty memtable with a small key filter (tests, tools); the engine sizes its
    /// memtables with [`Self::with_budget`].
    pub fn new() -> Self {
        Self::default()
    }

    /// Inserts one entry. REQUIRES: `(user_key, seqno)` was never inserted before.
    pub fn insert(&self, user_key: &[u8], seqno: SeqNo, kind: ValueKind, value: &[u8]) {
        self.insert_owned(user_key.to_vec(), seqno, kind, value.to_vec());
    }

    /// [`Self::insert`] taking ownership of the key and value (no copy).
    pub fn insert_owned(&self, user_key: Vec<u8>, seqno: SeqNo, kind: ValueKind, value: Vec<u8>) {
        let charge = user_key.len() + value.len() + ENTRY_OVERHEAD_BYTES;
        if kind == ValueKind::Pointer {
            if let Some(p) = crate::vlog::ValuePointer::decode(&value) {
                self.min_pointer_segment
                    .fetch_min(p.segment, AtomicOrdering::Relaxed);
            }
        }
        // The filter block's cache miss overlaps the skiplist insert; the bits are set before
        // the writer publishes the entry's seqno, so a reader that can see it sees them.
        let filter_bits = self.filter.locate(&user_key);
        let guard = &epoch::pin();
        self.map
            .insert(
                MemKey::new(user_key, pack_trailer(seqno, kind)),
                // A boxed slice is 8 bytes smaller than a `Vec` in every node, and the
                // write path's values have exact capacity, so this does not reallocate.
                value.into_boxed_slice(),
                guard,
            )
            .release(guard);
        self.filter.set(filter_bits);
        self.approximate_bytes
            .fetch_add(charge, AtomicOrdering::Relaxed);
        self.max_seqno.fetch_max(seqno, AtomicOrdering::Relaxed);
    }

    /// Approximate memory used by keys, values and nodes.
    pub fn approximate_bytes(&self) -> usize {
        self.approximate_bytes.load(AtomicOrdering::Relaxed)
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The newest entry of `user_key` with seqno <= `snapshot`, tombstones included.
    pub fn get(&self, user_key: &[u8], snapshot: SeqNo) -> Option<Entry> {
        if !self.filter.may_contain(user_key) {
            return None;
        }
        let probe = Probe::new(user_key, seek_trailer(snapshot));
        let guard = &epoch::pin();
        let e = self
            .map
            .lower_bound(Bound::Included(&probe as &dyn KeyView), guard)?;
        if e.key().user_key[..] != *user_key {
            return None;
        }
        to_entry(e.key(), e.value())
    }

    /// The smallest and largest user keys held, or `None` when empty.
    pub fn key_range(&self) -> Option<(Vec<u8>, Vec<u8>)> {
        let guard = &epoch::pin();
        let first = self.map.front(guard)?.key().user_key.to_vec();
        let last = self.map.back(guard)?.key().user_key.to_vec();
        Some((first, last))
    }

    /// True when a pointer inserted here may point into value-log segment `segment`: one
    /// points into it or into an older one. Value-log segments only receive appends while
    /// they are the newest, so a memtable started after a segment was sealed never points
    /// into it.
    pub fn may_point_into(&self, segment: u64) -> bool {
        self.min_pointer_segment.load(AtomicOrdering::Relaxed) <= segment
    }

    /// Largest seqno in the memtable (0 when empty).
    pub fn max_seqno(&self) -> SeqNo {
        self.max_seqno.load(AtomicOrdering::Relaxed)
    }

    /// Calls `f` with every entry in internal order — user key, seqno, kind, value — borrowed
    /// (flushing); stops at the first error.
    ///
    /// # Errors
    /// The first error `f` returns.
    pub fn for_each<E>(
        &self,
        mut f: impl FnMut(&[u8], SeqNo, ValueKind, &[u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        let guard = &epoch::pin();
        let mut next = self.map.front(guard);
        while let Some(e) = next {
            if let Some((seqno, kind)) = unpack_trailer(e.key().trailer) {
                f(&e.key().user_key, seqno, kind, e.value())?;
            }
            next = e.next();
        }
        Ok(())
    }
}

/// The trailer that seeks to the newest entry with seqno <= `snapshot`.
fn seek_trailer(snapshot: SeqNo) -> u64 {
    (snapshot.min(MAX_SEQNO) << 8) | 0xff
}

fn to_entry(k: &MemKey, v: &[u8]) -> Option<Entry> {
    // Every trailer in the map was packed from a valid kind, so this never fails.
    let (seqno, kind) = unpack_trailer(k.trailer)?;
    Some(Entry {
        user_key: k.user_key.to_vec(),
        seqno,
        kind,
        value: v.to_vec(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::Just;

    fn mem() -> Memtable {
        let m = Memtable::new();
        m.insert(b"a", 1, ValueKind::Value, b"a1");
        m.insert(b"b", 2, ValueKind::Value, b"b2");
        m.insert(b"b", 5, ValueKind::Delete, b"");
        m.insert(b"c", 3, ValueKind::Value, b"c3");
        m
    }

    #[test]
    fn get_respects_snapshots() {
        let m = mem();
        assert_eq!(m.get(b"b", 4).unwrap().value, b"b2");
        assert_eq!(m.get(b"b", 5).unwrap().kind, ValueKind::Delete);
        assert_eq!(m.get(b"b", 1), None);
        assert_eq!(m.get(b"zz", 10), None);
        assert_eq!(m.get(b"", 10), None);
        assert_eq!(m.len(), 4);
        assert_eq!(m.max_seqno(), 5);
    }

    proptest::proptest! {
        /// The prefix shortcut keeps internal-key order for keys with zero bytes, shared
        /// prefixes and lengths around 8, and `get` finds the newest visible version.
        #[test]
        fn order_and_get_match_a_sorted_model(
            keys in proptest::collection::vec(
                proptest::collection::vec(proptest::prop_oneof![Just(0u8), Just(1u8), Just(255u8), proptest::num::u8::ANY], 0..12),
                1..60,
            )
        ) {
            let m = Memtable::new();
            let mut model = std::collections::BTreeMap::new();
            for (i, k) in keys.iter().enumerate() {
                let seqno = i as u64 + 1;
                m.insert(k, seqno, ValueKind::Value, &seqno.to_le_bytes());
                model.insert((k.clone(), std::cmp::Reverse(seqno)), seqno);
            }
            let mut got: Vec<(Vec<u8>, u64)> = Vec::new();
            m.for_each(|k, seqno, _, _| {
                got.push((k.to_vec(), seqno));
                Ok::<(), ()>(())
            })
            .unwrap();
            let want: Vec<(Vec<u8>, u64)> = model.keys().map(|(k, s)| (k.clone(), s.0)).collect();
            proptest::prop_assert_eq!(got, want);
            for k in &keys {
                let newest = model.range((k.clone(), std::cmp::Reverse(u64::MAX))..).next().map(|(_, s)| *s);
                proptest::prop_assert_eq!(m.get(k, u64::MAX >> 8).map(|e| e.seqno), newest);
            }
        }
    }
}
