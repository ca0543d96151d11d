//! Running one command list on redis-server and on augur-server and comparing the replies,
//! with the replies whose order or randomness Redis does not specify normalized first
//! (`tree.rs`): a hash's fields (HGETALL, HKEYS, HVALS, HSCAN), KEYS and SCAN, HRANDFIELD, and
//! times counted from each server's own clock (TTL, PTTL, EXPIRETIME of a relative expiry).
//! Everything else — errors, counts, nulls, RESP3 types — is compared byte for byte.

use super::tree::{parse, Node};
use super::{encode, Raw};
use std::net::SocketAddr;

/// How a command's reply is compared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Norm {
    /// Byte for byte.
    Exact,
    /// An aggregate of elements in no particular order (HKEYS, HVALS, KEYS).
    Items,
    /// An aggregate of field-value pairs in no particular order (HGETALL).
    Pairs,
    /// `[cursor, keys]` (SCAN): the keys in no particular order.
    ScanItems,
    /// `[cursor, field-value pairs]` (HSCAN).
    ScanPairs,
    /// HRANDFIELD with this count (none: one field), and WITHVALUES.
    Random(Option<i64>, bool),
    /// A time left or an expiry time from a relative expiry: a positive number is just
    /// "positive".
    Clock,
    /// EXEC: an array of the queued commands' replies, each normalized its way.
    Exec(Vec<Norm>),
}

impl Norm {
    /// How the reply to `words` is compared, with `clock` for TTL-like commands (their
    /// numbers depend on when each server ran them).
    pub fn of(words: &[Vec<u8>], clock: bool) -> Norm {
        let name = String::from_utf8_lossy(words.first().map_or(&[][..], |w| w)).to_lowercase();
        match name.as_str() {
            "hgetall" => Norm::Pairs,
            "hkeys" | "hvals" | "keys" => Norm::Items,
            "scan" => Norm::ScanItems,
            "hscan" => Norm::ScanPairs,
            "hrandfield" => Norm::Random(
                words
                    .get(2)
                    .and_then(|c| std::str::from_utf8(c).ok()?.parse().ok()),
                words.len() == 4,
            ),
            "ttl" | "pttl" | "expiretime" | "pexpiretime" if clock => Norm::Clock,
            _ => Norm::Exact,
        }
    }

    /// The reply as compared.
    pub fn apply(&self, node: Node) -> String {
        match self {
            Norm::Exact => node.text(),
            Norm::Items => node.sort_items().text(),
            Norm::Pairs => node.sort_pairs().text(),
            Norm::ScanItems => node.map_item(1, Node::sort_items).text(),
            Norm::ScanPairs => node.map_item(1, Node::sort_pairs).text(),
            Norm::Clock => match &node {
                Node::Line(b':', n) if n.parse::<i64>().is_ok_and(|n| n > 0) => ":positive".into(),
                _ => node.text(),
            },
            Norm::Random(count, with_values) => random(node, *count, *with_values),
            Norm::Exec(queued) => match node {
                Node::Agg(kind, Some(items)) if items.len() == queued.len() => {
                    let inner: Vec<String> = items
                        .into_iter()
                        .zip(queued)
                        .map(|(item, norm)| norm.apply(item))
                        .collect();
                    format!("{}{}\r\n{}", char::from(kind), inner.len(), inner.concat())
                }
                other => other.text(),
            },
        }
    }
}

/// HRANDFIELD's reply as compared: a whole hash (a positive count above its size) sorted,
/// random picks as their number only.
fn random(node: Node, count: Option<i64>, with_values: bool) -> String {
    let Some(items) = node.items() else {
        return match node {
            Node::Bulk(_, Some(_)) => "<a field>".into(),
            other => other.text(),
        };
    };
    let nested = items.first().is_some_and(|i| i.items().is_some());
    let fields = if with_values && !nested {
        items.len() / 2
    } else {
        items.len()
    };
    match count {
        Some(c) if c > 0 && (fields as i64) < c => {
            if with_values && !nested {
                node.sort_pairs().text()
            } else {
                node.sort_items().text()
            }
        }
        _ => format!("<{fields} random fields>"),
    }
}

