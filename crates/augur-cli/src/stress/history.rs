//! The write history of one fault round (`stress/faults.rs`), kept in memory so that a round
//! ended by a power cut can be checked: a power cut may take away acknowledged writes that
//! were never made durable, but only a suffix of the write order, and never a write that a
//! sync point made durable.
//!
//! # What the engine guarantees (crates/augur/src/db/)
//!
//! - A synced write (`WriteOptions { sync: true }`) syncs the value log and the WAL before it
//!   is acknowledged. Writes are ordered by sequence number through one group-commit queue;
//!   every earlier WAL record sits in the same WAL before it or in an older WAL, which
//!   `switch_memtable` synced before creating the next one. So a synced write S makes every
//!   write acknowledged before S was *issued* durable, and S itself. (A write acknowledged
//!   while S was in flight may have been ordered after S: it is not covered.)
//! - `Db::flush` (and `Db::compact_range`, which flushes first) waits for its turn in the
//!   writer queue, syncs the value log and the WAL when it switches the memtable, and
//!   returns once every immutable memtable is in a synced table recorded in the manifest:
//!   every write acknowledged before the call is durable when it returns.
//! - `Db::open` replays the WALs into a table that it syncs and records before starting a
//!   new WAL: everything an open finds is durable. So each round's history starts at the
//!   state verified at its open, and that state is the **base** no cut may go behind.
//! - Recovery yields a prefix of the sequence-number order: the WAL is replayed up to its
//!   first torn record, and a record whose value-log bytes were lost ends the replay.
//!
//! Value-log GC's relocation batches are synced writes too, but a GC pass need not write
//! any, so the harness does not count it as a sync point (that only makes it accept more).
//!
//! # The model
//!
//! One clock ticks at every event: a write's **begin** (taken under its keys' locks, just
//! before `Db::write_opt`), its **ack** (after `write_opt` returned `Ok`, before the locks
//! are released), and the start of a flush. Write A certainly precedes write B in the
//! engine's order when `ack(A) < begin(B)`: B entered the writer queue after A's group was
//! done. Writes whose intervals overlap may be ordered either way. The **durable watermark**
//! `D` is the largest tick at which a sync point was issued that has since completed: every
//! write acknowledged before `D` must survive, and so must every acknowledged synced write.
//! A write that failed (the round's injected fault) has no ack: it may or may not survive.
//!
//! Per key (writes to a key are serialised by its lock), the history is the base value and
//! the writes since the open in lock order, each with the value it left (0: absent).
//!
//! # The check after a cut ([`History::check`])
//!
//! The database holds one value per key. For a written key, its candidate positions are the
//! positions in its history (base = 0) that left that value; the true position is one of
//! them, at least the key's **required** position. Requirements are derived only from facts,
//! and grow until nothing changes:
//! 1. durable writes are required on each of their keys;
//! 2. when a key has one candidate left and it is a write W, W survived: W is required on
//!    every key of its batch (a batch is one WAL record: all or nothing);
//! 3. with `T` the largest begin tick among the keys' smallest candidates (a write that
//!    certainly survived, or one preceding it on its key), every write acknowledged before
//!    `T` is required (the prefix rule: no later write survives an earlier one's loss).
//!
//! A key whose candidates all lie below its required position lost a write that had to
//! survive: the check fails and names the write and why it was required. A key holding a
//! value no write of its history left fails as a value never written, and a key not written
//! since the open must hold its base. Ambiguity (a key found absent after several deletes)
//! only ever weakens the conclusions, never invents a violation; the unit tests inject lost
//! synced writes, non-prefix recoveries and half-applied batches into fake states and check
//! that each is caught.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

/// A write recorded by [`History::begin`].
pub type WriteId = usize;

#[derive(Debug)]
struct Write {
    begin: u64,
    /// Tick of the acknowledgement; `None` while in flight or after a failure.
    ack: Option<u64>,
    /// Acknowledged as a synced write.
    synced: bool,
    keys: Vec<u64>,
}

/// One key's history: its base value, then `(write, value it left)` in lock order.
#[derive(Debug)]
struct KeyHistory {
    base: u32,
    writes: Vec<(WriteId, u32)>,
}

impl KeyHistory {
    /// The value at position `p` (0: the base).
    fn value(&self, p: usize) -> u32 {
        match p.checked_sub(1).and_then(|i| self.writes.get(i)) {
            Some(&(_, v)) => v,
            None => self.base,
        }
    }

