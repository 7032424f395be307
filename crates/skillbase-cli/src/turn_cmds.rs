//! `skillbase turn`: the window a newcomer looks through first.

use crate::EXIT_OK;
use crate::common::{StoreArgs, read_input};
use anyhow::{Context, Result, anyhow};
use clap::Args;
use skillbase_format::Cost;
use skillbase_runtime::CatalogReport;
use skillbase_runtime::{OmissionDetail, TurnContext, TurnOptions, TurnReport};
use skillbase_store::AgentName;

/// Resolve one turn for an agent and print what the model would get.
#[derive(Args)]
pub struct TurnArgs {
    /// The agent.
    #[arg(long)]
    agent: String,
    /// The user's message.
    #[arg(long, short)]
    message: String,
    /// The session (created if new; default: a new one).
    #[arg(long)]
    session: Option<String>,
    /// Leave out of the catalog and tools every skill slower than this cost class.
    #[arg(long, value_parser = parse_cost)]
    max_cost: Option<Cost>,
    /// Override the agent's catalog budget (tokens).
    #[arg(long)]
    catalog_budget: Option<u32>,
    /// Override the agent's context budget for injected bodies (tokens).
    #[arg(long)]
    context_budget: Option<u32>,
    /// A file path the turn works on (repeatable): skills whose `paths:` globs match it are
    /// placed with reason `path:<glob>`.
    #[arg(long = "path", value_name = "PATH")]
    paths: Vec<String>,
    /// Where sessions' files are written (default: $SKILLBASE_HOME/workspaces).
    #[arg(long)]
    workspace: Option<std::path::PathBuf>,
    #[arg(long)]
    json: bool,
    /// How the skills the catalog left out are shown: `summary` (counts, reasons and ranks) or
    /// `full` (every one by name).
    #[arg(long, value_name = "summary|full", default_value = "summary", value_parser = parse_detail)]
    omissions: OmissionDetail,
}

fn parse_detail(s: &str) -> Result<OmissionDetail, String> {
    s.parse()
}

fn parse_cost(s: &str) -> Result<Cost, String> {
    s.parse()
}

pub async fn turn(s: &StoreArgs, a: TurnArgs) -> Result<u8> {
    let agent = AgentName::parse(&a.agent).map_err(|e| anyhow!(e))?;
    let store = s
        .open_for_agent(&agent, || {
            anyhow!(
                "no agent '{agent}'; create it with `skillbase agent create {agent} --skills all`"
            )
        })
        .await?;
    let session = a.session.clone().unwrap_or_else(|| {
        let ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or(0);
        format!("cli-{ms}")
    });
    let workspace = a
        .workspace
        .clone()
        .unwrap_or_else(|| skillbase_store::default_home().join("workspaces"));
    let d = crate::engine_setup::engine(s, store.clone(), Some(workspace)).await?;
    let opts = TurnOptions {
        max_cost: a.max_cost,
        catalog_budget: a.catalog_budget,
        context_budget: a.context_budget,
        paths: a.paths.clone(),
    };
    let mut ctx = d.turn(&agent, &session, &a.message, &opts).await?;
    ctx.report.catalog.detail = a.omissions;
    // The turn's events are written behind; store them before the process ends.
    d.finish().await;
    if a.json {
        let v = serde_json::json!({"agent": agent, "session": session, "context": ctx});
        outln!("{}", serde_json::to_string_pretty(&v)?)?;
    } else {
        print_turn(&agent, &session, &a.message, &ctx)?;
    }
    store.close().await;
    Ok(EXIT_OK)
}

