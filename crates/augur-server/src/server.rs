//! The server's life: listen, accept clients (refusing those past `maxclients`), sync once
//! a second while the sync policy is `everysec`, sample the instantaneous rates ten times a
//! second (`INFO stats`), and stop gracefully on SIGTERM, SIGINT or `SHUTDOWN`: stop
//! accepting, let every session finish the batch it is running, then (unless `SHUTDOWN
//! NOSAVE`) flush the memtable into a table, and close the database.

use crate::commands::Shutdown;
use crate::config::SyncPolicy;
use crate::session;
use crate::state::{ClientInfo, Counters, Server};
use parking_lot::Mutex;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;

/// How long sessions get to finish their batches at shutdown.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(30);

/// Connections the kernel queues before they are accepted: Redis's `tcp-backlog` default
/// (the kernel caps it at `net.core.somaxconn`). A burst of connects beyond it waits for
/// the client's SYN retransmission (a second or more), so it is not the kernel's minimum.
pub const LISTEN_BACKLOG: u32 = 511;

/// How long the accept loop waits after a failed accept (out of file descriptors or
/// memory): the failure repeats at once otherwise, and the loop would spin.
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(20);

/// A listening socket on `addr` with Redis's options: `SO_REUSEADDR` (a restart binds the
/// port while old connections linger in TIME_WAIT) and a backlog of [`LISTEN_BACKLOG`].
/// Call it inside the Tokio runtime.
///
/// # Errors
/// The socket's error: the address is taken or not ours, or no runtime is running.
pub fn listen(addr: std::net::SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}

/// Runs the server on `listener` until it is asked to stop; returns once the database is
/// closed. `ready` is called with the listening address once clients can connect.
///
/// # Errors
/// The database's error when the final flush or close fails.
pub async fn run(server: Arc<Server>, listener: TcpListener) -> augur::Result<()> {
    let addr = listener
        .local_addr()
        .map_err(|e| augur::Error::io("reading the address", e))?;
    server.set_port(addr.port());
    let (stop_tx, stop_rx) = watch::channel(false);
    let (shutdown_tx, mut shutdown_rx) = mpsc::unbounded_channel::<Shutdown>();
    // Both run whatever the policy: `CONFIG SET appendfsync` may switch to `everysec`.
    let syncer = tokio::spawn(sync_every_second(server.clone(), stop_rx.clone()));
    let sampler = tokio::spawn(sample_periodically(server.clone(), stop_rx.clone()));
    let mut sessions = JoinSet::new();
    let limit_logged = Mutex::new(None::<Instant>);
    let accept_error_logged = Mutex::new(None::<Instant>);
    // Registered once, before the first accept: a signal that arrives between two turns of
    // the loop is not lost (a handler created per turn missed it).
    let mut terminate = std::pin::pin!(terminate_signal());
    let how = loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok(accepted) => accepted,
                    Err(e) => {
                        accept_failed(&e, &accept_error_logged).await;
                        continue;
                    }
                };
                if server.connected_clients() >= server.settings.maxclients() {
                    refuse(&server, stream, &limit_logged).await;
                    continue;
                }
                let _ = stream.set_nodelay(true);
                let local = stream.local_addr().unwrap_or(addr);
                let info = Arc::new(ClientInfo::new(server.new_client_id(), peer, local));
                Counters::add(&server.counters.connections, 1);
                server.clients.lock().insert(info.id, info.clone());
                let (server, stop, shutdown_tx) =
                    (server.clone(), stop_rx.clone(), shutdown_tx.clone());
                sessions.spawn(async move {
                    let id = info.id;
                    let asked = session::serve(server.clone(), stream, info, stop).await;
                    server.clients.lock().remove(&id);
                    if let Some(how) = asked {
                        let _ = shutdown_tx.send(how);
                    }
                });
            }
            Some(how) = shutdown_rx.recv() => {
                log::info!("SHUTDOWN received ({how:?})");
                break how;
            }
            _ = &mut terminate => {
                log::info!("signal received: shutting down");
                break Shutdown::Save;
            }
            Some(_) = sessions.join_next(), if !sessions.is_empty() => {}
        }
    };
    drop(listener);
    let _ = stop_tx.send(true);
    // Sessions waiting for a request (or held by a pause) see the stop when woken.
    server.wake_clients();
    let drained = tokio::time::timeout(DRAIN_TIMEOUT, async {
        while sessions.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        log::warn!("sessions still running after {DRAIN_TIMEOUT:?}: closing anyway");
        sessions.abort_all();
    }
    let _ = syncer.await;
    let _ = sampler.await;
    let closing = server.clone();
    tokio::task::spawn_blocking(move || close(&closing, how))
        .await
        .map_err(|e| augur::Error::io("closing the database", std::io::Error::other(e)))?
}

