//! Which `Host` (and `Origin`) may reach the server: loopback and what `--allowed-host` adds.
//!
//! rmcp refuses other hosts on `/mcp` (its DNS-rebinding rule); its host parsing and matching
//! (`parse_allowed_authority`, `parse_host_header`, `host_is_allowed` in
//! `rmcp::transport::streamable_http_server::tower`) are private, so the same rule is kept here
//! for the direct path (`super::direct`) and for every route in `--dev` mode.

use crate::state::AppState;
use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// A host the MCP endpoint accepts, as rmcp compares them: lowercase, no brackets, and a port
/// only when the allowed entry names one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AllowedHost {
    host: String,
    port: Option<u16>,
}

impl AllowedHost {
    /// An `--allowed-host` entry (`name` or `name:port`); `None` when blank.
    pub(crate) fn parse(allowed: &str) -> Option<AllowedHost> {
        let allowed = allowed.trim();
        if allowed.is_empty() {
            return None;
        }
        Some(match axum::http::uri::Authority::try_from(allowed) {
            Ok(a) => AllowedHost {
                host: normalize(a.host()),
                port: a.port_u16(),
            },
            Err(_) => AllowedHost {
                host: normalize(allowed),
                port: None,
            },
        })
    }

    fn admits(&self, host: &str, port: Option<u16>) -> bool {
        self.host == host && self.port.is_none_or(|p| port == Some(p))
    }
}

fn normalize(host: &str) -> String {
    host.trim_matches('[')
        .trim_matches(']')
        .to_ascii_lowercase()
}

/// The names a `Host` header may give: loopback, and what `--allowed-host` adds.
pub(crate) fn allowed_host_names(state: &AppState) -> Vec<String> {
    let mut hosts: Vec<String> = ["localhost", "127.0.0.1", "::1"]
        .into_iter()
        .map(String::from)
        .collect();
    hosts.extend(state.options.allowed_hosts.iter().cloned());
    hosts
}

/// [`allowed_host_names`], parsed.
pub(crate) fn allowed_hosts(state: &AppState) -> Vec<AllowedHost> {
    allowed_host_names(state)
        .iter()
        .filter_map(|h| AllowedHost::parse(h))
        .collect()
}

/// The only value of a header, as text; `None` when absent, repeated or not text.
pub(super) fn single<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    let mut values = headers.get_all(name).iter();
    let first = values.next()?;
    if values.next().is_some() {
        return None;
    }
    first.to_str().ok()
}

/// Whether an `Origin` (`scheme://host[:port]`) names an allowed host.
pub(crate) fn origin_allowed(origin: &str, allowed: &[AllowedHost]) -> bool {
    let Ok(uri) = origin.parse::<axum::http::Uri>() else {
        return false;
    };
    let Some(authority) = uri.authority() else {
        return false;
    };
    let (host, port) = (normalize(authority.host()), authority.port_u16());
    allowed.iter().any(|a| a.admits(&host, port))
}

/// Whether the `Host` header names an allowed host (rmcp's DNS-rebinding rule). A request
/// whose target carries an authority (absolute form) is refused.
pub(crate) fn host_allowed(parts: &Parts, allowed: &[AllowedHost]) -> bool {
    if parts.uri.authority().is_some() {
        return false;
    }
    let Some(host) = single(&parts.headers, header::HOST.as_str()) else {
        return false;
    };
    let Ok(authority) = axum::http::uri::Authority::try_from(host) else {
        return false;
    };
    let (host, port) = (normalize(authority.host()), authority.port_u16());
    allowed.iter().any(|a| a.admits(&host, port))
}

/// `--dev` turns tokens off, so a web page in the operator's browser could reach the server by
/// DNS rebinding (a name it controls pointed at 127.0.0.1). In dev mode every route therefore
/// answers only requests whose `Host` (and `Origin`, when sent) names loopback or an allowed
/// host, as `/mcp` always does.
pub(crate) async fn dev_host_guard(
    State(allowed): State<Arc<Vec<AllowedHost>>>,
    req: Request,
    next: Next,
) -> Response {
    let (parts, body) = req.into_parts();
    let host_ok = host_allowed(&parts, &allowed);
    let origin_ok = parts
        .headers
        .get_all(header::ORIGIN)
        .iter()
        .all(|o| o.to_str().is_ok_and(|o| origin_allowed(o, &allowed)));
    if !host_ok || !origin_ok {
        return crate::error::ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden-host",
            "in --dev mode only loopback hosts (or --allowed-host names) may be used in Host and Origin",
        )
        .into_response();
    }
    next.run(Request::from_parts(parts, body)).await
}
