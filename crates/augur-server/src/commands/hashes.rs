//! Commands on hashes that read or write fields one by one: HSET, HMSET, HSETNX, HGET,
//! HMGET, HDEL, HLEN, HEXISTS, HSTRLEN, HINCRBY, HINCRBYFLOAT. The commands that walk a
//! hash's fields (HGETALL, HKEYS, HVALS, HSCAN, HRANDFIELD) are in `hash_walks.rs`.
//!
//! A hash is a metadata record at its key (its version and field count, and the key's
//! expiry time) and one engine key per field (`crate::encoding`). So HGET is two point
//! reads (the record, then the field); HSET reads the record and each field it sets (to
//! count the new ones, as its reply and HLEN need), then writes the fields and, when the
//! count changed, the record; HDEL of the last field deletes the record alone. A new hash
//! takes a version no hash of the database had (`encoding::layout::Versions`), so fields of
//! an earlier hash of the same name, still on disk until compaction drops them, are never
//! read as its own.
//!
//! Every command that writes holds its key's lock from its first read to its write, as the
//! string commands do; errors and their order (arity, then the arguments, then the key's
//! type) are Redis 7.0's `t_hash.c`, checked against redis-server 7.0.15
//! (`tests/hashes_against_redis.rs`).

use super::store::{read_engine, read_value, write, wrong_type, Writes};
use super::strings::integer_value;
use super::{CmdError, Command, Ctx, Reply};
use crate::encoding::{field_key, HashMeta, Value};
use crate::long_double::LongDouble;
use std::collections::HashSet;

/// The argument at `i` (the table's arity guarantees it).
fn arg(args: &[Vec<u8>], i: usize) -> &[u8] {
    args.get(i).map_or(&[], Vec::as_slice)
}

/// A hash's record and its key's expiry time.
#[derive(Debug, Clone, Copy)]
pub(super) struct Hash {
    pub(super) meta: HashMeta,
    pub(super) expire_at: Option<u64>,
}

/// The hash at `key`: `None` when the key is missing, `WRONGTYPE` for another type.
pub(super) fn read_hash(ctx: &mut Ctx<'_>, key: &[u8]) -> Result<Option<Hash>, CmdError> {
    match read_value(ctx, key)? {
        None => Ok(None),
        Some(typed) => match typed.value {
            Value::Hash(meta) => Ok(Some(Hash {
                meta,
                expire_at: typed.expire_at,
            })),
            Value::String(_) => Err(wrong_type()),
        },
    }
}

/// The hash at `key`, or a new empty one (a fresh version, no fields, no expiry) when the
/// key is missing: what a command that adds fields writes to. `WRONGTYPE` for another type.
fn read_or_new_hash(ctx: &mut Ctx<'_>, key: &[u8]) -> Result<Hash, CmdError> {
    if let Some(hash) = read_hash(ctx, key)? {
        return Ok(hash);
    }
    let version = ctx.server.hash_versions.load().next(&*ctx.server.db()?)?;
    Ok(Hash {
        meta: HashMeta { version, len: 0 },
        expire_at: None,
    })
}

/// The value of `field` of the hash `key` (whose record is `meta`).
pub(super) fn read_field(
    ctx: &Ctx<'_>,
    key: &[u8],
    meta: HashMeta,
    field: &[u8],
) -> Result<Option<Vec<u8>>, CmdError> {
    Ok(read_engine(ctx, &field_key(key, meta.version, field))?.map(|e| e.value))
}

/// Adds to `b` the record of `hash` at `key` with `len` fields, when that changed it: the
/// record itself when fields remain, its delete when none does (the key goes, as in Redis;
/// its fields are then garbage for compaction, not deleted one by one).
fn put_record(b: &mut Writes, key: &[u8], hash: Hash, len: u64) {
    if len == hash.meta.len {
        return;
    }
    if len == 0 {
        b.delete(key);
    } else {
        let meta = HashMeta {
            version: hash.meta.version,
            len,
        };
        b.put_hash(key, meta, hash.expire_at);
    }
}

/// `HSET key field value [field value ...]` (the number of new fields) and its deprecated
/// alias `HMSET` (`OK`).
pub(super) struct HSet<'a> {
    key: &'a [u8],
    pairs: &'a [Vec<u8>],
    /// `HMSET`: answers `OK`.
    ok: bool,
}

impl<'a> HSet<'a> {
    /// `HSET`.
    pub(super) fn parse(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        Self::pairs(args, "hset", false)
    }

    /// `HMSET`.
    pub(super) fn hmset(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        Self::pairs(args, "hmset", true)
    }

