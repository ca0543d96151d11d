//! What `INFO` measures beyond the plain counters of `state::Counters`: per-command calls and
//! time (`INFO commandstats`), error replies by code (`INFO errorstats`), the
//! instantaneous rates `INFO stats` reports (sampled ten times a second, as Redis does), and
//! the largest client buffers of the last seconds (`INFO clients`).
//!
//! Cost on the hot path: a command adds to its connection's [`Tally`] (plain integers, no
//! atomics); the tally is added to the shared [`CommandStats`] once per pipelined batch (and
//! before a command that is not part of a run, so that `INFO` in a pipeline sees the
//! commands before it). A pipeline of 16 GETs so costs two atomic additions, not 32.

use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

/// Error codes `INFO errorstats` tracks one by one (Redis's `ERROR_STATS_NUMBER`); errors
/// of further codes count in `total_error_replies` only.
const ERROR_CODES: usize = 128;

/// Samples the instantaneous rates average (Redis's `STATS_METRIC_SAMPLES`).
const RATE_SAMPLES: usize = 16;

/// Seconds the "recent" buffer maxima cover (Redis's `CLIENTS_PEAK_MEM_USAGE_SLOTS`).
const RECENT_SECONDS: usize = 8;

/// One command's counts.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// Times it ran.
    pub calls: u64,
    /// Microseconds it ran, in all.
    pub usec: u64,
    /// Times it was refused before running (wrong arity, not authenticated, refused inside
    /// a transaction).
    pub rejected: u64,
    /// Times it ran and answered an error.
    pub failed: u64,
}

/// A command's counts, shared.
#[derive(Debug, Default)]
struct SharedCounts {
    calls: AtomicU64,
    usec: AtomicU64,
    rejected: AtomicU64,
    failed: AtomicU64,
}

impl SharedCounts {
    fn add(&self, c: Counts) {
        for (a, v) in [
            (&self.calls, c.calls),
            (&self.usec, c.usec),
            (&self.rejected, c.rejected),
            (&self.failed, c.failed),
        ] {
            if v > 0 {
                a.fetch_add(v, Ordering::Relaxed);
            }
        }
    }

    fn get(&self) -> Counts {
        Counts {
            calls: self.calls.load(Ordering::Relaxed),
            usec: self.usec.load(Ordering::Relaxed),
            rejected: self.rejected.load(Ordering::Relaxed),
            failed: self.failed.load(Ordering::Relaxed),
        }
    }

    fn reset(&self) {
        for a in [&self.calls, &self.usec, &self.rejected, &self.failed] {
            a.store(0, Ordering::Relaxed);
        }
    }
}

/// Per-command counts and error counts for `INFO commandstats` and `INFO errorstats`.
///
/// Commands are counted by their row of the command table ([`CommandStats::add`]), except
/// the subcommands of container commands (`CLIENT KILL`, `CONFIG SET`), which Redis 7 counts
/// by their full name (`client|kill`) and which are rare: those go to a map under a lock
/// ([`CommandStats::add_named`]).
#[derive(Debug)]
pub struct CommandStats {
    rows: Vec<SharedCounts>,
    /// Subcommands by full name (its own lock, taken alone).
    named: Mutex<BTreeMap<String, Counts>>,
    /// Error replies by code (its own lock, taken alone).
    errors: Mutex<BTreeMap<String, u64>>,
    /// Error replies in all.
    error_replies: AtomicU64,
}

impl CommandStats {
    /// Counts for a table of `commands` rows, all zero.
    pub fn new(commands: usize) -> CommandStats {
        CommandStats {
            rows: (0..commands).map(|_| SharedCounts::default()).collect(),
            named: Mutex::new(BTreeMap::new()),
            errors: Mutex::new(BTreeMap::new()),
            error_replies: AtomicU64::new(0),
        }
    }

    /// Adds `counts` to the command of row `row`.
    pub fn add(&self, row: usize, counts: Counts) {
        if let Some(r) = self.rows.get(row) {
            r.add(counts);
        }
    }

    /// Adds `counts` to the (sub)command named `name` (`client|kill`).
    pub fn add_named(&self, name: &str, counts: Counts) {
        let mut named = self.named.lock();
        let c = named.entry(name.to_string()).or_default();
        c.calls += counts.calls;
        c.usec += counts.usec;
        c.rejected += counts.rejected;
        c.failed += counts.failed;
    }

    /// The counts of row `row`.
    pub fn row(&self, row: usize) -> Counts {
        self.rows
            .get(row)
            .map(SharedCounts::get)
            .unwrap_or_default()
    }

