//! Turn resolution, rule by rule, against real SQLite stores in temporary folders: the agent's
//! view, eager skills, triggers, companions, the budgeted catalog, `load_skill`, files on disk,
//! session state across a restart, cadence, the report and its events, and bad input.

use crate::common::{db_path, described, open_store, pairs, req, text};
use serde_json::json;
use skillbase_format::{Bundle, BundleLimits, Cost};
use skillbase_runtime::{Engine, RuntimeError, TurnContext, TurnOptions, TurnReport};
use skillbase_store::{
    AgentConfig, AgentName, Author, EventFilter, NameSet, Scope, StatusChange, Store, StoreError,
};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

mod bad_input;
mod catalog;
mod growth;
mod invocation;
mod load_skill;
mod report;
mod requires;
mod session;
mod triggers;
mod view;

// ---------------------------------------------------------------------------------------------
// Helpers (a store per test, in a temporary folder).

/// Level 2 through the engine, the one public way to load a skill (it opens the skill's run).
async fn load_via(
    rt: &Engine,
    agent: &AgentName,
    session: &str,
    name: &str,
    arguments: Option<&serde_json::Value>,
) -> Result<skillbase_runtime::LoadResult, RuntimeError> {
    rt.load(agent, session, name, arguments).await
}

/// An engine over `store`, writing skills' files under `workspace` when given.
async fn engine_over(store: &Arc<Store>, workspace: Option<PathBuf>) -> Engine {
    let mut b = Engine::builder().store(store.clone());
    if let Some(ws) = workspace {
        b = b.workspace(ws);
    }
    b.build().await.unwrap()
}

struct Env {
    dir: tempfile::TempDir,
    store: Arc<Store>,
    rt: Engine,
}

impl Env {
    async fn new() -> Env {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(open_store(&db_path(dir.path())).await);
        let rt = engine_over(&store, Some(dir.path().join("ws"))).await;
        Env { dir, store, rt }
    }

    /// What a turn would show, from the agent's view alone: no session, nothing recorded.
    fn resolve(
        &self,
        agent: &AgentName,
        message: &str,
        opts: &TurnOptions,
    ) -> Result<TurnContext, RuntimeError> {
        let view = self.rt.view(agent)?;
        Ok(skillbase_runtime::resolve(&view, message, opts))
    }

    fn db(&self) -> PathBuf {
        db_path(self.dir.path())
    }

    fn ws(&self) -> PathBuf {
        self.dir.path().join("ws")
    }

    async fn put(&self, b: Bundle) {
        self.put_in(Scope::Shared, b).await;
    }

    async fn put_in(&self, scope: Scope, b: Bundle) {
        self.store.put(req(scope, b)).await.unwrap();
    }

    /// Create an agent; `skills`/`eager` are `all`, `none` or comma-separated names.
    async fn agent(&self, name: &str, skills: &str, eager: &str) -> AgentName {
        self.agent_with(name, skills, eager, |_| {}).await
    }

    async fn agent_with(
        &self,
        name: &str,
        skills: &str,
        eager: &str,
        f: impl FnOnce(&mut AgentConfig),
    ) -> AgentName {
        let a = AgentName::parse(name).unwrap();
        let mut c = AgentConfig {
            skills: set(skills),
            eager: set(eager),
            ..AgentConfig::default()
        };
        f(&mut c);
        self.store.set_agent(&a, &c).await.unwrap();
        a
    }

    async fn turn(&self, agent: &AgentName, session: &str, message: &str) -> TurnContext {
        self.turn_with(agent, session, message, &TurnOptions::default())
            .await
    }

    async fn turn_with(
        &self,
        agent: &AgentName,
        session: &str,
        message: &str,
        opts: &TurnOptions,
    ) -> TurnContext {
        let ctx = self.rt.turn(agent, session, message, opts).await.unwrap();
        // The engine writes a turn's events behind it; the tests read them back.
        self.rt.flush().await;
        self.check_accounted(agent, &ctx.report);
        ctx
    }

