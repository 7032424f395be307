//! The runtime's events, typed: what each kind's `data` holds. The runtime writes them from
//! these types ([`Event::to_new`], the one place their JSON is made) and every reader — the
//! studio, REST, dreaming — reads them back through [`Event::read`], never by string keys.
//!
//! | kind | payload |
//! | --- | --- |
//! | `user_message` | [`UserMessage`] |
//! | `tool_called` | [`ToolCalled`] |
//! | `call_refused` | [`CallRefused`] |
//! | `call_started` | [`CallStarted`] |
//! | `call_finished` | [`CallFinished`] |
//! | `transcript_call` | [`TranscriptCall`] |
//! | `skill_activated` | [`SkillActivated`] |
//! | `turn` | [`TurnRecord`] (read side; written from the turn's report) |
//! | `drift_reverted` | [`DriftReverted`] |
//! | `candidate_promoted`, `candidate_rejected` | [`CandidateSettled`] |
//! | `retired`, `restored`, `disabled`, `enabled` | [`StatusChanged`] (read side; the store writes it) |
//! | `seed_diverged` | `skillbase_store::events::SeedDiverged` |
//!
//! A payload that does not read as its kind's (written by an older or newer build, or damaged)
//! is [`Event::Other`]: readers skip it rather than fail.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use skillbase_store::{EventKind, EventRecord, NewEvent};

/// A user's message (a turn's, or a transcript's): redacted, cut at the recorded maximum.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UserMessage {
    /// The message, redacted.
    pub message: String,
    /// `turn` or `transcript`.
    pub source: String,
    /// Whether it was cut.
    pub cut: bool,
}

/// A call that ran and finished within the call (`ok`), or failed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolCalled {
    /// The call's id.
    pub call_id: String,
    /// The wire name called.
    pub tool: String,
    /// The arguments, redacted.
    #[serde(default)]
    pub arguments: Value,
    /// Whether it succeeded.
    pub ok: bool,
    /// A success's result tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u32>,
    /// Whether a success's result was cut to the agent's `max_result_tokens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncated: Option<bool>,
    /// A failure's message, redacted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// A failure's inner refusal rule (`null` when the tool failed on its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<Option<String>>,
}

/// A call refused before it ran.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CallRefused {
    /// The call's id.
    pub call_id: String,
    /// The wire name called.
    pub tool: String,
    /// The refusal rule.
    pub rule: String,
    /// What the caller was told, redacted.
    pub message: String,
    /// The arguments, redacted.
    #[serde(default)]
    pub arguments: Value,
}

/// A detached call started, or a harness-run call authorized (`runs: "harness"`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CallStarted {
    /// The call's id.
    pub call_id: String,
    /// The wire name called.
    pub tool: String,
    /// The arguments, redacted.
    #[serde(default)]
    pub arguments: Value,
    /// `harness` for a call the harness runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runs: Option<String>,
}

/// A started call's outcome.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CallFinished {
    /// The call's id.
    pub call_id: String,
    /// The outcome, as the call's answer serializes it (`status`: done, failed, refused...).
    pub outcome: Value,
}

impl CallFinished {
    /// The outcome's `status` (`done`, `failed`, ...), when it has one.
    pub fn status(&self) -> Option<&str> {
        self.outcome.get("status").and_then(Value::as_str)
    }
}

/// A call of an imported transcript (successful: only those are kept).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TranscriptCall {
    /// `transcript:<the transcript's id>`.
    pub call_id: String,
    /// The tool called.
    pub tool: String,
    /// The arguments, redacted.
    #[serde(default)]
    pub arguments: Value,
    /// Always true (failed calls are not imported).
    pub ok: bool,
}

/// A skill that reached the prompt (the event's `skill` and `rev` name it).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SkillActivated {
    /// Why: `eager`, `trigger: …`, `companion of …`, `load`...
    pub reason: String,
    /// Tokens of its body.
    pub tokens: u32,
    /// `context` (a turn placed it) or `load_skill` (the model or the harness loaded it).
    pub source: String,
}

