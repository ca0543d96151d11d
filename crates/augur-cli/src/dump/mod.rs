//! `augur dump sst|manifest|wal|vlog FILE`: what one database file holds, as RocksDB's
//! `sst_dump` and `ldb` show it, printed from the engine's `augur::inspect`.
//!
//! A dump reads one file, needs no `--db`, takes no lock and writes nothing, so it works on a
//! database another process has open. Text by default (keys and values raw, or hexadecimal
//! with `--hex`); `--json` prints one JSON object. Entries stream: `dump sst --keys` and
//! `dump vlog` print each entry as it is read, the JSON object too, so a large file needs no
//! more memory than one entry.
//!
//! A file that reads only up to some offset (a torn tail, a damaged record, entry or block)
//! prints everything before it, then a line `stopped at offset N: ...` saying where and why
//! (with `--json`, a `damage` object, `null` otherwise), and exits with status 2 and the same
//! words on stderr. A file that cannot be read at all (a damaged header or footer) exits
//! with status 2 too (with `--json`, an object holding only `file` and `damage`). Zeros past
//! a WAL's last record (its preallocated space, while its database is open) are no damage.
//! A reader that closes the pipe (`augur dump ... | head`) ends the dump quietly.

mod manifest;
mod sst;
mod vlog;
mod wal;

use crate::codec::Codec;
use crate::error::CliError;
use crate::JsonFlag;
use augur::inspect::{EntryKind, FileEnd, KeyVersion, ValueInfo};
use clap::{Args, Subcommand};
use serde_json::{json, Map, Value};
use std::io::{BufWriter, ErrorKind, Write};
use std::path::{Path, PathBuf};

/// Arguments of `dump`.
#[derive(Args, Debug)]
pub struct DumpArgs {
    #[command(subcommand)]
    what: DumpCommand,
}

/// The file types `dump` reads.
#[derive(Subcommand, Debug)]
enum DumpCommand {
    /// An SSTable: format version, footer sections, properties, slot layout, key range,
    /// learned index, and each data block's sizes; with --keys every entry (each block
    /// checked against its checksum).
    Sst {
        /// The table file (`NNNNNN.sst`).
        file: PathBuf,
        /// Print every entry: key, seqno, kind, value length or pointer.
        #[arg(long)]
        keys: bool,
        /// Print inline values too (implies --keys).
        #[arg(long)]
        values: bool,
        #[command(flatten)]
        out: JsonFlag,
    },
    /// A manifest (or, for a database directory, the one its CURRENT names): every version
    /// edit with its offset, and how the log ends.
    Manifest {
        /// A manifest file, or a database directory.
        path: PathBuf,
        #[command(flatten)]
        out: JsonFlag,
    },
    /// A write-ahead log: every record with its offset and first seqno, each entry's kind,
    /// key and value length, and where a torn or damaged tail begins.
    Wal {
        /// The WAL file (`NNNNNN.wal`).
        file: PathBuf,
        /// Print inline values too.
        #[arg(long)]
        values: bool,
        #[command(flatten)]
        out: JsonFlag,
    },
    /// A value-log segment: header, entry count and bytes, and where a torn or damaged entry
    /// stops the walk; with --keys every entry's offset, key and lengths; with the global
    /// --db DIR, the segment's garbage by that database's manifest.
    Vlog {
        /// The segment file (`NNNNNN.vlog`).
        file: PathBuf,
        /// Print every entry: offset, key, value length, stored length and codec.
        #[arg(long)]
        keys: bool,
        #[command(flatten)]
        out: JsonFlag,
    },
}

/// Why a dump did not finish.
enum Fail {
    /// The dump failed: damage, or a file it could not read.
    Cli(CliError),
    /// Writing to stdout failed.
    Output(std::io::Error),
}

impl From<std::io::Error> for Fail {
    fn from(e: std::io::Error) -> Self {
        Fail::Output(e)
    }
}

impl From<CliError> for Fail {
    fn from(e: CliError) -> Self {
        Fail::Cli(e)
    }
}

impl From<augur::Error> for Fail {
    fn from(e: augur::Error) -> Self {
        Fail::Cli(e.into())
    }
}

