//! The envelope: what a call may do is what the agent is granted *now*, intersected, while a
//! skill drives, with what that skill's revision declares. This module owns the intersection —
//! tool classes, vault entries and host patterns — for calls ([`allowed_hosts`],
//! [`allowed_vault`]) and for authoring ([`excess`]: what a skill declares beyond the grants), so
//! the two can never disagree about a pattern.

use skillbase_format::SkillMeta;
use skillbase_format::validate::split_host_port;
use skillbase_store::{Agent, Grants};

/// Whether `host[:port]` matches a pattern: exact (`api.x.com`, `api.x.com:8443`) or a
/// subdomain wildcard (`*.x.com`). A pattern without a port matches the scheme's default port.
pub fn host_matches(pattern: &str, host: &str, port: u16, default_port: u16) -> bool {
    let (p_host, p_port) = match split_host_port(pattern) {
        (h, Some(p)) => match p.parse::<u16>() {
            Ok(p) => (h, Some(p)),
            // A pattern with a port that is not one matches nothing.
            Err(_) => return false,
        },
        (h, None) => (h, None),
    };
    let port_ok = match p_port {
        Some(p) => p == port,
        None => port == default_port,
    };
    if !port_ok {
        return false;
    }
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    let p_host = p_host.to_ascii_lowercase();
    match p_host.strip_prefix("*.") {
        Some(suffix) => host.ends_with(&format!(".{suffix}")),
        None => host == p_host,
    }
}

/// Whether a grant list covers a declared host: the same pattern, or a wildcard grant that
/// covers it — a declared `host:port` only when the wildcard names that port, a declared `host`
/// (the scheme's default port) only by a wildcard without a port. One rule for calls (what a
/// driving skill may reach) and for authoring (what a skill may declare).
pub fn host_covered(declared: &str, grants: &[String]) -> bool {
    let (host, port) = match split_host_port(declared) {
        (h, Some(p)) => match p.parse() {
            Ok(p) => (h, Some(p)),
            Err(_) => return false,
        },
        (h, None) => (h, None),
    };
    grants.iter().any(|g| {
        g == declared
            || (g.starts_with("*.")
                && match port {
                    Some(p) => host_matches(g, host, p, 0),
                    None => host_matches(g, host, 443, 443),
                })
    })
}

/// The hosts a call may reach: the agent's grants, narrowed under a skill to the hosts it
/// declares (each declared host must itself be covered by a grant).
pub(crate) fn allowed_hosts(agent: &Agent, skill: Option<&SkillMeta>) -> Vec<String> {
    let granted = &agent.config.grants.hosts;
    match skill {
        None => granted.clone(),
        Some(meta) => meta
            .capabilities
            .hosts
            .iter()
            .filter(|declared| host_covered(declared, granted))
            .cloned()
            .collect(),
    }
}

pub(crate) fn allowed_vault(agent: &Agent, skill: Option<&SkillMeta>) -> Vec<String> {
    let granted = &agent.config.grants.vault;
    match skill {
        None => granted.clone(),
        Some(meta) => meta
            .capabilities
            .vault
            .iter()
            .filter(|v| granted.contains(v))
            .cloned()
            .collect(),
    }
}

/// What a skill declares beyond the agent's grants, as `tools:<class>`, `vault:<entry>` and
/// `hosts:<pattern>` (empty: the declaration fits). A declared host is covered as a call's
/// destination would be (the envelope's `host_covered`).
pub fn excess(grants: &Grants, tools: &[&str], vault: &[&str], hosts: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    for t in tools {
        if !grants.tools.iter().any(|g| g == t) {
            out.push(format!("tools:{t}"));
        }
    }
    for v in vault {
        if !grants.vault.iter().any(|g| g == v) {
            out.push(format!("vault:{v}"));
        }
    }
    for h in hosts {
        if !host_covered(h, &grants.hosts) {
            out.push(format!("hosts:{h}"));
        }
    }
    out
}

/// Whether `agent` is granted tool `class` now (the gate's first half, without a driving
/// skill).
pub fn class_granted(agent: &Agent, class: &str) -> bool {
    Envelope::for_call(agent, None).class_granted(class)
}

/// Granted ∩ declared for one call: the agent's grants as they are now and, while a skill
/// drives the session, what the revision its run activated declares. The one place the
/// dispatcher, `CallContext` and the tool gateway ask what a call may use.
#[derive(Debug, Clone, Copy)]
pub struct Envelope<'a> {
    agent: &'a Agent,
    driving: Option<&'a SkillMeta>,
}

