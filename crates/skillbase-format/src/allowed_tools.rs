//! `allowed-tools` in Claude Code's syntax (`WebFetch(domain:docs.rs) Bash(git:*) Read`), read
//! into what Skillbase declares: a tool maps onto a Skillbase tool class (and its hosts) where
//! one does the same thing; every other entry is reported, never guessed.
//!
//! Only `WebFetch` maps (to the `web_fetch` class, and `domain:` to `hosts`). Claude Code's file
//! and shell tools (`Read`, `Edit`, `Bash(...)`) run in the harness, not through Skillbase, which
//! runs nothing a skill ships: they are kept as the harness's business ([`Mapped::harness`]),
//! not warned about, since a skill written for Claude Code rightly lists them. What is reported
//! ([`Mapped::unmapped`]) is what a writer may have meant for Skillbase and did not get: an MCP
//! tool (`mcp__server__tool`, named by server, not by class), a malformed entry, a `WebFetch`
//! domain that is not a host.

/// Most entries read from one `allowed-tools` value; the rest are reported.
pub const MAX_ENTRIES: usize = 64;

/// What `allowed-tools` declares, and the entries that do not map.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Mapped {
    /// Tool classes the entries map onto.
    pub tools: Vec<String>,
    /// Hosts the entries map onto (lowercase).
    pub hosts: Vec<String>,
    /// Entries the harness grants on its own (`Read`, `Bash(git:*)`): not Skillbase's to
    /// declare, not warned about (each clipped to 80 characters).
    pub harness: Vec<String>,
    /// One line per entry that does not map and may have been meant for Skillbase, saying why.
    pub unmapped: Vec<String>,
}

/// The entries of an `allowed-tools` value: space- or comma-separated, a parenthesised
/// argument kept whole (`Bash(git diff *)` is one entry).
pub fn entries(value: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut depth = 0usize;
    for c in value.chars() {
        match c {
            '(' => {
                depth += 1;
                cur.push(c);
            }
            ')' => {
                depth = depth.saturating_sub(1);
                cur.push(c);
            }
            c if depth == 0 && (c.is_whitespace() || c == ',') => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Map `allowed-tools` entries onto Skillbase's declared capabilities.
pub fn map<S: AsRef<str>>(entries: &[S]) -> Mapped {
    let mut m = Mapped::default();
    for (k, e) in entries.iter().enumerate() {
        let e = e.as_ref().trim();
        if k >= MAX_ENTRIES {
            m.unmapped.push(format!(
                "allowed-tools: entries after the first {MAX_ENTRIES} are not read"
            ));
            break;
        }
        let (tool, arg) = match e.split_once('(') {
            Some((t, rest)) => match rest.strip_suffix(')') {
                Some(a) => (t, Some(a)),
                None => {
                    m.unmapped.push(format!(
                        "allowed-tools: '{}' opens a `(` it never closes",
                        clip(e)
                    ));
                    continue;
                }
            },
            None => (e, None),
        };
        match tool {
            "WebFetch" => {
                push_unique(&mut m.tools, "web_fetch");
                match arg.map(str::trim) {
                    None | Some("") => {}
                    Some(a) => match a.strip_prefix("domain:").map(|h| h.trim().to_ascii_lowercase()) {
                        Some(host) if crate::grammar::check_host(&host).is_none() => {
                            push_unique(&mut m.hosts, &host);
                        }
                        _ => m.unmapped.push(format!(
                            "allowed-tools: '{}' names no host Skillbase can declare (write `WebFetch(domain:example.com)`)",
                            clip(e)
                        )),
                    },
                }
            }
            t if t.starts_with("mcp__") => m.unmapped.push(format!(
                "allowed-tools: '{}' names an MCP tool; declare its tool class under `capabilities.tools`",
                clip(e)
            )),
            // `Bash(...)`, `Read`, `Edit`...: the harness's own tools and shell permissions.
            _ => m.harness.push(clip(e)),
        }
    }
    m
}

fn push_unique(v: &mut Vec<String>, s: &str) {
    if !v.iter().any(|x| x == s) {
        v.push(s.to_owned());
    }
}

/// An entry as quoted in a message: at most 80 characters.
fn clip(s: &str) -> String {
    s.chars().take(80).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_code_syntax_is_split_and_mapped() {
        let e = entries("Read, Bash(git diff *) WebFetch(domain:Docs.rs) WebFetch mcp__gh__issues");
        assert_eq!(
            e,
            [
                "Read",
                "Bash(git diff *)",
                "WebFetch(domain:Docs.rs)",
                "WebFetch",
                "mcp__gh__issues"
            ]
        );
        let m = map(&e);
        assert_eq!(m.tools, ["web_fetch"]);
        assert_eq!(m.hosts, ["docs.rs"]);
        assert_eq!(m.harness, ["Read", "Bash(git diff *)"]);
        assert_eq!(m.unmapped.len(), 1, "{:?}", m.unmapped);
        assert!(m.unmapped[0].contains("MCP tool"));
    }

    #[test]
    fn hostile_values_are_bounded() {
        let m = map(&entries("WebFetch(domain:/etc/passwd) WebFetch(domain:a b"));
        assert!(m.hosts.is_empty());
        assert_eq!(m.unmapped.len(), 2, "{:?}", m.unmapped);
        let many = "Read ".repeat(1000);
        let m = map(&entries(&many));
        assert_eq!(m.harness.len(), MAX_ENTRIES);
        assert_eq!(m.unmapped.len(), 1, "the entries not read are reported");
        let long = format!("Tool{}", "x".repeat(10_000));
        assert!(map(&[long]).harness[0].chars().count() <= 80);
        let long = format!("mcp__{}", "x".repeat(10_000));
        assert!(map(&[long]).unmapped[0].chars().count() < 200);
        assert!(entries("((((").len() == 1 && entries(")))) ").len() == 1);
    }
}
