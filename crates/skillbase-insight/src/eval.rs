//! Routing evaluation: does the right skill reach the model?
//!
//! Each case is a user message and the skill expected for it (or none). A case is run through
//! the real turn path — [`skillbase_runtime::resolve`] on the agent's own view, under its
//! budgets — and through the ranking the catalog and `search_skills` use, so what is measured is
//! what the model would have been shown, never a copy of the logic. Nothing is written: no
//! session, no event.
//!
//! Per case: the **routing order** is the skills a trigger injected (in the turn's order), then
//! every other skill by lexical relevance (the catalog's order when it overflows); `recall@k` is
//! whether the expected skill is among its first `k`. **Visible** means the expected skill was
//! injected or listed in full in the catalog under the agent's real budget. A **false trigger**
//! is a skill a trigger injected that is not the expected one (for a case expecting none, any).
//!
//! **Graded** tasks ([`parse_graded`], [`evaluate_graded`]) read SkillRouter's benchmark format
//! (`tasks.jsonl`, `relevance.json`, an id → skill map) and score the same routing order with
//! its metrics: hit@1, recall@5/10/20 over the task's relevant skills, graded nDCG@10, and the
//! share of the relevant skills visible in the turn.
//!
//! A long evaluation can be watched and stopped from another thread: [`evaluate_observed`]
//! counts the cases done in a [`Progress`] (the studio's progress bar reads it).

use crate::calibration::{CalibrationReport, Scored};
use serde::{Deserialize, Serialize};
use skillbase_route::confidence::FitCase;
use skillbase_route::fusion::{Relevance, SemanticQuery};
use skillbase_runtime::{AgentView, QueryVectors, TurnOptions, TurnReport, resolve_with};
use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Most cases one evaluation reads.
pub const MAX_CASES: usize = 100_000;
/// Longest line of a cases file, in bytes.
pub const MAX_LINE_BYTES: usize = 1024 * 1024;

/// One labelled message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct EvalCase {
    /// The user's message, as the agent would receive it.
    pub message: String,
    /// The skill that should reach the model, or `None` when no skill covers the message.
    #[cfg_attr(feature = "openapi", schema(required = true))]
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
    /// A line of a graded tasks file is not a task object.
    #[error(
        "tasks line {line}: {problem}; each line is a JSON object with \"task_id\" and \"instruction_text\" (strings)"
    )]
    BadTask {
        /// The 1-based line number.
        line: usize,
        /// What is wrong with it.
        problem: String,
    },
    /// One task's relevance labels are malformed.
    #[error(
        "relevance of task {task:?}: {problem}; each task's labels are {{\"gt_skill_ids\": [ids], \"core_gt_ids\"?: [ids], \"relevance\": {{id: grade}}, \"task_type\"?: string}}"
    )]
    BadLabels {
        /// The task's id (at most 120 characters of it).
        task: String,
        /// What is wrong with them.
        problem: String,
    },
    /// A whole document (the relevance labels, the id map) is unreadable.
    #[error("{what}: {problem}")]
    BadDocument {
        /// Which document.
        what: &'static str,
        /// What is wrong with it.
        problem: String,
    },
    /// A document is longer than [`MAX_DOCUMENT_BYTES`].
    #[error("{0}: longer than {MAX_DOCUMENT_BYTES} bytes")]
    DocumentTooLarge(&'static str),
    /// No task of the tasks file has relevance labels.
    #[error(
        "no task of the tasks file has labels in the relevance file (do their task ids match?)"
    )]
    NoLabelledTask,
    /// `--explain` names a skill the agent does not see.
    #[error("{0}")]
    Explain(String),
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
    /// The ranking's calibrated confidence in `first` (0 to 1; 0 when nothing was ranked):
    /// how likely it is the skill the message asks for ([`skillbase_route::confidence`]).
    pub confidence: f64,
    /// What `skillbase eval --fit-confidence` fits the confidence's constants on.
    #[serde(skip)]
    pub fit: skillbase_route::confidence::FitCase,
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
    /// How well the first skill's confidence is calibrated over every case.
    pub calibration: CalibrationReport,
    /// Every case's outcome, in order.
    pub outcomes: Vec<CaseOutcome>,
}

/// Evaluate `cases` against an agent's view under `opts` (the agent's budgets unless
/// overridden), with the lexical ranking alone.
pub fn evaluate(view: &AgentView, cases: &[EvalCase], opts: &TurnOptions) -> EvalReport {
    evaluate_with(view, cases, opts, None)
}

/// [`evaluate`], with the semantic stage when `vectors` holds the cases' vectors.
pub fn evaluate_with(
    view: &AgentView,
    cases: &[EvalCase],
    opts: &TurnOptions,
    vectors: Option<&QueryVectors>,
) -> EvalReport {
    evaluate_observed(view, cases, opts, vectors, &Progress::default())
        .expect("an evaluation nobody can stop runs to its end")
}

/// How far a running evaluation has come, shared with the thread that runs it: the cases done
/// so far, and a request to stop.
#[derive(Debug, Default)]
pub struct Progress {
    done: AtomicUsize,
    stop: AtomicBool,
}

impl Progress {
    /// The cases evaluated so far (the report is assembled after the last one).
    pub fn done(&self) -> usize {
        self.done.load(Ordering::Relaxed)
    }

    /// Ask the evaluation to stop: it ends after the case it is on, with no report.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    /// Count one more unit done (a sweep counts its sizes here).
    pub fn advance(&self) {
        self.done.fetch_add(1, Ordering::Relaxed);
    }

