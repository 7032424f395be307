//! Dreaming: skills captured from what an agent's sessions did.
//!
//! A dream reads the agent's recorded sessions (successful calls, and the users' messages when
//! the agent records conversations or a transcript was imported), finds procedures that recur
//! across sessions ([`mine`]), drops those an existing skill already covers and those that reach
//! outside the agent's envelope (a tool class it is not granted: a dream never grants itself
//! reach), and writes each remaining one as a skill in the agent's own scope, authored
//! `agent:<id>/dreaming` — active, or pending when the agent's `review_agent_revisions` says so.
//! Every dream writes a report (returned, and recorded as a `dream` event) with each created
//! skill's evidence (sessions, call ids, support) and every rejected candidate with why.

pub mod draft;
pub mod mine;
pub mod model;
pub mod transcript;

use crate::dispatch::Dispatcher;
use crate::runtime::RuntimeError;
use mine::{LoggedCall, MineOptions, Pattern, SessionLog};
use serde::Serialize;
use skillbase_format::{Bundle, BundleFile, BundlePath, Digest};
use skillbase_store::{AgentName, Author, EventFilter, NewEvent, PutRequest, Scope, WriteKind};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Most events a dream reads per kind (the newest are kept past it).
pub const MAX_EVENTS_READ: usize = 1_000_000;
/// Most rejected candidates listed per reason class in a report.
const MAX_REJECTED: usize = 20;

/// What to dream about.
#[derive(Debug, Clone)]
pub struct DreamOptions {
    /// Only events at or after this time (Unix milliseconds).
    pub since: Option<i64>,
    /// Report what would be written, write nothing (no skill, no event).
    pub dry_run: bool,
    /// Distinct sessions a procedure must occur in (default 3).
    pub min_support: usize,
    /// Who asked (recorded in the event).
    pub actor: Author,
    /// The model that writes the prose (default: the `[dreaming.model]` of the engine, if any).
    pub model: Option<Arc<model::ProseModel>>,
}

pub use model::DreamSettings;

impl Default for DreamOptions {
    fn default() -> DreamOptions {
        DreamOptions {
            since: None,
            dry_run: false,
            min_support: 3,
            actor: Author::Human("dream".into()),
            model: None,
        }
    }
}

/// Where a learned skill comes from.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Evidence {
    /// The supporting sessions.
    pub sessions: Vec<String>,
    /// The call ids of the procedure in each supporting session (same order).
    pub calls: Vec<Vec<String>>,
    /// How many distinct sessions did it.
    pub support: usize,
}

/// A skill a dream created (or would create, in a dry run).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Learned {
    /// Its name (in the agent's scope).
    pub name: String,
    /// The revision written (absent in a dry run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rev: Option<i64>,
    /// `active`, `pending` (waiting for review) or `dry_run`.
    pub status: &'static str,
    /// The procedure's steps (`tool(keys)`).
    pub steps: Vec<String>,
    /// The tool classes it declares (all granted to the agent).
    pub capabilities: Vec<String>,
    /// Where it comes from.
    pub evidence: Evidence,
    /// Whether the agent's allowlist lets it see the skill (an explicit list must name it:
    /// `skills = [..., "<name>"]`; a dream does not change what an agent is configured with).
    pub visible: bool,
    /// Who wrote the prose: `draft` (the miner) or `model` (`[dreaming.model]`).
    pub prose: &'static str,
    /// Why the model's answer was not used, when it was asked and not used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_refused: Option<String>,
    /// The SKILL.md written.
    pub skill_md: String,
}

/// A candidate the dream did not write, with why.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Rejected {
    /// The procedure's steps.
    pub steps: Vec<String>,
    /// Its support.
    pub support: usize,
    /// `too_rare`, `chance`, `already_covered`, `outside_envelope`, `part_of`,
    /// `unknown_tool` or `invalid`.
    pub reason: &'static str,
    /// The details (the covering skill, the class not granted, the validation error...).
    pub detail: String,
    /// The sessions it was seen in.
    pub sessions: Vec<String>,
}

