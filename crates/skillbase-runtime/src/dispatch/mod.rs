//! Dispatch: every call the model makes, checked against the agent's current grants.
//!
//! Stages, in order, each refusal typed and recorded as a `call_refused` event with its rule:
//! name in the offered set → arguments valid against the schema (compiled once) → capability
//! gate → handler lookup → run with the cost class's timeout and bounded concurrency → result
//! capped in tokens → redaction → result and a `tool_called` event.
//!
//! **The driving skill.** A skill drives a session from its activation by `load_skill` (or its
//! `skill_<name>` entry) until it finishes (`skill_finish`, [`Dispatcher::finish_run`] from the
//! harness, or two failed calls) or another skill is activated (which supersedes its run). A
//! body injected by a trigger is guidance for that turn only; it drives once it is loaded. While a skill drives, each tool
//! dispatch must name a class both granted to the agent and declared in the skill's active
//! revision's `capabilities.tools`; each vault lookup and destination must likewise be granted
//! and declared; and no authoring tool runs at all. Grants are read at every call, so revoking
//! one shrinks every skill at once.

//!
//! The folder holds the pipeline and its nouns: `pipeline` (the stages, each a function that
//! admits or refuses; the gate is the envelope's own check), [`outcome`] (outcomes, caps),
//! [`offer`] (the offered set), [`runs`] (the driving run, activation, and the one way a run
//! ends), [`builtins`] (the built-ins' handlers; their table is the leaf `builtin`),
//! [`authoring`] (the built-ins that write skills, through one `SkillDraft`) and `recount`
//! (token counts of answers given again). Refusal rules are the leaf `rule`.

mod authoring;
pub mod builtins;
mod offer;
mod outcome;
mod pipeline;
mod recount;
mod runs;

pub use crate::builtin::{AUTHORING_CLASS, Builtin, MAX_NOTES_BYTES};
pub use crate::rule::Rule;
pub use offer::{EntryKind, OfferedEntry, OfferedSet};
pub use outcome::{CallMode, CallOutcome};

use crate::event::{CallRefused, CallStarted, Event, ToolCalled, UserMessage};
use crate::events::EventSink;
use crate::redact::Redactor;
use crate::runtime::{Runtime, RuntimeError};
use crate::tool::{CallContext, RegisteredTool, Registry, ToolError, ToolTable};
use crate::vault::Vault;
use offer::{OfferedCache, Target};
use outcome::{call_id_text, from_tool_result};
use skillbase_store::AgentName;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::{Semaphore, watch};

/// The call pipeline (the stages above) for every agent of one runtime: it owns the calls in
/// flight, detached calls' results, the offered-set cache and the event writer.
pub(crate) struct Dispatcher {
    /// The runtime whose views and session cache every turn, load and call goes through.
    pub runtime: Arc<Runtime>,
    registry: Arc<ToolTable>,
    vault: Option<Arc<Vault>>,
    /// Per agent: the limit its semaphore was made for, and the semaphore.
    inflight: Mutex<HashMap<AgentName, (u32, Arc<Semaphore>)>>,
    results: Mutex<HashMap<String, watch::Receiver<Option<CallOutcome>>>>,
    next_id: std::sync::atomic::AtomicU64,
    pub(crate) events: EventSink,
    offered_cache: Mutex<OfferedCache>,
    /// Harness-run calls authorized and not yet answered: call id → who may answer, and where.
    harness: Arc<Mutex<HashMap<String, PendingHarness>>>,
    /// OpenTelemetry export, when on: a span per turn and per call.
    telemetry: Option<crate::telemetry::Telemetry>,
    /// Token counts of activation answers given before (a repeated `load_skill`).
    recount: recount::Recount,
}

/// A harness-run call waiting for its result.
struct PendingHarness {
    agent: AgentName,
    session: String,
    tx: tokio::sync::oneshot::Sender<Result<serde_json::Value, ToolError>>,
}

/// Why a posted harness result was not taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PostResultError {
    /// No harness-run call of this id awaits a result from this agent and session: it was
    /// never authorized, its result was already posted, or its time ran out.
    #[error(
        "no harness-run call with this id awaits a result in this session (never authorized, already answered, or past its time limit)"
    )]
    NotAwaiting,
}

/// Detached results kept in memory; beyond this, finished ones nobody collected are dropped
/// (they stay readable as `call_finished` events).
const MAX_PENDING_RESULTS: usize = 1_024;

/// The longest user message recorded for learning, in bytes (the rest is cut).
pub const MAX_RECORDED_MESSAGE: usize = 8 * 1024;

