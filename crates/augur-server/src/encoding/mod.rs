//! How Redis keys and their values are laid out over the engine's key space (the spec is
//! `docs/server-encoding.md`; this module is its only implementation).
//!
//! - A **user key** is its own engine key, except that a key beginning with byte `0xFF` is
//!   stored as `0xFF 0x00` followed by the rest of the key ([`engine_key`]). The order of
//!   user keys is kept, and every engine key from `0xFF 0x01` on is the server's own
//!   ([`USER_KEYS_END`]): the layout record (`layout.rs`) and hash fields.
//! - A user key's **value** says what the key holds: a string is stored as its bytes, except
//!   that a string beginning with `0xFF` is stored behind `0xFF 0x00`; a hash is a metadata
//!   record `0xFF 0x01 | version u64 BE | fields u64 BE` ([`HashMeta`]). The key's expiry time
//!   is the engine's (`WriteBatch::put_expiring`), on the string or the metadata record.
//! - A **hash field** is the engine key `0xFF 0x02 | key length u32 BE | user key | version
//!   u64 BE | field` ([`field_key`]) with the field's value as its value: a hash's fields are
//!   one key range ([`fields_prefix`]), and those of another version of the key — a hash
//!   that was deleted, overwritten or expired — are garbage that compaction drops
//!   (`filter.rs`).
//!
//! So GET and SET of a string cost one comparison of the key's first byte and one of the
//! value's, and no further engine access.

pub mod filter;
pub mod layout;

use std::borrow::Cow;

/// The first byte of every engine key and value tag the server reserves.
pub const RESERVED: u8 = 0xFF;
/// After [`RESERVED`]: an escaped user key (a key or a string value beginning with 0xFF).
const ESCAPED: u8 = 0x00;
/// After [`RESERVED`] in a value: a hash's metadata record.
const HASH_TAG: u8 = 0x01;
/// Every user key's engine key sorts below this; the server's own keys start here.
pub const USER_KEYS_END: &[u8] = &[RESERVED, 0x01];
/// The key of the layout record (`layout.rs`).
pub const LAYOUT_KEY: &[u8] = &[RESERVED, 0x01];
/// The first bytes of every hash field's engine key.
pub const FIELDS: &[u8] = &[RESERVED, 0x02];
/// A replica's replication position (`replication::encode_position`): its primary's id and
/// the offset applied, written in the same batch as the data it applied. Above
/// [`USER_KEYS_END`], so no walk of user keys meets it.
pub const REPL_STATE_KEY: &[u8] = &[RESERVED, 0x10];
/// Bytes of a hash metadata record.
const HASH_META_BYTES: usize = 2 + 8 + 8;

/// The engine key of `user` (borrowed unless it begins with 0xFF).
#[inline]
pub fn engine_key(user: &[u8]) -> Cow<'_, [u8]> {
    match user.split_first() {
        Some((&RESERVED, rest)) => {
            let mut k = Vec::with_capacity(user.len() + 1);
            k.extend_from_slice(&[RESERVED, ESCAPED]);
            k.extend_from_slice(rest);
            Cow::Owned(k)
        }
        _ => Cow::Borrowed(user),
    }
}

/// The user key an engine key below [`USER_KEYS_END`] stands for; `None` for the server's
/// own keys.
#[inline]
pub fn user_key(engine: &[u8]) -> Option<Cow<'_, [u8]>> {
    match engine {
        [RESERVED, ESCAPED, rest @ ..] => {
            let mut k = Vec::with_capacity(rest.len() + 1);
            k.push(RESERVED);
            k.extend_from_slice(rest);
            Some(Cow::Owned(k))
        }
        [RESERVED, ..] => None,
        _ => Some(Cow::Borrowed(engine)),
    }
}

/// The engine form of a user-key prefix: every user key that begins with `prefix` has an
/// engine key that begins with the result, and no other user key has.
pub fn engine_prefix(prefix: &[u8]) -> Cow<'_, [u8]> {
    engine_key(prefix)
}

/// What a user key holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// A string.
    String(Vec<u8>),
    /// A hash, whose fields are stored apart.
    Hash(HashMeta),
}

impl Value {
    /// Redis's name of the type (`TYPE`, `SCAN TYPE`).
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::String(_) => "string",
            Value::Hash(_) => "hash",
        }
    }
}

/// A hash's metadata record: the version its fields are stored under and how many there
/// are (never 0: an empty hash is no key, as in Redis).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HashMeta {
    /// The version of this incarnation of the hash: unique in the database's life
    /// (`layout::Versions`), so fields of an earlier hash of the same name are never read.
    pub version: u64,
    /// Fields.
    pub len: u64,
}

