//! Runs: a skill drives a session from its activation until it finishes, is superseded, or
//! fails too often. Here are the session's cached run, the driving revision (active or pinned),
//! activation as a call, what happens after each call, and [`RunEnd`], the one way a run ends.

use super::Dispatcher;
use super::outcome::CallOutcome;
use crate::event::{CandidateSettled, DriftDisabled, DriftReverted, Event, RunCounts, RunTally};
use crate::events::EventSink;
use crate::redact::Redactor;
use crate::rule::Rule;
use crate::runtime::{Runtime, RuntimeError};
use crate::tool::InnerRefusal;
use skillbase_format::SkillMeta;
use skillbase_route::tokens;
use skillbase_store::{Agent, AgentName, Author, NewEvent, RunRecord, Scope, SkillEntry, Status};
use std::sync::{Arc, Mutex};

/// Failed calls after which a skill's run ends as a failure.
pub const FAILED_CALLS_PER_RUN: i64 = 2;

/// A session as the dispatcher uses it: the runtime's one session cache entry (its agent, its
/// activations, the run that drives it, the pinned revision's capabilities, the network count).
/// Sessions are served by one process at a time (sticky); their state is loaded once and kept
/// current by this process's own writes.
pub(super) type SessionState = crate::runtime::OpenSession;

/// The open run of a loaded session.
pub(super) fn run_of(s: &SessionState) -> Option<RunRecord> {
    s.run
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone()
        .flatten()
}

/// The skill driving a call: the run's skill at the revision the run activated.
pub(super) struct Driver {
    pub(super) name: String,
    pub(super) rev: i64,
    revision: Revision,
}

/// Where the driving revision's frontmatter is: the index entry (the run's revision is still the
/// active one), or read from the store (an older revision, pinned for the run).
enum Revision {
    Active(Arc<SkillEntry>),
    Pinned(Arc<SkillMeta>),
}

impl Driver {
    pub(super) fn meta(&self) -> &SkillMeta {
        match &self.revision {
            Revision::Active(e) => &e.meta,
            Revision::Pinned(m) => m,
        }
    }
}

impl Dispatcher {
    /// The session's state, loaded once (the session is created if new): the runtime's session
    /// cache entry, with its driving run read on first use.
    pub(crate) async fn session(
        &self,
        agent: &AgentName,
        session: &str,
    ) -> Result<Arc<SessionState>, RuntimeError> {
        if let Some(s) = self.runtime.cached(agent, session)
            && s.run.lock().unwrap_or_else(|p| p.into_inner()).is_some()
        {
            return Ok(s);
        }
        // An unknown agent gets no session (nothing is created for it).
        self.agent(agent)?;
        // Boxed: the database futures stay out of every caller's state.
        Box::pin(self.load_session(agent, session)).await
    }

    async fn load_session(
        &self,
        agent: &AgentName,
        session: &str,
    ) -> Result<Arc<SessionState>, RuntimeError> {
        let state = self.runtime.open(agent, session).await?;
        let loaded = state
            .run
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some();
        if !loaded {
            let run = self.runtime.store.open_run(agent, session).await?;
            let mut slot = state.run.lock().unwrap_or_else(|p| p.into_inner());
            // A concurrent first call may have read it meanwhile: the same row either way.
            if slot.is_none() {
                *slot = Some(run);
            }
        }
        Ok(state)
    }

    /// Re-read the session's open run after it changed.
    pub(crate) async fn refresh_run(
        &self,
        agent: &AgentName,
        session: &str,
    ) -> Result<(), RuntimeError> {
        let run = self.runtime.store.open_run(agent, session).await?;
        if let Some(s) = self.runtime.cached(agent, session) {
            *s.run.lock().unwrap_or_else(|p| p.into_inner()) = Some(run);
        }
        Ok(())
    }

