//! Augur through its public API (the engine the harness exists for).

use super::BenchEngine;
use crate::error::BenchError;
use ::augur::{Db, Stats, WriteBatch, WriteOptions};

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

    fn scan_from(&self, key: &[u8], n: usize) -> Result<(u64, u64), BenchError> {
        count_entries(self.db.range(key..).take(n))
    }

    fn scan_all(
        &self,
        n: usize,
        reverse: bool,
        each: &mut dyn FnMut(u64),
    ) -> Result<(), BenchError> {
        let mut visit = |entry: ::augur::Result<(Vec<u8>, Vec<u8>)>| {
            let (k, v) = entry?;
            each((k.len() + v.len()) as u64);
            Ok::<(), BenchError>(())
        };
        if reverse {
            self.db.iter().rev().take(n).try_for_each(&mut visit)
        } else {
            self.db.iter().take(n).try_for_each(&mut visit)
        }
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

    fn augur(&self) -> Option<&Db> {
        Some(&self.db)
    }

    fn close(self: Box<Self>) -> Result<(), BenchError> {
        Ok(self.db.close()?)
    }
}

/// Walks `entries`; returns how many there were and their key + value bytes.
fn count_entries(
    entries: impl Iterator<Item = ::augur::Result<(Vec<u8>, Vec<u8>)>>,
) -> Result<(u64, u64), BenchError> {
    let (mut count, mut bytes) = (0u64, 0u64);
    for entry in entries {
        let (k, v) = entry?;
        count += 1;
        bytes += (k.len() + v.len()) as u64;
    }
    Ok((count, bytes))
}
