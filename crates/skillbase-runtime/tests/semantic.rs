//! The semantic stage over an OpenAI-compatible endpoint, played by a local stand-in server: the
//! key comes from the vault and never shows, a paraphrase with no shared word is ranked by
//! meaning, vectors are computed once per revision digest and survive a restart, an edit
//! re-embeds one skill, and a dead or lying endpoint leaves the ranking lexical, never an error.

use crate::common::*;
use serde_json::{Value, json};
use skillbase_format::Bundle;
use skillbase_runtime::Engine;
use skillbase_runtime::TurnOptions;
use skillbase_runtime::{Vault, VaultKey};
use skillbase_store::{Author, Scope};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use tokio::io::AsyncWriteExt;

const KEY: &str = "sk-standin-7f3a9c2e41";

/// Concepts of the stand-in model: a text's vector counts its words per concept, so "get my
/// money back" and "refund" are close although they share no word.
const CONCEPTS: &[&[&str]] = &[
    &[
        "refund",
        "money",
        "back",
        "reimburse",
        "repaid",
        "chargeback",
    ],
    &["deploy", "ship", "release", "rollout", "production"],
    &["invoice", "bill", "billing", "receipt"],
    &["password", "login", "locked", "credentials", "sign"],
    &["sprint", "backlog", "planning", "estimate"],
];

fn concept_vector(text: &str) -> Vec<f32> {
    let mut v = vec![0.0f32; CONCEPTS.len() + 1];
    for w in text
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        match CONCEPTS.iter().position(|c| c.contains(&w)) {
            Some(i) => v[i] += 1.0,
            None => v[CONCEPTS.len()] += 0.05,
        }
    }
    v
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Good,
    /// One vector fewer than texts.
    Short,
    /// 401 with the key echoed back in the body (as some providers do).
    EchoKey,
}

struct StandIn {
    url: String,
    /// Texts embedded, per request.
    requests: Arc<Mutex<Vec<Vec<String>>>>,
    mode: Arc<Mutex<Mode>>,
    unauthorized: Arc<AtomicUsize>,
}

async fn stand_in() -> StandIn {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1/embeddings", listener.local_addr().unwrap());
    let requests: Arc<Mutex<Vec<Vec<String>>>> = Arc::default();
    let mode = Arc::new(Mutex::new(Mode::Good));
    let unauthorized = Arc::new(AtomicUsize::new(0));
    let (r, m, u) = (requests.clone(), mode.clone(), unauthorized.clone());
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            let (r, m, u) = (r.clone(), m.clone(), u.clone());
            tokio::spawn(async move {
                let Some((head, body)) = crate::common::read_request(&mut sock).await else {
                    return;
                };
                let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                let mode = *m.lock().unwrap();
                let authorized = head
                    .lines()
                    .any(|l| l.eq_ignore_ascii_case(&format!("authorization: Bearer {KEY}")));
                let (status, answer) = if !authorized || mode == Mode::EchoKey {
                    u.fetch_add(1, SeqCst);
                    (
                        "401 Unauthorized",
                        json!({"error": {"message": format!("Incorrect API key provided: {KEY}")}}),
                    )
                } else {
                    let texts: Vec<String> = body["input"]
                        .as_array()
                        .map(|a| {
                            a.iter()
                                .filter_map(|t| t.as_str().map(str::to_owned))
                                .collect()
                        })
                        .unwrap_or_default();
                    r.lock().unwrap().push(texts.clone());
                    let mut data: Vec<Value> = texts
                        .iter()
                        .enumerate()
                        .map(|(i, t)| json!({"object": "embedding", "index": i, "embedding": concept_vector(t)}))
                        .collect();
                    if mode == Mode::Short {
                        data.pop();
                    }
                    (
                        "200 OK",
                        json!({"object": "list", "data": data, "model": body["model"]}),
                    )
                };
                let text = answer.to_string();
                let resp = format!(
                    "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                    text.len()
                );
                let _ = sock.write_all(resp.as_bytes()).await;
                let _ = sock.shutdown().await;
            });
        }
    });
    StandIn {
        url,
        requests,
        mode,
        unauthorized,
    }
}

/// Skills whose words the paraphrases below never use.
const SKILLS: &[(&str, &str)] = &[
    (
        "refund-order",
        "Refund a customer order through the payments API.",
    ),
    (
        "deploy-app",
        "Deploy the application with the release pipeline.",
    ),
    (
        "fix-invoice",
        "Correct an invoice whose total or tax is wrong.",
    ),
    (
        "reset-password",
        "Reset a user's password when their login is locked.",
    ),
    ("plan-sprint", "Plan the next sprint from the backlog."),
    (
        "triage-bug",
        "Triage a bug report to reproduce, label and assign it.",
    ),
    ("write-tests", "Write unit tests for a module."),
    (
        "review-sql",
        "Review a SQL migration for locks and data loss.",
    ),
];

async fn put_all(store: &skillbase_store::Store) {
    for (name, description) in SKILLS {
        let t = text(name, description, "", &format!("How to {name}."));
        store
            .put(req(Scope::Shared, Bundle::single(t.clone()).unwrap()))
            .await
            .unwrap();
    }
}

fn config(url: &str) -> String {
    format!(
        "[agents.support]\nskills = \"all\"\ncatalog_budget = 120\n\n[semantic]\nembedder = \"openai\"\nurl = \"{url}\"\nmodel = \"stand-in\"\nkey = \"EMBED_KEY\"\nweight = 0.6\n"
    )
}

async fn engine(dir: &std::path::Path, url: &str) -> Engine {
    engine_with(dir, url, "").await
}

