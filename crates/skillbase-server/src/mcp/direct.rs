//! The direct path for stateless `tools/call` (the 2026-07-28 wire).
//!
//! rmcp serves every stateless request by building a service for it: a handler, a one-shot
//! transport, a spawned task with its own cancellation token, channels to carry the one request
//! and its one answer. For a `tools/call` that is most of the request's cost. A well-formed
//! stateless `tools/call` is answered here instead: the same checks, the same handler code
//! (`super::tools::call`), the same result post-processing and the same bytes as rmcp would
//! send.
//!
//! The rule that keeps the two paths the same: this path takes a request only when everything
//! rmcp would check about it is plainly fine; anything else, including every malformed request,
//! goes to rmcp unchanged. The tests send the same requests through both paths (the
//! `rmcp_only` option turns this one off) and compare the responses byte for byte.
//!
//! **From rmcp itself.** The body is read with rmcp's own message type, `ClientJsonRpcMessage`
//! with its request type narrowed to `tools/call` (`JsonRpcMessage<CallToolRequest, …>`), so
//! rmcp's deserializers decide the message's shape (request, notification, response or error),
//! `"jsonrpc": "2.0"`, the id (`RequestId`), the method, the params (`CallToolRequestParams`) and
//! `_meta` (`RequestMetaObject`). The lifecycle checks are rmcp's `RequestMetaObject` methods
//! (`protocol_version`, `missing_required_keys` for `ProtocolVersion::V_2026_07_28`); header
//! names, MIME types and the Base64 header marker are `rmcp::transport::common::http_header`'s;
//! the result gets `ServerResult::fill_missing_cache_hints` and is sent as
//! `ServerJsonRpcMessage::response` or `::error`.
//!
//! **Private in rmcp 3.11, kept here as the smallest equivalent** (functions of
//! `rmcp::transport::streamable_http_server::tower` unless named otherwise):
//!
//! - `validate_dns_rebinding_headers` (`parse_host_header`, `host_is_allowed`) and
//!   `validate_origin_header`: the host rule of `super::hosts`; any `Origin` goes to rmcp.
//! - `accepted_media_types` (the `Accept` weights): `Accept` must list JSON and SSE with no
//!   parameters; a weighted list goes to rmcp.
//! - The `Content-Type` check inside `StreamableHttpService::handle_post`: the same comparison,
//!   on a single header.
//! - `is_legacy_request`, `validate_protocol_version_header`,
//!   `validate_request_protocol_version_meta` and `validate_required_protocol_header`: no
//!   `Mcp-Session-Id`, and `MCP-Protocol-Version` and `_meta` both exactly 2026-07-28.
//! - `validate_standard_headers` with `transport::common::mcp_headers::validate_request_headers`
//!   and `decode_header_value`: `Mcp-Method: tools/call` and a plain `Mcp-Name` equal to the
//!   body's tool name, each sent once; no `Mcp-Param-*`; a Base64-wrapped name goes to rmcp.
//! - The dispatch, `<H as Service<RoleServer>>::handle_request` (`rmcp::handler::server`): it
//!   cannot be called, because its `RequestContext` needs a `Peer` and `Peer::new` is
//!   `pub(crate)`. Its version and `_meta` checks are met by the above; its mapping of
//!   `RESOURCE_NOT_FOUND` to `INVALID_PARAMS` on 2026-07-28 is repeated here.
//! - `jsonrpc_http_status` and `jsonrpc_message_response`: the status and body in `respond`.

use super::hosts::{AllowedHost, host_allowed, single};
use super::identity::{Caller, Identity, session_of};
use super::tools;
use crate::state::AppState;
use axum::body::{Body, Bytes};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::Response;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientNotification, ClientRequest, ClientResult,
    ErrorCode, ErrorData, GetMeta, JsonRpcMessage, JsonRpcRequest, ProtocolVersion, RequestId,
    ServerJsonRpcMessage, ServerResult,
};
use rmcp::transport::common::http_header::{
    BASE64_HEADER_PREFIX, BASE64_HEADER_SUFFIX, EVENT_STREAM_MIME_TYPE, HEADER_MCP_METHOD,
    HEADER_MCP_NAME, HEADER_MCP_PARAM_PREFIX, HEADER_MCP_PROTOCOL_VERSION, HEADER_SESSION_ID,
    JSON_MIME_TYPE,
};

