//! What a benchmark cost besides its foreground time, for its record: write amplification from
//! the engine's counters, space amplification from the database directory and a full scan, and
//! the time flushes, compactions and learners spent meanwhile (Augur only: peers have no
//! counters, so their records carry none of these but the space use).

use super::Runner;
use crate::error::{io_err, BenchError};
use crate::report::Outcome;
use augur::Stats;
use serde_json::json;

/// Bytes of every file under `dir`, recursively (0 for a missing directory; files deleted
/// while it is walked count as 0).
fn dir_bytes(dir: &std::path::Path) -> Result<u64, BenchError> {
    if !dir.exists() {
        return Ok(0);
    }
    let mut total = 0;
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
        total += if meta.is_dir() {
            dir_bytes(&e.path())?
        } else {
            meta.len()
        };
    }
    Ok(total)
}

impl Runner {
    /// Appends the database's space use after a write benchmark: bytes of every file under
    /// the directory (`db_bytes`), key + value bytes of the live entries (`live_bytes`, from
    /// a full scan, outside the timed region) and their ratio (`space_amplification`).
    pub(super) fn space_amplification(&mut self, out: &mut Outcome) -> Result<(), BenchError> {
        let db_bytes = dir_bytes(&self.dir)?;
        let mut live = 0u64;
        self.db()?.scan_all(usize::MAX, false, &mut |b| live += b)?;
        out.extra.push(("db_bytes", json!(db_bytes)));
        out.extra.push(("live_bytes", json!(live)));
        if live > 0 {
            out.extra
                .push(("space_amplification", json!(db_bytes as f64 / live as f64)));
        }
        Ok(())
    }
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