    /// Every skill of the view appears exactly once among activated, evicted, catalog.full,
    /// catalog.name_only and catalog.omitted.
    #[track_caller]
    fn check_accounted(&self, agent: &AgentName, r: &TurnReport) {
        let view = self.rt.view(agent).unwrap();
        let mut seen: BTreeMap<String, Vec<&str>> = BTreeMap::new();
        for a in &r.activated {
            seen.entry(a.name.clone()).or_default().push("activated");
        }
        for o in &r.evicted {
            seen.entry(o.name.to_string()).or_default().push("evicted");
        }
        for n in &r.catalog.full {
            seen.entry(n.to_string()).or_default().push("catalog.full");
        }
        for o in &r.catalog.name_only {
            seen.entry(o.name.to_string())
                .or_default()
                .push("catalog.name_only");
        }
        for o in &r.catalog.omitted {
            seen.entry(o.name.to_string())
                .or_default()
                .push("catalog.omitted");
        }
        let expected: Vec<String> = view.skills.iter().map(|s| s.name().to_owned()).collect();
        let got: Vec<String> = seen.keys().cloned().collect();
        assert_eq!(got, expected, "the report accounts for the view: {r:#?}");
        for (name, places) in &seen {
            assert_eq!(
                places.len(),
                1,
                "'{name}' appears exactly once in the report, not in {places:?}: {r:#?}"
            );
        }
    }
}

fn set(s: &str) -> NameSet {
    s.parse().unwrap()
}

/// A one-file skill whose body is `BODY-<name>`.
fn skill(name: &str, frontmatter: &str) -> Bundle {
    Bundle::single(text(
        name,
        &described(name),
        frontmatter,
        &format!("BODY-{name}"),
    ))
    .unwrap()
}

/// A one-file skill with the given description (YAML single-quoted).
fn skill_desc(name: &str, description: &str, frontmatter: &str) -> Bundle {
    let quoted = format!("'{}'", description.replace('\'', "''"));
    Bundle::single(text(name, &quoted, frontmatter, &format!("BODY-{name}"))).unwrap()
}

fn skill_files(name: &str, frontmatter: &str, body: &str, files: &[(&str, &str)]) -> Bundle {
    let mut pairs: Vec<(String, Vec<u8>)> = vec![(
        "SKILL.md".into(),
        text(name, &described(name), frontmatter, body).into_bytes(),
    )];
    for (p, c) in files {
        pairs.push(((*p).into(), c.as_bytes().to_vec()));
    }
    Bundle::from_pairs(pairs, &BundleLimits::default()).unwrap()
}

fn enum_names(ctx: &TurnContext) -> Option<Vec<String>> {
    let t = ctx.tools.iter().find(|t| t.name == "load_skill")?;
    Some(
        t.parameters["properties"]["name"]["enum"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_owned())
            .collect(),
    )
}

fn tool_names(ctx: &TurnContext) -> Vec<&str> {
    ctx.tools.iter().map(|t| t.name.as_str()).collect()
}

/// The catalog's own tools among those a turn offers (`load_skill`, `search_skills`).
fn catalog_tools(ctx: &TurnContext) -> Vec<&str> {
    tool_names(ctx)
        .into_iter()
        .filter(|n| matches!(*n, "load_skill" | "search_skills"))
        .collect()
}

fn activated(ctx: &TurnContext) -> Vec<(String, String)> {
    ctx.report
        .activated
        .iter()
        .map(|a| (a.name.clone(), a.reason.clone()))
        .collect()
}

fn catalog(ctx: &TurnContext) -> &str {
    ctx.catalog.as_deref().unwrap_or("")
}

