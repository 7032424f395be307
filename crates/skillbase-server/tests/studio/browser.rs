//! The studio in a real browser: Debian's Chromium driven through ChromeDriver over the W3C
//! WebDriver protocol (a few JSON requests, made with the tests' HTTP client). Run when
//! `SKILLBASE_TEST_CHROMEDRIVER` names a chromedriver at build time (`.ci/run` installs
//! `chromium` and `chromium-driver` and sets it); otherwise compiled as ignored, so `cargo test`
//! reports them skipped. With `SKILLBASE_STUDIO_SCREENSHOTS=DIR`, the pages' screenshots are
//! written there (the README's come from it).

use super::eval::{CROWD, SLOW, crowd, many_cases};
use super::{triggered_skill, turn};
use crate::common::*;
use serde_json::{Value, json};
use skillbase_store::Scope;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// A chromedriver in a process group of its own, which the browsers it starts join, and the
/// temporary folder they all use (`TMPDIR`: profiles, sockets). Dropped on every path (a failed
/// start, a failed assertion), it kills the whole group: killing chromedriver alone left its
/// Chromium running after the tests (Chromium's crash handlers, in sessions of their own, exit
/// with the browser).
struct Driver {
    child: Child,
    tmp: tempfile::TempDir,
}

impl Drop for Driver {
    fn drop(&mut self) {
        // Before `wait`: until chromedriver is reaped, its pid (the group's id) is not reused.
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.child.id())])
            .stderr(Stdio::null())
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A chromedriver process and one headless browser session.
struct Browser {
    driver: Driver,
    base: String,
    session: String,
    http: reqwest::Client,
}