impl Dispatcher {
    /// A dispatcher over a runtime. Create it inside a tokio runtime: it starts the event writer.
    pub fn new(
        runtime: Arc<Runtime>,
        registry: Registry,
        vault: Option<Arc<Vault>>,
        telemetry: Option<crate::telemetry::Telemetry>,
    ) -> Dispatcher {
        let registry = Arc::new(ToolTable::new(registry));
        runtime.attach_tools(registry.clone());
        Dispatcher {
            events: EventSink::start(runtime.store.clone()),
            offered_cache: Mutex::new(HashMap::new()),
            runtime,
            registry,
            vault,
            harness: Arc::new(Mutex::new(HashMap::new())),
            inflight: Mutex::new(HashMap::new()),
            results: Mutex::new(HashMap::new()),
            next_id: std::sync::atomic::AtomicU64::new(1),
            telemetry,
            recount: recount::Recount::default(),
        }
    }

    /// The tools registered by the operator and the harness, and those of upstream MCP
    /// servers, as they are now (the built-ins are [`Builtin::ALL`]).
    pub fn registry(&self) -> Arc<Registry> {
        self.registry.current()
    }

    /// The live registry: the gateway replaces an upstream server's tools through it, and a
    /// server listens to it for `tools/list_changed`.
    pub fn tools(&self) -> &Arc<ToolTable> {
        &self.registry
    }

    /// A whole turn as a harness shows it to the model: [`Runtime::turn`] (eager prefix,
    /// triggered bodies, catalog, `load_skill`/`search_skills`, the report), then the rest of the
    /// agent's offered set (granted tools and skill entries, within the turn's cadence) added to
    /// the tools and counted, and the withheld tools listed in the report. The CLI, REST and any
    /// embedder get the same turn from here.
    pub async fn turn(
        &self,
        agent: &AgentName,
        session: &str,
        message: &str,
        opts: &skillbase_route::turn::TurnOptions,
    ) -> Result<skillbase_route::turn::TurnContext, RuntimeError> {
        let started = crate::telemetry::Started::now();
        let (mut ctx, view) = self
            .runtime
            .turn_unrecorded(agent, session, message, opts)
            .await?;
        let offered = self.offered(agent)?;
        for (e, (def, t)) in offered.with_defs() {
            if ctx.tools.iter().any(|t| t.name == e.wire_name)
                || matches!(
                    e.target,
                    Target::Builtin(Builtin::LoadSkill | Builtin::SearchSkills)
                )
            {
                continue;
            }
            if let Some(max) = opts.max_cost
                && e.cost > max
            {
                continue;
            }
            ctx.report.tokens.tools += t;
            ctx.report.tokens.total += t;
            ctx.tools.push(def.clone());
        }
        ctx.report.withheld_tools = offered
            .withheld
            .iter()
            .cloned()
            .map(|name| skillbase_route::turn::Omission {
                name: name.into(),
                reason: "tool class not granted to this agent".into(),
                rank: None,
            })
            .collect();
        // The turn's events, made once from what the turn answered (its tools counted, its
        // withheld tools and warnings listed).
        let events = crate::runtime::turn_events(&view, agent, session, &ctx);
        // Written behind, as calls are: a turn answers even while the events table refuses
        // writes (the writer retries, then stores what it can one by one).
        for e in events {
            self.events.record(e).await;
        }
        if self.agent(agent)?.config.policies.record_conversations {
            self.record_user_message(agent, session, message, "turn")
                .await;
        }
        if let Some(t) = &self.telemetry {
            let session = crate::telemetry::redacted(&self.redactor(), session);
            t.turn(agent.as_str(), &session, &ctx.report, started);
        }
        Ok(ctx)
    }

    /// The upstream MCP server whose tool `wire_name` is, for this agent.
    fn upstream_of(&self, agent: &AgentName, wire_name: &str) -> Option<String> {
        let offered = self.offered(agent).ok()?;
        match &offered.get(wire_name)?.target {
            Target::Tool(t) => match &t.source {
                crate::tool::ToolSource::Mcp { server, .. } => Some(server.clone()),
                _ => None,
            },
            _ => None,
        }
    }

    /// Wait until every event recorded so far is stored.
    pub async fn flush(&self) {
        self.events.flush().await;
    }

    pub(crate) fn redactor(&self) -> Arc<Redactor> {
        self.vault
            .as_ref()
            .map(|v| v.redactor())
            .unwrap_or_else(Redactor::empty)
    }

    fn new_call_id(&self) -> String {
        let n = self
            .next_id
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or(0);
        call_id_text(ms, n)
    }

