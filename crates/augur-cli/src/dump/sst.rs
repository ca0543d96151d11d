//! `dump sst FILE [--keys] [--values]`: an SSTable's layout from `augur::inspect::sst`, then
//! (with `--keys`) its entries streamed from `augur::inspect::sst_entries`.

use super::{
    end_json, end_text, entry_line, finish, key_fields, key_text, unreadable, value_fields, Fail,
    JsonStream, Out,
};
use crate::codec::Codec;
use augur::inspect::{self, codec_name, FileEnd, ModelInfo, SstDump};
use serde_json::{json, Map, Value};
use std::path::Path;

/// Prints the table at `file`; its entries when `keys`, with inline values when `values`.
pub(super) fn dump(o: &mut Out<'_>, file: &Path, keys: bool, values: bool) -> Result<(), Fail> {
    let d = inspect::sst(file).map_err(|e| unreadable(o, file, e))?;
    let model_damage = d
        .model
        .as_ref()
        .filter(|m| !m.checksum_ok)
        .map(|m| FileEnd::Damaged {
            offset: m.offset,
            reason: "model section checksum mismatch (the database's open refuses the table)"
                .into(),
        });
    let end = if keys {
        let mut entries = inspect::sst_entries(file, values)?;
        if o.json {
            let head = summary_json(o.c, &d);
            let mut stream = JsonStream::begin(o.w, head, "entries")?;
            for e in entries.by_ref() {
                let e = e?;
                let mut m = Map::new();
                o.c.json_insert(&mut m, "key", &e.key);
                m.insert("seqno".into(), json!(e.seqno));
                value_fields(&mut m, o.c, &e.value);
                stream.item(o.w, &Value::Object(m))?;
            }
            let end = worst(entries.end(), model_damage);
            let (end_v, damage) = end_json(&end);
            let mut tail = Map::new();
            tail.insert("end".into(), end_v);
            tail.insert("damage".into(), damage);
            stream.end(o.w, tail)?;
            return finish(file, &end);
        }
        summary_text(o, &d)?;
        writeln!(o.w, "entries:")?;
        let mut n = 0u64;
        for e in entries.by_ref() {
            let e = e?;
            o.w.write_all(&entry_line(o.c, &e.key, e.seqno, &e.value))?;
            n += 1;
        }
        writeln!(o.w, "{n} entries read")?;
        worst(entries.end(), model_damage)
    } else {
        let end = model_damage.unwrap_or(FileEnd::Clean);
        if o.json {
            let mut m = summary_json(o.c, &d);
            let (end_v, damage) = end_json(&end);
            m.insert("end".into(), end_v);
            m.insert("damage".into(), damage);
            writeln!(o.w, "{}", Value::Object(m))?;
            return finish(file, &end);
        }
        summary_text(o, &d)?;
        end
    };
    writeln!(o.w, "{}", end_text(&end))?;
    finish(file, &end)
}

/// How the entries ended, unless they were read to the end and the model section is
/// damaged: then the model section's damage.
fn worst(entries_end: Option<&FileEnd>, model_damage: Option<FileEnd>) -> FileEnd {
    match (entries_end, model_damage) {
        (Some(end), _) if end.stopped_early() => end.clone(),
        (_, Some(model)) => model,
        (end, None) => end.cloned().unwrap_or(FileEnd::Clean),
    }
}

/// Everything but the entries, as JSON fields.
fn summary_json(c: Codec, d: &SstDump) -> Map<String, Value> {
    let p = &d.properties;
    let s = &p.slot;
    let mut m = Map::new();
    m.insert("file".into(), json!(d.path.display().to_string()));
    m.insert("file_bytes".into(), json!(d.file_bytes));
    m.insert("format_version".into(), json!(d.format_version));
    let sections: Vec<Value> = d
        .sections
        .iter()
        .map(|s| json!({"name": s.name, "offset": s.offset, "len": s.len}))
        .collect();
    m.insert("sections".into(), Value::Array(sections));
    m.insert(
        "properties".into(),
        json!({
            "entries": p.entries, "deletes": p.deletes, "inline_values": p.inline_values,
            "pointers": p.pointers, "key_width": p.key_width, "block_records": p.block_records,
            "blocks": p.blocks, "common_prefix_len": p.common_prefix_len,
            "bloom_bits_per_key": p.bloom_bits_per_key, "raw_key_bytes": p.raw_key_bytes,
            "raw_value_bytes": p.raw_value_bytes, "stored_value_bytes": p.stored_value_bytes,
            "pointer_value_bytes": p.pointer_value_bytes,
            "max_inline_value_len": p.max_inline_value_len,
            "slot": {
                "slot_bytes": s.slot_bytes, "prefix_len": s.prefix_len,
                "head_bytes": s.head_bytes, "len_bytes": s.len_bytes,
                "fixed_rest_len": s.fixed_rest_len, "suffix_bytes": s.suffix_bytes,
                "trailer_bytes": s.trailer_bytes, "trailer_base": s.trailer_base,
                "ref_bytes": s.ref_bytes, "v1_refs": s.v1_refs,
                "end_refs": s.end_refs,
            },
        }),
    );
    m.insert("smallest".into(), Value::Object(key_fields(c, &d.smallest)));
    m.insert("largest".into(), Value::Object(key_fields(c, &d.largest)));
    m.insert(
        "model".into(),
        d.model.as_ref().map_or(Value::Null, model_json),
    );
    let blocks: Vec<Value> = d
        .blocks
        .iter()
        .map(|b| {
            json!({
                "block": b.block, "first_position": b.first_position, "entries": b.entries,
                "data_offset": b.data_offset, "data_bytes": b.data_bytes,
                "block_codec": codec_name(b.block_codec),
                "block_packing": if b.block_codec == 0 { "raw" } else if b.block_keys_inline { "keys-inline" } else { "columns" },
                "block_raw_bytes": b.block_raw_bytes,
                "values_offset": b.values_offset,
                "values_stored_bytes": b.values_stored_bytes,
                "values_raw_bytes": b.values_raw_bytes,
                "values_codec": codec_name(b.values_codec),
                "prefix_len": b.prefix_len,
                "last_key": Value::Object(key_fields(c, &b.last_key)),
            })
        })
        .collect();
    m.insert("blocks".into(), Value::Array(blocks));
    m
}