impl Browser {
    async fn start() -> Browser {
        let path = std::env::var("SKILLBASE_TEST_CHROMEDRIVER")
            .ok()
            .or_else(|| option_env!("SKILLBASE_TEST_CHROMEDRIVER").map(str::to_owned))
            .expect(
                "SKILLBASE_TEST_CHROMEDRIVER was set when the tests were built but is not set now",
            );
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let tmp = tempfile::tempdir().unwrap();
        let child = Command::new(&path)
            .arg(format!("--port={port}"))
            .env("TMPDIR", tmp.path())
            .process_group(0)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{path}: {e}"));
        let driver = Driver { child, tmp };
        let base = format!("http://127.0.0.1:{port}");
        let http = reqwest::Client::new();
        let mut ready = false;
        for _ in 0..100 {
            if let Ok(r) = http.get(format!("{base}/status")).send().await
                && let Ok(v) = r.json::<Value>().await
                && v["value"]["ready"] == true
            {
                ready = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(ready, "chromedriver did not become ready");
        let binary =
            std::env::var("SKILLBASE_TEST_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": binary,
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,1000"]
            }
        }}});
        let mut b = Browser {
            driver,
            base,
            session: String::new(),
            http,
        };
        let v = b.call(reqwest::Method::POST, "/session", caps).await;
        b.session = v["sessionId"].as_str().expect("a session id").to_owned();
        b
    }

    async fn call(&self, m: reqwest::Method, path: &str, body: Value) -> Value {
        let mut r = self.http.request(m.clone(), format!("{}{path}", self.base));
        if m != reqwest::Method::GET {
            r = r.json(&body);
        }
        let v: Value = r.send().await.unwrap().json().await.unwrap();
        assert!(
            v["value"].get("error").is_none(),
            "webdriver {m} {path}: {v}"
        );
        v["value"].clone()
    }

    fn s(&self, rest: &str) -> String {
        format!("/session/{}{rest}", self.session)
    }

    async fn open(&self, url: &str) {
        self.call(reqwest::Method::POST, &self.s("/url"), json!({"url": url}))
            .await;
    }

    async fn find(&self, css: &str) -> String {
        let v = self
            .call(
                reqwest::Method::POST,
                &self.s("/element"),
                json!({"using": "css selector", "value": css}),
            )
            .await;
        v[ELEMENT].as_str().expect("an element").to_owned()
    }

    async fn count(&self, css: &str) -> usize {
        self.call(
            reqwest::Method::POST,
            &self.s("/elements"),
            json!({"using": "css selector", "value": css}),
        )
        .await
        .as_array()
        .map_or(0, Vec::len)
    }

    async fn attr(&self, el: &str, name: &str) -> String {
        self.call(
            reqwest::Method::GET,
            &self.s(&format!("/element/{el}/attribute/{name}")),
            Value::Null,
        )
        .await
        .as_str()
        .unwrap_or_default()
        .to_owned()
    }

    /// An element's property: a string as it is, a number written out.
    async fn property(&self, css: &str, name: &str) -> String {
        let el = self.find(css).await;
        match self
            .call(
                reqwest::Method::GET,
                &self.s(&format!("/element/{el}/property/{name}")),
                Value::Null,
            )
            .await
        {
            Value::String(s) => s,
            Value::Null => String::new(),
            other => other.to_string(),
        }
    }

    async fn text(&self, css: &str) -> String {
        let el = self.find(css).await;
        self.call(
            reqwest::Method::GET,
            &self.s(&format!("/element/{el}/text")),
            Value::Null,
        )
        .await
        .as_str()
        .unwrap_or_default()
        .to_owned()
    }

    async fn click(&self, css: &str) {
        let el = self.find(css).await;
        self.call(
            reqwest::Method::POST,
            &self.s(&format!("/element/{el}/click")),
            json!({}),
        )
        .await;
    }

    async fn type_into(&self, css: &str, text: &str) {
        let el = self.find(css).await;
        self.call(
            reqwest::Method::POST,
            &self.s(&format!("/element/{el}/value")),
            json!({"text": text}),
        )
        .await;
    }

    /// The page's title once it is `want` (a click's navigation may still be under way).
    async fn wait_title(&self, want: &str) -> String {
        self.wait_title_for(want, Duration::from_secs(5)).await
    }

    /// [`Browser::wait_title`], waiting up to `limit`.
    async fn wait_title_for(&self, want: &str, limit: Duration) -> String {
        let until = std::time::Instant::now() + limit;
        let mut t = String::new();
        while std::time::Instant::now() < until {
            t = self.title().await;
            if t == want {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        t
    }

    async fn title(&self) -> String {
        self.call(reqwest::Method::GET, &self.s("/title"), Value::Null)
            .await
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// Save a screenshot as `NAME.png` when `SKILLBASE_STUDIO_SCREENSHOTS` names a folder.
    async fn screenshot(&self, name: &str) {
        let Ok(dir) = std::env::var("SKILLBASE_STUDIO_SCREENSHOTS") else {
            return;
        };
        use base64::Engine;
        let v = self
            .call(reqwest::Method::GET, &self.s("/screenshot"), Value::Null)
            .await;
        let png = base64::engine::general_purpose::STANDARD
            .decode(v.as_str().unwrap())
            .unwrap();
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(std::path::Path::new(&dir).join(format!("{name}.png")), png).unwrap();
    }

    async fn sign_in(&self, server: &TestServer, token: &str) {
        self.open(&server.url("/studio/login")).await;
        self.type_into("#token", token).await;
        self.click("#sign-in").await;
    }
}

/// The processes whose environment has `TMPDIR=dir`: a [`Driver`] and everything it started.
fn processes_under(dir: &std::path::Path) -> Vec<String> {
    let want = format!("TMPDIR={}", dir.display()).into_bytes();
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        // Gone meanwhile, or a zombie (no environment): not running.
        let Ok(env) = std::fs::read(e.path().join("environ")) else {
            continue;
        };
        if env.split(|&b| b == 0).any(|v| v == want) {
            let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            out.push(String::from_utf8_lossy(&cmd).replace('\0', " "));
        }
    }
    out
}

#[tokio::test]
#[cfg_attr(
    not(skillbase_browser),
    ignore = "browser tests skipped: set SKILLBASE_TEST_CHROMEDRIVER to a chromedriver (apt install chromium chromium-driver) to run them"
)]
async fn a_browser_leaves_no_process_behind_even_when_its_test_panics() {
    let (tx, rx) = std::sync::mpsc::channel();
    let failed = tokio::spawn(async move {
        let b = Browser::start().await;
        b.open("about:blank").await;
        let tmp = b.driver.tmp.path().to_path_buf();
        tx.send((processes_under(&tmp).len(), tmp)).unwrap();
        panic!("deliberately: a browser test that fails");
    })
    .await;
    assert!(failed.unwrap_err().is_panic());
    let (running, tmp) = rx.recv().unwrap();
    // chromedriver, Chromium's browser, zygotes, GPU and utility processes, renderers.
    assert!(
        running > 3,
        "{running} processes found under {}",
        tmp.display()
    );
    let mut left = processes_under(&tmp);
    for _ in 0..50 {
        if left.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        left = processes_under(&tmp);
    }
    assert!(left.is_empty(), "still running: {left:#?}");
    assert!(!tmp.exists(), "{} is left", tmp.display());
}

