//! Text folding shared by trigger matching and ranking: case-insensitive and accent-folded.

use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;

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
