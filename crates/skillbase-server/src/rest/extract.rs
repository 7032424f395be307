//! Extractors that answer `application/problem+json` when a request is malformed, and the small
//! helpers every route shares (the caller, preconditions, scopes, the hidden 404).

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult, json_rejection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use serde::de::DeserializeOwned;
use skillbase_store::{AgentName, Scope};

/// The authenticated caller (attached by the auth middleware).
pub struct Caller(pub Principal);

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        // A malformed `Skillbase-Session` is refused on every route, whoever reads it.
        session_header(&parts.headers)?;
        parts
            .extensions
            .get::<Principal>()
            .cloned()
            .map(Caller)
            .ok_or_else(|| ApiError::internal("the request reached a route without a principal"))
    }
}

/// [`session_header`]'s grammar as a regular expression: 1-128 visible ASCII characters but
/// `/` and `\\`.
pub const SESSION_HEADER_PATTERN: &str = r"^[!-.0-\[\]-~]{1,128}$";

/// The `If-Match` grammar [`precondition`] reads: `*`, or a revision (1-18 digits, quoted or
/// not, optionally weak).
pub const IF_MATCH_PATTERN: &str = r#"^(\*|(W/)?"?[0-9]{1,18}"?)$"#;

/// The `Skillbase-Session` header, if sent: a session id of 1-128 visible ASCII characters
/// (no space, `/` or `\\`), as the OpenAPI document's pattern says. Anything else answers 400.
pub fn session_header(headers: &HeaderMap) -> ApiResult<Option<&str>> {
    let Some(v) = headers.get(crate::rest::SESSION_HEADER) else {
        return Ok(None);
    };
    let b = v.as_bytes();
    let ok = (1..=128).contains(&b.len())
        && b.iter()
            .all(|&c| c.is_ascii_graphic() && c != b'/' && c != b'\\');
    match std::str::from_utf8(b) {
        Ok(s) if ok => Ok(Some(s)),
        _ => Err(ApiError::bad_request(
            "Skillbase-Session must be a session id: 1-128 visible ASCII characters, no space, `/` or `\\`",
        )),
    }
}

/// A JSON body; a malformed one answers 400 (415 without a JSON content type, 413 when too large).
pub struct Body<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for Body<T> {
    type Rejection = ApiError;
    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let axum::Json(v) = axum::Json::<serde_json::Value>::from_request(req, state)
            .await
            .map_err(json_rejection)?;
        typed(v).map(Body)
    }
}

/// A JSON value read as `T`. JSON Schema counts `3.0` as an integer, so integral numbers
/// written with a fraction are read as the integers they are before `T` sees them; anything
/// else that does not fit answers 400 with serde's message (which says where).
pub fn typed<T: DeserializeOwned>(mut v: serde_json::Value) -> ApiResult<T> {
    // Every body is a JSON object (serde would read an array into a struct by position).
    if !v.is_object() {
        return Err(ApiError::bad_request(
            "malformed JSON body: send a JSON object ({...})",
        ));
    }
    integral_floats(&mut v);
    serde_json::from_value(v)
        .map_err(|e| ApiError::bad_request(format!("malformed JSON body: {e}")))
}

/// Replace every float with no fractional part that an `i64` or `u64` holds by that integer.
fn integral_floats(v: &mut serde_json::Value) {
    use serde_json::{Number, Value};
    match v {
        Value::Number(n) if n.is_f64() => {
            let f = n.as_f64().unwrap_or(f64::NAN);
            // 2^63 and 2^64 are exact in f64; the bounds keep the casts lossless.
            if f.fract() == 0.0 {
                if (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&f) {
                    *n = Number::from(f as i64);
                } else if (0.0..1.844_674_407_370_955_2e19).contains(&f) {
                    *n = Number::from(f as u64);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(integral_floats),
        Value::Object(map) => map.values_mut().for_each(integral_floats),
        _ => {}
    }
}

/// Query parameters; unknown values answer 400 with what was wrong.
pub struct Q<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for Q<T> {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|axum::extract::Query(v)| Q(v))
            .map_err(|e| ApiError::bad_request(format!("bad query string: {}", e.body_text())))
    }
}

/// Path parameters.
pub struct P<T>(pub T);

impl<T: DeserializeOwned + Send, S: Send + Sync> FromRequestParts<S> for P<T> {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        axum::extract::Path::<T>::from_request_parts(parts, state)
            .await
            .map(|axum::extract::Path(v)| P(v))
            .map_err(|e| ApiError::bad_request(format!("bad path: {}", e.body_text())))
    }
}

/// A raw body (bytes) with the size limit answered as problem+json.
pub struct Raw(pub axum::body::Bytes);

impl<S: Send + Sync> FromRequest<S> for Raw {
    type Rejection = ApiError;
    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        axum::body::Bytes::from_request(req, state)
            .await
            .map(Raw)
            .map_err(|e| {
                if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
                    too_large()
                } else {
                    ApiError::bad_request(format!("cannot read the body: {}", e.body_text()))
                }
            })
    }
}

/// 413 `too-large`: the body is over the route's limit (the skill or upload limit of
/// [`crate::state::Limits`]); the client must send less.
pub fn too_large() -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "too-large",
        "the request body is over this route's size limit",
    )
}

/// Parse an optional JSON body (empty means the default).
pub fn optional_json<T: DeserializeOwned + Default>(
    headers: &HeaderMap,
    body: &[u8],
) -> ApiResult<T> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(T::default());
    }
    if !content_type_is(headers, "application/json") {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported-media-type",
            "send the body as JSON with Content-Type: application/json",
        ));
    }
    let v: serde_json::Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("malformed JSON body: {e}")))?;
    typed(v)
}