    fn pairs(args: &'a [Vec<u8>], name: &str, ok: bool) -> Result<Self, CmdError> {
        let pairs = args.get(1..).unwrap_or_default();
        if !pairs.len().is_multiple_of(2) {
            return Err(CmdError::arity(name));
        }
        Ok(HSet {
            key: arg(args, 0),
            pairs,
            ok,
        })
    }
}

impl Command for HSet<'_> {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        let _locks = ctx.lock_keys(&[self.key]);
        let hash = read_or_new_hash(ctx, self.key)?;
        let version = hash.meta.version;
        let mut b = Writes::default();
        // A field named twice is new once (the later value wins, as the batch's later put).
        let mut added: HashSet<&[u8]> = HashSet::new();
        for pair in self.pairs.chunks(2) {
            let [field, value] = pair else { continue };
            if !added.contains(field.as_slice())
                && read_field(ctx, self.key, hash.meta, field)?.is_none()
            {
                added.insert(field);
            }
            b.put_field(self.key, version, field, value);
        }
        put_record(&mut b, self.key, hash, hash.meta.len + added.len() as u64);
        write(ctx, b)?;
        Ok(if self.ok {
            Reply::Ok
        } else {
            Reply::Int(added.len() as i64)
        })
    }
}

/// `HSETNX key field value`: 1 when the field was new and is set, else 0.
pub(super) struct HSetNx<'a> {
    key: &'a [u8],
    field: &'a [u8],
    value: &'a [u8],
}

impl<'a> HSetNx<'a> {
    pub(super) fn parse(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        Ok(HSetNx {
            key: arg(args, 0),
            field: arg(args, 1),
            value: arg(args, 2),
        })
    }
}

impl Command for HSetNx<'_> {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        let _locks = ctx.lock_keys(&[self.key]);
        let hash = read_or_new_hash(ctx, self.key)?;
        if read_field(ctx, self.key, hash.meta, self.field)?.is_some() {
            return Ok(Reply::Int(0));
        }
        let mut b = Writes::default();
        b.put_field(self.key, hash.meta.version, self.field, self.value);
        put_record(&mut b, self.key, hash, hash.meta.len + 1);
        write(ctx, b)?;
        Ok(Reply::Int(1))
    }
}

/// `HGET key field`, `HEXISTS key field` and `HSTRLEN key field`: one field's value, whether
/// it exists, or its length.
pub(super) struct HGet<'a> {
    key: &'a [u8],
    field: &'a [u8],
    answer: FieldAnswer,
}

/// What HGET, HEXISTS and HSTRLEN answer of a field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FieldAnswer {
    Value,
    Exists,
    Length,
}

impl<'a> HGet<'a> {
    fn new(args: &'a [Vec<u8>], answer: FieldAnswer) -> Self {
        HGet {
            key: arg(args, 0),
            field: arg(args, 1),
            answer,
        }
    }

    /// `HGET`.
    pub(super) fn parse(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        Ok(Self::new(args, FieldAnswer::Value))
    }

    /// `HEXISTS`.
    pub(super) fn hexists(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        Ok(Self::new(args, FieldAnswer::Exists))
    }

    /// `HSTRLEN`.
    pub(super) fn hstrlen(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        Ok(Self::new(args, FieldAnswer::Length))
    }
}

impl Command for HGet<'_> {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        let value = match read_hash(ctx, self.key)? {
            Some(hash) => read_field(ctx, self.key, hash.meta, self.field)?,
            None => None,
        };
        Ok(match self.answer {
            FieldAnswer::Value => Reply::bulk_or_null(value),
            FieldAnswer::Exists => Reply::Int(i64::from(value.is_some())),
            FieldAnswer::Length => Reply::Int(value.map_or(0, |v| v.len() as i64)),
        })
    }
}

/// `HMGET key field [field ...]`: each field's value or a null.
pub(super) struct HMGet<'a> {
    key: &'a [u8],
    fields: &'a [Vec<u8>],
}

impl<'a> HMGet<'a> {
    pub(super) fn parse(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        Ok(HMGet {
            key: arg(args, 0),
            fields: args.get(1..).unwrap_or_default(),
        })
    }
}

impl Command for HMGet<'_> {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        let hash = read_hash(ctx, self.key)?;
        let mut values = Vec::with_capacity(self.fields.len());
        for field in self.fields {
            let value = match hash {
                Some(hash) => read_field(ctx, self.key, hash.meta, field)?,
                None => None,
            };
            values.push(Reply::bulk_or_null(value));
        }
        Ok(Reply::Array(values))
    }
}

/// `HDEL key field [field ...]`: how many of the fields existed (and are deleted).
pub(super) struct HDel<'a> {
    key: &'a [u8],
    fields: &'a [Vec<u8>],
}

impl<'a> HDel<'a> {
    pub(super) fn parse(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        Ok(HDel {
            key: arg(args, 0),
            fields: args.get(1..).unwrap_or_default(),
        })
    }
}

