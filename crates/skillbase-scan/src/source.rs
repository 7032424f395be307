//! One text file of a bundle as the rules read it: its kind (Markdown, script, other text), its
//! text and where each line starts, so a byte offset becomes a line and a column.

/// How a file is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Markdown (SKILL.md, references): prose for the model, with code blocks and comments.
    Markdown,
    /// A script or a program an agent may run.
    Script,
    /// Any other text (JSON, YAML, HTML, CSV, ...): read like a script, without Markdown context.
    Text,
}

impl Kind {
    /// The kind of a bundle path, from its extension.
    pub(crate) fn of(path: &str) -> Kind {
        let lower = path.to_ascii_lowercase();
        let ext = lower.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
        let name = lower.rsplit('/').next().unwrap_or(&lower);
        match ext {
            "md" | "markdown" | "mdx" | "txt" | "rst" => Kind::Markdown,
            "sh" | "bash" | "zsh" | "fish" | "ksh" | "py" | "js" | "mjs" | "cjs" | "ts" | "mts"
            | "rb" | "pl" | "ps1" | "psm1" | "bat" | "cmd" | "php" | "go" | "rs" | "lua"
            | "swift" | "kt" | "java" | "cs" | "r" | "jl" | "applescript" | "scpt" | "vbs" => {
                Kind::Script
            }
            _ if !name.contains('.') || name == "makefile" || name == "dockerfile" => Kind::Script,
            _ => Kind::Text,
        }
    }
}

/// A file's text and its line index.
pub(crate) struct Source<'a> {
    /// The bundle path.
    pub path: &'a str,
    /// The text (already decoded and cut to the size limit).
    pub text: &'a str,
    /// How it is read.
    pub kind: Kind,
    /// Byte offset where each line starts; `line_starts[0]` is 0.
    line_starts: Vec<usize>,
}

impl<'a> Source<'a> {
    /// Index the lines of `text`.
    pub(crate) fn new(path: &'a str, text: &'a str, kind: Kind) -> Source<'a> {
        let mut line_starts = vec![0];
        line_starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Source {
            path,
            text,
            kind,
            line_starts,
        }
    }

    /// The 0-based line holding byte `at`.
    pub(crate) fn line_of(&self, at: usize) -> usize {
        match self.line_starts.binary_search(&at) {
            Ok(i) => i,
            Err(i) => i.saturating_sub(1),
        }
    }

    /// Number of lines.
    pub(crate) fn lines(&self) -> usize {
        self.line_starts.len()
    }

    /// The byte range of 0-based line `line`, without its line break.
    pub(crate) fn line_range(&self, line: usize) -> std::ops::Range<usize> {
        let start = self
            .line_starts
            .get(line)
            .copied()
            .unwrap_or(self.text.len());
        let end = self
            .line_starts
            .get(line + 1)
            .map(|e| e.saturating_sub(1))
            .unwrap_or(self.text.len());
        let end = if end > start && self.text.as_bytes().get(end - 1) == Some(&b'\r') {
            end - 1
        } else {
            end
        };
        start..end.max(start)
    }

    /// The text of 0-based line `line`.
    pub(crate) fn line_text(&self, line: usize) -> &'a str {
        self.text.get(self.line_range(line)).unwrap_or("")
    }

    /// 1-based line and column (in Unicode scalar values) of byte `at`. The column is counted
    /// over at most [`MAX_COLUMN_SCAN`] bytes of the line, so a huge line stays cheap.
    pub(crate) fn position(&self, at: usize) -> (usize, usize) {
        let line = self.line_of(at);
        let start = self.line_starts.get(line).copied().unwrap_or(0);
        let from = at.saturating_sub(MAX_COLUMN_SCAN).max(start);
        let prefix = self.text.get(from..at).unwrap_or("");
        let skipped = from - start;
        (line + 1, skipped + prefix.chars().count() + 1)
    }
}

/// Past this many bytes into a line, the column counts bytes instead of characters.
const MAX_COLUMN_SCAN: usize = 64 * 1024;

/// Decoded text of a file that is text, and whether decoding had to replace bytes.
pub(crate) struct Decoded {
    /// The text.
    pub text: String,
    /// Bytes were not valid UTF-8 (or UTF-16) and were replaced.
    pub lossy: bool,
}

/// Decode bytes as UTF-8 (or UTF-16 with a byte order mark); invalid sequences are replaced.
pub(crate) fn decode(bytes: &[u8]) -> Decoded {
    let utf16 = |le: bool| {
        let units = bytes[2..].chunks_exact(2).map(|c| {
            if le {
                u16::from_le_bytes([c[0], c[1]])
            } else {
                u16::from_be_bytes([c[0], c[1]])
            }
        });
        let mut lossy = bytes.len() % 2 == 1;
        let text = char::decode_utf16(units)
            .map(|r| {
                r.unwrap_or_else(|_| {
                    lossy = true;
                    char::REPLACEMENT_CHARACTER
                })
            })
            .collect();
        Decoded { text, lossy }
    };
    match bytes {
        [0xFF, 0xFE, ..] => utf16(true),
        [0xFE, 0xFF, ..] => utf16(false),
        _ => match std::str::from_utf8(bytes) {
            Ok(t) => Decoded {
                text: t.to_owned(),
                lossy: false,
            },
            Err(_) => Decoded {
                text: String::from_utf8_lossy(bytes).into_owned(),
                lossy: true,
            },
        },
    }
}

/// The longest prefix of `s` of at most `max` bytes that ends on a character boundary.
pub(crate) fn cut(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// The longest suffix of `s` of at most `max` bytes that starts on a character boundary.
pub(crate) fn tail(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut start = s.len() - max;
    while !s.is_char_boundary(start) {
        start += 1;
    }
    &s[start..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_count_characters_from_one() {
        let s = Source::new("SKILL.md", "ab\ncé\r\nxyz", Kind::Markdown);
        assert_eq!(s.position(0), (1, 1));
        assert_eq!(s.position(3), (2, 1));
        assert_eq!(s.position(6), (2, 3));
        assert_eq!(s.line_text(1), "cé");
        assert_eq!(s.line_text(2), "xyz");
        assert_eq!(s.lines(), 3);
    }

    #[test]
    fn kinds_follow_the_extension() {
        assert_eq!(Kind::of("SKILL.md"), Kind::Markdown);
        assert_eq!(Kind::of("scripts/x.PY"), Kind::Script);
        assert_eq!(Kind::of("bin/run"), Kind::Script);
        assert_eq!(Kind::of("assets/a.json"), Kind::Text);
    }

    #[test]
    fn decoding_replaces_and_says_so() {
        assert!(!decode(b"ok").lossy);
        let d = decode(b"a\xffb");
        assert!(d.lossy);
        assert_eq!(d.text, "a\u{FFFD}b");
        let d = decode(&[0xFF, 0xFE, b'h', 0, b'i', 0]);
        assert_eq!(d.text, "hi");
        assert_eq!(cut("aé", 2), "a");
        assert_eq!(tail("éa", 2), "a");
    }
}
