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
//!
//! Two levels: [`Writes`] and the pending set hold **engine** keys and **stored** values
//! (`crate::encoding`); the typed reads ([`read_raw`], [`read_value`], [`read_string`])
//! and the typed writes (`Writes::put_string`, `put_hash`, `put_field`, …) take user keys and
//! do the encoding, so commands never see an escaped key or a tagged value.

use super::{CmdError, Ctx};
use crate::config::SyncPolicy;
use crate::encoding::{
    self, encode_string, engine_key, field_key, parse_field_key, user_key, HashMeta, Value,
    USER_KEYS_END,
};
use crate::state::Counters;
use augur::{TryWrite, WriteBatch, WriteOptions};
use std::collections::HashMap;
use std::sync::atomic::Ordering;

/// An engine key's stored value and when it expires (milliseconds since the Unix epoch on
/// the database's clock; `None`: never).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Entry {
    /// The stored value (`crate::encoding`: a string's bytes, escaped, or a hash record).
    pub(super) value: Vec<u8>,
    /// When it expires.
    pub(super) expire_at: Option<u64>,
}

/// What a user key holds, and when it expires.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Typed {
    /// The value.
    pub(super) value: Value,
    /// When it expires.
    pub(super) expire_at: Option<u64>,
}

/// A string and when it expires.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct StringEntry {
    /// The string.
    pub(super) value: Vec<u8>,
    /// When it expires.
    pub(super) expire_at: Option<u64>,
}

/// Redis's error for a command on a key of another type.
pub(super) fn wrong_type() -> CmdError {
    CmdError::new("WRONGTYPE Operation against a key holding the wrong kind of value")
}

impl Entry {
    /// Whether the entry has expired at `now_ms` (as the engine judges it: at its time).
    fn expired(&self, now_ms: u64) -> bool {
        self.expire_at.is_some_and(|at| at <= now_ms)
    }
}

/// One write: a key and its new entry (`None`: deleted).
type Write = (Vec<u8>, Option<Entry>);

/// Writes a command makes: puts (`Some`) and deletes (`None`), in order.
#[derive(Debug, Default)]
pub(super) struct Writes(Vec<Write>);

impl Writes {
    /// Sets the user key `key` to the string `value`, expiring at `expire_at` (`None`:
    /// never).
    #[inline]
    pub(super) fn put_string(&mut self, key: &[u8], value: &[u8], expire_at: Option<u64>) {
        self.put_raw(
            engine_key(key).into_owned(),
            encode_string(value),
            expire_at,
        );
    }

    /// Sets the user key `key` to a stored value read from another key (RENAME, COPY,
    /// EXPIRE: any type, as it was stored), expiring at `expire_at`.
    pub(super) fn put_stored(&mut self, key: &[u8], stored: &[u8], expire_at: Option<u64>) {
        self.put_raw(engine_key(key).into_owned(), stored.to_vec(), expire_at);
    }

    /// Sets the user key `key` to the hash record `meta`, expiring at `expire_at`.
    pub(super) fn put_hash(&mut self, key: &[u8], meta: HashMeta, expire_at: Option<u64>) {
        self.put_raw(engine_key(key).into_owned(), meta.encode(), expire_at);
    }

    /// Deletes the user key `key` (a hash's record only: its fields become garbage).
    pub(super) fn delete(&mut self, key: &[u8]) {
        self.0.push((engine_key(key).into_owned(), None));
    }

    /// Sets `field` of the hash `key` at `version` to `value` (fields never expire: their
    /// hash's record does).
    pub(super) fn put_field(&mut self, key: &[u8], version: u64, field: &[u8], value: &[u8]) {
        self.put_raw(field_key(key, version, field), value.to_vec(), None);
    }

    /// Deletes `field` of the hash `key` at `version`.
    pub(super) fn delete_field(&mut self, key: &[u8], version: u64, field: &[u8]) {
        self.0.push((field_key(key, version, field), None));
    }

    #[inline]
    fn put_raw(&mut self, engine_key: Vec<u8>, stored: Vec<u8>, expire_at: Option<u64>) {
        let entry = Entry {
            value: stored,
            expire_at,
        };
        self.0.push((engine_key, Some(entry)));
    }

