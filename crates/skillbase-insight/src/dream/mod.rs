//! Dreaming: skills captured from what an agent's sessions did.
//!
//! A dream reads the agent's recorded sessions (successful calls, and the users' messages when
//! the agent records conversations or a transcript was imported), finds procedures that recur
//! across sessions ([`mine`]), drops those an existing skill already covers and those that reach
//! outside the agent's envelope (a tool class it is not granted: a dream never grants itself
//! reach), and writes each remaining one as a skill in the agent's own scope through the
//! engine's one write path ([`Engine::writer`]), authored `agent:<id>/dreaming` — active, or
//! pending when the agent's `review_agent_revisions` says so.
//! Every dream writes a report (returned, and recorded as a `dream` event) with each created
//! skill's evidence (sessions, call ids, support) and every rejected candidate with why.

pub mod draft;
pub mod mine;
pub mod model;

use mine::{LoggedCall, MineOptions, Pattern, SessionLog};
use serde::Serialize;
use skillbase_format::{Bundle, BundleFile, BundlePath, Digest, SkillDraft, SkillName};
use skillbase_runtime::event::Event;
use skillbase_runtime::{Engine, Redactor, RuntimeError, WriteMode};
use skillbase_store::{
    Agent, AgentName, Author, EventRecord, NewEvent, PutRequest, Scope, Store, WriteKind,
};
use std::collections::{BTreeMap, HashSet};
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

/// One event a dream takes from a session.
enum Item {
    Call(LoggedCall),
    /// A call that ran apart (slow, or run by the harness): a step where it started, once
    /// its `call_finished` event says it was done.
    Started(LoggedCall),
    Message(String),
}

/// The event kinds a dream reads, in the order it reads them.
const KINDS_READ: [&str; 5] = [
    "tool_called",
    "transcript_call",
    "user_message",
    "call_started",
    "call_finished",
];

/// The events a dream has read so far, before they are grouped by session.
#[derive(Default)]
struct Gathered {
    /// (event id, session, what)
    items: Vec<(i64, String, Item)>,
    /// The calls that ran apart and finished done, by call id.
    finished_done: HashSet<String>,
}

impl Gathered {
    /// Read the agent's events of `kind` at or after `since`, newest first, page by page, up
    /// to the newest [`MAX_EVENTS_READ`] of them (the sessions are put back in event order
    /// after).
    async fn read_kind(
        &mut self,
        store: &Store,
        agent: &AgentName,
        kind: &str,
        since: Option<i64>,
        skip: &[&str],
    ) -> Result<(), RuntimeError> {
        let mut before = None;
        let mut read = 0usize;
        loop {
            let page = store
                .recent_events_before(agent.as_str(), kind, before, 10_000)
                .await?;
            let Some(last) = page.last() else { break };
            before = Some(last.id);
            // Ids grow with time, give or take servers' clocks: a page all older than `since`
            // ends the read.
            if since.is_some_and(|t| page.iter().all(|e| e.at < t)) {
                break;
            }
            for e in page {
                if since.is_some_and(|t| e.at < t) {
                    continue;
                }
                if read == MAX_EVENTS_READ {
                    tracing::warn!(%agent, kind, "dream: read the newest {MAX_EVENTS_READ} events of this kind only");
                    return Ok(());
                }
                read += 1;
                self.take(&e, skip);
            }
        }
        Ok(())
    }

    /// Take one event, read through its type, unless it has no session or is not a step or a
    /// message the miner uses.
    fn take(&mut self, e: &EventRecord, skip: &[&str]) {
        let Some(session) = e.session.clone() else {
            return;
        };
        let event = Event::read(e);
        if let Event::CallFinished(f) = &event {
            if f.status() == Some("done") {
                self.finished_done.insert(f.call_id.clone());
            }
            return;
        }
        if let Some(item) = item_of(event, skip) {
            self.items.push((e.id, session, item));
        }
    }

