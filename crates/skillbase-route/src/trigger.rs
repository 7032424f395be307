//! Deterministic activation: every allowed skill's `triggers` matched against the user message in
//! one pass (Aho-Corasick over folded text), whole words only, case- and accent-insensitive.

use aho_corasick::automaton::Automaton;
use aho_corasick::{Anchored, MatchKind, dfa::DFA};
use skillbase_format::text::fold;

/// Fold text for matching: the ASCII fast path lowercases; anything else is fully folded.
pub fn fold_fast(s: &str) -> String {
    if s.is_ascii() {
        s.to_ascii_lowercase()
    } else {
        fold(s)
    }
}

/// Collapse runs of whitespace to one space (after folding), so `money   back` matches `money back`.
fn squash(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut space = false;
    for c in s.chars() {
        if c.is_whitespace() {
            space = true;
        } else {
            if space && !out.is_empty() {
                out.push(' ');
            }
            space = false;
            out.push(c);
        }
    }
    out
}

/// Whether [`squash`] would change `s`: whitespace other than single spaces. ASCII text is
/// scanned by bytes (`char::is_whitespace` in ASCII is `\t \n \x0B \x0C \r` and space).
fn needs_squash(s: &str) -> bool {
    if s.is_ascii() {
        return ascii_needs_squash(s.as_bytes());
    }
    s.contains("  ") || s.contains(|c: char| c.is_whitespace() && c != ' ')
}

/// [`needs_squash`] for ASCII, eight bytes at a time: two spaces in a row, or a tab, line feed,
/// vertical tab, form feed or carriage return.
fn ascii_needs_squash(b: &[u8]) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let is_ws = |c: u8| matches!(c, b'\t' | b'\n' | 0x0B | 0x0C | b'\r');
    let mut chunks = b.chunks_exact(8);
    // Whether the byte before the current one is a space.
    let mut space = false;
    for c in &mut chunks {
        let x = u64::from_le_bytes(c.try_into().expect("8 bytes"));
        // Every byte is below 0x80, so adding 0x60 (or 0x7f) to each never carries into the
        // next: the high bit stays clear exactly for bytes below 0x20 (for zero bytes).
        let control = !(x + ONES * 0x60) & HIGH;
        if control != 0 && c.iter().any(|&c| is_ws(c)) {
            return true;
        }
        let y = x ^ (ONES * 0x20);
        let spaces = !((y + ONES * 0x7f) | y) & HIGH;
        if spaces & (spaces << 8) != 0 || (space && spaces & 0x80 != 0) {
            return true;
        }
        space = spaces >> 63 != 0;
    }
    for &c in chunks.remainder() {
        if is_ws(c) || (space && c == b' ') {
            return true;
        }
        space = c == b' ';
    }
    false
}

/// Scripts written without spaces between words: each character is its own word boundary.
fn is_unspaced(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF   // Hiragana, Katakana
        | 0x3400..=0x4DBF // CJK extension A
        | 0x4E00..=0x9FFF // CJK unified ideographs
        | 0xF900..=0xFAFF // CJK compatibility ideographs
        | 0x0E00..=0x0E7F // Thai
        | 0x20000..=0x2FFFF)
}

fn is_word(c: char) -> bool {
    (c.is_alphanumeric() || c == '_') && !is_unspaced(c)
}

/// Whether byte offset `i` of `s` falls between words (not inside one).
fn is_boundary(s: &str, i: usize) -> bool {
    if i == 0 || i >= s.len() {
        return true;
    }
    let before = s[..i].chars().next_back();
    let after = s[i..].chars().next();
    match (before, after) {
        (Some(b), Some(a)) => !(is_word(b) && is_word(a)),
        _ => true,
    }
}