/// Measure routing for an agent: each line of CASES is `{"message": …, "expected": skill or
/// null, "kind": …, "lang": …}`; nothing is written to the store. With `--relevance`, CASES is a
/// graded benchmark's tasks file in SkillRouter's format (`{"task_id", "instruction_text"}` per
/// line), scored with hit@1, recall@5/10/20, nDCG@10 and visible.
#[derive(Args)]
pub struct EvalArgs {
    /// The cases file (JSON Lines), or with `--relevance` the tasks file.
    cases: std::path::PathBuf,
    /// Graded labels for the tasks in CASES (SkillRouter's `relevance.json`: task id →
    /// `{"gt_skill_ids", "core_gt_ids", "relevance": {id: grade}, "task_type"}`).
    #[arg(long)]
    relevance: Option<std::path::PathBuf>,
    /// Benchmark id → skill name, as `{id: name}` or a pool manifest with `gt_map` (default:
    /// id `prefix/name` is skill `name`). Only with `--relevance`.
    #[arg(long, requires = "relevance")]
    id_map: Option<std::path::PathBuf>,
    /// The agent whose view, triggers and budgets are measured.
    #[arg(long)]
    agent: String,
    /// Override the agent's catalog budget (tokens).
    #[arg(long)]
    catalog_budget: Option<u32>,
    /// Override the agent's context budget for injected bodies (tokens).
    #[arg(long)]
    context_budget: Option<u32>,
    /// Exit with status 1 when recall@5 over every labelled case is below this (0 to 1).
    #[arg(long)]
    min_recall_at_5: Option<f64>,
    /// Exit with status 1 when the first skill's confidence is calibrated worse than this:
    /// its expected calibration error over the cases (0 to 1; see the `confidence:` line).
    #[arg(long, value_name = "ECE", conflicts_with = "relevance", value_parser = unit_interval)]
    max_ece: Option<f64>,
    /// Print the whole report, every case included, as JSON.
    #[arg(long)]
    json: bool,
    /// Instead of the report, explain why this skill was missed: per case that expects it and
    /// did not rank it first, the skill that won, the words that decided and the words it lacks.
    #[arg(long, value_name = "SKILL", conflicts_with_all = ["relevance", "min_recall_at_5", "max_ece"])]
    explain: Option<String>,
    /// Instead of one report, measure how recall falls as the library grows: the cases again
    /// with distractor skills from DIR (a folder of skill folders, as `import` reads; a public
    /// pool such as SkillRouter's) added at each of `--sizes`, in a scratch store (the store
    /// is only read).
    #[arg(long, value_name = "DIR", conflicts_with_all = ["relevance", "explain", "min_recall_at_5", "max_ece"])]
    sweep: Option<std::path::PathBuf>,
    /// Library sizes for `--sweep`, as distractors added, comma-separated (default: 0, 100,
    /// 1000, 10000 and the whole pool, up to its size).
    #[arg(long, value_delimiter = ',', requires = "sweep")]
    sizes: Vec<usize>,
    /// Keep the semantic stage's vectors of a `--sweep` in FILE (a SQLite store, created if
    /// missing) and start from those it holds: a second sweep of the same pool computes only
    /// what changed (vectors are keyed by model and content, so a stale one is never used).
    #[arg(long, value_name = "FILE", requires = "sweep")]
    keep: Option<std::path::PathBuf>,
    /// Also fit the confidence's constants (temperature, "none" bias and its growth with the
    /// library's size) on the cases, pooled over every `--sweep` size, and print them: what
    /// `skillbase_route::confidence` bakes in is fitted this way.
    #[arg(long, conflicts_with_all = ["relevance", "explain"])]
    fit_confidence: bool,
}

/// A bound between 0 and 1, as `--max-ece` takes.
fn unit_interval(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.0..=1.0).contains(&v) => Ok(v),
        _ => Err(format!("{s:?} is not a number between 0 and 1")),
    }
}

/// What `eval` reads: plain cases, or graded tasks.
enum EvalInput {
    Cases(Vec<skillbase_insight::eval::EvalCase>),
    Graded(skillbase_insight::eval::GradedSet),
}