    /// Whether [`Progress::stop`] was called.
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// [`evaluate_with`], counting each case in `progress` as it is done; `None` when
/// [`Progress::stop`] was called before the last case.
pub fn evaluate_observed(
    view: &AgentView,
    cases: &[EvalCase],
    opts: &TurnOptions,
    vectors: Option<&QueryVectors>,
    progress: &Progress,
) -> Option<EvalReport> {
    let mut overall = Tally::default();
    let mut by_kind: BTreeMap<String, Tally> = BTreeMap::new();
    let mut by_lang: BTreeMap<String, Tally> = BTreeMap::new();
    let mut by_skill: BTreeMap<String, Tally> = BTreeMap::new();
    let mut confused: BTreeMap<(String, String), usize> = BTreeMap::new();
    let mut stray: BTreeMap<(String, String), usize> = BTreeMap::new();
    let mut unknown: Vec<String> = Vec::new();
    let mut outcomes = Vec::with_capacity(cases.len());
    for (n, case) in cases.iter().enumerate() {
        if progress.stopped() {
            return None;
        }
        let o = run_case(view, n + 1, case, opts, vectors.and_then(|v| v.query(n)));
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
        progress.advance();
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
    let scored: Vec<Scored> = outcomes
        .iter()
        .map(|o: &CaseOutcome| Scored {
            confidence: o.confidence,
            right: o.expected.is_some() && o.rank == Some(1),
            no_skill: o.expected.is_none(),
        })
        .collect();
    Some(EvalReport {
        calibration: crate::calibration::measure(&scored),
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
    })
}

/// One case through the turn and the ranking.
fn run_case(
    view: &AgentView,
    n: usize,
    case: &EvalCase,
    opts: &TurnOptions,
    semantic: Option<SemanticQuery<'_>>,
) -> CaseOutcome {
    let ctx = resolve_with(view, &case.message, opts, semantic);
    let report = &ctx.report;
    let folded = skillbase_route::trigger::fold_fast(&case.message);
    let relevance = view.relevance(&folded, semantic);
    let ranked = relevance.order();
    let order = routing_order(view, report, &ranked);
    let false_triggers = report
        .activated
        .iter()
        .filter_map(|a| {
            let phrase = a.reason.strip_prefix("trigger:")?;
            (case.expected.as_deref() != Some(a.name.as_str()))
                .then(|| (a.name.clone(), phrase.to_owned()))
        })
        .collect();
    let expected = case.expected.as_deref();
    let rank = expected.and_then(|e| order.iter().position(|s| *s == e).map(|p| p + 1));
    let visible = expected.is_some_and(|e| reached(report, e));
    let (confidence, fit) = first_confidence(view, &relevance, &ranked, order.first(), expected);
    CaseOutcome {
        case: n,
        expected: case.expected.clone(),
        rank,
        first: order.first().map(|s| (*s).to_owned()),
        visible,
        false_triggers,
        confidence,
        fit,
    }
}

/// The ranking's confidence in the routing order's `first` skill, and the case as the fit
/// reads it: the logits of the ranking over every non-eager skill (scoring 0 included: they are
/// the formula's `N`), the expected skill's place among them.
fn first_confidence(
    view: &AgentView,
    relevance: &Relevance,
    ranked: &[(u32, f32)],
    first: Option<&&str>,
    expected: Option<&str>,
) -> (f64, FitCase) {
    let ranked: Vec<usize> = ranked
        .iter()
        .map(|&(i, _)| i as usize)
        .filter(|&i| !view.is_eager(i))
        .collect();
    let scores: Vec<f32> = ranked.iter().map(|&i| relevance.scores[i]).collect();
    let z = skillbase_route::confidence::logits(&scores, relevance.fused());
    let place = |name: &str| ranked.iter().position(|&i| view.skills[i].name() == name);
    let fit = FitCase {
        fused: relevance.fused(),
        reranked: relevance.reranked,
        ..FitCase::new(&z, ranked.len(), expected.and_then(place))
    };
    let confidence = first
        .and_then(|f| place(f))
        .map_or(0.0, |p| relevance.confidence(&ranked, p + 1)[p]);
    (confidence, fit)
}

/// The **routing order** of one message: the skills a trigger injected (in the turn's order,
/// their companions after them), then every other non-eager skill the agent sees by lexical
/// relevance (`ranked`: [`AgentView::relevance`]'s order, the catalog's ranking, fused with the
/// semantic stage when it was given), skills scoring 0 left out. The one place both evaluations
/// rank skills.
fn routing_order<'a>(
    view: &'a AgentView,
    report: &'a TurnReport,
    ranked: &[(u32, f32)],
) -> Vec<&'a str> {
    let mut order: Vec<&str> = Vec::new();
    let mut seen: HashSet<&str> = HashSet::new();
    for a in &report.activated {
        if (a.reason.starts_with("trigger:") || a.reason.starts_with("companion:"))
            && seen.insert(&a.name)
        {
            order.push(&a.name);
        }
    }
    for &(i, score) in ranked {
        if score <= 0.0 {
            break;
        }
        let name = view.skills[i as usize].name();
        if !view.is_eager(i as usize) && seen.insert(name) {
            order.push(name);
        }
    }
    order
}

/// Whether a skill reached the model this turn: injected (eager, trigger, companion) or listed
/// in full in the catalog.
fn reached(report: &TurnReport, name: &str) -> bool {
    report.activated.iter().any(|a| a.name == name) || report.catalog.full.iter().any(|f| f == name)
}

// ── Graded cases: SkillRouter's benchmark format ─────────────────────────────────────────────

/// Largest relevance or id-map document [`parse_graded`] reads, in bytes.
pub const MAX_DOCUMENT_BYTES: usize = 64 * 1024 * 1024;
/// Most graded skills one task's `relevance` may hold.
pub const MAX_GRADES: usize = 10_000;

