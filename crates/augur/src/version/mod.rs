//! Versions: which SSTables make up the tree at each moment, and the manifest that records
//! every change durably.

mod edit;
mod runs;
mod set;
#[allow(clippy::module_inception)]
mod version;

pub use edit::{FileMeta, VersionEdit};
pub use runs::SortedRun;
pub use set::{RecoveredState, VersionListener, VersionSet};
pub use version::{TableFile, Version};