/// [`engine`] with more lines for its `[semantic]` table.
async fn engine_with(dir: &std::path::Path, url: &str, semantic: &str) -> Engine {
    engine_toml(dir, config(url) + semantic).await
}

/// An engine over the store in `dir` configured by `toml`, the endpoint's key in the vault.
async fn engine_toml(dir: &std::path::Path, toml: String) -> Engine {
    let store = Arc::new(open_store(&db_path(dir)).await);
    let vault = Vault::open(store.clone(), VaultKey::parse(&"22".repeat(32)).unwrap())
        .await
        .unwrap();
    if vault.resolve("EMBED_KEY").is_none() {
        vault
            .set(
                "EMBED_KEY",
                "embeddings endpoint",
                KEY.as_bytes(),
                &Author::Human("ops".into()),
            )
            .await
            .unwrap();
    }
    Engine::builder()
        .store(store)
        .vault(vault)
        .config_toml(toml)
        .build()
        .await
        .unwrap()
}

/// Wait for the background fill to finish (at most 10 s).
async fn wait_warm(e: &Engine) {
    let s = e.semantic().expect("a semantic stage").clone();
    for _ in 0..1000 {
        if !s.is_warming() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("the background fill did not finish");
}

fn document_requests(s: &StandIn) -> usize {
    s.requests
        .lock()
        .unwrap()
        .iter()
        .filter(|batch| batch.iter().any(|t| t.contains(':')))
        .map(Vec::len)
        .sum()
}

#[tokio::test]
async fn a_paraphrase_is_ranked_by_meaning_and_vectors_are_kept() {
    let s = stand_in().await;
    let dir = tempfile::tempdir().unwrap();
    {
        let store = open_store(&db_path(dir.path())).await;
        put_all(&store).await;
    }
    let e = engine(dir.path(), &s.url).await;
    let agent = "support".parse().unwrap();
    // Not warm yet: the first turn ranks lexically and says so, while the vectors are computed
    // in the background (a turn never waits for a library's first index).
    let t = e
        .turn(&agent, "s0", "hello", &TurnOptions::default())
        .await
        .unwrap();
    let stages = t.report.catalog.stages.clone().unwrap_or_default();
    assert!(stages.contains("warming up: 0 of 8 skills"), "{stages}");
    wait_warm(&e).await;
    // No word of the message is in refund-order's name, description or body.
    let message = "I would like my money back, it was never repaid";
    let t = e
        .turn(&agent, "s1", message, &TurnOptions::default())
        .await
        .unwrap();
    let c = &t.report.catalog;
    assert!(c.ranked, "the budget is small enough to rank");
    assert_eq!(c.stages.as_deref(), Some("lexical+semantic"));
    let first = &c.shown[0];
    assert_eq!(first.name.as_str(), "refund-order", "{:?}", c.shown);
    assert_eq!(first.rank, 1);
    assert_eq!(
        serde_json::to_value(first.stage).unwrap(),
        json!("semantic")
    );
    // search_skills ranks the same way.
    let hits = e.search(&agent, message, 3).await.unwrap();
    assert_eq!(hits[0].name, "refund-order");
    // Every skill was embedded once, with the key from the vault.
    assert_eq!(document_requests(&s), SKILLS.len());
    assert_eq!(s.unauthorized.load(SeqCst), 0);
    let model = "openai:stand-in@".to_owned() + &s.url + "/doc-v1";
    assert_eq!(
        e.store().vector_count(&model).await.unwrap(),
        SKILLS.len() as i64
    );
    e.close().await;

    // A restart reads the stored vectors: only queries go to the endpoint.
    let e = engine(dir.path(), &s.url).await;
    e.turn(
        &agent,
        "s2",
        "ship it to production",
        &TurnOptions::default(),
    )
    .await
    .unwrap();
    assert_eq!(document_requests(&s), SKILLS.len(), "nothing re-embedded");
    // An edit re-embeds that skill alone.
    let edited = text(
        "plan-sprint",
        "Plan the next sprint from the backlog, with estimates.",
        "",
        "How to plan.",
    );
    e.store()
        .put(req(Scope::Shared, Bundle::single(edited).unwrap()))
        .await
        .unwrap();
    e.turn(
        &agent,
        "s3",
        "estimate the backlog",
        &TurnOptions::default(),
    )
    .await
    .unwrap();
    wait_warm(&e).await;
    assert_eq!(document_requests(&s), SKILLS.len() + 1);
    let t = e
        .turn(
            &agent,
            "s4",
            "estimate the backlog",
            &TurnOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(t.report.catalog.stages.as_deref(), Some("lexical+semantic"));
    e.close().await;
}

/// A sibling of the stage (what a REST scale sweep's scratch engine ranks with) shares the
/// embedder and its key, not the memory: its skills are embedded for it once, kept across
/// scratch stores, and the first engine's stored vectors do not change.
#[tokio::test]
async fn a_sibling_stage_shares_the_models_not_the_memory() {
    let s = stand_in().await;
    let dir = tempfile::tempdir().unwrap();
    {
        let store = open_store(&db_path(dir.path())).await;
        put_all(&store).await;
    }
    let e = engine(dir.path(), &s.url).await;
    let agent: skillbase_store::AgentName = "support".parse().unwrap();
    e.turn(&agent, "s0", "hello", &TurnOptions::default())
        .await
        .unwrap();
    wait_warm(&e).await;
    let stage = e.semantic().unwrap();
    let model = stage.model_id();
    let (embedded, stored) = (
        document_requests(&s),
        e.store().vector_count(&model).await.unwrap(),
    );
    assert_eq!(embedded, SKILLS.len());
    let sibling = Arc::new(stage.sibling());
    assert_eq!(
        (sibling.model_id(), sibling.weight()),
        (model.clone(), stage.weight())
    );
    let message = "I would like my money back, it was never repaid";
    for round in 0..2 {
        let scratch_dir = tempfile::tempdir().unwrap();
        let store = open_store(&db_path(scratch_dir.path())).await;
        put_all(&store).await;
        let scratch = Engine::builder()
            .store(Arc::new(store))
            .config_toml("[agents.support]\nskills = \"all\"\ncatalog_budget = 120\n")
            .semantic(sibling.clone())
            .build()
            .await
            .unwrap();
        let view = scratch.view(&agent).unwrap();
        let vectors = scratch.query_vectors(&view, &[message]).await.unwrap();
        assert!(
            vectors.is_some(),
            "round {round}: the sibling ranks semantically"
        );
        let t = scratch
            .turn(&agent, "s1", message, &TurnOptions::default())
            .await
            .unwrap();
        assert_eq!(t.report.catalog.shown[0].name.as_str(), "refund-order");
        // Embedded once for the sibling (the first scratch store), then read from its memory.
        assert_eq!(document_requests(&s), 2 * SKILLS.len(), "round {round}");
        scratch.close().await;
    }
    assert_eq!(e.store().vector_count(&model).await.unwrap(), stored);
    assert_eq!(s.unauthorized.load(SeqCst), 0);
    e.close().await;
}

#[tokio::test]
async fn a_long_message_is_read_as_passages_and_its_request_decides() {
    let s = stand_in().await;
    let dir = tempfile::tempdir().unwrap();
    {
        let store = open_store(&db_path(dir.path())).await;
        put_all(&store).await;
    }
    let e = engine(dir.path(), &s.url).await;
    let agent = "support".parse().unwrap();
    e.warm_semantic(&agent).await.unwrap().unwrap();
    // A pasted crash log between an opening line and the request; read whole, the message is
    // mostly log (the stand-in reads every word: the log's outweigh the rest), which says
    // nothing of what is wanted.
    let log = "kworker/3:1 pid=4411 segv at 0x7f3a9c ip 00005555 sp 00007ffd error 4\n".repeat(40);
    let message = format!(
        "Here is what the chargeback worker printed.\n{log}\nI would like my money back, it was never repaid."
    );
    let before = s.requests.lock().unwrap().len();
    let hits = e.search(&agent, &message, 3).await.unwrap();
    assert_eq!(hits[0].name, "refund-order", "{hits:?}");
    // The endpoint was asked for the two passages of prose, the log left out.
    let asked = s.requests.lock().unwrap()[before..].concat();
    assert_eq!(
        asked,
        [
            "Here is what the chargeback worker printed.",
            "I would like my money back, it was never repaid."
        ]
    );
    // A turn ranks the same way.
    let t = e
        .turn(&agent, "s1", &message, &TurnOptions::default())
        .await
        .unwrap();
    assert_eq!(t.report.catalog.shown[0].name.as_str(), "refund-order");
    e.close().await;
}

/// A skill whose body has sections, the refund concept in its second section alone (past the
/// words its document text reads), and a skill that speaks of refunds a little in its
/// description.
async fn put_sectioned(store: &skillbase_store::Store) {
    for (name, description) in SKILLS.iter().filter(|(n, _)| *n != "refund-order") {
        let t = text(name, description, "", &format!("How to {name}."));
        store
            .put(req(Scope::Shared, Bundle::single(t).unwrap()))
            .await
            .unwrap();
    }
    let greeting = "Greet the visitor kindly and note the ticket number. ".repeat(15);
    let body = format!(
        "## Greeting\n{greeting}\n\n## Chargeback\nWhen a customer asks for a chargeback, reimburse the card promptly and close the ticket with a short note.\n"
    );
    for (name, description, body) in [
        (
            "customer-desk",
            "Answer customers at the help desk.",
            body.as_str(),
        ),
        (
            "payments-faq",
            "Frequently asked questions about payments and reimburse rules.",
            "Answer questions.",
        ),
    ] {
        let t = text(name, description, "", body);
        store
            .put(req(Scope::Shared, Bundle::single(t).unwrap()))
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn a_skill_is_found_by_a_later_section_when_sections_are_on() {
    let s = stand_in().await;
    let dir = tempfile::tempdir().unwrap();
    {
        let store = open_store(&db_path(dir.path())).await;
        put_sectioned(&store).await;
    }
    let agent = "support".parse().unwrap();
    // No word of the message is in any skill; its meaning (the refund concept) is in
    // customer-desk's second section, and a little in payments-faq's description.
    let message = "I would like my money back, it was never repaid";
    let texts = |s: &StandIn| s.requests.lock().unwrap().concat();
    // Sections off: one vector per skill, and payments-faq is the closest.
    let e = engine_with(dir.path(), &s.url, "sections = false\n").await;
    let r = e.warm_semantic(&agent).await.unwrap().unwrap();
    assert_eq!((r.computed, r.sections_computed, r.failed), (9, 0, None));
    let hits = e.search(&agent, message, 3).await.unwrap();
    assert_eq!(hits[0].name, "payments-faq", "{hits:?}");
    assert!(!texts(&s).iter().any(|t| t.contains("Chargeback")));
    e.close().await;

    // Sections on over the same store: the two sections of customer-desk are embedded, no
    // skill's document again, and customer-desk comes first by its second section.
    let before = texts(&s).len();
    let e = engine_with(dir.path(), &s.url, "sections = true\n").await;
    let r = e.warm_semantic(&agent).await.unwrap().unwrap();
    assert_eq!((r.read, r.computed), (9, 0));
    assert_eq!((r.sections_computed, r.failed), (2, None));
    let asked = texts(&s)[before..].to_vec();
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert!(asked[0].starts_with("customer desk: Greeting. Greet the visitor"));
    assert!(asked[1].starts_with("customer desk: Chargeback. When a customer asks"));
    let hits = e.search(&agent, message, 3).await.unwrap();
    assert_eq!(hits[0].name, "customer-desk", "{hits:?}");
    let t = e
        .turn(&agent, "s1", message, &TurnOptions::default())
        .await
        .unwrap();
    assert_eq!(t.report.catalog.shown[0].name.as_str(), "customer-desk");
    let id = e.semantic().unwrap().section_model_id();
    assert!(id.ends_with("/section-v1"), "{id}");
    assert_eq!(e.store().vector_count(&id).await.unwrap(), 2);
    e.close().await;

    // A restart reads the section vectors; nothing is embedded but the query.
    let before = texts(&s).len();
    let e = engine_with(dir.path(), &s.url, "sections = true\n").await;
    let r = e.warm_semantic(&agent).await.unwrap().unwrap();
    assert_eq!((r.sections_read, r.sections_computed), (2, 0));
    let hits = e.search(&agent, message, 3).await.unwrap();
    assert_eq!(hits[0].name, "customer-desk", "{hits:?}");
    assert_eq!(texts(&s)[before..], [message]);
    e.close().await;

    // Sections are off unless configured (BENCHMARKS.md, "Skills as more than one vector").
    let e = engine_with(dir.path(), &s.url, "").await;
    let r = e.warm_semantic(&agent).await.unwrap().unwrap();
    assert_eq!((r.sections_read, r.sections_computed), (0, 0));
    let hits = e.search(&agent, message, 3).await.unwrap();
    assert_eq!(hits[0].name, "payments-faq", "{hits:?}");
    e.close().await;
}

#[tokio::test]
async fn an_incomplete_matrix_is_rebuilt_only_when_vectors_arrive() {
    let s = stand_in().await;
    let dir = tempfile::tempdir().unwrap();
    {
        let store = open_store(&db_path(dir.path())).await;
        put_sectioned(&store).await;
    }
    let agent = "support".parse().unwrap();
    // The skills' vectors stored, their sections not yet.
    let e = engine_with(dir.path(), &s.url, "sections = false\n").await;
    e.warm_semantic(&agent).await.unwrap().unwrap();
    e.close().await;
    let e = engine_with(dir.path(), &s.url, "sections = true\n").await;
    let sem = e.semantic().unwrap().clone();
    let view = e.view(&agent).unwrap();
    let entries: Vec<_> = view.skills.iter().map(|v| v.entry.clone()).collect();
    sem.load_stored(e.store(), &entries).await.unwrap();
    // Sections missing: the matrix ranks without them, and turns meanwhile share one build.
    let first = sem.matrix(&view);
    assert_eq!((first.missing(), first.sections_missing), (0, 2));
    assert!(std::sync::Arc::ptr_eq(&first, &sem.matrix(&view)));
    assert!(view.semantic.get().is_none());
    // The sections arrive: the next matrix is a new, complete one, and kept for the view.
    let r = sem.fill(e.store(), &entries).await.unwrap();
    assert_eq!(r.sections_computed, 2);
    let complete = sem.matrix(&view);
    assert!(!std::sync::Arc::ptr_eq(&first, &complete));
    assert_eq!((complete.missing(), complete.sections_missing), (0, 0));
    assert!(std::sync::Arc::ptr_eq(
        view.semantic.get().unwrap(),
        &complete
    ));
    assert!(view.semantic_partial.lock().unwrap().is_none());
    e.close().await;
}

#[tokio::test]
async fn a_long_model_name_is_stored_under_an_id_that_fits_with_sections_on() {
    let s = stand_in().await;
    let dir = tempfile::tempdir().unwrap();
    {
        let store = open_store(&db_path(dir.path())).await;
        put_sectioned(&store).await;
    }
    let agent = "support".parse().unwrap();
    // The embedder's id is `openai:MODEL@URL`: at 191 characters its document id fits the
    // store's 200 and its section id did not; at 400 neither did.
    let around = "openai:@".len() + s.url.len();
    for len in [191, 400] {
        let model = "m".repeat(len - around);
        let toml =
            config(&s.url).replace("\"stand-in\"", &format!("\"{model}\"")) + "sections = true\n";
        let e = engine_toml(dir.path(), toml.clone()).await;
        let r = e.warm_semantic(&agent).await.unwrap().unwrap();
        assert_eq!((r.computed, r.sections_computed, r.failed), (9, 2, None));
        let sem = e.semantic().unwrap();
        let (doc, section) = (sem.model_id(), sem.section_model_id());
        assert!(doc.chars().count() <= 200 && section.chars().count() <= 200);
        assert!(section.ends_with("/section-v1"), "{section}");
        assert_eq!(e.store().vector_count(&section).await.unwrap(), 2);
        e.close().await;
        // The same id from run to run: a restart reads every vector back.
        let e = engine_toml(dir.path(), toml).await;
        let r = e.warm_semantic(&agent).await.unwrap().unwrap();
        assert_eq!((r.read, r.sections_read), (9, 2));
        assert_eq!((r.computed, r.sections_computed), (0, 0));
        e.close().await;
    }
}

#[tokio::test]
async fn a_failing_endpoint_leaves_the_ranking_lexical_and_the_key_unseen() {
    let s = stand_in().await;
    let dir = tempfile::tempdir().unwrap();
    {
        let store = open_store(&db_path(dir.path())).await;
        put_all(&store).await;
    }
    let e = engine(dir.path(), &s.url).await;
    let agent = "support".parse().unwrap();
    for mode in [Mode::EchoKey, Mode::Short] {
        *s.mode.lock().unwrap() = mode;
        let t = e
            .turn(&agent, "s1", "refund my order", &TurnOptions::default())
            .await
            .unwrap();
        let stages = t.report.catalog.stages.clone().unwrap_or_default();
        assert!(
            stages.starts_with("lexical (semantic stage unavailable:"),
            "{stages}"
        );
        // The lexical ranking still answers.
        assert_eq!(t.report.catalog.shown[0].name.as_str(), "refund-order");
        let report = serde_json::to_string(&t.report).unwrap();
        assert!(
            !report.contains(KEY) && !report.contains("7f3a9c2e41"),
            "{report}"
        );
        let hits = e.search(&agent, "refund my order", 3).await.unwrap();
        assert_eq!(hits[0].name, "refund-order");
    }
    // The events recorded nothing of the key either.
    e.close().await;
    let store = open_store(&db_path(dir.path())).await;
    let events = store
        .events(&skillbase_store::EventFilter::default())
        .await
        .unwrap();
    let all = serde_json::to_string(&events).unwrap();
    assert!(!all.contains(KEY) && !all.contains("7f3a9c2e41"));

    // An endpoint that is not there at all: same, lexical.
    let e = engine(dir.path(), "http://127.0.0.1:9/v1/embeddings").await;
    let t = e
        .turn(&agent, "s9", "refund my order", &TurnOptions::default())
        .await
        .unwrap();
    assert!(
        t.report
            .catalog
            .stages
            .as_deref()
            .unwrap_or_default()
            .starts_with("lexical (semantic stage unavailable:")
    );
    e.close().await;
}

#[tokio::test]
async fn a_wrong_semantic_table_is_refused_with_what_to_fix() {
    let dir = tempfile::tempdir().unwrap();
    for (table, want) in [
        ("embedder = \"openai\"\nmodel = \"m\"", "needs url"),
        (
            "embedder = \"openai\"\nurl = \"http://127.0.0.1:1/\"\nmodel = \"m\"\nkey = \"K\"",
            "no vault is open",
        ),
        ("embedder = \"local\"\nweight = -1.0", "between 0 and 1"),
    ] {
        let err = Engine::builder()
            .sqlite(db_path(dir.path()))
            .config_toml(format!("[semantic]\n{table}\n"))
            .build()
            .await
            .err()
            .expect("refused")
            .to_string();
        assert!(err.contains(want), "{table}: {err}");
    }
}

/// The English model alone, at `model_dir`.
fn local_table(model_dir: &std::path::Path) -> String {
    format!(
        "[agents.support]\nskills = \"all\"\ncatalog_budget = 200\n\n[semantic]\nembedder = \"local\"\nmodels = [\"all-MiniLM-L6-v2\"]\nmodel_dir = \"{}\"\n",
        model_dir.display()
    )
}

/// Both models, wherever they are said to be.
fn pair_table(english: &std::path::Path, multilingual: &std::path::Path) -> String {
    format!(
        "[agents.support]\nskills = \"all\"\ncatalog_budget = 200\n\n[semantic]\nembedder = \"local\"\nmodel_dir = \"{}\"\nmultilingual_dir = \"{}\"\n",
        english.display(),
        multilingual.display()
    )
}

/// The local encoder, absent: the ranking is lexical and the report says how to get it.
#[tokio::test]
async fn a_missing_local_model_is_reported_and_the_ranking_stays_lexical() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = open_store(&db_path(dir.path())).await;
        put_all(&store).await;
    }
    let agent = "support".parse().unwrap();
    let e = Engine::builder()
        .sqlite(db_path(dir.path()))
        .config_toml(pair_table(
            &dir.path().join("no-model-here"),
            &dir.path().join("nor-here"),
        ))
        .build()
        .await
        .unwrap();
    let t = e
        .turn(&agent, "s1", "refund my order", &TurnOptions::default())
        .await
        .unwrap();
    let stages = t.report.catalog.stages.clone().unwrap_or_default();
    assert!(
        stages.contains("no local model")
            && stages.contains("skillbase model pull")
            && stages.contains("no-model-here")
            && stages.contains("nor-here"),
        "{stages}"
    );
    assert_eq!(
        t.report.catalog.shown.first().map(|r| r.name.as_str()),
        Some("refund-order")
    );
    e.close().await;
}

/// The local encoder, present (`SKILLBASE_TEST_MODEL_DIR`, as `.ci/run` sets after `skillbase
/// model pull`): warmed as `serve` warms it, a paraphrase is found by meaning and the vectors
/// are stored under the model's id.
#[tokio::test]
#[cfg_attr(
    not(skillbase_model),
    ignore = "needs the model: set SKILLBASE_TEST_MODEL_DIR (a folder `skillbase model pull` filled)"
)]
async fn the_local_encoder_ranks_by_meaning() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = open_store(&db_path(dir.path())).await;
        put_all(&store).await;
    }
    let agent = "support".parse().unwrap();
    let model = std::env::var_os("SKILLBASE_TEST_MODEL_DIR")
        .expect("SKILLBASE_TEST_MODEL_DIR was set when the tests were built but is not set now");
    let e = Engine::builder()
        .sqlite(db_path(dir.path()))
        .config_toml(local_table(std::path::Path::new(&model)))
        .build()
        .await
        .unwrap();
    // What `serve` does for each agent at start.
    let r = e.warm_semantic(&agent).await.unwrap().unwrap();
    assert_eq!((r.computed, r.failed), (SKILLS.len(), None));
    let t = e
        .turn(
            &agent,
            "s2",
            "my password stopped working and i can't get into my account",
            &TurnOptions::default(),
        )
        .await
        .unwrap();
    let c = &t.report.catalog;
    assert!(
        c.stages
            .as_deref()
            .unwrap_or_default()
            .starts_with("lexical+semantic"),
        "{:?}",
        c.stages
    );
    assert!(c.ranked && c.shown.len() < SKILLS.len(), "{c:?}");
    assert_eq!(
        c.shown.first().map(|r| r.name.as_str()),
        Some("reset-password"),
        "{c:?}"
    );
    let hits = e
        .search(&agent, "ship the new version to the servers", 3)
        .await
        .unwrap();
    assert_eq!(hits[0].name, "deploy-app", "{hits:?}");
    let id = e.semantic().unwrap().model_id();
    assert_eq!(
        e.store().vector_count(&id).await.unwrap(),
        SKILLS.len() as i64
    );
    e.close().await;
}

