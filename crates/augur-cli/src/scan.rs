//! `scan`: the pairs of a range streamed to stdout in key order (or its reverse), as
//! `key<TAB>value` lines or as one JSON object `{"count":n,"entries":[...]}`.
//!
//! The output is never held whole, so the command keeps the memory bound the engine keeps
//! (issue 40): pairs are rendered into [`Chunk`]s of about [`CHUNK_BYTES`], and each is
//! written out through a buffered stdout before the next fills.
//!
//! With `--threads N` the range is cut into partitions ([`Db::scan_partitions`], about
//! [`PARTITION_BYTES`] of data each) that N threads scan over one snapshot. Each partition's
//! chunks pass through its own channel of [`CHANNEL_CHUNKS`], and the calling thread prints
//! the channels in output order. Partitions are handed to the threads in that order, and one
//! starts only within a window of [`WINDOW_PER_THREAD`] × N partitions (at most
//! [`MAX_WINDOW`]) from the one being printed ([`Gate`]). So the partition being printed
//! always has a thread, a thread waiting on a full channel or at the gate waits only for
//! partitions printed before its own (no deadlock), and at most the window's channels hold
//! output. Small partitions keep the threads busy: a thread whose partition fits its channel
//! finishes it and takes the next while the printer is still on an earlier one.
//!
//! `--json` prints what serde_json prints for the whole object, `count` first; a keys-only
//! pass over the same snapshot counts the entries before the entries are read.
//!
//! A scan that meets damage prints every entry before it, then fails (exit status 2); a
//! reader that closes the pipe (`augur scan | head`) ends the scan quietly (exit status 0).

use crate::codec::Codec;
use crate::error::{io_err, CliError};
use crate::JsonFlag;
use augur::{Db, KeyRange, ScanOptions, Split};
use clap::Args;
use serde_json::{Map, Value};
use std::io::{BufWriter, ErrorKind, Write};
use std::ops::Bound;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock, PoisonError};

/// Bytes of rendered entries in one chunk (one entry larger than this is a chunk of its own).
const CHUNK_BYTES: usize = 64 << 10;

/// Chunks waiting in one partition's channel (2 MiB): room for the output of a partition of
/// [`PARTITION_BYTES`] of data, so a thread can finish its partition ahead of the printer and
/// take the next.
const CHANNEL_CHUNKS: usize = 32;

/// Bytes of tables and value log per partition of `--threads`: many small partitions rather
/// than one per thread, because only the partition being printed can be scanned to its end
/// before the ones ahead of it are printed.
const PARTITION_BYTES: u64 = 1 << 20;

/// Partitions that may be scanned ahead of the one being printed, per thread...
const WINDOW_PER_THREAD: usize = 2;

/// ... and at most (so their channels hold at most 128 MiB, however many threads).
const MAX_WINDOW: usize = 64;

/// Most `--threads`, and most partitions (the engine's bound).
const MAX_PARTITIONS: usize = 4096;

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
    /// Scan with N threads: the range is cut into partitions (about 1 MiB of data each, at
    /// least N) scanned in parallel over one snapshot; the output is identical to one
    /// thread's, and is printed as it comes.
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

/// Why a scan stopped before the end of its range.
enum Stop {
    /// The scan failed (damage, I/O); the entries before it are printed.
    Failed(CliError),
    /// Writing to stdout failed.
    Output(std::io::Error),
}

impl From<CliError> for Stop {
    fn from(e: CliError) -> Self {
        Stop::Failed(e)
    }
}

impl From<augur::Error> for Stop {
    fn from(e: augur::Error) -> Self {
        Stop::Failed(e.into())
    }
}

/// Rendered entries, back to back, and where each one ends.
struct Chunk {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl Chunk {
    /// An empty chunk with room for [`CHUNK_BYTES`] and one more entry of that size (the
    /// pages stay untouched until written).
    fn new() -> Self {
        Chunk {
            bytes: Vec::with_capacity(2 * CHUNK_BYTES),
            ends: Vec::new(),
        }
    }

