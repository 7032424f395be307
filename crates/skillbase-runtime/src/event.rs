//! The conversation's events, typed: what each kind's `data` holds. The runtime writes them from
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

/// One event of the conversation, typed.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
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
