//! Statistics shared across the engine. [`breakdown`]: sampled per-step timing of point
//! lookups (Bourbon Figure 8); `cpu_time`: the CPU time of a step, for work shares.

pub mod breakdown;
pub(crate) mod cpu_time;
