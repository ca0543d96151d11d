//! The exception classes of the `augur` module and the mapping of engine errors onto them.
//!
//! `augur.Error` is the base of every engine failure. `CorruptionError` (a damaged file or an
//! unsupported format version), `BusyError` (the directory is locked by another process or
//! handle), `ClosedError` (use after `close()`), `ForkedError` (use in a process forked from
//! the one that opened the database; see `fork.rs`), `InvalidArgumentError` (a bad
//! argument or option), `ReadOnlyError` (a change asked of a `read_only=True` handle),
//! `ResourceLimitError` (a limit of the machine, such as the kernel's mapping limit),
//! `PoisonedError` (writes refused after an earlier failure, whose exception is its
//! `__cause__`) and `TaskPanickedError` (an engine task panicked: a bug) subclass it. An I/O
//! error is an `augur.Error` itself. `InvalidArgumentError` is also a `ValueError`, so a bad
//! `open()` option raises a `ValueError` as Python code expects; it is built with `type()`
//! at import because PyO3's `create_exception!` takes a single base.

use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple, PyType};
use std::path::Path;

pyo3::create_exception!(
    augur,
    Error,
    PyException,
    "Base class of every error the Augur engine reports."
);
pyo3::create_exception!(
    augur,
    CorruptionError,
    Error,
    "A file of the database is damaged (bad checksum, magic or length) or was written by an \
     unsupported format version."
);
pyo3::create_exception!(
    augur,
    BusyError,
    Error,
    "The database directory is locked by another process or another open handle."
);
pyo3::create_exception!(
    augur,
    ForkedError,
    Error,
    "The database, or a snapshot, iterator or batch made from it, was used in a process \
     forked from the one that opened it. The child has none of the engine's background \
     threads and the files are the parent's, so every use raises this error. Open the \
     database in the child instead, with the parent's handle closed before the fork."
);
pyo3::create_exception!(
    augur,
    ClosedError,
    Error,
    "The database, snapshot or iterator was used after it was closed."
);

pyo3::create_exception!(
    augur,
    ReadOnlyError,
    Error,
    "A write, flush, compaction or garbage collection asked of a database opened with \
     read_only=True. Nothing was changed; open the database without read_only to change it."
);
pyo3::create_exception!(
    augur,
    ResourceLimitError,
    Error,
    "The work would pass a limit of the machine or the process (the kernel's mapping limit \
     vm.max_map_count, the open-files limit); the message names the limit and the options \
     that avoid it (max_open_files, target_file_mb, read_mode)."
);
pyo3::create_exception!(
    augur,
    PoisonedError,
    Error,
    "An earlier write, sync or background job failed, so the database refuses writes until \
     it is reopened (its state on disk is not known). The exception of that first failure \
     is this one's __cause__."
);
pyo3::create_exception!(
    augur,
    TaskPanickedError,
    Error,
    "A task the engine ran on a thread of its own (a sub-compaction) panicked: a bug in \
     Augur. The work was abandoned; a background write poisons the database."
);

/// `augur.InvalidArgumentError`, created at import (see the module doc).
static INVALID_ARGUMENT: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// Docstring of `InvalidArgumentError`.
const INVALID_ARGUMENT_DOC: &str = "A bad argument or option; the message names it. \
     Subclasses both augur.Error and ValueError.";

/// The `InvalidArgumentError` class, created on first use.
fn invalid_argument_type(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    let ty = INVALID_ARGUMENT.get_or_try_init(py, || -> PyResult<Py<PyType>> {
        let bases = PyTuple::new(
            py,
            [
                py.get_type::<Error>().into_any(),
                py.get_type::<PyValueError>().into_any(),
            ],
        )?;
        let namespace = PyDict::new(py);
        namespace.set_item("__module__", "augur")?;
        namespace.set_item("__doc__", INVALID_ARGUMENT_DOC)?;
        let ty = py
            .get_type::<PyType>()
            .call1(("InvalidArgumentError", bases, namespace))?;
        Ok(ty.cast_into::<PyType>()?.unbind())
    })?;
    Ok(ty.bind(py))
}

/// An `InvalidArgumentError` (a `ValueError`) with `message`.
pub(crate) fn invalid_argument(message: impl Into<String>) -> PyErr {
    let message = message.into();
    Python::attach(|py| match invalid_argument_type(py) {
        Ok(ty) => PyErr::from_type(ty.clone(), message),
        Err(e) => e,
    })
}

