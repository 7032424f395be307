//! The call pipeline, as stages: offer → validate → gate → handler → bounds → run → record.
//!
//! Each stage before the run either admits the call or refuses it with a typed [`Refusal`]; a
//! refusal costs nothing further (a call refused by the in-flight bound does not use the
//! session's network budget). [`Dispatcher::call`] wraps the whole with redaction and the
//! `tool_called` / `call_refused` event.

use super::offer::Target;
use super::outcome::{CallMode, CallOutcome};
use super::runs::{AfterCall, Driver, RunEnd, SessionState, run_of};
use super::{Dispatcher, MAX_PENDING_RESULTS, PendingHarness, builtins, harness_result, run_tool};
use crate::builtin::{ACTIVATION_CLASS, AUTHORING_CLASS};
use crate::envelope::Envelope;
use crate::event::{CallFinished, Event};
use crate::rule::Rule;
use crate::runtime::RuntimeError;
use crate::tool::{
    Availability, CallContext, Permission, RegisteredTool, Runs, ToolHandler, schema_problem,
    timeout_for,
};
use skillbase_format::Cost;
use skillbase_store::{Agent, AgentName, RunRecord};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};

/// Most bytes a tool reads from outside for one call.
const MAX_RESPONSE_BYTES: usize = 2 * 1024 * 1024;

/// One call as the pipeline sees it.
pub(super) struct Call<'a> {
    pub(super) agent: &'a AgentName,
    pub(super) session: &'a str,
    pub(super) state: &'a Arc<SessionState>,
    pub(super) wire_name: &'a str,
    pub(super) args: &'a serde_json::Value,
    pub(super) mode: CallMode,
    pub(super) call_id: &'a str,
    /// The call's span, when telemetry is on (handed to the handler).
    pub(super) trace: Option<&'a crate::telemetry::SpanScope>,
}

/// A stage's refusal: the rule and what the caller is told.
pub(super) struct Refusal {
    rule: Rule,
    message: String,
}

impl Refusal {
    fn new(rule: Rule, message: impl Into<String>) -> Refusal {
        Refusal {
            rule,
            message: message.into(),
        }
    }

    fn outcome(self, call_id: &str) -> CallOutcome {
        CallOutcome::Refused {
            call_id: call_id.to_owned(),
            rule: self.rule,
            message: self.message,
        }
    }
}

/// What the stages before the run decided.
enum Admission {
    /// Refused by a stage.
    Refused(Refusal),
    /// Answered without a tool run: a skill's activation, or a built-in.
    Answered(CallOutcome),
    /// A registered tool, admitted: run it.
    Run(Admitted),
}

/// A registered tool's call past every check, with what its run needs.
struct Admitted {
    tool: Arc<RegisteredTool>,
    /// `None` for a harness-run tool (the harness runs it).
    handler: Option<Arc<dyn ToolHandler>>,
    permit: OwnedSemaphorePermit,
    ctx: CallContext,
    run_id: Option<i64>,
    failure_threshold: u32,
    max_tokens: u32,
}

/// The future of one call's result.
type CallFuture = Pin<Box<dyn Future<Output = CallOutcome> + Send>>;

/// Stage 2: the arguments against the tool's compiled schema.
fn validate(tool: &RegisteredTool, args: &serde_json::Value) -> Result<(), Refusal> {
    let problems: Vec<String> = tool
        .validator
        .iter_errors(args)
        .take(10)
        .map(|e| schema_problem(&e))
        .collect();
    if problems.is_empty() {
        return Ok(());
    }
    Err(Refusal::new(
        Rule::InvalidArguments,
        format!(
            "arguments for '{}' do not match its parameters: {}",
            tool.decl.name,
            problems.join("; ")
        ),
    ))
}

