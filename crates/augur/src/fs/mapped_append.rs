//! [`MappedAppend`]: an append-only file written through a shared memory mapping, the
//! real file system's writer for the write-ahead log ([`FileSystem::create_log`]).
//!
//! Why: with one writer thread, handing each small WAL record to the kernel with its own
//! `write(2)` cost a third of the writer's time (a 3M-key fill with 64-byte values: 8.2 µs
//! per put with a `write(2)` per record, 5.5 µs without; docs/benchmarks/write-path.md). A
//! record copied into a `MAP_SHARED` mapping is in the page cache as soon as the copy
//! ends, exactly where `write(2)` would have put it: it survives a crash of the process and
//! becomes durable with `fsync`, so the durability contract of [`WritableFile`] holds
//! unchanged and no system call is made per record.
//!
//! Layout: the file grows in windows of [`WINDOW_BYTES`]; a window's blocks are allocated
//! with `fallocate` before it is mapped (so running out of space is an error here, never a
//! `SIGBUS` on a later store), and only the window being written is mapped (a few pages
//! of the process's resident memory, whatever the log's size). The file's size is therefore
//! a whole number of windows while it is written, the bytes past [`WritableFile::len`]
//! zeros; dropping the writer trims the file to `len`. A reader meets those zeros only after
//! a crash, where they are the log's torn tail (an all-zero record header ends a log,
//! `docs/format/wal.md`).
//!
//! [`FileSystem::create_log`]: super::FileSystem::create_log

use super::WritableFile;
use crate::error::{Error, Result};
use memmap2::{MmapMut, MmapOptions};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes mapped and allocated at a time.
pub(super) const WINDOW_BYTES: u64 = 1 << 20;

/// Bytes copied into mapped files by this process, ever (`write(2)` does not see them; see
/// [`super::mapped_bytes_written`]).
pub(super) static MAPPED_BYTES_WRITTEN: AtomicU64 = AtomicU64::new(0);

/// An append-only file written through a mapping of its last window (see the module doc).
pub(super) struct MappedAppend {
    path: PathBuf,
    file: File,
    /// The mapped window, starting at file offset `window_start`.
    window: Option<MmapMut>,
    window_start: u64,
    /// Bytes appended.
    len: u64,
}

fn io_error(what: &str, path: &Path, e: impl Into<std::io::Error>) -> Error {
    Error::io(format!("{what} {}", path.display()), e.into())
}

impl MappedAppend {
    /// Writes into the empty file `file` (at `path`), or `Ok(None)` when its file system
    /// cannot allocate blocks ahead (no `fallocate`): the caller then writes it with
    /// `write(2)`.
    ///
    /// # Errors
    /// `Io` when the first window cannot be allocated or mapped (a full disk, say).
    pub(super) fn new(path: &Path, file: File) -> Result<Option<MappedAppend>> {
        let mut w = MappedAppend {
            path: path.to_path_buf(),
            file,
            window: None,
            window_start: 0,
            len: 0,
        };
        match w.map_window(0) {
            Ok(()) => Ok(Some(w)),
            Err(e) if e == rustix::io::Errno::NOTSUP || e == rustix::io::Errno::NOSYS => Ok(None),
            Err(e) => Err(io_error("allocating", path, e)),
        }
    }

