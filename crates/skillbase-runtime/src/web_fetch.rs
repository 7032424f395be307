//! The built-in `web_fetch` tool: one HTTP(S) request, checked against the call's destination
//! policy on the first request and on every redirect hop.
//!
//! - **Destinations.** Only `http` and `https`. Each hop's host and port must match one of the
//!   call's [`CallContext::hosts_allowed`] patterns (`host`, `host:port`, `*.suffix`; a pattern
//!   without a port means the scheme's default port). An IP-literal URL matches only a pattern
//!   naming that literal (never a `*.suffix` wildcard).
//! - **Internal addresses.** Loopback, private, shared (100.64/10), link-local (including the cloud
//!   metadata address 169.254.169.254), unspecified, multicast and reserved addresses are refused
//!   unless explicitly granted: the URL is that IP literal and a pattern names it, or the host is
//!   `localhost` (which only a `localhost` pattern can match). The check runs on the *resolved*
//!   addresses, in the client's DNS resolver, so a granted name that resolves (or rebinds) to an
//!   internal address is refused too; IP literals never reach the resolver and are checked
//!   directly.
//! - **Redirects** are followed here (the client follows none), at most
//!   [`MAX_REDIRECTS`] hops, each hop checked like the first. Credentials (the `auth` header,
//!   `Authorization`, `Cookie`) are only sent to the origin of the original URL.
//! - **Bounds.** The body is streamed and cut at `max_bytes` (itself capped by the context's
//!   `max_response_bytes`), with `truncated: true`; the whole call is cut at the context's
//!   deadline.
//! - **Secrets.** `auth` attaches a vault entry as a header; the value is resolved inside the
//!   tool through [`CallContext::secret`] (the envelope check), marked sensitive, and never
//!   echoed: the result carries only a few response headers, never the request's.

use crate::redact::Redactor;
use crate::tool::{
    CallContext, Permission, Registry, RegistryError, ToolDecl, ToolError, ToolFuture, ToolHandler,
};
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::header::{self, HeaderMap, HeaderName, HeaderValue};
use reqwest::{Method, StatusCode, Url};
use serde::Deserialize;
use serde_json::json;
use skillbase_format::Cost;
use std::collections::BTreeMap;
use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// The tool's name, and the class a grant names.
pub const NAME: &str = "web_fetch";
/// Largest request body, in bytes.
pub const MAX_BODY_BYTES: usize = 256 * 1024;
/// Redirect hops followed before the call fails.
pub const MAX_REDIRECTS: usize = 5;
/// The rule recorded when a destination is refused.
const DESTINATION_RULE: crate::rule::Rule = crate::rule::Rule::DestinationNotAllowed;

/// The declaration of `web_fetch`.
pub fn declaration() -> ToolDecl {
    ToolDecl {
        name: NAME.into(),
        description: "Fetch a URL over HTTP or HTTPS (GET, HEAD or POST). Only hosts granted to \
                      this call can be reached, on every redirect too. `auth` attaches a vault \
                      entry as a header (the value is never shown). Returns the status, the \
                      final URL, a few response headers and the body as text, cut at max_bytes."
            .into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "url": {
                    "type": "string",
                    "description": "The http:// or https:// URL to fetch.",
                    "minLength": 1,
                    "maxLength": 8192
                },
                "method": {
                    "type": "string",
                    "enum": ["GET", "HEAD", "POST"],
                    "default": "GET"
                },
                "headers": {
                    "type": "object",
                    "description": "Extra request headers (name to value).",
                    "additionalProperties": {"type": "string"}
                },
                "body": {
                    "type": "string",
                    "description": "Request body, for POST (at most 256 KiB).",
                    "maxLength": MAX_BODY_BYTES
                },
                "auth": {
                    "type": "object",
                    "description": "Attach a vault entry as a header: `<scheme> <value>` (just the value when scheme is empty).",
                    "properties": {
                        "vault": {"type": "string", "minLength": 1},
                        "header": {"type": "string", "default": "Authorization", "minLength": 1},
                        "scheme": {"type": "string", "default": "Bearer"}
                    },
                    "required": ["vault"],
                    "additionalProperties": false
                },
                "max_bytes": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "Largest body to return, in bytes (capped by the runtime's limit)."
                }
            },
            "required": ["url"],
            "additionalProperties": false
        }),
        returns: Some(json!({
            "type": "object",
            "properties": {
                "status": {"type": "integer"},
                "url": {"type": "string", "description": "The final URL, after redirects."},
                "headers": {"type": "object", "description": "content-type, content-length and location, when present."},
                "body": {"type": "string", "description": "The body as text (invalid UTF-8 replaced)."},
                "bytes": {"type": "integer", "description": "Body bytes returned."},
                "truncated": {"type": "boolean", "description": "The body was cut at max_bytes."}
            }
        })),
        class: NAME.into(),
        permissions: vec![Permission::Network],
        cost: Cost::Seconds,
        ..ToolDecl::default()
    }
}

/// Register `web_fetch` with its handler.
pub fn register(registry: &mut Registry) -> Result<(), RegistryError> {
    registry.register(declaration(), Some(Arc::new(WebFetch::new())))
}

/// How the client behaves (not what it may reach: that is the call's context).
#[derive(Debug, Clone)]
pub struct WebFetchConfig {
    /// Redirect hops followed, each checked like the first, before the call fails with "too
    /// many redirects" (default [`MAX_REDIRECTS`]).
    pub max_redirects: usize,
    /// The `User-Agent` header of every request (default `skillbase-web-fetch/<version>`).
    pub user_agent: String,
    /// Longest wait to open a connection to a host (default 10 s); the whole call is still
    /// bounded by the context's deadline.
    pub connect_timeout: Duration,
}

impl Default for WebFetchConfig {
    fn default() -> Self {
        WebFetchConfig {
            max_redirects: MAX_REDIRECTS,
            user_agent: concat!("skillbase-web-fetch/", env!("CARGO_PKG_VERSION")).into(),
            connect_timeout: Duration::from_secs(10),
        }
    }
}

type LookupFuture = Pin<Box<dyn Future<Output = std::io::Result<Vec<SocketAddr>>> + Send>>;
/// Name resolution before filtering (the system resolver, or a fixed table in tests).
type Lookup = Arc<dyn Fn(String) -> LookupFuture + Send + Sync>;

fn system_lookup() -> Lookup {
    Arc::new(|name: String| {
        Box::pin(async move { Ok(tokio::net::lookup_host((name.as_str(), 0)).await?.collect()) })
    })
}

/// The `web_fetch` handler: an HTTP client (built on first use, shared by calls) and its config.
pub struct WebFetch {
    client: OnceLock<Result<reqwest::Client, String>>,
    config: WebFetchConfig,
    lookup: Lookup,
}

