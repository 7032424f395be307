//! A conversation that happened elsewhere, imported for learning: messages in the OpenAI chat
//! format (`system`, `user`, `assistant` with `tool_calls`, `tool` answering a call by id),
//! validated whole and bounded, then recorded in the session as `user_message` events (the
//! users' messages) and `transcript_call` events (the assistant's tool calls), redacted like
//! everything else. Nothing is recorded when any message is refused.

use crate::dispatch::Dispatcher;
use crate::event::{Event, TranscriptCall};
use serde::Deserialize;
use serde_json::Value;
use skillbase_store::AgentName;
use std::collections::HashSet;

/// Most messages in one import.
pub const MAX_MESSAGES: usize = 2000;
/// Longest message text, in bytes.
pub const MAX_TEXT: usize = 64 * 1024;
/// Most tool calls in one import.
pub const MAX_CALLS: usize = 5000;

/// The body of `POST /v1/sessions/{id}/transcript`.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Transcript {
    /// The messages, oldest first.
    #[cfg_attr(feature = "openapi", schema(min_items = 1, max_items = 2000))]
    pub messages: Vec<ChatMessage>,
}

/// One chat message.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ChatMessage {
    /// `system`, `user`, `assistant` or `tool`.
    #[cfg_attr(
        feature = "openapi",
        schema(pattern = "^(system|user|assistant|tool)$")
    )]
    pub role: String,
    /// Text, or a list of parts (`{"type": "text", "text": …}`); absent or null for an
    /// assistant message that only calls tools.
    #[serde(default)]
    pub content: Option<Content>,
    /// The assistant's tool calls.
    #[serde(default)]
    pub tool_calls: Option<Vec<ToolCall>>,
    /// For a `tool` message: the call it answers.
    #[serde(default)]
    pub tool_call_id: Option<String>,
    /// The participant's name (kept out of the record).
    #[serde(default)]
    pub name: Option<String>,
}

/// A message's content.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ChatContent))]
#[serde(untagged)]
pub enum Content {
    /// Plain text.
    Text(String),
    /// Parts; only text parts are read.
    Parts(Vec<Part>),
}

/// A content part.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ChatPart))]
#[serde(deny_unknown_fields)]
pub struct Part {
    /// `text` (other kinds are refused).
    #[serde(rename = "type")]
    pub kind: String,
    /// Its text.
    pub text: String,
}

/// One tool call of an assistant message.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ChatToolCall))]
#[serde(deny_unknown_fields)]
pub struct ToolCall {
    /// The call's id (what a `tool` message names).
    pub id: String,
    /// `function`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The function called.
    pub function: FunctionCall,
}

/// The function of a tool call.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ChatFunctionCall))]
#[serde(deny_unknown_fields)]
pub struct FunctionCall {
    /// The tool's name.
    pub name: String,
    /// Its arguments: JSON text of an object.
    pub arguments: String,
}

/// What an import recorded.
#[derive(Debug, Clone, serde::Serialize, PartialEq)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Imported {
    /// Users' messages recorded.
    pub messages: usize,
    /// Tool calls recorded.
    pub calls: usize,
}

impl Content {
    fn text(&self) -> Result<String, String> {
        match self {
            Content::Text(t) => Ok(t.clone()),
            Content::Parts(parts) => {
                let mut out = Vec::new();
                for p in parts {
                    if p.kind != "text" {
                        return Err(format!(
                            "content part of type '{}' cannot be imported; only text parts",
                            p.kind.escape_debug()
                        ));
                    }
                    out.push(p.text.as_str());
                }
                Ok(out.join("\n"))
            }
        }
    }
}

/// Whether a message calls any tool: `tool_calls: []` (which some clients send on every
/// message) calls none, and is accepted on any role, as the OpenAPI document says.
fn calls_any(m: &ChatMessage) -> bool {
    m.tool_calls.as_ref().is_some_and(|c| !c.is_empty())
}

/// What is recorded, checked whole: (users' messages, calls as (id, tool, arguments)).
type Checked = (Vec<String>, Vec<(String, String, Value)>);

/// Check a transcript whole, and take what is recorded of it.
fn check(t: &Transcript) -> Result<Checked, String> {
    if t.messages.is_empty() {
        return Err("messages: give at least one message".into());
    }
    if t.messages.len() > MAX_MESSAGES {
        return Err(format!(
            "messages: {} messages; at most {MAX_MESSAGES} per import (split the conversation)",
            t.messages.len()
        ));
    }
    let mut checking = Checking::default();
    for (i, m) in t.messages.iter().enumerate() {
        checking.message(i, m)?;
    }
    Ok((checking.users, checking.calls))
}