    /// The skill a run drives with, at the revision the run activated: `Ok(None)` when the
    /// skill is no longer active (fail closed), `Ok(Some)` when the run's revision is the active
    /// one (the common case, from the index, without waiting), and `Err(entry)` when an older
    /// revision must be read ([`Dispatcher::pinned_driver`]).
    pub(super) fn active_driver(
        &self,
        agent: &AgentName,
        r: &RunRecord,
    ) -> Result<Option<Driver>, Arc<SkillEntry>> {
        let index = self.runtime.store.index();
        let Some(e) = index.resolve(agent, &r.skill) else {
            return Ok(None);
        };
        if e.status != Status::Active || e.id != r.skill_id {
            return Ok(None);
        }
        if let Some((c, ce)) = &e.candidate
            && c.rev == r.rev
        {
            return Ok(Some(Driver {
                name: e.name.clone(),
                rev: r.rev,
                revision: Revision::Active(ce.clone()),
            }));
        }
        if e.active_rev != r.rev {
            return Err(e.clone());
        }
        Ok(Some(Driver {
            name: e.name.clone(),
            rev: r.rev,
            revision: Revision::Active(e.clone()),
        }))
    }

    /// The driver at a revision older than the active one: read from the store once per run.
    pub(super) async fn pinned_driver(
        &self,
        state: &SessionState,
        r: &RunRecord,
        e: &SkillEntry,
    ) -> Result<Driver, RuntimeError> {
        let cached = state
            .pinned
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .filter(|(id, _)| *id == r.id)
            .map(|(_, m)| m.clone());
        let meta = match cached {
            Some(m) => m,
            None => {
                let (_, bundle) = self
                    .runtime
                    .store
                    .bundle(&e.scope, &e.name, Some(r.rev))
                    .await?;
                let text = std::str::from_utf8(&bundle.skill_md().bytes).map_err(|_| {
                    RuntimeError::Invalid(format!(
                        "revision {} of '{}' is not UTF-8",
                        r.rev, e.name
                    ))
                })?;
                let meta = skillbase_format::SkillMd::parse(text, &Default::default())
                    .ok()
                    .and_then(|md| SkillMeta::from_md(&md))
                    .ok_or_else(|| {
                        RuntimeError::Invalid(format!(
                            "revision {} of '{}' cannot be read",
                            r.rev, e.name
                        ))
                    })?;
                let meta = Arc::new(meta);
                *state.pinned.lock().unwrap_or_else(|p| p.into_inner()) =
                    Some((r.id, meta.clone()));
                meta
            }
        };
        Ok(Driver {
            name: e.name.clone(),
            rev: r.rev,
            revision: Revision::Pinned(meta),
        })
    }

    /// The run driving a session, if any.
    pub async fn driving_run(
        &self,
        agent: &AgentName,
        session: &str,
    ) -> Result<Option<RunRecord>, RuntimeError> {
        let s = self.session(agent, session).await?;
        Ok(run_of(&s))
    }

    /// End the session's driving run on the harness's word (`success` or `failure`); returns
    /// the run and whether its revision was disabled for drift.
    pub async fn finish_run(
        &self,
        agent: &AgentName,
        session: &str,
        outcome: &str,
        note: &str,
    ) -> Result<Option<(RunRecord, bool)>, RuntimeError> {
        let a = self.agent(agent)?;
        let state = self.session(agent, session).await?;
        let Some(run) = run_of(&state) else {
            return Ok(None);
        };
        let r = RunEnd {
            runtime: &self.runtime,
            sink: &self.events,
            redactor: &self.redactor(),
            state: &state,
            agent,
        }
        .end(run.id, outcome, note, a.config.policies.failure_threshold)
        .await?;
        Ok(Some(r))
    }

