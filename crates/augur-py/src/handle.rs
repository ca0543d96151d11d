//! The state one `augur.open()` shares with everything made from it: the open engine
//! database, and the snapshots and iterators that must let go of it when it is closed.
//!
//! The engine releases its directory lock only when the last reference to its internals is
//! gone, and every snapshot and scan holds one. So that `db.close()` really closes (another
//! process, or a new `augur.open()` of the same path, can open it right after), the handle
//! keeps a weak list of those children and empties each one on close; a child used after
//! that raises `ClosedError`.
//!
//! Locking: `db` and `children` are held only for a few instructions and never while waiting
//! for the GIL. A child's mutex is held by an iterator while it fills a batch with the GIL
//! released, so it is only taken by code that either runs with the GIL released (close) or
//! holds it for an instant without ever waiting for the GIL (clones, takes).

use crate::errors;
use parking_lot::{Mutex, RwLock};
use pyo3::PyResult;
use std::sync::{Arc, Weak};

/// Something made from a database that holds engine state until released.
trait Release: Send + Sync {
    /// Drops the engine state (a snapshot, a scan); later uses raise `ClosedError`.
    fn release(&self);
}

impl<T: Send> Release for Mutex<Option<T>> {
    fn release(&self) {
        drop(self.lock().take());
    }
}

/// A child's engine state: `None` once released (by `close()` or when exhausted).
pub(crate) type Cell<T> = Arc<Mutex<Option<T>>>;

/// One open database and what was made from it.
pub(crate) struct Handle {
    /// The engine database; `None` after `close()`.
    db: RwLock<Option<Arc<augur::Db>>>,
    /// Snapshots and iterators to release on close (dead entries are pruned as it grows).
    children: Mutex<Vec<Weak<dyn Release>>>,
    /// `open(read_only=True)`: writes through this handle are refused.
    read_only: bool,
}

impl Handle {
    /// A handle of the freshly opened `db`.
    pub(crate) fn new(db: augur::Db, read_only: bool) -> Self {
        Handle {
            db: RwLock::new(Some(Arc::new(db))),
            children: Mutex::new(Vec::new()),
            read_only,
        }
    }

    /// The engine database, for one call.
    ///
    /// # Errors
    /// `ClosedError` after `close()`.
    pub(crate) fn db(&self) -> PyResult<Arc<augur::Db>> {
        self.db
            .read()
            .clone()
            .ok_or_else(|| errors::closed("the database"))
    }

    /// The engine database, for a call that writes.
    ///
    /// # Errors
    /// `InvalidArgumentError` on a read-only handle; `ClosedError` after `close()`.
    pub(crate) fn writable_db(&self) -> PyResult<Arc<augur::Db>> {
        if self.read_only {
            return Err(errors::invalid_argument(
                "the database was opened with read_only=True",
            ));
        }
        self.db()
    }

    /// True once `close()` was called.
    pub(crate) fn is_closed(&self) -> bool {
        self.db.read().is_none()
    }

    /// True when opened with `read_only=True`.
    pub(crate) fn read_only(&self) -> bool {
        self.read_only
    }

    /// Registers `state` (a snapshot or scan) to be released when the database closes.
    ///
    /// # Errors
    /// `ClosedError` when the database is already closed (`state` is dropped).
    pub(crate) fn adopt<T: Send + 'static>(&self, state: T) -> PyResult<Cell<T>> {
        let cell: Cell<T> = Arc::new(Mutex::new(Some(state)));
        let mut children = self.children.lock();
        // Checked under the children lock: `close` takes the database before it drains the
        // list, so a child registered here is either refused or drained.
        if self.db.read().is_none() {
            return Err(errors::closed("the database"));
        }
        if children.len() >= 64 && children.len().is_power_of_two() {
            children.retain(|c| c.strong_count() > 0);
        }
        let weak: Weak<Mutex<Option<T>>> = Arc::downgrade(&cell);
        children.push(weak);
        Ok(cell)
    }

    /// Closes the database: releases every snapshot and iterator, stops background work
    /// and flushes buffered log bytes. Idempotent. Call it with the GIL released: it waits
    /// for iterators in the middle of a batch.
    ///
    /// # Errors
    /// The engine's error from flushing the logs.
    pub(crate) fn close(&self) -> augur::Result<()> {
        let Some(db) = self.db.write().take() else {
            return Ok(());
        };
        let children = std::mem::take(&mut *self.children.lock());
        for child in children.iter().filter_map(Weak::upgrade) {
            child.release();
        }
        let result = db.close();
        // Drops the engine database unless a call on another thread still holds it; that
        // thread drops it when its call returns.
        drop(db);
        result
    }
}
