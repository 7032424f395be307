//! Prometheus metrics at `/metrics` (text exposition format).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use skillbase_runtime::CallOutcome;
use std::borrow::Cow;
use std::sync::Mutex;

/// Label values: static for the common ones (no allocation per request).
pub type Label = Cow<'static, str>;

/// Labels of `skillbase_http_requests_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct HttpLabels {
    /// The request method (`GET`, `POST`, ...).
    pub method: Label,
    /// The route pattern (`/v1/skills/{name}`), never the raw path, so cardinality stays bounded.
    pub route: Label,
    /// The response's HTTP status code.
    pub status: u16,
}

/// Labels of `skillbase_http_request_duration_seconds`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RouteLabels {
    /// The route pattern (`/v1/skills/{name}`, `/mcp`, or `unmatched`), never the raw path.
    pub route: Label,
}

/// A method as a label value.
pub fn method_label(m: &axum::http::Method) -> Label {
    use axum::http::Method;
    Cow::Borrowed(match *m {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::PATCH => "PATCH",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        _ => return Cow::Owned(m.as_str().to_owned()),
    })
}

/// Labels of `skillbase_calls_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OutcomeLabels {
    /// The call's outcome: `done`, `started` (detached), `refused` or `failed`.
    pub outcome: String,
}

/// The server's metrics, all prefixed `skillbase_`, rendered at `/metrics` for admin tokens.
pub struct Metrics {
    registry: Mutex<Registry>,
    /// The `calls` counters by outcome, fetched once (a call touches no label set).
    call_outcomes: [Counter; 4],
    /// `skillbase_http_requests_total`: every request, counted by the `observe` middleware.
    pub http_requests: Family<HttpLabels, Counter>,
    /// `skillbase_http_request_duration_seconds`: time to the start of the response, 0.1 ms to 10 s
    /// buckets.
    pub http_seconds: Family<RouteLabels, Histogram>,
    /// `skillbase_turns_total`: turns resolved over REST or MCP.
    pub turns: Counter,
    /// `skillbase_calls_total`: tool calls dispatched, by outcome (see [`Metrics::call`]).
    pub calls: Family<OutcomeLabels, Counter>,
    /// `skillbase_auth_failures_total`: requests answered 401 (missing, unknown or revoked token).
    pub auth_failures: Counter,
    /// Stateless MCP `tools/call` requests answered on the direct path (not through rmcp).
    pub mcp_direct_calls: Counter,
    /// `skillbase_skills`: skill records in the index, set when `/metrics` is read.
    pub skills: Gauge,
    /// `skillbase_agents`: configured agents, set when `/metrics` is read.
    pub agents: Gauge,
    /// `skillbase_telemetry_dropped_spans`: spans the OpenTelemetry export queue dropped
    /// (full), set when `/metrics` is read.
    pub telemetry_dropped_spans: Gauge,
    /// `skillbase_telemetry_failed_exports`: OTLP exports that failed, set when read.
    pub telemetry_failed_exports: Gauge,
}

impl Default for Metrics {
    fn default() -> Metrics {
        Metrics::new()
    }
}

impl Metrics {
    /// A fresh registry with every metric at zero.
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("skillbase");
        let http_requests = Family::<HttpLabels, Counter>::default();
        let http_seconds = Family::<RouteLabels, Histogram>::new_with_constructor(|| {
            Histogram::new([
                0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                1.0, 2.5, 5.0, 10.0,
            ])
        });
        let turns = Counter::default();
        let calls = Family::<OutcomeLabels, Counter>::default();
        let auth_failures = Counter::default();
        let mcp_direct_calls = Counter::default();
        let skills = Gauge::default();
        let agents = Gauge::default();
        let telemetry_dropped_spans = Gauge::default();
        let telemetry_failed_exports = Gauge::default();
        registry.register(
            "http_requests",
            "HTTP requests by method, route and status",
            http_requests.clone(),
        );
        registry.register(
            "http_request_duration_seconds",
            "Time to the start of the response, by route",
            http_seconds.clone(),
        );
        registry.register("turns", "Turns resolved", turns.clone());
        registry.register("calls", "Tool calls dispatched, by outcome", calls.clone());
        registry.register(
            "auth_failures",
            "Requests refused for a missing, unknown or revoked token",
            auth_failures.clone(),
        );
        registry.register(
            "mcp_direct_calls",
            "Stateless MCP tools/call requests answered without rmcp's per-request service",
            mcp_direct_calls.clone(),
        );
        registry.register("skills", "Skill records in the index", skills.clone());
        registry.register("agents", "Configured agents", agents.clone());
        registry.register(
            "telemetry_dropped_spans",
            "Spans the OpenTelemetry export queue dropped because it was full",
            telemetry_dropped_spans.clone(),
        );
        registry.register(
            "telemetry_failed_exports",
            "OTLP exports (spans or metrics) that failed",
            telemetry_failed_exports.clone(),
        );
        let call_outcomes = ["done", "started", "refused", "failed"].map(|o| {
            calls
                .get_or_create(&OutcomeLabels {
                    outcome: o.to_owned(),
                })
                .clone()
        });
        Metrics {
            registry: Mutex::new(registry),
            call_outcomes,
            http_requests,
            http_seconds,
            turns,
            calls,
            auth_failures,
            mcp_direct_calls,
            skills,
            agents,
            telemetry_dropped_spans,
            telemetry_failed_exports,
        }
    }

    /// Count a dispatched call by its outcome.
    pub fn call(&self, outcome: &CallOutcome) {
        let i = match outcome {
            CallOutcome::Done { .. } => 0,
            CallOutcome::Started { .. } | CallOutcome::Authorized { .. } => 1,
            CallOutcome::Refused { .. } => 2,
            CallOutcome::Failed { .. } => 3,
        };
        self.call_outcomes[i].inc();
    }

    /// The text exposition of every metric.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let registry = self.registry.lock().unwrap_or_else(|e| e.into_inner());
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &registry);
        out
    }
}
