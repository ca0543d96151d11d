//! Augur through its public API (the engine the harness exists for).

use super::BenchEngine;
use crate::error::BenchError;
use crate::memory::MemoryReport;
use ::augur::{Db, Scan, ScanOptions, Stats, WriteBatch, WriteOptions};

/// Augur through its public API.
pub(super) struct AugurEngine {
    pub(super) db: Db,
    pub(super) wo: WriteOptions,
}

impl BenchEngine for AugurEngine {
    fn put(&self, key: &[u8], value: &[u8]) -> Result<(), BenchError> {
        let mut b = WriteBatch::new();
        b.put(key, value);
        Ok(self.db.write_opt(b, self.wo)?)
    }

    fn delete(&self, key: &[u8]) -> Result<(), BenchError> {
        let mut b = WriteBatch::new();
        b.delete(key);
        Ok(self.db.write_opt(b, self.wo)?)
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, BenchError> {
        Ok(self.db.get(key)?)
    }

    /// Through the zero-copy [`augur::Scan`] (pairs borrowed, as the LevelDB and RocksDB
    /// adapters read theirs).
    fn scan_from(&self, key: &[u8], n: usize) -> Result<(u64, u64), BenchError> {
        let (mut count, mut bytes) = (0u64, 0u64);
        visit(self.db.scan(key..), n, &mut |b| {
            count += 1;
            bytes += b;
        })?;
        Ok((count, bytes))
    }

    fn scan_all(
        &self,
        n: usize,
        reverse: bool,
        each: &mut dyn FnMut(u64),
    ) -> Result<(), BenchError> {
        let options = ScanOptions {
            reverse,
            ..ScanOptions::default()
        };
        visit(self.db.scan_with::<&[u8], _>(.., &options), n, each)
    }

    fn flush(&self) -> Result<(), BenchError> {
        Ok(self.db.flush()?)
    }

    fn compact(&self) -> Result<(), BenchError> {
        Ok(self.db.compact_range(None, None)?)
    }

    fn wait_for_compactions(&self) -> Result<(), BenchError> {
        Ok(self.db.wait_for_compactions()?)
    }

    fn stats(&self) -> Option<Stats> {
        Some(self.db.stats())
    }

    fn memory(&self) -> Option<MemoryReport> {
        Some(MemoryReport::of_augur(&self.db.stats()))
    }

    fn augur(&self) -> Option<&Db> {
        Some(&self.db)
    }

    fn close(self: Box<Self>) -> Result<(), BenchError> {
        Ok(self.db.close()?)
    }
}

/// Calls `each` with the key + value bytes of up to `n` entries of `scan` (the loop of both
/// `scan_from` and `scan_all`).
fn visit<F: FnMut(u64) + ?Sized>(mut scan: Scan, n: usize, each: &mut F) -> Result<(), BenchError> {
    for _ in 0..n {
        let Some((k, v)) = scan.next()? else { break };
        each((k.len() + v.len()) as u64);
    }
    Ok(())
}
