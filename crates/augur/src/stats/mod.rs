//! Statistics shared across the engine. [`breakdown`]: sampled per-step timing of point
//! lookups (Bourbon Figure 8).

pub mod breakdown;
