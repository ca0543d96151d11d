//! Key expiry: EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT (with NX, XX, GT, LT), TTL, PTTL,
//! EXPIRETIME, PEXPIRETIME and PERSIST, and the expiry options SET and GETEX share
//! (`EX`, `PX`, `EXAT`, `PXAT`, `KEEPTTL`, `PERSIST`), all with Redis 7.0's rules, replies and
//! error texts (checked against redis-server 7.0.15: `tests/against_redis.rs`).
//!
//! A key's expiry time lives in the engine with its value (an expiring value,
//! `augur::WriteBatch::put_expiring`): the engine hides a key once its time has come, on
//! every read path, and compaction drops it. So changing a key's expiry rewrites its value
//! (a hash's record: its fields carry no time) with the new time: a read-modify-write under the key's lock, as INCR is. Times are
//! milliseconds since the Unix epoch on the database's clock (`store::now_ms`), held as
//! Redis holds them, in a signed 64-bit integer, with its overflow checks.

use super::store::{now_ms, read_raw, write, Writes};
use super::{is, parse_i64, printable, CmdError, Command, Ctx, Reply};

/// Which expiry option: the unit of its number and whether it is a time or a duration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Unit {
    /// `EX seconds`.
    Ex,
    /// `PX milliseconds`.
    Px,
    /// `EXAT unix-time-seconds`.
    ExAt,
    /// `PXAT unix-time-milliseconds`.
    PxAt,
}

impl Unit {
    fn seconds(self) -> bool {
        matches!(self, Unit::Ex | Unit::ExAt)
    }

    fn relative(self) -> bool {
        matches!(self, Unit::Ex | Unit::Px)
    }

    fn from_option(opt: &[u8]) -> Option<Unit> {
        [
            ("ex", Unit::Ex),
            ("px", Unit::Px),
            ("exat", Unit::ExAt),
            ("pxat", Unit::PxAt),
        ]
        .into_iter()
        .find_map(|(name, unit)| is(opt, name).then_some(unit))
    }
}

/// What SET or GETEX does to the key's expiry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ExpiryOption<'a> {
    /// No option: SET clears the expiry, GETEX leaves it.
    Unset,
    /// SET's `KEEPTTL`: keep the key's expiry.
    KeepTtl,
    /// GETEX's `PERSIST`: remove it.
    Persist,
    /// `EX`, `PX`, `EXAT` or `PXAT` and its number (checked when the command runs: GETEX
    /// of a missing key ignores it).
    Set(Unit, &'a [u8]),
}

/// The options of SET (`NX`, `XX`, `GET` and the expiry) or GETEX (the expiry and
/// `PERSIST`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct StringOptions<'a> {
    pub(super) nx: bool,
    pub(super) xx: bool,
    pub(super) get: bool,
    pub(super) expiry: ExpiryOption<'a>,
}

/// Parses the options of SET (`set`) or GETEX as Redis 7.0's
/// `parseExtendedStringArgumentsOrReply`: an option may repeat, but NX and XX, and two
/// different expiry options (KEEPTTL and PERSIST included), conflict; an expiry option's
/// number must follow it; anything else is `ERR syntax error`. The numbers themselves are
/// checked later ([`expire_ms`]), as Redis checks them.
pub(super) fn parse_string_options(
    opts: &[Vec<u8>],
    set: bool,
) -> Result<StringOptions<'_>, CmdError> {
    let mut o = StringOptions {
        nx: false,
        xx: false,
        get: false,
        expiry: ExpiryOption::Unset,
    };
    let mut i = 0;
    while let Some(opt) = opts.get(i) {
        let next = opts.get(i + 1);
        let unit = Unit::from_option(opt);
        if set && is(opt, "nx") && !o.xx {
            o.nx = true;
        } else if set && is(opt, "xx") && !o.nx {
            o.xx = true;
        } else if set && is(opt, "get") {
            o.get = true;
        } else if set
            && is(opt, "keepttl")
            && matches!(o.expiry, ExpiryOption::Unset | ExpiryOption::KeepTtl)
        {
            o.expiry = ExpiryOption::KeepTtl;
        } else if !set
            && is(opt, "persist")
            && matches!(o.expiry, ExpiryOption::Unset | ExpiryOption::Persist)
        {
            o.expiry = ExpiryOption::Persist;
        } else if let (Some(unit), Some(n)) = (unit, next) {
            // The same option again replaces the number; another expiry option conflicts.
            match o.expiry {
                ExpiryOption::Unset => {}
                ExpiryOption::Set(u, _) if u == unit => {}
                _ => return Err(CmdError::syntax()),
            }
            o.expiry = ExpiryOption::Set(unit, n);
            i += 1;
        } else {
            return Err(CmdError::syntax());
        }
        i += 1;
    }
    Ok(o)
}

