//! OpenTelemetry export (off by default; [`TelemetryConfig`] says how it is turned on): a span
//! per turn, per call, per upstream MCP request and per skill write, and metrics of the same,
//! sent over OTLP (HTTP/protobuf or gRPC) to the operator's collector.
//!
//! **What leaves.** Names and numbers only: the agent, the session id (redacted like an event),
//! skill names, reasons and revisions, catalog and token counts, tool names, outcomes, refusal
//! rules, upstream server names. Never a message, an argument value, a result or an error's
//! text: a failure leaves as its kind (`error.type`). Attribute names follow the GenAI and MCP
//! semantic conventions where one exists (`gen_ai.agent.name`, `gen_ai.conversation.id`,
//! `gen_ai.operation.name`, `gen_ai.tool.name`, `gen_ai.tool.call.id`, `mcp.method.name`,
//! `error.type`); the rest are `skillbase.*`.
//!
//! **Never in the way.** A finished span goes into a bounded queue with `try_send`; when the
//! queue is full the span is dropped and counted (`skillbase.telemetry.dropped_spans`, and
//! [`Telemetry::stats`]). One task sends batches and the metrics; a slow or unreachable
//! collector only fills the queue. Recording a metric is a map update under a short lock.
//!
//! **Traces.** A turn starts a trace; the session's calls until its next turn are children of
//! that turn's span, and an upstream MCP request a child of its call's span.

mod config;
mod export;
mod metrics;
pub(crate) mod proto;

pub use config::{Protocol, TelemetryConfig};
pub(crate) use metrics::Instrument;

use crate::redact::Redactor;
use metrics::Aggregate;
use proto::{KeyValue, kv, kv_int};
use skillbase_route::turn::TurnReport;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::{mpsc, oneshot};

/// Most spans in one export.
const MAX_BATCH: usize = 512;
/// Sessions whose last turn is remembered (to parent their calls); past it the map restarts.
const MAX_SESSIONS: usize = 50_000;

/// The instrumentation scope's name.
const SCOPE: &str = "skillbase";

/// What the exporter did so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TelemetryStats {
    /// Spans accepted by the collector.
    pub exported_spans: u64,
    /// Spans dropped because the queue was full.
    pub dropped_spans: u64,
    /// Exports (of spans or metrics) that failed.
    pub failed_exports: u64,
}

/// A span's identity: its trace and its own id (W3C trace context).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpanCtx {
    trace_id: [u8; 16],
    span_id: [u8; 8],
}

impl SpanCtx {
    /// The W3C `traceparent` header value of this span (sampled).
    pub fn traceparent(&self) -> String {
        format!("00-{}-{}-01", hex(&self.trace_id), hex(&self.span_id))
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Shared between the handle and the export task.
struct Shared {
    metrics: Mutex<Aggregate>,
    exported: AtomicU64,
    dropped: AtomicU64,
    failed: AtomicU64,
}

/// The exporter's handle: cheap to clone, every recording method returns at once.
#[derive(Clone)]
pub struct Telemetry {
    spans: mpsc::Sender<proto::Span>,
    flushes: mpsc::Sender<oneshot::Sender<()>>,
    shared: Arc<Shared>,
    ids: Arc<Ids>,
    /// The last turn's span of each session: the parent of the session's calls.
    turns: Arc<Mutex<HashMap<(String, String), SpanCtx>>>,
}

/// A time something started: the wall clock for the span, a monotonic clock for its length.
#[derive(Debug, Clone, Copy)]
pub struct Started {
    wall: SystemTime,
    at: Instant,
}

impl Started {
    /// Now.
    pub fn now() -> Started {
        Started {
            wall: SystemTime::now(),
            at: Instant::now(),
        }
    }

    fn nanos(&self) -> (u64, u64, f64) {
        let start = self
            .wall
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
        let took = self.at.elapsed();
        let end = start.saturating_add(u64::try_from(took.as_nanos()).unwrap_or(u64::MAX));
        (start, end, took.as_secs_f64())
    }
}

fn now_nanos() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// Random-looking, never-zero ids from one random seed and a counter.
struct Ids {
    seed: u64,
    next: AtomicU64,
}

impl Ids {
    fn new() -> Ids {
        let mut b = [0u8; 8];
        // A failed read of the system's randomness falls back to the clock: ids must only be
        // unique, not secret.
        let seed = match getrandom::fill(&mut b) {
            Ok(()) => u64::from_le_bytes(b),
            Err(_) => now_nanos(),
        };
        Ids {
            seed,
            next: AtomicU64::new(1),
        }
    }

    fn u64(&self) -> u64 {
        // splitmix64 of seed + counter: distinct for distinct counters.
        let mut z = self.seed.wrapping_add(
            self.next
                .fetch_add(1, Ordering::Relaxed)
                .wrapping_mul(0x9E37_79B9_7F4A_7C15),
        );
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)).max(1)
    }

