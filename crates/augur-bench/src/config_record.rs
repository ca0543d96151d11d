//! The `config` object of every benchmark record: the engine options and the workload that
//! produced it, so a record can be read (and rerun) on its own.

use crate::engine::{Codec, EngineKind, L0Triggers};
use crate::sources::KeySet;
use crate::workloads::Params;
use crate::ycsb;
use serde_json::{json, Value};

/// The codec `kind` runs with, as the record's `config.compression` shows it: Augur's
/// `Options::compression` (`none`, `lz4`, `zstd:LEVEL`), a peer's `--compression_type`.
pub(crate) fn compression_name(kind: EngineKind, o: &augur::Options, codec: Codec) -> String {
    if kind == EngineKind::Augur {
        o.compression.to_string()
    } else {
        codec.name().to_string()
    }
}

fn threshold_json(t: usize) -> Value {
    if t == usize::MAX {
        Value::Null
    } else {
        json!(t)
    }
}

/// The L0 triggers `kind` ran with, as the record's `config.level0_triggers` shows them:
/// Augur's from its options; a peer's given ones (`null`: the peer's own default; LevelDB
/// and fjall never take any).
pub(crate) fn level0_triggers_json(
    kind: EngineKind,
    o: &augur::Options,
    given: &L0Triggers,
) -> Value {
    let (compaction, slowdown, stop) = if kind == EngineKind::Augur {
        (
            Some(o.l0_compaction_trigger),
            Some(o.l0_slowdown_trigger),
            Some(o.l0_stop_trigger),
        )
    } else {
        (given.compaction, given.slowdown, given.stop)
    };
    json!({"compaction": compaction, "slowdown": slowdown, "stop": stop})
}

/// The `config` object of a record: what ran, with which options and workload.
pub(crate) fn config_json(label: &str, p: &Params, o: &augur::Options, source: &str) -> Value {
    let prefix = match p.keys.as_ref() {
        KeySet::Prefixed(x) => Some(*x),
        _ => None,
    };
    let mut config = json!({
        "label": label,
        "key_source": source,
        "load_order": p.load_order.map(|l| format!("{l:?}").to_lowercase()),
        "index": o.index.name(),
        "learning": o.learning.name(),
        "error_bound": o.error_bound,
        "num": p.num,
        "reads": p.reads,
        "key_size": p.key_size,
        "value_size": p.value_size,
        "compression_ratio": p.compression_ratio,
        "slot_head_bytes": o.slot_head_bytes,
        "block_prefixes": o.block_prefixes,
        "value_separation_threshold": threshold_json(o.value_separation_threshold),
        "read_mode": format!("{:?}", o.read_mode).to_lowercase(),
        "memtable_size_bytes": o.memtable_size_bytes,
        "bloom_bits_per_key": o.bloom_bits_per_key,
        "sync": p.sync,
        "seed": p.seed,
        "use_existing_db": p.use_existing_db,
        "request_distribution": p.ycsb.distribution.map(ycsb::RequestDist::name),
        "insert_order": if p.keys.is_numbers() { p.ycsb.insert_order.name() } else { "source" },
        "prefix_size": prefix.map_or(0, |x| x.prefix_bytes),
        "keys_per_prefix": prefix.map_or(0, |x| x.keys_per_prefix),
        "hotspot_data_fraction": p.ycsb.hot_data_fraction,
        "hotspot_ops_fraction": p.ycsb.hot_ops_fraction,
        "learning_wait_ms": o.learning_wait_ms,
        "lazy_learning_reads": o.lazy_learning_reads,
        "lazy_learning_reads_per_key": o.lazy_learning_reads_per_key,
        "target_file_size_bytes": o.target_file_size_bytes,
        "scan_length": p.ycsb.scan_length,
        "seek_nexts": p.seek_nexts,
        "scan_threads": p.parallel_scan.threads,
        "scan_split": p.parallel_scan.split.name(),
        "scan_partitions": p.parallel_scan.partitions,
        "scan_range_keys": p.parallel_scan.range_keys,
        "cache_bytes": p.cache_bytes,
        "statistics": p.statistics,
        "read_distribution": p.read_distribution.map(ycsb::RequestDist::name),
        "threads": p.threads,
        "version": env!("CARGO_PKG_VERSION"),
    });
    // (Beside the literal: one more field passes `json!`'s recursion limit.)
    if let Some(fields) = config.as_object_mut() {
        fields.insert("compress_keys".into(), json!(o.compress_keys));
    }
    config
}
