//! Who is calling: the agent a request acts as (from its token and the `Skillbase-Agent`
//! header), the caller an MCP session is bound to, and the Skillbase session its calls record
//! into (a typed [`SessionId`] in the agent's own namespace).

use crate::auth::Principal;
use crate::state::AppState;
use axum::http::request::Parts;
use rmcp::model::ErrorData;
use skillbase_store::AgentName;
use skillbase_store::session_id::SessionId;
use std::sync::Mutex;

/// Names the agent an admin token (or `--dev`) acts as.
pub const AGENT_HEADER: &str = "skillbase-agent";
/// Names the Skillbase session `tools/call` records into.
pub const SESSION_HEADER: &str = "skillbase-session";
/// The stateful wire's session header.
pub(super) const MCP_SESSION_HEADER: &str = "mcp-session-id";

/// Who is calling: the agent, and the token (or mode) that acts as it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Caller {
    pub(super) agent: AgentName,
    /// `token-<id>`, `dev` or `stdio`.
    pub(super) who: String,
}

fn header_str<'a>(parts: &'a Parts, name: &str) -> Option<&'a str> {
    parts.headers.get(name).and_then(|v| v.to_str().ok())
}

/// What an HTTP request says about its caller: the principal, the agent it names, and the
/// token (or mode) acting.
pub(super) struct Identity<'a> {
    principal: &'a Principal,
    /// The `Skillbase-Agent` header.
    named: Option<&'a str>,
    /// `token-<id>` or `dev`.
    who: String,
}

impl<'a> Identity<'a> {
    /// The identity the authentication middleware left on the request.
    pub(super) fn of(parts: &'a Parts) -> Result<Identity<'a>, ErrorData> {
        let principal = parts
            .extensions
            .get::<Principal>()
            .ok_or_else(|| ErrorData::internal_error("the request was not authenticated", None))?;
        let named = match parts.headers.get(AGENT_HEADER) {
            None => None,
            Some(v) => Some(v.to_str().map_err(|_| {
                ErrorData::invalid_request("the Skillbase-Agent header is not text", None)
            })?),
        };
        let who = match principal {
            Principal::Agent { token, .. } | Principal::Admin { token: Some(token) } => {
                format!("token-{token}")
            }
            Principal::Admin { token: None } => "dev".to_owned(),
        };
        Ok(Identity {
            principal,
            named,
            who,
        })
    }

    /// The agent this request acts as: the token's, or for an admin the one named (else the
    /// server's default agent).
    pub(super) fn resolve(self, state: &AppState) -> Result<Caller, ErrorData> {
        let agent = match self.principal {
            Principal::Agent { agent, .. } => {
                if let Some(n) = self.named
                    && n != agent.as_str()
                {
                    return Err(ErrorData::invalid_request(
                        format!(
                            "this token is bound to agent '{agent}': drop the Skillbase-Agent header"
                        ),
                        None,
                    ));
                }
                agent.clone()
            }
            Principal::Admin { .. } => {
                let agent = match self.named {
                    Some(n) => AgentName::parse(n).map_err(|e| {
                        ErrorData::invalid_request(format!("Skillbase-Agent: {e}"), None)
                    })?,
                    None => state.options.default_agent.clone().ok_or_else(|| {
                        ErrorData::invalid_request(
                            "this token is not bound to an agent: name the agent with the Skillbase-Agent header (or start the server with --agent)",
                            None,
                        )
                    })?,
                };
                if state.store.agent_cached(&agent).is_none() {
                    return Err(ErrorData::invalid_request(
                        format!("no agent '{agent}'"),
                        None,
                    ));
                }
                agent
            }
        };
        Ok(Caller {
            agent,
            who: self.who,
        })
    }
}

/// The caller a stateful MCP session was opened by: a session stays with its token and agent.
#[derive(Default)]
pub(super) struct Binding(Mutex<Option<Caller>>);

impl Binding {
    /// The caller the session is bound to, if any yet.
    pub(super) fn get(&self) -> Option<Caller> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The caller of a request on this session: the one it was opened by (later requests need
    /// not repeat `Skillbase-Agent`), or, on its first request, the one the request names.
    pub(super) fn check(&self, parts: &Parts, state: &AppState) -> Result<Caller, ErrorData> {
        let id = Identity::of(parts)?;
        let mismatch = || {
            ErrorData::invalid_request(
                "this MCP session was opened with another token or for another agent; start a new session",
                None,
            )
        };
        if let Some(b) = self.get() {
            return if b.who == id.who && id.named.is_none_or(|n| n == b.agent.as_str()) {
                Ok(b)
            } else {
                Err(mismatch())
            };
        }
        let caller = id.resolve(state)?;
        let mut bound = self.0.lock().unwrap_or_else(|p| p.into_inner());
        match &*bound {
            Some(b) if *b != caller => Err(mismatch()),
            _ => {
                *bound = Some(caller.clone());
                Ok(caller)
            }
        }
    }
}

/// The Skillbase session an HTTP request's calls record into: the `Skillbase-Session` header,
/// else one per MCP session (stateful wire), else one per token and agent (stateless wire).
///
/// Derived ids live in the agent's own namespace, `mcp:<agent>:…`, which no other agent can
/// name (see `skillbase_store::session_id::usable_by`); the stateless one is keyed by a hash of
/// the token itself, so it cannot be predicted without the token.
pub(super) fn session_of(parts: Option<&Parts>, caller: &Caller) -> Result<SessionId, ErrorData> {
    if let Some(p) = parts
        && let Some(v) = p.headers.get(SESSION_HEADER)
    {
        let s = v.to_str().unwrap_or_default();
        if s.is_empty()
            || s.len() > 128
            || s.chars().any(|c| c.is_control() || c == '/' || c == '\\')
        {
            return Err(ErrorData::invalid_params(
                "Skillbase-Session: 1-128 characters, no slashes or control characters",
                None,
            ));
        }
        return SessionId::claim(s, &caller.agent).ok_or_else(|| {
            ErrorData::invalid_params(skillbase_store::error::SESSION_UNAVAILABLE, None)
        });
    }
    let agent = &caller.agent;
    if let Some(p) = parts
        && let Some(id) = header_str(p, MCP_SESSION_HEADER)
    {
        return Ok(SessionId::mcp_stateful(agent, id));
    }
    let bearer = parts
        .and_then(|p| header_str(p, "authorization"))
        .unwrap_or(caller.who.as_str());
    Ok(SessionId::mcp_stateless(agent, bearer))
}
