//! fjall as a peer (cargo feature `fjall`): the pure-Rust LSM engine, one keyspace in the
//! database directory holding one partition, with settings comparable to Augur's.
//!
//! What is matched, and what could not be:
//! - **Bloom filters**: `bloom_bits_per_key` bits per key (0 turns filters off). fjall applies
//!   the bits to levels 2 and below only; it gives L0 and L1 segments filters sized for a fixed
//!   false-positive rate (0.001% and 0.05%, its "Monkey" policy) whatever the setting. fjall
//!   accepts at most 20 bits per key; more is refused.
//! - **Cache**: one cache of `cache_bytes` shared by blocks and blob-file values (fjall 2
//!   does not expose its use, so records carry no cache figures for fjall).
//! - **Direct reads**: fjall 2 reads through the kernel's page cache only;
//!   `--use_direct_reads` is refused.
//! - **Memtable**: `memtable_size_bytes` (fjall stores it as a `u32`; larger is refused). The
//!   keyspace's cap on all memtables is the memory Augur lets them take before stalling
//!   writes: the active memtable plus `max_immutable_memtables` sealed ones.
//! - **Compression**: the codec of `--compression_type`: none (`CompressionType::None`, the
//!   default) or lz4 (`CompressionType::Lz4`, the crate's `lz4` feature: lz4_flex), for
//!   blocks and blob files alike; fjall 2 has no snappy or zstd.
//! - **Durability**: every write goes to the journal and is handed to the OS (fjall's
//!   `PersistMode::Buffer`, like the other engines' unsynced WAL writes); with `sync`, the
//!   journal is also fsynced (`PersistMode::SyncAll`) before the write returns.
//! - **Value separation**: when `value_separation_threshold` is not `usize::MAX`, values of at
//!   least that many bytes go to blob files (fjall's key-value separation), sized like Augur's
//!   value-log segments. fjall collects blob garbage only on request; the harness does not
//!   ask, so stale values stay on disk (RocksDB's BlobDB and Augur collect in the background).
//! - Block size, levels and compaction strategy are fjall's defaults (4 KiB blocks, leveled).
//!   Partition options such as compression and separation are fixed when the partition is
//!   created; a reopened database keeps them.

use super::{count_entries, visit_entries, BenchEngine, Codec, OpenSettings};
use crate::error::BenchError;
use ::augur::Options;
use fjall::compaction::Strategy;
use fjall::{
    AbstractTree, CompressionType, Config, Keyspace, KvSeparationOptions, PartitionCreateOptions,
    PartitionHandle, PersistMode,
};
use std::path::Path;
use std::time::{Duration, Instant};

/// The partition every benchmark writes to.
const PARTITION: &str = "bench";
/// The file whose presence marks a directory as a fjall keyspace.
const MARKER: &str = "version";
/// fjall refuses more bloom bits per key than this (it asserts).
const MAX_BLOOM_BITS: u32 = 20;
/// fjall refuses a cap on all memtables below this (it asserts).
const MIN_WRITE_BUFFER: u64 = 1 << 20;
/// How long `flush` waits for the sealed memtables to be written before giving up.
const FLUSH_WAIT: Duration = Duration::from_secs(600);
/// How often `flush` checks whether the sealed memtables are written.
const FLUSH_POLL: Duration = Duration::from_millis(5);

fn err(e: fjall::Error) -> BenchError {
    BenchError::failed(format!("fjall: {e}"))
}

/// fjall asserts (panics) on a key longer than `u16::MAX` bytes, to write or to seek; the
/// harness refuses it first. Source keys are within the limit
/// (`sources::MAX_TEXT_KEY_BYTES`), but a key derived from one (`readmissing`'s extra byte,
/// YCSB's inserted records) may be a few bytes longer.
fn check_key(key: &[u8]) -> Result<(), BenchError> {
    if key.len() > usize::from(u16::MAX) {
        return Err(BenchError::failed(format!(
            "fjall: a key of {} bytes is longer than the {} bytes fjall takes",
            key.len(),
            u16::MAX
        )));
    }
    Ok(())
}

/// An open fjall keyspace and its one partition.
pub(super) struct FjallEngine {
    // Declared first so it is dropped before the keyspace that owns its background threads.
    partition: PartitionHandle,
    keyspace: Keyspace,
    sync: bool,
}

