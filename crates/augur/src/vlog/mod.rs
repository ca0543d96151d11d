//! The value log (WiscKey): large values are appended to segmented log files and the LSM
//! stores a [`ValuePointer`] instead of the value.

mod pointer;

pub use pointer::ValuePointer;
