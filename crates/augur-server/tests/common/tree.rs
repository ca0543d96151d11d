//! Replies parsed into a tree (RESP2 and RESP3 types), for the tests that compare replies
//! whose order Redis does not specify (a hash's fields, KEYS): sort an aggregate's elements
//! or pairs, then compare the re-encoded bytes.

/// One reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    /// A one-line reply (`+ - : _ , # (`): its type byte and text.
    Line(u8, String),
    /// A length-prefixed string (`$ = !`): its type byte and bytes (`None`: `$-1`).
    Bulk(u8, Option<Vec<u8>>),
    /// An aggregate (`* ~ > %`): its type byte and elements (a map's keys and values
    /// alternating); `None` for `*-1`.
    Agg(u8, Option<Vec<Node>>),
}

/// Parses one complete reply (panics on anything else: a test's bug or the server's).
pub fn parse(bytes: &[u8]) -> Node {
    let (node, used) = parse_at(bytes, 0);
    assert_eq!(used, bytes.len(), "trailing bytes after a reply: {bytes:?}");
    node
}

fn parse_at(buf: &[u8], at: usize) -> (Node, usize) {
    let end = buf[at..]
        .windows(2)
        .position(|w| w == b"\r\n")
        .map(|p| p + at)
        .unwrap_or_else(|| panic!("an unterminated line: {:?}", &buf[at..]));
    let kind = buf[at];
    let head = String::from_utf8_lossy(&buf[at + 1..end]).into_owned();
    let after = end + 2;
    match kind {
        b'+' | b'-' | b':' | b'_' | b',' | b'#' | b'(' => (Node::Line(kind, head), after),
        b'$' | b'=' | b'!' => {
            let n: i64 = head.parse().expect("a length");
            if n < 0 {
                return (Node::Bulk(kind, None), after);
            }
            let n = n as usize;
            (
                Node::Bulk(kind, Some(buf[after..after + n].to_vec())),
                after + n + 2,
            )
        }
        b'*' | b'~' | b'>' | b'%' => {
            let n: i64 = head.parse().expect("a count");
            if n < 0 {
                return (Node::Agg(kind, None), after);
            }
            let per = if kind == b'%' { 2 } else { 1 };
            let mut items = Vec::new();
            let mut pos = after;
            for _ in 0..n * per {
                let (item, next) = parse_at(buf, pos);
                items.push(item);
                pos = next;
            }
            (Node::Agg(kind, Some(items)), pos)
        }
        _ => panic!("not a reply: {:?}", String::from_utf8_lossy(&buf[at..])),
    }
}

impl Node {
    /// The reply re-encoded (lossy for non-UTF-8 one-line replies).
    pub fn text(&self) -> String {
        match self {
            Node::Line(kind, text) => format!("{}{text}\r\n", char::from(*kind)),
            Node::Bulk(kind, None) => format!("{}-1\r\n", char::from(*kind)),
            Node::Bulk(kind, Some(b)) => format!(
                "{}{}\r\n{}\r\n",
                char::from(*kind),
                b.len(),
                String::from_utf8_lossy(b)
            ),
            Node::Agg(kind, None) => format!("{}-1\r\n", char::from(*kind)),
            Node::Agg(kind, Some(items)) => {
                let n = if *kind == b'%' {
                    items.len() / 2
                } else {
                    items.len()
                };
                let mut out = format!("{}{n}\r\n", char::from(*kind));
                for item in items {
                    out.push_str(&item.text());
                }
                out
            }
        }
    }

    /// The elements of an aggregate.
    pub fn items(&self) -> Option<&[Node]> {
        match self {
            Node::Agg(_, Some(items)) => Some(items),
            _ => None,
        }
    }

    /// The aggregate with its elements sorted (by their encoding); anything else as is.
    pub fn sort_items(self) -> Node {
        match self {
            Node::Agg(kind, Some(mut items)) => {
                items.sort_by_key(Node::text);
                Node::Agg(kind, Some(items))
            }
            other => other,
        }
    }

    /// The aggregate with its pairs of elements (a map's entries, or a flat array of
    /// field, value, field, value…) sorted; anything else as is.
    pub fn sort_pairs(self) -> Node {
        match self {
            Node::Agg(kind, Some(items)) => {
                let mut pairs: Vec<Vec<Node>> = items.chunks(2).map(<[Node]>::to_vec).collect();
                pairs.sort_by_key(|p| p.iter().map(Node::text).collect::<String>());
                Node::Agg(kind, Some(pairs.into_iter().flatten().collect()))
            }
            other => other,
        }
    }

    /// The aggregate with its element `i` replaced by `f(element)`.
    pub fn map_item(self, i: usize, f: impl FnOnce(Node) -> Node) -> Node {
        match self {
            Node::Agg(kind, Some(mut items)) if i < items.len() => {
                let item = items.remove(i);
                items.insert(i, f(item));
                Node::Agg(kind, Some(items))
            }
            other => other,
        }
    }
}