/// The local encoder (`SKILLBASE_TEST_MODEL_DIR`): a runbook whose body opens on daily checks
/// and renews TLS certificates in its third section is, with sections on, the skill most
/// similar to a message about an expiring certificate, by that section; with sections off its
/// similarity is its document vector's, well below.
#[tokio::test]
#[cfg_attr(
    not(skillbase_model),
    ignore = "needs the model: set SKILLBASE_TEST_MODEL_DIR (a folder `skillbase model pull` filled)"
)]
async fn the_local_encoder_reads_a_later_section() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = open_store(&db_path(dir.path())).await;
        put_all(&store).await;
        let checks = "Open the dashboards every morning, look at disk usage and memory on each host, confirm that last night's backups finished, and write what you saw in the team channel. ".repeat(5);
        let body = format!(
            "# Platform runbook\n\n## Daily checks\n{checks}\n\n## Renewing TLS certificates\nWhen the TLS certificate of the load balancer is about to expire, request a new certificate from the internal certificate authority, install it on the load balancer and reload the proxy so that clients see the new one.\n"
        );
        let t = text(
            "ops-runbook",
            "Day-to-day runbook of the platform team.",
            "",
            &body,
        );
        store
            .put(req(Scope::Shared, Bundle::single(t).unwrap()))
            .await
            .unwrap();
    }
    let agent = "support".parse().unwrap();
    let model = std::env::var_os("SKILLBASE_TEST_MODEL_DIR")
        .expect("SKILLBASE_TEST_MODEL_DIR was set when the tests were built but is not set now");
    let message = "our https certificate runs out next week, how do we get a fresh one onto the load balancer?";
    let mut similarity = Vec::new();
    for on in [false, true] {
        let table = local_table(std::path::Path::new(&model)) + &format!("sections = {on}\n");
        let e = Engine::builder()
            .sqlite(db_path(dir.path()))
            .config_toml(table)
            .build()
            .await
            .unwrap();
        let r = e.warm_semantic(&agent).await.unwrap().unwrap();
        assert_eq!(r.failed, None);
        // Two sections with prose under them: "Daily checks" and the certificates.
        assert_eq!(r.sections_computed, if on { 2 } else { 0 });
        let view = e.view(&agent).unwrap();
        let i = view
            .skills
            .iter()
            .position(|s| s.name() == "ops-runbook")
            .unwrap();
        let qv = e.query_vectors(&view, &[message]).await.unwrap().unwrap();
        let sims = qv.query(0).unwrap().similarities();
        let best = (0..sims.len())
            .max_by(|&a, &b| sims[a].total_cmp(&sims[b]))
            .unwrap();
        if on {
            assert_eq!(qv.matrix.owners, [i as u32, i as u32]);
            assert_eq!(best, i, "{sims:?}");
        } else {
            assert!(qv.matrix.owners.is_empty());
        }
        similarity.push(sims[i]);
        e.close().await;
    }
    assert!(
        similarity[1] > similarity[0] + 0.1,
        "sections off {} / on {}",
        similarity[0],
        similarity[1]
    );
}