/// Redis's error for a time out of range: `ERR invalid expire time in '<name>' command`.
fn invalid_expire_time(name: &str) -> CmdError {
    CmdError::new(format!("ERR invalid expire time in '{name}' command"))
}

/// The number of an expiry option of SET, SETEX, PSETEX or GETEX in milliseconds, checked
/// as Redis 7.0's `getExpireMillisecondsOrReply` checks it before adding the time: an
/// integer (`ERR value is not an integer or out of range`), positive, and in seconds small
/// enough to convert (`ERR invalid expire time in '<name>' command`).
pub(super) fn expire_ms(arg: &[u8], unit: Unit, name: &str) -> Result<i64, CmdError> {
    let n = parse_i64(arg)?;
    if n <= 0 || (unit.seconds() && n > i64::MAX / 1000) {
        return Err(invalid_expire_time(name));
    }
    Ok(if unit.seconds() { n * 1000 } else { n })
}

/// The expiry time (ms since the epoch) of an option whose number is `ms`
/// ([`expire_ms`]) at `now`: `EX` and `PX` count from now. A time past `i64::MAX` is
/// Redis's `invalid expire time`.
pub(super) fn expire_at(ms: i64, unit: Unit, now: u64, name: &str) -> Result<u64, CmdError> {
    let at = if unit.relative() {
        ms.checked_add(now_i64(now))
    } else {
        Some(ms)
    };
    match at {
        Some(at) if at > 0 => Ok(at as u64),
        _ => Err(invalid_expire_time(name)),
    }
}

/// `now` as Redis's signed milliseconds.
fn now_i64(now: u64) -> i64 {
    i64::try_from(now).unwrap_or(i64::MAX)
}

/// Writes the string `value` under `key`, expiring at `expire_at` (`None`: never); a time
/// already past deletes the key instead (it would read as absent at once).
pub(super) fn put_with_expiry(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    value: &[u8],
    expire_at: Option<u64>,
    now: u64,
) -> Result<(), CmdError> {
    let mut b = Writes::default();
    match expire_at {
        Some(at) if at <= now => b.delete(key),
        _ => b.put_string(key, value, expire_at),
    }
    write(ctx, b)
}

/// Rewrites `key`'s stored value (any type: a hash's record keeps its version, so its
/// fields stay its own) to expire at `expire_at`; a time already past deletes the key.
fn restore_with_expiry(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    stored: &[u8],
    expire_at: Option<u64>,
    now: u64,
) -> Result<(), CmdError> {
    let mut b = Writes::default();
    match expire_at {
        Some(at) if at <= now => b.delete(key),
        _ => b.put_stored(key, stored, expire_at),
    }
    write(ctx, b)
}

/// The conditions of EXPIRE and its variants.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct ExpireFlags {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
}

/// `EXPIRE key seconds [NX|XX|GT|LT]`, `PEXPIRE key milliseconds …`, `EXPIREAT key
/// unix-time-seconds …` and `PEXPIREAT key unix-time-milliseconds …`: 1 when the expiry was
/// set (or the key deleted: a time in the past deletes it, as Redis 7.0 does), 0 when the
/// key is missing or a condition failed.
#[derive(Debug)]
pub(super) struct Expire<'a> {
    name: &'static str,
    key: &'a [u8],
    /// The number in milliseconds (seconds already converted).
    when: i64,
    /// `EXPIRE`, `PEXPIRE`: counted from now.
    relative: bool,
    flags: ExpireFlags,
}

impl<'a> Expire<'a> {
    /// `EXPIRE`.
    pub(super) fn seconds(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        Self::parse(args, "expire", Unit::Ex)
    }

    /// `PEXPIRE`.
    pub(super) fn milliseconds(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        Self::parse(args, "pexpire", Unit::Px)
    }

    /// `EXPIREAT`.
    pub(super) fn at_seconds(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        Self::parse(args, "expireat", Unit::ExAt)
    }

