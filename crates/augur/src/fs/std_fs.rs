//! [`StdFs`]: the real file system through `std::fs`, with mmap or pread reads.

use super::{FileLock, FileSystem, RandomAccessFile, ReadMode, WritableFile};
use crate::error::{Error, Result};
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The operating system's file system.
#[derive(Debug, Default, Clone, Copy)]
pub struct StdFs;

/// Maps an `io::Error` to `Error::Io`; the context string is built only on failure (this
/// runs on every append).
fn ctx<'a>(what: &'a str, path: &'a Path) -> impl FnOnce(std::io::Error) -> Error + 'a {
    move |e| Error::io(format!("{what} {}", path.display()), e)
}

const WRITE_BUFFER_BYTES: usize = 64 * 1024;

struct StdWritable {
    path: PathBuf,
    out: BufWriter<File>,
    len: u64,
}

impl WritableFile for StdWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.out
            .write_all(data)
            .map_err(ctx("appending to", &self.path))?;
        self.len += data.len() as u64;
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        self.out.flush().map_err(ctx("flushing", &self.path))
    }

    fn sync(&mut self) -> Result<()> {
        self.flush()?;
        self.out
            .get_ref()
            .sync_data()
            .map_err(ctx("syncing", &self.path))
    }

    fn len(&self) -> u64 {
        self.len
    }
}

struct PreadFile {
    path: PathBuf,
    file: File,
}

impl RandomAccessFile for PreadFile {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        self.file
            .read_exact_at(buf, offset)
            .map_err(ctx("reading", &self.path))
    }

    fn as_slice(&self) -> Option<&[u8]> {
        None
    }

    fn len(&self) -> Result<u64> {
        Ok(self
            .file
            .metadata()
            .map_err(ctx("stat of", &self.path))?
            .len())
    }
}

struct MmapFile {
    path: PathBuf,
    /// The mapping (owned by the `Bytes`; empty for an empty file).
    map: bytes::Bytes,
}

impl RandomAccessFile for MmapFile {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let data = self.as_slice().unwrap_or(&[]);
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        match start
            .checked_add(buf.len())
            .and_then(|end| data.get(start..end))
        {
            Some(src) => {
                buf.copy_from_slice(src);
                Ok(())
            }
            None => Err(Error::io(
                format!("reading {}", self.path.display()),
                std::io::Error::from(std::io::ErrorKind::UnexpectedEof),
            )),
        }
    }

    fn as_slice(&self) -> Option<&[u8]> {
        Some(&self.map)
    }

    fn mapped(&self) -> Option<bytes::Bytes> {
        Some(self.map.clone())
    }

    fn len(&self) -> Result<u64> {
        Ok(self.map.len() as u64)
    }
}

struct StdLock {
    file: File,
}

impl FileLock for StdLock {}

impl Drop for StdLock {
    /// Unlocks explicitly: the lock (`flock`) belongs to the open file description, which a
    /// process forked while the database was open shares; closing this descriptor alone
    /// would leave the directory locked for as long as the child lives.
    fn drop(&mut self) {
        let _ = self.file.unlock();
    }
}

