//! The server's life: listen, accept clients (refusing those past `--maxclients`), sync once
//! a second under `--sync everysec`, and stop gracefully on SIGTERM, SIGINT or `SHUTDOWN`:
//! stop accepting, let every session finish the batch it is running, then (unless `SHUTDOWN
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
    let syncer = (server.config.sync == SyncPolicy::Everysec)
        .then(|| tokio::spawn(sync_every_second(server.clone(), stop_rx.clone())));
    let mut sessions = JoinSet::new();
    let limit_logged = Mutex::new(None::<Instant>);
    let how = loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, peer)) = accepted else { continue };
                if server.connected_clients() >= server.config.maxclients {
                    refuse(&server, stream, &limit_logged).await;
                    continue;
                }
                let _ = stream.set_nodelay(true);
                let info = Arc::new(ClientInfo {
                    id: server.new_client_id(),
                    addr: peer,
                    local_addr: stream.local_addr().unwrap_or(addr),
                    connected: Instant::now(),
                    name: Mutex::new(Vec::new()),
                    last_command_ms: Default::default(),
                    last_command: Mutex::new("NULL".into()),
                    query_buffer: Default::default(),
                    resp: 2.into(),
                });
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
            _ = terminate_signal() => {
                log::info!("signal received: shutting down");
                break Shutdown::Save;
            }
            Some(_) = sessions.join_next(), if !sessions.is_empty() => {}
        }
    };
    drop(listener);
    let _ = stop_tx.send(true);
    let drained = tokio::time::timeout(DRAIN_TIMEOUT, async {
        while sessions.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        log::warn!("sessions still running after {DRAIN_TIMEOUT:?}: closing anyway");
        sessions.abort_all();
    }
    if let Some(s) = syncer {
        let _ = s.await;
    }
    let closing = server.clone();
    tokio::task::spawn_blocking(move || close(&closing, how))
        .await
        .map_err(|e| augur::Error::io("closing the database", std::io::Error::other(e)))?
}

/// Flushes (unless `NoSave`, or the database is read-only: nothing to save) and closes
/// the database.
fn close(server: &Server, how: Shutdown) -> augur::Result<()> {
    if how == Shutdown::Save {
        match server.db.flush() {
            Ok(()) | Err(augur::Error::ReadOnly { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    server.db.close()?;
    log::info!("database closed; shutdown complete");
    Ok(())
}

/// Refuses a client past `--maxclients` with Redis's error (logged at most once a minute).
async fn refuse(server: &Server, mut stream: TcpStream, logged: &Mutex<Option<Instant>>) {
    Counters::add(&server.counters.rejected_connections, 1);
    {
        let mut last = logged.lock();
        if last.is_none_or(|t| t.elapsed() > Duration::from_secs(60)) {
            log::warn!(
                "client limit reached ({} clients, --maxclients): refusing new connections",
                server.config.maxclients
            );
            *last = Some(Instant::now());
        }
    }
    let _ = stream
        .write_all(b"-ERR max number of clients reached\r\n")
        .await;
    let _ = stream.shutdown().await;
}

/// `--sync everysec`: syncs the value log and the WAL once a second when anything was
/// written since the last sync.
async fn sync_every_second(server: Arc<Server>, mut stop: watch::Receiver<bool>) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.wait_for(|s| *s) => return,
        }
        if server.dirty.swap(false, Ordering::AcqRel) {
            let s = server.clone();
            let synced = tokio::task::spawn_blocking(move || s.db.sync()).await;
            if let Ok(Err(e)) = synced {
                log::error!("the once-a-second sync failed: {e}");
            }
        }
    }
}

/// Resolves on SIGTERM or SIGINT.
async fn terminate_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let (Ok(mut term), Ok(mut int)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) else {
            return std::future::pending().await;
        };
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
