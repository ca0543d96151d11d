//! Flush: an immutable memtable becomes an L0 SSTable, then its WAL is deleted.
//!
//! Order (crash safety): sync the value log (the table's pointers must outlive the WAL) →
//! write and sync the table → sync the directory → record it in the manifest together with
//! the new log number → drop the memtable → delete the WAL.

use super::DbInner;
use crate::error::Result;
use crate::filename;
use crate::fs::FileSystem;
use crate::memtable::Memtable;
use crate::options::Options;
use crate::sst::{Builder, ModelTime};
use crate::version::{FileMeta, VersionEdit};
use std::path::Path;

/// Writes the entries of `mem` to table `file_id` in `dir` and syncs it; returns its metadata
/// and what training its model cost. `None` when the memtable is empty.
pub(crate) fn write_table_from_memtable(
    fs: &dyn FileSystem,
    dir: &Path,
    file_id: u64,
    mem: &Memtable,
    opts: &Options,
) -> Result<Option<(FileMeta, ModelTime)>> {
    if mem.is_empty() {
        return Ok(None);
    }
    let path = filename::table_path(dir, file_id);
    let mut builder = Builder::new(fs.create(&path)?, path.clone(), opts.builder_options(0));
    mem.for_each(|key, seqno, kind, value| builder.add(key, seqno, kind, value))?;
    let summary = builder.finish()?;
    fs.sync_dir(dir)?;
    let meta = FileMeta {
        file_id,
        file_size: summary.file_size,
        entries: summary.entries,
        smallest: summary.smallest,
        largest: summary.largest,
    };
    Ok(Some((meta, summary.model_time)))
}

impl DbInner {
    /// Flushes the oldest immutable memtable, if any. Returns whether it did.
    pub fn flush_one(&self) -> Result<bool> {
        #[cfg(feature = "test-util")]
        if self.flushes_held.load(std::sync::atomic::Ordering::Acquire) {
            return Ok(false);
        }
        let (mem, wal_number, next_log) = {
            let m = self.mem.lock();
            let Some((mem, wal_number)) = m.imm.first() else {
                return Ok(false);
            };
            let next_log = m.imm.get(1).map_or(m.wal_number, |(_, n)| *n);
            (mem.clone(), *wal_number, next_log)
        };
        self.vlog.sync()?;
        let file_id = self.versions.new_file_number();
        let started = std::time::Instant::now();
        let meta =
            write_table_from_memtable(self.opts.fs.as_ref(), &self.dir, file_id, &mem, &self.opts)?;
        if let Some((m, model_time)) = &meta {
            let ns = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
            self.counters.note_flush(m.file_size, ns, *model_time);
        }
        let edit = VersionEdit {
            log_number: Some(next_log),
            last_seqno: Some(mem.max_seqno()),
            added: meta.into_iter().map(|(m, _)| (0, m)).collect(),
            ..VersionEdit::default()
        };
        self.versions.log_and_apply(edit)?;
        {
            let mut m = self.mem.lock();
            if m.imm
                .first()
                .is_some_and(|(first, _)| std::sync::Arc::ptr_eq(first, &mem))
            {
                m.imm.remove(0);
                m.refresh();
            }
        }
        let wal = filename::wal_path(&self.dir, wal_number);
        if let Err(e) = self.opts.fs.remove(&wal) {
            log::warn!("could not delete flushed WAL {}: {e}", wal.display());
        }
        Ok(true)
    }

    /// Makes the active memtable immutable (if it has data) and waits until every immutable
    /// memtable is flushed.
    pub fn flush_and_wait(&self) -> Result<()> {
        self.check_writable()?;
        self.switch_memtable_in_turn()?;
        loop {
            self.check_writable()?;
            if self.mem.lock().imm.is_empty() {
                return Ok(());
            }
            if self.opts.background_threads {
                self.request_background_work();
                self.wait_for_background_progress();
            } else {
                let _w = self.bg_work.lock();
                self.flush_one().inspect_err(|e| self.poison(e))?;
            }
        }
    }

    /// Waits until no background work is due: every immutable memtable is written, the
    /// compaction strategy picks nothing, and no value-log GC is running or due (the
    /// database has settled after a burst of writes). Does not switch the active memtable.
    pub fn wait_for_compactions(&self) -> Result<()> {
        if self.opts.read_only {
            // No background work ever runs in a read-only database.
            return Ok(());
        }
        let gc_ratio = self.opts.value_log_gc_ratio;
        loop {
            self.check_writable()?;
            let flush_due = !self.mem.lock().imm.is_empty();
            let version = self.versions.current();
            let compaction_due = matches!(
                self.strategy.choose(&version, &self.opts),
                crate::compaction::Choice::Merge(_)
            );
            let gc_due = gc_ratio < 1.0
                && (self.gc_running.load(std::sync::atomic::Ordering::Acquire)
                    || self.worst_segment(gc_ratio, false).is_some());
            if !flush_due && !compaction_due && !gc_due {
                return Ok(());
            }
            if self.opts.background_threads {
                self.request_background_work();
                self.wait_for_background_progress();
            } else {
                self.run_pending_work_inline(true)?;
            }
        }
    }
}
