//! The rmcp [`ServerHandler`]: one [`McpHandler`] per connection (an MCP session, one
//! stateless request, or stdio), which finds the caller of each request and hands it to the
//! tools (`super::tools`), the Skills extension (`super::skills`) or change notifications
//! (`super::notifications`).

use super::errors::custom_request_error;
use super::identity::{Binding, Caller, session_of};
use super::notifications::{self, Notifier, watch_changes};
use super::{skills, tools};
use crate::state::AppState;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CustomRequest, CustomResult, DiscoverResult,
    ErrorData, Extensions, GetSkillRequestParams, GetSkillResult, Implementation,
    InitializeRequestParams, InitializeResult, ListResourcesResult, ListSkillsResult,
    ListToolsResult, PaginatedRequestParams, ReadResourceDirectoryRequestParams,
    ReadResourceDirectoryResult, ReadResourceRequestParams, ReadResourceResponse,
    ServerCapabilities, ServerConfig, SubscriptionFilter,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{RoleServer, ServerHandler};
use skillbase_store::session_id::SessionId;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use tokio_util::sync::CancellationToken;

/// What one connection (an MCP session, or one stateless request) shares.
struct Conn {
    /// stdio: the caller and the session, fixed.
    fixed: Option<(Caller, SessionId)>,
    /// The caller the session was opened by (stateful HTTP).
    bound: Binding,
    watching: AtomicBool,
    /// Cancelled when the connection's handler is dropped (the session ended).
    closed: CancellationToken,
}

impl Drop for Conn {
    fn drop(&mut self) {
        self.closed.cancel();
    }
}

/// The MCP server for one connection.
pub struct McpHandler {
    state: Arc<AppState>,
    conn: Arc<Conn>,
}

fn server_config() -> ServerConfig {
    static CONFIG: OnceLock<ServerConfig> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            ServerConfig::new(
                ServerCapabilities::builder()
                    .enable_tools()
                    .enable_tool_list_changed()
                    .enable_resources()
                    .enable_resources_list_changed()
                    .enable_skills_with_directory_read()
                    .build(),
            )
            .with_server_info(Implementation::new("skillbase", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Skillbase: the tools offered to your agent, and its skills (MCP Skills extension; skill:// resources).",
            )
        })
        .clone()
}

impl McpHandler {
    /// A handler for one connection; `fixed` gives stdio's caller and session.
    pub(super) fn new(state: Arc<AppState>, fixed: Option<(Caller, SessionId)>) -> McpHandler {
        let closed = state.shutdown.child_token();
        McpHandler {
            state,
            conn: Arc::new(Conn {
                fixed,
                bound: Binding::default(),
                watching: AtomicBool::new(false),
                closed,
            }),
        }
    }

    /// Cancelled when the connection ends.
    pub(super) fn closed(&self) -> CancellationToken {
        self.conn.closed.clone()
    }

    /// The caller of a request: from the token (and `Skillbase-Agent`), and the same as the one
    /// the session was opened by.
    fn caller(&self, ext: &Extensions) -> Result<Caller, ErrorData> {
        if let Some((c, _)) = &self.conn.fixed {
            return Ok(c.clone());
        }
        let parts = ext
            .get::<axum::http::request::Parts>()
            .ok_or_else(|| ErrorData::internal_error("no HTTP request in context", None))?;
        self.conn.bound.check(parts, &self.state)
    }

    /// The Skillbase session a call records into.
    fn session_id(&self, caller: &Caller, ext: &Extensions) -> Result<SessionId, ErrorData> {
        if let Some((_, s)) = &self.conn.fixed {
            return Ok(s.clone());
        }
        session_of(ext.get::<axum::http::request::Parts>(), caller)
    }
}

impl ServerHandler for McpHandler {
    fn get_info(&self) -> ServerConfig {
        server_config()
    }

    /// rmcp reads a known method whose params do not fit its schema as a custom request; answer
    /// it `-32602` with what is wrong (clients read `-32601` as "unsupported"), and only a method
    /// nobody knows `-32601`.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        Err(custom_request_error(
            &request.method,
            request.params.as_ref(),
        ))
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        self.caller(&context.extensions)?;
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    async fn discover(
        &self,
        context: RequestContext<RoleServer>,
    ) -> Result<DiscoverResult, ErrorData> {
        self.caller(&context.extensions)?;
        Ok(DiscoverResult::from_server_info(
            self.supported_protocol_versions().into_owned(),
            self.get_info(),
        ))
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        if self.conn.watching.swap(true, Ordering::SeqCst) {
            return;
        }
        let bound = match &self.conn.fixed {
            Some((c, _)) => Some(c.clone()),
            None => self.conn.bound.get(),
        };
        if let Some(c) = bound {
            tokio::spawn(watch_changes(
                self.state.clone(),
                c.agent,
                self.conn.closed.clone(),
                Notifier::Peer(context.peer),
            ));
        }
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let caller = self.caller(&context.extensions)?;
        tools::list(&self.state, &caller)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let caller = self.caller(&context.extensions)?;
        let session = self.session_id(&caller, &context.extensions)?;
        tools::call(&self.state, &caller, &session, request).await
    }

    async fn list_skills(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListSkillsResult, ErrorData> {
        let caller = self.caller(&context.extensions)?;
        skills::list_skills(&self.state, &caller.agent, request.as_ref())
    }

    async fn get_skill(
        &self,
        request: GetSkillRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetSkillResult, ErrorData> {
        let caller = self.caller(&context.extensions)?;
        skills::get_skill(&self.state, &caller.agent, &request)
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let caller = self.caller(&context.extensions)?;
        skills::list_resources(&self.state, &caller.agent, request.as_ref())
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let caller = self.caller(&context.extensions)?;
        skills::read_resource(&self.state, &caller.agent, &request).await
    }

    async fn read_resource_directory(
        &self,
        request: ReadResourceDirectoryRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceDirectoryResult, ErrorData> {
        let caller = self.caller(&context.extensions)?;
        skills::read_directory(&self.state, &caller.agent, &request)
    }

    fn accepted_subscription_filter(
        &self,
        _requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(notifications::subscription_filter())
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let caller = self.caller(&context.request_context().extensions)?;
        notifications::listen(self.state.clone(), caller.agent, &self.conn.closed, context).await;
        Ok(())
    }
}
