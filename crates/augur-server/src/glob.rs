//! Redis's glob patterns (`KEYS`, `SCAN ... MATCH`): `*` any run of bytes, `?` one byte,
//! `[abc]`, `[^abc]` and `[a-z]` a byte of a class, `\x` the byte `x` itself; case matters.
//! Matched with one star's backtracking (no recursion, so no pattern can take exponential
//! time), and the pattern's literal prefix lets a scan start and stop inside the key range
//! that can match.

/// True when `key` matches `pattern`.
pub fn matches(pattern: &[u8], key: &[u8]) -> bool {
    let (mut p, mut k) = (0usize, 0usize);
    // Where to resume after the last `*`: the pattern just past it, and the key position it
    // has swallowed up to.
    let mut star: Option<(usize, usize)> = None;
    while k < key.len() {
        match step(pattern, p, key[k]) {
            Step::Star => {
                star = Some((p + 1, k));
                p += 1;
                continue;
            }
            Step::Matched(next) => {
                p = next;
                k += 1;
                continue;
            }
            Step::Failed => {}
        }
        match star {
            Some((sp, sk)) => {
                // Let the last star swallow one more byte and retry.
                p = sp;
                k = sk + 1;
                star = Some((sp, sk + 1));
            }
            None => return false,
        }
    }
    // The key is used up: only stars may remain.
    pattern
        .get(p..)
        .unwrap_or_default()
        .iter()
        .all(|&c| c == b'*')
}

/// What the pattern element at `p` does with the key byte `b`.
enum Step {
    /// A `*`.
    Star,
    /// It matched; the next element starts at this index.
    Matched(usize),
    /// It did not match (or the pattern is used up).
    Failed,
}

fn step(pattern: &[u8], p: usize, b: u8) -> Step {
    match pattern.get(p) {
        None => Step::Failed,
        Some(b'*') => Step::Star,
        Some(b'?') => Step::Matched(p + 1),
        Some(b'\\') if p + 1 < pattern.len() => {
            if pattern[p + 1] == b {
                Step::Matched(p + 2)
            } else {
                Step::Failed
            }
        }
        Some(b'[') => {
            let (hit, next) = class(pattern, p + 1, b);
            if hit {
                Step::Matched(next)
            } else {
                Step::Failed
            }
        }
        Some(&c) if c == b => Step::Matched(p + 1),
        Some(_) => Step::Failed,
    }
}

/// Matches `b` against the class starting at `p` (just after `[`): whether it is in the
/// class, and the index after the closing `]` (the pattern's end when unclosed, as Redis).
fn class(pattern: &[u8], mut p: usize, b: u8) -> (bool, usize) {
    let negate = pattern.get(p) == Some(&b'^');
    if negate {
        p += 1;
    }
    let mut hit = false;
    loop {
        match pattern.get(p) {
            None => break,
            Some(b']') => {
                p += 1;
                break;
            }
            Some(b'\\') if p + 1 < pattern.len() => {
                hit |= pattern[p + 1] == b;
                p += 2;
            }
            Some(&lo) if pattern.get(p + 1) == Some(&b'-') && p + 2 < pattern.len() => {
                let hi = pattern[p + 2];
                let (lo, hi) = if lo > hi { (hi, lo) } else { (lo, hi) };
                hit |= (lo..=hi).contains(&b);
                p += 3;
            }
            Some(&c) => {
                hit |= c == b;
                p += 1;
            }
        }
    }
    (hit != negate, p)
}

/// The bytes every key matching `pattern` starts with (before its first `*`, `?` or `[`,
/// with escapes resolved).
pub fn literal_prefix(pattern: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(&c) = pattern.get(i) {
        match c {
            b'*' | b'?' | b'[' => break,
            b'\\' => match pattern.get(i + 1) {
                Some(&e) => {
                    out.push(e);
                    i += 2;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            },
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// True when `pattern` matches exactly the keys with its literal prefix and nothing else
/// remains to check (the prefix, then `*`s only).
pub fn is_prefix_only(pattern: &[u8]) -> bool {
    let prefix = literal_prefix(pattern);
    // The literal part's length in the pattern, escapes counted.
    let mut i = 0;
    let mut taken = 0;
    while taken < prefix.len() {
        i += if pattern.get(i) == Some(&b'\\') { 2 } else { 1 };
        taken += 1;
    }
    pattern
        .get(i..)
        .unwrap_or_default()
        .iter()
        .all(|&c| c == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redis_glob_examples() {
        let yes = [
            ("*", ""),
            ("*", "anything"),
            ("h?llo", "hello"),
            ("h?llo", "hallo"),
            ("h*llo", "hllo"),
            ("h*llo", "heeeello"),
            ("h[ae]llo", "hello"),
            ("h[^e]llo", "hallo"),
            ("h[a-b]llo", "hbllo"),
            ("h[b-a]llo", "hallo"),
            ("user:*", "user:1"),
            ("a\\*b", "a*b"),
            ("*:*:*", "a:b:c"),
            ("[\\]]", "]"),
            ("**a", "bba"),
        ];
        for (p, k) in yes {
            assert!(matches(p.as_bytes(), k.as_bytes()), "{p} should match {k}");
        }
        let no = [
            ("h?llo", "hllo"),
            ("h[ae]llo", "hillo"),
            ("h[^e]llo", "hello"),
            ("user:*", "users"),
            ("a\\*b", "axb"),
            ("abc", "ab"),
            ("ab", "abc"),
            ("", "a"),
            ("*a", "bbb"),
        ];
        for (p, k) in no {
            assert!(
                !matches(p.as_bytes(), k.as_bytes()),
                "{p} should not match {k}"
            );
        }
    }

    #[test]
    fn stars_cannot_blow_up() {
        let pattern = "*a".repeat(50) + "b";
        let key = "a".repeat(5000);
        assert!(!matches(pattern.as_bytes(), key.as_bytes()));
    }

    #[test]
    fn literal_prefixes() {
        assert_eq!(literal_prefix(b"user:*"), b"user:");
        assert_eq!(literal_prefix(b"a\\*b*"), b"a*b");
        assert_eq!(literal_prefix(b"*"), b"");
        assert!(is_prefix_only(b"user:*"));
        assert!(is_prefix_only(b"a\\*b**"));
        assert!(!is_prefix_only(b"user:*:x"));
        assert!(is_prefix_only(b"exact"));
    }
}
