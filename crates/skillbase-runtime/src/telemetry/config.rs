//! `[telemetry]` in `skillbase.toml` and the standard `OTEL_*` variables: where and how spans
//! and metrics are exported. Off unless the table says `enabled = true` or the environment
//! names an OTLP endpoint; `OTEL_SDK_DISABLED=true` turns it off either way. A value in the
//! table wins over the environment's (the file is the more specific choice); the collector's
//! headers come only from `OTEL_EXPORTER_OTLP_HEADERS`, so a key never sits in the file.
//!
//! ```toml
//! [telemetry]
//! enabled = true
//! endpoint = "http://127.0.0.1:4318"   # OTEL_EXPORTER_OTLP_ENDPOINT
//! protocol = "http/protobuf"           # or "grpc" (then :4317); OTEL_EXPORTER_OTLP_PROTOCOL
//! service_name = "skillbase"           # OTEL_SERVICE_NAME
//! timeout_ms = 10000                   # OTEL_EXPORTER_OTLP_TIMEOUT
//! queue = 2048                         # OTEL_BSP_MAX_QUEUE_SIZE: spans waiting; past it, dropped
//! batch_delay_ms = 5000                # OTEL_BSP_SCHEDULE_DELAY
//! metrics_interval_ms = 60000          # OTEL_METRIC_EXPORT_INTERVAL
//! ```

use serde::Deserialize;
use std::time::Duration;

/// How spans and metrics travel to the collector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// OTLP/HTTP with binary protobuf bodies (`/v1/traces`, `/v1/metrics`), port 4318.
    HttpProtobuf,
    /// OTLP/gRPC (HTTP/2; cleartext `http://` endpoints with prior knowledge), port 4317.
    Grpc,
}

impl Protocol {
    fn parse(s: &str) -> Result<Protocol, String> {
        match s.trim() {
            "http/protobuf" => Ok(Protocol::HttpProtobuf),
            "grpc" => Ok(Protocol::Grpc),
            "http/json" => Err(
                "protocol \"http/json\" is not supported: use \"http/protobuf\" or \"grpc\"".into(),
            ),
            other => Err(format!(
                "protocol \"{}\": use \"http/protobuf\" or \"grpc\"",
                other.chars().take(40).collect::<String>()
            )),
        }
    }
}

/// The telemetry exporter's settings, resolved from the table and the environment.
#[derive(Debug, Clone, PartialEq)]
pub struct TelemetryConfig {
    /// The traces endpoint, complete (`…/v1/traces` for HTTP; the server's address for gRPC).
    pub traces_endpoint: String,
    /// The metrics endpoint, complete.
    pub metrics_endpoint: String,
    /// HTTP/protobuf or gRPC.
    pub protocol: Protocol,
    /// Headers sent with every export (`OTEL_EXPORTER_OTLP_HEADERS`).
    pub headers: Vec<(String, String)>,
    /// The resource's `service.name`.
    pub service_name: String,
    /// More resource attributes (`OTEL_RESOURCE_ATTRIBUTES`, then the table's `resource`).
    pub resource: Vec<(String, String)>,
    /// One export's time limit.
    pub timeout: Duration,
    /// Spans waiting for export; a span finished while it is full is dropped and counted.
    pub queue: usize,
    /// How long spans gather before a batch is sent.
    pub batch_delay: Duration,
    /// How often the metrics are sent.
    pub metrics_interval: Duration,
}

/// The `[telemetry]` table as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    enabled: Option<bool>,
    endpoint: Option<String>,
    traces_endpoint: Option<String>,
    metrics_endpoint: Option<String>,
    protocol: Option<String>,
    service_name: Option<String>,
    timeout_ms: Option<u64>,
    queue: Option<usize>,
    batch_delay_ms: Option<u64>,
    metrics_interval_ms: Option<u64>,
    #[serde(default)]
    resource: std::collections::BTreeMap<String, String>,
}

/// Most spans the queue may hold.
const MAX_QUEUE: usize = 1 << 20;

