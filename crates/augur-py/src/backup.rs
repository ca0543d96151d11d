//! Checkpoints and backups from Python: `db.checkpoint(path)` and `db.backup(backup_dir)`
//! (methods of `Db`, in `db.rs`, built from the helpers here), and the module functions
//! `augur.list_backups`, `augur.verify_backup`, `augur.restore_backup` and
//! `augur.purge_backups` over a backup directory (`augur::backup::BackupEngine`). Results
//! are dicts with the keys of the CLI's `--json` output (`augur checkpoint`, `augur backup`).

use crate::errors;
use augur::backup::{BackupEngine, BackupInfo};
use augur::{CheckpointInfo, CheckpointOptions};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use std::path::PathBuf;

/// `db.checkpoint(path, copy=...)` on the engine database `db`, the GIL released.
pub(crate) fn checkpoint(
    py: Python<'_>,
    db: &augur::Db,
    path: PathBuf,
    copy: bool,
) -> PyResult<Py<PyAny>> {
    let options = CheckpointOptions { link_files: !copy };
    let info: CheckpointInfo = py
        .detach(|| db.checkpoint_with(&path, &options))
        .map_err(errors::to_py)?;
    let d = PyDict::new(py);
    d.set_item("dir", info.dir.to_string_lossy().into_owned())?;
    d.set_item("seqno", info.seqno)?;
    d.set_item("linked_files", info.linked_files)?;
    d.set_item("linked_bytes", info.linked_bytes)?;
    d.set_item("copied_files", info.copied_files)?;
    d.set_item("written_bytes", info.written_bytes)?;
    Ok(d.into_any().unbind())
}

/// `db.backup(backup_dir)` on the engine database `db`, the GIL released.
pub(crate) fn backup(py: Python<'_>, db: &augur::Db, dir: PathBuf) -> PyResult<Py<PyAny>> {
    let made = py
        .detach(|| BackupEngine::open(&dir)?.create(db))
        .map_err(errors::to_py)?;
    let d = info_dict(py, &made.info)?;
    d.set_item("new_files", made.new_files)?;
    d.set_item("new_bytes", made.new_bytes)?;
    d.set_item("reused_files", made.reused_files)?;
    Ok(d.into_any().unbind())
}

fn info_dict<'py>(py: Python<'py>, b: &BackupInfo) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("id", b.id)?;
    d.set_item("created_unix_ms", b.created_unix_ms)?;
    d.set_item("seqno", b.seqno)?;
    d.set_item("files", b.files)?;
    d.set_item("size_bytes", b.size_bytes)?;
    d.set_item("shared_bytes", b.shared_bytes)?;
    Ok(d)
}

/// The backups in `backup_dir`, oldest first: a list of dicts with `id`,
/// `created_unix_ms`, `seqno`, `files`, `size_bytes` and `shared_bytes` (bytes stored once
/// for this backup and another). Raises `CorruptionError` for damaged backup metadata.
#[pyfunction]
fn list_backups(py: Python<'_>, backup_dir: PathBuf) -> PyResult<Py<PyAny>> {
    let list = py
        .detach(|| BackupEngine::open(&backup_dir)?.list())
        .map_err(errors::to_py)?;
    let out = PyList::empty(py);
    for b in &list {
        out.append(info_dict(py, b)?)?;
    }
    Ok(out.into_any().unbind())
}

/// Reads every file of backup `id` in `backup_dir` and checks its size and CRC32C. Returns
/// a dict with `id`, `ok`, `files_checked`, `bytes_checked` and `problems` (a list of
/// dicts with `file`, `path` and `problem`); damage is reported there, not raised.
#[pyfunction]
fn verify_backup(py: Python<'_>, backup_dir: PathBuf, id: u64) -> PyResult<Py<PyAny>> {
    let report = py
        .detach(|| BackupEngine::open(&backup_dir)?.verify(id))
        .map_err(errors::to_py)?;
    let d = PyDict::new(py);
    d.set_item("id", report.id)?;
    d.set_item("ok", report.is_ok())?;
    d.set_item("files_checked", report.files_checked)?;
    d.set_item("bytes_checked", report.bytes_checked)?;
    let problems = PyList::empty(py);
    for p in &report.problems {
        let pd = PyDict::new(py);
        pd.set_item("file", &p.file)?;
        pd.set_item("path", p.path.to_string_lossy().into_owned())?;
        pd.set_item("problem", &p.what)?;
        problems.append(pd)?;
    }
    d.set_item("problems", problems)?;
    Ok(d.into_any().unbind())
}

/// Restores backup `id` of `backup_dir` into `target` (missing, or an empty directory):
/// an ordinary database holding exactly the backed-up writes, to open with `augur.open`.
/// Returns a dict with `id`, `dir`, `seqno`, `files` and `bytes`. Raises
/// `CorruptionError` when a file of the backup is missing or damaged (nothing is left at
/// `target` then).
#[pyfunction]
fn restore_backup(
    py: Python<'_>,
    backup_dir: PathBuf,
    id: u64,
    target: PathBuf,
) -> PyResult<Py<PyAny>> {
    let r = py
        .detach(|| BackupEngine::open(&backup_dir)?.restore(id, &target))
        .map_err(errors::to_py)?;
    let d = PyDict::new(py);
    d.set_item("id", r.id)?;
    d.set_item("dir", r.dir.to_string_lossy().into_owned())?;
    d.set_item("seqno", r.seqno)?;
    d.set_item("files", r.files)?;
    d.set_item("bytes", r.bytes)?;
    Ok(d.into_any().unbind())
}

/// Deletes every backup of `backup_dir` but the newest `keep`, and every file no remaining
/// backup holds. Returns a dict with `deleted` (ids), `files_removed` and `bytes_removed`.
#[pyfunction]
fn purge_backups(py: Python<'_>, backup_dir: PathBuf, keep: usize) -> PyResult<Py<PyAny>> {
    let r = py
        .detach(|| BackupEngine::open(&backup_dir)?.purge(keep))
        .map_err(errors::to_py)?;
    let d = PyDict::new(py);
    d.set_item("deleted", r.deleted)?;
    d.set_item("files_removed", r.files_removed)?;
    d.set_item("bytes_removed", r.bytes_removed)?;
    Ok(d.into_any().unbind())
}

/// Adds the module functions.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(list_backups, m)?)?;
    m.add_function(wrap_pyfunction!(verify_backup, m)?)?;
    m.add_function(wrap_pyfunction!(restore_backup, m)?)?;
    m.add_function(wrap_pyfunction!(purge_backups, m)?)?;
    Ok(())
}