    /// Level 2 as a harness asks for it: load a skill into the session through its run — the
    /// one way a skill is activated (a call of `load_skill`, a skill's `skill_<name>` entry and
    /// [`crate::Engine::load`] all come here). Validates `arguments` against the skill's
    /// `inputs`, substitutes them, and returns the body (redacted) with its companions' bodies
    /// and its file list; the skill drives the session from now on (a first activation opens
    /// its run; loading it again after it finished, or after another skill took over, opens a
    /// new one). The second load of a revision in a session answers "already active".
    pub async fn load(
        &self,
        agent: &AgentName,
        session: &str,
        name: &str,
        arguments: Option<&serde_json::Value>,
    ) -> Result<crate::runtime::LoadResult, RuntimeError> {
        let driving = self
            .driving_run(agent, session)
            .await?
            .map(|o| (o.skill_id, o.rev));
        let redactor = self.redactor();
        let (mut r, opened) = self
            .runtime
            .load_skill_with_run(
                agent,
                session,
                name,
                arguments,
                Some(driving),
                Some(&redactor),
            )
            .await?;
        if opened.is_some() {
            // A first activation opened the skill's run with its activation.
            self.refresh_run(agent, session).await?;
        } else if r.already_active
            && let Some(e) = self
                .runtime
                .store
                .index()
                .resolve(agent, name)
                .map(|e| e.served_to(session).clone())
            && driving != Some((e.id, e.active_rev))
        {
            // The skill drives from now on, unless its run is the one already open.
            self.runtime.store.start_run(session, agent, &e).await?;
            self.refresh_run(agent, session).await?;
        }
        if let std::borrow::Cow::Owned(text) = redactor.redact(&r.content) {
            r.content = text;
        }
        Ok(r)
    }

    /// `load_skill` as a dispatched call: [`Dispatcher::load`], with its refusals typed.
    pub(crate) async fn activate(
        &self,
        agent: &Agent,
        session: &str,
        name: &str,
        args: Option<serde_json::Value>,
        call_id: &str,
    ) -> Result<CallOutcome, RuntimeError> {
        match self.load(&agent.name, session, name, args.as_ref()).await {
            Ok(r) => Ok(CallOutcome::Done {
                call_id: call_id.to_owned(),
                // A repeated load answers the same text each time: counted once.
                tokens: if r.already_active {
                    self.recount.count(&r.content)
                } else {
                    tokens::count(&r.content)
                },
                result: serde_json::Value::String(r.content),
                truncated: false,
            }),
            Err(RuntimeError::InvalidArguments { name, problems }) => Ok(CallOutcome::Refused {
                call_id: call_id.to_owned(),
                rule: Rule::InvalidArguments,
                message: format!(
                    "arguments for skill '{name}' do not match its inputs: {problems}"
                ),
            }),
            Err(
                e @ (RuntimeError::UnknownSkill { .. }
                | RuntimeError::Eager(_)
                | RuntimeError::ExplicitOnly(_)),
            ) => Ok(CallOutcome::Refused {
                call_id: call_id.to_owned(),
                rule: Rule::NotOffered,
                message: e.to_string(),
            }),
            Err(e) => Err(e),
        }
    }
}

/// What is left to do after a tool ran: record the refusals raised inside it, and count the
/// call in the driving skill's run (ending the run after too many failed calls).
pub(super) struct AfterCall<'a> {
    /// The session's run, as [`RunEnd`] ends it.
    pub(super) run: RunEnd<'a>,
    pub(super) session: &'a str,
    pub(super) call_id: &'a str,
    pub(super) tool: &'a str,
    pub(super) run_id: Option<i64>,
    pub(super) failure_threshold: u32,
}

