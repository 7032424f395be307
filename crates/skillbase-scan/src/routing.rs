//! Routing abuse read from the frontmatter: descriptions stuffed with keywords, and names one
//! edit from another skill of the store (the scan's context).

use crate::catalog::{ROUTING_KEYWORD_STUFFING, ROUTING_NAME_IMITATION};
use crate::emit::Out;
use crate::finding::Severity;
use crate::source::Source;
use skillbase_format::SkillMeta;
use std::collections::HashMap;

/// Comma-separated items of at most [`SHORT_ITEM_WORDS`] words: this many, making up
/// [`BARE_LIST_SHARE`] of the description's words, is a keyword list.
const STUFFED_ITEMS: usize = 25;
/// Share of the description's characters in short items for a bare keyword list.
const BARE_LIST_SHARE: f64 = 0.75;
/// Longest item (in characters) that still counts as a keyword.
const MAX_ITEM_CHARS: usize = 40;
/// ... and this many is worth a look.
const LISTY_ITEMS: usize = 18;
/// Words in an item that still counts as a keyword.
const SHORT_ITEM_WORDS: usize = 3;
/// One content word (not from the name) this many times, and [`REPEATED_SHARE`] of the content
/// words, is worth a look (a focused description repeats its topic, so never high alone).
const REPEATED_WORD: usize = 6;
/// Share of the content words one repeated word must make up.
const REPEATED_SHARE: f64 = 0.2;
/// Shortest name compared for imitation.
const MIN_NAME: usize = 4;

const STOPWORDS: &[&str] = &[
    "the", "and", "for", "with", "use", "when", "this", "that", "from", "into", "your", "you",
    "are", "skill", "skills", "like", "any", "all", "can", "its", "not", "such", "via", "also",
    "using", "user", "users", "asks", "ask", "need", "needs", "data", "file", "files", "code",
];

/// Keyword stuffing in the description: a bare list of keywords (no sentences around them),
/// or one word, not from the skill's own name, making up a large share of the text.
pub(crate) fn stuffing(meta: &SkillMeta, src: &Source<'_>, out: &mut Out) {
    let d = &meta.description;
    // Shares are counted in characters, so text without spaces (Chinese, Japanese) counts too.
    let separators = [',', ';', '|', '\u{3001}', '\u{FF0C}'];
    let visible = |t: &str| {
        t.chars()
            .filter(|c| !c.is_whitespace() && !separators.contains(c))
            .count()
    };
    let total_chars = visible(d).max(1);
    let (mut short_items, mut listed_chars) = (0usize, 0usize);
    for item in d.split(separators) {
        let n = item.split_whitespace().count();
        let chars = visible(item);
        if n > 0 && n <= SHORT_ITEM_WORDS && chars <= MAX_ITEM_CHARS {
            short_items += 1;
            listed_chars += chars;
        }
    }
    let list_share = listed_chars as f64 / total_chars as f64;
    let name_words: Vec<&str> = meta.name.split('-').collect();
    let mut counts: HashMap<String, usize> = HashMap::new();
    let mut content = 0usize;
    for w in d
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 3)
    {
        let w = w.to_lowercase();
        if STOPWORDS.contains(&w.as_str()) {
            continue;
        }
        content += 1;
        if !name_words.contains(&w.as_str()) {
            *counts.entry(w).or_default() += 1;
        }
    }
    let (word, most) = counts
        .into_iter()
        .max_by(|a, b| a.1.cmp(&b.1).then_with(|| b.0.cmp(&a.0)))
        .unwrap_or_default();
    let repeat_share = most as f64 / content.max(1) as f64;
    let bare_list = short_items >= STUFFED_ITEMS && list_share >= BARE_LIST_SHARE;
    let repeated = most >= REPEATED_WORD && repeat_share >= REPEATED_SHARE;
    let severity = if bare_list {
        Severity::High
    } else if repeated || short_items >= LISTY_ITEMS {
        Severity::Medium
    } else {
        return;
    };
    let at = src.text.find("description").unwrap_or(0);
    out.at(
        &ROUTING_KEYWORD_STUFFING,
        severity,
        src,
        at,
        &format!(
            "{short_items} keyword items ({:.0}% of the words); '{word}' {most} times",
            list_share * 100.0
        ),
    );
}

/// Digits and letters people read as one another.
fn confusable(c: char) -> char {
    match c {
        '0' => 'o',
        '1' | 'i' => 'l',
        '3' => 'e',
        '5' => 's',
        _ => c,
    }
}

/// The store's other skills' names, indexed for [`imitation`], each with its origin (who
/// brought it: a source, a seed folder, an author).
///
/// A name one edit from another keeps its first or its last character (names are compared
/// from four characters), and its length differs by at most one: only names of a neighbouring
/// length sharing the first or the last character (after folding lookalike characters) are
/// compared, so a batch of thousands of skills is not checked against every name of the store.
#[derive(Debug, Default)]
pub struct SkillNames<'a> {
    /// (folded name, name, origin).
    entries: Vec<(Vec<u8>, &'a str, &'a str)>,
    /// Indices into `entries` by (length, first byte) and by (length, last byte) of the folded
    /// name.
    by_first: HashMap<(usize, u8), Vec<usize>>,
    by_last: HashMap<(usize, u8), Vec<usize>>,
}

