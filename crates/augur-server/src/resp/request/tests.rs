//! The request parser against Redis's behaviour (its `tests/unit/protocol.tcl` cases among
//! them), the limits, and incremental feeding.

use super::*;
use crate::resp::put_command;
use bytes::BytesMut;
use proptest::prelude::*;

const LIMITS: Limits = Limits {
    max_bulk_bytes: 512 << 20,
    max_request_bytes: 1 << 30,
    max_args: MAX_MULTIBULK_ARGS,
};

fn parse(buf: &[u8]) -> Result<Parsed, ProtocolError> {
    parse_command(buf, &LIMITS)
}

fn args(list: &[&str]) -> Vec<Vec<u8>> {
    list.iter().map(|a| a.as_bytes().to_vec()).collect()
}

fn error(buf: &[u8], limits: &Limits) -> String {
    match parse_command(buf, limits) {
        Err(ProtocolError(message)) => message,
        other => panic!(
            "{:?}: expected an error, got {other:?}",
            String::from_utf8_lossy(buf)
        ),
    }
}

fn encode(commands: &[Vec<Vec<u8>>]) -> Vec<u8> {
    let mut out = BytesMut::new();
    for command in commands {
        put_command(&mut out, command);
    }
    out.to_vec()
}

/// What a connection does: bytes arrive in `chunks`, and after each arrival it parses
/// commands until one is incomplete. Returns the commands and the error that ended it.
fn connection(
    chunks: &[&[u8]],
    limits: &Limits,
    decoder: bool,
) -> (Vec<Vec<Vec<u8>>>, Option<ProtocolError>) {
    let mut buf = Vec::new();
    let mut commands = Vec::new();
    let mut state = Decoder::new();
    for chunk in chunks {
        buf.extend_from_slice(chunk);
        loop {
            let parsed = if decoder {
                state.decode(&buf, limits)
            } else {
                parse_command(&buf, limits)
            };
            match parsed {
                Ok(Some((args, consumed))) => {
                    assert!(consumed >= 1 && consumed <= buf.len());
                    buf.drain(..consumed);
                    commands.push(args);
                }
                Ok(None) => break,
                Err(e) => return (commands, Some(e)),
            }
        }
    }
    (commands, None)
}

