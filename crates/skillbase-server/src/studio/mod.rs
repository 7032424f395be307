//! The studio: a server-rendered web UI at `/studio` over the same operations as REST.
//!
//! - **Sign-in**: a token (admin, or bound to one agent) entered once at `/studio/login` and
//!   kept in an `HttpOnly`, `SameSite=Strict` cookie scoped to `/studio`; every request
//!   authenticates it exactly as a bearer token (revoked: signed out). `--dev` needs none.
//! - **Forms** that change something carry a CSRF value derived from the token (a cross-site
//!   page can neither read it nor send the cookie), and a request whose `Origin` is another site
//!   is refused; destructive actions ask for confirmation on a page of their own.
//! - **What a token sees**: an agent token sees its agent only (its sessions, the skills it may
//!   load, its configuration), read-only; another agent's session answers 404 like REST.
//! - **Pages**: sessions (the transcript of turns and calls with an activation card per skill
//!   that reached the prompt, evictions, refused calls and the Context card, live over the
//!   session's SSE stream), skills (the record, files, history, diffs between any two
//!   revisions, revert, retire/restore, disable/enable, runs) and agents (their configuration
//!   and doctor findings, "try a turn", and evaluations run as background jobs whose pages show
//!   their progress: see `crate::jobs`), approvals, and library health (never-used, failing and
//!   overlapping skills, with what to do about each; a skill's page shows its usage). No logic lives here: every action is a store or runtime
//!   operation.

mod html;
mod markdown;
mod pages;

use crate::auth::Principal;
use crate::state::AppState;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Router};
use sha2::{Digest, Sha256};
use std::sync::Arc;

pub use html::{esc, url};

/// Every studio page's Content-Security-Policy: its own inline style and script, requests to
/// this server only, never framed by another site.
pub(crate) const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; connect-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// The cookie that holds the studio's token.
pub const COOKIE: &str = "skillbase_studio";

/// The token the request was signed in with (for the CSRF value), `None` in `--dev`.
#[derive(Clone)]
pub(crate) struct SignedIn(pub(crate) Option<String>);

/// The studio's routes, under `/studio`; its own gate instead of the bearer middleware.
pub fn router(state: Arc<AppState>) -> Router<Arc<AppState>> {
    Router::new()
        .route("/", get(|| async { redirect("/studio/sessions") }))
        .route("/login", get(pages::login_form).post(pages::login))
        .route("/logout", get(pages::logout_form).post(pages::logout))
        .route("/sessions", get(pages::sessions))
        .route("/sessions/{id}", get(pages::session))
        .route("/sessions/{id}/events", get(pages::session_events))
        .route("/skills", get(pages::skills))
        .route("/skills/{name}", get(pages::skill))
        .route("/skills/{name}/action", post(pages::skill_action))
        .route("/agents", get(pages::agents))
        .route("/agents/{name}", get(pages::agent))
        .route("/agents/{name}/config", post(pages::agent_config))
        .route("/agents/{name}/turn", post(pages::agent_turn))
        .route("/agents/{name}/eval", post(pages::agent_eval))
        .route("/agents/{name}/eval/{job}", get(pages::agent_eval_job))
        .route(
            "/agents/{name}/eval/{job}/status",
            get(pages::agent_eval_status),
        )
        .route("/approvals", get(pages::approvals))
        .route("/health", get(pages::health))
        .fallback(|| async { fail(StatusCode::NOT_FOUND, "no such page") })
        .layer(Extension(Arc::new(pages::EvalJobs::new(
            pages::MAX_PER_AGENT,
            pages::MAX_RUNNING,
        ))))
        .layer(middleware::from_fn_with_state(state, gate))
}

/// Authenticate the cookie (or `--dev`) and attach the principal, as the bearer middleware
/// does for the API; the sign-in page alone is open. A page without a valid cookie goes to the
/// sign-in page; a POST from another origin is refused.
async fn gate(State(st): State<Arc<AppState>>, mut req: Request, next: Next) -> Response {
    let path = req.uri().path().to_owned();
    if req.method() == axum::http::Method::POST && !same_origin(req.headers()) {
        return fail(
            StatusCode::FORBIDDEN,
            "refused: this form was sent from another site",
        );
    }
    // Under `nest("/studio")` the path is seen without its prefix.
    if path == "/login" || path == "/studio/login" {
        return next.run(req).await;
    }
    if st.auth.dev {
        req.extensions_mut()
            .insert(Principal::Admin { token: None });
        req.extensions_mut().insert(SignedIn(None));
        return next.run(req).await;
    }
    let Some(token) = cookie(req.headers()) else {
        return redirect("/studio/login");
    };
    let bearer = format!("Bearer {token}");
    match st.auth.authenticate(&st.store, Some(&bearer)).await {
        Ok(p) => {
            req.extensions_mut().insert(p);
            req.extensions_mut().insert(SignedIn(Some(token)));
            let res = next.run(req).await;
            if crate::guard::streams(&res) {
                // A live page's stream ends when the token stops authenticating, as the API's do.
                crate::guard::end_with_token(st, bearer, res)
            } else {
                res
            }
        }
        Err(_) => {
            let mut r = redirect("/studio/login?expired=1");
            r.headers_mut().insert(
                header::SET_COOKIE,
                clear_cookie().parse().expect("a valid header"),
            );
            r
        }
    }
}

