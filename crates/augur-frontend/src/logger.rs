//! The front ends' log on stderr, one line per event with a Unix timestamp, the level and
//! the module: the server's events an operator needs (start, configuration, client limit
//! reached, shutdown, failures), and the engine's own messages (a poisoned database, a torn
//! log tail dropped at open, files removed at open). `AUGUR_LOG=error|warn|info|debug|trace`
//! sets the level; each binary picks its default (the server `info`, the CLI `warn`).

use log::{Level, Metadata, Record};

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

/// Installs the logger at `AUGUR_LOG`'s level, or at `default` when the variable is unset
/// or names no level. A second call (or another logger installed first) changes nothing.
pub fn init(default: Level) {
    let level = level_from(std::env::var("AUGUR_LOG").ok().as_deref(), default);
    if log::set_boxed_logger(Box::new(StderrLogger { level })).is_ok() {
        // The macros skip every event below the level before reaching the logger.
        log::set_max_level(level.to_level_filter());
    }
}

/// The level `AUGUR_LOG`'s value names, or `default`.
fn level_from(value: Option<&str>, default: Level) -> Level {
    match value {
        Some("trace") => Level::Trace,
        Some("debug") => Level::Debug,
        Some("info") => Level::Info,
        Some("warn") => Level::Warn,
        Some("error") => Level::Error,
        _ => default,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_variable_names_the_level_and_anything_else_keeps_the_default() {
        assert_eq!(level_from(Some("debug"), Level::Warn), Level::Debug);
        assert_eq!(level_from(Some("info"), Level::Warn), Level::Info);
        assert_eq!(level_from(Some("error"), Level::Info), Level::Error);
        assert_eq!(level_from(None, Level::Warn), Level::Warn);
        assert_eq!(level_from(Some("loud"), Level::Info), Level::Info);
    }
}
