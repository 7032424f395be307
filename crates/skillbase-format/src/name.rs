//! Skill names, checked exactly as the Agent Skills reference validator checks them.

use std::fmt;
use unicode_general_category::{GeneralCategory, get_general_category};
use unicode_normalization::UnicodeNormalization;

/// Longest name, in characters after NFKC.
pub const MAX_NAME_CHARS: usize = 64;

/// A valid skill name: 1–64 characters after trimming and NFKC, lowercase, letters (any script),
/// digits and single hyphens, not starting or ending with a hyphen.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(transparent)]
pub struct SkillName(String);

/// One problem with a name. Messages match the reference validator's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// The name is missing, blank or not a string.
    #[error("Field 'name' must be a non-empty string")]
    Empty,
    /// Longer than [`MAX_NAME_CHARS`] characters after NFKC: the normalised name and its length in
    /// characters.
    #[error("Skill name '{0}' exceeds {MAX_NAME_CHARS} character limit ({1} chars)")]
    TooLong(String, usize),
    /// Contains uppercase letters (holds the normalised name).
    #[error("Skill name '{0}' must be lowercase")]
    NotLowercase(String),
    /// Starts or ends with `-`.
    #[error("Skill name cannot start or end with a hyphen")]
    EdgeHyphen,
    /// Contains `--`.
    #[error("Skill name cannot contain consecutive hyphens")]
    ConsecutiveHyphens,
    /// Contains something other than letters, digits and hyphens, such as spaces, dots or
    /// underscores (holds the normalised name).
    #[error(
        "Skill name '{0}' contains invalid characters. Only letters, digits, and hyphens are allowed."
    )]
    InvalidCharacters(String),
}

impl NameError {
    /// What to do about it.
    pub fn hint(&self) -> &'static str {
        match self {
            NameError::Empty => "give the skill a name such as `pdf-processing`",
            NameError::TooLong(..) => "shorten the name to 64 characters or fewer",
            NameError::NotLowercase(_) => "use lowercase letters only",
            NameError::EdgeHyphen => "remove the leading or trailing hyphen",
            NameError::ConsecutiveHyphens => "use single hyphens between words",
            NameError::InvalidCharacters(_) => {
                "use only letters, digits and hyphens (no spaces, dots or underscores)"
            }
        }
    }
}

/// The name as the reference compares it: trimmed, then NFKC-normalised.
pub fn normalize(raw: &str) -> String {
    raw.trim().nfkc().collect()
}

/// Python's `str.isalnum()` for one character: a letter (L*) or a number (N*). Combining marks
/// are not, which is why `हिंदी` is refused (Rust's `char::is_alphanumeric` would accept it).
pub fn is_python_alnum(c: char) -> bool {
    use GeneralCategory::*;
    matches!(
        get_general_category(c),
        UppercaseLetter
            | LowercaseLetter
            | TitlecaseLetter
            | ModifierLetter
            | OtherLetter
            | DecimalNumber
            | LetterNumber
            | OtherNumber
    )
}

/// Every problem with a raw name, in the reference's order (empty list = valid).
pub fn check(raw: &str) -> (String, Vec<NameError>) {
    if raw.trim().is_empty() {
        return (String::new(), vec![NameError::Empty]);
    }
    let n = normalize(raw);
    let mut errors = Vec::new();
    let len = n.chars().count();
    if len > MAX_NAME_CHARS {
        errors.push(NameError::TooLong(n.clone(), len));
    }
    if n != n.to_lowercase() {
        errors.push(NameError::NotLowercase(n.clone()));
    }
    if n.starts_with('-') || n.ends_with('-') {
        errors.push(NameError::EdgeHyphen);
    }
    if n.contains("--") {
        errors.push(NameError::ConsecutiveHyphens);
    }
    if !n.chars().all(|c| c == '-' || is_python_alnum(c)) {
        errors.push(NameError::InvalidCharacters(n.clone()));
    }
    (n, errors)
}

/// Whether `c` may stand in a skill name written in canonical form: a letter or digit (Python's
/// `isalnum`) that lowercasing leaves unchanged, that NFKC leaves unchanged whatever surrounds
/// it (quick check "yes", combining class 0), so a name made of such characters and single
/// hyphens is exactly what [`SkillName::parse`] returns for it.
pub fn is_canonical_name_char(c: char) -> bool {
    use unicode_normalization::{IsNormalized, is_nfkc_quick};
    is_python_alnum(c)
        && c.to_lowercase().eq(std::iter::once(c))
        && unicode_normalization::char::canonical_combining_class(c) == 0
        && is_nfkc_quick(std::iter::once(c)) == IsNormalized::Yes
}

/// A regular expression (the subset JSON Schema, Python's `re` and Rust's `regex` read alike)
/// matching exactly the names [`SkillName::parse_canonical`] accepts: 1-64 canonical name
/// characters ([`is_canonical_name_char`], listed as ranges of literal characters) in words
/// joined by single hyphens. Built once (it walks the code points of planes 0-3).
pub fn canonical_name_pattern() -> &'static str {
    static PATTERN: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    PATTERN.get_or_init(|| {
        let mut class = String::new();
        let mut push = |lo: char, hi: char| {
            class.push(lo);
            if hi != lo {
                if u32::from(hi) > u32::from(lo) + 1 {
                    class.push('-');
                }
                class.push(hi);
            }
        };
        let mut run: Option<(char, char)> = None;
        // Letters and digits stop at plane 3: planes 4-13 are unassigned, 14 holds tags and
        // variation selectors, 15-16 private use (the server's tests sample every plane).
        for c in (0..=0x3_FFFF).filter_map(char::from_u32) {
            if is_canonical_name_char(c) {
                run = match run {
                    Some((lo, hi)) if u32::from(hi) + 1 == u32::from(c) => Some((lo, c)),
                    Some((lo, hi)) => {
                        push(lo, hi);
                        Some((c, c))
                    }
                    None => Some((c, c)),
                };
            }
        }
        if let Some((lo, hi)) = run {
            push(lo, hi);
        }
        format!("^(?=.{{1,{MAX_NAME_CHARS}}}$)[{class}]+(?:-[{class}]+)*$")
    })
}

