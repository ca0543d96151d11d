//! What a benchmark cost besides its foreground time, for its record: write amplification from
//! the engine's counters, space amplification from the database directory and a full scan, and
//! the time flushes, compactions and learners spent meanwhile (Augur only: peers have no
//! counters, so their records carry none of these but the space use).
//!
//! Space use (after the writes and `flush`, `compact`, `waitforcompaction`), every engine:
//! `db_bytes` (the sizes of every file under the directory), `db_allocated_bytes` (the disk
//! blocks they take: less for sparse files such as fjall's preallocated journal, more for
//! space preallocated past a file's end such as RocksDB's WAL), `table_bytes` (the sizes of
//! the engine's table and value files — SSTables, value-log or blob files, no WAL, journal,
//! manifest or info log: the size of the tree itself, `engine::is_table_file`), `live_bytes`
//! (key + value bytes of the live entries, from a full scan: the user data),
//! `space_amplification` = `db_bytes / live_bytes` and `table_space_amplification` =
//! `table_bytes / live_bytes`. Augur also reports, from its statistics (`disk_use`):
//! `sstable_bytes` and `value_log_bytes`; `raw_key_bytes` and `raw_value_bytes` (the user bytes
//! the SSTables hold, every version, inline values uncompressed) and `raw_user_bytes`, their
//! sum; `stored_value_bytes` (those inline values as stored) and `value_compression_ratio` =
//! stored / raw (below 1 when compression saved space); `sstable_amplification` =
//! `sstable_bytes / raw_user_bytes`; and `levels_disk`, the same per level holding files.

use super::Runner;
use crate::engine::{self, EngineKind};
use crate::error::{io_err, BenchError};
use crate::report::Outcome;
use crate::stats_view;
use augur::Stats;
use serde_json::json;
use std::path::Path;

/// What the files under a database directory take (module docs).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DirUsage {
    /// Sizes of every file.
    pub bytes: u64,
    /// Disk blocks of every file, in bytes.
    pub allocated: u64,
    /// Sizes of the engine's table and value files.
    pub table_bytes: u64,
}

/// What the files under `dir` take, recursively, `kind` telling its table files (nothing for
/// a missing directory; files deleted while it is walked count as 0).
pub(crate) fn dir_usage(dir: &Path, kind: EngineKind) -> Result<DirUsage, BenchError> {
    let mut usage = DirUsage::default();
    if dir.exists() {
        walk(dir, Path::new(""), kind, &mut usage)?;
    }
    Ok(usage)
}

/// Adds the files under `dir` (`rel` below the database directory) to `usage`.
fn walk(dir: &Path, rel: &Path, kind: EngineKind, usage: &mut DirUsage) -> Result<(), BenchError> {
    let entries = std::fs::read_dir(dir).map_err(io_err(format!("listing {}", dir.display())))?;
    for e in entries {
        let e = e.map_err(io_err(format!("listing {}", dir.display())))?;
        // Engines delete obsolete files in the background: a file listed a moment ago may
        // be gone, and then it takes no space.
        let meta = match e.metadata() {
            Ok(m) => m,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => continue,
            Err(err) => return Err(io_err(format!("reading {}", e.path().display()))(err)),
        };
        let rel = rel.join(e.file_name());
        if meta.is_dir() {
            walk(&e.path(), &rel, kind, usage)?;
            continue;
        }
        usage.bytes += meta.len();
        usage.allocated += allocated(&meta);
        if engine::is_table_file(kind, &rel) {
            usage.table_bytes += meta.len();
        }
    }
    Ok(())
}

/// The disk blocks a file takes, in bytes (its size where blocks are not known).
#[cfg(unix)]
fn allocated(meta: &std::fs::Metadata) -> u64 {
    use std::os::unix::fs::MetadataExt;
    meta.blocks() * 512
}

#[cfg(not(unix))]
fn allocated(meta: &std::fs::Metadata) -> u64 {
    meta.len()
}

impl Runner {
    /// Appends the database's space use after a benchmark that wrote or settled the tree
    /// (module docs): what its files take (`dir_usage`), key + value bytes of the live
    /// entries (`live_bytes`, from a full scan, outside the timed region) and the ratios.
    pub(super) fn space_amplification(&mut self, out: &mut Outcome) -> Result<(), BenchError> {
        let usage = dir_usage(&self.dir, self.kind)?;
        let mut live = 0u64;
        self.db()?.scan_all(usize::MAX, false, &mut |b| live += b)?;
        out.extra.push(("db_bytes", json!(usage.bytes)));
        out.extra.push(("live_bytes", json!(live)));
        if live > 0 {
            out.extra.push((
                "space_amplification",
                json!(usage.bytes as f64 / live as f64),
            ));
        }
        out.record_only
            .push(("db_allocated_bytes", json!(usage.allocated)));
        out.record_only
            .push(("table_bytes", json!(usage.table_bytes)));
        if live > 0 {
            out.record_only.push((
                "table_space_amplification",
                json!(usage.table_bytes as f64 / live as f64),
            ));
        }
        if let Some(s) = self.db()?.stats() {
            out.record_only.extend(disk_use(&s));
        }
        Ok(())
    }
}

