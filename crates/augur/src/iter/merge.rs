//! K-way merge of sorted internal-entry sources in one direction.
//!
//! Sources yield entries in internal order (forward) or its reverse (backward); the merge
//! yields their union in the same order. Sources are few (memtables, L0 files, one cursor per
//! deeper level), so the next entry is found by a linear scan over the sources' heads, which
//! beats a heap at these sizes. Errors from a source are yielded and end the merge.

use crate::error::Result;
use crate::key;
use crate::sst::Entry;
use std::cmp::Ordering;

/// A boxed source of entries.
pub type Source = Box<dyn Iterator<Item = Result<Entry>> + Send>;

/// Order of two entries in internal-key order.
pub fn internal_cmp(a: &Entry, b: &Entry) -> Ordering {
    key::compare(
        &a.user_key,
        key::pack_trailer(a.seqno, a.kind),
        &b.user_key,
        key::pack_trailer(b.seqno, b.kind),
    )
}

/// Merges sources forward (ascending internal order) or backward (descending).
pub struct MergingIter {
    sources: Vec<Source>,
    heads: Vec<Option<Entry>>,
    forward: bool,
    started: bool,
    failed: bool,
}

impl MergingIter {
    /// Merges `sources`, each already ordered in the direction given by `forward`.
    pub fn new(sources: Vec<Source>, forward: bool) -> Self {
        let n = sources.len();
        MergingIter {
            sources,
            heads: vec![None; n],
            forward,
            started: false,
            failed: false,
        }
    }

    fn fill(&mut self, i: usize) -> Result<()> {
        if let Some(src) = self.sources.get_mut(i) {
            self.heads[i] = src.next().transpose()?;
        }
        Ok(())
    }
}

impl Iterator for MergingIter {
    type Item = Result<Entry>;

    fn next(&mut self) -> Option<Result<Entry>> {
        if self.failed {
            return None;
        }
        if !self.started {
            self.started = true;
            for i in 0..self.sources.len() {
                if let Err(e) = self.fill(i) {
                    self.failed = true;
                    return Some(Err(e));
                }
            }
        }
        let mut best: Option<usize> = None;
        for (i, head) in self.heads.iter().enumerate() {
            let Some(h) = head else { continue };
            best = match best {
                None => Some(i),
                Some(b) => {
                    let Some(cur) = self.heads[b].as_ref() else {
                        continue;
                    };
                    let ord = internal_cmp(h, cur);
                    let better = if self.forward {
                        ord == Ordering::Less
                    } else {
                        ord == Ordering::Greater
                    };
                    Some(if better { i } else { b })
                }
            };
        }
        let b = best?;
        let out = self.heads[b].take();
        if let Err(e) = self.fill(b) {
            self.failed = true;
            return Some(Err(e));
        }
        out.map(Ok)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::ValueKind;

    fn e(k: &str, s: u64) -> Entry {
        Entry {
            user_key: k.as_bytes().to_vec(),
            seqno: s,
            kind: ValueKind::Value,
            value: Vec::new(),
        }
    }

    fn src(v: Vec<Entry>) -> Source {
        Box::new(v.into_iter().map(Ok))
    }

    #[test]
    fn merges_both_directions() {
        let a = vec![e("a", 1), e("c", 3)];
        let b = vec![e("b", 2), e("c", 5)];
        let fwd: Vec<_> = MergingIter::new(vec![src(a.clone()), src(b.clone())], true)
            .map(|r| r.map(|e| (e.user_key, e.seqno)).unwrap())
            .collect();
        assert_eq!(
            fwd,
            vec![
                (b"a".to_vec(), 1),
                (b"b".to_vec(), 2),
                (b"c".to_vec(), 5),
                (b"c".to_vec(), 3)
            ]
        );
        let ra: Vec<_> = a.into_iter().rev().collect();
        let rb: Vec<_> = b.into_iter().rev().collect();
        let mut back: Vec<_> = MergingIter::new(vec![src(ra), src(rb)], false)
            .map(|r| r.map(|e| (e.user_key, e.seqno)).unwrap())
            .collect();
        back.reverse();
        assert_eq!(back, fwd);
    }

    #[test]
    fn error_ends_merge() {
        let bad: Source = Box::new(vec![Ok(e("a", 1)), Err(crate::Error::Closed)].into_iter());
        let out: Vec<_> = MergingIter::new(vec![bad, src(vec![e("b", 1)])], true).collect();
        assert!(out.iter().any(|r| r.is_err()));
        assert!(matches!(out.last(), Some(Err(_))));
    }
}