impl FjallEngine {
    /// Opens (creating if `opts.create_if_missing`) the keyspace in `dir` with settings
    /// comparable to `opts` (see the module comment).
    pub(super) fn open(
        dir: &Path,
        opts: &Options,
        settings: OpenSettings,
    ) -> Result<Self, BenchError> {
        if !opts.create_if_missing && !dir.join(MARKER).exists() {
            return Err(BenchError::failed(format!(
                "fjall: no database in {} (and it may not be created)",
                dir.display()
            )));
        }
        if settings.direct_reads {
            // Checked before the run too (`memory::check_engines`).
            super::EngineKind::Fjall.check_direct_reads()?;
        }
        let memtable = u32::try_from(opts.memtable_size_bytes).map_err(|_| {
            BenchError::failed(format!(
                "fjall: a memtable of {} bytes is more than fjall allows ({} bytes)",
                opts.memtable_size_bytes,
                u32::MAX
            ))
        })?;
        let bloom = match opts.bloom_bits_per_key {
            0 => None,
            // Fits: at most MAX_BLOOM_BITS.
            bits @ 1..=MAX_BLOOM_BITS => Some(bits as u8),
            bits => {
                return Err(BenchError::failed(format!(
                    "fjall: {bits} bloom bits per key is more than fjall allows \
                     ({MAX_BLOOM_BITS})"
                )))
            }
        };
        let memtables = u64::try_from(opts.max_immutable_memtables)
            .unwrap_or(u64::MAX)
            .saturating_add(1);
        let write_buffer = u64::from(memtable)
            .saturating_mul(memtables)
            .max(MIN_WRITE_BUFFER);
        let compression = match settings.codec {
            Codec::None => CompressionType::None,
            Codec::Lz4 => CompressionType::Lz4,
            // Checked before the run (`EngineKind::check_codec`); refused here too rather
            // than substituted.
            other => {
                super::EngineKind::Fjall.check_codec(other)?;
                CompressionType::None
            }
        };
        let keyspace = Config::new(dir)
            .cache_size(settings.cache_bytes as u64)
            .max_write_buffer_size(write_buffer)
            .open()
            .map_err(err)?;
        let mut create = PartitionCreateOptions::default()
            .compression(compression)
            .max_memtable_size(memtable)
            .bloom_filter_bits(bloom);
        if opts.value_separation_threshold != usize::MAX {
            // Values cannot be longer than u32::MAX bytes in fjall, so a larger threshold
            // separates nothing either way.
            let threshold = u32::try_from(opts.value_separation_threshold).unwrap_or(u32::MAX);
            create = create.with_kv_separation(
                KvSeparationOptions::default()
                    .separation_threshold(threshold)
                    .file_target_size(opts.value_log_segment_bytes),
            );
        }
        let partition = keyspace.open_partition(PARTITION, create).map_err(err)?;
        Ok(FjallEngine {
            partition,
            keyspace,
            sync: settings.sync,
        })
    }

    /// Fsyncs the journal when every write must be durable.
    fn persist(&self) -> Result<(), BenchError> {
        if self.sync {
            self.keyspace.persist(PersistMode::SyncAll).map_err(err)?;
        }
        Ok(())
    }

    /// Waits until no sealed memtable is left unwritten, for at most `FLUSH_WAIT`.
    fn wait_for_flushes(&self) -> Result<(), BenchError> {
        let start = Instant::now();
        while self.partition.tree.sealed_memtable_count() > 0 {
            if start.elapsed() > FLUSH_WAIT {
                return Err(BenchError::failed(format!(
                    "fjall: memtables were still waiting to be flushed after {} s",
                    FLUSH_WAIT.as_secs()
                )));
            }
            std::thread::sleep(FLUSH_POLL);
        }
        Ok(())
    }
}

impl BenchEngine for FjallEngine {
    fn put(&self, key: &[u8], value: &[u8]) -> Result<(), BenchError> {
        check_key(key)?;
        self.partition.insert(key, value).map_err(err)?;
        self.persist()
    }

