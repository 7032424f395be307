//! Skill usage: what each appended event adds to the `skill_usage` aggregates (migration 20),
//! and the figures read back from them.
//!
//! The aggregates are written in the transaction that appends their event
//! (`sql::usage::record`), so they stay true when the retention job trims the events. Each row
//! is (skill, agent, revision, day, kind, reason) → count and tokens; the kinds:
//!
//! | kind | from | reason |
//! | --- | --- | --- |
//! | `activated` | `skill_activated` | [`REASONS`], or `other` |
//! | `listed` | `turn` (its catalog) | `full`, `name_only`; on skill `""`: `name_only_unnamed`, `omitted` |
//! | `turn` | `turn`, on skill `""` | `""` (tokens: the turn's total) |
//! | `run` | `run_finished` | the outcome |
//! | `unfollowed` | `run_finished` with `calls: 0` | `""` |
//! | `status` | `disabled` for drift, `drift_reverted` | `drift_disabled`, `drift_reverted` |
//!
//! Where the events do not name a skill the figures are approximate, and [`APPROXIMATE`]
//! says so in every answer: a ranked catalog's name-only entries are recorded by rank only,
//! and no turn names what it left out.

use crate::records::NewEvent;
use serde::Deserialize;
use std::collections::BTreeMap;

/// A day in milliseconds: the aggregates' time unit.
pub const DAY_MS: i64 = 86_400_000;

/// The reasons an activation is counted under (the first word of its reason; anything else is
/// `other`).
pub const REASONS: [&str; 6] = ["eager", "trigger", "path", "explicit", "load", "companion"];

/// What the figures cannot know exactly, said with every answer.
pub const APPROXIMATE: &str = "left_out is the agent's turns less those that placed or listed the skill (turns do \
     not name what they leave out, and a ranked catalog records its name-only entries by rank, \
     so those count as left out); unfollowed counts runs that ended with no call (a run \
     superseded by another skill, or never ended, is not counted); last_used is a day (UTC)";

/// The reason an activation is counted under: `trigger:refund` → `trigger`.
pub fn activation_reason(reason: &str) -> &'static str {
    REASONS
        .iter()
        .find(|r| {
            reason
                .strip_prefix(**r)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with([':', ' ']))
        })
        .copied()
        .unwrap_or("other")
}

/// One row's increment.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Key {
    pub skill: String,
    pub agent: String,
    pub rev: i64,
    pub day: i64,
    pub kind: &'static str,
    pub reason: String,
}