/// A transcript being checked, message by message: what is recorded so far, and the ids of
/// the tool calls met.
#[derive(Default)]
struct Checking<'t> {
    /// The users' messages.
    users: Vec<String>,
    /// The calls, as (id, tool, arguments).
    calls: Vec<(String, String, Value)>,
    /// The tool calls' ids.
    ids: HashSet<&'t str>,
}

impl<'t> Checking<'t> {
    /// Check message `i`, `m`, and take what is recorded of it.
    fn message(&mut self, i: usize, m: &'t ChatMessage) -> Result<(), String> {
        let at = |what: &str| format!("messages[{i}]: {what}");
        let text = m
            .content
            .as_ref()
            .map(Content::text)
            .transpose()
            .map_err(|e| at(&e))?;
        if text.as_ref().is_some_and(|t| t.len() > MAX_TEXT) {
            return Err(at(&format!("content is over {MAX_TEXT} bytes")));
        }
        if m.name.as_ref().is_some_and(|n| n.len() > 256) {
            return Err(at("name is over 256 bytes"));
        }
        match m.role.as_str() {
            "system" | "user" => {
                if calls_any(m) || m.tool_call_id.is_some() {
                    return Err(at(
                        "only assistant messages call tools, only tool messages answer them",
                    ));
                }
                let Some(text) = text else {
                    return Err(at("a user or system message needs content"));
                };
                if m.role == "user" {
                    self.users.push(text);
                }
            }
            "assistant" => {
                if m.tool_call_id.is_some() {
                    return Err(at("tool_call_id is for tool messages"));
                }
                for (j, c) in m.tool_calls.iter().flatten().enumerate() {
                    self.tool_call(i, j, c)?;
                }
            }
            "tool" => {
                if calls_any(m) {
                    return Err(at("only assistant messages call tools"));
                }
                match &m.tool_call_id {
                    Some(id) if self.ids.contains(id.as_str()) => {}
                    Some(_) => return Err(at("tool_call_id names no earlier tool call")),
                    None => return Err(at("a tool message needs the tool_call_id it answers")),
                }
            }
            other => {
                return Err(at(&format!(
                    "role '{}' is not one of system, user, assistant, tool",
                    other.escape_debug()
                )));
            }
        }
        Ok(())
    }

    /// Check tool call `j` of message `i`, `c`, and take it.
    fn tool_call(&mut self, i: usize, j: usize, c: &'t ToolCall) -> Result<(), String> {
        let at = |what: &str| format!("messages[{i}].tool_calls[{j}]: {what}");
        if c.kind != "function" {
            return Err(at("type must be \"function\""));
        }
        if c.id.is_empty() || c.id.len() > 128 || c.id.chars().any(char::is_control) {
            return Err(at("id must be 1-128 characters without control characters"));
        }
        if !self.ids.insert(c.id.as_str()) {
            return Err(at("id is used twice"));
        }
        let name = &c.function.name;
        let ok_name = !name.is_empty()
            && name.len() <= 64
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !ok_name {
            return Err(at(
                "function.name must be 1-64 ASCII letters, digits, `_` and `-`",
            ));
        }
        if c.function.arguments.len() > MAX_TEXT {
            return Err(at(&format!("function.arguments is over {MAX_TEXT} bytes")));
        }
        let args: Value = match c.function.arguments.trim() {
            "" => Value::Object(Default::default()),
            a => serde_json::from_str(a)
                .map_err(|e| at(&format!("function.arguments is not JSON: {e}")))?,
        };
        if !args.is_object() {
            return Err(at("function.arguments must be a JSON object"));
        }
        self.calls.push((c.id.clone(), name.clone(), args));
        if self.calls.len() > MAX_CALLS {
            return Err(format!("at most {MAX_CALLS} tool calls per import"));
        }
        Ok(())
    }
}

impl Dispatcher {
    /// Import a conversation into `agent`'s `session` (which must be the agent's): checked
    /// whole (nothing is recorded if any message is refused, the error naming it), redacted,
    /// recorded for learning. The session is created when new.
    pub async fn import_transcript(
        &self,
        agent: &AgentName,
        session: &str,
        t: &Transcript,
    ) -> Result<Imported, TranscriptError> {
        let (users, calls) = check(t).map_err(TranscriptError::Invalid)?;
        // The session must be the agent's (or new).
        self.session(agent, session)
            .await
            .map_err(TranscriptError::Runtime)?;
        let redactor = self.redactor();
        for u in &users {
            self.record_user_message(agent, session, u, "transcript")
                .await;
        }
        for (id, tool, args) in &calls {
            let call = Event::TranscriptCall(TranscriptCall {
                call_id: format!("transcript:{id}"),
                tool: tool.to_string(),
                arguments: args.clone(),
                ok: true,
            });
            let mut new = call.to_new(agent.as_str(), session);
            new.data = redactor.redact_json_owned(new.data);
            self.events.record(new).await;
        }
        self.flush().await;
        Ok(Imported {
            messages: users.len(),
            calls: calls.len(),
        })
    }
}

