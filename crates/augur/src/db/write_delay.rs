//! Smooth write slowdown (RocksDB's delayed write rate): while L0 holds
//! `l0_slowdown_trigger` files or more, writers are held to a byte rate that falls as L0
//! nears `l0_stop_trigger`, instead of being stopped outright when it gets there. A writer
//! pays, before its write, the time its predecessors' bytes owe at the current rate (a
//! credit scheme: bytes written since the last payment minus what the rate allowed since).

use crate::options::Options;
use parking_lot::Mutex;
use std::time::{Duration, Instant};

/// The longest single delay: a writer never sleeps longer at once (the debt carries over).
const MAX_DELAY: Duration = Duration::from_millis(100);

/// The slowest rate, as a fraction of `Options::delayed_write_rate`.
const MIN_RATE_FRACTION: f64 = 1.0 / 16.0;

/// The allowed ingest rate (bytes/s) with `l0_files` files in L0, or `None` when writes
/// run at full speed.
pub(crate) fn slowdown_rate(l0_files: usize, opts: &Options) -> Option<f64> {
    if l0_files < opts.l0_slowdown_trigger || opts.delayed_write_rate == 0 {
        return None;
    }
    let span = (opts.l0_stop_trigger - opts.l0_slowdown_trigger + 1) as f64;
    let left = opts.l0_stop_trigger.saturating_sub(l0_files) as f64;
    let fraction = (left / span).clamp(MIN_RATE_FRACTION, 1.0);
    Some(opts.delayed_write_rate as f64 * fraction)
}

/// Where the last payment left the account.
#[derive(Debug)]
struct Account {
    /// Total user bytes written at the last payment (or reset).
    bytes: u64,
    /// When the bytes since then started to accrue allowance.
    since: Instant,
}

/// The slowdown account of one database.
#[derive(Debug)]
pub(crate) struct WriteDelay {
    account: Mutex<Option<Account>>,
}

impl Default for WriteDelay {
    fn default() -> Self {
        WriteDelay {
            account: Mutex::new(None),
        }
    }
}

impl WriteDelay {
    /// Writes run at full speed: the next slowdown starts with a clean account.
    pub(crate) fn reset(&self) {
        *self.account.lock() = None;
    }

    /// The delay owed at `rate` bytes/s now that `total_bytes` user bytes have been
    /// written; the caller sleeps it. The account is settled as if the delay were served.
    pub(crate) fn owed(&self, total_bytes: u64, rate: f64, now: Instant) -> Duration {
        let mut account = self.account.lock();
        let Some(a) = account.as_mut() else {
            *account = Some(Account {
                bytes: total_bytes,
                since: now,
            });
            return Duration::ZERO;
        };
        let written = total_bytes.saturating_sub(a.bytes) as f64;
        let allowed = rate * now.saturating_duration_since(a.since).as_secs_f64();
        if written <= allowed {
            // Under the rate: unused allowance is not banked beyond this moment.
            a.bytes = total_bytes;
            a.since = now;
            return Duration::ZERO;
        }
        let owed = Duration::from_secs_f64((written - allowed) / rate).min(MAX_DELAY);
        // Paid for: the bytes covered by `owed` at `rate` from now on.
        let paid = allowed + owed.as_secs_f64() * rate;
        a.bytes = a.bytes.saturating_add(paid as u64);
        a.since = now + owed;
        owed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> Options {
        Options {
            l0_slowdown_trigger: 8,
            l0_stop_trigger: 12,
            delayed_write_rate: 1 << 20,
            ..Options::default()
        }
    }

    #[test]
    fn the_rate_falls_as_l0_nears_the_stop_trigger() {
        let o = opts();
        assert_eq!(slowdown_rate(7, &o), None);
        let rates: Vec<f64> = (8..=14).map(|n| slowdown_rate(n, &o).unwrap()).collect();
        assert!(rates.windows(2).all(|w| w[0] >= w[1]), "{rates:?}");
        assert!(rates[0] < (1 << 20) as f64 && rates[0] > 0.5 * (1 << 20) as f64);
        assert_eq!(rates[6], (1 << 20) as f64 * MIN_RATE_FRACTION);
        let off = Options {
            delayed_write_rate: 0,
            ..o
        };
        assert_eq!(slowdown_rate(20, &off), None);
    }

    #[test]
    fn writers_owe_what_the_rate_did_not_allow() {
        let d = WriteDelay::default();
        let t0 = Instant::now();
        // The first call opens the account.
        assert_eq!(d.owed(1000, 1000.0, t0), Duration::ZERO);
        // 50 bytes in 0.1 s at 1000 B/s: within the rate.
        assert_eq!(
            d.owed(1050, 1000.0, t0 + Duration::from_millis(100)),
            Duration::ZERO
        );
        // 60 more bytes at once: 60 ms owed.
        let owed = d.owed(1110, 1000.0, t0 + Duration::from_millis(100));
        assert!((owed.as_secs_f64() - 0.060).abs() < 1e-6, "{owed:?}");
        // Served: right after the delay, nothing more is owed.
        let after = t0 + Duration::from_millis(160);
        assert_eq!(d.owed(1110, 1000.0, after), Duration::ZERO);
        // A huge burst is paid in installments of at most MAX_DELAY.
        assert_eq!(d.owed(1_000_000, 1000.0, after), MAX_DELAY);
        d.reset();
        assert_eq!(d.owed(2_000_000, 1000.0, after), Duration::ZERO);
    }
}