    fn delete(&self, key: &[u8]) -> Result<(), BenchError> {
        check_key(key)?;
        self.partition.remove(key).map_err(err)?;
        self.persist()
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, BenchError> {
        check_key(key)?;
        let value = self.partition.get(key).map_err(err)?;
        Ok(value.map(|v| v.to_vec()))
    }

    fn scan_from(&self, key: &[u8], n: usize) -> Result<(u64, u64), BenchError> {
        check_key(key)?;
        count_entries(self.partition.range(key..).take(n), err)
    }

    fn scan_all(
        &self,
        n: usize,
        reverse: bool,
        each: &mut dyn FnMut(u64),
    ) -> Result<(), BenchError> {
        if reverse {
            visit_entries(self.partition.iter().rev().take(n), err, each)
        } else {
            visit_entries(self.partition.iter().take(n), err, each)
        }
    }

    /// Seals the active memtable (if it holds anything) and waits until every sealed memtable
    /// is written as a segment.
    fn flush(&self) -> Result<(), BenchError> {
        self.partition.rotate_memtable().map_err(err)?;
        self.wait_for_flushes()
    }

    /// Flushes, then merges every segment into the last level (fjall's major compaction,
    /// which blocks until done), as Augur's `compact_range(None, None)` flushes first.
    ///
    /// This calls the tree's major compaction with the current instant as the version
    /// garbage-collection watermark rather than `PartitionHandle::major_compact`, which
    /// passes fjall's snapshot-tracker watermark. With no snapshot open, that watermark trails
    /// the newest writes (a monitor thread raises it to 100 sequence numbers behind, every
    /// 250 ms), and a compaction into the last level drops every tombstone while keeping
    /// the older versions above the watermark, so a key deleted soon after it was written
    /// came back (fjall 2.11.2 / lsm-tree 2.10.4; see the test
    /// `compact_does_not_bring_deleted_keys_back`). The harness never holds snapshots,
    /// so every version but the newest is dead and may go.
    fn compact(&self) -> Result<(), BenchError> {
        self.flush()?;
        let target_size = match &self.partition.config.compaction_strategy {
            Strategy::Leveled(leveled) => u64::from(leveled.target_size),
            Strategy::SizeTiered(_) => u64::MAX,
            Strategy::Fifo(_) => {
                return Err(BenchError::failed(
                    "fjall: the partition uses FIFO compaction, which has no major compaction",
                ))
            }
        };
        self.partition
            .tree
            .major_compact(target_size, self.keyspace.instant())
            .map_err(|e| err(e.into()))
    }

    /// fjall exposes no "compaction pending" signal: waits for the sealed memtables, then
    /// until the partition's segment count has not changed for a second (10 polls).
    fn wait_for_compactions(&self) -> Result<(), BenchError> {
        self.wait_for_flushes()?;
        super::wait_until_stable(
            || Ok(self.partition.segment_count()),
            Duration::from_millis(100),
            10,
            FLUSH_WAIT,
        )
    }

    /// Hands the journal to the OS (fsyncing it with `sync`) and drops the keyspace, which
    /// stops its background threads.
    fn close(self: Box<Self>) -> Result<(), BenchError> {
        let mode = if self.sync {
            PersistMode::SyncAll
        } else {
            PersistMode::Buffer
        };
        self.keyspace.persist(mode).map_err(err)?;
        drop(self);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::L0Triggers;

    fn settings() -> OpenSettings {
        OpenSettings {
            sync: false,
            cache_bytes: 1 << 20,
            codec: Codec::None,
            direct_reads: false,
            statistics: false,
            l0_triggers: L0Triggers::default(),
        }
    }

    #[test]
    fn direct_reads_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let direct = OpenSettings {
            direct_reads: true,
            ..settings()
        };
        let e = FjallEngine::open(tmp.path(), &Options::default(), direct)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("fjall has no direct reads"), "{e}");
    }

    fn open(dir: &Path, threshold: usize) -> FjallEngine {
        let opts = Options {
            value_separation_threshold: threshold,
            ..Options::default()
        };
        FjallEngine::open(dir, &opts, settings()).unwrap()
    }

    #[test]
    fn values_at_the_threshold_go_to_blob_files() {
        let tmp = tempfile::tempdir().unwrap();
        let db = open(tmp.path(), 100);
        assert!(db.partition.is_kv_separated());
        db.put(b"small", &[1; 99]).unwrap();
        db.put(b"large", &[2; 100]).unwrap();
        db.flush().unwrap();
        assert_eq!(db.partition.blob_file_count(), 1);
        assert_eq!(db.partition.segment_count(), 1);
        assert_eq!(db.get(b"small").unwrap(), Some(vec![1; 99]));
        assert_eq!(db.get(b"large").unwrap(), Some(vec![2; 100]));
    }

    #[test]
    fn no_threshold_keeps_values_inline() {
        let tmp = tempfile::tempdir().unwrap();
        let db = open(tmp.path(), usize::MAX);
        assert!(!db.partition.is_kv_separated());
        db.put(b"k", &[3; 4096]).unwrap();
        db.flush().unwrap();
        assert_eq!(db.partition.blob_file_count(), 0);
        assert_eq!(db.get(b"k").unwrap(), Some(vec![3; 4096]));
    }