/// One task of a graded benchmark (SkillRouter's `tasks.jsonl` and `relevance.json`), its ids
/// already mapped to skill names.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GradedCase {
    /// The task's id.
    pub task_id: String,
    /// The task's text (`instruction_text`), sent as the user's message.
    pub message: String,
    /// The task's `task_type` (`clean`, …), for the per-type figures.
    pub task_type: Option<String>,
    /// The skills that should be found (`core_gt_ids`, or `gt_skill_ids` without them), mapped
    /// to names, without repeats, in the labels' order.
    pub relevant: Vec<String>,
    /// Every graded skill (`relevance`) and its grade; a name graded twice keeps the last grade.
    pub grades: Vec<(String, f64)>,
}

/// A task read but not scored, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkippedTask {
    /// The task's id.
    pub task_id: String,
    /// Why it was not scored.
    pub reason: SkipReason,
}

/// Why a task was not scored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SkipReason {
    /// Its `task_type` is `generic_only` (SkillRouter's scorer leaves those out).
    GenericOnly,
    /// The tasks file has it but the relevance labels do not.
    NoLabels,
    /// The relevance labels have it but the tasks file does not (no text to send).
    NoTask,
    /// None of its relevant skills is one this agent sees.
    NoRelevantSkill,
}

impl SkipReason {
    /// The reason as it is serialized (`generic_only`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            SkipReason::GenericOnly => "generic_only",
            SkipReason::NoLabels => "no_labels",
            SkipReason::NoTask => "no_task",
            SkipReason::NoRelevantSkill => "no_relevant_skill",
        }
    }
}

/// Graded tasks as read: the ones to score and the ones left out.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct GradedSet {
    /// The tasks to score, in the tasks file's order.
    pub cases: Vec<GradedCase>,
    /// Tasks left out while reading (`generic_only`, in one file only).
    pub skipped: Vec<SkippedTask>,
}

fn doc_error(what: &'static str, problem: impl Into<String>) -> EvalError {
    EvalError::BadDocument {
        what,
        problem: problem.into(),
    }
}

/// A list of ids (`null` or absent: `None`).
fn id_list(
    entry: &serde_json::Map<String, serde_json::Value>,
    key: &str,
) -> Result<Option<Vec<String>>, String> {
    match entry.get(key) {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::Array(a)) => a
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| format!("`{key}` holds {v}, not an id string"))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(v) => Err(format!("`{key}` is {}, not a list of ids", kind_of(v))),
    }
}

fn kind_of(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "a list",
        serde_json::Value::Object(_) => "an object",
    }
}

/// Read a graded benchmark in SkillRouter's format.
///
/// - `tasks_text`: JSON Lines, each an object with `task_id` and `instruction_text` (strings;
///   other keys ignored), blank lines skipped, at most [`MAX_CASES`] tasks of at most
///   [`MAX_LINE_BYTES`] each, no task id twice.
/// - `relevance_text`: one JSON object, task id → `{"gt_skill_ids": [..], "core_gt_ids"?: [..],
///   "relevance": {id: grade}, "task_type"?: "..."}` (other keys ignored); grades are finite
///   numbers ≥ 0.
/// - `map_text`: benchmark id → skill name, a JSON object `{id: name}` or one holding that map
///   under `gt_map` (SkillRouter pool manifests); an id it does not name is a skill outside the
///   pool. Without a map, id `prefix/name` is skill `name` (an id without `/` is the name).
///
/// Tasks of type `generic_only`, tasks without labels and labels without a task are left out
/// and listed in [`GradedSet::skipped`]. Nothing here panics on any input.
pub fn parse_graded(
    tasks_text: &str,
    relevance_text: &str,
    map_text: Option<&str>,
) -> Result<GradedSet, EvalError> {
    use serde_json::Value;
    let map = map_text.map(parse_id_map).transpose()?;
    let name_of = |id: &str| -> Option<String> {
        match &map {
            Some(m) => m.get(id).and_then(Value::as_str).map(str::to_owned),
            None => Some(id.rsplit('/').next().unwrap_or(id).to_owned()),
        }
    };
    let rel = parse_relevance(relevance_text)?;
    let mut set = GradedSet::default();
    let lines = read_tasks(tasks_text, &rel, &name_of, &mut set)?;
    if lines.keys().all(|t| !rel.contains_key(t)) {
        return Err(EvalError::NoLabelledTask);
    }
    for (task_id, entry) in &rel {
        if !lines.contains_key(task_id) {
            // Still checked: a malformed entry is refused wherever it is.
            graded_case(task_id.clone(), String::new(), entry, &name_of)?;
            set.skipped.push(SkippedTask {
                task_id: task_id.clone(),
                reason: SkipReason::NoTask,
            });
        }
    }
    Ok(set)
}

/// The id map: benchmark id → skill name (the object itself, or the one under `gt_map`).
fn parse_id_map(t: &str) -> Result<serde_json::Map<String, serde_json::Value>, EvalError> {
    use serde_json::Value;
    if t.len() > MAX_DOCUMENT_BYTES {
        return Err(EvalError::DocumentTooLarge("id map"));
    }
    let v: Value = serde_json::from_str(t).map_err(|e| doc_error("id map", e.to_string()))?;
    let Value::Object(mut o) = v else {
        return Err(doc_error(
            "id map",
            format!("it is {}, not an object of id → skill name", kind_of(&v)),
        ));
    };
    let o = match o.remove("gt_map") {
        Some(Value::Object(inner)) => inner,
        Some(other) => {
            return Err(doc_error(
                "id map",
                format!("`gt_map` is {}, not an object", kind_of(&other)),
            ));
        }
        None => o,
    };
    for (id, name) in &o {
        if !name.is_string() {
            return Err(doc_error(
                "id map",
                format!("id {id:?} maps to {}, not a skill name", kind_of(name)),
            ));
        }
    }
    Ok(o)
}

