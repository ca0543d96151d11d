//! Results of one benchmark: the db_bench-style line and the JSON record.

use hdrhistogram::Histogram;
use serde_json::{json, Value};

/// What one benchmark measured.
pub struct Outcome {
    /// Benchmark name.
    pub name: String,
    /// Operations done.
    pub ops: u64,
    /// Wall-clock seconds for all of them.
    pub seconds: f64,
    /// Key and value bytes written or read (for MB/s).
    pub bytes: u64,
    /// For reads: (found, attempted).
    pub found: Option<(u64, u64)>,
    /// For writes: bytes written to files per user byte during the benchmark.
    pub write_amplification: Option<f64>,
    /// Per-operation latencies in nanoseconds, when recorded.
    pub latency_ns: Option<Histogram<u64>>,
    /// Benchmark-specific results (e.g. `train`'s segments), appended to the line and the
    /// JSON record.
    pub extra: Vec<(&'static str, Value)>,
    /// Results for the JSON record only (too many or too long for the line, e.g. Augur's
    /// bytes on disk per level).
    pub record_only: Vec<(&'static str, Value)>,
    /// The engine's statistics after the benchmark (`stats_view::stats_json`; Augur only).
    pub stats: Option<Value>,
}

impl Outcome {
    /// An outcome of `ops` operations in `seconds`, with nothing else measured.
    pub fn new(name: &str, ops: u64, seconds: f64) -> Self {
        Outcome {
            name: name.to_string(),
            ops,
            seconds,
            bytes: 0,
            found: None,
            write_amplification: None,
            latency_ns: None,
            extra: Vec::new(),
            record_only: Vec::new(),
            stats: None,
        }
    }

    fn micros_per_op(&self) -> f64 {
        self.seconds * 1e6 / self.ops.max(1) as f64
    }

    fn ops_per_sec(&self) -> f64 {
        if self.seconds > 0.0 {
            self.ops as f64 / self.seconds
        } else {
            0.0
        }
    }

    fn mb_per_sec(&self) -> f64 {
        if self.seconds > 0.0 {
            self.bytes as f64 / 1_048_576.0 / self.seconds
        } else {
            0.0
        }
    }

    fn percentile_us(&self, q: f64) -> Option<f64> {
        self.latency_ns
            .as_ref()
            .filter(|h| !h.is_empty())
            .map(|h| h.value_at_quantile(q) as f64 / 1000.0)
    }

    /// The line db_bench prints for a benchmark, e.g.
    /// `fillrandom   :       1.234 micros/op 810372 ops/sec 0.247 seconds 200000 operations;   17.5 MB/s`.
    pub fn line(&self) -> String {
        let mut s = format!(
            "{:<12} : {:>11.3} micros/op {} ops/sec {:.3} seconds {} operations;",
            self.name,
            self.micros_per_op(),
            self.ops_per_sec().round() as u64,
            self.seconds,
            self.ops
        );
        if self.bytes > 0 {
            s.push_str(&format!(" {:6.1} MB/s", self.mb_per_sec()));
        }
        if let Some((found, of)) = self.found {
            s.push_str(&format!(" ({found} of {of} found)"));
        }
        if let Some(wa) = self.write_amplification {
            s.push_str(&format!(" write amplification {wa:.2}"));
        }
        for (k, v) in &self.extra {
            match v.as_f64() {
                Some(f) if v.is_f64() => s.push_str(&format!(" {k}={f:.3}")),
                _ => s.push_str(&format!(
                    " {k}={}",
                    v.as_str().map_or(v.to_string(), str::to_string)
                )),
            }
        }
        s
    }

    /// The latency line printed under `line` with `--histogram`.
    pub fn histogram_line(&self) -> Option<String> {
        let h = self.latency_ns.as_ref().filter(|h| !h.is_empty())?;
        let us = |q: f64| h.value_at_quantile(q) as f64 / 1000.0;
        Some(format!(
            "{:<12} : latency us: p50 {:.3} p99 {:.3} p99.9 {:.3} max {:.3}",
            "",
            us(0.5),
            us(0.99),
            us(0.999),
            h.max() as f64 / 1000.0
        ))
    }

    /// The JSON record of a run on `engine` (`config` describes the run).
    pub fn to_json(&self, engine: &str, config: &Value) -> Value {
        let mut record = json!({
            "benchmark": self.name,
            "engine": engine,
            "ops": self.ops,
            "seconds": self.seconds,
            "micros_per_op": self.micros_per_op(),
            "ops_per_sec": self.ops_per_sec(),
            "mb_per_sec": self.mb_per_sec(),
            "found": self.found.map(|f| f.0),
            "p50_us": self.percentile_us(0.5),
            "p99_us": self.percentile_us(0.99),
            "p999_us": self.percentile_us(0.999),
            "write_amplification": self.write_amplification,
            "config": config,
            "stats": self.stats,
        });
        if let Some(map) = record.as_object_mut() {
            for (k, v) in self.extra.iter().chain(&self.record_only) {
                map.insert((*k).to_string(), v.clone());
            }
        }
        record
    }
}

/// The side-by-side table printed after a run of several configurations (`--compare`, or
/// inline vs separated): one row per benchmark, one column of micros/op per configuration
/// label, then speedups as ratios of micros/op — Augur's learned path over its baseline path,
/// and Augur's learned path over each peer run in the same process. `None` for fewer than two
/// configurations.
pub fn summary_table(records: &[Value]) -> Option<String> {
    let label = |r: &Value| {
        let l = r["config"]["label"].as_str().unwrap_or_default();
        if l.is_empty() {
            r["engine"].as_str().unwrap_or("?").to_string()
        } else {
            l.to_string()
        }
    };
    let mut labels: Vec<String> = Vec::new();
    let mut benchmarks: Vec<String> = Vec::new();
    for r in records {
        let l = label(r);
        if !labels.contains(&l) {
            labels.push(l);
        }
        let b = r["benchmark"].as_str().unwrap_or("?").to_string();
        if !benchmarks.contains(&b) {
            benchmarks.push(b);
        }
    }
    if labels.len() < 2 {
        return None;
    }
    let micros = |b: &str, l: &str| {
        records
            .iter()
            .find(|r| r["benchmark"] == b && label(r) == l)
            .and_then(|r| r["micros_per_op"].as_f64())
    };
    let learned = "augur-learned";
    let mut ratios: Vec<(String, String, String)> = Vec::new();
    if labels.iter().any(|l| l == learned) {
        for other in labels.iter().filter(|l| *l != learned) {
            let title = if other == "augur-baseline" {
                "learned speedup".to_string()
            } else {
                format!("learned vs {other}")
            };
            ratios.push((title, other.clone(), learned.to_string()));
        }
    }
    let mut t = comfy_table::Table::new();
    let mut header = vec!["micros/op".to_string()];
    header.extend(labels.iter().cloned());
    header.extend(ratios.iter().map(|r| r.0.clone()));
    t.set_header(header);
    for b in &benchmarks {
        let mut row = vec![b.clone()];
        for l in &labels {
            row.push(micros(b, l).map_or("-".into(), |m| format!("{m:.3}")));
        }
        for (_, slow, fast) in &ratios {
            row.push(match (micros(b, slow), micros(b, fast)) {
                (Some(s), Some(f)) if f > 0.0 => format!("{:.2}x", s / f),
                _ => "-".into(),
            });
        }
        t.add_row(row);
    }
    Some(format!(
        "Summary (micros/op, lower is better; speedup = other micros/op / augur-learned's)\n{t}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_has_db_bench_shape() {
        let o = Outcome {
            name: "readrandom".into(),
            ops: 1000,
            seconds: 0.5,
            bytes: 1_048_576,
            found: Some((600, 1000)),
            write_amplification: None,
            latency_ns: None,
            extra: Vec::new(),
            record_only: vec![("levels_disk", json!([{"level": 1}]))],
            stats: None,
        };
        let l = o.line();
        assert!(
            l.starts_with(
                "readrandom   :     500.000 micros/op 2000 ops/sec 0.500 seconds 1000 operations;"
            ),
            "{l}"
        );
        assert!(l.ends_with("2.0 MB/s (600 of 1000 found)"), "{l}");
        assert!(!l.contains("levels_disk"), "{l}");
        let j = o.to_json("augur", &json!({}));
        assert_eq!(j["ops_per_sec"], 2000.0);
        assert_eq!(j["levels_disk"][0]["level"], 1);
        assert!(j["p50_us"].is_null());
        let mut t = Outcome::new("train", 10, 1.0);
        t.extra = vec![("segments", json!(3)), ("train_ns_per_key", json!(12.5))];
        assert!(
            t.line().ends_with(" segments=3 train_ns_per_key=12.500"),
            "{}",
            t.line()
        );
        let j = t.to_json("augur", &json!({}));
        assert_eq!(j["segments"], 3);
        assert_eq!(j["train_ns_per_key"], 12.5);
    }

    #[test]
    fn summary_puts_configurations_side_by_side_with_speedups() {
        let rec = |b: &str, label: &str, engine: &str, us: f64| {
            json!({"benchmark": b, "engine": engine, "micros_per_op": us,
                   "config": {"label": label}})
        };
        let records = vec![
            rec("readrandom", "augur-baseline", "augur", 3.0),
            rec("readrandom", "augur-learned", "augur", 2.0),
            rec("readrandom", "rocksdb", "rocksdb", 5.0),
            rec("fillrandom", "augur-learned", "augur", 1.0),
        ];
        let t = summary_table(&records).unwrap();
        let row = t.lines().find(|l| l.contains("readrandom")).unwrap();
        for cell in ["3.000", "2.000", "5.000", "1.50x", "2.50x"] {
            assert!(row.contains(cell), "{cell} missing in {row}");
        }
        let fill = t.lines().find(|l| l.contains("fillrandom")).unwrap();
        assert!(fill.contains('-'), "{fill}");
        assert!(t.contains("learned vs rocksdb"), "{t}");
        assert!(summary_table(&records[..1]).is_none());
    }
}
