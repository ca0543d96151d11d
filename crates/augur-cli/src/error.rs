//! The CLI's error type and its mapping to exit statuses (see `main.rs`).

/// Why a command did not succeed.
#[derive(Debug)]
pub enum CliError {
    /// `get` found no value: the message goes to stderr as is, exit status 1.
    NotFound(String),
    /// Anything else: printed as `error: <message>`, exit status 2.
    Failed(String),
}

impl CliError {
    /// A failure with a message.
    pub fn failed(msg: impl Into<String>) -> Self {
        CliError::Failed(msg.into())
    }
}

impl From<augur::Error> for CliError {
    fn from(e: augur::Error) -> Self {
        CliError::Failed(e.to_string())
    }
}

impl From<augur_bench::BenchError> for CliError {
    fn from(e: augur_bench::BenchError) -> Self {
        CliError::Failed(e.0)
    }
}

/// Wraps an I/O error with what was being done.
pub fn io_err(context: impl std::fmt::Display) -> impl FnOnce(std::io::Error) -> CliError {
    move |e| CliError::Failed(format!("{context}: {e}"))
}
