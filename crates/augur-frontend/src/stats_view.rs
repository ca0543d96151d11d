//! Engine statistics rendered for people and programs: `stats_json` (the `stats` object of
//! `augur stats --json`, of the Python package's `Db.stats()` and of every benchmark record)
//! and `stats_text` (the tables of `augur stats` and of the `stats` benchmark). Shared by the
//! front ends and the harness so all show the same figures under the same names.
//! `learning_during` turns two snapshots into what the engine learned between them (the
//! per-phase figures of the lazy-learning study). Memory outside the data: the bytes each
//! level pins (filters, fences, models; `pinned_bytes`), and under `--read-mode direct` /
//! `--max-open-files` the page cache's and the open-file bound's counters (`reads`).

use comfy_table::Table;
use serde_json::{json, Value};

/// FLSM: guards per level, files per guard, and bytes compaction appended vs rewrote.
fn guards_table(s: &augur::Stats, all: bool) -> String {
    let mut t = Table::new();
    t.set_header(vec![
        "level",
        "guards",
        "non-empty guards",
        "sstables/guard mean",
        "sstables/guard max",
        "max overlapping runs",
    ]);
    for l in s.levels.iter().skip(1).filter(|l| all || l.files > 0) {
        t.add_row(vec![
            l.level.to_string(),
            l.guards.to_string(),
            l.nonempty_guards.to_string(),
            format!("{:.2}", l.mean_sstables_per_guard()),
            l.max_sstables_per_guard.to_string(),
            l.max_guard_depth.to_string(),
        ]);
    }
    format!(
        "compaction style flsm; compaction bytes appended {} rewritten {}\n{t}",
        s.compaction_bytes_appended,
        s.compaction_bytes_written - s.compaction_bytes_appended
    )
}

