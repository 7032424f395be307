//! Retention: how long call, turn and activation events and ended sessions are kept.
//!
//! ```toml
//! [retention]
//! events_max_age = "30d"     # calls, turns and activations older than this are removed
//! events_max_size = "1GB"    # and the oldest of them while their data exceeds this
//! sessions_max_age = "90d"   # sessions with no activity for this long are removed
//! interval = "1h"            # how often `skillbase serve` applies the policy (default 1h)
//! ```
//!
//! Everything else is kept for ever: revisions, authoring, status, agent, vault, token and seed
//! events, run endings ([`EventKind::TRIMMABLE`](crate::EventKind::TRIMMABLE) is the one list).
//! The job ([`Store::apply_retention`](crate::Store::apply_retention)) removes in one
//! transaction and records what it removed as an `events_trimmed` event in the same one.

use crate::error::{Result, StoreError};
use serde::Serialize;
use std::time::Duration;

/// A retention policy: each limit is optional; none set keeps everything.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RetentionPolicy {
    /// Calls, turns and activations older than this are removed.
    #[serde(skip_serializing_if = "Option::is_none", with = "opt_ms")]
    pub events_max_age: Option<Duration>,
    /// The oldest calls, turns and activations are removed while the data of those kept
    /// exceeds this many bytes (the JSON of each event's data, counted in characters).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub events_max_size: Option<u64>,
    /// Sessions whose last activity (the session, its activations, its events) is older than
    /// this are removed with their activations and note.
    #[serde(skip_serializing_if = "Option::is_none", with = "opt_ms")]
    pub sessions_max_age: Option<Duration>,
    /// How often a server applies the policy.
    #[serde(skip)]
    pub interval: Duration,
}

mod opt_ms {
    pub fn serialize<S: serde::Serializer>(
        d: &Option<std::time::Duration>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_u64(d.as_millis() as u64),
            None => s.serialize_none(),
        }
    }
}

/// The default interval between two applications by a server.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(3600);
/// The shortest age limit: a policy must not remove what a running turn or call just wrote.
pub const MIN_AGE: Duration = Duration::from_secs(60);
/// The shortest interval a server applies the policy at.
pub const MIN_INTERVAL: Duration = Duration::from_secs(10);

impl RetentionPolicy {
    /// Read the `[retention]` table; errors name `origin`, the key and what is accepted.
    pub fn from_table(t: &toml::Table, origin: &str) -> Result<RetentionPolicy> {
        let bad = |key: &str, why: String| {
            StoreError::Invalid(format!("{origin}: [retention] {key}: {why}"))
        };
        for key in t.keys() {
            if ![
                "events_max_age",
                "events_max_size",
                "sessions_max_age",
                "interval",
            ]
            .contains(&key.as_str())
            {
                return Err(bad(
                    key,
                    "unknown key; expected events_max_age, events_max_size, sessions_max_age or interval".into(),
                ));
            }
        }
        let text = |key: &str| -> Result<Option<String>> {
            match t.get(key) {
                None => Ok(None),
                Some(toml::Value::String(s)) => Ok(Some(s.clone())),
                Some(toml::Value::Integer(i)) if key == "events_max_size" => {
                    Ok(Some(i.to_string()))
                }
                Some(_) => Err(bad(
                    key,
                    "expected a string such as \"30d\" or \"1GB\"".into(),
                )),
            }
        };
        let age = |key: &str, min: Duration| -> Result<Option<Duration>> {
            let Some(s) = text(key)? else { return Ok(None) };
            let d = parse_duration(&s).map_err(|e| bad(key, e))?;
            if d < min {
                return Err(bad(
                    key,
                    format!("{s} is shorter than the minimum {}s", min.as_secs()),
                ));
            }
            Ok(Some(d))
        };
        let events_max_size = match text("events_max_size")? {
            None => None,
            Some(s) => {
                let n = parse_size(&s).map_err(|e| bad("events_max_size", e))?;
                if n == 0 {
                    return Err(bad("events_max_size", "must be more than 0".into()));
                }
                Some(n)
            }
        };
        Ok(RetentionPolicy {
            events_max_age: age("events_max_age", MIN_AGE)?,
            events_max_size,
            sessions_max_age: age("sessions_max_age", MIN_AGE)?,
            interval: age("interval", MIN_INTERVAL)?.unwrap_or(DEFAULT_INTERVAL),
        })
    }

    /// Whether the policy removes anything at all.
    pub fn is_empty(&self) -> bool {
        self.events_max_age.is_none()
            && self.events_max_size.is_none()
            && self.sessions_max_age.is_none()
    }
}

