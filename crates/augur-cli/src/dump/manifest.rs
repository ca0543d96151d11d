//! `dump manifest FILE_OR_DIR`: every version edit of a manifest from
//! `augur::inspect::manifest` (for a directory, the manifest its CURRENT names).

use super::{end_json, end_text, finish, key_fields, key_text, unreadable, Fail, Out};
use crate::codec::Codec;
use augur::inspect::{self, AddedFile, ManifestEdit, ValueSegments};
use serde_json::{json, Map, Value};
use std::path::Path;

/// Prints the manifest at `path`, or the one database directory `path`'s CURRENT names.
pub(super) fn dump(o: &mut Out<'_>, path: &Path) -> Result<(), Fail> {
    let file = if path.is_dir() {
        inspect::current_manifest(path).map_err(|e| unreadable(o, &path.join("CURRENT"), e))?
    } else {
        path.to_path_buf()
    };
    let d = inspect::manifest(&file).map_err(|e| unreadable(o, &file, e))?;
    if o.json {
        let (end, damage) = end_json(&d.end);
        let edits: Vec<Value> = d.edits.iter().map(|e| edit_json(o.c, e)).collect();
        let v = json!({
            "file": file.display().to_string(), "file_bytes": d.file_bytes,
            "edits": edits, "end": end, "damage": damage,
        });
        writeln!(o.w, "{v}")?;
        return finish(&file, &d.end);
    }
    writeln!(
        o.w,
        "manifest {}: {} bytes, {} edits",
        file.display(),
        d.file_bytes,
        d.edits.len()
    )?;
    for (i, e) in d.edits.iter().enumerate() {
        writeln!(
            o.w,
            "edit {} at offset {} ({} bytes):",
            i + 1,
            e.offset,
            e.len
        )?;
        edit_text(o, e)?;
    }
    writeln!(o.w, "{}", end_text(&d.end))?;
    finish(&file, &d.end)
}

fn segments_json(s: ValueSegments) -> Value {
    match s {
        ValueSegments::Unrecorded => Value::Null,
        ValueSegments::None => json!([]),
        ValueSegments::Range { first, last } => json!([first, last]),
    }
}

fn added_json(c: Codec, f: &AddedFile) -> Value {
    json!({
        "level": f.level, "file_id": f.file_id, "file_size": f.file_size,
        "entries": f.entries,
        "smallest": Value::Object(key_fields(c, &f.smallest)),
        "largest": Value::Object(key_fields(c, &f.largest)),
        "value_segments": segments_json(f.value_segments),
        "expiry": f.expiry.map(|x| json!({
            "entries": x.entries, "earliest_ms": x.earliest, "latest_ms": x.latest,
        })),
    })
}

fn edit_json(c: Codec, e: &ManifestEdit) -> Value {
    let pairs = |v: &[inspect::SegmentBytes], what: &str| -> Value {
        v.iter()
            .map(|s| json!({"segment": s.segment, what: s.bytes}))
            .collect()
    };
    let guards = |g: &[inspect::Guard]| -> Value {
        g.iter()
            .map(|g| {
                let mut m = Map::new();
                m.insert("level".into(), json!(g.level));
                c.json_insert(&mut m, "key", &g.key);
                Value::Object(m)
            })
            .collect()
    };
    json!({
        "offset": e.offset, "len": e.len,
        "log_number": e.log_number, "next_file_number": e.next_file_number,
        "last_seqno": e.last_seqno,
        "compaction_style": e.compaction_style_name()
            .map(Value::from)
            .or(e.compaction_style.map(Value::from)),
        "added": e.added.iter().map(|f| added_json(c, f)).collect::<Vec<_>>(),
        "deleted": e.deleted.iter()
            .map(|d| json!({"level": d.level, "file_id": d.file_id}))
            .collect::<Vec<_>>(),
        "vlog_garbage": pairs(&e.vlog_garbage, "bytes"),
        "vlog_deleted": e.vlog_deleted,
        "vlog_deleted_runs": e.vlog_deleted_runs.iter()
            .map(|(first, count)| json!({"first": first, "count": count}))
            .collect::<Vec<_>>(),
        "vlog_reserved": e.vlog_reserved, "vlog_installed": e.vlog_installed,
        "vlog_sealed": pairs(&e.vlog_sealed, "size"),
        "wals_added": e.wals_added,
        "wals_closed": e.wals_closed.iter()
            .map(|w| json!({"wal": w.wal, "synced_bytes": w.synced_bytes}))
            .collect::<Vec<_>>(),
        "guards_added": guards(&e.guards_added),
        "guards_removed": guards(&e.guards_removed),
        "closed_cleanly": e.closed_cleanly,
    })
}

