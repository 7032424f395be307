//! MCP over stdio (or any byte stream pair): one agent, no token (the local user owns the
//! database), one Skillbase session per connection.

use super::handler::McpHandler;
use super::identity::Caller;
use crate::state::AppState;
use rmcp::ServiceExt;
use skillbase_store::AgentName;
use skillbase_store::session_id::SessionId;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_util::sync::CancellationToken;

/// Serve one agent over MCP on stdin/stdout (the local user owns the database: no token).
pub async fn serve_stdio(state: Arc<AppState>, agent: AgentName) -> Result<(), crate::ServeError> {
    crate::warm_up();
    // Other processes' writes (`skillbase put`, a server on the same database) reach this
    // session as `serve` sees them: applied every second, then `list_changed`.
    let sync = tokio::spawn(crate::sync_loop(state.clone()));
    let served = serve_io(
        state.clone(),
        agent,
        tokio::io::stdin(),
        tokio::io::stdout(),
    )
    .await;
    // The session's events are written behind: write them before the process ends.
    state.engine.flush().await;
    state.shutdown.cancel();
    sync.abort();
    served
}

/// Serve one agent over MCP on any byte stream pair (stdio, or a pipe in tests), until the peer
/// closes it or the server shuts down.
pub async fn serve_io<R, W>(
    state: Arc<AppState>,
    agent: AgentName,
    read: R,
    write: W,
) -> Result<(), crate::ServeError>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    if state.store.agent_cached(&agent).is_none() {
        return Err(crate::ServeError::UnknownAgent(agent));
    }
    let mut id = [0u8; 8];
    getrandom::fill(&mut id).map_err(|e| crate::ServeError::Random(e.to_string()))?;
    let session: String = id.iter().map(|b| format!("{b:02x}")).collect();
    let caller = Caller {
        agent: agent.clone(),
        who: "stdio".into(),
    };
    let handler = McpHandler::new(
        state.clone(),
        Some((caller, SessionId::mcp_stdio(&agent, &session))),
    );
    // The end of input ends the connection's streams (a `subscriptions/listen`, the change
    // watcher) at once, so nothing holds the process open once the client has gone.
    let read = EofSignal {
        inner: read,
        eof: handler.closed(),
    };
    let running = match handler
        .serve_with_ct((read, write), state.shutdown.child_token())
        .await
    {
        Ok(r) => r,
        // A client that leaves before initializing (a 2026-07-28 client's probe sends
        // `server/discover` and goes) has done nothing wrong.
        Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
        Err(e) => return Err(crate::ServeError::Mcp(e.to_string())),
    };
    // Change notifications: a 2025-11-25 client gets them on the connection once it has
    // initialized (`on_initialized`); a 2026-07-28 client only on the streams it opens with
    // `subscriptions/listen`, with the types it asked for.
    running
        .waiting()
        .await
        .map(|_| ())
        .map_err(|e| crate::ServeError::Mcp(e.to_string()))
}

/// A reader that cancels `eof` when its input ends (or fails).
struct EofSignal<R> {
    inner: R,
    eof: CancellationToken,
}

impl<R: AsyncRead + Unpin> AsyncRead for EofSignal<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        match &r {
            Poll::Ready(Ok(())) if buf.filled().len() == before => self.eof.cancel(),
            Poll::Ready(Err(_)) => self.eof.cancel(),
            _ => {}
        }
        r
    }
}
