//! Session ids and where they come from: the one owner of the derived namespaces.
//!
//! The store keys sessions by `(agent, id)`. An id is either named by a client (REST `POST
//! /v1/sessions` with `id`, an MCP `Skillbase-Session` header) or derived by Skillbase for a
//! caller that names none:
//!
//! | origin | id |
//! | --- | --- |
//! | [`Origin::Rest`] | `rest:<agent>` (an agent token's REST writes) |
//! | [`Origin::McpStdio`] | `mcp:<agent>:stdio-<nonce>` (one per `skillbase mcp` process) |
//! | [`Origin::McpStateful`] | `mcp:<agent>:<Mcp-Session-Id>` (hashed unless `[A-Za-z0-9_-]{1,100}`) |
//! | [`Origin::McpStateless`] | `mcp:<agent>:t-<32 hex of the bearer's hash>` |
//! | [`Origin::Studio`] | `studio-<nonce>` (a "try a turn" of the studio) |
//!
//! Nobody may name an id in another agent's derived namespace (`mcp:`, `rest:`); a client may
//! name none of them through REST (they are Skillbase's to derive).

use crate::model::AgentName;
use sha2::{Digest, Sha256};

/// Where a session id comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Origin {
    /// Named by a client.
    Named,
    /// An agent token's REST writes that name no session.
    Rest,
    /// One `skillbase mcp` (stdio) process.
    McpStdio,
    /// An MCP client's `Mcp-Session-Id`.
    McpStateful,
    /// MCP requests with no session: one per agent token.
    McpStateless,
    /// A studio "try a turn".
    Studio,
}

/// Prefixes of the derived ids no one may name outside their own agent's namespace.
pub const DERIVED_PREFIXES: [&str; 2] = ["mcp:", "rest:"];

/// A session id with its origin.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SessionId {
    text: String,
    origin: Origin,
}

impl SessionId {
    /// An id a client names: refused (`None`) when it is in a derived namespace.
    pub fn named(id: &str) -> Option<SessionId> {
        (!DERIVED_PREFIXES.iter().any(|p| id.starts_with(p))).then(|| SessionId {
            text: id.to_owned(),
            origin: Origin::Named,
        })
    }

    /// An id `agent` names for itself (a `Skillbase-Session` header): `None` when it is in
    /// another agent's derived namespace; an id in its own is read back with its origin.
    pub fn claim(id: &str, agent: &AgentName) -> Option<SessionId> {
        if !usable_by(id, agent.as_str()) {
            return None;
        }
        let own = format!("mcp:{agent}:");
        let origin = match id.strip_prefix(own.as_str()) {
            Some(k) if k.starts_with("stdio-") => Origin::McpStdio,
            Some(k) if k.starts_with("t-") => Origin::McpStateless,
            Some(_) => Origin::McpStateful,
            None if id.starts_with("rest:") => Origin::Rest,
            None if id.starts_with("studio-") => Origin::Studio,
            None => Origin::Named,
        };
        Some(SessionId {
            text: id.to_owned(),
            origin,
        })
    }

    /// The session of an agent token's REST writes that name none.
    pub fn rest(agent: &AgentName) -> SessionId {
        SessionId {
            text: format!("rest:{agent}"),
            origin: Origin::Rest,
        }
    }

    /// The session of one `skillbase mcp` process, `nonce` being fresh random hex.
    pub fn mcp_stdio(agent: &AgentName, nonce: &str) -> SessionId {
        SessionId {
            text: format!("mcp:{agent}:stdio-{nonce}"),
            origin: Origin::McpStdio,
        }
    }

    /// The session of an MCP client's `Mcp-Session-Id`: kept when it is short and plain
    /// (`[A-Za-z0-9_-]{1,100}`), else its SHA-256 in hex (any bytes become a safe id).
    pub fn mcp_stateful(agent: &AgentName, header: &str) -> SessionId {
        let clean = !header.is_empty()
            && header.len() <= 100
            && header
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        let key = if clean {
            header.to_owned()
        } else {
            sha256_hex(header)
        };
        SessionId {
            text: format!("mcp:{agent}:{key}"),
            origin: Origin::McpStateful,
        }
    }

