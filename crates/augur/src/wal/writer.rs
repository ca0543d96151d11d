//! [`LogWriter`]: appends framed records to a WAL or MANIFEST file.

use super::format::{encode_header, encode_record_header, LogKind, HEADER_LEN};
use crate::error::{Error, Result};
use crate::fs::{FileSystem, WritableFile};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Appends records to one log file. Not thread-safe by itself: the owner (the write path's
/// group commit, or the manifest writer) serializes calls.
///
/// Invariant: after a failed append, flush or sync the file's tail is unknown (a torn
/// record may sit there, durable or not), so every later call fails with
/// [`Error::Poisoned`] naming that first failure. A record appended after a torn one would
/// turn a droppable torn tail into corruption in the middle of the log, and a sync would
/// make the torn bytes durable and count them as synced.
pub struct LogWriter {
    file: Box<dyn WritableFile>,
    path: PathBuf,
    /// The first failure, once one happened.
    failed: Option<Arc<Error>>,
}

impl std::fmt::Debug for LogWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogWriter")
            .field("path", &self.path)
            .field("len", &self.file.len())
            .finish()
    }
}

impl LogWriter {
    /// Creates (or truncates) `path`, writes the file header for `kind` and syncs it, so a
    /// log that exists after a crash starts with a valid header unless the crash hit this
    /// very call. The caller syncs the parent directory to make the file's name durable.
    ///
    /// # Errors
    /// `Io` if the file cannot be created, written or synced.
    pub fn create(fs: &dyn FileSystem, path: &Path, kind: LogKind) -> Result<LogWriter> {
        // The WAL takes a record per write group: written through a mapping where the file
        // system offers one (`FileSystem::create_log`). The manifest, rewritten whole at
        // times and appended to rarely, is written plainly.
        let mut file = match kind {
            LogKind::Wal => fs.create_log(path)?,
            LogKind::Manifest => fs.create(path)?,
        };
        file.append(&encode_header(kind))?;
        file.sync()?;
        debug_assert_eq!(file.len(), HEADER_LEN as u64);
        Ok(LogWriter {
            file,
            path: path.to_path_buf(),
            failed: None,
        })
    }

    /// Appends one record holding `payload`. The bytes may stay in a user-space buffer until
    /// [`Self::flush`] or [`Self::sync`].
    ///
    /// # Errors
    /// `InvalidArgument` if the payload exceeds `u32::MAX` bytes (nothing written); `Io` on
    /// a write failure, after which the file's tail is unknown; `Poisoned` after an earlier
    /// failure (see the type's invariant).
    pub fn add_record(&mut self, payload: &[u8]) -> Result<()> {
        if u32::try_from(payload.len()).is_err() {
            return Err(Error::InvalidArgument(format!(
                "log record of {} bytes exceeds the 4 GiB limit ({})",
                payload.len(),
                self.path.display()
            )));
        }
        self.check_usable()?;
        let header = encode_record_header(payload);
        let appended = self
            .file
            .append(&header)
            .and_then(|()| self.file.append(payload));
        self.note_failure(appended)
    }

    /// Hands buffered bytes to the operating system (survives a process crash, not a power
    /// cut).
    ///
    /// # Errors
    /// `Io` on a write failure; `Poisoned` after an earlier failure.
    pub fn flush(&mut self) -> Result<()> {
        self.check_usable()?;
        let flushed = self.file.flush();
        self.note_failure(flushed)
    }

    /// Flushes and makes every appended record durable.
    ///
    /// # Errors
    /// `Io` on a write or fsync failure; `Poisoned` after an earlier failure.
    pub fn sync(&mut self) -> Result<()> {
        self.check_usable()?;
        let synced = self.file.sync();
        self.note_failure(synced)
    }

    /// Fails once an append, flush or sync has failed.
    fn check_usable(&self) -> Result<()> {
        match &self.failed {
            None => Ok(()),
            Some(first) => Err(Error::poisoned(
                format!(
                    "log {} (not written to again: a failed write or sync left its tail \
                     unknown)",
                    self.path.display()
                ),
                first.clone(),
            )),
        }
    }

    /// Remembers the first failure of `result`, then returns it.
    fn note_failure(&mut self, result: Result<()>) -> Result<()> {
        if let Err(e) = &result {
            self.failed.get_or_insert_with(|| Arc::new(e.clone()));
        }
        result
    }

    /// Bytes in the file so far, header and buffered records included.
    pub fn len(&self) -> u64 {
        self.file.len()
    }

    /// True when no record was added (the file holds only its header).
    pub fn is_empty(&self) -> bool {
        self.file.len() <= HEADER_LEN as u64
    }

    /// The file's path.
    #[cfg(test)]
    pub fn path(&self) -> &Path {
        &self.path
    }
}
