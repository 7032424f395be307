//! What every page shares: who is signed in, the HTML response around a page, a store error
//! as a page, and the check of a form's CSRF value. A leaf: it names no page.

use crate::auth::Principal;
use crate::studio::html::page;
use crate::studio::{CSP, SignedIn, csrf, fail};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

pub(super) fn who(p: &Principal) -> String {
    match p {
        Principal::Admin { .. } => "admin".into(),
        Principal::Agent { agent, .. } => format!("agent {agent}"),
    }
}

pub(super) fn html(status: StatusCode, body: String) -> Response {
    (
        status,
        [
            (header::CACHE_CONTROL, "no-store"),
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            // Only this page's own inline style and script; never framed by another site.
            (header::CONTENT_SECURITY_POLICY, CSP),
            (header::X_FRAME_OPTIONS, "DENY"),
        ],
        body,
    )
        .into_response()
}

pub(super) fn ok(title: &str, p: &Principal, body: &str, script: Option<&str>) -> Response {
    html(StatusCode::OK, page(title, &who(p), body, script))
}

pub(super) fn store_error(e: impl std::fmt::Display) -> Response {
    fail(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string())
}

/// An admin's form: refused when its CSRF value is stale ([`stale`]), or when the token is an
/// agent's (`why` says so: the studio is read-only for agents).
pub(super) fn admin_form(
    signed: &SignedIn,
    sent: &str,
    p: &Principal,
    why: &str,
) -> Option<Response> {
    stale(signed, sent).or_else(|| (!p.is_admin()).then(|| fail(StatusCode::FORBIDDEN, why)))
}

/// A form whose CSRF value is not this sign-in's: refused (a forged or stale form).
pub(super) fn stale(signed: &SignedIn, sent: &str) -> Option<Response> {
    (sent != csrf(signed)).then(|| {
        fail(
            StatusCode::FORBIDDEN,
            "refused: the form is stale; reload the page",
        )
    })
}
