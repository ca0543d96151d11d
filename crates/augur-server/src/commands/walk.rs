//! Ordered walks of engine key ranges, with a run's own writes merged in: the one
//! implementation under the key walks (SCAN, KEYS, DBSIZE, FLUSHDB: `keys.rs`) and the
//! field walks of a hash (HGETALL, HKEYS, HVALS, HSCAN, HRANDFIELD: `hashes.rs`).
//!
//! Inside a run or a transaction (`store.rs`) the run's puts appear and its deletes hide
//! keys, so the walk sees the run's earlier commands. Expired keys are never seen: the
//! engine hides them, and the run's own are dropped.

use super::store::now_ms;
use super::{CmdError, Ctx};
use augur::ScanOptions;
use std::ops::Bound;

/// The engine keys a walk visits: those `>= start`, below `end` (none: no bound) that
/// begin with `prefix`. REQUIRES: `start` is at or after the first key with `prefix` (the
/// walk stops at the first key without it).
pub(super) struct Range<'a> {
    /// The first key.
    pub(super) start: &'a [u8],
    /// The key the walk stops before.
    pub(super) end: Option<&'a [u8]>,
    /// Every visited key begins with it.
    pub(super) prefix: &'a [u8],
    /// Values are not needed (no value-log read; `each` gets empty values).
    pub(super) keys_only: bool,
}

/// Calls `each(engine_key, stored_value, expire_at)` on every live key of `range` in key
/// order until it returns false. Returns whether the walk reached the end of the range.
pub(super) fn walk(
    ctx: &Ctx<'_>,
    range: &Range<'_>,
    mut each: impl FnMut(&[u8], &[u8], Option<u64>) -> bool,
) -> Result<bool, CmdError> {
    let now = now_ms(ctx);
    let own = ctx
        .pending
        .as_ref()
        .map(|p| p.written_in(range.start, range.end, range.prefix, now))
        .unwrap_or_default();
    let mut own = own.into_iter().peekable();
    let options = ScanOptions {
        keys_only: range.keys_only,
        ..ScanOptions::default()
    };
    let upper = range
        .end
        .map_or(Bound::Unbounded, |e| Bound::Excluded(e.to_vec()));
    let db = ctx.server.db()?;
    let mut scan = db.scan_with((Bound::Included(range.start.to_vec()), upper), &options);
    // The stored key and value, copied out of the scan so that its expiry time can be asked.
    let (mut stored_key, mut stored_value) = (Vec::new(), Vec::new());
    loop {
        let in_range = match scan.next()? {
            Some((key, value)) if key.starts_with(range.prefix) => {
                stored_key.clear();
                stored_key.extend_from_slice(key);
                stored_value.clear();
                stored_value.extend_from_slice(value);
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
            if let Some(entry) = present {
                if !each(&key, &entry.value, entry.expire_at) {
                    return Ok(false);
                }
            }
        }
        match stored {
            None => return Ok(true),
            Some(key) if !replaced && !each(key, &stored_value, scan.expire_at()) => {
                return Ok(false)
            }
            Some(_) => {}
        }
    }
}