/// Stage 3: the capability gate — the envelope's class check (granted now ∩ declared by the
/// driving revision), and while a skill drives: it is still active, and it changes no skill.
fn gate(
    envelope: &Envelope<'_>,
    class: &str,
    agent: &AgentName,
    run: Option<&RunRecord>,
    driver: Option<&Driver>,
) -> Result<(), Refusal> {
    if class == ACTIVATION_CLASS {
        return Ok(());
    }
    if let (Some(r), None) = (run, driver) {
        if !envelope.class_granted(class) {
            return Err(not_granted(class, agent));
        }
        return Err(Refusal::new(
            Rule::DrivingSkillInactive,
            format!(
                "skill '{}' drives this session but is no longer active; finish it with skill_finish",
                r.skill
            ),
        ));
    }
    if let Some(s) = driver
        && class == AUTHORING_CLASS
        && envelope.class_granted(class)
    {
        return Err(Refusal::new(
            Rule::SkillCannotModify,
            format!(
                "no call made under skill '{}' may change a skill; finish the skill first",
                s.name
            ),
        ));
    }
    envelope
        .allows_class(class)
        .map_err(|rule| match (rule, driver) {
            (Rule::ClassNotDeclared, Some(s)) => Refusal::new(
                rule,
                format!(
                    "skill '{}' (revision {}) does not declare tool class '{class}'",
                    s.name, s.rev
                ),
            ),
            _ => not_granted(class, agent),
        })
}

fn not_granted(class: &str, agent: &AgentName) -> Refusal {
    Refusal::new(
        Rule::ClassNotGranted,
        format!("tool class '{class}' is not granted to agent '{agent}'"),
    )
}

/// Stage 4: the handler. A harness-run tool has none here (the harness runs it); any other
/// needs one that can take calls now, and a detached call needs a tool slower than immediate.
fn handler_for(
    tool: &RegisteredTool,
    mode: CallMode,
) -> Result<Option<Arc<dyn ToolHandler>>, Refusal> {
    let d = &tool.decl;
    if d.runs == Runs::Harness {
        return Ok(None);
    }
    let Some(h) = tool.handler.clone() else {
        return Err(Refusal::new(
            Rule::NoHandler,
            format!(
                "tool '{}' is declared but has no handler in this process",
                d.name
            ),
        ));
    };
    if let Availability::Unavailable(why) = h.availability() {
        return Err(Refusal::new(Rule::ToolUnavailable, why));
    }
    if mode == CallMode::Detach && d.cost == Cost::Immediate {
        return Err(Refusal::new(
            Rule::CannotDetach,
            format!("'{}' is immediate; call it without detaching", d.name),
        ));
    }
    Ok(Some(h))
}

impl Dispatcher {
    /// The pipeline for one call: the stages, then the run (inline, detached or by the harness).
    pub(super) async fn call_inner(&self, call: &Call<'_>) -> Result<CallOutcome, RuntimeError> {
        match self.admit(call).await? {
            Admission::Refused(r) => Ok(r.outcome(call.call_id)),
            Admission::Answered(outcome) => Ok(outcome),
            Admission::Run(admitted) => Ok(self.run_admitted(call, admitted).await),
        }
    }

