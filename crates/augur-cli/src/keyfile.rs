//! SOSD key files read in chunks, for `verify --keys`: a little-endian u64 count, then that
//! many little-endian u64 keys (the format `augur_bench::sosd` reads whole; `load --keys`
//! needs every key at once to shuffle them, `verify` does not). A chunk of
//! [`CHUNK_KEYS`] keys is in memory at a time, so verifying an 83 MB key file no longer
//! holds it twice (issue 40), and the keys may come through a pipe
//! (`--keys <(zstd -dc keys.zst)`).

use crate::error::{io_err, CliError};
use std::io::Read;
use std::path::Path;

/// Keys read at a time (512 KiB).
pub const CHUNK_KEYS: u64 = 1 << 16;

/// An SOSD key file being read; see the module doc.
pub struct KeyFile<R> {
    input: R,
    /// The file's name in error messages.
    source: String,
    /// Keys the header announces.
    count: u64,
    /// Keys read so far.
    read: u64,
    buf: Vec<u8>,
}

impl KeyFile<std::fs::File> {
    /// Opens the SOSD file at `path` and reads its header. A regular file's size is checked
    /// against the header at once; a pipe's when its end is reached.
    ///
    /// # Errors
    /// A missing or unreadable file, or (`<path> is not an SOSD key file: ...`) a header
    /// that does not match the file's size.
    pub fn open(path: &Path) -> Result<Self, CliError> {
        let name = path.display().to_string();
        let file = std::fs::File::open(path).map_err(io_err(format!("reading {name}")))?;
        let size = file
            .metadata()
            .ok()
            .filter(std::fs::Metadata::is_file)
            .map(|m| m.len());
        let keys = KeyFile::new(file, name)?;
        if let Some(size) = size {
            keys.check_body(size.saturating_sub(8))?;
        }
        Ok(keys)
    }
}

impl<R: Read> KeyFile<R> {
    /// Reads the header of `input`; `source` names it in error messages.
    ///
    /// # Errors
    /// An input that cannot be read or ends before its 8-byte header.
    pub fn new(mut input: R, source: String) -> Result<Self, CliError> {
        let mut header = Vec::with_capacity(8);
        (&mut input)
            .take(8)
            .read_to_end(&mut header)
            .map_err(io_err(format!("reading {source}")))?;
        let Ok(header) = <[u8; 8]>::try_from(header.as_slice()) else {
            return Err(not_sosd(
                &source,
                &format!("{} bytes is shorter than the 8-byte header", header.len()),
            ));
        };
        Ok(KeyFile {
            input,
            source,
            count: u64::from_le_bytes(header),
            read: 0,
            buf: Vec::new(),
        })
    }

    /// The number of keys the header announces.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Replaces the contents of `keys` with the next keys of the file, at most
    /// [`CHUNK_KEYS`]; leaves it empty at the end.
    ///
    /// # Errors
    /// A read error, or an input with fewer or more bytes than its header announces (met at
    /// its end, for a pipe).
    pub fn next_chunk(&mut self, keys: &mut Vec<u64>) -> Result<(), CliError> {
        keys.clear();
        let want = (self.count - self.read).min(CHUNK_KEYS);
        self.buf.clear();
        (&mut self.input)
            .take(want * 8)
            .read_to_end(&mut self.buf)
            .map_err(io_err(format!("reading {}", self.source)))?;
        let got = self.buf.len() as u64;
        if got < want * 8 {
            return self.check_body(self.read * 8 + got);
        }
        keys.extend(self.buf.chunks_exact(8).map(|c| {
            let mut k = [0u8; 8];
            k.copy_from_slice(c);
            u64::from_le_bytes(k)
        }));
        self.read += want;
        if want > 0 && self.read == self.count || self.count == 0 {
            // The last keys: nothing may follow them.
            let extra = std::io::copy(&mut self.input, &mut std::io::sink())
                .map_err(io_err(format!("reading {}", self.source)))?;
            self.check_body(self.count.saturating_mul(8).saturating_add(extra))?;
        }
        Ok(())
    }

    /// Checks that a body of `bytes` holds the announced keys.
    fn check_body(&self, bytes: u64) -> Result<(), CliError> {
        if self.count.checked_mul(8) == Some(bytes) {
            return Ok(());
        }
        Err(not_sosd(
            &self.source,
            &format!(
                "the header announces {} keys but {bytes} bytes follow it (expected 8 per key)",
                self.count
            ),
        ))
    }
}

fn not_sosd(source: &str, why: &str) -> CliError {
    CliError::failed(format!("{source} is not an SOSD key file: {why}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(keys: &[u64]) -> Vec<u8> {
        let mut f = (keys.len() as u64).to_le_bytes().to_vec();
        for k in keys {
            f.extend_from_slice(&k.to_le_bytes());
        }
        f
    }

    /// Every key of `bytes`, read chunk by chunk.
    fn read_all(bytes: &[u8]) -> Result<Vec<u64>, String> {
        let msg = |e: CliError| match e {
            CliError::Failed(m) | CliError::NotFound(m) => m,
            CliError::Engine(e) => e.to_string(),
        };
        let mut f = KeyFile::new(bytes, "k.u64".into()).map_err(msg)?;
        let (mut all, mut chunk) = (Vec::new(), Vec::new());
        loop {
            f.next_chunk(&mut chunk).map_err(msg)?;
            if chunk.is_empty() {
                return Ok(all);
            }
            assert!(chunk.len() as u64 <= CHUNK_KEYS);
            all.extend_from_slice(&chunk);
        }
    }

    #[test]
    fn reads_what_the_whole_file_reader_reads() {
        let keys: Vec<u64> = (0..2 * CHUNK_KEYS + 3).map(|i| i * 7 + 1).collect();
        for n in [0, 1, CHUNK_KEYS as usize, keys.len()] {
            let f = file(keys.get(..n).unwrap());
            assert_eq!(read_all(&f), augur_bench::sosd::parse_keys(&f), "{n} keys");
            for cut in [
                0,
                4,
                8,
                f.len().saturating_sub(3),
                f.len().saturating_sub(8),
            ] {
                let short = f.get(..cut).unwrap();
                let want = augur_bench::sosd::parse_keys(short)
                    .map_err(|why| format!("k.u64 is not an SOSD key file: {why}"));
                assert_eq!(read_all(short), want, "{n} keys cut at {cut}");
            }
            let mut long = f.clone();
            long.extend_from_slice(&[1, 2, 3]);
            let want = augur_bench::sosd::parse_keys(&long).unwrap_err();
            assert!(read_all(&long).unwrap_err().ends_with(&want), "{n} keys");
        }
    }

    #[test]
    fn reads_one_chunk_at_a_time() {
        let keys: Vec<u64> = (0..3 * CHUNK_KEYS).collect();
        let bytes = file(&keys);
        let mut input = bytes.as_slice();
        let mut f = KeyFile::new(&mut input, "k".into()).unwrap();
        let mut chunk = Vec::new();
        f.next_chunk(&mut chunk).unwrap();
        assert_eq!(chunk.len() as u64, CHUNK_KEYS);
        assert_eq!(f.count(), 3 * CHUNK_KEYS);
        drop(f);
        assert_eq!(
            input.len() as u64,
            2 * CHUNK_KEYS * 8,
            "read past the chunk"
        );
    }
}
