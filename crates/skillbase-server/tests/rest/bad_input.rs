//! Bad input changes nothing: bad skill writes, oversized bodies and uploads, zip bombs, traversal
//! and partly bad packs.

use super::*;

#[tokio::test]
async fn bad_skill_writes_answer_problems_and_change_nothing() {
    let s = TestServer::start().await;
    let before = s.event_count().await;
    let n = s.store.index().len();
    // Malformed JSON, wrong media type, unknown fields.
    let r = s
        .put("/v1/skills/x", &s.admin)
        .header("content-type", "application/json")
        .body("{\"files\": ")
        .send()
        .await
        .unwrap();
    let (st, p) = problem(r).await;
    assert_eq!(st, 400);
    assert!(
        p["detail"].as_str().unwrap().contains("malformed JSON"),
        "{p}"
    );
    let r = s
        .put("/v1/skills/x", &s.admin)
        .header("content-type", "image/png")
        .body("x")
        .send()
        .await
        .unwrap();
    assert_eq!(problem(r).await.0, 415);
    let r = s
        .put("/v1/skills/x", &s.admin)
        .json(&json!({"files": {}, "mode": 1}))
        .send()
        .await
        .unwrap();
    assert_eq!(problem(r).await.0, 400);
    // Invalid skills, unsafe paths, name mismatch.
    let cases = [
        json!({"files": {"SKILL.md": "no frontmatter"}}),
        json!({"files": {"SKILL.md": skill_md("x", "X", "b"), "../escape.md": "x"}}),
        json!({"files": {"SKILL.md": skill_md("x", "X", "b"), "/abs.md": "x"}}),
        json!({"files": {"notes.md": "no SKILL.md"}}),
        json!({"files": {"SKILL.md": skill_md("y", "Y", "b")}}),
        json!({"files": {"SKILL.md": {"text": "a", "base64": "YQ=="}}}),
    ];
    for c in cases {
        let r = s
            .put("/v1/skills/x", &s.admin)
            .json(&c)
            .send()
            .await
            .unwrap();
        let (st, p) = problem(r).await;
        assert!(st == 422 || st == 400, "{c}: {st} {p}");
    }
    // Agent-scoped malformed JSON on the other write routes.
    for path in [
        "/v1/skills/shared-one/revert",
        "/v1/sessions",
        "/v1/agents",
        "/v1/tokens",
    ] {
        let r = s
            .post(path, &s.admin)
            .header("content-type", "application/json")
            .body("[1,")
            .send()
            .await
            .unwrap();
        assert_eq!(problem(r).await.0, 400, "{path}");
    }
    assert_eq!(s.store.index().len(), n);
    assert_eq!(s.event_count().await, before, "bad input changed something");

    // Preconditions.
    let r = s
        .markdown(
            "/v1/skills/shared-one",
            &s.admin,
            skill_md("shared-one", "Changed", "b"),
        )
        .header("if-match", "\"7\"")
        .send()
        .await
        .unwrap();
    let (st, p) = problem(r).await;
    assert_eq!(st, 412);
    assert_eq!(p["extra"]["current_rev"], 1);
    let r = s
        .markdown(
            "/v1/skills/shared-one",
            &s.admin,
            skill_md("shared-one", "Changed", "b"),
        )
        .header("if-none-match", "*")
        .send()
        .await
        .unwrap();
    assert_eq!(problem(r).await.0, 412);
    let r = s
        .markdown(
            "/v1/skills/brand-new",
            &s.admin,
            skill_md("brand-new", "New", "b"),
        )
        .header("if-match", "\"1\"")
        .send()
        .await
        .unwrap();
    let (st, p) = problem(r).await;
    assert_eq!((st, p["extra"]["current_rev"].as_i64()), (412, Some(0)));
    let r = s
        .post("/v1/skills/shared-one/disable", &s.admin)
        .header("if-match", "\"3\"")
        .send()
        .await
        .unwrap();
    assert_eq!(problem(r).await.0, 412);
    let r = s
        .markdown(
            "/v1/skills/shared-one",
            &s.admin,
            skill_md("shared-one", "Changed", "b"),
        )
        .header("if-match", "banana")
        .send()
        .await
        .unwrap();
    assert_eq!(problem(r).await.0, 400);
    assert_eq!(
        s.store
            .index()
            .get(&Scope::Shared, "shared-one")
            .unwrap()
            .head_rev,
        1
    );
    assert!(s.store.index().get(&Scope::Shared, "brand-new").is_none());
    s.stop().await;
}

fn small_limits() -> ServerOptions {
    ServerOptions {
        limits: Limits {
            body_bytes: 32 * 1024,
            upload_bytes: 256 * 1024,
            ..Limits::default()
        },
        ..ServerOptions::default()
    }
}

