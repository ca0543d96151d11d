//! Commands that walk a hash's fields: HGETALL, HKEYS, HVALS, HSCAN and HRANDFIELD, and the
//! copy of a hash that RENAME and COPY make. A hash's fields are one range of engine keys
//! (`encoding::fields_prefix`), walked in field byte order (`walk.rs`, so a run's own writes
//! are seen).
//!
//! Order: Redis returns a small hash's fields in insertion order and a large one's in hash
//! table order; Augur returns them in byte order of the field names. No client may rely on
//! either, and the differential tests compare these replies as sets.
//!
//! HSCAN's cursor is a position in field order, issued and resolved like SCAN's
//! (`cursor.rs`, `keys.rs`); a hash of at most [`HSCAN_ALL_FIELDS`] fields is returned
//! whole in one call with cursor 0, as Redis returns a small (listpack) hash. HRANDFIELD
//! reads the hash's field names (and the values it returns): O(fields), where Redis is
//! O(count).

use super::hashes::{read_field, read_hash, Hash};
use super::keys::{invalid_cursor, parse_scan_options, ScanFilter};
use super::store::Writes;
use super::walk::{walk, Range};
use super::{is, CmdError, Command, Ctx, Protocol, Reply};
use crate::cursor::resume_position;
use crate::encoding::{fields_prefix, HashMeta};
use crate::glob;

/// A hash of at most this many fields is returned whole by one HSCAN call (Redis's
/// `hash-max-listpack-entries`).
pub const HSCAN_ALL_FIELDS: u64 = 128;

/// Most elements HRANDFIELD with a negative count returns (Redis has no bound and would
/// build a reply of any size).
pub const MAX_RANDOM_FIELDS: u64 = 1 << 24;

/// The argument at `i` (the table's arity guarantees it).
fn arg(args: &[Vec<u8>], i: usize) -> &[u8] {
    args.get(i).map_or(&[], Vec::as_slice)
}

/// Calls `each(field, value)` on the fields of the hash `key` (record `meta`) from the
/// field `from` on, in field order, until it returns false; values are empty with
/// `keys_only`.
fn fields(
    ctx: &Ctx<'_>,
    key: &[u8],
    meta: HashMeta,
    from: &[u8],
    keys_only: bool,
    mut each: impl FnMut(&[u8], &[u8]) -> bool,
) -> Result<(), CmdError> {
    let prefix = fields_prefix(key, meta.version);
    let mut start = prefix.clone();
    start.extend_from_slice(from);
    let range = Range {
        start: &start,
        end: None,
        prefix: &prefix,
        keys_only,
    };
    walk(ctx, &range, |engine, value, _| {
        each(engine.get(prefix.len()..).unwrap_or_default(), value)
    })?;
    Ok(())
}

/// Fields and their values.
type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

/// Every field and value of `hash` at `key`.
fn all_fields(ctx: &Ctx<'_>, key: &[u8], hash: Hash) -> Result<Pairs, CmdError> {
    let mut out = Vec::with_capacity(usize::try_from(hash.meta.len).unwrap_or(0).min(1 << 16));
    fields(ctx, key, hash.meta, &[], false, |f, v| {
        out.push((f.to_vec(), v.to_vec()));
        true
    })?;
    Ok(out)
}

/// Adds to `b` a copy of the hash `from` (record `meta`) at `to`: its fields under a new
/// version and a record with `expire_at` (RENAME, COPY). O(fields), where Redis's RENAME is
/// O(1): a field's key names its hash.
pub(super) fn copy_hash(
    ctx: &mut Ctx<'_>,
    b: &mut Writes,
    from: &[u8],
    meta: HashMeta,
    to: &[u8],
    expire_at: Option<u64>,
) -> Result<(), CmdError> {
    let hash = Hash { meta, expire_at };
    let pairs = all_fields(ctx, from, hash)?;
    let version = ctx.server.hash_versions.load().next(&*ctx.server.db()?)?;
    for (field, value) in &pairs {
        b.put_field(to, version, field, value);
    }
    let copied = HashMeta {
        version,
        len: pairs.len() as u64,
    };
    b.put_hash(to, copied, expire_at);
    Ok(())
}

/// `HGETALL key` (a map of fields to values: RESP3 `%`, a flat array in RESP2), `HKEYS key`
/// and `HVALS key`.
pub(super) struct HGetAll<'a> {
    key: &'a [u8],
    what: Listing,
}

/// What HGETALL, HKEYS and HVALS list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Listing {
    Pairs,
    Fields,
    Values,
}

impl<'a> HGetAll<'a> {
    fn new(args: &'a [Vec<u8>], what: Listing) -> Self {
        HGetAll {
            key: arg(args, 0),
            what,
        }
    }

