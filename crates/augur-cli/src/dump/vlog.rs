//! `dump vlog FILE [--keys]`: a value-log segment's header and entries, streamed from
//! `augur::inspect::vlog_entries`; with the global `--db DIR`, the segment's garbage as that
//! database's manifest accounts it.

use super::{end_json, end_text, finish, unreadable, Fail, JsonStream, Out};
use crate::error::CliError;
use augur::inspect::{self, codec_name, FileEnd, SegmentAccounting};
use serde_json::{json, Map, Value};
use std::path::Path;

/// Totals over the entries read.
#[derive(Default)]
struct Totals {
    entries: u64,
    entry_bytes: u64,
    raw_value_bytes: u64,
    stored_value_bytes: u64,
}

impl Totals {
    fn count(&mut self, e: &inspect::VlogEntry) {
        self.entries += 1;
        self.entry_bytes += e.entry_bytes;
        self.raw_value_bytes += e.value_len;
        self.stored_value_bytes += u64::from(e.stored_len);
    }
}

/// What the manifest of database `db` says about segment `id`, and how far it was read.
fn accounting(db: &Path, id: u64) -> Result<(SegmentAccounting, FileEnd), Fail> {
    let manifest = inspect::manifest(&inspect::current_manifest(db)?)
        .map_err(|e| CliError::failed(format!("--db {}: {e}", db.display())))?;
    Ok((manifest.segment_accounting(id), manifest.end))
}

/// Prints the segment at `file`, each entry when `keys`; its garbage by `db`'s manifest.
pub(super) fn dump(
    o: &mut Out<'_>,
    file: &Path,
    keys: bool,
    db: Option<&Path>,
) -> Result<(), Fail> {
    let header = inspect::vlog(file).map_err(|e| unreadable(o, file, e))?;
    let garbage = db.map(|db| accounting(db, header.segment_id)).transpose()?;
    let mut entries = inspect::vlog_entries(file)?;
    let mut t = Totals::default();
    if o.json {
        let mut head = Map::new();
        head.insert("file".into(), json!(file.display().to_string()));
        head.insert("file_bytes".into(), json!(header.file_bytes));
        head.insert("segment_id".into(), json!(header.segment_id));
        head.insert("format_version".into(), json!(header.format_version));
        let mut stream = JsonStream::begin(o.w, head, "entries")?;
        for e in entries.by_ref() {
            let e = e?;
            t.count(&e);
            if keys {
                let mut m = Map::new();
                m.insert("offset".into(), json!(e.offset));
                o.c.json_insert(&mut m, "key", &e.key);
                m.insert("value_len".into(), json!(e.value_len));
                m.insert("stored_len".into(), json!(e.stored_len));
                m.insert("codec".into(), json!(codec_name(e.codec)));
                m.insert("entry_bytes".into(), json!(e.entry_bytes));
                stream.item(o.w, &Value::Object(m))?;
            }
        }
        let end = entries.end().cloned().unwrap_or(FileEnd::Clean);
        let mut tail = Map::new();
        tail.insert("entry_count".into(), json!(t.entries));
        tail.insert("entry_bytes".into(), json!(t.entry_bytes));
        tail.insert("raw_value_bytes".into(), json!(t.raw_value_bytes));
        tail.insert("stored_value_bytes".into(), json!(t.stored_value_bytes));
        if let Some((a, manifest_end)) = &garbage {
            tail.insert(
                "manifest".into(),
                json!({
                    "garbage_bytes": a.garbage_bytes, "deleted": a.deleted,
                    "sealed_bytes": a.sealed_bytes, "reserved": a.reserved,
                    "mentioned": a.mentioned, "end": end_json(manifest_end).0,
                }),
            );
        }
        let (end_v, damage) = end_json(&end);
        tail.insert("end".into(), end_v);
        tail.insert("damage".into(), damage);
        stream.end(o.w, tail)?;
        return finish(file, &end);
    }
    writeln!(
        o.w,
        "vlog {}: segment {}, format {}, {} bytes",
        file.display(),
        header.segment_id,
        header.format_version,
        header.file_bytes
    )?;
    for e in entries.by_ref() {
        let e = e?;
        t.count(&e);
        if keys {
            let mut line = format!("{}\t", e.offset).into_bytes();
            o.c.display_into(&mut line, &e.key);
            line.extend_from_slice(
                format!(
                    "\t{} bytes\tstored {} ({})\n",
                    e.value_len,
                    e.stored_len,
                    codec_name(e.codec)
                )
                .as_bytes(),
            );
            o.w.write_all(&line)?;
        }
    }
    writeln!(
        o.w,
        "{} entries, {} entry bytes (values: {} bytes, {} stored)",
        t.entries, t.entry_bytes, t.raw_value_bytes, t.stored_value_bytes
    )?;
    if let Some((a, manifest_end)) = &garbage {
        let state = if a.deleted {
            "deleted (pointers into it are obsolete)".to_string()
        } else {
            let sealed = match a.sealed_bytes {
                _ if !a.mentioned => "no edit names the segment".to_string(),
                None => "no sealed size recorded".to_string(),
                Some(s) => format!("sealed at {s} bytes"),
            };
            format!(
                "{} garbage bytes of {} entry bytes ({sealed}{})",
                a.garbage_bytes,
                t.entry_bytes,
                if a.reserved {
                    ", reserved by a compaction"
                } else {
                    ""
                }
            )
        };
        writeln!(o.w, "by the manifest: {state}")?;
        if manifest_end.stopped_early() {
            writeln!(o.w, "  (manifest: {})", end_text(manifest_end))?;
        }
    }
    let end = entries.end().cloned().unwrap_or(FileEnd::Clean);
    writeln!(o.w, "{}", end_text(&end))?;
    finish(file, &end)
}