    /// The sessions, each with its calls and messages in event order (a call that ran apart
    /// only once it finished done).
    fn into_sessions(mut self) -> Vec<SessionLog> {
        self.items.sort_by_key(|(id, ..)| *id);
        let mut by_session: BTreeMap<String, SessionLog> = BTreeMap::new();
        for (_, session, item) in self.items {
            let log = by_session
                .entry(session.clone())
                .or_insert_with(|| SessionLog {
                    session,
                    ..SessionLog::default()
                });
            match item {
                Item::Call(c) => log.calls.push(c),
                Item::Started(c) if self.finished_done.contains(&c.call_id) => log.calls.push(c),
                Item::Started(_) => {}
                Item::Message(m) => log.messages.push(m),
            }
        }
        by_session.into_values().collect()
    }
}

/// What an event (not `call_finished`) gives the miner: the user's message, or a successful
/// call of a tool not in `skip`.
fn item_of(event: Event, skip: &[&str]) -> Option<Item> {
    let (call_id, tool, arguments, started) = match event {
        Event::UserMessage(m) => return Some(Item::Message(m.message)),
        Event::ToolCalled(c) if c.ok => (c.call_id, c.tool, c.arguments, false),
        Event::TranscriptCall(c) if c.ok => (c.call_id, c.tool, c.arguments, false),
        Event::CallStarted(c) => (c.call_id, c.tool, c.arguments, true),
        _ => return None,
    };
    if skip.contains(&tool.as_str()) {
        return None;
    }
    let call = LoggedCall {
        call_id,
        tool,
        arguments,
    };
    Some(if started {
        Item::Started(call)
    } else {
        Item::Call(call)
    })
}