/// Walk the automaton from `sid` over `bytes[at..]` up to the first byte that leads to a special
/// (match or dead) state: returns that byte's offset and the state, or `bytes.len()` and the
/// last state. Kept apart from the match handling so the per-byte loop stays in registers.
#[inline(never)]
fn scan_to_special(
    dfa: &DFA,
    bytes: &[u8],
    mut at: usize,
    mut sid: aho_corasick::automaton::StateID,
) -> (usize, aho_corasick::automaton::StateID) {
    while at < bytes.len() {
        sid = dfa.next_state(Anchored::No, sid, bytes[at]);
        if dfa.is_special(sid) {
            return (at, sid);
        }
        at += 1;
    }
    (at, sid)
}

type StateID = aho_corasick::automaton::StateID;

/// Every (end offset, match state) of an overlapping scan of `bytes`, in order of end: what
/// `find_overlapping_iter` walks through, one state per offset where patterns end. `None` if the
/// scan reached the dead state (it cannot for an unanchored search).
fn match_states_one_way(dfa: &DFA, bytes: &[u8]) -> Option<Vec<(usize, StateID)>> {
    let mut out = Vec::new();
    let mut sid = dfa.start_state(Anchored::No).ok()?;
    let mut at = 0;
    loop {
        (at, sid) = scan_to_special(dfa, bytes, at, sid);
        if at == bytes.len() {
            return Some(out);
        }
        if dfa.is_dead(sid) {
            return None;
        }
        at += 1;
        if dfa.is_match(sid) {
            out.push((at, sid));
        }
    }
}

/// [`match_states_one_way`] by two walks taken in step, one over each half of a long text: a
/// walk is a chain of dependent table loads, so two chains side by side take little more time
/// than one. The second walk starts a pattern's length before the middle; from a pattern's
/// length in, its state is the one-way walk's (the state is the longest suffix read that begins
/// a pattern), and it reports only ends past the middle, so the result is the same. `None` for
/// short texts (and on the dead state), to walk one way.
fn match_states(dfa: &DFA, bytes: &[u8]) -> Option<Vec<(usize, StateID)>> {
    let n = bytes.len();
    let longest = dfa.max_pattern_len();
    if n < 512 || longest == 0 || longest > n / 4 {
        return None;
    }
    let mid = n / 2;
    let from = mid + 1 - longest;
    let (a, b) = (&bytes[..mid], &bytes[from..from + mid]);
    let start = dfa.start_state(Anchored::No).ok()?;
    let (mut sa, mut sb) = (start, start);
    let mut first = Vec::new();
    let mut second = Vec::new();
    let mut i = 0;
    loop {
        (i, sa, sb) = scan2_to_special(dfa, a, b, i, sa, sb);
        if i == mid {
            break;
        }
        if dfa.is_dead(sa) || dfa.is_dead(sb) {
            return None;
        }
        if dfa.is_match(sa) {
            first.push((i + 1, sa));
        }
        if dfa.is_match(sb) && from + i + 1 > mid {
            second.push((from + i + 1, sb));
        }
        i += 1;
    }
    // The rest of the second half, alone.
    let mut at = from + mid;
    loop {
        (at, sb) = scan_to_special(dfa, bytes, at, sb);
        if at == n {
            break;
        }
        if dfa.is_dead(sb) {
            return None;
        }
        at += 1;
        if dfa.is_match(sb) {
            second.push((at, sb));
        }
    }
    first.append(&mut second);
    Some(first)
}

/// [`scan_to_special`] over two slices of the same length in step: stops at the first offset
/// where either state is special (both have read that offset's byte).
#[inline(never)]
fn scan2_to_special(
    dfa: &DFA,
    a: &[u8],
    b: &[u8],
    mut i: usize,
    mut sa: StateID,
    mut sb: StateID,
) -> (usize, StateID, StateID) {
    let n = a.len().min(b.len());
    while i < n {
        sa = dfa.next_state(Anchored::No, sa, a[i]);
        sb = dfa.next_state(Anchored::No, sb, b[i]);
        if dfa.is_special(sa) | dfa.is_special(sb) {
            return (i, sa, sb);
        }
        i += 1;
    }
    (n, sa, sb)
}

