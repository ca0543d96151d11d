//! The engine seam of `augur bench`: the few operations the db_bench-style workloads need
//! (`BenchEngine`), implemented for Augur and, behind the cargo feature `rocksdb`, for
//! RocksDB as a peer (`--engine=rocksdb`), so both run the identical key and value streams.
//! Augur-only measurements (statistics, write amplification, learning) go through
//! `BenchEngine::stats` and `BenchEngine::augur`, which peers answer with `None`.

use crate::error::BenchError;
use augur::{Db, Options, Stats, WriteBatch, WriteOptions};
use clap::ValueEnum;
use std::path::Path;

/// Which engine `augur bench` drives.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EngineKind {
    /// Augur itself.
    #[default]
    Augur,
    /// RocksDB through the `rocksdb` crate (needs the cargo feature `rocksdb`).
    Rocksdb,
}

impl EngineKind {
    /// The name used in reports (the JSON `engine` field).
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Augur => "augur",
            EngineKind::Rocksdb => "rocksdb",
        }
    }

    /// Fails with a clear message when this engine was not compiled in.
    pub fn check_available(self) -> Result<(), BenchError> {
        match self {
            EngineKind::Augur => Ok(()),
            EngineKind::Rocksdb if cfg!(feature = "rocksdb") => Ok(()),
            EngineKind::Rocksdb => Err(not_built()),
        }
    }
}

/// The error for `--engine=rocksdb` in a build without the feature.
fn not_built() -> BenchError {
    BenchError::failed(
        "--engine=rocksdb needs a build with the cargo feature `rocksdb` (see the README's \
         bench section: ROCKSDB_LIB_DIR=/usr/lib/x86_64-linux-gnu cargo build --release \
         -p augur-cli --features rocksdb)",
    )
}

/// The operations of the workloads, on one open database.
pub trait BenchEngine: Sync {
    /// Writes `key` = `value`.
    fn put(&self, key: &[u8], value: &[u8]) -> Result<(), BenchError>;
    /// Deletes `key`.
    fn delete(&self, key: &[u8]) -> Result<(), BenchError>;
    /// The value of `key`, if present.
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, BenchError>;
    /// Reads up to `n` entries from the first key at or after `key`; returns the number of
    /// entries read and their key + value bytes.
    fn scan_from(&self, key: &[u8], n: usize) -> Result<(u64, u64), BenchError>;
    /// Writes the memtable out to a file and waits for it.
    fn flush(&self) -> Result<(), BenchError>;
    /// Compacts the whole key range and waits for it.
    fn compact(&self) -> Result<(), BenchError>;
    /// Augur's statistics (`None` for peers).
    fn stats(&self) -> Option<Stats>;
    /// The Augur handle, for Augur-only benchmarks (`None` for peers).
    fn augur(&self) -> Option<&Db>;
    /// Closes the database, reporting any error.
    fn close(self: Box<Self>) -> Result<(), BenchError>;
}

/// Opens the database in `dir` with `kind`; peers get settings comparable to `opts`
/// (bloom bits per key, memtable size, no compression).
pub fn open(
    kind: EngineKind,
    dir: &Path,
    opts: &Options,
    sync: bool,
) -> Result<Box<dyn BenchEngine>, BenchError> {
    match kind {
        EngineKind::Augur => Ok(Box::new(AugurEngine {
            db: Db::open(dir, opts.clone())?,
            wo: WriteOptions { sync },
        })),
        #[cfg(feature = "rocksdb")]
        EngineKind::Rocksdb => Ok(Box::new(rocks::RocksEngine::open(dir, opts, sync)?)),
        #[cfg(not(feature = "rocksdb"))]
        EngineKind::Rocksdb => {
            let _ = (dir, opts, sync);
            Err(not_built())
        }
    }
}