impl Default for WebFetch {
    fn default() -> Self {
        WebFetch::new()
    }
}

impl WebFetch {
    /// A handler with [`WebFetchConfig::default`]; the client is built at the first call.
    pub fn new() -> WebFetch {
        WebFetch::with_config(WebFetchConfig::default())
    }

    /// A handler with its own client settings (the destination policy still comes from each
    /// call's context).
    pub fn with_config(config: WebFetchConfig) -> WebFetch {
        WebFetch {
            client: OnceLock::new(),
            config,
            lookup: system_lookup(),
        }
    }

    #[cfg(test)]
    fn with_lookup(lookup: Lookup) -> WebFetch {
        WebFetch {
            lookup,
            ..WebFetch::new()
        }
    }

    pub(crate) fn client(&self) -> Result<reqwest::Client, ToolError> {
        self.client
            .get_or_init(|| build_client(&self.config, self.lookup.clone()))
            .clone()
            .map_err(|e| ToolError::new(format!("web_fetch: the HTTP client could not start: {e}")))
    }
}

/// The bundled Mozilla roots (`webpki-root-certs`), as reqwest certificates.
pub(crate) fn bundled_roots() -> Vec<reqwest::Certificate> {
    webpki_root_certs::TLS_SERVER_ROOT_CERTS
        .iter()
        .filter_map(|der| reqwest::Certificate::from_der(der.as_ref()).ok())
        .collect()
}

fn build_client(config: &WebFetchConfig, lookup: Lookup) -> Result<reqwest::Client, String> {
    // Bundled Mozilla roots only: no platform store, nothing loaded at run time.
    let roots = bundled_roots();
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        // A proxy would resolve names itself, out of reach of the resolver's checks.
        .no_proxy()
        .dns_resolver(Arc::new(SafeResolver { lookup }))
        .tls_certs_only(roots)
        .connect_timeout(config.connect_timeout)
        .user_agent(config.user_agent.clone())
        .build()
        .map_err(|e| error_chain(&e))
}

impl ToolHandler for WebFetch {
    fn call(&self, ctx: CallContext, args: serde_json::Value) -> ToolFuture {
        let client = self.client();
        let max_redirects = self.config.max_redirects;
        Box::pin(async move { fetch(client?, max_redirects, ctx, args).await })
    }
}

impl WebFetch {
    /// Redirect hops this client follows.
    pub(crate) fn max_redirects(&self) -> usize {
        self.config.max_redirects
    }
}

// ---------------------------------------------------------------------------------------------
// Destination policy.

/// Whether an address is internal: loopback, private, shared, link-local, unspecified,
/// multicast, broadcast or reserved (IPv4 embedded in IPv6 judged as IPv4).
pub fn is_internal(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_internal_v4(v4),
        IpAddr::V6(v6) => is_internal_v6(v6),
    }
}

fn is_internal_v4(ip: Ipv4Addr) -> bool {
    let o = ip.octets();
    o[0] == 0 // "this network", including 0.0.0.0
        || o[0] == 10
        || o[0] == 127
        || (o[0] == 100 && (o[1] & 0xc0) == 64) // 100.64/10
        || (o[0] == 169 && o[1] == 254) // link-local, cloud metadata
        || (o[0] == 172 && (o[1] & 0xf0) == 16) // 172.16/12
        || (o[0] == 192 && o[1] == 168)
        || (o[0] == 192 && o[1] == 0 && o[2] == 0) // IETF protocol assignments
        || (o[0] == 198 && (o[1] & 0xfe) == 18) // benchmarking, 198.18/15
        || o[0] >= 224 // multicast, reserved, broadcast
}

fn is_internal_v6(ip: Ipv6Addr) -> bool {
    let s = ip.segments();
    let embedded =
        |hi: u16, lo: u16| Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8);
    if let Some(v4) = ip.to_ipv4_mapped() {
        return is_internal_v4(v4);
    }
    // ::/96 (unspecified, loopback, deprecated IPv4-compatible).
    if s[..6].iter().all(|&x| x == 0) {
        return true;
    }
    // NAT64 (64:ff9b::/96): judge the embedded IPv4 address.
    if s[0] == 0x64 && s[1] == 0xff9b && s[2..6].iter().all(|&x| x == 0) {
        return is_internal_v4(embedded(s[6], s[7]));
    }
    // Local-use NAT64 (64:ff9b:1::/48).
    if s[0] == 0x64 && s[1] == 0xff9b && s[2] == 1 {
        return true;
    }
    // 6to4 (2002::/16): judge the embedded IPv4 address.
    if s[0] == 0x2002 {
        return is_internal_v4(embedded(s[1], s[2]));
    }
    (s[0] & 0xfe00) == 0xfc00 // unique local, fc00::/7
        || (s[0] & 0xffc0) == 0xfe80 // link-local, fe80::/10
        || (s[0] & 0xffc0) == 0xfec0 // site-local (deprecated), fec0::/10
        || (s[0] & 0xff00) == 0xff00 // multicast
}

fn is_localhost_name(name: &str) -> bool {
    name.trim_end_matches('.').eq_ignore_ascii_case("localhost")
}

/// Whether a resolved address may be used for `name`. Internal addresses never are, except
/// loopback for `localhost`: the host was checked against the call's patterns before any lookup,
/// and only a `localhost` pattern (an explicit grant) matches that name.
fn resolved_allowed(name: &str, ip: IpAddr) -> bool {
    let loopback = match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => {
            v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    };
    !is_internal(ip) || (loopback && is_localhost_name(name))
}

/// Check one hop's URL against the call's patterns: scheme, host and port; an internal IP
/// literal only when a pattern names it. Returns the refusal message.
pub fn check_destination(url: &Url, allowed: &[String], r: &Redactor) -> Result<(), String> {
    let scheme = url.scheme();
    let default_port = match scheme {
        "http" => 80,
        "https" => 443,
        other => {
            return Err(format!(
                "only http and https URLs can be fetched, not '{other}:' ({})",
                short_url(r, url)
            ));
        }
    };
    let Some(host_str) = url.host_str().filter(|h| !h.is_empty()) else {
        return Err(format!("'{}' has no host", short_url(r, url)));
    };
    let port = url.port_or_known_default().unwrap_or(default_port);
    let ip_literal = ip_literal(host_str);
    let granted = allowed.iter().any(|p| {
        // A wildcard names a domain's subdomains, never an IP literal.
        !(ip_literal.is_some() && p.starts_with("*."))
            && crate::envelope::host_matches(p, host_str, port, default_port)
    });
    if !granted {
        return Err(format!(
            "{scheme}://{host_str}:{port} is not among the hosts this call may reach"
        ));
    }
    // An IP literal matched only by a pattern that names it: an internal one is explicitly
    // granted. Names are checked on their resolved addresses (see `SafeResolver`).
    Ok(())
}

