//! Copying and linking whole files through the [`FileSystem`] seam: what a checkpoint, a
//! backup and a restore do with a database's immutable files (`db/checkpoint.rs`,
//! `backup/`). Each copy is read in bounded chunks, checksummed on the way (the unmasked
//! CRC32C of `checksum::file_crc_append`) and synced before it returns.

use super::{FileSystem, ReadMode};
use crate::checksum::file_crc_append;
use crate::error::{Error, Result};
use std::path::Path;

/// Bytes read and appended per step of a copy.
const CHUNK_BYTES: u64 = 1 << 20;

/// What [`copy_file`] wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopiedFile {
    /// Bytes copied.
    pub bytes: u64,
    /// Unmasked CRC32C of those bytes.
    pub crc: u32,
}

/// How [`link_or_copy`] placed a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placed {
    /// A hard link to the source: no byte was written.
    Linked,
    /// A copy of that many bytes (the link failed: another device, no link support).
    Copied(u64),
}

/// Copies the first `len` bytes of `src` (all of it when `None`), read through `src_fs`,
/// into the new file `dst` of `dst_fs` (created or truncated), and syncs the copy. The
/// directory entry of `dst` is not synced: the caller syncs the directory once it placed
/// every file.
///
/// # Errors
/// `Io` on a read or write failure; `Corruption` naming `src` when it is shorter than `len`.
pub fn copy_file(
    src_fs: &dyn FileSystem,
    src: &Path,
    dst_fs: &dyn FileSystem,
    dst: &Path,
    len: Option<u64>,
) -> Result<CopiedFile> {
    let reader = src_fs.open(src, ReadMode::Pread)?;
    let size = reader.len()?;
    let len = len.unwrap_or(size);
    if size < len {
        return Err(Error::corruption(
            src,
            size,
            format!("the file holds {size} bytes; {len} were to be copied"),
        ));
    }
    let mut out = dst_fs.create(dst)?;
    let mut buf = vec![0u8; usize::try_from(len.min(CHUNK_BYTES)).unwrap_or(0)];
    let mut crc = 0u32;
    let mut done = 0u64;
    while done < len {
        let n = (len - done).min(CHUNK_BYTES);
        let chunk = buf
            .get_mut(..usize::try_from(n).unwrap_or(0))
            .unwrap_or_default();
        reader.read_exact_at(done, chunk)?;
        out.append(chunk)?;
        crc = file_crc_append(crc, chunk);
        done += n;
    }
    out.sync()?;
    Ok(CopiedFile { bytes: len, crc })
}

/// The size and unmasked CRC32C of the whole file `path`, read in bounded chunks.
///
/// # Errors
/// `Io` on a read failure.
pub fn checksum_file(fs: &dyn FileSystem, path: &Path) -> Result<CopiedFile> {
    let reader = fs.open(path, ReadMode::Pread)?;
    let len = reader.len()?;
    let mut buf = vec![0u8; usize::try_from(len.min(CHUNK_BYTES)).unwrap_or(0)];
    let mut crc = 0u32;
    let mut done = 0u64;
    while done < len {
        let n = (len - done).min(CHUNK_BYTES);
        let chunk = buf
            .get_mut(..usize::try_from(n).unwrap_or(0))
            .unwrap_or_default();
        reader.read_exact_at(done, chunk)?;
        crc = file_crc_append(crc, chunk);
        done += n;
    }
    Ok(CopiedFile { bytes: len, crc })
}

/// Places `src` at `dst` (which must not exist) on one file system: a hard link when
/// `link` is set and [`FileSystem::hard_link`] succeeds, a synced copy otherwise. For
/// immutable files only: a link shares the bytes, so a later change to either name shows
/// through the other. The directory entry of `dst` is not synced (see [`copy_file`]).
///
/// # Errors
/// As [`copy_file`], when the copy fails too.
pub fn link_or_copy(fs: &dyn FileSystem, src: &Path, dst: &Path, link: bool) -> Result<Placed> {
    if link {
        match fs.hard_link(src, dst) {
            Ok(()) => return Ok(Placed::Linked),
            Err(e) => log::debug!("hard link {} failed, copying: {e}", dst.display()),
        }
    }
    let copied = copy_file(fs, src, fs, dst, None)?;
    Ok(Placed::Copied(copied.bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::MemFs;

    fn write(fs: &MemFs, path: &Path, data: &[u8]) {
        let mut w = fs.create(path).unwrap();
        w.append(data).unwrap();
        w.sync().unwrap();
    }

    #[test]
    fn copies_prefixes_and_whole_files_with_their_checksum() {
        let fs = MemFs::new();
        fs.create_dir_all(Path::new("/a")).unwrap();
        let data: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
        write(&fs, Path::new("/a/src"), &data);
        let whole = copy_file(&fs, Path::new("/a/src"), &fs, Path::new("/a/w"), None).unwrap();
        assert_eq!(whole.bytes, data.len() as u64);
        assert_eq!(whole.crc, crc32c::crc32c(&data));
        assert_eq!(fs.read_all(Path::new("/a/w")).unwrap(), data);
        let part = copy_file(&fs, Path::new("/a/src"), &fs, Path::new("/a/p"), Some(10)).unwrap();
        assert_eq!(part.crc, crc32c::crc32c(&data[..10]));
        assert_eq!(fs.read_all(Path::new("/a/p")).unwrap(), &data[..10]);
        assert_eq!(checksum_file(&fs, Path::new("/a/src")).unwrap(), whole);
        let too_long = copy_file(
            &fs,
            Path::new("/a/src"),
            &fs,
            Path::new("/a/x"),
            Some(data.len() as u64 + 1),
        );
        assert!(matches!(too_long, Err(Error::Corruption { .. })));
    }

    #[test]
    fn links_where_it_can_and_copies_otherwise() {
        let fs = MemFs::new();
        fs.create_dir_all(Path::new("/a")).unwrap();
        write(&fs, Path::new("/a/src"), b"hello");
        let linked = link_or_copy(&fs, Path::new("/a/src"), Path::new("/a/l"), true).unwrap();
        assert_eq!(linked, Placed::Linked);
        let copied = link_or_copy(&fs, Path::new("/a/src"), Path::new("/a/c"), false).unwrap();
        assert_eq!(copied, Placed::Copied(5));
        // A link whose name is taken fails, and the copy then fails too (truncation of an
        // existing name is what `create` does, so the name is checked by the link only).
        fs.remove(Path::new("/a/src")).unwrap();
        assert_eq!(fs.read_all(Path::new("/a/l")).unwrap(), b"hello");
    }
}
