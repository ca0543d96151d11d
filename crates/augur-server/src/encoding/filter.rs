//! The compaction filter that drops the fields of hashes that are gone (Kvrocks's
//! `SubKeyFilter`): DEL, an overwrite (SET, RENAME onto the key, a new HSET after DEL) or
//! expiry replaces or removes only a hash's metadata record, and its fields stay behind
//! under the old version until compaction meets them. The engine asks this filter about
//! every field key a compaction reads (`augur::CompactionFilter`); the verdict covers the
//! whole run of fields of that hash and version, so a compaction reads each hash's metadata
//! once.
//!
//! A field is garbage when its hash's user key holds no hash of the field's version now:
//! the key is missing (deleted, expired), holds a string, or holds a hash of another
//! version. That is monotone, as the engine requires: versions are never reused
//! (`layout::Versions`), so a version that lost its metadata never gets it back. A failed
//! read, or a record the server cannot read, keeps the fields.

use super::{decode, engine_key, parse_field_key, Value, FIELDS};
use augur::{CompactionFilter, ReadLatest, Verdict};

/// Drops the fields of hashes that are gone (see the module doc).
#[derive(Debug, Default, Clone, Copy)]
pub struct HashFieldFilter;

impl CompactionFilter for HashFieldFilter {
    fn prefix(&self) -> &[u8] {
        FIELDS
    }

    fn judge(&self, key: &[u8], read: ReadLatest<'_>) -> Verdict {
        let keep = Verdict {
            garbage: false,
            scope_bytes: 0,
        };
        let Some(field) = parse_field_key(key) else {
            return keep;
        };
        let live = match read(&engine_key(field.user)) {
            Ok(None) => false,
            Ok(Some(stored)) => match decode(stored) {
                Ok(Value::Hash(meta)) => meta.version == field.version,
                Ok(Value::String(_)) => false,
                Err(_) => return keep,
            },
            Err(e) => {
                log::warn!("the hash field filter kept a field: reading its hash failed: {e}");
                return keep;
            }
        };
        Verdict {
            garbage: !live,
            scope_bytes: field.prefix_bytes,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::encoding::{encode_string, field_key, HashMeta};

    fn judge(stored: Option<Vec<u8>>, key: &[u8]) -> Verdict {
        let read = move |k: &[u8]| -> augur::Result<Option<Vec<u8>>> {
            assert_eq!(k, b"h");
            Ok(stored.clone())
        };
        HashFieldFilter.judge(key, &read)
    }

    #[test]
    fn fields_of_gone_hashes_are_garbage_and_live_ones_are_not() {
        let key = field_key(b"h", 7, b"f");
        let prefix = key.len() - 1;
        let meta = |version| HashMeta { version, len: 1 }.encode();
        assert_eq!(
            judge(Some(meta(7)), &key),
            Verdict {
                garbage: false,
                scope_bytes: prefix
            }
        );
        for gone in [None, Some(meta(8)), Some(encode_string(b"now a string"))] {
            assert_eq!(
                judge(gone, &key),
                Verdict {
                    garbage: true,
                    scope_bytes: prefix
                }
            );
        }
        // Unreadable records and keys keep the field.
        assert!(!judge(Some(b"\xff\x09".to_vec()), &key).garbage);
        assert!(!judge(None, b"\xff\x02\x00").garbage);
        let failing = |_: &[u8]| -> augur::Result<Option<Vec<u8>>> { Err(augur::Error::Closed) };
        assert!(!HashFieldFilter.judge(&key, &failing).garbage);
    }
}
