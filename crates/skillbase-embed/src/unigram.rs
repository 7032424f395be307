//! The SentencePiece Unigram tokenizer of XLM-RoBERTa (multilingual-e5-small's tokenizer), as
//! the `E5S1` model file stores it: 250,002 pieces with their log-probabilities and the
//! normalizer reduced to a per-code-point replacement table.
//!
//! Encoding: each code point is replaced through the table (NFKC-like folding, control
//! characters removed, every kind of space made U+0020), runs of spaces become one, a space is
//! put in front unless the text starts with one, and every space becomes the metaspace `▁`
//! (U+2581). The most probable segmentation into pieces is then found by Viterbi over code
//! points, a code point no piece covers becoming `<unk>`; ties keep the first segmentation
//! found, scanning left to right and shortest piece first. Control pieces (`<s>`, `</s>`,
//! `<pad>`, `<unk>`, `<mask>`) are never matched from text, so a message cannot forge a
//! sequence boundary.
//!
//! Only the start of a long text is segmented: no piece spans a `▁` inside it (checked at load),
//! so the best path to a word boundary is a prefix of the best path through the whole text, and
//! cutting at a boundary changes no earlier token.

use std::collections::HashMap;

/// The metaspace that stands for a space inside pieces.
const META: char = '\u{2581}';

/// A Unigram tokenizer.
pub struct Unigram {
    /// Piece text -> id, for the pieces text may match.
    pieces: HashMap<Box<str>, u32>,
    scores: Vec<f32>,
    /// The longest piece in bytes (longer spans are not looked up).
    max_piece_bytes: usize,
    unk: u32,
    unk_score: f32,
    /// Sorted by code point: its replacement.
    norm: Vec<(char, Box<[char]>)>,
}

impl std::fmt::Debug for Unigram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Unigram")
            .field("pieces", &self.scores.len())
            .field("normalizations", &self.norm.len())
            .finish_non_exhaustive()
    }
}

impl Unigram {
    /// A tokenizer over `pieces` (id = index) with their `scores`; `control` lists the ids text
    /// never matches; `norm` is the per-code-point normalization, sorted, without duplicates.
    /// Errors name what is wrong (a piece spanning a space, an id out of range).
    pub(crate) fn new(
        pieces: Vec<String>,
        scores: Vec<f32>,
        control: &[u32],
        unk: u32,
        norm: Vec<(char, Box<[char]>)>,
    ) -> Result<Unigram, String> {
        if pieces.len() != scores.len() || pieces.is_empty() {
            return Err("pieces and scores differ in number".into());
        }
        if unk as usize >= pieces.len() {
            return Err(format!("<unk> id {unk} is not a piece"));
        }
        if let Some(s) = scores.iter().find(|s| !s.is_finite()) {
            return Err(format!("a piece score is {s}"));
        }
        if norm.windows(2).any(|w| w[0].0 >= w[1].0) {
            return Err("the normalization table is not sorted by code point".into());
        }
        let min = scores.iter().copied().fold(f32::INFINITY, f32::min);
        let mut map = HashMap::with_capacity(pieces.len());
        let mut max_piece_bytes = 1;
        for (id, p) in pieces.into_iter().enumerate() {
            let id = id as u32;
            if control.contains(&id) || p.is_empty() {
                continue;
            }
            if p.chars().skip(1).any(|c| c == META) {
                return Err(format!("piece {id} spans a word boundary"));
            }
            max_piece_bytes = max_piece_bytes.max(p.len());
            // A duplicated piece keeps its first id (as a lookup table built in order would).
            map.entry(p.into_boxed_str()).or_insert(id);
        }
        Ok(Unigram {
            pieces: map,
            scores,
            max_piece_bytes,
            unk,
            unk_score: min - 10.0,
            norm,
        })
    }

    /// Number of pieces (ids run `0..len`).
    pub fn len(&self) -> usize {
        self.scores.len()
    }

    /// Whether there are no pieces (never true for a loaded model).
    pub fn is_empty(&self) -> bool {
        self.scores.is_empty()
    }

    /// The normalized text with spaces as `▁`, as code points.
    fn normalize(&self, text: &str) -> Vec<char> {
        let mut cps: Vec<char> = Vec::with_capacity(text.len() + 1);
        for c in text.chars() {
            match self.norm.binary_search_by_key(&c, |(k, _)| *k) {
                Ok(i) => {
                    for &o in self.norm[i].1.iter() {
                        if o == ' ' && cps.last() == Some(&' ') {
                            continue;
                        }
                        cps.push(o);
                    }
                }
                Err(_) => {
                    if c == ' ' && cps.last() == Some(&' ') {
                        continue;
                    }
                    cps.push(c);
                }
            }
        }
        let mut out = Vec::with_capacity(cps.len() + 1);
        if cps.first() != Some(&' ') {
            out.push(META);
        }
        out.extend(cps.into_iter().map(|c| if c == ' ' { META } else { c }));
        out
    }

