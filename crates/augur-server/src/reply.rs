//! What a command answers, and the one place it becomes RESP: [`Reply`] (a command's
//! result), [`CmdError`] (its error: Redis's text, or an engine failure whose kind picks the
//! error code), and [`Out`], a connection's reply buffer, which encodes both in the
//! connection's [`Protocol`] ([`Out::result`]; the bytes themselves are `resp`'s `put_*`
//! functions).
//!
//! Commands never write bytes: they return a `Result<Reply, CmdError>` (`commands/`), and a
//! reply's shape names what Redis 7.0 sends in each protocol: a [`Reply::Map`] is RESP3's
//! map `%` and RESP2's flat array, [`Reply::Null`] RESP3's `_` and RESP2's `$-1`,
//! [`Reply::Set`] `~` or an array, [`Reply::Verbatim`] `=…txt:` or a bulk string. Checked
//! against redis-server 7.0.15 under both protocols (`tests/against_redis.rs`).
//! Not to be confused with `resp::Reply`, a reply parsed back from bytes (tests, clients).

use crate::resp;
use bytes::BytesMut;
use std::borrow::Cow;

/// The protocol a connection speaks: RESP2 until `HELLO 3` (and again after `HELLO 2`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Protocol {
    /// RESP2, every connection's protocol at first.
    #[default]
    Resp2,
    /// RESP3: maps, sets, one null, verbatim strings.
    Resp3,
}

impl Protocol {
    /// `HELLO`'s protocol version: 2 or 3.
    pub fn version(self) -> i64 {
        match self {
            Protocol::Resp2 => 2,
            Protocol::Resp3 => 3,
        }
    }
}

/// A command's reply, before encoding.
#[derive(Debug, Clone)]
pub enum Reply {
    /// `+OK`.
    Ok,
    /// `+text`: a status (`PONG`, `QUEUED`, a type name).
    Status(&'static str),
    /// `:n`.
    Int(i64),
    /// `$len` and the bytes.
    Bulk(Vec<u8>),
    /// Nothing there (a missing key): RESP2's null bulk string `$-1`, RESP3's null `_`.
    Null,
    /// No array at all (EXEC of a transaction whose watched keys changed): RESP2's null
    /// array `*-1`, RESP3's null `_`.
    NullArray,
    /// `*n` and the n replies.
    Array(Vec<Reply>),
    /// Keys and values (`HELLO`, `CONFIG GET`, `COMMAND DOCS`): a RESP3 map `%n`; in RESP2
    /// an array of them, alternating.
    Map(Vec<(Reply, Reply)>),
    /// Values in no particular order (`COMMAND INFO`'s flags): a RESP3 set `~n`, a RESP2
    /// array.
    Set(Vec<Reply>),
    /// Text meant for people (`INFO`, `CLIENT LIST`, `CLIENT INFO`): a RESP3 verbatim string
    /// of format `txt`, a RESP2 bulk string.
    Verbatim(Vec<u8>),
    /// `reply` in `protocol` whatever the connection speaks: an element of `EXEC`'s reply
    /// after a queued `HELLO` switched protocols (Redis writes each element in the protocol
    /// in effect once its command ran).
    In(Protocol, Box<Reply>),
    /// An error as an element of an array (a command's error inside `EXEC`'s reply).
    Error(CmdError),
    /// Out-of-band data (Pub/Sub's `subscribe` confirmations and messages): a RESP3 push
    /// `>n`, a RESP2 array `*n`.
    Push(Vec<Reply>),
    /// Several replies one after the other, not wrapped in an array (`SUBSCRIBE a b`
    /// confirms each channel with its own push).
    Frames(Vec<Reply>),
    /// No reply at all (`SHUTDOWN`, which closes the connection).
    Nothing,
}

impl Reply {
    /// A bulk string of `bytes`.
    pub fn bulk(bytes: impl Into<Vec<u8>>) -> Reply {
        Reply::Bulk(bytes.into())
    }

    /// A bulk string, or the null bulk for `None`.
    pub fn bulk_or_null(bytes: Option<Vec<u8>>) -> Reply {
        bytes.map_or(Reply::Null, Reply::Bulk)
    }

    /// An array of bulk strings.
    pub fn bulk_array<B: Into<Vec<u8>>>(items: impl IntoIterator<Item = B>) -> Reply {
        Reply::Array(items.into_iter().map(Reply::bulk).collect())
    }

    /// An element of an array: the reply, or the error.
    pub fn from_result(result: Result<Reply, CmdError>) -> Reply {
        result.unwrap_or_else(Reply::Error)
    }
}

/// Why a command failed, as its error reply will say.
#[derive(Debug, Clone)]
pub enum CmdError {
    /// One of Redis's errors: the reply's whole text, its code first (`ERR syntax error`,
    /// `WRONGPASS …`, `EXECABORT …`).
    Redis(Cow<'static, str>),
    /// A failure of the engine. Its kind picks the code ([`CmdError::text`]).
    Engine(augur::Error),
}

impl CmdError {
    /// Redis's error whose whole text is `text`.
    pub fn new(text: impl Into<Cow<'static, str>>) -> CmdError {
        CmdError::Redis(text.into())
    }