    /// Record a user's message of `session` (a turn's, or a transcript's): redacted, cut at
    /// [`MAX_RECORDED_MESSAGE`] bytes, as a `user_message` event.
    pub(crate) async fn record_user_message(
        &self,
        agent: &AgentName,
        session: &str,
        message: &str,
        source: &str,
    ) {
        let redacted = self.redactor().redact(message).into_owned();
        let mut end = redacted.len().min(MAX_RECORDED_MESSAGE);
        while !redacted.is_char_boundary(end) {
            end -= 1;
        }
        let message = Event::UserMessage(UserMessage {
            message: redacted[..end].to_owned(),
            source: source.to_owned(),
            cut: end < redacted.len(),
        });
        self.events
            .record(message.to_new(agent.as_str(), session))
            .await;
    }

    /// Dispatch one call by its wire name.
    pub async fn call(
        &self,
        agent: &AgentName,
        session: &str,
        wire_name: &str,
        args: serde_json::Value,
        mode: CallMode,
    ) -> Result<CallOutcome, RuntimeError> {
        let call_id = self.new_call_id();
        let started = crate::telemetry::Started::now();
        let state = self.session(agent, session).await?;
        let redactor = self.redactor();
        let session_attr = || crate::telemetry::redacted(&redactor, session);
        let trace = self
            .telemetry
            .as_ref()
            .map(|t| t.call_scope(agent.as_str(), &session_attr()));
        // The skill driving when the call starts, for its span (read only when there is one).
        let driver = self.telemetry.as_ref().and_then(|_| runs::run_of(&state));
        let outcome = match self
            .call_inner(&pipeline::Call {
                agent,
                session,
                state: &state,
                wire_name,
                args: &args,
                mode,
                call_id: &call_id,
                trace: trace.as_ref(),
            })
            .await?
        {
            // A refusal may quote the call back (a wire name, a value the schema rejected).
            CallOutcome::Refused {
                call_id,
                rule,
                message,
            } => CallOutcome::Refused {
                call_id,
                rule,
                message: redactor.redact(&message).into_owned(),
            },
            other => other,
        };
        // Record, with every secret scrubbed from the arguments and the outcome.
        if let (Some(t), Some(scope)) = (&self.telemetry, &trace) {
            let session = session_attr();
            let server = self.upstream_of(agent, wire_name);
            let (status, error) = outcome_kind(&outcome);
            let info = crate::telemetry::CallInfo {
                agent: agent.as_str(),
                session: &session,
                tool: wire_name,
                call_id: &call_id,
                outcome: status,
                error,
                skill: driver.as_ref().map(|r| (r.skill.as_str(), r.id)),
                server: server.as_deref(),
            };
            t.call(scope, &info, started);
        }
        let event = call_event(
            &outcome,
            call_id,
            wire_name,
            redactor.redact_json_owned(args),
        );
        let mut new = event.to_new(agent.as_str(), session);
        new.data = redactor.redact_json_owned(new.data);
        self.events.record(new).await;
        Ok(outcome)
    }

    /// The result of a harness-run call, posted by the harness (`Ok`: the tool's value; `Err`:
    /// its failure message): redacted, capped to the agent's `max_result_tokens`, recorded as
    /// the call's `call_finished` event, counted in the driving skill's run like any call, and
    /// returned as the call's outcome. Only the agent and session the call was authorized for
    /// may post it, once, within the tool's cost-class limit.
    pub async fn post_result(
        &self,
        agent: &AgentName,
        session: &str,
        call_id: &str,
        result: Result<serde_json::Value, String>,
    ) -> Result<CallOutcome, PostResultError> {
        let pending = {
            let mut m = self.harness.lock().unwrap_or_else(|p| p.into_inner());
            match m.get(call_id) {
                Some(p) if p.agent == *agent && p.session == session => m.remove(call_id),
                _ => None,
            }
        };
        let Some(p) = pending else {
            return Err(PostResultError::NotAwaiting);
        };
        if p.tx.send(result.map_err(ToolError::new)).is_err() {
            return Err(PostResultError::NotAwaiting);
        }
        // The call's task redacts, caps and records it; its outcome arrives here.
        self.wait(call_id, std::time::Duration::from_secs(30))
            .await
            .ok_or(PostResultError::NotAwaiting)
    }

    /// Wait for a detached call's outcome (up to `timeout`).
    pub async fn wait(&self, call_id: &str, timeout: std::time::Duration) -> Option<CallOutcome> {
        let mut rx = self
            .results
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(call_id)?
            .clone();
        let got = tokio::time::timeout(timeout, async {
            loop {
                if let Some(o) = rx.borrow().clone() {
                    return Some(o);
                }
                if rx.changed().await.is_err() {
                    return rx.borrow().clone();
                }
            }
        })
        .await
        .ok()
        .flatten();
        if got.is_some() {
            self.results
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(call_id);
        }
        got
    }
}