    /// The counts of the named subcommands, by name.
    pub fn named(&self) -> Vec<(String, Counts)> {
        self.named
            .lock()
            .iter()
            .map(|(n, c)| (n.clone(), *c))
            .collect()
    }

    /// Counts an error reply whose text begins with `code` (`ERR`, `WRONGPASS`, …).
    pub fn note_error(&self, code: &str) {
        self.error_replies.fetch_add(1, Ordering::Relaxed);
        let mut errors = self.errors.lock();
        if let Some(n) = errors.get_mut(code) {
            *n += 1;
        } else if errors.len() < ERROR_CODES {
            errors.insert(code.to_string(), 1);
        }
    }

    /// Error replies by code, in code order.
    pub fn errors(&self) -> Vec<(String, u64)> {
        self.errors
            .lock()
            .iter()
            .map(|(c, n)| (c.clone(), *n))
            .collect()
    }

    /// Error replies in all (`total_error_replies`).
    pub fn error_replies(&self) -> u64 {
        self.error_replies.load(Ordering::Relaxed)
    }

    /// Forgets every count (`CONFIG RESETSTAT`).
    pub fn reset(&self) {
        self.rows.iter().for_each(SharedCounts::reset);
        self.named.lock().clear();
        self.errors.lock().clear();
        self.error_replies.store(0, Ordering::Relaxed);
    }
}

/// Slots of a [`Tally`]: the distinct commands a batch adds before its tally is flushed.
const TALLY_SLOTS: usize = 4;

/// A connection's counts not yet added to the server's [`CommandStats`]: plain integers on
/// the connection, so that counting a command costs no atomic operation (see the module
/// doc). Holds no heap memory.
#[derive(Debug, Default)]
pub struct Tally {
    slots: [(usize, Counts); TALLY_SLOTS],
    len: usize,
    /// Calls counted since [`Tally::take_calls`] (flushes do not clear it).
    calls: u64,
}

impl Tally {
    /// Counts a call of the command of row `row` that ran `usec` microseconds and failed or
    /// not; flushes into `stats` first when every slot holds another command.
    pub fn add(&mut self, stats: &CommandStats, row: usize, usec: u64, failed: bool) {
        let slot = match self.slots[..self.len].iter().position(|(r, _)| *r == row) {
            Some(i) => i,
            None => {
                if self.len == TALLY_SLOTS {
                    self.flush(stats);
                }
                self.slots[self.len] = (row, Counts::default());
                self.len += 1;
                self.len - 1
            }
        };
        self.calls += 1;
        let c = &mut self.slots[slot].1;
        c.calls += 1;
        c.usec += usec;
        c.failed += u64::from(failed);
    }

    /// Adds `usec` to the command of row `row` (already counted): its share of a commit it
    /// waited for.
    pub fn add_time(&mut self, row: usize, usec: u64) {
        if let Some((_, c)) = self.slots[..self.len].iter_mut().find(|(r, _)| *r == row) {
            c.usec += usec;
        }
    }

    /// Calls counted since the last call of this (for `total_commands_processed`), and
    /// starts counting again.
    pub fn take_calls(&mut self) -> u64 {
        std::mem::take(&mut self.calls)
    }

    /// Adds the counts to `stats` and empties the tally.
    pub fn flush(&mut self, stats: &CommandStats) {
        for (row, c) in &self.slots[..self.len] {
            stats.add(*row, *c);
        }
        self.len = 0;
    }
}

/// The instantaneous rates of `INFO stats`: commands, input bytes and output bytes per
/// second, each the mean of the last 16 samples taken every 100 ms (Redis's
/// `trackInstantaneousMetric`).
#[derive(Debug, Default)]
pub struct Rates {
    inner: Mutex<RateSamples>,
}

#[derive(Debug, Default)]
struct RateSamples {
    /// The previous sample's time and counter values.
    last: Option<(Instant, [u64; 3])>,
    /// Per-second rates of the last samples (a ring).
    samples: [[u64; 3]; RATE_SAMPLES],
    next: usize,
}

impl Rates {
    /// Records the counters' `values` (commands, input bytes, output bytes) at `now`.
    pub fn sample(&self, now: Instant, values: [u64; 3]) {
        let mut r = self.inner.lock();
        if let Some((then, before)) = r.last {
            let ms = now.saturating_duration_since(then).as_millis();
            let ms = u64::try_from(ms).unwrap_or(u64::MAX).max(1);
            let mut rate = [0u64; 3];
            for (i, slot) in rate.iter_mut().enumerate() {
                *slot = values[i].saturating_sub(before[i]).saturating_mul(1000) / ms;
            }
            let next = r.next;
            r.samples[next] = rate;
            r.next = (next + 1) % RATE_SAMPLES;
        }
        r.last = Some((now, values));
    }

