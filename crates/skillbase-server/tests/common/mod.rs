//! A real server on a loopback port, over a fresh SQLite store, for the integration tests.
//!
//! Agents: `alpha` (sees `shared-one`, `shared-two` and its private `alpha-secret`) and `beta`
//! (sees `shared-one` and its private `beta-secret`). Tokens: one admin, one per agent.

use reqwest::Method;
use serde_json::Value;
use skillbase_format::Bundle;
use skillbase_runtime::{Vault, VaultKey};
use skillbase_server::{AppState, ServerOptions, generate_token, hash_token};
use skillbase_store::config::Config;
use skillbase_store::{AgentName, Author, DbUrl, EventFilter, PutRequest, Scope, Store};
use std::net::SocketAddr;
use std::sync::Arc;

pub const CONFIG: &str = r#"
[agents.alpha]
skills = ["shared-one", "shared-two", "alpha-secret"]
[agents.alpha.grants]
tools = ["notes", "skills"]

[agents.beta]
skills = ["shared-one", "beta-secret"]
[agents.beta.grants]
tools = ["notes"]
"#;

/// A tool the harness runs (class `deploy`, granted to no fixture agent until a test grants it).
pub const HARNESS_TOOLS: &str = r#"
[[tools]]
name = "deploy"
description = "Deploy a service; the harness runs it and posts the result."
class = "deploy"
runs = "harness"
parameters = { type = "object", properties = { service = { type = "string" } }, required = ["service"], additionalProperties = false }
"#;

pub struct TestServer {
    pub addr: SocketAddr,
    pub base: String,
    pub state: Arc<AppState>,
    pub store: Arc<Store>,
    pub admin: String,
    pub alpha: String,
    pub beta: String,
    pub alpha_token_id: i64,
    pub http: reqwest::Client,
    /// The SQLite file (another process's writes go here); for PostgreSQL, nothing.
    pub db: std::path::PathBuf,
    /// The database the server runs on.
    pub url: DbUrl,
    _dir: tempfile::TempDir,
    task: tokio::task::JoinHandle<()>,
}

pub fn skill_md(name: &str, description: &str, body: &str) -> String {
    format!("---\nname: {name}\ndescription: {description}\n---\n\n{body}\n")
}

/// Write `SKILL.md` (and extra files) as a revision of `name` in `scope`.
pub async fn put_skill(store: &Store, scope: Scope, name: &str, files: &[(&str, &[u8])]) {
    let mut all: Vec<(String, Vec<u8>)> = files
        .iter()
        .map(|(p, b)| (p.to_string(), b.to_vec()))
        .collect();
    if !files.iter().any(|(p, _)| *p == "SKILL.md") {
        all.push((
            "SKILL.md".into(),
            skill_md(
                name,
                &format!("The {name} skill, for tests"),
                &format!("Body of {name}."),
            )
            .into_bytes(),
        ));
    }
    let bundle = Bundle::from_pairs(all, &store.limits).expect("a valid bundle");
    store
        .put(PutRequest {
            scope,
            bundle,
            author: Author::Human("test".into()),
            message: "test fixture".into(),
            expect_rev: None,
            signature: None,
        })
        .await
        .expect("put");
}

impl TestServer {
    pub async fn start() -> TestServer {
        TestServer::start_with(ServerOptions::default()).await
    }

    pub async fn start_with(options: ServerOptions) -> TestServer {
        let dir = tempfile::tempdir().unwrap();
        let url = DbUrl::Sqlite(dir.path().join("skillbase.db"));
        TestServer::start_on(dir, url, options).await
    }

    /// A fresh server over `url` (the fixture's skills, agents and tokens written to it).
    pub async fn start_on(
        dir: tempfile::TempDir,
        url: DbUrl,
        options: ServerOptions,
    ) -> TestServer {
        let store = Arc::new(Store::open(&url).await.unwrap());
        Config::parse(CONFIG, "test")
            .unwrap()
            .apply(&store)
            .await
            .unwrap();
        put_skill(&store, Scope::Shared, "shared-one", &[]).await;
        put_skill(&store, Scope::Shared, "shared-two", &[]).await;
        let alpha = AgentName::parse("alpha").unwrap();
        let beta = AgentName::parse("beta").unwrap();
        put_skill(&store, Scope::Agent(alpha.clone()), "alpha-secret", &[]).await;
        put_skill(&store, Scope::Agent(beta.clone()), "beta-secret", &[]).await;
        let actor = Author::Human("test".into());
        let mk = |agent: Option<AgentName>| {
            let store = store.clone();
            let actor = actor.clone();
            async move {
                let secret = generate_token();
                let rec = store
                    .token_create("test", &hash_token(&secret), agent.as_ref(), &actor)
                    .await
                    .unwrap();
                (secret, rec.id)
            }
        };
        let (admin, _) = mk(None).await;
        let (alpha_t, alpha_token_id) = mk(Some(alpha)).await;
        let (beta_t, _) = mk(Some(beta)).await;
        let tokens = [admin, alpha_t, beta_t];
        TestServer::serve(dir, url, store, options, tokens, alpha_token_id, true).await
    }