pub async fn eval(s: &StoreArgs, a: EvalArgs) -> Result<u8> {
    let agent = AgentName::parse(&a.agent).map_err(|e| anyhow!(e))?;
    let input = eval_input(&a)?;
    if let (Some(dir), EvalInput::Cases(cases)) = (&a.sweep, &input) {
        return eval_sweep(s, &a, &agent, cases, dir).await;
    }
    let store = s
        .open_for_agent(&agent, || {
            anyhow!(
                "no agent '{agent}'; create it with `skillbase agent create {agent} --skills all`"
            )
        })
        .await?;
    let mut engine = skillbase_runtime::Engine::builder().store(store.clone());
    if !store.vault_all().await?.is_empty() {
        engine = engine.vault_key(skillbase_runtime::VaultKey::load(
            &skillbase_store::default_home(),
        )?);
    }
    let engine = crate::engine_setup::configured(s, engine)?.build().await?;
    let view = engine.view(&agent)?;
    let vectors = eval_vectors(&engine, &view, &input).await;
    let opts = TurnOptions {
        max_cost: None,
        catalog_budget: a.catalog_budget,
        context_budget: a.context_budget,
        paths: Vec::new(),
    };
    let mut ece = None;
    let recall_at_5 = match input {
        EvalInput::Cases(cases) if a.explain.is_some() => {
            let skill = a.explain.as_deref().unwrap_or_default();
            let why =
                skillbase_insight::explain::explain(&view, &cases, &opts, vectors.as_ref(), skill);
            store.close().await;
            let why = why?;
            if a.json {
                outln!("{}", serde_json::to_string_pretty(&why)?)?;
            } else {
                print_explanation(&why)?;
            }
            return Ok(EXIT_OK);
        }
        EvalInput::Cases(cases) => {
            let report =
                skillbase_insight::eval::evaluate_with(&view, &cases, &opts, vectors.as_ref());
            store.close().await;
            if a.json {
                outln!("{}", serde_json::to_string_pretty(&report)?)?;
            } else {
                print_eval(&report)?;
            }
            if a.fit_confidence {
                let cases: Vec<_> = report.outcomes.iter().map(|o| o.fit.clone()).collect();
                print_fit(&cases)?;
            }
            ece = Some(report.calibration.ece);
            report.overall.recall_at_5
        }
        EvalInput::Graded(set) => {
            let report =
                skillbase_insight::eval::evaluate_graded_with(&view, &set, &opts, vectors.as_ref());
            store.close().await;
            if a.json {
                outln!("{}", serde_json::to_string_pretty(&report)?)?;
            } else {
                print_graded(&report)?;
            }
            report.overall.recall_at_5
        }
    };
    if let Some(min) = a.min_recall_at_5
        && recall_at_5 < min
    {
        eprintln!("recall@5 {recall_at_5:.3} is below the required {min:.3}");
        return Ok(1);
    }
    if let (Some(max), Some(ece)) = (a.max_ece, ece)
        && ece > max
    {
        eprintln!("the confidence's ECE {ece:.3} is above the allowed {max:.3}");
        return Ok(1);
    }
    Ok(EXIT_OK)
}