impl AfterCall<'_> {
    pub(super) async fn finish(
        self,
        outcome: CallOutcome,
        refusals: &Mutex<Vec<InnerRefusal>>,
    ) -> CallOutcome {
        // Refusals raised inside the tool are recorded, even when the tool went on without
        // what it was refused and succeeded. When one stopped the tool, the call's outcome is
        // that refusal and its own `call_refused` event records it.
        let inner: Vec<InnerRefusal> = refusals.lock().map(|r| r.clone()).unwrap_or_default();
        let skip = usize::from(matches!(outcome, CallOutcome::Refused { .. }));
        for r in inner.iter().skip(skip) {
            self.run
                .sink
                .record(NewEvent {
                    kind: "call_refused".into(),
                    agent: Some(self.run.agent.to_string()),
                    session: Some(self.session.to_owned()),
                    data: self.run.redactor.redact_json_owned(serde_json::json!({
                        "call_id": self.call_id,
                        "tool": self.tool,
                        "rule": r.rule,
                        "message": r.message,
                        "inner": true,
                    })),
                    ..NewEvent::default()
                })
                .await;
        }
        if let Some(run) = self.run_id {
            // Boxed: the database futures stay out of the call's state. A refusal raised inside
            // the tool (the tool ran and was stopped by the envelope) counts as a failed call of
            // the run, as a failure does: a skill that keeps reaching outside its envelope ends.
            let failed = matches!(
                outcome,
                CallOutcome::Failed { .. } | CallOutcome::Refused { .. }
            );
            Box::pin(self.count_in_run(run, failed)).await;
        }
        outcome
    }

    async fn count_in_run(&self, run: i64, failed: bool) {
        if !failed {
            // Written behind, in the event writer's next transaction.
            self.run.sink.count_call(run).await;
            return;
        }
        // A failure is counted now, with the calls still queued, so that the limit below reads
        // the run's true counters.
        self.run.sink.flush().await;
        let store = &self.run.runtime.store;
        let _ = store.count_call(run, true).await;
        if let Ok(Some(r)) = store.open_run(self.run.agent, self.session).await
            && r.id == run
            && r.failed_calls >= FAILED_CALLS_PER_RUN
        {
            // The run is over whatever the store says next; the failure is in its counters.
            let _ = self
                .run
                .end(
                    r.id,
                    "failure",
                    &format!("{} calls failed (last: {})", r.failed_calls, self.tool),
                    self.failure_threshold,
                )
                .await;
        }
    }
}

/// The one way a run ends — `skill_finish`, the harness's [`Dispatcher::finish_run`], and the
/// failed-call limit all come here: the note is redacted (it is kept with the run and in
/// events), the run's queued counters are written first, the run is closed with its outcome,
/// the revision is disabled when it has failed `threshold` runs in a row (drift), and the
/// session's cached run says no skill drives it any more.
pub(super) struct RunEnd<'a> {
    pub(super) runtime: &'a Runtime,
    pub(super) sink: &'a EventSink,
    pub(super) redactor: &'a Redactor,
    pub(super) state: &'a SessionState,
    pub(super) agent: &'a AgentName,
}

impl RunEnd<'_> {
    /// End `run` as `outcome` (`success` or `failure`); returns the run and whether its
    /// revision was disabled for drift.
    pub(super) async fn end(
        &self,
        run: i64,
        outcome: &str,
        note: &str,
        threshold: u32,
    ) -> Result<(RunRecord, bool), RuntimeError> {
        let note = self.redactor.redact(note);
        // The run's counters are complete before it ends.
        self.sink.flush().await;
        let store = &self.runtime.store;
        let (rec, streak) = store.end_run(run, outcome, &note).await?;
        {
            let mut slot = self.state.run.lock().unwrap_or_else(|p| p.into_inner());
            if slot
                .as_ref()
                .is_none_or(|r| r.as_ref().is_none_or(|r| r.id == run))
            {
                *slot = Some(None);
            }
        }
        // A run of a skill with a staged candidate may settle it (promoted or rejected).
        Box::pin(self.judge_candidate(&rec, outcome, streak, threshold)).await?;
        let mut disabled = false;
        if outcome == "failure" && streak >= i64::from(threshold.max(1)) {
            let scope: Scope = rec.scope.parse().map_err(RuntimeError::Invalid)?;
            let why = format!(
                "revision {} failed {streak} runs in a row (threshold {threshold})",
                rec.rev
            );
            let on_drift = store
                .agent_cached(self.agent)
                .map(|a| a.config.policies.on_drift)
                .unwrap_or_default();
            let active = store
                .index()
                .get(&scope, &rec.skill)
                .is_some_and(|e| e.active_rev == rec.rev && e.status == Status::Active);
            if active
                && on_drift == skillbase_store::OnDrift::Revert
                && let Some(good) = last_good_revision(store, &scope, &rec.skill, rec.rev).await?
            {
                self.runtime
                    .writer()
                    .revert(
                        &scope,
                        &rec.skill,
                        good.0,
                        &Author::AgentInline(self.agent.clone()),
                    )
                    .await?;
                store
                    .append_event(&NewEvent {
                        kind: skillbase_store::EventKind::DriftReverted,
                        scope: Some(scope.to_string()),
                        skill: Some(rec.skill.clone()),
                        rev: Some(good.0),
                        agent: Some(self.agent.to_string()),
                        data: Event::DriftReverted(DriftReverted {
                            from: rec.rev,
                            to: good.0,
                            drift: why.to_string(),
                            to_runs: RunCounts {
                                success: good.1,
                                failure: good.2,
                            },
                            last_note: note.to_string(),
                        })
                        .data(),
                        ..NewEvent::default()
                    })
                    .await?;
                return Ok((rec, true));
            }
            if active {
                self.runtime
                    .writer()
                    .set_status(
                        &scope,
                        &rec.skill,
                        skillbase_store::StatusChange::Disable,
                        &Author::AgentInline(self.agent.clone()),
                        serde_json::to_value(DriftDisabled {
                            drift: why.to_string(),
                            last_note: note.to_string(),
                        })
                        .unwrap_or_default(),
                        None,
                    )
                    .await?;
                disabled = true;
            }
        }
        Ok((rec, disabled))
    }
}