/// The increments of a batch of events, merged by row (a row is written once per batch).
#[derive(Debug, Default)]
pub(crate) struct Deltas {
    pub rows: BTreeMap<Key, (i64, i64)>,
    /// The last day each (skill, agent) was activated.
    pub last_used: BTreeMap<(String, String), i64>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Activated {
    reason: String,
    tokens: i64,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Turn {
    catalog: Catalog,
    tokens: TurnTokens,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct TurnTokens {
    total: i64,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Catalog {
    full: Option<Vec<String>>,
    shown: Vec<Named>,
    name_only: Omissions,
    omitted: Omissions,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Named {
    name: String,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Omissions {
    Summary {
        #[serde(default)]
        count: i64,
        #[serde(default)]
        by_reason: Vec<Group>,
    },
    List(Vec<Named>),
}

impl Default for Omissions {
    fn default() -> Omissions {
        Omissions::List(Vec::new())
    }
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Group {
    count: i64,
    names: Option<Vec<String>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RunFinished {
    outcome: Option<String>,
    calls: Option<i64>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct StatusData {
    reason: Option<serde_json::Value>,
}

fn read<T: for<'de> Deserialize<'de> + Default>(v: &serde_json::Value) -> T {
    T::deserialize(v).unwrap_or_default()
}

impl Deltas {
    fn add(&mut self, key: Key, count: i64, tokens: i64) {
        let e = self.rows.entry(key).or_default();
        e.0 += count;
        e.1 += tokens;
    }

    /// Add what `ev`, appended at `at` (Unix ms), counts.
    pub fn event(&mut self, ev: &NewEvent, at: i64) {
        let day = at.div_euclid(DAY_MS);
        // Copied only for a row (most events, every call's among them, count nothing).
        let agent = ev.agent.as_deref().unwrap_or_default();
        let rev = ev.rev.unwrap_or(0);
        let key = |skill: &str, kind: &'static str, reason: &str| Key {
            skill: skill.to_owned(),
            agent: agent.to_owned(),
            rev,
            day,
            kind,
            reason: reason.to_owned(),
        };
        let skill = ev.skill.as_deref();
        match (ev.kind.as_str(), skill) {
            ("skill_activated", Some(s)) => {
                let a: Activated = read(&ev.data);
                self.add(
                    key(s, "activated", activation_reason(&a.reason)),
                    1,
                    a.tokens,
                );
                let last = self
                    .last_used
                    .entry((s.to_owned(), agent.to_owned()))
                    .or_default();
                *last = (*last).max(day);
            }
            ("turn", _) => self.turn(&read(&ev.data), key("", "turn", "")),
            ("run_finished", Some(s)) => {
                let r: RunFinished = read(&ev.data);
                if let Some(o) = r.outcome {
                    self.add(key(s, "run", &o), 1, 0);
                }
                if r.calls == Some(0) {
                    self.add(key(s, "unfollowed", ""), 1, 0);
                }
            }
            ("drift_reverted", Some(s)) => self.add(key(s, "status", "drift_reverted"), 1, 0),
            ("disabled", Some(s)) => {
                let d: StatusData = read(&ev.data);
                if d.reason
                    .as_ref()
                    .and_then(|r| r.get("drift"))
                    .is_some_and(|d| d.is_string())
                {
                    self.add(key(s, "status", "drift_disabled"), 1, 0);
                }
            }
            _ => {}
        }
    }

    /// A turn: the agent's turn row, each catalog entry listed, what it could not name.
    fn turn(&mut self, t: &Turn, turn: Key) {
        let listed = |skill: &str, reason: &str| Key {
            skill: skill.to_owned(),
            rev: 0,
            kind: "listed",
            reason: reason.to_owned(),
            ..turn.clone()
        };
        self.add(turn.clone(), 1, t.tokens.total);
        let full: Vec<&str> = match &t.catalog.full {
            Some(f) => f.iter().map(String::as_str).collect(),
            None => t.catalog.shown.iter().map(|s| s.name.as_str()).collect(),
        };
        for name in full {
            self.add(listed(name, "full"), 1, 0);
        }
        match &t.catalog.name_only {
            Omissions::List(l) => {
                for n in l {
                    self.add(listed(&n.name, "name_only"), 1, 0);
                }
            }
            Omissions::Summary { by_reason, .. } => {
                for g in by_reason {
                    match &g.names {
                        Some(names) => {
                            for n in names {
                                self.add(listed(n, "name_only"), 1, 0);
                            }
                        }
                        None if g.count > 0 => {
                            self.add(listed("", "name_only_unnamed"), g.count, 0)
                        }
                        None => {}
                    }
                }
            }
        }
        let omitted = match &t.catalog.omitted {
            Omissions::Summary { count, .. } => *count,
            Omissions::List(l) => l.len() as i64,
        };
        if omitted > 0 {
            self.add(listed("", "omitted"), omitted, 0);
        }
    }
}

// ---- Reading ----

/// Activations by reason.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ByReason {
    /// Always in the prompt.
    pub eager: i64,
    /// A trigger phrase fired.
    pub trigger: i64,
    /// A path matched.
    pub path: i64,
    /// Named explicitly.
    pub explicit: i64,
    /// Loaded (`load_skill`, `skill_<name>`, the harness).
    pub load: i64,
    /// A companion of another skill.
    pub companion: i64,
    /// Any other reason.
    pub other: i64,
}

impl ByReason {
    fn add(&mut self, reason: &str, n: i64) {
        let slot = match reason {
            "eager" => &mut self.eager,
            "trigger" => &mut self.trigger,
            "path" => &mut self.path,
            "explicit" => &mut self.explicit,
            "load" => &mut self.load,
            "companion" => &mut self.companion,
            _ => &mut self.other,
        };
        *slot += n;
    }

    /// All activations.
    pub fn total(&self) -> i64 {
        self.eager
            + self.trigger
            + self.path
            + self.explicit
            + self.load
            + self.companion
            + self.other
    }
}

/// Ended runs by outcome.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RunOutcomes {
    /// Ended as a success.
    pub success: i64,
    /// Ended as a failure.
    pub failure: i64,
    /// Ended otherwise.
    pub other: i64,
}

impl RunOutcomes {
    fn add(&mut self, outcome: &str, n: i64) {
        match outcome {
            "success" => self.success += n,
            "failure" => self.failure += n,
            _ => self.other += n,
        }
    }
}

/// How often a skill was in a turn's catalog.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Listing {
    /// Listed in full (name and description).
    pub full: i64,
    /// Listed by name only.
    pub name_only: i64,
    /// Left out (approximate: see `approximate`).
    pub left_out: i64,
}

/// One agent's use of a skill.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AgentUsage {
    /// The agent (`""`: events that name none).
    pub agent: String,
    /// The agent's turns in the window.
    pub turns: i64,
    /// Activations by reason.
    pub activations: ByReason,
    /// Catalog listings.
    pub listed: Listing,
    /// Tokens of the skill's body placed in prompts.
    pub body_tokens: i64,
    /// Ended runs.
    pub runs: RunOutcomes,
    /// Runs that ended with no call.
    pub unfollowed: i64,
    /// The last day activated (`YYYY-MM-DD`).
    pub last_used: Option<String>,
}

/// One revision's runs and outcomes.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RevisionUsage {
    /// The revision.
    pub rev: i64,
    /// Its activations.
    pub activations: i64,
    /// Its ended runs.
    pub runs: RunOutcomes,
    /// Its runs that ended with no call.
    pub unfollowed: i64,
    /// Times drift disabled it.
    pub drift_disabled: i64,
    /// Times drift reverted to it.
    pub drift_reverted: i64,
}

/// Activations of one day.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DayUsage {
    /// The day, `YYYY-MM-DD` (UTC).
    pub day: String,
    /// Activations by reason.
    pub activations: ByReason,
}

/// A skill's usage over a window (`GET /v1/skills/{name}/usage`, `skillbase usage NAME`).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SkillUsage {
    /// The skill.
    pub skill: String,
    /// The window's first day, `YYYY-MM-DD`.
    pub since: String,
    /// Activations by reason, all agents read.
    pub activations: ByReason,
    /// Catalog listings, all agents read.
    pub listed: Listing,
    /// Tokens of its body placed in prompts.
    pub body_tokens: i64,
    /// Ended runs.
    pub runs: RunOutcomes,
    /// Runs that ended with no call: loaded, then nothing it declares was called.
    pub unfollowed: i64,
    /// Times drift disabled a revision.
    pub drift_disabled: i64,
    /// The last day activated.
    pub last_used: Option<String>,
    /// Per agent.
    pub agents: Vec<AgentUsage>,
    /// Per revision, newest first.
    pub revisions: Vec<RevisionUsage>,
    /// Per day with activations, oldest first.
    pub days: Vec<DayUsage>,
    /// What is approximate.
    pub approximate: String,
}

/// One row of `skill_usage` as read: (agent, rev, day, kind, reason, count, tokens).
pub(crate) type UsageRow = (String, i64, i64, String, String, i64, i64);

impl SkillUsage {
    /// Fold a skill's rows and its agents' turn counts (agent, turns) into the answer.
    pub(crate) fn from_rows(
        skill: &str,
        since: i64,
        rows: &[UsageRow],
        turns: &[(String, i64)],
    ) -> SkillUsage {
        let mut u = SkillUsage {
            skill: skill.to_owned(),
            since: day_string(since),
            approximate: APPROXIMATE.to_owned(),
            ..SkillUsage::default()
        };
        let mut agents: BTreeMap<&str, AgentUsage> = BTreeMap::new();
        let mut revs: BTreeMap<i64, RevisionUsage> = BTreeMap::new();
        let mut days: BTreeMap<i64, ByReason> = BTreeMap::new();
        let mut last: Option<i64> = None;
        for (agent, rev, day, kind, reason, count, tokens) in rows {
            let a = agents.entry(agent.as_str()).or_insert_with(|| AgentUsage {
                agent: agent.clone(),
                ..AgentUsage::default()
            });
            let r = || RevisionUsage {
                rev: *rev,
                ..RevisionUsage::default()
            };
            match (kind.as_str(), reason.as_str()) {
                ("activated", _) => {
                    a.activations.add(reason, *count);
                    a.body_tokens += tokens;
                    revs.entry(*rev).or_insert_with(r).activations += count;
                    days.entry(*day).or_default().add(reason, *count);
                    let l = a.last_used_day().max(Some(*day));
                    a.last_used = l.map(day_string);
                    last = last.max(Some(*day));
                }
                ("listed", "full") => a.listed.full += count,
                ("listed", "name_only") => a.listed.name_only += count,
                ("run", o) => {
                    a.runs.add(o, *count);
                    revs.entry(*rev).or_insert_with(r).runs.add(o, *count);
                }
                ("unfollowed", _) => {
                    a.unfollowed += count;
                    revs.entry(*rev).or_insert_with(r).unfollowed += count;
                }
                ("status", "drift_disabled") => {
                    revs.entry(*rev).or_insert_with(r).drift_disabled += count
                }
                ("status", "drift_reverted") => {
                    revs.entry(*rev).or_insert_with(r).drift_reverted += count
                }
                _ => {}
            }
        }
        for a in agents.values_mut() {
            a.turns = turns.iter().find(|(n, _)| *n == a.agent).map_or(0, |t| t.1);
            let in_turn =
                a.activations.total() - a.activations.load + a.listed.full + a.listed.name_only;
            a.listed.left_out = (a.turns - in_turn).max(0);
            u.add_agent(a);
        }
        u.drift_disabled = revs.values().map(|r| r.drift_disabled).sum();
        u.last_used = last.map(day_string);
        u.agents = agents.into_values().filter(|a| !a.is_empty()).collect();
        u.revisions = revs.into_values().rev().filter(|r| r.rev > 0).collect();
        u.days = days
            .into_iter()
            .map(|(d, activations)| DayUsage {
                day: day_string(d),
                activations,
            })
            .collect();
        u
    }