/// Flushes (unless `NoSave`, or the database is read-only: nothing to save) and closes
/// the database.
fn close(server: &Server, how: Shutdown) -> augur::Result<()> {
    // A replica stops applying first: nothing is written after the close.
    server.repl.stop_link();
    let Some(db) = server.db_slot.take() else {
        log::info!("no database open (a replica's swap failed); shutdown complete");
        return Ok(());
    };
    if how == Shutdown::Save {
        match db.flush() {
            Ok(()) | Err(augur::Error::ReadOnly { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    db.close()?;
    log::info!("database closed; shutdown complete");
    Ok(())
}

/// A failed accept: logged (at most once a minute), then a short pause when it is one that
/// repeats at once (out of file descriptors or memory), so the loop does not spin; the
/// client whose connection failed (reset before accept) needs nothing.
async fn accept_failed(e: &std::io::Error, logged: &Mutex<Option<Instant>>) {
    {
        let mut last = logged.lock();
        if last.is_none_or(|t| t.elapsed() > Duration::from_secs(60)) {
            log::warn!("accepting a connection failed: {e}");
            *last = Some(Instant::now());
        }
    }
    let transient = matches!(
        e.kind(),
        std::io::ErrorKind::ConnectionAborted
            | std::io::ErrorKind::ConnectionReset
            | std::io::ErrorKind::Interrupted
    );
    if !transient {
        tokio::time::sleep(ACCEPT_ERROR_PAUSE).await;
    }
}

/// Refuses a client past `--maxclients` with Redis's error (logged at most once a minute).
async fn refuse(server: &Server, mut stream: TcpStream, logged: &Mutex<Option<Instant>>) {
    Counters::add(&server.counters.rejected_connections, 1);
    {
        let mut last = logged.lock();
        if last.is_none_or(|t| t.elapsed() > Duration::from_secs(60)) {
            log::warn!(
                "client limit reached ({} clients, maxclients): refusing new connections",
                server.settings.maxclients()
            );
            *last = Some(Instant::now());
        }
    }
    let _ = stream
        .write_all(b"-ERR max number of clients reached\r\n")
        .await;
    let _ = stream.shutdown().await;
}

/// Sync policy `everysec`: syncs the value log and the WAL once a second when anything was
/// written since the last sync. Under the other policies it does nothing (`always` syncs
/// each write, `no` never), and the writes stay marked for when the policy becomes
/// `everysec`.
async fn sync_every_second(server: Arc<Server>, mut stop: watch::Receiver<bool>) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.wait_for(|s| *s) => return,
        }
        if server.settings.sync() != SyncPolicy::Everysec {
            continue;
        }
        if server.dirty.swap(false, Ordering::AcqRel) {
            let s = server.clone();
            let synced = tokio::task::spawn_blocking(move || s.db()?.sync()).await;
            if let Ok(Err(e)) = synced {
                log::error!("the once-a-second sync failed: {e}");
            }
        }
    }
}

/// Samples the counters behind `INFO stats`' instantaneous rates every 100 ms (Redis's
/// period), and starts the next second of the recent buffer maxima every second.
async fn sample_periodically(server: Arc<Server>, mut stop: watch::Receiver<bool>) {
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut ticks: u64 = 0;
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.wait_for(|s| *s) => return,
        }
        let c = &server.counters;
        let read = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
        server.rates.sample(
            Instant::now(),
            [
                read(&c.commands),
                read(&c.input_bytes),
                read(&c.output_bytes),
            ],
        );
        ticks += 1;
        if ticks.is_multiple_of(10) {
            server.recent.next_second();
        }
    }
}

/// Resolves on SIGTERM or SIGINT. The handlers are installed when this is called, not
/// when the future is first polled: a signal that arrives between the two is not lost.
fn terminate_signal() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let streams = (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        );
        async move {
            let (Ok(mut term), Ok(mut int)) = streams else {
                return std::future::pending().await;
            };
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
        }
    }
    #[cfg(not(unix))]
    {
        async {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
