//! `CLIENT PAUSE`: for a while, commands that write (`WRITE`) or every command (`ALL`) wait
//! before they run, as in Redis 7.0, until the pause's time has passed or `CLIENT UNPAUSE`.
//!
//! What waits is decided per command by `commands::held_by_pause`; this module keeps the
//! pause itself. The hot path pays one atomic load per command while no pause is active
//! ([`Pause::is_active`]); only then is the pause's lock taken. A session whose command is
//! held sends the replies of the commands before it, then waits ([`Pause::changed`], or the
//! pause's end) without holding a thread, and runs the command once the pause no longer
//! holds it.
//!
//! A pause asked for while one is active keeps the stronger mode and the later end
//! (Redis 7.0's `pauseClients`): `PAUSE 10000 WRITE` then `PAUSE 100 ALL` pauses every
//! command for 10 s. A pause that has ended is cleared by the first look at it.

use parking_lot::Mutex;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Instant;
use tokio::sync::Notify;

/// What a pause holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum PauseMode {
    /// Commands that may write (and `EXEC` of a transaction that writes).
    Write,
    /// Every command of a client.
    All,
}

/// The server's pause (see the module doc).
pub struct Pause {
    /// 0 while no pause is active (the hot path's one load), else non-zero.
    active: AtomicU8,
    /// The pause's mode and end while active (`None` once ended or lifted).
    state: Mutex<Option<(PauseMode, Instant)>>,
    /// Woken when a pause is lifted or changed.
    changed: Notify,
}

impl Default for Pause {
    fn default() -> Self {
        Pause::new()
    }
}

impl Pause {
    /// No pause.
    pub fn new() -> Pause {
        Pause {
            active: AtomicU8::new(0),
            state: Mutex::new(None),
            changed: Notify::new(),
        }
    }

    /// Whether a pause may be active: one atomic load, and `false` means no command waits.
    pub fn is_active(&self) -> bool {
        self.active.load(Ordering::Acquire) != 0
    }

    /// Pauses `mode` until `until`, merged with an active pause (the stronger mode, the
    /// later end).
    pub fn pause(&self, mode: PauseMode, until: Instant) {
        let mut state = self.state.lock();
        let merged = match *state {
            Some((m, end)) if end > Instant::now() => (m.max(mode), end.max(until)),
            _ => (mode, until),
        };
        *state = Some(merged);
        self.active.store(1, Ordering::Release);
        drop(state);
        self.changed.notify_waiters();
    }

    /// Lifts the pause (`CLIENT UNPAUSE`), waking the commands it held.
    pub fn unpause(&self) {
        let mut state = self.state.lock();
        *state = None;
        self.active.store(0, Ordering::Release);
        drop(state);
        self.changed.notify_waiters();
    }

    /// The active pause's mode and end, `None` when there is none (a pause whose end has
    /// passed is cleared here).
    pub fn current(&self) -> Option<(PauseMode, Instant)> {
        if !self.is_active() {
            return None;
        }
        let mut state = self.state.lock();
        match *state {
            Some((mode, end)) if end > Instant::now() => Some((mode, end)),
            _ => {
                *state = None;
                self.active.store(0, Ordering::Release);
                None
            }
        }
    }

    /// Resolves when the pause is lifted or changed. Enable it
    /// ([`tokio::sync::futures::Notified::enable`]) before looking at [`Pause::current`],
    /// so that a change in between is not missed; the pause's end wakes nobody (a waiter
    /// sleeps until it).
    pub fn changed(&self) -> tokio::sync::futures::Notified<'_> {
        self.changed.notified()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_pause_merges_to_the_stronger_mode_and_the_later_end_and_expires() {
        let p = Pause::new();
        assert!(!p.is_active() && p.current().is_none());
        let now = Instant::now();
        p.pause(PauseMode::Write, now + Duration::from_secs(60));
        p.pause(PauseMode::All, now + Duration::from_millis(1));
        assert_eq!(
            p.current(),
            Some((PauseMode::All, now + Duration::from_secs(60)))
        );
        p.unpause();
        assert!(!p.is_active() && p.current().is_none());
        p.pause(PauseMode::Write, Instant::now());
        assert!(p.is_active());
        assert_eq!(p.current(), None, "an ended pause is cleared");
        assert!(!p.is_active());
    }
}
