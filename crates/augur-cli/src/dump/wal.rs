//! `dump wal FILE [--values]`: every record of a write-ahead log from
//! `augur::inspect::wal`, and where a torn or damaged tail begins.

use super::{end_json, end_text, entry_line, finish, unreadable, value_fields, Fail, Out};
use augur::inspect;
use serde_json::{json, Map, Value};
use std::path::Path;

/// Prints the WAL at `file`, with inline values when `values`.
pub(super) fn dump(o: &mut Out<'_>, file: &Path, values: bool) -> Result<(), Fail> {
    let d = inspect::wal(file, values).map_err(|e| unreadable(o, file, e))?;
    if o.json {
        let records: Vec<Value> = d
            .records
            .iter()
            .map(|r| {
                let entries: Vec<Value> = r
                    .entries
                    .iter()
                    .map(|e| {
                        let mut m = Map::new();
                        o.c.json_insert(&mut m, "key", &e.key);
                        m.insert("seqno".into(), json!(e.seqno));
                        value_fields(&mut m, o.c, &e.value);
                        Value::Object(m)
                    })
                    .collect();
                json!({
                    "offset": r.offset, "len": r.len, "first_seqno": r.first_seqno,
                    "count": r.entries.len(), "entries": entries,
                })
            })
            .collect();
        let (end, damage) = end_json(&d.end);
        let v = json!({
            "file": file.display().to_string(), "file_bytes": d.file_bytes,
            "record_count": d.records.len(), "entry_count": d.entry_count(),
            "records": records, "end": end, "damage": damage,
        });
        writeln!(o.w, "{v}")?;
        return finish(file, &d.end);
    }
    writeln!(
        o.w,
        "wal {}: {} bytes, {} records, {} entries",
        file.display(),
        d.file_bytes,
        d.records.len(),
        d.entry_count()
    )?;
    for r in &d.records {
        writeln!(
            o.w,
            "record at offset {} ({} bytes): seqno {}, {} entries",
            r.offset,
            r.len,
            r.first_seqno,
            r.entries.len()
        )?;
        for e in &r.entries {
            o.w.write_all(b"  ")?;
            o.w.write_all(&entry_line(o.c, &e.key, e.seqno, &e.value))?;
        }
    }
    writeln!(o.w, "{}", end_text(&d.end))?;
    finish(file, &d.end)
}