#[tokio::test]
#[cfg_attr(
    not(skillbase_browser),
    ignore = "browser tests skipped: set SKILLBASE_TEST_CHROMEDRIVER to a chromedriver (apt install chromium chromium-driver) to run them"
)]
async fn in_a_browser_the_turn_the_revert_and_the_agent_boundary() {
    let s = TestServer::start().await;
    triggered_skill(&s).await;
    let (id, report) = turn(&s, &s.alpha, "I want a refund, please").await;
    let b = Browser::start().await;
    b.sign_in(&s, &s.admin).await;
    assert_eq!(
        b.wait_title("Sessions · Skillbase studio").await,
        "Sessions · Skillbase studio"
    );

    // The session page: the activation card and the Context card say what the turn reported.
    b.open(&s.url(&format!("/studio/sessions/{id}"))).await;
    let card = b
        .find("[data-card=activation][data-skill=shared-one]")
        .await;
    let a = &report["activated"][0];
    assert_eq!(b.attr(&card, "data-reason").await, "trigger:refund");
    assert_eq!(b.attr(&card, "data-rev").await, a["rev"].to_string());
    assert_eq!(b.attr(&card, "data-tokens").await, a["tokens"].to_string());
    for k in ["eager", "injected", "catalog", "tools", "total"] {
        assert_eq!(
            b.text(&format!("[data-card=context] [data-k={k}]")).await,
            report["tokens"][k].to_string(),
            "{k}"
        );
    }
    b.screenshot("studio-session").await;

    // Revert from the skill's page: confirm, then the store has revision 1 active.
    b.open(&s.url("/studio/skills/shared-one?scope=shared&a=1&b=2"))
        .await;
    assert_eq!(b.text("#active-rev").await, "2");
    b.screenshot("studio-skill").await;
    b.click("button[data-action=revert][data-rev='1']").await;
    assert_eq!(
        b.wait_title("Confirm · Skillbase studio").await,
        "Confirm · Skillbase studio"
    );
    b.click("#confirm").await;
    assert_eq!(
        b.wait_title("shared-one · Skillbase studio").await,
        "shared-one · Skillbase studio"
    );
    assert_eq!(b.text("#active-rev").await, "1");
    assert_eq!(
        s.store
            .index()
            .get(&Scope::Shared, "shared-one")
            .unwrap()
            .active_rev,
        1
    );

    // The agent's page, with its doctor findings.
    b.open(&s.url("/studio/agents/alpha")).await;
    assert!(b.count("#findings").await == 1);
    b.screenshot("studio-agent").await;

    // Evaluate a cases file uploaded from the agent's page: the job's page shows its progress
    // bar, which the page's script moves as the cases are done, then the tables.
    // (The triggered revision again, after the revert; many skills, so it runs for seconds.)
    triggered_skill(&s).await;
    crowd(&s, CROWD).await;
    b.open(&s.url("/studio/agents/alpha")).await;
    let dir = tempfile::tempdir().unwrap();
    let cases = dir.path().join("cases.jsonl");
    std::fs::write(&cases, many_cases(SLOW)).unwrap();
    b.type_into("#eval-file", cases.to_str().unwrap()).await;
    let mut loaded = String::new();
    for _ in 0..50 {
        loaded = b.property("#eval-cases", "value").await;
        if loaded.len() == std::fs::metadata(&cases).unwrap().len() as usize {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(loaded.lines().count(), SLOW);
    b.click("#run-eval").await;
    assert_eq!(
        b.wait_title("Evaluation running · Skillbase studio").await,
        "Evaluation running · Skillbase studio"
    );
    let number = |v: String| v.parse::<f64>().unwrap_or(f64::NAN);
    assert_eq!(
        number(b.property("#eval-progress", "max").await),
        SLOW as f64
    );
    let first = number(b.property("#eval-progress", "value").await);
    // The script moves the bar without reloading the page (the same page, a larger value).
    let mut moved = None;
    for _ in 0..600 {
        if b.count("#eval-progress").await == 0 {
            break;
        }
        let now = number(b.property("#eval-progress", "value").await);
        if now > first {
            moved = Some(now);
            b.screenshot("studio-eval-progress").await;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(moved.is_some(), "the bar never moved from {first}");
    assert!(
        b.text("#eval-count")
            .await
            .ends_with(&format!(" of {SLOW} cases"))
    );
    // Then, once it is done, the page has the tables.
    assert_eq!(
        b.wait_title_for("Evaluation · Skillbase studio", Duration::from_secs(600))
            .await,
        "Evaluation · Skillbase studio"
    );
    assert_eq!(b.count("#eval-progress").await, 0);
    let table = b.text("#eval-kind").await;
    assert!(table.contains("1.000"), "{table}");

    // An agent's token cannot open another agent's session.
    let other = Browser::start().await;
    other.sign_in(&s, &s.beta).await;
    other.wait_title("Sessions · Skillbase studio").await;
    other.open(&s.url(&format!("/studio/sessions/{id}"))).await;
    assert_eq!(other.title().await, "404 · Skillbase studio");
    assert_eq!(other.count("[data-card=activation]").await, 0);
    s.stop().await;
}

#[tokio::test]
#[cfg_attr(
    not(skillbase_browser),
    ignore = "browser tests skipped: set SKILLBASE_TEST_CHROMEDRIVER to a chromedriver (apt install chromium chromium-driver) to run them"
)]
async fn in_a_browser_the_health_page_retires_a_never_used_skill() {
    let s = TestServer::start().await;
    triggered_skill(&s).await;
    turn(&s, &s.alpha, "I want a refund, please").await;
    let b = Browser::start().await;
    b.sign_in(&s, &s.admin).await;
    b.wait_title("Sessions · Skillbase studio").await;

    // The skill that fired shows its use on its page.
    b.open(&s.url("/studio/skills/shared-one?scope=shared"))
        .await;
    assert_eq!(b.text("#health").await, "healthy");
    assert_eq!(b.count("#usage-agents tr[data-agent=alpha]").await, 1);

    // shared-two never fired: retire it from the health page, through the confirmation.
    b.open(&s.url("/studio/health")).await;
    assert_eq!(b.title().await, "Library health · Skillbase studio");
    assert_eq!(b.count("#never-used tr[data-skill=shared-one]").await, 0);
    b.screenshot("studio-health").await;
    b.click("#never-used tr[data-skill=shared-two] button[data-action=retire]")
        .await;
    assert_eq!(
        b.wait_title("Confirm · Skillbase studio").await,
        "Confirm · Skillbase studio"
    );
    b.click("#confirm").await;
    b.wait_title("shared-two · Skillbase studio").await;
    assert_eq!(
        s.store
            .index()
            .get(&Scope::Shared, "shared-two")
            .unwrap()
            .status,
        skillbase_store::Status::Retired
    );
    // Retired, it is no longer listed as never used.
    b.open(&s.url("/studio/health")).await;
    assert_eq!(b.count("#never-used tr[data-skill=shared-two]").await, 0);
}
