//! `skillbase turn`: the window a newcomer looks through first.

use crate::EXIT_OK;
use crate::store_cmds::StoreArgs;
use anyhow::{Result, anyhow};
use clap::Args;
use skillbase_format::Cost;
use skillbase_runtime::{TurnContext, TurnOptions};
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
    /// Where sessions' files are written (default: $SKILLBASE_HOME/workspaces).
    #[arg(long)]
    workspace: Option<std::path::PathBuf>,
    #[arg(long)]
    json: bool,
}

fn parse_cost(s: &str) -> Result<Cost, String> {
    s.parse()
}

pub async fn turn(s: &StoreArgs, a: TurnArgs) -> Result<u8> {
    let agent = AgentName::parse(&a.agent).map_err(|e| anyhow!(e))?;
    let store = s.open().await?;
    if store.agent_cached(&agent).is_none() {
        return Err(anyhow!(
            "no agent '{agent}'; create it with `skillbase agent create {agent} --skills all`"
        ));
    }
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
    let d = crate::dispatch_cmds::dispatcher(s, store.clone(), Some(workspace)).await?;
    let opts = TurnOptions {
        max_cost: a.max_cost,
        catalog_budget: a.catalog_budget,
        context_budget: a.context_budget,
    };
    let ctx = d.turn(&agent, &session, &a.message, &opts).await?;
    if a.json {
        let v = serde_json::json!({"agent": agent, "session": session, "context": ctx});
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        print_turn(&agent, &session, &a.message, &ctx);
    }
    store.close().await;
    Ok(EXIT_OK)
}

/// Measure routing for an agent: each line of CASES is `{"message": …, "expected": skill or
/// null, "kind": …, "lang": …}`; nothing is written to the store.
#[derive(Args)]
pub struct EvalArgs {
    /// The cases file (JSON Lines).
    cases: std::path::PathBuf,
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
    /// Print the whole report, every case included, as JSON.
    #[arg(long)]
    json: bool,
}

pub async fn eval(s: &StoreArgs, a: EvalArgs) -> Result<u8> {
    let agent = AgentName::parse(&a.agent).map_err(|e| anyhow!(e))?;
    let meta = std::fs::metadata(&a.cases).map_err(|e| anyhow!("{}: {e}", a.cases.display()))?;
    if meta.len() > 256 * 1024 * 1024 {
        return Err(anyhow!(
            "{}: larger than 256 MiB; split the cases",
            a.cases.display()
        ));
    }
    let text =
        std::fs::read_to_string(&a.cases).map_err(|e| anyhow!("{}: {e}", a.cases.display()))?;
    let cases = skillbase_runtime::eval::parse_cases(&text)
        .map_err(|e| anyhow!("{}: {e}", a.cases.display()))?;
    let store = s.open().await?;
    if store.agent_cached(&agent).is_none() {
        return Err(anyhow!(
            "no agent '{agent}'; create it with `skillbase agent create {agent} --skills all`"
        ));
    }
    let rt = skillbase_runtime::Runtime::new(store.clone(), None);
    let view = rt.view(&agent)?;
    let opts = TurnOptions {
        max_cost: None,
        catalog_budget: a.catalog_budget,
        context_budget: a.context_budget,
    };
    let report = skillbase_runtime::eval::evaluate(&view, &cases, &opts);
    store.close().await;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_eval(&report);
    }
    if let Some(min) = a.min_recall_at_5
        && report.overall.recall_at_5 < min
    {
        eprintln!(
            "recall@5 {:.3} is below the required {min:.3}",
            report.overall.recall_at_5
        );
        return Ok(1);
    }
    Ok(EXIT_OK)
}

