//! The `augur` Python module: PyO3 bindings of the Augur key-value store, built into an
//! abi3 wheel (CPython 3.9 and later) by maturin.
//!
//! `augur.open()` (`open.rs`, options in `options.rs`) returns a `Db` (`db.rs`) whose reads
//! it shares with `Snapshot` (`view.rs`, `snapshot.rs`); range reads are lazy, batched
//! iterators (`iter.rs`), writes go one by one or through a `WriteBatch` (`batch.rs`). What
//! a database and its snapshots and iterators share, and how `close()` ends them all, is in
//! `handle.rs`; why none of them works in a forked child is in `fork.rs`. Keys and values
//! arrive through `bytes.rs`; engine errors become the exceptions of `errors.rs`;
//! `db.stats()` reuses the JSON rendering of `augur stats --json` (`augur_frontend::stats_view`,
//! converted in `convert.rs`).
//!
//! Checkpoints and backups (`db.checkpoint`, `db.backup`, `augur.list_backups` and the other
//! backup functions) are in `backup.rs`.
//!
//! Every engine call that can block (I/O, locks, batches, scans) runs with the GIL
//! released, so other Python threads keep running meanwhile.
#![deny(unsafe_code)]

mod backup;
mod batch;
mod bytes;
mod convert;
mod db;
mod errors;
mod fork;
mod handle;
mod iter;
mod open;
mod options;
mod snapshot;
mod view;

use pyo3::prelude::*;

/// mimalloc for the engine's allocations inside the extension (Python's own objects still
/// come from its allocator), as the CLI does: with glibc malloc, consolidating the freed
/// nodes of flushed memtables took a visible share of a put-heavy run.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Augur: an embedded LSM key-value store with learned indexes. Open a database with
/// `augur.open(path)`; keys and values are bytes.
#[pymodule]
#[pyo3(name = "augur")]
fn augur_py(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(m)?;
    fork::register(m)?;
    open::register(m)?;
    backup::register(m)?;
    m.add_function(wrap_pyfunction!(errors::raise_engine_error, m)?)?;
    m.add_class::<db::Db>()?;
    m.add_class::<snapshot::Snapshot>()?;
    m.add_class::<batch::WriteBatch>()?;
    m.add_class::<iter::RangeIter>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
