//! The state one `augur.open()` shares with everything made from it: the open engine
//! database, and the snapshots and iterators that must let go of it when it is closed.
//!
//! The engine releases its directory lock only when the last reference to its internals is
//! gone, and every snapshot and scan holds one. So that `db.close()` really closes (another
//! process, or a new `augur.open()` of the same path, can open it right after), the handle
//! keeps a weak list of those children and releases each one on close; a snapshot keeps
//! such a list of the iterators made from it, released by `snapshot.close()`. A released
//! child remembers what closed it, so an iterator raises `ClosedError` at once, with
//! entries still buffered.
//!
//! The handle and each child also know their [`Origin`]: used in a process forked from the
//! one that opened the database, they raise `ForkedError`, checked before any lock is
//! taken (a lock held by one of the parent's threads at the fork stays held forever in the
//! child), and dropped there, they leak their engine state (see `fork.rs`).
//!
//! Locking: `db` and each list are held only for a few instructions and never while
//! waiting for the GIL; a list's lock is taken before its owner's state, never after
//! (closing marks the owner closed, lets go, then drains the list). A child's state mutex
//! is held by an iterator while it fills a batch with the GIL released, so it is only taken
//! by code that either runs with the GIL released (close) or holds it for an instant
//! without ever waiting for the GIL (clones, takes).

use crate::errors;
use crate::fork::Origin;
use parking_lot::{Mutex, MutexGuard, RwLock};
use pyo3::PyResult;
use std::path::Path;
use std::sync::{Arc, OnceLock, Weak};

/// What closed a child: the database, or the snapshot it was made from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Owner {
    /// `db.close()`.
    Database,
    /// `snapshot.close()`.
    Snapshot,
}

impl Owner {
    /// The owner's name in messages.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Owner::Database => "database",
            Owner::Snapshot => "snapshot",
        }
    }
}

/// Something made from a database that holds engine state until released.
trait Release: Send + Sync {
    /// Drops the engine state (a snapshot, a scan) and releases what was made from it,
    /// because `owner` was closed; later uses raise `ClosedError`.
    fn release(&self, owner: Owner);
}

/// The children of a database or a snapshot: weak references, released when it closes.
#[derive(Default)]
struct Children(Mutex<Vec<Weak<dyn Release>>>);

impl Children {
    /// Adds `child` unless `closed()`, evaluated under the list's lock, says the owner is
    /// closed. Returns whether it was added.
    fn adopt(&self, child: Weak<dyn Release>, closed: impl FnOnce() -> bool) -> bool {
        let mut list = self.0.lock();
        // Checked under the lock: closing marks the owner closed before it drains the list,
        // so a child is either refused here or drained there.
        if closed() {
            return false;
        }
        if list.len() >= 64 && list.len().is_power_of_two() {
            list.retain(|c| c.strong_count() > 0);
        }
        list.push(child);
        true
    }

    /// Releases every child and empties the list.
    fn release_all(&self, owner: Owner) {
        let children = std::mem::take(&mut *self.0.lock());
        for child in children.iter().filter_map(Weak::upgrade) {
            child.release(owner);
        }
    }
}

/// What a [`Cell`] shares with the lists that release it.
struct Slot<T> {
    /// The engine state: `None` once released, closed or finished.
    state: Mutex<Option<T>>,
    /// What closed this child; set once, before the state is dropped.
    closed_by: OnceLock<Owner>,
    /// Iterators made from this snapshot, released with it (empty for a scan).
    children: Children,
}

impl<T: Send> Release for Slot<T> {
    fn release(&self, owner: Owner) {
        // The first closer is the one reported (`db.close()` after `snapshot.close()`
        // leaves the snapshot's iterators closed by their snapshot).
        let _ = self.closed_by.set(owner);
        drop(self.state.lock().take());
        self.children.release_all(owner);
    }
}

/// A child's engine state (a snapshot or a scan), registered with the database, and with
/// the snapshot for a scan of one, to be released when either closes.
pub(crate) struct Cell<T> {
    slot: Arc<Slot<T>>,
    /// The database's origin: a forked child must neither use nor drop the state.
    origin: Origin,
}

impl<T> Drop for Cell<T> {
    fn drop(&mut self) {
        if self.origin.is_foreign() {
            // A forked child (fork.rs): the engine snapshot or scan belongs to the parent's
            // database, whose threads are not here and whose locks one of them may have
            // held at the fork. Dropping it would run engine code on that copy, so the
            // slot is leaked instead: one more strong count that nothing will give back.
            std::mem::forget(Arc::clone(&self.slot));
        }
    }
}

