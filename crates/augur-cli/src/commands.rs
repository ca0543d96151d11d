//! The small commands: put, get, del, scan, stats, flush, compact, gc.

use crate::codec::{print_json, Codec};
use crate::error::{io_err, CliError};
use crate::JsonFlag;
use augur::{Db, WriteBatch, WriteOptions};
use augur_bench::stats_view;
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
    #[command(flatten)]
    pub out: JsonFlag,
}

/// Entries of an iterator walked in either direction.
type EntryIter = Box<dyn Iterator<Item = augur::Result<(Vec<u8>, Vec<u8>)>>>;

/// `iter` forward, or backward when `reverse`.
fn directed(iter: augur::DbIterator, reverse: bool) -> EntryIter {
    if reverse {
        Box::new(iter.rev())
    } else {
        Box::new(iter)
    }
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
    let iter = db.range::<Vec<u8>, _>((lo, hi));
    let iter = directed(iter, a.reverse);
    let limit = a.limit.unwrap_or(usize::MAX);
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut entries = Vec::new();
    let mut count = 0u64;
    for item in iter.take(limit) {
        let (k, v) = item?;
        count += 1;
        if json {
            let mut m = Map::new();
            c.json_insert(&mut m, "key", &k);
            c.json_insert(&mut m, "value", &v);
            entries.push(Value::Object(m));
        } else {
            let mut line = c.display(&k);
            line.push(b'\t');
            line.extend_from_slice(&c.display(&v));
            line.push(b'\n');
            out.write_all(&line).map_err(io_err("writing to stdout"))?;
        }
    }
    if json {
        print_json(&json!({"count": count, "entries": entries}));
    }
    out.flush().map_err(io_err("writing to stdout"))?;
    Ok(())
}

/// `stats`.
pub fn stats(db: &Db, json: bool) -> Result<(), CliError> {
    let s = db.stats();
    if json {
        print_json(&stats_view::stats_json(&s));
    } else {
        print!("{}", stats_view::stats_text(&s));
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
            "entries_relocated": r.entries_relocated, "segment_bytes": r.segment_bytes}),
        );
        if !json {
            println!(
                "collected segment {segment}: {} entries scanned, {} relocated, {} bytes",
                r.entries_scanned, r.entries_relocated, r.segment_bytes
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