async fn run_tool(
    handler: Arc<dyn crate::tool::ToolHandler>,
    tool: Arc<RegisteredTool>,
    ctx: CallContext,
    args: serde_json::Value,
    redactor: Arc<Redactor>,
    max_tokens: u32,
    call_id: String,
) -> CallOutcome {
    let refusals = ctx.refusals.clone();
    let deadline = ctx.deadline;
    let res = tokio::time::timeout(deadline, handler.call(ctx, args)).await;
    // A refusal raised inside the tool (a vault entry or destination outside the envelope)
    // that stopped it is a refusal, as the gate's are: one outcome for one kind of event.
    let inner_rule = refusals.lock().ok().and_then(|r| r.first().map(|r| r.rule));
    match res {
        Err(_) => CallOutcome::Failed {
            call_id,
            message: format!(
                "'{}' exceeded its {} s limit ({} class) and was cancelled",
                tool.decl.name,
                deadline.as_secs(),
                tool.decl.cost
            ),
            rule: Some(Rule::Timeout),
            failure: None,
        },
        Ok(Err(mut e)) if e.rule.is_none() => {
            e.rule = inner_rule;
            from_tool_result(&call_id, Err(e), &redactor, max_tokens)
        }
        Ok(res) => from_tool_result(&call_id, res, &redactor, max_tokens),
    }
}

/// A harness-run call: wait for the harness's result until the tool's limit.
async fn harness_result(
    rx: tokio::sync::oneshot::Receiver<Result<serde_json::Value, ToolError>>,
    pending: Arc<Mutex<HashMap<String, PendingHarness>>>,
    tool: Arc<RegisteredTool>,
    deadline: std::time::Duration,
    redactor: Arc<Redactor>,
    max_tokens: u32,
    call_id: String,
) -> CallOutcome {
    match tokio::time::timeout(deadline, rx).await {
        Ok(Ok(res)) => from_tool_result(&call_id, res, &redactor, max_tokens),
        Ok(Err(_)) => CallOutcome::Failed {
            call_id,
            message: format!(
                "'{}': the call was abandoned before its result",
                tool.decl.name
            ),
            rule: None,
            failure: None,
        },
        Err(_) => {
            pending
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&call_id);
            CallOutcome::Failed {
                message: format!(
                    "the harness posted no result for '{}' within its {} s limit ({} class)",
                    tool.decl.name,
                    deadline.as_secs(),
                    tool.decl.cost
                ),
                call_id,
                rule: Some(Rule::Timeout),
                failure: None,
            }
        }
    }
}

/// A call's event as it was answered: `call_refused`, `call_started` (a detached call, or one
/// authorized for the harness) or `tool_called`.
fn call_event(
    outcome: &CallOutcome,
    call_id: String,
    wire_name: &str,
    arguments: serde_json::Value,
) -> Event {
    let tool = wire_name.to_owned();
    match outcome {
        CallOutcome::Refused { rule, message, .. } => Event::CallRefused(CallRefused {
            call_id,
            tool,
            rule: rule.as_str().into(),
            message: message.clone(),
            arguments,
        }),
        CallOutcome::Started { .. } | CallOutcome::Authorized { .. } => {
            Event::CallStarted(CallStarted {
                call_id,
                tool,
                arguments,
                runs: matches!(outcome, CallOutcome::Authorized { .. }).then(|| "harness".into()),
            })
        }
        CallOutcome::Done {
            tokens, truncated, ..
        } => Event::ToolCalled(ToolCalled {
            call_id,
            tool,
            arguments,
            ok: true,
            tokens: Some(*tokens),
            truncated: Some(*truncated),
            ..ToolCalled::default()
        }),
        CallOutcome::Failed { message, rule, .. } => Event::ToolCalled(ToolCalled {
            call_id,
            tool,
            arguments,
            ok: false,
            error: Some(message.clone()),
            rule: Some(rule.map(|r| r.as_str().to_owned())),
            ..ToolCalled::default()
        }),
    }
}

/// An outcome's status and, for a refusal or a failure, its kind (the span's `error.type`):
/// the rule or the failure's kind, never the message.
fn outcome_kind(o: &CallOutcome) -> (&'static str, Option<&'static str>) {
    match o {
        CallOutcome::Done { .. } => ("done", None),
        CallOutcome::Started { .. } => ("started", None),
        CallOutcome::Authorized { .. } => ("authorized", None),
        CallOutcome::Refused { rule, .. } => ("refused", Some(rule.as_str())),
        CallOutcome::Failed { rule, failure, .. } => (
            "failed",
            Some(match (rule, failure) {
                (Some(r), _) => r.as_str(),
                (None, Some(f)) => f.as_str(),
                (None, None) => "tool_error",
            }),
        ),
    }
}