/// The statistics as one JSON object.
pub fn stats_json(s: &augur::Stats) -> Value {
    let levels: Vec<Value> = s
        .levels
        .iter()
        .map(|l| {
            json!({"level": l.level, "files": l.files, "bytes": l.bytes, "entries": l.entries,
                   "raw_key_bytes": l.raw_key_bytes, "raw_value_bytes": l.raw_value_bytes,
                   "stored_value_bytes": l.stored_value_bytes,
                   "value_compression_ratio": value_compression_ratio(l),
                   "files_with_model": l.files_with_model, "model_bytes": l.model_bytes,
                   "model_segments": l.model_segments, "index_bytes": l.index_bytes,
                   "positive_lookups": l.positive_lookups,
                   "negative_lookups": l.negative_lookups,
                   "model_path_lookups": l.model_path_lookups,
                   "baseline_path_lookups": l.baseline_path_lookups,
                   "avg_model_lookup_ns": l.avg_model_lookup_ns,
                   "avg_baseline_lookup_ns": l.avg_baseline_lookup_ns,
                   "dead_files": l.dead_files,
                   "avg_file_lifetime_us": l.avg_file_lifetime_us,
                   "models_built": l.models_built, "models_skipped": l.models_skipped,
                   "models_wasted": l.models_wasted,
                   "files_died_before_learning": l.files_died_before_learning,
                   "learning_ns": l.learning_ns,
                   "models_by_kind": memory_json(&l.models_by_kind),
                   "level_model_bytes": l.level_model_bytes,
                   "pinned_bytes": l.pinned_bytes,
                   "level_model_segments": l.level_model_segments,
                   "guards": l.guards, "nonempty_guards": l.nonempty_guards,
                   "mean_sstables_per_guard": l.mean_sstables_per_guard(),
                   "max_sstables_per_guard": l.max_sstables_per_guard,
                   "max_guard_depth": l.max_guard_depth})
        })
        .collect();
    let segments: Vec<Value> = s
        .value_log
        .iter()
        .map(|g| {
            json!({"id": g.id, "bytes": g.bytes, "garbage_bytes": g.garbage_bytes,
                   "garbage_ratio": ratio(g.garbage_bytes, g.bytes), "active": g.active})
        })
        .collect();
    let totals = level_totals(s);
    json!({
        "compaction_style": s.compaction_style.name(),
        "levels": levels,
        "files": s.levels.iter().map(|l| l.files).sum::<usize>(),
        "table_bytes": s.levels.iter().map(|l| l.bytes).sum::<u64>(),
        "raw_key_bytes": totals.raw_key_bytes,
        "raw_value_bytes": totals.raw_value_bytes,
        "stored_value_bytes": totals.stored_value_bytes,
        "value_compression_ratio": value_compression_ratio(&totals),
        "value_log": segments,
        "value_log_bytes": s.value_log_bytes,
        "value_log_garbage_bytes": s.value_log.iter().map(|g| g.garbage_bytes).sum::<u64>(),
        "counters": {
            "writes": s.writes,
            "user_bytes_written": s.user_bytes_written,
            "wal_bytes_written": s.wal_bytes_written,
            "value_log_bytes_written": s.value_log_bytes_written,
            "gets": s.gets,
            "write_stalls": s.write_stalls,
            "write_stall_ns": s.write_stall_ns,
            "write_slowdown_ns": s.write_slowdown_ns,
            "memtable_peak_bytes": s.memtable_peak_bytes,
            "flushes": s.flushes,
            "flush_bytes_written": s.flush_bytes_written,
            "compactions": s.compactions,
            "compaction_bytes_read": s.compaction_bytes_read,
            "compaction_bytes_written": s.compaction_bytes_written,
            "compaction_bytes_appended": s.compaction_bytes_appended,
            "compaction_bytes_rewritten": s.compaction_bytes_written - s.compaction_bytes_appended,
            "compaction_entries_dropped": s.compaction_entries_dropped,
            "gc_runs": s.gc_runs,
            "gc_entries_relocated": s.gc_entries_relocated,
            "values_relocated": s.values_relocated,
            "value_log_bytes_relocated": s.value_log_bytes_relocated,
            "flush_ns": s.flush_ns,
            "flush_training_ns": s.flush_training_ns,
            "compaction_ns": s.compaction_ns,
            "compaction_training_ns": s.compaction_training_ns,
            "at_build_training_wait_ns": s.at_build_training_wait_ns,
        },
        "index_memory": {
            "models_by_kind": memory_json(&s.models_by_kind()),
            "total_model_bytes": s.total_model_bytes(),
            "fence_and_filter_bytes": s.levels.iter().map(|l| l.index_bytes).sum::<u64>(),
        },
        "learning": {
            "model_path_lookups": s.model_path_lookups,
            "baseline_path_lookups": s.baseline_path_lookups,
            "model_path_fraction": s.model_path_fraction(),
            "level_model_lookups": s.level_model_lookups,
            "level_models_built": s.level_models_built,
            "level_models_refused": s.level_models_refused,
            "level_model_train_ns": s.level_model_train_ns,
            "models_built": s.models_built,
            "learning_ns_total": s.learning_ns_total,
            "training_ns_per_key": s.training_ns_per_key,
            "pending": s.learning_pending,
        },
        "pinned_bytes": s.pinned_bytes(),
        "reads": reads_json(&s.reads),
        "write_amplification": s.write_amplification(),
        "live_snapshots": s.live_snapshots,
        "last_seqno": s.last_seqno,
        "lookup_breakdown": breakdown_json(&s.lookup_breakdown),
    })
}

