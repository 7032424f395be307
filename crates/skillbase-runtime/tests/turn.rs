//! Turn resolution, rule by rule, against real SQLite stores in temporary folders: the agent's
//! view, eager skills, triggers, companions, the budgeted catalog, `load_skill`, files on disk,
//! session state across a restart, cadence, the report and its events, and bad input.

use serde_json::json;
use skillbase_format::{Bundle, BundleLimits, Cost};
use skillbase_runtime::{Runtime, RuntimeError, TurnContext, TurnOptions, TurnReport};
use skillbase_store::{
    AgentConfig, AgentName, Author, DbUrl, EventFilter, NameSet, PutRequest, Scope, StatusChange,
    Store, StoreError,
};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

// ---------------------------------------------------------------------------------------------
// Helpers (a store per test, in a temporary folder).

struct Env {
    dir: tempfile::TempDir,
    store: Arc<Store>,
    rt: Runtime,
}

impl Env {
    async fn new() -> Env {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(open_store(&db_path(dir.path())).await);
        let rt = Runtime::new(store.clone(), Some(dir.path().join("ws")));
        Env { dir, store, rt }
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
            seen.entry(n.clone()).or_default().push("catalog.full");
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

fn db_path(dir: &Path) -> PathBuf {
    dir.join("skillbase.db")
}

async fn open_store(path: &Path) -> Store {
    Store::open(&DbUrl::Sqlite(path.to_path_buf()))
        .await
        .unwrap()
}

fn req(scope: Scope, bundle: Bundle) -> PutRequest {
    PutRequest {
        scope,
        bundle,
        author: Author::Human("tester".into()),
        message: "test".into(),
        expect_rev: None,
    }
}

fn set(s: &str) -> NameSet {
    s.parse().unwrap()
}

fn text(name: &str, description: &str, frontmatter: &str, body: &str) -> String {
    format!("---\nname: {name}\ndescription: {description}\n{frontmatter}---\n{body}\n")
}

/// A one-file skill whose body is `BODY-<name>`.
fn skill(name: &str, frontmatter: &str) -> Bundle {
    Bundle::single(text(
        name,
        &format!("Does {name} things. Use when asked about {name}."),
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
        text(
            name,
            &format!("Does {name} things. Use when asked about {name}."),
            frontmatter,
            body,
        )
        .into_bytes(),
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

fn activated(ctx: &TurnContext) -> Vec<(String, String)> {
    ctx.report
        .activated
        .iter()
        .map(|a| (a.name.clone(), a.reason.clone()))
        .collect()
}

fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter()
        .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
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

fn names_of(v: &[skillbase_runtime::turn::Omission]) -> Vec<String> {
    v.iter().map(|o| o.name.to_string()).collect()
}

// ---------------------------------------------------------------------------------------------
// 1. The agent's view.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn view_is_allowlist_and_scope_active_only_and_follows_changes() {
    let env = Env::new().await;
    let support = env
        .agent("support", "alpha, beta, gamma, ops-only", "none")
        .await;
    let ops = env.agent("ops", "all", "none").await;
    for n in ["alpha", "beta", "gamma", "secret"] {
        env.put(skill(n, "")).await;
    }
    // The agent's own `beta` overrides the shared one; another agent's skill is invisible.
    env.put_in(
        Scope::Agent(support.clone()),
        Bundle::single(text(
            "beta",
            "Support's own beta. Use when asked about beta.",
            "",
            "BODY-beta-own",
        ))
        .unwrap(),
    )
    .await;
    env.put_in(Scope::Agent(ops.clone()), skill("ops-only", ""))
        .await;

    let view = env.rt.view(&support).unwrap();
    let names: Vec<&str> = view.skills.iter().map(|s| s.name()).collect();
    assert_eq!(names, ["alpha", "beta", "gamma"]);
    let beta = view.get("beta").unwrap();
    assert_eq!(beta.entry.scope, Scope::Agent(support.clone()));
    assert_eq!(beta.entry.body, "BODY-beta-own");
    assert!(
        Arc::ptr_eq(&view, &env.rt.view(&support).unwrap()),
        "cached while nothing changes"
    );
    let ops_view = env.rt.view(&ops).unwrap();
    let ops_names: Vec<&str> = ops_view.skills.iter().map(|s| s.name()).collect();
    assert_eq!(ops_names, ["alpha", "beta", "gamma", "ops-only", "secret"]);

    let t1 = env.turn(&support, "s1", "hello").await;
    assert_eq!(enum_names(&t1).unwrap(), ["alpha", "beta", "gamma"]);
    assert!(
        catalog(&t1).contains("Support&#x27;s own beta")
            || catalog(&t1).contains("Support's own beta")
    );
    assert!(!listed(&t1, "secret") && !listed(&t1, "ops-only"));

    // A disabled skill disappears on the next turn.
    env.store
        .set_status(
            &Scope::Shared,
            "gamma",
            StatusChange::Disable,
            &Author::Human("tester".into()),
            json!({}),
        )
        .await
        .unwrap();
    assert!(!Arc::ptr_eq(&view, &env.rt.view(&support).unwrap()));
    let t2 = env.turn(&support, "s1", "hello").await;
    assert_eq!(enum_names(&t2).unwrap(), ["alpha", "beta"]);
    assert!(!listed(&t2, "gamma"));

    // So does a retired one.
    env.store
        .set_status(
            &Scope::Shared,
            "alpha",
            StatusChange::Retire,
            &Author::Human("tester".into()),
            json!({}),
        )
        .await
        .unwrap();
    let t3 = env.turn(&support, "s1", "hello").await;
    assert_eq!(enum_names(&t3).unwrap(), ["beta"]);

    // A changed allowlist shows up on the next turn.
    env.agent("support", "beta, gamma, secret", "none").await;
    let t4 = env.turn(&support, "s1", "hello").await;
    assert_eq!(enum_names(&t4).unwrap(), ["beta", "secret"]);

    // Re-enabling brings it back.
    env.store
        .set_status(
            &Scope::Shared,
            "gamma",
            StatusChange::Enable,
            &Author::Human("tester".into()),
            json!({}),
        )
        .await
        .unwrap();
    let t5 = env.turn(&support, "s1", "hello").await;
    assert_eq!(enum_names(&t5).unwrap(), ["beta", "gamma", "secret"]);

    // An agent that may see nothing gets neither catalog nor tools.
    let none = env.agent("nobody-allowed", "none", "none").await;
    let t = env.turn(&none, "s2", "hello").await;
    assert!(t.catalog.is_none() && t.tools.is_empty() && t.prefix.is_none());
    assert_eq!(t.report.tokens.total, 0);
}

// ---------------------------------------------------------------------------------------------
// 2. Eager skills.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eager_skills_are_the_prefix_every_turn_and_nowhere_else() {
    let env = Env::new().await;
    for n in ["policy", "proc", "ghost"] {
        env.put(skill(n, "")).await;
    }
    let a = env.agent("support", "policy, proc", "policy, ghost").await;
    let t1 = env.turn(&a, "s", "first message").await;
    let t2 = env.turn(&a, "s", "a different message entirely").await;
    let prefix = t1.prefix.clone().unwrap();
    assert!(prefix.contains("BODY-policy"));
    assert!(prefix.contains("<skill_content name=\"policy\" revision=\"1\">"));
    assert_eq!(t1.prefix, t2.prefix, "the prefix is the same every turn");
    assert_eq!(activated(&t1), pairs(&[("policy", "eager")]));
    assert_eq!(activated(&t2), pairs(&[("policy", "eager")]));
    assert!(!listed(&t1, "policy"), "not in the catalog");
    assert_eq!(enum_names(&t1).unwrap(), ["proc"], "not in the enum");
    assert!(t1.injected.is_none());
    // A non-allowed eager name is a no-op, and reported.
    assert_eq!(t1.report.eager_not_allowed, ["ghost"]);
    assert!(!prefix.contains("BODY-ghost"));
    assert!(!listed(&t1, "ghost"));
    // load_skill refuses an eager skill.
    let e = env
        .rt
        .load_skill(&a, "s", "policy", None)
        .await
        .unwrap_err();
    assert!(
        matches!(e, RuntimeError::Eager(ref n) if n == "policy"),
        "{e}"
    );
    assert!(e.to_string().contains("already in your context"), "{e}");

    // eager = all: nothing left to load.
    let b = env.agent("all-eager", "policy, proc", "all").await;
    let t = env.turn(&b, "s-b", "hi").await;
    assert!(t.catalog.is_none(), "no catalog when nothing is loadable");
    assert!(t.tools.is_empty(), "no load_skill when nothing is loadable");
    assert_eq!(t.report.tokens.catalog, 0);
    assert_eq!(t.report.tokens.tools, 0);
    assert_eq!(
        activated(&t),
        pairs(&[("policy", "eager"), ("proc", "eager")])
    );
}

// ---------------------------------------------------------------------------------------------
// 3. Triggers.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn triggers_fire_on_whole_words_folded_and_only_this_turn() {
    let env = Env::new().await;
    env.put(skill("gift", "triggers: [presente, Crème Brûlée]\n"))
        .await;
    env.put(skill(
        "cpp",
        "triggers: ['c++', 'a.b*(c)', '[x]?', '^end$']\n",
    ))
    .await;
    env.put(skill("other", "")).await;
    let a = env.agent("shop", "all", "none").await;

    let fires = |ctx: &TurnContext, name: &str| -> Option<String> {
        ctx.report
            .activated
            .iter()
            .find(|x| x.name == name)
            .map(|x| x.reason.clone())
    };
    for msg in [
        "quero um presente",
        "um presénte",
        "UM PRESENTE!",
        "presente",
        "(presente)",
    ] {
        let ctx = env.turn(&a, "s-fire", msg).await;
        assert_eq!(
            fires(&ctx, "gift").as_deref(),
            Some("trigger:presente"),
            "{msg}"
        );
    }
    for msg in ["apresente isto", "presentes", "presenteado", "pre sente"] {
        let ctx = env.turn(&a, "s-no", msg).await;
        assert_eq!(fires(&ctx, "gift"), None, "{msg}");
        assert!(listed(&ctx, "gift"), "{msg}");
    }
    // The reason names the phrase as written.
    let ctx = env.turn(&a, "s-creme", "a CREME   brulee, please").await;
    assert_eq!(fires(&ctx, "gift").as_deref(), Some("trigger:Crème Brûlée"));

    // Injected this turn only: next turn without the word, not injected (and back in the catalog).
    let t1 = env.turn(&a, "s-seq", "um presente para ela").await;
    assert!(t1.injected.as_deref().unwrap().contains("BODY-gift"));
    assert!(t1.prefix.is_none());
    assert!(!listed(&t1, "gift"));
    // Still loadable: loading it keeps it for the rest of the session (pinned), beyond this turn.
    assert!(enum_names(&t1).unwrap().contains(&"gift".to_owned()));
    assert!(t1.report.tokens.injected > 0);
    let t2 = env.turn(&a, "s-seq", "obrigado").await;
    assert!(t2.injected.is_none());
    assert!(t2.report.activated.is_empty());
    assert!(listed(&t2, "gift"));
    assert!(enum_names(&t2).unwrap().contains(&"gift".to_owned()));
    assert_eq!(t2.report.tokens.injected, 0);

    // Regex-looking triggers are literal.
    let ctx = env.turn(&a, "s-re", "help with c++ code").await;
    assert_eq!(fires(&ctx, "cpp").as_deref(), Some("trigger:c++"));
    let ctx = env.turn(&a, "s-re", "literal a.b*(c) here").await;
    assert_eq!(fires(&ctx, "cpp").as_deref(), Some("trigger:a.b*(c)"));
    let ctx = env.turn(&a, "s-re", "is [x]? here").await;
    assert_eq!(fires(&ctx, "cpp").as_deref(), Some("trigger:[x]?"));
    for msg in ["axb c", "abbbc", "x", "c", "end", "the end", "cxx"] {
        let ctx = env.turn(&a, "s-re", msg).await;
        assert_eq!(fires(&ctx, "cpp"), None, "{msg}");
    }

    // Triggers of only punctuation cannot even be stored.
    for t in ["'!!!'", "'...'", "'?!'", "'***'"] {
        let e = env
            .store
            .put(req(
                Scope::Shared,
                skill("punct", &format!("triggers: [{t}]\n")),
            ))
            .await
            .unwrap_err();
        assert!(
            matches!(e, StoreError::InvalidSkill(ref m) if m.contains("no letters or digits")),
            "{t}: {e}"
        );
    }
    assert!(env.rt.view(&a).unwrap().get("punct").is_none());
}

// ---------------------------------------------------------------------------------------------
// 4. Companions.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn companions_travel_one_level_deep_within_the_allowlist() {
    let env = Env::new().await;
    env.put(skill("a", "triggers: [alpha]\ncompanions: [b, secret]\n"))
        .await;
    env.put(skill("b", "companions: [c]\n")).await;
    env.put(skill("c", "")).await;
    env.put(skill("e", "companions: [b]\n")).await;
    env.put(skill("secret", "")).await;

    // With a trigger.
    let x = env.agent("x", "a, b, c", "none").await;
    let view = env.rt.view(&x).unwrap();
    assert_eq!(
        view.companions_not_allowed,
        [("a".to_owned(), "secret".to_owned())]
    );
    let t = env.turn(&x, "s-trig", "alpha please").await;
    assert_eq!(
        activated(&t),
        pairs(&[("a", "trigger:alpha"), ("b", "companion:a")])
    );
    let injected = t.injected.clone().unwrap();
    assert!(injected.contains("BODY-a") && injected.contains("BODY-b"));
    assert!(
        !injected.contains("BODY-c"),
        "a companion's companion does not come"
    );
    assert!(
        !injected.contains("BODY-secret"),
        "never outside the allowlist"
    );
    assert_eq!(t.report.catalog.full, ["c"]);
    // Injected this turn, yet loadable (to keep them for the session); never `secret`.
    assert_eq!(enum_names(&t).unwrap(), ["a", "b", "c"]);

    // With load_skill.
    let l = env.rt.load_skill(&x, "s-load", "a", None).await.unwrap();
    let got: Vec<(String, String)> = l
        .activated
        .iter()
        .map(|a| (a.name.clone(), a.reason.clone()))
        .collect();
    assert_eq!(got, pairs(&[("a", "load"), ("b", "companion:a")]));
    assert!(l.content.contains("BODY-a") && l.content.contains("BODY-b"));
    assert!(l.content.contains("companion_of=\"a\""));
    assert!(!l.content.contains("BODY-c") && !l.content.contains("BODY-secret"));
    // Loading the companion itself later brings its own companion (one level from *it*).
    let l = env.rt.load_skill(&x, "s-load", "b", None).await.unwrap();
    assert!(l.already_active, "b came with a: {l:#?}");
    let l = env.rt.load_skill(&x, "s-load2", "b", None).await.unwrap();
    let got: Vec<(String, String)> = l
        .activated
        .iter()
        .map(|a| (a.name.clone(), a.reason.clone()))
        .collect();
    assert_eq!(got, pairs(&[("b", "load"), ("c", "companion:b")]));

    // With an eager skill: the companion joins the prefix.
    let y = env.agent("y", "e, b, c", "e").await;
    let t = env.turn(&y, "s-eager", "hi").await;
    assert_eq!(
        activated(&t),
        pairs(&[("e", "eager"), ("b", "companion:e")])
    );
    let prefix = t.prefix.clone().unwrap();
    assert!(prefix.contains("BODY-e") && prefix.contains("BODY-b") && !prefix.contains("BODY-c"));
    assert!(t.injected.is_none());
    // The eager skill itself is never loadable; its companion is not eager.
    assert_eq!(enum_names(&t).unwrap(), ["b", "c"]);
    // A companion that is also triggered is not injected twice.
    env.put(skill("b", "companions: [c]\ntriggers: [bee]\n"))
        .await;
    let t = env.turn(&y, "s-eager", "bee").await;
    assert_eq!(
        activated(&t),
        pairs(&[("e", "eager"), ("b", "companion:e")])
    );
    assert!(t.injected.is_none());
}

// ---------------------------------------------------------------------------------------------
// 5. The catalog.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn catalog_lists_the_rest_with_description_and_triggers() {
    let env = Env::new().await;
    env.put(skill_desc(
        "refund",
        "Refunds an order <fully> & safely. Use when asked for a refund.",
        "triggers: [refund, money back]\n",
    ))
    .await;
    env.put(skill("notes", "")).await;
    env.put(skill("hidden", "")).await;
    let a = env.agent("support", "refund, notes", "none").await;
    let t = env.turn(&a, "s", "hello there").await;
    let c = catalog(&t);
    assert!(c.contains("<available_skills>\n") && c.contains("</available_skills>"));
    assert!(c.contains("call load_skill"));
    assert!(c.contains(
        "<skill><name>refund</name><description>Refunds an order &lt;fully&gt; &amp; safely. Use when asked for a refund.</description><triggers>refund, money back</triggers></skill>"
    ), "{c}");
    assert!(c.contains("<skill><name>notes</name><description>Does notes things."));
    assert!(!c.contains("<name>notes</name><description>Does notes things. Use when asked about notes.</description><triggers>"));
    assert!(!listed(&t, "hidden"));
    assert!(!c.contains("search_skills"));
    assert!(!t.report.catalog.ranked);
    assert_eq!(t.report.catalog.full, ["notes", "refund"]);
    assert!(t.report.catalog.name_only.is_empty() && t.report.catalog.omitted.is_empty());
    assert_eq!(tool_names(&t), ["load_skill"]);
    assert_eq!(enum_names(&t).unwrap(), ["notes", "refund"]);
    let p = &t.tools[0].parameters;
    assert_eq!(p["required"], json!(["name"]));
    assert_eq!(p["additionalProperties"], json!(false));
    assert!(t.report.catalog.tokens > 0 && t.report.catalog.tokens <= t.report.catalog.budget);
    assert_eq!(
        t.report.catalog.budget,
        skillbase_store::model::DEFAULT_CATALOG_BUDGET
    );