    fn add_agent(&mut self, a: &AgentUsage) {
        let (s, o) = (&mut self.activations, &a.activations);
        s.eager += o.eager;
        s.trigger += o.trigger;
        s.path += o.path;
        s.explicit += o.explicit;
        s.load += o.load;
        s.companion += o.companion;
        s.other += o.other;
        self.listed.full += a.listed.full;
        self.listed.name_only += a.listed.name_only;
        self.listed.left_out += a.listed.left_out;
        self.body_tokens += a.body_tokens;
        self.runs.success += a.runs.success;
        self.runs.failure += a.runs.failure;
        self.runs.other += a.runs.other;
        self.unfollowed += a.unfollowed;
    }
}

impl AgentUsage {
    fn last_used_day(&self) -> Option<i64> {
        self.last_used.as_deref().and_then(parse_day)
    }

    /// Whether nothing was recorded for the skill (a status row alone, say).
    fn is_empty(&self) -> bool {
        self.activations.total() == 0
            && self.listed.full == 0
            && self.listed.name_only == 0
            && self.runs == RunOutcomes::default()
    }
}

/// One skill's figures in the library's summary.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SkillTotals {
    /// The skill.
    pub skill: String,
    /// Activations.
    pub activations: i64,
    /// Tokens of its body placed in prompts.
    pub body_tokens: i64,
    /// Ended runs.
    pub runs: RunOutcomes,
    /// Runs that ended with no call.
    pub unfollowed: i64,
    /// Times drift disabled a revision.
    pub drift_disabled: i64,
}

