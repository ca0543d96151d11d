//! A replica's link to its primary: connect, handshake (`PING`, `REPLCONF listening-port`,
//! `REPLCONF capa augur1`, `PSYNC <replid> <offset+1>`), then either a full sync (files into
//! the staging directory, then the database swapped whole: `staging.rs`) or a continue, and
//! the stream: each batch frame applied to the database with the replica's position in the
//! same engine batch, frames already buffered applied together. `REPLCONF ACK <offset>`
//! goes back once a second and at every `GETACK`. On any failure the link waits a second and
//! starts again (Redis's reconnect); a change of primary (`REPLICAOF`) or a promotion ends it
//! (the generation moves on; no batch is applied after that, `Replication::apply_lock`).

use super::wire::{self, Frame, SyncItem};
use super::{encode_position, staging, LinkState, CAPA};
use crate::config::SyncPolicy;
use crate::encoding::REPL_STATE_KEY;
use crate::state::{open_db, Server};
use augur::{WriteBatch, WriteOptions};
use bytes::Bytes;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::sync::watch;

/// Pause between two attempts to connect.
const RETRY_PAUSE: Duration = Duration::from_secs(1);
/// A stream silent this long (the primary sends a heartbeat every second) is dead.
const STREAM_TIMEOUT: Duration = Duration::from_secs(30);
/// How long the primary may take to answer `PSYNC` (a full sync's checkpoint first).
const PSYNC_TIMEOUT: Duration = Duration::from_secs(600);
/// How often the replica acknowledges its offset.
const ACK_PERIOD: Duration = Duration::from_secs(1);
/// Bytes of buffered frames applied in one engine batch at most.
const APPLY_BYTES: usize = 4 << 20;

/// The link to `host:port` for generation `generation`, until the generation changes.
pub async fn run(
    server: Arc<Server>,
    host: String,
    port: u16,
    generation: u64,
    mut stop: watch::Receiver<u64>,
) {
    log::info!("replicating {host}:{port}");
    loop {
        if *stop.borrow() != generation {
            return;
        }
        let attempt = tokio::select! {
            r = link_once(&server, &host, port, generation) => r,
            _ = stop.changed() => return,
        };
        if *stop.borrow() != generation {
            return;
        }
        if let Err(e) = attempt {
            log::warn!("replication link to {host}:{port}: {e}");
        }
        server.repl.link.set_state(LinkState::Connect);
        tokio::select! {
            () = tokio::time::sleep(RETRY_PAUSE) => {}
            _ = stop.changed() => return,
        }
    }
}

/// Encodes a command as a RESP multibulk.
fn command(words: &[&str]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", words.len()).into_bytes();
    for w in words {
        out.extend_from_slice(format!("${}\r\n{w}\r\n", w.len()).as_bytes());
    }
    out
}

/// Sends a command and reads the primary's one-line answer.
async fn ask(
    rd: &mut BufReader<OwnedReadHalf>,
    wr: &mut OwnedWriteHalf,
    words: &[&str],
    timeout: Duration,
) -> Result<String, String> {
    wr.write_all(&command(words))
        .await
        .map_err(|e| format!("sending {}: {e}", words.join(" ")))?;
    let mut line = String::new();
    let read = tokio::time::timeout(timeout, rd.read_line(&mut line))
        .await
        .map_err(|_| format!("no answer to {} within {timeout:?}", words.join(" ")))?;
    match read {
        Ok(0) => Err("the primary closed the connection".into()),
        Ok(_) => Ok(line.trim_end().to_string()),
        Err(e) => Err(format!("reading the answer to {}: {e}", words.join(" "))),
    }
}

