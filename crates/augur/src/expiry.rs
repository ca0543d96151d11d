//! Expiring values: the stored form of an entry of kind
//! `ExpiringValue` (`crate::key::ValueKind`) and the clock that decides when it
//! has expired.
//!
//! An expiring value is stored inline (memtable, WAL record, SSTable value chunk) as
//! `expire_at u64 LE | value`, where `expire_at` is an absolute time in milliseconds since the
//! Unix epoch. It is never separated into the value log, so every reader can tell whether it
//! has expired from the tree alone (a scan of keys reads no value-log entry for it, and a
//! compaction rewrites it without a value-log read).
//!
//! Invariants: an entry whose `expire_at <= clock.now_unix_ms()` reads as a tombstone
//! (hiding every older version of its key, as a delete would), and compaction rewrites it as
//! a tombstone at the same sequence number, so neither a crash, a compaction nor a
//! value-log GC can bring an older version of the key back. Expiry is judged by the wall
//! clock at the time of each read, never by a snapshot's time: a key that has expired is gone
//! for every reader, snapshots included.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// Bytes of the expiry time in front of an expiring value.
pub const EXPIRY_BYTES: usize = 8;

/// The time source expiry is judged by: milliseconds since the Unix epoch. The database asks
/// it on every read of an expiring entry and in every compaction.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// Now, in milliseconds since the Unix epoch.
    fn now_unix_ms(&self) -> u64;
}

/// The system's wall clock (the default).
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_unix_ms(&self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }
}

/// A clock that moves only when told to: for tests of expiry that must not wait.
#[derive(Debug, Default)]
pub struct ManualClock {
    now: AtomicU64,
}

impl ManualClock {
    /// A clock reading `now_unix_ms`.
    pub fn new(now_unix_ms: u64) -> ManualClock {
        ManualClock {
            now: AtomicU64::new(now_unix_ms),
        }
    }

    /// Sets the time.
    pub fn set(&self, now_unix_ms: u64) {
        self.now.store(now_unix_ms, Ordering::Release);
    }

    /// Moves the time forward by `ms`.
    pub fn advance(&self, ms: u64) {
        self.now.fetch_add(ms, Ordering::AcqRel);
    }
}

impl Clock for ManualClock {
    fn now_unix_ms(&self) -> u64 {
        self.now.load(Ordering::Acquire)
    }
}

/// What a table's expiring values are: how many, and the earliest and latest of their
/// expiry times. Recorded per table in the manifest (tag 19), it tells the background work
/// which tables are dense with expired values without reading them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExpirySummary {
    /// Entries of kind `ExpiringValue`.
    pub entries: u64,
    /// The earliest expiry time among them (ms since the Unix epoch).
    pub earliest: u64,
    /// The latest expiry time among them.
    pub latest: u64,
}

impl ExpirySummary {
    /// Adds one expiring value's time (to `None`: the first).
    pub fn include(summary: &mut Option<ExpirySummary>, expire_at: u64) {
        match summary {
            Some(s) => {
                s.entries += 1;
                s.earliest = s.earliest.min(expire_at);
                s.latest = s.latest.max(expire_at);
            }
            None => {
                *summary = Some(ExpirySummary {
                    entries: 1,
                    earliest: expire_at,
                    latest: expire_at,
                })
            }
        }
    }

    /// An estimate of how many of the entries have expired at `now_ms`: all of them once
    /// the latest time has passed, none before the earliest, and in between the share of
    /// the span that has passed (the times taken as spread evenly).
    pub fn expired_at(&self, now_ms: u64) -> u64 {
        if now_ms >= self.latest {
            return self.entries;
        }
        if now_ms < self.earliest {
            return 0;
        }
        let span = (self.latest - self.earliest).max(1) as f64;
        let passed = (now_ms - self.earliest) as f64;
        (self.entries as f64 * passed / span) as u64
    }
}

/// The stored bytes of `value` expiring at `expire_at_ms`.
pub(crate) fn encode(expire_at_ms: u64, value: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(EXPIRY_BYTES + value.len());
    out.extend_from_slice(&expire_at_ms.to_le_bytes());
    out.extend_from_slice(value);
    out
}

/// Splits the stored bytes of an expiring value into its expiry time and the user's value;
/// `None` when they are too short to hold the time (corruption).
#[inline]
pub(crate) fn split(stored: &[u8]) -> Option<(u64, &[u8])> {
    let (time, value) = stored.split_first_chunk::<EXPIRY_BYTES>()?;
    Some((u64::from_le_bytes(*time), value))
}

/// True when a value expiring at `expire_at_ms` has expired at `now_ms`.
#[inline]
pub(crate) fn has_expired(expire_at_ms: u64, now_ms: u64) -> bool {
    expire_at_ms <= now_ms
}

/// True when `stored`, the bytes of an expiring value, has expired at `now_ms` (a value too
/// short to hold its time counts as expired: it can never be returned).
#[inline]
pub(crate) fn stored_has_expired(stored: &[u8], now_ms: u64) -> bool {
    split(stored).is_none_or(|(at, _)| has_expired(at, now_ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_split_and_expiry() {
        let stored = encode(1_000, b"v");
        assert_eq!(split(&stored), Some((1_000, &b"v"[..])));
        assert_eq!(split(&stored[..7]), None);
        assert!(!stored_has_expired(&stored, 999));
        assert!(stored_has_expired(&stored, 1_000));
        assert!(stored_has_expired(&stored[..3], 0));
        let clock = ManualClock::new(5);
        clock.advance(10);
        assert_eq!(clock.now_unix_ms(), 15);
        assert!(SystemClock.now_unix_ms() > 1_600_000_000_000);
    }

    #[test]
    fn summary_estimates_expired_entries() {
        let mut s = None;
        for at in [100, 300, 200, 500] {
            ExpirySummary::include(&mut s, at);
        }
        let s = s.unwrap();
        assert_eq!((s.entries, s.earliest, s.latest), (4, 100, 500));
        assert_eq!(s.expired_at(99), 0);
        assert_eq!(s.expired_at(300), 2);
        assert_eq!(s.expired_at(500), 4);
    }
}