/// Augur's bytes on disk by kind, the raw user bytes its SSTables hold and the compression
/// ratio of their inline values, in total and per level holding files (module docs).
pub(crate) fn disk_use(s: &Stats) -> Vec<(&'static str, serde_json::Value)> {
    let ratio = |part: u64, whole: u64| (whole > 0).then(|| part as f64 / whole as f64);
    let t = stats_view::level_totals(s);
    let raw = t.raw_key_bytes + t.raw_value_bytes;
    let levels: Vec<serde_json::Value> = s
        .levels
        .iter()
        .filter(|l| l.files > 0)
        .map(|l| {
            json!({
                "level": l.level,
                "files": l.files,
                "bytes": l.bytes,
                "raw_key_bytes": l.raw_key_bytes,
                "raw_value_bytes": l.raw_value_bytes,
                "stored_value_bytes": l.stored_value_bytes,
                "value_compression_ratio": stats_view::value_compression_ratio(l),
            })
        })
        .collect();
    vec![
        ("sstable_bytes", json!(t.bytes)),
        ("value_log_bytes", json!(s.value_log_bytes)),
        ("raw_key_bytes", json!(t.raw_key_bytes)),
        ("raw_value_bytes", json!(t.raw_value_bytes)),
        ("raw_user_bytes", json!(raw)),
        ("stored_value_bytes", json!(t.stored_value_bytes)),
        (
            "value_compression_ratio",
            json!(stats_view::value_compression_ratio(&t)),
        ),
        ("sstable_amplification", json!(ratio(t.bytes, raw))),
        ("levels_disk", json!(levels)),
    ]
}

/// Flush and compaction time during a benchmark, and the part of it spent training at-build
/// models (the learned-index study's Figure 9), and the time background learners spent
/// training meanwhile (seconds; Augur only).
pub(super) fn background_work(
    before: Option<&Stats>,
    after: Option<&Stats>,
) -> Vec<(&'static str, serde_json::Value)> {
    let (Some(b), Some(a)) = (before, after) else {
        return Vec::new();
    };
    let secs = |f: fn(&Stats) -> u64| json!(f(a).saturating_sub(f(b)) as f64 / 1e9);
    vec![
        ("flush_s", secs(|s| s.flush_ns)),
        ("flush_training_s", secs(|s| s.flush_training_ns)),
        ("compaction_s", secs(|s| s.compaction_ns)),
        ("compaction_training_s", secs(|s| s.compaction_training_ns)),
        ("training_wait_s", secs(|s| s.at_build_training_wait_ns)),
        ("learning_s", secs(|s| s.learning_ns_total)),
        ("write_stall_s", secs(|s| s.write_stall_ns)),
        ("write_slowdown_s", secs(|s| s.write_slowdown_ns)),
        (
            "value_log_bytes_relocated",
            json!(a
                .value_log_bytes_relocated
                .saturating_sub(b.value_log_bytes_relocated)),
        ),
    ]
}

/// Bytes written to files so far.
pub(super) fn written(s: &Stats) -> u64 {
    s.wal_bytes_written
        + s.value_log_bytes_written
        + s.flush_bytes_written
        + s.compaction_bytes_written
}

/// Write amplification between two optional statistics snapshots (`None` for peers).
pub(crate) fn amplification(before: Option<&Stats>, after: Option<&Stats>) -> Option<f64> {
    Some(write_amplification(before?, after?))
}

/// Write amplification between two statistics snapshots.
fn write_amplification(before: &Stats, after: &Stats) -> f64 {
    let user = after
        .user_bytes_written
        .saturating_sub(before.user_bytes_written);
    written(after).saturating_sub(written(before)) as f64 / user.max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_files_are_told_apart_from_logs_and_metadata() {
        let table = |kind, path: &str| engine::is_table_file(kind, Path::new(path));
        assert!(table(EngineKind::Augur, "000012.sst"));
        assert!(table(EngineKind::Augur, "000013.vlog"));
        for other in ["000014.wal", "MANIFEST-000001", "CURRENT", "LOCK", "x.sst"] {
            assert!(!table(EngineKind::Augur, other), "{other}");
        }
        assert!(table(EngineKind::Rocksdb, "000012.sst"));
        assert!(table(EngineKind::Rocksdb, "000013.blob"));
        for other in [
            "000014.log",
            "MANIFEST-000005",
            "OPTIONS-000007",
            "LOG",
            "LOG.old.1",
        ] {
            assert!(!table(EngineKind::Rocksdb, other), "{other}");
        }
        assert!(table(EngineKind::Leveldb, "000012.ldb"));
        assert!(!table(EngineKind::Leveldb, "000014.log"));
        assert!(table(EngineKind::Fjall, "partitions/bench/segments/1"));
        assert!(table(
            EngineKind::Fjall,
            "partitions/bench/blobs/segments/3"
        ));
        for other in [
            "journals/1",
            "version",
            "partitions/bench/manifest",
            "partitions/bench/levels",
        ] {
            assert!(!table(EngineKind::Fjall, other), "{other}");
        }
    }

    #[test]
    fn dir_usage_adds_up_sizes_blocks_and_table_files() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("000001.sst"), [0u8; 10_000]).unwrap();
        std::fs::write(tmp.path().join("000002.wal"), [0u8; 300]).unwrap();
        // A sparse file: a size, no blocks.
        let sparse = std::fs::File::create(tmp.path().join("000003.wal")).unwrap();
        sparse.set_len(1 << 24).unwrap();
        std::fs::create_dir(tmp.path().join("sub")).unwrap();
        std::fs::write(tmp.path().join("sub").join("000004.sst"), [0u8; 50]).unwrap();
        let u = dir_usage(tmp.path(), EngineKind::Augur).unwrap();
        assert_eq!(u.bytes, 10_000 + 300 + (1 << 24) + 50);
        assert_eq!(u.table_bytes, 10_050);
        assert!(u.allocated >= 10_350 && u.allocated < 1 << 20, "{u:?}");
        let none = dir_usage(&tmp.path().join("missing"), EngineKind::Augur).unwrap();
        assert_eq!(none, DirUsage::default());
    }
}
