//! `load` (bulk loading from an SOSD key file or a CSV file) and `verify` (checksums, and
//! optionally that every key of an SOSD file holds the value `load` derives for it; the key
//! file is read in chunks).
//!
//! `load --csv` stops at the first line it cannot load (one that does not parse, or an entry
//! the engine refuses) and names it; every entry before it is committed, so the user knows
//! where to resume.

use crate::codec::{print_json, Codec};
use crate::error::{io_err, CliError};
use crate::JsonFlag;
use augur::{Db, WriteBatch, WriteOptions};
use augur_bench::sosd::{derived_value, key_bytes, read_keys};
use augur_cli::csv;
use augur_cli::keyfile::KeyFile;
use clap::{ArgGroup, Args};
use indicatif::{ProgressBar, ProgressStyle};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use serde_json::json;
use std::path::PathBuf;
use std::time::Instant;

/// Entries per write batch during `load`.
const BATCH: usize = 1000;

const VALUE_DOC: &str = "Each key k of the SOSD file is stored as its 8-byte big-endian \
encoding (so byte order = numeric order). Its value is the first N bytes (--value-size) of \
the SplitMix64 generator seeded with k, each 64-bit output written big-endian: output i \
(i = 1, 2, ...) is mix(k + i * 0x9e3779b97f4a7c15) with mix(z) = { z = (z ^ (z >> 30)) * \
0xbf58476d1ce4e5b9; z = (z ^ (z >> 27)) * 0x94d049bb133111eb; z ^ (z >> 31) } (wrapping). \
Keys are written in an order shuffled with --seed, in batches of 1000.";

/// Arguments of `load`.
#[derive(Args, Debug)]
#[command(group(ArgGroup::new("source").required(true).args(["keys", "csv"])), after_help = VALUE_DOC)]
pub struct LoadArgs {
    /// SOSD binary key file: little-endian u64 count, then that many little-endian u64 keys.
    #[arg(long, value_name = "FILE")]
    pub keys: Option<PathBuf>,
    /// Text file of `key,value` lines (split at the first comma; --hex applies to both).
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Bytes of each derived value (SOSD loads).
    #[arg(long, default_value_t = 64, value_name = "N")]
    pub value_size: usize,
    /// Seed of the shuffle of the SOSD keys.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Make every batch durable (fsync) before the next.
    #[arg(long)]
    pub sync: bool,
    #[command(flatten)]
    pub out: JsonFlag,
}

/// Arguments of `verify`.
#[derive(Args, Debug)]
#[command(after_help = VALUE_DOC)]
pub struct VerifyArgs {
    /// Also check that every key of this SOSD file is present with the value `load` derives.
    #[arg(long, value_name = "FILE")]
    pub keys: Option<PathBuf>,
    /// Value size that was given to `load`.
    #[arg(long, default_value_t = 64, value_name = "N")]
    pub value_size: usize,
    #[command(flatten)]
    pub out: JsonFlag,
}

fn progress(len: u64, json: bool) -> ProgressBar {
    if json {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len);
    if let Ok(style) =
        ProgressStyle::with_template("{bar:40} {pos}/{len} keys  {per_sec}  eta {eta}")
    {
        bar.set_style(style);
    }
    bar
}

/// `load --keys FILE` or `load --csv FILE`.
pub fn load(db: &Db, c: Codec, a: &LoadArgs, json: bool) -> Result<(), CliError> {
    let start = Instant::now();
    let wo = WriteOptions { sync: a.sync };
    let mut loaded = 0u64;
    if let Some(path) = &a.keys {
        let mut keys = read_keys(path)?;
        keys.shuffle(&mut rand::rngs::StdRng::seed_from_u64(a.seed));
        let bar = progress(keys.len() as u64, json);
        for chunk in keys.chunks(BATCH) {
            let mut b = WriteBatch::new();
            for &k in chunk {
                b.put(key_bytes(k), derived_value(k, a.value_size));
            }
            db.write_opt(b, wo)?;
            loaded += chunk.len() as u64;
            bar.inc(chunk.len() as u64);
        }
        bar.finish_and_clear();
    } else if let Some(path) = &a.csv {
        let file =
            std::fs::File::open(path).map_err(io_err(format!("opening {}", path.display())))?;
        let source = path.display().to_string();
        let mut pending: Vec<(usize, csv::Record)> = Vec::with_capacity(BATCH);
        let records = csv::numbered_records(c, &source, std::io::BufReader::new(file));
        // After the last record, an empty "record" commits what is pending.
        for record in records.map(Some).chain([None]) {
            let why = match record {
                Some(Ok(r)) => {
                    pending.push(r);
                    if pending.len() < BATCH {
                        continue;
                    }
                    None
                }
                // Everything before the bad line is committed, and the message says so.
                Some(Err(CliError::Failed(why))) => Some(why),
                Some(Err(e)) => return Err(e),
                None => None,
            };
            let written = write_numbered(db, &pending, wo);
            loaded += written
                .as_ref()
                .map_or_else(|f| f.committed, |()| pending.len()) as u64;
            pending.clear();
            let why = match written {
                Ok(()) => why,
                Err(f) => match f.line {
                    Some(line) => Some(format!("{source} line {line}: {}", f.error)),
                    None => return Err(f.error.into()),
                },
            };
            if let Some(why) = why {
                db.close()?;
                return Err(CliError::Failed(format!(
                    "{why}; {}",
                    committed_before(loaded, a.sync)
                )));
            }
        }
    }
    db.close()?;
    let secs = start.elapsed().as_secs_f64();
    if json {
        print_json(&json!({"loaded": loaded, "seconds": secs}));
    } else {
        println!("loaded {loaded} entries in {secs:.3} s");
    }
    Ok(())
}

