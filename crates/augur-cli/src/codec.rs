//! Keys and values between the command line and bytes: UTF-8 by default, hexadecimal with
//! `--hex` (both for input and output).

use crate::error::CliError;
use serde_json::{Map, Value};

/// The text encoding of keys and values chosen by `--hex`.
#[derive(Debug, Clone, Copy)]
pub struct Codec {
    /// Hexadecimal instead of UTF-8.
    pub hex: bool,
}

impl Codec {
    /// Decodes a key or value given on the command line.
    ///
    /// # Errors
    /// Bad hexadecimal (odd length or a non-hex digit), naming `what`.
    pub fn decode(self, what: &str, text: &str) -> Result<Vec<u8>, CliError> {
        if self.hex {
            hex::decode(text)
                .map_err(|e| CliError::failed(format!("bad hex in {what} {text:?}: {e}")))
        } else {
            Ok(text.as_bytes().to_vec())
        }
    }

    /// The bytes to print for a key or value in human output: hex text, or the raw bytes.
    pub fn display(self, bytes: &[u8]) -> Vec<u8> {
        if self.hex {
            hex::encode(bytes).into_bytes()
        } else {
            bytes.to_vec()
        }
    }

    /// Appends the bytes [`Codec::display`] returns to `out`.
    pub fn display_into(self, out: &mut Vec<u8>, bytes: &[u8]) {
        if self.hex {
            out.extend_from_slice(hex::encode(bytes).as_bytes());
        } else {
            out.extend_from_slice(bytes);
        }
    }

    /// Inserts `bytes` into a JSON object as `name` (hex text with `--hex`, else UTF-8
    /// text); bytes that are not valid UTF-8 go to `<name>_hex` instead, so no information
    /// is lost.
    pub fn json_insert(self, obj: &mut Map<String, Value>, name: &str, bytes: &[u8]) {
        if self.hex {
            obj.insert(name.into(), Value::String(hex::encode(bytes)));
            return;
        }
        match std::str::from_utf8(bytes) {
            Ok(s) => obj.insert(name.into(), Value::String(s.into())),
            Err(_) => obj.insert(format!("{name}_hex"), Value::String(hex::encode(bytes))),
        };
    }
}

/// Prints one JSON value on stdout.
pub fn print_json(v: &Value) {
    println!("{v}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_roundtrip_and_bad_hex() {
        let c = Codec { hex: true };
        assert_eq!(c.decode("key", "00ff").unwrap(), vec![0, 255]);
        assert_eq!(c.display(&[0, 255]), b"00ff".to_vec());
        let mut out = b"k=".to_vec();
        c.display_into(&mut out, &[0, 255]);
        Codec { hex: false }.display_into(&mut out, b"!");
        assert_eq!(out, b"k=00ff!".to_vec());
        assert!(c.decode("key", "0g").is_err());
        assert!(c.decode("key", "abc").is_err());
    }

    #[test]
    fn invalid_utf8_goes_to_hex_field() {
        let c = Codec { hex: false };
        let mut m = Map::new();
        c.json_insert(&mut m, "value", &[0xff, 0x00]);
        c.json_insert(&mut m, "key", b"k");
        assert_eq!(m["value_hex"], "ff00");
        assert_eq!(m["key"], "k");
    }
}