    /// The position (1-based) of write `w` in this history.
    fn position(&self, w: WriteId) -> Option<usize> {
        self.writes
            .iter()
            .position(|&(id, _)| id == w)
            .map(|i| i + 1)
    }
}

#[derive(Debug, Default)]
struct Inner {
    clock: u64,
    /// Writes acknowledged before this tick are durable.
    durable: u64,
    writes: Vec<Write>,
    keys: BTreeMap<u64, KeyHistory>,
}

impl Inner {
    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    fn is_durable(&self, w: &Write) -> bool {
        w.ack.is_some_and(|a| a < self.durable || w.synced)
    }

    fn describe(&self, k: u64, p: usize) -> String {
        let h = &self.keys[&k];
        let value = |v: u32| {
            if v == 0 {
                "absent".to_string()
            } else {
                format!("value {v}")
            }
        };
        match p.checked_sub(1).and_then(|i| h.writes.get(i)) {
            None => format!("the base ({})", value(h.base)),
            Some(&(id, v)) => {
                let w = &self.writes[id];
                let state = match (w.ack, w.synced) {
                    (Some(a), true) => format!("synced, begun at {}, acked at {a}", w.begin),
                    (Some(a), false) => format!("begun at {}, acked at {a}", w.begin),
                    (None, _) => format!("begun at {}, failed", w.begin),
                };
                format!("write #{id} ({}; {state})", value(v))
            }
        }
    }
}

/// What a cut took away, once [`History::check`] accepted it.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CutOutcome {
    /// Acknowledged writes in the history.
    pub acknowledged: u64,
    /// Acknowledged writes a sync point made durable (all found).
    pub durable: u64,
    /// Acknowledged writes certainly lost (issued after the last sync point: allowed).
    pub lost: u64,
    /// Writes never acknowledged: failed, or in flight at the cut (may or may not survive).
    pub pending: u64,
}

/// The write history of a round; see the module doc. Thread-safe.
#[derive(Debug, Default)]
pub struct History {
    inner: Mutex<Inner>,
}

impl History {
    /// An empty history (a round just opened).
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Forgets everything: the database was opened and its state verified (it is durable).
    pub fn clear(&self) {
        *self.lock() = Inner::default();
    }

    /// Records a write about to be issued: `(key, value id it writes (0: delete), the key's
    /// committed value id now)`. REQUIRES: the caller holds the keys' locks until it calls
    /// [`History::acknowledge`] or gives up on the write.
    pub fn begin(&self, ops: &[(u64, u32, u32)]) -> WriteId {
        let mut g = self.lock();
        let begin = g.tick();
        let id = g.writes.len();
        g.writes.push(Write {
            begin,
            ack: None,
            synced: false,
            keys: ops.iter().map(|&(k, _, _)| k).collect(),
        });
        for &(k, value, committed) in ops {
            g.keys
                .entry(k)
                .or_insert_with(|| KeyHistory {
                    base: committed,
                    writes: Vec::new(),
                })
                .writes
                .push((id, value));
        }
        id
    }

    /// Records that write `id` was acknowledged; a synced write also makes every write
    /// acknowledged before it began durable.
    pub fn acknowledge(&self, id: WriteId, synced: bool) {
        let mut g = self.lock();
        let ack = g.tick();
        let mut begin = None;
        if let Some(w) = g.writes.get_mut(id) {
            w.ack = Some(ack);
            w.synced = synced;
            begin = Some(w.begin);
        }
        if let (true, Some(b)) = (synced, begin) {
            g.durable = g.durable.max(b);
        }
    }

    /// A sync point (a flush) is issued; returns its tick for [`History::synced`].
    pub fn sync_issued(&self) -> u64 {
        self.lock().tick()
    }

    /// The sync point issued at `tick` completed: every write acknowledged before it is
    /// durable.
    pub fn synced(&self, tick: u64) {
        let mut g = self.lock();
        g.durable = g.durable.max(tick);
    }

    /// Checks the state found after a power cut against the history (see the module doc):
    /// `found[k]` is the value id key `k` holds (0: absent), `committed(k)` the value a key
    /// not written in this history must hold.
    ///
    /// # Errors
    /// One line per key that breaks the rules (at most 10, and how many there were).
    pub fn check(
        &self,
        found: &[u32],
        committed: impl Fn(u64) -> u32,
    ) -> Result<CutOutcome, String> {
        let g = self.lock();
        let mut errors = g.unwritten_errors(found, committed);
        let mut required = g.durable_required(found, &mut errors);
        if !errors.is_empty() {
            return Err(summary(errors));
        }
        g.settle_required(found, &mut required)?;
        Ok(g.outcome(found))
    }
}