    /// Stages 1 to 5, in order; the first refusal ends the call.
    async fn admit(&self, call: &Call<'_>) -> Result<Admission, RuntimeError> {
        // 1. The name must be in the offered set. It is not quoted back: a text that echoes
        // (redacted) input would tell the caller whether its input held a secret.
        let (a, offer) = self.offered_for(call.agent)?;
        let Some(entry) = offer.set.get(call.wire_name) else {
            return Ok(Admission::Refused(Refusal::new(
                Rule::NotOffered,
                "the requested name is not a tool offered to this agent; use one of the offered names",
            )));
        };
        // The skill driving the session, read now (fail closed if it is no longer active), with
        // the capabilities of the revision its run activated (a newer revision written mid-run
        // does not widen what the running skill may do).
        let run = run_of(call.state);
        let driver = self.driver(call.state, call.agent, run.as_ref()).await?;
        // A built-in's declaration is in the table; a registered tool's in the registry.
        let (tool, builtin) = match &entry.target {
            Target::Skill(name) => {
                // A skill's arguments are checked against its inputs inside the activation.
                let args = Some(call.args.clone());
                let activation = self.activate(&a, call.session, name, args, call.call_id);
                return Ok(Admission::Answered(Box::pin(activation).await?));
            }
            Target::Builtin(b) => (b.tool(), Ok(*b)),
            Target::Tool(t) => (&**t, Err(t)),
        };
        // 2 and 3.
        let envelope = Envelope::for_call(&a, driver.as_ref().map(Driver::meta));
        if let Err(r) = validate(tool, call.args).and_then(|()| {
            gate(
                &envelope,
                &tool.decl.class,
                call.agent,
                run.as_ref(),
                driver.as_ref(),
            )
        }) {
            return Ok(Admission::Refused(r));
        }
        // Built-ins run in the runtime itself.
        let tool = match builtin {
            Ok(b) => {
                let bc = builtins::BuiltinCall {
                    dispatcher: self,
                    agent: &a,
                    session: call.session,
                    call_id: call.call_id,
                };
                return Ok(Admission::Answered(Box::pin(b.run(&bc, call.args)).await?));
            }
            Err(registered) => registered,
        };
        // 4 and 5.
        let admitted = handler_for(tool, call.mode).and_then(|handler| {
            let permit = self.bounds(&a, call, &tool.decl.permissions)?;
            let (vault_allowed, hosts_allowed) = match &driver {
                None => (offer.vault.clone(), offer.hosts.clone()),
                Some(_) => (Arc::new(envelope.vault()), Arc::new(envelope.hosts())),
            };
            let ctx = CallContext {
                agent: call.agent.to_string(),
                session: call.session.to_owned(),
                call_id: call.call_id.to_owned(),
                skill: driver.as_ref().map(|d| d.name.clone()),
                vault_allowed,
                hosts_allowed,
                vault: self.vault.clone(),
                refusals: Arc::new(Mutex::new(Vec::new())),
                deadline: timeout_for(tool.decl.cost),
                max_response_bytes: MAX_RESPONSE_BYTES,
                trace: call.trace.cloned(),
            };
            Ok(Admitted {
                tool: tool.clone(),
                handler,
                permit,
                ctx,
                run_id: run.as_ref().map(|r| r.id),
                failure_threshold: a.config.policies.failure_threshold,
                max_tokens: a.config.policies.max_result_tokens,
            })
        });
        Ok(admitted.map_or_else(Admission::Refused, Admission::Run))
    }

    /// The skill driving the session, if a run is open: its active revision, or the revision
    /// the run pinned when the skill was changed since (boxed: the database future stays out
    /// of the call's state).
    async fn driver(
        &self,
        state: &SessionState,
        agent: &AgentName,
        run: Option<&RunRecord>,
    ) -> Result<Option<Driver>, RuntimeError> {
        let Some(r) = run else {
            return Ok(None);
        };
        match self.active_driver(agent, r) {
            Ok(d) => Ok(d),
            Err(e) => Ok(Some(Box::pin(self.pinned_driver(state, r, &e)).await?)),
        }
    }

    /// Stage 5, the bounds: calls in flight per agent (under the policy read now), then network
    /// calls per session (a call refused by the first bound does not use the second).
    fn bounds(
        &self,
        a: &Agent,
        call: &Call<'_>,
        permissions: &[Permission],
    ) -> Result<OwnedSemaphorePermit, Refusal> {
        let limit = a.config.policies.max_calls_in_flight.max(1);
        let sem = {
            let mut m = self.inflight.lock().unwrap_or_else(|p| p.into_inner());
            let e = m
                .entry(call.agent.clone())
                .or_insert_with(|| (limit, Arc::new(Semaphore::new(limit as usize))));
            if e.0 != limit {
                // The policy changed: calls already in flight finish on the old semaphore.
                *e = (limit, Arc::new(Semaphore::new(limit as usize)));
            }
            e.1.clone()
        };
        let Ok(permit) = sem.try_acquire_owned() else {
            return Err(Refusal::new(
                Rule::TooManyInFlight,
                format!(
                    "agent '{}' already has {} calls in flight",
                    call.agent, a.config.policies.max_calls_in_flight
                ),
            ));
        };
        if permissions.contains(&Permission::Network) {
            let max = a.config.policies.max_network_calls_per_session;
            let mut n = call.state.network.lock().unwrap_or_else(|p| p.into_inner());
            if *n >= max {
                return Err(Refusal::new(
                    Rule::NetworkBudget,
                    format!("this session used its {max} network calls"),
                ));
            }
            *n += 1;
        }
        Ok(permit)
    }

