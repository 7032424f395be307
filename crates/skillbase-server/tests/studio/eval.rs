//! The studio's evaluations as background jobs: the form answers at once with the job's page,
//! whose status route reports the cases done as the evaluation counts them, then the tables; a
//! job is its token's and its agent's only; running jobs are bounded; malformed ids are nothing.

use super::{client, csrf_of, form, page, sign_in, triggered_skill, url_encode};
use crate::common::*;
use serde_json::Value;
use std::time::{Duration, Instant};

/// `n` cases, alternately a refund (the triggered `shared-one`) and a greeting (no skill):
/// every one ranked right, so recall@1 is 1.000.
pub(super) fn many_cases(n: usize) -> String {
    (0..n)
        .map(|i| {
            if i % 2 == 0 {
                "{\"message\": \"I want a refund\", \"expected\": \"shared-one\"}\n"
            } else {
                // Every filler skill of [`crowd`] shares these words: each such case scores and
                // ranks all of them, the slow part.
                "{\"message\": \"reconcile the quarterly invoice ledger archive\", \"expected\": null}\n"
            }
        })
        .collect()
}

/// Enough cases to run for a while over an agent that sees [`CROWD`] skills (past a few
/// requests in a debug build), under the 1 MiB form limit.
pub(super) const SLOW: usize = 9_000;
/// Skills the slow evaluations rank for each case (see [`crowd`]).
pub(super) const CROWD: usize = 400;

/// The CSRF value of the signed-in token (from a page with a form).
async fn csrf(s: &TestServer, cookie: &str) -> String {
    csrf_of(&page(s, cookie, "/studio/logout").await.1)
}

/// Post the evaluate form of `agent` with `cases`.
async fn start(
    s: &TestServer,
    cookie: &str,
    token: &str,
    agent: &str,
    cases: &str,
) -> reqwest::Response {
    form(
        s,
        cookie,
        &format!("/studio/agents/{agent}/eval"),
        &format!("csrf={token}&cases={}", url_encode(cases)),
        None,
    )
    .await
}

/// The job page a started evaluation redirects to (checked: `/studio/agents/AGENT/eval/ID`
/// with an id of 32 lowercase hex digits).
fn job_of(r: &reqwest::Response, agent: &str) -> String {
    assert_eq!(r.status().as_u16(), 303);
    let to = r.headers()["location"].to_str().unwrap().to_owned();
    let prefix = format!("/studio/agents/{agent}/eval/");
    let id = to.strip_prefix(&prefix).unwrap_or_else(|| panic!("{to}"));
    assert!(
        id.len() == 32
            && id
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
        "{id}"
    );
    to
}

async fn status(s: &TestServer, cookie: &str, job: &str) -> (u16, String) {
    page(s, cookie, &format!("{job}/status")).await
}

fn finished(v: &Value) -> bool {
    !matches!(v["state"].as_str(), Some("preparing" | "running"))
}

