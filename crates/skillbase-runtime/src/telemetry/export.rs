//! Sending to the collector: OTLP/HTTP (binary protobuf) or OTLP/gRPC (HTTP/2, one unary
//! `Export` per batch), each within the configured time limit. A failed export is counted and
//! logged (without the body or the headers) and not retried: the next batch goes on.

use super::config::{Protocol, TelemetryConfig};
use super::proto;
use prost::Message;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};

/// The gRPC methods of the two collector services.
const TRACE_METHOD: &str = "opentelemetry.proto.collector.trace.v1.TraceService/Export";
const METRICS_METHOD: &str = "opentelemetry.proto.collector.metrics.v1.MetricsService/Export";

/// One collector connection.
pub struct Transport {
    client: reqwest::Client,
    protocol: Protocol,
    headers: HeaderMap,
    traces: String,
    metrics: String,
}

impl Transport {
    /// A client for `config`'s endpoints (HTTP/2 with prior knowledge for gRPC).
    pub fn new(config: &TelemetryConfig) -> Result<Transport, String> {
        let mut headers = HeaderMap::new();
        for (k, v) in &config.headers {
            let name = HeaderName::from_bytes(k.as_bytes())
                .map_err(|_| format!("OTEL_EXPORTER_OTLP_HEADERS: '{k}' is not a header name"))?;
            let mut value = HeaderValue::from_str(v).map_err(|_| {
                format!("OTEL_EXPORTER_OTLP_HEADERS: the value of '{k}' is not a header value")
            })?;
            value.set_sensitive(true);
            headers.insert(name, value);
        }
        let mut b = reqwest::Client::builder()
            .timeout(config.timeout)
            .tls_certs_only(crate::web_fetch::bundled_roots())
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("skillbase/", env!("CARGO_PKG_VERSION")));
        if config.protocol == Protocol::Grpc {
            b = b.http2_prior_knowledge();
        }
        let client = b
            .build()
            .map_err(|e| format!("[telemetry]: the HTTP client could not start: {e}"))?;
        let method_url =
            |base: &str, method: &str| format!("{}/{method}", base.trim_end_matches('/'));
        let (traces, metrics) = match config.protocol {
            Protocol::HttpProtobuf => (
                config.traces_endpoint.clone(),
                config.metrics_endpoint.clone(),
            ),
            Protocol::Grpc => (
                method_url(&config.traces_endpoint, TRACE_METHOD),
                method_url(&config.metrics_endpoint, METRICS_METHOD),
            ),
        };
        Ok(Transport {
            client,
            protocol: config.protocol,
            headers,
            traces,
            metrics,
        })
    }

    /// Send a batch of spans; the number the collector rejected (partial success).
    pub async fn spans(&self, req: &proto::ExportTraceServiceRequest) -> Result<i64, String> {
        self.send(&self.traces, req.encode_to_vec()).await
    }

    /// Send the metrics; the number of points the collector rejected.
    pub async fn metrics(&self, req: &proto::ExportMetricsServiceRequest) -> Result<i64, String> {
        self.send(&self.metrics, req.encode_to_vec()).await
    }

    async fn send(&self, url: &str, body: Vec<u8>) -> Result<i64, String> {
        let (content_type, body) = match self.protocol {
            Protocol::HttpProtobuf => ("application/x-protobuf", body),
            Protocol::Grpc => ("application/grpc", grpc_frame(&body)),
        };
        let mut req = self
            .client
            .post(url)
            .headers(self.headers.clone())
            .header(CONTENT_TYPE, content_type)
            .body(body);
        if self.protocol == Protocol::Grpc {
            req = req.header("te", "trailers");
        }
        // The error's text names the URL and the kind of failure, never a header.
        let resp = req.send().await.map_err(|e| e.without_url().to_string())?;
        let status = resp.status();
        if self.protocol == Protocol::Grpc
            && let Some(code) = resp.headers().get("grpc-status")
            && code.as_bytes() != b"0"
        {
            let message = resp
                .headers()
                .get("grpc-message")
                .and_then(|m| m.to_str().ok())
                .unwrap_or("")
                .chars()
                .take(200)
                .collect::<String>();
            return Err(format!(
                "gRPC status {}: {message}",
                String::from_utf8_lossy(code.as_bytes())
            ));
        }
        if !status.is_success() {
            return Err(format!("HTTP {status}"));
        }
        let bytes = resp
            .bytes()
            .await
            .map_err(|e| e.without_url().to_string())?;
        let payload = match self.protocol {
            Protocol::HttpProtobuf => &bytes[..],
            Protocol::Grpc => bytes.get(5..).unwrap_or(&[]),
        };
        Ok(proto::ExportResponse::decode(payload)
            .ok()
            .and_then(|r| r.partial_success)
            .map_or(0, |p| p.rejected.max(0)))
    }
}

/// A gRPC message frame: not compressed, the length, the message.
fn grpc_frame(msg: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(msg.len() + 5);
    out.push(0);
    out.extend_from_slice(&u32::try_from(msg.len()).unwrap_or(u32::MAX).to_be_bytes());
    out.extend_from_slice(msg);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grpc_frame_is_flag_length_message() {
        assert_eq!(grpc_frame(b"abc"), vec![0, 0, 0, 0, 3, b'a', b'b', b'c']);
    }

    #[test]
    fn grpc_posts_to_the_service_methods() {
        let c = TelemetryConfig::resolve(
            Some(
                &"enabled = true\nprotocol = \"grpc\"\nendpoint = \"http://127.0.0.1:4317/\""
                    .parse()
                    .unwrap(),
            ),
            &|_| None,
        )
        .unwrap()
        .unwrap();
        let t = Transport::new(&c).unwrap();
        assert_eq!(
            t.traces,
            "http://127.0.0.1:4317/opentelemetry.proto.collector.trace.v1.TraceService/Export"
        );
        assert!(t.metrics.ends_with("MetricsService/Export"));
    }
}
