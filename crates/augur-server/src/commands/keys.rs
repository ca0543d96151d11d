//! Commands on the keyspace: DEL/UNLINK, EXISTS, TYPE, RENAME/RENAMENX, COPY, SCAN, KEYS,
//! DBSIZE, FLUSHDB. None of them sees an expired key: the engine hides it on every read path.
//! RENAME moves a key's expiry time with it and COPY copies it, as in Redis 7.0.
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

use super::store::{now_ms, read, read_entry, write, Writes};
use super::{is, CmdError, Command, Ctx, Reply};
use crate::cursor::resume_position;
use crate::glob;
use crate::state::KeyCount;
use augur::ScanOptions;
use std::ops::Bound;

/// Keys deleted per batch by FLUSHDB.
const FLUSH_BATCH: usize = 10_000;

/// `DEL key...` (and `UNLINK`): how many of the keys existed.
pub(super) struct Del<'a> {
    keys: &'a [Vec<u8>],
}

impl<'a> Del<'a> {
    pub(super) fn parse(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        Ok(Del { keys: args })
    }
}

impl Command for Del<'_> {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        let _locks = ctx.lock_keys(self.keys);
        let mut keys: Vec<&Vec<u8>> = self.keys.iter().collect();
        keys.sort();
        keys.dedup();
        let mut batch = Writes::default();
        let mut deleted = 0;
        for key in keys {
            if read(ctx, key)?.is_some() {
                batch.delete(key);
                deleted += 1;
            }
        }
        if deleted > 0 {
            write(ctx, batch)?;
        }
        Ok(Reply::Int(deleted))
    }
}

/// `EXISTS key...`: how many of the keys exist (a key named twice counts twice).
pub(super) struct Exists<'a> {
    keys: &'a [Vec<u8>],
}

impl<'a> Exists<'a> {
    pub(super) fn parse(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        Ok(Exists { keys: args })
    }
}

impl Command for Exists<'_> {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        let mut n = 0;
        for key in self.keys {
            if read(ctx, key)?.is_some() {
                n += 1;
            }
        }
        Ok(Reply::Int(n))
    }
}

/// `TYPE key`: `string` or `none` (Augur stores strings only).
pub(super) struct Type<'a> {
    key: &'a [u8],
}

impl<'a> Type<'a> {
    pub(super) fn parse(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        Ok(Type {
            key: args.first().map_or(&[], Vec::as_slice),
        })
    }
}

impl Command for Type<'_> {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        let v = read(ctx, self.key)?;
        Ok(Reply::Status(if v.is_some() { "string" } else { "none" }))
    }
}

/// `RENAME key newkey` and `RENAMENX key newkey`: moves the value and its expiry time
/// (`ERR no such key` for a missing key; a key renamed to itself is left alone). RENAMENX
/// answers 1 when renamed, 0 when `newkey` exists.
pub(super) struct Rename<'a> {
    key: &'a [u8],
    new: &'a [u8],
    nx: bool,
}

impl<'a> Rename<'a> {
    /// `RENAME`.
    pub(super) fn parse(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        Ok(Self::new(args, false))
    }

    /// `RENAMENX`.
    pub(super) fn renamenx(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        Ok(Self::new(args, true))
    }

    fn new(args: &'a [Vec<u8>], nx: bool) -> Self {
        let arg = |i: usize| args.get(i).map_or(&[][..], Vec::as_slice);
        Rename {
            key: arg(0),
            new: arg(1),
            nx,
        }
    }
}

impl Command for Rename<'_> {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        let _locks = ctx.lock_keys(&[self.key, self.new]);
        let Some(entry) = read_entry(ctx, self.key)? else {
            return Err(CmdError::new("ERR no such key"));
        };
        if self.key == self.new {
            return Ok(if self.nx { Reply::Int(0) } else { Reply::Ok });
        }
        if self.nx && read(ctx, self.new)?.is_some() {
            return Ok(Reply::Int(0));
        }
        let mut b = Writes::default();
        b.delete(self.key);
        b.put_entry(self.new, &entry.value, entry.expire_at);
        write(ctx, b)?;
        Ok(if self.nx { Reply::Int(1) } else { Reply::Ok })
    }
}

/// `COPY source destination [DB destination-db] [REPLACE]`: 1 when copied (with the
/// source's expiry time), 0 when the source is missing or the destination exists (without
/// REPLACE). Database 0 is the only one.
pub(super) struct Copy<'a> {
    source: &'a [u8],
    destination: &'a [u8],
    replace: bool,
}

