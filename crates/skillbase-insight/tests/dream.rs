//! Dreaming end to end through the engine: sessions call real (embedder) tools and turn
//! messages are recorded; a dream captures the recurring procedure as one skill citing its
//! sessions, within the agent's grants, and rejects what is too rare, already covered or
//! outside the envelope; a learned skill is reverted like any other.

use crate::common::{open_store, req, text};
use serde_json::{Value, json};
use skillbase_format::Bundle;
use skillbase_insight::dream::{self, DreamOptions};
use skillbase_runtime::Engine;
use skillbase_runtime::{CallMode, CallOutcome};
use skillbase_runtime::{ToolDecl, ToolFuture};
use skillbase_store::{AgentName, Author, Scope, Store};
use std::sync::Arc;

const CONFIG: &str = r#"
[agents.shop]
skills = "all"
[agents.shop.grants]
tools = ["orders", "mail", "notes"]
[agents.shop.policies]
record_conversations = true
"#;

fn tool(name: &str, class: &str) -> (ToolDecl, Arc<dyn skillbase_runtime::ToolHandler>) {
    let decl = ToolDecl {
        name: name.into(),
        description: format!("The {name} tool."),
        parameters: json!({"type": "object"}),
        class: class.into(),
        ..ToolDecl::default()
    };
    let n = name.to_owned();
    let h = move |_ctx, args: Value| -> ToolFuture {
        let n = n.clone();
        Box::pin(async move { Ok(json!({"tool": n, "ok": true, "args": args})) })
    };
    (decl, Arc::new(h))
}

async fn engine(dir: &std::path::Path) -> (Arc<Store>, Engine) {
    let store = Arc::new(open_store(&dir.join("skillbase.db")).await);
    let mut b = Engine::builder().store(store.clone()).config_toml(CONFIG);
    for (name, class) in [
        ("lookup_order", "orders"),
        ("check_policy", "orders"),
        ("issue_refund", "orders"),
        ("email_customer", "mail"),
        ("weather", "orders"),
        ("stock_level", "orders"),
    ] {
        let (d, h) = tool(name, class);
        b = b.tool(d, h);
    }
    (store, b.build().await.unwrap())
}

fn shop() -> AgentName {
    AgentName::parse("shop").unwrap()
}

async fn call(e: &Engine, session: &str, tool: &str, args: Value) {
    let o = e
        .call(&shop(), session, tool, args, CallMode::Wait)
        .await
        .unwrap();
    assert!(matches!(o, CallOutcome::Done { .. }), "{tool}: {o:?}");
}

/// A session that refunds order `n`: a message, then the four-step procedure.
async fn refund_session(e: &Engine, session: &str, n: u32) {
    e.turn(
        &shop(),
        session,
        &format!("Customer says order {n} arrived broken, please refund order {n}"),
        &Default::default(),
    )
    .await
    .unwrap();
    call(
        e,
        session,
        "lookup_order",
        json!({"order_id": format!("ord_{n}")}),
    )
    .await;
    call(
        e,
        session,
        "check_policy",
        json!({"order_id": format!("ord_{n}"), "amount_cents": n * 100}),
    )
    .await;
    call(
        e,
        session,
        "issue_refund",
        json!({"order_id": format!("ord_{n}"), "amount_cents": n * 100}),
    )
    .await;
    call(
        e,
        session,
        "email_customer",
        json!({"order_id": format!("ord_{n}"), "template": "refund"}),
    )
    .await;
}

