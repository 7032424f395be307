//! Turn resolution: given an agent's view and the user's message, what the model is shown this
//! turn, and why. Pure and deterministic: no I/O, same input, same output.
//!
//! Order of the prompt: the eager prefix (fixed position, cacheable), then bodies injected for
//! this turn (skills the user invoked, then those the turn's paths and triggers fired, with their
//! companions), then the level-1 catalog. Bodies are cut by the
//! agent's context budget and the catalog by its catalog budget; every skill that did not make it
//! is reported with its reason, and the report is computed after the cut.

//!
//! A turn runs in phases, each in its module: `place` the bodies (eager, then triggered, with
//! companions, under the context budget), plan the `catalog` (candidates, then full / by name /
//! left out under the catalog budget, ranked by relevance when it overflows) and render it, then
//! the tools (`load_skill` over the loadable names, `search_skills` when the catalog was ranked).
//! The [`report`] records every decision.

mod catalog;
mod place;
pub mod report;

/// The reasons a budgeted catalog gives for skills it lists by name only and leaves out.
pub use catalog::{EXPLICIT_ONLY, NAME_ONLY, NOT_LISTED};
pub use report::{
    Activation, CatalogReport, Name, Omission, OmissionDetail, OmissionList, TurnReport,
};

pub use crate::tooldef::ToolDef;
use crate::view::AgentView;
use serde::Serialize;
use skillbase_format::Cost;
use std::sync::Arc;

/// Per-turn options.
#[derive(Debug, Clone, Default)]
pub struct TurnOptions {
    /// Leave out of the catalog and tools every skill slower than this.
    pub max_cost: Option<Cost>,
    /// Override the agent's catalog budget (tokens).
    pub catalog_budget: Option<u32>,
    /// Override the agent's context budget (tokens) for injected bodies.
    pub context_budget: Option<u32>,
    /// File paths the turn works on (the harness's open or edited files): skills whose `paths:`
    /// globs match one are placed, like triggers, with reason `path:<glob>`. Paths written in
    /// the message count too; at most [`crate::paths::MAX_TURN_PATHS`] are read in all.
    pub paths: Vec<String>,
}

/// Everything the harness gives the model this turn.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TurnContext {
    /// Eager bodies: the same every turn while nothing changes (a cacheable prefix).
    pub prefix: Option<String>,
    /// Bodies injected for this turn only (triggers and their companions).
    pub injected: Option<String>,
    /// The level-1 `<available_skills>` catalog.
    pub catalog: Option<String>,
    /// The tools offered this turn: `load_skill` (and `search_skills`), then the dispatcher's offered set.
    pub tools: Vec<ToolDef>,
    /// Why each skill is or is not in front of the model, computed after the cuts.
    pub report: TurnReport,
    /// Skill indices (in the view) loadable this turn.
    #[serde(skip)]
    pub loadable: Arc<[usize]>,
}

/// Tokens of a catalog listing every skill of the view in full (all but the eager and the
/// explicit-only ones): the smallest catalog budget under which no turn ranks, shortens or leaves out an entry.
pub fn full_catalog_tokens(view: &AgentView) -> u32 {
    let entries: u32 = (0..view.skills.len())
        .filter(|&i| !view.is_eager(i) && !view.is_explicit_only(i))
        .map(|i| view.full_tokens[i])
        .sum();
    if entries == 0 {
        return 0;
    }
    catalog::fixed_tokens().0 + entries
}

/// Resolve one turn (the lexical ranking alone).
pub fn resolve(view: &AgentView, message: &str, opts: &TurnOptions) -> TurnContext {
    resolve_with(view, message, opts, None)
}