    /// Allocates and maps the window that starts at `start` (a multiple of
    /// [`WINDOW_BYTES`]), unmapping the previous one; its dirty pages stay in the page cache.
    fn map_window(&mut self, start: u64) -> std::result::Result<(), rustix::io::Errno> {
        self.window = None;
        rustix::fs::fallocate(
            &self.file,
            rustix::fs::FallocateFlags::empty(),
            start,
            WINDOW_BYTES,
        )?;
        // SAFETY: the mapping covers bytes `fallocate` just allocated inside the file's size
        // (mode 0 extends it), so no access faults past the end of the file. Only this writer
        // writes the file (the WAL is created by the process holding the database's lock and
        // written by its group-commit leader alone), and nothing truncates it while it is
        // mapped: `Drop` trims it after unmapping. Readers of the log (recovery, `verify`)
        // read it with `read(2)` in a later open.
        #[expect(
            unsafe_code,
            reason = "the WAL written through a mapping; docs/UNSAFE.md"
        )]
        let map = unsafe {
            MmapOptions::new()
                .offset(start)
                .len(WINDOW_BYTES as usize)
                .map_mut(&self.file)
        }
        .map_err(|e| rustix::io::Errno::from_io_error(&e).unwrap_or(rustix::io::Errno::IO))?;
        self.window = Some(map);
        self.window_start = start;
        Ok(())
    }
}

impl WritableFile for MappedAppend {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        let mut rest = data;
        while !rest.is_empty() {
            let at = self.len - self.window_start;
            if self.window.is_none() || at == WINDOW_BYTES {
                let start = self.len - self.len % WINDOW_BYTES;
                self.map_window(start)
                    .map_err(|e| io_error("allocating", &self.path, e))?;
            }
            let at = (self.len - self.window_start) as usize;
            let window = self.window.as_mut().expect("mapped above");
            let n = rest.len().min(window.len() - at);
            window[at..at + n].copy_from_slice(&rest[..n]);
            self.len += n as u64;
            rest = &rest[n..];
        }
        MAPPED_BYTES_WRITTEN.fetch_add(data.len() as u64, Ordering::Relaxed);
        Ok(())
    }

    /// Nothing to do: appended bytes are in the page cache as soon as they are copied.
    fn flush(&mut self) -> Result<()> {
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        if let Some(window) = &self.window {
            window
                .flush()
                .map_err(|e| io_error("syncing", &self.path, e))?;
        }
        // Earlier windows (unmapped, their pages dirty in the page cache) and the size.
        self.file
            .sync_data()
            .map_err(|e| io_error("syncing", &self.path, e))
    }

    fn len(&self) -> u64 {
        self.len
    }
}

impl Drop for MappedAppend {
    /// Trims the zeros past the last append. Best effort: a file left at its allocated size
    /// reads the same (a zero tail ends a log).
    fn drop(&mut self) {
        self.window = None;
        let _ = self.file.set_len(self.len);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(path: &Path) -> MappedAppend {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .unwrap();
        MappedAppend::new(path, file)
            .unwrap()
            .expect("the test directory's file system allocates ahead")
    }

    #[test]
    fn appends_across_windows_read_back_and_trim_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let mut w = open(&path);
        let mut expected = Vec::new();
        // Records of odd sizes, so some straddle a window boundary.
        for i in 0..3000u32 {
            let record: Vec<u8> = (0..(i % 1500) + 1).map(|j| (i ^ j) as u8).collect();
            w.append(&record).unwrap();
            expected.extend_from_slice(&record);
        }
        assert!(expected.len() as u64 > 2 * WINDOW_BYTES);
        assert_eq!(w.len(), expected.len() as u64);
        w.flush().unwrap();
        // Before the drop: readable through the page cache, the tail zero-filled.
        let seen = std::fs::read(&path).unwrap();
        assert_eq!(seen.len() as u64 % WINDOW_BYTES, 0);
        assert_eq!(&seen[..expected.len()], &expected[..]);
        assert!(seen[expected.len()..].iter().all(|&b| b == 0));
        w.sync().unwrap();
        drop(w);
        assert_eq!(std::fs::read(&path).unwrap(), expected);
    }

    #[test]
    fn counts_the_bytes_it_copies() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = open(&dir.path().join("log"));
        let before = MAPPED_BYTES_WRITTEN.load(Ordering::Relaxed);
        w.append(&[7u8; 1000]).unwrap();
        assert!(MAPPED_BYTES_WRITTEN.load(Ordering::Relaxed) >= before + 1000);
    }
}
