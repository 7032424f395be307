//! Splitting SKILL.md into its YAML frontmatter and Markdown body.
//!
//! The frontmatter sits between two delimiter *lines* (`---`), so a `---` inside a value never
//! ends it (the reference validator splits on the first two `---` substrings anywhere; we follow
//! the specification instead). A UTF-8 byte order mark and CRLF line endings are accepted.

use crate::yaml::{self, Mapping, Node, YamlError, YamlLimits};

/// Why SKILL.md could not be split or parsed. Messages match the reference validator's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrontmatterError {
    /// The file does not begin (after an optional BOM) with a `---` line.
    #[error("SKILL.md must start with YAML frontmatter (---)")]
    MissingFrontmatter,
    /// No closing `---` line follows the opening one.
    #[error("SKILL.md frontmatter not properly closed with ---")]
    Unclosed,
    /// The text between the delimiters is not YAML the reader accepts (syntax, a broken limit, an
    /// anchor, alias or tag); the error carries the position.
    #[error("Invalid YAML in frontmatter: {0}")]
    Yaml(YamlError),
    /// The YAML parsed but is not a mapping (a list, a scalar or nothing at all).
    #[error("SKILL.md frontmatter must be a YAML mapping")]
    NotAMapping,
}

impl FrontmatterError {
    /// What the author should do about it.
    pub fn hint(&self) -> &'static str {
        match self {
            FrontmatterError::MissingFrontmatter => {
                "start the file with a line `---`, then `name:` and `description:`, then a closing `---` line"
            }
            FrontmatterError::Unclosed => "add a line containing only `---` after the frontmatter",
            FrontmatterError::Yaml(_) => {
                "fix the YAML; quote values that contain `: ` or start with a special character"
            }
            FrontmatterError::NotAMapping => "the frontmatter must be `key: value` lines",
        }
    }
}

/// The parts of a SKILL.md text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Split<'a> {
    /// The YAML between the delimiter lines.
    pub yaml: &'a str,
    /// Everything after the closing delimiter line, untrimmed.
    pub body: &'a str,
    /// The 1-based line number of the first YAML line in the file.
    pub yaml_first_line: usize,
}

/// Find the frontmatter delimiter lines.
pub fn split(text: &str) -> Result<Split<'_>, FrontmatterError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let (first, rest) = match text.find('\n') {
        Some(i) => (&text[..i], &text[i + 1..]),
        None => (text, ""),
    };
    if !is_delimiter(first) {
        if first.starts_with("---") {
            // `----` or `---name: x`: the file does start with dashes, so (like the reference)
            // this is a YAML problem rather than missing frontmatter.
            return Err(FrontmatterError::Yaml(YamlError::Syntax {
                message: "the opening delimiter line must be exactly `---`".into(),
                line: 1,
                col: 1,
            }));
        }
        return Err(FrontmatterError::MissingFrontmatter);
    }
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        let content = line.strip_suffix('\n').unwrap_or(line);
        if is_delimiter(content) {
            return Ok(Split {
                yaml: &rest[..offset],
                body: &rest[offset + line.len()..],
                yaml_first_line: 2,
            });
        }
        offset += line.len();
    }
    Err(FrontmatterError::Unclosed)
}

fn is_delimiter(line: &str) -> bool {
    line.trim_end_matches([' ', '\t', '\r']) == "---"
}

/// A parsed SKILL.md: the frontmatter mapping and the body.
#[derive(Debug, Clone, PartialEq)]
pub struct SkillMd {
    /// The top-level YAML mapping, every scalar kept as its source text.
    pub frontmatter: Mapping,
    /// The body as written after the closing delimiter, with CRLF and CR line ends read as LF
    /// (as Python's text mode reads them).
    pub raw_body: String,
    /// Whether the YAML text contains a tab (strict YAML, used by the reference, refuses tabs).
    pub yaml_has_tab: bool,
    /// The line of the file where the YAML starts (for error positions).
    pub yaml_first_line: usize,
}