    /// The session MCP requests without one share: keyed by the agent and its bearer token
    /// (hashed), so each token has its own.
    pub fn mcp_stateless(agent: &AgentName, bearer: &str) -> SessionId {
        let key = sha256_hex(&format!("stateless-session\0{agent}\0{bearer}"));
        SessionId {
            text: format!("mcp:{agent}:t-{}", &key[..32]),
            origin: Origin::McpStateless,
        }
    }

    /// A studio "try a turn" session, `nonce` being fresh random hex.
    pub fn studio(nonce: &str) -> SessionId {
        SessionId {
            text: format!("studio-{nonce}"),
            origin: Origin::Studio,
        }
    }

    /// The id as stored.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Where it comes from.
    pub fn origin(&self) -> Origin {
        self.origin
    }

    /// The id, as stored.
    pub fn into_string(self) -> String {
        self.text
    }
}

impl std::fmt::Display for SessionId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// Whether `agent` may use the session `id`: any id outside the derived namespaces, and within
/// them only its own (`mcp:<agent>:…`, `rest:<agent>`).
pub fn usable_by(id: &str, agent: &str) -> bool {
    if let Some(rest) = id.strip_prefix("mcp:") {
        return rest.strip_prefix(agent).is_some_and(|r| r.starts_with(':'));
    }
    if let Some(rest) = id.strip_prefix("rest:") {
        return rest == agent;
    }
    true
}

fn sha256_hex(text: &str) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let digest = Sha256::digest(text.as_bytes());
    let mut s = String::with_capacity(64);
    for b in digest {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 15)] as char);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_ids_read_as_before_and_stay_in_their_agent() {
        let a = AgentName::parse("alpha").unwrap();
        assert_eq!(SessionId::rest(&a).as_str(), "rest:alpha");
        assert_eq!(
            SessionId::mcp_stdio(&a, "0a").as_str(),
            "mcp:alpha:stdio-0a"
        );
        assert_eq!(
            SessionId::mcp_stateful(&a, "abc_1-2").as_str(),
            "mcp:alpha:abc_1-2"
        );
        // Anything else is hashed (SHA-256 of the header, hex).
        assert_eq!(
            SessionId::mcp_stateful(&a, "a b").as_str(),
            format!("mcp:alpha:{}", sha256_hex("a b"))
        );
        assert_eq!(
            SessionId::mcp_stateful(&a, &"x".repeat(101)).origin(),
            Origin::McpStateful
        );
        let t = SessionId::mcp_stateless(&a, "tok");
        assert!(t.as_str().starts_with("mcp:alpha:t-") && t.as_str().len() == 12 + 32);
        assert_eq!(SessionId::studio("ff").as_str(), "studio-ff");
        for s in [
            SessionId::rest(&a),
            SessionId::mcp_stdio(&a, "0a"),
            SessionId::mcp_stateful(&a, "x"),
            t,
        ] {
            assert!(usable_by(s.as_str(), "alpha"), "{s}");
            assert!(!usable_by(s.as_str(), "alph"), "{s}");
            assert!(!usable_by(s.as_str(), "beta"), "{s}");
            assert!(SessionId::named(s.as_str()).is_none(), "{s}");
        }
        assert_eq!(SessionId::named("s-1").unwrap().origin(), Origin::Named);
        // An id claimed back is read with its origin; another agent's is refused.
        for s in [
            SessionId::rest(&a),
            SessionId::mcp_stdio(&a, "0a"),
            SessionId::mcp_stateful(&a, "x"),
            SessionId::mcp_stateless(&a, "tok"),
            SessionId::studio("ff"),
        ] {
            assert_eq!(SessionId::claim(s.as_str(), &a), Some(s.clone()));
            let b = AgentName::parse("beta").unwrap();
            assert_eq!(
                SessionId::claim(s.as_str(), &b).is_some(),
                s.origin() == Origin::Studio
            );
        }
        assert!(usable_by("studio-ff", "beta"));
    }
}