impl SkillName {
    /// A name that must already be written as the name it stands for (for references to
    /// skills, such as an agent's allowlist): valid, and made only of canonical name characters
    /// and hyphens ([`is_canonical_name_char`]), so no trimming, NFKC or case folding changes
    /// it. The error says what to write instead.
    pub fn parse_canonical(raw: &str) -> Result<SkillName, String> {
        let name = SkillName::parse(raw).map_err(|e| format!("{e} ({})", e.hint()))?;
        if name.as_str() != raw {
            return Err(format!(
                "'{}' is not written as the name it stands for: write '{name}'",
                crate::text::escape_controls(raw)
            ));
        }
        if let Some(c) = raw
            .chars()
            .find(|&c| c != '-' && !is_canonical_name_char(c))
        {
            return Err(format!(
                "'{raw}' holds '{c}' (U+{:04X}), which can combine with the characters around it; use another spelling",
                u32::from(c)
            ));
        }
        Ok(name)
    }

    /// Parse a name, returning the first problem if it is invalid.
    pub fn parse(raw: &str) -> Result<SkillName, NameError> {
        let (n, errors) = check(raw);
        match errors.into_iter().next() {
            Some(e) => Err(e),
            None => Ok(SkillName(n)),
        }
    }

    /// The checked name, NFKC-normalised and trimmed.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SkillName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for SkillName {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl std::str::FromStr for SkillName {
    type Err = NameError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        SkillName::parse(s)
    }
}

impl<'de> serde::Deserialize<'de> for SkillName {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        SkillName::parse(&s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_names() {
        for n in [
            "pdf-processing",
            "a",
            "123",
            "技能",
            "мой-навык",
            "café",
            "٣٤٥",
        ] {
            assert!(SkillName::parse(n).is_ok(), "{n}");
        }
        assert_eq!(SkillName::parse("  x  ").unwrap().as_str(), "x");
        // NFD input is normalised.
        assert_eq!(SkillName::parse("cafe\u{301}").unwrap().as_str(), "café");
    }

    /// References to skills are written as the names they stand for: what parsing would
    /// change (spaces, NFD, compatibility characters, case) is refused with the name to write.
    #[test]
    fn canonical_names() {
        for ok in [
            "pdf-processing",
            "技能",
            "мой-навык",
            "café",
            "٣٤٥",
            "a1-b2",
        ] {
            assert_eq!(SkillName::parse_canonical(ok).unwrap().as_str(), ok);
        }
        for (raw, says) in [
            (" x", "write 'x'"),
            ("cafe\u{301}", "write 'café'"),
            ("ﬁle", "write 'file'"),
            ("ǆ", "write 'dž'"),
            ("Café", "must be lowercase"),
            ("a--b", "consecutive hyphens"),
        ] {
            let e = SkillName::parse_canonical(raw).unwrap_err();
            assert!(e.contains(says), "{raw:?}: {e}");
        }
        // A conjoining vowel alone is normalized text, but it would compose with a leading
        // consonant beside it: not a canonical name character.
        assert!(SkillName::parse("\u{1161}").is_ok());
        let e = SkillName::parse_canonical("\u{1161}").unwrap_err();
        assert!(e.contains("U+1161"), "{e}");
        let p = canonical_name_pattern();
        assert!(p.starts_with("^(?=.{1,64}$)[0-9a-z"), "{}", &p[..40]);
        // Ranges of literal characters (the server's OpenAPI tests check it name by name).
        assert!(!p.contains('A') && !p.contains('\\') && p.contains("一-"));
    }

    #[test]
    fn invalid_names_in_reference_order() {
        let (_, e) = check("-Bad--Name_");
        assert_eq!(
            e,
            vec![
                NameError::NotLowercase("-Bad--Name_".into()),
                NameError::EdgeHyphen,
                NameError::ConsecutiveHyphens,
                NameError::InvalidCharacters("-Bad--Name_".into()),
            ]
        );
        assert_eq!(check("").1, vec![NameError::Empty]);
        assert_eq!(check("   ").1, vec![NameError::Empty]);
        assert!(matches!(
            check(&"a".repeat(65)).1[0],
            NameError::TooLong(_, 65)
        ));
        assert!(check(&"a".repeat(64)).1.is_empty());
        assert!(matches!(
            check("हिंदी").1[0],
            NameError::InvalidCharacters(_)
        ));
        assert!(matches!(check("НАВЫК").1[0], NameError::NotLowercase(_)));
        assert!(matches!(
            check("my skill").1[0],
            NameError::InvalidCharacters(_)
        ));
    }

    #[test]
    fn fullwidth_is_nfkc_folded() {
        assert_eq!(SkillName::parse("ｓｋｉｌｌ").unwrap().as_str(), "skill");
    }
}
