//! Texts cut for the encoders, which read only the start of a text (some 50 English words, 20
//! in other languages). A message with pasted code, a log or a ticket often says what it wants
//! in one sentence before or after the paste: [`reading`] cuts such a message into short
//! passages of prose, each encoded on its own; fusion
//! ([`crate::fusion::SemanticQuery::similarities`]) then lets the passage that speaks of a
//! skill most clearly speak for the message. A skill whose body has sections says what it does
//! past its opening too: [`sections`] gives each section's heading and opening words, encoded
//! as further vectors of the skill ([`crate::fusion::SemanticMatrix::with_sections`]).
//!
//! Pure and linear in the text's length; every passage and word is a slice of the text.

/// Words past which a message is read as passages (a shorter one is read whole, as one text).
pub const SPLIT_WORDS: usize = 48;
/// Most words in one passage (the English encoder reads some 50; a sentence is seldom longer).
pub const PASSAGE_WORDS: usize = 32;
/// Most passages of one message: the first half from its start, the rest from its end (the
/// request is at one end of a paste, seldom inside it).
pub const MAX_PASSAGES: usize = 4;
/// Least share of letters among a passage's visible characters for it to be prose; code, logs
/// and tables fall below and are not encoded.
pub const MIN_LETTERS: f32 = 0.72;

/// How a message is read by the semantic stage ([`reading`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reading<'a> {
    /// A blank message: nothing to read.
    Blank,
    /// A short message (at most [`SPLIT_WORDS`] words), read whole: the message, trimmed.
    Whole(&'a str),
    /// A long message's passages of prose, in message order: 1 to [`MAX_PASSAGES`] of them.
    /// One passage is still a passage (a pasted trace, then "why does this fail?"), never the
    /// message's start.
    Passages(Vec<&'a str>),
    /// A long message without prose (all code, a log): read its start.
    NoProse,
}

/// How `message` is read: [`Reading::Whole`] when it has at most [`SPLIT_WORDS`] words;
/// otherwise its prose cut at line breaks, blank lines, sentence ends and every
/// [`PASSAGE_WORDS`] words, at most [`MAX_PASSAGES`] of them ([`Reading::Passages`]), or
/// [`Reading::NoProse`] when none of it reads as prose.
pub fn reading(message: &str) -> Reading<'_> {
    reading_with(message, SPLIT_WORDS, PASSAGE_WORDS, MAX_PASSAGES)
}

/// [`reading`] with its limits given (`words` and `max` at least 1).
pub fn reading_with(message: &str, split: usize, words: usize, max: usize) -> Reading<'_> {
    let trimmed = message.trim();
    if trimmed.is_empty() {
        return Reading::Blank;
    }
    if trimmed.split_whitespace().nth(split).is_none() {
        return Reading::Whole(trimmed);
    }
    let mut prose: Vec<&str> = cut(message, words.max(1))
        .into_iter()
        .filter(|p| is_prose(p))
        .collect();
    if prose.is_empty() {
        return Reading::NoProse;
    }
    let max = max.max(1);
    if prose.len() > max {
        let tail = max / 2;
        let head = max - tail;
        prose.drain(head..prose.len() - tail);
    }
    Reading::Passages(prose)
}

/// Most sections of one skill's body that get a vector of their own ([`sections`]).
pub const MAX_SECTIONS: usize = 3;
/// Words of a section's prose read, after its heading.
pub const SECTION_WORDS: usize = 48;
/// Fewest words of prose under a heading for its section to count.
pub const MIN_SECTION_WORDS: usize = 12;
/// Most words of a heading kept.
pub const HEADING_WORDS: usize = 12;

/// A section of a skill's body: a markdown heading and the opening prose under it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section<'a> {
    /// The heading's words, without its `#` marks (at most [`HEADING_WORDS`]).
    pub heading: Vec<&'a str>,
    /// The first [`SECTION_WORDS`] words of prose under the heading, before the next heading
    /// (code fences and lines that are not prose left out).
    pub words: Vec<&'a str>,
}

