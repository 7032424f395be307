//! `requires:` — what a skill cannot work without: other skills (with a version range), tool
//! classes, upstream MCP servers and programs on the server's `PATH`.
//!
//! ```yaml
//! requires:
//!   skills:
//!     - query-construction              # any version
//!     - name: sql-style
//!       version: ">=1.2.0, <2.0.0"      # a semver range, as Cargo writes them
//!       travel: true                    # loaded alongside this skill, like a companion
//!   tools: [web_fetch]                  # tool classes the agent must be granted
//!   mcp: [github]                       # upstream MCP servers ([mcp_servers.<name>])
//!   bins: [git, jq]                     # programs on the server's PATH
//! ```
//!
//! The store checks the skills at import, the runtime checks everything per agent (an unmet
//! skill is offered with the reason in the report, or withheld by the agent's policy), the
//! doctor reports it. [`Requires::from_node`] is lenient like the rest of [`crate::meta`]:
//! entries validation refuses are dropped here; [`crate::validate`] says what is wrong.

use crate::name::SkillName;
use crate::version::SkillVersion;
use crate::yaml::Node;
use serde::Serialize;
use std::fmt;

/// Most entries in each of `requires`' lists.
pub const MAX_REQUIRES_ENTRIES: usize = 32;
/// Longest version range, in bytes.
pub const MAX_RANGE_BYTES: usize = 64;

/// The keys `requires` may hold.
pub const REQUIRES_KEYS: [&str; 4] = ["skills", "tools", "mcp", "bins"];

/// A semver range (`^1.2`, `>=1.2.0, <2.0.0`, `~1.4`, `=1.0.0`, `*`), as Cargo reads them: a
/// bare `1.2` means `^1.2`. A pre-release version matches only a range that names a
/// pre-release of the same `MAJOR.MINOR.PATCH` (Cargo's rule).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionRange {
    text: String,
    req: semver::VersionReq,
}

impl VersionRange {
    /// Read a range as written; the error says what is wrong and what to write.
    pub fn parse(s: &str) -> Result<VersionRange, String> {
        let t = s.trim();
        if t.is_empty() {
            return Err("the version range is empty: write one like \"^1.2\" or \">=1.2.0, <2.0.0\", or leave `version` out for any version".into());
        }
        if t.len() > MAX_RANGE_BYTES {
            return Err(format!(
                "the version range is longer than {MAX_RANGE_BYTES} bytes: write one like \"^1.2\""
            ));
        }
        if t.chars().any(char::is_control) {
            return Err("the version range holds a control character".into());
        }
        semver::VersionReq::parse(t)
            .map(|req| VersionRange {
                text: t.to_owned(),
                req,
            })
            .map_err(|e| {
                format!(
                    "'{t}' is not a version range ({e}): write one like \"^1.2\", \"~1.4.0\" or \">=1.2.0, <2.0.0\""
                )
            })
    }

    /// Whether `v` is in the range.
    pub fn matches(&self, v: &SkillVersion) -> bool {
        self.req.matches(v.as_semver())
    }

    /// The range as written (trimmed).
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

impl fmt::Display for VersionRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Serialize for VersionRange {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

/// One skill a skill requires.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RequiredSkill {
    /// Its name.
    pub name: SkillName,
    /// The versions that satisfy it; `None` is any version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<VersionRange>,
    /// Whether it is loaded alongside the requiring skill, like a companion.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub travel: bool,
}

/// What a skill declares it cannot work without.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct Requires {
    /// Other skills, each with an optional version range.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skills: Vec<RequiredSkill>,
    /// Tool classes the agent must be granted (and some tool must provide).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
    /// Upstream MCP servers, by their name in `[mcp_servers]`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mcp: Vec<String>,
    /// Programs that must be on the server's `PATH`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub bins: Vec<String>,
}

impl Requires {
    /// Whether nothing is required.
    pub fn is_empty(&self) -> bool {
        self.skills.is_empty()
            && self.tools.is_empty()
            && self.mcp.is_empty()
            && self.bins.is_empty()
    }

    /// The required skills marked to travel with this one.
    pub fn travelling(&self) -> impl Iterator<Item = &SkillName> {
        self.skills.iter().filter(|s| s.travel).map(|s| &s.name)
    }

    /// The typed view of a `requires` value; entries that do not validate are dropped.
    pub fn from_node(node: Option<&Node>) -> Requires {
        let Some(map) = node.and_then(Node::as_map) else {
            return Requires::default();
        };
        let list = |key: &str, check: fn(&str) -> Option<&'static str>| -> Vec<String> {
            let mut out: Vec<String> = Vec::new();
            for item in crate::yaml::string_list(map.get(key)) {
                let t = item.trim();
                if check(t).is_none() && !out.iter().any(|o| o == t) {
                    out.push(t.to_owned());
                }
            }
            out.truncate(MAX_REQUIRES_ENTRIES);
            out
        };
        let mut skills: Vec<RequiredSkill> = Vec::new();
        if let Some(Node::Seq { items, .. }) = map.get("skills") {
            for item in items {
                if let Ok(s) = RequiredSkill::from_node(item)
                    && !skills.iter().any(|x| x.name == s.name)
                {
                    skills.push(s);
                }
            }
        }
        skills.truncate(MAX_REQUIRES_ENTRIES);
        Requires {
            skills,
            tools: list("tools", crate::grammar::check_tool_class),
            mcp: list("mcp", crate::grammar::check_server_name),
            bins: list("bins", crate::grammar::check_program_name),
        }
    }
}

