//! Commands on the keyspace: DEL/UNLINK, EXISTS, TYPE, SCAN, KEYS, DBSIZE, FLUSHDB.
//!
//! `KEYS` and `DBSIZE` scan every key (keys only: no value is read). A `MATCH` pattern's
//! literal prefix bounds the key range a walk reads. Inside a run or a transaction (`store.rs`)
//! a walk merges the run's own writes into the engine's keys, so `MATCH`, `KEYS`, `DBSIZE` and
//! `FLUSHDB` in a transaction see its earlier writes.
//!
//! # SCAN cursors
//!
//! Augur's keys are ordered, so a scan's state is one position in key order: a cursor stands
//! for a byte string `S`, and the next call returns keys from the first one `>= S`. When a
//! call has returned `COUNT` keys it reads one more key, `next`, and the position is the
//! shortest string `S` with `last < S <= next` (`next` up to its first byte that differs from
//! `last`, as LevelDB's `FindShortestSeparator` picks index keys), so positions are often much
//! shorter than the keys. Every key present for the whole scan is returned exactly once: keys
//! up to `last` were returned and no key lay between `last` and `next`. Keys added or removed
//! meanwhile may or may not be returned, as Redis promises. The call that reaches the end
//! returns cursor 0 (so a scan never ends with an empty call).
//!
//! A cursor must be a number (clients parse it; redis-py and `redis-cli --scan` stop at
//! "0"), so `cursor.rs` maps positions to numbers below 2^53:
//!
//! - a position of at most 5 bytes is **in the number** (with a check of its bytes): it means
//!   the same position in every process, so such a cursor resumes exactly across restarts
//!   and however many other scans ran meanwhile;
//! - a longer position is kept in the process's **table** under a number never issued
//!   before in this process, with a random per-process epoch in it. The table keeps the
//!   newest 262,144 such cursors (and 16 MiB of positions): a cursor stays valid across any
//!   number of direct cursors and of other scans up to that bound. A cursor the table no
//!   longer holds (evicted, or issued before a restart) is refused with `ERR invalid cursor`.
//!
//! So a cursor either resumes exactly where its scan stopped or is refused; it never resumes
//! another scan's position (the old scheme numbered cursors from 1048576 at every start, so
//! after a restart an old cursor silently continued another client's scan). A made-up number
//! is refused too, except with a small chance for a number that happens to pass a direct
//! cursor's check (then it resumes at the position it spells). Kvrocks refuses every
//! cursor after a restart; direct cursors do better where they apply.

use super::store::{read, write, Writes};
use super::{engine_error, is, Ctx};
use crate::cursor::resume_position;
use crate::glob;
use augur::ScanOptions;
use std::ops::Bound;

/// Keys deleted per batch by FLUSHDB.
const FLUSH_BATCH: usize = 10_000;

/// `DEL key...` (and `UNLINK`): how many of the keys existed.
pub(super) fn del(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) {
    let _locks = ctx.lock_keys(a);
    let mut keys: Vec<&Vec<u8>> = a.iter().collect();
    keys.sort();
    keys.dedup();
    let mut batch = Writes::default();
    let mut deleted = 0;
    for key in keys {
        match read(ctx, key) {
            Ok(Some(_)) => {
                batch.delete(key);
                deleted += 1;
            }
            Ok(None) => {}
            Err(()) => return,
        }
    }
    if deleted > 0 && !write(ctx, batch) {
        return;
    }
    ctx.out.int(deleted);
}

/// `EXISTS key...`: how many of the keys exist (a key named twice counts twice).
pub(super) fn exists(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) {
    let mut n = 0;
    for key in a {
        match read(ctx, key) {
            Ok(Some(_)) => n += 1,
            Ok(None) => {}
            Err(()) => return,
        }
    }
    ctx.out.int(n);
}

/// `TYPE key`: `string` or `none` (Augur stores strings only).
pub(super) fn type_of(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) {
    if let Ok(v) = read(ctx, &a[0]) {
        ctx.out.simple(if v.is_some() { "string" } else { "none" });
    }
}

/// What a `SCAN` or `KEYS` reads.
struct KeyWalk<'p> {
    pattern: Option<&'p [u8]>,
    /// The literal prefix of the pattern: the walk stays inside it.
    prefix: Vec<u8>,
}

impl KeyWalk<'_> {
    /// Calls `each` on every key from `from` on (all keys for `None`) in key order, until it
    /// returns false; passes whether the key matches the pattern. Inside a run, the run's own
    /// writes are merged in (its puts appear, its deletes hide keys). Returns whether the walk
    /// reached the end of the keys.
    fn run(
        &self,
        ctx: &mut Ctx<'_>,
        from: Option<Vec<u8>>,
        mut each: impl FnMut(&[u8], bool) -> bool,
    ) -> Result<bool, ()> {
        let start = match from {
            Some(p) if p.as_slice() >= self.prefix.as_slice() => p,
            _ => self.prefix.clone(),
        };
        let own = ctx
            .pending
            .as_ref()
            .map(|p| p.written_from(&start, &self.prefix))
            .unwrap_or_default();
        let mut own = own.into_iter().peekable();
        let options = ScanOptions {
            keys_only: true,
            ..ScanOptions::default()
        };
        let mut scan = ctx.server.db.scan_with(
            (Bound::Included(start), Bound::<Vec<u8>>::Unbounded),
            &options,
        );
        let mut offer = |key: &[u8]| {
            let hit = self.pattern.is_none_or(|p| glob::matches(p, key));
            each(key, hit)
        };
        loop {
            let stored = match scan.next() {
                Ok(Some((key, _))) if key.starts_with(&self.prefix) => Some(key),
                Ok(_) => None,
                Err(e) => {
                    engine_error(ctx.out, &e);
                    return Err(());
                }
            };
            // The run's own writes of keys up to the stored one come first; its write of the
            // stored key itself replaces it.
            let mut replaced = false;
            while let Some((key, present)) =
                own.next_if(|(k, _)| stored.is_none_or(|s| k.as_slice() <= s))
            {
                replaced |= stored == Some(key.as_slice());
                if present && !offer(&key) {
                    return Ok(false);
                }
            }
            match stored {
                None => return Ok(true),
                Some(key) if !replaced && !offer(key) => return Ok(false),
                Some(_) => {}
            }
        }
    }
}