    fn span(&self) -> [u8; 8] {
        self.u64().to_be_bytes()
    }

    fn trace(&self) -> [u8; 16] {
        let mut t = [0u8; 16];
        t[..8].copy_from_slice(&self.u64().to_be_bytes());
        t[8..].copy_from_slice(&self.u64().to_be_bytes());
        t
    }
}

/// What a call's span says, beside its scope and start.
pub(crate) struct CallInfo<'a> {
    pub agent: &'a str,
    pub session: &'a str,
    pub tool: &'a str,
    pub call_id: &'a str,
    /// `done`, `started`, `authorized`, `refused`, `failed`.
    pub outcome: &'a str,
    /// The refusal's rule, or a failure's kind.
    pub error: Option<&'a str>,
    /// The skill driving the session, and its run.
    pub skill: Option<(&'a str, i64)>,
    /// The upstream MCP server whose tool this is.
    pub server: Option<&'a str>,
}

/// A call's place in its trace, given to its handler ([`crate::CallContext`]) so that what the
/// handler does (an upstream request) is recorded under it.
#[derive(Clone)]
pub struct SpanScope {
    telemetry: Telemetry,
    ctx: SpanCtx,
    parent: Option<[u8; 8]>,
}

impl SpanScope {
    /// This span's W3C `traceparent` (for a handler to pass on to the service it calls).
    pub fn traceparent(&self) -> String {
        self.ctx.traceparent()
    }

    /// Record a request to an upstream MCP server made within this call.
    pub fn upstream(
        &self,
        server: &str,
        method: &str,
        tool: &str,
        error: Option<&str>,
        started: Started,
    ) {
        let t = &self.telemetry;
        let (start, end, secs) = started.nanos();
        let outcome = if error.is_some() { "error" } else { "ok" };
        let mut attributes = vec![
            kv("mcp.method.name", method),
            kv("gen_ai.operation.name", "execute_tool"),
            kv("gen_ai.tool.name", tool),
            kv("skillbase.mcp.server", server),
        ];
        if let Some(e) = error {
            attributes.push(kv("error.type", e));
        }
        t.finish(proto::Span {
            trace_id: self.ctx.trace_id.to_vec(),
            span_id: t.ids.span().to_vec(),
            parent_span_id: self.ctx.span_id.to_vec(),
            name: format!("{method} {tool}"),
            kind: 3,
            start_time_unix_nano: start,
            end_time_unix_nano: end,
            attributes,
            status: status(error),
            flags: 1,
            ..Default::default()
        });
        let mut m = t.metrics();
        m.add(
            Instrument::UpstreamRequests,
            &[
                ("skillbase.mcp.server", server),
                ("skillbase.outcome", outcome),
            ],
            1,
        );
        m.record(
            Instrument::UpstreamDuration,
            &[
                ("mcp.method.name", method),
                ("skillbase.mcp.server", server),
            ],
            secs,
        );
    }
}

fn status(error: Option<&str>) -> Option<proto::Status> {
    error.map(|e| proto::Status {
        message: e.to_owned(),
        code: 2,
    })
}

impl Telemetry {
    /// Start exporting to the collector `config` names, on the current tokio runtime.
    pub fn start(config: &TelemetryConfig) -> Result<Telemetry, String> {
        let transport = export::Transport::new(config)?;
        let (spans, rx) = mpsc::channel(config.queue);
        let (flushes, flush_rx) = mpsc::channel(16);
        let shared = Arc::new(Shared {
            metrics: Mutex::new(Aggregate::new(now_nanos())),
            exported: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            failed: AtomicU64::new(0),
        });
        let exporter = Exporter {
            transport,
            shared: shared.clone(),
            resource: resource(config),
            batch_delay: config.batch_delay,
            metrics_interval: config.metrics_interval,
        };
        tokio::spawn(exporter.run(rx, flush_rx));
        Ok(Telemetry {
            spans,
            flushes,
            shared,
            ids: Arc::new(Ids::new()),
            turns: Arc::new(Mutex::new(HashMap::new())),
        })
    }

