//! How commands reach the engine: [`read`] and [`write`], and the deferred writes of a
//! pipelined run ([`Pending`]).
//!
//! A client's pipeline often holds runs of commands on keys (SET, INCR, GET, MSET, …). Such a
//! run executes under the locks of all its keys, taken once in stripe order, with its writes
//! gathered in a [`Pending`] set and committed as one write batch when the run ends: one WAL
//! record (and under `--sync always` one fsync) for the run instead of one per command. A
//! transaction's EXEC is such a run too (`transaction.rs`). Reads (point reads here, key
//! walks in `keys.rs`) inside the run see the run's own earlier writes (the overlay), so the
//! run behaves as its commands one after another; other clients see all of it or none of it,
//! which is one of the orders Redis could have run it in. Replies are written only after the
//! commit, so no client is told of a write that is not yet in the log.

use super::{CmdError, Ctx};
use crate::config::SyncPolicy;
use crate::state::Counters;
use augur::{TryWrite, WriteBatch, WriteOptions};
use std::collections::HashMap;
use std::sync::atomic::Ordering;

/// One write: a key and its new value (`None`: deleted).
type Write = (Vec<u8>, Option<Vec<u8>>);

/// Writes a command makes: puts (`Some`) and deletes (`None`), in order.
#[derive(Debug, Default)]
pub(super) struct Writes(Vec<Write>);

impl Writes {
    /// Sets `key` to `value`.
    pub(super) fn put(&mut self, key: &[u8], value: &[u8]) {
        self.0.push((key.to_vec(), Some(value.to_vec())));
    }

    /// Deletes `key`.
    pub(super) fn delete(&mut self, key: &[u8]) {
        self.0.push((key.to_vec(), None));
    }

    fn into_batch(self) -> WriteBatch {
        let mut b = WriteBatch::new();
        for (key, value) in self.0 {
            match value {
                Some(v) => b.put(key, v),
                None => b.delete(key),
            };
        }
        b
    }
}

/// The writes of a run not yet committed, and where the newest write of each key is.
///
/// Only the newest write of each key is kept: the run commits as one batch, so no reader
/// can ever see a write a later one of the run replaced, and committing it would only fill
/// the WAL and the value log with garbage (a pipelined run of APPENDs to one key wrote every
/// intermediate value, up to hundreds of megabytes of value log for a 1 MB value).
#[derive(Debug, Default)]
pub struct Pending {
    /// The run's writes in order; `None` where a later write of the same key replaced one.
    writes: Vec<Option<Write>>,
    newest: HashMap<Vec<u8>, usize>,
}

impl Pending {
    /// The run's own newest write of `key`: `Some(None)` for a delete, `None` when the run
    /// has not written it.
    fn get(&self, key: &[u8]) -> Option<Option<&Vec<u8>>> {
        let i = *self.newest.get(key)?;
        self.writes.get(i)?.as_ref().map(|(_, v)| v.as_ref())
    }

    /// The keys the run has written that are `>= start` and begin with `prefix`, in key
    /// order, each with whether the run leaves it present (a put) or not (a delete): the
    /// overlay a key walk inside the run merges with the engine's keys (`keys.rs`).
    pub(super) fn written_from(&self, start: &[u8], prefix: &[u8]) -> Vec<(Vec<u8>, bool)> {
        let mut keys: Vec<(Vec<u8>, bool)> = self
            .newest
            .iter()
            .filter(|(k, _)| k.as_slice() >= start && k.starts_with(prefix))
            .filter_map(|(k, &i)| Some((k.clone(), self.writes.get(i)?.as_ref()?.1.is_some())))
            .collect();
        keys.sort_unstable();
        keys
    }

    fn add(&mut self, writes: Writes) {
        for (key, value) in writes.0 {
            if let Some(replaced) = self.newest.insert(key.clone(), self.writes.len()) {
                self.writes[replaced] = None;
            }
            self.writes.push(Some((key, value)));
        }
    }