#[tokio::test]
async fn five_sessions_of_one_procedure_become_one_skill_citing_them() {
    let dir = tempfile::tempdir().unwrap();
    let (store, e) = engine(dir.path()).await;
    for i in 0..5 {
        refund_session(&e, &format!("refund-{i}"), 100 + i).await;
    }
    // Unrelated sessions: different calls each time.
    for (i, t) in ["weather", "stock_level", "lookup_order"]
        .iter()
        .enumerate()
    {
        e.turn(
            &shop(),
            &format!("misc-{i}"),
            "what is the weather",
            &Default::default(),
        )
        .await
        .unwrap();
        call(&e, &format!("misc-{i}"), t, json!({"q": i})).await;
    }
    // A dry run writes nothing.
    let before = store.index().len();
    let dry = dream::run(
        &e,
        &shop(),
        &DreamOptions {
            dry_run: true,
            ..DreamOptions::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(dry.created.len(), 1, "{dry:#?}");
    assert_eq!(dry.created[0].status, "dry_run");
    assert_eq!(store.index().len(), before);

    let r = dream::run(&e, &shop(), &DreamOptions::default())
        .await
        .unwrap();
    assert_eq!(r.created.len(), 1, "{r:#?}");
    let l = &r.created[0];
    assert_eq!(l.status, "active");
    assert_eq!(l.evidence.support, 5);
    let mut cited = l.evidence.sessions.clone();
    cited.sort();
    assert_eq!(
        cited,
        ["refund-0", "refund-1", "refund-2", "refund-3", "refund-4"]
    );
    assert!(
        l.evidence
            .calls
            .iter()
            .all(|c| c.len() == 4 && c.iter().all(|id| !id.is_empty()))
    );
    assert_eq!(l.steps.len(), 4, "{:?}", l.steps);
    let mut caps = l.capabilities.clone();
    caps.sort();
    assert_eq!(caps, ["mail", "orders"]);
    assert!(l.name.contains("refund"), "{}", l.name);
    // Stored in the agent's scope, authored by dreaming, active, and loadable.
    let entry = store
        .index()
        .get(&Scope::Agent(shop()), &l.name)
        .cloned()
        .expect("stored");
    assert_eq!(entry.author, format!("agent:shop/dreaming"));
    assert!(entry.body.contains("`issue_refund`"), "{}", entry.body);
    assert!(
        !entry.body.contains("ord_101"),
        "argument values leaked: {}",
        entry.body
    );
    // The report is an event too.
    let events = store
        .events(&skillbase_store::EventFilter {
            kind: Some("dream".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].data["created"][0]["name"], l.name.as_str());

    // Dreaming again: the procedure is covered by the learned skill now, nothing new.
    let again = dream::run(&e, &shop(), &DreamOptions::default())
        .await
        .unwrap();
    assert!(again.created.is_empty(), "{again:#?}");
    assert!(
        again
            .rejected
            .iter()
            .any(|x| x.reason == "already_covered" && x.detail.contains(&l.name)),
        "{again:#?}"
    );

    // Revert undoes it like any other skill: retire it and the next dream may learn it again.
    store
        .set_status(
            &Scope::Agent(shop()),
            &l.name,
            skillbase_store::StatusChange::Retire,
            &Author::Human("ops".into()),
            json!("not wanted"),
        )
        .await
        .unwrap();
    let view = e.view(&shop()).unwrap();
    assert!(
        view.get(&l.name).is_none(),
        "a retired learned skill is still visible"
    );
    e.close().await;
}

#[tokio::test]
async fn what_is_rare_covered_or_outside_the_envelope_is_rejected_with_why() {
    let dir = tempfile::tempdir().unwrap();
    let (store, e) = engine(dir.path()).await;
    // Twice only: too rare.
    for i in 0..2 {
        e.turn(
            &shop(),
            &format!("stock-{i}"),
            "restock please",
            &Default::default(),
        )
        .await
        .unwrap();
        call(
            &e,
            &format!("stock-{i}"),
            "stock_level",
            json!({"sku": "a"}),
        )
        .await;
        call(&e, &format!("stock-{i}"), "weather", json!({"city": "x"})).await;
    }
    // A covered procedure: a skill already names its tools.
    store
        .put(req(
            Scope::Shared,
            Bundle::single(text(
                "refund-procedure",
                "Refund an order. Use when a customer asks for a refund.",
                "",
                "Call `lookup_order`, then `check_policy`, then `issue_refund`, then `email_customer`.",
            ))
            .unwrap(),
        ))
        .await
        .unwrap();
    for i in 0..3 {
        refund_session(&e, &format!("covered-{i}"), i).await;
    }
    let r = dream::run(&e, &shop(), &DreamOptions::default())
        .await
        .unwrap();
    assert!(r.created.is_empty(), "{r:#?}");
    let reasons: Vec<&str> = r.rejected.iter().map(|x| x.reason).collect();
    assert!(reasons.contains(&"already_covered"), "{r:#?}");
    assert!(reasons.contains(&"too_rare"), "{r:#?}");

    // Outside the envelope: the mail class revoked after the sessions ran.
    store
        .set_status(
            &Scope::Shared,
            "refund-procedure",
            skillbase_store::StatusChange::Retire,
            &Author::Human("ops".into()),
            json!("gone"),
        )
        .await
        .unwrap();
    let mut c = store.agent(&shop()).await.unwrap().unwrap().config;
    c.grants.tools.retain(|t| t != "mail");
    store.set_agent(&shop(), &c).await.unwrap();
    let r = dream::run(&e, &shop(), &DreamOptions::default())
        .await
        .unwrap();
    assert!(r.created.is_empty(), "{r:#?}");
    let outside = r
        .rejected
        .iter()
        .find(|x| x.reason == "outside_envelope")
        .unwrap_or_else(|| panic!("{r:#?}"));
    assert!(outside.detail.contains("`mail`"), "{}", outside.detail);
    assert_eq!(outside.support, 3);
    e.close().await;
}

#[tokio::test]
async fn a_procedure_whose_tools_are_gone_is_rejected_naming_each() {
    let dir = tempfile::tempdir().unwrap();
    let (store, e) = engine(dir.path()).await;
    for i in 0..5 {
        refund_session(&e, &format!("gone-{i}"), i).await;
    }
    // (Not closed: that would close the store the next engine shares.)
    e.flush().await;
    drop(e);
    // The same store, two of the procedure's four tools no longer configured.
    let mut b = Engine::builder().store(store).config_toml(CONFIG);
    for (name, class) in [("lookup_order", "orders"), ("email_customer", "mail")] {
        let (d, h) = tool(name, class);
        b = b.tool(d, h);
    }
    let e = b.build().await.unwrap();
    let r = dream::run(&e, &shop(), &DreamOptions::default())
        .await
        .unwrap();
    assert!(r.created.is_empty(), "{r:#?}");
    let gone = r
        .rejected
        .iter()
        .find(|x| x.reason == "unknown_tool")
        .unwrap_or_else(|| panic!("{r:#?}"));
    assert_eq!(
        gone.detail,
        "`check_policy`, `issue_refund` are not configured tools any more"
    );
    e.close().await;
}

#[tokio::test]
async fn since_limits_a_dream_to_newer_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let (_store, e) = engine(dir.path()).await;
    for i in 0..3 {
        refund_session(&e, &format!("old-{i}"), i).await;
    }
    e.flush().await;
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    let cut = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    for i in 3..5 {
        refund_session(&e, &format!("new-{i}"), i).await;
    }
    let dry = |since| DreamOptions {
        since,
        dry_run: true,
        ..DreamOptions::default()
    };
    // Since the cut: the two newer sessions only, too few for a skill.
    let r = dream::run(&e, &shop(), &dry(Some(cut))).await.unwrap();
    assert_eq!((r.sessions, r.created.len()), (2, 0), "{r:#?}");
    // A cut after everything reads nothing; no cut reads all five and finds the procedure.
    let r = dream::run(&e, &shop(), &dry(Some(i64::MAX))).await.unwrap();
    assert_eq!(r.sessions, 0, "{r:#?}");
    let r = dream::run(&e, &shop(), &dry(None)).await.unwrap();
    assert_eq!((r.sessions, r.created.len()), (5, 1), "{r:#?}");
    e.close().await;
}

/// The miner on the labelled scenarios of `eval/dreaming/scenarios.toml`: precision and recall
/// over every scenario, printed per scenario (BENCHMARKS.md keeps the figures), and held to the
/// measured level so a change that loses quality fails.
#[test]
fn the_miner_is_measured_on_the_labelled_scenarios() {
    use skillbase_insight::dream::mine::{LoggedCall, MineOptions, SessionLog, mine};
    #[derive(serde::Deserialize)]
    struct File {
        scenario: Vec<Scenario>,
    }
    #[derive(serde::Deserialize)]
    struct Scenario {
        name: String,
        noise: Noise,
        procedures: Vec<Procedure>,
        expected: Vec<usize>,
    }
    #[derive(serde::Deserialize)]
    struct Noise {
        tools: u64,
        calls: usize,
        sessions: usize,
    }
    #[derive(serde::Deserialize)]
    struct Procedure {
        steps: Vec<String>,
        sessions: usize,
        #[serde(default)]
        interleave: usize,
        #[serde(default)]
        optional_key: Option<String>,
        #[serde(default)]
        repeat: Option<usize>,
    }
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../eval/dreaming/scenarios.toml"
    );
    let file: File = toml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut seed = 7u64;
    let mut rand = move |n: u64| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) % n.max(1)
    };
    let step_call = |spec: &str, v: u64, extra: Option<&str>| {
        let (tool, keys) = spec.trim_end_matches(')').split_once('(').unwrap();
        let mut m = serde_json::Map::new();
        for k in keys.split(',').filter(|k| !k.is_empty()).chain(extra) {
            m.insert(k.into(), json!(format!("v{v}")));
        }
        LoggedCall {
            call_id: format!("c{v}"),
            tool: tool.into(),
            arguments: Value::Object(m),
        }
    };
    let (mut found_all, mut matched_found, mut expected_all, mut expected_hit) = (0, 0, 0, 0);
    let mut table = String::new();
    for sc in &file.scenario {
        let total = sc
            .noise
            .sessions
            .max(sc.procedures.iter().map(|p| p.sessions).max().unwrap_or(0));
        let mut sessions: Vec<SessionLog> = (0..total)
            .map(|i| SessionLog {
                session: format!("s{i}"),
                calls: (0..sc.noise.calls)
                    .map(|_| {
                        let t = rand(sc.noise.tools);
                        step_call(&format!("noise_{t}(arg)"), rand(1000), None)
                    })
                    .collect(),
                messages: Vec::new(),
            })
            .collect();
        for p in &sc.procedures {
            // Distinct sessions, in a shuffled order.
            let mut order: Vec<usize> = (0..total).collect();
            for i in (1..order.len()).rev() {
                order.swap(i, rand(i as u64 + 1) as usize);
            }
            for (n, &s) in order.iter().take(p.sessions).enumerate() {
                for _ in 0..p.repeat.unwrap_or(1) {
                    let mut calls: Vec<LoggedCall> = p
                        .steps
                        .iter()
                        .enumerate()
                        .map(|(k, st)| {
                            let extra = (k == 0 && n % 2 == 0)
                                .then_some(p.optional_key.as_deref())
                                .flatten();
                            step_call(st, rand(1000), extra)
                        })
                        .collect();
                    if n < p.interleave {
                        let at = 1 + rand(calls.len() as u64 - 1) as usize;
                        calls.insert(at, step_call("unrelated_call(x)", rand(1000), None));
                    }
                    let at = rand(sessions[s].calls.len() as u64 + 1) as usize;
                    sessions[s].calls.splice(at..at, calls);
                }
            }
        }
        let m = mine(&sessions, MineOptions::default());
        let holds =
            |pattern: &[String], steps: &[String]| pattern.windows(steps.len()).any(|w| w == steps);
        let texts: Vec<Vec<String>> = m
            .patterns
            .iter()
            .map(|p| {
                p.steps
                    .iter()
                    .map(|s| format!("{}({})", s.tool, s.keys.join(",")))
                    .collect()
            })
            .collect();
        // A pattern is right when it is the first to match an expected procedure (a second
        // pattern for the same procedure is a duplicate: wrong).
        let mut claimed = std::collections::HashSet::new();
        let good = texts
            .iter()
            .filter(|t| {
                sc.expected
                    .iter()
                    .find(|&&e| !claimed.contains(&e) && holds(t, &sc.procedures[e].steps))
                    .is_some_and(|&e| claimed.insert(e))
            })
            .count();
        let hit = sc
            .expected
            .iter()
            .filter(|&&e| texts.iter().any(|t| holds(t, &sc.procedures[e].steps)))
            .count();
        found_all += texts.len();
        matched_found += good;
        expected_all += sc.expected.len();
        expected_hit += hit;
        table.push_str(&format!(
            "{:<62} found {:>2} ({} right)  expected {} (found {})\n",
            sc.name,
            texts.len(),
            good,
            sc.expected.len(),
            hit
        ));
    }
    let precision = matched_found as f64 / found_all.max(1) as f64;
    let recall = expected_hit as f64 / expected_all.max(1) as f64;
    eprintln!(
        "{table}dream miner: precision {precision:.3} ({matched_found}/{found_all}), recall {recall:.3} ({expected_hit}/{expected_all})"
    );
    assert!(precision >= 0.9, "precision {precision:.3}\n{table}");
    assert!(recall >= 0.9, "recall {recall:.3}\n{table}");
}

