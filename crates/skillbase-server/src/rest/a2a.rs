//! A2A agent cards (issue 20): an agent's skills as an A2A v1.0 `AgentCard`, so A2A callers can
//! discover them. `GET /v1/agents/{name}/agent-card.json` for any agent the caller may see, and
//! `GET /.well-known/agent-card.json` for the server's default agent. Authenticated like every
//! route: an agent token sees only its own agent's card; anything else answers as a missing
//! agent does.
//!
//! Skillbase serves the card for discovery; it does not speak A2A's task protocol. The one
//! interface listed is its MCP endpoint (streamable HTTP), under the binding name `MCP`, which
//! an A2A client that speaks only JSONRPC, GRPC or HTTP+JSON knows it cannot call.

use super::extract::{Caller, P};
use crate::error::{ApiError, ApiResult, Problem};
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::Value;
use skillbase_store::{Agent, AgentName, SkillEntry};
use std::sync::Arc;
use utoipa::ToSchema;

/// The A2A protocol version the card follows.
pub const A2A_PROTOCOL_VERSION: &str = "1.0";

/// Most tags one skill lists (its `metadata.tags` and triggers, deduplicated).
const MAX_TAGS: usize = 64;
/// Most examples one skill lists.
const MAX_EXAMPLES: usize = 16;

/// An A2A v1.0 `AgentCard` (the fields Skillbase fills).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentCard {
    /// The agent's name.
    #[schema(min_length = 1)]
    pub name: String,
    /// What the agent is for (its configured description, or a sentence naming it).
    #[schema(min_length = 1)]
    pub description: String,
    /// Where to reach the agent; the first entry is preferred. Skillbase lists its MCP
    /// endpoint (binding `MCP`; it does not serve A2A's JSONRPC, GRPC or HTTP+JSON bindings).
    #[schema(min_items = 1)]
    pub supported_interfaces: Vec<AgentInterface>,
    /// The agent's configuration version (bumped on every change).
    #[schema(min_length = 1)]
    pub version: String,
    /// What the interfaces support beyond requests and answers: nothing A2A defines.
    pub capabilities: AgentCapabilities,
    /// How to authenticate: a bearer token (absent in the local development mode).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(required = false)]
    pub security_schemes: Option<std::collections::BTreeMap<String, SecurityScheme>>,
    /// Which schemes a request must satisfy (absent in the local development mode).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(required = false)]
    pub security_requirements: Option<Vec<SecurityRequirement>>,
    /// Media types the agent reads: text.
    pub default_input_modes: Vec<String>,
    /// Media types the agent writes: text.
    pub default_output_modes: Vec<String>,
    /// The skills the agent may use, by name (what its token would see).
    pub skills: Vec<AgentSkill>,
}

/// An A2A `AgentInterface`: a URL, its protocol binding and the A2A version.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentInterface {
    /// Absolute URL of the endpoint.
    #[schema(min_length = 1)]
    pub url: String,
    /// `MCP`: the Model Context Protocol over streamable HTTP.
    #[schema(min_length = 1)]
    pub protocol_binding: String,
    /// The A2A version of the card: `1.0`.
    #[schema(min_length = 1)]
    pub protocol_version: String,
}

/// An A2A `AgentCapabilities`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentCapabilities {
    /// A2A streaming (`SendStreamingMessage`): not served.
    pub streaming: bool,
    /// A2A push notifications: not served.
    pub push_notifications: bool,
}

/// An A2A `SecurityScheme` (only the HTTP authentication form is used).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SecurityScheme {
    /// HTTP authentication: `Bearer`.
    pub http_auth_security_scheme: HttpAuthSecurityScheme,
}

/// An A2A `HTTPAuthSecurityScheme`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct HttpAuthSecurityScheme {
    /// What the token is.
    pub description: String,
    /// `Bearer`.
    pub scheme: String,
}

/// An A2A `SecurityRequirement`: scheme names and their scopes.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SecurityRequirement {
    /// `bearer`, with no scopes.
    pub schemes: std::collections::BTreeMap<String, StringList>,
}