#[test]
fn multibulk_commands() {
    assert_eq!(
        parse(b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*1\r\n$4\r\nPING\r\n"),
        Ok(Some((args(&["GET", "k"]), 20)))
    );
    // Binary-safe: CR, LF and NUL inside a bulk.
    assert_eq!(
        parse(b"*1\r\n$5\r\na\r\n\0b\r\n"),
        Ok(Some((vec![b"a\r\n\0b".to_vec()], 15)))
    );
    assert_eq!(parse(b"*1\r\n$0\r\n\r\n"), Ok(Some((vec![vec![]], 10))));
}

#[test]
fn empty_commands_are_skipped() {
    // Redis: "Handle an empty query", "Negative multibulk length".
    for (bytes, consumed) in [
        (&b"*0\r\n"[..], 4),
        (b"*-1\r\n", 5),
        (b"*-10\r\n", 6),
        (b"\r\n", 2),
        (b"\n", 1),
        (b" \t \r\n", 5),
    ] {
        assert_eq!(parse(bytes), Ok(Some((vec![], consumed))), "{bytes:?}");
    }
    let (commands, err) = connection(&[b"\r\n*0\r\n*-1\r\nPING\r\n"], &LIMITS, false);
    assert_eq!(err, None);
    assert_eq!(commands, vec![vec![], vec![], vec![], args(&["PING"])]);
}

#[test]
fn incomplete_input_waits() {
    for bytes in [
        &b""[..],
        b"*",
        b"*2",
        b"*2\r",
        b"*2\r\n",
        b"*2\r\n$",
        b"*2\r\n$3\r\nGE",
        b"*2\r\n$3\r\nGET\r",
        b"*2\r\n$3\r\nGET\r\n",
        b"PING",
        b"PING\r",
        b"SET \"a b",
    ] {
        assert_eq!(
            parse(bytes),
            Ok(None),
            "{:?}",
            String::from_utf8_lossy(bytes)
        );
    }
}

#[test]
fn multibulk_length_errors() {
    // Redis: "Out of range multibulk length".
    assert_eq!(error(b"*20000000\r\n", &LIMITS), "invalid multibulk length");
    assert_eq!(
        error(b"*3000000000\r\n", &LIMITS),
        "invalid multibulk length"
    );
    assert_eq!(error(b"*1048577\r\n", &LIMITS), "invalid multibulk length");
    assert_eq!(parse(b"*1048576\r\n"), Ok(None));
    let few = Limits {
        max_args: 2,
        ..LIMITS
    };
    assert_eq!(error(b"*3\r\n", &few), "invalid multibulk length");
    assert_eq!(parse_command(b"*2\r\n", &few), Ok(None));
    for bad in [
        &b"*blabla\r\n"[..],
        b"*-0\r\n",
        b"*+1\r\n",
        b"*01\r\n",
        b"* 1\r\n",
        b"*\r\n",
        b"*1\rx",
    ] {
        assert_eq!(error(bad, &LIMITS), "invalid multibulk length", "{bad:?}");
    }
}

#[test]
fn bulk_length_errors() {
    // Redis: "Wrong multibulk payload header", "Negative multibulk payload length",
    // "Out of range multibulk payload length", "Non-number multibulk payload length".
    assert_eq!(
        error(b"*3\r\n$3\r\nSET\r\n$1\r\nx\r\nfooz\r\n", &LIMITS),
        "expected '$', got 'f'"
    );
    assert_eq!(error(b"*1\r\n\r\n", &LIMITS), "expected '$', got ' '");
    assert_eq!(error(b"*1\r\n\xff", &LIMITS), "expected '$', got '\\xff'");
    let prefix = b"*3\r\n$3\r\nSET\r\n$1\r\nx\r\n".to_vec();
    for header in [
        &b"$-10\r\n"[..],
        b"$2000000000\r\n",
        b"$blabla\r\n",
        b"$\r\n",
        b"$1\rx",
    ] {
        let bytes = [prefix.clone(), header.to_vec()].concat();
        assert_eq!(error(&bytes, &LIMITS), "invalid bulk length", "{header:?}");
    }
    assert_eq!(
        error(b"*1\r\n$3\r\nabcd\r\n", &LIMITS),
        "expected CRLF after bulk data"
    );
    assert_eq!(
        error(b"*1\r\n$3\r\nabc\rx", &LIMITS),
        "expected CRLF after bulk data"
    );
}

#[test]
fn huge_declared_lengths_are_refused_at_the_header() {
    // A 1 GiB bulk with a 512 MiB limit: refused with none of its bytes sent.
    assert_eq!(
        error(b"*1\r\n$1073741824\r\n", &LIMITS),
        "invalid bulk length"
    );
    assert_eq!(
        error(b"*1\r\n$9223372036854775807\r\n", &LIMITS),
        "invalid bulk length"
    );
    let small = Limits {
        max_bulk_bytes: 4,
        ..LIMITS
    };
    assert_eq!(error(b"*1\r\n$5\r\n", &small), "invalid bulk length");
    assert_eq!(parse_command(b"*1\r\n$4\r\n", &small), Ok(None));
    // Within the bulk limit but past the request limit, counting the arguments to come at
    // their least (6 bytes each).
    let request = Limits {
        max_bulk_bytes: 100,
        max_request_bytes: 40,
        ..LIMITS
    };
    let too_big = "request exceeds max-request-bytes (40)";
    assert_eq!(error(b"*1\r\n$30\r\n", &request), too_big); // 4 + 5 + 30 + 2 = 41
    assert_eq!(parse_command(b"*1\r\n$29\r\n", &request), Ok(None)); // 40
    assert_eq!(error(b"*7\r\n", &request), too_big); // 4 + 7 * 6 = 46
    assert_eq!(parse_command(b"*6\r\n", &request), Ok(None)); // 4 + 6 * 6 = 40
    assert_eq!(error(b"*2\r\n$25\r\n", &request), too_big); // 4 + 5 + 25 + 2 + 6 = 42
}

#[test]
fn header_lines_are_bounded() {
    // As Redis: more than 64 KiB buffered (the '*' or '$' included) and no '\r' yet.
    let mut count = b"*".to_vec();
    count.extend(std::iter::repeat_n(b'1', MAX_LINE_BYTES - 1));
    assert_eq!(parse(&count), Ok(None));
    count.push(b'1');
    assert_eq!(error(&count, &LIMITS), "too big mbulk count string");
    let mut bulk = b"*1\r\n$".to_vec();
    bulk.extend(std::iter::repeat_n(b'1', MAX_LINE_BYTES - 1));
    assert_eq!(parse(&bulk), Ok(None));
    bulk.push(b'1');
    assert_eq!(error(&bulk, &LIMITS), "too big bulk count string");
}

#[test]
fn inline_commands() {
    assert_eq!(parse(b"PING\r\n"), Ok(Some((args(&["PING"]), 6))));
    assert_eq!(
        parse(b"SET k v\nGET k\n"),
        Ok(Some((args(&["SET", "k", "v"]), 8)))
    );
    assert_eq!(
        parse(b"SET \"a b\" 'c\\'d' \"\\x41\\n\"\r\n"),
        Ok(Some((args(&["SET", "a b", "c'd", "A\n"]), 27)))
    );
    // Only one \r before the \n is the line end's.
    assert_eq!(
        parse(b"SET k \"v\r\"\r\n"),
        Ok(Some((args(&["SET", "k", "v\r"]), 12)))
    );
    assert_eq!(parse(b"ECHO \"\"\n"), Ok(Some((args(&["ECHO", ""]), 8))));
    // A line starting with anything but '*' is inline, '$' included.
    assert_eq!(parse(b"$3\r\n"), Ok(Some((args(&["$3"]), 4))));
    assert_eq!(error(b"SET \"a\n", &LIMITS), "unbalanced quotes in request");
    assert_eq!(
        error(b"SET \"a\"b\n", &LIMITS),
        "unbalanced quotes in request"
    );
}

#[test]
fn inline_lines_are_bounded() {
    let line = vec![b'a'; MAX_LINE_BYTES];
    assert_eq!(parse(&line), Ok(None));
    let mut whole = line.clone();
    whole.push(b'\n');
    assert_eq!(
        parse(&whole),
        Ok(Some((vec![line.clone()], MAX_LINE_BYTES + 1)))
    );
    let mut longer = line;
    longer.push(b'a');
    assert_eq!(error(&longer, &LIMITS), "too big inline request");
    // However the bytes arrive: a newline past the bound does not save it.
    longer.push(b'\n');
    assert_eq!(error(&longer, &LIMITS), "too big inline request");

    let limits = Limits {
        max_bulk_bytes: 3,
        max_request_bytes: 12,
        max_args: 2,
    };
    assert_eq!(
        parse_command(b"GET abc\n", &limits),
        Ok(Some((args(&["GET", "abc"]), 8)))
    );
    assert_eq!(
        error(b"GET abcd\n", &limits),
        "inline argument exceeds max-bulk-bytes (3)"
    );
    assert_eq!(
        error(b"a b c\n", &limits),
        "too many arguments in inline request (max-args 2)"
    );
    // The line and its newline must fit in 12 bytes.
    let line = |spaces: usize, newline: &str| format!("a{}{newline}", " ".repeat(spaces));
    assert_eq!(
        parse_command(line(10, "\n").as_bytes(), &limits),
        Ok(Some((args(&["a"]), 12)))
    );
    let too_big = "request exceeds max-request-bytes (12)";
    assert_eq!(error(line(11, "\n").as_bytes(), &limits), too_big);
    assert_eq!(parse_command(line(10, "").as_bytes(), &limits), Ok(None));
    assert_eq!(error(line(11, "").as_bytes(), &limits), too_big);
}

#[test]
fn every_split_of_a_pipeline_gives_the_same_commands() {
    let mut pipeline = encode(&[
        args(&["SET", "key", "a\r\nvalue"]),
        args(&["GET", "key"]),
        vec![],
        args(&[""]),
    ]);
    pipeline.extend_from_slice(b"\r\n*-1\r\nSET \"x y\" 'z'\r\nPING\n");
    let (whole, err) = connection(&[&pipeline], &LIMITS, false);
    assert_eq!(err, None);
    assert_eq!(whole.len(), 8);
    for cut in 0..=pipeline.len() {
        let (first, second) = pipeline.split_at(cut);
        for decoder in [false, true] {
            assert_eq!(
                connection(&[first, second], &LIMITS, decoder),
                (whole.clone(), None)
            );
        }
    }
    let bytes: Vec<&[u8]> = pipeline.chunks(1).collect();
    for decoder in [false, true] {
        assert_eq!(connection(&bytes, &LIMITS, decoder), (whole.clone(), None));
    }
}

#[test]
fn decoder_resets_after_an_error() {
    let mut decoder = Decoder::new();
    assert_eq!(decoder.decode(b"*2\r\n$1\r\na\r\n", &LIMITS), Ok(None));
    assert!(decoder.decode(b"*2\r\n$1\r\na\r\nX", &LIMITS).is_err());
    assert_eq!(
        decoder.decode(b"PING\n", &LIMITS),
        Ok(Some((args(&["PING"]), 5)))
    );
}

fn arg() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..40),
        proptest::collection::vec(prop_oneof![Just(b'\r'), Just(b'\n'), Just(b'$')], 0..6),
    ]
}