impl RunEnd<'_> {
    /// Judge the skill's staged candidate after one of its runs (or one of the active
    /// revision's) ended: rejected at once when the candidate failed `threshold` runs in a row
    /// (it drifted); otherwise, once the candidate and the active revision have each ended
    /// `min_runs` runs since it was staged, promoted when its failure rate is not higher than
    /// the active revision's, rejected when it is. Either way an event records both revisions'
    /// counts; a candidate another server settled first is left as it is.
    async fn judge_candidate(
        &self,
        rec: &RunRecord,
        outcome: &str,
        streak: i64,
        threshold: u32,
    ) -> Result<(), RuntimeError> {
        let store = &self.runtime.store;
        let scope: Scope = rec.scope.parse().map_err(RuntimeError::Invalid)?;
        let Some(e) = store.index().get(&scope, &rec.skill).cloned() else {
            return Ok(());
        };
        let Some(c) = e.candidate.as_ref().map(|(c, _)| *c) else {
            return Ok(());
        };
        if e.id != rec.skill_id || (rec.rev != c.rev && rec.rev != e.active_rev) {
            return Ok(());
        }
        let (cand_ok, cand_bad) = store.outcomes_since(e.id, c.rev, c.staged_at).await?;
        let (act_ok, act_bad) = store
            .outcomes_since(e.id, e.active_rev, c.staged_at)
            .await?;
        let verdict = candidate_verdict(
            &c,
            (cand_ok, cand_bad),
            (act_ok, act_bad),
            (rec.rev == c.rev && outcome == "failure" && streak >= i64::from(threshold.max(1)))
                .then_some(streak),
        );
        let Some((promote, reason)) = verdict else {
            return Ok(());
        };
        let actor = Author::AgentInline(self.agent.clone());
        store
            .settle_candidate(
                &scope,
                &rec.skill,
                skillbase_store::Settlement {
                    rev: c.rev,
                    promote,
                    actor: &actor,
                    agent: Some(self.agent),
                    data: Event::CandidateSettled(
                        promote,
                        CandidateSettled {
                            reason: reason.to_string(),
                            candidate: RunTally::of(cand_ok, cand_bad),
                            active: RunTally::of(act_ok, act_bad),
                            active_rev: e.active_rev,
                            min_runs: c.min_runs,
                            percent: c.percent,
                        },
                    )
                    .data(),
                },
            )
            .await?;
        Ok(())
    }
}