/// A skill of the library activated by no agent read since the window began.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NeverUsed {
    /// Its scope.
    pub scope: String,
    /// Its name.
    pub name: String,
    /// The last day it was activated, before the window; none if never.
    pub last_used: Option<String>,
}

/// The library's usage over a window (`GET /v1/usage`, `skillbase usage`).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct LibraryUsage {
    /// The window's first day, `YYYY-MM-DD`.
    pub since: String,
    /// The agent read, or all.
    pub agent: Option<String>,
    /// Skills with any figure in the window, most activated first.
    pub skills: Vec<SkillTotals>,
    /// Active skills no agent read activated in the window.
    pub never_used: Vec<NeverUsed>,
}

/// Sum (skill, kind, reason, count, tokens) rows per skill, most activated first.
pub(crate) fn totals(rows: &[(String, String, String, i64, i64)]) -> Vec<SkillTotals> {
    let mut by: BTreeMap<&str, SkillTotals> = BTreeMap::new();
    for (skill, kind, reason, count, tokens) in rows {
        let t = by.entry(skill.as_str()).or_insert_with(|| SkillTotals {
            skill: skill.clone(),
            ..SkillTotals::default()
        });
        match (kind.as_str(), reason.as_str()) {
            ("activated", _) => {
                t.activations += count;
                t.body_tokens += tokens;
            }
            ("run", o) => t.runs.add(o, *count),
            ("unfollowed", _) => t.unfollowed += count,
            ("status", "drift_disabled") => t.drift_disabled += count,
            _ => {}
        }
    }
    let mut v: Vec<SkillTotals> = by.into_values().collect();
    v.sort_by(|a, b| {
        b.activations
            .cmp(&a.activations)
            .then(a.skill.cmp(&b.skill))
    });
    v
}

