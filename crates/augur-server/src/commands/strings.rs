//! Commands on values: GET, SET and its variants, MGET/MSET, ranges, APPEND and the counters.
//!
//! Every command that writes holds the locks of its keys (`Ctx::lock_keys`) from its read to
//! its write, so read-modify-write commands (INCR, APPEND, SET NX, …) are atomic with respect
//! to each other and to plain writes of the same keys. Engine access goes through `store.rs`
//! (a pipelined run defers its writes there).

use super::store::{read, write, Writes};
use super::{is, parse_i64, Ctx};

/// The most bytes a value may grow to by SETRANGE or APPEND (Redis's proto-max-bulk-len).
const MAX_STRING_BYTES: usize = 512 << 20;

/// Writes `value` under `key`.
fn put(ctx: &mut Ctx<'_>, key: &[u8], value: &[u8]) -> bool {
    let mut b = Writes::default();
    b.put(key, value);
    write(ctx, b)
}

/// `GET key`.
pub(super) fn get(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) {
    if let Ok(v) = read(ctx, &a[0]) {
        ctx.out.bulk_or_null(v.as_deref());
    }
}

/// `SET key value [NX|XX] [GET] [KEEPTTL]`; expiry options are refused.
pub(super) fn set(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) {
    let (key, value) = (&a[0], &a[1]);
    let (mut nx, mut xx, mut get) = (false, false, false);
    for opt in &a[2..] {
        if is(opt, "nx") && !xx {
            nx = true;
        } else if is(opt, "xx") && !nx {
            xx = true;
        } else if is(opt, "get") {
            get = true;
        } else if is(opt, "keepttl") {
            // Keys never expire, so keeping the TTL is a plain SET.
        } else if ["ex", "px", "exat", "pxat"].iter().any(|o| is(opt, o)) {
            ctx.out.error(
                "ERR augur-server does not support key expiry (EX, PX, EXAT, PXAT): keys never \
                 expire",
            );
            return;
        } else {
            ctx.out.error("ERR syntax error");
            return;
        }
    }
    let _locks = ctx.lock_keys(&[key]);
    if !nx && !xx && !get {
        if put(ctx, key, value) {
            ctx.out.ok();
        }
        return;
    }
    let Ok(old) = read(ctx, key) else { return };
    let allowed = !((nx && old.is_some()) || (xx && old.is_none()));
    if allowed && !put(ctx, key, value) {
        return;
    }
    if get {
        ctx.out.bulk_or_null(old.as_deref());
    } else if allowed {
        ctx.out.ok();
    } else {
        ctx.out.null();
    }
}

/// `SETNX key value`: 1 when set.
pub(super) fn setnx(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) {
    let _locks = ctx.lock_keys(&[&a[0]]);
    let Ok(old) = read(ctx, &a[0]) else { return };
    if old.is_some() {
        ctx.out.int(0);
    } else if put(ctx, &a[0], &a[1]) {
        ctx.out.int(1);
    }
}

/// `GETSET key value`.
pub(super) fn getset(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) {
    let _locks = ctx.lock_keys(&[&a[0]]);
    let Ok(old) = read(ctx, &a[0]) else { return };
    if put(ctx, &a[0], &a[1]) {
        ctx.out.bulk_or_null(old.as_deref());
    }
}

/// `MGET key...`.
pub(super) fn mget(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) {
    let mut values = Vec::with_capacity(a.len());
    for key in a {
        let Ok(v) = read(ctx, key) else { return };
        values.push(v);
    }
    ctx.out.array(values.len());
    for v in values {
        ctx.out.bulk_or_null(v.as_deref());
    }
}

/// `MSET key value [key value ...]`, atomically.
pub(super) fn mset(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) {
    if !a.len().is_multiple_of(2) {
        ctx.out
            .error("ERR wrong number of arguments for 'mset' command");
        return;
    }
    let keys: Vec<&Vec<u8>> = a.iter().step_by(2).collect();
    let _locks = ctx.lock_keys(&keys);
    let mut b = Writes::default();
    for pair in a.chunks(2) {
        b.put(&pair[0], &pair[1]);
    }
    if write(ctx, b) {
        ctx.out.ok();
    }
}

/// `MSETNX key value [key value ...]`: sets all (1) only when none exists, else none (0).
pub(super) fn msetnx(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) {
    if !a.len().is_multiple_of(2) {
        ctx.out
            .error("ERR wrong number of arguments for 'msetnx' command");
        return;
    }
    let keys: Vec<&Vec<u8>> = a.iter().step_by(2).collect();
    let _locks = ctx.lock_keys(&keys);
    for key in &keys {
        match read(ctx, key) {
            Ok(Some(_)) => {
                ctx.out.int(0);
                return;
            }
            Ok(None) => {}
            Err(()) => return,
        }
    }
    let mut b = Writes::default();
    for pair in a.chunks(2) {
        b.put(&pair[0], &pair[1]);
    }
    if write(ctx, b) {
        ctx.out.int(1);
    }
}

/// `STRLEN key`.
pub(super) fn strlen(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) {
    if let Ok(v) = read(ctx, &a[0]) {
        ctx.out.int(v.map_or(0, |v| v.len() as i64));
    }
}

/// `GETDEL key`.
pub(super) fn getdel(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) {
    let _locks = ctx.lock_keys(&[&a[0]]);
    let Ok(old) = read(ctx, &a[0]) else { return };
    if old.is_some() {
        let mut b = Writes::default();
        b.delete(&a[0]);
        if !write(ctx, b) {
            return;
        }
    }
    ctx.out.bulk_or_null(old.as_deref());
}