/// What the engine learned between the snapshots `before` and `after` (one open database),
/// as fields of a benchmark record:
///
/// - `tables_created`: SSTables written by flushes and compactions in between, exact:
///   live files after − live files before + files that died in between (a trivial move
///   neither creates nor kills a file).
/// - `models_learned_background`: models trained by the background learner or
///   `Db::learn_all` (`Stats::models_built`).
/// - `models_learned_at_build`: under `at-build` (`at_build`), every table written carries a
///   model, so `tables_created`; 0 otherwise.
/// - `models_learned`: the sum of the two.
/// - `models_skipped`: files the cost–benefit analyzer decided not to learn.
/// - `learning_s` = `background_learning_s` + `at_build_training_s`: training time
///   (background and offline training, plus training inside flushes and compactions).
/// - `files_start`, `files_end`, `learned_files_start`, `learned_files_end`: live files, and
///   live files with a model, at both ends.
/// - `model_path_fraction`: share of the SSTable lookups in between served by a model.
/// - `learning_pending_end`: files still waiting, queued or being learned at the end.
/// - `models_learned_before`, `learning_s_before`, `tables_created_before`: the same totals
///   from the opening of the database up to `before` (the files found at open count as
///   created then), so that a run on a database created by the same process can tell what
///   its load and settling phases learned, whichever benchmarks ran in between.
pub fn learning_during(
    before: &augur::Stats,
    after: &augur::Stats,
    at_build: bool,
) -> Vec<(&'static str, Value)> {
    let files = |s: &augur::Stats| s.levels.iter().map(|l| l.files as u64).sum::<u64>();
    let learned = |s: &augur::Stats| {
        s.levels
            .iter()
            .map(|l| l.files_with_model as u64)
            .sum::<u64>()
    };
    let sum = |s: &augur::Stats, f: fn(&augur::LevelStats) -> u64| -> u64 {
        s.levels.iter().map(f).sum()
    };
    let delta = |f: fn(&augur::Stats) -> u64| f(after).saturating_sub(f(before));
    let died = sum(after, |l| l.dead_files).saturating_sub(sum(before, |l| l.dead_files));
    let tables_created = (files(after) + died).saturating_sub(files(before));
    let background = delta(|s| s.models_built);
    let at_build_models = if at_build { tables_created } else { 0 };
    let tables_before = files(before) + sum(before, |l| l.dead_files);
    let models_before = before.models_built + if at_build { tables_before } else { 0 };
    let learning_ns_before = before.learning_ns_total + before.at_build_training_ns;
    let skipped =
        sum(after, |l| l.models_skipped).saturating_sub(sum(before, |l| l.models_skipped));
    let background_ns = delta(|s| s.learning_ns_total);
    let at_build_ns = delta(|s| s.at_build_training_ns);
    let model = delta(|s| s.model_path_lookups);
    let baseline = delta(|s| s.baseline_path_lookups);
    vec![
        ("tables_created", json!(tables_created)),
        ("models_learned", json!(background + at_build_models)),
        ("models_learned_background", json!(background)),
        ("models_learned_at_build", json!(at_build_models)),
        ("models_skipped", json!(skipped)),
        (
            "learning_s",
            json!((background_ns + at_build_ns) as f64 / 1e9),
        ),
        ("background_learning_s", json!(background_ns as f64 / 1e9)),
        ("at_build_training_s", json!(at_build_ns as f64 / 1e9)),
        ("files_start", json!(files(before))),
        ("files_end", json!(files(after))),
        ("learned_files_start", json!(learned(before))),
        ("learned_files_end", json!(learned(after))),
        (
            "model_path_fraction",
            json!(model as f64 / (model + baseline).max(1) as f64),
        ),
        ("learning_pending_end", json!(after.learning_pending)),
        ("models_learned_before", json!(models_before)),
        ("learning_s_before", json!(learning_ns_before as f64 / 1e9)),
        ("tables_created_before", json!(tables_before)),
    ]
}

/// The raw and stored sizes of every level added up (the other fields are left at zero).
pub fn level_totals(s: &augur::Stats) -> augur::LevelStats {
    let mut t = augur::LevelStats::default();
    for l in &s.levels {
        t.files += l.files;
        t.bytes += l.bytes;
        t.entries += l.entries;
        t.raw_key_bytes += l.raw_key_bytes;
        t.raw_value_bytes += l.raw_value_bytes;
        t.stored_value_bytes += l.stored_value_bytes;
    }
    t
}

/// Compression ratio of a level's inline values: bytes as stored / raw bytes (1.0 when
/// stored raw, below 1 when compression saved space); `None` for a level without inline
/// value bytes.
pub fn value_compression_ratio(l: &augur::LevelStats) -> Option<f64> {
    (l.raw_value_bytes > 0).then(|| l.stored_value_bytes as f64 / l.raw_value_bytes as f64)
}

/// The page cache (direct mode), the decompressed value-chunk cache and the open-file bound
/// (`max_open_files`) as JSON; each is `null` when the database runs without it, so the
/// object's shape never changes.
pub fn reads_json(r: &augur::ReadStats) -> Value {
    let cache = r.cache.map(|c| {
        json!({"capacity_bytes": c.capacity_bytes, "used_bytes": c.used_bytes, "pages": c.pages,
               "hits": c.hits, "misses": c.misses, "hit_ratio": c.hit_ratio(),
               "device_reads": c.device_reads, "device_bytes": c.device_bytes})
    });
    let chunks = r.chunks.map(|c| {
        json!({"capacity_bytes": c.capacity_bytes, "used_bytes": c.used_bytes,
               "chunks": c.chunks, "hits": c.hits, "misses": c.misses,
               "hit_ratio": c.hit_ratio(), "inserts": c.inserts,
               "block_hits": c.block_hits, "block_misses": c.block_misses})
    });
    let open_files = r
        .open_files
        .map(|o| json!({"limit": o.limit, "open": o.open, "mapped": o.mapped, "opens": o.opens}));
    json!({"cache": cache, "chunk_cache": chunks, "open_files": open_files})
}

