//! A primary serving one replica, after its `PSYNC` took the connection over from the
//! session (`session.rs`): `+CONTINUE` and the stream from the replica's offset when the
//! backlog still holds it, or `+FULLRESYNC`, a checkpoint of the database sent file by file
//! (`wire.rs` framing, a CRC32C per file), and the stream from the checkpoint's offset.
//! Meanwhile a reader task takes the replica's `REPLCONF ACK <offset>` (the offsets `WAIT`
//! and `INFO`'s `slaveN:` lines show).
//!
//! A replica that falls behind the backlog (its next byte dropped) is disconnected: it
//! reconnects and syncs in full, as Redis drops a replica past its output-buffer limit.

use super::backlog::Gone;
use super::{staging, wire, ReplicaLink, Sync};
use crate::resp::{Decoder, Limits};
use crate::state::{ClientInfo, Server};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufWriter};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::sync::watch;

/// What a replica asked for with `PSYNC` (and announced with `REPLCONF`).
#[derive(Debug, Clone)]
pub struct Request {
    /// The id it holds (`?`: none).
    pub replid: String,
    /// Redis's PSYNC offset: the replica's offset + 1 (-1: none).
    pub offset: i64,
    /// The port it listens on (`REPLCONF listening-port`; 0 when not announced).
    pub listening_port: u16,
    /// The address it announced (`REPLCONF ip-address`; `None`: its connection's).
    pub announced_ip: Option<std::net::IpAddr>,
}

/// Bytes of frames written before the socket is flushed.
const SEND_CHUNK: usize = 1 << 20;

/// How often an idle stream carries a heartbeat.
const PING_PERIOD: Duration = Duration::from_secs(1);

/// Serves the replica on `stream` until it leaves, falls behind, is killed or the server
/// stops. Errors are logged: the replica reconnects.
pub async fn serve(
    server: Arc<Server>,
    stream: TcpStream,
    info: Arc<ClientInfo>,
    request: Request,
    stop: watch::Receiver<bool>,
) {
    let (rd, wr) = stream.into_split();
    let link = Arc::new(ReplicaLink {
        id: info.id,
        ip: request.announced_ip.unwrap_or_else(|| info.addr.ip()),
        port: request.listening_port,
        state: std::sync::atomic::AtomicU8::new(0),
        ack_offset: std::sync::atomic::AtomicU64::new(0),
        last_ack: parking_lot::Mutex::new(Instant::now()),
        getack: tokio::sync::Notify::new(),
    });
    server.repl.add_replica(link.clone());
    let mut acks = tokio::spawn(read_acks(server.clone(), rd, link.clone()));
    let served = tokio::select! {
        r = sync_and_stream(&server, wr, &link, &info, &request, stop) => r,
        _ = &mut acks => Err("the replica closed the connection".to_string()),
    };
    acks.abort();
    server.repl.remove_replica(link.id);
    if let Err(e) = served {
        log::warn!(
            "replica {}:{} (client {}): {e}",
            link.ip,
            link.port,
            link.id
        );
    }
}

async fn sync_and_stream(
    server: &Arc<Server>,
    wr: OwnedWriteHalf,
    link: &Arc<ReplicaLink>,
    info: &ClientInfo,
    request: &Request,
    stop: watch::Receiver<bool>,
) -> Result<(), String> {
    let repl = &server.repl;
    let mut wr = BufWriter::with_capacity(SEND_CHUNK, wr);
    let asked = u64::try_from(request.offset - 1).ok();
    let from = match asked.filter(|&o| repl.can_continue(&request.replid, o)) {
        Some(from) => {
            let line = format!("+CONTINUE {}\r\n", repl.ids().replid);
            wr.write_all(line.as_bytes()).await.map_err(io)?;
            repl.count(Sync::PartialOk);
            log::info!(
                "replica {}:{}: partial resync from offset {from}",
                link.ip,
                link.port
            );
            from
        }
        None => {
            repl.count(Sync::Full);
            if request.replid != "?" {
                repl.count(Sync::PartialErr);
            }
            full_sync(server, &mut wr, link).await?
        }
    };
    wr.flush().await.map_err(io)?;
    link.state.store(2, Ordering::Release);
    stream(server, wr, link, info, from, stop).await
}