/// An A2A `StringList`.
#[derive(Debug, Serialize, ToSchema)]
pub struct StringList {
    /// The scopes (none).
    pub list: Vec<String>,
}

/// An A2A v1.0 `AgentSkill`: one skill the agent may use.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentSkill {
    /// The skill's name (unique among the agent's skills).
    #[schema(min_length = 1)]
    pub id: String,
    /// The skill's name.
    #[schema(min_length = 1)]
    pub name: String,
    /// The skill's description.
    #[schema(min_length = 1)]
    pub description: String,
    /// Keywords: its `metadata.tags` (a list, or one comma-separated string), then its
    /// triggers, each once (case ignored), at most 64.
    pub tags: Vec<String>,
    /// Requests the skill is for, in the user's words: its `when_to_use` entries, then
    /// `metadata.examples`; absent when it declares none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[schema(required = false, min_items = 1)]
    pub examples: Vec<String>,
}

/// The card of the agent a path names.
#[utoipa::path(get, path = "/v1/agents/{name}/agent-card.json", tag = "agents",
    params(("name" = String, Path, description = "The agent's name", pattern = r"^[a-z0-9][a-z0-9_-]{0,63}$")),
    responses((status = 200, description = "The agent's A2A v1.0 agent card: its skills as AgentSkill objects", body = AgentCard),
        (status = 404, description = "No such agent, or one this token may not see (answered alike)", body = Problem, content_type = "application/problem+json")))]
pub async fn card(
    State(st): State<Arc<AppState>>,
    Caller(p): Caller,
    headers: HeaderMap,
    P(name): P<String>,
) -> ApiResult<Response> {
    let name = super::agents::visible_agent(&p, &name)?;
    let agent = st
        .store
        .agent(&name)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("no agent '{name}'")))?;
    Ok(answer(build(&st, &agent, &headers)))
}

/// The card of this server's default agent (the one MCP requests act as for an admin token).
#[utoipa::path(get, path = "/.well-known/agent-card.json", tag = "agents",
    responses((status = 200, description = "The default agent's A2A v1.0 agent card", body = AgentCard),
        (status = 404, description = "This server has no default agent, or this token may not see it (answered alike); ask for /v1/agents/{name}/agent-card.json", body = Problem, content_type = "application/problem+json")))]
pub async fn well_known(
    State(st): State<Arc<AppState>>,
    Caller(p): Caller,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let missing = || {
        ApiError::not_found(
            "this server has no default agent; ask for /v1/agents/{name}/agent-card.json",
        )
    };
    let name: &AgentName = st.options.default_agent.as_ref().ok_or_else(missing)?;
    p.require_agent(name).map_err(|_| missing())?;
    let agent = st.store.agent(name).await?.ok_or_else(missing)?;
    Ok(answer(build(&st, &agent, &headers)))
}

fn answer(card: AgentCard) -> Response {
    // What a token may see is not for shared caches.
    ([(header::CACHE_CONTROL, "private, no-store")], Json(card)).into_response()
}

/// The card: the agent's visible skills (scope resolution, active, allowlist; less those its
/// policy withholds for unmet `requires:` and those only the user may invoke), in name order.
pub fn build(st: &AppState, agent: &Agent, headers: &HeaderMap) -> AgentCard {
    let index = st.store.index();
    let (env, _) = st.engine.environment();
    let skills = skillbase_runtime::offered_in(agent, &index, &env)
        .iter()
        .map(|e| skill(e))
        .collect();
    let description = match agent.config.description.trim() {
        "" => format!("Skillbase agent '{}'", agent.name),
        d => d.to_owned(),
    };
    let (schemes, requirements) = if st.options.dev {
        (None, None)
    } else {
        (
            Some(
                [(
                    "bearer".to_owned(),
                    SecurityScheme {
                        http_auth_security_scheme: HttpAuthSecurityScheme {
                            description:
                                "A Skillbase token: an admin token, or one bound to this agent"
                                    .into(),
                            scheme: "Bearer".into(),
                        },
                    },
                )]
                .into(),
            ),
            Some(vec![SecurityRequirement {
                schemes: [("bearer".to_owned(), StringList { list: Vec::new() })].into(),
            }]),
        )
    };
    AgentCard {
        name: agent.name.to_string(),
        description,
        supported_interfaces: vec![AgentInterface {
            url: format!("{}/mcp", base_url(headers)),
            protocol_binding: "MCP".into(),
            protocol_version: A2A_PROTOCOL_VERSION.into(),
        }],
        version: agent.version.to_string(),
        capabilities: AgentCapabilities {
            streaming: false,
            push_notifications: false,
        },
        security_schemes: schemes,
        security_requirements: requirements,
        default_input_modes: vec!["text/plain".into()],
        default_output_modes: vec!["text/plain".into()],
        skills,
    }
}