/// The caches and the open-file bound as text lines (nothing for a database without them;
/// the chunk cache only once a compressed value was looked up).
fn reads_text(r: &augur::ReadStats) -> String {
    let mut out = String::new();
    if let Some(c) = r.cache {
        out.push_str(&format!(
            "page cache (direct reads): {} B capacity, {} B used ({} pages); {} hits, {} \
             misses (hit ratio {:.1}%); {} device reads, {} device bytes\n",
            c.capacity_bytes,
            c.used_bytes,
            c.pages,
            c.hits,
            c.misses,
            100.0 * c.hit_ratio(),
            c.device_reads,
            c.device_bytes
        ));
    }
    if let Some(c) = r.chunks.filter(|c| c.hits + c.misses + c.chunks > 0) {
        out.push_str(&format!(
            "chunk cache (decompressed values): {} B capacity, {} B used ({} chunks); {} hits, \
             {} misses (hit ratio {:.1}%); {} chunks decompressed whole\n",
            c.capacity_bytes,
            c.used_bytes,
            c.chunks,
            c.hits,
            c.misses,
            100.0 * c.hit_ratio(),
            c.inserts
        ));
        if c.block_hits + c.block_misses > 0 {
            out.push_str(&format!(
                "chunk cache (compressed key blocks): {} hits, {} misses\n",
                c.block_hits, c.block_misses
            ));
        }
    }
    if let Some(o) = r.open_files {
        out.push_str(&format!(
            "open files: limit {}, {} open, {} mapped, {} opens\n",
            o.limit, o.open, o.mapped, o.opens
        ));
    }
    out
}

/// Model memory per index type as a JSON array.
fn memory_json(m: &[augur::IndexMemory]) -> Value {
    m.iter()
        .map(|m| {
            json!({"index": m.kind.name(), "max_window": m.max_window, "files": m.files, "bytes": m.bytes})
        })
        .collect()
}

fn ratio(part: u64, whole: u64) -> f64 {
    part as f64 / whole.max(1) as f64
}

/// The sampled lookup-step breakdown as JSON: samples, average total, average per step (ns).
pub fn breakdown_json(b: &augur::stats::breakdown::LookupBreakdown) -> Value {
    let steps: serde_json::Map<String, Value> = augur::stats::breakdown::STEP_NAMES
        .iter()
        .zip(b.avg_step_ns)
        .map(|(name, ns)| (name.to_string(), json!(ns)))
        .collect();
    json!({"samples": b.samples, "avg_total_ns": b.avg_total_ns, "avg_step_ns": steps})
}

/// The sampled lookup-step breakdown as one text line per step.
pub fn breakdown_text(b: &augur::stats::breakdown::LookupBreakdown) -> String {
    let mut out = format!(
        "point-lookup breakdown ({} sampled lookups, avg {:.0} ns):\n",
        b.samples, b.avg_total_ns
    );
    for (name, ns) in augur::stats::breakdown::STEP_NAMES
        .iter()
        .zip(b.avg_step_ns)
    {
        out.push_str(&format!("  {name:<12} {ns:>9.0} ns\n"));
    }
    out
}