impl<'a> Envelope<'a> {
    /// The envelope of a call by `agent`, under the driving skill's revision if one drives.
    pub fn for_call(agent: &'a Agent, driving: Option<&'a SkillMeta>) -> Envelope<'a> {
        Envelope { agent, driving }
    }

    /// Whether the agent is granted tool `class` now.
    pub fn class_granted(&self, class: &str) -> bool {
        self.agent.config.grants.tools.iter().any(|t| t == class)
    }

    /// Whether the driving skill (if any) declares tool `class`.
    pub fn class_declared(&self, class: &str) -> bool {
        self.driving
            .is_none_or(|m| m.capabilities.tools.iter().any(|t| t == class))
    }

    /// Whether a tool of `class` may run: granted, and declared while a skill drives; the
    /// refusal says which half failed.
    pub fn allows_class(&self, class: &str) -> Result<(), crate::rule::Rule> {
        if !self.class_granted(class) {
            return Err(crate::rule::Rule::ClassNotGranted);
        }
        if !self.class_declared(class) {
            return Err(crate::rule::Rule::ClassNotDeclared);
        }
        Ok(())
    }

    /// The vault entries the call may resolve.
    pub fn vault(&self) -> Vec<String> {
        allowed_vault(self.agent, self.driving)
    }

    /// The host patterns the call may reach.
    pub fn hosts(&self) -> Vec<String> {
        allowed_hosts(self.agent, self.driving)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_reading_of_host_and_port() {
        for (pattern, valid, host, port) in [
            ("api.x.com", true, "api.x.com", None),
            ("api.x.com:8443", true, "api.x.com", Some("8443")),
            ("[::1]", true, "[::1]", None),
            ("[::1]:8080", true, "[::1]", Some("8080")),
            ("*.x.com:443", true, "*.x.com", Some("443")),
            ("api.x.com:0", false, "api.x.com", Some("0")),
            ("api.x.com:http", false, "api.x.com", Some("http")),
        ] {
            assert_eq!(split_host_port(pattern), (host, port), "{pattern}");
            // Validation accepts exactly the patterns a call can match on.
            assert_eq!(
                skillbase_format::validate::check_host(pattern).is_none(),
                valid,
                "{pattern}"
            );
        }
        // A bracketed IPv6 grant without a port matches the default port, as validation reads it.
        assert!(host_matches("[::1]", "[::1]", 80, 80));
        assert!(host_matches("[::1]:8080", "[::1]", 8080, 80));
        assert!(!host_matches("api.x.com:http", "api.x.com", 80, 80));
    }

    #[test]
    fn authoring_and_calls_cover_hosts_alike() {
        let grants = Grants {
            tools: vec!["web_fetch".into()],
            vault: vec!["KEY".into()],
            hosts: vec!["*.example.org".into(), "api.x.com:8443".into()],
        };
        for (declared, covered) in [
            ("api.example.org", true),
            ("deep.api.example.org", true),
            ("example.org", false),
            ("api.example.org:8443", false),
            ("api.x.com:8443", true),
            ("api.x.com", false),
            ("evil.com", false),
            ("api.example.org:notaport", false),
        ] {
            assert_eq!(host_covered(declared, &grants.hosts), covered, "{declared}");
            assert_eq!(
                excess(&grants, &[], &[], &[declared]).is_empty(),
                covered,
                "{declared}"
            );
        }
        assert_eq!(
            excess(
                &grants,
                &["web_fetch", "shell"],
                &["KEY", "ROOT"],
                &["api.example.org"]
            ),
            vec!["tools:shell".to_owned(), "vault:ROOT".to_owned()]
        );
    }

    #[test]
    fn the_envelope_is_granted_and_declared() {
        use skillbase_store::{AgentConfig, AgentName};
        let agent = Agent {
            name: AgentName::parse("a").unwrap(),
            config: AgentConfig {
                grants: Grants {
                    tools: vec!["web_fetch".into(), "notes".into()],
                    vault: vec!["KEY".into(), "OTHER".into()],
                    hosts: vec!["*.example.org".into()],
                },
                ..AgentConfig::default()
            },
            version: 1,
        };
        let free = Envelope::for_call(&agent, None);
        assert_eq!(free.allows_class("notes"), Ok(()));
        assert_eq!(
            free.allows_class("skills"),
            Err(crate::rule::Rule::ClassNotGranted)
        );
        let reaches = |e: &Envelope<'_>, host: &str| {
            e.hosts().iter().any(|p| host_matches(p, host, 443, 443))
        };
        assert!(free.vault().contains(&"OTHER".into()) && !free.vault().contains(&"NOPE".into()));
        assert!(reaches(&free, "api.example.org"));
        assert!(!reaches(&free, "example.org"));
        let text = "---\nname: s\ndescription: d\ncapabilities:\n  tools: [web_fetch]\n  vault: [KEY]\n  hosts: [api.example.org]\n---\nb";
        let parsed = skillbase_format::SkillMd::parse(text, &Default::default()).unwrap();
        let meta = SkillMeta::from_md(&parsed).unwrap();
        let under = Envelope::for_call(&agent, Some(&meta));
        assert_eq!(under.allows_class("web_fetch"), Ok(()));
        assert_eq!(
            under.allows_class("notes"),
            Err(crate::rule::Rule::ClassNotDeclared)
        );
        assert!(under.vault().contains(&"KEY".into()) && !under.vault().contains(&"OTHER".into()));
        assert!(reaches(&under, "api.example.org"));
        assert!(!reaches(&under, "www.example.org"));
    }
}