/// One connection: handshake, sync, stream (returns only with an error).
async fn link_once(
    server: &Arc<Server>,
    host: &str,
    port: u16,
    generation: u64,
) -> Result<(), String> {
    let repl = &server.repl;
    repl.link.set_state(LinkState::Connecting);
    let stream = tokio::time::timeout(Duration::from_secs(5), TcpStream::connect((host, port)))
        .await
        .map_err(|_| "connecting timed out".to_string())?
        .map_err(|e| format!("connecting: {e}"))?;
    let _ = stream.set_nodelay(true);
    repl.link.set_state(LinkState::Handshake);
    let (rd, mut wr) = stream.into_split();
    let mut rd = BufReader::with_capacity(1 << 20, rd);
    let short = Duration::from_secs(10);
    let pong = ask(&mut rd, &mut wr, &["PING"], short).await?;
    // Redis's replicas accept -NOAUTH here and fail at REPLCONF; so does this one.
    if !pong.starts_with("+PONG") && !pong.starts_with("-NOAUTH") {
        return Err(format!("PING: {pong}"));
    }
    // What Sentinel should reach it at: `replica-announce-port` / `-ip` when set.
    let announce = server.settings.replica_announce();
    let port_word = match announce.port {
        0 => server.port().to_string(),
        port => port.to_string(),
    };
    let ip_word = announce.ip.clone().unwrap_or_default();
    let port_words = ["REPLCONF", "listening-port", port_word.as_str()];
    let ip_words = ["REPLCONF", "ip-address", ip_word.as_str()];
    let capa_words = ["REPLCONF", "capa", CAPA];
    let mut handshake: Vec<&[&str]> = vec![&port_words];
    if announce.ip.is_some() {
        handshake.push(&ip_words);
    }
    handshake.push(&capa_words);
    for words in handshake {
        let answer = ask(&mut rd, &mut wr, words, short).await?;
        if !answer.starts_with("+OK") {
            return Err(format!("{}: {answer}", words.join(" ")));
        }
    }
    let ids = repl.ids();
    let offset = repl.offset();
    let (replid, psync_offset) = if !repl.has_position() {
        ("?".to_string(), "-1".to_string())
    } else {
        (ids.replid, (offset + 1).to_string())
    };
    let answer = ask(
        &mut rd,
        &mut wr,
        &["PSYNC", &replid, &psync_offset],
        PSYNC_TIMEOUT,
    )
    .await?;
    let words: Vec<&str> = answer.split_whitespace().collect();
    match words[..] {
        ["+FULLRESYNC", id, at] => {
            let at: u64 = at.parse().map_err(|_| format!("bad answer: {answer}"))?;
            repl.link.set_state(LinkState::Sync);
            full_sync(server, &mut rd, id, at, generation).await?;
        }
        ["+CONTINUE", id] => repl.adopt_id(id),
        ["+CONTINUE"] => {}
        _ => return Err(format!("PSYNC: {answer}")),
    }
    repl.link.set_state(LinkState::Connected);
    repl.link.note_io();
    log::info!(
        "replication link to {host}:{port} up at offset {}",
        repl.offset()
    );
    let acked = ack(&mut wr, repl.offset()).await?;
    follow(server, &mut rd, &mut wr, generation, acked).await
}

async fn ack(wr: &mut OwnedWriteHalf, offset: u64) -> Result<Instant, String> {
    wr.write_all(&command(&["REPLCONF", "ACK", &offset.to_string()]))
        .await
        .map_err(|e| format!("sending an ack: {e}"))?;
    Ok(Instant::now())
}

