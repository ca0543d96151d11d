//! The server's log: one line per event an operator needs (start, configuration, client
//! limit reached, shutdown, failures), on stderr, with a UTC timestamp. `AUGUR_LOG=debug`
//! shows more (the engine's own messages at that level included).

use log::{Level, LevelFilter, Metadata, Record};

struct StderrLogger {
    level: Level,
}

impl log::Log for StderrLogger {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.level() <= self.level
    }

    fn log(&self, record: &Record<'_>) {
        if self.enabled(record.metadata()) {
            let secs = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            eprintln!(
                "{secs} {:<5} {}: {}",
                record.level(),
                record.target(),
                record.args()
            );
        }
    }

    fn flush(&self) {}
}

/// Installs the logger (warnings and above from the engine, info and above from the server;
/// `AUGUR_LOG=debug|trace|info|warn|error` sets both).
pub fn init() {
    let level = match std::env::var("AUGUR_LOG").as_deref() {
        Ok("trace") => Level::Trace,
        Ok("debug") => Level::Debug,
        Ok("warn") => Level::Warn,
        Ok("error") => Level::Error,
        _ => Level::Info,
    };
    if log::set_boxed_logger(Box::new(StderrLogger { level })).is_ok() {
        log::set_max_level(LevelFilter::Trace);
    }
}
