//! [`Out`]: a connection's reply buffer, with one method per RESP2 reply shape (the encoding
//! itself is `resp`'s `put_*` functions).

use crate::resp;
use bytes::BytesMut;

/// The replies of one batch of commands, encoded, waiting to be written to the socket.
#[derive(Default)]
pub struct Out {
    /// The encoded bytes.
    pub buf: BytesMut,
}

impl Out {
    /// `+text`.
    pub fn simple(&mut self, text: &str) {
        resp::put_simple(&mut self.buf, text);
    }

    /// `+OK`.
    pub fn ok(&mut self) {
        self.simple("OK");
    }

    /// `-text` (the text starts with the error code, `ERR`, `WRONGPASS`, …).
    pub fn error(&mut self, text: &str) {
        resp::put_error(&mut self.buf, text);
    }

    /// `:n`.
    pub fn int(&mut self, n: i64) {
        resp::put_integer(&mut self.buf, n);
    }

    /// `$len` and the bytes.
    pub fn bulk(&mut self, bytes: &[u8]) {
        resp::put_bulk(&mut self.buf, bytes);
    }

    /// A bulk string, or the null bulk for `None`.
    pub fn bulk_or_null(&mut self, bytes: Option<&[u8]>) {
        match bytes {
            Some(b) => self.bulk(b),
            None => self.null(),
        }
    }

    /// The null bulk string, `$-1`.
    pub fn null(&mut self) {
        resp::put_null_bulk(&mut self.buf);
    }

    /// `*n`: the header of an array of `n` replies that follow.
    pub fn array(&mut self, n: usize) {
        resp::put_array_header(&mut self.buf, n);
    }

    /// An array of bulk strings.
    pub fn bulk_array<B: AsRef<[u8]>>(&mut self, items: &[B]) {
        self.array(items.len());
        for item in items {
            self.bulk(item.as_ref());
        }
    }

    /// A double as Redis sends it in RESP2: a bulk string of its shortest exact text.
    pub fn double(&mut self, value: f64) {
        self.bulk(resp::format_double(value).as_bytes());
    }
}
