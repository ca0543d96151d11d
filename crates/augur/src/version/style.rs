//! The compaction style of a database (leveled or PebblesDB's fragmented LSM): part of the
//! version, because it decides how a level's files form sorted runs, and recorded in the
//! manifest (tag 10).
//!
//! The style is chosen when a database is created; opening it with the other style fails
//! with `InvalidArgument` (the two layouts keep different invariants at levels >= 1, so there
//! is no silent conversion).

use crate::error::{Error, Result};

/// How levels >= 1 are organized and compacted (`--compaction`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CompactionStyle {
    /// LevelDB: each level >= 1 is one sorted run; compaction rewrites the overlapping files
    /// of the next level.
    #[default]
    Leveled,
    /// PebblesDB's fragmented LSM: guards partition each level >= 1; a guard's files may
    /// overlap; compaction appends fragments to the next level's guards without rewriting
    /// them (only the last level is rewritten).
    Flsm,
}

impl CompactionStyle {
    /// The name used by the CLI and in messages.
    pub fn name(self) -> &'static str {
        match self {
            CompactionStyle::Leveled => "leveled",
            CompactionStyle::Flsm => "flsm",
        }
    }

    /// The manifest code of the style (docs/format/manifest.md, tag 10).
    pub(crate) fn code(self) -> u64 {
        match self {
            CompactionStyle::Leveled => 0,
            CompactionStyle::Flsm => 1,
        }
    }

    /// The style of a manifest code; `None` for an unknown code.
    pub(crate) fn from_code(code: u64) -> Option<Self> {
        match code {
            0 => Some(CompactionStyle::Leveled),
            1 => Some(CompactionStyle::Flsm),
            _ => None,
        }
    }
}

impl std::str::FromStr for CompactionStyle {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        match s {
            "leveled" => Ok(CompactionStyle::Leveled),
            "flsm" => Ok(CompactionStyle::Flsm),
            _ => Err(Error::InvalidArgument(format!(
                "unknown compaction style `{s}` (expected leveled or flsm)"
            ))),
        }
    }
}

impl std::fmt::Display for CompactionStyle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_codes_round_trip() {
        for s in [CompactionStyle::Leveled, CompactionStyle::Flsm] {
            assert_eq!(s.name().parse::<CompactionStyle>().unwrap(), s);
            assert_eq!(CompactionStyle::from_code(s.code()), Some(s));
        }
        assert!("tiered".parse::<CompactionStyle>().is_err());
        assert_eq!(CompactionStyle::from_code(7), None);
    }
}