    /// Bytes of every file under `dir`.
    fn disk_bytes(dir: &Path) -> u64 {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                let m = e.metadata().unwrap();
                if m.is_dir() {
                    disk_bytes(&e.path())
                } else {
                    m.len()
                }
            })
            .sum()
    }

    #[test]
    fn lz4_compresses_the_segments_and_other_codecs_are_refused() {
        let mut sizes = Vec::new();
        for codec in [Codec::None, Codec::Lz4] {
            let tmp = tempfile::tempdir().unwrap();
            let s = OpenSettings {
                codec,
                ..settings()
            };
            let db = FjallEngine::open(tmp.path(), &Options::default(), s).unwrap();
            for i in 0..2000u32 {
                db.put(&i.to_be_bytes(), &[b'x'; 500]).unwrap();
            }
            db.flush().unwrap();
            assert_eq!(db.get(&7u32.to_be_bytes()).unwrap(), Some(vec![b'x'; 500]));
            // Only the segments: the journal holds the values uncompressed either way.
            sizes.push(disk_bytes(&tmp.path().join("partitions")));
        }
        assert!(
            sizes[1] * 4 < sizes[0],
            "lz4 {} vs none {}",
            sizes[1],
            sizes[0]
        );
        for codec in [Codec::Snappy, Codec::Zstd] {
            let tmp = tempfile::tempdir().unwrap();
            let s = OpenSettings {
                codec,
                ..settings()
            };
            let e = FjallEngine::open(tmp.path(), &Options::default(), s).err();
            let msg = e.unwrap().to_string();
            assert!(
                msg.contains("fjall has no") && msg.contains("none, lz4"),
                "{msg}"
            );
        }
    }

    #[test]
    fn flush_writes_a_segment_and_compact_merges_them() {
        let tmp = tempfile::tempdir().unwrap();
        let db = open(tmp.path(), usize::MAX);
        // Nothing to flush: returns at once.
        db.flush().unwrap();
        assert_eq!(db.partition.segment_count(), 0);
        for round in 0..3u8 {
            db.put(&[b'a', round], b"v").unwrap();
            db.put(b"shared", &[round]).unwrap();
            db.flush().unwrap();
            assert_eq!(db.partition.tree.sealed_memtable_count(), 0);
        }
        assert_eq!(db.partition.segment_count(), 3);
        db.delete(b"shared").unwrap();
        db.compact().unwrap();
        assert_eq!(db.partition.segment_count(), 1);
        assert_eq!(db.get(b"shared").unwrap(), None);
        let mut sizes = Vec::new();
        db.scan_all(10, true, &mut |b| sizes.push(b)).unwrap();
        assert_eq!(sizes, vec![3, 3, 3]);
        assert_eq!(db.scan_from(&[b'a', 1], 10).unwrap(), (2, 6));
    }

    #[test]
    fn compact_does_not_bring_deleted_keys_back() {
        let tmp = tempfile::tempdir().unwrap();
        let db = open(tmp.path(), usize::MAX);
        // Several versions of each key in several segments, then every key deleted, all in
        // fewer sequence numbers than fjall's own watermark lags behind.
        for version in 0..3u8 {
            for key in 0..10u8 {
                db.put(&[key], &[version]).unwrap();
            }
            db.flush().unwrap();
        }
        for key in 0..10u8 {
            db.delete(&[key]).unwrap();
        }
        db.put(&[0], b"again").unwrap();
        db.compact().unwrap();
        assert_eq!(db.get(&[0]).unwrap(), Some(b"again".to_vec()));
        for key in 1..10u8 {
            assert_eq!(db.get(&[key]).unwrap(), None, "key {key}");
        }
        assert_eq!(db.scan_from(&[], 100).unwrap(), (1, 6));
    }

    #[test]
    fn settings_fjall_cannot_take_are_errors_not_panics() {
        let tmp = tempfile::tempdir().unwrap();
        let too_many_bits = Options {
            bloom_bits_per_key: 21,
            ..Options::default()
        };
        let e = FjallEngine::open(tmp.path(), &too_many_bits, settings()).err();
        assert!(e.unwrap().to_string().contains("bloom bits"));
        let missing = Options {
            create_if_missing: false,
            ..Options::default()
        };
        let e = FjallEngine::open(&tmp.path().join("none"), &missing, settings()).err();
        assert!(e.unwrap().to_string().contains("no database"));
        assert!(!tmp.path().join("none").exists());
    }

    #[test]
    fn synced_writes_survive_a_reopen() {
        let tmp = tempfile::tempdir().unwrap();
        let synced = OpenSettings {
            sync: true,
            ..settings()
        };
        let db = FjallEngine::open(tmp.path(), &Options::default(), synced).unwrap();
        db.put(b"k", b"v").unwrap();
        db.delete(b"gone").unwrap();
        Box::new(db).close().unwrap();
        let again = FjallEngine::open(tmp.path(), &Options::default(), synced).unwrap();
        assert_eq!(again.get(b"k").unwrap(), Some(b"v".to_vec()));
    }
}