    /// Appends one entry: a `key<TAB>value` line, or `,` and a JSON object (the printer drops
    /// the comma before the first entry).
    fn push(&mut self, c: Codec, json: bool, key: &[u8], value: &[u8]) {
        if json {
            let mut m = Map::new();
            c.json_insert(&mut m, "key", key);
            c.json_insert(&mut m, "value", value);
            self.bytes.push(b',');
            // Serialising strings into a `Vec` cannot fail.
            let _ = serde_json::to_writer(&mut self.bytes, &Value::Object(m));
        } else {
            c.display_into(&mut self.bytes, key);
            self.bytes.push(b'\t');
            c.display_into(&mut self.bytes, value);
            self.bytes.push(b'\n');
        }
        self.ends.push(self.bytes.len());
    }

    fn is_full(&self) -> bool {
        self.bytes.len() >= CHUNK_BYTES
    }
}

/// Writes the output: the JSON frame, and the entries up to the limit.
struct Printer<W: Write> {
    out: W,
    json: bool,
    /// Entries still to print (`--limit` less those printed).
    left: usize,
    printed: usize,
}

impl<W: Write> Printer<W> {
    /// The start of the JSON object, announcing `count` entries.
    fn begin(&mut self, count: usize) -> std::io::Result<()> {
        write!(self.out, "{{\"count\":{count},\"entries\":[")
    }

    /// Prints the entries of `chunk` the limit allows; `false` once the limit is reached.
    fn print(&mut self, chunk: &Chunk) -> std::io::Result<bool> {
        let take = chunk.ends.len().min(self.left);
        if let Some(&end) = take.checked_sub(1).and_then(|last| chunk.ends.get(last)) {
            let start = usize::from(self.json && self.printed == 0);
            self.out
                .write_all(chunk.bytes.get(start..end).unwrap_or_default())?;
            self.left -= take;
            self.printed += take;
        }
        Ok(self.left > 0)
    }

    /// The end of the JSON object; flushes.
    fn finish(&mut self) -> std::io::Result<()> {
        if self.json {
            self.out.write_all(b"]}\n")?;
        }
        self.out.flush()
    }
}

/// Renders up to `limit` pairs of `scan` into chunks handed to `emit`, which returns whether
/// it wants more. A failed scan hands over the chunk before the damage first.
fn pump(
    scan: &mut augur::Scan,
    c: Codec,
    json: bool,
    limit: usize,
    mut emit: impl FnMut(Chunk) -> Result<bool, Stop>,
) -> Result<(), Stop> {
    let mut chunk = Chunk::new();
    let mut n = 0usize;
    while n < limit {
        match scan.next() {
            Ok(Some((k, v))) => {
                chunk.push(c, json, k, v);
                n += 1;
                if chunk.is_full() && !emit(std::mem::replace(&mut chunk, Chunk::new()))? {
                    return Ok(());
                }
            }
            Ok(None) => break,
            Err(e) => {
                // The scan's error is the one to report, even if the output failed too.
                let _ = emit(chunk);
                return Err(e.into());
            }
        }
    }
    emit(chunk).map(|_| ())
}

/// Runs `work(i)` for the partitions `0..n` on up to `threads` scoped threads, handing them
/// out in increasing order (a thread takes the next one when its `work` returns, and starts
/// it once `admit(i)` returns true; false ends the thread), while `main` runs on the calling
/// thread; returns `main`'s result once every thread has ended.
fn with_workers<R>(
    threads: usize,
    n: usize,
    admit: impl Fn(usize) -> bool + Sync,
    work: impl Fn(usize) + Sync,
    main: impl FnOnce() -> R,
) -> Result<R, CliError> {
    let next = AtomicUsize::new(0);
    let worker = || loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        if i >= n || !admit(i) {
            return;
        }
        work(i);
    };
    std::thread::scope(|s| {
        let started = (0..threads.min(n))
            .filter(|_| {
                // A thread that cannot start leaves its share to the others.
                std::thread::Builder::new()
                    .name("augur-scan".into())
                    .spawn_scoped(s, worker)
                    .is_ok()
            })
            .count();
        if started == 0 && n > 0 {
            return Err(CliError::failed("scan: could not start a thread"));
        }
        Ok(main())
    })
}

/// Lets a partition start only within a window of partitions from the one being printed,
/// so that the partitions scanned ahead and waiting for the printer stay few.
struct Gate {
    /// The partition being printed, and whether the printer has stopped.
    state: Mutex<(usize, bool)>,
    moved: Condvar,
    window: usize,
}

impl Gate {
    fn new(window: usize) -> Self {
        Gate {
            state: Mutex::new((0, false)),
            moved: Condvar::new(),
            window,
        }
    }