    /// `PEXPIREAT`.
    pub(super) fn at_milliseconds(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        Self::parse(args, "pexpireat", Unit::PxAt)
    }

    /// As Redis 7.0's `expireGenericCommand` before it looks the key up: the options
    /// first, then the number, then its conversion to milliseconds.
    fn parse(args: &'a [Vec<u8>], name: &'static str, unit: Unit) -> Result<Self, CmdError> {
        let flags = parse_expire_flags(args.get(2..).unwrap_or_default())?;
        let mut when = parse_i64(args.get(1).map_or(&[][..], Vec::as_slice))?;
        if unit.seconds() {
            if !(i64::MIN / 1000..=i64::MAX / 1000).contains(&when) {
                return Err(invalid_expire_time(name));
            }
            when *= 1000;
        }
        Ok(Expire {
            name,
            key: args.first().map_or(&[][..], Vec::as_slice),
            when,
            relative: unit.relative(),
            flags,
        })
    }
}

/// EXPIRE's options as Redis 7.0's `parseExtendedExpireArgumentsOrReply` reads them.
fn parse_expire_flags(opts: &[Vec<u8>]) -> Result<ExpireFlags, CmdError> {
    let mut f = ExpireFlags::default();
    for opt in opts {
        if is(opt, "nx") {
            f.nx = true;
        } else if is(opt, "xx") {
            f.xx = true;
        } else if is(opt, "gt") {
            f.gt = true;
        } else if is(opt, "lt") {
            f.lt = true;
        } else {
            return Err(CmdError::new(format!(
                "ERR Unsupported option {}",
                printable(opt, 1024)
            )));
        }
    }
    if f.nx && (f.xx || f.gt || f.lt) {
        return Err(CmdError::new(
            "ERR NX and XX, GT or LT options at the same time are not compatible",
        ));
    }
    if f.gt && f.lt {
        return Err(CmdError::new(
            "ERR GT and LT options at the same time are not compatible",
        ));
    }
    Ok(f)
}

impl Command for Expire<'_> {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        let now = now_ms(ctx);
        let base = if self.relative { now_i64(now) } else { 0 };
        if self.when > i64::MAX - base {
            return Err(invalid_expire_time(self.name));
        }
        let when = self.when + base;
        let _locks = ctx.lock_keys(&[self.key]);
        let Some(entry) = read_raw(ctx, self.key)? else {
            return Ok(Reply::Int(0));
        };
        // Redis's -1: no expiry (an infinite TTL for GT and LT).
        let current = entry
            .expire_at
            .map_or(-1, |at| i64::try_from(at).unwrap_or(i64::MAX));
        let f = self.flags;
        let refused = (f.nx && current != -1)
            || (f.xx && current == -1)
            || (f.gt && (current == -1 || when <= current))
            || (f.lt && current != -1 && when >= current);
        if refused {
            return Ok(Reply::Int(0));
        }
        // A time in the past (or now) deletes the key.
        let at = u64::try_from(when).unwrap_or(0);
        restore_with_expiry(ctx, self.key, &entry.value, Some(at), now)?;
        Ok(Reply::Int(1))
    }
}

/// `TTL key`, `PTTL key`, `EXPIRETIME key` and `PEXPIRETIME key`: -2 for a missing key,
/// -1 for one without an expiry, else the time left (TTL, PTTL) or the expiry time
/// (EXPIRETIME, PEXPIRETIME); in seconds rounded to the nearest, as Redis rounds them.
#[derive(Debug)]
pub(super) struct Ttl<'a> {
    key: &'a [u8],
    ms: bool,
    absolute: bool,
}

impl<'a> Ttl<'a> {
    fn new(args: &'a [Vec<u8>], ms: bool, absolute: bool) -> Self {
        Ttl {
            key: args.first().map_or(&[][..], Vec::as_slice),
            ms,
            absolute,
        }
    }

    /// `TTL`.
    pub(super) fn seconds_left(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        Ok(Self::new(args, false, false))
    }

    /// `PTTL`.
    pub(super) fn milliseconds_left(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        Ok(Self::new(args, true, false))
    }

    /// `EXPIRETIME`.
    pub(super) fn at_seconds(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        Ok(Self::new(args, false, true))
    }

    /// `PEXPIRETIME`.
    pub(super) fn at_milliseconds(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        Ok(Self::new(args, true, true))
    }
}

