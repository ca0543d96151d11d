//! Inline commands: one line split into arguments as Redis's `sdssplitargs` (`sds.c`) does.
//! The request parser (`request.rs`) cuts the line; this module only splits it.

/// C's `isspace` in the C locale: the blanks skipped between arguments.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

fn hex_value(b: u8) -> Option<u8> {
    char::from(b)
        .to_digit(16)
        .and_then(|d| u8::try_from(d).ok())
}

/// Splits `line` (without its line end) into arguments, or `None` for unbalanced quotes.
///
/// Arguments are separated by blanks (`isspace`). Outside quotes a space, tab, `\r` or `\n`
/// ends an argument and every other byte is taken as it is. `"..."` takes bytes as they are
/// except the escapes `\n \r \t \b \a`, `\xHH` (two hex digits) and `\<c>` for any other
/// byte `c` (so `\"` and `\\`); `'...'` takes bytes as they are except `\'`. Quotes may start
/// inside an argument (`a"b c"` is `ab c`), but a closing quote must be followed by a blank
/// or the end of the line: `"a"b` is unbalanced, as is a quote never closed. A blank line
/// gives no arguments; `""` gives one empty argument (Redis 7 keeps empty arguments).
///
/// Unlike Redis, whose C string functions stop at a NUL byte, a NUL is an ordinary byte.
pub(super) fn split_args(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    let mut args = Vec::new();
    let mut i = 0;
    loop {
        while line.get(i).copied().is_some_and(is_space) {
            i += 1;
        }
        if i >= line.len() {
            return Some(args);
        }
        let mut current = Vec::new();
        let mut double = false;
        let mut single = false;
        loop {
            let Some(&b) = line.get(i) else {
                if double || single {
                    return None; // A quote never closed.
                }
                break;
            };
            let next = line.get(i + 1).copied();
            if double {
                let hex = (
                    line.get(i + 2).copied().and_then(hex_value),
                    line.get(i + 3).copied().and_then(hex_value),
                );
                match (b, next, hex) {
                    (b'\\', Some(b'x'), (Some(hi), Some(lo))) => {
                        current.push(hi * 16 + lo);
                        i += 4;
                    }
                    (b'\\', Some(c), _) => {
                        current.push(match c {
                            b'n' => b'\n',
                            b'r' => b'\r',
                            b't' => b'\t',
                            b'b' => 0x08,
                            b'a' => 0x07,
                            other => other,
                        });
                        i += 2;
                    }
                    (b'"', _, _) => {
                        if next.is_some_and(|n| !is_space(n)) {
                            return None;
                        }
                        i += 1;
                        break;
                    }
                    _ => {
                        current.push(b);
                        i += 1;
                    }
                }
            } else if single {
                match (b, next) {
                    (b'\\', Some(b'\'')) => {
                        current.push(b'\'');
                        i += 2;
                    }
                    (b'\'', _) => {
                        if next.is_some_and(|n| !is_space(n)) {
                            return None;
                        }
                        i += 1;
                        break;
                    }
                    _ => {
                        current.push(b);
                        i += 1;
                    }
                }
            } else {
                i += 1;
                match b {
                    b' ' | b'\n' | b'\r' | b'\t' => break,
                    b'"' => double = true,
                    b'\'' => single = true,
                    _ => current.push(b),
                }
            }
        }
        args.push(current);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn split(line: &str) -> Option<Vec<String>> {
        split_args(line.as_bytes()).map(|args| {
            args.into_iter()
                .map(|a| String::from_utf8_lossy(&a).into_owned())
                .collect()
        })
    }

    fn ok(line: &str, want: &[&str]) {
        assert_eq!(
            split(line),
            Some(want.iter().map(|s| s.to_string()).collect()),
            "{line:?}"
        );
    }

    #[test]
    fn blanks_separate_arguments() {
        ok("", &[]);
        ok("   \t ", &[]);
        ok("SET key value", &["SET", "key", "value"]);
        ok("  GET\t\tkey  ", &["GET", "key"]);
        // \v and \f are skipped between arguments but do not end one.
        ok("a\x0bb \x0cc", &["a\x0bb", "c"]);
    }

    #[test]
    fn sdssplitargs_examples() {
        // The examples of sds.c's comment and its tests.
        ok(
            "foo bar \"newline are supported\\n\" and \"\\xff\\x00otherstuff\"",
            &[
                "foo",
                "bar",
                "newline are supported\n",
                "and",
                "\u{fffd}\u{0}otherstuff",
            ],
        );
        assert_eq!(
            split_args(b"\"\\xff\\x00\"").unwrap(),
            vec![vec![0xff, 0x00]]
        );
        ok("\"\\n\\r\\t\\b\\a\\\\\\\"\\q\"", &["\n\r\t\x08\x07\\\"q"]);
        ok("'it\\'s' 'a\\b'", &["it's", "a\\b"]);
        ok("set \"\" x", &["set", "", "x"]);
    }

    #[test]
    fn quotes_inside_an_argument() {
        ok("a\"b c\"", &["ab c"]);
        ok("a'b c' d", &["ab c", "d"]);
        ok("\"a\"\t'b'", &["a", "b"]);
        // \x needs two hex digits, else the backslash escapes the x.
        ok("\"\\x4\" \"\\x4G\" \"\\x41\"", &["x4", "x4G", "A"]);
    }

    #[test]
    fn unbalanced_quotes() {
        for line in [
            "a\"b c\"d",
            "\"abc",
            "'abc",
            "\"a\"b",
            "'a'b",
            "\"a\\\"",
            "'\\'",
            "\"abc\\",
        ] {
            assert_eq!(split(line), None, "{line:?}");
        }
    }

    #[test]
    fn nul_is_an_ordinary_byte() {
        assert_eq!(
            split_args(b"a\0b \"c\0\"").unwrap(),
            vec![b"a\0b".to_vec(), b"c\0".to_vec()]
        );
    }
}