fn io(e: std::io::Error) -> String {
    format!("writing to the replica: {e}")
}

/// Removes a checkpoint directory when dropped.
struct Checkpoint(PathBuf);

impl Drop for Checkpoint {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Checkpoints the database, answers `+FULLRESYNC <replid> <offset>` and sends the files;
/// returns the offset the stream continues from.
async fn full_sync(
    server: &Arc<Server>,
    wr: &mut BufWriter<OwnedWriteHalf>,
    link: &ReplicaLink,
) -> Result<u64, String> {
    let repl = &server.repl;
    let dir = staging::checkpoint_path(&server.config.db, link.id);
    let _ = std::fs::remove_dir_all(&dir);
    let guard = Checkpoint(dir.clone());
    let s = server.clone();
    let started = Instant::now();
    let (seqno, files) = tokio::task::spawn_blocking(move || -> Result<_, String> {
        let db = s.db().map_err(|e| e.to_string())?;
        let made = db
            .checkpoint(&dir)
            .map_err(|e| format!("checkpoint: {e}"))?;
        let mut files = Vec::new();
        for entry in std::fs::read_dir(&dir).map_err(|e| format!("listing the checkpoint: {e}"))? {
            let entry = entry.map_err(|e| e.to_string())?;
            let size = entry.metadata().map_err(|e| e.to_string())?.len();
            files.push((entry.file_name().to_string_lossy().into_owned(), size));
        }
        // CURRENT last: a copy is openable only once every other file is there.
        files.sort_by_key(|(name, _)| name == "CURRENT");
        Ok((made.seqno, files))
    })
    .await
    .map_err(|e| format!("the checkpoint task: {e}"))??;
    let offset = repl
        .backlog
        .offset_of_seqno(seqno)
        .filter(|&o| repl.backlog.holds(o))
        .ok_or(
            "the backlog moved past the checkpoint before it was sent (raise repl-backlog-size)",
        )?;
    let replid = repl.ids().replid;
    let total: u64 = files.iter().map(|(_, size)| size).sum();
    log::info!(
        "replica {}:{}: full sync of {} files, {total} bytes, at offset {offset} (checkpoint in {:.3} s)",
        link.ip,
        link.port,
        files.len(),
        started.elapsed().as_secs_f64()
    );
    wr.write_all(format!("+FULLRESYNC {replid} {offset}\r\n").as_bytes())
        .await
        .map_err(io)?;
    wr.write_all(&wire::summary(files.len() as u32, total))
        .await
        .map_err(io)?;
    link.state.store(1, Ordering::Release);
    let delay = test_chunk_delay();
    let mut buf = vec![0u8; SEND_CHUNK];
    for (name, size) in &files {
        wr.write_all(&wire::file_header(name, *size))
            .await
            .map_err(io)?;
        let mut file = tokio::fs::File::open(guard.0.join(name))
            .await
            .map_err(|e| format!("opening {name}: {e}"))?;
        let mut left = *size;
        let mut crc = 0u32;
        while left > 0 {
            let n = usize::try_from(left).unwrap_or(usize::MAX).min(buf.len());
            let chunk = buf.get_mut(..n).unwrap_or_default();
            file.read_exact(chunk)
                .await
                .map_err(|e| format!("reading {name}: {e}"))?;
            crc = crc32c::crc32c_append(crc, chunk);
            wr.write_all(chunk).await.map_err(io)?;
            left -= n as u64;
            if let Some(d) = delay {
                wr.flush().await.map_err(io)?;
                tokio::time::sleep(d).await;
            }
        }
        wr.write_all(&crc.to_be_bytes()).await.map_err(io)?;
    }
    wr.write_all(&wire::end_of_files(files.len() as u32, total))
        .await
        .map_err(io)?;
    log::info!(
        "replica {}:{}: full sync sent in {:.3} s",
        link.ip,
        link.port,
        started.elapsed().as_secs_f64()
    );
    Ok(offset)
}

/// Tests only: `AUGUR_TEST_REPL_CHUNK_DELAY_MS` slows a full sync down (a pause after each
/// chunk of a file), so a test can kill the primary in the middle of one.
fn test_chunk_delay() -> Option<Duration> {
    std::env::var("AUGUR_TEST_REPL_CHUNK_DELAY_MS")
        .ok()?
        .parse::<u64>()
        .ok()
        .map(Duration::from_millis)
}

/// Sends the stream from `from` on: whatever the backlog holds, then waits for more, with
/// a heartbeat once a second and a `GETACK` whenever `WAIT` asks.
async fn stream(
    server: &Arc<Server>,
    mut wr: BufWriter<OwnedWriteHalf>,
    link: &ReplicaLink,
    info: &ClientInfo,
    from: u64,
    mut stop: watch::Receiver<bool>,
) -> Result<(), String> {
    let backlog = &server.repl.backlog;
    let mut next = from;
    let mut last_ping = Instant::now();
    // A `WAIT` asked for an ack: the `GETACK` goes after every frame the backlog holds at
    // that point (those carry the waiting client's writes), never before them — a `GETACK`
    // sent ahead of a frame would be acked short of it, and the replica's next ack would
    // come only with its periodic one, a second later.
    let mut want_ack = false;
    loop {
        let arrived = backlog.arrived.notified();
        tokio::pin!(arrived);
        arrived.as_mut().enable();
        let frames = backlog
            .frames_from(next, SEND_CHUNK)
            .map_err(|Gone| format!("fell behind the backlog at offset {next}: disconnected"))?;
        if !frames.is_empty() {
            for f in &frames {
                wr.write_all(f).await.map_err(io)?;
                next += f.len() as u64;
            }
            if want_ack {
                wr.write_all(&wire::control(wire::GETACK, next))
                    .await
                    .map_err(io)?;
                want_ack = false;
            }
            if last_ping.elapsed() >= PING_PERIOD {
                wr.write_all(&wire::control(wire::PING, backlog.offset()))
                    .await
                    .map_err(io)?;
                last_ping = Instant::now();
            }
            wr.flush().await.map_err(io)?;
            continue;
        }
        if want_ack {
            wr.write_all(&wire::control(wire::GETACK, next))
                .await
                .map_err(io)?;
            wr.flush().await.map_err(io)?;
            want_ack = false;
        }
        tokio::select! {
            () = &mut arrived => {}
            // Frames may have arrived since the check above: look again before asking.
            () = link.getack.notified() => want_ack = true,
            () = tokio::time::sleep(PING_PERIOD.saturating_sub(last_ping.elapsed())) => {
                wr.write_all(&wire::control(wire::PING, next)).await.map_err(io)?;
                wr.flush().await.map_err(io)?;
                last_ping = Instant::now();
            }
            () = info.woken() => {
                if info.is_killed() {
                    return Ok(());
                }
            }
            _ = stop.changed() => {
                if *stop.borrow() {
                    return Ok(());
                }
            }
        }
    }
}

/// Reads the replica's `REPLCONF ACK <offset>` commands until it closes the connection.
async fn read_acks(server: Arc<Server>, mut rd: OwnedReadHalf, link: Arc<ReplicaLink>) {
    let limits = Limits {
        max_bulk_bytes: 1 << 10,
        max_request_bytes: 1 << 12,
        max_args: 8,
    };
    let mut decoder = Decoder::new();
    let mut input: Vec<u8> = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        match rd.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => input.extend_from_slice(chunk.get(..n).unwrap_or_default()),
        }
        loop {
            match decoder.decode(&input, &limits) {
                Ok(Some((words, used))) => {
                    input.drain(..used);
                    if let [cmd, sub, offset] = &words[..] {
                        if cmd.eq_ignore_ascii_case(b"replconf") && sub.eq_ignore_ascii_case(b"ack")
                        {
                            if let Some(o) = std::str::from_utf8(offset)
                                .ok()
                                .and_then(|s| s.parse::<u64>().ok())
                            {
                                link.ack_offset.fetch_max(o, Ordering::AcqRel);
                                *link.last_ack.lock() = Instant::now();
                                server.repl.acked();
                            }
                        }
                    }
                }
                Ok(None) => break,
                Err(_) => return,
            }
        }
    }
}