/// The `turn` event as stored: the turn's report with its catalog's omissions summarized, and
/// the index generation and agent version the view was built from (`Dispatcher::turn` writes
/// it from the [`crate::TurnReport`]; this is its read side). Every part defaults, so an event
/// of an older build reads.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct TurnRecord {
    /// The agent.
    pub agent: String,
    /// The skills placed in the prompt.
    pub activated: Vec<ActivatedRecord>,
    /// Skills evicted by the context budget.
    pub evicted: Vec<Named>,
    /// Triggers suppressed.
    pub suppressed: Vec<Named>,
    /// Skills offered with unmet `requires:`.
    pub unmet_requires: Vec<Named>,
    /// Skills withheld.
    pub withheld_skills: Vec<Named>,
    /// Tools withheld (class not granted).
    pub withheld_tools: Vec<Named>,
    /// Warnings (files not written...).
    pub warnings: Vec<Named>,
    /// The catalog.
    pub catalog: CatalogRecord,
    /// Tokens by part of the context.
    pub tokens: TokensRecord,
    /// The index generation the view was built from.
    pub generation: Option<u64>,
    /// The agent's configuration version the view was built from.
    pub agent_version: Option<i64>,
}

/// A skill that reached the prompt this turn.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ActivatedRecord {
    /// The skill.
    pub name: String,
    /// Why (`eager`, `trigger:<phrase>`, ...).
    pub reason: String,
    /// Its revision.
    pub rev: i64,
    /// Tokens of its body.
    pub tokens: u64,
}

/// A skill or tool named with a reason.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Named {
    /// Its name.
    pub name: String,
    /// Why.
    pub reason: String,
    /// Its relevance rank, when ranked.
    pub rank: Option<u64>,
}

/// Tokens of each part of the context.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct TokensRecord {
    /// Eager bodies.
    pub eager: u64,
    /// Bodies injected this turn.
    pub injected: u64,
    /// The catalog.
    pub catalog: u64,
    /// The tools' definitions.
    pub tools: u64,
    /// All of it.
    pub total: u64,
}

/// The catalog of a turn.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct CatalogRecord {
    /// Its budget, in tokens.
    pub budget: u64,
    /// Its tokens.
    pub tokens: u64,
    /// Whether it was ranked (it overflowed its budget).
    pub ranked: bool,
    /// The ranking stages, when ranked.
    pub stages: Option<String>,
    /// The entries in full (absent from a ranked catalog's event: see `shown`).
    pub full: Option<Vec<String>>,
    /// A ranked catalog's entries in full, with their ranks.
    pub shown: Vec<ShownRecord>,
    /// The entries listed by name only.
    pub name_only: Omitted,
    /// The entries left out.
    pub omitted: Omitted,
}

/// A ranked catalog's entry in full.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ShownRecord {
    /// The skill.
    pub name: String,
    /// Its relevance rank.
    pub rank: u64,
    /// The stage that placed it (`lexical`, `semantic`, `trigger`).
    pub stage: String,
    /// Its calibrated confidence, 0 to 1 (absent from events recorded before it was).
    pub confidence: Option<f64>,
}

/// A catalog's omissions: summarized (an event's form), or listed (a report asked in full).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum Omitted {
    /// `{"count", "by_reason": [...]}`.
    Summary {
        /// How many.
        #[serde(default)]
        count: u64,
        /// How many for each reason.
        #[serde(default)]
        by_reason: Vec<ReasonGroup>,
    },
    /// Every entry.
    List(Vec<Named>),
}

impl Default for Omitted {
    fn default() -> Omitted {
        Omitted::List(Vec::new())
    }
}

impl Omitted {
    /// How many.
    pub fn count(&self) -> u64 {
        match self {
            Omitted::Summary { count, .. } => *count,
            Omitted::List(l) => l.len() as u64,
        }
    }