impl FileSystem for StdFs {
    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        std::fs::create_dir_all(dir).map_err(ctx("creating directory", dir))
    }

    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .map_err(ctx("creating", path))?;
        Ok(Box::new(StdWritable {
            path: path.to_path_buf(),
            out: BufWriter::with_capacity(WRITE_BUFFER_BYTES, file),
            len: 0,
        }))
    }

    fn create_log(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        #[cfg(target_os = "linux")]
        {
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(true)
                .open(path)
                .map_err(ctx("creating", path))?;
            if let Some(mapped) = super::mapped_append::MappedAppend::new(path, file)? {
                return Ok(Box::new(mapped));
            }
        }
        // No mapping (or no `fallocate` here): `write(2)` per flush.
        self.create(path)
    }

    fn open_append(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let file = OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(ctx("opening for appending", path))?;
        let len = file.metadata().map_err(ctx("stat of", path))?.len();
        Ok(Box::new(StdWritable {
            path: path.to_path_buf(),
            out: BufWriter::with_capacity(WRITE_BUFFER_BYTES, file),
            len,
        }))
    }

    fn open(&self, path: &Path, mode: ReadMode) -> Result<Arc<dyn RandomAccessFile>> {
        let open = || File::open(path).map_err(ctx("opening", path));
        match mode {
            ReadMode::Direct => Ok(Arc::new(super::direct::DirectFile::open(path)?)),
            ReadMode::Pread => Ok(Arc::new(PreadFile {
                path: path.to_path_buf(),
                file: open()?,
            })),
            ReadMode::Mmap => {
                let file = open()?;
                let len = file.metadata().map_err(ctx("stat of", path))?.len();
                // An empty file cannot be mapped; it reads as an empty slice.
                let map = if len == 0 {
                    bytes::Bytes::new()
                } else {
                    // SAFETY: Augur never modifies or truncates the bytes of a file opened for
                    // mmap reads (SSTables and sealed value-log segments are immutable; the
                    // only later write to such a file is an append past the mapped length, to
                    // a value-log segment an open reuses), so the mapping's bytes do not change
                    // under the reader.
                    #[expect(unsafe_code, reason = "mmap reads of immutable files; docs/UNSAFE.md")]
                    let m = unsafe { memmap2::Mmap::map(&file) }.map_err(ctx("mapping", path))?;
                    bytes::Bytes::from_owner(m)
                };
                Ok(Arc::new(MmapFile {
                    path: path.to_path_buf(),
                    map,
                }))
            }
        }
    }

    fn read_all(&self, path: &Path) -> Result<Vec<u8>> {
        std::fs::read(path).map_err(ctx("reading", path))
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        std::fs::rename(from, to).map_err(ctx("renaming", from))
    }

    fn remove(&self, path: &Path) -> Result<()> {
        std::fs::remove_file(path).map_err(ctx("removing", path))
    }

    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(ctx("listing", dir))? {
            let entry = entry.map_err(ctx("listing", dir))?;
            names.push(entry.file_name().to_string_lossy().into_owned());
        }
        Ok(names)
    }

    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }

    fn size(&self, path: &Path) -> Result<u64> {
        Ok(std::fs::metadata(path).map_err(ctx("stat of", path))?.len())
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(ctx("syncing directory", dir))
    }

    fn sync_file(&self, path: &Path) -> Result<()> {
        // fdatasync through a new descriptor flushes the file's pages whoever wrote them.
        OpenOptions::new()
            .append(true)
            .open(path)
            .and_then(|f| f.sync_data())
            .map_err(ctx("syncing", path))
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(ctx("opening lock file", path))?;
        match file.try_lock() {
            Ok(()) => Ok(Box::new(StdLock { file })),
            Err(std::fs::TryLockError::WouldBlock) => Err(Error::Busy(format!(
                "{} is held by another process or handle",
                path.display()
            ))),
            Err(std::fs::TryLockError::Error(e)) => {
                Err(Error::io(format!("locking {}", path.display()), e))
            }
        }
    }

    fn hard_link(&self, from: &Path, to: &Path) -> Result<()> {
        std::fs::hard_link(from, to).map_err(ctx("hard linking", from))
    }

    fn rename_dir(&self, from: &Path, to: &Path) -> Result<()> {
        if !from.is_dir() {
            return Err(Error::io(
                format!("renaming directory {}", from.display()),
                std::io::Error::new(std::io::ErrorKind::NotADirectory, "not a directory"),
            ));
        }
        // `rename(2)` replaces an empty directory: refuse any existing `to` first.
        if std::fs::symlink_metadata(to).is_ok() {
            return Err(Error::io(
                format!("renaming directory {} to {}", from.display(), to.display()),
                std::io::Error::from(std::io::ErrorKind::AlreadyExists),
            ));
        }
        std::fs::rename(from, to).map_err(ctx("renaming directory", from))
    }

    fn remove_dir(&self, dir: &Path) -> Result<()> {
        std::fs::remove_dir(dir).map_err(ctx("removing directory", dir))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_read_modes_and_lock() {
        let dir = tempfile::tempdir().unwrap();
        let fs = StdFs;
        let p = dir.path().join("f");
        let mut w = fs.create(&p).unwrap();
        w.append(b"hello").unwrap();
        w.sync().unwrap();
        assert_eq!(w.len(), 5);
        for mode in [ReadMode::Mmap, ReadMode::Pread, ReadMode::Direct] {
            let r = fs.open(&p, mode).unwrap();
            let mut buf = [0u8; 3];
            r.read_exact_at(1, &mut buf).unwrap();
            assert_eq!(&buf, b"ell");
            assert!(r.read_exact_at(4, &mut buf).is_err());
            assert_eq!(r.len().unwrap(), 5);
        }
        let l = fs.lock(&dir.path().join("LOCK")).unwrap();
        assert!(matches!(
            fs.lock(&dir.path().join("LOCK")),
            Err(Error::Busy(_))
        ));
        drop(l);
        fs.lock(&dir.path().join("LOCK")).unwrap();
    }

    #[test]
    fn links_and_directory_renames() {
        let dir = tempfile::tempdir().unwrap();
        let fs = StdFs;
        let a = dir.path().join("a");
        fs.create_dir_all(&a).unwrap();
        let mut w = fs.create(&a.join("f")).unwrap();
        w.append(b"bytes").unwrap();
        w.sync().unwrap();
        fs.hard_link(&a.join("f"), &a.join("g")).unwrap();
        assert!(fs.hard_link(&a.join("f"), &a.join("g")).is_err());
        fs.remove(&a.join("f")).unwrap();
        assert_eq!(fs.read_all(&a.join("g")).unwrap(), b"bytes");
        let b = dir.path().join("b");
        fs.create_dir_all(&b).unwrap();
        assert!(
            fs.rename_dir(&a, &b).is_err(),
            "an existing (empty) target is refused"
        );
        fs.remove_dir(&b).unwrap();
        fs.rename_dir(&a, &b).unwrap();
        assert_eq!(fs.read_all(&b.join("g")).unwrap(), b"bytes");
        assert!(fs.remove_dir(&b).is_err(), "not empty");
        fs.remove(&b.join("g")).unwrap();
        fs.remove_dir(&b).unwrap();
        assert!(!fs.exists(&b));
    }
}
