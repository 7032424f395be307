//! Change notifications: `notifications/resources/list_changed` (and `tools/list_changed`)
//! when the agent's visible skills (or offered tools) change, to stateful sessions and stdio
//! once initialized, and to `subscriptions/listen` streams on the 2026-07-28 wire.

use crate::state::AppState;
use rmcp::model::SubscriptionFilter;
use rmcp::service::{SubscriptionContext, SubscriptionSink};
use rmcp::{Peer, RoleServer};
use skillbase_store::AgentName;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Where change notifications go.
pub(super) enum Notifier {
    /// A stateful session or stdio.
    Peer(Peer<RoleServer>),
    /// A `subscriptions/listen` stream (2026-07-28).
    Subscription {
        sink: SubscriptionSink,
        resources: bool,
        tools: bool,
    },
}

impl Notifier {
    /// Send what changed; `false` once the other side is gone.
    async fn send(&self, resources: bool, tools: bool) -> bool {
        match self {
            Notifier::Peer(p) => {
                (!resources || p.notify_resource_list_changed().await.is_ok())
                    && (!tools || p.notify_tool_list_changed().await.is_ok())
            }
            Notifier::Subscription {
                sink,
                resources: r,
                tools: t,
            } => {
                (!(resources && *r) || sink.notify_resource_list_changed().await.is_ok())
                    && (!(tools && *t) || sink.notify_tool_list_changed().await.is_ok())
            }
        }
    }
}

/// Fingerprints of what an agent sees: its skills (names and revisions) and its offered tools.
#[derive(PartialEq, Eq)]
struct Seen {
    resources: Option<u64>,
    tools: Option<u64>,
}

impl Seen {
    fn of(state: &AppState, agent: &AgentName) -> Seen {
        let resources = state
            .skills
            .visible(&state.store, &state.engine, agent)
            .map(|v| {
                let mut h = std::collections::hash_map::DefaultHasher::new();
                for e in &v.entries {
                    (&e.name, e.id, e.active_rev).hash(&mut h);
                }
                h.finish()
            });
        let tools = state.engine.offered(agent).ok().map(|o| {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            for e in &o.entries {
                (&e.wire_name, &e.description, e.parameters.to_string()).hash(&mut h);
            }
            h.finish()
        });
        Seen { resources, tools }
    }
}

/// Notify when the agent's visible skills or offered tools change, until `stop`, shutdown, or
/// the other side goes away.
pub(super) async fn watch_changes(
    state: Arc<AppState>,
    agent: AgentName,
    stop: CancellationToken,
    notifier: Notifier,
) {
    let mut rx = state.store.subscribe();
    rx.borrow_and_update();
    // The registry changes too: an upstream MCP server's tools come, go or change.
    let mut tools = state.engine.tools().subscribe();
    tools.borrow_and_update();
    let mut last = Seen::of(&state, &agent);
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = state.shutdown.cancelled() => return,
            r = rx.changed() => if r.is_err() { return },
            r = tools.changed() => if r.is_err() { return },
        }
        let now = Seen::of(&state, &agent);
        let (resources, tools) = (now.resources != last.resources, now.tools != last.tools);
        last = now;
        if (resources || tools) && !notifier.send(resources, tools).await {
            return;
        }
    }
}

/// What a `subscriptions/listen` stream may ask for: both list changes.
pub(super) fn subscription_filter() -> SubscriptionFilter {
    SubscriptionFilter::builder()
        .tools_list_changed()
        .resources_list_changed()
        .build()
}

/// Serve one `subscriptions/listen` stream: the changes it accepted, until the client cancels
/// it or `closed` (the connection) ends.
pub(super) async fn listen(
    state: Arc<AppState>,
    agent: AgentName,
    closed: &CancellationToken,
    context: SubscriptionContext,
) {
    let accepted = context.accepted();
    let notifier = Notifier::Subscription {
        sink: context.sink().clone(),
        resources: accepted.resources_list_changed == Some(true),
        tools: accepted.tools_list_changed == Some(true),
    };
    let stop = closed.child_token();
    tokio::select! {
        _ = context.cancelled() => {}
        _ = watch_changes(state, agent, stop.clone(), notifier) => {}
    }
    stop.cancel();
}