/// Why an import was refused. Nothing was recorded.
#[derive(Debug, thiserror::Error)]
pub enum TranscriptError {
    /// A message that cannot be imported (the text names it and says what to fix).
    #[error("{0}")]
    Invalid(String),
    /// The session or agent (unknown agent, a session of another agent).
    #[error(transparent)]
    Runtime(crate::runtime::RuntimeError),
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: Value) -> Result<Checked, String> {
        let t: Transcript = serde_json::from_value(v).map_err(|e| e.to_string())?;
        check(&t)
    }

    #[test]
    fn a_chat_transcript_gives_its_user_messages_and_calls() {
        let (users, calls) = parse(json!({"messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": [{"type": "text", "text": "refund order 7"}]},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "lookup_order", "arguments": "{\"order_id\":\"7\"}"}},
                {"id": "c2", "type": "function", "function": {"name": "issue_refund", "arguments": ""}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "{\"status\":\"paid\"}"},
            {"role": "assistant", "content": "done"}
        ]}))
        .unwrap();
        assert_eq!(users, ["refund order 7"]);
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].2, json!({"order_id": "7"}));
        assert_eq!(calls[1].2, json!({}));
    }

    /// `tool_calls: []` calls nothing, on any role (the OpenAPI document allows it there, and
    /// clients send it); a non-empty list is still refused outside assistant messages.
    #[test]
    fn an_empty_tool_calls_list_calls_nothing_on_any_role() {
        let (users, calls) = parse(json!({"messages": [
            {"role": "system", "content": "be brief", "tool_calls": []},
            {"role": "user", "content": "hi", "tool_calls": []},
            {"role": "assistant", "content": "hello", "tool_calls": []}
        ]}))
        .unwrap();
        assert_eq!(users, ["hi"]);
        assert!(calls.is_empty());
        let e = parse(
            json!({"messages": [{"role": "user", "content": "hi", "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "t", "arguments": ""}}]}]}),
        )
        .unwrap_err();
        assert!(e.contains("only assistant messages call tools"), "{e}");
    }

    #[test]
    fn bad_transcripts_are_refused_naming_the_message() {
        let call = |args: &str| json!({"role": "assistant", "tool_calls": [{"id": "c", "type": "function", "function": {"name": "t", "arguments": args}}]});
        for (v, want) in [
            (json!({"messages": []}), "at least one"),
            (
                json!({"messages": [{"role": "robot", "content": "x"}]}),
                "role 'robot'",
            ),
            (json!({"messages": [{"role": "user"}]}), "needs content"),
            (json!({"messages": [call("[1]")]}), "a JSON object"),
            (json!({"messages": [call("{")]}), "not JSON"),
            (
                json!({"messages": [{"role": "tool", "tool_call_id": "nope", "content": "x"}]}),
                "names no earlier",
            ),
            (
                json!({"messages": [{"role": "tool", "content": "x"}]}),
                "needs the tool_call_id",
            ),
            (json!({"messages": [call("{}"), call("{}")]}), "used twice"),
            (
                json!({"messages": [{"role": "user", "content": [{"type": "image_url", "text": "x"}]}]}),
                "only text parts",
            ),
            (
                json!({"messages": [{"role": "user", "content": "x".repeat(MAX_TEXT + 1)}]}),
                "over 65536",
            ),
            (
                json!({"messages": [{"role": "user", "content": "x", "extra": 1}]}),
                "unknown field",
            ),
            (
                json!({"messages": [{"role": "assistant", "tool_calls": [{"id": "c", "type": "function", "function": {"name": "bad name", "arguments": "{}"}}]}]}),
                "function.name",
            ),
        ] {
            let e = parse(v.clone()).expect_err(&v.to_string());
            assert!(e.contains(want), "{v}: {e}");
        }
        let many: Vec<Value> = (0..=MAX_MESSAGES)
            .map(|_| json!({"role": "user", "content": "x"}))
            .collect();
        assert!(
            parse(json!({"messages": many}))
                .unwrap_err()
                .contains("at most 2000")
        );
    }
}