/// The address of an IP-literal host as the URL parser writes it (`1.2.3.4`, `[::1]`; other
/// IPv4 spellings are normalised by the parser, and a domain never parses as IPv4).
fn ip_literal(host: &str) -> Option<IpAddr> {
    match host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        Some(v6) => v6.parse::<Ipv6Addr>().ok().map(IpAddr::V6),
        None => host.parse::<Ipv4Addr>().ok().map(IpAddr::V4),
    }
}

/// A URL for a message: redacted whole, then cut to 200 bytes (never ending in the start of a
/// secret).
fn short_url(r: &Redactor, url: &Url) -> String {
    match r.redact_and_cut(url.as_str(), 200) {
        (s, false) => s,
        (s, true) => format!("{s}..."),
    }
}

/// A name that resolved only to internal addresses.
#[derive(Debug)]
struct BlockedAddress {
    host: String,
}

impl std::fmt::Display for BlockedAddress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "'{}' resolves only to loopback, private, link-local or other internal addresses, which are not granted",
            self.host
        )
    }
}

impl std::error::Error for BlockedAddress {}

/// The client's resolver: resolves with the system (tokio), then drops internal addresses, so
/// a granted name that resolves or rebinds to one is refused at connect time.
struct SafeResolver {
    lookup: Lookup,
}

impl Resolve for SafeResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_owned();
        let lookup = self.lookup.clone();
        Box::pin(async move {
            let addrs = lookup(host.clone()).await?;
            if addrs.is_empty() {
                return Err(format!("'{host}' did not resolve to any address").into());
            }
            let kept: Vec<SocketAddr> = addrs
                .into_iter()
                .filter(|a| resolved_allowed(&host, a.ip()))
                .collect();
            if kept.is_empty() {
                return Err(
                    Box::new(BlockedAddress { host }) as Box<dyn std::error::Error + Send + Sync>
                );
            }
            Ok(Box::new(kept.into_iter()) as Addrs)
        })
    }
}

// ---------------------------------------------------------------------------------------------
// The call.

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    url: String,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    auth: Option<AuthArg>,
    #[serde(default)]
    max_bytes: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AuthArg {
    vault: String,
    #[serde(default = "default_auth_header")]
    header: String,
    #[serde(default = "default_auth_scheme")]
    scheme: String,
}

fn default_auth_header() -> String {
    "Authorization".into()
}

fn default_auth_scheme() -> String {
    "Bearer".into()
}

/// Headers not carried to another origin on a redirect.
fn credential_header(name: &HeaderName) -> bool {
    matches!(name.as_str(), "authorization" | "cookie")
}

pub(crate) fn header_name(name: &str) -> Result<HeaderName, ToolError> {
    // Input is not quoted back (see `Rule::NotOffered`).
    crate::gateway::spec::header_name(name).map_err(ToolError::new)
}

fn refuse(ctx: &CallContext, message: String) -> ToolError {
    ctx.refuse(DESTINATION_RULE, &message);
    ToolError::new(message)
}

/// `error: source: source...`, the chain of an error in one line (a cause already quoted by
/// the text before it is not repeated). HTTP clients' errors say what failed only in their
/// sources; the runtime, the semantic stage and dreaming's model client report them with this.
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut cur = e.source();
    while let Some(s) = cur {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        cur = s.source();
    }
    out
}

fn find_blocked<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a BlockedAddress> {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(b) = err.downcast_ref::<BlockedAddress>() {
            return Some(b);
        }
        cur = err.source();
    }
    None
}

fn send_error(ctx: &CallContext, r: &Redactor, url: &Url, e: reqwest::Error) -> ToolError {
    if let Some(b) = find_blocked(&e) {
        return refuse(ctx, b.to_string());
    }
    let what = if e.is_connect() {
        "could not connect"
    } else if e.is_timeout() {
        "timed out"
    } else {
        "failed"
    };
    // reqwest's own message names the URL; give the causes after ours.
    let mut causes = Vec::new();
    let mut cur = std::error::Error::source(&e);
    while let Some(s) = cur {
        causes.push(s.to_string());
        cur = s.source();
    }
    causes.dedup();
    let detail = if causes.is_empty() {
        e.to_string()
    } else {
        causes.join(": ")
    };
    // The detail may quote the URL again: redacted here, before anything cuts it.
    let detail = r.redact(&detail);
    ToolError::new(format!("request to {} {what}: {detail}", short_url(r, url)))
}

async fn fetch(
    client: reqwest::Client,
    max_redirects: usize,
    ctx: CallContext,
    args: serde_json::Value,
) -> Result<serde_json::Value, ToolError> {
    let args: Args = serde_json::from_value(args)
        .map_err(|e| ToolError::new(format!("web_fetch arguments: {e}")))?;
    let method = match args.method.as_deref().unwrap_or("GET") {
        "GET" => Method::GET,
        "HEAD" => Method::HEAD,
        "POST" => Method::POST,
        _ => {
            return Err(ToolError::new(
                "the method is not supported; use GET, HEAD or POST",
            ));
        }
    };
    if args.body.is_some() && method != Method::POST {
        return Err(ToolError::new("a body can only be sent with POST"));
    }
    let cap = match args.max_bytes {
        Some(0) => return Err(ToolError::new("max_bytes must be at least 1")),
        Some(m) => usize::try_from(m)
            .unwrap_or(usize::MAX)
            .min(ctx.max_response_bytes),
        None => ctx.max_response_bytes,
    };
    let url = Url::parse(&args.url)
        .map_err(|e| ToolError::new(format!("`url` is not a valid URL: {e}")))?;
    let mut headers = HeaderMap::new();
    for (name, value) in &args.headers {
        let n = header_name(name)?;
        let v = HeaderValue::from_str(value)
            .map_err(|_| ToolError::new("a header value is not valid (visible ASCII only)"))?;
        headers.insert(n, v);
    }
    let mut auth = Vec::new();
    if let Some(a) = &args.auth {
        let prefix = if a.scheme.is_empty() {
            String::new()
        } else {
            format!("{} ", a.scheme)
        };
        auth.push((header_name(&a.header)?, a.vault.clone(), prefix));
    }
    let request = Request {
        method,
        url,
        headers,
        body: args.body.map(String::into_bytes),
        auth,
        cap,
    };
    execute(&client, max_redirects, &ctx, request).await
}

/// One request as `web_fetch` makes it (also what an `http` tool sends).
pub(crate) struct Request {
    /// The method (a body goes with any method but GET and HEAD).
    pub method: Method,
    /// Where it goes first.
    pub url: Url,
    /// Headers set by the caller (never the reserved ones).
    pub headers: HeaderMap,
    /// The body, at most [`MAX_BODY_BYTES`].
    pub body: Option<Vec<u8>>,
    /// Headers whose value is a vault entry: (header, entry, text before the value); resolved
    /// through the call's envelope, sent only to the original origin.
    pub auth: Vec<(HeaderName, String, String)>,
    /// Most body bytes returned.
    pub cap: usize,
}

