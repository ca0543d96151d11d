//! TEMPORARY minimal RESP2 codec (replaced by the real one from the `resp` branch).
#![allow(missing_docs, clippy::type_complexity)]

pub struct Limits {
    pub max_bulk_bytes: usize,
    pub max_request_bytes: usize,
    pub max_args: usize,
}

#[derive(Debug)]
pub struct ProtocolError(pub String);

pub fn parse_command(
    buf: &[u8],
    limits: &Limits,
) -> Result<Option<(Vec<Vec<u8>>, usize)>, ProtocolError> {
    let line_end = |from: usize| -> Option<usize> {
        buf.get(from..)?
            .windows(2)
            .position(|w| w == b"\r\n")
            .map(|p| from + p)
    };
    if buf.is_empty() {
        return Ok(None);
    }
    if buf[0] != b'*' {
        let Some(nl) = buf.iter().position(|&b| b == b'\n') else {
            return Ok(None);
        };
        let line = String::from_utf8_lossy(&buf[..nl])
            .trim_end_matches('\r')
            .to_string();
        let args = line
            .split_whitespace()
            .map(|s| s.as_bytes().to_vec())
            .collect();
        return Ok(Some((args, nl + 1)));
    }
    let Some(e) = line_end(1) else {
        return Ok(None);
    };
    let n: i64 = std::str::from_utf8(&buf[1..e])
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| ProtocolError("invalid multibulk length".into()))?;
    if n > limits.max_args as i64 {
        return Err(ProtocolError("invalid multibulk length".into()));
    }
    let mut pos = e + 2;
    let mut args = Vec::new();
    for _ in 0..n.max(0) {
        if pos >= buf.len() {
            return Ok(None);
        }
        if buf[pos] != b'$' {
            return Err(ProtocolError(format!(
                "expected '$', got '{}'",
                buf[pos] as char
            )));
        }
        let Some(e) = line_end(pos + 1) else {
            return Ok(None);
        };
        let len: i64 = std::str::from_utf8(&buf[pos + 1..e])
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| ProtocolError("invalid bulk length".into()))?;
        if len < 0 || len as usize > limits.max_bulk_bytes {
            return Err(ProtocolError("invalid bulk length".into()));
        }
        let start = e + 2;
        let end = start + len as usize;
        if buf.len() < end + 2 {
            return Ok(None);
        }
        args.push(buf[start..end].to_vec());
        pos = end + 2;
    }
    let _ = limits.max_request_bytes;
    Ok(Some((args, pos)))
}

pub fn write_simple(out: &mut Vec<u8>, s: &str) {
    out.push(b'+');
    out.extend_from_slice(s.as_bytes());
    out.extend_from_slice(b"\r\n");
}
pub fn write_error(out: &mut Vec<u8>, s: &str) {
    out.push(b'-');
    out.extend_from_slice(s.as_bytes());
    out.extend_from_slice(b"\r\n");
}
pub fn write_integer(out: &mut Vec<u8>, n: i64) {
    out.extend_from_slice(format!(":{n}\r\n").as_bytes());
}
pub fn write_bulk(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(format!("${}\r\n", b.len()).as_bytes());
    out.extend_from_slice(b);
    out.extend_from_slice(b"\r\n");
}
pub fn write_null(out: &mut Vec<u8>) {
    out.extend_from_slice(b"$-1\r\n");
}
pub fn write_array_header(out: &mut Vec<u8>, n: usize) {
    out.extend_from_slice(format!("*{n}\r\n").as_bytes());
}
pub fn format_double(v: f64) -> String {
    format!("{v}")
}
