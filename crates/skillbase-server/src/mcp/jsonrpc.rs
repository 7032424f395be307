//! The guard in front of rmcp's streamable HTTP service: a body rmcp cannot read as one
//! JSON-RPC message gets a JSON-RPC error (rmcp answers a bare 415), a well-formed stateless
//! `tools/call` goes to the direct path (`super::direct`), and a closed session is 204.

use super::direct;
use super::hosts::AllowedHost;
use crate::state::AppState;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::model::ClientJsonRpcMessage;
use serde_json::{Value, json};
use std::sync::Arc;

/// What the guard in front of rmcp needs.
pub(super) struct Guard {
    /// Largest request body.
    pub(super) limit: usize,
    /// The direct path for stateless `tools/call`, with the hosts MCP accepts (`None`: off).
    pub(super) direct: Option<(Arc<AppState>, Vec<AllowedHost>)>,
}

/// Buffer POST bodies so that a body rmcp cannot read as one JSON-RPC message gets a JSON-RPC
/// error (`-32700` parse error, `-32600` invalid request) instead of a bare HTTP error; answer a
/// well-formed stateless `tools/call` on the direct path; answer `DELETE /mcp` 204 where rmcp
/// says 202.
pub(super) async fn jsonrpc_guard(
    State(guard): State<Arc<Guard>>,
    req: Request,
    next: Next,
) -> Response {
    if req.method() == Method::DELETE {
        // rmcp answers a closed session 202; clients (the SDKs, fast-agent) expect 200 or 204.
        let mut res = next.run(req).await;
        if res.status() == StatusCode::ACCEPTED {
            *res.status_mut() = StatusCode::NO_CONTENT;
            *res.body_mut() = Body::empty();
            res.headers_mut().remove(header::CONTENT_TYPE);
            res.headers_mut().remove(header::CONTENT_LENGTH);
        }
        return res;
    }
    if req.method() != Method::POST {
        return next.run(req).await;
    }
    let limit = guard.limit;
    let json_body = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(';')
                .next()
                .is_some_and(|e| e.trim().eq_ignore_ascii_case("application/json"))
        });
    let (parts, body) = req.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, limit).await else {
        return jsonrpc_error(
            StatusCode::PAYLOAD_TOO_LARGE,
            Value::Null,
            -32600,
            format!("Invalid Request: the body exceeds {limit} bytes"),
        );
    };
    if let Some((state, hosts)) = &guard.direct
        && let Some(res) = direct::serve(state, hosts, &parts, &bytes).await
    {
        return res;
    }
    let res = next
        .run(Request::from_parts(parts, Body::from(bytes.clone())))
        .await;
    // rmcp answers a body it cannot deserialize with 415; tell JSON-RPC what was wrong.
    if !json_body || res.status() != StatusCode::UNSUPPORTED_MEDIA_TYPE {
        return res;
    }
    unreadable(&bytes).unwrap_or(res)
}

/// The JSON-RPC error for a body rmcp could not read as a message (`None`: it can, so its 415
/// was about something else).
fn unreadable(bytes: &Bytes) -> Option<Response> {
    let Err(e) = serde_json::from_slice::<ClientJsonRpcMessage>(bytes) else {
        return None;
    };
    Some(match serde_json::from_slice::<Value>(bytes) {
        Err(pe) => jsonrpc_error(
            StatusCode::BAD_REQUEST,
            Value::Null,
            -32700,
            format!("Parse error: {pe}"),
        ),
        Ok(v) => {
            let id = v.get("id").filter(|id| usable_id(id)).cloned();
            let id = id.unwrap_or(Value::Null);
            let why = if v.is_array() {
                "batches are not supported; send one message per request".to_owned()
            } else {
                e.to_string()
            };
            jsonrpc_error(
                StatusCode::BAD_REQUEST,
                id,
                -32600,
                format!("Invalid Request: {why}"),
            )
        }
    })
}

/// An id the answer may echo: a string or an `i64` (rmcp's id types). Anything else (`1.5`,
/// `u64::MAX`, `true`) was not detected as an id, so JSON-RPC says the error's id is null.
fn usable_id(id: &Value) -> bool {
    id.is_string() || id.is_i64()
}

fn jsonrpc_error(status: StatusCode, id: Value, code: i64, message: String) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
    let mut res = (status, body.to_string()).into_response();
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    res
}
