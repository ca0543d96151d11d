//! The small commands: put, get, del, scan, stats, flush, compact, gc.

use crate::codec::{print_json, Codec};
use crate::error::{io_err, CliError};
use crate::JsonFlag;
use augur::{Db, ParallelScanOptions, ScanOptions, Split, WriteBatch, WriteOptions};
use augur_frontend::stats_view;
use clap::Args;
use serde_json::{json, Map, Value};
use std::io::Write;

/// Arguments of `scan`.
#[derive(Args, Debug)]
pub struct ScanArgs {
    /// First key (inclusive).
    #[arg(long, value_name = "KEY")]
    pub from: Option<String>,
    /// End key (exclusive).
    #[arg(long, value_name = "KEY")]
    pub to: Option<String>,
    /// At most N entries.
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// Walk from the last key backwards.
    #[arg(long)]
    pub reverse: bool,
    /// Scan with N threads: the range is cut into N partitions scanned in parallel over one
    /// snapshot; the output is identical to one thread's (with --limit, every partition is
    /// scanned in full first).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub threads: usize,
    /// How --threads cuts the range: `balanced` (equal entry counts, estimated from the
    /// files' learned indexes) or `keyspace` (equal key intervals).
    #[arg(long, value_name = "HOW", default_value = "balanced", value_parser = parse_split)]
    pub split: Split,
    #[command(flatten)]
    pub out: JsonFlag,
}

fn parse_split(s: &str) -> Result<Split, String> {
    Split::from_name(s).ok_or_else(|| format!("unknown split `{s}` (keyspace or balanced)"))
}

/// What a scan prints: text lines, or JSON entries.
enum Rendered {
    Text(Vec<u8>),
    Json(Vec<Value>),
}

impl Rendered {
    fn new(json: bool) -> Self {
        if json {
            Rendered::Json(Vec::new())
        } else {
            Rendered::Text(Vec::new())
        }
    }

    fn add(&mut self, c: Codec, k: &[u8], v: &[u8]) {
        match self {
            Rendered::Json(entries) => {
                let mut m = Map::new();
                c.json_insert(&mut m, "key", k);
                c.json_insert(&mut m, "value", v);
                entries.push(Value::Object(m));
            }
            Rendered::Text(out) => {
                out.extend_from_slice(&c.display(k));
                out.push(b'\t');
                out.extend_from_slice(&c.display(v));
                out.push(b'\n');
            }
        }
    }
}

/// Renders up to `limit` pairs of `scan`; returns the output and the number rendered.
fn render(
    scan: &mut augur::Scan,
    c: Codec,
    json: bool,
    limit: usize,
) -> augur::Result<(Rendered, usize)> {
    let mut out = Rendered::new(json);
    let mut count = 0;
    while count < limit {
        let Some((k, v)) = scan.next()? else { break };
        out.add(c, k, v);
        count += 1;
    }
    Ok((out, count))
}

fn write_one(db: &Db, key: Vec<u8>, value: Option<Vec<u8>>, sync: bool) -> Result<(), CliError> {
    let mut b = WriteBatch::new();
    match value {
        Some(v) => b.put(key, v),
        None => b.delete(key),
    };
    db.write_opt(b, WriteOptions { sync })?;
    Ok(())
}

/// `put KEY VALUE`: prints nothing (or `{"ok":true}`).
pub fn put(
    db: &Db,
    c: Codec,
    key: &str,
    value: &str,
    sync: bool,
    json: bool,
) -> Result<(), CliError> {
    let k = c.decode("key", key)?;
    let v = c.decode("value", value)?;
    write_one(db, k, Some(v), sync)?;
    db.close()?;
    if json {
        print_json(&json!({"ok": true}));
    }
    Ok(())
}

/// `del KEY`: prints nothing (or `{"ok":true}`).
pub fn del(db: &Db, c: Codec, key: &str, sync: bool, json: bool) -> Result<(), CliError> {
    let k = c.decode("key", key)?;
    write_one(db, k, None, sync)?;
    db.close()?;
    if json {
        print_json(&json!({"ok": true}));
    }
    Ok(())
}

/// `get KEY`: the value and a newline, or `{"key":..,"value":..}`; a missing key is
/// `CliError::NotFound`.
pub fn get(db: &Db, c: Codec, key: &str, json: bool) -> Result<(), CliError> {
    let k = c.decode("key", key)?;
    let Some(v) = db.get(&k)? else {
        return Err(CliError::NotFound(format!("key not found: {key}")));
    };
    if json {
        let mut m = Map::new();
        c.json_insert(&mut m, "key", &k);
        c.json_insert(&mut m, "value", &v);
        print_json(&Value::Object(m));
    } else {
        let mut line = c.display(&v);
        line.push(b'\n');
        std::io::stdout()
            .write_all(&line)
            .map_err(io_err("writing to stdout"))?;
    }
    Ok(())
}

