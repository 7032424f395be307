//! Skill versions: the optional `version` key, a [Semantic Versioning 2.0.0](https://semver.org)
//! string (as agentskills-core reads it: `MAJOR.MINOR.PATCH`, optionally `-pre.release` and
//! `+build`). Not a key of the Agent Skills specification, so `validate --spec` refuses it like
//! any other non-spec key.
//!
//! Versions are ordered by semver precedence: `1.0.0-rc.1 < 1.0.0 < 1.0.1 < 1.1.0`, and build
//! metadata is ignored (`1.0.0+a` and `1.0.0+b` are equal).

use std::cmp::Ordering;
use std::fmt;

/// Longest `version` value, in bytes.
pub const MAX_VERSION_BYTES: usize = 64;

/// A checked semantic version.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SkillVersion(semver::Version);

/// Why a `version` value is not a semantic version: what is wrong and what to write instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{problem}")]
pub struct VersionError {
    /// What is wrong, quoting the value (control characters escaped, at most 64 bytes shown).
    pub problem: String,
    /// What to write instead: a corrected value when one can be guessed.
    pub hint: String,
}

impl SkillVersion {
    /// Check a value as written (no surrounding spaces, no leading `v`).
    pub fn parse(s: &str) -> Result<SkillVersion, VersionError> {
        let shown = shown(s);
        let refuse = |why: &str| {
            VersionError {
            problem: format!("'{shown}' is not a semantic version: {why}"),
            hint: match suggestion(s) {
                Some(v) => format!("write `version: \"{v}\"` (MAJOR.MINOR.PATCH, quoted)"),
                None => "write MAJOR.MINOR.PATCH, quoted, like `version: \"1.2.0\"` (a pre-release as `1.2.0-rc.1`)".into(),
            },
        }
        };
        if s.len() > MAX_VERSION_BYTES {
            return Err(refuse(&format!("longer than {MAX_VERSION_BYTES} bytes")));
        }
        if s.is_empty() {
            return Err(refuse("it is empty"));
        }
        if s.trim() != s {
            return Err(refuse("it has spaces around it"));
        }
        if s.starts_with(['v', 'V']) {
            return Err(refuse("no `v` prefix"));
        }
        match semver::Version::parse(s) {
            Ok(v) => Ok(SkillVersion(v)),
            Err(e) => Err(refuse(&e.to_string())),
        }
    }

    /// Semver precedence (build metadata ignored).
    pub fn cmp_precedence(&self, other: &SkillVersion) -> Ordering {
        self.0.cmp_precedence(&other.0)
    }

    /// The version as the `semver` crate holds it.
    pub fn as_semver(&self) -> &semver::Version {
        &self.0
    }

    /// The next patch version (`1.2.3` → `1.2.4`; `1.2.3-rc.1` → `1.2.3`), for hints.
    pub fn next_patch(&self) -> SkillVersion {
        let mut v = semver::Version::new(self.0.major, self.0.minor, self.0.patch);
        if self.0.pre.is_empty() {
            v.patch = v.patch.saturating_add(1);
        }
        SkillVersion(v)
    }
}

impl fmt::Display for SkillVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl std::str::FromStr for SkillVersion {
    type Err = VersionError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        SkillVersion::parse(s)
    }
}

fn shown(s: &str) -> String {
    let mut end = s.len().min(MAX_VERSION_BYTES);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    let cut = crate::text::escape_controls(&s[..end]).into_owned();
    if end < s.len() {
        format!("{cut}…")
    } else {
        cut
    }
}

/// A corrected value for the common mistakes: `1`, `1.0` (what an unquoted YAML number reads
/// as), a `v` prefix, spaces around it.
fn suggestion(s: &str) -> Option<String> {
    let t = s.trim();
    let t = t.strip_prefix(['v', 'V']).unwrap_or(t);
    let parts: Vec<&str> = t.split('.').collect();
    let numeric = |p: &&str| !p.is_empty() && p.len() <= 9 && p.bytes().all(|b| b.is_ascii_digit());
    if (1..=3).contains(&parts.len()) && parts.iter().all(numeric) {
        let mut n: Vec<u64> = parts.iter().filter_map(|p| p.parse().ok()).collect();
        n.resize(3, 0);
        return Some(format!("{}.{}.{}", n[0], n[1], n[2]));
    }
    if t != s && semver::Version::parse(t).is_ok() {
        return Some(t.to_owned());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_semver_and_orders_by_precedence() {
        let v = |s: &str| SkillVersion::parse(s).unwrap();
        for ok in [
            "0.0.0",
            "1.2.3",
            "1.2.3-rc.1",
            "1.2.3+build.7",
            "10.20.30-alpha-1.x+001",
        ] {
            assert_eq!(v(ok).to_string(), ok);
        }
        let order = [
            "1.0.0-alpha",
            "1.0.0-alpha.1",
            "1.0.0-beta",
            "1.0.0-rc.1",
            "1.0.0",
            "1.0.1",
            "1.1.0",
            "2.0.0",
        ];
        for w in order.windows(2) {
            assert_eq!(v(w[0]).cmp_precedence(&v(w[1])), Ordering::Less, "{w:?}");
        }
        assert_eq!(v("1.0.0+a").cmp_precedence(&v("1.0.0+b")), Ordering::Equal);
        assert_eq!(v("1.2.3").next_patch().to_string(), "1.2.4");
        assert_eq!(v("1.2.3-rc.1").next_patch().to_string(), "1.2.3");
    }

    #[test]
    fn refuses_what_is_not_semver_and_says_what_to_write() {
        for (bad, hint) in [
            ("1.0", "\"1.0.0\""),
            ("1", "\"1.0.0\""),
            ("v1.2.3", "\"1.2.3\""),
            (" 1.2.3", "\"1.2.3\""),
            ("01.2.3", "MAJOR.MINOR.PATCH"),
            ("1.2.3-01", "MAJOR.MINOR.PATCH"),
            ("1.2.3-", "MAJOR.MINOR.PATCH"),
            ("1.2.3.4", "MAJOR.MINOR.PATCH"),
            ("", "MAJOR.MINOR.PATCH"),
            ("latest", "MAJOR.MINOR.PATCH"),
            ("99999999999999999999.0.0", "MAJOR.MINOR.PATCH"),
            ("1.2.3\u{0}", "MAJOR.MINOR.PATCH"),
        ] {
            let e = SkillVersion::parse(bad).unwrap_err();
            assert!(
                e.problem.contains("is not a semantic version"),
                "{bad:?}: {e:?}"
            );
            assert!(e.hint.contains(hint), "{bad:?}: {e:?}");
            assert!(!e.problem.contains('\u{0}'), "controls escaped: {e:?}");
        }
        let long = format!("1.2.3-{}", "a".repeat(100));
        let e = SkillVersion::parse(&long).unwrap_err();
        assert!(e.problem.contains("longer than 64 bytes"), "{e:?}");
        assert!(e.problem.len() < 200, "{e:?}");
    }
}