    /// The mean rates per second: commands, input bytes, output bytes.
    pub fn per_second(&self) -> [u64; 3] {
        let r = self.inner.lock();
        let mut sum = [0u64; 3];
        for s in &r.samples {
            for i in 0..3 {
                sum[i] += s[i];
            }
        }
        sum.map(|v| v / RATE_SAMPLES as u64)
    }
}

/// The largest client buffers of the last 8 seconds
/// (`client_recent_max_input_buffer`, `client_recent_max_output_buffer`): one slot per
/// second, a ring the sampler advances each second ([`RecentMax::next_second`]). Noting a
/// size is a load (and an atomic maximum only when the size is a new maximum).
#[derive(Debug, Default)]
pub struct RecentMax {
    input: [AtomicUsize; RECENT_SECONDS],
    output: [AtomicUsize; RECENT_SECONDS],
    second: AtomicUsize,
}

impl RecentMax {
    fn note(slots: &[AtomicUsize; RECENT_SECONDS], second: usize, bytes: usize) {
        let slot = &slots[second % RECENT_SECONDS];
        if bytes > slot.load(Ordering::Relaxed) {
            slot.fetch_max(bytes, Ordering::Relaxed);
        }
    }

    /// A client's input buffer holds `bytes` (allocated).
    pub fn note_input(&self, bytes: usize) {
        Self::note(&self.input, self.second.load(Ordering::Relaxed), bytes);
    }

    /// A client has `bytes` of replies to send.
    pub fn note_output(&self, bytes: usize) {
        Self::note(&self.output, self.second.load(Ordering::Relaxed), bytes);
    }

    /// Starts the next second's slot, forgetting the oldest.
    pub fn next_second(&self) {
        let next = self.second.load(Ordering::Relaxed) + 1;
        self.input[next % RECENT_SECONDS].store(0, Ordering::Relaxed);
        self.output[next % RECENT_SECONDS].store(0, Ordering::Relaxed);
        self.second.store(next, Ordering::Relaxed);
    }

    /// The largest input and output buffers noted in the last seconds.
    pub fn max(&self) -> (usize, usize) {
        let max = |slots: &[AtomicUsize; RECENT_SECONDS]| {
            slots
                .iter()
                .map(|s| s.load(Ordering::Relaxed))
                .max()
                .unwrap_or(0)
        };
        (max(&self.input), max(&self.output))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_tally_flushes_into_the_shared_counts() {
        let stats = CommandStats::new(8);
        let mut t = Tally::default();
        for row in [0, 1, 0, 2, 3, 0] {
            t.add(&stats, row, 10, row == 3);
        }
        t.add_time(0, 5);
        t.add(&stats, 4, 7, false); // a fifth command: the four before are flushed
        assert_eq!(stats.row(0).calls, 3);
        assert_eq!(stats.row(0).usec, 35);
        assert_eq!(stats.row(4).calls, 0);
        t.flush(&stats);
        assert_eq!(t.take_calls(), 7);
        assert_eq!(t.take_calls(), 0);
        let c = stats.row(3);
        assert_eq!((c.calls, c.usec, c.failed), (1, 10, 1));
        assert_eq!(stats.row(4).usec, 7);
        stats.note_error("ERR");
        stats.note_error("ERR");
        stats.note_error("WRONGTYPE");
        assert_eq!(
            stats.errors(),
            vec![("ERR".into(), 2), ("WRONGTYPE".into(), 1)]
        );
        assert_eq!(stats.error_replies(), 3);
        stats.reset();
        assert_eq!(
            (stats.row(0), stats.error_replies()),
            (Counts::default(), 0)
        );
    }

    #[test]
    fn rates_average_the_last_samples() {
        let r = Rates::default();
        let t = Instant::now();
        r.sample(t, [0, 0, 0]);
        for i in 1..=RATE_SAMPLES as u64 {
            r.sample(t + Duration::from_millis(100 * i), [100 * i, 1024 * i, 0]);
        }
        assert_eq!(r.per_second(), [1000, 10240, 0]);
    }

    #[test]
    fn recent_maxima_forget_old_seconds() {
        let m = RecentMax::default();
        m.note_input(100);
        m.note_output(7);
        m.next_second();
        m.note_input(50);
        assert_eq!(m.max(), (100, 7));
        for _ in 0..RECENT_SECONDS {
            m.next_second();
        }
        assert_eq!(m.max(), (0, 0));
    }
}