/// The labels: task id → labels (each checked later, with its task).
fn parse_relevance(
    relevance_text: &str,
) -> Result<serde_json::Map<String, serde_json::Value>, EvalError> {
    use serde_json::Value;
    if relevance_text.len() > MAX_DOCUMENT_BYTES {
        return Err(EvalError::DocumentTooLarge("relevance"));
    }
    let rel: Value =
        serde_json::from_str(relevance_text).map_err(|e| doc_error("relevance", e.to_string()))?;
    let Value::Object(rel) = rel else {
        return Err(doc_error(
            "relevance",
            format!("it is {}, not an object of task id → labels", kind_of(&rel)),
        ));
    };
    if rel.len() > MAX_CASES {
        return Err(EvalError::TooMany);
    }
    Ok(rel)
}

/// Read the tasks into `set` (each with its labels in `rel`, or skipped), and return the line
/// of each task id.
fn read_tasks(
    tasks_text: &str,
    rel: &serde_json::Map<String, serde_json::Value>,
    name_of: &dyn Fn(&str) -> Option<String>,
    set: &mut GradedSet,
) -> Result<std::collections::HashMap<String, usize>, EvalError> {
    let mut lines: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut read = 0usize;
    for (i, line) in tasks_text.lines().enumerate() {
        let line_no = i + 1;
        if line.len() > MAX_LINE_BYTES {
            return Err(EvalError::LineTooLong(line_no));
        }
        if line.trim().is_empty() {
            continue;
        }
        if read == MAX_CASES {
            return Err(EvalError::TooMany);
        }
        read += 1;
        let (task_id, message) = task_line(line, line_no)?;
        if let Some(first) = lines.insert(task_id.clone(), line_no) {
            return Err(EvalError::BadTask {
                line: line_no,
                problem: format!("task {task_id:?} is already on line {first}"),
            });
        }
        let Some(entry) = rel.get(&task_id) else {
            set.skipped.push(SkippedTask {
                task_id,
                reason: SkipReason::NoLabels,
            });
            continue;
        };
        let case = graded_case(task_id, message, entry, name_of)?;
        if case.task_type.as_deref() == Some("generic_only") {
            set.skipped.push(SkippedTask {
                task_id: case.task_id,
                reason: SkipReason::GenericOnly,
            });
        } else {
            set.cases.push(case);
        }
    }
    if read == 0 {
        return Err(EvalError::Empty);
    }
    Ok(lines)
}

/// One task line (number `line_no`): its `task_id` and `instruction_text`.
fn task_line(line: &str, line_no: usize) -> Result<(String, String), EvalError> {
    use serde_json::Value;
    let bad = |problem: String| EvalError::BadTask {
        line: line_no,
        problem,
    };
    let v: Value = serde_json::from_str(line).map_err(|e| bad(e.to_string()))?;
    let Value::Object(task) = v else {
        return Err(bad(format!("it is {}, not an object", kind_of(&v))));
    };
    let field = |key: &str| match task.get(key) {
        Some(Value::String(s)) => Ok(s.clone()),
        None => Err(bad(format!("missing field `{key}`"))),
        Some(v) => Err(bad(format!("`{key}` is {}, not a string", kind_of(v)))),
    };
    Ok((field("task_id")?, field("instruction_text")?))
}

/// One task's labels, checked and mapped.
fn graded_case(
    task_id: String,
    message: String,
    entry: &serde_json::Value,
    name_of: &dyn Fn(&str) -> Option<String>,
) -> Result<GradedCase, EvalError> {
    use serde_json::Value;
    let bad = |problem: String| EvalError::BadLabels {
        task: task_id.chars().take(120).collect(),
        problem,
    };
    let Value::Object(entry) = entry else {
        return Err(bad(format!(
            "the labels are {}, not an object",
            kind_of(entry)
        )));
    };
    let gt = id_list(entry, "gt_skill_ids").map_err(&bad)?;
    let core = id_list(entry, "core_gt_ids").map_err(&bad)?;
    id_list(entry, "auxiliary_gt_ids").map_err(&bad)?;
    let Some(ids) = core.or(gt) else {
        return Err(bad("missing field `gt_skill_ids` (or `core_gt_ids`)".into()));
    };
    let task_type = match entry.get("task_type") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(v) => return Err(bad(format!("`task_type` is {}, not a string", kind_of(v)))),
    };
    let grades_in = match entry.get("relevance") {
        Some(Value::Object(o)) => o,
        None => return Err(bad("missing field `relevance`".into())),
        Some(v) => {
            return Err(bad(format!(
                "`relevance` is {}, not an object of id → grade",
                kind_of(v)
            )));
        }
    };
    if grades_in.len() > MAX_GRADES {
        return Err(bad(format!("more than {MAX_GRADES} graded skills")));
    }
    let mut grades: Vec<(String, f64)> = Vec::with_capacity(grades_in.len());
    for (id, g) in grades_in {
        let grade = g
            .as_f64()
            .filter(|x| x.is_finite() && *x >= 0.0)
            .ok_or_else(|| {
                bad(format!(
                    "the grade of {id:?} is {g}; grades are numbers, 0 or more"
                ))
            })?;
        let Some(name) = name_of(id) else { continue };
        match grades.iter_mut().find(|(n, _)| *n == name) {
            Some(slot) => slot.1 = grade,
            None => grades.push((name, grade)),
        }
    }
    let mut relevant: Vec<String> = Vec::new();
    for name in ids.iter().filter_map(|id| name_of(id)) {
        if !relevant.contains(&name) {
            relevant.push(name);
        }
    }
    Ok(GradedCase {
        task_id,
        message,
        task_type,
        relevant,
        grades,
    })
}