impl<'a> Copy<'a> {
    /// As Redis 7.0's `copyCommand` reads its options.
    pub(super) fn parse(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        let arg = |i: usize| args.get(i).map_or(&[][..], Vec::as_slice);
        let mut replace = false;
        let mut i = 2;
        while let Some(opt) = args.get(i) {
            if is(opt, "replace") {
                replace = true;
            } else if is(opt, "db") && i + 1 < args.len() {
                let db = i32::try_from(super::parse_i64(arg(i + 1))?).map_err(|_| {
                    CmdError::new(
                        "ERR value is out of range, value must between -2147483648 and \
                         2147483647",
                    )
                })?;
                if db != 0 {
                    return Err(CmdError::new("ERR DB index is out of range"));
                }
                i += 1;
            } else {
                return Err(CmdError::syntax());
            }
            i += 1;
        }
        if arg(0) == arg(1) {
            return Err(CmdError::new(
                "ERR source and destination objects are the same",
            ));
        }
        Ok(Copy {
            source: arg(0),
            destination: arg(1),
            replace,
        })
    }
}

impl Command for Copy<'_> {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        let _locks = ctx.lock_keys(&[self.source, self.destination]);
        let Some(entry) = read_entry(ctx, self.source)? else {
            return Ok(Reply::Int(0));
        };
        if !self.replace && read(ctx, self.destination)?.is_some() {
            return Ok(Reply::Int(0));
        }
        let mut b = Writes::default();
        b.put_entry(self.destination, &entry.value, entry.expire_at);
        write(ctx, b)?;
        Ok(Reply::Int(1))
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
    /// returns false; passes whether the key matches the pattern and when it expires. Inside a
    /// run, the run's own writes are merged in (its puts appear, its deletes hide keys).
    /// Expired keys are never seen (the engine hides them; the run's own are dropped).
    /// Returns whether the walk reached the end of the keys.
    fn run(
        &self,
        ctx: &mut Ctx<'_>,
        from: Option<Vec<u8>>,
        mut each: impl FnMut(&[u8], bool, Option<u64>) -> bool,
    ) -> Result<bool, CmdError> {
        let start = match from {
            Some(p) if p.as_slice() >= self.prefix.as_slice() => p,
            _ => self.prefix.clone(),
        };
        let now = now_ms(ctx);
        let own = ctx
            .pending
            .as_ref()
            .map(|p| p.written_from(&start, &self.prefix, now))
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
        let mut offer = |key: &[u8], expire_at: Option<u64>| {
            let hit = self.pattern.is_none_or(|p| glob::matches(p, key));
            each(key, hit, expire_at)
        };
        // The stored key, copied out of the scan so that its expiry time can be asked.
        let mut stored_key = Vec::new();
        loop {
            let in_range = match scan.next()? {
                Some((key, _)) if key.starts_with(&self.prefix) => {
                    stored_key.clear();
                    stored_key.extend_from_slice(key);
                    true
                }
                _ => false,
            };
            let stored = in_range.then_some(stored_key.as_slice());
            // The run's own writes of keys up to the stored one come first; its write of the
            // stored key itself replaces it.
            let mut replaced = false;
            while let Some((key, present)) =
                own.next_if(|(k, _)| stored.is_none_or(|s| k.as_slice() <= s))
            {
                replaced |= stored == Some(key.as_slice());
                if let Some(expire_at) = present {
                    if !offer(&key, expire_at) {
                        return Ok(false);
                    }
                }
            }
            match stored {
                None => return Ok(true),
                Some(key) if !replaced && !offer(key, scan.expire_at()) => return Ok(false),
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
pub(super) struct Scan<'a> {
    cursor: u64,
    pattern: Option<&'a [u8]>,
    count: usize,
    /// `TYPE` named a type other than string: no key has it.
    other_type: bool,
}

/// SCAN's error for a cursor that is not one it issued.
fn invalid_cursor() -> CmdError {
    CmdError::new("ERR invalid cursor")
}

impl<'a> Scan<'a> {
    pub(super) fn parse(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        let (cursor, options) = args.split_first().ok_or_else(invalid_cursor)?;
        let cursor = std::str::from_utf8(cursor)
            .ok()
            .and_then(|s| s.parse::<u64>().ok())
            .ok_or_else(invalid_cursor)?;
        let mut scan = Scan {
            cursor,
            pattern: None,
            count: 10,
            other_type: false,
        };
        let mut options = options.iter();
        while let Some(option) = options.next() {
            let value = options.next().ok_or_else(CmdError::syntax)?;
            if is(option, "match") {
                scan.pattern = Some(value.as_slice());
            } else if is(option, "count") {
                match std::str::from_utf8(value)
                    .ok()
                    .and_then(|s| s.parse::<i64>().ok())
                {
                    Some(n) if n >= 1 => scan.count = usize::try_from(n).unwrap_or(usize::MAX),
                    Some(_) => return Err(CmdError::syntax()),
                    None => return Err(CmdError::not_an_integer()),
                }
            } else if is(option, "type") {
                scan.other_type = !is(value, "string");
            } else {
                return Err(CmdError::syntax());
            }
        }
        Ok(scan)
    }
}

impl Command for Scan<'_> {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        let from = ctx
            .server
            .cursors
            .resolve(self.cursor)
            .map_err(|_| invalid_cursor())?;
        if self.other_type {
            // Every key is a string: no key of another type exists.
            return Ok(Reply::Array(vec![Reply::bulk("0"), Reply::Array(vec![])]));
        }
        let walker = walk(self.pattern);
        let (mut found, mut seen) = (Vec::new(), 0usize);
        // The last key of this call once COUNT keys are seen, then where the next call
        // resumes.
        let (mut last, mut resume) = (None::<Vec<u8>>, None);
        walker.run(ctx, from, |key, hit, _| {
            if let Some(last) = &last {
                resume = Some(resume_position(last, key));
                return false;
            }
            if hit {
                found.push(key.to_vec());
            }
            seen += 1;
            if seen >= self.count {
                last = Some(key.to_vec());
            }
            true
        })?;
        let cursor = resume.map_or(0, |p| ctx.server.cursors.issue(&p));
        Ok(Reply::Array(vec![
            Reply::bulk(cursor.to_string()),
            Reply::bulk_array(found),
        ]))
    }
}