/// The stages line of a turn of `message` in `session`.
async fn stages_of(
    e: &Engine,
    agent: &skillbase_store::AgentName,
    session: &str,
    message: &str,
) -> String {
    let t = e
        .turn(agent, session, message, &TurnOptions::default())
        .await
        .unwrap();
    t.report.catalog.stages.unwrap_or_default()
}

/// Each message's first ranked skill is the one paired with it (a session per message).
async fn first_choices(e: &Engine, agent: &skillbase_store::AgentName, cases: &[(&str, &str)]) {
    for (k, (message, want)) in cases.iter().enumerate() {
        let t = e
            .turn(agent, &format!("s{k}"), message, &TurnOptions::default())
            .await
            .unwrap();
        let c = &t.report.catalog;
        assert!(c.ranked, "{c:?}");
        assert_eq!(
            c.shown.first().map(|r| r.name.as_str()),
            Some(*want),
            "{message}: {c:?}"
        );
    }
}

/// Both local encoders (`SKILLBASE_TEST_MODEL_DIR` and `SKILLBASE_TEST_E5_DIR`, as `.ci/run` sets
/// after `skillbase model pull`): a skill's vector holds both models' vectors, an English
/// message is read by the English model, a message in another language by the multilingual one,
/// and either finds its skill by meaning. With the multilingual model missing the English one
/// still runs, and the stages say what is missing.
#[tokio::test]
#[cfg_attr(
    not(all(skillbase_model, skillbase_e5)),
    ignore = "needs both models: set SKILLBASE_TEST_MODEL_DIR and SKILLBASE_TEST_E5_DIR (folders `skillbase model pull` filled)"
)]
async fn the_pair_reads_each_message_with_the_model_of_its_language() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = open_store(&db_path(dir.path())).await;
        put_all(&store).await;
    }
    let agent = "support".parse().unwrap();
    let english = std::path::PathBuf::from(std::env::var_os("SKILLBASE_TEST_MODEL_DIR").unwrap());
    let multilingual = std::path::PathBuf::from(std::env::var_os("SKILLBASE_TEST_E5_DIR").unwrap());
    let e = Engine::builder()
        .sqlite(db_path(dir.path()))
        .config_toml(pair_table(&english, &multilingual))
        .build()
        .await
        .unwrap();
    let r = e.warm_semantic(&agent).await.unwrap().unwrap();
    assert_eq!((r.computed, r.failed), (SKILLS.len(), None));
    let id = e.semantic().unwrap().model_id();
    assert!(
        id.contains("all-MiniLM-L6-v2@") && id.contains("+multilingual-e5-small@"),
        "{id}"
    );
    first_choices(
        &e,
        &agent,
        &[
            (
                "my password stopped working and i can't get into my account",
                "reset-password",
            ),
            (
                "olvidé mi contraseña y ya no puedo entrar a mi cuenta",
                "reset-password",
            ),
            (
                "je voudrais être remboursé pour ma commande",
                "refund-order",
            ),
        ],
    )
    .await;
    // Stored: one vector per skill, the two models' side by side.
    assert_eq!(
        e.store().vector_count(&id).await.unwrap(),
        SKILLS.len() as i64
    );
    e.close().await;

    // The multilingual model missing: the English one alone, and the stages say so.
    let e = Engine::builder()
        .sqlite(db_path(dir.path()))
        .config_toml(pair_table(&english, &dir.path().join("gone")))
        .build()
        .await
        .unwrap();
    e.warm_semantic(&agent).await.unwrap().unwrap();
    let stages = stages_of(&e, &agent, "s4", "refund my order please").await;
    assert!(
        stages.starts_with("lexical+semantic")
            && stages.contains("without multilingual-e5-small")
            && stages.contains("skillbase model pull"),
        "{stages}"
    );
    e.close().await;
}