/// Whether the file `name` in a database directory belongs to `kind` (so a fresh fill may
/// delete it).
pub fn owns_file(kind: EngineKind, name: &str) -> bool {
    match kind {
        EngineKind::Augur => augur::filename::parse(name).is_some(),
        // RocksDB's files: CURRENT, IDENTITY, LOCK, LOG*, MANIFEST-*, OPTIONS-*, *.log, *.sst.
        EngineKind::Rocksdb => {
            ["CURRENT", "IDENTITY", "LOCK"].contains(&name)
                || ["LOG", "MANIFEST-", "OPTIONS-"]
                    .iter()
                    .any(|p| name.starts_with(p))
                || name.ends_with(".log")
                || name.ends_with(".sst")
                || name.ends_with(".blob")
                || name.ends_with(".dbtmp")
        }
    }
}

/// Augur through its public API.
struct AugurEngine {
    db: Db,
    wo: WriteOptions,
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
        let (mut count, mut bytes) = (0u64, 0u64);
        for entry in self.db.range(key..).take(n) {
            let (k, v) = entry?;
            count += 1;
            bytes += (k.len() + v.len()) as u64;
        }
        Ok((count, bytes))
    }

    fn flush(&self) -> Result<(), BenchError> {
        Ok(self.db.flush()?)
    }

    fn compact(&self) -> Result<(), BenchError> {
        Ok(self.db.compact_range(None, None)?)
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

#[cfg(feature = "rocksdb")]
mod rocks {
    //! RocksDB as a peer: settings comparable to Augur's (bloom filter of the same bits per
    //! key, no compression, write buffer = Augur's memtable size, WAL on, sync as asked).

    use super::BenchEngine;
    use crate::error::BenchError;
    use augur::{Db, Options, Stats};
    use rocksdb::{BlockBasedOptions, DBCompressionType, IteratorMode, WriteOptions, DB};
    use std::path::Path;

    fn err(e: rocksdb::Error) -> BenchError {
        BenchError::failed(format!("rocksdb: {e}"))
    }

    /// An open RocksDB database.
    pub(super) struct RocksEngine {
        db: DB,
        wo: WriteOptions,
    }

    impl RocksEngine {
        pub(super) fn open(dir: &Path, opts: &Options, sync: bool) -> Result<Self, BenchError> {
            let mut table = BlockBasedOptions::default();
            if opts.bloom_bits_per_key > 0 {
                table.set_bloom_filter(f64::from(opts.bloom_bits_per_key), false);
            }
            let mut o = rocksdb::Options::default();
            o.create_if_missing(opts.create_if_missing);
            o.set_compression_type(DBCompressionType::None);
            o.set_write_buffer_size(opts.memtable_size_bytes);
            o.set_block_based_table_factory(&table);
            let db = DB::open(&o, dir).map_err(err)?;
            let mut wo = WriteOptions::default();
            wo.set_sync(sync);
            Ok(RocksEngine { db, wo })
        }
    }

    impl BenchEngine for RocksEngine {
        fn put(&self, key: &[u8], value: &[u8]) -> Result<(), BenchError> {
            self.db.put_opt(key, value, &self.wo).map_err(err)
        }

        fn delete(&self, key: &[u8]) -> Result<(), BenchError> {
            self.db.delete_opt(key, &self.wo).map_err(err)
        }

        fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, BenchError> {
            self.db.get(key).map_err(err)
        }

        fn scan_from(&self, key: &[u8], n: usize) -> Result<(u64, u64), BenchError> {
            let (mut count, mut bytes) = (0u64, 0u64);
            let mode = IteratorMode::From(key, rocksdb::Direction::Forward);
            for entry in self.db.iterator(mode).take(n) {
                let (k, v) = entry.map_err(err)?;
                count += 1;
                bytes += (k.len() + v.len()) as u64;
            }
            Ok((count, bytes))
        }

        fn flush(&self) -> Result<(), BenchError> {
            self.db.flush().map_err(err)
        }

        fn compact(&self) -> Result<(), BenchError> {
            self.db.compact_range(None::<&[u8]>, None::<&[u8]>);
            Ok(())
        }

        fn stats(&self) -> Option<Stats> {
            None
        }

        fn augur(&self) -> Option<&Db> {
            None
        }

        fn close(self: Box<Self>) -> Result<(), BenchError> {
            drop(self);
            Ok(())
        }
    }
}