/// `GETRANGE key start end`, with Redis's index rules (negative from the end, clamped).
pub(super) fn getrange(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) {
    let Some(start) = parse_i64(ctx.out, &a[1]) else {
        return;
    };
    let Some(end) = parse_i64(ctx.out, &a[2]) else {
        return;
    };
    let Ok(v) = read(ctx, &a[0]) else { return };
    let v = v.unwrap_or_default();
    ctx.out.bulk(substring(&v, start, end));
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
pub(super) fn setrange(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) {
    let Some(offset) = parse_i64(ctx.out, &a[1]) else {
        return;
    };
    if offset < 0 {
        ctx.out.error("ERR offset is out of range");
        return;
    }
    let value = &a[2];
    let _locks = ctx.lock_keys(&[&a[0]]);
    let Ok(old) = read(ctx, &a[0]) else { return };
    if value.is_empty() {
        ctx.out.int(old.map_or(0, |v| v.len() as i64));
        return;
    }
    let offset = offset as usize;
    if offset.saturating_add(value.len()) > MAX_STRING_BYTES {
        ctx.out
            .error("ERR string exceeds maximum allowed size (proto-max-bulk-len)");
        return;
    }
    let mut v = old.unwrap_or_default();
    if v.len() < offset + value.len() {
        v.resize(offset + value.len(), 0);
    }
    v[offset..offset + value.len()].copy_from_slice(value);
    if put(ctx, &a[0], &v) {
        ctx.out.int(v.len() as i64);
    }
}

/// `APPEND key value`: the new length.
pub(super) fn append(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) {
    let _locks = ctx.lock_keys(&[&a[0]]);
    let Ok(old) = read(ctx, &a[0]) else { return };
    let mut v = old.unwrap_or_default();
    if v.len().saturating_add(a[1].len()) > MAX_STRING_BYTES {
        ctx.out
            .error("ERR string exceeds maximum allowed size (proto-max-bulk-len)");
        return;
    }
    v.extend_from_slice(&a[1]);
    if put(ctx, &a[0], &v) {
        ctx.out.int(v.len() as i64);
    }
}

/// `INCR key`.
pub(super) fn incr(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) {
    add(ctx, &a[0], 1);
}

/// `DECR key`.
pub(super) fn decr(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) {
    add(ctx, &a[0], -1);
}

/// `INCRBY key increment`.
pub(super) fn incrby(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) {
    if let Some(n) = parse_i64(ctx.out, &a[1]) {
        add(ctx, &a[0], n);
    }
}

/// `DECRBY key decrement`.
pub(super) fn decrby(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) {
    let Some(n) = parse_i64(ctx.out, &a[1]) else {
        return;
    };
    match n.checked_neg() {
        Some(neg) => add(ctx, &a[0], neg),
        None => ctx.out.error("ERR decrement would overflow"),
    }
}

/// Adds `delta` to the integer at `key` (0 when missing), atomically.
fn add(ctx: &mut Ctx<'_>, key: &[u8], delta: i64) {
    let _locks = ctx.lock_keys(&[key]);
    let Ok(old) = read(ctx, key) else { return };
    let current = match old {
        None => 0,
        Some(v) => match integer_value(&v) {
            Some(n) => n,
            None => {
                ctx.out.error("ERR value is not an integer or out of range");
                return;
            }
        },
    };
    let Some(new) = current.checked_add(delta) else {
        ctx.out.error("ERR increment or decrement would overflow");
        return;
    };
    if put(ctx, key, new.to_string().as_bytes()) {
        ctx.out.int(new);
    }
}

/// A stored value as Redis's counters read it: a canonical decimal i64 (no sign `+`, no
/// leading zeros, no spaces, at most 20 characters).
fn integer_value(v: &[u8]) -> Option<i64> {
    if v.is_empty() || v.len() > 20 {
        return None;
    }
    let s = std::str::from_utf8(v).ok()?;
    if s.starts_with('+') || (s.len() > 1 && (s.starts_with('0') || s.starts_with("-0"))) {
        return None;
    }
    s.parse().ok()
}

/// `INCRBYFLOAT key increment`: the new value, as a bulk string.
pub(super) fn incrbyfloat(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) {
    let Some(incr) = float_value(&a[1]) else {
        ctx.out.error("ERR value is not a valid float");
        return;
    };
    let _locks = ctx.lock_keys(&[&a[0]]);
    let Ok(old) = read(ctx, &a[0]) else { return };
    let current = match old {
        None => 0.0,
        Some(v) => match float_value(&v) {
            Some(f) => f,
            None => {
                ctx.out.error("ERR value is not a valid float");
                return;
            }
        },
    };
    let new = current + incr;
    if !new.is_finite() {
        ctx.out.error("ERR increment would produce NaN or Infinity");
        return;
    }
    let text = crate::resp::format_double(new);
    if put(ctx, &a[0], text.as_bytes()) {
        ctx.out.bulk(text.as_bytes());
    }
}

/// A float argument or stored value: a finite decimal without spaces (Redis refuses NaN).
fn float_value(v: &[u8]) -> Option<f64> {
    let s = std::str::from_utf8(v).ok()?;
    if s.is_empty() || s.trim() != s {
        return None;
    }
    let f: f64 = s.parse().ok()?;
    (!f.is_nan()).then_some(f)
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
        assert_eq!(float_value(b"10.5"), Some(10.5));
        assert_eq!(float_value(b"5.0e3"), Some(5000.0));
        assert_eq!(float_value(b"nan"), None);
        assert_eq!(float_value(b" 1"), None);
    }
}