/// One skill as an `AgentSkill`.
pub fn skill(e: &SkillEntry) -> AgentSkill {
    let metadata = e.frontmatter.get("metadata");
    let mut tags: Vec<String> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for t in listed(metadata.and_then(|m| m.get("tags")), true)
        .into_iter()
        .chain(e.meta.triggers.iter().cloned())
    {
        let t = t.trim().to_owned();
        if tags.len() < MAX_TAGS && !t.is_empty() && seen.insert(t.to_lowercase()) {
            tags.push(t);
        }
    }
    let mut examples: Vec<String> = Vec::new();
    for x in e
        .meta
        .when_to_use
        .iter()
        .cloned()
        .chain(listed(metadata.and_then(|m| m.get("examples")), false))
    {
        let x = x.trim().to_owned();
        if examples.len() < MAX_EXAMPLES && !x.is_empty() && !examples.contains(&x) {
            examples.push(x);
        }
    }
    AgentSkill {
        id: e.name.clone(),
        name: e.name.clone(),
        description: e.meta.description.clone(),
        tags,
        examples,
    }
}

/// A frontmatter value as strings: a list of strings, or one string (split on commas when
/// `split`).
fn listed(v: Option<&Value>, split: bool) -> Vec<String> {
    match v {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        Some(Value::String(s)) if split => s.split(',').map(str::to_owned).collect(),
        Some(Value::String(s)) => vec![s.clone()],
        _ => Vec::new(),
    }
}

/// `http(s)://host[:port]` as the caller reached the server: its `Host` header (when it is a
/// plain host and port), `https` when a proxy says so in `X-Forwarded-Proto`.
fn base_url(headers: &HeaderMap) -> String {
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .filter(|h| {
            !h.is_empty()
                && h.len() <= 255
                && h.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b".-:[]".contains(&b))
        })
        .unwrap_or("localhost");
    let https = headers
        .get("x-forwarded-proto")
        .and_then(|h| h.to_str().ok())
        .is_some_and(|p| p.eq_ignore_ascii_case("https"));
    format!("{}://{host}", if https { "https" } else { "http" })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_base_url_takes_only_a_plain_host() {
        let mut h = HeaderMap::new();
        assert_eq!(base_url(&h), "http://localhost");
        h.insert(header::HOST, "127.0.0.1:8080".parse().unwrap());
        assert_eq!(base_url(&h), "http://127.0.0.1:8080");
        h.insert("x-forwarded-proto", "HTTPS".parse().unwrap());
        assert_eq!(base_url(&h), "https://127.0.0.1:8080");
        for bad in ["evil.com/path", "a b", "x@y", "\"q\""] {
            h.insert(header::HOST, bad.parse().unwrap());
            assert_eq!(base_url(&h), "https://localhost", "{bad}");
        }
    }

    #[test]
    fn tags_and_examples_are_listed_once() {
        let v = serde_json::json!(["a", "b", 3]);
        assert_eq!(listed(Some(&v), true), ["a", "b"]);
        let s = serde_json::json!("x, y");
        assert_eq!(listed(Some(&s), true), ["x", " y"]);
        assert_eq!(listed(Some(&s), false), ["x, y"]);
        assert!(listed(None, true).is_empty());
        assert!(listed(Some(&serde_json::json!({"a": 1})), true).is_empty());
    }
}
