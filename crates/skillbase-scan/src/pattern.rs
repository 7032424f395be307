//! Patterns rewritten for speed without changing what they find in text: every character class
//! and Perl class (`\s`, `\w`, `\d`, `\b`) made only of ASCII runs byte by byte (`(?-u:...)`).
//!
//! A Unicode `[^\n]{0,200}` is a UTF-8 automaton repeated 200 times; the lazy DFA built from
//! dozens of them thrashes its cache and falls back to slower engines (still linear). Byte
//! classes keep the automaton small. Classes holding non-ASCII characters (`[çc]`) stay Unicode.
//! The rewritten patterns run on bytes (`regex::bytes`); a match is widened to character
//! boundaries by [`on_chars`].

/// The pattern with its ASCII classes matched bytewise.
pub(crate) fn bytewise(pattern: &str) -> String {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::with_capacity(pattern.len() + 64);
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' if i + 1 < chars.len() => {
                let next = chars[i + 1];
                if matches!(next, 'b' | 's' | 'w' | 'd' | 'B' | 'S' | 'W' | 'D') {
                    out.push_str("(?-u:\\");
                    out.push(next);
                    out.push(')');
                } else {
                    out.push('\\');
                    out.push(next);
                }
                i += 2;
            }
            '[' => {
                let end = class_end(&chars, i);
                let class: String = chars[i..=end].iter().collect();
                if class.is_ascii() {
                    out.push_str("(?-u:");
                    out.push_str(&class);
                    out.push(')');
                } else {
                    out.push_str(&class);
                }
                i = end + 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// Index of the `]` closing the class opened at `open` (or the last index when unclosed, which
/// the regex compiler then reports).
fn class_end(chars: &[char], open: usize) -> usize {
    let mut j = open + 1;
    if chars.get(j) == Some(&'^') {
        j += 1;
    }
    if chars.get(j) == Some(&']') {
        j += 1;
    }
    while j < chars.len() {
        match chars[j] {
            '\\' => j += 2,
            ']' => return j,
            _ => j += 1,
        }
    }
    chars.len() - 1
}

/// `range` widened to the character boundaries of `text`.
pub(crate) fn on_chars(text: &str, range: std::ops::Range<usize>) -> std::ops::Range<usize> {
    let mut start = range.start.min(text.len());
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    let mut end = range.end.min(text.len()).max(start);
    while !text.is_char_boundary(end) {
        end += 1;
    }
    start..end
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ascii_classes_become_bytewise_and_unicode_ones_stay() {
        assert_eq!(
            bytewise(r"a[^\n]{0,9}\s+\bx"),
            r"a(?-u:[^\n]){0,9}(?-u:\s)+(?-u:\b)x"
        );
        assert_eq!(bytewise(r"[çc]a\.b"), r"[çc]a\.b");
        assert_eq!(bytewise(r"[]a]"), r"(?-u:[]a])");
        assert_eq!(bytewise(r"[\]x]"), r"(?-u:[\]x])");
    }

    #[test]
    fn ranges_widen_to_characters() {
        let t = "aé b";
        assert_eq!(on_chars(t, 2..3), 1..3);
        assert_eq!(on_chars(t, 0..2), 0..3);
    }
}
