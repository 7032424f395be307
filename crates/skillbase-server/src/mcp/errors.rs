//! The JSON-RPC errors MCP answers with: a `skill://` URI nothing is served at, a store or
//! runtime failure, and a known method whose params rmcp could not read.

use rmcp::model::{ErrorCode, ErrorData};
use serde_json::json;
use skillbase_runtime::RuntimeError;
use skillbase_store::StoreError;

fn invalid_params(message: String, uri: &str) -> ErrorData {
    ErrorData::invalid_params(message, Some(json!({ "uri": uri })))
}

/// `skills/get` of a URI that names no SKILL.md the agent sees.
pub(super) fn no_skill(uri: &str) -> ErrorData {
    invalid_params(format!("no skill is served at {uri}"), uri)
}

/// `resources/read` of a URI that names no file the agent sees.
pub(super) fn no_resource(uri: &str) -> ErrorData {
    invalid_params(format!("no resource is served at {uri}"), uri)
}

/// `resources/directory/read` of a URI that names no directory the agent sees.
pub(super) fn no_directory(uri: &str) -> ErrorData {
    invalid_params(format!("no directory is served at {uri}"), uri)
}

/// A store failure as a JSON-RPC error. A storage fault (a full disk, an unavailable or
/// read-only database) says so in its message and carries the REST answer's problem type and
/// status in `data`, so a client can tell "retry later" from a bug.
pub(super) fn store_error(e: StoreError) -> ErrorData {
    tracing::warn!(error = %e, "MCP: store error");
    match crate::error::storage_fault(&e) {
        Some((status, kind)) => ErrorData::internal_error(
            format!("the storage failed: {e}"),
            Some(json!({
                "type": format!("urn:skillbase:problem:{kind}"),
                "status": status.as_u16(),
            })),
        ),
        None => ErrorData::internal_error(format!("the store failed: {e}"), None),
    }
}

/// A runtime failure as a JSON-RPC error: an unknown agent is the request's fault, invalid
/// input the params', anything else the server's.
pub(super) fn runtime_error(e: RuntimeError) -> ErrorData {
    match e {
        RuntimeError::UnknownAgent(a) => {
            ErrorData::invalid_request(format!("no agent '{a}'"), None)
        }
        RuntimeError::Store(StoreError::Invalid(m)) | RuntimeError::Invalid(m) => {
            ErrorData::invalid_params(m, None)
        }
        e @ RuntimeError::InvalidTurn(_) => ErrorData::invalid_params(e.to_string(), None),
        RuntimeError::Store(e) => store_error(e),
        other => ErrorData::internal_error(other.to_string(), None),
    }
}

/// A serde message without the caller's input: a span in quotes or backticks is the sender's
/// value, key or variant (`invalid type: string "…"`, ``unknown field `…` ``) unless the message
/// names a field the schema requires (``missing field `name` ``). Refusals never quote input.
fn unquoted(message: &str) -> String {
    if message.starts_with("missing field") {
        return message.to_owned();
    }
    let mut out = String::with_capacity(message.len());
    let mut open: Option<char> = None;
    for c in message.chars() {
        match open {
            Some(q) if c == q => {
                out.push('…');
                out.push(c);
                open = None;
            }
            Some(_) => {}
            None if c == '"' || c == '`' => {
                out.push(c);
                open = Some(c);
            }
            None => out.push(c),
        }
    }
    out
}

/// The error for a request rmcp could not read as one of its methods (it reads a known method
/// whose params do not fit its schema as a custom request): `-32602` saying what is wrong, and
/// `-32601` only for a method nobody knows.
pub(super) fn custom_request_error(method: &str, params: Option<&serde_json::Value>) -> ErrorData {
    use rmcp::model::{
        CallToolRequestParams, InitializeRequestParams, PaginatedRequestParams,
        ReadResourceRequestParams,
    };
    fn check<T: serde::de::DeserializeOwned>(params: Option<&serde_json::Value>) -> String {
        let v = params.cloned().unwrap_or(serde_json::Value::Null);
        match serde_json::from_value::<T>(v) {
            Err(e) => unquoted(&e.to_string()),
            Ok(_) => "the params do not match the method's schema".into(),
        }
    }
    let problem = match method {
        "tools/call" => check::<CallToolRequestParams>(params),
        "resources/read" => check::<ReadResourceRequestParams>(params),
        "initialize" => check::<InitializeRequestParams>(params),
        "tools/list" | "resources/list" | "resources/templates/list" | "prompts/list" => {
            check::<PaginatedRequestParams>(params)
        }
        "ping"
        | "prompts/get"
        | "completion/complete"
        | "logging/setLevel"
        | "resources/subscribe"
        | "resources/unsubscribe"
        | "server/discover"
        | "subscriptions/listen"
        | "skills/list"
        | "skills/get"
        | "tasks/get"
        | "tasks/list"
        | "tasks/cancel"
        | "tasks/result" => "the params do not match the method's schema".into(),
        _ => {
            let shown: String = method.chars().take(100).collect();
            return ErrorData::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!("method not found: {shown}"),
                None,
            );
        }
    };
    ErrorData::invalid_params(format!("invalid params for {method}: {problem}"), None)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A storage fault over MCP says so, with the REST problem's type and status in `data`;
    /// any other store error stays a plain internal error.
    #[test]
    fn storage_faults_carry_the_problem_type_and_status() {
        let e = store_error(StoreError::DiskFull("database or disk is full".into()));
        assert!(e.message.contains("the storage failed"), "{}", e.message);
        let data = e.data.expect("data");
        assert_eq!(data["status"], 507);
        assert_eq!(data["type"], "urn:skillbase:problem:insufficient-storage");
        let e = store_error(StoreError::Unavailable("disk I/O error".into()));
        assert_eq!(e.data.expect("data")["status"], 503);
        let e = store_error(StoreError::Corrupt("x".into()));
        assert!(e.data.is_none());
    }
}