/// `eval --sweep`: the cases at each library size, a line per size as it is measured.
async fn eval_sweep(
    s: &StoreArgs,
    a: &EvalArgs,
    agent: &AgentName,
    cases: &[skillbase_insight::eval::EvalCase],
    dir: &std::path::Path,
) -> Result<u8> {
    let reader = s.reader()?;
    let source = skillbase_sources::Source::parse(dir, reader.git_base())?;
    let read = reader.read(&source).await?;
    let distractors: Vec<_> = read
        .skills
        .into_iter()
        .map(|sk| sk.into_import().0)
        .collect();
    let (store, engine) = agent_engine(s, agent).await?;
    let tmp = tempfile::tempdir()?;
    let scratch = crate::engine_setup::configured(
        s,
        skillbase_runtime::Engine::builder().sqlite(tmp.path().join("sweep.db")),
    )?
    .build()
    .await?;
    let kept = match &a.keep {
        Some(file) => {
            let kept = skillbase_store::Store::open(&skillbase_store::DbUrl::Sqlite(file.clone()))
                .await
                .with_context(|| format!("--keep {}", file.display()))?;
            let read = scratch.store().copy_vectors_from(&kept).await?;
            eprintln!("sweep: {read} vectors read from {}", file.display());
            Some(kept)
        }
        None => None,
    };
    let sizes = sweep_sizes(&a.sizes, distractors.len());
    let opts = TurnOptions {
        max_cost: None,
        catalog_budget: a.catalog_budget,
        context_budget: a.context_budget,
        paths: Vec::new(),
    };
    eprintln!(
        "sweep: {} cases, {} distractors from {}; stages: {}",
        cases.len(),
        distractors.len(),
        dir.display(),
        scratch.stages()
    );
    if !a.json {
        print_sweep_head()?;
    }
    let mut printed: std::io::Result<()> = Ok(());
    let points = skillbase_insight::sweep::sweep(
        skillbase_insight::sweep::SweepInput {
            source: &engine,
            scratch: &scratch,
            agent,
            cases,
            opts: &opts,
            distractors,
            sizes,
        },
        |p| {
            if !a.json && printed.is_ok() {
                printed = outln!(
                    "{:>11} {:>7} {:>7.3} {:>7.3} {:>7.3} {:>8.3} {:>6.3} {:>6.3} {:>8.1}",
                    p.distractors,
                    p.skills,
                    p.overall.recall_at_1,
                    p.overall.recall_at_5,
                    p.overall.recall_at_10,
                    p.overall.visible,
                    p.calibration.ece,
                    p.calibration.auroc,
                    p.seconds
                );
            }
        },
    )
    .await;
    if let (Some(kept), Some(file)) = (&kept, &a.keep) {
        // Kept even when the sweep stopped early: what was computed is not lost.
        let written = kept.copy_vectors_from(scratch.store()).await?;
        eprintln!("sweep: {written} vectors kept in {}", file.display());
        kept.close().await;
    }
    scratch.close().await;
    engine.close().await;
    store.close().await;
    let points = points?;
    printed?;
    if a.json {
        outln!("{}", serde_json::to_string_pretty(&points)?)?;
    }
    if a.fit_confidence {
        let cases: Vec<_> = points.iter().flat_map(|p| p.fit.iter().cloned()).collect();
        print_fit(&cases)?;
    }
    Ok(EXIT_OK)
}

/// The header of `eval --sweep`'s table.
fn print_sweep_head() -> std::io::Result<()> {
    let head = [
        "distractors",
        "skills",
        "r@1",
        "r@5",
        "r@10",
        "visible",
        "ECE",
        "AUROC",
        "seconds",
    ];
    outln!(
        "{:>11} {:>7} {:>7} {:>7} {:>7} {:>8} {:>6} {:>6} {:>8}",
        head[0],
        head[1],
        head[2],
        head[3],
        head[4],
        head[5],
        head[6],
        head[7],
        head[8]
    )
}

/// `eval --fit-confidence`: the confidence's constants fitted on `cases` (after the report),
/// with the log-loss they reach and the one of the constants built in.
fn print_fit(cases: &[skillbase_insight::calibration::FitCase]) -> std::io::Result<()> {
    let f = skillbase_insight::calibration::fit(cases);
    outln!(
        "confidence fit ({} ranking, {} cases): temperature {:.3}, none_bias {:.3}, none_per_ln_n {:.3}; log-loss {:.4} (built in: {:.4})",
        match (f.fused, f.reranked) {
            (true, true) => "reranked",
            (true, false) => "fused",
            _ => "lexical",
        },
        f.cases,
        f.constants.temperature,
        f.constants.none_bias,
        f.constants.none_per_ln_n,
        f.log_loss,
        f.built_in_log_loss
    )
}

/// The store, and an engine over it configured by `--config`, for an agent that must exist.
async fn agent_engine(
    s: &StoreArgs,
    agent: &AgentName,
) -> Result<(
    std::sync::Arc<skillbase_store::Store>,
    skillbase_runtime::Engine,
)> {
    let store = s
        .open_for_agent(agent, || {
            anyhow!(
                "no agent '{agent}'; create it with `skillbase agent create {agent} --skills all`"
            )
        })
        .await?;
    let engine = crate::engine_setup::configured(
        s,
        skillbase_runtime::Engine::builder().store(store.clone()),
    )?
    .build()
    .await?;
    Ok((store, engine))
}