/// Read the agent's sessions as the miner takes them: successful calls (`tool_called` with
/// `ok`, calls that ran apart — `call_started` — whose `call_finished` says done, and imported
/// `transcript_call`s) without the activation and authoring built-ins, and
/// the users' messages (`user_message`), each in event order.
async fn sessions_of(
    engine: &Engine,
    agent: &AgentName,
    since: Option<i64>,
) -> Result<Vec<SessionLog>, RuntimeError> {
    use skillbase_runtime::{ACTIVATION_CLASS, AUTHORING_CLASS};
    let skip: Vec<&str> = skillbase_runtime::builtin_tools()
        .filter(|(_, class)| matches!(*class, ACTIVATION_CLASS | AUTHORING_CLASS))
        .map(|(name, _)| name)
        .collect();
    let mut gathered = Gathered::default();
    for kind in KINDS_READ {
        gathered
            .read_kind(engine.store(), agent, kind, since, &skip)
            .await?;
    }
    Ok(gathered.into_sessions())
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

/// Dream for `agent` over `engine`'s events (see the module documentation); the events recorded
/// so far are stored first, so the dream sees them.
pub async fn run(
    engine: &Engine,
    agent: &AgentName,
    opts: &DreamOptions,
) -> Result<DreamReport, RuntimeError> {
    engine.flush().await;
    let a = engine
        .store()
        .agent_cached(agent)
        .ok_or_else(|| RuntimeError::UnknownAgent(agent.to_string()))?;
    let model = match &opts.model {
        Some(m) => Some(m.clone()),
        None => configured_model(engine)?,
    };
    let sessions = sessions_of(engine, agent, opts.since).await?;
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
    revisions_since_last_dream(engine, agent, &mut report).await?;
    let pass = Pass {
        engine,
        agent,
        a: &a,
        sessions: &sessions,
        min_support,
        dry_run: opts.dry_run,
        model,
        visible: skillbase_runtime::visible(&a, &engine.store().index()),
        own_scope: Scope::Agent(agent.clone()),
    };
    pass.reject_set_aside(&mined, &mut report);
    for p in &mined.patterns {
        match pass.learn(p, &report.created).await {
            Ok(learned) => report.created.push(learned),
            Err((reason, detail)) => pass.reject(&mut report, p, reason, detail),
        }
    }
    if !opts.dry_run {
        record_dream(engine, agent, &opts.actor, &report).await?;
    }
    Ok(report)
}

/// The model of the engine's `[dreaming.model]`, made with its vault, if it has one.
fn configured_model(engine: &Engine) -> Result<Option<Arc<model::ProseModel>>, RuntimeError> {
    let Some(config) = engine.dreaming().and_then(|c| c.model.clone()) else {
        return Ok(None);
    };
    model::ProseModel::new(config, engine.vault().cloned())
        .map(|m| Some(Arc::new(m)))
        .map_err(RuntimeError::Invalid)
}

/// Fill in what happened to the agent's revisions since its previous dream: the revisions
/// drift reverted, the candidates its runs promoted or rejected, and the candidates staged now.
async fn revisions_since_last_dream(
    engine: &Engine,
    agent: &AgentName,
    report: &mut DreamReport,
) -> Result<(), RuntimeError> {
    let store = engine.store();
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
        let Event::DriftReverted(d) = Event::read(&e) else {
            continue;
        };
        report.drift_reverted.push(DriftRevert {
            skill: e.skill.clone().unwrap_or_default(),
            from: d.from,
            to: d.to,
            drift: d.drift,
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
            let Event::CandidateSettled(_, c) = Event::read(&e) else {
                continue;
            };
            report.candidates.push(CandidateState {
                skill: e.skill.clone().unwrap_or_default(),
                rev: e.rev.unwrap_or_default(),
                state: if kind == "candidate_promoted" {
                    "promoted"
                } else {
                    "rejected"
                },
                percent: c.percent,
                min_runs: c.min_runs,
                reason: c.reason,
            });
        }
    }
    report.candidates.extend(staged_candidates(engine, agent));
    Ok(())
}

/// The candidate revisions staged now in the agent's view.
fn staged_candidates(engine: &Engine, agent: &AgentName) -> Vec<CandidateState> {
    let Ok(view) = engine.view(agent) else {
        return Vec::new();
    };
    view.skills
        .iter()
        .filter_map(|s| {
            let (c, _) = s.entry.candidate.as_ref()?;
            Some(CandidateState {
                skill: s.entry.name.clone(),
                rev: c.rev,
                state: "staged",
                percent: c.percent,
                min_runs: c.min_runs,
                reason: String::new(),
            })
        })
        .collect()
}

/// Record the dream as a `dream` event: the report, without the skills' text.
async fn record_dream(
    engine: &Engine,
    agent: &AgentName,
    actor: &Author,
    report: &DreamReport,
) -> Result<(), RuntimeError> {
    let mut data = serde_json::to_value(report).unwrap_or_default();
    // The event keeps the report, not the skills' text (the revisions hold it).
    if let Some(created) = data.get_mut("created").and_then(|c| c.as_array_mut()) {
        for c in created.iter_mut().filter_map(|c| c.as_object_mut()) {
            c.remove("skill_md");
        }
    }
    engine
        .store()
        .append_event(&NewEvent {
            kind: skillbase_store::EventKind::Dream,
            agent: Some(agent.to_string()),
            actor: Some(actor.to_string()),
            data,
            ..NewEvent::default()
        })
        .await?;
    Ok(())
}

/// Why a candidate is not written: the reason class (see [`Rejected::reason`]) and the details.
type Refusal = (&'static str, String);

/// What one dream judges each mined procedure against.
struct Pass<'a> {
    engine: &'a Engine,
    agent: &'a AgentName,
    a: &'a Agent,
    /// Every session mined (the patterns' occurrences index it).
    sessions: &'a [SessionLog],
    /// The support a procedure needs.
    min_support: usize,
    dry_run: bool,
    /// The model that writes the prose, if any.
    model: Option<Arc<model::ProseModel>>,
    /// The skills the agent sees (a procedure one of them covers is not written).
    visible: Vec<Arc<skillbase_store::SkillEntry>>,
    /// The agent's own scope, where learned skills are written.
    own_scope: Scope,
}

impl Pass<'_> {
    /// The sessions `p` was seen in.
    fn session_ids(&self, p: &Pattern) -> Vec<String> {
        p.occurrences
            .iter()
            .map(|o| self.sessions[o.session].session.clone())
            .collect()
    }

    /// List `p` as rejected, unless [`MAX_REJECTED`] are listed for `reason` already.
    fn reject(&self, report: &mut DreamReport, p: &Pattern, reason: &'static str, detail: String) {
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
                sessions: self.session_ids(p),
            });
        }
    }

    /// Report the frequent procedures the miner set aside: those inside a longer one
    /// (`part_of`) and those chance alone explains (`chance`).
    fn reject_set_aside(&self, mined: &mine::Mined, report: &mut DreamReport) {
        for (p, k) in &mined.contained {
            if p.support() >= self.min_support {
                let of = mined.patterns[*k]
                    .steps
                    .iter()
                    .map(step_text)
                    .collect::<Vec<_>>();
                self.reject(report, p, "part_of", format!("inside {}", of.join(" → ")));
            }
        }
        for (p, expected) in &mined.chance {
            if p.support() >= self.min_support {
                self.reject(
                    report,
                    p,
                    "chance",
                    format!(
                        "seen in {} sessions; chance alone gives about {expected:.1}",
                        p.support()
                    ),
                );
            }
        }
    }

    /// Turn one mined procedure into a skill: check it may be one, name it, draft it (the
    /// model rewriting the prose, when there is one), and write it unless this is a dry run.
    /// `created` holds the skills this dream wrote so far (their names are taken).
    async fn learn(&self, p: &Pattern, created: &[Learned]) -> Result<Learned, Refusal> {
        if p.support() < self.min_support {
            return Err((
                "too_rare",
                format!(
                    "seen in {} sessions; {} needed",
                    p.support(),
                    self.min_support
                ),
            ));
        }
        let tools: Vec<&str> = {
            let mut t: Vec<&str> = p.steps.iter().map(|s| s.tool.as_str()).collect();
            t.dedup();
            t
        };
        let classes = self.admit(&tools)?;
        let supporting: Vec<usize> = p.occurrences.iter().map(|o| o.session).collect();
        let phrases = draft::keyphrases(self.sessions, &supporting, &tools, 3);
        let base = phrases
            .first()
            .and_then(|k| draft::slug(k))
            .or_else(|| draft::slug(&tools.join(" then ")))
            .or_else(|| draft::slug("learned procedure"));
        let Some(base) = base else {
            return Err(("invalid", "no usable name".into()));
        };
        let name = self.free_name(base, created);
        let skill = draft::draft(&draft::DraftInput {
            sessions: self.sessions,
            pattern: p,
            name: name.clone(),
            phrases: &phrases,
            classes: classes.clone(),
        });
        let (md, prose, model_refused) = self.prose(p, &skill).await;
        let evidence = self.evidence(p);
        let bundle = self.bundle(&skill, &md).map_err(|e| ("invalid", e))?;
        let mut learned = Learned {
            name: name.to_string(),
            rev: None,
            status: "dry_run",
            steps: p.steps.iter().map(step_text).collect(),
            capabilities: classes,
            evidence,
            visible: self.a.config.skills.contains(name.as_str()),
            prose,
            model_refused,
            skill_md: md,
        };
        if !self.dry_run {
            self.write(p, bundle, &mut learned).await?;
        }
        Ok(learned)
    }

    /// The tool classes of a procedure calling `tools`, when it may become a skill: every
    /// tool is still configured, every class is granted to the agent, and no skill it sees
    /// covers it already.
    fn admit(&self, tools: &[&str]) -> Result<Vec<String>, Refusal> {
        // Each tool's class, from what is configured now.
        let mut classes: Vec<String> = Vec::new();
        let mut unknown: Vec<&str> = Vec::new();
        for t in tools {
            match self.engine.tool_class(t) {
                Some(c) if !classes.contains(&c) => classes.push(c),
                Some(_) => {}
                None if !unknown.contains(t) => unknown.push(t),
                None => {}
            }
        }
        if !unknown.is_empty() {
            let names: Vec<String> = unknown.iter().map(|t| format!("`{t}`")).collect();
            let detail = match names.as_slice() {
                [one] => format!("{one} is not a configured tool any more"),
                many => format!("{} are not configured tools any more", many.join(", ")),
            };
            return Err(("unknown_tool", detail));
        }
        if let Some(c) = classes
            .iter()
            .find(|c| !skillbase_runtime::class_granted(self.a, c))
        {
            return Err((
                "outside_envelope",
                format!(
                    "tool class `{c}` is not granted to agent {}; a dream never widens the envelope",
                    self.agent
                ),
            ));
        }
        if let Some(e) = self.visible.iter().find(|e| covers(e, tools, &classes)) {
            return Err(("already_covered", format!("skill `{}` covers it", e.name)));
        }
        Ok(classes)
    }

    /// `base`, or `base-2`, `base-3`...: a name nobody visible to the agent (nor a skill
    /// written in this dream, `created`) holds.
    fn free_name(&self, base: SkillName, created: &[Learned]) -> SkillName {
        let index = self.engine.store().index();
        let taken = |n: &str| {
            index.resolve(self.agent, n).is_some()
                || index.get(&self.own_scope, n).is_some()
                || created.iter().any(|l| l.name == n)
        };
        let mut name = base.clone();
        let mut n = 2;
        while taken(name.as_str()) {
            let suffix = format!("-{n}");
            let stem: String = base.as_str().chars().take(64 - suffix.len()).collect();
            match SkillName::parse(&format!("{}{suffix}", stem.trim_end_matches('-'))) {
                Ok(x) => name = x,
                Err(_) => break,
            }
            n += 1;
        }
        name
    }

    /// The SKILL.md to write, who wrote its prose (`draft` or `model`), and why the model's
    /// answer was not used, when it was asked and not used.
    async fn prose(
        &self,
        p: &Pattern,
        skill: &SkillDraft,
    ) -> (String, &'static str, Option<String>) {
        let md = skill.to_skill_md();
        let Some(m) = &self.model else {
            return (md, "draft", None);
        };
        let redactor = self
            .engine
            .vault()
            .map(|v| v.redactor())
            .unwrap_or_else(Redactor::empty);
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
            for msg in self.sessions[o.session].messages.iter().take(2) {
                let cut: String = msg.chars().take(500).collect();
                ev.push_str(&format!("User: {}\n", redactor.redact(&cut)));
            }
        }
        match m.write(skill, &ev).await {
            Ok(written) => (written, "model", None),
            Err(why) => (md, "draft", Some(why)),
        }
    }

    /// Where `p` comes from: its sessions, the call ids of each occurrence, its support.
    fn evidence(&self, p: &Pattern) -> Evidence {
        Evidence {
            sessions: self.session_ids(p),
            calls: p
                .occurrences
                .iter()
                .map(|o| {
                    self.sessions[o.session].calls[o.start..o.start + p.steps.len()]
                        .iter()
                        .map(|c| c.call_id.clone())
                        .collect()
                })
                .collect(),
            support: p.support(),
        }
    }

    /// The skill's bundle (its SKILL.md `md`), once the draft is complete and the bundle
    /// within the store's limits.
    fn bundle(&self, skill: &SkillDraft, md: &str) -> Result<Bundle, String> {
        skill.check_complete().map_err(|e| e.to_string())?;
        let bytes = md.to_owned().into_bytes();
        Bundle::from_files(
            vec![BundleFile {
                path: BundlePath::parse("SKILL.md").map_err(|e| e.to_string())?,
                digest: Digest::of(&bytes),
                bytes: bytes.into(),
                executable: false,
            }],
            &self.engine.store().limits,
        )
        .map_err(|e| e.to_string())
    }

    /// Write the learned skill in the agent's scope (pending when the agent's revisions are
    /// reviewed), and note its revision and status in `learned`.
    async fn write(
        &self,
        p: &Pattern,
        bundle: Bundle,
        learned: &mut Learned,
    ) -> Result<(), Refusal> {
        let req = PutRequest {
            scope: self.own_scope.clone(),
            bundle,
            author: Author::AgentDreaming(self.agent.clone()),
            message: format!(
                "learned by dreaming from {} sessions: {}",
                p.support(),
                learned.evidence.sessions.join(", ")
            ),
            expect_rev: Some(0),
            signature: None,
        };
        let pending = self.a.config.policies.review_agent_revisions;
        let mode = if pending {
            WriteMode::Pending
        } else {
            WriteMode::Active
        };
        let o = self
            .engine
            .writer()
            .put_as(req, mode)
            .await
            .map_err(|e| ("invalid", e.to_string()))?;
        learned.rev = Some(o.rev);
        learned.status = if o.kind == WriteKind::Pending || pending {
            "pending"
        } else {
            "active"
        };
        Ok(())
    }
}