    /// The writes to commit: the newest of each key, in the order the run made them.
    fn into_writes(self) -> Writes {
        Writes(self.writes.into_iter().flatten().collect())
    }
}

/// The current value of `key` (the run's own write first), counting a hit or a miss.
pub(super) fn read(ctx: &mut Ctx<'_>, key: &[u8]) -> Result<Option<Vec<u8>>, CmdError> {
    let v = match ctx.pending.as_ref().and_then(|p| p.get(key)) {
        Some(own) => own.cloned(),
        None => ctx.server.db.get(key)?,
    };
    let c = &ctx.server.counters;
    Counters::add(if v.is_some() { &c.hits } else { &c.misses }, 1);
    Ok(v)
}

/// Applies `writes`: inside a run, adds them to the run's pending set (committed when the
/// run ends); otherwise commits them now.
pub(super) fn write(ctx: &mut Ctx<'_>, writes: Writes) -> Result<(), CmdError> {
    if let Some(pending) = ctx.pending.as_mut() {
        pending.add(writes);
        return Ok(());
    }
    commit(ctx, writes)
}

/// Commits a run's pending writes (nothing to do when it wrote nothing).
pub(super) fn commit_pending(ctx: &mut Ctx<'_>, pending: Pending) -> Result<(), CmdError> {
    let writes = pending.into_writes();
    if writes.0.is_empty() {
        return Ok(());
    }
    commit(ctx, writes)
}

/// Commits `writes` with the configured durability.
///
/// Under `--sync always` the write waits for its fsync (the session runs such batches off the
/// I/O thread). Otherwise it is tried without waiting, and only a write that would wait for
/// room (a stall, a memtable switch) moves off the I/O thread (`block_in_place`).
fn commit(ctx: &mut Ctx<'_>, writes: Writes) -> Result<(), CmdError> {
    let batch = writes.into_batch();
    let db = &ctx.server.db;
    let sync = ctx.server.config.sync == SyncPolicy::Always;
    let result = if sync {
        db.write_opt(batch, WriteOptions { sync })
    } else {
        match db.try_write(batch) {
            Ok(TryWrite::Written) => Ok(()),
            Ok(TryWrite::WouldWait(batch)) => {
                Counters::add(&ctx.server.counters.write_waits, 1);
                tokio::task::block_in_place(|| db.write(batch))
            }
            Err(e) => Err(e),
        }
    };
    result?;
    if !sync {
        ctx.server.dirty.store(true, Ordering::Release);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{Pending, Writes};

    fn writes(ops: &[(&str, Option<&str>)]) -> Writes {
        let mut w = Writes::default();
        for (k, v) in ops {
            match v {
                Some(v) => w.put(k.as_bytes(), v.as_bytes()),
                None => w.delete(k.as_bytes()),
            }
        }
        w
    }

    /// A run commits only the newest write of each key, in the run's order, and its reads
    /// and key walks see exactly those.
    #[test]
    fn a_run_commits_the_newest_write_of_each_key() {
        let mut p = Pending::default();
        p.add(writes(&[("a", Some("1")), ("b", Some("1"))]));
        p.add(writes(&[("a", Some("2")), ("c", None)]));
        p.add(writes(&[("b", None), ("a", Some("3")), ("c", Some("1"))]));
        assert_eq!(p.get(b"a"), Some(Some(&b"3".to_vec())));
        assert_eq!(p.get(b"b"), Some(None));
        assert_eq!(p.get(b"z"), None);
        assert_eq!(
            p.written_from(b"", b""),
            vec![
                (b"a".to_vec(), true),
                (b"b".to_vec(), false),
                (b"c".to_vec(), true)
            ]
        );
        let committed = p.into_writes().0;
        assert_eq!(
            committed,
            vec![
                (b"b".to_vec(), None),
                (b"a".to_vec(), Some(b"3".to_vec())),
                (b"c".to_vec(), Some(b"1".to_vec())),
            ]
        );
    }
}
