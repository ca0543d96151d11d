//! Keys and values passed from Python: `bytes`, `bytearray` or `memoryview`.
//!
//! A `bytes` object is immutable, so its buffer is borrowed without a copy and may be read
//! while the GIL is released (the argument keeps the object alive for the whole call). A
//! `bytearray` or `memoryview` can be changed by another thread once the GIL is released,
//! so its contents are copied first. A `str` is refused with a `TypeError` that says to
//! encode it: the store holds bytes, and picking an encoding silently would be a guess.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyByteArrayMethods, PyBytes, PyMemoryView, PyString};
use pyo3::Borrowed;

/// A byte string argument: borrowed from a `bytes` object, or copied from a mutable buffer.
pub(crate) enum BytesArg<'a> {
    /// The buffer of an immutable `bytes` object.
    Borrowed(&'a [u8]),
    /// A copy of a `bytearray` or `memoryview`.
    Owned(Vec<u8>),
}

impl AsRef<[u8]> for BytesArg<'_> {
    fn as_ref(&self) -> &[u8] {
        match self {
            BytesArg::Borrowed(b) => b,
            BytesArg::Owned(v) => v,
        }
    }
}

impl<'a, 'py> FromPyObject<'a, 'py> for BytesArg<'a> {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        if let Ok(b) = <&'a [u8] as FromPyObject<'a, 'py>>::extract(obj) {
            return Ok(BytesArg::Borrowed(b));
        }
        if let Ok(b) = obj.cast::<PyByteArray>() {
            return Ok(BytesArg::Owned(b.to_vec()));
        }
        if obj.cast::<PyMemoryView>().is_ok() {
            // `tobytes()` also flattens non-contiguous views, in C order.
            let copy = obj.call_method0("tobytes")?;
            let copy = copy.cast::<PyBytes>()?;
            return Ok(BytesArg::Owned(copy.as_bytes().to_vec()));
        }
        Err(not_bytes(&obj))
    }
}

/// The `TypeError` for an argument that is not bytes-like.
fn not_bytes(obj: &Borrowed<'_, '_, PyAny>) -> PyErr {
    if obj.is_instance_of::<PyString>() {
        return PyTypeError::new_err(
            "keys and values must be bytes, bytearray or memoryview, not str \
             (encode it first, e.g. key.encode())",
        );
    }
    let type_name = obj
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into());
    PyTypeError::new_err(format!(
        "keys and values must be bytes, bytearray or memoryview, not {type_name}"
    ))
}