fn listed(ctx: &TurnContext, name: &str) -> bool {
    catalog(ctx).contains(&format!("<name>{name}</name>"))
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

fn omitted_names(r: &TurnReport) -> Vec<String> {
    r.catalog
        .omitted
        .iter()
        .map(|o| o.name.to_string())
        .collect()
}

fn names_of(v: &[skillbase_runtime::Omission]) -> Vec<String> {
    v.iter().map(|o| o.name.to_string()).collect()
}

// ---------------------------------------------------------------------------------------------
// Fixtures of several topics: the refund skills (`load_skill`, sessions, bad input) and a view of
// many topics (the catalog, the report, bad input).

const REFUND_FM: &str = "companions: [refund-policy]\n\
inputs:\n  type: object\n  properties:\n    order_id:\n      type: string\n      pattern: '^ord_[0-9]{4,}$'\n    amount_cents:\n      type: integer\n      minimum: 1\n  required: [order_id]\n  additionalProperties: false\n";
const REFUND_BODY: &str =
    "Refund order {{order_id}} for {{amount_cents}} cents. Run scripts/refund.sh.";

async fn refund_env() -> (Env, AgentName) {
    let env = Env::new().await;
    env.put(skill_files(
        "refund",
        &format!("triggers: [refund]\n{REFUND_FM}"),
        REFUND_BODY,
        &[
            ("scripts/refund.sh", "#!/bin/sh\necho refund\n"),
            ("reference.md", "# Ref\n"),
        ],
    ))
    .await;
    env.put(skill("refund-policy", "")).await;
    env.put(skill("notes", "")).await;
    env.put(skill("policy", "")).await;
    env.put(skill("secret", "")).await;
    let a = env
        .agent("support", "refund, refund-policy, notes, policy", "policy")
        .await;
    (env, a)
}

const TOPICS: &[(&str, &str)] = &[
    (
        "kubernetes-deploy",
        "Deploys services to a Kubernetes cluster with helm charts and rollbacks.",
    ),
    (
        "sql-review",
        "Reviews a SQL migration for locks, long transactions and missing indexes.",
    ),
    (
        "release-notes",
        "Drafts release notes from merged pull requests and their labels.",
    ),
    (
        "incident-postmortem",
        "Runs a blameless incident post-mortem with a timeline and actions.",
    ),
    (
        "commit-message",
        "Writes a conventional commit message from a staged diff.",
    ),
    (
        "api-triage",
        "Triages a failing HTTP API call from its status code and response body.",
    ),
    (
        "invoice-dispute",
        "Handles a customer's disputed invoice line by line with the billing team.",
    ),
    (
        "pdf-forms",
        "Fills PDF forms from structured data, checking required fields first.",
    ),
    (
        "translation",
        "Translates product copy between languages keeping the brand glossary.",
    ),
    (
        "security-review",
        "Reviews code changes for injection, secrets and unsafe deserialization.",
    ),
    (
        "onboarding",
        "Onboards a new employee: accounts, laptop, first-week schedule.",
    ),
    (
        "travel-booking",
        "Books business travel within the policy: flights, hotels and trains.",
    ),
    (
        "expense-report",
        "Prepares an expense report from receipts with categories and totals.",
    ),
    (
        "data-export",
        "Exports a customer's data as a GDPR subject access request answer.",
    ),
    (
        "password-reset",
        "Resets a user's password after verifying their identity twice.",
    ),
    (
        "shipping-delay",
        "Answers a shipping delay complaint with tracking and a goodwill offer.",
    ),
    (
        "log-search",
        "Searches production logs for an error signature across services.",
    ),
    (
        "cost-report",
        "Summarises cloud spending by team with month over month changes.",
    ),
    (
        "meeting-notes",
        "Turns a meeting transcript into decisions, owners and deadlines.",
    ),
    (
        "contract-check",
        "Checks a supplier contract for auto-renewal and liability clauses.",
    ),
    (
        "tax-form",
        "Explains which tax form a contractor needs for their country.",
    ),
    (
        "benchmark",
        "Runs a performance benchmark and compares it with the last baseline.",
    ),
    (
        "dns-change",
        "Plans a DNS record change with TTLs lowered ahead of time.",
    ),
    (
        "backup-restore",
        "Restores a database backup into a staging environment and verifies it.",
    ),
    (
        "accessibility",
        "Audits a web page for accessibility: contrast, labels and focus order.",
    ),
    (
        "survey-analysis",
        "Analyses survey answers into themes with representative quotes.",
    ),
    (
        "vendor-onboard",
        "Registers a new vendor with tax details and payment terms.",
    ),
    (
        "slo-report",
        "Reports service level objectives, error budgets and burn rates.",
    ),
    (
        "feature-flag",
        "Rolls out a feature flag gradually with a kill switch ready.",
    ),
    (
        "churn-analysis",
        "Investigates why customers cancelled over the last quarter.",
    ),
];