/// Where a dump prints, and how.
struct Out<'a> {
    w: &'a mut dyn Write,
    c: Codec,
    json: bool,
}

/// Runs `dump`; `top_json` is the `--json` given before the subcommand, `db` the global
/// `--db` (only `dump vlog` uses it).
pub fn run(args: &DumpArgs, c: Codec, top_json: bool, db: Option<&Path>) -> Result<(), CliError> {
    let stdout = std::io::stdout();
    let mut w = BufWriter::new(stdout.lock());
    let json = |out: &JsonFlag| top_json || out.json;
    let result = match &args.what {
        DumpCommand::Sst {
            file,
            keys,
            values,
            out,
        } => {
            let mut o = Out {
                w: &mut w,
                c,
                json: json(out),
            };
            sst::dump(&mut o, file, *keys || *values, *values)
        }
        DumpCommand::Manifest { path, out } => {
            let mut o = Out {
                w: &mut w,
                c,
                json: json(out),
            };
            manifest::dump(&mut o, path)
        }
        DumpCommand::Wal { file, values, out } => {
            let mut o = Out {
                w: &mut w,
                c,
                json: json(out),
            };
            wal::dump(&mut o, file, *values)
        }
        DumpCommand::Vlog { file, keys, out } => {
            let mut o = Out {
                w: &mut w,
                c,
                json: json(out),
            };
            vlog::dump(&mut o, file, *keys, db)
        }
    };
    // What was read is printed before the failure is reported.
    let flushed = w.flush();
    match (result, flushed) {
        (Err(Fail::Cli(e)), _) => Err(e),
        (Err(Fail::Output(e)), _) | (Ok(()), Err(e)) if e.kind() == ErrorKind::BrokenPipe => Ok(()),
        (Err(Fail::Output(e)), _) | (Ok(()), Err(e)) => {
            Err(CliError::failed(format!("writing to stdout: {e}")))
        }
        (Ok(()), Ok(())) => Ok(()),
    }
}

/// A whole-file failure of `inspect` on `file`: with `--json`, an object holding the file
/// and the damage (a `Corruption`'s offset and reason) is printed first. Exit status 2.
fn unreadable(o: &mut Out<'_>, file: &Path, e: augur::Error) -> Fail {
    if o.json {
        if let augur::Error::Corruption { offset, reason, .. } = &e {
            let v = json!({
                "file": file.display().to_string(),
                "damage": {"kind": "damaged", "offset": offset, "reason": reason},
            });
            if let Err(io) = writeln!(o.w, "{v}") {
                return Fail::Output(io);
            }
        }
    }
    Fail::Cli(e.into())
}

/// The JSON of how reading ended, and of the damage (`null` unless reading stopped early).
fn end_json(end: &FileEnd) -> (Value, Value) {
    match end {
        FileEnd::Clean => (json!({"kind": "clean"}), Value::Null),
        FileEnd::ZeroFilled { offset } => (
            json!({"kind": "zero_filled", "offset": offset}),
            Value::Null,
        ),
        FileEnd::Torn { offset, reason } => {
            let v = json!({"kind": "torn", "offset": offset, "reason": reason});
            (v.clone(), v)
        }
        FileEnd::Damaged { offset, reason } => {
            let v = json!({"kind": "damaged", "offset": offset, "reason": reason});
            (v.clone(), v)
        }
    }
}

/// The text line saying how reading ended.
fn end_text(end: &FileEnd) -> String {
    match end {
        FileEnd::Clean => "end: clean (read to the end of the file)".into(),
        FileEnd::ZeroFilled { offset } => format!(
            "end: zero bytes from offset {offset} to the end of the file (preallocated space, \
             not damage)"
        ),
        FileEnd::Torn { offset, reason } => format!(
            "stopped at offset {offset}: torn tail: {reason} (what a crash during an append \
             leaves)"
        ),
        FileEnd::Damaged { offset, reason } => {
            format!("stopped at offset {offset}: damaged: {reason}")
        }
    }
}

