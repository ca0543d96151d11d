//! The harness's error type: a message saying what failed and, for I/O, what was being done.

use std::fmt;

/// Why a benchmark run did not succeed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BenchError(pub String);

impl BenchError {
    /// A failure with a message.
    pub fn failed(msg: impl Into<String>) -> Self {
        BenchError(msg.into())
    }
}

impl fmt::Display for BenchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BenchError {}

impl From<augur::Error> for BenchError {
    fn from(e: augur::Error) -> Self {
        BenchError(e.to_string())
    }
}

/// Wraps an I/O error with what was being done.
pub fn io_err(context: impl fmt::Display) -> impl FnOnce(std::io::Error) -> BenchError {
    move |e| BenchError(format!("{context}: {e}"))
}
