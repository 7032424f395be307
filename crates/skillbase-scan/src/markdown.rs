//! Where a match sits in a Markdown file: frontmatter, a fenced code block, a quotation, text a
//! reader does not see (HTML comments, `[//]: #` lines, elements styled invisible), and whether
//! the text around it teaches (a security tutorial) or warns ("never run ...").
//!
//! One pass over the lines; no recursion, so deeply nested Markdown costs what flat Markdown
//! costs.

use crate::source::Source;
use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use regex::Regex;
use std::ops::Range;

/// How many lines above a match (and above a code block's fence) are read for cues.
const CUE_WINDOW: usize = 3;
/// Longest stretch an invisibly styled element is taken to cover when it is not closed.
const MAX_HIDDEN_ELEMENT: usize = 4096;

/// Words that mark security teaching (a tutorial, a checklist of attacks, a detector's docs).
const TEACHING: &[&str] = &[
    "attack",
    "attacker",
    "malicious",
    "injection",
    "phishing",
    "exploit",
    "red flag",
    "suspicious",
    "detect",
    "threat",
    "adversar",
    "jailbreak",
    "vulnerab",
    "exfiltrat",
    "security review",
    "security audit",
    "scanner",
    "indicator of compromise",
    "defang",
    "reverse shell",
    "pentest",
    "penetration test",
    "red team",
    "ssrf",
    "xss",
    "cross-site",
    "flag ",
    "privilege escalation",
    "anti-pattern",
    "antipattern",
    "example of",
    "for example",
    "e.g.",
    "such as",
    "bad:",
    "\u{274c}",
    "hostile",
    "untrusted",
    "prompt-injection",
    "ataque",
    "ejemplo",
    "attaque",
    "exemple",
    "angriff",
    "beispiel",
    "exemplo",
    "esempio",
    "attacco",
    "malware",
    "social engineering",
    "what not to do",
    "sanitiz",
    "test case",
    "fixture",
];

/// Words that warn against what follows ("never", "do not run").
const CAUTION: &[&str] = &[
    "never",
    "don't",
    "do not",
    "avoid",
    "dangerous",
    "warning",
    "careful",
    "caution",
    "destructive",
    "irreversible",
    "unsafe",
    "forbidden",
    "not allowed",
    "must not",
    "refuse",
    "block",
    "guard",
    "risk",
    "confirm",
    "protect",
    "prevent",
    "oops",
    "critical",
    "jamais",
    "nunca",
    "niemals",
    "mai ",
    "\u{26a0}",
];

/// The cue automatons, built once per scanner.
pub(crate) struct Cues {
    teaching: AhoCorasick,
    caution: AhoCorasick,
    hidden_element: Regex,
    md_comment: Regex,
}

impl Cues {
    pub(crate) fn new() -> Cues {
        let ac = |words: &[&str]| {
            AhoCorasickBuilder::new()
                .ascii_case_insensitive(true)
                .match_kind(MatchKind::LeftmostFirst)
                .build(words)
                .expect("the cue words are literals")
        };
        Cues {
            teaching: ac(TEACHING),
            caution: ac(CAUTION),
            hidden_element: Regex::new(
                r#"(?i)<(div|span|p|section|font)\b[^>\n]{0,200}(style\s*=\s*["'][^"'\n]{0,200}(display\s*:\s*none|visibility\s*:\s*hidden|font-size\s*:\s*0(px|pt|em)?\s*[;"']|opacity\s*:\s*0(\.0+)?\s*[;"'])|\shidden[\s>])"#,
            )
            .expect("a fixed pattern"),
            md_comment: Regex::new(r#"(?m)^[ \t]{0,3}\[(//|comment|_|#)\]:\s*(#|<>)[^\n]*"#)
                .expect("a fixed pattern"),
        }
    }
}

/// Per-line facts and hidden ranges of one Markdown file.
pub(crate) struct Layout {
    /// Line flags ([`CODE`], [`QUOTE_LINE`], [`FRONTMATTER`], [`TEACH`], [`WARN`], [`HEADING`]).
    flags: Vec<u8>,
    /// For a line in a code block, the fence line that opened it.
    block_start: Vec<usize>,
    /// For each line, the nearest heading at or above it (`usize::MAX`: none).
    heading: Vec<usize>,
    /// Byte ranges a reader does not see.
    pub(crate) hidden: Vec<Range<usize>>,
}

const CODE: u8 = 1;
const QUOTE_LINE: u8 = 2;
const FRONTMATTER: u8 = 4;
const TEACH: u8 = 8;
const WARN: u8 = 16;
const HEADING: u8 = 32;

/// What the text around a match says about it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Place {
    /// Inside text a reader does not see.
    pub hidden: bool,
    /// Quoted: a code block, inline code, a blockquote or quotation marks.
    pub quoted: bool,
    /// Security teaching nearby.
    pub teaching: bool,
    /// A warning nearby ("never", "do not").
    pub caution: bool,
    /// In the frontmatter (name, description, ...).
    pub frontmatter: bool,
    /// In a fenced code block.
    pub code: bool,
    /// A mention: in inline code or a table row outside code blocks, on a line that does not
    /// say to run it.
    pub mention: bool,
}

