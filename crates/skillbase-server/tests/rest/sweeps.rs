//! `POST /v1/agents/{name}/eval/sweeps` and its job: `eval --sweep` over REST, against the
//! distractor pool the server was started with; bad requests and a server without a pool
//! refused with what to fix, the job seen only by the token that started it, a stop honoured.

use super::*;

/// A pool of `n` distractor skills (`distractor-000`…), plus one named like alpha's
/// `shared-one`, which a sweep must leave out (it would replace the agent's own).
fn pool(n: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, description: &str| {
        let d = dir.path().join(name);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("SKILL.md"), skill_md(name, description, "Steps.")).unwrap();
    };
    for i in 0..n {
        write(
            &format!("distractor-{i:03}"),
            &format!("Handles the shared topic number {i} for a public catalog"),
        );
    }
    write("shared-one", "A pool skill named like the agent's own");
    dir
}

fn with_pool(dir: &tempfile::TempDir) -> ServerOptions {
    ServerOptions {
        sweep_pool: Some(dir.path().to_path_buf()),
        ..ServerOptions::default()
    }
}

fn cases() -> Value {
    json!([
        {"message": "the shared one please", "expected": "shared-one", "kind": "direct"},
        {"message": "alpha secret", "expected": "alpha-secret"},
        {"message": "hello", "expected": null, "kind": "no_skill"}
    ])
}

/// POST `body` to start a sweep of `agent`.
async fn start(s: &TestServer, agent: &str, token: &str, body: &Value) -> reqwest::Response {
    s.post(&format!("/v1/agents/{agent}/eval/sweeps"), token)
        .json(body)
        .send()
        .await
        .unwrap()
}

