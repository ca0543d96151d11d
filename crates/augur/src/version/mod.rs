//! Versions: which SSTables make up the tree at each moment, and the manifest that records
//! every change durably.

mod edit;
mod set;
#[allow(clippy::module_inception)]
mod version;

pub use edit::{FileMeta, VersionEdit};
pub use set::{RecoveredState, VersionListener, VersionSet};
pub use version::{TableFile, Version};