/// The sizes `--sweep` measures: those given, else
/// [`skillbase_insight::sweep::default_sizes`].
fn sweep_sizes(given: &[usize], pool: usize) -> Vec<usize> {
    if given.is_empty() {
        skillbase_insight::sweep::default_sizes(pool)
    } else {
        given.to_vec()
    }
}

/// The cases (or graded tasks) `eval` reads, parsed.
fn eval_input(a: &EvalArgs) -> Result<EvalInput> {
    let text = read_input(&a.cases)?;
    let Some(rel_path) = &a.relevance else {
        return Ok(EvalInput::Cases(
            skillbase_insight::eval::parse_cases(&text)
                .map_err(|e| anyhow!("{}: {e}", a.cases.display()))?,
        ));
    };
    let rel = read_input(rel_path)?;
    let map = a.id_map.as_deref().map(read_input).transpose()?;
    let files = match &a.id_map {
        Some(m) => format!(
            "{}, {}, {}",
            a.cases.display(),
            rel_path.display(),
            m.display()
        ),
        None => format!("{}, {}", a.cases.display(), rel_path.display()),
    };
    Ok(EvalInput::Graded(
        skillbase_insight::eval::parse_graded(&text, &rel, map.as_deref())
            .map_err(|e| anyhow!("{files}: {e}"))?,
    ))
}

/// The semantic stage's vectors for every message of `input`, when the stage is configured
/// (said on stderr either way it goes).
async fn eval_vectors(
    engine: &skillbase_runtime::Engine,
    view: &skillbase_runtime::AgentView,
    input: &EvalInput,
) -> Option<skillbase_runtime::QueryVectors> {
    let messages: Vec<&str> = match input {
        EvalInput::Cases(cases) => cases.iter().map(|c| c.message.as_str()).collect(),
        EvalInput::Graded(set) => set.cases.iter().map(|c| c.message.as_str()).collect(),
    };
    let started = std::time::Instant::now();
    let vectors = match engine.query_vectors(view, &messages).await {
        Ok(v) => v,
        Err(why) => {
            eprintln!("semantic stage unavailable, ranking lexically: {why}");
            None
        }
    };
    if vectors.is_some() {
        eprintln!(
            "stages: {} ({} messages embedded and skill vectors ready in {:.1?})",
            engine.stages(),
            messages.len(),
            started.elapsed()
        );
    }
    vectors
}

fn print_explanation(e: &skillbase_insight::explain::Explanation) -> std::io::Result<()> {
    let words = |v: &[skillbase_insight::explain::TermScore]| {
        if v.is_empty() {
            return "none".to_owned();
        }
        v.iter()
            .map(|t| format!("{} {:.2}", t.word, t.score))
            .collect::<Vec<_>>()
            .join(", ")
    };
    outln!(
        "{}: first in {} of {} cases that expect it",
        e.skill,
        e.first,
        e.expected
    )?;
    if e.expected == 0 {
        outln!(
            "  no case expects it: add cases with \"expected\": \"{}\" to measure it",
            e.skill
        )?;
    }
    for m in &e.misses {
        outln!("\ncase {}: {}", m.case, m.message)?;
        let rank = m
            .rank
            .map_or("not ranked".to_owned(), |r| format!("rank {r}"));
        match (&m.winner_trigger, m.winner.is_empty()) {
            (_, true) => outln!("  {rank}; nothing ranked above it")?,
            (Some(p), _) => outln!("  {rank}; {} won: its trigger \"{p}\" fired", m.winner)?,
            (None, _) => outln!(
                "  {rank}; {} won (lexical {:.2} vs {:.2}{})",
                m.winner,
                m.lexical.1,
                m.lexical.0,
                m.semantic.map_or(String::new(), |(s, w)| format!(
                    ", similarity {w:.3} vs {s:.3}"
                ))
            )?,
        }
        if let Some((own, winner)) = m.rerank {
            let logit = |l: Option<f32>| l.map_or("not read".to_owned(), |l| format!("{l:.2}"));
            outln!(
                "  the reranker read the message with each: {} {} vs {}",
                m.winner,
                logit(winner),
                logit(own)
            )?;
        }
        if let Some(p) = &m.suppressed_by {
            outln!("  its when_not_to_use phrase \"{p}\" is in the message (lowers its rank)")?;
        }
        outln!("  words that scored for it: {}", words(&m.skill_words))?;
        if !m.winner.is_empty() {
            outln!(
                "  words that decided for {}: {}",
                m.winner,
                words(&m.decided_by)
            )?;
        }
        if !m.lacks.is_empty() {
            outln!("  words it lacks: {}", m.lacks.join(", "))?;
        }
    }
    if !e.taken.is_empty() {
        outln!("\nranked first where another was expected:")?;
        for (case, expected) in &e.taken {
            outln!(
                "  case {case} (expected {})",
                expected.as_deref().unwrap_or("no skill")
            )?;
        }
    }
    Ok(())
}