    /// The ids of `text`'s first `max` pieces (no `<s>`/`</s>`).
    pub fn encode(&self, text: &str, max: usize) -> Vec<u32> {
        if max == 0 {
            return Vec::new();
        }
        let chars = self.normalize(text);
        // Segment a prefix that ends at a word boundary and holds enough pieces, doubling it
        // until it does (a piece covers at least one code point, so `max` points is a start).
        let mut len = (max * 4).min(chars.len());
        loop {
            let cut = chars[len..]
                .iter()
                .position(|&c| c == META)
                .map_or(chars.len(), |p| len + p);
            let ids = self.viterbi(&chars[..cut]);
            if ids.len() >= max || cut == chars.len() {
                let mut ids = ids;
                ids.truncate(max);
                return ids;
            }
            len = (cut * 2).min(chars.len()).max(cut + 1).min(chars.len());
        }
    }

    fn viterbi(&self, chars: &[char]) -> Vec<u32> {
        let n = chars.len();
        // Byte offset of each code point in the UTF-8 form.
        let mut text = String::with_capacity(n * 2);
        let mut at = Vec::with_capacity(n + 1);
        for &c in chars {
            at.push(text.len());
            text.push(c);
        }
        at.push(text.len());
        let mut best = vec![f32::NEG_INFINITY; n + 1];
        let mut piece = vec![0u32; n + 1];
        let mut from = vec![0usize; n + 1];
        best[0] = 0.0;
        for i in 0..n {
            if best[i] == f32::NEG_INFINITY {
                continue;
            }
            for e in i + 1..=n {
                let span = &text[at[i]..at[e]];
                if span.len() > self.max_piece_bytes {
                    break;
                }
                if let Some(&id) = self.pieces.get(span) {
                    let score = best[i] + self.scores[id as usize];
                    if score > best[e] {
                        best[e] = score;
                        piece[e] = id;
                        from[e] = i;
                    }
                }
            }
            let score = best[i] + self.unk_score;
            if score > best[i + 1] {
                best[i + 1] = score;
                piece[i + 1] = self.unk;
                from[i + 1] = i;
            }
        }
        let mut ids = Vec::new();
        let mut i = n;
        while i > 0 {
            ids.push(piece[i]);
            i = from[i];
        }
        ids.reverse();
        ids
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toy() -> Unigram {
        let pieces = [
            "<s>", "<pad>", "</s>", "<unk>", "▁", "▁hello", "▁he", "llo", "▁wor", "ld", "▁world",
            "s", "<mask>",
        ];
        let scores = [
            0.0, 0.0, 0.0, 0.0, -3.0, -5.0, -4.0, -4.0, -6.0, -6.0, -7.0, -2.0, 0.0,
        ];
        let norm = vec![
            ('\u{1}', Vec::new().into_boxed_slice()),
            ('\t', vec![' '].into_boxed_slice()),
            ('ﬁ', vec!['f', 'i'].into_boxed_slice()),
        ];
        Unigram::new(
            pieces.iter().map(|s| s.to_string()).collect(),
            scores.to_vec(),
            &[0, 1, 2, 3, 12],
            3,
            norm,
        )
        .unwrap()
    }

    #[test]
    fn the_most_probable_segmentation_wins() {
        let t = toy();
        // "▁hello" (-5) beats "▁he"+"llo" (-8); "▁world" (-7) beats "▁wor"+"ld" (-12).
        assert_eq!(t.encode("hello world", 10), vec![5, 10]);
        assert_eq!(t.encode("hello worlds", 10), vec![5, 10, 11]);
        // Tabs and control characters are normalized, runs of spaces collapse.
        assert_eq!(t.encode("hello\t\u{1}  \tworld", 10), vec![5, 10]);
        // Unknown characters are <unk>, one per code point.
        assert_eq!(t.encode("hello éé", 10), vec![5, 4, 3, 3]);
        // Control pieces are never matched from text.
        assert!(
            !t.encode("<s></s><mask>", 20)
                .iter()
                .any(|&i| i < 3 || i == 12)
        );
        assert_eq!(t.encode("", 5), vec![4]);
        assert_eq!(t.encode("hello world", 1), vec![5]);
        assert_eq!(t.encode("hello world", 0), Vec::<u32>::new());
    }

    #[test]
    fn a_long_text_is_cut_at_a_word_boundary_without_changing_its_start() {
        let t = toy();
        let long = "hello world ".repeat(500);
        let all = t.encode(&long, usize::MAX / 8);
        for max in [1, 2, 3, 7, 64, 300] {
            assert_eq!(t.encode(&long, max), all[..max], "{max}");
        }
        // A text with no boundary at all is still segmented whole.
        let word = "s".repeat(3000);
        assert_eq!(t.encode(&word, 10).len(), 10);
    }

    #[test]
    fn a_piece_across_a_boundary_is_refused() {
        let e = Unigram::new(
            vec!["<unk>".into(), "▁a▁b".into()],
            vec![0.0, -1.0],
            &[0],
            0,
            Vec::new(),
        );
        assert!(e.unwrap_err().contains("word boundary"));
    }
}