    /// What was exported, dropped and failed so far.
    pub fn stats(&self) -> TelemetryStats {
        TelemetryStats {
            exported_spans: self.shared.exported.load(Ordering::Relaxed),
            dropped_spans: self.shared.dropped.load(Ordering::Relaxed),
            failed_exports: self.shared.failed.load(Ordering::Relaxed),
        }
    }

    /// Send what is queued and the metrics now, waiting up to `timeout` (at shutdown, and for
    /// tests).
    pub async fn flush(&self, timeout: Duration) {
        let (tx, rx) = oneshot::channel();
        if self.flushes.try_send(tx).is_ok() {
            let _ = tokio::time::timeout(timeout, rx).await;
        }
    }

    fn metrics(&self) -> std::sync::MutexGuard<'_, Aggregate> {
        self.shared
            .metrics
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// Queue a finished span, or drop and count it when the queue is full.
    fn finish(&self, span: proto::Span) {
        if self.spans.try_send(span).is_err() {
            self.shared.dropped.fetch_add(1, Ordering::Relaxed);
            self.metrics().add(
                Instrument::DroppedSpans,
                &[("skillbase.signal", "spans")],
                1,
            );
        }
    }

    /// Record a resolved turn: its span (a new trace, remembered as the parent of the
    /// session's next calls) and its metrics. `session` is redacted by the caller.
    pub(crate) fn turn(&self, agent: &str, session: &str, report: &TurnReport, started: Started) {
        let ctx = SpanCtx {
            trace_id: self.ids.trace(),
            span_id: self.ids.span(),
        };
        {
            let mut turns = self.turns.lock().unwrap_or_else(|p| p.into_inner());
            if turns.len() >= MAX_SESSIONS {
                turns.clear();
            }
            turns.insert((agent.to_owned(), session.to_owned()), ctx);
        }
        let (start, end, secs) = started.nanos();
        let mut attributes = vec![
            kv("gen_ai.agent.name", agent),
            kv("gen_ai.conversation.id", session),
        ];
        attributes.extend(turn_attributes(report));
        self.finish(proto::Span {
            trace_id: ctx.trace_id.to_vec(),
            span_id: ctx.span_id.to_vec(),
            name: format!("skillbase.turn {agent}"),
            kind: 1,
            start_time_unix_nano: start,
            end_time_unix_nano: end,
            attributes,
            flags: 1,
            ..Default::default()
        });
        let mut m = self.metrics();
        m.add(Instrument::Turns, &[("gen_ai.agent.name", agent)], 1);
        m.record(
            Instrument::TurnDuration,
            &[("gen_ai.agent.name", agent)],
            secs,
        );
        for a in &report.activated {
            m.add(
                Instrument::Activations,
                &[
                    ("gen_ai.agent.name", agent),
                    ("skillbase.skill.name", &a.name),
                    ("skillbase.activation.reason", reason_kind(&a.reason)),
                ],
                1,
            );
        }
        let t = &report.tokens;
        for (part, n) in [
            ("eager", t.eager),
            ("injected", t.injected),
            ("catalog", t.catalog),
            ("tools", t.tools),
        ] {
            if n > 0 {
                m.add(
                    Instrument::PromptTokens,
                    &[
                        ("gen_ai.agent.name", agent),
                        ("skillbase.prompt.part", part),
                    ],
                    i64::from(n),
                );
            }
        }
    }

