//! Routing evaluation: does the right skill reach the model?
//!
//! Each case is a user message and the skill expected for it (or none). A case is run through
//! the real turn path — [`crate::turn::resolve`] on the agent's own view, under its budgets — and
//! through the ranking the catalog and `search_skills` use, so what is measured is what the model
//! would have been shown, never a copy of the logic. Nothing is written: no session, no event.
//!
//! Per case: the **routing order** is the skills a trigger injected (in the turn's order), then
//! every other skill by lexical relevance (the catalog's order when it overflows); `recall@k` is
//! whether the expected skill is among its first `k`. **Visible** means the expected skill was
//! injected or listed in full in the catalog under the agent's real budget. A **false trigger**
//! is a skill a trigger injected that is not the expected one (for a case expecting none, any).

use crate::turn::{TurnOptions, resolve};
use crate::view::AgentView;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Most cases one evaluation reads.
pub const MAX_CASES: usize = 100_000;
/// Longest line of a cases file, in bytes.
pub const MAX_LINE_BYTES: usize = 1024 * 1024;

/// One labelled message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvalCase {
    /// The user's message, as the agent would receive it.
    pub message: String,
    /// The skill that should reach the model, or `None` when no skill covers the message.
    pub expected: Option<String>,
    /// What kind of case it is (`direct`, `paraphrase`, `trigger`, `lookalike`, …), for the
    /// per-kind figures.
    #[serde(default)]
    pub kind: Option<String>,
    /// The message's language (`en`, `es`, …), for the per-language figures.
    #[serde(default)]
    pub lang: Option<String>,
}

/// Why a cases file was refused (nothing was evaluated).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum EvalError {
    /// A line is not a case object.
    #[error(
        "line {line}: {problem}; each line is a JSON object with \"message\" and \"expected\" (a skill name or null), optionally \"kind\" and \"lang\""
    )]
    BadLine {
        /// The 1-based line number.
        line: usize,
        /// What is wrong with it.
        problem: String,
    },
    /// A line is longer than [`MAX_LINE_BYTES`].
    #[error("line {0} is longer than {MAX_LINE_BYTES} bytes; shorten the message")]
    LineTooLong(usize),
    /// More than [`MAX_CASES`] cases.
    #[error("more than {MAX_CASES} cases; split the file")]
    TooMany,
    /// No case at all.
    #[error("no cases: the file has no non-empty line")]
    Empty,
}

/// Read a JSON Lines file of cases (blank lines are skipped).
pub fn parse_cases(text: &str) -> Result<Vec<EvalCase>, EvalError> {
    let mut cases = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line_no = i + 1;
        if line.len() > MAX_LINE_BYTES {
            return Err(EvalError::LineTooLong(line_no));
        }
        if line.trim().is_empty() {
            continue;
        }
        if cases.len() == MAX_CASES {
            return Err(EvalError::TooMany);
        }
        let bad = |problem: String| EvalError::BadLine {
            line: line_no,
            problem,
        };
        let value: serde_json::Value =
            serde_json::from_str(line).map_err(|e| bad(e.to_string()))?;
        // `expected` must be there, null included: a forgotten label is not "no skill".
        if value.get("expected").is_none() {
            return Err(bad("missing field `expected`".into()));
        }
        let case: EvalCase = serde_json::from_value(value).map_err(|e| bad(e.to_string()))?;
        cases.push(case);
    }
    if cases.is_empty() {
        return Err(EvalError::Empty);
    }
    Ok(cases)
}

/// The figures of a group of cases.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Metrics {
    /// Cases in the group.
    pub cases: usize,
    /// Of those, the ones expecting a skill (the denominator of recall and visibility).
    pub labelled: usize,
    /// Share of labelled cases whose skill is first in the routing order.
    pub recall_at_1: f64,
    /// Share of labelled cases whose skill is among the first five.
    pub recall_at_5: f64,
    /// Share of labelled cases whose skill is among the first ten.
    pub recall_at_10: f64,
    /// Share of labelled cases whose skill was injected or listed in full.
    pub visible: f64,
    /// Skills injected by a trigger that were not the expected one, summed over the cases.
    pub false_triggers: usize,
}

#[derive(Default, Clone)]
struct Tally {
    cases: usize,
    labelled: usize,
    at1: usize,
    at5: usize,
    at10: usize,
    visible: usize,
    false_triggers: usize,
}

