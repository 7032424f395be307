//! The loose matcher: finds many byte patterns in one pass over a text, ignoring ASCII case and
//! any whitespace (spaces, tabs, line breaks) inside a match.
//!
//! Every pattern is stored *folded*: ASCII letters lower-cased, whitespace removed. The scan
//! folds the text the same way on the fly, byte by byte (one table lookup), and keeps the last
//! [`KEY`] kept bytes in a rolling 64-bit window. A bitmap, indexed by a hash of that window,
//! holds a bit for the first [`KEY`] bytes of every pattern, so a position is looked at closely
//! only when the window could start one; there the text's folded bytes from the window's start
//! are looked up in the sorted pattern table for the longest pattern they begin with.
//!
//! The cost per byte is a table lookup, a shift, a multiply and one bitmap load, whatever the
//! number of patterns: 1,000 vault values with all their encoded forms (about 30,000 patterns)
//! scan at the speed of a few (BENCHMARKS.md, "redaction, 1,000 vault entries"). Matches are
//! leftmost, then longest, and do not overlap — the same choice Aho-Corasick's leftmost-longest
//! mode makes, which the tests compare it with.

/// Bytes of a pattern's start that the bitmap is keyed on; every loose pattern is at least this
/// long once folded.
pub(crate) const KEY: usize = 6;
const KEY_MASK: u64 = (1 << (8 * KEY)) - 1;
/// Marks a byte that the fold skips.
const SKIP: u16 = 0x100;

/// The fold of every byte: ASCII upper case to lower case, whitespace to [`SKIP`], the rest as is.
static FOLD: [u16; 256] = {
    let mut t = [0u16; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        t[b] = if matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c) {
            SKIP
        } else {
            c.to_ascii_lowercase() as u16
        };
        b += 1;
    }
    t
};

/// `bytes` folded: ASCII lower case, whitespace removed.
pub(crate) fn fold(bytes: &[u8]) -> Vec<u8> {
    bytes
        .iter()
        .filter_map(|&b| u8::try_from(FOLD[b as usize]).ok())
        .collect()
}

/// One match: `text[start..end]`, the pattern's index in the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Hit {
    pub start: usize,
    pub end: usize,
    pub pattern: usize,
}

/// A compiled set of folded patterns.
#[derive(Clone, Default)]
pub(crate) struct Loose {
    /// Sorted, deduplicated folded patterns, each at least [`KEY`] bytes.
    patterns: Vec<Vec<u8>>,
    /// Per sorted pattern: the caller's id for it (the first one given, for duplicates).
    ids: Vec<usize>,
    bitmap: Vec<u64>,
    /// The distinct first [`KEY`] bytes of the patterns, sorted: checked on a bitmap hit before
    /// the table is searched.
    keys: Vec<u64>,
    /// `64 - log2(bits in the bitmap)`.
    shift: u32,
    longest: usize,
}

fn key_of(folded: &[u8]) -> u64 {
    folded[..KEY]
        .iter()
        .fold(0u64, |w, &b| (w << 8) | u64::from(b))
}

#[inline(always)]
fn slot(window: u64, shift: u32) -> usize {
    ((window & KEY_MASK).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> shift) as usize
}

impl Loose {
    /// Build from `(folded pattern, id)` pairs; patterns shorter than [`KEY`] are ignored (the
    /// caller matches those exactly).
    pub fn new(pairs: impl IntoIterator<Item = (Vec<u8>, usize)>) -> Loose {
        let mut all: Vec<(Vec<u8>, usize)> =
            pairs.into_iter().filter(|(p, _)| p.len() >= KEY).collect();
        if all.is_empty() {
            return Loose::default();
        }
        // Stable: among equal patterns the first given keeps its id.
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all.dedup_by(|later, first| later.0 == first.0);
        let mut keys: Vec<u64> = all.iter().map(|(p, _)| key_of(p)).collect();
        keys.dedup();
        // About 64 bitmap bits per distinct start keeps false positives near one position in
        // 64 (each then costs a binary search of `keys`); between 8 KiB and 2 MiB.
        let bits = (keys.len() * 64)
            .next_power_of_two()
            .clamp(1 << 16, 1 << 24);
        let shift = 64 - bits.trailing_zeros();
        let mut bitmap = vec![0u64; bits / 64];
        for &k in &keys {
            let s = slot(k, shift);
            bitmap[s >> 6] |= 1 << (s & 63);
        }
        let longest = all.iter().map(|(p, _)| p.len()).max().unwrap_or(0);
        let (patterns, ids) = all.into_iter().unzip();
        Loose {
            patterns,
            ids,
            bitmap,
            keys,
            shift,
            longest,
        }
    }

