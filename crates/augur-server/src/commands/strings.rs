//! Commands on values: GET, SET and its variants (SETEX, PSETEX, GETEX), MGET/MSET, ranges,
//! APPEND and the counters.
//!
//! Every command that writes holds the locks of its keys (`Ctx::lock_keys`) from its read to
//! its write, so read-modify-write commands (INCR, APPEND, SET NX, …) are atomic with respect
//! to each other and to plain writes of the same keys. Engine access goes through `store.rs`
//! (a pipelined run defers its writes there).
//!
//! Expiry as in Redis 7.0 (`expire.rs`): SET, GETSET and MSET clear a key's expiry (SET
//! KEEPTTL keeps it); INCR, DECR, INCRBY, DECRBY, INCRBYFLOAT, APPEND and SETRANGE change the
//! value and keep its expiry.

use super::expire::{
    expire_at, expire_ms, parse_string_options, put_with_expiry, ExpiryOption, Unit,
};
use super::store::{exists, now_ms, read, read_string, read_value, write, wrong_type, Writes};
use super::{parse_i64, CmdError, Command, Ctx, Reply};
use crate::encoding::Value;
use crate::long_double::LongDouble;

/// The most bytes a value may grow to by SETRANGE or APPEND (Redis's proto-max-bulk-len).
const MAX_STRING_BYTES: usize = 512 << 20;

/// Writes `value` under `key`, which never expires.
fn put(ctx: &mut Ctx<'_>, key: &[u8], value: &[u8]) -> Result<(), CmdError> {
    let mut b = Writes::default();
    b.put_string(key, value, None);
    write(ctx, b)
}

/// Writes `value` under `key` keeping the expiry time `expire_at` the key had.
fn put_keeping(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    value: &[u8],
    expire_at: Option<u64>,
) -> Result<(), CmdError> {
    let mut b = Writes::default();
    b.put_string(key, value, expire_at);
    write(ctx, b)
}

/// The error of a value past [`MAX_STRING_BYTES`].
fn too_big() -> CmdError {
    CmdError::new("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
}

/// The argument at `i` (the table's arity guarantees it).
fn arg(args: &[Vec<u8>], i: usize) -> &[u8] {
    args.get(i).map_or(&[], Vec::as_slice)
}

/// `GET key`.
pub(super) struct Get<'a> {
    key: &'a [u8],
}

impl<'a> Get<'a> {
    pub(super) fn parse(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        Ok(Get { key: arg(args, 0) })
    }
}

impl Command for Get<'_> {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        Ok(Reply::bulk_or_null(read(ctx, self.key)?))
    }
}

/// `SET key value [NX|XX] [GET] [EX seconds|PX milliseconds|EXAT unix-time-seconds|PXAT
/// unix-time-milliseconds|KEEPTTL]`, and `SETEX key seconds value` and `PSETEX key
/// milliseconds value`, as Redis 7.0's `setGenericCommand`.
pub(super) struct Set<'a> {
    /// The command's name, for the error of an invalid time.
    name: &'static str,
    key: &'a [u8],
    value: &'a [u8],
    nx: bool,
    xx: bool,
    get: bool,
    keep_ttl: bool,
    /// The expiry option and its number in milliseconds (checked).
    expiry: Option<(Unit, i64)>,
}

impl<'a> Set<'a> {
    pub(super) fn parse(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        let o = parse_string_options(args.get(2..).unwrap_or_default(), true)?;
        let expiry = match o.expiry {
            ExpiryOption::Set(unit, n) => Some((unit, expire_ms(n, unit, "set")?)),
            _ => None,
        };
        Ok(Set {
            name: "set",
            key: arg(args, 0),
            value: arg(args, 1),
            nx: o.nx,
            xx: o.xx,
            get: o.get,
            keep_ttl: o.expiry == ExpiryOption::KeepTtl,
            expiry,
        })
    }

    /// `SETEX key seconds value`.
    pub(super) fn setex(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        Self::with_ttl(args, "setex", Unit::Ex)
    }