    // Same input, same output.
    let again = env
        .rt
        .resolve(&a, "hello there", &TurnOptions::default())
        .unwrap();
    assert_eq!(again, t);
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_overflowing_catalog_is_ranked_truncated_and_never_silent() {
    let env = Env::new().await;
    for (n, d) in TOPICS {
        env.put(skill_desc(n, d, "")).await;
    }
    let a = env
        .agent_with("big", "all", "none", |c| c.catalog_budget = 300)
        .await;
    let msg = "please deploy the new version to our kubernetes cluster with helm";
    let mut every: Vec<String> = TOPICS.iter().map(|(n, _)| (*n).to_owned()).collect();
    every.sort();
    // Sweep the budget: the invariants hold at every size, and some sizes show all three tiers.
    let (mut saw_name_only, mut saw_all_tiers, mut saw_unranked) = (false, false, false);
    for budget in (100..=1200).step_by(10) {
        let opts = TurnOptions {
            catalog_budget: Some(budget),
            ..TurnOptions::default()
        };
        let t = env.rt.resolve(&a, msg, &opts).unwrap();
        env.check_accounted(&a, &t.report);
        let r = &t.report;
        if !r.catalog.ranked {
            // Everything fits: no ranking, no search.
            assert_eq!(r.catalog.full, every, "{budget}");
            assert!(!catalog(&t).contains("search_skills"));
            assert_eq!(tool_names(&t), ["load_skill"]);
            saw_unranked = true;
            continue;
        }
        assert!(!saw_unranked, "a larger budget never ranks again");
        assert_eq!(r.catalog.budget, budget);
        assert!(r.catalog.tokens <= budget, "{budget}: {r:#?}");
        assert!(r.catalog.full.len() < TOPICS.len());
        let c = catalog(&t);
        if !r.catalog.full.is_empty() {
            assert!(
                r.catalog.full.contains(&"kubernetes-deploy".to_owned()),
                "the most relevant is shown in full first: {budget}: {r:#?}"
            );
            assert!(
                c.contains("<skill><name>kubernetes-deploy</name><description>Deploys services")
            );
        }
        for n in &r.catalog.full {
            assert!(
                c.contains(&format!("<skill><name>{n}</name><description>")),
                "{n}"
            );
        }
        for o in &r.catalog.name_only {
            assert!(
                c.contains(&format!("<skill><name>{}</name></skill>", o.name)),
                "{o:?}"
            );
            assert!(
                o.reason.contains("name only") && o.reason.contains("relevance rank"),
                "{o:?}"
            );
        }
        for o in &r.catalog.omitted {
            assert!(!listed(&t, &o.name), "{o:?}");
            assert!(
                o.reason.contains("search_skills") && o.reason.contains("relevance rank"),
                "{o:?}"
            );
        }
        // The full entries are the top of the ranking.
        let ranks: Vec<usize> = r
            .catalog
            .name_only
            .iter()
            .chain(&r.catalog.omitted)
            .map(|o| {
                o.rank.expect(
                    "a ranked catalog gives every listed-by-name or left-out skill its rank",
                )
            })
            .collect();
        assert!(
            ranks.iter().all(|&k| k > r.catalog.full.len()),
            "everything not in full ranks below the full entries: {ranks:?}"
        );
        if c.is_empty() {
            assert!(t.catalog.is_none());
        } else {
            assert!(c.contains("call search_skills"), "{budget}");
        }
        assert_eq!(tool_names(&t), ["load_skill", "search_skills"]);
        assert_eq!(
            enum_names(&t).unwrap(),
            every,
            "skills not listed stay loadable"
        );
        assert_eq!(
            r.tokens.total,
            r.tokens.eager + r.tokens.injected + r.tokens.catalog + r.tokens.tools
        );
        saw_name_only |= !r.catalog.name_only.is_empty();
        saw_all_tiers |= !r.catalog.full.is_empty()
            && !r.catalog.name_only.is_empty()
            && !r.catalog.omitted.is_empty();
    }
    assert!(saw_name_only && saw_all_tiers && saw_unranked);

    // The recorded turn, at the agent's own budget.
    let t = env.turn(&a, "s", msg).await;
    assert!(t.report.catalog.ranked);
    assert_eq!(t.report.catalog.budget, 300);
    assert!(
        t.report
            .catalog
            .full
            .contains(&"kubernetes-deploy".to_owned())
    );

    // A different message ranks a different skill first.
    let t = env
        .turn(&a, "s", "review this SQL migration for locks")
        .await;
    assert!(t.report.catalog.full.contains(&"sql-review".to_owned()));

    // search_skills finds what the catalog left out.
    let hits = env.rt.search_skills(&a, "kubernetes helm", 5).unwrap();
    assert_eq!(hits[0].name, "kubernetes-deploy");
    assert!(hits.len() <= 5);
    assert!(env.rt.search_skills(&a, "zzzz qqqq", 5).unwrap().is_empty());
    assert_eq!(
        env.rt.search_skills(&a, "review", 0).unwrap().len(),
        1,
        "limit clamps to 1"
    );
    assert!(env.rt.search_skills(&a, "review", 100).unwrap().len() <= 20);

    // A budget too small for even the catalog's frame: nothing listed, every skill reported.
    let t = env
        .turn_with(
            &a,
            "s",
            msg,
            &TurnOptions {
                catalog_budget: Some(5),
                ..TurnOptions::default()
            },
        )
        .await;
    assert!(t.report.catalog.full.is_empty() && t.report.catalog.name_only.is_empty());
    assert_eq!(t.report.catalog.omitted.len(), TOPICS.len());
    assert!(tool_names(&t).contains(&"search_skills"));
    assert_eq!(enum_names(&t).unwrap().len(), TOPICS.len());
}

// ---------------------------------------------------------------------------------------------
// 6 and 7. load_skill and files.

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_skill_validates_substitutes_and_answers_already_active() {
    let (env, a) = refund_env().await;
    let load = |args: Option<serde_json::Value>| {
        let env = &env;
        let a = &a;
        async move { env.rt.load_skill(a, "s", "refund", args.as_ref()).await }
    };
    // Arguments failing the schema: an actionable error naming the field.
    for (args, field) in [
        (None, "order_id"),
        (Some(json!({})), "order_id"),
        (Some(json!({"order_id": "nope"})), "order_id"),
        (
            Some(json!({"order_id": "ord_1234", "amount_cents": "ten"})),
            "amount_cents",
        ),
        (
            Some(json!({"order_id": "ord_1234", "amount_cents": 0})),
            "amount_cents",
        ),
        (Some(json!({"order_id": "ord_1234", "extra": 1})), "extra"),
    ] {
        let e = load(args.clone()).await.unwrap_err();
        assert!(
            matches!(e, RuntimeError::InvalidArguments { ref name, .. } if name == "refund"),
            "{args:?}: {e}"
        );
        let msg = e.to_string();
        assert!(
            msg.contains(field),
            "{args:?}: the error names {field}: {msg}"
        );
        assert!(msg.contains("refund"), "{msg}");
    }
    let e = load(Some(json!("ord_1234"))).await.unwrap_err();
    assert!(e.to_string().contains("must be a JSON object"), "{e}");
    let e = env
        .rt
        .load_skill(&a, "s", "notes", Some(&json!({"x": 1})))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("declares no inputs"), "{e}");
    // Nothing was recorded by the failed loads.
    let rec = env.store.session("s").await.unwrap();
    assert!(rec.is_none_or(|r| r.activations.is_empty()));