/// The statistics as human-readable tables: the levels that hold files and, when there were
/// lookups, the learning table of the levels that saw any; `all` shows every level and the
/// learning table always (`augur stats --all`). `--json` output is always complete.
pub fn stats_text(s: &augur::Stats, all: bool) -> String {
    let mut out = if all || s.levels.iter().any(|l| l.files > 0) {
        format!("{}\n{}", levels_table(s, all), totals_text(s))
    } else {
        "no tables yet (every entry is in the memtable and the WAL)\n".to_string()
    };
    if s.compaction_style == augur::CompactionStyle::Flsm {
        out.push_str(&format!("{}\n", guards_table(s, all)));
    }
    let looked_up = |l: &augur::LevelStats| {
        l.positive_lookups + l.negative_lookups + l.models_built + l.dead_files > 0
    };
    if all || s.levels.iter().any(looked_up) {
        out.push_str(&format!("{}\n", learning_table(s, |l| all || looked_up(l))));
    }
    if !s.value_log.is_empty() {
        out.push_str(&format!("{}\n", value_log_table(s)));
    }
    out.push_str(&reads_text(&s.reads));
    out.push_str(&counters_text(s));
    out.push_str(&learning_summary_text(s));
    if s.lookup_breakdown.samples > 0 {
        out.push_str(&breakdown_text(&s.lookup_breakdown));
    }
    out
}

/// Per level (those holding files, or every one with `all`): files, bytes, entries, the raw
/// key and value bytes of the entries, the bytes the inline values take as stored and their
/// compression ratio (stored / raw), the memory of the learned models and of the fences
/// and filters, and all the bytes the level's tables pin in memory outside any cache.
fn levels_table(s: &augur::Stats, all: bool) -> Table {
    let mut levels = Table::new();
    levels.set_header(vec![
        "level",
        "files",
        "bytes",
        "entries",
        "raw key bytes",
        "raw value bytes",
        "stored value bytes",
        "value ratio",
        "learned files",
        "model bytes",
        "segments",
        "fence+filter bytes",
        "pinned bytes",
    ]);
    for l in s.levels.iter().filter(|l| all || l.files > 0) {
        levels.add_row(vec![
            l.level.to_string(),
            l.files.to_string(),
            l.bytes.to_string(),
            l.entries.to_string(),
            l.raw_key_bytes.to_string(),
            l.raw_value_bytes.to_string(),
            l.stored_value_bytes.to_string(),
            value_compression_ratio(l).map_or("-".to_string(), |r| format!("{r:.3}")),
            l.files_with_model.to_string(),
            l.model_bytes.to_string(),
            l.model_segments.to_string(),
            l.index_bytes.to_string(),
            l.pinned_bytes.to_string(),
        ]);
    }
    levels
}

/// One line under the levels table: the levels' bytes, raw key and value bytes, the stored
/// bytes of the inline values and their compression ratio, and the bytes pinned in memory,
/// all levels together.
fn totals_text(s: &augur::Stats) -> String {
    let t = level_totals(s);
    format!(
        "all levels: {} table bytes, {} raw key bytes, {} raw value bytes, {} stored value \
         bytes, value ratio {}, {} pinned bytes\n",
        t.bytes,
        t.raw_key_bytes,
        t.raw_value_bytes,
        t.stored_value_bytes,
        value_compression_ratio(&t).map_or("-".to_string(), |r| format!("{r:.3}")),
        s.pinned_bytes()
    )
}

/// Per value-log segment: its size, its garbage and whether it is the one being appended to.
fn value_log_table(s: &augur::Stats) -> Table {
    let mut vlog = Table::new();
    vlog.set_header(vec![
        "segment",
        "bytes",
        "garbage bytes",
        "garbage %",
        "active",
    ]);
    for g in &s.value_log {
        vlog.add_row(vec![
            g.id.to_string(),
            g.bytes.to_string(),
            g.garbage_bytes.to_string(),
            format!("{:.1}", 100.0 * ratio(g.garbage_bytes, g.bytes)),
            if g.active { "yes" } else { "" }.to_string(),
        ]);
    }
    vlog
}

/// The counters since the database was opened (one `name value` line each, under a heading)
/// and the write amplification they give.
fn counters_text(s: &augur::Stats) -> String {
    let counters = [
        ("writes", s.writes),
        ("user bytes written", s.user_bytes_written),
        ("WAL bytes written", s.wal_bytes_written),
        ("value-log bytes written", s.value_log_bytes_written),
        ("gets", s.gets),
        ("write stalls", s.write_stalls),
        ("write stall ms", s.write_stall_ns / 1_000_000),
        ("write slowdown ms", s.write_slowdown_ns / 1_000_000),
        ("memtable peak bytes", s.memtable_peak_bytes),
        ("flushes", s.flushes),
        ("flush bytes written", s.flush_bytes_written),
        ("compactions", s.compactions),
        ("compaction bytes read", s.compaction_bytes_read),
        ("compaction bytes written", s.compaction_bytes_written),
        ("compaction entries dropped", s.compaction_entries_dropped),
        ("GC runs", s.gc_runs),
        ("GC entries relocated", s.gc_entries_relocated),
        ("values relocated", s.values_relocated),
        ("value-log bytes relocated", s.value_log_bytes_relocated),
        ("last seqno", s.last_seqno),
    ];
    let mut out = String::from("counters since this process opened the database:\n");
    for (name, v) in counters {
        out.push_str(&format!("  {name:<28} {v}\n"));
    }
    out.push_str(&format!(
        "  {:<28} {:.3}\n",
        "write amplification",
        s.write_amplification()
    ));
    out
}