    /// `HGETALL`.
    pub(super) fn parse(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        Ok(Self::new(args, Listing::Pairs))
    }

    /// `HKEYS`.
    pub(super) fn hkeys(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        Ok(Self::new(args, Listing::Fields))
    }

    /// `HVALS`.
    pub(super) fn hvals(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        Ok(Self::new(args, Listing::Values))
    }
}

impl Command for HGetAll<'_> {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        let Some(hash) = read_hash(ctx, self.key)? else {
            return Ok(match self.what {
                Listing::Pairs => Reply::Map(Vec::new()),
                _ => Reply::Array(Vec::new()),
            });
        };
        let mut out = Vec::new();
        let keys_only = self.what == Listing::Fields;
        fields(ctx, self.key, hash.meta, &[], keys_only, |f, v| {
            out.push((f.to_vec(), v.to_vec()));
            true
        })?;
        Ok(match self.what {
            Listing::Pairs => Reply::Map(
                out.into_iter()
                    .map(|(f, v)| (Reply::Bulk(f), Reply::Bulk(v)))
                    .collect(),
            ),
            Listing::Fields => Reply::bulk_array(out.into_iter().map(|(f, _)| f)),
            Listing::Values => Reply::bulk_array(out.into_iter().map(|(_, v)| v)),
        })
    }
}

/// `HSCAN key cursor [MATCH pattern] [COUNT count]`: `[cursor, [field, value, …]]`.
pub(super) struct HScan<'a> {
    key: &'a [u8],
    cursor: u64,
    /// The options, checked only once the key is found to hold a hash (Redis answers an
    /// empty scan for a missing key whatever the options).
    options: Result<ScanFilter<'a>, CmdError>,
}

impl<'a> HScan<'a> {
    /// As Redis 7.0's `hscanCommand`: the cursor first, the options later.
    pub(super) fn parse(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        let cursor = std::str::from_utf8(arg(args, 1))
            .ok()
            .and_then(|s| s.parse::<u64>().ok())
            .ok_or_else(invalid_cursor)?;
        Ok(HScan {
            key: arg(args, 0),
            cursor,
            options: parse_scan_options(args.get(2..).unwrap_or_default(), false),
        })
    }
}

impl Command for HScan<'_> {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        let from = ctx
            .server
            .cursors
            .resolve(self.cursor)
            .map_err(|_| invalid_cursor())?;
        let empty = || Reply::Array(vec![Reply::bulk("0"), Reply::Array(vec![])]);
        let Some(hash) = read_hash(ctx, self.key)? else {
            return Ok(empty());
        };
        let options = self.options?;
        let pattern = options.pattern.filter(|p| *p != b"*");
        let count = if hash.meta.len <= HSCAN_ALL_FIELDS {
            usize::MAX
        } else {
            options.count
        };
        let (mut found, mut seen) = (Vec::new(), 0usize);
        let (mut last, mut resume) = (None::<Vec<u8>>, None);
        let from = from.unwrap_or_default();
        fields(ctx, self.key, hash.meta, &from, false, |field, value| {
            if let Some(last) = &last {
                resume = Some(resume_position(last, field));
                return false;
            }
            if pattern.is_none_or(|p| glob::matches(p, field)) {
                found.push(Reply::bulk(field));
                found.push(Reply::bulk(value));
            }
            seen += 1;
            if seen >= count {
                last = Some(field.to_vec());
            }
            true
        })?;
        let cursor = resume.map_or(0, |p| ctx.server.cursors.issue(&p));
        Ok(Reply::Array(vec![
            Reply::bulk(cursor.to_string()),
            Reply::Array(found),
        ]))
    }
}

/// `HRANDFIELD key [count [WITHVALUES]]`, as Redis 7.0's `hrandfieldCommand`: one random
/// field (or a null); with a count, that many distinct fields (at most the hash's), or with
/// a negative count that many picks that may repeat; with WITHVALUES their values too (RESP2:
/// a flat array; RESP3: an array of pairs).
pub(super) struct HRandField<'a> {
    key: &'a [u8],
    count: Option<i64>,
    with_values: bool,
}

impl<'a> HRandField<'a> {
    pub(super) fn parse(args: &'a [Vec<u8>]) -> Result<Self, CmdError> {
        let key = arg(args, 0);
        let Some(count) = args.get(1) else {
            return Ok(HRandField {
                key,
                count: None,
                with_values: false,
            });
        };
        let count = super::parse_i64(count)?;
        if count == i64::MIN {
            return Err(CmdError::new(
                "ERR value is out of range, value must between -9223372036854775807 and \
                 9223372036854775807",
            ));
        }
        let with_values = match args.get(2) {
            None => false,
            Some(w) if args.len() == 3 && is(w, "withvalues") => true,
            Some(_) => return Err(CmdError::syntax()),
        };
        if with_values && !(-(i64::MAX / 2)..=i64::MAX / 2).contains(&count) {
            return Err(CmdError::new("ERR value is out of range"));
        }
        Ok(HRandField {
            key,
            count: Some(count),
            with_values,
        })
    }
}

