//! The text report's preamble: the plan of a run of several configurations, and the header
//! printed before each configuration's benchmark lines (db_bench prints one such header).

use crate::engine::EngineKind;
use crate::memory::read_mode_name;
use crate::workloads::Params;
use std::path::Path;

/// Says which configurations a run covers (`labels`) and the database directory of each,
/// under `base`, before the first one starts; `both_layouts`: Augur runs values inline and
/// separated because no `--value-separation-threshold` was given.
pub(crate) fn print_plan(labels: &[&str], base: &Path, both_layouts: bool) {
    println!(
        "Running {} configurations, each in its own database under {}:",
        labels.len(),
        base.display()
    );
    for label in labels {
        println!("  {:<16} {}", label, base.join(label).display());
    }
    if both_layouts {
        println!(
            "(no --value-separation-threshold: Augur runs with values inline and with every \
             value separated; pass --value-separation-threshold N to run one configuration \
             in --db itself)"
        );
    }
    println!();
}

/// The header of one configuration: engine, keys, values, reads and where the database is.
pub(crate) fn print_header(
    kind: EngineKind,
    label: &str,
    p: &Params,
    o: &augur::Options,
    dir: &Path,
    source: &str,
    compression: &str,
) {
    let values = match o.value_separation_threshold {
        usize::MAX => "inline (no value separation)".to_string(),
        0 => "separated (every value in the value log)".to_string(),
        t => format!("separated from {t} bytes"),
    };
    if kind != EngineKind::Augur {
        println!(
            "Engine:     {} (bloom {} bits/key, {compression} compression, write buffer = memtable)",
            kind.name(),
            o.bloom_bits_per_key
        );
    }
    println!(
        "{:<12}version {}{}",
        if kind == EngineKind::Augur {
            "Augur:"
        } else {
            "Harness:"
        },
        env!("CARGO_PKG_VERSION"),
        if label.is_empty() {
            String::new()
        } else {
            format!(" [{label}]")
        }
    );
    println!("Keys:       {}", p.keys.describe(p.key_size));
    println!("Key source: {source}");
    println!("Values:     {} bytes each, {values}", p.value_size);
    if kind == EngineKind::Augur {
        println!("Compression: {compression}");
    }
    println!("Entries:    {}", p.num);
    println!("Reads:      {}", p.reads);
    if let Some(dist) = p.read_distribution {
        let hot = p.ycsb.hot_set(dist).map_or(String::new(), |h| {
            format!(
                " ({:.0}% of the lookups on the first {:.0}% of the keys)",
                100.0 * h.ops,
                100.0 * h.data
            )
        });
        println!("Read keys:  {}{hot}", dist.name());
    }
    if kind == EngineKind::Augur {
        let cache = if o.read_mode == augur::ReadMode::Direct {
            format!("its page cache of {} bytes", o.cache_bytes)
        } else {
            "the kernel's page cache".to_string()
        };
        println!(
            "Read mode:  {}, through {cache}",
            read_mode_name(o.read_mode)
        );
    } else {
        let reads = if p.direct_reads { "direct" } else { "buffered" };
        println!(
            "Reads by:   {reads} I/O, block cache of {} bytes",
            p.cache_bytes
        );
    }
    println!("Memtable:   {} bytes", o.memtable_size_bytes);
    println!("DB:         {}", dir.display());
    println!("------------------------------------------------");
}