impl SkillMd {
    /// Parse SKILL.md text.
    pub fn parse(text: &str, limits: &YamlLimits) -> Result<SkillMd, FrontmatterError> {
        let parts = split(text)?;
        let node = yaml::parse(parts.yaml, limits).map_err(FrontmatterError::Yaml)?;
        match node {
            Some(Node::Map(frontmatter)) => Ok(SkillMd {
                frontmatter,
                raw_body: if parts.body.contains('\r') {
                    parts.body.replace("\r\n", "\n").replace('\r', "\n")
                } else {
                    parts.body.to_owned()
                },
                yaml_has_tab: parts.yaml.contains('\t'),
                yaml_first_line: parts.yaml_first_line,
            }),
            _ => Err(FrontmatterError::NotAMapping),
        }
    }

    /// The body with surrounding whitespace removed, as the reference returns it.
    pub fn body(&self) -> &str {
        self.raw_body.trim()
    }

    /// A frontmatter value: the top-level key, or for Skillbase's own keys and the peer keys it
    /// honours ([`crate::keys::nestable`]), the same key under `metadata.skillbase` when the
    /// top level lacks it (the top level wins; validation warns of the conflict).
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.frontmatter.get(key).or_else(|| self.nested(key))
    }

    /// A key under `metadata.skillbase`, if it is one that may be written there.
    pub fn nested(&self, key: &str) -> Option<&Node> {
        if !crate::keys::nestable(key) {
            return None;
        }
        self.nested_map()?.get(key)
    }

    /// The `metadata.skillbase` mapping, if there is one.
    pub fn nested_map(&self) -> Option<&Mapping> {
        self.frontmatter
            .get("metadata")?
            .as_map()?
            .get(crate::keys::NESTED)?
            .as_map()
    }

    /// A string field, trimmed; `None` when absent, empty or not a string.
    pub fn str_field(&self, key: &str) -> Option<&str> {
        self.get(key)
            .and_then(Node::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
    }

    /// The skill's `name`, trimmed.
    pub fn name(&self) -> Option<&str> {
        self.str_field("name")
    }

    /// The skill's `description`, trimmed.
    pub fn description(&self) -> Option<&str> {
        self.str_field("description")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<SkillMd, FrontmatterError> {
        SkillMd::parse(s, &YamlLimits::default())
    }

    #[test]
    fn splits_on_delimiter_lines_only() {
        let md = parse("---\nname: a\ndescription: Compare a --- b\n---\n# Body\n").unwrap();
        assert_eq!(md.description(), Some("Compare a --- b"));
        assert_eq!(md.body(), "# Body");
    }

    #[test]
    fn accepts_bom_and_crlf() {
        let md = parse("\u{feff}---\r\nname: a\r\ndescription: d\r\n---\r\nbody\r\n").unwrap();
        assert_eq!(md.name(), Some("a"));
        assert_eq!(md.description(), Some("d"));
        assert_eq!(md.body(), "body");
    }

    #[test]
    fn reports_missing_and_unclosed() {
        assert_eq!(parse("# no"), Err(FrontmatterError::MissingFrontmatter));
        assert_eq!(parse(""), Err(FrontmatterError::MissingFrontmatter));
        assert_eq!(parse("---\nname: a\n"), Err(FrontmatterError::Unclosed));
        assert_eq!(parse("---"), Err(FrontmatterError::Unclosed));
    }

    #[test]
    fn non_mapping_is_refused() {
        assert_eq!(parse("---\n---\n"), Err(FrontmatterError::NotAMapping));
        assert_eq!(parse("---\n- a\n---\n"), Err(FrontmatterError::NotAMapping));
        assert_eq!(
            parse("---\njust text\n---\n"),
            Err(FrontmatterError::NotAMapping)
        );
    }

    #[test]
    fn yaml_errors_are_prefixed() {
        let e = parse("---\nname: [invalid\n---\n").unwrap_err();
        assert!(
            e.to_string().starts_with("Invalid YAML in frontmatter:"),
            "{e}"
        );
    }

    #[test]
    fn body_without_trailing_newline_after_delimiter() {
        let md = parse("---\nname: a\n---").unwrap();
        assert_eq!(md.body(), "");
    }
}