impl Tally {
    fn add(&mut self, o: &CaseOutcome) {
        self.cases += 1;
        self.false_triggers += o.false_triggers.len();
        if o.expected.is_none() {
            return;
        }
        self.labelled += 1;
        let rank = o.rank.unwrap_or(usize::MAX);
        self.at1 += usize::from(rank <= 1);
        self.at5 += usize::from(rank <= 5);
        self.at10 += usize::from(rank <= 10);
        self.visible += usize::from(o.visible);
    }

    fn metrics(&self) -> Metrics {
        let share = |n: usize| {
            if self.labelled == 0 {
                0.0
            } else {
                n as f64 / self.labelled as f64
            }
        };
        Metrics {
            cases: self.cases,
            labelled: self.labelled,
            recall_at_1: share(self.at1),
            recall_at_5: share(self.at5),
            recall_at_10: share(self.at10),
            visible: share(self.visible),
            false_triggers: self.false_triggers,
        }
    }
}

/// What one case came to.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CaseOutcome {
    /// The case's line among the non-empty lines, 1-based.
    pub case: usize,
    /// The expected skill.
    pub expected: Option<String>,
    /// The expected skill's 1-based position in the routing order (`None`: not ranked at all,
    /// or not a skill this agent sees).
    pub rank: Option<usize>,
    /// The first skill of the routing order.
    pub first: Option<String>,
    /// Whether the expected skill was injected or listed in full.
    pub visible: bool,
    /// Skills a trigger injected that were not expected, with the phrase that fired.
    pub false_triggers: Vec<(String, String)>,
}

/// Two skills one mistaken for the other, and how often.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Confusion {
    /// The skill that was expected.
    pub expected: String,
    /// The skill that came first instead.
    pub got: String,
    /// In how many cases.
    pub count: usize,
}

/// A trigger phrase that fired on messages labelled for another skill (or for none).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StrayTrigger {
    /// The skill whose trigger fired.
    pub skill: String,
    /// The phrase.
    pub phrase: String,
    /// In how many cases.
    pub count: usize,
}

/// The whole evaluation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvalReport {
    /// The agent evaluated.
    pub agent: String,
    /// Skills the agent sees.
    pub skills: usize,
    /// Every case together.
    pub overall: Metrics,
    /// By case kind.
    pub by_kind: BTreeMap<String, Metrics>,
    /// By language.
    pub by_lang: BTreeMap<String, Metrics>,
    /// By expected skill.
    pub by_skill: BTreeMap<String, Metrics>,
    /// Expected skills the agent does not see (their cases count as misses).
    pub unknown_expected: Vec<String>,
    /// The most frequent (expected, first) pairs among the misses at 1, most frequent first.
    pub confused: Vec<Confusion>,
    /// Trigger phrases that fired on other skills' messages, most frequent first.
    pub stray_triggers: Vec<StrayTrigger>,
    /// Every case's outcome, in order.
    pub outcomes: Vec<CaseOutcome>,
}