/// `90s`, `15m`, `12h`, `30d`, `2w` (a whole number and one unit).
pub fn parse_duration(s: &str) -> std::result::Result<Duration, String> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (n, unit) = s.split_at(split);
    let n: u64 = n.parse().map_err(|_| {
        format!("'{s}' is not a duration; write a number and s, m, h, d or w, as \"30d\"")
    })?;
    let secs = match unit.trim() {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        "w" => 604_800,
        _ => {
            return Err(format!(
                "'{s}' is not a duration; write a number and s, m, h, d or w, as \"30d\""
            ));
        }
    };
    n.checked_mul(secs)
        .filter(|&t| t <= 100 * 365 * 86_400)
        .map(Duration::from_secs)
        .ok_or_else(|| format!("'{s}' is longer than 100 years"))
}

/// `500000`, `512KB`, `200MB`, `2GB` (decimal units: 1 KB = 1,000 bytes).
pub fn parse_size(s: &str) -> std::result::Result<u64, String> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (n, unit) = s.split_at(split);
    let n: u64 = n.parse().map_err(|_| {
        format!("'{s}' is not a size; write bytes or a number and KB, MB or GB, as \"1GB\"")
    })?;
    let mult = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 1,
        "KB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        _ => {
            return Err(format!(
                "'{s}' is not a size; write bytes or a number and KB, MB or GB, as \"1GB\""
            ));
        }
    };
    n.checked_mul(mult)
        .ok_or_else(|| format!("'{s}' is too large"))
}

/// What one application of the policy removed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RetentionReport {
    /// Events removed, by kind (kinds in name order).
    pub events: std::collections::BTreeMap<String, u64>,
    /// Sessions removed (with their activations and notes).
    pub sessions: u64,
    /// Activations removed with those sessions.
    pub activations: u64,
    /// The `(agent, id)` of each session removed (so a server drops them from its caches).
    #[serde(skip)]
    pub session_ids: Vec<(String, String)>,
}

impl RetentionReport {
    /// Events removed, all kinds together.
    pub fn events_total(&self) -> u64 {
        self.events.values().sum()
    }

    /// Whether nothing was removed.
    pub fn is_empty(&self) -> bool {
        self.events_total() == 0 && self.sessions == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<RetentionPolicy> {
        let t: toml::Table = toml::from_str(text).unwrap();
        RetentionPolicy::from_table(&t, "skillbase.toml")
    }

    #[test]
    fn reads_ages_sizes_and_the_interval() {
        let p = parse(
            "events_max_age = \"30d\"\nevents_max_size = \"2GB\"\nsessions_max_age = \"12h\"\ninterval = \"15m\"\n",
        )
        .unwrap();
        assert_eq!(p.events_max_age, Some(Duration::from_secs(30 * 86_400)));
        assert_eq!(p.events_max_size, Some(2_000_000_000));
        assert_eq!(p.sessions_max_age, Some(Duration::from_secs(12 * 3600)));
        assert_eq!(p.interval, Duration::from_secs(900));
        let p = parse("events_max_size = 5000\n").unwrap();
        assert_eq!(p.events_max_size, Some(5000));
        assert_eq!(p.interval, DEFAULT_INTERVAL);
        assert!(parse("").unwrap().is_empty());
    }

    #[test]
    fn bad_values_name_the_key_and_what_is_accepted() {
        for (text, want) in [
            (
                "events_max_age = \"ten days\"\n",
                "events_max_age: 'ten days' is not a duration",
            ),
            ("events_max_age = \"30y\"\n", "not a duration"),
            ("events_max_age = 30\n", "expected a string"),
            ("events_max_age = \"5s\"\n", "shorter than the minimum 60s"),
            (
                "sessions_max_age = \"-3d\"\n",
                "sessions_max_age: '-3d' is not a duration",
            ),
            (
                "events_max_size = \"1TB\"\n",
                "events_max_size: '1TB' is not a size",
            ),
            ("events_max_size = \"0\"\n", "must be more than 0"),
            ("events_max_size = -1\n", "not a size"),
            (
                "interval = \"1s\"\n",
                "interval: 1s is shorter than the minimum 10s",
            ),
            (
                "events_max_age = \"99999999999d\"\n",
                "longer than 100 years",
            ),
            ("max_age = \"30d\"\n", "max_age: unknown key"),
        ] {
            let e = parse(text).unwrap_err().to_string();
            assert!(e.contains("skillbase.toml: [retention] "), "{e}");
            assert!(e.contains(want), "{text}: {e}");
        }
    }
}
