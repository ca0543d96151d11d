//! The engine seam of the harness: the few operations the db_bench- and YCSB-style workloads
//! need (`BenchEngine`), implemented for Augur (`augur.rs`) and, each behind its own cargo
//! feature so the default build and test run never compile them, for the peers RocksDB
//! (`rocksdb.rs`, feature `rocksdb`), LevelDB (`leveldb.rs`, feature `leveldb`) and fjall
//! (`fjall.rs`, feature `fjall`). Every engine runs the identical key and value streams.
//!
//! Peers are opened with settings comparable to Augur's `Options` (`open`): the same bloom
//! bits per key, write buffer = Augur's memtable size, the codec of `--compression_type`
//! (`Codec`; none by default, each engine refusing a codec it does not have), a block cache of
//! `--cache_size` bytes, direct reads when `--use_direct_reads` asks (Augur and RocksDB; the
//! others are refused, `EngineKind::check_direct_reads`), the WAL on and synced as asked,
//! and — where the peer has key-value separation (RocksDB's BlobDB) — values of at least
//! `value_separation_threshold` bytes in blob files. Augur-only measurements (statistics,
//! learning) go through `BenchEngine::stats` and `BenchEngine::augur`, which peers answer
//! with `None`; the cache and pinned memory of Augur and RocksDB through
//! `BenchEngine::memory` (`memory.rs` reports them).

mod augur;
#[cfg(any(feature = "rocksdb", feature = "leveldb"))]
mod cursor;
#[cfg(feature = "fjall")]
mod fjall;
#[cfg(feature = "leveldb")]
mod leveldb;
#[cfg(feature = "rocksdb")]
mod rocksdb;

use crate::error::BenchError;
use crate::memory::MemoryReport;
use ::augur::{Db, Options, Stats, WriteOptions};
use clap::ValueEnum;
use std::path::Path;

/// A compression codec of `--compression_type` (db_bench's flag and value names). Augur
/// compresses the values of each data block (and value-log records); the peers compress
/// whole blocks. Which engine has which codec: [`EngineKind::codecs`].
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Codec {
    /// No compression.
    #[default]
    None,
    /// Snappy (RocksDB, LevelDB).
    Snappy,
    /// LZ4 (Augur, RocksDB, fjall).
    Lz4,
    /// zstd at the engine's default level (Augur and RocksDB: 3).
    Zstd,
}

impl Codec {
    /// The name `--compression_type` takes and the reports show.
    pub fn name(self) -> &'static str {
        match self {
            Codec::None => "none",
            Codec::Snappy => "snappy",
            Codec::Lz4 => "lz4",
            Codec::Zstd => "zstd",
        }
    }

    /// Augur's setting for this codec (`None` for a codec Augur does not have).
    pub fn to_augur(self) -> Option<::augur::Compression> {
        match self {
            Codec::None => Some(::augur::Compression::None),
            Codec::Snappy => None,
            Codec::Lz4 => Some(::augur::Compression::Lz4),
            // The engine's default level (what `--compression zstd` gives).
            Codec::Zstd => ::augur::Compression::parse("zstd").ok(),
        }
    }
}

/// Which engine the harness drives.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EngineKind {
    /// Augur itself.
    #[default]
    Augur,
    /// RocksDB through the `rocksdb` crate (cargo feature `rocksdb`).
    Rocksdb,
    /// LevelDB through an FFI to the system libleveldb (cargo feature `leveldb`).
    Leveldb,
    /// fjall, a Rust LSM engine (cargo feature `fjall`).
    Fjall,
}

impl EngineKind {
    /// Every engine, Augur first.
    pub const ALL: [EngineKind; 4] = [
        EngineKind::Augur,
        EngineKind::Rocksdb,
        EngineKind::Leveldb,
        EngineKind::Fjall,
    ];

