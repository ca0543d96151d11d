//! `open()`'s keyword arguments turned into engine options, through the [`EngineArgs`] the
//! front ends share (`augur_frontend::engine_args`, the CLI's global flags), so Python and
//! the CLI accept the same names, the same values and the same defaults.
//!
//! Every bad value raises `InvalidArgumentError` (a `ValueError`) whose message starts with
//! the keyword's name: values are checked here (choices, signs), then by the engine's
//! `Options::validate`, whose message names the engine field; [`KEYWORD_OF_FIELD`] maps
//! that field back to the keyword, which the message then starts with (the engine's
//! message follows, in the engine's units).

use crate::errors;
use augur::index::chooser::ModelBudget;
use augur_frontend::engine_args::{parse_level_bounds, parse_model_budget, EngineArgs};
use clap::ValueEnum;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use std::collections::BTreeMap;

/// Engine field names (as `Options::validate` names them) whose `open()` keyword differs.
const KEYWORD_OF_FIELD: &[(&str, &str)] = &[
    ("memtable_size_bytes", "memtable_mb"),
    ("target_file_size_bytes", "target_file_mb"),
    ("delayed_write_rate", "delayed_write_mb"),
    (
        "l0_compaction_trigger",
        "level0_file_num_compaction_trigger",
    ),
    ("l0_slowdown_trigger", "level0_slowdown_writes_trigger"),
    ("l0_stop_trigger", "level0_stop_writes_trigger"),
    ("bloom_bits_per_key", "bloom_bits"),
    ("index_tuning.pgm_recursive_error", "pgm_recursive_error"),
    ("index_tuning.radix_bits", "radix_bits"),
    ("index_tuning.rmi_leaves", "rmi_leaves"),
    ("index_tuning.fiting_fanout", "fiting_fanout"),
    ("index_tuning.string_run_limit", "string_run_limit"),
    ("flsm.top_level_bits", "flsm_top_level_bits"),
    ("flsm.bit_decrement", "flsm_bit_decrement"),
    ("flsm.level_size_runs", "flsm_level_size_runs"),
    ("flsm.max_sstables_per_guard", "max_sstables_per_guard"),
    (
        "flsm.seek_compaction_threshold",
        "seek_compaction_threshold",
    ),
    ("flsm.parallel_seek_threads", "parallel_seek_threads"),
];

/// The accepted names of a choice option, e.g. `fence, plr, pgm`.
pub(crate) fn choice_names<T: ValueEnum>() -> Vec<String> {
    T::value_variants()
        .iter()
        .filter_map(|v| v.to_possible_value())
        .map(|p| p.get_name().to_owned())
        .collect()
}

/// The name of `value` among the choices of its option.
pub(crate) fn choice_name<T: ValueEnum>(value: &T) -> Option<String> {
    value.to_possible_value().map(|p| p.get_name().to_owned())
}

/// Parses the choice `value` of `keyword` (e.g. `index="pgm"`).
///
/// # Errors
/// `InvalidArgumentError` listing the accepted values.
pub(crate) fn choice<T: ValueEnum>(keyword: &str, value: &str) -> PyResult<T> {
    T::from_str(value, false).map_err(|_| {
        errors::invalid_argument(format!(
            "{keyword}: {value:?} is not one of {}",
            choice_names::<T>().join(", ")
        ))
    })
}

/// Converts the integer `value` of `keyword` to an unsigned type.
///
/// # Errors
/// `InvalidArgumentError` for a negative value or one past the type's range.
pub(crate) fn unsigned<T: TryFrom<i64>>(keyword: &str, value: i64) -> PyResult<T> {
    T::try_from(value).map_err(|_| {
        errors::invalid_argument(format!(
            "{keyword}: {value} is out of range (a non-negative integer is expected)"
        ))
    })
}

/// Checks that the float `value` of `keyword` is a finite number (its range is the engine's
/// to check).
///
/// # Errors
/// `InvalidArgumentError` for NaN or an infinity.
pub(crate) fn finite(keyword: &str, value: f64) -> PyResult<f64> {
    if value.is_finite() {
        Ok(value)
    } else {
        Err(errors::invalid_argument(format!(
            "{keyword}: {value} is not a finite number"
        )))
    }
}

/// `error_bound_per_level`: a dict `{level: bound}` or the CLI's `"L0:4,L1:16"`.
///
/// # Errors
/// `InvalidArgumentError` naming the bad entry.
pub(crate) fn level_bounds(value: &Bound<'_, PyAny>) -> PyResult<BTreeMap<usize, u32>> {
    const KEYWORD: &str = "error_bound_per_level";
    if let Ok(s) = value.cast::<PyString>() {
        return parse_level_bounds(&s.to_cow()?)
            .map_err(|why| errors::invalid_argument(format!("{KEYWORD}: {why}")));
    }
    let dict = value.cast::<PyDict>().map_err(|_| {
        errors::invalid_argument(format!(
            "{KEYWORD}: expected a dict {{level: bound}} or a string like \"L0:4,L1:16\""
        ))
    })?;
    let mut out = BTreeMap::new();
    for (level, bound) in dict.iter() {
        let (Ok(level), Ok(bound)) = (level.extract::<i64>(), bound.extract::<i64>()) else {
            return Err(errors::invalid_argument(format!(
                "{KEYWORD}: levels and bounds must be integers"
            )));
        };
        out.insert(unsigned(KEYWORD, level)?, unsigned(KEYWORD, bound)?);
    }
    Ok(out)
}

/// `model_memory_budget`: `"fence"`, `"unlimited"` or bytes per key (`"0.5"`), as the CLI
/// takes it.
///
/// # Errors
/// `InvalidArgumentError` naming the option and the value.
pub(crate) fn model_budget(value: &str) -> PyResult<ModelBudget> {
    parse_model_budget(value).map_err(|_| {
        errors::invalid_argument(format!(
            "model_memory_budget: {value:?} is not fence, unlimited or a number of bytes per \
             key (at least 0)"
        ))
    })
}

/// Runs the engine's checks on the options `args` describe.
///
/// # Errors
/// `InvalidArgumentError` whose message starts with the keyword of the bad option.
pub(crate) fn validate(args: &EngineArgs) -> PyResult<()> {
    let Err(e) = args.options().validate() else {
        return Ok(());
    };
    let augur::Error::InvalidArgument(message) = &e else {
        return Err(errors::to_py(e));
    };
    // The engine's message is "option `FIELD` WHY".
    let field = message
        .strip_prefix("option `")
        .and_then(|rest| rest.split_once('`'));
    Err(match field {
        Some((field, _)) => {
            let keyword = KEYWORD_OF_FIELD
                .iter()
                .find(|(f, _)| *f == field)
                .map_or(field, |(_, k)| k);
            errors::invalid_argument(format!("{keyword}: {message}"))
        }
        None => errors::to_py(e),
    })
}
