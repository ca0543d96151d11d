//! Learning policies: when the learned index of an SSTable is trained (Bourbon §4.4).
//!
//! This first part provides the two policies that need no background learner: `never` (the
//! baseline WiscKey path: no model is built and none is used) and `at-build` (the model is
//! trained while the file is written, persisted in its model section, and used by every
//! lookup into the file). `always`, `cost-benefit`, `lazy` and `offline` plug in here.

use crate::error::{Error, Result};

/// When models are learned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum LearningPolicy {
    /// Never learn; lookups take the baseline path (fence pointers + binary search), even in
    /// files that carry a model.
    Never,
    /// Train while flushing or compacting a file and persist the model with it.
    #[default]
    AtBuild,
}

impl LearningPolicy {
    /// Parses the CLI spelling (`never`, `at-build`).
    ///
    /// # Errors
    /// `InvalidArgument` naming the accepted values.
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "never" => Ok(LearningPolicy::Never),
            "at-build" => Ok(LearningPolicy::AtBuild),
            _ => Err(Error::InvalidArgument(format!(
                "unknown learning policy `{s}` (expected never or at-build)"
            ))),
        }
    }

    /// The CLI spelling.
    pub fn name(self) -> &'static str {
        match self {
            LearningPolicy::Never => "never",
            LearningPolicy::AtBuild => "at-build",
        }
    }

    /// Whether lookups use the models present in files.
    pub fn uses_models(self) -> bool {
        self != LearningPolicy::Never
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_roundtrip() {
        for p in [LearningPolicy::Never, LearningPolicy::AtBuild] {
            assert_eq!(LearningPolicy::parse(p.name()).unwrap(), p);
        }
        let e = LearningPolicy::parse("sometimes").unwrap_err().to_string();
        assert!(e.contains("at-build"), "{e}");
    }
}