/// Per written key, the position in its history that certainly survived (0: the base), and
/// why (the message of a violation).
type Required = BTreeMap<u64, (usize, String)>;

/// The latest begin tick among the keys' smallest candidates (at least the durable
/// watermark), with the key and the write it came from (`None`: the watermark).
type Latest = (u64, Option<(u64, WriteId)>);

/// The value id key `k` was found holding (0: absent, or beyond `found`).
fn found_at(found: &[u32], k: u64) -> u32 {
    found.get(k as usize).copied().unwrap_or(0)
}

impl Inner {
    /// The keys not written in this history that do not hold their `committed` value, one
    /// error each.
    fn unwritten_errors(&self, found: &[u32], committed: impl Fn(u64) -> u32) -> Vec<String> {
        let mut errors = Vec::new();
        for (k, &f) in found.iter().enumerate() {
            let k = k as u64;
            if !self.keys.contains_key(&k) && f != committed(k) {
                errors.push(format!(
                    "key {k}: holds {f}, but it was not written since the open and held {}",
                    committed(k)
                ));
            }
        }
        errors
    }

    /// Rule 1 of the module doc: each written key requires its last durable write. Also adds
    /// to `errors` the keys holding a value that no write of their history left.
    fn durable_required(&self, found: &[u32], errors: &mut Vec<String>) -> Required {
        let mut required = Required::new();
        for (&k, h) in &self.keys {
            let mut r = (0, String::new());
            for (i, &(id, _)) in h.writes.iter().enumerate() {
                if self.is_durable(&self.writes[id]) {
                    let why = if self.writes[id].synced {
                        "it was a synced write".to_string()
                    } else {
                        format!(
                            "it was acknowledged before a sync point issued at {}",
                            self.durable
                        )
                    };
                    r = (i + 1, why);
                }
            }
            if (0..=h.writes.len()).all(|p| h.value(p) != found_at(found, k)) {
                errors.push(format!(
                    "key {k}: holds {}, which no write since the open left (base {})",
                    found_at(found, k),
                    h.base
                ));
            }
            required.insert(k, r);
        }
        required
    }

    /// Grows `required` by rules 2 and 3 of the module doc until nothing changes.
    ///
    /// # Errors
    /// The keys whose every candidate lies below the required position (the summary).
    fn settle_required(&self, found: &[u32], required: &mut Required) -> Result<(), String> {
        loop {
            let (mut changed, t) = self.require_batches(found, required)?;
            // Everything acknowledged before a surviving write began survived too.
            if let (tick, Some((k, w))) = t {
                changed |= self.require_acked_before(tick, k, w, required);
            }
            if !changed {
                return Ok(());
            }
        }
    }

    /// One pass of rule 2 over the keys: a key's only candidate write survived, so did the
    /// rest of its batch. Returns whether `required` grew, and the [`Latest`] begin tick for
    /// rule 3.
    ///
    /// # Errors
    /// The keys left without a candidate at or above their required position (the summary).
    fn require_batches(
        &self,
        found: &[u32],
        required: &mut Required,
    ) -> Result<(bool, Latest), String> {
        let mut errors = Vec::new();
        let mut changed = false;
        let mut t = (self.durable, None);
        for (&k, h) in &self.keys {
            let r = required.get(&k).map_or(0, |r| r.0);
            let candidates: Vec<usize> = (r..=h.writes.len())
                .filter(|&p| h.value(p) == found_at(found, k))
                .collect();
            let Some(&lo) = candidates.first() else {
                let why = required.get(&k).map_or("", |r| &r.1);
                errors.push(format!(
                    "key {k}: holds {}, but {} must have survived: {why}",
                    found_at(found, k),
                    self.describe(k, r)
                ));
                continue;
            };
            let Some(&(w, _)) = lo.checked_sub(1).and_then(|i| h.writes.get(i)) else {
                continue;
            };
            if self.writes[w].begin > t.0 {
                t = (self.writes[w].begin, Some((k, w)));
            }
            if candidates.len() > 1 {
                continue;
            }
            // Write w certainly survived: so did the rest of its batch.
            for &k2 in &self.writes[w].keys {
                let Some(p) = self.keys.get(&k2).and_then(|h2| h2.position(w)) else {
                    continue;
                };
                let r2 = required.entry(k2).or_insert((0, String::new()));
                if p > r2.0 {
                    *r2 = (p, format!("its batch survived on key {k}"));
                    changed = true;
                }
            }
        }
        if !errors.is_empty() {
            return Err(summary(errors));
        }
        Ok((changed, t))
    }

