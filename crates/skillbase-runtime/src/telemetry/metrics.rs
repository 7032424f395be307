//! Metrics kept in process and exported whole (cumulative) every interval: counters and
//! duration histograms keyed by their attributes. Recording is a map update under a short lock;
//! the number of series is capped, past which a point joins its metric's overflow series
//! (`otel.metric.overflow = true`, the SDKs' convention), so a flood of names cannot grow memory.

use super::proto::{self, KeyValue};
use std::collections::HashMap;

/// Most series across all metrics.
const MAX_SERIES: usize = 10_000;

/// Bucket bounds of the duration histograms, in seconds.
pub const DURATION_BOUNDS: [f64; 15] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// A metric Skillbase sends: name, unit, description, and whether it is a duration histogram.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Instrument {
    /// Turns resolved.
    Turns,
    /// Skills whose bodies reached a prompt, by reason.
    Activations,
    /// Prompt tokens Skillbase placed, by part.
    PromptTokens,
    /// Calls, by outcome.
    Calls,
    /// Revisions written, by operation and outcome.
    Writes,
    /// Requests to upstream MCP servers, by outcome.
    UpstreamRequests,
    /// Spans dropped because the export queue was full.
    DroppedSpans,
    /// How long a turn took to resolve.
    TurnDuration,
    /// How long a call took, through the whole pipeline.
    CallDuration,
    /// How long an upstream MCP request took (the MCP conventions' client metric).
    UpstreamDuration,
}

impl Instrument {
    fn describe(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Instrument::Turns => ("skillbase.turns", "{turn}", "Turns resolved"),
            Instrument::Activations => (
                "skillbase.skill.activations",
                "{activation}",
                "Skill bodies placed in a prompt, by reason",
            ),
            Instrument::PromptTokens => (
                "skillbase.prompt.tokens",
                "{token}",
                "Prompt tokens Skillbase placed, by part",
            ),
            Instrument::Calls => ("skillbase.calls", "{call}", "Tool calls, by outcome"),
            Instrument::Writes => ("skillbase.store.writes", "{write}", "Skill writes"),
            Instrument::UpstreamRequests => (
                "skillbase.upstream.requests",
                "{request}",
                "Requests to upstream MCP servers",
            ),
            Instrument::DroppedSpans => (
                "skillbase.telemetry.dropped_spans",
                "{span}",
                "Spans dropped because the export queue was full",
            ),
            Instrument::TurnDuration => ("skillbase.turn.duration", "s", "Time to resolve a turn"),
            Instrument::CallDuration => ("skillbase.call.duration", "s", "Time of a tool call"),
            Instrument::UpstreamDuration => (
                "mcp.client.operation.duration",
                "s",
                "Time of a request to an upstream MCP server",
            ),
        }
    }

    fn is_histogram(self) -> bool {
        matches!(
            self,
            Instrument::TurnDuration | Instrument::CallDuration | Instrument::UpstreamDuration
        )
    }
}

#[derive(Debug, Clone, Default)]
struct Hist {
    count: u64,
    sum: f64,
    buckets: [u64; DURATION_BOUNDS.len() + 1],
}

/// The series and their values.
#[derive(Debug, Default)]
pub struct Aggregate {
    counters: HashMap<(Instrument, Vec<(String, String)>), i64>,
    histograms: HashMap<(Instrument, Vec<(String, String)>), Hist>,
    /// Since when the cumulative values count (the process's start of export).
    start_nanos: u64,
}

fn overflow() -> Vec<(String, String)> {
    vec![("otel.metric.overflow".into(), "true".into())]
}

impl Aggregate {
    /// Empty, counting from `start_nanos`.
    pub fn new(start_nanos: u64) -> Aggregate {
        Aggregate {
            start_nanos,
            ..Aggregate::default()
        }
    }

    fn series(&self) -> usize {
        self.counters.len() + self.histograms.len()
    }

    /// Add `n` to a counter.
    pub fn add(&mut self, i: Instrument, attrs: &[(&str, &str)], n: i64) {
        let mut key = owned(attrs);
        if !self.counters.contains_key(&(i, key.clone())) && self.series() >= MAX_SERIES {
            key = overflow();
        }
        *self.counters.entry((i, key)).or_insert(0) += n;
    }

    /// Record one duration, in seconds.
    pub fn record(&mut self, i: Instrument, attrs: &[(&str, &str)], seconds: f64) {
        let mut key = owned(attrs);
        if !self.histograms.contains_key(&(i, key.clone())) && self.series() >= MAX_SERIES {
            key = overflow();
        }
        let h = self.histograms.entry((i, key)).or_default();
        let seconds = if seconds.is_finite() && seconds >= 0.0 {
            seconds
        } else {
            0.0
        };
        h.count += 1;
        h.sum += seconds;
        let b = DURATION_BOUNDS
            .iter()
            .position(|&bound| seconds <= bound)
            .unwrap_or(DURATION_BOUNDS.len());
        h.buckets[b] += 1;
    }

