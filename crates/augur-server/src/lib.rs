//! `augur-server`: a Redis-protocol (RESP2 and RESP3) server over one Augur database, so that
//! `redis-cli`, `redis-benchmark` and the Redis client libraries of every language use Augur
//! unchanged, and twemproxy shards it. A thin front end over the engine's public API: it
//! reaches the engine only through `augur::Db` and the CLI's option layer
//! (`augur-frontend`).
//!
//! Follow a request: `server.rs` accepts the connection, `session.rs` reads and parses
//! (`resp.rs`) a pipeline of commands, `commands/` checks and runs each one against the
//! database (`state.rs` holds what sessions share, `cursor.rs` the `SCAN` cursors), and
//! `reply.rs` encodes the replies. `settings.rs` holds what `CONFIG SET` changes, `pause.rs`
//! `CLIENT PAUSE`, `stats.rs` and `slowlog.rs` what `INFO` and `SLOWLOG` report, `pubsub.rs`
//! Pub/Sub's channels and the messages on their way to subscribers.
//! `replication/` makes a server a primary that streams its committed writes, or a replica
//! of one (`docs/replication.md`).

#![deny(unsafe_code)]

pub mod commands;
pub mod config;
pub mod cursor;
pub mod encoding;
pub mod glob;
pub mod long_double;
pub mod pause;
pub mod pubsub;
pub mod replication;
pub mod reply;
pub mod resp;
pub mod server;
pub mod session;
pub mod settings;
pub mod slowlog;
pub mod state;
pub mod stats;

/// The Redis version whose behaviour the server follows (`INFO`, `HELLO`).
pub const REDIS_VERSION: &str = "7.0.0";