/// Whether the request's media type (parameters ignored) is `want`.
pub fn content_type_is(headers: &HeaderMap, want: &str) -> bool {
    media_type(headers).is_some_and(|m| m.eq_ignore_ascii_case(want))
}

/// The request's media type without parameters.
pub fn media_type(headers: &HeaderMap) -> Option<String> {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
}

/// A write precondition from `If-Match` / `If-None-Match`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precondition {
    None,
    /// `If-Match: "<rev>"`: the latest revision must be this one.
    Rev(i64),
    /// `If-Match: *`: the record must exist.
    Exists,
    /// `If-None-Match: *`: the record must not exist.
    Absent,
    /// Both `If-Match` and `If-None-Match: *`: the record would have to exist and not exist,
    /// so the write fails its precondition (412) once the rest of the request has been read.
    Never,
}

/// Read `If-Match` (`"3"`, `W/"3"`, `3` or `*`; a revision is 1-18 digits) and
/// `If-None-Match: *`. Both are read when both are sent; together they cannot both hold
/// ([`Precondition::Never`]).
pub fn precondition(headers: &HeaderMap) -> ApiResult<Precondition> {
    let if_match = match headers.get(header::IF_MATCH) {
        Some(v) => Some(if_match(v.as_bytes().trim_ascii()).ok_or_else(|| {
            let shown: String = String::from_utf8_lossy(v.as_bytes())
                .chars()
                .take(40)
                .collect();
            ApiError::bad_request(format!(
                "If-Match must be a revision as the ETag gives it (\"3\") or *, not {}",
                skillbase_format::text::escape_controls(&shown)
            ))
        })?),
        None => None,
    };
    let absent = match headers.get(header::IF_NONE_MATCH) {
        Some(v) if v.as_bytes().trim_ascii() == b"*" => true,
        Some(_) => {
            return Err(ApiError::bad_request(
                "on writes, If-None-Match only takes * (create only)",
            ));
        }
        None => false,
    };
    match (if_match, absent) {
        (Some(_), true) => Ok(Precondition::Never),
        (Some(p), false) => Ok(p),
        (None, true) => Ok(Precondition::Absent),
        (None, false) => Ok(Precondition::None),
    }
}

/// `*`, or a revision: 1-18 digits, optionally quoted, optionally weak (`W/"3"`).
fn if_match(s: &[u8]) -> Option<Precondition> {
    if s == b"*" {
        return Some(Precondition::Exists);
    }
    let s = s.strip_prefix(b"W/").unwrap_or(s);
    let s = s.strip_prefix(b"\"").unwrap_or(s);
    let s = s.strip_suffix(b"\"").unwrap_or(s);
    if !(1..=18).contains(&s.len()) || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(s)
        .ok()?
        .parse()
        .ok()
        .map(Precondition::Rev)
}

/// Before a precondition is checked: the records `name` may mean for this caller, read again
/// from the database. Another server on the same database may have written since this one's
/// copy was made, and a 412 must name the current revision, never one the client knows is old
/// (the store checks again inside the write, so two writers cannot both win).
pub async fn reread_for_precondition(
    st: &crate::state::AppState,
    p: &Principal,
    pre: Precondition,
    scope: Option<&str>,
    name: &str,
) -> ApiResult<()> {
    if pre == Precondition::None {
        return Ok(());
    }
    let scopes = match p.agent() {
        Some(a) => vec![Scope::Agent(a.clone()), Scope::Shared],
        None => vec![parse_scope(scope)?.unwrap_or(Scope::Shared)],
    };
    for s in &scopes {
        st.store.reread(s, name).await?;
    }
    Ok(())
}

/// The answer to a failed precondition: 412 with the latest revision.
pub fn stale(name: &str, current: i64) -> ApiError {
    ApiError::new(
        StatusCode::PRECONDITION_FAILED,
        "stale-revision",
        if current == 0 {
            format!("skill '{name}' does not exist, so the precondition does not hold")
        } else {
            format!(
                "the latest revision of skill '{name}' is {current}; re-read it and retry with If-Match: \"{current}\""
            )
        },
    )
    .with_extra(serde_json::json!({ "current_rev": current }))
}

/// Check a precondition against the latest revision (0: no record).
pub fn check_precondition(name: &str, pre: Precondition, head: i64) -> ApiResult<()> {
    let ok = match pre {
        Precondition::None => true,
        Precondition::Rev(r) => r == head,
        Precondition::Exists => head > 0,
        Precondition::Absent => head == 0,
        Precondition::Never => false,
    };
    if ok { Ok(()) } else { Err(stale(name, head)) }
}

/// `ETag: "<rev>"`.
pub fn etag(rev: i64) -> (header::HeaderName, HeaderValue) {
    (
        header::ETAG,
        HeaderValue::from_str(&format!("\"{rev}\"")).expect("digits are a valid header value"),
    )
}

/// The 404 an agent token gets for any skill it may not see: the same body for a skill that
/// exists elsewhere and one that exists nowhere.
pub fn hidden(name: &str) -> ApiError {
    let shown: String = name.chars().take(64).collect();
    ApiError::not_found(format!("no skill '{shown}'"))
}

/// A `scope` query value.
pub fn parse_scope(raw: Option<&str>) -> ApiResult<Option<Scope>> {
    raw.map(|s| {
        s.parse::<Scope>()
            .map_err(|e| ApiError::bad_request(format!("scope: {e}")))
    })
    .transpose()
}

/// An agent name from a path or body.
pub fn agent_name(raw: &str) -> ApiResult<AgentName> {
    AgentName::parse(raw)
        .map_err(|e| ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid-request", e))
}

/// 422 with a kind.
pub fn unprocessable(kind: &'static str, detail: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, kind, detail)
}
