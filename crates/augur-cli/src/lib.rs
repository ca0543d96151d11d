//! The library half of the `augur` command-line tool: how keys and values given on the
//! command line and in `load --csv` files become bytes ([`codec`], [`csv`]), the SOSD key
//! files `verify --keys` reads in chunks ([`keyfile`]), and the CLI's error type
//! ([`error`]). The binary (`src/main.rs`) uses it; it is a library so that the fuzz targets
//! of `fuzz/` (issue 13) can reach these input decoders.
#![deny(unsafe_code)]

pub mod codec;
pub mod csv;
pub mod error;
pub mod keyfile;