/// Applies the stream until it fails.
async fn follow(
    server: &Arc<Server>,
    rd: &mut BufReader<OwnedReadHalf>,
    wr: &mut OwnedWriteHalf,
    generation: u64,
    mut acked: Instant,
) -> Result<(), String> {
    let repl = &server.repl;
    loop {
        let frame = tokio::time::timeout(STREAM_TIMEOUT, wire::read_frame(rd))
            .await
            .map_err(|_| format!("no bytes from the primary for {STREAM_TIMEOUT:?}"))?
            .map_err(|e| e.to_string())?;
        repl.link.note_io();
        match frame {
            Frame::Ping(at) => {
                repl.link.primary_offset.store(at, Ordering::Relaxed);
            }
            Frame::GetAck(at) => {
                repl.link.primary_offset.fetch_max(at, Ordering::Relaxed);
                acked = ack(wr, repl.offset()).await?;
            }
            Frame::Batch(first) => {
                let mut frames = vec![first];
                let mut bytes = frames.iter().map(Bytes::len).sum::<usize>();
                // Frames already buffered go into the same engine batch.
                while bytes < APPLY_BYTES && buffered_batch(rd.buffer()) {
                    match wire::read_frame(rd).await.map_err(|e| e.to_string())? {
                        Frame::Batch(f) => {
                            bytes += f.len();
                            frames.push(f);
                        }
                        _ => break, // not reached: a buffered batch frame was checked
                    }
                }
                let s = server.clone();
                tokio::task::spawn_blocking(move || apply(&s, frames, generation))
                    .await
                    .map_err(|e| format!("the apply task: {e}"))??;
                let applied = repl.offset();
                repl.link
                    .primary_offset
                    .fetch_max(applied, Ordering::Relaxed);
            }
        }
        if acked.elapsed() >= ACK_PERIOD {
            acked = ack(wr, repl.offset()).await?;
        }
    }
}

/// Whether `buf` starts with a whole batch frame.
fn buffered_batch(buf: &[u8]) -> bool {
    match buf {
        [wire::BATCH, a, b, c, d, ..] => {
            let len = u32::from_be_bytes([*a, *b, *c, *d]) as usize;
            buf.len() >= wire::BATCH_HEADER_BYTES + len
        }
        _ => false,
    }
}

/// Applies `frames` as one engine batch with the position after them, then appends them to
/// the backlog (the offsets of this node follow its primary's byte for byte).
fn apply(server: &Server, frames: Vec<Bytes>, generation: u64) -> Result<(), String> {
    let repl = &server.repl;
    let mut batch = WriteBatch::new();
    for f in &frames {
        wire::decode_batch(f, &mut batch).map_err(|e| e.to_string())?;
    }
    let _applying = repl.apply_lock.lock();
    if repl.generation().0 != generation {
        return Err("the link was stopped".into());
    }
    let end = repl.offset() + frames.iter().map(|f| f.len() as u64).sum::<u64>();
    batch.put(REPL_STATE_KEY, encode_position(&repl.ids().replid, end));
    let db = server.db().map_err(|e| e.to_string())?;
    let sync = server.settings.sync() == SyncPolicy::Always;
    db.write_opt(batch, WriteOptions { sync })
        .map_err(|e| format!("applying a batch: {e}"))?;
    for f in frames {
        repl.backlog.append(f, None);
    }
    repl.backlog.mark(db.snapshot().seqno());
    if !sync {
        server.dirty.store(true, Ordering::Release);
    }
    Ok(())
}