    // A good load: wrapped body, substitution, file list, companions' bodies.
    let l = load(Some(json!({"order_id": "ord_1234", "amount_cents": 500})))
        .await
        .unwrap();
    assert!(!l.already_active);
    assert!(
        l.content
            .starts_with("<skill_content name=\"refund\" revision=\"1\">\n"),
        "{}",
        l.content
    );
    assert!(
        l.content.contains("Refund order ord_1234 for 500 cents."),
        "{}",
        l.content
    );
    assert!(!l.content.contains("{{order_id}}"));
    assert!(l.content.contains("<file>scripts/refund.sh</file>"));
    assert!(l.content.contains("<file>reference.md</file>"));
    assert!(
        l.content.contains(
            "<skill_content name=\"refund-policy\" revision=\"1\" companion_of=\"refund\">"
        )
    );
    assert!(l.content.contains("BODY-refund-policy"));
    assert!(l.content.contains("<skill_arguments>"));
    assert_eq!(
        sorted(l.files.clone()),
        ["reference.md", "scripts/refund.sh"]
    );
    let got: Vec<(String, String)> = l
        .activated
        .iter()
        .map(|a| (a.name.clone(), a.reason.clone()))
        .collect();
    assert_eq!(
        got,
        pairs(&[("refund", "load"), ("refund-policy", "companion:refund")])
    );
    assert!(l.activated.iter().all(|a| a.tokens > 0 && a.rev == 1));
    assert!(l.warnings.is_empty(), "{:?}", l.warnings);