impl Command for HRandField<'_> {
    fn execute(self, ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
        let hash = read_hash(ctx, self.key)?;
        let Some(count) = self.count else {
            let Some(hash) = hash else {
                return Ok(Reply::Null);
            };
            let names = field_names(ctx, self.key, hash)?;
            let pick = Random::new().below(names.len());
            return Ok(Reply::bulk_or_null(names.into_iter().nth(pick)));
        };
        let Some(hash) = hash.filter(|_| count != 0) else {
            return Ok(Reply::Array(Vec::new()));
        };
        let len = hash.meta.len;
        let picks: Vec<(Vec<u8>, Option<Vec<u8>>)> = if count >= 0 && count.unsigned_abs() >= len {
            all_fields(ctx, self.key, hash)?
                .into_iter()
                .map(|(f, v)| (f, Some(v)))
                .collect()
        } else {
            if count.unsigned_abs() > MAX_RANDOM_FIELDS {
                return Err(CmdError::new(format!(
                    "ERR HRANDFIELD count is too large for augur-server (at most \
                     {MAX_RANDOM_FIELDS} random fields)"
                )));
            }
            let names = field_names(ctx, self.key, hash)?;
            let mut random = Random::new();
            let wanted = count.unsigned_abs() as usize;
            let chosen: Vec<usize> = if count < 0 {
                (0..wanted).map(|_| random.below(names.len())).collect()
            } else {
                random.distinct(names.len(), wanted)
            };
            chosen
                .into_iter()
                .filter_map(|i| names.get(i).map(|f| (f.clone(), None)))
                .collect()
        };
        let mut out = Vec::with_capacity(picks.len() * 2);
        let pairs = self.with_values && ctx.client.protocol == Protocol::Resp3;
        for (field, value) in picks {
            if !self.with_values {
                out.push(Reply::Bulk(field));
                continue;
            }
            let value = match value {
                Some(v) => v,
                None => read_field(ctx, self.key, hash.meta, &field)?.unwrap_or_default(),
            };
            if pairs {
                out.push(Reply::Array(vec![Reply::Bulk(field), Reply::Bulk(value)]));
            } else {
                out.extend([Reply::Bulk(field), Reply::Bulk(value)]);
            }
        }
        Ok(Reply::Array(out))
    }
}

/// Every field name of `hash` at `key`, in order.
fn field_names(ctx: &Ctx<'_>, key: &[u8], hash: Hash) -> Result<Vec<Vec<u8>>, CmdError> {
    let mut names = Vec::with_capacity(usize::try_from(hash.meta.len).unwrap_or(0).min(1 << 16));
    fields(ctx, key, hash.meta, &[], true, |f, _| {
        names.push(f.to_vec());
        true
    })?;
    Ok(names)
}

/// A small pseudo-random generator (xorshift64*), seeded per command from the standard
/// library's randomly keyed hasher and the clock: HRANDFIELD needs no cryptographic
/// strength, and the server no dependency for it.
struct Random(u64);

impl Random {
    fn new() -> Random {
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
        );
        Random(h.finish() | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number in `0..n` (0 for `n == 0`).
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        (self.next() % n as u64) as usize
    }

    /// `k` distinct numbers of `0..n` (`k <= n`) in random order: a partial Fisher–Yates
    /// shuffle.
    fn distinct(&mut self, n: usize, k: usize) -> Vec<usize> {
        let mut all: Vec<usize> = (0..n).collect();
        let k = k.min(n);
        for i in 0..k {
            let j = i + self.below(n - i);
            all.swap(i, j);
        }
        all.truncate(k);
        all
    }
}

#[cfg(test)]
mod tests {
    use super::Random;

    #[test]
    fn random_picks_stay_in_range_and_distinct_ones_do_not_repeat() {
        let mut r = Random::new();
        for n in [1, 2, 7, 100] {
            for _ in 0..50 {
                assert!(r.below(n) < n);
            }
            let mut d = r.distinct(n, n / 2 + 1);
            assert_eq!(d.len(), n / 2 + 1);
            d.sort_unstable();
            d.dedup();
            assert_eq!(d.len(), n / 2 + 1);
        }
        assert_eq!(r.below(0), 0);
    }
}