    /// How many for each reason, in order of first appearance (a list is grouped here, with
    /// its names).
    pub fn by_reason(&self) -> Vec<ReasonGroup> {
        match self {
            Omitted::Summary { by_reason, .. } => by_reason.clone(),
            Omitted::List(l) => {
                let mut groups: Vec<ReasonGroup> = Vec::new();
                for o in l {
                    match groups.iter_mut().find(|g| g.reason == o.reason) {
                        Some(g) => {
                            g.count += 1;
                            g.names.get_or_insert_with(Vec::new).push(o.name.clone());
                        }
                        None => groups.push(ReasonGroup {
                            reason: o.reason.clone(),
                            count: 1,
                            ranks: None,
                            names: Some(vec![o.name.clone()]),
                        }),
                    }
                }
                groups
            }
        }
    }
}

/// Omissions of one reason.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ReasonGroup {
    /// The reason.
    pub reason: String,
    /// How many.
    pub count: u64,
    /// Their relevance ranks, as ranges (`3-40, 52`).
    pub ranks: Option<String>,
    /// Their names (given for what reached the prompt by name).
    pub names: Option<Vec<String>>,
}

impl TurnRecord {
    /// A `turn` event's (or a serialized report's) data, read; `None` when it is not one.
    pub fn read(data: &Value) -> Option<TurnRecord> {
        data.is_object()
            .then(|| TurnRecord::deserialize(data).ok())
            .flatten()
    }
}

impl SkillActivated {
    /// The `skill_activated` event of activation `a` (its skill in `scope`) in `agent`'s
    /// `session`, placed by a turn (`context`) or loaded (`load_skill`).
    pub fn event(
        a: &skillbase_route::turn::Activation,
        scope: Option<String>,
        agent: &str,
        session: &str,
        source: &str,
    ) -> NewEvent {
        let payload = Event::SkillActivated(SkillActivated {
            reason: a.reason.clone(),
            tokens: a.tokens,
            source: source.to_owned(),
        });
        NewEvent {
            scope,
            skill: Some(a.name.clone()),
            rev: Some(a.rev),
            ..payload.to_new(agent, session)
        }
    }
}

/// A drifting revision reverted to the last good one (`drift_reverted`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DriftReverted {
    /// The revision that drifted.
    pub from: i64,
    /// The revision re-activated.
    pub to: i64,
    /// Why it counts as drift.
    pub drift: String,
    /// The re-activated revision's ended runs.
    #[serde(default)]
    pub to_runs: RunCounts,
    /// The last run's note (redacted).
    #[serde(default)]
    pub last_note: String,
}

/// Ended runs, by outcome.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunCounts {
    /// Ended in success.
    pub success: i64,
    /// Ended in failure.
    pub failure: i64,
}

/// A staged candidate revision settled (`candidate_promoted`, `candidate_rejected`): the
/// verdict's reason and evidence.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CandidateSettled {
    /// Why it was promoted or rejected.
    pub reason: String,
    /// The candidate's runs since it was staged.
    pub candidate: RunTally,
    /// The active revision's runs over the same time.
    pub active: RunTally,
    /// The active revision then.
    pub active_rev: i64,
    /// The ended runs of each the verdict needed.
    pub min_runs: u32,
    /// The share of runs the candidate was given, in percent.
    pub percent: u32,
}

/// Runs counted for a verdict.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunTally {
    /// Ended runs.
    pub runs: i64,
    /// Successes.
    pub success: i64,
    /// Failures.
    pub failure: i64,
    /// Failures over runs (`null` without runs).
    pub failure_rate: Option<f64>,
}

impl RunTally {
    /// The tally of `success` and `failure` ended runs.
    pub fn of(success: i64, failure: i64) -> RunTally {
        let runs = success + failure;
        RunTally {
            runs,
            success,
            failure,
            failure_rate: (runs > 0).then(|| failure as f64 / runs as f64),
        }
    }
}

/// A skill's status changed (`retired`, `restored`, `disabled`, `enabled`): from, to, and the
/// reason given (a drift's, when the runtime disabled it).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct StatusChanged {
    /// The status before.
    pub from: Option<String>,
    /// The status after.
    pub to: Option<String>,
    /// Why.
    pub reason: Option<StatusReason>,
}