/// rmcp's `ClientJsonRpcMessage` with its request type narrowed to `tools/call`: a body reads
/// as a request here exactly when rmcp reads it as a `CallToolRequest`.
type Message = JsonRpcMessage<CallToolRequest, ClientResult, ClientNotification>;

/// `Accept` lists both JSON and SSE, without parameters (a weighted list goes to rmcp).
fn accepts_json_and_sse(headers: &HeaderMap) -> bool {
    let (mut json, mut sse) = (false, false);
    for value in headers.get_all(header::ACCEPT) {
        let Ok(value) = value.to_str() else {
            return false;
        };
        for item in value.split(',') {
            let mut params = item.split(';');
            let essence = params.next().unwrap_or_default().trim();
            if params.next().is_some() {
                return false;
            }
            json |= essence.eq_ignore_ascii_case(JSON_MIME_TYPE);
            sse |= essence.eq_ignore_ascii_case(EVENT_STREAM_MIME_TYPE);
        }
    }
    json && sse
}

fn is_param_header(name: &str) -> bool {
    name.get(..HEADER_MCP_PARAM_PREFIX.len())
        .is_some_and(|p| p.eq_ignore_ascii_case(HEADER_MCP_PARAM_PREFIX))
}

/// The headers say: a stateless `tools/call` on the 2026-07-28 wire that rmcp would accept.
/// Returns the `Mcp-Name` header (the tool the body must name).
fn eligible<'a>(parts: &'a Parts, allowed: &[AllowedHost]) -> Option<&'a str> {
    let h = &parts.headers;
    if parts.method != Method::POST
        || single(h, HEADER_MCP_METHOD) != Some("tools/call")
        || single(h, HEADER_MCP_PROTOCOL_VERSION) != Some(ProtocolVersion::V_2026_07_28.as_str())
        || h.contains_key(HEADER_SESSION_ID)
        || h.contains_key(header::ORIGIN)
        || h.keys().any(|k| is_param_header(k.as_str()))
        || !host_allowed(parts, allowed)
        || !accepts_json_and_sse(h)
    {
        return None;
    }
    let content_type = single(h, header::CONTENT_TYPE.as_str())?;
    let essence = content_type.split(';').next().unwrap_or_default().trim();
    if !essence.eq_ignore_ascii_case(JSON_MIME_TYPE) {
        return None;
    }
    // A Base64-wrapped name is decoded by rmcp; plain names only here.
    let name = single(h, HEADER_MCP_NAME)?;
    let wrapped = name.starts_with(BASE64_HEADER_PREFIX) && name.ends_with(BASE64_HEADER_SUFFIX);
    (!wrapped).then_some(name)
}

/// The body as rmcp reads it, when it is a `tools/call` request of the 2026-07-28 lifecycle
/// (`_meta` complete) naming the tool `Mcp-Name` names.
fn read(body: &[u8], name: &str) -> Option<(RequestId, CallToolRequestParams)> {
    let Ok(JsonRpcMessage::Request(JsonRpcRequest { id, request, .. })) =
        serde_json::from_slice::<Message>(body)
    else {
        return None;
    };
    let request = ClientRequest::from(request);
    let meta = request.get_meta();
    let version = ProtocolVersion::V_2026_07_28;
    if meta.protocol_version().as_ref() != Some(&version)
        || !meta.missing_required_keys(&version).is_empty()
    {
        return None;
    }
    let ClientRequest::CallToolRequest(call) = request else {
        return None;
    };
    (call.params.name == name).then_some((id, call.params))
}