/// "the N entries before it were loaded and committed", after a line `load` stopped at.
fn committed_before(entries: u64, sync: bool) -> String {
    let synced = if sync { " (synced)" } else { "" };
    match entries {
        1 => format!("the 1 entry before it was loaded and committed{synced}"),
        n => format!("the {n} entries before it were loaded and committed{synced}"),
    }
}

/// A batch of numbered `load --csv` records that was not (wholly) written.
struct BatchFailure {
    /// Records committed from the front of the batch.
    committed: usize,
    /// The line of the record the engine refused, when it refused one.
    line: Option<usize>,
    error: augur::Error,
}

/// Writes `records` (numbered lines) as one batch. When the engine refuses one of them (it
/// checks a whole batch before writing any of it and answers `InvalidArgument`: a key over
/// 65,535 bytes, a value too large), writes the halves in order instead, down to the refused
/// record: the records before it are committed and its line is named.
fn write_numbered(
    db: &Db,
    records: &[(usize, csv::Record)],
    wo: WriteOptions,
) -> Result<(), BatchFailure> {
    if records.is_empty() {
        return Ok(());
    }
    let mut b = WriteBatch::new();
    for (_, (k, v)) in records {
        b.put(k, v);
    }
    let error = match db.write_opt(b, wo) {
        Ok(()) => return Ok(()),
        Err(e) => e,
    };
    let failed = |error| BatchFailure {
        committed: 0,
        line: None,
        error,
    };
    // An empty batch passes the per-entry checks: if it fails too, the database refuses
    // every write (opened read-only), not one of these records.
    if !matches!(error, augur::Error::InvalidArgument(_))
        || db.write_opt(WriteBatch::new(), wo).is_err()
    {
        return Err(failed(error));
    }
    match records {
        [(line, _)] => Err(BatchFailure {
            line: Some(*line),
            ..failed(error)
        }),
        _ => {
            let (front, back) = records.split_at(records.len() / 2);
            write_numbered(db, front, wo)?;
            write_numbered(db, back, wo).map_err(|f| BatchFailure {
                committed: front.len() + f.committed,
                ..f
            })
        }
    }
}

/// `verify [--keys FILE]`.
pub fn verify(db: &Db, a: &VerifyArgs, json: bool) -> Result<(), CliError> {
    let (table_entries, vlog_entries) = db.verify()?;
    let mut report = json!({
        "table_entries_checked": table_entries,
        "value_log_entries_checked": vlog_entries,
    });
    let mut problems = 0u64;
    let mut hint = None;
    if let Some(path) = &a.keys {
        let mut file = KeyFile::open(path)?;
        let (mut missing, mut wrong, mut checked) = (0u64, 0u64, 0u64);
        let mut wrong_sizes = WrongSizes::default();
        let bar = progress(file.count(), json);
        let mut keys = Vec::new();
        loop {
            file.next_chunk(&mut keys)?;
            if keys.is_empty() {
                break;
            }
            for &k in &keys {
                match db.get(key_bytes(k))? {
                    None => missing += 1,
                    Some(v) if v != derived_value(k, a.value_size) => {
                        wrong += 1;
                        wrong_sizes.note(k, &v);
                    }
                    Some(_) => {}
                }
            }
            checked += keys.len() as u64;
            bar.set_position(checked);
        }
        bar.finish_and_clear();
        problems = missing + wrong;
        report["keys_checked"] = json!(checked);
        report["keys_missing"] = json!(missing);
        report["keys_wrong_value"] = json!(wrong);
        if let Some(size) = wrong_sizes.common_load_size(a.value_size) {
            hint = Some(format!(
                "values are {size} bytes, not {}: pass --value-size {size}",
                a.value_size
            ));
            report["hint"] = json!(hint);
        }
    }
    report["ok"] = json!(problems == 0);
    if json {
        print_json(&report);
    } else {
        println!("table entries checked:     {table_entries}");
        println!("value-log entries checked: {vlog_entries}");
        if let Some(n) = report.get("keys_checked") {
            println!("keys checked:              {n}");
            println!("keys missing:              {}", report["keys_missing"]);
            println!("keys with a wrong value:   {}", report["keys_wrong_value"]);
        }
        if let Some(h) = &hint {
            println!("hint: {h}");
        }
        println!("{}", if problems == 0 { "OK" } else { "FAILED" });
    }
    if problems > 0 {
        let hint = hint.map(|h| format!(" ({h})")).unwrap_or_default();
        return Err(CliError::failed(format!(
            "verification failed: {problems} keys missing or with a wrong value{hint}"
        )));
    }
    Ok(())
}

/// The lengths of the wrong values `verify --keys` met, to tell a damaged database from a
/// `--value-size` that differs from the one `load` used.
#[derive(Default)]
struct WrongSizes {
    /// The one length every wrong value had so far (`None` before the first).
    length: Option<usize>,
    /// Whether every wrong value had one length and was `load`'s value for its key at it.
    uniform: bool,
}

impl WrongSizes {
    fn note(&mut self, key: u64, value: &[u8]) {
        let first = self.length.is_none();
        let same = self.length.is_none_or(|l| l == value.len());
        self.uniform = (first || self.uniform) && same && value == derived_value(key, value.len());
        self.length = Some(value.len());
    }

    /// The value size `load` must have been given, when every wrong value is `load`'s value
    /// at one size other than `asked`.
    fn common_load_size(&self, asked: usize) -> Option<usize> {
        self.length.filter(|&l| self.uniform && l != asked)
    }
}
