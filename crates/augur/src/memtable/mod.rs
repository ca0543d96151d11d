//! The memtable: a concurrent, insert-only skiplist of internal entries (newest write of a
//! key first), the first stop of every write after the WAL and of every read.
//!
//! Invariants: entries are never removed or overwritten (each write has a unique seqno), so
//! readers can run concurrently with the single inserting writer (the group-commit leader).
//! A memtable becomes immutable when full and is flushed to an L0 SSTable.

mod arena;
mod cursor;
mod filter;
mod prefix_rule;
mod skiplist;

pub use cursor::MemtableCursor;

use filter::KeyFilter;
use prefix_rule::PrefixRule;
use skiplist::{NodeRef, SkipList};

use crate::key::{unpack_trailer, SeqNo, ValueKind, MAX_SEQNO};
use crate::sst::Entry;
use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};

/// A memtable. Shared as `Arc<Memtable>` by the writer, readers, iterators and the flusher.
///
/// The skiplist (`skiplist.rs`) keeps each entry in one node of its own arena: readers walk
/// it without locks, pins or reference counts, and the memtable is freed in blocks.
pub struct Memtable {
    map: SkipList,
    /// The user keys inserted, for point lookups of keys not held (see `filter.rs`).
    filter: KeyFilter,
    /// Bytes of the skiplist's nodes (what [`Self::approximate_bytes`] reports).
    approximate_bytes: AtomicUsize,
    max_seqno: std::sync::atomic::AtomicU64,
    /// The smallest value-log segment a pointer inserted here points into (`u64::MAX`: no
    /// pointer): value-log GC collects a segment only once no memtable may point into it.
    min_pointer_segment: std::sync::atomic::AtomicU64,
    /// Value-log bytes (as garbage counts them) this memtable's writes make garbage: exactly,
    /// for the pointers a newer entry of the same key inserted here shadows (the flush
    /// counts them, unless a snapshot still reads them); estimated by the write path, for
    /// values the tables hold ([`Self::note_overwritten_value_bytes`]), which compactions
    /// count once they merge this memtable's table with them.
    garbage_value_bytes: std::sync::atomic::AtomicU64,
}

/// The budget [`Memtable::new`] sizes its key filter for.
const DEFAULT_BUDGET_BYTES: usize = 4 << 20;

impl Default for Memtable {
    fn default() -> Self {
        Memtable::with_budget(DEFAULT_BUDGET_BYTES)
    }
}

/// A run of inserts into one [`Memtable`] ([`Memtable::inserter`]).
pub struct Inserter<'a> {
    mem: &'a Memtable,
    list: skiplist::Inserter<'a>,
}

impl Inserter<'_> {
    /// [`Memtable::insert`], through this run.
    pub fn insert(&mut self, user_key: &[u8], seqno: SeqNo, kind: ValueKind, value: &[u8]) {
        let mem = self.mem;
        if kind == ValueKind::Pointer {
            if let Some(p) = crate::vlog::ValuePointer::decode(value) {
                mem.min_pointer_segment
                    .fetch_min(p.segment, AtomicOrdering::Relaxed);
            }
        }
        // The filter block's cache miss overlaps the skiplist insert; the bits are set before
        // the writer publishes the entry's seqno, so a reader that can see it sees them.
        let filter_bits = mem.filter.locate(user_key);
        let (node_bytes, older) =
            self.list
                .insert_over(user_key, crate::key::pack_trailer(seqno, kind), value);
        mem.filter.set(filter_bits);
        if let Some(older) = older {
            mem.note_shadowed(older);
        }
        mem.approximate_bytes
            .fetch_add(node_bytes, AtomicOrdering::Relaxed);
        mem.max_seqno.fetch_max(seqno, AtomicOrdering::Relaxed);
    }
}

/// Entries sampled to find the prefix most of a memtable's keys share
/// ([`Memtable::dominant_prefix`]).
const PREFIX_SAMPLE: usize = 128;

impl Memtable {
    /// An empty memtable that is switched out at about `budget_bytes`
    /// (`Options::memtable_size_bytes`), which sizes its key filter.
    pub fn with_budget(budget_bytes: usize) -> Self {
        Memtable::after(budget_bytes, None)
    }

