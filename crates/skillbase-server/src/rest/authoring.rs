//! Writes made with an agent-bound token go through the authoring tools themselves
//! (`skill_create`, `skill_modify`, `skill_revert`, `skill_remove`) by the dispatcher, so they get
//! exactly what a model's call gets: the agent's own scope, the author `agent:<name>/inline`,
//! the `skills` grant, capabilities limited to the agent's grants, the approval policy and the
//! driving-skill gate, each recorded as a `tool_called` event.

use super::extract::{Precondition, check_precondition, hidden, stale, unprocessable};
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use axum::http::{HeaderMap, StatusCode};
use serde_json::{Map, Value, json};
use skillbase_format::{SkillMd, SkillMeta};
use skillbase_runtime::Failure;
use skillbase_runtime::{AUTHORING_CLASS, CallMode, CallOutcome, Rule};
use skillbase_store::{AgentName, Scope};

/// The header naming the session an agent's REST write belongs to (its calls are then gated by
/// the skill driving that session, as a model's would be).
pub const SESSION_HEADER: &str = "skillbase-session";

/// Frontmatter keys an agent may write: the authoring tools' fields.
/// The frontmatter keys an agent token may write: the authoring tools' draft fields (all but
/// the body, which is not a frontmatter key), from the draft's one list.
fn tool_keys() -> Vec<&'static str> {
    skillbase_format::DraftField::ALL
        .iter()
        .filter(|f| **f != skillbase_format::DraftField::Body)
        .map(|f| f.key())
        .collect()
}

/// One agent's authoring calls.
pub struct Authoring<'a> {
    st: &'a AppState,
    pub agent: AgentName,
    session: String,
}

impl<'a> Authoring<'a> {
    /// The agent's authoring context: the session named by `Skillbase-Session` (it must be the
    /// agent's), else `rest:<agent>`.
    pub async fn new(
        st: &'a AppState,
        agent: &AgentName,
        headers: &HeaderMap,
    ) -> ApiResult<Authoring<'a>> {
        let session = match super::extract::session_header(headers)? {
            Some(id) => match st.store.session(agent, id).await? {
                Some(_) => id.to_owned(),
                _ => {
                    let shown: String = id.chars().take(128).collect();
                    return Err(ApiError::not_found(format!("no session '{shown}'")));
                }
            },
            None => skillbase_store::session_id::SessionId::rest(agent).into_string(),
        };
        Ok(Authoring {
            st,
            agent: agent.clone(),
            session,
        })
    }

    /// Dispatch an authoring tool and turn its outcome into a result or an HTTP error.
    pub async fn call(&self, tool: &str, args: Value, name: &str) -> ApiResult<Value> {
        let outcome = self
            .st
            .engine
            .call(&self.agent, &self.session, tool, args, CallMode::Wait)
            .await?;
        self.st.metrics.call(&outcome);
        match outcome {
            CallOutcome::Done { result, .. } => Ok(result),
            CallOutcome::Refused { rule, message, .. } => Err(refusal(&self.agent, rule, message)),
            CallOutcome::Failed {
                message, failure, ..
            } => Err(self.failure(name, failure, message)),
            CallOutcome::Started { call_id } | CallOutcome::Authorized { call_id, .. } => {
                Err(ApiError::internal(format!(
                    "authoring tool {tool} was started apart ({call_id}); it should run at once"
                )))
            }
        }
    }

    /// The latest revision of the agent's own record (0: none).
    pub fn own_head(&self, name: &str) -> i64 {
        self.st
            .store
            .index()
            .get(&Scope::Agent(self.agent.clone()), name)
            .map_or(0, |e| e.head_rev)
    }

    /// The HTTP answer to an authoring tool's failure, by the kind the tool gave it.
    fn failure(&self, name: &str, kind: Option<Failure>, message: String) -> ApiError {
        match kind {
            Some(Failure::Stale) => stale(name, self.own_head(name)),
            // Missing and hidden answer alike: a token learns nothing about other agents.
            Some(Failure::NotFound) => hidden(name),
            Some(Failure::NoRevision) => ApiError::not_found(message),
            Some(Failure::Conflict) => ApiError::conflict(message),
            Some(Failure::Internal | Failure::Upstream) => ApiError::internal(message),
            Some(Failure::Invalid) | None => unprocessable("invalid-skill", message),
        }
    }
}

