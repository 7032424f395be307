//! "Try a turn": a turn in a new session, and what the model is shown.

use super::access::agent_of;
use super::common::{ok, stale, store_error};
use super::turn::render_turn;
use crate::auth::Principal;
use crate::state::AppState;
use crate::studio::html::{esc, url};
use crate::studio::{SignedIn, fail};
use axum::Form;
use axum::extract::{Extension, Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde::Deserialize;
use std::fmt::Write as _;
use std::sync::Arc;

#[derive(Deserialize)]
pub(crate) struct TurnForm {
    csrf: String,
    message: String,
    /// The turn's paths, one per line (blank lines skipped), as REST's `paths`.
    #[serde(default)]
    paths: String,
}

/// A turn in a new session, exactly as `skillbase turn` runs it (recorded like any turn):
/// what the model is shown and the report.
pub(crate) async fn agent_turn(
    State(st): State<Arc<AppState>>,
    Extension(p): Extension<Principal>,
    Extension(signed): Extension<SignedIn>,
    Path(name): Path<String>,
    Form(f): Form<TurnForm>,
) -> Response {
    if let Some(refused) = stale(&signed, &f.csrf) {
        return refused;
    }
    let Some(a) = agent_of(&st, &p, &name) else {
        return fail(StatusCode::NOT_FOUND, "no such agent");
    };
    if f.message.trim().is_empty() || f.message.len() > 64 * 1024 {
        return fail(
            StatusCode::UNPROCESSABLE_ENTITY,
            "write a message of 1 byte to 64 KiB",
        );
    }
    let mut raw = [0u8; 8];
    getrandom::fill(&mut raw).expect("the operating system's random source failed");
    let nonce: String = raw.iter().map(|b| format!("{b:02x}")).collect();
    let session = skillbase_store::session_id::SessionId::studio(&nonce).into_string();
    if let Err(e) = st.store.open_session(&session, &a.name).await {
        return store_error(e);
    }
    // Checked by the engine as every surface's paths are (count, length, control characters).
    let opts = skillbase_runtime::TurnOptions {
        paths: f
            .paths
            .lines()
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(str::to_owned)
            .collect(),
        ..Default::default()
    };
    let ctx = match st.engine.turn(&a.name, &session, &f.message, &opts).await {
        Ok(c) => c,
        Err(e) => return fail(StatusCode::UNPROCESSABLE_ENTITY, &e.to_string()),
    };
    let mut b = format!(
        "<h1>A turn of {}</h1><p>Session <a href=\"/studio/sessions/{}?agent={}\">{}</a> · message: {}</p>",
        esc(a.name.as_str()),
        url(&session),
        url(a.name.as_str()),
        esc(&session),
        esc(&f.message)
    );
    for (title, text) in [
        ("Prompt prefix (eager, the same every turn)", &ctx.prefix),
        ("Injected for this turn", &ctx.injected),
        ("Catalog", &ctx.catalog),
    ] {
        let _ = write!(
            b,
            "<h2>{title}</h2><pre>{}</pre>",
            esc(text.as_deref().unwrap_or("(none)"))
        );
    }
    b.push_str("<h2>Tools</h2><ul>");
    for t in &ctx.tools {
        let _ = write!(
            b,
            "<li><code>{}</code>: {}</li>",
            esc(&t.name),
            esc(&t.description)
        );
    }
    b.push_str("</ul><h2>Report</h2>");
    let report = serde_json::to_value(&ctx.report).unwrap_or_default();
    render_turn(&mut b, &report);
    ok("Try a turn", &p, &b, None)
}
