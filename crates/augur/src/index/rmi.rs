//! RMI (two-layer recursive model index): not built yet (issue 4). The builder accepts keys and refuses to finish; a
//! model section of this kind decodes as `Corruption`, so readers fall back to fence pointers.

use super::{Index, IndexBuilder, IndexConfig, KeyOrder};
use crate::error::{Error, Result};

/// A builder for this index type.
pub(super) fn builder(_config: &IndexConfig) -> Box<dyn IndexBuilder> {
    Box::new(Pending(KeyOrder::default()))
}

/// The window bound of an index of `config`, when known before training.
pub(super) fn documented_max_window(_config: &IndexConfig) -> Option<u64> {
    None
}

/// Decodes the body of an encoding of this type.
pub(super) fn decode_body(_body: &[u8]) -> std::result::Result<Box<dyn Index>, String> {
    Err("rmi: this index type is not built yet".to_string())
}

/// Accepts keys; cannot finish.
struct Pending(KeyOrder);

impl IndexBuilder for Pending {
    fn add(&mut self, key: u64) -> Result<()> {
        self.0.accept(key).map(|_| ())
    }

    fn finish(self: Box<Self>) -> Result<Box<dyn Index>> {
        Err(Error::InvalidArgument(
            "rmi: this index type is not built yet".to_string(),
        ))
    }
}