fn walk(pattern: Option<&[u8]>) -> KeyWalk<'_> {
    KeyWalk {
        pattern: pattern.filter(|p| *p != b"*"),
        prefix: pattern.map(glob::literal_prefix).unwrap_or_default(),
    }
}

/// `SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]`.
pub(super) fn scan(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) {
    let from = match std::str::from_utf8(&a[0])
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .map(|c| ctx.server.cursors.resolve(c))
    {
        Some(Ok(from)) => from,
        None | Some(Err(_)) => {
            ctx.out.error("ERR invalid cursor");
            return;
        }
    };
    let (mut pattern, mut count, mut only_strings) = (None, 10usize, true);
    let mut i = 1;
    while i < a.len() {
        let Some(value) = a.get(i + 1) else {
            ctx.out.error("ERR syntax error");
            return;
        };
        if is(&a[i], "match") {
            pattern = Some(value.as_slice());
        } else if is(&a[i], "count") {
            match std::str::from_utf8(value)
                .ok()
                .and_then(|s| s.parse::<i64>().ok())
            {
                Some(n) if n >= 1 => count = usize::try_from(n).unwrap_or(usize::MAX),
                Some(_) => {
                    ctx.out.error("ERR syntax error");
                    return;
                }
                None => {
                    ctx.out.error("ERR value is not an integer or out of range");
                    return;
                }
            }
        } else if is(&a[i], "type") {
            only_strings = is(value, "string");
        } else {
            ctx.out.error("ERR syntax error");
            return;
        }
        i += 2;
    }
    if !only_strings {
        // Every key is a string: no key of another type exists.
        ctx.out.array(2);
        ctx.out.bulk(b"0");
        ctx.out.array(0);
        return;
    }
    let walker = walk(pattern);
    let (mut found, mut seen) = (Vec::new(), 0usize);
    // The last key of this call once COUNT keys are seen, then where the next call resumes.
    let (mut last, mut resume) = (None::<Vec<u8>>, None);
    if walker
        .run(ctx, from, |key, hit| {
            if let Some(last) = &last {
                resume = Some(resume_position(last, key));
                return false;
            }
            if hit {
                found.push(key.to_vec());
            }
            seen += 1;
            if seen >= count {
                last = Some(key.to_vec());
            }
            true
        })
        .is_err()
    {
        return;
    }
    let cursor = resume.map_or(0, |p| ctx.server.cursors.issue(&p));
    ctx.out.array(2);
    ctx.out.bulk(cursor.to_string().as_bytes());
    ctx.out.bulk_array(&found);
}

/// `KEYS pattern`: every matching key (a full scan of the pattern's prefix range).
pub(super) fn keys(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) {
    let walker = walk(Some(&a[0]));
    let mut found = Vec::new();
    if walker
        .run(ctx, None, |key, hit| {
            if hit {
                found.push(key.to_vec());
            }
            true
        })
        .is_ok()
    {
        ctx.out.bulk_array(&found);
    }
}

/// `DBSIZE`: the exact number of keys, by a key scan (so O(keys), unlike Redis's O(1)).
pub(super) fn dbsize(ctx: &mut Ctx<'_>, _a: &[Vec<u8>]) {
    let mut n = 0i64;
    if walk(None)
        .run(ctx, None, |_, _| {
            n += 1;
            true
        })
        .is_ok()
    {
        ctx.out.int(n);
    }
}

/// `FLUSHDB [ASYNC|SYNC]` and `FLUSHALL`: deletes every key, when `--enable-flush` allows it
/// (not atomic: writes that run meanwhile may survive; inside a transaction it is, as the
/// transaction holds every key lock).
pub(super) fn flush(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) {
    if a.len() > 1 || a.first().is_some_and(|m| !is(m, "async") && !is(m, "sync")) {
        ctx.out.error("ERR syntax error");
        return;
    }
    if !ctx.server.config.enable_flush {
        ctx.out.error(
            "ERR FLUSHDB and FLUSHALL are disabled: start augur-server with --enable-flush to \
             allow deleting every key",
        );
        return;
    }
    // Inside a transaction every delete joins its one batch anyway: one walk collects all.
    let in_run = ctx.pending.is_some();
    loop {
        let mut keys = Vec::new();
        if walk(None)
            .run(ctx, None, |key, _| {
                keys.push(key.to_vec());
                in_run || keys.len() < FLUSH_BATCH
            })
            .is_err()
        {
            return;
        }
        if keys.is_empty() {
            break;
        }
        let mut batch = Writes::default();
        for k in &keys {
            batch.delete(k);
        }
        if !write(ctx, batch) {
            return;
        }
        if in_run {
            break;
        }
    }
    ctx.out.ok();
}