/// Answer the request here when it is a well-formed stateless `tools/call`; `None` hands it to
/// rmcp unchanged.
pub(super) async fn serve(
    state: &AppState,
    allowed: &[AllowedHost],
    parts: &Parts,
    body: &Bytes,
) -> Option<Response> {
    let name = eligible(parts, allowed)?;
    let (id, params) = read(body, name)?;
    state.metrics.mcp_direct_calls.inc();
    let result = match Identity::of(parts).and_then(|i| i.resolve(state)) {
        Ok(caller) => answer(state, &caller, parts, params).await,
        Err(e) => Err(e),
    };
    let size = result.as_ref().map_or(0, response_size);
    let message = match result {
        Ok(mut r) => {
            // What rmcp does to every result on the 2026-07-28 wire.
            r.fill_missing_cache_hints();
            ServerJsonRpcMessage::response(r, id)
        }
        Err(mut e) => {
            if e.code == ErrorCode::RESOURCE_NOT_FOUND {
                e.code = ErrorCode::INVALID_PARAMS;
            }
            ServerJsonRpcMessage::error(e, Some(id))
        }
    };
    Some(respond(&message, size))
}

/// About how many bytes a result's response takes: its texts, plus room for the envelope (the
/// buffer is made this size at once rather than grown by doubling, copying the text each time).
fn response_size(result: &ServerResult) -> usize {
    let texts = match result {
        ServerResult::CallToolResult(r) => r
            .content
            .iter()
            .filter_map(|c| c.as_text())
            .map(|t| t.text.len())
            .sum(),
        _ => 0,
    };
    texts + texts / 16 + 512
}

async fn answer(
    state: &AppState,
    caller: &Caller,
    parts: &Parts,
    params: CallToolRequestParams,
) -> Result<ServerResult, ErrorData> {
    let session = session_of(Some(parts), caller)?;
    tools::call(state, caller, &session, params)
        .await
        .map(ServerResult::from)
}