impl<T: Send + 'static> Cell<T> {
    fn new(state: T, origin: Origin) -> Self {
        Cell {
            slot: Arc::new(Slot {
                state: Mutex::new(Some(state)),
                closed_by: OnceLock::new(),
                children: Children::default(),
            }),
            origin,
        }
    }

    /// Call first, before any lock: a forked child must not touch the state.
    ///
    /// # Errors
    /// `ForkedError` in a process forked from the one that opened the database.
    pub(crate) fn check(&self) -> PyResult<()> {
        self.origin.check()
    }

    fn weak(&self) -> Weak<dyn Release> {
        let weak: Weak<Slot<T>> = Arc::downgrade(&self.slot);
        weak
    }

    /// The engine state, locked: `None` once released, closed or finished.
    /// REQUIRES: `check()` passed.
    pub(crate) fn lock(&self) -> MutexGuard<'_, Option<T>> {
        self.slot.state.lock()
    }

    /// What closed this child, if its database or snapshot did.
    pub(crate) fn closed_by(&self) -> Option<Owner> {
        self.slot.closed_by.get().copied()
    }

    /// Closes this child as `owner` (a snapshot closing itself) and releases what was made
    /// from it. Idempotent. Call it with the GIL released: it waits for iterators in the
    /// middle of a batch. REQUIRES: `check()` passed.
    pub(crate) fn close(&self, owner: Owner) {
        self.slot.release(owner);
    }

    /// Registers `child` (a scan of this snapshot) to be released with this one.
    ///
    /// # Errors
    /// `ClosedError` when this snapshot is already closed (the caller drops `child`).
    pub(crate) fn adopt<U: Send + 'static>(&self, child: &Cell<U>) -> PyResult<()> {
        self.check()?;
        if self
            .slot
            .children
            .adopt(child.weak(), || self.slot.closed_by.get().is_some())
        {
            Ok(())
        } else {
            Err(errors::closed("the snapshot"))
        }
    }
}

/// One open database and what was made from it.
pub(crate) struct Handle {
    /// The engine database; `None` after `close()`.
    db: RwLock<Option<Arc<augur::Db>>>,
    /// Snapshots and iterators to release on close (dead entries are pruned as it grows).
    children: Children,
    /// `open(read_only=True)`: writes through this handle are refused.
    read_only: bool,
    /// The opening process and the path.
    origin: Origin,
}

impl Drop for Handle {
    fn drop(&mut self) {
        if self.origin.is_foreign() {
            // A forked child (fork.rs): the engine database's close, which its drop runs,
            // would join background threads that do not exist here and flush buffered log
            // bytes into the parent's files behind its back. Leak it; the parent's copy
            // is the one that closes. `get_mut` takes no lock (one of the parent's threads
            // may have held it at the fork).
            if let Some(db) = self.db.get_mut().take() {
                std::mem::forget(db);
            }
        }
    }
}

impl Handle {
    /// A handle of `db`, freshly opened in this process at `path`.
    pub(crate) fn new(db: augur::Db, read_only: bool, path: &Path) -> Self {
        Handle {
            db: RwLock::new(Some(Arc::new(db))),
            children: Children::default(),
            read_only,
            origin: Origin::here(path),
        }
    }

    /// Where and by which process the database was opened.
    pub(crate) fn origin(&self) -> &Origin {
        &self.origin
    }

    /// The check of calls that need no engine database (batches, `with`).
    ///
    /// # Errors
    /// `ForkedError` in a process forked from the one that opened the database.
    pub(crate) fn check(&self) -> PyResult<()> {
        self.origin.check()
    }

    /// The engine database, for one call.
    ///
    /// # Errors
    /// `ForkedError` in a forked child; `ClosedError` after `close()`.
    pub(crate) fn db(&self) -> PyResult<Arc<augur::Db>> {
        self.check()?;
        self.db
            .read()
            .clone()
            .ok_or_else(|| errors::closed("the database"))
    }

    /// The engine database, for a call that writes.
    ///
    /// # Errors
    /// `ForkedError` in a forked child; `ReadOnlyError` on a read-only handle;
    /// `ClosedError` after `close()`.
    pub(crate) fn writable_db(&self) -> PyResult<Arc<augur::Db>> {
        self.check()?;
        if self.read_only {
            return Err(errors::read_only(
                "the database was opened with read_only=True",
            ));
        }
        self.db()
    }

    /// True once `close()` was called.
    ///
    /// # Errors
    /// `ForkedError` in a forked child.
    pub(crate) fn is_closed(&self) -> PyResult<bool> {
        self.check()?;
        Ok(self.db.read().is_none())
    }

    /// True when opened with `read_only=True`.
    pub(crate) fn read_only(&self) -> bool {
        self.read_only
    }

    /// Registers `state` (a snapshot or scan) to be released when the database closes.
    ///
    /// # Errors
    /// `ForkedError` in a forked child; `ClosedError` when the database is already closed
    /// (`state` is dropped).
    pub(crate) fn adopt<T: Send + 'static>(&self, state: T) -> PyResult<Cell<T>> {
        self.check()?;
        let cell = Cell::new(state, self.origin.clone());
        if self
            .children
            .adopt(cell.weak(), || self.db.read().is_none())
        {
            Ok(cell)
        } else {
            Err(errors::closed("the database"))
        }
    }

    /// Closes the database: releases every snapshot and iterator, stops background work
    /// and flushes buffered log bytes. Idempotent. Call it with the GIL released: it waits
    /// for iterators in the middle of a batch.
    ///
    /// # Errors
    /// `ForkedError` in a forked child (by the kernel's process id: see `fork.rs`); the
    /// engine's error from flushing the logs.
    pub(crate) fn close(&self) -> PyResult<()> {
        self.origin.check_exact()?;
        let Some(db) = self.db.write().take() else {
            return Ok(());
        };
        self.children.release_all(Owner::Database);
        let result = db.close();
        // Drops the engine database unless a call on another thread still holds it; that
        // thread drops it when its call returns.
        drop(db);
        result.map_err(errors::to_py)
    }
}
