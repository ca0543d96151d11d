//! The CLI's error type and its mapping to exit statuses and messages (see `main.rs`).
//!
//! An engine failure keeps its kind ([`CliError::Engine`]) up to `main`, which picks the
//! exit status from it, so that a script can tell a database another process holds (3), a
//! change asked of a `--read-only` open (4) and a limit of the machine (5) from any other
//! failure (2).

/// Why a command did not succeed.
#[derive(Debug)]
pub enum CliError {
    /// `get` found no value: the message goes to stderr as is, exit status 1.
    NotFound(String),
    /// A failure of the command itself (bad arguments or input, a file it reads): printed
    /// as `error: <message>`, exit status 2.
    Failed(String),
    /// A failure the engine reported: printed as `error: <message>` with a hint for the
    /// kinds the command line can act on; the exit status follows the kind
    /// ([`CliError::exit_status`]).
    Engine(augur::Error),
}

/// Exit status of a command whose database another process or handle has open.
pub const EXIT_BUSY: u8 = 3;
/// Exit status of a change (a write, flush, compaction, GC) asked of a `--read-only` open.
pub const EXIT_READ_ONLY: u8 = 4;
/// Exit status of work refused by a limit of the machine (the live-table limit).
pub const EXIT_RESOURCE_LIMIT: u8 = 5;

impl CliError {
    /// A failure with a message.
    pub fn failed(msg: impl Into<String>) -> Self {
        CliError::Failed(msg.into())
    }

    /// The process's exit status: 1 key not found, 3 busy, 4 read-only, 5 a resource
    /// limit (also when it poisoned the database first), 2 anything else.
    pub fn exit_status(&self) -> u8 {
        match self {
            CliError::NotFound(_) => 1,
            CliError::Failed(_) => 2,
            CliError::Engine(e) => match e.root_cause() {
                augur::Error::Busy(_) => EXIT_BUSY,
                augur::Error::ReadOnly { .. } => EXIT_READ_ONLY,
                augur::Error::ResourceLimit(_) => EXIT_RESOURCE_LIMIT,
                _ => 2,
            },
        }
    }

    /// What goes to stderr: the message of `NotFound` as is, anything else as
    /// `error: <message>`, with what to do for the kinds the command line can act on.
    pub fn message(&self) -> String {
        match self {
            CliError::NotFound(m) => m.clone(),
            CliError::Failed(m) => format!("error: {m}"),
            CliError::Engine(e) => {
                let hint = match e.root_cause() {
                    augur::Error::Busy(m) if m.contains("backup directory") => {
                        " (wait for the other backup command to finish)"
                    }
                    augur::Error::Busy(_) => {
                        " (another process or handle has the database open; --read-only reads \
                         beside it)"
                    }
                    augur::Error::ReadOnly { .. } => {
                        " (opened with --read-only: run the command without it to change the \
                         database)"
                    }
                    augur::Error::ResourceLimit(_) => {
                        " (on the command line: --target-file-mb, --max-open-files, --read-mode)"
                    }
                    augur::Error::TaskPanicked { .. } => {
                        " (a bug in augur: please report it with this message)"
                    }
                    _ => "",
                };
                format!("error: {e}{hint}")
            }
        }
    }
}

impl From<augur::Error> for CliError {
    fn from(e: augur::Error) -> Self {
        CliError::Engine(e)
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;
    use std::sync::Arc;

    /// Each kind a script can act on has its exit status and hint; a poisoned database
    /// answers with the kind of the failure that poisoned it.
    #[test]
    fn engine_kinds_map_to_their_exit_status_and_hint() {
        let limit = augur::Error::ResourceLimit("vm.max_map_count".into());
        let cases = [
            (
                augur::Error::Busy("LOCK".into()),
                3,
                "--read-only reads beside it",
            ),
            (
                augur::Error::ReadOnly {
                    dir: PathBuf::from("/d"),
                },
                4,
                "run the command without it",
            ),
            (limit.clone(), 5, "--target-file-mb"),
            (
                augur::Error::poisoned("the database /d", Arc::new(limit)),
                5,
                "vm.max_map_count",
            ),
            (
                augur::Error::TaskPanicked {
                    task: "a sub-compaction".into(),
                    message: "boom".into(),
                },
                2,
                "a bug in augur",
            ),
            (
                augur::Error::corruption("/d/000001.sst", 7, "bad crc"),
                2,
                "bad crc",
            ),
        ];
        for (e, status, part) in cases {
            let cli = CliError::from(e);
            assert_eq!(cli.exit_status(), status, "{cli:?}");
            let m = cli.message();
            assert!(m.starts_with("error: ") && m.contains(part), "{m}");
        }
        assert_eq!(
            CliError::NotFound("key not found: k".into()).exit_status(),
            1
        );
        assert_eq!(CliError::failed("bad hex").message(), "error: bad hex");
    }
}