    /// The span a call of `agent`'s `session` will be: a child of the session's last turn, or
    /// a trace of its own.
    pub(crate) fn call_scope(&self, agent: &str, session: &str) -> SpanScope {
        let parent = self
            .turns
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&(agent.to_owned(), session.to_owned()))
            .copied();
        SpanScope {
            telemetry: self.clone(),
            ctx: SpanCtx {
                trace_id: parent.map_or_else(|| self.ids.trace(), |p| p.trace_id),
                span_id: self.ids.span(),
            },
            parent: parent.map(|p| p.span_id),
        }
    }

    /// Record a finished call under the scope it was given.
    pub(crate) fn call(&self, scope: &SpanScope, info: &CallInfo<'_>, started: Started) {
        let (start, end, secs) = started.nanos();
        let mut attributes = vec![
            kv("gen_ai.operation.name", "execute_tool"),
            kv("gen_ai.tool.name", info.tool),
            kv("gen_ai.tool.call.id", info.call_id),
            kv("gen_ai.agent.name", info.agent),
            kv("gen_ai.conversation.id", info.session),
            kv("skillbase.call.outcome", info.outcome),
        ];
        if let Some(e) = info.error {
            attributes.push(kv("error.type", e));
        }
        if let Some((skill, run)) = info.skill {
            attributes.push(kv("skillbase.skill.name", skill));
            attributes.push(kv_int("skillbase.run.id", run));
        }
        if let Some(s) = info.server {
            attributes.push(kv("skillbase.mcp.server", s));
        }
        self.finish(proto::Span {
            trace_id: scope.ctx.trace_id.to_vec(),
            span_id: scope.ctx.span_id.to_vec(),
            parent_span_id: scope.parent.map(|p| p.to_vec()).unwrap_or_default(),
            name: format!("execute_tool {}", info.tool),
            kind: 1,
            start_time_unix_nano: start,
            end_time_unix_nano: end,
            attributes,
            status: status(info.error),
            flags: 1,
            ..Default::default()
        });
        let mut m = self.metrics();
        let attrs = [
            ("gen_ai.agent.name", info.agent),
            ("gen_ai.tool.name", info.tool),
            ("skillbase.call.outcome", info.outcome),
            ("error.type", info.error.unwrap_or("")),
        ];
        m.add(Instrument::Calls, &attrs, 1);
        m.record(
            Instrument::CallDuration,
            &[
                ("gen_ai.tool.name", info.tool),
                ("skillbase.call.outcome", info.outcome),
            ],
            secs,
        );
    }

    /// Record a write of skills (`operation`: `put`, `pending`, `candidate`, `import`): the
    /// skills written with their scope, kind and revision, or the error's kind.
    pub(crate) fn write(
        &self,
        operation: &str,
        written: &[skillbase_store::WriteOutcome],
        error: Option<&str>,
        started: Started,
    ) {
        let (start, end, _) = started.nanos();
        let mut attributes = vec![
            kv("skillbase.write.operation", operation),
            kv_int("skillbase.write.count", written.len() as i64),
        ];
        if let [one] = written {
            attributes.push(kv("skillbase.skill.name", one.name.as_str()));
            attributes.push(kv("skillbase.skill.scope", one.scope.to_string()));
            attributes.push(kv("skillbase.write.kind", write_kind(&one.kind)));
            attributes.push(kv_int("skillbase.skill.revision", one.rev));
        } else if !written.is_empty() {
            attributes.push(proto::kv_strings(
                "skillbase.skill.names",
                written
                    .iter()
                    .take(100)
                    .map(|o| o.name.to_string())
                    .collect(),
            ));
        }
        if let Some(e) = error {
            attributes.push(kv("error.type", e));
        }
        self.finish(proto::Span {
            trace_id: self.ids.trace().to_vec(),
            span_id: self.ids.span().to_vec(),
            name: format!("skillbase.write {operation}"),
            kind: 1,
            start_time_unix_nano: start,
            end_time_unix_nano: end,
            attributes,
            status: status(error),
            flags: 1,
            ..Default::default()
        });
        self.metrics().add(
            Instrument::Writes,
            &[
                ("skillbase.write.operation", operation),
                (
                    "skillbase.outcome",
                    if error.is_some() { "error" } else { "ok" },
                ),
            ],
            1,
        );
    }

    /// A counter's value now (for tests).
    #[cfg(test)]
    pub fn counter(&self, i: Instrument, attrs: &[(&str, &str)]) -> i64 {
        self.metrics().counter(i, attrs)
    }
}

/// Redact a text for an attribute (a session id may hold anything a client put there).
pub(crate) fn redacted(r: &Redactor, s: &str) -> String {
    r.redact(s).into_owned()
}

