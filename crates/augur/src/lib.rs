//! Augur: an embedded key-value store built on a log-structured merge tree with key-value
//! separation (WiscKey) and learned indexes (Bourbon).
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod checksum;
pub mod coding;
mod error;
pub mod fs;
pub mod key;
mod options;
pub mod sst;
pub mod vlog;
pub mod wal;

pub use error::{Error, Result};
pub use options::Options;
