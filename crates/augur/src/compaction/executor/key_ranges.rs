//! How a compaction splits into sub-compactions: ranges of user keys of about equal bytes
//! of the output level's inputs, cut at their files' first keys.

use crate::compaction::Compaction;

/// A half-open range of user keys `[start, end)`; `None` is unbounded.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct KeyRange {
    pub(super) start: Option<Vec<u8>>,
    pub(super) end: Option<Vec<u8>>,
}

/// Splits `c`'s key space into at most `parts` ranges of about equal bytes of the output
/// level's inputs, cut at their files' first keys (each file's keys fall in one range). A
/// compaction with fewer than two such files is not split.
pub(super) fn split_by_key_range(c: &Compaction, parts: usize) -> Vec<KeyRange> {
    let files: Vec<(&[u8], u64)> = c
        .next_inputs
        .iter()
        .map(|f| (f.smallest_key(), f.meta.file_size))
        .collect();
    let mut ranges = Vec::new();
    let mut start = None;
    for cut in cut_keys(&files, parts) {
        ranges.push(KeyRange {
            start: start.take(),
            end: Some(cut.clone()),
        });
        start = Some(cut);
    }
    ranges.push(KeyRange { start, end: None });
    ranges
}

/// The first keys of the files (given in key order as `(first key, bytes)`) at which a run
/// of them is cut into at most `parts` pieces of about equal bytes; never before the first
/// file.
fn cut_keys(files: &[(&[u8], u64)], parts: usize) -> Vec<Vec<u8>> {
    let parts = parts.min(files.len());
    if parts < 2 {
        return Vec::new();
    }
    let total: u64 = files.iter().map(|f| f.1).sum();
    let mut cuts: Vec<Vec<u8>> = Vec::new();
    let mut sum = 0u64;
    for (i, (first, bytes)) in files.iter().enumerate() {
        let next_cut = u128::from(total) * (cuts.len() as u128 + 1) / parts as u128;
        if i > 0 && u128::from(sum) >= next_cut && cuts.len() + 1 < parts {
            cuts.push(first.to_vec());
        }
        sum += bytes;
    }
    cuts
}

#[cfg(test)]
mod tests {
    use super::cut_keys;

    #[test]
    fn cuts_split_bytes_evenly_at_file_starts() {
        let files: Vec<(&[u8], u64)> = vec![(b"a", 10), (b"c", 10), (b"e", 10), (b"g", 10)];
        assert_eq!(cut_keys(&files, 2), vec![b"e".to_vec()]);
        assert_eq!(
            cut_keys(&files, 4),
            vec![b"c".to_vec(), b"e".to_vec(), b"g".to_vec()]
        );
        // More parts than files: one per file at most.
        assert_eq!(cut_keys(&files, 9).len(), 3);
        // One file or one part: no cut.
        assert!(cut_keys(&files[..1], 4).is_empty());
        assert!(cut_keys(&files, 1).is_empty());
        // A big first file: the cut comes after it.
        let skewed: Vec<(&[u8], u64)> = vec![(b"a", 100), (b"c", 1), (b"e", 1)];
        assert_eq!(cut_keys(&skewed, 2), vec![b"c".to_vec()]);
    }
}