    /// Rule 3 of the module doc: write `w`, begun at `tick`, survived on key `k`, so every
    /// write acknowledged before `tick` is required. Returns whether `required` grew.
    fn require_acked_before(&self, tick: u64, k: u64, w: WriteId, required: &mut Required) -> bool {
        let mut changed = false;
        for (&k2, h2) in &self.keys {
            let r2 = required.entry(k2).or_insert((0, String::new()));
            for (i, &(id, _)) in h2.writes.iter().enumerate() {
                let before = self.writes[id].ack.is_some_and(|a| a < tick);
                if before && i + 1 > r2.0 {
                    *r2 = (
                        i + 1,
                        format!(
                            "it was acknowledged before write #{w} began (at {tick}), which survived on key {k}"
                        ),
                    );
                    changed = true;
                }
            }
        }
        changed
    }

    /// What the cut took away, once the check accepted it: acknowledged writes at or after
    /// the last position a key's found value matches are lost.
    fn outcome(&self, found: &[u32]) -> CutOutcome {
        let mut outcome = CutOutcome::default();
        let mut lost = BTreeSet::new();
        for (&k, h) in &self.keys {
            let last = (0..=h.writes.len())
                .rev()
                .find(|&p| h.value(p) == found_at(found, k))
                .unwrap_or(0);
            for &(id, _) in h.writes.get(last..).unwrap_or_default() {
                if self.writes[id].ack.is_some() {
                    lost.insert(id);
                }
            }
        }
        for w in &self.writes {
            if w.ack.is_some() {
                outcome.acknowledged += 1;
                outcome.durable += u64::from(self.is_durable(w));
            } else {
                outcome.pending += 1;
            }
        }
        outcome.lost = lost.len() as u64;
        outcome
    }
}

