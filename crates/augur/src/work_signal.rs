//! [`WorkSignal`]: how foreground code tells the background thread that work is due, and
//! how `close` tells it to stop. Shared as an `Arc` by the database's background part and
//! FLSM's seek statistics (a scan's seek that makes a guard due for seek-based compaction
//! requests work through them), so a reader needs no reference to the database itself.

use parking_lot::{Condvar, Mutex};
use std::time::Duration;

#[derive(Default)]
struct Flags {
    shutting_down: bool,
    /// Work was requested since the background thread last looked.
    work_requested: bool,
}

/// Two flags and a condition variable. Never held while another lock is taken.
#[derive(Default)]
pub(crate) struct WorkSignal {
    flags: Mutex<Flags>,
    cv: Condvar,
}

impl WorkSignal {
    /// Asks the background thread for a round of work, and wakes whoever waits.
    pub fn request_work(&self) {
        self.flags.lock().work_requested = true;
        self.cv.notify_all();
    }

    /// Tells the background thread to stop, and wakes whoever waits.
    pub fn shut_down(&self) {
        self.flags.lock().shutting_down = true;
        self.cv.notify_all();
    }

    /// True once [`Self::shut_down`] was called.
    pub fn is_shutting_down(&self) -> bool {
        self.flags.lock().shutting_down
    }

    /// Waits until work is requested (then clears the request and returns `true`), `every`
    /// has passed (`true`: a periodic round) or the database shuts down (`false`).
    pub fn wait_for_work(&self, every: Option<Duration>) -> bool {
        let mut flags = self.flags.lock();
        while !flags.shutting_down && !flags.work_requested {
            match every {
                Some(timeout) => {
                    if self.cv.wait_for(&mut flags, timeout).timed_out() {
                        break;
                    }
                }
                None => self.cv.wait(&mut flags),
            }
        }
        if flags.shutting_down {
            return false;
        }
        flags.work_requested = false;
        true
    }

    /// Waits up to `timeout` for any notification, unless shutting down.
    pub fn wait_for_progress(&self, timeout: Duration) {
        let mut flags = self.flags.lock();
        if !flags.shutting_down {
            self.cv.wait_for(&mut flags, timeout);
        }
    }

    /// Wakes every waiter (progress was made, or the database was poisoned).
    pub fn notify_all(&self) {
        self.cv.notify_all();
    }
}
