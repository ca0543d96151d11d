//! `augur repair DIR [--json]`: rebuilds the manifest of the database in DIR from the files
//! that check out (`augur::repair`, docs/repair.md) and prints what was kept, what was
//! moved to `DIR/lost/` and why.

use crate::error::{io_err, CliError};
use augur::{Options, RepairReport};
use serde_json::{json, Value};
use std::io::{ErrorKind, Write};
use std::path::Path;

/// Runs the repair of `dir` with `options` and prints its report (`json`: one object).
pub fn run(dir: &Path, options: &Options, json: bool) -> Result<(), CliError> {
    let report = augur::repair(dir, options)?;
    let mut out = std::io::stdout().lock();
    let written = if json {
        writeln!(out, "{}", to_json(&report))
    } else {
        print_human(&mut out, &report)
    };
    match written.and_then(|()| out.flush()) {
        // A reader that closed the pipe early (`augur repair DIR | head`): the repair is done.
        Err(e) if e.kind() == ErrorKind::BrokenPipe => Ok(()),
        other => other.map_err(io_err("writing to stdout")),
    }
}

/// The report as one JSON object.
fn to_json(r: &RepairReport) -> Value {
    json!({
        "dir": r.dir.display().to_string(),
        "manifest": r.manifest,
        "compaction_style": r.style.to_string(),
        "last_seqno": r.last_seqno,
        "tables": r.tables.iter().map(|t| json!({
            "name": t.name,
            "renamed_from": t.renamed_from,
            "entries": t.entries,
            "bytes": t.bytes,
            "max_seqno": t.max_seqno,
            "from_wal": t.from_wal,
        })).collect::<Vec<_>>(),
        "wals": r.wals.iter().map(|w| json!({
            "name": w.name,
            "records": w.records,
            "entries": w.entries,
            "already_in_tables": w.already_in_tables,
            "stopped": w.stopped.as_ref().map(|(offset, reason)| json!({
                "offset": offset,
                "reason": reason,
            })),
        })).collect::<Vec<_>>(),
        "segments": r.segments.iter().map(|s| json!({
            "name": s.name,
            "bytes": s.bytes,
            "entries": s.entries,
            "damage": s.damage,
        })).collect::<Vec<_>>(),
        "segments_missing": r.segments_missing,
        "lost": r.lost.iter().map(|l| json!({
            "name": l.name,
            "moved_to": l.moved_to.display().to_string(),
            "reason": l.reason,
        })).collect::<Vec<_>>(),
        "warnings": r.warnings,
    })
}

/// The report as text.
fn print_human(out: &mut impl Write, r: &RepairReport) -> std::io::Result<()> {
    writeln!(
        out,
        "repaired {}: wrote {} ({} compaction), last seqno {}",
        r.dir.display(),
        r.manifest,
        r.style,
        r.last_seqno
    )?;
    writeln!(
        out,
        "kept {} tables at level 0, newest first:",
        r.tables.len()
    )?;
    for t in &r.tables {
        let mut line = format!(
            "  {}  {} entries, {} bytes, max seqno {}",
            t.name, t.entries, t.bytes, t.max_seqno
        );
        if t.from_wal {
            line.push_str(" (written from the WALs)");
        }
        if let Some(old) = &t.renamed_from {
            line.push_str(&format!(" (renumbered from {old})"));
        }
        writeln!(out, "{line}")?;
    }
    writeln!(out, "replayed {} WALs:", r.wals.len())?;
    for w in &r.wals {
        let end = match &w.stopped {
            None => "read to its end".to_string(),
            Some((offset, reason)) => format!("stopped at offset {offset}: {reason}"),
        };
        let skipped = match w.already_in_tables {
            0 => String::new(),
            n => format!(" (and {n} already in tables, skipped)"),
        };
        writeln!(
            out,
            "  {}  {} records, {} entries{skipped}; {end}",
            w.name, w.records, w.entries
        )?;
    }
    writeln!(out, "kept {} value-log segments:", r.segments.len())?;
    for s in &r.segments {
        let damage = s
            .damage
            .as_ref()
            .map_or_else(String::new, |d| format!("; damaged: {d}"));
        writeln!(
            out,
            "  {}  {} bytes, {} entries{damage}",
            s.name, s.bytes, s.entries
        )?;
    }
    if !r.segments_missing.is_empty() {
        writeln!(
            out,
            "value-log segments missing (recorded as deleted): {:?}",
            r.segments_missing
        )?;
    }
    writeln!(
        out,
        "moved {} files to {}/lost/:",
        r.lost.len(),
        r.dir.display()
    )?;
    for l in &r.lost {
        writeln!(out, "  {}: {}", l.name, l.reason)?;
    }
    for w in &r.warnings {
        writeln!(out, "warning: {w}")?;
    }
    Ok(())
}