fn command() -> impl Strategy<Value = Vec<Vec<u8>>> {
    proptest::collection::vec(arg(), 0..6)
}

/// An inline line that `sdssplitargs` reads back as `args` (every argument double-quoted,
/// each byte escaped as `\xHH`), or plain when the arguments allow it.
fn inline_line(args: &[Vec<u8>], plain: bool) -> Vec<u8> {
    let mut line = Vec::new();
    for arg in args {
        if plain {
            line.extend_from_slice(arg);
        } else {
            line.push(b'"');
            for b in arg {
                line.extend_from_slice(format!("\\x{b:02x}").as_bytes());
            }
            line.push(b'"');
        }
        line.push(b' ');
    }
    line.extend_from_slice(b"\r\n");
    line
}

proptest! {
    #[test]
    fn multibulk_round_trip(commands in proptest::collection::vec(command(), 1..6)) {
        let bytes = encode(&commands);
        let (parsed, err) = connection(&[&bytes], &LIMITS, false);
        prop_assert_eq!(err, None);
        prop_assert_eq!(parsed, commands);
    }

    #[test]
    fn inline_round_trip(
        quoted in proptest::collection::vec(arg(), 1..5),
        plain in proptest::collection::vec("[a-zA-Z0-9_:.-]{1,8}", 1..5),
    ) {
        let plain: Vec<Vec<u8>> = plain.into_iter().map(String::into_bytes).collect();
        let bytes = [inline_line(&quoted, false), inline_line(&plain, true)].concat();
        let (parsed, err) = connection(&[&bytes], &LIMITS, false);
        prop_assert_eq!(err, None);
        prop_assert_eq!(parsed, vec![quoted, plain]);
    }

    #[test]
    fn chunked_feeding_matches_whole(
        commands in proptest::collection::vec(command(), 1..6),
        tail in proptest::collection::vec(any::<u8>(), 0..40),
        sizes in proptest::collection::vec(1usize..20, 1..40),
        max_bulk_bytes in 0usize..48,
        max_request_bytes in 0usize..200,
        max_args in 0usize..8,
    ) {
        // Valid commands, then arbitrary bytes; tight limits so that errors happen too.
        let limits = Limits { max_bulk_bytes, max_request_bytes, max_args };
        let bytes = [encode(&commands), tail].concat();
        let whole = connection(&[&bytes], &limits, false);
        let mut chunks = Vec::new();
        let mut rest = &bytes[..];
        for size in sizes.iter().cycle() {
            if rest.is_empty() {
                break;
            }
            let (chunk, after) = rest.split_at((*size).min(rest.len()));
            chunks.push(chunk);
            rest = after;
        }
        prop_assert_eq!(&connection(&chunks, &limits, false), &whole);
        prop_assert_eq!(&connection(&chunks, &limits, true), &whole);
        for command in &whole.0 {
            prop_assert!(command.len() <= max_args);
            prop_assert!(command.iter().all(|a| a.len() <= max_bulk_bytes));
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let limits = Limits { max_bulk_bytes: 16, max_request_bytes: 64, max_args: 4 };
        let _ = connection(&[&bytes], &limits, false);
        let _ = connection(&[&bytes], &LIMITS, true);
    }
}
