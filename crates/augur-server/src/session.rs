//! One client's session: read bytes, parse every complete command in them (a pipeline), run
//! the batch, write the replies, repeat.
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
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;

/// Commands run before their replies are written.
pub const MAX_BATCH: usize = 1024;

/// Bytes read from the socket at once.
const READ_CHUNK: usize = 64 << 10;

/// Serves `stream` until the client leaves, a protocol error, an idle timeout, or shutdown.
/// Returns the shutdown a `SHUTDOWN` command asked for.
pub async fn serve(
    server: Arc<Server>,
    mut stream: TcpStream,
    info: Arc<ClientInfo>,
    mut stop: watch::Receiver<bool>,
) -> Option<Shutdown> {
    let limits = Limits {
        max_bulk_bytes: server.config.max_bulk_bytes,
        max_request_bytes: server.config.max_request_bytes,
        max_args: resp::MAX_MULTIBULK_ARGS,
    };
    let mut client = Client::new(info, server.config.password.is_none());
    let mut decoder = Decoder::new();
    let mut input: Vec<u8> = Vec::with_capacity(16 << 10);
    let mut chunk = vec![0u8; READ_CHUNK];
    let mut out = Out::default();
    loop {
        let (cmds, consumed, error) = parse_batch(&mut decoder, &input, &limits);
        input.drain(..consumed);
        if !cmds.is_empty() {
            run_batch(&server, &mut client, &mut out, &cmds);
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
            client.close = true;
        }
        if !out.buf.is_empty() {
            if stream.write_all(&out.buf).await.is_err() {
                break;
            }
            Counters::add(&server.counters.output_bytes, out.buf.len() as u64);
            out.buf.clear();
            if out.buf.capacity() > 1 << 20 {
                out.buf = BytesMut::with_capacity(64 << 10);
            }
        }
        if client.close {
            break;
        }
        if cmds.len() == MAX_BATCH {
            continue; // more complete commands may be waiting in the buffer
        }
        client
            .info
            .query_buffer
            .store(input.len(), Ordering::Relaxed);
        let read = read_more(&server, &mut stream, &mut chunk, &mut stop);
        match read.await {
            Some(n) => {
                Counters::add(&server.counters.input_bytes, n as u64);
                input.extend_from_slice(&chunk[..n]);
            }
            None => break,
        }
    }
    let _ = stream.shutdown().await;
    client.shutdown
}

/// Waits for bytes: `None` when the client closed, failed, stayed idle past the timeout, or
/// the server is stopping.
async fn read_more(
    server: &Server,
    stream: &mut TcpStream,
    chunk: &mut [u8],
    stop: &mut watch::Receiver<bool>,
) -> Option<usize> {
    let read = async {
        match server.config.idle_timeout {
            Some(t) => tokio::time::timeout(t, stream.read(chunk)).await.ok()?.ok(),
            None => stream.read(chunk).await.ok(),
        }
    };
    tokio::select! {
        n = read => n.filter(|&n| n > 0),
        _ = stop.wait_for(|stopping| *stopping) => None,
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

/// Runs a batch, off the I/O thread when a command of it may wait on the engine.
fn run_batch(server: &Arc<Server>, client: &mut Client, out: &mut Out, cmds: &[Vec<Vec<u8>>]) {
    let mut ctx = Ctx {
        server,
        client,
        pending: None,
    };
    let sync_always = server.config.sync == SyncPolicy::Always;
    if commands::batch_is_blocking(ctx.client, cmds, sync_always) {
        tokio::task::block_in_place(|| commands::execute_batch(&mut ctx, out, cmds));
    } else {
        commands::execute_batch(&mut ctx, out, cmds);
    }
}
