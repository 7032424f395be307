//! A long message read as passages: the semantic stage's encoders read only the start of a text
//! (some 50 English words, 20 in other languages), and a message with pasted code, a log or a
//! ticket often says what it wants in one sentence before or after the paste. [`reading`] cuts
//! such a message into short passages of prose, each encoded on its own; fusion
//! ([`crate::fusion::SemanticQuery::similarities`]) then lets the passage that speaks of a
//! skill most clearly speak for the message.
//!
//! Pure and linear in the message's length; every passage is a slice of the message.

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
}