    /// `PSETEX key milliseconds value`.
    pub(super) fn psetex(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        Self::with_ttl(args, "psetex", Unit::Px)
    }

    fn with_ttl(args: &'a [Vec<u8>], name: &'static str, unit: Unit) -> Result<Self, CmdError> {
        Ok(Set {
            name,
            key: arg(args, 0),
            value: arg(args, 2),
            nx: false,
            xx: false,
            get: false,
            keep_ttl: false,
            expiry: Some((unit, expire_ms(arg(args, 1), unit, name)?)),
        })
    }
}

impl Command for Set<'_> {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        let now = now_ms(ctx);
        let at = match self.expiry {
            Some((unit, ms)) => Some(expire_at(ms, unit, now, self.name)?),
            None => None,
        };
        let _locks = ctx.lock_keys(&[self.key]);
        if !self.nx && !self.xx && !self.get && !self.keep_ttl {
            put_with_expiry(ctx, self.key, self.value, at, now)?;
            return Ok(Reply::Ok);
        }
        let old = read_value(ctx, self.key)?;
        // GET answers first, as Redis's `getGenericCommand`: a key of another type is an
        // error before anything is set.
        let old_string = match &old {
            Some(e) => match &e.value {
                Value::String(v) => Some(v.clone()),
                _ if self.get => return Err(wrong_type()),
                _ => None,
            },
            None => None,
        };
        let allowed = !((self.nx && old.is_some()) || (self.xx && old.is_none()));
        if allowed {
            let at = if self.keep_ttl {
                old.as_ref().and_then(|e| e.expire_at)
            } else {
                at
            };
            put_with_expiry(ctx, self.key, self.value, at, now)?;
        }
        Ok(if self.get {
            Reply::bulk_or_null(old_string)
        } else if allowed {
            Reply::Ok
        } else {
            Reply::Null
        })
    }
}

/// `GETEX key [EX seconds|PX milliseconds|EXAT unix-time-seconds|PXAT
/// unix-time-milliseconds|PERSIST]`: the value, setting or removing its expiry, as Redis
/// 7.0's `getexCommand` (a missing key is a null whatever the time; a time in the past
/// deletes the key after its value is returned).
pub(super) struct GetEx<'a> {
    key: &'a [u8],
    expiry: ExpiryOption<'a>,
}

impl<'a> GetEx<'a> {
    pub(super) fn parse(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        let o = parse_string_options(args.get(1..).unwrap_or_default(), false)?;
        Ok(GetEx {
            key: arg(args, 0),
            expiry: o.expiry,
        })
    }
}

impl Command for GetEx<'_> {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        let _locks = ctx.lock_keys(&[self.key]);
        let Some(entry) = read_string(ctx, self.key)? else {
            return Ok(Reply::Null);
        };
        let now = now_ms(ctx);
        match self.expiry {
            ExpiryOption::Set(unit, n) => {
                let at = expire_at(expire_ms(n, unit, "getex")?, unit, now, "getex")?;
                put_with_expiry(ctx, self.key, &entry.value, Some(at), now)?;
            }
            ExpiryOption::Persist if entry.expire_at.is_some() => {
                put_with_expiry(ctx, self.key, &entry.value, None, now)?;
            }
            _ => {}
        }
        Ok(Reply::Bulk(entry.value))
    }
}

/// `SETNX key value`: 1 when set.
pub(super) struct SetNx<'a> {
    key: &'a [u8],
    value: &'a [u8],
}

impl<'a> SetNx<'a> {
    pub(super) fn parse(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        Ok(SetNx {
            key: arg(args, 0),
            value: arg(args, 1),
        })
    }
}

impl Command for SetNx<'_> {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        let _locks = ctx.lock_keys(&[self.key]);
        if exists(ctx, self.key)? {
            return Ok(Reply::Int(0));
        }
        put(ctx, self.key, self.value)?;
        Ok(Reply::Int(1))
    }
}

