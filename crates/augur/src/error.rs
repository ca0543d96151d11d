//! The one error type of the engine.
//!
//! Every fallible operation returns [`Result`]. Variants are structured so callers can
//! react: retry on `Busy`, repair on `Corruption`, fix the call on `InvalidArgument`, open
//! for writing on `ReadOnly`, change the options or the machine's limit on `ResourceLimit`,
//! reopen on `Poisoned` (whose [`source`](std::error::Error::source) is the first failure,
//! kind and all: [`Error::root_cause`]). A missing key is never an error: reads return
//! `Ok(None)`.
//!
//! `Error` is `Clone` (an I/O error is shared behind an `Arc`) so that one failure can be
//! handed to every thread it concerns: the followers of a failed write group, and every
//! write refused by a poisoned database, get the first failure itself, not its text.

use std::any::Any;
use std::path::PathBuf;
use std::sync::Arc;

/// Result alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong inside Augur.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An operating-system I/O error, with what the engine was doing at the time.
    #[error("I/O error while {context}: {source}")]
    Io {
        /// What the engine was doing (e.g. "appending to 000012.wal").
        context: String,
        /// The underlying error (shared, so that the error can be cloned).
        #[source]
        source: Arc<std::io::Error>,
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
    /// A write, flush, compaction or garbage collection asked of a database opened with
    /// `Options::read_only`. Nothing was changed; open the database for writing instead.
    #[error("the database {} is open for reading only (Options::read_only)", dir.display())]
    ReadOnly {
        /// The database's directory.
        dir: PathBuf,
    },
    /// The work would pass a limit of the machine or the process (the kernel's mapping
    /// limit, the open-files limit); the message names the limit, where its value comes
    /// from, and the options or settings that avoid it. Nothing is wrong with the call
    /// itself: with other options, or a raised limit, it succeeds.
    #[error("resource limit: {0}")]
    ResourceLimit(String),
    /// The database directory is locked by another handle or process.
    #[error("database is busy: {0}")]
    Busy(String),
    /// A previous write, fsync or background job failed; the database (or one of its logs)
    /// refuses further writes until reopened, because the state on disk is no longer known
    /// (the fsync-gate lesson). `source` is that first failure, shared by every error it
    /// causes: match on [`Error::root_cause`] to learn its kind.
    #[error("{what} is poisoned by an earlier failure (writes are refused until it is reopened): {source}")]
    Poisoned {
        /// What refuses writes: the database, a WAL, a value-log segment.
        what: String,
        /// The first failure.
        #[source]
        source: Arc<Error>,
    },
    /// A task the engine ran on a thread of its own (a sub-compaction) panicked: a bug in
    /// the engine or in an extension it called (a [`FileSystem`](crate::fs::FileSystem)).
    /// The work was abandoned as after any failure, and a background write poisons the
    /// database.
    #[error("{task} panicked: {message}")]
    TaskPanicked {
        /// The task (e.g. "a sub-compaction").
        task: String,
        /// The panic's message (`"(no message)"` when its payload was not text).
        message: String,
    },
    /// The database has been closed.
    #[error("database is closed")]
    Closed,
}

impl Error {
    /// Builds an [`Error::Io`] from an `io::Error` and a description of the operation.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source: Arc::new(source),
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

    /// Builds an [`Error::Poisoned`]: `what` refuses writes after `first`.
    pub fn poisoned(what: impl Into<String>, first: Arc<Error>) -> Self {
        Error::Poisoned {
            what: what.into(),
            source: first,
        }
    }

    /// Builds an [`Error::TaskPanicked`] from a panic's payload (what `JoinHandle::join`
    /// returns), keeping its message when it is text.
    pub fn panicked(task: impl Into<String>, payload: &(dyn Any + Send)) -> Self {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "(no message)".into());
        Error::TaskPanicked {
            task: task.into(),
            message,
        }
    }

    /// The first failure behind this error: the source of a [`Error::Poisoned`] (followed
    /// through poisoned logs to the failure that poisoned them), otherwise `self`.
    pub fn root_cause(&self) -> &Error {
        let mut e = self;
        while let Error::Poisoned { source, .. } = e {
            e = source;
        }
        e
    }

    /// True when this is an [`Error::Corruption`].
    pub fn is_corruption(&self) -> bool {
        matches!(self, Error::Corruption { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_poisoned_error_keeps_its_first_failure_and_kind() {
        let first = Arc::new(Error::io(
            "syncing 000007.wal",
            std::io::Error::new(std::io::ErrorKind::StorageFull, "disk full"),
        ));
        let wal = Error::poisoned("log /db/000007.wal", first);
        let db = Error::poisoned("the database /db", Arc::new(wal.clone()));
        match db.root_cause() {
            Error::Io { context, source } => {
                assert_eq!(context, "syncing 000007.wal");
                assert_eq!(source.kind(), std::io::ErrorKind::StorageFull);
            }
            other => panic!("root cause {other:?}"),
        }
        // The chain is reachable through `source()` too, and the text names every step.
        let source = std::error::Error::source(&db).map(|s| s.to_string());
        assert_eq!(source, Some(wal.to_string()));
        let text = db.to_string();
        for part in [
            "the database /db is poisoned",
            "log /db/000007.wal",
            "disk full",
        ] {
            assert!(text.contains(part), "{part:?} missing from {text}");
        }
        assert!(matches!(Error::Closed.root_cause(), Error::Closed));
    }

    #[test]
    fn a_panic_becomes_task_panicked_with_its_message() {
        for (payload, message) in [
            (
                std::thread::spawn(|| panic!("static text")).join(),
                "static text",
            ),
            (
                std::thread::spawn(|| panic!("formatted {}", 7)).join(),
                "formatted 7",
            ),
            (
                std::thread::spawn(|| std::panic::panic_any(7u32)).join(),
                "(no message)",
            ),
        ] {
            let Err(payload) = payload else {
                panic!("the thread did not panic");
            };
            let e = Error::panicked("a sub-compaction", payload.as_ref());
            assert!(
                matches!(&e, Error::TaskPanicked { task, message: m } if task == "a sub-compaction" && m == message),
                "{e:?}"
            );
            assert_eq!(
                e.to_string(),
                format!("a sub-compaction panicked: {message}")
            );
        }
    }
}