/// A compiled set of trigger phrases, each pointing at the skill that declared it.
#[derive(Debug, Clone)]
pub struct TriggerMatcher {
    /// The phrases' automaton, scanned by [`TriggerMatcher::find_folded`]'s own loop (every
    /// match, overlapping, in order of end and then of the automaton's match list, as
    /// `find_overlapping_iter` reports them).
    ac: Option<DFA>,
    /// Per pattern: (skill index, the phrase as written).
    patterns: Vec<(usize, String)>,
}

/// One trigger that fired.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TriggerHit {
    /// The skill index given with the phrase to [`TriggerMatcher::new`] (in a view, an index
    /// into [`crate::view::AgentView::skills`]).
    pub skill: usize,
    /// The phrase as authored (so the author can find the line to edit).
    pub phrase: String,
    /// Byte offset of the match in the folded message.
    pub at: usize,
}

impl TriggerMatcher {
    /// Build from `(skill index, phrase)` pairs. Phrases that fold to nothing are ignored.
    pub fn new<'a>(triggers: impl IntoIterator<Item = (usize, &'a str)>) -> TriggerMatcher {
        let mut folded = Vec::new();
        let mut patterns = Vec::new();
        for (skill, phrase) in triggers {
            let f = squash(&fold_fast(phrase.trim()));
            if f.chars().any(|c| c.is_alphanumeric()) {
                folded.push(f);
                patterns.push((skill, phrase.trim().to_owned()));
            }
        }
        let ac = if folded.is_empty() {
            None
        } else {
            // A DFA: the fastest overlapping scan; with byte classes it stays small (well under
            // a megabyte for hundreds of triggers), and it is built once per view.
            DFA::builder()
                .match_kind(MatchKind::Standard)
                .prefilter(false)
                .build(&folded)
                .ok()
        };
        TriggerMatcher { ac, patterns }
    }

    /// Whether no phrase was kept (none given, or all fold to nothing): nothing can fire.
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// Every skill whose trigger occurs in `message` as whole words, in order of first match;
    /// one hit per skill.
    pub fn find(&self, message: &str) -> Vec<TriggerHit> {
        self.find_folded(&fold_fast(message))
    }

    /// [`TriggerMatcher::find`] on a message already passed through [`fold_fast`].
    pub fn find_folded(&self, folded: &str) -> Vec<TriggerHit> {
        let mut hits: Vec<TriggerHit> = Vec::new();
        for hit in self.every_folded(folded) {
            if !hits.iter().any(|h| h.skill == hit.skill) {
                hits.push(hit);
            }
        }
        hits.sort_by_key(|h| h.at);
        hits
    }

    /// Every whole-word occurrence of every phrase in `text` (already passed through
    /// [`fold_fast`] and with whitespace runs squashed to single spaces, so offsets are offsets
    /// of `text`), in order of their end: several per skill, overlapping ones included.
    pub fn every_folded(&self, text: &str) -> Vec<TriggerHit> {
        let Some(ac) = &self.ac else {
            return Vec::new();
        };
        let squashed;
        let text: &str = if needs_squash(text) {
            squashed = squash(text);
            &squashed
        } else {
            text
        };
        let bytes = text.as_bytes();
        let matches = match_states(ac, bytes)
            .or_else(|| match_states_one_way(ac, bytes))
            .unwrap_or_default();
        let mut out = Vec::new();
        for (end, sid) in matches {
            for k in 0..ac.match_len(sid) {
                let pid = ac.match_pattern(sid, k);
                let start = end - ac.pattern_len(pid);
                if !is_boundary(text, start) || !is_boundary(text, end) {
                    continue;
                }
                let (skill, phrase) = &self.patterns[pid.as_usize()];
                out.push(TriggerHit {
                    skill: *skill,
                    phrase: phrase.clone(),
                    at: start,
                });
            }
        }
        out
    }

    /// The phrases as kept (folded, whitespace squashed), each with its skill index: two equal
    /// phrases fire on exactly the same messages.
    pub fn folded_phrases(&self) -> impl Iterator<Item = (usize, String)> + '_ {
        self.patterns
            .iter()
            .map(|(skill, phrase)| (*skill, squash(&fold_fast(phrase))))
    }
}

