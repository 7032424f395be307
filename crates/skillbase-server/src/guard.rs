//! The authentication layer: every request's token checked against [`crate::auth::Auth`], its
//! [`crate::auth::Principal`] attached, and streamed responses ended when their token is revoked.

use crate::auth::TOKEN_CACHE_TTL;
use crate::error::ApiError;
use crate::state::AppState;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use std::sync::Arc;

/// Authenticate the request and attach its [`crate::auth::Principal`] as an extension (which the MCP
/// handler reads from the request parts).
///
/// A response that streams (server-sent events: REST's event tails, MCP's streams) outlives the
/// request that authenticated it, so its token is checked again every [`TOKEN_CACHE_TTL`] while
/// it is open, and whenever a token changes, and the stream ends once the token is revoked (or
/// deleted). Every other request
/// of a revoked token, an MCP session's included, is refused at this middleware.
pub async fn middleware(
    State(state): State<Arc<AppState>>,
    mut req: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let h = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    let principal = state.auth.authenticate(&state.store, h).await?;
    let bearer = (!state.auth.dev).then(|| h.map(str::to_owned)).flatten();
    req.extensions_mut().insert(principal);
    let res = next.run(req).await;
    match bearer {
        Some(bearer) if streams(&res) => Ok(end_with_token(state, bearer, res)),
        _ => Ok(res),
    }
}

/// Whether a response streams (server-sent events), and so outlives its request's check.
pub(crate) fn streams(res: &Response) -> bool {
    res.headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"))
}

/// `res` with its body cut off once the token in `header` stops authenticating.
pub(crate) fn end_with_token(state: Arc<AppState>, header: String, res: Response) -> Response {
    use futures_util::StreamExt as _;
    let (parts, body) = res.into_parts();
    let revoked = tokio_util::sync::CancellationToken::new();
    // Dropped with the body (the client left): the watcher stops too.
    let gone = tokio_util::sync::CancellationToken::new();
    let (watch_revoked, watch_gone) = (revoked.clone(), gone.clone());
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = watch_gone.cancelled() => return,
                _ = state.shutdown.cancelled() => return,
                _ = tokio::time::sleep(TOKEN_CACHE_TTL) => {}
                _ = state.auth.changed.notified() => {}
            }
            match state.auth.authenticate(&state.store, Some(&header)).await {
                Err(e) if e.status == StatusCode::UNAUTHORIZED => {
                    watch_revoked.cancel();
                    return;
                }
                // A store that does not answer is not a revocation: look again later.
                _ => {}
            }
        }
    });
    let guard = gone.drop_guard();
    let stream = body
        .into_data_stream()
        .take_until(revoked.cancelled_owned())
        .map(move |chunk| {
            let _ = &guard;
            chunk
        });
    Response::from_parts(parts, axum::body::Body::from_stream(stream))
}