    /// The name used in reports (the JSON `engine` field) and by `--engine`.
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Augur => "augur",
            EngineKind::Rocksdb => "rocksdb",
            EngineKind::Leveldb => "leveldb",
            EngineKind::Fjall => "fjall",
        }
    }

    /// Whether this engine was compiled into this build.
    pub fn is_built(self) -> bool {
        match self {
            EngineKind::Augur => true,
            EngineKind::Rocksdb => cfg!(feature = "rocksdb"),
            EngineKind::Leveldb => cfg!(feature = "leveldb"),
            EngineKind::Fjall => cfg!(feature = "fjall"),
        }
    }

    /// Whether the engine can keep large values out of its LSM tree (key-value separation),
    /// so a `--value-separation-threshold` applies to it.
    pub fn separates_values(self) -> bool {
        matches!(
            self,
            EngineKind::Augur | EngineKind::Rocksdb | EngineKind::Fjall
        )
    }

    /// The codecs this engine can compress with (`--compression_type`): Augur none, lz4 and
    /// zstd; RocksDB (Debian's librocksdb links all four) none, snappy, lz4 and zstd;
    /// LevelDB 1.23's C API none and snappy (`leveldb/c.h`); fjall 2 none and lz4 (its
    /// `lz4` feature; its other codec, miniz, is not one of db_bench's names).
    pub fn codecs(self) -> &'static [Codec] {
        match self {
            EngineKind::Augur => &[Codec::None, Codec::Lz4, Codec::Zstd],
            EngineKind::Rocksdb => &[Codec::None, Codec::Snappy, Codec::Lz4, Codec::Zstd],
            EngineKind::Leveldb => &[Codec::None, Codec::Snappy],
            EngineKind::Fjall => &[Codec::None, Codec::Lz4],
        }
    }

    /// Refuses a codec this engine does not have, naming the ones it has (never substitutes
    /// another).
    pub fn check_codec(self, codec: Codec) -> Result<(), BenchError> {
        if self.codecs().contains(&codec) {
            return Ok(());
        }
        let has: Vec<&str> = self.codecs().iter().map(|c| c.name()).collect();
        Err(BenchError::failed(format!(
            "--compression_type={}: {} has no {} compression (it supports {})",
            codec.name(),
            self.name(),
            codec.name(),
            has.join(", ")
        )))
    }

    /// Whether this engine can read its tables with direct I/O, past the kernel's page cache
    /// (`--use_direct_reads`): Augur (`--read-mode direct`, through its own page cache) and
    /// RocksDB (`use_direct_reads`). LevelDB 1.23 has no such option; neither has fjall 2.
    pub fn has_direct_reads(self) -> bool {
        matches!(self, EngineKind::Augur | EngineKind::Rocksdb)
    }

    /// Refuses `--use_direct_reads` for an engine without direct reads, naming the engines
    /// with them (reads are never silently buffered instead).
    pub fn check_direct_reads(self) -> Result<(), BenchError> {
        if self.has_direct_reads() {
            return Ok(());
        }
        Err(BenchError::failed(format!(
            "--use_direct_reads=1: {} has no direct reads (engines with them: {})",
            self.name(),
            Self::names_where(Self::has_direct_reads)
        )))
    }

    /// The names of the engines for which `pred` holds, comma-separated.
    fn names_where(pred: fn(EngineKind) -> bool) -> String {
        let names: Vec<&str> = Self::ALL
            .iter()
            .filter(|&&k| pred(k))
            .map(|k| k.name())
            .collect();
        names.join(", ")
    }

    /// Whether the engine takes the L0 triggers at open (LevelDB fixes them at compile
    /// time; fjall's leveled strategy has no slowdown or stop trigger).
    pub fn takes_l0_triggers(self) -> bool {
        matches!(self, EngineKind::Augur | EngineKind::Rocksdb)
    }

    /// Refuses the L0 trigger flags for an engine that cannot take them, naming those that
    /// can (a peer never runs with its own triggers while the record says otherwise).
    pub fn check_l0_triggers(self, triggers: &L0Triggers) -> Result<(), BenchError> {
        if !triggers.any() || self.takes_l0_triggers() {
            return Ok(());
        }
        Err(BenchError::failed(format!(
            "--level0_*_trigger: {} cannot set its L0 triggers (engines that can: {})",
            self.name(),
            Self::names_where(Self::takes_l0_triggers)
        )))
    }

    /// Fails with a clear message when this engine was not compiled in.
    pub fn check_available(self) -> Result<(), BenchError> {
        if self.is_built() {
            return Ok(());
        }
        let name = self.name();
        let build = match self {
            EngineKind::Rocksdb => {
                "apt-get install librocksdb-dev libclang-dev; ROCKSDB_LIB_DIR=/usr/lib/x86_64-linux-gnu \
                 cargo build --release -p augur-cli --features rocksdb"
            }
            EngineKind::Leveldb => {
                "apt-get install libleveldb-dev; cargo build --release -p augur-cli --features leveldb"
            }
            _ => "cargo build --release -p augur-cli --features fjall",
        };
        Err(BenchError::failed(format!(
            "--engine={name} needs a build with the cargo feature `{name}` (see the README's \
             bench section: {build})"
        )))
    }
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
    /// Reads up to `n` entries from the first key (or, `reverse`, backwards from the last),
    /// calling `each` with the key + value bytes of every entry.
    fn scan_all(
        &self,
        n: usize,
        reverse: bool,
        each: &mut dyn FnMut(u64),
    ) -> Result<(), BenchError>;
    /// Writes the memtable out to a file and waits for it.
    fn flush(&self) -> Result<(), BenchError>;
    /// Compacts the whole key range and waits for it.
    fn compact(&self) -> Result<(), BenchError>;
    /// Waits until the flushes and compactions a burst of writes left behind are done
    /// (db_bench's `waitforcompaction`), without forcing any.
    fn wait_for_compactions(&self) -> Result<(), BenchError>;
    /// Augur's statistics (`None`, the default, for peers).
    fn stats(&self) -> Option<Stats> {
        None
    }
    /// The engine's cache and pinned memory now (`None`, the default, for an engine that
    /// reports neither: LevelDB and fjall expose no cache usage).
    fn memory(&self) -> Option<MemoryReport> {
        None
    }
    /// The Augur handle, for Augur-only benchmarks (`None`, the default, for peers).
    fn augur(&self) -> Option<&Db> {
        None
    }
    /// Closes the database, reporting any error (the default drops it: peers close on
    /// drop and report nothing).
    fn close(self: Box<Self>) -> Result<(), BenchError> {
        drop(self);
        Ok(())
    }
}

