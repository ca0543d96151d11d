//! Augur through its public API (the engine the harness exists for).

use super::{count_entries, visit_entries, BenchEngine};
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
        count_entries(self.db.range(key..).take(n), BenchError::from)
    }

    fn scan_all(
        &self,
        n: usize,
        reverse: bool,
        each: &mut dyn FnMut(u64),
    ) -> Result<(), BenchError> {
        if reverse {
            visit_entries(self.db.iter().rev().take(n), BenchError::from, each)
        } else {
            visit_entries(self.db.iter().take(n), BenchError::from, each)
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