    /// `ERR syntax error`.
    pub fn syntax() -> CmdError {
        CmdError::new("ERR syntax error")
    }

    /// `ERR wrong number of arguments for '<name>' command`.
    pub fn arity(name: &str) -> CmdError {
        CmdError::new(format!(
            "ERR wrong number of arguments for '{name}' command"
        ))
    }

    /// `ERR value is not an integer or out of range`.
    pub fn not_an_integer() -> CmdError {
        CmdError::new("ERR value is not an integer or out of range")
    }

    /// The error reply's text (what follows the `-`). An engine failure's code follows its
    /// kind: `READONLY` for a write to a server started with `--read-only` (Redis's code
    /// for a write to a read-only replica), `MISCONF` once an earlier failure to persist
    /// made the engine refuse writes (Redis's code for writes refused after a failed save),
    /// `ERR` for the others; the text is the engine's message (one line, at most 1,000
    /// characters), which names the kind.
    pub fn text(&self) -> Cow<'_, str> {
        match self {
            CmdError::Redis(text) => Cow::Borrowed(text),
            CmdError::Engine(e) => {
                let code = match e {
                    // The database is swapped out (a replica's full sync loads another).
                    augur::Error::Closed => {
                        return Cow::Borrowed("LOADING Redis is loading the dataset in memory")
                    }
                    augur::Error::ReadOnly { .. } => "READONLY",
                    augur::Error::Poisoned { .. } => "MISCONF",
                    _ => "ERR",
                };
                let text = crate::commands::printable(e.to_string().as_bytes(), 1000);
                Cow::Owned(format!("{code} {text}"))
            }
        }
    }
}

impl From<augur::Error> for CmdError {
    fn from(e: augur::Error) -> Self {
        CmdError::Engine(e)
    }
}

/// The replies of one batch of commands, encoded, waiting to be written to the socket.
#[derive(Default)]
pub struct Out {
    /// The encoded bytes.
    pub buf: BytesMut,
    /// The protocol replies are encoded in (the connection's, once its command ran: a
    /// `HELLO 3` is answered in RESP3).
    pub protocol: Protocol,
}

impl Out {
    /// Encodes a command's result: its reply, or its error.
    pub fn result(&mut self, result: Result<Reply, CmdError>) {
        match result {
            Ok(reply) => self.reply(reply),
            Err(e) => self.error(&e.text()),
        }
    }

    /// Encodes `reply` in [`Out::protocol`].
    pub fn reply(&mut self, reply: Reply) {
        let resp3 = self.protocol == Protocol::Resp3;
        let buf = &mut self.buf;
        match reply {
            Reply::Ok => resp::put_simple(buf, "OK"),
            Reply::Status(text) => resp::put_simple(buf, text),
            Reply::Int(n) => resp::put_integer(buf, n),
            Reply::Bulk(bytes) => resp::put_bulk(buf, &bytes),
            Reply::Null if resp3 => resp::put_null(buf),
            Reply::Null => resp::put_null_bulk(buf),
            Reply::NullArray if resp3 => resp::put_null(buf),
            Reply::NullArray => resp::put_null_array(buf),
            Reply::Array(items) => {
                resp::put_array_header(buf, items.len());
                self.replies(items);
            }
            Reply::Set(items) => {
                if resp3 {
                    resp::put_set_header(buf, items.len());
                } else {
                    resp::put_array_header(buf, items.len());
                }
                self.replies(items);
            }
            Reply::Map(pairs) => {
                if resp3 {
                    resp::put_map_header(buf, pairs.len());
                } else {
                    resp::put_array_header(buf, pairs.len() * 2);
                }
                for (key, value) in pairs {
                    self.reply(key);
                    self.reply(value);
                }
            }
            Reply::Verbatim(text) if resp3 => resp::put_verbatim(buf, "txt", &text),
            Reply::Verbatim(text) => resp::put_bulk(buf, &text),
            Reply::In(protocol, reply) => {
                let connection = std::mem::replace(&mut self.protocol, protocol);
                self.reply(*reply);
                self.protocol = connection;
            }
            Reply::Error(e) => self.error(&e.text()),
            Reply::Push(items) => {
                if resp3 {
                    resp::put_push_header(buf, items.len());
                } else {
                    resp::put_array_header(buf, items.len());
                }
                self.replies(items);
            }
            Reply::Frames(replies) => self.replies(replies),
            Reply::Nothing => {}
        }
    }

