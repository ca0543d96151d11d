//! `augur-server`: starts the Redis-protocol server (see the library's docs). Prints one
//! ready line on stdout once clients can connect: `augur-server ready on ADDR`.

use augur_server::config::Config;
use augur_server::state::Server;
use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

/// mimalloc, as the CLI uses: every command allocates its arguments and the engine its keys
/// and values; glibc's malloc and free took about 10% of a SET load's CPU.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
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
    match runtime.block_on(start(config)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

async fn start(config: Config) -> Result<(), String> {
    let started = std::time::Instant::now();
    let db = config
        .engine
        .open(&config.db, true)
        .map_err(|e| format!("opening {}: {e}", config.db.display()))?;
    for loss in db.wal_losses() {
        log::warn!("--accept-wal-loss: {loss}; its unflushed writes were dropped");
    }
    let listener = tokio::net::TcpListener::bind((config.bind, config.port))
        .await
        .map_err(|e| format!("listening on {}:{}: {e}", config.bind, config.port))?;
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
    let server = Arc::new(Server::new(db, config));
    println!("augur-server ready on {addr}");
    let _ = std::io::stdout().flush();
    augur_server::server::run(server, listener)
        .await
        .map_err(|e| format!("shutting down: {e}"))
}
