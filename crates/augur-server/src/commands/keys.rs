//! Commands on the keyspace: DEL/UNLINK, EXISTS, TYPE, RENAME/RENAMENX, COPY, SCAN, KEYS,
//! DBSIZE, FLUSHDB. None of them sees an expired key: the engine hides it on every read path.
//! RENAME moves a key's expiry time with it and COPY copies it, as in Redis 7.0.
//!
//! Every key here is a user key: a walk covers the user keys' part of the engine's key space
//! (`crate::encoding`), so no hash field and no record of the server's is ever listed or
//! counted. DEL of a hash deletes its record alone (its fields are garbage that compaction
//! drops); RENAME and COPY of a hash copy its fields under a new version.
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

use super::hash_walks::copy_hash;
use super::store::{decode, exists, read_raw, write, Writes};
use super::walk::{walk, Range};
use super::{is, CmdError, Command, Ctx, Reply};
use crate::cursor::resume_position;
use crate::encoding::{engine_key, engine_prefix, type_of, user_key, Value, USER_KEYS_END};
use crate::glob;
use crate::state::KeyCount;

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
            if exists(ctx, key)? {
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
            if exists(ctx, key)? {
                n += 1;
            }
        }
        Ok(Reply::Int(n))
    }
}

/// `TYPE key`: `string`, `hash` or `none`.
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
        match read_raw(ctx, self.key)? {
            None => Ok(Reply::Status("none")),
            Some(e) => match type_of(&e.value) {
                Some(name) => Ok(Reply::Status(name)),
                // Says which value it cannot read.
                None => decode(e.value).map(|_| Reply::Status("none")),
            },
        }
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
        let Some(entry) = read_raw(ctx, self.key)? else {
            return Err(CmdError::new("ERR no such key"));
        };
        if self.key == self.new {
            return Ok(if self.nx { Reply::Int(0) } else { Reply::Ok });
        }
        if self.nx && exists(ctx, self.new)? {
            return Ok(Reply::Int(0));
        }
        let mut b = Writes::default();
        b.delete(self.key);
        put_copy(ctx, &mut b, self.key, entry, self.new)?;
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
        let Some(entry) = read_raw(ctx, self.source)? else {
            return Ok(Reply::Int(0));
        };
        if !self.replace && exists(ctx, self.destination)? {
            return Ok(Reply::Int(0));
        }
        let mut b = Writes::default();
        put_copy(ctx, &mut b, self.source, entry, self.destination)?;
        write(ctx, b)?;
        Ok(Reply::Int(1))
    }
}

/// Adds to `b` the writes that make `to` a copy of `from`'s `entry` with its expiry time: the
/// stored value for a string, the fields under a new version and a new record for a hash.
fn put_copy(
    ctx: &mut Ctx<'_>,
    b: &mut Writes,
    from: &[u8],
    entry: super::store::Entry,
    to: &[u8],
) -> Result<(), CmdError> {
    if type_of(&entry.value) == Some("string") {
        // As stored: no decode, no copy.
        b.put_stored(to, &entry.value, entry.expire_at);
        return Ok(());
    }
    match decode(entry.value)? {
        Value::String(v) => b.put_string(to, &v, entry.expire_at),
        Value::Hash(meta) => copy_hash(ctx, b, from, meta, to, entry.expire_at)?,
    }
    Ok(())
}

/// What a `SCAN` or `KEYS` reads.
struct KeyWalk<'p> {
    pattern: Option<&'p [u8]>,
    /// The literal prefix of the pattern: the walk stays inside it.
    prefix: Vec<u8>,
}

/// A user key a walk visits.
struct Visit<'k> {
    key: &'k [u8],
    /// It matches the walk's pattern.
    hit: bool,
    /// When it expires.
    expire_at: Option<u64>,
    /// Its type's name, when the walk was asked for types (`None` otherwise, and for a
    /// value the server cannot read).
    type_name: Option<&'static str>,
}

impl KeyWalk<'_> {
    /// Calls `each` on every user key from `from` on (all keys for `None`) in key order,
    /// until it returns false (see `walk.rs`); with `types`, reads each key's value to tell
    /// its type. Returns whether the walk reached the end of the keys.
    fn run(
        &self,
        ctx: &mut Ctx<'_>,
        from: Option<Vec<u8>>,
        types: bool,
        mut each: impl FnMut(Visit<'_>) -> bool,
    ) -> Result<bool, CmdError> {
        let start = match from {
            Some(p) if p.as_slice() >= self.prefix.as_slice() => p,
            _ => self.prefix.clone(),
        };
        let range = Range {
            start: &engine_key(&start),
            end: Some(USER_KEYS_END),
            prefix: &engine_prefix(&self.prefix),
            keys_only: !types,
        };
        walk(ctx, &range, |engine, stored, expire_at| {
            let Some(key) = user_key(engine) else {
                return true;
            };
            each(Visit {
                key: &key,
                hit: self.pattern.is_none_or(|p| glob::matches(p, &key)),
                expire_at,
                type_name: if types { type_of(stored) } else { None },
            })
        })
    }
}