/// Joins `items` into `label a, b, c` (nothing when empty).
fn list<T: std::fmt::Display>(label: &str, items: impl IntoIterator<Item = T>) -> Option<String> {
    let v: Vec<String> = items.into_iter().map(|i| i.to_string()).collect();
    (!v.is_empty()).then(|| format!("{label} {}", v.join(", ")))
}

fn edit_text(o: &mut Out<'_>, e: &ManifestEdit) -> std::io::Result<()> {
    let mut fields = Vec::new();
    fields.extend(e.log_number.map(|n| format!("log number {n}")));
    fields.extend(e.next_file_number.map(|n| format!("next file {n}")));
    fields.extend(e.last_seqno.map(|n| format!("last seqno {n}")));
    if let Some(code) = e.compaction_style {
        let name = e
            .compaction_style_name()
            .map_or_else(|| format!("code {code}"), str::to_string);
        fields.push(format!("compaction style {name}"));
    }
    if !fields.is_empty() {
        writeln!(o.w, "  {}", fields.join("; "))?;
    }
    for f in &e.added {
        let mut line = format!(
            "  add L{} #{}: {} bytes, {} entries, ",
            f.level, f.file_id, f.file_size, f.entries
        )
        .into_bytes();
        key_text(&mut line, o.c, &f.smallest);
        line.extend_from_slice(b" .. ");
        key_text(&mut line, o.c, &f.largest);
        let segments = match f.value_segments {
            ValueSegments::Unrecorded => "value segments not recorded".to_string(),
            ValueSegments::None => "no value pointers".to_string(),
            ValueSegments::Range { first, last } => format!("value segments {first}..={last}"),
        };
        line.extend_from_slice(format!(", {segments}").as_bytes());
        if let Some(x) = f.expiry {
            line.extend_from_slice(
                format!(
                    ", {} expiring values in [{}, {}] ms",
                    x.entries, x.earliest, x.latest
                )
                .as_bytes(),
            );
        }
        line.push(b'\n');
        o.w.write_all(&line)?;
    }
    for d in &e.deleted {
        writeln!(o.w, "  delete L{} #{}", d.level, d.file_id)?;
    }
    let vlog: Vec<String> = [
        list(
            "garbage",
            e.vlog_garbage
                .iter()
                .map(|g| format!("segment {} +{} bytes", g.segment, g.bytes)),
        ),
        list("deleted", e.vlog_deleted.iter()),
        list(
            "deleted runs",
            e.vlog_deleted_runs
                .iter()
                .map(|(first, count)| format!("{first}..{}", first.saturating_add(*count))),
        ),
        list("reserved", e.vlog_reserved.iter()),
        list("installed", e.vlog_installed.iter()),
        list(
            "sealed",
            e.vlog_sealed
                .iter()
                .map(|s| format!("segment {} ({} bytes)", s.segment, s.bytes)),
        ),
    ]
    .into_iter()
    .flatten()
    .collect();
    if !vlog.is_empty() {
        writeln!(o.w, "  value log: {}", vlog.join("; "))?;
    }
    let wals: Vec<String> = [
        list("added", e.wals_added.iter()),
        list(
            "closed",
            e.wals_closed
                .iter()
                .map(|w| format!("{} ({} synced bytes)", w.wal, w.synced_bytes)),
        ),
    ]
    .into_iter()
    .flatten()
    .collect();
    if !wals.is_empty() {
        writeln!(o.w, "  WALs: {}", wals.join("; "))?;
    }
    for (what, guards) in [("added", &e.guards_added), ("removed", &e.guards_removed)] {
        for g in guards {
            let mut line = format!("  guard {what} L{} ", g.level).into_bytes();
            o.c.display_into(&mut line, &g.key);
            line.push(b'\n');
            o.w.write_all(&line)?;
        }
    }
    if e.closed_cleanly {
        writeln!(o.w, "  closed cleanly (nothing may follow this edit)")?;
    }
    Ok(())
}
