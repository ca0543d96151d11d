//! The file-system seam: every byte the engine reads or writes goes through [`FileSystem`],
//! so tests can swap the real disk ([`StdFs`]) for an in-memory one (`MemFs`) or a
//! fault-injecting one (`FaultFs`) that fails or tears the Nth write/sync/rename and simulates
//! a crash that drops everything not yet synced (LevelDB `Env`, RocksDB `FileSystem`).
//!
//! Durability model shared by all implementations: data appended to a [`WritableFile`] is
//! durable only after [`WritableFile::sync`] (or [`FileSystem::sync_file`] on its path); a
//! file's creation, rename or removal is durable only after [`FileSystem::sync_dir`] on its
//! parent directory.

mod copy;
mod direct;
#[cfg(any(test, feature = "test-util"))]
pub mod fault;
#[cfg(any(test, feature = "test-util"))]
mod fault_plan;
#[cfg(target_os = "linux")]
mod mapped_append;
#[cfg(any(test, feature = "test-util"))]
pub mod mem;
mod staging;
mod std_fs;

pub use copy::{checksum_file, copy_file, link_or_copy, CopiedFile, Placed};
pub use direct::DIRECT_ALIGN;
#[cfg(any(test, feature = "test-util"))]
pub use fault::FaultFs;
#[cfg(any(test, feature = "test-util"))]
pub use fault_plan::{FaultMode, FaultOp};
#[cfg(any(test, feature = "test-util"))]
pub use mem::MemFs;
pub use staging::{parent_dir, StagedDir, STAGING_SUFFIX};
pub use std_fs::StdFs;

use crate::error::Result;
use std::path::Path;
use std::sync::Arc;

/// Bytes this process has copied into files written through a mapping
/// ([`FileSystem::create_log`] on [`StdFs`]), ever: with the bytes passed to `write(2)`
/// (`wchar` of `/proc/self/io`, which does not see them) they are every byte the engine
/// handed to the OS, what a write-amplification count needs.
pub fn mapped_bytes_written() -> u64 {
    #[cfg(target_os = "linux")]
    {
        mapped_append::MAPPED_BYTES_WRITTEN.load(std::sync::atomic::Ordering::Relaxed)
    }
    #[cfg(not(target_os = "linux"))]
    {
        0
    }
}

/// How SSTables and value-log segments are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReadMode {
    /// Map the file into memory; reads are slices of the mapping (fast when cached).
    #[default]
    Mmap,
    /// Read with positional `pread` calls into buffers.
    Pread,
    /// Read with `O_DIRECT` (past the kernel's page cache) into aligned buffers; what stays
    /// in memory is the database's own bounded cache (`Options::cache_bytes`). Files still
    /// being appended to are read with `Pread`. A file system that refuses `O_DIRECT`
    /// (tmpfs) fails the open with `InvalidArgument`. In-memory file systems read as `Pread`.
    Direct,
}

impl ReadMode {
    /// The mode's name as the command line spells it.
    pub fn name(self) -> &'static str {
        match self {
            ReadMode::Mmap => "mmap",
            ReadMode::Pread => "pread",
            ReadMode::Direct => "direct",
        }
    }
}

