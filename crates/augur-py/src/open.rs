//! `augur.open()`: every engine option of the CLI as a keyword argument with the CLI's name
//! and the engine's default. The defaults are stated in one place, `augur::Options::default()`:
//! `augur._engine_defaults()` derives each keyword's from it, and [`register`] builds
//! `open()`'s signature from those (a thin Python function over [`open`], whose keywords
//! have no defaults of their own). The type stub `augur.pyi` repeats them, as stubs must;
//! a test checks it against the signature.

use crate::db::Db;
use crate::errors;
use crate::handle::Handle;
use crate::options::{choice, choice_name, finite, level_bounds, model_budget, unsigned, validate};
use augur_frontend::engine_args::{
    CompactionArg, EngineArgs, IndexArg, LearningArg, ReadModeArg, RmiRootArg,
};
use clap::{Args, ValueEnum};
use pyo3::exceptions::PyRuntimeWarning;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyModule};
use pyo3::IntoPyObjectExt;
use std::path::PathBuf;

/// Opens (by default creating) the Augur database in the directory `path`.
///
/// The keyword arguments are the engine options of the `augur` CLI, with the same names
/// (underscores for dashes) and the engine's defaults; see the README's CLI section for
/// each one. A bad value raises `InvalidArgumentError` (a `ValueError`) naming the option.
/// `create=False` refuses to create a missing database. `read_only=True` opens for reading
/// only: the open writes nothing to the directory and takes no lock, so it works beside a
/// process that has the database open for writing, and it sees the database as of the open
/// (the write-ahead log is replayed into memory, not flushed); writes raise `ReadOnlyError`,
/// and it never creates. `compaction=None` (the default) takes the style the database was
/// created with, and creates a new one leveled; a style that conflicts with an existing
/// database's raises.
/// `error_bound_per_level` takes a dict `{level: bound}` or the CLI's `"L0:4,L1:16"`.
///
/// Raises `BusyError` when another process or handle has the database open and
/// `CorruptionError` when a file is damaged. Each write-ahead log loss that
/// `accept_wal_loss=True` let through is reported as a `RuntimeWarning`.
// Every keyword is required here: `augur.open`, built by `register`, fills in the defaults.
#[pyfunction]
#[pyo3(name = "open", signature = (
    path,
    *,
    create,
    read_only,
    value_separation_threshold,
    memtable_mb,
    read_mode,
    cache_mb,
    max_open_files,
    bloom_bits,
    compression,
    no_compress_keys,
    slot_head_bytes,
    no_block_prefixes,
    target_file_mb,
    static_level_sizes,
    max_subcompactions,
    delayed_write_mb,
    max_immutable_memtables,
    compaction_nice,
    level0_file_num_compaction_trigger,
    level0_slowdown_writes_trigger,
    level0_stop_writes_trigger,
    index,
    compaction,
    flsm_top_level_bits,
    flsm_bit_decrement,
    max_sstables_per_guard,
    flsm_level_size_runs,
    seek_compaction_threshold,
    parallel_seek_threads,
    learning,
    learning_wait_ms,
    lazy_learning_reads,
    lazy_learning_reads_per_key,
    error_bound,
    error_bound_per_level,
    model_memory_budget,
    pgm_recursive_error,
    radix_bits,
    rmi_leaves,
    rmi_root,
    fiting_fanout,
    string_run_limit,
    value_log_gc_ratio,
    no_level_merge,
    level_merge_threshold,
    level_models,
    accept_wal_loss,
    scan_readahead,
    scan_fetch_threads,
))]
#[allow(clippy::too_many_arguments)] // One keyword argument per CLI option, as the CLI has.
#[allow(clippy::fn_params_excessive_bools)]
#[allow(clippy::needless_update)] // See `..EngineArgs::default()` below.
pub(crate) fn open(
    py: Python<'_>,
    path: PathBuf,
    create: bool,
    read_only: bool,
    value_separation_threshold: i64,
    memtable_mb: i64,
    read_mode: &str,
    cache_mb: i64,
    max_open_files: Option<i64>,
    bloom_bits: i64,
    compression: &str,
    no_compress_keys: bool,
    slot_head_bytes: Option<i64>,
    no_block_prefixes: bool,
    target_file_mb: i64,
    static_level_sizes: bool,
    max_subcompactions: Option<i64>,
    delayed_write_mb: i64,
    max_immutable_memtables: i64,
    compaction_nice: i64,
    level0_file_num_compaction_trigger: i64,
    level0_slowdown_writes_trigger: i64,
    level0_stop_writes_trigger: i64,
    index: &str,
    compaction: Option<&str>,
    flsm_top_level_bits: i64,
    flsm_bit_decrement: i64,
    max_sstables_per_guard: i64,
    flsm_level_size_runs: i64,
    seek_compaction_threshold: i64,
    parallel_seek_threads: i64,
    learning: &str,
    learning_wait_ms: i64,
    lazy_learning_reads: i64,
    lazy_learning_reads_per_key: f64,
    error_bound: i64,
    error_bound_per_level: Option<&Bound<'_, PyAny>>,
    model_memory_budget: &str,
    pgm_recursive_error: i64,
    radix_bits: i64,
    rmi_leaves: i64,
    rmi_root: &str,
    fiting_fanout: i64,
    string_run_limit: i64,
    value_log_gc_ratio: f64,
    no_level_merge: bool,
    level_merge_threshold: f64,
    level_models: bool,
    accept_wal_loss: bool,
    scan_readahead: i64,
    scan_fetch_threads: i64,
) -> PyResult<Db> {
    let args = EngineArgs {
        value_separation_threshold: Some(unsigned(
            "value_separation_threshold",
            value_separation_threshold,
        )?),
        memtable_mb: Some(unsigned("memtable_mb", memtable_mb)?),
        read_mode: Some(choice::<ReadModeArg>("read_mode", read_mode)?),
        cache_mb: Some(unsigned("cache_mb", cache_mb)?),
        max_open_files: max_open_files
            .map(|n| unsigned("max_open_files", n))
            .transpose()?,
        bloom_bits: Some(unsigned("bloom_bits", bloom_bits)?),
        compression: Some(
            augur::Compression::parse(compression)
                .map_err(|e| errors::invalid_argument(format!("compression: {e}")))?,
        ),
        no_compress_keys,
        slot_head_bytes: slot_head_bytes
            .map(|h| unsigned("slot_head_bytes", h))
            .transpose()?,
        no_block_prefixes,
        target_file_mb: Some(unsigned("target_file_mb", target_file_mb)?),
        static_level_sizes,
        max_subcompactions: max_subcompactions
            .map(|n| unsigned("max_subcompactions", n))
            .transpose()?,
        delayed_write_mb: Some(unsigned("delayed_write_mb", delayed_write_mb)?),
        max_immutable_memtables: Some(unsigned(
            "max_immutable_memtables",
            max_immutable_memtables,
        )?),
        // Range (0..=19) checked by the engine, whose message names the keyword.
        compaction_nice: Some(unsigned("compaction_nice", compaction_nice)?),
        level0_file_num_compaction_trigger: Some(unsigned(
            "level0_file_num_compaction_trigger",
            level0_file_num_compaction_trigger,
        )?),
        level0_slowdown_writes_trigger: Some(unsigned(
            "level0_slowdown_writes_trigger",
            level0_slowdown_writes_trigger,
        )?),
        level0_stop_writes_trigger: Some(unsigned(
            "level0_stop_writes_trigger",
            level0_stop_writes_trigger,
        )?),
        index: Some(choice::<IndexArg>("index", index)?),
        compaction: compaction
            .map(|c| choice::<CompactionArg>("compaction", c))
            .transpose()?,
        flsm_top_level_bits: Some(unsigned("flsm_top_level_bits", flsm_top_level_bits)?),
        flsm_bit_decrement: Some(unsigned("flsm_bit_decrement", flsm_bit_decrement)?),
        max_sstables_per_guard: Some(unsigned("max_sstables_per_guard", max_sstables_per_guard)?),
        flsm_level_size_runs: Some(unsigned("flsm_level_size_runs", flsm_level_size_runs)?),
        seek_compaction_threshold: Some(unsigned(
            "seek_compaction_threshold",
            seek_compaction_threshold,
        )?),
        parallel_seek_threads: Some(unsigned("parallel_seek_threads", parallel_seek_threads)?),
        learning: Some(choice::<LearningArg>("learning", learning)?),
        learning_wait_ms: Some(unsigned("learning_wait_ms", learning_wait_ms)?),
        lazy_learning_reads: Some(unsigned("lazy_learning_reads", lazy_learning_reads)?),
        lazy_learning_reads_per_key: Some(finite(
            "lazy_learning_reads_per_key",
            lazy_learning_reads_per_key,
        )?),
        error_bound: Some(unsigned("error_bound", error_bound)?),
        error_bound_per_level: error_bound_per_level.map(level_bounds).transpose()?,
        model_memory_budget: Some(model_budget(model_memory_budget)?),
        pgm_recursive_error: Some(unsigned("pgm_recursive_error", pgm_recursive_error)?),
        radix_bits: Some(unsigned("radix_bits", radix_bits)?),
        rmi_leaves: Some(unsigned("rmi_leaves", rmi_leaves)?),
        rmi_root: Some(choice::<RmiRootArg>("rmi_root", rmi_root)?),
        fiting_fanout: Some(unsigned("fiting_fanout", fiting_fanout)?),
        string_run_limit: Some(unsigned("string_run_limit", string_run_limit)?),
        value_log_gc_ratio: Some(finite("value_log_gc_ratio", value_log_gc_ratio)?),
        no_level_merge,
        level_merge_threshold: Some(finite("level_merge_threshold", level_merge_threshold)?),
        level_models,
        accept_wal_loss,
        scan_readahead: Some(unsigned("scan_readahead", scan_readahead)?),
        scan_fetch_threads: Some(unsigned("scan_fetch_threads", scan_fetch_threads)?),
        no_create: !create || read_only,
        read_only,
        // A CLI option added later keeps the engine default here until it gets its keyword;
        // meanwhile `_engine_defaults()` names it, and so the module refuses to load (its
        // signature is built from `_engine_defaults()`).
        ..EngineArgs::default()
    };
    validate(&args)?;
    // Opening replays the write-ahead log and reads the manifest: no GIL meanwhile.
    let db = py
        .detach(|| args.open(&path, true))
        .map_err(errors::to_py)?;
    for loss in db.wal_losses() {
        let message = format!("accept_wal_loss: {loss}; its unflushed writes were dropped");
        let category = py.get_type::<PyRuntimeWarning>();
        PyErr::warn(py, &category, &std::ffi::CString::new(message)?, 1)?;
    }
    Ok(Db::new(Handle::new(db, read_only, &path)))
}