/// The sections of a skill's `body` worth a vector: for a body with at least two markdown
/// headings (outside code fences), each heading's section with at least
/// [`MIN_SECTION_WORDS`] words of prose, in body order, at most [`MAX_SECTIONS`]. A body with
/// one heading or none has none (its document vector reads its opening already).
pub fn sections(body: &str) -> Vec<Section<'_>> {
    let mut out = Vec::new();
    let mut headings = 0usize;
    let mut fence: Option<&str> = None;
    let mut current: Option<Section<'_>> = None;
    for (_, line) in lines(body) {
        let t = line.trim_start();
        if let Some(f) = fence {
            if t.starts_with(f) {
                fence = None;
            }
            continue;
        }
        if let Some(f) = ["```", "~~~"].into_iter().find(|f| t.starts_with(f)) {
            fence = Some(f);
            continue;
        }
        if let Some(h) = heading(line) {
            headings += 1;
            close(&mut current, &mut out);
            if out.len() >= MAX_SECTIONS {
                break;
            }
            current = Some(Section {
                heading: h.split_whitespace().take(HEADING_WORDS).collect(),
                words: Vec::new(),
            });
            continue;
        }
        if let Some(s) = &mut current
            && s.words.len() < SECTION_WORDS
            && is_prose(t)
        {
            let room = SECTION_WORDS - s.words.len();
            s.words.extend(t.split_whitespace().take(room));
        }
    }
    close(&mut current, &mut out);
    if headings < 2 {
        out.clear();
    }
    out
}

/// Keep the section being read when it has enough prose.
fn close<'a>(current: &mut Option<Section<'a>>, out: &mut Vec<Section<'a>>) {
    if let Some(s) = current.take()
        && s.words.len() >= MIN_SECTION_WORDS
    {
        out.push(s);
    }
}

/// The text of an ATX heading line (up to three spaces, one to six `#`, a space or the line's
/// end), without its closing `#`s.
fn heading(line: &str) -> Option<&str> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    if indent > 3 {
        return None;
    }
    let rest = &line[indent..];
    let marks = rest.bytes().take(7).take_while(|b| *b == b'#').count();
    if marks == 0 || marks > 6 {
        return None;
    }
    let text = &rest[marks..];
    if !text.is_empty() && !text.starts_with([' ', '\t']) {
        return None;
    }
    let text = text.trim();
    let open = text.trim_end_matches('#');
    // A closing run of `#`s follows a space ("## Using C#" keeps its `#`).
    Some(if open.is_empty() || open.ends_with([' ', '\t']) {
        open.trim_end()
    } else {
        text
    })
}

/// Whether a passage reads as prose: enough letters among its visible characters, and a word
/// of at least two letters.
fn is_prose(p: &str) -> bool {
    let (mut visible, mut letters) = (0usize, 0usize);
    for c in p.chars().filter(|c| !c.is_whitespace()) {
        visible += 1;
        letters += usize::from(c.is_alphabetic());
    }
    let has_word = p
        .split(|c: char| !c.is_alphabetic())
        .any(|w| w.chars().nth(1).is_some());
    has_word && letters as f32 >= MIN_LETTERS * visible as f32
}

/// The message cut into passages of at most `words` words: a passage ends at a line break that
/// ends a sentence or a line of its own, at a blank line, at a code fence and at a sentence end
/// once it holds half its words; a longer run is cut every `words` words.
fn cut(message: &str, words: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    let mut end = 0;
    let mut count = 0;
    let mut close = |start: &mut Option<usize>, end: usize, count: &mut usize| {
        if let Some(s) = start.take() {
            let p = message[s..end].trim();
            if !p.is_empty() {
                out.push(p);
            }
        }
        *count = 0;
    };
    for (line_start, line) in lines(message) {
        let blank = line.trim().is_empty();
        let fence = line.trim_start().starts_with("```");
        if blank || fence {
            close(&mut start, end, &mut count);
            continue;
        }
        for (at, word) in words_of(line) {
            let at = line_start + at;
            if start.is_none() {
                start = Some(at);
            }
            end = at + word.len();
            count += 1;
            let sentence_end = word.ends_with(['.', '?', '!', ':', ';']);
            if count >= words || (sentence_end && count * 2 >= words) {
                close(&mut start, end, &mut count);
            }
        }
        // A line is a unit of its own (a log line, a list item) unless it runs on.
        if count * 2 >= words || line.trim_end().ends_with(['.', '?', '!', ':']) {
            close(&mut start, end, &mut count);
        }
    }
    close(&mut start, end, &mut count);
    out
}

/// The lines of `text` with the byte offset each starts at (line breaks excluded).
fn lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut at = 0;
    text.split('\n').map(move |l| {
        let start = at;
        at += l.len() + 1;
        (start, l.strip_suffix('\r').unwrap_or(l))
    })
}

