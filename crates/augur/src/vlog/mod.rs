//! The value log (WiscKey): large values are appended to segmented log files and the LSM
//! stores a [`ValuePointer`] instead of the value.

mod fetch;
mod log;
mod pointer;
mod segment;

pub use log::{ActiveStart, SegmentInfo, ValueLog};
pub use pointer::{SegmentSpan, ValuePointer};
pub use segment::{
    entry_bytes, EntryWalk, SegmentReader, SegmentWriter, StoredValue, ValueRequest,
    WalkEnd, WalkStep, SEGMENT_FORMAT_VERSION, SEGMENT_HEADER_LEN,
};
// Segment file names, for inspection tools.
#[cfg(not(feature = "test-util"))]
pub(crate) use segment::parse_segment_file_name;
// Segment file names, for the tests and fuzz targets outside the crate.
#[cfg(feature = "test-util")]
pub use segment::{parse_segment_file_name, segment_file_name};
