//! RocksDB as a peer, through the `rocksdb` crate linked against the system librocksdb
//! (cargo feature `rocksdb`): settings comparable to Augur's (bloom filter of the same bits per
//! key, the codec of `--compression_type` on every level — none by default; zstd at RocksDB's
//! default level, 3 — write buffer = Augur's memtable size, WAL on, sync as asked).
//!
//! Memory (`memory.rs`): an LRU block cache of `--cache_size` bytes. Index and filter blocks
//! stay outside it, held by the table readers of the open tables
//! (`cache_index_and_filter_blocks` off, RocksDB's default, set explicitly): the counterpart
//! of Augur's pinned filters, fences and models, reported as `pinned_bytes`
//! (`rocksdb.estimate-table-readers-mem`). `--use_direct_reads` sets `use_direct_reads`, which
//! covers user reads and compaction inputs; flush and compaction *writes* stay buffered
//! (`use_direct_io_for_flush_and_compaction` off), as Augur's are in direct mode. Block cache
//! hits and misses come from RocksDB's statistics, kept only with `--statistics` (they cost
//! RocksDB time on every operation); RocksDB counts no device reads or bytes there.

use super::cursor::{self, RawCursor};
use super::{BenchEngine, Codec, OpenSettings};
use crate::error::BenchError;
use crate::memory::{CacheCounters, MemoryReport};
use ::augur::Options;
use rocksdb::{BlockBasedOptions, Cache, DBCompressionType, DBRawIterator, WriteOptions, DB};
use std::path::Path;

/// RocksDB's compression type for `codec`.
fn compression_type(codec: Codec) -> DBCompressionType {
    match codec {
        Codec::None => DBCompressionType::None,
        Codec::Snappy => DBCompressionType::Snappy,
        Codec::Lz4 => DBCompressionType::Lz4,
        Codec::Zstd => DBCompressionType::Zstd,
    }
}

fn err(e: rocksdb::Error) -> BenchError {
    BenchError::failed(format!("rocksdb: {e}"))
}

/// RocksDB's raw iterator (its inherent methods, named in full so none resolves to the trait's):
/// keys and values are borrowed from RocksDB's blocks, as Augur's zero-copy scan and LevelDB's
/// iterator hand them out (the crate's Rust iterator copies every pair into boxed slices).
impl RawCursor for DBRawIterator<'_> {
    fn seek_to_first(&mut self) {
        DBRawIterator::seek_to_first(self);
    }

    fn seek_to_last(&mut self) {
        DBRawIterator::seek_to_last(self);
    }

    fn seek(&mut self, key: &[u8]) {
        DBRawIterator::seek(self, key);
    }

    fn valid(&self) -> bool {
        DBRawIterator::valid(self)
    }

    fn step(&mut self, reverse: bool) {
        if reverse {
            DBRawIterator::prev(self);
        } else {
            DBRawIterator::next(self);
        }
    }

    fn entry_bytes(&self) -> u64 {
        (self.key().map_or(0, <[u8]>::len) + self.value().map_or(0, <[u8]>::len)) as u64
    }

    fn status(&self) -> Result<(), BenchError> {
        DBRawIterator::status(self).map_err(err)
    }
}

/// The value of ticker `name` in the text of RocksDB's statistics (`Options::get_statistics`,
/// lines such as `rocksdb.block.cache.hit COUNT : 12`).
fn ticker(statistics: &str, name: &str) -> Option<u64> {
    statistics.lines().find_map(|line| {
        let mut words = line.split_whitespace();
        if words.next() != Some(name) || words.next() != Some("COUNT") {
            return None;
        }
        words.nth(1)?.parse().ok()
    })
}

/// An open RocksDB database.
pub(super) struct RocksEngine {
    // Declared first: dropped (closed) before the options and the cache it uses.
    db: DB,
    wo: WriteOptions,
    /// The options it was opened with: they hold its statistics with `--statistics`.
    options: rocksdb::Options,
    /// Its block cache, whose use is reported.
    cache: Cache,
    cache_bytes: usize,
    statistics: bool,
}

