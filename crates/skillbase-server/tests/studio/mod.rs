//! The studio over HTTP: sign-in and its cookie, the gate, CSRF and other-origin refusals,
//! agent tokens confined to their agent, hostile input rendered as text, and the pages' content
//! against what the API says. The same flows in a real browser are in `browser.rs`.

use crate::common::*;
use serde_json::{Value, json};
use skillbase_store::Scope;

// Unix: the browsers are killed by process group.
#[cfg(unix)]
mod browser;
mod eval;
mod scan;
mod usage;

/// A client that does not follow redirects (the tests read them).
fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

fn cookie_of(r: &reqwest::Response) -> Option<String> {
    r.headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// Sign in with `token`; the cookie header to send afterwards.
async fn sign_in(s: &TestServer, token: &str) -> String {
    let r = client()
        .post(s.url("/studio/login"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("token={token}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 303);
    assert_eq!(r.headers()["location"], "/studio/sessions");
    let set = cookie_of(&r).unwrap();
    assert!(
        set.contains("HttpOnly") && set.contains("SameSite=Strict") && set.contains("Path=/studio"),
        "{set}"
    );
    set.split(';').next().unwrap().to_owned()
}

async fn page(s: &TestServer, cookie: &str, path: &str) -> (u16, String) {
    let r = client()
        .get(s.url(path))
        .header("cookie", cookie)
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.text().await.unwrap())
}

async fn form(
    s: &TestServer,
    cookie: &str,
    path: &str,
    body: &str,
    origin: Option<&str>,
) -> reqwest::Response {
    let mut b = client()
        .post(s.url(path))
        .header("cookie", cookie)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body.to_owned());
    if let Some(o) = origin {
        b = b.header("origin", o);
    }
    b.send().await.unwrap()
}

/// The value of the first `name="csrf"` field of a page.
fn csrf_of(html: &str) -> String {
    let i = html
        .find("name=\"csrf\" value=\"")
        .expect("a form with a csrf field");
    let rest = &html[i + 19..];
    rest[..rest.find('"').unwrap()].to_owned()
}

/// A session of `agent` with one turn of `message`; its id and the turn's report.
pub(super) async fn turn(s: &TestServer, token: &str, message: &str) -> (String, Value) {
    let sess = ok_json(
        s.post("/v1/sessions", token)
            .json(&json!({}))
            .send()
            .await
            .unwrap(),
        201,
    )
    .await;
    let id = sess["id"].as_str().unwrap().to_owned();
    let t = ok_json(
        s.post(&format!("/v1/sessions/{id}/turns"), token)
            .json(&json!({"message": message}))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    (id, t["context"]["report"].clone())
}

/// `shared-one` with a trigger, as revision 2 (revision 1 is the fixture's).
pub(super) async fn triggered_skill(s: &TestServer) {
    let md = "---\nname: shared-one\ndescription: Handles refunds. Use when a customer wants their money back.\ntriggers: [refund]\n---\nCheck the order, then refund it.\n";
    put_skill(
        &s.store,
        Scope::Shared,
        "shared-one",
        &[("SKILL.md", md.as_bytes())],
    )
    .await;
}

#[tokio::test]
async fn signing_in_sets_a_strict_cookie_and_every_page_needs_it() {
    let s = TestServer::start().await;
    // No cookie: to the sign-in page; the sign-in page itself is open.
    let r = client()
        .get(s.url("/studio/sessions"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 303);
    assert_eq!(r.headers()["location"], "/studio/login");
    let r = client().get(s.url("/studio/login")).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert!(r.text().await.unwrap().contains("name=\"token\""));
    // A bad token: 401, no cookie; malformed and oversized ones too.
    for bad in ["sb_nope", "a b", &"x".repeat(300), ""] {
        let r = client()
            .post(s.url("/studio/login"))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(format!("token={bad}"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 401, "{bad}");
        assert!(cookie_of(&r).is_none());
    }
    // A malformed form: refused, nothing set.
    let r = client()
        .post(s.url("/studio/login"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body("nothing=here")
        .send()
        .await
        .unwrap();
    assert!(r.status().is_client_error());
    let cookie = sign_in(&s, &s.admin).await;
    let (status, html) = page(&s, &cookie, "/studio/sessions").await;
    assert_eq!(status, 200);
    assert!(
        html.contains("<h1>Sessions</h1>") && html.contains("admin"),
        "{html}"
    );
    // A cookie that is not a valid token: signed out, cookie cleared.
    let r = client()
        .get(s.url("/studio/skills"))
        .header("cookie", "skillbase_studio=sb_forged")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 303);
    assert!(cookie_of(&r).unwrap().contains("Max-Age=0"));
    // The API does not take the cookie: it is the studio's only.
    let r = client()
        .get(s.url("/v1/skills"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 401);
    // Signing out needs the form's CSRF value.
    let (_, html) = page(&s, &cookie, "/studio/logout").await;
    assert!(html.contains("Sign out"), "{html}");
    let token = csrf_of(&html);
    let r = form(&s, &cookie, "/studio/logout", "csrf=wrong", None).await;
    assert_eq!(r.status().as_u16(), 403);
    let r = form(
        &s,
        &cookie,
        "/studio/logout",
        &format!("csrf={token}"),
        None,
    )
    .await;
    assert_eq!(r.status().as_u16(), 303);
    assert!(cookie_of(&r).unwrap().contains("Max-Age=0"));
    s.stop().await;
}

#[tokio::test]
async fn the_session_page_shows_what_the_turn_reported() {
    let s = TestServer::start().await;
    triggered_skill(&s).await;
    let (id, report) = turn(&s, &s.alpha, "I want a refund, please").await;
    let cookie = sign_in(&s, &s.admin).await;
    let (status, html) = page(&s, &cookie, "/studio/sessions").await;
    assert_eq!(status, 200);
    assert!(html.contains(&format!("/studio/sessions/{id}")), "{html}");
    assert!(
        html.contains("shared-one"),
        "active skills are listed: {html}"
    );
    let (status, html) = page(&s, &cookie, &format!("/studio/sessions/{id}")).await;
    assert_eq!(status, 200, "{html}");
    let a = &report["activated"][0];
    assert_eq!(a["reason"], "trigger:refund");
    let card = format!(
        "data-card=\"activation\" data-skill=\"shared-one\" data-reason=\"trigger:refund\" data-rev=\"{}\" data-tokens=\"{}\"",
        a["rev"], a["tokens"]
    );
    assert!(html.contains(&card), "{card}\n{html}");
    let t = &report["tokens"];
    for k in ["eager", "injected", "catalog", "tools", "total"] {
        assert!(
            html.contains(&format!("<td data-k=\"{k}\">{}</td>", t[k])),
            "{k} = {}: {html}",
            t[k]
        );
    }
    assert!(
        html.contains("data-src=\"/studio/sessions/"),
        "the live stream"
    );
    // The live stream answers under the cookie, as an event stream.
    let r = client()
        .get(s.url(&format!("/studio/sessions/{id}/events?after=0")))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert!(
        r.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    drop(r);
    s.stop().await;
}

#[tokio::test]
async fn an_agent_token_sees_its_agent_only_and_changes_nothing() {
    let s = TestServer::start().await;
    let (alpha_session, _) = turn(&s, &s.alpha, "hello").await;
    let (beta_session, _) = turn(&s, &s.beta, "hello").await;
    let beta = sign_in(&s, &s.beta).await;
    let (status, html) = page(&s, &beta, "/studio/sessions").await;
    assert_eq!(status, 200);
    assert!(
        html.contains(&beta_session) && !html.contains(&alpha_session),
        "{html}"
    );
    let (status, html) = page(&s, &beta, &format!("/studio/sessions/{alpha_session}")).await;
    assert_eq!(status, 404, "{html}");
    assert!(!html.contains("alpha"), "nothing of alpha is said: {html}");
    assert_eq!(
        page(&s, &beta, &format!("/studio/sessions/{beta_session}"))
            .await
            .0,
        200
    );
    // Skills: what beta may load, never alpha's private one.
    let (_, html) = page(&s, &beta, "/studio/skills").await;
    assert!(
        html.contains("beta-secret") && !html.contains("alpha-secret"),
        "{html}"
    );
    assert_eq!(
        page(&s, &beta, "/studio/skills/alpha-secret?scope=agent:alpha")
            .await
            .0,
        404
    );
    assert_eq!(page(&s, &beta, "/studio/agents/alpha").await.0, 404);
    let (_, html) = page(&s, &beta, "/studio/agents").await;
    assert!(html.contains("beta") && !html.contains(">alpha<"), "{html}");
    // Read-only: no action buttons, and a posted action is refused.
    let (_, html) = page(&s, &beta, "/studio/skills/shared-one").await;
    assert!(!html.contains("data-action="), "{html}");
    let (_, html) = page(&s, &beta, "/studio/logout").await;
    let token = csrf_of(&html);
    let r = form(
        &s,
        &beta,
        "/studio/skills/shared-one/action",
        &format!("scope=shared&action=retire&csrf={token}&confirm=yes"),
        None,
    )
    .await;
    assert_eq!(r.status().as_u16(), 403);
    assert_eq!(
        s.store
            .index()
            .get(&Scope::Shared, "shared-one")
            .unwrap()
            .status,
        skillbase_store::Status::Active
    );
    s.stop().await;
}

#[tokio::test]
async fn actions_confirm_first_refuse_forged_forms_and_go_through_the_store() {
    let s = TestServer::start().await;
    triggered_skill(&s).await;
    let cookie = sign_in(&s, &s.admin).await;
    let (_, html) = page(&s, &cookie, "/studio/skills/shared-one?scope=shared").await;
    assert!(
        html.contains("data-action=\"revert\" data-rev=\"1\""),
        "{html}"
    );
    let token = csrf_of(&html);
    let body = format!("scope=shared&action=revert&rev=1&csrf={token}");
    // From another site, or without the page's CSRF value: refused, nothing changed.
    let r = form(
        &s,
        &cookie,
        "/studio/skills/shared-one/action",
        &format!("{body}&confirm=yes"),
        Some("http://evil.example"),
    )
    .await;
    assert_eq!(r.status().as_u16(), 403);
    let r = form(
        &s,
        &cookie,
        "/studio/skills/shared-one/action",
        "scope=shared&action=revert&rev=1&csrf=forged&confirm=yes",
        None,
    )
    .await;
    assert_eq!(r.status().as_u16(), 403);
    // Malformed: an unknown action, no revision, a bad scope.
    for bad in [
        format!("scope=shared&action=explode&csrf={token}&confirm=yes"),
        format!("scope=shared&action=revert&csrf={token}&confirm=yes"),
        format!("scope=nowhere&action=retire&csrf={token}&confirm=yes"),
    ] {
        let r = form(&s, &cookie, "/studio/skills/shared-one/action", &bad, None).await;
        assert_eq!(r.status().as_u16(), 400, "{bad}");
    }
    assert_eq!(
        s.store
            .index()
            .get(&Scope::Shared, "shared-one")
            .unwrap()
            .active_rev,
        2
    );
    // First the confirmation page, then the change.
    let r = form(
        &s,
        &cookie,
        "/studio/skills/shared-one/action",
        &body,
        Some(&s.base),
    )
    .await;
    assert_eq!(r.status().as_u16(), 200);
    let confirm = r.text().await.unwrap();
    assert!(
        confirm.contains("Really revert shared-one (shared) to revision 1?"),
        "{confirm}"
    );
    assert_eq!(
        s.store
            .index()
            .get(&Scope::Shared, "shared-one")
            .unwrap()
            .active_rev,
        2
    );
    let r = form(
        &s,
        &cookie,
        "/studio/skills/shared-one/action",
        &format!("{body}&confirm=yes"),
        Some(&s.base),
    )
    .await;
    assert_eq!(r.status().as_u16(), 303);
    assert_eq!(
        s.store
            .index()
            .get(&Scope::Shared, "shared-one")
            .unwrap()
            .active_rev,
        1
    );
    let h = s.store.history(&Scope::Shared, "shared-one").await.unwrap();
    assert_eq!(h.len(), 2, "a revert writes no revision");
    // Retire and restore, through the same store operations.
    for (action, want) in [("retire", "retired"), ("restore", "active")] {
        let r = form(
            &s,
            &cookie,
            "/studio/skills/shared-one/action",
            &format!("scope=shared&action={action}&csrf={token}&confirm=yes"),
            None,
        )
        .await;
        assert_eq!(r.status().as_u16(), 303, "{action}");
        assert_eq!(
            s.store
                .index()
                .get(&Scope::Shared, "shared-one")
                .unwrap()
                .status
                .to_string(),
            want
        );
    }
    // A diff between two revisions.
    let (_, html) = page(
        &s,
        &cookie,
        "/studio/skills/shared-one?scope=shared&a=1&b=2",
    )
    .await;
    assert!(
        html.contains("id=\"diff\"") && html.contains("Check the order"),
        "{html}"
    );
    s.stop().await;
}

#[tokio::test]
async fn hostile_text_is_rendered_as_text() {
    let s = TestServer::start().await;
    let md = "---\nname: shared-two\ndescription: '<script>alert(1)</script> & \"quotes\"'\ntriggers: ['<img src=x onerror=alert(2)>']\n---\n</pre><script>alert(3)</script>\n";
    put_skill(
        &s.store,
        Scope::Shared,
        "shared-two",
        &[("SKILL.md", md.as_bytes())],
    )
    .await;
    let cookie = sign_in(&s, &s.admin).await;
    for path in [
        "/studio/skills",
        "/studio/skills/shared-two",
        "/studio/skills/%3Cscript%3E",
    ] {
        let (_, html) = page(&s, &cookie, path).await;
        assert!(!html.contains("<script>alert"), "{path}: {html}");
        assert!(!html.contains("<img src=x"), "{path}: {html}");
    }
    let (_, html) = page(&s, &cookie, "/studio/skills/shared-two").await;
    assert!(
        html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
        "{html}"
    );
    // Oversized and odd ids: not found, never an error.
    for path in [
        format!("/studio/sessions/{}", "x".repeat(500)),
        "/studio/sessions/%00".into(),
        "/studio/agents/Bad%20Name".into(),
        "/studio/nowhere".into(),
    ] {
        assert_eq!(page(&s, &cookie, &path).await.0, 404, "{path}");
    }
    s.stop().await;
}

#[tokio::test]
async fn agents_are_edited_tried_and_evaluated_through_the_same_operations() {
    let s = TestServer::start().await;
    triggered_skill(&s).await;
    let cookie = sign_in(&s, &s.admin).await;
    let (status, html) = page(&s, &cookie, "/studio/agents/alpha").await;
    assert_eq!(status, 200);
    assert!(
        html.contains("id=\"config-edit\"") && html.contains("id=\"findings\""),
        "{html}"
    );
    let token = csrf_of(&html);
    let alpha = skillbase_store::AgentName::parse("alpha").unwrap();
    // Edit: saved when valid (checked by the store), refused with nothing changed otherwise.
    let mut config = s.store.agent(&alpha).await.unwrap().unwrap().config;
    config.catalog_budget = 1234;
    let enc = |v: &str| url_encode(v);
    let body = |c: &str| format!("csrf={token}&config={}", enc(c));
    let r = form(
        &s,
        &cookie,
        "/studio/agents/alpha/config",
        &body(&serde_json::to_string(&config).unwrap()),
        None,
    )
    .await;
    assert_eq!(r.status().as_u16(), 303);
    assert_eq!(
        s.store
            .agent(&alpha)
            .await
            .unwrap()
            .unwrap()
            .config
            .catalog_budget,
        1234
    );
    for (bad, want) in [
        ("{not json", "not valid"),
        (
            "{\"policies\": {\"failure_threshold\": 0}}",
            "failure_threshold",
        ),
        ("{\"grants\": {\"tools\": [\"Bad Class\"]}}", "grants.tools"),
        ("{\"surprise\": 1}", "unknown field"),
    ] {
        let r = form(&s, &cookie, "/studio/agents/alpha/config", &body(bad), None).await;
        assert_eq!(r.status().as_u16(), 422, "{bad}");
        let text = r.text().await.unwrap();
        assert!(text.contains(want), "{bad}: {text}");
        assert_eq!(
            s.store
                .agent(&alpha)
                .await
                .unwrap()
                .unwrap()
                .config
                .catalog_budget,
            1234
        );
    }
    // Try a turn: what the model is shown, and the report's cards.
    let r = form(
        &s,
        &cookie,
        "/studio/agents/alpha/turn",
        &format!("csrf={token}&message=a+refund+please"),
        None,
    )
    .await;
    assert_eq!(r.status().as_u16(), 200);
    let html = r.text().await.unwrap();
    assert!(
        html.contains(
            "data-card=\"activation\" data-skill=\"shared-one\" data-reason=\"trigger:refund\""
        ) && html.contains("Check the order, then refund it.")
            && html.contains("<code>load_skill</code>"),
        "{html}"
    );
    // The turn's session link names its agent, and opens that session.
    let link = html
        .split("Session <a href=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap()
        .to_owned();
    assert!(
        link.starts_with("/studio/sessions/") && link.ends_with("?agent=alpha"),
        "{link}"
    );
    assert_eq!(page(&s, &cookie, &link).await.0, 200);
    // So do the session links of a skill's runs (alpha loads shared-one over REST).
    let (rest_session, _) = turn(&s, &s.alpha, "hello").await;
    let r = s
        .post(&format!("/v1/sessions/{rest_session}/calls"), &s.alpha)
        .json(&json!({"name": "load_skill", "arguments": {"name": "shared-one"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200, "{}", r.text().await.unwrap());
    let (_, html) = page(&s, &cookie, "/studio/skills/shared-one").await;
    let runs = html.split("<table id=\"runs\">").nth(1).unwrap_or_default();
    let link = runs
        .split("<a href=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap_or_else(|| panic!("{html}"))
        .to_owned();
    assert_eq!(link, format!("/studio/sessions/{rest_session}?agent=alpha"));
    assert_eq!(page(&s, &cookie, &link).await.0, 200);
    let r = form(
        &s,
        &cookie,
        "/studio/agents/alpha/turn",
        &format!("csrf={token}&message=+"),
        None,
    )
    .await;
    assert_eq!(r.status().as_u16(), 422);
    // Evaluate: a job whose page, once it is done, has the tables of `skillbase eval`.
    let cases = "{\"message\": \"I want a refund\", \"expected\": \"shared-one\"}\n{\"message\": \"hello\", \"expected\": null}\n";
    let r = form(
        &s,
        &cookie,
        "/studio/agents/alpha/eval",
        &format!("csrf={token}&cases={}", enc(cases)),
        None,
    )
    .await;
    assert_eq!(r.status().as_u16(), 303);
    let job = r.headers()["location"].to_str().unwrap().to_owned();
    let seen = eval::statuses_until_done(&s, &cookie, &job).await;
    assert_eq!(seen.last().unwrap()["state"], "done", "{seen:?}");
    let (status, html) = page(&s, &cookie, &job).await;
    assert_eq!(status, 200);
    assert!(
        html.contains("id=\"eval-kind\"") && html.contains("<td>1.000</td>"),
        "{html}"
    );
    for bad in ["", "not json", "{\"expected\": \"x\"}"] {
        let r = form(
            &s,
            &cookie,
            "/studio/agents/alpha/eval",
            &format!("csrf={token}&cases={}", enc(bad)),
            None,
        )
        .await;
        assert_eq!(r.status().as_u16(), 422, "{bad:?}");
    }
    // An agent's token may try its own agent, never edit it.
    let beta = sign_in(&s, &s.beta).await;
    let (_, html) = page(&s, &beta, "/studio/agents/beta").await;
    assert!(!html.contains("config-edit"), "{html}");
    let bt = csrf_of(&html);
    let r = form(
        &s,
        &beta,
        "/studio/agents/beta/config",
        &format!("csrf={bt}&config=%7B%7D"),
        None,
    )
    .await;
    assert_eq!(r.status().as_u16(), 403);
    let r = form(
        &s,
        &beta,
        "/studio/agents/alpha/turn",
        &format!("csrf={bt}&message=hi"),
        None,
    )
    .await;
    assert_eq!(r.status().as_u16(), 404);
    s.stop().await;
}

#[tokio::test]
async fn try_a_turn_takes_the_paths_the_turn_works_on() {
    let s = TestServer::start().await;
    let md = "---\nname: shared-two\ndescription: Rust style rules.\npaths: [\"src/**/*.rs\"]\n---\nUse rustfmt.\n";
    put_skill(
        &s.store,
        Scope::Shared,
        "shared-two",
        &[("SKILL.md", md.as_bytes())],
    )
    .await;
    let cookie = sign_in(&s, &s.admin).await;
    let (_, html) = page(&s, &cookie, "/studio/agents/alpha").await;
    assert!(html.contains("name=\"paths\" id=\"try-paths\""), "{html}");
    let token = csrf_of(&html);
    let post = |paths: &str| {
        let body = format!("csrf={token}&message=tidy+this&paths={}", url_encode(paths));
        let (s, cookie) = (&s, &cookie);
        async move { form(s, cookie, "/studio/agents/alpha/turn", &body, None).await }
    };
    // One path per line, blank lines skipped: the matching one places the skill.
    let r = post("\n README.md \r\nsrc/lib/x.rs\n").await;
    assert_eq!(r.status().as_u16(), 200);
    let html = r.text().await.unwrap();
    assert!(
        html.contains("data-skill=\"shared-two\" data-reason=\"path:src/**/*.rs\"")
            && html.contains("Use rustfmt."),
        "{html}"
    );
    // Without paths, nothing names a Rust file: the skill is not placed.
    let html = post("").await.text().await.unwrap();
    assert!(!html.contains("data-reason=\"path:"), "{html}");
    // Paths are checked as REST checks them; the refusal does not quote them.
    let many: String = (0..100).map(|k| format!("f{k}.rs\n")).collect();
    let r = post(&many).await;
    assert_eq!(r.status().as_u16(), 422);
    assert!(r.text().await.unwrap().contains("at most 64"));
    let r = post(&format!("a/{}.rs", "x".repeat(2000))).await;
    assert_eq!(r.status().as_u16(), 422);
    let r = post("evil\u{7}<script>.rs").await;
    assert_eq!(r.status().as_u16(), 422);
    assert!(!r.text().await.unwrap().contains("<script>"));
    s.stop().await;
}

#[tokio::test]
async fn approvals_and_specializing_go_through_the_store() {
    let s = TestServer::start().await;
    let md = "---\nname: shared-two\ndescription: An agent's rewrite, waiting.\n---\nNew text.\n";
    s.store
        .put_pending(skillbase_store::PutRequest {
            scope: Scope::Shared,
            bundle: skillbase_format::Bundle::single(md.as_bytes().to_vec()).unwrap(),
            author: skillbase_store::Author::AgentInline(
                skillbase_store::AgentName::parse("alpha").unwrap(),
            ),
            message: "rewrite".into(),
            expect_rev: None,
            signature: None,
        })
        .await
        .unwrap();
    let cookie = sign_in(&s, &s.admin).await;
    let (status, html) = page(&s, &cookie, "/studio/approvals").await;
    assert_eq!(status, 200);
    assert!(
        html.contains("data-action=\"approve\" data-rev=\"2\"")
            && html.contains("data-action=\"reject\" data-rev=\"2\""),
        "{html}"
    );
    let token = csrf_of(&html);
    let r = form(
        &s,
        &cookie,
        "/studio/skills/shared-two/action",
        &format!("scope=shared&action=approve&rev=2&csrf={token}&confirm=yes"),
        None,
    )
    .await;
    assert_eq!(r.status().as_u16(), 303);
    assert_eq!(
        s.store
            .index()
            .get(&Scope::Shared, "shared-two")
            .unwrap()
            .active_rev,
        2
    );
    let (_, html) = page(&s, &cookie, "/studio/approvals").await;
    assert!(html.contains("Nothing waits for approval"), "{html}");
    // Reject: a second pending revision, never served; the active one stays.
    let md3 = "---\nname: shared-two\ndescription: Another rewrite.\n---\nWorse text.\n";
    s.store
        .put_pending(skillbase_store::PutRequest {
            scope: Scope::Shared,
            bundle: skillbase_format::Bundle::single(md3.as_bytes().to_vec()).unwrap(),
            author: skillbase_store::Author::AgentInline(
                skillbase_store::AgentName::parse("alpha").unwrap(),
            ),
            message: "rewrite again".into(),
            expect_rev: None,
            signature: None,
        })
        .await
        .unwrap();
    let r = form(
        &s,
        &cookie,
        "/studio/skills/shared-two/action",
        &format!("scope=shared&action=reject&rev=3&csrf={token}&confirm=yes"),
        None,
    )
    .await;
    assert_eq!(r.status().as_u16(), 303);
    let e = s
        .store
        .index()
        .get(&Scope::Shared, "shared-two")
        .cloned()
        .unwrap();
    assert_eq!((e.active_rev, e.status.to_string().as_str()), (2, "active"));
    let h = s.store.history(&Scope::Shared, "shared-two").await.unwrap();
    assert_eq!(h.last().unwrap().state, "rejected");
    // Twice: refused, saying why.
    let r = form(
        &s,
        &cookie,
        "/studio/skills/shared-two/action",
        &format!("scope=shared&action=reject&rev=3&csrf={token}&confirm=yes"),
        None,
    )
    .await;
    assert_eq!(r.status().as_u16(), 409);
    assert!(r.text().await.unwrap().contains("not pending approval"));
    // Specialize the shared skill for alpha: alpha's own copy, the shared one untouched.
    let (_, html) = page(&s, &cookie, "/studio/skills/shared-one?scope=shared").await;
    assert!(
        html.contains("<option value=\"alpha\">alpha</option>"),
        "{html}"
    );
    let r = form(
        &s,
        &cookie,
        "/studio/skills/shared-one/action",
        &format!("scope=shared&action=specialize&agent=alpha&csrf={token}&confirm=yes"),
        None,
    )
    .await;
    assert_eq!(r.status().as_u16(), 303);
    assert_eq!(
        r.headers()["location"],
        "/studio/skills/shared-one?scope=agent%3Aalpha"
    );
    let own = s
        .store
        .index()
        .get(
            &Scope::Agent(skillbase_store::AgentName::parse("alpha").unwrap()),
            "shared-one",
        )
        .cloned()
        .unwrap();
    assert_eq!(
        own.body,
        s.store
            .index()
            .get(&Scope::Shared, "shared-one")
            .unwrap()
            .body
    );
    // The studio's write went through the scanning gate: the copy's revision has its scan.
    let scans = s
        .store
        .scans(
            &Scope::Agent(skillbase_store::AgentName::parse("alpha").unwrap()),
            "shared-one",
        )
        .await
        .unwrap();
    assert!(scans.iter().any(|x| x.rev == own.active_rev), "{scans:?}");
    for bad in ["agent=", "agent=nobody", "agent=Bad%20Name"] {
        let r = form(
            &s,
            &cookie,
            "/studio/skills/shared-one/action",
            &format!("scope=shared&action=specialize&{bad}&csrf={token}&confirm=yes"),
            None,
        )
        .await;
        assert!(r.status().is_client_error(), "{bad}");
    }
    // Agents' tokens see no approvals.
    let beta = sign_in(&s, &s.beta).await;
    assert_eq!(page(&s, &beta, "/studio/approvals").await.0, 403);
    s.stop().await;
}

fn url_encode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}