fn summary(mut errors: Vec<String>) -> String {
    let n = errors.len();
    errors.truncate(10);
    format!("{n} keys break the power-cut rules:\n{}", errors.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keys 0..4, all absent at the open.
    fn found(values: [u32; 4]) -> Vec<u32> {
        values.to_vec()
    }

    fn absent(_: u64) -> u32 {
        0
    }

    /// A write of `ops` `(key, value)` acknowledged (synced or not) at once.
    fn acked(h: &History, ops: &[(u64, u32)], synced: bool) -> WriteId {
        let with_base: Vec<(u64, u32, u32)> = ops.iter().map(|&(k, v)| (k, v, 0)).collect();
        let id = h.begin(&with_base);
        h.acknowledge(id, synced);
        id
    }

    #[test]
    fn losing_the_unsynced_tail_is_accepted() {
        let h = History::new();
        acked(&h, &[(0, 10)], false);
        acked(&h, &[(1, 11)], true);
        acked(&h, &[(2, 12)], false);
        acked(&h, &[(0, 13)], false);
        // Everything survived, the tail after the sync was lost, or part of it (a prefix).
        for state in [[13, 11, 12, 0], [10, 11, 0, 0], [10, 11, 12, 0]] {
            assert!(h.check(&found(state), absent).is_ok(), "{state:?}");
        }
        let out = h.check(&found([10, 11, 0, 0]), absent).unwrap();
        assert_eq!(
            out,
            CutOutcome {
                acknowledged: 4,
                durable: 2,
                lost: 2,
                pending: 0
            }
        );
    }

    #[test]
    fn a_lost_synced_write_is_caught() {
        let h = History::new();
        acked(&h, &[(0, 10)], false);
        acked(&h, &[(1, 11)], true);
        let err = h.check(&found([10, 0, 0, 0]), absent).unwrap_err();
        assert!(err.contains("key 1: holds 0, but write #1"), "{err}");
        assert!(err.contains("synced write"), "{err}");
        // The write acknowledged before the synced one was issued is durable too.
        let err = h.check(&found([0, 11, 0, 0]), absent).unwrap_err();
        assert!(err.contains("key 0"), "{err}");
    }

    #[test]
    fn a_flush_makes_earlier_writes_durable_but_not_concurrent_ones() {
        let h = History::new();
        acked(&h, &[(0, 10)], false);
        let flush = h.sync_issued();
        acked(&h, &[(1, 11)], false);
        h.synced(flush);
        assert!(h.check(&found([10, 0, 0, 0]), absent).is_ok());
        let err = h.check(&found([0, 0, 0, 0]), absent).unwrap_err();
        assert!(err.contains("before a sync point"), "{err}");
    }

    #[test]
    fn a_non_prefix_recovery_is_caught() {
        let h = History::new();
        acked(&h, &[(0, 10)], false);
        acked(&h, &[(1, 11)], false);
        acked(&h, &[(2, 12)], false);
        // Write #2 survived without #0 and #1, which were acknowledged before it began.
        let err = h.check(&found([0, 0, 12, 0]), absent).unwrap_err();
        assert!(err.contains("key 0:") && err.contains("key 1:"), "{err}");
        assert!(err.contains("before write #2 began"), "{err}");
        // Through a key's own history: a later value of key 0 without key 1's earlier write.
        let h = History::new();
        acked(&h, &[(1, 11)], false);
        acked(&h, &[(0, 10)], false);
        acked(&h, &[(0, 20)], false);
        assert!(h.check(&found([20, 0, 0, 0]), absent).is_err());
        assert!(h.check(&found([0, 11, 0, 0]), absent).is_ok());
    }

    #[test]
    fn overlapping_writes_may_survive_in_either_order() {
        let h = History::new();
        let a = h.begin(&[(0, 10, 0)]);
        let b = h.begin(&[(1, 11, 0)]);
        h.acknowledge(a, false);
        h.acknowledge(b, false);
        for state in [[10, 0, 0, 0], [0, 11, 0, 0], [10, 11, 0, 0], [0, 0, 0, 0]] {
            assert!(h.check(&found(state), absent).is_ok(), "{state:?}");
        }
    }

    #[test]
    fn a_half_applied_batch_is_caught() {
        let h = History::new();
        acked(&h, &[(0, 10), (1, 11), (3, 0)], false);
        assert!(h.check(&found([10, 11, 0, 0]), absent).is_ok());
        assert!(h.check(&found([0, 0, 0, 0]), absent).is_ok());
        let err = h.check(&found([10, 0, 0, 0]), absent).unwrap_err();
        assert!(err.contains("its batch survived on key 0"), "{err}");
    }

    #[test]
    fn a_failed_write_may_survive_but_not_past_an_earlier_loss() {
        let h = History::new();
        acked(&h, &[(0, 10)], false);
        let failed = h.begin(&[(1, 11, 0)]);
        let _ = failed;
        assert!(h.check(&found([10, 11, 0, 0]), absent).is_ok());
        assert!(h.check(&found([10, 0, 0, 0]), absent).is_ok());
        assert!(h.check(&found([0, 0, 0, 0]), absent).is_ok());
        let err = h.check(&found([0, 11, 0, 0]), absent).unwrap_err();
        assert!(err.contains("key 0"), "{err}");
    }

    /// A power cut in the middle of a round: a write per thread fails or is in flight at the
    /// cut (a batch, and a synced write whose sync the cut refused); none was acknowledged.
    #[test]
    fn writes_in_flight_at_a_mid_round_cut_may_or_may_not_survive_whole() {
        let h = History::new();
        acked(&h, &[(0, 10)], false);
        acked(&h, &[(1, 11)], true);
        let _batch = h.begin(&[(2, 12, 0), (3, 13, 0)]);
        let _synced = h.begin(&[(0, 20, 10)]);
        for state in [
            [10, 11, 0, 0],
            [10, 11, 12, 13],
            [20, 11, 0, 0],
            [20, 11, 12, 13],
        ] {
            assert!(h.check(&found(state), absent).is_ok(), "{state:?}");
        }
        let out = h.check(&found([20, 11, 0, 0]), absent).unwrap();
        assert_eq!(
            out,
            CutOutcome {
                acknowledged: 2,
                durable: 2,
                lost: 0,
                pending: 2
            }
        );
        // Half of the batch in flight.
        let err = h.check(&found([10, 11, 12, 0]), absent).unwrap_err();
        assert!(err.contains("its batch survived on key 2"), "{err}");
        // The writes acknowledged before the cut, made durable by the synced write, must
        // stay, whatever the writes in flight did.
        let err = h.check(&found([0, 11, 12, 13]), absent).unwrap_err();
        assert!(err.contains("key 0: holds 0"), "{err}");
        let err = h.check(&found([20, 0, 0, 0]), absent).unwrap_err();
        assert!(
            err.contains("key 1: holds 0") && err.contains("synced write"),
            "{err}"
        );
    }

    #[test]
    fn a_write_in_flight_at_a_cut_orders_nothing_after_it() {
        // Write #0 is in flight (never acknowledged); #1 began after it and was acknowledged:
        // #1 may have been ordered before #0, so it may survive #0's loss.
        let h = History::new();
        let _in_flight = h.begin(&[(0, 10, 0)]);
        acked(&h, &[(1, 11)], false);
        for state in [[0, 0, 0, 0], [10, 0, 0, 0], [0, 11, 0, 0], [10, 11, 0, 0]] {
            assert!(h.check(&found(state), absent).is_ok(), "{state:?}");
        }
        // On one key: an acknowledged write after a failed one. Unsynced, either may be
        // what is left; synced, the acknowledged one must be.
        let h = History::new();
        let _failed = h.begin(&[(0, 10, 0)]);
        acked(&h, &[(0, 20)], false);
        for state in [[0, 0, 0, 0], [10, 0, 0, 0], [20, 0, 0, 0]] {
            assert!(h.check(&found(state), absent).is_ok(), "{state:?}");
        }
        let h = History::new();
        let _failed = h.begin(&[(0, 10, 0)]);
        acked(&h, &[(0, 20)], true);
        assert!(h.check(&found([20, 0, 0, 0]), absent).is_ok());
        for state in [[0, 0, 0, 0], [10, 0, 0, 0]] {
            let err = h.check(&found(state), absent).unwrap_err();
            assert!(err.contains("synced write"), "{state:?}: {err}");
        }
        // A write in flight that certainly survived still needs every write acknowledged
        // before it began.
        let h = History::new();
        acked(&h, &[(0, 10)], false);
        let _in_flight = h.begin(&[(1, 11, 0)]);
        let err = h.check(&found([0, 11, 0, 0]), absent).unwrap_err();
        assert!(err.contains("before write #1 began"), "{err}");
    }

    #[test]
    fn values_never_written_and_changed_unwritten_keys_are_caught() {
        let h = History::new();
        acked(&h, &[(0, 10)], false);
        let err = h.check(&found([99, 0, 0, 0]), absent).unwrap_err();
        assert!(err.contains("key 0: holds 99, which no write"), "{err}");
        let err = h.check(&found([10, 0, 7, 0]), absent).unwrap_err();
        assert!(
            err.contains("key 2: holds 7, but it was not written"),
            "{err}"
        );
        // An unwritten key holds its committed value (here 7).
        assert!(h
            .check(&found([10, 0, 7, 0]), |k| if k == 2 { 7 } else { 0 })
            .is_ok());
    }

    #[test]
    fn ambiguous_deletes_never_invent_a_violation() {
        let h = History::new();
        // Key 0 is absent at the open; a batch deletes it and writes key 2, then key 0 is
        // written and deleted again. Found absent, key 0 may be at any of three positions.
        acked(&h, &[(0, 0), (2, 12)], false);
        acked(&h, &[(0, 6)], false);
        acked(&h, &[(0, 0)], false);
        for state in [[0, 0, 0, 0], [0, 0, 12, 0], [6, 0, 12, 0]] {
            assert!(h.check(&found(state), absent).is_ok(), "{state:?}");
        }
        // Key 0 = 6 is the second write: the batch before it must have survived.
        assert!(h.check(&found([6, 0, 0, 0]), absent).is_err());
        // A synced delete makes everything before it durable.
        let id = h.begin(&[(0, 0, 0)]);
        h.acknowledge(id, true);
        assert!(h.check(&found([0, 0, 12, 0]), absent).is_ok());
        assert!(h.check(&found([6, 0, 12, 0]), absent).is_err());
        assert!(h.check(&found([0, 0, 0, 0]), absent).is_err());
    }

    #[test]
    fn clear_starts_a_new_round() {
        let h = History::new();
        acked(&h, &[(0, 10)], true);
        h.clear();
        assert!(h.check(&found([0, 0, 0, 0]), absent).is_ok());
    }
}