/// Receives a full sync's files into the staging directory, checks each, then swaps the
/// database for the copy (`install`).
async fn full_sync(
    server: &Arc<Server>,
    rd: &mut BufReader<OwnedReadHalf>,
    replid: &str,
    offset: u64,
    generation: u64,
) -> Result<(), String> {
    let link = &server.repl.link;
    let started = Instant::now();
    let staged = staging::fresh_staging(&server.config.db)?;
    link.sync_total_bytes.store(0, Ordering::Relaxed);
    link.sync_read_bytes.store(0, Ordering::Relaxed);
    let mut buf = vec![0u8; 1 << 20];
    let (mut files, mut bytes) = (0u32, 0u64);
    loop {
        let item = tokio::time::timeout(STREAM_TIMEOUT, wire::read_sync_item(rd))
            .await
            .map_err(|_| "the full sync stalled".to_string())?
            .map_err(|e| e.to_string())?;
        link.note_io();
        match item {
            SyncItem::Summary(_, total) => link.sync_total_bytes.store(total, Ordering::Relaxed),
            SyncItem::File(name, size) => {
                receive_file(server, rd, &staged.join(&name), size, &mut buf).await?;
                files += 1;
                bytes += size;
            }
            SyncItem::End(want_files, want_bytes) => {
                if (want_files, want_bytes) != (files, bytes) {
                    return Err(format!(
                        "full sync: {files} files of {bytes} bytes received, {want_files} of \
                         {want_bytes} sent"
                    ));
                }
                break;
            }
        }
    }
    staging::sync_dir(&staged).map_err(|e| format!("syncing {}: {e}", staged.display()))?;
    let s = server.clone();
    let id = replid.to_string();
    tokio::task::spawn_blocking(move || install(&s, &staged, &id, offset, generation))
        .await
        .map_err(|e| format!("the install task: {e}"))??;
    log::info!(
        "full sync done: {files} files, {bytes} bytes in {:.3} s, offset {offset}",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Receives one file of `size` bytes and its CRC32C into `path`, synced.
async fn receive_file(
    server: &Server,
    rd: &mut BufReader<OwnedReadHalf>,
    path: &Path,
    size: u64,
    buf: &mut [u8],
) -> Result<(), String> {
    let mut file =
        std::fs::File::create(path).map_err(|e| format!("creating {}: {e}", path.display()))?;
    let mut left = size;
    let mut crc = 0u32;
    while left > 0 {
        let n = usize::try_from(left).unwrap_or(usize::MAX).min(buf.len());
        let chunk = buf.get_mut(..n).unwrap_or_default();
        tokio::time::timeout(STREAM_TIMEOUT, rd.read_exact(chunk))
            .await
            .map_err(|_| "the full sync stalled".to_string())?
            .map_err(|e| format!("receiving {}: {e}", path.display()))?;
        crc = crc32c::crc32c_append(crc, chunk);
        tokio::task::block_in_place(|| file.write_all(chunk))
            .map_err(|e| format!("writing {}: {e}", path.display()))?;
        left -= n as u64;
        server
            .repl
            .link
            .sync_read_bytes
            .fetch_add(n as u64, Ordering::Relaxed);
        server.repl.link.note_io();
    }
    let want = rd
        .read_u32()
        .await
        .map_err(|e| format!("receiving {}'s checksum: {e}", path.display()))?;
    if want != crc {
        return Err(format!("{}: checksum mismatch", path.display()));
    }
    tokio::task::block_in_place(|| file.sync_all())
        .map_err(|e| format!("syncing {}: {e}", path.display()))
}

/// Swaps the database for the staged copy: writes the position into the copy (so a crash
/// after the swap resumes from it, never from a position the copy carried from its
/// primary), closes the old database once no command holds it, swaps the directories, and
/// opens the copy. Under the apply lock: no batch and no promotion meanwhile.
fn install(
    server: &Server,
    staged: &Path,
    replid: &str,
    offset: u64,
    generation: u64,
) -> Result<(), String> {
    let repl = &server.repl;
    let _applying = repl.apply_lock.lock();
    if repl.generation().0 != generation {
        return Err("the link was stopped".into());
    }
    {
        let (copy, _, _) = open_db(&server.config, staged, repl)?;
        let mut b = WriteBatch::new();
        b.put(REPL_STATE_KEY, encode_position(replid, offset));
        copy.write_opt(b, WriteOptions { sync: true })
            .and_then(|()| copy.close())
            .map_err(|e| format!("writing the position into the copy: {e}"))?;
    }
    let Some(old) = server.db_slot.take() else {
        return Err("no database to swap".into());
    };
    // Commands that loaded the old database finish with it first (arc-swap paid their
    // debts when it left the slot, so the count is exact).
    let deadline = Instant::now() + Duration::from_secs(30);
    while Arc::strong_count(&old) > 1 {
        if Instant::now() >= deadline {
            server.db_slot.restore(old);
            return Err("commands held the old database for 30 s".into());
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    if let Ok(db) = Arc::try_unwrap(old) {
        if let Err(e) = db.close() {
            log::warn!("closing the old database: {e}");
        }
    }
    staging::swap_in(&server.config.db, staged)?;
    let (db, versions, _) = open_db(&server.config, &server.config.db, repl)?;
    server.hash_versions.store(Arc::new(versions));
    repl.set_id(replid);
    repl.backlog.reset(offset, db.snapshot().seqno());
    server.db_slot.put(db);
    server.forget_key_count();
    Ok(())
}