    fn lock(&self) -> MutexGuard<'_, (usize, bool)> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits until partition `i` is within the window; false once the printer stopped.
    fn admit(&self, i: usize) -> bool {
        let mut s = self.lock();
        while !s.1 && i >= s.0 + self.window {
            s = self.moved.wait(s).unwrap_or_else(PoisonError::into_inner);
        }
        !s.1
    }

    /// The printer moves to the next partition.
    fn advance(&self) {
        self.lock().0 += 1;
        self.moved.notify_all();
    }

    /// The printer stopped: no partition starts any more.
    fn stop(&self) {
        self.lock().1 = true;
        self.moved.notify_all();
    }
}

/// What a partition's thread hands to the printer.
enum Msg {
    Chunk(Chunk),
    /// The partition is done (or stopped at the limit).
    End,
    /// The partition's scan failed after the chunks before this message.
    Failed(CliError),
}

/// Streams the partitions `parts` (in output order) on `threads` threads to `printer`.
fn stream_parallel<W: Write>(
    db: &Db,
    parts: &[KeyRange],
    options: &ScanOptions,
    (c, json, limit, threads): (Codec, bool, usize, usize),
    printer: &mut Printer<W>,
) -> Result<(), Stop> {
    let (senders, receivers): (Vec<_>, Vec<_>) = parts
        .iter()
        .map(|_| {
            let (tx, rx) = sync_channel::<Msg>(CHANNEL_CHUNKS);
            (Mutex::new(Some(tx)), rx)
        })
        .unzip();
    let gate = Gate::new((WINDOW_PER_THREAD * threads).min(MAX_WINDOW));
    let work = |i: usize| {
        // Each partition is taken once; its sender ends with its thread's work.
        let tx: Option<SyncSender<Msg>> = senders
            .get(i)
            .and_then(|s| s.lock().ok().and_then(|mut s| s.take()));
        let (Some(tx), Some(range)) = (tx, parts.get(i)) else {
            return;
        };
        let mut scan = db.scan_with(range.clone(), options);
        let sent = |chunk| Ok(tx.send(Msg::Chunk(chunk)).is_ok());
        let last = match pump(&mut scan, c, json, limit, sent) {
            Ok(()) => Msg::End,
            Err(Stop::Failed(e)) => Msg::Failed(e),
            // This sink never fails to write.
            Err(Stop::Output(_)) => return,
        };
        // The printer may have stopped already (limit, closed pipe, an earlier failure).
        let _ = tx.send(last);
    };
    let main = || {
        let r = print_in_order(receivers, printer, &gate);
        // Dropping the receivers wakes threads waiting on a full channel; none starts more.
        gate.stop();
        r
    };
    let admit = |i| gate.admit(i);
    with_workers(threads, parts.len(), admit, work, main).map_err(Stop::Failed)?
}

/// Prints the partitions' chunks, channel after channel, until the limit or a failure.
fn print_in_order<W: Write>(
    receivers: Vec<Receiver<Msg>>,
    printer: &mut Printer<W>,
    gate: &Gate,
) -> Result<(), Stop> {
    for rx in receivers {
        loop {
            match rx.recv() {
                Ok(Msg::Chunk(chunk)) => {
                    if !printer.print(&chunk).map_err(Stop::Output)? {
                        return Ok(());
                    }
                }
                Ok(Msg::End) => {
                    gate.advance();
                    break;
                }
                Ok(Msg::Failed(e)) => return Err(Stop::Failed(e)),
                Err(_) => {
                    return Err(Stop::Failed(CliError::failed(
                        "scan: a partition's thread ended without finishing it",
                    )))
                }
            }
        }
    }
    Ok(())
}

