//! [`Lifecycle`]: whether a database still takes work — closed by `Db::close`, poisoned by
//! the first unrecoverable error (a failed write or sync, a failed unit of background work),
//! after which every write is refused (fjall's rule: the state on disk is unknown).

use crate::error::Error;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Whether a database still takes work. Lock order: `poisoned` is a leaf.
#[derive(Default)]
pub(crate) struct Lifecycle {
    /// Set by `Db::close`.
    closed: AtomicBool,
    /// The first failure of a write or background job; writes are refused afterwards with
    /// an `Error::Poisoned` sharing it.
    poisoned: Mutex<Option<Arc<Error>>>,
}

impl Lifecycle {
    /// True once the database was closed.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Marks the database closed; false when it was already.
    pub fn close(&self) -> bool {
        !self.closed.swap(true, Ordering::AcqRel)
    }

    /// The failure that poisoned the database, if one did.
    pub fn poisoned(&self) -> Option<Arc<Error>> {
        self.poisoned.lock().clone()
    }

    /// True once the database was poisoned.
    pub fn is_poisoned(&self) -> bool {
        self.poisoned.lock().is_some()
    }

    /// Records `e` as the reason the database is poisoned, unless it already was (the
    /// caller wakes whoever waits on the background part).
    pub fn poison(&self, e: &Error) {
        let mut p = self.poisoned.lock();
        if p.is_none() {
            log::error!("database poisoned: {e}");
            *p = Some(Arc::new(e.clone()));
        }
    }
}
