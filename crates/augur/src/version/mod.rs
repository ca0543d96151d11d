//! Versions: which SSTables make up the tree at each moment, and the manifest that records
//! every change durably.

mod edit;
pub mod guards;
mod level_model;
mod manifest;
mod runs;
mod segment_set;
mod set;
mod style;
mod table_file;
#[allow(clippy::module_inception)]
mod version;

pub use edit::{FileMeta, VersionEdit};
pub use level_model::{LevelModel, LevelModels};
pub(crate) use manifest::{write_current, write_manifest_file};
pub use segment_set::SegmentSet;
pub use set::{RecoveredState, VersionListener, VersionSet};
pub use style::CompactionStyle;
pub use table_file::TableFile;
pub use version::Version;