fn print_eval(r: &skillbase_runtime::eval::EvalReport) {
    use skillbase_runtime::eval::Metrics;
    println!(
        "agent {} · {} skills · {} cases ({} expecting a skill)",
        r.agent, r.skills, r.overall.cases, r.overall.labelled
    );
    let row = |name: &str, m: &Metrics| {
        println!(
            "  {name:<16} {:>5} {:>8.3} {:>8.3} {:>8.3} {:>8.3} {:>7}",
            m.cases, m.recall_at_1, m.recall_at_5, m.recall_at_10, m.visible, m.false_triggers
        );
    };
    println!(
        "  {:<16} {:>5} {:>8} {:>8} {:>8} {:>8} {:>7}",
        "", "cases", "recall@1", "recall@5", "@10", "visible", "false-t"
    );
    row("all", &r.overall);
    section("by kind");
    for (k, m) in &r.by_kind {
        row(k, m);
    }
    section("by language");
    for (k, m) in &r.by_lang {
        row(k, m);
    }
    let mut worst: Vec<_> = r
        .by_skill
        .iter()
        .filter(|(_, m)| m.recall_at_5 < 1.0)
        .collect();
    worst.sort_by(|a, b| a.1.recall_at_5.total_cmp(&b.1.recall_at_5));
    if !worst.is_empty() {
        section("skills missed at 5 (worst first, at most 15)");
        for (k, m) in worst.into_iter().take(15) {
            row(k, m);
        }
    }
    if !r.confused.is_empty() {
        section("most confused (expected → came first)");
        for c in r.confused.iter().take(10) {
            println!("  {} → {}  ×{}", c.expected, c.got, c.count);
        }
    }
    if !r.stray_triggers.is_empty() {
        section("triggers that fired on other skills' messages");
        for t in r.stray_triggers.iter().take(10) {
            println!("  {} ({:?})  ×{}", t.skill, t.phrase, t.count);
        }
    }
    if !r.unknown_expected.is_empty() {
        println!(
            "\nexpected skills this agent does not see (counted as misses): {}",
            r.unknown_expected.join(", ")
        );
    }
}

fn section(title: &str) {
    println!(
        "\n── {title} {}",
        "─".repeat(72usize.saturating_sub(title.chars().count() + 4))
    );
}

fn print_turn(agent: &AgentName, session: &str, message: &str, ctx: &TurnContext) {
    let r = &ctx.report;
    let shown: String = message.chars().take(120).collect();
    println!(
        "agent {agent} · session {session} · message: {shown:?}{}",
        if message.chars().count() > 120 {
            "…"
        } else {
            ""
        }
    );
    section(&format!(
        "prompt prefix: eager skills, same every turn ({} tokens)",
        r.tokens.eager
    ));
    match &ctx.prefix {
        Some(p) => print!("{p}"),
        None => println!("(none)"),
    }
    section(&format!(
        "injected for this turn only ({} tokens)",
        r.tokens.injected
    ));
    match &ctx.injected {
        Some(p) => print!("{p}"),
        None => println!("(none: no trigger matched)"),
    }
    section(&format!(
        "catalog ({} of {} tokens)",
        r.catalog.tokens, r.catalog.budget
    ));
    match &ctx.catalog {
        Some(c) => print!("{c}"),
        None => println!("(none: nothing left to load)"),
    }
    section(&format!("tools (~{} tokens)", r.tokens.tools));
    if ctx.tools.is_empty() {
        println!("(none)");
    }
    for t in &ctx.tools {
        println!("{}: {}", t.name, t.description);
        println!(
            "{}",
            serde_json::to_string_pretty(&t.parameters).unwrap_or_default()
        );
    }
    section("report");
    if r.activated.is_empty() {
        println!("reached the prompt: nothing");
    } else {
        println!("reached the prompt:");
        let w = r.activated.iter().map(|a| a.name.len()).max().unwrap_or(4);
        for a in &r.activated {
            println!(
                "  {:<w$}  {:<32}  rev {:<3}  {} tokens",
                a.name, a.reason, a.rev, a.tokens
            );
        }
    }
    if !r.evicted.is_empty() {
        println!("evicted by the context budget:");
        for o in &r.evicted {
            println!("  {}  ({})", o.name, o.reason);
        }
    }
    println!(
        "catalog: {} in full{}, {} by name only, {} left out",
        r.catalog.full.len(),
        if r.catalog.ranked {
            " (ranked by relevance)"
        } else {
            ""
        },
        r.catalog.name_only.len(),
        r.catalog.omitted.len()
    );
    for o in r.catalog.name_only.iter().chain(&r.catalog.omitted) {
        println!("  {}  ({})", o.name, o.reason);
    }
    if !r.eager_not_allowed.is_empty() {
        println!(
            "eager but not allowed (ignored): {}",
            r.eager_not_allowed.join(", ")
        );
    }
    if !r.withheld_tools.is_empty() {
        println!(
            "withheld (not granted to this agent): {}",
            r.withheld_tools
                .iter()
                .map(|o| o.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    for o in &r.warnings {
        println!("warning: {}  ({})", o.name, o.reason);
    }
    println!(
        "tokens: eager {} · injected {} · catalog {} · tools {} · total {}",
        r.tokens.eager, r.tokens.injected, r.tokens.catalog, r.tokens.tools, r.tokens.total
    );
}