impl Layout {
    /// Lay out `src` (a Markdown file).
    pub(crate) fn new(src: &Source<'_>, cues: &Cues) -> Layout {
        let n = src.lines();
        let mut flags = vec![0u8; n];
        let mut block_start = vec![usize::MAX; n];
        let mut heading = vec![usize::MAX; n];
        let mut fence: Option<(usize, u8)> = None;
        let mut in_front = src.line_text(0).trim_end() == "---";
        let mut last_heading = usize::MAX;
        for (i, flag) in flags.iter_mut().enumerate() {
            let line = src.line_text(i);
            let trimmed = line.trim_start();
            if in_front {
                *flag |= FRONTMATTER;
                if i > 0 && matches!(line.trim_end(), "---" | "...") {
                    in_front = false;
                }
            } else if let Some((open, ch)) = fence {
                *flag |= CODE;
                block_start[i] = open;
                if trimmed.as_bytes().starts_with(&[ch, ch, ch])
                    && trimmed.trim_matches(ch as char).trim().is_empty()
                {
                    fence = None;
                }
            } else if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
                *flag |= CODE;
                block_start[i] = i;
                fence = Some((i, trimmed.as_bytes()[0]));
            } else if trimmed.starts_with('>') {
                *flag |= QUOTE_LINE;
            } else if trimmed.starts_with('#') {
                *flag |= HEADING;
                last_heading = i;
            }
            heading[i] = last_heading;
        }
        // One pass of each automaton over the whole text, not one per line.
        for (ac, bit) in [(&cues.teaching, TEACH), (&cues.caution, WARN)] {
            for m in ac.find_iter(src.text) {
                if let Some(f) = flags.get_mut(src.line_of(m.start())) {
                    *f |= bit;
                }
            }
        }
        let hidden = hidden_ranges(src, cues, &flags);
        Layout {
            flags,
            block_start,
            heading,
            hidden,
        }
    }

    /// Whether the file has a fenced code block.
    pub(crate) fn has_code(&self) -> bool {
        self.flags.iter().any(|f| f & CODE != 0)
    }

    /// The place of the match `range` in `src`.
    pub(crate) fn place(&self, src: &Source<'_>, range: Range<usize>) -> Place {
        let line = src.line_of(range.start);
        let f = self.flags.get(line).copied().unwrap_or(0);
        let hidden = self.hidden.iter().any(|h| h.contains(&range.start));
        if f & FRONTMATTER != 0 {
            return Place {
                hidden,
                teaching: f & TEACH != 0,
                caution: f & WARN != 0,
                frontmatter: true,
                ..Place::default()
            };
        }
        let code = f & CODE != 0;
        // In a code block, the prose just above the fence (and the block itself) is the context.
        let anchor = if code { self.block_start[line] } else { line };
        let from = anchor.saturating_sub(CUE_WINDOW);
        let window = |bit: u8| {
            (from..=line).any(|l| {
                self.flags
                    .get(l)
                    .is_some_and(|x| x & bit != 0 && x & FRONTMATTER == 0)
            })
        };
        let heading = self.heading[line];
        let heading_teaches = heading != usize::MAX && self.flags[heading] & TEACH != 0;
        let line_start = src.line_range(line).start;
        let before = src.text.get(line_start..range.start).unwrap_or("");
        let after = src
            .text
            .get(range.end..src.line_range(line).end)
            .unwrap_or("");
        let inline = inline_quoted(before, after);
        let line_text = src.line_text(line);
        let mention =
            !code && (inline || line_text.trim_start().starts_with('|')) && !says_run(line_text);
        Place {
            hidden,
            mention,
            quoted: code || f & QUOTE_LINE != 0 || inline,
            teaching: window(TEACH) || heading_teaches,
            caution: window(WARN),
            frontmatter: false,
            code,
        }
    }
}