    /// The longest folded pattern, in bytes (0 when empty).
    pub fn longest(&self) -> usize {
        self.longest
    }

    /// Every match in `text`, leftmost first, longest at each start, none overlapping; `f`
    /// returns `false` to stop early.
    pub fn scan(&self, text: &[u8], mut f: impl FnMut(Hit) -> bool) {
        if self.patterns.is_empty() {
            return;
        }
        let mut window = 0u64;
        let mut kept = 0usize;
        let mut i = 0;
        let mut scratch = Vec::with_capacity(self.longest);
        while i < text.len() {
            let v = FOLD[text[i] as usize];
            i += 1;
            if v == SKIP {
                continue;
            }
            window = (window << 8) | u64::from(v);
            kept += 1;
            if kept < KEY {
                continue;
            }
            let s = slot(window, self.shift);
            if self.bitmap[s >> 6] & (1 << (s & 63)) == 0
                || self.keys.binary_search(&(window & KEY_MASK)).is_err()
            {
                continue;
            }
            let start = self.start_of_window(text, i);
            if let Some(hit) = self.longest_at(text, start, &mut scratch) {
                if !f(hit) {
                    return;
                }
                i = hit.end;
                window = 0;
                kept = 0;
            }
        }
    }

    /// The position of the first of the last [`KEY`] kept bytes before `end`.
    fn start_of_window(&self, text: &[u8], end: usize) -> usize {
        let mut need = KEY;
        let mut j = end;
        while need > 0 {
            j -= 1;
            if FOLD[text[j] as usize] != SKIP {
                need -= 1;
            }
        }
        j
    }

    /// The longest pattern that the folded text from `start` begins with.
    fn longest_at(&self, text: &[u8], start: usize, scratch: &mut Vec<u8>) -> Option<Hit> {
        scratch.clear();
        let mut ends = Vec::with_capacity(self.longest);
        let mut j = start;
        while j < text.len() && scratch.len() < self.longest {
            let v = FOLD[text[j] as usize];
            j += 1;
            if v != SKIP {
                scratch.push(v as u8);
                ends.push(j);
            }
        }
        let k = self.longest_prefix(scratch)?;
        Some(Hit {
            start,
            end: ends[self.patterns[k].len() - 1],
            pattern: self.ids[k],
        })
    }

    /// The index of the longest pattern that `key` begins with.
    fn longest_prefix(&self, key: &[u8]) -> Option<usize> {
        let mut hi = key.len();
        while hi >= KEY {
            let key = &key[..hi];
            // The greatest pattern not after `key`: when `key` begins with it, no longer pattern
            // can (it would sort between the two); otherwise every pattern that `key` begins
            // with is a prefix of their common start.
            let i = self.patterns.partition_point(|p| p.as_slice() <= key);
            let p = &self.patterns[i.checked_sub(1)?];
            if key.starts_with(p) {
                return Some(i - 1);
            }
            hi = p.iter().zip(key).take_while(|(a, b)| a == b).count();
        }
        None
    }