/// What a staged candidate's counts (successes, failures since it was staged) decide:
/// `None` while either revision has fewer than `min_runs` ended runs (unless the candidate
/// drifted — `drifted` holds its failures in a row — which rejects it); else promoted (`true`) when the candidate's failure rate is not
/// higher than the active revision's, rejected when it is, with the reason in words.
pub(crate) fn candidate_verdict(
    c: &skillbase_store::Candidate,
    candidate: (i64, i64),
    active: (i64, i64),
    drifted: Option<i64>,
) -> Option<(bool, String)> {
    if let Some(streak) = drifted {
        return Some((
            false,
            format!("revision {} failed its last {streak} runs in a row", c.rev),
        ));
    }
    let (cand_n, act_n) = (candidate.0 + candidate.1, active.0 + active.1);
    let min = i64::from(c.min_runs.max(1));
    if cand_n < min || act_n < min {
        return None;
    }
    // Failure rates compared without rounding: cand_bad / cand_n against act_bad / act_n.
    let worse =
        i128::from(candidate.1) * i128::from(act_n) > i128::from(active.1) * i128::from(cand_n);
    let pct = |bad: i64, n: i64| bad as f64 * 100.0 / n as f64;
    let figures = format!(
        "{:.0}% of {cand_n} runs failed, against {:.0}% of {act_n} for the active revision",
        pct(candidate.1, cand_n),
        pct(active.1, act_n)
    );
    Some(if worse {
        (false, format!("its outcomes are worse: {figures}"))
    } else {
        (true, format!("its outcomes are not worse: {figures}"))
    })
}

/// The newest revision before `current` whose ended runs mostly succeeded (at least one
/// success, no more failures than successes, over the skill's last 500 runs), with its counts.
async fn last_good_revision(
    store: &skillbase_store::Store,
    scope: &Scope,
    name: &str,
    current: i64,
) -> Result<Option<(i64, i64, i64)>, RuntimeError> {
    let runs = store.runs(scope, name, 500).await?;
    let mut by_rev: std::collections::BTreeMap<i64, (i64, i64)> = Default::default();
    for r in runs.iter().filter(|r| r.rev < current) {
        let e = by_rev.entry(r.rev).or_default();
        match r.outcome.as_deref() {
            Some("success") => e.0 += 1,
            Some("failure") => e.1 += 1,
            _ => {}
        }
    }
    Ok(by_rev
        .into_iter()
        .rev()
        .find(|(_, (ok, bad))| *ok >= 1 && ok >= bad)
        .map(|(rev, (ok, bad))| (rev, ok, bad)))
}

#[cfg(test)]
mod tests {
    use super::candidate_verdict;
    use skillbase_store::Candidate;

    fn c(min_runs: u32) -> Candidate {
        Candidate {
            rev: 2,
            percent: 20,
            min_runs,
            staged_at: 0,
        }
    }

    /// Judged only once both revisions have `min_runs` ended runs; promoted when the
    /// candidate's failure rate is not higher (equal included), rejected when it is; a drifting
    /// candidate is rejected at once.
    #[test]
    fn a_candidate_is_judged_by_failure_rates_after_enough_runs() {
        assert_eq!(candidate_verdict(&c(3), (2, 0), (3, 0), None), None);
        assert_eq!(candidate_verdict(&c(3), (3, 0), (1, 1), None), None);
        let (promote, why) = candidate_verdict(&c(3), (3, 0), (2, 1), None).unwrap();
        assert!(promote, "{why}");
        assert!(
            why.contains("not worse: 0% of 3 runs failed, against 33% of 3"),
            "{why}"
        );
        // Equal rates over different counts: not worse.
        assert!(candidate_verdict(&c(2), (1, 1), (2, 2), None).unwrap().0);
        // One more failure per hundred is worse (no rounding).
        let (promote, why) = candidate_verdict(&c(100), (99, 2), (99, 1), None).unwrap();
        assert!(!promote && why.contains("worse"), "{why}");
        let (promote, why) = candidate_verdict(&c(50), (1, 3), (0, 0), Some(2)).unwrap();
        assert!(!promote);
        assert!(
            why.contains("revision 2 failed its last 2 runs in a row"),
            "{why}"
        );
        // min_runs 0 (never stored: the store clamps it) still waits for a run of each.
        assert_eq!(candidate_verdict(&c(0), (0, 0), (0, 0), None), None);
    }
}