    /// The value of a counter series (for tests).
    #[cfg(test)]
    pub fn counter(&self, i: Instrument, attrs: &[(&str, &str)]) -> i64 {
        self.counters.get(&(i, owned(attrs))).copied().unwrap_or(0)
    }

    /// Every metric as OTLP, cumulative, stamped `now_nanos`.
    pub fn to_proto(&self, now_nanos: u64) -> Vec<proto::Metric> {
        let mut by: HashMap<Instrument, proto::Metric> = HashMap::new();
        let metric = |i: Instrument| {
            let (name, unit, description) = i.describe();
            proto::Metric {
                name: name.into(),
                unit: unit.into(),
                description: description.into(),
                data: Some(if i.is_histogram() {
                    proto::Data::Histogram(proto::Histogram {
                        data_points: Vec::new(),
                        aggregation_temporality: proto::CUMULATIVE,
                    })
                } else {
                    proto::Data::Sum(proto::Sum {
                        data_points: Vec::new(),
                        aggregation_temporality: proto::CUMULATIVE,
                        is_monotonic: true,
                    })
                }),
            }
        };
        for ((i, attrs), v) in &self.counters {
            if let Some(proto::Data::Sum(s)) = &mut by.entry(*i).or_insert_with(|| metric(*i)).data
            {
                s.data_points.push(proto::NumberDataPoint {
                    start_time_unix_nano: self.start_nanos,
                    time_unix_nano: now_nanos,
                    value: Some(proto::NumberValue::AsInt(*v)),
                    attributes: kvs(attrs),
                });
            }
        }
        for ((i, attrs), h) in &self.histograms {
            if let Some(proto::Data::Histogram(hist)) =
                &mut by.entry(*i).or_insert_with(|| metric(*i)).data
            {
                hist.data_points.push(proto::HistogramDataPoint {
                    start_time_unix_nano: self.start_nanos,
                    time_unix_nano: now_nanos,
                    count: h.count,
                    sum: Some(h.sum),
                    bucket_counts: h.buckets.to_vec(),
                    explicit_bounds: DURATION_BOUNDS.to_vec(),
                    attributes: kvs(attrs),
                });
            }
        }
        let mut out: Vec<proto::Metric> = by.into_values().collect();
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out
    }
}

fn owned(attrs: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = attrs
        .iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    v.sort();
    v
}

fn kvs(attrs: &[(String, String)]) -> Vec<KeyValue> {
    attrs
        .iter()
        .map(|(k, v)| proto::kv(k, v.as_str()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_and_histograms_aggregate_by_attributes() {
        let mut a = Aggregate::new(1);
        a.add(Instrument::Calls, &[("b", "2"), ("a", "1")], 1);
        a.add(Instrument::Calls, &[("a", "1"), ("b", "2")], 2);
        a.add(Instrument::Calls, &[("a", "1"), ("empty", "")], 5);
        assert_eq!(a.counter(Instrument::Calls, &[("a", "1"), ("b", "2")]), 3);
        assert_eq!(a.counter(Instrument::Calls, &[("a", "1")]), 5);
        a.record(Instrument::CallDuration, &[], 0.003);
        a.record(Instrument::CallDuration, &[], 100.0);
        a.record(Instrument::CallDuration, &[], f64::NAN);
        let m = a.to_proto(2);
        let hist = m
            .iter()
            .find(|m| m.name == "skillbase.call.duration")
            .unwrap();
        let Some(proto::Data::Histogram(h)) = &hist.data else {
            panic!("a histogram")
        };
        let p = &h.data_points[0];
        assert_eq!(p.count, 3);
        assert_eq!(p.bucket_counts.len(), DURATION_BOUNDS.len() + 1);
        assert_eq!(p.bucket_counts[0], 1, "NaN counts as zero");
        assert_eq!(p.bucket_counts[3], 1, "3 ms is in (2.5 ms, 5 ms]");
        assert_eq!(*p.bucket_counts.last().unwrap(), 1, "past the last bound");
        assert_eq!(p.bucket_counts.iter().sum::<u64>(), p.count);
    }

    #[test]
    fn series_past_the_cap_join_the_overflow_series() {
        let mut a = Aggregate::new(0);
        for i in 0..MAX_SERIES + 50 {
            a.add(Instrument::Activations, &[("skill", &i.to_string())], 1);
        }
        assert_eq!(a.series(), MAX_SERIES + 1);
        assert_eq!(
            a.counter(Instrument::Activations, &[("otel.metric.overflow", "true")]),
            50
        );
        a.add(Instrument::Activations, &[("skill", "7")], 1);
        assert_eq!(a.counter(Instrument::Activations, &[("skill", "7")]), 2);
    }
}
