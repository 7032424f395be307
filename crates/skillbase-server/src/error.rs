//! Errors as RFC 9457 `application/problem+json`: a stable `type`, the HTTP status, a title and
//! a detail that says what to fix.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use skillbase_runtime::RuntimeError;
use skillbase_store::StoreError;

/// An error answered to an HTTP client.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Problem {
    /// A URI naming the kind of problem (`urn:skillbase:problem:<kind>`).
    #[serde(rename = "type")]
    pub kind: String,
    /// The HTTP status's reason phrase (`Not Found`, `Conflict`, ...).
    pub title: String,
    /// The HTTP status code, repeated in the body.
    pub status: u16,
    /// What went wrong and what to change.
    pub detail: String,
    /// Extra machine-readable fields (for example the current revision on a conflict).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extra: Option<serde_json::Value>,
}

/// An error a handler returns; answered as a [`Problem`] with `Content-Type:
/// application/problem+json` (and `WWW-Authenticate: Bearer` on 401). 5xx errors are logged.
#[derive(Debug)]
pub struct ApiError {
    /// The HTTP status to answer.
    pub status: StatusCode,
    /// The problem kind, the last part of `urn:skillbase:problem:<kind>` (`not-found`,
    /// `stale-revision`, ...); stable, so clients may branch on it.
    pub kind: &'static str,
    /// What went wrong and what to change; shown to the client as is.
    pub detail: String,
    /// Machine-readable extra fields, answered as the problem's `extra`.
    pub extra: Option<serde_json::Value>,
}

/// What handlers return: a value, or an [`ApiError`] answered as problem+json.
pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    /// An error with any status and kind.
    pub fn new(status: StatusCode, kind: &'static str, detail: impl Into<String>) -> ApiError {
        ApiError {
            status,
            kind,
            detail: detail.into(),
            extra: None,
        }
    }
    /// Attach machine-readable fields (such as `current_rev` on a stale write).
    pub fn with_extra(mut self, extra: serde_json::Value) -> ApiError {
        self.extra = Some(extra);
        self
    }
    /// 400 `invalid-request`: the request is malformed; the client must change it.
    pub fn bad_request(detail: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "invalid-request", detail)
    }
    /// 401 `unauthorized`: no token, or one that is unknown or revoked.
    pub fn unauthorized(detail: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", detail)
    }
    /// 403 `forbidden`: the token is valid but may not do this (for example an agent token on an
    /// admin route).
    pub fn forbidden(detail: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::FORBIDDEN, "forbidden", detail)
    }
    /// 404 `not-found`: no such thing, or one the caller's token may not see (answered alike).
    pub fn not_found(detail: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, "not-found", detail)
    }
    /// 409 `conflict`: the request clashes with the current state (an existing name, a retired
    /// skill, a refused status change).
    pub fn conflict(detail: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::CONFLICT, "conflict", detail)
    }
    /// 500 `internal`: the server failed (a bug, stored data that does not read back); the
    /// detail is logged. Storage faults are 503 or 507 ([`storage_fault`]).
    pub fn internal(detail: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", detail)
    }

    /// The body answered for this error.
    pub fn problem(&self) -> Problem {
        Problem {
            kind: format!("urn:skillbase:problem:{}", self.kind),
            title: self.status.canonical_reason().unwrap_or("Error").to_owned(),
            status: self.status.as_u16(),
            detail: self.detail.clone(),
            extra: self.extra.clone(),
        }
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}): {}", self.status, self.kind, self.detail)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if self.status.is_server_error() {
            tracing::error!(kind = self.kind, detail = %self.detail, "request failed");
        }
        let body = serde_json::to_vec(&self.problem()).unwrap_or_default();
        let mut res = (self.status, body).into_response();
        res.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        );
        if self.status == StatusCode::UNAUTHORIZED {
            res.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"skillbase\""),
            );
        }
        res
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> ApiError {
        let detail = e.to_string();
        match &e {
            StoreError::NotFound { .. }
            | StoreError::NoSuchRevision { .. }
            | StoreError::AgentNotFound(_) => ApiError::not_found(detail),
            StoreError::AgentExists(_) | StoreError::SessionUnavailable => {
                ApiError::conflict(detail)
            }
            StoreError::Conflict { actual, .. } => {
                ApiError::new(StatusCode::PRECONDITION_FAILED, "stale-revision", detail)
                    .with_extra(serde_json::json!({ "current_rev": actual }))
            }
            StoreError::VersionNotIncreased { active, .. } => {
                ApiError::new(StatusCode::CONFLICT, "version-not-increased", detail)
                    .with_extra(serde_json::json!({ "active_version": active }))
            }
            StoreError::Retired { .. }
            | StoreError::StatusRefused { .. }
            | StoreError::NotPending { .. }
            | StoreError::LimitReached(_) => ApiError::conflict(detail),
            StoreError::InvalidAgent(_) => {
                ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid-agent", detail)
            }
            StoreError::InvalidSkill(_) | StoreError::Bundle(_) => {
                ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid-skill", detail)
            }
            StoreError::Untrusted(_) => {
                ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "untrusted-skill", detail)
            }
            StoreError::ScanRefused(r) => {
                let f = &r.finding;
                ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "scan-refused", detail).with_extra(
                    serde_json::json!({
                        "rule": f.rule, "severity": f.severity, "file": f.file,
                        "line": f.line, "fix": f.fix,
                    }),
                )
            }
            // Everything else the store refuses as malformed (a session id, a label, an
            // archive that is not a zip, a run that is not open) is about the request.
            StoreError::Invalid(_) => {
                ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid-request", detail)
            }
            StoreError::DiskFull(_) | StoreError::Unavailable(_) | StoreError::ReadOnly { .. } => {
                let (status, kind) = storage_fault(&e).unwrap_or(UNAVAILABLE);
                ApiError::new(status, kind, detail)
            }
            StoreError::SchemaTooNew { .. }
            | StoreError::Migrate(_)
            | StoreError::Open { .. }
            | StoreError::Db(_)
            | StoreError::Corrupt(_)
            | StoreError::Io { .. } => ApiError::internal(detail),
        }
    }
}