/// The optional model, played by a local stand-in chat-completions server: its SKILL.md is
/// used when it is a valid skill of the draft's name and envelope; an answer that renames the
/// skill, widens its capabilities or is not a skill is refused (the miner's draft is written,
/// the report says why); the key goes in the header only, never in the prompt.
#[tokio::test]
async fn a_model_writes_the_prose_and_its_answer_is_checked_like_any_write() {
    use skillbase_insight::dream::model::ProseModel;
    use skillbase_runtime::ModelConfig;
    use std::sync::Mutex;
    use tokio::io::AsyncWriteExt;
    const KEY: &str = "model-key-5b1e0f6a9d";
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!(
        "http://{}/v1/chat/completions",
        listener.local_addr().unwrap()
    );
    let answer: Arc<Mutex<String>> = Arc::default();
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let (a, s) = (answer.clone(), seen.clone());
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            let (a, s) = (a.clone(), s.clone());
            tokio::spawn(async move {
                let Some((head, body)) = crate::common::read_request(&mut sock).await else {
                    return;
                };
                s.lock()
                    .unwrap()
                    .push(format!("{head}{}", String::from_utf8_lossy(&body)));
                let content = a.lock().unwrap().clone();
                let body =
                    json!({"choices": [{"message": {"role": "assistant", "content": content}}]})
                        .to_string();
                let resp = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = sock.write_all(resp.as_bytes()).await;
            });
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(open_store(&dir.path().join("skillbase.db")).await);
    let vault = skillbase_runtime::Vault::open(
        store.clone(),
        skillbase_runtime::VaultKey::parse(&"33".repeat(32)).unwrap(),
    )
    .await
    .unwrap();
    vault
        .set(
            "MODEL_KEY",
            "the model's key",
            KEY.as_bytes(),
            &Author::Human("ops".into()),
        )
        .await
        .unwrap();
    let mut b = Engine::builder()
        .store(store.clone())
        .vault(vault.clone())
        .config_toml(CONFIG);
    for (name, class) in [
        ("lookup_order", "orders"),
        ("check_policy", "orders"),
        ("issue_refund", "orders"),
        ("email_customer", "mail"),
    ] {
        let (d, h) = tool(name, class);
        b = b.tool(d, h);
    }
    let e = b.build().await.unwrap();
    for i in 0..4 {
        refund_session(&e, &format!("m-{i}"), 200 + i).await;
    }
    let model = Arc::new(
        ProseModel::new(
            ModelConfig {
                url: url.clone(),
                model: "stand-in".into(),
                key: Some("MODEL_KEY".into()),
                timeout_secs: Some(10),
            },
            Some(vault.clone()),
        )
        .unwrap(),
    );
    let opts = DreamOptions {
        dry_run: true,
        model: Some(model.clone()),
        ..DreamOptions::default()
    };
    // First a dry run to learn the draft's name.
    *answer.lock().unwrap() = "not a skill at all".into();
    let r = dream::run(&e, &shop(), &opts).await.unwrap();
    let l = &r.created[0];
    assert_eq!(l.prose, "draft");
    assert!(
        l.model_refused
            .as_deref()
            .unwrap()
            .contains("not a SKILL.md"),
        "{l:?}"
    );
    let name = l.name.clone();
    let good = format!(
        "```markdown\n---\nname: {name}\ndescription: Refund a damaged order end to end. Use when a customer reports a broken parcel and asks for a refund.\ntriggers:\n  - refund order\ncapabilities:\n  tools:\n    - orders\n    - mail\n---\n# Refund a damaged order\n\n1. Look the order up with `lookup_order`.\n2. Check the refund policy with `check_policy`.\n3. Refund with `issue_refund`.\n4. Tell the customer with `email_customer`.\n```"
    );
    for (bad, why) in [
        (
            good.replace(&format!("name: {name}"), "name: something-else"),
            "renamed",
        ),
        (
            good.replace("    - mail\n", "    - mail\n    - admin\n"),
            "capabilities the draft does not",
        ),
        ("---\nname: x\n---\n".to_owned(), "not a valid skill"),
    ] {
        *answer.lock().unwrap() = bad;
        let r = dream::run(&e, &shop(), &opts).await.unwrap();
        let l = &r.created[0];
        assert_eq!(l.prose, "draft", "{why}");
        assert!(
            l.model_refused.as_deref().unwrap_or("").contains(why),
            "{why}: {l:?}"
        );
    }
    *answer.lock().unwrap() = good;
    let r = dream::run(
        &e,
        &shop(),
        &DreamOptions {
            model: Some(model),
            ..DreamOptions::default()
        },
    )
    .await
    .unwrap();
    let l = &r.created[0];
    assert_eq!(l.prose, "model", "{l:?}");
    assert!(l.model_refused.is_none());
    let entry = store
        .index()
        .get(&Scope::Agent(shop()), &name)
        .cloned()
        .unwrap();
    assert!(entry.body.contains("Look the order up"), "{}", entry.body);
    assert_eq!(entry.author, "agent:shop/dreaming");
    // Dreaming's write went through the scanning gate: its revision has its scan.
    let scans = store.scans(&Scope::Agent(shop()), &name).await.unwrap();
    assert!(scans.iter().any(|x| x.rev == entry.active_rev), "{scans:?}");
    // The key went in the header of every request, never in a prompt or the report.
    let requests = seen.lock().unwrap().clone();
    assert!(requests.len() >= 5);
    for req in &requests {
        let (head, body) = req.split_once("\r\n\r\n").unwrap();
        assert!(
            head.to_lowercase()
                .contains(&format!("authorization: bearer {}", KEY.to_lowercase())),
            "{head}"
        );
        assert!(!body.contains(KEY));
        assert!(
            body.contains("issue_refund"),
            "the evidence is in the prompt"
        );
    }
    assert!(!serde_json::to_string(&r).unwrap().contains(KEY));
    e.close().await;
}

