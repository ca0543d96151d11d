//! The encoding's promises, on random keys and values (proptest) and on its edges.

use super::*;
use proptest::prelude::*;

/// Keys and values biased towards the bytes the encoding treats specially.
fn bytes() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(
        prop_oneof![
            Just(0xFFu8),
            Just(0x00),
            Just(0x01),
            Just(0x02),
            any::<u8>()
        ],
        0..12,
    )
}

proptest! {
    /// User keys map to engine keys one to one, in order, all below the server's own keys,
    /// and back.
    #[test]
    fn user_keys_keep_their_order_below_the_reserved_range(a in bytes(), b in bytes()) {
        let (ea, eb) = (engine_key(&a), engine_key(&b));
        prop_assert_eq!(a.cmp(&b), ea.cmp(&eb));
        prop_assert!(ea.as_ref() < USER_KEYS_END);
        let back = user_key(&ea).unwrap();
        prop_assert_eq!(back.as_ref(), a.as_slice());
        // A prefix of user keys is a prefix of their engine keys.
        prop_assert_eq!(b.starts_with(&a), eb.starts_with(&engine_prefix(&a)));
    }

    /// A string reads back as itself, whatever its bytes.
    #[test]
    fn strings_read_back(v in bytes()) {
        let stored = encode_string(&v);
        prop_assert_eq!(type_of(&stored), Some("string"));
        prop_assert_eq!(decode(stored).unwrap(), Value::String(v));
    }

    /// A field key names one hash, version and field, and only that hash and version's
    /// prefix covers it.
    #[test]
    fn field_keys_take_apart(u in bytes(), v in any::<u64>(), f in bytes(),
                             u2 in bytes(), v2 in any::<u64>()) {
        let k = field_key(&u, v, &f);
        let p = parse_field_key(&k).unwrap();
        prop_assert_eq!((p.user, p.version, p.field), (u.as_slice(), v, f.as_slice()));
        let prefix = fields_prefix(&u, v);
        prop_assert_eq!(&k[..p.prefix_bytes], prefix.as_slice());
        prop_assert!(k.as_slice() >= USER_KEYS_END);
        prop_assert_eq!(k.starts_with(&fields_prefix(&u2, v2)), u2 == u && v2 == v);
    }
}

#[test]
fn hash_records_read_back() {
    let meta = HashMeta {
        version: 0x0102_0304_0506_0708,
        len: 3,
    };
    let stored = meta.encode();
    assert_eq!(stored.len(), HASH_META_BYTES);
    assert_eq!(type_of(&stored), Some("hash"));
    assert_eq!(decode(stored).unwrap(), Value::Hash(meta));
}

#[test]
fn only_values_the_server_wrote_behind_0xff_are_read() {
    assert_eq!(encode_string(b"\xffx"), b"\xff\x00\xffx");
    assert_eq!(encode_string(b"x\xff"), b"x\xff");
    assert_eq!(encode_string(b""), b"");
    for bad in [
        &b"\xff"[..],
        b"\xff\x01",
        b"\xff\x01short",
        b"\xff\x02anything",
        b"\xff\xff",
    ] {
        assert!(decode(bad.to_vec()).is_err(), "{bad:?}");
        assert_eq!(type_of(bad), None, "{bad:?}");
    }
    let e = decode(b"\xff\x07abc".to_vec()).unwrap_err();
    assert!(e.to_string().contains("0xff 0x07"), "{e}");
}

#[test]
fn reserved_keys_are_not_user_keys() {
    assert_eq!(engine_key(b"\xff"), &b"\xff\x00"[..]);
    assert_eq!(engine_key(b"abc"), &b"abc"[..]);
    assert!(matches!(engine_key(b"abc"), Cow::Borrowed(_)));
    for internal in [LAYOUT_KEY, FIELDS, b"\xff\x01x", b"\xff\xff"] {
        assert_eq!(user_key(internal), None, "{internal:?}");
    }
    assert_eq!(user_key(b"\xff\x00\xff").unwrap().as_ref(), b"\xff\xff");
    assert_eq!(parse_field_key(b"\xff\x02\x00\x00"), None);
    assert_eq!(parse_field_key(b"\xff\x02\x00\x00\x00\x05ab"), None);
    assert_eq!(parse_field_key(b"plain"), None);
}