/// `KEYS pattern`: every matching key (a full scan of the pattern's prefix range).
pub(super) struct Keys<'a> {
    pattern: &'a [u8],
}

impl<'a> Keys<'a> {
    pub(super) fn parse(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        Ok(Keys {
            pattern: args.first().map_or(&[], Vec::as_slice),
        })
    }
}

impl Command for Keys<'_> {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        let mut found = Vec::new();
        walk(Some(self.pattern)).run(ctx, None, |key, hit, _| {
            if hit {
                found.push(key.to_vec());
            }
            true
        })?;
        Ok(Reply::bulk_array(found))
    }
}

/// `DBSIZE`: the exact number of keys, by a key scan (so O(keys), unlike Redis's O(1));
/// expired keys are not counted. A count no write overlapped is remembered with its
/// sequence number and the expiry times of its keys, so that `INFO keyspace` can report it
/// as exact (with `expires=` and `avg_ttl=`) until the next write or the first of those keys
/// to expire (`Server::exact_key_count`).
#[derive(Default)]
pub(super) struct DbSize;

impl Command for DbSize {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        let before = ctx.server.db.snapshot().seqno();
        let mut count = KeyCount::at(before);
        walk(None).run(ctx, None, |_, _, expire_at| {
            count.add(expire_at);
            true
        })?;
        // Outside a transaction (whose own writes the count includes) and with no write
        // meanwhile, the count is the database's at `before`.
        if ctx.pending.is_none() && ctx.server.db.snapshot().seqno() == before {
            ctx.server.note_key_count(count);
        }
        Ok(Reply::Int(i64::try_from(count.keys).unwrap_or(i64::MAX)))
    }
}

/// `FLUSHDB [ASYNC|SYNC]` and `FLUSHALL`: deletes every key, when `--enable-flush` allows it
/// (not atomic: writes that run meanwhile may survive; inside a transaction it is, as the
/// transaction holds every key lock).
pub(super) struct Flush;

impl Flush {
    pub(super) fn parse(args: &[Vec<u8>]) -> Result<Self, CmdError> {
        if args.len() > 1
            || args
                .first()
                .is_some_and(|m| !is(m, "async") && !is(m, "sync"))
        {
            return Err(CmdError::syntax());
        }
        Ok(Flush)
    }
}

impl Command for Flush {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        if !ctx.server.config.enable_flush {
            return Err(CmdError::new(
                "ERR FLUSHDB and FLUSHALL are disabled: start augur-server with --enable-flush \
                 to allow deleting every key",
            ));
        }
        // Inside a transaction every delete joins its one batch anyway: one walk collects all.
        let in_run = ctx.pending.is_some();
        loop {
            let mut keys = Vec::new();
            walk(None).run(ctx, None, |key, _, _| {
                keys.push(key.to_vec());
                in_run || keys.len() < FLUSH_BATCH
            })?;
            if keys.is_empty() {
                break;
            }
            let mut batch = Writes::default();
            for k in &keys {
                batch.delete(k);
            }
            write(ctx, batch)?;
            if in_run {
                break;
            }
        }
        Ok(Reply::Ok)
    }
}