impl RocksEngine {
    /// Opens (creating if allowed) the database in `dir`. Values of at least
    /// `opts.value_separation_threshold` bytes go to BlobDB's blob files (with blob GC), as
    /// Augur's go to its value log; `usize::MAX` keeps them inline.
    pub(super) fn open(
        dir: &Path,
        opts: &Options,
        settings: OpenSettings,
    ) -> Result<Self, BenchError> {
        let mut table = BlockBasedOptions::default();
        if opts.bloom_bits_per_key > 0 {
            table.set_bloom_filter(f64::from(opts.bloom_bits_per_key), false);
        }
        // Index and filter blocks in the table readers, outside the block cache (module
        // comment).
        table.set_cache_index_and_filter_blocks(false);
        let cache = Cache::new_lru_cache(settings.cache_bytes);
        table.set_block_cache(&cache);
        let mut o = rocksdb::Options::default();
        o.set_use_direct_reads(settings.direct_reads);
        if settings.statistics {
            o.enable_statistics();
        }
        o.create_if_missing(opts.create_if_missing);
        // Every level: `compression` is the default of the levels and the bottommost level
        // is set to the same (RocksDB would otherwise keep it apart if configured). The level
        // of zstd stays RocksDB's default (CompressionOptions::level unset: the library's 3).
        let compression = compression_type(settings.codec);
        o.set_compression_type(compression);
        o.set_bottommost_compression_type(compression);
        o.set_write_buffer_size(opts.memtable_size_bytes);
        let l0 = settings.l0_triggers;
        let as_i32 = |n: usize| i32::try_from(n).unwrap_or(i32::MAX);
        if let Some(n) = l0.compaction {
            o.set_level_zero_file_num_compaction_trigger(as_i32(n));
        }
        if let Some(n) = l0.slowdown {
            o.set_level_zero_slowdown_writes_trigger(as_i32(n));
        }
        if let Some(n) = l0.stop {
            o.set_level_zero_stop_writes_trigger(as_i32(n));
        }
        o.set_block_based_table_factory(&table);
        if opts.value_separation_threshold != usize::MAX {
            o.set_enable_blob_files(true);
            o.set_min_blob_size(opts.value_separation_threshold as u64);
            o.set_enable_blob_gc(true);
        }
        let db = DB::open(&o, dir).map_err(err)?;
        let mut wo = WriteOptions::default();
        wo.set_sync(settings.sync);
        Ok(RocksEngine {
            db,
            wo,
            options: o,
            cache,
            cache_bytes: settings.cache_bytes,
            statistics: settings.statistics,
        })
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

    /// Through RocksDB's raw iterator (see its `RawCursor` impl above).
    fn scan_from(&self, key: &[u8], n: usize) -> Result<(u64, u64), BenchError> {
        cursor::scan_from(self.db.raw_iterator(), key, n)
    }

    fn scan_all(
        &self,
        n: usize,
        reverse: bool,
        each: &mut dyn FnMut(u64),
    ) -> Result<(), BenchError> {
        cursor::scan_all(self.db.raw_iterator(), n, reverse, each)
    }

    fn flush(&self) -> Result<(), BenchError> {
        self.db.flush().map_err(err)
    }

    fn compact(&self) -> Result<(), BenchError> {
        self.db.compact_range(None::<&[u8]>, None::<&[u8]>);
        Ok(())
    }

    /// The block cache's use, its hits and misses (with `--statistics`), and the index and
    /// filter blocks the table readers hold.
    fn memory(&self) -> Option<MemoryReport> {
        let stats = self
            .statistics
            .then(|| self.options.get_statistics())
            .flatten()
            .unwrap_or_default();
        Some(MemoryReport {
            cache: Some(CacheCounters {
                capacity_bytes: self.cache_bytes as u64,
                used_bytes: self.cache.get_usage() as u64,
                hits: ticker(&stats, "rocksdb.block.cache.hit"),
                misses: ticker(&stats, "rocksdb.block.cache.miss"),
                device_reads: None,
                device_bytes: None,
            }),
            pinned_bytes: self
                .db
                .property_int_value("rocksdb.estimate-table-readers-mem")
                .ok()
                .flatten(),
            chunks: None,
        })
    }

    /// Polls RocksDB's own counters of pending and running flushes and compactions until
    /// all are zero.
    fn wait_for_compactions(&self) -> Result<(), BenchError> {
        const BUSY: [&str; 4] = [
            "rocksdb.mem-table-flush-pending",
            "rocksdb.num-running-flushes",
            "rocksdb.compaction-pending",
            "rocksdb.num-running-compactions",
        ];
        let start = std::time::Instant::now();
        loop {
            let mut busy = false;
            for p in BUSY {
                busy |= self.db.property_int_value(p).map_err(err)?.unwrap_or(0) > 0;
            }
            if !busy {
                return Ok(());
            }
            if start.elapsed() > std::time::Duration::from_secs(3600) {
                return Err(BenchError::failed(
                    "rocksdb: compactions still pending after 1 h",
                ));
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tickers_are_read_from_the_statistics_text() {
        let text = "rocksdb.block.cache.miss COUNT : 12\nrocksdb.block.cache.hit COUNT : 345\n\
                    rocksdb.block.cache.hit.extra COUNT : 9\n\
                    rocksdb.db.get.micros P50 : 1.0 P95 : 2.0 COUNT : 7 SUM : 9\n";
        assert_eq!(ticker(text, "rocksdb.block.cache.hit"), Some(345));
        assert_eq!(ticker(text, "rocksdb.block.cache.miss"), Some(12));
        assert_eq!(ticker(text, "rocksdb.db.get.micros"), None);
        assert_eq!(ticker("", "rocksdb.block.cache.hit"), None);
    }
}