/// GET the sweep at `at` until it has finished.
async fn finished(s: &TestServer, at: &str, token: &str) -> Value {
    for _ in 0..600 {
        let r = ok_json(s.get(at, token).send().await.unwrap(), 200).await;
        if !matches!(r["state"].as_str(), Some("preparing" | "running")) {
            return r;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the sweep at {at} did not finish in a minute");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sweep_measures_each_size_and_only_its_starter_sees_it() {
    let dir = pool(30);
    let s = TestServer::start_with(with_pool(&dir)).await;
    let events = s.event_count().await;
    let r = start(
        &s,
        "alpha",
        &s.alpha,
        &json!({"cases": cases(), "sizes": [100, 0, 10, 10]}),
    )
    .await;
    assert_eq!(r.status(), 202);
    let at = r.headers()["location"].to_str().unwrap().to_owned();
    let started = r.json::<Value>().await.unwrap();
    assert_eq!(
        at,
        format!(
            "/v1/agents/alpha/eval/sweeps/{}",
            started["id"].as_str().unwrap()
        )
    );
    assert_eq!(started["agent"], "alpha");
    assert_eq!(started["sizes"], json!([0, 10, 100]));
    assert_eq!(started["pool"], 31);
    assert_eq!(started["cases"], 3);

    let done = finished(&s, &at, &s.alpha).await;
    assert_eq!(done["state"], "done", "{done}");
    let points = done["points"].as_array().unwrap();
    let sizes: Vec<(u64, u64)> = points
        .iter()
        .map(|p| {
            (
                p["distractors"].as_u64().unwrap(),
                p["skills"].as_u64().unwrap(),
            )
        })
        .collect();
    // 100 is beyond the 30 usable distractors (the pool's `shared-one` is left out): measured
    // at all of them. alpha sees 3 skills of its own.
    assert_eq!(sizes, [(0, 3), (10, 13), (30, 33)]);
    assert_eq!(points[0]["overall"]["cases"], 3);
    assert_eq!(points[0]["overall"]["recall_at_1"], 1.0);
    assert!(points[0]["calibration"]["ece"].is_number());
    assert!(points.iter().all(|p| p.get("fit").is_none()));

    // Another agent's token, an admin's (another token), a malformed and an unknown id: the
    // same 404, which names nothing of the sweep.
    let other = format!("/v1/agents/alpha/eval/sweeps/{}", "0".repeat(32));
    for (path, token) in [
        (at.as_str(), &s.beta),
        (at.as_str(), &s.admin),
        ("/v1/agents/alpha/eval/sweeps/nope", &s.alpha),
        (other.as_str(), &s.alpha),
    ] {
        let (st, p) = problem(s.get(path, token).send().await.unwrap()).await;
        assert_eq!(st, 404, "{path}: {p}");
        assert!(!p.to_string().contains("distractor"), "{p}");
    }
    // Stopping a finished sweep answers it as it is.
    let again = ok_json(
        s.req(Method::DELETE, &at, &s.alpha).send().await.unwrap(),
        200,
    )
    .await;
    assert_eq!(again["state"], "done");
    // The caller's store was only read.
    assert_eq!(s.event_count().await, events);
    let listed = ok_json(
        s.get("/v1/skills?limit=500", &s.admin)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    let names: Vec<&str> = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    assert!(
        !names.is_empty() && names.iter().all(|n| !n.starts_with("distractor")),
        "{names:?}"
    );
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sweep_stops_when_asked_and_one_runs_at_a_time() {
    let dir = pool(400);
    let s = TestServer::start_with(with_pool(&dir)).await;
    let body = json!({"cases": cases(), "sizes": [0, 400]});
    let r = start(&s, "alpha", &s.admin, &body).await;
    assert_eq!(r.status(), 202);
    let at = r.headers()["location"].to_str().unwrap().to_owned();
    // One at a time in the whole server, whoever asks.
    let (st, p) = problem(start(&s, "beta", &s.beta, &body).await).await;
    assert_eq!(st, 429, "{p}");
    assert!(p["detail"].as_str().unwrap().contains("at a time"), "{p}");
    let stopping = s.req(Method::DELETE, &at, &s.admin).send().await.unwrap();
    assert_eq!(stopping.status(), 202);
    let end = finished(&s, &at, &s.admin).await;
    assert_eq!(end["state"], "stopped", "{end}");
    assert!(end["points"].as_array().unwrap().len() < 2, "{end}");
    // Once it stopped, another may start.
    let r = start(
        &s,
        "beta",
        &s.beta,
        &json!({"cases": [{"message": "beta secret", "expected": "beta-secret"}], "sizes": [0]}),
    )
    .await;
    assert_eq!(r.status(), 202);
    let at = r.headers()["location"].to_str().unwrap().to_owned();
    assert_eq!(finished(&s, &at, &s.beta).await["state"], "done");
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sweeps_refuse_bad_requests_and_a_server_without_a_readable_pool() {
    // No pool: refused, saying how to give one.
    let s = TestServer::start().await;
    let (st, p) = problem(start(&s, "alpha", &s.admin, &json!({"cases": cases()})).await).await;
    assert_eq!(st, 409, "{p}");
    assert!(
        p["detail"].as_str().unwrap().contains("--sweep-pool"),
        "{p}"
    );
    s.stop().await;

    let dir = pool(3);
    let s = TestServer::start_with(with_pool(&dir)).await;
    let events = s.event_count().await;
    let too_many_sizes: Vec<usize> = (0..33).collect();
    for (bad, want) in [
        (json!({"cases": []}), "1 to"),
        (json!({"cases": [{"message": "x"}]}), "line 1"),
        (
            json!({"cases": [{"message": "ok", "expected": null}, "nope"]}),
            "line 2",
        ),
        (json!({"cases": cases(), "sizes": []}), "sizes"),
        (json!({"cases": cases(), "sizes": too_many_sizes}), "sizes"),
        (json!({"cases": cases(), "sizes": [-1]}), ""),
        (
            json!({"cases": cases(), "sizes": [0, 10_000_001]}),
            "10000000",
        ),
        (json!({"cases": cases(), "sizes": [1e30]}), ""),
        (json!({"cases": cases(), "extra": 1}), "unknown field"),
        (json!({"cases": cases(), "catalog_budget": -5}), ""),
        (json!({"sizes": [1]}), ""),
    ] {
        let (st, p) = problem(start(&s, "alpha", &s.admin, &bad).await).await;
        assert!(st == 422 || st == 400, "{bad}: {st} {p}");
        assert!(p["detail"].as_str().unwrap().contains(want), "{bad}: {p}");
    }
    // Another agent's token: the same 404 as an agent that does not exist.
    let (st, other) = problem(start(&s, "alpha", &s.beta, &json!({"cases": cases()})).await).await;
    let (st2, missing) =
        problem(start(&s, "nobody", &s.admin, &json!({"cases": cases()})).await).await;
    assert_eq!((st, st2), (404, 404));
    assert_eq!(
        other["detail"].as_str().unwrap().replace("alpha", "X"),
        missing["detail"].as_str().unwrap().replace("nobody", "X")
    );
    // A pool with a bad skill: refused whole, naming the pool; nothing starts.
    std::fs::write(dir.path().join("distractor-000/SKILL.md"), "no frontmatter").unwrap();
    let (st, p) = problem(start(&s, "alpha", &s.admin, &json!({"cases": cases()})).await).await;
    assert_eq!(st, 409, "{p}");
    assert!(
        p["detail"].as_str().unwrap().contains("distractor pool"),
        "{p}"
    );
    assert_eq!(s.event_count().await, events);
    s.stop().await;
}