/// The whitespace-separated words of `line` with the byte offset each starts at.
fn words_of(line: &str) -> impl Iterator<Item = (usize, &str)> {
    line.split_whitespace()
        .map(move |w| (w.as_ptr() as usize - line.as_ptr() as usize, w))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The passages of a reading (none for a blank message or one without prose; the message
    /// for a short one).
    fn passages(message: &str) -> Vec<&str> {
        flat(reading(message))
    }

    fn flat(r: Reading<'_>) -> Vec<&str> {
        match r {
            Reading::Blank | Reading::NoProse => Vec::new(),
            Reading::Whole(m) => vec![m],
            Reading::Passages(p) => p,
        }
    }

    #[test]
    fn short_messages_are_read_whole() {
        assert_eq!(reading(""), Reading::Blank);
        assert_eq!(reading(" \n\t "), Reading::Blank);
        assert_eq!(
            reading("  refund order 5533 \n"),
            Reading::Whole("refund order 5533")
        );
        let exactly = "word ".repeat(SPLIT_WORDS);
        assert_eq!(reading(&exactly), Reading::Whole(exactly.trim()));
    }

    #[test]
    fn the_request_around_a_paste_is_its_own_passage() {
        let log =
            "2026-12-01 12:00:01 ERROR db=10.0.0.1:5432 pool=7/8 retry=3 code=0x1F\n".repeat(30);
        let code = "```\nfn main() { let x = foo.bar(1, 2)?; println!(\"{x:?}\"); }\n```\n";
        let message = format!(
            "Here is what I saw this morning on the staging box.\n{log}\n{code}\nCan you find out why the connection pool runs dry and fix the retry settings?"
        );
        let p = passages(&message);
        assert_eq!(
            p,
            [
                "Here is what I saw this morning on the staging box.",
                "Can you find out why the connection pool runs dry and fix the retry settings?"
            ]
        );
        // Every passage is a slice of the message.
        for s in &p {
            let off = s.as_ptr() as usize - message.as_ptr() as usize;
            assert_eq!(&message[off..off + s.len()], *s);
        }
    }

    #[test]
    fn a_long_message_with_one_passage_is_read_as_that_passage() {
        // A pasted stack trace, then the question: one passage of prose, at the end. It is the
        // message's passage, not a message to read whole (its start is the trace).
        let trace = "    at com.acme.pool.Conn.open(Conn.java:88) 0x7f3a9c2e\n".repeat(20);
        let message = format!("{trace}\nwhy does this fail?");
        assert_eq!(
            reading(&message),
            Reading::Passages(vec!["why does this fail?"])
        );
        // The same at its start.
        let message = format!("why does this fail?\n{trace}");
        assert_eq!(
            reading(&message),
            Reading::Passages(vec!["why does this fail?"])
        );
    }

    #[test]
    fn long_prose_is_cut_at_sentences_and_bounded() {
        let sentence = "the quarterly report needs every regional figure checked again. ";
        let message = sentence.repeat(40);
        let p = flat(reading_with(&message, 48, 16, 4));
        assert_eq!(p.len(), 4);
        for s in &p {
            assert!(s.split_whitespace().count() <= 16, "{s}");
            assert!(s.ends_with('.'), "{s}");
        }
        // A run without sentence ends or line breaks is cut every `words` words.
        let run = "alpha ".repeat(200);
        let p = flat(reading_with(&run, 48, 32, 100));
        assert_eq!(p.len(), 200 / 32 + 1);
        assert!(p.iter().all(|s| s.split_whitespace().count() <= 32));
        // Too many passages: the first half from the start, the rest from the end.
        let numbered: String = (0..20)
            .map(|i| format!("sentence number {i} says something new here.\n"))
            .collect();
        let p = flat(reading_with(&numbered, 10, 32, 5));
        let n: Vec<&str> = p.iter().map(|s| s.split(' ').nth(2).unwrap()).collect();
        assert_eq!(n, ["0", "1", "2", "18", "19"]);
    }

    #[test]
    fn code_alone_has_no_prose_and_hostile_text_is_safe() {
        let code = "x = f(a[1], b[2]) + 3 * 4 // 5;\n".repeat(40);
        assert_eq!(reading(&code), Reading::NoProse);
        let mega = "é\u{200b}\r\n\0".repeat(100_000);
        assert!(passages(&mega).len() <= MAX_PASSAGES);
        let wide = "中文字符".repeat(10_000);
        assert_eq!(passages(&wide).len(), 1);
        let mixed = "word\u{3000}word\u{a0}word. ".repeat(500);
        let p = passages(&mixed);
        assert!(!p.is_empty() && p.len() <= MAX_PASSAGES);
        assert!(p.iter().all(|s| !s.is_empty()));
        assert_eq!(
            reading_with(&"a b c ".repeat(100), 0, 0, 0),
            Reading::NoProse
        );
        assert_eq!(
            flat(reading_with(&"ab cd ef ".repeat(100), 0, 0, 0)).len(),
            1
        );
    }

    /// Prose of `n` words of letters, the `i`th word its own (`i` under 676).
    fn prose(from: usize, n: usize) -> String {
        let letter = |k: usize| char::from(b'a' + (k % 26) as u8);
        (from..from + n)
            .map(|i| format!("w{}{} ", letter(i / 26), letter(i)))
            .collect()
    }

    fn texts(body: &str) -> Vec<(String, String)> {
        sections(body)
            .into_iter()
            .map(|s| (s.heading.join(" "), s.words.join(" ")))
            .collect()
    }

    #[test]
    fn a_body_with_headings_gives_its_sections() {
        let body = format!(
            "Opening words that come before any heading at all.\n\n# Merge PDFs\n{}\n\n## Split a file ##\n{}\n### Using C#\n{}\n",
            prose(0, 20),
            prose(100, 60),
            prose(200, 12)
        );
        let s = texts(&body);
        assert_eq!(s.len(), 3, "{s:?}");
        assert_eq!(s[0], ("Merge PDFs".into(), prose(0, 20).trim().to_owned()));
        // The closing `#`s of a heading go; a `#` that is part of a word stays.
        assert_eq!(s[1].0, "Split a file");
        assert_eq!(s[2].0, "Using C#");
        // A section's prose is read up to SECTION_WORDS words.
        assert_eq!(s[1].1, prose(100, SECTION_WORDS).trim());
        // Every word is a slice of the body.
        for sec in sections(&body) {
            for w in sec.heading.iter().chain(&sec.words) {
                let off = w.as_ptr() as usize - body.as_ptr() as usize;
                assert_eq!(&body[off..off + w.len()], *w);
            }
        }
    }

    #[test]
    fn fences_short_sections_and_too_many_headings() {
        // A heading inside a fence is code; the fence's lines are not prose; a section with
        // too little prose is left out; at most MAX_SECTIONS.
        let body = format!(
            "## Install\n```sh\n# not a heading\npip install thing and more words here\n```\n~~~\n## nor this\n~~~\n{}\n## Short\nonly a few words here\n## Table\n| a | b |\n|---|---|\n| 1 | 2 |\n## One\n{}\n## Two\n{}\n## Three\n{}\n## Four\n{}\n",
            prose(0, 12),
            prose(20, 20),
            prose(40, 20),
            prose(60, 20),
            prose(80, 20)
        );
        let s = texts(&body);
        let names: Vec<&str> = s.iter().map(|(h, _)| h.as_str()).collect();
        assert_eq!(names, ["Install", "One", "Two"]);
        assert_eq!(s[0].1, prose(0, 12).trim());
        // `#hashtag`, seven `#`s and a heading indented four spaces are not headings.
        let body = format!(
            "#hashtag {}\n####### seven\n    # indented\n## Real\n{}",
            prose(0, 20),
            prose(20, 20)
        );
        assert!(sections(&body).is_empty(), "one heading: no sections");
    }

    #[test]
    fn no_headings_and_hostile_bodies_give_few_or_no_sections() {
        assert!(sections("").is_empty());
        assert!(sections(&prose(0, 500)).is_empty());
        assert!(sections(&format!("# Only one\n{}", prose(0, 100))).is_empty());
        // Huge and hostile: linear, bounded, no panic.
        let many = format!("## h\n{}\n", prose(0, 15)).repeat(50_000);
        assert_eq!(sections(&many).len(), MAX_SECTIONS);
        let hashes = "#".repeat(1_000_000);
        assert!(sections(&hashes).is_empty());
        let open_fence = format!(
            "## a\n{}\n```\n{}",
            prose(0, 20),
            "## b\nx y z\n".repeat(10_000)
        );
        assert!(
            sections(&open_fence).is_empty(),
            "headings in an unclosed fence"
        );
        let wide = format!(
            "## 标题\n{}\n## 第二\n{}",
            "中文字符 ".repeat(30),
            "é\u{200b}\r\n\0".repeat(10_000)
        );
        let s = sections(&wide);
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].words.len(), 30);
        let long_heading = format!(
            "## {}\n{}\n## b\n{}",
            "w ".repeat(100_000),
            prose(0, 20),
            prose(0, 20)
        );
        let s = sections(&long_heading);
        assert_eq!(s[0].heading.len(), HEADING_WORDS);
    }
}