impl<'a> SkillNames<'a> {
    /// Index `(name, origin)` pairs. Names shorter than four characters are never compared.
    pub fn new(names: impl IntoIterator<Item = (&'a str, &'a str)>) -> SkillNames<'a> {
        let mut out = SkillNames::default();
        for (name, origin) in names {
            let folded = fold(name);
            let (Some(&first), Some(&last)) = (folded.first(), folded.last()) else {
                continue;
            };
            if folded.len() < MIN_NAME {
                continue;
            }
            let i = out.entries.len();
            out.by_first
                .entry((folded.len(), first))
                .or_default()
                .push(i);
            out.by_last.entry((folded.len(), last)).or_default().push(i);
            out.entries.push((folded, name, origin));
        }
        out
    }

    /// Whether `other` could be one edit from `name` once lookalikes are folded: exact for
    /// ASCII names (the byte-wise test [`SkillNames`] applies, without allocation), and a
    /// neighbouring length for others. For callers that pick the few names worth indexing for
    /// one write out of many.
    pub fn near(name: &str, other: &str) -> bool {
        let (a, b) = (name.as_bytes(), other.as_bytes());
        if !name.is_ascii() || !other.is_ascii() {
            let (x, y) = (name.chars().count(), other.chars().count());
            return x.abs_diff(y) <= 1 && x >= MIN_NAME && y >= MIN_NAME;
        }
        if a.len().abs_diff(b.len()) > 1 || a.len() < MIN_NAME || b.len() < MIN_NAME {
            return false;
        }
        let f = |c: u8| confusable(c as char) as u8;
        let eq =
            |x: &[u8], y: &[u8]| x.len() == y.len() && x.iter().zip(y).all(|(p, q)| f(*p) == f(*q));
        if eq(a, b) {
            return true;
        }
        let prefix = a
            .iter()
            .zip(b)
            .take_while(|(x, y)| f(**x) == f(**y))
            .count();
        let (ra, rb) = (&a[prefix..], &b[prefix..]);
        match ra.len().cmp(&rb.len()) {
            std::cmp::Ordering::Equal => {
                eq(&ra[1..], &rb[1..])
                    || (ra.len() >= 2
                        && f(ra[0]) == f(rb[1])
                        && f(ra[1]) == f(rb[0])
                        && eq(&ra[2..], &rb[2..]))
            }
            std::cmp::Ordering::Greater => eq(&ra[1..], rb),
            std::cmp::Ordering::Less => eq(ra, &rb[1..]),
        }
    }

    /// How many names are indexed.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no name is indexed.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The first name (in index order) that `name` imitates, skipping names of `origin`:
    /// folded, they are equal or one edit apart.
    fn imitated(&self, name: &str, origin: Option<&str>) -> Option<&'a str> {
        let folded = fold(name);
        let (&first, &last) = (folded.first()?, folded.last()?);
        let n = folded.len();
        let mut candidates: Vec<usize> = (n.saturating_sub(1)..=n + 1)
            .flat_map(|len| {
                let a = self.by_first.get(&(len, first)).into_iter().flatten();
                let b = self.by_last.get(&(len, last)).into_iter().flatten();
                a.chain(b).copied()
            })
            .collect();
        candidates.sort_unstable();
        candidates.dedup();
        candidates.into_iter().find_map(|i| {
            let (other_folded, other, other_origin) = &self.entries[i];
            let same_origin = origin.is_some_and(|o| o == *other_origin);
            let near = *other_folded == folded || one_edit_bytes(&folded, other_folded);
            (*other != name && !same_origin && near).then_some(*other)
        })
    }
}

/// A name with lookalike characters folded, as bytes (skill names are ASCII; anything else is
/// kept as its UTF-8 bytes).
fn fold(name: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(name.len());
    let mut buf = [0u8; 4];
    for c in name.chars().map(confusable) {
        out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
    }
    out
}

/// Whether `a` and `b` differ by one insertion, deletion, substitution or swap of neighbours.
fn one_edit_bytes(a: &[u8], b: &[u8]) -> bool {
    if a == b || a.len().abs_diff(b.len()) > 1 {
        return false;
    }
    let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let (ra, rb) = (&a[prefix..], &b[prefix..]);
    match ra.len().cmp(&rb.len()) {
        std::cmp::Ordering::Equal => {
            ra[1..] == rb[1..]
                || (ra.len() >= 2 && ra[0] == rb[1] && ra[1] == rb[0] && ra[2..] == rb[2..])
        }
        std::cmp::Ordering::Greater => ra[1..] == *rb,
        std::cmp::Ordering::Less => *ra == rb[1..],
    }
}