/// Why a status changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum StatusReason {
    /// The runtime disabled a drifting revision.
    Drift(DriftDisabled),
    /// Anything else given.
    Other(Value),
}

/// The reason of a revision disabled for drift.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DriftDisabled {
    /// Why it counts as drift.
    pub drift: String,
    /// The last run's note (redacted).
    #[serde(default)]
    pub last_note: String,
}

impl StatusChanged {
    /// A status event's data, read.
    pub fn read(data: &Value) -> StatusChanged {
        StatusChanged::deserialize(data).unwrap_or_default()
    }

    /// The drift that disabled the skill, if that is why.
    pub fn drift(&self) -> Option<&str> {
        match &self.reason {
            Some(StatusReason::Drift(d)) => Some(&d.drift),
            _ => None,
        }
    }
}

/// One event of the conversation, typed.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// `drift_reverted`.
    DriftReverted(DriftReverted),
    /// `candidate_promoted` (`true`) or `candidate_rejected`.
    CandidateSettled(bool, CandidateSettled),
    /// `user_message`.
    UserMessage(UserMessage),
    /// `tool_called`.
    ToolCalled(ToolCalled),
    /// `call_refused`.
    CallRefused(CallRefused),
    /// `call_started`.
    CallStarted(CallStarted),
    /// `call_finished`.
    CallFinished(CallFinished),
    /// `transcript_call`.
    TranscriptCall(TranscriptCall),
    /// `skill_activated`.
    SkillActivated(SkillActivated),
    /// Any other kind, or a payload that does not read as its kind's.
    Other,
}

impl Event {
    /// The event's kind.
    pub fn kind(&self) -> Option<EventKind> {
        Some(match self {
            Event::DriftReverted(_) => EventKind::DriftReverted,
            Event::CandidateSettled(true, _) => EventKind::CandidatePromoted,
            Event::CandidateSettled(false, _) => EventKind::CandidateRejected,
            Event::UserMessage(_) => EventKind::UserMessage,
            Event::ToolCalled(_) => EventKind::ToolCalled,
            Event::CallRefused(_) => EventKind::CallRefused,
            Event::CallStarted(_) => EventKind::CallStarted,
            Event::CallFinished(_) => EventKind::CallFinished,
            Event::TranscriptCall(_) => EventKind::TranscriptCall,
            Event::SkillActivated(_) => EventKind::SkillActivated,
            Event::Other => return None,
        })
    }

    /// The payload as stored (the one place it is serialized).
    pub fn data(&self) -> Value {
        let v = match self {
            Event::DriftReverted(p) => serde_json::to_value(p),
            Event::CandidateSettled(_, p) => serde_json::to_value(p),
            Event::UserMessage(p) => serde_json::to_value(p),
            Event::ToolCalled(p) => serde_json::to_value(p),
            Event::CallRefused(p) => serde_json::to_value(p),
            Event::CallStarted(p) => serde_json::to_value(p),
            Event::CallFinished(p) => serde_json::to_value(p),
            Event::TranscriptCall(p) => serde_json::to_value(p),
            Event::SkillActivated(p) => serde_json::to_value(p),
            Event::Other => return Value::Null,
        };
        // Plain structs of strings, numbers and JSON values always serialize.
        v.unwrap_or_default()
    }

    /// The event to append: this payload, for `agent`'s `session`.
    pub fn to_new(&self, agent: &str, session: &str) -> NewEvent {
        NewEvent {
            kind: self.kind().unwrap_or(EventKind::Other("other".into())),
            agent: Some(agent.to_owned()),
            session: Some(session.to_owned()),
            data: self.data(),
            ..NewEvent::default()
        }
    }