/// Words of a command from text (`\\xNN` spells the byte 0xNN).
pub fn words(cmd: &[&str]) -> Vec<Vec<u8>> {
    cmd.iter()
        .map(|w| {
            let mut out = Vec::new();
            let mut rest = w.as_bytes();
            while !rest.is_empty() {
                let hex = rest
                    .strip_prefix(b"\\x")
                    .and_then(|h| std::str::from_utf8(h.get(..2)?).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                match hex {
                    Some(b) => {
                        out.push(b);
                        rest = &rest[4..];
                    }
                    None => {
                        out.push(rest[0]);
                        rest = &rest[1..];
                    }
                }
            }
            out
        })
        .collect()
}

/// Runs `cmds` on a fresh connection to `addr` (speaking RESP3 from the start with
/// `resp3`), in pipelined writes of `chunk` commands, and returns each reply normalized
/// (`Norm::of`, EXEC's elements by their queued commands).
pub fn run(
    addr: SocketAddr,
    cmds: &[Vec<Vec<u8>>],
    resp3: bool,
    chunk: &dyn Fn(usize) -> usize,
    clock: bool,
) -> Vec<String> {
    let mut c = Raw::connect(addr);
    if resp3 {
        let hello = c.cmd(&[b"HELLO", b"3"]);
        assert!(hello.starts_with(b"%7\r\n"), "{hello:?}");
    }
    let mut out = Vec::with_capacity(cmds.len());
    let mut queued: Option<Vec<Norm>> = None;
    let mut i = 0;
    while i < cmds.len() {
        let n = chunk(i).clamp(1, cmds.len() - i);
        let batch = &cmds[i..i + n];
        let bytes: Vec<u8> = batch
            .iter()
            .flat_map(|w| encode(&w.iter().map(Vec::as_slice).collect::<Vec<_>>()))
            .collect();
        c.send(&bytes);
        for words in batch {
            let reply = c.reply().unwrap_or_else(|| b"<closed>".to_vec());
            if reply == b"<closed>" {
                out.push("<closed>".into());
                continue;
            }
            let node = parse(&reply);
            let name = String::from_utf8_lossy(&words[0]).to_lowercase();
            let norm = match name.as_str() {
                "exec" => Norm::Exec(queued.take().unwrap_or_default()),
                "discard" => {
                    queued = None;
                    Norm::Exact
                }
                _ => Norm::of(words, clock),
            };
            if name == "multi" && node == Node::Line(b'+', "OK".into()) && queued.is_none() {
                queued = Some(Vec::new());
            } else if let (Some(q), Node::Line(b'+', s)) = (queued.as_mut(), &node) {
                if s == "QUEUED" {
                    q.push(norm.clone());
                }
            }
            out.push(norm.apply(node));
        }
        i += n;
    }
    out
}

/// The first difference between two runs of `cmds`, described, or `None`.
pub fn first_difference(cmds: &[Vec<Vec<u8>>], want: &[String], got: &[String]) -> Option<String> {
    for (i, (w, g)) in want.iter().zip(got).enumerate() {
        if w != g {
            let shown: Vec<String> = cmds
                .get(i.saturating_sub(3)..=i)
                .unwrap_or_default()
                .iter()
                .map(|c| {
                    format!(
                        "{:?}",
                        c.iter()
                            .map(|w| String::from_utf8_lossy(w))
                            .collect::<Vec<_>>()
                    )
                })
                .collect();
            return Some(format!(
                "reply {i} differs\n  commands (last is the one): {}\n  redis: {w:?}\n  augur: {g:?}",
                shown.join(" ")
            ));
        }
    }
    (want.len() != got.len()).then(|| format!("{} replies vs {}", want.len(), got.len()))
}