fn write_kind(k: &skillbase_store::WriteKind) -> &'static str {
    use skillbase_store::WriteKind as K;
    match k {
        K::Created => "created",
        K::Modified => "modified",
        K::Unchanged => "unchanged",
        K::Pending => "pending",
        K::Candidate => "candidate",
        K::Reverted => "reverted",
        K::Status => "status",
    }
}

/// A reason's kind: `trigger:deploy` → `trigger`, `companion:of` → `companion`.
fn reason_kind(reason: &str) -> &str {
    reason.split(':').next().unwrap_or(reason)
}

/// The turn span's attributes: each activated skill with its reason and revision (parallel
/// arrays), and the catalog's and the prompt's counts.
fn turn_attributes(r: &TurnReport) -> Vec<KeyValue> {
    let c = &r.catalog;
    let mut out = vec![
        proto::kv_strings(
            "skillbase.skills.activated",
            r.activated.iter().map(|a| a.name.clone()).collect(),
        ),
        proto::kv_strings(
            "skillbase.skills.reasons",
            r.activated.iter().map(|a| a.reason.clone()).collect(),
        ),
        proto::kv_strings(
            "skillbase.skills.revisions",
            r.activated.iter().map(|a| a.rev.to_string()).collect(),
        ),
        kv_int("skillbase.skills.evicted", r.evicted.len() as i64),
        kv_int("skillbase.catalog.full", c.full.len() as i64),
        kv_int("skillbase.catalog.name_only", c.name_only.len() as i64),
        kv_int("skillbase.catalog.omitted", c.omitted.len() as i64),
        kv_int("skillbase.catalog.budget", i64::from(c.budget)),
        kv_int("skillbase.catalog.tokens", i64::from(c.tokens)),
        kv_int("skillbase.tokens.total", i64::from(r.tokens.total)),
        kv_int("skillbase.tokens.eager", i64::from(r.tokens.eager)),
        kv_int("skillbase.tokens.injected", i64::from(r.tokens.injected)),
        kv_int("skillbase.tokens.tools", i64::from(r.tokens.tools)),
    ];
    out.push(KeyValue {
        key: "skillbase.catalog.ranked".into(),
        value: Some(proto::AnyValue {
            value: Some(proto::Value::Bool(c.ranked)),
        }),
    });
    out
}

fn resource(config: &TelemetryConfig) -> proto::Resource {
    let mut attributes = vec![
        kv("service.name", config.service_name.as_str()),
        kv("service.version", env!("CARGO_PKG_VERSION")),
        kv("telemetry.sdk.name", "skillbase"),
        kv("telemetry.sdk.language", "rust"),
    ];
    for (k, v) in &config.resource {
        attributes.retain(|a| &a.key != k);
        attributes.push(kv(k, v.as_str()));
    }
    proto::Resource { attributes }
}

/// The export task's state.
struct Exporter {
    transport: export::Transport,
    shared: Arc<Shared>,
    resource: proto::Resource,
    batch_delay: Duration,
    metrics_interval: Duration,
}

impl Exporter {
    async fn run(
        self,
        mut spans: mpsc::Receiver<proto::Span>,
        mut flushes: mpsc::Receiver<oneshot::Sender<()>>,
    ) {
        let mut batch = Vec::with_capacity(MAX_BATCH);
        let mut batch_tick = tokio::time::interval(self.batch_delay);
        let mut metrics_tick = tokio::time::interval(self.metrics_interval);
        batch_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        metrics_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        metrics_tick.tick().await; // the first tick is immediate: nothing to send yet
        loop {
            tokio::select! {
                span = spans.recv() => match span {
                    Some(s) => {
                        batch.push(s);
                        if batch.len() >= MAX_BATCH {
                            self.send_spans(&mut batch).await;
                        }
                    }
                    None => {
                        self.send_spans(&mut batch).await;
                        self.send_metrics().await;
                        return;
                    }
                },
                _ = batch_tick.tick() => self.send_spans(&mut batch).await,
                _ = metrics_tick.tick() => self.send_metrics().await,
                Some(done) = flushes.recv() => {
                    while let Ok(s) = spans.try_recv() {
                        batch.push(s);
                        if batch.len() >= MAX_BATCH {
                            self.send_spans(&mut batch).await;
                        }
                    }
                    self.send_spans(&mut batch).await;
                    self.send_metrics().await;
                    let _ = done.send(());
                }
            }
        }
    }