#[tokio::test]
async fn oversized_bodies_and_uploads_get_413() {
    let s = TestServer::start_with(small_limits()).await;
    // JSON bodies: the body limit (32 KiB here).
    let big = "x".repeat(40 * 1024);
    for path in ["/v1/sessions", "/v1/agents", "/v1/tokens"] {
        let r = s
            .post(path, &s.admin)
            .json(&json!({"agent": "alpha", "id": big}))
            .send()
            .await
            .unwrap();
        let (st, p) = problem(r).await;
        assert_eq!(st, 413, "{path}: {p}");
    }
    // A skill's files are an upload: over the body limit is fine, over the upload limit is not.
    let r = s
        .markdown("/v1/skills/big", &s.admin, skill_md("big", "Big", &big))
        .send()
        .await
        .unwrap();
    assert_eq!(ok_json(r, 201).await["rev"], 1);
    let huge = "y".repeat(300 * 1024);
    let r = s
        .put("/v1/skills/big", &s.admin)
        .json(&json!({"files": {"SKILL.md": skill_md("big", "Big", &huge)}}))
        .send()
        .await
        .unwrap();
    let (st, p) = problem(r).await;
    assert_eq!(st, 413, "{p}");
    let r = s
        .markdown("/v1/skills/big", &s.alpha, skill_md("big", "Big", &huge))
        .send()
        .await
        .unwrap();
    assert_eq!(problem(r).await.0, 413);
    assert_eq!(
        s.store.index().get(&Scope::Shared, "big").unwrap().head_rev,
        1
    );
    // An upload may be larger than a JSON body, up to its own limit. Stored (not deflated)
    // random-looking bytes keep the archive as large as its content.
    let mut noise = Vec::with_capacity(100 * 1024);
    let mut x: u32 = 12345;
    for _ in 0..100 * 1024 {
        x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        noise.push((x >> 16) as u8);
    }
    let pack = zip_of(&[
        (
            "SKILL.md",
            skill_md("uploaded", "Uploaded skill", "Body.").as_bytes(),
        ),
        ("blob.bin", &noise),
    ]);
    assert!(pack.len() > 64 * 1024);
    let r = s
        .post("/v1/imports", &s.admin)
        .header("content-type", "application/zip")
        .body(pack)
        .send()
        .await
        .unwrap();
    let rep = ok_json(r, 200).await;
    assert_eq!(rep["created"], json!(["uploaded"]));
    let mut huge = noise.clone();
    huge.extend_from_slice(&noise);
    huge.extend_from_slice(&noise);
    let pack = zip_of(&[
        (
            "SKILL.md",
            skill_md("too-big", "Too big", "Body.").as_bytes(),
        ),
        ("blob.bin", &huge),
    ]);
    let n = s.store.index().len();
    let r = s
        .post("/v1/imports", &s.admin)
        .header("content-type", "application/zip")
        .body(pack)
        .send()
        .await
        .unwrap();
    assert_eq!(problem(r).await.0, 413);
    assert_eq!(s.store.index().len(), n);
    s.stop().await;
}

#[tokio::test]
async fn zip_bombs_traversal_and_partly_bad_packs_land_nothing() {
    let s = TestServer::start().await;
    let before = s.event_count().await;
    let n = s.store.index().len();
    let zeros = vec![0u8; 20 * 1024 * 1024];
    let bomb = zip_of(&[
        ("bomb/SKILL.md", skill_md("bomb", "Bomb", "b").as_bytes()),
        ("bomb/zeros.bin", &zeros),
    ]);
    assert!(bomb.len() < 100 * 1024, "{}", bomb.len());
    let evil = zip_of(&[
        ("SKILL.md", skill_md("evil", "Evil", "b").as_bytes()),
        ("../evil/SKILL.md", skill_md("evil", "Evil", "b").as_bytes()),
    ]);
    let half = zip_of(&[
        ("good/SKILL.md", skill_md("good", "Good", "b").as_bytes()),
        ("bad/SKILL.md", b"---\nname: bad\n---\nno description\n"),
    ]);
    let mismatch = zip_of(&[
        (
            "folder/SKILL.md",
            skill_md("other", "Other", "b").as_bytes(),
        ),
        ("x/SKILL.md", skill_md("x", "X", "b").as_bytes()),
    ]);
    for (what, z) in [
        ("bomb", bomb),
        ("traversal", evil),
        ("half bad", half),
        ("mismatch", mismatch),
        ("not a zip", b"PK\x03\x04junk".to_vec()),
    ] {
        let r = s
            .post("/v1/imports", &s.admin)
            .header("content-type", "application/zip")
            .body(z)
            .send()
            .await
            .unwrap();
        let (st, p) = problem(r).await;
        assert_eq!(st, 422, "{what}: {p}");
    }
    let r = s
        .post("/v1/imports", &s.admin)
        .header("content-type", "text/plain")
        .body("hello")
        .send()
        .await
        .unwrap();
    assert_eq!(problem(r).await.0, 415);
    assert_eq!(s.store.index().len(), n);
    assert!(s.store.index().get(&Scope::Shared, "good").is_none());
    assert_eq!(
        s.event_count().await,
        before,
        "a refused import wrote something"
    );

    // A good pack lands whole, into an agent scope too.
    let good = zip_of(&[
        ("pack/one/SKILL.md", skill_md("one", "One", "b").as_bytes()),
        ("pack/two/SKILL.md", skill_md("two", "Two", "b").as_bytes()),
        ("pack/two/ref.md", b"reference"),
    ]);
    let rep = ok_json(
        s.post("/v1/imports?scope=agent:beta&message=bulk", &s.admin)
            .header("content-type", "application/zip")
            .body(good)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(rep["created"], json!(["one", "two"]));
    assert_eq!(rep["outcomes"][1]["scope"], "agent:beta");
    let page = ok_json(s.get("/v1/skills", &s.beta).send().await.unwrap(), 200).await;
    let names: Vec<&str> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["one", "two"],
        "an import into agent:beta sets beta's allowlist"
    );
    let h = ok_json(
        s.get("/v1/skills/two/history?scope=agent:beta", &s.admin)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert!(
        h[0]["author"]
            .as_str()
            .unwrap()
            .starts_with("import:upload by human:token-"),
        "{h}"
    );
    assert_eq!(h[0]["message"], "bulk");
    s.stop().await;
}