/// One task's figures (SkillRouter's `src/metrics.py`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct TaskMetrics {
    /// 1 when the first skill of the routing order is relevant, else 0.
    pub hit_at_1: f64,
    /// Share of the relevant skills among the first 5.
    pub recall_at_5: f64,
    /// Share of the relevant skills among the first 10.
    pub recall_at_10: f64,
    /// Share of the relevant skills among the first 20.
    pub recall_at_20: f64,
    /// Graded DCG of the first 10 (`grade / log2(position + 1)`) over the ideal DCG of every
    /// grade of the task (0 when there is no positive grade).
    pub ndcg_at_10: f64,
}

fn dcg(grades: impl Iterator<Item = f64>, k: usize) -> f64 {
    grades
        .take(k)
        .enumerate()
        .map(|(i, g)| g / ((i + 2) as f64).log2())
        .sum()
}

/// The figures of one ranking against its relevant set and grades (`relevant` is not empty).
fn task_metrics(order: &[&str], relevant: &[&str], grades: &[(&str, f64)]) -> TaskMetrics {
    let grade = |name: &str| {
        grades
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(0.0, |(_, g)| *g)
    };
    let mut ideal: Vec<f64> = grades.iter().map(|(_, g)| *g).collect();
    ideal.sort_by(|a, b| b.total_cmp(a));
    let ideal = dcg(ideal.into_iter(), 10);
    let recall = |k: usize| {
        order
            .iter()
            .take(k)
            .filter(|s| relevant.contains(s))
            .count() as f64
            / relevant.len() as f64
    };
    TaskMetrics {
        hit_at_1: f64::from(u8::from(
            order.first().is_some_and(|s| relevant.contains(s)),
        )),
        recall_at_5: recall(5),
        recall_at_10: recall(10),
        recall_at_20: recall(20),
        ndcg_at_10: if ideal > 0.0 {
            dcg(order.iter().map(|s| grade(s)), 10) / ideal
        } else {
            0.0
        },
    }
}

/// The mean figures of a group of scored tasks.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct GradedMetrics {
    /// Tasks scored in the group.
    pub tasks: usize,
    /// Mean hit@1.
    pub hit_at_1: f64,
    /// Mean recall@5.
    pub recall_at_5: f64,
    /// Mean recall@10.
    pub recall_at_10: f64,
    /// Mean recall@20.
    pub recall_at_20: f64,
    /// Mean nDCG@10.
    pub ndcg_at_10: f64,
    /// Mean share of a task's relevant skills injected or listed in full under the agent's
    /// real budget.
    pub visible: f64,
}

impl GradedMetrics {
    fn mean(rows: &[&GradedOutcome]) -> GradedMetrics {
        let n = rows.len();
        let mean = |f: &dyn Fn(&GradedOutcome) -> f64| {
            if n == 0 {
                0.0
            } else {
                rows.iter().map(|r| f(r)).sum::<f64>() / n as f64
            }
        };
        GradedMetrics {
            tasks: n,
            hit_at_1: mean(&|r| r.metrics.hit_at_1),
            recall_at_5: mean(&|r| r.metrics.recall_at_5),
            recall_at_10: mean(&|r| r.metrics.recall_at_10),
            recall_at_20: mean(&|r| r.metrics.recall_at_20),
            ndcg_at_10: mean(&|r| r.metrics.ndcg_at_10),
            visible: mean(&|r| r.visible),
        }
    }
}

/// What one scored task came to.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GradedOutcome {
    /// The task's id.
    pub task_id: String,
    /// Its `task_type`, if it has one.
    pub task_type: Option<String>,
    /// Its relevant skills this agent sees (what it was scored against).
    pub relevant: Vec<String>,
    /// The first 20 skills of the routing order.
    pub top: Vec<String>,
    /// The 1-based position of the first relevant skill in the whole routing order (`None`:
    /// no relevant skill is ranked at all).
    pub first_relevant: Option<usize>,
    /// The figures.
    pub metrics: TaskMetrics,
    /// Share of its relevant skills injected or listed in full.
    pub visible: f64,
}

/// A graded evaluation (SkillRouter's metrics over the agent's routing order).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GradedReport {
    /// The agent evaluated.
    pub agent: String,
    /// Skills the agent sees.
    pub skills: usize,
    /// Tasks read (scored and skipped).
    pub tasks: usize,
    /// Every scored task together.
    pub overall: GradedMetrics,
    /// By `task_type` (tasks without one under `unlabelled`).
    pub by_task_type: BTreeMap<String, GradedMetrics>,
    /// How many tasks were skipped, by reason.
    pub skipped_by_reason: BTreeMap<&'static str, usize>,
    /// The tasks not scored and why, in reading order.
    pub skipped: Vec<SkippedTask>,
    /// Every scored task's outcome, in order.
    pub outcomes: Vec<GradedOutcome>,
}

/// Evaluate graded tasks against an agent's view under `opts`: each task's text through the
/// real turn path, scored on the same routing order as [`evaluate`] with SkillRouter's metrics.
/// Relevant skills and grades are restricted to the skills the agent sees; a task left with no
/// relevant skill is skipped ([`SkipReason::NoRelevantSkill`]).
pub fn evaluate_graded(view: &AgentView, set: &GradedSet, opts: &TurnOptions) -> GradedReport {
    evaluate_graded_with(view, set, opts, None)
}