/// The studio's token from the `Cookie` header: only the characters a token has.
fn cookie(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == COOKIE)
        .map(|(_, v)| v.to_owned())
        .filter(|v| {
            !v.is_empty()
                && v.len() <= 256
                && v.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        })
}

/// Whether a POST comes from this server's own pages: `Origin` (or, without it, `Referer`)
/// names the `Host` the request was sent to. A request with neither (not a browser) passes:
/// it has no cookie a cross-site page could have made it send.
fn same_origin(headers: &HeaderMap) -> bool {
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let from = headers
        .get(header::ORIGIN)
        .or_else(|| headers.get(header::REFERER))
        .and_then(|v| v.to_str().ok());
    match from {
        None => true,
        Some(o) => {
            let rest = o
                .strip_prefix("http://")
                .or_else(|| o.strip_prefix("https://"))
                .unwrap_or("");
            let authority = rest.split('/').next().unwrap_or("");
            !host.is_empty() && authority.eq_ignore_ascii_case(host)
        }
    }
}

/// The CSRF value of a signed-in token: a hash no other site can compute without the token.
pub(crate) fn csrf(signed: &SignedIn) -> String {
    static DEV: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    match &signed.0 {
        Some(t) => {
            let d = Sha256::digest(format!("skillbase-studio-csrf\n{t}").as_bytes());
            d.iter().take(16).map(|b| format!("{b:02x}")).collect()
        }
        None => DEV
            .get_or_init(|| {
                let mut b = [0u8; 16];
                getrandom::fill(&mut b).expect("the operating system's random source failed");
                b.iter().map(|x| format!("{x:02x}")).collect()
            })
            .clone(),
    }
}

fn set_cookie(token: &str, secure: bool) -> String {
    format!(
        "{COOKIE}={token}; Path=/studio; HttpOnly; SameSite=Strict{}",
        if secure { "; Secure" } else { "" }
    )
}

fn clear_cookie() -> String {
    format!("{COOKIE}=; Path=/studio; HttpOnly; SameSite=Strict; Max-Age=0")
}

/// A `303 See Other` to `to`.
pub(crate) fn redirect(to: &str) -> Response {
    (StatusCode::SEE_OTHER, [(header::LOCATION, to.to_owned())]).into_response()
}

/// An error page.
pub(crate) fn fail(status: StatusCode, message: &str) -> Response {
    let body = format!(
        "<h1>{}</h1><p class=\"warn\">{}</p><p><a href=\"/studio/sessions\">Back to the studio</a></p>",
        status.as_u16(),
        esc(message)
    );
    (
        status,
        [
            (header::CACHE_CONTROL, "no-store"),
            (header::CONTENT_SECURITY_POLICY, CSP),
            (header::X_FRAME_OPTIONS, "DENY"),
        ],
        axum::response::Html(html::page(&status.as_u16().to_string(), "", &body, None)),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        h
    }

    #[test]
    fn the_cookie_is_read_strictly() {
        let h = headers(&[("cookie", "a=1; skillbase_studio=sb_abc-_9; b=2")]);
        assert_eq!(cookie(&h).as_deref(), Some("sb_abc-_9"));
        for bad in [
            "skillbase_studio=",
            "skillbase_studio=a b",
            "skillbase_studio=x\"y",
            "other=1",
        ] {
            assert_eq!(cookie(&headers(&[("cookie", bad)])), None, "{bad}");
        }
        let long = format!("skillbase_studio={}", "a".repeat(300));
        assert_eq!(cookie(&headers(&[("cookie", &long)])), None);
    }

    #[test]
    fn a_post_from_another_site_is_not_same_origin() {
        assert!(same_origin(&headers(&[("host", "h:1")])));
        assert!(same_origin(&headers(&[
            ("host", "h:1"),
            ("origin", "http://h:1")
        ])));
        assert!(same_origin(&headers(&[
            ("host", "h:1"),
            ("referer", "http://h:1/studio/skills/x")
        ])));
        assert!(!same_origin(&headers(&[
            ("host", "h:1"),
            ("origin", "http://evil:1")
        ])));
        assert!(!same_origin(&headers(&[
            ("host", "h:1"),
            ("origin", "null")
        ])));
        assert!(!same_origin(&headers(&[
            ("host", "h:1"),
            ("origin", "http://h:1.evil")
        ])));
    }

    #[test]
    fn the_csrf_value_depends_on_the_token() {
        let a = csrf(&SignedIn(Some("sb_a".into())));
        assert_eq!(a.len(), 32);
        assert_ne!(a, csrf(&SignedIn(Some("sb_b".into()))));
        assert_eq!(a, csrf(&SignedIn(Some("sb_a".into()))));
        assert_eq!(csrf(&SignedIn(None)), csrf(&SignedIn(None)));
    }
}