impl Command for Ttl<'_> {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        let now = now_ms(ctx);
        let Some(entry) = read_raw(ctx, self.key)? else {
            return Ok(Reply::Int(-2));
        };
        let Some(at) = entry.expire_at else {
            return Ok(Reply::Int(-1));
        };
        let t = if self.absolute {
            i128::from(at)
        } else {
            (i128::from(at) - i128::from(now)).max(0)
        };
        let t = if self.ms { t } else { (t + 500) / 1000 };
        Ok(Reply::Int(i64::try_from(t).unwrap_or(i64::MAX)))
    }
}

/// `PERSIST key`: 1 when the key had an expiry and now has none, else 0.
#[derive(Debug)]
pub(super) struct Persist<'a> {
    key: &'a [u8],
}

impl<'a> Persist<'a> {
    pub(super) fn parse(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        Ok(Persist {
            key: args.first().map_or(&[][..], Vec::as_slice),
        })
    }
}

impl Command for Persist<'_> {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        let _locks = ctx.lock_keys(&[self.key]);
        match read_raw(ctx, self.key)? {
            Some(entry) if entry.expire_at.is_some() => {
                let now = now_ms(ctx);
                restore_with_expiry(ctx, self.key, &entry.value, None, now)?;
                Ok(Reply::Int(1))
            }
            _ => Ok(Reply::Int(0)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(ws: &[&str]) -> Vec<Vec<u8>> {
        ws.iter().map(|w| w.as_bytes().to_vec()).collect()
    }

    fn text(e: CmdError) -> String {
        e.text().into_owned()
    }

    fn set_options(ws: &[&str]) -> Result<StringOptions<'static>, String> {
        let owned: &'static [Vec<u8>] = Box::leak(words(ws).into_boxed_slice());
        parse_string_options(owned, true).map_err(text)
    }

    fn getex_options(ws: &[&str]) -> Result<StringOptions<'static>, String> {
        let owned: &'static [Vec<u8>] = Box::leak(words(ws).into_boxed_slice());
        parse_string_options(owned, false).map_err(text)
    }

    const SYNTAX: &str = "ERR syntax error";

    /// SET's options as Redis 7.0 reads them: repeats allowed, NX with XX and two
    /// different expiry options refused, a missing number a syntax error.
    #[test]
    fn set_options_follow_redis() {
        let o = set_options(&["nx", "GET", "ex", "10"]).unwrap();
        assert!(o.nx && o.get && !o.xx);
        assert_eq!(o.expiry, ExpiryOption::Set(Unit::Ex, b"10"));
        let o = set_options(&["EX", "10", "EX", "20"]).unwrap();
        assert_eq!(o.expiry, ExpiryOption::Set(Unit::Ex, b"20"));
        assert_eq!(
            set_options(&["KEEPTTL", "KEEPTTL", "NX", "NX", "GET", "GET"])
                .unwrap()
                .expiry,
            ExpiryOption::KeepTtl
        );
        assert_eq!(
            set_options(&["pxat", "x"]).unwrap().expiry,
            ExpiryOption::Set(Unit::PxAt, b"x")
        );
        for bad in [
            &["NX", "XX"][..],
            &["XX", "NX"],
            &["EX", "10", "PX", "20"],
            &["EXAT", "10", "PXAT", "20"],
            &["KEEPTTL", "EX", "10"],
            &["EX", "10", "KEEPTTL"],
            &["EX"],
            &["PX", "1", "PX"],
            &["PERSIST"],
            &["EX", "10", "foo"],
            &["foo", "EX", "abc"],
            &["NXX"],
        ] {
            assert_eq!(set_options(bad), Err(SYNTAX.into()), "{bad:?}");
        }
    }

    /// GETEX takes the expiry options and PERSIST, not SET's.
    #[test]
    fn getex_options_follow_redis() {
        assert_eq!(
            getex_options(&["persist", "PERSIST"]).unwrap().expiry,
            ExpiryOption::Persist
        );
        assert_eq!(
            getex_options(&["EXAT", "5"]).unwrap().expiry,
            ExpiryOption::Set(Unit::ExAt, b"5")
        );
        assert_eq!(getex_options(&[]).unwrap().expiry, ExpiryOption::Unset);
        for bad in [
            &["PERSIST", "EX", "10"][..],
            &["EX", "10", "PERSIST"],
            &["KEEPTTL"],
            &["NX"],
            &["XX"],
            &["GET"],
            &["EX", "10", "PX", "10"],
            &["EX"],
        ] {
            assert_eq!(getex_options(bad), Err(SYNTAX.into()), "{bad:?}");
        }
    }

    /// The numbers of SET's and GETEX's expiry options: an integer, positive, small enough
    /// in seconds; EX and PX from now must not pass `i64::MAX`.
    #[test]
    fn expiry_numbers_follow_redis() {
        let invalid = |name: &str| format!("ERR invalid expire time in '{name}' command");
        assert_eq!(expire_ms(b"10", Unit::Ex, "set").map_err(text), Ok(10_000));
        assert_eq!(expire_ms(b"10", Unit::Px, "set").map_err(text), Ok(10));
        for (arg, unit) in [
            (&b"0"[..], Unit::Ex),
            (b"-1", Unit::Px),
            (b"0", Unit::PxAt),
            (b"9223372036854775807", Unit::Ex),
            (b"9223372036854776", Unit::ExAt),
        ] {
            assert_eq!(
                expire_ms(arg, unit, "getex").map_err(text),
                Err(invalid("getex"))
            );
        }
        for arg in [&b"abc"[..], b"1.5", b"", b" 1", b"99999999999999999999"] {
            assert_eq!(
                expire_ms(arg, Unit::Ex, "set").map_err(text),
                Err("ERR value is not an integer or out of range".into())
            );
        }
        let now = 1_700_000_000_000;
        assert_eq!(
            expire_at(1_000, Unit::Px, now, "set").map_err(text),
            Ok(now + 1_000)
        );
        assert_eq!(
            expire_at(1_000, Unit::PxAt, now, "set").map_err(text),
            Ok(1_000)
        );
        assert_eq!(
            expire_at(i64::MAX, Unit::PxAt, now, "set").map_err(text),
            Ok(i64::MAX as u64)
        );
        assert_eq!(
            expire_at(i64::MAX, Unit::Px, now, "psetex").map_err(text),
            Err(invalid("psetex"))
        );
        assert_eq!(
            expire_at(9_223_372_036_854_774_000, Unit::Ex, now, "set").map_err(text),
            Err(invalid("set"))
        );
    }

    /// EXPIRE's options and number, checked in Redis's order: options, integer, range.
    #[test]
    fn expire_arguments_follow_redis() {
        let parse = |ws: &[&str], unit: Unit| {
            let owned: &'static [Vec<u8>] = Box::leak(words(ws).into_boxed_slice());
            Expire::parse(owned, "expire", unit).map_err(text)
        };
        let e = parse(&["k", "10", "nx", "NX"], Unit::Ex).unwrap();
        assert_eq!((e.when, e.relative), (10_000, true));
        assert!(e.flags.nx);
        let e = parse(&["k", "-5", "xx", "gt"], Unit::ExAt).unwrap();
        assert_eq!((e.when, e.relative), (-5_000, false));
        assert_eq!(
            parse(&["k", "10", "Foo", "bar"], Unit::Ex).unwrap_err(),
            "ERR Unsupported option Foo"
        );
        assert_eq!(
            parse(&["k", "abc", "foo"], Unit::Ex).unwrap_err(),
            "ERR Unsupported option foo"
        );
        let nx = "ERR NX and XX, GT or LT options at the same time are not compatible";
        for opts in [["nx", "xx"], ["gt", "nx"], ["NX", "lt"]] {
            let ws = ["k", "10", opts[0], opts[1]];
            assert_eq!(parse(&ws, Unit::Ex).unwrap_err(), nx);
        }
        assert_eq!(
            parse(&["k", "10", "gt", "lt"], Unit::Ex).unwrap_err(),
            "ERR GT and LT options at the same time are not compatible"
        );
        assert_eq!(
            parse(&["k", "abc"], Unit::Ex).unwrap_err(),
            "ERR value is not an integer or out of range"
        );
        assert_eq!(
            parse(&["k", "9223372036854776"], Unit::ExAt).unwrap_err(),
            "ERR invalid expire time in 'expire' command"
        );
        assert_eq!(
            parse(&["k", "-9223372036854776"], Unit::Ex).unwrap_err(),
            "ERR invalid expire time in 'expire' command"
        );
        assert!(parse(&["k", "-9223372036854775808"], Unit::Px).is_ok());
        assert!(parse(&["k", "9223372036854775807"], Unit::PxAt).is_ok());
    }
}