/// Exit status 2, with the stop on stderr, when reading `file` stopped early.
fn finish(file: &Path, end: &FileEnd) -> Result<(), Fail> {
    match end {
        FileEnd::Torn { offset, reason } => Err(Fail::Cli(CliError::failed(format!(
            "{}: torn tail at offset {offset}: {reason}",
            file.display()
        )))),
        FileEnd::Damaged { offset, reason } => Err(Fail::Cli(CliError::failed(format!(
            "{}: damaged at offset {offset}: {reason}",
            file.display()
        )))),
        FileEnd::Clean | FileEnd::ZeroFilled { .. } => Ok(()),
    }
}

/// A JSON object streamed to `w`: the fields of `head`, then an array `name` whose items
/// are written one at a time, then the fields of the tail.
struct JsonStream {
    items: u64,
}

impl JsonStream {
    /// Writes `head` (REQUIRES: not empty) without its closing brace, then `,"name":[`.
    fn begin(w: &mut dyn Write, head: Map<String, Value>, name: &str) -> std::io::Result<Self> {
        let text = Value::Object(head).to_string();
        w.write_all(text.strip_suffix('}').unwrap_or(&text).as_bytes())?;
        write!(w, ",{}:[", Value::String(name.into()))?;
        Ok(JsonStream { items: 0 })
    }

    /// Writes one item of the array.
    fn item(&mut self, w: &mut dyn Write, v: &Value) -> std::io::Result<()> {
        if self.items > 0 {
            w.write_all(b",")?;
        }
        self.items += 1;
        write!(w, "{v}")
    }

    /// Closes the array, writes the fields of `tail` and closes the object.
    fn end(self, w: &mut dyn Write, tail: Map<String, Value>) -> std::io::Result<()> {
        w.write_all(b"]")?;
        for (k, v) in tail {
            write!(w, ",{}:{v}", Value::String(k))?;
        }
        writeln!(w, "}}")
    }
}

/// `key`, `seqno` and `kind` of an internal key, as JSON fields.
fn key_fields(c: Codec, k: &KeyVersion) -> Map<String, Value> {
    let mut m = Map::new();
    c.json_insert(&mut m, "key", &k.user_key);
    m.insert("seqno".into(), json!(k.seqno));
    m.insert("kind".into(), json!(k.kind.name()));
    m
}

/// An internal key as text: `KEY @SEQNO KIND`.
fn key_text(line: &mut Vec<u8>, c: Codec, k: &KeyVersion) {
    c.display_into(line, &k.user_key);
    line.extend_from_slice(format!(" @{} {}", k.seqno, k.kind.name()).as_bytes());
}

/// Adds an entry's value to JSON fields: `value_len`, and `expire_at_ms`, `pointer` or
/// `value` where they apply.
fn value_fields(m: &mut Map<String, Value>, c: Codec, v: &ValueInfo) {
    m.insert("kind".into(), json!(v.kind.name()));
    m.insert("value_len".into(), json!(v.len));
    if let Some(at) = v.expire_at_ms {
        m.insert("expire_at_ms".into(), json!(at));
    }
    if let Some(p) = v.pointer {
        m.insert(
            "pointer".into(),
            json!({"segment": p.segment, "offset": p.offset, "len": p.len}),
        );
    }
    if let Some(bytes) = &v.bytes {
        c.json_insert(m, "value", bytes);
    }
}

/// An entry as one text line: `KEY<TAB>@SEQNO<TAB>KIND<TAB>DETAIL[<TAB>VALUE]`.
fn entry_line(c: Codec, key: &[u8], seqno: u64, v: &ValueInfo) -> Vec<u8> {
    let mut line = c.display(key);
    let detail = match (v.kind, v.pointer, v.expire_at_ms) {
        (EntryKind::Delete, ..) => "-".to_string(),
        (_, Some(p), _) => format!("segment {} offset {} len {}", p.segment, p.offset, p.len),
        (_, None, Some(at)) => format!("{} bytes, expires at {at} ms", v.len),
        _ => format!("{} bytes", v.len),
    };
    line.extend_from_slice(format!("\t@{seqno}\t{}\t{detail}", v.kind.name()).as_bytes());
    if let Some(bytes) = &v.bytes {
        line.push(b'\t');
        c.display_into(&mut line, bytes);
    }
    line.push(b'\n');
    line
}