/// The engine's default of each `open()` keyword, from `augur::Options::default()`, keyed by
/// the CLI's option names (`no_create` appears as `create`). A test compares it with
/// `open()`'s signature, so a new CLI option or a changed engine default cannot go unnoticed.
///
/// # Errors
/// `RuntimeError` naming a CLI option this function does not know.
#[pyfunction]
#[pyo3(name = "_engine_defaults")]
pub(crate) fn engine_defaults(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let o = augur::Options::default();
    let name = |n: Option<String>| n.unwrap_or_default();
    let of = |arg: &str| -> PyResult<Py<PyAny>> {
        const MIB: u64 = 1 << 20;
        let value = match arg {
            "value_separation_threshold" => o.value_separation_threshold.into_py_any(py)?,
            "memtable_mb" => (o.memtable_size_bytes as u64 / MIB).into_py_any(py)?,
            "read_mode" => {
                name(variant(|v: &ReadModeArg| v.to_engine() == o.read_mode)).into_py_any(py)?
            }
            "cache_mb" => (o.cache_bytes / MIB).into_py_any(py)?,
            "max_open_files" => match o.max_open_files {
                None => py.None(),
                Some(n) => n.into_py_any(py)?,
            },
            "bloom_bits" => o.bloom_bits_per_key.into_py_any(py)?,
            "compression" => o.compression.to_string().into_py_any(py)?,
            "no_compress_keys" => (!o.compress_keys).into_py_any(py)?,
            "slot_head_bytes" => match o.slot_head_bytes {
                None => py.None(),
                Some(h) => h.into_py_any(py)?,
            },
            "no_block_prefixes" => (!o.block_prefixes).into_py_any(py)?,
            "target_file_mb" => (o.target_file_size_bytes / MIB).into_py_any(py)?,
            "static_level_sizes" => (!o.dynamic_level_bytes).into_py_any(py)?,
            // The engine's default depends on the machine (its cores): None keeps it.
            "max_subcompactions" => py.None(),
            "delayed_write_mb" => (o.delayed_write_rate / MIB).into_py_any(py)?,
            "max_immutable_memtables" => o.max_immutable_memtables.into_py_any(py)?,
            "compaction_nice" => o.compaction_nice.into_py_any(py)?,
            "level0_file_num_compaction_trigger" => o.l0_compaction_trigger.into_py_any(py)?,
            "level0_slowdown_writes_trigger" => o.l0_slowdown_trigger.into_py_any(py)?,
            "level0_stop_writes_trigger" => o.l0_stop_trigger.into_py_any(py)?,
            "index" => {
                let kind = if o.auto_index {
                    Some(IndexArg::Auto)
                } else {
                    // `Auto` maps to the default kind too; name the kind itself.
                    IndexArg::value_variants()
                        .iter()
                        .copied()
                        .find(|v| *v != IndexArg::Auto && v.to_engine() == o.index)
                };
                name(kind.as_ref().and_then(choice_name)).into_py_any(py)?
            }
            "model_memory_budget" => o.model_memory_budget.to_string().into_py_any(py)?,
            "compaction" => match o.compaction {
                None => py.None(),
                Some(style) => {
                    name(variant(|v: &CompactionArg| v.to_engine() == style)).into_py_any(py)?
                }
            },
            "flsm_top_level_bits" => o.flsm.top_level_bits.into_py_any(py)?,
            "flsm_bit_decrement" => o.flsm.bit_decrement.into_py_any(py)?,
            "max_sstables_per_guard" => o.flsm.max_sstables_per_guard.into_py_any(py)?,
            "flsm_level_size_runs" => o.flsm.level_size_runs.into_py_any(py)?,
            "seek_compaction_threshold" => o.flsm.seek_compaction_threshold.into_py_any(py)?,
            "parallel_seek_threads" => o.flsm.parallel_seek_threads.into_py_any(py)?,
            "learning" => {
                name(variant(|v: &LearningArg| v.to_engine() == o.learning)).into_py_any(py)?
            }
            "learning_wait_ms" => o.learning_wait_ms.into_py_any(py)?,
            "lazy_learning_reads" => o.lazy_learning_reads.into_py_any(py)?,
            "lazy_learning_reads_per_key" => o.lazy_learning_reads_per_key.into_py_any(py)?,
            "error_bound" => o.error_bound.into_py_any(py)?,
            "error_bound_per_level" => {
                if o.error_bound_per_level.is_empty() {
                    py.None()
                } else {
                    o.error_bound_per_level.clone().into_py_any(py)?
                }
            }
            "pgm_recursive_error" => o.index_tuning.pgm_recursive_error.into_py_any(py)?,
            "radix_bits" => o.index_tuning.radix_bits.into_py_any(py)?,
            "rmi_leaves" => o.index_tuning.rmi_leaves.into_py_any(py)?,
            "rmi_root" => name(variant(|v: &RmiRootArg| {
                v.to_engine() == o.index_tuning.rmi_root
            }))
            .into_py_any(py)?,
            "fiting_fanout" => o.index_tuning.fiting_fanout.into_py_any(py)?,
            "string_run_limit" => o.index_tuning.string_run_limit.into_py_any(py)?,
            "value_log_gc_ratio" => o.value_log_gc_ratio.into_py_any(py)?,
            "no_level_merge" => (!o.level_merge).into_py_any(py)?,
            "level_merge_threshold" => o.level_merge_threshold.into_py_any(py)?,
            "level_models" => o.level_models.into_py_any(py)?,
            "accept_wal_loss" => o.accept_wal_loss.into_py_any(py)?,
            "read_only" => o.read_only.into_py_any(py)?,
            "scan_readahead" => o.scan_readahead.into_py_any(py)?,
            "scan_fetch_threads" => o.scan_fetch_threads.into_py_any(py)?,
            "no_create" => (!o.create_if_missing).into_py_any(py)?,
            other => {
                return Err(pyo3::exceptions::PyRuntimeError::new_err(format!(
                    "the CLI option {other:?} has no open() keyword: add it to open() and \
                     engine_defaults() in crates/augur-py/src/open.rs and to augur.pyi"
                )))
            }
        };
        Ok(value)
    };
    let out = PyDict::new(py);
    let cli = EngineArgs::augment_args(clap::Command::new("augur"));
    for arg in cli.get_arguments() {
        let id = arg.get_id().as_str();
        if id == "no_create" {
            out.set_item("create", !of(id)?.extract::<bool>(py)?)?;
        } else {
            out.set_item(id, of(id)?)?;
        }
    }
    Ok(out)
}

