//! The direct path for stateless `tools/call` (the 2026-07-28 wire).
//!
//! rmcp serves every stateless request by building a service for it: a handler, a one-shot
//! transport, a spawned task with its own cancellation token, channels to carry the one request
//! and its one answer. For a `tools/call` that is most of the request's cost. A well-formed
//! stateless `tools/call` is answered here instead: the same checks, the same handler code
//! (`super::tools::call`), the same result post-processing and the same bytes as rmcp would send.
//!
//! The rule that keeps the two paths the same: this path takes a request only when everything
//! rmcp would check about it is plainly fine (host allowed, no `Origin`, `Accept` and
//! `Content-Type` as required, no MCP session, `MCP-Protocol-Version: 2026-07-28` with the same
//! version and every required key in `_meta`, `Mcp-Method`/`Mcp-Name` present once and matching
//! the body, no `Mcp-Param-*` header). Anything else, including every malformed request, goes to
//! rmcp, which answers it as before. The tests send the same requests through both paths and
//! compare the responses byte for byte.

use super::hosts::{AllowedHost, host_allowed, single};
use super::identity::{Caller, Identity, MCP_SESSION_HEADER, session_of};
use super::tools;
use crate::state::AppState;
use axum::body::{Body, Bytes};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::Response;
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ErrorCode, ErrorData, Implementation, JsonObject,
    ProtocolVersion, RequestId, ServerJsonRpcMessage, ServerResult,
};
use serde::Deserialize;

const PROTOCOL_VERSION_HEADER: &str = "mcp-protocol-version";
const METHOD_HEADER: &str = "mcp-method";
const NAME_HEADER: &str = "mcp-name";
const PARAM_HEADER_PREFIX: &str = "mcp-param-";
const JSON: &str = "application/json";
const EVENT_STREAM: &str = "text/event-stream";

/// `Accept` lists both JSON and SSE, without weights (a weighted list goes to rmcp).
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
            json |= essence.eq_ignore_ascii_case(JSON);
            sse |= essence.eq_ignore_ascii_case(EVENT_STREAM);
        }
    }
    json && sse
}

/// The headers say: a stateless `tools/call` on the 2026-07-28 wire that rmcp would accept.
/// Returns the `Mcp-Name` header (the tool the body must name).
fn eligible<'a>(parts: &'a Parts, allowed: &[AllowedHost]) -> Option<&'a str> {
    let h = &parts.headers;
    if parts.method != Method::POST
        || single(h, METHOD_HEADER) != Some("tools/call")
        || single(h, PROTOCOL_VERSION_HEADER) != Some(ProtocolVersion::V_2026_07_28.as_str())
        || h.contains_key(MCP_SESSION_HEADER)
        || h.contains_key(header::ORIGIN)
        || h.keys()
            .any(|k| k.as_str().starts_with(PARAM_HEADER_PREFIX))
        || !host_allowed(parts, allowed)
        || !accepts_json_and_sse(h)
    {
        return None;
    }
    let content_type = single(h, header::CONTENT_TYPE.as_str())?;
    let essence = content_type.split(';').next().unwrap_or_default().trim();
    if !essence.eq_ignore_ascii_case(JSON) {
        return None;
    }
    // A Base64-wrapped name is decoded by rmcp; plain names only here.
    let name = single(h, NAME_HEADER)?;
    (!name.starts_with("=?")).then_some(name)
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
    let call = serde_json::from_slice::<Call>(body).ok()?;
    if call.jsonrpc != "2.0"
        || call.method != "tools/call"
        || call.params.name != name
        || call.params.meta.protocol_version != ProtocolVersion::V_2026_07_28.as_str()
    {
        return None;
    }
    let id = call.id.0;
    let mut params = CallToolRequestParams::new(call.params.name);
    params.arguments = call.params.arguments;
    state.metrics.mcp_direct_calls.inc();
    let result = match Identity::of(parts).and_then(|i| i.resolve(state)) {
        Ok(caller) => answer(state, &caller, parts, params).await,
        Err(e) => Err(e),
    };
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
    Some(respond(&message))
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

/// The one request shape this path takes: a JSON-RPC request for `tools/call` with nothing
/// rmcp would read differently. Unknown fields (a `task`, an `inputResponses`, other `_meta`
/// keys), a float or null id, an escaped string where a borrowed one is expected: the parse
/// fails and the request goes to rmcp. `clientCapabilities` and `clientInfo` are read with
/// rmcp's own types, so a value rmcp would not accept fails here too.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Call<'a> {
    #[serde(borrow)]
    jsonrpc: &'a str,
    id: Id,
    #[serde(borrow)]
    method: &'a str,
    #[serde(borrow)]
    params: Params<'a>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Params<'a> {
    name: String,
    #[serde(default)]
    arguments: Option<JsonObject>,
    #[serde(rename = "_meta", borrow)]
    meta: Meta<'a>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Meta<'a> {
    #[serde(rename = "io.modelcontextprotocol/protocolVersion", borrow)]
    protocol_version: &'a str,
    #[serde(rename = "io.modelcontextprotocol/clientCapabilities")]
    _client_capabilities: ClientCapabilities,
    #[serde(rename = "io.modelcontextprotocol/clientInfo", default)]
    _client_info: Option<Implementation>,
}

/// A JSON-RPC id as rmcp reads one: an `i64` or a string.
struct Id(RequestId);

impl<'de> Deserialize<'de> for Id {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Id, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Id;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an integer or a string")
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Id, E> {
                Ok(Id(RequestId::Number(v)))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Id, E> {
                i64::try_from(v)
                    .map(|v| Id(RequestId::Number(v)))
                    .map_err(|_| E::custom("id out of range"))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Id, E> {
                Ok(Id(RequestId::String(v.into())))
            }
        }
        d.deserialize_any(V)
    }
}

/// The HTTP response rmcp gives a terminal message on the per-request wire.
fn respond(message: &ServerJsonRpcMessage) -> Response {
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
    match serde_json::to_vec(message) {
        Ok(body) => {
            let mut res = Response::new(Body::from(body));
            *res.status_mut() = status;
            res.headers_mut()
                .insert(header::CONTENT_TYPE, HeaderValue::from_static(JSON));
            res
        }
        Err(e) => {
            let mut res = Response::new(Body::from(format!(
                "Internal Server Error: serialize json response: {e}"
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
}