/// `scan`: `key<TAB>value` lines in key order (or reverse), or
/// `{"count":n,"entries":[{"key":..,"value":..},..]}`.
pub fn scan(db: &Db, c: Codec, a: &ScanArgs, json: bool) -> Result<(), CliError> {
    let from = a
        .from
        .as_deref()
        .map(|k| c.decode("--from key", k))
        .transpose()?;
    let to =
        a.to.as_deref()
            .map(|k| c.decode("--to key", k))
            .transpose()?;
    use std::ops::Bound;
    let lo = from.map_or(Bound::Unbounded, Bound::Included);
    let hi = to.map_or(Bound::Unbounded, Bound::Excluded);
    let range = (lo, hi);
    let limit = a.limit.unwrap_or(usize::MAX);
    if a.threads == 0 {
        return Err(CliError::failed("--threads must be at least 1"));
    }
    // Partition outputs in key order (reverse with --reverse), each with its pair count.
    let parts: Vec<(Rendered, usize)> = if a.threads == 1 {
        let options = ScanOptions {
            reverse: a.reverse,
            ..ScanOptions::default()
        };
        let mut scan = db.scan_with::<Vec<u8>, _>(range, &options);
        vec![render(&mut scan, c, json, limit)?]
    } else {
        let options = ParallelScanOptions {
            threads: a.threads,
            split: a.split,
            reverse: a.reverse,
            ..ParallelScanOptions::default()
        };
        db.scan_parallel::<Vec<u8>, _, _, _>(range, &options, |_, scan| {
            render(scan, c, json, limit)
        })?
    };
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut entries = Vec::new();
    let mut count = 0usize;
    for (part, n) in parts {
        let take = n.min(limit - count);
        count += take;
        match part {
            Rendered::Json(mut e) => {
                e.truncate(take);
                entries.extend(e);
            }
            Rendered::Text(bytes) => {
                // `take` whole lines of the partition.
                let end = if take == n {
                    bytes.len()
                } else {
                    bytes
                        .iter()
                        .enumerate()
                        .filter(|(_, &b)| b == b'\n')
                        .nth(take.wrapping_sub(1))
                        .map_or(0, |(i, _)| i + 1)
                };
                out.write_all(bytes.get(..end).unwrap_or_default())
                    .map_err(io_err("writing to stdout"))?;
            }
        }
        if count == limit {
            break;
        }
    }
    if json {
        print_json(&json!({"count": count, "entries": entries}));
    }
    out.flush().map_err(io_err("writing to stdout"))?;
    Ok(())
}

/// `stats [--all]`.
pub fn stats(db: &Db, all: bool, json: bool) -> Result<(), CliError> {
    let s = db.stats();
    if json {
        print_json(&stats_view::stats_json(&s));
    } else {
        print!("{}", stats_view::stats_text(&s, all));
    }
    Ok(())
}

fn files_and_bytes(db: &Db) -> (usize, u64) {
    let s = db.stats();
    (
        s.levels.iter().map(|l| l.files).sum(),
        s.levels.iter().map(|l| l.bytes).sum(),
    )
}

/// `flush`.
pub fn flush(db: &Db, json: bool) -> Result<(), CliError> {
    db.flush()?;
    let (files, bytes) = files_and_bytes(db);
    if json {
        print_json(&json!({"ok": true, "files": files, "table_bytes": bytes}));
    } else {
        println!("flushed: {files} files, {bytes} table bytes");
    }
    Ok(())
}

/// `compact`: flushes, then compacts the whole key space.
pub fn compact(db: &Db, json: bool) -> Result<(), CliError> {
    db.flush()?;
    db.compact_range(None, None)?;
    let (files, bytes) = files_and_bytes(db);
    if json {
        print_json(&json!({"ok": true, "files": files, "table_bytes": bytes}));
    } else {
        println!("compacted: {files} files, {bytes} table bytes");
    }
    Ok(())
}

/// `gc [--all]`.
pub fn gc(db: &Db, all: bool, json: bool) -> Result<(), CliError> {
    let mut runs = Vec::new();
    // Each run removes one segment, so the number of segments bounds the loop.
    let max_runs = if all {
        db.stats().value_log.len() + 1
    } else {
        1
    };
    for _ in 0..max_runs {
        let r = db.run_value_log_gc()?;
        let Some(segment) = r.segment else { break };
        runs.push(
            json!({"segment": segment, "entries_scanned": r.entries_scanned,
            "entries_relocated": r.entries_relocated, "segment_bytes": r.segment_bytes,
            "tables_rewritten": r.tables_rewritten}),
        );
        if !json {
            println!(
                "collected segment {segment}: {} entries scanned, {} relocated, {} bytes, \
                 {} tables rewritten",
                r.entries_scanned, r.entries_relocated, r.segment_bytes, r.tables_rewritten
            );
        }
    }
    if json {
        print_json(&json!({"segments_collected": runs.len(), "runs": runs}));
    } else if runs.is_empty() {
        println!("no value-log segment has garbage");
    }
    Ok(())
}
