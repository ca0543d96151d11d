//! One client's session: read bytes, parse every complete command in them (a pipeline), run
//! the batch, write the replies, repeat. A command `CLIENT PAUSE` holds stops the batch
//! there: the replies before it are sent and the session waits, holding no thread, until
//! the pause lets the command run. `CLIENT KILL` wakes the session wherever it waits
//! (reading, writing, paused) and it closes the connection; the idle timeout is read while
//! waiting, so `CONFIG SET timeout` applies to clients already idle.
//!
//! Pub/Sub: messages for the client arrive in its mailbox (`pubsub.rs`) from other clients'
//! tasks, which wake the session. They are written after the replies of the batch during
//! which they came, and a session waiting for its client's next request wakes to write
//! them at once. While a subscriber's session writes, the bytes it is writing count
//! against its output buffer limit with those still in its mailbox.
//!
//! Memory: an idle connection holds no buffer. It waits for the socket to become readable
//! with nothing allocated, reads into an input buffer allocated then (and freed again once
//! every command in it ran, or shrunk when a large request left a small remainder), and
//! keeps its reply buffer only while it is small. Ten thousand idle connections so cost
//! their tasks and sockets, not buffers (issue 43: they held 80 KiB each before).
//!
//! Bounds: the input buffer never holds more than `--max-request-bytes` (plus one read)
//! without a complete command, a declared bulk above `--max-bulk-bytes` is refused from its
//! header (`resp::Decoder`, which also keeps its place in a command that arrives in many
//! reads), and a batch runs at most [`MAX_BATCH`] commands before
//! its replies are written. A protocol error gets Redis's `-ERR Protocol error: …` and the
//! connection closes. Batches that may wait on the engine (full scans, SAVE, and under
//! `--sync always` every write, which waits for its fsync) run in `block_in_place`, so they
//! never hold up the runtime's other connections. Other writes try the engine's no-wait
//! write (`Db::try_write`) where they are and move off the I/O thread only when it would
//! wait (a stall or a memtable switch): a thread hand-off costs more than a write.

use crate::commands::{self, Client, Ctx, Shutdown};
use crate::config::SyncPolicy;
use crate::reply::Out;
use crate::resp::{self, Decoder, Limits};
use crate::state::{ClientInfo, Counters, Server};
use bytes::BytesMut;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::sync::watch;

/// Commands run before their replies are written.
pub const MAX_BATCH: usize = 1024;

/// Room made in the input buffer before a read: a read takes at most what the buffer has
/// room for (more when it grew for a large request).
const READ_CHUNK: usize = 16 << 10;

/// A reply buffer above this capacity is freed once written, not kept for the next batch.
const OUT_KEEP_BYTES: usize = 1 << 10;