    async fn send_spans(&self, batch: &mut Vec<proto::Span>) {
        if batch.is_empty() {
            return;
        }
        let n = batch.len() as u64;
        let req = proto::ExportTraceServiceRequest {
            resource_spans: vec![proto::ResourceSpans {
                resource: Some(self.resource.clone()),
                scope_spans: vec![proto::ScopeSpans {
                    scope: Some(scope()),
                    spans: std::mem::take(batch),
                    schema_url: String::new(),
                }],
                schema_url: String::new(),
            }],
        };
        match self.transport.spans(&req).await {
            Ok(rejected) => {
                let ok = n.saturating_sub(u64::try_from(rejected).unwrap_or(0));
                self.shared.exported.fetch_add(ok, Ordering::Relaxed);
            }
            Err(e) => {
                self.shared.failed.fetch_add(1, Ordering::Relaxed);
                tracing::warn!("telemetry: {n} spans not exported: {e}");
            }
        }
    }

    async fn send_metrics(&self) {
        let metrics = self
            .shared
            .metrics
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .to_proto(now_nanos());
        if metrics.is_empty() {
            return;
        }
        let req = proto::ExportMetricsServiceRequest {
            resource_metrics: vec![proto::ResourceMetrics {
                resource: Some(self.resource.clone()),
                scope_metrics: vec![proto::ScopeMetrics {
                    scope: Some(scope()),
                    metrics,
                    schema_url: String::new(),
                }],
                schema_url: String::new(),
            }],
        };
        if let Err(e) = self.transport.metrics(&req).await {
            self.shared.failed.fetch_add(1, Ordering::Relaxed);
            tracing::warn!("telemetry: metrics not exported: {e}");
        }
    }
}

fn scope() -> proto::InstrumentationScope {
    proto::InstrumentationScope {
        name: SCOPE.into(),
        version: env!("CARGO_PKG_VERSION").into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_distinct_and_never_zero() {
        let ids = Ids::new();
        let mut seen = std::collections::HashSet::new();
        for _ in 0..10_000 {
            let s = ids.span();
            assert_ne!(s, [0u8; 8]);
            assert!(seen.insert(s));
        }
        let c = SpanCtx {
            trace_id: [0xab; 16],
            span_id: [1; 8],
        };
        assert_eq!(
            c.traceparent(),
            "00-abababababababababababababababab-0101010101010101-01"
        );
    }

    #[test]
    fn reasons_are_counted_by_kind() {
        assert_eq!(reason_kind("trigger:deploy now"), "trigger");
        assert_eq!(reason_kind("eager"), "eager");
        assert_eq!(reason_kind("companion:a"), "companion");
    }

    /// A collector that never answers: every turn still returns at once, the queue fills, and
    /// what did not fit is dropped and counted.
    #[tokio::test]
    async fn a_silent_collector_drops_spans_and_never_waits() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        // Accept and hold connections without answering.
        let held = tokio::spawn(async move {
            let mut conns = Vec::new();
            while let Ok((c, _)) = listener.accept().await {
                conns.push(c);
            }
        });
        let config = TelemetryConfig::resolve(
            Some(
                &format!(
                    "enabled = true\nendpoint = \"http://{addr}\"\nqueue = 8\nbatch_delay_ms = 1\ntimeout_ms = 60000\n"
                )
                .parse()
                .unwrap(),
            ),
            &|_| None,
        )
        .unwrap()
        .unwrap();
        let t = Telemetry::start(&config).unwrap();
        let report = TurnReport::default();
        let before = Instant::now();
        for i in 0..5_000 {
            t.turn("a", &format!("s{i}"), &report, Started::now());
        }
        assert!(
            before.elapsed() < Duration::from_secs(5),
            "recording must not wait for the collector"
        );
        let stats = t.stats();
        assert!(
            stats.dropped_spans >= 5_000 - 8 - MAX_BATCH as u64,
            "{stats:?}"
        );
        assert_eq!(stats.exported_spans, 0);
        assert_eq!(
            t.counter(Instrument::DroppedSpans, &[("skillbase.signal", "spans")]),
            stats.dropped_spans as i64
        );
        held.abort();
    }
}
