//! Peers' frontmatter through the engine: `disable-model-invocation` skills never offered to
//! the model, explicit invocation (`/name args`, `$name`) within the allowlist, and activation
//! by the paths a turn names.

use super::*;

const DEPLOY: &str = "disable-model-invocation: true\ntriggers: [deploy]\npaths: [\"src/**\"]\narguments: [env]\n\
                      inputs:\n  type: object\n  properties:\n    env:\n      type: string\n";

fn reason_of(ctx: &TurnContext, name: &str) -> Option<String> {
    ctx.report
        .activated
        .iter()
        .find(|a| a.name == name)
        .map(|a| a.reason.clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explicit_only_skill_is_never_offered_to_the_model() {
    let env = Env::new().await;
    env.put(skill_files("deploy", DEPLOY, "Deploy to $env now.", &[]))
        .await;
    env.put(skill("other", "")).await;
    let a = env.agent("ops", "all", "deploy").await;

    // Its trigger, its paths, the agent's eager list: none places it.
    let ctx = env.turn(&a, "s1", "deploy src/main.rs please").await;
    assert_eq!(reason_of(&ctx, "deploy"), None, "{:#?}", ctx.report);
    assert!(ctx.prefix.is_none());
    assert!(!listed(&ctx, "deploy"));
    assert!(ctx.report.eager_not_allowed.is_empty());
    let omitted: Vec<_> = ctx.report.catalog.omitted.to_vec();
    let o = omitted.iter().find(|o| o.name == "deploy").unwrap();
    assert_eq!(o.reason, skillbase_runtime::EXPLICIT_ONLY);
    // Not in load_skill's names, not callable as skill_deploy.
    assert_eq!(enum_names(&ctx).unwrap(), ["other"]);
    assert!(
        !tool_names(&ctx)
            .iter()
            .any(|t| t.starts_with("skill_deploy"))
    );

    // load_skill refuses it, saying why; search_skills does not find it.
    let e = load_via(&env.rt, &a, "s1", "deploy", None)
        .await
        .unwrap_err();
    assert!(
        matches!(e, RuntimeError::ExplicitOnly(ref n) if n == "deploy"),
        "{e}"
    );
    assert!(
        e.to_string().contains("only when the user invokes it"),
        "{e}"
    );
    let hits = env.rt.search(&a, "deploy application", 10).await.unwrap();
    assert!(hits.iter().all(|h| h.name != "deploy"), "{hits:?}");

    // The user's slash command brings it in, its arguments substituted.
    let ctx = env.turn(&a, "s1", "/deploy prod").await;
    assert_eq!(reason_of(&ctx, "deploy").as_deref(), Some("explicit"));
    let injected = ctx.injected.as_deref().unwrap();
    assert!(injected.contains("Deploy to prod now."), "{injected}");
    // Codex's form too, without arguments.
    let ctx = env.turn(&a, "s2", "time to $deploy").await;
    assert_eq!(reason_of(&ctx, "deploy").as_deref(), Some("explicit"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explicit_invocation_stays_within_the_allowlist() {
    let env = Env::new().await;
    env.put(skill("deploy", "disable-model-invocation: true\n"))
        .await;
    env.put(skill("other", "")).await;
    let a = env.agent("narrow", "other", "none").await;

    let denied = env.turn(&a, "s", "/deploy prod").await;
    let unknown = env.turn(&a, "s", "/no-such-skill prod").await;
    assert!(denied.report.activated.is_empty());
    // The same words whether the skill exists outside the allowlist or not at all.
    let words = |ctx: &TurnContext| {
        ctx.report
            .warnings
            .iter()
            .map(|w| w.reason.to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(words(&denied), words(&unknown));
    assert_eq!(
        words(&denied),
        ["explicit: no skill of that name is available to this agent"]
    );
    // A `$name` outside the allowlist is left alone, silently.
    let ctx = env.turn(&a, "s", "echo $deploy and $other").await;
    assert_eq!(reason_of(&ctx, "other").as_deref(), Some("explicit"));
    assert!(ctx.report.warnings.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paths_activate_skills_and_are_checked() {
    let env = Env::new().await;
    env.put(skill("rust", "paths: [\"src/**/*.rs\"]\n")).await;
    env.put(skill("docs", "paths: \"docs/*.md\"\n")).await;
    let a = env.agent("dev", "all", "none").await;
    let opts = TurnOptions {
        paths: vec!["src/a/lib.rs".into()],
        ..TurnOptions::default()
    };
    let ctx = env.turn_with(&a, "s", "and see docs/intro.md", &opts).await;
    assert_eq!(reason_of(&ctx, "rust").as_deref(), Some("path:src/**/*.rs"));
    assert_eq!(reason_of(&ctx, "docs").as_deref(), Some("path:docs/*.md"));
    let ctx = env.turn(&a, "s", "nothing named here").await;
    assert!(ctx.report.activated.is_empty());

    for bad in [
        vec!["x".to_owned(); 65],
        vec!["a".repeat(2000)],
        vec!["a\u{0}b".to_owned()],
        vec![String::new()],
    ] {
        let opts = TurnOptions {
            paths: bad,
            ..TurnOptions::default()
        };
        let e = env.rt.turn(&a, "s", "hi", &opts).await.unwrap_err();
        assert!(matches!(e, RuntimeError::InvalidTurn(_)), "{e}");
    }
}