/// Make `request` under the call's destination policy, following redirects by hand.
pub(crate) async fn execute(
    client: &reqwest::Client,
    max_redirects: usize,
    ctx: &CallContext,
    request: Request,
) -> Result<serde_json::Value, ToolError> {
    let Request {
        method,
        url: origin,
        headers,
        body,
        auth: auth_spec,
        cap,
    } = request;
    if let Some(b) = &body
        && b.len() > MAX_BODY_BYTES
    {
        return Err(ToolError::new(format!(
            "the body is {} bytes, over the {MAX_BODY_BYTES}-byte limit",
            b.len()
        )));
    }
    let r = ctx.redactor();
    let r = &*r;
    // Check the first destination before touching the vault: a refused URL resolves nothing.
    check_destination(&origin, &ctx.hosts_allowed, r).map_err(|m| refuse(ctx, m))?;
    let auth = resolve_auth(ctx, &auth_spec)?;
    let ctx = ctx.clone();

    let deadline = tokio::time::Instant::now() + ctx.deadline;
    let fetch = Fetch {
        client,
        ctx: &ctx,
        r,
        origin: &origin,
        headers: &headers,
        auth: &auth,
        max_redirects,
        cap,
    };
    match tokio::time::timeout_at(deadline, fetch.follow(method, body)).await {
        Ok(r) => r,
        Err(_) => Err(ToolError::new(format!(
            "web_fetch of {} timed out after {:.1} s",
            short_url(r, &origin),
            ctx.deadline.as_secs_f64()
        ))),
    }
}

/// The `auth` headers with their values: each vault entry resolved through the call's envelope,
/// after its prefix, and marked sensitive (the bytes put together are wiped).
fn resolve_auth(
    ctx: &CallContext,
    spec: &[(HeaderName, String, String)],
) -> Result<Vec<(HeaderName, HeaderValue)>, ToolError> {
    let mut auth = Vec::with_capacity(spec.len());
    for (name, vault, prefix) in spec {
        let secret = ctx.secret(vault)?;
        let mut raw = Vec::with_capacity(prefix.len() + secret.expose().len());
        raw.extend_from_slice(prefix.as_bytes());
        raw.extend_from_slice(secret.expose());
        let value = HeaderValue::from_bytes(&raw);
        zeroize::Zeroize::zeroize(&mut raw);
        let mut value = value.map_err(|_| {
            ToolError::new(format!(
                "vault entry '{vault}' cannot be sent as a header value"
            ))
        })?;
        value.set_sensitive(true);
        auth.push((name.clone(), value));
    }
    Ok(auth)
}

/// What every hop of one request shares: the client, the call, the original URL (whose origin
/// alone is sent credentials), the caller's headers, the resolved `auth` headers and the bounds.
struct Fetch<'a> {
    client: &'a reqwest::Client,
    ctx: &'a CallContext,
    r: &'a Redactor,
    origin: &'a Url,
    headers: &'a HeaderMap,
    auth: &'a [(HeaderName, HeaderValue)],
    max_redirects: usize,
    cap: usize,
}

impl Fetch<'_> {
    /// Send the request and follow its redirects, each hop checked against the destination
    /// policy, until a response that is not a redirect: that one is read as the result.
    async fn follow(
        &self,
        mut method: Method,
        mut body: Option<Vec<u8>>,
    ) -> Result<serde_json::Value, ToolError> {
        let mut url = self.origin.clone();
        let mut hops = 0usize;
        loop {
            self.check(&url, hops)?;
            let resp = self.send(&method, &url, body.as_deref(), hops).await?;
            let status = resp.status();
            let location = resp.headers().get(header::LOCATION).cloned();
            match (is_redirect(status), location) {
                (true, Some(loc)) => {
                    drop(resp);
                    hops += 1;
                    let next = self.redirect_target(&url, &loc, hops)?;
                    if redirect_drops_body(status, &method) {
                        if method != Method::HEAD {
                            method = Method::GET;
                        }
                        body = None;
                    }
                    url = next;
                }
                _ => return read_response(resp, method == Method::HEAD, self.cap, self.r).await,
            }
        }
    }

    /// Check a hop's destination. A refused redirect names both what was asked for and the
    /// hop that was refused.
    fn check(&self, url: &Url, hops: usize) -> Result<(), ToolError> {
        let r = self.r;
        check_destination(url, &self.ctx.hosts_allowed, r).map_err(|m| {
            if hops == 0 {
                refuse(self.ctx, m)
            } else {
                // Name both: what was asked for, and the hop that was refused.
                refuse(
                    self.ctx,
                    format!(
                        "{} redirected (hop {hops}) to {}, which was refused: {m}",
                        short_url(r, self.origin),
                        short_url(r, url)
                    ),
                )
            }
        })
    }

    /// Send one hop: the caller's headers, less the credentials when it leaves the original
    /// origin, and with the `auth` headers only when it does not.
    async fn send(
        &self,
        method: &Method,
        url: &Url,
        body: Option<&[u8]>,
        hops: usize,
    ) -> Result<reqwest::Response, ToolError> {
        let same_origin = url.origin() == self.origin.origin();
        let mut hop_headers = self.headers.clone();
        if !same_origin {
            strip_credentials(&mut hop_headers);
        }
        if same_origin {
            for (n, v) in self.auth {
                hop_headers.insert(n.clone(), v.clone());
            }
        }
        let shown = short_url(self.r, url);
        tracing::debug!(call = %self.ctx.call_id, method = %method, url = %shown, hop = hops, "web_fetch");
        let mut req = self
            .client
            .request(method.clone(), url.clone())
            .headers(hop_headers);
        if let Some(b) = body {
            req = req.body(b.to_vec());
        }
        req.send()
            .await
            .map_err(|e| send_error(self.ctx, self.r, url, e))
    }

    /// Where a redirect from `url` goes (its `Location`, resolved against `url`); `hops`
    /// counts this one, and past `max_redirects` the call fails.
    fn redirect_target(&self, url: &Url, loc: &HeaderValue, hops: usize) -> Result<Url, ToolError> {
        let r = self.r;
        let loc = loc.to_str().map_err(|_| {
            ToolError::new(format!(
                "{} redirected to an unreadable location",
                short_url(r, url)
            ))
        })?;
        let next = url.join(loc).map_err(|e| {
            ToolError::new(format!(
                "{} redirected to an invalid location: {}",
                short_url(r, url),
                r.redact(&e.to_string())
            ))
        })?;
        if hops > self.max_redirects {
            return Err(ToolError::new(format!(
                "too many redirects: more than {} hops (the last from {} to {})",
                self.max_redirects,
                short_url(r, url),
                short_url(r, &next)
            )));
        }
        Ok(next)
    }
}