/// Evaluate `cases` against an agent's view under `opts` (the agent's budgets unless
/// overridden).
pub fn evaluate(view: &AgentView, cases: &[EvalCase], opts: &TurnOptions) -> EvalReport {
    let mut overall = Tally::default();
    let mut by_kind: BTreeMap<String, Tally> = BTreeMap::new();
    let mut by_lang: BTreeMap<String, Tally> = BTreeMap::new();
    let mut by_skill: BTreeMap<String, Tally> = BTreeMap::new();
    let mut confused: BTreeMap<(String, String), usize> = BTreeMap::new();
    let mut stray: BTreeMap<(String, String), usize> = BTreeMap::new();
    let mut unknown: Vec<String> = Vec::new();
    let mut outcomes = Vec::with_capacity(cases.len());
    for (n, case) in cases.iter().enumerate() {
        let o = run_case(view, n + 1, case, opts);
        if let Some(e) = &case.expected
            && view.get(e).is_none()
            && !unknown.contains(e)
        {
            unknown.push(e.clone());
        }
        overall.add(&o);
        by_kind
            .entry(case.kind.clone().unwrap_or_else(|| "unlabelled".into()))
            .or_default()
            .add(&o);
        by_lang
            .entry(case.lang.clone().unwrap_or_else(|| "unknown".into()))
            .or_default()
            .add(&o);
        if let Some(e) = &case.expected {
            by_skill.entry(e.clone()).or_default().add(&o);
            if o.rank != Some(1)
                && let Some(first) = &o.first
            {
                *confused.entry((e.clone(), first.clone())).or_default() += 1;
            }
        }
        for (skill, phrase) in &o.false_triggers {
            *stray.entry((skill.clone(), phrase.clone())).or_default() += 1;
        }
        outcomes.push(o);
    }
    let mut confused: Vec<Confusion> = confused
        .into_iter()
        .map(|((expected, got), count)| Confusion {
            expected,
            got,
            count,
        })
        .collect();
    confused.sort_by_key(|c| std::cmp::Reverse(c.count));
    confused.truncate(20);
    let mut stray: Vec<StrayTrigger> = stray
        .into_iter()
        .map(|((skill, phrase), count)| StrayTrigger {
            skill,
            phrase,
            count,
        })
        .collect();
    stray.sort_by_key(|t| std::cmp::Reverse(t.count));
    unknown.sort();
    let done = |m: BTreeMap<String, Tally>| m.into_iter().map(|(k, t)| (k, t.metrics())).collect();
    EvalReport {
        agent: view.agent.name.to_string(),
        skills: view.skills.len(),
        overall: overall.metrics(),
        by_kind: done(by_kind),
        by_lang: done(by_lang),
        by_skill: done(by_skill),
        unknown_expected: unknown,
        confused,
        stray_triggers: stray,
        outcomes,
    }
}

/// One case through the turn and the ranking.
fn run_case(view: &AgentView, n: usize, case: &EvalCase, opts: &TurnOptions) -> CaseOutcome {
    let ctx = resolve(view, &case.message, opts);
    let report = &ctx.report;
    // The routing order: injected by a trigger first (in the turn's order), then by relevance.
    let mut order: Vec<&str> = Vec::new();
    let mut false_triggers = Vec::new();
    for a in &report.activated {
        if let Some(phrase) = a.reason.strip_prefix("trigger:") {
            order.push(&a.name);
            if case.expected.as_deref() != Some(a.name.as_str()) {
                false_triggers.push((a.name.clone(), phrase.to_owned()));
            }
        } else if a.reason.starts_with("companion:") && !order.contains(&a.name.as_str()) {
            order.push(&a.name);
        }
    }
    for (i, score) in view.bm25.rank(&case.message) {
        if score <= 0.0 {
            break;
        }
        let name = view.skills[i as usize].name();
        if !order.contains(&name) && !view.is_eager(i as usize) {
            order.push(name);
        }
    }
    let expected = case.expected.as_deref();
    let rank = expected.and_then(|e| order.iter().position(|s| *s == e).map(|p| p + 1));
    let visible = expected.is_some_and(|e| {
        report.activated.iter().any(|a| a.name == e) || report.catalog.full.iter().any(|f| f == e)
    });
    CaseOutcome {
        case: n,
        expected: case.expected.clone(),
        rank,
        first: order.first().map(|s| (*s).to_owned()),
        visible,
        false_triggers,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cases_files_are_read_or_refused_with_the_line() {
        let ok = parse_cases(
            "{\"message\": \"refund please\", \"expected\": \"refund\", \"kind\": \"direct\"}\n\n{\"message\": \"hi\", \"expected\": null}\n",
        )
        .unwrap();
        assert_eq!(ok.len(), 2);
        assert_eq!(ok[1].expected, None);
        for (text, want) in [
            ("", "no cases"),
            ("\n  \n", "no cases"),
            ("{\"message\": \"x\"}\n", "line 1"),
            (
                "{\"message\": \"x\", \"expected\": null}\nnot json",
                "line 2",
            ),
            (
                "{\"message\": \"x\", \"expected\": null, \"extra\": 1}",
                "unknown field",
            ),
            ("[1, 2]", "line 1"),
        ] {
            let e = parse_cases(text).unwrap_err().to_string();
            assert!(e.contains(want), "{text:?}: {e}");
        }
        let long = format!(
            "{{\"message\": \"{}\", \"expected\": null}}",
            "x".repeat(MAX_LINE_BYTES)
        );
        assert_eq!(parse_cases(&long), Err(EvalError::LineTooLong(1)));
    }
}