fn print_graded(r: &skillbase_insight::eval::GradedReport) -> std::io::Result<()> {
    use skillbase_insight::eval::GradedMetrics;
    let skipped = r.tasks - r.overall.tasks;
    outln!(
        "agent {} · {} skills · {} tasks counted, {} skipped",
        r.agent,
        r.skills,
        r.overall.tasks,
        skipped
    )?;
    let row = |name: &str, m: &GradedMetrics| {
        outln!(
            "  {name:<16} {:>5} {:>6.3} {:>6.3} {:>6.3} {:>6.3} {:>7.3} {:>7.3}",
            m.tasks,
            m.hit_at_1,
            m.recall_at_5,
            m.recall_at_10,
            m.recall_at_20,
            m.ndcg_at_10,
            m.visible
        )
    };
    outln!(
        "  {:<16} {:>5} {:>6} {:>6} {:>6} {:>6} {:>7} {:>7}",
        "",
        "tasks",
        "hit@1",
        "r@5",
        "r@10",
        "r@20",
        "nDCG@10",
        "visible"
    )?;
    row("all", &r.overall)?;
    if r.by_task_type.len() > 1 {
        section("by task type")?;
        for (k, m) in &r.by_task_type {
            row(k, m)?;
        }
    }
    let mut missed: Vec<_> = r
        .outcomes
        .iter()
        .filter(|o| o.metrics.recall_at_10 < 1.0)
        .collect();
    missed.sort_by(|a, b| a.metrics.recall_at_10.total_cmp(&b.metrics.recall_at_10));
    if !missed.is_empty() {
        section("tasks missing relevant skills at 10 (worst first, at most 15)")?;
        for o in missed.into_iter().take(15) {
            let first = o.first_relevant.map_or_else(
                || "not ranked".to_owned(),
                |p| format!("first relevant at {p}"),
            );
            outln!(
                "  {}  r@10 {:.3}  {first}  (came first: {})",
                o.task_id,
                o.metrics.recall_at_10,
                o.top.first().map_or("nothing", String::as_str)
            )?;
        }
    }
    if skipped > 0 {
        section("skipped")?;
        for (reason, n) in &r.skipped_by_reason {
            let ids: Vec<&str> = r
                .skipped
                .iter()
                .filter(|s| s.reason.as_str() == *reason)
                .map(|s| s.task_id.as_str())
                .take(8)
                .collect();
            outln!(
                "  {reason} ×{n}: {}{}",
                ids.join(", "),
                if *n > ids.len() { ", …" } else { "" }
            )?;
        }
    }
    Ok(())
}