/// The name of the first variant of `T` that `pick` accepts.
fn variant<T: ValueEnum>(pick: impl Fn(&T) -> bool) -> Option<String> {
    T::value_variants()
        .iter()
        .find(|v| pick(v))
        .and_then(choice_name)
}

/// Python source of `with_engine_defaults(f, defaults)`: `f` (the compiled `open`, every
/// keyword required) as a function whose signature gives each keyword its default from
/// `defaults` (`_engine_defaults()`), `create` and `read_only` first; `f` stays reachable as
/// its `__wrapped__`, so a test can check that both take the same keywords.
const WITH_DEFAULTS: &std::ffi::CStr = c"
import inspect

def with_engine_defaults(f, defaults):
    first = ['create', 'read_only']
    names = first + [n for n in defaults if n not in first]
    keyword = inspect.Parameter.KEYWORD_ONLY
    signature = inspect.Signature(
        [inspect.Parameter('path', inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        + [inspect.Parameter(n, keyword, default=defaults[n]) for n in names]
    )

    def open(*args, **kwargs):
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f'open() {e}') from None
        bound.apply_defaults()
        return f(**bound.arguments)

    open.__signature__ = signature
    open.__wrapped__ = f
    open.__doc__ = f.__doc__
    open.__module__ = 'augur'
    open.__qualname__ = 'open'
    return open
";

/// Adds `open` (with its defaults from [`engine_defaults`]) and `_engine_defaults` to `m`.
///
/// # Errors
/// As `engine_defaults`, or when the signature cannot be built.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    let helper = PyModule::from_code(py, WITH_DEFAULTS, c"augur/open.py", c"augur._open")?;
    let compiled = wrap_pyfunction!(open, m)?;
    let open = helper
        .getattr("with_engine_defaults")?
        .call1((compiled, engine_defaults(py)?))?;
    m.add("open", open)?;
    m.add_function(wrap_pyfunction!(engine_defaults, m)?)?;
    Ok(())
}