/// Calls `each` with the key + value bytes of every entry of `entries`, turning an entry's
/// error into a `BenchError` with `err`; stops at the first error. For engines whose
/// iterators are Rust iterators of `Result<(key, value), E>` (fjall).
#[cfg(feature = "fjall")]
pub(crate) fn visit_entries<K: AsRef<[u8]>, V: AsRef<[u8]>, E>(
    entries: impl Iterator<Item = Result<(K, V), E>>,
    err: impl Fn(E) -> BenchError,
    each: &mut dyn FnMut(u64),
) -> Result<(), BenchError> {
    for entry in entries {
        let (k, v) = entry.map_err(&err)?;
        each((k.as_ref().len() + v.as_ref().len()) as u64);
    }
    Ok(())
}

/// The number of entries of `entries` and their key + value bytes (see `visit_entries`).
#[cfg(feature = "fjall")]
pub(crate) fn count_entries<K: AsRef<[u8]>, V: AsRef<[u8]>, E>(
    entries: impl Iterator<Item = Result<(K, V), E>>,
    err: impl Fn(E) -> BenchError,
) -> Result<(u64, u64), BenchError> {
    let (mut count, mut bytes) = (0u64, 0u64);
    visit_entries(entries, err, &mut |b| {
        count += 1;
        bytes += b;
    })?;
    Ok((count, bytes))
}

/// Polls `state` every `poll` until it has returned the same value `stable_polls` times in a
/// row — how peers without a "background work pending" signal are waited for — or fails
/// after `limit`.
#[cfg(any(feature = "leveldb", feature = "fjall"))]
pub(crate) fn wait_until_stable<T: PartialEq>(
    mut state: impl FnMut() -> Result<T, BenchError>,
    poll: std::time::Duration,
    stable_polls: u32,
    limit: std::time::Duration,
) -> Result<(), BenchError> {
    let start = std::time::Instant::now();
    let mut last = state()?;
    let mut same = 0;
    while same < stable_polls {
        if start.elapsed() > limit {
            return Err(BenchError::failed(format!(
                "background work still changing the database after {} s",
                limit.as_secs()
            )));
        }
        std::thread::sleep(poll);
        let now = state()?;
        same = if now == last { same + 1 } else { 0 };
        last = now;
    }
    Ok(())
}

/// How a run opens its databases besides Augur's `Options`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenSettings {
    /// Sync every write.
    pub sync: bool,
    /// Block cache of the peers, bytes (`--cache_size`; Augur's is `Options::cache_bytes`).
    pub cache_bytes: usize,
    /// Peers read their tables with direct I/O (`--use_direct_reads`; Augur's read mode is
    /// in its `Options`); checked against [`EngineKind::has_direct_reads`] before a run.
    pub direct_reads: bool,
    /// RocksDB keeps its statistics (`--statistics`), so its block cache hits and misses
    /// are reported; the other engines ignore it.
    pub statistics: bool,
    /// The peers' codec (Augur's is `Options::compression`); checked against
    /// [`EngineKind::codecs`] before a run starts.
    pub codec: Codec,
    /// The L0 triggers given on the command line, for the peers (Augur's are in its
    /// `Options`); checked against [`EngineKind::takes_l0_triggers`] before a run starts.
    pub l0_triggers: L0Triggers,
}

