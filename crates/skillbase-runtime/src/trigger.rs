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
    if s.contains("  ") {
        return true;
    }
    if s.is_ascii() {
        s.bytes()
            .any(|b| matches!(b, b'\t' | b'\n' | 0x0B | 0x0C | b'\r'))
    } else {
        s.contains(|c: char| c.is_whitespace() && c != ' ')
    }
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
        let Some(ac) = &self.ac else {
            return Vec::new();
        };
        let squashed;
        let text: &str = if needs_squash(folded) {
            squashed = squash(folded);
            &squashed
        } else {
            folded
        };
        let mut hits: Vec<TriggerHit> = Vec::new();
        let Ok(mut sid) = ac.start_state(Anchored::No) else {
            return hits;
        };
        let bytes = text.as_bytes();
        let mut at = 0;
        loop {
            (at, sid) = scan_to_special(ac, bytes, at, sid);
            if at == bytes.len() || ac.is_dead(sid) {
                break;
            }
            at += 1;
            if !ac.is_match(sid) {
                continue;
            }
            let end = at;
            for k in 0..ac.match_len(sid) {
                let pid = ac.match_pattern(sid, k);
                let start = end - ac.pattern_len(pid);
                if !is_boundary(text, start) || !is_boundary(text, end) {
                    continue;
                }
                let (skill, phrase) = &self.patterns[pid.as_usize()];
                if hits.iter().any(|h| h.skill == *skill) {
                    continue;
                }
                hits.push(TriggerHit {
                    skill: *skill,
                    phrase: phrase.clone(),
                    at: start,
                });
            }
        }
        hits.sort_by_key(|h| h.at);
        hits
    }
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

    #[test]
    fn huge_message() {
        let msg = "lorem ipsum ".repeat(100_000) + " refund";
        assert_eq!(fired(&["refund"], &msg), ["refund"]);
    }
}
