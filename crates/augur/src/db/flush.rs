//! Flush: an immutable memtable becomes an L0 SSTable (FLSM, when L0 is empty and L1 not
//! due: fragments appended to L1's guards, `Flsm::flush_into_l1`), then its WAL is deleted.
//!
//! Order (crash safety): sync the value log (the table's pointers must outlive the WAL) →
//! write and sync the table → sync the directory → record it in the manifest together with
//! the new log number → drop the memtable → delete the WAL.

use super::DbInner;
use crate::compaction::{Compaction, Flsm, MemtableInput};
use crate::error::{Error, Result};
use crate::filename;
use crate::fs::FileSystem;
use crate::key::{SeqNo, ValueKind};
use crate::memtable::Memtable;
use crate::options::Options;
use crate::sst::{Builder, LayoutHints, ModelTime, ValueHints};
use crate::version::{FileMeta, Version, VersionEdit};
use crate::vlog::{entry_bytes, ValuePointer};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

/// Nanoseconds since `since`, saturating.
fn elapsed_ns(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// A table a flush wrote from a memtable.
pub(crate) struct FlushedTable {
    /// The table's manifest record.
    pub meta: FileMeta,
    /// What training its model cost.
    pub model_time: ModelTime,
    /// Value-log garbage per segment: the pointers the flush dropped.
    pub garbage: BTreeMap<u64, u64>,
}

impl FlushedTable {
    /// The edit that adds the table to L0 and counts the garbage.
    pub(crate) fn into_edit(self) -> VersionEdit {
        VersionEdit {
            added: vec![(0, self.meta)],
            vlog_garbage: self.garbage.into_iter().collect(),
            ..VersionEdit::default()
        }
    }
}

/// Writes the entries of `mem` to table `file_id` in `dir` and syncs it; returns the table.
/// `None` when the memtable is empty.
///
/// As a compaction does (`compaction/executor.rs`), the flush drops each entry shadowed by
/// a newer entry of its key that every reader sees (seqno at most `oldest_snapshot`), and
/// counts the value-log bytes of each dropped pointer as garbage: the pointer dies here, and
/// no compaction will ever see it (issue 40, finding 4: overwritten values never freed their
/// disk when no compaction followed the flush).
pub(crate) fn write_table_from_memtable(
    fs: &dyn FileSystem,
    dir: &Path,
    file_id: u64,
    mem: &Memtable,
    opts: &Options,
    oldest_snapshot: SeqNo,
) -> Result<Option<FlushedTable>> {
    if mem.is_empty() {
        return Ok(None);
    }
    let hints = layout_hints(mem);
    let path = filename::table_path(dir, file_id);
    let mut builder = Builder::with_hints(
        fs.create(&path)?,
        path.clone(),
        opts.builder_options(0),
        hints,
    );
    let mut garbage: BTreeMap<u64, u64> = BTreeMap::new();
    let mut current_key: Vec<u8> = Vec::new();
    // Seqno of the previous (newer) entry of the current key; MAX at a new key.
    let mut newer_seqno = SeqNo::MAX;
    mem.for_each(|key, seqno, kind, value| {
        if key != current_key.as_slice() {
            current_key.clear();
            current_key.extend_from_slice(key);
            newer_seqno = SeqNo::MAX;
        }
        let shadowed = newer_seqno <= oldest_snapshot;
        newer_seqno = seqno;
        if !shadowed {
            return builder.add(key, seqno, kind, value);
        }
        if kind == ValueKind::Pointer {
            if let Some(p) = ValuePointer::decode(value) {
                *garbage.entry(p.segment).or_default() += entry_bytes(key.len(), &p);
            }
        }
        Ok(())
    })?;
    let summary = builder.finish()?;
    fs.sync_dir(dir)?;
    let meta = FileMeta::of_table(file_id, &summary);
    Ok(Some(FlushedTable {
        meta,
        model_time: summary.model_time,
        garbage,
    }))
}

/// The exact bounds of `mem`'s entries (one pass over it), so the builder can fix the table's
/// layout after its sample and write the table block by block.
fn layout_hints(mem: &Memtable) -> LayoutHints {
    let mut last_key: Vec<u8> = Vec::new();
    let mut key_len = (usize::MAX, 0);
    let mut seqnos = (SeqNo::MAX, 0);
    let mut values = ValueHints {
        max_inline_len: None,
        pointers: false,
    };
    let walked = mem.for_each(|key, seqno, kind, value| {
        // Keys arrive in order: the last one is the largest.
        if key != last_key.as_slice() {
            last_key.clear();
            last_key.extend_from_slice(key);
        }
        key_len = (key_len.0.min(key.len()), key_len.1.max(key.len()));
        seqnos = (seqnos.0.min(seqno), seqnos.1.max(seqno));
        match kind {
            ValueKind::Value | ValueKind::ExpiringValue => {
                let len = u32::try_from(value.len()).unwrap_or(u32::MAX);
                values.max_inline_len = values.max_inline_len.max(Some(len));
            }
            ValueKind::Pointer => values.pointers = true,
            ValueKind::Delete => {}
        }
        Ok::<(), std::convert::Infallible>(())
    });
    if let Err(never) = walked {
        match never {}
    }
    if key_len.0 > key_len.1 {
        return LayoutHints::default();
    }
    LayoutHints {
        max_user_key: Some(last_key),
        key_len: Some(key_len),
        seqnos: Some(seqnos),
        values: Some(values),
    }
}

impl DbInner {
    /// Flushes the oldest immutable memtable, if any. Returns whether it did.
    pub fn flush_one(&self) -> Result<bool> {
        // One flush at a time (the flush thread, a compaction thread without one, or an
        // inline `flush_and_wait`): memtables are flushed oldest first.
        let _flushing = self.work.flush_turn();
        if self.work.flushes_held() {
            return Ok(false);
        }
        let Some((mem, wal_number, next_log)) = self.writes.oldest_immutable() else {
            return Ok(false);
        };
        self.vlog.sync()?;
        let started = std::time::Instant::now();
        let version = self.versions.current();
        let into_l1 = if Flsm::flush_into_l1(&version, &self.opts) {
            match self.flush_into_l1(&mem, &version, started) {
                Ok(edit) => Some(edit),
                // The live-table limit refused the fragments (their files are removed):
                // one L0 table instead, as every flush did before.
                Err(Error::ResourceLimit(why)) => {
                    log::warn!("flush into L1 refused, flushing to L0: {why}");
                    None
                }
                Err(e) => return Err(e),
            }
        } else {
            None
        };
        let mut edit = if let Some(edit) = into_l1 {
            edit
        } else {
            let file_id = self.versions.new_file_number();
            let fs = self.opts.fs.as_ref();
            let oldest_snapshot = self.oldest_readable_seqno();
            let table = write_table_from_memtable(
                fs,
                &self.dir,
                file_id,
                &mem,
                &self.opts,
                oldest_snapshot,
            )?;
            match table {
                Some(t) => {
                    self.counters
                        .note_flush(t.meta.file_size, elapsed_ns(started), t.model_time);
                    t.into_edit()
                }
                None => VersionEdit::default(),
            }
        };
        edit.log_number = Some(next_log);
        edit.last_seqno = Some(mem.max_seqno());
        self.log_and_apply(edit)?;
        if let Some(held) = self.writes.release_flushed(&mem) {
            // The most the memtables hold is reached just before one is released.
            self.counters.note_memtable_bytes(held);
        }
        let wal = filename::wal_path(&self.dir, wal_number);
        if let Err(e) = self.opts.fs.remove(&wal) {
            log::warn!("could not delete flushed WAL {}: {e}", wal.display());
        }
        Ok(true)
    }

    /// FLSM: writes `mem` as fragments appended to L1's guards (a compaction of the memtable
    /// alone: cut at L1's guards, new guards committed, what no reader can see dropped).
    /// Returns the edit, which the caller completes with the log number.
    fn flush_into_l1(
        &self,
        mem: &Arc<Memtable>,
        version: &Version,
        started: Instant,
    ) -> Result<VersionEdit> {
        let c = Compaction {
            level: 0,
            inputs: Vec::new(),
            next_inputs: Vec::new(),
            output_level: 1,
            allow_trivial_move: false,
            memtable: Some(MemtableInput {
                mem: mem.clone(),
                hints: layout_hints(mem),
            }),
        };
        let outcome = self.execute_compaction(&c, version, &Default::default())?;
        self.counters.note_flush(
            outcome.bytes_written,
            elapsed_ns(started),
            outcome.model_time,
        );
        Ok(outcome.edit)
    }

    /// Makes the active memtable immutable (if it has data) and waits until every immutable
    /// memtable is flushed.
    pub fn flush_and_wait(&self) -> Result<()> {
        self.check_writable()?;
        self.switch_memtable_in_turn()?;
        loop {
            self.check_writable()?;
            if !self.writes.has_immutable() {
                return Ok(());
            }
            if self.background_threads() {
                self.request_background_work();
                self.wait_for_background_progress();
            } else {
                let _w = self.work.unit_turn();
                self.flush_one().inspect_err(|e| self.poison(e))?;
            }
        }
    }

    /// Waits until no background work is due: every immutable memtable is written, the
    /// compaction strategy picks nothing, and no value-log GC is running or due (the
    /// database has settled after a burst of writes); and until the unit of background
    /// work in flight has returned, so the tables its compaction replaced are deleted
    /// unless a reader still holds them. Does not switch the active memtable.
    pub fn wait_for_compactions(&self) -> Result<()> {
        if self.opts.read_only {
            // No background work ever runs in a read-only database.
            return Ok(());
        }
        loop {
            self.check_writable()?;
            if !self.background_work_due() {
                // A compaction that just installed its outputs leaves nothing due while its
                // thread (at a lower priority, `compaction_nice`) still holds the version
                // with its inputs: wait for the unit to return, then look again.
                drop(self.work.unit_turn());
                if !self.background_work_due() {
                    return Ok(());
                }
            }
            if self.background_threads() {
                self.request_background_work();
                self.wait_for_background_progress();
            } else {
                self.run_pending_work_inline()?;
            }
        }
    }

    /// Whether a flush, a compaction or automatic value-log GC is due.
    fn background_work_due(&self) -> bool {
        let flush_due = self.writes.has_immutable();
        let version = self.versions.current();
        let compaction_due = matches!(
            self.work.strategy().choose(&version, &self.opts),
            crate::compaction::Choice::Merge(_)
        );
        flush_due || compaction_due || self.automatic_gc_candidate().is_some()
    }
}
