//! The OTLP messages Skillbase sends, as protobuf: the parts of
//! `opentelemetry/proto/{collector,trace,metrics,common,resource}/v1/*.proto` (v1.x) it fills,
//! with the field numbers of those files. Fields it never sets are left out; a receiver reads
//! them as their defaults. The end-to-end test decodes what is sent with the official Python
//! definitions (PyPI `opentelemetry-proto`), so a wrong number here fails it.

#![allow(missing_docs)] // each field is the `.proto` field of the same name

/// `collector/trace/v1`: `ExportTraceServiceRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ExportTraceServiceRequest {
    #[prost(message, repeated, tag = "1")]
    pub resource_spans: Vec<ResourceSpans>,
}

/// `collector/metrics/v1`: `ExportMetricsServiceRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ExportMetricsServiceRequest {
    #[prost(message, repeated, tag = "1")]
    pub resource_metrics: Vec<ResourceMetrics>,
}

/// `collector/*/v1`: the export answers; only `partial_success` is read.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ExportResponse {
    #[prost(message, optional, tag = "1")]
    pub partial_success: Option<PartialSuccess>,
}

/// `ExportTracePartialSuccess` / `ExportMetricsPartialSuccess` (same shape).
#[derive(Clone, PartialEq, prost::Message)]
pub struct PartialSuccess {
    #[prost(int64, tag = "1")]
    pub rejected: i64,
    #[prost(string, tag = "2")]
    pub error_message: String,
}

/// `resource/v1`: `Resource`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Resource {
    #[prost(message, repeated, tag = "1")]
    pub attributes: Vec<KeyValue>,
}

/// `common/v1`: `InstrumentationScope`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct InstrumentationScope {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub version: String,
}

/// `common/v1`: `KeyValue`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct KeyValue {
    #[prost(string, tag = "1")]
    pub key: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<AnyValue>,
}

/// `common/v1`: `AnyValue`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct AnyValue {
    #[prost(oneof = "Value", tags = "1, 2, 3, 4, 5")]
    pub value: Option<Value>,
}

/// `AnyValue.value` (members `string_value`, `bool_value`, ... by tag).
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum Value {
    #[prost(string, tag = "1")]
    String(String),
    #[prost(bool, tag = "2")]
    Bool(bool),
    #[prost(int64, tag = "3")]
    Int(i64),
    #[prost(double, tag = "4")]
    Double(f64),
    #[prost(message, tag = "5")]
    Array(ArrayValue),
}

/// `common/v1`: `ArrayValue`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ArrayValue {
    #[prost(message, repeated, tag = "1")]
    pub values: Vec<AnyValue>,
}

/// `trace/v1`: `ResourceSpans`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ResourceSpans {
    #[prost(message, optional, tag = "1")]
    pub resource: Option<Resource>,
    #[prost(message, repeated, tag = "2")]
    pub scope_spans: Vec<ScopeSpans>,
    #[prost(string, tag = "3")]
    pub schema_url: String,
}

/// `trace/v1`: `ScopeSpans`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ScopeSpans {
    #[prost(message, optional, tag = "1")]
    pub scope: Option<InstrumentationScope>,
    #[prost(message, repeated, tag = "2")]
    pub spans: Vec<Span>,
    #[prost(string, tag = "3")]
    pub schema_url: String,
}

/// `trace/v1`: `Span`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Span {
    #[prost(bytes = "vec", tag = "1")]
    pub trace_id: Vec<u8>,
    #[prost(bytes = "vec", tag = "2")]
    pub span_id: Vec<u8>,
    #[prost(bytes = "vec", tag = "4")]
    pub parent_span_id: Vec<u8>,
    #[prost(string, tag = "5")]
    pub name: String,
    /// `Span.SpanKind`: 1 internal, 2 server, 3 client.
    #[prost(int32, tag = "6")]
    pub kind: i32,
    #[prost(fixed64, tag = "7")]
    pub start_time_unix_nano: u64,
    #[prost(fixed64, tag = "8")]
    pub end_time_unix_nano: u64,
    #[prost(message, repeated, tag = "9")]
    pub attributes: Vec<KeyValue>,
    #[prost(uint32, tag = "10")]
    pub dropped_attributes_count: u32,
    #[prost(message, optional, tag = "15")]
    pub status: Option<Status>,
    /// W3C trace flags: 1 sampled.
    #[prost(fixed32, tag = "16")]
    pub flags: u32,
}