    /// Where `text` must be cut so that it does not end in [`MIN`](super::MIN_PARTIAL_LEN) or
    /// more folded bytes that begin (but do not complete) a pattern: the start of the earliest
    /// such ending, or `None` when the end is clean.
    pub fn partial_tail(&self, text: &[u8], min: usize) -> Option<usize> {
        if self.patterns.is_empty() {
            return None;
        }
        // The last `longest - 1` kept bytes, folded, with their positions.
        let mut tail: Vec<u8> = Vec::new();
        let mut at: Vec<usize> = Vec::new();
        let mut j = text.len();
        while j > 0 && tail.len() + 1 < self.longest {
            j -= 1;
            let v = FOLD[text[j] as usize];
            if v != SKIP {
                tail.push(v as u8);
                at.push(j);
            }
        }
        tail.reverse();
        at.reverse();
        (0..tail.len().saturating_sub(min - 1))
            .find(|&k| {
                let rest = &tail[k..];
                let i = self.patterns.partition_point(|p| p.as_slice() < rest);
                self.patterns
                    .get(i)
                    .is_some_and(|p| p.len() > rest.len() && p.starts_with(rest))
            })
            .map(|k| at[k])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aho_corasick::{AhoCorasickBuilder, MatchKind};

    /// A small deterministic generator (no dependency for tests).
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            self.0 >> 33
        }
        fn pick(&mut self, from: &[u8]) -> u8 {
            from[(self.next() as usize) % from.len()]
        }
    }

    /// The loose matches, as Aho-Corasick (leftmost-longest) finds them on the folded text.
    fn reference(patterns: &[Vec<u8>], text: &[u8]) -> Vec<(usize, usize, usize)> {
        let mut folded = Vec::new();
        let mut pos = Vec::new();
        for (i, &b) in text.iter().enumerate() {
            if FOLD[b as usize] != SKIP {
                folded.push(FOLD[b as usize] as u8);
                pos.push(i);
            }
        }
        let ac = AhoCorasickBuilder::new()
            .match_kind(MatchKind::LeftmostLongest)
            .build(patterns)
            .unwrap();
        ac.find_iter(&folded)
            .map(|m| (pos[m.start()], pos[m.end() - 1] + 1, m.pattern().as_usize()))
            .collect()
    }

    #[test]
    fn finds_what_aho_corasick_finds_on_folded_text() {
        let mut g = Lcg(7);
        let alphabet = b"abcAB \n-x";
        for round in 0..300 {
            let patterns: Vec<Vec<u8>> = (0..1 + round % 12)
                .map(|_| {
                    let len = KEY + (g.next() as usize) % 6;
                    fold(&(0..len).map(|_| g.pick(b"abcx-")).collect::<Vec<_>>())
                })
                .collect();
            let loose = Loose::new(patterns.iter().cloned().zip(0..));
            let text: Vec<u8> = (0..200).map(|_| g.pick(alphabet)).collect();
            let mut got = Vec::new();
            loose.scan(&text, |h| {
                got.push((h.start, h.end, patterns[h.pattern].clone()));
                true
            });
            let want: Vec<_> = reference(&patterns, &text)
                .into_iter()
                .map(|(s, e, p)| (s, e, patterns[p].clone()))
                .collect();
            assert_eq!(
                got,
                want,
                "round {round}: {:?}",
                String::from_utf8_lossy(&text)
            );
        }
    }

    #[test]
    fn ignores_case_and_whitespace_inside_a_match() {
        let loose = Loose::new([(fold(b"Secret-Value-42"), 0)]);
        for text in [
            "x secret-value-42 y",
            "x SECRET-VALUE-42 y",
            "x Secret-Val\nue-42 y",
            "x S e c r e t - V a l u e - 4 2 y",
            "x Secret-Value\r\n-42 y",
        ] {
            let mut hits = Vec::new();
            loose.scan(text.as_bytes(), |h| {
                hits.push(&text[h.start..h.end]);
                true
            });
            assert_eq!(hits.len(), 1, "{text}");
            assert!(
                hits[0].starts_with(['s', 'S']) && hits[0].ends_with('2'),
                "{text}"
            );
        }
        let mut n = 0;
        loose.scan(b"secret-value-4", |_| {
            n += 1;
            true
        });
        assert_eq!(n, 0);
    }

    #[test]
    fn many_patterns_sharing_a_start_pick_the_longest() {
        let pats: Vec<Vec<u8>> = (0..500)
            .map(|i| format!("sk_live_{i:04}").into_bytes())
            .chain([b"sk_live_0042_extra".to_vec()])
            .collect();
        let loose = Loose::new(pats.iter().cloned().zip(0..));
        let text = b"a sk_live_0042_extra b sk_live_0499 c sk_live_9 d";
        let mut got = Vec::new();
        loose.scan(text, |h| {
            got.push(h.pattern);
            true
        });
        assert_eq!(got, vec![500, 499]);
    }

    #[test]
    fn a_partial_tail_is_found_through_case_and_whitespace() {
        let loose = Loose::new([(fold(b"Zq7vN2pLx9Rt"), 0)]);
        assert_eq!(loose.partial_tail(b"abc zq7v", 4), Some(4));
        assert_eq!(loose.partial_tail(b"abc ZQ 7V\nn2", 4), Some(4));
        assert_eq!(loose.partial_tail(b"abc zq7", 4), None);
        assert_eq!(
            loose.partial_tail(b"abc zq7vN2pLx9Rt", 4),
            None,
            "complete, not partial"
        );
        assert_eq!(loose.partial_tail(b"", 4), None);
    }
}