impl TelemetryConfig {
    /// Resolve the settings from the `[telemetry]` table (if any) and the environment (`env`
    /// reads a variable; [`std::env::var`] in a process). `None` when telemetry is off.
    pub fn resolve(
        table: Option<&toml::Table>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<TelemetryConfig>, String> {
        let t: Table = match table {
            Some(t) => toml::Value::Table(t.clone())
                .try_into()
                .map_err(|e: toml::de::Error| format!("[telemetry]: {}", e.message()))?,
            None => Table::default(),
        };
        let var = |k: &str| {
            env(k)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        if var("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
            return Ok(None);
        }
        let env_on = [
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        ]
        .iter()
        .any(|k| var(k).is_some());
        if !t.enabled.unwrap_or(env_on) {
            return Ok(None);
        }
        let protocol = match t
            .protocol
            .clone()
            .or_else(|| var("OTEL_EXPORTER_OTLP_PROTOCOL"))
        {
            Some(p) => Protocol::parse(&p).map_err(|e| format!("[telemetry] {e}"))?,
            None => Protocol::HttpProtobuf,
        };
        let (traces_endpoint, metrics_endpoint) = endpoints(&t, protocol, &var)?;
        let headers = match var("OTEL_EXPORTER_OTLP_HEADERS") {
            Some(h) => parse_pairs(&h, "OTEL_EXPORTER_OTLP_HEADERS")?,
            None => Vec::new(),
        };
        let mut resource = match var("OTEL_RESOURCE_ATTRIBUTES") {
            Some(r) => parse_pairs(&r, "OTEL_RESOURCE_ATTRIBUTES")?,
            None => Vec::new(),
        };
        resource.extend(t.resource.clone());
        Ok(Some(TelemetryConfig {
            traces_endpoint,
            metrics_endpoint,
            protocol,
            headers,
            service_name: t
                .service_name
                .clone()
                .or_else(|| var("OTEL_SERVICE_NAME"))
                .unwrap_or_else(|| "skillbase".into()),
            resource,
            timeout: millis(t.timeout_ms, &var, "OTEL_EXPORTER_OTLP_TIMEOUT", 10_000, 1)?,
            queue: queue_size(t.queue, &var)?,
            batch_delay: millis(t.batch_delay_ms, &var, "OTEL_BSP_SCHEDULE_DELAY", 5_000, 1)?,
            metrics_interval: millis(
                t.metrics_interval_ms,
                &var,
                "OTEL_METRIC_EXPORT_INTERVAL",
                60_000,
                10,
            )?,
        }))
    }
}

/// The traces and metrics endpoints: each signal's own when given (as is), else the base
/// endpoint with the signal's path (OTLP/HTTP) or as is (gRPC).
fn endpoints(
    t: &Table,
    protocol: Protocol,
    var: &dyn Fn(&str) -> Option<String>,
) -> Result<(String, String), String> {
    let base = t
        .endpoint
        .clone()
        .or_else(|| var("OTEL_EXPORTER_OTLP_ENDPOINT"))
        .unwrap_or_else(|| match protocol {
            Protocol::HttpProtobuf => "http://localhost:4318".into(),
            Protocol::Grpc => "http://localhost:4317".into(),
        });
    check_url(&base, "endpoint")?;
    let signal = |own: Option<String>, var_name: &str, path: &str| -> Result<String, String> {
        match own.or_else(|| var(var_name)) {
            Some(u) => {
                check_url(&u, var_name)?;
                Ok(u)
            }
            None => Ok(match protocol {
                Protocol::HttpProtobuf => format!("{}/{path}", base.trim_end_matches('/')),
                Protocol::Grpc => base.trim_end_matches('/').to_owned(),
            }),
        }
    };
    Ok((
        signal(
            t.traces_endpoint.clone(),
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "v1/traces",
        )?,
        signal(
            t.metrics_endpoint.clone(),
            "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
            "v1/metrics",
        )?,
    ))
}

/// A duration in milliseconds: the table's, else the variable's, else `default`; within
/// `min`..=1 hour.
fn millis(
    own: Option<u64>,
    var: &dyn Fn(&str) -> Option<String>,
    var_name: &str,
    default: u64,
    min: u64,
) -> Result<Duration, String> {
    let v = match own {
        Some(v) => v,
        None => match var(var_name) {
            Some(s) => s
                .parse::<u64>()
                .map_err(|_| format!("{var_name}: a whole number of milliseconds"))?,
            None => default,
        },
    };
    if !(min..=3_600_000).contains(&v) {
        return Err(format!(
            "[telemetry] {var_name} = {v}: give {min} to 3600000 milliseconds"
        ));
    }
    Ok(Duration::from_millis(v))
}

/// The span queue's length: the table's, else `OTEL_BSP_MAX_QUEUE_SIZE`, else 2,048.
fn queue_size(own: Option<usize>, var: &dyn Fn(&str) -> Option<String>) -> Result<usize, String> {
    let queue = match own {
        Some(q) => q,
        None => match var("OTEL_BSP_MAX_QUEUE_SIZE") {
            Some(s) => s
                .parse()
                .map_err(|_| "OTEL_BSP_MAX_QUEUE_SIZE: a whole number of spans".to_owned())?,
            None => 2048,
        },
    };
    if !(1..=MAX_QUEUE).contains(&queue) {
        return Err(format!(
            "[telemetry] queue = {queue}: give 1 to {MAX_QUEUE} spans"
        ));
    }
    Ok(queue)
}

/// An endpoint must be an `http(s)` URL without credentials (headers carry keys).
fn check_url(url: &str, what: &str) -> Result<(), String> {
    let parsed =
        reqwest::Url::parse(url).map_err(|e| format!("[telemetry] {what}: not a URL ({e})"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!(
            "[telemetry] {what}: use an http:// or https:// URL"
        ));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(format!(
            "[telemetry] {what}: no credentials in the URL; give them in OTEL_EXPORTER_OTLP_HEADERS"
        ));
    }
    Ok(())
}

/// `key=value,key2=value2` with percent-encoded values (the W3C baggage form the OTel
/// variables use). An error never quotes a value: a header may hold a key.
fn parse_pairs(text: &str, what: &str) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    for (i, item) in text.split(',').enumerate() {
        if item.trim().is_empty() {
            continue;
        }
        let Some((k, v)) = item.split_once('=') else {
            return Err(format!("{what}: item {} is not key=value", i + 1));
        };
        let k = k.trim();
        if k.is_empty() || !k.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(format!(
                "{what}: item {} has an empty or invalid key",
                i + 1
            ));
        }
        let v = skillbase_format::uri::decode_segment(v.trim())
            .ok_or_else(|| format!("{what}: the value of '{k}' is not valid percent-encoding"))?;
        out.push((k.to_owned(), v));
    }
    if out.len() > 64 {
        return Err(format!("{what}: at most 64 items"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(s: &str) -> toml::Table {
        s.parse().unwrap()
    }

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn off_unless_the_table_or_the_environment_turns_it_on() {
        let none = env_of(&[]);
        assert_eq!(TelemetryConfig::resolve(None, &none).unwrap(), None);
        assert_eq!(
            TelemetryConfig::resolve(Some(&table("endpoint = \"http://x:4318\"")), &none).unwrap(),
            None,
            "a table without enabled = true stays off"
        );
        let env = env_of(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/")]);
        let c = TelemetryConfig::resolve(None, &env).unwrap().unwrap();
        assert_eq!(c.traces_endpoint, "http://collector:4318/v1/traces");
        assert_eq!(c.metrics_endpoint, "http://collector:4318/v1/metrics");
        assert_eq!(c.protocol, Protocol::HttpProtobuf);
        let off = env_of(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318"),
            ("OTEL_SDK_DISABLED", "TRUE"),
        ]);
        assert_eq!(TelemetryConfig::resolve(None, &off).unwrap(), None);
        assert_eq!(
            TelemetryConfig::resolve(Some(&table("enabled = false")), &env).unwrap(),
            None
        );
    }

    #[test]
    fn the_table_wins_and_grpc_uses_the_base_endpoint() {
        let env = env_of(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://env:4318"),
            (
                "OTEL_EXPORTER_OTLP_HEADERS",
                "x-api-key=s%3Dcret, tenant = t1",
            ),
            ("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=prod"),
            ("OTEL_SERVICE_NAME", "from-env"),
        ]);
        let c = TelemetryConfig::resolve(
            Some(&table(
                "enabled = true\nendpoint = \"http://file:4317\"\nprotocol = \"grpc\"\nservice_name = \"sb\"\n[resource]\nregion = \"eu\"\n",
            )),
            &env,
        )
        .unwrap()
        .unwrap();
        assert_eq!(c.protocol, Protocol::Grpc);
        assert_eq!(c.traces_endpoint, "http://file:4317");
        assert_eq!(c.service_name, "sb");
        assert_eq!(
            c.headers,
            vec![
                ("x-api-key".into(), "s=cret".into()),
                ("tenant".into(), "t1".into())
            ]
        );
        assert_eq!(
            c.resource,
            vec![
                ("deployment.environment".into(), "prod".into()),
                ("region".into(), "eu".into())
            ]
        );
        assert_eq!(c.batch_delay, Duration::from_secs(5));
    }

    #[test]
    fn mistakes_are_named_and_never_quote_a_header_value() {
        let none = env_of(&[]);
        for (t, want) in [
            ("enabled = true\nprotocol = \"http/json\"", "not supported"),
            (
                "enabled = true\nprotocol = \"carrier-pigeon\"",
                "use \"http/protobuf\"",
            ),
            (
                "enabled = true\nendpoint = \"ftp://x\"",
                "http:// or https://",
            ),
            (
                "enabled = true\nendpoint = \"http://u:p@x\"",
                "no credentials",
            ),
            ("enabled = true\nendpoint = \"not a url\"", "not a URL"),
            ("enabled = true\nqueue = 0", "1 to"),
            ("enabled = true\ntimeout_ms = 0", "1 to 3600000"),
            ("enabled = true\nmetrics_interval_ms = 1", "10 to 3600000"),
            ("enabled = true\nsurprise = 1", "unknown field"),
        ] {
            let e = TelemetryConfig::resolve(Some(&table(t)), &none).unwrap_err();
            assert!(e.contains(want), "{t}: {e}");
        }
        for h in ["novalue", "=v", "k=%zz", "k=%e2%28"] {
            let env = move |k: &str| {
                (k == "OTEL_EXPORTER_OTLP_HEADERS").then(|| format!("{h},secret-key=hunter2"))
            };
            let e = TelemetryConfig::resolve(Some(&table("enabled = true")), &env).unwrap_err();
            assert!(e.contains("OTEL_EXPORTER_OTLP_HEADERS"), "{h}: {e}");
            assert!(!e.contains("hunter2"), "{e}");
        }
        let bad_num = env_of(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://x:4318"),
            ("OTEL_BSP_SCHEDULE_DELAY", "soon"),
        ]);
        let e = TelemetryConfig::resolve(None, &bad_num).unwrap_err();
        assert!(e.contains("OTEL_BSP_SCHEDULE_DELAY"), "{e}");
    }
}
