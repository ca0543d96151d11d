//! `augur-server`: a Redis-protocol (RESP2) server over one Augur database, so that
//! `redis-cli`, `redis-benchmark` and the Redis client libraries of every language use Augur
//! unchanged, and twemproxy shards it. A thin front end over the engine's public API.

pub mod resp;
