//! What every front end of Augur shares (the `augur` CLI, the Python package, the coming
//! server; the benchmark harness too): the engine options by name, with the engine's defaults,
//! parsed and validated as clap [`Args`](clap::Args) ([`engine_args`]), and the engine
//! statistics as JSON and as text ([`stats_view`]), so that every front end accepts the same
//! options and shows the same figures under the same names; and the log on stderr the
//! binaries install ([`logger`]).
//!
//! It sits between the engine and the front ends (STYLE.md §4, "a shared options layer"): it
//! uses the engine's public API only, and no front end depends on another, or on the
//! benchmark harness, for these.
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod engine_args;
pub mod logger;
pub mod stats_view;
