//! `tools/list` (the agent's offered set) and `tools/call` (through the dispatch pipeline),
//! shared by the rmcp handler and the direct path.

use super::errors::runtime_error;
use super::identity::Caller;
use crate::state::AppState;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData,
    ListToolsResult, Tool,
};
use serde_json::json;
use skillbase_runtime::{CallMode, CallOutcome};
use skillbase_store::session_id::{Origin, SessionId};
use std::sync::Arc;

/// `tools/list`: the tools offered to the agent, each with its parameters as the input schema.
pub(super) fn list(state: &AppState, caller: &Caller) -> Result<ListToolsResult, ErrorData> {
    let offered = state.engine.offered(&caller.agent).map_err(runtime_error)?;
    let tools = offered
        .entries
        .iter()
        .map(|e| {
            let schema = match &e.parameters {
                serde_json::Value::Object(m) => m.clone(),
                _ => serde_json::Map::from_iter([("type".to_owned(), json!("object"))]),
            };
            Tool::new(e.wire_name.clone(), e.description.clone(), Arc::new(schema))
        })
        .collect();
    Ok(ListToolsResult::with_all_items(tools))
}

/// `tools/call`: through the dispatch pipeline; refusals and failures are results with
/// `isError` (the model can act on them).
pub(super) async fn call(
    state: &AppState,
    caller: &Caller,
    session: &SessionId,
    request: CallToolRequestParams,
) -> Result<CallToolResponse, ErrorData> {
    let origin = session.origin();
    let session = session.as_str();
    let args = request
        .arguments
        .map(serde_json::Value::Object)
        .unwrap_or_else(|| json!({}));
    // The stateless wire gives no per-conversation identity: every conversation of the token
    // shares its session.
    if origin == Origin::McpStateless {
        state.engine.mark_shared(&caller.agent, session);
    }
    // Over HTTP the client does not share this server's disk: files as `skill://` URIs. Over
    // stdio it does (a local process): workspace paths.
    if origin != Origin::McpStdio {
        state.engine.mark_remote(&caller.agent, session);
    }
    let outcome = state
        .engine
        .call(&caller.agent, session, &request.name, args, CallMode::Wait)
        .await
        .map_err(runtime_error)?;
    state.metrics.call(&outcome);
    let failed = matches!(
        outcome,
        CallOutcome::Refused { .. } | CallOutcome::Failed { .. }
    );
    let text = vec![ContentBlock::text(model_text(outcome))];
    Ok(if failed {
        CallToolResult::error(text)
    } else {
        CallToolResult::success(text)
    }
    .into())
}

/// [`CallOutcome::for_model`], taking a text result as it is rather than copying it (a skill's
/// body, answered on every repeated `load_skill`).
fn model_text(outcome: CallOutcome) -> String {
    match outcome {
        CallOutcome::Done {
            result: serde_json::Value::String(text),
            ..
        } => text,
        other => other.for_model(),
    }
}
