//! Text folding shared by trigger matching and ranking: case-insensitive and accent-folded.

use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;

/// `s` safe to print on a terminal: every control character (terminal escapes, NUL, line breaks,
/// bidirectional overrides) written as a `\u{..}` escape, everything else as it is. For names
/// that come from outside (zip entries, file names) inside messages.
pub fn escape_controls(s: &str) -> std::borrow::Cow<'_, str> {
    let unsafe_char =
        |c: char| c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
    if !s.chars().any(unsafe_char) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if unsafe_char(c) {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Fold text for matching: compatibility decomposition, combining marks dropped, a few Latin
/// letters without a decomposition mapped to their base (`ø`→`o`, `ß`→`ss`), then lowercase.
/// Other scripts are left as they are (no transliteration), so CJK never matches Latin.
pub fn fold(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.nfkd() {
        if is_combining_mark(c) {
            continue;
        }
        match c {
            'ø' | 'Ø' => out.push('o'),
            'ł' | 'Ł' => out.push('l'),
            'đ' | 'Đ' | 'ð' | 'Ð' => out.push('d'),
            'æ' | 'Æ' => out.push_str("ae"),
            'œ' | 'Œ' => out.push_str("oe"),
            'ß' | 'ẞ' => out.push_str("ss"),
            'þ' | 'Þ' => out.push_str("th"),
            'ı' => out.push('i'),
            c if c.is_ascii() => out.push(c.to_ascii_lowercase()),
            c => out.extend(c.to_lowercase()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::fold;

    #[test]
    fn folds_case_and_accents() {
        assert_eq!(fold("Crème Brûlée"), "creme brulee");
        assert_eq!(fold("presénte"), "presente");
        assert_eq!(fold("STRAẞE Øre"), "strasse ore");
        assert_eq!(fold("ﬁle"), "file");
        assert_eq!(fold("北京"), "北京");
    }
}

#[cfg(test)]
mod escape_tests {
    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(super::escape_controls("plain/name.md"), "plain/name.md");
        assert_eq!(
            super::escape_controls("a\u{1b}[31mred\0\nx\u{202e}"),
            "a\\u{1b}[31mred\\u{0}\\u{a}x\\u{202e}"
        );
    }
}