    // Files: under skills/<hash>-<slug>/ in the session's workspace, atomically.
    let dir = l.directory.clone().unwrap();
    assert_eq!(
        dir,
        format!(
            "skills/{}",
            skillbase_runtime::files::skill_dir_name("shared", "refund")
        )
    );
    let slug = dir.strip_prefix("skills/").unwrap();
    let (hash, rest) = slug.split_once('-').unwrap();
    assert_eq!(hash.len(), 8);
    assert!(hash.bytes().all(|b| b.is_ascii_hexdigit()));
    assert_eq!(rest, "refund");
    assert!(l.content.contains(&format!("Skill directory: {dir}")));
    let root = skillbase_runtime::files::session_root(&env.ws(), a.as_str(), "s");
    assert_eq!(
        std::fs::read_to_string(root.join(&dir).join("scripts/refund.sh")).unwrap(),
        "#!/bin/sh\necho refund\n"
    );
    assert!(root.join(&dir).join("SKILL.md").is_file());
    let policy_dir = root
        .join("skills")
        .join(skillbase_runtime::files::skill_dir_name(
            "shared",
            "refund-policy",
        ));
    assert!(
        policy_dir.join("SKILL.md").is_file(),
        "companions' files too"
    );
    let leftovers: Vec<String> = std::fs::read_dir(root.join("skills"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".tmp") || n.starts_with(".old"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    // Second load: already active, without the text (even with other arguments).
    let l2 = load(Some(json!({"order_id": "ord_9999"}))).await.unwrap();
    assert!(l2.already_active);
    assert!(l2.content.contains("already active"), "{}", l2.content);
    assert!(!l2.content.contains("Refund order"));
    assert!(l2.activated.is_empty());
    // Loading the companion alone: already active too.
    let l3 = env
        .rt
        .load_skill(&a, "s", "refund-policy", None)
        .await
        .unwrap();
    assert!(l3.already_active);
    // A new revision is a new load.
    env.put(skill_files(
        "refund",
        &format!("triggers: [refund]\n{REFUND_FM}"),
        "v2 {{order_id}}",
        &[],
    ))
    .await;
    let l4 = load(Some(json!({"order_id": "ord_5555"}))).await.unwrap();
    assert!(!l4.already_active);
    assert!(l4.content.contains("v2 ord_5555") && l4.content.contains("revision=\"2\""));

    // Names not in the enum.
    for bad in ["nonexistent", "secret", "", "REFUND", "refund "] {
        let e = env.rt.load_skill(&a, "s", bad, None).await.unwrap_err();
        assert!(
            matches!(e, RuntimeError::UnknownSkill { .. }),
            "{bad:?}: {e}"
        );
        assert!(e.to_string().contains("load_skill lists"), "{e}");
        assert!(
            bad.is_empty() || !e.to_string().contains(bad),
            "not quoted back: {e}"
        );
    }
    let long = "x".repeat(1_000_000);
    let e = env.rt.load_skill(&a, "s", &long, None).await.unwrap_err();
    assert!(
        e.to_string().len() < 500,
        "the error does not echo a huge name"
    );
    // An eager skill is refused.
    let e = env
        .rt
        .load_skill(&a, "s", "policy", None)
        .await
        .unwrap_err();
    assert!(matches!(e, RuntimeError::Eager(_)), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_write_failures_are_warnings_and_the_text_still_works() {
    let (env, a) = refund_env().await;
    // A workspace root that is a regular file: nothing can be written below it.
    let blocker = env.dir.path().join("not-a-dir");
    std::fs::write(&blocker, "x").unwrap();
    let rt = Runtime::new(env.store.clone(), Some(blocker.clone()));
    let l = rt
        .load_skill(&a, "s", "refund", Some(&json!({"order_id": "ord_1234"})))
        .await
        .unwrap();
    assert!(l.content.contains("Refund order ord_1234"));
    assert!(l.directory.is_none());
    assert!(!l.warnings.is_empty());
    assert!(
        l.warnings
            .iter()
            .any(|w| w.contains("'refund'") && w.contains("not written")),
        "{:?}",
        l.warnings
    );
    // The load was recorded all the same.
    assert!(
        rt.load_skill(&a, "s", "refund", Some(&json!({"order_id": "ord_1234"})))
            .await
            .unwrap()
            .already_active
    );

    // A turn whose triggered skill has files writes them, and reports a failure without failing.
    let t = env.turn(&a, "s-turn", "I need a refund").await;
    assert!(t.report.activated.iter().any(|x| x.name == "refund"));
    let dir = skillbase_runtime::files::session_root(&env.ws(), a.as_str(), "s-turn")
        .join("skills")
        .join(skillbase_runtime::files::skill_dir_name("shared", "refund"));
    assert!(dir.join("scripts/refund.sh").is_file());
    let t = rt
        .turn(&a, "s-turn2", "I need a refund", &TurnOptions::default())
        .await
        .unwrap();
    assert!(t.injected.unwrap().contains("Refund order"));
    assert!(
        t.report
            .warnings
            .iter()
            .any(|o| o.name == "refund" && o.reason.contains("files not written")),
        "{:?}",
        t.report.warnings
    );

    // Without a workspace, nothing is written and nothing is warned.
    let rt = Runtime::new(env.store.clone(), None);
    let l = rt
        .load_skill(
            &a,
            "s-nows",
            "refund",
            Some(&json!({"order_id": "ord_1234"})),
        )
        .await
        .unwrap();
    assert!(l.directory.is_none() && l.warnings.is_empty());
}

// ---------------------------------------------------------------------------------------------
// 8. Session state survives a restart; pinned.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_state_survives_a_restart_and_pinned_is_most_recent_first() {
    let (env, a) = refund_env().await;
    env.rt
        .load_skill(&a, "s1", "refund", Some(&json!({"order_id": "ord_1234"})))
        .await
        .unwrap();
    env.rt.load_skill(&a, "s1", "notes", None).await.unwrap();
    let db = env.db();
    let Env { dir, store, rt } = env;
    drop(rt);
    store.close().await;
    drop(store);

    // A new process: the store reopened from the same SQLite file, a new runtime.
    let store = Arc::new(open_store(&db).await);
    let rt = Runtime::new(store.clone(), Some(dir.path().join("ws")));
    let l = rt
        .load_skill(&a, "s1", "refund", Some(&json!({"order_id": "ord_1234"})))
        .await
        .unwrap();
    assert!(l.already_active, "{l:#?}");
    assert!(
        rt.load_skill(&a, "s1", "notes", None)
            .await
            .unwrap()
            .already_active
    );
    assert!(
        !rt.load_skill(&a, "s2", "notes", None)
            .await
            .unwrap()
            .already_active
    );

    let all = rt.pinned(&a, "s1", 1_000_000).await.unwrap();
    let names: Vec<&str> = all.skills.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(
        names,
        ["notes", "refund-policy", "refund"],
        "most recent first"
    );
    assert!(all.left_out.is_empty());
    assert!(
        all.skills
            .iter()
            .all(|p| p.tokens > 0 && p.content.contains("<skill_content"))
    );
    assert!(all.skills[0].content.contains("BODY-notes"));

    // Within a budget: what did not fit is listed.
    let notes_tokens = all.skills[0].tokens;
    let some = rt.pinned(&a, "s1", notes_tokens).await.unwrap();
    let names: Vec<&str> = some.skills.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["notes"]);
    assert_eq!(some.left_out, ["refund-policy", "refund"]);
    let none = rt.pinned(&a, "s1", 0).await.unwrap();
    assert!(none.skills.is_empty());
    assert_eq!(none.left_out, ["notes", "refund-policy", "refund"]);
    let total: u32 = all.skills.iter().map(|p| p.tokens).sum();
    assert!(
        rt.pinned(&a, "s1", total)
            .await
            .unwrap()
            .left_out
            .is_empty()
    );

    // Unknown sessions, and another agent's session.
    let e = rt.pinned(&a, "no-such-session", 1000).await.unwrap_err();
    assert!(
        matches!(e, RuntimeError::UnknownSession(ref s) if s == "no-such-session"),
        "{e}"
    );
    let other = AgentName::parse("other").unwrap();
    store
        .set_agent(
            &other,
            &AgentConfig {
                skills: set("all"),
                ..AgentConfig::default()
            },
        )
        .await
        .unwrap();
    let e = rt.pinned(&other, "s1", 1000).await.unwrap_err();
    assert!(matches!(e, RuntimeError::UnknownSession(_)), "{e}");
    let e = rt
        .load_skill(&other, "s1", "notes", None)
        .await
        .unwrap_err();
    assert!(
        e.to_string().contains("cannot be used by this agent"),
        "{e}"
    );
    store.close().await;
}

// ---------------------------------------------------------------------------------------------
// 9. Cadence.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_cost_leaves_slower_skills_out_with_the_reason() {
    let env = Env::new().await;
    env.put(skill("fast", "")).await;
    env.put(skill("medium", "cost: seconds\n")).await;
    env.put(skill("slow", "cost: tens_of_seconds\n")).await;
    let a = env.agent("loop", "all", "none").await;
    let opts = |c: Option<Cost>| TurnOptions {
        max_cost: c,
        ..TurnOptions::default()
    };

    let t = env.turn_with(&a, "s", "go", &opts(None)).await;
    assert_eq!(enum_names(&t).unwrap(), ["fast", "medium", "slow"]);
    assert!(t.report.catalog.omitted.is_empty());

    let t = env
        .turn_with(&a, "s", "go", &opts(Some(Cost::Immediate)))
        .await;
    assert_eq!(enum_names(&t).unwrap(), ["fast"]);
    assert_eq!(t.report.catalog.full, ["fast"]);
    assert!(!listed(&t, "medium") && !listed(&t, "slow"));
    assert_eq!(sorted(omitted_names(&t.report)), ["medium", "slow"]);
    for o in &t.report.catalog.omitted {
        assert!(
            o.reason.starts_with("cost:") && o.reason.contains("immediate"),
            "{o:?}"
        );
    }
    let slow = t
        .report
        .catalog
        .omitted
        .iter()
        .find(|o| o.name == "slow")
        .unwrap();
    assert!(slow.reason.contains("tens_of_seconds"), "{slow:?}");
    assert!(!t.report.catalog.ranked);
    assert_eq!(
        tool_names(&t),
        ["load_skill"],
        "no search_skills for a cadence cut"
    );

    let t = env
        .turn_with(&a, "s", "go", &opts(Some(Cost::Seconds)))
        .await;
    assert_eq!(enum_names(&t).unwrap(), ["fast", "medium"]);
    assert_eq!(omitted_names(&t.report), ["slow"]);

    let t = env
        .turn_with(&a, "s", "go", &opts(Some(Cost::TensOfSeconds)))
        .await;
    assert_eq!(enum_names(&t).unwrap(), ["fast", "medium", "slow"]);

    // Only slow skills: no catalog, no tools, all reported.
    let b = env.agent("slow-only", "medium, slow", "none").await;
    let t = env
        .turn_with(&b, "s-b", "go", &opts(Some(Cost::Immediate)))
        .await;
    assert!(t.catalog.is_none() && t.tools.is_empty());
    assert_eq!(sorted(omitted_names(&t.report)), ["medium", "slow"]);
}

// ---------------------------------------------------------------------------------------------
// 10. The report and the events.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn report_reasons_tokens_and_events() {
    let env = Env::new().await;
    env.put(skill("policy", "")).await;
    env.put(skill(
        "refund",
        "triggers: [Money Back]\ncompanions: [ledger]\n",
    ))
    .await;
    env.put(skill("ledger", "")).await;
    for (n, d) in TOPICS.iter().take(12) {
        env.put(skill_desc(n, d, "")).await;
    }
    let a = env.agent("support", "all", "policy").await;
    let view = env.rt.view(&a).unwrap();
    let tok = |n: &str| view.get(n).unwrap().wrapped().1;