/// A name one edit from another skill of the store of a different origin (skills brought by
/// one source, one seed folder or one author never imitate each other).
pub(crate) fn imitation(
    meta: &SkillMeta,
    others: &SkillNames<'_>,
    origin: Option<&str>,
    src: &Source<'_>,
    out: &mut Out,
) {
    let name = meta.name.as_str();
    if name.chars().count() < MIN_NAME {
        return;
    }
    let Some(other) = others.imitated(name, origin) else {
        return;
    };
    // `api-v1` beside `api-v2` is a series, not an imitation.
    let digits_only = name
        .chars()
        .zip(other.chars())
        .filter(|(a, b)| a != b)
        .all(|(a, b)| a.is_ascii_digit() && b.is_ascii_digit())
        && name.len() == other.len();
    let severity = if digits_only {
        Severity::Medium
    } else {
        Severity::High
    };
    let at = src.text.find(name).unwrap_or(0);
    out.at(
        &ROUTING_NAME_IMITATION,
        severity,
        src,
        at,
        &format!("{name} (imitates {other})"),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::Kind;

    fn meta(name: &str, description: &str) -> SkillMeta {
        let text = format!("---\nname: {name}\ndescription: {description}\n---\nbody\n");
        let md = skillbase_format::SkillMd::parse(&text, &skillbase_format::YamlLimits::default())
            .expect("parses");
        SkillMeta::from_md(&md).expect("has name and description")
    }

    fn run(m: &SkillMeta, others: &[&str]) -> Vec<(String, Severity)> {
        let src = Source::new("SKILL.md", "---\n", Kind::Markdown);
        let mut out = Out::default();
        stuffing(m, &src, &mut out);
        let names = SkillNames::new(others.iter().map(|n| (*n, "elsewhere")));
        imitation(m, &names, Some("here"), &src, &mut out);
        out.findings
            .into_iter()
            .map(|f| (f.rule, f.severity))
            .collect()
    }

    #[test]
    fn keyword_lists_are_stuffing_and_sentences_are_not() {
        let words: Vec<String> = (0..35).map(|i| format!("kw{i}")).collect();
        let m = meta("x-skill", &words.join(", "));
        assert_eq!(
            run(&m, &[]),
            vec![("routing-keyword-stuffing".into(), Severity::High)]
        );
        let m = meta(
            "x-skill",
            "Writes release notes from merged pull requests, grouped by type, with links.",
        );
        assert!(run(&m, &[]).is_empty());
    }

    #[test]
    fn names_one_edit_away_imitate() {
        let m = meta("refund-procedur", "Refunds.");
        assert_eq!(
            run(&m, &["refund-procedure"]),
            vec![("routing-name-imitation".into(), Severity::High)]
        );
        let m = meta("c0mmit-writer", "Commits.");
        assert_eq!(
            run(&m, &["commit-writer"]),
            vec![("routing-name-imitation".into(), Severity::High)]
        );
        let m = meta("api-v2", "An API.");
        assert_eq!(
            run(&m, &["api-v1"]),
            vec![("routing-name-imitation".into(), Severity::Medium)]
        );
        let m = meta("deploy", "Deploys.");
        assert!(run(&m, &["deploy", "release"]).is_empty());
        // A swap, a deletion at the start, an insertion at the end.
        let m = meta("reufnd-tool", "Refunds.");
        assert_eq!(run(&m, &["refund-tool"]).len(), 1);
        let m = meta("efund-tool", "Refunds.");
        assert_eq!(run(&m, &["refund-tool"]).len(), 1);
        let m = meta("refund-tools", "Refunds.");
        assert_eq!(run(&m, &["refund-tool"]).len(), 1);
    }

    #[test]
    fn near_is_a_superset_of_imitation() {
        for (a, b) in [
            ("refund-tool", "reufnd-tool"),
            ("refund-tool", "efund-tool"),
            ("c0mmit-writer", "commit-writer"),
            ("abcd", "xbcd"),
        ] {
            assert!(SkillNames::near(a, b), "{a} {b}");
        }
        assert!(!SkillNames::near("refund-tool", "refund-tool-extra"));
        assert!(!SkillNames::near("abc", "abd"));
        assert!(!SkillNames::near("refund-tool", "rebind-tool"));
        assert!(SkillNames::near("billing-case-00041", "billing-case-00042"));
    }

    #[test]
    fn names_of_one_origin_never_imitate_each_other() {
        let src = Source::new("SKILL.md", "---\n", Kind::Markdown);
        let names = SkillNames::new([("seeded-a", "seed:/s"), ("refund-tool", "import:x")]);
        let m = meta("seeded-b", "Seeded.");
        let mut out = Out::default();
        imitation(&m, &names, Some("seed:/s"), &src, &mut out);
        assert!(out.findings.is_empty());
        imitation(&m, &names, Some("import:y"), &src, &mut out);
        assert_eq!(out.findings.len(), 1);
        let m = meta("refund-tooi", "Refunds.");
        imitation(&m, &names, None, &src, &mut out);
        assert_eq!(out.findings[1].severity, Severity::High);
    }
}
