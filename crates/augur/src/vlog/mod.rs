//! The value log (WiscKey): large values are appended to segmented log files and the LSM
//! stores a [`ValuePointer`] instead of the value.

mod fetch;
mod log;
mod pointer;
mod segment;

pub use log::{ActiveStart, SegmentInfo, ValueLog};
pub use pointer::{SegmentSpan, ValuePointer};
pub use segment::{
    entry_bytes, parse_segment_file_name, segment_file_name, SegmentEntry, SegmentReader, SegmentWriter, StoredValue,
    ValueRequest, ValueSink, ENTRY_HEADER_LEN, SEGMENT_FORMAT_VERSION, SEGMENT_HEADER_LEN,
    SEGMENT_MAGIC,
};