/// The learning lines under the counters: lookups on the model path, models learned,
/// training inside flushes and compactions, and the learned index memory per index type.
fn learning_summary_text(s: &augur::Stats) -> String {
    let mut out = format!(
        "  {:<28} {:.1}% ({} model, {} baseline)\n  {:<28} {} ({:.2} ms, {:.1} ns/key, {} pending)\n",
        "lookups on the model path",
        100.0 * s.model_path_fraction(),
        s.model_path_lookups,
        s.baseline_path_lookups,
        "models learned",
        s.models_built,
        s.learning_ns_total as f64 / 1e6,
        s.training_ns_per_key,
        s.learning_pending
    );
    out.push_str(&format!(
        "  {:<28} {:.2} ms flushing ({:.2} ms in all), {:.2} ms compacting ({:.2} ms in all), \
         waited for {:.2} ms\n",
        "at-build training",
        s.flush_training_ns as f64 / 1e6,
        s.flush_ns as f64 / 1e6,
        s.compaction_training_ns as f64 / 1e6,
        s.compaction_ns as f64 / 1e6,
        s.at_build_training_wait_ns as f64 / 1e6,
    ));
    let kinds: Vec<String> = s
        .models_by_kind()
        .iter()
        .map(|m| {
            format!(
                "{}/w{} {} B in {} files",
                m.kind.name(),
                m.max_window,
                m.bytes,
                m.files
            )
        })
        .collect();
    out.push_str(&format!(
        "  {:<28} {} B total{}{}\n",
        "learned index memory",
        s.total_model_bytes(),
        if kinds.is_empty() { "" } else { ": " },
        kinds.join(", ")
    ));
    out
}