    let t = env.turn(&a, "ev", "I want my money back").await;
    let r = &t.report;
    assert_eq!(r.agent, "support");
    assert_eq!(
        activated(&t),
        pairs(&[
            ("policy", "eager"),
            ("refund", "trigger:Money Back"),
            ("ledger", "companion:refund"),
        ])
    );
    for x in &r.activated {
        assert_eq!(x.tokens, tok(&x.name), "{x:?}");
        assert_eq!(x.rev, 1);
    }
    assert!(r.tokens.eager >= tok("policy") && r.tokens.eager <= tok("policy") + 2);
    let inj = tok("refund") + tok("ledger");
    assert!(r.tokens.injected >= inj && r.tokens.injected <= inj + 4);
    assert!(r.tokens.catalog > 0 && r.tokens.tools > 0);
    assert_eq!(
        r.tokens.total,
        r.tokens.eager + r.tokens.injected + r.tokens.catalog + r.tokens.tools
    );
    assert!(r.evicted.is_empty());

    let events = env
        .store
        .events(&EventFilter {
            session: Some("ev".into()),
            ..EventFilter::default()
        })
        .await
        .unwrap();
    let kinds: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "turn",
            "skill_activated",
            "skill_activated",
            "skill_activated"
        ]
    );
    assert!(
        events
            .iter()
            .all(|e| e.session.as_deref() == Some("ev") && e.agent.as_deref() == Some("support"))
    );
    assert_eq!(events[0].data, serde_json::to_value(r).unwrap());
    let act: Vec<(String, String)> = events[1..]
        .iter()
        .map(|e| {
            (
                e.skill.clone().unwrap(),
                e.data["reason"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(act, activated(&t));
    assert!(
        events[1..]
            .iter()
            .all(|e| e.rev == Some(1) && e.scope.as_deref() == Some("shared"))
    );

    // The report is computed after the cut: the eager skill fits, the trigger's unit does not.
    let budget = tok("policy") + 1 + tok("refund") + 1; // no room for the companion
    let t = env
        .turn_with(
            &a,
            "ev2",
            "money back now",
            &TurnOptions {
                context_budget: Some(budget),
                catalog_budget: Some(120),
                ..TurnOptions::default()
            },
        )
        .await;
    let r = &t.report;
    assert_eq!(activated(&t), pairs(&[("policy", "eager")]));
    assert_eq!(names_of(&r.evicted), ["refund", "ledger"]);
    assert!(
        r.evicted[0]
            .reason
            .starts_with("budget: trigger:Money Back"),
        "{:?}",
        r.evicted
    );
    assert!(
        r.evicted[1].reason.starts_with("budget: companion:refund"),
        "{:?}",
        r.evicted
    );
    assert!(t.injected.is_none(), "an evicted body is never shown");
    assert_eq!(r.tokens.injected, 0);
    assert!(r.tokens.eager <= budget);
    assert!(
        !r.activated
            .iter()
            .any(|x| x.name == "refund" || x.name == "ledger")
    );
    let events = env
        .store
        .events(&EventFilter {
            session: Some("ev2".into()),
            ..EventFilter::default()
        })
        .await
        .unwrap();
    let kinds: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "turn",
            "skill_activated",
            "skill_evicted",
            "skill_evicted",
            "catalog_truncated"
        ]
    );
    let evicted: Vec<&str> = events
        .iter()
        .filter(|e| e.kind == "skill_evicted")
        .map(|e| e.skill.as_deref().unwrap())
        .collect();
    assert_eq!(evicted, ["refund", "ledger"]);
    let trunc = events
        .iter()
        .find(|e| e.kind == "catalog_truncated")
        .unwrap();
    assert_eq!(
        trunc.data["omitted"],
        serde_json::to_value(&r.catalog.omitted).unwrap()
    );
    assert_eq!(
        trunc.data["name_only"],
        serde_json::to_value(&r.catalog.name_only).unwrap()
    );
    assert!(events.iter().all(|e| e.session.as_deref() == Some("ev2")));

    // resolve() records nothing.
    let before = env
        .store
        .events(&EventFilter::default())
        .await
        .unwrap()
        .len();
    env.rt
        .resolve(&a, "money back", &TurnOptions::default())
        .unwrap();
    assert_eq!(
        env.store
            .events(&EventFilter::default())
            .await
            .unwrap()
            .len(),
        before
    );
}

// ---------------------------------------------------------------------------------------------
// Bad input.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_agents_and_sessions_are_errors() {
    let (env, a) = refund_env().await;
    let ghost = AgentName::parse("ghost").unwrap();
    let o = TurnOptions::default();
    let e = env.rt.turn(&ghost, "s", "hi", &o).await.unwrap_err();
    assert!(
        matches!(e, RuntimeError::UnknownAgent(ref n) if n == "ghost"),
        "{e}"
    );
    assert_eq!(e.to_string(), "no agent 'ghost'");
    assert!(matches!(
        env.rt.resolve(&ghost, "hi", &o),
        Err(RuntimeError::UnknownAgent(_))
    ));
    assert!(matches!(
        env.rt.load_skill(&ghost, "s", "notes", None).await,
        Err(RuntimeError::UnknownAgent(_))
    ));
    assert!(matches!(
        env.rt.pinned(&ghost, "s", 10).await,
        Err(RuntimeError::UnknownAgent(_))
    ));
    assert!(matches!(
        env.rt.search_skills(&ghost, "x", 5),
        Err(RuntimeError::UnknownAgent(_))
    ));
    // No session was created for the unknown agent.
    assert!(env.store.session("s").await.unwrap().is_none());
    assert!(matches!(
        env.rt.pinned(&a, "never-opened", 10).await,
        Err(RuntimeError::UnknownSession(_))
    ));
    // Invalid session ids.
    for bad in ["", "a/b", "x\ny"] {
        let e = env.rt.turn(&a, bad, "hi", &o).await.unwrap_err();
        assert!(e.to_string().contains("invalid session id"), "{bad:?}: {e}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_context_budget_too_small_for_the_eager_skills_is_reported() {
    let env = Env::new().await;
    env.put(skill("first", "")).await;
    env.put(skill("second", "companions: [third]\n")).await;
    env.put(skill("third", "")).await;
    env.put(skill("loadable", "")).await;
    let a = env
        .agent_with("tiny", "all", "first, second", |c| c.context_budget = 5)
        .await;
    let t = env.turn(&a, "s", "hello").await;
    let r = &t.report;
    assert!(t.prefix.is_none());
    assert!(r.activated.is_empty(), "{r:#?}");
    assert_eq!(names_of(&r.evicted), ["first", "second", "third"]);
    assert!(r.evicted.iter().all(|o| o.reason.starts_with("budget:")));
    assert!(r.evicted[0].reason.contains("eager"));
    assert_eq!(r.tokens.eager, 0);
    // Eager skills stay out of the catalog and the enum even when evicted.
    assert!(
        !listed(&t, "first") && !listed(&t, "second"),
        "{}",
        catalog(&t)
    );
    let en = enum_names(&t).unwrap();
    assert!(
        !en.contains(&"first".to_owned()) && !en.contains(&"second".to_owned()),
        "{en:?}"
    );
    for n in &en {
        // Everything the enum offers can be loaded.
        env.rt.load_skill(&a, "s-load", n, None).await.unwrap();
    }

    // A budget of zero through the options.
    let t = env
        .turn_with(
            &a,
            "s",
            "hello",
            &TurnOptions {
                context_budget: Some(0),
                catalog_budget: Some(0),
                ..TurnOptions::default()
            },
        )
        .await;
    assert!(t.prefix.is_none() && t.injected.is_none());
    // With no room for even one name, the catalog is only the pointer to search_skills.
    let c = t.catalog.as_deref().unwrap_or("");
    assert!(!c.contains("<skill>"), "{c}");
    if !c.is_empty() {
        assert!(c.contains("search_skills"), "{c}");
        assert!(t.tools.iter().any(|x| x.name == "search_skills"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_megabyte_message() {
    let env = Env::new().await;
    env.put(skill("gift", "triggers: [presente]\n")).await;
    for (n, d) in TOPICS {
        env.put(skill_desc(n, d, "")).await;
    }
    let a = env
        .agent_with("big", "all", "none", |c| c.catalog_budget = 200)
        .await;
    let mut msg = "lorem ipsum kubernetes apresente ".repeat(32_000);
    msg.push_str("um presente");
    assert!(msg.len() >= 1_000_000);
    let start = std::time::Instant::now();
    let t = env.turn(&a, "s", &msg).await;
    assert_eq!(activated(&t), pairs(&[("gift", "trigger:presente")]));
    assert!(t.report.catalog.ranked);
    assert!(
        t.report
            .catalog
            .full
            .contains(&"kubernetes-deploy".to_owned())
    );
    assert!(start.elapsed() < std::time::Duration::from_secs(30));
    // Nothing of the message is echoed into the events.
    let events = env
        .store
        .events(&EventFilter {
            session: Some("s".into()),
            ..EventFilter::default()
        })
        .await
        .unwrap();
    assert!(events.iter().all(|e| e.data.to_string().len() < 100_000));
    let hits = env.rt.search_skills(&a, &msg, 5).unwrap();
    assert!(!hits.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn evicted_and_companion_units_are_each_reported_once() {
    // Two triggered skills share a companion; the first unit does not fit, the second does.
    let env = Env::new().await;
    env.put(
        Bundle::single(text(
            "big",
            "A big one. Use when asked about big.",
            "triggers: [big]\ncompanions: [shared-part]\n",
            &"lots of words here ".repeat(200),
        ))
        .unwrap(),
    )
    .await;
    env.put(skill(
        "small",
        "triggers: [small]\ncompanions: [shared-part]\n",
    ))
    .await;
    env.put(skill("shared-part", "triggers: [part]\n")).await;
    env.put(skill("rest", "")).await;
    let a = env.agent("x", "all", "none").await;
    let view = env.rt.view(&a).unwrap();
    let tok = |n: &str| view.get(n).unwrap().wrapped().1;
    let budget = tok("small") + tok("shared-part") + 2;
    assert!(tok("big") > budget);
    let opts = TurnOptions {
        context_budget: Some(budget),
        ..TurnOptions::default()
    };
    let t = env
        .turn_with(&a, "s", "big then small then part", &opts)
        .await;
    assert_eq!(
        activated(&t),
        pairs(&[
            ("small", "trigger:small"),
            ("shared-part", "companion:small")
        ])
    );
    assert_eq!(names_of(&t.report.evicted), ["big"]);
    assert_eq!(t.report.catalog.full, ["rest"]);
}
