//! `augur-server`: starts the Redis-protocol server (see the library's docs). Prints one
//! ready line on stdout once clients can connect: `augur-server ready on ADDR`.
#![deny(unsafe_code)]

use augur_server::config::Config;
use augur_server::state::Server;
use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

/// mimalloc, as the CLI uses: every command allocates its arguments and the engine its keys
/// and values; glibc's malloc and free took about 10% of a SET load's CPU.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's `mi_option_purge_delay` (the same index in its v2 and v3 option enums).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// How often freed memory that no later allocation purged is returned ([`purge_freed`]).
const PURGE_INTERVAL: std::time::Duration = std::time::Duration::from_secs(1);

/// Returns freed memory to the OS after 1 ms instead of mimalloc's default (1 s in its v3),
/// as the CLI does (`crates/augur-cli/src/main.rs`, measured there).
#[expect(
    unsafe_code,
    reason = "one FFI call setting a mimalloc option; docs/UNSAFE.md"
)]
fn configure_allocator() {
    // SAFETY: `mi_option_set` stores one of mimalloc's option values; it is called first
    // thing in `main`, before this process starts any other thread.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 1) }
}

/// Purges what was freed and not yet returned to the OS. mimalloc purges a freed range
/// only when a later page is freed after the delay has passed: the buffers of clients that
/// sent large requests and left, freed together, stayed resident while the server went on
/// serving small commands (issue 43: 434 MB after 50 such clients; 193 MB after 20 clients
/// of 8 MiB requests in `tests/connections.rs`, 18 MB before them). Called once a
/// [`PURGE_INTERVAL`]; nearly free when there is nothing to purge.
#[expect(
    unsafe_code,
    reason = "one FFI call asking mimalloc to collect; docs/UNSAFE.md"
)]
fn purge_freed() {
    // SAFETY: `mi_collect` frees the calling thread's empty pages and purges expired freed
    // ranges; it takes no pointer and may be called from any thread at any time.
    unsafe { libmimalloc_sys::mi_collect(false) }
}

/// Calls [`purge_freed`] every [`PURGE_INTERVAL`], for as long as the runtime runs.
async fn purge_periodically() {
    let mut tick = tokio::time::interval(PURGE_INTERVAL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        purge_freed();
    }
}

fn main() -> ExitCode {
    configure_allocator();
    augur_frontend::logger::init(log::Level::Info);
    let config = match Config::from_args(std::env::args()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(config.io_threads)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: starting the runtime: {e}");
            return ExitCode::from(2);
        }
    };
    // The server runs as a task on the runtime's workers, not on this thread: its accept
    // loop then hands each new connection to the worker it runs on (no wake-up of another
    // thread per connection), and keeps up with a burst of connects.
    let served = runtime.block_on(async {
        tokio::spawn(start(config))
            .await
            .unwrap_or_else(|e| Err(format!("the server task failed: {e}")))
    });
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

async fn start(config: Config) -> Result<(), String> {
    let started = std::time::Instant::now();
    let listen = (config.bind, config.port);
    let (server, migrated) = Server::open(config)?;
    if migrated != Default::default() {
        log::info!(
            "migrated a database written before hashes: {} keys moved, {} values escaped \
             (docs/server-encoding.md)",
            migrated.keys,
            migrated.values
        );
    }
    let config = &server.config;
    if let Ok(db) = server.db() {
        for loss in db.wal_losses() {
            log::warn!("--accept-wal-loss: {loss}; its unflushed writes were dropped");
        }
    }
    let listener = augur_server::server::listen(listen.into())
        .map_err(|e| format!("listening on {}:{}: {e}", listen.0, listen.1))?;
    let addr = listener
        .local_addr()
        .map_err(|e| format!("reading the listening address: {e}"))?;
    log::info!(
        "augur-server {} on {addr}: database {} opened in {:.3} s; sync {}, maxclients {}, \
         io-threads {}, auth {}, flush commands {}",
        env!("CARGO_PKG_VERSION"),
        config.db.display(),
        started.elapsed().as_secs_f64(),
        config.sync.name(),
        config.maxclients,
        config.io_threads,
        if config.password.is_some() {
            "on"
        } else {
            "off"
        },
        if config.enable_flush { "on" } else { "off" },
    );
    let server = Arc::new(server);
    augur_server::replication::start(&server);
    let purger = tokio::spawn(purge_periodically());
    println!("augur-server ready on {addr}");
    let _ = std::io::stdout().flush();
    let result = augur_server::server::run(server, listener).await;
    purger.abort();
    result.map_err(|e| format!("shutting down: {e}"))
}