    /// Stage 6, the run: by the handler here, or authorized for the harness; inline, or in a
    /// task whose result is collected later (detached calls, harness-run tools).
    async fn run_admitted(&self, call: &Call<'_>, admitted: Admitted) -> CallOutcome {
        let harness = admitted.handler.is_none();
        let future = self.call_future(call, &admitted);
        if harness || (call.mode == CallMode::Detach && admitted.tool.decl.cost != Cost::Immediate)
        {
            let tool = admitted.tool.decl.name.clone();
            self.spawn_call(call, future, admitted);
            return if harness {
                CallOutcome::Authorized {
                    call_id: call.call_id.to_owned(),
                    tool,
                }
            } else {
                CallOutcome::Started {
                    call_id: call.call_id.to_owned(),
                }
            };
        }
        let outcome = future.await;
        drop(admitted.permit);
        let redactor = self.redactor();
        AfterCall {
            run: RunEnd {
                runtime: &self.runtime,
                sink: &self.events,
                redactor: &redactor,
                state: call.state,
                agent: call.agent,
            },
            session: call.session,
            call_id: call.call_id,
            tool: &admitted.tool.decl.name,
            run_id: admitted.run_id,
            failure_threshold: admitted.failure_threshold,
        }
        .finish(outcome, &admitted.ctx.refusals)
        .await
    }

    /// The call's result as a future: the handler's run, or the harness's posted result.
    fn call_future(&self, call: &Call<'_>, admitted: &Admitted) -> CallFuture {
        let redactor = self.redactor();
        let call_id = call.call_id.to_owned();
        match &admitted.handler {
            Some(handler) => Box::pin(run_tool(
                handler.clone(),
                admitted.tool.clone(),
                admitted.ctx.clone(),
                call.args.clone(),
                redactor,
                admitted.max_tokens,
                call_id,
            )),
            None => {
                let (tx, rx) = tokio::sync::oneshot::channel();
                self.harness
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(
                        call_id.clone(),
                        PendingHarness {
                            agent: call.agent.clone(),
                            session: call.session.to_owned(),
                            tx,
                        },
                    );
                Box::pin(harness_result(
                    rx,
                    self.harness.clone(),
                    admitted.tool.clone(),
                    admitted.ctx.deadline,
                    redactor,
                    admitted.max_tokens,
                    call_id,
                ))
            }
        }
    }

    /// Stage 7 for a call finished in the background: its run counted, its outcome recorded as
    /// `call_finished` and kept for [`Dispatcher::wait`].
    fn spawn_call(&self, call: &Call<'_>, future: CallFuture, admitted: Admitted) {
        let (tx, rx) = watch::channel(None);
        {
            let mut results = self.results.lock().unwrap_or_else(|p| p.into_inner());
            // Results nobody collected: once finished they are in the store as
            // `call_finished` events, so the in-memory copies can go.
            if results.len() >= MAX_PENDING_RESULTS {
                results.retain(|_, r| r.borrow().is_none());
            }
            results.insert(call.call_id.to_owned(), rx);
        }
        let runtime = self.runtime.clone();
        let events = self.events.clone();
        let redactor = self.redactor();
        let state = call.state.clone();
        let agent = call.agent.clone();
        let session = call.session.to_owned();
        let id = call.call_id.to_owned();
        tokio::spawn(async move {
            let outcome = future.await;
            let Admitted {
                tool,
                permit,
                ctx,
                run_id,
                failure_threshold,
                ..
            } = admitted;
            drop(permit);
            let outcome = AfterCall {
                run: RunEnd {
                    runtime: &runtime,
                    sink: &events,
                    redactor: &redactor,
                    state: &state,
                    agent: &agent,
                },
                session: &session,
                call_id: &id,
                tool: &tool.decl.name,
                run_id,
                failure_threshold,
            }
            .finish(outcome, &ctx.refusals)
            .await;
            events
                .record(
                    Event::CallFinished(CallFinished {
                        call_id: id,
                        outcome: serde_json::to_value(&outcome).unwrap_or_default(),
                    })
                    .to_new(agent.as_str(), &session),
                )
                .await;
            let _ = tx.send(Some(outcome));
        });
    }
}