fn walk_keys(pattern: Option<&[u8]>) -> KeyWalk<'_> {
    KeyWalk {
        pattern: pattern.filter(|p| *p != b"*"),
        prefix: pattern.map(glob::literal_prefix).unwrap_or_default(),
    }
}

/// `SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]`.
pub(super) struct Scan<'a> {
    cursor: u64,
    filter: ScanFilter<'a>,
}

/// The options of SCAN and HSCAN.
pub(super) struct ScanFilter<'a> {
    /// `MATCH`.
    pub(super) pattern: Option<&'a [u8]>,
    /// `COUNT` (default 10): keys or fields visited per call.
    pub(super) count: usize,
    /// `TYPE` (SCAN only): only keys of this type (any case; a name no type has matches no
    /// key, as in Redis 7.0).
    pub(super) type_name: Option<&'a [u8]>,
}

/// SCAN's and HSCAN's error for a cursor that is not one the server issued.
pub(super) fn invalid_cursor() -> CmdError {
    CmdError::new("ERR invalid cursor")
}

/// The options of SCAN (`with_type`) or HSCAN after the cursor, as Redis 7.0's
/// `scanGenericCommand` reads them: pairs of a name and a value, COUNT an integer of at
/// least 1; anything else is a syntax error.
pub(super) fn parse_scan_options(
    options: &[Vec<u8>],
    with_type: bool,
) -> Result<ScanFilter<'_>, CmdError> {
    let mut filter = ScanFilter {
        pattern: None,
        count: 10,
        type_name: None,
    };
    let mut options = options.iter();
    while let Some(option) = options.next() {
        let value = options.next().ok_or_else(CmdError::syntax)?;
        if is(option, "match") {
            filter.pattern = Some(value.as_slice());
        } else if is(option, "count") {
            match std::str::from_utf8(value)
                .ok()
                .and_then(|s| s.parse::<i64>().ok())
            {
                Some(n) if n >= 1 => filter.count = usize::try_from(n).unwrap_or(usize::MAX),
                Some(_) => return Err(CmdError::syntax()),
                None => return Err(CmdError::not_an_integer()),
            }
        } else if with_type && is(option, "type") {
            filter.type_name = Some(value.as_slice());
        } else {
            return Err(CmdError::syntax());
        }
    }
    Ok(filter)
}

impl<'a> Scan<'a> {
    pub(super) fn parse(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        let (cursor, options) = args.split_first().ok_or_else(invalid_cursor)?;
        let cursor = std::str::from_utf8(cursor)
            .ok()
            .and_then(|s| s.parse::<u64>().ok())
            .ok_or_else(invalid_cursor)?;
        Ok(Scan {
            cursor,
            filter: parse_scan_options(options, true)?,
        })
    }
}

impl Command for Scan<'_> {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        let from = ctx
            .server
            .cursors
            .resolve(self.cursor)
            .map_err(|_| invalid_cursor())?;
        let walker = walk_keys(self.filter.pattern);
        let (mut found, mut seen) = (Vec::new(), 0usize);
        // The last key of this call once COUNT keys are seen, then where the next call
        // resumes.
        let (mut last, mut resume) = (None::<Vec<u8>>, None);
        let wanted = self.filter.type_name;
        walker.run(ctx, from, wanted.is_some(), |visit| {
            if let Some(last) = &last {
                resume = Some(resume_position(last, visit.key));
                return false;
            }
            let of_type = wanted.is_none_or(|w| visit.type_name.is_some_and(|t| is(w, t)));
            if visit.hit && of_type {
                found.push(visit.key.to_vec());
            }
            seen += 1;
            if seen >= self.filter.count {
                last = Some(visit.key.to_vec());
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
        walk_keys(Some(self.pattern)).run(ctx, None, false, |visit| {
            if visit.hit {
                found.push(visit.key.to_vec());
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
        let before = ctx.server.db()?.snapshot().seqno();
        let mut count = KeyCount::at(before);
        walk_keys(None).run(ctx, None, false, |visit| {
            count.add(visit.expire_at);
            true
        })?;
        // Outside a transaction (whose own writes the count includes) and with no write
        // meanwhile, the count is the database's at `before`.
        if ctx.pending.is_none() && ctx.server.db()?.snapshot().seqno() == before {
            ctx.server.note_key_count(count);
        }
        Ok(Reply::Int(i64::try_from(count.keys).unwrap_or(i64::MAX)))
    }
}

/// `FLUSHDB [ASYNC|SYNC]` and `FLUSHALL`: deletes every key, when `--enable-flush` allows it
/// (not atomic: writes that run meanwhile may survive; inside a transaction it is, as the
/// transaction holds every key lock). A hash's record is deleted; its fields are garbage
/// that compaction drops.
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
            walk_keys(None).run(ctx, None, false, |visit| {
                keys.push(visit.key.to_vec());
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