impl RequiredSkill {
    /// One entry of `requires.skills`: a name, or a mapping with `name`, optional `version` and
    /// `travel`. The error says what is wrong with it.
    pub fn from_node(node: &Node) -> Result<RequiredSkill, String> {
        if let Some(s) = node.as_str() {
            let name = SkillName::parse(s.trim())
                .map_err(|e| format!("'{}' is not a valid skill name: {e}", s.trim()))?;
            return Ok(RequiredSkill {
                name,
                version: None,
                travel: false,
            });
        }
        let Some(map) = node.as_map() else {
            return Err(format!(
                "an entry must be a skill name or a mapping with `name`, `version` and `travel`, not {}",
                node.kind()
            ));
        };
        if let Some(k) = map
            .keys()
            .find(|k| !["name", "version", "travel"].contains(k))
        {
            return Err(format!(
                "unknown key '{k}' in an entry (use `name`, `version` and `travel`)"
            ));
        }
        let name = match map.get("name").and_then(Node::as_str) {
            Some(n) => SkillName::parse(n.trim())
                .map_err(|e| format!("'{}' is not a valid skill name: {e}", n.trim()))?,
            None => return Err("an entry has no `name`".into()),
        };
        let version = match map.get("version") {
            None => None,
            Some(v) => match v.as_str() {
                Some(t) => Some(VersionRange::parse(t).map_err(|e| format!("'{name}': {e}"))?),
                None => {
                    return Err(format!(
                        "'{name}': `version` must be a quoted range like \"^1.2\", not {}",
                        v.kind()
                    ));
                }
            },
        };
        let travel = match map.get("travel") {
            None => false,
            Some(v) => match v.as_str().map(str::trim) {
                Some("true") => true,
                Some("false") => false,
                _ => {
                    return Err(format!("'{name}': `travel` must be true or false"));
                }
            },
        };
        Ok(RequiredSkill {
            name,
            version,
            travel,
        })
    }

    /// Whether a skill at `version` (its declared `version`, if any) satisfies this entry.
    pub fn accepts(&self, version: Option<&SkillVersion>) -> bool {
        match (&self.version, version) {
            (None, _) => true,
            (Some(r), Some(v)) => r.matches(v),
            (Some(_), None) => false,
        }
    }

    /// The entry as a person reads it: `sql-style` or `sql-style (>=1.2.0, <2.0.0)`.
    pub fn describe(&self) -> String {
        match &self.version {
            Some(r) => format!("{} ({r})", self.name),
            None => self.name.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(yaml: &str) -> Requires {
        let text = format!("---\nname: a\ndescription: d\nrequires:\n{yaml}---\nbody\n");
        let md = crate::SkillMd::parse(&text, &Default::default()).unwrap();
        Requires::from_node(md.get("requires"))
    }

    #[test]
    fn reads_every_kind_and_drops_what_validation_refuses() {
        let r = req(
            "  skills:\n    - b\n    - name: c\n      version: \"^1.2\"\n      travel: true\n    - Bad_Name\n    - b\n  tools: [web_fetch, Bad]\n  mcp: [github]\n  bins: [jq, /bin/sh, git]\n",
        );
        assert_eq!(r.skills.len(), 2);
        assert_eq!(r.skills[0].describe(), "b");
        assert_eq!(r.skills[1].describe(), "c (^1.2)");
        assert!(r.skills[1].travel && !r.skills[0].travel);
        assert_eq!(
            r.travelling().map(|n| n.as_str()).collect::<Vec<_>>(),
            ["c"]
        );
        assert_eq!(r.tools, ["web_fetch"]);
        assert_eq!(r.mcp, ["github"]);
        assert_eq!(r.bins, ["jq", "git"]);
        assert!(req("  nothing: 1\n").is_empty());
    }

    #[test]
    fn ranges_match_as_cargo_reads_them() {
        let v = |s: &str| SkillVersion::parse(s).unwrap();
        let r = |s: &str| VersionRange::parse(s).unwrap();
        assert!(r("^1.2").matches(&v("1.9.0")));
        assert!(!r("^1.2").matches(&v("2.0.0")));
        assert!(!r("^1.2").matches(&v("1.1.9")));
        assert!(r("1.2").matches(&v("1.2.5")));
        assert!(r(">=1.2.0, <2.0.0").matches(&v("1.2.0")));
        assert!(r("*").matches(&v("0.1.0")));
        assert!(!r("^1.0").matches(&v("1.1.0-rc.1")));
        assert!(r(">=1.1.0-rc.1").matches(&v("1.1.0-rc.2")));
        for bad in [
            "",
            "  ",
            "one",
            ">>1",
            "^1.2 <2",
            &"1".repeat(80),
            "1.\u{7}2",
        ] {
            let e = VersionRange::parse(bad).unwrap_err();
            assert!(e.contains("range"), "{bad:?}: {e}");
        }
        let entry = RequiredSkill {
            name: SkillName::parse("x").unwrap(),
            version: Some(r("^1")),
            travel: false,
        };
        assert!(entry.accepts(Some(&v("1.0.0"))));
        assert!(!entry.accepts(None));
    }
}