/// The HTTP response rmcp gives a terminal message on the per-request wire (for a request whose
/// `_meta` is complete, as every one taken here is).
fn respond(message: &ServerJsonRpcMessage, size: usize) -> Response {
    let status = match message {
        ServerJsonRpcMessage::Error(e) => match e.error.code {
            ErrorCode::UNSUPPORTED_PROTOCOL_VERSION
            | ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
            | ErrorCode::HEADER_MISMATCH => StatusCode::BAD_REQUEST,
            ErrorCode::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
            _ => StatusCode::OK,
        },
        _ => StatusCode::OK,
    };
    let mut body = Vec::with_capacity(size);
    match serde_json::to_writer(&mut body, message) {
        Ok(()) => {
            let mut res = Response::new(Body::from(body));
            *res.status_mut() = status;
            res.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static(JSON_MIME_TYPE),
            );
            res
        }
        Err(e) => {
            tracing::error!("Internal server error when serialize json response: {e}");
            let mut res = Response::new(Body::from(format!(
                "Encounter an error when serialize json response: {e}"
            )));
            *res.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
            res
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(headers: &[(&str, &str)]) -> Parts {
        let mut b = axum::http::Request::builder()
            .method(Method::POST)
            .uri("/mcp");
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        b.body(()).unwrap().into_parts().0
    }

    fn good() -> Vec<(&'static str, &'static str)> {
        vec![
            ("host", "127.0.0.1:8080"),
            ("accept", "application/json, text/event-stream"),
            ("content-type", "application/json"),
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "load_skill"),
        ]
    }

    fn hosts() -> Vec<AllowedHost> {
        ["localhost", "127.0.0.1", "::1", "example.com:443"]
            .iter()
            .filter_map(|h| AllowedHost::parse(h))
            .collect()
    }

    #[test]
    fn a_plain_stateless_call_is_eligible() {
        assert_eq!(eligible(&parts(&good()), &hosts()), Some("load_skill"));
        let mut h = good();
        h[0] = ("host", "[::1]:9");
        assert!(eligible(&parts(&h), &hosts()).is_some());
        h[0] = ("host", "EXAMPLE.com:443");
        assert!(eligible(&parts(&h), &hosts()).is_some());
    }

    #[test]
    fn anything_unusual_goes_to_rmcp() {
        let change = |k: &'static str, v: Option<&'static str>| {
            let mut h: Vec<_> = good().into_iter().filter(|(n, _)| *n != k).collect();
            if let Some(v) = v {
                h.push((k, v));
            }
            eligible(&parts(&h), &hosts()).map(str::to_owned)
        };
        for (k, v) in [
            ("host", Some("evil.example:8080")),
            ("host", Some("example.com:8443")),
            ("host", None),
            ("accept", Some("application/json")),
            ("accept", Some("application/json;q=0, text/event-stream")),
            ("accept", None),
            ("content-type", Some("text/plain")),
            ("content-type", None),
            ("mcp-protocol-version", Some("2025-11-25")),
            ("mcp-protocol-version", None),
            ("mcp-method", Some("tools/list")),
            ("mcp-method", None),
            ("mcp-name", Some("=?base64?bG9hZF9za2lsbA==?=")),
            ("mcp-name", None),
        ] {
            assert_eq!(change(k, v), None, "{k}: {v:?}");
        }
        for extra in [
            ("mcp-session-id", "abc"),
            ("origin", "http://127.0.0.1"),
            ("mcp-param-name", "x"),
            ("mcp-method", "tools/call"),
        ] {
            let mut h = good();
            h.push(extra);
            assert_eq!(eligible(&parts(&h), &hosts()), None, "{extra:?}");
        }
    }

    fn body(change: impl FnOnce(&mut serde_json::Value)) -> Vec<u8> {
        let mut b = serde_json::json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
            "name": "load_skill",
            "arguments": {"name": "x"},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {}
            }
        }});
        change(&mut b);
        serde_json::to_vec(&b).unwrap()
    }

    /// The body is read as rmcp reads it: what rmcp takes as a 2026-07-28 `tools/call` of the
    /// tool `Mcp-Name` names is taken, anything else is left to rmcp.
    #[test]
    fn the_body_is_read_with_rmcps_types() {
        let (id, params) = read(&body(|_| {}), "load_skill").expect("a plain call");
        assert_eq!(id, RequestId::Number(7));
        assert_eq!(params.name, "load_skill");
        assert_eq!(params.arguments.unwrap()["name"], "x");
        // rmcp reads `1.0` as the integer 1 and ignores keys it does not know.
        let (id, _) = read(&body(|b| b["id"] = serde_json::json!(1.0)), "load_skill").unwrap();
        assert_eq!(id, RequestId::Number(1));
        assert!(read(&body(|b| b["extra"] = serde_json::json!(1)), "load_skill").is_some());
        assert!(read(&body(|_| {}), "other").is_none());
        type Change = fn(&mut serde_json::Value);
        let refused: [(&str, Change); 8] = [
            ("a result key too (rmcp's shape check)", |b| {
                b["result"] = serde_json::json!({})
            }),
            ("no id: a notification", |b| {
                b.as_object_mut().unwrap().remove("id");
            }),
            ("jsonrpc 1.0", |b| b["jsonrpc"] = serde_json::json!("1.0")),
            ("float id", |b| b["id"] = serde_json::json!(1.5)),
            ("another method", |b| {
                b["method"] = serde_json::json!("tools/list")
            }),
            ("an older version in _meta", |b| {
                b["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] =
                    serde_json::json!("2025-11-25")
            }),
            ("malformed capabilities", |b| {
                b["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
                    serde_json::json!(5)
            }),
            ("arguments not an object", |b| {
                b["params"]["arguments"] = serde_json::json!([1])
            }),
        ];
        for (why, change) in refused {
            assert!(read(&body(change), "load_skill").is_none(), "{why}");
        }
    }
}