    fn replies(&mut self, items: Vec<Reply>) {
        for item in items {
            self.reply(item);
        }
    }

    /// `-text` (the text starts with the error code, `ERR`, `WRONGPASS`, …): for the
    /// session's protocol errors, which no command answers.
    pub fn error(&mut self, text: &str) {
        resp::put_error(&mut self.buf, text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn encoded(result: Result<Reply, CmdError>) -> String {
        encoded_in(Protocol::Resp2, result)
    }

    fn encoded_in(protocol: Protocol, result: Result<Reply, CmdError>) -> String {
        let mut out = Out {
            protocol,
            ..Out::default()
        };
        out.result(result);
        String::from_utf8(out.buf.to_vec()).expect("utf-8")
    }

    #[test]
    fn replies_encode_as_resp3() {
        let map = Reply::Map(vec![
            (Reply::bulk("proto"), Reply::Int(3)),
            (Reply::bulk("modules"), Reply::Array(vec![])),
        ]);
        assert_eq!(
            encoded_in(Protocol::Resp3, Ok(map)),
            "%2\r\n$5\r\nproto\r\n:3\r\n$7\r\nmodules\r\n*0\r\n"
        );
        let mixed = Reply::Array(vec![
            Reply::Null,
            Reply::Set(vec![Reply::Status("fast")]),
            Reply::Verbatim(b"# Server".to_vec()),
            Reply::In(Protocol::Resp2, Box::new(Reply::Null)),
            Reply::Null,
        ]);
        assert_eq!(
            encoded_in(Protocol::Resp3, Ok(mixed.clone())),
            "*5\r\n_\r\n~1\r\n+fast\r\n=12\r\ntxt:# Server\r\n$-1\r\n_\r\n"
        );
        assert_eq!(
            encoded(Ok(mixed)),
            "*5\r\n$-1\r\n*1\r\n+fast\r\n$8\r\n# Server\r\n$-1\r\n$-1\r\n"
        );
    }

    #[test]
    fn replies_encode_as_resp2() {
        let map = Reply::Map(vec![
            (Reply::bulk("proto"), Reply::Int(2)),
            (Reply::bulk("modules"), Reply::Array(vec![])),
        ]);
        assert_eq!(
            encoded(Ok(map)),
            "*4\r\n$5\r\nproto\r\n:2\r\n$7\r\nmodules\r\n*0\r\n"
        );
        let exec = Reply::Array(vec![
            Reply::Ok,
            Reply::Error(CmdError::not_an_integer()),
            Reply::Null,
            Reply::Status("QUEUED"),
        ]);
        assert_eq!(
            encoded(Ok(exec)),
            "*4\r\n+OK\r\n-ERR value is not an integer or out of range\r\n$-1\r\n+QUEUED\r\n"
        );
        assert_eq!(encoded(Ok(Reply::Nothing)), "");
        assert_eq!(encoded(Ok(Reply::NullArray)), "*-1\r\n");
        assert_eq!(encoded_in(Protocol::Resp3, Ok(Reply::NullArray)), "_\r\n");
        assert_eq!(encoded(Err(CmdError::syntax())), "-ERR syntax error\r\n");
    }

    /// Each engine failure kind a client can act on has its error code; the text names the
    /// kind and, for a poisoned database, the first failure.
    #[test]
    fn engine_failures_reply_with_the_code_of_their_kind() {
        let io = augur::Error::io("syncing 000007.wal", std::io::Error::other("disk gone"));
        let cases = [
            (
                augur::Error::ReadOnly { dir: "/db".into() },
                "-READONLY the database /db is open for reading only",
            ),
            (
                augur::Error::poisoned("the database /db", Arc::new(io.clone())),
                "-MISCONF the database /db is poisoned",
            ),
            (io, "-ERR I/O error while syncing 000007.wal: disk gone"),
            (
                augur::Error::ResourceLimit("compaction refused: vm.max_map_count".into()),
                "-ERR resource limit: compaction refused",
            ),
            (
                augur::Error::TaskPanicked {
                    task: "a sub-compaction".into(),
                    message: "boom\r\nline".into(),
                },
                "-ERR a sub-compaction panicked: boom  line\r\n",
            ),
        ];
        for (e, start) in cases {
            let text = encoded(Err(e.into()));
            assert!(text.starts_with(start), "{text:?}");
            assert!(
                text.ends_with("\r\n") && text.matches("\r\n").count() == 1,
                "{text:?}"
            );
        }
        let poisoned = encoded(Err(augur::Error::poisoned(
            "the database /db",
            Arc::new(augur::Error::ResourceLimit("vm.max_map_count".into())),
        )
        .into()));
        assert!(
            poisoned.contains("resource limit: vm.max_map_count"),
            "{poisoned}"
        );
    }
}
