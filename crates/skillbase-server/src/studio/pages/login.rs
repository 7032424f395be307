//! Sign-in and sign-out: the token kept in the studio's cookie.

use super::common::{html, ok, stale};
use crate::auth::Principal;
use crate::state::AppState;
use crate::studio::html::{esc, page};
use crate::studio::{SignedIn, csrf, redirect};
use axum::Form;
use axum::extract::{Extension, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;
use serde::Deserialize;
use std::sync::Arc;

#[derive(Deserialize)]
pub(crate) struct LoginQuery {
    expired: Option<String>,
}

pub(crate) async fn login_form(Query(q): Query<LoginQuery>) -> Response {
    let note = if q.expired.is_some() {
        "<p class=\"warn\">Your token is no longer valid: sign in again.</p>"
    } else {
        ""
    };
    html(
        StatusCode::OK,
        page(
            "Sign in",
            "",
            &format!(
                "<h1>Sign in</h1>{note}<form method=\"post\" action=\"/studio/login\">\
                 <p><label>API token <input type=\"password\" name=\"token\" id=\"token\" size=\"60\" autocomplete=\"off\"></label></p>\
                 <p><button type=\"submit\" id=\"sign-in\">Sign in</button></p></form>\
                 <p class=\"muted\">An admin token sees everything; an agent's token sees that agent only. \
                 Create one with <code>skillbase token create</code>.</p>"
            ),
            None,
        ),
    )
}

#[derive(Deserialize)]
pub(crate) struct LoginForm {
    token: String,
}

pub(crate) async fn login(
    State(st): State<Arc<AppState>>,
    headers: HeaderMap,
    Form(f): Form<LoginForm>,
) -> Response {
    let token = f.token.trim();
    let valid_chars = !token.is_empty()
        && token.len() <= 256
        && token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    let authenticated = valid_chars
        && st
            .auth
            .authenticate(&st.store, Some(&format!("Bearer {token}")))
            .await
            .is_ok();
    if !authenticated {
        return html(
            StatusCode::UNAUTHORIZED,
            page(
                "Sign in",
                "",
                "<h1>Sign in</h1><p class=\"warn\">That token is not valid (unknown, revoked or malformed).</p>\
                 <p><a href=\"/studio/login\">Try again</a></p>",
                None,
            ),
        );
    }
    let secure = headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("https"));
    let mut r = redirect("/studio/sessions");
    r.headers_mut().insert(
        header::SET_COOKIE,
        crate::studio::set_cookie(token, secure)
            .parse()
            .expect("a token of safe characters"),
    );
    r
}

#[derive(Deserialize)]
pub(crate) struct CsrfForm {
    csrf: String,
}

pub(crate) async fn logout_form(
    Extension(p): Extension<Principal>,
    Extension(signed): Extension<SignedIn>,
) -> Response {
    ok(
        "Sign out",
        &p,
        &format!(
            "<h1>Sign out</h1><form method=\"post\" action=\"/studio/logout\"><input type=\"hidden\" name=\"csrf\" value=\"{}\">\
             <button type=\"submit\" id=\"sign-out\">Sign out</button></form>",
            esc(&csrf(&signed))
        ),
        None,
    )
}

pub(crate) async fn logout(
    Extension(signed): Extension<SignedIn>,
    Form(f): Form<CsrfForm>,
) -> Response {
    if let Some(refused) = stale(&signed, &f.csrf) {
        return refused;
    }
    let mut r = redirect("/studio/login");
    r.headers_mut().insert(
        header::SET_COOKIE,
        crate::studio::clear_cookie()
            .parse()
            .expect("a valid header"),
    );
    r
}