/// Text folded as phrases are ([`fold_fast`]) with whitespace runs squashed, so offsets into it
/// are the offsets [`TriggerMatcher::every_folded`] reports.
pub fn fold_for_matching(text: &str) -> String {
    squash(&fold_fast(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fired(triggers: &[&str], message: &str) -> Vec<String> {
        let m = TriggerMatcher::new(triggers.iter().enumerate().map(|(i, t)| (i, *t)));
        m.find(message).into_iter().map(|h| h.phrase).collect()
    }

    #[test]
    fn whole_words_case_and_accents() {
        assert_eq!(fired(&["presente"], "quero um presente"), ["presente"]);
        assert_eq!(fired(&["presente"], "um presénte"), ["presente"]);
        assert_eq!(fired(&["presente"], "UM PRESENTE!"), ["presente"]);
        assert!(fired(&["presente"], "apresente isto").is_empty());
        assert!(fired(&["presente"], "presentes").is_empty());
        assert_eq!(fired(&["Présente"], "presente"), ["Présente"]);
        assert_eq!(
            fired(&["crème brûlée"], "Make a CREME   brulee."),
            ["crème brûlée"]
        );
    }

    #[test]
    fn multi_word_and_punctuation() {
        assert_eq!(
            fired(&["money back"], "I want my money back, now"),
            ["money back"]
        );
        assert!(fired(&["money back"], "moneyback").is_empty());
        assert_eq!(fired(&["c++"], "help with c++ code"), ["c++"]);
        assert_eq!(fired(&["a.b*(c)"], "literal a.b*(c) here"), ["a.b*(c)"]);
        assert!(
            fired(&["a.b*(c)"], "axb c").is_empty(),
            "regex characters are literal"
        );
        assert!(
            fired(&["!!!", "  "], "!!! wow").is_empty(),
            "punctuation-only triggers never fire"
        );
    }

    #[test]
    fn one_hit_per_skill_in_message_order() {
        let m = TriggerMatcher::new([(0, "refund"), (0, "money back"), (1, "invoice")]);
        let hits = m.find("invoice, then refund or money back");
        let got: Vec<(usize, &str)> = hits.iter().map(|h| (h.skill, h.phrase.as_str())).collect();
        assert_eq!(got, [(1, "invoice"), (0, "refund")]);
    }

    #[test]
    fn overlapping_patterns_do_not_hide_shorter_valid_ones() {
        // "pdf form" fails the boundary check in "pdf formulaire", "pdf" still fires.
        assert_eq!(
            fired(&["pdf form", "pdf"], "fill the pdf formulaire"),
            ["pdf"]
        );
    }

    #[test]
    fn cjk_triggers_match_inside_sentences() {
        assert_eq!(fired(&["退款"], "我想要退款谢谢"), ["退款"]);
    }

    #[test]
    fn squash_check() {
        for (text, want) in [
            ("", false),
            ("a b c", false),
            ("a  b", true),
            ("a\tb", true),
            ("a\r\nb", true),
            (" lead", false),
            ("trail ", false),
            ("crème brûlée", false),
            ("crème  brûlée", true),
            ("crème\u{a0}brûlée", true),
            ("crème\u{2003}brûlée", true),
            ("a\u{1f}b", false),
        ] {
            assert_eq!(needs_squash(text), want, "{text:?}");
            // The check it replaced.
            let before =
                text.contains("  ") || text.contains(|c: char| c.is_whitespace() && c != ' ');
            assert_eq!(needs_squash(text), before, "{text:?}");
        }
        // Every placement against the eight-byte chunks.
        let alphabet = [
            b'a', b' ', b'\t', b'\n', 0x0B, 0x0C, b'\r', 0x1F, 0x00, b'~', 0x7F,
        ];
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let len = (x % 40) as usize;
            let text: String = (0..len)
                .map(|k| {
                    let r = ((x >> (k % 50)) as usize) ^ k.wrapping_mul(0x9e37);
                    // Mostly letters and single spaces, sometimes anything.
                    match r % 7 {
                        0..=3 => 'a',
                        4 => ' ',
                        _ => alphabet[r / 7 % alphabet.len()] as char,
                    }
                })
                .collect();
            let before =
                text.contains("  ") || text.contains(|c: char| c.is_whitespace() && c != ' ');
            assert_eq!(needs_squash(&text), before, "{text:?}");
        }
    }

    /// Every match the automaton's own overlapping search reports, found by the hand loop too.
    #[test]
    fn scan_agrees_with_overlapping_search() {
        let phrases = [
            "pdf form", "pdf", "form", "c++", ".net", "a.b", "b", "ab", "退款",
        ];
        let m = TriggerMatcher::new(phrases.iter().enumerate().map(|(i, t)| (i, *t)));
        let ac = aho_corasick::AhoCorasick::builder()
            .match_kind(MatchKind::Standard)
            .build(phrases)
            .unwrap();
        for text in [
            "fill the pdf formulaire, pdf form",
            "asp.net and c++ with a.b ab b",
            "我想要退款谢谢 pdf",
            "",
        ] {
            let mut want: Vec<(usize, usize)> = Vec::new();
            for hit in ac.find_overlapping_iter(text) {
                if is_boundary(text, hit.start())
                    && is_boundary(text, hit.end())
                    && !want.iter().any(|(s, _)| *s == hit.pattern().as_usize())
                {
                    want.push((hit.pattern().as_usize(), hit.start()));
                }
            }
            want.sort_by_key(|&(_, at)| at);
            let got: Vec<(usize, usize)> = m.find(text).iter().map(|h| (h.skill, h.at)).collect();
            assert_eq!(got, want, "{text:?}");
        }
    }

    /// The two-way walk over long texts finds what the overlapping search finds, in its order,
    /// matches across the middle included.
    #[test]
    fn long_texts_scan_like_overlapping_search() {
        let phrases = [
            "ab",
            "b",
            "abc",
            "bca",
            "c a",
            "a b c a b",
            "cab cab",
            "a",
            "ba b",
            "abcabcabcabc",
        ];
        let dfa = DFA::builder()
            .match_kind(MatchKind::Standard)
            .prefilter(false)
            .build(phrases)
            .unwrap();
        let ac = aho_corasick::AhoCorasick::builder()
            .match_kind(MatchKind::Standard)
            .build(phrases)
            .unwrap();
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = |m: usize| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % m as u64) as usize
        };
        for len in [0, 1, 100, 511, 512, 513, 777, 1024, 2048, 3001] {
            for _ in 0..20 {
                let text: Vec<u8> = (0..len).map(|_| b"abc "[next(4)]).collect();
                let mut want: Vec<(usize, usize)> = ac
                    .find_overlapping_iter(&text)
                    .map(|m| (m.end(), m.pattern().as_usize()))
                    .collect();
                let mut got: Vec<(usize, usize)> = Vec::new();
                for (end, sid) in match_states(&dfa, &text)
                    .or_else(|| match_states_one_way(&dfa, &text))
                    .unwrap()
                {
                    for k in 0..dfa.match_len(sid) {
                        got.push((end, dfa.match_pattern(sid, k).as_usize()));
                    }
                }
                assert_eq!(got, want, "len {len}");
                want.clear();
            }
        }
    }

    #[test]
    fn huge_message() {
        let msg = "lorem ipsum ".repeat(100_000) + " refund";
        assert_eq!(fired(&["refund"], &msg), ["refund"]);
    }
}