fn refusal(agent: &AgentName, rule: Rule, message: String) -> ApiError {
    match rule {
        Rule::NotOffered | Rule::ClassNotGranted => ApiError::new(
            StatusCode::FORBIDDEN,
            "not-granted",
            format!(
                "agent '{agent}' is not granted the `{AUTHORING_CLASS}` tool class, so its token cannot write skills; an admin can grant it (agents.{agent}.grants.tools)"
            ),
        ),
        Rule::InvalidArguments => unprocessable("invalid-skill", message),
        Rule::CapabilitiesNotGranted => {
            ApiError::new(StatusCode::FORBIDDEN, "capability-not-granted", message)
        }
        Rule::SkillCannotModify | Rule::DrivingSkillInactive => {
            ApiError::new(StatusCode::CONFLICT, "skill-driving", message)
        }
        _ => ApiError::new(StatusCode::FORBIDDEN, "refused", message),
    }
}

/// The authoring tool's arguments for a SKILL.md sent by an agent: the frontmatter fields it
/// gives (fields not given keep their current values, as with `skill_modify`) and the body.
pub fn tool_args(name: &str, text: &str, message: Option<&str>) -> ApiResult<Map<String, Value>> {
    let bundle = skillbase_format::Bundle::single(text.as_bytes().to_vec())
        .map_err(skillbase_store::StoreError::from)?;
    let (declared, _) = skillbase_store::Store::check_bundle(&bundle)?;
    if declared != name {
        return Err(unprocessable(
            "name-mismatch",
            format!("the SKILL.md is named '{declared}' but the URL names '{name}'"),
        ));
    }
    let md = SkillMd::parse(text, &Default::default())
        .map_err(|e| unprocessable("invalid-skill", e.to_string()))?;
    let meta = SkillMeta::from_md(&md)
        .ok_or_else(|| unprocessable("invalid-skill", "missing name or description"))?;
    let writable = tool_keys();
    let extra: Vec<&str> = md
        .frontmatter
        .keys()
        .filter(|k| !writable.contains(k))
        .collect();
    if !extra.is_empty() {
        return Err(unprocessable(
            "field-not-writable",
            format!(
                "an agent token writes skills through skill_create and skill_modify, which take {}; `{}` needs an admin token",
                writable.join(", "),
                extra.join("`, `")
            ),
        ));
    }
    let has = |k: &str| md.frontmatter.get(k).is_some();
    let mut args = Map::new();
    args.insert("name".into(), json!(name));
    args.insert("description".into(), json!(meta.description));
    args.insert("body".into(), json!(md.body()));
    if has("triggers") {
        args.insert("triggers".into(), json!(meta.triggers));
    }
    if has("companions") {
        args.insert(
            "companions".into(),
            json!(
                meta.companions
                    .iter()
                    .map(|c| c.as_str())
                    .collect::<Vec<_>>()
            ),
        );
    }
    if let Some(i) = &meta.inputs {
        args.insert("inputs".into(), i.clone());
    }
    if let Some(v) = &meta.version {
        args.insert("version".into(), json!(v));
    }
    if has("capabilities") {
        args.insert(
            "capabilities".into(),
            json!({
                "tools": meta.capabilities.tools,
                "vault": meta.capabilities.vault,
                "hosts": meta.capabilities.hosts,
            }),
        );
    }
    if has("cost") {
        args.insert("cost".into(), json!(meta.cost.as_str()));
    }
    if has("when_to_use") {
        args.insert("when_to_use".into(), json!(meta.when_to_use));
    }
    if has("when_not_to_use") {
        args.insert("when_not_to_use".into(), json!(meta.when_not_to_use));
    }
    if let Some(m) = message {
        args.insert("message".into(), json!(m));
    }
    Ok(args)
}

/// Create or modify a skill as the agent: `skill_create` when the agent resolves no skill of
/// that name, else `skill_modify`. The precondition is checked against what the agent sees and
/// passed on as `expect_rev`, so a concurrent write still fails at the store.
pub async fn put(
    a: &Authoring<'_>,
    name: &str,
    mut args: Map<String, Value>,
    pre: Precondition,
) -> ApiResult<Value> {
    let index = a.st.store.index();
    let resolved = index.resolve(&a.agent, name).cloned();
    check_precondition(name, pre, resolved.as_ref().map_or(0, |e| e.head_rev))?;
    let tool = if resolved.is_some() {
        if matches!(pre, Precondition::Rev(_) | Precondition::Exists) {
            args.insert("expect_rev".into(), json!(a.own_head(name)));
        }
        "skill_modify"
    } else {
        "skill_create"
    };
    a.call(tool, Value::Object(args), name).await
}
