//! The `plex` model decoder and builder: see `index_model.rs` for the contract checked.
#![no_main]

#[path = "alloc_bound.rs"]
mod alloc_bound;
#[path = "common.rs"]
#[allow(dead_code)]
mod common;
#[path = "index_model.rs"]
mod index_model;

#[global_allocator]
static ALLOC: alloc_bound::Counting = alloc_bound::Counting;

libfuzzer_sys::fuzz_target!(|data: &[u8]| index_model::run(augur::IndexKind::Plex, data));