fn print_eval(r: &skillbase_insight::eval::EvalReport) -> std::io::Result<()> {
    use skillbase_insight::eval::Metrics;
    outln!(
        "agent {} · {} skills · {} cases ({} expecting a skill)",
        r.agent,
        r.skills,
        r.overall.cases,
        r.overall.labelled
    )?;
    let row = |name: &str, m: &Metrics| {
        outln!(
            "  {name:<16} {:>5} {:>8.3} {:>8.3} {:>8.3} {:>8.3} {:>7}",
            m.cases,
            m.recall_at_1,
            m.recall_at_5,
            m.recall_at_10,
            m.visible,
            m.false_triggers
        )
    };
    outln!(
        "  {:<16} {:>5} {:>8} {:>8} {:>8} {:>8} {:>7}",
        "",
        "cases",
        "recall@1",
        "recall@5",
        "@10",
        "visible",
        "false-t"
    )?;
    row("all", &r.overall)?;
    print_calibration(&r.calibration)?;
    section("by kind")?;
    for (k, m) in &r.by_kind {
        row(k, m)?;
    }
    section("by language")?;
    for (k, m) in &r.by_lang {
        row(k, m)?;
    }
    let mut worst: Vec<_> = r
        .by_skill
        .iter()
        .filter(|(_, m)| m.recall_at_5 < 1.0)
        .collect();
    worst.sort_by(|a, b| a.1.recall_at_5.total_cmp(&b.1.recall_at_5));
    if !worst.is_empty() {
        section("skills missed at 5 (worst first, at most 15)")?;
        for (k, m) in worst.into_iter().take(15) {
            row(k, m)?;
        }
    }
    if !r.confused.is_empty() {
        section("most confused (expected → came first)")?;
        for c in r.confused.iter().take(10) {
            outln!("  {} → {}  ×{}", c.expected, c.got, c.count)?;
        }
    }
    if !r.stray_triggers.is_empty() {
        section("triggers that fired on other skills' messages")?;
        for t in r.stray_triggers.iter().take(10) {
            outln!("  {} ({:?})  ×{}", t.skill, t.phrase, t.count)?;
        }
    }
    if !r.unknown_expected.is_empty() {
        outln!(
            "\nexpected skills this agent does not see (counted as misses): {}",
            r.unknown_expected.join(", ")
        )?;
    }
    Ok(())
}

/// The `confidence:` line of `eval`: calibration of the first skill's confidence, and what a
/// harness declining below the threshold would decline and keep.
fn print_calibration(c: &skillbase_insight::calibration::CalibrationReport) -> std::io::Result<()> {
    outln!(
        "  confidence: ECE {:.3}, AUROC {:.3}, Brier {:.3}; below {}: {}/{} no-skill messages declined, {}/{} right first skills kept",
        c.ece,
        c.auroc,
        c.brier,
        c.threshold,
        c.no_skill_declined,
        c.no_skill,
        c.right_first_kept,
        c.right_first
    )
}

fn section(title: &str) -> std::io::Result<()> {
    outln!(
        "\n── {title} {}",
        "─".repeat(72usize.saturating_sub(title.chars().count() + 4))
    )?;
    Ok(())
}

/// Print a resolved turn for a reader: what the model gets, then the activation report.
fn print_turn(
    agent: &AgentName,
    session: &str,
    message: &str,
    ctx: &TurnContext,
) -> std::io::Result<()> {
    let r = &ctx.report;
    print_turn_header(agent, session, message)?;
    print_prompt_parts(ctx)?;
    print_tools(ctx)?;
    section("report")?;
    print_activated(r)?;
    print_catalog_report(&r.catalog)?;
    print_left_aside(r)?;
    outln!(
        "tokens: eager {} · injected {} · catalog {} · tools {} · total {}",
        r.tokens.eager,
        r.tokens.injected,
        r.tokens.catalog,
        r.tokens.tools,
        r.tokens.total
    )?;
    Ok(())
}

/// The turn's first line: agent, session and the message (its first 120 characters).
fn print_turn_header(agent: &AgentName, session: &str, message: &str) -> std::io::Result<()> {
    let shown: String = message.chars().take(120).collect();
    outln!(
        "agent {agent} · session {session} · message: {shown:?}{}",
        if message.chars().count() > 120 {
            "…"
        } else {
            ""
        }
    )?;
    Ok(())
}

/// The texts the model gets: the eager prefix, the bodies injected this turn and the catalog.
fn print_prompt_parts(ctx: &TurnContext) -> std::io::Result<()> {
    let r = &ctx.report;
    section(&format!(
        "prompt prefix: eager skills, same every turn ({} tokens)",
        r.tokens.eager
    ))?;
    match &ctx.prefix {
        Some(p) => out!("{p}")?,
        None => outln!("(none)")?,
    }
    section(&format!(
        "injected for this turn only ({} tokens)",
        r.tokens.injected
    ))?;
    match &ctx.injected {
        Some(p) => out!("{p}")?,
        None => outln!("(none: no trigger matched)")?,
    }
    section(&format!(
        "catalog ({} of {} tokens)",
        r.catalog.tokens, r.catalog.budget
    ))?;
    match &ctx.catalog {
        Some(c) => out!("{c}")?,
        None => outln!("(none: nothing left to load)")?,
    }
    Ok(())
}

