//! The exception classes of the `augur` module and the mapping of engine errors onto them.
//!
//! `augur.Error` is the base of every engine failure. `CorruptionError` (a damaged file or an
//! unsupported format version), `BusyError` (the directory is locked by another process or
//! handle), `ClosedError` (use after `close()`), `ForkedError` (use in a process forked from
//! the one that opened the database; see `fork.rs`) and `InvalidArgumentError` (a bad
//! argument or option) subclass it. `InvalidArgumentError` is also a `ValueError`, so a bad
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

/// The Python exception for an engine error.
pub(crate) fn to_py(e: augur::Error) -> PyErr {
    let message = e.to_string();
    match e {
        augur::Error::Corruption { .. } | augur::Error::UnsupportedVersion { .. } => {
            CorruptionError::new_err(message)
        }
        augur::Error::Busy(_) => BusyError::new_err(message),
        augur::Error::Closed => ClosedError::new_err(message),
        augur::Error::InvalidArgument(_) => invalid_argument(message),
        _ => Error::new_err(message),
    }
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
    Ok(())
}
