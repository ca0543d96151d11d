//! Reclaiming expired values (`crate::expiry`): every compaction rewrites the expired values
//! it meets as tombstones (and drops them where nothing below can hold their key), but a
//! table in a level nothing compacts into again — the last level above all — would keep
//! them for ever. This part rewrites in place the tables the manifest says are dense with
//! expired values (`FileMeta::expiry`), from the last level up, so the tombstones a rewrite
//! leaves in a level have nothing left below to shadow and the next level's rewrite drops
//! them too; then L0, merged down, where the last flushes of a quiet database would
//! otherwise keep them.

use super::gc::in_place;
use super::DbInner;
use crate::compaction::l0_compaction;
use crate::error::Result;
use crate::version::{CompactionStyle, TableFile};
use std::sync::Arc;

/// A table is dense with expired values when at least this share of its entries have
/// expired (by its expiry summary's estimate).
const DENSE_EXPIRED_SHARE: f64 = 0.5;

impl DbInner {
    /// Rewrites in place one run of tables of levels 1 and below holding values expired at
    /// `now`: with `all`, every table holding any (a manual compaction's promise); otherwise
    /// only tables dense with them. Deepest level first; then L0's files, merged down (in a
    /// leveled database). Returns whether a compaction ran.
    ///
    /// A rewrite judges expiry at a time no earlier than `now`, so its outputs hold no value
    /// expired at `now`: called again with the same `now`, this never picks them again.
    ///
    /// # Errors
    /// As a compaction.
    pub(super) fn compact_one_expired(&self, all: bool, now: u64) -> Result<bool> {
        let version = self.versions.current();
        for level in (1..version.levels.len()).rev() {
            let files: Vec<Arc<TableFile>> = version.levels[level]
                .iter()
                .filter(|f| holds_expired(f, now, all))
                .cloned()
                .collect();
            let Some(c) = in_place(&version, level, files) else {
                continue;
            };
            self.run_compaction(&c, &version)?;
            return Ok(true);
        }
        // L0 last: a leveled database's last flushes stay in L0 until more writes arrive, so
        // expired values there would never be reclaimed. They are merged down as a normal L0
        // compaction would (which rewrites them as tombstones, and drops those with nothing
        // below). FLSM's L0 goes through its guards: left to its own compactions.
        if version.style == CompactionStyle::Leveled
            && version.levels[0].iter().any(|f| holds_expired(f, now, all))
        {
            if let Some(mut c) = l0_compaction(&version, &self.opts) {
                // A trivial move would carry the expired values down unchanged.
                c.allow_trivial_move = false;
                self.run_compaction(&c, &version)?;
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Rewrites every table of levels 1 and below that holds expired values
    /// (`Db::compact_range`'s last step).
    pub(super) fn compact_all_expired(&self) -> Result<()> {
        let now = self.opts.clock.now_unix_ms();
        // Each rewrite removes its inputs' expired values for good (see
        // `compact_one_expired`), so this ends after at most one rewrite per table; the bound
        // only guards against a rewrite that failed to.
        let tables = self
            .versions
            .current()
            .levels
            .iter()
            .map(Vec::len)
            .sum::<usize>();
        for _ in 0..=tables {
            if !self.compact_one_expired(true, now)? {
                return Ok(());
            }
        }
        log::warn!("tables still hold expired values after {tables} rewrites");
        Ok(())
    }
}

/// Whether `file` holds expired values at `now`: any (`all`), or at least
/// [`DENSE_EXPIRED_SHARE`] of its entries.
fn holds_expired(file: &TableFile, now: u64, all: bool) -> bool {
    let Some(x) = file.meta.expiry else {
        return false;
    };
    if all {
        // The earliest time has passed: at least one value has expired.
        return now >= x.earliest;
    }
    x.expired_at(now) as f64 >= DENSE_EXPIRED_SHARE * file.meta.entries as f64
}