/// `GETSET key value`.
pub(super) struct GetSet<'a> {
    key: &'a [u8],
    value: &'a [u8],
}

impl<'a> GetSet<'a> {
    pub(super) fn parse(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        Ok(GetSet {
            key: arg(args, 0),
            value: arg(args, 1),
        })
    }
}

impl Command for GetSet<'_> {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        let _locks = ctx.lock_keys(&[self.key]);
        let old = read(ctx, self.key)?;
        put(ctx, self.key, self.value)?;
        Ok(Reply::bulk_or_null(old))
    }
}

/// `MGET key...`.
pub(super) struct MGet<'a> {
    keys: &'a [Vec<u8>],
}

impl<'a> MGet<'a> {
    pub(super) fn parse(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        Ok(MGet { keys: args })
    }
}

impl Command for MGet<'_> {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        let mut values = Vec::with_capacity(self.keys.len());
        for key in self.keys {
            // A key of another type reads as missing, as in Redis.
            let value = match read_value(ctx, key)? {
                Some(e) => match e.value {
                    Value::String(v) => Some(v),
                    _ => None,
                },
                None => None,
            };
            values.push(Reply::bulk_or_null(value));
        }
        Ok(Reply::Array(values))
    }
}

/// `MSET key value [key value ...]`, atomically, and `MSETNX`: all only when none exists
/// (1), else none (0).
pub(super) struct MSet<'a> {
    pairs: &'a [Vec<u8>],
    only_new: bool,
}

impl<'a> MSet<'a> {
    /// `MSET`.
    pub(super) fn parse(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        Self::pairs(args, "mset", false)
    }

    /// `MSETNX`.
    pub(super) fn msetnx(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        Self::pairs(args, "msetnx", true)
    }

    fn pairs(args: &'a [Vec<u8>], name: &str, only_new: bool) -> Result<Self, CmdError> {
        if !args.len().is_multiple_of(2) {
            return Err(CmdError::arity(name));
        }
        Ok(MSet {
            pairs: args,
            only_new,
        })
    }
}

impl Command for MSet<'_> {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        let keys: Vec<&Vec<u8>> = self.pairs.iter().step_by(2).collect();
        let _locks = ctx.lock_keys(&keys);
        if self.only_new {
            for key in &keys {
                if exists(ctx, key)? {
                    return Ok(Reply::Int(0));
                }
            }
        }
        let mut b = Writes::default();
        for pair in self.pairs.chunks(2) {
            if let [key, value] = pair {
                b.put_string(key, value, None);
            }
        }
        write(ctx, b)?;
        Ok(if self.only_new {
            Reply::Int(1)
        } else {
            Reply::Ok
        })
    }
}

/// `STRLEN key`.
pub(super) struct StrLen<'a> {
    key: &'a [u8],
}

impl<'a> StrLen<'a> {
    pub(super) fn parse(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        Ok(StrLen { key: arg(args, 0) })
    }
}

impl Command for StrLen<'_> {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        let v = read(ctx, self.key)?;
        Ok(Reply::Int(v.map_or(0, |v| v.len() as i64)))
    }
}

/// `GETDEL key`.
pub(super) struct GetDel<'a> {
    key: &'a [u8],
}

impl<'a> GetDel<'a> {
    pub(super) fn parse(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        Ok(GetDel { key: arg(args, 0) })
    }
}

impl Command for GetDel<'_> {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        let _locks = ctx.lock_keys(&[self.key]);
        let old = read(ctx, self.key)?;
        if old.is_some() {
            let mut b = Writes::default();
            b.delete(self.key);
            write(ctx, b)?;
        }
        Ok(Reply::bulk_or_null(old))
    }
}

/// `GETRANGE key start end`, with Redis's index rules (negative from the end, clamped).
pub(super) struct GetRange<'a> {
    key: &'a [u8],
    start: i64,
    end: i64,
}