/// Poll the job's status route until the job has finished; every answer, in order.
pub(super) async fn statuses_until_done(s: &TestServer, cookie: &str, job: &str) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(600);
    let mut seen = Vec::new();
    loop {
        let (code, body) = status(s, cookie, job).await;
        assert_eq!(code, 200, "{body}");
        let v: Value = serde_json::from_str(&body).unwrap();
        let end = finished(&v);
        seen.push(v);
        if end {
            return seen;
        }
        assert!(Instant::now() < deadline, "still running: {seen:?}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

#[tokio::test]
async fn an_evaluation_runs_in_the_background_and_reports_its_progress() {
    let s = TestServer::start().await;
    triggered_skill(&s).await;
    crowd(&s, CROWD).await;
    let cookie = sign_in(&s, &s.admin).await;
    let token = csrf(&s, &cookie).await;
    let r = start(&s, &cookie, &token, "alpha", &many_cases(SLOW)).await;
    let job = job_of(&r, "alpha");
    // At once: the job's page with its progress bar, still running.
    let (code, html) = page(&s, &cookie, &job).await;
    assert_eq!(code, 200, "{html}");
    assert!(
        html.contains(&format!(
            "<progress id=\"eval-progress\" max=\"{SLOW}\" value=\""
        )) && html.contains(&format!(" of {SLOW} cases</span>"))
            && html.contains("<title>Evaluation running")
            && html.contains(&format!("data-status=\"{job}/status\""))
            && html.contains("http-equiv=\"refresh\""),
        "{html}"
    );
    // The status route: the total, and a count of cases done that rises to it.
    let seen = statuses_until_done(&s, &cookie, &job).await;
    assert!(
        !finished(&seen[0]) && seen[0]["done"].as_u64().unwrap() < SLOW as u64,
        "the first answer was not while it ran: {seen:?}"
    );
    assert!(seen.iter().all(|v| v["total"] == SLOW), "{seen:?}");
    let done: Vec<u64> = seen.iter().map(|v| v["done"].as_u64().unwrap()).collect();
    assert!(done.windows(2).all(|w| w[0] <= w[1]), "{done:?}");
    assert!(
        done.iter().any(|d| *d > 0 && *d < SLOW as u64),
        "a count between none and all: {done:?}"
    );
    let last = seen.last().unwrap();
    assert_eq!(last["state"], "done", "{seen:?}");
    assert_eq!(last["done"], SLOW);
    // Then the page is the evaluation's tables, no progress bar.
    let (code, html) = page(&s, &cookie, &job).await;
    assert_eq!(code, 200);
    assert!(
        html.contains("id=\"eval-kind\"")
            && html.contains(&format!("<tr><td>all</td><td>{SLOW}</td><td>1.000</td>"))
            && html.contains(&format!("{SLOW} cases in "))
            && !html.contains("<progress"),
        "{html}"
    );
    // The agent's page links it.
    let (_, html) = page(&s, &cookie, "/studio/agents/alpha").await;
    assert!(
        html.contains(&format!("<li data-job=\"done\"><a href=\"{job}\">")),
        "{html}"
    );
    s.stop().await;
}

#[tokio::test]
async fn a_job_is_its_tokens_and_its_agents_only() {
    let s = TestServer::start().await;
    triggered_skill(&s).await;
    let alpha = sign_in(&s, &s.alpha).await;
    let token = csrf(&s, &alpha).await;
    let r = start(&s, &alpha, &token, "alpha", &many_cases(4)).await;
    let job = job_of(&r, "alpha");
    let id = job.rsplit('/').next().unwrap().to_owned();
    let seen = statuses_until_done(&s, &alpha, &job).await;
    assert_eq!(seen.last().unwrap()["state"], "done");
    assert_eq!(page(&s, &alpha, &job).await.0, 200);
    // Another agent's token, and an admin's (another token): no such evaluation, under either
    // agent's path, page and status alike; nothing of it is said.
    let beta = sign_in(&s, &s.beta).await;
    let admin = sign_in(&s, &s.admin).await;
    for (who, cookie) in [("beta", &beta), ("admin", &admin)] {
        for path in [
            job.clone(),
            format!("{job}/status"),
            format!("/studio/agents/beta/eval/{id}"),
            format!("/studio/agents/beta/eval/{id}/status"),
        ] {
            let (code, html) = page(&s, cookie, &path).await;
            assert_eq!(code, 404, "{who} {path}: {html}");
            assert!(
                html.contains("no such evaluation") || html.contains("no such agent"),
                "{who} {path}: {html}"
            );
            assert!(!html.contains("eval-kind"), "{who} {path}: {html}");
        }
        let (_, html) = page(&s, cookie, "/studio/agents/alpha").await;
        assert!(!html.contains(&id), "{who}: {html}");
    }
    // Signed out (no cookie, or a cookie that is no token): to the sign-in page, nothing shown.
    for cookie in ["", "skillbase_studio=sb_forged"] {
        for path in [job.clone(), format!("{job}/status")] {
            let r = client()
                .get(s.url(&path))
                .header("cookie", cookie)
                .send()
                .await
                .unwrap();
            assert_eq!(r.status().as_u16(), 303, "{cookie:?} {path}");
            assert!(
                r.headers()["location"]
                    .to_str()
                    .unwrap()
                    .starts_with("/studio/login"),
                "{cookie:?} {path}"
            );
        }
    }
    // Malformed or unknown ids: no such evaluation, never an error.
    for bad in [
        "x".to_owned(),
        "g".repeat(32),
        id.to_uppercase(),
        format!("{id}0"),
        id[..31].to_owned(),
        "0".repeat(32),
        "%00".to_owned(),
        "x".repeat(500),
        format!("{id}%20"),
    ] {
        for path in [
            format!("/studio/agents/alpha/eval/{bad}"),
            format!("/studio/agents/alpha/eval/{bad}/status"),
        ] {
            assert_eq!(page(&s, &alpha, &path).await.0, 404, "{path}");
        }
    }
    // A forged form, one from another site, or one without a cookie: refused, nothing started.
    let cases = url_encode(&many_cases(2));
    for (cookie, body, origin) in [
        (alpha.as_str(), format!("csrf=forged&cases={cases}"), None),
        (
            alpha.as_str(),
            format!("csrf={token}&cases={cases}"),
            Some("http://evil.example"),
        ),
        ("", format!("csrf={token}&cases={cases}"), None),
    ] {
        let r = form(&s, cookie, "/studio/agents/alpha/eval", &body, origin).await;
        assert!(matches!(r.status().as_u16(), 403 | 303), "{}", r.status());
        if r.status().as_u16() == 303 {
            assert_eq!(r.headers()["location"], "/studio/login");
        }
    }
    let (_, html) = page(&s, &alpha, "/studio/agents/alpha").await;
    assert_eq!(html.matches("<li data-job=").count(), 1, "{html}");
    s.stop().await;
}

#[tokio::test]
async fn running_evaluations_are_bounded_and_bad_input_starts_none() {
    // The bounds are checked while four slow evaluations run. On a loaded machine one of them can
    // end before the checks do, which proves nothing either way: then the scenario runs again on
    // a fresh server. A refusal missing while every evaluation still ran fails at once.
    for attempt in 1..=5 {
        if bounded_while_running().await {
            return;
        }
        eprintln!("attempt {attempt}: an evaluation ended before the bounds were checked");
    }
    panic!("five attempts, and each time an evaluation ended before the bounds were checked");
}

/// Whether any of `jobs` has finished.
async fn any_finished(s: &TestServer, cookie: &str, jobs: &[&String]) -> bool {
    for job in jobs {
        let (_, body) = status(s, cookie, job).await;
        let v: Value = serde_json::from_str(&body).unwrap();
        if finished(&v) {
            return true;
        }
    }
    false
}

/// One run of the bounds scenario; `false` when an evaluation ended before the checks did.
async fn bounded_while_running() -> bool {
    let s = TestServer::start().await;
    crowd(&s, CROWD).await;
    let gamma = skillbase_store::AgentName::parse("gamma").unwrap();
    s.store
        .set_agent(&gamma, &skillbase_store::AgentConfig::default())
        .await
        .unwrap();
    let cookie = sign_in(&s, &s.admin).await;
    let token = csrf(&s, &cookie).await;
    let slow = many_cases(SLOW);
    // Malformed and oversized input: refused as before, no job.
    for (bad, want) in [
        (String::new(), 422),
        ("not json".to_owned(), 422),
        ("{\"expected\": \"x\"}".to_owned(), 422),
        (many_cases(30_000), 413),
    ] {
        let r = start(&s, &cookie, &token, "alpha", &bad).await;
        assert_eq!(r.status().as_u16(), want, "{}", &bad[..bad.len().min(40)]);
    }
    let (_, html) = page(&s, &cookie, "/studio/agents/alpha").await;
    assert!(!html.contains("data-job="), "{html}");
    // Two of one agent at a time (the third refused, saying why); four in all.
    let a1 = job_of(&start(&s, &cookie, &token, "alpha", &slow).await, "alpha");
    let a2 = job_of(&start(&s, &cookie, &token, "alpha", &slow).await, "alpha");
    let r = start(&s, &cookie, &token, "alpha", &slow).await;
    if r.status().as_u16() != 429 && any_finished(&s, &cookie, &[&a1, &a2]).await {
        s.stop().await;
        return false;
    }
    assert_eq!(r.status().as_u16(), 429);
    let text = r.text().await.unwrap();
    assert!(
        text.contains(
            "not started: 2 evaluations of alpha are running already (at most 2 at a time)"
        ),
        "{text}"
    );
    let b1 = job_of(&start(&s, &cookie, &token, "beta", &slow).await, "beta");
    let b2 = job_of(&start(&s, &cookie, &token, "beta", &slow).await, "beta");
    let r = start(&s, &cookie, &token, "gamma", &slow).await;
    if r.status().as_u16() != 429 && any_finished(&s, &cookie, &[&a1, &a2, &b1, &b2]).await {
        s.stop().await;
        return false;
    }
    assert_eq!(r.status().as_u16(), 429);
    let text = r.text().await.unwrap();
    assert!(
        text.contains(
            "not started: the studio is running 4 evaluations already (at most 4 at a time)"
        ),
        "{text}"
    );
    // The refusals were while the others ran, and started nothing.
    if any_finished(&s, &cookie, &[&a1, &a2, &b1, &b2]).await {
        s.stop().await;
        return false;
    }
    let (_, html) = page(&s, &cookie, "/studio/agents/alpha").await;
    assert_eq!(html.matches("<li data-job=").count(), 2, "{html}");
    let (_, html) = page(&s, &cookie, "/studio/agents/gamma").await;
    assert!(!html.contains("data-job="), "{html}");
    // Stopping the server stops them (the test ends without waiting for them).
    s.stop().await;
    true
}

/// `n` more shared skills, and alpha and beta made to see every skill: each case of an evaluation then
/// ranks them all (9,000 cases over 400 skills, half of them naming the fillers' words: 0.6 s in
/// a debug build on an idle 2-core machine; the bounds test runs again when one ended early).
pub(super) async fn crowd(s: &TestServer, n: usize) {
    for i in 0..n {
        let name = format!("filler-{i:04}");
        let md = skill_md(
            &name,
            &format!(
                "Files form {i} of the quarterly ledger, archive batch {i}, invoice ledger reconciliation."
            ),
            "Reconcile the ledger.",
        );
        put_skill(
            &s.store,
            skillbase_store::Scope::Shared,
            &name,
            &[("SKILL.md", md.as_bytes())],
        )
        .await;
    }
    for agent in ["alpha", "beta"] {
        let agent = skillbase_store::AgentName::parse(agent).unwrap();
        let mut config = s.store.agent(&agent).await.unwrap().unwrap().config;
        config.skills = skillbase_store::NameSet::All;
        s.store.set_agent(&agent, &config).await.unwrap();
    }
}