/// Serves `stream` until the client leaves, a protocol error, an idle timeout, `CLIENT
/// KILL`, or shutdown. Returns the shutdown a `SHUTDOWN` command asked for.
pub async fn serve(
    server: Arc<Server>,
    mut stream: TcpStream,
    info: Arc<ClientInfo>,
    stop: watch::Receiver<bool>,
) -> Option<Shutdown> {
    let limits = Limits {
        max_bulk_bytes: server.config.max_bulk_bytes,
        max_request_bytes: server.config.max_request_bytes,
        max_args: resp::MAX_MULTIBULK_ARGS,
    };
    let mut client = Client::new(info, !server.settings.password_required());
    let mut decoder = Decoder::new();
    let mut input: Vec<u8> = Vec::new();
    let mut out = Out::default();
    'session: loop {
        let (cmds, consumed, error) = parse_batch(&mut decoder, &input, &limits);
        input.drain(..consumed);
        let mut done = 0;
        while done < cmds.len() {
            done += run_batch(&server, &mut client, &mut out, &cmds[done..]);
            if done == cmds.len() || client.close || client.info.is_killed() {
                break;
            }
            // The next command waits for `CLIENT PAUSE` to end: the replies before it go
            // now, as Redis sends them.
            if !send(&server, &mut stream, &client, &mut out).await
                || !wait_unpaused(&server, &client, &cmds[done], &stop).await
            {
                break 'session;
            }
        }
        if client.info.is_killed() {
            break;
        }
        if let Some(e) = &error {
            out.error(&format!("ERR {e}"));
        } else if input.len() > limits.max_request_bytes {
            out.error(&format!(
                "ERR Protocol error: request exceeds --max-request-bytes ({} bytes)",
                limits.max_request_bytes
            ));
        }
        let protocol_error = error.is_some() || input.len() > limits.max_request_bytes;
        if protocol_error {
            Counters::add(&server.counters.protocol_errors, 1);
            server.command_stats.note_error("ERR");
            client.close = true;
        }
        client.info.mailbox.drain_into(&mut out.buf);
        if !send(&server, &mut stream, &client, &mut out).await
            || client.close
            || client.handoff.is_some()
        {
            break;
        }
        if cmds.len() == MAX_BATCH {
            continue; // more complete commands may be waiting in the buffer
        }
        release_spare(&mut input);
        client
            .info
            .query_buffer
            .store(input.len(), Ordering::Relaxed);
        loop {
            match wait_readable(&server, &stream, &client.info, &stop).await {
                Woken::Stop => break 'session,
                Woken::Messages => {
                    client.info.mailbox.drain_into(&mut out.buf);
                    if !send(&server, &mut stream, &client, &mut out).await {
                        break 'session;
                    }
                    continue;
                }
                Woken::Readable => {}
            }
            match read_now(&stream, &mut input) {
                None => break 'session,
                // Woken with nothing to read after all: wait again, holding nothing.
                Some(0) => release_spare(&mut input),
                Some(n) => {
                    Counters::add(&server.counters.input_bytes, n as u64);
                    server.recent.note_input(input.capacity());
                    break;
                }
            }
        }
    }
    if let Some(request) = client.handoff.take() {
        // PSYNC: the connection becomes a replica's stream (`replication::primary`).
        crate::replication::primary::serve(server, stream, client.info.clone(), request, stop)
            .await;
        return None;
    }
    let _ = stream.shutdown().await;
    client.shutdown
}

/// Writes the replies in `out` (none: nothing to do) and empties it; `false` when the
/// connection failed or the client was killed meanwhile. A write that completes at once (the
/// usual case) never registers for a wake-up.
async fn send(server: &Server, stream: &mut TcpStream, client: &Client, out: &mut Out) -> bool {
    if out.buf.is_empty() {
        return true;
    }
    server.recent.note_output(out.buf.len());
    // A subscriber's unwritten bytes count against its output buffer limit (`pubsub.rs`),
    // so they are tracked as each write takes some.
    let subscriber = client.subscriptions.is_some();
    let len = out.buf.len();
    let mut written = 0;
    while written < len {
        if subscriber {
            client.info.mailbox.set_writing(len - written);
        }
        // `write` is cancel-safe: a wake-up that drops it loses no byte.
        let rest = out.buf.get(written..).unwrap_or_default();
        tokio::select! {
            biased;
            n = stream.write(rest) => match n {
                Ok(n) if n > 0 => written += n,
                _ => return false,
            },
            () = client.info.woken() => {
                if client.info.is_killed() {
                    return false;
                }
            }
        }
    }
    if subscriber {
        client.info.mailbox.set_writing(0);
    }
    Counters::add(&server.counters.output_bytes, out.buf.len() as u64);
    if out.buf.capacity() > OUT_KEEP_BYTES {
        out.buf = BytesMut::new();
    } else {
        out.buf.clear();
    }
    true
}

/// Waits while `CLIENT PAUSE` holds the command `words` (until the pause ends, is lifted,
/// or changes so that it no longer holds it); `false` when the client was killed or the
/// server is stopping meanwhile.
async fn wait_unpaused(
    server: &Server,
    client: &Client,
    words: &[Vec<u8>],
    stop: &watch::Receiver<bool>,
) -> bool {
    loop {
        let changed = server.pause.changed();
        tokio::pin!(changed);
        changed.as_mut().enable();
        if client.info.is_killed() || *stop.borrow() {
            return false;
        }
        let Some(until) = commands::held_by_pause(server, client, words) else {
            return true;
        };
        tokio::select! {
            () = &mut changed => {}
            () = tokio::time::sleep_until(until.into()) => {}
            () = client.info.woken() => {}
        }
    }
}