impl<'a> GetRange<'a> {
    pub(super) fn parse(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        Ok(GetRange {
            key: arg(args, 0),
            start: parse_i64(arg(args, 1))?,
            end: parse_i64(arg(args, 2))?,
        })
    }
}

impl Command for GetRange<'_> {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        let v = read(ctx, self.key)?.unwrap_or_default();
        Ok(Reply::bulk(substring(&v, self.start, self.end)))
    }
}

/// The bytes of `v` from `start` to `end` inclusive, as GETRANGE picks them.
pub(super) fn substring(v: &[u8], start: i64, end: i64) -> &[u8] {
    let len = v.len() as i64;
    if start < 0 && end < 0 && start > end {
        return &[];
    }
    let start = if start < 0 { len + start } else { start }.max(0);
    let end = if end < 0 { len + end } else { end }.max(0).min(len - 1);
    if len == 0 || start > end {
        return &[];
    }
    v.get(start as usize..=end as usize).unwrap_or_default()
}

/// `SETRANGE key offset value`: the new length.
pub(super) struct SetRange<'a> {
    key: &'a [u8],
    offset: usize,
    value: &'a [u8],
}

impl<'a> SetRange<'a> {
    pub(super) fn parse(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        let offset = parse_i64(arg(args, 1))?;
        let offset =
            usize::try_from(offset).map_err(|_| CmdError::new("ERR offset is out of range"))?;
        Ok(SetRange {
            key: arg(args, 0),
            offset,
            value: arg(args, 2),
        })
    }
}

impl Command for SetRange<'_> {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        let (offset, value) = (self.offset, self.value);
        let _locks = ctx.lock_keys(&[self.key]);
        let old = read_string(ctx, self.key)?;
        if value.is_empty() {
            return Ok(Reply::Int(old.map_or(0, |e| e.value.len() as i64)));
        }
        if offset.saturating_add(value.len()) > MAX_STRING_BYTES {
            return Err(too_big());
        }
        let (mut v, expire_at) = old.map_or((Vec::new(), None), |e| (e.value, e.expire_at));
        if v.len() < offset + value.len() {
            v.resize(offset + value.len(), 0);
        }
        v[offset..offset + value.len()].copy_from_slice(value);
        put_keeping(ctx, self.key, &v, expire_at)?;
        Ok(Reply::Int(v.len() as i64))
    }
}

/// `APPEND key value`: the new length.
pub(super) struct Append<'a> {
    key: &'a [u8],
    value: &'a [u8],
}

impl<'a> Append<'a> {
    pub(super) fn parse(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        Ok(Append {
            key: arg(args, 0),
            value: arg(args, 1),
        })
    }
}

impl Command for Append<'_> {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        let _locks = ctx.lock_keys(&[self.key]);
        let old = read_string(ctx, self.key)?;
        let (mut v, expire_at) = old.map_or((Vec::new(), None), |e| (e.value, e.expire_at));
        if v.len().saturating_add(self.value.len()) > MAX_STRING_BYTES {
            return Err(too_big());
        }
        v.extend_from_slice(self.value);
        put_keeping(ctx, self.key, &v, expire_at)?;
        Ok(Reply::Int(v.len() as i64))
    }
}

/// `INCR`, `DECR`, `INCRBY` and `DECRBY`: adds `delta` to the integer at `key` (0 when
/// missing), atomically.
pub(super) struct Add<'a> {
    key: &'a [u8],
    delta: i64,
}

impl<'a> Add<'a> {
    /// `INCR key`.
    pub(super) fn incr(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        Ok(Add {
            key: arg(args, 0),
            delta: 1,
        })
    }

    /// `DECR key`.
    pub(super) fn decr(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        Ok(Add {
            key: arg(args, 0),
            delta: -1,
        })
    }

    /// `INCRBY key increment`.
    pub(super) fn incrby(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        Ok(Add {
            key: arg(args, 0),
            delta: parse_i64(arg(args, 1))?,
        })
    }