/// A step that ran apart (a slow tool the caller detached, its result waited for) is a step of
/// the procedure where it started, once its `call_finished` says done; a detached call that
/// failed is not a step, so the sessions where it failed do not support the procedure.
#[tokio::test]
async fn calls_that_ran_apart_are_steps_once_they_finished_done() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(open_store(&dir.path().join("skillbase.db")).await);
    let mut b = Engine::builder().store(store.clone()).config_toml(CONFIG);
    for (name, class) in [("lookup_order", "orders"), ("email_customer", "mail")] {
        let (d, h) = tool(name, class);
        b = b.tool(d, h);
    }
    // The slow step: fails for order 0, answers for the others.
    let decl = ToolDecl {
        name: "issue_refund".into(),
        description: "Refund an order (slow).".into(),
        parameters: json!({"type": "object"}),
        class: "orders".into(),
        cost: skillbase_format::Cost::Seconds,
        ..ToolDecl::default()
    };
    let slow = |_ctx, args: Value| -> ToolFuture {
        Box::pin(async move {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            if args["order_id"] == "ord_0" {
                Err(skillbase_runtime::ToolError::new("the bank refused"))
            } else {
                Ok(json!({"refunded": true}))
            }
        })
    };
    let e = b.tool(decl, Arc::new(slow)).build().await.unwrap();
    for n in 0..5u32 {
        let s = format!("apart-{n}");
        e.turn(
            &shop(),
            &s,
            &format!("refund order {n} please"),
            &Default::default(),
        )
        .await
        .unwrap();
        call(
            &e,
            &s,
            "lookup_order",
            json!({"order_id": format!("ord_{n}")}),
        )
        .await;
        let o = e
            .call(
                &shop(),
                &s,
                "issue_refund",
                json!({"order_id": format!("ord_{n}")}),
                CallMode::Detach,
            )
            .await
            .unwrap();
        let CallOutcome::Started { call_id } = o else {
            panic!("a slow call detaches: {o:?}")
        };
        let done = e
            .wait(&call_id, std::time::Duration::from_secs(10))
            .await
            .unwrap();
        assert_eq!(matches!(done, CallOutcome::Done { .. }), n != 0, "{done:?}");
        call(
            &e,
            &s,
            "email_customer",
            json!({"order_id": format!("ord_{n}"), "template": "refund"}),
        )
        .await;
    }
    let r = dream::run(
        &e,
        &shop(),
        &DreamOptions {
            dry_run: true,
            ..DreamOptions::default()
        },
    )
    .await
    .unwrap();
    let three: Vec<_> = r.created.iter().filter(|l| l.steps.len() == 3).collect();
    assert_eq!(three.len(), 1, "{r:#?}");
    assert!(
        three[0].steps[1].starts_with("issue_refund("),
        "{:?}",
        three[0].steps
    );
    let mut cited = three[0].evidence.sessions.clone();
    cited.sort();
    assert_eq!(
        cited,
        ["apart-1", "apart-2", "apart-3", "apart-4"],
        "the failed refund is no step"
    );
    e.close().await;
}