/// [`evaluate_graded`], with the semantic stage when `vectors` holds the tasks' vectors (in
/// the order of `set.cases`).
pub fn evaluate_graded_with(
    view: &AgentView,
    set: &GradedSet,
    opts: &TurnOptions,
    vectors: Option<&QueryVectors>,
) -> GradedReport {
    let mut skipped = set.skipped.clone();
    let mut outcomes = Vec::with_capacity(set.cases.len());
    for (n, case) in set.cases.iter().enumerate() {
        let semantic = vectors.and_then(|v| v.query(n));
        let relevant: Vec<&str> = case
            .relevant
            .iter()
            .map(String::as_str)
            .filter(|n| view.get(n).is_some())
            .collect();
        if relevant.is_empty() {
            skipped.push(SkippedTask {
                task_id: case.task_id.clone(),
                reason: SkipReason::NoRelevantSkill,
            });
            continue;
        }
        let grades: Vec<(&str, f64)> = case
            .grades
            .iter()
            .filter(|(n, _)| view.get(n).is_some())
            .map(|(n, g)| (n.as_str(), *g))
            .collect();
        let ctx = resolve_with(view, &case.message, opts, semantic);
        let folded = skillbase_route::trigger::fold_fast(&case.message);
        let ranked = view.relevance(&folded, semantic).order();
        let order = routing_order(view, &ctx.report, &ranked);
        let seen = relevant.iter().filter(|n| reached(&ctx.report, n)).count();
        outcomes.push(GradedOutcome {
            task_id: case.task_id.clone(),
            task_type: case.task_type.clone(),
            relevant: relevant.iter().map(|s| (*s).to_owned()).collect(),
            top: order.iter().take(20).map(|s| (*s).to_owned()).collect(),
            first_relevant: order
                .iter()
                .position(|s| relevant.contains(s))
                .map(|p| p + 1),
            metrics: task_metrics(&order, &relevant, &grades),
            visible: seen as f64 / relevant.len() as f64,
        });
    }
    let all: Vec<&GradedOutcome> = outcomes.iter().collect();
    let mut by_type: BTreeMap<String, Vec<&GradedOutcome>> = BTreeMap::new();
    for o in &outcomes {
        by_type
            .entry(o.task_type.clone().unwrap_or_else(|| "unlabelled".into()))
            .or_default()
            .push(o);
    }
    let mut skipped_by_reason: BTreeMap<&'static str, usize> = BTreeMap::new();
    for s in &skipped {
        *skipped_by_reason.entry(s.reason.as_str()).or_default() += 1;
    }
    GradedReport {
        agent: view.agent.name.to_string(),
        skills: view.skills.len(),
        tasks: outcomes.len() + skipped.len(),
        overall: GradedMetrics::mean(&all),
        by_task_type: by_type
            .into_iter()
            .map(|(k, v)| (k, GradedMetrics::mean(&v)))
            .collect(),
        skipped_by_reason,
        skipped,
        outcomes,
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

    /// Three tasks ranked by hand, their figures worked out by hand:
    ///
    /// - A: order `a b c`, relevant {a}, grades {a: 3}. hit@1 1; recall@5/10/20 1; DCG@10 =
    ///   3/log2(2) = 3 = ideal, nDCG 1.
    /// - B: order `p x q1..q9 y`, relevant {x, y}, grades {x: 3, y: 3, z: 1} (z auxiliary, never
    ///   ranked). hit@1 0; x is 2nd, y 12th: recall@5 = recall@10 = 1/2, recall@20 = 1;
    ///   DCG@10 = 3/log2(3) = 1.892789; ideal = 3/log2(2) + 3/log2(3) + 1/log2(4) = 5.392789;
    ///   nDCG 0.350985.
    /// - C: order `n k m`, relevant {m}, grades {m: 3, n: 2}. hit@1 0 (n is graded but not
    ///   relevant); recall 1 at every k; DCG@10 = 2/log2(2) + 3/log2(4) = 3.5; ideal = 3 +
    ///   2/log2(3) = 4.261860; nDCG 0.821238.
    ///
    /// Means: hit@1 1/3, recall@5 = recall@10 = 2.5/3 = 0.833333, recall@20 1, nDCG@10
    /// (1 + 0.350985 + 0.821238) / 3 = 0.724074.
    #[test]
    fn graded_metrics_match_hand_computed_values() {
        let near = |a: f64, b: f64| assert!((a - b).abs() < 1e-6, "{a} != {b}");
        let a = task_metrics(&["a", "b", "c"], &["a"], &[("a", 3.0)]);
        assert_eq!(
            a,
            TaskMetrics {
                hit_at_1: 1.0,
                recall_at_5: 1.0,
                recall_at_10: 1.0,
                recall_at_20: 1.0,
                ndcg_at_10: 1.0
            }
        );
        let qs: Vec<String> = (1..=9).map(|i| format!("q{i}")).collect();
        let mut order_b = vec!["p", "x"];
        order_b.extend(qs.iter().map(String::as_str));
        order_b.push("y");
        assert_eq!(order_b.len(), 12);
        let b = task_metrics(&order_b, &["x", "y"], &[("x", 3.0), ("y", 3.0), ("z", 1.0)]);
        assert_eq!(b.hit_at_1, 0.0);
        assert_eq!(
            (b.recall_at_5, b.recall_at_10, b.recall_at_20),
            (0.5, 0.5, 1.0)
        );
        near(b.ndcg_at_10, 0.350985);
        let c = task_metrics(&["n", "k", "m"], &["m"], &[("m", 3.0), ("n", 2.0)]);
        assert_eq!(c.hit_at_1, 0.0);
        assert_eq!((c.recall_at_5, c.recall_at_20), (1.0, 1.0));
        near(c.ndcg_at_10, 0.821238);
        let row = |metrics| GradedOutcome {
            task_id: String::new(),
            task_type: None,
            relevant: vec![],
            top: vec![],
            first_relevant: None,
            metrics,
            visible: 0.5,
        };
        let rows = [row(a), row(b), row(c)];
        let m = GradedMetrics::mean(&rows.iter().collect::<Vec<_>>());
        assert_eq!(m.tasks, 3);
        near(m.hit_at_1, 1.0 / 3.0);
        near(m.recall_at_5, 0.833333);
        near(m.recall_at_10, 0.833333);
        near(m.recall_at_20, 1.0);
        near(m.ndcg_at_10, 0.724074);
        near(m.visible, 0.5);
        // Nothing ranked, or no positive grade: zeros, never NaN.
        let empty = task_metrics(&[], &["a"], &[("a", 3.0)]);
        assert_eq!(empty, TaskMetrics::default());
        assert_eq!(task_metrics(&["a"], &["a"], &[("a", 0.0)]).ndcg_at_10, 0.0);
        assert_eq!(GradedMetrics::mean(&[]), GradedMetrics::default());
    }

    const REL: &str = r#"{
        "t1": {"gt_skill_ids": ["gt/alpha", "gt/beta"], "core_gt_ids": ["gt/alpha"],
               "relevance": {"gt/alpha": 3, "gt/beta": 3, "degraded/alpha_x": 1},
               "auxiliary_gt_ids": ["gt/beta"], "task_type": "clean"},
        "t2": {"gt_skill_ids": ["gt/gamma"], "relevance": {"gt/gamma": 3}, "task_type": "generic_only"},
        "t3": {"gt_skill_ids": ["gt/delta"], "relevance": {"gt/delta": 2.5}},
        "only-labels": {"gt_skill_ids": ["gt/alpha"], "relevance": {"gt/alpha": 3}}
    }"#;
    const TASKS: &str = "{\"task_id\": \"t1\", \"instruction_text\": \"do alpha\", \"domain\": \"x\"}\n\n\
        {\"task_id\": \"t2\", \"instruction_text\": \"anything\"}\n\
        {\"task_id\": \"t3\", \"instruction_text\": \"do delta\"}\n\
        {\"task_id\": \"t4\", \"instruction_text\": \"no labels\"}\n";

    #[test]
    fn graded_tasks_are_read_mapped_and_skipped() {
        // Without a map: `prefix/name` is `name`.
        let set = parse_graded(TASKS, REL, None).unwrap();
        assert_eq!(set.cases.len(), 2);
        let t1 = &set.cases[0];
        assert_eq!(
            (t1.task_id.as_str(), t1.message.as_str()),
            ("t1", "do alpha")
        );
        assert_eq!(t1.relevant, ["alpha"], "core_gt_ids win over gt_skill_ids");
        assert_eq!(
            t1.grades,
            [
                ("alpha".to_owned(), 3.0),
                ("beta".to_owned(), 3.0),
                ("alpha_x".to_owned(), 1.0)
            ]
        );
        assert_eq!(
            set.cases[1].relevant,
            ["delta"],
            "gt_skill_ids without core"
        );
        let skipped: Vec<(&str, SkipReason)> = set
            .skipped
            .iter()
            .map(|s| (s.task_id.as_str(), s.reason))
            .collect();
        assert_eq!(
            skipped,
            [
                ("t2", SkipReason::GenericOnly),
                ("t4", SkipReason::NoLabels),
                ("only-labels", SkipReason::NoTask)
            ]
        );
        // A map, bare or under `gt_map`: ids it does not name are outside the pool.
        for map in [
            r#"{"gt/alpha": "alpha-skill", "gt/delta": "d"}"#,
            r#"{"counts": {}, "gt_map": {"gt/alpha": "alpha-skill", "gt/delta": "d"}}"#,
        ] {
            let set = parse_graded(TASKS, REL, Some(map)).unwrap();
            assert_eq!(set.cases[0].relevant, ["alpha-skill"]);
            assert_eq!(set.cases[0].grades, [("alpha-skill".to_owned(), 3.0)]);
            assert_eq!(set.cases[1].grades, [("d".to_owned(), 2.5)]);
        }
    }

    #[test]
    fn hostile_graded_input_is_refused_with_where() {
        let rel1 = r#"{"t1": {"gt_skill_ids": ["a"], "relevance": {"a": 3}}}"#;
        let task1 = "{\"task_id\": \"t1\", \"instruction_text\": \"x\"}";
        let e = |tasks: &str, rel: &str, map: Option<&str>| {
            parse_graded(tasks, rel, map).unwrap_err().to_string()
        };
        for (tasks, want) in [
            ("", "no cases"),
            ("[1]", "tasks line 1: it is a list"),
            ("\"t1\"", "tasks line 1: it is a string"),
            ("{\"task_id\": \"t1\"}", "missing field `instruction_text`"),
            (
                "{\"task_id\": 7, \"instruction_text\": \"x\"}",
                "`task_id` is a number",
            ),
            (
                "{\"task_id\": \"t1\", \"instruction_text\": null}",
                "`instruction_text` is null",
            ),
            (
                "{\"task_id\": \"t1\", \"instruction_text\": \"x\"}\n{\"task_id\": \"t1\", \"instruction_text\": \"y\"}",
                "tasks line 2: task \"t1\" is already on line 1",
            ),
            (
                "{\"task_id\": \"t1\", \"instruction_text\": \"x\"}\nnot json",
                "tasks line 2",
            ),
            (
                "{\"task_id\": \"zz\", \"instruction_text\": \"x\"}",
                "no task of the tasks file",
            ),
        ] {
            let got = e(tasks, rel1, None);
            assert!(got.contains(want), "{tasks:?}: {got}");
        }
        for (rel, want) in [
            ("[]", "relevance: it is a list"),
            ("{", "relevance:"),
            (r#"{"t1": 3}"#, "task \"t1\": the labels are a number"),
            (
                r#"{"t1": {"relevance": {"a": 3}}}"#,
                "missing field `gt_skill_ids`",
            ),
            (
                r#"{"t1": {"gt_skill_ids": "a", "relevance": {"a": 3}}}"#,
                "not a list of ids",
            ),
            (
                r#"{"t1": {"gt_skill_ids": [1], "relevance": {"a": 3}}}"#,
                "not an id string",
            ),
            (
                r#"{"t1": {"gt_skill_ids": ["a"]}}"#,
                "missing field `relevance`",
            ),
            (
                r#"{"t1": {"gt_skill_ids": ["a"], "relevance": [3]}}"#,
                "`relevance` is a list",
            ),
            (
                r#"{"t1": {"gt_skill_ids": ["a"], "relevance": {"a": "3"}}}"#,
                "grade of \"a\"",
            ),
            (
                r#"{"t1": {"gt_skill_ids": ["a"], "relevance": {"a": -1}}}"#,
                "0 or more",
            ),
            (
                r#"{"t1": {"gt_skill_ids": ["a"], "relevance": {"a": null}}}"#,
                "grade of",
            ),
            (
                r#"{"t1": {"gt_skill_ids": ["a"], "relevance": {"a": 1e999}}}"#,
                "relevance:",
            ),
            (
                r#"{"t1": {"gt_skill_ids": ["a"], "relevance": {"a": NaN}}}"#,
                "relevance:",
            ),
            (
                r#"{"t1": {"gt_skill_ids": ["a"], "relevance": {}, "task_type": 3}}"#,
                "`task_type` is a number",
            ),
            // A malformed entry without a task is refused too.
            (
                r#"{"t1": {"gt_skill_ids": ["a"], "relevance": {}}, "t9": {"gt_skill_ids": ["a"], "relevance": {"a": true}}}"#,
                "task \"t9\"",
            ),
        ] {
            let got = e(task1, rel, None);
            assert!(got.contains(want), "{rel}: {got}");
        }
        for (map, want) in [
            ("[]", "id map: it is a list"),
            (r#"{"gt_map": []}"#, "`gt_map` is a list"),
            (r#"{"a": 1}"#, "id \"a\" maps to a number"),
            ("nope", "id map:"),
        ] {
            let got = e(task1, rel1, Some(map));
            assert!(got.contains(want), "{map}: {got}");
        }
        let long = format!(
            "{{\"task_id\": \"t1\", \"instruction_text\": \"{}\"}}",
            "x".repeat(MAX_LINE_BYTES)
        );
        assert_eq!(
            parse_graded(&long, rel1, None),
            Err(EvalError::LineTooLong(1))
        );
        let many = "{\"task_id\": \"t\", \"instruction_text\": \"x\"}\n".repeat(2);
        assert!(e(&many, rel1, None).contains("already on line 1"));
        let big_rel = format!(
            "{{\"t1\": {{\"gt_skill_ids\": [], \"relevance\": {{{}}}}}}}",
            (0..=MAX_GRADES)
                .map(|i| format!("\"s{i}\": 1"))
                .collect::<Vec<_>>()
                .join(",")
        );
        assert!(e(task1, &big_rel, None).contains("more than"));
    }
}

/// One revision's routing figures for its own skill (what `skillbase runs --by-revision`
/// shows beside the revision's outcomes).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RevisionRecall {
    /// The revision.
    pub rev: i64,
    /// Cases expecting the skill.
    pub cases: usize,
    /// Share of them with the skill first.
    pub recall_at_1: f64,
    /// Share of them with the skill among the first five.
    pub recall_at_5: f64,
}

/// Recall of skill `name` (in `scope`) at each of `revs`, over the cases that expect it: the
/// agent's view is built with the skill at that revision in place of its active one, everything
/// else as stored, and the cases are routed lexically under the agent's budgets. A revision
/// whose skill the agent does not see scores 0; `revs` that do not exist are an error.
pub async fn recall_by_revision(
    store: &skillbase_store::Store,
    agent: std::sync::Arc<skillbase_store::Agent>,
    scope: &skillbase_store::Scope,
    name: &str,
    revs: &[i64],
    cases: &[EvalCase],
) -> Result<Vec<RevisionRecall>, skillbase_store::StoreError> {
    let mine: Vec<EvalCase> = cases
        .iter()
        .filter(|c| c.expected.as_deref() == Some(name))
        .cloned()
        .collect();
    let opts = TurnOptions {
        max_cost: None,
        catalog_budget: None,
        context_budget: None,
        paths: Vec::new(),
    };
    let mut out = Vec::with_capacity(revs.len());
    for &rev in revs {
        let entry = store.entry_at(scope, name, rev).await?;
        let index = store.index().with(scope, name, Some(entry));
        let view = AgentView::build(
            agent.clone(),
            &index,
            &skillbase_runtime::Environment::builtins(),
        );
        let m = evaluate(&view, &mine, &opts)
            .by_skill
            .remove(name)
            .unwrap_or_default();
        out.push(RevisionRecall {
            rev,
            cases: mine.len(),
            recall_at_1: m.recall_at_1,
            recall_at_5: m.recall_at_5,
        });
    }
    Ok(out)
}