    /// `DECRBY key decrement`.
    pub(super) fn decrby(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        let n = parse_i64(arg(args, 1))?;
        let delta = n
            .checked_neg()
            .ok_or_else(|| CmdError::new("ERR decrement would overflow"))?;
        Ok(Add {
            key: arg(args, 0),
            delta,
        })
    }
}

impl Command for Add<'_> {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        let _locks = ctx.lock_keys(&[self.key]);
        let (current, expire_at) = match read_string(ctx, self.key)? {
            None => (0, None),
            Some(e) => (
                integer_value(&e.value).ok_or_else(CmdError::not_an_integer)?,
                e.expire_at,
            ),
        };
        let new = current
            .checked_add(self.delta)
            .ok_or_else(|| CmdError::new("ERR increment or decrement would overflow"))?;
        put_keeping(ctx, self.key, new.to_string().as_bytes(), expire_at)?;
        Ok(Reply::Int(new))
    }
}

/// `INCRBYFLOAT key increment`: the new value, as a bulk string (in RESP3 too, as Redis).
/// Computed as Redis computes it, in x87 `long double` (`long_double.rs`), so that the
/// reply and the stored text are Redis's to the byte.
pub(super) struct IncrByFloat<'a> {
    key: &'a [u8],
    /// The increment, read once the key is found to hold a string (Redis checks the type
    /// first).
    incr: &'a [u8],
}

/// INCRBYFLOAT's error for an argument or a stored value that is not a number.
fn not_a_float() -> CmdError {
    CmdError::new("ERR value is not a valid float")
}

impl<'a> IncrByFloat<'a> {
    pub(super) fn parse(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        Ok(IncrByFloat {
            key: arg(args, 0),
            incr: arg(args, 1),
        })
    }
}

impl Command for IncrByFloat<'_> {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        let _locks = ctx.lock_keys(&[self.key]);
        let (current, expire_at) = match read_string(ctx, self.key)? {
            None => (LongDouble::ZERO, None),
            Some(e) => (
                LongDouble::parse(&e.value).ok_or_else(not_a_float)?,
                e.expire_at,
            ),
        };
        let incr = LongDouble::parse(self.incr).ok_or_else(not_a_float)?;
        let new = current + incr;
        if !new.is_finite() {
            return Err(CmdError::new("ERR increment would produce NaN or Infinity"));
        }
        let text = new.to_human();
        put_keeping(ctx, self.key, text.as_bytes(), expire_at)?;
        Ok(Reply::bulk(text))
    }
}

/// A stored value as Redis's counters read it: a canonical decimal i64 (no sign `+`, no
/// leading zeros, no spaces, at most 20 characters).
pub(super) fn integer_value(v: &[u8]) -> Option<i64> {
    if v.is_empty() || v.len() > 20 {
        return None;
    }
    let s = std::str::from_utf8(v).ok()?;
    if s.starts_with('+') || (s.len() > 1 && (s.starts_with('0') || s.starts_with("-0"))) {
        return None;
    }
    s.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn getrange_follows_redis() {
        let v = b"This is a string";
        assert_eq!(substring(v, 0, 3), b"This");
        assert_eq!(substring(v, -3, -1), b"ing");
        assert_eq!(substring(v, 0, -1), v);
        assert_eq!(substring(v, 10, 100), b"string");
        assert_eq!(substring(v, 5, 3), b"");
        assert_eq!(substring(v, -1, -5), b"");
        assert_eq!(substring(b"", 0, -1), b"");
        assert_eq!(substring(v, -100, 2), b"Thi");
    }

    #[test]
    fn counters_read_only_canonical_integers() {
        assert_eq!(integer_value(b"10"), Some(10));
        assert_eq!(integer_value(b"-10"), Some(-10));
        for bad in [
            &b"010"[..],
            b"+1",
            b" 1",
            b"1 ",
            b"",
            b"1.0",
            b"-0",
            b"99999999999999999999",
        ] {
            assert_eq!(integer_value(bad), None, "{bad:?}");
        }
    }
}