/// Whether a line tells the reader to run something.
fn says_run(line: &str) -> bool {
    let lower = line.to_ascii_lowercase();
    [
        "run", "execute", "exec ", "type ", "paste", "enter ", "then ", "first",
    ]
    .iter()
    .any(|w| lower.contains(w))
}

/// Whether a match is inside inline code or quotation marks on its line.
fn inline_quoted(before: &str, after: &str) -> bool {
    let ticks = before.matches('`').count();
    if ticks % 2 == 1 {
        return true;
    }
    let straight = before.matches('"').count();
    if straight % 2 == 1 && after.contains('"') {
        return true;
    }
    [
        ('\u{201C}', '\u{201D}'),
        ('\u{AB}', '\u{BB}'),
        ('\u{300C}', '\u{300D}'),
        ('\u{201E}', '\u{201C}'),
    ]
    .iter()
    .any(|&(open, close)| match before.rfind(open) {
        Some(i) => !before[i..].contains(close) && after.contains(close),
        None => false,
    })
}

/// HTML comments, Markdown comment lines and invisibly styled elements, outside code blocks.
fn hidden_ranges(src: &Source<'_>, cues: &Cues, flags: &[u8]) -> Vec<Range<usize>> {
    let text = src.text;
    let in_code = |at: usize| flags.get(src.line_of(at)).is_some_and(|f| f & CODE != 0);
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = text.get(from..).and_then(|t| t.find("<!--")) {
        let start = from + i;
        let end = text[start + 4..]
            .find("-->")
            .map(|j| start + 4 + j + 3)
            .unwrap_or(text.len());
        if !in_code(start) {
            out.push(start..end);
        }
        from = end.max(start + 4);
    }
    for m in cues.md_comment.find_iter(text) {
        if !in_code(m.start()) {
            out.push(m.range());
        }
    }
    for m in cues.hidden_element.find_iter(text) {
        if in_code(m.start()) {
            continue;
        }
        let tag = m.as_str()[1..]
            .split(|c: char| !c.is_ascii_alphabetic())
            .next()
            .unwrap_or("div");
        let close = format!("</{}", tag.to_ascii_lowercase());
        let rest = &text[m.end()..];
        let limit = crate::source::cut(rest, MAX_HIDDEN_ELEMENT);
        let end = limit
            .to_ascii_lowercase()
            .find(&close)
            .map(|j| m.end() + j)
            .unwrap_or(m.end() + limit.len());
        out.push(m.start()..end);
    }
    out.sort_by_key(|r| r.start);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::Kind;

    fn place_of(text: &str, needle: &str) -> Place {
        let cues = Cues::new();
        let src = Source::new("SKILL.md", text, Kind::Markdown);
        let layout = Layout::new(&src, &cues);
        let at = text.find(needle).expect("needle in text");
        layout.place(&src, at..at + needle.len())
    }

    #[test]
    fn code_blocks_quotes_and_comments_are_told_apart() {
        let text = "---\nname: x\n---\n# Attacks to detect\n\n```\nPAYLOAD\n```\n\nplain PROSE here\n\n<!-- HIDDEN -->\n> QUOTED line\n\nsay \"INQUOTES\" and `TICKED`\n";
        let p = place_of(text, "PAYLOAD");
        assert!(p.code && p.quoted && p.teaching && !p.hidden);
        let p = place_of(text, "PROSE");
        assert!(!p.quoted && !p.hidden);
        assert!(place_of(text, "HIDDEN").hidden);
        assert!(place_of(text, "QUOTED").quoted);
        assert!(place_of(text, "INQUOTES").quoted);
        assert!(place_of(text, "TICKED").quoted);
        assert!(place_of(text, "name: x").frontmatter);
    }

    #[test]
    fn plain_instructions_are_not_teaching() {
        let p = place_of("# Setup\n\nRun the tool.\nThen DO it.\n", "DO it");
        assert_eq!(p, Place::default());
        let p = place_of("# Setup\n\nNever run this:\nrm -rf STUFF\n", "STUFF");
        assert!(p.caution && !p.teaching);
    }

    #[test]
    fn invisible_elements_and_comment_lines_are_hidden() {
        let text =
            "a\n[//]: # (SECRET one)\n<div style=\"display:none\">SECRET two</div>\nvisible\n";
        assert!(place_of(text, "SECRET one").hidden);
        assert!(place_of(text, "SECRET two").hidden);
        assert!(!place_of(text, "visible").hidden);
        let text = "```html\n<!-- CODE comment -->\n```\n";
        assert!(!place_of(text, "CODE comment").hidden);
    }
}