/// Whether `status` is a redirect that is followed (301, 302, 303, 307 and 308).
fn is_redirect(status: StatusCode) -> bool {
    matches!(
        status,
        StatusCode::MOVED_PERMANENTLY
            | StatusCode::FOUND
            | StatusCode::SEE_OTHER
            | StatusCode::TEMPORARY_REDIRECT
            | StatusCode::PERMANENT_REDIRECT
    )
}

/// Whether a redirect with `status` is followed without the body (and as a GET, unless the
/// request is a HEAD): a 303, or a 301 or 302 answering a POST.
fn redirect_drops_body(status: StatusCode, method: &Method) -> bool {
    status == StatusCode::SEE_OTHER
        || (*method == Method::POST
            && matches!(status, StatusCode::MOVED_PERMANENTLY | StatusCode::FOUND))
}

fn strip_credentials(headers: &mut HeaderMap) {
    let names: Vec<HeaderName> = headers
        .keys()
        .filter(|n| credential_header(n))
        .cloned()
        .collect();
    for n in names {
        headers.remove(n);
    }
}

/// The response as the tool's result. The body is read a little past `cap` (by the longest form
/// of a secret), redacted whole, and only then cut to `cap` bytes: a cut can never leave the
/// first characters of a secret that the whole body would have redacted.
async fn read_response(
    mut resp: reqwest::Response,
    head: bool,
    cap: usize,
    r: &Redactor,
) -> Result<serde_json::Value, ToolError> {
    let status = resp.status().as_u16();
    let final_url = r.redact(resp.url().as_str()).into_owned();
    let mut headers = serde_json::Map::new();
    for name in [
        header::CONTENT_TYPE,
        header::CONTENT_LENGTH,
        header::LOCATION,
    ] {
        if let Some(v) = resp.headers().get(&name).and_then(|v| v.to_str().ok()) {
            headers.insert(name.as_str().to_owned(), json!(r.redact(v)));
        }
    }
    let read_to = cap.saturating_add(r.longest_form());
    let mut buf: Vec<u8> = Vec::new();
    let mut more = false;
    if !head {
        while let Some(chunk) = resp.chunk().await.map_err(|e| {
            ToolError::new(format!(
                "reading the body of {final_url} failed: {}",
                r.redact(&error_chain(&e))
            ))
        })? {
            let room = read_to - buf.len();
            if chunk.len() > room {
                buf.extend_from_slice(&chunk[..room]);
                more = true;
                break;
            }
            buf.extend_from_slice(&chunk);
        }
    }
    drop(resp);
    if more || buf.len() > cap {
        // Do not end on half a character.
        if let Err(e) = std::str::from_utf8(&buf)
            && e.error_len().is_none()
        {
            buf.truncate(e.valid_up_to());
        }
    }
    let text = String::from_utf8_lossy(&buf);
    let (body, cut) = r.redact_and_cut(&text, cap);
    let truncated = more || cut;
    let bytes = body.len();
    let mut out = json!({
        "status": status,
        "url": final_url,
        "headers": headers,
        "body": body,
        "bytes": bytes,
        "truncated": truncated,
    });
    if truncated {
        out["note"] = json!(format!("the body was cut at {cap} bytes"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vault::{Vault, VaultKey};
    use sha2::{Digest, Sha256};
    use skillbase_store::{Author, DbUrl, Store};
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    // -- A tiny HTTP/1.1 server on 127.0.0.1 ---------------------------------------------------

    struct Req {
        path: String,
        headers: Vec<(String, String)>,
    }

    impl Req {
        fn header(&self, name: &str) -> Option<&str> {
            self.headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.as_str())
        }
    }

    enum Reply {
        Bytes(Vec<u8>),
        Hang,
    }

    type Responder = Arc<dyn Fn(&Req, u16) -> Reply + Send + Sync>;

    struct Server {
        port: u16,
        hits: Arc<AtomicUsize>,
        seen: Arc<Mutex<Vec<Req>>>,
    }

    impl Server {
        fn hits(&self) -> usize {
            self.hits.load(Ordering::SeqCst)
        }
    }

    async fn serve(responder: impl Fn(&Req, u16) -> Reply + Send + Sync + 'static) -> Server {
        let responder: Responder = Arc::new(responder);
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let hits = Arc::new(AtomicUsize::new(0));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (h, sn) = (hits.clone(), seen.clone());
        tokio::spawn(async move {
            loop {
                let Ok((mut sock, _)) = listener.accept().await else {
                    return;
                };
                h.fetch_add(1, Ordering::SeqCst);
                let (responder, sn) = (responder.clone(), sn.clone());
                tokio::spawn(async move {
                    let mut buf = Vec::new();
                    let mut tmp = [0u8; 4096];
                    let head_end = loop {
                        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                            break i;
                        }
                        match sock.read(&mut tmp).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&tmp[..n]),
                        }
                    };
                    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
                    let mut lines = head.split("\r\n");
                    let path = lines
                        .next()
                        .and_then(|l| l.split(' ').nth(1))
                        .unwrap_or("/")
                        .to_owned();
                    let headers: Vec<(String, String)> = lines
                        .filter_map(|l| l.split_once(':'))
                        .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
                        .collect();
                    let req = Req { path, headers };
                    let len: usize = req
                        .header("content-length")
                        .and_then(|v| v.parse().ok())
                        .unwrap_or(0);
                    while buf.len() < head_end + 4 + len {
                        match sock.read(&mut tmp).await {
                            Ok(0) | Err(_) => break,
                            Ok(n) => buf.extend_from_slice(&tmp[..n]),
                        }
                    }
                    let reply = responder(&req, port);
                    sn.lock().unwrap().push(req);
                    match reply {
                        Reply::Bytes(b) => {
                            let _ = sock.write_all(&b).await;
                            let _ = sock.shutdown().await;
                        }
                        Reply::Hang => tokio::time::sleep(Duration::from_secs(30)).await,
                    }
                });
            }
        });
        Server { port, hits, seen }
    }

    fn http(status: &str, headers: &[(&str, &str)], body: &[u8]) -> Reply {
        let mut out = format!(
            "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n",
            body.len()
        );
        for (n, v) in headers {
            out.push_str(&format!("{n}: {v}\r\n"));
        }
        out.push_str("\r\n");
        let mut out = out.into_bytes();
        out.extend_from_slice(body);
        Reply::Bytes(out)
    }

    fn redirect(to: &str) -> Reply {
        http("302 Found", &[("Location", to)], b"")
    }

    // -- Contexts ------------------------------------------------------------------------------

    fn ctx_with(
        hosts: &[String],
        vault: Option<Arc<Vault>>,
        vault_allowed: &[&str],
    ) -> CallContext {
        CallContext {
            agent: "tester".into(),
            session: "s1".into(),
            call_id: "call-1".into(),
            skill: None,
            vault_allowed: Arc::new(vault_allowed.iter().map(|s| s.to_string()).collect()),
            hosts_allowed: Arc::new(hosts.to_vec()),
            vault,
            refusals: Arc::new(Mutex::new(Vec::new())),
            deadline: Duration::from_secs(10),
            max_response_bytes: 1024 * 1024,
            trace: None,
        }
    }

    fn ctx(hosts: &[String]) -> CallContext {
        ctx_with(hosts, None, &[])
    }

    fn rules(ctx: &CallContext) -> Vec<String> {
        ctx.refusals
            .lock()
            .unwrap()
            .iter()
            .map(|r| r.rule.as_str().to_owned())
            .collect()
    }

    async fn call(
        tool: &WebFetch,
        ctx: &CallContext,
        args: serde_json::Value,
    ) -> Result<serde_json::Value, ToolError> {
        tool.call(ctx.clone(), args).await
    }

    fn grant(port: u16) -> Vec<String> {
        vec![format!("127.0.0.1:{port}")]
    }

    // -- Policy, without the network -----------------------------------------------------------

    #[test]
    fn internal_addresses() {
        for ip in [
            "127.0.0.1",
            "127.8.9.1",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "100.64.0.1",
            "100.127.255.255",
            "169.254.169.254",
            "0.0.0.0",
            "224.0.0.1",
            "255.255.255.255",
            "::1",
            "::",
            "fc00::1",
            "fd12::1",
            "fe80::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "64:ff9b::a00:1",
            "2002:7f00:1::1",
        ] {
            assert!(is_internal(ip.parse().unwrap()), "{ip} is internal");
        }
        for ip in [
            "8.8.8.8",
            "172.32.0.1",
            "100.128.0.1",
            "93.184.216.34",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
        ] {
            assert!(!is_internal(ip.parse().unwrap()), "{ip} is public");
        }
        assert!(resolved_allowed("localhost", "127.0.0.1".parse().unwrap()));
        assert!(resolved_allowed("localhost.", "::1".parse().unwrap()));
        assert!(!resolved_allowed("localhost", "10.0.0.1".parse().unwrap()));
        assert!(!resolved_allowed(
            "api.example.com",
            "127.0.0.1".parse().unwrap()
        ));
        assert!(resolved_allowed(
            "api.example.com",
            "93.184.216.34".parse().unwrap()
        ));
    }

    #[test]
    fn destination_patterns() {
        let allowed: Vec<String> = [
            "*.example.com",
            "api.test.org:8443",
            "10.0.0.5",
            "[::1]:9000",
            "*.0.1",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let ok =
            |u: &str| check_destination(&Url::parse(u).unwrap(), &allowed, &Redactor::default());
        assert!(ok("https://a.example.com/x").is_ok());
        assert!(
            ok("http://a.example.com/x").is_ok(),
            "no port in the pattern: the scheme's default"
        );
        assert!(ok("https://a.example.com:8443/x").is_err());
        assert!(ok("https://example.com/").is_err());
        assert!(ok("https://api.test.org:8443/").is_ok());
        assert!(ok("https://api.test.org/").is_err());
        assert!(
            ok("http://10.0.0.5/").is_ok(),
            "an IP literal named by a pattern is explicitly granted"
        );
        assert!(ok("http://10.0.0.5:8080/").is_err());
        assert!(ok("http://[::1]:9000/").is_ok());
        // A wildcard never matches an IP literal, whatever its spelling.
        assert!(ok("https://127.0.0.1/").is_err());
        assert!(ok("https://2130706433/").is_err());
        assert!(ok("https://0x7f.0.0.1/").is_err());
        assert!(ok("https://[::ffff:127.0.0.1]/").is_err());
        assert!(ok("https://localhost/").is_err());
        let e = ok("file:///etc/passwd").unwrap_err();
        assert!(e.contains("only http and https"), "{e}");
        assert!(ok("ftp://a.example.com/").is_err());
    }

    #[test]
    fn declaration_registers() {
        let mut r = Registry::new();
        register(&mut r).unwrap();
        let t = r.get(NAME).unwrap();
        assert_eq!(t.decl.class, "web_fetch");
        assert_eq!(t.decl.permissions, vec![Permission::Network]);
        assert_eq!(t.decl.cost, Cost::Seconds);
        assert!(t.handler.is_some());
        let good = json!({"url": "https://x.example.com", "method": "POST", "headers": {"Accept": "text/plain"},
            "body": "hi", "auth": {"vault": "TOKEN"}, "max_bytes": 10});
        assert!(t.validator.is_valid(&good));
        assert!(
            !t.validator
                .is_valid(&json!({"url": "https://x", "method": "PUT"}))
        );
        assert!(
            !t.validator
                .is_valid(&json!({"url": "https://x", "headers": {"a": 1}}))
        );
        assert!(
            !t.validator
                .is_valid(&json!({"url": "https://x", "body": "a".repeat(MAX_BODY_BYTES + 1)}))
        );
        assert!(!t.validator.is_valid(&json!({"method": "GET"})));
    }

    // -- Against a local server ----------------------------------------------------------------

    #[tokio::test]
    async fn fetches_an_explicitly_granted_host() {
        let srv = serve(|req, _| match req.path.as_str() {
            "/hello" => http(
                "200 OK",
                &[("Content-Type", "text/plain"), ("X-Secret-Ish", "no")],
                b"hello there",
            ),
            _ => http("404 Not Found", &[], b"nope"),
        })
        .await;
        let tool = WebFetch::new();
        let c = ctx(&grant(srv.port));
        let url = format!("http://127.0.0.1:{}/hello", srv.port);
        let r = call(&tool, &c, json!({"url": url})).await.unwrap();
        assert_eq!(r["status"], 200);
        assert_eq!(r["url"], url);
        assert_eq!(r["body"], "hello there");
        assert_eq!(r["truncated"], false);
        assert_eq!(r["headers"]["content-type"], "text/plain");
        assert!(
            r["headers"].get("x-secret-ish").is_none(),
            "only a few safe headers"
        );
        // HEAD: no body.
        let r = call(&tool, &c, json!({"url": url, "method": "HEAD"}))
            .await
            .unwrap();
        assert_eq!(r["status"], 200);
        assert_eq!(r["body"], "");
        let r = call(
            &tool,
            &c,
            json!({"url": format!("http://127.0.0.1:{}/missing", srv.port)}),
        )
        .await
        .unwrap();
        assert_eq!(r["status"], 404);
        assert!(rules(&c).is_empty());
        // The same server on a port not granted.
        let c2 = ctx(&["127.0.0.1".to_string()]);
        let e = call(&tool, &c2, json!({"url": url})).await.unwrap_err();
        assert!(e.message.contains("not among the hosts"), "{e}");
        assert_eq!(rules(&c2), vec!["destination_not_allowed"]);
    }

    #[tokio::test]
    async fn redirects_are_checked_on_every_hop() {
        let other = serve(|_, _| http("200 OK", &[], b"other")).await;
        let other_port = other.port;
        let srv = serve(move |req, port| match req.path.as_str() {
            "/meta" => redirect("http://169.254.169.254/latest/meta-data"),
            "/local" => redirect(&format!("http://localhost:{other_port}/")),
            "/file" => redirect("file:///etc/passwd"),
            "/ok" => redirect(&format!("/final?from={port}")),
            _ => http("200 OK", &[], b"final"),
        })
        .await;
        let tool = WebFetch::new();
        let base = format!("http://127.0.0.1:{}", srv.port);

        let c = ctx(&grant(srv.port));
        let e = call(&tool, &c, json!({"url": format!("{base}/meta")}))
            .await
            .unwrap_err();
        assert!(e.message.contains("169.254.169.254"), "{e}");
        assert_eq!(rules(&c), vec!["destination_not_allowed"]);

        let c = ctx(&grant(srv.port));
        let e = call(&tool, &c, json!({"url": format!("{base}/local")}))
            .await
            .unwrap_err();
        assert!(e.message.contains("localhost"), "{e}");
        assert_eq!(rules(&c), vec!["destination_not_allowed"]);
        assert_eq!(other.hits(), 0, "the refused hop was never contacted");

        let c = ctx(&grant(srv.port));
        let e = call(&tool, &c, json!({"url": format!("{base}/file")}))
            .await
            .unwrap_err();
        assert!(e.message.contains("only http and https"), "{e}");

        // A relative redirect on the same granted host is followed.
        let c = ctx(&grant(srv.port));
        let r = call(&tool, &c, json!({"url": format!("{base}/ok")}))
            .await
            .unwrap();
        assert_eq!(r["body"], "final");
        assert_eq!(r["url"], format!("{base}/final?from={}", srv.port));
        assert!(rules(&c).is_empty());
    }

    #[tokio::test]
    async fn redirect_chains_stop_after_five_hops() {
        // /chain/<stop>/<n> redirects to n+1 until n == stop.
        let srv = serve(|req, _| {
            let parts: Vec<usize> = req.path.split('/').filter_map(|p| p.parse().ok()).collect();
            match parts.as_slice() {
                [stop, n] if n < stop => redirect(&format!("/chain/{stop}/{}", n + 1)),
                _ => http("200 OK", &[], b"end"),
            }
        })
        .await;
        let tool = WebFetch::new();
        let c = ctx(&grant(srv.port));
        let r = call(
            &tool,
            &c,
            json!({"url": format!("http://127.0.0.1:{}/chain/5/0", srv.port)}),
        )
        .await
        .unwrap();
        assert_eq!(r["body"], "end");
        assert_eq!(srv.hits(), 6);
        let e = call(
            &tool,
            &c,
            json!({"url": format!("http://127.0.0.1:{}/chain/6/0", srv.port)}),
        )
        .await
        .unwrap_err();
        assert!(e.message.contains("too many redirects"), "{e}");
        assert_eq!(
            srv.hits(),
            6 + 6,
            "stopped at the sixth redirect, not followed"
        );
    }

    #[tokio::test]
    async fn bodies_are_cut_at_the_cap() {
        let srv = serve(|_, _| {
            http(
                "200 OK",
                &[("Content-Type", "text/plain")],
                &[b'x'; 100_000],
            )
        })
        .await;
        let tool = WebFetch::new();
        let url = format!("http://127.0.0.1:{}/big", srv.port);
        let c = ctx(&grant(srv.port));
        let r = call(&tool, &c, json!({"url": url, "max_bytes": 1000}))
            .await
            .unwrap();
        assert_eq!(r["truncated"], true);
        assert_eq!(r["body"].as_str().unwrap().len(), 1000);
        assert_eq!(r["bytes"], 1000);
        assert!(r["note"].as_str().unwrap().contains("1000"));
        // The context's limit caps max_bytes.
        let mut c = ctx(&grant(srv.port));
        c.max_response_bytes = 500;
        let r = call(&tool, &c, json!({"url": url, "max_bytes": 1_000_000}))
            .await
            .unwrap();
        assert_eq!(r["body"].as_str().unwrap().len(), 500);
        assert_eq!(r["truncated"], true);
        // Under the cap: whole.
        let c = ctx(&grant(srv.port));
        let r = call(&tool, &c, json!({"url": url})).await.unwrap();
        assert_eq!(r["body"].as_str().unwrap().len(), 100_000);
        assert_eq!(r["truncated"], false);
    }

    #[tokio::test]
    async fn calls_stop_at_the_deadline() {
        let srv = serve(|_, _| Reply::Hang).await;
        let tool = WebFetch::new();
        let mut c = ctx(&grant(srv.port));
        c.deadline = Duration::from_millis(300);
        let start = std::time::Instant::now();
        let e = call(
            &tool,
            &c,
            json!({"url": format!("http://127.0.0.1:{}/slow", srv.port)}),
        )
        .await
        .unwrap_err();
        assert!(e.message.contains("timed out"), "{e}");
        assert!(start.elapsed() < Duration::from_secs(5));
    }

    #[tokio::test]
    async fn non_http_schemes_are_refused() {
        let tool = WebFetch::new();
        for url in [
            "file:///etc/passwd",
            "ftp://127.0.0.1/",
            "gopher://127.0.0.1:70/",
            "data:text/plain,hi",
        ] {
            let c = ctx(&["127.0.0.1".to_string(), "127.0.0.1:70".to_string()]);
            let e = call(&tool, &c, json!({"url": url})).await.unwrap_err();
            assert!(e.message.contains("only http and https"), "{url}: {e}");
            assert_eq!(rules(&c), vec!["destination_not_allowed"]);
        }
    }

    #[tokio::test]
    async fn internal_addresses_need_an_explicit_grant() {
        let srv = serve(|_, _| http("200 OK", &[], b"internal")).await;
        let port = srv.port;
        let tool = WebFetch::new();
        // `localhost` with only wildcard grants: refused before any lookup or connection.
        let c = ctx(&["*.example.com".to_string(), format!("*.example.com:{port}")]);
        let e = call(
            &tool,
            &c,
            json!({"url": format!("http://localhost:{port}/")}),
        )
        .await
        .unwrap_err();
        assert_eq!(rules(&c), vec!["destination_not_allowed"], "{e}");
        // A granted name that resolves (rebinds) to 127.0.0.1: refused at resolution.
        let rebinding = WebFetch::with_lookup(Arc::new(|_name: String| {
            Box::pin(async { Ok(vec![SocketAddr::from(([127, 0, 0, 1], 0))]) }) as LookupFuture
        }));
        let e = call(
            &rebinding,
            &c,
            json!({"url": format!("http://rebind.example.com:{port}/")}),
        )
        .await
        .unwrap_err();
        assert!(e.message.contains("internal addresses"), "{e}");
        assert_eq!(
            rules(&c),
            vec!["destination_not_allowed", "destination_not_allowed"]
        );
        // Every answer internal (the metadata address among them): refused, nothing contacted.
        let metadata = WebFetch::with_lookup(Arc::new(|_name: String| {
            Box::pin(async {
                Ok(vec![
                    SocketAddr::from(([169, 254, 169, 254], 0)),
                    SocketAddr::from(([10, 0, 0, 1], 0)),
                ])
            }) as LookupFuture
        }));
        let c = ctx(&[format!("*.example.com:{port}")]);
        let e = call(
            &metadata,
            &c,
            json!({"url": format!("http://meta.example.com:{port}/")}),
        )
        .await
        .unwrap_err();
        assert!(e.message.contains("internal addresses"), "{e}");
        assert_eq!(srv.hits(), 0);
        // An explicit `localhost` grant reaches loopback through the real resolver.
        let c = ctx(&[format!("localhost:{port}")]);
        let r = call(
            &tool,
            &c,
            json!({"url": format!("http://localhost:{port}/")}),
        )
        .await
        .unwrap();
        assert_eq!(r["body"], "internal");
        assert_eq!(srv.hits(), 1);
    }

    async fn vault_with(dir: &std::path::Path, name: &str, value: &str) -> Arc<Vault> {
        let store = Arc::new(
            Store::open(&DbUrl::Sqlite(dir.join("skillbase.db")))
                .await
                .unwrap(),
        );
        let vault = Vault::open(store, VaultKey::parse(&"11".repeat(32)).unwrap())
            .await
            .unwrap();
        vault
            .set(
                name,
                "test token",
                value.as_bytes(),
                &Author::Human("tester".into()),
            )
            .await
            .unwrap();
        vault
    }

    fn sha256_hex(s: &str) -> String {
        Sha256::digest(s.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    #[tokio::test]
    async fn vault_entries_become_headers_without_being_shown() {
        const SECRET: &str = "tok-S3CRET-abcdef123456";
        let dir = tempfile::tempdir().unwrap();
        let vault = vault_with(dir.path(), "API_TOKEN", SECRET).await;
        let other = serve(|req, _| {
            let saw = req
                .header("authorization")
                .map(sha256_hex)
                .unwrap_or_else(|| "none".into());
            http("200 OK", &[], saw.as_bytes())
        })
        .await;
        let other_port = other.port;
        let srv = serve(move |req, _| {
            if req.path == "/away" {
                return redirect(&format!("http://127.0.0.1:{other_port}/"));
            }
            let saw = req
                .header("authorization")
                .map(sha256_hex)
                .unwrap_or_else(|| "none".into());
            http("200 OK", &[("Content-Type", "text/plain")], saw.as_bytes())
        })
        .await;
        let tool = WebFetch::new();
        let hosts = vec![
            format!("127.0.0.1:{}", srv.port),
            format!("127.0.0.1:{other_port}"),
        ];
        let c = ctx_with(&hosts, Some(vault.clone()), &["API_TOKEN"]);
        let url = format!("http://127.0.0.1:{}/echo", srv.port);
        let r = call(
            &tool,
            &c,
            json!({"url": url, "auth": {"vault": "API_TOKEN"}}),
        )
        .await
        .unwrap();
        assert_eq!(
            r["body"],
            sha256_hex(&format!("Bearer {SECRET}")),
            "the server saw the header"
        );
        assert!(!r.to_string().contains(SECRET));
        assert!(!r.to_string().contains("S3CRET"));
        assert!(
            srv.seen
                .lock()
                .unwrap()
                .iter()
                .any(|q| q.header("authorization") == Some(&format!("Bearer {SECRET}")))
        );

        // Another header and no scheme.
        let r = call(&tool, &c, json!({"url": url, "auth": {"vault": "API_TOKEN", "header": "X-Api-Key", "scheme": ""}}))
            .await
            .unwrap();
        assert!(
            srv.seen
                .lock()
                .unwrap()
                .iter()
                .any(|q| q.header("x-api-key") == Some(SECRET))
        );
        assert!(!r.to_string().contains(SECRET));

        // Credentials do not follow a redirect to another origin.
        let r = call(&tool, &c, json!({"url": format!("http://127.0.0.1:{}/away", srv.port), "auth": {"vault": "API_TOKEN"},
            "headers": {"Cookie": "a=b", "Accept": "text/plain"}}))
            .await
            .unwrap();
        assert_eq!(r["body"], "none");
        {
            let seen = other.seen.lock().unwrap();
            assert!(
                seen.iter()
                    .all(|q| q.header("cookie").is_none() && q.header("authorization").is_none())
            );
            assert!(
                seen.iter()
                    .any(|q| q.header("accept") == Some("text/plain"))
            );
        }
        assert!(rules(&c).is_empty());

        // An entry outside the envelope: refused, recorded, nothing sent.
        let hits = srv.hits();
        let c = ctx_with(&hosts, Some(vault.clone()), &[]);
        let e = call(
            &tool,
            &c,
            json!({"url": url, "auth": {"vault": "API_TOKEN"}}),
        )
        .await
        .unwrap_err();
        assert!(e.message.contains("not granted"), "{e}");
        assert_eq!(rules(&c), vec!["vault_not_allowed"]);
        assert_eq!(srv.hits(), hits);
        assert!(!e.message.contains(SECRET));
    }

    #[tokio::test]
    async fn bad_arguments_are_errors() {
        let tool = WebFetch::new();
        let c = ctx(&["127.0.0.1:1".to_string()]);
        for (args, want) in [
            (
                json!({"url": "http://127.0.0.1:1/", "body": "x"}),
                "only be sent with POST",
            ),
            (
                json!({"url": "http://127.0.0.1:1/", "headers": {"Host": "evil"}}),
                "set by web_fetch",
            ),
            (
                json!({"url": "http://127.0.0.1:1/", "headers": {"bad name": "x"}}),
                "header name is not valid",
            ),
            (json!({"url": "not a url"}), "not a valid URL"),
            (
                json!({"url": "http://127.0.0.1:1/", "max_bytes": 0}),
                "at least 1",
            ),
        ] {
            let e = call(&tool, &c, args).await.unwrap_err();
            assert!(e.message.contains(want), "{e}");
        }
        assert!(rules(&c).is_empty());
    }
}