/// The tools offered to the model, each with its parameters' schema.
fn print_tools(ctx: &TurnContext) -> std::io::Result<()> {
    section(&format!("tools (~{} tokens)", ctx.report.tokens.tools))?;
    if ctx.tools.is_empty() {
        outln!("(none)")?;
    }
    for t in &ctx.tools {
        outln!("{}: {}", t.name, t.description)?;
        outln!(
            "{}",
            serde_json::to_string_pretty(&t.parameters).unwrap_or_default()
        )?;
    }
    Ok(())
}

/// The skills whose bodies reached the prompt, and those the context budget evicted.
fn print_activated(r: &TurnReport) -> std::io::Result<()> {
    if r.activated.is_empty() {
        outln!("reached the prompt: nothing")?;
    } else {
        outln!("reached the prompt:")?;
        let w = r.activated.iter().map(|a| a.name.len()).max().unwrap_or(4);
        for a in &r.activated {
            outln!(
                "  {:<w$}  {:<32}  rev {:<3}  {} tokens",
                a.name,
                a.reason,
                a.rev,
                a.tokens
            )?;
        }
    }
    if !r.evicted.is_empty() {
        outln!("evicted by the context budget:")?;
        for o in &r.evicted {
            outln!("  {}  ({})", o.name, o.reason)?;
        }
    }
    Ok(())
}

/// What the catalog listed in full, by name only, or left out.
fn print_catalog_report(c: &CatalogReport) -> std::io::Result<()> {
    outln!(
        "catalog: {} in full{}, {} by name only, {} left out",
        c.full.len(),
        if c.ranked {
            " (ranked by relevance)"
        } else {
            ""
        },
        c.name_only.len(),
        c.omitted.len()
    )?;
    for o in &c.name_only {
        outln!("  {}  ({})", o.name, o.reason)?;
    }
    // A few are listed by name; a large library's thousands are counted by reason.
    if c.detail == OmissionDetail::Full || c.omitted.len() <= 20 {
        for o in &c.omitted {
            outln!("  {}  ({})", o.name, o.reason)?;
        }
    } else if !c.omitted.is_empty() {
        let mut by_reason: Vec<(String, usize)> = Vec::new();
        for o in &c.omitted {
            match by_reason.iter_mut().find(|(r, _)| *r == o.reason) {
                Some((_, n)) => *n += 1,
                None => by_reason.push((o.reason.to_string(), 1)),
            }
        }
        for (reason, n) in by_reason {
            outln!("  {n} left out: {reason}")?;
        }
        outln!("  (--omissions full lists them)")?;
    }
    Ok(())
}

/// What was ignored, withheld or offered despite unmet requires, and the warnings.
fn print_left_aside(r: &TurnReport) -> std::io::Result<()> {
    if !r.eager_not_allowed.is_empty() {
        outln!(
            "eager but not allowed (ignored): {}",
            r.eager_not_allowed.join(", ")
        )?;
    }
    if !r.withheld_tools.is_empty() {
        outln!(
            "withheld (not granted to this agent): {}",
            r.withheld_tools
                .iter()
                .map(|o| o.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )?;
    }
    if !r.unmet_requires.is_empty() {
        outln!("offered with unmet requires:")?;
        for o in &r.unmet_requires {
            outln!("  {}  ({})", o.name, o.reason)?;
        }
    }
    if !r.withheld_skills.is_empty() {
        outln!("skills withheld for unmet requires:")?;
        for o in &r.withheld_skills {
            outln!("  {}  ({})", o.name, o.reason)?;
        }
    }
    for o in &r.warnings {
        outln!("warning: {}  ({})", o.name, o.reason)?;
    }
    Ok(())
}
