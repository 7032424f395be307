//! The studio's pages, server time over loopback (issue 18: "pages render in under 100 ms server
//! time for a session of 200 turns and an agent with 1,000 skills").
//!
//! A store of 1,000 generated skills (one in ten with a trigger), the agent `bench` allowed all
//! of them, and one session of 200 turns through `Engine::turn` (each a few events: the turn,
//! its activations). The server runs in this process in `--dev` mode (no sign-in: the gate's
//! cookie check is one cached token lookup) and one keep-alive client asks for:
//!
//! - `session_200_turns`: `/studio/sessions/{id}`, the transcript with every turn's cards;
//! - `skills_1000`: `/studio/skills`, every record;
//! - `skill_page`: `/studio/skills/{name}`, a skill with its history and runs;
//! - `agent_1000_skills`: `/studio/agents/bench`, its configuration and the doctor's findings
//!   over its 1,000 skills;
//! - `sessions_list`: `/studio/sessions`.
//!
//! `cargo bench -p skillbase-server --bench studio`; `cargo test -p skillbase-server --bench
//! studio` asks for each page once.

use criterion::{Criterion, criterion_group, criterion_main};
use skillbase_format::Bundle;
use skillbase_server::{AppState, ServerOptions};
use skillbase_store::config::Config;
use skillbase_store::{AgentName, Author, DbUrl, Scope, Store};
use std::sync::Arc;
use std::time::Duration;

const SKILLS: usize = 1_000;
const TURNS: usize = 200;
const TOPICS: [&str; 10] = [
    "invoices",
    "refunds",
    "deployments",
    "migrations",
    "travel",
    "payroll",
    "logs",
    "contracts",
    "onboarding",
    "backups",
];

fn bundles() -> Vec<Bundle> {
    (0..SKILLS)
        .map(|i| {
            let topic = TOPICS[i % TOPICS.len()];
            let trigger = if i % 10 == 0 {
                format!("triggers: [{topic} case {i}]\n")
            } else {
                String::new()
            };
            let md = format!(
                "---\nname: bench-skill-{i:04}\ndescription: Handles {topic} request number {i} step by step. Use when the user asks about {topic} item {i}.\n{trigger}---\n\n# Skill {i}\n\n1. Read the {topic} record {i}.\n2. Check it twice.\n3. Answer with what changed.\n"
            );
            Bundle::single(md.into_bytes()).expect("a valid bundle")
        })
        .collect()
}

struct Setup {
    rt: tokio::runtime::Runtime,
    http: reqwest::Client,
    base: String,
    session: String,
    _dir: tempfile::TempDir,
}

fn setup() -> Setup {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let dir = tempfile::tempdir().expect("a temp dir");
    let (base, session) = rt.block_on(async {
        let store = Arc::new(
            Store::open(&DbUrl::Sqlite(dir.path().join("skillbase.db")))
                .await
                .expect("the store"),
        );
        Config::parse("[agents.bench]\nskills = \"all\"\n", "bench")
            .expect("the config")
            .apply(&store)
            .await
            .expect("the agent");
        let author = Author::Human("bench".into());
        store
            .import(&Scope::Shared, bundles(), &author, "bench skills", &|_| {})
            .await
            .expect("the import");
        let key = skillbase_runtime::VaultKey::parse(&"ab".repeat(32)).expect("a key");
        let vault = skillbase_runtime::Vault::open(store.clone(), key)
            .await
            .expect("the vault");
        let engine = skillbase_runtime::Engine::builder()
            .store(store.clone())
            .vault(vault)
            .build()
            .await
            .expect("the engine");
        let state = AppState::new(
            &engine,
            ServerOptions {
                dev: true,
                ..ServerOptions::default()
            },
        )
        .expect("the state");
        let agent = AgentName::parse("bench").expect("a name");
        let session = "bench-session".to_owned();
        store
            .open_session(&session, &agent)
            .await
            .expect("a session");
        for t in 0..TURNS {
            let topic = TOPICS[t % TOPICS.len()];
            state
                .engine
                .turn(
                    &agent,
                    &session,
                    &format!("a question about {topic} case {} please", (t * 10) % SKILLS),
                    &Default::default(),
                )
                .await
                .expect("a turn");
        }
        state.engine.flush().await;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a port");
        let addr = listener.local_addr().expect("the address");
        tokio::spawn(async move {
            skillbase_server::serve(state, listener, std::future::pending())
                .await
                .expect("serving");
        });
        (format!("http://{addr}"), session)
    });
    Setup {
        rt,
        http: reqwest::Client::new(),
        base,
        session,
        _dir: dir,
    }
}

async fn get(s: &Setup, path: &str) -> usize {
    let r = s
        .http
        .get(format!("{}{path}", s.base))
        .send()
        .await
        .expect("a response");
    assert_eq!(r.status().as_u16(), 200, "{path}");
    r.bytes().await.expect("a body").len()
}

fn bench(c: &mut Criterion) {
    let s = setup();
    let pages = [
        (
            "session_200_turns",
            format!("/studio/sessions/{}", s.session),
        ),
        ("skills_1000", "/studio/skills".to_owned()),
        ("skill_page", "/studio/skills/bench-skill-0010".to_owned()),
        ("agent_1000_skills", "/studio/agents/bench".to_owned()),
        ("sessions_list", "/studio/sessions".to_owned()),
    ];
    // The session page holds every turn.
    let body = s.rt.block_on(get(&s, &pages[0].1));
    assert!(body > 10_000, "the session page is {body} bytes");
    let mut g = c.benchmark_group("studio");
    g.sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    for (name, path) in &pages {
        g.bench_function(*name, |b| b.iter(|| s.rt.block_on(get(&s, path))));
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