/// What one dream did.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct DreamReport {
    /// The agent dreamed for.
    pub agent: String,
    /// Whether it was a dry run (nothing written).
    pub dry_run: bool,
    /// Sessions read (with at least one call).
    pub sessions: usize,
    /// Calls read.
    pub calls: usize,
    /// The support a procedure needed.
    pub min_support: usize,
    /// Skills created.
    pub created: Vec<Learned>,
    /// Candidates not written, with why.
    pub rejected: Vec<Rejected>,
    /// Revisions drift reverted since the agent's previous dream (`on_drift = "revert"`).
    pub drift_reverted: Vec<DriftRevert>,
    /// Candidate revisions (`stage_agent_revisions`): the ones staged now in the agent's view,
    /// and the ones its runs promoted or rejected since its previous dream.
    pub candidates: Vec<CandidateState>,
}

/// A candidate revision, as the dream report shows it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct CandidateState {
    /// The skill (in the agent's view).
    pub skill: String,
    /// The candidate revision.
    pub rev: i64,
    /// `staged` (served to `percent` of sessions, being judged), `promoted` or `rejected`.
    pub state: &'static str,
    /// The share of sessions it is (or was) served to, in percent.
    pub percent: u32,
    /// Ended runs of each revision it is judged after.
    pub min_runs: u32,
    /// Why it was promoted or rejected, with the figures (empty while staged).
    pub reason: String,
}

/// A revision drift reverted: the skill went back from `from` to `to`.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct DriftRevert {
    /// The skill (in the agent's view).
    pub skill: String,
    /// The revision that drifted.
    pub from: i64,
    /// The earlier revision re-activated.
    pub to: i64,
    /// Why (the failed runs in a row).
    pub drift: String,
}

fn step_text(s: &mine::Step) -> String {
    format!("{}({})", s.tool, s.keys.join(","))
}

/// Read the agent's sessions as the miner takes them: successful calls (`tool_called` with
/// `ok`, calls that ran apart — `call_started` — whose `call_finished` says done, and imported
/// `transcript_call`s) without the activation and authoring built-ins, and
/// the users' messages (`user_message`), each in event order.
pub async fn sessions_of(
    d: &Dispatcher,
    agent: &AgentName,
    since: Option<i64>,
) -> Result<Vec<SessionLog>, RuntimeError> {
    use crate::builtin::{ACTIVATION_CLASS, AUTHORING_CLASS, Builtin};
    let skip: Vec<&str> = Builtin::ALL
        .iter()
        .filter(|b| matches!(b.class(), ACTIVATION_CLASS | AUTHORING_CLASS))
        .map(|b| b.name())
        .collect();
    let store = &d.runtime.store;
    // (event id, session, what)
    enum Item {
        Call(LoggedCall),
        /// A call that ran apart (slow, or run by the harness): a step where it started, once
        /// its `call_finished` event says it was done.
        Started(LoggedCall),
        Message(String),
    }
    let mut items: Vec<(i64, String, Item)> = Vec::new();
    // The calls that ran apart and finished done, by call id.
    let mut finished_done: std::collections::HashSet<String> = Default::default();
    for kind in [
        "tool_called",
        "transcript_call",
        "user_message",
        "call_started",
        "call_finished",
    ] {
        let mut after = None;
        let mut read = 0usize;
        loop {
            let page = store
                .events(&EventFilter {
                    after_id: after,
                    agent: Some(agent.to_string()),
                    kind: Some(kind.into()),
                    limit: Some(10_000),
                    ..EventFilter::default()
                })
                .await?;
            let Some(last) = page.last() else { break };
            after = Some(last.id);
            read += page.len();
            for e in page {
                if since.is_some_and(|t| e.at < t) {
                    continue;
                }
                let Some(session) = e.session.clone() else {
                    continue;
                };
                if kind == "call_finished" {
                    if e.data["outcome"]["status"] == "done"
                        && let Some(id) = e.data["call_id"].as_str()
                    {
                        finished_done.insert(id.to_owned());
                    }
                    continue;
                }
                let item = if kind == "user_message" {
                    match e.data["message"].as_str() {
                        Some(m) => Item::Message(m.to_owned()),
                        None => continue,
                    }
                } else {
                    if e.data["ok"] == false {
                        continue;
                    }
                    let Some(tool) = e.data["tool"].as_str() else {
                        continue;
                    };
                    if skip.contains(&tool) {
                        continue;
                    }
                    let call = LoggedCall {
                        call_id: e.data["call_id"].as_str().unwrap_or_default().to_owned(),
                        tool: tool.to_owned(),
                        arguments: e.data["arguments"].clone(),
                    };
                    if kind == "call_started" {
                        Item::Started(call)
                    } else {
                        Item::Call(call)
                    }
                };
                items.push((e.id, session, item));
            }
            if read >= MAX_EVENTS_READ {
                tracing::warn!(%agent, kind, "dream: read the first {MAX_EVENTS_READ} events of this kind only");
                break;
            }
        }
    }
    items.sort_by_key(|(id, ..)| *id);
    let mut by_session: BTreeMap<String, SessionLog> = BTreeMap::new();
    for (_, session, item) in items {
        let log = by_session
            .entry(session.clone())
            .or_insert_with(|| SessionLog {
                session,
                ..SessionLog::default()
            });
        match item {
            Item::Call(c) => log.calls.push(c),
            Item::Started(c) if finished_done.contains(&c.call_id) => log.calls.push(c),
            Item::Started(_) => {}
            Item::Message(m) => log.messages.push(m),
        }
    }
    Ok(by_session.into_values().collect())
}