impl Command for HDel<'_> {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        let _locks = ctx.lock_keys(&[self.key]);
        let Some(hash) = read_hash(ctx, self.key)? else {
            return Ok(Reply::Int(0));
        };
        let mut removed: HashSet<&[u8]> = HashSet::new();
        for field in self.fields {
            if !removed.contains(field.as_slice())
                && read_field(ctx, self.key, hash.meta, field)?.is_some()
            {
                removed.insert(field);
            }
        }
        if removed.is_empty() {
            return Ok(Reply::Int(0));
        }
        let len = hash.meta.len.saturating_sub(removed.len() as u64);
        let mut b = Writes::default();
        if len > 0 {
            for field in &removed {
                b.delete_field(self.key, hash.meta.version, field);
            }
        }
        put_record(&mut b, self.key, hash, len);
        write(ctx, b)?;
        Ok(Reply::Int(removed.len() as i64))
    }
}

/// `HLEN key`: the number of fields (0 for a missing key).
pub(super) struct HLen<'a> {
    key: &'a [u8],
}

impl<'a> HLen<'a> {
    pub(super) fn parse(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        Ok(HLen { key: arg(args, 0) })
    }
}

impl Command for HLen<'_> {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        let len = read_hash(ctx, self.key)?.map_or(0, |h| h.meta.len);
        Ok(Reply::Int(i64::try_from(len).unwrap_or(i64::MAX)))
    }
}

/// `HINCRBY key field increment`: adds to the integer in a field (0 when missing).
pub(super) struct HIncrBy<'a> {
    key: &'a [u8],
    field: &'a [u8],
    delta: i64,
}

impl<'a> HIncrBy<'a> {
    pub(super) fn parse(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        Ok(HIncrBy {
            key: arg(args, 0),
            field: arg(args, 1),
            delta: super::parse_i64(arg(args, 2))?,
        })
    }
}

/// Writes `value` to `field` of `hash` (one more field when it was missing).
fn put_one(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    hash: Hash,
    field: &[u8],
    value: &[u8],
    was_missing: bool,
) -> Result<(), CmdError> {
    let mut b = Writes::default();
    b.put_field(key, hash.meta.version, field, value);
    put_record(&mut b, key, hash, hash.meta.len + u64::from(was_missing));
    write(ctx, b)
}

impl Command for HIncrBy<'_> {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        let _locks = ctx.lock_keys(&[self.key]);
        let hash = read_or_new_hash(ctx, self.key)?;
        let old = read_field(ctx, self.key, hash.meta, self.field)?;
        let current = match &old {
            Some(v) => {
                integer_value(v).ok_or_else(|| CmdError::new("ERR hash value is not an integer"))?
            }
            None => 0,
        };
        let new = current
            .checked_add(self.delta)
            .ok_or_else(|| CmdError::new("ERR increment or decrement would overflow"))?;
        let text = new.to_string();
        put_one(
            ctx,
            self.key,
            hash,
            self.field,
            text.as_bytes(),
            old.is_none(),
        )?;
        Ok(Reply::Int(new))
    }
}

/// `HINCRBYFLOAT key field increment`: adds to the number in a field (0 when missing), in x87
/// `long double` and written as Redis writes it (`crate::long_double`, as INCRBYFLOAT).
pub(super) struct HIncrByFloat<'a> {
    key: &'a [u8],
    field: &'a [u8],
    incr: LongDouble,
}

impl<'a> HIncrByFloat<'a> {
    pub(super) fn parse(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        let incr = LongDouble::parse(arg(args, 2))
            .ok_or_else(|| CmdError::new("ERR value is not a valid float"))?;
        if !incr.is_finite() {
            return Err(CmdError::new("ERR value is NaN or Infinity"));
        }
        Ok(HIncrByFloat {
            key: arg(args, 0),
            field: arg(args, 1),
            incr,
        })
    }
}

impl Command for HIncrByFloat<'_> {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        let _locks = ctx.lock_keys(&[self.key]);
        let hash = read_or_new_hash(ctx, self.key)?;
        let old = read_field(ctx, self.key, hash.meta, self.field)?;
        let current = match &old {
            Some(v) => LongDouble::parse(v)
                .ok_or_else(|| CmdError::new("ERR hash value is not a float"))?,
            None => LongDouble::ZERO,
        };
        let new = current + self.incr;
        if !new.is_finite() {
            return Err(CmdError::new("ERR increment would produce NaN or Infinity"));
        }
        let text = new.to_human();
        put_one(
            ctx,
            self.key,
            hash,
            self.field,
            text.as_bytes(),
            old.is_none(),
        )?;
        Ok(Reply::bulk(text))
    }
}