/// A file opened for appending. Not shared between threads; callers serialize.
pub trait WritableFile: Send {
    /// Appends `data` at the end of the file (may be buffered in user space).
    fn append(&mut self, data: &[u8]) -> Result<()>;
    /// Hands buffered bytes to the operating system, so readers of the file see them.
    fn flush(&mut self) -> Result<()>;
    /// Flushes and makes the content durable (fdatasync).
    fn sync(&mut self) -> Result<()>;
    /// Bytes appended so far (including buffered ones).
    fn len(&self) -> u64;
    /// True when nothing was appended.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A file opened for positional reads. Shared between threads.
#[allow(clippy::len_without_is_empty)]
pub trait RandomAccessFile: Send + Sync {
    /// Reads exactly `buf.len()` bytes starting at `offset`; an `Io` error of kind
    /// `UnexpectedEof` if the file is shorter.
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()>;
    /// The whole file as one slice when it is memory-mapped (or held in memory and
    /// immutable); `None` when reads must go through [`Self::read_exact_at`].
    fn as_slice(&self) -> Option<&[u8]>;
    /// The mapped file as a shared byte buffer (`Some` exactly when [`Self::as_slice`] is
    /// `Some` for a mapping): cheap to clone, and read without a virtual call per access, so
    /// table readers and scan cursors keep one and borrow keys and values straight from it.
    fn mapped(&self) -> Option<bytes::Bytes> {
        None
    }
    /// Current length of the file in bytes.
    fn len(&self) -> Result<u64>;
    /// Hints that `[offset, offset + len)` is about to be read: a file behind a cache reads
    /// the missing part with as few device requests as it can. Files without a cache ignore
    /// it. Never fails (a failed prefetch leaves the later read to report the error).
    fn prefetch(&self, _offset: u64, _len: u64) {}
}

/// Held while the database directory is locked; dropping it releases the lock.
pub trait FileLock: Send + Sync {}

/// The operations the engine needs from a file system.
pub trait FileSystem: Send + Sync + 'static {
    /// Creates `dir` and its parents if missing.
    fn create_dir_all(&self, dir: &Path) -> Result<()>;
    /// Creates (or truncates) `path` for appending.
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>>;
    /// Opens the existing file `path` for appending after its current end, truncating
    /// nothing; [`WritableFile::len`] starts at the file's size. The bytes already in the file
    /// become durable with the first [`WritableFile::sync`] (as with
    /// [`FileSystem::sync_file`]), whoever wrote them. Used to keep appending to the last
    /// value-log segment of an earlier process (docs/format/vlog.md, "Open").
    fn open_append(&self, path: &Path) -> Result<Box<dyn WritableFile>>;
    /// Creates (or truncates) `path` for a log: a file only ever appended to by one writer
    /// and read back only after that writer is gone (the WAL). Same contract as
    /// [`Self::create`], except that while the writer lives the file may be longer than
    /// [`WritableFile::len`], zero-filled past it (preallocated; a crash can leave that
    /// zero tail, which ends a log like a torn append). [`StdFs`] writes such a file through
    /// a memory mapping on Linux (no system call per record); the default is `create`.
    fn create_log(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.create(path)
    }
    /// Opens an existing file for positional reads. `mode` is a hint; an implementation
    /// without mmap may ignore it. Files still being appended to must be opened with
    /// [`ReadMode::Pread`] so reads see bytes appended after opening.
    fn open(&self, path: &Path, mode: ReadMode) -> Result<Arc<dyn RandomAccessFile>>;
    /// Reads a whole file.
    fn read_all(&self, path: &Path) -> Result<Vec<u8>>;
    /// Atomically renames `from` to `to`, replacing `to`.
    fn rename(&self, from: &Path, to: &Path) -> Result<()>;
    /// Removes a file.
    fn remove(&self, path: &Path) -> Result<()>;
    /// Names (not paths) of the entries of `dir`.
    fn list(&self, dir: &Path) -> Result<Vec<String>>;
    /// True if `path` exists.
    fn exists(&self, path: &Path) -> bool;
    /// Length of the file at `path`.
    fn size(&self, path: &Path) -> Result<u64>;
    /// Makes creations, renames and removals inside `dir` durable.
    fn sync_dir(&self, dir: &Path) -> Result<()>;
    /// Makes the whole current content of the existing file `path` durable, as
    /// [`WritableFile::sync`] does for a file being written: for a file that an earlier
    /// process appended to and only handed to the OS (e.g. the last value-log segment of a
    /// process that stopped without syncing it).
    fn sync_file(&self, path: &Path) -> Result<()>;
    /// Takes an exclusive lock on `path` (created if missing). Fails with `Error::Busy`
    /// if another handle, in this or another process, holds it.
    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>>;
    /// Gives the existing file `from` a second name `to` (a hard link: both names reach the
    /// same bytes, and removing one leaves the other), which must not exist. The new name
    /// is durable after [`Self::sync_dir`] on its directory; the bytes are as durable as
    /// the file's. Callers fall back to a copy when it fails (another device, a file system
    /// without links): the default refuses with an `Io` error of kind `Unsupported`.
    ///
    /// # Errors
    /// `Io` when the link cannot be made (`to` exists, `from` is missing, the two paths lie
    /// on different devices, or links are unsupported).
    fn hard_link(&self, from: &Path, _to: &Path) -> Result<()> {
        Err(unsupported("hard linking", from))
    }
    /// Renames the directory `from` to `to`, which must not exist, with everything in it,
    /// atomically. Durable after [`Self::sync_dir`] on the parent directories. The default
    /// refuses with an `Io` error of kind `Unsupported`.
    ///
    /// # Errors
    /// `Io` when `from` is not a directory, `to` exists, or the rename fails.
    fn rename_dir(&self, from: &Path, _to: &Path) -> Result<()> {
        Err(unsupported("renaming directory", from))
    }
    /// Removes the empty directory `dir`. Durable after [`Self::sync_dir`] on its parent.
    /// The default refuses with an `Io` error of kind `Unsupported`.
    ///
    /// # Errors
    /// `Io` when `dir` is missing, not a directory, or not empty.
    fn remove_dir(&self, dir: &Path) -> Result<()> {
        Err(unsupported("removing directory", dir))
    }
}

/// The error of an operation a [`FileSystem`] does not implement.
fn unsupported(what: &str, path: &Path) -> crate::error::Error {
    crate::error::Error::io(
        format!("{what} {}", path.display()),
        std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "not supported by this file system",
        ),
    )
}