/// 503 `unavailable`: the storage failed a request that was fine; retrying later may succeed.
const UNAVAILABLE: (StatusCode, &str) = (StatusCode::SERVICE_UNAVAILABLE, "unavailable");

/// The status and problem kind of a storage fault (REST and MCP answer the same): 507
/// `insufficient-storage` for a full disk, 503 `unavailable` for an I/O error, a lost database,
/// a lock held too long or a read-only store; `None` for any other error.
pub fn storage_fault(e: &StoreError) -> Option<(StatusCode, &'static str)> {
    match e {
        StoreError::DiskFull(_) => Some((StatusCode::INSUFFICIENT_STORAGE, "insufficient-storage")),
        StoreError::Unavailable(_) | StoreError::ReadOnly { .. } => Some(UNAVAILABLE),
        _ => None,
    }
}

impl From<RuntimeError> for ApiError {
    fn from(e: RuntimeError) -> ApiError {
        match e {
            RuntimeError::Store(s) => s.into(),
            RuntimeError::UnknownAgent(_) | RuntimeError::UnknownSession(_) => {
                ApiError::not_found(e.to_string())
            }
            RuntimeError::UnknownSkill { .. } => ApiError::not_found(e.to_string()),
            RuntimeError::Eager(_) | RuntimeError::ExplicitOnly(_) => {
                ApiError::conflict(e.to_string())
            }
            RuntimeError::InvalidTurn(_) => ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid-request",
                e.to_string(),
            ),
            RuntimeError::InvalidArguments { .. } | RuntimeError::Invalid(_) => ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid-arguments",
                e.to_string(),
            ),
        }
    }
}

/// JSON bodies that fail to parse answer 400 with serde's message (which says where).
pub fn json_rejection(r: axum::extract::rejection::JsonRejection) -> ApiError {
    use axum::extract::rejection::JsonRejection as J;
    match r {
        J::MissingJsonContentType(_) => ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported-media-type",
            "send the body as JSON with Content-Type: application/json",
        ),
        J::BytesRejection(b) if b.status() == StatusCode::PAYLOAD_TOO_LARGE => ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "too-large",
            "the request body is over this route's size limit",
        ),
        other => ApiError::bad_request(format!("malformed JSON body: {}", other.body_text())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Storage faults are the storage's, not the server's: 507 for a full disk, 503 for the
    /// rest, each a problem with its own type and the store's message; other errors stay 500.
    #[test]
    fn storage_faults_answer_503_or_507() {
        let full = ApiError::from(StoreError::DiskFull("database or disk is full".into()));
        assert_eq!(full.status, StatusCode::INSUFFICIENT_STORAGE);
        let p = full.problem();
        assert_eq!(p.kind, "urn:skillbase:problem:insufficient-storage");
        assert_eq!((p.status, p.title.as_str()), (507, "Insufficient Storage"));
        assert!(p.detail.contains("disk is full"), "{}", p.detail);
        for e in [
            StoreError::Unavailable("disk I/O error".into()),
            StoreError::ReadOnly {
                url: "sqlite:/ro/skillbase.db".into(),
                why: "Read-only file system".into(),
            },
        ] {
            let a = ApiError::from(e);
            assert_eq!(a.status, StatusCode::SERVICE_UNAVAILABLE);
            assert_eq!(a.problem().kind, "urn:skillbase:problem:unavailable");
        }
        let a = ApiError::from(StoreError::Corrupt("x".into()));
        assert_eq!(
            (a.status, a.kind),
            (StatusCode::INTERNAL_SERVER_ERROR, "internal")
        );
        assert_eq!(storage_fault(&StoreError::Corrupt("x".into())), None);
    }
}