/// Frees the input buffer when every command in it ran, and shrinks it when a large
/// request left a small remainder, so that a connection waiting for its next command
/// holds (almost) nothing.
fn release_spare(input: &mut Vec<u8>) {
    if input.is_empty() {
        *input = Vec::new();
    } else if input.capacity() > 4 * input.len().max(READ_CHUNK) {
        input.shrink_to(2 * input.len().max(READ_CHUNK));
    }
}

/// What ended a wait for the client's next request.
enum Woken {
    /// The socket is readable (bytes or the client's close).
    Readable,
    /// Pub/Sub messages wait in the client's mailbox.
    Messages,
    /// The client stayed idle past the idle timeout, was killed, or the server is stopping.
    Stop,
}

/// Waits until the socket is readable or messages arrive for the client, holding no
/// buffer. One wake-up registration per wait ([`ClientInfo::woken`]) serves every reason
/// to look again: a kill, the server's stop, a new idle timeout (`CONFIG SET timeout`, read
/// again here) and a message each wake the session. A client subscribed to a channel or a
/// pattern is never timed out (Redis exempts Pub/Sub clients too: they wait by design).
async fn wait_readable(
    server: &Server,
    stream: &TcpStream,
    info: &ClientInfo,
    stop: &watch::Receiver<bool>,
) -> Woken {
    let since = tokio::time::Instant::now();
    loop {
        if info.is_killed() || *stop.borrow() {
            return Woken::Stop;
        }
        if !info.mailbox.is_empty() {
            return Woken::Messages;
        }
        let deadline = server
            .settings
            .idle_timeout()
            .filter(|_| !info.is_pubsub())
            .map(|t| since + t);
        let idle = async {
            match deadline {
                Some(d) => tokio::time::sleep_until(d).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            ready = stream.readable() => {
                return if ready.is_ok() { Woken::Readable } else { Woken::Stop };
            }
            () = idle => return Woken::Stop,
            () = info.woken() => {}
        }
    }
}

/// Reads what the socket holds into `input`, making room for [`READ_CHUNK`] bytes first:
/// the bytes read (0 when there was nothing after all), or `None` when the client closed
/// the connection or it failed.
fn read_now(stream: &TcpStream, input: &mut Vec<u8>) -> Option<usize> {
    if input.capacity() - input.len() < READ_CHUNK {
        input.reserve(READ_CHUNK);
    }
    match stream.try_read_buf(input) {
        Ok(0) => None,
        Ok(n) => Some(n),
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Some(0),
        Err(_) => None,
    }
}

/// Parses up to [`MAX_BATCH`] complete commands from the front of `input`: the commands
/// (empty ones skipped), the bytes they took, and the protocol error that stopped parsing.
fn parse_batch(
    decoder: &mut Decoder,
    input: &[u8],
    limits: &Limits,
) -> (Vec<Vec<Vec<u8>>>, usize, Option<String>) {
    let mut cmds = Vec::new();
    let mut consumed = 0;
    while cmds.len() < MAX_BATCH {
        match decoder.decode(input.get(consumed..).unwrap_or_default(), limits) {
            Ok(Some((args, n))) => {
                consumed += n;
                if !args.is_empty() {
                    cmds.push(args);
                }
            }
            Ok(None) => break,
            Err(e) => return (cmds, consumed, Some(e.to_string())),
        }
    }
    (cmds, consumed, None)
}

/// Runs a batch, off the I/O thread when a command of it may wait on the engine: the
/// commands run, fewer than all when `CLIENT PAUSE` holds the next one.
fn run_batch(
    server: &Arc<Server>,
    client: &mut Client,
    out: &mut Out,
    cmds: &[Vec<Vec<u8>>],
) -> usize {
    let mut ctx = Ctx {
        server,
        client,
        pending: None,
    };
    let sync_always = server.settings.sync() == SyncPolicy::Always;
    if commands::batch_is_blocking(ctx.client, cmds, sync_always) {
        tokio::task::block_in_place(|| commands::execute_batch(&mut ctx, out, cmds))
    } else {
        commands::execute_batch(&mut ctx, out, cmds)
    }
}