// ---- Days ----

/// The day (days since 1970-01-01) as `YYYY-MM-DD` (proleptic Gregorian, UTC).
pub fn day_string(day: i64) -> String {
    // Howard Hinnant's civil_from_days.
    let z = day + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

/// `YYYY-MM-DD` as a day number; `None` when it is not a real date.
pub fn parse_day(s: &str) -> Option<i64> {
    let mut it = s.splitn(3, '-');
    let (y, m, d) = (it.next()?, it.next()?, it.next()?);
    if y.len() != 4 || m.len() != 2 || d.len() != 2 {
        return None;
    }
    let (y, m, d): (i64, i64, i64) = (y.parse().ok()?, m.parse().ok()?, d.parse().ok()?);
    if !(1..=12).contains(&m) || d < 1 || d > days_in_month(y, m) {
        return None;
    }
    let y2 = if m <= 2 { y - 1 } else { y };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    Some(era * 146_097 + doe - 719_468)
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// A window's first day from `--since`/`?since=`: a date (`2026-01-31`) or a number of days
/// back from `today` (`30d`). Anything else is refused, saying what is accepted.
pub fn parse_since(s: &str, today: i64) -> Result<i64, String> {
    let s = s.trim();
    let days = s.strip_suffix('d').and_then(|n| n.parse::<u32>().ok());
    if let Some(n) = days {
        if n == 0 || n > 36_600 {
            return Err(format!("since {s:?}: give between 1d and 36600d"));
        }
        return Ok(today - i64::from(n) + 1);
    }
    parse_day(s).ok_or_else(|| {
        format!("since {s:?} is neither a date (YYYY-MM-DD, e.g. 2026-01-31) nor a number of days (e.g. 30d)")
    })
}

/// Today, as a day number (UTC).
pub fn today() -> i64 {
    crate::sql::now_ms().div_euclid(DAY_MS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reasons_are_their_first_word() {
        assert_eq!(activation_reason("eager"), "eager");
        assert_eq!(activation_reason("trigger:refund please"), "trigger");
        assert_eq!(activation_reason("companion:billing"), "companion");
        assert_eq!(activation_reason("companion of billing"), "companion");
        assert_eq!(activation_reason("load"), "load");
        assert_eq!(activation_reason("loaded"), "other");
        assert_eq!(activation_reason(""), "other");
    }

    #[test]
    fn days_round_trip_and_bad_dates_are_refused() {
        assert_eq!(day_string(0), "1970-01-01");
        assert_eq!(parse_day("2024-02-29"), Some(19_782));
        assert_eq!(day_string(19_782), "2024-02-29");
        for d in [-1, 0, 59, 10_000, 20_454, 2_000_000, 2_932_896 - 1] {
            assert_eq!(parse_day(&day_string(d)), Some(d), "{d}");
        }
        for bad in [
            "2023-02-29",
            "2026-13-01",
            "2026-1-01",
            "26-01-01",
            "2026-01-32",
            "x",
            "",
            "2026-01-01-01",
        ] {
            assert_eq!(parse_day(bad), None, "{bad}");
        }
        assert_eq!(parse_since("30d", 100), Ok(71));
        assert_eq!(parse_since("1970-01-11", 100), Ok(10));
        for bad in ["0d", "-3d", "yesterday", "30", "99999999d", "1e3d"] {
            let e = parse_since(bad, 100).unwrap_err();
            assert!(e.contains("since"), "{e}");
        }
    }

    fn event(kind: &str, skill: Option<&str>, data: serde_json::Value) -> NewEvent {
        NewEvent {
            kind: kind.into(),
            skill: skill.map(Into::into),
            rev: skill.map(|_| 2),
            agent: Some("a".into()),
            data,
            ..NewEvent::default()
        }
    }

    #[test]
    fn a_turn_counts_its_catalog_and_what_it_cannot_name() {
        let mut d = Deltas::default();
        let turn = json!({"tokens": {"total": 90}, "catalog": {"full": ["x", "y"],
            "name_only": {"count": 4, "by_reason": [{"reason": "r", "count": 1, "names": ["z"]}, {"reason": "q", "count": 3, "ranks": "4-6"}]},
            "omitted": {"count": 5, "by_reason": []}}});
        d.event(&event("turn", None, turn), 3 * DAY_MS + 5);
        let got: Vec<(String, &str, String, i64, i64)> = d
            .rows
            .iter()
            .map(|(k, v)| (k.skill.clone(), k.kind, k.reason.clone(), v.0, v.1))
            .collect();
        let want = [
            ("", "listed", "name_only_unnamed", 3, 0),
            ("", "listed", "omitted", 5, 0),
            ("", "turn", "", 1, 90),
            ("x", "listed", "full", 1, 0),
            ("y", "listed", "full", 1, 0),
            ("z", "listed", "name_only", 1, 0),
        ];
        let want: Vec<(String, &str, String, i64, i64)> = want
            .iter()
            .map(|w| (w.0.to_owned(), w.1, w.2.to_owned(), w.3, w.4))
            .collect();
        assert_eq!(got, want);
        assert!(d.rows.keys().all(|k| k.day == 3 && k.agent == "a"));
    }

    #[test]
    fn runs_activations_and_drift_count_and_other_data_is_ignored() {
        let mut d = Deltas::default();
        d.event(
            &event(
                "skill_activated",
                Some("s"),
                json!({"reason": "trigger:x", "tokens": 40}),
            ),
            0,
        );
        d.event(
            &event(
                "skill_activated",
                Some("s"),
                json!({"reason": "trigger:y", "tokens": 2}),
            ),
            1,
        );
        d.event(
            &event(
                "run_finished",
                Some("s"),
                json!({"outcome": "failure", "calls": 0}),
            ),
            0,
        );
        d.event(
            &event("run_finished", Some("s"), json!({"outcome": "success"})),
            0,
        );
        d.event(
            &event(
                "disabled",
                Some("s"),
                json!({"reason": {"drift": "3 failed"}}),
            ),
            0,
        );
        d.event(
            &event("disabled", Some("s"), json!({"reason": "by hand"})),
            0,
        );
        d.event(
            &event("skill_activated", Some("s"), json!("not an object")),
            0,
        );
        d.event(
            &event("skill_activated", None, json!({"reason": "eager"})),
            0,
        );
        let get = |kind: &str, reason: &str| {
            d.rows
                .iter()
                .find(|(k, _)| k.kind == kind && k.reason == reason)
                .map(|(_, v)| *v)
        };
        assert_eq!(get("activated", "trigger"), Some((2, 42)));
        assert_eq!(get("activated", "other"), Some((1, 0)));
        assert_eq!(get("run", "failure"), Some((1, 0)));
        assert_eq!(get("run", "success"), Some((1, 0)));
        assert_eq!(get("unfollowed", ""), Some((1, 0)));
        assert_eq!(get("status", "drift_disabled"), Some((1, 0)));
        assert_eq!(d.rows.len(), 6);
        assert_eq!(d.last_used.get(&("s".into(), "a".into())), Some(&0));
    }
}
