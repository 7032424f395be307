//! What a call comes to: the refusal rules, the outcome, how results are capped, and call ids.

use crate::redact::Redactor;
use crate::rule::Rule;
use crate::tool::ToolError;
use serde::Serialize;
use skillbase_route::tokens;

/// What one call came to.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum CallOutcome {
    /// The tool ran; `result` is capped and redacted.
    Done {
        /// The call's id.
        call_id: String,
        /// The tool's value, redacted; when it was over the agent's `max_result_tokens`, a
        /// string instead: its text cut to the limit plus a `[truncated: ...]` marker.
        result: serde_json::Value,
        /// Tokens of `result` as text (o200k_base); with the marker, a cut result can come
        /// out a few tokens over the limit.
        tokens: u32,
        /// Whether `result` was cut to `max_result_tokens`.
        truncated: bool,
    },
    /// A slow call runs apart; its result arrives as a `call_finished` event (see
    /// [`Engine::wait`](crate::Engine::wait)).
    Started {
        /// The id to pass to [`Engine::wait`](crate::Engine::wait) and to find the `call_finished` event by.
        call_id: String,
    },
    /// A harness-run tool's call passed every stage: the harness executes it and posts the
    /// result (`Dispatcher::post_result`) within the tool's cost-class limit.
    Authorized {
        /// The id to post the result under.
        call_id: String,
        /// The tool the harness is to run (its declared name).
        tool: String,
    },
    /// The call was refused: by a stage before the tool ran, or inside the tool (a vault entry
    /// or destination outside the envelope) when that refusal stopped it.
    Refused {
        /// The call's id.
        call_id: String,
        /// The rule that refused; callers branch on it, not on the message.
        rule: Rule,
        /// Why, for the model (redacted).
        message: String,
    },
    /// The tool ran and failed, or was cancelled at its cost class's time limit.
    Failed {
        /// The call's id.
        call_id: String,
        /// What went wrong, for the model (redacted).
        message: String,
        /// [`Rule::Timeout`] when the call was cancelled at its limit; otherwise none.
        #[serde(skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "openapi", schema(nullable = false))]
        rule: Option<Rule>,
        /// What kind of failure, when the tool says (`stale`, `conflict`, `not_found`, ...).
        #[serde(skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "openapi", schema(nullable = false))]
        failure: Option<crate::tool::Failure>,
    },
}

impl CallOutcome {
    /// The id of the call this outcome belongs to.
    pub fn call_id(&self) -> &str {
        match self {
            CallOutcome::Done { call_id, .. }
            | CallOutcome::Started { call_id }
            | CallOutcome::Authorized { call_id, .. }
            | CallOutcome::Refused { call_id, .. }
            | CallOutcome::Failed { call_id, .. } => call_id,
        }
    }

    /// The text to give the model.
    pub fn for_model(&self) -> String {
        match self {
            CallOutcome::Done { result, .. } => match result {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            },
            CallOutcome::Started { call_id } => {
                format!("started as call {call_id}; the result will arrive as an event")
            }
            CallOutcome::Authorized { call_id, tool } => {
                format!("authorized as call {call_id}; the harness runs '{tool}'")
            }
            CallOutcome::Refused { rule, message, .. } => {
                format!("refused ({}): {message}", rule.as_str())
            }
            CallOutcome::Failed { message, .. } => format!("failed: {message}"),
        }
    }
}

/// How to run a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CallMode {
    /// Wait for the result.
    #[default]
    Wait,
    /// For `seconds` and `tens_of_seconds` tools: answer at once with a call id.
    Detach,
}

/// A tool's result as the call's outcome: a value is redacted and capped at `max_tokens`; an
/// error is redacted, and is a refusal when the tool refused by a rule of the envelope.
pub(crate) fn from_tool_result(
    call_id: &str,
    res: Result<serde_json::Value, ToolError>,
    redactor: &Redactor,
    max_tokens: u32,
) -> CallOutcome {
    match res {
        Ok(value) => {
            let (result, tokens, truncated) =
                cap_tokens(redactor.redact_json_owned(value), max_tokens, redactor);
            CallOutcome::Done {
                call_id: call_id.to_owned(),
                result,
                tokens,
                truncated,
            }
        }
        Err(e) => match e.rule {
            Some(rule) => CallOutcome::Refused {
                call_id: call_id.to_owned(),
                rule,
                message: redactor.redact(&e.message).into_owned(),
            },
            None => CallOutcome::Failed {
                call_id: call_id.to_owned(),
                message: redactor.redact(&e.message).into_owned(),
                rule: None,
                failure: e.kind,
            },
        },
    }
}

/// Cut a (redacted) result to `max` tokens (as text, with a marker) when it is larger; the cut
/// never ends in the first characters of a secret.
pub fn cap_tokens(
    value: serde_json::Value,
    max: u32,
    redactor: &Redactor,
) -> (serde_json::Value, u32, bool) {
    let rendered;
    let text: &str = match &value {
        serde_json::Value::String(s) => s,
        other => {
            rendered = other.to_string();
            &rendered
        }
    };
    let n = tokens::count(text);
    if n <= max {
        return (value, n, false);
    }
    let cut = tokens::truncate(text, max);
    let cut = redactor.trim_partial(&cut);
    let out =
        format!("{cut}\n[truncated: the result had {n} tokens, over this agent's limit of {max}]");
    let t = tokens::count(&out);
    (serde_json::Value::String(out), t, true)
}

/// `format!("call-{ms:x}-{n}")`, written by hand (it runs on every call).
pub(crate) fn call_id_text(ms: u128, n: u64) -> String {
    let mut id = String::with_capacity(48);
    id.push_str("call-");
    let mut digits = [0u8; 40];
    let mut k = digits.len();
    let mut v = ms;
    loop {
        k -= 1;
        digits[k] = b"0123456789abcdef"[(v & 0xf) as usize];
        v >>= 4;
        if v == 0 {
            break;
        }
    }
    id.push_str(std::str::from_utf8(&digits[k..]).expect("hex digits"));
    id.push('-');
    let mut k = digits.len();
    let mut v = n;
    loop {
        k -= 1;
        digits[k] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    id.push_str(std::str::from_utf8(&digits[k..]).expect("decimal digits"));
    id
}

#[cfg(test)]
mod tests {
    #[test]
    fn call_ids_read_as_before() {
        for (ms, n) in [
            (0u128, 0u64),
            (1, 1),
            (0x19a_c0ff_ee12, 42),
            (u128::MAX, u64::MAX),
            (1_790_000_000_000, 1_000_000),
        ] {
            assert_eq!(super::call_id_text(ms, n), format!("call-{ms:x}-{n}"));
        }
    }
}
