//! The RESP2 codec of `augur-server` (`augur_server::resp`). The first input byte picks the
//! mode (bit 7) and the limits (bits 0-5), the second where to split the rest in two reads:
//! - requests (bit 7 clear): the rest is what a client sends; commands are parsed from it
//!   with `parse_command` until one is incomplete or an error. Each call allocates at most
//!   `alloc_bound::bound` of the bytes it is given; a command takes at least one byte and no
//!   more than there are; every argument is at most `max_bulk_bytes` long, a command has at
//!   most `max_args` arguments and takes at most `max_request_bytes`; an error's message is
//!   non-empty and fits on a reply line. A multibulk command re-encodes (`put_command`) to
//!   exactly the bytes it took; re-encoding all the commands and parsing them again gives
//!   the same commands. The same bytes in two reads, through `parse_command` and through a
//!   `Decoder`, give the same commands and the same error.
//! - replies (bit 7 set): replies are parsed with `try_parse_reply` until one is incomplete
//!   or an error, within the allocation bound; a reply re-encodes (`put_reply`) to the bytes
//!   it took when its lines are UTF-8, and always to bytes that parse to the same reply.
#![no_main]

#[path = "alloc_bound.rs"]
mod alloc_bound;

#[global_allocator]
static ALLOC: alloc_bound::Counting = alloc_bound::Counting;

use augur_server::resp::{
    parse_command, put_command, put_reply, try_parse_reply, Decoder, Limits, ProtocolError,
};
use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;

type Commands = Vec<Vec<Vec<u8>>>;

fuzz_target!(|data: &[u8]| {
    let [mode, split, rest @ ..] = data else {
        return;
    };
    if mode & 0x80 != 0 {
        replies(rest);
        return;
    }
    // Small limits as often as large ones, so that every bound is reached.
    let limits = Limits {
        max_bulk_bytes: [0, 8, 100, 512 << 20][usize::from(mode & 3)],
        max_request_bytes: [16, 200, 70_000, 1 << 30][usize::from(mode >> 2 & 3)],
        max_args: [1, 5, 1000, usize::MAX][usize::from(mode >> 4 & 3)],
    };
    let (commands, error) = connection(&[rest], &limits, false);
    if let Some(e) = &error {
        assert!(!e.0.is_empty(), "an error without a message");
        assert!(
            !e.0.contains(['\r', '\n']),
            "an error that breaks the reply line: {e}"
        );
    }
    let effective_max_args = limits.max_args.min(augur_server::resp::MAX_MULTIBULK_ARGS);
    for command in &commands {
        assert!(command.len() <= effective_max_args, "too many arguments");
        for arg in command {
            assert!(
                arg.len() <= limits.max_bulk_bytes,
                "an argument over max_bulk_bytes"
            );
        }
    }

    // Re-encoded as multibulk, the commands parse back the same (under the same bulk and
    // argument bounds; an inline command grows when re-encoded, so no request bound).
    let mut encoded = BytesMut::new();
    for command in &commands {
        put_command(&mut encoded, command);
    }
    let relaxed = Limits {
        max_request_bytes: usize::MAX,
        ..limits
    };
    assert_eq!(
        connection(&[&encoded], &relaxed, false),
        (commands.clone(), None),
        "re-encoded commands parse differently"
    );

    // In two reads, the same commands and the same verdict, with or without a `Decoder`.
    let cut = rest.len() * usize::from(*split) / 255;
    let (first, second) = rest.split_at(cut);
    let whole = (commands, error);
    assert_eq!(
        connection(&[first, second], &limits, false),
        whole,
        "split at {cut}"
    );
    assert_eq!(
        connection(&[first, second], &limits, true),
        whole,
        "decoder, split at {cut}"
    );
});

/// A connection receiving `reads` one after another, parsing commands after each until one
/// is incomplete; every parse checked against its bounds.
fn connection(
    reads: &[&[u8]],
    limits: &Limits,
    decoder: bool,
) -> (Commands, Option<ProtocolError>) {
    let mut buf: Vec<u8> = Vec::new();
    let mut commands = Vec::new();
    let mut state = Decoder::new();
    for read in reads {
        buf.extend_from_slice(read);
        let mut start = 0;
        loop {
            let input = &buf[start..];
            let parsed = alloc_bound::check(input.len(), "parse_command", || {
                if decoder {
                    state.decode(input, limits)
                } else {
                    parse_command(input, limits)
                }
            });
            match parsed {
                Ok(Some((args, consumed))) => {
                    assert!(consumed >= 1, "a command of no bytes");
                    assert!(consumed <= input.len(), "consumed past the input");
                    if !args.is_empty() {
                        assert!(
                            consumed <= limits.max_request_bytes,
                            "over max_request_bytes"
                        );
                    }
                    if input.first() == Some(&b'*') && !args.is_empty() {
                        let mut again = BytesMut::new();
                        put_command(&mut again, &args);
                        assert_eq!(&again[..], &input[..consumed], "multibulk not canonical");
                    }
                    commands.push(args);
                    start += consumed;
                }
                Ok(None) => break,
                Err(e) => return (commands, Some(e)),
            }
        }
        buf.drain(..start);
    }
    (commands, None)
}

fn replies(mut input: &[u8]) {
    loop {
        let parsed = alloc_bound::check(input.len(), "try_parse_reply", || try_parse_reply(input));
        let Ok(Some((reply, consumed))) = parsed else {
            if let Err(e) = parsed {
                assert!(
                    !e.0.is_empty() && !e.0.contains(['\r', '\n']),
                    "bad error: {e}"
                );
            }
            return;
        };
        assert!(
            consumed >= 1 && consumed <= input.len(),
            "consumed {consumed} of {}",
            input.len()
        );
        let mut again = BytesMut::new();
        put_reply(&mut again, &reply);
        if std::str::from_utf8(&input[..consumed]).is_ok() {
            assert_eq!(&again[..], &input[..consumed], "reply not canonical");
        }
        assert_eq!(
            try_parse_reply(&again),
            Ok(Some((reply, again.len()))),
            "re-encoded reply parses differently"
        );
        input = &input[consumed..];
    }
}
