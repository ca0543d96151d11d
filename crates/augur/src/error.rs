//! The one error type of the engine.
//!
//! Every fallible operation returns [`Result`]. Variants are structured so callers can
//! react (retry on `Busy`, repair on `Corruption`, fix the call on `InvalidArgument`).
//! A missing key is never an error: reads return `Ok(None)`.

use std::path::PathBuf;

/// Result alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong inside Augur.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An operating-system I/O error, with what the engine was doing at the time.
    #[error("I/O error while {context}: {source}")]
    Io {
        /// What the engine was doing (e.g. "appending to 000012.wal").
        context: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A file's content is not what the engine wrote: bad checksum, bad magic, truncation.
    #[error("corruption in {} at offset {offset}: {reason}", file.display())]
    Corruption {
        /// The file that is corrupt.
        file: PathBuf,
        /// Byte offset of the damaged record or section.
        offset: u64,
        /// What check failed.
        reason: String,
    },
    /// A file was written by a format version this build cannot read.
    #[error("unsupported format version {version} in {}", file.display())]
    UnsupportedVersion {
        /// The file.
        file: PathBuf,
        /// The version found in it.
        version: u32,
    },
    /// The caller passed a bad argument or option; the message names it.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The database directory is locked by another handle or process.
    #[error("database is busy: {0}")]
    Busy(String),
    /// A previous write or fsync failed; the database refuses further writes until reopened,
    /// because the state on disk is no longer known (the fsync-gate lesson).
    #[error("database is poisoned by an earlier failure: {0}")]
    Poisoned(String),
    /// The database has been closed.
    #[error("database is closed")]
    Closed,
}

impl Error {
    /// Builds an [`Error::Io`] from an `io::Error` and a description of the operation.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }

    /// Builds an [`Error::Corruption`] for `file` at `offset`.
    pub fn corruption(file: impl Into<PathBuf>, offset: u64, reason: impl Into<String>) -> Self {
        Error::Corruption {
            file: file.into(),
            offset,
            reason: reason.into(),
        }
    }

    /// True when this is an [`Error::Corruption`].
    pub fn is_corruption(&self) -> bool {
        matches!(self, Error::Corruption { .. })
    }
}