/// A `ClosedError` saying what was closed.
pub(crate) fn closed(what: &str) -> PyErr {
    ClosedError::new_err(format!("{what} is closed"))
}

/// A `ForkedError`: the database at `path`, opened in process `opened_in`, was used in
/// process `used_in`.
pub(crate) fn forked(path: &Path, opened_in: u32, used_in: u32) -> PyErr {
    ForkedError::new_err(format!(
        "database {} opened in process {opened_in} used in forked child {used_in}; open it \
         again in the child",
        path.display()
    ))
}

/// A `ReadOnlyError` saying what was refused.
pub(crate) fn read_only(message: impl Into<String>) -> PyErr {
    ReadOnlyError::new_err(message.into())
}

/// The Python exception for an engine error. A `PoisonedError`'s `__cause__` is the
/// exception of the failure that poisoned the database, mapped the same way.
pub(crate) fn to_py(e: augur::Error) -> PyErr {
    let message = e.to_string();
    match e {
        augur::Error::Corruption { .. } | augur::Error::UnsupportedVersion { .. } => {
            CorruptionError::new_err(message)
        }
        augur::Error::Busy(_) => BusyError::new_err(message),
        augur::Error::Closed => ClosedError::new_err(message),
        augur::Error::InvalidArgument(_) => invalid_argument(message),
        augur::Error::ReadOnly { .. } => read_only(message),
        augur::Error::ResourceLimit(_) => ResourceLimitError::new_err(message),
        augur::Error::TaskPanicked { .. } => TaskPanickedError::new_err(message),
        augur::Error::Poisoned { source, .. } => {
            let err = PoisonedError::new_err(message);
            let cause = to_py(source.as_ref().clone());
            Python::attach(|py| err.set_cause(py, Some(cause)));
            err
        }
        _ => Error::new_err(message),
    }
}

/// `augur._raise_engine_error(kind)`: raises the exception an engine error of `kind`
/// becomes (`"io"`, `"corruption"`, `"busy"`, `"read_only"`, `"resource_limit"`,
/// `"poisoned"` — by an I/O error —, `"task_panicked"`), for the tests of this mapping: most
/// of these kinds need a failing disk or a machine's limit to arise.
///
/// # Errors
/// Always: the mapped exception, or `InvalidArgumentError` for an unknown `kind`.
#[pyfunction]
#[pyo3(name = "_raise_engine_error")]
pub(crate) fn raise_engine_error(kind: &str) -> PyResult<()> {
    let io = || augur::Error::io("syncing 000007.wal", std::io::Error::other("disk gone"));
    let e = match kind {
        "io" => io(),
        "corruption" => augur::Error::corruption("000012.sst", 4096, "block checksum mismatch"),
        "busy" => augur::Error::Busy("LOCK is held by another process or handle".into()),
        "read_only" => augur::Error::ReadOnly { dir: "/db".into() },
        "resource_limit" => augur::Error::ResourceLimit("vm.max_map_count = 40".into()),
        "poisoned" => augur::Error::poisoned("the database /db", std::sync::Arc::new(io())),
        "task_panicked" => augur::Error::TaskPanicked {
            task: "a sub-compaction".into(),
            message: "boom".into(),
        },
        other => return Err(invalid_argument(format!("unknown error kind {other:?}"))),
    };
    Err(to_py(e))
}

/// Adds the exception classes to the module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("Error", py.get_type::<Error>())?;
    m.add("CorruptionError", py.get_type::<CorruptionError>())?;
    m.add("BusyError", py.get_type::<BusyError>())?;
    m.add("ClosedError", py.get_type::<ClosedError>())?;
    m.add("ForkedError", py.get_type::<ForkedError>())?;
    m.add("InvalidArgumentError", invalid_argument_type(py)?)?;
    m.add("ReadOnlyError", py.get_type::<ReadOnlyError>())?;
    m.add("ResourceLimitError", py.get_type::<ResourceLimitError>())?;
    m.add("PoisonedError", py.get_type::<PoisonedError>())?;
    m.add("TaskPanickedError", py.get_type::<TaskPanickedError>())?;
    Ok(())
}