/// bge-small-en-v1.5 beside the pair (`models` names all three; `SKILLBASE_TEST_BGE_DIR` as
/// `.ci/run` sets it): a skill's vector holds the three models' vectors, an English message is
/// read by both English models and one in another language by the multilingual one, and each
/// finds its skill. A listed model that is not there is an error that says how to get it.
#[tokio::test]
#[cfg_attr(
    not(all(skillbase_model, skillbase_e5, skillbase_bge)),
    ignore = "needs the three encoders: set SKILLBASE_TEST_MODEL_DIR, SKILLBASE_TEST_E5_DIR and SKILLBASE_TEST_BGE_DIR (folders `skillbase model pull` filled)"
)]
async fn bge_reads_english_messages_beside_minilm() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = open_store(&db_path(dir.path())).await;
        put_all(&store).await;
    }
    let agent = "support".parse().unwrap();
    let var = |v: &str| std::path::PathBuf::from(std::env::var_os(v).unwrap());
    let (english, multilingual, bge) = (
        var("SKILLBASE_TEST_MODEL_DIR"),
        var("SKILLBASE_TEST_E5_DIR"),
        var("SKILLBASE_TEST_BGE_DIR"),
    );
    let table = |bge: &std::path::Path| {
        pair_table(&english, &multilingual)
            + &format!(
                "models = [\"all-MiniLM-L6-v2\", \"bge-small-en-v1.5\", \"multilingual-e5-small\"]\nbge_dir = \"{}\"\n",
                bge.display()
            )
    };
    let e = Engine::builder()
        .sqlite(db_path(dir.path()))
        .config_toml(table(&bge))
        .build()
        .await
        .unwrap();
    let r = e.warm_semantic(&agent).await.unwrap().unwrap();
    assert_eq!((r.computed, r.failed), (SKILLS.len(), None));
    let id = e.semantic().unwrap().model_id();
    assert!(
        id.contains("all-MiniLM-L6-v2@")
            && id.contains("+bge-small-en-v1.5@68807e3ff2abb83c+multilingual-e5-small@"),
        "{id}"
    );
    let view = e.view(&agent).unwrap();
    let qv = e
        .query_vectors(
            &view,
            &["refund my order please", "je voudrais être remboursé"],
        )
        .await
        .unwrap()
        .unwrap();
    // 384 dimensions a model; English fills the first two parts, French the third.
    assert_eq!(qv.matrix.dim, 3 * 384);
    for (k, parts) in [(0, [true, true, false]), (1, [false, false, true])] {
        let v = &qv.queries[k];
        assert_eq!(v.len(), 3 * 384, "one passage");
        for (p, want) in parts.iter().enumerate() {
            let used = v[p * 384..(p + 1) * 384].iter().any(|x| *x != 0.0);
            assert_eq!(used, *want, "message {k}, part {p}");
        }
    }
    first_choices(
        &e,
        &agent,
        &[
            (
                "my password stopped working and i can't get into my account",
                "reset-password",
            ),
            (
                "olvidé mi contraseña y ya no puedo entrar a mi cuenta",
                "reset-password",
            ),
            (
                "the customer wants their money back for the order",
                "refund-order",
            ),
        ],
    )
    .await;
    e.close().await;

    // Listed but not there: the semantic stage does not start, and says how to get it.
    let e = Engine::builder()
        .sqlite(db_path(dir.path()))
        .config_toml(table(&dir.path().join("gone")))
        .build()
        .await
        .unwrap();
    let stages = stages_of(&e, &agent, "s4", "refund my order please").await;
    assert!(
        stages.contains("bge-small-en-v1.5") && stages.contains("skillbase model pull"),
        "{stages}"
    );
    e.close().await;
}