impl HashMeta {
    /// The stored record.
    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(HASH_META_BYTES);
        v.extend_from_slice(&[RESERVED, HASH_TAG]);
        v.extend_from_slice(&self.version.to_be_bytes());
        v.extend_from_slice(&self.len.to_be_bytes());
        v
    }
}

/// A stored value the server cannot read: damage, or a newer server's type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownValue {
    /// The value's tag (its second byte; `None` when it has none).
    pub tag: Option<u8>,
    /// The value's length.
    pub len: usize,
}

impl std::fmt::Display for UnknownValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.tag {
            Some(tag) => write!(
                f,
                "a stored value of {} bytes has the unknown type tag 0xff 0x{tag:02x} \
                 (damage, or a newer augur-server's type)",
                self.len
            ),
            None => write!(f, "a stored value is a lone type byte 0xff (damage)"),
        }
    }
}

/// The stored form of the string `value`: the bytes themselves, behind `0xFF 0x00` when
/// they begin with 0xFF.
#[inline]
pub fn encode_string(value: &[u8]) -> Vec<u8> {
    if value.first() == Some(&RESERVED) {
        let mut v = Vec::with_capacity(value.len() + 2);
        v.extend_from_slice(&[RESERVED, ESCAPED]);
        v.extend_from_slice(value);
        v
    } else {
        value.to_vec()
    }
}

/// What a stored value is.
///
/// # Errors
///
/// [`UnknownValue`] for a value behind 0xFF that is neither an escaped string nor a
/// well-formed hash record.
#[inline]
pub fn decode(mut stored: Vec<u8>) -> Result<Value, UnknownValue> {
    if stored.first() != Some(&RESERVED) {
        return Ok(Value::String(stored));
    }
    match stored.get(1) {
        Some(&ESCAPED) => {
            stored.drain(..2);
            Ok(Value::String(stored))
        }
        Some(&HASH_TAG) if stored.len() == HASH_META_BYTES => {
            let word = |at: usize| {
                stored
                    .get(at..at + 8)
                    .and_then(|b| <[u8; 8]>::try_from(b).ok())
                    .map_or(0, u64::from_be_bytes)
            };
            Ok(Value::Hash(HashMeta {
                version: word(2),
                len: word(10),
            }))
        }
        tag => Err(UnknownValue {
            tag: tag.copied(),
            len: stored.len(),
        }),
    }
}

/// The type name of a stored value without copying it (`TYPE`, `SCAN TYPE`): `None` for
/// one the server cannot read.
#[inline]
pub fn type_of(stored: &[u8]) -> Option<&'static str> {
    match stored {
        [RESERVED, ESCAPED, ..] => Some("string"),
        [RESERVED, HASH_TAG, ..] if stored.len() == HASH_META_BYTES => Some("hash"),
        [RESERVED, ..] => None,
        _ => Some("string"),
    }
}

/// The first bytes of the engine keys of every field of the hash `user` at `version`.
pub fn fields_prefix(user: &[u8], version: u64) -> Vec<u8> {
    let mut k = Vec::with_capacity(FIELDS.len() + 4 + user.len() + 8);
    k.extend_from_slice(FIELDS);
    // A key longer than u32::MAX bytes cannot arrive (requests are bounded far below).
    let len = u32::try_from(user.len()).unwrap_or(u32::MAX);
    k.extend_from_slice(&len.to_be_bytes());
    k.extend_from_slice(user);
    k.extend_from_slice(&version.to_be_bytes());
    k
}

/// The engine key of `field` of the hash `user` at `version`.
pub fn field_key(user: &[u8], version: u64, field: &[u8]) -> Vec<u8> {
    let mut k = fields_prefix(user, version);
    k.extend_from_slice(field);
    k
}

/// A field's engine key taken apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldKey<'a> {
    /// The hash's user key.
    pub user: &'a [u8],
    /// The hash's version.
    pub version: u64,
    /// The field.
    pub field: &'a [u8],
    /// Bytes of the prefix every field of this hash and version shares.
    pub prefix_bytes: usize,
}

/// Takes a field's engine key apart; `None` for any other key.
pub fn parse_field_key(engine: &[u8]) -> Option<FieldKey<'_>> {
    let rest = engine.strip_prefix(FIELDS)?;
    let len = u32::from_be_bytes(rest.get(..4)?.try_into().ok()?) as usize;
    let user = rest.get(4..4 + len)?;
    let version = u64::from_be_bytes(rest.get(4 + len..12 + len)?.try_into().ok()?);
    let field = rest.get(12 + len..)?;
    Some(FieldKey {
        user,
        version,
        field,
        prefix_bytes: FIELDS.len() + 12 + len,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests;