/// `trace/v1`: `Status` (code 0 unset, 1 ok, 2 error).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Status {
    #[prost(string, tag = "2")]
    pub message: String,
    #[prost(int32, tag = "3")]
    pub code: i32,
}

/// `metrics/v1`: `ResourceMetrics`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ResourceMetrics {
    #[prost(message, optional, tag = "1")]
    pub resource: Option<Resource>,
    #[prost(message, repeated, tag = "2")]
    pub scope_metrics: Vec<ScopeMetrics>,
    #[prost(string, tag = "3")]
    pub schema_url: String,
}

/// `metrics/v1`: `ScopeMetrics`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ScopeMetrics {
    #[prost(message, optional, tag = "1")]
    pub scope: Option<InstrumentationScope>,
    #[prost(message, repeated, tag = "2")]
    pub metrics: Vec<Metric>,
    #[prost(string, tag = "3")]
    pub schema_url: String,
}

/// `metrics/v1`: `Metric`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Metric {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub description: String,
    #[prost(string, tag = "3")]
    pub unit: String,
    #[prost(oneof = "Data", tags = "7, 9")]
    pub data: Option<Data>,
}

/// `Metric.data`.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum Data {
    #[prost(message, tag = "7")]
    Sum(Sum),
    #[prost(message, tag = "9")]
    Histogram(Histogram),
}

/// `AggregationTemporality.AGGREGATION_TEMPORALITY_CUMULATIVE`.
pub const CUMULATIVE: i32 = 2;

/// `metrics/v1`: `Sum`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Sum {
    #[prost(message, repeated, tag = "1")]
    pub data_points: Vec<NumberDataPoint>,
    #[prost(int32, tag = "2")]
    pub aggregation_temporality: i32,
    #[prost(bool, tag = "3")]
    pub is_monotonic: bool,
}

/// `metrics/v1`: `NumberDataPoint` (integer values only here).
#[derive(Clone, PartialEq, prost::Message)]
pub struct NumberDataPoint {
    #[prost(fixed64, tag = "2")]
    pub start_time_unix_nano: u64,
    #[prost(fixed64, tag = "3")]
    pub time_unix_nano: u64,
    #[prost(oneof = "NumberValue", tags = "6")]
    pub value: Option<NumberValue>,
    #[prost(message, repeated, tag = "7")]
    pub attributes: Vec<KeyValue>,
}

/// `NumberDataPoint.value` (`as_int`; a zero is still sent, as a oneof's member is).
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum NumberValue {
    #[prost(sfixed64, tag = "6")]
    AsInt(i64),
}

/// `metrics/v1`: `Histogram`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Histogram {
    #[prost(message, repeated, tag = "1")]
    pub data_points: Vec<HistogramDataPoint>,
    #[prost(int32, tag = "2")]
    pub aggregation_temporality: i32,
}

/// `metrics/v1`: `HistogramDataPoint`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct HistogramDataPoint {
    #[prost(fixed64, tag = "2")]
    pub start_time_unix_nano: u64,
    #[prost(fixed64, tag = "3")]
    pub time_unix_nano: u64,
    #[prost(fixed64, tag = "4")]
    pub count: u64,
    #[prost(double, optional, tag = "5")]
    pub sum: Option<f64>,
    #[prost(fixed64, repeated, tag = "6")]
    pub bucket_counts: Vec<u64>,
    #[prost(double, repeated, tag = "7")]
    pub explicit_bounds: Vec<f64>,
    #[prost(message, repeated, tag = "9")]
    pub attributes: Vec<KeyValue>,
}

/// A string attribute.
pub fn kv(key: &str, value: impl Into<String>) -> KeyValue {
    KeyValue {
        key: key.to_owned(),
        value: Some(AnyValue {
            value: Some(Value::String(value.into())),
        }),
    }
}

/// An integer attribute.
pub fn kv_int(key: &str, value: i64) -> KeyValue {
    KeyValue {
        key: key.to_owned(),
        value: Some(AnyValue {
            value: Some(Value::Int(value)),
        }),
    }
}

/// A string-array attribute.
pub fn kv_strings(key: &str, values: Vec<String>) -> KeyValue {
    KeyValue {
        key: key.to_owned(),
        value: Some(AnyValue {
            value: Some(Value::Array(ArrayValue {
                values: values
                    .into_iter()
                    .map(|v| AnyValue {
                        value: Some(Value::String(v)),
                    })
                    .collect(),
            })),
        }),
    }
}