/// The reranker configured but not pulled: the first stages rank, and the stages line says the
/// rerank stage is unavailable and how to get it (no model of any kind is needed: the stand-in
/// endpoint embeds).
#[tokio::test]
async fn a_missing_reranker_is_reported_and_the_first_stages_rank() {
    let s = stand_in().await;
    let dir = tempfile::tempdir().unwrap();
    {
        let store = open_store(&db_path(dir.path())).await;
        put_all(&store).await;
    }
    let agent = "support".parse().unwrap();
    let missing = dir.path().join("no-reranker-here");
    let extra = format!("rerank = true\nreranker_dir = \"{}\"\n", missing.display());
    let e = engine_with(dir.path(), &s.url, &extra).await;
    e.warm_semantic(&agent).await.unwrap().unwrap();
    let t = e
        .turn(
            &agent,
            "s1",
            "refund the customer order",
            &TurnOptions::default(),
        )
        .await
        .unwrap();
    let stages = t.report.catalog.stages.clone().unwrap_or_default();
    assert!(
        stages.starts_with("lexical+semantic (")
            && stages.contains("rerank stage unavailable")
            && stages.contains("no-reranker-here")
            && stages.contains("skillbase model pull"),
        "{stages}"
    );
    assert!(
        e.stages().contains("rerank stage unavailable"),
        "{}",
        e.stages()
    );
    assert_eq!(
        t.report.catalog.shown.first().map(|r| r.name.as_str()),
        Some("refund-order")
    );
    e.close().await;
    // reranker_dir without rerank = true is a mistake in the file, said as such.
    let table: toml::Table = "embedder = \"local\"\nreranker_dir = \"/x\"\n"
        .parse()
        .unwrap();
    let err = skillbase_runtime::SemanticConfig::from_table(&table).unwrap_err();
    assert!(
        err.to_string()
            .contains("reranker_dir is for rerank = true"),
        "{err}"
    );
    let table: toml::Table = "embedder = \"local\"\nrerank = \"yes\"\n".parse().unwrap();
    assert!(skillbase_runtime::SemanticConfig::from_table(&table).is_err());
}