    /// An empty memtable to follow `previous` (the one it replaces as the active memtable):
    /// where most of the previous one's keys shared a prefix of [`prefix_rule::ANCHOR_MIN`]
    /// bytes or more ([`Self::dominant_prefix`]), its skiplist's link prefixes read the bytes
    /// after that prefix ([`PrefixRule`]), so that searches among keys sharing it compare
    /// integers instead of loading keys. Otherwise as [`Self::with_budget`].
    pub fn after(budget_bytes: usize, previous: Option<&Memtable>) -> Self {
        let shared = previous.and_then(Memtable::dominant_prefix);
        let rule = PrefixRule::for_shared_prefix(shared.as_deref().unwrap_or_default());
        Memtable {
            map: SkipList::with_rule(rule),
            filter: KeyFilter::for_budget(budget_bytes),
            approximate_bytes: AtomicUsize::new(0),
            max_seqno: std::sync::atomic::AtomicU64::new(0),
            min_pointer_segment: std::sync::atomic::AtomicU64::new(u64::MAX),
            garbage_value_bytes: std::sync::atomic::AtomicU64::new(0),
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
    #[cfg(test)]
    pub fn new() -> Self {
        Self::default()
    }

    /// Inserts one entry (copied into the memtable's arena). A second entry with the same
    /// `(user_key, seqno)` is ignored (a WAL replayed twice carries its writes twice; each
    /// seqno is one write, so the first entry is the same write).
    pub fn insert(&self, user_key: &[u8], seqno: SeqNo, kind: ValueKind, value: &[u8]) {
        self.inserter().insert(user_key, seqno, kind, value);
    }

    /// A run of inserts under one hold of the skiplist's writer lock, each searching from
    /// where the last one went: a write group's entries inserted in key order cost a short
    /// walk each instead of a descent of the whole list. Any order is correct.
    pub fn inserter(&self) -> Inserter<'_> {
        Inserter {
            mem: self,
            list: self.map.inserter(),
        }
    }

    /// Adds the value-log bytes of `older`, an entry a newer one of its key now shadows, to
    /// [`Self::garbage_value_bytes`] when it is a pointer.
    fn note_shadowed(&self, older: NodeRef<'_>) {
        let pointer = unpack_trailer(older.trailer())
            .filter(|(_, kind)| *kind == ValueKind::Pointer)
            .and_then(|_| crate::vlog::ValuePointer::decode(older.value()));
        if let Some(p) = pointer {
            let bytes = crate::vlog::entry_bytes(older.user_key().len(), &p);
            self.garbage_value_bytes
                .fetch_add(bytes, AtomicOrdering::Relaxed);
        }
    }

    /// Adds `bytes` to [`Self::garbage_value_bytes`]: the write path's estimate of the
    /// value-log bytes its writes into this memtable make garbage in the tables.
    pub fn note_overwritten_value_bytes(&self, bytes: u64) {
        self.garbage_value_bytes
            .fetch_add(bytes, AtomicOrdering::Relaxed);
    }

    /// Value-log bytes this memtable's writes make garbage (exact for keys it holds twice,
    /// estimated for keys the tables hold): garbage that no GC can see until the memtable is
    /// flushed (and, for the tables' values, compacted), so the write path switches the
    /// memtable once this reaches its budget.
    pub fn garbage_value_bytes(&self) -> u64 {
        self.garbage_value_bytes.load(AtomicOrdering::Relaxed)
    }

    /// Memory used by the entries: the bytes of their skiplist nodes (keys, values, links).
    pub fn approximate_bytes(&self) -> usize {
        self.approximate_bytes.load(AtomicOrdering::Relaxed)
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.map.len() == 0
    }

    /// The newest entry of `user_key` with seqno <= `snapshot`, tombstones included.
    pub fn get(&self, user_key: &[u8], snapshot: SeqNo) -> Option<Entry> {
        // An empty memtable (every read after a flush until the next write) answers without
        // hashing the key and missing the cache on the filter. A write being inserted now is
        // not visible at any snapshot a reader holds yet, so missing it is correct.
        if self.is_empty() || !self.filter.may_contain(user_key) {
            return None;
        }
        let probe = self.map.probe(user_key, seek_trailer(snapshot));
        let e = self.map.seek(&probe, true)?;
        if e.user_key() != user_key {
            return None;
        }
        to_entry(e)
    }

    /// The smallest and largest user keys held, or `None` when empty.
    pub fn key_range(&self) -> Option<(Vec<u8>, Vec<u8>)> {
        let first = self.map.first()?.user_key().to_vec();
        let last = self.map.last()?.user_key().to_vec();
        Some((first, last))
    }

    /// The prefix shared by the bulk of the keys: the common prefix of the keys at the
    /// 1/16 and 15/16 points of a sample of about [`PREFIX_SAMPLE`] entries (in key order, so
    /// every key between them shares it too), or of the first and last key when the
    /// memtable holds too few entries for a sample. A few keys of another family — a
    /// server's bookkeeping key written with every batch, a hash's records — then do not
    /// take the anchor away from the rest. `None` when empty.
    pub fn dominant_prefix(&self) -> Option<Vec<u8>> {
        let sample = self.map.sample(PREFIX_SAMPLE);
        let (lo, hi) = if sample.len() >= PREFIX_SAMPLE / 2 {
            let trim = sample.len() / 16;
            (sample[trim].user_key(), sample[sample.len() - 1 - trim].user_key())
        } else {
            (self.map.first()?.user_key(), self.map.last()?.user_key())
        };
        let n = crate::index::projection::common_prefix_len(lo, hi);
        Some(lo[..n].to_vec())
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
        let mut next = self.map.first();
        while let Some(e) = next {
            if let Some((seqno, kind)) = unpack_trailer(e.trailer()) {
                f(e.user_key(), seqno, kind, e.value())?;
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

fn to_entry(e: NodeRef<'_>) -> Option<Entry> {
    // Every trailer in the map was packed from a valid kind, so this never fails.
    let (seqno, kind) = unpack_trailer(e.trailer())?;
    Some(Entry {
        user_key: e.user_key().to_vec(),
        seqno,
        kind,
        value: e.value().to_vec(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::Just;

    #[test]
    fn garbage_counts_the_pointers_a_newer_entry_of_their_key_shadows() {
        use crate::vlog::{entry_bytes, ValuePointer};
        let ptr = |segment, len| ValuePointer {
            segment,
            offset: 24,
            len,
        };
        let m = Memtable::new();
        // Another key's pointer, and an inline value shadowed: no garbage.
        m.insert(b"a", 1, ValueKind::Pointer, &ptr(1, 100).encode());
        m.insert(b"b", 2, ValueKind::Value, b"inline");
        m.insert(b"b", 3, ValueKind::Pointer, &ptr(1, 200).encode());
        m.insert(b"ab", 4, ValueKind::Pointer, &ptr(1, 300).encode());
        assert_eq!(m.garbage_value_bytes(), 0);
        // A pointer shadowed by a pointer, then by a tombstone.
        m.insert(b"b", 5, ValueKind::Pointer, &ptr(2, 400).encode());
        let first = entry_bytes(1, &ptr(1, 200));
        assert_eq!(m.garbage_value_bytes(), first);
        m.insert(b"b", 6, ValueKind::Delete, b"");
        assert_eq!(m.garbage_value_bytes(), first + entry_bytes(1, &ptr(2, 400)));
        // A replayed duplicate adds nothing; the write path's estimate adds to it.
        m.insert(b"b", 6, ValueKind::Delete, b"");
        m.note_overwritten_value_bytes(7);
        assert_eq!(
            m.garbage_value_bytes(),
            first + entry_bytes(1, &ptr(2, 400)) + 7
        );
    }

    fn mem() -> Memtable {
        let m = Memtable::new();
        m.insert(b"a", 1, ValueKind::Value, b"a1");
        m.insert(b"b", 2, ValueKind::Value, b"b2");
        m.insert(b"b", 5, ValueKind::Delete, b"");
        m.insert(b"c", 3, ValueKind::Value, b"c3");
        m
    }

    #[test]
    fn a_memtable_after_one_of_shared_keys_serves_every_key() {
        let previous = Memtable::new();
        for i in 0..1000u64 {
            previous.insert(format!("counter:{i:012}").as_bytes(), i + 1, ValueKind::Value, b"v");
        }
        let m = Memtable::after(1 << 20, Some(&previous));
        let keys: Vec<Vec<u8>> = (0..2000u64)
            .map(|i| match i % 4 {
                0 => format!("counter:{:012}", i * 7919 % 100_000),
                1 => format!("co{i}"),
                2 => format!("key:{i:06}"),
                _ => format!("counter:{i}x"),
            })
            .map(String::into_bytes)
            .collect();
        for (i, k) in keys.iter().enumerate() {
            m.insert(k, i as u64 + 1, ValueKind::Value, k);
        }
        for k in &keys {
            assert_eq!(m.get(k, u64::MAX >> 8).map(|e| e.value), Some(k.clone()), "{k:?}");
        }
        assert_eq!(m.get(b"counter:", 1 << 40), None);
        let mut sorted = keys.clone();
        sorted.sort();
        sorted.dedup();
        let (first, last) = m.key_range().unwrap();
        assert_eq!((first, last), (sorted[0].clone(), sorted[sorted.len() - 1].clone()));
    }

    #[test]
    fn dominant_prefix_ignores_a_few_keys_of_another_family() {
        let m = Memtable::new();
        assert_eq!(m.dominant_prefix(), None);
        let mut seqno = 0;
        let mut put = |k: &[u8]| {
            seqno += 1;
            m.insert(k, seqno, ValueKind::Value, b"v");
        };
        put(b"key:000000000012");
        put(b"key:000000000099");
        // Too few entries for a sample: the first and last key decide.
        assert_eq!(m.dominant_prefix().unwrap(), b"key:0000000000");
        put(b"\xff\x10state");
        assert_eq!(m.dominant_prefix().unwrap(), b"");
        for i in 0..20_000u64 {
            put(format!("key:{:012}", i * 7919 % 1_000_000).as_bytes());
            if i % 1000 == 0 {
                put(b"\xff\x10state"); // a bookkeeping key written with every batch
                put(format!("aux:{i}").as_bytes());
            }
        }
        assert_eq!(m.dominant_prefix().unwrap(), b"key:000000");
        // Two families of equal weight share nothing: no anchor.
        let two = Memtable::new();
        for i in 0..10_000u64 {
            two.insert(format!("user:{i:08}").as_bytes(), 2 * i + 1, ValueKind::Value, b"v");
            two.insert(format!("item:{i:08}").as_bytes(), 2 * i + 2, ValueKind::Value, b"v");
        }
        assert_eq!(two.dominant_prefix().unwrap(), b"");
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
