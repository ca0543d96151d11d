//! Which process a database belongs to, so that a process forked from the one that opened
//! it cannot use it.
//!
//! `fork()` copies the parent's memory into the child, but only the thread that called it:
//! the engine's background threads (flush, compaction, the learner, value-log GC) do not
//! exist in the child, and the files and directory lock are the parent's. A child that used
//! the copy would wait forever for a flush no thread will do (`flush`, `close`), panic
//! joining threads that are not there (`close`, and so dropping the database at exit) and
//! write into the parent's log behind its back. So every use of a database, or of anything
//! made from it, in another process raises `ForkedError` naming both processes; and
//! dropping those objects there leaks their engine state on purpose (see the `Drop`s of
//! `Handle` and `Cell`) rather than run any engine code on the copy.
//!
//! What the child cannot be kept from is its copy of the parent's file descriptors. The
//! directory lock is a `flock`, which belongs to the open file both processes now share:
//! while a child forked with the database open lives, neither it nor (after closing) the
//! parent can open the database again (`BusyError`), because the engine lets go of the lock
//! by closing its descriptor rather than unlocking. So the way to use a database in a child
//! is to close it in the parent before forking and open it in the child.
//!
//! The check compares the id of the opening process with this process's id. Asking the
//! kernel (`getpid`) is a system call: about 350 ns on the Firecracker VM this was measured
//! on, more than a whole iterator step (~180 ns) and over half a point lookup (~550 ns). So
//! the id is cached here and refreshed in the child by an
//! `os.register_at_fork(after_in_child=...)` hook registered at import. CPython runs that
//! hook after every fork that returns to Python code (`os.fork`, `multiprocessing`'s fork
//! and forkserver start methods, C extensions calling `PyOS_AfterFork_Child`), and runs
//! the after-fork hooks in the order they were registered, so before any hook registered
//! by code that had a database to use. `close()` and the `Drop`s, which run once per
//! object, ask the kernel anyway: they must never run engine code in a child, even after a
//! fork that skipped the hooks.

use crate::errors;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

/// This process's id as of the last fork; 0 before the first use.
static PROCESS_ID: AtomicU32 = AtomicU32::new(0);

/// This process's id, from the cache.
fn current() -> u32 {
    match PROCESS_ID.load(Ordering::Relaxed) {
        0 => refresh(),
        pid => pid,
    }
}

/// Asks the kernel for this process's id and caches it.
fn refresh() -> u32 {
    let pid = std::process::id();
    PROCESS_ID.store(pid, Ordering::Relaxed);
    pid
}

/// The `after_in_child` hook of `os.register_at_fork`: the child has a new id.
#[pyfunction]
#[pyo3(name = "_after_fork_in_child")]
fn after_fork_in_child() {
    refresh();
}

/// Caches this process's id and registers the hook that refreshes it in forked children
/// (on platforms with `os.register_at_fork`; the others cannot fork).
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    refresh();
    let py = m.py();
    let os = py.import("os")?;
    if os.hasattr("register_at_fork")? {
        let kwargs = PyDict::new(py);
        kwargs.set_item("after_in_child", wrap_pyfunction!(after_fork_in_child, m)?)?;
        os.call_method("register_at_fork", (), Some(&kwargs))?;
    }
    Ok(())
}

/// Where a database was opened: the process (to refuse use in another) and the path (for
/// the message).
#[derive(Debug, Clone)]
pub(crate) struct Origin {
    pid: u32,
    path: Arc<Path>,
}

impl Origin {
    /// A database opened now, in this process, at `path`.
    pub(crate) fn here(path: &Path) -> Self {
        Origin {
            pid: current(),
            path: Arc::from(path),
        }
    }

    /// The database directory.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// One atomic load: the check of every call.
    ///
    /// # Errors
    /// `ForkedError` in a process forked from the one that opened the database.
    pub(crate) fn check(&self) -> PyResult<()> {
        self.compare(current())
    }

    /// The check of `close()`, by the kernel's process id (see the module doc).
    ///
    /// # Errors
    /// `ForkedError` in a process forked from the one that opened the database.
    pub(crate) fn check_exact(&self) -> PyResult<()> {
        self.compare(std::process::id())
    }

    /// True when this process, by the kernel's id, is not the one that opened the
    /// database: its engine state must be leaked, not dropped.
    pub(crate) fn is_foreign(&self) -> bool {
        std::process::id() != self.pid
    }

    fn compare(&self, pid: u32) -> PyResult<()> {
        if pid == self.pid {
            Ok(())
        } else {
            Err(errors::forked(&self.path, self.pid, pid))
        }
    }
}