/// Every stage on (`SKILLBASE_TEST_MODEL_DIR` and `SKILLBASE_TEST_RERANKER_DIR`, as `.ci/run`
/// sets after `skillbase model pull`): the reranker reads the first candidates with the
/// message, the turn's stages line and `search_skills` say so, and a message the encoder alone
/// gets wrong between two siblings is put right by reading both together.
#[tokio::test]
#[cfg_attr(
    not(all(skillbase_model, skillbase_reranker)),
    ignore = "needs the models: set SKILLBASE_TEST_MODEL_DIR and SKILLBASE_TEST_RERANKER_DIR (folders `skillbase model pull` filled)"
)]
async fn the_reranker_reads_the_message_with_each_candidate() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = open_store(&db_path(dir.path())).await;
        put_all(&store).await;
    }
    let agent = "support".parse().unwrap();
    let model = std::env::var_os("SKILLBASE_TEST_MODEL_DIR").expect("SKILLBASE_TEST_MODEL_DIR");
    let reranker =
        std::env::var_os("SKILLBASE_TEST_RERANKER_DIR").expect("SKILLBASE_TEST_RERANKER_DIR");
    let table = local_table(std::path::Path::new(&model))
        + &format!(
            "rerank = true\nreranker_dir = \"{}\"\n",
            std::path::Path::new(&reranker).display()
        );
    let e = Engine::builder()
        .sqlite(db_path(dir.path()))
        .config_toml(table)
        .build()
        .await
        .unwrap();
    assert!(
        e.stages().starts_with("lexical+semantic+rerank (")
            && e.stages().contains("ms-marco-MiniLM-L-12-v2@"),
        "{}",
        e.stages()
    );
    e.warm_semantic(&agent).await.unwrap().unwrap();
    let message = "my password stopped working and i can't get into my account";
    let t = e
        .turn(&agent, "s1", message, &TurnOptions::default())
        .await
        .unwrap();
    let c = &t.report.catalog;
    assert_eq!(
        c.stages.as_deref(),
        Some("lexical+semantic+rerank"),
        "{c:?}"
    );
    assert_eq!(
        c.shown.first().map(|r| r.name.as_str()),
        Some("reset-password"),
        "{c:?}"
    );
    let hits = e
        .search(&agent, "the tax on this bill is wrong", 3)
        .await
        .unwrap();
    assert_eq!(hits[0].name, "fix-invoice", "{hits:?}");
    assert!(hits[0].confidence > hits[1].confidence, "{hits:?}");
    // The evaluation path: one set of logits per message, over the first candidates only.
    let view = e.view(&agent).unwrap();
    let qv = e
        .query_vectors(&view, &[message, "plan what we do in the next two weeks"])
        .await
        .unwrap()
        .unwrap();
    assert_eq!(qv.reranks.len(), 2);
    for r in &qv.reranks {
        assert!(
            r.len() >= 2 && r.len() <= skillbase_route::fusion::RERANK_CANDIDATES,
            "{r:?}"
        );
        assert!(r.iter().all(|(_, l)| l.is_finite()), "{r:?}");
    }
    let best = |r: &[(u32, f32)]| {
        let (i, _) = r
            .iter()
            .copied()
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .unwrap();
        view.skills[i as usize].name().to_owned()
    };
    assert_eq!(best(&qv.reranks[0]), "reset-password");
    assert_eq!(best(&qv.reranks[1]), "plan-sprint");
    e.close().await;
}
