//! Requests: a multibulk command (`*<n>\r\n` then n × `$<len>\r\n<bytes>\r\n`) or an inline
//! line, parsed from the front of a connection's input buffer (module doc: what is matched).

use super::inline::split_args;
use super::{header_line, parse_i64, show_byte, Limits, ProtocolError};
use super::{MAX_LINE_BYTES, MAX_MULTIBULK_ARGS};

/// The fewest bytes an argument takes on the wire: `$0\r\n\r\n`.
const MIN_ARG_BYTES: usize = 6;

/// Most argument slots reserved before their bytes arrive (Redis reserves as many).
const PREALLOC_ARGS: usize = 1024;

/// A parsed command: its arguments and how many bytes of the buffer it took.
type Parsed = Option<(Vec<Vec<u8>>, usize)>;

/// Parses one command from the front of `buf`.
///
/// Returns `Ok(Some((args, consumed)))` for a complete command, which took the first
/// `consumed` bytes (`consumed >= 1`); `args` is empty for an empty command (`*0`, `*-1`, an
/// empty or blank inline line), which the caller skips, as Redis does. Returns `Ok(None)`
/// when more bytes are needed; nothing is retained, so the caller calls again with the same
/// bytes and more. Every argument is at most `limits.max_bulk_bytes` long, there are at
/// most `limits.max_args` of them, and a non-empty command took at most
/// `limits.max_request_bytes` bytes.
///
/// A request is parsed from its start at every call: a command of many arguments that
/// arrives in many reads costs more each time. [`Decoder`] keeps its place instead.
///
/// # Errors
///
/// [`ProtocolError`] when the bytes can never start a valid command within `limits`; it is
/// decided as early as the bytes allow (a bulk length at its header line, before its data),
/// and whatever way the same bytes are split across calls.
pub fn parse_command(buf: &[u8], limits: &Limits) -> Result<Parsed, ProtocolError> {
    Decoder::new().decode(buf, limits)
}

/// [`parse_command`] that remembers the arguments of a multibulk command already parsed
/// while the rest arrives, so that a command costs time in proportion to its size however
/// many reads bring it. Not thread-safe to share; one per connection.
#[derive(Debug, Default)]
pub struct Decoder {
    partial: Option<Partial>,
}

/// A multibulk command whose count header was accepted and whose arguments are arriving.
#[derive(Debug)]
struct Partial {
    /// Bytes of the buffer parsed so far (the count header and complete arguments).
    pos: usize,
    /// Arguments still to come.
    remaining: usize,
    args: Vec<Vec<u8>>,
}

impl Decoder {
    /// A decoder at the start of a command.
    pub fn new() -> Self {
        Decoder::default()
    }

    /// Parses one command from the front of `buf`, as [`parse_command`] does and with the
    /// same results, keeping what it parsed of an incomplete command for the next call.
    ///
    /// REQUIRES: after an `Ok(None)`, the next call's `buf` starts with the same bytes (the
    /// caller only appends). After `Ok(Some((_, consumed)))` the caller drops the first
    /// `consumed` bytes, and the decoder is at the start of the next command; after an
    /// error it is reset too. A caller that breaks this gets wrong commands, not a panic.
    ///
    /// # Errors
    ///
    /// As [`parse_command`].
    pub fn decode(&mut self, buf: &[u8], limits: &Limits) -> Result<Parsed, ProtocolError> {
        let result = self.step(buf, limits);
        if !matches!(result, Ok(None)) {
            self.partial = None;
        }
        result
    }

    fn step(&mut self, buf: &[u8], limits: &Limits) -> Result<Parsed, ProtocolError> {
        let partial = match self.partial.take() {
            Some(partial) => partial,
            None => match buf.first() {
                None => return Ok(None),
                Some(b'*') => match count_header(buf, limits)? {
                    Header::Incomplete => return Ok(None),
                    Header::Empty(consumed) => return Ok(Some((Vec::new(), consumed))),
                    Header::Args(partial) => partial,
                },
                Some(_) => return parse_inline(buf, limits),
            },
        };
        let partial = self.partial.insert(partial);
        while partial.remaining > 0 {
            let rest = buf.get(partial.pos..).unwrap_or_default();
            match bulk(rest, partial.pos, partial.remaining, limits)? {
                None => return Ok(None),
                Some((arg, taken)) => {
                    partial.args.push(arg.to_vec());
                    partial.pos += taken;
                    partial.remaining -= 1;
                }
            }
        }
        Ok(Some((std::mem::take(&mut partial.args), partial.pos)))
    }
}

enum Header {
    Incomplete,
    /// `*0` or a negative count: an empty command of this many bytes.
    Empty(usize),
    Args(Partial),
}