    /// A second server on this one's database (another node of a cluster): the same skills,
    /// agents and tokens, its own copy of them in memory.
    pub async fn join(&self, options: ServerOptions) -> TestServer {
        let store = Arc::new(Store::open(&self.url).await.unwrap());
        let tokens = [self.admin.clone(), self.alpha.clone(), self.beta.clone()];
        let dir = tempfile::tempdir().unwrap();
        let id = self.alpha_token_id;
        TestServer::serve(dir, self.url.clone(), store, options, tokens, id, true).await
    }

    /// [`TestServer::join`], but a server that never applies other servers' writes (no sync
    /// loop: as if every announcement and poll were lost), so its copy goes stale.
    pub async fn join_deaf(&self, options: ServerOptions) -> TestServer {
        let store = Arc::new(Store::open(&self.url).await.unwrap());
        let tokens = [self.admin.clone(), self.alpha.clone(), self.beta.clone()];
        let dir = tempfile::tempdir().unwrap();
        let id = self.alpha_token_id;
        TestServer::serve(dir, self.url.clone(), store, options, tokens, id, false).await
    }

    async fn serve(
        dir: tempfile::TempDir,
        url: DbUrl,
        store: Arc<Store>,
        options: ServerOptions,
        [admin, alpha_t, beta_t]: [String; 3],
        alpha_token_id: i64,
        sync: bool,
    ) -> TestServer {
        let key = VaultKey::parse(&"ab".repeat(32)).unwrap();
        let vault = Vault::open(store.clone(), key).await.unwrap();
        let engine = skillbase_runtime::Engine::builder()
            .store(store.clone())
            .vault(vault)
            .workspace(dir.path().join("workspaces"))
            .web_fetch()
            .config_toml(HARNESS_TOOLS)
            .build()
            .await
            .unwrap();
        let state = AppState::new(&engine, options).unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let st = state.clone();
        let task = tokio::spawn(async move {
            if sync {
                skillbase_server::serve(st, listener, std::future::pending())
                    .await
                    .unwrap();
            } else {
                let app = skillbase_server::router(st.clone());
                let stop = st.shutdown.clone();
                axum::serve(listener, app)
                    .with_graceful_shutdown(async move { stop.cancelled().await })
                    .await
                    .unwrap();
            }
        });
        TestServer {
            addr,
            base: format!("http://{addr}"),
            state,
            store,
            admin,
            alpha: alpha_t,
            beta: beta_t,
            alpha_token_id,
            http: reqwest::Client::new(),
            db: dir.path().join("skillbase.db"),
            url,
            _dir: dir,
            task,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Stop the server (graceful) and wait for it.
    pub async fn stop(self) {
        self.state.shutdown.cancel();
        let _ = tokio::time::timeout(std::time::Duration::from_secs(10), self.task).await;
    }
}

/// A problem answer: checks the media type and returns (status, body).
pub async fn problem(r: reqwest::Response) -> (u16, serde_json::Value) {
    let status = r.status().as_u16();
    let ct = r
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let body = r.text().await.unwrap();
    assert_eq!(ct, "application/problem+json", "status {status}: {body}");
    (status, serde_json::from_str(&body).unwrap())
}

/// A JSON answer with the expected status.
pub async fn ok_json(r: reqwest::Response, want: u16) -> Value {
    let status = r.status().as_u16();
    let body = r.text().await.unwrap();
    assert_eq!(status, want, "{body}");
    serde_json::from_str(&body).unwrap_or(Value::Null)
}

/// REST requests with a bearer token, and the number of events stored.
impl TestServer {
    pub fn req(&self, m: Method, path: &str, token: &str) -> reqwest::RequestBuilder {
        self.http.request(m, self.url(path)).bearer_auth(token)
    }
    pub fn get(&self, path: &str, token: &str) -> reqwest::RequestBuilder {
        self.req(Method::GET, path, token)
    }
    pub fn post(&self, path: &str, token: &str) -> reqwest::RequestBuilder {
        self.req(Method::POST, path, token)
    }
    pub fn put(&self, path: &str, token: &str) -> reqwest::RequestBuilder {
        self.req(Method::PUT, path, token)
    }
    pub fn markdown(&self, path: &str, token: &str, text: String) -> reqwest::RequestBuilder {
        self.put(path, token)
            .header("content-type", "text/markdown")
            .body(text)
    }
    pub async fn event_count(&self) -> usize {
        self.state.engine.flush().await;
        self.store
            .events(&EventFilter::default())
            .await
            .unwrap()
            .len()
    }
}