    /// A stored event, read through its kind's type.
    pub fn read(e: &EventRecord) -> Event {
        fn de<T: for<'de> Deserialize<'de>>(v: &Value) -> Option<T> {
            T::deserialize(v).ok()
        }
        let d = &e.data;
        let typed = match e.kind.as_str() {
            "drift_reverted" => de(d).map(Event::DriftReverted),
            "candidate_promoted" => de(d).map(|p| Event::CandidateSettled(true, p)),
            "candidate_rejected" => de(d).map(|p| Event::CandidateSettled(false, p)),
            "user_message" => de(d).map(Event::UserMessage),
            "tool_called" => de(d).map(Event::ToolCalled),
            "call_refused" => de(d).map(Event::CallRefused),
            "call_started" => de(d).map(Event::CallStarted),
            "call_finished" => de(d).map(Event::CallFinished),
            "transcript_call" => de(d).map(Event::TranscriptCall),
            "skill_activated" => de(d).map(Event::SkillActivated),
            _ => None,
        };
        typed.unwrap_or(Event::Other)
    }

    /// The call id, for the call kinds.
    pub fn call_id(&self) -> Option<&str> {
        match self {
            Event::ToolCalled(p) => Some(&p.call_id),
            Event::CallRefused(p) => Some(&p.call_id),
            Event::CallStarted(p) => Some(&p.call_id),
            Event::CallFinished(p) => Some(&p.call_id),
            Event::TranscriptCall(p) => Some(&p.call_id),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn record(kind: &str, data: Value) -> EventRecord {
        EventRecord {
            id: 1,
            at: 0,
            kind: kind.into(),
            scope: None,
            skill: None,
            rev: None,
            agent: Some("a".into()),
            session: Some("s".into()),
            actor: None,
            data,
        }
    }

    #[test]
    fn payloads_are_the_json_written_before_and_read_back() {
        // The JSON each kind held when it was built by hand: same keys, same order.
        let cases = [
            (
                Event::ToolCalled(ToolCalled {
                    call_id: "c".into(),
                    tool: "t".into(),
                    arguments: json!({"x": 1}),
                    ok: false,
                    error: Some("boom".into()),
                    rule: Some(None),
                    ..ToolCalled::default()
                }),
                r#"{"call_id":"c","tool":"t","arguments":{"x":1},"ok":false,"error":"boom","rule":null}"#,
            ),
            (
                Event::ToolCalled(ToolCalled {
                    call_id: "c".into(),
                    tool: "t".into(),
                    arguments: json!({}),
                    ok: true,
                    tokens: Some(3),
                    truncated: Some(false),
                    ..ToolCalled::default()
                }),
                r#"{"call_id":"c","tool":"t","arguments":{},"ok":true,"tokens":3,"truncated":false}"#,
            ),
            (
                Event::CallRefused(CallRefused {
                    call_id: "c".into(),
                    tool: "t".into(),
                    rule: "not_offered".into(),
                    message: "m".into(),
                    arguments: json!({}),
                }),
                r#"{"call_id":"c","tool":"t","rule":"not_offered","message":"m","arguments":{}}"#,
            ),
            (
                Event::CallStarted(CallStarted {
                    call_id: "c".into(),
                    tool: "t".into(),
                    arguments: json!({}),
                    runs: Some("harness".into()),
                }),
                r#"{"call_id":"c","tool":"t","arguments":{},"runs":"harness"}"#,
            ),
            (
                Event::UserMessage(UserMessage {
                    message: "hi".into(),
                    source: "turn".into(),
                    cut: false,
                }),
                r#"{"message":"hi","source":"turn","cut":false}"#,
            ),
            (
                Event::DriftReverted(DriftReverted {
                    from: 3,
                    to: 2,
                    drift: "d".into(),
                    to_runs: RunCounts {
                        success: 4,
                        failure: 0,
                    },
                    last_note: "n".into(),
                }),
                r#"{"from":3,"to":2,"drift":"d","to_runs":{"success":4,"failure":0},"last_note":"n"}"#,
            ),
            (
                Event::CandidateSettled(
                    false,
                    CandidateSettled {
                        reason: "r".into(),
                        candidate: RunTally::of(1, 1),
                        active: RunTally::of(0, 0),
                        active_rev: 2,
                        min_runs: 10,
                        percent: 20,
                    },
                ),
                r#"{"reason":"r","candidate":{"runs":2,"success":1,"failure":1,"failure_rate":0.5},"active":{"runs":0,"success":0,"failure":0,"failure_rate":null},"active_rev":2,"min_runs":10,"percent":20}"#,
            ),
        ];
        for (event, text) in cases {
            assert_eq!(event.data().to_string(), text);
            let kind = event.kind().unwrap();
            let back = Event::read(&record(kind.as_str(), event.data()));
            // A null rule reads back as none: readers see no rule either way.
            match (&event, &back) {
                (Event::ToolCalled(a), Event::ToolCalled(b)) => {
                    assert_eq!(a.error, b.error);
                    assert_eq!(a.rule.clone().flatten(), b.rule.clone().flatten());
                }
                _ => assert_eq!(back, event),
            }
        }
    }

    #[test]
    fn a_turn_event_reads_back_through_its_type() {
        let data = json!({
            "agent": "a",
            "activated": [{"name": "s", "reason": "trigger:refund", "rev": 2, "tokens": 40}],
            "evicted": [],
            "catalog": {"budget": 100, "tokens": 90, "ranked": true, "full": [],
                "name_only": {"count": 3, "by_reason": [{"reason": "r", "count": 3, "ranks": "4-6", "names": ["x", "y", "z"]}]},
                "omitted": {"count": 0, "by_reason": []},
                "shown": [{"name": "s", "rank": 1, "stage": "lexical", "confidence": 0.8}], "stages": "lexical"},
            "tokens": {"eager": 1, "injected": 2, "catalog": 3, "tools": 4, "total": 10},
            "withheld_tools": [{"name": "t", "reason": "tool class not granted to this agent"}],
            "generation": 7, "agent_version": 3
        });
        let t = TurnRecord::read(&data).unwrap();
        assert_eq!(t.activated[0].reason, "trigger:refund");
        assert_eq!(t.catalog.name_only.count(), 3);
        assert_eq!(
            t.catalog.name_only.by_reason()[0].ranks.as_deref(),
            Some("4-6")
        );
        assert_eq!(t.catalog.shown[0].rank, 1);
        assert_eq!(t.catalog.shown[0].confidence, Some(0.8));
        assert_eq!((t.tokens.total, t.agent_version), (10, Some(3)));
        // A report asked in full lists its omissions: read as groups.
        let full = json!({"catalog": {"omitted": [{"name": "x", "reason": "r", "rank": 9}]}});
        let t = TurnRecord::read(&full).unwrap();
        assert_eq!(t.catalog.omitted.count(), 1);
        assert_eq!(
            t.catalog.omitted.by_reason()[0].names,
            Some(vec!["x".to_owned()])
        );
        assert_eq!(TurnRecord::read(&json!("not a turn")), None);
    }

    #[test]
    fn a_status_change_says_whether_drift_disabled_it() {
        let drift = json!({"from": "active", "to": "disabled", "reason": {"drift": "3 failed runs", "last_note": ""}});
        assert_eq!(StatusChanged::read(&drift).drift(), Some("3 failed runs"));
        let human = json!({"from": "active", "to": "disabled", "reason": "broken"});
        assert_eq!(StatusChanged::read(&human).drift(), None);
        assert_eq!(StatusChanged::read(&Value::Null).drift(), None);
    }

    #[test]
    fn a_payload_of_another_shape_is_other_not_a_failure() {
        assert_eq!(
            Event::read(&record("call_refused", json!({"tool": 3}))),
            Event::Other
        );
        assert_eq!(Event::read(&record("turn", json!({}))), Event::Other);
        assert_eq!(
            Event::read(&record("user_message", Value::Null)),
            Event::Other
        );
        let f = Event::read(&record(
            "call_finished",
            json!({"call_id": "c", "outcome": {"status": "done"}}),
        ));
        let Event::CallFinished(f) = f else {
            panic!("{f:?}")
        };
        assert_eq!(f.status(), Some("done"));
    }
}