    fn into_batch(self) -> WriteBatch {
        let mut b = WriteBatch::new();
        for (key, entry) in self.0 {
            match entry {
                Some(Entry {
                    value,
                    expire_at: Some(at),
                }) => b.put_expiring(key, value, at),
                Some(Entry {
                    value,
                    expire_at: None,
                }) => b.put(key, value),
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
/// intermediate value, up to hundreds of megabytes of value log for a 1 MB value). An
/// expiring write keeps its time, so the run's own reads see it expire as the engine would.
#[derive(Debug, Default)]
pub struct Pending {
    /// The run's writes in order; `None` where a later write of the same key replaced one.
    writes: Vec<Option<Write>>,
    newest: HashMap<Vec<u8>, usize>,
}

impl Pending {
    /// The run's own newest write of `key` at `now_ms`: `Some(None)` for a delete (or a put
    /// that has expired), `None` when the run has not written it.
    fn get(&self, key: &[u8], now_ms: u64) -> Option<Option<&Entry>> {
        let i = *self.newest.get(key)?;
        let (_, entry) = self.writes.get(i)?.as_ref()?;
        Some(entry.as_ref().filter(|e| !e.expired(now_ms)))
    }

    /// The engine keys the run has written that are `>= start`, below `end` (none:
    /// unbounded) and begin with `prefix`, in key order, each with what the run leaves there
    /// at `now_ms`: the entry (a put not expired) or `None` (a delete): the overlay a walk
    /// inside the run merges with the engine's keys (`walk.rs`).
    pub(super) fn written_in(
        &self,
        start: &[u8],
        end: Option<&[u8]>,
        prefix: &[u8],
        now_ms: u64,
    ) -> Vec<(Vec<u8>, Option<Entry>)> {
        let mut keys: Vec<(Vec<u8>, Option<Entry>)> = self
            .newest
            .iter()
            .filter(|(k, _)| k.as_slice() >= start && k.starts_with(prefix))
            .filter(|(k, _)| end.is_none_or(|end| k.as_slice() < end))
            .filter_map(|(k, &i)| {
                let (_, entry) = self.writes.get(i)?.as_ref()?;
                let present = entry.as_ref().filter(|e| !e.expired(now_ms));
                Some((k.clone(), present.cloned()))
            })
            .collect();
        keys.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        keys
    }

    fn add(&mut self, writes: Writes) {
        for (key, entry) in writes.0 {
            if let Some(replaced) = self.newest.insert(key.clone(), self.writes.len()) {
                self.writes[replaced] = None;
            }
            self.writes.push(Some((key, entry)));
        }
    }

    /// The writes to commit: the newest of each key, in the order the run made them.
    fn into_writes(self) -> Writes {
        Writes(self.writes.into_iter().flatten().collect())
    }
}

/// Now on the database's clock (milliseconds since the Unix epoch): the time expiry is
/// judged by, and the base of relative TTLs.
pub(super) fn now_ms(ctx: &Ctx<'_>) -> u64 {
    ctx.server.now_ms()
}

/// The current entry of the engine key `key` (the run's own write first).
#[inline]
pub(super) fn read_engine(ctx: &Ctx<'_>, key: &[u8]) -> Result<Option<Entry>, CmdError> {
    let own = ctx.pending.as_ref().and_then(|p| p.get(key, now_ms(ctx)));
    Ok(match own {
        Some(own) => own.cloned(),
        None => ctx.server.db()?.get_with_expiry(key)?.map(|f| Entry {
            value: f.value,
            expire_at: f.expire_at,
        }),
    })
}

/// Counts a keyspace hit or miss (`INFO stats`).
#[inline]
fn count_lookup(ctx: &Ctx<'_>, hit: bool) {
    let c = &ctx.server.counters;
    Counters::add(if hit { &c.hits } else { &c.misses }, 1);
}

/// The stored value of the user key `key` whatever its type (the commands that do not look
/// inside: EXISTS, DEL, EXPIRE, TTL, …), counting a hit or a miss.
#[inline]
pub(super) fn read_raw(ctx: &mut Ctx<'_>, key: &[u8]) -> Result<Option<Entry>, CmdError> {
    let e = read_engine(ctx, &engine_key(key))?;
    count_lookup(ctx, e.is_some());
    Ok(e)
}

/// Decodes a stored value, or says which value could not be read.
#[inline]
pub(super) fn decode(stored: Vec<u8>) -> Result<Value, CmdError> {
    encoding::decode(stored).map_err(|e| CmdError::new(format!("ERR {e}")))
}

/// What the user key `key` holds, counting a hit or a miss.
#[inline]
pub(super) fn read_value(ctx: &mut Ctx<'_>, key: &[u8]) -> Result<Option<Typed>, CmdError> {
    let Some(e) = read_raw(ctx, key)? else {
        return Ok(None);
    };
    Ok(Some(Typed {
        value: decode(e.value)?,
        expire_at: e.expire_at,
    }))
}

/// The string at `key` (`WRONGTYPE` for another type), counting a hit or a miss: the
/// string commands' read. One engine read; the type is one comparison of the value's first
/// byte.
#[inline]
pub(super) fn read_string(ctx: &mut Ctx<'_>, key: &[u8]) -> Result<Option<StringEntry>, CmdError> {
    match read_value(ctx, key)? {
        None => Ok(None),
        Some(Typed {
            value: Value::String(value),
            expire_at,
        }) => Ok(Some(StringEntry { value, expire_at })),
        Some(_) => Err(wrong_type()),
    }
}

/// The string value at `key` (`WRONGTYPE` for another type).
#[inline]
pub(super) fn read(ctx: &mut Ctx<'_>, key: &[u8]) -> Result<Option<Vec<u8>>, CmdError> {
    Ok(read_string(ctx, key)?.map(|e| e.value))
}

/// Whether the user key `key` exists, whatever its type.
pub(super) fn exists(ctx: &mut Ctx<'_>, key: &[u8]) -> Result<bool, CmdError> {
    Ok(read_raw(ctx, key)?.is_some())
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
    // Before the write, under the keys' locks: an EXEC that checks its watched keys (under
    // theirs) either sees the change or runs before the write lands. A field's write
    // touches its hash.
    if !ctx.server.watches.is_empty() {
        for (key, _) in &writes.0 {
            if key.as_slice() < USER_KEYS_END {
                if let Some(user) = user_key(key) {
                    ctx.server.watches.touch(&user);
                }
            } else if let Some(field) = parse_field_key(key) {
                ctx.server.watches.touch(field.user);
            }
        }
    }
    let count = writes.0.len() as u64;
    let batch = writes.into_batch();
    let db = ctx.server.db()?;
    let sync = ctx.server.settings.sync() == SyncPolicy::Always;
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
    // The group is in the backlog before the write returns (the commit listener runs
    // before the seqnos are published): `WAIT` waits for this offset.
    ctx.client.write_offset = ctx.server.repl.offset();
    Counters::add(&ctx.server.counters.key_writes, count);
    if !sync {
        ctx.server.dirty.store(true, Ordering::Release);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{Entry, Pending, Writes};

    fn writes(ops: &[(&str, Option<&str>)]) -> Writes {
        let mut w = Writes::default();
        for (k, v) in ops {
            match v {
                Some(v) => w.put_string(k.as_bytes(), v.as_bytes(), None),
                None => w.delete(k.as_bytes()),
            }
        }
        w
    }

    fn entry(value: &str, expire_at: Option<u64>) -> Entry {
        Entry {
            value: value.as_bytes().to_vec(),
            expire_at,
        }
    }

    /// A run commits only the newest write of each key, in the run's order, and its reads
    /// and key walks see exactly those.
    #[test]
    fn a_run_commits_the_newest_write_of_each_key() {
        let mut p = Pending::default();
        p.add(writes(&[("a", Some("1")), ("b", Some("1"))]));
        p.add(writes(&[("a", Some("2")), ("c", None)]));
        p.add(writes(&[("b", None), ("a", Some("3")), ("c", Some("1"))]));
        assert_eq!(p.get(b"a", 0), Some(Some(&entry("3", None))));
        assert_eq!(p.get(b"b", 0), Some(None));
        assert_eq!(p.get(b"z", 0), None);
        assert_eq!(
            p.written_in(b"", None, b"", 0),
            vec![
                (b"a".to_vec(), Some(entry("3", None))),
                (b"b".to_vec(), None),
                (b"c".to_vec(), Some(entry("1", None)))
            ]
        );
        assert_eq!(
            p.written_in(b"b", Some(b"c"), b"", 0),
            vec![(b"b".to_vec(), None)]
        );
        let committed = p.into_writes().0;
        assert_eq!(
            committed,
            vec![
                (b"b".to_vec(), None),
                (b"a".to_vec(), Some(entry("3", None))),
                (b"c".to_vec(), Some(entry("1", None))),
            ]
        );
    }

    /// An expiring write of a run keeps its time: the run's reads and walks see it until
    /// then and as absent from then on, and the newest write of the key (a plain put after
    /// an expiring one) decides whether the key expires.
    #[test]
    fn a_run_keeps_the_expiry_of_its_writes() {
        let mut p = Pending::default();
        let mut w = Writes::default();
        w.put_string(b"t", b"1", Some(100));
        w.put_string(b"u", b"1", Some(100));
        p.add(w);
        p.add(writes(&[("u", Some("2"))]));
        assert_eq!(p.get(b"t", 99), Some(Some(&entry("1", Some(100)))));
        assert_eq!(p.get(b"t", 100), Some(None));
        assert_eq!(
            p.written_in(b"", None, b"", 99),
            vec![
                (b"t".to_vec(), Some(entry("1", Some(100)))),
                (b"u".to_vec(), Some(entry("2", None)))
            ]
        );
        assert_eq!(
            p.written_in(b"", None, b"", 100),
            vec![
                (b"t".to_vec(), None),
                (b"u".to_vec(), Some(entry("2", None)))
            ]
        );
        let committed = p.into_writes().0;
        assert_eq!(
            committed,
            vec![
                (b"t".to_vec(), Some(entry("1", Some(100)))),
                (b"u".to_vec(), Some(entry("2", None))),
            ]
        );
    }
}
