//! [`DirectFile`]: positional reads with `O_DIRECT`, past the kernel's page cache
//! (`ReadMode::Direct`).
//!
//! `O_DIRECT` requires the file offset, the length and the buffer address of every read to be
//! multiples of the device's logical block size. [`DirectFile::read_exact_at`] accepts any
//! range: it widens the range to [`DIRECT_ALIGN`]-aligned bounds, reads that into an aligned
//! bounce buffer (a plain `Vec` sliced at its first aligned address: no `unsafe`), and copies
//! the requested bytes out. A read that reaches the end of the file comes back short from the
//! kernel; it succeeds when the requested bytes were all read. Callers that read whole aligned
//! pages (the page cache, `cache::page_cache`) pay one copy of what they asked for.

use crate::error::{Error, Result};
use std::cell::RefCell;
use std::fs::File;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Alignment of every direct read's offset, length and buffer: 4 KiB covers every logical
/// block size Linux devices report (512 B or 4 KiB).
pub const DIRECT_ALIGN: usize = 4096;

/// A file opened with `O_DIRECT` for positional reads.
pub(super) struct DirectFile {
    path: PathBuf,
    file: File,
    len: u64,
}

thread_local! {
    /// Each thread's bounce buffer (reused; grows to the largest read the thread made).
    static BOUNCE: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

impl DirectFile {
    /// Opens `path` with `O_DIRECT`.
    ///
    /// # Errors
    /// `InvalidArgument` naming the other read modes when the file system refuses
    /// `O_DIRECT` (tmpfs, some FUSE and network file systems); `Io` otherwise.
    pub(super) fn open(path: &Path) -> Result<DirectFile> {
        let direct = rustix::fs::OFlags::DIRECT.bits() as i32;
        let file = match std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(direct)
            .open(path)
        {
            Ok(f) => f,
            Err(e) if e.raw_os_error() == Some(rustix::io::Errno::INVAL.raw_os_error()) => {
                return Err(refused(path));
            }
            Err(e) => return Err(Error::io(format!("opening {}", path.display()), e)),
        };
        let len = file
            .metadata()
            .map_err(|e| Error::io(format!("stat of {}", path.display()), e))?
            .len();
        Ok(DirectFile {
            path: path.to_path_buf(),
            file,
            len,
        })
    }

    /// Reads exactly `buf.len()` bytes at `offset` through an aligned read.
    ///
    /// # Errors
    /// `Io` (`UnexpectedEof` when the file is shorter); `InvalidArgument` when the file
    /// system rejects the aligned read itself.
    pub(super) fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        if buf.is_empty() {
            return Ok(());
        }
        let align = DIRECT_ALIGN as u64;
        let start = offset / align * align;
        let end = offset
            .checked_add(buf.len() as u64)
            .ok_or_else(|| self.eof())?;
        if end > self.len {
            return Err(self.eof());
        }
        let span = usize::try_from(end.div_ceil(align) * align - start).map_err(|_| self.eof())?;
        let skip = (offset - start) as usize;
        BOUNCE.with(|cell| {
            let mut bounce = cell.borrow_mut();
            if bounce.len() < span + DIRECT_ALIGN {
                bounce.resize(span + DIRECT_ALIGN, 0);
            }
            let at = bounce.as_ptr().align_offset(DIRECT_ALIGN);
            let aligned = &mut bounce[at..at + span];
            let got = self.read_aligned(start, aligned)?;
            if got < skip + buf.len() {
                return Err(self.eof());
            }
            buf.copy_from_slice(&aligned[skip..skip + buf.len()]);
            Ok(())
        })
    }

    /// Fills `aligned` from `offset` (both aligned) until it is full or the file ends;
    /// returns the bytes read.
    fn read_aligned(&self, offset: u64, aligned: &mut [u8]) -> Result<usize> {
        let mut got = 0;
        while got < aligned.len() {
            match self.file.read_at(&mut aligned[got..], offset + got as u64) {
                Ok(0) => break,
                // A short read ends at the end of the file; the next read returns 0.
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) if e.raw_os_error() == Some(rustix::io::Errno::INVAL.raw_os_error()) => {
                    return Err(refused(&self.path));
                }
                Err(e) => return Err(Error::io(format!("reading {}", self.path.display()), e)),
            }
            if got % DIRECT_ALIGN != 0 {
                break;
            }
        }
        Ok(got)
    }

    fn eof(&self) -> Error {
        Error::io(
            format!("reading {}", self.path.display()),
            std::io::Error::from(std::io::ErrorKind::UnexpectedEof),
        )
    }
}

impl super::RandomAccessFile for DirectFile {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        DirectFile::read_exact_at(self, offset, buf)
    }

    fn as_slice(&self) -> Option<&[u8]> {
        None
    }

    /// The length at open: files read directly are immutable (sealed tables and segments).
    fn len(&self) -> Result<u64> {
        Ok(self.len)
    }
}

/// The error for a file system that refuses `O_DIRECT`.
fn refused(path: &Path) -> Error {
    Error::InvalidArgument(format!(
        "the file system holding {} refuses direct I/O (O_DIRECT; tmpfs and some network \
         file systems do): use --read-mode pread or --read-mode mmap there",
        path.display()
    ))
}