/// Resolve one turn, with the semantic stage when `semantic` holds the message's vector.
pub fn resolve_with(
    view: &AgentView,
    message: &str,
    opts: &TurnOptions,
    semantic: Option<crate::fusion::SemanticQuery<'_>>,
) -> TurnContext {
    let mut report = TurnReport {
        agent: view.agent.name.to_string(),
        eager_not_allowed: view.eager_not_allowed.clone(),
        ..TurnReport::default()
    };
    // Folded once for the triggers and the ranking.
    let folded = crate::trigger::fold_fast(message);
    let context_budget = opts
        .context_budget
        .unwrap_or(view.agent.config.context_budget);
    let asked = place::Asked {
        folded: &folded,
        invocations: crate::invoke::parse(message),
        // Only a skill's `paths:` globs read them: a view with none skips the message's scan.
        paths: if view.paths.is_empty() {
            Vec::new()
        } else {
            turn_paths(message, &opts.paths)
        },
    };
    let placed = place::bodies(view, &asked, context_budget, &mut report);

    let cands = catalog::candidates(view, &placed.present, &placed.evicted, opts, &mut report);
    let catalog_budget = opts
        .catalog_budget
        .unwrap_or(view.agent.config.catalog_budget);
    let plan = catalog::plan(view, &cands, &folded, semantic, catalog_budget, &mut report);
    let catalog = catalog::render(view, &plan, !cands.skills.is_empty(), report.catalog.ranked);
    report.catalog.full = plan
        .full
        .iter()
        .map(|&i| view.skills[i].name_ref.clone())
        .collect();
    report.catalog.tokens = plan.tokens;
    report.tokens.catalog = plan.tokens;

    requirements(view, &placed.present, &plan, &mut report);
    let (tools, loadable) = tools(view, opts, &mut report);
    report.tokens.total =
        report.tokens.eager + report.tokens.injected + report.tokens.catalog + report.tokens.tools;
    TurnContext {
        prefix: (!placed.prefix.is_empty()).then_some(placed.prefix),
        injected: (!placed.injected.is_empty()).then_some(placed.injected),
        catalog,
        tools,
        report,
        loadable,
    }
}

/// The paths a turn names: those given, then those written in the message, each once, at most
/// [`crate::paths::MAX_TURN_PATHS`].
fn turn_paths<'a>(message: &'a str, given: &'a [String]) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    let found = crate::paths::in_message(message);
    for p in given.iter().map(String::as_str).chain(found) {
        if out.len() >= crate::paths::MAX_TURN_PATHS {
            break;
        }
        if !out.contains(&p) {
            out.push(p);
        }
    }
    out
}

/// Phase 3b: what the report says of `requires:` — each skill in front of the model (a body
/// placed, or a catalog entry) offered although its requirements are unmet, and every skill the
/// agent's policy withholds for them.
fn requirements(view: &AgentView, present: &[bool], plan: &catalog::Plan, report: &mut TurnReport) {
    for &i in &view.unmet {
        if present[i] || plan.full.contains(&i) || plan.name_only.contains(&i) {
            report.unmet_requires.push(Omission {
                name: view.skills[i].name_ref.clone(),
                reason: view.skills[i].unmet.join("; ").into(),
                rank: None,
            });
        }
    }
    for (name, why) in &view.withheld {
        report.withheld_skills.push(Omission {
            name: Name::from(name.as_str()),
            reason: format!("withheld (unmet_requires = withhold): {}", why.join("; ")).into(),
            rank: None,
        });
    }
}

/// Phase 4: `load_skill` over exactly the loadable names — every allowed skill that is not
/// eager, within the cadence (a skill injected this turn stays loadable, so the model can keep
/// it for the rest of the session) — and `search_skills` when the catalog was ranked. The schema
/// depends only on the view and the cadence, so it is built once per view.
fn tools(
    view: &AgentView,
    opts: &TurnOptions,
    report: &mut TurnReport,
) -> (Vec<ToolDef>, Arc<[usize]>) {
    let cached = view.load_tool(opts.max_cost);
    let mut tools = Vec::new();
    let mut tool_tokens = 0;
    if let Some(tool) = &cached.tool {
        tool_tokens += catalog::LOAD_TOOL_BASE_TOKENS + cached.name_tokens;
        tools.push(tool.clone());
        if report.catalog.ranked {
            tool_tokens += catalog::SEARCH_TOOL_TOKENS;
            tools.push(crate::tooldef::search_skills_tool());
        }
    }
    report.tokens.tools = tool_tokens;
    (tools, cached.loadable.clone())
}
