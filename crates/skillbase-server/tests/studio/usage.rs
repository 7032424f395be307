//! A skill's usage and health on its page, and the library health page: never-used, failing
//! (failed runs, drift-disabled) and overlapping (the doctor's D013) skills, each with what to
//! do about it; an agent token sees its own agent's figures, read-only.

use super::*;
use skillbase_store::{Author, NewEvent, StatusChange};

fn event(kind: &str, agent: &str, skill: &str, data: Value) -> NewEvent {
    NewEvent {
        kind: kind.into(),
        scope: Some("shared".into()),
        skill: Some(skill.into()),
        rev: Some(1),
        agent: Some(agent.into()),
        session: Some(format!("{agent}-s")),
        data,
        ..NewEvent::default()
    }
}

/// alpha triggers shared-one; beta loads it; shared-two fails two runs and drift disables it;
/// two near-duplicate skills join alpha's, one of them failing its one run.
async fn library() -> TestServer {
    let s = TestServer::start().await;
    let dup = |name: &str, desc: &str| {
        format!("---\nname: {name}\ndescription: {desc}\n---\nBody of {name}.\n")
    };
    let a = dup(
        "invoice-resend",
        "Resends a customer's invoice for an order by email. Use when a customer asks for their invoice again.",
    );
    let b = dup(
        "invoice-resender",
        "Resends the invoice of a customer's order by email. Use when a customer asks for the invoice again.",
    );
    put_skill(
        &s.store,
        Scope::Shared,
        "invoice-resend",
        &[("SKILL.md", a.as_bytes())],
    )
    .await;
    put_skill(
        &s.store,
        Scope::Shared,
        "invoice-resender",
        &[("SKILL.md", b.as_bytes())],
    )
    .await;
    let r = s
        .put("/v1/agents/alpha", &s.admin)
        .json(&json!({"skills": ["shared-one", "shared-two", "alpha-secret", "invoice-resend", "invoice-resender"],
            "grants": {"tools": ["notes", "skills"]}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    s.store
        .append_events(&[
            event(
                "skill_activated",
                "alpha",
                "shared-one",
                json!({"reason": "trigger:refund", "tokens": 12}),
            ),
            event(
                "skill_activated",
                "beta",
                "shared-one",
                json!({"reason": "load", "tokens": 12}),
            ),
            event(
                "skill_activated",
                "alpha",
                "shared-two",
                json!({"reason": "load", "tokens": 5}),
            ),
            event(
                "run_finished",
                "alpha",
                "shared-two",
                json!({"outcome": "failure", "calls": 1}),
            ),
            event(
                "run_finished",
                "alpha",
                "shared-two",
                json!({"outcome": "failure", "calls": 0}),
            ),
            event(
                "skill_activated",
                "alpha",
                "invoice-resend",
                json!({"reason": "eager", "tokens": 5}),
            ),
            event(
                "skill_activated",
                "alpha",
                "invoice-resender",
                json!({"reason": "eager", "tokens": 5}),
            ),
            event(
                "run_finished",
                "alpha",
                "invoice-resend",
                json!({"outcome": "failure", "calls": 2}),
            ),
        ])
        .await
        .unwrap();
    s.store
        .set_status(
            &Scope::Shared,
            "shared-two",
            StatusChange::Disable,
            &Author::Human("test".into()),
            json!({"drift": "revision 1 failed 2 runs in a row (threshold 2)", "last_note": ""}),
        )
        .await
        .unwrap();
    s
}

/// The HTML of the element with `id`, up to its table's or paragraph's end.
fn section<'a>(html: &'a str, id: &str) -> &'a str {
    let i = html
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("no #{id} in {html}"));
    let rest = &html[i..];
    let end = rest.find("</table>").or_else(|| rest.find("</p>")).unwrap();
    &rest[..end]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_skill_page_shows_its_usage_and_health() {
    let s = library().await;
    let admin = sign_in(&s, &s.admin).await;
    let today = skillbase_store::usage::day_string(skillbase_store::usage::today());
    let (st, html) = page(&s, &admin, "/studio/skills/shared-one").await;
    assert_eq!(st, 200);
    assert!(section(&html, "health").contains("healthy"), "{html}");
    assert!(section(&html, "last-used").contains(&today));
    let agents = section(&html, "usage-agents");
    // all: trigger 1, load 1; then alpha and beta.
    assert!(
        agents.contains("<th>all</th><td>0</td><td>1</td><td>0</td><td>0</td><td>1</td>"),
        "{agents}"
    );
    assert!(agents.contains("data-agent=\"alpha\"") && agents.contains("data-agent=\"beta\""));

    let (_, html) = page(&s, &admin, "/studio/skills/shared-two").await;
    assert!(
        section(&html, "health").contains("drift-disabled"),
        "{html}"
    );
    let revs = section(&html, "usage-revisions");
    assert!(
        revs.contains("<td>2</td><td>1</td><td>1</td></tr>"),
        "{revs}"
    );

    // alpha's token: alpha's figures only.
    let alpha = sign_in(&s, &s.alpha).await;
    let (st, html) = page(&s, &alpha, "/studio/skills/shared-one").await;
    assert_eq!(st, 200);
    let agents = section(&html, "usage-agents");
    assert!(
        agents.contains("data-agent=\"alpha\"") && !agents.contains("beta"),
        "{agents}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_health_page_lists_what_to_act_on_with_links_that_act() {
    let s = library().await;
    let admin = sign_in(&s, &s.admin).await;
    let (st, html) = page(&s, &admin, "/studio/health").await;
    assert_eq!(st, 200, "{html}");
    assert!(
        html.contains("href=\"/studio/health\""),
        "the navigation links the page"
    );

    let never = section(&html, "never-used");
    assert!(
        never.contains("data-skill=\"alpha-secret\"")
            && never.contains("data-skill=\"beta-secret\""),
        "{never}"
    );
    assert!(
        !never.contains("data-skill=\"shared-one\"") && !never.contains("shared-two"),
        "{never}"
    );
    assert!(
        never.contains("href=\"/studio/skills/alpha-secret?scope=agent%3Aalpha\""),
        "{never}"
    );
    assert!(never.contains("data-action=\"retire\"") && never.contains("data-action=\"disable\""));

    let failing = section(&html, "failing");
    assert!(
        failing.contains("data-skill=\"shared-two\"") && !failing.contains("shared-one"),
        "{failing}"
    );
    assert!(
        failing.contains("data-skill=\"invoice-resend\""),
        "{failing}"
    );
    assert!(
        failing.contains("data-action=\"enable\""),
        "a drift-disabled skill can be enabled: {failing}"
    );
    assert!(failing.contains("href=\"/studio/skills/shared-two?scope=shared#history\""));

    let overlap = section(&html, "overlapping");
    assert!(
        overlap.contains("invoice-resend") && overlap.contains("invoice-resender"),
        "{overlap}"
    );
    assert!(
        overlap.contains("href=\"/studio/agents/alpha\""),
        "{overlap}"
    );
    // Every skill here arrived through the scanning gate: none is unscanned or flagged (the
    // doctor's D015, whose own tests cover what it lists).
    let unscanned = section(&html, "unscanned");
    assert!(unscanned.contains("Every skill was scanned"), "{unscanned}");

    // The retire button acts: it posts the skill's action form (a confirmation page first).
    let token = csrf_of(&html);
    let r = form(
        &s,
        &admin,
        "/studio/skills/beta-secret/action",
        &format!("scope=agent%3Abeta&action=retire&csrf={token}"),
        None,
    )
    .await;
    assert!(
        r.status().is_success() || r.status().is_redirection(),
        "{}",
        r.status()
    );

    // A malformed window is refused, saying what is accepted.
    let (st, html) = page(&s, &admin, "/studio/health?since=last%20week").await;
    assert_eq!(st, 400);
    assert!(html.contains("YYYY-MM-DD"), "{html}");
    // A later window: shared-one was used before it, so it is never used in it.
    let (_, html) = page(&s, &admin, "/studio/health?since=2999-01-01").await;
    assert!(section(&html, "never-used").contains("data-skill=\"shared-one\""));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_token_sees_its_own_health_read_only() {
    let s = library().await;
    let alpha = sign_in(&s, &s.alpha).await;
    let (st, html) = page(&s, &alpha, "/studio/health").await;
    assert_eq!(st, 200, "{html}");
    assert!(!html.contains("beta"), "nothing of beta: {html}");
    assert!(
        !html.contains("data-action="),
        "no action for an agent token"
    );
    assert!(section(&html, "never-used").contains("data-skill=\"alpha-secret\""));
    // A disabled skill is not one alpha may see; the failing one it may is listed.
    let failing = section(&html, "failing");
    assert!(
        failing.contains("data-skill=\"invoice-resend\"") && !failing.contains("shared-two"),
        "{failing}"
    );
}