fn request_too_big(limits: &Limits) -> ProtocolError {
    ProtocolError::new(format!(
        "request exceeds max-request-bytes ({})",
        limits.max_request_bytes
    ))
}

/// The `*<n>\r\n` header at the front of `buf`.
fn count_header(buf: &[u8], limits: &Limits) -> Result<Header, ProtocolError> {
    const INVALID: &str = "invalid multibulk length";
    let Some((count, consumed)) = header_line(buf, "too big mbulk count string", INVALID)? else {
        return Ok(Header::Incomplete);
    };
    let count = parse_i64(count).ok_or_else(|| ProtocolError::new(INVALID))?;
    let Ok(count) = usize::try_from(count) else {
        return Ok(Header::Empty(consumed)); // Negative: Redis skips it.
    };
    if count == 0 {
        return Ok(Header::Empty(consumed));
    }
    if count > limits.max_args.min(MAX_MULTIBULK_ARGS) {
        return Err(ProtocolError::new(INVALID));
    }
    if consumed.saturating_add(count.saturating_mul(MIN_ARG_BYTES)) > limits.max_request_bytes {
        return Err(request_too_big(limits));
    }
    Ok(Header::Args(Partial {
        pos: consumed,
        remaining: count,
        args: Vec::with_capacity(count.min(PREALLOC_ARGS)),
    }))
}

/// One `$<len>\r\n<bytes>\r\n` argument at the front of `rest`, which starts `pos` bytes into
/// the command, with `remaining` arguments (this one included) still to come: the argument
/// and the bytes it took, or `None` until they are all there.
fn bulk<'a>(
    rest: &'a [u8],
    pos: usize,
    remaining: usize,
    limits: &Limits,
) -> Result<Option<(&'a [u8], usize)>, ProtocolError> {
    const INVALID: &str = "invalid bulk length";
    match rest.first() {
        None => return Ok(None),
        Some(b'$') => {}
        Some(&other) => {
            return Err(ProtocolError::new(format!(
                "expected '$', got '{}'",
                show_byte(other)
            )))
        }
    }
    let Some((len, header)) = header_line(rest, "too big bulk count string", INVALID)? else {
        return Ok(None);
    };
    let len = parse_i64(len)
        .and_then(|len| usize::try_from(len).ok())
        .filter(|&len| len <= limits.max_bulk_bytes)
        .ok_or_else(|| ProtocolError::new(INVALID))?;
    // The command's least size: what is parsed, this argument, the others at their least.
    let end = header.saturating_add(len);
    let least = pos
        .saturating_add(end)
        .saturating_add(2)
        .saturating_add((remaining - 1).saturating_mul(MIN_ARG_BYTES));
    if least > limits.max_request_bytes {
        return Err(request_too_big(limits));
    }
    for (i, want) in [b'\r', b'\n'].into_iter().enumerate() {
        match rest.get(end + i) {
            None => return Ok(None),
            Some(&b) if b == want => {}
            Some(_) => return Err(ProtocolError::new("expected CRLF after bulk data")),
        }
    }
    Ok(Some((rest.get(header..end).unwrap_or_default(), end + 2)))
}

/// An inline command: a line up to `\n` (a `\r` before it dropped), split by `sdssplitargs`.
fn parse_inline(buf: &[u8], limits: &Limits) -> Result<Parsed, ProtocolError> {
    let window = buf.get(..buf.len().min(MAX_LINE_BYTES + 1)).unwrap_or(buf);
    let Some(newline) = window.iter().position(|&b| b == b'\n') else {
        // The line and its `\n` will take more than `buf`.
        return if buf.len() >= limits.max_request_bytes {
            Err(request_too_big(limits))
        } else if buf.len() > MAX_LINE_BYTES {
            Err(ProtocolError::new("too big inline request"))
        } else {
            Ok(None)
        };
    };
    let consumed = newline + 1;
    if consumed > limits.max_request_bytes {
        return Err(request_too_big(limits));
    }
    let mut line = buf.get(..newline).unwrap_or_default();
    if let Some(stripped) = line.strip_suffix(b"\r") {
        line = stripped;
    }
    let args =
        split_args(line).ok_or_else(|| ProtocolError::new("unbalanced quotes in request"))?;
    if args.len() > limits.max_args.min(MAX_MULTIBULK_ARGS) {
        return Err(ProtocolError::new(format!(
            "too many arguments in inline request (max-args {})",
            limits.max_args
        )));
    }
    if args.iter().any(|arg| arg.len() > limits.max_bulk_bytes) {
        return Err(ProtocolError::new(format!(
            "inline argument exceeds max-bulk-bytes ({})",
            limits.max_bulk_bytes
        )));
    }
    Ok(Some((args, consumed)))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests;