/// The entries a scan of `parts` (in output order) yields, up to `limit`, counted without
/// reading values; with the error that ended it early, if any (the count is then that of the
/// entries before the damage).
fn count(
    db: &Db,
    parts: &[KeyRange],
    options: &ScanOptions,
    threads: usize,
    limit: usize,
) -> Result<(usize, Option<CliError>), CliError> {
    let keys_only = ScanOptions {
        keys_only: true,
        ..options.clone()
    };
    let counts: Vec<OnceLock<(usize, Option<augur::Error>)>> =
        parts.iter().map(|_| OnceLock::new()).collect();
    let work = |i: usize| {
        let (Some(range), Some(slot)) = (parts.get(i), counts.get(i)) else {
            return;
        };
        let mut scan = db.scan_with(range.clone(), &keys_only);
        let (mut n, mut failed) = (0, None);
        while n < limit {
            match scan.next() {
                Ok(Some(_)) => n += 1,
                Ok(None) => break,
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        let _ = slot.set((n, failed));
    };
    with_workers(threads, parts.len(), |_| true, work, || ())?;
    let mut total = 0usize;
    for slot in counts {
        let Some((n, failed)) = slot.into_inner() else {
            return Err(CliError::failed("scan: a partition was not counted"));
        };
        total = total.saturating_add(n);
        if total >= limit {
            return Ok((limit, None));
        }
        if let Some(e) = failed {
            return Ok((total, Some(e.into())));
        }
    }
    Ok((total, None))
}

/// Partitions for a parallel scan with `threads`: one per [`PARTITION_BYTES`] of the
/// database's tables and value log, at least one per thread.
fn partition_count(db: &Db, threads: usize) -> usize {
    let s = db.stats();
    let bytes = s.levels.iter().map(|l| l.bytes).sum::<u64>() + s.value_log_bytes;
    usize::try_from(bytes / PARTITION_BYTES)
        .unwrap_or(MAX_PARTITIONS)
        .clamp(threads, MAX_PARTITIONS)
}

/// `scan`: `key<TAB>value` lines in key order (or reverse), or
/// `{"count":n,"entries":[{"key":..,"value":..},..]}`, streamed (see the module doc).
pub fn scan(db: &Db, c: Codec, a: &ScanArgs, json: bool) -> Result<(), CliError> {
    let bound = |flag: &str, key: &Option<String>| {
        key.as_deref()
            .map(|k| c.decode(&format!("{flag} key"), k))
            .transpose()
    };
    let lo = bound("--from", &a.from)?.map_or(Bound::Unbounded, Bound::Included);
    let hi = bound("--to", &a.to)?.map_or(Bound::Unbounded, Bound::Excluded);
    let range: KeyRange = (lo, hi);
    let limit = a.limit.unwrap_or(usize::MAX);
    if a.threads == 0 || a.threads > MAX_PARTITIONS {
        return Err(CliError::failed(format!(
            "--threads must be between 1 and {MAX_PARTITIONS}"
        )));
    }
    // One snapshot for every partition, and for the count of --json and its entries.
    let options = ScanOptions {
        reverse: a.reverse,
        snapshot: Some(db.snapshot()),
        ..ScanOptions::default()
    };
    // The partitions in output order.
    let parts = if a.threads == 1 {
        vec![range]
    } else {
        let mut parts = db.scan_partitions(range, partition_count(db, a.threads), a.split);
        if a.reverse {
            parts.reverse();
        }
        parts
    };
    let stdout = std::io::stdout();
    let mut printer = Printer {
        out: BufWriter::with_capacity(CHUNK_BYTES, stdout.lock()),
        json,
        left: limit,
        printed: 0,
    };
    let mut damage = None;
    let printed = (|| {
        let mut limit = limit;
        if json {
            let (count, failed) = count(db, &parts, &options, a.threads, limit)?;
            printer.begin(count).map_err(Stop::Output)?;
            // Damage the count met stops the entries there too.
            limit = count;
            printer.left = count;
            damage = failed;
        }
        match parts.as_slice() {
            [range] if a.threads == 1 => {
                let mut scan = db.scan_with(range.clone(), &options);
                pump(&mut scan, c, json, limit, |chunk| {
                    printer.print(&chunk).map_err(Stop::Output)
                })
            }
            _ => {
                let how = (c, json, limit, a.threads);
                stream_parallel(db, &parts, &options, how, &mut printer)
            }
        }
    })();
    let outcome = printed.and_then(|()| match damage.take() {
        Some(e) => Err(Stop::Failed(e)),
        None => printer.finish().map_err(Stop::Output),
    });
    match outcome {
        Ok(()) => Ok(()),
        // The reader has gone (`augur scan | head`): it wanted no more.
        Err(Stop::Output(e)) if e.kind() == ErrorKind::BrokenPipe => Ok(()),
        Err(Stop::Output(e)) => Err(io_err("writing to stdout")(e)),
        Err(Stop::Failed(e)) => {
            // The entries before the failure go out; the JSON object stays open, so the
            // output cannot pass for a whole one. The scan's error is the one to report.
            let _ = printer.out.flush();
            Err(e)
        }
    }
}