/// Whether `skill` already covers the procedure: its body names every tool of it, or it
/// declares every tool class and names at least half of the tools.
fn covers(entry: &skillbase_store::SkillEntry, tools: &[&str], classes: &[String]) -> bool {
    let named = tools.iter().filter(|t| entry.body.contains(**t)).count();
    let declared = classes
        .iter()
        .all(|c| entry.meta.capabilities.tools.iter().any(|t| t == c));
    named == tools.len() || (declared && named * 2 >= tools.len())
}

/// Dream for one agent: see the module documentation.
pub async fn dream(
    d: &Dispatcher,
    agent: &AgentName,
    opts: &DreamOptions,
) -> Result<DreamReport, RuntimeError> {
    let a = d
        .runtime
        .store
        .agent_cached(agent)
        .ok_or_else(|| RuntimeError::UnknownAgent(agent.to_string()))?;
    let settings = d.dreaming.get().cloned().unwrap_or_default();
    let model = opts.model.clone().or_else(|| settings.model.clone());
    let sessions = sessions_of(d, agent, opts.since).await?;
    let min_support = opts.min_support.max(2);
    // Mined one below the bar, so near misses are reported as too rare.
    let mined = mine::mine(
        &sessions,
        MineOptions {
            min_support: min_support - 1,
            ..MineOptions::default()
        },
    );
    let mut report = DreamReport {
        agent: agent.to_string(),
        dry_run: opts.dry_run,
        sessions: sessions.iter().filter(|s| !s.calls.is_empty()).count(),
        calls: sessions.iter().map(|s| s.calls.len()).sum(),
        min_support,
        created: Vec::new(),
        rejected: Vec::new(),
        drift_reverted: Vec::new(),
        candidates: Vec::new(),
    };
    let store = &d.runtime.store;
    let last_dream = store
        .recent_events(agent.as_str(), "dream", 1)
        .await?
        .first()
        .map(|e| e.at);
    for e in store
        .recent_events(agent.as_str(), "drift_reverted", 50)
        .await?
        .into_iter()
        .rev()
        .filter(|e| last_dream.is_none_or(|t| e.at >= t))
    {
        report.drift_reverted.push(DriftRevert {
            skill: e.skill.clone().unwrap_or_default(),
            from: e.data["from"].as_i64().unwrap_or_default(),
            to: e.data["to"].as_i64().unwrap_or_default(),
            drift: e.data["drift"].as_str().unwrap_or_default().to_owned(),
        });
    }
    for kind in ["candidate_promoted", "candidate_rejected"] {
        for e in store
            .recent_events(agent.as_str(), kind, 50)
            .await?
            .into_iter()
            .rev()
            .filter(|e| last_dream.is_none_or(|t| e.at >= t))
        {
            let num = |k: &str| u32::try_from(e.data[k].as_u64().unwrap_or(0)).unwrap_or(0);
            report.candidates.push(CandidateState {
                skill: e.skill.clone().unwrap_or_default(),
                rev: e.rev.unwrap_or_default(),
                state: if kind == "candidate_promoted" {
                    "promoted"
                } else {
                    "rejected"
                },
                percent: num("percent"),
                min_runs: num("min_runs"),
                reason: e.data["reason"].as_str().unwrap_or_default().to_owned(),
            });
        }
    }
    if let Ok(view) = d.runtime.view(agent) {
        for s in &view.skills {
            if let Some((c, _)) = &s.entry.candidate {
                report.candidates.push(CandidateState {
                    skill: s.entry.name.clone(),
                    rev: c.rev,
                    state: "staged",
                    percent: c.percent,
                    min_runs: c.min_runs,
                    reason: String::new(),
                });
            }
        }
    }
    let session_ids = |p: &Pattern| -> Vec<String> {
        p.occurrences
            .iter()
            .map(|o| sessions[o.session].session.clone())
            .collect()
    };
    let reject = |report: &mut DreamReport, p: &Pattern, reason, detail: String| {
        if report
            .rejected
            .iter()
            .filter(|r| r.reason == reason)
            .count()
            < MAX_REJECTED
        {
            report.rejected.push(Rejected {
                steps: p.steps.iter().map(step_text).collect(),
                support: p.support(),
                reason,
                detail,
                sessions: session_ids(p),
            });
        }
    };
    for (p, k) in &mined.contained {
        if p.support() >= min_support {
            let of = mined.patterns[*k]
                .steps
                .iter()
                .map(step_text)
                .collect::<Vec<_>>();
            reject(
                &mut report,
                p,
                "part_of",
                format!("inside {}", of.join(" → ")),
            );
        }
    }
    for (p, expected) in &mined.chance {
        if p.support() >= min_support {
            reject(
                &mut report,
                p,
                "chance",
                format!(
                    "seen in {} sessions; chance alone gives about {expected:.1}",
                    p.support()
                ),
            );
        }
    }
    let registry = d.registry();
    let envelope = crate::envelope::Envelope::for_call(&a, None);
    let visible = crate::view::visible(&a, &d.runtime.store.index());
    let own_scope = Scope::Agent(agent.clone());
    for p in &mined.patterns {
        if p.support() < min_support {
            reject(
                &mut report,
                p,
                "too_rare",
                format!("seen in {} sessions; {min_support} needed", p.support()),
            );
            continue;
        }
        let tools: Vec<&str> = {
            let mut t: Vec<&str> = p.steps.iter().map(|s| s.tool.as_str()).collect();
            t.dedup();
            t
        };
        // Each tool's class, from what is configured now.
        let mut classes: Vec<String> = Vec::new();
        let mut unknown = None;
        for t in &tools {
            let class = crate::builtin::Builtin::ALL
                .iter()
                .find(|b| b.name() == *t)
                .map(|b| b.class().to_owned())
                .or_else(|| registry.get(t).map(|r| r.decl.class.clone()));
            match class {
                Some(c) if !classes.contains(&c) => classes.push(c),
                Some(_) => {}
                None => unknown = Some(*t),
            }
        }
        if let Some(t) = unknown {
            reject(
                &mut report,
                p,
                "unknown_tool",
                format!("`{t}` is not a configured tool any more"),
            );
            continue;
        }
        if let Some(c) = classes.iter().find(|c| !envelope.class_granted(c)) {
            reject(
                &mut report,
                p,
                "outside_envelope",
                format!(
                    "tool class `{c}` is not granted to agent {agent}; a dream never widens the envelope"
                ),
            );
            continue;
        }
        if let Some(e) = visible.iter().find(|e| covers(e, &tools, &classes)) {
            reject(
                &mut report,
                p,
                "already_covered",
                format!("skill `{}` covers it", e.name),
            );
            continue;
        }
        let supporting: Vec<usize> = p.occurrences.iter().map(|o| o.session).collect();
        let phrases = draft::keyphrases(&sessions, &supporting, &tools, 3);
        let base = phrases
            .first()
            .and_then(|k| draft::slug(k))
            .or_else(|| draft::slug(&tools.join(" then ")))
            .or_else(|| draft::slug("learned procedure"));
        let Some(base) = base else {
            reject(&mut report, p, "invalid", "no usable name".into());
            continue;
        };
        // A name nobody visible to the agent (nor a skill written in this dream) holds.
        let index = d.runtime.store.index();
        let taken = |n: &str| {
            index.resolve(agent, n).is_some()
                || index.get(&own_scope, n).is_some()
                || report.created.iter().any(|l| l.name == n)
        };
        let mut name = base.clone();
        let mut n = 2;
        while taken(name.as_str()) {
            let suffix = format!("-{n}");
            let stem: String = base.as_str().chars().take(64 - suffix.len()).collect();
            match skillbase_format::SkillName::parse(&format!(
                "{}{suffix}",
                stem.trim_end_matches('-')
            )) {
                Ok(x) => name = x,
                Err(_) => break,
            }
            n += 1;
        }
        let skill = draft::draft(&draft::DraftInput {
            sessions: &sessions,
            pattern: p,
            name: name.clone(),
            phrases: &phrases,
            classes: classes.clone(),
        });
        let mut md = skill.to_skill_md();
        let (mut prose, mut model_refused) = ("draft", None);
        if let Some(m) = &model {
            let redactor = d.redactor();
            let mut ev = format!(
                "Steps: {}\nSessions: {}\n",
                p.steps
                    .iter()
                    .map(step_text)
                    .collect::<Vec<_>>()
                    .join(" -> "),
                p.support()
            );
            for o in p.occurrences.iter().take(5) {
                for msg in sessions[o.session].messages.iter().take(2) {
                    let cut: String = msg.chars().take(500).collect();
                    ev.push_str(&format!("User: {}\n", redactor.redact(&cut)));
                }
            }
            match m.write(&skill, &ev).await {
                Ok(written) => {
                    md = written;
                    prose = "model";
                }
                Err(why) => model_refused = Some(why),
            }
        }
        let evidence = Evidence {
            sessions: session_ids(p),
            calls: p
                .occurrences
                .iter()
                .map(|o| {
                    sessions[o.session].calls[o.start..o.start + p.steps.len()]
                        .iter()
                        .map(|c| c.call_id.clone())
                        .collect()
                })
                .collect(),
            support: p.support(),
        };
        let checked = skill
            .check_complete()
            .map_err(|e| e.to_string())
            .and_then(|()| {
                let bytes = md.clone().into_bytes();
                Bundle::from_files(
                    vec![BundleFile {
                        path: BundlePath::parse("SKILL.md").map_err(|e| e.to_string())?,
                        digest: Digest::of(&bytes),
                        bytes: bytes.into(),
                        executable: false,
                    }],
                    &d.runtime.store.limits,
                )
                .map_err(|e| e.to_string())
            });
        let bundle = match checked {
            Ok(b) => b,
            Err(e) => {
                reject(&mut report, p, "invalid", e);
                continue;
            }
        };
        let mut learned = Learned {
            name: name.to_string(),
            rev: None,
            status: "dry_run",
            steps: p.steps.iter().map(step_text).collect(),
            capabilities: classes,
            evidence,
            visible: a.config.skills.contains(name.as_str()),
            prose,
            model_refused,
            skill_md: md,
        };
        if !opts.dry_run {
            let req = PutRequest {
                scope: own_scope.clone(),
                bundle,
                author: Author::AgentDreaming(agent.clone()),
                message: format!(
                    "learned by dreaming from {} sessions: {}",
                    p.support(),
                    learned.evidence.sessions.join(", ")
                ),
                expect_rev: Some(0),
                signature: None,
            };
            let pending = a.config.policies.review_agent_revisions;
            let res = if pending {
                d.runtime.store.put_pending(req).await
            } else {
                d.runtime.store.put(req).await
            };
            match res {
                Ok(o) => {
                    learned.rev = Some(o.rev);
                    learned.status = if o.kind == WriteKind::Pending || pending {
                        "pending"
                    } else {
                        "active"
                    };
                }
                Err(e) => {
                    reject(&mut report, p, "invalid", e.to_string());
                    continue;
                }
            }
        }
        report.created.push(learned);
    }
    if !opts.dry_run {
        let mut data = serde_json::to_value(&report).unwrap_or_default();
        // The event keeps the report, not the skills' text (the revisions hold it).
        if let Some(created) = data.get_mut("created").and_then(|c| c.as_array_mut()) {
            for c in created.iter_mut().filter_map(|c| c.as_object_mut()) {
                c.remove("skill_md");
            }
        }
        d.runtime
            .store
            .append_event(&NewEvent {
                kind: skillbase_store::EventKind::Dream,
                agent: Some(agent.to_string()),
                actor: Some(opts.actor.to_string()),
                data,
                ..NewEvent::default()
            })
            .await?;
    }
    Ok(report)
}

impl Dispatcher {
    /// The engine's `[dreaming]` settings, when it has them.
    pub fn dreaming_settings(&self) -> Option<Arc<DreamSettings>> {
        self.dreaming.get().cloned()
    }

    /// Dream for `agent` (see [`crate::dream`]).
    pub async fn dream(
        &self,
        agent: &AgentName,
        opts: &DreamOptions,
    ) -> Result<DreamReport, RuntimeError> {
        dream(self, agent, opts).await
    }
}
