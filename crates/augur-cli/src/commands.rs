//! The small commands: put, get, del, stats, flush, compact, gc (`scan` is in scan.rs).

use crate::codec::{print_json, Codec};
use crate::error::{io_err, CliError};
use augur::{Db, WriteBatch, WriteOptions};
use augur_frontend::stats_view;
use serde_json::{json, Map, Value};
use std::io::Write;

fn write_one(
    db: &Db,
    key: Vec<u8>,
    value: Option<Vec<u8>>,
    expire_at: Option<u64>,
    sync: bool,
) -> Result<(), CliError> {
    let mut b = WriteBatch::new();
    match (value, expire_at) {
        (Some(v), Some(at)) => b.put_expiring(key, v, at),
        (Some(v), None) => b.put(key, v),
        (None, _) => b.delete(key),
    };
    db.write_opt(b, WriteOptions { sync })?;
    Ok(())
}

/// The expiry time of `put --ttl SECONDS` or `put --expire-at UNIX_MS` (milliseconds since
/// the Unix epoch on `db`'s clock), `None` without either.
pub fn expiry(db: &Db, ttl: Option<f64>, expire_at: Option<u64>) -> Result<Option<u64>, CliError> {
    match ttl {
        Some(t) if !t.is_finite() || t < 0.0 || t * 1000.0 >= u64::MAX as f64 => {
            Err(CliError::Failed(format!(
                "--ttl must be a finite number of seconds, not negative: {t}"
            )))
        }
        Some(t) => Ok(Some(
            db.now_unix_ms().saturating_add((t * 1000.0).ceil() as u64),
        )),
        None => Ok(expire_at),
    }
}

/// `put KEY VALUE [--ttl S | --expire-at MS]`: prints nothing (or `{"ok":true}`).
pub fn put(
    db: &Db,
    c: Codec,
    key: &str,
    value: &str,
    expire_at: Option<u64>,
    sync: bool,
    json: bool,
) -> Result<(), CliError> {
    let k = c.decode("key", key)?;
    let v = c.decode("value", value)?;
    write_one(db, k, Some(v), expire_at, sync)?;
    db.close()?;
    if json {
        print_json(&json!({"ok": true}));
    }
    Ok(())
}

/// `del KEY`: prints nothing (or `{"ok":true}`).
pub fn del(db: &Db, c: Codec, key: &str, sync: bool, json: bool) -> Result<(), CliError> {
    let k = c.decode("key", key)?;
    write_one(db, k, None, None, sync)?;
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

/// `ttl KEY`: the milliseconds until the key expires, or `none`; or `{"key":..,"ttl_ms":..,
/// "expire_at_ms":..}` (both `null` for a key that never expires). A missing key is
/// `CliError::NotFound`.
pub fn ttl(db: &Db, c: Codec, key: &str, json: bool) -> Result<(), CliError> {
    let k = c.decode("key", key)?;
    let Some(found) = db.get_with_expiry(&k)? else {
        return Err(CliError::NotFound(format!("key not found: {key}")));
    };
    let left = found
        .expire_at
        .map(|at| at.saturating_sub(db.now_unix_ms()));
    if json {
        let mut m = Map::new();
        c.json_insert(&mut m, "key", &k);
        m.insert("ttl_ms".into(), json!(left));
        m.insert("expire_at_ms".into(), json!(found.expire_at));
        print_json(&Value::Object(m));
    } else {
        match left {
            Some(ms) => println!("{ms}"),
            None => println!("none"),
        }
    }
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