/// db_bench's `--level0_file_num_compaction_trigger`, `--level0_slowdown_writes_trigger` and
/// `--level0_stop_writes_trigger`, each when given: a peer keeps its own default for the
/// others.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct L0Triggers {
    /// L0 files that trigger a compaction out of L0.
    pub compaction: Option<usize>,
    /// L0 files from which writes are slowed down.
    pub slowdown: Option<usize>,
    /// L0 files at which writes stop until compaction catches up.
    pub stop: Option<usize>,
}

impl L0Triggers {
    /// Whether any trigger was given.
    pub fn any(&self) -> bool {
        self.compaction.is_some() || self.slowdown.is_some() || self.stop.is_some()
    }
}

/// Opens the database in `dir` with `kind`; peers get settings comparable to `opts` (see the
/// module comment).
pub fn open(
    kind: EngineKind,
    dir: &Path,
    opts: &Options,
    settings: OpenSettings,
) -> Result<Box<dyn BenchEngine>, BenchError> {
    kind.check_available()?;
    let _ = (dir, opts, settings);
    match kind {
        EngineKind::Augur => Ok(Box::new(augur::AugurEngine {
            db: Db::open(dir, opts.clone())?,
            wo: WriteOptions {
                sync: settings.sync,
            },
        })),
        #[cfg(feature = "rocksdb")]
        EngineKind::Rocksdb => Ok(Box::new(rocksdb::RocksEngine::open(dir, opts, settings)?)),
        #[cfg(feature = "leveldb")]
        EngineKind::Leveldb => Ok(Box::new(leveldb::LevelEngine::open(dir, opts, settings)?)),
        #[cfg(feature = "fjall")]
        EngineKind::Fjall => Ok(Box::new(fjall::FjallEngine::open(dir, opts, settings)?)),
        #[allow(unreachable_patterns)]
        _ => unreachable!("check_available refused an engine that was not built"),
    }
}

/// Whether the file at `path` (relative to the database directory) holds `kind`'s data: its
/// SSTables and its value-log or blob files — not its WAL or journal, manifest, info logs or
/// markers. Their bytes are the settled size of the tree (`table_bytes` of the records).
pub fn is_table_file(kind: EngineKind, path: &Path) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    match kind {
        // NNNNNN.sst and NNNNNN.vlog.
        EngineKind::Augur => {
            ::augur::is_database_file(&name) && (name.ends_with(".sst") || name.ends_with(".vlog"))
        }
        EngineKind::Rocksdb => name.ends_with(".sst") || name.ends_with(".blob"),
        EngineKind::Leveldb => name.ends_with(".ldb") || name.ends_with(".sst"),
        // partitions/<name>/segments/<id> and, with key-value separation,
        // partitions/<name>/blobs/segments/<id>.
        EngineKind::Fjall => {
            let parts: Vec<_> = path.components().map(|c| c.as_os_str()).collect();
            parts.first().is_some_and(|p| *p == "partitions")
                && parts.iter().any(|p| *p == "segments")
        }
    }
}

/// Whether the file or directory `name` in a database directory belongs to `kind` (so a
/// fresh fill may delete it).
pub fn owns_file(kind: EngineKind, name: &str) -> bool {
    match kind {
        EngineKind::Augur => ::augur::is_database_file(name),
        // RocksDB's and LevelDB's files: CURRENT, IDENTITY, LOCK, LOG*, MANIFEST-*,
        // OPTIONS-*, *.log, *.sst, *.ldb, *.blob, *.dbtmp.
        EngineKind::Rocksdb | EngineKind::Leveldb => {
            ["CURRENT", "IDENTITY", "LOCK"].contains(&name)
                || ["LOG", "MANIFEST-", "OPTIONS-"]
                    .iter()
                    .any(|p| name.starts_with(p))
                || [".log", ".sst", ".ldb", ".blob", ".dbtmp"]
                    .iter()
                    .any(|s| name.ends_with(s))
        }
        // fjall 2's keyspace layout (checked on a real keyspace): the `version` marker file
        // and the `journals` and `partitions` directories.
        EngineKind::Fjall => ["version", "journals", "partitions"].contains(&name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn l0_triggers_are_refused_by_engines_that_cannot_take_them() {
        let given = L0Triggers {
            compaction: Some(8),
            ..L0Triggers::default()
        };
        for kind in EngineKind::ALL {
            assert!(kind.check_l0_triggers(&L0Triggers::default()).is_ok());
            let checked = kind.check_l0_triggers(&given);
            if matches!(kind, EngineKind::Augur | EngineKind::Rocksdb) {
                assert!(checked.is_ok(), "{kind:?}");
            } else {
                let e = checked.unwrap_err().to_string();
                assert!(
                    e.contains(kind.name()) && e.contains("augur, rocksdb"),
                    "{e}"
                );
            }
        }
    }
}