fn model_json(m: &ModelInfo) -> Value {
    let mut v = json!({"offset": m.offset, "len": m.len, "checksum_ok": m.checksum_ok});
    match &m.decoded {
        Ok(s) => {
            v["kind"] = json!(s.kind.name());
            v["keys"] = json!(s.keys);
            v["segments"] = json!(s.segments);
            v["max_window"] = json!(s.max_window);
            v["error_bound"] = json!(s.error_bound);
            v["memory_bytes"] = json!(s.memory_bytes);
        }
        Err(why) => v["unusable"] = json!(why),
    }
    v
}

/// Everything but the entries, as text.
fn summary_text(o: &mut Out<'_>, d: &SstDump) -> std::io::Result<()> {
    let p = &d.properties;
    let s = &p.slot;
    let w = &mut *o.w;
    writeln!(
        w,
        "sst {}: {} bytes, format {}",
        d.path.display(),
        d.file_bytes,
        d.format_version
    )?;
    writeln!(w, "sections:")?;
    for s in &d.sections {
        writeln!(
            w,
            "  {:<10} offset {:>10}  len {:>10}",
            s.name, s.offset, s.len
        )?;
    }
    writeln!(
        w,
        "properties: {} entries ({} inline values, {} pointers, {} deletes)",
        p.entries, p.inline_values, p.pointers, p.deletes
    )?;
    writeln!(
        w,
        "  keys: width {}, common prefix {}, {} raw bytes",
        p.key_width, p.common_prefix_len, p.raw_key_bytes
    )?;
    let longest = p
        .max_inline_value_len
        .map_or_else(|| "not recorded".into(), |l| l.to_string());
    writeln!(
        w,
        "  inline values: {} raw bytes, {} stored, longest {longest}; values pointed to: {} bytes",
        p.raw_value_bytes, p.stored_value_bytes, p.pointer_value_bytes
    )?;
    writeln!(
        w,
        "  blocks: {} of {} entries; bloom filter: {} bits per key",
        p.blocks, p.block_records, p.bloom_bits_per_key
    )?;
    writeln!(
        w,
        "  slot: {} bytes (prefix {}, head {}, length {}, fixed rest {}, suffix offset {}, \
         trailer {} from base {}, reference {}{})",
        s.slot_bytes,
        s.prefix_len,
        s.head_bytes,
        s.len_bytes,
        s.fixed_rest_len,
        s.suffix_bytes,
        s.trailer_bytes,
        s.trailer_base,
        s.ref_bytes,
        if s.v1_refs {
            ", format-1 references"
        } else if s.end_refs {
            ", value ends"
        } else {
            ""
        }
    )?;
    let mut line = b"key range: ".to_vec();
    key_text(&mut line, o.c, &d.smallest);
    line.extend_from_slice(b" .. ");
    key_text(&mut line, o.c, &d.largest);
    line.push(b'\n');
    w.write_all(&line)?;
    match &d.model {
        None => writeln!(w, "model: none (lookups take the fence path)")?,
        Some(m) => {
            let what = match &m.decoded {
                Ok(s) => format!(
                    "{}, {} keys, {} segments, error bound {}, max window {}, {} bytes in memory",
                    s.kind.name(),
                    s.keys,
                    s.segments,
                    s.error_bound
                        .map_or_else(|| "none".to_string(), |e| e.to_string()),
                    s.max_window,
                    s.memory_bytes
                ),
                Err(why) => format!("unusable ({why}); lookups take the fence path"),
            };
            writeln!(
                w,
                "model: {what} (section at offset {}, {} bytes)",
                m.offset, m.len
            )?;
        }
    }
    writeln!(w, "blocks:")?;
    for b in &d.blocks {
        let mut line = format!(
            "  block {}: entries {}..{}, data at {} ({} stored, {} raw, {}), values at {} ({} \
             stored, {} raw, {}), prefix {}, last key ",
            b.block,
            b.first_position,
            b.first_position + b.entries,
            b.data_offset,
            b.data_bytes,
            b.block_raw_bytes,
            codec_name(b.block_codec),
            b.values_offset,
            b.values_stored_bytes,
            b.values_raw_bytes,
            codec_name(b.values_codec),
            b.prefix_len
        )
        .into_bytes();
        key_text(&mut line, o.c, &b.last_key);
        line.push(b'\n');
        w.write_all(&line)?;
    }
    Ok(())
}