/// Per level: lookups by outcome and path, sampled path latencies, file lifetimes and what
/// the learner did.
fn learning_table(s: &augur::Stats, show: impl Fn(&augur::LevelStats) -> bool) -> Table {
    let mut t = Table::new();
    t.set_header(vec![
        "level",
        "lookups +",
        "lookups -",
        "model path",
        "baseline path",
        "model ns",
        "baseline ns",
        "dead files",
        "avg life ms",
        "built",
        "skipped",
        "wasted",
        "died early",
        "learn ms",
    ]);
    for l in s.levels.iter().filter(|l| show(l)) {
        t.add_row(vec![
            l.level.to_string(),
            l.positive_lookups.to_string(),
            l.negative_lookups.to_string(),
            l.model_path_lookups.to_string(),
            l.baseline_path_lookups.to_string(),
            l.avg_model_lookup_ns.to_string(),
            l.avg_baseline_lookup_ns.to_string(),
            l.dead_files.to_string(),
            format!("{:.1}", l.avg_file_lifetime_us as f64 / 1000.0),
            l.models_built.to_string(),
            l.models_skipped.to_string(),
            l.models_wasted.to_string(),
            l.files_died_before_learning.to_string(),
            format!("{:.2}", l.learning_ns as f64 / 1e6),
        ]);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(dir: &std::path::Path) -> augur::Db {
        augur::Db::open(
            dir,
            augur::Options {
                background_threads: false,
                ..augur::Options::default()
            },
        )
        .unwrap()
    }

    /// Issue 15: empty levels and an all-zero learning table are left out of the text unless
    /// `all` is asked; the JSON keeps every level.
    #[test]
    fn text_shows_populated_levels_and_learning_only_after_lookups() {
        let tmp = tempfile::tempdir().unwrap();
        let db = open(tmp.path());
        let text = stats_text(&db.stats(), false);
        assert!(text.contains("no tables yet"), "{text}");
        assert!(!text.contains("lookups +"), "{text}");
        let all = stats_text(&db.stats(), true);
        assert!(
            !all.contains("no tables yet") && all.contains("lookups +"),
            "{all}"
        );

        db.put(b"k", b"v").unwrap();
        db.flush().unwrap();
        let text = stats_text(&db.stats(), false);
        assert!(!text.contains("no tables yet"), "{text}");
        assert!(!text.contains("lookups +"), "no lookups yet: {text}");
        let level_rows = |t: &str| {
            t.lines()
                .filter(|l| l.starts_with("| 0 ") || l.starts_with("│ 0 "))
                .count()
        };
        assert_eq!(level_rows(&text), 1, "only level 0 holds a file: {text}");

        assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
        let text = stats_text(&db.stats(), false);
        assert!(text.contains("lookups +"), "{text}");
        let all = stats_text(&db.stats(), true);
        assert!(
            all.lines().count() >= text.lines().count() + 12,
            "{text}\n{all}"
        );
        let json = stats_json(&db.stats());
        assert_eq!(json["levels"].as_array().map(Vec::len), Some(7), "{json}");
    }

    /// Pinned bytes per level and in total, and (direct reads, bounded open files) the page
    /// cache's and the open-file bound's counters, in the JSON and the text; without them the
    /// `reads` object keeps its shape with `null`s. On `/var/tmp` when it exists: `O_DIRECT`
    /// needs a disk file system, and `/tmp` may be tmpfs.
    #[test]
    fn cache_open_files_and_pinned_bytes_are_shown() {
        let tmp = match std::path::Path::new("/var/tmp").is_dir() {
            true => tempfile::tempdir_in("/var/tmp").unwrap(),
            false => tempfile::tempdir().unwrap(),
        };
        let db = augur::Db::open(
            tmp.path(),
            augur::Options {
                background_threads: false,
                read_mode: augur::ReadMode::Direct,
                cache_bytes: 1 << 20,
                max_open_files: Some(4),
                ..augur::Options::default()
            },
        )
        .unwrap();
        for i in 0..2000u32 {
            db.put(format!("key{i:05}").as_bytes(), [b'v'; 100])
                .unwrap();
        }
        db.flush().unwrap();
        for i in (0..2000u32).step_by(7) {
            assert!(db.get(format!("key{i:05}").as_bytes()).unwrap().is_some());
        }
        let s = db.stats();
        let j = stats_json(&s);
        let cache = &j["reads"]["cache"];
        assert_eq!(cache["capacity_bytes"], 1 << 20, "{j}");
        assert!(cache["misses"].as_u64().unwrap() > 0, "{cache}");
        assert!(cache["hits"].as_u64().unwrap() > 0, "{cache}");
        assert!(cache["device_reads"].as_u64().unwrap() > 0, "{cache}");
        assert!(cache["device_bytes"].as_u64().unwrap() > 0, "{cache}");
        assert!(cache["used_bytes"].as_u64().unwrap() > 0, "{cache}");
        let ratio = cache["hit_ratio"].as_f64().unwrap();
        assert!(ratio > 0.0 && ratio < 1.0, "{cache}");
        assert_eq!(j["reads"]["open_files"]["limit"], 4, "{j}");
        let pinned = j["pinned_bytes"].as_u64().unwrap();
        assert!(pinned > 0, "{j}");
        assert_eq!(j["levels"][0]["pinned_bytes"].as_u64(), Some(pinned), "{j}");
        let text = stats_text(&s, false);
        for part in [
            "page cache (direct reads): 1048576 B capacity",
            "hit ratio",
            "device reads",
            "open files: limit 4",
            "pinned bytes",
            &format!("{pinned} pinned bytes"),
        ] {
            assert!(text.contains(part), "{part} missing: {text}");
        }
        // Default options: no cache, no bound, the same shape.
        let plain = tempfile::tempdir().unwrap();
        let s = open(plain.path()).stats();
        let j = stats_json(&s);
        assert!(
            j["reads"]["cache"].is_null() && j["reads"]["open_files"].is_null(),
            "{j}"
        );
        let text = stats_text(&s, false);
        assert!(
            !text.contains("page cache") && !text.contains("open files"),
            "{text}"
        );
    }

    /// The chunk cache's counters: in the JSON always (mmap reads give it the whole budget),
    /// in the text once a compressed value was looked up; a second lookup of a key hits, in
    /// its value chunk and in its compressed data block.
    #[test]
    fn the_chunk_cache_is_shown_once_compressed_values_are_read() {
        let tmp = tempfile::tempdir().unwrap();
        let db = augur::Db::open(
            tmp.path(),
            augur::Options {
                background_threads: false,
                compression: augur::Compression::Lz4,
                cache_bytes: 1 << 20,
                ..augur::Options::default()
            },
        )
        .unwrap();
        for i in 0..500u32 {
            db.put(format!("key{i:05}").as_bytes(), [b'v'; 100])
                .unwrap();
        }
        db.flush().unwrap();
        let j = stats_json(&db.stats());
        assert_eq!(j["reads"]["chunk_cache"]["capacity_bytes"], 1 << 20, "{j}");
        assert_eq!(j["reads"]["chunk_cache"]["hits"], 0, "{j}");
        assert!(!stats_text(&db.stats(), false).contains("chunk cache"));
        for _ in 0..2 {
            assert!(db.get(b"key00007").unwrap().is_some());
        }
        let j = stats_json(&db.stats());
        let chunks = &j["reads"]["chunk_cache"];
        assert_eq!(
            (chunks["hits"].as_u64(), chunks["misses"].as_u64()),
            (Some(1), Some(1)),
            "{j}"
        );
        // The key's data block is stored compressed too (format 6) and cached beside its
        // value chunk.
        assert_eq!(
            (
                chunks["block_hits"].as_u64(),
                chunks["block_misses"].as_u64()
            ),
            (Some(1), Some(1)),
            "{j}"
        );
        // One entry: the compressed block, its values joined to it (two inserts).
        assert_eq!(
            (chunks["chunks"].as_u64(), chunks["inserts"].as_u64()),
            (Some(1), Some(2)),
            "{j}"
        );
        let text = stats_text(&db.stats(), false);
        assert!(
            text.contains("chunk cache (decompressed values): 1048576 B capacity")
                && text.contains("1 hits, 1 misses")
                && text.contains("chunk cache (compressed key blocks): 1 hits, 1 misses"),
            "{text}"
        );
    }

    /// The raw key and value bytes of each level, the stored bytes of its inline values and
    /// their ratio, in the JSON (per level and in total) and in the text table.
    #[test]
    fn raw_and_stored_bytes_and_the_value_ratio_are_shown() {
        for (compression, compressed) in [
            (augur::Compression::None, false),
            (augur::Compression::Lz4, true),
        ] {
            let tmp = tempfile::tempdir().unwrap();
            let db = augur::Db::open(
                tmp.path(),
                augur::Options {
                    background_threads: false,
                    compression,
                    ..augur::Options::default()
                },
            )
            .unwrap();
            for i in 0..1000u32 {
                db.put(format!("key{i:05}").as_bytes(), [b'v'; 100])
                    .unwrap();
            }
            db.flush().unwrap();
            let j = stats_json(&db.stats());
            let l0 = &j["levels"][0];
            assert_eq!(l0["raw_key_bytes"], 8000, "{l0}");
            assert_eq!(l0["raw_value_bytes"], 100_000, "{l0}");
            assert_eq!(j["raw_key_bytes"], 8000, "{j}");
            assert_eq!(j["raw_value_bytes"], 100_000, "{j}");
            assert_eq!(j["stored_value_bytes"], l0["stored_value_bytes"], "{j}");
            let ratio = l0["value_compression_ratio"].as_f64().unwrap();
            assert_eq!(j["value_compression_ratio"].as_f64(), Some(ratio));
            if compressed {
                assert!(ratio < 0.2, "{compression}: {ratio}");
            } else {
                assert!((0.99..1.1).contains(&ratio), "{compression}: {ratio}");
            }
            // Levels without files have no ratio.
            assert!(j["levels"][1]["value_compression_ratio"].is_null(), "{j}");
            let text = stats_text(&db.stats(), false);
            for column in [
                "raw key bytes",
                "raw value bytes",
                "stored value bytes",
                "value ratio",
            ] {
                assert!(text.contains(column), "{column} missing: {text}");
            }
            assert!(text.contains(&format!("value ratio {ratio:.3}")), "{text}");
            assert!(
                text.contains("8000 raw key bytes, 100000 raw value bytes"),
                "{text}"
            );
        }
    }
}
